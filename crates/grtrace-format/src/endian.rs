//! Byte order of a stream, chosen at run time from its header (as `gimli::RunTimeEndian`).

use byteorder::{BigEndian, ByteOrder, LittleEndian};

use crate::abi::{BYTE_ORDER_BIG, BYTE_ORDER_LITTLE};

/// The byte order of a stream. Exhaustive: FORMAT.md has no third byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first (`byte_order` 1).
    Little,
    /// Most significant byte first (`byte_order` 2).
    Big,
}

/// Defines the reader `Endian::$t` and the writer `Endian::$put` of one integer width
/// (`$n` bytes, byteorder's `$read` and `$write`): the three widths differ in nothing else.
macro_rules! access {
    ($t:ident, $n:literal, $put:ident, $read:ident, $write:ident) => {
        #[doc = concat!("Reads the ", stringify!($t), " at `off` in `buf`; panics if `buf` is ")]
        #[doc = concat!("shorter than `off + ", $n, "`.")]
        #[inline(always)]
        pub fn $t(self, buf: &[u8], off: usize) -> $t {
            match self {
                Endian::Little => LittleEndian::$read(&buf[off..off + $n]),
                Endian::Big => BigEndian::$read(&buf[off..off + $n]),
            }
        }

        #[doc = concat!("Writes `v` as a ", stringify!($t), " at `off` in `buf`; panics if `buf` ")]
        #[doc = concat!("is shorter than `off + ", $n, "`.")]
        #[inline(always)]
        pub fn $put(self, buf: &mut [u8], off: usize, v: $t) {
            match self {
                Endian::Little => LittleEndian::$write(&mut buf[off..off + $n], v),
                Endian::Big => BigEndian::$write(&mut buf[off..off + $n], v),
            }
        }
    };
}

impl Endian {
    /// The byte order of the machine running this code: what the kernel writes.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    /// The other byte order.
    pub const fn opposite(self) -> Endian {
        match self {
            Endian::Little => Endian::Big,
            Endian::Big => Endian::Little,
        }
    }

    /// The byte order named by a stream header's `byte_order` byte, or `None` if it is not 1 or 2.
    pub fn from_header_byte(b: u8) -> Option<Endian> {
        match b {
            BYTE_ORDER_LITTLE => Some(Endian::Little),
            BYTE_ORDER_BIG => Some(Endian::Big),
            _ => None,
        }
    }

    /// The stream header's `byte_order` byte for this order (1 little, 2 big).
    pub fn header_byte(self) -> u8 {
        match self {
            Endian::Little => BYTE_ORDER_LITTLE,
            Endian::Big => BYTE_ORDER_BIG,
        }
    }

    /// `little` or `big`, as `info` and messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }

    // The readers take `buf[off..]` and panic if it is short: callers check lengths once per
    // record, so the hot path does no further checks than the slice bound.

    access!(u16, 2, put_u16, read_u16, write_u16);
    access!(u32, 4, put_u32, read_u32, write_u32);
    access!(u64, 8, put_u64, read_u64, write_u64);
}

mod sealed {
    /// Only this crate's two orders implement [`super::Order`]: code generic over it may
    /// assume they are all there is.
    pub trait Sealed {}
    impl Sealed for super::Native {}
    impl Sealed for super::Swapped {}
}

/// A byte order fixed at compile time, relative to the machine running this code (as the
/// `object` crate's `NativeEndian`): decoders generic over it are written once and
/// monomorphized, so the native copy reads plain loads and the swapped one adds a `bswap`.
/// Pick the type once with [`Endian::is_native`]; it is sealed ([`Native`], [`Swapped`]).
pub trait Order: sealed::Sealed + Copy {
    /// The run-time byte order this type stands for.
    const ENDIAN: Endian;

    /// A u16 from its two stored bytes.
    fn u16(b: [u8; 2]) -> u16;
    /// A u32 from its four stored bytes.
    fn u32(b: [u8; 4]) -> u32;
    /// A u64 from its eight stored bytes.
    fn u64(b: [u8; 8]) -> u64;
}

/// The machine's own byte order ([`Endian::NATIVE`]): what the kernel writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Native;

/// The other byte order: a trace recorded on a machine of the opposite endianness.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swapped;

impl Order for Native {
    const ENDIAN: Endian = Endian::NATIVE;
    #[inline(always)]
    fn u16(b: [u8; 2]) -> u16 {
        u16::from_ne_bytes(b)
    }
    #[inline(always)]
    fn u32(b: [u8; 4]) -> u32 {
        u32::from_ne_bytes(b)
    }
    #[inline(always)]
    fn u64(b: [u8; 8]) -> u64 {
        u64::from_ne_bytes(b)
    }
}

impl Order for Swapped {
    const ENDIAN: Endian = Endian::NATIVE.opposite();
    #[inline(always)]
    fn u16(b: [u8; 2]) -> u16 {
        u16::from_ne_bytes(b).swap_bytes()
    }
    #[inline(always)]
    fn u32(b: [u8; 4]) -> u32 {
        u32::from_ne_bytes(b).swap_bytes()
    }
    #[inline(always)]
    fn u64(b: [u8; 8]) -> u64 {
        u64::from_ne_bytes(b).swap_bytes()
    }
}

impl Endian {
    /// Whether this is the machine's own order, i.e. whether [`Native`] (else [`Swapped`])
    /// is the [`Order`] type that decodes it.
    #[inline(always)]
    pub fn is_native(self) -> bool {
        self == Endian::NATIVE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compile-time orders read what the run-time one reads, for both byte orders.
    #[test]
    fn orders_agree_with_run_time_endian() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8];
        for (e, u16v, u32v, u64v) in [
            (
                Native::ENDIAN,
                Native::u16([1, 2]),
                Native::u32([1, 2, 3, 4]),
                Native::u64(b),
            ),
            (
                Swapped::ENDIAN,
                Swapped::u16([1, 2]),
                Swapped::u32([1, 2, 3, 4]),
                Swapped::u64(b),
            ),
        ] {
            assert_eq!(u16v, e.u16(&b, 0));
            assert_eq!(u32v, e.u32(&b, 0));
            assert_eq!(u64v, e.u64(&b, 0));
        }
        assert!(Native::ENDIAN.is_native());
        assert!(!Swapped::ENDIAN.is_native());
        assert_ne!(Native::ENDIAN, Swapped::ENDIAN);
    }
}
