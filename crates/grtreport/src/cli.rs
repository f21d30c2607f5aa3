//! The `grtreport` command line (main.rs hands [`run`] to `grtrace_cli::main`), in three
//! stages as ripgrep's: the parsed [`Args`] become a checked [`Plan`] (every usage error,
//! no I/O), then the inputs and outputs are opened, then the trace runs through one engine
//! per card and the end-of-run outputs are written. Warnings of every stage gather in one
//! [`Warnings`].

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use clap::Parser;
use grtrace_cli::{Failure, InputWords};
use grtrace_format::{InputSource, RunSummary, StreamHeader, Trace};

use std::cell::RefCell;
use std::rc::Rc;

use crate::engine::{Engine, Filter, JobSink};
use crate::input::{Cards, Engines, MakeEngine};
use crate::joiner::JoinConfig;
use crate::rows::{
    process_csv_header, ring_csv_header, write_process_csv_rows, write_ring_csv_rows, CardRows,
    IntervalLines, JobCsv, JobLines, MakeRows, SharedSink,
};
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
    /// Inputs: base names, stream files, or - (stdin, the default), as grtparse takes them.
    #[command(flatten)]
    pub input: grtrace_cli::InputArgs,

    /// Add the N blocking classes (tag on a ctx and ring) that lost the most time, with samples
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub top: usize,

    /// Sample jobs shown per --top entry
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub samples: usize,

    /// Print one line per job (to stdout, before the report)
    #[arg(short = 'j', long)]
    pub jobs: bool,

    /// Write per-job rows to FILE, per-ring rows to FILE.rings.csv and per-process rows to
    /// FILE.processes.csv (FILE minus .csv);
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

    /// `-w [START:]END`: jobs that begin in the window (seconds since the first record).
    #[command(flatten)]
    pub window: grtrace_cli::WindowArgs,

    /// `--ctx`, `--ring`, `--pid`: only the jobs of these contexts, rings and threads.
    #[command(flatten)]
    pub filter: grtrace_cli::FilterArgs,

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

    /// Write the jobs as a Perfetto timeline: Perfetto's protobuf trace (compressed), or JSON
    /// Trace Event Format when FILE ends in .json or is - (stdout)
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,

    /// Write a self-contained HTML report with timeline, plots and job details
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Jobs the HTML page carries at most (the earliest window that fits; plots cover all)
    #[arg(long, value_name = "N", default_value_t = crate::html::DEFAULT_MAX_JOBS)]
    pub html_jobs: usize,

    /// Add the capture to the Parquet dataset in DIR (tables captures, jobs, rings,
    /// intervals, deps, processes under DIR/TABLE/host=HOST/; schema in SCHEMA.md)
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,

    /// The capture's host: the dataset's `host` partition (default: none, null)
    #[arg(long, value_name = "NAME", requires = "parquet")]
    pub host: Option<String>,

    /// A label of the capture, a `tag_KEY` column of its captures and jobs rows, e.g.
    /// --tag kernel=6.12.4 (repeatable: at most 16, values up to 256 bytes)
    #[arg(long = "tag", value_name = "KEY=VALUE", requires = "parquet")]
    pub tags: Vec<String>,

    /// The capture's id in the dataset (default: derived from the recording's stream headers
    /// and size, so reporting it again replaces its rows)
    #[arg(long, value_name = "ID", requires = "parquet")]
    pub capture_id: Option<String>,
}

/// `jobs.csv` -> `jobs.rings.csv`; `jobs` -> `jobs.rings.csv`.
pub fn rings_csv_path(p: &Path) -> PathBuf {
    csv_beside(p, "rings")
}

