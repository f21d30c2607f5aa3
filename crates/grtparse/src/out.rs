//! A large output buffer with hand-rolled number formatting: the text path never goes
//! through `fmt` machinery, because that is where blkparse spends 85% of its time.
//!
//! The buffer is a fixed, pre-zeroed area with a write position. Every primitive first makes
//! sure it has room (flushing to the sink when not), then writes with fixed-size copies where
//! it can: short strings are copied as whole 16- or 32-byte blocks from padded sources and the
//! position only advances by their length, and numbers are written digit pairs at a time
//! straight into place. No call to `memcpy` happens per field.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SendError, SyncSender};
use std::thread::JoinHandle;

/// Bytes written per `write()` (about).
pub const FLUSH_AT: usize = 1 << 20;
/// Slack above `FLUSH_AT`, so that fixed-size block copies always fit.
const SLACK: usize = 64 << 10;

const DIGITS2: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Number of decimal digits of `v` (1 for 0).
#[inline(always)]
pub fn dcount(v: u64) -> usize {
    match v.checked_ilog10() {
        Some(l) => l as usize + 1,
        None => 1,
    }
}

/// Writes the `n` decimal digits of `v` into `dst[..n]` (`n` = `dcount(v)` or more for zero
/// padding).
#[inline(always)]
fn put_digits(dst: &mut [u8], mut v: u64, n: usize) {
    let mut i = n;
    while i >= 2 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        dst[i] = DIGITS2[d];
        dst[i + 1] = DIGITS2[d + 1];
    }
    if i == 1 {
        dst[0] = b'0' + (v % 10) as u8;
    }
}

/// A short string stored padded, for block copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Short<const N: usize> {
    /// The bytes, padded after `len`.
    pub bytes: [u8; N],
    /// How many of `bytes` are the string.
    pub len: u8,
}

impl<const N: usize> Default for Short<N> {
    fn default() -> Self {
        Short {
            bytes: [0; N],
            len: 0,
        }
    }
}

impl<const N: usize> Short<N> {
    /// `s` truncated to `N`, padded with `pad`.
    pub fn new(s: &[u8], pad: u8) -> Self {
        let mut bytes = [pad; N];
        let n = s.len().min(N);
        bytes[..n].copy_from_slice(&s[..n]);
        Short {
            bytes,
            len: n as u8,
        }
    }

    /// The string without its padding.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// Digits of `v` end at `tmp[20]`; returns where they start.
#[inline(always)]
fn digits20(v: u64, tmp: &mut [u8; 40]) -> usize {
    if v <= u32::MAX as u64 {
        return digits20_u32(v as u32, tmp);
    }
    let mut v = v;
    let mut i = 20;
    while v >= 100 {
        i -= 2;
        put2(tmp, i, (v % 100) as usize);
        v /= 100;
    }
    last_digits(v as u32, i, tmp)
}

/// The two digits of `d` (below 100) at `tmp[i..i + 2]`.
#[inline(always)]
fn put2(tmp: &mut [u8; 40], i: usize, d: usize) {
    tmp[i] = DIGITS2[d * 2];
    tmp[i + 1] = DIGITS2[d * 2 + 1];
}

/// The last one or two digits (`v` below 100) before `tmp[i]`; returns where they start.
#[inline(always)]
fn last_digits(v: u32, i: usize, tmp: &mut [u8; 40]) -> usize {
    if v >= 10 {
        put2(tmp, i - 2, v as usize);
        i - 2
    } else {
        tmp[i - 1] = b'0' + v as u8;
        i - 1
    }
}

/// [`digits20`] with 32-bit arithmetic (most fields fit; the divisions are cheaper).
#[inline(always)]
fn digits20_u32(mut v: u32, tmp: &mut [u8; 40]) -> usize {
    let mut i = 20;
    while v >= 100 {
        let q = v / 100;
        i -= 2;
        put2(tmp, i, (v - q * 100) as usize);
        v = q;
    }
    last_digits(v, i, tmp)
}

/// Decimal digits of a u32 (1..=10); a few predictable compares.
#[inline(always)]
fn dlen_u32(v: u32) -> usize {
    if v < 10_000 {
        if v < 100 {
            1 + (v >= 10) as usize
        } else {
            3 + (v >= 1000) as usize
        }
    } else if v < 100_000_000 {
        if v < 1_000_000 {
            5 + (v >= 100_000) as usize
        } else {
            7 + (v >= 10_000_000) as usize
        }
    } else {
        9 + (v >= 1_000_000_000) as usize
    }
}

/// Bytes a [`Cursor`] may write: one event line is far shorter.
pub const LINE_MAX: usize = 4096;

/// A write position over reserved room in an [`Out`], kept in registers while one line is
/// written. Its slice always has at least [`LINE_MAX`] bytes; writers beyond that panic
/// rather than overflow, and the event line is bounded well below it.
pub struct Cursor<'a> {
    b: &'a mut [u8],
    p: usize,
}

