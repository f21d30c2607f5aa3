//! Byte layouts and constants of format 1.0, exactly as `FORMAT.md` specifies them.
//!
//! The kernel's uapi header `include/uapi/drm/grtrace.h` mirrors this module; the test
//! `tests/uapi_layout.rs` compiles that header against assertions generated from here.

/// Stream header magic, as bytes (independent of byte order).
pub const STREAM_MAGIC: [u8; 8] = *b"GRTRACE\0";
/// Format major version written by this crate; a reader refuses a larger one (FORMAT.md §2.1).
pub const VERSION_MAJOR: u16 = 1;
/// Format minor version; larger minors only add record types, flags or header bytes
/// (FORMAT.md §2.1).
pub const VERSION_MINOR: u16 = 0;
/// Size in bytes of a 1.0 stream header (FORMAT.md §2.1).
pub const STREAM_HEADER_SIZE: usize = 128;
/// Largest `header_size` a reader accepts (a future minor may grow the header).
pub const STREAM_HEADER_MAX: usize = 4096;

/// `byte_order` value of a little-endian stream (FORMAT.md §2.1).
pub const BYTE_ORDER_LITTLE: u8 = 1;
/// `byte_order` value of a big-endian stream (FORMAT.md §2.1).
pub const BYTE_ORDER_BIG: u8 = 2;

/// Linux clock id of `CLOCK_MONOTONIC`, the clock of every kernel timestamp.
pub const CLOCK_MONOTONIC: u32 = 1;
/// `cpu` of a merged stream header.
pub const CPU_MERGED: u32 = 0xffff_ffff;

/// Stream header flag `MERGED`: records come from several CPUs (FORMAT.md §2.1).
pub const STREAM_MERGED: u32 = 1 << 0;
/// Stream header flag `SIMULATED`: written by grtsim, not by a kernel (FORMAT.md §2.1).
pub const STREAM_SIMULATED: u32 = 1 << 1;
/// Stream header flag `SEQ_CHECKED`: gaps are already `NOTE_LOST` records, readers skip the
/// `seq` check (FORMAT.md §5).
pub const STREAM_SEQ_CHECKED: u32 = 1 << 2;
/// Written by `grtimport` / `grtrace --ftrace`: the events were converted from kernel
/// tracepoints (IMPORT.md), not written by the grtrace kernel series; the first record is a
/// `NOTE_MSG` naming the source.
pub const STREAM_IMPORTED: u32 = 1 << 3;
/// Written by importers into `BASE.grtrace.<cpu>` files: the writer made a file for every
/// CPU the capture had records of, so a CPU number without a file had none (not a lost
/// file); readers do not warn about missing CPU files (FORMAT.md §2.1).
pub const STREAM_CPUS_WHOLE: u32 = 1 << 4;

/// Stream header field offsets.
pub mod stream_off {
    /// Offset of `magic`, the bytes `"GRTRACE\0"` (FORMAT.md §2.1).
    pub const MAGIC: usize = 0;
    /// Offset of `byte_order`, 1 little or 2 big endian (FORMAT.md §2.1).
    pub const BYTE_ORDER: usize = 8;
    /// Offset of `version_major` (FORMAT.md §2.1).
    pub const VERSION_MAJOR: usize = 10;
    /// Offset of `version_minor` (FORMAT.md §2.1).
    pub const VERSION_MINOR: usize = 12;
    /// Offset of `header_size`, where the records start (FORMAT.md §2.1).
    pub const HEADER_SIZE: usize = 14;
    /// Offset of `clock_id`, the Linux clock of every `time_ns` (FORMAT.md §2.1).
    pub const CLOCK_ID: usize = 16;
    /// Offset of `cpu`, the CPU the stream came from (FORMAT.md §2.1).
    pub const CPU: usize = 20;
    /// Offset of `card`, the DRM card index (FORMAT.md §2.1).
    pub const CARD: usize = 24;
    /// Offset of the stream `flags` (FORMAT.md §2.1).
    pub const FLAGS: usize = 28;
    /// Offset of `session_id`, shared by every CPU file of a run (FORMAT.md §2.1).
    pub const SESSION_ID: usize = 32;
    /// Offset of `anchor_realtime_ns`, `CLOCK_REALTIME` at the anchor instant (FORMAT.md §2.1).
    pub const ANCHOR_REALTIME_NS: usize = 40;
    /// Offset of `anchor_clock_ns`, `clock_id` time at the anchor instant (FORMAT.md §2.1).
    pub const ANCHOR_CLOCK_NS: usize = 48;
    /// Offset of `driver`, the NUL-padded driver name (FORMAT.md §2.1).
    pub const DRIVER: usize = 56;
    /// Length in bytes of the `driver` field (FORMAT.md §2.1).
    pub const DRIVER_LEN: usize = 32;
}

