//! Stock-kernel captures through the whole path: events built from the kernels' own formats
//! (fixtures/import), written as trace.dat and as `trace-cmd report` / tracefs text (each line
//! from the event's print fmt), imported by grtimport, reported by the grtreport binary in
//! every output. Each test reads a report as a user would and checks its figures against what
//! the capture says.

mod common;
#[path = "common/tef.rs"]
mod tef;

use common::line_after;

use std::path::{Path, PathBuf};

use grtrace_ftrace::capture::{Capture, TextStyle};
use grtrace_ftrace::tracedat::Codec;
use serde_json::Value;

/// 1000 s after boot: trace-cmd times are seconds since boot.
const T0: u64 = 1_000_000_000_000;
const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-imported-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The inputs a capture is given as: trace.dat v6 and v7 (zstd), report text (µs and ns)
/// and tracefs text, each imported by grtimport into its own base name.
fn imports(c: &Capture, name: &str) -> Vec<(String, PathBuf)> {
    let d = dir(name);
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("v6.dat", c.dat(6, None)),
        ("v7.dat", c.dat(7, Some(Codec::Zstd))),
        ("report.txt", c.text(TextStyle::Report).into_bytes()),
        ("report-t.txt", c.text(TextStyle::ReportNs).into_bytes()),
        ("tracefs.txt", c.text(TextStyle::Tracefs).into_bytes()),
    ];
    inputs
        .into_iter()
        .map(|(file, bytes)| {
            let input = d.join(file);
            std::fs::write(&input, bytes).unwrap();
            let base = d.join(file.replace('.', "-"));
            if let Err(f) = common::import(&input, &base) {
                panic!("{file}: {f:?}");
            }
            (file.to_string(), base)
        })
        .collect()
}

fn report(base: &Path, args: &[&str]) -> String {
    common::stdout_of(common::grtreport().arg(base).args(args))
}

fn json(base: &Path) -> Value {
    serde_json::from_str(&report(base, &["--json"])).unwrap()
}

/// i915's tracepoints that exist only with `CONFIG_DRM_I915_LOW_LEVEL_TRACEPOINTS`.
const I915_LOW_LEVEL: [&str; 5] = [
    "i915_request_submit",
    "i915_request_execute",
    "i915_request_in",
    "i915_request_out",
    "i915_request_guc_submit",
];

/// The i915 capture of the first report of this session: two contexts on rcs0, a request
/// every ms for 40 ms, each retired 0.8 ms after it was added; without the low-level
/// tracepoints (no `i915_request_in`), a scheduler switch (not a GPU event) in between.
fn i915_small() -> Capture {
    let mut c = Capture::new("6.12", 2);
    c.without(&I915_LOW_LEVEL);
    for i in 0..40u64 {
        let req = [
            ("dev", 0),
            ("ctx", if i % 2 == 0 { 12 } else { 14 }),
            ("class", 0),
            ("instance", 0),
            ("seqno", 2 * (i / 2) + 2),
            ("tail", 64),
        ];
        let t = T0 + i * MS;
        c.ev(0, t, "gfx", 1234, "i915_request_add", &req, &[]);
        c.ev(1, t + 800 * US, "", 0, "i915_request_retire", &req, &[]);
    }
    to_idle(&mut c, 0, T0 + 20 * MS + 300 * US, ("gfx", 1234));
    c
}

