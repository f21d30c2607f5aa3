//! Ftrace ring-buffer pages, as `trace_pipe_raw` hands them out and trace.dat stores them
//! (kernel/trace/ring_buffer.c): a page header (`timestamp`, `commit` with the missed-events
//! flags in its top bits) and compressed event headers (`type_len:5, time_delta:27`), with
//! padding, time extends and absolute time stamps.

use grtrace_format::Endian;

use crate::format::PageLayout;

/// `commit` flag: events were lost before this page.
pub const RB_MISSED_EVENTS: u64 = 1 << 31;
/// `commit` flag: the number lost is stored after the page data.
pub const RB_MISSED_STORED: u64 = 1 << 30;
/// Bits of `commit` that hold the data length (as libtraceevent's kbuffer masks them).
pub const COMMIT_MASK: u64 = (1 << 27) - 1;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
/// Top bits of a time stamp that an absolute time stamp event does not carry.
const TS_MSB: u64 = 0xf8 << 56;

/// Events lost before a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    /// None lost.
    None,
    /// The kernel said events were lost but not how many.
    Unknown,
    /// This many were lost.
    Count(u64),
}

/// A page that does not follow the ring-buffer format; `offset` is from the page start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageError {
    /// Byte offset from the page start.
    pub offset: usize,
    /// What is wrong.
    pub msg: &'static str,
}

/// A cursor over the events of one page. It does not borrow the page: each call to
/// [`Page::next`] gets the same page bytes again (so a cursor can live next to the buffer
/// its page is decompressed into).
#[derive(Clone, Debug)]
pub struct Page {
    end: usize,
    pos: usize,
    ts: u64,
    endian: Endian,
    /// Events lost before this page.
    pub missed: Missed,
}

impl Page {
    /// Reads the page header. `page` may be shorter than the layout's page size (a short
    /// read of `trace_pipe_raw`), but must hold the header and the committed data.
    pub fn open(page: &[u8], l: &PageLayout) -> Result<Page, PageError> {
        if page.len() < l.data_off {
            return Err(PageError {
                offset: 0,
                msg: "page shorter than its header",
            });
        }
        let e = l.endian;
        let ts = e.u64(page, l.timestamp_off);
        let commit = if l.commit_size == 8 {
            e.u64(page, l.commit_off)
        } else {
            e.u32(page, l.commit_off) as u64
        };
        let len = (commit & COMMIT_MASK) as usize;
        let end = l.data_off + len;
        if end > page.len() || end > l.page_size {
            return Err(PageError {
                offset: l.commit_off,
                msg: "page commit runs past the page",
            });
        }
        let missed = if commit & RB_MISSED_EVENTS == 0 {
            Missed::None
        } else if commit & RB_MISSED_STORED != 0 && end + l.commit_size <= page.len() {
            let n = if l.commit_size == 8 {
                e.u64(page, end)
            } else {
                e.u32(page, end) as u64
            };
            Missed::Count(n)
        } else {
            Missed::Unknown
        };
        Ok(Page {
            end,
            pos: l.data_off,
            ts,
            endian: e,
            missed,
        })
    }

    /// Time stamp of the page (the first event's base).
    pub fn timestamp(&self) -> u64 {
        self.ts
    }

    /// Offset of the next event header within the page.
    pub fn offset(&self) -> usize {
        self.pos
    }

    #[inline]
    fn header(&self, w: u32) -> (u32, u32) {
        match self.endian {
            Endian::Little => (w & 0x1f, w >> 5),
            Endian::Big => (w >> 27, w & ((1 << 27) - 1)),
        }
    }

