//! The streaming joiner: feed records in time order, get finished [`Job`]s out.
//!
//! Memory is bounded by the jobs in flight (a hash map of open jobs plus small per-ring
//! queues), never by the trace length. A job leaves the joiner when its IRQ arrives, or
//! `grace` after its END when no IRQ names it (it then completes at its fence SIGNAL or its
//! END), or `horizon` after its last event when it never ends (incomplete).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use grtrace_format::abi::{eflag, ring_flag};
use grtrace_format::Event;
use grtrace_format::RecordType;
use grtrace_format::{Lost, NativeEvent, RecordView};

use crate::job::{BlockKind, Blocker, Flags, Job, JobKey, Origin, Phases, NONE};
use crate::utilisation::{split_gap, Busy, IntervalRow, RingUtil};

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
/// A set with [`FxMap`]'s hasher.
pub type FxSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;

/// `a <= b` in sequence-number order, surviving wrap-around of 32-bit and 64-bit seqnos.
#[inline]
pub fn seq_le(a: u64, b: u64) -> bool {
    if a <= u32::MAX as u64 && b <= u32::MAX as u64 {
        (b as u32).wrapping_sub(a as u32) as i32 >= 0
    } else {
        b.wrapping_sub(a) as i64 >= 0
    }
}

/// The time a job spent in its scheduler's queue that no dependency explains (JOBS.md §2,
/// `sched`): from its QUEUE, or from when its longest dependency wait ended if later, to the
/// hand-off (its first COMMIT, SUBMIT or START at or after the QUEUE). [`NONE`] without a
/// QUEUE or a hand-off.
fn sched_wait(s: &Slot) -> u64 {
    if s.queued == NONE {
        return NONE;
    }
    let Some(handoff) = [s.commit, s.submit, s.start]
        .into_iter()
        .filter(|&t| t != NONE && t >= s.queued)
        .min()
    else {
        return NONE;
    };
    let met = if s.dep_seen && s.dep_until != NONE {
        s.dep_until.max(s.queued)
    } else {
        s.queued
    };
    handoff.saturating_sub(met)
}

/// The seqnos `a` with `seq_le(a, b)`, as at most two inclusive ranges (the half of the
/// sequence space up to `b`, which may wrap), so a ring's pending jobs up to a doorbell are
/// found by range instead of by visiting them all.
fn seq_le_ranges(b: u64) -> impl Iterator<Item = (u64, u64)> {
    let (span, max) = if b <= u32::MAX as u64 {
        ((1u64 << 31) - 1, u32::MAX as u64)
    } else {
        ((1u64 << 63) - 1, u64::MAX)
    };
    let (first, second) = if b >= span {
        ((b - span, b), None)
    } else {
        // Wraps: [0, b] and the top of the space.
        ((0, b), Some((max - (span - b - 1), max)))
    };
    std::iter::once(first).chain(second)
}

/// The committed, not yet submitted jobs of a ring, as (seqno, ctx). Seqnos usually come
/// in order: those go to a queue (a SUBMIT takes a prefix of it), the others to an ordered
/// set searched by range. The queue holds seqnos of one width (32 or 64 bits), strictly
/// increasing and less than half the sequence space apart, so that `seq_le` against any
/// doorbell selects a prefix or a suffix of it.
#[derive(Debug, Default)]
struct Pending {
    order: VecDeque<(u64, u32)>,
    rest: BTreeSet<(u64, u32)>,
}

/// Half the sequence space of a seqno's width (see [`seq_le`]).
#[inline]
fn half_space(seqno: u64) -> u64 {
    if seqno <= u32::MAX as u64 {
        1 << 31
    } else {
        1 << 63
    }
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.order.is_empty() && self.rest.is_empty()
    }

    /// Every element, in no particular order (a ring whose flags change regroups them).
    fn drain(&mut self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.order.drain(..).chain(std::mem::take(&mut self.rest))
    }

    fn insert(&mut self, seqno: u64, ctx: u32) {
        let fits = match (self.order.front(), self.order.back()) {
            (Some(&(first, _)), Some(&(last, _))) => {
                seqno > last
                    && half_space(seqno) == half_space(first)
                    && seqno - first < half_space(first)
            }
            _ => true,
        };
        if fits {
            self.order.push_back((seqno, ctx));
        } else {
            self.rest.insert((seqno, ctx));
        }
    }

    fn remove(&mut self, seqno: u64, ctx: u32) {
        let k = (seqno, ctx);
        if self.order.front() == Some(&k) {
            self.order.pop_front();
        } else if let Ok(i) = self.order.binary_search(&k) {
            self.order.remove(i);
        } else {
            self.rest.remove(&k);
        }
    }

    /// Takes every pending job a doorbell at `b` covers ([`covered`]) into `out` (as keys
    /// of `ring`); returns the elements visited.
    #[inline(always)]
    fn take_up_to(&mut self, b: u64, ring: u32, out: &mut Vec<JobKey>) -> u64 {
        let mut visited = 0;
        let key = |(seqno, ctx): (u64, u32)| JobKey { ctx, ring, seqno };
        if let (Some(&(first, _)), Some(&(last, _))) = (self.order.front(), self.order.back()) {
            if half_space(first) != half_space(b) {
                // A doorbell of the other width (never in a sane trace): look at them all.
                visited += self.order.len() as u64;
                self.order.retain(|&e| {
                    let take = covered(e.0, b);
                    if take {
                        out.push(key(e));
                    }
                    !take
                });
            } else if seq_le(first, b) {
                while let Some(&e) = self.order.front().filter(|e| seq_le(e.0, b)) {
                    self.order.pop_front();
                    out.push(key(e));
                    visited += 1;
                }
            } else if seq_le(last, b) {
                // The doorbell is more than half the space ahead of the oldest.
                while let Some(&e) = self.order.back().filter(|e| seq_le(e.0, b)) {
                    self.order.pop_back();
                    out.push(key(e));
                    visited += 1;
                }
            }
        }
        if !self.rest.is_empty() {
            let from = out.len();
            for range in seq_le_ranges(b) {
                for &e in self.rest.range((range.0, 0)..=(range.1, u32::MAX)) {
                    out.push(key(e));
                }
            }
            visited += (out.len() - from) as u64;
            for k in &out[from..] {
                self.rest.remove(&(k.seqno, k.ctx));
            }
        }
        visited
    }
}

/// Whether a doorbell at `b` covers seqno `a`: `a` is in [`seq_le_ranges`]`(b)` (which is
/// `seq_le(a, b)` when both have the same width; a 32-bit doorbell covers no 64-bit seqno).
fn covered(a: u64, b: u64) -> bool {
    seq_le_ranges(b).any(|(lo, hi)| lo <= a && a <= hi)
}

/// Jobs per ring remembered as taken before their doorbell: a doorbell comes microseconds to
/// milliseconds after them, so a few are enough; the oldest are forgotten first.
const TAKEN_EARLY: usize = 256;

/// Per-ring state over time.
#[derive(Debug)]
pub struct RingState {
    pub id: u32,
    /// Size in units from NOTE_RING (0 = unknown).
    pub size: u64,
    pub name: String,
    /// `ring_flag` bits from NOTE_RING (JOBS.md §1): CTX_SEQNO, VIRTUAL.
    pub flags: u32,
    /// Committed, not yet submitted, ordered by (seqno, ctx): a SUBMIT takes the range of
    /// seqnos up to its own without visiting the rest. On a CTX_SEQNO ring, per context in
    /// `ctx_pending` instead (a SUBMIT covers its own context); empty entries are removed.
    pending: Pending,
    ctx_pending: FxMap<u32, Pending>,
    /// Jobs the GPU finished before a SUBMIT covered them (at most [`TAKEN_EARLY`]), by
    /// (seqno, ctx): the doorbell that comes later counts them as made visible.
    taken_early: BTreeSet<(u64, u32)>,
    /// Submitted and not yet ended.
    pub outstanding: u32,
    last_end: u64,
    /// The job that ended at `last_end`: the one ahead of the next job to start.
    last_key: JobKey,
    pub switches: u64,
    pub stalls: u64,
    pub faults: u64,
    pub resets: u64,
    /// Events on the ring that touch every job running on it (ctx 0 VM faults, resets),
    /// as running totals: a job reads them at START and at END instead of being visited.
    wide: Touch,
    /// The last [`RECENT`] jobs that ended on the ring, oldest first: who ran while a job
    /// was queued.
    recent: VecDeque<Ran>,
    /// Busy time, idle causes, jobs outstanding over time.
    pub util: RingUtil,
}