/// The four faults of the first report: the time origin, inferred STARTs counted as
/// observed, unmeasured phases printed as 0, and the source line naming drivers the
/// capture does not have. Text and trace.dat alike, in every output.
#[test]
fn an_i915_capture_is_reported_over_its_own_span_with_its_inferences_said() {
    for (input, base) in imports(&i915_small(), "i915-small") {
        let text = report(&base, &[]);
        let head: Vec<&str> = text.lines().take(4).collect();
        // 40 requests from 1000.000 s to the last retire at 1000.0398 s.
        assert!(
            head[0].contains(" records, 200 events over 0.039800000 s; 40 job(s): 40 complete, 0 incomplete, 40 with inferred START"),
            "{input}: {}",
            head[0]
        );
        assert!(
            head[1].starts_with("grtreport: source: driver i915, card0; imported by grtimport "),
            "{input}: {}",
            head[1]
        );
        assert!(
            head[2].contains("submit_host, complete, gpu_wait, vm_fault cannot be measured from this source (shown as -)"),
            "{input}: {}",
            head[2]
        );
        assert!(head[3].contains("40 of 40 complete job(s) have an inferred START"));
        // No fence signal in the capture: the requests end at retire, and the report says so.
        assert!(
            text.contains("grtreport: 40 job(s) END at i915_request_retire, which the CPU runs after the GPU finished"),
            "{input}"
        );
        let row = |name: &str| {
            line_after(&text, "", name)
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(row("submit_host")[1..], ["-"; 7]);
        assert_eq!(row("exec")[1..3], ["40", "0.800000"]);
        // 40 x 0.8 ms busy in 39.8 ms, 40 jobs ended in 39.8 ms.
        let ring = line_after(&text, "Utilisation", "ring 0 (card0/rcs0)");
        let cells: Vec<&str> = ring.split_whitespace().collect();
        assert_eq!(cells[3..5], ["80.40%", "1005.0"], "{input}: {ring}");
        assert_eq!(cells[9], "-", "{input}: idle_host: {ring}");
        let verdict = text
            .lines()
            .find(|l| l.starts_with("ring 0 (card0/rcs0): GPU-bound"))
            .unwrap_or_else(|| panic!("{input}: no verdict"));
        assert!(verdict.contains("GPU-bound: busy 80.40%"), "{verdict}");
        assert!(verdict.contains("host late -, dependency -"), "{verdict}");
        // Nothing judged on an inferred or unmeasured basis, and nothing called untagged.
        let classes = line_after(&text, "Blocking Classes", "Overall");
        assert_eq!(
            classes.split_whitespace().collect::<Vec<_>>()[1..],
            ["40", "-", "-", "-", "-", "-", "-", "-"]
        );

        // --jobs: flagged, submit_host `-`, times from the capture's start.
        let jobs = report(&base, &["--jobs", "-q"]);
        let lines: Vec<&str> = jobs.lines().skip(1).collect();
        assert_eq!(lines.len(), 40);
        let first: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(first[0], "0.000000000", "{input}");
        assert_eq!(first[4], "-", "{input}: submit_ms");
        assert_eq!(first[6], "0.800000", "{input}: exec_ms");
        assert!(lines.iter().all(|l| l.contains(" inferred")), "{input}");

        // CSV: empty submit_host, the inferred column set.
        let d = base.with_extension("csvdir");
        std::fs::create_dir_all(&d).unwrap();
        let csv = d.join("jobs.csv");
        report(&base, &["-q", "--csv", csv.to_str().unwrap()]);
        let mut r = csv::Reader::from_path(&csv).unwrap();
        let h = r.headers().unwrap().clone();
        let col = |n: &str| h.iter().position(|c| c == n).unwrap();
        for rec in r.records() {
            let rec = rec.unwrap();
            assert_eq!(&rec[col("submit_host_ns")], "");
            assert_eq!(&rec[col("complete_ns")], "");
            assert_eq!(&rec[col("inferred")], "1");
            assert_eq!(&rec[col("exec_ns")], "800000");
        }

        // JSON: nulls, the source, the span.
        let j = json(&base);
        assert_eq!(j["source"]["span_ns"], 39_800_000);
        assert_eq!(j["source"]["inferred_start_jobs"], 40);
        assert_eq!(j["source"]["import"]["start_inferred"], true);
        assert!(j["all"]["phases"]["submit_host"].is_null());
        assert!(j["all"]["tags"]["host-submit"].is_null());
        assert!(j["all"]["tags"]["queue-wait"].is_null());
        assert_eq!(j["all"]["inferred"], 40);
        let busy = j["rings"][0]["utilisation"]["busy"].as_f64().unwrap();
        assert!((busy - 32.0 / 39.8).abs() < 1e-9, "{busy}");
        assert!(j["rings"][0]["utilisation"]["idle_host"].is_null());
    }
}

/// The timeline exports and grtparse count from the capture's start too, and show the
/// inferred STARTs and no zero-length host slices.
#[test]
fn the_exports_of_an_imported_capture_start_at_its_first_event() {
    let imported = imports(&i915_small(), "i915-exports");
    let (_, base) = &imported[2];
    let out = report(base, &["--perfetto", "-"]);
    let c = match tef::check(&out) {
        Ok(c) => c,
        Err(e) => panic!("{}", e.join("\n")),
    };
    let slices = c.named("X", |_| true);
    let jobs: Vec<&&Value> = slices
        .iter()
        .filter(|e| {
            e["cat"] == "job,inferred" && !e["name"].as_str().unwrap().starts_with("queued ")
        })
        .collect();
    assert_eq!(jobs.len(), 40);
    assert!(jobs
        .iter()
        .all(|e| e["name"].as_str().unwrap().ends_with(" (inferred)")));
    let first = jobs.iter().filter_map(|e| tef::ns(&e["ts"])).min().unwrap();
    assert_eq!(first, 0, "slices count from the capture's start");
    assert!(
        c.named("X", |n| n.starts_with("submit ")).is_empty(),
        "a submit slice of an unmeasured submit_host"
    );

    let html = report(base, &["--html", "-"]);
    let open = "<script id=\"grt-data\" type=\"application/json\">";
    let a = html.find(open).unwrap() + open.len();
    let b = a + html[a..].find("</script>").unwrap();
    let d: Value = serde_json::from_str(&html[a..b]).unwrap();
    assert_eq!(d["span_ns"], 39_800_000);
    let jobs = d["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 40);
    let col = |name| common::page_column(&d, name);
    let (start, flags, submit_host) = (col("start_ns"), col("flags"), col("submit_host_ns"));
    for j in jobs {
        assert!(
            j[start].as_i64().unwrap() >= 0,
            "started in the capture: {j}"
        );
        assert!(j[flags].as_u64().unwrap() & 1 == 1, "flagged inferred: {j}");
        assert!(j[submit_host].is_null(), "submit_host unmeasured: {j}");
    }
    assert_eq!(jobs[0][start], 0);
}

/// A task (comm, pid) switches to the idle task of `cpu` at `t`.
fn to_idle(c: &mut Capture, cpu: u32, t: u64, (comm, pid): (&str, u32)) {
    let idle = format!("swapper/{cpu}");
    c.ev(
        cpu,
        t,
        comm,
        pid,
        "sched_switch",
        &[("prev_pid", pid.into()), ("next_pid", 0)],
        &[("prev_comm", comm), ("next_comm", &idle)],
    );
}

/// The scheduler's finished fence `fence` of a job on `ring` signalled 2 µs after the job
/// was done at `done`.
fn finished_signal(c: &mut Capture, done: u64, fence: (u64, u64), ring: &str) {
    c.ev(
        1,
        done + 2 * US,
        "",
        0,
        "dma_fence_signaled",
        &[("context", fence.0), ("seqno", fence.1)],
        &[("driver", "drm_sched"), ("timeline", ring)],
    );
}

/// Adds a drm_sched 6.17 job's scheduler events on `dev`/`ring`.
#[allow(clippy::too_many_arguments)]
fn sched617(
    c: &mut Capture,
    cpu: u32,
    ring: &str,
    fence: (u64, u64),
    client: u64,
    queue: u64,
    run: u64,
    done: u64,
) {
    let f = [
        ("fence_context", fence.0),
        ("fence_seqno", fence.1),
        ("client_id", client),
        ("job_count", 0),
        ("hw_job_count", 1),
    ];
    let s = [("name", ring), ("dev", "0000:03:00.0")];
    c.ev(
        cpu,
        queue,
        "game",
        4000 + client as u32,
        "drm_sched_job_queue",
        &f,
        &s,
    );
    c.ev(cpu, run, "gfx_0.0.0", 300, "drm_sched_job_run", &f, &s);
    c.ev(
        1,
        done,
        "",
        0,
        "drm_sched_job_done",
        &[("fence_context", fence.0), ("fence_seqno", fence.1)],
        &[],
    );
    finished_signal(c, done, fence, ring);
}

/// amdgpu on a 6.17+ kernel, 20 frames of 4 ms: an upload on sdma0 (fence context 200), the
/// game's gfx job (context 100) waiting for it host-side (`drm_sched_job_unschedulable`),
/// and a compositor job (context 101) handed to the gfx ring while the game's job runs, with
/// a GPU-side pipeline sync on it (`amdgpu_ib_pipe_sync`, no job id since 6.17); the app
/// waits on the compositor's fence; scheduler switches interleaved.
fn amdgpu617() -> Capture {
    let mut c = Capture::new("6.17", 2);
    for k in 1..=20u64 {
        let f = T0 + (k - 1) * 4 * MS;
        sched617(
            &mut c,
            0,
            "sdma0",
            (200, k),
            7,
            f,
            f + 10 * US,
            f + 300 * US,
        );
        // The game's job depends on the upload.
        let gq = [
            ("fence_context", 100),
            ("fence_seqno", k),
            ("ctx", 200),
            ("seqno", k),
        ];
        c.ev(
            0,
            f + 20 * US,
            "game",
            4007,
            "drm_sched_job_add_dep",
            &gq,
            &[],
        );
        c.ev(
            0,
            f + 25 * US,
            "gfx_0.0.0",
            300,
            "drm_sched_job_unschedulable",
            &gq,
            &[],
        );
        sched617(
            &mut c,
            0,
            "gfx_0.0.0",
            (100, k),
            7,
            f + 20 * US,
            f + 317 * US,
            f + 2817 * US,
        );
        // The compositor's job, on the gfx ring behind the game's.
        sched617(
            &mut c,
            0,
            "gfx_0.0.0",
            (101, k),
            8,
            f + 2 * MS,
            f + 2 * MS + 5 * US,
            f + 3317 * US,
        );
        c.ev(
            0,
            f + 2 * MS + 6 * US,
            "gfx_0.0.0",
            300,
            "amdgpu_ib_pipe_sync",
            &[("ctx", 100), ("seqno", k), ("fence", 0xffff_8881_2345_6780)],
            &[("ring", "gfx_0.0.0")],
        );
        let w = [("context", 101), ("seqno", k)];
        let names = [("driver", "drm_sched"), ("timeline", "gfx_0.0.0")];
        c.ev(
            0,
            f + 2 * MS + 50 * US,
            "compositor",
            4008,
            "dma_fence_wait_start",
            &w,
            &names,
        );
        c.ev(
            0,
            f + 3320 * US,
            "compositor",
            4008,
            "dma_fence_wait_end",
            &w,
            &names,
        );
        to_idle(&mut c, 1, f + 3 * MS, ("kworker/1:0", 55));
    }
    c
}

/// The amdgpu 6.17 capture: the pipeline sync is a wait of the GPU once it reaches the
/// compositor's job, which it does when the game's job ends (2 µs before the game's fence
/// signals), not when the job was handed to the driver 0.8 ms earlier: no dep-wait, no
/// GPU-side dependency share of the ring's busy time. The game's host-side wait for the
/// upload is a dependency: the gfx ring's idle time before each game job is split there.
#[test]
fn amdgpu_617_waits_are_where_the_gpu_and_the_scheduler_waited() {
    for (input, base) in imports(&amdgpu617(), "amdgpu617") {
        let text = report(&base, &[]);
        let ctx101 = line_after(&text, "ctx 101:", "gpu_wait");
        assert_eq!(
            ctx101.split_whitespace().collect::<Vec<_>>()[1..4],
            ["20", "0.002000", "0.002000"],
            "{input}: {ctx101}"
        );
        let ctx100 = line_after(&text, "ctx 100:", "gpu_wait");
        assert!(
            ctx100.contains(" 20  0.277000  0.277000"),
            "{input}: {ctx100}"
        );
        let classes = line_after(&text, "Blocking Classes", "Overall");
        assert!(classes.contains("0 (0.00%)"), "{input}: {classes}");
        let verdict = text
            .lines()
            .find(|l| l.starts_with("ring 1 (0000:03:00.0/gfx_0.0.0): GPU-bound"))
            .unwrap_or_else(|| panic!("{input}: {text}"));
        // 20 x (2.5 + 0.5) ms busy in 79.32 ms; before each game job 292 µs of its wait
        // for the upload.
        assert!(
            verdict.contains("busy 75.64% (own work 75.59%, GPU-side dependency waits 0.05%)"),
            "{input}: {verdict}"
        );
        assert!(verdict.contains("dependency 7.36%"), "{input}: {verdict}");
        let jobs = report(&base, &["--jobs", "-q"]);
        let game: Vec<&str> = jobs
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some("100"))
            .collect();
        assert_eq!(game.len(), 20);
        for (k, l) in game.iter().enumerate() {
            assert!(
                l.ends_with(&format!(" 200/0/{}", k + 1)),
                "{input}: the upload blocked it: {l}"
            );
        }
    }
}

/// Adds a 6.12 drm_sched job (entity pointer, finished-fence pointer, job id); amdgpu's
/// `amdgpu_cs_ioctl` first names it by its finished fence `fence`.
#[allow(clippy::too_many_arguments)]
fn sched612(
    c: &mut Capture,
    ring: &str,
    entity: u64,
    id: u64,
    fence: (u64, u64),
    queue: u64,
    run: u64,
    done: u64,
) {
    let ptr = 0xffff_8881_0000_0000 + id * 0x100 + (entity & 0xff);
    c.ev(
        0,
        queue - 2 * US,
        "game",
        4007,
        "amdgpu_cs_ioctl",
        &[
            ("sched_job_id", id),
            ("context", fence.0),
            ("seqno", fence.1),
            ("fence", ptr),
            ("num_ibs", 1),
        ],
        &[("timeline", ring), ("ring", ring)],
    );
    let f = [
        ("entity", entity),
        ("fence", ptr),
        ("id", id),
        ("hw_job_count", 1),
    ];
    c.ev(
        0,
        queue,
        "game",
        4007,
        "drm_sched_job",
        &f,
        &[("name", ring)],
    );
    c.ev(0, run, ring, 300, "drm_run_job", &f, &[("name", ring)]);
    c.ev(
        0,
        run + US,
        ring,
        300,
        "amdgpu_sched_run_job",
        &[
            ("sched_job_id", id),
            ("context", fence.0),
            ("seqno", fence.1),
            ("num_ibs", 1),
        ],
        &[("timeline", ring), ("ring", ring)],
    );
    c.ev(
        1,
        done,
        "",
        0,
        "drm_sched_process_job",
        &[("fence", ptr)],
        &[],
    );
    finished_signal(c, done, fence, ring);
}

/// amdgpu on 6.12, 10 frames of 5 ms: async compute (context 300 on comp_1.0.0) and the
/// game's gfx job (context 100) that waits for it host-side (`drm_sched_job_wait_dep`),
/// then a second app's gfx job (context 110, another VM: `amdgpu_vm_flush`) behind it with
/// a pipeline sync; a VM fault interrupt in frame 5; 4 events lost on CPU 1 in frame 8.
fn amdgpu612() -> Capture {
    let mut c = Capture::new("6.12", 2);
    let (ent_c, ent_g, ent_o) = (
        0xffff_8881_0a00_0010,
        0xffff_8881_0a00_0020,
        0xffff_8881_0a00_0030,
    );
    for k in 1..=10u64 {
        let f = T0 + (k - 1) * 5 * MS;
        sched612(
            &mut c,
            "comp_1.0.0",
            ent_c,
            3 * k,
            (300, k),
            f + 100 * US,
            f + 110 * US,
            f + 1110 * US,
        );
        // The game's job waits for the compute result.
        c.ev(
            0,
            f + 125 * US,
            "gfx_0.0.0",
            300,
            "drm_sched_job_wait_dep",
            &[
                ("id", 3 * k + 1),
                ("ctx", 300),
                ("seqno", k),
                ("fence", 0xffff_8881_0000_0300 + 3 * k * 0x100),
            ],
            &[("name", "gfx_0.0.0")],
        );
        sched612(
            &mut c,
            "gfx_0.0.0",
            ent_g,
            3 * k + 1,
            (100, k),
            f + 120 * US,
            f + 1120 * US,
            f + 3120 * US,
        );
        c.ev(
            0,
            f + 1121 * US,
            "gfx_0.0.0",
            300,
            "amdgpu_vm_flush",
            &[("vmid", 3), ("vm_hub", 0), ("pd_addr", 0x4000)],
            &[("ring", "gfx_0.0.0")],
        );
        // Another app's job, handed over while the game's runs: the GPU syncs on it.
        sched612(
            &mut c,
            "gfx_0.0.0",
            ent_o,
            3 * k + 2,
            (110, k),
            f + 2 * MS,
            f + 2010 * US,
            f + 3620 * US,
        );
        c.ev(
            0,
            f + 2011 * US,
            "gfx_0.0.0",
            300,
            "amdgpu_vm_flush",
            &[("vmid", 5), ("vm_hub", 0), ("pd_addr", 0x8000)],
            &[("ring", "gfx_0.0.0")],
        );
        c.ev(
            0,
            f + 2012 * US,
            "gfx_0.0.0",
            300,
            "amdgpu_ib_pipe_sync",
            &[
                ("id", 3 * k + 2),
                ("ctx", 100),
                ("seqno", k),
                ("fence", 0xffff_8881_0000_0400),
            ],
            &[("ring", "gfx_0.0.0")],
        );
        if k == 5 {
            c.ev(
                1,
                f + 2500 * US,
                "",
                0,
                "amdgpu_iv",
                &[
                    ("client_id", 0x1b),
                    ("src_id", 0),
                    ("vmid", 5),
                    ("pasid", 0x8001),
                    ("ring_id", 0),
                ],
                &[],
            );
        }
        if k == 8 {
            c.lost(1, f + 1000 * US, Some(4));
        }
    }
    c
}

/// amdgpu on 6.12: a job `amdgpu_cs_ioctl` named by its fence owns that fence (the
/// game's jobs waited for the compute jobs, recorded jobs, not "foreign fences"); a loss
/// makes incomplete only the jobs in flight across it (those that had ended waited for
/// nothing more); the fault interrupt, which names no job, is said to be unattributed.
#[test]
fn amdgpu_612_names_the_jobs_waited_for_and_keeps_jobs_a_loss_missed() {
    for (input, base) in imports(&amdgpu612(), "amdgpu612") {
        let text = report(&base, &["--top", "1"]);
        assert!(
            text.contains("30 job(s): 28 complete, 2 incomplete"),
            "{input}: {}",
            text.lines().next().unwrap()
        );
        assert!(
            text.contains("grtreport: 4 records lost in 1 gap(s)"),
            "{input}"
        );
        assert!(
            text.contains("-> waited 0.987000 ms on ctx 300 ring 0 seqno 1 (queue 0.000000 ms, exec 1.000000 ms, -)"),
            "{input}: {text}"
        );
        assert!(
            text.contains("1 VM fault(s) named no ring with jobs"),
            "{input}"
        );
        let jobs = report(&base, &["--jobs", "-q"]);
        let incomplete: Vec<(&str, &str)> = jobs
            .lines()
            .skip(1)
            .filter(|l| l.contains("incomplete"))
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w[1], w[3])
            })
            .collect();
        // Frame 8's compute job and the game's job waiting for it were in flight when the
        // events were lost; frame 7's had ended.
        assert_eq!(incomplete, [("300", "8"), ("100", "8")], "{input}");
        let verdict = text
            .lines()
            .find(|l| l.starts_with("ring 1 (gfx_0.0.0): GPU-bound"))
            .unwrap_or_else(|| panic!("{input}: {text}"));
        assert!(verdict.contains("dependency 20.51%"), "{input}: {verdict}");
    }
}

