//! The critical path (`--critical-path`): for a window (`-w`) or a frame between two user
//! markers (NOTE_MSG), the chain of jobs and host gaps that decided when its last job ended,
//! each link with its share of the time. JOBS.md §7 gives the rules.
//!
//! Walking back from the last job to end, each job's link starts where the constraint that
//! let it finish last was met: its SUBMIT (the host was late: a host link back to the frame
//! start follows), the END of the job ahead on its ring (it queued: that job is next), or the
//! end of its dependency wait (the fence's owner is next; a fence no recorded job owns ends the
//! walk). The links partition the frame: their shares add up to 100 %.
//!
//! Memory: a small node per job whose END is neither older than the oldest open frame's
//! start nor more than [`WINDOW_NS`] behind the newest END on its ring (the window, like the
//! joiner's horizon for open jobs), at most [`MAX_NODES`]; a frame is closed (its path
//! computed, its nodes dropped) once the engine's watermark says no job of it is still to
//! come. A walk that needs a job the window dropped stops there, and the path says it was
//! cut ([`Via::Cut`]): only frames longer than the window can be cut.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::job::{Job, JobKey, Origin, NONE};
use crate::joiner::FxMap;

/// Jobs kept for the walk at most, the cap on damaged or hostile input (more than this many
/// jobs ending within the window): frames from then on get no path, and the report says so.
pub const MAX_NODES: usize = 1 << 20;

/// Jobs ending more than this before the newest END on their ring are dropped (ns): a path
/// reaches further back only in a frame longer than it, and is then cut.
pub const WINDOW_NS: u64 = 10_000_000_000;

/// What the path covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `-w`: [start, end] in ns since the first record (jobs that begin in it).
    Window(u64, u64),
    /// Frames between NOTE_MSG markers whose text starts with the prefix ("" = every
    /// message); the whole trace is one frame if there is none.
    Frames(String),
}

/// Why a link's job could not finish earlier (the constraint met last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The host submitted it late: the link before it is a host gap.
    Host,
    /// It queued behind the job before it on its ring (the previous link).
    Ring,
    /// It waited for a fence that the previous link's job owns.
    Dep,
    /// It waited for a fence no recorded job owns (CPU-side, foreign): the walk ends.
    Fence,
    /// It was ready before the frame began: the walk ends at the frame start.
    Start,
    /// A gap link: the job the walk needed had ended more than the window before the newest
    /// END on its ring and was no longer kept; the path is cut there.
    Cut,
}

impl Via {
    pub fn name(self) -> &'static str {
        match self {
            Via::Host => "host",
            Via::Ring => "ring",
            Via::Dep => "dep",
            Via::Fence => "fence",
            Via::Start => "start",
            Via::Cut => "cut",
        }
    }
}

/// One link of a critical path: a job, or a host gap (`job` is None) before a host-bound
/// job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub job: Option<JobKey>,
    /// Job links: what it waited for last (see [`Via`]). Host gaps: [`Via::Host`].
    pub via: Via,
    /// The part of the frame the link accounts for, absolute ns.
    pub from: u64,
    pub to: u64,
    /// Via::Fence and Via::Dep: the awaited fence (context, seqno).
    pub fence: (u64, u64),
    /// Job links: its own execution (END - START) and queue (START - SUBMIT), ns (NONE if
    /// not recorded).
    pub exec: u64,
    pub queue: u64,
}

impl Link {
    pub fn ns(&self) -> u64 {
        // Saturating: damaged times can put a link's end before its start.
        self.to.saturating_sub(self.from)
    }
}

/// The critical path of one frame or window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FramePath {
    /// Frame start (the marker, or the window start) and the END of its last job, absolute.
    pub start: u64,
    pub end: u64,
    /// The marker's text (frames), empty for a window or a trace without markers.
    pub marker: String,
    /// Jobs that began in the frame.
    pub jobs: u64,
    /// Links in time order; they cover [start, end] without gaps or overlaps.
    pub links: Vec<Link>,
    /// The walk needed a job the window had dropped: the first link is a [`Via::Cut`] gap.
    pub cut: bool,
}

