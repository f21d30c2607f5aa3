//! The reader against damaged and foreign input: every truncation point, wrong magic, the other
//! byte order, future versions, unknown record types, absurd sizes, empty and missing files.
//! Each must end its input with one error naming the byte offset, after delivering everything
//! before the damage, while the other inputs carry on.

mod common;

use std::ops::ControlFlow;
use std::path::PathBuf;

use common::{bytes, describe, pipe};
use grtrace_format::abi::{self, rec_off, stream_off};
use grtrace_format::synth::{generate, SynthConfig};
use grtrace_format::trace::{resolve_inputs, ErrorKind, InputSource, RunSummary, Trace};
use grtrace_format::{Endian, FormatError, RecordType, RecordView, Records, StreamHeader};

/// Two per-CPU streams of a small synthetic run.
fn two_streams(endian: Endian) -> Vec<Vec<u8>> {
    let cfg = SynthConfig {
        records: 40,
        cpus: 2,
        seed: 5,
        endian,
        ..SynthConfig::default()
    };
    let mut bufs: Vec<Vec<u8>> = Vec::new();
    // `generate` consumes its writers; collect through shared buffers.
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let cells: Vec<_> = (0..2)
        .map(|_| std::rc::Rc::new(std::cell::RefCell::new(Vec::new())))
        .collect();
    let writers: Vec<Shared> = cells.iter().map(|c| Shared(c.clone())).collect();
    generate(&cfg, writers).unwrap();
    for c in cells {
        bufs.push(c.borrow().clone());
    }
    bufs
}

/// A one-line description of each delivered item.
fn items(sources: Vec<InputSource>) -> (Vec<String>, RunSummary) {
    let mut t = match Trace::open(sources) {
        Ok(t) => t,
        Err(e) => {
            let s = RunSummary {
                errors: vec![e],
                ..RunSummary::default()
            };
            return (Vec::new(), s);
        }
    };
    let mut out = Vec::new();
    let sum = t.for_each(|it| {
        out.push(describe(&it));
        ControlFlow::Continue(())
    });
    (out, sum)
}

/// Record start offsets of a whole stream.
fn record_offsets(data: &[u8]) -> Vec<usize> {
    let h = StreamHeader::parse(data).unwrap();
    let mut offs = Vec::new();
    let mut it = Records::new(data, &h);
    loop {
        let at = it.offset();
        match it.next() {
            Some(Ok(_)) => offs.push(at),
            Some(Err(e)) => panic!("{e}"),
            None => break,
        }
    }
    offs
}

#[test]
fn truncation_at_every_byte_keeps_everything_before_it() {
    let s = two_streams(Endian::Little);
    let (full, _) = items(vec![bytes("a", s[0].clone()), bytes("b", s[1].clone())]);
    let (only_b, _) = items(vec![bytes("b", s[1].clone())]);
    let offs = record_offsets(&s[0]);
    for cut in 0..=s[0].len() {
        for via_pipe in [false, true] {
            let a = s[0][..cut].to_vec();
            let src_a = if via_pipe {
                pipe("a", a, 1 + cut % 13)
            } else {
                bytes("a", a)
            };
            let (got, sum) = items(vec![src_a, bytes("b", s[1].clone())]);
            // Records of `a` wholly inside the cut are delivered, in merged order.
            let whole = offs
                .iter()
                .enumerate()
                .filter(|(i, &o)| {
                    let end = offs.get(i + 1).copied().unwrap_or(s[0].len());
                    o >= abi::STREAM_HEADER_SIZE && end <= cut
                })
                .count();
            let a_items = got.iter().filter(|l| l.starts_with("0 ")).count();
            assert_eq!(a_items, whole, "cut {cut} pipe {via_pipe}");
            let b_items = got.iter().filter(|l| l.starts_with("1 ")).count();
            assert_eq!(
                b_items,
                only_b.len(),
                "cut {cut}: the other input carries on"
            );
            if cut == s[0].len() {
                assert!(sum.errors.is_empty());
                assert_eq!(got, full);
                continue;
            }
            let at_boundary = cut >= abi::STREAM_HEADER_SIZE && offs.contains(&cut);
            if at_boundary {
                assert!(sum.errors.is_empty(), "cut {cut} at a record boundary");
                continue;
            }
            assert_eq!(
                sum.errors.len(),
                1,
                "cut {cut} pipe {via_pipe}: {:?}",
                sum.errors
            );
            let e = &sum.errors[0];
            assert_eq!(e.file, "a");
            let msg = e.to_string();
            assert!(msg.starts_with("a: byte "), "{msg}");
            match &e.error {
                ErrorKind::Format(FormatError::Empty) => assert_eq!(cut, 0),
                ErrorKind::Format(FormatError::TruncatedHeader { .. }) => {
                    assert!(cut < abi::STREAM_HEADER_SIZE)
                }
                ErrorKind::Format(FormatError::TruncatedRecord { offset, .. }) => {
                    // The damage is named at the start of the cut record.
                    let start = *offs.iter().rev().find(|&&o| o <= cut).unwrap();
                    assert_eq!(*offset as usize, start, "cut {cut}");
                }
                other => panic!("cut {cut}: unexpected {other:?}"),
            }
        }
    }
}

