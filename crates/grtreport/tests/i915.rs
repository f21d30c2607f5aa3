//! i915's rules (FORMAT.md §3.1, §4.5; JOBS.md §1): seqnos per context on a `CTX_SEQNO`
//! ring, so an ELSP write makes visible one context's requests; a request on a virtual engine
//! is committed on the `VIRTUAL` ring and runs on a physical engine, one job under
//! (ctx, seqno). Streams shaped like the kernel series' i915 probes write them.

mod common;

use common::*;
use grtrace_format::abi::{eflag, ring_flag};
use grtrace_format::Event;
use grtreport::{Job, Rules};

const RCS0: u32 = 0x0000;
const VCS0: u32 = 0x0200;
const VCS1: u32 = 0x0201;
const VCS_VIRTUAL: u32 = 0x02ff;
const ENGINE: u32 = ring_flag::CTX_SEQNO;
const VIRTUAL: u32 = ring_flag::CTX_SEQNO | ring_flag::VIRTUAL;

/// One i915 event of request <ctx, ring, seqno> at T0 + `us` microseconds: host-side events
/// on CPU 0, the CSB and fence signalling on CPU 1. START and END carry the fence context.
fn ev(r: &mut Rec, us: u64, code: Event, flags: u16, ctx: u32, ring: u32, seqno: u64) {
    let host = matches!(code, Event::COMMIT | Event::SUBMIT);
    let (cpu, pid) = if host { (0, 4242) } else { (1, 0) };
    let arg0 = if matches!(code, Event::START | Event::END | Event::SIGNAL) {
        ctx as u64
    } else {
        0
    };
    // An ELSP write names one port's request: 1 job named (arg3).
    let arg3 = u32::from(code == Event::SUBMIT);
    let request = Ev::of_job(ctx, ring, seqno).on(cpu, pid).flags(flags);
    r.add(request.at(code, T0 + us * US).args(arg0, 0, arg3));
}

fn job(jobs: &[Job], ctx: u32, seqno: u64) -> &Job {
    let mut m = jobs
        .iter()
        .filter(|j| j.key.ctx == ctx && j.key.seqno == seqno);
    let j = m.next().expect("job");
    assert!(
        m.next().is_none(),
        "({ctx}, {seqno}) is more than one job: {jobs:#?}"
    );
    j
}

/// Two contexts on rcs0, seqnos 2, 4 each (per context, as i915's timelines count), their
/// COMMITs interleaved; each context's requests go to the hardware by its own ELSP write,
/// naming its last request.
fn two_contexts(flags: u32) -> Vec<Job> {
    let (a, b) = (100, 200);
    let mut r = Rec::default();
    r.ring_flags(T0, RCS0, 16384, b"rcs0", flags);
    let f = eflag::FENCED;
    ev(&mut r, 10, Event::COMMIT, f, a, RCS0, 2);
    ev(&mut r, 20, Event::COMMIT, f, b, RCS0, 2);
    ev(&mut r, 30, Event::COMMIT, f, a, RCS0, 4);
    ev(&mut r, 40, Event::COMMIT, f, b, RCS0, 4);
    ev(&mut r, 100, Event::SUBMIT, f, a, RCS0, 4);
    ev(&mut r, 120, Event::START, f, a, RCS0, 2);
    ev(&mut r, 200, Event::END, f, a, RCS0, 2);
    ev(&mut r, 200, Event::START, f | eflag::INFERRED, a, RCS0, 4);
    ev(&mut r, 300, Event::END, f, a, RCS0, 4);
    ev(&mut r, 310, Event::SUBMIT, f, b, RCS0, 4);
    ev(&mut r, 320, Event::START, f, b, RCS0, 2);
    ev(&mut r, 400, Event::END, f, b, RCS0, 2);
    ev(&mut r, 400, Event::START, f | eflag::INFERRED, b, RCS0, 4);
    ev(&mut r, 500, Event::END, f, b, RCS0, 4);
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 4, "{jobs:#?}");
    jobs
}

#[test]
fn an_elsp_write_makes_visible_its_own_contexts_requests_only() {
    let jobs = two_contexts(ENGINE);
    // (ctx, seqno, submit_host, queue, batch): context 200's requests wait for their own
    // ELSP write at 310 us, not context 100's at 100 us.
    for (ctx, seqno, host, queue) in [
        (100, 2, 90, 20),
        (100, 4, 70, 100),
        (200, 2, 290, 10),
        (200, 4, 270, 90),
    ] {
        let j = job(&jobs, ctx, seqno);
        assert_eq!(j.key.ring, RCS0);
        assert!(!j.flags.incomplete(), "{j:?}");
        assert_eq!(
            j.phases.submit_host,
            host * US,
            "submit_host of {ctx}:{seqno}"
        );
        assert_eq!(j.phases.queue, queue * US, "queue of {ctx}:{seqno}");
        assert_eq!(j.batch, 2, "batch of {ctx}:{seqno}");
    }
}

