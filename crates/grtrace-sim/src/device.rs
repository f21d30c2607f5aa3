//! One simulated card: the `<root>/grtrace/cardN/` tree and the thread that serves it like
//! the kernel does (`ctl` commands, `consumed` releases, `msg` notes, `info`/`state`/`dropped`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use grtrace_format::abi::files;
use grtrace_format::relay::{
    parse_consumed_line, CpuCounters, CpuState, CtlCommand, DevState, Filters, Info, RelayProducer,
    RelayWriter,
};
use grtrace_format::{Body, Stamp};

use crate::model::Rng;
use crate::producer::{
    monotonic_ns, realtime_ns, Producer, ProducerCfg, ProducerProgress, ProducerTotals, Source,
    Template,
};

/// What a card produces when a recorder starts it.
#[derive(Clone, Debug)]
pub enum Workload {
    /// The live model: `rate` events/s for the whole card (None = as fast as possible), and
    /// optionally exactly `events` events per session.
    Live {
        /// Events per second (None: as fast as possible).
        rate: Option<f64>,
        /// Events per session (None: until stopped).
        events: Option<u64>,
    },
    /// A scenario's records (already split per CPU), paced to their times.
    Script(Vec<Arc<Vec<(Stamp, Body<'static>)>>>),
}

#[derive(Clone, Debug)]
/// One simulated card.
pub struct CardCfg {
    /// Its directory, `<root>/grtrace/cardN`.
    pub dir: PathBuf,
    /// Its number.
    pub card: u32,
    /// CPUs online at setup.
    pub cpus: u32,
    /// The driver name in `info` and stream headers.
    pub driver: String,
    /// Seed of the workload.
    pub seed: u64,
    /// What it produces.
    pub workload: Workload,
    /// The simulated kernel publishes `commit` every this many records (1 = like the kernel).
    pub commit_every: u32,
    /// CPUs that come online after setup: each runs CPU 0's workload, and every record of
    /// it is refused and counted in `refused_cpu` (when the card's session stops).
    pub hotplug_cpus: u32,
    /// Log commands and sessions on stderr.
    pub verbose: bool,
}

/// Totals of the last finished session and progress of the current one.
#[derive(Debug, Default)]
pub struct CardStats {
    /// Sessions started so far.
    pub sessions: AtomicU64,
    /// Sessions stopped so far (the totals below belong to the last one).
    pub stopped: AtomicU64,
    /// Events offered in the last session.
    pub last_events: AtomicU64,
    /// Events written in the last session.
    pub last_events_written: AtomicU64,
    /// Records written in the last session.
    pub last_records: AtomicU64,
    /// Records dropped in the last session.
    pub last_dropped: AtomicU64,
    /// Live progress of the running session.
    pub progress: Mutex<Vec<Arc<ProducerProgress>>>,
}

impl CardStats {
    /// Events offered so far in the running session, and whether every CPU reached its quota.
    pub fn running_events(&self) -> (u64, bool) {
        let g = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        let n = g.iter().map(|p| p.events.load(Ordering::Acquire)).sum();
        let done = !g.is_empty() && g.iter().all(|p| p.done.load(Ordering::Acquire));
        (n, done)
    }
}

struct Session {
    info: Info,
    filters: Filters,
    counters: Arc<Vec<CpuCounters>>,
    dropped: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    producers: Vec<JoinHandle<io::Result<ProducerTotals>>>,
    msgs: Arc<Mutex<Vec<Vec<u8>>>>,
}

/// The files a simulated card directory holds (besides `trace<cpu>`), and their temporary
/// names while being replaced.
const CARD_FILES: [&str; 6] = [
    files::CTL,
    files::CONSUMED,
    files::MSG,
    files::INFO,
    files::STATE,
    files::DROPPED,
];

/// Whether `name` is a file a simulated card directory holds.
fn is_card_file(name: &str) -> bool {
    let plain = name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".tmp"))
        .unwrap_or(name);
    CARD_FILES.contains(&plain)
        || plain
            .strip_prefix(files::TRACE_PREFIX)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The first entry of a card directory that a simulator does not make, if any.
pub fn foreign_entry(dir: &Path) -> io::Result<Option<PathBuf>> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        if !e.file_name().to_str().is_some_and(is_card_file) {
            return Ok(Some(e.path()));
        }
    }
    Ok(None)
}

/// Serves one card until `quit`; removes its files (and its directory, if then empty) at
/// the end.
pub fn serve(cfg: CardCfg, quit: Arc<AtomicBool>, stats: Arc<CardStats>) -> io::Result<()> {
    let mut card = Card::create(cfg, stats)?;
    let r = card.run(&quit);
    card.shutdown();
    r
}

struct Card {
    cfg: CardCfg,
    ctl: File,
    consumed: File,
    msg: File,
    session: Option<Session>,
    stats: Arc<CardStats>,
    rng: Rng,
    last_state: String,
}

