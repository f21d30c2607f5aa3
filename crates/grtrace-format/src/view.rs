//! Zero-copy typed views over stream bytes (mmapped files or buffers).
//!
//! A [`RecordView`] is a checked window onto one record: its accessors read fields in place
//! with the stream's byte order. [`RecordView::body`] decodes the type-specific part into a
//! small [`Body`] value whose strings still borrow the underlying bytes. A [`NativeEvent`] is
//! the hot-path view of an event record in the machine's byte order (fixed offsets, plain
//! loads); [`NativeEvents`] walks a run of them.

use crate::abi::{self, event_off, note_off, rec_off, rsize};
use crate::endian::{Endian, Native, Order};
use crate::error::FormatError;
use crate::record::{
    array, trim_nul, Body, ClockSync, EventBody, Lost, RingNote, Stamp, StreamHeader, StreamInfo,
};
use crate::vocab::{Event, RecordType};

/// One checked record: its size is valid for its type and it lies within the data.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> RecordView<'a> {
    /// Checks the record at the start of `data` (`offset` is only used in errors).
    /// Returns the view; its [`size`](Self::size) is how far to advance.
    #[inline]
    pub fn parse(data: &'a [u8], endian: Endian, offset: u64) -> Result<Self, FormatError> {
        if data.len() < abi::RECORD_HEADER_SIZE {
            return Err(FormatError::TruncatedRecord {
                offset,
                need: abi::RECORD_HEADER_SIZE,
                have: data.len(),
            });
        }
        let rt = RecordType(endian.u16(data, rec_off::TYPE));
        let size = endian.u16(data, rec_off::SIZE);
        let sz = size as usize;
        if sz < min_size(rt) || !sz.is_multiple_of(abi::RECORD_ALIGN) {
            return Err(FormatError::BadRecordSize {
                offset,
                rtype: rt,
                size,
            });
        }
        if data.len() < sz {
            return Err(FormatError::TruncatedRecord {
                offset,
                need: sz,
                have: data.len(),
            });
        }
        let bytes = &data[..sz];
        if rt == RecordType::NOTE_MSG {
            let len = endian.u32(bytes, note_off::MSG_LEN);
            if len as usize > sz - note_off::MSG_TEXT {
                return Err(FormatError::BadMsgLength { offset, len, size });
            }
        }
        Ok(RecordView { bytes, endian })
    }

    /// A view of the record at the start of `data`, which [`parse`](Self::parse) has
    /// already accepted with this byte order (only its size is read again).
    #[inline(always)]
    pub(crate) fn checked(data: &'a [u8], endian: Endian) -> Self {
        let size = endian.u16(data, rec_off::SIZE) as usize;
        let r = RecordView {
            bytes: &data[..size],
            endian,
        };
        debug_assert!(RecordView::parse(data, endian, 0).is_ok());
        r
    }

    /// The record's bytes, header included (exactly `size` bytes).
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The byte order the record's fields are read in.
    #[inline]
    pub fn endian(&self) -> Endian {
        self.endian
    }
    /// The record type (FORMAT.md §3), also one this version does not name.
    #[inline]
    pub fn rtype(&self) -> RecordType {
        RecordType(self.endian.u16(self.bytes, rec_off::TYPE))
    }
    /// Total record size in bytes, header included; how far to advance to the next record.
    #[inline]
    pub fn size(&self) -> usize {
        self.bytes.len()
    }
    /// The event code of an `EVENT` record; 0 for notes.
    #[inline]
    pub fn code(&self) -> u16 {
        self.endian.u16(self.bytes, rec_off::CODE)
    }
    /// The event flags (`abi::eflag`); 0 for notes unless the note says otherwise.
    #[inline]
    pub fn flags(&self) -> u16 {
        self.endian.u16(self.bytes, rec_off::FLAGS)
    }
    /// The CPU that wrote the record (for recorder notes: the CPU the note is about).
    #[inline]
    pub fn cpu(&self) -> u32 {
        self.endian.u32(self.bytes, rec_off::CPU)
    }
    /// Thread id of the task in context; 0 in hard-IRQ context or for recorder notes.
    #[inline]
    pub fn pid(&self) -> u32 {
        self.endian.u32(self.bytes, rec_off::PID)
    }
    /// Time of the record, in nanoseconds of the stream header's clock.
    #[inline]
    pub fn time_ns(&self) -> u64 {
        self.endian.u64(self.bytes, rec_off::TIME_NS)
    }
    /// Per-CPU sequence number written by the kernel (1, 2, 3, ...); 0 = not sequenced.
    #[inline]
    pub fn seq(&self) -> u64 {
        self.endian.u64(self.bytes, rec_off::SEQ)
    }
    /// Whether this is an `EVENT` record.
    #[inline]
    pub fn is_event(&self) -> bool {
        self.rtype() == RecordType::EVENT
    }

    /// The event fields, if this is an event record.
    #[inline]
    pub fn event(&self) -> Option<EventView<'a>> {
        self.is_event().then_some(EventView(*self))
    }

    /// Decodes the type-specific body.
    pub fn body(&self) -> Body<'a> {
        let (b, e) = (self.bytes, self.endian);
        match self.rtype() {
            RecordType::EVENT => Body::Event(EventView(*self).fields()),
            RecordType::NOTE_PROCESS => Body::Process {
                comm: trim_nul(&b[note_off::PROCESS_COMM..][..note_off::PROCESS_COMM_LEN]),
            },
            RecordType::NOTE_RING => Body::Ring(RingNote {
                ring: e.u32(b, note_off::RING_RING),
                engine_class: e.u32(b, note_off::RING_ENGINE_CLASS),
                size: e.u64(b, note_off::RING_SIZE),
                unit: e.u32(b, note_off::RING_UNIT),
                flags: e.u32(b, note_off::RING_FLAGS),
                name: trim_nul(&b[note_off::RING_NAME..][..note_off::RING_NAME_LEN]),
            }),
            RecordType::NOTE_MSG => {
                let len = e.u32(b, note_off::MSG_LEN) as usize;
                Body::Msg {
                    text: &b[note_off::MSG_TEXT..note_off::MSG_TEXT + len],
                }
            }
            RecordType::NOTE_CLOCK_SYNC => Body::ClockSync(ClockSync {
                gpu_clock_id: e.u32(b, note_off::CLOCK_GPU_CLOCK_ID),
                gpu_time: e.u64(b, note_off::CLOCK_GPU_TIME),
                gpu_freq_hz: e.u64(b, note_off::CLOCK_GPU_FREQ_HZ),
            }),
            RecordType::NOTE_LOST => Body::Lost(Lost {
                cpu: e.u32(b, note_off::LOST_CPU),
                source: e.u32(b, note_off::LOST_SOURCE),
                count: e.u64(b, note_off::LOST_COUNT),
                first_ns: e.u64(b, note_off::LOST_FIRST_NS),
                last_ns: e.u64(b, note_off::LOST_LAST_NS),
            }),
            RecordType::NOTE_STREAM_INFO => Body::StreamInfo(StreamInfo {
                kernel_dropped: e.u64(b, note_off::INFO_KERNEL_DROPPED),
                records: e.u64(b, note_off::INFO_RECORDS),
                bytes: e.u64(b, note_off::INFO_BYTES),
                flags: e.u32(b, note_off::INFO_FLAGS),
            }),
            other => Body::Unknown { rtype: other },
        }
    }
}

