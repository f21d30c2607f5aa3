//! The live merge of `grtrace --ftrace`: per-CPU `trace_pipe_raw` pages, read in polling
//! rounds, put in time order behind a watermark before they reach the [`Mapper`].
//!
//! Merging each round's pages on their own is wrong: the CPUs are read one after the other,
//! so by the time the reader gets to CPU 3 it finds events newer than anything it took from
//! CPU 0, whose older events then come a round later, after their successors (a queue after
//! its done, a START inferred out of order). A stalled reader (a vCPU descheduled for 200 ms
//! between two reads) makes the skew as large as the stall.
//!
//! So every CPU has a *horizon*: a time before which it will deliver nothing more. It is
//! the last event read from it, or, when a read found its buffer empty, the trace clock
//! just before that read minus [`LiveMerge::slack`] (an event is stamped when its space is
//! reserved and becomes readable when committed; the slack covers a writer descheduled in
//! between). Events are handed on only up to the *watermark*, the smallest horizon, so the
//! mapper sees every CPU's events in time order. Memory is bounded: past `limit` bytes held,
//! the oldest events go out regardless (counted as forced); an event that arrives behind
//! what was already handed on is counted as late. Both are reported, never silent.

use std::collections::VecDeque;

use crate::format::PageLayout;
use crate::import::ImportError;
use crate::map::{Mapper, Sink};
use crate::page::{Missed, Page};
use crate::tracedat::DatError;

/// What the merge did, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// Pages taken in.
    pub pages: u64,
    /// Events handed on earlier than an event already handed on (arrived too late).
    pub late: u64,
    /// Events handed on before the watermark reached them, to keep memory bounded.
    pub forced: u64,
    /// Most bytes of pages held at once.
    pub max_held: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    /// Nothing decoded: open the front page (if any).
    Empty,
    /// The front page's next event: time and byte range in the page.
    Event(u64, usize, usize),
    /// Events were lost before the front page, which starts at this time.
    Lost(Missed, u64),
}

struct Queue {
    cpu: u32,
    /// Pages read and not fully handed on, oldest first, with their offset in the CPU's
    /// `trace_pipe_raw` byte stream (for errors).
    pages: VecDeque<(u64, Vec<u8>)>,
    cursor: Option<Page>,
    head: Head,
    horizon: u64,
    /// Time of the last event decoded (the start of a lost-events gap).
    last_ts: u64,
    /// Bytes taken from this CPU so far.
    read: u64,
}

/// Per-CPU pages in, one time-ordered event stream out (see the module notes).
pub struct LiveMerge {
    layout: PageLayout,
    cpus: Vec<Queue>,
    held: usize,
    limit: usize,
    /// How long a reserved event may stay uncommitted (ns), see the module notes.
    pub slack: u64,
    /// Time of the last event handed on.
    out_ts: u64,
    /// Latest event time taken in from any CPU (a lower bound of the trace clock).
    max_seen: u64,
    pool: Vec<Vec<u8>>,
    /// What the merge had to do out of order (for the end-of-recording warnings).
    pub stats: LiveStats,
}

/// Default slack: half a second, well above the 204 ms vCPU stalls seen under QEMU TCG.
pub const DEFAULT_SLACK_NS: u64 = 500_000_000;

impl LiveMerge {
    /// A merge of the CPUs `cpus` (kernel CPU numbers), holding at most about `limit` bytes
    /// of pages.
    pub fn new(layout: PageLayout, cpus: &[u32], limit: usize) -> LiveMerge {
        LiveMerge {
            layout,
            cpus: cpus
                .iter()
                .map(|&cpu| Queue {
                    cpu,
                    pages: VecDeque::new(),
                    cursor: None,
                    head: Head::Empty,
                    horizon: 0,
                    last_ts: 0,
                    read: 0,
                })
                .collect(),
            held: 0,
            limit: limit.max(layout.page_size * cpus.len().max(1) * 2),
            slack: DEFAULT_SLACK_NS,
            out_ts: 0,
            max_seen: 0,
            pool: Vec::new(),
            stats: LiveStats::default(),
        }
    }

    /// Bytes of pages held now.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The latest event time taken in so far (0 before any).
    pub fn max_seen(&self) -> u64 {
        self.max_seen
    }

    /// A page-sized buffer to read into (recycled from pages already handed on).
    pub fn buffer(&mut self) -> Vec<u8> {
        let mut b = self.pool.pop().unwrap_or_default();
        b.clear();
        b.resize(self.layout.page_size, 0);
        b
    }

    /// Gives a buffer that did not receive a page back.
    pub fn recycle(&mut self, b: Vec<u8>) {
        if self.pool.len() < 64 {
            self.pool.push(b);
        }
    }

