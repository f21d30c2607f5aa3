//! The shared-memory protocol of FORMAT.md §7.2: views of a mapped relay buffer, the
//! producer (kernel writer model) and the consumer cursor.
//!
//! A relay buffer is memory another process (the kernel, or the simulator) writes while we
//! read it, or reads while we write it. Its bytes are therefore never exposed as a Rust slice
//! that could change under it: the views hold a raw pointer, header fields are accessed as
//! atomics, record bytes are copied out only below a `commit` acquire-loaded first. What safe
//! code cannot get wrong is the direction and the lifetime: a [`RelayReader`] borrows a
//! mapping (read-only is enough) and can only read; a [`RelayWriter`] borrows a writable
//! mapping mutably, and only it can write. Neither outlives the mapping it borrows.
//!
//! ```
//! # use grtrace_format::relay::{RelayReader, RelayWriter};
//! # let file = tempfile_of(8192);
//! # fn tempfile_of(len: u64) -> std::fs::File {
//! #     let p = std::env::temp_dir().join(format!("relay-doc-{}", std::process::id()));
//! #     let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
//! #     f.set_len(len).unwrap();
//! #     std::fs::remove_file(&p).unwrap();
//! #     f
//! # }
//! // SAFETY: a file this process owns; nothing truncates it while mapped.
//! let mut wmap = unsafe { memmap2::MmapMut::map_mut(&file) }.unwrap();
//! let writer = RelayWriter::new(&mut wmap, 4096, 2);
//! let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
//! let reader = RelayReader::new(&map, 4096, 2);
//! # let _ = (writer, reader);
//! ```
//!
//! A read-only mapping cannot give a writer:
//!
//! ```compile_fail
//! # use grtrace_format::relay::RelayWriter;
//! # let file = std::fs::File::open("/dev/zero").unwrap();
//! let mut map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
//! let writer = RelayWriter::new(&mut map, 4096, 2); // expected `&mut MmapMut`
//! ```
//!
//! and no view outlives its mapping:
//!
//! ```compile_fail
//! # use grtrace_format::relay::RelayReader;
//! # let file = std::fs::File::open("/dev/zero").unwrap();
//! let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
//! let reader = RelayReader::new(&map, 4096, 2);
//! drop(map); // `map` is still borrowed by `reader`
//! reader.header(0);
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use memmap2::{Mmap, MmapMut};

use crate::abi::subbuf;

/// Where a relay buffer is and how it is cut: `n_subbufs × subbuf_size` bytes at `base`.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    base: NonNull<u8>,
    subbuf_size: usize,
    n_subbufs: usize,
}

impl Geometry {
    /// # Panics
    /// If `base` is not 8-aligned, `subbuf_size` is not a multiple of 8 or smaller than a
    /// sub-buffer header, `n_subbufs` is 0, or `len` (the bytes mapped) is too short.
    fn new(base: *const u8, len: usize, subbuf_size: usize, n_subbufs: usize) -> Geometry {
        assert!((base as usize).is_multiple_of(8) && subbuf_size.is_multiple_of(8));
        assert!(subbuf_size >= subbuf::HEADER_SIZE && n_subbufs > 0);
        assert!(
            subbuf_size.checked_mul(n_subbufs).is_some_and(|n| n <= len),
            "relay buffer of {n_subbufs} x {subbuf_size} bytes in a {len}-byte mapping"
        );
        Geometry {
            base: NonNull::new(base as *mut u8).expect("mapping is not null"),
            subbuf_size,
            n_subbufs,
        }
    }

    /// The address of byte `off` of the sub-buffer that holds absolute sub-buffer `seq`.
    #[inline]
    fn at(&self, seq: u64, off: usize) -> *mut u8 {
        debug_assert!(off <= self.subbuf_size);
        let slot = (seq % self.n_subbufs as u64) as usize;
        // SAFETY: slot < n_subbufs and off <= subbuf_size, so the address is inside (or one
        // past) the buffer that `Geometry::new` checked against the mapping's length.
        unsafe { self.base.as_ptr().add(slot * self.subbuf_size + off) }
    }
}