/// An i915 request event: cpu, time, the event's name after `i915_request_`, engine (class,
/// instance), fence ctx, seqno (which every one carries) and the fields the event adds.
type I915Event<'a> = (
    u32,
    u64,
    &'a str,
    (u64, u64),
    u64,
    u64,
    &'a [(&'a str, u64)],
);

/// i915 request events of card 0, in the order given: a row a line, so that a capture reads
/// as the trace.
fn i915(c: &mut Capture, events: &[I915Event]) {
    for &(cpu, t, event, engine, ctx, seqno, extra) in events {
        let mut f = vec![
            ("dev", 0),
            ("class", engine.0),
            ("instance", engine.1),
            ("ctx", ctx),
            ("seqno", seqno),
            ("tail", 0x40),
        ];
        f.extend_from_slice(extra);
        let (comm, pid) = if cpu == 1 {
            ("", 0)
        } else {
            ("glxgears", 2100)
        };
        c.ev(cpu, t, comm, pid, &format!("i915_request_{event}"), &f, &[]);
    }
}

fn signaled(c: &mut Capture, t: u64, ctx: u64, seqno: u64) {
    c.ev(
        1,
        t,
        "",
        0,
        "dma_fence_signaled",
        &[("context", ctx), ("seqno", seqno)],
        &[("driver", "i915"), ("timeline", "glxgears[2100]")],
    );
}

