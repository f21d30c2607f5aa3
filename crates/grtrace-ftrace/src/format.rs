//! The kernel's event format descriptions (`events/<system>/<event>/format`, and the
//! `header_page` description of ring-buffer pages), as tracefs prints them and trace.dat
//! stores them. Events are decoded from these offsets and sizes, never from printed text.

use grtrace_format::Endian;

/// One field of an event record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Field name (`seqno`).
    pub name: String,
    /// Byte offset from the start of the event record (common fields included).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the field is signed.
    pub signed: bool,
    /// `__data_loc`: the field is a u32 `(len << 16) | offset-from-record-start`.
    pub data_loc: bool,
    /// `__rel_loc`: like `__data_loc`, offset relative to the end of this field.
    pub rel_loc: bool,
}

/// A parsed `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Subsystem (`gpu_scheduler`).
    pub system: String,
    /// Event name (`drm_run_job`).
    pub name: String,
    /// The event id records carry.
    pub id: u16,
    /// The fields, common ones included.
    pub fields: Vec<Field>,
}

/// A format text that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatTextError(pub String);

impl std::fmt::Display for FormatTextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl EventFormat {
    /// The size of a record's fixed part, where its dynamic (`__data_loc`) data starts:
    /// the fields' highest end (8 for a format without fields), rounded up to 8 when a
    /// field is a fixed 8-byte one, else to 4.
    pub fn fixed_size(&self) -> usize {
        let end = self
            .fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap_or(8);
        let align = if self.fields.iter().any(|f| f.size == 8 && !f.data_loc) {
            8
        } else {
            4
        };
        end.div_ceil(align) * align
    }

    /// Parses a `format` file of `system`.
    pub fn parse(system: &str, text: &str) -> Result<EventFormat, FormatTextError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let l = line.trim();
            if let Some(v) = l.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = l.strip_prefix("ID:") {
                let v = v.trim();
                id = Some(v.parse::<u16>().map_err(|_| {
                    FormatTextError(format!("{system}: event ID `{v}` is not a number"))
                })?);
            } else if l.starts_with("field:") {
                fields.push(parse_field(l).ok_or_else(|| {
                    FormatTextError(format!("{system}: cannot read field line `{l}`"))
                })?);
            }
        }
        let name = name.ok_or_else(|| FormatTextError(format!("{system}: format has no name")))?;
        let id = id.ok_or_else(|| FormatTextError(format!("{system}/{name}: format has no ID")))?;
        Ok(EventFormat {
            system: system.to_string(),
            name,
            id,
            fields,
        })
    }

    /// The field called `name`, if the format has it.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Where a field's bytes are: the part of a [`Field`] the hot path reads (`Copy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Loc {
    /// Byte offset from the start of the event record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// `__data_loc` (see [`Field::data_loc`]).
    pub data_loc: bool,
    /// `__rel_loc` (see [`Field::rel_loc`]).
    pub rel_loc: bool,
}

impl Field {
    /// Where the field's bytes are, for the hot path.
    pub fn loc(&self) -> Loc {
        Loc {
            offset: self.offset,
            size: self.size,
            data_loc: self.data_loc,
            rel_loc: self.rel_loc,
        }
    }
}

/// Parses `field:TYPE NAME; offset:N; size:N; signed:N;` (tab separated; the `header_page` lines have
/// a blank after `field:`; arrays name `NAME[N]`).
pub fn parse_field(line: &str) -> Option<Field> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts.next()?.strip_prefix("field:")?.trim();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let last = decl.rsplit([' ', '*', '\t']).next()?;
    let name = last.split('[').next()?.to_string();
    if name.is_empty() {
        return None;
    }
    Some(Field {
        name,
        offset: offset?,
        size: size?,
        signed,
        data_loc: decl.starts_with("__data_loc"),
        rel_loc: decl.starts_with("__rel_loc"),
    })
}

/// Where the parts of a ring-buffer page are (from `events/header_page`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Byte order of the page.
    pub endian: Endian,
    /// Offset of the page's 64-bit timestamp.
    pub timestamp_off: usize,
    /// Offset of `commit` (bytes of event data in the page, plus flags).
    pub commit_off: usize,
    /// Size of `commit` = the kernel's long size (4 or 8).
    pub commit_size: usize,
    /// Offset of the first event.
    pub data_off: usize,
    /// Whole page (sub-buffer) size in bytes.
    pub page_size: usize,
}

impl PageLayout {
    /// The layout of a 64-bit kernel with `page_size` pages (what `header_page` says there).
    pub fn native64(page_size: usize) -> PageLayout {
        PageLayout {
            endian: Endian::NATIVE,
            timestamp_off: 0,
            commit_off: 8,
            commit_size: 8,
            data_off: 16,
            page_size,
        }
    }

