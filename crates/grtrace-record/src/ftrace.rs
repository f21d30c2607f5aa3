//! `grtrace --ftrace`: live recording on a kernel without the grtrace series, from the GPU
//! tracepoints it already has. A tracefs instance of our own (`instances/grtrace-PID`, so
//! other tracing users are untouched) gets the tracepoints of IMPORT.md that exist on this
//! kernel; its per-CPU `trace_pipe_raw` files hand out ring-buffer pages, which are mapped
//! exactly as `grtimport` maps a trace.dat. The instance is removed on every exit path,
//! Ctrl-C included (the stop signals only set a flag the loop polls).
//!
//! Works under lockdown=integrity (tracefs is allowed there; debugfs mmap, which the relay
//! recorder needs, is not); lockdown=confidentiality forbids tracefs too.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use grtrace_ftrace::format::{EventFormat, PageLayout};
use grtrace_ftrace::import::{self, ImportError};
use grtrace_ftrace::live::LiveMerge;
use grtrace_ftrace::map::{Kind, Mapper};
use grtrace_ftrace::out::{clock_id, Streams, Target};

use crate::error::RecordError;
use crate::summary::{CpuReport, DeviceReport, RunReport};

/// Default tracefs mount point.
pub const DEFAULT_TRACEFS: &str = "/sys/kernel/tracing";

/// What `--ftrace` records and where.
#[derive(Clone, Debug)]
pub struct FtraceOptions {
    /// tracefs mount point (or a fake tree in tests).
    pub root: PathBuf,
    /// Instance directory name under `instances/`.
    pub instance: String,
    /// Create (and remove) the instance; false for a tree that already has it (tests).
    pub create: bool,
    /// Output base name; `-` = merged stream on stdout.
    pub output: std::ffi::OsString,
    /// Directory for the output files (`-D`).
    pub dir: Option<PathBuf>,
    /// Stop after this long (`-w`).
    pub stopwatch: Option<Duration>,
    /// Per-CPU ring buffer size in KiB (`buffer_size_kb`).
    pub buffer_kb: usize,
    /// How often the per-CPU pipes are drained when idle.
    pub poll: Duration,
}

impl FtraceOptions {
    /// The defaults, writing to `output`.
    pub fn new(output: std::ffi::OsString) -> FtraceOptions {
        FtraceOptions {
            root: PathBuf::from(DEFAULT_TRACEFS),
            instance: format!("grtrace-{}", std::process::id()),
            create: true,
            output,
            dir: None,
            stopwatch: None,
            buffer_kb: 4096,
            poll: Duration::from_millis(50),
        }
    }
}

/// The instance, removed (tracing off, events off, rmdir) when dropped.
struct Instance {
    dir: PathBuf,
    created: bool,
    enabled: Vec<PathBuf>,
}

impl Instance {
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = put(&self.file("tracing_on"), "0");
        for e in &self.enabled {
            let _ = put(e, "0");
        }
        if self.created {
            // The kernel removes an instance with everything in it on rmdir.
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

/// A message of the recording on `err`, on one line.
fn say(err: &mut dyn Write, msg: std::fmt::Arguments<'_>) {
    grtrace_cli::error_to(err, "grtrace", msg);
}

/// Writes a tracefs control file that must already exist (never creates one).
fn put(path: &Path, value: &str) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?
        .write_all(value.as_bytes())
}

fn ioe(what: impl Into<String>) -> impl FnOnce(io::Error) -> RecordError {
    let what = what.into();
    move |err| RecordError::Io { what, err }
}

/// Tracepoints found and not found on this kernel, for the start-up report.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// `system:event` of the tracepoints enabled.
    pub found: Vec<String>,
    /// `system:event` of those this kernel does not have.
    pub missing: Vec<String>,
}

fn cpus_of(inst: &Path) -> Result<Vec<u32>, RecordError> {
    let dir = inst.join("per_cpu");
    let mut cpus: Vec<u32> = fs::read_dir(&dir)
        .map_err(ioe(format!("listing {}", dir.display())))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
        .collect();
    cpus.sort_unstable();
    Ok(cpus)
}

