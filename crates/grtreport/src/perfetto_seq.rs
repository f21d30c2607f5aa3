//! The encoding half of `--perfetto FILE.pftrace`: what [`crate::perfetto_pb`] draws goes
//! into [`Chunk`]s of [`Op`]s, and each chunk is encoded, on a worker thread of
//! [`crate::perfetto_zip`], as a packet sequence of its own in one compressed block.
//!
//! Why a sequence per chunk: a sequence's interned names and incremental clock are state
//! that each packet depends on, so one sequence would have to be encoded in order on one
//! thread, and the encoding is about half of the export's work. A chunk that starts its
//! own sequence (id = its place in the file + 1) needs nothing from the chunks before it.
//! Its first packet clears the incremental state and interns every fixed name, its second
//! is the clock snapshot that puts the sequence's incremental clock at 0 on BOOTTIME;
//! tag and flag strings are interned as they turn up in the chunk. Track uuids and flow
//! ids are global in a trace, so tracks and arrows cross chunks as they did.
//!
//! What is encoded is the JSON export's content: a job's execution carries every phase,
//! its tags, flags and blocker as debug annotations, but those of [`ZERO_LEFT_OUT`] that
//! are 0. Track events are encoded by hand ([`crate::perfetto_proto`]'s `wire`): no
//! allocation per event; prost encodes the few descriptor packets.

use prost::Message;

use crate::job::Job;
use crate::joiner::FxMap;
use crate::perfetto_proto::{self as pb, field, wire};
use crate::perfetto_zip::Block;
use crate::timeline::front::{msg_name, Bucket, LostRecords};
use crate::timeline::{self, job_mark, Marker};
use crate::units::push_u64;

/// Ops in a chunk: about half a megabyte of packets (an op is a packet of 46 bytes on
/// average) and a few hundred bytes of first packets per chunk. Twice as many made the
/// file 0.3 % smaller and the run's peak memory 8 MiB larger.
const CHUNK_OPS: usize = 12_288;

/// Debug annotation names, interned by the first packet of each sequence (iid = index +
/// 1, see [`Arg`]); a phase's value is in ns.
const ARG_NAMES: [&str; 28] = [
    "ctx",
    "ring",
    "seqno",
    "pid",
    "submit_host_ns",
    "queue_ns",
    "exec_ns",
    "complete_ns",
    "gpu_wait_ns",
    "vm_fault_ns",
    "total_ns",
    "tags",
    "flags",
    "fill",
    "outstanding",
    "batch",
    "faults",
    "preempts",
    "blocker",
    "blocker_kind",
    "blocker_lost_ns",
    "arg0",
    "status",
    "text",
    "cpu",
    "source",
    "count",
    "sequence_gap",
];

/// The iid of each debug annotation name (its place in [`ARG_NAMES`] + 1).
#[derive(Clone, Copy)]
enum Arg {
    Ctx = 1,
    Ring,
    Seqno,
    Pid,
    /// The first phase (PHASE_NAMES order); the others follow.
    Phase0,
    Tags = 12,
    Flags,
    Fill,
    Outstanding,
    Batch,
    Faults,
    Preempts,
    Blocker,
    BlockerKind,
    BlockerLost,
    Arg0,
    Status,
    Text,
    Cpu,
    Source,
    Count,
    SequenceGap,
}

/// Slice args left out when 0 (the JSON export lists them): the phases (one not measured
/// holds 0), a blocker's lost time and the counts, 0 for most jobs. Six bytes each.
pub const ZERO_LEFT_OUT: [&str; 12] = [
    phase_arg_name(0),
    phase_arg_name(1),
    phase_arg_name(2),
    phase_arg_name(3),
    phase_arg_name(4),
    phase_arg_name(5),
    phase_arg_name(6),
    arg_name(Arg::Outstanding),
    arg_name(Arg::Batch),
    arg_name(Arg::Faults),
    arg_name(Arg::Preempts),
    arg_name(Arg::BlockerLost),
];

/// The debug annotation name of `arg`.
const fn arg_name(arg: Arg) -> &'static str {
    ARG_NAMES[arg as usize - 1]
}

/// The debug annotation name of phase `i` (PHASE_NAMES order).
const fn phase_arg_name(i: usize) -> &'static str {
    ARG_NAMES[Arg::Phase0 as usize - 1 + i]
}

