//! The `grtreport` command line (main.rs hands [`run`] to `grtrace_cli::main`).

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Parser;
use grtrace_cli::{Failure, InputWords};
use grtrace_format::{InputSource, StreamHeader, Trace};

use crate::engine::{Engine, Filter, JobSink};
use crate::input::Engines;
use crate::joiner::JoinConfig;
use crate::rows::{JobCsv, JobLines, SharedSink};
use crate::rules::Rules;

const ABOUT: &str = "Join grtrace events into GPU jobs, split their phases, tag what blocked them";

const LONG_ABOUT: &str = "\
grtreport reads a grtrace stream (like btt reads a blkparse dump), joins its events into jobs
named <ctx, ring, seqno>, splits every job's life into phases and tags what blocked it:

  submit_host = SUBMIT - COMMIT      queue    = START - SUBMIT     exec = END - START
  complete    = IRQ - END            gpu_wait = SYNC windows       vm_fault = VM fault windows
  total       = (IRQ or END) - COMMIT

  tags: host-submit queue-wait exec-tail dep-wait vm-fault preempt-thrash
  flags: inferred (START not recorded: max(SUBMIT, previous END), by grtreport, the kernel
         or an importer; not judged for queue-wait or exec-tail), incomplete (missing events or
         in flight across lost records: listed, but not tagged or counted in statistics),
         no-doorbell (the GPU finished it before its SUBMIT was recorded: SUBMIT = COMMIT)

The report gives per ring and per context count and min/avg/p50/p90/p99/max of every phase,
each phase's share of job time, tag shares and hints; --top N adds the N blocking classes
(per ctx and ring) that lost the most time, with sample jobs to look up in grtparse output
and who blocked them (the owner of the awaited fence on any ring, or the job ahead on the
ring), then utilisation per ring and context (busy %, jobs/s, outstanding, idle causes) and a
GPU-, host- or dependency-bound verdict per ring.";

const AFTER_HELP: &str = "\
Inputs are what grtparse takes: a base name (run -> run.grtrace.<cpu>), files, or - for stdin.
With no input, grtreport reads stdin, so it works live:

  grtrace -d card0 -o - | grtreport --top 10
  grtparse -q -O -d - run | grtreport        # grtparse's binary dump on stdout
  grtreport run --top 10                      # worst offenders first
  grtreport run --jobs -q | awk '$14 != \"-\"'  # every tagged job
  grtreport run --csv jobs.csv -q             # jobs.csv and jobs.rings.csv for pandas
  grtreport run --csv - -q | head             # the job rows on stdout
  grtreport run --json --top 10 > r.json      # everything, blockers and verdicts included
  grtreport run --critical-path --frame-marker frame   # what decided the slowest frame
  grtrace -d card0 -o - | grtreport --interval 1 -q   # busy/idle per ring, every second
  grtreport run --rule queue-min-us=200 --ring gfx -w 1.5:3
  grtreport --list-rules > my.rules           # edit, then --rules my.rules

Times in job lines are seconds since the first record, as grtparse prints them; phases are
milliseconds. Exit status: 0 ok, 1 damaged or unreadable input / write error, 2 usage error.";

