//! Helpers the grtparse test files share: run the binary, read its output, make a scratch dir.
#![allow(dead_code)] // each test file uses a part

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs grtparse in `dir` with `args`.
pub fn grtparse(dir: &Path, args: &[&str]) -> Output {
    grtparse_in(dir, args, Stdio::null())
}

/// Runs grtparse in `dir` with `args`, reading `stdin`.
pub fn grtparse_in(dir: &Path, args: &[&str], stdin: impl Into<Stdio>) -> Output {
    Command::new(env!("CARGO_BIN_EXE_grtparse"))
        .current_dir(dir)
        .args(args)
        .stdin(stdin)
        .output()
        .expect("run grtparse")
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// An empty scratch directory for one test (the pid keeps test binaries apart), removed
/// when the test ends.
pub fn temp_dir(tag: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("grtparse-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// A test's scratch directory ([`temp_dir`]), removed with what it holds when dropped.
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `dir/<base>.grtrace.{0,1}` of `records` records from the synthetic workload, with
/// the given card and session in their headers; returns the files.
pub fn synth(dir: &Path, base: &str, card: u32, session: u64, records: u64) -> Vec<PathBuf> {
    let cfg = grtrace_format::synth::SynthConfig {
        records,
        ..Default::default()
    };
    grtrace_format::synth::write_files(&cfg, &dir.join(base), card, session).unwrap()
}
