//! `--perfetto`: the export is valid Trace Event Format (checked by tests/common/tef.rs)
//! on every fixture and on simulator scenarios, and it shows what the report knows: one
//! slice per job on its ring, the queued part on its context, the host side on the
//! submitting thread, arrows, counters and instants, inferred and incomplete jobs marked.

mod common;
#[path = "common/tef.rs"]
mod tef;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use grtrace_format::Event;
use grtreport::perfetto::{Perfetto, PerfettoConfig, SharedOut, CARD_PID_BASE};
use grtreport::{Job, Rules};
use serde_json::Value;
use tef::Checked;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn checked(text: &str) -> Checked {
    match tef::check(text) {
        Ok(c) => c,
        Err(e) => panic!("invalid trace:\n{}", e.join("\n")),
    }
}

/// Runs the binary with `--perfetto -` on `input`; returns the checked export and the jobs
/// `--jobs` lists for the same input.
fn export_file(input: &std::path::Path) -> (Checked, Vec<String>) {
    let c = checked(&stdout_of(bin().arg(input).args(["--perfetto", "-"])));
    let jobs = bin().arg(input).args(["--jobs", "-q"]).output().unwrap();
    let lines = String::from_utf8(jobs.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(String::from)
        .collect();
    (c, lines)
}

/// Runs a stream through the engine with the exporter attached (in memory).
fn export_bytes(data: Vec<u8>) -> (Checked, Vec<Job>, u64) {
    let mut e = engine(Rules::default());
    e.keep_jobs();
    let buf = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let cfg = PerfettoConfig {
        card: 3,
        driver: "grtsim".into(),
        input: "test".into(),
        interval_ns: 1_000_000,
    };
    let p = Perfetto::new(SharedOut(buf.clone()), cfg).unwrap();
    e.add_timeline(Box::new(p));
    feed(data, &mut e);
    e.finish_timelines(&[]).unwrap();
    let jobs = e.take_jobs();
    let text = String::from_utf8(buf.borrow().clone()).unwrap();
    let c = checked(&text);
    let held = c.other.as_ref().unwrap()["max_held_items"]
        .as_u64()
        .unwrap();
    (c, jobs, held)
}

fn arg<'a>(e: &'a Value, k: &str) -> &'a Value {
    &e["args"][k]
}

/// Slices on ring tracks (the card's process, named `ring ...`).
fn ring_slices(c: &Checked) -> Vec<&Value> {
    c.events
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && c.threads
                    .get(&(e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap()))
                    .is_some_and(|n| n.starts_with("ring "))
        })
        .collect()
}

#[test]
fn every_fixture_exports_a_valid_trace_with_one_ring_slice_per_job() {
    let fixtures = [
        "fixtures/report/worked-example.grtrace",
        "fixtures/parse/multi/run",
        "fixtures/parse/gap/run",
        "fixtures/parse/every/run",
        "fixtures/parse/bigend/run",
    ];
    for f in fixtures {
        let (c, jobs) = export_file(&root().join(f));
        // Jobs with a START and an END have an execution slice; --jobs lists every job.
        let with_exec = jobs
            .iter()
            .filter(|l| !l.ends_with("no-end") && !l.contains("no-end,"))
            .filter(|l| !l.contains("incomplete") || !l.contains("no-end"))
            .count();
        let slices = ring_slices(&c);
        assert_eq!(slices.len(), with_exec, "{f}: {jobs:#?}");
        assert!(!slices.is_empty(), "{f}");
        // One process per card, named after card and driver.
        let card = c.processes.get(&(CARD_PID_BASE as i64)).expect(f);
        assert!(card.starts_with("card0 ("), "{f}: {card}");
        // Every slice has its key and every phase in args.
        for s in &slices {
            for k in ["ctx", "ring", "seqno", "tags", "flags", "blocker"] {
                assert!(!arg(s, k).is_null() || k == "blocker", "{f}: {k} in {s}");
            }
            for p in grtreport::job::PHASE_NAMES {
                assert!(arg(s, &format!("{p}_ms")).is_number(), "{f}: {p} in {s}");
            }
        }
        // Every pid that has events is named.
        for e in &c.events {
            let pid = e["pid"].as_i64().unwrap();
            assert!(c.processes.contains_key(&pid), "{f}: pid {pid} unnamed");
        }
    }
}

