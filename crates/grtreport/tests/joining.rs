//! What real traces do to the joiner: missing events, wrap-around, batched SUBMITs, losses,
//! clock skew across CPUs, unnamed IRQs, and bounded memory on long runs.

mod common;

use common::*;
use grtrace_format::abi::{eflag, lost_source};
use grtrace_format::{Body, Event, Lost};
use grtreport::{Flags, Job, Rules, Tags};

/// One healthy job's events; `skip` names codes to leave out.
#[allow(clippy::too_many_arguments)]
fn job(
    r: &mut Rec,
    ctx: u32,
    ring: u32,
    seq: u64,
    t: u64,
    run: u64,
    skip: &[Event],
    irq_seqno: u64,
) {
    let all = [
        (Event::COMMIT, t),
        (Event::SUBMIT, t + 10 * US),
        (Event::START, t + 30 * US),
        (Event::END, t + 30 * US + run),
        (Event::IRQ, t + 40 * US + run),
        (Event::SIGNAL, t + 41 * US + run),
    ];
    for (code, at) in all {
        if skip.contains(&code) {
            continue;
        }
        let (cpu, pid) = if matches!(code, Event::END | Event::IRQ | Event::SIGNAL) {
            (1, 0)
        } else {
            (0, 100 + ctx)
        };
        let s = if code == Event::IRQ { irq_seqno } else { seq };
        let a0 = if code == Event::IRQ { irq_seqno } else { 0 };
        let job = Ev::of_job(ctx, ring, s).on(cpu, pid).flags(eflag::FENCED);
        r.add(job.at(code, at).args(a0, 0, 1));
    }
}

fn find(jobs: &[Job], seq: u64) -> &Job {
    jobs.iter().find(|j| j.key.seqno == seq).expect("job")
}

#[test]
fn missing_irq_uses_end_and_missing_start_is_inferred() {
    let mut r = Rec::with_gfx();
    job(&mut r, 1, 0, 1, T0 + MS, 100 * US, &[], 1);
    job(&mut r, 1, 0, 2, T0 + 2 * MS, 100 * US, &[Event::IRQ], 2);
    // Submitted while job 4 still runs: its START is missing, so it is taken as job 4's END.
    job(&mut r, 1, 0, 4, T0 + 3 * MS, 500 * US, &[], 4);
    job(
        &mut r,
        1,
        0,
        5,
        T0 + 3 * MS + 100 * US,
        500 * US,
        &[Event::START],
        5,
    );
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 4);
    let j2 = find(&jobs, 2);
    assert!(
        j2.flags.has(Flags::NO_IRQ) && !j2.flags.incomplete(),
        "{j2:?}"
    );
    // No IRQ: completes at its fence SIGNAL (1 us after where IRQ would be... here END + 11 us).
    assert_eq!(j2.phases.total, 141 * US);
    let j5 = find(&jobs, 5);
    assert!(j5.flags.has(Flags::INFERRED));
    assert_eq!(
        j5.start,
        T0 + 3 * MS + 530 * US,
        "max(SUBMIT, previous END)"
    );
    assert_eq!(j5.phases.queue, 530 * US - 110 * US);
}

#[test]
fn one_submit_makes_several_jobs_visible() {
    let mut r = Rec::default();
    r.ring(T0, 3, 256, b"ctrlq");
    // Committed by thread 7, the ring 10 units fuller each time.
    let host = |s| Ev::of_job(9, 3, s).on(0, 7).flags(1);
    for s in 1..=3u64 {
        let fill = 10 * s as u32;
        r.add(host(s).at(Event::COMMIT, T0 + s * US).args(0, fill, 0));
    }
    r.add(host(3).at(Event::SUBMIT, T0 + 20 * US).args(0, 30, 3));
    for s in 1..=3u64 {
        let (st, gpu) = (T0 + 100 * US * s, Ev::of_job(9, 3, s).flags(1));
        r.add(gpu.at(Event::START, st));
        r.add(gpu.on(1, 0).at(Event::END, st + 90 * US));
        // The IRQ names no context.
        let irq = Ev::of_job(0, 3, s).on(1, 0);
        r.add(irq.at(Event::IRQ, st + 95 * US).args(s, 0, 0));
    }
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 3);
    for j in &jobs {
        assert_eq!(j.submit, T0 + 20 * US, "seqno {}", j.key.seqno);
        assert_eq!(j.batch, 3);
        assert_eq!(j.outstanding, 3);
        assert!(!j.flags.incomplete(), "{j:?}");
        assert!(
            j.phases.complete == 5 * US,
            "IRQ with ctx 0 matched by ring and seqno"
        );
    }
}

