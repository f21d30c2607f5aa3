//! Feeding an opened [`Trace`] (files, base name or stdin, merged in time order by
//! grtrace-format's reader) through the [`Engine`]: on this thread ([`run_with_progress`]),
//! or with the merge on a second thread ([`run_pipelined`], files only). Runs of native
//! events go to an engine in one call ([`Engine::feed_events`]).

use std::io;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

use grtrace_format::abi::rsize;
use grtrace_format::{
    EmbeddedStream, Endian, Item, Lost, NativeEvents, RecordView, RunItem, RunSummary,
    StreamHeader, Trace, TraceError,
};

use crate::engine::Engine;
use crate::handover::hand_over;
use crate::job::Origin;

/// Runs the whole trace through the engine. `stop` is polled (Ctrl-C): when it is set and
/// `stop_on_signal` is true, reading ends early and the report covers what was read.
/// An output error (for example a closed pipe under `--jobs`) ends the run and is returned.
pub fn run(
    trace: &mut Trace,
    engine: &mut Engine,
    stop: &AtomicBool,
    stop_on_signal: bool,
) -> (RunSummary, io::Result<()>, bool) {
    let mut quiet = grtrace_cli::Progress::new("grtreport", 0, grtrace_cli::ProgressMode::Never);
    run_with_progress(trace, engine, stop, stop_on_signal, &mut quiet)
}

/// [`run`], telling `progress` how many bytes were read (stream headers count as read).
pub fn run_with_progress(
    trace: &mut Trace,
    engine: &mut impl Engines,
    stop: &AtomicBool,
    stop_on_signal: bool,
    progress: &mut grtrace_cli::Progress,
) -> (RunSummary, io::Result<()>, bool) {
    let mut f = Feeder::new(trace);
    let sum = trace.for_each_run(|card, item| {
        match item {
            RunItem::Events { bytes, count } => f.events(engine, card, bytes, count)?,
            RunItem::Item(item) => f.item(engine, card, item)?,
        }
        f.poll(progress, stop, stop_on_signal)
    });
    progress.finish(f.done);
    let stopped = f.stopped;
    f.finish(trace, sum, stopped)
}

