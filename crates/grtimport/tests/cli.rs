//! grtimport end to end: files written by the trace.dat writer, imported by the binary,
//! read back with grtrace-format's reader.

mod common;

use common::*;
use std::ffi::OsStr;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use grtrace_format::abi::STREAM_IMPORTED;
use grtrace_format::RecordType;
use grtrace_format::{Body, Records, StreamHeader};
use grtrace_ftrace::capture::i915_request;
use grtrace_ftrace::datwriter::{fixture_formats, DatSpec, DatWriter};
use grtrace_ftrace::synth::{Flavor, Workload};
use grtrace_ftrace::tracedat::Codec;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtimport-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_dat(path: &Path, w: Workload, version: u32, codec: Option<Codec>) {
    let formats = fixture_formats(w.kernel());
    let spec = DatSpec::new(version, codec, &formats, w.cpus);
    let fs: Vec<_> = formats.iter().map(|(f, _)| f.clone()).collect();
    let mut dw = DatWriter::new(BufWriter::new(File::create(path).unwrap()), spec).unwrap();
    w.write(&mut dw, &fs).unwrap();
    dw.finish().unwrap();
}

/// (header, records as (type, code, body text)) of one output stream.
fn read_stream(p: &Path) -> (StreamHeader, Vec<(RecordType, u16)>, String) {
    let bytes = std::fs::read(p).unwrap();
    let h = StreamHeader::parse(&bytes).unwrap();
    let mut recs = Vec::new();
    let mut note = String::new();
    for r in Records::new(&bytes, &h) {
        let r = r.unwrap();
        if let Body::Msg { text } = r.body() {
            if note.is_empty() {
                note = String::from_utf8_lossy(text).into_owned();
            }
        }
        recs.push((r.rtype(), r.code()));
    }
    (h, recs, note)
}

/// The workload of the 6.17 scheduler's events: `jobs` jobs on `cpus` CPUs.
fn sched617(jobs: u64, cpus: u32) -> Workload {
    Workload {
        flavor: Flavor::Sched617,
        jobs,
        cpus,
    }
}

#[test]
fn a_v7_zstd_trace_becomes_imported_per_cpu_streams() {
    let d = dir("ok");
    let dat = d.join("trace.dat");
    let w = sched617(400, 2);
    write_dat(&dat, w, 7, Some(Codec::Zstd));
    let base = d.join("run");
    let err = import_ok(&dat, &base);
    assert!(err.contains("drm_sched_job_run"), "{err}");
    let mut ends = 0;
    for cpu in 0..2 {
        let (h, recs, note) = read_stream(&stream_path(&base, cpu));
        assert_eq!(h.cpu, cpu);
        assert!(h.flags & STREAM_IMPORTED != 0);
        assert!(
            note.starts_with("grtrace-import: source=trace.dat v7 (zstd"),
            "{note}"
        );
        assert_eq!(recs[0].0, RecordType::NOTE_MSG);
        assert_eq!(recs.last().unwrap().0, RecordType::NOTE_STREAM_INFO);
        ends += recs
            .iter()
            .filter(|r| r.0 == RecordType::EVENT && r.1 == 7)
            .count();
    }
    assert_eq!(ends, 400);
}

#[test]
fn an_idle_cpu_left_out_of_the_v7_buffer_option_still_gets_its_stream() {
    // trace-cmd 3.1 lists only CPUs with data in a v7 BUFFER option (seen in the QEMU
    // stock-kernel run: a 2-CPU guest whose workload ran on CPU 1); CPUCOUNT says 3 here.
    let d = dir("idle");
    let dat = d.join("trace.dat");
    let w = sched617(50, 2);
    let formats = fixture_formats(w.kernel());
    let mut spec = DatSpec::new(7, Some(Codec::Zstd), &formats, 3);
    spec.omit_idle_cpus = true;
    let fs: Vec<_> = formats.iter().map(|(f, _)| f.clone()).collect();
    let mut dw = DatWriter::new(BufWriter::new(File::create(&dat).unwrap()), spec).unwrap();
    w.write(&mut dw, &fs).unwrap();
    dw.finish().unwrap();
    let base = d.join("run");
    import_ok(&dat, &base);
    let (h, recs, _) = read_stream(&PathBuf::from(format!("{}.grtrace.2", base.display())));
    assert_eq!(h.cpu, 2);
    assert!(
        recs.iter().all(|r| r.0 != RecordType::EVENT),
        "CPU 2 recorded nothing"
    );
    for cpu in 0..2 {
        let (_, recs, _) = read_stream(&stream_path(&base, cpu));
        assert!(
            recs.iter().any(|r| r.0 == RecordType::EVENT),
            "CPU {cpu} has events"
        );
    }
}