impl FramePath {
    /// From the frame start to its last END, ns.
    pub fn length(&self) -> u64 {
        // Saturating: a damaged END can come before the frame's start.
        self.end.saturating_sub(self.start)
    }
    /// A link's share of the frame (0..1).
    pub fn share(&self, l: &Link) -> f64 {
        if self.length() == 0 {
            0.0
        } else {
            l.ns() as f64 / self.length() as f64
        }
    }
}

/// What the report shows: the window's path, or the slowest frame's and every frame's
/// length.
#[derive(Clone, Debug, Default)]
pub struct CritReport {
    pub window: bool,
    /// Frames with at least one job (1 for a window).
    pub frames: u64,
    /// Frame lengths (start to last END), ns, sorted.
    pub lengths: Vec<u64>,
    /// The window's path, or the slowest frame's.
    pub slowest: Option<FramePath>,
    /// Set when more than [`MAX_NODES`] jobs had to be kept: frames from then on got no path.
    pub overflow: bool,
    /// The window behind each ring's newest END (ns) and the frames whose path it cut.
    pub window_ns: u64,
    pub cut_frames: u64,
}

/// A job as the walk needs it.
#[derive(Clone, Copy, Debug)]
struct Node {
    submit: u64,
    /// When the host was done with it: its QUEUE to the scheduler when that came before the
    /// hand-off (a drm_sched job: what follows is the scheduler's), else `submit`.
    host: u64,
    start: u64,
    end: u64,
    ring_prev: JobKey,
    ring_prev_end: u64,
    /// The longest dependency wait: until when, on which fence, its owner (if recorded) and
    /// whether the host waited (before the GPU had the job).
    dep_until: u64,
    dep_fence: (u64, u64),
    dep_owner: Option<JobKey>,
    dep_host: bool,
}

impl Node {
    fn of(j: &Job) -> Node {
        let d = &j.dep;
        let submit = [j.submit, j.commit, j.start]
            .into_iter()
            .find(|&t| t != NONE)
            .unwrap_or(NONE);
        let host = if j.queued != NONE && (submit == NONE || j.queued <= submit) {
            j.queued
        } else {
            submit
        };
        Node {
            submit,
            host,
            start: j.start,
            end: j.end,
            ring_prev: j.ring_prev,
            ring_prev_end: j.ring_prev_end,
            dep_until: if d.is_some() { d.until } else { NONE },
            dep_fence: d.fence,
            dep_owner: d.owned.then_some(d.key),
            dep_host: j.host_wait > 0,
        }
    }
}

/// The kept jobs: nodes in a slab whose freed slots are reused, found through a small index.
/// With jobs coming and going all the time, a hash table grows to several times the jobs it
/// holds (deleted slots): keeping the index to 4-byte slots keeps that small.
#[derive(Default)]
struct Nodes {
    index: FxMap<JobKey, u32>,
    slab: Vec<Node>,
    free: Vec<u32>,
}

impl Nodes {
    fn len(&self) -> usize {
        self.index.len()
    }

    fn get(&self, k: &JobKey) -> Option<&Node> {
        self.index.get(k).map(|&i| &self.slab[i as usize])
    }

    fn contains_key(&self, k: &JobKey) -> bool {
        self.index.contains_key(k)
    }

