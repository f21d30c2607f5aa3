//! What the two Perfetto exports (JSON and protobuf) hold before they write it, and how it
//! gets there: the slices and instants waiting for the engine's watermark, the jobs they
//! belong to, the lanes that keep every track properly nested, and the per-ring counter
//! buckets. The exports differ only in how they encode what comes out of it.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, VecDeque};

use grtrace_format::{Lost, RecordView};

use super::{max_fill, spread_open, Marker, Message, Names, Seen, FILL_UNKNOWN, MAX_OPEN_BUCKETS};
use crate::job::{Job, NONE};
use crate::joiner::{FxMap, Joiner};
use crate::order::order_by_key;

/// Records may come this much out of time order (across CPUs) and still be placed in order.
pub const SLACK_NS: u64 = 5_000_000;

/// The cards of one document, as their exporters come and go (one per card's engine, all
/// writing into one file).
#[derive(Debug, Default)]
pub struct DocumentCards {
    /// Made for several cards: track and counter names carry the card.
    several: bool,
    /// Exporters made so far.
    made: Cell<u32>,
    /// Exporters not finished yet.
    open: Cell<u32>,
}

impl DocumentCards {
    /// The cards of a document made for several cards (`several`) or for one.
    pub fn new(several: bool) -> Self {
        DocumentCards {
            several,
            ..DocumentCards::default()
        }
    }

    /// Whether track names carry the card.
    pub fn several(&self) -> bool {
        self.several
    }

    /// The exporter of `card` is made: returns what goes before its track and counter
    /// names, `card1 ` in a document of several cards, else nothing. A card that turns up
    /// after the first in a document made for one (concatenated streams of two cards) is
    /// labelled all the same.
    pub fn enter(&self, card: u32) -> String {
        self.open.set(self.open.get() + 1);
        let label = self.several || self.made.get() > 0;
        self.made.set(self.made.get() + 1);
        if label {
            format!("card{card} ")
        } else {
            String::new()
        }
    }

    /// An exporter finished: returns how many are still open (the last one closes the
    /// document).
    pub fn leave(&self) -> u32 {
        let open = self.open.get().saturating_sub(1);
        self.open.set(open);
        open
    }
}

/// Counts of what a Perfetto export did, kept in the trace's metadata.
#[derive(Clone, Debug, Default)]
pub struct PerfettoStats {
    /// Trace events (JSON) or packets (protobuf) written.
    pub events: u64,
    /// Jobs handed over.
    pub jobs: u64,
    /// Lanes of tracks made.
    pub lanes: u64,
    /// Instants written a little later than their time (records out of order).
    pub moved: u64,
    /// Job execution that fell into counter buckets already written, or too far ahead of
    /// them (a damaged time, see [`MAX_OPEN_BUCKETS`]).
    pub late_busy_ns: u64,
    /// The most items held back at once.
    pub max_held: u64,
}

/// Which track a slice or instant goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TrackKey {
    /// A ring's executions.
    Ring(u32),
    /// A context's queued parts (SUBMIT to START).
    Ctx(u32),
    /// A host thread (its tid; pid = tid, since the trace names threads only).
    Host(u32),
    /// Card-wide instants that name no ring.
    Events,
}

/// The slices already on one lane of a track: they nest properly and come in time order.
#[derive(Debug, Default)]
pub struct Nesting {
    /// Time of the latest slice or instant on the lane.
    pub last_ts: u64,
    /// Ends of the open (enclosing) slices, innermost last.
    open: Vec<u64>,
}

impl Nesting {
    /// Takes `[ts, ts + dur]` if it nests under the open slices and keeps time order;
    /// returns its depth (1 = outermost).
    pub fn fits(&mut self, ts: u64, dur: u64) -> Option<u32> {
        if ts < self.last_ts {
            return None;
        }
        while self.open.last().is_some_and(|&e| e <= ts) {
            self.open.pop();
        }
        if self.open.last().is_some_and(|&e| ts + dur > e) {
            return None;
        }
        self.open.push(ts + dur);
        self.last_ts = ts;
        Some(self.open.len() as u32)
    }
}