/// `jobs.csv` -> `jobs.WHAT.csv`; `jobs` -> `jobs.WHAT.csv`.
fn csv_beside(p: &Path, what: &str) -> PathBuf {
    let s = p.to_string_lossy();
    let stem = s.strip_suffix(".csv").unwrap_or(&s);
    PathBuf::from(format!("{stem}.{what}.csv"))
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

/// What the command line asks for, every check done. [`Plan::build`] builds it from the
/// arguments (and the text of a rules file) without touching an input or an output, so
/// every usage error (exit status 2) comes from there before anything is opened, but a
/// `--ring` name no input names (known only once read).
pub struct Plan {
    rules: Rules,
    filter: Filter,
    join: JoinConfig,
    top: usize,
    samples: usize,
    words: InputWords,
    /// The input words as given, for the exports' labels and messages.
    input: String,
    jobs: bool,
    csv: Option<PathBuf>,
    /// `FILE.rings.csv` of `--csv FILE` (none for `--csv -`).
    rings_csv: Option<PathBuf>,
    /// `FILE.processes.csv` of `--csv FILE` (none for `--csv -`).
    processes_csv: Option<PathBuf>,
    /// `--interval` in ns: text rows, or rows in the JSON report with `--json`.
    interval_ns: Option<u64>,
    json: bool,
    /// `-o` as given (no output may be an input, even with `-q`).
    output: Option<PathBuf>,
    /// Where the report goes (`-`: stdout); None: no report (`-q`, or an export on stdout).
    report_to: Option<PathBuf>,
    exports: crate::export::Exports,
    critical: Option<crate::critical::Scope>,
    /// `--parquet DIR` and its labels.
    dataset: Option<crate::dataset::DatasetPlan>,
    read: bool,
    force: bool,
    progress: grtrace_cli::ProgressMode,
}

/// What a run does once its arguments are checked.
pub enum Step {
    /// `--list-rules`: print the thresholds in effect (this text) and exit.
    ListRules(String),
    Report(Box<Plan>),
}

/// The text of `--rules FILE`, the one file a [`Plan`] needs (unreadable: a usage error).
fn read_rules_file(args: &Args) -> Result<Option<String>, Failure> {
    args.rules_file
        .as_ref()
        .map(|f| {
            std::fs::read_to_string(f).map_err(|e| Failure::Usage(format!("{}: {e}", f.display())))
        })
        .transpose()
}

impl Plan {
    /// Checks the arguments; `rules_text`: the text of `--rules FILE` ([`read_rules_file`]).
    pub fn build(args: Args, rules_text: Option<String>) -> Result<Step, Failure> {
        let mut rules = Rules::default();
        if let (Some(f), Some(text)) = (&args.rules_file, rules_text) {
            rules
                .apply_text(&text)
                .map_err(|e| Failure::Usage(format!("{}: {e}", f.display())))?;
        }
        for r in &args.rules {
            rules
                .set(r)
                .map_err(|e| Failure::Usage(format!("--rule: {e}")))?;
        }
        if args.list_rules {
            return Ok(Step::ListRules(rules.to_text()));
        }
        let filter = Filter {
            ctx: args.filter.ctx.clone(),
            ring: grtrace_cli::RingSelect::new(&args.filter.ring),
            pid: args.filter.pid.clone(),
            window: args.window.window.map(|w| (w.start, w.end)),
        };
        if !(args.grace >= 0.0 && args.horizon > 0.0) {
            return Err(Failure::Usage(
                "--grace must be >= 0 and --horizon > 0".into(),
            ));
        }
        let exports = crate::export::Exports {
            perfetto: args.perfetto.clone(),
            html: args.html.clone(),
            html_max_jobs: args.html_jobs,
        };
        // Other writers of stdout: job lines, a --json report not sent to -o, interval rows.
        let json_on_stdout = args.json && args.output.is_none() && !args.quiet;
        let others = args.jobs || json_on_stdout || (args.interval.is_some() && !args.json);
        exports.check(others).map_err(Failure::Usage)?;
        let interval_ns = match args.interval {
            None => None,
            Some(s) if (1e-6..=1e6).contains(&s) => Some((s * 1e9) as u64),
            Some(s) => {
                return Err(Failure::Usage(format!(
                    "--interval {s}: give seconds between 0.000001 and 1000000"
                )))
            }
        };
        let words = args.input.words();
        let words = InputWords::new(words).and_then(|w| {
            w.or_stdin("no input: give a trace (base name or files) or pipe one in")
        })?;
        let csv_to_stdout = args.csv.as_deref().is_some_and(grtrace_cli::is_dash);
        let report_to_stdout =
            !args.quiet && args.output.as_deref().is_none_or(grtrace_cli::is_dash);
        if csv_to_stdout && (report_to_stdout || args.jobs) {
            return Err(Failure::Usage(
                "--csv - writes the job rows to stdout: add -q (or -o FILE), without --jobs".into(),
            ));
        }
        for (opt, p) in [("-o", &args.output), ("--csv", &args.csv)] {
            if p.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                return Err(Failure::Usage(format!("{opt}: the file name is empty")));
            }
        }
        let dataset = args
            .parquet
            .clone()
            .map(|dir| {
                crate::dataset::DatasetPlan::new(
                    dir,
                    args.host.clone(),
                    &args.tags,
                    args.capture_id.clone(),
                )
            })
            .transpose()
            .map_err(Failure::Usage)?;
        // An export on stdout leaves the text report to -o FILE.
        let quiet = args.quiet || (exports.uses_stdout() && args.output.is_none());
        let input = words
            .words()
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Step::Report(Box::new(Plan {
            critical: args.critical_path.then(|| match filter.window {
                Some((a, b)) => crate::critical::Scope::Window(a, b),
                None => crate::critical::Scope::Frames(args.frame_marker.unwrap_or_default()),
            }),
            rules,
            filter,
            join: JoinConfig {
                grace_ns: (args.grace * 1e6) as u64,
                horizon_ns: (args.horizon * 1e9) as u64,
            },
            top: args.top,
            samples: args.samples,
            words,
            input,
            jobs: args.jobs,
            rings_csv: args
                .csv
                .as_deref()
                .filter(|p| !grtrace_cli::is_dash(p))
                .map(rings_csv_path),
            processes_csv: args
                .csv
                .as_deref()
                .filter(|p| !grtrace_cli::is_dash(p))
                .map(|p| csv_beside(p, "processes")),
            csv: args.csv,
            interval_ns,
            json: args.json,
            report_to: (!quiet).then(|| args.output.clone().unwrap_or_else(|| "-".into())),
            output: args.output,
            exports,
            dataset,
            read: args.read,
            force: args.force,
            progress: args.progress.mode(),
        })))
    }
}