#[test]
fn seqno_wraps_around() {
    let mut r = Rec::with_gfx();
    let seqs = [0xffff_fffe_u64, 0xffff_ffff, 0, 1];
    let job = |s| Ev::of_job(2, 0, s).flags(1);
    let host = |s| job(s).on(0, 5);
    for (i, &s) in seqs.iter().enumerate() {
        r.add(host(s).at(Event::COMMIT, T0 + i as u64 * US));
    }
    // One doorbell for everything up to seqno 1, across the wrap.
    r.add(host(1).at(Event::SUBMIT, T0 + 10 * US).args(0, 0, 4));
    for (i, &s) in seqs.iter().enumerate() {
        let st = T0 + 20 * US + i as u64 * 50 * US;
        r.add(job(s).at(Event::START, st));
        r.add(job(s).on(1, 0).at(Event::END, st + 40 * US));
        let irq = Ev::of_job(2, 0, s).on(1, 0);
        r.add(irq.at(Event::IRQ, st + 45 * US).args(s, 0, 0));
    }
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 4);
    for j in &jobs {
        assert_eq!(j.submit, T0 + 10 * US, "{j:?}");
        assert!(!j.flags.incomplete());
    }
}

#[test]
fn jobs_across_lost_records_are_incomplete_not_wrong() {
    let mut r = Rec::with_gfx();
    job(&mut r, 1, 0, 1, T0 + MS, 100 * US, &[], 1);
    // Job 2 loses its END to a relay overflow; job 3 starts after the loss.
    job(&mut r, 1, 0, 2, T0 + 2 * MS, 100 * US, &[Event::END], 2);
    r.push(
        1,
        0,
        T0 + 2 * MS + 120 * US,
        Body::Lost(Lost {
            cpu: 1,
            source: lost_source::KERNEL,
            count: 1,
            first_ns: T0 + 2 * MS + 100 * US,
            last_ns: T0 + 2 * MS + 120 * US,
        }),
    );
    job(&mut r, 1, 0, 3, T0 + 3 * MS, 100 * US, &[], 3);
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 3);
    assert!(!find(&jobs, 1).flags.incomplete());
    let j2 = find(&jobs, 2);
    assert!(j2.flags.incomplete() && j2.flags.has(Flags::LOST), "{j2:?}");
    assert!(j2.tags.is_empty());
    assert!(!find(&jobs, 3).flags.incomplete());
    assert_eq!(e.summary.all.incomplete, 1);
    assert_eq!(e.summary.all.complete, 2);
    assert_eq!(e.joiner.stats.lost_records, 1);
}

/// A kernel recording whose first loss comes after a job's END and before its IRQ (the
/// first IRQ of the recording): the job is not taken as finished at the loss (only an
/// import, which has no IRQs, is), so its IRQ still finds it instead of being an orphan.
#[test]
fn a_loss_before_the_first_irq_of_a_kernel_recording_finishes_no_job() {
    let mut r = Rec::with_gfx();
    job(
        &mut r,
        1,
        0,
        1,
        T0 + MS,
        100 * US,
        &[Event::IRQ, Event::SIGNAL],
        1,
    );
    r.push(
        1,
        0,
        T0 + MS + 135 * US,
        Body::Lost(Lost {
            cpu: 1,
            source: lost_source::KERNEL,
            count: 2,
            first_ns: T0 + MS + 132 * US,
            last_ns: T0 + MS + 135 * US,
        }),
    );
    let gpu = Ev::of_job(1, 0, 1).on(1, 0).flags(eflag::FENCED);
    r.add(gpu.at(Event::IRQ, T0 + MS + 140 * US).args(1, 0, 1));
    r.add(gpu.at(Event::SIGNAL, T0 + MS + 141 * US).args(0, 0, 1));
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 1);
    assert_eq!(e.joiner.stats.irq_orphan, 0);
    assert_eq!(jobs[0].done, T0 + MS + 140 * US, "{:?}", jobs[0]);
    // Jobs in flight across a loss may have lost events: marked, not guessed at.
    assert!(jobs[0].flags.has(Flags::LOST), "{:?}", jobs[0]);
}

