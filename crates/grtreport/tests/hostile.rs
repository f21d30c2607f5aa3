//! Hostile inputs through every stage of the report, as the binary meets them: recordings
//! whose times are damaged (single bits flipped, any u64 a record can carry) through the
//! joiner, utilisation, intervals, the critical path and every export; and outputs that
//! cannot be written (standard output closed or read-only, a closed pipe, a full disk).
//! A panic is exit status 101; every run here must end 0 or 1 with its messages on one line.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use clap::Parser;
use grtrace_format::builder::Builder;
use grtrace_format::{abi, Body, Event, RingNote, StreamHeader};
use proptest::prelude::*;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

fn tmp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-hostile-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const T0: u64 = 1_000_000_000_000;

/// One job's events, in order, on the CPU that recorded them.
#[derive(Clone, Debug)]
struct JobSpec {
    cpu: u32,
    ctx: u32,
    ring: u32,
    seqno: u64,
    /// When the job is committed (ns after T0) and the gaps to SUBMIT, START, END, IRQ.
    at: u64,
    gaps: [u64; 4],
    /// A host-side SYNC window before SUBMIT, a VM fault while running.
    sync: bool,
    fault: bool,
}

/// What is done to one record: its time replaced by a damaged one, or its code changed.
#[derive(Clone, Debug)]
enum Damage {
    FlipTimeBit(usize, u32),
    Time(usize, u64),
    Code(usize, u16),
    Seqno(usize, u64),
}

fn job_spec() -> impl Strategy<Value = JobSpec> {
    (
        0u32..3,
        1u32..4,
        0u32..3,
        0u64..6,
        0u64..2_000_000,
        [0u64..50_000, 0u64..200_000, 1u64..300_000, 0u64..20_000],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(cpu, ctx, ring, seqno, at, gaps, sync, fault)| JobSpec {
            cpu,
            ctx,
            ring,
            seqno,
            at,
            gaps,
            sync,
            fault,
        })
}

fn extreme_time() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1u64),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1u64 << 63),
        Just(T0 - 1),
        any::<u64>(),
    ]
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => (any::<usize>(), 0u32..64).prop_map(|(i, b)| Damage::FlipTimeBit(i, b)),
        2 => (any::<usize>(), extreme_time()).prop_map(|(i, t)| Damage::Time(i, t)),
        1 => (any::<usize>(), 0u16..40).prop_map(|(i, c)| Damage::Code(i, c)),
        1 => (any::<usize>(), prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()])
            .prop_map(|(i, s)| Damage::Seqno(i, s)),
    ]
}

/// One record before encoding: CPU, pid, time, code, key, arg0.
#[derive(Clone, Copy, Debug)]
struct Ev {
    cpu: u32,
    t: u64,
    code: u16,
    ctx: u32,
    ring: u32,
    seqno: u64,
}

fn events(jobs: &[JobSpec]) -> Vec<Ev> {
    let mut v = Vec::new();
    for j in jobs {
        let mut t = T0 + j.at;
        let mut push = |code: Event, t: u64| {
            v.push(Ev {
                cpu: j.cpu,
                t,
                code: code.0,
                ctx: j.ctx,
                ring: j.ring,
                seqno: j.seqno,
            })
        };
        push(Event::COMMIT, t);
        if j.sync {
            push(Event::SYNC_ENTER, t + 1);
            push(Event::SYNC_EXIT, t + j.gaps[0] / 2 + 1);
        }
        t += j.gaps[0];
        push(Event::SUBMIT, t);
        t += j.gaps[1];
        push(Event::START, t);
        if j.fault {
            push(Event::VM_FAULT, t + j.gaps[2] / 3);
            push(Event::VM_RETRY, t + j.gaps[2] / 2);
        }
        t += j.gaps[2];
        push(Event::END, t);
        t += j.gaps[3];
        push(Event::IRQ, t);
    }
    // Each CPU's records in time order, as a recorder writes them, before the damage.
    v.sort_by_key(|e| (e.cpu, e.t));
    v
}

