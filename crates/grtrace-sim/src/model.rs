//! A small GPU workload model: processes own contexts, contexts submit jobs to rings, and each
//! job moves through ALLOC → COMMIT → SUBMIT → QUEUE → (CTX_SWITCH) → START → END → IRQ →
//! SIGNAL, sometimes with a host thread waiting on its fence (WAIT / WAIT_END).
//!
//! Each ring executes one job at a time (FIFO). Timings scale with the job arrival gap so the
//! rings stay about as busy (gfx ~50 %, compute and copy ~25 %) at any event rate: at ~1 ms between jobs they look like a
//! desktop GPU (µs submission path, sub-ms GPU time); at full simulator speed everything is
//! compressed into nanoseconds.

use std::collections::HashMap;
use std::sync::Mutex;

use grtrace_format::abi::{eflag, RING_UNIT_BYTES};
use grtrace_format::builder::Builder;
use grtrace_format::Event;
use grtrace_format::{Body, RingNote, Stamp};

/// A record with its stamp, as a kernel would write it.
pub type TimedRecord = (Stamp, Body<'static>);
/// A job's name: (ctx, ring, seqno).
pub type JobName = (u32, u32, u64);

/// A ring of the simulated device.
#[derive(Clone, Debug)]
pub struct RingDef {
    /// Ring id.
    pub ring: u32,
    /// Engine class (gfx, compute, copy).
    pub engine_class: u32,
    /// Ring size in bytes.
    pub size: u64,
    /// Ring name.
    pub name: &'static str,
}

/// A simulated process with one GPU context.
#[derive(Clone, Debug)]
pub struct Client {
    /// Its pid.
    pub pid: u32,
    /// Its name.
    pub comm: &'static str,
    /// Its context id.
    pub ctx: u32,
    /// The CPU it submits from.
    pub cpu: u32,
    /// Index into the model's rings.
    pub ring_idx: usize,
}

#[derive(Clone, Debug)]
/// The live model's parameters.
pub struct ModelCfg {
    /// CPUs the submitting processes run on (round robin).
    pub cpus: Vec<u32>,
    /// CPU taking the completion interrupts.
    pub irq_cpu: u32,
    /// First context id.
    pub first_ctx: u32,
    /// Contexts (one client each).
    pub n_ctx: u32,
    /// Ring ids are `first_ring + k` for the three rings (gfx, compute, copy).
    pub first_ring: u32,
    /// Pid of the first client.
    pub first_pid: u32,
    /// Mean time between job arrivals on the whole model, in ns.
    pub job_gap_ns: u64,
    /// Seed of the arrivals and durations.
    pub seed: u64,
    /// Suffix of ring names (`gfx` + suffix), so several models on one device differ.
    pub ring_suffix: String,
}

impl ModelCfg {
    /// A device-wide model over `cpus` CPUs (used by scenarios).
    pub fn device(cpus: u32, seed: u64, job_gap_ns: u64) -> ModelCfg {
        ModelCfg {
            cpus: (0..cpus.max(1)).collect(),
            irq_cpu: 0,
            first_ctx: 1,
            n_ctx: 4,
            first_ring: 0,
            first_pid: 1000,
            job_gap_ns,
            seed,
            ring_suffix: String::new(),
        }
    }
}

/// Average number of events per job (for converting event rates into job gaps).
pub const EVENTS_PER_JOB: f64 = 9.5;

const COMMS: [&str; 6] = [
    "glxgears", "vkcube", "blender", "ffmpeg", "Xorg", "chromium",
];

/// Small xorshift generator: deterministic from the seed, no dependency.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform in `[0, n)`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    /// Roughly exponential with the given mean (mean of a sum of uniforms, cheap and bounded).
    pub fn around(&mut self, mean: u64) -> u64 {
        // 0.25x .. 1.75x
        mean / 4 + self.below(mean * 3 / 2 + 1)
    }
}

struct RingState {
    def: RingDef,
    busy_until: u64,
    wptr: u64,
    fill: u64,
    next_seqno: u64,
    last_ctx: u32,
    /// (end time, units) of jobs still holding ring space.
    in_flight: std::collections::VecDeque<(u64, u64)>,
}

/// The workload model. Generates whole jobs; [`Model::records`] sorts them by time.
pub struct Model {
    cfg: ModelCfg,
    rng: Rng,
    now: u64,
    rings: Vec<RingState>,
    clients: Vec<Client>,
    sched_pid: u32,
}

/// `'static` ring names, interned (names are built per CPU at run time).
fn intern(s: String) -> &'static str {
    static NAMES: Mutex<Option<HashMap<String, &'static str>>> = Mutex::new(None);
    let mut g = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    if let Some(v) = map.get(&s) {
        return v;
    }
    let leaked: &'static str = Box::leak(s.clone().into_boxed_str());
    map.insert(s, leaked);
    leaked
}

