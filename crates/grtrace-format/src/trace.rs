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
//!
//! ## Merge
//!
//! A per-CPU file is already in time order, so it is one merge cursor. A merged input (header
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
//! yields an [`Item::Gap`] of `k` records (source [`lost_source::SEQ_GAP`]) just before the record
//! after the gap, with `first_ns`/`last_ns` the times of the records around it; a first record
//! with `seq` > 1 is a gap at the start. A repeat or a step backwards is counted and warned about
//! with its byte offset. Inputs whose header has `SEQ_CHECKED` are not checked.
//!
//! A damaged input ends at its damage: everything before it is delivered, the error (file and
//! byte offset) goes into [`RunSummary::errors`] and the other inputs carry on. Unknown record
//! types are skipped and counted (they are not delivered).
//!
//! ## Deviations from notes/READER_API.md
//!
//! * [`InputSource`] also has `Stream` (any `Read`, used for stdin and FIFOs) and `Bytes`
//!   (in-memory data, for tests and fuzzing) variants.
//! * [`Trace::open`] fails only when *no* input could be opened; header errors of individual
//!   inputs are kept ([`Trace::open_errors`]) and repeated in the summary of [`Trace::for_each`],
//!   so the good inputs are still parsed.
//! * [`TraceError`] has `file` and `error: ErrorKind`; `ErrorKind::Format` wraps [`FormatError`].
//! * Added: [`Trace::for_each_raw`] for consumers that copy records verbatim (`grtparse -d`):
//!   the same merge, with native-endian event records delivered as byte slices ([`RawItem`]):
//!   consecutive ones of one per-CPU file as one slice.
//! * [`RunSummary`] also counts gaps, sequence repeats, reordered records and keeps warnings,
//!   and the peak of bytes and queues that merged inputs held ([`RunSummary::peak_buffered`],
//!   [`RunSummary::peak_queues`]).
//! * Added: [`Trace::for_each_card`] delivers each item with the card of its stream header,
//!   and sequences are checked per (card, session, CPU): one run may merge several devices.
//! * A stream header after records (concatenated streams) is accepted in files as on stdin
//!   (FORMAT.md §6).

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, UncheckedAdvice};

use crate::abi::{self, lost_source, rec_off};
use crate::endian::Endian;
use crate::error::FormatError;
use crate::sigbus::Registration;
use crate::view::{Lost, RecordView, StreamHeader};

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

/// Where records come from.
pub enum InputSource {
    /// A regular file, mapped read-only.
    File(PathBuf),
    /// A byte stream read incrementally (stdin, a FIFO).
    Stream { name: String, reader: Box<dyn Read> },
    /// Bytes already in memory (tests, fuzzing).
    Bytes { name: String, data: Vec<u8> },
}

impl InputSource {
    /// Standard input, named `-` in messages... like blkparse's `-i -`.
    pub fn stdin() -> InputSource {
        InputSource::Stream {
            name: "(stdin)".to_string(),
            reader: Box::new(io::stdin()),
        }
    }

    pub fn name(&self) -> String {
        match self {
            InputSource::File(p) => p.display().to_string(),
            InputSource::Stream { name, .. } | InputSource::Bytes { name, .. } => name.clone(),
        }
    }
}

impl fmt::Debug for InputSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputSource::File(p) => write!(f, "File({})", p.display()),
            InputSource::Stream { name, .. } => write!(f, "Stream({name})"),
            InputSource::Bytes { name, data } => write!(f, "Bytes({name}, {} bytes)", data.len()),
        }
    }
}

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bytes do not decode (the error names the byte offset).
    Format(FormatError),
    /// Reading failed, or some other problem at a byte offset.
    At { offset: u64, message: String },
    /// A problem with the input as a whole (not found, no files for a base name).
    Input(String),
}

/// An error or warning about one input: `run.grtrace.1: byte 4168: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub error: ErrorKind,
}

impl TraceError {
    fn at(file: &str, offset: u64, message: String) -> TraceError {
        TraceError {
            file: file.to_string(),
            error: ErrorKind::At { offset, message },
        }
    }

    /// Byte offset of the problem, if it has one.
    pub fn offset(&self) -> Option<u64> {
        match &self.error {
            ErrorKind::Format(e) => Some(e.offset()),
            ErrorKind::At { offset, .. } => Some(*offset),
            ErrorKind::Input(_) => None,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.error {
            ErrorKind::Format(e) => write!(f, "{}: {e}", self.file),
            ErrorKind::At { offset, message } => {
                write!(f, "{}: byte {offset}: {message}", self.file)
            }
            ErrorKind::Input(m) => write!(f, "{}: {m}", self.file),
        }
    }
}

impl std::error::Error for TraceError {}

/// The `-w` time window the reading tools share: `END` or `START:END` in seconds since the
/// first record; an empty START is 0 and an empty END leaves the window open
/// (`u64::MAX`). Returns nanoseconds, or a message saying what is wrong.
pub fn parse_window(w: &str) -> Result<(u64, u64), String> {
    let ns = |s: &str, open: u64| -> Result<u64, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(open);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok((v * 1e9).round() as u64),
            _ => Err(format!("-w '{w}': '{s}' is not a number of seconds")),
        }
    };
    let (a, b) = match w.split_once(':') {
        Some((a, b)) => (ns(a, 0)?, ns(b, u64::MAX)?),
        None if w.trim().is_empty() => return Err(format!("-w '{w}': expected END or START:END")),
        None => (0, ns(w, u64::MAX)?),
    };
    if b < a {
        return Err(format!("-w '{w}': the window ends before it starts"));
    }
    Ok((a, b))
}

/// Turns command-line input words into sources.
///
/// * `-` is stdin.
/// * An existing regular file is mapped; a FIFO or character device is read as a stream.
/// * Anything else is a base name: every `<base>.grtrace.<cpu>` in its directory, sorted by CPU.
///   Holes in the CPU numbers and empty files are reported as warnings (empty files are left
///   out); a base name with no files at all is an error.
pub fn resolve_inputs<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
) -> Result<(Vec<InputSource>, Vec<String>), TraceError> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for arg in args {
        // Any path, UTF-8 or not (names in messages are shown lossily).
        let path = Path::new(arg.as_ref());
        let name = || path.display().to_string();
        if path.as_os_str() == "-" {
            out.push(InputSource::stdin());
            continue;
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => out.push(InputSource::File(path.to_path_buf())),
            Ok(m) if !m.is_dir() => {
                let f = File::open(path).map_err(|e| TraceError {
                    file: name(),
                    error: ErrorKind::Input(e.to_string()),
                })?;
                out.push(InputSource::Stream {
                    name: name(),
                    reader: Box::new(f),
                });
            }
            _ => {
                let (found, mut w) = find_cpu_files(path).map_err(|m| TraceError {
                    file: name(),
                    error: ErrorKind::Input(m),
                })?;
                warnings.append(&mut w);
                out.extend(found.into_iter().map(InputSource::File));
            }
        }
    }
    Ok((out, warnings))
}

/// Most ranges a "missing CPU files" warning lists; the rest are counted.
const MAX_RANGES_SHOWN: usize = 8;

/// `1,3-7,9` for sorted, distinct CPU numbers missing between the files found; at most
/// [`MAX_RANGES_SHOWN`] ranges, then how many more. Computed from the files present, so its
/// cost and length do not depend on the CPU numbers (a stray `run.grtrace.4294967295` is one
/// range, not four billion numbers).
fn missing_ranges(present: &[u32]) -> Option<String> {
    let mut ranges = Vec::new();
    let mut more = 0u64;
    let mut expect = 0u32;
    for &cpu in present {
        if cpu > expect {
            if ranges.len() < MAX_RANGES_SHOWN {
                ranges.push(if cpu - 1 == expect {
                    expect.to_string()
                } else {
                    format!("{expect}-{}", cpu - 1)
                });
            } else {
                more += 1;
            }
        }
        expect = cpu.saturating_add(1);
    }
    if ranges.is_empty() {
        return None;
    }
    let mut s = ranges.join(",");
    if more > 0 {
        s.push_str(&format!(" and {more} more range(s)"));
    }
    Some(s)
}

