//! The `grtrace` command line: arguments, their checks (usage errors exit 2) and the run
//! with its summary (the stop signals are `grtrace_cli::signals`); `main.rs` only wires them together. Also the
//! parsing of values that need more than clap: sizes and event masks.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::Parser;
use grtrace_cli::Failure;
use grtrace_format::abi::EVENT_MASK_ALL;
use grtrace_format::relay::{n_subbufs_ok, subbuf_size_ok, Filters};
use grtrace_format::Event;

use crate::{summary, Options};

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
#[derive(Parser, Debug)]
#[command(name = "grtrace", version, verbatim_doc_comment)]
pub struct Args {
    /// Device to trace: card0, 0 or /dev/dri/card0 (repeat for several)
    #[arg(short = 'd', long = "dev", value_name = "DEV")]
    pub dev: Vec<String>,
    /// Devices may also be given without -d
    #[arg(value_name = "DEV", hide = true)]
    pub more_dev: Vec<String>,
    /// debugfs mount point (or a grtsim --root directory)
    #[arg(
        short = 'r',
        long = "relay",
        value_name = "PATH",
        default_value = "/sys/kernel/debug"
    )]
    pub relay: PathBuf,
    /// Output base name: BASE.grtrace.<cpu>; `-` writes one merged stream to stdout
    #[arg(short = 'o', long = "output", value_name = "BASE")]
    pub output: Option<OsString>,
    /// Directory for the output files (created if missing)
    #[arg(short = 'D', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Stop after SECONDS (fractions allowed)
    #[arg(short = 'w', long = "stopwatch", value_name = "SECONDS")]
    pub stopwatch: Option<f64>,
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
    /// Only events of this thread id (filtered in the kernel)
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Only events of this GPU context id
    #[arg(long, value_name = "ID")]
    pub ctx: Option<u32>,
    /// Only events of this ring id
    #[arg(long, value_name = "ID")]
    pub ring: Option<u32>,
    /// Stop and tear down the trace set up on each device (after a crash), then exit
    #[arg(short = 'k', long = "kill")]
    pub kill: bool,
    /// Also print drain throughput per CPU and the recorder's CPU time
    #[arg(short = 'v', long)]
    pub verbose: bool,
    #[command(flatten)]
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
        let mut devices = self.dev.clone();
        devices.extend(self.more_dev.iter().cloned());
        if devices.is_empty() {
            return Err("no device: give one with -d, e.g. `grtrace -d card0 -o run`".into());
        }
        for (i, d) in devices.iter().enumerate() {
            let name = crate::device::normalize_name(d);
            if let Some(first) = devices[..i]
                .iter()
                .find(|e| crate::device::normalize_name(e) == name)
            {
                return Err(format!(
                    "device {} given twice (as `{}` and `{}`)",
                    name,
                    grtrace_cli::one_line(first),
                    grtrace_cli::one_line(d)
                ));
            }
        }
        if self.output.as_ref().is_some_and(|o| o.is_empty()) {
            return Err(
                "-o: the base name is empty (it would write hidden .grtrace.<cpu> files)".into(),
            );
        }
        let mut opts = Options::new(devices);
        opts.root = self.relay.clone();
        opts.output = self.output.clone();
        opts.dir = self.output_dir.clone();
        if opts.is_pipe() && opts.devices.len() > 1 {
            return Err(
                "-o - takes one device: records do not say which device they came from".into(),
            );
        }
        if opts.is_pipe() && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Err(
                "-o - writes binary records: pipe them into `grtparse -i -` or a file".into(),
            );
        }
        if opts.is_pipe() && opts.dir.is_some() {
            return Err("-D makes no sense with -o -".into());
        }
        match self.stopwatch {
            Some(w) if !(w > 0.0 && w < 1e9) => {
                return Err("-w wants a positive number of seconds".into())
            }
            Some(w) => opts.stopwatch = Some(Duration::from_secs_f64(w)),
            None => {}
        }
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
        opts.filters = Filters {
            events: event_mask(self.mask.as_deref(), &self.act)?,
            pid: self.pid,
            ctx: self.ctx,
            ring: self.ring,
        };
        Ok(opts)
    }
}

const PROG: &str = "grtrace";

/// Runs `grtrace` as the arguments ask (`-k`, or a recording until Ctrl-C, SIGTERM, SIGHUP
/// or the stopwatch) and prints the summary: per-CPU stats on stdout (stderr with `-o -`),
/// drop warnings on stderr.
pub fn run(args: Args) -> ExitCode {
    let stop = grtrace_cli::signals::stop_on_terminate();
    if args.ftrace {
        return crate::ftrace::run_cli(&args, stop);
    }
    grtrace_cli::Outcome::exit_code(record(&args, stop), PROG)
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
    let mut stderr = std::io::stderr().lock();
    if opts.is_pipe() {
        let _ = summary::print_stats(&report, &mut stderr);
    } else {
        let _ = summary::print_stats(&report, &mut std::io::stdout().lock());
    }
    let _ = summary::print_drop_warnings(&report, &mut stderr);
    if args.verbose {
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
        assert_eq!(o.devices, ["card1"]);
        assert_eq!(o.output.as_deref(), Some(std::ffi::OsStr::new("run")));
        assert_eq!(o.stopwatch, Some(Duration::from_millis(2500)));
        assert_eq!((o.subbuf_size, o.n_subbufs), (4 << 20, 16));
        let o = options(&["card0", "--pid", "7", "-a", "end"]).unwrap();
        assert_eq!(o.devices, ["card0"]);
        assert_eq!((o.filters.pid, o.filters.events), (Some(7), Some(1 << 7)));
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
