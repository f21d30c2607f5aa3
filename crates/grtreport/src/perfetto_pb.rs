//! `--perfetto FILE` where FILE is not named `*.json`: the timeline of [`crate::perfetto`]
//! in Perfetto's native protobuf trace (a `.pftrace` that ui.perfetto.dev and
//! trace_processor open), for captures whose JSON would be too big for a browser tab.
//!
//! The content is the JSON export's, drawn the same way (the same lanes, names, counter
//! buckets, instants), encoded as a stream of `TracePacket`s on one packet sequence:
//! * a `GpuInfo` packet per card (trace processor's `gpu` table) and a process track per
//!   card, `card0 (amdgpu)` (pid [`CARD_PID_BASE`] + card, labelled `gpu: card0`), whose
//!   child tracks are a track per ring lane, per context lane (queued parts) and `events`,
//!   and three counter tracks per ring (`ring 0 gfx busy %`, `... outstanding`,
//!   `... fill %`); several cards keep apart by process, and their track and counter
//!   names carry the card as the JSON's do;
//! * a process track per host thread (`Xorg`, pid = its tid) with its lanes (COMMIT to
//!   SUBMIT);
//! * slices as `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` pairs in ns, a job's execution carrying
//!   every phase, its tags, flags and blocker as debug annotations; instants
//!   (`TYPE_INSTANT`) for faults, resets, timeouts, hangs, stalls, messages and lost
//!   records; flows (`flow_ids` / `terminating_flow_ids`) from a submission to its
//!   execution and from a blocker's end to the execution of the job that waited for it.
//!
//! Event categories, instant names, debug annotation names and the tag and flag strings are
//! interned (`InternedData`): the first packet of the sequence clears the incremental state
//! (`SEQ_INCREMENTAL_STATE_CLEARED`) and makes the sequence's incremental clock the
//! packets' default (`TracePacketDefaults.timestamp_clock_id`), the second is the
//! `ClockSnapshot` that puts that clock at 0 on BOOTTIME; every track event carries
//! `SEQ_NEEDS_INCREMENTAL_STATE`. Times are ns since the capture's first record, as in the
//! JSON export, each packet's the step from the packet before (as Perfetto's SDK writes
//! them); the few that go back in time (counter buckets) carry theirs on BOOTTIME. A job's
//! args are the JSON's but those of [`ZERO_LEFT_OUT`] that are 0.
//!
//! Track events are encoded by hand into one reused buffer ([`crate::perfetto_proto`]'s
//! `wire`): no allocation per event; prost encodes the few descriptor packets.
//!
//! The exporters of all cards run on the export thread ([`crate::perfetto_feed`]), which
//! calls them as the engines call a [`Timeline`](crate::engine::Timeline) on the joining
//! thread.
//!
//! Streaming: every packet is encoded as field 1 of `Trace` (tag, length, packet) the
//! moment it is final and goes into a block of about 1 MiB, which is zlib-compressed (on
//! worker threads where there are CPUs to spare) and written as one packet's
//! `compressed_packets`, as Perfetto's service writes with compression on
//! ([`crate::perfetto_zip`]): the file is about a tenth of the JSON's size. What is held
//! back is what the JSON export holds (slices until the watermark passes them), the ends
//! of slices still open and a block per compression thread, so memory is bounded by the
//! jobs in flight, not by the capture.
//!
//! Errors: a failed write is kept and the export stops writing; [`PerfettoPb::finish`]
//! returns it naming the file (the run goes on; the report names what failed), and a file
//! left empty by the failure is removed.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use grtrace_format::Lost;
use prost::Message;

use crate::job::{Job, JobKey};
use crate::joiner::FxMap;
use crate::order::order_by_key;
use crate::perfetto::{PerfettoConfig, CARD_PID_BASE};
use crate::perfetto_proto::{self as pb, field, wire};
use crate::perfetto_zip::Compressor;
use crate::timeline::front::{
    host_slice, msg_name, msg_track, Bucket, DocumentCards, Front, Held, LostRecords, Nesting,
    Pending, Slice, TrackKey, What,
};
use crate::timeline::{self, job_mark, Seen};
use crate::units::push_u64;

/// The packet sequence every packet of the file is on.
pub const SEQUENCE_ID: u32 = 1;

