//! `--perfetto FILE.pftrace` on a thread of its own, beside the report.
//!
//! Drawing and encoding the protobuf timeline costs several times what the report does (see
//! bench/perfetto). The engine keeps on the joining thread only what needs the joiner: what
//! a record shows ([`crate::timeline::Names::see`]: a marker, a ring's outstanding jobs and
//! fill, a message, a note) and the time a loss is drawn at. A card's [`PbFeeder`] is the
//! engine's [`DrawnTimeline`]: each of its calls becomes an owned [`Item`]; batches of them
//! go to the export thread, which makes every card's [`PerfettoPb`] there and calls it in
//! the order the engine did. In a run of one card the feeder runs on the engine's worker
//! thread, after the classifier, and the joining thread only joins. The hand-over queues
//! are bounded ([`crate::handover`]): when the export falls behind, the threads before it
//! wait, and memory stays flat.
//!
//! Errors: the export keeps its first write error and the last card's
//! [`DrawnTimeline::finish`] returns it; a panic on the export thread is raised again there.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use grtrace_format::Lost;

use crate::engine::DrawnTimeline;
use crate::handover::{hand_over, Producer};
use crate::job::Job;
use crate::perfetto::PerfettoConfig;
use crate::perfetto_pb::{PbJoint, PerfettoPb};
use crate::timeline::Seen;

/// Items in a batch: enough that a hand-over costs little per record.
const BATCH_ITEMS: usize = 4096;
/// Batches waiting for the export thread at most; the joining thread, once it found the
/// queue full, fills the next batch when the export has taken all but [`QUEUE_LOW`].
const QUEUE: usize = 8;
const QUEUE_LOW: usize = 2;

/// One timeline call of a card's engine, owned (`card`: the card's exporter, in the order
/// they were attached).
enum Item {
    /// The exporter of the `.0`th card attached (card `cfg.card`) is made.
    Attach(u32, PerfettoConfig),
    /// The run's time origin, known from the card's first record on.
    Origin { card: u32, origin: u64 },
    /// What a record at `t` showed, with the engine's watermark if it computed one.
    Record {
        card: u32,
        t: u64,
        seen: Seen,
        watermark: Option<u64>,
    },
    /// Records lost in a gap of a sequence, drawn at `t`.
    Lost { card: u32, t: u64, lost: Lost },
    /// A finished job that passed the filter: the batch's next job.
    Job { card: u32 },
    /// End of the card's input; `last_ns`: its last record's time.
    Finish { card: u32, last_ns: u64 },
}

/// Items in call order, and the jobs of their [`Item::Job`]s in the same order (kept apart
/// so that an item stays small).
#[derive(Default)]
struct Batch {
    items: Vec<Item>,
    jobs: Vec<Job>,
}

/// What the cards' feeders share: the queue to the export thread and the thread.
struct Link {
    /// None once the export thread is gone (it panicked: its join says so).
    queue: Option<Producer<Batch>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    /// Exporters attached, and of those not finished yet.
    attached: u32,
    open: u32,
}

impl Link {
    /// Queues `batch`; returns an empty one to fill next.
    fn send(&mut self, batch: Batch) -> Batch {
        let Some(q) = &self.queue else {
            return Batch::default();
        };
        let next = q.spare().unwrap_or_default();
        if q.send(batch).is_err() {
            self.queue = None;
        }
        next
    }

    /// Ends the export: the thread's result.
    fn join(&mut self) -> io::Result<()> {
        self.queue = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(()),
        }
    }
}