/// [`run_with_progress`] on two threads: a second thread merges the inputs (grtrace-format's
/// reader) and hands the items over in batches; this one joins them, in the same order, with
/// the same engines, so the report is the same. Runs of native events of mapped files are
/// handed over as slices of the mapping (no copy); other items (notes, gaps, stream headers,
/// swapped events, records of piped inputs, whose buffers the reader reuses) are copied
/// into the batch. At most [`BATCH_QUEUE`] batches wait: memory stays bounded, and the
/// joining thread stays within the few MiB of the mapping the reader keeps behind its
/// position. Ctrl-C is polled by the merging thread between batches; an output error here
/// stops it at its next hand-over.
///
/// For a live pipe, the one-thread [`run_with_progress`]: a batch fills only as records
/// arrive, which would hold back `--interval` rows and `--jobs` lines.
pub fn run_pipelined(
    trace: &mut Trace,
    engine: &mut impl Engines,
    stop: &AtomicBool,
    stop_on_signal: bool,
    progress: &mut grtrace_cli::Progress,
) -> (RunSummary, io::Result<()>, bool) {
    let mut f = Feeder::new(trace);
    // Over mapped files the joining thread is the slower: the merging one, once it found
    // the queue full, sleeps until the joining one has taken all but one batch, then fills
    // it again. Over --read streams (records copied) the merging one is: the joining one,
    // once it found the queue empty, sleeps until 3 batches are in.
    let (tx, rx) = hand_over::<Batch<'_>>(BATCH_QUEUE, 1, 3);
    let reading = &mut *trace;
    let (sum, stopped) = std::thread::scope(|s| {
        let merging = s.spawn(move || {
            let mut stopped = false;
            let mut batch = Batch::default();
            let sum = reading.for_each_run(|card, item| {
                batch.add(card, item);
                if batch.is_full() {
                    let next = tx.spare().unwrap_or_default();
                    if tx.send(std::mem::replace(&mut batch, next)).is_err() {
                        // The joining thread stopped (an output error).
                        return ControlFlow::Break(());
                    }
                    if stop_on_signal && stop.load(Ordering::Relaxed) {
                        stopped = true;
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            });
            if !batch.pieces.is_empty() {
                let _ = tx.send(batch);
            }
            (sum, stopped)
        });
        'batches: while let Some(mut batch) = rx.recv() {
            for p in &batch.pieces {
                let flow = match p {
                    &Piece::Mapped { card, bytes, count } => f.events(engine, card, bytes, count),
                    &Piece::Copied {
                        card,
                        start,
                        end,
                        count,
                    } => f.events(engine, card, &batch.bytes[start..end], count),
                    &Piece::Record {
                        card,
                        start,
                        end,
                        endian,
                    } => {
                        // The bytes the reader delivered, checked by it with this byte order.
                        match RecordView::parse(&batch.bytes[start..end], endian, 0) {
                            Ok(r) => f.item(engine, card, Item::Record(r)),
                            Err(_) => unreachable!("a record the reader parsed parses again"),
                        }
                    }
                    &Piece::Gap { card, lost } => f.item(engine, card, Item::Gap(lost)),
                    Piece::Stream(st) => {
                        let s = EmbeddedStream {
                            file: &st.file,
                            offset: st.offset,
                            header: &st.header,
                            earlier_session: st.earlier_session,
                        };
                        f.item(engine, st.header.card, Item::Stream(s))
                    }
                };
                if flow.is_break() {
                    break 'batches;
                }
            }
            progress.update(f.done);
            batch.clear();
            rx.give_back(batch);
        }
        // The merging thread's next hand-over fails: it stops.
        drop(rx);
        match merging.join() {
            Ok(r) => r,
            Err(p) => std::panic::resume_unwind(p),
        }
    });
    progress.finish(f.done);
    f.finish(trace, sum, stopped)
}

/// Items per batch handed from the merging thread to the joining one: a hand-over per few
/// thousand records; the bytes in flight are bounded by [`BATCH_BYTES`] and [`BATCH_QUEUE`].
const BATCH_ITEMS: u64 = 8192;
/// Bytes of records (mapped runs and copies) per batch, about: a batch is handed over once
/// past it (a run adds 64 KiB and one record at most). With [`BATCH_QUEUE`] batches
/// waiting, one being filled and one being joined, the joining thread is at most ~3 MiB
/// behind the merge, within the 4 MiB the reader keeps mapped behind its position.
const BATCH_BYTES: usize = 256 << 10;
/// Batches waiting for the joining thread at most (the merging thread waits beyond that).
pub const BATCH_QUEUE: usize = 6;

/// Items handed from the merging thread to the joining one, in merged order.
#[derive(Default)]
struct Batch<'m> {
    pieces: Vec<Piece<'m>>,
    /// Records copied for `Piece::Copied` and `Piece::Record`.
    bytes: Vec<u8>,
    /// Items in `pieces` (a run counts its records).
    items: u64,
    /// Bytes of records in `pieces`, mapped or copied.
    size: usize,
}

enum Piece<'m> {
    /// A run of native event records in a mapped input.
    Mapped {
        card: u32,
        bytes: &'m [u8],
        count: u64,
    },
    /// Native event records copied into `Batch::bytes` (records of piped inputs),
    /// consecutive ones of a card as one piece.
    Copied {
        card: u32,
        start: usize,
        end: usize,
        count: u64,
    },
    /// Another record (a note, a swapped event), copied into `Batch::bytes`.
    Record {
        card: u32,
        start: usize,
        end: usize,
        endian: Endian,
    },
    Gap {
        card: u32,
        lost: Lost,
    },
    Stream(Box<OwnedStream>),
}

