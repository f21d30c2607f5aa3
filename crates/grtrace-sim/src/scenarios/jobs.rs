//! The report workloads (owned by grtreport): a job-level generator with exact times and
//! the scenarios built on it, each labelling the jobs a report should tag; `frames` below.

use grtrace_format::abi::eflag;
use grtrace_format::builder::{Builder, Record, RecordMut};
use grtrace_format::{Body, Event, RingNote, Stamp};

use crate::model::{JobName, Rng};

pub(super) mod frames;

/// A workload and what a report should say about each of its jobs.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Records in time order (`seq` is ignored: the simulated kernel numbers records).
    pub records: Vec<(Stamp, Body<'static>)>,
    /// The jobs and what a report should say of them.
    pub truth: Vec<TruthJob>,
}

/// One job (named by ctx, ring, seqno) and its labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruthJob {
    /// Context id.
    pub ctx: u32,
    /// Ring id.
    pub ring: u32,
    /// Fence seqno.
    pub seqno: u64,
    /// Labels a report should give it (blocker classes).
    pub tags: Vec<&'static str>,
    /// The job that blocked it, (ctx, ring, seqno), where the scenario knows one: the
    /// owner of the fence it waited for, or the job ahead on its ring that executed longest
    /// while it queued (for queue-wait jobs). `None` also for waits on foreign fences.
    pub blocker: Option<(u32, u32, u64)>,
}

// ---------------------------------------------------------------------------------------------
// Blocking-class scenarios (owned by grtreport). A small job-level generator with exact times:
// each ring runs its jobs FIFO and, in the healthy baseline, a job arrives only after the ring
// is idle, so nothing queues, no submission is slow, execution times are tight (150-250 µs per
// job), a few jobs have one short benign SYNC window and context switches are not preemptions.
// Each scenario injects one blocking class (grtreport's tags, crates/grtreport/JOBS.md §5)
// into about 5 % of the jobs and labels
// exactly those jobs; benign near-misses (just under a threshold) are mixed in so a rule that
// only looks for "some" of an event would fail. Tags use grtreport's names.

const US: u64 = 1_000;
const REPORT_RINGS: [(u32, u32, &str); 3] = [(0, 1, "gfx"), (1, 2, "comp"), (2, 3, "copy")];
const REPORT_CTXS: u32 = 6;
const IRQ_CPU: u32 = 0;
const SCHED_PID: u32 = 2500;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Inject {
    None,
    Host,
    Queue,
    Tail,
    Dep,
    Fault,
    Preempt,
}

struct ReportGen {
    rng: Rng,
    /// The records; the simulated kernel numbers them as it writes them.
    b: Builder,
    truth: Vec<TruthJob>,
}

impl ReportGen {
    fn new(seed: u64) -> ReportGen {
        let mut g = ReportGen {
            rng: Rng::new(seed ^ 0x7265_706f_7274),
            b: Builder::unnumbered(),
            truth: Vec::new(),
        };
        for (ring, class, name) in REPORT_RINGS {
            g.b.on(0)
                .pid(0)
                .record(Body::Ring(RingNote {
                    ring,
                    engine_class: class,
                    size: 1 << 20,
                    unit: grtrace_format::abi::RING_UNIT_BYTES,
                    flags: 0,
                    name: name.as_bytes(),
                }))
                .at(0);
        }
        for c in 1..=REPORT_CTXS {
            g.context(c, b"gpu-client");
        }
        g
    }

    /// Context `c`: its process (pid 2000 + c, on CPU c % 2) and its CTX_CREATE at time 0.
    fn context(&mut self, c: u32, comm: &'static [u8]) {
        self.b
            .on(c % 2)
            .pid(2000 + c)
            .record(Body::Process { comm })
            .at(0);
        self.ev(c % 2, 2000 + c, Event::CTX_CREATE, 0).job(c, 0, 0);
    }