/// Whether `--perfetto PATH` writes the protobuf trace: every file but `*.json` (and `-`,
/// standard output, which keeps the JSON text).
pub fn wants_protobuf(path: &Path) -> bool {
    if grtrace_cli::is_dash(path) {
        return false;
    }
    !path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// Debug annotation names, interned by the first packet of the sequence (iid = index + 1,
/// see [`Arg`]); a phase's value is in ns.
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

/// Tag and flag strings interned so far: (0 tags / 1 flags, bits) -> iid.
#[derive(Default)]
struct Interner {
    strings: FxMap<(u8, u16), u64>,
}

impl Interner {
    /// The iid of the string `bits` of `kind` stand for (`text` makes it), adding it to
    /// `new` (the packet's interned data) the first time.
    fn get(
        &mut self,
        kind: u8,
        bits: u16,
        text: impl FnOnce() -> String,
        new: &mut Option<pb::InternedData>,
    ) -> u64 {
        let next = (BLOCKER_KINDS.len() + self.strings.len()) as u64 + 1;
        *self.strings.entry((kind, bits)).or_insert_with(|| {
            new.get_or_insert_with(Default::default)
                .debug_annotation_string_values
                .push(pb::InternedString {
                    iid: Some(next),
                    str: Some(text().into_bytes()),
                });
            next
        })
    }
}

/// The file the exporters of all cards share: the output, the sequence's interned state
/// and clock, ids handed out, host processes described so far and the first write error.
pub struct PbJoint<W: Write> {
    /// The packets go out in compressed blocks (`perfetto_zip`).
    out: RefCell<Compressor<W>>,
    /// The file's name, for errors (None: not a file, e.g. a test's buffer).
    path: Option<PathBuf>,
    /// The first packets (clearing the incremental state, the clock) were written.
    started: Cell<bool>,
    /// The cards whose exporters write into it (host tracks get one per card when there
    /// are several).
    members: DocumentCards,
    /// Last track uuid handed out (from 1, a byte per reference for the first 127).
    last_id: Cell<u64>,
    /// Last flow id handed out (flow ids are not track uuids: a counter of their own).
    last_flow: Cell<u64>,
    interner: RefCell<Interner>,
    /// Host thread -> uuid of its process track.
    hosts: RefCell<FxMap<u32, u64>>,
    /// The time of the last packet on the incremental clock (ns since the first record).
    clock: Cell<u64>,
    /// Bytes written so far (handed to the writer).
    written: Cell<u64>,
    error: RefCell<Option<io::Error>>,
    buf: RefCell<Vec<u8>>,
}

impl<W: Write> PbJoint<W> {
    /// The shared state of one output `out` named `path`; `several`: the inputs hold more
    /// than one card.
    pub fn new(out: W, path: Option<PathBuf>, several: bool) -> Rc<Self> {
        Rc::new(PbJoint {
            out: RefCell::new(Compressor::new(out)),
            path,
            started: Cell::new(false),
            members: DocumentCards::new(several),
            last_id: Cell::new(0),
            last_flow: Cell::new(0),
            interner: RefCell::default(),
            hosts: RefCell::default(),
            clock: Cell::new(0),
            written: Cell::new(0),
            error: RefCell::new(None),
            buf: RefCell::new(Vec::with_capacity(4096)),
        })
    }

    fn id(&self) -> u64 {
        self.last_id.set(self.last_id.get() + 1);
        self.last_id.get()
    }

    fn flow_id(&self) -> u64 {
        self.last_flow.set(self.last_flow.get() + 1);
        self.last_flow.get()
    }

    /// The first two packets of the sequence: the one clearing the incremental state
    /// (every fixed interned name; packets default to the incremental clock), then the
    /// clock snapshot that puts that clock at 0 on the trace's clock (BOOTTIME, as the
    /// times were before: ns since the first record). Trace processor reads a snapshot
    /// packet for nothing else, hence two.
    fn start(&self) {
        if self.started.replace(true) {
            return;
        }
        self.emit(&pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
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
        self.emit(&pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
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

    /// Writes one packet (built with prost: the few descriptors) as `Trace.packet`
    /// (nothing once a write failed).
    fn emit(&self, p: &pb::TracePacket) {
        self.start();
        if self.error.borrow().is_some() {
            return;
        }
        let mut buf = self.buf.borrow_mut();
        buf.clear();
        buf.push(pb::TRACE_PACKET_TAG);
        p.encode_length_delimited(&mut *buf)
            .expect("a Vec grows as needed");
        self.write(&buf);
    }

    /// Writes a packet at `ts` (ns since the first record) holding the encoded
    /// `TrackEvent` `ev` and, when not empty, the encoded `InternedData` `interned`.
    /// The time is the step from the packet before on the sequence's incremental clock (a
    /// varint of a byte or two, not five); a time before that packet's (a counter bucket
    /// written behind the slices) goes on BOOTTIME as it is.
    fn write_event(&self, ts: u64, interned: &[u8], ev: &[u8]) {
        self.start();
        if self.error.borrow().is_some() {
            return;
        }
        let mut b = self.buf.borrow_mut();
        b.clear();
        let packet = wire::open(&mut b, 1);
        let last = self.clock.get();
        if ts >= last {
            wire::uint(&mut b, field::TIMESTAMP, ts - last);
            self.clock.set(ts);
        } else {
            wire::uint(&mut b, field::TIMESTAMP_CLOCK_ID, pb::CLOCK_BOOTTIME.into());
            wire::uint(&mut b, field::TIMESTAMP, ts);
        }
        wire::uint(&mut b, field::SEQUENCE_ID, SEQUENCE_ID.into());
        // The clock (and names) are the sequence's incremental state.
        wire::uint(
            &mut b,
            field::SEQUENCE_FLAGS,
            pb::SEQ_NEEDS_INCREMENTAL_STATE.into(),
        );
        if !interned.is_empty() {
            wire::bytes(&mut b, field::INTERNED_DATA, interned);
        }
        wire::bytes(&mut b, field::TRACK_EVENT, ev);
        wire::close(&mut b, packet);
        self.write(&b);
    }

    fn write(&self, b: &[u8]) {
        match self.out.borrow_mut().packet(b) {
            Ok(()) => self.written.set(self.written.get() + b.len() as u64),
            Err(e) => *self.error.borrow_mut() = Some(e),
        }
    }

    /// Writes the last compressed blocks and flushes the output; the first error of the
    /// export, naming the file. A file left empty by the failure is removed.
    fn close(&self) -> io::Result<()> {
        if self.error.borrow().is_none() {
            if let Err(e) = self.out.borrow_mut().finish() {
                *self.error.borrow_mut() = Some(e);
            }
        }
        let Some(e) = self.error.borrow_mut().take() else {
            return Ok(());
        };
        let Some(path) = &self.path else {
            return Err(e);
        };
        if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = std::fs::remove_file(path);
        }
        Err(io::Error::new(e.kind(), grtrace_cli::write_error(path, &e)))
    }

    /// A packet on the sequence.
    fn packet(&self) -> pb::TracePacket {
        pb::TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            ..Default::default()
        }
    }
}

/// One lane of a track: a track holding properly nested slices in time order.
struct Lane {
    uuid: u64,
    nesting: Nesting,
}

/// The end of a slice already begun, written once nothing can come before it; of ends at
/// one time, the inner slice's first.
struct End {
    ts: u64,
    depth: u32,
    seq: u64,
    uuid: u64,
    /// The job whose execution ends here (blocker arrows leave from it).
    exec: Option<JobKey>,
}

order_by_key!(End, |e: &End| (e.ts, Reverse(e.depth), e.seq));

/// An execution slice not ended yet in the file.
struct ExecOpen {
    start: u64,
    end: u64,
    /// Its begin is written: arrows from it now leave its end.
    begun: bool,
    /// Flows to the jobs it blocked, written with its begin or end (whichever comes next).
    flows: Vec<u64>,
}

/// The protobuf exporter of one card, on the export thread ([`crate::perfetto_feed`]).
pub struct PerfettoPb<W: Write> {
    joint: Rc<PbJoint<W>>,
    cfg: PerfettoConfig,
    /// The card's process track.
    card_uuid: u64,
    /// What is held back until the watermark passes it, and the counters.
    front: Front,
    tracks: FxMap<TrackKey, Vec<Lane>>,
    ends: BinaryHeap<Reverse<End>>,
    /// Executions handed over whose end is not written yet, for the arrows to the jobs
    /// they blocked.
    exec_open: FxMap<JobKey, ExecOpen>,
    /// Tracks of each ring's busy %, outstanding and fill % (described when first
    /// written).
    counter_tracks: FxMap<u32, [u64; 3]>,
    prefix: String,
    /// The encoded `TrackEvent` being built (its debug annotations as they are added).
    ev: Vec<u8>,
    /// Its own name ([`Name::Own`]).
    name: Vec<u8>,
    /// The encoded `InternedData` it adds (usually none).
    interned: Vec<u8>,
}

/// A debug annotation's value.
enum Val<'a> {
    U(u64),
    F(f64),
    B(bool),
    S(&'a str),
    /// An interned string (its iid).
    I(u64),
}

impl<W: Write> PerfettoPb<W> {
    /// The exporter of card `cfg.card` writing into `joint`'s file; describes the card
    /// (its GPU and process track).
    pub fn in_joint(cfg: PerfettoConfig, joint: Rc<PbJoint<W>>) -> Self {
        let prefix = joint.members.enter(cfg.card);
        let card_uuid = joint.id();
        let p = PerfettoPb {
            card_uuid,
            front: Front::new(cfg.interval_ns, prefix.clone()),
            tracks: FxMap::default(),
            ends: BinaryHeap::new(),
            exec_open: FxMap::default(),
            counter_tracks: FxMap::default(),
            prefix,
            ev: Vec::with_capacity(512),
            name: Vec::with_capacity(64),
            interned: Vec::new(),
            cfg,
            joint,
        };
        let card = format!("card{}", p.cfg.card);
        let mut gpu = p.joint.packet();
        gpu.gpu_info = Some(pb::GpuInfo {
            gpus: vec![pb::Gpu {
                name: Some(card.clone()),
                model: (!p.cfg.driver.is_empty()).then(|| p.cfg.driver.clone()),
            }],
        });
        p.emit(gpu);
        let mut t = p.joint.packet();
        t.track_descriptor = Some(pb::TrackDescriptor {
            uuid: Some(card_uuid),
            name: Some(crate::report::card_name(p.cfg.card, &p.cfg.driver)),
            process: Some(pb::ProcessDescriptor {
                pid: Some(CARD_PID_BASE.wrapping_add(p.cfg.card) as i32),
                process_name: Some(crate::report::card_name(p.cfg.card, &p.cfg.driver)),
                process_labels: vec![format!("gpu: {card}")],
            }),
            child_ordering: Some(pb::CHILD_ORDERING_EXPLICIT),
            description: Some(format!("GPU {card}: rings, queued contexts, counters")),
            ..Default::default()
        });
        p.emit(t);
        p
    }

    fn emit(&self, p: pb::TracePacket) {
        self.joint.emit(&p);
    }

    fn rel(&self, t: u64) -> u64 {
        self.front.rel(t)
    }

    /// Describes a track under `parent`.
    fn describe(&self, uuid: u64, parent: u64, name: String, rank: i64) {
        let mut t = self.joint.packet();
        t.track_descriptor = Some(pb::TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(parent),
            name: Some(name),
            sibling_order_rank: Some(rank.clamp(i32::MIN as i64, i32::MAX as i64) as i32),
            ..Default::default()
        });
        self.emit(t);
    }

    /// Places a slice on a lane of `key`, describing new lanes; returns the lane's track
    /// and the slice's depth in it.
    fn place(&mut self, key: TrackKey, ts: u64, dur: u64) -> (u64, u32) {
        let lanes = self.tracks.entry(key).or_default();
        for l in lanes.iter_mut() {
            if let Some(d) = l.nesting.fits(ts, dur) {
                return (l.uuid, d);
            }
        }
        let n = lanes.len();
        let uuid = self.joint.id();
        let mut lane = Lane {
            uuid,
            nesting: Nesting::default(),
        };
        let depth = lane.nesting.fits(ts, dur).unwrap_or(1);
        self.tracks.entry(key).or_default().push(lane);
        self.front.stats.lanes += 1;
        self.name_lane(key, n, uuid);
        (uuid, depth)
    }

    /// Describes lane `lane` of `key` with the JSON export's thread names and order.
    fn name_lane(&mut self, key: TrackKey, lane: usize, uuid: u64) {
        let (base, rank, parent) = match key {
            TrackKey::Ring(r) => (
                format!("{}{}", self.prefix, self.front.names.ring_label(r)),
                (r.min(999_999) as i64) * 1000,
                self.card_uuid,
            ),
            TrackKey::Ctx(c) => (
                format!("{}ctx {c} queued", self.prefix),
                1_000_000_000 + (c.min(1_000_000) as i64) * 1000,
                self.card_uuid,
            ),
            TrackKey::Events => (format!("{}events", self.prefix), -1, self.card_uuid),
            TrackKey::Host(t) => {
                let comm = self.front.names.procs.get(&t).cloned();
                let comm = comm.unwrap_or_else(|| format!("tid {t}"));
                let parent = self.host_process(t, &comm);
                let name = if self.prefix.is_empty() {
                    comm
                } else {
                    format!("{comm} {}", self.prefix.trim_end())
                };
                (name, 0, parent)
            }
        };
        let name = if lane == 0 {
            base
        } else {
            format!("{base} #{}", lane + 1)
        };
        self.describe(uuid, parent, name, rank + lane.min(999) as i64);
    }

    /// The process track of host thread `t` (described by the first card that needs it).
    fn host_process(&self, t: u32, comm: &str) -> u64 {
        if let Some(&u) = self.joint.hosts.borrow().get(&t) {
            return u;
        }
        let uuid = self.joint.id();
        self.joint.hosts.borrow_mut().insert(t, uuid);
        let mut p = self.joint.packet();
        p.track_descriptor = Some(pb::TrackDescriptor {
            uuid: Some(uuid),
            name: Some(comm.to_string()),
            process: Some(pb::ProcessDescriptor {
                pid: Some(t as i32),
                process_name: Some(comm.to_string()),
                process_labels: Vec::new(),
            }),
            child_ordering: Some(pb::CHILD_ORDERING_EXPLICIT),
            ..Default::default()
        });
        self.emit(p);
        uuid
    }

    /// An instant on a lane: at its time, or just after the lane's last event when the
    /// record came late (counted in `moved`).
    fn lane_instant(&mut self, key: TrackKey, ts: u64) -> (u64, u64) {
        if self.tracks.get(&key).is_none_or(|l| l.is_empty()) {
            self.place(key, ts, 0);
        }
        let lane = &mut self.tracks.get_mut(&key).expect("placed")[0];
        let at = ts.max(lane.nesting.last_ts);
        lane.nesting.last_ts = at;
        let uuid = lane.uuid;
        if at != ts {
            self.front.stats.moved += 1;
        }
        (uuid, at)
    }

    /// Adds a debug annotation (its name's iid) to the event being built.
    fn arg(&mut self, name: u64, v: Val<'_>) {
        let b = &mut self.ev;
        let (value_field, v) = match v {
            Val::U(u) => (field::ARG_UINT, u),
            Val::B(x) => (field::ARG_BOOL, x as u64),
            Val::I(iid) => (field::ARG_STRING_IID, iid),
            Val::F(f) => {
                let at = wire::open(b, field::DEBUG_ANNOTATIONS);
                wire::uint(b, field::ARG_NAME_IID, name);
                wire::double(b, field::ARG_DOUBLE, f);
                wire::close(b, at);
                return;
            }
            Val::S(s) => {
                let at = wire::open(b, field::DEBUG_ANNOTATIONS);
                wire::uint(b, field::ARG_NAME_IID, name);
                wire::bytes(b, field::ARG_STRING, s.as_bytes());
                wire::close(b, at);
                return;
            }
        };
        wire::annotation_varint(b, field::DEBUG_ANNOTATIONS, name, value_field, v);
    }

    /// Writes a track event at `ts` with the annotations added since the last one (its
    /// own name, [`Name::Own`], is in `self.name`).
    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        ty: u64,
        ts: u64,
        track: u64,
        name: Option<Name>,
        cat: Option<u64>,
        flows: (&[u64], &[u64]),
        new: Option<pb::InternedData>,
    ) {
        // The annotations are in `ev` already (field order is free).
        let e = &mut self.ev;
        if let Some(c) = cat {
            wire::uint(e, field::CATEGORY_IIDS, c);
        }
        match name {
            Some(Name::Interned(n)) => wire::uint(e, field::NAME_IID, n),
            Some(Name::Own) => wire::bytes(e, field::NAME, &self.name),
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
        self.interned.clear();
        if let Some(n) = new {
            n.encode(&mut self.interned).expect("a Vec grows as needed");
        }
        let ts = self.rel(ts);
        self.joint.write_event(ts, &self.interned, &self.ev);
        self.ev.clear();
        self.front.stats.events += 1;
    }

    /// Writes the ends of slices at or before `ts` (all of them with `ts` = u64::MAX).
    fn flush_ends(&mut self, ts: u64) {
        while self.ends.peek().is_some_and(|e| e.0.ts <= ts) {
            let Reverse(e) = self.ends.pop().expect("peeked");
            let flows = e
                .exec
                .and_then(|k| self.exec_open.remove(&k))
                .map(|x| x.flows)
                .unwrap_or_default();
            self.event(
                pb::TYPE_SLICE_END,
                e.ts,
                e.uuid,
                None,
                None,
                (&flows, &[]),
                None,
            );
        }
    }

    /// Begins slice `s` of job `j` on a lane of its track, named `{prefix}ctx/seqno{mark}`,
    /// its end held back until nothing can come before it.
    fn job_slice(
        &mut self,
        s: Slice,
        j: &Job,
        flows: (&[u64], &[u64]),
        new: Option<pb::InternedData>,
    ) {
        let (from, dur) = (s.from, s.dur());
        let (uuid, depth) = self.place(s.key, from, dur);
        let n = &mut self.name;
        n.clear();
        n.extend_from_slice(s.prefix.as_bytes());
        push_u64(n, j.key.ctx.into());
        n.push(b'/');
        push_u64(n, j.key.seqno);
        n.extend_from_slice(job_mark(j).as_bytes());
        self.event(
            pb::TYPE_SLICE_BEGIN,
            from,
            uuid,
            Some(Name::Own),
            Some(cat(j)),
            flows,
            new,
        );
        let seq = self.front.next_seq();
        self.ends.push(Reverse(End {
            ts: from + dur,
            depth,
            seq,
            uuid,
            exec: matches!(s.key, TrackKey::Ring(_)).then_some(j.key),
        }));
    }

    /// The annotations of a job's execution slice: the JSON export's args, phases in ns,
    /// but those of [`ZERO_LEFT_OUT`] that are 0 (most jobs: no faults, no preemption, no
    /// VM fault time), and fill only when known (null in the JSON).
    fn job_args(&mut self, j: &Job, new: &mut Option<pb::InternedData>) {
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
        let (tags, flags) = {
            let mut i = self.joint.interner.borrow_mut();
            (
                i.get(0, j.tags.0 as u16, || j.tags.to_string(), new),
                i.get(1, j.flags.0, || j.flags.to_string(), new),
            )
        };
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
            self.arg(Arg::Blocker as u64, Val::S(&who));
            let k = if kind == BLOCKER_KINDS[0] { 1 } else { 2 };
            self.arg(Arg::BlockerKind as u64, Val::I(k));
            if lost != 0 {
                self.arg(Arg::BlockerLost as u64, Val::U(lost));
            }
        }
    }

    /// Keeps the execution of `job` open for the arrows to the jobs it blocks; returns the
    /// flow id of the arrow from its own blocker (0: none). That arrow leaves the blocker's
    /// execution end, not written yet (the blocker ended while this job was in flight,
    /// which holds the watermark back).
    fn open_exec(&mut self, job: &Job) -> u64 {
        let mut blocker_flow = 0;
        if let Some(b) = timeline::blocker(job) {
            if let Some(x) = self.exec_open.get_mut(&b) {
                // Trace processor binds flows in time order: the arrow must leave the
                // blocker's begin or end before the waiter begins.
                let at = if x.begun { x.end } else { x.start };
                if at <= job.start {
                    blocker_flow = self.joint.flow_id();
                    x.flows.push(blocker_flow);
                }
            }
        }
        let x = ExecOpen {
            start: job.start,
            end: job.end,
            begun: false,
            flows: Vec::new(),
        };
        self.exec_open.insert(job.key, x);
        blocker_flow
    }

    /// Writes the host, queued or execution slice of the held job `h`.
    fn write_job(&mut self, what: &What, h: &Held) {
        let (j, flow, blocker_flow) = (&h.job, h.flow, h.blocker_flow);
        let slice = Slice::of(what, j);
        match what {
            What::Host(_) => {
                let f = [flow];
                let flows: &[u64] = if flow != 0 { &f } else { &[] };
                self.job_slice(slice, j, (flows, &[]), None);
            }
            What::Queue(_) => {
                let f = [flow];
                let flows: &[u64] = if flow != 0 && !host_slice(j) { &f } else { &[] };
                if j.phases.queue != 0 {
                    self.arg(Arg::Phase0 as u64 + 1, Val::U(j.phases.queue));
                }
                self.job_slice(slice, j, (flows, &[]), None);
            }
            _ => {
                let mut new = None;
                self.job_args(j, &mut new);
                let both = [flow, blocker_flow];
                let ends: &[u64] = match (flow != 0, blocker_flow != 0) {
                    (true, true) => &both,
                    (true, false) => &both[..1],
                    (false, true) => &both[1..],
                    (false, false) => &[],
                };
                let starts = match self.exec_open.get_mut(&j.key) {
                    Some(x) => {
                        x.begun = true;
                        std::mem::take(&mut x.flows)
                    }
                    None => Vec::new(),
                };
                self.job_slice(slice, j, (&starts, ends), new);
            }
        }
    }

    /// Writes one pending item (the ends of slices before it first).
    fn write_item(&mut self, p: Pending) {
        self.flush_ends(p.ts);
        match p.what {
            What::Host(slot) | What::Queue(slot) | What::Exec(slot) => {
                let h = self.front.lend(slot);
                self.write_job(&p.what, &h);
                self.front.written(slot, h);
            }
            What::Marker(m) => {
                let (uuid, at) = self.lane_instant(TrackKey::Ring(m.ring), p.ts);
                let iid = MARK_NAMES.iter().position(|&n| n == m.name()).unwrap_or(6) as u64 + 1;
                self.arg(Arg::Ring as u64, Val::U(m.ring as u64));
                self.arg(Arg::Ctx as u64, Val::U(m.ctx as u64));
                self.arg(Arg::Seqno as u64, Val::U(m.seqno));
                self.arg(Arg::Arg0 as u64, Val::S(&format!("{:#x}", m.arg0)));
                self.arg(Arg::Status as u64, Val::U(m.arg2 as u64));
                self.instant(at, uuid, Name::Interned(iid));
            }
            What::Msg { pid, text } => {
                let (uuid, at) = self.lane_instant(msg_track(pid), p.ts);
                self.name.clear();
                self.name.extend_from_slice(msg_name(&text).as_bytes());
                self.arg(Arg::Text as u64, Val::S(&String::from_utf8_lossy(&text)));
                self.instant(at, uuid, Name::Own);
            }
            What::Lost(l) => {
                let LostRecords {
                    cpu,
                    source,
                    count,
                    gap,
                } = l;
                self.arg(Arg::Cpu as u64, Val::U(cpu as u64));
                self.arg(Arg::Source as u64, Val::U(source as u64));
                self.arg(Arg::Count as u64, Val::U(count));
                self.arg(Arg::SequenceGap as u64, Val::B(gap));
                self.name.clear();
                self.name.extend_from_slice(b"lost ");
                push_u64(&mut self.name, count);
                self.name.extend_from_slice(b" records");
                self.instant(p.ts, self.card_uuid, Name::Own);
            }
        }
    }

    /// An instant (category `event`) with the annotations added since the last event.
    fn instant(&mut self, ts: u64, track: u64, name: Name) {
        let cat = Some(CAT_EVENT);
        self.event(
            pb::TYPE_INSTANT,
            ts,
            track,
            Some(name),
            cat,
            (&[], &[]),
            None,
        );
    }

    /// Writes every pending item before `w`, the ends of slices before it and the counters
    /// up to `w`.
    fn advance(&mut self, w: u64) {
        while let Some(p) = self.front.pop_before(w) {
            self.write_item(p);
        }
        self.flush_ends(w.saturating_sub(1));
        while let Some((ring, rel_ts, b)) = self.front.next_due_bucket(w) {
            self.counter(ring, rel_ts, b);
        }
    }

    /// The three counters of `ring` at `rel_ts` (fill only when known, as in the JSON).
    fn counter(&mut self, ring: u32, rel_ts: u64, b: Bucket) {
        let uuids = match self.counter_tracks.get(&ring) {
            Some(&u) => u,
            None => {
                let u = [self.joint.id(), self.joint.id(), self.joint.id()];
                let label = self.front.counter_label(ring).to_string();
                for (k, (uuid, what)) in u
                    .iter()
                    .zip(["busy %", "outstanding", "fill %"])
                    .enumerate()
                {
                    let mut t = self.joint.packet();
                    t.track_descriptor = Some(pb::TrackDescriptor {
                        uuid: Some(*uuid),
                        parent_uuid: Some(self.card_uuid),
                        name: Some(format!("{label} {what}")),
                        counter: Some(pb::CounterDescriptor {
                            unit: (k == 1).then_some(pb::UNIT_COUNT),
                            unit_name: (k != 1).then(|| "%".to_string()),
                        }),
                        sibling_order_rank: Some(-1000 + (ring.min(300) * 3) as i32 + k as i32),
                        ..Default::default()
                    });
                    self.emit(t);
                }
                self.counter_tracks.insert(ring, u);
                u
            }
        };
        let busy = (b.busy as f64 * 100.0 / self.cfg.interval_ns as f64).min(100.0);
        // One packet: busy % as the event's value, outstanding and fill % (when known) as
        // extra values of their tracks.
        let e = &mut self.ev;
        debug_assert!(e.is_empty(), "no annotations are pending between events");
        wire::uint(e, field::TYPE, pb::TYPE_COUNTER);
        wire::uint(e, field::TRACK_UUID, uuids[0]);
        wire::double(e, field::DOUBLE_COUNTER_VALUE, busy);
        wire::uint(e, field::EXTRA_COUNTER_TRACK_UUIDS, uuids[1]);
        wire::uint(e, field::EXTRA_COUNTER_VALUES, b.outstanding.into());
        if b.fill != timeline::FILL_UNKNOWN {
            wire::uint(e, field::EXTRA_DOUBLE_COUNTER_TRACK_UUIDS, uuids[2]);
            wire::double(e, field::EXTRA_DOUBLE_COUNTER_VALUES, b.fill as f64 / 10.0);
        }
        self.joint.write_event(rel_ts, &[], &self.ev);
        self.ev.clear();
        self.front.stats.events += 1;
    }
}