/// i915 without the low-level tracepoints, with dma_fence: 10 requests of one context on
/// rcs0, each added every 2 ms, completing (fence signalled) 1.2 ms later, retired by the
/// CPU 3 ms after that (at the next-but-one submission).
fn i915_signalled() -> Capture {
    let mut c = Capture::new("6.12", 2);
    c.without(&I915_LOW_LEVEL);
    for k in 1..=10u64 {
        let t = T0 + (k - 1) * 2 * MS;
        i915(&mut c, &[(0, t, "add", (0, 0), 40, 2 * k, &[])]);
        signaled(&mut c, t + 1200 * US, 40, 2 * k);
        i915(
            &mut c,
            &[(0, t + 4200 * US, "retire", (0, 0), 40, 2 * k, &[])],
        );
    }
    c
}

/// A request ends when its fence signals (i915 saw it complete), not when the CPU retires
/// it later: exec 1.2 ms, not 4.2 ms; busy 60%, not 100%.
#[test]
fn i915_requests_end_at_their_fence_signal_not_at_retire() {
    for (input, base) in imports(&i915_signalled(), "i915-signalled") {
        let text = report(&base, &[]);
        let exec = line_after(&text, "All Rings", "exec");
        assert!(exec.contains(" 10  1.200000  1.200000"), "{input}: {exec}");
        let ring = line_after(&text, "Utilisation", "ring 0 (card0/rcs0)");
        // 10 x 1.2 ms in 22.2 ms (the last retire ends the capture).
        assert!(ring.contains("54.05%"), "{input}: {ring}");
        assert!(!text.contains("END at i915_request_retire"), "{input}");
    }
}