    /// An event `code` at `t`, written by CPU `cpu` for thread `pid`; its flags, job and
    /// arguments are the caller's to add.
    fn ev(&mut self, cpu: u32, pid: u32, code: Event, t: u64) -> RecordMut<'_> {
        self.b.on(cpu).pid(pid).event(code).at(t)
    }

    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.below(hi - lo + 1)
    }

    /// Generates `jobs` jobs spread over the rings; `pick` chooses what to inject per job.
    fn run(mut self, jobs: usize, mut pick: impl FnMut(&mut Rng) -> Inject) -> Scenario {
        let mut free_at = [0u64; 3];
        let mut next_arrival = [1_000 * US, 1_300 * US, 1_600 * US];
        let mut seqno = [1u64; 3];
        let mut last_ctx = [0u32; 3];
        let mut made = 0usize;
        let mut k = 0usize;
        while made < jobs {
            let r = k % 3;
            k += 1;
            let ring = REPORT_RINGS[r].0;
            let what = pick(&mut self.rng);
            // Queue wait: a burst of jobs made visible by one SUBMIT; the ones far enough back
            // wait for the ones ahead.
            let burst = if what == Inject::Queue {
                6.min(jobs - made)
            } else {
                1
            };
            let t0 = next_arrival[r].max(free_at[r] + 20 * US);
            let mut commits = Vec::new();
            for b in 0..burst {
                let ctx = 1 + (r as u32) + 3 * (self.rng.below(2) as u32);
                commits.push((ctx, seqno[r], t0 + b as u64 * 10 * US));
                seqno[r] += 1;
            }
            let last = *commits.last().expect("burst");
            let mut submit = last.2 + self.between(8 * US, 25 * US);
            if what == Inject::Host {
                submit += self.between(400 * US, 900 * US);
            } else if burst == 1 && self.rng.below(20) == 0 {
                // Near miss: slow-ish submission under the 200 µs floor.
                submit += self.between(80 * US, 150 * US);
            }
            for (b, &(ctx, seq, commit)) in commits.iter().enumerate() {
                let pid = 2000 + ctx;
                let cpu = ctx % 2;
                let fill = (4096 * (b as u32 + 1)) % (1 << 20);
                self.ev(cpu, pid, Event::ALLOC, commit)
                    .flags(1)
                    .job(ctx, ring, seq)
                    .args(0, 0, fill, 0);
                self.ev(cpu, pid, Event::COMMIT, commit + 500)
                    .flags(1)
                    .job(ctx, ring, seq)
                    .args(0, 0, fill, 0);
                if b + 1 == burst {
                    self.ev(cpu, pid, Event::SUBMIT, submit)
                        .flags(eflag::FENCED)
                        .job(ctx, ring, seq)
                        .args(0, 256, fill, burst as u32);
                }
                let commit = commit + 500;
                let mut start = (submit + self.between(10 * US, 30 * US)).max(free_at[r] + 5 * US);
                let mut tags: Vec<&'static str> = Vec::new();
                if last_ctx[r] != ctx {
                    self.ev(cpu, SCHED_PID, Event::CTX_SWITCH, start)
                        .job(ctx, ring, 0)
                        .args(last_ctx[r] as u64, 0, 0, 0);
                    last_ctx[r] = ctx;
                    start += 1;
                }
                self.ev(cpu, SCHED_PID, Event::START, start)
                    .flags(1)
                    .job(ctx, ring, seq);
                let mut own = if burst > 1 {
                    self.between(190 * US, 210 * US)
                } else {
                    self.between(150 * US, 250 * US)
                };
                let mut t = start;
                match what {
                    Inject::Tail => {
                        own = self.between(600 * US, 1000 * US);
                        tags.push("exec-tail");
                    }
                    Inject::Dep => {
                        // One long wait, or several short ones.
                        let segs = if self.rng.below(2) == 0 {
                            1
                        } else {
                            3 + self.rng.below(2)
                        };
                        for _ in 0..segs {
                            t += self.between(5 * US, 15 * US);
                            let w = if segs == 1 {
                                self.between(300 * US, 600 * US)
                            } else {
                                self.between(20 * US, 40 * US)
                            };
                            self.ev(IRQ_CPU, 0, Event::SYNC_ENTER, t)
                                .job(ctx, ring, seq);
                            t += w;
                            self.ev(IRQ_CPU, 0, Event::SYNC_EXIT, t).job(ctx, ring, seq);
                        }
                        tags.push("dep-wait");
                    }
                    Inject::Fault => {
                        t += self.between(20 * US, 60 * US);
                        let addr = 0x7f00_0000_0000 + self.rng.below(1 << 30);
                        self.ev(IRQ_CPU, 0, Event::VM_FAULT, t)
                            .job(ctx, ring, 0)
                            .args(addr, 0, 1, 0);
                        t += self.between(100 * US, 300 * US);
                        self.ev(IRQ_CPU, 0, Event::VM_RETRY, t)
                            .job(ctx, ring, 0)
                            .args(addr, 0, 0, 0);
                        tags.push("vm-fault");
                    }
                    Inject::Preempt => {
                        let n = 2 + self.rng.below(2);
                        for _ in 0..n {
                            t += self.between(30 * US, 60 * US);
                            own = own.saturating_sub(45 * US).max(30 * US);
                            self.preempt_once(cpu, ctx, ring, seq, &mut t);
                        }
                        tags.push("preempt-thrash");
                    }
                    Inject::None | Inject::Host | Inject::Queue => {
                        if what == Inject::None && self.rng.below(8) == 0 {
                            // Benign: one short dependency wait.
                            t += self.between(10 * US, 40 * US);
                            self.ev(IRQ_CPU, 0, Event::SYNC_ENTER, t)
                                .job(ctx, ring, seq);
                            t += self.between(5 * US, 30 * US);
                            self.ev(IRQ_CPU, 0, Event::SYNC_EXIT, t).job(ctx, ring, seq);
                        } else if what == Inject::None && self.rng.below(40) == 0 {
                            // Benign: preempted once.
                            t += self.between(30 * US, 60 * US);
                            self.preempt_once(cpu, ctx, ring, seq, &mut t);
                        }
                    }
                }
                let end = t.max(start) + own;
                self.ev(IRQ_CPU, 0, Event::END, end)
                    .flags(1)
                    .job(ctx, ring, seq);
                let irq = end + self.between(4 * US, 12 * US);
                self.ev(IRQ_CPU, 0, Event::IRQ, irq)
                    .job(ctx, ring, seq)
                    .args(seq, 0, 0, 0);
                self.ev(IRQ_CPU, 0, Event::SIGNAL, irq + 2 * US)
                    .flags(1)
                    .job(ctx, ring, seq);
                free_at[r] = end;
                if what == Inject::Host {
                    tags.push("host-submit");
                }
                if what == Inject::Queue {
                    // Ground truth from the generator's own timeline: waited behind the jobs
                    // ahead of it in the burst for more than half its life and over 500 µs.
                    let queue = start - submit;
                    let total = irq - commit;
                    if queue > 500 * US && queue * 2 > total {
                        tags.push("queue-wait");
                    }
                }
                self.truth.push(TruthJob {
                    ctx,
                    ring,
                    seqno: seq,
                    tags,
                    blocker: None,
                });
            }
            made += burst;
            next_arrival[r] = t0 + self.between(700 * US, 1500 * US);
        }
        Scenario {
            records: by_time(self.b),
            truth: self.truth,
        }
    }

    /// The job is taken off the GPU for another context and comes back.
    fn preempt_once(&mut self, cpu: u32, ctx: u32, ring: u32, seq: u64, t: &mut u64) {
        let other = if ctx > 3 { ctx - 3 } else { ctx + 3 };
        self.ev(IRQ_CPU, 0, Event::END, *t)
            .flags(eflag::PREEMPT)
            .job(ctx, ring, seq);
        self.ev(cpu, SCHED_PID, Event::CTX_SWITCH, *t)
            .flags(eflag::PREEMPT)
            .job(other, ring, 0)
            .args(ctx as u64, 0, 0, 0);
        *t += self.between(100 * US, 300 * US);
        self.ev(cpu, SCHED_PID, Event::CTX_SWITCH, *t)
            .job(ctx, ring, 0)
            .args(other as u64, 0, 0, 0);
        *t += 1;
        self.ev(cpu, SCHED_PID, Event::START, *t)
            .flags(1)
            .job(ctx, ring, seq);
    }
}