    /// Reads `header_page`; `page_size` comes from the trace.dat header (or the
    /// tracefs sub-buffer size) and must cover the data field.
    pub fn parse(
        text: &str,
        endian: Endian,
        page_size: usize,
    ) -> Result<PageLayout, FormatTextError> {
        let fields: Vec<Field> = text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("field:"))
            .filter_map(parse_field)
            .collect();
        let get = |n: &str| {
            fields
                .iter()
                .find(|f| f.name == n)
                .ok_or_else(|| FormatTextError(format!("header_page has no `{n}` field")))
        };
        let ts = get("timestamp")?;
        let commit = get("commit")?;
        let data = get("data")?;
        if ts.size != 8 || !(commit.size == 4 || commit.size == 8) {
            return Err(FormatTextError(format!(
                "header_page: timestamp size {} / commit size {} not supported",
                ts.size, commit.size
            )));
        }
        let page_size = if page_size == 0 {
            data.offset + data.size
        } else {
            page_size
        };
        if data.offset >= page_size || commit.offset + commit.size > data.offset {
            return Err(FormatTextError(format!(
                "header_page: data at {} does not fit a {page_size}-byte page",
                data.offset
            )));
        }
        Ok(PageLayout {
            endian,
            timestamp_off: ts.offset,
            commit_off: commit.offset,
            commit_size: commit.size,
            data_off: data.offset,
            page_size,
        })
    }

    /// The `header_page` text a kernel with this layout prints (for the trace.dat writer).
    pub fn header_page_text(&self) -> String {
        format!(
            "\tfield: u64 timestamp;\toffset:{};\tsize:8;\tsigned:0;\n\
             \tfield: local_t commit;\toffset:{};\tsize:{};\tsigned:1;\n\
             \tfield: int overwrite;\toffset:{};\tsize:1;\tsigned:1;\n\
             \tfield: char data;\toffset:{};\tsize:{};\tsigned:1;\n",
            self.timestamp_off,
            self.commit_off,
            self.commit_size,
            self.commit_off,
            self.data_off,
            self.page_size - self.data_off
        )
    }
}

/// The `header_event` text of every kernel since 2.6.31 (the writer stores it verbatim).
pub const HEADER_EVENT_TEXT: &str = "# compressed entry header\n\
\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\
\n\
\tpadding     : type == 29\n\
\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\
\tdata max type_len  == 28\n";

/// Reads an unsigned field of `size` bytes (1, 2, 4 or 8) at `off`; short data reads 0
/// (callers check record lengths against the format once, see [`Field`]).
#[inline]
pub fn read_uint(e: Endian, data: &[u8], off: usize, size: usize) -> u64 {
    let Some(b) = data.get(off..off + size) else {
        return 0;
    };
    match size {
        1 => b[0] as u64,
        2 => e.u16(b, 0) as u64,
        4 => e.u32(b, 0) as u64,
        8 => e.u64(b, 0),
        _ => 0,
    }
}

/// The bytes of a `__data_loc` / `__rel_loc` string field, without its NUL; empty if the
/// location points outside the record.
#[inline]
pub fn read_str(e: Endian, data: &[u8], f: Loc) -> &[u8] {
    if f.size != 4 || !(f.data_loc || f.rel_loc) {
        // A fixed char array.
        let b = data.get(f.offset..f.offset + f.size).unwrap_or(&[]);
        return grtrace_format::record::trim_nul(b);
    }
    let loc = read_uint(e, data, f.offset, 4) as usize;
    let mut off = loc & 0xffff;
    if f.rel_loc {
        off += f.offset + 4;
    }
    let len = loc >> 16;
    let b = data.get(off..off + len).unwrap_or(&[]);
    grtrace_format::record::trim_nul(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHED_RUN_612: &str = "name: drm_run_job\nID: 1432\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:struct drm_sched_entity * entity;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:struct dma_fence * fence;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:0;\n\
\tfield:uint64_t id;\toffset:32;\tsize:8;\tsigned:0;\n\
\tfield:u32 job_count;\toffset:40;\tsize:4;\tsigned:0;\n\
\tfield:int hw_job_count;\toffset:44;\tsize:4;\tsigned:1;\n\n\
print fmt: \"entity=%p, id=%llu\", REC->entity, REC->id\n";

    #[test]
    fn format_text_gives_offsets_sizes_and_locations() {
        let f = EventFormat::parse("gpu_scheduler", SCHED_RUN_612).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("drm_run_job", 1432));
        let name = f.field("name").unwrap();
        assert!(name.data_loc && name.offset == 24 && name.size == 4);
        let e = f.field("entity").unwrap();
        assert_eq!((e.offset, e.size, e.signed), (8, 8, false));
        assert!(f.field("hw_job_count").unwrap().signed);
        assert_eq!(f.fields.len(), 10);
    }

    #[test]
    fn arrays_and_header_page_parse() {
        let f = parse_field("field:char comm[16];\toffset:8;\tsize:16;\tsigned:0;").unwrap();
        assert_eq!((f.name.as_str(), f.size), ("comm", 16));
        let l = PageLayout::native64(4096);
        let back = PageLayout::parse(&l.header_page_text(), Endian::NATIVE, 4096).unwrap();
        assert_eq!(back, l);
        let l32 = PageLayout::parse(
            "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
             \tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\
             \tfield: char data;\toffset:12;\tsize:4084;\tsigned:1;\n",
            Endian::Little,
            0,
        )
        .unwrap();
        assert_eq!(
            (l32.commit_size, l32.data_off, l32.page_size),
            (4, 12, 4096)
        );
    }

    #[test]
    fn bad_format_text_is_refused() {
        assert!(EventFormat::parse("x", "name: a\nformat:\n").is_err());
        assert!(EventFormat::parse("x", "name: a\nID: zz\n").is_err());
        assert!(PageLayout::parse("nothing", Endian::Little, 4096).is_err());
    }

    #[test]
    fn data_loc_strings_are_bounded() {
        let f = Field {
            name: "n".into(),
            offset: 0,
            size: 4,
            signed: false,
            data_loc: true,
            rel_loc: false,
        };
        let mut d = vec![0u8; 12];
        d[..4].copy_from_slice(&((4u32 << 16) | 4).to_le_bytes());
        d[4..8].copy_from_slice(b"gfx\0");
        assert_eq!(read_str(Endian::Little, &d, f.loc()), b"gfx");
        d[..4].copy_from_slice(&((40u32 << 16) | 4).to_le_bytes());
        assert_eq!(read_str(Endian::Little, &d, f.loc()), b"");
    }
}