/// i915 with the low-level tracepoints, execlists: request B (context 30) preempts A
/// (context 20): A goes out uncompleted, B runs, A comes back in and completes.
fn i915_execlists() -> Capture {
    let mut c = Capture::new("6.12", 2);
    let e = (0, 0);
    let t = T0;
    // B goes in at a higher priority than A's
    let b_in = [("port", 0), ("prio", 2)];
    i915(
        &mut c,
        &[
            (0, t, "add", e, 20, 2, &[]),
            (0, t + 10 * US, "submit", e, 20, 2, &[]),
            (0, t + 20 * US, "in", e, 20, 2, &[("port", 0)]),
            (0, t + 990 * US, "add", e, 30, 4, &[]),
            (0, t + 995 * US, "submit", e, 30, 4, &[]),
            (1, t + 1000 * US, "out", e, 20, 2, &[("completed", 0)]),
            (1, t + 1000 * US, "in", e, 30, 4, &b_in),
            (1, t + 1490 * US, "out", e, 30, 4, &[("completed", 1)]),
        ],
    );
    signaled(&mut c, t + 1492 * US, 30, 4);
    i915(
        &mut c,
        &[
            (1, t + 1500 * US, "in", e, 20, 2, &[("port", 0)]),
            (1, t + 3000 * US, "out", e, 20, 2, &[("completed", 1)]),
        ],
    );
    signaled(&mut c, t + 3005 * US, 20, 2);
    i915(
        &mut c,
        &[
            (0, t + 8 * MS, "retire", e, 30, 4, &[]),
            (0, t + 8 * MS, "retire", e, 20, 2, &[]),
        ],
    );
    c
}

