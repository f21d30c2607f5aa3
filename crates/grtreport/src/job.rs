//! A finished GPU job: its identity, the times of its events, its phases, its blocking tags
//! and the flags that say how far to trust it.

use std::fmt;

/// `<ctx, ring, seqno>`: the name of one job (FORMAT.md §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct JobKey {
    pub ctx: u32,
    pub ring: u32,
    pub seqno: u64,
}

// Hashed as two words, ctx and ring packed in one: the joiner looks jobs up several times
// per job, and a word-at-a-time hasher costs a round per word.
impl std::hash::Hash for JobKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_u64(u64::from(self.ctx) | u64::from(self.ring) << 32);
        h.write_u64(self.seqno);
    }
}

/// "Not seen" for an event time.
pub const NONE: u64 = u64::MAX;

/// The time origin of a run: the trace time of its first record, from which every card's
/// job times, windows, `--interval` rows and exports count (JOBS.md §1). The joiner owns it
/// ([`Joiner::origin`](crate::joiner::Joiner::origin)); unknown until a record is seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin(u64);

impl Default for Origin {
    fn default() -> Self {
        Origin::UNKNOWN
    }
}

impl Origin {
    /// No record seen yet.
    pub const UNKNOWN: Origin = Origin(NONE);

    /// The origin at trace time `t`.
    pub fn at(t: u64) -> Origin {
        Origin(t)
    }

    /// Its trace time, once known.
    pub fn get(self) -> Option<u64> {
        self.is_known().then_some(self.0)
    }

    pub fn is_known(self) -> bool {
        self.0 != NONE
    }

    /// Nanoseconds from the origin to trace time `t`: 0 for a time before it, and while
    /// the origin is unknown.
    pub fn since(self, t: u64) -> u64 {
        t.saturating_sub(self.0)
    }

    /// [`Origin::since`] of a time that may not have been seen ([`NONE`]).
    pub fn since_seen(self, t: u64) -> Option<u64> {
        (t != NONE).then(|| self.since(t))
    }

    /// Nanoseconds from the origin to the last record's time `last`; 0 while unknown.
    pub fn span_to(self, last: u64) -> u64 {
        self.get().map_or(0, |o| last.saturating_sub(o))
    }

    /// The trace time `rel` ns after the origin.
    pub fn after(self, rel: u64) -> u64 {
        self.0.saturating_add(rel)
    }
}

/// The phases of JOBS.md §2, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// SUBMIT - COMMIT
    pub submit_host: u64,
    /// START - SUBMIT
    pub queue: u64,
    /// END - START (wall time on the GPU, preempted intervals included)
    pub exec: u64,
    /// IRQ - END (0 when the job has no completion interrupt)
    pub complete: u64,
    /// sum of SYNC_ENTER..SYNC_EXIT windows
    pub gpu_wait: u64,
    /// sum of VM_FAULT..VM_RETRY windows while the job ran
    pub vm_fault: u64,
    /// (IRQ or END) - COMMIT
    pub total: u64,
}

/// Phase names as printed, in table order.
pub const PHASE_NAMES: [&str; N_PHASES] = [
    "submit_host",
    "queue",
    "exec",
    "complete",
    "gpu_wait",
    "vm_fault",
    "total",
];
pub const N_PHASES: usize = 7; // one per field of `Phases`, in `as_array` order
/// Index of submit_host in PHASE_NAMES (and bit of `Job::measured`): `idle_host` needs it.
pub const SUBMIT_HOST: usize = 0;
/// Index of gpu_wait in PHASE_NAMES: `idle_dep` and `gpu_wait` shares need it.
pub const GPU_WAIT: usize = 4;

impl Phases {
    pub fn as_array(&self) -> [u64; N_PHASES] {
        [
            self.submit_host,
            self.queue,
            self.exec,
            self.complete,
            self.gpu_wait,
            self.vm_fault,
            self.total,
        ]
    }
}

/// Blocking classes (multi-label), one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tags(pub u8);

impl Tags {
    pub const HOST_SUBMIT: u8 = 1 << 0;
    pub const QUEUE_WAIT: u8 = 1 << 1;
    pub const EXEC_TAIL: u8 = 1 << 2;
    pub const DEP_WAIT: u8 = 1 << 3;
    pub const VM_FAULT: u8 = 1 << 4;
    pub const PREEMPT_THRASH: u8 = 1 << 5;
    pub const COUNT: usize = 6;
    /// Names used in every output, truth file and CSV, in bit order.
    pub const NAMES: [&'static str; Self::COUNT] = [
        "host-submit",
        "queue-wait",
        "exec-tail",
        "dep-wait",
        "vm-fault",
        "preempt-thrash",
    ];

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// Indices (into [`Tags::NAMES`]) of the set tags.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        (0..Self::COUNT).filter(move |i| self.0 & (1 << i) != 0)
    }
    pub fn index_of(name: &str) -> Option<usize> {
        Self::NAMES.iter().position(|n| *n == name)
    }
}

