//! A large output buffer with hand-rolled number formatting: the text path never goes
//! through `fmt` machinery, because that is where blkparse spends 85% of its time.

use std::io::{self, Write};

/// Bytes kept before a `write()`; lines are added whole, so the buffer may go a little over.
pub const FLUSH_AT: usize = 1 << 20;

const DIGITS2: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `v` at the end of `tmp`; returns the index of the first digit.
#[inline(always)]
fn digits(mut v: u64, tmp: &mut [u8; 20]) -> usize {
    let mut i = 20;
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        tmp[i] = DIGITS2[d];
        tmp[i + 1] = DIGITS2[d + 1];
    }
    if v >= 10 {
        let d = v as usize * 2;
        i -= 2;
        tmp[i] = DIGITS2[d];
        tmp[i + 1] = DIGITS2[d + 1];
    } else {
        i -= 1;
        tmp[i] = b'0' + v as u8;
    }
    i
}

/// An output sink with a big buffer. Write errors are kept (the first one) so that the hot
/// path only checks a flag; `BrokenPipe` lets the caller stop quietly.
pub struct Out {
    pub buf: Vec<u8>,
    sink: Box<dyn Write>,
    err: Option<io::Error>,
}

impl Out {
    pub fn new(sink: Box<dyn Write>) -> Out {
        Out {
            buf: Vec::with_capacity(FLUSH_AT + (64 << 10)),
            sink,
            err: None,
        }
    }

    #[inline(always)]
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    #[inline(always)]
    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    /// `n` spaces.
    #[inline(always)]
    pub fn pad(&mut self, n: usize) {
        const SP: [u8; 32] = [b' '; 32];
        let mut n = n;
        while n > 32 {
            self.buf.extend_from_slice(&SP);
            n -= 32;
        }
        self.buf.extend_from_slice(&SP[..n]);
    }

    #[inline(always)]
    pub fn u64(&mut self, v: u64) {
        let mut tmp = [0u8; 20];
        let i = digits(v, &mut tmp);
        self.buf.extend_from_slice(&tmp[i..]);
    }

    /// Right-aligned in `width` columns.
    #[inline(always)]
    pub fn u64_w(&mut self, v: u64, width: usize) {
        let mut tmp = [0u8; 20];
        let i = digits(v, &mut tmp);
        let n = 20 - i;
        if n < width {
            self.pad(width - n);
        }
        self.buf.extend_from_slice(&tmp[i..]);
    }

    /// Left-aligned in `width` columns.
    pub fn u64_left(&mut self, v: u64, width: usize) {
        let mut tmp = [0u8; 20];
        let i = digits(v, &mut tmp);
        let n = 20 - i;
        self.buf.extend_from_slice(&tmp[i..]);
        if n < width {
            self.pad(width - n);
        }
    }

    /// Zero-padded to `width` digits.
    #[inline(always)]
    pub fn u64_0(&mut self, v: u64, width: usize) {
        let mut tmp = [b'0'; 20];
        let i = digits(v, &mut tmp);
        let start = i.min(20 - width.min(20));
        if width > 20 {
            self.buf.resize(self.buf.len() + width - 20, b'0');
        }
        self.buf.extend_from_slice(&tmp[start..]);
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
        self.buf.extend_from_slice(b"0x");
        self.buf.extend_from_slice(&tmp[i..]);
    }

    /// Text padded on the right to `width` columns (no truncation).
    #[inline(always)]
    pub fn str_left(&mut self, s: &[u8], width: usize) {
        self.buf.extend_from_slice(s);
        if s.len() < width {
            self.pad(width - s.len());
        }
    }

    pub fn str_right(&mut self, s: &[u8], width: usize) {
        if s.len() < width {
            self.pad(width - s.len());
        }
        self.buf.extend_from_slice(s);
    }

    /// Writes the buffer out once it is big enough.
    #[inline(always)]
    pub fn maybe_flush(&mut self) {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf();
        }
    }

    fn flush_buf(&mut self) {
        if self.err.is_none() {
            if let Err(e) = self.sink.write_all(&self.buf) {
                self.err = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Whether an earlier write failed.
    #[inline(always)]
    pub fn failed(&self) -> bool {
        self.err.is_some()
    }

    /// Flushes everything; returns the first write error, if any.
    pub fn finish(&mut self) -> io::Result<()> {
        self.flush_buf();
        if self.err.is_none() {
            if let Err(e) = self.sink.flush() {
                self.err = Some(e);
            }
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
        String::from_utf8(o.buf.clone()).unwrap()
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
            u64::MAX,
        ] {
            assert_eq!(render(|o| o.u64(v)), format!("{v}"));
            assert_eq!(render(|o| o.u64_w(v, 8)), format!("{v:>8}"));
            assert_eq!(render(|o| o.u64_0(v, 9)), format!("{v:09}"));
            assert_eq!(render(|o| o.u64_left(v, 6)), format!("{v:<6}"));
            assert_eq!(render(|o| o.hex(v)), format!("{v:#x}"));
        }
        assert_eq!(render(|o| o.u64_0(5, 25)), format!("{:025}", 5));
    }
}
