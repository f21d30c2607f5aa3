//! Aggregates of tagged jobs: phase histograms per ring, per context and overall, tag shares,
//! and the worst blocking classes with sample jobs. Memory depends on the number of rings,
//! contexts and tags, not on the number of jobs.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::job::{Flags, Job, Tags, N_PHASES};
use crate::joiner::FxMap;

/// Statistics of one group of jobs (all, one ring, one context).
pub struct Group {
    pub jobs: u64,
    pub complete: u64,
    pub incomplete: u64,
    pub inferred: u64,
    pub no_irq: u64,
    pub errors: u64,
    pub tagged: u64,
    /// Phase histograms, complete once [`Group::settle`] has moved `bins` into them.
    hist: Vec<Histogram<u64>>,
    /// Counts recorded since the last settle, in the histograms' own buckets.
    bins: [Bins; N_PHASES],
    pub min: [u64; N_PHASES],
    pub max: [u64; N_PHASES],
    pub sum: [u64; N_PHASES],
    pub n: [u64; N_PHASES],
    pub tag_jobs: [u64; Tags::COUNT],
    pub tag_lost: [u64; Tags::COUNT],
    /// Sum and max of ring fill at SUBMIT (jobs with a known ring size) and of outstanding.
    pub fill_sum: f64,
    pub fill_n: u64,
    pub fill_max: f32,
    pub outstanding_sum: u64,
    pub outstanding_max: u32,
    pub batch_max: u32,
}

/// Significant digits of the phase histograms: 1% resolution keeps each histogram a few
/// KiB (they are written once per job per phase, and small ones stay in cache); reported
/// percentiles are clamped to the exact min and max.
const SIGFIG: u8 = 2;

/// Phases a job always has; the others (complete, gpu_wait, vm_fault) count only jobs that
/// had them, as btt prints only rows with N > 0. Bit i: phase i (submit_host, queue, exec, total).
const ALWAYS_MASK: u8 = 0b100_0111;

impl Default for Group {
    fn default() -> Self {
        Group {
            jobs: 0,
            complete: 0,
            incomplete: 0,
            inferred: 0,
            no_irq: 0,
            errors: 0,
            tagged: 0,
            // Auto-resizing: memory follows the largest value seen.
            hist: (0..N_PHASES)
                .map(|_| Histogram::new(SIGFIG).expect("valid sigfig"))
                .collect(),
            bins: Default::default(),
            min: [u64::MAX; N_PHASES],
            max: [0; N_PHASES],
            sum: [0; N_PHASES],
            n: [0; N_PHASES],
            tag_jobs: [0; Tags::COUNT],
            tag_lost: [0; Tags::COUNT],
            fill_sum: 0.0,
            fill_n: 0,
            fill_max: 0.0,
            outstanding_sum: 0,
            outstanding_max: 0,
            batch_max: 0,
        }
    }
}

impl Group {
    fn add(&mut self, job: &Job) {
        self.jobs += 1;
        if job.flags.has(Flags::ERROR) {
            self.errors += 1;
        }
        if job.flags.incomplete() {
            self.incomplete += 1;
            return;
        }
        self.complete += 1;
        if job.flags.has(Flags::INFERRED) {
            self.inferred += 1;
        }
        if job.flags.has(Flags::NO_IRQ) {
            self.no_irq += 1;
        }
        let v = job.phases.as_array();
        // The phases counted: measured, and always counted, or non-zero, or (complete) ended
        // by an IRQ. One mask, then only its bits are visited.
        let p = &job.phases;
        let mut have = job.measured
            & (ALWAYS_MASK
                | u8::from(p.complete > 0 || !job.flags.has(Flags::NO_IRQ)) << 3
                | u8::from(p.gpu_wait > 0) << 4
                | u8::from(p.vm_fault > 0) << 5);
        while have != 0 {
            let i = have.trailing_zeros() as usize;
            have &= have - 1;
            if !self.bins[i].record(v[i]) {
                let _ = self.hist[i].record(v[i]);
            }
            self.n[i] += 1;
            self.sum[i] = self.sum[i].saturating_add(v[i]);
            self.min[i] = self.min[i].min(v[i]);
            self.max[i] = self.max[i].max(v[i]);
        }
        if !job.tags.is_empty() {
            self.tagged += 1;
            for t in job.tags.iter() {
                self.tag_jobs[t] += 1;
                self.tag_lost[t] += job.lost_to(t);
            }
        }
        if job.fill.is_finite() {
            self.fill_sum += job.fill as f64;
            self.fill_n += 1;
            self.fill_max = self.fill_max.max(job.fill);
        }
        self.outstanding_sum += job.outstanding as u64;
        self.outstanding_max = self.outstanding_max.max(job.outstanding);
        self.batch_max = self.batch_max.max(job.batch);
    }

    /// Moves the counts of `bins` into the histograms (before they are read or merged).
    fn settle(&mut self) {
        for (b, h) in self.bins.iter_mut().zip(self.hist.iter_mut()) {
            b.drain_into(h);
        }
    }

