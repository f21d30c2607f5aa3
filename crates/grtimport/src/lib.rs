//! The `grtimport` command line: argument checks (usage errors exit 2), input detection,
//! the import through `grtrace_ftrace`, and the summary on stderr.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use grtrace_ftrace::import::{self, ImportError};
use grtrace_ftrace::map::Mapper;
use grtrace_ftrace::out::{clock_id, Streams, Target};
use grtrace_ftrace::text::{TextErrorOrIo, TextImport};
use grtrace_ftrace::tracedat::{TraceDat, MAGIC};

mod perfetto;

/// Import GPU tracepoints recorded on a stock kernel into grtrace streams.
///
/// INPUT is a trace-cmd trace.dat (version 6 or 7, compressed or not), a Perfetto trace
/// (`.perfetto-trace`, `.pftrace`: its ftrace events, zlib-compressed packets too), or text
/// from `trace-cmd report` or tracefs `trace` / `trace_pipe`, told apart by content. The events are
/// decoded from the formats the file carries and mapped as IMPORT.md says: DRM scheduler
/// jobs, dma_fence signals and waits, virtio-gpu commands, amdgpu and lima names, amdgpu
/// faults, i915, xe, msm and v3d jobs.
/// The output is BASE.grtrace.<cpu>, read by grtparse and grtreport as they are.
///
/// Examples:
///   trace-cmd record -e gpu_scheduler -e dma_fence -e virtio_gpu -o trace.dat sleep 10
///   grtimport trace.dat -o run && grtreport run
///   grtimport trace.dat -o - | grtreport -i -
///   grtimport capture.perfetto-trace -o run && grtreport run
#[derive(Parser, Debug)]
#[command(name = "grtimport", version, verbatim_doc_comment)]
pub struct Args {
    /// trace.dat file, Perfetto trace or trace text (`-` reads it from stdin)
    #[arg(value_name = "INPUT", required_unless_present = "completions")]
    pub input: Option<String>,
    /// Output base name: BASE.grtrace.<cpu>; `-` writes one merged stream to stdout.
    /// Default: INPUT without its extension
    #[arg(short = 'o', long = "output", value_name = "BASE")]
    pub output: Option<String>,
    /// Directory for the output files (created if missing)
    #[arg(short = 'D', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Print no summary
    #[arg(short = 'q', long)]
    pub quiet: bool,
    #[command(flatten)]
    pub completions: grtrace_cli::CompletionArgs,
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("grtimport: {msg}\nTry 'grtimport --help' for more information.");
    ExitCode::from(2)
}

