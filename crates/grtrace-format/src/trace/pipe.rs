//! Merged and piped inputs: a reader for streams (incremental, bounded buffers) and the
//! per-CPU queues a merged input is split into.

use std::io::{self, Read};

use super::error::header_error;
use super::file::{release_pages, RELEASE_LAG, RELEASE_STEP};
use super::open::shrunk_error;
use super::seq::Origins;
use super::{ErrorKind, RunSummary, TraceError, MAX_CPUS, PIPE_WINDOW, READ_CHUNK};
use crate::abi::{self, rec_off};
use crate::endian::Endian;
use crate::error::FormatError;
use crate::mapped::MappedFile;
use crate::record::StreamHeader;
use crate::view::RecordView;
use crate::vocab::RecordType;

/// Where a merged input's bytes come from.
pub(super) enum Feed<'m> {
    Slice {
        data: &'m [u8],
        pos: usize,
        /// The file mapping behind `data`, if any (it says whether damage is a shrunk file),
        /// and how much of it was handed back: records are copied into the queues, so the
        /// pages passed are released as a per-CPU file's are (`file::release_pages`), and a
        /// merged file keeps a flat resident set too.
        shrink: Option<&'m MappedFile>,
        released: usize,
    },
    Reader {
        reader: &'m mut Box<dyn Read + Send>,
        buf: Vec<u8>,
        start: usize,
        /// Valid bytes are `buf[start..end]`; the rest is reused storage.
        end: usize,
        /// Stream offset of `buf[0]`.
        base: u64,
        eof: bool,
        /// Smallest read: the buffer starts at this size and doubles up to [`READ_CHUNK`].
        chunk: usize,
    },
}

/// Result of pulling one record from a feed.
pub(super) enum Pulled<'b> {
    /// A record (bytes, stream offset).
    Record(&'b [u8], u64),
    /// A new stream header (concatenated streams) and its stream offset, for the caller to
    /// apply.
    Header(StreamHeader, u64),
    End,
}

/// One CPU's records from a merged input, waiting to be emitted in order.
/// Keyed in `Demux::index` by CPU only, whatever the number of stream headers in the input:
/// each entry carries the byte order, checking and origin of the header it came under
/// (concatenated streams may differ in all three), so a million embedded headers cost no
/// more queues than one.
pub(super) struct Queue {
    /// Entries: [`QENTRY`] bytes of prefix (u64 stream offset, u32 origin, u32 flags, native
    /// order) then the record bytes.
    pub(super) data: Vec<u8>,
    pub(super) head: usize,
    pub(super) in_heap: bool,
    /// Listed in `Demux::ready` (got records while out of the heap).
    pub(super) pending: bool,
    /// Merge cursor id, assigned when first pushed to the heap.
    pub(super) id: Option<u32>,
}

/// Storage an empty queue keeps for reuse.
pub(super) const QUEUE_KEEP: usize = 64 << 10;

/// Bytes of a queue entry's prefix.
pub(super) const QENTRY: usize = 16;
pub(super) const QF_BIG: u32 = 1;
pub(super) const QF_CHECK: u32 = 2;

/// What a queued record came with: its stream offset and its header's state.
#[derive(Clone, Copy)]
pub(super) struct QueuedAt {
    pub(super) offset: u64,
    pub(super) origin: u32,
    pub(super) check: bool,
}

impl Queue {
    pub(super) fn is_empty(&self) -> bool {
        self.head >= self.data.len()
    }

    pub(super) fn push(&mut self, rec: &[u8], offset: u64, hs: &HdrState) {
        let flags = (hs.endian == Endian::Big) as u32 * QF_BIG + hs.check as u32 * QF_CHECK;
        // One prefix copy and one record copy per record.
        let mut p = [0u8; QENTRY];
        p[..8].copy_from_slice(&offset.to_ne_bytes());
        p[8..12].copy_from_slice(&hs.origin.to_ne_bytes());
        p[12..].copy_from_slice(&flags.to_ne_bytes());
        self.data.reserve(QENTRY + rec.len());
        self.data.extend_from_slice(&p);
        self.data.extend_from_slice(rec);
    }

