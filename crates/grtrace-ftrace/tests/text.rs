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
    t.sched_done(1, 1_000_009_000, (40, 3));
    t.signaled(1, 1_000_009_500, (40, 3), ("drm_sched", "gfx_0.0.0"));
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

/// i915 (with the low-level events), xe, msm and v3d: their TP_printk lines give the same
/// records as the binary events (and the switches of IMPORT.md 5.7-5.10 follow the text).
#[test]
fn driver_lines_give_the_same_records_as_their_binary_events() {
    let mut t = Trace::new("6.12");
    let i915 = |t: &mut Trace, ts, name: &str, extra: &[(&str, u64)]| {
        let mut f = vec![
            ("dev", 0),
            ("ctx", 7),
            ("class", 0),
            ("instance", 0),
            ("seqno", 1),
            ("tail", 64),
        ];
        f.extend_from_slice(extra);
        t.ev(0, ts, 100, name, &f, &[]);
    };
    i915(&mut t, 1_000_001_000, "i915_request_add", &[]);
    i915(&mut t, 1_000_002_000, "i915_request_submit", &[]);
    i915(
        &mut t,
        1_000_003_000,
        "i915_request_in",
        &[("port", 0), ("prio", 0)],
    );
    i915(
        &mut t,
        1_000_009_000,
        "i915_request_out",
        &[("completed", 1)],
    );
    let dev = [("dev", "0000:03:00.0")];
    t.ev(
        0,
        1_000_010_000,
        100,
        "xe_exec_queue_create",
        &[
            ("class", 3),
            ("logical_mask", 1),
            ("width", 1),
            ("guc_id", 4),
        ],
        &dev,
    );
    t.ev(
        0,
        1_000_011_000,
        100,
        "xe_hw_fence_create",
        &[("ctx", 0x20), ("seqno", 2), ("fence", 0xabc0)],
        &dev,
    );
    let job = [
        ("seqno", 2),
        ("lrc_seqno", 2),
        ("guc_id", 4),
        ("fence", 0xabc0),
    ];
    t.ev(0, 1_000_012_000, 100, "xe_sched_job_exec", &job, &dev);
    t.ev(0, 1_000_013_000, 100, "xe_sched_job_run", &job, &dev);
    t.ev(
        0,
        1_000_019_000,
        0,
        "xe_hw_fence_signal",
        &[("ctx", 0x20), ("seqno", 2), ("fence", 0xabc0)],
        &dev,
    );
    t.ev(
        0,
        1_000_020_000,
        300,
        "msm_gpu_submit_flush",
        &[
            ("pid", 300),
            ("id", 5),
            ("ringid", 0),
            ("seqno", 5),
            ("ticks", 19_200),
        ],
        &[],
    );
    t.ev(
        0,
        1_000_030_000,
        0,
        "msm_gpu_submit_retired",
        &[
            ("pid", 300),
            ("id", 5),
            ("ringid", 0),
            ("seqno", 5),
            ("elapsed", 5000),
            ("clock", 500),
            ("start_ticks", 19_392),
            ("end_ticks", 19_488),
        ],
        &[],
    );
    t.ev(
        0,
        1_000_040_000,
        100,
        "v3d_submit_cl",
        &[
            ("dev", 1),
            ("is_render", 1),
            ("seqno", 9),
            ("ctnqba", 0x100),
            ("ctnqea", 0x200),
        ],
        &[],
    );
    t.ev(
        0,
        1_000_049_000,
        0,
        "v3d_rcl_irq",
        &[("dev", 1), ("seqno", 9)],
        &[],
    );
    let (bin, _, r) = import(&t.dat(6, None));
    r.unwrap();
    let text = "cpus=1\n\
        app-100 [000] 1.000001000: i915_request_add: dev=0, engine=0:0, ctx=7, seqno=1, tail=64\n\
        app-100 [000] 1.000002000: i915_request_submit: dev=0, engine=0:0, ctx=7, seqno=1, tail=64\n\
        app-100 [000] 1.000003000: i915_request_in: dev=0, engine=0:0, ctx=7, seqno=1, prio=0, port=0\n\
        app-100 [000] 1.000009000: i915_request_out: dev=0, engine=0:0, ctx=7, seqno=1, completed?=1\n\
        app-100 [000] 1.000010000: xe_exec_queue_create: dev=0000:03:00.0, 3:0x1, gt=0, width=1, guc_id=4, guc_state=0x0, flags=0x0\n\
        app-100 [000] 1.000011000: xe_hw_fence_create: dev=0000:03:00.0, ctx=0x0000000000000020, fence=000000005d1c2a3b, seqno=2\n\
        app-100 [000] 1.000012000: xe_sched_job_exec: dev=0000:03:00.0, fence=000000005d1c2a3b, seqno=2, lrc_seqno=2, guc_id=4, batch_addr=0x000000010000, guc_state=0x0, flags=0x0, error=0\n\
        app-100 [000] 1.000013000: xe_sched_job_run: dev=0000:03:00.0, fence=000000005d1c2a3b, seqno=2, lrc_seqno=2, guc_id=4, batch_addr=0x000000010000, guc_state=0x0, flags=0x0, error=0\n\
        <idle>-0 [000] 1.000019000: xe_hw_fence_signal: dev=0000:03:00.0, ctx=0x0000000000000020, fence=000000005d1c2a3b, seqno=2\n\
        app-300 [000] 1.000020000: msm_gpu_submit_flush: id=5 pid=300 ring=0:5 ticks=19200\n\
        <idle>-0 [000] 1.000030000: msm_gpu_submit_retired: id=5 pid=300 ring=0:5 elapsed=5000 ns mhz=500 start=19392 end=19488\n\
        app-100 [000] 1.000040000: v3d_submit_cl: dev=1, RCL, seqno=9, 0x00000100..0x00000200\n\
        <idle>-0 [000] 1.000049000: v3d_rcl_irq: dev=1, seqno=9\n";
    let mut ti = TextImport::for_text(text.as_bytes());
    let mut c = Collect::default();
    ti.run(text.as_bytes(), &mut c).unwrap();
    assert_eq!(c.rings(), bin.rings());
    assert_eq!(c.events(), bin.events());
    let rings: Vec<String> = c.rings().into_iter().map(|r| r.1).collect();
    assert_eq!(
        rings,
        [
            "card0/rcs0",
            "0000:03:00.0/bcs-q4",
            "msm/rb0",
            "card1/render"
        ]
    );
    // i915 with `in` in the text: START at `in`, END at `out` (the low-level rows)
    let i915: Vec<_> = c
        .events()
        .into_iter()
        .filter(|e| e.2 .1 == 0)
        .map(|e| (e.0, e.1))
        .collect();
    assert_eq!(i915[3], ("START".to_string(), 1_000_003_000));
    assert_eq!(i915[4], ("END".to_string(), 1_000_009_000));
}

