//! The report's other shapes: JSON parsed back, what a filtered recording can measure,
//! utilisation and verdicts, and `--interval` rows that come out while a pipe is still open.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use grtrace_format::{Body, Event, Stamp};
use grtreport::{Flags, Rules};
use serde_json::Value;

/// A record as the tests build them.
type Record = (Stamp, Body<'static>);

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-out-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn scenario_file(name: &str, seed: u64, jobs: usize) -> std::path::PathBuf {
    let p = tmp(&format!("{name}-{seed}-{jobs}.grtrace"));
    if !p.exists() {
        let sc = grtrace_sim::scenarios::by_name(name, seed, jobs).unwrap();
        let part = p.with_extension("part");
        std::fs::write(&part, scenario_stream(&sc.records)).unwrap();
        std::fs::rename(&part, &p).unwrap();
    }
    p
}

#[test]
fn json_report_parses_back_with_every_section() {
    let f = scenario_file("dep-chain", 3, 2000);
    let out = succeed(
        bin()
            .arg(&f)
            .args(["--json", "--top", "30", "--interval", "0.2"]),
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["schema"], "grtreport/1");
    assert_eq!(v["all"]["jobs"], 2000);
    assert!(v["source"]["driver"]
        .as_str()
        .unwrap()
        .contains("virtio_gpu"));
    assert_eq!(v["source"]["missing_events"].as_array().unwrap().len(), 0);
    let rings = v["rings"].as_array().unwrap();
    assert_eq!(rings.len(), 3);
    for r in rings {
        assert!(r["phases"]["exec"]["p90_ns"].as_u64().unwrap() > 0);
        assert!(r["tags"]["dep-wait"]["jobs"].is_u64());
        let u = &r["utilisation"];
        let busy = u["busy"].as_f64().unwrap();
        assert!(busy > 0.0 && busy < 1.0, "{u}");
        assert!(u["verdict"].is_string());
    }
    assert_eq!(v["verdicts"].as_array().unwrap().len(), 3);
    assert!(!v["contexts"].as_array().unwrap().is_empty());
    // --top entries carry their samples' attributions.
    let top = v["top"].as_array().unwrap();
    assert!(!top.is_empty());
    let dep = top
        .iter()
        .find(|e| e["tag"] == "dep-wait")
        .expect("a dep-wait class");
    let s = &dep["samples"][0];
    assert_eq!(s["blocker"]["kind"], "dep");
    assert!(s["attribution"].as_str().unwrap().starts_with("waited "));
    // Intervals of 0.2 s over the trace, per ring.
    let iv = v["intervals"].as_array().unwrap();
    assert!(iv.len() >= 3, "{}", iv.len());
    assert!(iv[0]["busy_ns"].as_u64().unwrap() <= 200_000_000);
}

/// `recs` as a recording of only the events `keep` takes (`grtrace -a ...`), notes and all.
fn recorded_only(recs: &[Record], keep: impl Fn(Event) -> bool) -> Vec<Record> {
    let taken = |b: &Body<'_>| !matches!(b, Body::Event(e) if !keep(e.code));
    recs.iter().filter(|(_, b)| taken(b)).cloned().collect()
}

/// `grtrace -a submit -a end`: only SUBMIT and END (and notes) are recorded.
#[test]
fn a_filtered_recording_reports_what_it_can_measure() {
    let sc = grtrace_sim::scenarios::by_name("report-mixed", 5, 2000).unwrap();
    let kept = recorded_only(&sc.records, |c| c == Event::SUBMIT || c == Event::END);
    let data = scenario_stream(&kept);
    let (e, jobs) = run_bytes(data.clone(), Rules::default());
    // Before: every job lacked COMMIT and was incomplete (0 complete jobs). Now only the
    // jobs of a batched doorbell are: without COMMITs nobody can tell which jobs one
    // SUBMIT covered, so they have no SUBMIT of their own.
    assert!(e.summary.all.complete >= 1800, "{}", e.summary.all.complete);
    for j in jobs.iter().filter(|j| j.flags.incomplete()) {
        assert!(j.flags.has(grtreport::Flags::NO_SUBMIT), "{j:?}");
    }
    for j in jobs.iter().filter(|j| !j.flags.incomplete()) {
        assert!(!j.measured(0) && !j.measured(6), "no COMMIT: {j:?}");
        assert!(j.measured(1) && j.measured(2), "START inferred: {j:?}");
    }
    let m = e.measurable();
    assert_eq!(m.missing(), ["COMMIT", "START", "IRQ", "SIGNAL"]);
    assert_eq!(m.unmeasurable(), ["submit_host", "complete", "total"]);

    let f = tmp("filtered.grtrace");
    std::fs::write(&f, &data).unwrap();
    let text = stdout_of(bin().arg(&f).arg("--jobs"));
    assert!(
        text.contains("the recording has no COMMIT/START/IRQ/SIGNAL events: submit_host, complete, total cannot be measured"),
        "{text}"
    );
    // Unmeasurable phases print as -, never 0.
    let row = |name: &str| line_after(&text, "", name);
    assert!(row("submit_host")
        .split_whitespace()
        .skip(1)
        .all(|c| c == "-"));
    assert!(row("total").split_whitespace().skip(1).all(|c| c == "-"));
    let complete = e.summary.all.complete;
    assert!(
        row("exec")
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            == complete
    );
    let job = text.lines().find(|l| l.ends_with(" -")).unwrap();
    let cols: Vec<&str> = job.split_whitespace().collect();
    assert_eq!(cols[4], "-", "submit_host: {job}");
    assert_eq!(cols[10], "-", "total: {job}");
    assert_ne!(cols[6], "-", "exec: {job}");

    let json = bin().arg(&f).arg("--json").output().unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["all"]["phases"]["total"].is_null());
    assert!(v["all"]["phases"]["exec"]["n"].as_u64().unwrap() == complete);
}