/// xe on 6.12: two exec queues (render guc_id 3, copy guc_id 7) on one device, 8 jobs each;
/// the copy queue's jobs overlap (handed to the GuC while the previous one runs); the
/// scheduler's own events of the queues are in the capture too (counted, not doubled); a
/// page fault.
fn xe612() -> Capture {
    let mut c = Capture::new("6.12", 2);
    let dev = [("dev", "0000:00:02.0")];
    for (class, guc) in [(0u64, 3u64), (3, 7)] {
        c.ev(
            0,
            T0,
            "app",
            3000,
            "xe_exec_queue_create",
            &[
                ("class", class),
                ("logical_mask", 1),
                ("width", 1),
                ("guc_id", guc),
            ],
            &dev,
        );
    }
    for k in 1..=8u64 {
        let f = T0 + 100 * US + (k - 1) * 3 * MS;
        for (guc, ctx, run, len) in [(3u64, 0x20u64, 0u64, 1500u64), (7, 0x21, 200, 1000)] {
            let fence = 0xffff_8881_7000_0000 + guc * 0x1000 + k * 0x10;
            let t = f + run * US;
            let hw = [("ctx", ctx), ("seqno", k), ("fence", fence)];
            c.ev(0, t, "app", 3000, "xe_hw_fence_create", &hw, &dev);
            let job = [
                ("seqno", k),
                ("lrc_seqno", k),
                ("guc_id", guc),
                ("fence", fence),
            ];
            c.ev(0, t + 5 * US, "app", 3000, "xe_sched_job_exec", &job, &dev);
            // The DRM scheduler's view of the same job (its ring is named by the queue).
            let name = if guc == 3 { "rcs3" } else { "bcs7" };
            let sj = [
                ("entity", 0xffff_8881_6000_0000 + guc),
                ("fence", fence + 1),
                ("id", k),
                ("hw_job_count", 1),
            ];
            c.ev(
                0,
                t + 6 * US,
                "app",
                3000,
                "drm_sched_job",
                &sj,
                &[("name", name)],
            );
            c.ev(
                0,
                t + 8 * US,
                name,
                310,
                "drm_run_job",
                &sj,
                &[("name", name)],
            );
            c.ev(0, t + 9 * US, name, 310, "xe_sched_job_run", &job, &dev);
            // Copy jobs take longer than their spacing on the copy queue: the next waits.
            let end = if guc == 7 {
                t + 9 * US + 3100 * US
            } else {
                t + 9 * US + len * US
            };
            c.ev(1, end, "", 0, "xe_hw_fence_signal", &hw, &dev);
            c.ev(
                1,
                end + US,
                "",
                0,
                "drm_sched_process_job",
                &[("fence", fence + 1)],
                &[],
            );
        }
        if k == 4 {
            c.ev(
                1,
                f + 500 * US,
                "",
                0,
                "xe_vma_pagefault",
                &[("asid", 9), ("start", 0x1_0000)],
                &dev,
            );
        }
    }
    c
}

/// msm (Adreno) on 6.12: 6 submits on ring 0, the always-on counter at 19.2 MHz: each
/// flush pairs the CPU time with the counter; the retire event, handled later by a worker,
/// carries the GPU's start and end ticks. The scheduler's events of `ring0` are there too.
fn msm612() -> Capture {
    let mut c = Capture::new("6.12", 2);
    // Counter value at T0.
    let tick0 = 1_000_000u64;
    let ticks = |ns: u64| tick0 + ns * 192 / 10_000;
    for k in 1..=6u64 {
        let f = (k - 1) * 4 * MS;
        let t = T0 + f;
        let sj = [
            ("entity", 0xffff_8881_5000_0000),
            ("fence", 0xffff_8881_5100_0000 + k),
            ("id", k),
            ("hw_job_count", 1),
        ];
        c.ev(
            0,
            t,
            "gnome-shell",
            1500,
            "drm_sched_job",
            &sj,
            &[("name", "ring0")],
        );
        c.ev(
            0,
            t + 10 * US,
            "ring0",
            200,
            "drm_run_job",
            &sj,
            &[("name", "ring0")],
        );
        c.ev(
            0,
            t + 20 * US,
            "ring0",
            200,
            "msm_gpu_submit_flush",
            &[
                ("pid", 1500),
                ("id", k),
                ("ringid", 0),
                ("seqno", k),
                ("ticks", ticks(f + 20 * US)),
            ],
            &[],
        );
        // GPU runs 50 us after the doorbell for 2 ms; the retire worker sees it 300 us later.
        let (gs, ge) = (f + 70 * US, f + 2070 * US);
        c.ev(
            1,
            T0 + ge + 300 * US,
            "kworker/1:2",
            80,
            "msm_gpu_submit_retired",
            &[
                ("pid", 1500),
                ("id", k),
                ("ringid", 0),
                ("seqno", k),
                ("elapsed", 2_000_000),
                ("clock", 500),
                ("start_ticks", ticks(gs)),
                ("end_ticks", ticks(ge)),
            ],
            &[],
        );
        c.ev(
            1,
            T0 + ge + 310 * US,
            "kworker/1:2",
            80,
            "drm_sched_process_job",
            &[("fence", 0xffff_8881_5100_0000 + k)],
            &[],
        );
    }
    c
}