/// Imports `text` (read ahead as grtimport does).
fn text_import(text: &str) -> (Collect, TextImport) {
    let mut ti = TextImport::for_text(text.as_bytes());
    let mut c = Collect::default();
    ti.run(text.as_bytes(), &mut c).unwrap();
    (c, ti)
}

#[test]
fn old_i915_lines_with_ring_and_hw_id_go_on_one_ring_per_engine_id() {
    // 4.19: `ring` is the engine id; render (0) and video (2) interleave
    let text = "\
 RenderThread-20803 (20764) [001] d..2  1.000100: i915_request_add: dev=0, hw_id=48, ring=0, ctx=107, seqno=1, global=0
 RenderThread-20803 (20764) [001] d..2  1.000200: i915_request_add: dev=0, hw_id=49, ring=2, ctx=108, seqno=1, global=0
 RenderThread-20803 (20764) [001] d..2  1.000300: i915_request_add: dev=0, hw_id=48, ring=0, ctx=107, seqno=2, global=0
       <idle>-0     (-----) [000] d.h2  1.000500: dma_fence_signaled: driver=i915 timeline=video context=108 seqno=1
       <idle>-0     (-----) [000] d.h2  1.000900: dma_fence_signaled: driver=i915 timeline=render context=107 seqno=1
       <idle>-0     (-----) [000] d.h2  1.001400: dma_fence_signaled: driver=i915 timeline=render context=107 seqno=2
";
    let (c, ti) = text_import(text);
    let rings: Vec<String> = c.rings().into_iter().map(|r| r.1).collect();
    assert_eq!(rings, ["card0/engine0", "card0/engine2"]);
    // exec of each request: START to END on its own engine
    let ev = c.events();
    let exec = |k: (u32, u32, u64)| {
        let t = |code: &str| ev.iter().find(|e| e.0 == code && e.2 == k).unwrap().1;
        t("END") - t("START")
    };
    assert_eq!(exec((107, 0, 1)), 800_000);
    assert_eq!(exec((108, 1, 1)), 300_000);
    // the second render request waits for the first render one only
    assert_eq!(exec((107, 0, 2)), 500_000);
    assert_eq!(ti.mapper.not_mapped(), 0);
}

#[test]
fn a_text_layout_that_no_kernel_printed_is_counted_not_mapped() {
    // i915_request_add with neither `engine=` nor `ring=`: the engine cannot be formed
    let mut text = String::new();
    for s in 1..=545 {
        text.push_str(&format!(
            " app-100 [000] 1.{s:06}: i915_request_add: dev=0, hw_id=48, ctx=107, seqno={s}\n"
        ));
    }
    let (c, ti) = text_import(&text);
    assert!(c.events().is_empty() && c.rings().is_empty());
    assert_eq!(ti.mapper.not_mapped(), 545);
    let s = ti
        .mapper
        .seen()
        .iter()
        .find(|s| s.unusable.is_some())
        .unwrap();
    assert_eq!(
        (s.name.as_str(), s.count, s.unusable.as_deref()),
        (
            "i915_request_add",
            545,
            Some("format with fields dev, hw_id, ctx, seqno is not known")
        )
    );
}

