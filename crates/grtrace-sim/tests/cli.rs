//! The grtsim binary: builds the tree, writes scenario truth, cleans up on SIGTERM.

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn grtsim_serves_a_tree_writes_truth_and_cleans_up_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("grtsim-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let truth = dir.join("truth.csv");
    let root = dir.join("root");
    let mut child = Command::new(env!("CARGO_BIN_EXE_grtsim"))
        .args(["--scenario", "clean", "--jobs", "20", "--cards", "2"])
        .arg("--truth")
        .arg(&truth)
        .arg("--root")
        .arg(&root)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !root.join("grtrace/card1/info").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "tree never appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let info = std::fs::read_to_string(root.join("grtrace/card1/info")).unwrap();
    assert!(
        info.contains("state idle") && info.contains("card 1"),
        "{info}"
    );
    for f in ["ctl", "consumed", "msg", "state", "dropped"] {
        assert!(root.join("grtrace/card0").join(f).exists(), "{f}");
    }
    let csv = std::fs::read_to_string(&truth).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "ctx,ring,seqno,tags");
    assert_eq!(lines.len(), 21);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(!root.join("grtrace").exists(), "tree removed at exit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_rate_and_unknown_scenario_are_usage_errors() {
    let o = Command::new(env!("CARGO_BIN_EXE_grtsim"))
        .args(["--root", "/nonexistent", "--rate", "fast"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(env!("CARGO_BIN_EXE_grtsim"))
        .args([
            "--root",
            "/nonexistent",
            "--scenario",
            "nope",
            "--truth",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no scenario `nope`"));
}
