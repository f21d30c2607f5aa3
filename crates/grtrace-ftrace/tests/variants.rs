//! The older layouts of the tracepoints (IMPORT.md §5, the variant table): traces built from
//! the formats of 4.x kernels (fixtures/import/4.*), and layouts no kernel printed, which
//! must be named as not mapped, never read as another layout.

mod common;

use common::{run, Trace};
use grtrace_format::abi::eflag;

const INF: u16 = eflag::INFERRED;

/// An i915 request event of the 4.19 layout (`dev, hw_id, ring, ctx, seqno, global`).
fn i915_419(t: &mut Trace, ts: u64, name: &str, ring: u64, ctx: u64, seqno: u64) {
    let f = [
        ("dev", 0),
        ("hw_id", 48),
        ("ring", ring),
        ("ctx", ctx),
        ("seqno", seqno),
        ("global", 0),
    ];
    t.ev(0, ts, 100, name, &f, &[]);
}

#[test]
fn i915_before_the_uabi_engine_puts_each_engine_id_on_its_own_ring() {
    let mut t = Trace::new("4.19");
    // render (id 0) and video (id 2) requests interleave; each engine runs its own
    i915_419(&mut t, 1000, "i915_request_add", 0, 107, 1);
    i915_419(&mut t, 1100, "i915_request_add", 2, 108, 1);
    i915_419(&mut t, 1200, "i915_request_add", 0, 107, 2);
    // the signals' driver and timeline strings empty, as before: the ring comes from the
    // request events alone
    t.signaled(1, 3000, (108, 1), ("", ""));
    t.signaled(1, 5000, (107, 1), ("", ""));
    t.signaled(1, 7000, (107, 2), ("", ""));
    let (c, m) = run(&t);
    assert_eq!(
        c.rings(),
        [
            (0, "card0/engine0".to_string()),
            (1, "card0/engine2".to_string())
        ]
    );
    let starts_ends: Vec<_> = c
        .events()
        .into_iter()
        .filter(|e| e.0 == "START" || e.0 == "END")
        .map(|e| (e.0, e.1, e.2))
        .collect();
    assert_eq!(
        starts_ends,
        [
            ("START".into(), 1000, (107, 0, 1)),
            // the video request starts at once: its engine is idle
            ("START".into(), 1100, (108, 1, 1)),
            ("END".into(), 3000, (108, 1, 1)),
            ("END".into(), 5000, (107, 0, 1)),
            // the second render request waits for the first, not for the video one
            ("START".into(), 5000, (107, 0, 2)),
            ("END".into(), 7000, (107, 0, 2)),
        ]
    );
    let add = m
        .seen()
        .iter()
        .find(|s| s.name == "i915_request_add")
        .unwrap();
    assert_eq!((add.count, add.unusable.as_deref()), (3, None));
}

#[test]
fn i915_gem_request_of_4_14_is_mapped_by_engine_id() {
    let mut t = Trace::new("4.14");
    let f = |ring, seqno| {
        [
            ("dev", 1),
            ("ctx", 9),
            ("ring", ring),
            ("seqno", seqno),
            ("global", 0),
        ]
    };
    t.ev(0, 1000, 100, "i915_gem_request_add", &f(1, 4), &[]);
    t.ev(0, 4000, 100, "i915_gem_request_retire", &f(1, 4), &[]);
    let (c, m) = run(&t);
    assert_eq!(c.rings(), [(0, "card1/engine1".to_string())]);
    assert_eq!(c.codes(), ["QUEUE", "COMMIT", "SUBMIT", "START", "END"]);
    assert!(c.events().iter().all(|e| e.2 == (9, 0, 4)));
    assert_eq!(m.stats.retire_ends, 1);
}

