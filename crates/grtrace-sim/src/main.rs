//! grtsim: serve simulated grtrace devices under a directory until interrupted.
//! A thin wrapper over `grtrace_sim::cli` (see `grtsim --help`).
use std::process::ExitCode;

use clap::Parser;
use grtrace_sim::cli::{install_signal_handlers, run, Args, QUIT};

fn main() -> ExitCode {
    install_signal_handlers();
    run(&Args::parse(), &QUIT)
}
