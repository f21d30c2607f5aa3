//! grtsim: serve simulated grtrace devices under a directory until interrupted.
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser;
use grtrace_sim::{scenarios, Sim, SimConfig};

/// Simulate grtrace GPU devices: builds <ROOT>/grtrace/card<N>/ exactly like the kernel's
/// debugfs tree (per-CPU relay buffers, info, state, dropped, ctl, consumed, msg) and fills
/// the buffers with a GPU workload whenever a recorder starts tracing.
///
/// Example (two shells, no root needed):
///   grtsim --root /tmp/sim --rate 200000
///   grtrace -r /tmp/sim -d card0 -w 3 -o run && grtparse run
#[derive(Parser, Debug)]
#[command(name = "grtsim", version, verbatim_doc_comment)]
struct Args {
    /// Directory that stands for the debugfs mount (give the same to `grtrace -r`)
    #[arg(long, value_name = "DIR", required_unless_present = "list_scenarios")]
    root: Option<PathBuf>,
    /// Number of simulated cards (card0, card1, ...)
    #[arg(long, default_value_t = 1, value_name = "N")]
    cards: u32,
    /// Simulated CPUs per card (one relay buffer and producer thread each)
    #[arg(long, default_value_t = 2, value_name = "N")]
    cpus: u32,
    /// Events per second per card while a recorder is tracing, or `max` for full speed
    #[arg(long, default_value = "100000", value_name = "EVENTS_PER_S|max")]
    rate: String,
    /// Produce exactly N events per tracing session and card, then go quiet
    #[arg(long, value_name = "N")]
    events: Option<u64>,
    /// Seed of the workload model (same seed, same workload)
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
    /// Play a named scenario instead of the live model (see --list-scenarios)
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Jobs in the scenario
    #[arg(long, default_value_t = 1000, value_name = "N")]
    jobs: usize,
    /// Write the scenario's ground truth as CSV (ctx,ring,seqno,tags)
    #[arg(long, value_name = "FILE", requires = "scenario")]
    truth: Option<PathBuf>,
    /// Publish `commit` only every K records (models a commit lagging written bytes; 1 = kernel)
    #[arg(long, default_value_t = 3, value_name = "K")]
    commit_every: u32,
    /// Driver name reported in `info`
    #[arg(long, default_value = "grtsim", value_name = "NAME")]
    driver: String,
    /// List scenario names and exit
    #[arg(long)]
    list_scenarios: bool,
    /// Log every ctl command and session totals on stderr
    #[arg(short, long)]
    verbose: bool,
}

static QUIT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: nix::libc::c_int) {
    QUIT.store(true, Ordering::Release);
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.list_scenarios {
        for n in scenarios::names() {
            println!("{n}");
        }
        return ExitCode::SUCCESS;
    }
    let rate = if args.rate == "max" {
        None
    } else {
        match args.rate.parse::<f64>() {
            Ok(r) if r > 0.0 => Some(r),
            _ => {
                eprintln!(
                    "grtsim: --rate wants a positive number of events/s or `max`, not `{}`",
                    args.rate
                );
                return ExitCode::from(2);
            }
        }
    };
    // clap guarantees --root unless --list-scenarios, which returned above.
    let root = args.root.clone().unwrap_or_default();
    let mut cfg = SimConfig::new(&root);
    cfg.cards = args.cards.max(1);
    cfg.cpus = args.cpus.max(1);
    cfg.rate = rate;
    cfg.events = args.events;
    cfg.seed = args.seed;
    cfg.scenario = args.scenario.clone();
    cfg.jobs = args.jobs;
    cfg.commit_every = args.commit_every;
    cfg.driver = args.driver.clone();
    cfg.verbose = args.verbose;
    if let (Some(name), Some(path)) = (&args.scenario, &args.truth) {
        let Some(sc) = scenarios::by_name(name, args.seed, args.jobs) else {
            eprintln!(
                "grtsim: no scenario `{name}` (have: {})",
                scenarios::names().join(", ")
            );
            return ExitCode::from(2);
        };
        if let Err(e) = std::fs::write(path, scenarios::truth_csv(&sc.truth)) {
            eprintln!("grtsim: {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    for sig in [
        nix::sys::signal::SIGINT,
        nix::sys::signal::SIGTERM,
        nix::sys::signal::SIGHUP,
    ] {
        let act = nix::sys::signal::SigAction::new(
            nix::sys::signal::SigHandler::Handler(on_signal),
            nix::sys::signal::SaFlags::empty(),
            nix::sys::signal::SigSet::empty(),
        );
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        let _ = unsafe { nix::sys::signal::sigaction(sig, &act) };
    }
    let sim = match Sim::start(&cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("grtsim: cannot build {}/grtrace: {e}", root.display());
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "grtsim: serving {} card(s) with {} CPU(s) under {}/grtrace; record with: grtrace -r {} -d card0 -o run",
        cfg.cards,
        cfg.cpus,
        root.display(),
        root.display()
    );
    while !QUIT.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
    }
    match sim.stop() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("grtsim: {e}");
            ExitCode::from(1)
        }
    }
}