    /// The next data event: (absolute time, payload starting at `common_type`).
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next<'p>(&mut self, page: &'p [u8]) -> Option<Result<(u64, &'p [u8]), PageError>> {
        if page.len() < self.end {
            return Some(Err(PageError {
                offset: page.len(),
                msg: "page shorter than its commit",
            }));
        }
        loop {
            if self.pos + 4 > self.end {
                return None;
            }
            let at = self.pos;
            let e = self.endian;
            let (type_len, delta) = self.header(e.u32(page, at));
            let end = self.end;
            let arr = |_: &Self| -> Result<u32, PageError> {
                if at + 8 > end {
                    Err(PageError {
                        offset: at,
                        msg: "event header runs past the commit",
                    })
                } else {
                    Ok(e.u32(page, at + 4))
                }
            };
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // A null event: the rest of the page is unused.
                        self.pos = self.end;
                        return None;
                    }
                    let len = match arr(self) {
                        Ok(v) => v as usize,
                        Err(err) => return Some(Err(err)),
                    };
                    // A discarded event keeps its time delta.
                    self.ts = self.ts.wrapping_add(delta as u64);
                    self.pos = at + 4 + len;
                }
                TYPE_TIME_EXTEND => {
                    let hi = match arr(self) {
                        Ok(v) => v as u64,
                        Err(err) => return Some(Err(err)),
                    };
                    self.ts = self.ts.wrapping_add((hi << TS_SHIFT) + delta as u64);
                    self.pos = at + 8;
                }
                TYPE_TIME_STAMP => {
                    let hi = match arr(self) {
                        Ok(v) => v as u64,
                        Err(err) => return Some(Err(err)),
                    };
                    let mut abs = (hi << TS_SHIFT) | delta as u64;
                    // rb_fix_abs_ts(): the event holds 59 bits; the top ones come from
                    // the time so far.
                    if self.ts & TS_MSB != 0 {
                        abs |= self.ts & TS_MSB;
                        if abs < self.ts {
                            abs = abs.wrapping_add(1 << 59);
                        }
                    }
                    self.ts = abs;
                    self.pos = at + 8;
                }
                n => {
                    // type_len 1..28: n words of payload; 0: array[0] counts itself and
                    // the payload, which is rounded to words.
                    let (start, dlen) = if n == 0 {
                        let len = match arr(self) {
                            Ok(v) => v as usize,
                            Err(err) => return Some(Err(err)),
                        };
                        if len < 4 {
                            return Some(Err(PageError {
                                offset: at,
                                msg: "event length below its own length word",
                            }));
                        }
                        (at + 8, len - 4)
                    } else {
                        (at + 4, n as usize * 4)
                    };
                    let plen = (dlen + 3) & !3;
                    if start + plen > self.end {
                        return Some(Err(PageError {
                            offset: at,
                            msg: "event runs past the commit",
                        }));
                    }
                    self.ts = self.ts.wrapping_add(delta as u64);
                    self.pos = start + plen;
                    return Some(Ok((self.ts, &page[start..start + dlen])));
                }
            }
            if self.pos > self.end {
                return Some(Err(PageError {
                    offset: at,
                    msg: "padding runs past the commit",
                }));
            }
        }
    }
}

/// Builds ring-buffer pages the way the kernel fills them (for the trace.dat writer, the
/// fake tracefs of the tests, and the benchmark).
pub struct PageBuilder {
    layout: PageLayout,
    page: Vec<u8>,
    pos: usize,
    last_ts: u64,
    started: bool,
}

impl PageBuilder {
    /// An empty page of `layout`.
    pub fn new(layout: PageLayout) -> PageBuilder {
        PageBuilder {
            layout,
            page: vec![0; layout.page_size],
            pos: layout.data_off,
            last_ts: 0,
            started: false,
        }
    }

    fn put32(&mut self, v: u32) {
        let e = self.layout.endian;
        e.put_u32(&mut self.page, self.pos, v);
        self.pos += 4;
    }

    fn hdr(&self, type_len: u32, delta: u32) -> u32 {
        match self.layout.endian {
            Endian::Little => (delta << 5) | type_len,
            Endian::Big => (type_len << 27) | delta,
        }
    }

    /// Appends an event with payload `data` at time `ts` (not before the previous one).
    /// Returns false, leaving the page unchanged, when it does not fit: finish the page.
    pub fn push(&mut self, ts: u64, data: &[u8]) -> bool {
        if !self.started {
            let e = self.layout.endian;
            e.put_u64(&mut self.page, self.layout.timestamp_off, ts);
            self.last_ts = ts;
            self.started = true;
        }
        let delta = ts.saturating_sub(self.last_ts);
        let ext = if delta >= 1 << TS_SHIFT { 8 } else { 0 };
        let padded = (data.len() + 3) & !3;
        let small = padded <= 28 * 4 && !data.is_empty();
        let need = ext + 4 + if small { padded } else { 4 + padded };
        if self.pos + need > self.layout.page_size {
            return false;
        }
        let mut d = delta;
        if ext > 0 {
            let h = self.hdr(TYPE_TIME_EXTEND, (d & ((1 << TS_SHIFT) - 1)) as u32);
            self.put32(h);
            self.put32((d >> TS_SHIFT) as u32);
            d = 0;
        }
        if small {
            let h = self.hdr((padded / 4) as u32, d as u32);
            self.put32(h);
        } else {
            let h = self.hdr(0, d as u32);
            self.put32(h);
            self.put32(data.len() as u32 + 4);
        }
        self.page[self.pos..self.pos + data.len()].copy_from_slice(data);
        self.page[self.pos + data.len()..self.pos + padded].fill(0);
        self.pos += padded;
        self.last_ts = ts;
        true
    }

