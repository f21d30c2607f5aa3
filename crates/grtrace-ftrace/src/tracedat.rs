//! trace-cmd `trace.dat` files, versions 6 and 7 (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5)):
//! the header, the event formats the file carries, saved command lines, options, and the
//! per-CPU ring-buffer pages, which v7 may compress in chunks (zlib or zstd).
//!
//! The file is mapped, not read: uncompressed pages are decoded in place; compressed data is
//! inflated one chunk at a time, so memory does not grow with the trace.

use std::io::Read;

use grtrace_format::Endian;

use crate::format::{EventFormat, PageLayout};
use crate::page::{Missed, Page};

/// Bytes 0..10 of every trace.dat.
pub const MAGIC: [u8; 10] = [0x17, 0x08, 0x44, b't', b'r', b'a', b'c', b'i', b'n', b'g'];

/// v7 option / section ids (trace-cmd's `enum tracecmd_option_id`).
pub mod opt {
    /// End of the options.
    pub const DONE: u16 = 0;
    /// A buffer (instance) and where its CPUs' data is (v7).
    pub const BUFFER: u16 = 3;
    /// The trace clock.
    pub const TRACECLOCK: u16 = 4;
    /// `uname -a` of the recording machine.
    pub const UNAME: u16 = 5;
    /// The machine's CPU count.
    pub const CPUCOUNT: u16 = 8;
    /// trace-cmd's version.
    pub const VERSION: u16 = 9;
    /// The strings section (v7).
    pub const STRINGS: u16 = 15;
    /// The header_page/header_event section (v7).
    pub const HEADER_INFO: u16 = 16;
    /// The ftrace events' formats (v7).
    pub const FTRACE_EVENTS: u16 = 17;
    /// The other events' formats (v7).
    pub const EVENT_FORMATS: u16 = 18;
    /// Kernel symbols (v7).
    pub const KALLSYMS: u16 = 19;
    /// printk formats (v7).
    pub const PRINTK: u16 = 20;
    /// Task names (v7).
    pub const CMDLINES: u16 = 21;
    /// A buffer stored as text (latency format; not read).
    pub const BUFFER_TEXT: u16 = 22;
    /// The last id of trace-cmd's `enum tracecmd_option_id` (before `_MAX`): ids above
    /// (a newer trace-cmd, a fork) are warned about and skipped.
    pub const LAST_KNOWN: u16 = BUFFER_TEXT;
}

/// Most CPUs a trace.dat may claim (the kernel's largest NR_CPUS is 8192): a count beyond
/// is damage, and trusting it would open that many output streams.
pub const MAX_CPUS: u32 = 1 << 16;

/// Most bytes one compressed section or chunk may claim to inflate to. trace-cmd's chunks
/// are a few pages and its largest section (kallsyms) a few MiB; a larger claim is damage,
/// and is refused before anything is allocated for it.
pub const MAX_INFLATE: usize = 256 << 20;

/// Section flag: the section is compressed.
pub const SEC_COMPRESSED: u16 = 1;

/// A damaged or unsupported file; `offset` is the byte offset in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatError {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong.
    pub msg: String,
}

impl std::fmt::Display for DatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.msg)
    }
}

fn err<T>(offset: usize, msg: impl Into<String>) -> Result<T, DatError> {
    Err(DatError {
        offset: offset as u64,
        msg: msg.into(),
    })
}

thread_local! {
    /// One libzstd decompression context per thread, reused for every chunk (creating one
    /// per chunk cost more than inflating a small chunk).
    static ZSTD_CONTEXT: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// v7 compression of sections and trace data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// trace-cmd's "zlib": zlib-wrapped deflate (`compress2`).
    Zlib,
    /// trace-cmd's "zstd": one zstd frame per section or chunk (decoded with libzstd).
    Zstd,
}

