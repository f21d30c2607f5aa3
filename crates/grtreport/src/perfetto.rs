//! `--perfetto FILE`: the jobs as a timeline in the JSON Trace Event Format that the
//! Perfetto UI (ui.perfetto.dev) and chrome://tracing load.
//!
//! Layout:
//! * one process per card, named `card0 (amdgpu)`, holding one thread track per ring
//!   (a slice per job's execution, named `ctx/seqno`, args: every phase, tags, flags,
//!   blocker), one per context (the queued part, SUBMIT to START) and an `events` track;
//!   counters per ring: busy %, jobs outstanding, ring fill %;
//! * the host side (COMMIT to SUBMIT) on the submitting thread, under its pid, named after
//!   the process (NOTE_PROCESS);
//! * flow arrows from a job's submission to its execution (and from its blocker, when one
//!   is known); instant events for VM faults, resets, timeouts, hangs, lost records and user
//!   messages (NOTE_MSG).
//!
//! Slices are complete (`X`) events. Where slices of one track overlap without nesting
//! (queued jobs of one context, a preempted job and the one that preempted it), the later
//! goes to a second lane of the track (`ring 0 gfx #2`), so every thread track holds only
//! properly nested slices in time order.
//!
//! Several cards (`grtrace -d card0 -d card1`): one exporter per card's engine, all writing
//! into one document through a [`Joint`]: each card is its own process, its tracks and
//! counters are named after it (`card1 ring 0 gfx`), a host thread gets a track per card
//! (`Xorg card1`), and `otherData` lists every card. A single card's document is unchanged.
//!
//! Streaming: jobs reach the exporter as they finish, out of start order. Each slice waits
//! in a heap until the engine's watermark (the oldest job still open or held back) passes
//! it, then is written; memory is bounded by the jobs in flight, as the report's is.

use std::cell::{Cell, RefCell};
use std::io::{self, Write};
use std::rc::Rc;

use grtrace_format::{Lost, RecordView};

use crate::engine::{Engine, Timeline};
use crate::job::{Job, JobKey, PHASE_NAMES};
use crate::joiner::{FxMap, Joiner};
use crate::jsonw;
use crate::timeline;
pub use crate::timeline::front::PerfettoStats;
use crate::timeline::front::{
    host_slice, msg_name, msg_track, Bucket, DocumentCards, Front, Held, LostRecords, Nesting,
    Pending, Slice, TrackKey, What,
};
use crate::timeline::{Marker, Message};

/// Perfetto process id of card N: far above any Linux pid (pid_max <= 2^22).
pub const CARD_PID_BASE: u32 = 0x7f00_0000;
/// Thread ids of a host thread's extra lanes (overlapping COMMIT..SUBMIT slices).
const HOST_LANE_TID_BASE: u32 = 0x4000_0000;
/// Thread ids of host tracks named after their card (a document of several cards).
const HOST_CARD_TID_BASE: u32 = 0x5000_0000;
/// Default width of the counter buckets.
pub const DEFAULT_INTERVAL_NS: u64 = 1_000_000;

/// What the export is about (from the stream header and the command line).
#[derive(Clone, Debug)]
pub struct PerfettoConfig {
    pub card: u32,
    pub driver: String,
    /// Input as given on the command line (kept in the trace's metadata).
    pub input: String,
    /// Width of the counter buckets (busy %, outstanding, fill).
    pub interval_ns: u64,
}

/// The document the exporters of several cards share (one per card's engine, each a
/// process of its own): the first to start writes the document's head, the last to finish
/// its tail with every card's figures. [`Perfetto::new`] makes one of its own.
#[derive(Debug, Default)]
pub struct Joint {
    /// Trace events written so far by all cards (a comma goes before all but the first).
    events: Cell<u64>,
    started: Cell<bool>,
    /// The cards whose exporters write into it (host threads get a track per card when
    /// there are several).
    members: DocumentCards,
    /// Finished cards' figures, in the order they finished.
    cards: RefCell<Vec<CardMeta>>,
    /// Thread ids of host tracks named after their card handed out so far (from
    /// [`HOST_CARD_TID_BASE`]), shared so cards never collide.
    host_card_tids: Cell<u32>,
}

impl Joint {
    /// A document for the exporters of several cards.
    pub fn several_cards() -> Rc<Joint> {
        Rc::new(Joint {
            members: DocumentCards::new(true),
            ..Joint::default()
        })
    }
}

