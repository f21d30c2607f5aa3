//! grtimport: turn trace-cmd trace.dat files (and ftrace text) into grtrace streams.
//! The command line is `grtimport::run` (see `grtimport --help`).
fn main() -> std::process::ExitCode {
    grtrace_cli::main(|args: grtimport::Args| grtimport::run(&args))
}
