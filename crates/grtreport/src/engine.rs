//! The pipeline: records -> [`Joiner`] -> [`Classifier`] -> filters -> [`Summary`] and the
//! per-job sinks ([`JobSink`]: `--jobs` lines and CSV rows are in [`crate::rows`]).
//!
//! On a machine with more than one CPU a report over files runs on up to three threads,
//! each stage in trace order, so the report is the one a single thread makes:
//! * merging: grtrace-format's reader, handing runs of native events (slices of the mapped
//!   files) and copies of everything else over in batches ([`crate::input::run_pipelined`]);
//! * joining (the calling thread): the [`Joiner`], the per-job sinks, the timelines;
//! * classifying: the classifier, blocker tags, filter, statistics and the per-job sinks
//!   that can run there ([`WorkerSink`]: the `--parquet` dataset's), and a timeline drawn
//!   from what records show ([`DrawnTimeline`]: the protobuf export's feed), when no other
//!   output needs the jobs in order on the joining thread ([`Engine::use_worker`]).
//!
//! A pipe (possibly live) is merged on the joining thread: a batch would hold back what a
//! watched `--interval` or `--jobs` prints.

use std::io;

use grtrace_format::{Lost, NativeEvent, NativeEvents, RecordView};

use crate::classify::Classifier;
use crate::columns::NameSource;
use crate::critical::{CriticalPath, Scope};
use crate::handover::{hand_over, Producer};

use crate::job::{Job, JobKey, Origin, Tags, GPU_WAIT, NONE, N_PHASES, SUBMIT_HOST};
use crate::joiner::{FxMap, FxSet, JoinConfig, Joiner};
use crate::report::{RingInfo, UtilRow};
use crate::rules::Rules;
use crate::summary::Summary;
use crate::timeline::front::lost_time;
use crate::timeline::Seen;
use crate::utilisation::IntervalRow;

/// Which jobs the report covers; consistent with grtparse's `-w`, `--ctx`, `--ring`, `--pid`.
/// Joining always sees every event, so ring state stays right; filters pick finished jobs.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub ctx: Vec<u32>,
    /// Ring ids and names (names resolved from the ring notes as they arrive).
    pub ring: grtrace_cli::RingSelect,
    pub pid: Vec<u32>,
    /// [start, end] in ns relative to the first record (as grtparse's `-w`); a job is in if
    /// it began inside.
    pub window: Option<(u64, u64)>,
}

impl Filter {
    pub fn accepts(&self, j: &Job, origin: Origin) -> bool {
        if !self.ctx.is_empty() && !self.ctx.contains(&j.key.ctx) {
            return false;
        }
        if self.ring.is_active() && !self.ring.selects(j.key.ring) {
            return false;
        }
        if !self.pid.is_empty() && !self.pid.contains(&j.pid) {
            return false;
        }
        if let Some((a, b)) = self.window {
            let Some(rel) = origin.since_seen(j.first_time()) else {
                return false;
            };
            if rel < a || rel > b {
                return false;
            }
        }
        true
    }
}

