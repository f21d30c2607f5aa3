//! Text input (trace-cmd report, tracefs trace) gives the same records as the binary
//! trace.dat of the same events; garbage lines stop the import with their offset.

mod common;

use common::{import, Collect, Trace};
use grtrace_ftrace::text::{TextErrorOrIo, TextImport};

/// The same 6.17 job and virtio command, as a trace.dat and as `trace-cmd report` text.
fn binary() -> Trace {
    let mut t = Trace::new("6.17");
    let s = [
        ("fence_context", 40),
        ("fence_seqno", 3),
        ("client_id", 4),
        ("job_count", 0),
        ("hw_job_count", 2),
    ];
    t.ev(
        0,
        1_000_001_000,
        100,
        "drm_sched_job_queue",
        &s,
        &[("name", "gfx_0.0.0"), ("dev", "0000:03:00.0")],
    );
    t.ev(
        0,
        1_000_002_000,
        100,
        "drm_sched_job_run",
        &s,
        &[("name", "gfx_0.0.0"), ("dev", "0000:03:00.0")],
    );
    t.ev(
        1,
        1_000_009_000,
        0,
        "drm_sched_job_done",
        &[("fence_context", 40), ("fence_seqno", 3)],
        &[],
    );
    t.ev(
        1,
        1_000_009_500,
        0,
        "dma_fence_signaled",
        &[("context", 40), ("seqno", 3)],
        &[("driver", "drm_sched"), ("timeline", "gfx_0.0.0")],
    );
    let v = [
        ("dev", 0),
        ("vq", 0),
        ("type", 0x207),
        ("flags", 1),
        ("fence_id", 1),
        ("ctx_id", 2),
        ("num_free", 200),
        ("seqno", 7),
    ];
    t.ev(
        0,
        1_000_010_000,
        100,
        "virtio_gpu_cmd_queue",
        &v,
        &[("name", "control")],
    );
    let v = [
        ("dev", 0),
        ("vq", 0),
        ("type", 0x1100),
        ("flags", 1),
        ("fence_id", 1),
        ("ctx_id", 2),
        ("num_free", 201),
        ("seqno", 7),
    ];
    t.ev(
        1,
        1_000_020_000,
        0,
        "virtio_gpu_cmd_response",
        &v,
        &[("name", "control")],
    );
    t
}

const REPORT: &str = "cpus=2
         glmark2-100   [000]     1.000001: drm_sched_job_queue:  dev=0000:03:00.0, fence=40:3, ring=gfx_0.0.0, job count:0, hw job count:2, client_id:4
         glmark2-100   [000]     1.000002: drm_sched_job_run:    dev=0000:03:00.0, fence=40:3, ring=gfx_0.0.0, job count:0, hw job count:2, client_id:4
          <idle>-0     [001]     1.000009: drm_sched_job_done:   fence=40:3 signaled
          <idle>-0     [001]     1.0000095: dma_fence_signaled:   driver=drm_sched timeline=gfx_0.0.0 context=40 seqno=3
         glmark2-100   [000]     1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=2 num_free=200 seqno=7
          <idle>-0     [001]     1.000020: virtio_gpu_cmd_response: vdev=0 vq=0 name=control type=0x1100 flags=0x1 fence_id=1 ctx_id=2 num_free=201 seqno=7
";

#[test]
fn report_text_and_trace_dat_give_the_same_records() {
    let (bin, _, r) = import(&binary().dat(7, None));
    r.unwrap();
    for text in [
        REPORT.to_string(),
        // tracefs `trace`: comment header and the flags column
        format!(
            "# tracer: nop\n#\n{}",
            REPORT
                .replace("cpus=2\n", "")
                .replace("]     1.", "] d..2. 1.")
        ),
    ] {
        let mut ti = TextImport::new();
        let mut c = Collect::default();
        ti.run(text.as_bytes(), &mut c).unwrap();
        assert_eq!(c.events(), bin.events(), "{text}");
        assert_eq!(c.rings(), bin.rings());
    }
}

#[test]
fn lost_markers_and_other_events_and_garbage() {
    let text = "CPU 1 is empty\n\
        bash-5 [000] 2.000000: sched_switch: prev_comm=bash prev_pid=5 ==> next_comm=x next_pid=6\n\
        CPU:0 [LOST 9 EVENTS]\n\
        glmark2-100 [000] 2.000001: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x0 fence_id=0 ctx_id=2 num_free=200 seqno=8\n\
        this is garbage\n\
        glmark2-100 [000] 2.000009: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x0 fence_id=0 ctx_id=2 num_free=200 seqno=9\n";
    let mut ti = TextImport::new();
    let mut c = Collect::default();
    let e = match ti.run(text.as_bytes(), &mut c) {
        Err(TextErrorOrIo::Text(e)) => e,
        r => panic!("{r:?}"),
    };
    assert_eq!(e.line, 5);
    assert_eq!(e.offset as usize, text.find("this is garbage").unwrap());
    assert_eq!(ti.other_lines, 1);
    assert_eq!(ti.mapper.stats.lost_events, 9);
    // the command before the garbage was imported, the one after was not
    assert_eq!(c.codes(), ["COMMIT", "SUBMIT", "START"]);
}