/// A read-only view of one relay buffer (`n_subbufs × subbuf_size` bytes) in a shared
/// mapping: the consumer's side. It lives no longer than the mapping it was made from.
#[derive(Clone, Copy, Debug)]
pub struct RelayReader<'m> {
    g: Geometry,
    _map: PhantomData<&'m [u8]>,
}

// SAFETY: a reader only performs atomic loads of header fields and copies of record bytes
// that the protocol's release/acquire pairs make stable; any thread may do that.
unsafe impl Send for RelayReader<'_> {}
// SAFETY: as for Send: shared use is the same loads and copies, none of which writes.
unsafe impl Sync for RelayReader<'_> {}

impl<'m> RelayReader<'m> {
    /// A view of the relay buffer at the start of `map` (a relay file mapped read-only).
    ///
    /// # Panics
    /// If the geometry does not fit the mapping: `subbuf_size` must be a multiple of 8 and at
    /// least the sub-buffer header, `n_subbufs` non-zero, and the buffer no longer than `map`.
    pub fn new(map: &'m Mmap, subbuf_size: usize, n_subbufs: usize) -> RelayReader<'m> {
        RelayReader {
            g: Geometry::new(map.as_ptr(), map.len(), subbuf_size, n_subbufs),
            _map: PhantomData,
        }
    }

    /// A view of memory that is not a [`Mmap`] (tests, an in-process producer).
    ///
    /// # Safety
    /// `base` must point to at least `subbuf_size * n_subbufs` bytes that stay allocated for
    /// `'m`, and every writer of them must follow the relay protocol (headers written with
    /// the atomics of [`RelayWriter`], record bytes not changed below a published `commit`).
    ///
    /// # Panics
    /// As [`new`](Self::new).
    pub unsafe fn from_raw_parts(
        base: *const u8,
        subbuf_size: usize,
        n_subbufs: usize,
    ) -> RelayReader<'m> {
        RelayReader {
            g: Geometry::new(base, usize::MAX, subbuf_size, n_subbufs),
            _map: PhantomData,
        }
    }

    /// Bytes per sub-buffer, header included.
    pub fn subbuf_size(&self) -> usize {
        self.g.subbuf_size
    }

    /// Sub-buffers in the buffer.
    pub fn n_subbufs(&self) -> usize {
        self.g.n_subbufs
    }

    /// The header of the sub-buffer that holds absolute sub-buffer number `seq`.
    pub fn header(&self, seq: u64) -> SubbufHeader<'m> {
        SubbufHeader {
            base: self.g.at(seq, 0),
            _map: PhantomData,
        }
    }

    /// Copies `len` bytes at `off` (from the start of the sub-buffer of `seq`) to `out`.
    /// The caller has acquire-loaded a `commit` covering the range (else the bytes may be
    /// half-written records, which the record parser rejects: never undefined behaviour).
    ///
    /// # Panics
    /// If the range is not inside one sub-buffer.
    pub fn copy_out(&self, seq: u64, off: usize, len: usize, out: &mut Vec<u8>) {
        assert!(off
            .checked_add(len)
            .is_some_and(|e| e <= self.g.subbuf_size));
        let start = out.len();
        out.reserve(len);
        // SAFETY: the range is inside the buffer (asserted), the destination has `len` spare
        // bytes (reserved), and the writer does not touch bytes below a published commit until
        // the sub-buffer is consumed.
        unsafe {
            std::ptr::copy_nonoverlapping(self.g.at(seq, off), out.as_mut_ptr().add(start), len);
            out.set_len(start + len);
        }
    }
}

/// A relay buffer file mapped read-only, owned: what a consumer thread keeps, handing out
/// [`RelayReader`]s that borrow it.
#[derive(Debug)]
pub struct RelayMap {
    map: Mmap,
    subbuf_size: usize,
    n_subbufs: usize,
}

impl RelayMap {
    /// Keeps `map` as a buffer of `n_subbufs` sub-buffers of `subbuf_size` bytes.
    ///
    /// # Panics
    /// As [`RelayReader::new`].
    pub fn new(map: Mmap, subbuf_size: usize, n_subbufs: usize) -> RelayMap {
        Geometry::new(map.as_ptr(), map.len(), subbuf_size, n_subbufs);
        RelayMap {
            map,
            subbuf_size,
            n_subbufs,
        }
    }

