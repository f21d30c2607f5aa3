//! # grtrace-format
//!
//! The one definition of the grtrace on-disk record format and of the relay sub-buffer
//! protocol between the kernel and the recorder. `FORMAT.md` in this crate is the
//! specification; [`abi`] is its byte layout in Rust, and the kernel's uapi header is checked
//! against it byte for byte.
//!
//! * [`record`]: the values of a record, decoded and owned: the stream header
//!   ([`StreamHeader`]), the common fields ([`Stamp`]) and the type-specific [`Body`]
//!   ([`EventBody`] and the notes). The views decode into them, the writer encodes them.
//! * [`view`]: zero-copy, endian-aware views over stream bytes ([`RecordView`], [`Records`]),
//!   and the hot-path view of native events ([`NativeEvent`], [`NativeEvents`]).
//! * [`encode`](mod@encode): the writer ([`StreamWriter`]), used by the recorder, the simulator and tests.
//! * [`mapped`]: a file mapped read-only, guarded against shrinking under its reader
//!   ([`MappedFile`]): the trace reader's mapping, and grtimport's.
//! * [`builder`]: records made by hand with per-CPU sequence numbers ([`builder::Builder`]),
//!   for tests, the synthetic generator and the simulator's scenarios.
//! * [`error`]: typed decoding errors that name the byte offset.
//! * [`relay`]: the relay sub-buffer protocol (FORMAT.md §7) shared by recorder and simulator.
//! * [`ioctl`]: the session-control ioctls on a card's primary node (FORMAT.md §7.1).
//! * [`card`](mod@card): the identity of a GPU ([`Card`]), `card1` wherever it is shown.
//! * [`vocab`]: the vocabulary: record types ([`RecordType`]) and event codes ([`Event`]) as
//!   open newtypes, with names and what each event's arguments mean.
//! * [`synth`]: a deterministic synthetic workload (fixtures, benchmarks, tests).
//! * [`trace`]: whole traces: input discovery, mmapped or piped inputs, the k-way merge with
//!   per-CPU sequence-gap detection ([`Trace`], [`Item`]); runs of native events for fast
//!   consumers ([`Trace::for_each_run`]).
//!
//! Features (both on by default): `relay` (the [`relay`] module) and `synth` (the [`synth`]
//! module). A program that only reads traces can depend on the crate with
//! `default-features = false`.
//!
//! ## Reading a trace
//!
//! A recording `grtrace -o run` leaves one file per CPU, `run.grtrace.<cpu>`. Reading them is
//! three calls: find the files of a base name, open them (mapped, headers checked), and merge
//! them in time order with sequence gaps found:
//!
//! ```
//! use std::ops::ControlFlow;
//! use grtrace_format::{resolve_inputs, Body, Event, EventBody, Item, Stamp, StreamHeader,
//!                      StreamWriter, Trace};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A small recording of two CPUs, written the way the recorder writes it.
//! let dir = std::env::temp_dir().join(format!("grtrace-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! for cpu in 0..2u32 {
//!     let header = StreamHeader::new(cpu, 0, "virtio_gpu");
//!     let file = std::fs::File::create(dir.join(format!("run.grtrace.{cpu}")))?;
//!     let mut w = StreamWriter::new(file, &header)?;
//!     for seq in 1..=3u64 {
//!         let stamp = Stamp { cpu, pid: 42, time_ns: seq * 1000 + cpu as u64, seq };
//!         let code = if cpu == 0 { Event::COMMIT } else { Event::END };
//!         w.write(&stamp, &Body::Event(EventBody { code, ..EventBody::default() }))?;
//!     }
//! }
//!
//! // Reading it back: every event of both CPUs, in time order.
//! let (sources, warnings) = resolve_inputs(&[dir.join("run")])?;
//! assert!(warnings.is_empty());
//! let mut trace = Trace::open(sources)?;
//! let mut lines = Vec::new();
//! let summary = trace.for_each(|item| {
//!     if let Item::Record(r) = item {
//!         if let Some(e) = r.event() {
//!             lines.push(format!("{} cpu{} {}", r.time_ns(), r.cpu(), e.event()));
//!         }
//!     }
//!     ControlFlow::Continue(())
//! });
//! assert_eq!(lines[..3], ["1000 cpu0 COMMIT", "1001 cpu1 END", "2000 cpu0 COMMIT"]);
//! assert_eq!((summary.records, summary.gaps), (6, 0));
//! assert!(summary.errors.is_empty());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

pub mod abi;
pub mod builder;
pub mod card;
pub mod encode;
pub mod endian;
pub mod error;
pub mod ioctl;
pub mod mapped;
pub mod record;
#[cfg(feature = "relay")]
pub mod relay;
mod sigbus;
#[cfg(feature = "synth")]
pub mod synth;
pub mod trace;
pub mod view;
pub mod vocab;

pub use card::{Card, CardError};
pub use encode::{encode, encode_into, encoded_size, StreamWriter};
pub use endian::{Endian, Native, Order, Swapped};
pub use error::FormatError;
pub use mapped::MappedFile;
pub use record::{Body, ClockSync, EventBody, Lost, RingNote, Stamp, StreamHeader, StreamInfo};
pub use trace::{
    base_files, resolve_inputs, EmbeddedStream, ErrorKind, InputSource, Item, RawItem, RunItem,
    RunSummary, StreamInfoView, Trace, TraceError, Warning,
};
pub use view::{EventView, NativeEvent, NativeEvents, RecordView, Records};
pub use vocab::{Arg, Event, RecordType};