/// One card's figures in the document's `otherData`.
#[derive(Clone, Debug)]
struct CardMeta {
    card: u32,
    driver: String,
    records: u64,
    jobs: u64,
    events: u64,
    lanes: u64,
    lost_records: u64,
    moved: u64,
    late_busy_ns: u64,
    max_held: u64,
}

/// A writer several exporters share (`--perfetto` of a multi-card run).
pub struct SharedOut<W: Write>(pub Rc<RefCell<W>>);

impl<W: Write> Clone for SharedOut<W> {
    fn clone(&self) -> Self {
        SharedOut(self.0.clone())
    }
}

impl<W: Write> Write for SharedOut<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(b)
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        self.0.borrow_mut().write_all(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.borrow_mut().flush()
    }
}

/// One lane of a track: a thread track holding properly nested slices in time order.
struct Lane {
    pid: u32,
    tid: u32,
    nesting: Nesting,
}

/// The exporter; register it with [`Engine::add_timeline`].
pub struct Perfetto<W: Write> {
    out: W,
    cfg: PerfettoConfig,
    pid: u32,
    /// What is held back until the watermark passes it, and the counters.
    front: Front,
    tracks: FxMap<TrackKey, Vec<Lane>>,
    next_tid: u32,
    next_host_tid: u32,
    named_hosts: FxMap<u32, ()>,
    /// Where recent jobs' executions were written, for blocker arrows: key -> (tid, end).
    recent: FxMap<JobKey, (u32, u64, u64)>,
    joint: Rc<Joint>,
    /// `card1 ` before track and counter names when the document has several cards.
    prefix: String,
}

impl<W: Write> Perfetto<W> {
    /// Starts the JSON document on `out`.
    pub fn new(out: W, cfg: PerfettoConfig) -> io::Result<Self> {
        Self::in_joint(out, cfg, Rc::new(Joint::default()))
    }

    /// The exporter of one card of a document `joint` shares with other cards (their
    /// exporters write to the same `out`, see [`SharedOut`]); the first starts the document.
    pub fn in_joint(mut out: W, cfg: PerfettoConfig, joint: Rc<Joint>) -> io::Result<Self> {
        if !joint.started.replace(true) {
            out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
        }
        let prefix = joint.members.enter(cfg.card);
        let pid = CARD_PID_BASE.wrapping_add(cfg.card);
        let mut p = Perfetto {
            out,
            pid,
            front: Front::new(cfg.interval_ns, prefix.clone()),
            tracks: FxMap::default(),
            next_tid: 1,
            next_host_tid: HOST_LANE_TID_BASE,
            named_hosts: FxMap::default(),
            recent: FxMap::default(),
            cfg,
            joint,
            prefix,
        };
        let name = crate::report::card_name(p.cfg.card, &p.cfg.driver);
        p.meta_name("process_name", pid, 0, &name)?;
        p.meta_sort("process_sort_index", pid, 0, -1)?;
        Ok(p)
    }

    /// Starts an event: a comma before every event but the first.
    fn sep(&mut self) -> io::Result<()> {
        let n = self.joint.events.get();
        if n > 0 {
            self.out.write_all(b",\n")?;
        }
        self.joint.events.set(n + 1);
        self.front.stats.events += 1;
        Ok(())
    }

    fn meta_name(&mut self, what: &str, pid: u32, tid: u32, name: &str) -> io::Result<()> {
        self.sep()?;
        write!(
            self.out,
            "{{\"ph\":\"M\",\"name\":\"{what}\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":"
        )?;
        jsonw::string(&mut self.out, name.as_bytes())?;
        self.out.write_all(b"}}")
    }

    fn meta_sort(&mut self, what: &str, pid: u32, tid: u32, index: i64) -> io::Result<()> {
        self.sep()?;
        write!(
            self.out,
            "{{\"ph\":\"M\",\"name\":\"{what}\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{index}}}}}"
        )
    }

    fn rel(&self, t: u64) -> u64 {
        self.front.rel(t)
    }