#[test]
fn a_truncated_trace_exits_1_naming_file_and_offset_and_keeps_what_came_before() {
    let d = dir("trunc");
    let dat = d.join("t.dat");
    write_dat(
        &dat,
        Workload {
            flavor: Flavor::Virtio,
            jobs: 2000,
            cpus: 1,
        },
        6,
        None,
    );
    let bytes = std::fs::read(&dat).unwrap();
    std::fs::write(&dat, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let base = d.join("out");
    let err = import_damaged(&dat, &base);
    let last = err.lines().last().unwrap();
    assert!(last.contains("cut short"), "{last}");
    let (_, recs, _) = read_stream(&stream_path(&base, 0));
    let commits = recs
        .iter()
        .filter(|r| r.0 == RecordType::EVENT && r.1 == 2)
        .count();
    assert!(commits > 500 && commits < 2000, "{commits}");
}

#[test]
fn usage_and_input_errors_have_their_exit_codes() {
    let d = dir("usage");
    assert_eq!(grtimport(&[]).0, 2);
    assert_eq!(grtimport(&["x.dat", "-o", "-", "-D", "/tmp"]).0, 2);
    // Junk is not a trace.dat, so it is read as text, whose first line is not trace text.
    for (file, bytes, said) in [
        (
            "junk.dat",
            &b"this is not a trace"[..],
            "junk.dat: offset 0 (line 1): no [cpu] column",
        ),
        (
            "bin.dat",
            b"\x7fELF\0\0\0",
            "offset 4: neither a trace.dat file nor trace text",
        ),
        ("empty.dat", b"", "empty file"),
    ] {
        let input = d.join(file);
        std::fs::write(&input, bytes).unwrap();
        let (code, err) = grtimport(&[input.to_str().unwrap()]);
        assert_eq!(code, 1, "{file}");
        assert!(err.contains(said), "{file}: {err}");
    }
    let (code, _) = grtimport(&[d.join("missing.dat").to_str().unwrap()]);
    assert_eq!(code, 1);
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("pattern in the file")
}

/// grtimport under a 2 GB address-space limit: a claim it trusted would make it allocate
/// beyond that and abort instead of exiting 1.
fn grtimport_limited(dat: &Path, out: &Path) -> (i32, String) {
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2000000; exec \"$0\" \"$1\" -o \"$2\"")
        .arg(env!("CARGO_BIN_EXE_grtimport"))
        .arg(dat)
        .arg(out)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A trace.dat that claims billions of CPUs (v6 header, v7 CPUCOUNT option) or a compressed
/// section of 3.75 GB: one line naming the file and the offset of the claim, exit 1, no huge
/// allocation and no output file per claimed CPU.
#[test]
fn absurd_cpu_counts_and_section_sizes_are_refused_at_their_offset() {
    let d = dir("absurd");
    let w = sched617(20, 2);
    let cases: [(&str, u32, Option<Codec>); 3] = [
        ("v6-cpus", 6, None),
        ("v7-cpucount", 7, None),
        ("v7-section", 7, Some(Codec::Zstd)),
    ];
    for (name, version, codec) in cases {
        let dat = d.join(format!("{name}.dat"));
        write_dat(&dat, w, version, codec);
        let mut b = std::fs::read(&dat).unwrap();
        let (at, what) = match name {
            // v6: the CPU count is the u32 right before the first `options` / `flyrecord` tag
            "v6-cpus" => {
                let tag = find(&b, b"options  \0").min(find(&b, b"flyrecord\0"));
                (tag - 4, "the header claims 4294967295 CPUs")
            }
            // v7: option CPUCOUNT (id 8, size 4, the count)
            "v7-cpucount" => {
                let mut pat = 8u16.to_le_bytes().to_vec();
                pat.extend(4u32.to_le_bytes());
                pat.extend(2u32.to_le_bytes());
                (
                    find(&b, &pat) + 6,
                    "the CPUCOUNT option claims 4294967295 CPUs",
                )
            }
            // v7 zstd: a compressed section header (id, flags 1, desc, size) and its
            // compression header (compressed size, uncompressed size)
            _ => {
                let at = (0..b.len() - 24)
                    .find(|&i| {
                        let u16_ = |o: usize| u16::from_le_bytes([b[i + o], b[i + o + 1]]);
                        let u32_ =
                            |o: usize| u32::from_le_bytes(b[i + o..i + o + 4].try_into().unwrap());
                        let size = u64::from_le_bytes(b[i + 8..i + 16].try_into().unwrap());
                        matches!(u16_(0), 16 | 18) && u16_(2) == 1 && size == u32_(16) as u64 + 8
                    })
                    .expect("a compressed section");
                b[at + 20..at + 24].copy_from_slice(&0xf000_0000u32.to_le_bytes());
                (at + 16, "claims 4026531840 bytes uncompressed")
            }
        };
        if name != "v7-section" {
            b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        }
        std::fs::write(&dat, &b).unwrap();
        let out = d.join(name);
        let (code, err) = grtimport_limited(&dat, &out);
        assert_eq!(code, 1, "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(
            err.contains(&format!("{}: offset {at}: ", dat.display())) && err.contains(what),
            "{name}: {err}"
        );
        let made = std::fs::read_dir(&d)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".grtrace.")
            })
            .count();
        assert_eq!(made, 0, "{name}: no stream is opened for a refused header");
    }
}