/// Something the exports draw, written once the watermark passes its time. Small (the
/// rare kinds boxed): the held-back items are moved about in a heap.
#[derive(Debug)]
pub enum What {
    /// The host part of the held job in this slot (COMMIT to SUBMIT).
    Host(u32),
    /// The queued part of the held job in this slot (SUBMIT to START).
    Queue(u32),
    /// The execution of the held job in this slot (START to END).
    Exec(u32),
    /// A ring event shown as a marker.
    Marker(Box<Marker>),
    /// A user message (NOTE_MSG).
    Msg(Box<Message>),
    /// Records lost.
    Lost(Box<LostRecords>),
}

/// Records lost: a NOTE_LOST record, or a gap the reader found in a sequence.
#[derive(Clone, Copy, Debug)]
pub struct LostRecords {
    /// The CPU whose buffer lost them.
    pub cpu: u32,
    /// The source that lost them.
    pub source: u32,
    /// How many.
    pub count: u64,
    /// Found as a gap in the sequence numbers rather than noted by the recorder.
    pub gap: bool,
}

impl LostRecords {
    /// The records `l` says were lost; `gap`: found as a gap in a sequence.
    fn of(l: &Lost, gap: bool) -> Self {
        LostRecords {
            cpu: l.cpu,
            source: l.source,
            count: l.count,
            gap,
        }
    }
}

/// The track of a user message of thread `pid`: the thread's, or the card's events track
/// when no thread wrote it (pid 0).
pub fn msg_track(pid: u32) -> TrackKey {
    if pid == 0 {
        TrackKey::Events
    } else {
        TrackKey::Host(pid)
    }
}

/// The name of a user message's instant: `msg: ` and the first 64 bytes of its text.
pub fn msg_name(text: &[u8]) -> String {
    let mut name = b"msg: ".to_vec();
    name.extend_from_slice(&text[..text.len().min(64)]);
    String::from_utf8_lossy(&name).into_owned()
}

/// Something to write at `ts` once the watermark passes it; of items at one time, the
/// first pushed is written first.
#[derive(Debug)]
pub struct Pending {
    /// When it is drawn (ns, absolute).
    pub ts: u64,
    seq: u64,
    /// What is drawn.
    pub what: What,
}

order_by_key!(Pending, |p: &Pending| (p.ts, p.seq));

/// The slices a job is drawn as.
#[derive(Clone, Copy, Debug)]
pub struct Slices {
    /// On the submitting thread, COMMIT to SUBMIT.
    pub host: bool,
    /// On its context, SUBMIT to START.
    pub queue: bool,
    /// On its ring, START to END.
    pub exec: bool,
}

impl Slices {
    /// The slices `job` has times for.
    pub fn of(job: &Job) -> Self {
        Slices {
            host: host_slice(job),
            queue: job.submit != NONE && job.start != NONE && job.measured(1),
            exec: job.start != NONE && job.end != NONE,
        }
    }

    /// How many there are.
    pub fn count(self) -> u8 {
        self.host as u8 + self.queue as u8 + self.exec as u8
    }

    /// Whether an arrow leads from the submission (host or queued slice) to the execution.
    pub fn submit_arrow(self) -> bool {
        (self.host || self.queue) && self.exec
    }
}

/// Where and when one slice of a held job is drawn.
#[derive(Clone, Copy, Debug)]
pub struct Slice {
    /// Its track.
    pub key: TrackKey,
    /// What its name starts with: `submit `, `queued `, nothing for the execution.
    pub prefix: &'static str,
    /// Its start and end (ns, absolute).
    pub from: u64,
    /// Its end.
    pub to: u64,
}

impl Slice {
    /// The slice `what` stands for (a [`What::Host`], [`What::Queue`] or [`What::Exec`]) of
    /// `job`: the host part on the submitting thread, the queued part on its context, the
    /// execution on its ring.
    pub fn of(what: &What, job: &Job) -> Slice {
        let (key, prefix, from, to) = match what {
            What::Host(_) => (TrackKey::Host(job.pid), "submit ", job.commit, job.submit),
            What::Queue(_) => (TrackKey::Ctx(job.key.ctx), "queued ", job.submit, job.start),
            _ => (TrackKey::Ring(job.key.ring), "", job.start, job.end),
        };
        Slice {
            key,
            prefix,
            from,
            to,
        }
    }