    /// A read view of the buffer, valid while `self` is.
    pub fn reader(&self) -> RelayReader<'_> {
        RelayReader::new(&self.map, self.subbuf_size, self.n_subbufs)
    }
}

/// The producer's view of one relay buffer in a writable shared mapping. Unique (it borrows
/// the mapping mutably) and no longer-lived than the mapping.
#[derive(Debug)]
pub struct RelayWriter<'m> {
    g: Geometry,
    _map: PhantomData<&'m mut [u8]>,
}

// SAFETY: the writer is unique; moving it to another thread moves the only write access.
unsafe impl Send for RelayWriter<'_> {}

impl<'m> RelayWriter<'m> {
    /// A writer over the relay buffer at the start of `map`.
    ///
    /// # Panics
    /// As [`RelayReader::new`].
    pub fn new(map: &'m mut MmapMut, subbuf_size: usize, n_subbufs: usize) -> RelayWriter<'m> {
        RelayWriter {
            g: Geometry::new(map.as_mut_ptr(), map.len(), subbuf_size, n_subbufs),
            _map: PhantomData,
        }
    }

    /// A writer over memory that is not a [`MmapMut`] (tests).
    ///
    /// # Safety
    /// `base` must point to at least `subbuf_size * n_subbufs` writable bytes that stay
    /// allocated for `'m`, that nothing else writes, and that readers access only through
    /// [`RelayReader`].
    ///
    /// # Panics
    /// As [`RelayReader::new`].
    pub unsafe fn from_raw_parts(
        base: *mut u8,
        subbuf_size: usize,
        n_subbufs: usize,
    ) -> RelayWriter<'m> {
        RelayWriter {
            g: Geometry::new(base, usize::MAX, subbuf_size, n_subbufs),
            _map: PhantomData,
        }
    }

    /// A read view of the same buffer, for as long as this borrow of the writer.
    pub fn reader(&self) -> RelayReader<'_> {
        RelayReader {
            g: self.g,
            _map: PhantomData,
        }
    }

    fn header(&self, seq: u64) -> SubbufHeader<'_> {
        self.reader().header(seq)
    }

    /// Mutable bytes of a sub-buffer range.
    ///
    /// # Safety
    /// No consumer may read the range before the producer publishes it with a commit, and
    /// the range must be inside one sub-buffer.
    unsafe fn bytes_mut(&mut self, seq: u64, off: usize, len: usize) -> &mut [u8] {
        // SAFETY: the caller keeps the range inside one sub-buffer of the mapping (which
        // lives as long as `self`) and unread by consumers until it is committed; `&mut self`
        // makes this producer the only writer.
        unsafe { std::slice::from_raw_parts_mut(self.g.at(seq, off), len) }
    }

    /// Starts a sub-buffer. Every field first, `subbuf_seq` last with release, so a consumer
    /// that sees `seq` sees a consistent header.
    fn start(&mut self, seq: u64, lost: u32) {
        let vh = {
            let v = subbuf::VERSION.to_ne_bytes();
            let h = (subbuf::HEADER_SIZE as u16).to_ne_bytes();
            u32::from_ne_bytes([v[0], v[1], h[0], h[1]])
        };
        let h = self.header(seq);
        h.u32_at(subbuf::OFF_MAGIC)
            .store(subbuf::MAGIC, Ordering::Relaxed);
        h.u32_at(subbuf::OFF_VERSION).store(vh, Ordering::Relaxed);
        h.u32_at(subbuf::OFF_COMMIT)
            .store(subbuf::HEADER_SIZE as u32, Ordering::Relaxed);
        h.u32_at(subbuf::OFF_PADDING).store(0, Ordering::Relaxed);
        h.u32_at(subbuf::OFF_LOST).store(lost, Ordering::Relaxed);
        h.u32_at(subbuf::OFF_FLAGS).store(0, Ordering::Relaxed);
        h.u64_at(subbuf::OFF_SUBBUF_SEQ)
            .store(seq, Ordering::Release);
    }

    /// Publishes bytes `[0, commit)` of sub-buffer `seq` (records are complete before this
    /// store).
    fn commit_release(&mut self, seq: u64, commit: u32) {
        self.header(seq)
            .u32_at(subbuf::OFF_COMMIT)
            .store(commit, Ordering::Release);
    }

    /// The switch away from sub-buffer `seq`: `padding` first, then `FINAL` with release.
    fn finalize(&mut self, seq: u64, padding: u32) {
        let h = self.header(seq);
        h.u32_at(subbuf::OFF_PADDING)
            .store(padding, Ordering::Relaxed);
        h.u32_at(subbuf::OFF_FLAGS)
            .store(subbuf::FLAG_FINAL, Ordering::Release);
    }
}