/// A job that ran on a ring, for queue attribution.
#[derive(Clone, Copy, Debug)]
struct Ran {
    key: JobKey,
    submit: u64,
    start: u64,
    end: u64,
}

/// Jobs remembered per ring for queue attribution: a job queued behind more than this many
/// names the worst of the last `RECENT` (bounded work per START, whatever the queue depth).
const RECENT: usize = 64;

/// Finished jobs whose fence is remembered for waiters that finish later. A waiter whose
/// blocker finished more than this many fences earlier still names it (the owner is found
/// at SYNC time), only without the blocker's phases.
const DONE_FENCES: usize = 1 << 12;

/// What a finished fence owner leaves behind for its waiters.
#[derive(Clone, Copy, Debug)]
struct Done {
    key: JobKey,
    queue: u64,
    exec: u64,
    /// Its own dependency chain: links beyond it (0 = it waited on no recorded job) and the
    /// job at the end (itself when 0).
    depth: u32,
    root: JobKey,
}

/// The job stops executing at `t` (END, preempting END, or given up): its ring and context
/// lose a running job, and a ring left with none starts an idle gap.
fn stop_running(
    r: &mut RingState,
    ctx_util: &mut FxMap<u32, CtxUtil>,
    s: &mut Slot,
    ctx: u32,
    t: u64,
    iv_start: u64,
) {
    if !s.running {
        return;
    }
    s.running = false;
    if r.util.busy.stop(t, iv_start) {
        r.util.idle_since = t;
    }
    if let Some(c) = ctx_util.get_mut(&ctx) {
        c.busy.stop(t, iv_start);
    }
}

/// `b - a`, or NONE when either is unknown.
fn span(a: u64, b: u64) -> u64 {
    if a == NONE || b == NONE {
        NONE
    } else {
        b.saturating_sub(a)
    }
}

/// The job ahead on the ring that executed longest while a job submitted at `submit` and
/// started at `start` was queued, and how many executed meanwhile.
fn queue_blocker(recent: &VecDeque<Ran>, submit: u64, start: u64, ops: &mut u64) -> Blocker {
    let mut b = Blocker::default();
    for e in recent.iter().rev() {
        *ops += 1;
        if e.end <= submit {
            break;
        }
        let (lo, hi) = (e.start.max(submit), e.end.min(start));
        if hi > lo {
            b.ahead += 1;
            if hi - lo > b.lost {
                b = Blocker {
                    kind: BlockKind::Queue,
                    owned: true,
                    key: e.key,
                    lost: hi - lo,
                    queue: span(e.submit, e.start),
                    exec: span(e.start, e.end),
                    ahead: b.ahead,
                    ..Blocker::default()
                };
            }
        }
    }
    b
}

impl RingState {
    #[inline]
    fn ctx_seqno(&self) -> bool {
        self.flags & ring_flag::CTX_SEQNO != 0
    }

    /// Whether the ring's jobs move to the ring that runs them (JOBS.md §1).
    pub fn is_virtual(&self) -> bool {
        self.flags & ring_flag::VIRTUAL != 0
    }

    // The pending jobs: one test of the flags per call, the per-context side (i915) out of
    // line so that the ring-wide one stays as it was.

    /// A job committed and waiting for its doorbell.
    #[inline(always)]
    fn pending_insert(&mut self, seqno: u64, ctx: u32) {
        if self.ctx_seqno() {
            self.ctx_pending_insert(seqno, ctx);
        } else {
            self.pending.insert(seqno, ctx);
        }
    }

    /// A job no longer waiting for its doorbell (started, finished, or moved away).
    #[inline(always)]
    fn pending_remove(&mut self, seqno: u64, ctx: u32) {
        if self.ctx_seqno() {
            self.ctx_pending_remove(seqno, ctx);
        } else {
            self.pending.remove(seqno, ctx);
        }
    }

    /// The pending jobs a doorbell of `ctx` at `b` makes visible, into `out`; returns the
    /// elements visited.
    #[inline(always)]
    fn pending_take(&mut self, ctx: u32, b: u64, out: &mut Vec<JobKey>) -> u64 {
        if self.ctx_seqno() {
            self.ctx_pending_take(ctx, b, out)
        } else {
            self.pending.take_up_to(b, self.id, out)
        }
    }

    #[inline(never)]
    fn ctx_pending_insert(&mut self, seqno: u64, ctx: u32) {
        self.ctx_pending.entry(ctx).or_default().insert(seqno, ctx);
    }

    #[inline(never)]
    fn ctx_pending_remove(&mut self, seqno: u64, ctx: u32) {
        if let Some(p) = self.ctx_pending.get_mut(&ctx) {
            p.remove(seqno, ctx);
            if p.is_empty() {
                self.ctx_pending.remove(&ctx);
            }
        }
    }

    #[inline(never)]
    fn ctx_pending_take(&mut self, ctx: u32, b: u64, out: &mut Vec<JobKey>) -> u64 {
        let Some(p) = self.ctx_pending.get_mut(&ctx) else {
            return 0;
        };
        let visited = p.take_up_to(b, self.id, out);
        if p.is_empty() {
            self.ctx_pending.remove(&ctx);
        }
        visited
    }

    /// Flags from a NOTE_RING; jobs already pending are regrouped if the seqno scope changed
    /// (a ring note that comes after events of its ring).
    fn set_flags(&mut self, flags: u32) {
        let was = self.ctx_seqno();
        self.flags = flags;
        if was == self.ctx_seqno() {
            return;
        }
        let mut all: Vec<(u64, u32)> = self.pending.drain().collect();
        for p in self.ctx_pending.values_mut() {
            all.extend(p.drain());
        }
        self.ctx_pending.clear();
        all.sort_unstable();
        for (seqno, ctx) in all {
            self.pending_insert(seqno, ctx);
        }
    }

    fn new(id: u32) -> RingState {
        RingState {
            id,
            size: 0,
            name: String::new(),
            flags: 0,
            pending: Pending::default(),
            ctx_pending: FxMap::default(),
            taken_early: BTreeSet::new(),
            outstanding: 0,
            last_end: NONE,
            last_key: JobKey::default(),
            switches: 0,
            stalls: 0,
            faults: 0,
            resets: 0,
            wide: Touch::default(),
            recent: VecDeque::with_capacity(RECENT),
            util: RingUtil::new(),
        }
    }
}

/// Running totals of the events that touch every running job of a ring, or of one context
/// on a ring. A job keeps the totals it saw at START; what changed by its END happened while
/// it ran. This replaces walking the running jobs on every such event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Touch {
    /// Preempting CTX_SWITCHes away from the context.
    preempts: u64,
    /// VM_FAULT and VM_RETRY events.
    faults: u64,
    /// Closed VM fault windows, ns, and the start of the open one (NONE if none).
    fault_ns: u64,
    fault_open: u64,
    resets: u64,
}

impl Touch {
    /// Fault time up to `t`, the open window included.
    fn fault_at(&self, t: u64) -> u64 {
        if self.fault_open == NONE {
            self.fault_ns
        } else {
            self.fault_ns
                .saturating_add(t.saturating_sub(self.fault_open))
        }
    }
    fn fault(&mut self, fault: bool, t: u64) {
        self.faults += 1;
        if fault {
            if self.fault_open == NONE {
                self.fault_open = t;
            }
        } else if self.fault_open != NONE {
            self.fault_ns = self
                .fault_ns
                .saturating_add(t.saturating_sub(self.fault_open));
            self.fault_open = NONE;
        }
    }
    /// (fault windows ns, faults, preempts, resets) between `self` at `t0` and `now` at `t1`.
    fn since(&self, t0: u64, now: &Touch, t1: u64) -> (u64, u64, u64, u64) {
        (
            now.fault_at(t1).saturating_sub(self.fault_at(t0)),
            now.faults - self.faults,
            now.preempts - self.preempts,
            now.resets - self.resets,
        )
    }
}