    /// Its length (0 for one that ends before it starts).
    pub fn dur(&self) -> u64 {
        self.to.saturating_sub(self.from)
    }
}

/// Whether a job gets a host-side slice (COMMIT to SUBMIT): not when the recording did not
/// measure submit_host (an imported COMMIT and SUBMIT are one instant).
pub fn host_slice(job: &Job) -> bool {
    job.commit != NONE && job.submit != NONE && job.measured(0)
}

/// A job waiting for its slices to be written.
#[derive(Debug)]
pub struct Held {
    /// The job.
    pub job: Job,
    /// Slices of it still waiting.
    refs: u8,
    /// Flow id of its submission arrow (0 = none).
    pub flow: u64,
    /// Flow id of the arrow from its blocker (0 = none; only the protobuf export draws it
    /// from here).
    pub blocker_flow: u64,
}

/// Counter values of one bucket of one ring.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bucket {
    /// Execution time in the bucket, ns.
    pub busy: u64,
    /// The most jobs outstanding at once.
    pub outstanding: u32,
    /// Highest fill in 1/1000 of the ring ([`FILL_UNKNOWN`] = unknown).
    pub fill: u32,
}

/// The counter buckets of one ring not written yet.
struct RingCounters {
    /// Counter name: `ring 0 gfx`.
    label: String,
    /// Bucket index of `open[0]`.
    base: u64,
    open: VecDeque<Bucket>,
    /// Values carried into a new bucket: outstanding and fill as last seen.
    carry: Bucket,
    last_written: Option<Bucket>,
    /// Where an event too far ahead of `base` goes (and is forgotten): see
    /// [`MAX_OPEN_BUCKETS`].
    beyond: Bucket,
}

impl RingCounters {
    /// The bucket `idx` (one before `base` counts in `base`), or `beyond` for a damaged
    /// time far ahead, not counted (memory and time stay bounded).
    fn bucket_or_beyond(&mut self, idx: u64) -> &mut Bucket {
        let idx = idx.max(self.base);
        if idx - self.base >= MAX_OPEN_BUCKETS {
            return &mut self.beyond;
        }
        self.bucket(idx)
    }

    /// The bucket `idx` (at least `base`), opening the buckets up to it.
    fn bucket(&mut self, idx: u64) -> &mut Bucket {
        while self.base + (self.open.len() as u64) <= idx {
            let c = Bucket {
                busy: 0,
                ..self.carry
            };
            self.open.push_back(c);
        }
        &mut self.open[(idx - self.base) as usize]
    }
}

/// Where the exports draw records lost in a gap of a sequence: at the last record before
/// the gap, or the last record read when the gap does not say.
pub fn lost_time(l: &Lost, joiner: &Joiner) -> u64 {
    if l.last_ns != 0 && l.last_ns != NONE {
        l.last_ns
    } else {
        joiner.stats.last_ns
    }
}

/// The front of a streaming timeline export: what it has seen and not written yet.
/// Records and jobs go in as the engine hands them over; items come out in time order once
/// the watermark passes them ([`Front::pop_before`]), counter buckets once they are final
/// ([`Front::next_due_bucket`]).
pub struct Front {
    /// Counts of what the export did.
    pub stats: PerfettoStats,
    /// The run's time origin (ns), from the joiner at the first record; [`NONE`] before.
    pub genesis: u64,
    /// Ring and process names learnt from notes.
    pub names: Names,
    /// Counter bucket width, ns.
    interval_ns: u64,
    /// `card1 ` before counter names when the document has several cards.
    prefix: String,
    heap: BinaryHeap<Reverse<Pending>>,
    held: Vec<Option<Held>>,
    free: Vec<u32>,
    /// The last sequence number given out (to an item, or as a flow id).
    seq: u64,
    counters: FxMap<u32, RingCounters>,
    /// Rings in first-seen order (counters are written in it).
    ring_order: Vec<u32>,
}