/// Text whose CPU column claims a CPU no machine has (in an event line and in a loss
/// line, both styles): one line naming the file and the byte, exit 1, no allocation sized
/// by the claim, and the events before it imported.
#[test]
fn absurd_cpu_numbers_in_text_are_refused_at_their_offset() {
    let d = dir("absurd-text");
    let good = i915_capture().text(grtrace_ftrace::capture::TextStyle::Tracefs);
    let event = good
        .lines()
        .find(|l| l.contains("i915_request_add"))
        .unwrap();
    let cpu = &event[event.find(" [").unwrap()..=event.find(']').unwrap()];
    let bad_event = event.replacen(cpu, " [4000000000]", 1);
    for (name, bad) in [
        ("event", bad_event.as_str()),
        ("lost", "CPU:4000000000 [LOST 3 EVENTS]"),
        ("dropped", "CPU:4000000000 [3 EVENTS DROPPED]"),
    ] {
        let text = d.join(format!("{name}.txt"));
        let body = format!("{good}{bad}\n");
        std::fs::write(&text, &body).unwrap();
        let out = d.join(name);
        let (code, err) = grtimport_limited(&text, &out);
        assert_eq!(code, 1, "{name}: {err}");
        let at = good.len();
        let last = err.lines().last().unwrap();
        assert!(
            last.starts_with(&format!("grtimport: {}: offset {at} ", text.display()))
                && last.contains("CPU 4000000000 (at most 65536 CPUs)"),
            "{name}: {err}"
        );
        let (_, recs, _) = read_stream(&out.with_extension("grtrace.0"));
        assert!(recs.len() > 10, "{name}: what came before is kept");
    }
}