/// A scenario's records in time order (stable: records of one time keep their order).
fn by_time(b: Builder) -> Vec<Record> {
    let mut records = b.into_records();
    records.sort_by_key(|(s, _)| s.time_ns);
    records
}

/// Injects `what` into about 1 job in `every`.
pub(super) fn inject_every(seed: u64, jobs: usize, what: Inject, every: u64) -> Scenario {
    ReportGen::new(seed).run(jobs, |rng| {
        if rng.below(every) == 0 {
            what
        } else {
            Inject::None
        }
    })
}

/// Healthy jobs only (no queueing by construction): every truth is untagged.
pub(super) fn report_clean(seed: u64, jobs: usize) -> Scenario {
    ReportGen::new(seed).run(jobs, |_| Inject::None)
}
/// Every class at once, each on about 2 % of the jobs.
pub(super) fn report_mixed(seed: u64, jobs: usize) -> Scenario {
    ReportGen::new(seed).run(jobs, |rng| match rng.below(60) {
        0 => Inject::Host,
        1 => Inject::Queue,
        2 => Inject::Tail,
        3 => Inject::Dep,
        4 => Inject::Fault,
        5 => Inject::Preempt,
        _ => Inject::None,
    })
}

// ---------------------------------------------------------------------------------------------
// Who blocked whom (owned by grtreport's attribution). Groups of jobs, one group at a time on
// idle rings, each with an exact timeline and its true blocker:
// * cross-ring dependency: a long job of a "long-runner" context (7 or 8) on one ring, and a job
//   of another context on another ring that waits (SYNC_ENTER..SYNC_EXIT on the long job's
//   fence) until the long job's fence signals;
// * chain: C runs long on ring 2; B on ring 1 waits for C; W on ring 0 waits for B (W and B
//   share a context half of the time: a same-context, cross-ring dependency);
// * long job ahead: a long job, then a burst of three jobs made visible by one SUBMIT that
//   queue behind it: each one's true blocker is the long job (it executed longest while they
//   waited);
// * foreign fence: a wait on a fence no job of the trace owns (a CPU-side fence);
// * a lone healthy job.
// Long runners have their own contexts so their class (ctx, ring) is uniformly long and no
// exec-tail is called on them. Fences are (100 + ring, seqno), named by START/END/SIGNAL.

