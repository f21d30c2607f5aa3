//! The writer: encodes records and streams in either byte order. Used by the recorder for its
//! notes, by the simulator for everything, and by tests and the fixture generator.

use std::io::{self, Write};

use crate::abi::{self, event_off, note_off, rec_off, rsize};
use crate::endian::Endian;
use crate::record::{put_str, Body, Stamp, StreamHeader};

/// Encoded size of `body`.
pub fn encoded_size(body: &Body<'_>) -> usize {
    match body {
        Body::Event(_) => rsize::EVENT,
        Body::Process { .. } => rsize::NOTE_PROCESS,
        Body::Ring(_) => rsize::NOTE_RING,
        Body::Msg { text } => {
            let len = text.len().min(note_off::MSG_MAX);
            align8(note_off::MSG_TEXT + len)
        }
        Body::ClockSync(_) => rsize::NOTE_CLOCK_SYNC,
        Body::Lost(_) => rsize::NOTE_LOST,
        Body::StreamInfo(_) => rsize::NOTE_STREAM_INFO,
        Body::Unknown { .. } => abi::RECORD_HEADER_SIZE,
    }
}

fn align8(n: usize) -> usize {
    (n + abi::RECORD_ALIGN - 1) & !(abi::RECORD_ALIGN - 1)
}

/// Encodes one record into `out`, which must be exactly [`encoded_size`] bytes.
/// Message text longer than 1024 bytes is truncated.
pub fn encode_into(stamp: &Stamp, body: &Body<'_>, e: Endian, out: &mut [u8]) {
    let size = encoded_size(body);
    assert_eq!(
        out.len(),
        size,
        "encode_into needs exactly encoded_size bytes"
    );
    out.fill(0);
    let (code, flags) = match body {
        Body::Event(ev) => (ev.code.0, ev.flags),
        _ => (0, 0),
    };
    e.put_u16(out, rec_off::TYPE, body.rtype().0);
    e.put_u16(out, rec_off::SIZE, size as u16);
    e.put_u16(out, rec_off::CODE, code);
    e.put_u16(out, rec_off::FLAGS, flags);
    e.put_u32(out, rec_off::CPU, stamp.cpu);
    e.put_u32(out, rec_off::PID, stamp.pid);
    e.put_u64(out, rec_off::TIME_NS, stamp.time_ns);
    e.put_u64(out, rec_off::SEQ, stamp.seq);
    match body {
        Body::Event(ev) => {
            e.put_u32(out, event_off::CTX, ev.ctx);
            e.put_u32(out, event_off::RING, ev.ring);
            e.put_u64(out, event_off::SEQNO, ev.seqno);
            e.put_u64(out, event_off::ARG0, ev.arg0);
            e.put_u64(out, event_off::ARG1, ev.arg1);
            e.put_u32(out, event_off::ARG2, ev.arg2);
            e.put_u32(out, event_off::ARG3, ev.arg3);
        }
        Body::Process { comm } => put_str(
            &mut out[note_off::PROCESS_COMM..][..note_off::PROCESS_COMM_LEN],
            comm,
        ),
        Body::Ring(r) => {
            e.put_u32(out, note_off::RING_RING, r.ring);
            e.put_u32(out, note_off::RING_ENGINE_CLASS, r.engine_class);
            e.put_u64(out, note_off::RING_SIZE, r.size);
            e.put_u32(out, note_off::RING_UNIT, r.unit);
            e.put_u32(out, note_off::RING_FLAGS, r.flags);
            put_str(
                &mut out[note_off::RING_NAME..][..note_off::RING_NAME_LEN],
                r.name,
            );
        }
        Body::Msg { text } => {
            let len = text.len().min(note_off::MSG_MAX);
            e.put_u32(out, note_off::MSG_LEN, len as u32);
            out[note_off::MSG_TEXT..note_off::MSG_TEXT + len].copy_from_slice(&text[..len]);
        }
        Body::ClockSync(c) => {
            e.put_u32(out, note_off::CLOCK_GPU_CLOCK_ID, c.gpu_clock_id);
            e.put_u64(out, note_off::CLOCK_GPU_TIME, c.gpu_time);
            e.put_u64(out, note_off::CLOCK_GPU_FREQ_HZ, c.gpu_freq_hz);
        }
        Body::Lost(l) => {
            e.put_u32(out, note_off::LOST_CPU, l.cpu);
            e.put_u32(out, note_off::LOST_SOURCE, l.source);
            e.put_u64(out, note_off::LOST_COUNT, l.count);
            e.put_u64(out, note_off::LOST_FIRST_NS, l.first_ns);
            e.put_u64(out, note_off::LOST_LAST_NS, l.last_ns);
        }
        Body::StreamInfo(s) => {
            e.put_u64(out, note_off::INFO_KERNEL_DROPPED, s.kernel_dropped);
            e.put_u64(out, note_off::INFO_RECORDS, s.records);
            e.put_u64(out, note_off::INFO_BYTES, s.bytes);
            e.put_u32(out, note_off::INFO_FLAGS, s.flags);
        }
        Body::Unknown { .. } => {}
    }
}