/// Every record starts with this many bytes of common header.
pub const RECORD_HEADER_SIZE: usize = 32;
/// Records start on, and are sized in multiples of, this many bytes.
pub const RECORD_ALIGN: usize = 8;

/// Record header field offsets (common to all records).
pub mod rec_off {
    /// Offset of `type`, the record type (FORMAT.md §2.2).
    pub const TYPE: usize = 0;
    /// Offset of `size`, the total record size in bytes (FORMAT.md §2.2).
    pub const SIZE: usize = 2;
    /// Offset of `code`, the event code of an `EVENT` record (FORMAT.md §2.2).
    pub const CODE: usize = 4;
    /// Offset of `flags`, the event flags (FORMAT.md §2.2).
    pub const FLAGS: usize = 6;
    /// Offset of `cpu`, the CPU that wrote the record (FORMAT.md §2.2).
    pub const CPU: usize = 8;
    /// Offset of `pid`, the thread id in context (FORMAT.md §2.2).
    pub const PID: usize = 12;
    /// Offset of `time_ns`, the time of the event (FORMAT.md §2.2).
    pub const TIME_NS: usize = 16;
    /// Offset of `seq`, the per-CPU sequence number (FORMAT.md §2.2).
    pub const SEQ: usize = 24;
}

// Record types are the open type `crate::vocab::RecordType` (`RecordType::EVENT`..
// `RecordType::NOTE_STREAM_INFO`): a minor version may add types, which readers skip.

/// Fixed sizes of the record types (`NOTE_MSG` is variable: at least `MSG_MIN`).
pub mod rsize {
    /// Size in bytes of an `EVENT` record (FORMAT.md §4).
    pub const EVENT: usize = 72;
    /// Size in bytes of a `NOTE_PROCESS` record (FORMAT.md §3).
    pub const NOTE_PROCESS: usize = 48;
    /// Size in bytes of a `NOTE_RING` record (FORMAT.md §3).
    pub const NOTE_RING: usize = 88;
    /// Size in bytes of a `NOTE_MSG` record with empty text; text follows, padded to 8
    /// (FORMAT.md §3).
    pub const NOTE_MSG_MIN: usize = 40;
    /// Size in bytes of a `NOTE_CLOCK_SYNC` record (FORMAT.md §3).
    pub const NOTE_CLOCK_SYNC: usize = 56;
    /// Size in bytes of a `NOTE_LOST` record (FORMAT.md §3).
    pub const NOTE_LOST: usize = 64;
    /// Size in bytes of a `NOTE_STREAM_INFO` record (FORMAT.md §3).
    pub const NOTE_STREAM_INFO: usize = 64;
}

/// Event body offsets (from the record start).
pub mod event_off {
    /// Offset of `ctx`, the context id (FORMAT.md §4).
    pub const CTX: usize = 32;
    /// Offset of `ring`, the ring id named by a `NOTE_RING` (FORMAT.md §4).
    pub const RING: usize = 36;
    /// Offset of `seqno`, the job's fence seqno on the ring (FORMAT.md §4).
    pub const SEQNO: usize = 40;
    /// Offset of `arg0`, meaning per event code (FORMAT.md §4.1).
    pub const ARG0: usize = 48;
    /// Offset of `arg1`, meaning per event code (FORMAT.md §4.1).
    pub const ARG1: usize = 56;
    /// Offset of `arg2`, meaning per event code (FORMAT.md §4.1).
    pub const ARG2: usize = 64;
    /// Offset of `arg3`, meaning per event code (FORMAT.md §4.1).
    pub const ARG3: usize = 68;
}

/// Note body offsets (from the record start).
pub mod note_off {
    /// Offset of `comm` in a `NOTE_PROCESS`, the process name (FORMAT.md §3).
    pub const PROCESS_COMM: usize = 32;
    /// Length in bytes of the `NOTE_PROCESS` `comm` field (FORMAT.md §3).
    pub const PROCESS_COMM_LEN: usize = 16;

