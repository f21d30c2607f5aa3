//! grtparse: turns grtrace streams into one human line per event, like blkparse.
//!
//! The library does the work so tests can call it: [`Cli`] is the command line, [`run`] parses
//! the inputs through `grtrace_format::trace` (mmap, k-way merge, sequence-gap detection),
//! prints lines through a big buffer with hand-rolled number formatting ([`out`], [`format`]),
//! dumps the merged binary stream (`-d`) and prints the summary ([`stats`]).

pub mod format;
pub mod out;
pub mod stats;

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use clap::Parser;
use grtrace_cli::is_broken_pipe;
use grtrace_format::abi::{self, rtype};
use grtrace_format::view::{Body, EventBody, Stamp, StreamHeader};
use grtrace_format::{encode, Endian, InputSource, Item, RawItem, Trace};

use crate::format::{compile, slot_by_name, slot_of, Line, Render, NSLOTS, SLOT_NOTE_BASE};
use crate::out::Out;
use crate::stats::Stats;

const AFTER_HELP: &str = "\
Examples:
  grtparse run                     every run.grtrace.<cpu> file, merged by time
  grtparse run.grtrace.*           the same, with the files named
  grtrace -o - | grtparse -i -     a live stream on stdin
  grtparse run -a SUBMIT,END --ring gfx -w 0.5:2
  grtparse run -f '%T.%t %c %a %x %n\\n'
  grtparse run -q -O -d merged.bin  merge into one binary stream, no text
  grtparse -D /tmp/traces run      run.grtrace.<cpu> files in /tmp/traces

Default line (whitespace-separated, stable for grep and awk):
  device cpu seq sec.nsec pid EVENT ring ctx seqno [key=value details...] [comm]
Notes (PROCESS RING MSG CLOCK_SYNC LOST STREAM_INFO) use '-' for ring ctx seqno.
Lost records print inline as LOST lines (source=kernel|recorder|gap).

Format fields for -f/-F (%[-][width]X; \\n \\t escapes; %% for %):
  %a event name  %c cpu  %C process name  %d details  %D device  %f flags
  %n job seqno  %p pid  %r ring (name)  %R ring id  %s sequence  %T seconds
  %t nanoseconds  %x ctx  %z wall clock sec.nsec  %0 %1 %2 %3 event args

Exit status: 0 ok, 1 damaged/missing/empty input or output error, 2 usage error.";