/// Where finished, tagged jobs go besides the summary.
pub trait JobSink {
    fn job(&mut self, job: &Job, names: &Names<'_>) -> io::Result<()>;
    /// The run has several cards (said when the second card's engine is made).
    fn several_cards(&mut self) {}
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A per-job sink that may run on the classifying thread ([`Engine::use_worker`]), so that
/// a report with it keeps its joining thread to joining: it sees what a [`JobSink`] sees,
/// with the ring and process names the joiner knew when the job was handed on.
pub trait WorkerSink: Send {
    /// A finished, tagged job that passed the filter; `origin`: the run's time origin.
    fn job(&mut self, job: &Job, origin: Origin, names: &dyn NameSource) -> io::Result<()>;
    /// End of input (every job was handed to it).
    fn finish(&mut self) -> io::Result<()>;
}

/// Ring and process names of jobs handed on to [`WorkerSink`]s: learnt from the joiner for
/// each batch of finished jobs on the joining thread, read where they are classified.
#[derive(Default)]
pub struct NameSnapshot {
    rings: FxMap<u32, String>,
    comms: FxMap<u32, String>,
}

impl NameSnapshot {
    /// The names of `jobs`' rings and processes as `joiner` knows them now (each looked up
    /// once; an earlier name of the same ring or process is replaced, and copied only then:
    /// without a worker this runs for every few jobs). Only names are kept, not their
    /// absence: the snapshot is no bigger than the joiner's names (bounded there), whatever
    /// ids the jobs carry.
    fn learn(&mut self, jobs: &[Job], joiner: &Joiner, seen: &mut (FxSet<u32>, FxSet<u32>)) {
        seen.0.clear();
        seen.1.clear();
        for j in jobs {
            let (ring, pid) = (j.key.ring, j.pid);
            if seen.0.insert(ring) {
                if let Some(r) = joiner.ring(ring).filter(|r| !r.name.is_empty()) {
                    if self.rings.get(&ring) != Some(&r.name) {
                        self.rings.insert(ring, r.name.clone());
                    }
                }
            }
            if seen.1.insert(pid) {
                if let Some(c) = joiner.comms.get_str(pid) {
                    if self.comms.get(&pid).map(String::as_str) != Some(&*c) {
                        self.comms.insert(pid, c.into_owned());
                    }
                }
            }
        }
    }

    /// Takes `other`'s names, which are newer.
    fn update(&mut self, other: &mut NameSnapshot) {
        self.rings.extend(other.rings.drain());
        self.comms.extend(other.comms.drain());
    }
}

impl NameSource for NameSnapshot {
    fn ring(&self, id: u32) -> &str {
        self.rings.get(&id).map_or("", String::as_str)
    }
    fn comm(&self, pid: u32) -> Option<&str> {
        self.comms.get(&pid).map(String::as_str)
    }
}

/// `--interval` rows that just closed, and what reading them needs.
#[derive(Clone, Copy)]
pub struct ClosedRows<'a> {
    /// The rows, one per ring and interval.
    pub rows: &'a [IntervalRow],
    /// Their times are written since this origin.
    pub origin: Origin,
    /// The rings' names and sizes by id.
    pub rings: &'a dyn Fn(u32) -> Option<RingInfo>,
    /// The phases the recording can measure: a share of another is not a figure.
    pub measurable: &'a [bool; N_PHASES],
}

/// Where `--interval` rows go as each interval closes (shared by the engines of several
/// cards, so one stream of rows interleaves them in time).
pub trait IntervalSink {
    /// Rows of `card` that just closed.
    fn rows(&mut self, card: Option<u32>, closed: ClosedRows<'_>) -> io::Result<()>;
    /// End of input.
    fn flush(&mut self) -> io::Result<()>;
}

/// A consumer of the record stream as well as of finished jobs: the timeline exports
/// (`--perfetto`, `--html`) draw events that are not jobs (faults, messages, counters).
pub trait Timeline {
    /// Every record, after the joiner saw it. `watermark` is set now and then: no job
    /// handed over later has an event before it.
    fn record(
        &mut self,
        rec: &RecordView<'_>,
        joiner: &Joiner,
        watermark: Option<u64>,
    ) -> io::Result<()>;
    /// A sequence gap the reader found (NOTE_LOST records come through `record`).
    fn lost(&mut self, l: &Lost, joiner: &Joiner) -> io::Result<()>;
    /// A finished, tagged job that passed the filter (times from [`Joiner::origin`], which
    /// `record` saw).
    fn job(&mut self, job: &Job) -> io::Result<()>;
    /// End of input (all jobs were handed over): writes what is left.
    fn finish(&mut self, engine: &Engine, warnings: &[String]) -> io::Result<()>;
}

/// A timeline drawn from what records show ([`Seen`], found by the engine on the joining
/// thread) and from finished jobs, not from the records and the joiner themselves (the
/// protobuf export's feed, [`crate::perfetto_feed`]). It may run on the engine's worker
/// thread ([`Engine::use_worker`]), after the classifier, where it is called in the order
/// and with the watermarks it would have had on the joining thread.
pub trait DrawnTimeline: Send {
    /// Whether it may run on the worker thread (not when the calls of several cards'
    /// engines must keep their order between them).
    fn may_move(&self) -> bool;
    /// The run's time origin, before what the first record that has it shows.
    fn origin(&mut self, origin: u64);
    /// What a record at `t` showed ([`Seen::Nothing`] when only `watermark` is new: no job
    /// handed over later has an event before it).
    fn seen(&mut self, t: u64, seen: Seen, watermark: Option<u64>);
    /// Records lost in a sequence gap, drawn at `t` ([`lost_time`]).
    fn lost(&mut self, t: u64, lost: &Lost);
    /// A finished, tagged job that passed the filter.
    fn job(&mut self, job: &Job);
    /// End of input (`last_ns`: the last record's time): its first error.
    fn finish(&mut self, last_ns: u64) -> io::Result<()>;
}

/// What the joining thread saw for a [`DrawnTimeline`] on the worker thread, in order.
enum Step {
    /// The batch's next `n` jobs finished.
    Jobs(u32),
    /// A call of the drawn timeline.
    Draw(Draw),
}

/// A call of a [`DrawnTimeline`] other than a job's, as the joining thread makes it.
enum Draw {
    Origin(u64),
    Seen {
        t: u64,
        seen: Seen,
        /// Without the classifier's part where the classifier runs on the worker.
        watermark: Option<u64>,
    },
    Lost {
        t: u64,
        lost: Lost,
    },
}

impl Draw {
    /// Makes the call on `d`; `held`: the first time of the jobs the classifier holds (its
    /// part of the watermark), [`NONE`] where the watermark has it already.
    fn on(self, d: &mut dyn DrawnTimeline, held: u64) {
        match self {
            Draw::Origin(o) => d.origin(o),
            Draw::Seen { t, seen, watermark } => d.seen(t, seen, watermark.map(|w| w.min(held))),
            Draw::Lost { t, lost } => d.lost(t, &lost),
        }
    }
}

/// Takes the phases a source cannot measure (bits, PHASE_NAMES order) out of finished jobs:
/// their values (an imported COMMIT and SUBMIT are one instant, so submit_host is 0) are
/// not measurements.
fn unmeasure(jobs: &mut [Job], unmeasured: u8) {
    if unmeasured != 0 {
        for j in jobs {
            j.measured &= !unmeasured;
        }
    }
}

/// Records between two watermark computations (each is O(jobs in flight + tail window)).
const WATERMARK_EVERY: u32 = 1 << 14;

/// Tags of the jobs that left the classifier most recently, so a job can show its
/// blocker's tags: blockers finish (and are classified) before the jobs that waited for them.
/// Bounded: the last [`RECENT_TAGS`] jobs are remembered. Each entry carries the number of
/// its insertion; older entries are ignored when looked up and dropped in bulk, so a job
/// costs one map insert instead of an insert, a queue push and a remove.
#[derive(Default)]
pub struct RecentTags {
    map: FxMap<JobKey, (Tags, u64)>,
    /// Jobs remembered so far (the next insertion's number).
    count: u64,
}

/// Jobs whose tags are remembered for the jobs they blocked.
const RECENT_TAGS: u64 = 1 << 12;

impl RecentTags {
    /// Fills in the tags of `job`'s blockers, then remembers `job`'s own.
    pub fn resolve(&mut self, job: &mut Job) {
        for b in [&mut job.dep, &mut job.queued_behind] {
            if b.owned {
                // Live: inserted as one of the last RECENT_TAGS (count - n from 1 to it).
                b.tags = match self.map.get(&b.key) {
                    Some(&(t, n)) if self.count - n <= RECENT_TAGS => Some(t),
                    _ => None,
                };
            }
        }
        let count = self.count;
        match self.map.entry(job.key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let (tags, n) = e.get_mut();
                if count - *n <= RECENT_TAGS {
                    // Remembered already: new tags, same place in the order.
                    *tags = job.tags;
                } else {
                    *e.get_mut() = (job.tags, count);
                    self.count += 1;
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert((job.tags, count));
                self.count += 1;
            }
        }
        if self.map.len() as u64 >= 2 * RECENT_TAGS {
            let count = self.count;
            self.map.retain(|_, &mut (_, n)| count - n <= RECENT_TAGS);
        }
    }
}

/// What a per-job sink may look up besides the job: the trace's first time, ring and
/// process names.
pub struct Names<'a> {
    /// The run's time origin.
    pub origin: Origin,
    pub joiner: &'a Joiner,
    /// The job's card, when the run has several (see [`Engine::card`]).
    pub card: Option<u32>,
}

impl Names<'_> {
    pub fn ring(&self, id: u32) -> &str {
        self.joiner.ring(id).map_or("", |r| r.name.as_str())
    }
    pub fn comm(&self, pid: u32) -> Option<String> {
        self.joiner.comms.get(pid)
    }
}

