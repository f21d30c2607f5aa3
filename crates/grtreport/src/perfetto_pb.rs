//! `--perfetto FILE` where FILE is not named `*.json`: the timeline of [`crate::perfetto`]
//! in Perfetto's native protobuf trace (a `.pftrace` that ui.perfetto.dev and
//! trace_processor open), for captures whose JSON would be too big for a browser tab.
//!
//! The content is the JSON export's, drawn the same way (the same lanes, names, counter
//! buckets, instants), as a stream of `TracePacket`s:
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
//! This module draws: it decides what goes where and when (lanes, track uuids, flow ids,
//! the order of begins and ends) and hands each packet over as an [`Op`] in a chunk. The
//! encoding is [`crate::perfetto_seq`]'s: each chunk becomes a packet sequence of its own,
//! with its interned names and incremental clock, encoded and zlib-compressed on worker
//! threads ([`crate::perfetto_zip`]) and written as one packet's `compressed_packets` of
//! about half a MiB, as Perfetto's service writes with compression on. Times are ns since the
//! capture's first record, as in the JSON export.
//!
//! The exporters of all cards run on the export thread ([`crate::perfetto_feed`]), which
//! calls them as the engines call their [`DrawnTimeline`](crate::engine::DrawnTimeline).
//!
//! Streaming: what is held back is what the JSON export holds (slices until the watermark
//! passes them), the ends of slices still open and a chunk per compression thread, so
//! memory is bounded by the jobs in flight, not by the capture.
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

use crate::job::{Job, JobKey};
use crate::joiner::FxMap;
use crate::order::order_by_key;
use crate::perfetto::{PerfettoConfig, CARD_PID_BASE};
use crate::perfetto_proto as pb;
pub use crate::perfetto_seq::ZERO_LEFT_OUT;
use crate::perfetto_seq::{Chunk, Op, Part};
use crate::perfetto_zip::Compressor;
use crate::timeline::front::{
    host_slice, msg_track, Bucket, DocumentCards, Front, Held, Nesting, Pending, Slice, TrackKey,
    What,
};
use crate::timeline::{self, Seen};

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

/// The file the exporters of all cards share: the output (what they draw, in chunks
/// encoded and compressed on worker threads), ids handed out, host processes described so
/// far and the first write error.
pub struct PbJoint<W: Write> {
    out: RefCell<Compressor<W, Chunk>>,
    /// The file's name, for errors (None: not a file, e.g. a test's buffer).
    path: Option<PathBuf>,
    /// The cards whose exporters write into it (host tracks get one per card when there
    /// are several).
    members: DocumentCards,
    /// Last track uuid handed out (from 1, a byte per reference for the first 127).
    last_id: Cell<u64>,
    /// Last flow id handed out (flow ids are not track uuids: a counter of their own).
    last_flow: Cell<u64>,
    /// Host thread -> uuid of its process track.
    hosts: RefCell<FxMap<u32, u64>>,
    error: RefCell<Option<io::Error>>,
}