/// The run's warnings, from every source: the inputs' resolution, merged sessions, the run
/// (gaps, records out of order, IRQs that named no job, damaged inputs, an interruption).
/// Each goes to standard error, to the report (its text, the JSON and the page), or both;
/// [`Warnings::print`] is the one place that writes them to standard error.
#[derive(Default)]
pub struct Warnings {
    report: Vec<String>,
    stderr: Vec<String>,
    /// Of `stderr`, those printed already.
    printed: usize,
}

impl Warnings {
    /// A warning for standard error and the report.
    fn both(&mut self, w: String) {
        self.report.push(w.clone());
        self.stderr.push(w);
    }

    /// Prints the warnings for standard error not printed yet.
    fn print(&mut self) {
        for w in &self.stderr[self.printed..] {
            grtrace_cli::warning(PROG, w);
        }
        self.printed = self.stderr.len();
    }

    /// What the run met, for the report; other cards' recordings merged (`--force`), for
    /// standard error.
    fn of_run<F: MakeEngine>(&mut self, sum: &RunSummary, stopped: bool, engines: &Cards<F>) {
        if stopped {
            self.report
                .push("interrupted: the report covers the records read so far".into());
        }
        for e in &engines.merged {
            self.stderr.push(format!("{e} (merged: --force)"));
        }
        if sum.gaps > 0 {
            self.report.push(format!(
                "{} sequence gap(s), {} records missing: jobs in flight across them are incomplete",
                sum.gaps, sum.gap_records
            ));
        }
        if sum.reordered > 0 {
            self.report.push(format!(
                "{} records arrived out of time order",
                sum.reordered
            ));
        }
        let irq_unnamed: u64 = engines
            .iter()
            .map(|(_, e)| e.joiner.stats.irq_unnamed)
            .sum();
        if irq_unnamed > 0 {
            self.report.push(format!(
                "{irq_unnamed} IRQ(s) named no job (seqno 0): those jobs complete at their fence SIGNAL or END"
            ));
        }
        for e in &sum.errors {
            self.report
                .push(format!("{e} (records before it were used)"));
        }
    }