impl Default for Touch {
    fn default() -> Self {
        Touch {
            preempts: 0,
            faults: 0,
            fault_ns: 0,
            fault_open: NONE,
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
    /// The ring's state, created at `t` (its idle time counts from there) if new.
    // Several calls per job: the lookup is inlined, the creation (once per ring) is not.
    #[inline(always)]
    fn entry(&mut self, id: u32, t: u64) -> &mut RingState {
        match self.index(id) {
            Some(i) => &mut self.list[i],
            None => self.create(id, t),
        }
    }

    #[cold]
    #[inline(never)]
    fn create(&mut self, id: u32, t: u64) -> &mut RingState {
        let i = self.list.len() as u32;
        let mut r = RingState::new(id);
        r.util.idle_since = t;
        self.list.push(r);
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
}

/// An open job.
#[derive(Clone, Debug)]
struct Slot {
    pid: u32,
    /// Its first QUEUE (to the scheduler), NONE: none.
    queued: u64,
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
    /// When it first waited host-side for a dependency (NONE: never): an idle gap of its
    /// ring from then on was a dependency wait, even before its COMMIT.
    host_wait_from: u64,
    /// The fence the open SYNC window waits for.
    sync_fence: (u64, u64),
    /// Its own fence (fence context, seqno), once an event named the context; (0, 0) before.
    fence: (u64, u64),
    /// The fence of its longest SYNC window, and that window (dep_seen: there was one).
    dep_fence: (u64, u64),
    dep_lost: u64,
    /// When that window closed (the dependency was met).
    dep_until: u64,
    dep_seen: bool,
    queued_behind: Blocker,
    /// The job that ended last on the ring before this one started, and when (NONE: none
    /// seen): what the job waited for if it was ready before the ring was free.
    ring_prev: JobKey,
    ring_prev_end: u64,
    /// Executing now (counted in its ring's and context's busy time).
    running: bool,
    gpu_wait: u64,
    host_wait: u64,
    sync_segments: u32,
    vm_fault: u64,
    faults: u32,
    preempts_end: u32,
    preempts_switch: u32,
    /// Ring-wide and own-context totals seen at START (see [`Touch`]).
    touch_ring: Touch,
    touch_ctx: Touch,
    /// `Joiner::losses` when the job was first seen: a loss since then means it was in
    /// flight across lost records.
    born_loss: u64,
    preempt_at: u64,
    preempted: u64,
    switches_at_start: u64,
    switches: u32,
    flags: Flags,
    in_pending: bool,
    /// Started and not finally ended: `touch_*` are live.
    in_active: bool,
    in_awaiting: bool,
    counted: bool,
}

impl Slot {
    /// A SYNC window of `d` ns on `sync_fence` closed.
    fn close_sync(&mut self, d: u64) {
        // Saturating, as every sum of times taken from records (damaged ones included).
        self.gpu_wait = self.gpu_wait.saturating_add(d);
        if self.sync_open_host {
            self.host_wait = self.host_wait.saturating_add(d);
        }
        self.sync_segments += 1;
        if !self.dep_seen || d > self.dep_lost {
            self.dep_seen = true;
            self.dep_lost = d;
            self.dep_fence = self.sync_fence;
            self.dep_until = self.sync_open.saturating_add(d);
        }
        self.sync_open = NONE;
    }

    /// The job stops running at `t`: what touched its ring and context since START is its.
    fn settle(&mut self, ring: &Touch, ctx: &Touch, t: u64) {
        self.in_active = false;
        let (rf, rn, _, resets) = self.touch_ring.since(self.start, ring, t);
        let (cf, cn, preempts, _) = self.touch_ctx.since(self.start, ctx, t);
        self.vm_fault = self.vm_fault.saturating_add(rf).saturating_add(cf);
        self.faults += (rn + cn) as u32;
        self.preempts_switch += preempts as u32;
        if resets > 0 {
            self.flags.set(Flags::ERROR);
        }
    }

    fn new(t: u64) -> Slot {
        Slot {
            pid: 0,
            queued: NONE,
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
            host_wait_from: NONE,
            sync_fence: (0, 0),
            fence: (0, 0),
            dep_fence: (0, 0),
            dep_lost: 0,
            dep_until: NONE,
            dep_seen: false,
            queued_behind: Blocker::default(),
            ring_prev: JobKey::default(),
            ring_prev_end: NONE,
            running: false,
            gpu_wait: 0,
            host_wait: 0,
            sync_segments: 0,
            vm_fault: 0,
            faults: 0,
            preempts_end: 0,
            preempts_switch: 0,
            touch_ring: Touch::default(),
            touch_ctx: Touch::default(),
            born_loss: 0,
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

/// Open jobs: a map from key to the index of the job's slot in a slab that reuses the
/// slots of finished jobs. A `Slot` is a few hundred bytes: inserting and removing moves
/// only the index, and a finishing job is read where it lies.
#[derive(Default)]
struct Slots {
    index: FxMap<JobKey, u32>,
    v: Vec<Slot>,
    free: Vec<u32>,
    /// On a card with a VIRTUAL ring (JOBS.md §1): the ring each open job (ctx not 0) is
    /// keyed under, by (ctx, seqno), so that an event on another ring finds it.
    by_fence: Option<FxMap<(u32, u64), u32>>,
}

impl Slots {
    #[inline]
    fn len(&self) -> usize {
        self.index.len()
    }
    #[inline]
    fn get(&self, k: &JobKey) -> Option<&Slot> {
        self.index.get(k).map(|&i| &self.v[i as usize])
    }
    #[inline]
    fn get_mut(&mut self, k: &JobKey) -> Option<&mut Slot> {
        self.index.get(k).map(|&i| &mut self.v[i as usize])
    }
    fn contains_key(&self, k: &JobKey) -> bool {
        self.index.contains_key(k)
    }
    /// The slot of `k`, made by `make` if the job is new.
    #[inline]
    fn entry(&mut self, k: JobKey, make: impl FnOnce() -> Slot) -> &mut Slot {
        let i = match self.index.entry(k) {
            std::collections::hash_map::Entry::Occupied(e) => *e.get() as usize,
            std::collections::hash_map::Entry::Vacant(e) => {
                let i = match self.free.pop() {
                    Some(i) => {
                        self.v[i as usize] = make();
                        i
                    }
                    None => {
                        self.v.push(make());
                        (self.v.len() - 1) as u32
                    }
                };
                e.insert(i);
                if let Some(m) = &mut self.by_fence {
                    if k.ctx != 0 {
                        m.insert((k.ctx, k.seqno), k.ring);
                    }
                }
                i as usize
            }
        };
        &mut self.v[i]
    }

    /// Starts indexing open jobs by (ctx, seqno): the card has a VIRTUAL ring.
    fn index_by_fence(&mut self) {
        if self.by_fence.is_none() {
            let m = self.index.keys().filter(|k| k.ctx != 0);
            self.by_fence = Some(m.map(|k| ((k.ctx, k.seqno), k.ring)).collect());
        }
    }

    /// The ring job (ctx, seqno) is open on, when indexed.
    #[inline]
    fn ring_of(&self, ctx: u32, seqno: u64) -> Option<u32> {
        self.by_fence.as_ref()?.get(&(ctx, seqno)).copied()
    }

    /// Keys open job `from` as `to` (same ctx and seqno, another ring).
    fn rekey(&mut self, from: &JobKey, to: JobKey) {
        if let Some(i) = self.index.remove(from) {
            self.index.insert(to, i);
            if let Some(m) = &mut self.by_fence {
                m.insert((to.ctx, to.seqno), to.ring);
            }
        }
    }
    fn iter(&self) -> impl Iterator<Item = (&JobKey, &Slot)> {
        self.index.iter().map(|(k, &i)| (k, &self.v[i as usize]))
    }
    fn values(&self) -> impl Iterator<Item = &Slot> {
        self.index.values().map(|&i| &self.v[i as usize])
    }
    /// Takes `k` out of the open jobs; its slot stays readable until [`Slots::release`].
    #[inline]
    fn take(&mut self, k: &JobKey) -> Option<usize> {
        let i = self.index.remove(k)?;
        if let Some(m) = &mut self.by_fence {
            if m.get(&(k.ctx, k.seqno)) == Some(&k.ring) {
                m.remove(&(k.ctx, k.seqno));
            }
        }
        Some(i as usize)
    }
    fn release(&mut self, i: usize) {
        self.free.push(i as u32);
    }
}

impl std::ops::Index<&JobKey> for Slots {
    type Output = Slot;
    fn index(&self, k: &JobKey) -> &Slot {
        self.get(k).expect("open job")
    }
}

/// Counters of what the joiner saw, for the report header and warnings.
#[derive(Clone, Debug, Default)]
pub struct JoinStats {
    pub records: u64,
    pub events: u64,
    pub last_ns: u64,
    /// NOTE_LOST records and reader-detected gaps, and the records they count.
    pub loss_notes: u64,
    pub lost_records: u64,
    /// Losses whose count the source did not know (an ftrace page flagged with missed
    /// events but no stored count: NOTE_LOST with count 0).
    pub loss_uncounted: u64,
    /// IRQs that named no open job, or named none at all (seqno 0).
    pub irq_orphan: u64,
    pub irq_unnamed: u64,
    /// Records that arrived more than a little earlier than one already seen.
    pub out_of_order: u64,
    pub unknown_codes: u64,
    pub jobs: u64,
    pub evicted: u64,
    pub max_in_flight: u64,
    /// Units of work done: one per event plus one per element any lookup visits. Tests
    /// bound its growth to prove the joiner's cost is linear in the input.
    pub ops: u64,
    /// Bit N: event code N was seen (what the recording can measure).
    pub seen_codes: u64,
    /// Jobs that moved to another ring (from a VIRTUAL ring to the one that ran them, or
    /// between physical rings), JOBS.md §1.
    pub moved: u64,
    /// CPUs stamped on NOTE_STREAM_INFO records (a stream's last record: a recorder
    /// killed with SIGKILL writes none), at most [`ENDED_CPUS_LIMIT`].
    pub ended_cpus: FxSet<u32>,
    /// NOTE_STREAM_INFO records without `INFO_STOPPED_CLEANLY`.
    pub unclean_ends: u64,
}

/// Most CPUs remembered in [`JoinStats::ended_cpus`] (a hostile input cannot grow it).
pub const ENDED_CPUS_LIMIT: usize = 4096;

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
    /// The run's time origin (see [`Joiner::start_at`]).
    origin: Origin,
    jobs: Slots,
    rings: Rings,
    /// Per (ring, ctx): the running totals of [`Touch`] for one context's jobs.
    ctx_touch: FxMap<(u32, u32), Touch>,
    /// Losses (NOTE_LOST or reader gaps) so far; see `Slot::born_loss`.
    losses: u64,
    /// Ended jobs waiting for an IRQ, in END order (entries of jobs finished meanwhile are
    /// skipped when met), and the same jobs by (ring, seqno) for IRQs that carry no ctx.
    awaiting: VecDeque<(u64, JobKey)>,
    irq_wait: FxMap<(u32, u64), JobKey>,
    /// Fences of open jobs, and of finished ones (bounded, oldest dropped first).
    fences: FxMap<(u64, u64), JobKey>,
    done: FxMap<(u64, u64), Done>,
    done_order: VecDeque<(u64, u64)>,
    /// Next time to look for ended jobs whose IRQ grace period is over.
    next_grace: u64,
    now: u64,
    next_sweep: u64,
    scratch: Vec<JobKey>,
    out: Vec<Job>,
    /// Finished jobs missing a COMMIT or SUBMIT whose event code the stream has not shown
    /// yet: held until the code appears (then the job missed it: no-commit / no-submit) or
    /// the stream ends without it (a filtered recording: the phase is unmeasured, the job
    /// complete). At most [`HELD`]; see [`Joiner::hold_or_out`].
    held: VecDeque<Job>,
    /// Codes (bits as in `seen_codes`) taken as not recorded because [`HELD`] jobs missed
    /// them before any was seen.
    absent_codes: u64,
    /// The stream is an import (its source note was seen): a kernel IRQ never comes, so a
    /// loss spares jobs that ended and wait only for one ([`Joiner::lost`]).
    pub imported: bool,
    pub stats: JoinStats,
    /// Process names from NOTE_PROCESS, by pid.
    pub comms: Comms,
    /// Busy time and jobs ended per context (union over its rings).
    pub ctx_util: FxMap<u32, CtxUtil>,
    /// `--interval`: its length (0 = off), the current one, and the rows closed so far.
    iv_ns: u64,
    iv_start: u64,
    iv_end: u64,
    pub intervals: Vec<IntervalRow>,
}

/// A context's busy time and jobs ended.
#[derive(Clone, Copy, Debug, Default)]
pub struct CtxUtil {
    pub busy: Busy,
    pub ended: u64,
}

/// Jobs held at most while the stream has not shown whether it records COMMIT / SUBMIT
/// (see `Joiner::held`). A recording that gives this many jobs without a single COMMIT is
/// taken as filtered: a real one commits within microseconds of its first jobs.
const HELD: usize = 4096;

/// The bit of `seen_codes` for an event code.
#[inline]
fn code_bit(c: Event) -> u64 {
    1 << (c.0 & 63)
}

/// Whether events with this code belong to the job their key names (those a job can move
/// rings with, JOBS.md §1); the others are about the ring (CTX_SWITCH, STALL, faults, resets).
#[inline]
fn names_job(c: Event) -> bool {
    matches!(
        c,
        Event::COMMIT
            | Event::SUBMIT
            | Event::START
            | Event::END
            | Event::IRQ
            | Event::SIGNAL
            | Event::SYNC_ENTER
            | Event::SYNC_EXIT
            | Event::TIMEOUT
            | Event::HANG
    )
}

/// Intervals closed in one go at most; a longer silence skips ahead without rows.
const MAX_EMPTY_INTERVALS: u32 = 1000;

/// Process names by pid (NOTE_PROCESS), bounded: a trace with more distinct pids than
/// [`Comms::MAX`] keeps the first ones named and leaves the rest unnamed.
#[derive(Default)]
pub struct Comms(FxMap<u32, [u8; 16]>);

impl Comms {
    pub const MAX: usize = 1 << 16;

    fn note(&mut self, pid: u32, comm: &[u8]) {
        if self.0.len() >= Self::MAX && !self.0.contains_key(&pid) {
            return;
        }
        let mut c = [0u8; 16];
        let n = comm.len().min(16);
        c[..n].copy_from_slice(&comm[..n]);
        self.0.insert(pid, c);
    }

    /// The process name of `pid`, if a NOTE_PROCESS named it.
    pub fn get(&self, pid: u32) -> Option<String> {
        self.get_str(pid).map(std::borrow::Cow::into_owned)
    }

    /// [`get`](Self::get) without a copy when the name is UTF-8.
    pub fn get_str(&self, pid: u32) -> Option<std::borrow::Cow<'_, str>> {
        let c = self.0.get(&pid)?;
        let n = c.iter().position(|&b| b == 0).unwrap_or(16);
        Some(String::from_utf8_lossy(&c[..n]))
    }
}

impl Joiner {
    pub fn new(cfg: JoinConfig) -> Joiner {
        Joiner {
            cfg,
            origin: Origin::UNKNOWN,
            jobs: Slots::default(),
            rings: Rings::default(),
            ctx_touch: FxMap::default(),
            losses: 0,
            awaiting: VecDeque::new(),
            irq_wait: FxMap::default(),
            fences: FxMap::default(),
            done: FxMap::default(),
            done_order: VecDeque::new(),
            next_grace: 0,
            now: 0,
            next_sweep: 0,
            scratch: Vec::new(),
            out: Vec::new(),
            held: VecDeque::new(),
            absent_codes: 0,
            imported: false,
            comms: Comms::default(),
            ctx_util: FxMap::default(),
            iv_ns: 0,
            iv_start: NONE,
            iv_end: NONE,
            intervals: Vec::new(),
            stats: JoinStats {
                ..Default::default()
            },
        }
    }

    /// Finished jobs since the last call, in the order they finished.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Job> {
        self.out.drain(..)
    }

    /// Closes an `--interval` row per ring every `ns` of trace time.
    pub fn set_interval(&mut self, ns: u64) {
        self.iv_ns = ns;
    }

    /// Closes every interval that ends at or before `t` (and, with `last`, the partial one
    /// up to `t`), one row per ring that has run.
    fn close_intervals(&mut self, t: u64, last: bool) {
        let mut n = 0;
        while self.iv_end <= t || (last && self.iv_start < t) {
            let end = if self.iv_end <= t { self.iv_end } else { t };
            for r in self.rings.list.iter_mut() {
                if r.util.idle_since == NONE && !r.util.busy.running() {
                    continue;
                }
                let figures = r.util.close(self.iv_start, end);
                self.intervals.push(IntervalRow {
                    start: self.iv_start,
                    end,
                    ring: r.id,
                    figures,
                });
            }
            self.iv_start = end;
            self.iv_end = end.saturating_add(self.iv_ns);
            if end == t && last {
                break;
            }
            n += 1;
            if n >= MAX_EMPTY_INTERVALS && self.iv_end <= t {
                // A long silence: jump to the interval holding `t` (no rows for the gap).
                let skip = (t - self.iv_start) / self.iv_ns;
                self.iv_start += skip * self.iv_ns;
                self.iv_end = self.iv_start.saturating_add(self.iv_ns);
                n = 0;
            }
        }
    }

    /// Swaps the finished jobs into `buf` (empty), so they can be handed on while the
    /// joiner's names stay readable.
    pub fn take_finished(&mut self, buf: &mut Vec<Job>) {
        std::mem::swap(&mut self.out, buf);
    }

    /// Moves the finished jobs to the end of `buf`.
    pub fn append_finished(&mut self, buf: &mut Vec<Job>) {
        buf.append(&mut self.out);
    }

    pub fn has_finished(&self) -> bool {
        !self.out.is_empty()
    }

    /// Finished jobs not taken yet.
    pub fn finished_len(&self) -> usize {
        self.out.len()
    }

    pub fn ring(&self, id: u32) -> Option<&RingState> {
        self.rings.get(&id)
    }

    /// Every ring seen (NOTE_RING or an event naming it), in order of appearance.
    pub fn rings(&self) -> impl Iterator<Item = &RingState> {
        self.rings.list.iter()
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
            .chain(self.held.iter().map(Job::first_time))
            .min()
            .unwrap_or(NONE)
    }

    /// Feeds one record (events and notes).
    #[inline]
    pub fn feed(&mut self, rec: &RecordView<'_>) {
        // Events are read as native ones (a swapped one converted first).
        let mut buf = [0; grtrace_format::abi::rsize::EVENT];
        if let Some(ev) = rec.event_in(&mut buf) {
            return self.feed_event(&ev);
        }
        // u64::MAX is the joiner's "not seen" (NONE): a record stamped at the very last
        // nanosecond is taken one nanosecond earlier rather than lost.
        let t = rec.time_ns().min(NONE - 1);
        self.stats.records += 1;
        self.tick(t);
        match rec.rtype() {
            RecordType::NOTE_RING => {
                if let grtrace_format::Body::Ring(r) = rec.body() {
                    let rs = self.rings.entry(r.ring, t);
                    rs.size = r.size;
                    rs.name = String::from_utf8_lossy(r.name).into_owned();
                    if rs.flags != r.flags {
                        rs.set_flags(r.flags);
                        if rs.is_virtual() {
                            self.jobs.index_by_fence();
                        }
                    }
                }
            }
            RecordType::NOTE_PROCESS => {
                if let grtrace_format::Body::Process { comm } = rec.body() {
                    self.comms.note(rec.pid(), comm);
                }
            }
            RecordType::NOTE_LOST => {
                if let grtrace_format::Body::Lost(l) = rec.body() {
                    self.lost(&l);
                }
            }
            RecordType::NOTE_STREAM_INFO => {
                if let grtrace_format::Body::StreamInfo(i) = rec.body() {
                    // A set: a stream of nothing but STREAM_INFO records costs one hash
                    // probe each, not a scan of the CPUs seen.
                    let ended = &mut self.stats.ended_cpus;
                    if ended.len() < ENDED_CPUS_LIMIT {
                        ended.insert(rec.cpu());
                    }
                    if i.flags & grtrace_format::abi::INFO_STOPPED_CLEANLY == 0 {
                        self.stats.unclean_ends += 1;
                    }
                }
            }
            _ => {}
        }
    }

    /// Feeds one event record (as [`feed`](Self::feed) does).
    #[inline(always)]
    pub fn feed_event(&mut self, ev: &NativeEvent<'_>) {
        let t = ev.time_ns().min(NONE - 1);
        self.stats.records += 1;
        self.tick(t);
        self.stats.events += 1;
        self.event(ev, ev.flags(), ev.pid(), t);
    }

    /// Records vanished (a NOTE_LOST, or a sequence gap found by the reader): every job in
    /// flight may have lost events, so each is marked incomplete rather than guessed at.
    pub fn lost(&mut self, l: &Lost) {
        // A job that ended before the lost records began and waits only for an IRQ the
        // recording never had (an import without IRQ events) has every event it will get:
        // it is finished as it stands, not marked lost. Not so in a kernel recording whose
        // first loss comes before its first IRQ.
        if self.imported
            && self.stats.seen_codes & code_bit(Event::IRQ) == 0
            && !self.awaiting.is_empty()
        {
            // The jobs that ended by the last record before the loss: what was lost came
            // after it.
            self.finish_awaiting_until(l.first_ns, false);
        }
        self.stats.loss_notes += 1;
        self.stats.lost_records += l.count;
        if l.count == 0 {
            self.stats.loss_uncounted += 1;
        }
        // Every job now open is marked when it finishes (born_loss differs): O(1) here.
        self.losses += 1;
    }

    /// Starts the joiner's clock at `origin` (the first record's time) unless it runs
    /// already (an unknown origin starts nothing). A run of several cards starts every
    /// card's joiner at the run's first record, so all cards count times and `--interval`
    /// rows from the same instant.
    pub fn start_at(&mut self, origin: Origin) {
        let Some(t) = origin.get() else { return };
        if !self.origin.is_known() {
            self.origin = origin;
            self.next_sweep = t.saturating_add(self.cfg.horizon_ns);
            if self.iv_ns > 0 {
                self.iv_start = t;
                self.iv_end = t.saturating_add(self.iv_ns);
            }
        }
    }

    /// The run's time origin: the first record's time (of the whole run, on several
    /// cards), unknown before one.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    #[inline]
    fn tick(&mut self, t: u64) {
        if !self.origin.is_known() {
            self.start_at(Origin::at(t));
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
        if t >= self.iv_end {
            self.close_intervals(t, false);
        }
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
        self.finish_awaiting_until(t.saturating_sub(self.cfg.grace_ns), true);
    }

    /// Finishes the jobs awaiting an IRQ that ended by `limit`. `by_end`: in (END, key)
    /// order, as grace expiry always has; else in the order their ENDs came, which the
    /// loss path has always used (the two differ only for equal END times).
    fn finish_awaiting_until(&mut self, limit: u64, by_end: bool) {
        self.scratch.clear();
        while let Some(&(end, k)) = self.awaiting.front() {
            if end > limit {
                break;
            }
            self.awaiting.pop_front();
            self.stats.ops += 1;
            if self
                .jobs
                .get(&k)
                .is_some_and(|s| s.in_awaiting && s.end == end)
            {
                self.scratch.push(k);
            }
        }
        let mut due = std::mem::take(&mut self.scratch);
        if by_end {
            due.sort_unstable_by_key(|k| (self.jobs[k].end, *k));
        }
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
        self.stats.ops += self.jobs.len() as u64;
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
    fn ring_mut(rings: &mut Rings, id: u32, t: u64) -> &mut RingState {
        rings.entry(id, t)
    }

    #[inline]
    fn slot(jobs: &mut Slots, key: JobKey, t: u64, losses: u64) -> &mut Slot {
        let s = jobs.entry(key, || Slot {
            born_loss: losses,
            ..Slot::new(t)
        });
        s.last_seen = t;
        s
    }

    /// On a card with a VIRTUAL ring, (ctx, seqno) names a job on every ring (JOBS.md §1):
    /// the key under which the job of `key` is open, after moving it to `key.ring` when that
    /// is a physical ring and the job has not ended. A job open nowhere keeps `key`.
    // Out of line: only cards with a VIRTUAL ring come here; the common path stays small.
    #[cold]
    #[inline(never)]
    fn follow(&mut self, key: JobKey, t: u64) -> JobKey {
        self.stats.ops += 1;
        let Some(ring) = self.jobs.ring_of(key.ctx, key.seqno) else {
            return key;
        };
        if ring == key.ring {
            return key;
        }
        let here = JobKey { ring, ..key };
        let to_virtual = self.rings.get(&key.ring).is_some_and(RingState::is_virtual);
        if to_virtual || self.jobs.get(&here).is_some_and(|s| s.end != NONE) {
            // Never back to the virtual ring, nor once ended: the event is the job's there.
            return here;
        }
        if self.jobs.get(&key).is_some() {
            // A job is open under the event's own key already (damaged input, or fence
            // contexts equal in their low 32 bits): the event is its; moving the other
            // job there would drop one of them.
            return key;
        }
        self.move_job(here, key.ring, t);
        key
    }

    /// Moves open job `from` to ring `to_ring` at `t`: what it holds on its ring (a place
    /// among the pending, an outstanding count, busy time, the ring-wide totals it reads)
    /// is given back there and taken on the new ring.
    #[inline(never)]
    fn move_job(&mut self, from: JobKey, to_ring: u32, t: u64) {
        let to = JobKey {
            ring: to_ring,
            ..from
        };
        self.stats.moved += 1;
        self.jobs.rekey(&from, to);
        let Some(s) = self.jobs.get_mut(&to) else {
            return;
        };
        let r = Self::ring_mut(&mut self.rings, from.ring, t);
        if s.in_pending {
            r.pending_remove(from.seqno, from.ctx);
        }
        if s.counted {
            r.outstanding = r.outstanding.saturating_sub(1);
            r.util.outstanding(r.outstanding, t);
        }
        stop_running(r, &mut self.ctx_util, s, from.ctx, t, self.iv_start);
        let active = s.in_active;
        if active {
            let c = self.ctx_touch.get(&(from.ring, from.ctx)).copied();
            s.settle(&r.wide, &c.unwrap_or_default(), t);
        }
        let ran = s.start != NONE && s.end == NONE;
        if ran {
            s.switches += r.switches.saturating_sub(s.switches_at_start) as u32;
        }
        let r = Self::ring_mut(&mut self.rings, to_ring, t);
        if s.in_pending {
            r.pending_insert(to.seqno, to.ctx);
        }
        if s.counted {
            r.outstanding += 1;
            r.util.outstanding(r.outstanding, t);
        }
        if active {
            s.in_active = true;
            s.touch_ring = r.wide;
            s.touch_ctx = *self.ctx_touch.entry((to_ring, to.ctx)).or_default();
        }
        if ran {
            s.switches_at_start = r.switches;
        }
        if s.fence != (0, 0) && self.fences.get(&s.fence) == Some(&from) {
            self.fences.insert(s.fence, to);
        }
    }

    fn event(&mut self, ev: &NativeEvent<'_>, flags: u16, pid: u32, t: u64) {
        let mut key = JobKey {
            ctx: ev.ctx(),
            ring: ev.ring(),
            seqno: ev.seqno(),
        };
        self.stats.ops += 1;
        let code = ev.event();
        if !code.is_known() {
            self.stats.unknown_codes += 1;
            return;
        }
        let bit = 1u64 << (ev.code() & 63);
        if self.stats.seen_codes & bit == 0 {
            self.stats.seen_codes |= bit;
            if !self.held.is_empty() {
                self.release_held(false);
            }
        }
        if self.jobs.by_fence.is_some() && key.ctx != 0 && names_job(code) {
            key = self.follow(key, t);
        }
        match code {
            Event::COMMIT => {
                let n = self.jobs.len();
                let s = Self::slot(&mut self.jobs, key, t, self.losses);
                if s.commit == NONE {
                    s.commit = t;
                    s.pid = pid;
                    if s.submit == NONE && !s.in_pending {
                        s.in_pending = true;
                        Self::ring_mut(&mut self.rings, key.ring, t)
                            .pending_insert(key.seqno, key.ctx);
                    }
                }
                if n as u64 >= self.stats.max_in_flight {
                    self.stats.max_in_flight = self.jobs.len() as u64;
                }
            }
            Event::SUBMIT => self.submit(key, ev, t),
            Event::QUEUE => {
                // The job went to the scheduler (JOBS.md §2: the sched phase).
                let s = Self::slot(&mut self.jobs, key, t, self.losses);
                if s.queued == NONE {
                    s.queued = t;
                }
            }
            Event::START => {
                let r = Self::ring_mut(&mut self.rings, key.ring, t);
                let s = Self::slot(&mut self.jobs, key, t, self.losses);
                // A START the kernel or an importer inferred (FORMAT.md §4.2) is taken as
                // one the joiner inferred (JOBS.md §2): flagged, and replaced by a recorded
                // one, but not by another inferred one nor by a START after a preemption.
                let inferred = flags & eflag::INFERRED != 0;
                if s.start == NONE
                    || (s.flags.has(Flags::INFERRED)
                        && !inferred
                        && s.preempt_at == NONE
                        && t <= s.end)
                {
                    if s.start == NONE {
                        s.switches_at_start = r.switches;
                        s.ring_prev = r.last_key;
                        s.ring_prev_end = r.last_end;
                        if s.submit != NONE {
                            s.queued_behind =
                                queue_blocker(&r.recent, s.submit, t, &mut self.stats.ops);
                        }
                    }
                    s.start = t;
                    if inferred {
                        s.flags.set(Flags::INFERRED);
                    } else {
                        s.flags.0 &= !Flags::INFERRED;
                    }
                    if s.end == NONE && !s.in_active {
                        s.in_active = true;
                        s.touch_ring = r.wide;
                        s.touch_ctx = *self.ctx_touch.entry((key.ring, key.ctx)).or_default();
                    }
                } else if s.preempt_at != NONE {
                    s.preempted = s.preempted.saturating_add(t.saturating_sub(s.preempt_at));
                    s.preempt_at = NONE;
                }
                if s.end == NONE && !s.running {
                    s.running = true;
                    let u = &mut r.util;
                    if !u.busy.running() && u.idle_since != NONE {
                        let waited = s.host_wait > 0 || (s.sync_open != NONE && s.sync_open_host);
                        let from = s.host_wait_from;
                        u.gap(&split_gap(
                            u.idle_since,
                            t,
                            s.commit,
                            s.submit,
                            waited,
                            from,
                        ));
                    }
                    u.busy.start(t);
                    self.ctx_util.entry(key.ctx).or_default().busy.start(t);
                }
                Self::learn_fence(&mut self.fences, s, key, ev.arg0());
                if s.in_pending {
                    // Started without a SUBMIT we saw: no queue time can be measured.
                    s.in_pending = false;
                    r.pending_remove(key.seqno, key.ctx);
                }
            }
            Event::END => self.end(key, ev, flags, t),
            Event::IRQ => self.irq(key, ev, t),
            Event::SIGNAL => {
                if let Some(s) = self.jobs.get_mut(&key) {
                    if s.signal == NONE {
                        s.signal = t;
                    }
                }
            }
            Event::SYNC_ENTER => {
                let s = Self::slot(&mut self.jobs, key, t, self.losses);
                if s.sync_open == NONE {
                    s.sync_open = t;
                    s.sync_open_host = flags & eflag::HOST != 0;
                    s.sync_fence = (ev.arg0(), ev.arg1());
                    if s.sync_open_host && s.host_wait_from == NONE {
                        s.host_wait_from = t;
                    }
                }
            }
            Event::SYNC_EXIT => {
                if let Some(s) = self.jobs.get_mut(&key) {
                    s.last_seen = t;
                    if s.sync_open != NONE {
                        let d = t.saturating_sub(s.sync_open);
                        s.close_sync(d);
                    }
                }
            }
            Event::CTX_SWITCH => {
                let r = Self::ring_mut(&mut self.rings, key.ring, t);
                r.switches += 1;
                if flags & eflag::PREEMPT != 0 {
                    let prev = ev.arg0() as u32;
                    self.ctx_touch.entry((key.ring, prev)).or_default().preempts += 1;
                }
            }
            Event::VM_FAULT | Event::VM_RETRY => {
                let r = Self::ring_mut(&mut self.rings, key.ring, t);
                let fault = code == Event::VM_FAULT;
                if fault {
                    r.faults += 1;
                }
                // ctx 0: the fault is the ring's (every running job); else one context's.
                if key.ctx == 0 {
                    r.wide.fault(fault, t);
                } else {
                    let c = self.ctx_touch.entry((key.ring, key.ctx)).or_default();
                    c.fault(fault, t);
                }
            }
            Event::STALL => {
                Self::ring_mut(&mut self.rings, key.ring, t).stalls += 1;
            }
            Event::TIMEOUT | Event::HANG => {
                if let Some(s) = self.jobs.get_mut(&key) {
                    s.flags.set(Flags::ERROR);
                }
            }
            Event::RESET => {
                let r = Self::ring_mut(&mut self.rings, key.ring, t);
                r.resets += 1;
                r.wide.resets += 1;
            }
            _ => {}
        }
    }

    /// The job's own fence, from the fence context its START or END names (arg0), learnt
    /// where the job's slot is at hand anyway: no lookup of its own.
    #[inline]
    fn learn_fence(fences: &mut FxMap<(u64, u64), JobKey>, s: &mut Slot, key: JobKey, fctx: u64) {
        if fctx != 0 && s.fence == (0, 0) {
            s.fence = (fctx, key.seqno);
            fences.insert(s.fence, key);
        }
    }

    /// The job owning `fence` (open, or finished and remembered) as the blocker of a job
    /// that waited `lost` ns for it, with the chain behind it. `hops` bounds the walk
    /// through open owners (a cycle in a damaged trace must not loop).
    fn resolve(&self, fence: (u64, u64), lost: u64, hops: u32) -> Blocker {
        let mut b = Blocker {
            kind: BlockKind::Dep,
            fence,
            lost,
            ..Blocker::default()
        };
        if let Some(o) = self
            .fences
            .get(&fence)
            .and_then(|k| Some((*k, self.jobs.get(k)?)))
        {
            let (k, s) = o;
            b.owned = true;
            b.key = k;
            b.queue = span(s.submit, s.start);
            b.exec = span(s.start, s.end);
            let behind = if s.dep_seen && hops < 8 {
                self.resolve(s.dep_fence, s.dep_lost, hops + 1)
            } else {
                Blocker::default()
            };
            (b.depth, b.root) = if behind.owned {
                (1 + behind.depth, behind.root)
            } else {
                (1, k)
            };
        } else if let Some(d) = self.done.get(&fence) {
            b.owned = true;
            b.key = d.key;
            b.queue = d.queue;
            b.exec = d.exec;
            b.depth = 1 + d.depth;
            b.root = d.root;
        }
        b
    }

    /// Keeps a finished job's fence for the waiters that finish after it.
    fn remember(
        done: &mut FxMap<(u64, u64), Done>,
        done_order: &mut VecDeque<(u64, u64)>,
        fence: (u64, u64),
        key: JobKey,
        s: &Slot,
        dep: &Blocker,
    ) {
        let (depth, root) = if dep.owned {
            (dep.depth, dep.root)
        } else {
            (0, key)
        };
        let d = Done {
            key,
            queue: span(s.submit, s.start),
            exec: span(s.start, s.end),
            depth,
            root,
        };
        if done.insert(fence, d).is_none() {
            done_order.push_back(fence);
        }
        while done_order.len() > DONE_FENCES {
            if let Some(f) = done_order.pop_front() {
                done.remove(&f);
            }
        }
    }

    /// SUBMIT makes every committed job on the ring up to `seqno` visible at once (on a
    /// CTX_SEQNO ring, every committed job of its context).
    fn submit(&mut self, key: JobKey, ev: &NativeEvent<'_>, t: u64) {
        let r = Self::ring_mut(&mut self.rings, key.ring, t);
        self.scratch.clear();
        // Everything committed up to the doorbell's seqno, wherever it sits in commit order:
        // two submitters may commit out of seqno order by a few ns on different CPUs.
        let visited = r.pending_take(key.ctx, key.seqno, &mut self.scratch);
        self.stats.ops += visited + 1;
        // Jobs the GPU already finished before this doorbell: it made them visible too.
        let mut early = 0;
        let mut named = self.scratch.iter().any(|k| k.seqno == key.seqno);
        if !r.taken_early.is_empty() {
            let own_ctx = r.ctx_seqno();
            for range in seq_le_ranges(key.seqno) {
                let taken: Vec<(u64, u32)> = (r.taken_early)
                    .range((range.0, 0)..=(range.1, u32::MAX))
                    .filter(|e| !own_ctx || e.1 == key.ctx)
                    .copied()
                    .collect();
                self.stats.ops += taken.len() as u64;
                for k in taken {
                    r.taken_early.remove(&k);
                    named |= k.0 == key.seqno;
                    early += 1;
                }
            }
        }
        // arg3 counts the jobs this doorbell made visible. Only when that is more than the
        // COMMITs seen pending (or already taken) was a COMMIT missed (trace started later,
        // or lost). An empty doorbell (0), a racing submitter ringing for jobs another CPU
        // already rang for, names the ring's write pointer, not a job.
        let unseen = ev.arg3() as usize > self.scratch.len() + early;
        if !named && unseen && !self.jobs.contains_key(&key) {
            self.jobs.entry(key, || Slot::new(t));
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
        r.util.outstanding(out, t);
        if r.size > 0 {
            let f = (fill as f64 / r.size as f64) as f32;
            r.util.fill_max_iv = r.util.fill_max_iv.max(f);
        }
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

    fn end(&mut self, key: JobKey, ev: &NativeEvent<'_>, flags: u16, t: u64) {
        let r = Self::ring_mut(&mut self.rings, key.ring, t);
        let s = Self::slot(&mut self.jobs, key, t, self.losses);
        Self::learn_fence(&mut self.fences, s, key, ev.arg0());
        if flags & eflag::PREEMPT != 0 {
            // Taken off the GPU, not finished: it will START again.
            s.preempts_end += 1;
            s.preempt_at = t;
            stop_running(r, &mut self.ctx_util, s, key.ctx, t, self.iv_start);
            return;
        }
        if s.end != NONE {
            return;
        }
        stop_running(r, &mut self.ctx_util, s, key.ctx, t, self.iv_start);
        r.util.ended += 1;
        r.util.ended_iv += 1;
        self.ctx_util.entry(key.ctx).or_default().ended += 1;
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
            // `+=`: a job that moved rings (JOBS.md §1) brought the switches seen before.
            s.switches += r.switches.saturating_sub(s.switches_at_start) as u32;
        }
        r.last_end = t;
        r.last_key = key;
        if r.recent.len() == RECENT {
            r.recent.pop_front();
        }
        r.recent.push_back(Ran {
            key,
            submit: s.submit,
            start: s.start,
            end: t,
        });
        if s.in_active {
            let c = self.ctx_touch.get(&(key.ring, key.ctx)).copied();
            s.settle(&r.wide, &c.unwrap_or_default(), t);
        }
        if s.counted {
            s.counted = false;
            r.outstanding = r.outstanding.saturating_sub(1);
            r.util.outstanding(r.outstanding, t);
        }
        if s.preempt_at != NONE {
            s.preempted = s.preempted.saturating_add(t.saturating_sub(s.preempt_at));
            s.preempt_at = NONE;
        }
        if s.irq != NONE {
            self.finish(key);
        } else {
            s.in_awaiting = true;
            self.awaiting.push_back((t, key));
            self.irq_wait.entry((key.ring, key.seqno)).or_insert(key);
        }
    }

    fn irq(&mut self, key: JobKey, ev: &NativeEvent<'_>, t: u64) {
        let mut seqno = key.seqno;
        if seqno == 0 {
            seqno = ev.arg0();
        }
        // Seqno 0 usually means "no job named", but a 32-bit seqno that wrapped through 0
        // names a real job 0: only an IRQ that no ended job 0 on the ring can take is unnamed.
        if seqno == 0 && !self.irq_wait.contains_key(&(key.ring, 0)) {
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
        let found = (self.irq_wait.get(&(key.ring, seqno)))
            .filter(|k| key.ctx == 0 || k.ctx == key.ctx)
            .copied();
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
        let Some(i) = self.jobs.take(&key) else {
            return;
        };
        let s = &mut self.jobs.v[i];
        if s.in_awaiting {
            // Its entry in `awaiting` is skipped when met; the index must not name it.
            if self.irq_wait.get(&(key.ring, key.seqno)) == Some(&key) {
                self.irq_wait.remove(&(key.ring, key.seqno));
            }
        }
        if s.born_loss != self.losses {
            s.flags.set(Flags::LOST | Flags::INCOMPLETE);
        }
        let submits_recorded = self.stats.seen_codes & code_bit(Event::SUBMIT) != 0;
        // Before the stream's first SUBMIT it is undecided whether it records them: the job
        // is held (`hold_or_out`) and called no-doorbell there if SUBMITs turn up.
        let submits_maybe = submits_recorded || self.absent_codes & code_bit(Event::SUBMIT) == 0;
        if let Some(r) = self.rings.get_mut(&key.ring) {
            if s.in_pending {
                r.pending_remove(key.seqno, key.ctx);
            }
            if s.submit == NONE && s.commit != NONE && s.end != NONE && submits_maybe {
                // Committed and ended with no doorbell yet: the GPU took it from the ring
                // (visible since COMMIT). A doorbell that comes later covers it.
                if submits_recorded {
                    s.submit = s.commit;
                    s.flags.set(Flags::NO_DOORBELL);
                }
                r.taken_early.insert((key.seqno, key.ctx));
                if r.taken_early.len() > TAKEN_EARLY {
                    r.taken_early.pop_first();
                }
            }
            if s.in_active {
                let c = self.ctx_touch.get(&(key.ring, key.ctx)).copied();
                s.settle(&r.wide, &c.unwrap_or_default(), self.now);
            }
            if s.counted {
                r.outstanding = r.outstanding.saturating_sub(1);
                r.util.outstanding(r.outstanding, self.now);
            }
            stop_running(r, &mut self.ctx_util, s, key.ctx, self.now, self.iv_start);
            r.util.gpu_wait += s.gpu_wait.saturating_sub(s.host_wait);
        }
        let ring_size = self.rings.get(&key.ring).map_or(0, |r| r.size);
        if s.sync_open != NONE {
            // A dependency wait that never closed: count it up to the job's end, if known.
            let stop = if s.end != NONE { s.end } else { s.last_seen };
            s.close_sync(stop.saturating_sub(s.sync_open));
        }
        if s.fence != (0, 0) && self.fences.get(&s.fence) == Some(&key) {
            self.fences.remove(&s.fence);
        }
        let s = &self.jobs.v[i];
        let dep = if s.dep_seen {
            Blocker {
                until: s.dep_until,
                ..self.resolve(s.dep_fence, s.dep_lost, 0)
            }
        } else {
            Blocker::default()
        };
        if s.fence != (0, 0) {
            Self::remember(&mut self.done, &mut self.done_order, s.fence, key, s, &dep);
        }
        let mut f = s.flags;
        // A job misses COMMIT or SUBMIT only if the recording has that event at all (a
        // filtered recording gives complete jobs with unmeasured phases): decided in
        // `hold_or_out`, from the whole stream.
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
        let known = |a: u64, b: u64| a != NONE && b != NONE;
        let measured = [
            known(s.commit, s.submit),
            known(s.submit, s.start),
            known(s.start, s.end),
            s.end != NONE && (s.irq != NONE || s.signal != NONE),
            true,
            true,
            known(s.commit, done),
        ]
        .iter()
        .enumerate()
        .fold(0u8, |m, (i, &k)| m | (u8::from(k) << i));
        let phases = Phases {
            submit_host: d(s.commit, s.submit),
            queue: d(s.submit, s.start),
            exec: d(s.start, s.end),
            complete: d(s.end, done),
            gpu_wait: s.gpu_wait,
            vm_fault: s.vm_fault,
            total: d(s.commit, done),
        };
        let sched = sched_wait(s);
        let fill = if ring_size > 0 && s.fill_units != u32::MAX {
            (s.fill_units as f64 / ring_size as f64) as f32
        } else {
            f32::NAN
        };
        self.stats.jobs += 1;
        // Built in place in `out` (a Job is a few hundred bytes: no extra move on the
        // common path), then flagged, or moved to `held` if undecided.
        self.out.push(Job {
            key,
            pid: s.pid,
            queued: s.queued,
            sched,
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
            measured,
            dep,
            queued_behind: s.queued_behind,
            ring_prev: s.ring_prev,
            ring_prev_end: s.ring_prev_end,
        });
        self.jobs.release(i);
        let last = self.out.last().expect("just pushed");
        if self.undecided(last) == 0 {
            let recorded = self.stats.seen_codes;
            if let Some(j) = self.out.last_mut() {
                Self::flag_missing(j, recorded);
            }
        } else if let Some(j) = self.out.pop() {
            self.hold_or_out(j);
        }
    }

    /// Flags the COMMIT / SUBMIT a job lacks that the stream records (`recorded`: codes).
    fn flag_missing(j: &mut Job, recorded: u64) {
        if j.commit == NONE && recorded & code_bit(Event::COMMIT) != 0 {
            j.flags.set(Flags::NO_COMMIT | Flags::INCOMPLETE);
        }
        if j.submit == NONE && recorded & code_bit(Event::SUBMIT) != 0 {
            if j.commit != NONE && j.end != NONE {
                // Held until the stream showed SUBMITs: the same no-doorbell job `finish`
                // makes of one that ends after the first SUBMIT (JOBS.md §2).
                Self::took_before_doorbell(j);
            } else {
                j.flags.set(Flags::NO_SUBMIT | Flags::INCOMPLETE);
            }
        }
    }

    /// A finished job the GPU took from the ring before its doorbell: visible since COMMIT,
    /// which is taken as its SUBMIT (submit_host 0, queue from COMMIT), flag `no-doorbell`.
    fn took_before_doorbell(j: &mut Job) {
        j.submit = j.commit;
        j.flags.set(Flags::NO_DOORBELL);
        j.phases.submit_host = 0;
        j.measured |= 1 << 0;
        if j.start != NONE {
            j.phases.queue = j.start.saturating_sub(j.commit);
            j.measured |= 1 << 1;
        }
    }

    /// The host events a finished job lacks whose code is still undecided: neither seen in
    /// the stream yet nor taken as absent.
    fn undecided(&self, j: &Job) -> u64 {
        let mut missing = 0;
        if j.commit == NONE {
            missing |= code_bit(Event::COMMIT);
        }
        if j.submit == NONE {
            missing |= code_bit(Event::SUBMIT);
        }
        missing & !(self.stats.seen_codes | self.absent_codes)
    }

    /// Flags a finished job for the COMMIT / SUBMIT the stream records but the job lacks,
    /// then hands it out; a job that lacks one the stream has not shown yet is held (a job
    /// that ended before the recording's first COMMIT is not called no-end or complete
    /// on the strength of the events seen so far).
    fn hold_or_out(&mut self, mut j: Job) {
        if self.undecided(&j) != 0 {
            self.held.push_back(j);
            if self.held.len() > HELD {
                // So many jobs and not one such event: the recording filters it out.
                self.absent_codes |= self.held.iter().fold(0, |m, j| m | self.undecided(j));
                self.release_held(false);
            }
            return;
        }
        Self::flag_missing(&mut j, self.stats.seen_codes);
        self.out.push(j);
    }

    /// Hands out the held jobs that are decided now (`end`: all of them, the stream is over
    /// and the codes never seen were not recorded), in the order they finished.
    fn release_held(&mut self, end: bool) {
        if end {
            self.absent_codes |= !self.stats.seen_codes;
        }
        for _ in 0..self.held.len() {
            let Some(j) = self.held.pop_front() else {
                break;
            };
            self.hold_or_out(j);
        }
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
        self.release_held(true);
        if self.iv_ns > 0 && self.iv_start != NONE {
            let last = self.stats.last_ns;
            self.close_intervals(last, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-order queue plus the ordered set must take exactly the pending jobs a scan of
    /// all of them by [`covered`] (the ranges the ordered set alone was searched by) takes, for doorbells anywhere (behind, inside, far ahead, other width)
    /// and seqnos that wrap or arrive out of order.
    #[test]
    fn pending_takes_what_a_full_scan_takes() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let bases = [
            0u64,
            1000,
            u32::MAX as u64 - 20,
            (1 << 31) - 5,
            u64::MAX - 20,
        ];
        for round in 0..400 {
            let base = bases[round % bases.len()];
            let mut p = Pending::default();
            let mut all: Vec<(u64, u32)> = Vec::new();
            let mut next = base;
            for _ in 0..200 {
                if rnd() % 3 != 0 {
                    // Mostly in order (wrapping in the seqno's width), sometimes a step back
                    // or a jump of half the space.
                    let step = match rnd() % 10 {
                        0 => 0u64.wrapping_sub(rnd() % 4),
                        1 => half_space(next) - 2 + rnd() % 4,
                        _ => 1 + rnd() % 3,
                    };
                    next = if next <= u32::MAX as u64 && round % 5 != 4 {
                        (next as u32).wrapping_add(step as u32) as u64
                    } else {
                        next.wrapping_add(step)
                    };
                    let k = (next, (rnd() % 3) as u32);
                    if !all.contains(&k) {
                        p.insert(k.0, k.1);
                        all.push(k);
                    }
                } else {
                    let b = match rnd() % 4 {
                        0 => next,
                        1 => next.wrapping_sub(rnd() % 8),
                        2 => rnd(),
                        _ => rnd() & u32::MAX as u64,
                    };
                    let mut got = Vec::new();
                    p.take_up_to(b, 7, &mut got);
                    let mut got: Vec<(u64, u32)> = got.iter().map(|k| (k.seqno, k.ctx)).collect();
                    let mut want: Vec<(u64, u32)> =
                        all.iter().copied().filter(|e| covered(e.0, b)).collect();
                    all.retain(|e| !covered(e.0, b));
                    got.sort_unstable();
                    want.sort_unstable();
                    assert_eq!(got, want, "round {round} doorbell {b}");
                }
                if rnd() % 7 == 0 && !all.is_empty() {
                    let i = (rnd() % all.len() as u64) as usize;
                    let k = all.swap_remove(i);
                    p.remove(k.0, k.1);
                }
            }
            let mut left: Vec<(u64, u32)> = p.order.iter().chain(p.rest.iter()).copied().collect();
            left.sort_unstable();
            all.sort_unstable();
            assert_eq!(left, all, "round {round}");
        }
    }
}