    /// Adds another group's jobs to this one (`o` settled).
    pub fn merge(&mut self, o: &Group) {
        debug_assert!(o.bins.iter().all(Bins::is_empty));
        self.jobs += o.jobs;
        self.complete += o.complete;
        self.incomplete += o.incomplete;
        self.inferred += o.inferred;
        self.no_irq += o.no_irq;
        self.errors += o.errors;
        self.tagged += o.tagged;
        for i in 0..N_PHASES {
            let _ = self.hist[i].add(&o.hist[i]);
            self.min[i] = self.min[i].min(o.min[i]);
            self.max[i] = self.max[i].max(o.max[i]);
            self.sum[i] = self.sum[i].saturating_add(o.sum[i]);
            self.n[i] += o.n[i];
        }
        for t in 0..Tags::COUNT {
            self.tag_jobs[t] += o.tag_jobs[t];
            self.tag_lost[t] += o.tag_lost[t];
        }
        self.fill_sum += o.fill_sum;
        self.fill_n += o.fill_n;
        self.fill_max = self.fill_max.max(o.fill_max);
        self.outstanding_sum += o.outstanding_sum;
        self.outstanding_max = self.outstanding_max.max(o.outstanding_max);
        self.batch_max = self.batch_max.max(o.batch_max);
    }

    /// Quantile of a phase, clamped to the exact min and max (histogram buckets are 1 %
    /// wide, the extremes are exact).
    pub fn quantile(&self, phase: usize, q: f64) -> u64 {
        if self.n[phase] == 0 {
            return 0;
        }
        self.hist[phase]
            .value_at_quantile(q)
            .clamp(self.min[phase], self.max[phase])
    }

    pub fn avg(&self, phase: usize) -> u64 {
        self.sum[phase].checked_div(self.n[phase]).unwrap_or(0)
    }

    /// Share of all job time (sum of t_total) spent in a phase.
    pub fn share(&self, phase: usize) -> f64 {
        let total = self.sum[6];
        if total == 0 {
            0.0
        } else {
            self.sum[phase] as f64 / total as f64
        }
    }
}

/// Counts per bucket of a `Histogram::new(SIGFIG)` (2 significant digits, lowest value 1),
/// with the histogram's own bucket layout: recording a value is an index computation and an
/// increment, without the histogram's resize, overflow and min/max bookkeeping (a fifth of
/// the per-job cost before). [`Bins::drain_into`] records each bucket's count at once; every
/// figure the report reads (quantiles, count, bucket-equivalent min and max) is the same as
/// if the values had been recorded one by one.
#[derive(Default)]
struct Bins {
    counts: Vec<u64>,
    n: u64,
}

/// The histogram layout of 2 significant digits and lowest value 1: 256 sub-buckets, of
/// which the upper 128 are used past the first bucket (see hdrhistogram's `index_for`).
const HALF_MAG: u32 = 7;
const SUB_MASK: u64 = 255;
/// Values from here on go to the histogram directly (its last buckets and overflow rules).
const BINS_LIMIT: u64 = 1 << 62;

impl Bins {
    /// The histogram's bucket index of `v`.
    #[inline]
    fn index(v: u64) -> usize {
        let bucket = 56 - (v | SUB_MASK).leading_zeros();
        (((bucket + 1) << HALF_MAG) as u64 + (v >> bucket) - (1 << HALF_MAG)) as usize
    }

    /// The lowest value of bucket `i` (hdrhistogram's `value_for`).
    fn value(i: usize) -> u64 {
        let half = 1u64 << HALF_MAG;
        let bucket = (i >> HALF_MAG) as i64 - 1;
        let sub = (i as u64 & (half - 1)) + half;
        if bucket < 0 {
            sub - half
        } else {
            sub << bucket
        }
    }

    /// Counts `v`; false if it is too large for the bins (record it in the histogram).
    #[inline]
    fn record(&mut self, v: u64) -> bool {
        if v >= BINS_LIMIT {
            return false;
        }
        let i = Self::index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.n += 1;
        true
    }

    fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Records every bucket's count into `h` and empties the bins.
    fn drain_into(&mut self, h: &mut Histogram<u64>) {
        if self.n == 0 {
            return;
        }
        for (i, c) in self.counts.iter_mut().enumerate() {
            if *c > 0 {
                let _ = h.record_n(Self::value(i), *c);
                *c = 0;
            }
        }
        self.n = 0;
    }
}

/// One blocking class on one (ctx, ring), for `--top`.
pub struct TopEntry<'a> {
    pub tag: usize,
    pub ctx: u32,
    pub ring: u32,
    pub jobs: u64,
    pub lost: u64,
    /// The worst jobs of the entry, by time lost, worst first.
    pub samples: &'a [Job],
}