impl Cursor<'_> {
    /// Bytes written so far.
    pub fn written(&self) -> usize {
        self.p
    }
}

impl Cursor<'_> {
    #[inline(always)]
    /// Appends a literal of known length.
    pub fn lit<const N: usize>(&mut self, s: &[u8; N]) {
        self.b[self.p..self.p + N].copy_from_slice(s);
        self.p += N;
    }

    #[inline(always)]
    /// Appends one byte.
    pub fn byte(&mut self, c: u8) {
        self.b[self.p] = c;
        self.p += 1;
    }

    #[inline(always)]
    /// Appends a [`Short`] (a block copy, then the length).
    pub fn short<const N: usize>(&mut self, s: &Short<N>) {
        self.b[self.p..self.p + N].copy_from_slice(&s.bytes);
        self.p += s.len as usize;
    }

    #[inline(always)]
    /// Appends `v` in decimal.
    pub fn u64(&mut self, v: u64) {
        if v <= u32::MAX as u64 {
            // Common case: count the digits, then write them in place (no staging copy).
            let v = v as u32;
            let n = dlen_u32(v);
            let d = &mut self.b[self.p..self.p + 10];
            let mut v = v;
            let mut i = n;
            while i >= 2 {
                let q = v / 100;
                let r = (v - q * 100) as usize * 2;
                v = q;
                i -= 2;
                d[i] = DIGITS2[r];
                d[i + 1] = DIGITS2[r + 1];
            }
            if i == 1 {
                d[0] = b'0' + v as u8;
            }
            self.p += n;
            return;
        }
        let mut tmp = [0u8; 40];
        let i = digits20(v, &mut tmp);
        self.b[self.p..self.p + 20].copy_from_slice(&tmp[i..i + 20]);
        self.p += 20 - i;
    }

    /// Right-aligned in `width` (≤ 20) columns.
    #[inline(always)]
    pub fn u64_w(&mut self, v: u64, width: usize) {
        self.u64_w_pad(v, width, 0);
    }

    /// Right-aligned in `width` (≤ 20) columns, then `pad` (0 or 1) spaces: the digits are
    /// staged behind blanks, so one copy writes both.
    #[inline(always)]
    fn u64_w_pad(&mut self, v: u64, width: usize, pad: usize) {
        let mut tmp = [b' '; 40];
        let i = digits20(v, &mut tmp);
        let start = i.min(20 - width.min(20));
        let n = 20 + pad;
        self.b[self.p..self.p + n].copy_from_slice(&tmp[start..start + n]);
        self.p += n - start;
    }

    /// `v` then one space.
    #[inline(always)]
    pub fn u64_sp(&mut self, v: u64) {
        self.u64(v);
        self.b[self.p] = b' ';
        self.p += 1;
    }

    /// Right-aligned in `width` (≤ 20) columns, then one space.
    #[inline(always)]
    pub fn u64_w_sp(&mut self, v: u64, width: usize) {
        self.u64_w_pad(v, width, 1);
    }

    /// `sec.nnnnnnnnn ` with the seconds right-aligned in 5 columns (the time field).
    #[inline(always)]
    pub fn time_sp(&mut self, ns_total: u64) {
        let mut tmp = [b' '; 64];
        let (sec, ns) = (ns_total / 1_000_000_000, (ns_total % 1_000_000_000) as u32);
        // Nanoseconds: nine digits in tmp[21..30], then the space at 30.
        let mut t9 = [b'0'; 40];
        digits20_u32(ns, &mut t9);
        tmp[21..30].copy_from_slice(&t9[11..20]);
        tmp[20] = b'.';
        let head: &mut [u8; 40] = (&mut tmp[..40]).try_into().expect("40 bytes");
        let i = digits20(sec, head);
        let start = i.min(15);
        self.b[self.p..self.p + 31].copy_from_slice(&tmp[start..start + 31]);
        self.p += 31 - start;
    }

    /// Exactly nine digits.
    #[inline(always)]
    pub fn nanos9(&mut self, v: u64) {
        let mut tmp = [b'0'; 40];
        digits20(v % 1_000_000_000, &mut tmp);
        self.b[self.p..self.p + 9].copy_from_slice(&tmp[11..20]);
        self.p += 9;
    }

    /// Appends `v` in hex with `0x`.
    pub fn hex(&mut self, v: u64) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let n = (64 - (v | 1).leading_zeros() as usize).div_ceil(4);
        self.lit(b"0x");
        let d = &mut self.b[self.p..self.p + 16];
        let mut v = v;
        for i in (0..n.min(16)).rev() {
            d[i] = HEX[(v & 15) as usize];
            v >>= 4;
        }
        self.p += n;
    }

    /// Any bytes (a `memcpy`; for rare variable-length fields).
    pub fn bytes(&mut self, s: &[u8]) {
        self.b[self.p..self.p + s.len()].copy_from_slice(s);
        self.p += s.len();
    }
}