    /// Streams whose recorder did not stop cleanly, as grtparse says them: no STREAM_INFO
    /// at the end (killed, or the file cut short: only a run that read everything can
    /// tell), or one that says the stop was not clean. For standard error and the report.
    fn of_ends<F: MakeEngine>(&mut self, headers: &[StreamHeader], engines: &Cards<F>) {
        let stats = |card| {
            engines
                .iter()
                .find(|(c, _)| *c == card)
                .map(|(_, e)| &e.joiner.stats)
        };
        // A card the run did not report on (not selected) is not judged.
        let unended = headers
            .iter()
            .chain(&engines.embedded)
            .filter(|h| {
                stats(h.card).is_some_and(|s| {
                    if h.is_merged() {
                        s.ended_cpus.is_empty()
                    } else {
                        !s.ended_cpus.contains(&h.cpu)
                    }
                })
            })
            .count();
        if unended > 0 {
            self.both(format!(
                "{unended} stream(s) did not end cleanly: no STREAM_INFO record at the end (the recorder was killed, or the file was cut short)"
            ));
        }
        let unclean: u64 = engines
            .iter()
            .map(|(_, e)| e.joiner.stats.unclean_ends)
            .sum();
        if unclean > 0 {
            self.both(format!(
                "{unclean} stream(s) say the recorder did not stop cleanly (STREAM_INFO without clean=yes)"
            ));
        }
    }
}

/// The inputs, opened and merged into one trace.
struct Inputs {
    trace: Trace,
    /// The cards of the opened inputs' stream headers, in order (0 when there is none).
    cards: Vec<u32>,
    headers: Vec<StreamHeader>,
    /// Every file read, by device and inode: no output may be one of them.
    read: grtrace_cli::Inputs,
    /// The regular files among them (their size drives the progress line).
    files: Vec<PathBuf>,
    /// Merge on a second thread: files only (a pipe may be live, and its records must not
    /// wait for a batch to fill).
    pipelined: bool,
    reads_stdin: bool,
}

impl Inputs {
    fn open(plan: &Plan, warnings: &mut Warnings) -> Result<Inputs, Failure> {
        let grtrace_cli::Resolved {
            sources,
            warnings: found,
            read,
            files,
        } = plan.words.resolve()?;
        found.into_iter().for_each(|w| warnings.both(w));
        warnings.print();
        // No output may be one of the inputs: checked before any output is opened.
        for (opt, p) in [
            ("-o", &plan.output),
            ("--csv", &plan.csv),
            ("--csv", &plan.rings_csv),
            ("--csv", &plan.processes_csv),
        ] {
            if let Some(p) = p {
                read.check_output(opt, p)?;
            }
        }
        // Files are mapped and read in place; the reader hands passed pages back to the
        // kernel, so the resident set stays flat whatever the trace length. --read streams
        // them instead.
        let pipelined =
            sources.iter().all(|s| matches!(s, InputSource::File(_))) && crate::cpus() > 1;
        let sources = if plan.read {
            sources.into_iter().map(stream_file).collect()
        } else {
            sources
        };
        let mut trace = Trace::open(sources).map_err(|e| Failure::Runtime(e.to_string()))?;
        if let Err(e) = trace.check_sessions() {
            if !plan.force {
                return Err(Failure::Runtime(e.to_string()));
            }
            warnings.stderr.push(format!("{e} (merged: --force)"));
            warnings.print();
        }
        // The same for a recording that starts inside an input (streams concatenated on
        // stdin): the reader ends that input there unless merging was asked for.
        trace.merge_sessions(plan.force);
        let headers: Vec<StreamHeader> = trace.streams().iter().map(|s| s.header.clone()).collect();
        let mut cards: Vec<u32> = headers.iter().map(|h| h.card).collect();
        cards.sort_unstable();
        cards.dedup();
        Ok(Inputs {
            trace,
            // Every card of the inputs gets its report, even one without records.
            cards: if cards.is_empty() { vec![0] } else { cards },
            headers,
            read,
            files,
            pipelined,
            reads_stdin: plan.words.reads_stdin(),
        })
    }
}

