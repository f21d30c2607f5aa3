//! # grtreport
//!
//! Turns a grtrace event stream into GPU jobs keyed by `<ctx, ring, seqno>`, splits each
//! job's life into the phases of JOBS.md §2 (submit_host, queue, exec, complete,
//! gpu_wait, vm_fault, total), tags what blocked it (host-submit, queue-wait, exec-tail,
//! dep-wait, vm-fault, preempt-thrash) and summarises per ring and per context, btt-style.
//!
//! * [`joiner`]: the streaming [`Joiner`](joiner::Joiner): records in, finished jobs out,
//!   memory bounded by the jobs in flight.
//! * [`classify`]: the [`Classifier`](classify::Classifier) and its [`Rules`](rules::Rules).
//! * [`summary`]: hdrhistogram statistics per ring / context / phase and the top classes.
//! * [`output`]: the text report, `--jobs` lines and CSV.
//! * [`engine`]: the pipeline that ties them together; [`cli`] is the command line.
//! * [`input`]: feeds the trace through the engines, the merge on a second thread for
//!   files; [`handover`]: the queues between the threads.
//! * [`perfetto`] and [`html`]: the timeline exports (`--perfetto`, `--html`), fed by the
//!   engine as a [`Timeline`](engine::Timeline) ([`perfetto_pb`]: `--perfetto` as Perfetto's
//!   protobuf trace); [`export`] opens them for the command line.

pub mod classify;
pub mod cli;
pub mod critical;
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
pub mod output;
pub mod perfetto;
pub mod perfetto_pb;
mod perfetto_proto;
pub mod rules;
pub mod summary;
pub mod timeline;
pub mod util;

pub use engine::{Engine, Filter};
pub use job::{Flags, Job, JobKey, Phases, Tags};
pub use rules::Rules;
