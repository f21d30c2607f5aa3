//! grtrace: record GPU ring-buffer events from the kernel's relay buffers (like blktrace).
//! The command line is `grtrace_record::cli` (see `grtrace --help`).
fn main() -> std::process::ExitCode {
    grtrace_cli::main(grtrace_record::cli::run)
}
