//! Per process and ring: which process used the GPU and what it waited for. Every job the
//! report covers is counted into the row of the thread that committed it (its `pid`) and
//! its ring: jobs, GPU busy time (the exec phase of its complete jobs: END - START, as the
//! ring's busy time counts it) and the time it lost per blocking class (the time the
//! `--top` table ranks, summed over its jobs tagged with the class).
//!
//! A job whose COMMIT was not recorded has no process (pid 0): its row says so and is never
//! put on a process. Memory grows with the (process, ring) pairs, not with the jobs.

use std::collections::BTreeMap;

use crate::job::{Flags, Job, Tags};
use crate::joiner::FxMap;

/// The exec phase (PHASE_NAMES order).
const EXEC: usize = 2;

/// One process on one ring.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Proc {
    pub jobs: u64,
    pub complete: u64,
    pub incomplete: u64,
    /// Complete jobs whose exec was measured, and the sum of their exec (ns).
    pub exec_n: u64,
    pub busy_ns: u64,
    /// The part of it that was the jobs' own work ([`Job::exec_own`]).
    pub own_ns: u64,
    /// Per blocking class (tag index): jobs tagged, and the time they lost to it (ns).
    pub tag_jobs: [u64; Tags::COUNT],
    pub tag_lost: [u64; Tags::COUNT],
}

impl Proc {
    fn add(&mut self, j: &Job) {
        self.jobs += 1;
        if j.flags.has(Flags::INCOMPLETE) {
            self.incomplete += 1;
            return;
        }
        self.complete += 1;
        if j.measured(EXEC) {
            self.exec_n += 1;
            self.busy_ns = self.busy_ns.saturating_add(j.phases.exec);
            self.own_ns = self.own_ns.saturating_add(j.exec_own());
        }
        for t in j.tags.iter() {
            self.tag_jobs[t] += 1;
            self.tag_lost[t] = self.tag_lost[t].saturating_add(j.lost_to(t));
        }
    }

    /// GPU busy time, None when no complete job of the row had a measured exec.
    pub fn busy(&self) -> Option<u64> {
        (self.exec_n > 0).then_some(self.busy_ns)
    }
}

/// The per-process rows of a report, filled by [`Summary::add`](crate::summary::Summary).
#[derive(Default)]
pub struct Processes {
    rows: FxMap<(u32, u32), Proc>,
}

/// One row as the outputs print it.
pub struct ProcRow {
    /// None: the jobs' COMMIT was not recorded, so no process is known.
    pub pid: Option<u32>,
    /// The process name a NOTE_PROCESS gave, if any.
    pub comm: Option<String>,
    pub ring: u32,
    pub ring_label: String,
    pub p: Proc,
}

impl Processes {
    /// Counts a job the report covers.
    pub fn add(&mut self, j: &Job) {
        self.rows.entry((j.pid, j.key.ring)).or_default().add(j);
    }

    /// Whether no job was counted.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows, busiest first (then by pid and ring), with names from `comm` and ring
    /// labels from `ring`.
    pub fn rows(
        &self,
        comm: &dyn Fn(u32) -> Option<String>,
        ring: &dyn Fn(u32) -> String,
    ) -> Vec<ProcRow> {
        let sorted: BTreeMap<_, _> = self.rows.iter().map(|(k, v)| (*k, v)).collect();
        let mut out: Vec<ProcRow> = sorted
            .into_iter()
            .map(|((pid, r), p)| ProcRow {
                pid: (pid != 0).then_some(pid),
                comm: if pid != 0 { comm(pid) } else { None },
                ring: r,
                ring_label: ring(r),
                p: p.clone(),
            })
            .collect();
        // Stable: equal busy keeps pid, ring order.
        out.sort_by_key(|p| std::cmp::Reverse(p.p.busy_ns));
        out
    }
}
