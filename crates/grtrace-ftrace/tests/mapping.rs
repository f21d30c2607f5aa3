//! One test per row of IMPORT.md: traces built from the kernels' own event formats
//! (fixtures/import/<kernel>), written as trace.dat, imported, and the grtrace records
//! checked.

#![allow(clippy::too_many_arguments)] // event builders take the tracepoints' fields

mod common;

use common::{run, Collect, Out, Trace};
use grtrace_format::abi::{eflag, ring_flag};
use grtrace_ftrace::map::NO_RING;

const ENT_A: u64 = 0xffff_8881_0a00_1000;
const ENT_B: u64 = 0xffff_8881_0a00_2000;
const F1: u64 = 0xffff_8881_0b00_0040;
const F2: u64 = 0xffff_8881_0b00_0080;
const INF: u16 = eflag::INFERRED;

fn sched612(
    t: &mut Trace,
    cpu: u32,
    ts: u64,
    name: &str,
    entity: u64,
    fence: u64,
    id: u64,
    ring: &str,
) {
    t.ev(
        cpu,
        ts,
        100,
        name,
        &[
            ("entity", entity),
            ("fence", fence),
            ("id", id),
            ("job_count", 2),
            ("hw_job_count", 1),
        ],
        &[("name", ring)],
    );
}

#[test]
fn sched_612_job_becomes_queue_commit_submit_start_end_keyed_by_entity_and_job_id() {
    let mut t = Trace::new("6.12");
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 7, "gfx_0.0.0");
    sched612(&mut t, 1, 1500, "drm_run_job", ENT_A, F1, 7, "gfx_0.0.0");
    t.ev(0, 4000, 0, "drm_sched_process_job", &[("fence", F1)], &[]);
    let (c, _) = run(&t);
    assert_eq!(c.rings(), [(0, "gfx_0.0.0".to_string())]);
    let ev = c.events();
    let key = (1, 0, 7);
    assert_eq!(c.codes(), ["QUEUE", "COMMIT", "SUBMIT", "START", "END"]);
    assert!(ev.iter().all(|e| e.2 == key), "{ev:?}");
    // queue depth = job_count + 1, credits = hw_job_count
    assert_eq!((ev[0].1, ev[0].4 .2, ev[0].4 .3), (1000, 3, 1));
    assert_eq!((ev[1].1, ev[2].1, ev[2].4 .3), (1500, 1500, 1));
    assert_eq!((ev[3].1, ev[3].3), (1500, INF));
    assert_eq!((ev[4].1, ev[4].3 & INF), (4000, 0));
}

#[test]
fn a_hostile_job_count_saturates_the_queue_depth_instead_of_wrapping_it() {
    let mut t = Trace::new("6.12");
    let fields = [
        ("entity", ENT_A),
        ("fence", F1),
        ("id", 7),
        ("job_count", u32::MAX as u64),
        ("hw_job_count", 1),
    ];
    t.ev(
        0,
        1000,
        100,
        "drm_sched_job",
        &fields,
        &[("name", "gfx_0.0.0")],
    );
    let (c, _) = run(&t);
    let ev = c.events();
    assert_eq!(ev[0].0, "QUEUE");
    assert_eq!(ev[0].4 .2, u32::MAX, "the depth, not 0: {ev:?}");
}

#[test]
fn inferred_start_is_max_of_hand_off_and_previous_done_on_the_same_ring() {
    let mut t = Trace::new("6.12");
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 1, "gfx_0.0.0");
    sched612(&mut t, 0, 1100, "drm_sched_job", ENT_B, F2, 2, "gfx_0.0.0");
    sched612(&mut t, 0, 1200, "drm_run_job", ENT_A, F1, 1, "gfx_0.0.0");
    sched612(&mut t, 0, 1300, "drm_run_job", ENT_B, F2, 2, "gfx_0.0.0");
    t.ev(1, 5000, 0, "drm_sched_process_job", &[("fence", F1)], &[]);
    t.ev(1, 9000, 0, "drm_sched_process_job", &[("fence", F2)], &[]);
    let (c, m) = run(&t);
    let starts: Vec<_> = c
        .events()
        .into_iter()
        .filter(|e| e.0 == "START")
        .map(|e| (e.2 .2, e.1, e.3))
        .collect();
    // job 1: ring idle at hand-off -> 1200; job 2 waits for job 1's done at 5000.
    assert_eq!(starts, [(1, 1200, INF), (2, 5000, INF)]);
    assert_eq!(m.stats.inferred_starts, 2);
    // two entities -> two contexts
    let ctxs: Vec<u32> = c
        .events()
        .iter()
        .filter(|e| e.0 == "END")
        .map(|e| e.2 .0)
        .collect();
    assert_eq!(ctxs, [1, 2]);
}

#[test]
fn sched_612_wait_dep_becomes_host_sync_enter_and_exit_on_the_awaited_fence() {
    let mut t = Trace::new("6.12");
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 9, "comp_1.0.0");
    t.ev(
        0,
        1100,
        100,
        "drm_sched_job_wait_dep",
        &[
            ("id", 9),
            ("fence", 0xffff_8888_0000_0000),
            ("ctx", 55),
            ("seqno", 12),
        ],
        &[("name", "comp_1.0.0")],
    );
    t.signaled(1, 1700, (55, 12), ("amdgpu", "gfx"));
    sched612(&mut t, 0, 1800, "drm_run_job", ENT_A, F1, 9, "comp_1.0.0");
    let (c, _) = run(&t);
    let ev = c.events();
    let enter = ev.iter().find(|e| e.0 == "SYNC_ENTER").unwrap();
    let exit = ev.iter().find(|e| e.0 == "SYNC_EXIT").unwrap();
    assert_eq!(
        (enter.1, enter.2, enter.3, enter.4 .0, enter.4 .1),
        (1100, (1, 0, 9), eflag::HOST, 55, 12)
    );
    assert_eq!(
        (exit.1, exit.2, exit.4 .0, exit.4 .1),
        (1700, (1, 0, 9), 55, 12)
    );
    // the signal of a fence no job of the trace owns names no ring
    let sig = ev.iter().find(|e| e.0 == "SIGNAL").unwrap();
    assert_eq!((sig.2, sig.4 .0, sig.4 .1), ((0, NO_RING, 0), 55, 12));
}