/// An [`EmbeddedStream`] that outlives the reader's call (rare: one per recording).
struct OwnedStream {
    file: String,
    offset: u64,
    header: StreamHeader,
    earlier_session: Option<u64>,
}

impl<'m> Batch<'m> {
    #[inline(always)]
    fn add(&mut self, card: u32, item: RunItem<'m, '_>) {
        match item {
            RunItem::Events { bytes, count } => {
                self.pieces.push(Piece::Mapped { card, bytes, count });
                self.items += count;
                self.size += bytes.len();
                return;
            }
            RunItem::Item(Item::Record(r)) => {
                let start = self.bytes.len();
                // Records of --read streams, one by one: a 1.0 event is copied inline.
                match <&[u8; rsize::EVENT]>::try_from(r.bytes()) {
                    Ok(ev) => self.bytes.extend_from_slice(ev),
                    Err(_) => self.bytes.extend_from_slice(r.bytes()),
                }
                let end = self.bytes.len();
                self.size += r.size();
                if r.endian() == Endian::NATIVE && r.is_event() {
                    if let Some(Piece::Copied {
                        card: c,
                        end: e,
                        count,
                        ..
                    }) = self.pieces.last_mut()
                    {
                        if *c == card && *e == start {
                            *e = end;
                            *count += 1;
                            self.items += 1;
                            return;
                        }
                    }
                    self.pieces.push(Piece::Copied {
                        card,
                        start,
                        end,
                        count: 1,
                    });
                } else {
                    let endian = r.endian();
                    self.pieces.push(Piece::Record {
                        card,
                        start,
                        end,
                        endian,
                    });
                }
            }
            RunItem::Item(Item::Gap(lost)) => self.pieces.push(Piece::Gap { card, lost }),
            RunItem::Item(Item::Stream(s)) => {
                self.pieces.push(Piece::Stream(Box::new(OwnedStream {
                    file: s.file.to_string(),
                    offset: s.offset,
                    header: s.header.clone(),
                    earlier_session: s.earlier_session,
                })))
            }
        }
        self.items += 1;
    }

    fn is_full(&self) -> bool {
        self.items >= BATCH_ITEMS || self.size >= BATCH_BYTES
    }

    fn clear(&mut self) {
        self.pieces.clear();
        self.bytes.clear();
        self.items = 0;
        self.size = 0;
    }
}

/// What feeding the engines keeps between items: the first record seen, bytes and items
/// read (progress, Ctrl-C polling), an output error that ended the run.
struct Feeder {
    started: bool,
    done: u64,
    items: u64,
    /// `items` when the progress line and Ctrl-C were last looked at.
    polled: u64,
    stopped: bool,
    out_err: Option<io::Error>,
    /// Where a run stopped holding the events the reader found in it
    /// ([`Trace::run_changed`]).
    changed_at: Option<*const u8>,
}

impl Feeder {
    fn new(trace: &Trace) -> Feeder {
        Feeder {
            started: false,
            done: (trace.streams().iter().filter(|s| s.len.is_some()).count()
                * grtrace_format::abi::STREAM_HEADER_SIZE) as u64,
            items: 0,
            polled: 0,
            stopped: false,
            out_err: None,
            changed_at: None,
        }
    }

    /// What a run ends with: the summary with a changed run's error, the output error.
    fn finish(
        self,
        trace: &Trace,
        mut sum: RunSummary,
        stopped: bool,
    ) -> (RunSummary, io::Result<()>, bool) {
        if let Some(e) = self.changed_at.and_then(|at| trace.run_changed(at)) {
            // The merging thread may have found the shrink itself: one line per file.
            if !sum.errors.iter().any(|x| x.file == e.file) {
                sum.errors.push(e);
            }
        }
        (sum, self.out_err.map_or(Ok(()), Err), stopped)
    }

