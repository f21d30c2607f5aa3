//! The merge cursor of a per-CPU mapped file: records are read in place.

use super::error::header_error;
use super::open::shrunk_error;
use super::{ErrorKind, RunSummary, TraceError, PIPE_READAHEAD};
use crate::abi;
use crate::endian::Endian;
use crate::mapped::MappedFile;
use crate::record::StreamHeader;
use crate::view::RecordView;

/// A per-CPU mapped stream: its records are read in place.
pub(super) struct FileCursor<'m> {
    pub(super) name: &'m str,
    pub(super) data: &'m [u8],
    pub(super) endian: Endian,
    /// Offset of `head`.
    pub(super) pos: usize,
    pub(super) head: Option<RecordView<'m>>,
    pub(super) check: bool,
    /// Index in `Merger::origins`: the card and session of its header.
    pub(super) origin: u32,
    /// Card and session of its header.
    pub(super) ident: (u32, u64),
    /// The file mapping behind `data`, if any (it says whether damage is a shrunk file),
    /// and how much of it was handed back.
    pub(super) map: Option<&'m MappedFile>,
    pub(super) released: usize,
}

/// A cursor hands the pages it has passed back to the kernel every this many bytes, so a
/// one-pass reader of a multi-GB trace keeps a flat resident set while still reading in place.
pub(super) const RELEASE_STEP: usize = 4 << 20;
/// ... keeping the last this many bytes before its position: runs handed to a consumer
/// that reads them a little later (on another thread, see `Trace::for_each_run`) are
/// still mapped when it does (pages released too early would only fault back in). A file
/// keeps at most `RELEASE_STEP + RELEASE_LAG` bytes resident (8 MiB, as before the lag).
pub(crate) const RELEASE_LAG: usize = 4 << 20;

/// Drops the pages of a file mapping below `pos - RELEASE_LAG` (page-aligned) from the
/// resident set, from where the last call (`released`) stopped; `released` moves to there.
/// Without a mapping (bytes owned in memory) only `released` moves.
#[cold]
pub(super) fn release_pages(map: Option<&MappedFile>, released: &mut usize, pos: usize) {
    let upto = pos.saturating_sub(RELEASE_LAG);
    let Some(map) = map else {
        *released = upto;
        return;
    };
    let page = 4096;
    // From the page the last release stopped before (it held bytes not yet passed).
    let start = *released / page * page;
    let end = upto / page * page;
    if end > start {
        // Views of the pages (runs a consumer still holds) stay valid: see `release`.
        map.release(start, end - start);
    }
    *released = upto;
}

impl<'m> FileCursor<'m> {
    /// Drops the pages of `data` below `pos - RELEASE_LAG` from the resident set.
    #[cold]
    pub(super) fn release_consumed(&mut self) {
        release_pages(self.map, &mut self.released, self.pos);
    }

    /// Where the fast path of the merge must stop and call [`seek_head`](Self::seek_head):
    /// the position past which pages are due to be released.
    #[inline(always)]
    pub(super) fn fast_end(&self) -> usize {
        self.released + RELEASE_STEP + RELEASE_LAG
    }

    /// Moves to the first known record at or after `pos` and returns it (the caller stores
    /// it in `head` when it leaves this cursor with a head).
    #[inline(always)]
    pub(super) fn seek_head(&mut self, sum: &mut RunSummary) -> Option<RecordView<'m>> {
        loop {
            if self.pos >= self.data.len() {
                self.head = None;
                return None;
            }
            if self.pos >= self.fast_end() {
                self.release_consumed();
            }
            match RecordView::parse(&self.data[self.pos..], self.endian, self.pos as u64) {
                Ok(r) => {
                    if !r.rtype().is_known() {
                        sum.unknown_records += 1;
                        self.pos += r.size();
                        continue;
                    }
                    // `head` is left to the caller: the merge loops keep it in a local
                    // while a cursor runs and store it only when they leave the cursor.
                    return Some(r);
                }
                Err(e) => {
                    // A shrunk file first (its zeros are not a header), then a concatenated
                    // stream, else damage.
                    let shrunk = self
                        .map
                        .and_then(|m| shrunk_error(m, self.name, self.pos as u64));
                    if let Some(s) = shrunk {
                        sum.errors.push(s);
                    } else {
                        match self.next_stream(sum) {
                            Some(true) => continue,
                            Some(false) => {}
                            None => sum.errors.push(TraceError {
                                file: self.name.to_string(),
                                error: ErrorKind::Format(e),
                            }),
                        }
                    }
                    self.pos = self.data.len();
                    self.head = None;
                    return None;
                }
            }
        }
    }

    /// A stream header where a record should be (a magic never parses as a record: its
    /// size field is not a multiple of 8): a stream concatenated past the read-ahead. Its
    /// records continue this cursor in its byte order and checking. One of another card or
    /// session cannot (its records would be labelled with this file's card): that is an
    /// error naming the offset. Returns None when there is no header here, else whether
    /// the cursor can go on (an error was reported if not).
    #[cold]
    pub(super) fn next_stream(&mut self, sum: &mut RunSummary) -> Option<bool> {
        let at = &self.data[self.pos..];
        if !at.starts_with(&abi::STREAM_MAGIC) {
            return None;
        }
        Some(match StreamHeader::parse(at) {
            Ok(h) if (h.card, h.session_id) == self.ident && !h.is_merged() => {
                self.endian = h.endian;
                self.check = h.flags & abi::STREAM_SEQ_CHECKED == 0;
                self.pos += h.header_size as usize;
                true
            }
            Ok(_) => {
                sum.errors.push(TraceError::at(
                    self.name,
                    self.pos as u64,
                    format!(
                        "a stream of another card, session or a merged stream starts here, past the first {} MiB: read this file on stdin or split it",
                        PIPE_READAHEAD >> 20
                    ),
                ));
                false
            }
            Err(e) => {
                sum.errors.push(header_error(self.name, self.pos as u64, e));
                false
            }
        })
    }
}