#[test]
fn sched_612_wait_dep_without_a_signal_ends_at_the_hand_off() {
    let mut t = Trace::new("6.12");
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 9, "gfx");
    t.ev(
        0,
        1100,
        100,
        "drm_sched_job_wait_dep",
        &[("id", 9), ("ctx", 55), ("seqno", 12)],
        &[("name", "gfx")],
    );
    sched612(&mut t, 0, 1800, "drm_run_job", ENT_A, F1, 9, "gfx");
    let (c, _) = run(&t);
    let exit = c.events().into_iter().find(|e| e.0 == "SYNC_EXIT").unwrap();
    assert_eq!((exit.1, exit.2), (1800, (1, 0, 9)));
}

fn sched617(t: &mut Trace, cpu: u32, ts: u64, name: &str, dev: &str, ring: &str, fc: u64, fs: u64) {
    t.ev(
        cpu,
        ts,
        100,
        name,
        &[
            ("fence_context", fc),
            ("fence_seqno", fs),
            ("client_id", 4),
            ("job_count", 0),
            ("hw_job_count", 2),
        ],
        &[("name", ring), ("dev", dev)],
    );
}

#[test]
fn sched_617_jobs_are_named_by_fence_and_devices_stay_apart() {
    let mut t = Trace::new("6.17");
    sched617(
        &mut t,
        0,
        1000,
        "drm_sched_job_queue",
        "0000:01:00.0",
        "gfx_0.0.0",
        40,
        3,
    );
    sched617(
        &mut t,
        0,
        1010,
        "drm_sched_job_queue",
        "0000:02:00.0",
        "gfx_0.0.0",
        80,
        3,
    );
    sched617(
        &mut t,
        0,
        1100,
        "drm_sched_job_run",
        "0000:01:00.0",
        "gfx_0.0.0",
        40,
        3,
    );
    sched617(
        &mut t,
        0,
        1110,
        "drm_sched_job_run",
        "0000:02:00.0",
        "gfx_0.0.0",
        80,
        3,
    );
    t.sched_done(1, 3000, (80, 3));
    t.signaled(1, 3001, (80, 3), ("drm_sched", "x"));
    t.sched_done(1, 4000, (40, 3));
    let (c, _) = run(&t);
    assert_eq!(
        c.rings(),
        [
            (0, "0000:01:00.0/gfx_0.0.0".to_string()),
            (1, "0000:02:00.0/gfx_0.0.0".to_string())
        ]
    );
    let ev = c.events();
    let q = &ev[0];
    assert_eq!(
        (q.0.as_str(), q.2, q.4 .0, q.4 .1),
        ("QUEUE", (40, 0, 3), 40, 4)
    );
    let ends: Vec<_> = ev
        .iter()
        .filter(|e| e.0 == "END")
        .map(|e| (e.2, e.1))
        .collect();
    assert_eq!(ends, [((80, 1, 3), 3000), ((40, 0, 3), 4000)]);
    // dma_fence_signaled of a job's finished fence names the job
    let sig = ev.iter().find(|e| e.0 == "SIGNAL").unwrap();
    assert_eq!(sig.2, (80, 1, 3));
    // each device's ring was idle: both start at their own hand-off
    let starts: Vec<_> = ev
        .iter()
        .filter(|e| e.0 == "START")
        .map(|e| (e.2 .1, e.1))
        .collect();
    assert_eq!(starts, [(0, 1100), (1, 1110)]);
}

#[test]
fn sched_617_unschedulable_is_the_wait_and_add_dep_alone_is_not() {
    let mut t = Trace::new("6.17");
    sched617(&mut t, 0, 1000, "drm_sched_job_queue", "d", "gfx", 40, 3);
    t.ev(
        0,
        1001,
        100,
        "drm_sched_job_add_dep",
        &[
            ("fence_context", 40),
            ("fence_seqno", 3),
            ("ctx", 41),
            ("seqno", 9),
        ],
        &[],
    );
    t.ev(
        0,
        1002,
        100,
        "drm_sched_job_add_dep",
        &[
            ("fence_context", 40),
            ("fence_seqno", 3),
            ("ctx", 42),
            ("seqno", 1),
        ],
        &[],
    );
    t.ev(
        0,
        1200,
        100,
        "drm_sched_job_unschedulable",
        &[
            ("fence_context", 40),
            ("fence_seqno", 3),
            ("ctx", 41),
            ("seqno", 9),
        ],
        &[],
    );
    t.signaled(1, 1500, (41, 9), ("x", "y"));
    sched617(&mut t, 0, 1600, "drm_sched_job_run", "d", "gfx", 40, 3);
    let (c, _) = run(&t);
    let syncs: Vec<_> = c
        .events()
        .into_iter()
        .filter(|e| e.0.starts_with("SYNC"))
        .map(|e| (e.0, e.1, e.2, e.3, e.4 .0, e.4 .1))
        .collect();
    assert_eq!(
        syncs,
        [
            (
                "SYNC_ENTER".to_string(),
                1200,
                (40, 0, 3),
                eflag::HOST,
                41,
                9
            ),
            (
                "SYNC_EXIT".to_string(),
                1500,
                (40, 0, 3),
                eflag::HOST,
                41,
                9
            )
        ]
    );
}

#[test]
fn dma_fence_waits_become_wait_and_wait_end_joined_on_context_and_seqno_only() {
    let mut t = Trace::new("6.17");
    sched617(&mut t, 0, 1000, "drm_sched_job_queue", "d", "gfx", 40, 3);
    // driver and timeline names differ between the events (unreliable on some kernels)
    t.fence(
        1,
        1100,
        300,
        "dma_fence_wait_start",
        (40, 3),
        ("drm_sched", "gfx"),
    );
    t.fence(
        1,
        1900,
        300,
        "dma_fence_wait_end",
        (40, 3),
        ("amdgpu", "unbound"),
    );
    for name in [
        "dma_fence_init",
        "dma_fence_emit",
        "dma_fence_enable_signal",
        "dma_fence_destroy",
    ] {
        t.ev(
            1,
            1950,
            300,
            name,
            &[("context", 40), ("seqno", 3)],
            &[("driver", "x"), ("timeline", "y")],
        );
    }
    let (c, m) = run(&t);
    let w: Vec<_> = c
        .events()
        .into_iter()
        .filter(|e| e.0.starts_with("WAIT"))
        .map(|e| (e.0, e.1, e.2, e.4 .0, e.4 .1))
        .collect();
    assert_eq!(
        w,
        [
            ("WAIT".to_string(), 1100, (40, 0, 3), 40, 3),
            ("WAIT_END".to_string(), 1900, (40, 0, 3), 40, 3)
        ]
    );
    // init / emit / enable_signal / destroy have no grtrace event but are counted
    assert_eq!(c.codes().len(), 3);
    let init = m
        .seen()
        .iter()
        .find(|s| s.name == "dma_fence_init")
        .unwrap();
    assert_eq!(init.count, 1);
}

