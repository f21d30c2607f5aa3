//! grtrace: record GPU ring-buffer events from the kernel's relay buffers (like blktrace).
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser;
use grtrace_format::abi::subbuf;
use grtrace_format::relay::Filters;
use grtrace_record::cli::{event_mask, parse_size};
use grtrace_record::{summary, Options};

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
struct Args {
    /// Device to trace: card0, 0 or /dev/dri/card0 (repeat for several)
    #[arg(short = 'd', long = "dev", value_name = "DEV")]
    dev: Vec<String>,
    /// Devices may also be given without -d
    #[arg(value_name = "DEV", hide = true)]
    more_dev: Vec<String>,
    /// debugfs mount point (or a grtsim --root directory)
    #[arg(
        short = 'r',
        long = "relay",
        value_name = "PATH",
        default_value = "/sys/kernel/debug"
    )]
    relay: PathBuf,
    /// Output base name: BASE.grtrace.<cpu>; `-` writes one merged stream to stdout
    #[arg(short = 'o', long = "output", value_name = "BASE")]
    output: Option<String>,
    /// Directory for the output files (created if missing)
    #[arg(short = 'D', long = "output-dir", value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Stop after SECONDS (fractions allowed)
    #[arg(short = 'w', long = "stopwatch", value_name = "SECONDS")]
    stopwatch: Option<f64>,
    /// Trace only this event (name, case-insensitive; repeat to add more). Default: all
    #[arg(short = 'a', long = "act-mask", value_name = "EVENT")]
    act: Vec<String>,
    /// Whole event mask in hex (bit N = event code N)
    #[arg(short = 'A', long = "set-mask", value_name = "HEX")]
    mask: Option<String>,
    /// Sub-buffer size: bytes with K/M suffix, or a plain number of KiB (like blktrace)
    #[arg(
        short = 'b',
        long = "buffer-size",
        value_name = "SIZE",
        default_value = "512K"
    )]
    buffer_size: String,
    /// Sub-buffers per CPU (kernel memory per CPU = SIZE x COUNT)
    #[arg(
        short = 'n',
        long = "num-sub-buffers",
        value_name = "COUNT",
        default_value_t = 8
    )]
    num_sub_buffers: usize,
    /// Only events of this thread id (filtered in the kernel)
    #[arg(long, value_name = "PID")]
    pid: Option<u32>,
    /// Only events of this GPU context id
    #[arg(long, value_name = "ID")]
    ctx: Option<u32>,
    /// Only events of this ring id
    #[arg(long, value_name = "ID")]
    ring: Option<u32>,
    /// Stop and tear down the trace set up on each device (after a crash), then exit
    #[arg(short = 'k', long = "kill")]
    kill: bool,
    /// Also print drain throughput per CPU and the recorder's CPU time
    #[arg(short = 'v', long)]
    verbose: bool,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: nix::libc::c_int) {
    STOP.store(true, Ordering::Release);
}

fn install_signal_handlers() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    let ign = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    // SAFETY: the handler only stores to an atomic (async-signal-safe). SIGPIPE is ignored so
    // a closed `-o -` reader shows up as EPIPE on write, which ends the run quietly.
    unsafe {
        for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            let _ = sigaction(sig, &act);
        }
        let _ = sigaction(Signal::SIGPIPE, &ign);
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("grtrace: {msg}\nTry 'grtrace --help' for more information.");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    // First thing, so a Ctrl-C at any moment after start-up ends the run cleanly.
    install_signal_handlers();
    let args = Args::parse();
    let mut devices = args.dev.clone();
    devices.extend(args.more_dev.iter().cloned());
    if devices.is_empty() {
        return usage("no device: give one with -d, e.g. `grtrace -d card0 -o run`");
    }
    let mut opts = Options::new(devices);
    opts.root = args.relay.clone();
    opts.output = args.output.clone();
    opts.dir = args.output_dir.clone();
    if opts.is_pipe() && opts.devices.len() > 1 {
        return usage("-o - takes one device: records do not say which device they came from");
    }
    if opts.is_pipe() && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return usage("-o - writes binary records: pipe them into `grtparse -i -` or a file");
    }
    if opts.is_pipe() && opts.dir.is_some() {
        return usage("-D makes no sense with -o -");
    }
    match args.stopwatch {
        Some(w) if !(w > 0.0 && w < 1e9) => return usage("-w wants a positive number of seconds"),
        Some(w) => opts.stopwatch = Some(Duration::from_secs_f64(w)),
        None => {}
    }
    match parse_size(&args.buffer_size) {
        Some(b)
            if (subbuf::MIN_SUBBUF_SIZE..=subbuf::MAX_SUBBUF_SIZE).contains(&b) && b % 8 == 0 =>
        {
            opts.subbuf_size = b
        }
        _ => {
            return usage(&format!(
                "-b {}: sub-buffer size must be 4K to 64M (plain numbers are KiB)",
                args.buffer_size
            ))
        }
    }
    if !(subbuf::MIN_N_SUBBUFS..=subbuf::MAX_N_SUBBUFS).contains(&args.num_sub_buffers) {
        return usage("-n: sub-buffer count must be 2 to 4096");
    }
    opts.n_subbufs = args.num_sub_buffers;
    opts.filters = match event_mask(args.mask.as_deref(), &args.act) {
        Ok(events) => Filters {
            events,
            pid: args.pid,
            ctx: args.ctx,
            ring: args.ring,
        },
        Err(e) => return usage(&e),
    };

    if args.kill {
        return match grtrace_record::kill(&opts) {
            Ok(lines) => {
                for l in lines {
                    eprintln!("grtrace: {l}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("grtrace: {e}");
                ExitCode::from(1)
            }
        };
    }

    let report = match grtrace_record::record(&opts, &STOP) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("grtrace: {e}");
            return ExitCode::from(1);
        }
    };
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
    match &report.failure {
        Some(e) => {
            eprintln!("grtrace: {e}");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    }
}