/// Command line of grtparse.
#[derive(Parser, Debug, Default)]
#[command(
    name = "grtparse",
    version,
    about = "Turn grtrace streams into one line per GPU event (like blkparse)",
    long_about = "Reads the per-CPU streams written by `grtrace -o run` (run.grtrace.<cpu>), \
merged streams (`grtrace -o -`, `grtparse -d`), or stdin, merges them by time and prints one \
line per event. Sequence gaps and kernel drops are shown inline and in the summary.",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Inputs: a base name (`run` reads every run.grtrace.<cpu>), files, or `-` for stdin.
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<OsString>,
    /// Input, like a positional INPUT (repeatable; `-i -` is stdin).
    #[arg(short = 'i', long = "input", value_name = "INPUT")]
    pub input: Vec<OsString>,
    /// Look for the inputs (those not starting with `/`) in DIR, like blkparse -D.
    #[arg(short = 'D', long = "input-directory", value_name = "DIR")]
    pub input_dir: Option<PathBuf>,
    /// Write text to FILE instead of stdout (`-` = stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Format string for every line (see the fields below).
    #[arg(short = 'f', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Format string for one event or note, e.g. `-F 'END,%T.%t %x %n status=%2\n'`.
    #[arg(short = 'F', long = "format-spec", value_name = "EVENT,FORMAT")]
    pub format_spec: Vec<String>,
    /// Show only these events/notes (comma-separated names, e.g. SUBMIT,END,MSG).
    #[arg(
        short = 'a',
        long = "events",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    pub events: Vec<String>,
    /// Show only the events whose bits are set in this hex mask (bit N = event code N,
    /// as blkparse and grtrace -A); notes are still shown.
    #[arg(short = 'A', long = "set-mask", value_name = "HEX")]
    pub mask: Option<String>,
    /// Show everything except these events/notes (comma-separated names).
    #[arg(long = "exclude", value_name = "NAMES", value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Only events of these context ids.
    #[arg(long = "ctx", value_name = "IDS", value_delimiter = ',')]
    pub ctx: Vec<u32>,
    /// Only events on these rings (ids or names from the ring notes).
    #[arg(long = "ring", value_name = "RINGS", value_delimiter = ',')]
    pub ring: Vec<String>,
    /// Only events (and messages and process notes) of these pids.
    #[arg(long = "pid", value_name = "PIDS", value_delimiter = ',')]
    pub pid: Vec<u32>,
    /// Time window in seconds from the first record: END or START:END (e.g. 0.5:2).
    #[arg(short = 'w', long = "stopwatch", value_name = "[START:]END")]
    pub window: Option<String>,
    /// No summary at the end.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// No text output (use with -d).
    #[arg(short = 'O', long = "no-text-output")]
    pub no_text: bool,
    /// Dump the merged stream, in the same binary format, to FILE (`-` = stdout).
    #[arg(short = 'd', long = "dump-binary", value_name = "FILE")]
    pub dump: Option<PathBuf>,
    /// Per-process statistics in the summary.
    #[arg(short = 's', long = "per-program-stats")]
    pub per_process: bool,
    /// Verbose: inputs, gaps and warnings on stderr as they happen.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Print absolute wall-clock time (seconds since the epoch) instead of relative time.
    #[arg(long = "wall")]
    pub wall: bool,
    /// Merge files of different recording sessions of one card (refused by default).
    #[arg(long = "force")]
    pub force: bool,
    #[command(flatten)]
    pub progress: grtrace_cli::ProgressArgs,
    #[command(flatten)]
    pub completions: grtrace_cli::CompletionArgs,
}

/// Writes `grtparse: ...` to `err` on one line, whatever file names the message holds.
macro_rules! say {
    ($err:expr, $($t:tt)*) => {
        writeln!($err, "{}", grtrace_cli::one_line(&format!($($t)*)))
    };
}