fn virtio(
    t: &mut Trace,
    cpu: u32,
    ts: u64,
    name: &str,
    vq: u64,
    vqname: &str,
    ctx: u64,
    seqno: u64,
    flags: u64,
    rtype: u64,
) {
    t.ev(
        cpu,
        ts,
        if name.ends_with("queue") { 100 } else { 0 },
        name,
        &[
            ("dev", 0),
            ("vq", vq),
            ("type", rtype),
            ("flags", flags),
            ("fence_id", 5),
            ("ctx_id", ctx),
            ("num_free", 60),
            ("seqno", seqno),
        ],
        &[("name", vqname)],
    );
}

#[test]
fn virtio_control_queue_commands_are_jobs_and_error_responses_are_errors() {
    let mut t = Trace::new("6.12");
    virtio(
        &mut t,
        0,
        1000,
        "virtio_gpu_cmd_queue",
        0,
        "control",
        3,
        10,
        1,
        0x0207,
    );
    virtio(
        &mut t,
        0,
        1100,
        "virtio_gpu_cmd_queue",
        0,
        "control",
        3,
        11,
        0,
        0x0105,
    );
    virtio(
        &mut t,
        0,
        1150,
        "virtio_gpu_cmd_queue",
        1,
        "cursor",
        0,
        1,
        0,
        0x0300,
    );
    // the response header's ctx_id is the host's: the queued command's ctx is used
    virtio(
        &mut t,
        1,
        2000,
        "virtio_gpu_cmd_response",
        0,
        "control",
        0,
        10,
        1,
        0x1100,
    );
    virtio(
        &mut t,
        1,
        2500,
        "virtio_gpu_cmd_response",
        0,
        "control",
        0,
        11,
        0,
        0x1203,
    );
    let (c, _) = run(&t);
    assert_eq!(c.rings(), [(0, "virtio0/control".to_string())]);
    let ev = c.events();
    assert_eq!(
        c.codes(),
        ["COMMIT", "SUBMIT", "START", "COMMIT", "SUBMIT", "END", "START", "END"]
    );
    assert_eq!((ev[0].2, ev[0].3), ((3, 0, 10), eflag::FENCED));
    assert_eq!(
        (ev[5].2, ev[5].3, ev[5].4 .2),
        ((3, 0, 10), eflag::FENCED, 0)
    );
    assert_eq!((ev[6].2, ev[6].1), ((3, 0, 11), 2000));
    assert_eq!(
        (ev[7].2, ev[7].3 & eflag::ERROR, ev[7].4 .2),
        ((3, 0, 11), eflag::ERROR, 5)
    );
    let ring_unit = c.0.iter().find_map(|o| match o {
        Out::Ring { unit, class, .. } => Some((*unit, *class)),
        _ => None,
    });
    assert_eq!(ring_unit, Some((1, 6)));
}

#[test]
fn amdgpu_events_name_jobs_flush_vms_and_report_faults() {
    let mut t = Trace::new("6.12");
    t.ev(
        0,
        900,
        100,
        "amdgpu_cs_ioctl",
        &[
            ("sched_job_id", 7),
            ("context", 33),
            ("seqno", 120),
            ("fence", F1),
            ("num_ibs", 1),
        ],
        &[("ring", "gfx_0.0.0"), ("timeline", "gfx_0.0.0")],
    );
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 7, "gfx_0.0.0");
    sched612(&mut t, 0, 1200, "drm_run_job", ENT_A, F1, 7, "gfx_0.0.0");
    t.ev(
        0,
        1201,
        100,
        "amdgpu_sched_run_job",
        &[("sched_job_id", 7)],
        &[("ring", "gfx_0.0.0")],
    );
    t.ev(
        0,
        1202,
        100,
        "amdgpu_ib_pipe_sync",
        &[("id", 7), ("ctx", 30), ("seqno", 4)],
        &[("ring", "gfx_0.0.0")],
    );
    t.ev(
        0,
        1203,
        100,
        "amdgpu_vm_flush",
        &[("vmid", 3), ("vm_hub", 0), ("pd_addr", 0x1000)],
        &[("ring", "gfx_0.0.0")],
    );
    // SOC15 UTCL2 fault and a non-fault interrupt
    t.ev(
        1,
        1500,
        0,
        "amdgpu_iv",
        &[
            ("client_id", 0x1b),
            ("src_id", 0),
            ("vmid", 3),
            ("pasid", 9),
        ],
        &[],
    );
    t.ev(
        1,
        1600,
        0,
        "amdgpu_iv",
        &[("client_id", 0x1b), ("src_id", 181), ("vmid", 3)],
        &[],
    );
    t.ev(1, 3000, 0, "drm_sched_process_job", &[("fence", F1)], &[]);
    t.signaled(1, 3001, (33, 120), ("drm_sched", "gfx"));
    let (c, _) = run(&t);
    let ev = c.events();
    // the job is named by its finished fence (context 33, seqno 120), as the series does
    assert!(
        ev.iter()
            .filter(|e| ["QUEUE", "START", "END"].contains(&e.0.as_str()))
            .all(|e| e.2 == (33, 0, 120)),
        "{ev:?}"
    );
    let sync = ev.iter().find(|e| e.0 == "SYNC_ENTER").unwrap();
    assert_eq!(
        (sync.2, sync.3, sync.4 .0, sync.4 .1),
        ((33, 0, 120), 0, 30, 4)
    );
    let sw = ev.iter().find(|e| e.0 == "CTX_SWITCH").unwrap();
    assert_eq!(sw.2, (3, 0, 0));
    let faults: Vec<_> = ev.iter().filter(|e| e.0 == "VM_FAULT").collect();
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0].4 .3, (3 << 16) | 9);
    assert_eq!(ev.iter().find(|e| e.0 == "SIGNAL").unwrap().2, (33, 0, 120));
}