impl Front {
    /// An empty front with counter buckets `interval_ns` wide, counters named after the
    /// ring with `prefix` before.
    pub fn new(interval_ns: u64, prefix: String) -> Self {
        Front {
            stats: PerfettoStats::default(),
            genesis: NONE,
            names: Names::default(),
            interval_ns,
            prefix,
            heap: BinaryHeap::new(),
            held: Vec::new(),
            free: Vec::new(),
            seq: 0,
            counters: FxMap::default(),
            ring_order: Vec::new(),
        }
    }

    /// `t` relative to the origin.
    pub fn rel(&self, t: u64) -> u64 {
        t.saturating_sub(self.genesis)
    }

    /// The next sequence number: items and the JSON export's flow ids share one count.
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Holds `what` back until the watermark passes `ts`.
    pub fn push(&mut self, ts: u64, what: What) {
        let seq = self.next_seq();
        self.heap.push(Reverse(Pending { ts, seq, what }));
    }

    /// The earliest item before `w`, if any.
    pub fn pop_before(&mut self, w: u64) -> Option<Pending> {
        if self.heap.peek().is_some_and(|p| p.0.ts < w) {
            self.heap.pop().map(|Reverse(p)| p)
        } else {
            None
        }
    }

    /// Takes in one record (`joiner` has already seen it): markers, messages and lost
    /// records are held back, ring state goes into the counters. Returns the time before
    /// which everything may be written now, from the engine's `watermark` less the slack
    /// records may come late by ([`SLACK_NS`]).
    pub fn record(
        &mut self,
        rec: &RecordView<'_>,
        joiner: &Joiner,
        watermark: Option<u64>,
    ) -> Option<u64> {
        if self.genesis == NONE {
            self.genesis = joiner.origin().get().unwrap_or(NONE);
        }
        let seen = match self.names.see(rec, joiner) {
            // `see` learnt it already: not a second time
            Seen::Named(_) => Seen::Nothing,
            seen => seen,
        };
        self.take(rec.time_ns(), seen, watermark)
    }

    /// [`record`](Self::record) for what a record at `t` showed, seen elsewhere (the
    /// time origin given by [`set_origin`](Self::set_origin) first).
    pub fn take(&mut self, t: u64, seen: Seen, watermark: Option<u64>) -> Option<u64> {
        match seen {
            Seen::Mark(m) => self.push(t, What::Marker(m)),
            Seen::Ring {
                ring,
                outstanding,
                fill,
            } => {
                let (rc, idx) = self.ring_counters(ring, t);
                let b = rc.bucket_or_beyond(idx);
                b.outstanding = b.outstanding.max(outstanding);
                b.fill = max_fill(b.fill, fill);
                // A new bucket starts from the state as last seen.
                rc.carry.outstanding = outstanding;
                if fill != FILL_UNKNOWN {
                    rc.carry.fill = fill;
                }
            }
            Seen::Msg(m) => self.push(t, What::Msg(m)),
            Seen::Lost(l) => self.push(t, What::Lost(Box::new(LostRecords::of(&l, false)))),
            // Seen elsewhere (on the joining thread): learnt now.
            Seen::Named(n) => self.names.learn(&n),
            Seen::Nothing => {}
        }
        watermark.map(|w| w.saturating_sub(SLACK_NS))
    }

    /// The run's time origin (the joiner's, known from the first record on).
    pub fn set_origin(&mut self, origin: u64) {
        self.genesis = origin;
    }

    /// Takes in records lost in a gap of a sequence, drawn at the last record before it.
    pub fn lost(&mut self, l: &Lost, joiner: &Joiner) {
        self.lost_at(l, lost_time(l, joiner));
    }

    /// [`lost`](Self::lost) at a time found elsewhere ([`lost_time`]).
    pub fn lost_at(&mut self, l: &Lost, t: u64) {
        self.push(t, What::Lost(Box::new(LostRecords::of(l, true))));
    }

    /// Takes in a finished job: counts it and puts its execution into its ring's busy
    /// counters now (they are written only once the watermark passes them). Returns the
    /// slices to draw of it, None when it has none (a job named only by a stray event: it
    /// is counted in the job total all the same, and listed by --jobs).
    pub fn admit(&mut self, job: &Job) -> Option<Slices> {
        self.stats.jobs += 1;
        self.stats.late_busy_ns += self.count_busy(job);
        let slices = Slices::of(job);
        (slices.count() > 0).then_some(slices)
    }