    /// Places a slice on a lane of `key`, naming new lanes; returns (pid, tid).
    fn place(&mut self, key: TrackKey, ts: u64, dur: u64) -> io::Result<(u32, u32)> {
        let lanes = self.tracks.entry(key).or_default();
        for l in lanes.iter_mut() {
            if l.nesting.fits(ts, dur).is_some() {
                return Ok((l.pid, l.tid));
            }
        }
        let n = lanes.len();
        let (pid, tid) = match key {
            TrackKey::Host(t) if !self.prefix.is_empty() => {
                // Another card's jobs may run on this thread too: a track per card.
                let n = self.joint.host_card_tids.get();
                self.joint.host_card_tids.set(n + 1);
                (t, HOST_CARD_TID_BASE.wrapping_add(n))
            }
            TrackKey::Host(t) if n == 0 => (t, t),
            TrackKey::Host(t) => {
                self.next_host_tid += 1;
                (t, self.next_host_tid)
            }
            _ => {
                self.next_tid += 1;
                (self.pid, self.next_tid)
            }
        };
        let mut lane = Lane {
            pid,
            tid,
            nesting: Nesting::default(),
        };
        let ok = lane.nesting.fits(ts, dur);
        debug_assert!(ok.is_some());
        self.tracks.entry(key).or_default().push(lane);
        self.front.stats.lanes += 1;
        self.name_lane(key, n, pid, tid)?;
        Ok((pid, tid))
    }

    fn name_lane(&mut self, key: TrackKey, lane: usize, pid: u32, tid: u32) -> io::Result<()> {
        let (base, sort) = match key {
            TrackKey::Ring(r) => (self.front.names.ring_label(r), (r as i64) * 1000),
            TrackKey::Ctx(c) => (format!("ctx {c} queued"), (1 << 40) + (c as i64) * 1000),
            TrackKey::Events => ("events".to_string(), -1),
            TrackKey::Host(t) => {
                let comm = self.front.names.procs.get(&t).cloned();
                let comm = comm.unwrap_or_else(|| format!("tid {t}"));
                if self.named_hosts.insert(t, ()).is_none() {
                    self.meta_name("process_name", pid, 0, &comm)?;
                }
                if !self.prefix.is_empty() {
                    let card = self.prefix.trim_end();
                    (format!("{comm} {card}"), 0)
                } else {
                    (comm, 0)
                }
            }
        };
        let base = match key {
            TrackKey::Host(_) => base,
            _ => format!("{}{base}", self.prefix),
        };
        let name = if lane == 0 {
            base
        } else {
            format!("{base} #{}", lane + 1)
        };
        self.meta_name("thread_name", pid, tid, &name)?;
        self.meta_sort("thread_sort_index", pid, tid, sort + lane as i64)
    }

    /// Places slice `s` of job `j` on a lane of its track and writes it up to its args
    /// object (see [`slice_head`](Self::slice_head)); returns the lane's (pid, tid).
    fn job_slice(&mut self, s: Slice, j: &Job) -> io::Result<(u32, u32)> {
        let (pid, tid) = self.place(s.key, s.from, s.dur())?;
        self.slice_head(s.prefix, j, pid, tid, s.from, s.dur())?;
        Ok((pid, tid))
    }

    /// Writes an `X` slice of job `j` named `{prefix}ctx/seqno{mark}` up to its args object
    /// (the caller writes the args and `}}`).
    fn slice_head(
        &mut self,
        prefix: &str,
        j: &Job,
        pid: u32,
        tid: u32,
        ts: u64,
        dur: u64,
    ) -> io::Result<()> {
        self.sep()?;
        let o = &mut self.out;
        o.write_all(b"{\"ph\":\"X\",\"name\":\"")?;
        o.write_all(prefix.as_bytes())?;
        jsonw::uint(o, j.key.ctx as u64)?;
        o.write_all(b"/")?;
        jsonw::uint(o, j.key.seqno)?;
        o.write_all(timeline::job_mark(j).as_bytes())?;
        o.write_all(b"\",\"cat\":\"")?;
        o.write_all(timeline::JOB_CATEGORIES[timeline::job_shown(j)].as_bytes())?;
        o.write_all(b"\",")?;
        self.where_when(pid, tid, ts)?;
        self.out.write_all(b",\"dur\":")?;
        jsonw::us(&mut self.out, dur)?;
        self.out.write_all(b",\"args\":{")
    }

    /// An event's `"pid":P,"tid":T,"ts":US` (the time relative to the origin).
    fn where_when(&mut self, pid: u32, tid: u32, ts: u64) -> io::Result<()> {
        let rel = self.rel(ts);
        let o = &mut self.out;
        o.write_all(b"\"pid\":")?;
        jsonw::uint(o, pid as u64)?;
        o.write_all(b",\"tid\":")?;
        jsonw::uint(o, tid as u64)?;
        o.write_all(b",\"ts\":")?;
        jsonw::us(o, rel)
    }

