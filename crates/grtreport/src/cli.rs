//! The `grtreport` command line (main.rs only calls [`main`]).

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use grtrace_format::{resolve_inputs, InputSource, Trace};

use crate::engine::{Engine, Filter, JobCsv, JobLines};
use crate::joiner::JoinConfig;
use crate::rules::Rules;

const ABOUT: &str = "Join grtrace events into GPU jobs, split their phases, tag what blocked them";

const LONG_ABOUT: &str = "\
grtreport reads a grtrace stream (like btt reads a blkparse dump), joins its events into jobs
named <ctx, ring, seqno>, splits every job's life into phases and tags what blocked it:

  submit_host = SUBMIT - COMMIT      queue    = START - SUBMIT     exec = END - START
  complete    = IRQ - END            gpu_wait = SYNC windows       vm_fault = VM fault windows
  total       = (IRQ or END) - COMMIT

  tags: host-submit queue-wait exec-tail dep-wait vm-fault preempt-thrash
  flags: inferred (START taken as max(SUBMIT, previous END)), incomplete (missing events or
         in flight across lost records: listed, but not tagged or counted in statistics)

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
  grtreport run --json --top 10 > r.json      # everything, blockers and verdicts included
  grtrace -d card0 -o - | grtreport --interval 1 -q   # busy/idle per ring, every second
  grtreport run --rule queue-min-us=200 --ring 0 -w 1.5:3
  grtreport --list-rules > my.rules           # edit, then --rules my.rules

Times in job lines are seconds since the first record, as grtparse prints them; phases are
milliseconds. Exit status: 0 ok, 1 damaged or unreadable input / write error, 2 usage error.";

#[derive(Parser, Debug)]
#[command(name = "grtreport", version, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct Args {
    /// Base name, stream files, or - (stdin, the default)
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<String>,

    /// Input, like a positional INPUT (repeatable; `-i -` is stdin), as in grtparse
    #[arg(short = 'i', long = "input", value_name = "INPUT")]
    pub input: Vec<String>,

    /// Add the N blocking classes (tag on a ctx and ring) that lost the most time, with samples
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub top: usize,

    /// Sample jobs shown per --top entry
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub samples: usize,

    /// Print one line per job (to stdout, before the report)
    #[arg(short = 'j', long)]
    pub jobs: bool,

    /// Write per-job rows to FILE and per-ring rows to FILE.rings.csv (FILE minus .csv)
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Print busy %, jobs/s, outstanding, ring fill and idle causes per ring every SECS of
    /// trace time, as each interval completes (at once when reading a live pipe)
    #[arg(long, value_name = "SECS")]
    pub interval: Option<f64>,

    /// Write the report as JSON (schema in grtreport(1), JSON OUTPUT) instead of text
    #[arg(long, conflicts_with = "jobs")]
    pub json: bool,

    /// Do not print the report (use with --jobs or --csv)
    #[arg(short, long)]
    pub quiet: bool,

    /// Write the report to FILE instead of stdout
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

    /// Only these rings (comma-separated ids)
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

    /// Write the jobs as a Perfetto / chrome://tracing timeline (JSON Trace Event Format)
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<String>,

    /// Write a self-contained HTML report with timeline, plots and job details
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,

    /// Jobs the HTML page carries at most (the earliest window that fits; plots cover all)
    #[arg(long, value_name = "N", default_value_t = crate::html::DEFAULT_MAX_JOBS)]
    pub html_jobs: usize,
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: nix::libc::c_int) {
    // A second Ctrl-C means "now": leave without a report.
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { nix::libc::_exit(130) };
    }
}

