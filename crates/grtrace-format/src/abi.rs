//! Byte layouts and constants of format 1.0, exactly as `FORMAT.md` specifies them.
//!
//! The kernel's uapi header `include/uapi/drm/grtrace.h` mirrors this module; the test
//! `tests/uapi_layout.rs` compiles that header against assertions generated from here.

/// Stream header magic, as bytes (independent of byte order).
pub const STREAM_MAGIC: [u8; 8] = *b"GRTRACE\0";
pub const VERSION_MAJOR: u16 = 1;
pub const VERSION_MINOR: u16 = 0;
pub const STREAM_HEADER_SIZE: usize = 128;
/// Largest `header_size` a reader accepts (a future minor may grow the header).
pub const STREAM_HEADER_MAX: usize = 4096;

pub const BYTE_ORDER_LITTLE: u8 = 1;
pub const BYTE_ORDER_BIG: u8 = 2;

/// Linux clock id of `CLOCK_MONOTONIC`, the clock of every kernel timestamp.
pub const CLOCK_MONOTONIC: u32 = 1;
/// `cpu` of a merged stream header.
pub const CPU_MERGED: u32 = 0xffff_ffff;

/// Stream header flags.
pub const STREAM_MERGED: u32 = 1 << 0;
pub const STREAM_SIMULATED: u32 = 1 << 1;
pub const STREAM_SEQ_CHECKED: u32 = 1 << 2;
/// Written by `grtimport` / `grtrace --ftrace`: the events were converted from kernel
/// tracepoints (IMPORT.md), not written by the grtrace kernel series; the first record is a
/// `NOTE_MSG` naming the source.
pub const STREAM_IMPORTED: u32 = 1 << 3;

/// Stream header field offsets.
pub mod stream_off {
    pub const MAGIC: usize = 0;
    pub const BYTE_ORDER: usize = 8;
    pub const VERSION_MAJOR: usize = 10;
    pub const VERSION_MINOR: usize = 12;
    pub const HEADER_SIZE: usize = 14;
    pub const CLOCK_ID: usize = 16;
    pub const CPU: usize = 20;
    pub const CARD: usize = 24;
    pub const FLAGS: usize = 28;
    pub const SESSION_ID: usize = 32;
    pub const ANCHOR_REALTIME_NS: usize = 40;
    pub const ANCHOR_CLOCK_NS: usize = 48;
    pub const DRIVER: usize = 56;
    pub const DRIVER_LEN: usize = 32;
}

/// Every record starts with this many bytes of common header.
pub const RECORD_HEADER_SIZE: usize = 32;
/// Records start on, and are sized in multiples of, this many bytes.
pub const RECORD_ALIGN: usize = 8;

/// Record header field offsets (common to all records).
pub mod rec_off {
    pub const TYPE: usize = 0;
    pub const SIZE: usize = 2;
    pub const CODE: usize = 4;
    pub const FLAGS: usize = 6;
    pub const CPU: usize = 8;
    pub const PID: usize = 12;
    pub const TIME_NS: usize = 16;
    pub const SEQ: usize = 24;
}

/// Record types.
pub mod rtype {
    pub const EVENT: u16 = 1;
    pub const NOTE_PROCESS: u16 = 2;
    pub const NOTE_RING: u16 = 3;
    pub const NOTE_MSG: u16 = 4;
    pub const NOTE_CLOCK_SYNC: u16 = 5;
    pub const NOTE_LOST: u16 = 6;
    pub const NOTE_STREAM_INFO: u16 = 7;
}

/// Fixed sizes of the record types (`NOTE_MSG` is variable: at least `MSG_MIN`).
pub mod rsize {
    pub const EVENT: usize = 72;
    pub const NOTE_PROCESS: usize = 48;
    pub const NOTE_RING: usize = 88;
    pub const NOTE_MSG_MIN: usize = 40;
    pub const NOTE_CLOCK_SYNC: usize = 56;
    pub const NOTE_LOST: usize = 64;
    pub const NOTE_STREAM_INFO: usize = 64;
}