pub struct Engine {
    pub joiner: Joiner,
    /// Finished jobs between the joiner and the classifier (reused buffer).
    finished: Vec<Job>,
    recent_tags: RecentTags,
    classifier: Classifier,
    pub filter: Filter,
    pub summary: Summary,
    sinks: Vec<Box<dyn JobSink>>,
    /// `--interval` rows go here as each interval closes (shared by the cards' engines).
    interval_out: Option<std::rc::Rc<std::cell::RefCell<dyn IntervalSink>>>,
    /// Interval rows kept for `--json` ([`keep_interval_rows`](Self::keep_interval_rows)).
    pub kept_intervals: Vec<IntervalRow>,
    keep_intervals: bool,
    /// Driver and SIMULATED flag of the input's stream header, for the report.
    pub source: (String, bool),
    /// What an imported stream's source note says (IMPORT.md §1): the phases it cannot
    /// measure are taken out of every job (`-`, never 0).
    pub import: Option<crate::measurable::Import>,
    /// Every tagged job, when a test asks for them ([`Engine::keep_jobs`]).
    kept: Option<Vec<Job>>,
    timelines: Vec<Box<dyn Timeline>>,
    since_watermark: u32,
    /// Records between two watermarks ([`WATERMARK_EVERY`]; tests ask for more).
    watermark_every: u32,
    /// `--critical-path`: frames or the window, walked as they complete.
    pub critical: Option<CriticalPath>,
    /// The card whose jobs this engine joins, set when a run has several cards (one engine
    /// per card: jobs are never joined across cards); the sinks then label rows with it.
    pub card: Option<u32>,
    /// Whether classification and statistics may run on a second thread (see
    /// [`Engine::use_worker`]), and that thread once started.
    worker_wanted: bool,
    worker: Option<Worker>,
    /// Per-job sinks that may run on the worker (there while it runs).
    worker_sinks: Vec<Box<dyn WorkerSink>>,
    /// The names they read when they run on this thread, and the lookups' scratch.
    names: NameSnapshot,
    seen: (FxSet<u32>, FxSet<u32>),
    /// Whether the worker has sinks (the joining thread then learns names for it).
    worker_learns: bool,
    /// A worker sink's failure, reported at [`finish`](Self::finish).
    worker_err: Option<io::Error>,
    /// A timeline drawn from what records show (None while it runs on the worker:
    /// `drawn_on_worker`), and the names that find what a record shows for it.
    drawn: Option<Box<dyn DrawnTimeline>>,
    drawn_on_worker: bool,
    seen_names: crate::timeline::Names,
    origin_drawn: bool,
    /// The batch being filled for the worker while a drawn timeline runs there.
    building: Batch,
}

/// Finished jobs handed to the worker thread at once: few enough that the jobs in flight
/// between the threads stay a few hundred KB, enough that a hand-over is rare.
const WORKER_BATCH: usize = 512;
/// Steps for a drawn timeline handed to the worker at once (about one per record).
const WORKER_STEPS: usize = 4096;
/// Batches queued for the worker at most (the joiner waits beyond that: bounded memory).
const WORKER_QUEUE: usize = 4;

/// What the worker thread owns while it runs, handed back when it ends.
struct Stages {
    classifier: Classifier,
    recent_tags: RecentTags,
    filter: Filter,
    summary: Summary,
    sinks: Vec<Box<dyn WorkerSink>>,
    /// The names of the jobs handed over so far, for the sinks.
    names: NameSnapshot,
    /// The first failure of a sink (the others are not fed after it).
    err: Option<io::Error>,
    drawn: Option<Box<dyn DrawnTimeline>>,
}

/// Where a classified job goes on the worker thread, as [`Engine::pump`] sends it.
struct Emit<'a> {
    recent_tags: &'a mut RecentTags,
    filter: &'a Filter,
    summary: &'a mut Summary,
    sinks: &'a mut [Box<dyn WorkerSink>],
    names: &'a NameSnapshot,
    err: &'a mut Option<io::Error>,
    origin: Origin,
}

impl Emit<'_> {
    fn job(&mut self, job: &mut Job, drawn: &mut Option<Box<dyn DrawnTimeline>>) {
        self.recent_tags.resolve(job);
        if !self.filter.accepts(job, self.origin) {
            return;
        }
        self.summary.add(job);
        if self.err.is_none() {
            for s in self.sinks.iter_mut() {
                if let Err(e) = s.job(job, self.origin, self.names) {
                    *self.err = Some(e);
                    break;
                }
            }
        }
        if let Some(d) = drawn {
            d.job(job);
        }
    }
}