#[test]
fn lost_pages_become_note_lost_and_reset_ring_pairing() {
    let mut t = Trace::new("6.12");
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 1, "gfx");
    sched612(&mut t, 0, 1100, "drm_run_job", ENT_A, F1, 1, "gfx");
    sched612(&mut t, 0, 5000, "drm_sched_job", ENT_A, F2, 2, "gfx");
    sched612(&mut t, 0, 5100, "drm_run_job", ENT_A, F2, 2, "gfx");
    t.lost.push((0, 2, grtrace_ftrace::page::Missed::Count(17)));
    t.signaled(1, 100, (1, 1), ("x", "y"));
    t.signaled(1, 200, (1, 2), ("x", "y"));
    t.lost.push((1, 1, grtrace_ftrace::page::Missed::Unknown));
    let (c, m) = run(&t);
    let lost: Vec<_> =
        c.0.iter()
            .filter_map(|o| match o {
                Out::Lost { cpu, count, t } => Some((*cpu, *count, *t)),
                _ => None,
            })
            .collect();
    assert_eq!(lost, [(1, 0, 200), (0, 17, 5000)]);
    assert_eq!((m.stats.lost_events, m.stats.lost_unknown), (17, 1));
    // job 2 starts at its own hand-off: job 1's pairing died with the loss
    let s2 = c
        .events()
        .into_iter()
        .find(|e| e.0 == "START" && e.2 .2 == 2)
        .unwrap();
    assert_eq!(s2.1, 5100);
}

#[test]
fn events_that_are_not_gpu_tracepoints_are_counted_not_mapped() {
    let mut t = Trace::new("6.12");
    t.ev(
        0,
        1000,
        1,
        "sched_switch",
        &[("prev_pid", 1), ("next_pid", 2)],
        &[("prev_comm", "a"), ("next_comm", "b")],
    );
    virtio(
        &mut t,
        0,
        1100,
        "virtio_gpu_cmd_queue",
        0,
        "control",
        3,
        10,
        0,
        0x0207,
    );
    let (c, m) = run(&t);
    assert_eq!(c.codes(), ["COMMIT", "SUBMIT", "START"]);
    let sw = m.seen().iter().find(|s| s.name == "sched_switch").unwrap();
    assert_eq!((sw.count, sw.kind), (1, None));
}

#[test]
fn kernel_pointers_never_reach_a_record() {
    let mut t = Trace::new("6.12");
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 1, "gfx");
    t.ev(
        0,
        1100,
        100,
        "drm_sched_job_wait_dep",
        &[("id", 1), ("fence", F2), ("ctx", 5), ("seqno", 6)],
        &[("name", "gfx")],
    );
    sched612(&mut t, 0, 1200, "drm_run_job", ENT_A, F1, 1, "gfx");
    t.ev(0, 3000, 0, "drm_sched_process_job", &[("fence", F1)], &[]);
    let (c, _) = run(&t);
    for e in c.events() {
        for v in [
            e.2 .0 as u64,
            e.2 .2,
            e.4 .0,
            e.4 .1,
            e.4 .2 as u64,
            e.4 .3 as u64,
        ] {
            assert!(
                v < 0xffff_0000_0000_0000 && v != F1 && v != F2 && v != ENT_A,
                "{e:?}"
            );
        }
    }
}

#[test]
fn a_format_without_a_needed_field_is_reported_not_guessed() {
    let mut t = Trace::new("6.12");
    // a kernel whose drm_run_job lacks `id`
    t.edit_format(
        "drm_run_job",
        "field:uint64_t id;",
        "field:uint64_t other_id;",
    );
    sched612(&mut t, 0, 1000, "drm_run_job", ENT_A, F1, 1, "gfx");
    let (c, m) = run(&t);
    assert!(c.codes().is_empty());
    let s = m.seen().iter().find(|s| s.name == "drm_run_job").unwrap();
    assert_eq!(s.count, 1);
    assert_eq!(
        s.unusable.as_deref(),
        Some("format with fields entity, fence, name, other_id, job_count, hw_job_count is not known"),
        "the format's own fields are named"
    );
}

#[test]
fn lima_task_submit_names_the_scheduler_job_by_its_finished_fence() {
    let mut t = Trace::new("6.12");
    let lima = [("task_id", 5), ("context", 61), ("seqno", 17)];
    t.ev(0, 900, 100, "lima_task_submit", &lima, &[("pipe", "pp")]);
    sched612(&mut t, 0, 1000, "drm_sched_job", ENT_A, F1, 5, "pp");
    sched612(&mut t, 0, 1100, "drm_run_job", ENT_A, F1, 5, "pp");
    t.ev(0, 1101, 100, "lima_task_run", &lima, &[("pipe", "pp")]);
    t.ev(1, 2000, 0, "drm_sched_process_job", &[("fence", F1)], &[]);
    let (c, m) = run(&t);
    assert_eq!(c.codes(), ["QUEUE", "COMMIT", "SUBMIT", "START", "END"]);
    assert!(c.events().iter().all(|e| e.2 == (61, 0, 17)));
    let run = m.seen().iter().find(|s| s.name == "lima_task_run").unwrap();
    assert_eq!(run.count, 1);
}

/// An i915 request event: cpu, time, the event's name after `i915_request_`, dev, engine
/// (class, instance), fence ctx, seqno (which every one carries) and the fields the event
/// adds.
type I915Event<'a> = (
    u32,
    u64,
    &'a str,
    u64,
    (u64, u64),
    u64,
    u64,
    &'a [(&'a str, u64)],
);

/// i915 request events, in the order given: a row a line, so that a test reads as the trace.
fn i915(t: &mut Trace, events: &[I915Event]) {
    for &(cpu, ts, event, dev, engine, ctx, seqno, extra) in events {
        let mut f = vec![
            ("dev", dev),
            ("ctx", ctx),
            ("class", engine.0),
            ("instance", engine.1),
            ("seqno", seqno),
            ("tail", 0x80),
        ];
        f.extend_from_slice(extra);
        t.ev(cpu, ts, 100, &format!("i915_request_{event}"), &f, &[]);
    }
}

const I915_LOW_LEVEL: [&str; 5] = [
    "i915_request_submit",
    "i915_request_execute",
    "i915_request_guc_submit",
    "i915_request_in",
    "i915_request_out",
];