#[test]
fn without_ring_flags_a_submit_is_a_doorbell_for_every_context() {
    // The same stream from a ring announced without flags (recordings made before they
    // existed, virtio-gpu, amdgpu): the first SUBMIT made every job up to seqno 4 visible.
    let jobs = two_contexts(0);
    for (ctx, seqno, host, queue) in [
        (100, 2, 90, 20),
        (100, 4, 70, 100),
        (200, 2, 80, 220),
        (200, 4, 60, 300),
    ] {
        let j = job(&jobs, ctx, seqno);
        assert_eq!(
            j.phases.submit_host,
            host * US,
            "submit_host of {ctx}:{seqno}"
        );
        assert_eq!(j.phases.queue, queue * US, "queue of {ctx}:{seqno}");
        assert_eq!(j.batch, 4, "batch of {ctx}:{seqno}");
    }
}

fn vcs_rings(r: &mut Rec) {
    r.ring_flags(T0, VCS0, 16384, b"vcs0", ENGINE);
    r.ring_flags(T0, VCS1, 16384, b"vcs1", ENGINE);
    r.ring_flags(T0, VCS_VIRTUAL, 16384, b"vcs-virtual", VIRTUAL);
}

#[test]
fn a_virtual_engine_request_is_one_job_on_the_engine_that_ran_it() {
    // Context 300 is a virtual engine over vcs0 and vcs1; context 400 is vcs1's own.
    let (v, p) = (300, 400);
    let f = eflag::FENCED;
    let mut r = Rec::default();
    vcs_rings(&mut r);
    ev(&mut r, 10, Event::COMMIT, f, v, VCS_VIRTUAL, 2);
    ev(&mut r, 20, Event::COMMIT, f, v, VCS_VIRTUAL, 4);
    ev(&mut r, 30, Event::COMMIT, f, p, VCS1, 2);
    // vcs1 takes 300:2.
    ev(&mut r, 50, Event::SUBMIT, f, v, VCS1, 2);
    ev(&mut r, 60, Event::START, f, v, VCS1, 2);
    ev(&mut r, 160, Event::END, f, v, VCS1, 2);
    ev(&mut r, 165, Event::SIGNAL, f, v, VCS1, 2);
    // vcs1's own context, submitted after it.
    ev(&mut r, 170, Event::SUBMIT, f, p, VCS1, 2);
    ev(&mut r, 175, Event::START, f, p, VCS1, 2);
    ev(&mut r, 250, Event::END, f, p, VCS1, 2);
    // vcs0 takes 300:4 once 300:2 is done (a virtual engine holds one request at a time).
    ev(&mut r, 200, Event::SUBMIT, f, v, VCS0, 4);
    ev(&mut r, 210, Event::START, f, v, VCS0, 4);
    ev(&mut r, 300, Event::END, f, v, VCS0, 4);
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 3, "{jobs:#?}");
    for (ctx, seqno, ring, host, queue, exec) in [
        (v, 2, VCS1, 40, 10, 100),
        (v, 4, VCS0, 180, 10, 90),
        (p, 2, VCS1, 140, 5, 75),
    ] {
        let j = job(&jobs, ctx, seqno);
        assert_eq!(j.key.ring, ring, "ring of {ctx}:{seqno}");
        assert!(!j.flags.incomplete(), "{j:?}");
        assert_eq!(
            j.phases.submit_host,
            host * US,
            "submit_host of {ctx}:{seqno}"
        );
        assert_eq!(j.phases.queue, queue * US, "queue of {ctx}:{seqno}");
        assert_eq!(j.phases.exec, exec * US, "exec of {ctx}:{seqno}");
        assert_eq!(j.batch, 1, "batch of {ctx}:{seqno}");
    }
    // 300:2 completes at its fence signal.
    assert_eq!(job(&jobs, v, 2).phases.complete, 5 * US);
    assert_eq!(e.joiner.stats.moved, 2);
    // Busy time and jobs ended belong to the engines; the virtual ring ran nothing.
    let util = |ring: u32| {
        let r = e.joiner.ring(ring).expect("ring");
        (r.util.ended, r.util.busy.total)
    };
    assert_eq!(util(VCS1), (2, 175 * US));
    assert_eq!(util(VCS0), (1, 90 * US));
    assert_eq!(util(VCS_VIRTUAL), (0, 0));
}