impl<W: Write> PbJoint<W> {
    /// The shared state of one output `out` named `path`; `several`: the inputs hold more
    /// than one card.
    pub fn new(out: W, path: Option<PathBuf>, several: bool) -> Rc<Self> {
        Rc::new(PbJoint {
            out: RefCell::new(Compressor::new(out)),
            path,
            members: DocumentCards::new(several),
            last_id: Cell::new(0),
            last_flow: Cell::new(0),
            hosts: RefCell::default(),
            error: RefCell::new(None),
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

    /// Adds the op `make` makes (with what it keeps in the chunk being filled: a job, flow
    /// ids) to that chunk, nothing once a write failed; a full chunk goes out to be encoded.
    fn draw(&self, make: impl FnOnce(&mut Chunk) -> Op) {
        if self.error.borrow().is_some() {
            return;
        }
        let mut out = self.out.borrow_mut();
        let c = out.block();
        let op = make(c);
        c.push(op);
        if let Err(e) = out.filled() {
            *self.error.borrow_mut() = Some(e);
        }
    }

    /// Describes a track.
    fn track(&self, t: pb::TrackDescriptor) {
        let p = pb::TracePacket {
            track_descriptor: Some(t),
            ..Default::default()
        };
        self.draw(|_| Op::Packet(Box::new(p)));
    }

    /// Describes a card's GPU.
    fn gpu(&self, g: pb::GpuInfo) {
        let p = pb::TracePacket {
            gpu_info: Some(g),
            ..Default::default()
        };
        self.draw(|_| Op::Packet(Box::new(p)));
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
            cfg,
            joint,
        };
        let card = format!("card{}", p.cfg.card);
        p.joint.gpu(pb::GpuInfo {
            gpus: vec![pb::Gpu {
                name: Some(card.clone()),
                model: (!p.cfg.driver.is_empty()).then(|| p.cfg.driver.clone()),
            }],
        });
        p.joint.track(pb::TrackDescriptor {
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
        p
    }

    fn rel(&self, t: u64) -> u64 {
        self.front.rel(t)
    }

    /// Describes a track under `parent`.
    fn describe(&self, uuid: u64, parent: u64, name: String, rank: i64) {
        self.joint.track(pb::TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(parent),
            name: Some(name),
            sibling_order_rank: Some(rank.clamp(i32::MIN as i64, i32::MAX as i64) as i32),
            ..Default::default()
        });
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
        self.joint.track(pb::TrackDescriptor {
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

    /// Draws one track event, the op `make` makes ([`PbJoint::draw`]).
    fn draw(&mut self, make: impl FnOnce(&mut Chunk) -> Op) {
        self.joint.draw(make);
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
            let (ts, track) = (self.rel(e.ts), e.uuid);
            self.draw(|c| Op::End {
                ts,
                track,
                flows: c.flows(&flows, &[]),
            });
        }
    }

    /// Begins slice `s` (`part`) of job `j` on a lane of its track, named
    /// `{prefix}ctx/seqno{mark}`, its end held back until nothing can come before it.
    fn job_slice(&mut self, s: Slice, part: Part, j: &Job, flows: (&[u64], &[u64])) {
        let (from, dur) = (s.from, s.dur());
        let (track, depth) = self.place(s.key, from, dur);
        let ts = self.rel(from);
        self.draw(|c| Op::Begin {
            ts,
            track,
            prefix: s.prefix,
            job: c.begun(part, j),
            flows: c.flows(flows.0, flows.1),
        });
        let seq = self.front.next_seq();
        self.ends.push(Reverse(End {
            ts: from + dur,
            depth,
            seq,
            uuid: track,
            exec: matches!(s.key, TrackKey::Ring(_)).then_some(j.key),
        }));
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
                self.job_slice(slice, Part::Host, j, (flows, &[]));
            }
            What::Queue(_) => {
                let f = [flow];
                let flows: &[u64] = if flow != 0 && !host_slice(j) { &f } else { &[] };
                self.job_slice(slice, Part::Queue, j, (flows, &[]));
            }
            _ => {
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
                self.job_slice(slice, Part::Exec, j, (&starts, ends));
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
            What::Marker(marker) => {
                let (track, at) = self.lane_instant(TrackKey::Ring(marker.ring), p.ts);
                let ts = self.rel(at);
                let marker = *marker;
                self.draw(|_| Op::Marker { ts, track, marker });
            }
            What::Msg(msg) => {
                let (track, at) = self.lane_instant(msg_track(msg.pid), p.ts);
                let (ts, text) = (self.rel(at), msg.text);
                self.draw(|_| Op::Msg { ts, track, text });
            }
            What::Lost(lost) => {
                let (ts, track, lost) = (self.rel(p.ts), self.card_uuid, *lost);
                self.draw(|_| Op::Lost { ts, track, lost });
            }
        }
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
        let tracks = match self.counter_tracks.get(&ring) {
            Some(&u) => u,
            None => {
                let u = [self.joint.id(), self.joint.id(), self.joint.id()];
                let label = self.front.counter_label(ring).to_string();
                for (k, (uuid, what)) in u
                    .iter()
                    .zip(["busy %", "outstanding", "fill %"])
                    .enumerate()
                {
                    self.joint.track(pb::TrackDescriptor {
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
                }
                self.counter_tracks.insert(ring, u);
                u
            }
        };
        let busy = (b.busy as f64 * 100.0 / self.cfg.interval_ns as f64).min(100.0);
        self.draw(|_| Op::Counter {
            ts: rel_ts,
            tracks,
            busy,
            bucket: b,
        });
    }
}

/// What the export thread ([`crate::perfetto_feed`]) asks of a card's exporter: the
/// calls of a [`DrawnTimeline`](crate::engine::DrawnTimeline).
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

    #[test]
    fn the_file_name_picks_protobuf() {
        assert!(wants_protobuf(Path::new("run.pftrace")));
        assert!(wants_protobuf(Path::new("run")));
        assert!(!wants_protobuf(Path::new("run.json")));
        assert!(!wants_protobuf(Path::new("run.Json")));
        assert!(!wants_protobuf(Path::new("-")));
    }
}