/// Minimum size of a record of type `rt` (unknown types only need the common header).
fn min_size(rt: RecordType) -> usize {
    match rt {
        RecordType::EVENT => rsize::EVENT,
        RecordType::NOTE_PROCESS => rsize::NOTE_PROCESS,
        RecordType::NOTE_RING => rsize::NOTE_RING,
        RecordType::NOTE_MSG => rsize::NOTE_MSG_MIN,
        RecordType::NOTE_CLOCK_SYNC => rsize::NOTE_CLOCK_SYNC,
        RecordType::NOTE_LOST => rsize::NOTE_LOST,
        RecordType::NOTE_STREAM_INFO => rsize::NOTE_STREAM_INFO,
        _ => abi::RECORD_HEADER_SIZE,
    }
}

/// An event record, read in place.
#[derive(Clone, Copy, Debug)]
pub struct EventView<'a>(RecordView<'a>);

impl<'a> EventView<'a> {
    /// The event code as the vocabulary's open type (names, argument meanings).
    #[inline]
    pub fn event(&self) -> Event {
        Event(self.code())
    }
    /// The whole record this event is read from.
    #[inline]
    pub fn record(&self) -> RecordView<'a> {
        self.0
    }
    /// The event code number (FORMAT.md §4.1).
    #[inline]
    pub fn code(&self) -> u16 {
        self.0.code()
    }
    /// Context id (driver or DRM client context; 0 = kernel or none).
    #[inline]
    pub fn ctx(&self) -> u32 {
        self.0.endian.u32(self.0.bytes, event_off::CTX)
    }
    /// Ring id, named by a `NOTE_RING`.
    #[inline]
    pub fn ring(&self) -> u32 {
        self.0.endian.u32(self.0.bytes, event_off::RING)
    }
    /// The job's fence seqno on the ring; with `ctx` and `ring` it names a job.
    #[inline]
    pub fn seqno(&self) -> u64 {
        self.0.endian.u64(self.0.bytes, event_off::SEQNO)
    }
    /// First argument, meaning per event code (FORMAT.md §4.1).
    #[inline]
    pub fn arg0(&self) -> u64 {
        self.0.endian.u64(self.0.bytes, event_off::ARG0)
    }
    /// Second argument, meaning per event code (FORMAT.md §4.1).
    #[inline]
    pub fn arg1(&self) -> u64 {
        self.0.endian.u64(self.0.bytes, event_off::ARG1)
    }
    /// Third argument, meaning per event code (often ring fill or an error; FORMAT.md §4.1).
    #[inline]
    pub fn arg2(&self) -> u32 {
        self.0.endian.u32(self.0.bytes, event_off::ARG2)
    }
    /// Fourth argument, meaning per event code (FORMAT.md §4.1).
    #[inline]
    pub fn arg3(&self) -> u32 {
        self.0.endian.u32(self.0.bytes, event_off::ARG3)
    }

    /// Copies every event field out (72 bytes of plain data).
    #[inline]
    pub fn fields(&self) -> EventBody {
        // Event records are at least `rsize::EVENT` bytes (checked by `parse`).
        let b = self.0.bytes[..rsize::EVENT].try_into().unwrap();
        EventBody::from_bytes(b, self.0.endian)
    }
}

