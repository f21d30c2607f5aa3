//! # grtrace-record
//!
//! The recorder behind `grtrace`: sets up the kernel's per-device relay channel through the
//! `DRM_IOCTL_GRTRACE_*` ioctls on the card's primary node `/dev/dri/cardN` (or, for the
//! simulator, which has no DRM device, through `<root>/grtrace/cardN/ctl`), maps every
//! per-CPU `trace<cpu>` buffer read-only, and drains it with the consumer of FORMAT.md §7.2
//! (one thread per CPU) into `BASE.grtrace.<cpu>` streams, or one merged stream on stdout
//! for `-o -`. One writer thread per output stream owns it; drain threads hand writers pooled
//! buffers over crossbeam channels, so nothing is allocated per record.
//!
//! Losses are never silent: sub-buffer `lost` counts become `NOTE_LOST` records in the stream
//! where they happened, records still pending at stop become a final `NOTE_LOST`, each stream
//! ends with `NOTE_STREAM_INFO`, and the end-of-run summary warns about kernel drops.
//!
//! Nothing here depends on the simulator: `poll()` is only a hint, file sizes are never read,
//! and commands are confirmed by reading `info` (immediate on the kernel). The one difference
//! is the control path ([`device::Control`]): ioctls where the card is a DRM device, the `ctl`
//! file where it is not (a `grtsim` tree).

pub mod cli;
pub mod device;
pub mod drain;
pub mod error;
pub mod ftrace;
pub mod summary;
pub mod writer;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use grtrace_format::abi::{self, rsize};
use grtrace_format::relay::{self, CtlCommand, DevState, DrainCursor, Filters, Info, RelayMap};
use grtrace_format::{Card, Endian, StreamHeader};

pub use device::Device;
pub use error::{RecordError, DEFAULT_ROOT};
pub use summary::{CpuReport, DeviceReport, RunReport};

use drain::{Drain, DrainTotals};
use writer::{Chunk, Output, WriterFailure};

/// Default sub-buffer size and count: 512 KiB × 8 = 4 MiB per CPU.
pub const DEFAULT_SUBBUF_SIZE: usize = 512 << 10;
/// See [`DEFAULT_SUBBUF_SIZE`].
pub const DEFAULT_N_SUBBUFS: usize = 8;

/// What to record and where.
#[derive(Clone, Debug)]
pub struct Options {
    /// The cards to record.
    pub devices: Vec<Card>,
    /// debugfs mount point (or a grtsim root).
    pub root: PathBuf,
    /// Output base name (any bytes); `-` = one merged stream on stdout; None = the device name.
    pub output: Option<std::ffi::OsString>,
    /// Directory for the output files (`-D`).
    pub dir: Option<PathBuf>,
    /// Stop after this long.
    pub stopwatch: Option<Duration>,
    /// Sub-buffer size in bytes (`-b`).
    pub subbuf_size: usize,
    /// Sub-buffers per CPU (`-n`).
    pub n_subbufs: usize,
    /// The kernel-side filters.
    pub filters: Filters,
}

impl Options {
    /// Recording `devices` with the defaults.
    pub fn new(devices: Vec<Card>) -> Options {
        Options {
            devices,
            root: PathBuf::from(DEFAULT_ROOT),
            output: None,
            dir: None,
            stopwatch: None,
            subbuf_size: DEFAULT_SUBBUF_SIZE,
            n_subbufs: DEFAULT_N_SUBBUFS,
            filters: Filters::default(),
        }
    }

    /// Whether the output is one merged stream on stdout (`-o -`).
    pub fn is_pipe(&self) -> bool {
        self.output.as_deref() == Some(std::ffi::OsStr::new("-"))
    }

    /// The files of a device: `[DIR/]BASE.grtrace.<cpu>`.
    pub fn file_base(&self, card: Card) -> PathBuf {
        let base = match (&self.output, self.devices.len()) {
            (Some(b), 1) => b.clone(),
            (Some(b), _) => {
                let mut b = b.clone();
                b.push(format!(".{card}"));
                b
            }
            (None, _) => card.to_string().into(),
        };
        match &self.dir {
            Some(d) => d.join(base),
            None => PathBuf::from(base),
        }
    }
}