/// The device part of a recorder file name `BASE.<dev>.grtrace.<cpu>` (`card<N>`), as
/// written by `grtrace -d card0 -d card1 -o BASE`.
fn is_card_name(s: &str) -> bool {
    s.strip_prefix("card")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Every file a base name stands for (`<base>.grtrace.<cpu>` and
/// `<base>.card<N>.grtrace.<cpu>`, empty ones included), in no particular order: what
/// [`resolve_inputs`] would read, for a recorder that must not leave stale ones beside the
/// files it writes. An unreadable directory lists nothing.
pub fn base_files(base: &Path) -> Vec<PathBuf> {
    scan_base(base).map_or_else(|_| Vec::new(), |v| v.into_iter().map(|c| c.2).collect())
}

/// (device: "" or "cardN", cpu, path, length) of every file of a base name.
type BaseFile = (String, u32, PathBuf, u64);

fn scan_base(base: &Path) -> Result<Vec<BaseFile>, String> {
    use std::os::unix::ffi::OsStrExt;
    // Keep names as the user wrote them: `run` finds `run.grtrace.0`, not `./run.grtrace.0`.
    let (dir, prefix_dir) = match base.parent() {
        Some(d) if !d.as_os_str().is_empty() => (d.to_path_buf(), d.to_path_buf()),
        _ => (PathBuf::from("."), PathBuf::new()),
    };
    let stem = base
        .file_name()
        .ok_or_else(|| "not a file name".to_string())?;
    // Matched as bytes: a base name need not be UTF-8; the rest of a name must be.
    let mut prefix = stem.to_os_string();
    prefix.push(".");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("no such file ({e})"))?;
    let mut cpus: Vec<BaseFile> = Vec::new();
    for ent in entries.flatten() {
        let name = ent.file_name();
        let Some(rest) = name
            .as_bytes()
            .strip_prefix(prefix.as_bytes())
            .and_then(|n| std::str::from_utf8(n).ok())
        else {
            continue;
        };
        let Some((dev, num)) = rest.rsplit_once("grtrace.") else {
            continue;
        };
        let dev = match dev {
            "" => "",
            d => match d.strip_suffix('.') {
                Some(d) if is_card_name(d) => d,
                _ => continue,
            },
        };
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cpu) = num.parse::<u32>() else {
            continue;
        };
        let len = ent.metadata().map(|m| m.len()).unwrap_or(0);
        cpus.push((dev.to_string(), cpu, prefix_dir.join(name), len));
    }
    Ok(cpus)
}

/// Every `<base>.grtrace.<cpu>` and `<base>.card<N>.grtrace.<cpu>` file, sorted by device then
/// CPU, with warnings for holes (per device) and empty files.
fn find_cpu_files(base: &Path) -> Result<(Vec<PathBuf>, Vec<String>), String> {
    let mut cpus = scan_base(base)?;
    let mut prefix = base.file_name().unwrap_or_default().to_os_string();
    prefix.push(".");
    if cpus.is_empty() {
        return Err(format!(
            "no such file, and no {}grtrace.<cpu> or {}card<N>.grtrace.<cpu> files",
            base.with_file_name(&prefix).display(),
            base.with_file_name(&prefix).display()
        ));
    }
    // Devices in numeric order (card2 before card10), then CPUs.
    let dev_key = |d: &str| d.strip_prefix("card").and_then(|n| n.parse::<u64>().ok());
    cpus.sort_by(|a, b| (dev_key(&a.0), &a.0, a.1).cmp(&(dev_key(&b.0), &b.0, b.1)));
    let mut warnings = Vec::new();
    for group in cpus.chunk_by(|a, b| a.0 == b.0) {
        let present: Vec<u32> = group.iter().map(|c| c.1).collect();
        if let Some(missing) = missing_ranges(&present) {
            let who = match group[0].0.as_str() {
                "" => base.display().to_string(),
                d => format!("{}.{d}", base.display()),
            };
            warnings.push(format!(
                "{who}: missing CPU file(s) for CPU {missing} (other CPUs are parsed)"
            ));
        }
    }
    let mut files = Vec::new();
    for (_, _, path, len) in cpus {
        if len == 0 {
            warnings.push(format!("{}: byte 0: empty file, skipped", path.display()));
        } else {
            files.push(path);
        }
    }
    Ok((files, warnings))
}

/// One opened input: its name, header and length (None for streams).
#[derive(Clone, Debug)]
pub struct StreamInfoView {
    pub name: String,
    pub header: StreamHeader,
    pub len: Option<u64>,
}

/// One item of the merged stream.
#[derive(Clone, Copy, Debug)]
pub enum Item<'a> {
    /// An event or note, including `NOTE_LOST` records written by the recorder.
    Record(RecordView<'a>),
    /// A sequence gap the reader found (source [`lost_source::SEQ_GAP`]), placed where it
    /// happened: just before the first record after it on that CPU.
    Gap(Lost),
}

/// An item of [`Trace::for_each_raw`].
#[derive(Clone, Copy, Debug)]
pub enum RawItem<'a> {
    /// `count` whole native-endian event records, in merged order: copy `bytes` as they are.
    /// Consecutive records of one per-CPU file come as one slice; when any input is a
    /// merged stream (a pipe, a dump), every event comes alone (`count` 1).
    Events { bytes: &'a [u8], count: u64 },
    /// Any other item, exactly as [`Trace::for_each`] delivers it.
    Item(Item<'a>),
}

/// What a merge saw besides the items.
#[derive(Clone, Debug, Default)]
pub struct RunSummary {
    /// Damage: each ended one input early (everything before it was delivered).
    pub errors: Vec<TraceError>,
    /// Sequence repeats/backward steps and ordering problems (at most [`MAX_WARNINGS`]).
    pub warnings: Vec<TraceError>,
    /// Warnings not kept because there were too many.
    pub warnings_dropped: u64,
    /// Records delivered as [`Item::Record`].
    pub records: u64,
    /// Records of unknown type, skipped.
    pub unknown_records: u64,
    /// [`Item::Gap`]s delivered, and the records they stand for.
    pub gaps: u64,
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
    fn warn(&mut self, w: TraceError) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        } else {
            self.warnings_dropped += 1;
        }
    }
}