fn apply(v: &mut [Ev], d: &Damage) {
    if v.is_empty() {
        return;
    }
    let n = v.len();
    match *d {
        Damage::FlipTimeBit(i, b) => v[i % n].t ^= 1 << b,
        Damage::Time(i, t) => v[i % n].t = t,
        Damage::Code(i, c) => v[i % n].code = c,
        Damage::Seqno(i, s) => v[i % n].seqno = s,
    }
}

/// The NOTE_RING of ring `ring`, a `gfx` ring of 4096 slots.
fn gfx_ring(ring: u32) -> Body<'static> {
    Body::Ring(RingNote {
        ring,
        engine_class: 1,
        size: 4096,
        unit: abi::RING_UNIT_SLOTS,
        flags: 0,
        name: b"gfx",
    })
}

/// Per-CPU files `BASE.grtrace.<cpu>` (or one merged stream, in the order given: damage
/// and all), each with the ring table and frame markers.
fn write_recording(dir: &Path, evs: &[Ev], merged: bool) -> PathBuf {
    let base = dir.join("run");
    let mut builders: Vec<Builder> = (0..3).map(|_| Builder::new()).collect();
    for (cpu, b) in builders.iter_mut().enumerate() {
        b.on(cpu as u32);
        for ring in 0..3u32 {
            b.record(gfx_ring(ring)).at(T0);
        }
    }
    for (k, e) in evs.iter().enumerate() {
        let b = &mut builders[e.cpu as usize];
        if k % 7 == 0 {
            b.record(Body::Msg { text: b"frame" }).at(e.t);
        }
        b.pid(100 + e.ctx)
            .event(Event(e.code))
            .at(e.t)
            .job(e.ctx, e.ring, e.seqno)
            .args(0x40, 8, 64, 0);
    }
    if merged {
        // Kernel numbering is per CPU: keep each record's own.
        let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "virtio_gpu");
        h.flags = abi::STREAM_MERGED;
        let recs: Vec<_> = builders.iter().flat_map(|b| b.records().to_vec()).collect();
        let mut w = Builder::unnumbered();
        for (s, body) in recs {
            w.on(s.cpu).pid(s.pid).record(body).at(s.time_ns).seq(s.seq);
        }
        std::fs::write(&base, w.stream(&h)).unwrap();
        return base;
    }
    for (cpu, b) in builders.iter().enumerate() {
        let h = StreamHeader::new(cpu as u32, 0, "virtio_gpu");
        std::fs::write(format!("{}.grtrace.{cpu}", base.display()), b.stream(&h)).unwrap();
    }
    base
}

/// Runs grtreport in this process (fast: no process per run); the run must end 0 or 1,
/// and no thread of it may panic (a worker's panic could otherwise end as an error).
fn run_in_process(args: &[&std::ffi::OsStr]) -> Result<(), TestCaseError> {
    static PANICKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, std::sync::atomic::Ordering::SeqCst);
            prev(info);
        }));
    });
    let mut argv: Vec<&std::ffi::OsStr> = vec!["grtreport".as_ref()];
    argv.extend_from_slice(args);
    let parsed = grtreport::cli::Args::try_parse_from(argv).expect("arguments");
    PANICKED.store(false, std::sync::atomic::Ordering::SeqCst);
    let code = std::panic::catch_unwind(|| match grtreport::cli::run(parsed) {
        Ok(()) => 0,
        Err(f) => f.code(),
    });
    let panicked = PANICKED.swap(false, std::sync::atomic::Ordering::SeqCst);
    prop_assert!(
        matches!(code, Ok(0 | 1)) && !panicked,
        "grtreport {:?}: {:?}",
        args,
        code.map_err(|_| "panic")
    );
    Ok(())
}