/// Event categories, interned by the first packet (iid = index + 1).
const CATEGORIES: [&str; 4] = [
    timeline::JOB_CATEGORIES[0],
    timeline::JOB_CATEGORIES[1],
    timeline::JOB_CATEGORIES[2],
    "event",
];
/// The category iid of instants.
const CAT_EVENT: u64 = 4;
/// Names of instants of ring events, interned by the first packet (iid = index + 1).
const MARK_NAMES: [&str; 7] = [
    "VM_FAULT", "VM_RETRY", "RESET", "TIMEOUT", "HANG", "STALL", "EVENT",
];
/// Interned debug annotation strings: a blocker's kind (iids 1 and 2), then tags and flags
/// as they turn up.
const BLOCKER_KINDS: [&str; 2] = ["dep", "queue"];

/// The interned data of the first packet: every fixed name.
fn fixed_interned() -> pb::InternedData {
    let names = |v: &[&str]| {
        v.iter()
            .enumerate()
            .map(|(i, n)| pb::InternedName {
                iid: Some(i as u64 + 1),
                name: Some(n.to_string()),
            })
            .collect()
    };
    pb::InternedData {
        event_categories: names(&CATEGORIES),
        event_names: names(&MARK_NAMES),
        debug_annotation_names: names(&ARG_NAMES),
        debug_annotation_string_values: BLOCKER_KINDS
            .iter()
            .enumerate()
            .map(|(i, s)| pb::InternedString {
                iid: Some(i as u64 + 1),
                str: Some(s.as_bytes().to_vec()),
            })
            .collect(),
    }
}

/// Which slice of a job an [`Op::Begin`] begins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Part {
    /// On the submitting thread, COMMIT to SUBMIT.
    Host,
    /// On its context, SUBMIT to START.
    Queue,
    /// On its ring, START to END: the job's annotations.
    Exec,
}

/// What a job's slice is called: `{prefix}ctx/seqno{mark}`, in category `cat`.
#[derive(Clone, Copy)]
pub(crate) struct JobLabel {
    ctx: u32,
    seqno: u64,
    mark: &'static str,
    cat: u8,
}

impl JobLabel {
    fn of(j: &Job) -> JobLabel {
        JobLabel {
            ctx: j.key.ctx,
            seqno: j.key.seqno,
            mark: job_mark(j),
            cat: timeline::job_shown(j) as u8 + 1,
        }
    }
}

/// The job of an [`Op::Begin`]: what its slice needs of it (a copy of the whole job only
/// for the execution, which carries its annotations).
pub(crate) enum Begun {
    /// The host part.
    Host(JobLabel),
    /// The queued part, and the queue phase (ns).
    Queue(JobLabel, u64),
    /// The execution: the job's index in the chunk's jobs.
    Exec(u32),
}

/// The flow ids of an event, in [`Chunk`]'s list: `out` start (or step) flows, then
/// `term` end them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Flows {
    at: u32,
    out: u32,
    term: u32,
}

/// One thing drawn, in file order; times are ns since the run's origin.
pub(crate) enum Op {
    /// A packet built whole (a descriptor, a GPU); its sequence id is set when encoded.
    Packet(Box<pb::TracePacket>),
    /// The begin of a job's slice, named `{prefix}ctx/seqno{mark}`.
    Begin {
        ts: u64,
        track: u64,
        prefix: &'static str,
        job: Begun,
        flows: Flows,
    },
    /// The end of a slice, with the arrows that leave it.
    End { ts: u64, track: u64, flows: Flows },
    /// A ring event's instant (a fault, a reset, ...).
    Marker { ts: u64, track: u64, marker: Marker },
    /// A message's instant.
    Msg {
        ts: u64,
        track: u64,
        text: Box<[u8]>,
    },
    /// Lost records' instant.
    Lost {
        ts: u64,
        track: u64,
        lost: LostRecords,
    },
    /// A ring's three counters: busy % (on `tracks[0]`), outstanding and fill.
    Counter {
        ts: u64,
        tracks: [u64; 3],
        busy: f64,
        bucket: Bucket,
    },
}

/// What one packet sequence draws, filled by the exporters and encoded on a worker.
#[derive(Default)]
pub(crate) struct Chunk {
    ops: Vec<Op>,
    /// The jobs of its [`Op::Begin`]s.
    jobs: Vec<Job>,
    /// The flow ids of its ops ([`Flows`]).
    flows: Vec<u64>,
    /// The encoder's buffers, kept from chunk to chunk.
    scratch: Scratch,
}

