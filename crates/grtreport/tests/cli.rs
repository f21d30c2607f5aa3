//! The binary as a shell user meets it: stdin, pipes, CSV, filters, damage, usage errors.

mod common;

use std::process::Command;

use common::*;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn fixture() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/report/worked-example.grtrace")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// A few thousand jobs of the mixed scenario as a file.
fn mixed_file() -> std::path::PathBuf {
    // Tests run in parallel: one writes the file while the others wait, so none reads it
    // half-written.
    static FILE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let p = tmp("mixed.grtrace");
        let sc = grtrace_sim::scenarios::by_name("report-mixed", 4, 3000).unwrap();
        std::fs::write(&p, scenario_stream(&sc.records)).unwrap();
        p
    })
    .clone()
}

#[test]
fn stdin_gives_the_same_report_as_a_file() {
    let data = std::fs::read(fixture()).unwrap();
    let (piped, fed) = grtrace_cli::run_fed(bin().args(["--top", "3"]), &data);
    fed.unwrap();
    assert!(piped.status.success());
    let file = bin().arg(fixture()).args(["--top", "3"]).output().unwrap();
    assert_eq!(piped.stdout, file.stdout);
    assert!(String::from_utf8_lossy(&file.stdout).contains("#1 queue-wait on ctx 7 ring 0 (gfx)"));
}