/// An event's name: interned (its iid: a few fixed names) or its own (one per job), in
/// the exporter's `name` buffer.
enum Name {
    Interned(u64),
    Own,
}

/// The category iid of a job's slices ([`CATEGORIES`]).
fn cat(j: &Job) -> u64 {
    timeline::job_shown(j) as u64 + 1
}

/// What the export thread ([`crate::perfetto_feed`]) asks of a card's exporter: the
/// calls of [`Timeline`](crate::engine::Timeline), with what needs the joiner found by
/// the joining thread.
impl<W: Write> PerfettoPb<W> {
    /// The run's time origin, once the card's engine knows it.
    pub(crate) fn set_origin(&mut self, origin: u64) {
        self.front.set_origin(origin);
    }

    /// What a record at `t` showed, with the engine's watermark if it computed one.
    pub(crate) fn seen(&mut self, t: u64, seen: Seen, watermark: Option<u64>) {
        if let Some(w) = self.front.take(t, seen, watermark) {
            self.advance(w);
        }
    }

    /// Records lost in a gap of a sequence, drawn at `t` ([`lost_time`](crate::timeline::front::lost_time)).
    pub(crate) fn lost_at(&mut self, l: &Lost, t: u64) {
        self.front.lost_at(l, t);
    }

    /// A finished job that passed the filter.
    pub(crate) fn job(&mut self, job: Job) {
        let Some(slices) = self.front.admit(&job) else {
            return;
        };
        let flow = if slices.submit_arrow() {
            self.joint.flow_id()
        } else {
            0
        };
        let blocker_flow = if slices.exec { self.open_exec(&job) } else { 0 };
        self.front.hold(job, slices, flow, blocker_flow);
    }

