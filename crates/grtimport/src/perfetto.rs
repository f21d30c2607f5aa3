//! Perfetto traces as input: the import through `grtrace_ftrace::perfetto` and its summary.

use std::io::{self, Write};
use std::process::ExitCode;

use grtrace_ftrace::import::{self, ImportError};
use grtrace_ftrace::out::{clock_id, Streams};
use grtrace_ftrace::perfetto::PerfettoImport;

use crate::{out_error, summary_tail, target, Args};

/// Imports the Perfetto trace `data` (named `name` in messages).
pub(crate) fn run(
    args: &Args,
    name: &str,
    data: &[u8],
    map: Option<&memmap2::Mmap>,
    to_stdout: bool,
) -> ExitCode {
    // Pages already read are dropped from the mapping so memory stays flat.
    let release = |off: usize, len: usize| {
        if let Some(m) = map {
            // SAFETY: a read-only shared file mapping; DONTNEED only drops the pages (a later
            // access reads them from the file again), and the reader hands over only ranges
            // it is done with.
            let _ =
                unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, off, len) };
        }
    };
    let mut pi = PerfettoImport::new_releasing(data, Some(&release));
    if pi.info.cpus.is_empty() && pi.info.packets > 0 && !pi.damaged() {
        let other: Vec<String> = pi
            .info
            .other_packets
            .iter()
            .map(|(n, c)| format!("{n} {c}"))
            .collect();
        eprintln!(
            "grtimport: {name}: a Perfetto trace without ftrace events ({}): record it with the linux.ftrace data source and the GPU events (gpu_scheduler/*, dma_fence/*, ...)",
            if other.is_empty() { "no packets of any data source".to_string() } else { other.join(", ") }
        );
        return ExitCode::from(1);
    }
    let clock = pi.info.clock;
    let Some(clock_no) = clock_id(clock) else {
        eprintln!("grtimport: {name}: events on an ftrace clock grtrace cannot name ({clock})");
        return ExitCode::from(1);
    };
    // Perfetto writes only the events that happened (as text shows them): any scheduler
    // event stands for the dependency events, as for text.
    let note = import::source_note(
        &pi.source(),
        concat!("grtimport ", env!("CARGO_PKG_VERSION")),
        "",
        clock,
        "",
        pi.mapper.sees_dependencies(true),
    );
    let target = match target(args, to_stdout) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let mut sink = match Streams::new(target, &pi.mapper.drivers(), clock_no, note) {
        Ok(s) => s,
        Err(e) => return out_error(e),
    };
    for &cpu in &pi.info.cpus {
        if let Err(e) = sink.open_cpu(cpu) {
            return out_error(e);
        }
    }
    for (pid, comm) in pi.comms() {
        sink.set_comm(*pid, comm);
    }
    let result = pi.run(&mut sink);
    let lost = pi.mapper.stats.lost_events;
    sink.end_capture(&pi.mapper);
    let outputs = match sink.finish(lost) {
        Ok(o) => o,
        Err(e) if grtrace_cli::is_broken_pipe(&e) => return ExitCode::SUCCESS,
        Err(e) => return out_error(e),
    };
    if !args.quiet {
        let _ = summary(&mut io::stderr().lock(), &pi, &outputs);
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

/// The summary of a Perfetto import: what each tracepoint became, what was skipped (other
/// events, compact sched, other packets), losses and the clock.
fn summary(
    w: &mut dyn Write,
    pi: &PerfettoImport<'_>,
    outputs: &[(String, u64, u64)],
) -> io::Result<()> {
    let info = &pi.info;
    writeln!(
        w,
        "grtimport: {} ({} CPUs, clock {}: {})",
        pi.source(),
        info.cpus.len(),
        info.clock,
        info.clock_how
    )?;
    let m = &pi.mapper;
    // other tracepoints' events are named below, with the packets and events skipped
    crate::seen_lines(w, m)?;
    let mut skipped: Vec<String> = info
        .skipped
        .iter()
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    if info.compact_sched > 0 {
        skipped.push(format!(
            "sched (compact_sched, no GPU data) {}",
            info.compact_sched
        ));
    }
    if !skipped.is_empty() {
        writeln!(w, "  not GPU events (skipped): {}", skipped.join(", "))?;
    }
    if !info.other_packets.is_empty() {
        let p: Vec<String> = info
            .other_packets
            .iter()
            .map(|(n, c)| format!("{n} {c}"))
            .collect();
        writeln!(w, "  packets not imported (skipped): {}", p.join(", "))?;
    }
    if !info.stats_lost.is_empty() {
        let l: Vec<String> = info
            .stats_lost
            .iter()
            .map(|(cpu, n)| format!("CPU {cpu}: {n}"))
            .collect();
        writeln!(
            w,
            "  ftrace_stats: events overrun or dropped by the kernel: {}",
            l.join(", ")
        )?;
    }
    let st = &m.stats;
    writeln!(
        w,
        "  {} events in, {} records out, {} jobs handed to drivers, {} starts inferred",
        st.events_in, st.records_out, st.jobs_started, st.inferred_starts
    )?;
    summary_tail(w, st, outputs)
}