impl Codec {
    /// trace-cmd's name of the codec.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zlib => "zlib",
            Codec::Zstd => "zstd",
        }
    }

    /// Inflates `src` into `out` (cleared first), which must come to `size` bytes.
    pub fn decompress(self, src: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        if size > MAX_INFLATE {
            return Err(format!(
                "{} data claims {size} bytes uncompressed (more than the {} MiB a section or chunk may hold)",
                self.name(),
                MAX_INFLATE >> 20
            ));
        }
        out.reserve(size);
        let r = match self {
            Codec::Zlib => flate2::read::ZlibDecoder::new(src)
                .take(size as u64 + 1)
                .read_to_end(out)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            // libzstd straight into the buffer: it cannot write past `size` bytes.
            Codec::Zstd => ZSTD_CONTEXT
                .with(|c| {
                    let mut c = c.borrow_mut();
                    let d = match &mut *c {
                        Some(d) => d,
                        none => none.insert(zstd::bulk::Decompressor::new()?),
                    };
                    d.decompress_to_buffer(src, out)
                })
                .map(|_| ())
                .map_err(|e| {
                    if e.to_string().contains("too small") {
                        format!("zstd data inflates to more than the {size} bytes the header says")
                    } else {
                        format!("zstd data: {e}")
                    }
                }),
        };
        r?;
        if out.len() != size {
            return Err(format!(
                "{} data inflates to {} bytes, header says {size}",
                self.name(),
                out.len()
            ));
        }
        Ok(())
    }
}

/// Where one CPU's pages are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuData {
    /// The CPU.
    pub cpu: u32,
    /// Offset of its pages in the file.
    pub offset: u64,
    /// Bytes of its pages (compressed, in v7 with a codec).
    pub size: u64,
}

/// A parsed trace.dat: everything but the event data, which [`CpuStream`] reads.
#[derive(Debug)]
pub struct TraceDat<'a> {
    /// The whole file.
    pub data: &'a [u8],
    /// File version: 6 or 7.
    pub version: u32,
    /// Byte order of the recording machine.
    pub endian: Endian,
    /// Its `long` size (4 or 8).
    pub long_size: u8,
    /// Ring-buffer page size.
    pub page_size: u32,
    /// v7: the codec of compressed sections and pages.
    pub codec: Option<Codec>,
    /// "zlib 1.2.13", "zstd 1.5.4" or "none".
    pub compression_name: String,
    /// Where the parts of a page are (`header_page`).
    pub layout: PageLayout,
    /// The event formats that could be parsed.
    pub formats: Vec<EventFormat>,
    /// Event format texts that could not be parsed (system/name, why): counted, not fatal.
    pub bad_formats: Vec<String>,
    /// Options skipped because their id is unknown or their size does not fit their
    /// meaning (forks and old trace-cmd versions wrote other things under the same ids),
    /// one line each naming the option and its offset: the events do not need them.
    pub warnings: Vec<String>,
    /// Task names (pid, comm).
    pub cmdlines: Vec<(u32, String)>,
    /// The trace clock's name.
    pub clock: String,
    /// `uname` of the recording machine (empty when absent).
    pub uname: String,
    /// trace-cmd's version (empty when absent).
    pub tracecmd_version: String,
    /// Where each CPU's pages are.
    pub cpus: Vec<CpuData>,
    /// The machine's CPU count (the CPUCOUNT option), 0 if the file has none. trace-cmd
    /// 3.1 lists only the CPUs that recorded data in a v7 BUFFER option, so an idle CPU is
    /// in this count but not in `cpus`.
    pub cpu_count: u32,
    /// Whether the per-CPU data is compressed (v7 buffer section flag).
    pub data_compressed: bool,
}

/// A bounds-checked reader over the file (or a decompressed section); offsets in errors are
/// file offsets (`base` + position).
struct Cur<'b> {
    b: &'b [u8],
    pos: usize,
    base: usize,
    e: Endian,
}

