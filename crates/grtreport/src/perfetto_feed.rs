//! `--perfetto FILE.pftrace` on a thread of its own, beside the report.
//!
//! Drawing and encoding the protobuf timeline costs several times what the report does (see
//! bench/perfetto). The engines keep on the joining thread only what needs the joiner: what
//! a record shows ([`Names::see`]: a marker, a ring's outstanding jobs and fill, a message,
//! a note) and the time a loss is drawn at. Each timeline call becomes an owned [`Item`];
//! batches of them go to the export thread, which makes every card's [`PerfettoPb`] there
//! and calls it in the order the engines did, so the file is what the exporters would have
//! written on the joining thread. The hand-over queue is bounded ([`crate::handover`]):
//! when the export falls behind, the joining thread waits, and memory stays flat.
//!
//! Errors: the export keeps its first write error and the last card's
//! [`Timeline::finish`] returns it; a panic on the export thread is raised again there.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;
use std::thread::JoinHandle;

use grtrace_format::{Lost, RecordView};

use crate::engine::{Engine, Timeline};
use crate::handover::{hand_over, Producer};
use crate::job::Job;
use crate::joiner::Joiner;
use crate::perfetto::PerfettoConfig;
use crate::perfetto_pb::{PbJoint, PerfettoPb};
use crate::timeline::front::lost_time;
use crate::timeline::{Names, Seen};

/// Items in a batch: enough that a hand-over costs little per record.
const BATCH_ITEMS: usize = 4096;
/// Batches waiting for the export thread at most; the joining thread, once it found the
/// queue full, fills the next batch when the export has taken all but [`QUEUE_LOW`].
const QUEUE: usize = 8;
const QUEUE_LOW: usize = 2;

/// One timeline call of a card's engine, owned (`card`: the card's exporter, in the order
/// they were attached).
enum Item {
    /// The exporter of card `cfg.card` is made.
    Attach(PerfettoConfig),
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

/// The joining thread's end: the batch being filled, the queue and the export thread.
struct Pipe {
    batch: Batch,
    /// None once the export thread is gone (it panicked: its join says so).
    queue: Option<Producer<Batch>>,
    thread: Option<JoinHandle<io::Result<()>>>,
    /// Exporters attached, and of those not finished yet.
    attached: u32,
    open: u32,
}

impl Pipe {
    fn push(&mut self, item: Item) {
        self.batch.items.push(item);
        if self.batch.items.len() >= BATCH_ITEMS {
            self.send();
        }
    }

    fn send(&mut self) {
        let Some(q) = &self.queue else {
            self.batch.items.clear();
            self.batch.jobs.clear();
            return;
        };
        let next = q.spare().unwrap_or_default();
        if q.send(std::mem::replace(&mut self.batch, next)).is_err() {
            self.queue = None;
        }
    }

    /// Ends the export: the last batch, then the thread's result.
    fn join(&mut self) -> io::Result<()> {
        self.send();
        self.queue = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Ok(()),
        }
    }
}

impl Drop for Pipe {
    /// A run that ends early (a failed input, a usage error found late) still lets the
    /// export thread end before the process does; its result is not asked for.
    fn drop(&mut self) {
        self.queue = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The protobuf export of a run, on its own thread: [`PbThread::feeder`] gives each card's
/// engine its timeline.
pub struct PbThread(Rc<RefCell<Pipe>>);

impl PbThread {
    /// Starts the export thread writing into `out`; `several`: the inputs hold more than
    /// one card.
    pub fn start<W: Write + Send + 'static>(out: W, several: bool) -> io::Result<PbThread> {
        let (queue, todo) = hand_over::<Batch>(QUEUE, QUEUE_LOW, 1);
        let thread = std::thread::Builder::new()
            .name("perfetto".into())
            .spawn(move || {
                let joint = PbJoint::new(out, None, several);
                let mut cards = Vec::new();
                let mut result = Ok(());
                while let Some(mut batch) = todo.recv() {
                    let mut jobs = batch.jobs.drain(..);
                    for item in batch.items.drain(..) {
                        match item {
                            Item::Attach(cfg) => {
                                cards.push(PerfettoPb::in_joint(cfg, joint.clone()));
                            }
                            Item::Origin { card, origin } => {
                                cards[card as usize].set_origin(origin);
                            }
                            Item::Record {
                                card,
                                t,
                                seen,
                                watermark,
                            } => cards[card as usize].seen(t, seen, watermark),
                            Item::Lost { card, t, lost } => cards[card as usize].lost_at(&lost, t),
                            Item::Job { card } => {
                                let job = jobs.next().expect("a job for each job item");
                                cards[card as usize].job(job);
                            }
                            Item::Finish { card, last_ns } => {
                                let r = cards[card as usize].finish(last_ns);
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
        Ok(PbThread(Rc::new(RefCell::new(Pipe {
            batch: Batch::default(),
            queue: Some(queue),
            thread: Some(thread),
            attached: 0,
            open: 0,
        }))))
    }

    /// The timeline of card `cfg.card`'s engine (its exporter is made on the export
    /// thread; cards share the file as [`PbJoint`] says).
    pub fn feeder(&self, cfg: PerfettoConfig) -> PbFeeder {
        let mut pipe = self.0.borrow_mut();
        let card = pipe.attached;
        pipe.attached += 1;
        pipe.open += 1;
        pipe.push(Item::Attach(cfg));
        PbFeeder {
            card,
            names: Names::default(),
            origin_sent: false,
            pipe: self.0.clone(),
        }
    }
}

/// A card's protobuf export as its engine sees it: what needs the joiner is found here,
/// the rest is handed to the export thread.
pub struct PbFeeder {
    card: u32,
    /// Ring sizes (for fills) and names, learnt as the exporter learns them.
    names: Names,
    origin_sent: bool,
    pipe: Rc<RefCell<Pipe>>,
}

impl Timeline for PbFeeder {
    fn record(
        &mut self,
        rec: &RecordView<'_>,
        joiner: &Joiner,
        watermark: Option<u64>,
    ) -> io::Result<()> {
        let mut pipe = self.pipe.borrow_mut();
        if !self.origin_sent {
            if let Some(origin) = joiner.origin().get() {
                self.origin_sent = true;
                pipe.push(Item::Origin {
                    card: self.card,
                    origin,
                });
            }
        }
        let seen = self.names.see(rec, joiner);
        if !matches!(seen, Seen::Nothing) || watermark.is_some() {
            pipe.push(Item::Record {
                card: self.card,
                t: rec.time_ns(),
                seen,
                watermark,
            });
        }
        Ok(())
    }

    fn lost(&mut self, l: &Lost, joiner: &Joiner) -> io::Result<()> {
        self.pipe.borrow_mut().push(Item::Lost {
            card: self.card,
            t: lost_time(l, joiner),
            lost: *l,
        });
        Ok(())
    }

    fn job(&mut self, job: &Job) -> io::Result<()> {
        let mut pipe = self.pipe.borrow_mut();
        pipe.batch.jobs.push(job.clone());
        pipe.push(Item::Job { card: self.card });
        Ok(())
    }

    fn finish(&mut self, engine: &Engine, _warnings: &[String]) -> io::Result<()> {
        let mut pipe = self.pipe.borrow_mut();
        pipe.push(Item::Finish {
            card: self.card,
            last_ns: engine.joiner.stats.last_ns,
        });
        pipe.open -= 1;
        if pipe.open > 0 {
            return Ok(());
        }
        pipe.join()
    }
}