/// Runs the grtreport binary; the run must end 0 or 1, and say nothing of a panic.
fn run_binary(args: &[&std::ffi::OsStr]) -> Result<Output, TestCaseError> {
    let o = bin().args(args).stdin(Stdio::null()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    prop_assert!(
        matches!(o.status.code(), Some(0 | 1)) && !err.contains("panicked"),
        "grtreport {:?}: {:?}\n{err}",
        args,
        o.status
    );
    Ok(o)
}

/// Every stage of the report on `base`, its outputs in `dir`: text with --top, utilisation
/// and verdicts, the critical path of the slowest frame, the CSV tables, both timeline
/// exports and the Parquet dataset; JSON with its intervals and the critical path of a window, and the protobuf
/// Perfetto export.
fn every_stage(base: &Path, dir: &Path, horizon: &str) -> Result<(), TestCaseError> {
    let f = |n: &str| dir.join(n).into_os_string();
    let base = base.as_os_str();
    run_in_process(&[
        base,
        "--top".as_ref(),
        "5".as_ref(),
        "--critical-path".as_ref(),
        "--frame-marker".as_ref(),
        "frame".as_ref(),
        "--horizon".as_ref(),
        horizon.as_ref(),
        "-o".as_ref(),
        &f("report.txt"),
        "--csv".as_ref(),
        &f("jobs.csv"),
        "--perfetto".as_ref(),
        &f("trace.json"),
        "--html".as_ref(),
        &f("report.html"),
        "--parquet".as_ref(),
        &f("ds"),
    ])?;
    run_in_process(&[
        base,
        "--json".as_ref(),
        "--top".as_ref(),
        "3".as_ref(),
        "--interval".as_ref(),
        "0.0001".as_ref(),
        "--critical-path".as_ref(),
        "-w".as_ref(),
        "0:1".as_ref(),
        "--horizon".as_ref(),
        horizon.as_ref(),
        "-o".as_ref(),
        &f("report.json"),
        "--perfetto".as_ref(),
        &f("trace.pftrace"),
    ])
}

/// A recording to damage: its jobs, the damage done to its records, and whether its CPUs
/// are merged into one stream.
fn damaged() -> impl Strategy<Value = (Vec<JobSpec>, Vec<Damage>, bool)> {
    (
        proptest::collection::vec(job_spec(), 1..24),
        proptest::collection::vec(damage(), 1..6),
        any::<bool>(),
    )
}

fn horizon() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("10"), Just("0.001")]
}

fn recording(jobs: &[JobSpec], damage: &[Damage], merged: bool, tag: &str) -> (PathBuf, PathBuf) {
    let mut evs = events(jobs);
    for d in damage {
        apply(&mut evs, d);
    }
    let dir = tmp_dir(tag);
    let base = write_recording(&dir, &evs, merged);
    (dir, base)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Damaged times (a flipped bit, 0, u64::MAX, any u64), codes and seqnos in per-CPU
    /// files and in a merged stream: every stage of the report ends 0 or 1, never a panic.
    #[test]
    fn damaged_records_never_panic_in_any_stage(
        (jobs, damage, merged) in damaged(),
        horizon in horizon(),
    ) {
        let (dir, base) = recording(&jobs, &damage, merged, "prop");
        let res = every_stage(&base, &dir, horizon);
        let _ = std::fs::remove_dir_all(&dir);
        res?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The same through the binary, with what writes to stdout (text --interval rows and
    /// --jobs lines): a panic there is exit status 101.
    #[test]
    fn damaged_records_never_panic_in_the_binary(
        (jobs, damage, merged) in damaged(),
    ) {
        let (dir, base) = recording(&jobs, &damage, merged, "bin");
        let res = run_binary(&[
            base.as_os_str(),
            "--jobs".as_ref(),
            "--interval".as_ref(),
            "0.0001".as_ref(),
            "--top".as_ref(),
            "5".as_ref(),
            "--critical-path".as_ref(),
        ]);
        let _ = std::fs::remove_dir_all(&dir);
        res?;
    }
}

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/report/worked-example.grtrace")
}

/// A few thousand jobs of the mixed scenario as a file: reports larger than any buffer.
fn mixed_file() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let p = tmp_dir("mixed").join("mixed.grtrace");
        let sc = grtrace_sim::scenarios::by_name("report-mixed", 4, 3000).unwrap();
        let mut b = Builder::new();
        for (s, body) in &sc.records {
            b.on(s.cpu).pid(s.pid).record(*body).at(s.time_ns + T0);
        }
        std::fs::write(&p, common::ended_stream(b.records(), 0, "grtsim")).unwrap();
        p
    })
    .clone()
}