/// An output sink with a big buffer. Write errors are kept (the first one) so that the hot
/// path only checks a flag; `BrokenPipe` lets the caller stop quietly.
///
/// [`Out::threaded`] hands each full buffer to a writer thread and fills a second one
/// meanwhile, so formatting or merging on one core overlaps the `write()` copy into the page
/// cache or pipe on the other (for a binary dump that copy is half the work).
pub struct Out {
    buf: Vec<u8>,
    pos: usize,
    dest: Dest,
    err: Option<io::Error>,
}

enum Dest {
    Direct(Box<dyn Write>),
    Threaded(Writer),
    /// Kept in the buffer, which grows (a worker's batch of formatted lines).
    Memory,
}

/// A writer thread and the two channels that pass buffers to it and back.
struct Writer {
    full: Option<SyncSender<(Vec<u8>, usize)>>,
    empty: Receiver<(Vec<u8>, Option<io::Error>)>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Writer {
    fn spawn(mut sink: Box<dyn Write + Send>) -> io::Result<Writer> {
        let (full_tx, full_rx) = sync_channel::<(Vec<u8>, usize)>(1);
        let (empty_tx, empty_rx) = sync_channel(2);
        // The spare buffer the caller fills while the writer writes the other one.
        let _ = empty_tx.send((vec![0; FLUSH_AT + SLACK], None));
        let thread = std::thread::Builder::new()
            .name("grtparse-writer".into())
            .spawn(move || {
                let mut failed = false;
                for (buf, len) in full_rx {
                    // After a failure buffers only travel back: nothing more is written.
                    let res = if failed {
                        None
                    } else {
                        sink.write_all(&buf[..len]).err()
                    };
                    failed |= res.is_some();
                    if empty_tx.send((buf, res)).is_err() {
                        break;
                    }
                }
                if failed {
                    Ok(())
                } else {
                    sink.flush()
                }
            })?;
        Ok(Writer {
            full: Some(full_tx),
            empty: empty_rx,
            thread: Some(thread),
        })
    }

    /// Hands `buf[..len]` to the writer; returns a spare buffer and any error it had.
    fn swap(&mut self, buf: Vec<u8>, len: usize) -> (Vec<u8>, Option<io::Error>) {
        let gone = || io::Error::other("output writer thread ended");
        let sent = self.full.as_ref().map(|tx| tx.send((buf, len)));
        match (sent, self.empty.recv()) {
            (Some(Ok(())), Ok(back)) => back,
            (Some(Err(SendError((buf, _)))), _) => (buf, Some(gone())),
            _ => (vec![0; FLUSH_AT + SLACK], Some(gone())),
        }
    }

    /// Waits for everything handed over to be written and flushed.
    fn close(&mut self) -> io::Result<()> {
        drop(self.full.take());
        let mut first = None;
        for (_, e) in self.empty.iter() {
            first = first.or(e);
        }
        let flushed = match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("output writer thread panicked")),
            None => Ok(()),
        };
        match first {
            Some(e) => Err(e),
            None => flushed,
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Out {
    /// An output buffer in front of `sink`.
    pub fn new(sink: Box<dyn Write>) -> Out {
        Out {
            buf: vec![0; FLUSH_AT + SLACK],
            pos: 0,
            dest: Dest::Direct(sink),
            err: None,
        }
    }

    /// Like [`new`](Self::new), with the writes done on a thread of their own.
    pub fn threaded(sink: Box<dyn Write + Send>) -> io::Result<Out> {
        Ok(Out {
            buf: vec![0; FLUSH_AT + SLACK],
            pos: 0,
            dest: Dest::Threaded(Writer::spawn(sink)?),
            err: None,
        })
    }

    /// Formats into `buf` (grown as needed, never written anywhere): a worker's batch of
    /// lines, taken back with [`into_buffer`](Self::into_buffer).
    pub fn memory(mut buf: Vec<u8>) -> Out {
        if buf.len() < FLUSH_AT + SLACK {
            buf.resize(FLUSH_AT + SLACK, 0);
        }
        Out {
            buf,
            pos: 0,
            dest: Dest::Memory,
            err: None,
        }
    }

    /// The buffer and how many of its bytes were written.
    pub fn into_buffer(self) -> (Vec<u8>, usize) {
        (self.buf, self.pos)
    }

    /// Writes `buf[..len]` (a batch formatted elsewhere) after what is pending, without a
    /// copy when a writer thread takes it; returns a buffer to reuse.
    pub fn hand_over(&mut self, buf: Vec<u8>, len: usize) -> Vec<u8> {
        self.flush_buf();
        if self.err.is_some() {
            return buf;
        }
        match &mut self.dest {
            Dest::Threaded(w) => {
                let (spare, err) = w.swap(buf, len);
                self.err = err;
                spare
            }
            Dest::Direct(w) => {
                self.err = w.write_all(&buf[..len]).err();
                buf
            }
            Dest::Memory => {
                self.bytes(&buf[..len]);
                buf
            }
        }
    }

    /// Room for one line of at most [`LINE_MAX`] bytes; finish it with [`commit`](Self::commit).
    #[inline(always)]
    pub fn cursor(&mut self) -> Cursor<'_> {
        self.ensure(LINE_MAX);
        Cursor {
            b: &mut self.buf[self.pos..],
            p: 0,
        }
    }

    /// Takes what a cursor wrote.
    #[inline(always)]
    pub fn commit(&mut self, written: usize) {
        self.pos += written;
    }

    /// What has been written since the last flush.
    pub fn pending(&self) -> &[u8] {
        &self.buf[..self.pos]
    }

    /// Current write position (only meaningful until the next flush; see `ensure`).
    #[inline(always)]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Makes room for `n` more bytes: flushes when past `FLUSH_AT`, grows for huge writes.
    #[inline(always)]
    pub fn ensure(&mut self, n: usize) {
        if self.pos + n > FLUSH_AT {
            self.make_room(n);
        }
    }

    #[cold]
    fn make_room(&mut self, n: usize) {
        if let Dest::Memory = self.dest {
            if self.pos + n + SLACK > self.buf.len() {
                self.buf
                    .resize((self.pos + n + SLACK).max(2 * self.buf.len()), 0);
            }
            return;
        }
        self.flush_buf();
        if n + SLACK > self.buf.len() {
            self.buf.resize(n + SLACK, 0);
        }
    }

    #[inline(always)]
    /// Appends bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.ensure(b.len());
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }

