//! The one error type of reading ([`TraceError`]: a problem with one input, named by file and
//! byte offset) and the warnings ([`Warning`]: problems that did not stop reading).

use std::fmt;

use crate::error::FormatError;

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes do not decode (the error names the byte offset).
    Format(FormatError),
    /// Reading failed, or some other problem at a byte offset.
    At {
        /// Byte offset in the input.
        offset: u64,
        /// What went wrong there.
        message: String,
    },
    /// A problem with the input as a whole (not found, no files for a base name).
    Input(String),
    /// A stream header inside an input (concatenated streams) at byte `at` does not decode;
    /// the error's own offset counts from that header.
    EmbeddedHeader {
        /// Offset of the embedded header in the input.
        at: u64,
        /// What is wrong with it.
        error: FormatError,
    },
    /// No input could be opened: none were given (`given` 0), or every one failed.
    NoInputs {
        /// How many inputs were given.
        given: usize,
    },
}

/// An error or warning about one input: `run.grtrace.1: byte 4168: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// Name of the input, as given (or `(stdin)`).
    pub file: String,
    /// What went wrong, and where in that input.
    pub error: ErrorKind,
}

impl TraceError {
    pub(super) fn at(file: &str, offset: u64, message: String) -> TraceError {
        TraceError {
            file: file.to_string(),
            error: ErrorKind::At { offset, message },
        }
    }

    /// Byte offset of the problem, if it has one.
    pub fn offset(&self) -> Option<u64> {
        match &self.error {
            ErrorKind::Format(e) => Some(e.offset()),
            ErrorKind::At { offset, .. } => Some(*offset),
            ErrorKind::EmbeddedHeader { at, error } => Some(at + error.offset()),
            ErrorKind::Input(_) | ErrorKind::NoInputs { .. } => None,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.error {
            ErrorKind::Format(e) => write!(f, "{}: {e}", self.file),
            ErrorKind::At { offset, message } => {
                write!(f, "{}: byte {offset}: {message}", self.file)
            }
            ErrorKind::Input(m) => write!(f, "{}: {m}", self.file),
            ErrorKind::EmbeddedHeader { at, error } => write!(
                f,
                "{}: byte {}: embedded stream header: {}",
                self.file,
                at + error.offset(),
                error.what()
            ),
            // Not about any one file: there is none to name.
            ErrorKind::NoInputs { given: 0 } => write!(f, "no inputs"),
            ErrorKind::NoInputs { .. } => write!(f, "no usable inputs"),
        }
    }
}

impl std::error::Error for TraceError {}

/// An embedded stream header at byte `at` of input `name` that does not decode.
pub(super) fn header_error(name: &str, at: u64, e: FormatError) -> TraceError {
    TraceError {
        file: name.to_string(),
        error: ErrorKind::EmbeddedHeader { at, error: e },
    }
}

/// A problem that did not stop reading, named by its file (and byte offset where it has one).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// A base name's files skip some CPU numbers (of one device).
    MissingCpuFiles {
        /// The base name (with `.cardN` for a device's files).
        base: String,
        /// The missing CPUs as ranges, `1,3-7`, at most eight, then how many more.
        missing: String,
    },
    /// An empty per-CPU file, left out.
    EmptyFile {
        /// The file.
        file: String,
    },
    /// A record's sequence number repeated or went backwards on its CPU.
    SeqBackwards {
        /// The input.
        file: String,
        /// Byte offset of the record.
        offset: u64,
        /// Its CPU.
        cpu: u32,
        /// Its sequence number.
        seq: u64,
        /// The sequence number before it on that CPU.
        last: u64,
    },
    /// Stream headers of more (card, session) pairs than the reader tells apart; their
    /// records are checked and labelled with an earlier stream of the same card.
    TooManyOrigins {
        /// The first input.
        file: String,
        /// How many headers found the table full.
        headers: u64,
        /// How many pairs the reader tells apart.
        limit: usize,
    },
}

impl Warning {
    /// The file (or base name) the warning is about.
    pub fn file(&self) -> &str {
        match self {
            Warning::MissingCpuFiles { base, .. } => base,
            Warning::EmptyFile { file }
            | Warning::SeqBackwards { file, .. }
            | Warning::TooManyOrigins { file, .. } => file,
        }
    }

    /// Byte offset of the problem, if it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Warning::EmptyFile { .. } => Some(0),
            Warning::SeqBackwards { offset, .. } => Some(*offset),
            Warning::MissingCpuFiles { .. } | Warning::TooManyOrigins { .. } => None,
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::MissingCpuFiles { base, missing } => write!(
                f,
                "{base}: missing CPU file(s) for CPU {missing} (other CPUs are parsed)"
            ),
            Warning::EmptyFile { file } => write!(f, "{file}: byte 0: empty file, skipped"),
            Warning::SeqBackwards {
                file,
                offset,
                cpu,
                seq,
                last,
            } => write!(
                f,
                "{file}: byte {offset}: cpu {cpu}: sequence {seq} after {last} (repeated or backwards)"
            ),
            Warning::TooManyOrigins {
                file,
                headers,
                limit,
            } => write!(
                f,
                "{file}: {headers} stream header(s) past {limit} different card/session pairs: their records are checked and labelled with an earlier stream of the same card (or the last one)"
            ),
        }
    }
}