/// An event record in the machine's byte order, read with plain loads at fixed offsets.
///
/// [`EventView`] reads every field through the stream's run-time byte order and the record's
/// slice bounds; this view is for the hot paths that see almost only native events (a
/// report over millions of them): its fields are loads from a fixed 72-byte array, so there
/// is neither an order test nor a bounds check per field. Made from a checked record
/// ([`RecordView::native_event`], [`RecordView::event_in`]) or from a run of native events
/// ([`NativeEvents`]); the same accessors as [`EventView`] and [`RecordView`]'s header ones.
#[derive(Clone, Copy, Debug)]
pub struct NativeEvent<'a> {
    /// The first [`rsize::EVENT`] bytes: every field of format 1.0.
    head: &'a [u8; rsize::EVENT],
    /// The whole record (a later minor version may make events longer).
    bytes: &'a [u8],
}

impl<'a> NativeEvent<'a> {
    /// The native event record at the start of `data`, if there is one there (checked as
    /// [`RecordView::parse`] checks it, in the machine's order).
    pub fn parse(data: &'a [u8]) -> Option<NativeEvent<'a>> {
        RecordView::parse(data, Endian::NATIVE, 0)
            .ok()
            .and_then(|r| r.native_event())
    }

    #[inline(always)]
    fn at<const N: usize>(&self, off: usize) -> [u8; N] {
        array(self.head, off)
    }
    /// The record as a [`RecordView`] (for code that takes any record).
    #[inline]
    pub fn record(&self) -> RecordView<'a> {
        RecordView {
            bytes: self.bytes,
            endian: Endian::NATIVE,
        }
    }
    /// The record's bytes, header included (exactly `size` bytes).
    #[inline]
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// The event code as the vocabulary's open type (names, argument meanings).
    #[inline]
    pub fn event(&self) -> Event {
        Event(self.code())
    }
    /// The event code number (FORMAT.md §4.1).
    #[inline]
    pub fn code(&self) -> u16 {
        u16::from_ne_bytes(self.at(rec_off::CODE))
    }
    /// The event flags (`abi::eflag`).
    #[inline]
    pub fn flags(&self) -> u16 {
        u16::from_ne_bytes(self.at(rec_off::FLAGS))
    }
    /// The CPU that wrote the record.
    #[inline]
    pub fn cpu(&self) -> u32 {
        u32::from_ne_bytes(self.at(rec_off::CPU))
    }
    /// Thread id of the task in context; 0 in hard-IRQ context.
    #[inline]
    pub fn pid(&self) -> u32 {
        u32::from_ne_bytes(self.at(rec_off::PID))
    }
    /// Time of the record, in nanoseconds of the stream header's clock.
    #[inline]
    pub fn time_ns(&self) -> u64 {
        u64::from_ne_bytes(self.at(rec_off::TIME_NS))
    }
    /// Per-CPU sequence number written by the kernel; 0 = not sequenced.
    #[inline]
    pub fn seq(&self) -> u64 {
        u64::from_ne_bytes(self.at(rec_off::SEQ))
    }
    /// Context id (driver or DRM client context; 0 = kernel or none).
    #[inline]
    pub fn ctx(&self) -> u32 {
        u32::from_ne_bytes(self.at(event_off::CTX))
    }
    /// Ring id, named by a `NOTE_RING`.
    #[inline]
    pub fn ring(&self) -> u32 {
        u32::from_ne_bytes(self.at(event_off::RING))
    }
    /// The job's fence seqno on the ring; with `ctx` and `ring` it names a job.
    #[inline]
    pub fn seqno(&self) -> u64 {
        u64::from_ne_bytes(self.at(event_off::SEQNO))
    }
    /// First argument, meaning per event code (FORMAT.md §4.1).
    #[inline]
    pub fn arg0(&self) -> u64 {
        u64::from_ne_bytes(self.at(event_off::ARG0))
    }
    /// Second argument, meaning per event code (FORMAT.md §4.1).
    #[inline]
    pub fn arg1(&self) -> u64 {
        u64::from_ne_bytes(self.at(event_off::ARG1))
    }
    /// Third argument, meaning per event code (FORMAT.md §4.1).
    #[inline]
    pub fn arg2(&self) -> u32 {
        u32::from_ne_bytes(self.at(event_off::ARG2))
    }
    /// Fourth argument, meaning per event code (FORMAT.md §4.1).
    #[inline]
    pub fn arg3(&self) -> u32 {
        u32::from_ne_bytes(self.at(event_off::ARG3))
    }
    /// Copies every event field out.
    #[inline]
    pub fn fields(&self) -> EventBody {
        EventBody::read::<Native>(self.head)
    }
}