/// Runs grtimport; returns the exit code (0 ok, 1 runtime error, 2 usage error).
pub fn run(args: &Args) -> ExitCode {
    let Some(input) = args.input.as_deref() else {
        return usage("no INPUT given");
    };
    let to_stdout = args.output.as_deref() == Some("-");
    if to_stdout && io::IsTerminal::is_terminal(&io::stdout()) {
        return usage("-o - writes binary records: pipe them into `grtparse -i -` or a file");
    }
    if to_stdout && args.output_dir.is_some() {
        return usage("-D makes no sense with -o -");
    }
    let name = if input == "-" {
        "<stdin>".to_string()
    } else {
        input.to_string()
    };
    // The file is mapped; stdin is read into memory (it cannot be mapped).
    let owned;
    let map;
    let mut map_ref: Option<&memmap2::Mmap> = None;
    let data: &[u8] = if input == "-" {
        let mut v = Vec::new();
        if let Err(e) = io::stdin().lock().read_to_end(&mut v) {
            eprintln!("grtimport: reading stdin: {e}");
            return ExitCode::from(1);
        }
        owned = v;
        &owned
    } else {
        let f = match File::open(input) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("grtimport: {input}: {e}");
                return ExitCode::from(1);
            }
        };
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            // Not "No such device", which is what mapping a directory says.
            eprintln!(
                "grtimport: {input}: is a directory: give a trace.dat file or trace text in it ({}/trace.dat)",
                input.trim_end_matches('/')
            );
            return ExitCode::from(1);
        }
        // SAFETY: the file is only read; a trace.dat being rewritten while imported is the
        // user's race, as with any reader (a shrinking file can fault: documented).
        map = match unsafe { memmap2::Mmap::map(&f) } {
            Ok(m) => m,
            Err(_) if f.metadata().map(|m| m.len() == 0).unwrap_or(false) => {
                eprintln!("grtimport: {name}: offset 0: empty file");
                return ExitCode::from(1);
            }
            Err(e) => {
                eprintln!("grtimport: {name}: {e}");
                return ExitCode::from(1);
            }
        };
        map_ref = Some(&map);
        &map
    };
    if data.is_empty() {
        eprintln!("grtimport: {name}: offset 0: empty file");
        return ExitCode::from(1);
    }
    if data.len() < MAGIC.len() || data[..MAGIC.len()] != MAGIC {
        if grtrace_ftrace::perfetto::looks_like_perfetto(data) {
            return perfetto::run(args, &name, data, map_ref, to_stdout);
        }
        return run_text(args, &name, data, to_stdout);
    }
    let dat = match TraceDat::parse(data) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("grtimport: {name}: {e}");
            return ExitCode::from(1);
        }
    };
    for w in &dat.warnings {
        eprintln!("grtimport: {name}: warning: {w}");
    }
    let Some(clock) = clock_id(&dat.clock) else {
        eprintln!(
            "grtimport: {name}: trace clock `{}` does not count nanoseconds; record with -C local, mono or boot",
            dat.clock
        );
        return ExitCode::from(1);
    };
    let mut mapper = Mapper::new(dat.endian, &dat.formats);
    let note = import::source_note(
        &import::dat_source(&dat),
        concat!("grtimport ", env!("CARGO_PKG_VERSION")),
        &if dat.tracecmd_version.is_empty() {
            String::new()
        } else {
            format!("trace-cmd {}", dat.tracecmd_version)
        },
        &dat.clock,
        &dat.uname,
        mapper.sees_dependencies(false),
    );
    let target = match target(args, to_stdout) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let mut sink = match Streams::new(target, &mapper.drivers(), clock, note) {
        Ok(s) => s,
        Err(e) => return out_error(e),
    };
    // A stream for every CPU of the machine, idle ones included (trace-cmd 3.1 leaves CPUs
    // without data out of a v7 BUFFER option), so that readers see the whole CPU set.
    let mut cpus: Vec<u32> = dat
        .cpus
        .iter()
        .map(|c| c.cpu)
        .chain(0..dat.cpu_count)
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in cpus {
        if let Err(e) = sink.open_cpu(cpu) {
            return out_error(e);
        }
    }
    for (pid, comm) in &dat.cmdlines {
        sink.set_comm(*pid, comm);
    }
    // Pages already decoded are dropped from the mapping so memory stays flat.
    let release = |off: usize, len: usize| {
        if let Some(m) = &map_ref {
            // SAFETY: a read-only shared file mapping; DONTNEED only drops the pages (a later
            // access would read them from the file again), and no stream refers to a range it
            // has handed to this hook.
            let _ =
                unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, off, len) };
        }
    };
    let result = match import::run(dat.streams_releasing(&release), &mut mapper, &mut sink) {
        Err(ImportError::Output(e)) if grtrace_cli::is_broken_pipe(&e) => return ExitCode::SUCCESS,
        // No file of an output that failed is left behind to be read as a whole import.
        Err(ImportError::Output(e)) => return out_error(sink.discard_after(e)),
        r => r,
    };
    let lost = mapper.stats.lost_events;
    no_gpu_events(&name, &mapper.stats);
    sink.end_capture(&mapper);
    let outputs = match sink.finish(lost) {
        Ok(o) => o,
        Err(e) if grtrace_cli::is_broken_pipe(&e) => return ExitCode::SUCCESS,
        Err(e) => return out_error(e),
    };
    if !args.quiet {
        let _ = summary(&mut io::stderr().lock(), &mapper, &dat, &outputs);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(ImportError::Output(e)) if grtrace_cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(ImportError::Output(e)) => out_error(e),
        Err(ImportError::Input(e)) => {
            eprintln!("grtimport: {name}: {e} (everything before it was imported)");
            ExitCode::from(1)
        }
    }
}

/// The output of `args` (files or stdout).
fn target(args: &Args, to_stdout: bool) -> Result<Target, ExitCode> {
    if to_stdout {
        return Ok(Target::Merged(Box::new(io::BufWriter::with_capacity(
            1 << 20,
            io::stdout(),
        ))));
    }
    let base = args
        .output
        .clone()
        .unwrap_or_else(|| default_base(args.input.as_deref().unwrap_or("-")));
    let base = match &args.output_dir {
        Some(d) => {
            if let Err(e) = std::fs::create_dir_all(d) {
                eprintln!("grtimport: {}: {e}", d.display());
                return Err(ExitCode::from(1));
            }
            d.join(base)
        }
        None => PathBuf::from(base),
    };
    refuse_overwriting_the_input(args.input.as_deref().unwrap_or("-"), &base)?;
    Ok(Target::Files(base))
}