/// One job of a dependency group, before its events are written.
struct Planned {
    ctx: u32,
    ring: u32,
    seq: u64,
    commit: u64,
    submit: u64,
    /// Jobs made visible by its SUBMIT (0: no SUBMIT of its own, part of a later burst).
    visible: u32,
    start: u64,
    /// SYNC window and the awaited fence.
    wait: Option<(u64, u64, (u64, u64))>,
    end: u64,
}

impl Planned {
    fn irq(&self) -> u64 {
        self.end + 8 * US
    }
    fn signal(&self) -> u64 {
        self.irq() + 2 * US
    }
    fn fence(&self) -> (u64, u64) {
        (fence_ctx(self.ring), self.seq)
    }
    /// A wait for this job's fence until 3 µs after it signals (for [`ReportGen::plan`]).
    fn awaited(&self) -> Option<(u64, (u64, u64))> {
        Some((self.signal() + 3 * US, self.fence()))
    }
}

fn fence_ctx(ring: u32) -> u64 {
    100 + ring as u64
}

impl ReportGen {
    fn write(&mut self, j: &Planned) {
        let (cpu, pid) = (j.ctx % 2, 2000 + j.ctx);
        let f = fence_ctx(j.ring);
        let (ctx, ring, seq) = (j.ctx, j.ring, j.seq);
        let fenced = eflag::FENCED;
        self.ev(cpu, pid, Event::COMMIT, j.commit)
            .flags(fenced)
            .job(ctx, ring, seq)
            .args(0, 0, 4096, 0);
        if j.visible > 0 {
            self.ev(cpu, pid, Event::SUBMIT, j.submit)
                .flags(fenced)
                .job(ctx, ring, seq)
                .args(0, 256, 4096 * j.visible, j.visible);
        }
        self.ev(cpu, SCHED_PID, Event::START, j.start)
            .flags(fenced)
            .job(ctx, ring, seq)
            .args(f, 0, 0, 0);
        if let Some((enter, exit, fence)) = j.wait {
            for (t, code) in [(enter, Event::SYNC_ENTER), (exit, Event::SYNC_EXIT)] {
                self.ev(IRQ_CPU, 0, code, t)
                    .job(ctx, ring, seq)
                    .args(fence.0, fence.1, 0, 0);
            }
        }
        self.ev(IRQ_CPU, 0, Event::END, j.end)
            .flags(fenced)
            .job(ctx, ring, seq)
            .args(f, 0, 0, 0);
        self.ev(IRQ_CPU, 0, Event::IRQ, j.irq())
            .job(ctx, ring, seq)
            .args(seq, 0, 0, 0);
        self.ev(IRQ_CPU, 0, Event::SIGNAL, j.signal())
            .flags(fenced)
            .job(ctx, ring, seq)
            .args(f, seq, 0, 0);
    }