impl fmt::Display for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("-");
        }
        let mut first = true;
        for i in self.iter() {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            f.write_str(Self::NAMES[i])?;
        }
        Ok(())
    }
}

/// How far a job can be trusted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(pub u16);

impl Flags {
    /// START was not seen; it was taken as max(SUBMIT, previous END on the ring).
    pub const INFERRED: u16 = 1 << 0;
    /// The job is missing events it must have (COMMIT, SUBMIT or END) or it was in flight
    /// across lost records: its phases are not trustworthy and it is neither tagged nor
    /// counted in the phase statistics.
    pub const INCOMPLETE: u16 = 1 << 1;
    // Reasons, for `--jobs` and the CSV.
    pub const NO_COMMIT: u16 = 1 << 2;
    pub const NO_SUBMIT: u16 = 1 << 3;
    pub const NO_END: u16 = 1 << 4;
    pub const LOST: u16 = 1 << 5;
    /// Completion came from the fence SIGNAL, or from END, because no IRQ named the job.
    pub const NO_IRQ: u16 = 1 << 6;
    /// TIMEOUT / HANG / RESET touched the job, or END reported an error.
    pub const ERROR: u16 = 1 << 7;
    /// The GPU took the job before its doorbell (SUBMIT) was recorded, as a virtio device
    /// draining its avail ring does: it was visible to the device from its COMMIT, which is
    /// taken as its SUBMIT (no host-submit time).
    pub const NO_DOORBELL: u16 = 1 << 8;

    pub fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }
    pub fn set(&mut self, bit: u16) {
        self.0 |= bit;
    }
    pub fn incomplete(self) -> bool {
        self.has(Self::INCOMPLETE)
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const N: [(u16, &str); 9] = [
            (Flags::INFERRED, "inferred"),
            (Flags::INCOMPLETE, "incomplete"),
            (Flags::NO_COMMIT, "no-commit"),
            (Flags::NO_SUBMIT, "no-submit"),
            (Flags::NO_END, "no-end"),
            (Flags::LOST, "lost"),
            (Flags::NO_IRQ, "no-irq"),
            (Flags::ERROR, "error"),
            (Flags::NO_DOORBELL, "no-doorbell"),
        ];
        let mut first = true;
        for (bit, name) in N {
            if self.has(bit) {
                if !first {
                    f.write_str(",")?;
                }
                first = false;
                f.write_str(name)?;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// What a blocker is: why the job waited for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlockKind {
    #[default]
    None,
    /// The job waited (SYNC_ENTER..SYNC_EXIT) for the fence `Blocker::fence`.
    Dep,
    /// The job queued on its ring while `Blocker::key` executed ahead of it.
    Queue,
}

/// Who a job waited for, and what that cost it (see [`Job::blocker`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Blocker {
    pub kind: BlockKind,
    /// Dep: the awaited fence (fence context, fence seqno) as SYNC_ENTER named it.
    pub fence: (u64, u64),
    /// Whether a recorded job owns the fence (Dep) / was found (Queue). When false, `key`
    /// and the phases below mean nothing: the fence is CPU-side or foreign.
    pub owned: bool,
    /// The blocking job.
    pub key: JobKey,
    /// Time the job lost to it: Dep, its longest SYNC window on that fence; Queue, the part
    /// of its queue time the blocker spent executing.
    pub lost: u64,
    /// The blocker's own queue and exec phases (ns; [`NONE`] if not recorded).
    pub queue: u64,
    pub exec: u64,
    /// The blocker's tags, if it was classified before this job left the report.
    pub tags: Option<Tags>,
    /// Dep: links from this job to the end of the chain (1 = the blocker did not wait
    /// itself), and the job at the end of it.
    pub depth: u32,
    pub root: JobKey,
    /// Queue: jobs that executed on the ring while this one was queued.
    pub ahead: u32,
    /// Dep: when that wait ended (the dependency was met; [`NONE`] if unknown).
    pub until: u64,
}

impl Blocker {
    pub fn is_some(&self) -> bool {
        self.kind != BlockKind::None
    }

    /// `ctx 3 ring 1 seqno 812`, or the fence when no recorded job owns it.
    pub fn who(&self) -> String {
        if self.owned {
            format!(
                "ctx {} ring {} seqno {}",
                self.key.ctx, self.key.ring, self.key.seqno
            )
        } else {
            format!("fence {}:{}", self.fence.0, self.fence.1)
        }
    }
}

/// A job whose life is over (or that was given up on), as the joiner hands it out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Job {
    pub key: JobKey,
    /// Thread that committed it (0 if COMMIT was not seen).
    pub pid: u32,
    /// Its first QUEUE: when the host handed it to the scheduler ([`NONE`] if not seen).
    pub queued: u64,
    /// Time in the scheduler's queue that no dependency explains (credits, job limits,
    /// entity fairness), ns: from the QUEUE, or from when its longest dependency wait ended if later,
    /// to the hand-off (JOBS.md §2); [`NONE`] without a QUEUE.
    pub sched: u64,
    /// Event times in ns ([`NONE`] if not seen). `start` may be inferred (see flags).
    pub commit: u64,
    pub submit: u64,
    pub start: u64,
    pub end: u64,
    /// Completion time used for t_total: IRQ, else the fence SIGNAL, else END.
    pub done: u64,
    pub phases: Phases,
    /// Ring fill fraction at SUBMIT (NaN if the ring size is unknown).
    pub fill: f32,
    /// Jobs submitted and not yet ended on the ring right after this job's SUBMIT
    /// (this job included).
    pub outstanding: u32,
    /// Jobs made visible by the same SUBMIT.
    pub batch: u32,
    pub sync_segments: u32,
    /// Host-side (`HOST` flag) part of gpu_wait: waited before the job reached the GPU.
    pub host_wait: u64,
    /// VM_FAULT + VM_RETRY events in the job's window.
    pub faults: u32,
    /// Times the job was taken off the GPU (END with PREEMPT, or a preempting CTX_SWITCH).
    pub preempts: u32,
    /// Time spent preempted between a preempting END and the next START.
    pub preempted: u64,
    /// CTX_SWITCH events on the ring while the job was on it.
    pub switches: u32,
    /// The class quantile (P90 of own execution of jobs with the same ctx and ring) the
    /// exec-tail rule compared against; 0 if the class was too small.
    pub class_ref: u64,
    pub tags: Tags,
    pub flags: Flags,
    /// Bit i: phase i (PHASE_NAMES order) was measured, both its events recorded (START
    /// may be inferred). Unmeasured phases hold 0 and are shown as `-`.
    pub measured: u8,
    /// The dependency it waited for longest (kind Dep), if it waited on a named fence.
    pub dep: Blocker,
    /// The job ahead on its ring that cost it most queue time (kind Queue), if any ran
    /// while it was queued.
    pub queued_behind: Blocker,
    /// The job that ended last on its ring before it started, and when ([`NONE`]: none
    /// seen): the job ahead, for the critical path.
    pub ring_prev: JobKey,
    pub ring_prev_end: u64,
}

