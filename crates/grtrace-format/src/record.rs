//! The values of a record, decoded and owned (but for the strings of notes, which borrow the
//! record's bytes): the stream header, the common header fields ([`Stamp`]) and the
//! type-specific [`Body`]. The views ([`crate::view`]) decode into them and the writer
//! ([`encode`](mod@crate::encode)) encodes them; they depend on neither.

use crate::abi::{self, event_off, rec_off, rsize, stream_off};
use crate::endian::{Endian, Native, Order, Swapped};
use crate::error::FormatError;
use crate::vocab::{Event, RecordType};

/// The decoded stream header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamHeader {
    /// Byte order of everything after the `byte_order` byte.
    pub endian: Endian,
    /// Major format version (1 for every stream this crate accepts).
    pub version_major: u16,
    /// Minor format version; a larger minor only adds record types, flags or header bytes.
    pub version_minor: u16,
    /// Header length in bytes; the first record starts at this offset.
    pub header_size: u16,
    /// Linux clock id of every record's `time_ns` (1 = `CLOCK_MONOTONIC`).
    pub clock_id: u32,
    /// CPU the stream came from; `abi::CPU_MERGED` for a merged stream.
    pub cpu: u32,
    /// DRM card index N of `cardN`.
    pub card: u32,
    /// Stream flags (`abi::STREAM_*`): merged, simulated, seq-checked, imported.
    pub flags: u32,
    /// Random id chosen by the kernel at setup, the same in every CPU file of a run.
    pub session_id: u64,
    /// `CLOCK_REALTIME` at the anchor instant (0 = no anchor).
    pub anchor_realtime_ns: u64,
    /// `clock_id` time at the anchor instant: `wall = anchor_realtime + (t - anchor_clock)`.
    pub anchor_clock_ns: u64,
    /// Driver name, e.g. `virtio_gpu`, `amdgpu`, `i915`.
    pub driver: String,
}

impl StreamHeader {
    /// A 1.0 header for one CPU's stream, in native byte order.
    pub fn new(cpu: u32, card: u32, driver: &str) -> StreamHeader {
        StreamHeader {
            endian: Endian::NATIVE,
            version_major: abi::VERSION_MAJOR,
            version_minor: abi::VERSION_MINOR,
            header_size: abi::STREAM_HEADER_SIZE as u16,
            clock_id: abi::CLOCK_MONOTONIC,
            cpu,
            card,
            flags: 0,
            session_id: 0,
            anchor_realtime_ns: 0,
            anchor_clock_ns: 0,
            driver: driver.to_string(),
        }
    }

    /// Parses and checks the header at the start of `data`.
    pub fn parse(data: &[u8]) -> Result<StreamHeader, FormatError> {
        let need = abi::STREAM_HEADER_SIZE;
        if data.is_empty() {
            return Err(FormatError::Empty);
        }
        if data.len() < stream_off::BYTE_ORDER + 1 {
            return Err(FormatError::TruncatedHeader {
                have: data.len(),
                need,
            });
        }
        if data[..8] != abi::STREAM_MAGIC {
            return Err(FormatError::BadMagic);
        }
        let endian = Endian::from_header_byte(data[stream_off::BYTE_ORDER])
            .ok_or(FormatError::BadByteOrder(data[stream_off::BYTE_ORDER]))?;
        if data.len() < stream_off::HEADER_SIZE + 2 {
            return Err(FormatError::TruncatedHeader {
                have: data.len(),
                need,
            });
        }
        let version_major = endian.u16(data, stream_off::VERSION_MAJOR);
        let version_minor = endian.u16(data, stream_off::VERSION_MINOR);
        if version_major != abi::VERSION_MAJOR {
            return Err(FormatError::FutureVersion {
                major: version_major,
                minor: version_minor,
            });
        }
        let header_size = endian.u16(data, stream_off::HEADER_SIZE);
        let hs = header_size as usize;
        if hs < need || hs > abi::STREAM_HEADER_MAX || !hs.is_multiple_of(abi::RECORD_ALIGN) {
            return Err(FormatError::BadHeaderSize(header_size));
        }
        if data.len() < hs {
            return Err(FormatError::TruncatedHeader {
                have: data.len(),
                need: hs,
            });
        }
        let driver = &data[stream_off::DRIVER..stream_off::DRIVER + stream_off::DRIVER_LEN];
        Ok(StreamHeader {
            endian,
            version_major,
            version_minor,
            header_size,
            clock_id: endian.u32(data, stream_off::CLOCK_ID),
            cpu: endian.u32(data, stream_off::CPU),
            card: endian.u32(data, stream_off::CARD),
            flags: endian.u32(data, stream_off::FLAGS),
            session_id: endian.u64(data, stream_off::SESSION_ID),
            anchor_realtime_ns: endian.u64(data, stream_off::ANCHOR_REALTIME_NS),
            anchor_clock_ns: endian.u64(data, stream_off::ANCHOR_CLOCK_NS),
            driver: String::from_utf8_lossy(trim_nul(driver)).into_owned(),
        })
    }

