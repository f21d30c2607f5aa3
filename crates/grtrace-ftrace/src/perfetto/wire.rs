//! Protocol Buffers wire format, read in place: a field is its number and a value that is a
//! varint, a fixed 32/64-bit word or a length-delimited slice of the input (no copy, no
//! allocation). Lengths are checked against the bytes that are there, so a length field
//! claiming gigabytes is an error, never an allocation.

/// A field's value, by wire type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    I64(u64),
    /// Wire type 2: bytes, a string, a message or a packed repeated field.
    Len(&'a [u8]),
    /// Wire type 5.
    I32(u32),
}

impl Val<'_> {
    /// The value as an integer (varints and fixed words; 0 for bytes).
    #[inline]
    pub fn int(&self) -> u64 {
        match *self {
            Val::Varint(v) | Val::I64(v) => v,
            Val::I32(v) => v as u64,
            Val::Len(_) => 0,
        }
    }
}

/// Where and why the wire format broke (`at`: offset in the buffer being read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    pub at: usize,
    pub msg: &'static str,
}

/// Reads one varint at `b[*pos..]`.
#[inline(always)]
pub fn varint(b: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    // Most varints of a trace (keys, small values) are one byte.
    if let Some(&byte) = b.get(*pos) {
        if byte < 0x80 {
            *pos += 1;
            return Ok(u64::from(byte));
        }
    }
    varint_long(b, pos)
}

#[inline(never)]
fn varint_long(b: &[u8], pos: &mut usize) -> Result<u64, WireError> {
    let start = *pos;
    let mut v: u64 = 0;
    let mut shift = 0;
    loop {
        let Some(&byte) = b.get(*pos) else {
            return Err(WireError {
                at: start,
                msg: "varint runs past the end of its message",
            });
        };
        *pos += 1;
        if shift < 64 {
            v |= u64::from(byte & 0x7f) << shift;
        }
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift >= 70 {
            return Err(WireError {
                at: start,
                msg: "varint longer than 10 bytes",
            });
        }
    }
}

/// The fields of one message, in order.
#[derive(Clone)]
pub struct Fields<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    /// The fields of the message `b`.
    #[inline]
    pub fn new(b: &'a [u8]) -> Fields<'a> {
        Fields { b, pos: 0 }
    }

    /// Offset of the next field in the message.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The next field: `Ok(None)` at the end of the message.
    #[inline(always)]
    pub fn next_field(&mut self) -> Result<Option<(u32, Val<'a>)>, WireError> {
        if self.pos >= self.b.len() {
            return Ok(None);
        }
        let at = self.pos;
        let key = varint(self.b, &mut self.pos)?;
        let field = key >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(WireError {
                at,
                msg: "field number 0 or out of range",
            });
        }
        let val = match key & 7 {
            0 => Val::Varint(varint(self.b, &mut self.pos)?),
            1 => Val::I64(u64::from_le_bytes(self.take(at, 8)?.try_into().expect("8"))),
            2 => {
                let len = varint(self.b, &mut self.pos)?;
                if len > (self.b.len() - self.pos) as u64 {
                    return Err(WireError {
                        at,
                        msg: "length runs past the end of its message",
                    });
                }
                Val::Len(self.take(at, len as usize)?)
            }
            5 => Val::I32(u32::from_le_bytes(self.take(at, 4)?.try_into().expect("4"))),
            _ => {
                return Err(WireError {
                    at,
                    msg: "unknown wire type (groups are not used by Perfetto)",
                })
            }
        };
        Ok(Some((field as u32, val)))
    }

    #[inline]
    fn take(&mut self, at: usize, n: usize) -> Result<&'a [u8], WireError> {
        if self.b.len() - self.pos < n {
            return Err(WireError {
                at,
                msg: "field runs past the end of its message",
            });
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
}

/// Number of varints in a packed repeated field (the bytes with the top bit clear).
pub fn packed_count(b: &[u8]) -> u64 {
    b.iter().filter(|&&x| x & 0x80 == 0).count() as u64
}

/// Encoding, for the test and benchmark writer ([`super::writer`]).
pub mod enc {
    /// Appends a varint.
    #[inline]
    pub fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// Appends a varint field.
    #[inline]
    pub fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
        varint(out, u64::from(field) << 3);
        varint(out, v);
    }

    /// Appends a length-delimited field.
    #[inline]
    pub fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
        varint(out, (u64::from(field) << 3) | 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_damage_is_an_error() {
        let mut m = Vec::new();
        enc::uint(&mut m, 1, 300);
        enc::bytes(&mut m, 2, b"abc");
        enc::uint(&mut m, 536_870_911, u64::MAX);
        let mut f = Fields::new(&m);
        assert_eq!(f.next_field().unwrap(), Some((1, Val::Varint(300))));
        assert_eq!(f.next_field().unwrap(), Some((2, Val::Len(b"abc"))));
        assert_eq!(
            f.next_field().unwrap(),
            Some((536_870_911, Val::Varint(u64::MAX)))
        );
        assert_eq!(f.next_field().unwrap(), None);
        // A length claiming 4 GiB is an error at its field, not an allocation.
        let mut big = Vec::new();
        enc::varint(&mut big, (7 << 3) | 2);
        enc::varint(&mut big, 4 << 30);
        big.extend_from_slice(b"xy");
        let e = Fields::new(&big).next_field().unwrap_err();
        assert_eq!(e.at, 0);
        // Truncated varint, field 0, wire type 3.
        assert!(Fields::new(&[0x08, 0x80]).next_field().is_err());
        assert!(Fields::new(&[0x00, 0x01]).next_field().is_err());
        assert!(Fields::new(&[0x0b]).next_field().is_err());
        assert_eq!(packed_count(&[0x01, 0x80, 0x01, 0x7f]), 3);
    }

    /// Every varint length reads back, with bytes after it (the word-at-a-time path) and
    /// at the end of its message (byte by byte).
    #[test]
    fn varints_of_every_length_read_back() {
        for bits in 0..64 {
            for v in [1u64 << bits, (1u64 << bits) - 1, (1u64 << bits) | 0x55] {
                let mut m = Vec::new();
                enc::varint(&mut m, v);
                let n = m.len();
                for tail in [0usize, 1, 8] {
                    let mut b = m.clone();
                    b.extend(std::iter::repeat_n(0xffu8, tail));
                    let mut pos = 0;
                    assert_eq!(varint(&b, &mut pos), Ok(v), "{v:#x} tail {tail}");
                    assert_eq!(pos, n, "{v:#x} tail {tail}");
                }
            }
        }
        let mut pos = 0;
        assert!(varint(&[0xff; 12], &mut pos).is_err());
    }
}