enum Backing {
    Map(Mmap),
    Owned(Vec<u8>),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

struct MappedInput {
    stream: usize,
    /// For a mapped file; declared before `backing` so that it is unregistered first.
    shrink: Option<Shrink>,
    backing: Backing,
    /// A per-CPU stream followed by another stream header (concatenated streams, `cat a b >
    /// f`) within its first [`PIPE_READAHEAD`] bytes: read like a merged stream, exactly as
    /// the same bytes on stdin.
    concatenated: bool,
}

/// What tells whether a mapped file shrank under the reader.
struct Shrink {
    path: PathBuf,
    /// Length mapped.
    len: u64,
    guard: Registration,
}

impl Shrink {
    /// The error to report instead of the damage found at `offset` when the file is now
    /// shorter than when it was mapped (or a page of it faulted): one line naming the file
    /// and the byte where its data now ends.
    #[cold]
    fn error(&self, name: &str, offset: u64) -> Option<TraceError> {
        let now = std::fs::metadata(&self.path).map(|m| m.len()).ok();
        let end = match (now, self.guard.shrunk()) {
            (Some(n), _) if n < self.len => n,
            (_, Some(at)) => at,
            _ => return None,
        };
        Some(TraceError::at(
            name,
            end.min(offset),
            format!(
                "the file shrank while being read ({} bytes when opened, {}): records from here on were not read",
                self.len,
                now.map_or("now unreadable".to_string(), |n| format!("{n} now")),
            ),
        ))
    }
}

struct PipeInput {
    stream: usize,
    reader: Box<dyn Read>,
    /// Bytes read past the header but not yet parsed.
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
}

/// Opened inputs, ready to merge.
pub struct Trace {
    streams: Vec<StreamInfoView>,
    mapped: Vec<MappedInput>,
    pipes: Vec<PipeInput>,
    open_errors: Vec<TraceError>,
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
        };
        let n = sources.len();
        for src in sources {
            if let Err(e) = t.add(src) {
                t.open_errors.push(e);
            }
        }
        if t.streams.is_empty() {
            return Err(t.open_errors.first().cloned().unwrap_or(TraceError {
                file: "grtparse".into(),
                error: ErrorKind::Input(if n == 0 {
                    "no inputs".into()
                } else {
                    "no usable inputs".into()
                }),
            }));
        }
        Ok(t)
    }

    fn add(&mut self, src: InputSource) -> Result<(), TraceError> {
        let name = src.name();
        let fmt_err = |e: FormatError| TraceError {
            file: name.clone(),
            error: ErrorKind::Format(e),
        };
        match src {
            InputSource::File(path) => {
                let file = File::open(&path).map_err(|e| TraceError {
                    file: name.clone(),
                    error: ErrorKind::Input(e.to_string()),
                })?;
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                if len == 0 {
                    return Err(fmt_err(FormatError::Empty));
                }
                // SAFETY: memmap2 maps the file read-only and MAP_SHARED: other processes may
                // change or truncate it while we read. Views into the mapping are plain byte
                // slices, so a change only alters the bytes we see (the parser checks every
                // size it reads, so any bytes are safe to parse). Truncation would raise
                // SIGBUS on the pages past the new end: `sigbus::Registration` (taken before
                // any byte is read) makes such a page read as zeros instead and lets the
                // reader report where the file ended. Past `sigbus::SLOTS` registrations the
                // file is read with read(2) instead of mapped.
                let map = unsafe { Mmap::map(&file) }.map_err(|e| TraceError {
                    file: name.clone(),
                    error: ErrorKind::At {
                        offset: 0,
                        message: format!("cannot map: {e}"),
                    },
                })?;
                let Some(guard) = Registration::new(map.as_ptr(), map.len()) else {
                    drop(map);
                    return self.add(InputSource::Stream {
                        name,
                        reader: Box::new(file),
                    });
                };
                let header = StreamHeader::parse(&map).map_err(fmt_err)?;
                let concatenated = is_concatenated(&map, &header);
                self.streams.push(StreamInfoView {
                    name,
                    header,
                    len: Some(len),
                });
                self.mapped.push(MappedInput {
                    stream: self.streams.len() - 1,
                    shrink: Some(Shrink {
                        path,
                        len: map.len() as u64,
                        guard,
                    }),
                    backing: Backing::Map(map),
                    concatenated,
                });
            }
            InputSource::Bytes { data, .. } => {
                let header = StreamHeader::parse(&data).map_err(fmt_err)?;
                let concatenated = is_concatenated(&data, &header);
                self.streams.push(StreamInfoView {
                    name,
                    header,
                    len: Some(data.len() as u64),
                });
                self.mapped.push(MappedInput {
                    stream: self.streams.len() - 1,
                    shrink: None,
                    backing: Backing::Owned(data),
                    concatenated,
                });
            }
            InputSource::Stream { mut reader, .. } => {
                let mut buf = Vec::with_capacity(abi::STREAM_HEADER_SIZE);
                fill(&mut reader, &mut buf, abi::STREAM_HEADER_SIZE).map_err(|e| {
                    TraceError::at(&name, buf.len() as u64, format!("read error: {e}"))
                })?;
                // The header may be longer than 128 bytes (a later minor version).
                let header = match StreamHeader::parse(&buf) {
                    Err(FormatError::TruncatedHeader { need, .. }) if buf.len() < need => {
                        fill(&mut reader, &mut buf, need).map_err(|e| {
                            TraceError::at(&name, buf.len() as u64, format!("read error: {e}"))
                        })?;
                        StreamHeader::parse(&buf)
                    }
                    other => other,
                }
                .map_err(fmt_err)?;
                let hs = header.header_size as usize;
                buf.drain(..hs);
                self.streams.push(StreamInfoView {
                    name,
                    header,
                    len: None,
                });
                self.pipes.push(PipeInput {
                    stream: self.streams.len() - 1,
                    reader,
                    buf,
                    base: hs as u64,
                });
            }
        }
        Ok(())
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
        m.run(&mut sum, &mut f);
        m.origins.warn_overflow(&self.streams, &mut sum);
        sum
    }

    /// Like [`for_each`](Self::for_each), for consumers that copy records verbatim (the
    /// `-d` dump): native-endian event records come as [`RawItem::Events`] slices (consecutive
    /// ones of one per-CPU file as one slice), already merged and sequence-checked; everything
    /// else comes as [`RawItem::Item`]. Same order, same checks, same summary.
    pub fn for_each_raw<F>(&mut self, mut f: F) -> RunSummary
    where
        F: FnMut(RawItem<'_>) -> ControlFlow<()>,
    {
        let mut sum = RunSummary {
            errors: self.open_errors.clone(),
            ..RunSummary::default()
        };
        let mut m = self.merger(&mut sum);
        if m.demux.is_empty() {
            m.run_files_raw(&mut sum, &mut f);
        } else {
            m.run(&mut sum, &mut |_, it| match it {
                Item::Record(r) if r.endian() == Endian::NATIVE && r.is_event() => {
                    f(RawItem::Events {
                        bytes: r.bytes(),
                        count: 1,
                    })
                }
                it => f(RawItem::Item(it)),
            });
        }
        m.origins.warn_overflow(&self.streams, &mut sum);
        sum
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
                        "session {:#x} of card{} differs from {} (session {:#x}): files of two recordings, not merged (--force merges them)",
                        h.session_id, h.card, o.name, o.header.session_id
                    )),
                });
            }
        }
        Ok(())
    }

    /// The cards of the opened inputs, in increasing order, each once.
    pub fn cards(&self) -> Vec<u32> {
        let mut c: Vec<u32> = self.streams.iter().map(|s| s.header.card).collect();
        c.sort_unstable();
        c.dedup();
        c
    }

    fn merger(&mut self, sum: &mut RunSummary) -> Merger<'_> {
        let streams = &self.streams;
        let mut m = Merger::new();
        let n_inputs = self.mapped.len() + self.pipes.len();
        for mi in &self.mapped {
            let info = &streams[mi.stream];
            let data = mi.backing.bytes();
            let hdr = HdrState::new(&info.header, &mut m.origins);
            let map = match &mi.backing {
                Backing::Map(m) => Some(m),
                Backing::Owned(_) => None,
            };
            let pos = info.header.header_size as usize;
            if info.header.is_merged() || mi.concatenated {
                m.add_demux(Demux::new(
                    &info.name,
                    Feed::Slice {
                        data,
                        pos,
                        shrink: mi.shrink.as_ref(),
                    },
                    hdr,
                    PIPE_READAHEAD,
                ));
            } else {
                let cur = FileCursor {
                    name: &info.name,
                    data,
                    endian: hdr.endian,
                    pos,
                    head: None,
                    check: hdr.check,
                    origin: hdr.origin,
                    ident: (info.header.card, info.header.session_id),
                    shrink: mi.shrink.as_ref(),
                    map,
                    released: 0,
                };
                m.add_file(cur, sum);
            }
        }
        for p in &mut self.pipes {
            let info = &streams[p.stream];
            let hdr = HdrState::new(&info.header, &mut m.origins);
            let buf = std::mem::take(&mut p.buf);
            let end = buf.len();
            // A per-CPU stream is already in time order: it needs no read-ahead, and many
            // of them (`grtreport --read` over thousands of CPU files) share the budget.
            let readahead = if info.header.is_merged() {
                PIPE_READAHEAD
            } else {
                (PIPE_READAHEAD / n_inputs).max(abi::RECORD_HEADER_SIZE)
            };
            let chunk = (READ_CHUNK / n_inputs).clamp(MIN_CHUNK, 1 << 16);
            m.add_demux(Demux::new(
                &info.name,
                Feed::Reader {
                    reader: &mut p.reader,
                    buf,
                    start: 0,
                    end,
                    base: p.base,
                    eof: false,
                    chunk,
                },
                hdr,
                readahead,
            ));
        }
        m
    }
}

/// Whether another stream header follows the records of a per-CPU stream within its first
/// [`PIPE_READAHEAD`] bytes (`cat run.grtrace.0 run.grtrace.1 > both`). Such a file is read
/// like a merged stream, so it gives what the same bytes give on stdin. Walks record sizes
/// only; damage ends the walk (the merge reports it).
fn is_concatenated(data: &[u8], h: &StreamHeader) -> bool {
    if h.is_merged() {
        return false;
    }
    let end = data.len().min(PIPE_READAHEAD);
    let mut pos = h.header_size as usize;
    while pos + abi::RECORD_HEADER_SIZE <= end {
        if data[pos..].starts_with(&abi::STREAM_MAGIC) {
            return true;
        }
        let size = h.endian.u16(&data[pos..], rec_off::SIZE) as usize;
        if size < abi::RECORD_HEADER_SIZE || !size.is_multiple_of(abi::RECORD_ALIGN) {
            return false;
        }
        pos += size;
    }
    false
}