#[test]
fn completions_need_no_input_and_input_is_still_required_otherwise() {
    let o = Command::new(env!("CARGO_BIN_EXE_grtimport"))
        .args(["--completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("--output-dir"));
    let (code, err) = grtimport(&[]);
    assert_eq!(code, 2, "{err}");
}

/// An input named like one of the streams grtimport is about to write is refused before
/// anything is created, and is left as it was (`grtimport run.grtrace.0 -o run`).
#[test]
fn an_output_that_is_the_input_is_refused_and_the_input_kept() {
    let d = dir("output-is-input");
    let input = d.join("run.grtrace.0");
    let w = sched617(50, 2);
    write_dat(&input, w, 7, None);
    let before = std::fs::read(&input).unwrap();
    let base = d.join("run");
    let (code, err) = grtimport(&[input.to_str().unwrap(), "-o", base.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
    // Another base name in the same directory is fine.
    let other = d.join("other");
    import_ok(&input, &other);
}

/// Every record of a stream file as (type, time), with its header.
fn times(p: &Path) -> (StreamHeader, Vec<(RecordType, u64)>) {
    let bytes = std::fs::read(p).unwrap();
    let h = StreamHeader::parse(&bytes).unwrap();
    let recs = Records::new(&bytes, &h)
        .map(|r| {
            let r = r.unwrap();
            (r.rtype(), r.time_ns())
        })
        .collect();
    (h, recs)
}

/// A small i915 capture 1000 s after boot on two CPUs: a scheduler switch first and last
/// (not GPU events), a loss on CPU 1 before its first event.
fn i915_capture() -> grtrace_ftrace::capture::Capture {
    let mut c = grtrace_ftrace::capture::Capture::new("6.12", 2);
    let s = 1_000_000_000_000u64;
    c.ev(
        0,
        s - 500_000_000,
        "bash",
        5,
        "sched_switch",
        &[("prev_pid", 5), ("next_pid", 1234)],
        &[("prev_comm", "bash"), ("next_comm", "gfx")],
    );
    c.lost(1, s, Some(3));
    for i in 0..20u64 {
        let req = i915_request(12 + 2 * (i % 2), 2 + 2 * (i / 2));
        // Added by the app on CPU 0, retired 0.8 ms later on CPU 1 (no task).
        let t = s + i * 1_000_000;
        c.ev(0, t, "gfx", 1234, "i915_request_add", &req, &[]);
        c.ev(1, t + 800_000, "", 0, "i915_request_retire", &req, &[]);
    }
    c.ev(
        0,
        s + 1_000_000_000,
        "gfx",
        1234,
        "sched_switch",
        &[("prev_pid", 1234), ("next_pid", 5)],
        &[("prev_comm", "gfx"), ("next_comm", "bash")],
    );
    c.record_system("gpu_scheduler").record_system("amdgpu");
    c
}

/// IMPORT.md §1: the source note is stamped at the capture's first event and the stream
/// info at its last (readers count time from the first record: a note at 0 made a 1 s
/// capture 1000 s long), every stream stays in time order, and the header names the
/// drivers the capture had events of, not every system whose formats it carries.
#[test]
fn streams_carry_the_captures_span_and_the_drivers_it_had() {
    use grtrace_ftrace::capture::TextStyle;
    let d = dir("span");
    let c = i915_capture();
    let first = 999_500_000_000u64;
    let last = 1_001_000_000_000u64;
    let text = d.join("trace.txt");
    std::fs::write(&text, c.text(TextStyle::Report)).unwrap();
    let dat = d.join("trace.dat");
    std::fs::write(&dat, c.dat(7, Some(Codec::Zstd))).unwrap();
    for input in [&text, &dat] {
        let base = d.join("run");
        import_ok(input, &base);
        for cpu in 0..2 {
            let (h, recs) = times(&stream_path(&base, cpu));
            assert_eq!(h.driver, "i915", "{}", input.display());
            assert_eq!(
                recs[0],
                (RecordType::NOTE_MSG, first),
                "{}",
                input.display()
            );
            assert_eq!(
                *recs.last().unwrap(),
                (RecordType::NOTE_STREAM_INFO, last),
                "{}",
                input.display()
            );
            assert!(
                recs.windows(2).all(|w| w[0].1 <= w[1].1),
                "{}: {recs:?}",
                input.display()
            );
        }
    }
    // Text on stdin to stdout: the header is written before the end, from the text read
    // ahead.
    let o = Command::new(env!("CARGO_BIN_EXE_grtimport"))
        .args(["-", "-o", "-"])
        .stdin(File::open(&text).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success());
    let h = StreamHeader::parse(&o.stdout).unwrap();
    assert_eq!(h.driver, "i915");
    let recs: Vec<(RecordType, u64)> = Records::new(&o.stdout, &h)
        .map(|r| {
            let r = r.unwrap();
            (r.rtype(), r.time_ns())
        })
        .collect();
    assert_eq!(recs[0], (RecordType::NOTE_MSG, first));
    assert_eq!(*recs.last().unwrap(), (RecordType::NOTE_STREAM_INFO, last));
    // The loss on CPU 1 is no earlier than the capture's start.
    assert!(recs
        .iter()
        .any(|r| r.0 == RecordType::NOTE_LOST && r.1 >= first));
    // Exactly at the line before its marker (the CPU-0 request at 1000 s), not at the
    // capture's start 0.5 s earlier.
    let lost: Vec<u64> = recs
        .iter()
        .filter(|r| r.0 == RecordType::NOTE_LOST)
        .map(|r| r.1)
        .collect();
    assert_eq!(lost, [1_000_000_000_000]);
}

/// A text whose first line is a loss marker: the loss is placed at the capture's first
/// event (read ahead), not at time 0, 1000 s before everything else.
#[test]
fn a_loss_marker_before_any_event_is_placed_at_the_captures_start() {
    use grtrace_ftrace::capture::TextStyle;
    let d = dir("loss-first");
    let mut c = grtrace_ftrace::capture::Capture::new("6.12", 2);
    let t0 = 1_000_000_000_000u64;
    c.lost(1, t0, None);
    let req = i915_request(12, 2);
    c.ev(1, t0, "gfx", 1234, "i915_request_add", &req, &[]);
    c.ev(0, t0 + 800_000, "", 0, "i915_request_retire", &req, &[]);
    for (style, name) in [
        (TextStyle::Tracefs, "tracefs"),
        (TextStyle::Report, "report"),
    ] {
        let body = c.text(style);
        let first = body
            .lines()
            .find(|l| !l.starts_with('#') && !l.starts_with("cpus="))
            .unwrap();
        assert!(first.starts_with("CPU:1 ["), "{name}: {body}");
        let text = d.join(format!("{name}.txt"));
        std::fs::write(&text, &body).unwrap();
        let base = d.join(name);
        let (code, err) = grtimport(&[text.to_str().unwrap(), "-o", base.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        let (_, recs) = times(&base.with_extension("grtrace.1"));
        let lost: Vec<u64> = recs
            .iter()
            .filter(|r| r.0 == RecordType::NOTE_LOST)
            .map(|r| r.1)
            .collect();
        assert_eq!(lost, [t0], "{name}: {recs:?}");
    }
}

/// A text capture with a `[LOST N EVENTS]` line (or trace-cmd's `[N EVENTS DROPPED]`, or a
/// marker without a count): the summary on stderr says the loss, in the trace.dat
/// summary's words.
#[test]
fn the_text_summary_says_the_capture_lost_events() {
    use grtrace_ftrace::capture::TextStyle;
    let d = dir("text-lost-summary");
    let c = i915_capture();
    let tracefs = c.text(TextStyle::Tracefs);
    assert!(tracefs.contains("CPU:1 [LOST 3 EVENTS]"), "{tracefs}");
    let no_count = tracefs.replace("[LOST 3 EVENTS]", "[LOST EVENTS]");
    let dat = d.join("trace.dat");
    std::fs::write(&dat, c.dat(7, None)).unwrap();
    for (name, body, says) in [
        (
            "tracefs.txt",
            tracefs.as_str(),
            "You have 3 lost events in the trace",
        ),
        (
            "report.txt",
            &c.text(TextStyle::Report),
            "You have 3 lost events in the trace",
        ),
        (
            "no-count.txt",
            &no_count,
            "You have 0 lost events (+1 markers without a count) in the trace",
        ),
        ("trace.dat", "", "You have 3 lost events in the trace"),
    ] {
        let input = d.join(name);
        if !body.is_empty() {
            std::fs::write(&input, body).unwrap();
        }
        let base = d.join(name.replace('.', "-"));
        let (code, err) = grtimport(&[input.to_str().unwrap(), "-o", base.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
    }
}

/// A text capture names its tasks by their task column (here with the TGID column of
/// atrace/record-tgid): the streams carry NOTE_PROCESS for them; `<idle>` is not a name.
#[test]
fn text_task_columns_name_the_processes() {
    let d = dir("text-comms");
    let input = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/import/captures/i915-4.19-tgid.txt");
    let base = d.join("tgid");
    let (code, err) = grtimport(&["-q", input.to_str().unwrap(), "-o", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&d).unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        let h = StreamHeader::parse(&bytes).unwrap();
        for r in Records::new(&bytes, &h) {
            if let Body::Process { comm } = r.unwrap().body() {
                names.push(String::from_utf8_lossy(comm).into_owned());
            }
        }
    }
    names.sort();
    assert_eq!(names, ["MediaCodec", "RenderThread"]);
}

/// A failed write names the file and leaves no file of the import behind (a file-size
/// limit of 1 KiB: the first megabyte's write fails with EFBIG), for trace.dat and text.
#[test]
fn a_failed_write_names_the_file_and_leaves_no_output_behind() {
    use grtrace_ftrace::capture::TextStyle;
    let d = dir("efbig");
    let dat = d.join("trace.dat");
    write_dat(&dat, sched617(20_000, 2), 7, None);
    let text = d.join("trace.txt");
    let c = i915_capture();
    let mut t = String::new();
    while t.len() < (2 << 20) {
        t.push_str(&c.text(TextStyle::Report));
    }
    std::fs::write(&text, t).unwrap();
    for input in [&dat, &text] {
        let out = d.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let o = Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 2; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_grtimport"))
            .arg(input)
            .arg("-o")
            .arg(out.join("run"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}: {err}", input.display());
        assert!(
            err.starts_with(&format!("grtimport: {}/run.grtrace.", out.display())),
            "{err}"
        );
        assert!(err.contains(": File too large (os error 27)"), "{err}");
        assert!(err.contains("file(s) of this output were removed"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert!(left.is_empty(), "{}: {left:?} left behind", input.display());
    }
}

#[test]
fn a_closed_stdout_is_an_error_not_exit_0() {
    let d = dir("closed");
    let dat = d.join("trace.dat");
    write_dat(&dat, sched617(10, 1), 7, None);
    let args = [dat.as_os_str(), OsStr::new("-o"), OsStr::new("-")];
    grtrace_cli::assert_refuses_closed_stdout(Path::new(env!("CARGO_BIN_EXE_grtimport")), args);
}

#[test]
fn a_directory_input_says_it_is_a_directory() {
    let d = dir("isdir");
    let (code, err) = grtimport(&[d.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    let d = d.display();
    assert_eq!(
        err,
        format!("grtimport: {d}: is a directory: give a trace.dat file or trace text in it ({d}/trace.dat)\n")
    );
}

/// A capture without GPU events: the text import writes a stream as a trace.dat's does,
/// and both say so plainly (even with -q).
#[test]
fn no_gpu_events_is_said_plainly_and_a_text_capture_is_written_like_a_trace_dat() {
    use grtrace_ftrace::capture::{Capture, TextStyle};
    let d = dir("nogpu");
    let c = Capture::no_gpu(1_000_000_000_000);
    let text = d.join("idle.txt");
    std::fs::write(&text, c.text(TextStyle::Report)).unwrap();
    let dat = d.join("idle.dat");
    std::fs::write(&dat, c.dat(7, None)).unwrap();
    for input in [&text, &dat] {
        let base = d.join("run");
        let (code, err) = grtimport(&[input.to_str().unwrap(), "-q", "-o", base.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            err,
            format!(
                "grtimport: warning: {}: no GPU events: none of its events is of a GPU tracepoint grtimport maps (IMPORT.md); the streams written hold no job\n",
                input.display()
            )
        );
        let (h, recs, note) = read_stream(&PathBuf::from(format!("{}.grtrace.0", base.display())));
        assert!(h.flags & STREAM_IMPORTED != 0);
        assert!(note.starts_with("grtrace-import:"), "{note}");
        assert_eq!(recs.last().unwrap().0, RecordType::NOTE_STREAM_INFO);
    }
}

/// A trace.dat cut short while it is imported (the recorder or a user truncated it): the
/// pages past its new end read as zeros, which look like empty ftrace pages, so the import
/// would end early as if the file were whole. It is an error naming the file, the offset
/// and both lengths, exit 1. The output pipe is left unread until the file is cut, so the
/// import is still near its start then.
#[test]
fn a_trace_dat_cut_while_it_is_imported_is_an_error_not_a_short_import() {
    for (version, codec) in [(6, None), (7, Some(Codec::Zstd))] {
        cut_while_imported(version, codec);
    }
}

fn cut_while_imported(version: u32, codec: Option<Codec>) {
    use std::io::Read;
    use std::process::Stdio;
    let d = dir(&format!("shrinks-{version}"));
    let dat = d.join("trace.dat");
    write_dat(&dat, sched617(200_000, 2), version, codec);
    let len = std::fs::metadata(&dat).unwrap().len();
    let mut child = Command::new(env!("CARGO_BIN_EXE_grtimport"))
        .arg(&dat)
        .args(["-q", "-o", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    out.read_exact(&mut first).unwrap();
    // At a page boundary: the pages past it are whole pages of zeros, no partial page.
    let cut = len / 4 / 4096 * 4096;
    File::options()
        .write(true)
        .open(&dat)
        .unwrap()
        .set_len(cut)
        .unwrap();
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "v{version}: {err}");
    assert!(
        err.contains("the file shrank while being imported")
            && err.contains(&format!("({len} bytes when opened, {cut} now)")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