/// Jobs are recorded once, into the group of their (ctx, ring); the per-ring, per-context
/// and overall groups are merged from those by [`Summary::finalize`] (a third of the
/// histogram work on the hot path).
pub struct Summary {
    /// (ctx, ring) -> index into `groups`, in order (for the report), and the same as a
    /// hash map for the lookup of every job (jobs of a few classes interleave).
    leaves: BTreeMap<(u32, u32), usize>,
    index: FxMap<(u32, u32), usize>,
    groups: Vec<Group>,
    pub all: Group,
    pub rings: BTreeMap<u32, Group>,
    pub ctxs: BTreeMap<u32, Group>,
    /// Per group in `groups`, per tag: the worst jobs, for `--top` (its counts and time lost
    /// are the group's `tag_jobs` and `tag_lost`).
    worst: Vec<[Vec<Job>; Tags::COUNT]>,
    samples: usize,
    /// Per process and ring (the report's Per Process table).
    pub processes: crate::processes::Processes,
}

impl Summary {
    pub fn new(samples: usize) -> Summary {
        Summary {
            leaves: BTreeMap::new(),
            index: FxMap::default(),
            groups: Vec::new(),
            all: Group::default(),
            rings: BTreeMap::new(),
            ctxs: BTreeMap::new(),
            worst: Vec::new(),
            samples,
            processes: Default::default(),
        }
    }

    /// Sample jobs kept per `--top` entry.
    pub fn samples(&self) -> usize {
        self.samples
    }

    pub fn add(&mut self, job: &Job) {
        let leaf = (job.key.ctx, job.key.ring);
        let n = self.groups.len();
        let i = *self.index.entry(leaf).or_insert(n);
        if i == n {
            self.leaves.insert(leaf, i);
            self.groups.push(Group::default());
            self.worst.push(Default::default());
        }
        self.groups[i].add(job);
        self.processes.add(job);
        if job.flags.incomplete() || self.samples == 0 || job.tags.is_empty() {
            return;
        }
        for t in job.tags.iter() {
            // Keep the worst few, worst first (ties: earliest first).
            let lost = job.lost_to(t);
            let worst = &mut self.worst[i][t];
            // The list is full and sorted worst first: most jobs do not beat its last entry.
            if worst.len() >= self.samples && worst.last().is_some_and(|s| s.lost_to(t) >= lost) {
                continue;
            }
            let pos = worst
                .iter()
                .position(|s| s.lost_to(t) < lost)
                .unwrap_or(worst.len());
            if pos < self.samples {
                worst.insert(pos, job.clone());
                worst.truncate(self.samples);
            }
        }
    }

    /// Builds the per-ring, per-context and overall groups (call once, after the last job).
    pub fn finalize(&mut self) {
        self.all = Group::default();
        self.rings.clear();
        self.ctxs.clear();
        for g in &mut self.groups {
            g.settle();
        }
        for (&(ctx, ring), &i) in &self.leaves {
            let (ctx, ring, g) = (&ctx, &ring, &self.groups[i]);
            self.all.merge(g);
            self.rings.entry(*ring).or_default().merge(g);
            self.ctxs.entry(*ctx).or_default().merge(g);
        }
    }

    /// Blocking classes per (ctx, ring), heaviest first.
    pub fn top(&self, n: usize) -> Vec<TopEntry<'_>> {
        let mut v = Vec::new();
        for (&(ctx, ring), &i) in &self.leaves {
            let g = &self.groups[i];
            for tag in (0..Tags::COUNT).filter(|&t| g.tag_jobs[t] > 0) {
                let (jobs, lost) = (g.tag_jobs[tag], g.tag_lost[tag]);
                let samples = &self.worst[i][tag][..];
                v.push(TopEntry {
                    tag,
                    ctx,
                    ring,
                    jobs,
                    lost,
                    samples,
                });
            }
        }
        v.sort_by(|a, b| {
            b.lost
                .cmp(&a.lost)
                .then(b.jobs.cmp(&a.jobs))
                .then((a.tag, a.ctx, a.ring).cmp(&(b.tag, b.ctx, b.ring)))
        });
        v.truncate(n);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bins must give the histogram the report would have had from recording every value:
    /// same quantiles, count, min and max, on values across all bucket sizes.
    #[test]
    fn bins_give_the_same_histogram_as_recording_each_value() {
        let mut direct = Histogram::<u64>::new(SIGFIG).unwrap();
        let mut via = Histogram::<u64>::new(SIGFIG).unwrap();
        let mut bins = Bins::default();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for k in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Values spread over every magnitude from 0 to 2^63, plus the bucket edges.
            let v = match k % 4 {
                0 => x >> (x % 64),
                1 => (1u64 << (k % 63)) - (k & 1),
                2 => k,
                _ => x >> 1,
            };
            let _ = direct.record(v);
            if !bins.record(v) {
                let _ = via.record(v);
            }
            if k % 50_000 == 0 {
                bins.drain_into(&mut via);
            }
        }
        bins.drain_into(&mut via);
        assert!(bins.is_empty());
        assert_eq!(direct.len(), via.len());
        assert_eq!((direct.min(), direct.max()), (via.min(), via.max()));
        for q in [0.0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                direct.value_at_quantile(q),
                via.value_at_quantile(q),
                "q {q}"
            );
        }
        for v in [0u64, 1, 255, 256, 257, 511, 512, 1 << 20, (1 << 40) + 12345] {
            assert_eq!(
                Bins::value(Bins::index(v)),
                direct.lowest_equivalent(v),
                "v {v}"
            );
        }
    }
}