impl<'a> RecordView<'a> {
    /// This record as a [`NativeEvent`], if it is an event record in the machine's order.
    #[inline]
    pub fn native_event(&self) -> Option<NativeEvent<'a>> {
        if !self.endian.is_native() || !self.is_event() {
            return None;
        }
        // Event records are at least `rsize::EVENT` bytes (checked by `parse`).
        let head = self.bytes.first_chunk::<{ rsize::EVENT }>()?;
        Some(NativeEvent {
            head,
            bytes: self.bytes,
        })
    }

    /// This event record as a [`NativeEvent`] whatever its byte order: a view of the record
    /// itself when it is native, else of its first [`rsize::EVENT`] bytes converted to the
    /// machine's order in `buf` (the view's record is then those 72 bytes). None for a note.
    #[inline]
    pub fn event_in<'b>(&self, buf: &'b mut [u8; rsize::EVENT]) -> Option<NativeEvent<'b>>
    where
        'a: 'b,
    {
        if self.endian.is_native() {
            return self.native_event();
        }
        let ev = self.event()?.fields();
        let st = self.stamp();
        crate::encode::encode_into(&st, &Body::Event(ev), Endian::NATIVE, &mut buf[..]);
        let buf: &'b [u8; rsize::EVENT] = buf;
        Some(NativeEvent {
            head: buf,
            bytes: buf,
        })
    }

    /// The event record of byte order `O` at the start of `data`, if one is there whole;
    /// with its merge key fields (time, cpu, seq). The reader's fast path: anything else
    /// (a note, damage, another order) is left to [`parse`](Self::parse).
    #[inline(always)]
    pub(crate) fn parse_event<O: Order>(data: &'a [u8]) -> Option<(Self, u64, u32, u64)> {
        let h = data.first_chunk::<{ abi::RECORD_HEADER_SIZE }>()?;
        let rt = O::u16([h[rec_off::TYPE], h[rec_off::TYPE + 1]]);
        let sz = O::u16([h[rec_off::SIZE], h[rec_off::SIZE + 1]]) as usize;
        if !event_fits(rt, sz, data.len()) {
            return None;
        }
        let time = O::u64(
            h[rec_off::TIME_NS..rec_off::TIME_NS + 8]
                .try_into()
                .unwrap(),
        );
        let cpu = O::u32(h[rec_off::CPU..rec_off::CPU + 4].try_into().unwrap());
        let seq = O::u64(h[rec_off::SEQ..rec_off::SEQ + 8].try_into().unwrap());
        let r = RecordView {
            bytes: &data[..sz],
            endian: O::ENDIAN,
        };
        Some((r, time, cpu, seq))
    }
}

