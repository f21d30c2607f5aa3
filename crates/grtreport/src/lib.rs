//! # grtreport
//!
//! Turns a grtrace event stream into GPU jobs keyed by `<ctx, ring, seqno>`, splits each
//! job's life into the phases of JOBS.md §2 (submit_host, queue, exec, complete,
//! gpu_wait, vm_fault, total), tags what blocked it (host-submit, queue-wait, exec-tail,
//! dep-wait, vm-fault, preempt-thrash) and summarises per ring and per context, btt-style.
//!
//! The rooms, each importing only the ones above it in this list (no circle: engine never
//! imports a printer, printers read the engine and the model):
//!
//! * Below the pipeline: [`job`] (a job, its phases, tags and flags), [`rules`], [`units`]
//!   (ms, seconds since the origin, shares), [`utilisation`] (busy/idle sums per ring and
//!   context), [`measurable`] (what a recording's event codes can measure).
//! * The pipeline: [`joiner`] (records in, finished jobs out, memory bounded by the jobs in
//!   flight), [`classify`] (tags), [`critical`] (`--critical-path`), [`summary`]
//!   (hdrhistogram statistics per ring / context / phase), tied together by [`engine`], which
//!   hands jobs to a [`JobSink`](engine::JobSink), interval rows to an
//!   [`IntervalSink`](engine::IntervalSink) and records to a [`Timeline`](engine::Timeline).
//! * The model: [`report`], what a report says (utilisation rows, verdicts, hints), built by
//!   the engine after the run and shared by the text report, `--json` and the page.
//! * The printers, each taking the engine by reference: [`output`] (the text report),
//!   [`json`] (`--json`), [`rows`] (`--jobs` lines, `--csv` rows, `--interval` rows: the
//!   sinks), [`perfetto`] and [`html`] (the timeline exports, with [`timeline`] and
//!   [`jsonw`]; [`perfetto_pb`]: `--perfetto` as Perfetto's protobuf trace, drawn on a
//!   thread of its own by [`perfetto_feed`], encoded a packet sequence per chunk by
//!   [`perfetto_seq`] and compressed by [`perfetto_zip`] on worker threads), opened for the
//!   command line by [`export`]; [`processes`] (the Per Process table) is part of the
//!   summary, and [`dataset`] writes the `--parquet` tables (SCHEMA.md) through [`table`]
//!   (one Parquet file, row groups flushed on a thread of its own as they fill).
//! * Around them: [`input`] feeds the trace through the engines (the merge on a second
//!   thread for files; [`handover`]: the queues between the threads); [`cli`] is the
//!   command line.
// issue 23: documented after the restructuring
#![allow(missing_docs)]
#![allow(rustdoc::private_intra_doc_links)]

pub mod classify;
pub mod cli;
pub mod columns;
pub mod critical;
pub mod dataset;
pub mod engine;
pub mod export;
pub mod handover;
pub mod html;
pub mod input;
pub mod job;
pub mod joiner;
pub mod json;
pub mod jsonw;
pub mod measurable;
mod order;
pub mod output;
pub mod perfetto;
pub mod perfetto_feed;
pub mod perfetto_pb;
mod perfetto_proto;
mod perfetto_seq;
mod perfetto_zip;
pub mod processes;
pub mod report;
pub mod rows;
pub mod rules;
pub mod summary;
pub mod table;
pub mod timeline;
pub mod units;
pub mod utilisation;

pub use engine::{Engine, Filter};
pub use job::{Flags, Job, JobKey, Phases, Tags};
pub use rules::Rules;

/// Threads an output may take for work beside the report's (Parquet encoders, Perfetto
/// compression): one per four CPUs, since the report's own threads keep the others busy,
/// at least `least` (what the output needs whatever the machine), at most `most`.
pub(crate) fn spare_threads(least: usize, most: usize) -> usize {
    (cpus() / 4).clamp(least, most)
}

/// The CPUs this process may run on (1 when that cannot be told).
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