#[test]
fn irq_before_end_from_skewed_cpu_clock_and_unnamed_irq() {
    let mut r = Rec::with_gfx();
    // IRQ stamped 2 us before END (another CPU's clock): the job completes at END, never
    // before it. The IRQ names the job only by the hardware seqno it read (arg0).
    let job = |s| Ev::of_job(1, 0, s).flags(1);
    let host = |s| job(s).on(0, 9);
    let irq = |ctx, s| Ev::of_job(ctx, 0, s).on(1, 0);
    r.add(host(1).at(Event::COMMIT, T0));
    r.add(host(1).at(Event::SUBMIT, T0 + 10 * US).args(0, 0, 1));
    r.add(job(1).at(Event::START, T0 + 20 * US));
    r.add(irq(1, 0).at(Event::IRQ, T0 + 98 * US).args(1, 0, 0));
    r.add(job(1).at(Event::END, T0 + 100 * US));
    r.add(job(1).on(1, 0).at(Event::SIGNAL, T0 + 103 * US));
    // Unnamed IRQ (seqno 0): the job completes at its SIGNAL.
    r.add(host(2).at(Event::COMMIT, T0 + MS));
    r.add(host(2).at(Event::SUBMIT, T0 + MS + 10 * US).args(0, 0, 1));
    r.add(job(2).at(Event::START, T0 + MS + 20 * US));
    r.add(job(2).on(1, 0).at(Event::END, T0 + MS + 100 * US));
    r.add(irq(0, 0).at(Event::IRQ, T0 + MS + 104 * US));
    r.add(job(2).on(1, 0).at(Event::SIGNAL, T0 + MS + 106 * US));
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 2);
    let j1 = find(&jobs, 1);
    assert_eq!((j1.phases.total, j1.phases.complete), (100 * US, 0));
    assert!(!j1.flags.has(Flags::NO_IRQ));
    assert_eq!(find(&jobs, 2).phases.total, 106 * US);
    assert_eq!(find(&jobs, 2).phases.complete, 6 * US);
    assert_eq!(e.joiner.stats.irq_unnamed, 1);
}

#[test]
fn memory_is_bounded_by_jobs_in_flight() {
    let sc = grtrace_sim::scenarios::by_name("report-mixed", 3, 20_000).unwrap();
    let (e, jobs) = run_bytes(scenario_stream(&sc.records), Rules::default());
    assert_eq!(jobs.len(), 20_000);
    // Bursts of six plus a few in completion: never the whole trace.
    assert!(
        e.joiner.stats.max_in_flight < 32,
        "{}",
        e.joiner.stats.max_in_flight
    );
    assert_eq!(e.joiner.in_flight(), 0);
    assert!(jobs.iter().any(|j| j.tags.has(Tags::QUEUE_WAIT)));
}