    /// Offset of `ring` in a `NOTE_RING`, the ring id (FORMAT.md §3).
    pub const RING_RING: usize = 32;
    /// Offset of `engine_class` in a `NOTE_RING` (FORMAT.md §3).
    pub const RING_ENGINE_CLASS: usize = 36;
    /// Offset of `size` in a `NOTE_RING`, the ring size in units (FORMAT.md §3).
    pub const RING_SIZE: usize = 40;
    /// Offset of `unit` in a `NOTE_RING`: 0 bytes, 1 slots (FORMAT.md §3).
    pub const RING_UNIT: usize = 48;
    /// Offset of `flags` in a `NOTE_RING`, the [`super::ring_flag`] bits (FORMAT.md §3).
    pub const RING_FLAGS: usize = 52;
    /// Offset of `name` in a `NOTE_RING`, the NUL-padded ring name (FORMAT.md §3).
    pub const RING_NAME: usize = 56;
    /// Length in bytes of the `NOTE_RING` `name` field (FORMAT.md §3).
    pub const RING_NAME_LEN: usize = 32;

    /// Offset of `len` in a `NOTE_MSG`, the text length in bytes (FORMAT.md §3).
    pub const MSG_LEN: usize = 32;
    /// Offset of the text in a `NOTE_MSG` (FORMAT.md §3).
    pub const MSG_TEXT: usize = 40;
    /// Largest text a `NOTE_MSG` carries, in bytes (FORMAT.md §3).
    pub const MSG_MAX: usize = 1024;

    /// Offset of `gpu_clock_id` in a `NOTE_CLOCK_SYNC` (FORMAT.md §3).
    pub const CLOCK_GPU_CLOCK_ID: usize = 32;
    /// Offset of `gpu_time` in a `NOTE_CLOCK_SYNC`, the GPU timestamp read (FORMAT.md §3).
    pub const CLOCK_GPU_TIME: usize = 40;
    /// Offset of `gpu_freq_hz` in a `NOTE_CLOCK_SYNC`, the GPU clock frequency (FORMAT.md §3).
    pub const CLOCK_GPU_FREQ_HZ: usize = 48;

    /// Offset of `lost_cpu` in a `NOTE_LOST`, the CPU whose records were lost (FORMAT.md §3).
    pub const LOST_CPU: usize = 32;
    /// Offset of `source` in a `NOTE_LOST`, who lost them (FORMAT.md §3).
    pub const LOST_SOURCE: usize = 36;
    /// Offset of `count` in a `NOTE_LOST`, how many records were lost (FORMAT.md §3).
    pub const LOST_COUNT: usize = 40;
    /// Offset of `first_ns` in a `NOTE_LOST`, the start of the loss window (FORMAT.md §3).
    pub const LOST_FIRST_NS: usize = 48;
    /// Offset of `last_ns` in a `NOTE_LOST`, the end of the loss window (FORMAT.md §3).
    pub const LOST_LAST_NS: usize = 56;

    /// Offset of `kernel_dropped` in a `NOTE_STREAM_INFO`, the device-wide `dropped` at stop
    /// (FORMAT.md §3).
    pub const INFO_KERNEL_DROPPED: usize = 32;
    /// Offset of `records` in a `NOTE_STREAM_INFO`, the records in this stream (FORMAT.md §3).
    pub const INFO_RECORDS: usize = 40;
    /// Offset of `bytes` in a `NOTE_STREAM_INFO`, the bytes in this stream (FORMAT.md §3).
    pub const INFO_BYTES: usize = 48;
    /// Offset of `info_flags` in a `NOTE_STREAM_INFO` (FORMAT.md §3).
    pub const INFO_FLAGS: usize = 56;
}

/// `NOTE_LOST` sources.
pub mod lost_source {
    /// Source 1: the kernel's relay buffer was full (FORMAT.md §3).
    pub const KERNEL: u32 = 1;
    /// Source 2: the recorder could not keep data it had (FORMAT.md §3).
    pub const RECORDER: u32 = 2;
    /// Source 3: a sequence gap, written only by tools that set `SEQ_CHECKED` (FORMAT.md §5).
    pub const SEQ_GAP: u32 = 3;
}

/// `NOTE_STREAM_INFO` `info_flags` bit 0: the recording stopped cleanly (FORMAT.md §3).
pub const INFO_STOPPED_CLEANLY: u32 = 1 << 0;