/// Monotonic nanoseconds (the clock of kernel timestamps).
fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|ts| ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
        .unwrap_or(0)
}

/// A device set up by this recorder. Dropping it without [`Session::done`] stops and tears
/// the device down, so an error path never leaves it busy.
struct Session {
    dev: Device,
    info: Info,
    running: bool,
    done: bool,
}

impl Session {
    fn stop(&mut self) -> Result<(), RecordError> {
        if self.running {
            self.running = false;
            self.dev.ctl(&CtlCommand::Stop)?;
            self.dev.wait_state(DevState::Stopped)?;
        }
        Ok(())
    }
    fn teardown(&mut self) -> Result<(), RecordError> {
        self.done = true;
        self.dev.ctl(&CtlCommand::Teardown)?;
        self.dev.wait_state(DevState::Idle).map(|_| ())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.stop();
            let _ = self.teardown();
        }
    }
}

fn page_align(n: usize) -> usize {
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(4096) as usize;
    n.div_ceil(page) * page
}

fn stream_header(info: &Info, cpu: u32, merged: bool) -> StreamHeader {
    let mut h = StreamHeader::new(cpu, info.card, &info.driver);
    h.endian = info.endian();
    h.clock_id = info.clock;
    h.session_id = info.session;
    h.anchor_realtime_ns = info.anchor_realtime_ns;
    h.anchor_clock_ns = info.anchor_clock_ns;
    if merged {
        h.cpu = abi::CPU_MERGED;
        h.flags |= abi::STREAM_MERGED;
    }
    if info.simulated {
        h.flags |= abi::STREAM_SIMULATED;
    }
    h
}

/// One mapped CPU buffer, ready to drain.
struct MappedCpu {
    dev_idx: usize,
    cpu: u32,
    output: usize,
    map: memmap2::Mmap,
    trace: File,
    consumed: Arc<File>,
    start: u64,
    endian: Endian,
    subbuf_size: usize,
    n_subbufs: usize,
}

fn map_cpu(dev: &Device, info: &Info, cpu: u32) -> Result<(File, memmap2::Mmap), RecordError> {
    let p = dev.trace_path(cpu);
    let f = File::open(&p).map_err(|e| device::open_error(&p, e))?;
    let len = page_align(info.subbuf_size * info.n_subbufs);
    // SAFETY: relay buffers stay mapped until we unmap them, even if the device goes away;
    // the memory is only accessed through RelayReader (atomics and copies below commit).
    let map = unsafe { memmap2::MmapOptions::new().len(len).map(&f) }
        .map_err(|e| device::open_error(&p, e))?;
    Ok((f, map))
}

/// Records until `stop` is set, the stopwatch runs out, or an output fails. `stop` is the
/// flag the signal handlers set (tests set it directly).
pub fn record(opts: &Options, stop: &AtomicBool) -> Result<RunReport, RecordError> {
    let t_start = Instant::now();
    let cpu_start = summary::cpu_time();

    // 1. Set up every device (nothing is started before all are ready; a device set up
    // before an error is torn down when its Session drops).
    let mut sessions = opts
        .devices
        .iter()
        .map(|&d| Session::set_up(opts, d))
        .collect::<Result<Vec<_>, _>>()?;
    // 2. Outputs, mappings, and where each CPU starts.
    let (outputs, cpus) = open_outputs(opts, &sessions, stop)?;
    // 3. One writer per output stream, one drain per CPU.
    let mut threads = Threads::start(outputs, cpus, sessions.len(), opts.is_pipe())?;
    // 4. Start tracing and wait for the end.
    let mut first_error = start_tracing(&mut sessions).err();
    if first_error.is_none() {
        threads.wait(stop, opts.stopwatch);
    }
    // 5. Stop the kernel side, drain what is left, end every stream.
    let mut reports = Vec::new();
    for (di, s) in sessions.iter_mut().enumerate() {
        reports.push(threads.finish_device(di, s, &mut first_error));
    }
    let (outputs, failure) = threads.join_writers()?;
    for s in sessions.iter_mut() {
        if let Err(e) = s.teardown() {
            first_error.get_or_insert(e);
        }
    }
    if let Some(e) = failure.error {
        first_error = Some(e);
    }
    let cpu_end = summary::cpu_time();
    Ok(RunReport {
        devices: reports,
        outputs,
        elapsed: t_start.elapsed(),
        cpu_time: (cpu_end.0 + cpu_end.1).saturating_sub(cpu_start.0 + cpu_start.1),
        sys_time: cpu_end.1.saturating_sub(cpu_start.1),
        pipe_closed: failure.pipe_closed,
        failure: first_error,
    })
}

