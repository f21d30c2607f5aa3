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

fn temp(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("grtsim-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn spawn(root: &std::path::Path, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_grtsim"))
        .arg("--root")
        .arg(root)
        .args(extra)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_for(p: &std::path::Path) {
    let t0 = Instant::now();
    while !p.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs a grtsim that must refuse `root` at once (status 1, one line); returns its message.
fn refused(root: &std::path::Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_grtsim"))
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    e
}

fn term(child: &mut std::process::Child) -> Duration {
    let t0 = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    t0.elapsed()
}

#[test]
fn cpu_and_card_counts_out_of_range_are_usage_errors() {
    for args in [
        ["--cpus", "0"],
        ["--cards", "0"],
        ["--cpus", "1500"],
        ["--cards", "17"],
        ["--cpus", "-1"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_grtsim"))
            .args(["--root", "/nonexistent"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!std::path::Path::new("/nonexistent").exists());
    }
}

#[test]
fn the_largest_simulator_stops_promptly_on_sigterm() {
    let d = temp("big");
    let root = d.join("root");
    let mut child = spawn(&root, &["--cards", "16", "--cpus", "256"]);
    wait_for(&root.join("grtrace/card15/info"));
    let took = term(&mut child);
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(!root.exists(), "everything it made is gone");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_second_simulator_on_a_busy_root_is_refused_and_leaves_the_first_alone() {
    let d = temp("busy");
    let root = d.join("root");
    let mut first = spawn(&root, &[]);
    wait_for(&root.join("grtrace/card0/info"));
    let e = refused(&root);
    assert!(e.contains("busy: another grtsim (pid"), "{e}");
    for f in ["info", "ctl", "consumed", "msg", "state", "dropped"] {
        assert!(root.join("grtrace/card0").join(f).exists(), "{f} kept");
    }
    term(&mut first);
    // The lock went with the first one: a new simulator may serve the root now.
    let mut again = spawn(&root, &[]);
    wait_for(&root.join("grtrace/card0/info"));
    term(&mut again);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn exit_removes_only_what_the_simulator_made() {
    let d = temp("mine");
    let root = d.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("keep.txt"), "user file").unwrap();
    let mut child = spawn(&root, &["--cards", "2"]);
    wait_for(&root.join("grtrace/card1/info"));
    // Someone drops a file into a card directory while it is served.
    std::fs::write(root.join("grtrace/card1/notes.txt"), "mine").unwrap();
    term(&mut child);
    assert!(
        root.join("keep.txt").exists(),
        "the root existed before: kept with its files"
    );
    assert!(
        !root.join("grtrace/card0").exists(),
        "card0 held only simulator files"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("grtrace/card1/notes.txt")).unwrap(),
        "mine"
    );
    assert!(!root.join("grtrace/card1/info").exists());
    // A root holding files a simulator does not make is refused, and nothing is touched.
    let e = refused(&root);
    assert!(e.contains("notes.txt: not made by grtsim"), "{e}");
    assert!(root.join("grtrace/card1/notes.txt").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_closed_stdout_is_an_error_not_exit_0() {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_grtsim"));
    grtrace_cli::assert_refuses_closed_stdout(bin, ["--list-scenarios"]);
}