    /// A client context, 1 to [`REPORT_CTXS`].
    fn client(&mut self) -> u32 {
        1 + self.rng.below(REPORT_CTXS as u64) as u32
    }

    /// Three short jobs of clients on `ring`, committed 10 µs apart from `t + 100 µs` and
    /// made visible together by the third one's SUBMIT at `t + 150 µs`, queued behind a job
    /// that ends at `free`: each starts 5 µs after the one ahead of it ends.
    fn burst_behind(&mut self, seqno: &mut [u64; 3], ring: u32, t: u64, free: u64) -> [Planned; 3] {
        let mut free = free;
        std::array::from_fn(|i| {
            let (own, ctx) = (self.between(150 * US, 250 * US), self.client());
            let mut j = self.plan(
                seqno,
                ctx,
                ring,
                t + 100 * US + i as u64 * 10 * US,
                own,
                None,
            );
            j.submit = t + 150 * US;
            j.visible = if i == 2 { 3 } else { 0 };
            j.start = free + 5 * US;
            j.end = j.start + own;
            free = j.end;
            j
        })
    }

    /// A job of context `ctx` on `ring` committed at `t`, submitted alone, started 15 µs
    /// later, running `own` ns after an optional wait until `wait_until` on `fence`.
    fn plan(
        &mut self,
        seqno: &mut [u64; 3],
        ctx: u32,
        ring: u32,
        t: u64,
        own: u64,
        wait: Option<(u64, (u64, u64))>,
    ) -> Planned {
        let seq = seqno[ring as usize];
        seqno[ring as usize] += 1;
        let start = t + 25 * US;
        let (wait, run_from) = match wait {
            Some((until, fence)) => {
                let enter = start + 5 * US;
                (
                    Some((enter, until.max(enter + US), fence)),
                    until.max(enter + US),
                )
            }
            None => (None, start),
        };
        Planned {
            ctx,
            ring,
            seq,
            commit: t,
            submit: t + 10 * US,
            visible: 1,
            start,
            wait,
            end: run_from + own,
        }
    }
}