/// The header at the start of one sub-buffer (FORMAT.md §7.2), read in place.
#[derive(Clone, Copy, Debug)]
pub struct SubbufHeader<'m> {
    base: *mut u8,
    _map: PhantomData<&'m [u8]>,
}

impl SubbufHeader<'_> {
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `base` is an 8-aligned header start inside a live mapping (Geometry::new,
        // and the lifetime ties this header to it); every u32 field offset is 4-aligned.
        // Atomic loads are sound on read-only mappings; only a RelayWriter stores.
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: as above; `subbuf_seq` is at offset 8, so it is 8-aligned.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    /// `magic` ([`subbuf::MAGIC`] in a started sub-buffer).
    pub fn magic(&self) -> u32 {
        self.u32_at(subbuf::OFF_MAGIC).load(Ordering::Relaxed)
    }
    /// `version` (low half) and `header_size` (high half) share one u32 word.
    pub fn version_and_header_size(&self) -> (u16, u16) {
        let w = self.u32_at(subbuf::OFF_VERSION).load(Ordering::Relaxed);
        let b = w.to_ne_bytes();
        (
            u16::from_ne_bytes([b[0], b[1]]),
            u16::from_ne_bytes([b[2], b[3]]),
        )
    }
    /// Acquire load: seeing the expected value makes the rest of the header visible.
    pub fn seq_acquire(&self) -> u64 {
        self.u64_at(subbuf::OFF_SUBBUF_SEQ).load(Ordering::Acquire)
    }
    /// Acquire load of `commit`: the record bytes below it are complete.
    pub fn commit_acquire(&self) -> u32 {
        self.u32_at(subbuf::OFF_COMMIT).load(Ordering::Acquire)
    }
    /// Acquire load of `flags` ([`subbuf::FLAG_FINAL`] once the producer switched away).
    pub fn flags_acquire(&self) -> u32 {
        self.u32_at(subbuf::OFF_FLAGS).load(Ordering::Acquire)
    }
    /// Unused bytes at the end of a `FINAL` sub-buffer.
    pub fn padding(&self) -> u32 {
        self.u32_at(subbuf::OFF_PADDING).load(Ordering::Relaxed)
    }
    /// Records refused just before this sub-buffer started.
    pub fn lost(&self) -> u32 {
        self.u32_at(subbuf::OFF_LOST).load(Ordering::Relaxed)
    }
}

/// Counters of one CPU's buffer that the `state` file shows, shared between the producer and
/// whoever serves `state` and `consumed`.
#[derive(Debug, Default)]
pub struct CpuCounters {
    /// Sub-buffers switched away from (= absolute number of the current sub-buffer).
    pub produced: AtomicU64,
    /// Sub-buffers the consumer released through `consumed`.
    pub consumed: AtomicU64,
    /// Records refused since the last sub-buffer switch.
    pub lost_pending: AtomicU64,
}

impl CpuCounters {
    /// Applies a `consumed` write: relay clamps the delta to what was produced.
    pub fn consume(&self, n: u64) {
        let produced = self.produced.load(Ordering::Acquire);
        let _ = self
            .consumed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                Some((c + n).min(produced))
            });
    }
}

/// The kernel writer of FORMAT.md §7.2 for one CPU, in no-overwrite mode.
///
/// `reserve` + fill + `commit` is what the kernel does with IRQs off per record; the simulator
/// may commit only every few records to model a commit that lags behind written bytes.
pub struct RelayProducer<'a> {
    buf: RelayWriter<'a>,
    counters: &'a CpuCounters,
    dropped: &'a AtomicU64,
    /// Absolute number of the current sub-buffer.
    seq: u64,
    /// Write offset in the current sub-buffer; `None` while a switch is refused.
    offset: Option<usize>,
    /// Highest offset stored as `commit`.
    committed: usize,
    lost_pending: u32,
}

