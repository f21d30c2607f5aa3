//! The `grtsim` command line: arguments, their checks (usage errors exit 2) and the serve
//! loop (the stop signals are `grtrace_cli::signals`); `main.rs` only wires them together.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Parser;
use grtrace_cli::Failure;

use crate::{scenarios, Sim, SimConfig, MAX_CARDS, MAX_CPUS};

/// Simulate grtrace GPU devices: builds <ROOT>/grtrace/card<N>/ exactly like the kernel's
/// debugfs tree (per-CPU relay buffers, info, state, dropped, ctl, consumed, msg) and fills
/// the buffers with a GPU workload whenever a recorder starts tracing.
///
/// Example (two shells, no root needed):
///   grtsim --root /tmp/sim --rate 200000
///   grtrace -r /tmp/sim -d card0 -w 3 -o run && grtparse run
// The doc comment is the `--help` text, where `<cpu>` is meant as written, not as HTML.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Parser, Debug)]
#[command(name = "grtsim", version, verbatim_doc_comment)]
pub struct Args {
    /// Directory that stands for the debugfs mount (give the same to `grtrace -r`)
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present_any = ["list_scenarios", "completions"]
    )]
    pub root: Option<PathBuf>,
    /// Number of simulated cards (card0, card1, ...), 1 to 16
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=MAX_CARDS as i64))]
    pub cards: u32,
    /// Simulated CPUs per card (one relay buffer and producer thread each), 1 to 256
    #[arg(long, default_value_t = 2, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=MAX_CPUS as i64))]
    pub cpus: u32,
    /// Events per second per card while a recorder is tracing, or `max` for full speed
    #[arg(long, default_value = "100000", value_name = "EVENTS_PER_S|max")]
    pub rate: String,
    /// Produce exactly N events per tracing session and card, then go quiet
    #[arg(long, value_name = "N")]
    pub events: Option<u64>,
    /// Seed of the workload model (same seed, same workload)
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub seed: u64,
    /// Play a named scenario instead of the live model (see --list-scenarios)
    #[arg(long, value_name = "NAME")]
    pub scenario: Option<String>,
    /// Jobs in the scenario
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub jobs: usize,
    /// Write the scenario's ground truth as CSV (ctx,ring,seqno,tags)
    #[arg(long, value_name = "FILE", requires = "scenario")]
    pub truth: Option<PathBuf>,
    /// Publish `commit` only every K records (models a commit lagging written bytes; 1 = kernel)
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub commit_every: u32,
    /// Bring N more CPUs online after setup: like the kernel, refuse their records (CPU 0's
    /// workload each) and count them in `info`'s `refused_cpu`
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=MAX_CPUS as i64))]
    pub hotplug_cpus: u32,
    /// Driver name reported in `info`
    #[arg(long, default_value = "grtsim", value_name = "NAME")]
    pub driver: String,
    /// List scenario names and exit
    #[arg(long)]
    pub list_scenarios: bool,
    /// Log every ctl command and session totals on stderr
    #[arg(short, long)]
    pub verbose: bool,
    #[command(flatten)]
    /// `--completions SHELL`.
    pub completions: grtrace_cli::CompletionArgs,
}

impl Args {
    /// The simulation the arguments ask for, or a usage error (exit 2) to print.
    pub fn config(&self) -> Result<SimConfig, String> {
        let rate = match self.rate.as_str() {
            "max" => None,
            r => match r.parse::<f64>() {
                Ok(r) if r > 0.0 => Some(r),
                _ => {
                    return Err(format!(
                        "--rate wants a positive number of events/s or `max`, not `{r}`"
                    ))
                }
            },
        };
        if let Some(name) = &self.scenario {
            if !scenarios::names().contains(&name.as_str()) {
                let have = scenarios::names().join(", ");
                return Err(format!("no scenario `{name}` (have: {have})"));
            }
        }
        // clap requires --root unless --list-scenarios.
        let mut cfg = SimConfig::new(self.root.as_deref().unwrap_or(Path::new("")));
        cfg.cards = self.cards.max(1);
        cfg.cpus = self.cpus.max(1);
        cfg.rate = rate;
        cfg.events = self.events;
        cfg.seed = self.seed;
        cfg.scenario = self.scenario.clone();
        cfg.jobs = self.jobs;
        cfg.commit_every = self.commit_every;
        cfg.driver = self.driver.clone();
        cfg.hotplug_cpus = self.hotplug_cpus;
        cfg.verbose = self.verbose;
        Ok(cfg)
    }
}

/// Lists the scenarios, or writes the ground truth and serves the devices until SIGINT,
/// SIGTERM or SIGHUP (then the tree is torn down).
pub fn run(args: Args) -> Result<(), Failure> {
    let quit = grtrace_cli::signals::stop_on_terminate();
    if args.list_scenarios {
        for n in scenarios::names() {
            println!("{n}");
        }
        return Ok(());
    }
    let cfg = args.config().map_err(Failure::Usage)?;
    // config() checked the name; the scenario is built once, for its truth and to play.
    let scenario = cfg
        .scenario
        .as_deref()
        .and_then(|n| scenarios::by_name(n, cfg.seed, cfg.jobs));
    let started = match scenario {
        Some(sc) => {
            if let Some(path) = &args.truth {
                std::fs::write(path, scenarios::truth_csv(&sc.truth))
                    .map_err(|e| format!("{}: {e}", grtrace_cli::show(path)))?;
            }
            Sim::start_playing(&cfg, sc)
        }
        None => Sim::start(&cfg),
    };
    let root = grtrace_cli::show(&cfg.root);
    let sim = started.map_err(|e| format!("cannot serve {root}/grtrace: {e}"))?;
    eprintln!(
        "grtsim: serving {} card(s) with {} CPU(s) under {root}/grtrace; record with: grtrace -r {root} -d card0 -o run",
        cfg.cards, cfg.cpus,
    );
    while !quit.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(50));
    }
    sim.stop().map_err(|e| Failure::Runtime(e.to_string()))
}
