//! The `grtrace` command line: arguments, their checks (usage errors exit 2) and the run
//! with its summary (the stop signals are `grtrace_cli::signals`); `main.rs` only wires them together. Also the
//! parsing of values that need more than clap: sizes and event masks.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use clap::Parser;
use grtrace_cli::{BaseOutputArgs, DeviceArgs, Failure, FilterArgs, RingArg, StopwatchArgs};
use grtrace_format::abi::EVENT_MASK_ALL;
use grtrace_format::relay::{n_subbufs_ok, subbuf_size_ok, Filters};
use grtrace_format::Event;

use crate::ftrace::FtraceOptions;
use crate::{summary, Options, RunReport};

/// Record GPU ring-buffer events of one or more DRM devices, like blktrace does for disks.
///
/// Each CPU's events go to BASE.grtrace.<cpu> (BASE defaults to the device name) until
/// Ctrl-C, SIGTERM, SIGHUP or the -w stopwatch; then the kernel side is stopped, everything
/// left is drained, and a per-CPU summary is printed. Read the files with grtparse.
///
/// Examples:
///   grtrace -d card0 -o run                 # until Ctrl-C; then: grtparse run
///   grtrace -d card0 -w 5 -a submit -a end  # 5 seconds, two event types
///   grtrace -d card0 -o - | grtparse -i -   # live
///   grtrace -r /tmp/sim -d card0 -o run     # against `grtsim --root /tmp/sim`
///   grtrace -k -d card0                     # tear down a stale session
// The doc comment is the `--help` text, where `<cpu>` is meant as written, not as HTML.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Parser, Debug)]
#[command(name = "grtrace", version, verbatim_doc_comment)]
#[command(
    mut_arg("ctx", |a| a.value_name("ID").help("Only events of this GPU context id (filtered in the kernel: one id)")),
    mut_arg("ring", |a| a.value_name("ID").help("Only events of this ring id (filtered in the kernel: one id)")),
    mut_arg("pid", |a| a.value_name("PID").help("Only events of this thread id (filtered in the kernel: one id)")),
)]
pub struct Args {
    #[command(flatten)]
    /// `-d DEV`: the cards to record.
    pub devices: DeviceArgs,
    /// debugfs mount point (or a grtsim --root directory)
    #[arg(
        short = 'r',
        long = "relay",
        value_name = "PATH",
        default_value = "/sys/kernel/debug"
    )]
    pub relay: PathBuf,
    #[command(flatten)]
    /// `-o BASE`, `-D DIR`.
    pub out: BaseOutputArgs,
    #[command(flatten)]
    /// `-w SECONDS`.
    pub stopwatch: StopwatchArgs,
    /// Trace only this event (name, case-insensitive; repeat to add more). Default: all
    #[arg(short = 'a', long = "act-mask", value_name = "EVENT")]
    pub act: Vec<String>,
    /// Whole event mask in hex (bit N = event code N), as blktrace and grtparse -A
    #[arg(short = 'A', long = "set-mask", value_name = "HEX")]
    pub mask: Option<String>,
    /// Sub-buffer size: bytes with K/M suffix, or a plain number of KiB (like blktrace)
    #[arg(
        short = 'b',
        long = "buffer-size",
        value_name = "SIZE",
        default_value = "512K"
    )]
    pub buffer_size: String,
    /// Sub-buffers per CPU (kernel memory per CPU = SIZE x COUNT)
    #[arg(
        short = 'n',
        long = "num-sub-buffers",
        value_name = "COUNT",
        default_value_t = 8
    )]
    pub num_sub_buffers: usize,
    #[command(flatten)]
    /// `--ctx`, `--ring`, `--pid` (one each: the kernel's filter).
    pub filter: FilterArgs,
    /// Stop and tear down the trace set up on each device (after a crash), then exit
    #[arg(short = 'k', long = "kill")]
    pub kill: bool,
    /// Also print drain throughput per CPU and the recorder's CPU time
    #[arg(short = 'v', long)]
    pub verbose: bool,
    #[command(flatten)]
    /// `--completions SHELL`.
    pub completions: grtrace_cli::CompletionArgs,
    /// Record the GPU tracepoints a stock kernel has, through tracefs (no grtrace series)
    #[arg(long)]
    pub ftrace: bool,
    /// tracefs mount point for --ftrace
    #[arg(long, value_name = "PATH", default_value = crate::ftrace::DEFAULT_TRACEFS)]
    pub tracefs: PathBuf,
}

