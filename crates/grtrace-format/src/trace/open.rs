//! Opening inputs: regular files are mapped (with the SIGBUS guard), streams read their header.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use memmap2::Mmap;

use super::{ErrorKind, InputSource, StreamInfoView, Trace, TraceError, PIPE_READAHEAD};
use crate::abi::{self, rec_off};
use crate::error::FormatError;
use crate::sigbus::Registration;
use crate::view::StreamHeader;

pub(super) enum Backing {
    Map(Mmap),
    Owned(Vec<u8>),
}

impl Backing {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m,
            Backing::Owned(v) => v,
        }
    }
}

pub(super) struct MappedInput {
    pub(super) stream: usize,
    /// For a mapped file; declared before `backing` so that it is unregistered first.
    pub(super) shrink: Option<Shrink>,
    pub(super) backing: Backing,
    /// A per-CPU stream followed by another stream header (concatenated streams, `cat a b >
    /// f`) within its first [`PIPE_READAHEAD`] bytes: read like a merged stream, exactly as
    /// the same bytes on stdin.
    pub(super) concatenated: bool,
}

/// What tells whether a mapped file shrank under the reader.
pub(super) struct Shrink {
    pub(super) path: PathBuf,
    /// Length mapped.
    pub(super) len: u64,
    pub(super) guard: Registration,
}

impl Shrink {
    /// The error to report instead of the damage found at `offset` when the file is now
    /// shorter than when it was mapped (or a page of it faulted): one line naming the file
    /// and the byte where its data now ends.
    #[cold]
    pub(super) fn error(&self, name: &str, offset: u64) -> Option<TraceError> {
        let now = std::fs::metadata(&self.path).map(|m| m.len()).ok();
        let end = match (now, self.guard.shrunk()) {
            (Some(n), _) if n < self.len => n,
            (_, Some(at)) => at,
            _ => return None,
        };
        Some(TraceError::at(
            name,
            end.min(offset),
            format!(
                "the file shrank while being read ({} bytes when opened, {}): records from here on were not read",
                self.len,
                now.map_or("now unreadable".to_string(), |n| format!("{n} now")),
            ),
        ))
    }
}

pub(super) struct PipeInput {
    pub(super) stream: usize,
    pub(super) reader: Box<dyn Read + Send>,
    /// Bytes read past the header but not yet parsed.
    pub(super) buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    pub(super) base: u64,
}