    /// A run of native event records of `card`.
    #[inline(always)]
    fn events(
        &mut self,
        engine: &mut impl Engines,
        card: u32,
        bytes: &[u8],
        count: u64,
    ) -> ControlFlow<()> {
        let mut events = NativeEvents::new(bytes);
        if !self.started {
            if let Some(first) = events.clone().next() {
                self.started = true;
                engine.start_at(Origin::at(first.time_ns()));
            }
        }
        if let Err(err) = engine.of_card(card).feed_events(&mut events) {
            self.out_err = Some(err);
            return ControlFlow::Break(());
        }
        if !events.rest().is_empty() {
            // The reader checked these bytes; they changed since (the file shrank).
            // Reading on would report without the rest of this file: stop, and say where.
            self.changed_at = Some(events.rest().as_ptr());
            return ControlFlow::Break(());
        }
        self.done += bytes.len() as u64;
        self.items += count;
        ControlFlow::Continue(())
    }

    /// Any other item.
    #[inline(always)]
    fn item(&mut self, engine: &mut impl Engines, card: u32, item: Item<'_>) -> ControlFlow<()> {
        match item {
            Item::Record(r) => {
                if !self.started {
                    self.started = true;
                    engine.start_at(Origin::at(r.time_ns()));
                }
                self.done += r.bytes().len() as u64;
                if let Err(e) = engine.of_card(card).feed(&r) {
                    self.out_err = Some(e);
                    return ControlFlow::Break(());
                }
            }
            Item::Gap(l) => engine.of_card(card).gap(&l),
            // Before any record of that stream, so before its card's engine is made.
            Item::Stream(s) => engine.stream(&s),
        }
        self.items += 1;
        ControlFlow::Continue(())
    }