    fn flow(&mut self, ph: u8, cat: &str, id: u64, pid: u32, tid: u32, ts: u64) -> io::Result<()> {
        self.sep()?;
        let o = &mut self.out;
        o.write_all(b"{\"ph\":\"")?;
        o.write_all(&[ph])?;
        o.write_all(b"\",\"name\":\"")?;
        o.write_all(cat.as_bytes())?;
        o.write_all(b"\",\"cat\":\"")?;
        o.write_all(cat.as_bytes())?;
        o.write_all(b"\",\"id\":")?;
        jsonw::uint(o, id)?;
        o.write_all(b",")?;
        self.where_when(pid, tid, ts)?;
        if ph == b'f' {
            self.out.write_all(b",\"bp\":\"e\"")?;
        }
        self.out.write_all(b"}")
    }

    fn instant_head(
        &mut self,
        name: &str,
        scope: u8,
        pid: u32,
        tid: u32,
        ts: u64,
    ) -> io::Result<()> {
        self.sep()?;
        self.out.write_all(b"{\"ph\":\"i\",\"name\":")?;
        jsonw::string(&mut self.out, name.as_bytes())?;
        write!(
            self.out,
            ",\"cat\":\"event\",\"s\":\"{}\",\"pid\":{pid},\"tid\":{tid},\"ts\":",
            scope as char
        )?;
        let rel = self.rel(ts);
        jsonw::us(&mut self.out, rel)?;
        self.out.write_all(b",\"args\":{")
    }

    /// An instant on a lane: at its time, or just after the lane's last event when the
    /// record came late (counted in `moved`).
    fn lane_instant(&mut self, key: TrackKey, ts: u64) -> io::Result<(u32, u32, u64)> {
        let (pid, tid) = match self.tracks.get(&key).and_then(|l| l.first()) {
            Some(l) => (l.pid, l.tid),
            None => self.place(key, ts, 0)?,
        };
        let lane = &mut self.tracks.get_mut(&key).expect("placed")[0];
        let at = ts.max(lane.nesting.last_ts);
        if at != ts {
            self.front.stats.moved += 1;
        }
        lane.nesting.last_ts = at;
        Ok((pid, tid, at))
    }

    fn job_args(&mut self, j: &Job) -> io::Result<()> {
        let o = &mut self.out;
        for (name, v) in [
            (&b"\"ctx\":"[..], j.key.ctx as u64),
            (b",\"ring\":", j.key.ring as u64),
            (b",\"seqno\":", j.key.seqno),
            (b",\"pid\":", j.pid as u64),
        ] {
            o.write_all(name)?;
            jsonw::uint(o, v)?;
        }
        for (name, v) in PHASE_NAMES.iter().zip(j.phases.as_array()) {
            o.write_all(b",\"")?;
            o.write_all(name.as_bytes())?;
            o.write_all(b"_ms\":")?;
            jsonw::ms(o, v)?;
        }
        write!(
            o,
            ",\"tags\":\"{}\",\"flags\":\"{}\",\"fill\":",
            j.tags, j.flags
        )?;
        jsonw::num(o, j.fill as f64)?;
        write!(
            o,
            ",\"outstanding\":{},\"batch\":{},\"faults\":{},\"preempts\":{},\"blocker\":",
            j.outstanding, j.batch, j.faults, j.preempts
        )?;
        match timeline::blocker_info(j) {
            Some((kind, who, lost)) => {
                jsonw::string(o, who.as_bytes())?;
                write!(o, ",\"blocker_kind\":\"{kind}\",\"blocker_lost_ms\":")?;
                jsonw::ms(o, lost)?;
            }
            None => o.write_all(b"null")?,
        }
        Ok(())
    }