/// v3d on 6.12 (Raspberry Pi): 5 frames of a bin job then a render job (`v3d_submit_cl` is
/// traced when the scheduler runs the job: the render job once binning ended), a TFU job in
/// frame 3, and a GPU reset in frame 4 while its render job runs.
fn v3d612() -> Capture {
    let mut c = Capture::new("6.12", 2);
    for k in 1..=5u64 {
        let t = T0 + (k - 1) * 10 * MS;
        let cl = |r: u64| {
            [
                ("dev", 1),
                ("is_render", r),
                ("seqno", 2 * k + r),
                ("ctnqba", 0x1000),
                ("ctnqea", 0x2000),
            ]
        };
        c.ev(0, t, "glmark2", 900, "v3d_submit_cl", &cl(0), &[]);
        c.ev(
            1,
            t + 1500 * US,
            "",
            0,
            "v3d_bcl_irq",
            &[("dev", 1), ("seqno", 2 * k)],
            &[],
        );
        c.ev(
            0,
            t + 1510 * US,
            "v3d_render",
            901,
            "v3d_submit_cl",
            &cl(1),
            &[],
        );
        c.ev(
            1,
            t + 5510 * US,
            "",
            0,
            "v3d_rcl_irq",
            &[("dev", 1), ("seqno", 2 * k + 1)],
            &[],
        );
        if k == 3 {
            c.ev(
                0,
                t + 6 * MS,
                "glmark2",
                900,
                "v3d_submit_tfu",
                &[("dev", 1), ("seqno", 100)],
                &[],
            );
            c.ev(
                1,
                t + 6600 * US,
                "",
                0,
                "v3d_tfu_irq",
                &[("dev", 1), ("seqno", 100)],
                &[],
            );
        }
        if k == 4 {
            c.ev(1, t + 3 * MS, "", 0, "v3d_reset_begin", &[("dev", 1)], &[]);
        }
    }
    c
}

/// virtio-gpu on 6.12 (a QEMU guest): fenced commands on the control queue, each answered
/// by the host; the fence of every command signals after its response; a cursor update on
/// the cursor queue (no response, no job); one response is an error.
fn virtio612() -> Capture {
    let mut c = Capture::new("6.12", 2);
    for k in 1..=12u64 {
        let t = T0 + (k - 1) * MS;
        let q = |free: u64, ty: u64| {
            [
                ("dev", 0),
                ("vq", 0),
                ("type", ty),
                ("flags", 1),
                ("fence_id", k),
                ("ctx_id", 2),
                ("num_free", free),
                ("seqno", k),
            ]
        };
        let name = [("name", "control")];
        c.ev(
            0,
            t,
            "Xorg",
            700,
            "virtio_gpu_cmd_queue",
            &q(200, 0x207),
            &name,
        );
        let resp = if k == 7 { 0x1203 } else { 0x1100 };
        c.ev(
            1,
            t + 400 * US,
            "kworker/1:1",
            60,
            "virtio_gpu_cmd_response",
            &q(201, resp),
            &name,
        );
        c.ev(
            1,
            t + 410 * US,
            "kworker/1:1",
            60,
            "dma_fence_signaled",
            &[("context", 5), ("seqno", k)],
            &[("driver", "virtio_gpu"), ("timeline", "controlq")],
        );
        if k % 4 == 0 {
            let cur = [
                ("dev", 0),
                ("vq", 1),
                ("type", 0x300),
                ("flags", 0),
                ("ctx_id", 0),
                ("seqno", 0),
            ];
            c.ev(
                0,
                t + 500 * US,
                "Xorg",
                700,
                "virtio_gpu_cmd_queue",
                &cur,
                &[("name", "cursor")],
            );
        }
    }
    c
}

/// A loss the ring buffer did not count (a page flagged with missed events but no stored
/// count; `CPU:1 [LOST EVENTS]` in tracefs text, `CPU:1 [EVENTS DROPPED]` in trace-cmd's):
/// imported, not refused as an unknown line, and reported as lost records of unknown
/// number, never "0 records lost".
#[test]
fn a_loss_without_a_count_is_said_to_be_of_unknown_size() {
    let mut c = i915_small();
    c.lost(1, T0 + 20 * MS + 800 * US, None);
    for (input, base) in imports(&c, "uncounted") {
        let text = report(&base, &[]);
        assert!(
            text.contains("grtreport: 0 records lost (and an unknown number in 1: the source did not count them) in 1 gap(s)"),
            "{input}: {text}"
        );
        // The request whose retire came right after the loss was in flight across it.
        assert!(
            text.contains("40 job(s): 39 complete, 1 incomplete"),
            "{input}"
        );
    }
}

