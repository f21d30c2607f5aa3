//! Decoding errors. Each names the byte offset where the data stopped making sense; the edge
//! (a binary) adds the file name: `run.grtrace.1: byte 4168: record size 12 is not a multiple of 8`.

use std::fmt;

/// Why stream bytes could not be decoded, with the byte offset of the damage
/// ([`FormatError::offset`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The input has no bytes at all.
    Empty,
    /// Fewer bytes than the stream header needs.
    TruncatedHeader {
        /// Bytes the input has.
        have: usize,
        /// Bytes the stream header needs (128, or its `header_size`).
        need: usize,
    },
    /// The first 8 bytes are not `"GRTRACE\0"`: not a grtrace stream.
    BadMagic,
    /// `byte_order` is neither 1 (little) nor 2 (big); the byte found.
    BadByteOrder(u8),
    /// A major version this reader does not know: a future one, or 0 (never valid).
    FutureVersion {
        /// The major version found.
        major: u16,
        /// The minor version found.
        minor: u16,
    },
    /// `header_size` is below 128, above 4096 or not a multiple of 8; the size found.
    BadHeaderSize(u16),
    /// A record header or body runs past the end of the data.
    TruncatedRecord {
        /// Byte offset of the record from the start of the stream.
        offset: u64,
        /// Bytes the record needs (its header, or its `size`).
        need: usize,
        /// Bytes left in the data at that offset.
        have: usize,
    },
    /// `size` is below the header size, not a multiple of 8, or too small for its type.
    BadRecordSize {
        /// Byte offset of the record from the start of the stream.
        offset: u64,
        /// The record's type.
        rtype: crate::vocab::RecordType,
        /// The record's invalid `size`.
        size: u16,
    },
    /// A `NOTE_MSG` whose `len` does not fit its record.
    BadMsgLength {
        /// Byte offset of the record from the start of the stream.
        offset: u64,
        /// The `len` the note claims.
        len: u32,
        /// The record's `size`.
        size: u16,
    },
}

impl FormatError {
    /// Byte offset of the damage, from the start of the stream.
    pub fn offset(&self) -> u64 {
        match *self {
            FormatError::Empty | FormatError::BadMagic => 0,
            FormatError::TruncatedHeader { have, .. } => have as u64,
            FormatError::BadByteOrder(_) => crate::abi::stream_off::BYTE_ORDER as u64,
            FormatError::FutureVersion { .. } => crate::abi::stream_off::VERSION_MAJOR as u64,
            FormatError::BadHeaderSize(_) => crate::abi::stream_off::HEADER_SIZE as u64,
            FormatError::TruncatedRecord { offset, .. }
            | FormatError::BadRecordSize { offset, .. }
            | FormatError::BadMsgLength { offset, .. } => offset,
        }
    }
}

impl FormatError {
    /// What is wrong, without the byte offset (for messages that place it themselves).
    pub fn what(&self) -> impl fmt::Display + '_ {
        What(self)
    }
}

/// [`FormatError::what`].
struct What<'e>(&'e FormatError);

impl fmt::Display for What<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            FormatError::Empty => write!(f, "empty file (no stream header)"),
            FormatError::TruncatedHeader { have, need } => {
                write!(f, "truncated stream header ({have} of {need} bytes)")
            }
            FormatError::BadMagic => write!(f, "not a grtrace stream (bad magic)"),
            FormatError::BadByteOrder(b) => write!(f, "unknown byte order mark {b}"),
            FormatError::FutureVersion { major: 0, minor } => write!(
                f,
                "invalid format version 0.{minor} (versions start at 1; this reader knows {}.{})",
                crate::abi::VERSION_MAJOR,
                crate::abi::VERSION_MINOR
            ),
            FormatError::FutureVersion { major, minor } => write!(
                f,
                "unsupported future format version {major}.{minor} (this reader knows {}.{})",
                crate::abi::VERSION_MAJOR,
                crate::abi::VERSION_MINOR
            ),
            FormatError::BadHeaderSize(s) => write!(f, "invalid stream header size {s}"),
            FormatError::TruncatedRecord { need, have, .. } => {
                write!(f, "truncated record ({have} of {need} bytes)")
            }
            FormatError::BadRecordSize { rtype, size, .. } => {
                // The number, not the name: a damaged record's type is as likely garbage.
                let rtype = rtype.0;
                write!(f, "corrupt record: type {rtype} with invalid size {size}")
            }
            FormatError::BadMsgLength { len, size, .. } => {
                write!(
                    f,
                    "corrupt message note: text length {len} in a {size}-byte record"
                )
            }
        }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset(), self.what())
    }
}

impl std::error::Error for FormatError {}