#[derive(Parser, Debug)]
#[command(name = "grtreport", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct Args {
    /// Base name, stream files, or - (stdin, the default)
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<OsString>,

    /// Input, like a positional INPUT (repeatable; `-i -` is stdin), as in grtparse
    #[arg(short = 'i', long = "input", value_name = "INPUT")]
    pub input: Vec<OsString>,

    /// Add the N blocking classes (tag on a ctx and ring) that lost the most time, with samples
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub top: usize,

    /// Sample jobs shown per --top entry
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub samples: usize,

    /// Print one line per job (to stdout, before the report)
    #[arg(short = 'j', long)]
    pub jobs: bool,

    /// Write per-job rows to FILE and per-ring rows to FILE.rings.csv (FILE minus .csv);
    /// `-` writes the job rows to stdout (no ring rows; use with -q)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Print busy %, jobs/s, outstanding, ring fill and idle causes per ring every SECS of
    /// trace time, as each interval completes (at once when reading a live pipe)
    #[arg(long, value_name = "SECS")]
    pub interval: Option<f64>,

    /// Add the critical path: the jobs and host gaps that decided when the last job of the
    /// -w window, or of the slowest frame between two NOTE_MSG markers, ended
    #[arg(long)]
    pub critical_path: bool,

    /// Frames for --critical-path start at NOTE_MSG records whose text starts with TEXT
    /// (default: every message)
    #[arg(long, value_name = "TEXT", requires = "critical_path")]
    pub frame_marker: Option<String>,

    /// Write the report as JSON (schema in grtreport(1), JSON OUTPUT) instead of text
    #[arg(long, conflicts_with = "jobs")]
    pub json: bool,

    /// Do not print the report (use with --jobs or --csv)
    #[arg(short, long)]
    pub quiet: bool,

    /// Write the report to FILE instead of stdout (`-` = stdout)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Time window in seconds since the first record: END or START:END (jobs that begin in it)
    #[arg(
        short = 'w',
        long = "stopwatch",
        visible_alias = "window",
        value_name = "[START:]END"
    )]
    pub window: Option<String>,

    /// Only these contexts (comma-separated ids)
    #[arg(long, value_name = "LIST")]
    pub ctx: Option<String>,

    /// Only these rings (comma-separated ids or names from the ring notes)
    #[arg(long, value_name = "LIST")]
    pub ring: Option<String>,

    /// Only jobs committed by these threads (comma-separated pids)
    #[arg(long, value_name = "LIST")]
    pub pid: Option<String>,

    /// Change one threshold, e.g. --rule queue-min-us=200 (see --list-rules); repeatable
    #[arg(long = "rule", value_name = "NAME=VALUE")]
    pub rules: Vec<String>,

    /// Read thresholds from a file of `name = value` lines (applied before --rule)
    #[arg(long = "rules", value_name = "FILE")]
    pub rules_file: Option<PathBuf>,

    /// Print the thresholds in effect as a rules file and exit
    #[arg(long)]
    pub list_rules: bool,

    /// Milliseconds to wait after END for an IRQ naming the job
    #[arg(long, value_name = "MS", default_value_t = 5.0)]
    pub grace: f64,

    /// Read input files with read() instead of mapping them (mapped files are read in
    /// place and released behind the reader, so memory stays flat either way)
    #[arg(long)]
    pub read: bool,

    /// Seconds without events after which an unfinished job is given up (incomplete)
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    pub horizon: f64,

    /// Merge files of different recording sessions of one card (refused by default)
    #[arg(long)]
    pub force: bool,

    #[command(flatten)]
    pub progress: grtrace_cli::ProgressArgs,

    #[command(flatten)]
    pub completions: grtrace_cli::CompletionArgs,

    /// Write the jobs as a Perfetto timeline: Perfetto's protobuf trace, or JSON Trace Event
    /// Format when FILE ends in .json or is - (stdout)
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,

    /// Write a self-contained HTML report with timeline, plots and job details
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Jobs the HTML page carries at most (the earliest window that fits; plots cover all)
    #[arg(long, value_name = "N", default_value_t = crate::html::DEFAULT_MAX_JOBS)]
    pub html_jobs: usize,
}

fn parse_list(what: &str, s: &Option<String>) -> Result<Vec<u32>, String> {
    let Some(s) = s else { return Ok(Vec::new()) };
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let p = p.trim();
            let v = if let Some(h) = p.strip_prefix("0x") {
                u32::from_str_radix(h, 16)
            } else {
                p.parse()
            };
            v.map_err(|_| format!("--{what}: '{p}' is not a number"))
        })
        .collect()
}

/// `jobs.csv` -> `jobs.rings.csv`; `jobs` -> `jobs.rings.csv`.
pub fn rings_csv_path(p: &Path) -> PathBuf {
    let s = p.to_string_lossy();
    let stem = s.strip_suffix(".csv").unwrap_or(&s);
    PathBuf::from(format!("{stem}.rings.csv"))
}

/// A regular file as a read() stream (errors opening it are left to Trace::open).
fn stream_file(src: InputSource) -> InputSource {
    match src {
        InputSource::File(p) => match File::open(&p) {
            Ok(f) => InputSource::Stream {
                name: p.display().to_string(),
                reader: Box::new(f),
            },
            Err(_) => InputSource::File(p),
        },
        other => other,
    }
}

