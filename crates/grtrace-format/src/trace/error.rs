//! The one error type of reading: a problem with one input, named by file and byte offset.

use std::fmt;

use crate::error::FormatError;

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The bytes do not decode (the error names the byte offset).
    Format(FormatError),
    /// Reading failed, or some other problem at a byte offset.
    At { offset: u64, message: String },
    /// A problem with the input as a whole (not found, no files for a base name).
    Input(String),
}

/// An error or warning about one input: `run.grtrace.1: byte 4168: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
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
            ErrorKind::Input(_) => None,
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
        }
    }
}

impl std::error::Error for TraceError {}

pub(super) fn header_error(name: &str, at: u64, e: FormatError) -> TraceError {
    let msg = e.to_string();
    // FormatError's text starts with "byte N: " relative to the header; re-base it.
    let msg = msg
        .split_once(": ")
        .map(|x| x.1)
        .unwrap_or(&msg)
        .to_string();
    TraceError::at(
        name,
        at + e.offset(),
        format!("embedded stream header: {msg}"),
    )
}
