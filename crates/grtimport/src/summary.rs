//! The summaries an import prints on standard error (blkparse-style): what each tracepoint
//! became, what was not mapped, losses, what the capture could not tell, the files written.

use std::io::{self, Write};

use grtrace_ftrace::import;
use grtrace_ftrace::map::Mapper;
use grtrace_ftrace::tracedat::TraceDat;

/// Says plainly, whatever the input and -q, that a capture had no GPU event (its streams
/// are written all the same, holding only notes).
pub(crate) fn no_gpu_events(name: &str, st: &grtrace_ftrace::map::MapStats) {
    if st.records_out == 0 {
        grtrace_cli::warning(
            "grtimport",
            format_args!("{name}: no GPU events: none of its events is of a GPU tracepoint grtimport maps (IMPORT.md); the streams written hold no job"),
        );
    }
}

/// The blkparse-style summary: what each tracepoint became, what was not mapped, losses.
pub(crate) fn summary(
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
    counts_and_tail(w, &m.stats, outputs)
}

/// The end of the trace.dat and Perfetto summaries: what went in and out, then
/// [`summary_tail`].
pub(crate) fn counts_and_tail(
    w: &mut dyn Write,
    st: &grtrace_ftrace::map::MapStats,
    outputs: &[(String, u64, u64)],
) -> io::Result<()> {
    writeln!(
        w,
        "  {} events in, {} records out, {} jobs handed to drivers, {} starts inferred",
        st.events_in, st.records_out, st.jobs_started, st.inferred_starts
    )?;
    summary_tail(w, st, outputs)
}

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

/// The GPU tracepoints of a text whose layout is not known (IMPORT.md §2): counted and
/// named, never mapped with a guessed identity.
pub(crate) fn not_mapped(w: &mut dyn Write, m: &Mapper) -> io::Result<()> {
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
pub(crate) fn summary_tail(
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