/// Reads `per_cpu/cpuN/stats` "overrun" + "dropped events" (events the kernel lost).
fn cpu_dropped(inst: &Path, cpu: u32) -> u64 {
    let p = inst.join(format!("per_cpu/cpu{cpu}/stats"));
    let Ok(text) = fs::read_to_string(p) else {
        return 0;
    };
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "overrun" | "dropped events")
                .then(|| v.trim().parse::<u64>().ok())?
        })
        .sum()
}

/// Sets up the instance and enables every tracepoint of the mapping this kernel has.
fn setup(
    o: &FtraceOptions,
    err: &mut dyn Write,
) -> Result<(Instance, Vec<EventFormat>, Found, String), RecordError> {
    if !o.root.join("instances").is_dir() {
        let debug = Path::new("/sys/kernel/debug/tracing");
        let hint = if o.root == Path::new(DEFAULT_TRACEFS) && debug.join("instances").is_dir() {
            " (try --tracefs /sys/kernel/debug/tracing)"
        } else {
            " (mount it: mount -t tracefs nodev /sys/kernel/tracing; under lockdown=confidentiality tracefs is forbidden)"
        };
        return Err(RecordError::NoTracefs {
            root: o.root.clone(),
            hint,
        });
    }
    let dir = o.root.join("instances").join(&o.instance);
    if o.create {
        fs::create_dir(&dir).map_err(|e| match e.kind() {
            io::ErrorKind::PermissionDenied => RecordError::NotRoot { path: dir.clone() },
            _ => RecordError::Io {
                what: format!("creating tracefs instance {}", dir.display()),
                err: e,
            },
        })?;
    }
    let mut inst = Instance {
        dir,
        created: o.create,
        enabled: Vec::new(),
    };
    let _ = put(&inst.file("tracing_on"), "0");
    let _ = put(&inst.file("buffer_size_kb"), &o.buffer_kb.to_string());
    // CLOCK_MONOTONIC, as the grtrace series uses; older kernels without `mono` keep local.
    let clock = if put(&inst.file("trace_clock"), "mono").is_ok() {
        "mono"
    } else {
        "local"
    };
    let mut formats = Vec::new();
    let mut found = Found::default();
    for (system, event) in Kind::tracepoints() {
        let ev = inst.dir.join("events").join(system).join(event);
        let name = format!("{system}:{event}");
        let text = match fs::read_to_string(ev.join("format")) {
            Ok(t) => t,
            Err(_) => {
                found.missing.push(name);
                continue;
            }
        };
        match EventFormat::parse(system, &text) {
            Ok(f) => formats.push(f),
            Err(e) => {
                say(
                    err,
                    format_args!("{name}: unreadable format ({e}); not enabled"),
                );
                found.missing.push(name);
                continue;
            }
        }
        let en = ev.join("enable");
        put(&en, "1").map_err(ioe(format!("enabling {name}")))?;
        inst.enabled.push(en);
        found.found.push(name);
    }
    Ok((inst, formats, found, clock.to_string()))
}