    fn insert(&mut self, k: JobKey, n: Node) {
        if let Some(&i) = self.index.get(&k) {
            self.slab[i as usize] = n;
            return;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = n;
                i
            }
            None => {
                self.slab.push(n);
                (self.slab.len() - 1) as u32
            }
        };
        self.index.insert(k, i);
    }

    fn remove(&mut self, k: &JobKey) {
        if let Some(i) = self.index.remove(k) {
            self.free.push(i);
        }
    }

    fn retain(&mut self, keep: impl Fn(&Node) -> bool) {
        let (slab, free) = (&self.slab, &mut self.free);
        self.index.retain(|_, i| {
            let kept = keep(&slab[*i as usize]);
            if !kept {
                free.push(*i);
            }
            kept
        });
        if self.index.is_empty() {
            self.slab.clear();
            self.free.clear();
        }
    }
}

/// A frame still collecting its jobs.
#[derive(Clone, Debug)]
struct Open {
    start: u64,
    /// The next frame's start (NONE while this is the last): jobs that begin before it.
    until: u64,
    marker: String,
    jobs: u64,
    /// Its last job so far: END and key.
    last: Option<(u64, JobKey)>,
}

/// The jobs kept on one ring, oldest END first, and its newest END.
#[derive(Default)]
struct RingWindow {
    newest: u64,
    ends: BinaryHeap<Reverse<(u64, JobKey)>>,
}

/// Collects finished jobs and markers; closes frames as the watermark passes them.
pub struct CriticalPath {
    scope: Scope,
    open: VecDeque<Open>,
    /// Markers seen (frames scope); before the first, jobs belong to an implicit frame
    /// that covers the trace.
    markers: u64,
    /// The first record was seen ([`CriticalPath::start_at`]).
    started: bool,
    nodes: Nodes,
    /// The window, by ring (a ring with no kept job has no entry).
    rings: FxMap<u32, RingWindow>,
    /// The newest END the window dropped, if any.
    dropped_until: Option<u64>,
    /// Entries in the rings' heaps (a job seen twice under one key has two).
    entries: usize,
    peak: usize,
    report: CritReport,
    /// Every frame's path, when a test asks ([`CriticalPath::keep_all`]).
    all: Option<Vec<FramePath>>,
    /// Units of work (walk steps, node visits when pruning), for the linear-cost test.
    pub ops: u64,
}

impl CriticalPath {
    pub fn new(scope: Scope) -> CriticalPath {
        let window = matches!(scope, Scope::Window(..));
        CriticalPath {
            scope,
            open: VecDeque::new(),
            markers: 0,
            started: false,
            nodes: Nodes::default(),
            rings: FxMap::default(),
            dropped_until: None,
            entries: 0,
            peak: 0,
            report: CritReport {
                window,
                window_ns: WINDOW_NS,
                ..CritReport::default()
            },
            all: None,
            ops: 0,
        }
    }

    /// Another window than [`WINDOW_NS`] (ns; tests, and a recording whose frames are
    /// longer).
    pub fn with_window(mut self, ns: u64) -> CriticalPath {
        self.report.window_ns = ns;
        self
    }

    /// The most jobs kept for the walks at once (memory: one small node each).
    pub fn peak_kept(&self) -> usize {
        self.peak
    }

    /// Keeps every frame's path (tests).
    pub fn keep_all(&mut self) {
        self.all = Some(Vec::new());
    }

    pub fn take_all(&mut self) -> Vec<FramePath> {
        self.all.take().unwrap_or_default()
    }

    /// The trace's first record time (call it before anything else): the window counts
    /// from there, and the implicit frame of a trace without markers starts there.
    pub fn start_at(&mut self, origin: Origin) {
        if self.started || !origin.is_known() {
            return;
        }
        self.started = true;
        let (start, until) = match self.scope {
            Scope::Window(a, b) => (origin.after(a), origin.after(b).saturating_add(1)),
            Scope::Frames(_) => (origin.after(0), NONE),
        };
        self.open.push_back(Open {
            start,
            until,
            marker: String::new(),
            jobs: 0,
            last: None,
        });
    }