    /// A short constant: compiled to a fixed-size copy.
    #[inline(always)]
    pub fn lit<const N: usize>(&mut self, b: &[u8; N]) {
        self.ensure(N);
        self.buf[self.pos..self.pos + N].copy_from_slice(b);
        self.pos += N;
    }

    #[inline(always)]
    /// Appends one byte.
    pub fn byte(&mut self, b: u8) {
        self.ensure(1);
        self.buf[self.pos] = b;
        self.pos += 1;
    }

    /// Copies the whole padded block and advances by `adv` (≤ N) bytes.
    #[inline(always)]
    pub fn block<const N: usize>(&mut self, s: &[u8; N], adv: usize) {
        self.ensure(N);
        self.buf[self.pos..self.pos + N].copy_from_slice(s);
        self.pos += adv.min(N);
    }

    #[inline(always)]
    /// Appends a [`Short`] (a block copy, then the length).
    pub fn short<const N: usize>(&mut self, s: &Short<N>) {
        self.block(&s.bytes, s.len as usize);
    }

    /// `n` spaces.
    #[inline(always)]
    pub fn pad(&mut self, n: usize) {
        const SP: [u8; 32] = [b' '; 32];
        let mut n = n;
        while n > 32 {
            self.block(&SP, 32);
            n -= 32;
        }
        self.block(&SP, n);
    }