    /// Puts a job's execution into the busy counters; returns the ns that fell before the
    /// buckets still open or too far past them (left out, see [`MAX_OPEN_BUCKETS`]).
    fn count_busy(&mut self, job: &Job) -> u64 {
        if job.start == NONE || job.end == NONE || self.genesis == NONE {
            return 0;
        }
        let width = self.interval_ns;
        let (s, e) = (self.rel(job.start), self.rel(job.end));
        let (rc, _) = self.ring_counters(job.key.ring, job.start);
        let base = rc.base;
        spread_open(s, e, width, base, |b, ns| rc.bucket(b).busy += ns)
    }

    /// Holds `job` back until its `slices` are written, with the flow ids of its arrows.
    pub fn hold(&mut self, job: Job, slices: Slices, flow: u64, blocker_flow: u64) {
        let (commit, submit, start) = (job.commit, job.submit, job.start);
        let h = Held {
            job,
            refs: slices.count(),
            flow,
            blocker_flow,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.held[s as usize] = Some(h);
                s
            }
            None => {
                self.held.push(Some(h));
                (self.held.len() - 1) as u32
            }
        };
        if slices.host {
            self.push(commit, What::Host(slot));
        }
        if slices.queue {
            self.push(submit, What::Queue(slot));
        }
        if slices.exec {
            self.push(start, What::Exec(slot));
        }
        self.stats.max_held = self.stats.max_held.max(self.heap.len() as u64);
    }

    /// Lends out the held job of `slot` while one of its slices is written (no copy of the
    /// job); give it back with [`Front::written`].
    pub fn lend(&mut self, slot: u32) -> Held {
        self.held[slot as usize].take().expect("held job")
    }

    /// One slice of the job lent out of `slot` is written; the job leaves when all are.
    pub fn written(&mut self, slot: u32, mut h: Held) {
        h.refs -= 1;
        if h.refs == 0 {
            self.free.push(slot);
        } else {
            self.held[slot as usize] = Some(h);
        }
    }

    /// The counters of `ring` (opened on its first use) and the index of its bucket at
    /// time `t` (one lookup: this runs for most records).
    fn ring_counters(&mut self, ring: u32, t: u64) -> (&mut RingCounters, u64) {
        let idx = self.rel(t) / self.interval_ns;
        let rc = match self.counters.entry(ring) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                self.ring_order.push(ring);
                e.insert(RingCounters {
                    label: format!("{}{}", self.prefix, self.names.ring_label(ring)),
                    base: idx,
                    open: VecDeque::new(),
                    carry: Bucket {
                        busy: 0,
                        outstanding: 0,
                        fill: FILL_UNKNOWN,
                    },
                    last_written: None,
                    beyond: Bucket::default(),
                })
            }
        };
        (rc, idx)
    }

    /// The counter name of `ring` (`ring 0 gfx`, after the prefix).
    pub fn counter_label(&self, ring: u32) -> &str {
        &self.counters[&ring].label
    }

    /// The next counter bucket to write of those that end at or before `w`, rings in
    /// first-seen order: its ring, start (relative to the origin) and values. A bucket the
    /// same as the last written of its ring is skipped.
    pub fn next_due_bucket(&mut self, w: u64) -> Option<(u32, u64, Bucket)> {
        if self.genesis == NONE {
            return None;
        }
        let width = self.interval_ns;
        let upto = self.rel(w) / width; // buckets < upto are final
        for &ring in &self.ring_order {
            let rc = self.counters.get_mut(&ring).expect("ring");
            while rc.base < upto {
                let b = rc.open.pop_front().unwrap_or(Bucket {
                    busy: 0,
                    ..rc.carry
                });
                let idx = rc.base;
                rc.base += 1;
                if rc.last_written == Some(b) {
                    if rc.open.is_empty() {
                        // Idle: nothing changes until the next event of this ring.
                        rc.base = upto;
                    }
                    continue;
                }
                rc.last_written = Some(b);
                return Some((ring, idx * width, b));
            }
        }
        None
    }
}
