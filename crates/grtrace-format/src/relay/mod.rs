//! The relay transport of FORMAT.md §7, shared byte for byte by the recorder (consumer) and
//! the simulator (producer, a model of the kernel writer).
//!
//! * `buffer.rs`, the shared-memory protocol (§7.2): views of a mapped relay buffer,
//!   [`RelayReader`] (read-only: headers by acquire loads, record bytes by copies) and
//!   [`RelayWriter`] (the producer's, only from a writable mapping), [`SubbufHeader`],
//!   [`RelayProducer`] (the kernel writer's algorithm: reserve, commit, switch with
//!   no-overwrite refusal, flush; the simulator runs it, the kernel implements the same in C)
//!   and [`DrainCursor`] (the consumer algorithm, one per CPU).
//! * `text.rs`, the text files of §7.1: [`Info`], [`CpuState`], [`CtlCommand`],
//!   [`consumed_line`].
//!
//! Sub-buffer headers are in the host byte order (the kernel writes them natively).

mod buffer;
mod text;

pub use buffer::{
    CpuCounters, DrainCursor, Region, RelayError, RelayMap, RelayProducer, RelayReader,
    RelayWriter, SubbufHeader,
};
pub use text::{
    consumed_line, n_subbufs_ok, parse_consumed_line, parse_cpu_list, subbuf_size_ok, CpuState,
    CtlCommand, DevState, Filters, Info,
};