const PROG: &str = "grtreport";

fn usage(msg: &str) -> i32 {
    grtrace_cli::usage(PROG, msg)
}

/// Prints a runtime error on one line; returns exit status 1.
fn fail(msg: impl std::fmt::Display) -> i32 {
    grtrace_cli::error(PROG, msg);
    grtrace_cli::exit::RUNTIME
}

/// Runs grtreport; returns the exit status.
pub fn run(args: Args) -> i32 {
    let mut rules = Rules::default();
    if let Some(f) = &args.rules_file {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => return usage(&format!("{}: {e}", f.display())),
        };
        if let Err(e) = rules.apply_text(&text) {
            return usage(&format!("{}: {e}", f.display()));
        }
    }
    for r in &args.rules {
        if let Err(e) = rules.set(r) {
            return usage(&format!("--rule: {e}"));
        }
    }
    if args.list_rules {
        print!("{}", rules.to_text());
        return 0;
    }
    let filter = match (|| -> Result<Filter, String> {
        Ok(Filter {
            ctx: parse_list("ctx", &args.ctx)?,
            ring: grtrace_cli::RingSelect::parse(args.ring.as_slice()),
            pid: parse_list("pid", &args.pid)?,
            window: args
                .window
                .as_deref()
                .map(grtrace_cli::parse_window)
                .transpose()?,
        })
    })() {
        Ok(f) => f,
        Err(e) => return usage(&e),
    };
    if !(args.grace >= 0.0 && args.horizon > 0.0) {
        return usage("--grace must be >= 0 and --horizon > 0");
    }
    let exports = crate::export::Exports {
        perfetto: args.perfetto.clone(),
        html: args.html.clone(),
        html_max_jobs: args.html_jobs,
    };
    // Other writers of stdout: job lines, a --json report not sent to -o, interval rows.
    let json_on_stdout = args.json && args.output.is_none() && !args.quiet;
    let others = args.jobs || json_on_stdout || (args.interval.is_some() && !args.json);
    if let Err(e) = exports.check(others) {
        return usage(&e);
    }
    let interval_ns = match args.interval {
        None => None,
        Some(s) if (1e-6..=1e6).contains(&s) => Some((s * 1e9) as u64),
        Some(s) => {
            return usage(&format!(
                "--interval {s}: give seconds between 0.000001 and 1000000"
            ))
        }
    };
    let join = JoinConfig {
        grace_ns: (args.grace * 1e6) as u64,
        horizon_ns: (args.horizon * 1e9) as u64,
    };

    let mut words = args.inputs.clone();
    words.extend(args.input.iter().cloned());
    let words = match InputWords::new(words)
        .and_then(|w| w.or_stdin("no input: give a trace (base name or files) or pipe one in"))
    {
        Ok(w) => w,
        Err(e) => return e.report(PROG),
    };
    let csv_to_stdout = args.csv.as_deref().is_some_and(grtrace_cli::is_dash);
    let report_to_stdout = !args.quiet && args.output.as_deref().is_none_or(grtrace_cli::is_dash);
    if csv_to_stdout && (report_to_stdout || args.jobs) {
        return usage("--csv - writes the job rows to stdout: add -q (or -o FILE), without --jobs");
    }
    for (opt, p) in [("-o", &args.output), ("--csv", &args.csv)] {
        if p.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
            return usage(&format!("{opt}: the file name is empty"));
        }
    }
    let reads_stdin = words.reads_stdin();
    let grtrace_cli::Resolved {
        sources,
        mut warnings,
        read,
        files,
    } = match words.resolve() {
        Ok(r) => r,
        Err(e) => return e.report(PROG),
    };
    for w in &warnings {
        grtrace_cli::warning(PROG, w);
    }
    // No output may be one of the inputs: checked before any output is opened.
    let rings_csv = args
        .csv
        .as_deref()
        .filter(|p| !grtrace_cli::is_dash(p))
        .map(rings_csv_path);
    for (opt, p) in [
        ("-o", args.output.as_deref()),
        ("--csv", args.csv.as_deref()),
        ("--csv", rings_csv.as_deref()),
    ] {
        if let Some(p) = p {
            if let Err(e) = read.check_output(opt, p) {
                return fail(e);
            }
        }
    }
    // Files are mapped and read in place; the reader hands passed pages back to the kernel,
    // so the resident set stays flat whatever the trace length. --read streams them instead.
    // Only files (mapped, or read with --read) are merged on a second thread: a pipe may be
    // live, and its records must not wait for a batch to fill.
    let pipelined = sources.iter().all(|s| matches!(s, InputSource::File(_)))
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let sources = if args.read {
        sources.into_iter().map(stream_file).collect()
    } else {
        sources
    };
    let mut trace = match Trace::open(sources) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    if let Err(e) = trace.check_sessions() {
        if !args.force {
            eprintln!("grtreport: {e}");
            return 1;
        }
        eprintln!("grtreport: warning: {e} (merged: --force)");
    }
    // The same for a recording that starts inside an input (streams concatenated on stdin):
    // the reader ends that input there unless merging was asked for.
    trace.merge_sessions(args.force);

    let window = filter.window;
    // One engine per card (like btt per device): jobs of different cards are never joined.
    let mut cards_in: Vec<u32> = trace.streams().iter().map(|s| s.header.card).collect();
    cards_in.sort_unstable();
    cards_in.dedup();
    let several = cards_in.len() > 1;
    // Several cards known: at open, or once a second turns up while reading (two cards'
    // streams concatenated on stdin). Rows are labelled from what is known when written.
    let several_now = std::rc::Rc::new(std::cell::Cell::new(several));
    type Shared = std::rc::Rc<std::cell::RefCell<dyn JobSink>>;
    let mut shared: Vec<Shared> = Vec::new();
    if args.jobs {
        let make: crate::rows::MakeRows = Box::new(|card_column, after_rows| {
            let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
            if after_rows {
                writeln!(out, "{}", crate::rows::LATE_CARD_NOTE)?;
            }
            let lines = JobLines::new(out);
            Ok(Box::new(if card_column {
                lines.with_card_column()
            } else {
                lines
            }))
        });
        let rows = crate::rows::CardRows::new(make, several_now.clone());
        shared.push(std::rc::Rc::new(std::cell::RefCell::new(rows)));
    }
    if let Some(p) = &args.csv {
        let out = match grtrace_cli::open_output("--csv", p, &read) {
            Ok(o) => o,
            Err(e) => return fail(e),
        };
        let mut out = Some(BufWriter::new(out.into_writer()));
        let make: crate::rows::MakeRows = Box::new(move |card_column, after_rows| {
            match out.take() {
                // A CSV keeps one set of columns: rows of one card were written without the
                // card column before another turned up (beyond a pipe's read-ahead).
                _ if after_rows => Err(io::Error::other(
                    "another card turned up while reading, after job rows without a card column were written (streams of several cards concatenated on stdin): give each card's files as an input of its own",
                )),
                Some(w) => Ok(Box::new(JobCsv::with_cards(w, card_column)?)),
                None => Err(io::Error::other("--csv rows made twice")),
            }
        });
        let rows = crate::rows::CardRows::new(make, several_now.clone());
        shared.push(std::rc::Rc::new(std::cell::RefCell::new(rows)));
    }
    let headers: Vec<StreamHeader> = trace.streams().iter().map(|s| s.header.clone()).collect();
    let json_intervals = interval_ns.filter(|_| args.json);
    // Text --interval rows: one stream for all cards, a card column when there are several.
    let interval_lines = interval_ns.filter(|_| !args.json).map(|secs| {
        let out = BufWriter::with_capacity(1 << 16, io::stdout());
        let mut lines = crate::rows::IntervalLines::new(Box::new(out), reads_stdin);
        if several {
            lines = lines.with_card_column();
        }
        (secs, std::rc::Rc::new(std::cell::RefCell::new(lines)))
    });
    let input_words: Vec<String> = words
        .words()
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    // The timeline exports: one document for all cards, a process (or section) per card.
    let opened = match exports.open(&input_words.join(" "), &read, several) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("grtreport: {e}");
            return 1;
        }
    };
    // A failed write of an export's head, met while the engines are made.
    let attach_err = std::cell::RefCell::new(None);
    let made = std::cell::Cell::new(0u32);
    let mut engines = crate::input::Cards::new(headers, |card, header| {
        let mut e = Engine::new(rules.clone(), join, filter.clone(), args.samples);
        // The driver and SIMULATED flag of the card's first stream header (at open or found
        // while reading), for its report and the exports' labels.
        if let Some(h) = header {
            let sim = h.flags & grtrace_format::abi::STREAM_SIMULATED != 0;
            e.source = (format!("driver {}, card{}", h.driver, h.card), sim);
        }
        let driver = header.map_or("", |h| h.driver.as_str());
        if let Err(err) = opened.attach(&mut e, card, driver) {
            attach_err.borrow_mut().get_or_insert(err);
        }
        if let Some((secs, lines)) = &interval_lines {
            e.set_interval_sink(*secs, lines.clone());
        }
        if made.get() > 0 {
            several_now.set(true);
        }
        made.set(made.get() + 1);
        if args.critical_path {
            e.critical_path(match window {
                Some((a, b)) => crate::critical::Scope::Window(a, b),
                None => {
                    crate::critical::Scope::Frames(args.frame_marker.clone().unwrap_or_default())
                }
            });
        }
        if let Some(secs) = json_intervals {
            // The rows go into the JSON document.
            e.joiner.set_interval(secs);
        }
        for s in &shared {
            e.add_sink(Box::new(SharedSink(s.clone())));
        }
        e.use_worker();
        e
    });
    // Every card of the inputs gets its report, even one without records.
    if cards_in.is_empty() {
        cards_in.push(0);
    }
    for &c in &cards_in {
        engines.of_card(c);
    }
    if let Some(e) = attach_err.borrow_mut().take() {
        eprintln!("grtreport: {e}");
        return 1;
    }
    // Where a failed write during the run went (--jobs on stdout, or --csv).
    let sink_name = match (&args.csv, args.jobs) {
        (Some(p), false) => p.clone(),
        _ => PathBuf::from("-"),
    };

    let interrupted = grtrace_cli::signals::stop_on_interrupt();
    let mut progress =
        grtrace_cli::Progress::new(PROG, grtrace_cli::total_size(&files), args.progress.mode());
    // From a pipe, Ctrl-C also stops the producer, which then closes the pipe: keep reading
    // to its end so the report covers everything (a second Ctrl-C leaves at once).
    let run = if pipelined {
        crate::input::run_pipelined
    } else {
        crate::input::run_with_progress
    };
    let (sum, out, stopped) = run(
        &mut trace,
        &mut engines,
        interrupted,
        !reads_stdin,
        &mut progress,
    );
    let out = out.and_then(|_| engines.iter_mut().try_for_each(|(_, e)| e.finish()));
    if let Err(e) = out {
        return Failure::write(&sink_name, e).report(PROG);
    }
    if stopped {
        warnings.push("interrupted: the report covers the records read so far".into());
    }
    for e in &engines.merged {
        eprintln!("grtreport: warning: {e} (merged: --force)");
    }
    if sum.gaps > 0 {
        warnings.push(format!(
            "{} sequence gap(s), {} records missing: jobs in flight across them are incomplete",
            sum.gaps, sum.gap_records
        ));
    }
    if sum.reordered > 0 {
        warnings.push(format!(
            "{} records arrived out of time order",
            sum.reordered
        ));
    }
    // The end-of-run outputs label every card the run met, those found only while reading.
    let several = engines.len() > 1;
    let irq_unnamed: u64 = engines
        .iter()
        .map(|(_, e)| e.joiner.stats.irq_unnamed)
        .sum();
    if irq_unnamed > 0 {
        warnings.push(format!(
            "{irq_unnamed} IRQ(s) named no job (seqno 0): those jobs complete at their fence SIGNAL or END"
        ));
    }
    for e in &sum.errors {
        warnings.push(format!("{e} (records before it were used)"));
    }

    // Only the input knows its ring names: a name that matched none is found here (on
    // several cards, a name is good if some card's ring notes name it).
    let names = engines
        .iter()
        .map(|(_, e)| e.filter.ring.check_names())
        .collect::<Vec<_>>();
    if !names.is_empty() && names.iter().all(Result::is_err) {
        if let Some(Err(e)) = names.into_iter().next() {
            return usage(&e);
        }
    }
    if let Some(rp) = &rings_csv {
        let res = grtrace_cli::open_output("--csv", rp, &read).and_then(|out| {
            // One header; on several cards each row starts with its card.
            let mut c = csv::Writer::from_writer(BufWriter::new(out.into_writer()));
            c.write_record(crate::rows::ring_csv_header(several))
                .map_err(io::Error::from)
                .and_then(|_| {
                    engines
                        .iter()
                        .try_for_each(|(_, e)| crate::rows::write_ring_csv_rows(&mut c, e))
                })
                .and_then(|_| c.flush())
                .map_err(|e| grtrace_cli::write_error(rp, &e))
        });
        if let Err(e) = res {
            return fail(e);
        }
    }
    for (_, engine) in engines.iter_mut() {
        if let Err(e) = engine.finish_timelines(&warnings) {
            if grtrace_cli::is_broken_pipe(&e) {
                return 0;
            }
            return fail(format!("export: {e}"));
        }
    }
    // Not a single GPU event (a capture of an idle GPU, or of tracepoints that are not
    // mapped): said plainly, as grtimport says it, rather than a page of empty tables.
    let events: u64 = engines.iter().map(|(_, e)| e.joiner.stats.events).sum();
    if events == 0 && sum.errors.is_empty() {
        let records: u64 = engines.iter().map(|(_, e)| e.joiner.stats.records).sum();
        return fail(format!(
            "{}: no GPU events ({records} record(s), none an event): nothing to report",
            grtrace_cli::one_line(&input_words.join(" "))
        ));
    }
    // An export on stdout leaves the text report to -o FILE.
    let quiet = args.quiet || (exports.uses_stdout() && args.output.is_none());
    if !quiet {
        let name = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
        let out = match grtrace_cli::open_output("-o", &name, &read) {
            Ok(o) => o,
            Err(e) => return fail(e),
        };
        let mut w = BufWriter::new(out.into_writer());
        let res = write_reports(&mut w, &engines, several, args.json, args.top, &warnings)
            .and_then(|_| w.flush());
        if let Err(e) = res {
            return Failure::write(&name, e).report(PROG);
        }
    }
    for e in &sum.errors {
        grtrace_cli::error(PROG, e);
    }
    if sum.errors.is_empty() {
        0
    } else {
        1
    }
}

