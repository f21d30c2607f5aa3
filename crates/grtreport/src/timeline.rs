//! What the two timeline exports (`--perfetto`, `--html`) share: names of rings and
//! processes learnt from notes, the blocker of a job, and spreading a job's execution over
//! fixed time buckets (busy %).

pub mod front;

use grtrace_format::Event;
use grtrace_format::RecordType;
use grtrace_format::{Body, Lost, RecordView};

use crate::job::{BlockKind, Flags, Job, JobKey, NONE};
use crate::joiner::{FxMap, Joiner};

/// The recorded job that `job` waited for, as the report names it ([`Job::blocker`]): the
/// dependency it waited for longest, or the job ahead of it on its ring. None when it
/// waited for nothing, or for a fence no recorded job owns.
pub fn blocker(job: &Job) -> Option<JobKey> {
    let b = job.blocker();
    (b.is_some() && b.owned).then_some(b.key)
}

/// How the exports describe the blocker: `dep`/`queue`, who (a job or a fence), and the time
/// the job lost to it in ns. None when the job waited for nothing.
pub fn blocker_info(job: &Job) -> Option<(&'static str, String, u64)> {
    let b = job.blocker();
    let kind = match b.kind {
        BlockKind::None => return None,
        BlockKind::Dep => "dep",
        BlockKind::Queue => "queue",
    };
    Some((kind, b.who(), b.lost))
}

/// `ctx/seqno`: how a job is named on a ring's track.
pub fn job_name(k: &JobKey) -> String {
    format!("{}/{}", k.ctx, k.seqno)
}

/// How a job's slices show its record: whole, incomplete, or with an inferred time (the
/// index of [`JOB_CATEGORIES`] and of the mark after its name).
pub fn job_shown(j: &Job) -> usize {
    if j.flags.incomplete() {
        1
    } else if j.flags.has(Flags::INFERRED) {
        2
    } else {
        0
    }
}

/// The category of a job's slices, by [`job_shown`].
pub const JOB_CATEGORIES: [&str; 3] = ["job", "job,incomplete", "job,inferred"];

/// What follows a job's name on its slices: ` (incomplete)`, ` (inferred)` or nothing.
pub fn job_mark(j: &Job) -> &'static str {
    ["", " (incomplete)", " (inferred)"][job_shown(j)]
}

/// A ring event the exports show as a marker (VM_FAULT, VM_RETRY, RESET, TIMEOUT, HANG,
/// STALL), with what they show of it.
#[derive(Clone, Copy, Debug)]
pub struct Marker {
    /// The event's code.
    pub code: u16,
    /// Its ring.
    pub ring: u32,
    /// Its context.
    pub ctx: u32,
    /// Its seqno.
    pub seqno: u64,
    /// Its arg0 (an address for VM faults).
    pub arg0: u64,
    /// Its arg2 (a status).
    pub arg2: u32,
}

impl Marker {
    /// The marker's name: its event's (`EVENT` for a code the vocabulary lacks).
    pub fn name(&self) -> &'static str {
        Event(self.code).name().unwrap_or("EVENT")
    }
}

/// What the exports draw from one record (see [`Names::see`]). Owned, so that an export
/// may draw it on a thread of its own (`perfetto_feed`), and small (the rare kinds boxed):
/// one is handed over for most records.
#[derive(Debug)]
pub enum Seen {
    /// A ring event shown as a marker: VM_FAULT, VM_RETRY, RESET, TIMEOUT, HANG, STALL.
    Mark(Box<Marker>),
    /// A ring's counters after ALLOC, COMMIT, SUBMIT, START or END: jobs outstanding (from
    /// the joiner) and, but for START and END, the fill in 1/1000 ([`FILL_UNKNOWN`] if not).
    Ring {
        ring: u32,
        outstanding: u32,
        fill: u32,
    },
    /// A user message (NOTE_MSG).
    Msg(Box<Message>),
    /// A NOTE_LOST record.
    Lost(Box<Lost>),
    /// A ring or process note, already learnt by the [`Names`] that saw it (an export
    /// drawing elsewhere learns it with [`Names::learn`]).
    Named(Box<Note>),
    /// Nothing to draw.
    Nothing,
}

