//! Tags each finished job with the blocking classes of JOBS.md §5.
//!
//! All rules but exec-tail look at the job alone. exec-tail needs the P90 of the job's class
//! (same ctx and ring) and the input may be a live pipe, so a second pass is not possible:
//! the classifier keeps a per-class histogram of own-execution times over every job seen so
//! far and holds the newest `tail-window` jobs back in a FIFO before tagging them. A job is
//! therefore judged against at least `tail-window` later-or-earlier jobs of the stream, and
//! memory stays flat (one small histogram per class plus the fixed window).

use hdrhistogram::Histogram;

use crate::job::{Flags, Job, Tags, NONE};
use crate::joiner::FxMap;
use crate::rules::Rules;

struct ClassHist {
    hist: Histogram<u64>,
    /// Cached quantile and the count it was computed at.
    q: u64,
    q_at: u64,
}

impl ClassHist {
    fn quantile(&mut self, quantile: f64) -> u64 {
        let n = self.hist.len();
        // Recomputing is O(buckets); refresh while the class is small, then every 1/32 growth.
        if self.q_at == 0 || n < 256 || n >= self.q_at + self.q_at / 32 {
            self.q = self.hist.value_at_quantile(quantile);
            self.q_at = n;
        }
        self.q
    }
}

pub struct Classifier {
    rules: Rules,
    classes: FxMap<(u32, u32), ClassHist>,
    /// The jobs held back, oldest at `head`: a ring of `window_len` slots, filled in place
    /// and emitted by reference (a `Job` is a few hundred bytes; no move per hop).
    window: Vec<Job>,
    head: usize,
    held: usize,
    window_len: usize,
}

impl Classifier {
    pub fn new(rules: Rules) -> Classifier {
        let window_len = rules.tail_window as usize;
        Classifier {
            rules,
            classes: FxMap::default(),
            window: Vec::with_capacity(window_len.min(1 << 16)),
            head: 0,
            held: 0,
            window_len,
        }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Takes a finished job (copied into the window); emits jobs (tagged) as they leave
    /// the window.
    pub fn push(&mut self, job: &Job, emit: &mut impl FnMut(&mut Job)) {
        // A class's reference is measured execution: an inferred START is not a measurement.
        if !job.flags.incomplete() && judges_start(job) {
            let h = self
                .classes
                .entry((job.key.ctx, job.key.ring))
                .or_insert_with(|| ClassHist {
                    // Two significant digits: 1% is plenty for a tail threshold.
                    hist: Histogram::new(2).expect("valid sigfig"),
                    q: 0,
                    q_at: 0,
                });
            // Auto-resizing histogram: `record` grows it (saturating_record would clamp).
            let _ = h.hist.record(job.exec_own().max(1));
        }
        if self.window_len == 0 {
            let mut j = job.clone();
            classify(&self.rules, &mut self.classes, &mut j);
            emit(&mut j);
            return;
        }
        if self.held == self.window_len {
            // Full: the oldest leaves, and its slot takes the new job.
            let old = &mut self.window[self.head];
            classify(&self.rules, &mut self.classes, old);
            emit(old);
            old.clone_from(job);
            self.head = (self.head + 1) % self.window_len;
            return;
        }
        let tail = (self.head + self.held) % self.window_len;
        if tail == self.window.len() {
            self.window.push(job.clone());
        } else {
            self.window[tail].clone_from(job);
        }
        self.held += 1;
    }

    /// The jobs held back, oldest first.
    fn held(&self) -> impl Iterator<Item = &Job> {
        (0..self.held).map(|i| &self.window[(self.head + i) % self.window_len])
    }

    /// Earliest first time of the jobs held back ([`NONE`] if none): nothing the
    /// classifier emits later starts before it (the timeline exports' watermark).
    pub fn oldest(&self) -> u64 {
        self.held().map(Job::first_time).min().unwrap_or(NONE)
    }

    /// End of input: tags and emits what is still held back.
    pub fn finish(&mut self, emit: &mut impl FnMut(&mut Job)) {
        while self.held > 0 {
            let j = &mut self.window[self.head];
            classify(&self.rules, &mut self.classes, j);
            emit(j);
            self.head = (self.head + 1) % self.window_len;
            self.held -= 1;
        }
        self.head = 0;
        self.window.clear();
    }
}

/// Whether the rules that depend on where START falls (queue-wait: the queue phase ends
/// there; exec-tail: exec begins there) can judge `job`: its START was recorded, not inferred
/// as max(SUBMIT, previous END on the ring) by the kernel, an importer or the joiner
/// (JOBS.md §5). An inferred split is the inference's, not the job's.
pub fn judges_start(job: &Job) -> bool {
    !job.flags.has(Flags::INFERRED)
}

/// Tags `job` by the rules; `classes` gives the exec-tail reference of its class. A rule
/// whose phase the recording did not measure for the job (shown `-`) does not fire on the
/// 0 in its place.
fn classify(r: &Rules, classes: &mut FxMap<(u32, u32), ClassHist>, job: &mut Job) {
    if job.flags.incomplete() {
        return;
    }
    let p = &job.phases;
    // Without COMMIT in the recording, the job's life is measured from SUBMIT.
    let total = if job.measured(6) {
        p.total
    } else {
        p.queue + p.exec + p.complete
    } as f64;
    let us = |v: f64| v * 1000.0;
    let mut tags = 0u8;
    let start_known = judges_start(job);
    if job.measured(0)
        && p.submit_host as f64 > r.host_share * total
        && p.submit_host as f64 > us(r.host_min_us)
    {
        tags |= Tags::HOST_SUBMIT;
    }
    // Waiting for a dependency on the host is dependency wait, not ring congestion.
    let congested = p.queue.saturating_sub(job.host_wait) as f64;
    let busy_ring = (job.fill.is_finite() && job.fill as f64 >= r.queue_fill)
        || job.outstanding as f64 >= r.queue_outstanding;
    if start_known
        && job.measured(1)
        && congested > r.queue_share * total
        && congested > us(r.queue_min_us)
        && busy_ring
    {
        tags |= Tags::QUEUE_WAIT;
    }
    let class = (start_known && job.measured(2))
        .then(|| classes.get_mut(&(job.key.ctx, job.key.ring)))
        .flatten();
    if let Some(h) = class {
        if h.hist.len() as f64 >= r.tail_min_jobs.max(1.0) {
            let q = h.quantile(r.tail_quantile.clamp(0.0, 1.0));
            job.class_ref = q;
            let gpu_wait = p.gpu_wait.saturating_sub(job.host_wait) as f64;
            if job.exec_own() as f64 > r.tail_factor * q as f64
                && gpu_wait <= r.tail_max_wait * p.exec as f64
            {
                tags |= Tags::EXEC_TAIL;
            }
        }
    }
    if job.measured(4)
        && ((p.gpu_wait > 0 && p.gpu_wait as f64 > r.dep_share * total)
            || (r.dep_segments > 0.0 && job.sync_segments as f64 >= r.dep_segments))
    {
        tags |= Tags::DEP_WAIT;
    }
    if job.measured(5) && r.fault_min > 0.0 && job.faults as f64 >= r.fault_min {
        tags |= Tags::VM_FAULT;
    }
    if r.preempt_min > 0.0
        && job.preempts as f64 >= r.preempt_min
        && job.switches as f64 >= r.preempt_switches
    {
        tags |= Tags::PREEMPT_THRASH;
    }
    job.tags = Tags(tags);
}