impl Chunk {
    /// Adds `op`.
    pub(crate) fn push(&mut self, op: Op) {
        self.ops.push(op);
    }

    /// What an [`Op::Begin`] of slice `part` of `job` needs of it.
    pub(crate) fn begun(&mut self, part: Part, job: &Job) -> Begun {
        match part {
            Part::Host => Begun::Host(JobLabel::of(job)),
            Part::Queue => Begun::Queue(JobLabel::of(job), job.phases.queue),
            Part::Exec => {
                self.jobs.push(job.clone());
                Begun::Exec((self.jobs.len() - 1) as u32)
            }
        }
    }

    /// Keeps the flow ids of an event.
    pub(crate) fn flows(&mut self, out: &[u64], term: &[u64]) -> Flows {
        let at = self.flows.len() as u32;
        self.flows.extend_from_slice(out);
        self.flows.extend_from_slice(term);
        Flows {
            at,
            out: out.len() as u32,
            term: term.len() as u32,
        }
    }

    fn flows_of(&self, f: Flows) -> (&[u64], &[u64]) {
        let (at, out) = (f.at as usize, f.out as usize);
        let all = &self.flows[at..at + out + f.term as usize];
        all.split_at(out)
    }
}

impl Block for Chunk {
    fn full(&self) -> bool {
        self.ops.len() >= CHUNK_OPS
    }

    fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn encode(&mut self, index: u64, out: &mut Vec<u8>) {
        let id = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut seq = Seq {
            id,
            clock: 0,
            s: &mut scratch,
            out,
        };
        seq.s.strings.clear();
        seq.start();
        // Taken out for the loop (its packets get their sequence id in place), put back
        // emptied: its memory is kept.
        let mut ops = std::mem::take(&mut self.ops);
        for op in &mut ops {
            seq.op(op, self);
        }
        ops.clear();
        self.ops = ops;
        self.scratch = scratch;
        self.jobs.clear();
        self.flows.clear();
    }
}

/// The buffers of an encoding.
#[derive(Default)]
struct Scratch {
    /// Tag and flag strings interned on the sequence: (0 tags / 1 flags, bits) -> iid.
    strings: FxMap<(u8, u16), u64>,
    /// The encoded `TrackEvent` being built.
    ev: Vec<u8>,
    /// Its own name.
    name: Vec<u8>,
    /// The encoded `InternedData` it adds (usually none).
    interned: Vec<u8>,
    /// Interned data being added.
    new: Option<pb::InternedData>,
    /// The packet's fields before the event.
    head: Vec<u8>,
    /// A packet built with prost.
    packet: Vec<u8>,
}

/// A debug annotation's value.
enum Val<'a> {
    U(u64),
    F(f64),
    B(bool),
    S(&'a [u8]),
    /// An interned string (its iid).
    I(u64),
}

/// Appends a debug annotation named by `name_iid` whose value `put` writes (one that is not
/// a varint: its length is known only once written).
fn nested(b: &mut Vec<u8>, name_iid: u64, put: impl FnOnce(&mut Vec<u8>)) {
    let at = wire::open(b, field::DEBUG_ANNOTATIONS);
    wire::uint(b, field::ARG_NAME_IID, name_iid);
    put(b);
    wire::close(b, at);
}

/// An event's name: interned (its iid: a few fixed names) or its own, in the scratch's
/// `name`.
enum Name {
    Interned(u64),
    Own,
}

/// One chunk being encoded as packet sequence `id` onto `out`.
struct Seq<'a> {
    id: u32,
    /// The time of the last packet on the incremental clock.
    clock: u64,
    s: &'a mut Scratch,
    out: &'a mut Vec<u8>,
}

