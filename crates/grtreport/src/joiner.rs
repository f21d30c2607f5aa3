//! The streaming joiner: feed records in time order, get finished [`Job`]s out.
//!
//! Memory is bounded by the jobs in flight (a hash map of open jobs plus small per-ring
//! queues), never by the trace length. A job leaves the joiner when its IRQ arrives, or
//! `grace` after its END when no IRQ names it (it then completes at its fence SIGNAL or its
//! END), or `horizon` after its last event when it never ends (incomplete).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use grtrace_format::abi::{eflag, rtype, EventCode};
use grtrace_format::{EventView, Lost, RecordView};

use crate::job::{Flags, Job, JobKey, Phases, NONE};

/// A small fast hasher for integer keys (FxHash); the joiner does one lookup per event.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// `a <= b` in sequence-number order, surviving wrap-around of 32-bit and 64-bit seqnos.
#[inline]
pub fn seq_le(a: u64, b: u64) -> bool {
    if a <= u32::MAX as u64 && b <= u32::MAX as u64 {
        (b as u32).wrapping_sub(a as u32) as i32 >= 0
    } else {
        b.wrapping_sub(a) as i64 >= 0
    }
}

/// Per-ring state over time.
#[derive(Debug)]
pub struct RingState {
    pub id: u32,
    /// Size in units from NOTE_RING (0 = unknown).
    pub size: u64,
    pub name: String,
    /// Committed, not yet submitted, in commit order.
    pending: VecDeque<JobKey>,
    /// Started (first START seen) and not finally ended.
    active: Vec<JobKey>,
    /// Ended, waiting for an IRQ.
    awaiting_irq: Vec<JobKey>,
    /// Submitted and not yet ended.
    pub outstanding: u32,
    last_end: u64,
    pub switches: u64,
    pub stalls: u64,
    pub faults: u64,
    pub resets: u64,
}

impl RingState {
    fn new(id: u32) -> RingState {
        RingState {
            id,
            size: 0,
            name: String::new(),
            pending: VecDeque::new(),
            active: Vec::new(),
            awaiting_irq: Vec::new(),
            outstanding: 0,
            last_end: NONE,
            switches: 0,
            stalls: 0,
            faults: 0,
            resets: 0,
        }
    }
}

/// Ring states by id: small ids (the usual case) index a table directly, others go through
/// a map; one lookup per event, so it is kept cheap.
#[derive(Default)]
struct Rings {
    list: Vec<RingState>,
    small: Vec<u32>,
    big: FxMap<u32, u32>,
}

const SMALL_RINGS: u32 = 1024;

impl Rings {
    #[inline]
    fn index(&self, id: u32) -> Option<usize> {
        let i = if id < SMALL_RINGS {
            *self.small.get(id as usize)?
        } else {
            *self.big.get(&id)?
        };
        (i != u32::MAX).then_some(i as usize)
    }
    #[inline]
    fn get(&self, id: &u32) -> Option<&RingState> {
        self.index(*id).map(|i| &self.list[i])
    }
    #[inline]
    fn get_mut(&mut self, id: &u32) -> Option<&mut RingState> {
        self.index(*id).map(|i| &mut self.list[i])
    }
    #[inline]
    fn entry(&mut self, id: u32) -> &mut RingState {
        if let Some(i) = self.index(id) {
            return &mut self.list[i];
        }
        let i = self.list.len() as u32;
        self.list.push(RingState::new(id));
        if id < SMALL_RINGS {
            if self.small.len() <= id as usize {
                self.small.resize(id as usize + 1, u32::MAX);
            }
            self.small[id as usize] = i;
        } else {
            self.big.insert(id, i);
        }
        &mut self.list[i as usize]
    }
    fn values(&self) -> impl Iterator<Item = &RingState> {
        self.list.iter()
    }
}

/// An open job.
#[derive(Clone, Debug)]
struct Slot {
    pid: u32,
    commit: u64,
    submit: u64,
    start: u64,
    end: u64,
    irq: u64,
    signal: u64,
    last_seen: u64,
    fill_units: u32,
    outstanding: u32,
    batch: u32,
    sync_open: u64,
    sync_open_host: bool,
    gpu_wait: u64,
    host_wait: u64,
    sync_segments: u32,
    fault_open: u64,
    vm_fault: u64,
    faults: u32,
    preempts_end: u32,
    preempts_switch: u32,
    preempt_at: u64,
    preempted: u64,
    switches_at_start: u64,
    switches: u32,
    flags: Flags,
    in_pending: bool,
    in_active: bool,
    in_awaiting: bool,
    counted: bool,
}

