//! Reading whole traces: finding the inputs, opening them, and merging their records into one
//! stream ordered by `(time_ns, cpu, seq)`, with per-CPU sequence checking.
//!
//! * [`resolve_inputs`] turns command-line words into [`InputSource`]s: a base name (`run` finds
//!   every `run.grtrace.<cpu>` and `run.card<N>.grtrace.<cpu>` present, warning about holes, as
//!   ranges, and empty files instead of stopping at the first missing CPU), explicit files, or
//!   `-` for stdin.
//! * [`Trace::open`] maps regular files read-only (memmap2; a file truncated under the reader
//!   ends with an error instead of SIGBUS, see `sigbus.rs`) and reads stream headers. Pipes and
//!   stdin are read incrementally, in buffers that shrink with the number of inputs.
//!   [`Trace::check_sessions`] says whether the inputs of a card come from one recording.
//! * [`Trace::for_each`] runs the k-way merge and calls a closure with every [`Item`]. Records
//!   are zero-copy views into the mapping (pipe input is copied once into per-CPU queues).
//!   [`Trace::for_each_run`] is the same merge for consumers of many events: consecutive
//!   native event records of a mapped file come as one slice that borrows the trace, not
//!   the call (it may be read on another thread), to be read with
//!   [`NativeEvents`](crate::NativeEvents).
//!
//! ## Merge
//!
//! A per-CPU file is already in time order, so it is one merge cursor; it emits records
//! while its next one sorts before every other cursor's head (two interleaved CPUs cost one
//! key comparison per record, not a heap update). Event records in the cursor's byte order
//! take a fast path: header checks with a compile-time byte order (the native copy is plain
//! loads), the sequence state of the file's CPU in locals; anything else (notes, unknown
//! records, damage, stream headers, pages to give back) takes the general one. A mapped
//! file gives the pages it has passed back to the kernel every 4 MiB, keeping the last
//! 4 MiB (runs handed to a consumer on another thread are read a little later), so the
//! resident set stays flat however long the trace. A merged input (header
//! `MERGED`, for example `grtrace -o -` on stdin or a `grtparse -d` dump) interleaves CPUs in
//! chunks; it is split into one queue per CPU. A queue that runs empty while its input still
//! has data is refilled *before* anything else is emitted: this is the per-CPU watermark
//! (nothing is emitted past the last time read on any CPU of that input). A pipe input is first
//! read ahead by [`PIPE_READAHEAD`] bytes (or to its end) so that every CPU has been seen, and an
//! input never buffers more than [`PIPE_WINDOW`] bytes: past that, records are emitted in the
//! best order known and [`RunSummary::reordered`] counts any that had to go out of order.
//!
//! ## Losses and damage
//!
//! Per CPU of each (card, session), `seq` 0 is unsequenced (user-space notes) and skipped. A jump from `s` to `s + 1 + k`
//! yields an [`Item::Gap`] of `k` records (source [`SEQ_GAP`](crate::abi::lost_source::SEQ_GAP)) just before the record
//! after the gap, with `first_ns`/`last_ns` the times of the records around it; a first record
//! with `seq` > 1 is a gap at the start. A repeat or a step backwards is counted and warned about
//! with its byte offset. Inputs whose header has `SEQ_CHECKED` are not checked.
//!
//! A damaged input ends at its damage: everything before it is delivered, the error (file and
//! byte offset) goes into [`RunSummary::errors`] and the other inputs carry on. Unknown record
//! types are skipped and counted (they are not delivered).
//!
//! ## Files
//!
//! `inputs.rs` finds inputs, `open.rs` opens them (mapping, SIGBUS guard, stream headers),
//! `file.rs` is the cursor of a mapped per-CPU file, `pipe.rs` reads streams and splits
//! merged inputs into per-CPU queues, `seq.rs` checks sequences, and `merge.rs` holds the one
//! merge loop, which delivers to a sink: items ([`Trace::for_each_card`]) or raw runs
//! ([`Trace::for_each_raw`]).
//!
//! ## Beyond opening and merging
//!
//! What the reader does besides "open the inputs, merge them, hand out records":
//!
//! * [`InputSource`] has, besides files, `Stream` (any `Read`, used for stdin and FIFOs) and `Bytes`
//!   (in-memory data, for tests and fuzzing) variants.
//! * [`Trace::open`] fails only when *no* input could be opened; header errors of individual
//!   inputs are kept ([`Trace::open_errors`]) and repeated in the summary of [`Trace::for_each`],
//!   so the good inputs are still parsed.
//! * [`TraceError`] names the file and says what went wrong (`error: ErrorKind`);
//!   `ErrorKind::Format` wraps [`FormatError`](crate::FormatError), which names the offset.
//! * [`Trace::for_each_raw`] for consumers that copy records verbatim (`grtparse -d`):
//!   the same merge, with native-endian event records delivered as byte slices ([`RawItem`]):
//!   consecutive ones of one per-CPU file as one slice (64 KiB at most, about).
//! * [`Trace::for_each_run`] for consumers that read many events (`grtreport`): runs
//!   as in `for_each_raw`, with their card, borrowing the trace for its lifetime
//!   ([`RunItem`]); [`InputSource::Stream`] readers are `Send`, so a [`Trace`] can be merged
//!   on another thread than the one that opened it.
//! * [`RunSummary`] also counts gaps, sequence repeats, reordered records and keeps warnings,
//!   and the peak of bytes and queues that merged inputs held ([`RunSummary::peak_buffered`],
//!   [`RunSummary::peak_queues`]).
//! * Added: [`Trace::for_each_card`] delivers each item with the card of its stream header,
//!   and sequences are checked per (card, session, CPU): one run may merge several devices.
//! * A stream header after records (concatenated streams) is accepted in files as on stdin
//!   (FORMAT.md §6). One that starts a (card, session) not seen before is handed to the
//!   consumer as [`Item::Stream`] before the records under it.

