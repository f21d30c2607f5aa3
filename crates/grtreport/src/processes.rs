//! Per process and ring: which process used the GPU and what it waited for. Every job the
//! report covers is counted into the row of the thread that committed it (its `pid`) and
//! its ring: jobs, GPU busy time (the exec phase of its complete jobs: END - START, as the
//! ring's busy time counts it) and the time it lost per blocking class (the time the
//! `--top` table ranks, summed over its jobs tagged with the class).
//!
//! A job whose COMMIT was not recorded has no process (pid 0): its row says so and is never
//! put on a process. Memory grows with the (process, ring) pairs, not with the jobs.

use std::collections::BTreeMap;

use crate::job::{snake, Flags, Job, Tags};
use crate::joiner::FxMap;
use crate::measurable::Measurable;
use crate::table::{Field, Ty};

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

/// One value of a per-process row, as the CSV file and the dataset write it (None: an
/// empty cell, null).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    /// A count, id or time in ns.
    Int(Option<u64>),
    /// A share of the capture's span.
    Share(Option<f64>),
    /// A name.
    Text(Option<&'a str>),
}

/// The per-process columns of `FILE.processes.csv` and of the dataset's processes table
/// (after their card column), in the order of [`ProcRow::cells`]. `pid` is 0 where no
/// process is known, as in the job rows, so that the two tables join on it.
pub fn fields() -> Vec<Field> {
    use Ty::*;
    let mut f = vec![
        Field::req("pid", I64),
        Field::opt("comm", Str),
        Field::req("ring", I64),
        Field::opt("ring_name", Str),
        Field::req("jobs", I64),
        Field::req("complete", I64),
        Field::req("incomplete", I64),
        Field::opt("busy_ns", I64),
        Field::opt("busy_own_ns", I64),
        Field::opt("busy_share", F64),
    ];
    f.extend(class_fields());
    f
}

/// Per blocking class, its jobs and the time they lost: `{tag}_jobs`, `{tag}_lost_ns` (null
/// where the recording cannot judge the class), as the rings and processes tables end.
pub fn class_fields() -> impl Iterator<Item = Field> {
    Tags::NAMES.iter().flat_map(|t| {
        let t = snake(t);
        [
            Field::opt(format!("{t}_jobs"), Ty::I64),
            Field::opt(format!("{t}_lost_ns"), Ty::I64),
        ]
    })
}

impl ProcRow {
    /// The row's values in [`fields`] order: `ring_name` the ring's name (empty: none),
    /// `span_ns` the capture's span (for busy_share), `m` what the recording can judge (a
    /// class it cannot is null).
    pub fn cells<'a>(&'a self, ring_name: &'a str, span_ns: u64, m: &Measurable) -> Vec<Cell<'a>> {
        let busy = self.p.busy();
        let mut c = vec![
            Cell::Int(Some(self.pid.unwrap_or(0).into())),
            Cell::Text(self.comm.as_deref()),
            Cell::Int(Some(self.ring.into())),
            Cell::Text((!ring_name.is_empty()).then_some(ring_name)),
            Cell::Int(Some(self.p.jobs)),
            Cell::Int(Some(self.p.complete)),
            Cell::Int(Some(self.p.incomplete)),
            Cell::Int(busy),
            Cell::Int(busy.map(|_| self.p.own_ns)),
            Cell::Share(busy.map(|b| b as f64 / span_ns.max(1) as f64)),
        ];
        for t in 0..Tags::COUNT {
            let judged = m.judged(t);
            c.push(Cell::Int(judged.then_some(self.p.tag_jobs[t])));
            c.push(Cell::Int(judged.then_some(self.p.tag_lost[t])));
        }
        c
    }
}