impl Seq<'_> {
    /// The first two packets of the sequence: the one clearing the incremental state
    /// (every fixed interned name; packets default to the incremental clock), then the
    /// clock snapshot that puts that clock at 0 on the trace's clock (BOOTTIME, as the
    /// times were before: ns since the first record). Trace processor reads a snapshot
    /// packet for nothing else, hence two.
    fn start(&mut self) {
        self.packet(&mut pb::TracePacket {
            sequence_flags: Some(pb::SEQ_INCREMENTAL_STATE_CLEARED),
            first_packet_on_sequence: Some(true),
            interned_data: Some(fixed_interned()),
            trace_packet_defaults: Some(pb::TracePacketDefaults {
                timestamp_clock_id: Some(pb::CLOCK_INCREMENTAL),
            }),
            ..Default::default()
        });
        let clock = |id, incremental: bool| pb::Clock {
            clock_id: Some(id),
            timestamp: Some(0),
            is_incremental: incremental.then_some(true),
        };
        self.packet(&mut pb::TracePacket {
            clock_snapshot: Some(pb::ClockSnapshot {
                clocks: vec![
                    clock(pb::CLOCK_BOOTTIME, false),
                    clock(pb::CLOCK_INCREMENTAL, true),
                ],
                primary_trace_clock: Some(pb::CLOCK_BOOTTIME as i32),
            }),
            ..Default::default()
        });
    }

    /// Writes one packet built with prost (on this sequence) as `Trace.packet`.
    fn packet(&mut self, p: &mut pb::TracePacket) {
        p.trusted_packet_sequence_id = Some(self.id);
        let b = &mut self.s.packet;
        b.clear();
        b.push(pb::TRACE_PACKET_TAG);
        p.encode_length_delimited(&mut *b)
            .expect("a Vec grows as needed");
        self.out.extend_from_slice(b);
    }

    fn op(&mut self, op: &mut Op, chunk: &Chunk) {
        match op {
            Op::Packet(p) => self.packet(p),
            &mut Op::Begin {
                ts,
                track,
                prefix,
                ref job,
                flows,
            } => {
                let label = match *job {
                    Begun::Host(label) => label,
                    Begun::Queue(label, queue) => {
                        if queue != 0 {
                            self.arg(Arg::Phase0 as u64 + 1, Val::U(queue));
                        }
                        label
                    }
                    Begun::Exec(i) => {
                        let j = &chunk.jobs[i as usize];
                        self.job_args(j);
                        JobLabel::of(j)
                    }
                };
                let n = &mut self.s.name;
                n.clear();
                n.extend_from_slice(prefix.as_bytes());
                push_u64(n, label.ctx.into());
                n.push(b'/');
                push_u64(n, label.seqno);
                n.extend_from_slice(label.mark.as_bytes());
                let (cat, flows) = (Some(label.cat.into()), chunk.flows_of(flows));
                self.event(pb::TYPE_SLICE_BEGIN, ts, track, Some(Name::Own), cat, flows);
            }
            &mut Op::End { ts, track, flows } => {
                let flows = chunk.flows_of(flows);
                self.event(pb::TYPE_SLICE_END, ts, track, None, None, flows);
            }
            &mut Op::Marker { ts, track, marker } => {
                let m = marker;
                let iid = MARK_NAMES.iter().position(|&n| n == m.name()).unwrap_or(6) as u64 + 1;
                self.arg(Arg::Ring as u64, Val::U(m.ring as u64));
                self.arg(Arg::Ctx as u64, Val::U(m.ctx as u64));
                self.arg(Arg::Seqno as u64, Val::U(m.seqno));
                self.arg(
                    Arg::Arg0 as u64,
                    Val::S(format!("{:#x}", m.arg0).as_bytes()),
                );
                self.arg(Arg::Status as u64, Val::U(m.arg2 as u64));
                self.instant(ts, track, Name::Interned(iid));
            }
            Op::Msg { ts, track, text } => {
                self.s.name.clear();
                self.s.name.extend_from_slice(msg_name(text).as_bytes());
                self.arg(
                    Arg::Text as u64,
                    Val::S(String::from_utf8_lossy(text).as_bytes()),
                );
                self.instant(*ts, *track, Name::Own);
            }
            &mut Op::Lost { ts, track, lost } => {
                let LostRecords {
                    cpu,
                    source,
                    count,
                    gap,
                } = lost;
                self.arg(Arg::Cpu as u64, Val::U(cpu as u64));
                self.arg(Arg::Source as u64, Val::U(source as u64));
                self.arg(Arg::Count as u64, Val::U(count));
                self.arg(Arg::SequenceGap as u64, Val::B(gap));
                let n = &mut self.s.name;
                n.clear();
                n.extend_from_slice(b"lost ");
                push_u64(n, count);
                n.extend_from_slice(b" records");
                self.instant(ts, track, Name::Own);
            }
            &mut Op::Counter {
                ts,
                tracks,
                busy,
                bucket,
            } => self.counter(ts, tracks, busy, bucket),
        }
    }

    /// The tag or flag string `bits` of `kind` stand for (`text` makes it): its iid,
    /// interned with the event the first time on the sequence.
    fn string(&mut self, kind: u8, bits: u16, text: impl FnOnce() -> String) -> u64 {
        let next = (BLOCKER_KINDS.len() + self.s.strings.len()) as u64 + 1;
        let new = &mut self.s.new;
        *self.s.strings.entry((kind, bits)).or_insert_with(|| {
            new.get_or_insert_with(Default::default)
                .debug_annotation_string_values
                .push(pb::InternedString {
                    iid: Some(next),
                    str: Some(text().into_bytes()),
                });
            next
        })
    }

    /// Adds a debug annotation (its name's iid) to the event being built.
    fn arg(&mut self, name: u64, v: Val<'_>) {
        let b = &mut self.s.ev;
        let (value_field, v) = match v {
            Val::U(u) => (field::ARG_UINT, u),
            Val::B(x) => (field::ARG_BOOL, x as u64),
            Val::I(iid) => (field::ARG_STRING_IID, iid),
            Val::F(f) => return nested(b, name, |b| wire::double(b, field::ARG_DOUBLE, f)),
            Val::S(s) => return nested(b, name, |b| wire::bytes(b, field::ARG_STRING, s)),
        };
        wire::annotation_varint(b, field::DEBUG_ANNOTATIONS, name, value_field, v);
    }

    /// The annotations of a job's execution slice: the JSON export's args, phases in ns,
    /// but those of [`ZERO_LEFT_OUT`] that are 0 (most jobs: no faults, no preemption, no
    /// VM fault time), and fill only when known (null in the JSON).
    fn job_args(&mut self, j: &Job) {
        for (name, v) in [
            (Arg::Ctx, j.key.ctx as u64),
            (Arg::Ring, j.key.ring as u64),
            (Arg::Seqno, j.key.seqno),
            (Arg::Pid, j.pid as u64),
        ] {
            self.arg(name as u64, Val::U(v));
        }
        for (i, v) in j.phases.as_array().into_iter().enumerate() {
            if v != 0 {
                self.arg(Arg::Phase0 as u64 + i as u64, Val::U(v));
            }
        }
        let tags = self.string(0, j.tags.0 as u16, || j.tags.to_string());
        let flags = self.string(1, j.flags.0, || j.flags.to_string());
        self.arg(Arg::Tags as u64, Val::I(tags));
        self.arg(Arg::Flags as u64, Val::I(flags));
        if j.fill.is_finite() {
            self.arg(Arg::Fill as u64, Val::F(j.fill as f64));
        }
        for (name, v) in [
            (Arg::Outstanding, j.outstanding),
            (Arg::Batch, j.batch),
            (Arg::Faults, j.faults),
            (Arg::Preempts, j.preempts),
        ] {
            if v != 0 {
                self.arg(name as u64, Val::U(v as u64));
            }
        }
        if let Some((kind, who, lost)) = timeline::blocker_info(j) {
            self.arg(Arg::Blocker as u64, Val::S(who.as_bytes()));
            let k = if kind == BLOCKER_KINDS[0] { 1 } else { 2 };
            self.arg(Arg::BlockerKind as u64, Val::I(k));
            if lost != 0 {
                self.arg(Arg::BlockerLost as u64, Val::U(lost));
            }
        }
    }

    /// An instant (category `event`) with the annotations added since the last event.
    fn instant(&mut self, ts: u64, track: u64, name: Name) {
        let flows: (&[u64], &[u64]) = (&[], &[]);
        self.event(
            pb::TYPE_INSTANT,
            ts,
            track,
            Some(name),
            Some(CAT_EVENT),
            flows,
        );
    }

    /// Writes a track event at `ts` with the annotations added since the last one (its
    /// own name, [`Name::Own`], is in the scratch's `name`).
    fn event(
        &mut self,
        ty: u64,
        ts: u64,
        track: u64,
        name: Option<Name>,
        cat: Option<u64>,
        flows: (&[u64], &[u64]),
    ) {
        // The annotations are in `ev` already (field order is free).
        let e = &mut self.s.ev;
        if let Some(c) = cat {
            wire::uint(e, field::CATEGORY_IIDS, c);
        }
        match name {
            Some(Name::Interned(n)) => wire::uint(e, field::NAME_IID, n),
            Some(Name::Own) => wire::bytes(e, field::NAME, &self.s.name),
            None => {}
        }
        wire::uint(e, field::TYPE, ty);
        wire::uint(e, field::TRACK_UUID, track);
        for &f in flows.0 {
            wire::fixed64(e, field::FLOW_IDS, f);
        }
        for &f in flows.1 {
            wire::fixed64(e, field::TERMINATING_FLOW_IDS, f);
        }
        self.write_event(ts);
    }

    /// A ring's counters at `ts`, in one packet: busy % as the event's value, outstanding
    /// and fill % (when known) as extra values of their tracks.
    fn counter(&mut self, ts: u64, tracks: [u64; 3], busy: f64, b: Bucket) {
        let e = &mut self.s.ev;
        debug_assert!(e.is_empty(), "no annotations are pending between events");
        wire::uint(e, field::TYPE, pb::TYPE_COUNTER);
        wire::uint(e, field::TRACK_UUID, tracks[0]);
        wire::double(e, field::DOUBLE_COUNTER_VALUE, busy);
        wire::uint(e, field::EXTRA_COUNTER_TRACK_UUIDS, tracks[1]);
        wire::uint(e, field::EXTRA_COUNTER_VALUES, b.outstanding.into());
        if b.fill != timeline::FILL_UNKNOWN {
            wire::uint(e, field::EXTRA_DOUBLE_COUNTER_TRACK_UUIDS, tracks[2]);
            wire::double(e, field::EXTRA_DOUBLE_COUNTER_VALUES, b.fill as f64 / 10.0);
        }
        self.write_event(ts);
    }

    /// Writes a packet at `ts` holding the `TrackEvent` built in `ev` and the strings it
    /// interns. The time is the step from the packet before on the sequence's incremental
    /// clock (a varint of a byte or two, not five); a time before that packet's (a
    /// counter bucket written behind the slices) goes on BOOTTIME as it is.
    fn write_event(&mut self, ts: u64) {
        let s = &mut *self.s;
        let h = &mut s.head;
        h.clear();
        if ts >= self.clock {
            wire::uint(h, field::TIMESTAMP, ts - self.clock);
            self.clock = ts;
        } else {
            wire::uint(h, field::TIMESTAMP_CLOCK_ID, pb::CLOCK_BOOTTIME.into());
            wire::uint(h, field::TIMESTAMP, ts);
        }
        wire::uint(h, field::SEQUENCE_ID, self.id.into());
        // The clock (and names) are the sequence's incremental state.
        wire::uint(
            h,
            field::SEQUENCE_FLAGS,
            pb::SEQ_NEEDS_INCREMENTAL_STATE.into(),
        );
        if let Some(n) = s.new.take() {
            s.interned.clear();
            n.encode(&mut s.interned).expect("a Vec grows as needed");
            wire::bytes(h, field::INTERNED_DATA, &s.interned);
        }
        wire::key(h, field::TRACK_EVENT, 2);
        wire::varint(h, s.ev.len() as u64);
        let o = &mut *self.out;
        o.push(pb::TRACE_PACKET_TAG);
        wire::varint(o, (h.len() + s.ev.len()) as u64);
        o.extend_from_slice(h);
        o.extend_from_slice(&s.ev);
        s.ev.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::PHASE_NAMES;
    use grtrace_format::Event;

    #[test]
    fn annotation_ids_name_what_they_hold() {
        let name = arg_name;
        for (i, p) in PHASE_NAMES.iter().enumerate() {
            assert_eq!(phase_arg_name(i), format!("{p}_ns"));
        }
        assert_eq!(name(Arg::Ctx), "ctx");
        assert_eq!(name(Arg::Pid), "pid");
        assert_eq!(name(Arg::Tags), "tags");
        assert_eq!(name(Arg::BlockerLost), "blocker_lost_ns");
        assert_eq!(name(Arg::SequenceGap), "sequence_gap");
        assert_eq!(ARG_NAMES.len(), Arg::SequenceGap as usize);
        // written out here: the names a reader of the file sees left out when 0
        assert_eq!(
            ZERO_LEFT_OUT.join(" "),
            "submit_host_ns queue_ns exec_ns complete_ns gpu_wait_ns vm_fault_ns total_ns \
             outstanding batch faults preempts blocker_lost_ns"
        );
        assert_eq!(CATEGORIES[CAT_EVENT as usize - 1], "event");
        let marks = [
            Event::VM_FAULT,
            Event::VM_RETRY,
            Event::RESET,
            Event::TIMEOUT,
            Event::HANG,
            Event::STALL,
        ];
        for (e, m) in marks.iter().zip(MARK_NAMES) {
            assert_eq!(e.name(), Some(m));
        }
    }
}