impl<'a> RelayProducer<'a> {
    /// Starts sub-buffer 0 of `buf`.
    pub fn new(
        mut buf: RelayWriter<'a>,
        counters: &'a CpuCounters,
        dropped: &'a AtomicU64,
    ) -> RelayProducer<'a> {
        buf.start(0, 0);
        counters.produced.store(0, Ordering::Release);
        RelayProducer {
            buf,
            counters,
            dropped,
            seq: 0,
            offset: Some(subbuf::HEADER_SIZE),
            committed: subbuf::HEADER_SIZE,
            lost_pending: 0,
        }
    }

    /// Reserves `len` bytes (a whole record, multiple of 8) and returns them for filling, or
    /// `None` when the buffer is full: the record is then counted as lost (`lost`, `dropped`).
    pub fn reserve(&mut self, len: usize) -> Option<&mut [u8]> {
        debug_assert!(len.is_multiple_of(8) && len + subbuf::HEADER_SIZE <= self.buf.g.subbuf_size);
        let fits = matches!(self.offset, Some(off) if off + len <= self.buf.g.subbuf_size);
        if !fits && !self.switch() {
            self.lost_pending += 1;
            self.counters
                .lost_pending
                .store(self.lost_pending as u64, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let off = self.offset.expect("switch succeeded");
        self.offset = Some(off + len);
        // SAFETY: [off, off+len) is inside the current sub-buffer, beyond the published commit,
        // and this producer is its only writer.
        Some(unsafe { self.buf.bytes_mut(self.seq, off, len) })
    }

    /// Publishes every reserved record (release store of `commit`).
    pub fn commit(&mut self) {
        if let Some(off) = self.offset {
            if off != self.committed {
                self.buf.commit_release(self.seq, off as u32);
                self.committed = off;
            }
        }
    }

    /// Bytes reserved but not yet committed (the lag a consumer may observe).
    pub fn uncommitted(&self) -> usize {
        self.offset.map_or(0, |o| o - self.committed)
    }

    /// Finishes the current sub-buffer (if one is open) and tries to start the next one, as
    /// relay's `relay_switch_subbuf` + grtrace's `subbuf_start` callback do. Returns whether a
    /// new sub-buffer was started.
    fn switch(&mut self) -> bool {
        if let Some(off) = self.offset {
            self.commit();
            let padding = (self.buf.g.subbuf_size - off) as u32;
            self.buf.finalize(self.seq, padding);
            self.seq += 1;
            self.offset = None;
            self.counters.produced.store(self.seq, Ordering::Release);
        }
        let consumed = self.counters.consumed.load(Ordering::Acquire);
        if self.seq - consumed >= self.buf.g.n_subbufs as u64 {
            return false; // no-overwrite: refuse the switch, the slot is not consumed yet
        }
        self.buf.start(self.seq, self.lost_pending);
        self.lost_pending = 0;
        self.counters.lost_pending.store(0, Ordering::Relaxed);
        self.offset = Some(subbuf::HEADER_SIZE);
        self.committed = subbuf::HEADER_SIZE;
        true
    }

    /// The stop-time flush (`relay_flush`): commit, switch away from the current sub-buffer so
    /// it is `FINAL`, and start the next one if there is room (carrying pending losses).
    pub fn flush(&mut self) {
        self.commit();
        self.switch();
    }
}

/// What one step of the consumer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Absolute sub-buffer number.
    pub seq: u64,
    /// `lost` of the sub-buffer header, reported on the first visit only (else 0).
    pub lost: u32,
    /// New record bytes: `[off, off + len)` of the sub-buffer (len may be 0).
    pub off: usize,
    /// Length of the new record bytes.
    pub len: usize,
    /// The sub-buffer is `FINAL` and fully read: the consumer may release it.
    pub finished: bool,
}

/// A sub-buffer header that breaks the protocol (the data of that CPU cannot be trusted).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RelayError {
    /// The sub-buffer header has an unsupported `version` or `header_size`.
    BadHeader {
        /// Absolute sub-buffer number.
        seq: u64,
        /// The `version` found.
        version: u16,
        /// The `header_size` found.
        header_size: u16,
    },
    /// `commit` lies outside the sub-buffer or behind what was already read.
    BadCommit {
        /// Absolute sub-buffer number.
        seq: u64,
        /// The `commit` found.
        commit: u32,
        /// The read offset inside the sub-buffer that `commit` must not fall behind.
        cursor: usize,
    },
}