/// The other drivers' captures, read figure by figure against the events.
#[test]
fn xe_msm_v3d_virtio_i915_captures_report_what_happened() {
    // xe: render queue busy 8 x 1.5 ms, copy queue back to back (each job handed over
    // 0.1 ms before the previous ended) in 24.41 ms; the scheduler's copies of the jobs
    // are not counted again; the fault names no job.
    for (input, base) in imports(&xe612(), "xe") {
        let text = report(&base, &[]);
        assert!(
            text.contains("16 job(s): 16 complete, 0 incomplete"),
            "{input}"
        );
        assert!(text.contains("source: driver xe, card0"), "{input}");
        let rcs = line_after(&text, "Utilisation", "ring 0 (0000:00:02.0/rcs-q3)");
        assert!(rcs.contains("49.16%   327.7"), "{input}: {rcs}");
        let bcs = line_after(&text, "Utilisation", "ring 1 (0000:00:02.0/bcs-q7)");
        assert!(bcs.contains("98.73%   327.7"), "{input}: {bcs}");
        let q = line_after(&text, "ring 1 (0000:00:02.0/bcs-q7):", "queue");
        assert!(q.contains("8  0.000000  0.087500"), "{input}: {q}");
        assert!(
            text.contains("1 VM fault(s) named no ring with jobs"),
            "{input}"
        );
    }
    // msm: START and END are the GPU's own (always-on counter), not inferred: queue 50 us
    // from the doorbell, exec 2 ms, judged for queue-wait and exec-tail.
    for (input, base) in imports(&msm612(), "msm") {
        let text = report(&base, &[]);
        assert!(
            text.contains("6 job(s): 6 complete, 0 incomplete, 0 with inferred START"),
            "{input}"
        );
        let q = line_after(&text, "All Rings", "queue");
        assert!(q.contains(" 6  0.050000  0.050000"), "{input}: {q}");
        let x = line_after(&text, "All Rings", "exec");
        assert!(x.contains(" 6  2.000000  2.000000"), "{input}: {x}");
        let classes = line_after(&text, "Blocking Classes", "Overall");
        assert!(
            classes.contains("-   0 (0.00%)  0 (0.00%)"),
            "{input}: {classes}"
        );
    }
    // v3d: the reset failed the render job running on the device.
    for (input, base) in imports(&v3d612(), "v3d") {
        let text = report(&base, &[]);
        assert!(
            text.contains(
                "11 job(s): 11 complete, 0 incomplete, 11 with inferred START, 1 with an error"
            ),
            "{input}: {}",
            text.lines().next().unwrap()
        );
        let jobs = report(&base, &["--jobs", "-q"]);
        let failed: Vec<&str> = jobs.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(failed.len(), 1, "{input}: {jobs}");
        assert!(
            failed[0].split_whitespace().nth(3) == Some("9"),
            "{input}: {}",
            failed[0]
        );
    }
    // virtio-gpu: 12 commands of 0.4 ms in 11.5 ms, one answered with an error; the
    // cursor update is no job.
    for (input, base) in imports(&virtio612(), "virtio") {
        let text = report(&base, &[]);
        assert!(
            text.contains(
                "12 job(s): 12 complete, 0 incomplete, 12 with inferred START, 1 with an error"
            ),
            "{input}"
        );
        let ring = line_after(&text, "Utilisation", "ring 0 (virtio0/control)");
        assert!(ring.contains("41.74%  1043.5"), "{input}: {ring}");
    }
    // i915 execlists: the preempted request's exec runs from its first `in` to its
    // completion (2.98 ms, its 0.5 ms off the GPU included: preemption is not traced),
    // the preempting one from its `in` to its `out`.
    for (input, base) in imports(&i915_execlists(), "i915-el") {
        let jobs = report(&base, &["--jobs", "-q"]);
        let exec = |ctx: &str| {
            jobs.lines()
                .find(|l| l.split_whitespace().nth(1) == Some(ctx))
                .and_then(|l| l.split_whitespace().nth(6).map(str::to_string))
                .unwrap()
        };
        assert_eq!(exec("20"), "2.980000", "{input}");
        assert_eq!(exec("30"), "0.490000", "{input}");
    }
}

/// A text capture of a 4.19 kernel (i915 `ring=` lines) with lines of an i915 layout no
/// kernel printed: the known ones become jobs on one ring per engine, the others are not
/// used, and the report's header says so, naming them.
#[test]
fn a_capture_partly_of_an_unknown_layout_says_so_in_the_report_header() {
    let d = dir("not-mapped");
    let mut text = String::new();
    for i in 0..4u64 {
        let (ring, ctx) = if i % 2 == 0 { (0, 107) } else { (2, 108) };
        let t = 1000.0 + i as f64 * 0.001;
        text.push_str(&format!(
            " app-100 (  100) [000] d..2 {t:.6}: i915_request_add: dev=0, hw_id=48, ring={ring}, ctx={ctx}, seqno={}, global=0\n",
            i / 2 + 1
        ));
        text.push_str(&format!(
            " <idle>-0 (-----) [000] d.h2 {:.6}: dma_fence_signaled: driver=i915 timeline=x context={ctx} seqno={}\n",
            t + 0.0005,
            i / 2 + 1
        ));
        text.push_str(&format!(
            " app-100 (  100) [000] d..2 {:.6}: i915_request_add: dev=0, hw_id=48, ctx=109, seqno={}\n",
            t + 0.0006,
            i + 1
        ));
    }
    let input = d.join("old.txt");
    std::fs::write(&input, &text).unwrap();
    let base = d.join("old");
    common::import(&input, &base).unwrap();
    let r = report(&base, &[]);
    assert!(
        r.contains("grtreport: part of the capture was not used: 4 GPU event(s) of a layout the import does not know (i915_request_add 4: format with fields dev, hw_id, ctx, seqno is not known)"),
        "{r}"
    );
    let j = json(&base);
    assert_eq!(j["source"]["inferred_start_jobs"], 4, "{j}");
}