impl Slot {
    fn new(t: u64) -> Slot {
        Slot {
            pid: 0,
            commit: NONE,
            submit: NONE,
            start: NONE,
            end: NONE,
            irq: NONE,
            signal: NONE,
            last_seen: t,
            fill_units: u32::MAX,
            outstanding: 0,
            batch: 0,
            sync_open: NONE,
            sync_open_host: false,
            gpu_wait: 0,
            host_wait: 0,
            sync_segments: 0,
            fault_open: NONE,
            vm_fault: 0,
            faults: 0,
            preempts_end: 0,
            preempts_switch: 0,
            preempt_at: NONE,
            preempted: 0,
            switches_at_start: 0,
            switches: 0,
            flags: Flags::default(),
            in_pending: false,
            in_active: false,
            in_awaiting: false,
            counted: false,
        }
    }
}

/// Counters of what the joiner saw, for the report header and warnings.
#[derive(Clone, Debug, Default)]
pub struct JoinStats {
    pub records: u64,
    pub events: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// NOTE_LOST records and reader-detected gaps, and the records they count.
    pub loss_notes: u64,
    pub lost_records: u64,
    /// IRQs that named no open job, or named none at all (seqno 0).
    pub irq_orphan: u64,
    pub irq_unnamed: u64,
    /// Records that arrived more than a little earlier than one already seen.
    pub out_of_order: u64,
    pub unknown_codes: u64,
    pub jobs: u64,
    pub evicted: u64,
    pub max_in_flight: u64,
}

/// Tunables of the joiner.
#[derive(Clone, Copy, Debug)]
pub struct JoinConfig {
    /// How long after END to wait for an IRQ naming the job.
    pub grace_ns: u64,
    /// A job with no event for this long is given up on (incomplete).
    pub horizon_ns: u64,
}

impl Default for JoinConfig {
    fn default() -> Self {
        JoinConfig {
            grace_ns: 5_000_000,
            horizon_ns: 10_000_000_000,
        }
    }
}

pub struct Joiner {
    cfg: JoinConfig,
    jobs: FxMap<JobKey, Slot>,
    rings: Rings,
    /// Next time to look for ended jobs whose IRQ grace period is over.
    next_grace: u64,
    now: u64,
    next_sweep: u64,
    scratch: Vec<JobKey>,
    out: Vec<Job>,
    pub stats: JoinStats,
}

impl Joiner {
    pub fn new(cfg: JoinConfig) -> Joiner {
        Joiner {
            cfg,
            jobs: FxMap::default(),
            rings: Rings::default(),
            next_grace: 0,
            now: 0,
            next_sweep: 0,
            scratch: Vec::new(),
            out: Vec::new(),
            stats: JoinStats {
                first_ns: NONE,
                ..Default::default()
            },
        }
    }

