//! # grtrace-ftrace
//!
//! The GPU tracepoints stock kernels already have (DRM scheduler, dma_fence, virtio_gpu,
//! amdgpu, ...) turned into grtrace streams, so grtparse and grtreport work on any kernel.
//! `IMPORT.md` in grtrace-format's directory is the mapping; this crate implements it.
//!
//! * [`format`](mod@format): the kernel's event format descriptions and the ring-buffer page layout.
//! * [`page`]: ring-buffer pages (`trace_pipe_raw`, trace.dat data): reader and builder.
//! * [`tracedat`]: trace-cmd trace.dat v6 and v7 (zlib / zstd) reader.
//! * [`map`]: the mapping itself ([`Mapper`]), tracepoints in, grtrace records out.
//! * [`import`]: the time-ordered merge of CPUs through the mapper.
//! * [`live`]: the same merge for pages read live, behind a watermark.
//! * [`out`]: grtrace output streams marked `IMPORTED`.
//! * [`capture`]: test captures written both as trace.dat and as text.
//! * [`datwriter`]: a trace.dat writer (v6, v7, compressed or not) for tests and benchmarks.
//! * [`fixtures`]: the kernels' event formats (from their TP_STRUCT__entry definitions).
//! * [`perfetto`]: Perfetto traces (ftrace bundles, compressed packets, clock snapshots) read
//!   into the same mapping, and a writer of them for the benchmark.

pub mod capture;
pub mod datwriter;
pub mod fixtures;
pub mod format;
pub mod import;
pub mod live;
pub mod map;
pub mod out;
pub mod page;
// issue 23: helper pf's module (its rework documents it)
#[allow(missing_docs)]
pub mod perfetto;
pub mod synth;
pub mod text;
pub mod tracedat;

pub use format::{EventFormat, PageLayout};
pub use map::{Mapper, Sink};
pub use tracedat::{DatError, TraceDat};

/// `b` up to its first NUL, without trailing whitespace.
pub fn trim_text(b: &[u8]) -> &[u8] {
    let b = grtrace_format::record::trim_nul(b);
    let mut n = b.len();
    while n > 0 && b[n - 1].is_ascii_whitespace() {
        n -= 1;
    }
    &b[..n]
}
