//! The capture corpus (fixtures/import/captures): one small capture per old layout and per
//! text container, written from the kernels' format definitions (the `upstream-7.3-*` ones
//! are excerpts of real recordings: tracefs `trace` text of Linux 7.3 with the upstream
//! series under QEMU, the virtio workload and the drm_sched KUnit suites of two boots, lines
//! kept in time order), each with a golden job
//! table (`<capture>.golden`, checked by hand once): every job's ring, key, hand-off, START
//! (inferred or not), END and exec time, the records per code, and what was not mapped.
//! `GRT_BLESS=1` rewrites the goldens (then read them again by hand).

mod common;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use common::{Collect, Out};
use grtrace_format::abi::eflag;
use grtrace_ftrace::text::{unwrap_container, TextImport};

/// A job's key as (ring, ctx, seqno).
type JobKey = (u32, u32, u64);
/// Per job: code name -> (first time, flags).
type JobTimes = BTreeMap<JobKey, BTreeMap<String, (u64, u16)>>;

/// The job table of one capture.
fn table(data: &[u8]) -> String {
    let (source, text) = match unwrap_container(data) {
        Some((c, t)) => (c.name(), t),
        None => ("text", data.to_vec()),
    };
    let mut ti = TextImport::for_text(&text);
    let mut c = Collect::default();
    ti.run(&text[..], &mut c).expect("imports");
    let mut out = format!("source: {source}\n");
    let rings: BTreeMap<u32, String> = c.rings().into_iter().collect();
    // jobs in order of first appearance: (ring, ctx, seqno) -> (code -> time, flags)
    let mut order: Vec<JobKey> = Vec::new();
    let mut times: JobTimes = BTreeMap::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (code, t, (ctx, ring, seqno), flags, _) in c.events() {
        *counts.entry(code.clone()).or_default() += 1;
        if !matches!(code.as_str(), "QUEUE" | "SUBMIT" | "START" | "END") {
            continue;
        }
        let k = (ring, ctx, seqno);
        if !order.contains(&k) {
            order.push(k);
        }
        times
            .entry(k)
            .or_default()
            .entry(code)
            .or_insert((t, flags));
    }
    let _ = writeln!(
        out,
        "job  ring  ctx  seqno  queue_ns  handoff_ns  start_ns  end_ns  exec_ns"
    );
    for k in &order {
        let m = &times[k];
        let t = |c: &str| m.get(c).map(|x| x.0);
        let show = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        let start = match m.get("START") {
            Some((t, f)) if f & eflag::INFERRED != 0 => format!("{t}(inferred)"),
            Some((t, _)) => t.to_string(),
            None => "-".into(),
        };
        let exec = match (t("START"), t("END")) {
            (Some(s), Some(e)) => (e - s).to_string(),
            _ => "-".into(),
        };
        let ring = rings.get(&k.0).cloned().unwrap_or_else(|| "(none)".into());
        let _ = writeln!(
            out,
            "job  {ring}  {}  {}  {}  {}  {start}  {}  {exec}",
            k.1,
            k.2,
            show(t("QUEUE")),
            show(t("SUBMIT")),
            show(t("END")),
        );
    }
    let codes: Vec<String> = counts.iter().map(|(c, n)| format!("{c}={n}")).collect();
    let _ = writeln!(out, "records: {}", codes.join(" "));
    let lost = c.0.iter().filter(|o| matches!(o, Out::Lost { .. })).count();
    let _ = writeln!(out, "lost markers: {lost}");
    for s in ti.mapper.seen().iter().filter(|s| s.count > 0) {
        if let Some(why) = &s.unusable {
            let _ = writeln!(out, "not mapped: {} {}: {why}", s.name, s.count);
        }
    }
    out
}

#[test]
fn every_capture_gives_its_golden_job_table() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/import/captures");
    let bless = std::env::var_os("GRT_BLESS").is_some();
    let mut seen = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x != "golden"))
        .collect();
    names.sort();
    for p in names {
        let got = table(&std::fs::read(&p).unwrap());
        let golden = p.with_extension(format!(
            "{}.golden",
            p.extension().unwrap().to_string_lossy()
        ));
        if bless {
            std::fs::write(&golden, &got).unwrap();
        }
        let want = std::fs::read_to_string(&golden)
            .unwrap_or_else(|_| panic!("{}: no golden (GRT_BLESS=1 writes it)", p.display()));
        assert_eq!(got, want, "{}", p.display());
        seen += 1;
    }
    assert!(seen >= 9, "{seen} captures");
}