impl<'b> Cur<'b> {
    fn need(&self, n: usize, what: &str) -> Result<(), DatError> {
        if self.b.len().saturating_sub(self.pos) < n {
            return err(self.base + self.pos, format!("file ends inside {what}"));
        }
        Ok(())
    }
    fn bytes(&mut self, n: usize, what: &str) -> Result<&'b [u8], DatError> {
        self.need(n, what)?;
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, DatError> {
        Ok(self.bytes(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, DatError> {
        let e = self.e;
        Ok(e.u16(self.bytes(2, what)?, 0))
    }
    fn u32(&mut self, what: &str) -> Result<u32, DatError> {
        let e = self.e;
        Ok(e.u32(self.bytes(4, what)?, 0))
    }
    fn u64(&mut self, what: &str) -> Result<u64, DatError> {
        let e = self.e;
        Ok(e.u64(self.bytes(8, what)?, 0))
    }
    fn cstr(&mut self, what: &str) -> Result<&'b str, DatError> {
        let rest = &self.b[self.pos.min(self.b.len())..];
        let Some(n) = rest.iter().position(|&c| c == 0) else {
            return err(self.base + self.pos, format!("file ends inside {what}"));
        };
        let s = std::str::from_utf8(&rest[..n]).map_err(|_| DatError {
            offset: (self.base + self.pos) as u64,
            msg: format!("{what} is not text"),
        })?;
        self.pos += n + 1;
        Ok(s)
    }
    fn text(&mut self, n: u64, what: &str) -> Result<&'b str, DatError> {
        let at = self.base + self.pos;
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        let b = self.bytes(n, what)?;
        std::str::from_utf8(b).map_err(|_| DatError {
            offset: at as u64,
            msg: format!("{what} is not text"),
        })
    }
    fn tag(&mut self, want: &[u8], what: &str) -> Result<(), DatError> {
        let at = self.base + self.pos;
        if self.bytes(want.len(), what)? != want {
            return err(
                at,
                format!(
                    "expected `{}`",
                    String::from_utf8_lossy(&want[..want.len() - 1])
                ),
            );
        }
        Ok(())
    }
}

/// A v7 section: its id and its (decompressed) content.
struct Section {
    id: u16,
    body: Vec<u8>,
    /// File offset of the content (for errors inside uncompressed content).
    at: usize,
    compressed: bool,
}

impl<'a> TraceDat<'a> {
    /// Parses the file's header and metadata. `data` is the whole file (mapped).
    pub fn parse(data: &'a [u8]) -> Result<TraceDat<'a>, DatError> {
        if data.is_empty() {
            return err(0, "empty file");
        }
        if data.len() < MAGIC.len() || data[..MAGIC.len()] != MAGIC {
            return err(0, "not a trace-cmd trace.dat file (bad magic)");
        }
        let mut c = Cur {
            b: data,
            pos: MAGIC.len(),
            base: 0,
            e: Endian::Little,
        };
        let vpos = c.pos;
        let vs = c.cstr("the version string")?;
        let version: u32 = match vs {
            "6" => 6,
            "7" => 7,
            v => {
                return err(
                    vpos,
                    format!("unsupported trace.dat version `{v}` (6 and 7 are known)"),
                )
            }
        };
        let epos = c.pos;
        c.e = match c.u8("the endian byte")? {
            0 => Endian::Little,
            1 => Endian::Big,
            b => return err(epos, format!("bad endian byte {b}")),
        };
        let lpos = c.pos;
        let long_size = c.u8("the long size")?;
        if long_size != 4 && long_size != 8 {
            return err(lpos, format!("bad long size {long_size}"));
        }
        let ppos = c.pos;
        let page_size = c.u32("the page size")?;
        if !(64..=(1 << 24)).contains(&page_size) {
            return err(ppos, format!("implausible page size {page_size}"));
        }
        let mut t = TraceDat {
            data,
            version,
            endian: c.e,
            long_size,
            page_size,
            codec: None,
            compression_name: "none".into(),
            layout: PageLayout::native64(page_size as usize),
            formats: Vec::new(),
            bad_formats: Vec::new(),
            warnings: Vec::new(),
            cmdlines: Vec::new(),
            clock: "local".into(),
            uname: String::new(),
            tracecmd_version: String::new(),
            cpus: Vec::new(),
            cpu_count: 0,
            data_compressed: false,
        };
        if version == 6 {
            t.parse_v6(c)?;
        } else {
            t.parse_v7(c)?;
        }
        Ok(t)
    }

    fn headers(&mut self, c: &mut Cur<'_>) -> Result<(), DatError> {
        c.tag(b"header_page\0", "the header_page tag")?;
        let n = c.u64("the header_page size")?;
        let at = c.base + c.pos;
        let text = c.text(n, "header_page")?;
        self.layout =
            PageLayout::parse(text, self.endian, self.page_size as usize).map_err(|e| {
                DatError {
                    offset: at as u64,
                    msg: e.0,
                }
            })?;
        c.tag(b"header_event\0", "the header_event tag")?;
        let n = c.u64("the header_event size")?;
        c.bytes(usize::try_from(n).unwrap_or(usize::MAX), "header_event")?;
        Ok(())
    }

    fn format_list(&mut self, c: &mut Cur<'_>, system: &str) -> Result<(), DatError> {
        let count = c.u32("an event count")?;
        for _ in 0..count {
            let n = c.u64("an event format size")?;
            let at = c.base + c.pos;
            let text = c.text(n, "an event format")?;
            match EventFormat::parse(system, text) {
                Ok(f) => self.formats.push(f),
                Err(e) => self.bad_formats.push(format!("offset {at}: {e}")),
            }
        }
        Ok(())
    }

    fn event_formats(&mut self, c: &mut Cur<'_>) -> Result<(), DatError> {
        let systems = c.u32("the event system count")?;
        for _ in 0..systems {
            let name = c.cstr("an event system name")?.to_string();
            self.format_list(c, &name)?;
        }
        Ok(())
    }

    fn cmdlines(&mut self, c: &mut Cur<'_>) -> Result<(), DatError> {
        let n = c.u64("the saved command lines size")?;
        let text = c.text(n, "the saved command lines")?;
        for line in text.lines() {
            if let Some((pid, comm)) = line.trim().split_once(' ') {
                if let Ok(pid) = pid.parse() {
                    self.cmdlines.push((pid, comm.to_string()));
                }
            }
        }
        Ok(())
    }

    fn parse_v6(&mut self, mut c: Cur<'a>) -> Result<(), DatError> {
        self.headers(&mut c)?;
        self.format_list(&mut c, "ftrace")?;
        self.event_formats(&mut c)?;
        let n = c.u32("the kallsyms size")?;
        c.bytes(n as usize, "kallsyms")?;
        let n = c.u32("the printk formats size")?;
        c.bytes(n as usize, "printk formats")?;
        self.cmdlines(&mut c)?;
        let cpus_at = c.pos;
        let cpus = c.u32("the CPU count")?;
        if cpus > MAX_CPUS {
            return err(
                cpus_at,
                format!("the header claims {cpus} CPUs (at most {MAX_CPUS})"),
            );
        }
        loop {
            let at = c.pos;
            let tag = c.bytes(10, "the data type tag")?;
            match tag {
                b"options  \0" => loop {
                    let id = c.u16("an option id")?;
                    if id == opt::DONE {
                        break;
                    }
                    let size = c.u32("an option size")?;
                    let body = c.bytes(size as usize, "an option")?;
                    self.option(id, body, c.base + c.pos - size as usize)?;
                },
                b"flyrecord\0" => break,
                b"latency  \0" => return err(at, "latency (text) trace.dat files are not supported; record with trace-cmd record"),
                _ => return err(at, "expected `options`, `latency` or `flyrecord`"),
            }
        }
        for cpu in 0..cpus {
            let offset = c.u64("a CPU data offset")?;
            let size = c.u64("a CPU data size")?;
            self.cpus.push(CpuData { cpu, offset, size });
        }
        Ok(())
    }

    /// The section at `at`, which must have id `want`; `wrong` words the error from the id
    /// found there.
    fn section_with_id(
        &self,
        at: usize,
        want: u16,
        wrong: impl FnOnce(u16) -> String,
    ) -> Result<Section, DatError> {
        let s = self.section(at)?;
        if s.id != want {
            return err(at, wrong(s.id));
        }
        Ok(s)
    }

    /// Reads the v7 section header at `at` and its (decompressed) content.
    fn section(&self, at: usize) -> Result<Section, DatError> {
        let mut c = Cur {
            b: self.data,
            pos: at,
            base: 0,
            e: self.endian,
        };
        if at >= self.data.len() {
            return err(at, "section offset is past the end of the file");
        }
        let id = c.u16("a section header")?;
        let flags = c.u16("a section header")?;
        let _desc = c.u32("a section header")?;
        let size = c.u64("a section header")?;
        let body_at = c.pos;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if flags & SEC_COMPRESSED != 0 && id != opt::BUFFER {
            let Some(codec) = self.codec else {
                return err(at, "compressed section in a file without compression");
            };
            let csize = c.u32("a compression header")? as usize;
            let usize_ = c.u32("a compression header")? as usize;
            let src = c.bytes(csize, "compressed section data")?;
            let mut body = Vec::new();
            codec
                .decompress(src, usize_, &mut body)
                .map_err(|m| DatError {
                    offset: body_at as u64,
                    msg: m,
                })?;
            return Ok(Section {
                id,
                body,
                at: body_at,
                compressed: true,
            });
        }
        if id == opt::BUFFER {
            return Ok(Section {
                id,
                body: Vec::new(),
                at: body_at,
                compressed: flags & SEC_COMPRESSED != 0,
            });
        }
        let body = c.bytes(size, "section data")?.to_vec();
        Ok(Section {
            id,
            body,
            at: body_at,
            compressed: false,
        })
    }

    fn sub<'s>(&self, s: &'s Section) -> Cur<'s> {
        Cur {
            b: &s.body,
            pos: 0,
            // Offsets inside decompressed content point at the section.
            base: s.at,
            e: self.endian,
        }
    }