use std::ops::ControlFlow;

use crate::record::{Lost, StreamHeader};
use crate::view::RecordView;

mod error;
mod file;
mod inputs;
mod merge;
mod open;
mod pipe;
mod seq;
#[cfg(test)]
mod tests;

pub use error::{ErrorKind, TraceError, Warning};
pub use inputs::{base_files, resolve_inputs, InputSource};

use merge::{ItemSink, RawSink, RunSink};
use open::{MappedInput, PipeInput};

/// Bytes a pipe input reads ahead before its first record is emitted (or up to its end).
pub const PIPE_READAHEAD: usize = 1 << 20;
/// Most bytes of records one pipe or merged input keeps queued for ordering.
pub const PIPE_WINDOW: usize = 64 << 20;
/// CPUs numbered at or above this are not sequence-checked (the table is indexed by CPU).
pub const MAX_CPUS: u32 = 8192;
/// Warnings kept in a summary; later ones are only counted.
pub const MAX_WARNINGS: usize = 100;
const READ_CHUNK: usize = 1 << 20;
/// Smallest read buffer of a stream input (when thousands of inputs share the budget).
const MIN_CHUNK: usize = 4 << 10;

/// One opened input: its name, header and length (None for streams).
#[derive(Clone, Debug)]
pub struct StreamInfoView {
    /// Name of the input, as messages use it.
    pub name: String,
    /// Its (first) stream header.
    pub header: StreamHeader,
    /// Byte length of the input; `None` for a stream read incrementally.
    pub len: Option<u64>,
}

/// One item of the merged stream.
#[derive(Clone, Copy, Debug)]
// Deliberately exhaustive: a consumer that matches every item must be revisited when the
// merge gains a kind of item, rather than skip it silently.
pub enum Item<'a> {
    /// An event or note, including `NOTE_LOST` records written by the recorder.
    Record(RecordView<'a>),
    /// A sequence gap the reader found (source [`SEQ_GAP`](crate::abi::lost_source::SEQ_GAP)), placed where it
    /// happened: just before the first record after it on that CPU.
    Gap(Lost),
    /// A stream header inside an input (concatenated streams) that starts a (card, session)
    /// no opened input and no earlier header named: delivered before any record that came
    /// under it, with the card it names. This is how a consumer learns the driver of a card
    /// that turns up only mid-stream, and that a second recording of a card follows (see
    /// [`EmbeddedStream::session_conflict`]).
    Stream(EmbeddedStream<'a>),
}

/// A stream header found inside an input that starts a new (card, session): [`Item::Stream`].
///
/// Only the first header of each (card, session) is delivered: the headers of the other
/// CPU streams of a recording (`cat run.grtrace.0 run.grtrace.1`) add nothing a consumer
/// labels with. Past the 64 pairs the reader tells apart, headers are not delivered (the
/// reader warns with [`Warning::TooManyOrigins`]).
#[derive(Clone, Copy, Debug)]
pub struct EmbeddedStream<'a> {
    /// The input it was found in, as messages name it.
    pub file: &'a str,
    /// Byte offset of the header in that input.
    pub offset: u64,
    /// The header: card, driver, session, flags of the records after it.
    pub header: &'a StreamHeader,
    /// The session of an earlier stream of the same card (an opened input or an earlier
    /// header), if there was one: this header then starts another recording of that card.
    pub earlier_session: Option<u64>,
}

