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

impl Endian {
    /// The byte order of the machine running this code: what the kernel writes.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

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

    /// Reads the u16 at `off` in `buf`; panics if `buf` is shorter than `off + 2`.
    #[inline(always)]
    pub fn u16(self, buf: &[u8], off: usize) -> u16 {
        match self {
            Endian::Little => LittleEndian::read_u16(&buf[off..off + 2]),
            Endian::Big => BigEndian::read_u16(&buf[off..off + 2]),
        }
    }

    /// Reads the u32 at `off` in `buf`; panics if `buf` is shorter than `off + 4`.
    #[inline(always)]
    pub fn u32(self, buf: &[u8], off: usize) -> u32 {
        match self {
            Endian::Little => LittleEndian::read_u32(&buf[off..off + 4]),
            Endian::Big => BigEndian::read_u32(&buf[off..off + 4]),
        }
    }

    /// Reads the u64 at `off` in `buf`; panics if `buf` is shorter than `off + 8`.
    #[inline(always)]
    pub fn u64(self, buf: &[u8], off: usize) -> u64 {
        match self {
            Endian::Little => LittleEndian::read_u64(&buf[off..off + 8]),
            Endian::Big => BigEndian::read_u64(&buf[off..off + 8]),
        }
    }

    /// Writes `v` as a u16 at `off` in `buf`; panics if `buf` is shorter than `off + 2`.
    #[inline(always)]
    pub fn put_u16(self, buf: &mut [u8], off: usize, v: u16) {
        match self {
            Endian::Little => LittleEndian::write_u16(&mut buf[off..off + 2], v),
            Endian::Big => BigEndian::write_u16(&mut buf[off..off + 2], v),
        }
    }

    /// Writes `v` as a u32 at `off` in `buf`; panics if `buf` is shorter than `off + 4`.
    #[inline(always)]
    pub fn put_u32(self, buf: &mut [u8], off: usize, v: u32) {
        match self {
            Endian::Little => LittleEndian::write_u32(&mut buf[off..off + 4], v),
            Endian::Big => BigEndian::write_u32(&mut buf[off..off + 4], v),
        }
    }

    /// Writes `v` as a u64 at `off` in `buf`; panics if `buf` is shorter than `off + 8`.
    #[inline(always)]
    pub fn put_u64(self, buf: &mut [u8], off: usize, v: u64) {
        match self {
            Endian::Little => LittleEndian::write_u64(&mut buf[off..off + 8], v),
            Endian::Big => BigEndian::write_u64(&mut buf[off..off + 8], v),
        }
    }
}