impl Stages {
    /// Classifies a batch of finished jobs (in the order they finished), counts the ones
    /// that left the classifier's window and hands them to the sinks and the drawn
    /// timeline, with what the joining thread saw for it between them (`steps`; none
    /// without a drawn timeline); `last`: the input is over, empty the window.
    fn run(&mut self, batch: &mut Batch, last: bool) {
        self.names.update(&mut batch.names);
        let mut emit = Emit {
            recent_tags: &mut self.recent_tags,
            filter: &self.filter,
            summary: &mut self.summary,
            sinks: &mut self.sinks,
            names: &self.names,
            err: &mut self.err,
            origin: batch.origin,
        };
        let (classifier, drawn) = (&mut self.classifier, &mut self.drawn);
        if batch.steps.is_empty() {
            // Without a drawn timeline: the jobs are all there is.
            batch.steps.push(Step::Jobs(batch.jobs.len() as u32));
        }
        let mut jobs = batch.jobs.iter();
        for step in batch.steps.drain(..) {
            match step {
                Step::Jobs(n) => {
                    for job in jobs.by_ref().take(n as usize) {
                        classifier.push(job, &mut |j| emit.job(j, drawn));
                    }
                }
                Step::Draw(call) => {
                    let d = drawn
                        .as_deref_mut()
                        .expect("calls only for a drawn timeline");
                    call.on(d, classifier.oldest());
                }
            }
        }
        if last {
            classifier.finish(&mut |j| emit.job(j, drawn));
        }
    }
}

/// A batch for the worker: finished jobs, the run's origin, their names (for its sinks)
/// and, with a drawn timeline, what the joining thread saw for it between them.
#[derive(Default)]
struct Batch {
    jobs: Vec<Job>,
    origin: Origin,
    names: NameSnapshot,
    steps: Vec<Step>,
}

/// The second thread of a report without per-job outputs other than [`WorkerSink`]s: the
/// joiner (on the reading thread) hands it batches of finished jobs; it classifies them,
/// adds them to the statistics and hands them to its sinks, as [`Engine::pump`] would, in
/// the same order. Used buffers come back.
struct Worker {
    jobs: Option<Producer<Batch>>,
    thread: std::thread::JoinHandle<Stages>,
}

impl Worker {
    fn start(mut stages: Stages) -> Worker {
        // The worker is the faster: once it found nothing to do, it sleeps until a few
        // batches are in, not until the next one.
        let (jobs, todo) = hand_over::<Batch>(WORKER_QUEUE, WORKER_QUEUE - 1, 3);
        let thread = std::thread::spawn(move || {
            let mut origin = Origin::UNKNOWN;
            while let Some(mut batch) = todo.recv() {
                origin = batch.origin;
                stages.run(&mut batch, false);
                batch.jobs.clear();
                todo.give_back(batch);
            }
            let mut end = Batch {
                origin,
                ..Batch::default()
            };
            stages.run(&mut end, true);
            stages
        });
        Worker {
            jobs: Some(jobs),
            thread,
        }
    }
}

impl Engine {
    pub fn new(rules: Rules, join: JoinConfig, filter: Filter, samples: usize) -> Engine {
        Engine {
            joiner: Joiner::new(join),
            recent_tags: RecentTags::default(),
            finished: Vec::new(),
            classifier: Classifier::new(rules),
            filter,
            summary: Summary::new(samples),
            sinks: Vec::new(),
            interval_out: None,
            kept_intervals: Vec::new(),
            keep_intervals: false,
            source: (String::new(), false),
            import: None,
            kept: None,
            timelines: Vec::new(),
            since_watermark: 0,
            watermark_every: WATERMARK_EVERY,
            critical: None,
            card: None,
            worker_wanted: false,
            worker: None,
            worker_sinks: Vec::new(),
            names: NameSnapshot::default(),
            seen: Default::default(),
            worker_learns: false,
            worker_err: None,
            drawn: None,
            drawn_on_worker: false,
            seen_names: Default::default(),
            origin_drawn: false,
            building: Batch::default(),
        }
    }

    /// Lets the engine classify and summarise on a second thread when the machine has
    /// more than one CPU and nothing but the report, the [`WorkerSink`]s and a
    /// [`DrawnTimeline`] that may move needs the jobs: no other per-job sinks, timeline
    /// exports, critical path, kept jobs or ring names to learn for a `--ring` filter
    /// (those see the jobs on this thread, in order). The report, the sinks' rows and the
    /// drawn timeline are the same.
    pub fn use_worker(&mut self) {
        self.worker_wanted = crate::cpus() > 1;
    }

    /// Starts the worker if wanted and possible (at the first hand-over of jobs).
    fn start_worker(&mut self) -> bool {
        if !self.worker_wanted {
            return false;
        }
        self.worker_wanted = false;
        if !self.sinks.is_empty()
            || !self.timelines.is_empty()
            || self.critical.is_some()
            || self.kept.is_some()
            || self.filter.ring.is_active()
            || self.drawn.as_ref().is_some_and(|d| !d.may_move())
        {
            return false;
        }
        // The stages move to the worker; what stays here is only read after `finish`,
        // when they are back.
        let rules = self.classifier.rules().clone();
        let samples = self.summary.samples();
        let stages = Stages {
            classifier: std::mem::replace(&mut self.classifier, Classifier::new(rules)),
            recent_tags: std::mem::take(&mut self.recent_tags),
            filter: self.filter.clone(),
            summary: std::mem::replace(&mut self.summary, Summary::new(samples)),
            sinks: std::mem::take(&mut self.worker_sinks),
            names: NameSnapshot::default(),
            err: None,
            drawn: self.drawn.take(),
        };
        self.drawn_on_worker = stages.drawn.is_some();
        self.worker_learns = !stages.sinks.is_empty();
        self.worker = Some(Worker::start(stages));
        true
    }

    /// Moves the jobs the joiner finished into the batch being filled for the worker (a
    /// step of their own while a drawn timeline runs there).
    fn stage_finished(&mut self) {
        let b = &mut self.building;
        let from = b.jobs.len();
        if from == 0 {
            self.joiner.take_finished(&mut b.jobs);
        } else {
            self.joiner.append_finished(&mut b.jobs);
        }
        let n = b.jobs.len() - from;
        let unmeasured = self.import.as_ref().map_or(0, |i| i.unmeasured);
        unmeasure(&mut b.jobs[from..], unmeasured);
        if n > 0 && self.drawn_on_worker {
            b.steps.push(Step::Jobs(n as u32));
        }
    }