/// The outputs written while the run goes: job rows, interval rows, the exports.
struct Outputs {
    /// `--jobs`, `--csv`: each fed by the engines of all cards.
    sinks: Vec<Rc<RefCell<dyn JobSink>>>,
    /// Text `--interval` rows: one stream for all cards.
    intervals: Option<Rc<RefCell<IntervalLines>>>,
    exports: crate::export::Opened,
    /// `--parquet`: the capture's tables, shared by the cards' engines.
    dataset: Option<crate::dataset::Shared>,
}

impl Outputs {
    /// `several`: the inputs hold several cards (more may turn up while reading).
    fn open(plan: &Plan, inputs: &Inputs, several: bool) -> Result<Outputs, Failure> {
        let mut sinks: Vec<Rc<RefCell<dyn JobSink>>> = Vec::new();
        if plan.jobs {
            let make: MakeRows = Box::new(|card_column, after_rows| {
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
            sinks.push(Rc::new(RefCell::new(CardRows::new(make, several))));
        }
        if let Some(p) = &plan.csv {
            let out = grtrace_cli::open_output("--csv", p, &inputs.read)?;
            let mut out = Some(BufWriter::new(out.into_writer()));
            let make: MakeRows = Box::new(move |card_column, after_rows| {
                match out.take() {
                    // A CSV keeps one set of columns: rows of one card were written without
                    // the card column before another turned up (beyond a pipe's read-ahead).
                    _ if after_rows => Err(io::Error::other(
                        "another card turned up while reading, after job rows without a card column were written (streams of several cards concatenated on stdin): give each card's files as an input of its own",
                    )),
                    Some(w) => Ok(Box::new(JobCsv::with_cards(w, card_column)?)),
                    None => Err(io::Error::other("--csv rows made twice")),
                }
            });
            sinks.push(Rc::new(RefCell::new(CardRows::new(make, several))));
        }
        let intervals = plan.interval_ns.filter(|_| !plan.json).map(|_| {
            let out = BufWriter::with_capacity(1 << 16, io::stdout());
            let lines = IntervalLines::new(Box::new(out), inputs.reads_stdin);
            Rc::new(RefCell::new(if several {
                lines.with_card_column()
            } else {
                lines
            }))
        });
        // The timeline exports: one document for all cards, a process (or section) per card.
        let exports = plan.exports.open(&plan.input, &inputs.read, several)?;
        let dataset = match &plan.dataset {
            None => None,
            Some(d) => {
                let id = d.capture_id.clone().unwrap_or_else(|| {
                    crate::dataset::capture_id(&inputs.headers, &inputs.files, d.host.as_deref())
                });
                // No file of the dataset may be one of the inputs.
                for t in crate::dataset::TABLES {
                    inputs.read.check_output("--parquet", d.file(&id, t))?;
                }
                let ds = crate::dataset::Dataset::open(d, id)
                    .map_err(|e| Failure::Runtime(e.to_string()))?;
                Some(Rc::new(RefCell::new(Some(ds))))
            }
        };
        Ok(Outputs {
            sinks,
            intervals,
            exports,
            dataset,
        })
    }
}

/// Makes the engine of each card the run meets (see [`Cards`]): the plan's configuration,
/// fed into the outputs.
struct Factory<'a> {
    plan: &'a Plan,
    outputs: &'a Outputs,
    made: u32,
    /// A failed write of an export's head, met while the engines are made.
    attach_err: Option<String>,
}

impl MakeEngine for Factory<'_> {
    fn make(&mut self, card: u32, header: Option<&StreamHeader>) -> Engine {
        let plan = self.plan;
        let mut e = Engine::new(
            plan.rules.clone(),
            plan.join,
            plan.filter.clone(),
            plan.samples,
        );
        // The driver and SIMULATED flag of the card's first stream header (at open or
        // found while reading), for its report and the exports' labels.
        if let Some(h) = header {
            let sim = h.flags & grtrace_format::abi::STREAM_SIMULATED != 0;
            let card = grtrace_format::Card(h.card);
            e.source = (format!("driver {}, {card}", h.driver), sim);
        }
        let driver = header.map_or("", |h| h.driver.as_str());
        if let Err(err) = self.outputs.exports.attach(&mut e, card, driver) {
            self.attach_err.get_or_insert(err);
        }
        match (
            plan.interval_ns,
            &self.outputs.intervals,
            &self.outputs.dataset,
        ) {
            (Some(ns), lines, Some(ds)) => {
                // Rows into the dataset, and on to the text rows if they are printed.
                let also = lines
                    .clone()
                    .map(|l| l as Rc<RefCell<dyn crate::engine::IntervalSink>>);
                e.set_interval_sink(
                    ns,
                    Rc::new(RefCell::new(crate::dataset::DatasetIntervals {
                        card,
                        ds: ds.clone(),
                        also,
                    })),
                );
            }
            (Some(ns), Some(lines), None) => e.set_interval_sink(ns, lines.clone()),
            _ => {}
        }
        if let Some(scope) = &plan.critical {
            e.critical_path(scope.clone());
        }
        if let Some(ns) = plan.interval_ns.filter(|_| plan.json) {
            // The rows go into the JSON document (and to the dataset's sink, if any).
            e.keep_interval_rows(ns);
        }
        if let Some(ds) = self.outputs.dataset.as_ref().map(|d| d.borrow()) {
            if let Some(d) = ds.as_ref() {
                e.add_worker_sink(Box::new(d.job_sink(card)));
            }
        }
        for s in &self.outputs.sinks {
            if self.made > 0 {
                // A second card: rows are labelled from what is known when written.
                s.borrow_mut().several_cards();
            }
            e.add_sink(Box::new(SharedSink(s.clone())));
        }
        self.made += 1;
        e.use_worker();
        e
    }
}

