//! grtimport: turn trace-cmd trace.dat files (and ftrace text) into grtrace streams.
//! A thin wrapper over `grtimport::run` (see `grtimport --help`).
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    grtimport::run(&grtimport::Args::parse())
}