    /// Hands the joiner's finished jobs to the worker with the batch being filled
    /// (`last`: all of them, then waits for it to end and takes its stages back).
    fn hand_over(&mut self, last: bool) {
        if self.worker.is_none() {
            return;
        }
        self.stage_finished();
        let b = &self.building;
        if let Some(tx) = self.worker.as_ref().and_then(|w| w.jobs.as_ref()) {
            if !b.jobs.is_empty() || !b.steps.is_empty() {
                let spare = tx.spare().unwrap_or_default();
                let mut b = std::mem::replace(&mut self.building, spare);
                b.origin = self.joiner.origin();
                if self.worker_learns {
                    b.names.learn(&b.jobs, &self.joiner, &mut self.seen);
                }
                // Fails only if the worker is gone (it panicked): `join` below says so.
                let _ = tx.send(b);
            }
        }
        if last {
            let Some(w) = self.worker.take() else { return };
            drop(w.jobs);
            let st = match w.thread.join() {
                Ok(st) => st,
                Err(p) => std::panic::resume_unwind(p),
            };
            self.classifier = st.classifier;
            self.recent_tags = st.recent_tags;
            self.summary = st.summary;
            self.worker_sinks = st.sinks;
            self.worker_err = st.err;
            self.drawn = st.drawn;
            self.drawn_on_worker = false;
        }
    }

    /// Computes the critical path of the window or of the frames between markers.
    pub fn critical_path(&mut self, scope: Scope) {
        self.critical = Some(CriticalPath::new(scope));
    }

    /// Adds a timeline export; it sees every record and every accepted job.
    pub fn add_timeline(&mut self, t: Box<dyn Timeline>) {
        self.timelines.push(t);
    }

    /// Sets the timeline drawn from what records show (one at most: the protobuf export).
    pub fn set_drawn_timeline(&mut self, t: Box<dyn DrawnTimeline>) {
        self.drawn = Some(t);
    }

    /// Whether a drawn timeline is set, here or on the worker.
    fn draws(&self) -> bool {
        self.drawn.is_some() || self.drawn_on_worker
    }

    /// Makes `call` of the drawn timeline: here, or after the jobs finished before it in
    /// the batch being filled for the worker.
    fn draw(&mut self, call: Draw) {
        if let Some(d) = self.drawn.as_deref_mut() {
            call.on(d, NONE);
            return;
        }
        self.building.steps.push(Step::Draw(call));
        if self.building.steps.len() >= WORKER_STEPS {
            self.hand_over(false);
        }
    }

    /// What `rec` shows the drawn timeline (and the run's origin, the first time it is
    /// known), with the watermark `w` if one was computed.
    fn draw_record(&mut self, rec: &RecordView<'_>, w: Option<u64>) {
        if !self.origin_drawn {
            if let Some(o) = self.joiner.origin().get() {
                self.origin_drawn = true;
                self.draw(Draw::Origin(o));
            }
        }
        let seen = self.seen_names.see(rec, &self.joiner);
        if !matches!(seen, Seen::Nothing) || w.is_some() {
            let t = rec.time_ns();
            self.draw(Draw::Seen {
                t,
                seen,
                watermark: w,
            });
        }
    }

    /// No job emitted from now on has an event before this time: the oldest of the jobs
    /// still open in the joiner and of those held back by the classifier.
    pub fn watermark(&self) -> u64 {
        let now = self.joiner.stats.last_ns;
        self.joiner
            .oldest_open()
            .min(self.classifier.oldest())
            .min(now)
    }

    /// Writes the timeline exports' last parts (after [`finish`](Self::finish)).
    pub fn finish_timelines(&mut self, warnings: &[String]) -> io::Result<()> {
        let mut t = std::mem::take(&mut self.timelines);
        // Each one is finished (the others' files end whole); the error kept is the first
        // that is more than a closed standard output.
        let mut res = Ok(());
        for t in t.iter_mut() {
            if let Err(e) = t.finish(self, warnings) {
                if res.as_ref().is_ok() || res.as_ref().is_err_and(grtrace_cli::is_broken_pipe) {
                    res = Err(e);
                }
            }
        }
        self.timelines = t;
        if let Some(d) = &mut self.drawn {
            if let Err(e) = d.finish(self.joiner.stats.last_ns) {
                if res.as_ref().is_ok() || res.as_ref().is_err_and(grtrace_cli::is_broken_pipe) {
                    res = Err(e);
                }
            }
        }
        res
    }

    /// Hands `sink` a row per ring every `ns` of trace time as each interval closes (rows
    /// of several cards' engines labelled with [`card`](Self::card)).
    pub fn set_interval_sink(
        &mut self,
        ns: u64,
        sink: std::rc::Rc<std::cell::RefCell<dyn IntervalSink>>,
    ) {
        self.joiner.set_interval(ns);
        self.interval_out = Some(sink);
    }

    /// Keeps a row per ring every `ns` of trace time in [`kept_intervals`](Self::kept_intervals)
    /// (for `--json`), whether or not a sink gets them too.
    pub fn keep_interval_rows(&mut self, ns: u64) {
        self.joiner.set_interval(ns);
        self.keep_intervals = true;
    }

    fn write_intervals(&mut self) -> io::Result<()> {
        let rows = std::mem::take(&mut self.joiner.intervals);
        let Some(out) = &self.interval_out else {
            if self.keep_intervals {
                self.kept_intervals.extend(rows);
            }
            return Ok(());
        };
        let origin = self.joiner.origin();
        let joiner = &self.joiner;
        let rings = |id: u32| joiner.ring(id).map(RingInfo::from);
        // Live rows: the codes seen so far decide, as the end-of-run Measurable does.
        let measurable = self.measurable().phases;
        let closed = ClosedRows {
            rows: &rows,
            origin,
            rings: &rings,
            measurable: &measurable,
        };
        out.borrow_mut().rows(self.card, closed)?;
        if self.keep_intervals {
            self.kept_intervals.extend(rows);
        }
        Ok(())
    }