    /// After an item: every 4096 items (not per record), the progress line and Ctrl-C.
    #[inline(always)]
    fn poll(
        &mut self,
        progress: &mut grtrace_cli::Progress,
        stop: &AtomicBool,
        stop_on_signal: bool,
    ) -> ControlFlow<()> {
        if self.items >> 12 != self.polled >> 12 {
            self.polled = self.items;
            progress.update(self.done);
            if stop_on_signal && stop.load(Ordering::Relaxed) {
                self.stopped = true;
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

/// Where the items of a card go: one [`Engine`] for everything (a single-card run, the
/// tests), or one per card ([`Cards`]).
pub trait Engines {
    /// The engine that joins the jobs of `card`.
    fn of_card(&mut self, card: u32) -> &mut Engine;

    /// The run's time origin: its first record's time (called once, before it is fed).
    fn start_at(&mut self, _origin: Origin) {}

    /// A stream header found inside an input that starts a new (card, session), before any
    /// record of it (another recording of a card comes only under
    /// [`Trace::merge_sessions`]).
    fn stream(&mut self, _s: &EmbeddedStream<'_>) {}
}

impl Engines for Engine {
    fn of_card(&mut self, _card: u32) -> &mut Engine {
        self
    }
}

/// Makes the engine of a card the first time the run meets it, from the card's first stream
/// header when there is one (a closure `(card, header) -> Engine` is one).
pub trait MakeEngine {
    fn make(&mut self, card: u32, header: Option<&StreamHeader>) -> Engine;
}

impl<F: FnMut(u32, Option<&StreamHeader>) -> Engine> MakeEngine for F {
    fn make(&mut self, card: u32, header: Option<&StreamHeader>) -> Engine {
        self(card, header)
    }
}

/// One [`Engine`] per card, like btt per device: jobs of different cards are never joined,
/// a fence owned on another card is one no job of this card owns. Engines are made by
/// `make` when their card first appears, with the card's first stream header (an opened
/// input's, or one found mid-stream: a card that turns up only on stdin is named like one
/// known at open), and kept in card order; once there are two, each engine's
/// [`card`](Engine::card) is set.
/// Every card's clock starts at the run's first record (see [`Joiner::start_at`](crate::joiner::Joiner::start_at)):
/// times, `--interval` rows and the timeline exports of all cards share one origin.
pub struct Cards<F: MakeEngine> {
    engines: Vec<(u32, Engine)>,
    make: F,
    /// The run's time origin, once known.
    origin: Origin,
    /// The first stream header of each card: the opened inputs', then those found inside
    /// inputs (a few cards at most).
    headers: Vec<StreamHeader>,
    /// Another recording of a card met mid-stream and merged (`--force`): one message each.
    pub merged: Vec<TraceError>,
    /// Every stream header found inside an input (at most [`EMBEDDED_LIMIT`]): each such
    /// stream should end with its own STREAM_INFO.
    pub embedded: Vec<StreamHeader>,
}

/// Most stream headers found inside inputs that [`Cards::embedded`] keeps (a hostile input
/// cannot grow it).
pub const EMBEDDED_LIMIT: usize = 4096;

impl<F: MakeEngine> Cards<F> {
    /// `headers`: the opened inputs' stream headers; `make` makes each card's engine.
    pub fn with_maker(headers: Vec<StreamHeader>, make: F) -> Self {
        let mut first: Vec<StreamHeader> = Vec::new();
        for h in headers {
            if !first.iter().any(|f| f.card == h.card) {
                first.push(h);
            }
        }
        Cards {
            engines: Vec::new(),
            make,
            origin: Origin::UNKNOWN,
            headers: first,
            merged: Vec::new(),
            embedded: Vec::new(),
        }
    }

    /// What makes the engines.
    pub fn maker(&mut self) -> &mut F {
        &mut self.make
    }

    /// The engines with their cards, in card order.
    pub fn iter(&self) -> impl Iterator<Item = &(u32, Engine)> {
        self.engines.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut (u32, Engine)> {
        self.engines.iter_mut()
    }

    pub fn len(&self) -> usize {
        self.engines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.engines.is_empty()
    }
}

impl<F: FnMut(u32, Option<&StreamHeader>) -> Engine> Cards<F> {
    /// [`Cards::with_maker`] of a closure.
    pub fn new(headers: Vec<StreamHeader>, make: F) -> Self {
        Self::with_maker(headers, make)
    }
}

impl<F: MakeEngine> Engines for Cards<F> {
    // Called per record: inlined, and a single-card run does not search.
    #[inline(always)]
    fn of_card(&mut self, card: u32) -> &mut Engine {
        if self.engines.len() == 1 && self.engines[0].0 == card {
            return &mut self.engines[0].1;
        }
        // A handful of cards at most: a sorted vector, the common case its first entry.
        let i = match self.engines.binary_search_by_key(&card, |(c, _)| *c) {
            Ok(i) => i,
            Err(i) => {
                let h = self.headers.iter().find(|h| h.card == card);
                let mut e = self.make.make(card, h);
                e.joiner.start_at(self.origin);
                self.engines.insert(i, (card, e));
                if self.engines.len() > 1 {
                    // Several cards (a second one may turn up only while reading, from
                    // streams concatenated on stdin): every engine labels its rows.
                    for (c, e) in &mut self.engines {
                        e.card = Some(*c);
                    }
                }
                i
            }
        };
        &mut self.engines[i].1
    }

    fn start_at(&mut self, origin: Origin) {
        self.origin = origin;
        for (_, e) in &mut self.engines {
            e.joiner.start_at(origin);
        }
    }

    #[cold]
    fn stream(&mut self, s: &EmbeddedStream<'_>) {
        // Merged under --force (the reader refuses it otherwise): said at the end.
        self.merged.extend(s.session_conflict());
        if self.embedded.len() < EMBEDDED_LIMIT {
            self.embedded.push(s.header.clone());
        }
        if !self.headers.iter().any(|h| h.card == s.header.card) {
            self.headers.push(s.header.clone());
        }
    }
}