/// Runs grtreport: checks the arguments, then reports (see [`report`]).
pub fn run(args: Args) -> Result<(), Failure> {
    let rules_text = read_rules_file(&args)?;
    match Plan::build(args, rules_text)? {
        Step::ListRules(text) => {
            print!("{text}");
            Ok(())
        }
        Step::Report(plan) => report(&plan),
    }
}

/// Opens the inputs and the outputs, runs the trace through one engine per card (like btt
/// per device: jobs of different cards are never joined), then writes what comes at the
/// end. Damaged inputs (reported as met, the records before the damage used) end it in
/// [`Failure::Reported`].
fn report(plan: &Plan) -> Result<(), Failure> {
    let mut warnings = Warnings::default();
    let mut inputs = Inputs::open(plan, &mut warnings)?;
    let outputs = Outputs::open(plan, &inputs, inputs.cards.len() > 1)?;
    let factory = Factory {
        plan,
        outputs: &outputs,
        made: 0,
        attach_err: None,
    };
    let mut engines = Cards::with_maker(inputs.headers.clone(), factory);
    for &c in &inputs.cards {
        engines.of_card(c);
    }
    if let Some(e) = engines.maker().attach_err.take() {
        return Err(Failure::Runtime(e));
    }
    let interrupted = grtrace_cli::signals::stop_on_interrupt();
    let total = grtrace_cli::total_size(&inputs.files);
    let mut progress = grtrace_cli::Progress::new(PROG, total, plan.progress);
    // From a pipe, Ctrl-C also stops the producer, which then closes the pipe: keep reading
    // to its end so the report covers everything (a second Ctrl-C leaves at once).
    let feed = if inputs.pipelined {
        crate::input::run_pipelined
    } else {
        crate::input::run_with_progress
    };
    let stop_on_signal = !inputs.reads_stdin;
    let (sum, out, stopped) = feed(
        &mut inputs.trace,
        &mut engines,
        interrupted,
        stop_on_signal,
        &mut progress,
    );
    if let Err(e) = out.and_then(|_| engines.iter_mut().try_for_each(|(_, e)| e.finish())) {
        if crate::dataset::DatasetError::is(&e) {
            // It names the dataset's file.
            return Err(Failure::Runtime(e.to_string()));
        }
        // Where a failed write during the run went: --jobs on stdout, or --csv.
        let name = plan.csv.as_ref().filter(|_| !plan.jobs);
        // The exports hold part of the run: removed, never left to be read as a whole.
        let removed = plan.exports.remove_unfinished();
        if grtrace_cli::is_broken_pipe(&e) {
            // The run stopped with standard output: the exports and the dataset would be of
            // part of it.
            let mut lost = removed.clone();
            if let Some(d) = &plan.dataset {
                lost.push(format!(
                    "--parquet {}",
                    grtrace_cli::one_line(&d.dir.display().to_string())
                ));
            }
            if !lost.is_empty() {
                return Err(Failure::Runtime(format!(
                    "{}: not written: standard output was closed before the trace was read",
                    lost.join(", ")
                )));
            }
        }
        let failure = if grtrace_cli::names_its_output(&e) && !grtrace_cli::is_broken_pipe(&e) {
            // An export's own file (written while the records came): it names it.
            Failure::Runtime(format!("export: {e}"))
        } else {
            Failure::write(name.map_or(Path::new("-"), |p| p), e)
        };
        return Err(match (failure.message(), removed.is_empty()) {
            (Some(m), false) => Failure::Runtime(format!(
                "{m}; {} removed: the run did not end",
                removed.join(", ")
            )),
            _ => failure,
        });
    }
    warnings.of_run(&sum, stopped, &engines);
    if !stopped {
        warnings.of_ends(&inputs.headers, &engines);
    }
    warnings.print();
    finish(
        plan,
        &inputs,
        &outputs,
        &mut engines,
        &warnings.report,
        &sum,
    )
}

