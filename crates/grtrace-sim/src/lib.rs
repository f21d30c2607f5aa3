//! # grtrace-sim
//!
//! `grtsim`: a kernel-free producer of the exact debugfs tree and relay buffers the grtrace
//! kernel patches create (FORMAT.md §7), so the recorder, the parsers and the reports can be
//! developed, tested and demonstrated without root or a patched kernel.
//!
//! [`Sim::start`] builds `<root>/grtrace/card<i>/` for each card and serves it from a thread:
//! `trace<cpu>` are regular files of `n_subbufs × subbuf_size` bytes that producer threads
//! mmap and fill with [`grtrace_format::relay::RelayProducer`], the same code path the
//! recorder's consumer is tested against; `info`, `state` and `dropped` are regular files
//! rewritten atomically; `ctl`, `consumed` and `msg` are FIFOs.
//!
//! Deliberate differences from the kernel (the recorder must not rely on either side):
//! * `trace<cpu>` files are always full size and always poll readable (relay files grow with
//!   produced data and wake pollers only at sub-buffer switches).
//! * `ctl` commands are applied asynchronously and a refused command returns no error (a FIFO
//!   cannot fail a write): the recorder checks `info` before `setup` and waits for `info`'s
//!   `state` to change after each command, which is immediate on the kernel.
//! * `msg`: each line written is one note (the kernel makes one note per `write()`).
//! * `info` has a `simulated 1` line so recorded streams get the `SIMULATED` header flag.
//! * Timestamps in full-speed mode follow the model (about 20 ns apart), not the wall clock.
//!
//! The event source is [`model`], a small GPU workload model; [`scenarios`] holds named
//! workloads with ground truth for report tests.

pub mod cli;
pub mod device;
pub mod model;
pub mod producer;
pub mod scenarios;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use grtrace_format::Card;

pub use device::{CardStats, Workload};

/// Most simulated cards (each has a serving thread).
pub const MAX_CARDS: u32 = 16;
/// Most simulated CPUs per card (each has a producer thread and a relay buffer file).
pub const MAX_CPUS: u32 = 256;
/// The lock a serving simulator holds in `<root>/grtrace/`, with its pid inside.
pub const LOCK_FILE: &str = ".grtsim.lock";

/// Everything `grtsim` can be told.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Stands for the debugfs mount point: cards appear under `<root>/grtrace/`.
    pub root: PathBuf,
    /// Cards to serve.
    pub cards: u32,
    /// CPUs per card.
    pub cpus: u32,
    /// Events per second per card; None = as fast as possible.
    pub rate: Option<f64>,
    /// Events per session per card (None = until the recorder stops).
    pub events: Option<u64>,
    /// Seed of the workloads.
    pub seed: u64,
    /// Play this scenario instead of the live model.
    pub scenario: Option<String>,
    /// Jobs of a scenario.
    pub jobs: usize,
    /// Publish `commit` every this many records (1 = like the kernel).
    pub commit_every: u32,
    /// Driver name of the cards.
    pub driver: String,
    /// CPUs brought online after setup (per card): their records are refused and counted
    /// in `info`'s `refused_cpu`, as the kernel does (FORMAT.md §7.1, §7.3).
    pub hotplug_cpus: u32,
    /// Log commands and sessions on stderr.
    pub verbose: bool,
}

impl SimConfig {
    /// The defaults, serving under `root`.
    pub fn new(root: impl Into<PathBuf>) -> SimConfig {
        SimConfig {
            root: root.into(),
            cards: 1,
            cpus: 2,
            rate: Some(100_000.0),
            events: None,
            seed: 1,
            scenario: None,
            jobs: 1000,
            commit_every: 3,
            driver: "grtsim".into(),
            hotplug_cpus: 0,
            verbose: false,
        }
    }
}

/// A running simulator. Dropping it stops the cards and removes what it created, and only
/// that: its files, then its directories if they are empty.
pub struct Sim {
    quit: Arc<AtomicBool>,
    cards: Vec<(JoinHandle<io::Result<()>>, Arc<CardStats>)>,
    root: PathBuf,
    /// The root lock (released when dropped) and the directories this simulator created,
    /// outermost first.
    claim: Option<Claim>,
}

/// A root this simulator serves: the lock that keeps a second simulator out.
struct Claim {
    lock: nix::fcntl::Flock<std::fs::File>,
    lock_path: PathBuf,
    made: Vec<PathBuf>,
}

/// Takes `<root>/grtrace` for this simulator: creates what is missing (remembering it),
/// refuses a root another live simulator serves (an flock, released even by SIGKILL) and a
/// tree that holds entries a simulator does not make.
fn claim_root(root: &Path) -> io::Result<Claim> {
    let top = root.join(grtrace_format::abi::files::DIR);
    let mut made = Vec::new();
    for d in [root, top.as_path()] {
        if !d.is_dir() {
            std::fs::create_dir_all(d)?;
            made.push(d.to_path_buf());
        }
    }
    let lock_path = top.join(LOCK_FILE);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)?;
    let mut lock = match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(l) => l,
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
            let pid = std::fs::read_to_string(&lock_path).unwrap_or_default();
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "{}: busy: another grtsim (pid {}) serves this root; stop it or give another --root",
                    grtrace_cli::show(&top),
                    pid.trim()
                ),
            ));
        }
        Err((_, e)) => return Err(e.into()),
    };
    for e in std::fs::read_dir(&top)? {
        let e = e?;
        let name = e.file_name();
        let ours = name == LOCK_FILE
            || (e.path().is_dir() && name.to_str().is_some_and(|n| card_number(n).is_some()));
        if !ours {
            return Err(foreign(&e.path()));
        }
        if e.path().is_dir() {
            if let Some(f) = device::foreign_entry(&e.path())? {
                return Err(foreign(&f));
            }
        }
    }
    use std::io::Write;
    lock.set_len(0)?;
    writeln!(&mut *lock, "{}", std::process::id())?;
    Ok(Claim {
        lock,
        lock_path,
        made,
    })
}