    /// Writes the host, queued or execution slice of the held job `h`.
    fn write_job(&mut self, what: &What, h: &Held) -> io::Result<()> {
        let (j, flow) = (&h.job, h.flow);
        let (pid, tid) = self.job_slice(Slice::of(what, j), j)?;
        match what {
            What::Host(_) => {
                self.out.write_all(b"}}")?;
                if flow != 0 {
                    self.flow(b's', "submit", flow, pid, tid, j.commit)?;
                }
            }
            What::Queue(_) => {
                self.out.write_all(b"\"queue_ms\":")?;
                jsonw::ms(&mut self.out, j.phases.queue)?;
                self.out.write_all(b"}}")?;
                if flow != 0 && !host_slice(j) {
                    self.flow(b's', "submit", flow, pid, tid, j.submit)?;
                }
            }
            _ => {
                self.job_args(j)?;
                self.out.write_all(b"}}")?;
                if flow != 0 {
                    self.flow(b'f', "submit", flow, pid, tid, j.start)?;
                }
                if let Some(b) = timeline::blocker(j) {
                    if let Some(&(btid, bstart, bend)) = self.recent.get(&b) {
                        // The arrow leaves the blocker's slice at its last nanosecond.
                        let from = bend.saturating_sub(1).max(bstart).min(j.start);
                        if from >= bstart {
                            let id = self.front.next_seq();
                            self.flow(b's', "blocker", id, self.pid, btid, from)?;
                            self.flow(b'f', "blocker", id, pid, tid, j.start)?;
                        }
                    }
                }
                self.recent.insert(j.key, (tid, j.start, j.end));
            }
        }
        Ok(())
    }

    /// Writes one pending item.
    fn write_item(&mut self, p: Pending) -> io::Result<()> {
        match p.what {
            What::Host(slot) | What::Queue(slot) | What::Exec(slot) => {
                let h = self.front.lend(slot);
                let res = self.write_job(&p.what, &h);
                self.front.written(slot, h);
                res?;
            }
            What::Marker(m) => {
                let (pid, tid, at) = self.lane_instant(TrackKey::Ring(m.ring), p.ts)?;
                self.instant_head(m.name(), b't', pid, tid, at)?;
                let Marker {
                    ring,
                    ctx,
                    seqno,
                    arg0,
                    arg2,
                    ..
                } = *m;
                write!(
                    self.out,
                    "\"ring\":{ring},\"ctx\":{ctx},\"seqno\":{seqno},\"arg0\":\"{arg0:#x}\",\"status\":{arg2}}}}}"
                )?;
            }
            What::Msg(msg) => {
                let Message { pid, text } = *msg;
                let (pid, tid, at) = self.lane_instant(msg_track(pid), p.ts)?;
                self.instant_head(&msg_name(&text), b't', pid, tid, at)?;
                self.out.write_all(b"\"text\":")?;
                jsonw::string(&mut self.out, &text)?;
                self.out.write_all(b"}}")?;
            }
            What::Lost(lost) => {
                let LostRecords {
                    cpu,
                    source,
                    count,
                    gap,
                } = *lost;
                let name = format!("lost {count} records");
                self.instant_head(&name, b'p', self.pid, 0, p.ts)?;
                write!(
                    self.out,
                    "\"cpu\":{cpu},\"source\":{source},\"count\":{count},\"sequence_gap\":{gap}}}}}"
                )?;
            }
        }
        Ok(())
    }

    /// Writes every pending item before `w`, then the counters up to `w`.
    fn advance(&mut self, w: u64) -> io::Result<()> {
        while let Some(p) = self.front.pop_before(w) {
            self.write_item(p)?;
        }
        while let Some((ring, rel_ts, b)) = self.front.next_due_bucket(w) {
            self.counter(ring, rel_ts, b)?;
        }
        // Blocker arrows need a blocker written before its waiter: keep the last second.
        let keep = w.saturating_sub(1_000_000_000);
        if self.recent.len() > 4096 {
            self.recent.retain(|_, v| v.2 >= keep);
        }
        Ok(())
    }

    /// The counters of `ring` at `rel_ts` (fill only when known).
    fn counter(&mut self, ring: u32, rel_ts: u64, b: Bucket) -> io::Result<()> {
        self.sep()?;
        self.out.write_all(b"{\"ph\":\"C\",\"name\":")?;
        jsonw::string(&mut self.out, self.front.counter_label(ring).as_bytes())?;
        write!(self.out, ",\"pid\":{},\"tid\":0,\"ts\":", self.pid)?;
        jsonw::us(&mut self.out, rel_ts)?;
        let busy = (b.busy as f64 * 100.0 / self.cfg.interval_ns as f64).min(100.0);
        write!(
            self.out,
            ",\"args\":{{\"busy %\":{busy:.1},\"outstanding\":{}",
            b.outstanding
        )?;
        if b.fill != timeline::FILL_UNKNOWN {
            write!(self.out, ",\"fill %\":{:.1}", b.fill as f64 / 10.0)?;
        }
        self.out.write_all(b"}}")
    }
}

impl<W: Write> Timeline for Perfetto<W> {
    fn record(
        &mut self,
        rec: &RecordView<'_>,
        joiner: &Joiner,
        watermark: Option<u64>,
    ) -> io::Result<()> {
        let ready = self.front.record(rec, joiner, watermark);
        ready.map_or(Ok(()), |w| self.advance(w))
    }