/// A `--csv` file being written.
type CsvOut = csv::Writer<BufWriter<Box<dyn Write + Send>>>;

/// Writes the `--csv` file `path`: one `header`, then the rows `rows` gives of each card's
/// engine (on several cards each row starts with its card).
fn write_csv<F: MakeEngine>(
    path: &Path,
    inputs: &Inputs,
    header: Vec<String>,
    engines: &Cards<F>,
    rows: fn(&mut CsvOut, &Engine) -> io::Result<()>,
) -> Result<(), String> {
    grtrace_cli::open_output("--csv", path, &inputs.read).and_then(|out| {
        let mut c = csv::Writer::from_writer(BufWriter::new(out.into_writer()));
        c.write_record(header)
            .map_err(io::Error::from)
            .and_then(|_| engines.iter().try_for_each(|(_, e)| rows(&mut c, e)))
            .and_then(|_| c.flush())
            .map_err(|e| grtrace_cli::write_error(path, &e))
    })
}

/// What comes once the trace is read: the ring rows, the exports' ends, the report, the
/// inputs' errors.
fn finish<F: MakeEngine>(
    plan: &Plan,
    inputs: &Inputs,
    outputs: &Outputs,
    engines: &mut Cards<F>,
    warnings: &[String],
    sum: &RunSummary,
) -> Result<(), Failure> {
    // Only the input knows its ring names: a name that matched none is found here (on
    // several cards, a name is good if some card's ring notes name it).
    let names = engines
        .iter()
        .map(|(_, e)| e.filter.ring.check_names())
        .collect::<Vec<_>>();
    if !names.is_empty() && names.iter().all(Result::is_err) {
        if let Some(Err(e)) = names.into_iter().next() {
            return Err(Failure::Usage(e));
        }
    }
    // The end-of-run outputs label every card the run met, those found only while reading.
    let several = engines.len() > 1;
    if let Some(rp) = &plan.rings_csv {
        write_csv(
            rp,
            inputs,
            ring_csv_header(several),
            engines,
            write_ring_csv_rows,
        )?;
    }
    if let Some(pp) = &plan.processes_csv {
        write_csv(
            pp,
            inputs,
            process_csv_header(several),
            engines,
            write_process_csv_rows,
        )?;
    }
    // Not a single GPU event (a capture of an idle GPU, or of tracepoints that are not
    // mapped): said plainly, as grtimport says it, rather than a page of empty tables.
    let events: u64 = engines.iter().map(|(_, e)| e.joiner.stats.events).sum();
    let no_events = events == 0 && sum.errors.is_empty();
    // Before the exports to stdout, which end the run quietly when it is closed.
    if let (Some(ds), false) = (&outputs.dataset, no_events) {
        if let Some(ds) = ds.borrow_mut().take() {
            let engines: Vec<(u32, &Engine)> = engines.iter().map(|(c, e)| (*c, e)).collect();
            let facts = crate::dataset::RunFacts {
                headers: &inputs.headers,
                sum,
                input: &plan.input,
            };
            // Its errors name the dataset's file.
            ds.finish(&engines, &facts)
                .map_err(|e| Failure::Runtime(e.to_string()))?;
        }
    }
    // Every card's exports are finished even when standard output was closed under one
    // of them: the others' files (a protobuf trace on its own thread) end whole.
    let mut closed = false;
    for (_, engine) in engines.iter_mut() {
        match engine.finish_timelines(warnings) {
            Err(e) if grtrace_cli::is_broken_pipe(&e) => closed = true,
            Err(e) => return Err(Failure::Runtime(format!("export: {e}"))),
            Ok(()) => {}
        }
    }
    if closed {
        return Ok(());
    }
    if no_events {
        let records: u64 = engines.iter().map(|(_, e)| e.joiner.stats.records).sum();
        return Err(Failure::Runtime(format!(
            "{}: no GPU events ({records} record(s), none an event): nothing to report",
            grtrace_cli::one_line(&plan.input)
        )));
    }
    if let Some(name) = &plan.report_to {
        let out = grtrace_cli::open_output("-o", name, &inputs.read)?;
        let mut w = BufWriter::new(out.into_writer());
        write_reports(&mut w, engines, several, plan.json, plan.top, warnings)
            .and_then(|_| w.flush())
            .map_err(|e| Failure::write(name, e))?;
    }
    for e in &sum.errors {
        grtrace_cli::error(PROG, e);
    }
    if sum.errors.is_empty() {
        Ok(())
    } else {
        Err(Failure::Reported)
    }
}

/// The report: one engine's as before; of several cards, one per card in card order (text:
/// a `cardN` heading before each, the warnings once on top; JSON: `{"cards": [...]}`, each
/// a single-card report with a `card` member).
fn write_reports<W: Write, F: MakeEngine>(
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
        writeln!(w, "{}", grtrace_format::Card(*c))?;
        crate::output::write_report(w, e, top, &[])?;
    }
    Ok(())
}
