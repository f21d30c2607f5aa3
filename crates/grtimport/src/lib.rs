//! The `grtimport` command line: argument checks (usage errors exit 2), input detection and
//! the imports of trace.dat and text through `grtrace_ftrace`; Perfetto traces in
//! `perfetto.rs`. Below them: where the streams go (`outputs.rs`) and the summaries on stderr
//! (`summary.rs`). Every failure ends on the shared error path ([`Failure`]).

use std::fs::File;
use std::io::{self, Read, Write};

use clap::Parser;
use grtrace_cli::Failure;
use grtrace_format::MappedFile;
use grtrace_ftrace::import::{self, ImportError};
use grtrace_ftrace::map::Mapper;
use grtrace_ftrace::out::{clock_id, Streams};
use grtrace_ftrace::text::{TextErrorOrIo, TextImport};
use grtrace_ftrace::tracedat::{TraceDat, MAGIC};

mod outputs;
mod perfetto;
mod summary;

use crate::outputs::{input_error, output, output_target, shrank, IntoResult};
use crate::summary::{no_gpu_events, not_mapped, summary, summary_tail};

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
// The doc comment is the `--help` text, where `<cpu>` is meant as written, not as HTML.
#[allow(rustdoc::invalid_html_tags)]
#[derive(Parser, Debug)]
#[command(name = "grtimport", version, verbatim_doc_comment)]
#[command(
    mut_arg("quiet", |a| a.help("Print no summary")),
    mut_arg("output", |a| a.help(
        "Output base name: BASE.grtrace.<cpu>; `-` writes one merged stream to stdout.\n\
         Default: INPUT without its extension"
    )),
)]
pub struct Args {
    /// trace.dat file, Perfetto trace or trace text (`-` reads it from stdin)
    #[arg(value_name = "INPUT", required_unless_present = "completions")]
    pub input: Option<String>,
    #[command(flatten)]
    /// Where the streams go (`-o BASE`, `-D DIR`).
    pub out: grtrace_cli::BaseOutputArgs,
    #[command(flatten)]
    /// `-q`: no summary.
    pub quiet: grtrace_cli::QuietArgs,
    #[command(flatten)]
    /// `--completions SHELL`.
    pub completions: grtrace_cli::CompletionArgs,
}

const PROG: &str = "grtimport";

/// Runs grtimport: the import of INPUT into streams, its summary on stderr.
pub fn run(args: &Args) -> Result<(), Failure> {
    let Some(input) = args.input.as_deref() else {
        return Err(Failure::Usage("no INPUT given".into()));
    };
    args.out.check().map_err(Failure::Usage)?;
    let name = if input == "-" {
        "<stdin>".to_string()
    } else {
        input.to_string()
    };
    // The file is mapped (with grtrace-format's SIGBUS guard: a file that shrinks while it
    // is imported is an error naming the byte, not a crash); stdin is read into memory.
    let owned;
    let map;
    let mut map_ref: Option<&MappedFile> = None;
    let data: &[u8] = if input == "-" {
        let mut v = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut v)
            .map_err(|e| format!("reading stdin: {e}"))?;
        owned = v;
        &owned
    } else {
        let mut f = File::open(input).map_err(|e| format!("{input}: {e}"))?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            // Not "No such device", which is what mapping a directory says.
            return Err(Failure::Runtime(format!(
                "{input}: is a directory: give a trace.dat file or trace text in it ({}/trace.dat)",
                input.trim_end_matches('/')
            )));
        }
        match MappedFile::map(&f, input) {
            Ok(Some(m)) => {
                map = m;
                map_ref = Some(&map);
                map.bytes()
            }
            // Empty, or not to be guarded: read (an empty file is said so below).
            Ok(None) => {
                let mut v = Vec::new();
                f.read_to_end(&mut v).map_err(|e| format!("{name}: {e}"))?;
                owned = v;
                &owned
            }
            Err(_) if f.metadata().map(|m| m.len() == 0).unwrap_or(false) => {
                return Err(Failure::Runtime(format!("{name}: offset 0: empty file")));
            }
            Err(e) => return Err(Failure::Runtime(format!("{name}: {e}"))),
        }
    };
    if data.is_empty() {
        return Err(Failure::Runtime(format!("{name}: offset 0: empty file")));
    }
    if data.len() < MAGIC.len() || data[..MAGIC.len()] != MAGIC {
        if grtrace_ftrace::perfetto::looks_like_perfetto(data) {
            return perfetto::run(&name, data, map_ref, args.quiet.quiet, || {
                output_target(&args.out, input)
            });
        }
        return run_text(args, &name, data, map_ref);
    }
    let dat = TraceDat::parse(data).map_err(|e| match shrank(&name, map_ref) {
        Err(f) => f,
        Ok(()) => Failure::Runtime(format!("{name}: {e}")),
    })?;
    for w in &dat.warnings {
        grtrace_cli::error(PROG, format_args!("{name}: warning: {w}"));
    }
    let Some(clock) = clock_id(&dat.clock) else {
        return Err(Failure::Runtime(format!(
            "{name}: trace clock `{}` does not count nanoseconds; record with -C local, mono or boot",
            dat.clock
        )));
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
        mapper.measures(false),
    );
    let mut sink = Streams::new(
        output_target(&args.out, input)?,
        &mapper.drivers(),
        clock,
        note,
    )
    .map_err(output)?;
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
        sink.open_cpu(cpu).map_err(output)?;
    }
    for (pid, comm) in &dat.cmdlines {
        sink.set_comm(*pid, comm);
    }
    // Pages already decoded are dropped from the mapping so memory stays flat (no stream
    // refers to a range it has handed to this hook).
    let release = |off: usize, len: usize| {
        if let Some(m) = map_ref {
            m.release(off, len);
        }
    };
    let result = match import::run(dat.streams_releasing(&release), &mut mapper, &mut sink) {
        Err(ImportError::Output(e)) => return output(sink.discard_after(e)).into_result(),
        r => r,
    };
    let lost = mapper.stats.lost_events;
    no_gpu_events(&name, &mapper.stats);
    sink.end_capture(&mapper);
    let outputs = match sink.finish(lost) {
        Ok(o) => o,
        Err(e) => return output(e).into_result(),
    };
    if !args.quiet.quiet {
        let _ = summary(&mut io::stderr().lock(), &mapper, &dat, &outputs);
    }
    match result {
        Ok(()) => shrank(&name, map_ref),
        Err(ImportError::Output(e)) => output(e).into_result(),
        Err(ImportError::Input(e)) => Err(input_error(&name, e, map_ref)),
    }
}

