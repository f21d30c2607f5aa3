//! Utilisation over time: how busy each ring and context was (the union of its jobs'
//! execution intervals), jobs per second, jobs outstanding, ring fill, and why a ring sat
//! idle (the host was late to submit, the next job waited on a dependency, or nothing was
//! queued), in total and per `--interval`. Everything is running sums per ring and per
//! context, updated at START, END and SUBMIT: memory follows the number of rings and
//! contexts, never the trace length.

use crate::job::NONE;

/// Busy time of one ring or context: the union of the execution intervals of its jobs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Busy {
    /// Jobs executing now (started, not ended or preempted).
    running: u32,
    /// When `running` last went from 0 to 1.
    since: u64,
    /// Busy time in total and in the current interval (up to the last accounting point).
    pub total: u64,
    pub interval: u64,
}

impl Busy {
    /// A job begins executing at `t`.
    pub fn start(&mut self, t: u64) {
        if self.running == 0 {
            self.since = t;
        }
        self.running += 1;
    }

    /// A job stops executing at `t` (ended or preempted); `iv_start` is the start of the
    /// current interval. Returns true when the ring or context became idle.
    pub fn stop(&mut self, t: u64, iv_start: u64) -> bool {
        if self.running == 0 {
            return false;
        }
        self.running -= 1;
        if self.running > 0 {
            return false;
        }
        // Saturating: with damaged times, busy intervals can overlap and add past u64.
        let t = t.max(self.since);
        self.total = self.total.saturating_add(t - self.since);
        self.interval = self
            .interval
            .saturating_add(t.saturating_sub(self.since.max(iv_start)));
        true
    }

    pub fn running(&self) -> bool {
        self.running > 0
    }

    /// Closes the interval [iv_start, end): a job still running counts up to `end`.
    fn close(&mut self, iv_start: u64, end: u64) -> u64 {
        let mut v = self.interval;
        if self.running > 0 {
            v = v.saturating_add(end.saturating_sub(self.since.max(iv_start)));
        }
        self.interval = 0;
        v
    }

    /// Busy time up to `now`, the running job included.
    pub fn total_at(&self, now: u64) -> u64 {
        if self.running > 0 {
            self.total.saturating_add(now.saturating_sub(self.since))
        } else {
            self.total
        }
    }
}

/// Why a ring was idle, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Idle {
    /// The next job was committed but not yet submitted: the host was late.
    pub host: u64,
    /// The next job was submitted and waited (host-side SYNC) for a dependency.
    pub dep: u64,
    /// The next job was submitted, waited for nothing recorded, and the GPU did not start
    /// it: scheduling latency on the GPU side, or work the recording does not show.
    pub sched: u64,
    /// No job was committed at all.
    pub none: u64,
}

impl Idle {
    fn add(&mut self, o: &Idle) {
        self.host = self.host.saturating_add(o.host);
        self.dep = self.dep.saturating_add(o.dep);
        self.sched = self.sched.saturating_add(o.sched);
        self.none = self.none.saturating_add(o.none);
    }
    pub fn sum(&self) -> u64 {
        self.host
            .saturating_add(self.dep)
            .saturating_add(self.sched)
            .saturating_add(self.none)
    }
}

/// Splits the idle gap [g0, g1) before a job started at `g1` by what the job was doing:
/// waiting host-side for a dependency from `wait_from` (its first `HOST` SYNC_ENTER, NONE if
/// none) until it was committed (a scheduler holds a job back before handing it to the
/// driver: drm_sched, imported traces), not committed yet otherwise (nothing queued),
/// committed but not submitted (host late), submitted but not started (a dependency if it
/// waited host-side, else GPU-side scheduling).
pub fn split_gap(g0: u64, g1: u64, commit: u64, submit: u64, waited: bool, wait_from: u64) -> Idle {
    // A START before the ring went idle (a damaged or out-of-order time): no gap to split.
    if g1 <= g0 {
        return Idle::default();
    }
    let clamp = |x: u64| if x == NONE { g1 } else { x.clamp(g0, g1) };
    let vis = clamp(submit);
    let com = if commit == NONE {
        vis
    } else {
        clamp(commit).min(vis)
    };
    let dep_from = if wait_from == NONE {
        com
    } else {
        clamp(wait_from).min(com)
    };
    let after = g1 - vis;
    Idle {
        none: dep_from - g0,
        host: vis - com,
        dep: (com - dep_from) + if waited { after } else { 0 },
        sched: if waited { 0 } else { after },
    }
}