impl Drop for Link {
    /// A run that ends early (a failed input, a usage error found late) still lets the
    /// export thread end before the process does; its result is not asked for.
    fn drop(&mut self) {
        self.queue = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The exporter of the `c`th card attached (its [`Item::Attach`] came first).
fn card<W: Write>(cards: &mut [Option<PerfettoPb<W>>], c: u32) -> &mut PerfettoPb<W> {
    cards[c as usize].as_mut().expect("attached first")
}

/// Locks the link (a panic elsewhere while it was held changes nothing it holds).
fn lock(link: &Mutex<Link>) -> MutexGuard<'_, Link> {
    link.lock().unwrap_or_else(|p| p.into_inner())
}

/// The protobuf export of a run, on its own thread: [`PbThread::feeder`] gives each card's
/// engine its feeder.
pub struct PbThread {
    link: Arc<Mutex<Link>>,
    several: bool,
}

impl PbThread {
    /// Starts the export thread writing into `out`; `several`: the inputs hold more than
    /// one card.
    pub fn start<W: Write + Send + 'static>(out: W, several: bool) -> io::Result<PbThread> {
        let (queue, todo) = hand_over::<Batch>(QUEUE, QUEUE_LOW, 1);
        let thread = std::thread::Builder::new()
            .name("perfetto".into())
            .spawn(move || {
                let joint = PbJoint::new(out, None, several);
                let mut cards: Vec<Option<PerfettoPb<W>>> = Vec::new();
                let mut result = Ok(());
                while let Some(mut batch) = todo.recv() {
                    let mut jobs = batch.jobs.drain(..);
                    for item in batch.items.drain(..) {
                        match item {
                            Item::Attach(id, cfg) => {
                                let id = id as usize;
                                if cards.len() <= id {
                                    cards.resize_with(id + 1, || None);
                                }
                                cards[id] = Some(PerfettoPb::in_joint(cfg, joint.clone()));
                            }
                            Item::Origin { card: c, origin } => {
                                card(&mut cards, c).set_origin(origin);
                            }
                            Item::Record {
                                card: c,
                                t,
                                seen,
                                watermark,
                            } => card(&mut cards, c).seen(t, seen, watermark),
                            Item::Lost { card: c, t, lost } => {
                                card(&mut cards, c).lost_at(&lost, t)
                            }
                            Item::Job { card: c } => {
                                let job = jobs.next().expect("a job for each job item");
                                card(&mut cards, c).job(job);
                            }
                            Item::Finish { card: c, last_ns } => {
                                let r = card(&mut cards, c).finish(last_ns);
                                if result.is_ok() {
                                    result = r;
                                }
                            }
                        }
                    }
                    drop(jobs);
                    todo.give_back(batch);
                }
                result
            })?;
        let link = Link {
            queue: Some(queue),
            thread: Some(thread),
            attached: 0,
            open: 0,
        };
        Ok(PbThread {
            link: Arc::new(Mutex::new(link)),
            several,
        })
    }

    /// The feeder of card `cfg.card`'s engine (its exporter is made on the export thread;
    /// cards share the file as [`PbJoint`] says).
    pub fn feeder(&self, cfg: PerfettoConfig) -> PbFeeder {
        let mut link = lock(&self.link);
        let card = link.attached;
        link.attached += 1;
        link.open += 1;
        // Sent at once: the export thread makes the exporters in the order they attach.
        let mut batch = link.send(Batch {
            items: vec![Item::Attach(card, cfg)],
            jobs: Vec::new(),
        });
        batch.items.clear();
        PbFeeder {
            card,
            batch,
            link: self.link.clone(),
            may_move: !self.several,
        }
    }
}

/// A card's protobuf export as its engine sees it: the engine's calls become items, handed
/// to the export thread in batches.
///
/// A run of one card feeds it from the engine's worker thread (see [`DrawnTimeline`]);
/// the cards of a run of several feed theirs from the joining thread, each its own
/// batches, so the export thread sees each card's calls in order and the cards' batches
/// in the order they filled (a run whose second card turns up late, in concatenated
/// streams on standard input, may have its first card's feeder on a worker already: the
/// trace is the same, its blocks may come in another order).
pub struct PbFeeder {
    card: u32,
    batch: Batch,
    link: Arc<Mutex<Link>>,
    may_move: bool,
}

impl PbFeeder {
    fn push(&mut self, item: Item) {
        self.batch.items.push(item);
        if self.batch.items.len() >= BATCH_ITEMS {
            self.send();
        }
    }

    fn send(&mut self) {
        let full = std::mem::take(&mut self.batch);
        self.batch = lock(&self.link).send(full);
    }
}

impl DrawnTimeline for PbFeeder {
    fn may_move(&self) -> bool {
        self.may_move
    }

    fn origin(&mut self, origin: u64) {
        let card = self.card;
        self.push(Item::Origin { card, origin });
    }

    fn seen(&mut self, t: u64, seen: Seen, watermark: Option<u64>) {
        let card = self.card;
        self.push(Item::Record {
            card,
            t,
            seen,
            watermark,
        });
    }

    fn lost(&mut self, t: u64, lost: &Lost) {
        let card = self.card;
        self.push(Item::Lost {
            card,
            t,
            lost: *lost,
        });
    }

    fn job(&mut self, job: &Job) {
        self.batch.jobs.push(job.clone());
        let card = self.card;
        self.push(Item::Job { card });
    }

    fn finish(&mut self, last_ns: u64) -> io::Result<()> {
        let card = self.card;
        self.push(Item::Finish { card, last_ns });
        self.send();
        let mut link = lock(&self.link);
        link.open -= 1;
        if link.open > 0 {
            return Ok(());
        }
        link.join()
    }
}