/// A user message (NOTE_MSG) to draw.
#[derive(Debug)]
pub struct Message {
    /// The thread that wrote it (0: none).
    pub pid: u32,
    /// What it wrote.
    pub text: Box<[u8]>,
}

/// A ring's name and size (NOTE_RING) or a process's name (NOTE_PROCESS).
#[derive(Clone, Debug)]
pub enum Note {
    /// Ring `ring` is called `name` and holds `size` units (0: not known).
    Ring { ring: u32, name: String, size: u64 },
    /// Thread `pid` belongs to the process called `comm`.
    Process { pid: u32, comm: String },
}

/// Ring names and sizes (NOTE_RING) and process names (NOTE_PROCESS) seen so far.
#[derive(Default)]
pub struct Names {
    pub rings: FxMap<u32, (String, u64)>,
    pub procs: FxMap<u32, String>,
}

impl Names {
    /// The note a ring or process note record holds, None for any other record.
    fn note(rec: &RecordView<'_>) -> Option<Note> {
        match rec.rtype() {
            RecordType::NOTE_RING | RecordType::NOTE_PROCESS => {}
            _ => return None,
        }
        match rec.body() {
            Body::Ring(r) => Some(Note::Ring {
                ring: r.ring,
                name: String::from_utf8_lossy(r.name).into_owned(),
                size: r.size,
            }),
            Body::Process { comm } => Some(Note::Process {
                pid: rec.pid(),
                comm: String::from_utf8_lossy(comm).into_owned(),
            }),
            _ => None,
        }
    }

    /// Learns a ring or process name (again: the same note changes nothing).
    pub fn learn(&mut self, note: &Note) {
        match note {
            Note::Ring { ring, name, size } => {
                self.rings.insert(*ring, (name.clone(), *size));
            }
            Note::Process { pid, comm } => {
                self.procs.insert(*pid, comm.clone());
            }
        }
    }

    /// Classifies a record for drawing, learning names from notes on the way. `joiner` has
    /// already seen the record.
    pub fn see(&mut self, rec: &RecordView<'_>, joiner: &Joiner) -> Seen {
        match rec.rtype() {
            RecordType::EVENT => {
                let Some(ev) = rec.event() else {
                    return Seen::Nothing;
                };
                let ring = ev.ring();
                let outstanding = || joiner.ring(ring).map_or(0, |r| r.outstanding);
                match ev.event() {
                    Event::VM_FAULT
                    | Event::VM_RETRY
                    | Event::RESET
                    | Event::TIMEOUT
                    | Event::HANG
                    | Event::STALL => Seen::Mark(Box::new(Marker {
                        code: ev.code(),
                        ring,
                        ctx: ev.ctx(),
                        seqno: ev.seqno(),
                        arg0: ev.arg0(),
                        arg2: ev.arg2(),
                    })),
                    Event::ALLOC | Event::COMMIT | Event::SUBMIT => Seen::Ring {
                        ring,
                        outstanding: outstanding(),
                        fill: fill_permille(ev.arg2(), self.ring_size(ring)),
                    },
                    Event::START | Event::END => Seen::Ring {
                        ring,
                        outstanding: outstanding(),
                        fill: FILL_UNKNOWN,
                    },
                    _ => Seen::Nothing,
                }
            }
            _ => match rec.body() {
                Body::Msg { text } => Seen::Msg(Box::new(Message {
                    pid: rec.pid(),
                    text: text.into(),
                })),
                Body::Lost(l) => Seen::Lost(Box::new(l)),
                _ => match Self::note(rec) {
                    Some(n) => {
                        self.learn(&n);
                        Seen::Named(Box::new(n))
                    }
                    None => Seen::Nothing,
                },
            },
        }
    }

    /// `ring 0 gfx`, or `ring 7` when the ring has no name.
    pub fn ring_label(&self, ring: u32) -> String {
        match self.rings.get(&ring) {
            Some((n, _)) if !n.is_empty() => format!("ring {ring} {n}"),
            _ => format!("ring {ring}"),
        }
    }

    /// The ring's size in units (0 = unknown).
    pub fn ring_size(&self, ring: u32) -> u64 {
        self.rings.get(&ring).map_or(0, |r| r.1)
    }
}

/// A ring fill in 1/1000 of the ring that is not known (the ring's size is not).
pub const FILL_UNKNOWN: u32 = u32::MAX;