#[test]
fn commits_out_of_seqno_order_are_still_submitted() {
    // Two submitters on different CPUs: seqno 8 is committed a few ns after seqno 9.
    let mut r = Rec::with_gfx();
    let nine = Ev::of_job(2, 0, 9).on(1, 201);
    let eight = Ev::of_job(1, 0, 8).on(0, 101);
    r.add(nine.flags(1).at(Event::COMMIT, T0 + 100));
    r.add(eight.flags(1).at(Event::COMMIT, T0 + 150));
    r.add(eight.flags(1).at(Event::SUBMIT, T0 + 10 * US).args(0, 0, 1));
    r.add(nine.flags(1).at(Event::SUBMIT, T0 + 12 * US).args(0, 0, 1));
    for (ctx, s, st) in [(1, 8u64, 20 * US), (2, 9, 60 * US)] {
        let gpu = Ev::of_job(ctx, 0, s);
        r.add(gpu.flags(1).at(Event::START, T0 + st));
        r.add(gpu.on(1, 0).flags(1).at(Event::END, T0 + st + 30 * US));
        r.add(gpu.on(1, 0).at(Event::IRQ, T0 + st + 35 * US).args(s, 0, 0));
    }
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|j| !j.flags.incomplete()), "{jobs:#?}");
    assert_eq!(find(&jobs, 8).submit, T0 + 10 * US);
    assert_eq!(find(&jobs, 9).submit, T0 + 12 * US);
}

#[test]
fn an_empty_doorbell_after_a_racing_submit_is_not_a_job() {
    // Seen on virtio-gpu under virgl: CPU 1 rings the doorbell for seqno 216 (committed by ctx 2
    // on CPU 0) a few µs before CPU 0 rings it again with nothing new. The second SUBMIT names
    // the ring's write pointer with ctx 0 and "0 jobs made visible"; it must not become a job.
    let mut r = Rec::default();
    r.ring(T0, 0, 64, b"ctrlq");
    let job = Ev::of_job(2, 0, 216);
    r.add(job.on(0, 82).at(Event::COMMIT, T0 + 100).args(216, 4, 0));
    for (cpu, pid, t, made_visible) in [(1, 52, 4_000, 4), (0, 82, 6_500, 0)] {
        let doorbell = Ev::of_job(0, 0, 216)
            .on(cpu, pid)
            .args(216, 4, made_visible);
        r.add(doorbell.at(Event::SUBMIT, T0 + t));
    }
    r.add(job.on(1, 52).at(Event::END, T0 + 300 * US));
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    let j = &jobs[0];
    assert_eq!((j.key.ctx, j.key.seqno), (2, 216));
    assert!(!j.flags.incomplete(), "{j:#?}");
    assert_eq!(j.submit, T0 + 4_000);
}

/// A virtio control queue drained by the host before the guest's notify: jobs 120-122
/// committed (the first with its own doorbell when `early_doorbell`), all three ended at
/// +9.7 ms (after a START each with `starts`), one late doorbell at +16.8 ms making the jobs
/// without a doorbell visible. The finished jobs.
fn virtio_drain(early_doorbell: bool, starts: bool) -> Vec<Job> {
    let mut r = Rec::default();
    r.ring(T0, 0, 64, b"ctrlq");
    let ms = 1_000 * US;
    // The guest's thread 85 on CPU 0; the host's answers on CPU 1 (thread 36).
    let guest = |s| Ev::of_job(0, 0, s).on(0, 85);
    let host = |s| Ev::of_job(0, 0, s).on(1, 36);
    r.add(guest(120).at(Event::COMMIT, T0).args(120, 2, 0));
    if early_doorbell {
        r.add(guest(120).at(Event::SUBMIT, T0 + 10).args(120, 2, 1));
    }
    r.add(guest(121).at(Event::COMMIT, T0 + ms).args(121, 3, 0));
    r.add(guest(122).at(Event::COMMIT, T0 + ms + 60).args(122, 4, 0));
    for (i, seqno) in [120u64, 121, 122].into_iter().enumerate() {
        let mut t = T0 + 9 * ms + 700 * US + i as u64 * 10;
        if starts {
            r.add(host(seqno).at(Event::START, t));
            t += 5;
        }
        r.add(host(seqno).at(Event::END, t));
    }
    let visible = if early_doorbell { 2 } else { 3 };
    let t = T0 + 16 * ms + 800 * US;
    r.add(guest(122).at(Event::SUBMIT, t).args(122, 0, visible));
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    jobs
}