#[test]
fn the_worked_example_shows_host_queue_exec_arrow_and_counters() {
    let (c, _) = export_file(&root().join("fixtures/report/worked-example.grtrace"));
    // Job <7, gfx, 41>: COMMIT 0, SUBMIT 0.2 ms, START 2.5 ms, END 3.0 ms (pid 4242).
    let host = c.named("X", |n| n == "submit 7/41");
    assert_eq!(host.len(), 1);
    assert_eq!(
        (host[0]["pid"].as_i64(), host[0]["tid"].as_i64()),
        (Some(4242), Some(4242))
    );
    assert_eq!(tef::ns(&host[0]["dur"]), Some(200_000));
    let queued = c.named("X", |n| n == "queued 7/41");
    assert_eq!(tef::ns(&queued[0]["ts"]), Some(200_000));
    assert_eq!(tef::ns(&queued[0]["dur"]), Some(2_300_000));
    let exec = c.named("X", |n| n == "7/41");
    assert_eq!(tef::ns(&exec[0]["ts"]), Some(2_500_000));
    assert_eq!(tef::ns(&exec[0]["dur"]), Some(500_000));
    assert_eq!(arg(exec[0], "tags"), "queue-wait");
    assert_eq!(arg(exec[0], "queue_ms").as_f64(), Some(2.3));
    assert_eq!(c.flows.get("submit"), Some(&1));
    // Busy 50 % in the bucket [2 ms, 3 ms); fill 192/256 = 75 %.
    let counters = c.named("C", |n| n == "ring 0 gfx");
    assert!(counters
        .iter()
        .any(|e| tef::ns(&e["ts"]) == Some(2_000_000) && arg(e, "busy %") == 50.0));
    assert!(counters.iter().all(|e| arg(e, "fill %") == 75.0));
    assert_eq!(arg(counters.last().unwrap(), "outstanding"), 0);
}

#[test]
fn instants_mark_faults_resets_timeouts_lost_records_and_messages() {
    let (c, _) = export_file(&root().join("fixtures/parse/every/run"));
    for name in ["VM_FAULT", "RESET", "TIMEOUT", "HANG"] {
        assert!(!c.named("i", |n| n == name).is_empty(), "{name}");
    }
    assert!(!c.named("i", |n| n.starts_with("msg: ")).is_empty());
    assert!(!c.named("i", |n| n.starts_with("lost ")).is_empty());
    let (g, _) = export_file(&root().join("fixtures/parse/gap/run"));
    let lost = g.named("i", |n| n.starts_with("lost "));
    // The recorder's NOTE_LOST (4 records) and the reader's sequence gap (3 records).
    assert!(lost
        .iter()
        .any(|e| arg(e, "count") == 4 && arg(e, "sequence_gap") == false));
    assert!(lost
        .iter()
        .any(|e| arg(e, "count") == 3 && arg(e, "sequence_gap") == true));
}

#[test]
fn inferred_and_incomplete_jobs_are_marked() {
    let mut r = Rec::default();
    r.ring(T0, 0, 64, b"gfx");
    // Job 1: no START (inferred from SUBMIT); job 2: never ends (incomplete).
    // Submitted by thread 10 with the ring 8 units full; the GPU's side on CPU 1.
    let host = |seqno| Ev::of_job(1, 0, seqno).on(0, 10);
    let gpu = |seqno| Ev::of_job(1, 0, seqno).on(1, 0);
    r.add(host(1).at(Event::COMMIT, T0 + US).args(0, 8, 0));
    r.add(host(1).at(Event::SUBMIT, T0 + 2 * US).args(0, 8, 1));
    r.add(gpu(1).at(Event::END, T0 + 50 * US));
    r.add(gpu(1).at(Event::IRQ, T0 + 51 * US).args(1, 0, 0));
    r.add(host(2).at(Event::COMMIT, T0 + 60 * US).args(0, 8, 0));
    r.add(host(2).at(Event::SUBMIT, T0 + 61 * US).args(0, 8, 1));
    r.add(gpu(2).at(Event::START, T0 + 70 * US));
    let (c, jobs, _) = export_bytes(merged_stream(&r.recs));
    assert_eq!(jobs.len(), 2);
    let inferred = c.named("X", |n| n == "1/1 (inferred)");
    assert_eq!(inferred.len(), 1);
    assert_eq!(inferred[0]["cat"], "job,inferred");
    // The incomplete job has a host and a queued slice, no execution slice.
    assert_eq!(c.named("X", |n| n == "submit 1/2 (incomplete)").len(), 1);
    assert_eq!(c.named("X", |n| n == "queued 1/2 (incomplete)").len(), 1);
    assert!(c.named("X", |n| n == "1/2 (incomplete)").is_empty());
}