    fn parse_v7(&mut self, mut c: Cur<'a>) -> Result<(), DatError> {
        let cpos = c.pos;
        let name = c.cstr("the compression name")?.to_string();
        let cver = c.cstr("the compression version")?.to_string();
        self.codec = match name.as_str() {
            "none" => None,
            "zlib" => Some(Codec::Zlib),
            "zstd" => Some(Codec::Zstd),
            other => {
                return err(
                    cpos,
                    format!("unknown compression `{other}` (zlib and zstd are known)"),
                )
            }
        };
        self.compression_name = if name == "none" {
            name
        } else {
            format!("{name} {cver}")
        };
        let mut next = c.u64("the options offset")? as usize;
        let mut buffer = None;
        let mut sections: Vec<(u16, usize)> = Vec::new();
        let mut visited = 0;
        while next != 0 {
            visited += 1;
            if visited > 1024 {
                return err(next, "options sections loop");
            }
            let s = self.section_with_id(next, opt::DONE, |id| {
                format!("expected an options section, found section id {id}")
            })?;
            let mut oc = self.sub(&s);
            next = 0;
            loop {
                if oc.pos == oc.b.len() {
                    break;
                }
                let id = oc.u16("an option id")?;
                let size = oc.u32("an option size")? as usize;
                let at = oc.base + oc.pos;
                let body = oc.bytes(size, "an option")?;
                match id {
                    opt::DONE => {
                        if size >= 8 {
                            next = self.endian.u64(body, 0) as usize;
                        }
                        break;
                    }
                    opt::BUFFER => {
                        if let Some(b) = self.buffer_option(body, at)? {
                            buffer.get_or_insert(b);
                        }
                    }
                    opt::HEADER_INFO | opt::FTRACE_EVENTS | opt::EVENT_FORMATS | opt::CMDLINES => {
                        if size < 8 {
                            return err(at, "section option shorter than an offset");
                        }
                        sections.push((id, self.endian.u64(body, 0) as usize));
                    }
                    _ => self.option(id, body, at)?,
                }
            }
        }
        let mut have_headers = false;
        for (id, at) in sections {
            let s = self.section_with_id(at, id, |found| {
                format!("section id {found} where the options said {id}")
            })?;
            let mut sc = self.sub(&s);
            match id {
                opt::HEADER_INFO => {
                    self.headers(&mut sc)?;
                    have_headers = true;
                }
                opt::FTRACE_EVENTS => self.format_list(&mut sc, "ftrace")?,
                opt::EVENT_FORMATS => self.event_formats(&mut sc)?,
                _ => self.cmdlines(&mut sc)?,
            }
            let _ = s.compressed;
        }
        if !have_headers {
            return err(cpos, "no header_page section (HEADER_INFO option missing)");
        }
        let Some((at, cpus, page_size)) = buffer else {
            return err(cpos, "no flyrecord BUFFER of the top instance");
        };
        let s = self.section_with_id(at, opt::BUFFER, |id| {
            format!("expected the flyrecord buffer section, found id {id}")
        })?;
        self.data_compressed = s.compressed;
        if let Some(p) = page_size {
            self.layout.page_size = p as usize;
        }
        self.cpus = cpus;
        Ok(())
    }