impl Trace {
    pub(super) fn add(&mut self, src: InputSource) -> Result<(), TraceError> {
        let name = src.name();
        let fmt_err = |e: FormatError| TraceError {
            file: name.clone(),
            error: ErrorKind::Format(e),
        };
        match src {
            InputSource::File(path) => {
                let file = File::open(&path).map_err(|e| TraceError {
                    file: name.clone(),
                    error: ErrorKind::Input(e.to_string()),
                })?;
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                if len == 0 {
                    return Err(fmt_err(FormatError::Empty));
                }
                // SAFETY: `Mmap::map` maps the file read-only and MAP_SHARED (not private: we
                // see what other processes write to the file, and nothing we do can write it).
                // Rust assumes the bytes behind the `&[u8]` it hands out do not change; for a
                // shared file mapping nobody can promise that, so safety rests on what the
                // reader does with the bytes, not on them staying put:
                // * Every access is bounds-checked against lengths fixed before it (the mapping
                //   length, then each record's checked size), and no value read is trusted for
                //   anything but such checked slicing. A concurrent writer can make us read
                //   wrong values (reported as damage, or a wrong record) or, at worst, stop on
                //   a failed bounds check; it cannot make us read outside the mapping.
                // * A file that shrinks leaves pages past its new end mapped but unbacked;
                //   touching one raises SIGBUS. `sigbus::Registration` (taken below, before any
                //   byte is read) replaces such a page with zeros instead, the zero record
                //   header fails to parse, and `Shrink::error` reports one line naming the file
                //   and the byte where it now ends. Past `sigbus::SLOTS` registrations the file
                //   is not mapped but read with read(2), so no unguarded mapping exists.
                // * The mapping lives in `MappedInput::backing`, dropped after the registration
                //   (field order) and after every view (they borrow the `Trace`).
                let map = unsafe { Mmap::map(&file) }.map_err(|e| TraceError {
                    file: name.clone(),
                    error: ErrorKind::At {
                        offset: 0,
                        message: format!("cannot map: {e}"),
                    },
                })?;
                let Some(guard) = Registration::new(map.as_ptr(), map.len()) else {
                    drop(map);
                    return self.add(InputSource::Stream {
                        name,
                        reader: Box::new(file),
                    });
                };
                let header = StreamHeader::parse(&map).map_err(fmt_err)?;
                let concatenated = is_concatenated(&map, &header);
                self.streams.push(StreamInfoView {
                    name,
                    header,
                    len: Some(len),
                });
                self.mapped.push(MappedInput {
                    stream: self.streams.len() - 1,
                    shrink: Some(Shrink {
                        path,
                        len: map.len() as u64,
                        guard,
                    }),
                    backing: Backing::Map(map),
                    concatenated,
                });
            }
            InputSource::Bytes { data, .. } => {
                let header = StreamHeader::parse(&data).map_err(fmt_err)?;
                let concatenated = is_concatenated(&data, &header);
                self.streams.push(StreamInfoView {
                    name,
                    header,
                    len: Some(data.len() as u64),
                });
                self.mapped.push(MappedInput {
                    stream: self.streams.len() - 1,
                    shrink: None,
                    backing: Backing::Owned(data),
                    concatenated,
                });
            }
            InputSource::Stream { mut reader, .. } => {
                let mut buf = Vec::with_capacity(abi::STREAM_HEADER_SIZE);
                fill(&mut reader, &mut buf, abi::STREAM_HEADER_SIZE).map_err(|e| {
                    TraceError::at(&name, buf.len() as u64, format!("read error: {e}"))
                })?;
                // The header may be longer than 128 bytes (a later minor version).
                let header = match StreamHeader::parse(&buf) {
                    Err(FormatError::TruncatedHeader { need, .. }) if buf.len() < need => {
                        fill(&mut reader, &mut buf, need).map_err(|e| {
                            TraceError::at(&name, buf.len() as u64, format!("read error: {e}"))
                        })?;
                        StreamHeader::parse(&buf)
                    }
                    other => other,
                }
                .map_err(fmt_err)?;
                let hs = header.header_size as usize;
                buf.drain(..hs);
                self.streams.push(StreamInfoView {
                    name,
                    header,
                    len: None,
                });
                self.pipes.push(PipeInput {
                    stream: self.streams.len() - 1,
                    reader,
                    buf,
                    base: hs as u64,
                });
            }
        }
        Ok(())
    }
}

/// Whether another stream header follows the records of a per-CPU stream within its first
/// [`PIPE_READAHEAD`] bytes (`cat run.grtrace.0 run.grtrace.1 > both`). Such a file is read
/// like a merged stream, so it gives what the same bytes give on stdin. Walks record sizes
/// only; damage ends the walk (the merge reports it).
pub(super) fn is_concatenated(data: &[u8], h: &StreamHeader) -> bool {
    if h.is_merged() {
        return false;
    }
    let end = data.len().min(PIPE_READAHEAD);
    let mut pos = h.header_size as usize;
    while pos + abi::RECORD_HEADER_SIZE <= end {
        if data[pos..].starts_with(&abi::STREAM_MAGIC) {
            return true;
        }
        let size = h.endian.u16(&data[pos..], rec_off::SIZE) as usize;
        if size < abi::RECORD_HEADER_SIZE || !size.is_multiple_of(abi::RECORD_ALIGN) {
            return false;
        }
        pos += size;
    }
    false
}

/// Reads until `buf` holds `want` bytes or the reader ends.
pub(super) fn fill(r: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    while buf.len() < want {
        let n = (want - buf.len()).min(chunk.len());
        match r.read(&mut chunk[..n]) {
            Ok(0) => return Ok(()),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