/// The input file (mapped while the output is written) must not be one of the
/// `BASE.grtrace.<cpu>` files about to be created: `grtimport run.grtrace.0 -o run` would
/// truncate what it reads. Only the CPU number the input's own name ends in can collide.
fn refuse_overwriting_the_input(input: &str, base: &Path) -> Result<(), ExitCode> {
    let Some(cpu) = input
        .rsplit_once(".grtrace.")
        .and_then(|(_, n)| n.parse::<u32>().ok())
    else {
        return Ok(());
    };
    let mut read = grtrace_cli::Inputs::new();
    read.add(input);
    read.check_output("-o", Streams::file_name(base, cpu))
        .map_err(|e| {
            eprintln!("grtimport: {e}");
            ExitCode::from(1)
        })
}

/// `trace-cmd report` or tracefs `trace` text: read line by line (stdin streams).
fn run_text(args: &Args, name: &str, data: &[u8], to_stdout: bool) -> ExitCode {
    if data.contains(&0) {
        let at = data.iter().position(|&b| b == 0).unwrap_or(0);
        eprintln!(
            "grtimport: {name}: offset {at}: neither a trace.dat file nor trace text (binary data)"
        );
        return ExitCode::from(1);
    }
    // systrace/atrace HTML and Catapult JSON carry the ftrace text inside
    let unwrapped = grtrace_ftrace::text::unwrap_container(data);
    let (data, source) = match &unwrapped {
        Some((c, text)) => (text.as_slice(), c.name()),
        None => (data, "text (trace-cmd report / tracefs trace)"),
    };
    let mut ti = TextImport::for_text(data);
    let note = import::source_note(
        source,
        concat!("grtimport ", env!("CARGO_PKG_VERSION")),
        "",
        "unknown",
        "",
        ti.mapper.sees_dependencies(true),
    );
    let target = match target(args, to_stdout) {
        Ok(t) => t,
        Err(c) => return c,
    };
    // Text does not name its clock: the header says so with clock id 0.
    let mut sink = match Streams::new(target, &ti.mapper.drivers(), 0, note) {
        Ok(s) => s,
        Err(e) => return out_error(e),
    };
    let result = match ti.run(data, &mut sink) {
        Err(TextErrorOrIo::Io(e)) if grtrace_cli::is_broken_pipe(&e) => return ExitCode::SUCCESS,
        Err(TextErrorOrIo::Io(e)) => return out_error(sink.discard_after(e)),
        r => r,
    };
    no_gpu_events(name, &ti.mapper.stats);
    if ti.mapper.stats.records_out == 0 {
        // As from a trace.dat: a capture without GPU events is still written (one stream:
        // text does not say which CPUs the machine had), so that the readers say so too.
        if let Err(e) = sink.open_cpu(0) {
            return out_error(e);
        }
    }
    sink.end_capture(&ti.mapper);
    let outputs = match sink.finish(ti.mapper.stats.lost_events) {
        Ok(o) => o,
        Err(e) if grtrace_cli::is_broken_pipe(&e) => return ExitCode::SUCCESS,
        Err(e) => return out_error(e),
    };
    if !args.quiet {
        let st = &ti.mapper.stats;
        eprintln!(
            "grtimport: text, {} lines: {} GPU events in, {} other events skipped, {} records out, {} starts inferred",
            ti.lines, st.events_in, ti.other_lines, st.records_out, st.inferred_starts
        );
        let mut err = io::stderr().lock();
        let _ = not_mapped(&mut err, &ti.mapper);
        let _ = summary_tail(&mut err, st, &outputs);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(TextErrorOrIo::Io(e)) if grtrace_cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(TextErrorOrIo::Io(e)) => out_error(e),
        Err(TextErrorOrIo::Text(e)) => {
            eprintln!("grtimport: {name}: {e} (everything before it was imported)");
            ExitCode::from(1)
        }
    }
}

/// Says plainly, whatever the input and -q, that a capture had no GPU event (its streams
/// are written all the same, holding only notes).
fn no_gpu_events(name: &str, st: &grtrace_ftrace::map::MapStats) {
    if st.records_out == 0 {
        grtrace_cli::warning(
            "grtimport",
            format_args!("{name}: no GPU events: none of its events is of a GPU tracepoint grtimport maps (IMPORT.md); the streams written hold no job"),
        );
    }
}

/// A failed output: the error names the file (and what was removed).
fn out_error(e: io::Error) -> ExitCode {
    grtrace_cli::error("grtimport", e);
    ExitCode::from(1)
}