#[test]
fn an_i915_layout_no_kernel_printed_is_named_not_mapped_never_put_on_ring_0() {
    let mut t = Trace::new("4.19");
    // a layout with neither `engine` nor `ring`: its engine cannot be formed
    t.edit_format("i915_request_add", "field:u32 ring;", "field:u32 other;");
    for s in 1..=545 {
        t.ev(
            0,
            1000 + s,
            100,
            "i915_request_add",
            &[("dev", 0), ("ctx", 1), ("seqno", s)],
            &[],
        );
    }
    let (c, m) = run(&t);
    assert!(c.events().is_empty() && c.rings().is_empty());
    let add = m
        .seen()
        .iter()
        .find(|s| s.name == "i915_request_add")
        .unwrap();
    assert_eq!(add.count, 545);
    assert_eq!(
        add.unusable.as_deref(),
        Some("format with fields dev, hw_id, other, ctx, seqno, global is not known")
    );
}

fn amdgpu_419(t: &mut Trace, cpu: u32, ts: u64, name: &str, ring: &str, ctx: u64, seqno: u64) {
    t.ev(
        cpu,
        ts,
        100,
        name,
        &[
            ("sched_job_id", seqno + 100),
            ("context", ctx),
            ("seqno", seqno),
            ("ring_name", 0xffff_94d0_1c20_7bf0),
            ("num_ibs", 1),
        ],
        &[("timeline", ring)],
    );
}

#[test]
fn amdgpu_before_5_x_names_the_ring_by_its_timeline_and_ends_jobs_at_their_fence() {
    let mut t = Trace::new("4.19");
    amdgpu_419(&mut t, 0, 1000, "amdgpu_cs_ioctl", "gfx", 177, 1);
    amdgpu_419(&mut t, 0, 1100, "amdgpu_cs_ioctl", "sdma0", 180, 1);
    amdgpu_419(&mut t, 1, 1500, "amdgpu_sched_run_job", "gfx", 177, 1);
    amdgpu_419(&mut t, 1, 1600, "amdgpu_sched_run_job", "sdma0", 180, 1);
    amdgpu_419(&mut t, 0, 1700, "amdgpu_cs_ioctl", "gfx", 177, 2);
    amdgpu_419(&mut t, 1, 1800, "amdgpu_sched_run_job", "gfx", 177, 2);
    for (ts, ctx, seqno) in [(2500, 180, 1), (4000, 177, 1), (6000, 177, 2)] {
        t.signaled(2, ts, (ctx, seqno), ("drm_sched", "gfx"));
    }
    let (c, m) = run(&t);
    assert_eq!(
        c.rings(),
        [(0, "gfx".to_string()), (1, "sdma0".to_string())]
    );
    let ev = c.events();
    let job = |k: (u32, u32, u64)| -> Vec<(String, u64, u16)> {
        ev.iter()
            .filter(|e| e.2 == k && e.0 != "SIGNAL")
            .map(|e| (e.0.clone(), e.1, e.3 & INF))
            .collect()
    };
    let s = |c: &str, t: u64, f: u16| (c.to_string(), t, f);
    assert_eq!(
        job((177, 0, 2)),
        [
            s("QUEUE", 1700, 0),
            s("COMMIT", 1800, 0),
            s("SUBMIT", 1800, 0),
            // behind job 1 on gfx: it starts when that ends, not when sdma's ends
            s("START", 4000, INF),
            s("END", 6000, 0),
        ]
    );
    assert_eq!(job((180, 1, 1)).last(), Some(&s("END", 2500, 0)));
    assert_eq!(m.stats.jobs_started, 3);
}

#[test]
fn fence_events_before_the_dma_fence_rename_are_read() {
    let mut t = Trace::new("4.9");
    t.fence(0, 1000, 7, "fence_wait_start", (5, 9), ("i915", "rcs0"));
    t.fence(0, 2000, 7, "fence_signaled", (5, 9), ("i915", "rcs0"));
    let (c, _) = run(&t);
    assert_eq!(c.codes(), ["WAIT", "SIGNAL"]);
    assert!(c.events().iter().all(|e| e.4 .0 == 5 && e.4 .1 == 9));
}