/// `NOTE_RING` `unit` 0: the ring is sized and filled in bytes (FORMAT.md §3).
pub const RING_UNIT_BYTES: u32 = 0;
/// `NOTE_RING` `unit` 1: the ring is sized and filled in slots (descriptors) (FORMAT.md §3).
pub const RING_UNIT_SLOTS: u32 = 1;

/// `NOTE_RING` `flags`: how readers key a ring's jobs (FORMAT.md §3). 0, what recordings
/// made before the flags existed carry, means one seqno space per ring and jobs that stay on
/// their ring.
pub mod ring_flag {
    /// `CTX_SEQNO`: seqnos count per context, not per ring, so a `SUBMIT` makes visible the
    /// jobs of its own context only (FORMAT.md §3, §4.5).
    pub const CTX_SEQNO: u32 = 1 << 0;
    /// `VIRTUAL`: the ring of jobs not yet given to a physical ring (a load-balanced
    /// engine); a job's later events may name the ring that runs it, and (ctx, seqno) joins
    /// the two (FORMAT.md §3, §4.5).
    pub const VIRTUAL: u32 = 1 << 1;
    /// Bits defined in 1.0; the rest are reserved.
    pub const KNOWN: u32 = 0x3;
    /// Names in bit order, for printing.
    pub const NAMES: [(u32, &str); 2] = [(CTX_SEQNO, "ctx-seqno"), (VIRTUAL, "virtual")];
}

/// Event flags.
pub mod eflag {
    /// Event flag `FENCED`: the job carries a fence that will be signalled (FORMAT.md §4.2).
    pub const FENCED: u16 = 1 << 0;
    /// Event flag `PREEMPT`: the previous context or the job was preempted (FORMAT.md §4.2).
    pub const PREEMPT: u16 = 1 << 1;
    /// Event flag `ERROR`: the event reports a failure, the error is in `arg2` (FORMAT.md §4.2).
    pub const ERROR: u16 = 1 << 2;
    /// Event flag `KERNEL`: submitted by the kernel itself, not a user client (FORMAT.md §4.2).
    pub const KERNEL: u16 = 1 << 3;
    /// Event flag `HOST`: the dependency is waited for by the host scheduler, not the GPU
    /// (FORMAT.md §4.2).
    pub const HOST: u16 = 1 << 4;
    /// Bits defined in 1.0 and written by the kernel (`GRTRACE_EF_KNOWN`, [`INFERRED`]
    /// included); the rest are reserved there.
    pub const KNOWN: u16 = 0x3f;
    /// Names in bit order, for printing and parsing.
    pub const NAMES: [(u16, &str); 5] = [
        (FENCED, "fenced"),
        (PREEMPT, "preempt"),
        (ERROR, "error"),
        (KERNEL, "kernel"),
        (HOST, "host"),
    ];
    /// Event flag `INFERRED` (`GRTRACE_EF_INFERRED`): the event's time was inferred, not
    /// observed. Written by importers (an imported START is the hand-off to the driver pushed
    /// to max(hand-off, previous END on the ring), IMPORT.md), by the kernel's drm_sched probe
    /// on a START written after the job's hardware fence signalled and by its amdgpu probes
    /// on every ALLOC, which carries the commit's time (FORMAT.md §4.2). Not in [`NAMES`]:
    /// printers add it themselves.
    pub const INFERRED: u16 = 1 << 5;
}

/// Engine classes of `NOTE_RING`.
pub const ENGINE_CLASS_NAMES: [&str; 7] =
    ["other", "gfx", "compute", "copy", "vdec", "venc", "control"];

// Event codes are the open type `crate::vocab::Event` (`Event::ALLOC`..`Event::HANG`), with
// their names and argument meanings: a minor version may add codes (FORMAT.md §2.1), so they
// are not a closed enum. Codes are stable forever; a code is never reused.

// Codes must fit the 64-bit event mask.
const _: () = assert!(crate::vocab::Event::LIMIT <= 64);

/// Mask with every 1.0 event code set.
pub const EVENT_MASK_ALL: u64 = ((1u64 << crate::vocab::Event::LIMIT) - 1) & !1;