    /// Finished jobs since the last call, in the order they finished.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Job> {
        self.out.drain(..)
    }

    pub fn has_finished(&self) -> bool {
        !self.out.is_empty()
    }

    pub fn ring(&self, id: u32) -> Option<&RingState> {
        self.rings.get(&id)
    }

    pub fn in_flight(&self) -> usize {
        self.jobs.len()
    }

    /// Earliest event time of the jobs still open ([`NONE`] if none): no job finished later
    /// has an event before it. O(jobs in flight); the timeline exports call it now and then.
    pub fn oldest_open(&self) -> u64 {
        self.jobs
            .values()
            .map(|s| {
                [s.commit, s.submit, s.start, s.end]
                    .into_iter()
                    .find(|&t| t != NONE)
                    .unwrap_or(s.last_seen)
            })
            .min()
            .unwrap_or(NONE)
    }

    /// Feeds one record (events and notes).
    #[inline]
    pub fn feed(&mut self, rec: &RecordView<'_>) {
        let t = rec.time_ns();
        self.stats.records += 1;
        self.tick(t);
        match rec.rtype() {
            rtype::EVENT => {
                if let Some(ev) = rec.event() {
                    self.stats.events += 1;
                    self.event(&ev, rec.flags(), rec.pid(), t);
                }
            }
            rtype::NOTE_RING => {
                if let grtrace_format::Body::Ring(r) = rec.body() {
                    let rs = self.rings.entry(r.ring);
                    rs.size = r.size;
                    rs.name = String::from_utf8_lossy(r.name).into_owned();
                }
            }
            rtype::NOTE_LOST => {
                if let grtrace_format::Body::Lost(l) = rec.body() {
                    self.lost(&l);
                }
            }
            _ => {}
        }
    }

    /// Records vanished (a NOTE_LOST, or a sequence gap found by the reader): every job in
    /// flight may have lost events, so each is marked incomplete rather than guessed at.
    pub fn lost(&mut self, l: &Lost) {
        self.stats.loss_notes += 1;
        self.stats.lost_records += l.count;
        for s in self.jobs.values_mut() {
            s.flags.set(Flags::LOST | Flags::INCOMPLETE);
        }
    }

    #[inline]
    fn tick(&mut self, t: u64) {
        if self.stats.first_ns == NONE {
            self.stats.first_ns = t;
            self.next_sweep = t.saturating_add(self.cfg.horizon_ns);
        }
        if t < self.now {
            // Merged input is time ordered; small inversions across CPUs are tolerated (the
            // job's times are kept as recorded), large ones are counted.
            if self.now - t > 1_000_000 {
                self.stats.out_of_order += 1;
            }
            return;
        }
        self.now = t;
        self.stats.last_ns = t;
        if t >= self.next_grace {
            self.expire_grace(t);
        }
        if t >= self.next_sweep {
            self.sweep(t);
        }
    }

    /// Ended jobs that no IRQ named within the grace period complete now (at their SIGNAL
    /// or END). Checked every quarter grace period rather than per event: the per-ring lists
    /// of jobs awaiting an IRQ are short, since IRQs usually finish jobs first.
    fn expire_grace(&mut self, t: u64) {
        self.next_grace = t.saturating_add(self.cfg.grace_ns / 4 + 1);
        let limit = t.saturating_sub(self.cfg.grace_ns);
        self.scratch.clear();
        for r in self.rings.values() {
            for k in &r.awaiting_irq {
                if self.jobs.get(k).is_some_and(|s| s.end <= limit) {
                    self.scratch.push(*k);
                }
            }
        }
        let mut due = std::mem::take(&mut self.scratch);
        due.sort_unstable_by_key(|k| (self.jobs[k].end, *k));
        for k in due.drain(..) {
            self.finish(k);
        }
        self.scratch = due;
    }

    /// Gives up on jobs that have been silent for longer than the horizon.
    fn sweep(&mut self, t: u64) {
        self.next_sweep = t.saturating_add(self.cfg.horizon_ns / 4 + 1);
        let limit = t.saturating_sub(self.cfg.horizon_ns);
        self.scratch.clear();
        self.scratch.extend(
            self.jobs
                .iter()
                .filter(|(_, s)| s.last_seen < limit)
                .map(|(k, _)| *k),
        );
        let mut stale = std::mem::take(&mut self.scratch);
        stale.sort_unstable_by_key(|k| (self.jobs[k].last_seen, *k));
        for k in stale.drain(..) {
            self.stats.evicted += 1;
            self.finish(k);
        }
        self.scratch = stale;
    }

    #[inline]
    fn ring_mut(rings: &mut Rings, id: u32) -> &mut RingState {
        rings.entry(id)
    }

    #[inline]
    fn slot(jobs: &mut FxMap<JobKey, Slot>, key: JobKey, t: u64) -> &mut Slot {
        let s = jobs.entry(key).or_insert_with(|| Slot::new(t));
        s.last_seen = t;
        s
    }

    fn event(&mut self, ev: &EventView<'_>, flags: u16, pid: u32, t: u64) {
        let key = JobKey {
            ctx: ev.ctx(),
            ring: ev.ring(),
            seqno: ev.seqno(),
        };
        let Some(code) = EventCode::from_u16(ev.code()) else {
            self.stats.unknown_codes += 1;
            return;
        };
        match code {
            EventCode::Commit => {
                let n = self.jobs.len();
                let s = Self::slot(&mut self.jobs, key, t);
                if s.commit == NONE {
                    s.commit = t;
                    s.pid = pid;
                    if s.submit == NONE && !s.in_pending {
                        s.in_pending = true;
                        Self::ring_mut(&mut self.rings, key.ring)
                            .pending
                            .push_back(key);
                    }
                }
                if n as u64 >= self.stats.max_in_flight {
                    self.stats.max_in_flight = self.jobs.len() as u64;
                }
            }
            EventCode::Submit => self.submit(key, ev, t),
            EventCode::Start => {
                let r = Self::ring_mut(&mut self.rings, key.ring);
                let s = Self::slot(&mut self.jobs, key, t);
                if s.start == NONE || (s.flags.has(Flags::INFERRED) && t <= s.end) {
                    if s.start == NONE {
                        s.switches_at_start = r.switches;
                    }
                    s.start = t;
                    s.flags.0 &= !Flags::INFERRED;
                    if s.end == NONE && !s.in_active {
                        s.in_active = true;
                        r.active.push(key);
                    }
                } else if s.preempt_at != NONE {
                    s.preempted += t.saturating_sub(s.preempt_at);
                    s.preempt_at = NONE;
                }
                if s.in_pending {
                    // Started without a SUBMIT we saw: no queue time can be measured.
                    s.in_pending = false;
                    if let Some(i) = r.pending.iter().position(|k| *k == key) {
                        r.pending.remove(i);
                    }
                }
            }
            EventCode::End => self.end(key, ev, flags, t),
            EventCode::Irq => self.irq(key, ev, t),
            EventCode::Signal => {
                if let Some(s) = self.jobs.get_mut(&key) {
                    if s.signal == NONE {
                        s.signal = t;
                    }
                }
            }
            EventCode::SyncEnter => {
                let s = Self::slot(&mut self.jobs, key, t);
                if s.sync_open == NONE {
                    s.sync_open = t;
                    s.sync_open_host = flags & eflag::HOST != 0;
                }
            }
            EventCode::SyncExit => {
                if let Some(s) = self.jobs.get_mut(&key) {
                    s.last_seen = t;
                    if s.sync_open != NONE {
                        let d = t.saturating_sub(s.sync_open);
                        s.gpu_wait += d;
                        if s.sync_open_host {
                            s.host_wait += d;
                        }
                        s.sync_segments += 1;
                        s.sync_open = NONE;
                    }
                }
            }
            EventCode::CtxSwitch => {
                let r = Self::ring_mut(&mut self.rings, key.ring);
                r.switches += 1;
                if flags & eflag::PREEMPT != 0 {
                    let prev = ev.arg0() as u32;
                    for k in &r.active {
                        if k.ctx == prev {
                            if let Some(s) = self.jobs.get_mut(k) {
                                s.preempts_switch += 1;
                            }
                        }
                    }
                }
            }
            EventCode::VmFault | EventCode::VmRetry => {
                let r = Self::ring_mut(&mut self.rings, key.ring);
                let fault = code == EventCode::VmFault;
                if fault {
                    r.faults += 1;
                }
                for k in &r.active {
                    if key.ctx != 0 && k.ctx != key.ctx {
                        continue;
                    }
                    if let Some(s) = self.jobs.get_mut(k) {
                        s.faults += 1;
                        if fault {
                            if s.fault_open == NONE {
                                s.fault_open = t;
                            }
                        } else if s.fault_open != NONE {
                            s.vm_fault += t.saturating_sub(s.fault_open);
                            s.fault_open = NONE;
                        }
                    }
                }
            }
            EventCode::Stall => {
                Self::ring_mut(&mut self.rings, key.ring).stalls += 1;
            }
            EventCode::Timeout | EventCode::Hang => {
                if let Some(s) = self.jobs.get_mut(&key) {
                    s.flags.set(Flags::ERROR);
                }
            }
            EventCode::Reset => {
                let r = Self::ring_mut(&mut self.rings, key.ring);
                r.resets += 1;
                for k in &r.active {
                    if let Some(s) = self.jobs.get_mut(k) {
                        s.flags.set(Flags::ERROR);
                    }
                }
            }
            _ => {}
        }
    }

    /// SUBMIT makes every committed job on the ring up to `seqno` visible at once.
    fn submit(&mut self, key: JobKey, ev: &EventView<'_>, t: u64) {
        let r = Self::ring_mut(&mut self.rings, key.ring);
        self.scratch.clear();
        // Everything committed up to the doorbell's seqno, wherever it sits in commit order:
        // two submitters may commit out of seqno order by a few ns on different CPUs.
        let scratch = &mut self.scratch;
        r.pending.retain(|k| {
            if seq_le(k.seqno, key.seqno) {
                scratch.push(*k);
                false
            } else {
                true
            }
        });
        let named = self.scratch.iter().any(|k| k.seqno == key.seqno);
        // arg3 counts the jobs this doorbell made visible. Only when that is more than the
        // COMMITs seen pending was a COMMIT missed (trace started later, or lost). An empty
        // doorbell (0), a racing submitter ringing for jobs another CPU already rang for,
        // names the ring's write pointer, not a job.
        let unseen = ev.arg3() as usize > self.scratch.len();
        if !named && unseen && !self.jobs.contains_key(&key) {
            self.jobs.insert(key, Slot::new(t));
            self.scratch.push(key);
        }
        let fill = ev.arg2();
        let batch = self.scratch.len() as u32;
        let mut made = 0u32;
        for k in &self.scratch {
            if let Some(s) = self.jobs.get_mut(k) {
                s.in_pending = false;
                s.last_seen = t;
                if s.submit == NONE {
                    s.submit = t;
                    s.fill_units = fill;
                    s.batch = batch;
                    if s.end == NONE {
                        s.counted = true;
                        made += 1;
                    }
                    // Final for a single job; a batch is fixed up below.
                    s.outstanding = r.outstanding + made;
                }
            }
        }
        r.outstanding += made;
        let out = r.outstanding;
        if batch > 1 {
            for k in &self.scratch {
                if let Some(s) = self.jobs.get_mut(k) {
                    if s.submit == t {
                        s.outstanding = out;
                    }
                }
            }
        }
    }

    fn end(&mut self, key: JobKey, ev: &EventView<'_>, flags: u16, t: u64) {
        let r = Self::ring_mut(&mut self.rings, key.ring);
        let s = Self::slot(&mut self.jobs, key, t);
        if flags & eflag::PREEMPT != 0 {
            // Taken off the GPU, not finished: it will START again.
            s.preempts_end += 1;
            s.preempt_at = t;
            return;
        }
        if s.end != NONE {
            return;
        }
        if flags & eflag::ERROR != 0 || ev.arg2() != 0 {
            s.flags.set(Flags::ERROR);
        }
        s.end = t;
        if s.start == NONE {
            // START missing: the job cannot have started before it was visible to the GPU nor
            // before the job ahead of it on the ring finished.
            let mut st = s.submit;
            if r.last_end != NONE && (st == NONE || r.last_end > st) {
                st = r.last_end;
            }
            if st != NONE {
                s.start = st.min(t);
                s.flags.set(Flags::INFERRED);
            }
        } else {
            s.switches = r.switches.saturating_sub(s.switches_at_start) as u32;
        }
        r.last_end = t;
        if s.in_active {
            s.in_active = false;
            if let Some(i) = r.active.iter().position(|k| *k == key) {
                r.active.swap_remove(i);
            }
        }
        if s.counted {
            s.counted = false;
            r.outstanding = r.outstanding.saturating_sub(1);
        }
        if s.fault_open != NONE {
            s.vm_fault += t.saturating_sub(s.fault_open);
            s.fault_open = NONE;
        }
        if s.preempt_at != NONE {
            s.preempted += t.saturating_sub(s.preempt_at);
            s.preempt_at = NONE;
        }
        if s.irq != NONE {
            self.finish(key);
        } else {
            s.in_awaiting = true;
            r.awaiting_irq.push(key);
        }
    }

    fn irq(&mut self, key: JobKey, ev: &EventView<'_>, t: u64) {
        let mut seqno = key.seqno;
        if seqno == 0 {
            seqno = ev.arg0();
        }
        if seqno == 0 {
            // Unnamed interrupt: the job completes at its fence SIGNAL or its END.
            self.stats.irq_unnamed += 1;
            return;
        }
        let exact = JobKey { seqno, ..key };
        if key.ctx != 0 {
            if let Some(s) = self.jobs.get_mut(&exact) {
                s.last_seen = t;
                if s.irq == NONE {
                    s.irq = t;
                }
                if s.end != NONE {
                    self.finish(exact);
                }
                return;
            }
        }
        // IRQ context often has no ctx: find the ended job with that seqno on the ring.
        let found = self.rings.get(&key.ring).and_then(|r| {
            r.awaiting_irq
                .iter()
                .find(|k| k.seqno == seqno && (key.ctx == 0 || k.ctx == key.ctx))
                .copied()
        });
        match found {
            Some(k) => {
                if let Some(s) = self.jobs.get_mut(&k) {
                    s.irq = t;
                }
                self.finish(k);
            }
            None => self.stats.irq_orphan += 1,
        }
    }

    /// Takes a job out of the joiner and computes its phases.
    fn finish(&mut self, key: JobKey) {
        let Some(mut s) = self.jobs.remove(&key) else {
            return;
        };
        if let Some(r) = self.rings.get_mut(&key.ring) {
            if s.in_pending {
                if let Some(i) = r.pending.iter().position(|k| *k == key) {
                    r.pending.remove(i);
                }
            }
            if s.in_active {
                if let Some(i) = r.active.iter().position(|k| *k == key) {
                    r.active.swap_remove(i);
                }
            }
            if s.in_awaiting {
                if let Some(i) = r.awaiting_irq.iter().position(|k| *k == key) {
                    r.awaiting_irq.swap_remove(i);
                }
            }
            if s.counted {
                r.outstanding = r.outstanding.saturating_sub(1);
            }
        }
        let ring_size = self.rings.get(&key.ring).map_or(0, |r| r.size);
        if s.sync_open != NONE {
            // A dependency wait that never closed: count it up to the job's end, if known.
            let stop = if s.end != NONE { s.end } else { s.last_seen };
            let d = stop.saturating_sub(s.sync_open);
            s.gpu_wait += d;
            if s.sync_open_host {
                s.host_wait += d;
            }
            s.sync_segments += 1;
        }
        let mut f = s.flags;
        if s.commit == NONE {
            f.set(Flags::NO_COMMIT | Flags::INCOMPLETE);
        }
        if s.submit == NONE {
            f.set(Flags::NO_SUBMIT | Flags::INCOMPLETE);
        }
        if s.end == NONE || s.start == NONE {
            f.set(Flags::NO_END | Flags::INCOMPLETE);
        }
        let done = if s.irq != NONE && s.end != NONE {
            // An IRQ stamped before END comes from a CPU whose clock is a little behind:
            // the job cannot complete before it ended.
            s.irq.max(s.end)
        } else {
            f.set(Flags::NO_IRQ);
            if s.signal != NONE && s.end != NONE && s.signal >= s.end {
                s.signal
            } else {
                s.end
            }
        };
        let d = |a: u64, b: u64| {
            if a == NONE || b == NONE {
                0
            } else {
                b.saturating_sub(a)
            }
        };
        let phases = Phases {
            submit_host: d(s.commit, s.submit),
            queue: d(s.submit, s.start),
            exec: d(s.start, s.end),
            complete: d(s.end, done),
            gpu_wait: s.gpu_wait,
            vm_fault: s.vm_fault,
            total: d(s.commit, done),
        };
        let fill = if ring_size > 0 && s.fill_units != u32::MAX {
            (s.fill_units as f64 / ring_size as f64) as f32
        } else {
            f32::NAN
        };
        self.stats.jobs += 1;
        self.out.push(Job {
            key,
            pid: s.pid,
            commit: s.commit,
            submit: s.submit,
            start: s.start,
            end: s.end,
            done,
            phases,
            fill,
            outstanding: s.outstanding,
            batch: s.batch,
            sync_segments: s.sync_segments,
            host_wait: s.host_wait,
            faults: s.faults,
            preempts: s.preempts_end.max(s.preempts_switch),
            preempted: s.preempted,
            switches: s.switches,
            class_ref: 0,
            tags: Default::default(),
            flags: f,
        });
    }

    /// End of input: every open job is finished as it stands (ended jobs complete normally,
    /// the rest are incomplete), oldest first.
    pub fn flush(&mut self) {
        let mut keys: Vec<(u64, JobKey)> = self
            .jobs
            .iter()
            .map(|(k, s)| {
                let first = [s.commit, s.submit, s.start, s.end]
                    .into_iter()
                    .find(|&t| t != NONE)
                    .unwrap_or(s.last_seen);
                (first, *k)
            })
            .collect();
        keys.sort_unstable();
        for (_, k) in keys {
            self.finish(k);
        }
    }
}