/// Whether a record of type `rt` and size `sz` with `avail` bytes from its start is an
/// event record the fast paths hand out whole (the reader's merge, its runs, [`NativeEvents`]):
/// anything else (a note, a size no event has, a record cut short) goes to
/// [`RecordView::parse`], which says what is wrong and where.
#[inline(always)]
pub(crate) fn event_fits(rt: u16, sz: usize, avail: usize) -> bool {
    rt == RecordType::EVENT.0
        && sz >= rsize::EVENT
        && sz.is_multiple_of(abi::RECORD_ALIGN)
        && sz <= avail
}

/// The native event records of a run ([`RunItem::Events`](crate::RunItem::Events), also
/// of a [`RawItem`](crate::RawItem)), one [`NativeEvent`] each. Each record is
/// checked (type, size, within the bytes) before it is handed out: bytes that do not
/// continue with a whole native event end the iteration, and [`rest`](Self::rest) holds
/// them (the reader never delivers such a run, but the file may change before it is read:
/// [`Trace::run_changed`](crate::Trace::run_changed)).
#[derive(Clone, Debug)]
pub struct NativeEvents<'a> {
    rest: &'a [u8],
}

impl<'a> NativeEvents<'a> {
    /// The events of `bytes`, a run of whole native event records.
    pub fn new(bytes: &'a [u8]) -> NativeEvents<'a> {
        NativeEvents { rest: bytes }
    }

    /// The bytes not handed out yet: after the iteration ended, empty unless the bytes did
    /// not continue with a whole native event.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for NativeEvents<'a> {
    type Item = NativeEvent<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<NativeEvent<'a>> {
        let rest = self.rest;
        let head = rest.first_chunk::<{ rsize::EVENT }>()?;
        let rt = u16::from_ne_bytes(array(head, rec_off::TYPE));
        let sz = u16::from_ne_bytes(array(head, rec_off::SIZE)) as usize;
        if !event_fits(rt, sz, rest.len()) {
            return None;
        }
        let (bytes, rest) = rest.split_at(sz);
        self.rest = rest;
        Some(NativeEvent { head, bytes })
    }
}