/// The captures of Linux 7.3 with the upstream series (kernel/upstream/) measure COMMIT to
/// SUBMIT and IRQ to END, from the series' kick, hardware-fence and interrupt events; a
/// capture without them does not (IMPORT.md §1, `unmeasured`). A kick without a doorbell
/// (`notify=0`: the device took the command itself) hands off flagged INFERRED, one with a
/// doorbell not.
#[test]
fn the_upstream_series_measures_submits_and_interrupts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/import/captures");
    for (name, measured) in [
        ("upstream-7.3-sched.txt", true),
        ("upstream-7.3-virtio.txt", true),
        ("virtio-latency.txt", false),
    ] {
        let data = std::fs::read(dir.join(name)).unwrap();
        let ti = TextImport::for_text(&data);
        let m = ti.mapper.measures(true);
        assert_eq!((m.submit_host, m.complete), (measured, measured), "{name}");
    }
    let data = std::fs::read(dir.join("upstream-7.3-virtio.txt")).unwrap();
    let mut ti = TextImport::for_text(&data);
    let mut c = Collect::default();
    ti.run(&data[..], &mut c).expect("imports");
    let submit = |seqno: u64| {
        c.events()
            .into_iter()
            .find(|(code, _, k, _, _)| code == "SUBMIT" && k.2 == seqno)
            .map(|(_, t, _, flags, _)| (t, flags & eflag::INFERRED != 0))
    };
    // 105: `virtio_gpu_notify ... seqno=106 ... notify=1` at 10.731494, with a doorbell
    assert_eq!(submit(105), Some((10_731_494_000, false)));
    // 107: `seqno=107 ... notify=0` at 10.731723, no doorbell
    assert_eq!(submit(107), Some((10_731_723_000, true)));
}

/// A kick hands off only its own device's commands, those up to its seqno: two virtio-gpu
/// devices (the layout of `upstream-7.3-virtio.txt`, lines written for two), each kicked on
/// its own; a kick below a command's seqno leaves it waiting.
#[test]
fn a_kick_hands_off_its_own_devices_commands_up_to_its_seqno() {
    let q = |t: &str, dev: u32, seqno: u32| {
        format!(
            "  w-1  [000] ...1.  {t}: virtio_gpu_cmd_queue: vdev={dev} vq=0 name=control \
             type=0x105 flags=0x0 fence_id=0 ctx_id=0 num_free=63 seqno={seqno}\n"
        )
    };
    let kick = |t: &str, dev: u32, seqno: u32| {
        format!(
            "  w-1  [000] ...1.  {t}: virtio_gpu_notify: vdev={dev} vq=0 seqno={seqno} \
             num_free=60 notify=1\n"
        )
    };
    let text = [
        kick("1.000000", 0, 0),
        kick("1.000001", 1, 0),
        q("1.000010", 0, 1),
        q("1.000020", 1, 1),
        q("1.000030", 0, 2),
        kick("1.000040", 1, 1),
        kick("1.000050", 0, 1),
        kick("1.000060", 0, 2),
    ]
    .concat();
    let data = text.as_bytes();
    let mut ti = TextImport::for_text(data);
    let mut c = Collect::default();
    ti.run(data, &mut c).expect("imports");
    let rings: BTreeMap<u32, String> = c.rings().into_iter().collect();
    let submits: Vec<(u64, String, u64)> = c
        .events()
        .into_iter()
        .filter(|(code, ..)| code == "SUBMIT")
        .map(|(_, t, k, _, _)| (t, rings[&k.1].clone(), k.2))
        .collect();
    assert_eq!(
        submits,
        [
            (1_000_040_000, "virtio1/control".to_string(), 1),
            (1_000_050_000, "virtio0/control".to_string(), 1),
            (1_000_060_000, "virtio0/control".to_string(), 2),
        ]
    );
}