/// Event body offsets (from the record start).
pub mod event_off {
    pub const CTX: usize = 32;
    pub const RING: usize = 36;
    pub const SEQNO: usize = 40;
    pub const ARG0: usize = 48;
    pub const ARG1: usize = 56;
    pub const ARG2: usize = 64;
    pub const ARG3: usize = 68;
}

/// Note body offsets (from the record start).
pub mod note_off {
    pub const PROCESS_COMM: usize = 32;
    pub const PROCESS_COMM_LEN: usize = 16;

    pub const RING_RING: usize = 32;
    pub const RING_ENGINE_CLASS: usize = 36;
    pub const RING_SIZE: usize = 40;
    pub const RING_UNIT: usize = 48;
    pub const RING_NAME: usize = 56;
    pub const RING_NAME_LEN: usize = 32;

    pub const MSG_LEN: usize = 32;
    pub const MSG_TEXT: usize = 40;
    pub const MSG_MAX: usize = 1024;

    pub const CLOCK_GPU_CLOCK_ID: usize = 32;
    pub const CLOCK_GPU_TIME: usize = 40;
    pub const CLOCK_GPU_FREQ_HZ: usize = 48;

    pub const LOST_CPU: usize = 32;
    pub const LOST_SOURCE: usize = 36;
    pub const LOST_COUNT: usize = 40;
    pub const LOST_FIRST_NS: usize = 48;
    pub const LOST_LAST_NS: usize = 56;

    pub const INFO_KERNEL_DROPPED: usize = 32;
    pub const INFO_RECORDS: usize = 40;
    pub const INFO_BYTES: usize = 48;
    pub const INFO_FLAGS: usize = 56;
}

/// `NOTE_LOST` sources.
pub mod lost_source {
    pub const KERNEL: u32 = 1;
    pub const RECORDER: u32 = 2;
    pub const SEQ_GAP: u32 = 3;
}

/// `NOTE_STREAM_INFO` flags.
pub const INFO_STOPPED_CLEANLY: u32 = 1 << 0;

/// `NOTE_RING` units.
pub const RING_UNIT_BYTES: u32 = 0;
pub const RING_UNIT_SLOTS: u32 = 1;

/// Event flags.
pub mod eflag {
    pub const FENCED: u16 = 1 << 0;
    pub const PREEMPT: u16 = 1 << 1;
    pub const ERROR: u16 = 1 << 2;
    pub const KERNEL: u16 = 1 << 3;
    pub const HOST: u16 = 1 << 4;
    /// Bits defined in 1.0 and written by the kernel; the rest are reserved there.
    pub const KNOWN: u16 = 0x1f;
    /// Names in bit order, for printing and parsing.
    pub const NAMES: [(u16, &str); 5] = [
        (FENCED, "fenced"),
        (PREEMPT, "preempt"),
        (ERROR, "error"),
        (KERNEL, "kernel"),
        (HOST, "host"),
    ];
    /// Written only by importers (never by the kernel, so not in the uapi header): the
    /// event's time was inferred, not observed. An imported START is the hand-off to the
    /// driver pushed to max(hand-off, previous END on the ring) (IMPORT.md).
    pub const INFERRED: u16 = 1 << 5;
}

/// Engine classes of `NOTE_RING`.
pub const ENGINE_CLASS_NAMES: [&str; 7] =
    ["other", "gfx", "compute", "copy", "vdec", "venc", "control"];

/// Event codes. Codes are stable forever; a code is never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u16)]
pub enum EventCode {
    Alloc = 1,
    Commit = 2,
    Submit = 3,
    Stall = 4,
    Queue = 5,
    Start = 6,
    End = 7,
    Irq = 8,
    Signal = 9,
    Wait = 10,
    WaitEnd = 11,
    SyncEnter = 12,
    SyncExit = 13,
    CtxSwitch = 14,
    CtxCreate = 15,
    CtxDestroy = 16,
    MemAlloc = 17,
    MemFree = 18,
    MemMap = 19,
    MemUnmap = 20,
    VmFault = 21,
    VmRetry = 22,
    Timeout = 23,
    Reset = 24,
    Hang = 25,
}