    /// A BUFFER option: the top instance's (section offset, CPUs, page size if stored).
    #[allow(clippy::type_complexity)]
    fn buffer_option(
        &self,
        body: &[u8],
        at: usize,
    ) -> Result<Option<(usize, Vec<CpuData>, Option<u32>)>, DatError> {
        let mut c = Cur {
            b: body,
            pos: 0,
            base: at,
            e: self.endian,
        };
        let off = c.u64("the BUFFER option")? as usize;
        let name = c.cstr("the BUFFER instance name")?;
        let _clock = c.cstr("the BUFFER clock")?;
        if !name.is_empty() {
            return Ok(None);
        }
        // trace-cmd 3.2 added the sub-buffer size before the CPU count: tell by the length
        // (each CPU entry is 20 bytes).
        let rest = body.len() - c.pos;
        let page_size = if rest >= 8
            && (rest - 8).is_multiple_of(20)
            && (rest < 4 || !(rest - 4).is_multiple_of(20))
        {
            Some(c.u32("the BUFFER page size")?)
        } else {
            None
        };
        let n_at = c.base + c.pos;
        let n = c.u32("the BUFFER CPU count")?;
        if n > MAX_CPUS {
            return err(
                n_at,
                format!("the BUFFER option claims {n} CPUs (at most {MAX_CPUS})"),
            );
        }
        let mut cpus = Vec::new();
        for _ in 0..n {
            let cpu = c.u32("a BUFFER CPU entry")?;
            let offset = c.u64("a BUFFER CPU entry")?;
            let size = c.u64("a BUFFER CPU entry")?;
            cpus.push(CpuData { cpu, offset, size });
        }
        Ok(Some((off, cpus, page_size)))
    }