#[test]
fn overlapping_queued_jobs_of_one_context_go_to_lanes() {
    let mut r = Rec::default();
    r.ring(T0, 0, 64, b"gfx");
    // Four jobs queued at once on ctx 5; they run one after the other.
    for s in 1..=4u64 {
        let host = Ev::of_job(5, 0, s).on(0, 10);
        r.add(host.at(Event::COMMIT, T0 + s * US).args(0, 8, 0));
        r.add(host.at(Event::SUBMIT, T0 + s * US + 100).args(0, 8, 1));
    }
    for s in 1..=4u64 {
        let (gpu, end) = (Ev::of_job(5, 0, s).on(1, 0), T0 + (10 * s + 9) * US);
        r.add(gpu.at(Event::START, T0 + (10 * s) * US));
        r.add(gpu.at(Event::END, end));
        r.add(gpu.at(Event::IRQ, end + 10).args(s, 0, 0));
    }
    let (c, jobs, _) = export_bytes(merged_stream(&r.recs));
    assert_eq!(jobs.len(), 4);
    let lanes: Vec<&String> = c
        .threads
        .values()
        .filter(|n| n.starts_with("ctx 5 queued"))
        .collect();
    assert_eq!(lanes.len(), 4, "{lanes:?}");
    // Executions do not overlap: one ring lane; four arrows.
    assert_eq!(
        c.threads
            .values()
            .filter(|n| n.starts_with("ring 0"))
            .count(),
        1
    );
    assert_eq!(c.flows.get("submit"), Some(&4));
    // The card is card 3 here: its process id says so.
    assert!(c.processes[&(CARD_PID_BASE as i64 + 3)].starts_with("card3 (grtsim)"));
}

#[test]
fn simulator_scenarios_export_valid_traces_with_every_job() {
    for name in ["report-mixed", "preempt-thrash", "vm-fault", "dep-wait"] {
        let sc = grtrace_sim::scenarios::by_name(name, 9, 2000).unwrap();
        let (c, jobs, held) = export_bytes(scenario_stream(&sc.records));
        let complete = jobs.iter().filter(|j| !j.flags.incomplete()).count();
        let slices = ring_slices(&c);
        assert_eq!(slices.len(), complete, "{name}");
        assert_eq!(c.flows.get("submit").copied(), Some(complete), "{name}");
        assert!(held > 0);
        for e in c.named("C", |_| true) {
            let b = arg(e, "busy %").as_f64().unwrap();
            assert!((0.0..=100.0).contains(&b), "{name}: {e}");
        }
        if name == "vm-fault" {
            assert!(!c.named("i", |n| n == "VM_FAULT").is_empty());
        }
    }
}

fn synth(records: u64) -> Vec<u8> {
    let cfg = common::one_cpu(records);
    let mut out = vec![Vec::new()];
    grtrace_format::synth::generate(&cfg, out.iter_mut().collect()).unwrap();
    out.remove(0)
}

#[test]
fn memory_stays_bounded_on_a_long_synthetic_trace() {
    // What the exporter holds at once is bounded by the report's own window (the jobs the
    // classifier holds back, tail-window = 4096, plus those between two watermarks), not
    // by the trace: four times the trace, the same peak.
    let (c, jobs, short) = export_bytes(synth(100_000));
    let (_, long_jobs, long) = export_bytes(synth(400_000));
    assert!(long_jobs.len() >= 4 * jobs.len() - 10);
    assert!(long <= short + short / 4, "held {short} then {long}");
    assert!(long < 3 * (4096 + 4096), "held {long}");
    let ended = jobs
        .iter()
        .filter(|j| j.end != u64::MAX && j.start != u64::MAX);
    assert_eq!(ring_slices(&c).len(), ended.count());
}