    /// Whether no event was added yet.
    pub fn is_empty(&self) -> bool {
        !self.started
    }

    /// The finished page (commit written, `missed` flags set) ready to store; the builder
    /// starts a new page.
    pub fn finish(&mut self, missed: Missed) -> Vec<u8> {
        let l = self.layout;
        let len = (self.pos - l.data_off) as u64;
        let mut commit = len;
        match missed {
            Missed::None => {}
            Missed::Unknown => commit |= RB_MISSED_EVENTS,
            Missed::Count(n) => {
                if self.pos + l.commit_size <= l.page_size {
                    commit |= RB_MISSED_EVENTS | RB_MISSED_STORED;
                    if l.commit_size == 8 {
                        l.endian.put_u64(&mut self.page, self.pos, n);
                    } else {
                        l.endian.put_u32(&mut self.page, self.pos, n as u32);
                    }
                } else {
                    commit |= RB_MISSED_EVENTS;
                }
            }
        }
        if l.commit_size == 8 {
            l.endian.put_u64(&mut self.page, l.commit_off, commit);
        } else {
            l.endian
                .put_u32(&mut self.page, l.commit_off, commit as u32);
        }
        let out = std::mem::replace(&mut self.page, vec![0; l.page_size]);
        self.pos = l.data_off;
        self.started = false;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> PageLayout {
        PageLayout::native64(4096)
    }

    #[test]
    fn built_pages_read_back_with_extends_and_large_events() {
        let mut b = PageBuilder::new(layout());
        let big = vec![7u8; 200];
        assert!(b.push(1000, &[1, 2, 3, 4, 5, 6, 7, 8]));
        assert!(b.push(1000 + (1 << 30), &big)); // needs a time extend
        assert!(b.push(1000 + (1 << 30) + 5, &[9; 12]));
        let page = b.finish(Missed::Count(3));
        let mut p = Page::open(&page, &layout()).unwrap();
        assert_eq!(p.missed, Missed::Count(3));
        let (t, d) = p.next(&page).unwrap().unwrap();
        assert_eq!((t, d), (1000, &[1, 2, 3, 4, 5, 6, 7, 8][..]));
        let (t, d) = p.next(&page).unwrap().unwrap();
        assert_eq!((t, d.len()), (1000 + (1 << 30), 200));
        let (t, _) = p.next(&page).unwrap().unwrap();
        assert_eq!(t, 1000 + (1 << 30) + 5);
        assert!(p.next(&page).is_none());
    }

    #[test]
    fn padding_and_absolute_stamps_follow_the_kernel() {
        let l = layout();
        let mut page = vec![0u8; 4096];
        let e = l.endian;
        e.put_u64(&mut page, 0, 500);
        let mut w = 16;
        let mut put = |v: u32, page: &mut Vec<u8>| {
            e.put_u32(page, w, v);
            w += 4;
        };
        // discarded event (padding with a delta): array[0] = its length after the header
        put((10 << 5) | TYPE_PADDING, &mut page);
        put(12, &mut page);
        put(0, &mut page);
        put(0, &mut page);
        // absolute time stamp 7_000_000_000
        let abs: u64 = 7_000_000_000;
        put(
            (((abs & ((1 << 27) - 1)) as u32) << 5) | TYPE_TIME_STAMP,
            &mut page,
        );
        put((abs >> 27) as u32, &mut page);
        // data event, 4 bytes, delta 3
        put((3 << 5) | 1, &mut page);
        put(0xabcd, &mut page);
        // null padding ends the page early
        put(TYPE_PADDING, &mut page);
        e.put_u64(&mut page, 8, (w - 16) as u64 | RB_MISSED_EVENTS);
        let mut p = Page::open(&page, &l).unwrap();
        assert_eq!(p.missed, Missed::Unknown);
        let (t, d) = p.next(&page).unwrap().unwrap();
        assert_eq!((t, d.len()), (abs + 3, 4));
        assert!(p.next(&page).is_none());
    }

    #[test]
    fn corrupt_pages_name_the_offset() {
        let l = layout();
        let mut page = vec![0u8; 4096];
        l.endian.put_u64(&mut page, 8, 5000);
        assert_eq!(Page::open(&page, &l).unwrap_err().offset, 8);
        // an event claiming 100 words in a 8-byte commit
        l.endian.put_u64(&mut page, 8, 8);
        l.endian.put_u32(&mut page, 16, 28);
        let mut p = Page::open(&page, &l).unwrap();
        let err = p.next(&page).unwrap().unwrap_err();
        assert_eq!(err.offset, 16);
        assert!(Page::open(&page[..10], &l).is_err());
    }
}