#[test]
fn the_other_byte_order_reads_the_same() {
    let le = two_streams(Endian::Little);
    let be = two_streams(Endian::Big);
    assert_ne!(le[0], be[0]);
    let (a, sa) = items(le.into_iter().map(|d| bytes("x", d)).collect());
    let (b, sb) = items(be.into_iter().map(|d| bytes("x", d)).collect());
    assert_eq!(a, b);
    assert!(sa.errors.is_empty() && sb.errors.is_empty());
    assert!(a.len() > 40);
}

#[test]
fn wrong_magic_future_version_and_empty_name_offsets() {
    let s = two_streams(Endian::Little);
    let mut bad = s[0].clone();
    bad[3] = b'X';
    let mut future = s[0].clone();
    Endian::Little.put_u16(&mut future, stream_off::VERSION_MAJOR, 2);
    let mut order = s[0].clone();
    order[stream_off::BYTE_ORDER] = 7;
    let (got, sum) = items(vec![
        bytes("bad", bad),
        bytes("future", future),
        bytes("order", order),
        bytes("empty", Vec::new()),
        bytes("b", s[1].clone()),
    ]);
    let msgs: Vec<String> = sum.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        msgs,
        vec![
            "bad: byte 0: not a grtrace stream (bad magic)",
            "future: byte 10: unsupported future format version 2.0 (this reader knows 1.0)",
            "order: byte 8: unknown byte order mark 7",
            "empty: byte 0: empty file (no stream header)",
        ]
    );
    assert!(got.iter().all(|l| l.starts_with("1 ")));
    assert!(!got.is_empty());
}

#[test]
fn unknown_record_types_are_skipped_and_counted() {
    let s = two_streams(Endian::Little);
    let offs = record_offsets(&s[0]);
    let at = offs[3];
    let mut data = s[0][..at].to_vec();
    // A 48-byte record of a type from the future, then the rest.
    let mut rec = vec![0u8; 48];
    Endian::Little.put_u16(&mut rec, rec_off::TYPE, 99);
    Endian::Little.put_u16(&mut rec, rec_off::SIZE, 48);
    data.extend_from_slice(&rec);
    data.extend_from_slice(&s[0][at..]);
    let (with, sum) = items(vec![bytes("a", data.clone())]);
    let (without, _) = items(vec![bytes("a", s[0].clone())]);
    assert_eq!(with, without);
    assert_eq!(sum.unknown_records, 1);
    assert!(sum.errors.is_empty());
    // Same through the pipe reader.
    let (piped, psum) = items(vec![pipe("a", data, 5)]);
    assert_eq!(piped, without);
    assert_eq!(psum.unknown_records, 1);
}

#[test]
fn absurd_sizes_end_the_input_at_that_record() {
    let s = two_streams(Endian::Little);
    let offs = record_offsets(&s[0]);
    let at = offs[4];
    for (size, expect) in [
        (0u16, "corrupt record: type 1 with invalid size 0"),
        (12, "corrupt record: type 1 with invalid size 12"),
        (76, "corrupt record: type 1 with invalid size 76"),
        (65528, "truncated record"),
    ] {
        let mut data = s[0].clone();
        Endian::Little.put_u16(&mut data, at + rec_off::SIZE, size);
        for src in [bytes("a", data.clone()), pipe("a", data.clone(), 64)] {
            let (got, sum) = items(vec![src]);
            assert_eq!(got.len(), 4, "size {size}: the four records before it");
            assert_eq!(sum.errors.len(), 1);
            let msg = sum.errors[0].to_string();
            assert!(msg.starts_with(&format!("a: byte {at}: {expect}")), "{msg}");
        }
    }
}