impl EmbeddedStream<'_> {
    /// When this header starts another recording of a card already read, the one-line
    /// message that says so (as [`Trace::check_sessions`] does for inputs). Such a header
    /// is delivered only under [`Trace::merge_sessions`]: the reader otherwise ends its
    /// input there with this error.
    pub fn session_conflict(&self) -> Option<TraceError> {
        let earlier = self.earlier_session?;
        Some(seq::session_conflict(
            self.header,
            earlier,
            self.file,
            self.offset,
        ))
    }
}

/// An item of [`Trace::for_each_run`], whose runs borrow the trace itself rather than the
/// call (lifetime `'m`), so a consumer may queue them for another thread while the merge
/// goes on; as a [`RawItem`], an item of [`Trace::for_each_raw`].
#[derive(Clone, Copy, Debug)]
// Exhaustive for the same reason as `Item`.
pub enum RunItem<'m, 'a> {
    /// `count` whole native-endian event records, in merged order: copy `bytes` as they are,
    /// or read them with [`NativeEvents`](crate::NativeEvents). From `for_each_run`,
    /// consecutive records of one mapped per-CPU input, about 64 KiB at most (64 KiB and one
    /// record). From `for_each_raw`, consecutive records of one per-CPU file; when any input
    /// is a merged stream (a pipe, a dump), every event comes alone (`count` 1).
    Events {
        /// The records' bytes, whole and contiguous, in the input's mapping (or buffer).
        bytes: &'m [u8],
        /// How many event records `bytes` holds.
        count: u64,
    },
    /// Any other item, exactly as [`Trace::for_each_card`] delivers it: notes, events of
    /// the other byte order, records of piped or merged inputs (their buffers are reused,
    /// so they do not outlive the call), gaps, stream headers. From `for_each_raw`, a
    /// native-order event of a piped or merged input comes as `Events` with `count` 1, so
    /// the only events here are those of the other byte order.
    Item(Item<'a>),
}

/// An item of [`Trace::for_each_raw`]: a [`RunItem`] whose runs, like its other items, are
/// borrowed for the call only.
pub type RawItem<'a> = RunItem<'a, 'a>;

/// What a merge saw besides the items.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    /// Damage: each ended one input early (everything before it was delivered).
    pub errors: Vec<TraceError>,
    /// Sequence repeats/backward steps and ordering problems (at most [`MAX_WARNINGS`]).
    pub warnings: Vec<Warning>,
    /// Warnings not kept because there were too many.
    pub warnings_dropped: u64,
    /// Records delivered as [`Item::Record`].
    pub records: u64,
    /// Records of unknown type, skipped.
    pub unknown_records: u64,
    /// [`Item::Gap`]s delivered, and the records they stand for.
    pub gaps: u64,
    /// Records the delivered gaps stand for.
    pub gap_records: u64,
    /// Records whose `seq` repeated or went backwards on their CPU.
    pub seq_backwards: u64,
    /// Records delivered with an earlier time than a record before them (pipe input whose
    /// CPUs arrived too far apart, or an input that is not time-sorted).
    pub reordered: u64,
    /// The closure asked to stop.
    pub stopped: bool,
    /// Most bytes held at once by pipe and merged inputs (queued records and read buffers;
    /// mapped per-CPU files hold none): bounded by [`PIPE_WINDOW`] per input.
    pub peak_buffered: u64,
    /// Most per-CPU queues that merged inputs held at once (at most [`MAX_CPUS`] + 1 per
    /// input, however many stream headers it holds).
    pub peak_queues: u64,
}

