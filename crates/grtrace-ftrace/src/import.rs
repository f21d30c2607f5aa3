//! Driving an import: the per-CPU event streams of a source, merged in time order, through
//! the [`Mapper`] into a [`Sink`]. Merging first means pairing across CPUs (a job queued on
//! one CPU and completed on another) sees events in the order they happened.

use std::io;

use crate::map::{MapStats, Mapper, Seen, Sink};
use crate::page::Missed;
use crate::tracedat::{CpuStream, DatError, Next, TraceDat};

/// Why an import stopped early. Everything before it was written.
#[derive(Debug)]
pub enum ImportError {
    /// The input is damaged or unsupported at this file offset.
    Input(DatError),
    /// Writing the output failed.
    Output(io::Error),
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::Input(e) => e.fmt(f),
            ImportError::Output(e) => write!(f, "writing the output: {e}"),
        }
    }
}

/// How an import that read to the end ends: Ok, or the damage first in the file, naming
/// how many more `streams` (`damaged CPU streams`) were damaged too.
pub(crate) fn damage_found(mut damage: Vec<DatError>, streams: &str) -> Result<(), ImportError> {
    damage.sort_by_key(|e| e.offset);
    let n = damage.len();
    match damage.into_iter().next() {
        None => Ok(()),
        Some(mut e) => {
            if n > 1 {
                e.msg.push_str(&format!(" (and {} more {streams})", n - 1));
            }
            Err(ImportError::Input(e))
        }
    }
}

/// What an import did.
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    /// Totals of the mapping.
    pub stats: MapStats,
    /// Every tracepoint seen, with its count and what it became.
    pub seen: Vec<Seen>,
}

/// Merges `streams` by time and maps every event. `mapper` must have been built from the
/// same trace's formats.
pub fn run<S: Sink>(
    mut streams: Vec<CpuStream<'_>>,
    mapper: &mut Mapper,
    sink: &mut S,
) -> Result<(), ImportError> {
    // A damaged CPU stream stops there; the others go on (their events are intact), and the
    // damage is reported at the end: the first offset, and how many CPUs were damaged.
    let mut damage: Vec<DatError> = Vec::new();
    let mut heads: Vec<Next> = Vec::with_capacity(streams.len());
    for s in streams.iter_mut() {
        heads.push(s.next().unwrap_or_else(|e| {
            damage.push(e);
            Next::End
        }));
    }
    let key = |n: &Next| match *n {
        Next::Event(t) | Next::Lost(_, t) => Some(t),
        Next::End => None,
    };
    // Each CPU's stream is in time order: the earliest head is the capture's start.
    if let Some(t) = heads.iter().filter_map(key).min() {
        sink.capture_start(t);
    }
    loop {
        // The stream with the earliest head, and the time up to which it may run alone.
        let Some((best, second)) = earliest(&heads, key) else {
            return damage_found(damage, "damaged CPU streams");
        };
        let s = &mut streams[best];
        loop {
            match heads[best] {
                Next::Event(t) => {
                    if t > second {
                        break;
                    }
                    match mapper.event(sink, s.cpu, t, s.event()) {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return Err(ImportError::Output(e)),
                        Err(e) => {
                            return Err(ImportError::Input(DatError {
                                offset: s.page_offset(),
                                msg: format!("CPU {}: {}", s.cpu, e),
                            }))
                        }
                    }
                }
                Next::Lost(m, t) => {
                    if t > second {
                        break;
                    }
                    let count = match m {
                        Missed::Count(n) => Some(n),
                        _ => None,
                    };
                    let first = s.last_ts;
                    mapper
                        .lost(sink, s.cpu, count, first, t)
                        .map_err(ImportError::Output)?;
                }
                Next::End => break,
            }
            heads[best] = match s.next() {
                Ok(n) => n,
                Err(e) => {
                    damage.push(e);
                    Next::End
                }
            };
        }
    }
}

/// The `NOTE_MSG` text that names an import's source (FORMAT.md §2.1, IMPORT.md §1);
/// `m`: what the source measures ([`Mapper::measures`](crate::map::Mapper::measures)):
/// `unmeasured` lists `submit_host` and `complete` unless it measures them (a kernel with
/// the upstream series), `gpu_wait` unless it shows the jobs' dependency waits.
/// `vm_fault` (no end event) and `preemption` (no tracepoint tells one) are always
/// unmeasured.
pub fn source_note(
    source: &str,
    tool: &str,
    recorder: &str,
    clock: &str,
    kernel: &str,
    m: crate::map::Measures,
) -> String {
    let mut unmeasured = Vec::new();
    if !m.submit_host {
        unmeasured.push("submit_host");
    }
    if !m.complete {
        unmeasured.push("complete");
    }
    unmeasured.push("vm_fault");
    if !m.gpu_wait {
        unmeasured.push("gpu_wait");
    }
    unmeasured.push("preemption");
    let mut s = format!(
        "grtrace-import: source={source}; tool={tool}; clock={clock}; start=inferred; \
         unmeasured={}",
        unmeasured.join(",")
    );
    if !recorder.is_empty() {
        s.push_str(&format!("; recorder={recorder}"));
    }
    if !kernel.is_empty() {
        s.push_str(&format!("; kernel={kernel}"));
    }
    s
}

/// The closing `NOTE_MSG` of an import, for what was known only at its end (IMPORT.md §1):
/// `late_ends=N` when N jobs ended at an event the CPU runs later than the GPU finished
/// (`i915_request_retire` without a fence signal); `not_mapped=N (...)` when N events of GPU
/// tracepoints were not used because their layout is not known (IMPORT.md §2), naming them.
/// None when there is nothing to say.
pub fn closing_note(m: &Mapper) -> Option<String> {
    let mut pairs = Vec::new();
    if m.stats.retire_ends > 0 {
        pairs.push(format!(
            "late_ends={} (i915_request_retire: no dma_fence_signaled)",
            m.stats.retire_ends
        ));
    }
    let n = m.not_mapped();
    if n > 0 {
        // `; ` separates the note's pairs: the events are joined with ` / `.
        let what: Vec<String> = (m.seen().iter())
            .filter(|s| s.count > 0)
            .filter_map(|s| Some(format!("{} {}: {}", s.name, s.count, s.unusable.as_ref()?)))
            .collect();
        pairs.push(format!("not_mapped={n} ({})", what.join(" / ")));
    }
    (!pairs.is_empty()).then(|| format!("grtrace-import: {}", pairs.join("; ")))
}

/// Describes a trace.dat for [`source_note`].
pub fn dat_source(t: &TraceDat<'_>) -> String {
    format!(
        "trace.dat v{} ({})",
        t.version,
        if t.data_compressed || t.codec.is_some() {
            t.compression_name.as_str()
        } else {
            "uncompressed"
        }
    )
}

/// The head with the earliest time among `heads` (`key`: a head's time, None for a stream
/// that ended), and the earliest time of the others (`u64::MAX` if none): how far that
/// stream may run alone in a merge of time-ordered streams. None when every stream ended.
pub(crate) fn earliest<T>(heads: &[T], key: impl Fn(&T) -> Option<u64>) -> Option<(usize, u64)> {
    let mut best: Option<(usize, u64)> = None;
    let mut second = u64::MAX;
    for (i, h) in heads.iter().enumerate() {
        let Some(t) = key(h) else { continue };
        match best {
            Some((_, bt)) if t >= bt => second = second.min(t),
            _ => {
                if let Some((_, bt)) = best {
                    second = second.min(bt);
                }
                best = Some((i, t));
            }
        }
    }
    best.map(|(i, _)| (i, second))
}
