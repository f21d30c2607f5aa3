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
use grtrace_ftrace::map::{Kind, Mapper};
use grtrace_ftrace::out::{clock_id, Streams, Target};
use grtrace_ftrace::tracedat::CpuStream;

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
    pub output: String,
    pub dir: Option<PathBuf>,
    pub stopwatch: Option<Duration>,
    /// Per-CPU ring buffer size in KiB (`buffer_size_kb`).
    pub buffer_kb: usize,
    /// How often the per-CPU pipes are drained when idle.
    pub poll: Duration,
}

impl FtraceOptions {
    pub fn new(output: String) -> FtraceOptions {
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
    pub found: Vec<String>,
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
        return Err(RecordError::Protocol {
            dev: "ftrace".into(),
            msg: format!("{} is not a tracefs mount{hint}", o.root.display()),
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
                let _ = writeln!(err, "grtrace: {name}: unreadable format ({e}); not enabled");
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
    PageLayout::parse(&text, grtrace_format::Endian::NATIVE, 0).map_err(|e| RecordError::Protocol {
        dev: "ftrace".into(),
        msg: format!("header_page: {e}"),
    })
}

/// One CPU's pipe and what was read from it.
struct Pipe {
    cpu: u32,
    file: File,
    /// Whole pages read this round (each `page_size` bytes).
    pages: Vec<u8>,
    report: CpuReport,
    first: Option<Instant>,
    last: Instant,
    done: bool,
}

/// Reads every page available now; returns bytes read.
fn drain(p: &mut Pipe, page_size: usize) -> Result<usize, RecordError> {
    let mut n = 0;
    loop {
        let at = p.pages.len();
        p.pages.resize(at + page_size, 0);
        match p.file.read(&mut p.pages[at..]) {
            Ok(0) => {
                p.pages.truncate(at);
                p.done = true;
                return Ok(n);
            }
            Ok(k) => {
                // A short read is a partial page: the commit field says how much is valid.
                n += k;
                p.report.bytes += k as u64;
                let now = Instant::now();
                p.first.get_or_insert(now);
                p.last = now;
            }
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                p.pages.truncate(at);
                return Ok(n);
            }
            Err(e) => {
                p.pages.truncate(at);
                return Err(RecordError::Io {
                    what: format!("reading CPU {} trace_pipe_raw", p.cpu),
                    err: e,
                });
            }
        }
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
    let _ = writeln!(
        err,
        "grtrace: ftrace instance {}: clock {clock}",
        inst.dir.display()
    );
    let _ = writeln!(
        err,
        "grtrace: tracepoints found: {}",
        if found.found.is_empty() {
            "none".into()
        } else {
            found.found.join(" ")
        }
    );
    if !found.missing.is_empty() {
        let _ = writeln!(
            err,
            "grtrace: not on this kernel: {}",
            found.missing.join(" ")
        );
    }
    if found.found.is_empty() {
        return Err(RecordError::Protocol {
            dev: "ftrace".into(),
            msg: "none of the GPU tracepoints exists on this kernel (CONFIG_DRM_SCHED / driver modules loaded?)".into(),
        });
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
    );
    let target = if o.output == "-" {
        Target::Merged(Box::new(io::BufWriter::with_capacity(
            1 << 20,
            io::stdout(),
        )))
    } else {
        let base = match &o.dir {
            Some(d) => {
                fs::create_dir_all(d).map_err(ioe(format!("creating {}", d.display())))?;
                d.join(&o.output)
            }
            None => PathBuf::from(&o.output),
        };
        Target::Files(base)
    };
    let clock_id = clock_id(&clock).unwrap_or(1);
    let mut sink = Streams::new(target, &mapper.drivers(), clock_id, note)
        .map_err(ioe("creating the output"))?;
    let mut pipes = Vec::new();
    for cpu in cpus_of(&inst.dir)? {
        sink.open_cpu(cpu).map_err(ioe("creating the output"))?;
        let path = inst.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&path)
            .map_err(ioe(format!("opening {}", path.display())))?;
        pipes.push(Pipe {
            cpu,
            file,
            pages: Vec::new(),
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
    put(&inst.file("tracing_on"), "1").map_err(ioe("starting tracing (tracing_on)"))?;
    let ps = layout.page_size;
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
            stopping = true;
        }
        let mut got = 0;
        for p in pipes.iter_mut() {
            got += match drain(p, ps) {
                Ok(n) => n,
                Err(e) => {
                    failure = Some(e);
                    0
                }
            };
        }
        // Map this round's pages, all CPUs merged in time order.
        let streams: Vec<CpuStream<'_>> = pipes
            .iter()
            .filter(|p| !p.pages.is_empty())
            .map(|p| CpuStream::from_pages(p.cpu, &p.pages, layout))
            .collect();
        let r = import::run(streams, &mut mapper, &mut sink);
        for p in pipes.iter_mut() {
            p.pages.clear();
        }
        match r {
            Ok(()) => {}
            Err(ImportError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
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
                failure = Some(RecordError::Protocol {
                    dev: "ftrace".into(),
                    msg: format!("trace_pipe_raw: {e}"),
                });
                break;
            }
        }
        if failure.is_some() || (stopping && got == 0) || pipes.iter().all(|p| p.done) {
            break;
        }
        if got == 0 {
            std::thread::sleep(o.poll);
        }
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
    let outputs = match sink.finish(lost_total) {
        Ok(v) => v,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
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

/// `grtrace --ftrace`: the options that apply, the recording, and the blktrace-style summary.
pub fn run_cli(args: &crate::cli::Args, stop: &AtomicBool) -> std::process::ExitCode {
    use std::process::ExitCode;
    let usage = |m: &str| {
        eprintln!("grtrace: {m}\nTry 'grtrace --help' for more information.");
        ExitCode::from(2)
    };
    if !args.dev.is_empty() || !args.more_dev.is_empty() {
        return usage("--ftrace records every GPU the tracepoints report: give no device");
    }
    if args.kill
        || args.pid.is_some()
        || args.ctx.is_some()
        || args.ring.is_some()
        || !args.act.is_empty()
        || args.mask.is_some()
    {
        return usage("--ftrace takes -o, -D, -w, -b, -n, -v and --tracefs only");
    }
    let output = args.output.clone().unwrap_or_else(|| "ftrace".into());
    let pipe = output == "-";
    if pipe && io::IsTerminal::is_terminal(&io::stdout()) {
        return usage("-o - writes binary records: pipe them into `grtparse -i -` or a file");
    }
    if pipe && args.output_dir.is_some() {
        return usage("-D makes no sense with -o -");
    }
    let mut o = FtraceOptions::new(output);
    o.root = args.tracefs.clone();
    o.dir = args.output_dir.clone();
    match args.stopwatch {
        Some(w) if !(w > 0.0 && w < 1e9) => return usage("-w wants a positive number of seconds"),
        Some(w) => o.stopwatch = Some(Duration::from_secs_f64(w)),
        None => {}
    }
    // The per-CPU ring buffer takes the relay buffer's total: -b x -n.
    match crate::cli::parse_size(&args.buffer_size) {
        Some(b) if b >= 4096 => {
            o.buffer_kb = (b / 1024).saturating_mul(args.num_sub_buffers.max(1))
        }
        _ => return usage("-b wants a size such as 512K"),
    }
    let mut stderr = io::stderr().lock();
    let report = match record(&o, stop, &mut stderr) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("grtrace: {e}");
            return ExitCode::from(1);
        }
    };
    if pipe {
        let _ = crate::summary::print_stats(&report, &mut stderr);
    } else {
        let _ = crate::summary::print_stats(&report, &mut io::stdout().lock());
    }
    let _ = crate::summary::print_drop_warnings(&report, &mut stderr);
    if args.verbose {
        let _ = crate::summary::print_perf(&report, &mut stderr);
    }
    match &report.failure {
        Some(e) => {
            eprintln!("grtrace: {e}");
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    }
}
