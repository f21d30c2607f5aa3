//! Design §5.3's worked example: COMMIT@0.0 SUBMIT@0.2 START@2.5 END@3.0 IRQ@3.1 ms must
//! come out as queue wait with exactly those phases. The stream is also kept as a fixture
//! (fixtures/report/worked-example.grtrace) with the hand-checked report next to it.

mod common;

use std::path::PathBuf;

use common::*;
use grtrace_format::Event;
use grtreport::{Flags, Rules, Tags};

fn worked_example() -> Vec<u8> {
    let mut r = Rec::default();
    r.ring(T0, 0, 256, b"gfx");
    let (ctx, ring, seq, pid) = (7, 0, 41, 4242);
    let job = Ev::of_job(ctx, ring, seq).flags(1);
    // The submitting thread on CPU 0; the GPU's side (interrupt context) on CPU 1.
    let (host, gpu) = (job.on(0, pid), job.on(1, 0));
    // Ring fill at COMMIT/SUBMIT: 192 of 256 slots (75 %): the ring is congested.
    r.add(host.at(Event::COMMIT, T0).args(0, 192, 0));
    r.add(host.at(Event::SUBMIT, T0 + 200 * US).args(0, 192, 1));
    r.add(host.at(Event::START, T0 + 2500 * US));
    r.add(gpu.at(Event::END, T0 + 3000 * US));
    // The IRQ carries the hardware seqno it read, and no flags.
    r.add(gpu.flags(0).at(Event::IRQ, T0 + 3100 * US).args(seq, 0, 0));
    r.add(gpu.at(Event::SIGNAL, T0 + 3100 * US + 1));
    merged_stream(&r.recs)
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/report")
}

#[test]
fn worked_example_is_queue_wait_with_exact_phases() {
    let (_, jobs) = run_bytes(worked_example(), Rules::default());
    assert_eq!(jobs.len(), 1);
    let j = &jobs[0];
    assert_eq!((j.key.ctx, j.key.ring, j.key.seqno), (7, 0, 41));
    assert_eq!(j.phases.submit_host, 200 * US);
    assert_eq!(j.phases.queue, 2300 * US);
    assert_eq!(j.phases.exec, 500 * US);
    assert_eq!(j.phases.complete, 100 * US);
    assert_eq!(j.phases.total, 3100 * US);
    assert_eq!(j.phases.gpu_wait, 0);
    assert_eq!(j.tags, Tags(Tags::QUEUE_WAIT));
    assert!(!j.flags.has(Flags::INFERRED) && !j.flags.incomplete());
    assert!((j.fill - 0.75).abs() < 1e-6);
}

#[test]
fn worked_example_fixture_and_golden_report() {
    let dir = fixtures();
    let input = dir.join("worked-example.grtrace");
    let golden = dir.join("worked-example.txt");
    let data = worked_example();
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&input, &data).unwrap();
    }
    assert_eq!(
        std::fs::read(&input).expect("fixture (UPDATE_FIXTURES=1 writes it)"),
        data,
        "fixture differs from the generator"
    );
    let text = stdout_of(grtreport().arg(&input).args(["--top", "3", "--jobs"]));
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("golden report");
    assert_eq!(text, want);
}