/// A native recording without COMMIT (`grtrace -a submit -a start -a end -a irq`): "host late"
/// (idle_host) cannot be told, and the text says so with `-` wherever the JSON says null,
/// in the Utilisation table, the verdict lines and the `--interval` rows alike; idle_dep
/// is measured in both.
#[test]
fn without_commit_text_and_json_agree_idle_host_is_unmeasured() {
    let sc = grtrace_sim::scenarios::by_name("report-mixed", 7, 1500).unwrap();
    let kept = recorded_only(&sc.records, |c| c != Event::COMMIT);
    let f = tmp("no-commit.grtrace");
    std::fs::write(&f, scenario_stream(&kept)).unwrap();

    let text = stdout_of(bin().arg(&f).args(["--interval", "0.1"]));
    // Utilisation table: the idle_host column (7th after the label) is `-` for every ring,
    // idle_dep a share.
    let util = text
        .split("Utilisation (share of the trace's span)")
        .nth(1)
        .expect("a Utilisation section");
    let rings: Vec<&str> = util
        .lines()
        .filter(|l| l.trim_start().starts_with("ring "))
        .filter(|l| !l.contains(": "))
        .collect();
    assert!(!rings.is_empty(), "{util}");
    for l in &rings {
        let cols: Vec<&str> = l.split_whitespace().collect();
        let n = cols.len();
        assert_eq!(cols[n - 4], "-", "idle_host: {l}");
        assert!(cols[n - 3].ends_with('%'), "idle_dep: {l}");
    }
    let verdicts: Vec<&str> = util.lines().filter(|l| l.contains("host late")).collect();
    assert_eq!(verdicts.len(), rings.len(), "{util}");
    for l in &verdicts {
        assert!(l.contains("host late -, dependency "), "{l}");
        assert!(!l.contains("dependency -"), "{l}");
    }
    // --interval rows: idle_host (third from the end but one) is `-`, idle_dep a share.
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("#  start_s"))
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with(|c: char| c.is_alphabetic()))
        .collect();
    assert!(rows.len() >= 3, "{text}");
    for l in &rows {
        let cols: Vec<&str> = l.split_whitespace().collect();
        let n = cols.len();
        assert_eq!(cols[n - 4], "-", "idle_host: {l}");
        assert!(cols[n - 3].ends_with('%'), "idle_dep: {l}");
    }

    let json = bin()
        .arg(&f)
        .args(["--json", "--interval", "0.1"])
        .output()
        .unwrap();
    assert!(json.status.success());
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let jrings = v["rings"].as_array().unwrap();
    assert_eq!(jrings.len(), rings.len());
    for r in jrings {
        let u = &r["utilisation"];
        assert!(u["idle_host"].is_null(), "{u}");
        assert!(u["idle_dep"].is_f64(), "{u}");
    }
    let iv = v["intervals"].as_array().unwrap();
    assert_eq!(iv.len(), rows.len());
    for i in iv {
        assert!(i["idle_host_ns"].is_null(), "{i}");
        assert!(i["idle_dep_ns"].is_u64(), "{i}");
    }
}