/// `trace-cmd report` or tracefs `trace` text: read line by line (stdin streams).
fn run_text(args: &Args, name: &str, data: &[u8], map: Option<&MappedFile>) -> Result<(), Failure> {
    if let Some(at) = data.iter().position(|&b| b == 0) {
        // NULs where the file shrank under the scan are no binary data.
        shrank(name, map)?;
        return Err(Failure::Runtime(format!(
            "{name}: offset {at}: neither a trace.dat file nor trace text (binary data)"
        )));
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
        ti.mapper.measures(true),
    );
    let target = output_target(&args.out, args.input.as_deref().unwrap_or("-"))?;
    // Text does not name its clock: the header says so with clock id 0.
    let mut sink = Streams::new(target, &ti.mapper.drivers(), 0, note).map_err(output)?;
    let result = match ti.run(data, &mut sink) {
        Err(TextErrorOrIo::Io(e)) => return output(sink.discard_after(e)).into_result(),
        r => r,
    };
    no_gpu_events(name, &ti.mapper.stats);
    if ti.mapper.stats.records_out == 0 {
        // As from a trace.dat: a capture without GPU events is still written (one stream:
        // text does not say which CPUs the machine had), so that the readers say so too.
        sink.open_cpu(0).map_err(output)?;
    }
    sink.end_capture(&ti.mapper);
    let outputs = match sink.finish(ti.mapper.stats.lost_events) {
        Ok(o) => o,
        Err(e) => return output(e).into_result(),
    };
    if !args.quiet.quiet {
        let st = &ti.mapper.stats;
        let mut err = io::stderr().lock();
        let _ = writeln!(
            err,
            "grtimport: text, {} lines: {} GPU events in, {} other events skipped, {} records out, {} starts inferred",
            ti.lines, st.events_in, ti.other_lines, st.records_out, st.inferred_starts
        );
        let _ = not_mapped(&mut err, &ti.mapper);
        let _ = summary_tail(&mut err, st, &outputs);
    }
    shrank(name, map)?;
    match result {
        Ok(()) => Ok(()),
        Err(TextErrorOrIo::Io(e)) => output(e).into_result(),
        Err(TextErrorOrIo::Text(e)) => Err(Failure::Runtime(format!(
            "{name}: {e} (everything before it was imported)"
        ))),
    }
}