impl Args {
    /// The recording the arguments ask for, or a usage error (exit 2) to print.
    pub fn options(&self) -> Result<Options, String> {
        let devices = self.devices.cards()?;
        if devices.is_empty() {
            return Err("no device: give one with -d, e.g. `grtrace -d card0 -o run`".into());
        }
        if self.out.is_pipe() && devices.len() > 1 {
            return Err(
                "-o - takes one device: records do not say which device they came from".into(),
            );
        }
        self.out.check()?;
        let mut opts = Options::new(devices);
        opts.root = self.relay.clone();
        opts.output = self.out.output.clone();
        opts.dir = self.out.output_dir.clone();
        opts.stopwatch = self.stopwatch.stopwatch;
        opts.subbuf_size = match parse_size(&self.buffer_size) {
            Some(b) if subbuf_size_ok(b) => b,
            _ => {
                return Err(format!(
                    "-b {}: sub-buffer size must be 4K to 64M (plain numbers are KiB)",
                    self.buffer_size
                ))
            }
        };
        if !n_subbufs_ok(self.num_sub_buffers) {
            return Err("-n: sub-buffer count must be 2 to 4096".into());
        }
        opts.n_subbufs = self.num_sub_buffers;
        opts.filters = self.kernel_filters()?;
        Ok(opts)
    }

    /// `-a`/`-A`, `--pid`, `--ctx` and `--ring` as the kernel filters them: one id each, and
    /// a ring by its id (the kernel knows no ring names).
    fn kernel_filters(&self) -> Result<Filters, String> {
        let one = |opt: &str, ids: &[u32]| {
            match ids {
            [] => Ok(None),
            [id] => Ok(Some(*id)),
            _ => Err(format!(
                "{opt}: the kernel filters one id (grtparse and grtreport take several after recording)"
            )),
        }
        };
        let f = &self.filter;
        let rings = f
            .ring
            .iter()
            .map(|r| match r {
                RingArg::Id(id) => Ok(*id),
                RingArg::Name(n) => Err(format!(
                    "--ring {}: the kernel filters by ring id, not name (grtparse --ring takes names)",
                    grtrace_cli::one_line(n)
                )),
            })
            .collect::<Result<Vec<u32>, String>>()?;
        Ok(Filters {
            events: event_mask(self.mask.as_deref(), &self.act)?,
            pid: one("--pid", &f.pid)?,
            ctx: one("--ctx", &f.ctx)?,
            ring: one("--ring", &rings)?,
        })
    }

    /// `--ftrace`: the options that apply to it, or a usage error.
    pub fn ftrace_options(&self) -> Result<FtraceOptions, String> {
        if !self.devices.is_empty() {
            return Err("--ftrace records every GPU the tracepoints report: give no device".into());
        }
        if self.kill || self.filter.any() || !self.act.is_empty() || self.mask.is_some() {
            return Err("--ftrace takes -o, -D, -w, -b, -n, -v and --tracefs only".into());
        }
        self.out.check()?;
        let mut o = FtraceOptions::new(self.out.output.clone().unwrap_or_else(|| "ftrace".into()));
        o.root = self.tracefs.clone();
        o.dir = self.out.output_dir.clone();
        o.stopwatch = self.stopwatch.stopwatch;
        // The per-CPU ring buffer takes the relay buffer's total: -b x -n.
        match parse_size(&self.buffer_size) {
            Some(b) if b >= 4096 => {
                o.buffer_kb = (b / 1024).saturating_mul(self.num_sub_buffers.max(1))
            }
            _ => return Err("-b wants a size such as 512K".into()),
        }
        Ok(o)
    }
}

const PROG: &str = "grtrace";

/// Runs `grtrace` as the arguments ask (`-k`, a recording through the grtrace series, or
/// one through tracefs with `--ftrace`, until Ctrl-C, SIGTERM, SIGHUP or the stopwatch) and
/// prints the summary: per-CPU stats on stdout (stderr with `-o -`), drop warnings on stderr.
pub fn run(args: Args) -> Result<(), Failure> {
    let stop = grtrace_cli::signals::stop_on_terminate();
    if args.ftrace {
        return ftrace(&args, stop);
    }
    record(&args, stop)
}

/// `grtrace --ftrace`: a recording through tracefs, with the relay recorder's summary.
fn ftrace(args: &Args, stop: &AtomicBool) -> Result<(), Failure> {
    let o = args.ftrace_options().map_err(Failure::Usage)?;
    let pipe = o.output == "-";
    let mut stderr = std::io::stderr().lock();
    let report = crate::ftrace::record(&o, stop, &mut stderr).map_err(|e| e.to_string())?;
    drop(stderr);
    summarize(report, pipe, args.verbose)
}

/// `-k`, or a recording with its summary.
fn record(args: &Args, stop: &AtomicBool) -> Result<(), Failure> {
    let opts = args.options().map_err(Failure::Usage)?;
    if args.kill {
        for l in crate::kill(&opts).map_err(|e| e.to_string())? {
            grtrace_cli::error(PROG, l);
        }
        return Ok(());
    }
    let report = crate::record(&opts, stop).map_err(|e| e.to_string())?;
    summarize(report, opts.is_pipe(), args.verbose)
}