    pub fn add_sink(&mut self, s: Box<dyn JobSink>) {
        self.sinks.push(s);
    }

    /// Adds a per-job sink that runs on the worker thread when there is one (else here).
    pub fn add_worker_sink(&mut self, s: Box<dyn WorkerSink>) {
        self.worker_sinks.push(s);
    }

    /// Keeps every accepted job in memory (tests, small fixtures).
    pub fn keep_jobs(&mut self) {
        self.kept = Some(Vec::new());
    }

    pub fn take_jobs(&mut self) -> Vec<Job> {
        self.kept.take().unwrap_or_default()
    }

    pub fn rules(&self) -> &Rules {
        self.classifier.rules()
    }

    /// The run's time origin (the joiner's).
    pub fn origin(&self) -> Origin {
        self.joiner.origin()
    }

    #[inline]
    pub fn feed(&mut self, rec: &RecordView<'_>) -> io::Result<()> {
        // Ring names matter only to a --ring selection: no call per record without one.
        if self.filter.ring.is_active() {
            self.filter.ring.learn(rec);
        }
        if rec.rtype() == grtrace_format::RecordType::NOTE_MSG {
            self.message(rec);
        }
        self.joiner.feed(rec);
        if let Some(cp) = &mut self.critical {
            cp.start_at(self.joiner.origin());
            if rec.rtype() == grtrace_format::RecordType::NOTE_MSG {
                if let grtrace_format::Body::Msg { text } = rec.body() {
                    // An importer's notes say where the capture came from: no frame marker.
                    if !text.starts_with(crate::measurable::IMPORT_NOTE) {
                        cp.message(rec.time_ns(), text);
                    }
                }
            }
        }
        self.after_record(rec)
    }

    /// Feeds one event record (as [`feed`](Self::feed) does; the reader's runs of native
    /// events come this way).
    #[inline]
    pub fn feed_event(&mut self, ev: &NativeEvent<'_>) -> io::Result<()> {
        // A --ring selection learns names from NOTE_RING records only, the critical path
        // looks at NOTE_MSG ones: an event needs neither.
        self.joiner.feed_event(ev);
        if let Some(cp) = &mut self.critical {
            cp.start_at(self.joiner.origin());
        }
        self.after_record(&ev.record())
    }

    /// Feeds a run of native event records, [`feed_event`](Self::feed_event) for each: one
    /// call per run, and without a timeline or the critical path (the usual report) the
    /// loop looks only at what every event may change.
    ///
    /// Ends where `events` ends: what it could not hand out stays in it.
    pub fn feed_events(&mut self, events: &mut NativeEvents<'_>) -> io::Result<()> {
        if !self.timelines.is_empty() || self.critical.is_some() || self.draws() {
            for ev in events {
                self.feed_event(&ev)?;
            }
            return Ok(());
        }
        for ev in events {
            self.joiner.feed_event(&ev);
            self.hand_on()?;
            if !self.joiner.intervals.is_empty() {
                self.write_intervals()?;
            }
        }
        Ok(())
    }

    /// Hands the jobs the joiner finished to the classifier (or its thread).
    #[inline(always)]
    fn hand_on(&mut self) -> io::Result<()> {
        if self.joiner.has_finished() {
            if self.worker.is_some() {
                if self.drawn_on_worker {
                    // In order with what records show the drawn timeline.
                    self.stage_finished();
                    if self.building.jobs.len() >= WORKER_BATCH {
                        self.hand_over(false);
                    }
                } else if self.joiner.finished_len() >= WORKER_BATCH {
                    self.hand_over(false);
                }
            } else if !self.start_worker() {
                self.pump(false)?;
            } else if self.drawn_on_worker {
                self.stage_finished();
            }
        }
        Ok(())
    }

    /// What follows every record: finished jobs handed on, the timelines, interval rows.
    #[inline(always)]
    fn after_record(&mut self, rec: &RecordView<'_>) -> io::Result<()> {
        self.hand_on()?;
        if !self.timelines.is_empty() || self.critical.is_some() || self.draws() {
            self.since_watermark += 1;
            let w = if self.since_watermark >= self.watermark_every {
                self.since_watermark = 0;
                Some(self.watermark())
            } else {
                None
            };
            if let (Some(cp), Some(w)) = (&mut self.critical, w) {
                cp.advance(w);
            }
            for t in &mut self.timelines {
                t.record(rec, &self.joiner, w)?;
            }
            if self.draws() {
                self.draw_record(rec, w);
            }
        }
        if !self.joiner.intervals.is_empty() {
            self.write_intervals()?;
        }
        Ok(())
    }

    /// A message: an imported stream's source note says what the source cannot measure.
    #[cold]
    fn message(&mut self, rec: &RecordView<'_>) {
        if let grtrace_format::Body::Msg { text } = rec.body() {
            if let Some(im) = crate::measurable::Import::parse(text) {
                // Every stream of an import carries the same opening note (the first one is
                // kept) and may close with one saying what was known only at the end.
                match &mut self.import {
                    Some(first) => first.merge(&im),
                    None => {
                        self.import = Some(im);
                        self.joiner.imported = true;
                    }
                }
            }
        }
    }

    /// A loss the reader found (sequence gap).
    pub fn gap(&mut self, l: &Lost) {
        self.joiner.lost(l);
        for t in &mut self.timelines {
            // A write error here shows again at the next record or at finish.
            let _ = t.lost(l, &self.joiner);
        }
        if self.draws() {
            let t = lost_time(l, &self.joiner);
            self.draw(Draw::Lost { t, lost: *l });
        }
    }

    /// End of input: flushes open jobs and the classifier window, then the sinks.
    pub fn finish(&mut self) -> io::Result<()> {
        self.joiner.flush();
        if self.worker.is_some() {
            self.hand_over(true);
        } else {
            self.pump(true)?;
        }
        if let Some(cp) = &mut self.critical {
            cp.finish();
        }
        self.write_intervals()?;
        if let Some(out) = &self.interval_out {
            out.borrow_mut().flush()?;
        }
        self.summary.finalize();
        if let Some(e) = self.worker_err.take() {
            return Err(e);
        }
        for s in &mut self.worker_sinks {
            s.finish()?;
        }
        for s in &mut self.sinks {
            s.finish()?;
        }
        Ok(())
    }

