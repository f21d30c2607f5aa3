//! Property tests: whatever the writer writes, the reader reads back unchanged (both byte
//! orders), and the merge delivers every record once, in (time, cpu, seq) order, with exactly
//! the sequence gaps that were made — through mapped inputs and through the pipe reader alike.

mod common;

use std::ops::ControlFlow;

use grtrace_format::abi::{self, lost_source};
use grtrace_format::trace::{Item, Trace};
use grtrace_format::{
    Body, ClockSync, Endian, Event, EventBody, Lost, RecordView, RingNote, Stamp, StreamHeader,
    StreamInfo, StreamWriter,
};
use proptest::prelude::*;

/// A body with owned strings (Body borrows).
#[derive(Clone, Debug)]
enum OwnedBody {
    Event(EventBody),
    Process(Vec<u8>),
    Ring(u32, u32, u64, u32, u32, Vec<u8>),
    Msg(Vec<u8>),
    Clock(ClockSync),
    Lost(Lost),
    Info(StreamInfo),
}

impl OwnedBody {
    fn body(&self) -> Body<'_> {
        match self {
            OwnedBody::Event(e) => Body::Event(*e),
            OwnedBody::Process(c) => Body::Process { comm: c },
            OwnedBody::Ring(ring, engine_class, size, unit, flags, name) => Body::Ring(RingNote {
                ring: *ring,
                engine_class: *engine_class,
                size: *size,
                unit: *unit,
                flags: *flags,
                name,
            }),
            OwnedBody::Msg(t) => Body::Msg { text: t },
            OwnedBody::Clock(c) => Body::ClockSync(*c),
            OwnedBody::Lost(l) => Body::Lost(*l),
            OwnedBody::Info(i) => Body::StreamInfo(*i),
        }
    }
}

fn non_nul(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(1u8..=255, 0..=max)
}

fn body_strategy() -> impl Strategy<Value = OwnedBody> {
    prop_oneof![
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>()
        )
            .prop_map(|(code, flags, ctx, ring, seqno, arg0, arg1, arg2, arg3)| {
                OwnedBody::Event(EventBody {
                    code: Event(code),
                    flags,
                    ctx,
                    ring,
                    seqno,
                    arg0,
                    arg1,
                    arg2,
                    arg3,
                })
            }),
        non_nul(16).prop_map(OwnedBody::Process),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            non_nul(32)
        )
            .prop_map(|(a, b, c, d, f, n)| OwnedBody::Ring(a, b, c, d, f, n)),
        proptest::collection::vec(any::<u8>(), 0..=1024).prop_map(OwnedBody::Msg),
        (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(a, b, c)| OwnedBody::Clock(
            ClockSync {
                gpu_clock_id: a,
                gpu_time: b,
                gpu_freq_hz: c
            }
        )),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(
                |(cpu, source, count, first_ns, last_ns)| OwnedBody::Lost(Lost {
                    cpu,
                    source,
                    count,
                    first_ns,
                    last_ns
                })
            ),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u32>()).prop_map(|(a, b, c, d)| {
            OwnedBody::Info(StreamInfo {
                kernel_dropped: a,
                records: b,
                bytes: c,
                flags: d,
            })
        }),
    ]
}