impl Job {
    /// Execution time that is the job's own work: wall exec minus preempted, waiting and
    /// faulting time. The exec-tail rule compares this, so that a job slowed by a
    /// dependency, a fault or preemption is not also called a long tail.
    pub fn exec_own(&self) -> u64 {
        self.phases
            .exec
            .saturating_sub(self.preempted)
            .saturating_sub(self.phases.gpu_wait.saturating_sub(self.host_wait))
            .saturating_sub(self.phases.vm_fault)
    }

    /// Time this job lost to one blocking class (tag index), used to rank classes.
    pub fn lost_to(&self, tag: usize) -> u64 {
        match tag {
            0 => self.phases.submit_host,
            1 => self.phases.queue,
            2 => self.exec_own().saturating_sub(self.class_ref),
            3 => self.phases.gpu_wait,
            4 => self.phases.vm_fault,
            _ => self.preempted,
        }
    }

    /// Whether phase `i` (PHASE_NAMES order) was measured for this job.
    pub fn measured(&self, i: usize) -> bool {
        self.measured & (1 << i) != 0
    }

    /// The blocker the report names: the dependency for a dep-wait job (or any job that
    /// waited on a fence and is not queue-wait), the job ahead for a queue-wait job.
    pub fn blocker(&self) -> &Blocker {
        static NO: Blocker = Blocker {
            kind: BlockKind::None,
            fence: (0, 0),
            owned: false,
            key: JobKey {
                ctx: 0,
                ring: 0,
                seqno: 0,
            },
            lost: 0,
            queue: 0,
            exec: 0,
            tags: None,
            depth: 0,
            root: JobKey {
                ctx: 0,
                ring: 0,
                seqno: 0,
            },
            ahead: 0,
            until: NONE,
        };
        let queued = self.tags.has(Tags::QUEUE_WAIT) && self.queued_behind.is_some();
        if self.dep.is_some() && (self.tags.has(Tags::DEP_WAIT) || !queued) {
            &self.dep
        } else if queued {
            &self.queued_behind
        } else {
            &NO
        }
    }

    /// The job's time in job lines, windows and sorting: its COMMIT, else the first of
    /// SUBMIT, START, END that was recorded.
    pub fn first_time(&self) -> u64 {
        [self.commit, self.submit, self.start, self.end]
            .into_iter()
            .find(|&t| t != NONE)
            .unwrap_or(NONE)
    }
}

/// A tag's name as a CSV or table column: snake_case (`queue-wait` -> `queue_wait`).
pub fn snake(name: &str) -> String {
    name.replace('-', "_")
}