/// The report: one engine's as before; of several cards, one per card in card order (text:
/// a `card N` heading before each, the warnings once on top; JSON: `{"cards": [...]}`, each
/// a single-card report with a `card` member).
fn write_reports<W: Write, F: FnMut(u32, Option<&StreamHeader>) -> Engine>(
    w: &mut W,
    engines: &crate::input::Cards<F>,
    several: bool,
    json: bool,
    top: usize,
    warnings: &[String],
) -> io::Result<()> {
    if !several {
        for (_, e) in engines.iter() {
            if json {
                crate::json::write(w, e, top, warnings)?;
            } else {
                crate::output::write_report(w, e, top, warnings)?;
            }
        }
        return Ok(());
    }
    if json {
        let cards: Vec<serde_json::Value> = engines
            .iter()
            .map(|(c, e)| {
                let mut v = crate::json::report(e, top, warnings);
                if let Some(o) = v.as_object_mut() {
                    o.insert("card".into(), (*c).into());
                }
                v
            })
            .collect();
        let v = serde_json::json!({ "cards": cards });
        serde_json::to_writer_pretty(&mut *w, &v).map_err(io::Error::from)?;
        return writeln!(w);
    }
    for warn in warnings {
        writeln!(w, "grtreport: warning: {warn}")?;
    }
    for (i, (c, e)) in engines.iter().enumerate() {
        if i > 0 {
            writeln!(w)?;
        }
        writeln!(w, "card {c}")?;
        crate::output::write_report(w, e, top, &[])?;
    }
    Ok(())
}