fn foreign(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{}: not made by grtsim: refusing to serve a root that holds other files (give an empty or new --root)",
            grtrace_cli::show(p)
        ),
    )
}

/// `card<N>` -> N.
fn card_number(name: &str) -> Option<u32> {
    Card::from_label(name).map(Card::number)
}

impl Sim {
    /// Creates the tree and starts serving. Returns once every card directory is ready.
    pub fn start(cfg: &SimConfig) -> io::Result<Sim> {
        match &cfg.scenario {
            Some(name) => {
                let sc = scenarios::by_name(name, cfg.seed, cfg.jobs).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "no scenario `{name}` (have: {})",
                            scenarios::names().join(", ")
                        ),
                    )
                })?;
                Sim::start_playing(cfg, sc)
            }
            None => Sim::serve(
                cfg,
                Workload::Live {
                    rate: cfg.rate,
                    events: cfg.events,
                },
            ),
        }
    }

    /// Like [`Sim::start`], playing `sc`, already built (for example from `cfg.scenario`, by a
    /// caller that also wants its truth), instead of `cfg.scenario` or the live model.
    pub fn start_playing(cfg: &SimConfig, sc: scenarios::Scenario) -> io::Result<Sim> {
        let mut per_cpu = vec![Vec::new(); cfg.cpus.max(1) as usize];
        for (st, b) in sc.records {
            per_cpu[(st.cpu % cfg.cpus.max(1)) as usize].push((st, b));
        }
        Sim::serve(
            cfg,
            Workload::Script(per_cpu.into_iter().map(Arc::new).collect()),
        )
    }

    fn serve(cfg: &SimConfig, workload: Workload) -> io::Result<Sim> {
        if !(1..=MAX_CARDS).contains(&cfg.cards) || !(1..=MAX_CPUS).contains(&cfg.cpus) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cards must be 1 to {MAX_CARDS} and CPUs 1 to {MAX_CPUS}"),
            ));
        }
        let claim = claim_root(&cfg.root)?;
        let mut sim = Sim {
            quit: Arc::new(AtomicBool::new(false)),
            cards: Vec::new(),
            root: cfg.root.clone(),
            claim: Some(claim),
        };
        // On an error below, dropping `sim` stops the cards already started and cleans up.
        let (quit, cards) = (sim.quit.clone(), &mut sim.cards);
        for card in 0..cfg.cards {
            let dir = card_dir(&cfg.root, card);
            let stats = Arc::new(CardStats::default());
            let ccfg = device::CardCfg {
                dir: dir.clone(),
                card,
                cpus: cfg.cpus.max(1),
                driver: cfg.driver.clone(),
                seed: cfg.seed.wrapping_add(card as u64),
                workload: workload.clone(),
                commit_every: cfg.commit_every,
                hotplug_cpus: cfg.hotplug_cpus,
                verbose: cfg.verbose,
            };
            let (q, s) = (quit.clone(), stats.clone());
            let h = std::thread::Builder::new()
                .name(format!("grtsim-{}", Card(card)))
                .spawn(move || device::serve(ccfg, q, s))?;
            cards.push((h, stats));
            // Ready when `info` exists (the FIFOs are created before it).
            let t0 = Instant::now();
            while !dir.join("info").exists() {
                if cards.last().unwrap().0.is_finished() {
                    let (h, _) = cards.pop().unwrap();
                    return Err(h
                        .join()
                        .unwrap_or_else(|_| Err(io::Error::other("card thread panicked")))
                        .err()
                        .unwrap_or_else(|| io::Error::other("card thread ended")));
                }
                if t0.elapsed() > Duration::from_secs(10) {
                    return Err(io::Error::other("simulated card did not come up"));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(sim)
    }

    /// The statistics of card `card`.
    pub fn stats(&self, card: usize) -> &Arc<CardStats> {
        &self.cards[card].1
    }

    /// The root served.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Stops every card; returns the first error a card thread met.
    pub fn stop(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        self.quit.store(true, Ordering::Release);
        let mut first = Ok(());
        for (h, _) in self.cards.drain(..) {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("card thread panicked")));
            if first.is_ok() {
                first = r;
            }
        }
        if let Some(c) = self.claim.take() {
            let _ = std::fs::remove_file(&c.lock_path);
            // Only directories this simulator created, and only if nothing else is left.
            for d in c.made.iter().rev() {
                let _ = std::fs::remove_dir(d);
            }
            drop(c.lock);
        }
        first
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// `<root>/grtrace/card<N>`.
pub fn card_dir(root: &Path, card: u32) -> PathBuf {
    root.join(grtrace_format::abi::files::DIR)
        .join(Card(card).to_string())
}