impl Model {
    /// A model of `cfg`, at time 0.
    pub fn new(cfg: ModelCfg) -> Model {
        let mut rng = Rng::new(cfg.seed);
        let rings: Vec<RingState> = [(1u32, "gfx"), (2, "comp"), (3, "copy")]
            .iter()
            .enumerate()
            .map(|(k, (class, name))| RingState {
                def: RingDef {
                    ring: cfg.first_ring + k as u32,
                    engine_class: *class,
                    size: 1 << 20,
                    name: intern(format!("{name}{}", cfg.ring_suffix)),
                },
                busy_until: 0,
                wptr: 0,
                fill: 0,
                next_seqno: 1,
                last_ctx: 0,
                in_flight: Default::default(),
            })
            .collect();
        let clients = (0..cfg.n_ctx)
            .map(|i| Client {
                pid: cfg.first_pid + i,
                comm: COMMS[(i as usize + rng.below(2) as usize) % COMMS.len()],
                ctx: cfg.first_ctx + i,
                cpu: cfg.cpus[i as usize % cfg.cpus.len()],
                // Most clients draw; every third one computes, the last one also copies.
                ring_idx: match i % 4 {
                    2 => 1,
                    3 => 2,
                    _ => 0,
                },
            })
            .collect();
        let sched_pid = cfg.first_pid + 500;
        Model {
            cfg,
            rng,
            now: 0,
            rings,
            clients,
            sched_pid,
        }
    }

    /// The rings of the model.
    pub fn rings(&self) -> Vec<RingDef> {
        self.rings.iter().map(|r| r.def.clone()).collect()
    }
    /// The clients of the model.
    pub fn clients(&self) -> &[Client] {
        &self.clients
    }

    /// Records a device writes before the first job: ring table (on the first CPU), each
    /// process's name before its first event, and context creation.
    pub fn prologue(&self) -> Vec<(Stamp, Body<'static>)> {
        let mut b = Builder::unnumbered();
        b.on(self.cfg.cpus[0]);
        for r in &self.rings {
            b.record(Body::Ring(RingNote {
                ring: r.def.ring,
                engine_class: r.def.engine_class,
                size: r.def.size,
                unit: RING_UNIT_BYTES,
                flags: 0,
                name: r.def.name.as_bytes(),
            }));
        }
        b.pid(self.sched_pid)
            .record(Body::Process { comm: b"drm_sched" });
        for c in &self.clients {
            b.on(c.cpu).pid(c.pid).record(Body::Process {
                comm: c.comm.as_bytes(),
            });
            // Created on the ring it will use, so its ring note is on the same CPU and comes
            // first (readers resolve ring names in order, also on a live pipe).
            let ring = self.rings[c.ring_idx].def.ring;
            b.event(Event::CTX_CREATE).job(c.ctx, ring, 0);
        }
        b.into_records()
    }