/// Appends one encoded record to `out`.
pub fn encode(stamp: &Stamp, body: &Body<'_>, e: Endian, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + encoded_size(body), 0);
    encode_into(stamp, body, e, &mut out[start..]);
}

/// Writes a stream: the header first, then records, through a caller-chosen `Write`
/// (wrap files in a `BufWriter`).
pub struct StreamWriter<W: Write> {
    out: W,
    endian: Endian,
    scratch: Vec<u8>,
    records: u64,
    bytes: u64,
}

impl<W: Write> StreamWriter<W> {
    /// Writes `header` to `out` and returns a writer for the records that follow it.
    pub fn new(mut out: W, header: &StreamHeader) -> io::Result<StreamWriter<W>> {
        out.write_all(&header.encode())?;
        Ok(StreamWriter {
            out,
            endian: header.endian,
            scratch: Vec::with_capacity(256),
            records: 0,
            bytes: abi::STREAM_HEADER_SIZE as u64,
        })
    }

    /// Encodes one record in the header's byte order and writes it.
    pub fn write(&mut self, stamp: &Stamp, body: &Body<'_>) -> io::Result<()> {
        self.scratch.clear();
        encode(stamp, body, self.endian, &mut self.scratch);
        self.out.write_all(&self.scratch)?;
        self.records += 1;
        self.bytes += self.scratch.len() as u64;
        Ok(())
    }

    /// Appends already-encoded records (for example a drained relay region) verbatim.
    /// The caller guarantees they are whole records in this stream's byte order.
    pub fn write_raw(&mut self, records: &[u8], count: u64) -> io::Result<()> {
        self.out.write_all(records)?;
        self.records += count;
        self.bytes += records.len() as u64;
        Ok(())
    }

    /// Records written so far (raw regions count as the `count` given).
    pub fn records(&self) -> u64 {
        self.records
    }
    /// Bytes written so far, the stream header included.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The underlying writer (to flush it, for example).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
    /// Ends writing and returns the underlying writer (not flushed by this call).
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{EventBody, Lost, RingNote};
    use crate::view::Records;
    use crate::vocab::Event;

    fn sample_bodies() -> Vec<Body<'static>> {
        vec![
            Body::Event(EventBody {
                code: Event::COMMIT,
                flags: 1,
                ctx: 7,
                ring: 1,
                seqno: 42,
                arg0: 0x1000,
                arg1: 64,
                arg2: 128,
                arg3: 3,
            }),
            Body::Process {
                comm: b"vgpu-exercise",
            },
            Body::Ring(RingNote {
                ring: 0,
                engine_class: 6,
                size: 256,
                unit: abi::RING_UNIT_SLOTS,
                flags: abi::ring_flag::CTX_SEQNO,
                name: b"ctrlq",
            }),
            Body::Msg { text: b"hello" },
            Body::Lost(Lost {
                cpu: 1,
                source: 1,
                count: 5,
                first_ns: 10,
                last_ns: 20,
            }),
        ]
    }

    #[test]
    fn records_round_trip_in_both_byte_orders() {
        for e in [Endian::Little, Endian::Big] {
            let mut h = StreamHeader::new(1, 0, "virtio_gpu");
            h.endian = e;
            let mut w = StreamWriter::new(Vec::new(), &h).unwrap();
            let bodies = sample_bodies();
            for (i, b) in bodies.iter().enumerate() {
                let st = Stamp {
                    cpu: 1,
                    pid: 100 + i as u32,
                    time_ns: 1000 * i as u64,
                    seq: i as u64 + 1,
                };
                w.write(&st, b).unwrap();
            }
            let bytes = w.into_inner();
            let parsed = StreamHeader::parse(&bytes).unwrap();
            assert_eq!(parsed, h);
            let got: Vec<_> = Records::new(&bytes, &parsed).map(|r| r.unwrap()).collect();
            assert_eq!(got.len(), bodies.len());
            for (i, (r, b)) in got.iter().zip(&bodies).enumerate() {
                assert_eq!(r.body(), *b);
                assert_eq!(r.pid(), 100 + i as u32);
                assert_eq!(r.seq(), i as u64 + 1);
            }
        }
    }

    #[test]
    fn message_size_is_padded_to_eight() {
        assert_eq!(encoded_size(&Body::Msg { text: b"" }), 40);
        assert_eq!(encoded_size(&Body::Msg { text: b"x" }), 48);
        assert_eq!(
            encoded_size(&Body::Msg {
                text: &[b'a'; 5000]
            }),
            40 + 1024
        );
    }
}
