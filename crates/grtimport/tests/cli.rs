//! grtimport end to end: files written by the trace.dat writer, imported by the binary,
//! read back with grtrace-format's reader.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::Command;

use grtrace_format::abi::{rtype, STREAM_IMPORTED};
use grtrace_format::{Body, Records, StreamHeader};
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

fn grtimport(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_grtimport"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// (header, records as (type, code, body text)) of one output stream.
fn read_stream(p: &Path) -> (StreamHeader, Vec<(u16, u16)>, String) {
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

#[test]
fn a_v7_zstd_trace_becomes_imported_per_cpu_streams() {
    let d = dir("ok");
    let dat = d.join("trace.dat");
    let w = Workload {
        flavor: Flavor::Sched617,
        jobs: 400,
        cpus: 2,
    };
    write_dat(&dat, w, 7, Some(Codec::Zstd));
    let base = d.join("run");
    let (code, err) = grtimport(&[dat.to_str().unwrap(), "-o", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("drm_sched_job_run"), "{err}");
    let mut ends = 0;
    for cpu in 0..2 {
        let (h, recs, note) =
            read_stream(&PathBuf::from(format!("{}.grtrace.{cpu}", base.display())));
        assert_eq!(h.cpu, cpu);
        assert!(h.flags & STREAM_IMPORTED != 0);
        assert!(
            note.starts_with("grtrace-import: source=trace.dat v7 (zstd"),
            "{note}"
        );
        assert_eq!(recs[0].0, rtype::NOTE_MSG);
        assert_eq!(recs.last().unwrap().0, rtype::NOTE_STREAM_INFO);
        ends += recs
            .iter()
            .filter(|r| r.0 == rtype::EVENT && r.1 == 7)
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
    let w = Workload {
        flavor: Flavor::Sched617,
        jobs: 50,
        cpus: 2,
    };
    let formats = fixture_formats(w.kernel());
    let mut spec = DatSpec::new(7, Some(Codec::Zstd), &formats, 3);
    spec.omit_idle_cpus = true;
    let fs: Vec<_> = formats.iter().map(|(f, _)| f.clone()).collect();
    let mut dw = DatWriter::new(BufWriter::new(File::create(&dat).unwrap()), spec).unwrap();
    w.write(&mut dw, &fs).unwrap();
    dw.finish().unwrap();
    let base = d.join("run");
    let (code, err) = grtimport(&[dat.to_str().unwrap(), "-o", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (h, recs, _) = read_stream(&PathBuf::from(format!("{}.grtrace.2", base.display())));
    assert_eq!(h.cpu, 2);
    assert!(
        recs.iter().all(|r| r.0 != rtype::EVENT),
        "CPU 2 recorded nothing"
    );
    for cpu in 0..2 {
        let (_, recs, _) = read_stream(&PathBuf::from(format!("{}.grtrace.{cpu}", base.display())));
        assert!(
            recs.iter().any(|r| r.0 == rtype::EVENT),
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
    let (code, err) = grtimport(&[dat.to_str().unwrap(), "-o", base.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("grtimport: {}: offset ", dat.display())),
        "{last}"
    );
    assert!(last.contains("cut short"), "{last}");
    let (_, recs, _) = read_stream(&PathBuf::from(format!("{}.grtrace.0", base.display())));
    let commits = recs
        .iter()
        .filter(|r| r.0 == rtype::EVENT && r.1 == 2)
        .count();
    assert!(commits > 500 && commits < 2000, "{commits}");
}

#[test]
fn usage_and_input_errors_have_their_exit_codes() {
    let d = dir("usage");
    assert_eq!(grtimport(&[]).0, 2);
    assert_eq!(grtimport(&["x.dat", "-o", "-", "-D", "/tmp"]).0, 2);
    let junk = d.join("junk.dat");
    std::fs::write(&junk, b"this is not a trace").unwrap();
    let (code, err) = grtimport(&[junk.to_str().unwrap()]);
    assert_eq!(code, 1);
    // not a trace.dat, so read as text: its first line is not trace text
    assert!(
        err.contains("junk.dat: offset 0 (line 1): no [cpu] column"),
        "{err}"
    );
    let bin = d.join("bin.dat");
    std::fs::write(&bin, b"\x7fELF\0\0\0").unwrap();
    let (code, err) = grtimport(&[bin.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("offset 4: neither a trace.dat file nor trace text"),
        "{err}"
    );
    let empty = d.join("empty.dat");
    std::fs::write(&empty, b"").unwrap();
    let (code, err) = grtimport(&[empty.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("empty file"), "{err}");
    let (code, _) = grtimport(&[d.join("missing.dat").to_str().unwrap()]);
    assert_eq!(code, 1);
}
