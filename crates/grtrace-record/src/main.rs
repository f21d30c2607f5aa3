//! grtrace: record GPU ring-buffer events from the kernel's relay buffers (like blktrace).
//! A thin wrapper over `grtrace_record::cli` (see `grtrace --help`).
use std::process::ExitCode;

use clap::Parser;
use grtrace_record::cli::{install_signal_handlers, run, Args, STOP};

fn main() -> ExitCode {
    install_signal_handlers();
    run(&Args::parse(), &STOP)
}
