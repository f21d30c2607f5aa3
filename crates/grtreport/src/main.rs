//! grtreport: join grtrace events into GPU jobs and report what blocked them.
//! The command line is `grtreport::cli` (see `grtreport --help`).
fn main() -> std::process::ExitCode {
    grtrace_cli::main(grtreport::cli::run)
}
