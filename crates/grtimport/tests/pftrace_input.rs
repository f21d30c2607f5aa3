//! grtimport of Perfetto traces written with Perfetto's own Python schema
//! (`perfetto_trace_pb2`, `tests/pftrace/make_pftrace.py`), against the same events written
//! as a trace.dat by grtrace-ftrace's capture: the two imports must give the same records,
//! and the jobs a user sees (rings, keys, exec times) must be the events' own.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

use grtrace_format::{Body, Event, EventView, Records, StreamHeader};
use grtrace_ftrace::capture::{i915_request, Capture};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtimport-pf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The venv python with Perfetto's schema (scripts/pyenv.sh).
fn python() -> String {
    let p = std::env::var("GRT_PYTHON")
        .unwrap_or_else(|_| "/var/tmp/grtrace-pyenv/bin/python3".to_string());
    let ok = Command::new(&p)
        .args([
            "-c",
            "from perfetto.protos.perfetto.trace import perfetto_trace_pb2",
        ])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "these tests need Python with the `perfetto` package: run scripts/pyenv.sh and set \
         GRT_PYTHON to the python it prints (tried `{p}`)"
    );
    p
}

/// Writes the Perfetto trace of `spec` (JSON, see make_pftrace.py) to `out`.
fn make(spec: &str, out: &Path) {
    let js = out.with_extension("json");
    std::fs::write(&js, spec).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pftrace/make_pftrace.py");
    grtrace_cli::succeed(Command::new(python()).arg(&script).arg(&js).arg(out));
}

/// Writes the first `n` events of CPU 0 of `evs`, one bundle, as the Perfetto trace `out`.
fn make_first(evs: &[Ev], n: usize, out: &Path) {
    let spec = format!("{{\"packets\": [{}]}}", bundle(evs, 0, 0, false, 0, n));
    make(&spec, out);
}