    /// Takes in one page read from CPU index `i` (position in the `cpus` given to
    /// [`new`](Self::new)); `page` may be a short read. Its events raise the CPU's horizon.
    pub fn push(&mut self, i: usize, page: Vec<u8>) -> Result<(), DatError> {
        let q = &mut self.cpus[i];
        let at = q.read;
        q.read += page.len() as u64;
        // Scan for the last time in the page: the CPU has nothing older to come.
        let mut pg = Page::open(&page, &self.layout).map_err(|e| DatError {
            offset: at + e.offset as u64,
            msg: format!("CPU {} trace_pipe_raw: {}", q.cpu, e.msg),
        })?;
        let mut last = pg.timestamp();
        while let Some(r) = pg.next(&page) {
            match r {
                Ok((t, _)) => last = t,
                Err(e) => {
                    return Err(DatError {
                        offset: at + e.offset as u64,
                        msg: format!("CPU {} trace_pipe_raw: {}", q.cpu, e.msg),
                    })
                }
            }
        }
        q.horizon = q.horizon.max(last);
        self.max_seen = self.max_seen.max(last);
        self.held += page.len();
        self.stats.max_held = self.stats.max_held.max(self.held);
        self.stats.pages += 1;
        q.pages.push_back((at, page));
        Ok(())
    }

    /// CPU index `i` was read empty; `now` is the trace clock just before that read (None:
    /// the clock cannot be read from user space, the latest event seen stands in for it).
    pub fn drained(&mut self, i: usize, now: Option<u64>) {
        let now = now.unwrap_or(self.max_seen);
        let q = &mut self.cpus[i];
        q.horizon = q.horizon.max(now.saturating_sub(self.slack));
    }

    /// CPU index `i` will deliver nothing more (its pipe reached its end).
    pub fn closed(&mut self, i: usize) {
        self.cpus[i].horizon = u64::MAX;
    }

    /// The time up to which every CPU's events are known.
    pub fn watermark(&self) -> u64 {
        self.cpus.iter().map(|q| q.horizon).min().unwrap_or(0)
    }

    /// Decodes CPU `i`'s next head (opening pages as needed); Empty when it has no page.
    fn advance(&mut self, i: usize) -> Result<(), DatError> {
        let l = self.layout;
        let q = &mut self.cpus[i];
        loop {
            let Some((at, page)) = q.pages.front() else {
                q.head = Head::Empty;
                return Ok(());
            };
            let at = *at;
            match &mut q.cursor {
                None => {
                    let pg = Page::open(page, &l).expect("checked when pushed");
                    let missed = pg.missed;
                    let t = pg.timestamp();
                    q.cursor = Some(pg);
                    if missed != Missed::None {
                        q.head = Head::Lost(missed, t);
                        return Ok(());
                    }
                }
                Some(pg) => match pg.next(page) {
                    Some(Ok((t, d))) => {
                        let s = d.as_ptr() as usize - page.as_ptr() as usize;
                        q.head = Head::Event(t, s, s + d.len());
                        return Ok(());
                    }
                    Some(Err(e)) => {
                        return Err(DatError {
                            offset: at + e.offset as u64,
                            msg: format!("CPU {} trace_pipe_raw: {}", q.cpu, e.msg),
                        })
                    }
                    None => {
                        let (_, b) = q.pages.pop_front().expect("front exists");
                        self.held -= b.len();
                        if self.pool.len() < 64 {
                            self.pool.push(b);
                        }
                        q.cursor = None;
                    }
                },
            }
        }
    }

    fn head_time(&self, i: usize) -> Option<u64> {
        match self.cpus[i].head {
            Head::Empty => None,
            Head::Event(t, ..) | Head::Lost(_, t) => Some(t),
        }
    }