impl Session {
    /// Finds device `name`, checks that it is idle, sets it up with the options' geometry
    /// and filters, and checks what the kernel made of it.
    fn set_up(opts: &Options, card: Card) -> Result<Session, RecordError> {
        let dev = Device::find(&opts.root, card)?;
        let info = dev.info()?;
        if info.state != DevState::Idle {
            let root = dev.root();
            return Err(RecordError::Busy {
                card: dev.card,
                root,
            });
        }
        dev.ctl(&CtlCommand::Setup {
            subbuf_size: opts.subbuf_size,
            n_subbufs: opts.n_subbufs,
            filters: opts.filters,
        })?;
        let mut s = Session {
            dev,
            info,
            running: false,
            done: false,
        };
        s.info = s.dev.wait_state(DevState::Setup)?;
        let bad = |msg: String| RecordError::Protocol {
            dev: s.dev.card.to_string(),
            msg,
        };
        if s.info.subbuf_header != abi::subbuf::HEADER_SIZE
            || !relay::subbuf_size_ok(s.info.subbuf_size)
            || !relay::n_subbufs_ok(s.info.n_subbufs)
        {
            return Err(bad(format!(
                "unexpected relay geometry: subbuf_size {} n_subbufs {} header {}",
                s.info.subbuf_size, s.info.n_subbufs, s.info.subbuf_header
            )));
        }
        if s.info.cpus.is_empty() {
            return Err(bad("no trace<cpu> files after setup".into()));
        }
        Ok(s)
    }
}

/// The output streams (stdout for `-o -`, else one file per CPU, stale files of the base
/// name removed first) and every CPU buffer mapped, with the output it goes to.
fn open_outputs(
    opts: &Options,
    sessions: &[Session],
    stop: &AtomicBool,
) -> Result<(Vec<Output>, Vec<MappedCpu>), RecordError> {
    let pipe = opts.is_pipe();
    let mut outputs: Vec<Output> = Vec::new();
    let mut cpus: Vec<MappedCpu> = Vec::new();
    if pipe {
        let s = &sessions[0];
        let fd = std::io::stdout()
            .lock()
            .as_fd_owned()
            .map_err(|e| RecordError::io("stdout", e))?;
        outputs.push(Output::new(
            PathBuf::from("-"),
            File::from(fd),
            false,
            &stream_header(&s.info, abi::CPU_MERGED, true),
            s.info.cpus.len() as u32,
        )?);
    }
    if let Some(d) = &opts.dir {
        create_output_dir(d)?;
    }
    if !pipe {
        for p in remove_stale(opts, sessions)? {
            grtrace_cli::error(
                "grtrace",
                format_args!(
                    "removed {} (left by an earlier recording under this name)",
                    p.display()
                ),
            );
        }
    }
    for (di, s) in sessions.iter().enumerate() {
        let state = s.dev.state()?;
        let consumed = Arc::new(s.dev.open_consumed()?);
        for &cpu in &s.info.cpus {
            let output = if pipe {
                0
            } else {
                let mut p = opts.file_base(s.dev.card).into_os_string();
                p.push(format!(".grtrace.{cpu}"));
                let p = PathBuf::from(p);
                let f = writer::open_output(&p, stop)?;
                outputs.push(Output::new(
                    p,
                    f,
                    true,
                    &stream_header(&s.info, cpu, false),
                    1,
                )?);
                outputs.len() - 1
            };
            let (trace, map) = map_cpu(&s.dev, &s.info, cpu)?;
            let start = state
                .iter()
                .find(|c| c.cpu == cpu)
                .map_or(0, |c| c.consumed);
            cpus.push(MappedCpu {
                dev_idx: di,
                cpu,
                output,
                map,
                trace,
                consumed: consumed.clone(),
                start,
                endian: s.info.endian(),
                subbuf_size: s.info.subbuf_size,
                n_subbufs: s.info.n_subbufs,
            });
        }
    }
    Ok((outputs, cpus))
}

