//! Building records by hand: the one builder that tests, the synthetic generator
//! ([`crate::synth`]) and the simulator's scenarios share.
//!
//! A [`Builder`] numbers the records of each CPU `1, 2, 3, ...` as the kernel does (or
//! leaves every `seq` at 0 for a producer that numbers them itself, [`Builder::unnumbered`]).
//! The CPU and pid are sticky, set on the builder; what belongs to one record is set on the
//! record just pushed:
//!
//! ```
//! use grtrace_format::builder::Builder;
//! use grtrace_format::{Event, Trace, InputSource};
//!
//! let mut b = Builder::new();
//! b.on(1).pid(4101);
//! b.event(Event::COMMIT).job(3, 0, 17).at(1_000).args(0x40, 8, 64, 0);
//! b.event(Event::SUBMIT).job(3, 0, 17).at(1_200);
//! b.on(0).pid(0);
//! b.event(Event::END).job(3, 0, 17).at(9_000);
//! assert_eq!(b.records()[1].0.seq, 2); // CPU 1's second record
//! assert_eq!(b.records()[2].0.seq, 1); // CPU 0's first
//!
//! let data = b.merged_stream(0, "virtio_gpu");
//! let trace = Trace::open(vec![InputSource::Bytes { name: "t".into(), data }]).unwrap();
//! assert_eq!(trace.streams().len(), 1);
//! ```

use std::collections::BTreeMap;

use crate::abi;
use crate::encode::StreamWriter;
use crate::record::{Body, EventBody, Stamp, StreamHeader};
use crate::vocab::Event;

/// A record as the builder keeps it: its stamp and body.
pub type Record = (Stamp, Body<'static>);

/// Records built in order, with per-CPU sequence numbers.
#[derive(Clone, Debug)]
pub struct Builder {
    records: Vec<Record>,
    /// Last sequence number used, by CPU (`None`: records are left unnumbered). A map, not
    /// a table indexed by CPU: any u32 is a CPU number (a test's stray CPU 4294967295).
    seq: Option<BTreeMap<u32, u64>>,
    cpu: u32,
    pid: u32,
}

impl Builder {
    /// A builder that numbers each CPU's records 1, 2, 3, ... in the order they are pushed.
    pub fn new() -> Builder {
        Builder {
            records: Vec::new(),
            seq: Some(BTreeMap::new()),
            cpu: 0,
            pid: 0,
        }
    }

    /// A builder that leaves `seq` at 0, for records another producer numbers (the
    /// simulated kernel numbers a scenario's records as it writes them).
    pub fn unnumbered() -> Builder {
        Builder {
            seq: None,
            ..Builder::new()
        }
    }

    /// The CPU of the records pushed from now on (0 at first).
    pub fn on(&mut self, cpu: u32) -> &mut Builder {
        self.cpu = cpu;
        self
    }

    /// The pid of the records pushed from now on (0 at first).
    pub fn pid(&mut self, pid: u32) -> &mut Builder {
        self.pid = pid;
        self
    }

    /// Pushes an event of `code` (fields 0, time 0 until set on the returned record); any
    /// code, also one this version does not name (`Event(42)`).
    pub fn event(&mut self, code: Event) -> RecordMut<'_> {
        self.record(Body::Event(EventBody {
            code,
            ..EventBody::default()
        }))
    }

    /// Pushes a kernel record of any type (a note such as [`Body::Ring`]), numbered like
    /// an event.
    pub fn record(&mut self, body: Body<'static>) -> RecordMut<'_> {
        let seq = match &mut self.seq {
            Some(seqs) => next_seq(seqs, self.cpu),
            None => 0,
        };
        self.push(seq, body)
    }

    /// Pushes a note written outside the kernel's sequence (by the recorder or a tool):
    /// `seq` 0, and the CPU's numbering does not advance.
    pub fn user_note(&mut self, body: Body<'static>) -> RecordMut<'_> {
        self.push(0, body)
    }

    fn push(&mut self, seq: u64, body: Body<'static>) -> RecordMut<'_> {
        let stamp = Stamp {
            cpu: self.cpu,
            pid: self.pid,
            time_ns: 0,
            seq,
        };
        self.records.push((stamp, body));
        RecordMut(self.records.last_mut().expect("just pushed"))
    }

    /// Removes the records pushed so far, in order, for a producer that writes them out as
    /// it goes (the numbering goes on where it was).
    pub fn drain(&mut self) -> std::vec::Drain<'_, Record> {
        self.records.drain(..)
    }

    /// The records, in the order they were pushed.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The records, in the order they were pushed.
    pub fn into_records(self) -> Vec<Record> {
        self.records
    }

    /// One stream with `header`, the records in the order they were pushed.
    pub fn stream(&self, header: &StreamHeader) -> Vec<u8> {
        write_stream(header, self.records.iter())
    }

    /// One merged stream of card `card` (CPU [`abi::CPU_MERGED`], flag
    /// [`abi::STREAM_MERGED`]), as `grtrace -o -` writes it: see [`merged_stream`].
    pub fn merged_stream(&self, card: u32, driver: &str) -> Vec<u8> {
        merged_stream(&self.records, card, driver)
    }
}

/// The records sorted by time (stable) as one merged stream of card `card`, each CPU's
/// records renumbered 1, 2, 3, ... in time order, as the kernel would have numbered them
/// (so records made in any order, or unnumbered, make a stream without false gaps).
pub fn merged_stream(records: &[Record], card: u32, driver: &str) -> Vec<u8> {
    let mut sorted: Vec<&Record> = records.iter().collect();
    sorted.sort_by_key(|(s, _)| s.time_ns);
    let mut h = StreamHeader::new(abi::CPU_MERGED, card, driver);
    h.flags = abi::STREAM_MERGED;
    let mut seqs = BTreeMap::new();
    let renumbered: Vec<Record> = sorted
        .into_iter()
        .map(|(s, b)| {
            let seq = next_seq(&mut seqs, s.cpu);
            (Stamp { seq, ..*s }, *b)
        })
        .collect();
    write_stream(&h, renumbered.iter())
}

/// The next sequence number of `cpu` (1 for its first record).
fn next_seq(seqs: &mut BTreeMap<u32, u64>, cpu: u32) -> u64 {
    let n = seqs.entry(cpu).or_insert(0);
    *n += 1;
    *n
}

fn write_stream<'r>(header: &StreamHeader, records: impl Iterator<Item = &'r Record>) -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new(), header).expect("writing to memory");
    for (s, b) in records {
        w.write(s, b).expect("writing to memory");
    }
    w.into_inner()
}