#[test]
fn i915_without_low_level_events_add_is_the_hand_off_and_retire_the_end() {
    let mut t = Trace::new("6.12");
    t.formats
        .retain(|(f, _)| !I915_LOW_LEVEL.contains(&f.name.as_str()));
    let ctx = 0x1_0000_0042; // a fence context: the key keeps its low 32 bits
    i915(
        &mut t,
        &[
            (0, 900, "queue", 0, (0, 0), ctx, 5, &[("flags", 0)]),
            (0, 1000, "add", 0, (0, 0), ctx, 5, &[]),
            (0, 1100, "add", 0, (0, 0), ctx, 6, &[]),
            (1, 1200, "wait_begin", 0, (0, 0), ctx, 6, &[("flags", 0)]),
            (1, 3000, "retire", 0, (0, 0), ctx, 5, &[]),
            (1, 4000, "retire", 0, (0, 0), ctx, 6, &[]),
        ],
    );
    t.signaled(1, 4100, (ctx, 6), ("i915", "rcs0"));
    i915(&mut t, &[(1, 4200, "wait_end", 0, (0, 0), ctx, 6, &[])]);
    let (c, m) = run(&t);
    assert_eq!(c.rings(), [(0, "card0/rcs0".to_string())]);
    let ev = c.events();
    let got: Vec<_> = ev
        .iter()
        .map(|e| (e.0.as_str(), e.1, e.2 .2, e.3))
        .collect();
    assert_eq!(
        got,
        [
            ("QUEUE", 900, 5, 0),
            ("QUEUE", 1000, 5, 0),
            ("COMMIT", 1000, 5, 0),
            ("SUBMIT", 1000, 5, 0),
            ("START", 1000, 5, INF),
            ("QUEUE", 1100, 6, 0),
            ("COMMIT", 1100, 6, 0),
            ("SUBMIT", 1100, 6, 0),
            ("WAIT", 1200, 6, 0),
            ("END", 3000, 5, 0),
            ("START", 3000, 6, INF),
            ("END", 4000, 6, 0),
            ("SIGNAL", 4100, 6, 0),
            ("WAIT_END", 4200, 6, 0),
        ]
    );
    assert!(ev.iter().all(|e| e.2 .0 == 0x42 && e.2 .1 == 0), "{ev:?}");
    assert_eq!((ev[8].4 .0, ev[8].4 .1), (ctx, 6), "WAIT names the fence");
    assert_eq!(m.stats.inferred_starts, 2);
}

#[test]
fn i915_low_level_in_and_out_time_execlists_requests_and_guc_ends_at_retire() {
    let mut t = Trace::new("6.12");
    // execlists on card0 rcs0: preempted once (out with completed?=0, in again)
    i915(
        &mut t,
        &[
            (0, 1000, "add", 0, (0, 0), 7, 1, &[]),
            (0, 1100, "submit", 0, (0, 0), 7, 1, &[]),
            (0, 1150, "execute", 0, (0, 0), 7, 1, &[]),
            (0, 1200, "in", 0, (0, 0), 7, 1, &[("port", 0), ("prio", 0)]),
            (1, 1500, "out", 0, (0, 0), 7, 1, &[("completed", 0)]),
            (1, 1600, "in", 0, (0, 0), 7, 1, &[("port", 0), ("prio", 0)]),
            (1, 2000, "out", 0, (0, 0), 7, 1, &[("completed", 1)]),
            (1, 2500, "retire", 0, (0, 0), 7, 1, &[]),
            // GuC on card1 bcs0: `in` is the hand-off to the firmware, no `out`; retire ends it
            (2, 3000, "add", 1, (1, 0), 9, 1, &[]),
            (2, 3100, "submit", 1, (1, 0), 9, 1, &[]),
            (2, 3200, "in", 1, (1, 0), 9, 1, &[("port", 0), ("prio", 0)]),
            (2, 3210, "guc_submit", 1, (1, 0), 9, 1, &[]),
            (2, 5000, "retire", 1, (1, 0), 9, 1, &[]),
        ],
    );
    let (c, _) = run(&t);
    assert_eq!(
        c.rings(),
        [(0, "card0/rcs0".to_string()), (1, "card1/bcs0".to_string())]
    );
    let per = |ring: u32| -> Vec<(String, u64)> {
        c.events()
            .into_iter()
            .filter(|e| e.2 .1 == ring)
            .map(|e| (e.0, e.1))
            .collect()
    };
    let s = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(a, b)| (a.to_string(), *b)).collect()
    };
    assert_eq!(
        per(0),
        s(&[
            ("QUEUE", 1000),
            ("COMMIT", 1100),
            ("SUBMIT", 1200),
            ("START", 1200),
            ("END", 2000)
        ])
    );
    assert_eq!(
        per(1),
        s(&[
            ("QUEUE", 3000),
            ("COMMIT", 3100),
            ("SUBMIT", 3200),
            ("START", 3200),
            ("END", 5000)
        ])
    );
}

const XE_DEV: &str = "0000:03:00.0";
const HWF1: u64 = 0xffff_8881_2200_0100;
const HWF2: u64 = 0xffff_8881_2200_0200;

fn xe_queue(t: &mut Trace, ts: u64, name: &str, dev: &str, class: u64, guc: u64) {
    t.ev(
        0,
        ts,
        100,
        name,
        &[
            ("class", class),
            ("logical_mask", 1),
            ("gt_id", 0),
            ("width", 1),
            ("guc_id", guc),
        ],
        &[("dev", dev)],
    );
}

fn xe_job(
    t: &mut Trace,
    cpu: u32,
    ts: u64,
    name: &str,
    dev: &str,
    guc: u64,
    seqno: u64,
    fence: u64,
) {
    t.ev(
        cpu,
        ts,
        100,
        name,
        &[
            ("seqno", seqno),
            ("lrc_seqno", seqno),
            ("guc_id", guc),
            ("fence", fence),
            ("batch_addr", 0x1_0000),
        ],
        &[("dev", dev)],
    );
}

fn xe_fence(
    t: &mut Trace,
    cpu: u32,
    ts: u64,
    name: &str,
    dev: &str,
    ctx: u64,
    seqno: u64,
    fence: u64,
) {
    t.ev(
        cpu,
        ts,
        0,
        name,
        &[("ctx", ctx), ("seqno", seqno), ("fence", fence)],
        &[("dev", dev)],
    );
}