/// One kernel event of a test capture.
struct Ev {
    cpu: u32,
    t: u64,
    pid: u32,
    name: &'static str,
    ints: Vec<(&'static str, u64)>,
    strs: Vec<(&'static str, &'static str)>,
}

fn ev(
    cpu: u32,
    t: u64,
    pid: u32,
    name: &'static str,
    ints: &[(&'static str, u64)],
    strs: &[(&'static str, &'static str)],
) -> Ev {
    Ev {
        cpu,
        t,
        pid,
        name,
        ints: ints.to_vec(),
        strs: strs.to_vec(),
    }
}

const COMMS: [(u32, &str); 2] = [(1000, "glmark2"), (1001, "vkcube")];

fn comm(pid: u32) -> &'static str {
    COMMS
        .iter()
        .find(|c| c.0 == pid)
        .map(|c| c.1)
        .unwrap_or("<idle>")
}

/// The events as a trace.dat of `kernel`, with `lost` (cpu, time, count) markers.
fn dat(kernel: &str, cpus: u32, evs: &[Ev], lost: &[(u32, u64, Option<u64>)]) -> Vec<u8> {
    let mut c = Capture::new(kernel, cpus);
    for e in evs {
        c.ev(e.cpu, e.t, comm(e.pid), e.pid, e.name, &e.ints, &e.strs);
    }
    for &(cpu, t, n) in lost {
        c.lost(cpu, t, n);
    }
    c.dat(6, None)
}

/// JSON of one event (times shifted by `shift`, as another clock would have them).
fn ev_json(e: &Ev, shift: u64) -> String {
    let ints: Vec<String> = e
        .ints
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    let strs: Vec<String> = e
        .strs
        .iter()
        .map(|(k, v)| format!("\"{k}\": \"{v}\""))
        .collect();
    format!(
        "{{\"ts\": {}, \"pid\": {}, \"name\": \"{}\", \"ints\": {{{}}}, \"strs\": {{{}}}}}",
        e.t + shift,
        e.pid,
        e.name,
        ints.join(", "),
        strs.join(", ")
    )
}

/// Bundle packets of the events of `cpu` in `range` of its time order.
fn bundle(evs: &[Ev], cpu: u32, shift: u64, lost: bool, from: usize, n: usize) -> String {
    let mine: Vec<&Ev> = {
        let mut v: Vec<&Ev> = evs.iter().filter(|e| e.cpu == cpu).collect();
        v.sort_by_key(|e| e.t);
        v
    };
    let js: Vec<String> = mine
        .iter()
        .skip(from)
        .take(n)
        .map(|e| ev_json(e, shift))
        .collect();
    format!(
        "{{\"bundle\": {{\"cpu\": {cpu}, \"lost\": {lost}, \"events\": [{}]}}}}",
        js.join(", ")
    )
}

fn threads() -> String {
    let t: Vec<String> = COMMS
        .iter()
        .map(|(p, c)| format!("[{p}, \"{c}\"]"))
        .collect();
    format!("{{\"threads\": [{}]}}", t.join(", "))
}

/// Asserts that the summary `err` says each of `wants`.
fn says_all(err: &str, wants: &[&str]) {
    for want in wants {
        assert!(err.contains(want), "no `{want}` in:\n{err}");
    }
}

/// The [`records`] of the trace.dat's import `d/dat`, and the headers and records of the
/// Perfetto trace's import `d/pf`.
fn both_records(d: &Path) -> (Vec<String>, Vec<StreamHeader>, Vec<String>) {
    let (_, dat) = records(&d.join("dat"));
    let (hs, pf) = records(&d.join("pf"));
    (dat, hs, pf)
}

/// Every record of the streams of `base` (all CPUs) but the source notes, as text lines,
/// in stream order; and the headers.
fn records(base: &Path) -> (Vec<StreamHeader>, Vec<String>) {
    let mut lines = Vec::new();
    let mut headers = Vec::new();
    for (cpu, h, bytes) in streams(base) {
        for r in Records::new(&bytes, &h) {
            let r = r.unwrap();
            match r.body() {
                Body::Msg { .. } => continue,
                // Its byte count includes the notes.
                Body::StreamInfo(i) => lines.push(format!("{cpu} INFO records={}", i.records)),
                b => lines.push(format!(
                    "{cpu} {} {} {:?} {} {} {b:?}",
                    r.time_ns(),
                    r.pid(),
                    r.rtype(),
                    r.code(),
                    r.flags()
                )),
            }
        }
        headers.push(h);
    }
    (headers, lines)
}

/// A finished job: ring name, ctx, seqno, exec time (END - START) when its START came.
type Job = (String, u32, u64, Option<u64>);

/// The jobs of the streams, and the ring names.
fn jobs(base: &Path) -> (Vec<Job>, Vec<String>) {
    let mut rings: Vec<(u32, String)> = Vec::new();
    let mut starts: Vec<((u32, u32, u64), u64)> = Vec::new();
    let mut out = Vec::new();
    let mut all = Vec::new();
    for (_, h, bytes) in streams(base) {
        for r in Records::new(&bytes, &h) {
            let r = r.unwrap();
            all.push((r.time_ns(), r.bytes().to_vec(), h.endian));
        }
    }
    all.sort_by_key(|x| x.0);
    for (_, b, endian) in &all {
        let r = grtrace_format::RecordView::parse(b, *endian, 0).unwrap();
        if let Body::Ring(n) = r.body() {
            rings.push((n.ring, String::from_utf8_lossy(n.name).into_owned()));
        }
        let Some(e): Option<EventView<'_>> = r.event() else {
            continue;
        };
        let key = (e.ring(), e.ctx(), e.seqno());
        match e.event() {
            Event::START => starts.push((key, r.time_ns())),
            Event::END => {
                let s = starts.iter().find(|(k, _)| *k == key).map(|x| x.1);
                let name = rings
                    .iter()
                    .find(|x| x.0 == key.0)
                    .map(|x| x.1.clone())
                    .unwrap_or_default();
                out.push((name, key.1, key.2, s.map(|s| r.time_ns() - s)));
            }
            _ => {}
        }
    }
    (out, rings.into_iter().map(|r| r.1).collect())
}

/// virtio-gpu (typed), DRM scheduler 6.12 (typed) with amdgpu's names (generic), and i915
/// (generic) on two CPUs: queue on one CPU, completion on the other.
fn mixed_612() -> Vec<Ev> {
    let mut v = Vec::new();
    for i in 0..6u64 {
        let t = 1_000_000_000 + i * 100_000;
        let (c, d) = ((i % 2) as u32, ((i + 1) % 2) as u32);
        let fenced = i % 2 == 0;
        let vio = |ty: u64| {
            vec![
                ("dev", 0),
                ("vq", 0),
                ("type", ty),
                ("flags", u64::from(fenced)),
                ("fence_id", if fenced { i / 2 + 1 } else { 0 }),
                ("ctx_id", 1 + i % 2),
                ("num_free", 200),
                ("seqno", i + 1),
            ]
        };
        v.push(ev(
            c,
            t,
            1000,
            "virtio_gpu_cmd_queue",
            &vio(0x207),
            &[("name", "control")],
        ));
        v.push(ev(
            d,
            t + 17_000 + i * 1000,
            0,
            "virtio_gpu_cmd_response",
            &vio(0x1100),
            &[("name", "control")],
        ));
        if fenced {
            v.push(ev(
                d,
                t + 17_500 + i * 1000,
                0,
                "dma_fence_signaled",
                &[("context", 7), ("seqno", i / 2 + 1)],
                &[("driver", "virtio_gpu"), ("timeline", "controlq")],
            ));
        }
        // amdgpu: cs_ioctl (generic) names the job's fence; the scheduler events are typed.
        let fence = 0xffff_8880_1000_0000 + i * 0x40;
        let job = [
            ("entity", 0xffff_8880_0000_1000),
            ("fence", fence),
            ("id", 50 + i),
            ("job_count", 0),
            ("hw_job_count", 1),
        ];
        let ring = if i % 3 == 0 {
            "comp_1.0.0"
        } else {
            "gfx_0.0.0"
        };
        let t2 = t + 40_000;
        v.push(ev(
            c,
            t2,
            1001,
            "amdgpu_cs_ioctl",
            &[
                ("sched_job_id", 50 + i),
                ("context", 40),
                ("seqno", i + 1),
                ("num_ibs", 1),
            ],
            &[("timeline", ring), ("ring", ring)],
        ));
        v.push(ev(
            c,
            t2 + 100,
            1001,
            "drm_sched_job",
            &job,
            &[("name", ring)],
        ));
        v.push(ev(
            c,
            t2 + 2_000,
            1001,
            "drm_run_job",
            &job,
            &[("name", ring)],
        ));
        v.push(ev(
            d,
            t2 + 30_000,
            0,
            "drm_sched_process_job",
            &[("fence", fence)],
            &[],
        ));
        // i915 (generic): add, in, out on the render engine.
        let i9 = |n: u64| i915_request(9, n).to_vec();
        let t3 = t + 60_000;
        v.push(ev(c, t3, 1000, "i915_request_add", &i9(i + 1), &[]));
        v.push(ev(
            d,
            t3 + 1_000,
            0,
            "i915_request_in",
            &[i9(i + 1), vec![("port", 0)]].concat(),
            &[],
        ));
        v.push(ev(
            d,
            t3 + 9_000 + i * 100,
            0,
            "i915_request_out",
            &[i9(i + 1), vec![("completed", 1)]].concat(),
            &[],
        ));
    }
    v
}

#[test]
fn typed_and_generic_events_import_as_the_same_events_in_a_trace_dat() {
    let d = dir("mixed");
    let evs = mixed_612();
    std::fs::write(d.join("trace.dat"), dat("6.12", 2, &evs, &[])).unwrap();
    // Bundles of several events, CPU 1 before CPU 0, as traced_probes interleaves them;
    // other packets and events in between.
    let n0 = evs.iter().filter(|e| e.cpu == 0).count();
    let n1 = evs.iter().filter(|e| e.cpu == 1).count();
    let mut packets = vec![threads(), "{\"track_event\": true}".to_string()];
    let (mut a, mut b) = (0, 0);
    while a < n0 || b < n1 {
        packets.push(bundle(&evs, 1, 0, false, b, 7));
        packets.push(bundle(&evs, 0, 0, false, a, 5));
        a += 5;
        b += 7;
    }
    packets.push(
        "{\"bundle\": {\"cpu\": 0, \"compact_switches\": 4, \"events\": [\
         {\"ts\": 1000000001, \"pid\": 7, \"name\": \"sched_switch\", \"ints\": {\"prev_pid\": 7}, \"strs\": {}},\
         {\"ts\": 1000000002, \"pid\": 7, \"name\": \"binder_transaction\", \"ints\": {}, \"strs\": {}},\
         {\"ts\": 1000000003, \"pid\": 7, \"name\": \"kgsl_something\", \"ints\": {\"x\": 1}, \"strs\": {}}]}}"
            .into(),
    );
    let spec = format!("{{\"packets\": [{}]}}", packets.join(",\n"));
    let pf = d.join("capture.perfetto-trace");
    make(&spec, &pf);
    import_ok(&d.join("trace.dat"), &d.join("dat"));
    let err = import_ok(&pf, &d.join("pf"));
    // What the user reads: the events mapped, and what was skipped and why.
    assert!(err.contains("Perfetto trace ("), "{err}");
    says_all(
        &err,
        &[
            "virtio_gpu:virtio_gpu_cmd_queue  -> VirtioQueue",
            "gpu_scheduler:drm_run_job  -> SchedRun612",
            "amdgpu:amdgpu_cs_ioctl  -> AmdgpuCs",
            "i915:i915_request_out  -> I915Out",
            "sched:sched_switch 1",
            "binder:binder_transaction 1",
            "kgsl_something 1",
            "sched (compact_sched, no GPU data) 4",
            "process_tree 1, track_event 1",
            "clock boot",
        ],
    );
    let (dat_recs, hs, pf_recs) = both_records(&d);
    assert_eq!(hs.len(), 2);
    assert!(dat_recs.len() > 60, "{dat_recs:?}");
    assert_eq!(pf_recs, dat_recs);
    // The jobs: virtio control queue, amdgpu's two rings, i915's render engine, each with
    // the exec time its events give.
    let (jobs, rings) = jobs(&d.join("pf"));
    for r in ["virtio0/control", "card0/rcs0"] {
        assert!(rings.iter().any(|x| x == r), "{rings:?}");
    }
    assert!(rings.iter().any(|x| x.ends_with("gfx_0.0.0")), "{rings:?}");
    assert!(rings.iter().any(|x| x.ends_with("comp_1.0.0")), "{rings:?}");
    let ends = |ring: &str| jobs.iter().filter(|j| j.0 == ring).count();
    assert_eq!(ends("virtio0/control"), 6, "{jobs:?}");
    assert_eq!(ends("card0/rcs0"), 6, "{jobs:?}");
    // i915 request 3 ran from `in` (+1 us) to `out` (+9.2 us): 8.2 us.
    let j = jobs
        .iter()
        .find(|j| j.0 == "card0/rcs0" && j.2 == 3)
        .expect("i915 request 3");
    assert_eq!((j.1, j.3), (9, Some(8_200)), "{j:?}");
    // amdgpu's jobs carry the cs_ioctl's context and seqno.
    assert!(
        jobs.iter()
            .any(|j| j.0.ends_with("gfx_0.0.0") && j.1 == 40 && j.2 == 2),
        "{jobs:?}"
    );
}

/// DRM scheduler 6.17 (typed) jobs of two GPUs with the same ring names, and their fences.
fn two_gpus_617() -> Vec<Ev> {
    let mut v = Vec::new();
    for i in 0..16u64 {
        let t = 2_000_000_000 + i * 10_000;
        let (c, d) = ((i % 3) as u32, ((i + 1) % 3) as u32);
        let dev = if i % 2 == 0 {
            "0000:03:00.0"
        } else {
            "0000:04:00.0"
        };
        let (fc, fs) = (100 + i % 2, i / 2 + 1);
        let q = [
            ("job_count", 0),
            ("hw_job_count", 1),
            ("fence_context", fc),
            ("fence_seqno", fs),
            ("client_id", 3),
        ];
        let s = [("name", "gfx_0.0.0"), ("dev", dev)];
        v.push(ev(c, t, 1000, "drm_sched_job_queue", &q, &s));
        v.push(ev(c, t + 2_000, 1000, "drm_sched_job_run", &q, &s));
        v.push(ev(
            d,
            t + 15_000 + (i % 2) * 5_000,
            0,
            "drm_sched_job_done",
            &[("fence_context", fc), ("fence_seqno", fs)],
            &[],
        ));
        v.push(ev(
            d,
            t + 15_100 + (i % 2) * 5_000,
            0,
            "dma_fence_signaled",
            &[("context", fc), ("seqno", fs)],
            &[("driver", "drm_sched"), ("timeline", "gfx_0.0.0")],
        ));
    }
    v
}

#[test]
fn two_gpus_compressed_packets_losses_and_a_clock_snapshot() {
    let d = dir("two");
    let evs = two_gpus_617();
    // CPU 1 lost 5 events before its 4th event (the kernel's ring buffer marked the page).
    let cpu1: Vec<u64> = {
        let mut v: Vec<u64> = evs.iter().filter(|e| e.cpu == 1).map(|e| e.t).collect();
        v.sort_unstable();
        v
    };
    std::fs::write(
        d.join("trace.dat"),
        dat("6.17", 3, &evs, &[(1, cpu1[3], Some(5))]),
    )
    .unwrap();
    // BOOTTIME runs 1 s ahead of MONOTONIC (a suspend before the capture).
    let shift = 1_000_000_000;
    let n = |cpu| evs.iter().filter(|e| e.cpu == cpu).count();
    let mut inner = Vec::new();
    for cpu in 0..3 {
        if cpu == 1 {
            inner.push(bundle(&evs, 1, shift, false, 0, 3));
            inner.push(bundle(&evs, 1, shift, true, 3, n(1)));
        } else {
            inner.push(bundle(&evs, cpu, shift, false, 0, n(cpu)));
        }
    }
    let half = inner.split_off(2);
    let spec = format!(
        "{{\"packets\": [{}, \
          {{\"clock_snapshot\": {{\"boot\": 1500000000, \"mono\": 500000000}}}}, \
          {{\"ftrace_stats\": {{\"phase\": 1, \"cpus\": [[0, 0, 0], [1, 2, 0], [2, 0, 0]]}}}}, \
          {{\"compressed\": [{}]}}, {{\"compressed\": [{}]}}, \
          {{\"ftrace_stats\": {{\"phase\": 2, \"cpus\": [[0, 0, 0], [1, 4, 3], [2, 0, 0]]}}}}]}}",
        threads(),
        inner.join(", "),
        half.join(", ")
    );
    let pf = d.join("gpus.pftrace");
    make(&spec, &pf);
    import_ok(&d.join("trace.dat"), &d.join("dat"));
    let err = import_ok(&pf, &d.join("pf"));
    says_all(
        &err,
        &[
            "2 zlib compressed",
            "clock mono: ftrace's boot clock, put on CLOCK_MONOTONIC by 1 ClockSnapshot",
            "ftrace_stats: events overrun or dropped by the kernel: CPU 1: 5",
            "You have 5 lost events in the trace",
        ],
    );
    let (dat_recs, hs, pf_recs) = both_records(&d);
    // The same records at the same MONOTONIC times, the loss included.
    assert!(pf_recs.iter().any(|l| l.contains("Lost")), "{pf_recs:?}");
    assert_eq!(pf_recs, dat_recs);
    assert_eq!(hs.len(), 3);
    assert!(hs.iter().all(|h| h.clock_id == 1), "CLOCK_MONOTONIC");
    // Two cards' rings stay apart; the jobs after the loss are still measured.
    let (jobs, rings) = jobs(&d.join("pf"));
    assert_eq!(rings.len(), 2, "{rings:?}");
    assert!(
        rings.iter().any(|r| r.contains("0000:03:00.0")),
        "{rings:?}"
    );
    assert!(
        rings.iter().any(|r| r.contains("0000:04:00.0")),
        "{rings:?}"
    );
    let on = |dev: &str| {
        jobs.iter()
            .filter(|j| j.0.contains(dev) && j.3.is_some())
            .map(|j| j.3.unwrap())
            .collect::<Vec<u64>>()
    };
    // Inferred START = max(run, previous END on the ring): exec is 13 us on the first
    // card, 18 us on the second, for every job the loss did not cut.
    assert!(on("0000:03:00.0").len() >= 6, "{jobs:?}");
    assert!(on("0000:03:00.0").iter().all(|&x| x == 13_000), "{jobs:?}");
    assert!(on("0000:04:00.0").iter().all(|&x| x == 18_000), "{jobs:?}");
}

#[test]
fn a_truncated_trace_exits_1_naming_file_and_offset_and_keeps_what_came_before() {
    let d = dir("trunc");
    let evs = two_gpus_617();
    let n = evs.iter().filter(|e| e.cpu == 0).count();
    let spec = format!(
        "{{\"packets\": [{}, {}, {}], \"truncate\": 40}}",
        bundle(&evs, 0, 0, false, 0, n),
        bundle(&evs, 1, 0, false, 0, 100),
        bundle(&evs, 2, 0, false, 0, 100)
    );
    let pf = d.join("cut.pftrace");
    make(&spec, &pf);
    let len = std::fs::metadata(&pf).unwrap().len();
    let err = import_damaged(&pf, &d.join("out"));
    let line = err.lines().last().unwrap();
    assert!(line.contains("everything before it was imported"), "{err}");
    let off: u64 = line
        .split("offset ")
        .nth(1)
        .unwrap()
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(off < len, "{off} {len}");
    // CPUs 0 and 1 came whole: their events were mapped.
    let (_, recs) = records(&d.join("out"));
    assert!(
        recs.iter().filter(|l| l.contains("Event")).count() > 20,
        "{recs:?}"
    );
    assert!(err.contains("drm_sched_job_queue"), "{err}");
}

#[test]
fn damaged_lengths_are_errors_at_their_offset_not_allocations() {
    let d = dir("damage");
    let pf = d.join("ok.pftrace");
    make_first(&two_gpus_617(), 4, &pf);
    let good = std::fs::read(&pf).unwrap();
    // A packet whose length claims 4 GiB, after a good one.
    let mut bad = good.clone();
    bad.extend_from_slice(&[0x0a, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 2, 3]);
    let p = d.join("big.pftrace");
    std::fs::write(&p, &bad).unwrap();
    let (code, err) = grtimport(&[p.to_str().unwrap(), "-o", d.join("o1").to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&format!("offset {}:", good.len())), "{err}");
    // A compressed packet that is not zlib.
    let mut z = good.clone();
    z.extend_from_slice(&[0x0a, 0x05, 0x92, 0x03, 0x02, 0x41, 0x42]);
    let p = d.join("z.pftrace");
    std::fs::write(&p, &z).unwrap();
    let (code, err) = grtimport(&[p.to_str().unwrap(), "-o", d.join("o2").to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("zlib"), "{err}");
    assert!(
        err.contains(&format!("offset {}:", good.len() + 5)),
        "{err}"
    );
    // Garbage inside an event: the import stops there, the events before it are kept.
    let (_, recs) = records(&d.join("o2"));
    assert!(recs.iter().any(|l| l.contains("Event")), "{recs:?}");
}

#[test]
fn a_perfetto_trace_is_told_by_its_content_not_its_name() {
    let d = dir("detect");
    let pf = d.join("looks-like.dat");
    make_first(&two_gpus_617(), 8, &pf);
    let err = import_ok(&pf, &d.join("a"));
    assert!(err.contains("Perfetto trace"), "{err}");
    // From stdin too.
    let o = Command::new(env!("CARGO_BIN_EXE_grtimport"))
        .args(["-", "-o", d.join("b").to_str().unwrap()])
        .stdin(std::fs::File::open(&pf).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("Perfetto trace"), "{err}");
    // A Perfetto trace without ftrace data says what it has and how to record.
    let te = d.join("te.pftrace");
    make(
        "{\"packets\": [{\"track_event\": true}, {\"track_event\": true}]}",
        &te,
    );
    let (code, err) = grtimport(&[te.to_str().unwrap(), "-o", d.join("e").to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("without ftrace events (track_event 2)"),
        "{err}"
    );
    assert!(err.contains("linux.ftrace"), "{err}");
    // Text that starts with a newline (0x0a, the packet key) is still text.
    let t = d.join("t.txt");
    std::fs::write(
        &t,
        "\n# tracer: nop\n  glmark2-1000 [000] 1.000010: virtio_gpu_cmd_queue: vdev=0 vq=0 name=control type=0x207 flags=0x1 fence_id=1 ctx_id=1 num_free=200 seqno=1\n",
    )
    .unwrap();
    let err = import_ok(&t, &d.join("c"));
    assert!(err.contains("grtimport: text"), "{err}");
}

/// The benchmark's Perfetto input (grtrace-ftrace's writer, from a synth trace.dat) is what
/// Perfetto's own schema reads back, and imports to the trace.dat's records.
#[test]
fn the_benchmarks_perfetto_writer_is_read_by_perfettos_schema_and_imports_as_its_trace_dat() {
    use grtrace_ftrace::datwriter::{fixture_formats, DatSpec, DatWriter};
    use grtrace_ftrace::perfetto::writer::{from_dat, Writer};
    use grtrace_ftrace::synth::{Flavor, Workload};
    use grtrace_ftrace::tracedat::TraceDat;

    let d = dir("writer");
    for (flavor, compress) in [(Flavor::Sched617, true), (Flavor::Virtio, false)] {
        let w = Workload {
            flavor,
            jobs: 300,
            cpus: 3,
        };
        let formats = fixture_formats(w.kernel());
        let mut spec = DatSpec::new(6, None, &formats, w.cpus);
        spec.cmdlines = vec![(1000, "glmark2".into()), (1001, "weston".into())];
        let fs: Vec<_> = formats.iter().map(|(f, _)| f.clone()).collect();
        let mut dw = DatWriter::new(std::io::Cursor::new(Vec::new()), spec).unwrap();
        w.write(&mut dw, &fs).unwrap();
        let bytes = dw.finish().unwrap().into_inner();
        std::fs::write(d.join("w.dat"), &bytes).unwrap();
        let dat = TraceDat::parse(&bytes).unwrap();
        let mut pw = Writer::new(Vec::new(), compress);
        let n = from_dat(&dat, &mut pw).unwrap();
        assert_eq!(n, w.event_count());
        let pf = d.join("w.pftrace");
        std::fs::write(&pf, pw.finish().unwrap()).unwrap();
        // Perfetto's schema: every event there, on its typed field, with its fields.
        let check = r#"
import sys, zlib, collections
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
t = pb.Trace(); t.ParseFromString(open(sys.argv[1], 'rb').read())
pk = list(t.packet)
for p in list(pk):
    if p.HasField('compressed_packets'):
        i = pb.Trace(); i.ParseFromString(zlib.decompress(p.compressed_packets)); pk += list(i.packet)
kinds = collections.Counter(); names = set(); seqs = set()
for p in pk:
    if p.HasField('process_tree'):
        names |= {x.name for x in p.process_tree.threads}
    if p.HasField('ftrace_events'):
        for e in p.ftrace_events.event:
            k = e.WhichOneof('event'); kinds[k] += 1
            if k in ('drm_sched_job_queue', 'virtio_gpu_cmd_queue'):
                m = getattr(e, k); seqs.add(m.name + '/' + (m.dev if k == 'drm_sched_job_queue' else str(m.vq)))
print(sorted(kinds.items()), sorted(names), sorted(seqs))
"#;
        let o = Command::new(python())
            .args(["-c", check, pf.to_str().unwrap()])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        match flavor {
            Flavor::Sched617 => {
                assert!(out.contains("('drm_sched_job_queue', 300)"), "{out}");
                assert!(out.contains("('drm_sched_job_done', 300)"), "{out}");
                assert!(out.contains("gfx_0.0.0/0000:03:00.0"), "{out}");
                assert!(out.contains("comp_1.0.0/0000:01:00.0"), "{out}");
            }
            _ => {
                assert!(out.contains("('virtio_gpu_cmd_response', 300)"), "{out}");
                assert!(out.contains("('dma_fence_signaled', 75)"), "{out}");
                assert!(out.contains("control/0"), "{out}");
            }
        }
        assert!(out.contains("['glmark2', 'weston']"), "{out}");
        let (c1, e1) = grtimport(&[
            d.join("w.dat").to_str().unwrap(),
            "-o",
            d.join("a").to_str().unwrap(),
        ]);
        let (c2, e2) = grtimport(&[pf.to_str().unwrap(), "-o", d.join("b").to_str().unwrap()]);
        assert_eq!((c1, c2), (0, 0), "{e1}\n{e2}");
        let (_, ra) = records(&d.join("a"));
        let (_, rb) = records(&d.join("b"));
        assert!(ra.len() > 1000);
        assert_eq!(ra, rb, "{flavor:?}");
    }
}

/// Bundles on ftrace's `local` clock (FTRACE_CLOCK_LOCAL) with a sync pair go on boot; without
/// one, the events stay on `local` and the summary says so.
#[test]
fn an_ftrace_clock_other_than_boot_is_put_on_boot_by_the_bundles_sync_pairs() {
    let d = dir("fclock");
    let evs = two_gpus_617();
    std::fs::write(d.join("trace.dat"), dat("6.17", 3, &evs, &[])).unwrap();
    import_ok(&d.join("trace.dat"), &d.join("dat"));
    let (_, want) = records(&d.join("dat"));
    // local runs 7 us behind boot: events written at t - 7000, the pair says +7000.
    let lag = 7_000u64;
    let shifted: Vec<Ev> = evs
        .iter()
        .map(|e| Ev {
            t: e.t - lag,
            ints: e.ints.clone(),
            strs: e.strs.clone(),
            ..*e
        })
        .collect();
    for synced in [true, false] {
        let pairs = if synced {
            (5_000_000, 5_000_000 + lag)
        } else {
            (0, 0)
        };
        let bundles: Vec<String> = (0..3)
            .map(|cpu| {
                let b = bundle(&shifted, cpu, 0, false, 0, 100);
                b.replacen(
                    "\"bundle\": {",
                    &format!("\"bundle\": {{\"clock\": [3, {}, {}], ", pairs.0, pairs.1),
                    1,
                )
            })
            .collect();
        let pf = d.join(format!("local-{synced}.pftrace"));
        make(
            &format!("{{\"packets\": [{}, {}]}}", threads(), bundles.join(", ")),
            &pf,
        );
        let base = d.join(format!("pf-{synced}"));
        let err = import_ok(&pf, &base);
        let (hs, got) = records(&base);
        if synced {
            assert!(
                err.contains("clock boot: ftrace clock put on boot"),
                "{err}"
            );
            assert!(hs.iter().all(|h| h.clock_id == 7), "BOOTTIME");
            assert_eq!(got, want);
        } else {
            assert!(
                err.contains("clock local: 3 bundles on an ftrace clock without"),
                "{err}"
            );
            assert!(hs.iter().all(|h| h.clock_id == 0x1000_0001), "ftrace local");
            assert_ne!(got, want);
            assert_eq!(got.len(), want.len());
        }
    }
}
