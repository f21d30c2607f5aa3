use super::*;
use crate::abi;
use crate::endian::Endian;
use crate::vocab::Event;
use std::io;

use crate::encode::StreamWriter;
use crate::record::{Body, EventBody, Stamp};
use crate::view::Records;

fn ev(code: u16) -> Body<'static> {
    Body::Event(EventBody {
        code: Event(code),
        ..EventBody::default()
    })
}

/// A per-CPU stream with events at the given (time, seq).
fn stream(cpu: u32, recs: &[(u64, u64)], endian: Endian) -> Vec<u8> {
    let mut h = StreamHeader::new(cpu, 0, "test");
    h.endian = endian;
    let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
    for &(t, s) in recs {
        let st = Stamp {
            cpu,
            pid: 1,
            time_ns: t,
            seq: s,
        };
        w.write(&st, &ev(1)).unwrap();
    }
    w.into_inner()
}

fn collect(sources: Vec<InputSource>) -> (Vec<String>, RunSummary) {
    let mut t = Trace::open(sources).unwrap();
    let mut out = Vec::new();
    let sum = t.for_each(|it| {
        out.push(match it {
            Item::Record(r) => format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq()),
            Item::Gap(g) => format!("gap{}:{}:{}-{}", g.cpu, g.count, g.first_ns, g.last_ns),
            Item::Stream(s) => format!("stream{}@{}", s.header.card, s.offset),
        });
        ControlFlow::Continue(())
    });
    (out, sum)
}

fn bytes(name: &str, data: Vec<u8>) -> InputSource {
    InputSource::Bytes {
        name: name.into(),
        data,
    }
}

#[test]
fn merges_by_time_then_cpu_and_reports_gaps() {
    let a = stream(0, &[(10, 1), (20, 2), (30, 3)], Endian::Little);
    let b = stream(1, &[(10, 1), (15, 2), (40, 5)], Endian::Big);
    let (out, sum) = collect(vec![bytes("b", b), bytes("a", a)]);
    assert_eq!(
        out,
        vec![
            "0:10:1",
            "1:10:1",
            "1:15:2",
            "0:20:2",
            "0:30:3",
            "gap1:2:15-40",
            "1:40:5"
        ]
    );
    assert_eq!(sum.gaps, 1);
    assert_eq!(sum.gap_records, 2);
    assert!(sum.errors.is_empty());
}

#[test]
fn damage_ends_one_input_and_keeps_what_came_before() {
    let mut a = stream(0, &[(10, 1), (20, 2), (30, 3)], Endian::Little);
    let b = stream(1, &[(11, 1), (21, 2)], Endian::Little);
    a.truncate(a.len() - 5);
    let (out, sum) = collect(vec![bytes("a", a), bytes("b", b)]);
    assert_eq!(out, vec!["0:10:1", "1:11:1", "0:20:2", "1:21:2"]);
    assert_eq!(sum.errors.len(), 1);
    assert_eq!(
        sum.errors[0].to_string(),
        "a: byte 272: truncated record (67 of 72 bytes)"
    );
}

/// `for_each_raw` delivers the same records in the same order, events in slices.
#[test]
fn raw_runs_match_items() {
    let a = stream(
        0,
        &[(10, 1), (20, 2), (21, 3), (30, 6), (31, 7)],
        Endian::Little,
    );
    let b = stream(1, &[(15, 1), (25, 2)], Endian::Big);
    let c = stream(2, &[(5, 1), (50, 2)], Endian::NATIVE);
    let srcs = || {
        vec![
            bytes("a", a.clone()),
            bytes("b", b.clone()),
            bytes("c", c.clone()),
        ]
    };
    let (want, wsum) = collect(srcs());
    let mut t = Trace::open(srcs()).unwrap();
    let mut got = Vec::new();
    let mut slices = 0;
    let sum = t.for_each_raw(|it| {
        match it {
            RawItem::Events { bytes, count } => {
                slices += 1;
                let recs: Vec<_> = Records::bare(bytes, Endian::NATIVE).collect();
                assert_eq!(recs.len() as u64, count);
                for r in recs {
                    let r = r.unwrap();
                    got.push(format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq()));
                }
            }
            RawItem::Item(Item::Record(r)) => {
                got.push(format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq()))
            }
            RawItem::Item(Item::Gap(g)) => got.push(format!(
                "gap{}:{}:{}-{}",
                g.cpu, g.count, g.first_ns, g.last_ns
            )),
            RawItem::Item(Item::Stream(s)) => {
                got.push(format!("stream{}@{}", s.header.card, s.offset))
            }
        }
        ControlFlow::Continue(())
    });
    assert_eq!(got, want);
    assert_eq!(sum.records, wsum.records);
    assert_eq!(sum.gaps, 1);
    assert!(slices >= 3 && slices < want.len(), "{slices}");
}