    /// End of the card's input (`last_ns`: its last record's time): writes what is left;
    /// the last card to finish closes the file (the export's first error, naming it).
    pub(crate) fn finish(&mut self, last_ns: u64) -> io::Result<()> {
        let end = last_ns.saturating_add(1);
        self.advance(end.saturating_add(2 * self.cfg.interval_ns));
        self.flush_ends(u64::MAX);
        if self.joint.members.leave() > 0 && self.joint.error.borrow().is_none() {
            // Another card's exporter flushes the file.
            return Ok(());
        }
        self.joint.close()
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
            ZERO_LEFT_OUT,
            [
                "submit_host_ns",
                "queue_ns",
                "exec_ns",
                "complete_ns",
                "gpu_wait_ns",
                "vm_fault_ns",
                "total_ns",
                "outstanding",
                "batch",
                "faults",
                "preempts",
                "blocker_lost_ns",
            ]
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

    #[test]
    fn the_file_name_picks_protobuf() {
        assert!(wants_protobuf(Path::new("run.pftrace")));
        assert!(wants_protobuf(Path::new("run")));
        assert!(!wants_protobuf(Path::new("run.json")));
        assert!(!wants_protobuf(Path::new("run.Json")));
        assert!(!wants_protobuf(Path::new("-")));
    }
}