    /// The head record and where it came from.
    #[inline(always)]
    pub(super) fn peek(&self) -> (RecordView<'_>, QueuedAt) {
        let (p, rest) = self.data[self.head..].split_at(QENTRY);
        let p: &[u8; QENTRY] = p.try_into().unwrap();
        let offset = u64::from_ne_bytes([p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]]);
        let origin = u32::from_ne_bytes([p[8], p[9], p[10], p[11]]);
        let flags = u32::from_ne_bytes([p[12], p[13], p[14], p[15]]);
        let endian = if flags & QF_BIG != 0 {
            Endian::Big
        } else {
            Endian::Little
        };
        // Queued records were checked when they were read: only the size is read again.
        let r = RecordView::checked(rest, endian);
        let at = QueuedAt {
            offset,
            origin,
            check: flags & QF_CHECK != 0,
        };
        (r, at)
    }

    /// Drops the head record, whose size is `size`; returns the bytes freed.
    #[inline(always)]
    pub(super) fn pop(&mut self, size: usize) -> usize {
        let n = QENTRY + size;
        self.head += n;
        if self.head == self.data.len() {
            self.data.clear();
            self.head = 0;
            if self.data.capacity() > QUEUE_KEEP {
                // An empty queue keeps a little storage for its next records, not the most
                // it ever held: thousands of queues must not each keep their peak.
                self.data = Vec::new();
            }
        } else if self.head > (1 << 20) && self.head * 2 > self.data.len() {
            self.data.drain(..self.head);
            self.head = 0;
        }
        n
    }
}

/// Byte order, checking and origin (card and session) of the current header of a merged
/// input.
#[derive(Clone, Copy)]
pub(super) struct HdrState {
    pub(super) endian: Endian,
    pub(super) check: bool,
    pub(super) origin: u32,
}

impl HdrState {
    pub(super) fn new(h: &StreamHeader, origins: &mut Origins) -> HdrState {
        HdrState {
            endian: h.endian,
            check: h.flags & abi::STREAM_SEQ_CHECKED == 0,
            origin: origins.of(h),
        }
    }
}

/// A merged input split into per-CPU queues.
pub(super) struct Demux<'m> {
    pub(super) name: &'m str,
    pub(super) feed: Feed<'m>,
    pub(super) hdr: HdrState,
    pub(super) queues: Vec<Queue>,
    /// Queue index by CPU; CPUs at or above `MAX_CPUS` share one queue, so crafted CPU
    /// numbers cannot multiply queues (and headers do not add any: see [`Queue`]).
    pub(super) index: std::collections::HashMap<u32, usize>,
    /// The last `index` entry used: merged inputs come in runs of one CPU.
    pub(super) last: Option<(u32, usize)>,
    /// Queues that received records while out of the heap (work for `enqueue_ready`).
    pub(super) ready: Vec<usize>,
    pub(super) buffered: usize,
    pub(super) done: bool,
    /// Read ahead before the first emission.
    pub(super) primed: bool,
    /// `held()` and the queue count as last added to the merger's totals.
    pub(super) held_noted: usize,
    pub(super) queues_noted: usize,
    /// Bytes to read ahead before the first emission: [`PIPE_READAHEAD`] for a merged stream
    /// (so that every CPU has been seen), a record for a per-CPU one (already in order).
    pub(super) readahead: usize,
    /// Headers read that start a new (card, session), not yet handed to the consumer.
    pub(super) announced: Vec<Announced>,
}

/// A stream header that starts a new (card, session), waiting to be delivered as
/// [`Item::Stream`](super::Item::Stream) before any record read after it.
pub(super) struct Announced {
    pub(super) offset: u64,
    pub(super) header: StreamHeader,
    pub(super) earlier_session: Option<u64>,
}

impl<'m> Demux<'m> {
    pub(super) fn new(name: &'m str, feed: Feed<'m>, hdr: HdrState, readahead: usize) -> Demux<'m> {
        Demux {
            name,
            feed,
            hdr,
            readahead,
            queues: Vec::new(),
            index: std::collections::HashMap::new(),
            last: None,
            ready: Vec::new(),
            buffered: 0,
            held_noted: 0,
            queues_noted: 0,
            done: false,
            primed: false,
            announced: Vec::new(),
        }
    }
}

