//! grtparse: one human line per GPU event, like blkparse (see `grtparse --help`).
//! The command line is `grtparse::Cli`, the run `grtparse::run`.
fn main() -> std::process::ExitCode {
    grtrace_cli::main(grtparse::run)
}