#[test]
fn a_message_longer_than_its_record_is_corruption() {
    let mut h = StreamHeader::new(0, 0, "t");
    h.endian = Endian::Little;
    let mut w = grtrace_format::StreamWriter::new(Vec::new(), &h).unwrap();
    let st = grtrace_format::Stamp {
        cpu: 0,
        pid: 1,
        time_ns: 5,
        seq: 1,
    };
    w.write(&st, &grtrace_format::Body::Msg { text: b"hello" })
        .unwrap();
    let mut data = w.into_inner();
    Endian::Little.put_u32(&mut data, 128 + abi::note_off::MSG_LEN, 4000);
    let (got, sum) = items(vec![bytes("m", data)]);
    assert!(got.is_empty());
    assert_eq!(
        sum.errors[0].to_string(),
        "m: byte 128: corrupt message note: text length 4000 in a 48-byte record"
    );
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("grtrace-reader-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn base_names_find_every_cpu_and_warn_about_holes_and_empty_files() {
    let d = temp_dir("base");
    let s = two_streams(Endian::Little);
    std::fs::write(d.join("run.grtrace.0"), &s[0]).unwrap();
    std::fs::write(d.join("run.grtrace.2"), &s[1]).unwrap();
    std::fs::write(d.join("run.grtrace.3"), b"").unwrap();
    std::fs::write(d.join("run.grtrace.x"), b"junk").unwrap();
    std::fs::write(d.join("other.grtrace.1"), &s[1]).unwrap();
    let base = d.join("run").display().to_string();
    let (srcs, warnings) = resolve_inputs(std::slice::from_ref(&base)).unwrap();
    let names: Vec<String> = srcs.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        vec![format!("{base}.grtrace.0"), format!("{base}.grtrace.2")]
    );
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0]
        .to_string()
        .contains("missing CPU file(s) for CPU 1"));
    assert!(warnings[1]
        .to_string()
        .contains("run.grtrace.3: byte 0: empty file"));
    let missing = d.join("nothing").display().to_string();
    let e = resolve_inputs(&[missing]).unwrap_err();
    assert!(e.to_string().contains("no such file"), "{e}");
    // Mapped files read like in-memory ones.
    let (from_files, sum) = items(srcs);
    assert!(sum.errors.is_empty());
    let (from_mem, _) = items(vec![bytes("a", s[0].clone()), bytes("b", s[1].clone())]);
    assert_eq!(from_files, from_mem);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_merged_stream_of_concatenated_headers_reads_like_the_files() {
    let s = two_streams(Endian::Little);
    let (files, _) = items(vec![bytes("a", s[0].clone()), bytes("b", s[1].clone())]);
    // `cat run.grtrace.0 run.grtrace.1 | grtparse -i -`: small inputs fit the read-ahead.
    let mut cat = s[0].clone();
    cat.extend_from_slice(&s[1]);
    let (piped, sum) = items(vec![pipe("-", cat, 4096)]);
    assert!(sum.errors.is_empty(), "{:?}", sum.errors);
    assert_eq!(piped, files);
}

#[test]
fn record_views_check_sizes_per_type() {
    let mut rec = vec![0u8; 64];
    Endian::Big.put_u16(&mut rec, rec_off::TYPE, RecordType::EVENT.0);
    Endian::Big.put_u16(&mut rec, rec_off::SIZE, 64);
    let e = RecordView::parse(&rec, Endian::Big, 100).unwrap_err();
    assert_eq!(
        e,
        FormatError::BadRecordSize {
            offset: 100,
            rtype: RecordType::EVENT,
            size: 64
        }
    );
}

/// A merged stream whose records claim 50,000 different CPUs (crafted or corrupt) is still
/// read in one pass: CPUs past the table share one queue, so the work stays linear.
#[test]
fn absurd_cpu_numbers_do_not_multiply_queues() {
    let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "t");
    h.flags = abi::STREAM_MERGED;
    let mut w = grtrace_format::StreamWriter::new(Vec::new(), &h).unwrap();
    let n = 50_000u32;
    for i in 0..n {
        let st = grtrace_format::Stamp {
            cpu: i.wrapping_mul(2_654_435_761),
            pid: 1,
            time_ns: i as u64,
            seq: 0,
        };
        let b = grtrace_format::Body::Event(grtrace_format::EventBody {
            code: grtrace_format::Event(1),
            ..Default::default()
        });
        w.write(&st, &b).unwrap();
    }
    let data = w.into_inner();
    for src in [bytes("m", data.clone()), pipe("m", data, 65536)] {
        let (got, sum) = items(vec![src]);
        assert_eq!(got.len(), n as usize);
        assert!(sum.errors.is_empty());
    }
}

/// A merged stream whose CPUs arrive in chunks, read through a reader that returns a few
/// bytes at a time, comes out in time order.
#[test]
fn pipe_input_is_reordered_per_cpu() {
    let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "test");
    h.flags = abi::STREAM_MERGED;
    let mut w = grtrace_format::StreamWriter::new(Vec::new(), &h).unwrap();
    let chunks = [(0u32, 0u64), (1, 0), (0, 100), (1, 100)];
    for (cpu, t0) in chunks {
        for i in 0..10u64 {
            let st = grtrace_format::Stamp {
                cpu,
                pid: 1,
                time_ns: t0 + i * 10,
                seq: t0 / 10 + i + 1,
            };
            let b = grtrace_format::Body::Event(grtrace_format::EventBody {
                code: grtrace_format::Event::COMMIT,
                ..Default::default()
            });
            w.write(&st, &b).unwrap();
        }
    }
    let data = w.into_inner();
    let (out, sum) = items(vec![pipe("pipe", data.clone(), 7)]);
    assert_eq!(out.len(), 40);
    assert_eq!(sum.reordered, 0, "{out:?}");
    assert_eq!(sum.gaps, 0);
    let (out2, _) = items(vec![bytes("file", data)]);
    assert_eq!(out, out2);
}