#[test]
fn verdicts_name_what_bounds_each_ring() {
    // report-clean leaves rings idle between jobs (host-bound); dep-chain jobs wait on
    // other rings' fences.
    let (e, _) = run_bytes(
        scenario_stream(
            &grtrace_sim::scenarios::by_name("report-clean", 3, 2000)
                .unwrap()
                .records,
        ),
        Rules::default(),
    );
    let rows = e.util_rows();
    let ring0 = rows.iter().find(|u| u.is_ring && u.id == 0).unwrap();
    assert_eq!(ring0.verdict, Some(grtreport::utilisation::Bound::Host));
    assert!(ring0.busy > 0.05 && ring0.busy < 0.5, "{ring0:?}");
    let idle = ring0.idle_host + ring0.idle_dep + ring0.idle_sched + ring0.idle_none;
    assert!(
        (ring0.busy + idle - 1.0).abs() < 0.01,
        "shares add up: {ring0:?}"
    );
    assert!(ring0.jobs_per_s > 100.0);
}

/// Periodic statistics in a live pipe: a row comes out while the producer still writes.
#[test]
fn interval_rows_come_out_while_the_pipe_is_open() {
    let f = scenario_file("report-mixed", 6, 4000);
    let data = std::fs::read(&f).unwrap();
    let mut child = bin()
        .args(["--interval", "0.1", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    stdin.write_all(&data[..data.len() / 2]).unwrap();
    stdin.flush().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let header = lines.next();
        let first = lines.next();
        let _ = tx.send((header, first));
        for _ in lines {}
    });
    // Half the trace (~0.7 s of trace time) is in: the first 0.1 s rows must be out.
    let (header, first) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("no interval row while the pipe is open");
    assert!(header.unwrap().unwrap().starts_with("#  start_s"));
    let first = first.unwrap().unwrap();
    assert!(
        first.trim_start().starts_with("0.000000    0.100000"),
        "{first}"
    );
    stdin.write_all(&data[data.len() / 2..]).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The GPU side of job `seqno` of ctx 3 on ring 0: START, END and IRQ at `at`.
fn gpu_run(r: &mut Rec, seqno: u64, at: [u64; 3]) {
    let codes = [Event::START, Event::END, Event::IRQ];
    for (t, code) in at.into_iter().zip(codes) {
        let arg0 = if code == Event::IRQ { seqno } else { 0 };
        r.add(Ev::of_job(3, 0, seqno).at(code, t).args(arg0, 0, 0));
    }
}

/// A recording that starts while the GPU is busy: the first jobs it sees end before its
/// first COMMIT. Whether they miss their COMMIT is decided from the whole stream, not from
/// the codes seen up to their end: the stream does record COMMITs, so they are no-commit
/// (they began before the recording); a recording without any COMMIT leaves them complete.
#[test]
fn a_job_that_ends_before_the_first_commit_is_no_commit() {
    let mut r = Rec::with_gfx();
    // In flight at the start: START, END and IRQ only, all before the first COMMIT.
    for (i, seqno) in [7u64, 8].into_iter().enumerate() {
        let t = T0 + i as u64 * 300 * US;
        gpu_run(&mut r, seqno, [t + 10 * US, t + 200 * US, t + 210 * US]);
    }
    // 20 ms later (long after the 5 ms IRQ grace), the host commits and submits new work.
    let full = |r: &mut Rec| {
        for (i, seqno) in (9u64..12).enumerate() {
            let t = T0 + 20 * MS + i as u64 * MS;
            let host = Ev::of_job(3, 0, seqno).on(1, 77);
            r.add(host.at(Event::COMMIT, t));
            r.add(host.at(Event::SUBMIT, t + 10 * US).args(0, 0, 1));
            gpu_run(r, seqno, [t + 30 * US, t + 230 * US, t + 240 * US]);
        }
    };
    full(&mut r);
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 5);
    for j in &jobs {
        let early = j.key.seqno < 9;
        assert_eq!(j.flags.has(Flags::NO_COMMIT), early, "{j:?}");
        assert_eq!(j.flags.has(Flags::NO_SUBMIT), early, "{j:?}");
        assert_eq!(j.flags.incomplete(), early, "{j:?}");
        assert!(
            !j.flags.has(Flags::NO_END),
            "END and START were seen: {j:?}"
        );
    }
    assert_eq!(e.summary.all.complete, 3);

    // The same early jobs in a recording of START/END/IRQ only (grtrace -a start,end,irq):
    // nothing is missing, the host phases are unmeasured.
    let filtered = recorded_only(&r.recs, |c| c != Event::COMMIT && c != Event::SUBMIT);
    let (e, jobs) = run_bytes(merged_stream(&filtered), Rules::default());
    assert_eq!(jobs.len(), 5);
    assert!(jobs.iter().all(|j| !j.flags.incomplete()), "{jobs:?}");
    assert_eq!(e.summary.all.complete, 5);
}