    /// Hands on, in time order, every event up to `upto` (u64::MAX: everything held), then,
    /// while more than the limit is held, the oldest events regardless.
    pub fn emit<S: Sink>(
        &mut self,
        upto: u64,
        mapper: &mut Mapper,
        sink: &mut S,
    ) -> Result<(), ImportError> {
        for i in 0..self.cpus.len() {
            if self.cpus[i].head == Head::Empty {
                self.advance(i).map_err(ImportError::Input)?;
            }
        }
        let mut forced = false;
        loop {
            if !forced && self.held > self.limit {
                forced = true;
            }
            if forced && self.held <= self.limit / 2 {
                forced = false;
            }
            let bound = if forced { u64::MAX } else { upto };
            // The CPU with the earliest head, and how far it may run alone.
            let (mut best, mut best_t, mut second) = (usize::MAX, u64::MAX, u64::MAX);
            for i in 0..self.cpus.len() {
                if let Some(t) = self.head_time(i) {
                    if best == usize::MAX || t < best_t {
                        second = second.min(best_t);
                        (best, best_t) = (i, t);
                    } else {
                        second = second.min(t);
                    }
                }
            }
            if best == usize::MAX || best_t > bound {
                return Ok(());
            }
            let run_to = second.min(bound);
            loop {
                let q = &self.cpus[best];
                match q.head {
                    Head::Event(t, s, e) if t <= run_to => {
                        if t < self.out_ts {
                            self.stats.late += 1;
                        }
                        if t > upto {
                            self.stats.forced += 1;
                        }
                        self.out_ts = self.out_ts.max(t);
                        let (at, page) = q.pages.front().expect("a head has its page");
                        match mapper.event(sink, q.cpu, t, &page[s..e]) {
                            Ok(Ok(())) => {}
                            Ok(Err(err)) => return Err(ImportError::Output(err)),
                            Err(err) => {
                                return Err(ImportError::Input(DatError {
                                    offset: *at,
                                    msg: format!("CPU {}: {}", q.cpu, err),
                                }))
                            }
                        }
                        self.cpus[best].last_ts = t;
                    }
                    Head::Lost(m, t) if t <= run_to => {
                        let count = match m {
                            Missed::Count(n) => Some(n),
                            _ => None,
                        };
                        mapper
                            .lost(sink, q.cpu, count, q.last_ts, t)
                            .map_err(ImportError::Output)?;
                    }
                    _ => break,
                }
                self.advance(best).map_err(ImportError::Input)?;
                // Re-decide when the limit is crossed one way or the other.
                if (!forced && self.held > self.limit) || (forced && self.held <= self.limit / 2) {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datwriter::{fixture_formats, Record};
    use crate::format::EventFormat;
    use crate::page::PageBuilder;
    use grtrace_format::Body;
    use grtrace_format::Event;

    /// Collects (time, event code, seqno) of the EVENT records.
    #[derive(Default)]
    struct Collect(Vec<(u64, u16, u64)>);
    impl Sink for Collect {
        fn record(&mut self, _: u32, _: u32, t: u64, b: &Body<'_>) -> std::io::Result<()> {
            if let Body::Event(e) = b {
                self.0.push((t, e.code.0, e.seqno));
            }
            Ok(())
        }
    }

    const MS: u64 = 1_000_000;

    struct Fx {
        layout: PageLayout,
        q: EventFormat,
        r: EventFormat,
        all: Vec<EventFormat>,
    }

    fn fx() -> Fx {
        let f = fixture_formats("6.12");
        let get = |n: &str| f.iter().find(|(x, _)| x.name == n).unwrap().0.clone();
        Fx {
            layout: PageLayout::native64(4096),
            q: get("virtio_gpu_cmd_queue"),
            r: get("virtio_gpu_cmd_response"),
            all: f.into_iter().map(|(x, _)| x).collect(),
        }
    }

    /// The fixture, a mapper and what it writes, and a live merge of CPUs 0 and 1 that holds
    /// at most `limit` bytes.
    fn two_cpus(limit: usize) -> (Fx, Mapper, Collect, LiveMerge) {
        let fx = fx();
        let m = Mapper::new(fx.layout.endian, &fx.all);
        let lm = LiveMerge::new(fx.layout, &[0, 1], limit);
        (fx, m, Collect::default(), lm)
    }

    /// One page of virtio control-queue commands (`queue`: cmd_queue, else response).
    fn page(fx: &Fx, evs: &[(u64, bool, u64)]) -> Vec<u8> {
        let mut b = PageBuilder::new(fx.layout);
        for &(t, queue, seqno) in evs {
            let mut rec = Record::new(if queue { &fx.q } else { &fx.r }, 7);
            rec.set("vq", 0)
                .set("ctx_id", 1)
                .set("seqno", seqno)
                .set_str("name", "control");
            assert!(b.push(t, rec.bytes()));
        }
        b.finish(Missed::None)
    }

    /// Job seqno's START and END record positions.
    fn start_end(out: &[(u64, u16, u64)], seqno: u64) -> (Option<usize>, Option<usize>) {
        let at = |c: Event| out.iter().position(|r| r.1 == c.0 && r.2 == seqno);
        (at(Event::START), at(Event::END))
    }

    /// The stall of the CI rehearsal: CPU 0 is read at 10 ms, then the reader stalls and
    /// reads CPU 1 at 215 ms, which by then holds the response to a command CPU 0 queued at
    /// 20 ms; that command's page comes in the next round. Merged per round, the response
    /// would reach the mapper before its command (END before the job exists, START
    /// inferred out of order); behind the watermark every job is whole and in order.
    #[test]
    fn a_page_that_arrives_a_round_late_is_still_merged_in_time_order() {
        let (fx, mut m, mut out, mut lm) = two_cpus(1 << 20);
        // round 1
        lm.push(0, page(&fx, &[(5 * MS, true, 1)])).unwrap();
        lm.drained(0, Some(10 * MS));
        lm.push(1, page(&fx, &[(8 * MS, false, 1), (30 * MS, false, 2)]))
            .unwrap();
        lm.drained(1, Some(215 * MS));
        lm.emit(lm.watermark(), &mut m, &mut out).unwrap();
        // round 2: CPU 0's command of 20 ms
        lm.push(0, page(&fx, &[(20 * MS, true, 2)])).unwrap();
        lm.drained(0, Some(230 * MS));
        lm.drained(1, Some(231 * MS));
        lm.emit(lm.watermark(), &mut m, &mut out).unwrap();
        // stop: everything left
        lm.emit(u64::MAX, &mut m, &mut out).unwrap();
        let times: Vec<u64> = out.0.iter().map(|r| r.0).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{:?}", out.0);
        for seqno in [1, 2] {
            let (s, e) = start_end(&out.0, seqno);
            assert!(
                matches!((s, e), (Some(s), Some(e)) if s < e),
                "job {seqno}: START {s:?} END {e:?} in {:?}",
                out.0
            );
        }
        assert_eq!(m.stats.inferred_starts, 2);
        assert_eq!((lm.stats.late, lm.stats.forced), (0, 0));
        assert_eq!(lm.held(), 0);
    }

    /// Held back: nothing passes the watermark until every CPU has been read past it.
    #[test]
    fn events_wait_for_the_slowest_cpu_and_a_late_one_is_counted() {
        let (fx, mut m, mut out, mut lm) = two_cpus(1 << 20);
        lm.push(1, page(&fx, &[(900 * MS, true, 1)])).unwrap();
        lm.drained(1, Some(1000 * MS));
        // CPU 0 never read: its horizon is 0, nothing may go out
        lm.emit(lm.watermark(), &mut m, &mut out).unwrap();
        assert!(out.0.is_empty());
        lm.drained(0, Some(1000 * MS));
        assert_eq!(lm.watermark(), 1000 * MS - DEFAULT_SLACK_NS);
        lm.emit(lm.watermark(), &mut m, &mut out).unwrap();
        assert!(out.0.is_empty(), "900 ms is within the slack of both CPUs");
        lm.drained(0, Some(1401 * MS));
        lm.drained(1, Some(1401 * MS));
        lm.emit(lm.watermark(), &mut m, &mut out).unwrap();
        assert_eq!(out.0.len(), 3, "COMMIT SUBMIT START: {:?}", out.0);
        // a page older than what went out (a writer stalled beyond the slack): counted
        lm.push(0, page(&fx, &[(100 * MS, false, 1)])).unwrap();
        lm.emit(u64::MAX, &mut m, &mut out).unwrap();
        assert_eq!(lm.stats.late, 1);
    }

    /// Memory stays bounded when one CPU is never read past the others: past the limit
    /// the oldest events go out anyway, counted.
    #[test]
    fn a_cpu_that_never_advances_cannot_make_memory_grow() {
        let limit = 64 << 10;
        let (fx, mut m, mut out, mut lm) = two_cpus(limit);
        for i in 0..200u64 {
            let evs: Vec<_> = (0..20)
                .map(|k| ((i * 20 + k) * 1000, true, i * 20 + k))
                .collect();
            lm.push(1, page(&fx, &evs)).unwrap();
            lm.emit(lm.watermark(), &mut m, &mut out).unwrap();
            assert!(lm.held() <= limit, "{} bytes held", lm.held());
        }
        assert!(lm.stats.max_held <= limit + 4096);
        assert!(lm.stats.forced > 0);
        assert_eq!(lm.stats.late, 0);
        lm.emit(u64::MAX, &mut m, &mut out).unwrap();
        assert_eq!(m.stats.events_in, 4000);
    }

    #[test]
    fn a_corrupt_page_names_the_cpu_and_its_byte_offset() {
        let fx = fx();
        let mut lm = LiveMerge::new(fx.layout, &[0, 3], 1 << 20);
        lm.push(1, page(&fx, &[(1, true, 1)])).unwrap();
        let mut bad = page(&fx, &[(2, true, 2)]);
        fx.layout.endian.put_u64(&mut bad, 8, 5000); // commit past the page
        let e = lm.push(1, bad).unwrap_err();
        assert_eq!(e.offset, 4096 + 8);
        assert!(e.msg.contains("CPU 3"), "{}", e.msg);
    }
}