#[test]
fn xe_jobs_run_on_per_queue_rings_named_by_their_hardware_fence() {
    let mut t = Trace::new("6.12");
    xe_queue(&mut t, 1000, "xe_exec_queue_create", XE_DEV, 0, 7);
    xe_fence(&mut t, 0, 1100, "xe_hw_fence_create", XE_DEV, 0x55, 3, HWF1);
    xe_job(&mut t, 0, 1200, "xe_sched_job_exec", XE_DEV, 7, 3, HWF1);
    // the DRM scheduler's own events of that queue: the same job, skipped
    sched612(&mut t, 0, 1210, "drm_sched_job", ENT_A, F1, 1, "rcs0");
    sched612(&mut t, 1, 1290, "drm_run_job", ENT_A, F1, 1, "rcs0");
    xe_job(&mut t, 1, 1300, "xe_sched_job_run", XE_DEV, 7, 3, HWF1);
    xe_fence(&mut t, 1, 2000, "xe_hw_fence_signal", XE_DEV, 0x55, 3, HWF1);
    t.signaled(1, 2010, (0x55, 3), ("xe", "rcs0"));
    t.ev(1, 2020, 0, "drm_sched_process_job", &[("fence", F1)], &[]);
    // a second device with the same GuC id: its own ring; its job times out
    xe_queue(&mut t, 3000, "xe_exec_queue_create", "0000:04:00.0", 3, 7);
    xe_fence(
        &mut t,
        0,
        3050,
        "xe_hw_fence_create",
        "0000:04:00.0",
        0x66,
        1,
        HWF2,
    );
    xe_job(
        &mut t,
        0,
        3100,
        "xe_sched_job_exec",
        "0000:04:00.0",
        7,
        1,
        HWF2,
    );
    xe_job(
        &mut t,
        0,
        3200,
        "xe_sched_job_run",
        "0000:04:00.0",
        7,
        1,
        HWF2,
    );
    xe_job(
        &mut t,
        0,
        9000,
        "xe_sched_job_timedout",
        "0000:04:00.0",
        7,
        1,
        HWF2,
    );
    xe_queue(&mut t, 9100, "xe_exec_queue_reset", "0000:04:00.0", 3, 7);
    xe_queue(&mut t, 9200, "xe_exec_queue_destroy", XE_DEV, 0, 7);
    t.ev(
        0,
        9300,
        100,
        "xe_vma_pagefault",
        &[
            ("vma", 0xffff_8881_3300_0000),
            ("asid", 9),
            ("start", 0x7f00_0000),
            ("end", 0x7f00_ffff),
        ],
        &[("dev", XE_DEV)],
    );
    let (c, m) = run(&t);
    assert_eq!(
        c.rings(),
        [
            (0, format!("{XE_DEV}/rcs-q7")),
            (1, "0000:04:00.0/bcs-q7".to_string())
        ]
    );
    assert_eq!(m.stats.sched_duplicates, 2);
    let got: Vec<_> = c
        .events()
        .into_iter()
        .map(|e| (e.0, e.1, e.2, e.3, e.4))
        .collect();
    let job_a = (0x55, 0, 3);
    let job_b = (0x66, 1, 1);
    let ev = |code: &str, t: u64, k: (u32, u32, u64), f: u16, a: (u64, u64, u32, u32)| {
        (code.to_string(), t, k, f, a)
    };
    assert_eq!(
        got,
        [
            ev("CTX_CREATE", 1000, (7, 0, 0), 0, (0, 0, 0, 0)),
            ev("QUEUE", 1200, job_a, 0, (0x55, 0, 0, 0)),
            ev("COMMIT", 1300, job_a, 0, (0, 0, 0, 0)),
            ev("SUBMIT", 1300, job_a, 0, (0, 0, 0, 1)),
            ev("START", 1300, job_a, INF, (0x55, 0, 0, 0)),
            ev("END", 2000, job_a, 0, (0x55, 0, 0, 0)),
            ev("SIGNAL", 2010, job_a, 0, (0x55, 3, 0, 0)),
            ev("CTX_CREATE", 3000, (7, 1, 0), 0, (0, 0, 0, 0)),
            ev("QUEUE", 3100, job_b, 0, (0x66, 0, 0, 0)),
            ev("COMMIT", 3200, job_b, 0, (0, 0, 0, 0)),
            ev("SUBMIT", 3200, job_b, 0, (0, 0, 0, 1)),
            ev("START", 3200, job_b, INF, (0x66, 0, 0, 0)),
            ev("TIMEOUT", 9000, job_b, eflag::ERROR, (0, 0, 62, 0)),
            ev("RESET", 9100, (7, 1, 0), 0, (0, 0, 0, 0)),
            ev("CTX_DESTROY", 9200, (7, 0, 0), 0, (0, 0, 0, 0)),
            ev("VM_FAULT", 9300, (0, NO_RING, 0), 0, (0x7f00_0000, 0, 0, 9)),
        ]
    );
}

#[test]
fn msm_retired_places_the_gpu_start_and_end_through_the_flush_clock_pair() {
    let mut t = Trace::new("6.12");
    let ms = 1_000_000;
    let flush = |t: &mut Trace, cpu, ts, seqno, ticks| {
        t.ev(
            cpu,
            ts,
            300,
            "msm_gpu_submit_flush",
            &[
                ("pid", 300),
                ("id", seqno),
                ("ringid", 0),
                ("seqno", seqno),
                ("ticks", ticks),
            ],
            &[],
        );
    };
    let retired = |t: &mut Trace, cpu, ts, ring, seqno, st: u64, et: u64| {
        let elapsed = (et - st) * 10_000 / 192;
        t.ev(
            cpu,
            ts,
            0,
            "msm_gpu_submit_retired",
            &[
                ("pid", 300),
                ("id", seqno),
                ("ringid", ring),
                ("seqno", seqno),
                ("elapsed", elapsed),
                ("clock", 500),
                ("start_ticks", st),
                ("end_ticks", et),
            ],
            &[],
        );
    };
    // job 11: flushed at 10 ms with the counter at 1_920_000; the GPU ran it from 192 ticks
    // (10 us) to 1920 ticks (100 us) after; retired at 20 ms on an otherwise idle CPU
    flush(&mut t, 0, 10 * ms, 11, 1_920_000);
    sched612(
        &mut t,
        0,
        10 * ms + 1,
        "drm_run_job",
        ENT_A,
        F1,
        11,
        "ring0",
    );
    retired(&mut t, 1, 20 * ms, 0, 11, 1_920_192, 1_921_920);
    // job 12: retired on a CPU that already wrote something later than its GPU start
    flush(&mut t, 0, 30 * ms, 12, 2_112_000);
    t.signaled(2, 35 * ms, (99, 1), ("msm", "x"));
    retired(&mut t, 2, 40 * ms, 0, 12, 2_112_192, 2_188_800);
    // job 5 of ring 1: no flush seen (before the trace): end at the retire, start from elapsed
    retired(&mut t, 3, 50 * ms, 1, 5, 0, 19_200);
    let (c, m) = run(&t);
    assert_eq!(m.stats.sched_duplicates, 1);
    assert_eq!(
        c.rings(),
        [(0, "msm/rb0".to_string()), (1, "msm/rb1".to_string())]
    );
    let se: Vec<_> = c
        .events()
        .into_iter()
        .filter(|e| e.0 == "START" || e.0 == "END")
        .map(|e| (e.0, e.2 .2, e.1, e.3))
        .collect();
    let row = |c: &str, s: u64, t: u64, f: u16| (c.to_string(), s, t, f);
    assert_eq!(
        se,
        [
            row("START", 11, 10 * ms + 10_000, 0),
            row("END", 11, 10 * ms + 100_000, 0),
            // 30 ms + 10 us and 34 ms: both would go back before 35 ms
            row("START", 12, 35 * ms, INF),
            row("END", 12, 35 * ms, INF),
            row("START", 5, 49 * ms, INF),
            row("END", 5, 50 * ms, INF),
        ]
    );
    let syncs = c.0.iter().filter(|o| matches!(o, Out::Other)).count();
    assert_eq!(syncs, 2, "a NOTE_CLOCK_SYNC per flush");
    assert!(
        c.events()
            .iter()
            .filter(|e| e.2 .1 != NO_RING)
            .all(|e| e.2 .0 == 300),
        "ctx = the submitting process"
    );
}