#[test]
fn jobs_the_gpu_took_before_their_doorbell_are_complete_and_the_late_doorbell_invents_none() {
    // Seen on the lockdep+KASAN kernel: virtio publishes a command in the avail ring at COMMIT
    // and the host drained 121 and 122 (END at +9.7 ms) before the guest's notify was traced
    // (+16.8 ms, past the 5 ms IRQ grace: both were already finished) with "2 jobs made
    // visible". Neither job is incomplete, and the late doorbell names no new job 122.
    let jobs = virtio_drain(true, false);
    let seqnos: Vec<u64> = jobs.iter().map(|j| j.key.seqno).collect();
    assert_eq!(jobs.len(), 3, "no phantom job: {seqnos:?} {jobs:#?}");
    for seqno in [121, 122] {
        let j = find(&jobs, seqno);
        assert!(!j.flags.incomplete(), "{j:#?}");
        assert!(j.flags.to_string().contains("no-doorbell"), "{}", j.flags);
        // Visible to the device from its COMMIT: no host-submit time is invented.
        assert_eq!(j.submit, j.commit, "{j:#?}");
    }
    assert!(!find(&jobs, 120).flags.to_string().contains("no-doorbell"));
}

/// The virtio drain above, with the doorbell of job 120 left out: every job ends (and leaves
/// the joiner) before the stream's first SUBMIT, so whether SUBMITs are recorded is not known
/// yet when they finish. They are still no-doorbell jobs with the same phases as when a
/// SUBMIT came first (not no-submit, incomplete), and the late doorbell invents no job.
#[test]
fn no_doorbell_does_not_depend_on_where_the_first_submit_falls() {
    let late = virtio_drain(false, true);
    let seqnos: Vec<u64> = late.iter().map(|j| j.key.seqno).collect();
    assert_eq!(late.len(), 3, "no phantom job: {seqnos:?} {late:#?}");
    let early = virtio_drain(true, true);
    for seqno in [120, 121, 122] {
        let j = find(&late, seqno);
        assert!(!j.flags.incomplete(), "{j:#?}");
        assert!(j.flags.has(Flags::NO_DOORBELL), "{}", j.flags);
        assert_eq!(j.submit, j.commit, "{j:#?}");
        assert!(
            j.measured(0) && j.measured(1),
            "submit_host and queue measured: {j:#?}"
        );
        if seqno != 120 {
            // The same job as when a SUBMIT came first: same flags, same phases.
            let e = find(&early, seqno);
            assert_eq!(j.flags, e.flags);
            assert_eq!(j.phases, e.phases);
            assert_eq!(j.measured, e.measured);
        }
    }
}