    fn lost(&mut self, l: &Lost, joiner: &Joiner) -> io::Result<()> {
        self.front.lost(l, joiner);
        Ok(())
    }

    fn job(&mut self, job: &Job) -> io::Result<()> {
        if let Some(slices) = self.front.admit(job) {
            let flow = if slices.submit_arrow() {
                self.front.next_seq()
            } else {
                0
            };
            self.front.hold(job.clone(), slices, flow, 0);
        }
        Ok(())
    }

    fn finish(&mut self, engine: &Engine, warnings: &[String]) -> io::Result<()> {
        let end = engine.joiner.stats.last_ns.saturating_add(1);
        // Everything left, and the counters up to one bucket past the end of the trace (the
        // last sample shows the rings idle).
        self.advance(end.saturating_add(2 * self.cfg.interval_ns))?;
        let st = &engine.joiner.stats;
        self.joint.cards.borrow_mut().push(CardMeta {
            card: self.cfg.card,
            driver: self.cfg.driver.clone(),
            records: st.records,
            jobs: self.front.stats.jobs,
            events: self.front.stats.events,
            lanes: self.front.stats.lanes,
            lost_records: st.lost_records,
            moved: self.front.stats.moved,
            late_busy_ns: self.front.stats.late_busy_ns,
            max_held: self.front.stats.max_held,
        });
        if self.joint.members.leave() > 0 {
            // Another card's exporter closes the document.
            return self.out.flush();
        }
        self.out
            .write_all(b"\n],\"otherData\":{\"tool\":\"grtreport\"")?;
        let cards = self.joint.cards.take();
        if let [c] = &cards[..] {
            write!(self.out, ",\"card\":{},\"driver\":", c.card)?;
            jsonw::string(&mut self.out, c.driver.as_bytes())?;
            self.out.write_all(b",\"input\":")?;
            jsonw::string(&mut self.out, self.cfg.input.as_bytes())?;
            write!(
                self.out,
                ",\"records\":{},\"jobs\":{},\"trace_events\":{},\"lanes\":{},\"lost_records\":{},\"counter_interval_us\":",
                c.records, c.jobs, c.events, c.lanes, c.lost_records
            )?;
            jsonw::us(&mut self.out, self.cfg.interval_ns)?;
            write!(
                self.out,
                ",\"instants_moved\":{},\"late_busy_ns\":{},\"max_held_items\":{}",
                c.moved, c.late_busy_ns, c.max_held
            )?;
        } else {
            // Several cards: each one's figures, in card order; the totals that add up.
            let mut cards = cards;
            cards.sort_by_key(|c| c.card);
            self.out.write_all(b",\"cards\":[")?;
            for (i, c) in cards.iter().enumerate() {
                if i > 0 {
                    self.out.write_all(b",")?;
                }
                write!(self.out, "{{\"card\":{},\"driver\":", c.card)?;
                jsonw::string(&mut self.out, c.driver.as_bytes())?;
                write!(
                    self.out,
                    ",\"records\":{},\"jobs\":{},\"trace_events\":{},\"lanes\":{},\"lost_records\":{},\"instants_moved\":{},\"late_busy_ns\":{},\"max_held_items\":{}}}",
                    c.records, c.jobs, c.events, c.lanes, c.lost_records, c.moved, c.late_busy_ns, c.max_held
                )?;
            }
            self.out.write_all(b"],\"input\":")?;
            jsonw::string(&mut self.out, self.cfg.input.as_bytes())?;
            let sum = |f: fn(&CardMeta) -> u64| cards.iter().map(f).sum::<u64>();
            write!(
                self.out,
                ",\"records\":{},\"jobs\":{},\"trace_events\":{},\"lost_records\":{},\"counter_interval_us\":",
                sum(|c| c.records),
                sum(|c| c.jobs),
                self.joint.events.get(),
                sum(|c| c.lost_records)
            )?;
            jsonw::us(&mut self.out, self.cfg.interval_ns)?;
        }
        self.out.write_all(b",\"warnings\":[")?;
        for (i, w) in warnings.iter().enumerate() {
            if i > 0 {
                self.out.write_all(b",")?;
            }
            jsonw::string(&mut self.out, w.as_bytes())?;
        }
        self.out.write_all(b"]}}\n")?;
        self.out.flush()
    }
}