/// Starts tracing on every device, in order; stops at the first that fails.
/// Creates `-D DIR` (and its parents) if missing; a DIR that exists and is not a directory
/// is said to be one, rather than "File exists".
pub fn create_output_dir(d: &Path) -> Result<(), RecordError> {
    if d.exists() && !d.is_dir() {
        return Err(RecordError::NotADirectory {
            path: d.to_path_buf(),
        });
    }
    std::fs::create_dir_all(d).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotADirectory => {
            RecordError::NotADirectory {
                path: d.to_path_buf(),
            }
        }
        _ => RecordError::io(format!("-D {}: cannot create", d.display()), e),
    })
}

fn start_tracing(sessions: &mut [Session]) -> Result<(), RecordError> {
    for s in sessions.iter_mut() {
        s.dev
            .ctl(&CtlCommand::Start)
            .and_then(|_| s.dev.wait_state(DevState::Running))?;
        s.running = true;
        // Which control path is used (the e2e boot checks that the kernel's is the ioctl);
        // said once the device runs, so that a failure is the one line it prints.
        grtrace_cli::error(
            "grtrace",
            format_args!("{}: control by {}", s.dev.card, s.dev.control_desc()),
        );
    }
    Ok(())
}

/// What a writer thread wrote: its output's path, records and bytes.
type Written = (PathBuf, u64, u64);

/// A drain thread and what it drains: a CPU of a device, into an output stream.
struct DrainThread {
    dev_idx: usize,
    cpu: u32,
    output: usize,
    handle: JoinHandle<DrainTotals>,
}

/// The recorder's threads: one writer per output stream (each CPU file has its own, so
/// writing scales with the CPUs like blktrace's per-CPU threads; `-o -` has one), one
/// drain per CPU.
struct Threads {
    /// Chunks to each writer, by output.
    writer_tx: Vec<crossbeam_channel::Sender<Chunk>>,
    writers: Vec<JoinHandle<Written>>,
    drains: Vec<DrainThread>,
    /// Per device: set when its drains should empty their buffers and end.
    finish: Vec<Arc<AtomicBool>>,
    /// Set by a writer whose output failed: everything stops.
    failed: Arc<AtomicBool>,
    failure: Arc<Mutex<WriterFailure>>,
}