impl EventCode {
    /// Every code of format 1.0, in code order.
    pub const ALL: [EventCode; 25] = [
        EventCode::Alloc,
        EventCode::Commit,
        EventCode::Submit,
        EventCode::Stall,
        EventCode::Queue,
        EventCode::Start,
        EventCode::End,
        EventCode::Irq,
        EventCode::Signal,
        EventCode::Wait,
        EventCode::WaitEnd,
        EventCode::SyncEnter,
        EventCode::SyncExit,
        EventCode::CtxSwitch,
        EventCode::CtxCreate,
        EventCode::CtxDestroy,
        EventCode::MemAlloc,
        EventCode::MemFree,
        EventCode::MemMap,
        EventCode::MemUnmap,
        EventCode::VmFault,
        EventCode::VmRetry,
        EventCode::Timeout,
        EventCode::Reset,
        EventCode::Hang,
    ];
    /// One past the largest code; codes are dense from 1.
    pub const LIMIT: u16 = 26;

    pub fn from_u16(code: u16) -> Option<EventCode> {
        if (1..Self::LIMIT).contains(&code) {
            Some(Self::ALL[code as usize - 1])
        } else {
            None
        }
    }

    /// The name printed by grtparse and accepted by every `-a`/`--events` option (from the
    /// one table, [`crate::vocab`]).
    pub fn name(self) -> &'static str {
        crate::vocab::Event::from(self)
            .name()
            .expect("every 1.0 code is named")
    }

    /// Case-insensitive lookup by name.
    pub fn from_name(name: &str) -> Option<EventCode> {
        Self::ALL
            .iter()
            .copied()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// Bit of this code in a 64-bit event mask.
    pub fn mask_bit(self) -> u64 {
        1u64 << (self as u16)
    }
}

// Codes must fit the 64-bit event mask.
const _: () = assert!(EventCode::LIMIT <= 64);

/// Mask with every 1.0 event code set.
pub const EVENT_MASK_ALL: u64 = ((1u64 << EventCode::LIMIT) - 1) & !1;

/// Sub-buffer header of the relay transport (FORMAT.md §7.2).
pub mod subbuf {
    /// `"GRTS"` read as a little-endian u32.
    pub const MAGIC: u32 = 0x5354_5247;
    pub const VERSION: u16 = 1;
    pub const HEADER_SIZE: usize = 32;
    pub const FLAG_FINAL: u32 = 1 << 0;

    pub const OFF_MAGIC: usize = 0;
    pub const OFF_VERSION: usize = 4;
    pub const OFF_HEADER_SIZE: usize = 6;
    pub const OFF_SUBBUF_SEQ: usize = 8;
    pub const OFF_COMMIT: usize = 16;
    pub const OFF_PADDING: usize = 20;
    pub const OFF_LOST: usize = 24;
    pub const OFF_FLAGS: usize = 28;

    /// Limits the kernel enforces on `setup`.
    pub const MIN_SUBBUF_SIZE: usize = 4096;
    pub const MAX_SUBBUF_SIZE: usize = 64 << 20;
    pub const MIN_N_SUBBUFS: usize = 2;
    pub const MAX_N_SUBBUFS: usize = 4096;
}

/// Names of the per-device control files under `<debugfs>/grtrace/cardN/`.
pub mod files {
    pub const DIR: &str = "grtrace";
    pub const TRACE_PREFIX: &str = "trace";
    pub const INFO: &str = "info";
    pub const CTL: &str = "ctl";
    pub const CONSUMED: &str = "consumed";
    pub const STATE: &str = "state";
    pub const DROPPED: &str = "dropped";
    pub const MSG: &str = "msg";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_by_number_and_name() {
        for (i, c) in EventCode::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i + 1);
            assert_eq!(EventCode::from_u16(*c as u16), Some(*c));
            assert_eq!(EventCode::from_name(&c.name().to_lowercase()), Some(*c));
        }
        assert_eq!(EventCode::from_u16(0), None);
        assert_eq!(EventCode::from_u16(EventCode::LIMIT), None);
    }

    #[test]
    fn all_mask_covers_every_code() {
        let m = EventCode::ALL.iter().fold(0, |m, c| m | c.mask_bit());
        assert_eq!(m, EVENT_MASK_ALL);
    }

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