    /// A NOTE_MSG at `t`: starts a frame if its text is a marker.
    pub fn message(&mut self, t: u64, text: &[u8]) {
        let Scope::Frames(prefix) = &self.scope else {
            return;
        };
        if !text.starts_with(prefix.as_bytes()) {
            return;
        }
        let marker = String::from_utf8_lossy(&text[..text.len().min(64)])
            .trim_end_matches(['\0', '\n'])
            .to_string();
        if self.markers == 0 {
            // Jobs before the first marker belong to no frame (it began before the trace).
            self.open.clear();
        }
        self.markers += 1;
        if let Some(prev) = self.open.back_mut() {
            prev.until = t;
        }
        self.open.push_back(Open {
            start: t,
            until: NONE,
            marker,
            jobs: 0,
            last: None,
        });
    }

    /// A finished job (any filter aside: the path is the GPU's, not a selection's).
    pub fn job(&mut self, j: &Job) {
        if j.end == NONE || j.start == NONE {
            return;
        }
        let Some(oldest) = self.open.front().map(|f| f.start) else {
            return;
        };
        if j.end < oldest {
            return;
        }
        if self.nodes.len() >= MAX_NODES || self.entries >= 2 * MAX_NODES {
            self.report.overflow = true;
            return;
        }
        self.nodes.insert(j.key, Node::of(j));
        self.peak = self.peak.max(self.nodes.len());
        self.slide(j.key, j.end);
        let t = j.first_time();
        // The frame the job began in (frames are few and in time order: scan from the back).
        if let Some(f) = self
            .open
            .iter_mut()
            .rev()
            .find(|f| f.start <= t && t < f.until)
        {
            f.jobs += 1;
            if f.last.is_none_or(|(e, k)| (j.end, j.key) > (e, k)) {
                f.last = Some((j.end, j.key));
            }
        }
    }

    /// A job kept on its ring: the ring's jobs that ended more than the window before its
    /// newest END are dropped (each job is pushed and popped once: O(log n) a job).
    fn slide(&mut self, key: JobKey, end: u64) {
        let w = self.rings.entry(key.ring).or_default();
        w.newest = w.newest.max(end);
        w.ends.push(Reverse((end, key)));
        self.entries += 1;
        let limit = w.newest.saturating_sub(self.report.window_ns);
        while let Some(&Reverse((e, k))) = w.ends.peek() {
            if e >= limit {
                break;
            }
            w.ends.pop();
            self.entries -= 1;
            // Gone already when its frame closed (or replaced by a job of the same key).
            if self.nodes.get(&k).is_some_and(|n| n.end == e) {
                self.nodes.remove(&k);
                self.dropped_until = Some(self.dropped_until.map_or(e, |d| d.max(e)));
            }
        }
    }

    /// Whether a job the walk of a frame starting at `s` needed, missing, may have been
    /// dropped by the window: it ended after `s` (`hint`, when its end is not known
    /// exactly: the time its wait ended) and the window dropped jobs ending after `s`.
    fn cut_at(&self, s: u64, hint: u64) -> bool {
        hint != NONE && hint > s && self.dropped_until.is_some_and(|d| d > s)
    }

    /// No job handed over from now on began before `watermark`: frames that end before it
    /// are complete.
    pub fn advance(&mut self, watermark: u64) {
        while self
            .open
            .front()
            .is_some_and(|f| f.until != NONE && f.until <= watermark)
        {
            let f = self.open.pop_front().expect("front");
            self.close(f);
        }
    }

    /// End of input: closes every frame.
    pub fn finish(&mut self) -> &CritReport {
        while let Some(f) = self.open.pop_front() {
            self.close(f);
        }
        self.report.lengths.sort_unstable();
        &self.report
    }

    pub fn report(&self) -> &CritReport {
        &self.report
    }