impl Threads {
    fn start(
        outputs: Vec<Output>,
        cpus: Vec<MappedCpu>,
        devices: usize,
        pipe: bool,
    ) -> Result<Threads, RecordError> {
        let mut t = Threads {
            writer_tx: Vec::new(),
            writers: Vec::new(),
            drains: Vec::new(),
            finish: (0..devices)
                .map(|_| Arc::new(AtomicBool::new(false)))
                .collect(),
            failed: Arc::new(AtomicBool::new(false)),
            failure: Arc::new(Mutex::new(WriterFailure::default())),
        };
        let mut writer_pool: Vec<crossbeam_channel::Receiver<Vec<u8>>> = Vec::new();
        let depth = if pipe { 4 * cpus.len() + 4 } else { 8 };
        for (i, o) in outputs.into_iter().enumerate() {
            let (tx, rx) = crossbeam_channel::bounded::<Chunk>(depth);
            let (pool_tx, pool_rx) = crossbeam_channel::bounded::<Vec<u8>>(depth);
            let (failed, failure) = (t.failed.clone(), t.failure.clone());
            let h = std::thread::Builder::new()
                .name(format!("grtrace-writer{i}"))
                .spawn(move || writer::run(o, rx, pool_tx, failed, failure))
                .map_err(|e| RecordError::io("starting a writer thread", e))?;
            t.writer_tx.push(tx);
            writer_pool.push(pool_rx);
            t.writers.push(h);
        }
        for m in cpus {
            let buf = RelayMap::new(m.map, m.subbuf_size, m.n_subbufs);
            let d = Drain {
                cpu: m.cpu,
                buf,
                trace: m.trace,
                consumed: m.consumed,
                cursor: DrainCursor::new(m.start),
                endian: m.endian,
                tx: t.writer_tx[m.output].clone(),
                pool: writer_pool[m.output].clone(),
                finish: t.finish[m.dev_idx].clone(),
                abort: t.failed.clone(),
                spare: None,
                chunk_bytes: if pipe {
                    drain::PIPE_CHUNK_BYTES
                } else {
                    drain::CHUNK_BYTES
                },
            };
            let handle = std::thread::Builder::new()
                .name(format!("grtrace-cpu{}", m.cpu))
                .spawn(move || d.run())
                .map_err(|e| RecordError::io("starting a drain thread", e))?;
            t.drains.push(DrainThread {
                dev_idx: m.dev_idx,
                cpu: m.cpu,
                output: m.output,
                handle,
            });
        }
        Ok(t)
    }