pub(super) fn dep_chain(seed: u64, jobs: usize) -> Scenario {
    let mut g = ReportGen::new(seed);
    for c in [7, 8] {
        g.context(c, b"long-runner");
    }
    let mut seqno = [1u64; 3];
    let mut t = 1_000 * US;
    let mut made = 0usize;
    while made < jobs {
        let left = jobs - made;
        let mut group: Vec<(Planned, Vec<&'static str>, Option<JobName>)> = Vec::new();
        let kind = g.rng.below(10);
        let name = |p: &Planned| Some((p.ctx, p.ring, p.seq));
        if kind < 3 && left >= 2 {
            // Cross-ring, cross-context dependency.
            let rb = g.rng.below(3) as u32;
            let rw = (rb + 1 + g.rng.below(2) as u32) % 3;
            let long = g.between(500 * US, 900 * US);
            let b = g.plan(&mut seqno, 7 + rb % 2, rb, t, long, None);
            let own = g.between(150 * US, 250 * US);
            let (ctx, wt) = (g.client(), t + g.between(20 * US, 60 * US));
            let w = g.plan(&mut seqno, ctx, rw, wt, own, b.awaited());
            let bn = name(&b);
            group.push((b, vec![], None));
            group.push((w, vec!["dep-wait"], bn));
        } else if kind < 5 && left >= 3 {
            // Chain W -> B -> C across the three rings.
            let c = g.between(600 * US, 900 * US);
            let c = g.plan(&mut seqno, 8, 2, t, c, None);
            let (bctx, own) = (g.client(), g.between(150 * US, 250 * US));
            let b = g.plan(&mut seqno, bctx, 1, t + 30 * US, own, c.awaited());
            let wctx = if g.rng.below(2) == 0 {
                bctx
            } else {
                g.client()
            };
            let own = g.between(150 * US, 250 * US);
            let w = g.plan(&mut seqno, wctx, 0, t + 60 * US, own, b.awaited());
            let (cn, bn) = (name(&c), name(&b));
            group.push((c, vec![], None));
            group.push((b, vec!["dep-wait"], cn));
            group.push((w, vec!["dep-wait"], bn));
        } else if kind < 7 && left >= 4 {
            // A long job ahead, then a burst that queues behind it.
            let r = g.rng.below(3) as u32;
            let long = g.between(1_200 * US, 2_000 * US);
            let l = g.plan(&mut seqno, 7 + r % 2, r, t, long, None);
            let (l_end, ln) = (l.end, name(&l));
            group.push((l, vec![], None));
            for j in g.burst_behind(&mut seqno, r, t, l_end) {
                group.push((j, vec!["queue-wait"], ln));
            }
        } else if kind < 8 {
            // Waits on a CPU-side fence no job owns.
            let own = g.between(150 * US, 250 * US);
            let until = t + g.between(400 * US, 700 * US);
            let fence = (999, g.rng.below(1 << 20));
            let (ctx, ring) = (g.client(), g.rng.below(3) as u32);
            let w = g.plan(&mut seqno, ctx, ring, t, own, Some((until, fence)));
            group.push((w, vec!["dep-wait"], None));
        } else {
            let own = g.between(150 * US, 250 * US);
            let (ctx, ring) = (g.client(), g.rng.below(3) as u32);
            let j = g.plan(&mut seqno, ctx, ring, t, own, None);
            group.push((j, vec![], None));
        }
        let mut last = t;
        for (p, tags, blocker) in group {
            g.write(&p);
            last = last.max(p.signal());
            g.truth.push(TruthJob {
                ctx: p.ctx,
                ring: p.ring,
                seqno: p.seq,
                tags,
                blocker,
            });
            made += 1;
        }
        t = last + g.between(100 * US, 300 * US);
    }
    Scenario {
        records: by_time(g.b),
        truth: g.truth,
    }
}