#[test]
fn amdgpu_4_x_lines_take_the_ring_from_the_timeline_not_the_ring_name_pointer() {
    let text = "\
 amdgpu_test-1506 [004] 370.000100: amdgpu_cs_ioctl: sched_job=12, timeline=gfx_0.0.0, context=177, seqno=1, ring_name=ffff94d01c207bf0, num_ibs=2
 amdgpu_test-1506 [004] 370.000200: amdgpu_sched_run_job: sched_job=12, timeline=gfx_0.0.0, context=177, seqno=1, ring_name=ffff94d01c207bf0, num_ibs=2
 <idle>-0 [000] 370.000900: dma_fence_signaled: driver=drm_sched timeline=gfx_0.0.0 context=177 seqno=1
";
    let (c, _) = text_import(text);
    assert_eq!(c.rings(), [(0, "gfx_0.0.0".to_string())]);
    assert_eq!(
        c.codes(),
        ["QUEUE", "COMMIT", "SUBMIT", "START", "END", "SIGNAL"]
    );
    let ev = c.events();
    assert!(ev.iter().all(|e| e.2 == (177, 0, 1)), "{ev:?}");
    assert_eq!((ev[3].1, ev[4].1), (370_000_200_000, 370_000_900_000));
}

/// The same capture as systrace/atrace HTML (TGID column, the text in a `trace-data` script
/// beside a JSON one), as Catapult JSON (`systemTraceEvents`, escaped), as the latency format
/// and as `trace-cmd report -R` (raw fields): the same jobs.
#[test]
fn systrace_html_catapult_json_latency_and_raw_layouts_give_the_same_jobs() {
    let (bin, _, r) = import(&binary().dat(7, None));
    r.unwrap();
    let tgid = REPORT
        .replace("-100   [", "-100   (  100) [")
        .replace("-0     [", "-0     (-----) [");
    let html = format!(
        "<!DOCTYPE html>\n<html><head><script class=\"trace-data\" type=\"application/text\">{{\"x\": 1}}</script>\n<script class=\"trace-data\" type=\"application/text\">\n# tracer: nop\n{tgid}</script></head></html>\n"
    );
    let escaped = tgid
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    let json = format!("{{\"traceEvents\": [], \"systemTraceEvents\": \"{escaped}\"}}");
    for (name, data) in [("html", html), ("json", json)] {
        let (container, text) = grtrace_ftrace::text::unwrap_container(data.as_bytes()).unwrap();
        assert_eq!(
            container.name().split(' ').next() == Some("systrace"),
            name == "html"
        );
        let (c, _) = text_import(std::str::from_utf8(&text).unwrap());
        assert_eq!(c.events(), bin.events(), "{name}");
        assert_eq!(c.rings(), bin.rings(), "{name}");
    }
    assert!(grtrace_ftrace::text::unwrap_container(REPORT.as_bytes()).is_none());

    // latency format: times in µs since the buffer's start, the jobs' order and keys kept
    let latency = "\
# tracer: nop
  glmark2-100     0d..2.    1us : virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=2 num_free=200 seqno=7
   <idle>-0       1d.h2.   11us+: virtio_gpu_cmd_response: vdev=0 vq=0 name=control type=0x1100 flags=0x1 fence_id=1 ctx_id=2 num_free=201 seqno=7
";
    let (c, _) = text_import(latency);
    let ev: Vec<_> = c.events().into_iter().map(|e| (e.0, e.1, e.2)).collect();
    assert_eq!(
        ev,
        [
            ("COMMIT".to_string(), 1000, (2, 0, 7)),
            ("SUBMIT".to_string(), 1000, (2, 0, 7)),
            ("START".to_string(), 1000, (2, 0, 7)),
            ("END".to_string(), 11_000, (2, 0, 7)),
        ]
    );

    // -R: the format's own field names instead of its TP_printk (i915: class and instance,
    // not `engine=`), read back into the same request on the same engine
    let raw = "\
 app-100 [000] 1.000100000: i915_request_add: dev=0 ctx=7 class=2 instance=1 seqno=1 tail=64
 <idle>-0 [000] 1.000900000: i915_request_retire: dev=0 ctx=7 class=2 instance=1 seqno=1 tail=64
";
    let (c, ti) = text_import(raw);
    assert_eq!(c.rings(), [(0, "card0/vcs1".to_string())]);
    assert_eq!(c.codes(), ["QUEUE", "COMMIT", "SUBMIT", "START", "END"]);
    assert_eq!(ti.mapper.not_mapped(), 0);
}