    fn close(&mut self, f: Open) {
        if let Some((end, last)) = f.last {
            if !self.report.overflow {
                let p = self.walk(&f, end, last);
                self.report.frames += 1;
                self.report.lengths.push(p.length());
                if let Some(all) = &mut self.all {
                    all.push(p.clone());
                }
                self.report.cut_frames += p.cut as u64;
                if self
                    .report
                    .slowest
                    .as_ref()
                    .is_none_or(|s| p.length() > s.length())
                {
                    self.report.slowest = Some(p);
                }
            }
        }
        // Nodes the next frame's walk can still reach end after its start.
        let keep_from = self.open.front().map_or(NONE, |n| n.start);
        self.ops += self.nodes.len() as u64;
        self.nodes.retain(|n| n.end >= keep_from);
        if keep_from != NONE {
            for w in self.rings.values_mut() {
                w.ends.retain(|&Reverse((e, _))| e >= keep_from);
            }
            self.rings.retain(|_, w| !w.ends.is_empty());
        } else {
            self.rings.clear();
        }
        self.entries = self.rings.values().map(|w| w.ends.len()).sum();
    }

    /// The chain behind `last` (ending at `end`), back to the frame start.
    fn walk(&mut self, f: &Open, end: u64, last: JobKey) -> FramePath {
        let s = f.start;
        let mut links = Vec::new();
        let mut cur = Some(last);
        let mut hi = end;
        let mut cut = false;
        // Every step goes strictly back in time (or stops): at most one link per node.
        while let Some(k) = cur.take() {
            self.ops += 1;
            let Some(n) = self.nodes.get(&k).copied() else {
                // Only the last job can be missing here (the others were looked up before
                // the step): the window dropped it before its frame closed.
                cut = links.is_empty();
                break;
            };
            let job = |via, from: u64, fence| Link {
                job: Some(k),
                via,
                from,
                to: hi,
                fence,
                exec: n.end.saturating_sub(n.start),
                queue: if n.submit == NONE {
                    NONE
                } else {
                    n.start.saturating_sub(n.submit)
                },
            };
            // The constraints and when each was met; the latest one decided. Ties go to
            // dependency, then ring, then host: a job submitted as its blocker ended
            // waited for the blocker.
            let host = n.host;
            let ring =
                (n.ring_prev_end != NONE && n.ring_prev_end <= n.start).then_some(n.ring_prev_end);
            let dep = (n.dep_until != NONE).then_some(n.dep_until);
            let mut via = Via::Host;
            let mut at = host;
            if let Some(r) = ring {
                if at == NONE || r >= at {
                    (via, at) = (Via::Ring, r);
                }
            }
            if let Some(d) = dep {
                if at == NONE || d >= at {
                    via = if n.dep_owner.is_some() {
                        Via::Dep
                    } else {
                        Via::Fence
                    };
                    at = d;
                }
            }
            if at == NONE || at <= s {
                links.push(job(Via::Start, s, (0, 0)));
                break;
            }
            // Where the link begins: the end of the job it waited for (the signal's latency
            // counts in this link), or the time the constraint was met.
            let prev = match via {
                Via::Ring => Some(n.ring_prev),
                Via::Dep => n.dep_owner,
                _ => None,
            };
            let prev_end = prev
                .and_then(|p| self.nodes.get(&p))
                .map(|p| p.end)
                .filter(|&e| e < hi);
            let dropped = prev.is_some_and(|p| !self.nodes.contains_key(&p));
            match (via, prev_end) {
                (Via::Ring | Via::Dep, Some(pe)) if pe > s => {
                    links.push(job(via, pe.min(at), n.dep_fence));
                    hi = pe.min(at);
                    cur = prev;
                }
                (Via::Ring | Via::Dep, None) if dropped && self.cut_at(s, at) => {
                    // Its blocker ended in the frame but is no longer kept: the link runs
                    // from when the wait ended, and the path is cut before it.
                    links.push(job(via, at.min(hi), n.dep_fence));
                    cut = true;
                }
                (Via::Ring | Via::Dep, _) => {
                    // Its blocker ended before the frame (or was not kept): the frame began
                    // with this job waiting.
                    links.push(job(Via::Start, s, n.dep_fence));
                }
                (Via::Fence, _) => {
                    links.push(job(Via::Fence, s, n.dep_fence));
                }
                _ => {
                    // Host-bound. A host that waited on a recorded job's fence before
                    // submitting was blocked by that job: the gap runs from its END.
                    let owner_end = n
                        .dep_owner
                        .filter(|_| n.dep_host)
                        .and_then(|o| Some((o, self.nodes.get(&o)?.end)))
                        .filter(|&(_, e)| e > s && e < at);
                    links.push(job(Via::Host, at, (0, 0)));
                    let owner_dropped = n.dep_host
                        && n.dep_owner.is_some_and(|o| !self.nodes.contains_key(&o))
                        && n.dep_until < at
                        && self.cut_at(s, n.dep_until);
                    if owner_end.is_none() && owner_dropped {
                        // The host waited on a job no longer kept: cut before the submit.
                        cut = true;
                        break;
                    }
                    let from = owner_end.map_or(s, |(_, e)| e);
                    links.push(Link {
                        job: None,
                        via: Via::Host,
                        from,
                        to: at,
                        fence: n.dep_fence,
                        exec: NONE,
                        queue: NONE,
                    });
                    hi = from;
                    cur = owner_end.map(|(o, _)| o);
                }
            }
        }
        let edge = links.last().map_or(end, |l| l.from);
        if edge > s && (cut || !links.is_empty()) {
            // The walk stopped at a job not kept: the rest is unexplained host time, or the
            // part of the frame the window cut off.
            links.push(Link {
                job: None,
                via: if cut { Via::Cut } else { Via::Start },
                from: s,
                to: edge,
                fence: (0, 0),
                exec: NONE,
                queue: NONE,
            });
        }
        links.retain(|l| l.to > l.from);
        links.reverse();
        FramePath {
            start: s,
            end,
            marker: f.marker.clone(),
            jobs: f.jobs,
            links,
            cut,
        }
    }
}