#[test]
fn export_to_a_file_keeps_the_report_on_stdout_and_draws_a_second_card_apart() {
    let p = tmp("worked.json");
    let out = bin()
        .arg(root().join("fixtures/report/worked-example.grtrace"))
        .arg("--perfetto")
        .arg(&p)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("All Rings"));
    checked(&std::fs::read_to_string(&p).unwrap());
    // Two stdout writers: usage error.
    for other in [
        &["--jobs"][..],
        &["--json"],
        &["--interval", "0.001"],
        &["--html", "-"],
    ] {
        let out = bin()
            .arg(root().join("fixtures/report/worked-example.grtrace"))
            .args(["--perfetto", "-"])
            .args(other)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{other:?}");
    }
    // The --json report goes to -o while the export takes stdout.
    let j = tmp("report.json");
    let out = bin()
        .arg(root().join("fixtures/report/worked-example.grtrace"))
        .args(["--perfetto", "-", "--json", "-o"])
        .arg(&j)
        .output()
        .unwrap();
    assert!(out.status.success());
    checked(&String::from_utf8(out.stdout).unwrap());
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&j).unwrap()).unwrap();
    assert!(report.is_object());
    // A second card's stream (no records): a process of its own, card0's jobs unchanged
    // (tests/cards.rs checks two cards with jobs).
    let mut h = grtrace_format::StreamHeader::new(0, 1, "amdgpu");
    h.flags = 0;
    let w = grtrace_format::StreamWriter::new(Vec::new(), &h).unwrap();
    let other = tmp("card1.grtrace");
    std::fs::write(&other, w.into_inner()).unwrap();
    let out = bin()
        .arg(root().join("fixtures/report/worked-example.grtrace"))
        .arg(&other)
        .args(["--perfetto", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let two = checked(&String::from_utf8(out.stdout).unwrap());
    let one = checked(&std::fs::read_to_string(&p).unwrap());
    assert_eq!(two.processes[&(CARD_PID_BASE as i64 + 1)], "card1 (amdgpu)");
    // One card: tracks named as before; two: after their card.
    assert!(!ring_slices(&one).is_empty());
    assert!(ring_slices(&two).is_empty());
    let card0 = |c: &Checked| {
        c.events
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == CARD_PID_BASE)
            .map(|e| {
                (
                    e["ts"].to_string(),
                    e["dur"].to_string(),
                    e["name"].to_string(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(!card0(&one).is_empty());
    assert_eq!(card0(&two), card0(&one));
}

#[test]
fn blockers_become_args_and_arrows_from_the_blocker_to_the_job_that_waited() {
    let sc = grtrace_sim::scenarios::by_name("dep-chain", 2, 2000).unwrap();
    let (c, jobs, _) = export_bytes(scenario_stream(&sc.records));
    let named: Vec<&Job> = jobs
        .iter()
        .filter(|j| grtreport::timeline::blocker(j).is_some())
        .collect();
    assert!(
        named.len() > 50,
        "{} jobs with a recorded blocker",
        named.len()
    );
    // Every job the report names a recorded blocker for gets an arrow (its blocker ran
    // within the last second, so the exporter still knows where it was drawn).
    assert_eq!(c.flows.get("blocker").copied(), Some(named.len()));
    // The arrow leaves the blocker's slice and ends at the waiter's execution.
    let slice_of = |ctx: u32, seqno: u64, ring: u32| {
        ring_slices(&c)
            .into_iter()
            .find(|e| arg(e, "ctx") == ctx && arg(e, "seqno") == seqno && arg(e, "ring") == ring)
    };
    for j in named.iter().take(20) {
        let b = grtreport::timeline::blocker(j).unwrap();
        let s = slice_of(j.key.ctx, j.key.seqno, j.key.ring).unwrap();
        assert_eq!(arg(s, "blocker"), j.blocker().who().as_str());
        let kind = arg(s, "blocker_kind").as_str().unwrap();
        assert!(kind == "dep" || kind == "queue");
        assert!(
            slice_of(b.ctx, b.seqno, b.ring).is_some(),
            "blocker {b:?} drawn"
        );
    }
    // Jobs that waited for a fence no recorded job owns name the fence, without an arrow.
    assert!(ring_slices(&c).iter().any(|e| arg(e, "blocker")
        .as_str()
        .is_some_and(|b| b.starts_with("fence "))));
}