    #[inline(always)]
    /// Appends `v` in decimal.
    pub fn u64(&mut self, v: u64) {
        self.ensure(20);
        let n = dcount(v);
        put_digits(&mut self.buf[self.pos..self.pos + 20], v, n);
        self.pos += n;
    }

    /// Right-aligned in `width` columns.
    #[inline(always)]
    pub fn u64_w(&mut self, v: u64, width: usize) {
        let n = dcount(v);
        if n < width {
            self.pad(width - n);
        }
        self.ensure(20);
        put_digits(&mut self.buf[self.pos..self.pos + 20], v, n);
        self.pos += n;
    }

    /// Left-aligned in `width` columns.
    pub fn u64_left(&mut self, v: u64, width: usize) {
        let n = dcount(v);
        self.u64(v);
        if n < width {
            self.pad(width - n);
        }
    }

    /// Zero-padded to `width` digits.
    #[inline(always)]
    pub fn u64_0(&mut self, v: u64, width: usize) {
        let n = dcount(v);
        if n < width {
            let zeros = width - n;
            self.ensure(zeros + 20);
            self.buf[self.pos..self.pos + zeros].fill(b'0');
            self.pos += zeros;
        }
        self.u64(v);
    }

    /// Exactly nine digits (the nanoseconds of a time).
    #[inline(always)]
    pub fn nanos9(&mut self, v: u64) {
        self.ensure(9);
        put_digits(&mut self.buf[self.pos..self.pos + 9], v % 1_000_000_000, 9);
        self.pos += 9;
    }

    /// `0x` and lower-case hex digits.
    pub fn hex(&mut self, v: u64) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut tmp = [0u8; 16];
        let mut i = 16;
        let mut v = v;
        loop {
            i -= 1;
            tmp[i] = HEX[(v & 15) as usize];
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        self.lit(b"0x");
        self.bytes(&tmp[i..]);
    }

    /// Text padded on the right to `width` columns (no truncation).
    pub fn str_left(&mut self, s: &[u8], width: usize) {
        self.bytes(s);
        if s.len() < width {
            self.pad(width - s.len());
        }
    }

    /// Appends `s` right-aligned in `width` columns.
    pub fn str_right(&mut self, s: &[u8], width: usize) {
        if s.len() < width {
            self.pad(width - s.len());
        }
        self.bytes(s);
    }

    /// Removes the byte at `at` (≥ the position before the last `ensure`).
    pub fn remove_at(&mut self, at: usize) {
        if at < self.pos {
            self.buf.copy_within(at + 1..self.pos, at);
            self.pos -= 1;
        }
    }

    /// Inserts `n` spaces at `at` (same condition as `remove_at`).
    pub fn insert_spaces(&mut self, at: usize, n: usize) {
        if at > self.pos {
            return;
        }
        // Grow rather than flush: `at` must stay valid.
        if self.pos + n > self.buf.len() {
            self.buf.resize(self.pos + n + SLACK, 0);
        }
        self.buf.copy_within(at..self.pos, at + n);
        self.buf[at..at + n].fill(b' ');
        self.pos += n;
    }

    /// The byte at `at`, if written.
    pub fn at(&self, at: usize) -> Option<u8> {
        (at < self.pos).then(|| self.buf[at])
    }

    fn flush_buf(&mut self) {
        if self.err.is_none() && self.pos > 0 {
            match &mut self.dest {
                Dest::Direct(w) => self.err = w.write_all(&self.buf[..self.pos]).err(),
                Dest::Threaded(w) => {
                    let full = std::mem::take(&mut self.buf);
                    let (spare, err) = w.swap(full, self.pos);
                    self.buf = spare;
                    self.err = err;
                }
                // Never flushed: the caller takes the buffer.
                Dest::Memory => return,
            }
        }
        self.pos = 0;
    }