fn install_sigint() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(
        SigHandler::Handler(on_sigint),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only touches an atomic and calls the async-signal-safe _exit.
    let _ = unsafe { sigaction(Signal::SIGINT, &act) };
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

fn usage(msg: &str) -> i32 {
    eprintln!("grtreport: {msg}");
    eprintln!("Try 'grtreport --help' for more information.");
    2
}

fn is_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Runs grtreport; returns the exit status.
pub fn main() -> i32 {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    run(args)
}

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
            ring: parse_list("ring", &args.ring)?,
            pid: parse_list("pid", &args.pid)?,
            window: args
                .window
                .as_deref()
                .map(grtrace_format::parse_window)
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
    if words.is_empty() {
        if io::stdin().is_terminal() {
            return usage("no input: give a trace (base name or files) or pipe one in");
        }
        words.push("-".to_string());
    }
    let reads_stdin = words.iter().any(|w| w == "-");
    let (sources, mut warnings) = match resolve_inputs(&words) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("grtreport: {e}");
            return 1;
        }
    };
    for w in &warnings {
        eprintln!("grtreport: warning: {w}");
    }
    // Files are mapped and read in place; the reader hands passed pages back to the kernel,
    // so the resident set stays flat whatever the trace length. --read streams them instead.
    let sources = if args.read {
        sources.into_iter().map(stream_file).collect()
    } else {
        sources
    };
    let mut trace = match Trace::open(sources) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("grtreport: {e}");
            return 1;
        }
    };

    let mut engine = Engine::new(rules, join, filter, args.samples);
    if let Err(e) = exports.attach(&mut engine, trace.streams(), &words.join(" ")) {
        eprintln!("grtreport: {e}");
        return 1;
    }
    if let Some(h) = trace.streams().first() {
        let h = &h.header;
        let simulated = h.flags & grtrace_format::abi::STREAM_SIMULATED != 0;
        engine.source = (format!("driver {}, card{}", h.driver, h.card), simulated);
    }
    let mut cards: Vec<u32> = trace.streams().iter().map(|s| s.header.card).collect();
    cards.sort_unstable();
    cards.dedup();
    if cards.len() > 1 {
        // The reader does not say which input (card) a record came from yet, so jobs cannot
        // be keyed by card: say so rather than report joined jobs silently.
        warnings.push(format!(
            "inputs come from {} cards ({}): jobs with the same <ctx, ring, seqno> on different cards are joined; report one card at a time",
            cards.len(),
            cards.iter().map(|c| format!("card{c}")).collect::<Vec<_>>().join(", ")
        ));
    }
    let stdout = io::stdout();
    if let Some(secs) = interval_ns {
        if args.json {
            // The rows go into the JSON document.
            engine.joiner.set_interval(secs);
        } else {
            let out = BufWriter::with_capacity(1 << 16, io::stdout());
            engine.set_interval(secs, Box::new(out), reads_stdin);
        }
    }
    if args.jobs {
        engine.add_sink(Box::new(JobLines::new(BufWriter::with_capacity(
            1 << 16,
            stdout.lock(),
        ))));
    }
    if let Some(p) = &args.csv {
        match File::create(p) {
            Ok(f) => match JobCsv::new(BufWriter::new(f)) {
                Ok(s) => engine.add_sink(Box::new(s)),
                Err(e) => {
                    eprintln!("grtreport: {}: {e}", p.display());
                    return 1;
                }
            },
            Err(e) => {
                eprintln!("grtreport: {}: {e}", p.display());
                return 1;
            }
        }
    }

    install_sigint();
    // From a pipe, Ctrl-C also stops the producer, which then closes the pipe: keep reading
    // to its end so the report covers everything (a second Ctrl-C leaves at once).
    let (sum, out, stopped) =
        crate::input::run(&mut trace, &mut engine, &INTERRUPTED, !reads_stdin);
    let out = out.and_then(|_| engine.finish());
    if let Err(e) = out {
        if is_pipe(&e) {
            return 0;
        }
        eprintln!("grtreport: write error: {e}");
        return 1;
    }
    if stopped {
        warnings.push("interrupted: the report covers the records read so far".into());
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
    if engine.joiner.stats.irq_unnamed > 0 {
        warnings.push(format!(
            "{} IRQ(s) named no job (seqno 0): those jobs complete at their fence SIGNAL or END",
            engine.joiner.stats.irq_unnamed
        ));
    }
    for e in &sum.errors {
        warnings.push(format!("{e} (records before it were used)"));
    }

    if let Some(p) = &args.csv {
        let rp = rings_csv_path(p);
        let res = File::create(&rp).and_then(|f| engine.write_ring_csv(BufWriter::new(f)));
        if let Err(e) = res {
            eprintln!("grtreport: {}: {e}", rp.display());
            return 1;
        }
    }
    if let Err(e) = engine.finish_timelines(&warnings) {
        if is_pipe(&e) {
            return 0;
        }
        eprintln!("grtreport: write error: {e}");
        return 1;
    }
    // An export on stdout leaves the text report to -o FILE.
    let quiet = args.quiet || (exports.uses_stdout() && args.output.is_none());
    if !quiet {
        let res = match &args.output {
            Some(p) => File::create(p).and_then(|f| {
                let mut w = BufWriter::new(f);
                if args.json {
                    engine.write_json(&mut w, args.top, &warnings)?;
                } else {
                    engine.write_report(&mut w, args.top, &warnings)?;
                }
                w.flush()
            }),
            None => {
                let mut w = BufWriter::new(stdout.lock());
                if args.json {
                    engine.write_json(&mut w, args.top, &warnings)
                } else {
                    engine.write_report(&mut w, args.top, &warnings)
                }
                .and_then(|_| w.flush())
            }
        };
        if let Err(e) = res {
            if is_pipe(&e) {
                return 0;
            }
            eprintln!("grtreport: write error: {e}");
            return 1;
        }
    }
    for e in &sum.errors {
        eprintln!("grtreport: {e}");
    }
    if sum.errors.is_empty() {
        0
    } else {
        1
    }
}