/// With a merged input, `for_each_raw` delivers every native event alone.
#[test]
fn raw_events_of_a_merged_input_come_one_by_one() {
    let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "test");
    h.flags = abi::STREAM_MERGED;
    let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
    for (cpu, t, seq) in [(0, 10, 1), (1, 5, 1), (0, 20, 3), (1, 25, 2)] {
        let st = Stamp {
            cpu,
            pid: 1,
            time_ns: t,
            seq,
        };
        w.write(&st, &ev(1)).unwrap();
    }
    let data = w.into_inner();
    let (want, _) = collect(vec![bytes("m", data.clone())]);
    let mut t = Trace::open(vec![bytes("m", data)]).unwrap();
    let mut got = Vec::new();
    t.for_each_raw(|it| {
        got.push(match it {
            RawItem::Events { bytes, count } => {
                assert_eq!(count, 1);
                let r = RecordView::parse(bytes, Endian::NATIVE, 0).unwrap();
                assert_eq!(r.size(), bytes.len());
                format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq())
            }
            RawItem::Item(Item::Gap(g)) => {
                format!("gap{}:{}:{}-{}", g.cpu, g.count, g.first_ns, g.last_ns)
            }
            RawItem::Item(Item::Record(r)) => panic!("native event as an item: {r:?}"),
            RawItem::Item(Item::Stream(s)) => format!("stream{}@{}", s.header.card, s.offset),
        });
        ControlFlow::Continue(())
    });
    assert_eq!(got, want);
    assert_eq!(want.len(), 5);
}

/// Found by the fuzzer: huge sequence jumps must not overflow the gap counters.
#[test]
fn huge_sequence_jumps_saturate() {
    let a = stream(0, &[(10, 1), (20, u64::MAX), (30, 2)], Endian::Little);
    let b = stream(1, &[(10, 1), (20, u64::MAX - 1)], Endian::Little);
    let (out, sum) = collect(vec![bytes("a", a), bytes("b", b)]);
    assert_eq!(out.len(), 7);
    assert_eq!(sum.gaps, 2);
    assert_eq!(sum.gap_records, u64::MAX);
    assert_eq!(sum.seq_backwards, 1);
}

#[test]
fn backwards_sequence_is_warned_with_offset() {
    let a = stream(0, &[(10, 1), (20, 2), (30, 2)], Endian::Little);
    let (out, sum) = collect(vec![bytes("a", a)]);
    assert_eq!(out.len(), 3);
    assert_eq!(sum.seq_backwards, 1);
    assert_eq!(
        sum.warnings[0].to_string(),
        "a: byte 272: cpu 0: sequence 2 after 2 (repeated or backwards)"
    );
}

/// Crafted CPU numbers cannot multiply a merged input's queues: CPUs at or above
/// `MAX_CPUS` share one (checked on the queues themselves; the delivered items alone do
/// not show it).
#[test]
fn merged_input_queues_stay_within_max_cpus() {
    let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "test");
    h.flags = abi::STREAM_MERGED;
    let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
    let n = 50_000u32;
    for i in 0..n {
        let st = Stamp {
            cpu: i.wrapping_mul(2_654_435_761),
            pid: 1,
            time_ns: i as u64,
            seq: 0,
        };
        w.write(&st, &ev(1)).unwrap();
    }
    let data = w.into_inner();
    let pipe = InputSource::Stream {
        name: "pipe".into(),
        reader: Box::new(io::Cursor::new(data.clone())),
    };
    for src in [bytes("file", data), pipe] {
        let mut t = Trace::open(vec![src]).unwrap();
        let mut sum = RunSummary::default();
        let mut m = t.merger(&mut sum);
        let mut delivered = 0u32;
        m.run(&mut sum, &mut |_, _| {
            delivered += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(delivered, n);
        assert!(sum.errors.is_empty());
        let queues = m.demux[0].queues.len();
        assert!(queues <= MAX_CPUS as usize + 1, "{queues} queues");
    }
}

/// A damaged embedded header is named at its own byte offset plus the offset of the damage
/// inside it, by a typed error (no re-parsing of message text).
#[test]
fn a_damaged_embedded_header_is_named_at_its_offset() {
    let mut data = stream(0, &[(10, 1), (20, 2)], Endian::Little);
    let at = data.len() as u64;
    let mut next = stream(0, &[(30, 3)], Endian::Little);
    let off = abi::stream_off::VERSION_MAJOR;
    next[off..off + 2].copy_from_slice(&9u16.to_le_bytes());
    data.extend_from_slice(&next);
    let (out, sum) = collect(vec![bytes("cat", data)]);
    assert_eq!(out, vec!["0:10:1", "0:20:2"]);
    assert_eq!(sum.errors.len(), 1, "{:?}", sum.errors);
    let e = &sum.errors[0];
    assert_eq!(e.offset(), Some(at + off as u64));
    assert!(matches!(e.error, ErrorKind::EmbeddedHeader { at: a, .. } if a == at));
    assert_eq!(
        e.to_string(),
        format!(
            "cat: byte {}: embedded stream header: unsupported future format version 9.0 (this reader knows 1.0)",
            at + off as u64
        )
    );
}

/// With no inputs there is no file to name: the library does not invent one.
#[test]
fn no_inputs_names_no_file() {
    let e = Trace::open(Vec::new())
        .err()
        .expect("no inputs is an error");
    assert_eq!(e.file, "");
    assert_eq!(e.error, ErrorKind::NoInputs { given: 0 });
    assert_eq!(e.to_string(), "no inputs");
}