/// Reads until `buf` holds `want` bytes or the reader ends.
fn fill(r: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    while buf.len() < want {
        let n = (want - buf.len()).min(chunk.len());
        match r.read(&mut chunk[..n]) {
            Ok(0) => return Ok(()),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Merge machinery

/// Merge key of a cursor's head record plus the cursor's id.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    cpu: u32,
    cur: u32,
}

impl Entry {
    #[inline(always)]
    fn before(&self, o: &Entry) -> bool {
        (self.time, self.cpu, self.seq, self.cur) < (o.time, o.cpu, o.seq, o.cur)
    }

    #[inline(always)]
    fn of(r: &RecordView<'_>, cur: u32) -> Entry {
        Entry {
            time: r.time_ns(),
            seq: r.seq(),
            cpu: r.cpu(),
            cur,
        }
    }
}

/// A binary min-heap of cursor heads; `replace_top` is the common operation.
struct Heap {
    v: Vec<Entry>,
}

impl Heap {
    fn push(&mut self, e: Entry) {
        self.v.push(e);
        let mut i = self.v.len() - 1;
        while i > 0 {
            let p = (i - 1) / 2;
            if self.v[i].before(&self.v[p]) {
                self.v.swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    #[inline(always)]
    fn replace_top(&mut self, e: Entry) {
        self.v[0] = e;
        self.sift_down();
    }

    fn pop_top(&mut self) {
        let last = self.v.pop();
        if let Some(last) = last {
            if !self.v.is_empty() {
                self.v[0] = last;
                self.sift_down();
            }
        }
    }

    #[inline(always)]
    fn sift_down(&mut self) {
        let n = self.v.len();
        let mut i = 0;
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.v[r].before(&self.v[l]) {
                r
            } else {
                l
            };
            if self.v[c].before(&self.v[i]) {
                self.v.swap(c, i);
                i = c;
            } else {
                break;
            }
        }
    }
}

/// A per-CPU mapped stream: its records are read in place.
struct FileCursor<'m> {
    name: &'m str,
    data: &'m [u8],
    endian: Endian,
    /// Offset of `head`.
    pos: usize,
    head: Option<RecordView<'m>>,
    check: bool,
    /// Index in `Merger::origins`: the card and session of its header.
    origin: u32,
    /// Card and session of its header.
    ident: (u32, u64),
    /// Set for a mapped file: says whether damage is a shrunk file.
    shrink: Option<&'m Shrink>,
    /// The file mapping behind `data`, if any, and how much of it was handed back.
    map: Option<&'m Mmap>,
    released: usize,
}

/// A cursor hands the pages it has passed back to the kernel every this many bytes, so a
/// one-pass reader of a multi-GB trace keeps a flat resident set while still reading in place.
const RELEASE_STEP: usize = 8 << 20;

impl<'m> FileCursor<'m> {
    /// Drops the pages of `data` below `pos` (page-aligned) from the resident set.
    #[cold]
    fn release_consumed(&mut self) {
        let Some(map) = self.map else { return };
        let page = 4096;
        let start = self.released.next_multiple_of(page);
        let end = self.pos / page * page;
        if end > start {
            // SAFETY: memmap2 maps files MAP_SHARED and read-only: after MADV_DONTNEED the
            // pages fault back in from the file with the same bytes, so views stay valid.
            let _ = unsafe {
                map.unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
            };
        }
        self.released = self.pos;
    }

    /// Moves to the first known record at or after `pos` and returns it (the caller stores
    /// it in `head` when it leaves this cursor with a head).
    #[inline(always)]
    fn seek_head(&mut self, sum: &mut RunSummary) -> Option<RecordView<'m>> {
        loop {
            if self.pos >= self.data.len() {
                self.head = None;
                return None;
            }
            if self.pos - self.released >= RELEASE_STEP {
                self.release_consumed();
            }
            match RecordView::parse(&self.data[self.pos..], self.endian, self.pos as u64) {
                Ok(r) => {
                    if r.rtype().wrapping_sub(1) >= abi::rtype::NOTE_STREAM_INFO {
                        sum.unknown_records += 1;
                        self.pos += r.size();
                        continue;
                    }
                    // `head` is left to the caller: the merge loops keep it in a local
                    // while a cursor runs and store it only when they leave the cursor.
                    return Some(r);
                }
                Err(e) => {
                    // A shrunk file first (its zeros are not a header), then a concatenated
                    // stream, else damage.
                    let shrunk = self
                        .shrink
                        .and_then(|s| s.error(self.name, self.pos as u64));
                    if let Some(s) = shrunk {
                        sum.errors.push(s);
                    } else {
                        match self.next_stream(sum) {
                            Some(true) => continue,
                            Some(false) => {}
                            None => sum.errors.push(TraceError {
                                file: self.name.to_string(),
                                error: ErrorKind::Format(e),
                            }),
                        }
                    }
                    self.pos = self.data.len();
                    self.head = None;
                    return None;
                }
            }
        }
    }

    /// A stream header where a record should be (a magic never parses as a record: its
    /// size field is not a multiple of 8): a stream concatenated past the read-ahead. Its
    /// records continue this cursor in its byte order and checking. One of another card or
    /// session cannot (its records would be labelled with this file's card): that is an
    /// error naming the offset. Returns None when there is no header here, else whether
    /// the cursor can go on (an error was reported if not).
    #[cold]
    fn next_stream(&mut self, sum: &mut RunSummary) -> Option<bool> {
        let at = &self.data[self.pos..];
        if !at.starts_with(&abi::STREAM_MAGIC) {
            return None;
        }
        Some(match StreamHeader::parse(at) {
            Ok(h) if (h.card, h.session_id) == self.ident && !h.is_merged() => {
                self.endian = h.endian;
                self.check = h.flags & abi::STREAM_SEQ_CHECKED == 0;
                self.pos += h.header_size as usize;
                true
            }
            Ok(_) => {
                sum.errors.push(TraceError::at(
                    self.name,
                    self.pos as u64,
                    format!(
                        "a stream of another card, session or a merged stream starts here, past the first {} MiB: read this file on stdin or split it",
                        PIPE_READAHEAD >> 20
                    ),
                ));
                false
            }
            Err(e) => {
                sum.errors.push(header_error(self.name, self.pos as u64, e));
                false
            }
        })
    }
}

/// Where a merged input's bytes come from.
enum Feed<'m> {
    Slice {
        data: &'m [u8],
        pos: usize,
        shrink: Option<&'m Shrink>,
    },
    Reader {
        reader: &'m mut Box<dyn Read>,
        buf: Vec<u8>,
        start: usize,
        /// Valid bytes are `buf[start..end]`; the rest is reused storage.
        end: usize,
        /// Stream offset of `buf[0]`.
        base: u64,
        eof: bool,
        /// Smallest read: the buffer starts at this size and doubles up to [`READ_CHUNK`].
        chunk: usize,
    },
}

/// Result of pulling one record from a feed.
enum Pulled<'b> {
    /// A record (bytes, stream offset).
    Record(&'b [u8], u64),
    /// A new stream header (concatenated streams), for the caller to apply.
    Header(StreamHeader),
    End,
}

/// One CPU's records from a merged input, waiting to be emitted in order.
/// Keyed in `Demux::index` by CPU only, whatever the number of stream headers in the input:
/// each entry carries the byte order, checking and origin of the header it came under
/// (concatenated streams may differ in all three), so a million embedded headers cost no
/// more queues than one.
struct Queue {
    /// Entries: [`QENTRY`] bytes of prefix (u64 stream offset, u32 origin, u32 flags, native
    /// order) then the record bytes.
    data: Vec<u8>,
    head: usize,
    in_heap: bool,
    /// Listed in `Demux::ready` (got records while out of the heap).
    pending: bool,
    /// Merge cursor id, assigned when first pushed to the heap.
    id: Option<u32>,
}

/// Storage an empty queue keeps for reuse.
const QUEUE_KEEP: usize = 64 << 10;

/// Bytes of a queue entry's prefix.
const QENTRY: usize = 16;
const QF_BIG: u32 = 1;
const QF_CHECK: u32 = 2;

/// What a queued record came with: its stream offset and its header's state.
#[derive(Clone, Copy)]
struct QueuedAt {
    offset: u64,
    origin: u32,
    check: bool,
}

impl Queue {
    fn is_empty(&self) -> bool {
        self.head >= self.data.len()
    }

    fn push(&mut self, rec: &[u8], offset: u64, hs: &HdrState) {
        let flags = (hs.endian == Endian::Big) as u32 * QF_BIG + hs.check as u32 * QF_CHECK;
        // One prefix copy and one record copy per record.
        let mut p = [0u8; QENTRY];
        p[..8].copy_from_slice(&offset.to_ne_bytes());
        p[8..12].copy_from_slice(&hs.origin.to_ne_bytes());
        p[12..].copy_from_slice(&flags.to_ne_bytes());
        self.data.reserve(QENTRY + rec.len());
        self.data.extend_from_slice(&p);
        self.data.extend_from_slice(rec);
    }

    /// The head record and where it came from.
    #[inline(always)]
    fn peek(&self) -> (RecordView<'_>, QueuedAt) {
        let (p, rest) = self.data[self.head..].split_at(QENTRY);
        let p: &[u8; QENTRY] = p.try_into().unwrap();
        let offset = u64::from_ne_bytes([p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]]);
        let origin = u32::from_ne_bytes([p[8], p[9], p[10], p[11]]);
        let flags = u32::from_ne_bytes([p[12], p[13], p[14], p[15]]);
        let endian = if flags & QF_BIG != 0 {
            Endian::Big
        } else {
            Endian::Little
        };
        // Queued records were checked when they were read: only the size is read again.
        let r = RecordView::checked(rest, endian);
        let at = QueuedAt {
            offset,
            origin,
            check: flags & QF_CHECK != 0,
        };
        (r, at)
    }

    /// Drops the head record, whose size is `size`; returns the bytes freed.
    #[inline(always)]
    fn pop(&mut self, size: usize) -> usize {
        let n = QENTRY + size;
        self.head += n;
        if self.head == self.data.len() {
            self.data.clear();
            self.head = 0;
            if self.data.capacity() > QUEUE_KEEP {
                // An empty queue keeps a little storage for its next records, not the most
                // it ever held: thousands of queues must not each keep their peak.
                self.data = Vec::new();
            }
        } else if self.head > (1 << 20) && self.head * 2 > self.data.len() {
            self.data.drain(..self.head);
            self.head = 0;
        }
        n
    }
}