/// What the per-item handler gets: a merged item, or (dump only) native event records.
enum Input<'a> {
    /// An item and the card of the stream it came from.
    Item(u32, Item<'a>),
    Run(&'a [u8]),
}

/// A usage problem (exit status 2).
#[derive(Debug)]
pub struct UsageError(pub String);

/// Filters compiled from the command line.
struct Filters {
    /// Slot → shown.
    show: [bool; NSLOTS],
    ctx: Vec<u32>,
    rings: grtrace_cli::RingSelect,
    pid: Vec<u32>,
    /// Seconds window, resolved against genesis once it is known.
    window: Option<(u64, u64)>,
    /// Event filters (ctx/ring/pid) present.
    any_event_filter: bool,
    /// Anything at all filtered (-a/-A/-w/ctx/ring/pid).
    any: bool,
}

fn slots_of(names: &[String], opt: &str) -> Result<Vec<usize>, UsageError> {
    names
        .iter()
        .filter(|n| !n.is_empty())
        .map(|n| {
            slot_by_name(n.trim()).ok_or_else(|| {
                UsageError(format!(
                    "{opt}: unknown event '{n}' (names: {}, PROCESS RING MSG CLOCK_SYNC LOST STREAM_INFO, EVENT_<n>)",
                    grtrace_format::Event::known().filter_map(|e| e.name()).collect::<Vec<_>>().join(" ")
                ))
            })
        })
        .collect()
}

impl Filters {
    fn new(cli: &Cli) -> Result<Filters, UsageError> {
        let mut show = [true; NSLOTS];
        let only = slots_of(&cli.events, "-a")?;
        let mask = cli
            .mask
            .as_deref()
            .map(|m| grtrace_cli::parse_hex_mask("-A", m))
            .transpose()
            .map_err(UsageError)?;
        if !only.is_empty() || mask.is_some() {
            show = [false; NSLOTS];
            for s in only {
                show[s] = true;
            }
            if let Some(m) = mask {
                // Like blkparse: the mask selects events; notes stay unless -a names some.
                for (code, shown) in show[..SLOT_NOTE_BASE.min(64)].iter_mut().enumerate() {
                    *shown |= m & (1 << code) != 0;
                }
                if cli.events.is_empty() {
                    show[SLOT_NOTE_BASE..].fill(true);
                }
            }
        }
        for s in slots_of(&cli.exclude, "--exclude")? {
            show[s] = false;
        }
        let window = cli.window.as_deref().map(grtrace_format::parse_window);
        let window = window.transpose().map_err(UsageError)?;
        let any_event_filter = !cli.ctx.is_empty() || !cli.ring.is_empty() || !cli.pid.is_empty();
        let any = any_event_filter
            || window.is_some()
            || !cli.events.is_empty()
            || mask.is_some()
            || !cli.exclude.is_empty();
        Ok(Filters {
            show,
            ctx: cli.ctx.clone(),
            rings: grtrace_cli::RingSelect::parse(&cli.ring),
            pid: cli.pid.clone(),
            window,
            any_event_filter,
            any,
        })
    }
}

/// Where `-d` writes; `file` (a regular file) lets the header be rewritten at the end.
struct Dump {
    out: Out,
    header: StreamHeader,
    file: Option<File>,
    scratch: Vec<u8>,
}

/// Runs grtparse; returns the exit status. Messages go to `err` (stderr in the binary).
pub fn run(cli: Cli, err: &mut dyn Write) -> i32 {
    match run_inner(cli, err) {
        Ok(code) => code,
        Err(RunError::Usage(m)) => {
            let _ = say!(err, "grtparse: {m}");
            grtrace_cli::exit::USAGE
        }
        Err(RunError::Fatal(m)) => {
            let _ = say!(err, "grtparse: {m}");
            grtrace_cli::exit::RUNTIME
        }
    }
}

enum RunError {
    Usage(String),
    Fatal(String),
}

impl From<UsageError> for RunError {
    fn from(u: UsageError) -> Self {
        RunError::Usage(u.0)
    }
}

/// The per-line formats of `-f` and `-F`: every string is checked, none may panic.
pub fn compile_formats(
    format: Option<&str>,
    specs: &[String],
    render: &mut Render,
) -> Result<(), UsageError> {
    if let Some(f) = format {
        render.default_fmt = Some(compile(f).map_err(|e| UsageError(format!("-f: {e}")))?);
    }
    for spec in specs {
        let (ev, f) = spec
            .split_once(',')
            .ok_or_else(|| UsageError(format!("-F '{spec}': expected EVENT,FORMAT")))?;
        if ev.trim().is_empty() {
            return Err(UsageError(format!(
                "-F '{spec}': no event name before the comma (e.g. -F 'END,%T.%t %n\\n')"
            )));
        }
        let slot = slots_of(&[ev.to_string()], "-F")?;
        let fmt = compile(f).map_err(|e| UsageError(format!("-F '{spec}': {e}")))?;
        render.per_slot[slot[0]] = Some(fmt);
    }
    Ok(())
}

/// The input words with `-D DIR` applied to the relative ones (not to `-`).
fn input_words(cli: &Cli) -> Result<Vec<OsString>, UsageError> {
    let mut words = cli.input.clone();
    words.extend(cli.inputs.iter().cloned());
    for w in &words {
        if w.is_empty() {
            return Err(UsageError("an input name is empty".into()));
        }
    }
    if let Some(d) = &cli.input_dir {
        if !d.is_dir() {
            return Err(UsageError(format!(
                "-D {}: not a directory",
                grtrace_cli::show(d)
            )));
        }
        for w in words.iter_mut() {
            if !grtrace_cli::is_dash(&*w) && Path::new(w).is_relative() {
                *w = d.join(&*w).into_os_string();
            }
        }
    }
    Ok(words)
}

fn run_inner(mut cli: Cli, err: &mut dyn Write) -> Result<i32, RunError> {
    let inputs = input_words(&cli)?;
    if inputs.is_empty() {
        return Err(RunError::Usage(
            "no input: give a base name (run), files, or -i - for stdin (see --help)".into(),
        ));
    }
    if inputs.iter().filter(|i| *i == "-").count() > 1 {
        return Err(RunError::Usage(
            "stdin (-) is given more than once: it can be read only once".into(),
        ));
    }
    for (opt, name) in [("-o", &cli.output), ("-d", &cli.dump)] {
        if name.as_ref().is_some_and(|n| n.as_os_str().is_empty()) {
            return Err(RunError::Usage(format!("{opt}: the file name is empty")));
        }
    }
    let filters = Filters::new(&cli)?;
    // `grtparse -d - run | grtreport`: the binary stream owns stdout, so text is off unless
    // sent to a file, and the summary goes to stderr.
    let dump_to_stdout = cli.dump.as_deref().is_some_and(grtrace_cli::is_dash);
    if dump_to_stdout && !cli.no_text {
        match cli.output.as_deref() {
            None => cli.no_text = true,
            Some(o) if grtrace_cli::is_dash(o) => {
                return Err(RunError::Usage(
                    "-d - and -o - both write to stdout: send the text to a file or add -O".into(),
                ))
            }
            Some(_) => {}
        }
    }
    let mut render = Render::new(Vec::new());
    compile_formats(cli.format.as_deref(), &cli.format_spec, &mut render)?;

    let mut problems = 0u32;
    let (sources, warnings) = grtrace_format::resolve_inputs(&inputs)
        .map_err(|e| RunError::Fatal(grtrace_cli::input_error(&e.file, &e.to_string())))?;
    for w in &warnings {
        let _ = say!(err, "grtparse: warning: {w}");
        problems += 1;
    }
    // Every file read, by device and inode: no output may be one of them.
    let mut read = grtrace_cli::Inputs::new();
    for w in &inputs {
        read.add(w);
    }
    let mut files = Vec::new();
    for s in &sources {
        if let InputSource::File(p) = s {
            read.add(p);
            files.push(p.clone());
        }
    }
    for (opt, name) in [("-o", &cli.output), ("-d", &cli.dump)] {
        if let Some(n) = name {
            read.check_output(opt, n).map_err(RunError::Fatal)?;
        }
    }
    let mut trace = match Trace::open(sources) {
        Ok(t) => t,
        Err(e) => {
            return Err(RunError::Fatal(e.to_string()));
        }
    };
    let streams = trace.streams().to_vec();
    let first = &streams[0].header;
    render.set_card(first.card);
    if first.anchor_realtime_ns != 0 {
        render.anchor = Some((first.anchor_realtime_ns, first.anchor_clock_ns));
    }
    if cli.wall {
        match render.anchor {
            Some(a) => render.wall = Some(a),
            None => {
                let _ = say!(
                    err,
                    "grtparse: warning: {}: no wall-clock anchor in the header, printing relative times",
                    streams[0].name
                );
            }
        }
    }
    if cli.verbose {
        for s in &streams {
            let h = &s.header;
            let cpu = if h.is_merged() {
                "merged".to_string()
            } else {
                format!("cpu {}", h.cpu)
            };
            let _ = say!(
                err,
                "grtparse: input {}: {cpu}, card {}, {}, {}-endian, version {}.{}, session {:#x}{}",
                s.name,
                h.card,
                h.driver,
                h.endian.name(),
                h.version_major,
                h.version_minor,
                h.session_id,
                s.len.map(|l| format!(", {l} bytes")).unwrap_or_default()
            );
        }
    }
    if let Err(e) = trace.check_sessions() {
        if !cli.force {
            return Err(RunError::Fatal(e.to_string()));
        }
        let _ = say!(err, "grtparse: warning: {e} (merged: --force)");
    }
    let cards = trace.cards();
    if cli.dump.is_some() && cards.len() > 1 {
        let names: Vec<String> = cards.iter().map(|c| format!("card{c}")).collect();
        return Err(RunError::Usage(format!(
            "-d: the inputs hold several cards ({}) and a merged stream has one: dump each card's files separately",
            names.join(", ")
        )));
    }

    // Text output.
    let text_path = cli.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let mut text = if cli.no_text {
        None
    } else {
        let out = grtrace_cli::open_output("-o", &text_path, &read).map_err(RunError::Fatal)?;
        let cannot = |e| RunError::Fatal(grtrace_cli::write_error(&text_path, &e));
        Some(Out::threaded(out.into_writer()).map_err(cannot)?)
    };
    // Binary dump.
    let any_seq_checked = streams
        .iter()
        .any(|s| s.header.flags & abi::STREAM_SEQ_CHECKED != 0);
    let dump_name = cli.dump.clone().unwrap_or_default();
    let mut dump = match &cli.dump {
        None => None,
        Some(name) => {
            let out = grtrace_cli::open_output("-d", name, &read).map_err(RunError::Fatal)?;
            let file = out.regular_file();
            let cannot = |e| RunError::Fatal(grtrace_cli::write_error(name, &e));
            let mut h = StreamHeader::new(abi::CPU_MERGED, first.card, &first.driver);
            h.flags = abi::STREAM_MERGED
                | (first.flags & abi::STREAM_SIMULATED)
                | if filters.any || any_seq_checked || file.is_none() {
                    abi::STREAM_SEQ_CHECKED
                } else {
                    0
                };
            h.clock_id = first.clock_id;
            h.session_id = first.session_id;
            h.anchor_realtime_ns = first.anchor_realtime_ns;
            h.anchor_clock_ns = first.anchor_clock_ns;
            let mut out = Out::threaded(out.into_writer()).map_err(cannot)?;
            out.bytes(&h.encode());
            Some(Dump {
                out,
                header: h,
                file,
                scratch: Vec::with_capacity(2048),
            })
        }
    };
    let mut progress = grtrace_cli::Progress::new(
        "grtparse",
        grtrace_cli::total_size(&files),
        cli.progress.mode(),
    );
    // Stream headers count as read: the records are what is counted from here on.
    let mut done_bytes = (files.len() * abi::STREAM_HEADER_SIZE) as u64;

    let first_card = first.card;
    let mut cur_card = first_card;
    let mut stats = Stats::new(cli.per_process);
    let verbose = cli.verbose;
    let mut genesis: Option<u64> = None;
    let mut window_ns = (0u64, u64::MAX);
    let mut rings = filters.rings.clone();
    let mut broken_pipe = false;
    let mut gaps_told = 0u32;

    // `-q -O -d` with no filters: events go straight from the mapping to the dump.
    let dump_only = text.is_none() && cli.quiet && !filters.any && !cli.per_process;
    // Default text, no filters, no dump: native-endian event records are decoded once from
    // their fixed layout and printed through the cursor (the common, hot case).
    let fast_text = text.is_some()
        && dump.is_none()
        && !filters.any
        && !cli.per_process
        && render.default_fmt.is_none()
        && render.per_slot.iter().all(|f| f.is_none());
    let mut handle = |input: Input<'_>| -> ControlFlow<()> {
        let item = match input {
            Input::Run(bytes) => {
                done_bytes += bytes.len() as u64;
                progress.update(done_bytes);
                // Native event records (consecutive ones of one CPU file): one copy into the dump.
                if let Some(d) = dump.as_mut() {
                    d.out.bytes(bytes);
                    if d.out.failed() {
                        return ControlFlow::Break(());
                    }
                }
                return ControlFlow::Continue(());
            }
            Input::Item(card, i) => {
                // Lines carry their own card; it changes only between streams.
                if card != cur_card {
                    cur_card = card;
                    render.set_card(card);
                }
                i
            }
        };
        if let Item::Record(r) = &item {
            done_bytes += r.bytes().len() as u64;
            progress.update(done_bytes);
        }
        if fast_text && genesis.is_some() {
            if let (Item::Record(r), Some(o)) = (&item, text.as_mut()) {
                if let (Ok(b), Endian::NATIVE) =
                    (<&[u8; abi::rsize::EVENT]>::try_from(r.bytes()), r.endian())
                {
                    if u16::from_ne_bytes([b[0], b[1]]) == rtype::EVENT {
                        let ev = EventBody::from_ne_bytes(b);
                        let line = Line::event(r, ev);
                        stats.count_event(line.cpu, line.slot);
                        render.event_line(o, &line, &ev);
                        return if o.failed() {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        };
                    }
                }
            }
        }
        let (rec, gap) = match item {
            Item::Record(r) => (Some(r), None),
            Item::Gap(g) => (None, Some(g)),
        };
        let t = match (&rec, &gap) {
            (Some(r), _) => r.time_ns(),
            (_, Some(g)) => g.last_ns,
            _ => 0,
        };
        // The first record fixes time 0 (and the -w window), like blkparse's genesis.
        genesis.get_or_insert_with(|| {
            render.genesis = t;
            if let Some((a, b)) = filters.window {
                window_ns = (t.saturating_add(a), t.saturating_add(b));
            }
            t
        });
        let in_window = t >= window_ns.0 && t <= window_ns.1;

        if let Some(g) = gap {
            // Losses are never filtered out: they say the data is incomplete.
            stats.gap(&g);
            if verbose && gaps_told < 1000 {
                gaps_told += 1;
                let _ = say!(
                    err,
                    "grtparse: cpu {}: {} record(s) missing (sequence gap) between times {} and {} ns",
                    g.cpu, g.count, g.first_ns, g.last_ns
                );
            }
            if let Some(o) = text.as_mut() {
                render.line(o, &Line::gap(g));
                if o.failed() {
                    return ControlFlow::Break(());
                }
            }
            if let Some(d) = dump.as_mut() {
                let st = Stamp {
                    cpu: g.cpu,
                    pid: 0,
                    time_ns: g.last_ns,
                    seq: 0,
                };
                d.scratch.clear();
                encode(&st, &Body::Lost(g), Endian::NATIVE, &mut d.scratch);
                d.out.bytes(&d.scratch);
                if d.out.failed() {
                    return ControlFlow::Break(());
                }
            }
            return ControlFlow::Continue(());
        }
        let Some(r) = rec else {
            return ControlFlow::Continue(());
        };
        let rt = r.rtype();
        let is_event = rt == rtype::EVENT;
        let code = if is_event { r.code() } else { 0 };
        let slot = slot_of(rt, code);
        let mut pass;
        let line = if is_event {
            let ev = grtrace_format::EventView::fields(&r.event().expect("event record"));
            pass = filters.show[slot] && in_window;
            if pass && filters.any_event_filter {
                pass = (filters.ctx.is_empty() || filters.ctx.contains(&ev.ctx))
                    && (filters.pid.is_empty() || filters.pid.contains(&r.pid()))
                    && (!rings.is_active() || rings.selects(ev.ring));
            }
            Line::event(&r, ev)
        } else {
            render.names.learn(&r);
            rings.learn(&r);
            let lost = rt == rtype::NOTE_LOST;
            pass = lost
                || (filters.show[slot]
                    && in_window
                    && ((rt != rtype::NOTE_MSG && rt != rtype::NOTE_PROCESS)
                        || filters.pid.is_empty()
                        || filters.pid.contains(&r.pid())));
            Line::note(&r)
        };
        if pass {
            stats.count(&line, &r);
            if let Some(o) = text.as_mut() {
                render.line(o, &line);
                if o.failed() {
                    return ControlFlow::Break(());
                }
            }
        } else if !is_event {
            // Hidden notes still carry losses and drop counts for the summary.
            stats.note_facts(&r);
        }
        if let Some(d) = dump.as_mut() {
            // The dump keeps every note (names, losses, drop counts) and the selected events.
            if pass || !is_event {
                if r.endian() == Endian::NATIVE {
                    d.out.bytes(r.bytes());
                } else {
                    d.scratch.clear();
                    encode(&r.stamp(), &r.body(), Endian::NATIVE, &mut d.scratch);
                    d.out.bytes(&d.scratch);
                }
                if d.out.failed() {
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    };
    let summary = if dump_only {
        trace.for_each_raw(|raw| match raw {
            RawItem::Events { bytes, .. } => handle(Input::Run(bytes)),
            RawItem::Item(i) => handle(Input::Item(first_card, i)),
        })
    } else {
        trace.for_each_card(|card, i| handle(Input::Item(card, i)))
    };
    progress.finish(done_bytes);
    // Only a run that read everything can tell that a stream had no end.
    let output_failed =
        text.as_ref().is_some_and(|o| o.failed()) || dump.as_ref().is_some_and(|d| d.out.failed());
    let unended = if output_failed {
        0
    } else {
        streams
            .iter()
            .filter(|s| !stats.ended_cleanly(&s.header))
            .count() as u64
    };
    stats.set_unended(unended);

    let mut status = 0;
    // Output errors.
    if let Some(d) = dump.as_mut() {
        let mut res = d.out.finish();
        if let (true, Some(f)) = (res.is_ok() && summary.gaps > 0, &d.file) {
            if d.header.flags & abi::STREAM_SEQ_CHECKED == 0 {
                // Gaps were written as NOTE_LOST source 3: mark the dump checked so a reader
                // does not count them twice.
                d.header.flags |= abi::STREAM_SEQ_CHECKED;
                res = f.write_all_at(&d.header.encode(), 0);
            }
        }
        if let Err(e) = res {
            if is_broken_pipe(&e) {
                broken_pipe = true;
            } else {
                let _ = say!(
                    err,
                    "grtparse: {}",
                    grtrace_cli::write_error(&dump_name, &e)
                );
                status = 1;
            }
        }
    }
    if let Some(o) = text.as_mut() {
        if o.failed() {
            if let Err(e) = o.finish() {
                if is_broken_pipe(&e) {
                    broken_pipe = true;
                } else {
                    let _ = say!(
                        err,
                        "grtparse: {}",
                        grtrace_cli::write_error(&text_path, &e)
                    );
                    return Ok(1);
                }
            }
        }
    }
    if broken_pipe {
        // `grtparse run | head`: the reader went away; stop quietly.
        return Ok(0);
    }
    if !cli.quiet {
        let mut o = match text.take() {
            Some(o) => o,
            None if dump_to_stdout => Out::new(Box::new(io::stderr())),
            None => Out::new(Box::new(io::stdout())),
        };
        stats.write_summary(&mut o, &render, &summary);
        text = Some(o);
    }
    if let Some(o) = text.as_mut() {
        if let Err(e) = o.finish() {
            if !is_broken_pipe(&e) {
                let _ = say!(
                    err,
                    "grtparse: {}",
                    grtrace_cli::write_error(&text_path, &e)
                );
                status = 1;
            }
        }
    }
    for e in &summary.errors {
        let _ = say!(err, "grtparse: {e}");
        problems += 1;
    }
    for w in &summary.warnings {
        let _ = say!(err, "grtparse: warning: {w}");
    }
    if summary.warnings_dropped > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {} more warnings not shown",
            summary.warnings_dropped
        );
    }
    if summary.reordered > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {} record(s) printed out of time order (input not time-sorted, or a pipe whose CPUs arrived too far apart)",
            summary.reordered
        );
    }
    if unended > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {unended} stream(s) did not end cleanly: no STREAM_INFO record at the end (the recorder was killed, or the file was cut short)"
        );
    }
    let lost = stats.total_lost();
    if lost > 0 {
        let _ = say!(
            err,
            "grtparse: warning: {lost} record(s) lost (see LOST lines and the summary)"
        );
    }
    if problems > 0 {
        status = 1;
    }
    // Only the input knows its ring names, so this is found at the end, and is still a
    // usage error: the option named nothing.
    rings.check_names().map_err(RunError::Usage)?;
    Ok(status)
}