/// `bin` with standard output closed (`>&-`) or open for reading only (`1</dev/null`).
fn with_stdout(redirect: &str, bin: &str, args: &[&std::ffi::OsStr]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" \"$@\" {redirect}"))
        .arg(bin)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_closed_or_read_only_stdout_is_an_error_before_anything_is_read() {
    let bin = env!("CARGO_BIN_EXE_grtreport");
    for (redirect, why) in [
        (">&-", "standard output is closed"),
        ("1</dev/null", "standard output is open for reading only"),
    ] {
        let o = with_stdout(redirect, bin, &[fixture().as_os_str()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{redirect}: {err}");
        assert!(err.starts_with(&format!("grtreport: {why}: ")), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // A report to a file with stdout redirected to /dev/null is fine.
    let out = tmp_dir("devnull").join("r.txt");
    let o = with_stdout(
        ">/dev/null",
        bin,
        &[fixture().as_os_str(), "-o".as_ref(), out.as_os_str()],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::metadata(&out).unwrap().len() > 0);
}

/// Every output on stdout ends quietly with status 0 when its reader has gone
/// (`grtreport run --json | head -1`): the pipe's read end is closed before the run.
#[test]
fn a_closed_pipe_ends_every_stdout_output_quietly() {
    let mixed = mixed_file();
    for args in [
        &[][..],
        &["--json"][..],
        &["--json", "--interval", "0.01"][..],
        &["-q", "--csv", "-"][..],
        &["-q", "--jobs"][..],
        &["-q", "--interval", "0.01"][..],
        &["-q", "--perfetto", "-"][..],
        &["-q", "--html", "-"][..],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = bin()
            .arg(&mixed)
            .args(args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}

/// A failed export names its file and leaves none behind (a full disk, here a file-size
/// limit of zero: every write fails with EFBIG).
#[test]
fn a_failed_export_names_its_file_and_removes_it() {
    let dir = tmp_dir("efbig");
    for opt in ["--html", "--perfetto"] {
        let out = dir.join(format!("x{opt}"));
        let err = grtrace_cli::fail(
            Command::new("sh")
                .arg("-c")
                .arg("trap '' XFSZ; ulimit -f 0; exec \"$0\" \"$@\"")
                .arg(env!("CARGO_BIN_EXE_grtreport"))
                .arg(mixed_file())
                .args(["-q", opt])
                .arg(&out),
        );
        assert!(
            err.starts_with(&format!(
                "grtreport: export: {}: File too large",
                out.display()
            )),
            "{opt}: {err}"
        );
        assert!(err.trim_end().ends_with("(removed)"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!out.exists(), "{opt}: {} left behind", out.display());
    }
}

/// A directory as input: the hint names what grtreport takes (no `-D`, which it lacks).
#[test]
fn a_directory_input_gets_a_hint_grtreport_can_follow() {
    let d = tmp_dir("isdir");
    let o = bin().arg(&d).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "grtreport: {}: is a directory: give a base name in it ({}/run) or its files\n",
            d.display(),
            d.display()
        )
    );
}

/// An import whose GPU events came on CPUs 1 and 3 of 4: text has files for those two
/// only, trace.dat for all four. Neither makes grtreport warn of missing CPU files (the
/// importer marks its set whole), as it still does for a recording with one missing.
#[test]
fn an_import_with_idle_cpus_draws_no_missing_cpu_warning() {
    use grtrace_ftrace::capture::{i915_request, Capture, TextStyle};
    let d = tmp_dir("cpus");
    let mut c = Capture::new("6.12", 4);
    let s = 1_000_000_000_000u64;
    for i in 0..10u64 {
        let req = i915_request(12, 2 + i);
        // Added by the app on CPU 1, retired 0.8 ms later on CPU 3: CPUs 0 and 2 idle.
        let t = s + i * 1_000_000;
        c.ev(1, t, "gfx", 1234, "i915_request_add", &req, &[]);
        c.ev(3, t + 800_000, "", 0, "i915_request_retire", &req, &[]);
    }
    let text = d.join("trace.txt");
    std::fs::write(&text, c.text(TextStyle::Report)).unwrap();
    let dat = d.join("trace.dat");
    std::fs::write(&dat, c.dat(7, None)).unwrap();
    for (input, files) in [(&text, 2), (&dat, 4)] {
        let base = d.join(format!(
            "{}-run",
            input.extension().unwrap().to_string_lossy()
        ));
        common::import(input, &base).unwrap();
        let made = std::fs::read_dir(&d)
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                n.to_string_lossy().starts_with(&format!(
                    "{}.grtrace.",
                    base.file_name().unwrap().to_string_lossy()
                ))
            })
            .count();
        assert_eq!(made, files, "{}", input.display());
        let o = bin().arg(&base).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(!err.contains("missing CPU"), "{}: {err}", input.display());
    }
    // Without the mark (a recording), the same holes are said.
    let base = d.join("txt-run");
    for cpu in [1, 3] {
        let p = format!("{}.grtrace.{cpu}", base.display());
        let mut f = std::fs::read(&p).unwrap();
        let mut h = StreamHeader::parse(&f).unwrap();
        h.flags &= !abi::STREAM_CPUS_WHOLE;
        let e = h.encode();
        f[..e.len()].copy_from_slice(&e);
        std::fs::write(&p, f).unwrap();
    }
    let o = bin().arg(&base).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("missing CPU file(s) for CPU 0,2 "), "{err}");
}

/// No GPU event at all, whatever the input: said plainly on one line, exit 1, no page of
/// empty tables. grtimport writes a text capture without GPU events as it does a trace.dat
/// (files, and the same words), so the next grtreport says it too.
#[test]
fn no_gpu_events_is_said_plainly_for_every_input() {
    use grtrace_ftrace::capture::{Capture, TextStyle};
    let d = tmp_dir("nogpu");
    // A recording of rings only.
    let mut b = Builder::new();
    b.record(gfx_ring(0)).at(T0);
    let rec = d.join("rings-only");
    std::fs::write(&rec, common::ended_stream(b.records(), 0, "virtio_gpu")).unwrap();
    // A capture of a scheduler switch only, as text and as trace.dat.
    let c = Capture::no_gpu(T0);
    let text = d.join("idle.txt");
    std::fs::write(&text, c.text(TextStyle::Report)).unwrap();
    let dat = d.join("idle.dat");
    std::fs::write(&dat, c.dat(7, None)).unwrap();
    let mut inputs = vec![(rec.clone(), rec.display().to_string())];
    for input in [&text, &dat] {
        let base = d.join(format!(
            "{}-run",
            input.extension().unwrap().to_string_lossy()
        ));
        common::import(input, &base).unwrap();
        assert!(
            PathBuf::from(format!("{}.grtrace.0", base.display())).exists(),
            "{}: no files written",
            input.display()
        );
        inputs.push((base.clone(), base.display().to_string()));
    }
    for (input, shown) in inputs {
        for args in [&[][..], &["--json"][..]] {
            let o = bin().arg(&input).args(args).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{shown}: {err}");
            assert!(
                err.starts_with(&format!("grtreport: {shown}: no GPU events (")),
                "{err}"
            );
            assert!(
                err.ends_with(", none an event): nothing to report\n"),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(o.stdout.is_empty(), "{shown}");
        }
    }
}

/// `--help` is wrapped to 100 columns (its option texts reached 251 characters).
#[test]
fn help_lines_fit_100_columns() {
    for flag in ["--help", "-h"] {
        let o = bin().arg(flag).output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("--critical-path"), "{text}");
        let long: Vec<&str> = text.lines().filter(|l| l.chars().count() > 100).collect();
        assert!(long.is_empty(), "{flag}: {long:#?}");
    }
}
