//! grtsim: serve simulated grtrace devices under a directory until interrupted.
//! The command line is `grtrace_sim::cli` (see `grtsim --help`).
fn main() -> std::process::ExitCode {
    grtrace_cli::main(grtrace_sim::cli::run)
}