/// Byte order, checking and origin (card and session) of the current header of a merged
/// input.
#[derive(Clone, Copy)]
struct HdrState {
    endian: Endian,
    check: bool,
    origin: u32,
}

impl HdrState {
    fn new(h: &StreamHeader, origins: &mut Origins) -> HdrState {
        HdrState {
            endian: h.endian,
            check: h.flags & abi::STREAM_SEQ_CHECKED == 0,
            origin: origins.of(h),
        }
    }
}

/// A merged input split into per-CPU queues.
struct Demux<'m> {
    name: &'m str,
    feed: Feed<'m>,
    hdr: HdrState,
    queues: Vec<Queue>,
    /// Queue index by CPU; CPUs at or above `MAX_CPUS` share one queue, so crafted CPU
    /// numbers cannot multiply queues (and headers do not add any: see [`Queue`]).
    index: std::collections::HashMap<u32, usize>,
    /// The last `index` entry used: merged inputs come in runs of one CPU.
    last: Option<(u32, usize)>,
    /// Queues that received records while out of the heap (work for `enqueue_ready`).
    ready: Vec<usize>,
    buffered: usize,
    done: bool,
    /// Read ahead before the first emission.
    primed: bool,
    /// `held()` and the queue count as last added to the merger's totals.
    held_noted: usize,
    queues_noted: usize,
    /// Bytes to read ahead before the first emission: [`PIPE_READAHEAD`] for a merged stream
    /// (so that every CPU has been seen), a record for a per-CPU one (already in order).
    readahead: usize,
}

impl<'m> Demux<'m> {
    fn new(name: &'m str, feed: Feed<'m>, hdr: HdrState, readahead: usize) -> Demux<'m> {
        Demux {
            name,
            feed,
            hdr,
            readahead,
            queues: Vec::new(),
            index: std::collections::HashMap::new(),
            last: None,
            ready: Vec::new(),
            buffered: 0,
            held_noted: 0,
            queues_noted: 0,
            done: false,
            primed: false,
        }
    }
}

/// Reads the next record or header from a feed.
fn pull<'f>(name: &str, feed: &'f mut Feed<'_>, hs: &HdrState, sum: &mut RunSummary) -> Pulled<'f> {
    match feed {
        Feed::Slice { data, pos, shrink } => {
            let data: &[u8] = data;
            if *pos >= data.len() {
                return Pulled::End;
            }
            let at = *pos;
            if data[at..].starts_with(&abi::STREAM_MAGIC) {
                match StreamHeader::parse(&data[at..]) {
                    Ok(h) => {
                        *pos += h.header_size as usize;
                        return Pulled::Header(h);
                    }
                    Err(e) => {
                        let shrunk = shrink.and_then(|s| s.error(name, at as u64));
                        sum.errors
                            .push(shrunk.unwrap_or_else(|| header_error(name, at as u64, e)));
                        *pos = data.len();
                        return Pulled::End;
                    }
                }
            }
            match RecordView::parse(&data[at..], hs.endian, at as u64) {
                Ok(r) => {
                    *pos += r.size();
                    Pulled::Record(r.bytes(), at as u64)
                }
                Err(e) => {
                    let shrunk = shrink.and_then(|s| s.error(name, at as u64));
                    sum.errors.push(shrunk.unwrap_or_else(|| TraceError {
                        file: name.to_string(),
                        error: ErrorKind::Format(e),
                    }));
                    *pos = data.len();
                    Pulled::End
                }
            }
        }
        Feed::Reader {
            reader,
            buf,
            start,
            end,
            base,
            eof,
            chunk,
        } => {
            // Make sure a whole record (or header) is in the buffer.
            let mut want = abi::RECORD_HEADER_SIZE;
            loop {
                let have = *end - *start;
                if have >= want {
                    let b = &buf[*start..*end];
                    if b.starts_with(&abi::STREAM_MAGIC) {
                        if have >= abi::STREAM_HEADER_SIZE {
                            match StreamHeader::parse(b) {
                                Ok(h) => {
                                    *start += h.header_size as usize;
                                    return Pulled::Header(h);
                                }
                                Err(FormatError::TruncatedHeader { need, .. })
                                    if !*eof && need > want =>
                                {
                                    want = need;
                                }
                                Err(e) => {
                                    sum.errors
                                        .push(header_error(name, *base + *start as u64, e));
                                    *eof = true;
                                    *start = *end;
                                    return Pulled::End;
                                }
                            }
                        } else if !*eof {
                            want = abi::STREAM_HEADER_SIZE;
                        }
                    } else {
                        let size = hs.endian.u16(b, rec_off::SIZE) as usize;
                        if size > want && have < size && !*eof {
                            want = size;
                        } else {
                            let off = *base + *start as u64;
                            return match RecordView::parse(b, hs.endian, off) {
                                Ok(r) => {
                                    *start += r.size();
                                    let s = *start - r.size();
                                    Pulled::Record(&buf[s..*start], off)
                                }
                                Err(e) => {
                                    sum.errors.push(TraceError {
                                        file: name.to_string(),
                                        error: ErrorKind::Format(e),
                                    });
                                    *eof = true;
                                    *start = *end;
                                    Pulled::End
                                }
                            };
                        }
                    }
                }
                if *eof {
                    let have = *end - *start;
                    if have == 0 {
                        return Pulled::End;
                    }
                    let off = *base + *start as u64;
                    // Let the record parser name the truncation.
                    let err = if buf[*start..*end].starts_with(&abi::STREAM_MAGIC) {
                        header_error(
                            name,
                            off,
                            FormatError::TruncatedHeader {
                                have,
                                need: abi::STREAM_HEADER_SIZE,
                            },
                        )
                    } else {
                        TraceError {
                            file: name.to_string(),
                            error: ErrorKind::Format(
                                RecordView::parse(&buf[*start..*end], hs.endian, off)
                                    .err()
                                    .unwrap_or(FormatError::TruncatedRecord {
                                        offset: off,
                                        need: want,
                                        have,
                                    }),
                            ),
                        }
                    };
                    sum.errors.push(err);
                    *start = *end;
                    return Pulled::End;
                }
                // Compact, then read another chunk into the reused buffer.
                if *start > 0 && (*start >= READ_CHUNK || *start * 2 >= *end) {
                    buf.copy_within(*start..*end, 0);
                    *end -= *start;
                    *base += *start as u64;
                    *start = 0;
                }
                // The buffer doubles from `chunk` up to READ_CHUNK (small inputs stay cheap).
                let old = *end;
                let grow = buf.len().clamp(*chunk, READ_CHUNK).max(want);
                if buf.len() < old + grow {
                    buf.resize(old + grow, 0);
                }
                let res = loop {
                    match reader.read(&mut buf[old..]) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        other => break other,
                    }
                };
                match res {
                    Ok(n) => {
                        *end = old + n;
                        if n == 0 {
                            *eof = true;
                        }
                    }
                    Err(e) => {
                        sum.errors.push(TraceError::at(
                            name,
                            *base + old as u64,
                            format!("read error: {e}"),
                        ));
                        *eof = true;
                        *start = *end;
                        return Pulled::End;
                    }
                }
            }
        }
    }
}