    fn option(&mut self, id: u16, body: &[u8], at: usize) -> Result<(), DatError> {
        let text = || String::from_utf8_lossy(crate::trim_text(body)).into_owned();
        match id {
            opt::TRACECLOCK => {
                // "[local] global counter ..." : the selected clock is in brackets.
                let t = text();
                if let Some(sel) = t.split('[').nth(1).and_then(|r| r.split(']').next()) {
                    self.clock = sel.to_string();
                } else if !t.trim().is_empty() {
                    self.clock = t.trim().to_string();
                }
            }
            opt::CPUCOUNT if body.len() != 4 => self.warnings.push(format!(
                "option {id} (CPUCOUNT) at offset {at}: {} bytes, not a 4-byte CPU count: skipped",
                body.len()
            )),
            opt::CPUCOUNT => {
                let n = self.endian.u32(body, 0);
                if n > MAX_CPUS {
                    return err(
                        at,
                        format!("the CPUCOUNT option claims {n} CPUs (at most {MAX_CPUS})"),
                    );
                }
                self.cpu_count = n;
            }
            opt::UNAME => self.uname = text(),
            opt::VERSION => self.tracecmd_version = text(),
            // trace-cmd's other ids (date, cpustat, hook, offset, procmaps, trace id, time
            // shift, guest, tsc2nsec, strings, kallsyms, printk, buffer text, ...): nothing
            // the import reads.
            ..=opt::LAST_KNOWN => {}
            _ => self.warnings.push(format!(
                "option {id} at offset {at} ({} bytes) is not known: skipped",
                body.len()
            )),
        }
        Ok(())
    }