/// `ctx 3 ring 1 seqno 812`.
fn job_name(k: &JobKey) -> String {
    format!("ctx {} ring {} seqno {}", k.ctx, k.ring, k.seqno)
}

/// What a link is, in words: `job ctx 3 ring 1 seqno 812 (exec 2.100 ms) after dep`.
pub fn describe(l: &Link) -> String {
    let ms = crate::units::ms;
    match l.job {
        None if l.via == Via::Host => "host: nothing submitted".to_string(),
        None if l.via == Via::Cut => {
            "cut: the jobs before ended too long before their ring's last END (not kept)"
                .to_string()
        }
        None => "unexplained (the job before was not kept)".to_string(),
        Some(k) => {
            let why = match l.via {
                Via::Host => "submitted by the host".to_string(),
                Via::Ring => "queued behind the job before".to_string(),
                Via::Dep => format!(
                    "waited on fence {}:{} of the job before",
                    l.fence.0, l.fence.1
                ),
                Via::Fence => format!(
                    "waited on fence {}:{} (no recorded job owns it)",
                    l.fence.0, l.fence.1
                ),
                Via::Start => "was ready before the frame".to_string(),
                Via::Cut => "cut".to_string(),
            };
            format!("{} (exec {} ms) {why}", job_name(&k), ms(l.exec))
        }
    }
}