/// Figures of one ring over the whole trace and the current interval.
#[derive(Clone, Debug, Default)]
pub struct RingUtil {
    pub busy: Busy,
    /// When the ring last became idle (NONE: never ran yet).
    pub idle_since: u64,
    pub idle: Idle,
    pub idle_iv: Idle,
    /// Jobs that ended (finally) in total and in the interval.
    pub ended: u64,
    pub ended_iv: u64,
    /// Time-weighted jobs outstanding: area (jobs x ns) up to `out_t`, and the maxima.
    out_area: u128,
    out_area_iv: u128,
    out_t: u64,
    out_now: u32,
    pub out_max: u32,
    pub out_max_iv: u32,
    /// Ring fill fraction at SUBMIT: maxima (NaN-free; 0 when unknown).
    pub fill_max_iv: f32,
    /// GPU-side dependency waits of jobs while they ran (SYNC windows without HOST).
    pub gpu_wait: u64,
}

impl RingUtil {
    pub fn new() -> RingUtil {
        RingUtil {
            idle_since: NONE,
            out_t: NONE,
            ..Default::default()
        }
    }

    /// Jobs outstanding changes to `n` at `t`.
    pub fn outstanding(&mut self, n: u32, t: u64) {
        if self.out_t != NONE && t > self.out_t {
            let a = self.out_now as u128 * (t - self.out_t) as u128;
            self.out_area += a;
            self.out_area_iv += a;
        }
        if self.out_t == NONE || t > self.out_t {
            self.out_t = t;
        }
        self.out_now = n;
        self.out_max = self.out_max.max(n);
        self.out_max_iv = self.out_max_iv.max(n);
    }

    /// Average jobs outstanding over `span` ns (time-weighted).
    pub fn out_avg(&self, span: u64) -> f64 {
        if span == 0 {
            0.0
        } else {
            self.out_area as f64 / span as f64
        }
    }

    pub fn gap(&mut self, g: &Idle) {
        self.idle.add(g);
        self.idle_iv.add(g);
    }

    /// Closes the interval [start, end) and returns its figures.
    pub fn close(&mut self, start: u64, end: u64) -> IntervalFigures {
        let busy = self.busy.close(start, end);
        self.outstanding(self.out_now, end);
        let f = IntervalFigures {
            busy,
            ended: self.ended_iv,
            out_area: self.out_area_iv,
            out_max: self.out_max_iv.max(self.out_now),
            fill_max: self.fill_max_iv,
            idle: self.idle_iv,
        };
        self.ended_iv = 0;
        self.out_area_iv = 0;
        self.out_max_iv = self.out_now;
        self.fill_max_iv = 0.0;
        self.idle_iv = Idle::default();
        f
    }
}

impl IntervalFigures {
    /// Idle time of an interval of `len` ns not explained by the host or a dependency:
    /// nothing was queued. (Causes are known when a gap ends and are counted in that
    /// interval; the rest of the interval's idle time is nothing queued.)
    pub fn idle_none(&self, len: u64) -> u64 {
        len.saturating_sub(self.busy)
            .saturating_sub(self.idle.host)
            .saturating_sub(self.idle.dep)
            .saturating_sub(self.idle.sched)
    }
}

/// One ring's figures for one interval.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntervalFigures {
    pub busy: u64,
    pub ended: u64,
    pub out_area: u128,
    pub out_max: u32,
    pub fill_max: f32,
    pub idle: Idle,
}

