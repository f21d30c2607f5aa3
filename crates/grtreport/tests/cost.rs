//! Hostile sizes: the joiner's work must grow linearly with the input, whatever the input
//! holds, and a 32-bit seqno that wraps through 0 must not invent an unnamed IRQ.

mod common;

use common::*;
use grtrace_format::abi::lost_source;
use grtrace_format::{Body, Event, Lost};
use grtreport::{Flags, Rules};

/// `n` rounds of everything that used to make one event visit every open job: COMMITs that
/// are never submitted with doorbells that name none of them, STARTed jobs that never end
/// with a preempting CTX_SWITCH and a ring-wide VM fault each, jobs that end without an
/// IRQ with IRQs that name no job, and a NOTE_LOST every tenth round.
fn hostile(n: u64) -> Vec<u8> {
    let mut r = Rec::with_gfx();
    r.ring(T0, 1, 1 << 20, b"comp");
    r.ring(T0, 2, 1 << 20, b"copy");
    for i in 0..n {
        let t = T0 + 1_000 + i * 4 * US;
        // Pending forever: seqnos far above the doorbell's.
        let host = |seqno| Ev::of_job(1, 0, seqno).on(0, 7).flags(1);
        r.add(host(1_000 + i).at(Event::COMMIT, t));
        r.add(host(1).at(Event::SUBMIT, t + 1));
        // Running forever on ring 1.
        r.add(Ev::of_job(2, 1, i + 1).flags(1).at(Event::START, t + 2));
        let switch = Ev::of_job(3, 1, 0).flags(2).args(2, 0, 0);
        r.add(switch.at(Event::CTX_SWITCH, t + 3));
        let fault = Ev::of_job(0, 1, 0).on(1, 0).args(0x1000, 0, 0);
        r.add(fault.at(Event::VM_FAULT, t + 4));
        r.add(fault.at(Event::VM_RETRY, t + 5));
        // Ended on ring 2 and never interrupted; an IRQ names a seqno nobody has.
        let ended = Ev::of_job(4, 2, i + 1).on(1, 0).flags(1);
        r.add(ended.at(Event::END, t + 6));
        let irq = Ev::of_job(0, 2, 0).on(1, 0).args(u32::MAX as u64, 0, 0);
        r.add(irq.at(Event::IRQ, t + 7));
        if i % 10 == 9 {
            r.push(
                1,
                0,
                t + 8,
                Body::Lost(Lost {
                    cpu: 1,
                    source: lost_source::KERNEL,
                    count: 1,
                    first_ns: t,
                    last_ns: t + 8,
                }),
            );
        }
    }
    merged_stream(&r.recs)
}

#[test]
fn doubling_a_hostile_input_doubles_the_work() {
    let work = |n: u64| {
        let (e, jobs) = run_bytes(hostile(n), Rules::default());
        // Every job still comes out, the unfinished ones incomplete.
        assert_eq!(jobs.len() as u64, 3 * n);
        assert!(e.joiner.stats.ops > 0);
        e.joiner.stats.ops
    };
    let (a, b) = (work(5_000), work(10_000));
    // Quadratic lookups would make this ~4x; allow a little for constant terms.
    let growth = b as f64 / a as f64;
    assert!(growth < 2.2, "work {a} -> {b}: x{growth:.2}");
}

#[test]
fn a_seqno_that_wraps_through_zero_names_job_zero() {
    for irq_ctx in [0, 2] {
        let mut r = Rec::with_gfx();
        let seqs = [0xffff_fffe_u64, 0xffff_ffff, 0, 1];
        for (i, s) in seqs.iter().enumerate() {
            let t = T0 + i as u64 * 100 * US;
            let job = Ev::of_job(2, 0, *s).flags(1);
            r.add(job.on(0, 5).at(Event::COMMIT, t));
            r.add(job.on(0, 5).at(Event::SUBMIT, t + US).args(0, 0, 1));
            r.add(job.at(Event::START, t + 2 * US));
            r.add(job.on(1, 0).at(Event::END, t + 40 * US));
            // The IRQ names the job by the hardware seqno it read: 0 for job 0.
            let irq = Ev::of_job(irq_ctx, 0, *s).on(1, 0).args(*s, 0, 0);
            r.add(irq.at(Event::IRQ, t + 45 * US));
        }
        let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
        assert_eq!(jobs.len(), 4);
        for j in &jobs {
            assert!(!j.flags.has(Flags::NO_IRQ), "irq ctx {irq_ctx}: {j:?}");
            assert_eq!(j.phases.complete, 5 * US, "{j:?}");
        }
        assert_eq!(e.joiner.stats.irq_unnamed, 0, "no IRQ went unnamed");
        assert_eq!(e.joiner.stats.irq_orphan, 0);
    }
}

#[test]
fn events_at_the_last_nanosecond_are_not_taken_as_missing() {
    // u64::MAX is a valid time in the format; the joiner must not read it as "not seen".
    let mut r = Rec::default();
    let last = u64::MAX;
    r.ring(last - 1_000, 0, 1 << 20, b"gfx");
    let job = Ev::of_job(2, 0, 7).flags(1);
    r.add(job.on(0, 5).at(Event::COMMIT, last - 300));
    r.add(job.on(0, 5).at(Event::SUBMIT, last - 200).args(0, 0, 1));
    r.add(job.at(Event::START, last - 100));
    r.add(job.on(1, 0).at(Event::END, last));
    r.add(job.on(1, 0).flags(0).at(Event::IRQ, last).args(7, 0, 0));
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let j = &jobs[0];
    assert!(!j.flags.incomplete(), "{j:?}");
    assert!(!j.flags.has(Flags::NO_IRQ), "{j:?}");
    // END is taken one nanosecond before the last one: 99 ns of execution, not "missing".
    assert_eq!(j.phases.exec, 99, "{j:?}");
}