/// The text section: the window's path, or the slowest frame's and the frame lengths.
pub fn write_text<W: std::io::Write>(
    w: &mut W,
    r: &CritReport,
    origin: Origin,
) -> std::io::Result<()> {
    let (ms, secs) = (crate::units::ms, crate::units::secs);
    let Some(p) = &r.slowest else {
        if r.overflow {
            writeln!(
                w,
                "not computed: more than {MAX_NODES} jobs to keep; narrow it with -w"
            )?;
        } else {
            writeln!(w, "no job began and ended in the window or in any frame")?;
        }
        return Ok(());
    };
    if r.window {
        writeln!(
            w,
            "window {} s to {} s:",
            secs(p.start, origin),
            secs(p.end, origin)
        )?;
    } else {
        let n = r.lengths.len();
        let median = r.lengths.get(n / 2).copied().unwrap_or(0);
        let what = if p.marker.is_empty() {
            "whole trace (no frame marker)".to_string()
        } else {
            format!("slowest of {} frames (marker \"{}\")", r.frames, p.marker)
        };
        writeln!(
            w,
            "{what} at {} s: {} ms to its last END; frames median {} ms, max {} ms",
            secs(p.start, origin),
            ms(p.length()),
            ms(median),
            ms(r.lengths.last().copied().unwrap_or(0)),
        )?;
    }
    if r.overflow {
        writeln!(
            w,
            "warning: more than {MAX_NODES} jobs to keep: later frames have no path"
        )?;
    }
    if r.cut_frames > 0 {
        writeln!(
            w,
            "warning: {} path(s){} cut: only jobs ending less than {} s before their ring's last END are kept",
            r.cut_frames,
            if p.cut { ", this one included," } else { "" },
            r.window_ns as f64 / 1e9,
        )?;
    }
    writeln!(
        w,
        "{} job(s) began in it; {} link(s) decided its end:",
        p.jobs,
        p.links.len()
    )?;
    writeln!(
        w,
        "  {:>12}  {:>12}  {:>6}  LINK",
        "FROM (s)", "LENGTH", "SHARE"
    )?;
    for l in &p.links {
        writeln!(
            w,
            "  {:>12}  {:>9} ms  {:>5.1}%  {}",
            secs(l.from, origin),
            ms(l.ns()),
            100.0 * p.share(l),
            describe(l)
        )?;
    }
    // Shares by kind: how much of the frame was GPU work on the path, host, waiting.
    let host: u64 = p
        .links
        .iter()
        .filter(|l| l.job.is_none())
        .map(Link::ns)
        .fold(0u64, u64::saturating_add);
    let jobs = p.length().saturating_sub(host);
    writeln!(
        w,
        "  on the path: jobs {:.1}%, host {:.1}%",
        100.0 * jobs as f64 / p.length().max(1) as f64,
        100.0 * host as f64 / p.length().max(1) as f64
    )
}

/// The JSON value (`critical_path`): see grtreport(1), JSON OUTPUT.
pub fn to_json(r: &CritReport) -> serde_json::Value {
    use serde_json::json;
    let n = r.lengths.len();
    let path = r.slowest.as_ref().map(|p| {
        json!({
            "start_ns": p.start,
            "end_ns": p.end,
            "length_ns": p.length(),
            "marker": p.marker,
            "jobs": p.jobs,
            "cut": p.cut,
            "links": p.links.iter().map(|l| json!({
                "kind": if l.job.is_some() { "job" } else if l.via == Via::Cut { "cut" } else { "host" },
                "ctx": l.job.map(|k| k.ctx),
                "ring": l.job.map(|k| k.ring),
                "seqno": l.job.map(|k| k.seqno),
                "via": l.via.name(),
                "fence": matches!(l.via, Via::Dep | Via::Fence).then(|| json!([l.fence.0, l.fence.1])),
                "start_ns": l.from,
                "end_ns": l.to,
                "ns": l.ns(),
                "share": p.share(l),
                "exec_ns": (l.exec != NONE).then_some(l.exec),
                "text": describe(l),
            })).collect::<Vec<_>>(),
        })
    });
    json!({
        "scope": if r.window { "window" } else { "frames" },
        "frames": r.frames,
        "frame_median_ns": r.lengths.get(n / 2),
        "frame_max_ns": r.lengths.last(),
        "overflow": r.overflow,
        "window_ns": r.window_ns,
        "cut_frames": r.cut_frames,
        "path": path,
    })
}