/// Reads a tracefs file in one `read()`: `events/header_page` answers only a read at
/// offset 0 (a second read returns 0), so the usual read-to-end loop would cut it short.
fn read_once(path: &Path) -> io::Result<String> {
    let mut buf = vec![0u8; 64 << 10];
    let n = File::open(path)?.read(&mut buf)?;
    buf.truncate(n);
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn page_layout(inst: &Instance, root: &Path) -> Result<PageLayout, RecordError> {
    let p = inst.dir.join("events/header_page");
    let text = read_once(&p)
        .or_else(|_| read_once(&root.join("events/header_page")))
        .map_err(ioe(format!("reading {}", p.display())))?;
    PageLayout::parse(&text, grtrace_format::Endian::NATIVE, 0).map_err(|e| {
        RecordError::TracefsData {
            what: p.display().to_string(),
            msg: e.to_string(),
        }
    })
}

/// One CPU's pipe and what was read from it.
struct Pipe {
    cpu: u32,
    file: File,
    report: CpuReport,
    first: Option<Instant>,
    last: Instant,
    /// The pipe reached its end (a plain file in tests; never a live tracefs pipe).
    done: bool,
    /// The file is on tracefs (or debugfs's tracing): a read of 0 bytes there is not an
    /// end. 6.12's `tracing_buffers_read()` returns 0 when the buffer is not empty but its
    /// next page cannot be taken yet (the writer is on it), even with O_NONBLOCK; taking
    /// that as the end stopped reading the CPU for the rest of the session and lost its
    /// events without a word (a CI rehearsal lost 998 of CPU 0's 1486 events).
    live: bool,
}

/// Whether `file` is on tracefs or on debugfs (`/sys/kernel/debug/tracing`).
fn on_tracefs(file: &File) -> bool {
    const TRACEFS_MAGIC: i64 = 0x7472_6163;
    const DEBUGFS_MAGIC: i64 = 0x6462_6720;
    nix::sys::statfs::fstatfs(file).is_ok_and(|s| {
        // fs_type_t is a signed or unsigned long depending on the libc.
        #[allow(clippy::unnecessary_cast)]
        let t = s.filesystem_type().0 as i64;
        t == TRACEFS_MAGIC || t == DEBUGFS_MAGIC
    })
}

/// Most pages taken from one CPU per round, so one busy CPU cannot starve the others'
/// reads (its horizon then stays at its last event, and the merge waits for the rest).
const ROUND_PAGES: usize = 256;
/// Most bytes of pages held behind the watermark (live::LiveMerge).
const HELD_LIMIT: usize = 64 << 20;

/// What one drain of a CPU's pipe did.
struct Drained {
    bytes: usize,
    /// The read ended because the buffer was empty (not at the round's page limit).
    empty: bool,
}

/// Reads the pages available now (at most [`ROUND_PAGES`]) into the merge.
fn drain(p: &mut Pipe, i: usize, live: &mut LiveMerge) -> Result<Drained, RecordError> {
    let mut n = 0;
    for _ in 0..ROUND_PAGES {
        let mut buf = live.buffer();
        match p.file.read(&mut buf) {
            Ok(0) if p.live => {
                // Not an end, and not "empty" either: the CPU's horizon stays where it
                // was, and the page is read on a later round.
                live.recycle(buf);
                return Ok(Drained {
                    bytes: n,
                    empty: false,
                });
            }
            Ok(0) => {
                live.recycle(buf);
                p.done = true;
                return Ok(Drained {
                    bytes: n,
                    empty: true,
                });
            }
            Ok(k) => {
                // A short read is a partial page: the commit field says how much is valid.
                buf.truncate(k);
                n += k;
                p.report.bytes += k as u64;
                let now = Instant::now();
                p.first.get_or_insert(now);
                p.last = now;
                live.push(i, buf).map_err(|e| RecordError::TracefsData {
                    what: format!("cpu{} trace_pipe_raw", p.cpu),
                    msg: e.to_string(),
                })?;
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                live.recycle(buf);
                return Ok(Drained {
                    bytes: n,
                    empty: e.kind() == io::ErrorKind::WouldBlock,
                });
            }
            Err(e) => {
                live.recycle(buf);
                return Err(RecordError::Io {
                    what: format!("reading CPU {} trace_pipe_raw", p.cpu),
                    err: e,
                });
            }
        }
    }
    Ok(Drained {
        bytes: n,
        empty: false,
    })
}

/// The trace clock now, if user space can read it: `mono` is CLOCK_MONOTONIC. (`local`,
/// the kernel's sched_clock, is not readable; the merge then uses the latest event seen.)
fn trace_now(clock: &str) -> Option<u64> {
    if clock != "mono" {
        return None;
    }
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    Some(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// Names a task as trace-cmd does: /proc/PID/comm while it lives, else the kernel's
/// `saved_cmdlines` (the comms tracing recorded at sched switches) under the tracefs root.
pub fn comm_lookup(root: PathBuf) -> impl FnMut(u32) -> Option<String> {
    move |pid| {
        if let Ok(c) = fs::read_to_string(format!("/proc/{pid}/comm")) {
            let c = c.trim_end_matches('\n');
            if !c.is_empty() {
                return Some(c.to_string());
            }
        }
        let text = fs::read_to_string(root.join("saved_cmdlines")).ok()?;
        text.lines().find_map(|l| {
            let (p, c) = l.split_once(' ')?;
            (p.parse::<u32>().ok()? == pid && c != "<...>").then(|| c.to_string())
        })
    }
}

/// Records until `stop` (or the stopwatch); prints which tracepoints were found.
pub fn record(
    o: &FtraceOptions,
    stop: &AtomicBool,
    err: &mut dyn Write,
) -> Result<RunReport, RecordError> {
    let t_start = Instant::now();
    let cpu_start = crate::summary::cpu_time();
    let (inst, formats, found, clock) = setup(o, err)?;
    if found.found.is_empty() {
        // The one line of this failure (the instance is removed when `inst` drops).
        return Err(RecordError::NoGpuTracepoints {
            root: o.root.clone(),
            missing: found.missing,
        });
    }
    say(
        err,
        format_args!("ftrace instance {}: clock {clock}", inst.dir.display()),
    );
    say(
        err,
        format_args!("tracepoints found: {}", found.found.join(" ")),
    );
    if !found.missing.is_empty() {
        say(
            err,
            format_args!("not on this kernel: {}", found.missing.join(" ")),
        );
    }
    let layout = page_layout(&inst, &o.root)?;
    let mut mapper = Mapper::new(layout.endian, &formats);
    let note = import::source_note(
        &format!("tracefs trace_pipe_raw (instance {})", o.instance),
        concat!("grtrace --ftrace ", env!("CARGO_PKG_VERSION")),
        "",
        &clock,
        fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim(),
        mapper.measures(false),
    );
    let target = if o.output == "-" {
        Target::Merged(Box::new(io::BufWriter::with_capacity(
            1 << 20,
            io::stdout(),
        )))
    } else {
        let base = match &o.dir {
            Some(d) => {
                crate::create_output_dir(d)?;
                d.join(&o.output)
            }
            None => PathBuf::from(&o.output),
        };
        Target::Files(base)
    };
    let clock_id = clock_id(&clock).unwrap_or(1);
    let mut sink = Streams::new(target, &mapper.drivers(), clock_id, note)
        .map_err(ioe("creating the output"))?;
    sink.set_comm_lookup(Box::new(comm_lookup(o.root.clone())));
    let cpus = cpus_of(&inst.dir)?;
    let mut pipes = Vec::new();
    for &cpu in &cpus {
        sink.open_cpu(cpu).map_err(ioe("creating the output"))?;
        let path = inst.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&path)
            .map_err(ioe(format!("opening {}", path.display())))?;
        pipes.push(Pipe {
            cpu,
            live: on_tracefs(&file),
            file,
            report: CpuReport {
                cpu,
                events: 0,
                records: 0,
                bytes: 0,
                lost: 0,
                streaming: Duration::ZERO,
                corrupt_bytes: 0,
            },
            first: None,
            last: Instant::now(),
            done: false,
        });
    }
    let mut live = LiveMerge::new(layout, &cpus, HELD_LIMIT);
    // The capture's span is the recording's, as with the relay recorder: from turning
    // tracing on to turning it off, in the trace clock when user space can read it (else
    // the first and last events'). Readers count time from the first record.
    if let Some(t) = trace_now(&clock) {
        sink.set_start(t);
    }
    put(&inst.file("tracing_on"), "1").map_err(ioe("starting tracing (tracing_on)"))?;
    let mut failure = None;
    let mut pipe_closed = false;
    let deadline = o.stopwatch.map(|w| t_start + w);
    let mut stopping = false;
    loop {
        if !stopping
            && (stop.load(Ordering::Acquire) || deadline.is_some_and(|d| Instant::now() >= d))
        {
            // Stop writing, then drain what the buffers still hold.
            let _ = put(&inst.file("tracing_on"), "0");
            if let Some(t) = trace_now(&clock) {
                sink.set_end(t);
            }
            stopping = true;
        }
        let mut got = 0;
        for (i, p) in pipes.iter_mut().enumerate() {
            if p.done {
                continue;
            }
            // Taken before the read: whatever the read does not find was committed after
            // this time, so (the slack aside) it is stamped after it too.
            let now = trace_now(&clock);
            match drain(p, i, &mut live) {
                Ok(d) => {
                    got += d.bytes;
                    if p.done {
                        live.closed(i);
                    } else if d.empty {
                        live.drained(i, now);
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let last = failure.is_some() || (stopping && got == 0) || pipes.iter().all(|p| p.done);
        // Everything up to the watermark, in time order; at the end, everything held (the
        // pages before a damaged one are all intact: pages are checked when taken in).
        let upto = if last { u64::MAX } else { live.watermark() };
        match live.emit(upto, &mut mapper, &mut sink) {
            Ok(()) => {}
            Err(ImportError::Output(e)) if grtrace_cli::is_broken_pipe(&e) => {
                pipe_closed = true;
                break;
            }
            Err(ImportError::Output(e)) => {
                failure = Some(RecordError::Io {
                    what: "writing the output".into(),
                    err: e,
                });
                break;
            }
            Err(ImportError::Input(e)) => {
                failure.get_or_insert(RecordError::TracefsData {
                    what: "trace_pipe_raw".into(),
                    msg: e.to_string(),
                });
                break;
            }
        }
        if last {
            break;
        }
        if got == 0 {
            std::thread::sleep(o.poll);
        }
    }
    if live.stats.late > 0 {
        say(
            err,
            format_args!(
                "{} events reached the merge after later events had been written (a CPU \
             stalled beyond {} ms between stamping and committing); their jobs may be out of order",
                live.stats.late,
                live.slack / 1_000_000
            ),
        );
    }
    if live.stats.forced > 0 {
        say(
            err,
            format_args!(
                "{} events written before every CPU had been read past them (over {} MiB \
             held); a late CPU's events may be out of order",
                live.stats.forced,
                HELD_LIMIT >> 20
            ),
        );
    }
    // Per-CPU counts of what the kernel dropped (overwritten or refused).
    let mut dropped = 0;
    for p in pipes.iter_mut() {
        let d = cpu_dropped(&inst.dir, p.cpu);
        p.report.lost = d;
        dropped += d;
        if let Some(f) = p.first {
            p.report.streaming = p.last.duration_since(f);
        }
    }
    for p in pipes.iter_mut() {
        p.report.events = mapper
            .stats
            .events_by_cpu
            .get(p.cpu as usize)
            .copied()
            .unwrap_or(0);
    }
    let lost_total = mapper.stats.lost_events.max(dropped);
    if let Some((first, _)) = mapper.stats.span() {
        sink.set_start(first);
    }
    sink.end_capture(&mapper);
    let outputs = match sink.finish(lost_total) {
        Ok(v) => v,
        Err(e) if grtrace_cli::is_broken_pipe(&e) => {
            pipe_closed = true;
            Vec::new()
        }
        Err(e) => {
            failure.get_or_insert(RecordError::Io {
                what: "writing the output".into(),
                err: e,
            });
            Vec::new()
        }
    };
    // Close the pipes before the instance goes: tracefs refuses to remove an instance
    // whose files are open.
    let reports: Vec<CpuReport> = pipes.into_iter().map(|p| p.report).collect();
    drop(inst);
    let cpu_end = crate::summary::cpu_time();
    Ok(RunReport {
        devices: vec![DeviceReport {
            name: format!("ftrace {}", mapper.drivers()),
            cpus: reports,
            dropped,
            // tracefs has no per-session CPU list: a CPU brought online is simply traced.
            refused_cpu: 0,
        }],
        outputs: outputs
            .into_iter()
            .map(|(p, r, b)| (PathBuf::from(p), r, b))
            .collect(),
        elapsed: t_start.elapsed(),
        cpu_time: (cpu_end.0 + cpu_end.1).saturating_sub(cpu_start.0 + cpu_start.1),
        sys_time: cpu_end.1.saturating_sub(cpu_start.1),
        pipe_closed,
        failure,
    })
}
