//! Perfetto traces as input: the import through `grtrace_ftrace::perfetto` and its summary.

use std::io::{self, Write};

use grtrace_cli::Failure;
use grtrace_format::MappedFile;
use grtrace_ftrace::import::{self, ImportError};
use grtrace_ftrace::out::{clock_id, Streams, Target};
use grtrace_ftrace::perfetto::PerfettoImport;

use crate::outputs::{input_error, output, shrank, IntoResult};
use crate::summary::{counts_and_tail, seen_lines};

/// Imports the Perfetto trace `data` (named `name` in messages; `map`: the file's mapping,
/// whose pages are released once read) into the streams `target` makes, once the trace is
/// known to hold events it can name; the summary on stderr unless `quiet`.
pub(crate) fn run(
    name: &str,
    data: &[u8],
    map: Option<&MappedFile>,
    quiet: bool,
    target: impl FnOnce() -> Result<Target, Failure>,
) -> Result<(), Failure> {
    // Pages already read are dropped from the mapping so memory stays flat (the reader
    // hands over only ranges it is done with).
    let release = |off: usize, len: usize| {
        if let Some(m) = map {
            m.release(off, len);
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
        return Err(Failure::Runtime(format!(
            "{name}: a Perfetto trace without ftrace events ({}): record it with the linux.ftrace data source and the GPU events (gpu_scheduler/*, dma_fence/*, ...)",
            if other.is_empty() { "no packets of any data source".to_string() } else { other.join(", ") }
        )));
    }
    let clock = pi.info.clock;
    let Some(clock_no) = clock_id(clock) else {
        return Err(Failure::Runtime(format!(
            "{name}: events on an ftrace clock grtrace cannot name ({clock})"
        )));
    };
    // Perfetto writes only the events that happened (as text shows them): any scheduler
    // event stands for the dependency events, as for text.
    let note = import::source_note(
        &pi.source(),
        concat!("grtimport ", env!("CARGO_PKG_VERSION")),
        "",
        clock,
        "",
        pi.mapper.measures(true),
    );
    let mut sink = Streams::new(target()?, &pi.mapper.drivers(), clock_no, note).map_err(output)?;
    for &cpu in &pi.info.cpus {
        sink.open_cpu(cpu).map_err(output)?;
    }
    for (pid, comm) in pi.comms() {
        sink.set_comm(*pid, comm);
    }
    let result = pi.run(&mut sink);
    let lost = pi.mapper.stats.lost_events;
    sink.end_capture(&pi.mapper);
    let outputs = match sink.finish(lost) {
        Ok(o) => o,
        Err(e) => return output(e).into_result(),
    };
    if !quiet {
        let _ = summary(&mut io::stderr().lock(), &pi, &outputs);
    }
    match result {
        Ok(()) => shrank(name, map),
        Err(ImportError::Output(e)) => output(e).into_result(),
        Err(ImportError::Input(e)) => Err(input_error(name, e, map)),
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
    seen_lines(w, m)?;
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
    list_line(w, "not GPU events (skipped)", skipped)?;
    let packets = info.other_packets.iter().map(|(n, c)| format!("{n} {c}"));
    list_line(w, "packets not imported (skipped)", packets)?;
    let lost = info
        .stats_lost
        .iter()
        .map(|(cpu, n)| format!("CPU {cpu}: {n}"));
    list_line(
        w,
        "ftrace_stats: events overrun or dropped by the kernel",
        lost,
    )?;
    counts_and_tail(w, &m.stats, outputs)
}

/// A summary line `  LABEL: a, b, c` of `items`; none where there are no items.
fn list_line(
    w: &mut dyn Write,
    label: &str,
    items: impl IntoIterator<Item = String>,
) -> io::Result<()> {
    let items: Vec<String> = items.into_iter().collect();
    if items.is_empty() {
        return Ok(());
    }
    writeln!(w, "  {label}: {}", items.join(", "))
}