/// Held jobs are bounded: a recording with thousands of jobs and no COMMIT is taken as
/// filtered after 4096 jobs, and they are reported complete.
#[test]
fn jobs_waiting_for_the_commit_decision_are_bounded() {
    let mut r = Rec::with_gfx();
    let n = 10_000u64;
    for seqno in 1..=n {
        let t = T0 + seqno * 300 * US;
        gpu_run(&mut r, seqno, [t, t + 200 * US, t + 210 * US]);
    }
    let data = merged_stream(&r.recs);
    let mut trace = grtrace_format::Trace::open(vec![grtrace_format::InputSource::Bytes {
        name: "held".into(),
        data,
    }])
    .unwrap();
    let mut e = grtreport::Engine::new(
        Rules::default(),
        grtreport::joiner::JoinConfig::default(),
        grtreport::Filter::default(),
        3,
    );
    /// Counts the jobs the engine hands out.
    struct Count(std::rc::Rc<std::cell::Cell<u64>>);
    impl grtreport::engine::JobSink for Count {
        fn job(
            &mut self,
            _: &grtreport::Job,
            _: &grtreport::engine::Names<'_>,
        ) -> std::io::Result<()> {
            self.0.set(self.0.get() + 1);
            Ok(())
        }
    }
    let out = std::rc::Rc::new(std::cell::Cell::new(0));
    e.add_sink(Box::new(Count(out.clone())));
    let mut max_lag = 0u64;
    trace.for_each(|item| {
        if let grtrace_format::Item::Record(rec) = item {
            e.feed(&rec).unwrap();
            max_lag = max_lag.max(e.joiner.stats.jobs - out.get());
        }
        std::ops::ControlFlow::Continue(())
    });
    e.finish().unwrap();
    assert_eq!(e.summary.all.complete, n);
    // At most HELD (4096) jobs wait for the decision, plus the classifier's tail window
    // (4096): without the bound all 10000 would wait for the end of the stream.
    assert!(max_lag <= 2 * 4096 + 16, "jobs held back: {max_lag}");
}

/// A recorder killed with SIGKILL writes no STREAM_INFO at the end of its files: the report
/// says so, as grtparse does (the jobs it has are still reported, exit 0).
#[test]
fn a_stream_without_its_stream_info_did_not_end_cleanly() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/parse/multi");
    let dir = tmp("unended");
    std::fs::create_dir_all(&dir).unwrap();
    for cpu in 0..4 {
        let name = format!("run.grtrace.{cpu}");
        let mut bytes = std::fs::read(src.join(&name)).unwrap();
        if cpu == 3 {
            // its last record, the STREAM_INFO (64 bytes), as if the recorder died before it
            let info = grtrace_format::abi::rsize::NOTE_STREAM_INFO;
            assert_eq!(bytes.len() % 8, 0);
            bytes.truncate(bytes.len() - info);
        }
        std::fs::write(dir.join(&name), bytes).unwrap();
    }
    let run = |base: &std::path::Path| bin().arg(base).arg("-q").output().unwrap();
    let whole = run(&src.join("run"));
    assert!(whole.status.success());
    let err = String::from_utf8_lossy(&whole.stderr);
    assert!(!err.contains("did not end cleanly"), "{err}");
    let cut = run(&dir.join("run"));
    assert!(cut.status.success());
    let err = String::from_utf8_lossy(&cut.stderr);
    assert!(
        err.contains(
            "grtreport: warning: 1 stream(s) did not end cleanly: no STREAM_INFO record at the end"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stream that ends with a STREAM_INFO whose recorder says it did not stop cleanly (no
/// `INFO_STOPPED_CLEANLY`: it was stopped by an error) is said so; the same stream with the
/// flag set gets no warning.
#[test]
fn a_stream_info_that_says_the_stop_was_not_clean_is_warned_about() {
    let stream = |flags: u32| {
        let mut r = Rec::with_gfx();
        r.push(
            0,
            0,
            T0 + MS,
            Body::StreamInfo(grtrace_format::StreamInfo {
                kernel_dropped: 0,
                records: 2,
                bytes: 0,
                flags,
            }),
        );
        grtrace_format::builder::merged_stream(&r.recs, 0, "virtio_gpu")
    };
    let report = |flags: u32, name: &str| {
        let p = tmp(name);
        std::fs::write(&p, stream(flags)).unwrap();
        let o = bin().arg(&p).arg("-q").output().unwrap();
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let unclean = report(0, "unclean.grtrace");
    assert!(
        unclean.contains(
            "1 stream(s) say the recorder did not stop cleanly (STREAM_INFO without clean=yes)"
        ),
        "{unclean}"
    );
    assert!(!unclean.contains("did not end cleanly"), "{unclean}");
    let clean = report(grtrace_format::abi::INFO_STOPPED_CLEANLY, "clean.grtrace");
    assert!(!clean.contains("cleanly"), "{clean}");
}