/// Reads the next record or header from a feed.
pub(super) fn pull<'f>(
    name: &str,
    feed: &'f mut Feed<'_>,
    hs: &HdrState,
    sum: &mut RunSummary,
) -> Pulled<'f> {
    match feed {
        Feed::Slice {
            data,
            pos,
            shrink,
            released,
        } => {
            let data: &[u8] = data;
            if *pos >= data.len() {
                return Pulled::End;
            }
            if *pos >= *released + RELEASE_STEP + RELEASE_LAG {
                release_pages(*shrink, released, *pos);
            }
            let at = *pos;
            if data[at..].starts_with(&abi::STREAM_MAGIC) {
                match StreamHeader::parse(&data[at..]) {
                    Ok(h) => {
                        *pos += h.header_size as usize;
                        return Pulled::Header(h, at as u64);
                    }
                    Err(e) => {
                        let shrunk = shrink.and_then(|m| shrunk_error(m, name, at as u64));
                        sum.errors
                            .push(shrunk.unwrap_or_else(|| header_error(name, at as u64, e)));
                        *pos = data.len();
                        return Pulled::End;
                    }
                }
            }
            match RecordView::parse(&data[at..], hs.endian, at as u64) {
                Ok(r) => {
                    *pos += r.size();
                    Pulled::Record(r.bytes(), at as u64)
                }
                Err(e) => {
                    let shrunk = shrink.and_then(|m| shrunk_error(m, name, at as u64));
                    sum.errors.push(shrunk.unwrap_or_else(|| TraceError {
                        file: name.to_string(),
                        error: ErrorKind::Format(e),
                    }));
                    *pos = data.len();
                    Pulled::End
                }
            }
        }
        Feed::Reader {
            reader,
            buf,
            start,
            end,
            base,
            eof,
            chunk,
        } => {
            // Make sure a whole record (or header) is in the buffer.
            let mut want = abi::RECORD_HEADER_SIZE;
            loop {
                let have = *end - *start;
                if have >= want {
                    let b = &buf[*start..*end];
                    if b.starts_with(&abi::STREAM_MAGIC) {
                        if have >= abi::STREAM_HEADER_SIZE {
                            match StreamHeader::parse(b) {
                                Ok(h) => {
                                    let at = *base + *start as u64;
                                    *start += h.header_size as usize;
                                    return Pulled::Header(h, at);
                                }
                                Err(FormatError::TruncatedHeader { need, .. })
                                    if !*eof && need > want =>
                                {
                                    want = need;
                                }
                                Err(e) => {
                                    sum.errors
                                        .push(header_error(name, *base + *start as u64, e));
                                    *eof = true;
                                    *start = *end;
                                    return Pulled::End;
                                }
                            }
                        } else if !*eof {
                            want = abi::STREAM_HEADER_SIZE;
                        }
                    } else {
                        let size = hs.endian.u16(b, rec_off::SIZE) as usize;
                        if size > want && have < size && !*eof {
                            want = size;
                        } else {
                            let off = *base + *start as u64;
                            return match RecordView::parse(b, hs.endian, off) {
                                Ok(r) => {
                                    *start += r.size();
                                    let s = *start - r.size();
                                    Pulled::Record(&buf[s..*start], off)
                                }
                                Err(e) => {
                                    sum.errors.push(TraceError {
                                        file: name.to_string(),
                                        error: ErrorKind::Format(e),
                                    });
                                    *eof = true;
                                    *start = *end;
                                    Pulled::End
                                }
                            };
                        }
                    }
                }
                if *eof {
                    let have = *end - *start;
                    if have == 0 {
                        return Pulled::End;
                    }
                    let off = *base + *start as u64;
                    // Let the record parser name the truncation.
                    let err = if buf[*start..*end].starts_with(&abi::STREAM_MAGIC) {
                        header_error(
                            name,
                            off,
                            FormatError::TruncatedHeader {
                                have,
                                need: abi::STREAM_HEADER_SIZE,
                            },
                        )
                    } else {
                        TraceError {
                            file: name.to_string(),
                            error: ErrorKind::Format(
                                RecordView::parse(&buf[*start..*end], hs.endian, off)
                                    .err()
                                    .unwrap_or(FormatError::TruncatedRecord {
                                        offset: off,
                                        need: want,
                                        have,
                                    }),
                            ),
                        }
                    };
                    sum.errors.push(err);
                    *start = *end;
                    return Pulled::End;
                }
                // Compact, then read another chunk into the reused buffer.
                if *start > 0 && (*start >= READ_CHUNK || *start * 2 >= *end) {
                    buf.copy_within(*start..*end, 0);
                    *end -= *start;
                    *base += *start as u64;
                    *start = 0;
                }
                // The buffer doubles from `chunk` up to READ_CHUNK (small inputs stay cheap).
                let old = *end;
                let grow = buf.len().clamp(*chunk, READ_CHUNK).max(want);
                if buf.len() < old + grow {
                    buf.resize(old + grow, 0);
                }
                let res = loop {
                    match reader.read(&mut buf[old..]) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        other => break other,
                    }
                };
                match res {
                    Ok(n) => {
                        *end = old + n;
                        if n == 0 {
                            *eof = true;
                        }
                    }
                    Err(e) => {
                        sum.errors.push(TraceError::at(
                            name,
                            *base + old as u64,
                            format!("read error: {e}"),
                        ));
                        *eof = true;
                        *start = *end;
                        return Pulled::End;
                    }
                }
            }
        }
    }
}