/// `units` in use as 1/1000 of a ring of `size` units ([`FILL_UNKNOWN`] if the size is 0).
pub fn fill_permille(units: u32, size: u64) -> u32 {
    (units as u64 * 1000)
        .checked_div(size)
        .map_or(FILL_UNKNOWN, |f| f.min(1000) as u32)
}

/// The higher of two fills, either of which may be unknown.
pub fn max_fill(a: u32, b: u32) -> u32 {
    match (a, b) {
        (FILL_UNKNOWN, f) | (f, FILL_UNKNOWN) => f,
        (a, b) => a.max(b),
    }
}

/// Counter buckets the timeline exports keep open ahead of the last one written, per ring
/// (4 MiB at most): an event or a job's execution further ahead than that (262 s at the
/// default 1 ms, a damaged time such as one with a high bit flipped) is not put into the
/// counters, so that memory and time stay bounded; such busy time is counted as late.
pub const MAX_OPEN_BUCKETS: u64 = 1 << 18;

/// [`spread`] over the buckets still open, `base` to `base + MAX_OPEN_BUCKETS`: the parts
/// of `[start, end)` before `base` (buckets already written) or past the window (a damaged
/// time) are not spread; their length in ns is returned. The calls are bounded by the
/// window whatever the times.
pub fn spread_open(start: u64, end: u64, width: u64, base: u64, f: impl FnMut(u64, u64)) -> u64 {
    if start == NONE || end == NONE || end <= start || width == 0 {
        return 0;
    }
    let floor = base.saturating_mul(width);
    let lim = base.saturating_add(MAX_OPEN_BUCKETS).saturating_mul(width);
    spread(start.max(floor).min(lim), end.min(lim), width, f);
    end.min(floor).saturating_sub(start) + end.saturating_sub(lim.max(start))
}

/// Calls `f(bucket, ns)` for every bucket of width `width` that `[start, end)` overlaps,
/// with the overlap in ns (times relative to the same origin as the buckets).
pub fn spread(start: u64, end: u64, width: u64, mut f: impl FnMut(u64, u64)) {
    if start == NONE || end == NONE || end <= start || width == 0 {
        return;
    }
    let mut t = start;
    while t < end {
        let b = t / width;
        // Saturating: the last bucket of u64 time ends past u64::MAX.
        let stop = (b + 1).saturating_mul(width).min(end);
        f(b, stop - t);
        t = stop;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_is_unknown_without_a_ring_size() {
        assert_eq!(fill_permille(192, 256), 750);
        assert_eq!(fill_permille(300, 256), 1000);
        assert_eq!(fill_permille(5, 0), FILL_UNKNOWN);
        assert_eq!(max_fill(FILL_UNKNOWN, 3), 3);
        assert_eq!(max_fill(4, FILL_UNKNOWN), 4);
        assert_eq!(max_fill(4, 7), 7);
    }

    /// Before the open window, inside it, past it: only the inside is spread, the rest is
    /// returned; a window far from the times costs no call per bucket between them.
    #[test]
    fn spread_open_spreads_only_the_open_window() {
        let mut v = Vec::new();
        let late = spread_open(150, 420, 100, 2, |b, ns| v.push((b, ns)));
        assert_eq!(v, [(2, 100), (3, 100), (4, 20)]);
        assert_eq!(late, 50);
        v.clear();
        let far = u64::MAX / 4;
        let late = spread_open(0, far, 1, far - 10, |b, ns| v.push((b, ns)));
        assert_eq!(v.len(), 10);
        assert_eq!(late, far - 10);
        v.clear();
        let end = 100 * (2 + MAX_OPEN_BUCKETS) + 7;
        let late = spread_open(100 * MAX_OPEN_BUCKETS, end, 100, 2, |b, ns| v.push((b, ns)));
        assert_eq!(v.len(), 2);
        assert_eq!(late, 7);
    }

    #[test]
    fn spread_splits_at_bucket_edges() {
        let mut v = Vec::new();
        spread(150, 420, 100, |b, ns| v.push((b, ns)));
        assert_eq!(v, [(1, 50), (2, 100), (3, 100), (4, 20)]);
        v.clear();
        spread(5, 5, 100, |b, ns| v.push((b, ns)));
        assert!(v.is_empty());
    }
}