    /// Waits for `stop`, the stopwatch, a failed output or a drain that ended on its own
    /// (an error).
    fn wait(&self, stop: &AtomicBool, stopwatch: Option<Duration>) {
        let deadline = stopwatch.map(|d| Instant::now() + d);
        while !stop.load(Ordering::Acquire)
            && !self.failed.load(Ordering::Acquire)
            && deadline.is_none_or(|d| Instant::now() < d)
            && !self.drains.iter().any(|d| d.handle.is_finished())
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops device `di`, lets its drains empty their buffers, and ends each of its streams
    /// (a last NOTE_LOST for records still pending, then NOTE_STREAM_INFO). The first error
    /// goes into `first_error`.
    fn finish_device(
        &mut self,
        di: usize,
        s: &mut Session,
        first_error: &mut Option<RecordError>,
    ) -> DeviceReport {
        if let Err(e) = s.stop() {
            first_error.get_or_insert(e);
        }
        self.finish[di].store(true, Ordering::Release);
        let state = s.dev.state().unwrap_or_default();
        let dropped = s.dev.dropped().unwrap_or(0);
        // Read like `dropped`: a device that cannot say counts none.
        let refused_cpu = s.dev.info().map_or(0, |i| i.refused_cpu);
        let now = monotonic_ns();
        let mut report = DeviceReport {
            name: s.dev.card.to_string(),
            cpus: Vec::new(),
            dropped,
            refused_cpu,
        };
        let (mine, others) = std::mem::take(&mut self.drains)
            .into_iter()
            .partition(|d| d.dev_idx == di);
        self.drains = others;
        for DrainThread {
            cpu,
            output,
            handle,
            ..
        } in mine
        {
            let mut t = handle.join().unwrap_or_else(|_| DrainTotals {
                cpu,
                error: Some("drain thread panicked".into()),
                ..Default::default()
            });
            if let Some(msg) = t.error.take() {
                first_error.get_or_insert(RecordError::Protocol {
                    dev: format!("{} cpu {cpu}", s.dev.card),
                    msg,
                });
            }
            let pending = state
                .iter()
                .find(|c| c.cpu == cpu)
                .map_or(0, |c| c.lost_pending);
            let final_lost = t.lost_unreported + pending;
            let mut tail = Vec::new();
            let mut tail_records = 0;
            if final_lost > 0 {
                let first_ns = t.last_time;
                tail.resize(rsize::NOTE_LOST, 0);
                t.note_lost(
                    final_lost,
                    first_ns,
                    now.max(first_ns),
                    first_ns,
                    s.info.endian(),
                    &mut tail,
                );
                tail_records = 1;
            }
            let _ = self.writer_tx[output].send(Chunk::Finish {
                tail,
                tail_records,
                kernel_dropped: dropped,
                clean: first_error.is_none(),
                end_ns: now.max(t.last_time),
            });
            report.cpus.push(CpuReport {
                cpu,
                events: t.events,
                records: t.records,
                bytes: t.bytes,
                lost: t.lost_in_headers + pending,
                streaming: t.streaming,
                corrupt_bytes: t.corrupt_bytes,
            });
        }
        report
    }

    /// Closes the writers' channels and waits for them: each output's (path, records,
    /// bytes), and how the writers failed, if they did.
    fn join_writers(self) -> Result<(Vec<Written>, WriterFailure), RecordError> {
        drop(self.writer_tx);
        let mut outputs = Vec::new();
        for h in self.writers {
            outputs.push(h.join().map_err(|_| RecordError::Protocol {
                dev: "writer".into(),
                msg: "writer thread panicked".into(),
            })?);
        }
        let f = std::mem::take(&mut *self.failure.lock().unwrap_or_else(|e| e.into_inner()));
        Ok((outputs, f))
    }
}

/// `grtrace -k`: stop and tear down each device; returns one line per device.
pub fn kill(opts: &Options) -> Result<Vec<String>, RecordError> {
    let mut lines = Vec::new();
    for d in &opts.devices {
        let dev = Device::find(&opts.root, *d)?;
        let was = device::kill(&dev)?;
        lines.push(match was {
            DevState::Idle => format!("{}: was not set up", dev.card),
            s => format!("{}: torn down (was {})", dev.card, s.name()),
        });
    }
    Ok(lines)
}

trait AsFdOwned {
    fn as_fd_owned(&self) -> std::io::Result<std::os::fd::OwnedFd>;
}
impl<T: std::os::fd::AsFd> AsFdOwned for T {
    fn as_fd_owned(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        self.as_fd().try_clone_to_owned()
    }
}

/// Removes the files of the output base names that this run will not overwrite: a 2-CPU
/// recording over an older 4-CPU one would otherwise leave `run.grtrace.2` and `.3` of the
/// old session, which `grtparse run` finds with the new files (and refuses to merge). Like
/// blktrace, a new recording under a name replaces the old one whole. Returns what it removed.
fn remove_stale(opts: &Options, sessions: &[Session]) -> Result<Vec<PathBuf>, RecordError> {
    let mut writes = Vec::new();
    let mut bases = Vec::new();
    for s in sessions {
        let base = opts.file_base(s.dev.card);
        for cpu in &s.info.cpus {
            let mut p = base.clone().into_os_string();
            p.push(format!(".grtrace.{cpu}"));
            writes.push(PathBuf::from(p));
        }
        bases.push(base);
    }
    // With several devices the files are BASE.cardN.grtrace.<cpu>: BASE itself is what a
    // reader is given, so clear everything it stands for.
    if let (Some(o), true) = (&opts.output, sessions.len() > 1) {
        bases.push(match &opts.dir {
            Some(d) => d.join(o),
            None => PathBuf::from(o),
        });
    }
    let mut removed = Vec::new();
    for base in &bases {
        for f in grtrace_format::base_files(base) {
            if writes.contains(&f) || removed.contains(&f) {
                continue;
            }
            std::fs::remove_file(&f)
                .map_err(|e| RecordError::io(format!("removing stale {}", f.display()), e))?;
            removed.push(f);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_follow_the_device_count() {
        let mut o = Options::new(vec![Card(0)]);
        assert_eq!(o.file_base(Card(0)), PathBuf::from("card0"));
        o.output = Some("run".into());
        assert_eq!(o.file_base(Card(0)), PathBuf::from("run"));
        o.devices.push(Card(1));
        o.dir = Some(PathBuf::from("/t"));
        assert_eq!(o.file_base(Card(1)), PathBuf::from("/t/run.card1"));
    }
}