/// One `--interval` row: a ring over [start, end).
#[derive(Clone, Debug)]
pub struct IntervalRow {
    pub start: u64,
    pub end: u64,
    pub ring: u32,
    pub figures: IntervalFigures,
}

/// GPU-bound, host-bound or dependency-bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Gpu,
    Host,
    Dependency,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Gpu => "GPU-bound",
            Bound::Host => "host-bound",
            Bound::Dependency => "dependency-bound",
        }
    }
}

/// A ring's verdict from its busy time, its jobs' GPU-side dependency waits and its idle
/// causes over `span` ns: the largest of GPU time (own work: busy minus GPU-side waits,
/// plus idle with a job visible that the GPU did not start), dependency waits (GPU-side
/// plus idle waiting on a dependency) and host time (idle because the host was late or
/// submitted nothing).
pub fn verdict(busy: u64, gpu_wait: u64, idle: &Idle, span: u64) -> Bound {
    let idle_total = span.saturating_sub(busy);
    // Idle time not explained by a gap that closed (the tail, or before the first job) is
    // nothing queued: the host did not feed the ring.
    let host = idle
        .host
        .saturating_add(idle.none)
        .saturating_add(idle_total.saturating_sub(idle.sum()));
    let dep = gpu_wait.min(busy).saturating_add(idle.dep);
    let own = busy.saturating_sub(gpu_wait).saturating_add(idle.sched);
    if own >= dep && own >= host {
        Bound::Gpu
    } else if dep >= host {
        Bound::Dependency
    } else {
        Bound::Host
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_the_union_of_overlapping_jobs() {
        let mut b = Busy::default();
        b.start(10);
        b.start(15);
        assert!(!b.stop(20, 0));
        assert!(b.stop(30, 0));
        b.start(50);
        assert!(b.stop(60, 0));
        assert_eq!(b.total, 30);
    }

    #[test]
    fn an_idle_gap_splits_by_what_the_next_job_was_doing() {
        // Idle 100..200; committed at 130, submitted at 170, started at 200.
        let g = split_gap(100, 200, 130, 170, false, NONE);
        let want = Idle {
            none: 30,
            host: 40,
            dep: 0,
            sched: 30,
        };
        assert_eq!(g, want);
        let g = split_gap(100, 200, 130, 170, true, NONE);
        assert_eq!(
            g,
            Idle {
                dep: 30,
                sched: 0,
                ..want
            }
        );
        // Committed before the ring went idle: no "nothing queued" part.
        let g = split_gap(100, 200, 50, 120, false, NONE);
        assert_eq!((g.none, g.host, g.sched), (0, 20, 80));
        // Held back by a scheduler for a dependency from 110 until its hand-off at 190
        // (committed, submitted and started there, as an imported drm_sched job is): the
        // ring waited on the dependency, it was not left without work (to its START: the
        // job waited host-side).
        let g = split_gap(100, 200, 190, 190, true, 110);
        assert_eq!(
            g,
            Idle {
                none: 10,
                host: 0,
                dep: 90,
                sched: 0,
            }
        );
    }

    #[test]
    fn a_start_before_the_ring_went_idle_is_no_gap() {
        // A damaged time puts the START before the END that left the ring idle.
        assert_eq!(split_gap(200, 100, 150, 150, false, NONE), Idle::default());
        assert_eq!(split_gap(200, 200, NONE, NONE, true, 120), Idle::default());
    }

    #[test]
    fn verdicts_follow_the_largest_share() {
        let idle = Idle {
            host: 10,
            ..Idle::default()
        };
        assert_eq!(verdict(90, 0, &idle, 100), Bound::Gpu);
        assert_eq!(verdict(30, 0, &Idle { host: 60, ..idle }, 100), Bound::Host);
        assert_eq!(
            verdict(60, 40, &Idle { dep: 30, ..idle }, 100),
            Bound::Dependency
        );
    }
}