    /// The 128-byte encoding of this header (always written as format 1.0).
    pub fn encode(&self) -> [u8; abi::STREAM_HEADER_SIZE] {
        let e = self.endian;
        let mut b = [0u8; abi::STREAM_HEADER_SIZE];
        b[..8].copy_from_slice(&abi::STREAM_MAGIC);
        b[stream_off::BYTE_ORDER] = e.header_byte();
        e.put_u16(&mut b, stream_off::VERSION_MAJOR, abi::VERSION_MAJOR);
        e.put_u16(&mut b, stream_off::VERSION_MINOR, abi::VERSION_MINOR);
        e.put_u16(
            &mut b,
            stream_off::HEADER_SIZE,
            abi::STREAM_HEADER_SIZE as u16,
        );
        e.put_u32(&mut b, stream_off::CLOCK_ID, self.clock_id);
        e.put_u32(&mut b, stream_off::CPU, self.cpu);
        e.put_u32(&mut b, stream_off::CARD, self.card);
        e.put_u32(&mut b, stream_off::FLAGS, self.flags);
        e.put_u64(&mut b, stream_off::SESSION_ID, self.session_id);
        e.put_u64(
            &mut b,
            stream_off::ANCHOR_REALTIME_NS,
            self.anchor_realtime_ns,
        );
        e.put_u64(&mut b, stream_off::ANCHOR_CLOCK_NS, self.anchor_clock_ns);
        put_str(
            &mut b[stream_off::DRIVER..stream_off::DRIVER + stream_off::DRIVER_LEN],
            self.driver.as_bytes(),
        );
        b
    }

    /// Whether this is a merged stream (`cpu` is `CPU_MERGED` or the `MERGED` flag is set).
    pub fn is_merged(&self) -> bool {
        self.cpu == abi::CPU_MERGED || self.flags & abi::STREAM_MERGED != 0
    }

    /// Wall-clock nanoseconds since the epoch for a record time, if the header has an anchor.
    pub fn wall_ns(&self, time_ns: u64) -> Option<u64> {
        if self.anchor_realtime_ns == 0 {
            return None;
        }
        let delta = time_ns as i128 - self.anchor_clock_ns as i128;
        u64::try_from(self.anchor_realtime_ns as i128 + delta).ok()
    }
}

/// Common header fields of a record, as plain data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// CPU that wrote the record.
    pub cpu: u32,
    /// Thread id of the task in context, 0 in hard-IRQ context or for recorder notes.
    pub pid: u32,
    /// Time of the record in nanoseconds.
    pub time_ns: u64,
    /// Per-CPU sequence number; 0 = not sequenced.
    pub seq: u64,
}

/// The event part of an event record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventBody {
    /// Event code (FORMAT.md §4.1), as the vocabulary's open type (names, argument meanings).
    pub code: Event,
    /// Event flags (`abi::eflag`, FORMAT.md §4.2).
    pub flags: u16,
    /// Context id (0 = kernel or none).
    pub ctx: u32,
    /// Ring id, named by a `NOTE_RING`.
    pub ring: u32,
    /// Job sequence number on the ring (the job's fence seqno).
    pub seqno: u64,
    /// First argument, meaning per event code (FORMAT.md §4.1).
    pub arg0: u64,
    /// Second argument, meaning per event code (FORMAT.md §4.1).
    pub arg1: u64,
    /// Third argument, meaning per event code (FORMAT.md §4.1).
    pub arg2: u32,
    /// Fourth argument, meaning per event code (FORMAT.md §4.1).
    pub arg3: u32,
}

impl EventBody {
    /// The event fields of an event record (its first [`rsize::EVENT`] bytes) stored in byte
    /// order `O`, read at their fixed offsets (FORMAT.md §4): one decoder for both orders,
    /// monomorphized, so the native one is plain loads.
    #[inline(always)]
    pub fn read<O: Order>(b: &[u8; rsize::EVENT]) -> EventBody {
        EventBody {
            code: Event(O::u16(array(b, rec_off::CODE))),
            flags: O::u16(array(b, rec_off::FLAGS)),
            ctx: O::u32(array(b, event_off::CTX)),
            ring: O::u32(array(b, event_off::RING)),
            seqno: O::u64(array(b, event_off::SEQNO)),
            arg0: O::u64(array(b, event_off::ARG0)),
            arg1: O::u64(array(b, event_off::ARG1)),
            arg2: O::u32(array(b, event_off::ARG2)),
            arg3: O::u32(array(b, event_off::ARG3)),
        }
    }

    /// The event fields of an event record in byte order `endian`: [`Self::read`] with the
    /// order type chosen once here.
    #[inline(always)]
    pub fn from_bytes(b: &[u8; rsize::EVENT], endian: Endian) -> EventBody {
        if endian.is_native() {
            Self::read::<Native>(b)
        } else {
            Self::read::<Swapped>(b)
        }
    }

    /// The event fields if `b` is an event record (its type field says `EVENT`) stored in
    /// byte order `O`, else `None`: the type is read with the same order type as the fields.
    #[inline(always)]
    pub fn read_record<O: Order>(b: &[u8; rsize::EVENT]) -> Option<EventBody> {
        let rt = RecordType(O::u16(array(b, rec_off::TYPE)));
        (rt == RecordType::EVENT).then(|| EventBody::read::<O>(b))
    }