#[test]
fn v3d_queues_are_rings_and_their_interrupts_end_the_jobs() {
    let mut t = Trace::new("6.12");
    let cl = |t: &mut Trace, ts, render, seqno| {
        t.ev(
            0,
            ts,
            100,
            "v3d_submit_cl",
            &[
                ("dev", 0),
                ("is_render", render),
                ("seqno", seqno),
                ("ctnqba", 0x1000),
                ("ctnqea", 0x2000),
            ],
            &[],
        );
    };
    let ev = |t: &mut Trace, ts, name: &str, seqno| {
        t.ev(1, ts, 0, name, &[("dev", 0), ("seqno", seqno)], &[]);
    };
    cl(&mut t, 1000, 0, 1);
    sched612(&mut t, 0, 1001, "drm_run_job", ENT_A, F1, 1, "v3d_bin");
    cl(&mut t, 1100, 1, 2);
    ev(&mut t, 2000, "v3d_bcl_irq", 1);
    ev(&mut t, 3000, "v3d_rcl_irq", 2);
    ev(&mut t, 3100, "v3d_submit_tfu", 3);
    ev(&mut t, 3500, "v3d_tfu_irq", 3);
    ev(&mut t, 3600, "v3d_submit_csd", 4);
    ev(&mut t, 3900, "v3d_csd_irq", 4);
    t.ev(1, 4000, 0, "v3d_reset_begin", &[("dev", 0)], &[]);
    t.ev(1, 4100, 0, "v3d_reset_end", &[("dev", 0)], &[]);
    let (c, m) = run(&t);
    assert_eq!(m.stats.sched_duplicates, 1);
    assert_eq!(
        c.rings(),
        [
            (0, "card0/bin".to_string()),
            (1, "card0/render".to_string()),
            (2, "card0/tfu".to_string()),
            (3, "card0/csd".to_string())
        ]
    );
    let se: Vec<_> = c
        .events()
        .into_iter()
        .filter(|e| matches!(e.0.as_str(), "START" | "END" | "RESET"))
        .map(|e| (e.0, e.2 .1, e.2 .2, e.1))
        .collect();
    let row = |c: &str, r: u32, s: u64, t: u64| (c.to_string(), r, s, t);
    assert_eq!(
        se,
        [
            row("START", 0, 1, 1000),
            row("START", 1, 2, 1100),
            row("END", 0, 1, 2000),
            row("END", 1, 2, 3000),
            row("START", 2, 3, 3100),
            row("END", 2, 3, 3500),
            row("START", 3, 4, 3600),
            row("END", 3, 4, 3900),
            // A device reset: on every queue of the device (its running jobs failed).
            row("RESET", 0, 0, 4000),
            row("RESET", 1, 0, 4000),
            row("RESET", 2, 0, 4000),
            row("RESET", 3, 0, 4000),
        ]
    );
    // Before any queue of the device is known, it names no ring.
    let mut t = Trace::new("6.12");
    t.ev(1, 4000, 0, "v3d_reset_begin", &[("dev", 0)], &[]);
    let (c, _) = run(&t);
    assert_eq!(c.events()[0].2, (0, NO_RING, 0));
}

/// The stream header's `driver` holds 32 bytes: with many driver systems it keeps whole
/// names and says "+more", never a name cut in the middle.
#[test]
fn the_driver_name_fits_the_header_with_whole_names() {
    let all = grtrace_ftrace::fixtures::formats("6.12");
    let d = grtrace_ftrace::Mapper::new(grtrace_format::Endian::NATIVE, &all).drivers();
    assert!(d.len() <= 32 && d.ends_with("+more"), "{d}");
    let known = [
        "virtio_gpu",
        "amdgpu",
        "lima",
        "i915",
        "xe",
        "drm_msm_gpu",
        "v3d",
        "more",
    ];
    assert!(d.split('+').all(|n| known.contains(&n)), "{d}");
    let virtio: Vec<_> = all
        .into_iter()
        .filter(|f| {
            f.system != "amdgpu"
                && f.system != "lima"
                && f.system != "i915"
                && f.system != "xe"
                && f.system != "drm_msm_gpu"
                && f.system != "v3d"
        })
        .collect();
    let d = grtrace_ftrace::Mapper::new(grtrace_format::Endian::NATIVE, &virtio).drivers();
    assert_eq!(d, "virtio_gpu");
}

/// i915's uabi instance of a virtual engine (`I915_ENGINE_CLASS_INVALID_VIRTUAL`, -2, in the
/// tracepoints' u16 field).
const VIRTUAL: u64 = 0xfffe;
const VCS: u64 = 2;

/// (event, time, ring name, ctx, seqno, flags) of every event, for i915's multi-ring tests.
fn named(c: &Collect) -> Vec<(String, u64, String, u64, u64, u16)> {
    let rings = c.rings();
    let name = |id: u32| rings.iter().find(|r| r.0 == id).expect("ring").1.clone();
    c.events()
        .into_iter()
        .map(|e| (e.0, e.1, name(e.2 .1), e.2 .0 as u64, e.2 .2, e.3))
        .collect()
}

fn ev6(v: &[(&str, u64, &str, u64, u64, u16)]) -> Vec<(String, u64, String, u64, u64, u16)> {
    v.iter()
        .map(|&(a, b, c, d, e, f)| (a.to_string(), b, c.to_string(), d, e, f))
        .collect()
}