/// Sub-buffer header of the relay transport (FORMAT.md §7.2).
pub mod subbuf {
    /// `"GRTS"` read as a little-endian u32.
    pub const MAGIC: u32 = 0x5354_5247;
    /// Sub-buffer header `version` (FORMAT.md §7.2).
    pub const VERSION: u16 = 1;
    /// Size in bytes of the sub-buffer header; records start here (FORMAT.md §7.2).
    pub const HEADER_SIZE: usize = 32;
    /// `flags` bit 0 `FINAL`: the kernel switched away, `commit + padding = subbuf_size`
    /// (FORMAT.md §7.2).
    pub const FLAG_FINAL: u32 = 1 << 0;

    /// Offset of `magic` (FORMAT.md §7.2).
    pub const OFF_MAGIC: usize = 0;
    /// Offset of `version` (FORMAT.md §7.2).
    pub const OFF_VERSION: usize = 4;
    /// Offset of `header_size` (FORMAT.md §7.2).
    pub const OFF_HEADER_SIZE: usize = 6;
    /// Offset of `subbuf_seq`, the absolute sub-buffer number on this CPU, stored last
    /// (FORMAT.md §7.2).
    pub const OFF_SUBBUF_SEQ: usize = 8;
    /// Offset of `commit`, the bytes valid from the sub-buffer start (FORMAT.md §7.2).
    pub const OFF_COMMIT: usize = 16;
    /// Offset of `padding`, the unused bytes at the end once `FINAL` (FORMAT.md §7.2).
    pub const OFF_PADDING: usize = 20;
    /// Offset of `lost`, records refused on this CPU before this sub-buffer (FORMAT.md §7.2).
    pub const OFF_LOST: usize = 24;
    /// Offset of `flags` (FORMAT.md §7.2).
    pub const OFF_FLAGS: usize = 28;

    /// Smallest `subbuf_size` the kernel accepts on `setup` (FORMAT.md §7.1).
    pub const MIN_SUBBUF_SIZE: usize = 4096;
    /// Largest `subbuf_size` the kernel accepts on `setup` (FORMAT.md §7.1).
    pub const MAX_SUBBUF_SIZE: usize = 64 << 20;
    /// Fewest `n_subbufs` the kernel accepts on `setup` (FORMAT.md §7.1).
    pub const MIN_N_SUBBUFS: usize = 2;
    /// Most `n_subbufs` the kernel accepts on `setup` (FORMAT.md §7.1).
    pub const MAX_N_SUBBUFS: usize = 4096;
}

/// Names of the per-device control files under `<debugfs>/grtrace/cardN/`.
pub mod files {
    /// The debugfs directory holding one `cardN` directory per device (FORMAT.md §7.1).
    pub const DIR: &str = "grtrace";
    /// Prefix of the per-CPU relay buffer files `trace<cpu>` (FORMAT.md §7.1).
    pub const TRACE_PREFIX: &str = "trace";
    /// `info`: `key value` lines describing the device and session (FORMAT.md §7.1).
    pub const INFO: &str = "info";
    /// `ctl`: commands `setup`, `start`, `stop`, `teardown` (FORMAT.md §7.1).
    pub const CTL: &str = "ctl";
    /// `consumed`: the consumer reports sub-buffers it is done with (FORMAT.md §7.1).
    pub const CONSUMED: &str = "consumed";
    /// `state`: produced, consumed and pending-lost counts per CPU (FORMAT.md §7.1).
    pub const STATE: &str = "state";
    /// `dropped`: total records refused since setup (FORMAT.md §7.1).
    pub const DROPPED: &str = "dropped";
    /// `msg`: text written here becomes a `NOTE_MSG` (FORMAT.md §7.1).
    pub const MSG: &str = "msg";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_fit_their_records() {
        assert_eq!(event_off::ARG3 + 4, rsize::EVENT);
        assert_eq!(note_off::PROCESS_COMM + 16, rsize::NOTE_PROCESS);
        assert_eq!(note_off::RING_NAME + 32, rsize::NOTE_RING);
        assert_eq!(note_off::CLOCK_GPU_FREQ_HZ + 8, rsize::NOTE_CLOCK_SYNC);
        assert_eq!(note_off::LOST_LAST_NS + 8, rsize::NOTE_LOST);
        assert_eq!(note_off::INFO_FLAGS + 8, rsize::NOTE_STREAM_INFO);
        assert_eq!(
            stream_off::DRIVER + stream_off::DRIVER_LEN + 40,
            STREAM_HEADER_SIZE
        );
        assert_eq!(&MAGIC_LE_BYTES, b"GRTS");
    }

    const MAGIC_LE_BYTES: [u8; 4] = subbuf::MAGIC.to_le_bytes();
}