fn stamp_strategy() -> impl Strategy<Value = Stamp> {
    (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(cpu, pid, time_ns, seq)| {
        Stamp {
            cpu,
            pid,
            time_ns,
            seq,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_record_reads_back_as_written(
        recs in proptest::collection::vec((stamp_strategy(), body_strategy()), 0..40),
        big in any::<bool>(),
    ) {
        let mut h = StreamHeader::new(3, 1, "virtio_gpu");
        h.endian = if big { Endian::Big } else { Endian::Little };
        h.session_id = 77;
        let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
        for (st, b) in &recs {
            w.write(st, &b.body()).unwrap();
        }
        let data = w.into_inner();
        let parsed = StreamHeader::parse(&data).unwrap();
        prop_assert_eq!(&parsed, &h);
        let mut pos = abi::STREAM_HEADER_SIZE;
        for (st, b) in &recs {
            let r = RecordView::parse(&data[pos..], h.endian, pos as u64).unwrap();
            prop_assert_eq!(r.stamp(), *st);
            prop_assert_eq!(r.body(), b.body());
            pos += r.size();
        }
        prop_assert_eq!(pos, data.len());
    }

    /// Random per-CPU streams with dropped sequence numbers: the merge is ordered, complete,
    /// and reports exactly the drops; a merged dump read through a pipe gives the same items.
    #[test]
    fn merge_is_ordered_complete_and_finds_every_gap(
        cpus in proptest::collection::vec(
            proptest::collection::vec((0u64..50, any::<bool>()), 1..60), 1..5),
        step in 1usize..300,
    ) {
        let mut streams = Vec::new();
        let mut expect_gaps = 0u64;
        let mut expect_records = 0usize;
        let mut merged_in = Vec::new();
        for (cpu, recs) in cpus.iter().enumerate() {
            let h = StreamHeader::new(cpu as u32, 0, "t");
            let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
            let mut t = 1000u64;
            let mut pending_drop = 0;
            for (seq0, (dt, drop)) in recs.iter().enumerate() {
                t += dt;
                let seq = seq0 as u64 + 1;
                // Never drop the last record (a gap shows only when a later record comes).
                if *drop && seq0 + 1 < recs.len() {
                    pending_drop += 1;
                    continue;
                }
                if pending_drop > 0 {
                    expect_gaps += pending_drop;
                    pending_drop = 0;
                }
                let st = Stamp { cpu: cpu as u32, pid: 1, time_ns: t, seq };
                let b = Body::Event(EventBody { code: Event::COMMIT, ..EventBody::default() });
                w.write(&st, &b).unwrap();
                merged_in.push((st, b));
                expect_records += 1;
            }
            streams.push(w.into_inner());
        }
        let srcs = streams
            .iter()
            .enumerate()
            .map(|(i, d)| common::bytes(&format!("cpu{i}"), d.clone()))
            .collect();
        let mut t = Trace::open(srcs).unwrap();
        let mut keys = Vec::new();
        let mut gap_records = 0;
        let mut items = Vec::new();
        let sum = t.for_each(|it| {
            match it {
                Item::Record(r) => {
                    keys.push((r.time_ns(), r.cpu(), r.seq()));
                    items.push(format!("{:?}", (r.stamp(), r.body())));
                }
                Item::Gap(g) => {
                    assert_eq!(g.source, lost_source::SEQ_GAP);
                    assert!(g.first_ns <= g.last_ns);
                    gap_records += g.count;
                    items.push(format!("{g:?}"));
                }
                Item::Stream(s) => items.push(format!("{:?}", s.header)),
            }
            ControlFlow::Continue(())
        });
        prop_assert!(sum.errors.is_empty());
        prop_assert_eq!(keys.len(), expect_records);
        prop_assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        prop_assert_eq!(gap_records, expect_gaps);
        prop_assert_eq!(sum.gap_records, expect_gaps);

        // The same records as one merged stream, shuffled into per-CPU chunks of 3, piped.
        let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "t");
        h.flags = abi::STREAM_MERGED;
        let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
        let mut per_cpu: Vec<Vec<(Stamp, Body)>> = vec![Vec::new(); cpus.len()];
        for (st, b) in merged_in {
            per_cpu[st.cpu as usize].push((st, b));
        }
        let mut idx = vec![0usize; per_cpu.len()];
        loop {
            let mut any = false;
            for (c, recs) in per_cpu.iter().enumerate() {
                for _ in 0..3 {
                    if let Some((st, b)) = recs.get(idx[c]) {
                        w.write(st, b).unwrap();
                        idx[c] += 1;
                        any = true;
                    }
                }
            }
            if !any {
                break;
            }
        }
        let src = common::pipe("-", w.into_inner(), step);
        let mut t = Trace::open(vec![src]).unwrap();
        let mut piped = Vec::new();
        let psum = t.for_each(|it| {
            piped.push(match it {
                Item::Record(r) => format!("{:?}", (r.stamp(), r.body())),
                Item::Gap(g) => format!("{g:?}"),
                Item::Stream(s) => format!("{:?}", s.header),
            });
            ControlFlow::Continue(())
        });
        prop_assert!(psum.errors.is_empty());
        prop_assert_eq!(psum.reordered, 0);
        prop_assert_eq!(piped, items);
    }
}