impl Demux<'_> {
    /// Bytes this input holds: queued records and its read buffer.
    fn held(&self) -> usize {
        self.buffered
            + match &self.feed {
                Feed::Slice { .. } => 0,
                Feed::Reader { buf, .. } => buf.len(),
            }
    }

    /// Reads records into queues until queue `want` has one, the input ends, or the window is
    /// full (`want` None: until the read-ahead is done).
    fn refill(&mut self, want: Option<usize>, origins: &mut Origins, sum: &mut RunSummary) {
        if self.done {
            return;
        }
        loop {
            if let Some(q) = want {
                if !self.queues[q].is_empty() {
                    return;
                }
            } else if self.buffered >= self.readahead {
                return;
            }
            if self.buffered >= PIPE_WINDOW {
                return;
            }
            let hs0 = self.hdr;
            let (rec, off) = match pull(self.name, &mut self.feed, &self.hdr, sum) {
                Pulled::End => {
                    self.done = true;
                    return;
                }
                Pulled::Header(h) => {
                    self.hdr = HdrState::new(&h, origins);
                    continue;
                }
                Pulled::Record(r, off) => (r, off),
            };
            let rt = hs0.endian.u16(rec, rec_off::TYPE);
            if rt.wrapping_sub(1) >= abi::rtype::NOTE_STREAM_INFO {
                sum.unknown_records += 1;
                continue;
            }
            let key = hs0.endian.u32(rec, rec_off::CPU).min(MAX_CPUS);
            let qi = match self.last {
                Some((k, i)) if k == key => i,
                _ => {
                    let i = match self.index.get(&key) {
                        Some(&i) => i,
                        None => {
                            self.queues.push(Queue {
                                data: Vec::new(),
                                head: 0,
                                in_heap: false,
                                pending: false,
                                id: None,
                            });
                            self.index.insert(key, self.queues.len() - 1);
                            self.queues.len() - 1
                        }
                    };
                    self.last = Some((key, i));
                    i
                }
            };
            let q = &mut self.queues[qi];
            if !q.in_heap && !q.pending {
                q.pending = true;
                self.ready.push(qi);
            }
            q.push(rec, off, &hs0);
            self.buffered += QENTRY + rec.len();
        }
    }
}

fn header_error(name: &str, at: u64, e: FormatError) -> TraceError {
    let msg = e.to_string();
    // FormatError's text starts with "byte N: " relative to the header; re-base it.
    let msg = msg
        .split_once(": ")
        .map(|x| x.1)
        .unwrap_or(&msg)
        .to_string();
    TraceError::at(
        name,
        at + e.offset(),
        format!("embedded stream header: {msg}"),
    )
}

/// Per-CPU sequence state.
#[derive(Clone, Copy, Default)]
struct CpuSeq {
    last_seq: u64,
    last_time: u64,
}

/// Most (card, session) origins told apart; see [`Origins::of`].
const MAX_ORIGINS: usize = 64;

/// The (card, session) pairs of the stream headers read. Sequence numbers count the records
/// of one CPU of one recording of one device, so they are checked per origin and CPU, and
/// every record is delivered with the card of the header it came under.
#[derive(Default)]
struct Origins {
    list: Vec<(u32, u64)>,
    /// Per origin, per CPU.
    seqs: Vec<Vec<CpuSeq>>,
    /// Headers that found the table full (warned about once at the end).
    overflow: u64,
}

impl Origins {
    /// The origin of a header. Past [`MAX_ORIGINS`] distinct pairs (crafted input), a new
    /// session shares the slot of its card if there is one, else the last slot: memory
    /// stays bounded and only sequence checking of those streams is merged.
    fn of(&mut self, h: &StreamHeader) -> u32 {
        let key = (h.card, h.session_id);
        if let Some(i) = self.list.iter().position(|k| *k == key) {
            return i as u32;
        }
        if self.list.len() >= MAX_ORIGINS {
            self.overflow += 1;
            let same_card = self.list.iter().position(|k| k.0 == h.card);
            return same_card.unwrap_or(MAX_ORIGINS - 1) as u32;
        }
        self.list.push(key);
        self.seqs.push(Vec::new());
        (self.list.len() - 1) as u32
    }

    /// Says, once, that some streams shared a slot (their cards and sequence checks may be
    /// merged with another stream's).
    fn warn_overflow(&self, streams: &[StreamInfoView], sum: &mut RunSummary) {
        if self.overflow > 0 {
            sum.warn(TraceError {
                file: streams.first().map_or_else(String::new, |s| s.name.clone()),
                error: ErrorKind::Input(format!(
                    "{} stream header(s) past {MAX_ORIGINS} different card/session pairs: their records are checked and labelled with an earlier stream of the same card (or the last one)",
                    self.overflow
                )),
            });
        }
    }

    #[inline(always)]
    fn card(&self, origin: u32) -> u32 {
        self.list[origin as usize].0
    }
}

struct Merger<'m> {
    heap: Heap,
    files: Vec<FileCursor<'m>>,
    demux: Vec<Demux<'m>>,
    /// Cursor ids at and above `QUEUE_BASE` name (demux, queue) pairs through this table.
    qids: Vec<(u32, u32)>,
    origins: Origins,
    last_time: u64,
    /// Bytes and queues held by all demuxes, as last noted (see `note_held`).
    held: usize,
    queues: usize,
}

const QUEUE_BASE: u32 = 1 << 30;