#[test]
fn i915_rings_carry_per_context_seqnos_and_virtual_engines_are_named_and_flagged() {
    let mut t = Trace::new("6.12");
    i915(
        &mut t,
        &[
            (0, 1000, "add", 0, (VCS, 1), 0x60, 2, &[]),
            (0, 1100, "add", 0, (VCS, VIRTUAL), 0x50, 2, &[]),
            (0, 1200, "add", 1, (0, 0), 0x70, 2, &[]),
        ],
    );
    let (c, _) = run(&t);
    let both = ring_flag::CTX_SEQNO | ring_flag::VIRTUAL;
    assert_eq!(
        c.ring_flags(),
        [
            ("card0/vcs1".to_string(), ring_flag::CTX_SEQNO),
            ("card0/vcs-virtual".to_string(), both),
            ("card1/rcs0".to_string(), ring_flag::CTX_SEQNO),
        ]
    );
}

#[test]
fn i915_without_low_level_events_a_virtual_request_ends_on_its_engine_and_frees_the_line() {
    let mut t = Trace::new("6.12");
    t.formats
        .retain(|(f, _)| !I915_LOW_LEVEL.contains(&f.name.as_str()));
    let (v, p) = (0x50, 0x60);
    // `add` names the virtual engine; `retire` the engine that ran the request (i915 gave
    // rq->engine to the sibling that took it).
    i915(
        &mut t,
        &[
            (0, 1000, "add", 0, (VCS, VIRTUAL), v, 2, &[]),
            (0, 1100, "add", 0, (VCS, VIRTUAL), v, 4, &[]),
            (0, 1200, "add", 0, (VCS, 1), p, 2, &[]),
            (1, 3000, "retire", 0, (VCS, 1), v, 2, &[]),
            (1, 3500, "retire", 0, (VCS, 1), p, 2, &[]),
            (1, 4000, "retire", 0, (VCS, 0), v, 4, &[]),
        ],
    );
    let (c, m) = run(&t);
    let (virt, vcs0, vcs1) = ("card0/vcs-virtual", "card0/vcs0", "card0/vcs1");
    assert_eq!(
        named(&c),
        ev6(&[
            ("QUEUE", 1000, virt, v, 2, 0),
            ("COMMIT", 1000, virt, v, 2, 0),
            ("SUBMIT", 1000, virt, v, 2, 0),
            ("START", 1000, virt, v, 2, INF),
            ("QUEUE", 1100, virt, v, 4, 0),
            ("COMMIT", 1100, virt, v, 4, 0),
            ("SUBMIT", 1100, virt, v, 4, 0),
            ("QUEUE", 1200, vcs1, p, 2, 0),
            ("COMMIT", 1200, vcs1, p, 2, 0),
            ("SUBMIT", 1200, vcs1, p, 2, 0),
            ("START", 1200, vcs1, p, 2, INF),
            // The END names the engine; the virtual engine's next request starts then.
            ("END", 3000, vcs1, v, 2, 0),
            ("START", 3000, virt, v, 4, INF),
            ("END", 3500, vcs1, p, 2, 0),
            ("END", 4000, vcs0, v, 4, 0),
        ])
    );
    assert_eq!(m.stats.inferred_starts, 3);
}

#[test]
fn i915_low_level_a_virtual_request_taken_by_another_engine_frees_the_first_ones_line() {
    let mut t = Trace::new("6.12");
    let (v, p) = (0x50, 0x60);
    let port = [("port", 0), ("prio", 0)];
    // add and submit name the virtual engine; in and out the engine.
    i915(
        &mut t,
        &[
            (0, 1000, "add", 0, (VCS, VIRTUAL), v, 2, &[]),
            (0, 1100, "submit", 0, (VCS, VIRTUAL), v, 2, &[]),
            (0, 1200, "in", 0, (VCS, 0), v, 2, &port),
            (0, 1250, "add", 0, (VCS, 0), p, 2, &[]),
            (0, 1260, "submit", 0, (VCS, 0), p, 2, &[]),
            (0, 1300, "in", 0, (VCS, 0), p, 2, &port),
            // vcs0 switches to p's request; a timeslice later vcs1 takes the virtual request.
            (1, 1400, "out", 0, (VCS, 0), v, 2, &[("completed", 0)]),
            (1, 1500, "in", 0, (VCS, 1), v, 2, &port),
            (1, 2000, "out", 0, (VCS, 1), v, 2, &[("completed", 1)]),
            (1, 2200, "out", 0, (VCS, 0), p, 2, &[("completed", 1)]),
        ],
    );
    let (c, _) = run(&t);
    let (virt, vcs0, vcs1) = ("card0/vcs-virtual", "card0/vcs0", "card0/vcs1");
    assert_eq!(
        named(&c),
        ev6(&[
            ("QUEUE", 1000, virt, v, 2, 0),
            ("COMMIT", 1100, virt, v, 2, 0),
            ("SUBMIT", 1200, vcs0, v, 2, 0),
            ("START", 1200, vcs0, v, 2, INF),
            ("QUEUE", 1250, vcs0, p, 2, 0),
            ("COMMIT", 1260, vcs0, p, 2, 0),
            ("SUBMIT", 1300, vcs0, p, 2, 0),
            // Switched away unfinished, the virtual engine's request leaves vcs0, which
            // runs p's request ...
            ("END", 1400, vcs0, v, 2, eflag::PREEMPT),
            ("START", 1400, vcs0, p, 2, INF),
            // ... and goes on on vcs1.
            ("SUBMIT", 1500, vcs1, v, 2, 0),
            ("START", 1500, vcs1, v, 2, INF),
            ("END", 2000, vcs1, v, 2, 0),
            ("END", 2200, vcs0, p, 2, 0),
        ])
    );
}

/// IMPORT.md 5.7: an i915 request whose fence signals ends there, not at the retire that
/// runs whenever the CPU gets to it.
#[test]
fn i915_request_ends_at_its_fence_signal_before_the_retire() {
    let mut t = Trace::new("6.12");
    t.formats
        .retain(|(f, _)| !I915_LOW_LEVEL.contains(&f.name.as_str()));
    let ctx = 0x42;
    i915(&mut t, &[(0, 1000, "add", 0, (0, 0), ctx, 5, &[])]);
    t.signaled(1, 2000, (ctx, 5), ("i915", "rcs0"));
    i915(&mut t, &[(1, 3000, "retire", 0, (0, 0), ctx, 5, &[])]);
    let (c, m) = run(&t);
    let ends: Vec<u64> = c
        .events()
        .iter()
        .filter(|e| e.0 == "END")
        .map(|e| e.1)
        .collect();
    assert_eq!(ends, [2000], "{:?}", c.events());
    assert_eq!(m.stats.retire_ends, 0);
}