fn open_fifo(path: &Path) -> io::Result<File> {
    let _ = fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o622))
        .map_err(io::Error::from)?;
    // O_RDWR keeps a writer open on our side: reads never see EOF and writers never block.
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
}

/// Replaces `path` atomically (write a temporary file, rename over).
fn write_atomic(path: &Path, text: &str) -> io::Result<()> {
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().and_then(|s| s.to_str()).unwrap_or("f")
    ));
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path)
}

/// Reads everything a non-blocking FIFO holds.
fn drain_fifo(f: &mut File, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Takes the complete lines out of `buf`.
fn lines(buf: &mut Vec<u8>) -> Vec<String> {
    let Some(last_nl) = buf.iter().rposition(|&b| b == b'\n') else {
        return Vec::new();
    };
    let rest = buf.split_off(last_nl + 1);
    let whole = std::mem::replace(buf, rest);
    String::from_utf8_lossy(&whole)
        .lines()
        .map(str::to_string)
        .collect()
}

impl Card {
    fn create(cfg: CardCfg, stats: Arc<CardStats>) -> io::Result<Card> {
        fs::create_dir_all(&cfg.dir)?;
        let ctl = open_fifo(&cfg.dir.join(files::CTL))?;
        let consumed = open_fifo(&cfg.dir.join(files::CONSUMED))?;
        let msg = open_fifo(&cfg.dir.join(files::MSG))?;
        // Session ids must differ between simulator runs, like the kernel's random ones.
        let rng = Rng::new(cfg.seed ^ realtime_ns() ^ ((cfg.card as u64) << 48));
        let card = Card {
            cfg,
            ctl,
            consumed,
            msg,
            session: None,
            stats,
            rng,
            last_state: String::new(),
        };
        card.write_info(&card.idle_info())?;
        write_atomic(&card.cfg.dir.join(files::STATE), "")?;
        write_atomic(&card.cfg.dir.join(files::DROPPED), "0\n")?;
        Ok(card)
    }

    fn idle_info(&self) -> Info {
        Info {
            version: "1.0".into(),
            card: self.cfg.card,
            driver: self.cfg.driver.clone(),
            state: DevState::Idle,
            subbuf_size: 0,
            n_subbufs: 0,
            subbuf_header: grtrace_format::abi::subbuf::HEADER_SIZE,
            cpus: Vec::new(),
            clock: grtrace_format::abi::CLOCK_MONOTONIC,
            session: 0,
            anchor_realtime_ns: 0,
            anchor_clock_ns: 0,
            little_endian: cfg!(target_endian = "little"),
            simulated: true,
            refused_cpu: 0,
        }
    }

    fn write_info(&self, info: &Info) -> io::Result<()> {
        write_atomic(&self.cfg.dir.join(files::INFO), &info.to_string())
    }

    fn trace_path(&self, cpu: u32) -> PathBuf {
        self.cfg.dir.join(format!("{}{cpu}", files::TRACE_PREFIX))
    }

    fn run(&mut self, quit: &AtomicBool) -> io::Result<()> {
        let (mut ctl_buf, mut cons_buf, mut msg_buf) = (Vec::new(), Vec::new(), Vec::new());
        let mut last_state_write = Instant::now();
        while !quit.load(Ordering::Relaxed) {
            {
                use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
                let mut fds = [
                    PollFd::new(self.ctl.as_fd(), PollFlags::POLLIN),
                    PollFd::new(self.consumed.as_fd(), PollFlags::POLLIN),
                    PollFd::new(self.msg.as_fd(), PollFlags::POLLIN),
                ];
                let _ = poll(&mut fds, PollTimeout::from(5u8));
            }
            drain_fifo(&mut self.consumed, &mut cons_buf)?;
            for l in lines(&mut cons_buf) {
                if let (Some((cpu, n)), Some(s)) = (parse_consumed_line(&l), &self.session) {
                    if let Some(c) = s.counters.get(cpu as usize) {
                        c.consume(n);
                    }
                }
            }
            drain_fifo(&mut self.msg, &mut msg_buf)?;
            for l in lines(&mut msg_buf) {
                if let Some(s) = &self.session {
                    let mut l = l.into_bytes();
                    l.truncate(grtrace_format::abi::note_off::MSG_MAX);
                    s.msgs.lock().unwrap_or_else(|e| e.into_inner()).push(l);
                }
            }
            drain_fifo(&mut self.ctl, &mut ctl_buf)?;
            for l in lines(&mut ctl_buf) {
                if l.trim().is_empty() {
                    continue;
                }
                match l.parse::<CtlCommand>() {
                    Ok(cmd) => self.command(cmd)?,
                    Err(e) => self.log(&format!("ctl: {e}")),
                }
            }
            if last_state_write.elapsed() >= Duration::from_millis(10) {
                self.write_state()?;
                last_state_write = Instant::now();
            }
        }
        Ok(())
    }

    fn log(&self, msg: &str) {
        if self.cfg.verbose {
            eprintln!("grtsim: {}: {msg}", grtrace_format::Card(self.cfg.card));
        }
    }

    fn write_state(&mut self) -> io::Result<()> {
        let Some(s) = &self.session else {
            return Ok(());
        };
        let mut text = String::new();
        for (cpu, c) in s.counters.iter().enumerate() {
            text.push_str(
                &CpuState {
                    cpu: cpu as u32,
                    produced: c.produced.load(Ordering::Acquire),
                    consumed: c.consumed.load(Ordering::Acquire),
                    lost_pending: c.lost_pending.load(Ordering::Acquire),
                }
                .to_string(),
            );
        }
        if text != self.last_state {
            write_atomic(&self.cfg.dir.join(files::STATE), &text)?;
            write_atomic(
                &self.cfg.dir.join(files::DROPPED),
                &format!("{}\n", s.dropped.load(Ordering::Acquire)),
            )?;
            self.last_state = text;
        }
        Ok(())
    }

    fn command(&mut self, cmd: CtlCommand) -> io::Result<()> {
        self.log(&format!("ctl: {cmd}"));
        let state = self.session.as_ref().map(|s| s.info.state);
        match (cmd, state) {
            (
                CtlCommand::Setup {
                    subbuf_size,
                    n_subbufs,
                    filters,
                },
                None,
            ) => self.setup(subbuf_size, n_subbufs, filters),
            // The kernel answers EBUSY; a FIFO cannot, the recorder checks `info` first.
            (CtlCommand::Setup { .. }, Some(_)) => {
                self.log("setup refused: busy");
                Ok(())
            }
            (CtlCommand::Start, Some(DevState::Setup)) => self.start(),
            (CtlCommand::Stop, Some(DevState::Running)) => self.stop(),
            (CtlCommand::Teardown, Some(DevState::Running)) => {
                self.stop()?;
                self.teardown()
            }
            (CtlCommand::Teardown, Some(_)) => self.teardown(),
            (c, s) => {
                self.log(&format!("`{c}` ignored in state {s:?}"));
                Ok(())
            }
        }
    }

    fn setup(&mut self, subbuf_size: usize, n_subbufs: usize, filters: Filters) -> io::Result<()> {
        let len = (subbuf_size * n_subbufs) as u64;
        for cpu in 0..self.cfg.cpus {
            let f = File::create(self.trace_path(cpu))?;
            f.set_len(len)?;
        }
        let mut info = self.idle_info();
        info.state = DevState::Setup;
        info.subbuf_size = subbuf_size;
        info.n_subbufs = n_subbufs;
        info.cpus = (0..self.cfg.cpus).collect();
        info.session = self.rng.next_u64() >> 1;
        info.anchor_clock_ns = monotonic_ns();
        info.anchor_realtime_ns = realtime_ns();
        self.session = Some(Session {
            info,
            filters,
            counters: Arc::new((0..self.cfg.cpus).map(|_| CpuCounters::default()).collect()),
            dropped: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
            producers: Vec::new(),
            msgs: Arc::new(Mutex::new(Vec::new())),
        });
        self.last_state.clear();
        self.write_state()?;
        write_atomic(&self.cfg.dir.join(files::DROPPED), "0\n")?;
        let info = self.session.as_ref().unwrap().info.clone();
        self.write_info(&info)
    }

    fn start(&mut self) -> io::Result<()> {
        let ncpus = self.cfg.cpus;
        let paths: Vec<PathBuf> = (0..ncpus).map(|c| self.trace_path(c)).collect();
        let s = self.session.as_mut().unwrap();
        let base_ns = monotonic_ns();
        let mut progress = Vec::new();
        for (cpu, path) in (0..ncpus).zip(paths) {
            let (quota, paced, source) = match &self.cfg.workload {
                Workload::Live { rate, events } => (
                    events.map(|n| n / ncpus as u64 + u64::from((cpu as u64) < n % ncpus as u64)),
                    rate.is_some(),
                    Source::Live(Template::for_cpu(cpu, ncpus, *rate, self.cfg.seed)),
                ),
                Workload::Script(per_cpu) => (
                    None,
                    true,
                    Source::Script(per_cpu.get(cpu as usize).cloned().unwrap_or_default()),
                ),
            };
            let pcfg = ProducerCfg {
                cpu,
                quota,
                paced,
                commit_every: self.cfg.commit_every.max(1),
                filters: s.filters,
                base_ns,
            };
            let (sub, n) = (s.info.subbuf_size, s.info.n_subbufs);
            let counters = s.counters.clone();
            let dropped = s.dropped.clone();
            let stop = s.stop.clone();
            let msgs = s.msgs.clone();
            let prog = Arc::new(ProducerProgress::default());
            progress.push(prog.clone());
            s.producers.push(std::thread::spawn(move || {
                let file = OpenOptions::new().read(true).write(true).open(&path)?;
                // SAFETY: the simulator created the file with exactly sub*n bytes; nobody
                // truncates it while mapped (teardown joins this thread first).
                let mut map = unsafe { memmap2::MmapOptions::new().len(sub * n).map_mut(&file)? };
                let buf = RelayWriter::new(&mut map, sub, n);
                let relay = RelayProducer::new(buf, &counters[cpu as usize], &dropped);
                let msgs = if cpu == 0 {
                    msgs
                } else {
                    Arc::new(Mutex::new(Vec::new()))
                };
                let totals = Producer::new(relay, pcfg).run(source, &stop, &prog, &msgs);
                drop(map);
                Ok(totals)
            }));
        }
        *self
            .stats
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = progress;
        self.stats.sessions.fetch_add(1, Ordering::AcqRel);
        s.info.state = DevState::Running;
        let info = s.info.clone();
        self.write_info(&info)
    }

    /// Stops the writers, flushes (each producer does its own), then publishes state.
    fn stop(&mut self) -> io::Result<()> {
        let s = self.session.as_mut().unwrap();
        s.stop.store(true, Ordering::Release);
        let mut tot = ProducerTotals::default();
        let mut lines = Vec::new();
        // Events offered per CPU, by CPU.
        let mut offered = Vec::new();
        for (cpu, h) in s.producers.drain(..).enumerate() {
            let t = h
                .join()
                .map_err(|_| io::Error::other("producer thread panicked"))??;
            tot.events += t.events;
            tot.events_written += t.events_written;
            tot.records += t.records;
            tot.refused += t.refused;
            offered.push(t.events);
            let secs = t.busy.as_secs_f64().max(1e-9);
            lines.push(format!(
                "cpu {cpu}: produced {} events in {:.3} s ({:.2} M events/s), {} refused",
                t.events,
                secs,
                t.events as f64 / secs / 1e6,
                t.refused
            ));
        }
        s.info.state = DevState::Stopped;
        // The kernel refuses the records of a CPU brought online after setup (it is not in
        // `cpus`, so no recorder maps its buffer) and counts them in `refused_cpu`. A
        // simulated hotplugged CPU offers CPU 0's workload; the count is published at stop
        // (the kernel's grows as it goes), which is when a recorder reads it.
        let cpu0 = offered.first().copied().unwrap_or(0);
        s.info.refused_cpu = cpu0 * u64::from(self.cfg.hotplug_cpus);
        let dropped = s.dropped.load(Ordering::Acquire);
        let (session, refused_cpu) = (s.info.session, s.info.refused_cpu);
        for l in &lines {
            self.log(l);
        }
        self.log(&format!(
            "session {} stopped: {} events offered, {} written, {} records, {} dropped, {} refused on CPUs online after setup",
            session, tot.events, tot.events_written, tot.records, dropped, refused_cpu
        ));
        let st = &self.stats;
        st.last_events.store(tot.events, Ordering::Release);
        st.last_events_written
            .store(tot.events_written, Ordering::Release);
        st.last_records.store(tot.records, Ordering::Release);
        st.last_dropped.store(dropped, Ordering::Release);
        st.stopped.fetch_add(1, Ordering::AcqRel);
        self.last_state.clear();
        self.write_state()?;
        let info = self.session.as_ref().unwrap().info.clone();
        self.write_info(&info)
    }

    fn teardown(&mut self) -> io::Result<()> {
        if let Some(mut s) = self.session.take() {
            s.stop.store(true, Ordering::Release);
            for h in s.producers.drain(..) {
                let _ = h.join();
            }
        }
        for cpu in 0..self.cfg.cpus {
            let _ = fs::remove_file(self.trace_path(cpu));
        }
        write_atomic(&self.cfg.dir.join(files::STATE), "")?;
        self.write_info(&self.idle_info())
    }

    fn shutdown(&mut self) {
        if matches!(
            self.session.as_ref().map(|s| s.info.state),
            Some(DevState::Running)
        ) {
            let _ = self.stop();
        }
        let _ = self.teardown();
        // Only what the simulator makes: anything else someone put there stays, and so does
        // the directory then.
        if let Ok(rd) = fs::read_dir(&self.cfg.dir) {
            for e in rd.flatten() {
                if e.file_name().to_str().is_some_and(is_card_file) {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let _ = fs::remove_dir(&self.cfg.dir);
    }
}

/// Writes `text` to a FIFO or file without blocking (used by tests to drive a card by hand).
pub fn write_ctl(path: &Path, text: &str) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    f.write_all(text.as_bytes())
}