#[test]
fn closed_pipe_exits_quietly() {
    // Like `grtreport --jobs | head -1`.
    let (first, out) = grtrace_cli::first_line_then_close(bin().arg(mixed_file()).arg("--jobs"));
    assert!(first.starts_with("#"), "{first}");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn csv_has_job_and_ring_tables_with_headers() {
    let csv = tmp("jobs.csv");
    let out = succeed(bin().arg(mixed_file()).arg("--csv").arg(&csv).arg("-q"));
    assert!(out.stdout.is_empty(), "-q prints no report");
    let jobs = std::fs::read_to_string(&csv).unwrap();
    let mut lines = jobs.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[..10],
        [
            "time_s",
            "commit_ns",
            "submit_ns",
            "start_ns",
            "end_ns",
            "done_ns",
            "ctx",
            "ring",
            "ring_name",
            "seqno"
        ]
    );
    // Every column is snake_case, so pandas and SQL take them as they are.
    for h in &header {
        assert!(
            h.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{h}"
        );
    }
    for want in [
        "queue_wait",
        "incomplete",
        "comm",
        "blocker_kind",
        "blocker_ctx",
        "blocker_lost_ns",
    ] {
        assert!(header.contains(&want), "{want}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 3000);
    let qi = header.iter().position(|h| *h == "queue_wait").unwrap();
    let tagged = rows
        .iter()
        .filter(|r| !r.contains('"') && r.split(',').nth(qi) == Some("1"))
        .count();
    assert!(tagged > 0);
    let rings = std::fs::read_to_string(tmp("jobs.rings.csv")).unwrap();
    let rl: Vec<&str> = rings.lines().collect();
    assert!(rl[0].starts_with("ring,name,size,jobs,"));
    assert_eq!(rl.len(), 4, "header and three rings");
    assert!(rl[1].starts_with("0,gfx,"));
}

#[test]
fn filters_pick_jobs() {
    let run = |args: &[&str]| {
        let o = bin()
            .arg(mixed_file())
            .args(args)
            .args(["--jobs", "-q"])
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .skip(1)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let all = run(&[]);
    let ring1 = run(&["--ring", "1"]);
    assert!(!ring1.is_empty() && ring1.len() < all.len());
    assert!(ring1
        .iter()
        .all(|l| l.split_whitespace().nth(2) == Some("1")));
    let ctx = run(&["--ctx", "2,5"]);
    assert!(!ctx.is_empty() && ctx.len() < all.len());
    assert!(ctx
        .iter()
        .all(|l| matches!(l.split_whitespace().nth(1), Some("2" | "5"))));
    let early = run(&["-w", "0.5"]);
    assert!(!early.is_empty() && early.len() < all.len());
    assert!(early
        .iter()
        .all(|l| l.split_whitespace().next().unwrap().parse::<f64>().unwrap() <= 0.5));
}

#[test]
fn damaged_input_reports_file_and_offset_and_keeps_what_came_before() {
    let data = std::fs::read(mixed_file()).unwrap();
    let cut = tmp("cut.grtrace");
    // Cut in the middle of a record, well into the trace.
    let at = 128 + 72 * 20_000 + 13;
    std::fs::write(&cut, &data[..at]).unwrap();
    let out = bin().arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let off: u64 = err
        .split("cut.grtrace: byte ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(off <= at as u64 && off + 72 > at as u64, "{err}");
    assert!(err.contains("truncated record"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("grtreport: "),
        "the report still comes out"
    );
    assert!(text.contains("complete"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["--rule", "bogus=1"],
        vec!["--rule", "queue-share=x"],
        vec!["-w", "3:1"],
        vec!["--ring", "nosuch"],
        vec!["--no-such-flag"],
    ] {
        let o = bin().arg(fixture()).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!o.stderr.is_empty());
    }
    let o = bin().arg(tmp("does-not-exist")).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn rules_round_trip_through_a_file() {
    let o = bin()
        .args(["--list-rules", "--rule", "queue-min-us=3000"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let p = tmp("my.rules");
    std::fs::write(&p, &o.stdout).unwrap();
    // With a 3 ms floor the worked example's 2.3 ms queue is no longer queue wait.
    let r = bin()
        .arg(fixture())
        .arg("--rules")
        .arg(&p)
        .arg("--jobs")
        .arg("-q")
        .output()
        .unwrap();
    let text = String::from_utf8(r.stdout).unwrap();
    assert!(text.lines().nth(1).unwrap().contains(" - -"), "{text}");
}

/// A private copy of the fixture in its own directory (tests run in parallel).
fn fixture_copy(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let d = std::env::temp_dir().join(format!("grtreport-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join("run.grtrace");
    std::fs::copy(fixture(), &f).unwrap();
    (d, f)
}

#[test]
fn csv_dash_writes_the_job_rows_to_stdout() {
    let (d, f) = fixture_copy("csvdash");
    let o = succeed(bin().current_dir(&d).arg(&f).args(["--csv", "-", "-q"]));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.starts_with(
            "time_s,commit_ns,submit_ns,start_ns,end_ns,done_ns,ctx,ring,ring_name,seqno"
        ),
        "{out}"
    );
    assert!(out.lines().count() > 1);
    assert!(!d.join("-").exists() && !d.join("-.rings.csv").exists());
    // The report would share stdout with the rows: a usage error.
    for extra in [&[][..], &["-q", "--jobs"][..]] {
        let o = bin()
            .current_dir(&d)
            .arg(&f)
            .args(["--csv", "-"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let (d, f) = fixture_copy("same");
    let size = std::fs::metadata(&f).unwrap().len();
    std::fs::copy(&f, d.join("x.rings.csv")).unwrap();
    for args in [
        vec!["run.grtrace", "-o", "run.grtrace"],
        vec!["run.grtrace", "-q", "--csv", "./run.grtrace"],
        vec!["x.rings.csv", "-q", "--csv", "x.csv"],
    ] {
        let o = bin().current_dir(&d).args(&args).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.contains("refusing to overwrite") && e.lines().count() == 1,
            "{e}"
        );
        assert_eq!(std::fs::metadata(&f).unwrap().len(), size, "{args:?}");
    }
    assert!(!d.join("x.csv").exists(), "nothing opened before the check");
    let _ = std::fs::remove_dir_all(&d);
}

/// The timeline exports go through the same refusal as `-o` and `--csv`: an export named
/// like an input (spelt differently, or through the base name) leaves the input intact.
#[test]
fn an_export_that_is_an_input_is_refused_and_the_input_kept() {
    let (d, f) = fixture_copy("same-export");
    let size = std::fs::metadata(&f).unwrap().len();
    for args in [
        vec!["run.grtrace", "--perfetto", "run.grtrace"],
        vec!["run.grtrace", "--perfetto", "./run.grtrace", "-o", "r.txt"],
        vec!["run.grtrace", "--html", "run.grtrace"],
        vec![
            "run.grtrace",
            "--html",
            "./run.grtrace",
            "--perfetto",
            "p.json",
        ],
    ] {
        let o = bin().current_dir(&d).args(&args).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.contains("refusing to overwrite") && e.contains("run.grtrace"),
            "{args:?}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        assert_eq!(std::fs::metadata(&f).unwrap().len(), size, "{args:?}");
        assert!(o.stdout.is_empty(), "no report after the refusal");
    }
    assert!(!d.join("r.txt").exists(), "no report written");
    // The same exports to another name work: the refusal is about the name only.
    let exports = ["-q", "--perfetto", "p.json", "--html", "p.html"];
    succeed(bin().current_dir(&d).arg("run.grtrace").args(exports));
    assert!(std::fs::metadata(d.join("p.json")).unwrap().len() > 0);
    assert!(std::fs::metadata(d.join("p.html")).unwrap().len() > 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn write_errors_name_the_file() {
    let o = bin()
        .arg(fixture())
        .args(["-o", "/nonexistent-dir/r.txt"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim_end(),
        "grtreport: /nonexistent-dir/r.txt: cannot create: No such file or directory (os error 2)"
    );
    for args in [&["-o", "/dev/full"][..], &["-q", "--csv", "/dev/full"][..]] {
        let o = bin().arg(mixed_file()).args(args).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(
            e.starts_with("grtreport: /dev/full: No space left on device"),
            "{e}"
        );
    }
}

#[test]
fn rings_are_taken_by_name_or_number_and_an_unknown_name_is_an_error() {
    let jobs = |ring: &str| {
        bin()
            .arg(fixture())
            .args(["--ring", ring, "--jobs", "-q"])
            .output()
            .unwrap()
    };
    let by_id = jobs("0");
    let by_name = jobs("gfx");
    assert_eq!(
        by_name.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&by_name.stderr)
    );
    assert_eq!(by_id.stdout, by_name.stdout);
    assert!(String::from_utf8_lossy(&by_name.stdout).lines().count() > 1);
    let o = jobs("gfx.0");
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--ring gfx.0: no ring of that name in the input (rings: gfx"),
        "{e}"
    );
}

#[test]
fn a_directory_input_says_it_is_a_directory() {
    let (d, _) = fixture_copy("dir");
    let o = bin().arg(&d).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(": is a directory"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn progress_is_off_off_a_terminal_unless_forced() {
    let o = bin().arg(mixed_file()).arg("-q").output().unwrap();
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = bin()
        .arg(mixed_file())
        .args(["-q", "--progress"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.starts_with("grtreport:   0% (") && e.contains("grtreport: 100% ("),
        "{e}"
    );
}

#[test]
fn file_names_that_are_not_utf8_work_and_errors_stay_on_one_line() {
    use std::os::unix::ffi::OsStrExt;
    let (d, f) = fixture_copy("names");
    let odd = d.join(std::ffi::OsStr::from_bytes(b"r\xff\nx.grtrace"));
    std::fs::copy(&f, &odd).unwrap();
    let report = d.join(std::ffi::OsStr::from_bytes(b"rep\xfe"));
    succeed(bin().arg(&odd).arg("-o").arg(&report));
    assert!(std::fs::metadata(&report).unwrap().len() > 0);
    let o = bin().arg(&odd).arg("-o").arg(&odd).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("r\\xff\\nx.grtrace"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The plan checks every argument before anything is opened: a usage error comes from it
/// whatever the inputs, and a plan of good arguments is made without looking at them (an
/// input that does not exist is found only when the run opens it, exit status 1).
#[test]
fn the_plan_checks_the_arguments_without_opening_anything() {
    use clap::Parser;
    use grtreport::cli::{Args, Plan, Step};
    let plan = |argv: &[&str]| {
        let args = Args::try_parse_from(std::iter::once("grtreport").chain(argv.iter().copied()))
            .expect("arguments clap takes");
        Plan::build(args, None)
    };
    let missing = "/nonexistent/grtreport-plan/run";
    for bad in [
        &["--grace=-1"][..],
        &["--interval", "0"],
        &["--html", "-", "--jobs"],
        &["--html", "p.html", "--html-jobs", "0"],
        &["--csv", "-"],
        &["--rule", "no-such-rule=1"],
        &["--horizon=0"],
    ] {
        let argv: Vec<&str> = std::iter::once(missing)
            .chain(bad.iter().copied())
            .collect();
        match plan(&argv) {
            Err(f) => assert_eq!(f.code(), 2, "{argv:?}: {:?}", f.message()),
            Ok(_) => panic!("{argv:?} planned"),
        }
    }
    assert!(matches!(
        plan(&[missing, "--top", "3", "--csv", "out.csv"]),
        Ok(Step::Report(_))
    ));
    assert!(matches!(
        plan(&[missing, "--list-rules"]),
        Ok(Step::ListRules(t)) if t.contains("queue-min-us")
    ));
    let out = bin().arg(missing).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}
