//! Event codes a later minor version adds (FORMAT.md §2.1) are values of the open
//! `grtrace_format::Event`: grtreport counts them and joins every job exactly as it would
//! without them, never taking one for a lifecycle event of this version.

mod common;

use common::*;
use grtrace_format::Event;

/// Two jobs on ring 0; with `extra`, each lifecycle step is followed by events of codes this
/// version does not name, carrying the same job key and arguments.
fn stream(extra: &[Event]) -> Vec<u8> {
    let mut r = Rec::default();
    r.ring(T0, 0, 256, b"gfx");
    for seqno in 1..=2u64 {
        let t = T0 + seqno * 100 * US;
        let steps = [
            (Event::COMMIT, 0, 5, t),
            (Event::SUBMIT, 0, 5, t + 10 * US),
            (Event::START, 1, 0, t + 30 * US),
            (Event::END, 1, 0, t + 60 * US),
            (Event::IRQ, 1, 0, t + 61 * US),
            (Event::SIGNAL, 1, 0, t + 62 * US),
        ];
        for (i, (code, cpu, pid, at)) in steps.into_iter().enumerate() {
            let a0 = if code == Event::IRQ { seqno } else { 0 };
            // The extra events are the step's but for their code and time.
            let step = Ev::of_job(3, 0, seqno).on(cpu, pid).flags(1).args(a0, 8, 1);
            r.add(step.at(code, at));
            for (k, &e) in extra.iter().enumerate() {
                // Between this step and the next, in time order.
                let dt = 1 + (i as u64 * extra.len() as u64 + k as u64) % 5;
                r.add(step.at(e, at + dt));
            }
        }
    }
    merged_stream(&r.recs)
}

#[test]
fn unknown_codes_are_counted_and_leave_every_job_as_it_was() {
    // 26 follows HANG (the last 1.0 code); 63 is the last code a 64-bit mask can select;
    // 300 is past it.
    let future = [Event(26), Event(63), Event(300)];
    assert!(future.iter().all(|e| !e.is_known()));

    let (plain, plain_jobs) = run_bytes(stream(&[]), Default::default());
    let (mixed, mixed_jobs) = run_bytes(stream(&future), Default::default());

    assert_eq!(plain_jobs.len(), 2);
    assert_eq!(mixed_jobs, plain_jobs, "unknown codes changed a job");
    assert_eq!(plain.joiner.stats.unknown_codes, 0);
    // 2 jobs x 6 steps x 3 unknown codes, each counted once.
    assert_eq!(mixed.joiner.stats.unknown_codes, 2 * 6 * 3);
    // Not taken for any code of this version: the codes seen are the same six.
    assert_eq!(mixed.joiner.stats.seen_codes, plain.joiner.stats.seen_codes);
    // written out here, by name, not taken from the code under test
    let lifecycle = ["COMMIT", "SUBMIT", "START", "END", "IRQ", "SIGNAL"];
    let want = lifecycle.iter().fold(0, |m, n| {
        m | Event::from_name(n).unwrap().mask_bit().unwrap()
    });
    assert_eq!(mixed.joiner.stats.seen_codes, want);
}