    /// Records an error that is not a write's (the first one is kept): the output is
    /// incomplete.
    pub fn fail(&mut self, e: io::Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Whether an earlier write failed.
    #[inline(always)]
    pub fn failed(&self) -> bool {
        self.err.is_some()
    }

    /// Flushes everything; returns the first write error, if any.
    pub fn finish(&mut self) -> io::Result<()> {
        self.flush_buf();
        let done = match &mut self.dest {
            Dest::Direct(w) => w.flush(),
            Dest::Threaded(w) => w.close(),
            Dest::Memory => Ok(()),
        };
        if self.err.is_none() {
            self.err = done.err();
        }
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(f: impl FnOnce(&mut Out)) -> String {
        let mut o = Out::new(Box::new(io::sink()));
        f(&mut o);
        String::from_utf8(o.pending().to_vec()).unwrap()
    }

    #[test]
    fn numbers_match_std_formatting() {
        for v in [
            0u64,
            1,
            9,
            10,
            99,
            100,
            12345,
            999_999_999,
            1_000_000_000,
            12_345_678_901,
            u64::MAX,
        ] {
            assert_eq!(render(|o| o.u64(v)), format!("{v}"));
            assert_eq!(render(|o| o.u64_w(v, 8)), format!("{v:>8}"));
            assert_eq!(render(|o| o.u64_0(v, 9)), format!("{v:09}"));
            assert_eq!(render(|o| o.u64_left(v, 6)), format!("{v:<6}"));
            assert_eq!(render(|o| o.hex(v)), format!("{v:#x}"));
            assert_eq!(render(|o| o.nanos9(v)), format!("{:09}", v % 1_000_000_000));
        }
        assert_eq!(render(|o| o.u64_0(5, 25)), format!("{:025}", 5));
        assert_eq!(render(|o| o.pad(40)), " ".repeat(40));
    }

    #[test]
    fn cursor_numbers_match_std_formatting() {
        for v in [0u64, 7, 42, 999, 1000, 123_456_789_012, u64::MAX] {
            let s = render(|o| {
                let mut c = o.cursor();
                c.u64(v);
                c.byte(b'|');
                c.u64_w(v, 8);
                c.byte(b'|');
                c.nanos9(v);
                c.byte(b'|');
                c.hex(v);
                c.byte(b'|');
                c.u64_sp(v);
                c.u64_w_sp(v, 6);
                c.time_sp(v);
                let n = c.p;
                o.commit(n);
            });
            assert_eq!(
                s,
                format!(
                    "{v}|{v:>8}|{:09}|{v:#x}|{v} {v:>6} {:>5}.{:09} ",
                    v % 1_000_000_000,
                    v / 1_000_000_000,
                    v % 1_000_000_000
                )
            );
        }
    }

    #[test]
    fn blocks_advance_by_their_length_and_edits_work() {
        let s = render(|o| {
            o.short(&Short::<16>::new(b"abc", b' '));
            o.lit(b"|");
            let at = o.pos();
            o.lit(b" x");
            o.remove_at(at);
            o.insert_spaces(at, 2);
        });
        assert_eq!(s, "abc|  x");
    }

    #[test]
    fn output_larger_than_the_buffer_arrives_whole_and_in_order() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let big = vec![b'y'; 3 * FLUSH_AT];
        let mut expect = Vec::new();
        for i in 0..300_000u64 {
            expect.extend_from_slice(format!("{i}\n").as_bytes());
        }
        expect.extend_from_slice(&big);
        // Both sinks: the threaded one swaps buffers several times on the way.
        for threaded in [false, true] {
            let sink = Shared(Arc::new(Mutex::new(Vec::new())));
            let mut o = if threaded {
                Out::threaded(Box::new(sink.clone())).unwrap()
            } else {
                Out::new(Box::new(sink.clone()))
            };
            for i in 0..300_000u64 {
                o.u64(i);
                o.byte(b'\n');
            }
            o.bytes(&big);
            o.finish().unwrap();
            let got = sink.0.lock().unwrap();
            assert_eq!(got.len(), expect.len(), "threaded={threaded}");
            assert!(got.ends_with(b"yyyy"));
            assert!(*got == expect, "threaded={threaded}: bytes differ");
        }
    }
}