impl<'m> Merger<'m> {
    fn new() -> Merger<'m> {
        Merger {
            heap: Heap { v: Vec::new() },
            files: Vec::new(),
            demux: Vec::new(),
            qids: Vec::new(),
            origins: Origins::default(),
            last_time: 0,
            held: 0,
            queues: 0,
        }
    }

    fn add_file(&mut self, mut c: FileCursor<'m>, sum: &mut RunSummary) {
        let id = self.files.len() as u32;
        if let Some(r) = c.seek_head(sum) {
            c.head = Some(r);
            self.heap.push(Entry::of(&r, id));
        }
        self.files.push(c);
    }

    fn add_demux(&mut self, d: Demux<'m>) {
        self.demux.push(d);
    }

    /// Pushes every non-empty queue of demux `di` that is not in the heap yet.
    fn enqueue_ready(&mut self, di: usize) {
        let d = &mut self.demux[di];
        for qi in std::mem::take(&mut d.ready) {
            let q = &mut d.queues[qi];
            q.pending = false;
            if !q.in_heap && !q.is_empty() {
                q.in_heap = true;
                let id = match q.id {
                    Some(id) => id,
                    None => {
                        self.qids.push((di as u32, qi as u32));
                        let id = QUEUE_BASE + (self.qids.len() - 1) as u32;
                        q.id = Some(id);
                        id
                    }
                };
                let (r, _) = q.peek();
                self.heap.push(Entry::of(&r, id));
            }
        }
    }

    /// Sequence check of one record, by its merge key. Returns a gap to deliver before it.
    #[inline(always)]
    fn check_seq_key(
        seqs: &mut Vec<CpuSeq>,
        cpu: u32,
        seq: u64,
        time: u64,
        name: &str,
        offset: u64,
        sum: &mut RunSummary,
    ) -> Option<Lost> {
        if seq == 0 || cpu >= MAX_CPUS {
            return None;
        }
        let c = cpu as usize;
        if c >= seqs.len() {
            seqs.resize(c + 1, CpuSeq::default());
        }
        let st = &mut seqs[c];
        let last = st.last_seq;
        if seq == last.wrapping_add(1) {
            st.last_seq = seq;
            st.last_time = time;
            return None;
        }
        if seq > last {
            let first_ns = if last == 0 { time } else { st.last_time };
            st.last_seq = seq;
            st.last_time = time;
            let count = seq - last - 1;
            sum.gaps += 1;
            sum.gap_records = sum.gap_records.saturating_add(count);
            return Some(Lost {
                cpu,
                source: lost_source::SEQ_GAP,
                count,
                first_ns,
                last_ns: time,
            });
        }
        sum.seq_backwards += 1;
        sum.warn(TraceError::at(
            name,
            offset,
            format!(
                "cpu {cpu}: sequence {} after {last} (repeated or backwards)",
                seq
            ),
        ));
        None
    }

    fn run<F>(&mut self, sum: &mut RunSummary, f: &mut F)
    where
        F: FnMut(u32, Item<'_>) -> ControlFlow<()>,
    {
        for di in 0..self.demux.len() {
            if !self.demux[di].primed {
                self.demux[di].primed = true;
                self.demux[di].refill(None, &mut self.origins, sum);
                self.note_held(di, sum);
                self.enqueue_ready(di);
            }
        }
        if self.demux.is_empty() {
            self.run_files(sum, f);
            return;
        }
        while let Some(&top) = self.heap.v.first() {
            if top.time < self.last_time {
                sum.reordered += 1;
            }
            self.last_time = top.time;
            if top.cur < QUEUE_BASE {
                let c = &mut self.files[top.cur as usize];
                let r = c.head.expect("heap entry has a head");
                let card = self.origins.card(c.origin);
                if c.check {
                    if let Some(g) = Self::check_seq_key(
                        &mut self.origins.seqs[c.origin as usize],
                        top.cpu,
                        top.seq,
                        top.time,
                        c.name,
                        c.pos as u64,
                        sum,
                    ) {
                        if f(card, Item::Gap(g)).is_break() {
                            sum.stopped = true;
                            return;
                        }
                    }
                }
                sum.records += 1;
                if f(card, Item::Record(r)).is_break() {
                    sum.stopped = true;
                    return;
                }
                c.pos += r.size();
                match c.seek_head(sum) {
                    Some(n) => {
                        c.head = Some(n);
                        self.heap.replace_top(Entry::of(&n, top.cur));
                    }
                    None => self.heap.pop_top(),
                }
            } else {
                let (di, qi) = self.qids[(top.cur - QUEUE_BASE) as usize];
                let (di, qi) = (di as usize, qi as usize);
                {
                    let d = &mut self.demux[di];
                    let name = d.name;
                    let q = &d.queues[qi];
                    let (r, at) = q.peek();
                    let size = r.size();
                    let card = self.origins.card(at.origin);
                    if at.check {
                        if let Some(g) = Self::check_seq_key(
                            &mut self.origins.seqs[at.origin as usize],
                            top.cpu,
                            top.seq,
                            top.time,
                            name,
                            at.offset,
                            sum,
                        ) {
                            if f(card, Item::Gap(g)).is_break() {
                                sum.stopped = true;
                                return;
                            }
                        }
                    }
                    sum.records += 1;
                    if f(card, Item::Record(r)).is_break() {
                        sum.stopped = true;
                        return;
                    }
                    let n = d.queues[qi].pop(size);
                    d.buffered -= n;
                    if d.queues[qi].is_empty() {
                        // The watermark: nothing else may go out before this CPU's next
                        // record is known (or its input has ended).
                        d.refill(Some(qi), &mut self.origins, sum);
                        self.note_held(di, sum);
                    }
                }
                let d = &mut self.demux[di];
                if d.queues[qi].is_empty() {
                    d.queues[qi].in_heap = false;
                    self.heap.pop_top();
                } else {
                    let (r, _) = d.queues[qi].peek();
                    self.heap.replace_top(Entry::of(&r, top.cur));
                }
                self.enqueue_ready(di);
            }
        }
    }

    /// Updates the bytes and queues held by all merged inputs after demux `di` read more,
    /// and their peaks in the summary (O(1): only `di` changed).
    #[inline]
    fn note_held(&mut self, di: usize, sum: &mut RunSummary) {
        let d = &mut self.demux[di];
        let (held, queues) = (d.held(), d.queues.len());
        self.held = self.held + held - d.held_noted;
        self.queues = self.queues + queues - d.queues_noted;
        (d.held_noted, d.queues_noted) = (held, queues);
        sum.peak_buffered = sum.peak_buffered.max(self.held as u64);
        sum.peak_queues = sum.peak_queues.max(self.queues as u64);
    }

    /// `run_files` delivering runs of native event records as slices.
    // `flush!` resets the run even where the loop is left right after.
    #[allow(unused_assignments)]
    // Kept out of `for_each_raw`, so that the other merge loop compiled there does not
    // change this hot loop's code (measured: +1.6% instructions on a files-only dump).
    #[inline(never)]
    fn run_files_raw<F>(&mut self, sum: &mut RunSummary, f: &mut F)
    where
        F: FnMut(RawItem<'_>) -> ControlFlow<()>,
    {
        let mut last_time = self.last_time;
        let mut reordered = 0u64;
        let mut records = 0u64;
        'outer: while let Some(&top) = self.heap.v.first() {
            let limit = match (self.heap.v.get(1), self.heap.v.get(2)) {
                (Some(a), Some(b)) => Some(if b.before(a) { *b } else { *a }),
                (Some(a), None) => Some(*a),
                _ => None,
            };
            let c = &mut self.files[top.cur as usize];
            let seqs = &mut self.origins.seqs[c.origin as usize];
            let data = c.data;
            let native = c.endian == Endian::NATIVE;
            let Some(mut r) = c.head else { break };
            let mut key = top;
            let (mut run_start, mut run_len, mut run_n) = (c.pos, 0usize, 0u64);
            macro_rules! flush {
                () => {
                    if run_len > 0 {
                        records += run_n;
                        let bytes = &data[run_start..run_start + run_len];
                        if f(RawItem::Events {
                            bytes,
                            count: run_n,
                        })
                        .is_break()
                        {
                            sum.stopped = true;
                            break 'outer;
                        }
                        run_len = 0;
                        run_n = 0;
                    }
                };
            }
            loop {
                reordered += (key.time < last_time) as u64;
                last_time = key.time;
                if c.check && key.seq != 0 {
                    if let Some(g) = Self::check_seq_key(
                        seqs,
                        key.cpu,
                        key.seq,
                        key.time,
                        c.name,
                        c.pos as u64,
                        sum,
                    ) {
                        flush!();
                        if f(RawItem::Item(Item::Gap(g))).is_break() {
                            sum.stopped = true;
                            break 'outer;
                        }
                    }
                }
                if native && r.is_event() {
                    if run_len > 0 && c.pos != run_start + run_len {
                        // An unknown record was skipped in between.
                        flush!();
                    }
                    if run_len == 0 {
                        run_start = c.pos;
                    }
                    run_len += r.size();
                    run_n += 1;
                } else {
                    flush!();
                    records += 1;
                    if f(RawItem::Item(Item::Record(r))).is_break() {
                        sum.stopped = true;
                        break 'outer;
                    }
                }
                c.pos += r.size();
                match c.seek_head(sum) {
                    Some(n) => {
                        r = n;
                        key = Entry::of(&n, top.cur);
                        match &limit {
                            Some(l) if !key.before(l) => {
                                flush!();
                                c.head = Some(n);
                                self.heap.replace_top(key);
                                break;
                            }
                            _ => {}
                        }
                    }
                    None => {
                        flush!();
                        self.heap.pop_top();
                        break;
                    }
                }
            }
        }
        sum.records += records;
        sum.reordered += reordered;
        self.last_time = last_time;
    }

    /// The common case: only per-CPU mapped files. Same order as `run`, but the top cursor
    /// keeps emitting while its next record still sorts before every other cursor's head
    /// (so two interleaved CPUs cost one key comparison per record, not a heap update), and
    /// the sequence check uses the key already read.
    fn run_files<F>(&mut self, sum: &mut RunSummary, f: &mut F)
    where
        F: FnMut(u32, Item<'_>) -> ControlFlow<()>,
    {
        let mut last_time = self.last_time;
        let mut reordered = 0u64;
        let mut records = 0u64;
        'outer: while let Some(&top) = self.heap.v.first() {
            // The best head among the other cursors: a child of the root.
            let limit = match (self.heap.v.get(1), self.heap.v.get(2)) {
                (Some(a), Some(b)) => Some(if b.before(a) { *b } else { *a }),
                (Some(a), None) => Some(*a),
                _ => None,
            };
            let c = &mut self.files[top.cur as usize];
            let card = self.origins.card(c.origin);
            let seqs = &mut self.origins.seqs[c.origin as usize];
            let Some(mut r) = c.head else { break };
            let mut key = top;
            loop {
                reordered += (key.time < last_time) as u64;
                last_time = key.time;
                if c.check && key.seq != 0 {
                    if let Some(g) = Self::check_seq_key(
                        seqs,
                        key.cpu,
                        key.seq,
                        key.time,
                        c.name,
                        c.pos as u64,
                        sum,
                    ) {
                        if f(card, Item::Gap(g)).is_break() {
                            sum.stopped = true;
                            break 'outer;
                        }
                    }
                }
                records += 1;
                if f(card, Item::Record(r)).is_break() {
                    sum.stopped = true;
                    break 'outer;
                }
                c.pos += r.size();
                match c.seek_head(sum) {
                    Some(n) => {
                        r = n;
                        key = Entry::of(&n, top.cur);
                        match &limit {
                            Some(l) if !key.before(l) => {
                                c.head = Some(n);
                                self.heap.replace_top(key);
                                break;
                            }
                            _ => {}
                        }
                    }
                    None => {
                        self.heap.pop_top();
                        break;
                    }
                }
            }
        }
        sum.records += records;
        sum.reordered += reordered;
        self.last_time = last_time;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_end_or_start_end_in_seconds() {
        assert_eq!(parse_window("0.5"), Ok((0, 500_000_000)));
        assert_eq!(parse_window("0.5:2"), Ok((500_000_000, 2_000_000_000)));
        assert_eq!(parse_window("1:"), Ok((1_000_000_000, u64::MAX)));
        assert_eq!(parse_window(":1"), Ok((0, 1_000_000_000)));
        assert_eq!(parse_window("1:1"), Ok((1_000_000_000, 1_000_000_000)));
        assert!(parse_window("3:1")
            .unwrap_err()
            .contains("ends before it starts"));
        for bad in ["x", "", "-1", "1:y", "inf", "NaN:1"] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
    }
    use crate::encode::StreamWriter;
    use crate::view::{Body, EventBody, Records, Stamp};

    fn ev(code: u16) -> Body<'static> {
        Body::Event(EventBody {
            code,
            ..EventBody::default()
        })
    }

    /// A per-CPU stream with events at the given (time, seq).
    fn stream(cpu: u32, recs: &[(u64, u64)], endian: Endian) -> Vec<u8> {
        let mut h = StreamHeader::new(cpu, 0, "test");
        h.endian = endian;
        let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
        for &(t, s) in recs {
            let st = Stamp {
                cpu,
                pid: 1,
                time_ns: t,
                seq: s,
            };
            w.write(&st, &ev(1)).unwrap();
        }
        w.into_inner()
    }

    fn collect(sources: Vec<InputSource>) -> (Vec<String>, RunSummary) {
        let mut t = Trace::open(sources).unwrap();
        let mut out = Vec::new();
        let sum = t.for_each(|it| {
            out.push(match it {
                Item::Record(r) => format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq()),
                Item::Gap(g) => format!("gap{}:{}:{}-{}", g.cpu, g.count, g.first_ns, g.last_ns),
            });
            ControlFlow::Continue(())
        });
        (out, sum)
    }

    fn bytes(name: &str, data: Vec<u8>) -> InputSource {
        InputSource::Bytes {
            name: name.into(),
            data,
        }
    }

    #[test]
    fn merges_by_time_then_cpu_and_reports_gaps() {
        let a = stream(0, &[(10, 1), (20, 2), (30, 3)], Endian::Little);
        let b = stream(1, &[(10, 1), (15, 2), (40, 5)], Endian::Big);
        let (out, sum) = collect(vec![bytes("b", b), bytes("a", a)]);
        assert_eq!(
            out,
            vec![
                "0:10:1",
                "1:10:1",
                "1:15:2",
                "0:20:2",
                "0:30:3",
                "gap1:2:15-40",
                "1:40:5"
            ]
        );
        assert_eq!(sum.gaps, 1);
        assert_eq!(sum.gap_records, 2);
        assert!(sum.errors.is_empty());
    }

    #[test]
    fn damage_ends_one_input_and_keeps_what_came_before() {
        let mut a = stream(0, &[(10, 1), (20, 2), (30, 3)], Endian::Little);
        let b = stream(1, &[(11, 1), (21, 2)], Endian::Little);
        a.truncate(a.len() - 5);
        let (out, sum) = collect(vec![bytes("a", a), bytes("b", b)]);
        assert_eq!(out, vec!["0:10:1", "1:11:1", "0:20:2", "1:21:2"]);
        assert_eq!(sum.errors.len(), 1);
        assert_eq!(
            sum.errors[0].to_string(),
            "a: byte 272: truncated record (67 of 72 bytes)"
        );
    }

    /// `for_each_raw` delivers the same records in the same order, events in slices.
    #[test]
    fn raw_runs_match_items() {
        let a = stream(
            0,
            &[(10, 1), (20, 2), (21, 3), (30, 6), (31, 7)],
            Endian::Little,
        );
        let b = stream(1, &[(15, 1), (25, 2)], Endian::Big);
        let c = stream(2, &[(5, 1), (50, 2)], Endian::NATIVE);
        let srcs = || {
            vec![
                bytes("a", a.clone()),
                bytes("b", b.clone()),
                bytes("c", c.clone()),
            ]
        };
        let (want, wsum) = collect(srcs());
        let mut t = Trace::open(srcs()).unwrap();
        let mut got = Vec::new();
        let mut slices = 0;
        let sum = t.for_each_raw(|it| {
            match it {
                RawItem::Events { bytes, count } => {
                    slices += 1;
                    let recs: Vec<_> = Records::bare(bytes, Endian::NATIVE).collect();
                    assert_eq!(recs.len() as u64, count);
                    for r in recs {
                        let r = r.unwrap();
                        got.push(format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq()));
                    }
                }
                RawItem::Item(Item::Record(r)) => {
                    got.push(format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq()))
                }
                RawItem::Item(Item::Gap(g)) => got.push(format!(
                    "gap{}:{}:{}-{}",
                    g.cpu, g.count, g.first_ns, g.last_ns
                )),
            }
            ControlFlow::Continue(())
        });
        assert_eq!(got, want);
        assert_eq!(sum.records, wsum.records);
        assert_eq!(sum.gaps, 1);
        assert!(slices >= 3 && slices < want.len(), "{slices}");
    }

    /// With a merged input, `for_each_raw` delivers every native event alone.
    #[test]
    fn raw_events_of_a_merged_input_come_one_by_one() {
        let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "test");
        h.flags = abi::STREAM_MERGED;
        let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
        for (cpu, t, seq) in [(0, 10, 1), (1, 5, 1), (0, 20, 3), (1, 25, 2)] {
            let st = Stamp {
                cpu,
                pid: 1,
                time_ns: t,
                seq,
            };
            w.write(&st, &ev(1)).unwrap();
        }
        let data = w.into_inner();
        let (want, _) = collect(vec![bytes("m", data.clone())]);
        let mut t = Trace::open(vec![bytes("m", data)]).unwrap();
        let mut got = Vec::new();
        t.for_each_raw(|it| {
            got.push(match it {
                RawItem::Events { bytes, count } => {
                    assert_eq!(count, 1);
                    let r = RecordView::parse(bytes, Endian::NATIVE, 0).unwrap();
                    assert_eq!(r.size(), bytes.len());
                    format!("{}:{}:{}", r.cpu(), r.time_ns(), r.seq())
                }
                RawItem::Item(Item::Gap(g)) => {
                    format!("gap{}:{}:{}-{}", g.cpu, g.count, g.first_ns, g.last_ns)
                }
                RawItem::Item(Item::Record(r)) => panic!("native event as an item: {r:?}"),
            });
            ControlFlow::Continue(())
        });
        assert_eq!(got, want);
        assert_eq!(want.len(), 5);
    }

    /// Found by the fuzzer: huge sequence jumps must not overflow the gap counters.
    #[test]
    fn huge_sequence_jumps_saturate() {
        let a = stream(0, &[(10, 1), (20, u64::MAX), (30, 2)], Endian::Little);
        let b = stream(1, &[(10, 1), (20, u64::MAX - 1)], Endian::Little);
        let (out, sum) = collect(vec![bytes("a", a), bytes("b", b)]);
        assert_eq!(out.len(), 7);
        assert_eq!(sum.gaps, 2);
        assert_eq!(sum.gap_records, u64::MAX);
        assert_eq!(sum.seq_backwards, 1);
    }

    #[test]
    fn backwards_sequence_is_warned_with_offset() {
        let a = stream(0, &[(10, 1), (20, 2), (30, 2)], Endian::Little);
        let (out, sum) = collect(vec![bytes("a", a)]);
        assert_eq!(out.len(), 3);
        assert_eq!(sum.seq_backwards, 1);
        assert_eq!(
            sum.warnings[0].to_string(),
            "a: byte 272: cpu 0: sequence 2 after 2 (repeated or backwards)"
        );
    }

    /// Crafted CPU numbers cannot multiply a merged input's queues: CPUs at or above
    /// `MAX_CPUS` share one (checked on the queues themselves; the delivered items alone do
    /// not show it).
    #[test]
    fn merged_input_queues_stay_within_max_cpus() {
        let mut h = StreamHeader::new(abi::CPU_MERGED, 0, "test");
        h.flags = abi::STREAM_MERGED;
        let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
        let n = 50_000u32;
        for i in 0..n {
            let st = Stamp {
                cpu: i.wrapping_mul(2_654_435_761),
                pid: 1,
                time_ns: i as u64,
                seq: 0,
            };
            w.write(&st, &ev(1)).unwrap();
        }
        let data = w.into_inner();
        let pipe = InputSource::Stream {
            name: "pipe".into(),
            reader: Box::new(io::Cursor::new(data.clone())),
        };
        for src in [bytes("file", data), pipe] {
            let mut t = Trace::open(vec![src]).unwrap();
            let mut sum = RunSummary::default();
            let mut m = t.merger(&mut sum);
            let mut delivered = 0u32;
            m.run(&mut sum, &mut |_, _| {
                delivered += 1;
                ControlFlow::Continue(())
            });
            assert_eq!(delivered, n);
            assert!(sum.errors.is_empty());
            let queues = m.demux[0].queues.len();
            assert!(queues <= MAX_CPUS as usize + 1, "{queues} queues");
        }
    }
}