/// The end of a recording, by either back-end: the per-CPU stats on stdout (on stderr when
/// the streams own stdout), drop warnings on stderr (with `-v`, throughput and CPU time),
/// then the recording's failure, if any.
fn summarize(report: RunReport, pipe: bool, verbose: bool) -> Result<(), Failure> {
    let mut stderr = std::io::stderr().lock();
    if pipe {
        let _ = summary::print_stats(&report, &mut stderr);
    } else {
        let _ = summary::print_stats(&report, &mut std::io::stdout().lock());
    }
    let _ = summary::print_drop_warnings(&report, &mut stderr);
    if verbose {
        let _ = summary::print_perf(&report, &mut stderr);
    }
    match report.failure {
        Some(e) => Err(Failure::Runtime(e.to_string())),
        None => Ok(()),
    }
}

/// `-b`: `512K`, `4M`, `1G`, or a plain number of KiB (blktrace's unit).
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1usize << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1 << 10),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

/// `-A HEX` and `-a NAME` (repeatable, comma lists, `all`) into the kernel's event mask.
/// `None` = no filter.
pub fn event_mask(hex: Option<&str>, names: &[String]) -> Result<Option<u64>, String> {
    let mut mask = match hex {
        Some(h) => Some(grtrace_cli::parse_hex_mask("-A", h)?),
        None => None,
    };
    for name in names {
        for n in name.split(',').filter(|n| !n.is_empty()) {
            let bit = if n.eq_ignore_ascii_case("all") {
                EVENT_MASK_ALL
            } else {
                // Every named code is below 64, so has a mask bit.
                Event::from_name(n)
                    .and_then(Event::mask_bit)
                    .ok_or_else(|| {
                        let names: Vec<&str> = Event::known().filter_map(Event::name).collect();
                        format!("unknown event `{n}` for -a (known: {})", names.join(" "))
                    })?
            };
            mask = Some(mask.unwrap_or(0) | bit);
        }
    }
    if mask == Some(0) {
        return Err("the event mask selects nothing".into());
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;
    use grtrace_format::Card;
    use std::time::Duration;

    fn options(argv: &[&str]) -> Result<Options, String> {
        let args = Args::try_parse_from(std::iter::once("grtrace").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        args.options()
    }

    #[test]
    fn arguments_become_options() {
        let o = options(&[
            "-d", "card1", "-o", "run", "-w", "2.5", "-b", "4M", "-n", "16",
        ])
        .unwrap();
        assert_eq!(o.devices, [Card(1)]);
        assert_eq!(o.output.as_deref(), Some(std::ffi::OsStr::new("run")));
        assert_eq!(o.stopwatch, Some(Duration::from_millis(2500)));
        assert_eq!((o.subbuf_size, o.n_subbufs), (4 << 20, 16));
        let o = options(&["card0", "--pid", "7", "-a", "end"]).unwrap();
        assert_eq!(o.devices, [Card(0)]);
        assert_eq!((o.filters.pid, o.filters.events), (Some(7), Some(1 << 7)));
        let o = options(&["card0", "--ctx", "0x10", "--ring", "3"]).unwrap();
        assert_eq!((o.filters.ctx, o.filters.ring), (Some(16), Some(3)));
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        for (argv, says) in [
            (&["-o", "run"][..], "no device"),
            (&["-d", "card0", "-d", "card1", "-o", "-"][..], "one device"),
            (
                &["-d", "card0", "-o", "-", "-D", "/tmp"][..],
                "-D makes no sense",
            ),
            (
                &["-d", "card0", "-w", "0"][..],
                "positive number of seconds",
            ),
            (&["-d", "card0", "-b", "2K"][..], "4K to 64M"),
            (&["-d", "card0", "-n", "1"][..], "2 to 4096"),
            (&["-d", "card0", "-a", "nope"][..], "unknown event `nope`"),
            (
                &["-d", "card0", "--ctx", "1,2"][..],
                "--ctx: the kernel filters one id",
            ),
            (
                &["-d", "card0", "--ring", "gfx"][..],
                "--ring gfx: the kernel filters by ring id",
            ),
        ] {
            let e = options(argv).map(|_| ()).unwrap_err();
            assert!(e.contains(says), "{argv:?}: {e}");
        }
    }

    #[test]
    fn sizes_follow_blktrace_units() {
        assert_eq!(parse_size("512"), Some(512 << 10));
        assert_eq!(parse_size("256K"), Some(256 << 10));
        assert_eq!(parse_size("4m"), Some(4 << 20));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn masks_combine_names_and_hex() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(event_mask(None, &[]), Ok(None));
        assert_eq!(
            event_mask(None, &names(&["submit", "END"])),
            Ok(Some((1 << 3) | (1 << 7)))
        );
        assert_eq!(event_mask(Some("0x6"), &names(&["irq"])), Ok(Some(0x106)));
        assert_eq!(event_mask(None, &names(&["all"])), Ok(Some(EVENT_MASK_ALL)));
        assert!(event_mask(None, &names(&["nope"]))
            .unwrap_err()
            .contains("known: ALLOC"));
        assert!(event_mask(Some("0"), &[]).is_err());
    }
}
