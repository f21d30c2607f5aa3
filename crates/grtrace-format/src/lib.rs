//! # grtrace-format
//!
//! The one definition of the grtrace on-disk record format and of the relay sub-buffer
//! protocol between the kernel and the recorder. `FORMAT.md` in this crate is the
//! specification; [`abi`] is its byte layout in Rust, and the kernel's uapi header is checked
//! against it byte for byte.
//!
//! * [`view`]: zero-copy, endian-aware views over stream bytes ([`RecordView`], [`Records`]).
//! * [`encode`]: the writer ([`StreamWriter`]), used by the recorder, the simulator and tests.
//! * [`builder`]: records made by hand with per-CPU sequence numbers ([`builder::Builder`]),
//!   for tests, the synthetic generator and the simulator's scenarios.
//! * [`error`]: typed decoding errors that name the byte offset.
//! * [`relay`]: the relay sub-buffer protocol (FORMAT.md §7) shared by recorder and simulator.
//! * [`synth`]: a deterministic synthetic workload (fixtures, benchmarks, tests).
//! * [`trace`]: whole traces: input discovery, mmapped or piped inputs, the k-way merge with
//!   per-CPU sequence-gap detection ([`Trace`], [`Item`]).

pub mod abi;
pub mod builder;
pub mod encode;
pub mod endian;
pub mod error;
pub mod relay;
mod sigbus;
pub mod synth;
pub mod trace;
pub mod view;

pub use abi::EventCode;
pub use encode::{encode, encode_into, encoded_size, StreamWriter};
pub use endian::Endian;
pub use error::FormatError;
pub use trace::{
    base_files, parse_window, resolve_inputs, ErrorKind, InputSource, Item, RawItem, RunSummary,
    StreamInfoView, Trace, TraceError,
};
pub use view::{
    Body, ClockSync, EventBody, EventView, Lost, RecordView, Records, RingNote, Stamp,
    StreamHeader, StreamInfo,
};