impl Default for Builder {
    /// [`Builder::new`]: records numbered per CPU.
    fn default() -> Builder {
        Builder::new()
    }
}

/// The record just pushed, to set its fields (each setter returns it again).
pub struct RecordMut<'b>(&'b mut Record);

impl RecordMut<'_> {
    /// Time in nanoseconds of the trace clock.
    pub fn at(self, time_ns: u64) -> Self {
        self.0 .0.time_ns = time_ns;
        self
    }

    /// This record's pid (the builder's stays).
    pub fn pid(self, pid: u32) -> Self {
        self.0 .0.pid = pid;
        self
    }

    /// This record's sequence number, replacing the one the builder gave (a test that
    /// wants a gap or a repeat).
    pub fn seq(self, seq: u64) -> Self {
        self.0 .0.seq = seq;
        self
    }

    /// The job an event belongs to: context, ring and seqno.
    pub fn job(self, ctx: u32, ring: u32, seqno: u64) -> Self {
        self.with_event(|e| {
            e.ctx = ctx;
            e.ring = ring;
            e.seqno = seqno;
        })
    }

    /// An event's `arg0` to `arg3` (their meaning depends on the code: FORMAT.md 4.1).
    pub fn args(self, arg0: u64, arg1: u64, arg2: u32, arg3: u32) -> Self {
        self.with_event(|e| {
            e.arg0 = arg0;
            e.arg1 = arg1;
            e.arg2 = arg2;
            e.arg3 = arg3;
        })
    }

    /// An event's flags (`abi::eflag`).
    pub fn flags(self, flags: u16) -> Self {
        self.with_event(|e| e.flags = flags)
    }

    /// Every field of an event body but its code.
    pub fn body(self, body: EventBody) -> Self {
        self.with_event(|e| {
            *e = EventBody {
                code: e.code,
                ..body
            }
        })
    }

    /// The stamp as it is now.
    pub fn stamp(&self) -> Stamp {
        self.0 .0
    }

    fn with_event(self, f: impl FnOnce(&mut EventBody)) -> Self {
        match &mut self.0 .1 {
            Body::Event(e) => f(e),
            other => panic!("event fields set on a {:?} record", other.rtype()),
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{InputSource, Item, Trace};

    #[test]
    fn each_cpu_is_numbered_on_its_own_and_notes_outside_the_kernel_are_not() {
        let mut b = Builder::new();
        b.on(0).event(Event::COMMIT).at(1);
        b.on(1).event(Event::COMMIT).at(2);
        b.on(0).record(Body::Process { comm: b"x" }).at(3);
        b.user_note(Body::Msg { text: b"hi" }).at(4);
        b.event(Event::END).at(5);
        let seqs: Vec<(u32, u64)> = b.records().iter().map(|(s, _)| (s.cpu, s.seq)).collect();
        assert_eq!(seqs, [(0, 1), (1, 1), (0, 2), (0, 0), (0, 3)]);
        b.on(u32::MAX).event(Event::END).at(6);
        assert_eq!(b.records()[5].0.seq, 1, "any CPU number, no table up to it");
        let mut u = Builder::unnumbered();
        u.on(3).event(Event::START);
        assert_eq!(u.records()[0].0.seq, 0);
    }

    #[test]
    fn fields_land_where_the_reader_finds_them() {
        let mut b = Builder::new();
        b.on(2).pid(77);
        b.event(Event::SUBMIT)
            .job(5, 1, 9)
            .at(1_000)
            .args(10, 20, 30, 40)
            .flags(abi::eflag::FENCED);
        b.event(Event(42)).at(2_000).pid(0);
        let mut h = StreamHeader::new(2, 0, "t");
        h.session_id = 1;
        let data = b.stream(&h);
        let mut t = Trace::open(vec![InputSource::Bytes {
            name: "t".into(),
            data,
        }])
        .unwrap();
        let mut got = Vec::new();
        t.for_each(|i| {
            if let Item::Record(r) = i {
                got.push((r.stamp(), r.body().rtype(), format!("{:?}", r.body())));
            }
            std::ops::ControlFlow::Continue(())
        });
        assert_eq!(got.len(), 2);
        let (st, _, body) = &got[0];
        assert_eq!((st.cpu, st.pid, st.time_ns, st.seq), (2, 77, 1_000, 1));
        let ev = EventBody {
            code: Event::SUBMIT,
            flags: abi::eflag::FENCED,
            ctx: 5,
            ring: 1,
            seqno: 9,
            arg0: 10,
            arg1: 20,
            arg2: 30,
            arg3: 40,
        };
        assert_eq!(*body, format!("{:?}", Body::Event(ev)));
        assert_eq!((got[1].0.pid, got[1].0.seq), (0, 2));
    }

    #[test]
    fn a_merged_stream_is_numbered_in_time_order() {
        let mut b = Builder::new();
        b.on(1).event(Event::END).at(30);
        b.on(1).event(Event::START).at(10);
        b.on(0).event(Event::COMMIT).at(20);
        let data = b.merged_stream(4, "virtio_gpu");
        let h = StreamHeader::parse(&data).unwrap();
        assert_eq!((h.cpu, h.card), (abi::CPU_MERGED, 4));
        assert!(h.is_merged());
        let mut t = Trace::open(vec![InputSource::Bytes {
            name: "m".into(),
            data,
        }])
        .unwrap();
        let mut got = Vec::new();
        let sum = t.for_each(|i| {
            if let Item::Record(r) = i {
                got.push((r.cpu(), r.seq(), r.time_ns()));
            }
            std::ops::ControlFlow::Continue(())
        });
        assert_eq!(got, [(1, 1, 10), (0, 1, 20), (1, 2, 30)]);
        assert_eq!(sum.gaps, 0);
    }
}
