//! Helpers the grtimport tests share: running the binary and reading what it wrote.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use grtrace_format::StreamHeader;

/// Runs grtimport with `args`: its exit code (-1 when a signal ended it) and standard error.
pub fn grtimport(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_grtimport"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Imports `input` to `base` (`-o`), asserting that it succeeds; returns what it said on
/// standard error.
pub fn import_ok(input: &Path, base: &Path) -> String {
    let (code, err) = grtimport(&[input.to_str().unwrap(), "-o", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    err
}

/// Imports the damaged `input` to `base`, asserting that it fails (exit 1) with a last line
/// naming where in `input` the damage is; returns what it said on standard error.
pub fn import_damaged(input: &Path, base: &Path) -> String {
    let (code, err) = grtimport(&[input.to_str().unwrap(), "-o", base.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    let at = format!("grtimport: {}: offset ", input.display());
    assert!(
        err.lines().last().is_some_and(|l| l.starts_with(&at)),
        "{err}"
    );
    err
}

/// The stream of CPU `cpu` that an import to `base` writes: `BASE.grtrace.CPU`.
pub fn stream_path(base: &Path, cpu: u32) -> PathBuf {
    PathBuf::from(format!("{}.grtrace.{cpu}", base.display()))
}

/// The streams an import to `base` wrote, CPUs 0 to 7 that have one: the CPU, the
/// stream's header and its bytes.
pub fn streams(base: &Path) -> Vec<(u32, StreamHeader, Vec<u8>)> {
    (0..8)
        .filter_map(|cpu| {
            let bytes = std::fs::read(stream_path(base, cpu)).ok()?;
            let h = StreamHeader::parse(&bytes).unwrap();
            Some((cpu, h, bytes))
        })
        .collect()
}