    /// One stream per CPU with data.
    pub fn streams(&self) -> Vec<CpuStream<'a>> {
        self.cpus
            .iter()
            .filter(|c| c.size > 0)
            .map(|c| CpuStream::new(self, c))
            .collect()
    }

    /// Like [`streams`](Self::streams), with `release(offset, len)` called for file ranges
    /// the streams are done with (every [`RELEASE_EVERY`] bytes), so a caller that mapped the
    /// file can drop those pages and keep memory flat however long the trace is.
    pub fn streams_releasing(&self, release: &'a dyn Fn(usize, usize)) -> Vec<CpuStream<'a>> {
        let mut v = self.streams();
        for s in &mut v {
            s.release = Some(release);
        }
        v
    }
}

/// How much of a CPU's data is read before it is handed to the release hook.
pub const RELEASE_EVERY: usize = 8 << 20;

/// What a CPU stream has next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// An event at this time; its bytes are [`CpuStream::event`].
    Event(u64),
    /// Events were lost before the page starting at this time.
    Lost(Missed, u64),
    /// No more data.
    End,
}

/// The pages of one CPU, decoded one event at a time (compressed chunks are inflated one
/// at a time into a buffer that is reused).
pub struct CpuStream<'a> {
    /// The CPU.
    pub cpu: u32,
    file: &'a [u8],
    layout: PageLayout,
    codec: Option<Codec>,
    /// Uncompressed: next page offset in the file. Compressed: next chunk header offset.
    pos: usize,
    end: usize,
    chunks_left: u32,
    chunk_at: usize,
    buf: Vec<u8>,
    buf_pos: usize,
    /// Current page: (start in its buffer, in `buf`?), and its cursor.
    page: Option<(usize, bool, Page)>,
    ev: (usize, usize),
    /// The last time seen (for lost-events notes).
    pub last_ts: u64,
    started: bool,
    release: Option<&'a dyn Fn(usize, usize)>,
    released: usize,
}