    fn pump(&mut self, last: bool) -> io::Result<()> {
        let origin = self.joiner.origin();
        let Engine {
            joiner,
            finished,
            recent_tags,
            classifier,
            filter,
            summary,
            sinks,
            worker_sinks,
            names: known,
            seen,
            kept,
            timelines,
            drawn,
            critical,
            card,
            import,
            ..
        } = self;
        joiner.take_finished(finished);
        unmeasure(finished, import.as_ref().map_or(0, |i| i.unmeasured));
        if !worker_sinks.is_empty() {
            known.learn(finished, joiner, seen);
        }
        let names = Names {
            origin,
            joiner: &*joiner,
            card: *card,
        };
        let mut err = None;
        let mut emit = |job: &mut Job| {
            // Before the filter: a blocker outside the filter still names its tags.
            recent_tags.resolve(job);
            // The critical path is the GPU's, whatever jobs the report selects.
            if let Some(cp) = critical.as_mut() {
                cp.job(job);
            }
            if !filter.accepts(job, origin) {
                return;
            }
            summary.add(job);
            if err.is_none() {
                for s in worker_sinks.iter_mut() {
                    if let Err(e) = s.job(job, origin, &*known) {
                        err = Some(e);
                        break;
                    }
                }
            }
            if err.is_none() {
                for s in sinks.iter_mut() {
                    if let Err(e) = s.job(job, &names) {
                        err = Some(e);
                        break;
                    }
                }
                for t in timelines.iter_mut() {
                    if let Err(e) = t.job(job) {
                        err = Some(e);
                        break;
                    }
                }
            }
            if let Some(d) = drawn {
                d.job(job);
            }
            if let Some(k) = kept {
                k.push(job.clone());
            }
        };
        for job in finished.iter() {
            classifier.push(job, &mut emit);
        }
        finished.clear();
        if last {
            classifier.finish(&mut emit);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub fn ring_info(&self, id: u32) -> Option<RingInfo> {
        self.joiner.ring(id).map(RingInfo::from)
    }

    /// Everything a report needs, handed to `f` (after [`finish`](Self::finish)).
    pub fn with_report<R>(
        &self,
        top: usize,
        warnings: &[String],
        f: impl FnOnce(&crate::report::ReportInput<'_>) -> R,
    ) -> R {
        let rings = |id: u32| self.ring_info(id);
        let measurable = self.measurable();
        let util = self.util_rows_for(&measurable);
        let processes = self.process_rows();
        f(&crate::report::ReportInput {
            util: &util,
            measurable: &measurable,
            summary: &self.summary,
            stats: &self.joiner.stats,
            rules: self.rules(),
            rings: &rings,
            top,
            origin: self.origin(),
            warnings,
            critical: self.critical.as_ref().map(CriticalPath::report),
            unattributed: self
                .joiner
                .rings()
                .filter(|r| !self.summary.rings.contains_key(&r.id))
                .fold((0, 0), |(f, x), r| (f + r.faults, x + r.resets)),
            processes: &processes,
        })
    }

    /// The per-process rows (after [`finish`](Self::finish)), busiest first, with the
    /// process names of the recording's NOTE_PROCESS records and the rings' labels.
    pub fn process_rows(&self) -> Vec<crate::processes::ProcRow> {
        self.summary
            .processes
            .rows(&|pid| self.joiner.comms.get(pid), &|id| {
                crate::report::ring_label(id, &self.ring_info(id))
            })
    }

    /// What the recording's event codes can measure, and its source.
    pub fn measurable(&self) -> crate::measurable::Measurable {
        crate::measurable::Measurable::new(
            self.joiner.stats.seen_codes,
            self.source.0.clone(),
            self.source.1,
            self.import.as_ref(),
        )
    }

    /// Utilisation of every ring and context (after [`finish`](Self::finish)).
    pub fn util_rows(&self) -> Vec<UtilRow> {
        self.util_rows_for(&self.measurable())
    }

    /// [`util_rows`](Self::util_rows), with the shares `m` cannot measure NaN (shown `-`
    /// and null), by the same rule as the JSON intervals and phases.
    fn util_rows_for(&self, m: &crate::measurable::Measurable) -> Vec<UtilRow> {
        let rings = |id: u32| self.ring_info(id);
        let mut rows = crate::report::util_rows(&self.joiner, &self.summary, &rings);
        for u in rows.iter_mut().filter(|u| u.is_ring) {
            if !m.phases[SUBMIT_HOST] {
                // No COMMIT, or COMMIT and SUBMIT one instant: "host late" cannot be told.
                u.idle_host = f64::NAN;
            }
            if !m.phases[GPU_WAIT] {
                // No dependency wait is visible: neither idle for one nor busy waiting.
                u.idle_dep = f64::NAN;
                u.gpu_wait = f64::NAN;
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{BlockKind, Blocker};

    fn job(seqno: u64, tags: u8, blocker: Option<u64>) -> Job {
        let key = |seqno| JobKey {
            ctx: 1,
            ring: 0,
            seqno,
        };
        let mut j = Job {
            key: key(seqno),
            tags: Tags(tags),
            ..Job::default()
        };
        if let Some(b) = blocker {
            j.queued_behind = Blocker {
                kind: BlockKind::Queue,
                owned: true,
                key: key(b),
                ..Blocker::default()
            };
        }
        j
    }

    /// A synthetic trace of 100,000 records on one CPU: long enough for many hand-overs
    /// to the worker.
    fn synth_trace() -> Vec<u8> {
        let cfg = grtrace_format::synth::SynthConfig {
            records: 100_000,
            cpus: 1,
            ..Default::default()
        };
        let mut out = vec![Vec::new()];
        grtrace_format::synth::generate(&cfg, out.iter_mut().collect()).unwrap();
        out.remove(0)
    }

    /// The windows the worker tests run with: none, and one (a filter the worker applies).
    const WINDOWS: [Option<(u64, u64)>; 2] = [None, Some((100_000_000, 1_000_000_000))];

    /// An engine over `window` that `ready` sets up, with the worker thread (whatever the
    /// machine's CPUs: the worker is what is tested) or without, fed all of `data`.
    fn run_on(
        data: &[u8],
        window: Option<(u64, u64)>,
        worker: bool,
        ready: impl FnOnce(&mut Engine),
    ) -> Engine {
        use grtrace_format::{InputSource, Trace};
        let mut trace = Trace::open(vec![InputSource::Bytes {
            name: "synth".into(),
            data: data.to_vec(),
        }])
        .unwrap();
        let filter = Filter {
            window,
            ..Filter::default()
        };
        let mut e = Engine::new(Rules::default(), JoinConfig::default(), filter, 3);
        e.worker_wanted = worker;
        ready(&mut e);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (_, out, _) = crate::input::run(&mut trace, &mut e, &stop, false);
        out.unwrap();
        e
    }

    /// The report made with the classifying worker thread is the one made without it (text
    /// and JSON), on a trace long enough for many hand-overs, with and without a time
    /// window (a filter the worker applies).
    #[test]
    fn the_worker_thread_gives_the_same_report() {
        let data = synth_trace();
        for window in WINDOWS {
            let report = |worker: bool| {
                let mut e = run_on(&data, window, worker, |_| {});
                assert_eq!(e.worker.is_some(), worker);
                e.finish().unwrap();
                assert!(e.worker.is_none());
                let (mut text, mut json) = (Vec::new(), Vec::new());
                crate::output::write_report(&mut text, &e, 10, &[]).unwrap();
                crate::json::write(&mut json, &e, 10, &[]).unwrap();
                (String::from_utf8(text).unwrap(), json, e.joiner.stats.jobs)
            };
            let (one, two) = (report(false), report(true));
            assert!(one.2 > 10 * WORKER_BATCH as u64, "{} jobs", one.2);
            assert_eq!(one.0, two.0);
            assert!(one.1 == two.1, "JSON reports differ");
        }
    }

    /// A drawn timeline that writes down every call it gets.
    struct CallLog(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl CallLog {
        fn say(&self, call: String) {
            self.0.lock().unwrap().push(call);
        }
    }

    impl DrawnTimeline for CallLog {
        fn may_move(&self) -> bool {
            true
        }
        fn origin(&mut self, origin: u64) {
            self.say(format!("origin {origin}"));
        }
        fn seen(&mut self, t: u64, seen: Seen, watermark: Option<u64>) {
            self.say(format!("seen {t} {seen:?} {watermark:?}"));
        }
        fn lost(&mut self, t: u64, lost: &Lost) {
            self.say(format!("lost {t} {lost:?}"));
        }
        fn job(&mut self, job: &Job) {
            self.say(format!(
                "job {:?} {} {}",
                job.key,
                job.tags,
                job.first_time()
            ));
        }
        fn finish(&mut self, last_ns: u64) -> io::Result<()> {
            self.say(format!("finish {last_ns}"));
            Ok(())
        }
    }

    /// A drawn timeline on the worker thread gets the calls, in the same order and with
    /// the same watermarks, that it gets on the joining thread: what records show between
    /// the jobs that finished before them, the classifier's part of each watermark added
    /// there (with and without a window: the filter runs there too).
    #[test]
    fn a_drawn_timeline_on_the_worker_gets_the_same_calls() {
        let data = synth_trace();
        for window in WINDOWS {
            let calls = |worker: bool| {
                let log = std::sync::Arc::default();
                let mut e = run_on(&data, window, worker, |e| {
                    e.set_drawn_timeline(Box::new(CallLog(std::sync::Arc::clone(&log))));
                    // A watermark at every record: each one tells where the jobs were.
                    e.watermark_every = 1;
                });
                assert_eq!(e.drawn_on_worker, worker);
                e.finish().unwrap();
                e.finish_timelines(&[]).unwrap();
                let calls = std::mem::take(&mut *log.lock().unwrap());
                calls
            };
            let (here, there) = (calls(false), calls(true));
            let count = |what: &str| here.iter().filter(|c| c.starts_with(what)).count();
            assert!(count("job") > 4 * WORKER_BATCH, "{} jobs", count("job"));
            assert!(count("seen") > WORKER_STEPS, "{} records", count("seen"));
            assert_eq!(here.len(), there.len());
            for (i, (a, b)) in here.iter().zip(&there).enumerate() {
                assert_eq!(a, b, "call {i}");
            }
        }
    }

    /// A blocker's tags are named while it is one of the last RECENT_TAGS jobs seen, and
    /// forgotten after, whatever the bulk clean-up does in between.
    #[test]
    fn recent_tags_remember_exactly_the_last_jobs() {
        let mut r = RecentTags::default();
        let n = 3 * RECENT_TAGS + 17;
        for s in 0..n {
            r.resolve(&mut job(s, (s % 7) as u8, None));
            // Seen again: new tags, but it keeps its place in the order.
            if s % 100 == 0 {
                r.resolve(&mut job(s, 1, None));
            }
        }
        let tags_of = |r: &mut RecentTags, b: u64| {
            let mut j = job(u64::MAX, 0, Some(b));
            r.resolve(&mut j);
            j.queued_behind.tags
        };
        // The probe itself is remembered too: probe the oldest first.
        let oldest = n - RECENT_TAGS;
        assert_eq!(tags_of(&mut r, oldest - 1), None);
        assert_eq!(
            tags_of(&mut r, oldest + 1),
            Some(Tags(((oldest + 1) % 7) as u8))
        );
        let s100 = (n - 1) / 100 * 100;
        assert_eq!(tags_of(&mut r, s100), Some(Tags(1)));
        assert_eq!(tags_of(&mut r, n - 1), Some(Tags(((n - 1) % 7) as u8)));
        assert!(r.map.len() as u64 <= 2 * RECENT_TAGS);
    }
}