impl Demux<'_> {
    /// Bytes this input holds: queued records and its read buffer.
    pub(super) fn held(&self) -> usize {
        self.buffered
            + match &self.feed {
                Feed::Slice { .. } => 0,
                Feed::Reader { buf, .. } => buf.len(),
            }
    }

    /// Reads records into queues until queue `want` has one, the input ends, or the window is
    /// full (`want` None: until the read-ahead is done).
    pub(super) fn refill(
        &mut self,
        want: Option<usize>,
        origins: &mut Origins,
        sum: &mut RunSummary,
    ) {
        if self.done {
            return;
        }
        loop {
            if let Some(q) = want {
                if !self.queues[q].is_empty() {
                    return;
                }
            } else if self.buffered >= self.readahead {
                return;
            }
            if self.buffered >= PIPE_WINDOW {
                return;
            }
            let hs0 = self.hdr;
            let (rec, off) = match pull(self.name, &mut self.feed, &self.hdr, sum) {
                Pulled::End => {
                    self.done = true;
                    return;
                }
                Pulled::Header(h, at) => {
                    match origins.admit(&h, self.name, at) {
                        Ok(new) => {
                            let known = origins.list.len();
                            self.hdr = HdrState::new(&h, origins);
                            // A (card, session) not seen before (and not past the table:
                            // that is warned about): the consumer hears of it before any
                            // of its records (at most MAX_ORIGINS per run).
                            if let Some(earlier_session) =
                                new.filter(|_| origins.list.len() > known)
                            {
                                self.announced.push(Announced {
                                    offset: at,
                                    header: h,
                                    earlier_session,
                                });
                            }
                        }
                        Err(e) => {
                            // Another recording or a card this run does not take: the
                            // input ends here, what was queued before still goes out.
                            sum.errors.push(e);
                            self.done = true;
                            return;
                        }
                    }
                    continue;
                }
                Pulled::Record(r, off) => (r, off),
            };
            let rt = hs0.endian.u16(rec, rec_off::TYPE);
            if !RecordType(rt).is_known() {
                sum.unknown_records += 1;
                continue;
            }
            let key = hs0.endian.u32(rec, rec_off::CPU).min(MAX_CPUS);
            let qi = match self.last {
                Some((k, i)) if k == key => i,
                _ => {
                    let i = match self.index.get(&key) {
                        Some(&i) => i,
                        None => {
                            self.queues.push(Queue {
                                data: Vec::new(),
                                head: 0,
                                in_heap: false,
                                pending: false,
                                id: None,
                            });
                            self.index.insert(key, self.queues.len() - 1);
                            self.queues.len() - 1
                        }
                    };
                    self.last = Some((key, i));
                    i
                }
            };
            let q = &mut self.queues[qi];
            if !q.in_heap && !q.pending {
                q.pending = true;
                self.ready.push(qi);
            }
            q.push(rec, off, &hs0);
            self.buffered += QENTRY + rec.len();
        }
    }
}