impl<'a> CpuStream<'a> {
    fn new(t: &TraceDat<'a>, c: &CpuData) -> CpuStream<'a> {
        let start = usize::try_from(c.offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(c.size).unwrap_or(usize::MAX));
        let codec = if t.data_compressed { t.codec } else { None };
        Self::over(c.cpu, t.data, start, end, t.layout, codec)
    }

    /// A stream over raw pages in memory (tests, `trace_pipe_raw` reads).
    pub fn from_pages(cpu: u32, pages: &'a [u8], layout: PageLayout) -> CpuStream<'a> {
        Self::over(cpu, pages, 0, pages.len(), layout, None)
    }

    fn over(
        cpu: u32,
        file: &'a [u8],
        start: usize,
        end: usize,
        layout: PageLayout,
        codec: Option<Codec>,
    ) -> CpuStream<'a> {
        CpuStream {
            cpu,
            file,
            layout,
            codec,
            pos: start,
            end,
            chunks_left: 0,
            chunk_at: 0,
            buf: Vec::new(),
            buf_pos: 0,
            page: None,
            ev: (0, 0),
            last_ts: 0,
            started: false,
            release: None,
            released: start,
        }
    }

    /// The bytes of the event [`next`](Self::next) returned.
    #[inline]
    pub fn event(&self) -> &[u8] {
        let src = match &self.page {
            Some((_, true, _)) => &self.buf[..],
            _ => self.file,
        };
        &src[self.ev.0..self.ev.1]
    }

    /// File offset of the current page (for errors; the chunk's offset when compressed).
    pub fn page_offset(&self) -> u64 {
        match &self.page {
            Some((s, false, _)) => *s as u64,
            Some((_, true, _)) => self.chunk_at as u64,
            None => self.pos as u64,
        }
    }

    /// Loads the next page; Ok(false) at the end of the data.
    fn next_page(&mut self) -> Result<bool, DatError> {
        let ps = self.layout.page_size;
        match self.codec {
            None => {
                if self.pos >= self.end {
                    return Ok(false);
                }
                if self.pos + ps > self.file.len() {
                    return err(
                        self.pos,
                        format!(
                            "CPU {} data is cut short: the file ends {} bytes into this page (truncated file?)",
                            self.cpu,
                            self.file.len().saturating_sub(self.pos)
                        ),
                    );
                }
                if self.pos + ps > self.end {
                    return err(
                        self.pos,
                        format!("CPU {} data ends inside a page", self.cpu),
                    );
                }
                let at = self.pos;
                if let Some(rel) = self.release {
                    // Everything before this page has been decoded and is not looked at again.
                    if at - self.released >= RELEASE_EVERY {
                        let from = self.released & !4095;
                        rel(from, (at & !4095) - from);
                        self.released = at & !4095;
                    }
                }
                let pg =
                    Page::open(&self.file[at..at + ps], &self.layout).map_err(|e| DatError {
                        offset: (at + e.offset) as u64,
                        msg: format!("CPU {}: {}", self.cpu, e.msg),
                    })?;
                self.page = Some((at, false, pg));
                self.pos += ps;
                Ok(true)
            }
            Some(codec) => {
                if !self.started {
                    self.started = true;
                    let mut c = Cur {
                        b: self.file,
                        pos: self.pos,
                        base: 0,
                        e: self.layout.endian,
                    };
                    self.chunks_left = c.u32("the chunk count")?;
                    self.pos = c.pos;
                }
                if self.buf_pos + ps > self.buf.len() {
                    if self.chunks_left == 0 {
                        return Ok(false);
                    }
                    self.chunks_left -= 1;
                    let mut c = Cur {
                        b: self.file,
                        pos: self.pos,
                        base: 0,
                        e: self.layout.endian,
                    };
                    self.chunk_at = self.pos;
                    let csize = c.u32("a chunk header")? as usize;
                    let usize_ = c.u32("a chunk header")? as usize;
                    let src = c.bytes(csize, "compressed chunk data")?;
                    self.pos = c.pos;
                    if let Some(rel) = self.release {
                        if self.chunk_at - self.released >= RELEASE_EVERY {
                            let from = self.released & !4095;
                            rel(from, (self.chunk_at & !4095) - from);
                            self.released = self.chunk_at & !4095;
                        }
                    }
                    if !usize_.is_multiple_of(ps) {
                        return err(
                            self.chunk_at,
                            format!("chunk of {usize_} bytes is not whole pages"),
                        );
                    }
                    codec
                        .decompress(src, usize_, &mut self.buf)
                        .map_err(|m| DatError {
                            offset: self.chunk_at as u64,
                            msg: format!("CPU {} chunk: {m}", self.cpu),
                        })?;
                    self.buf_pos = 0;
                    if usize_ == 0 {
                        return self.next_page();
                    }
                }
                let at = self.buf_pos;
                let pg =
                    Page::open(&self.buf[at..at + ps], &self.layout).map_err(|e| DatError {
                        offset: self.chunk_at as u64,
                        msg: format!(
                            "CPU {}: page at byte {} of the chunk: {}",
                            self.cpu,
                            at + e.offset,
                            e.msg
                        ),
                    })?;
                self.page = Some((at, true, pg));
                self.buf_pos += ps;
                Ok(true)
            }
        }
    }

    /// Advances to the next event or lost marker.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Next, DatError> {
        loop {
            if let Some((start, in_buf, pg)) = &mut self.page {
                let ps = self.layout.page_size;
                let src = if *in_buf { &self.buf[..] } else { self.file };
                let page = &src[*start..*start + ps];
                match pg.next(page) {
                    Some(Ok((ts, d))) => {
                        let off = d.as_ptr() as usize - page.as_ptr() as usize + *start;
                        self.ev = (off, off + d.len());
                        self.last_ts = ts;
                        return Ok(Next::Event(ts));
                    }
                    Some(Err(e)) => {
                        let at = if *in_buf {
                            self.chunk_at
                        } else {
                            *start + e.offset
                        };
                        return err(at, format!("CPU {}: {}", self.cpu, e.msg));
                    }
                    None => self.page = None,
                }
            }
            if !self.next_page()? {
                return Ok(Next::End);
            }
            if let Some((_, _, pg)) = &self.page {
                if pg.missed != Missed::None {
                    return Ok(Next::Lost(pg.missed, pg.timestamp()));
                }
            }
        }
    }
}