#[test]
fn a_preempted_virtual_request_taken_by_another_engine_stays_one_job() {
    let v = 500;
    let f = eflag::FENCED;
    let mut r = Rec::default();
    vcs_rings(&mut r);
    ev(&mut r, 10, Event::COMMIT, f, v, VCS_VIRTUAL, 2);
    ev(&mut r, 20, Event::SUBMIT, f, v, VCS0, 2);
    ev(&mut r, 30, Event::START, f, v, VCS0, 2);
    ev(&mut r, 60, Event::END, f | eflag::PREEMPT, v, VCS0, 2);
    ev(&mut r, 70, Event::SUBMIT, f, v, VCS1, 2);
    ev(&mut r, 80, Event::START, f, v, VCS1, 2);
    ev(&mut r, 130, Event::END, f, v, VCS1, 2);
    // A late event on the virtual ring (after the request left it) is the job's too.
    ev(&mut r, 131, Event::SIGNAL, f, v, VCS_VIRTUAL, 2);
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let j = &jobs[0];
    assert_eq!(j.key.ring, VCS1);
    assert!(!j.flags.incomplete(), "{j:?}");
    // Submitted at the first ELSP write; executed from its first START to its END, 20 us
    // of it off the GPU; completed at its signal.
    assert_eq!(j.phases.submit_host, 10 * US);
    assert_eq!(j.phases.queue, 10 * US);
    assert_eq!(j.phases.exec, 100 * US);
    assert_eq!(j.preempted, 20 * US);
    assert_eq!(j.preempts, 1);
    assert_eq!(j.phases.complete, US);
    let busy = |ring: u32| e.joiner.ring(ring).expect("ring").util.busy.total;
    assert_eq!((busy(VCS0), busy(VCS1)), (30 * US, 50 * US));
    // vcs0 counted it outstanding until it left, vcs1 until its END: none is left over.
    for ring in [VCS0, VCS1, VCS_VIRTUAL] {
        assert_eq!(
            e.joiner.ring(ring).expect("ring").outstanding,
            0,
            "{ring:#x}"
        );
    }
}

#[test]
fn under_guc_a_virtual_request_stays_on_the_virtual_ring() {
    // GuC picks the engine unseen: every event names the virtual ring, which is then an
    // ordinary ring with per-context seqnos.
    let (a, b) = (600, 700);
    let f = eflag::FENCED;
    let mut r = Rec::default();
    vcs_rings(&mut r);
    ev(&mut r, 10, Event::COMMIT, f, a, VCS_VIRTUAL, 2);
    ev(&mut r, 20, Event::COMMIT, f, b, VCS_VIRTUAL, 2);
    ev(&mut r, 30, Event::SUBMIT, f, a, VCS_VIRTUAL, 2);
    ev(
        &mut r,
        30,
        Event::START,
        f | eflag::INFERRED,
        a,
        VCS_VIRTUAL,
        2,
    );
    ev(&mut r, 90, Event::SUBMIT, f, b, VCS_VIRTUAL, 2);
    ev(
        &mut r,
        90,
        Event::START,
        f | eflag::INFERRED,
        b,
        VCS_VIRTUAL,
        2,
    );
    ev(&mut r, 100, Event::END, f, a, VCS_VIRTUAL, 2);
    ev(&mut r, 150, Event::END, f, b, VCS_VIRTUAL, 2);
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 2);
    assert_eq!(job(&jobs, a, 2).phases.submit_host, 20 * US);
    assert_eq!(job(&jobs, b, 2).phases.submit_host, 70 * US);
    assert!(jobs.iter().all(|j| j.key.ring == VCS_VIRTUAL));
    assert_eq!(e.joiner.stats.moved, 0);
}

#[test]
fn moving_jobs_costs_the_same_per_job_and_leaves_nothing_behind() {
    // n virtual requests over two engines and n requests of engine contexts, seqnos per
    // context (many contexts share each seqno): work grows linearly, memory stays with the
    // jobs in flight.
    let build = |n: u64| {
        let mut r = Rec::default();
        vcs_rings(&mut r);
        let f = eflag::FENCED;
        for i in 0..n {
            let t = 1_000 + i * 20;
            let (v, p) = (10_000 + (i % 64) as u32, 20_000 + (i % 8) as u32);
            let (vs, ps) = (2 * (i / 64) + 2, 2 * (i / 8) + 2);
            let ring = if i % 2 == 0 { VCS0 } else { VCS1 };
            ev(&mut r, t, Event::COMMIT, f, v, VCS_VIRTUAL, vs);
            ev(&mut r, t + 1, Event::COMMIT, f, p, ring, ps);
            ev(&mut r, t + 2, Event::SUBMIT, f, v, ring, vs);
            ev(&mut r, t + 3, Event::START, f, v, ring, vs);
            ev(&mut r, t + 8, Event::END, f, v, ring, vs);
            ev(&mut r, t + 9, Event::SUBMIT, f, p, ring, ps);
            ev(&mut r, t + 10, Event::START, f, p, ring, ps);
            ev(&mut r, t + 15, Event::END, f, p, ring, ps);
        }
        merged_stream(&r.recs)
    };
    let work = |n: u64| {
        let (e, jobs) = run_bytes(build(n), Rules::default());
        assert_eq!(jobs.len() as u64, 2 * n);
        assert!(jobs
            .iter()
            .all(|j| !j.flags.incomplete() && j.key.ring != VCS_VIRTUAL));
        assert_eq!(e.joiner.stats.moved, n);
        assert_eq!(e.joiner.in_flight(), 0);
        e.joiner.stats.ops
    };
    let (a, b) = (work(4_000), work(8_000));
    let growth = b as f64 / a as f64;
    assert!(growth < 2.2, "work {a} -> {b}: x{growth:.2}");
}