    /// The event fields of a native-endian event record: [`Self::read`]`::<Native>`.
    #[inline(always)]
    pub fn from_ne_bytes(b: &[u8; rsize::EVENT]) -> EventBody {
        Self::read::<Native>(b)
    }
}

/// The `N` bytes at `off` of a fixed-size record; the offsets are constants, so the bound
/// check folds away.
#[inline(always)]
pub(crate) fn array<const N: usize>(b: &[u8; rsize::EVENT], off: usize) -> [u8; N] {
    let mut x = [0u8; N];
    x.copy_from_slice(&b[off..off + N]);
    x
}

/// A `NOTE_RING` body: one entry of the device's ring table (FORMAT.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingNote<'a> {
    /// Ring id that events name in their `ring` field.
    pub ring: u32,
    /// Engine class: 0 other, 1 graphics, 2 compute, 3 copy, 4 vdec, 5 venc, 6 control.
    pub engine_class: u32,
    /// Ring size in `unit`s.
    pub size: u64,
    /// Unit of size and fill: `abi::RING_UNIT_BYTES` or `abi::RING_UNIT_SLOTS`.
    pub unit: u32,
    /// `abi::ring_flag` bits: how a reader keys the ring's jobs (0 in recordings made
    /// before the flags existed).
    pub flags: u32,
    /// Ring name, without NUL padding.
    pub name: &'a [u8],
}

/// A `NOTE_CLOCK_SYNC` body: a GPU timestamp read at the record's CPU time (FORMAT.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockSync {
    /// Id of the GPU clock that was read (`gpu_clock_id`).
    pub gpu_clock_id: u32,
    /// The GPU timestamp read at the record's `time_ns`.
    pub gpu_time: u64,
    /// Frequency of the GPU clock in Hz.
    pub gpu_freq_hz: u64,
}

/// A `NOTE_LOST` body: records of one CPU lost in a time window (FORMAT.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    /// CPU whose records were lost (`lost_cpu`).
    pub cpu: u32,
    /// Who lost them: `abi::lost_source` (kernel, recorder, sequence gap).
    pub source: u32,
    /// Number of records lost.
    pub count: u64,
    /// Start of the window in which they were lost (ns).
    pub first_ns: u64,
    /// End of the window in which they were lost (ns).
    pub last_ns: u64,
}

/// A `NOTE_STREAM_INFO` body: the recorder's closing totals of a stream (FORMAT.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// Device-wide `dropped` (records the kernel refused) at stop.
    pub kernel_dropped: u64,
    /// Records in this stream.
    pub records: u64,
    /// Bytes in this stream.
    pub bytes: u64,
    /// `info_flags`: bit 0 `abi::INFO_STOPPED_CLEANLY`.
    pub flags: u32,
}

/// The type-specific part of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Exhaustive: one variant per record type of this version (unknown types never become a
// `Body`), so printers that match every note are told when a version adds one.
pub enum Body<'a> {
    /// An `EVENT` record's fields.
    Event(EventBody),
    /// A `NOTE_PROCESS`: the process name of the record's `pid`.
    Process {
        /// Process name, without NUL padding.
        comm: &'a [u8],
    },
    /// A `NOTE_RING`: one ring table entry.
    Ring(RingNote<'a>),
    /// A `NOTE_MSG`: text written to `msg` by the record's `pid`.
    Msg {
        /// The message text (`len` bytes).
        text: &'a [u8],
    },
    /// A `NOTE_CLOCK_SYNC`: a GPU timestamp paired with a CPU time.
    ClockSync(ClockSync),
    /// A `NOTE_LOST`: records lost on a CPU.
    Lost(Lost),
    /// A `NOTE_STREAM_INFO`: the last record of a recorder's stream.
    StreamInfo(StreamInfo),
    /// A record type this reader does not know (skipped and counted by readers).
    Unknown {
        /// The unknown record type.
        rtype: RecordType,
    },
}

impl Body<'_> {
    /// The record type this body encodes as.
    pub fn rtype(&self) -> RecordType {
        match self {
            Body::Event(_) => RecordType::EVENT,
            Body::Process { .. } => RecordType::NOTE_PROCESS,
            Body::Ring(_) => RecordType::NOTE_RING,
            Body::Msg { .. } => RecordType::NOTE_MSG,
            Body::ClockSync(_) => RecordType::NOTE_CLOCK_SYNC,
            Body::Lost(_) => RecordType::NOTE_LOST,
            Body::StreamInfo(_) => RecordType::NOTE_STREAM_INFO,
            Body::Unknown { rtype } => *rtype,
        }
    }
}

/// The bytes of a NUL-padded string, without the padding.
pub fn trim_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// Copies `s` into a NUL-padded field, truncating to the field's length.
pub fn put_str(field: &mut [u8], s: &[u8]) {
    let n = s.len().min(field.len());
    field[..n].copy_from_slice(&s[..n]);
    field[n..].fill(0);
}