impl RunSummary {
    fn warn(&mut self, w: Warning) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        } else {
            self.warnings_dropped += 1;
        }
    }
}

/// Opened inputs, ready to merge.
pub struct Trace {
    streams: Vec<StreamInfoView>,
    mapped: Vec<MappedInput>,
    pipes: Vec<PipeInput>,
    open_errors: Vec<TraceError>,
    merge_sessions: bool,
    single_card: bool,
}

impl Trace {
    /// Opens every source and reads its header. Fails only if none could be opened; errors of
    /// the others are in [`open_errors`](Self::open_errors).
    pub fn open(sources: Vec<InputSource>) -> Result<Trace, TraceError> {
        let mut t = Trace {
            streams: Vec::new(),
            mapped: Vec::new(),
            pipes: Vec::new(),
            open_errors: Vec::new(),
            merge_sessions: false,
            single_card: false,
        };
        let n = sources.len();
        for src in sources {
            if let Err(e) = t.add(src) {
                t.open_errors.push(e);
            }
        }
        if t.streams.is_empty() {
            return Err(t.open_errors.first().cloned().unwrap_or(TraceError {
                file: String::new(),
                error: ErrorKind::NoInputs { given: n },
            }));
        }
        Ok(t)
    }

    /// The opened inputs, in the order given.
    pub fn streams(&self) -> &[StreamInfoView] {
        &self.streams
    }

    /// Inputs that could not be opened (bad header, unreadable).
    pub fn open_errors(&self) -> &[TraceError] {
        &self.open_errors
    }