impl RecordView<'_> {
    /// The common header fields (cpu, pid, time, seq) copied out.
    pub fn stamp(&self) -> Stamp {
        Stamp {
            cpu: self.cpu(),
            pid: self.pid(),
            time_ns: self.time_ns(),
            seq: self.seq(),
        }
    }
}

/// Iterates over the records of one in-memory stream (a mmapped file or a buffer).
///
/// After the first error the iterator is finished; everything before the damage has been
/// delivered. [`offset`](Self::offset) is where the next record would start.
pub struct Records<'a> {
    data: &'a [u8],
    endian: Endian,
    pos: usize,
    failed: bool,
}

impl<'a> Records<'a> {
    /// Records of `data`, which starts with a stream header already parsed as `header`.
    pub fn new(data: &'a [u8], header: &StreamHeader) -> Records<'a> {
        Records {
            data,
            endian: header.endian,
            pos: header.header_size as usize,
            failed: false,
        }
    }

    /// Records of a bare record area (no stream header), e.g. a relay sub-buffer.
    pub fn bare(data: &'a [u8], endian: Endian) -> Records<'a> {
        Records {
            data,
            endian,
            pos: 0,
            failed: false,
        }
    }

    /// Byte offset in the data where the next record would start.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RecordView<'a>, FormatError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.data.len() {
            return None;
        }
        match RecordView::parse(&self.data[self.pos..], self.endian, self.pos as u64) {
            Ok(r) => {
                self.pos += r.size();
                Some(Ok(r))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endian::Swapped;

    /// The one generic decoder reads what was written, in both byte orders, whichever entry
    /// point picks the order type; a non-event record is not taken for an event.
    #[test]
    fn the_generic_event_decoder_reads_both_byte_orders() {
        let ev = EventBody {
            code: Event(0x0203),
            flags: 0x0102,
            ctx: 0x0a0b_0c0d,
            ring: 7,
            seqno: 0x1122_3344_5566_7788,
            arg0: 0x0102_0304_0506_0708,
            arg1: u64::MAX - 1,
            arg2: 0xdead_beef,
            arg3: 0x0000_0100,
        };
        let st = Stamp {
            cpu: 1,
            pid: 2,
            time_ns: 3,
            seq: 4,
        };
        for e in [Endian::Little, Endian::Big] {
            let typed = |b: &[u8; rsize::EVENT]| {
                if e.is_native() {
                    EventBody::read_record::<Native>(b)
                } else {
                    EventBody::read_record::<Swapped>(b)
                }
            };
            let mut buf = Vec::new();
            crate::encode(&st, &Body::Event(ev), e, &mut buf);
            let b: &[u8; rsize::EVENT] = buf[..rsize::EVENT].try_into().unwrap();
            assert_eq!(EventBody::from_bytes(b, e), ev, "{e:?}");
            let r = RecordView::parse(&buf, e, 0).unwrap();
            assert_eq!(r.event().unwrap().fields(), ev, "{e:?}");
            assert_eq!(typed(b), Some(ev), "{e:?}");

            let mut note = buf.clone();
            e.put_u16(&mut note, rec_off::TYPE, RecordType::NOTE_RING.0);
            let b: &[u8; rsize::EVENT] = note[..rsize::EVENT].try_into().unwrap();
            assert_eq!(typed(b), None, "{e:?}");
        }
    }
}