/// FORMAT.md §4.2: a START with the `INFERRED` event flag (every imported START; the i915
/// probes' START of a request behind another) is the writer's inference: the job is
/// counted and flagged inferred, a recorded START still replaces it, and neither another
/// inferred START nor one after a preemption does. queue-wait and exec-tail do not judge
/// such a job (JOBS.md §5), though its split would call it queued for 5 ms behind a busy
/// ring; a job with a recorded START and the same times is tagged.
#[test]
fn a_start_the_kernel_or_an_importer_inferred_is_flagged_and_not_judged_on() {
    let mut r = Rec::default();
    r.ring(T0, 0, 1 << 20, b"rcs0");
    let f = eflag::FENCED;
    let inf = eflag::INFERRED;
    let mut job = |ctx: u32, seq: u64, t: u64, starts: &[(u64, u16)], end: u64| {
        let host = Ev::of_job(ctx, 0, seq).on(0, 100).flags(f);
        r.add(host.at(Event::COMMIT, t));
        r.add(host.at(Event::SUBMIT, t + 10 * US).args(0, 0, 1));
        for (at, fl) in starts {
            r.add(host.flags(f | fl).at(Event::START, *at));
        }
        r.add(host.on(1, 0).at(Event::END, end));
    };
    // A long job ahead keeps the ring busy; the jobs behind it queue ~5 ms.
    job(9, 1, T0, &[(T0 + 20 * US, 0)], T0 + 6 * MS);
    let t = T0 + MS;
    // Inferred at the END ahead (as an importer does).
    job(1, 1, t, &[(T0 + 6 * MS, inf)], T0 + 7 * MS);
    // The same with a recorded START: judged, queue-wait.
    job(2, 1, t, &[(T0 + 6 * MS, 0)], T0 + 7 * MS);
    // Inferred, then the recorded START (the hardware's report, later): the recorded one.
    job(
        3,
        1,
        t,
        &[(T0 + 6 * MS, inf), (T0 + 6 * MS + 5 * US, 0)],
        T0 + 7 * MS,
    );
    // Recorded, then an inferred one: the recorded one stays.
    job(
        4,
        1,
        t,
        &[(T0 + 6 * MS, 0), (T0 + 6 * MS + 5 * US, inf)],
        T0 + 7 * MS,
    );
    // Inferred, then another inferred one: the first stays (not moved by a second guess).
    job(
        5,
        1,
        t,
        &[(T0 + 6 * MS, inf), (T0 + 6 * MS + 5 * US, inf)],
        T0 + 7 * MS,
    );
    let (e, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    let by_ctx = |c: u32| jobs.iter().find(|j| j.key.ctx == c).unwrap();
    let j1 = by_ctx(1);
    assert!(j1.flags.has(Flags::INFERRED) && !j1.flags.incomplete());
    assert_eq!(j1.phases.queue, 5 * MS - 10 * US);
    assert!(!j1.tags.has(Tags::QUEUE_WAIT), "{:?}", j1.tags);
    let j2 = by_ctx(2);
    assert!(!j2.flags.has(Flags::INFERRED));
    assert!(j2.tags.has(Tags::QUEUE_WAIT), "{:?}", j2.tags);
    let j3 = by_ctx(3);
    assert!(!j3.flags.has(Flags::INFERRED));
    assert_eq!(j3.start, T0 + 6 * MS + 5 * US);
    let j4 = by_ctx(4);
    assert!(!j4.flags.has(Flags::INFERRED));
    assert_eq!(j4.start, T0 + 6 * MS);
    let j5 = by_ctx(5);
    assert!(j5.flags.has(Flags::INFERRED) && !j5.flags.incomplete());
    assert_eq!(j5.start, T0 + 6 * MS);
    assert_eq!(e.summary.all.inferred, 2);
    let mut text = Vec::new();
    grtreport::output::write_report(&mut text, &e, 0, &[]).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("6 complete, 0 incomplete, 2 with inferred START"),
        "{text}"
    );
    assert!(
        text.contains("2 of 6 complete job(s) have an inferred START"),
        "{text}"
    );
    // queue-wait is a share of the 4 jobs judged on it.
    let overall = line_after(&text, "Blocking Classes", "Overall");
    assert!(overall.contains("3 (75.00%)"), "{overall}");
}

/// A preempted job that comes back: its second START is the resumption, even when the first
/// was inferred (the preempted time is counted, the start kept).
#[test]
fn an_inferred_start_is_not_replaced_by_the_resumption_after_a_preemption() {
    let mut r = Rec::default();
    r.ring(T0, 0, 1 << 20, b"rcs0");
    let f = eflag::FENCED;
    let (host, gpu) = (Ev::of_job(1, 0, 1).on(0, 100), Ev::of_job(1, 0, 1).on(1, 0));
    r.add(host.flags(f).at(Event::COMMIT, T0));
    r.add(host.flags(f).at(Event::SUBMIT, T0 + 10 * US).args(0, 0, 1));
    let inferred = host.flags(f | eflag::INFERRED);
    r.add(inferred.at(Event::START, T0 + 20 * US));
    r.add(gpu.flags(f | eflag::PREEMPT).at(Event::END, T0 + MS));
    r.add(host.flags(f).at(Event::START, T0 + 3 * MS));
    r.add(gpu.flags(f).at(Event::END, T0 + 4 * MS));
    let (_, jobs) = run_bytes(merged_stream(&r.recs), Rules::default());
    let j = &jobs[0];
    assert_eq!(j.start, T0 + 20 * US);
    assert_eq!(j.preempted, 2 * MS);
    assert!(j.flags.has(Flags::INFERRED));
}