    /// Generates `n` jobs after the previous ones; returns their events (not sorted) and the
    /// (ctx, ring, seqno) of each job.
    pub fn jobs(
        &mut self,
        n: usize,
        out: &mut Vec<(Stamp, Body<'static>)>,
    ) -> Vec<(u32, u32, u64)> {
        let gap = self.cfg.job_gap_ns.max(1);
        // Fraction of "desktop" timings (defined at a 1 ms job gap).
        let scale =
            |ns: u64| -> u64 { (ns as u128 * gap.min(1_000_000) as u128 / 1_000_000) as u64 + 1 };
        // Half the clients draw on gfx, so gfx is ~50 % busy and the others ~25 %.
        let service_mean = gap;
        let mut names = Vec::with_capacity(n);
        let mut b = Builder::unnumbered();
        for _ in 0..n {
            self.now += self.rng.around(gap);
            let ci = self.rng.below(self.clients.len() as u64) as usize;
            let c = self.clients[ci].clone();
            let irq_cpu = self.cfg.irq_cpu;
            let sched_pid = self.sched_pid;
            let t_alloc = self.now;
            let r = &mut self.rings[c.ring_idx];
            while r.in_flight.front().is_some_and(|&(end, _)| end <= t_alloc) {
                let (_, units) = r.in_flight.pop_front().unwrap();
                r.fill -= units;
            }
            let units = 256 + 64 * self.rng.below(48);
            r.fill += units;
            r.wptr = (r.wptr + units) % r.def.size;
            let seqno = r.next_seqno;
            r.next_seqno += 1;
            let (ring, fill, wptr) = (r.def.ring, r.fill as u32, r.wptr);
            let t_commit = t_alloc + self.rng.around(scale(2_000));
            let t_submit = t_commit + self.rng.around(scale(1_000));
            let t_queue = t_submit + self.rng.around(scale(1_000));
            let ready = t_queue + self.rng.around(scale(20_000));
            let r = &mut self.rings[c.ring_idx];
            let t_start = ready.max(r.busy_until + 1);
            let t_end = t_start + self.rng.around(service_mean);
            r.busy_until = t_end;
            r.in_flight.push_back((t_end, units));
            let switch_from = (r.last_ctx != c.ctx).then_some(r.last_ctx);
            r.last_ctx = c.ctx;
            let depth = r.in_flight.len() as u32;
            let t_irq = t_end + self.rng.around(scale(8_000));
            let t_signal = t_irq + self.rng.around(scale(2_000));
            let fence_ctx = 100 + ring as u64;

            // Every event of the job: FENCED, named <ctx, ring, seqno>, by (cpu, pid).
            let ctx = c.ctx;
            let mut ev = |(cpu, pid): (u32, u32), t: u64, code, args: (u64, u64, u32, u32)| {
                b.on(cpu)
                    .pid(pid)
                    .event(code)
                    .at(t)
                    .flags(eflag::FENCED)
                    .job(ctx, ring, seqno)
                    .args(args.0, args.1, args.2, args.3);
            };
            let user = (c.cpu, c.pid);
            let irq = (irq_cpu, 0);
            let sched = (c.cpu, sched_pid);
            ev(user, t_alloc, Event::ALLOC, (wptr, units, fill, 0));
            ev(user, t_commit, Event::COMMIT, (wptr, units, fill, 0));
            ev(user, t_submit, Event::SUBMIT, (wptr, units, fill, 1));
            let client = c.pid as u64;
            ev(user, t_queue, Event::QUEUE, (fence_ctx, client, depth, 1));
            if let Some(prev) = switch_from {
                ev(sched, t_start, Event::CTX_SWITCH, (prev as u64, 0, 0, 0));
            }
            ev(sched, t_start, Event::START, (fence_ctx, client, 0, 0));
            ev(irq, t_end, Event::END, (fence_ctx, client, 0, 0));
            ev(irq, t_irq, Event::IRQ, (seqno, 0, 0, 0));
            ev(irq, t_signal, Event::SIGNAL, (fence_ctx, seqno, 0, 0));
            if self.rng.below(4) == 0 {
                let t_wait = t_queue + scale(500);
                ev(
                    user,
                    t_wait.min(t_signal),
                    Event::WAIT,
                    (fence_ctx, seqno, 0, 0),
                );
                let t_wait_end = t_signal + scale(5_000);
                ev(user, t_wait_end, Event::WAIT_END, (fence_ctx, seqno, 0, 0));
            }
            names.push((c.ctx, ring, seqno));
            out.extend(b.drain());
        }
        names
    }

    /// Prologue plus `n` jobs, sorted by time (stable: a job's same-time events keep order).
    pub fn records(&mut self, n: usize) -> (Vec<TimedRecord>, Vec<JobName>) {
        let mut out = self.prologue();
        let names = self.jobs(n, &mut out);
        out.sort_by_key(|(s, _)| s.time_ns);
        (out, names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_go_through_their_phases_in_time_order() {
        let mut m = Model::new(ModelCfg::device(2, 7, 1_000_000));
        let (recs, names) = m.records(200);
        assert_eq!(names.len(), 200);
        assert!(recs.windows(2).all(|w| w[0].0.time_ns <= w[1].0.time_ns));
        // Every job has each phase exactly once, in pipeline order.
        let order = [
            Event::ALLOC,
            Event::COMMIT,
            Event::SUBMIT,
            Event::QUEUE,
            Event::START,
            Event::END,
            Event::IRQ,
            Event::SIGNAL,
        ];
        for &(ctx, ring, seqno) in &names {
            let codes: Vec<u16> = recs
                .iter()
                .filter_map(|(_, b)| match b {
                    Body::Event(e) if e.ctx == ctx && e.ring == ring && e.seqno == seqno => {
                        Some(e.code.0)
                    }
                    _ => None,
                })
                .filter(|c| order.iter().any(|o| o.0 == *c))
                .collect();
            let want: Vec<u16> = order.iter().map(|c| c.0).collect();
            assert_eq!(codes, want, "job {ctx}/{ring}/{seqno}");
        }
        // Rings run one job at a time: START of a job comes after END of the previous one.
        let mut last_end: HashMap<u32, u64> = HashMap::new();
        for (s, b) in &recs {
            if let Body::Event(e) = b {
                if e.code == Event::START {
                    assert!(s.time_ns > *last_end.get(&e.ring).unwrap_or(&0));
                }
                if e.code == Event::END {
                    last_end.insert(e.ring, s.time_ns);
                }
            }
        }
    }

    #[test]
    fn same_seed_same_workload() {
        let a = Model::new(ModelCfg::device(2, 3, 500_000)).records(50).0;
        let b = Model::new(ModelCfg::device(2, 3, 500_000)).records(50).0;
        assert_eq!(a, b);
    }
}
