//! grtreport's inputs: stdin given twice, and files of two sessions of one card under one
//! base name (issue 14 "wrong answers", issue 10 "devices and sessions").

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn grtreport(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run grtreport")
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-inputs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `dir/<base>.grtrace.{0,1}` from the synthetic workload, with this session id.
fn synth(dir: &Path, base: &str, session: u64) {
    let cfg = grtrace_format::synth::SynthConfig {
        records: 400,
        ..Default::default()
    };
    grtrace_format::synth::write_files(&cfg, &dir.join(base), 0, session).unwrap();
}

#[test]
fn stdin_given_twice_is_a_usage_error() {
    let d = temp_dir("stdin2");
    let o = grtreport(&d, &["-i", "-", "-i", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stdin (-) is given more than once"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn files_of_another_session_are_refused_unless_forced() {
    let d = temp_dir("sessions");
    synth(&d, "old", 0x11);
    synth(&d, "run", 0x22);
    std::fs::rename(d.join("old.grtrace.0"), d.join("run.grtrace.2")).unwrap();
    std::fs::rename(d.join("old.grtrace.1"), d.join("run.grtrace.3")).unwrap();
    let o = grtreport(&d, &["run"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty(), "no report from a mixed merge");
    assert!(
        err.contains(
            "run.grtrace.2: session 0x11 of card0 differs from run.grtrace.0 (session 0x22)"
        ),
        "{err}"
    );
    let o = grtreport(&d, &["run", "--force"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!o.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&d);
}
