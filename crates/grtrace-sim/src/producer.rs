//! One simulated CPU: writes records into its relay buffer with the kernel's algorithm
//! ([`grtrace_format::relay::RelayProducer`]), paced to a rate or as fast as it can.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use grtrace_format::relay::{Filters, RelayProducer};
use grtrace_format::Event;
use grtrace_format::{encode_into, encoded_size, Body, Endian, EventBody, Stamp};

use crate::model::{Model, ModelCfg, EVENTS_PER_JOB};

/// Monotonic clock in ns (the clock of every kernel timestamp).
pub fn monotonic_ns() -> u64 {
    clock_ns(nix::time::ClockId::CLOCK_MONOTONIC)
}
/// CLOCK_REALTIME now, in ns.
pub fn realtime_ns() -> u64 {
    clock_ns(nix::time::ClockId::CLOCK_REALTIME)
}
fn clock_ns(id: nix::time::ClockId) -> u64 {
    let ts = nix::time::clock_gettime(id).expect("clock_gettime");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Where a CPU's records come from.
pub enum Source {
    /// The workload model, replayed from a template of generated jobs (cheap per event).
    Live(Template),
    /// A fixed list of records (a scenario's share for this CPU), times relative to start.
    Script(Arc<Vec<(Stamp, Body<'static>)>>),
}

/// A block of model jobs replayed cyclically: each cycle shifts times by `period` and job
/// seqnos by the number of jobs per ring in the block.
pub struct Template {
    prologue: Vec<(Stamp, Body<'static>)>,
    events: Vec<(Stamp, EventBody, u8)>,
    period: u64,
    seqno_step: [u64; 3],
    first_ring: u32,
}

impl Template {
    /// The model of one CPU in live mode: its own clients, rings and interrupts.
    pub fn for_cpu(cpu: u32, ncpus: u32, events_per_s: Option<f64>, seed: u64) -> Template {
        // Full speed: a fictional 20 ns between events, so times still increase.
        let ev_gap = events_per_s.map_or(20.0, |r| 1e9 / (r / ncpus as f64).max(1e-3));
        let job_gap = (ev_gap * EVENTS_PER_JOB).max(1.0) as u64;
        let first_ring = cpu * 4;
        let mut model = Model::new(ModelCfg {
            cpus: vec![cpu],
            irq_cpu: cpu,
            first_ctx: cpu * 100 + 1,
            n_ctx: 4,
            first_ring,
            first_pid: 1000 + cpu * 10,
            job_gap_ns: job_gap,
            seed: seed ^ (cpu as u64).wrapping_mul(0x1234_5678_9abc),
            ring_suffix: format!(".{cpu}"),
        });
        let prologue = model.prologue();
        let mut recs = Vec::new();
        let names = model.jobs(1024, &mut recs);
        recs.sort_by_key(|(s, _)| s.time_ns);
        let mut seqno_step = [0u64; 3];
        for (_, ring, _) in &names {
            seqno_step[(ring - first_ring) as usize] += 1;
        }
        let period = recs.last().map_or(1, |(s, _)| s.time_ns) + job_gap;
        let events = recs
            .into_iter()
            .filter_map(|(s, b)| match b {
                Body::Event(e) => Some((s, e, (e.ring - first_ring) as u8)),
                _ => None,
            })
            .collect();
        Template {
            prologue,
            events,
            period,
            seqno_step,
            first_ring,
        }
    }

    /// Event `i` of the endless replay.
    #[inline]
    fn event(&self, i: u64) -> (Stamp, EventBody) {
        let n = self.events.len() as u64;
        let (cycle, k) = (i / n, (i % n) as usize);
        let (mut st, mut e, ri) = self.events[k];
        st.time_ns += cycle * self.period;
        let add = cycle * self.seqno_step[ri as usize];
        e.seqno += add;
        let code = e.code;
        if code == Event::SIGNAL || code == Event::WAIT || code == Event::WAIT_END {
            e.arg1 += add;
        } else if code == Event::IRQ {
            e.arg0 += add;
        }
        debug_assert!(e.ring >= self.first_ring);
        (st, e)
    }
}

/// What a producer did in one session.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProducerTotals {
    /// Events the (filtered) workload offered: written + refused.
    pub events: u64,
    /// Events written.
    pub events_written: u64,
    /// Records of any type written (numbered 1..=records).
    pub records: u64,
    /// Events refused (the filters, or a CPU brought online after setup).
    pub refused: u64,
    /// Wall time from the first record to the last event of the quota (or to stop).
    pub busy: Duration,
}

/// Per-session knobs shared by the CPUs of a card.
pub struct ProducerCfg {
    /// The CPU.
    pub cpu: u32,
    /// Events this CPU produces before going quiet (None = until stop).
    pub quota: Option<u64>,
    /// Pace to the records' times (true) or write as fast as possible.
    pub paced: bool,
    /// Publish `commit` every this many records.
    pub commit_every: u32,
    /// The session's filters.
    pub filters: Filters,
    /// Session time 0, in the monotonic clock.
    pub base_ns: u64,
}

/// Shared live counters of one producer, read by tests and the statistics.
#[derive(Debug, Default)]
pub struct ProducerProgress {
    /// Events offered so far.
    pub events: AtomicU64,
    /// Events written so far.
    pub events_written: AtomicU64,
    /// The quota is done.
    pub done: AtomicBool,
}

/// Writes one CPU's records into its relay buffer, as the kernel does.
pub struct Producer<'a> {
    relay: RelayProducer<'a>,
    cfg: ProducerCfg,
    seq: u64,
    uncommitted: u32,
    totals: ProducerTotals,
    scratch: Vec<u8>,
    /// Latest session time of a record put (messages never go before it).
    last_ns: u64,
}

impl<'a> Producer<'a> {
    /// A producer on `relay`.
    pub fn new(relay: RelayProducer<'a>, cfg: ProducerCfg) -> Producer<'a> {
        Producer {
            relay,
            cfg,
            seq: 0,
            uncommitted: 0,
            totals: ProducerTotals::default(),
            scratch: Vec::new(),
            last_ns: 0,
        }
    }

    /// Writes one record like the kernel: filter, reserve, fill, commit (maybe lagging).
    #[inline]
    pub fn put(&mut self, stamp: &Stamp, body: &Body<'_>) {
        let (is_event, code, ctx, ring) = match body {
            Body::Event(e) => (true, e.code.0, e.ctx, e.ring),
            _ => (false, 0, 0, 0),
        };
        if !self
            .cfg
            .filters
            .admits(body.rtype(), code, stamp.pid, ctx, ring)
        {
            return;
        }
        if is_event {
            self.totals.events += 1;
        }
        self.last_ns = self.last_ns.max(stamp.time_ns);
        let len = encoded_size(body);
        match self.relay.reserve(len) {
            Some(slot) => {
                self.seq += 1;
                let st = Stamp {
                    cpu: self.cfg.cpu,
                    seq: self.seq,
                    time_ns: stamp.time_ns + self.cfg.base_ns,
                    pid: stamp.pid,
                };
                encode_into(&st, body, Endian::NATIVE, slot);
                self.totals.records += 1;
                if is_event {
                    self.totals.events_written += 1;
                }
                self.uncommitted += 1;
                if self.uncommitted >= self.cfg.commit_every {
                    self.commit();
                }
            }
            None => self.totals.refused += 1,
        }
    }

    /// Publishes the records written so far (the sub-buffer's `commit`).
    pub fn commit(&mut self) {
        self.relay.commit();
        self.uncommitted = 0;
    }

    /// Runs until `stop`, then flushes (the kernel's stop path) and returns the totals.
    pub fn run(
        mut self,
        source: Source,
        stop: &AtomicBool,
        progress: &ProducerProgress,
        msgs: &Mutex<Vec<Vec<u8>>>,
    ) -> ProducerTotals {
        let quota = self.cfg.quota.unwrap_or(u64::MAX);
        let mut i = 0u64;
        let mut script_pos = 0usize;
        let mut prologue_done = false;
        let t0 = std::time::Instant::now();
        let mut busy_until_done = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let mut idle = true;
            match &source {
                Source::Live(t) => {
                    if !prologue_done {
                        for (st, b) in &t.prologue {
                            if matches!(b, Body::Event(_)) && self.totals.events >= quota {
                                continue;
                            }
                            self.put(st, b);
                        }
                        prologue_done = true;
                    }
                    // A batch between checks of the stop flag and the clock.
                    let now = self.cfg.paced.then(|| monotonic_ns() - self.cfg.base_ns);
                    for _ in 0..4096 {
                        if self.totals.events >= quota {
                            break;
                        }
                        let (st, e) = t.event(i);
                        if now.is_some_and(|n| st.time_ns > n) {
                            break;
                        }
                        self.put(&st, &Body::Event(e));
                        i += 1;
                        idle = false;
                    }
                    if self.totals.events >= quota && busy_until_done.is_none() {
                        busy_until_done = Some(t0.elapsed());
                        progress.done.store(true, Ordering::Release);
                    }
                }
                Source::Script(recs) => {
                    let now = self.cfg.paced.then(|| monotonic_ns() - self.cfg.base_ns);
                    while script_pos < recs.len() {
                        let (st, b) = &recs[script_pos];
                        if now.is_some_and(|n| st.time_ns > n) {
                            break;
                        }
                        self.put(st, b);
                        script_pos += 1;
                        idle = false;
                    }
                    if script_pos == recs.len() && busy_until_done.is_none() {
                        busy_until_done = Some(t0.elapsed());
                        progress.done.store(true, Ordering::Release);
                    }
                }
            }
            progress.events.store(self.totals.events, Ordering::Release);
            progress
                .events_written
                .store(self.totals.events_written, Ordering::Release);
            // Messages keep this CPU's time order: records already due may be older than the
            // clock, so a message goes at the last record's time unless nothing is due (then
            // every later record is newer than the clock).
            let at = if idle {
                self.clock_ns().max(self.last_ns)
            } else {
                self.last_ns
            };
            self.take_messages(msgs, at);
            if idle {
                // Publish everything before sleeping: the kernel commits every record.
                self.commit();
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        self.take_messages(msgs, self.clock_ns().max(self.last_ns));
        self.commit();
        self.relay.flush();
        progress.events.store(self.totals.events, Ordering::Release);
        self.totals.busy = busy_until_done.unwrap_or_else(|| t0.elapsed());
        self.totals
    }

    /// Session time now (the clock of the record stamps before `base_ns` is added).
    fn clock_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.cfg.base_ns)
    }

    /// Writes the queued user messages as NOTE_MSG records at session time `now`.
    fn take_messages(&mut self, msgs: &Mutex<Vec<Vec<u8>>>, now: u64) {
        let taken = {
            let mut g = msgs.lock().unwrap_or_else(|e| e.into_inner());
            if g.is_empty() {
                return;
            }
            std::mem::take(&mut *g)
        };
        for m in taken {
            self.scratch.clear();
            self.scratch.extend_from_slice(&m);
            let text = std::mem::take(&mut self.scratch);
            let st = Stamp {
                cpu: self.cfg.cpu,
                pid: 0,
                time_ns: now,
                seq: 0,
            };
            self.put(&st, &Body::Msg { text: &text });
            self.scratch = text;
        }
        self.commit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_replay_keeps_time_and_seqno_increasing() {
        let t = Template::for_cpu(1, 2, None, 5);
        let n = t.events.len() as u64;
        let mut last_time = 0;
        let mut last_seqno = std::collections::HashMap::new();
        for i in 0..3 * n {
            let (st, e) = t.event(i);
            assert!(st.time_ns >= last_time);
            last_time = st.time_ns;
            assert_eq!(st.cpu, 1);
            if e.code == Event::ALLOC {
                let prev = last_seqno.insert(e.ring, e.seqno).unwrap_or(0);
                assert_eq!(e.seqno, prev + 1, "ALLOC seqnos count up per ring");
            }
        }
    }
}