impl fmt::Display for RelayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RelayError::BadHeader {
                seq,
                version,
                header_size,
            } => write!(
                f,
                "sub-buffer {seq}: unsupported header version {version} size {header_size}"
            ),
            RelayError::BadCommit {
                seq,
                commit,
                cursor,
            } => write!(
                f,
                "sub-buffer {seq}: commit {commit} is outside the sub-buffer or behind {cursor}"
            ),
        }
    }
}

impl std::error::Error for RelayError {}

/// The consumer algorithm of FORMAT.md §7.2 for one CPU.
#[derive(Clone, Debug)]
pub struct DrainCursor {
    /// Absolute number of the next sub-buffer to read.
    pub expected: u64,
    /// Read offset inside it; 0 = not visited yet.
    cursor: usize,
}

impl DrainCursor {
    /// Starts at `consumed` from the `state` file.
    pub fn new(consumed: u64) -> DrainCursor {
        DrainCursor {
            expected: consumed,
            cursor: 0,
        }
    }

    /// One step: `Ok(None)` when nothing new is there. Call again after a finished region.
    pub fn step(&mut self, buf: &RelayReader<'_>) -> Result<Option<Region>, RelayError> {
        let seq = self.expected;
        let hdr = buf.header(seq);
        if hdr.magic() != subbuf::MAGIC || hdr.seq_acquire() != seq {
            return Ok(None);
        }
        let mut lost = 0;
        if self.cursor == 0 {
            let (version, header_size) = hdr.version_and_header_size();
            let hs = header_size as usize;
            if version != subbuf::VERSION || hs < subbuf::HEADER_SIZE || !hs.is_multiple_of(8) {
                return Err(RelayError::BadHeader {
                    seq,
                    version,
                    header_size,
                });
            }
            self.cursor = hs;
            lost = hdr.lost();
        }
        // Flags before commit: once FINAL is seen, the commit read after it is the last one.
        let flags = hdr.flags_acquire();
        let commit = hdr.commit_acquire();
        let c = commit as usize;
        if c < self.cursor || c > buf.subbuf_size() || !c.is_multiple_of(8) {
            return Err(RelayError::BadCommit {
                seq,
                commit,
                cursor: self.cursor,
            });
        }
        let region = Region {
            seq,
            lost,
            off: self.cursor,
            len: c - self.cursor,
            finished: flags & subbuf::FLAG_FINAL != 0,
        };
        self.cursor = c;
        if region.finished {
            self.expected += 1;
            self.cursor = 0;
        } else if region.len == 0 && lost == 0 {
            return Ok(None);
        }
        Ok(Some(region))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// A buffer in test memory, with its writer and a reader of the same bytes (an
    /// in-process producer and consumer, as the kernel and the recorder are across processes).
    fn buffer(
        subbuf_size: usize,
        n: usize,
    ) -> (Vec<u64>, RelayWriter<'static>, RelayReader<'static>) {
        let mut mem = vec![0u64; subbuf_size * n / 8];
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: the Vec's heap block does not move and outlives every use in the test (each
        // test keeps it until the end); it is 8-aligned; the writer is its only writer and the
        // reader reads through the protocol.
        let (w, r) = unsafe {
            (
                RelayWriter::from_raw_parts(base, subbuf_size, n),
                RelayReader::from_raw_parts(base, subbuf_size, n),
            )
        };
        (mem, w, r)
    }

    fn record(out: &mut [u8], v: u64) {
        out.fill(0);
        let len = out.len() as u16;
        out[2..4].copy_from_slice(&len.to_ne_bytes());
        out[8..16].copy_from_slice(&v.to_ne_bytes());
    }

    /// Producer and consumer on two threads: every value arrives once, in order, or is
    /// counted as lost; lost counts equal `dropped`.
    #[test]
    fn concurrent_producer_and_consumer_agree() {
        let (_mem, wbuf, buf) = buffer(4096, 4);
        let counters = Arc::new(CpuCounters::default());
        let dropped = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        const N: u64 = 200_000;
        let prod = {
            let (counters, dropped, done) = (counters.clone(), dropped.clone(), done.clone());
            std::thread::spawn(move || {
                let mut p = RelayProducer::new(wbuf, &counters, &dropped);
                let mut written = Vec::new();
                for v in 0..N {
                    let len = if v % 7 == 0 { 72 } else { 40 };
                    if let Some(r) = p.reserve(len) {
                        record(r, v);
                        written.push(v);
                    }
                    if v % 3 == 0 {
                        p.commit();
                    }
                }
                p.flush();
                done.store(true, Ordering::Release);
                written
            })
        };
        let mut cur = DrainCursor::new(0);
        let (mut got, mut lost, mut out) = (Vec::new(), 0u64, Vec::new());
        loop {
            let finished_producer = done.load(Ordering::Acquire);
            let mut progressed = false;
            while let Some(r) = cur.step(&buf).unwrap() {
                progressed = true;
                lost += r.lost as u64;
                out.clear();
                buf.copy_out(r.seq, r.off, r.len, &mut out);
                let mut o = 0;
                while o < out.len() {
                    let size = u16::from_ne_bytes([out[o + 2], out[o + 3]]) as usize;
                    got.push(u64::from_ne_bytes(out[o + 8..o + 16].try_into().unwrap()));
                    o += size;
                }
                assert_eq!(o, out.len(), "regions hold whole records");
                if r.finished {
                    counters.consume(1);
                }
            }
            if finished_producer && !progressed {
                break;
            }
        }
        let written = prod.join().unwrap();
        lost += counters.lost_pending.load(Ordering::Relaxed);
        assert_eq!(got, written);
        assert_eq!(lost, dropped.load(Ordering::Relaxed));
        assert_eq!(got.len() as u64 + lost, N);
        assert!(lost > 0, "a 16 KiB buffer must overflow at this speed");
    }

    #[test]
    fn refused_switch_carries_lost_into_next_header() {
        let (_mem, wbuf, buf) = buffer(4096, 2);
        let counters = CpuCounters::default();
        let dropped = AtomicU64::new(0);
        let mut p = RelayProducer::new(wbuf, &counters, &dropped);
        let per_subbuf = (4096 - 32) / 64;
        for _ in 0..per_subbuf * 2 + 5 {
            if let Some(r) = p.reserve(64) {
                record(r, 1);
            }
            p.commit();
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 5);
        assert_eq!(counters.lost_pending.load(Ordering::Relaxed), 5);
        assert_eq!(counters.produced.load(Ordering::Relaxed), 2);
        // Consume one sub-buffer: the next write starts sub-buffer 2 in slot 0 with lost = 5.
        counters.consume(1);
        p.reserve(64).map(|r| record(r, 2)).unwrap();
        p.commit();
        let h = buf.header(2);
        assert_eq!((h.seq_acquire(), h.lost(), h.commit_acquire()), (2, 5, 96));
        assert_eq!(buf.header(1).flags_acquire(), subbuf::FLAG_FINAL);
        assert_eq!(
            buf.header(1).padding() as usize + (32 + per_subbuf * 64),
            4096
        );
    }

    #[test]
    fn cursor_waits_for_the_expected_sequence_and_commit() {
        let (_mem, wbuf, buf) = buffer(4096, 2);
        let mut cur = DrainCursor::new(0);
        assert_eq!(cur.step(&buf).unwrap(), None, "zeroed buffer: nothing yet");
        let counters = CpuCounters::default();
        let dropped = AtomicU64::new(0);
        let mut p = RelayProducer::new(wbuf, &counters, &dropped);
        assert_eq!(cur.step(&buf).unwrap(), None, "header only");
        record(p.reserve(40).unwrap(), 9);
        assert_eq!(cur.step(&buf).unwrap(), None, "written but not committed");
        p.commit();
        let r = cur.step(&buf).unwrap().unwrap();
        assert_eq!((r.off, r.len, r.finished), (32, 40, false));
        p.flush();
        let r = cur.step(&buf).unwrap().unwrap();
        assert_eq!((r.off, r.len, r.finished), (72, 0, true));
        assert_eq!(cur.expected, 1);
    }
}