    /// Merges every input and calls `f` for each item in `(time_ns, cpu, seq)` order, until
    /// the inputs end or `f` returns `Break`. Pipe inputs are consumed: a second call sees
    /// only the mapped inputs again.
    pub fn for_each<F>(&mut self, mut f: F) -> RunSummary
    where
        F: FnMut(Item<'_>) -> ControlFlow<()>,
    {
        self.for_each_card(|_, it| f(it))
    }

    /// Like [`for_each`](Self::for_each), with the card (DRM card index `N` of `cardN`) of
    /// the stream header each item came under: records carry no card of their own, and one
    /// run may merge several devices (`grtrace -d card0 -d card1 -o run`).
    pub fn for_each_card<F>(&mut self, mut f: F) -> RunSummary
    where
        F: FnMut(u32, Item<'_>) -> ControlFlow<()>,
    {
        let mut sum = RunSummary {
            errors: self.open_errors.clone(),
            ..RunSummary::default()
        };
        let mut m = self.merger(&mut sum);
        m.merge(&mut sum, ItemSink(&mut f));
        m.origins.warn_overflow(&self.first_name(), &mut sum);
        sum
    }

    /// Like [`for_each`](Self::for_each), for consumers that copy records verbatim (the
    /// `-d` dump): native-endian event records come as [`RunItem::Events`] slices (consecutive
    /// ones of one per-CPU file as one slice), already merged and sequence-checked; everything
    /// else comes as [`RunItem::Item`]. Same order, same checks, same summary.
    pub fn for_each_raw<F>(&mut self, mut f: F) -> RunSummary
    where
        F: FnMut(RawItem<'_>) -> ControlFlow<()>,
    {
        let mut sum = RunSummary {
            errors: self.open_errors.clone(),
            ..RunSummary::default()
        };
        let mut m = self.merger(&mut sum);
        // Runs of one file only when no input is a merged stream (as documented on RunItem).
        if m.demux.is_empty() {
            m.merge(&mut sum, RawSink::<_, true>(&mut f));
        } else {
            m.merge(&mut sum, RawSink::<_, false>(&mut f));
        }
        m.origins.warn_overflow(&self.first_name(), &mut sum);
        sum
    }

    /// Like [`for_each_card`](Self::for_each_card), for consumers that read native events
    /// fastest in runs: consecutive native-endian event records of one mapped per-CPU input
    /// come as [`RunItem::Events`] slices of about 64 KiB at most (already merged and
    /// sequence-checked), everything else as [`RunItem::Item`]. Same order, same checks,
    /// same summary.
    ///
    /// The runs borrow the trace for `'m`, not for the call: a consumer may hand them to
    /// another thread (inside `std::thread::scope`) and read them after the closure
    /// returned. A mapped input gives the pages it has read back to the kernel as it goes,
    /// 4 MiB behind its position: such a consumer should keep less than that queued, or
    /// the pages it reads fault in again (the bytes are the file's all the same).
    pub fn for_each_run<'m, F>(&'m mut self, mut f: F) -> RunSummary
    where
        F: FnMut(u32, RunItem<'m, '_>) -> ControlFlow<()>,
    {
        let mut sum = RunSummary {
            errors: self.open_errors.clone(),
            ..RunSummary::default()
        };
        // The runs hold the trace borrowed for 'm: what the end needs is taken first.
        let first = self.first_name();
        let mut m = self.merger(&mut sum);
        m.merge(&mut sum, RunSink(&mut f));
        m.origins.warn_overflow(&first, &mut sum);
        sum
    }

    /// The error for a run of [`for_each_run`](Self::for_each_run) that stopped holding
    /// whole events at address `at` ([`NativeEvents::rest`](crate::NativeEvents::rest)):
    /// its file shrank or changed after the reader checked the run and before the consumer
    /// read it (a consumer on another thread reads a run up to a few MiB later). Names the
    /// file and the byte; `None` if `at` is not in a mapped input. An address, not the
    /// slice: the runs borrow the trace.
    pub fn run_changed(&self, at: *const u8) -> Option<TraceError> {
        let at = at as usize;
        let mi = self.mapped.iter().find(|mi| {
            let b = mi.backing.bytes().as_ptr_range();
            (b.start as usize..=b.end as usize).contains(&at)
        })?;
        let offset = (at - mi.backing.bytes().as_ptr() as usize) as u64;
        let name = &self.streams[mi.stream].name;
        let shrunk = mi
            .backing
            .mapping()
            .and_then(|m| open::shrunk_error(m, name, offset));
        Some(shrunk.unwrap_or_else(|| {
            TraceError::at(
                name,
                offset,
                "the file changed while being read: records from here on were not read".to_string(),
            )
        }))
    }

    /// The name of the first opened input (warnings about the whole run name it).
    fn first_name(&self) -> String {
        self.streams
            .first()
            .map_or_else(String::new, |s| s.name.clone())
    }

    /// Checks that the inputs of each card come from one recording (one session id).
    /// Files of another session left under the same base name (a 2-CPU recording over an
    /// older 4-CPU one) would otherwise be merged into one wrong timeline. The error names
    /// the first file of the other session and the file it disagrees with.
    pub fn check_sessions(&self) -> Result<(), TraceError> {
        // Card -> the first input of that card.
        let mut first: std::collections::HashMap<u32, &StreamInfoView> = Default::default();
        for s in &self.streams {
            let h = &s.header;
            let o = *first.entry(h.card).or_insert(s);
            if o.header.session_id != h.session_id {
                return Err(TraceError {
                    file: s.name.clone(),
                    error: ErrorKind::Input(format!(
                        "session {:#x} of {} differs from {} (session {:#x}): files of two recordings, not merged (--force merges them)",
                        h.session_id, crate::Card(h.card), o.name, o.header.session_id
                    )),
                });
            }
        }
        Ok(())
    }

    /// Lets a stream header inside an input start another recording (session) of a card
    /// already read (`--force`): its records are then merged with the earlier ones of that
    /// card, and its [`Item::Stream`] says which session came before. By default such a
    /// header ends its input with an error at its offset (everything before it delivered),
    /// so two recordings of a card are never merged silently; [`check_sessions`](Self::check_sessions)
    /// is the same check for the opened inputs.
    pub fn merge_sessions(&mut self, yes: bool) {
        self.merge_sessions = yes;
    }

    /// For a consumer whose output holds one card (a merged dump): a stream header inside
    /// an input that names another card than the first input's ends that input with an
    /// error at its offset, everything before it delivered.
    pub fn single_card(&mut self, yes: bool) {
        self.single_card = yes;
    }

    /// The cards of the opened inputs, in increasing order, each once.
    pub fn cards(&self) -> Vec<u32> {
        let mut c: Vec<u32> = self.streams.iter().map(|s| s.header.card).collect();
        c.sort_unstable();
        c.dedup();
        c
    }
}
