//! Opening inputs: regular files are mapped (with the SIGBUS guard), streams read their header.

use std::fs::File;
use std::io::{self, Read};

use super::{ErrorKind, InputSource, StreamInfoView, Trace, TraceError, PIPE_READAHEAD};
use crate::abi::{self, rec_off};
use crate::error::FormatError;
use crate::mapped::MappedFile;
use crate::record::StreamHeader;

pub(super) enum Backing {
    Map(MappedFile),
    Owned(Vec<u8>),
}

impl Backing {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Backing::Map(m) => m.bytes(),
            Backing::Owned(v) => v,
        }
    }

    /// The file mapping, for a mapped file: it says whether damage is a shrunk file.
    pub(super) fn mapping(&self) -> Option<&MappedFile> {
        match self {
            Backing::Map(m) => Some(m),
            Backing::Owned(_) => None,
        }
    }
}

pub(super) struct MappedInput {
    pub(super) stream: usize,
    pub(super) backing: Backing,
    /// A per-CPU stream followed by another stream header (concatenated streams, `cat a b >
    /// f`) within its first [`PIPE_READAHEAD`] bytes: read like a merged stream, exactly as
    /// the same bytes on stdin.
    pub(super) concatenated: bool,
}

/// The error to report instead of the damage found at `offset` of the mapped file `name` when
/// the file is now shorter than when it was mapped (or a page of it faulted): one line naming
/// the file and the byte where its data now ends.
#[cold]
pub(super) fn shrunk_error(map: &MappedFile, name: &str, offset: u64) -> Option<TraceError> {
    let s = map.shrunk()?;
    Some(TraceError::at(
        name,
        s.end.min(offset),
        format!(
            "the file shrank while being read ({} bytes when opened, {}): records from here on were not read",
            map.bytes().len(),
            s.now.map_or("now unreadable".to_string(), |n| format!("{n} now")),
        ),
    ))
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
                // Mapped with the SIGBUS guard (see `MappedFile`), or read with read(2)
                // where it cannot be guarded.
                let map = MappedFile::map(&file, &path).map_err(|e| TraceError {
                    file: name.clone(),
                    error: ErrorKind::At {
                        offset: 0,
                        message: format!("cannot map: {e}"),
                    },
                })?;
                let Some(map) = map else {
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