/// `trace.dat` -> `trace`, `dir/run.dat` -> `run` (written in the current directory).
fn default_base(input: &str) -> String {
    if input == "-" {
        return "imported".into();
    }
    Path::new(input)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into())
}

/// The blkparse-style summary: what each tracepoint became, what was not mapped, losses.
pub fn summary(
    w: &mut dyn Write,
    m: &Mapper,
    dat: &TraceDat<'_>,
    outputs: &[(String, u64, u64)],
) -> io::Result<()> {
    writeln!(
        w,
        "grtimport: {} ({} CPUs, clock {})",
        import::dat_source(dat),
        dat.cpus.len(),
        dat.clock
    )?;
    let unmapped = seen_lines(w, m)?;
    if !unmapped.is_empty() {
        writeln!(w, "  not GPU events (skipped): {}", unmapped.join(", "))?;
    }
    if m.stats.unknown_ids > 0 {
        writeln!(
            w,
            "  {} events with an id the file has no format for (skipped)",
            m.stats.unknown_ids
        )?;
    }
    for b in &dat.bad_formats {
        writeln!(w, "  unreadable format: {b}")?;
    }
    let st = &m.stats;
    writeln!(
        w,
        "  {} events in, {} records out, {} jobs handed to drivers, {} starts inferred",
        st.events_in, st.records_out, st.jobs_started, st.inferred_starts
    )?;
    summary_tail(w, st, outputs)
}

/// The GPU tracepoints of a text whose layout is not known (IMPORT.md §2): counted and
/// named, never mapped with a guessed identity.
/// A summary line per tracepoint seen: what it became, or why its layout is not mapped; the
/// events of other tracepoints (`system:name count`) are returned for one closing line.
pub(crate) fn seen_lines(w: &mut dyn Write, m: &Mapper) -> io::Result<Vec<String>> {
    let mut unmapped = Vec::new();
    for s in m.seen() {
        match (&s.kind, &s.unusable) {
            (Some(k), _) if s.count > 0 => {
                writeln!(w, "  {:>10}  {}:{}  -> {:?}", s.count, s.system, s.name, k)?
            }
            (None, Some(why)) if s.count > 0 => writeln!(
                w,
                "  {:>10}  {}:{}  not mapped: {why}",
                s.count, s.system, s.name
            )?,
            (None, None) if s.count > 0 => {
                unmapped.push(format!("{}:{} {}", s.system, s.name, s.count))
            }
            _ => {}
        }
    }
    Ok(unmapped)
}

fn not_mapped(w: &mut dyn Write, m: &Mapper) -> io::Result<()> {
    for s in m.seen().iter().filter(|s| s.kind.is_none() && s.count > 0) {
        if let Some(why) = &s.unusable {
            writeln!(
                w,
                "  {:>10}  {}:{}  not mapped: {why}",
                s.count, s.system, s.name
            )?;
        }
    }
    Ok(())
}

/// The end of both summaries (trace.dat and text): what the mapping skipped, what was
/// lost, what the capture could not tell, and the files written.
fn summary_tail(
    w: &mut dyn Write,
    st: &grtrace_ftrace::map::MapStats,
    outputs: &[(String, u64, u64)],
) -> io::Result<()> {
    if st.sched_duplicates > 0 {
        writeln!(
            w,
            "  {} DRM scheduler events of xe/msm/v3d queues skipped: the drivers' own job events name those jobs",
            st.sched_duplicates
        )?;
    }
    if st.lost_events > 0 || st.lost_unknown > 0 {
        writeln!(
            w,
            "You have {} lost events{} in the trace: jobs across them are marked lost",
            st.lost_events,
            if st.lost_unknown > 0 {
                format!(" (+{} markers without a count)", st.lost_unknown)
            } else {
                String::new()
            }
        )?;
    }
    caveats(w, st)?;
    for (p, r, b) in outputs {
        writeln!(w, "  wrote {p}: {r} records, {} KiB", b.div_ceil(1024))?;
    }
    Ok(())
}

/// What the capture could not tell, said where the user reads the import's summary.
fn caveats(w: &mut dyn Write, st: &grtrace_ftrace::map::MapStats) -> io::Result<()> {
    if st.retire_ends > 0 {
        writeln!(
            w,
            "  {} i915 requests end at i915_request_retire, which runs when the CPU gets to it (next submission, retire worker): their exec includes that delay; record dma_fence (dma_fence_signaled) for the completion",
            st.retire_ends
        )?;
    }
    Ok(())
}
