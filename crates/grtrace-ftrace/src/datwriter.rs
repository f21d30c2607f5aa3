//! A trace-cmd trace.dat writer (v6, and v7 with optional zlib or zstd compression), for
//! tests, the benchmark and fixtures. It writes what `trace-cmd record` writes, so
//! `trace-cmd report` reads its files: the header, header_page / header_event, the event
//! formats, saved command lines, options, and per-CPU ring-buffer pages.
//!
//! CPUs are written one after the other (`begin_cpu`, `push`..., `end_cpu`), so memory stays
//! at one page (one chunk when compressing) whatever the trace size.

use std::io::{self, Seek, SeekFrom, Write};

use grtrace_format::Endian;

use crate::format::{EventFormat, PageLayout, HEADER_EVENT_TEXT};
use crate::page::{Missed, PageBuilder};
use crate::tracedat::{opt, Codec, MAGIC, SEC_COMPRESSED};

/// What to write.
#[derive(Clone, Debug)]
pub struct DatSpec {
    /// 6 or 7.
    pub version: u32,
    /// v7 only.
    pub codec: Option<Codec>,
    /// Ring-buffer page size in bytes.
    pub page_size: usize,
    /// The event formats the file carries.
    pub formats: Vec<EventFormat>,
    /// Format texts verbatim, per format (same order), as the kernel printed them.
    pub format_texts: Vec<String>,
    /// Task names (pid, comm), as the CMDLINES section holds them.
    pub cmdlines: Vec<(u32, String)>,
    /// The trace clock's name (`mono`, `local`, ...).
    pub clock: String,
    /// Pages per compressed chunk.
    pub chunk_pages: usize,
    /// CPUs of the machine.
    pub n_cpus: u32,
    /// v7: leave CPUs that recorded nothing out of the BUFFER option, as trace-cmd 3.1 does
    /// (the CPUCOUNT option still counts them).
    pub omit_idle_cpus: bool,
}

impl DatSpec {
    /// A spec with the given formats (texts regenerated from the fixtures' own text).
    pub fn new(
        version: u32,
        codec: Option<Codec>,
        formats: &[(EventFormat, String)],
        n_cpus: u32,
    ) -> DatSpec {
        DatSpec {
            version,
            codec,
            page_size: 4096,
            formats: formats.iter().map(|(f, _)| f.clone()).collect(),
            format_texts: formats.iter().map(|(_, t)| t.clone()).collect(),
            cmdlines: Vec::new(),
            clock: "local".into(),
            chunk_pages: 64,
            n_cpus,
            omit_idle_cpus: false,
        }
    }
}

/// The fixture formats of `kernel` with their texts, ready for [`DatSpec::new`].
pub fn fixture_formats(kernel: &str) -> Vec<(EventFormat, String)> {
    let fs = crate::fixtures::formats(kernel);
    fs.into_iter()
        .map(|f| {
            let text = crate::fixtures::FORMATS
                .iter()
                .map(|(_, s, t)| (s, t))
                .find(|(s, t)| {
                    **s == f.system && EventFormat::parse(s, t).map(|g| g.id) == Ok(f.id)
                })
                .map(|(_, t)| t.to_string())
                .expect("fixture text");
            (f, text)
        })
        .collect()
}

/// Builds one event record from its format: fixed fields by name, strings appended as
/// `__data_loc` data.
pub struct Record<'f> {
    fmt: &'f EventFormat,
    buf: Vec<u8>,
    fixed: usize,
}

impl<'f> Record<'f> {
    /// An event of format `fmt` by task `pid`, every field zero.
    pub fn new(fmt: &'f EventFormat, pid: u32) -> Record<'f> {
        let fixed = fmt.fixed_size();
        let mut r = Record {
            fmt,
            buf: vec![0; fixed],
            fixed,
        };
        r.set("common_type", fmt.id as u64);
        r.set("common_pid", pid as u64);
        r
    }

    /// Sets an integer field (unknown names are ignored, so one builder serves kernels
    /// whose formats differ).
    pub fn set(&mut self, name: &str, v: u64) -> &mut Self {
        if let Some(f) = self.fmt.field(name) {
            let e = Endian::NATIVE;
            match f.size {
                1 => self.buf[f.offset] = v as u8,
                2 => e.put_u16(&mut self.buf, f.offset, v as u16),
                4 => e.put_u32(&mut self.buf, f.offset, v as u32),
                8 => e.put_u64(&mut self.buf, f.offset, v),
                _ => {}
            }
        }
        self
    }

    /// Sets a string field (`__data_loc` or a fixed char array).
    pub fn set_str(&mut self, name: &str, s: &str) -> &mut Self {
        if let Some(f) = self.fmt.field(name) {
            if f.data_loc {
                let off = self.buf.len();
                self.buf.extend_from_slice(s.as_bytes());
                self.buf.push(0);
                let len = s.len() + 1;
                let loc = ((len as u32) << 16) | off as u32;
                Endian::NATIVE.put_u32(&mut self.buf, f.offset, loc);
            } else {
                let n = s.len().min(f.size);
                self.buf[f.offset..f.offset + n].copy_from_slice(&s.as_bytes()[..n]);
            }
        }
        self
    }

    /// The encoded record.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Size of the fixed part.
    pub fn fixed_len(&self) -> usize {
        self.fixed
    }
}

/// Writes one trace.dat.
pub struct DatWriter<W: Write + Seek> {
    out: W,
    spec: DatSpec,
    layout: PageLayout,
    cpus: Vec<(u32, u64, u64)>,
    cur: Option<CpuState>,
    /// v6: where the CPU offset table is; v7: where to patch the last DONE option.
    patch_at: u64,
}

struct CpuState {
    cpu: u32,
    start: u64,
    page: PageBuilder,
    pending_missed: Missed,
    chunk: Vec<u8>,
    chunk_pages: usize,
    chunks: u32,
}

fn le<W: Write>(w: &mut W, b: &[u8]) -> io::Result<()> {
    w.write_all(b)
}

impl<W: Write + Seek> DatWriter<W> {
    /// Writes everything up to the trace data.
    pub fn new(mut out: W, spec: DatSpec) -> io::Result<DatWriter<W>> {
        let e = Endian::NATIVE;
        let layout = PageLayout {
            endian: e,
            ..PageLayout::native64(spec.page_size)
        };
        out.write_all(&MAGIC)?;
        out.write_all(format!("{}\0", spec.version).as_bytes())?;
        out.write_all(&[if e == Endian::Big { 1 } else { 0 }, 8])?;
        le(&mut out, &(spec.page_size as u32).to_ne_bytes())?;
        let mut w = DatWriter {
            out,
            spec,
            layout,
            cpus: Vec::new(),
            cur: None,
            patch_at: 0,
        };
        if w.spec.version == 6 {
            w.v6_meta()?;
        } else {
            w.v7_meta()?;
        }
        Ok(w)
    }

    fn headers(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let hp = self.layout.header_page_text();
        b.extend_from_slice(b"header_page\0");
        b.extend_from_slice(&(hp.len() as u64).to_ne_bytes());
        b.extend_from_slice(hp.as_bytes());
        b.extend_from_slice(b"header_event\0");
        b.extend_from_slice(&(HEADER_EVENT_TEXT.len() as u64).to_ne_bytes());
        b.extend_from_slice(HEADER_EVENT_TEXT.as_bytes());
        b
    }

    fn event_formats(&self) -> Vec<u8> {
        let mut systems: Vec<&str> = Vec::new();
        for f in &self.spec.formats {
            if f.system != "ftrace" && !systems.contains(&f.system.as_str()) {
                systems.push(&f.system);
            }
        }
        let mut b = Vec::new();
        b.extend_from_slice(&(systems.len() as u32).to_ne_bytes());
        for s in systems {
            b.extend_from_slice(s.as_bytes());
            b.push(0);
            let texts: Vec<&String> = self
                .spec
                .formats
                .iter()
                .zip(&self.spec.format_texts)
                .filter(|(f, _)| f.system == s)
                .map(|(_, t)| t)
                .collect();
            b.extend_from_slice(&(texts.len() as u32).to_ne_bytes());
            for t in texts {
                b.extend_from_slice(&(t.len() as u64).to_ne_bytes());
                b.extend_from_slice(t.as_bytes());
            }
        }
        b
    }

    fn cmdlines(&self) -> Vec<u8> {
        let mut text = String::new();
        for (pid, comm) in &self.spec.cmdlines {
            text.push_str(&format!("{pid} {comm}\n"));
        }
        let mut b = (text.len() as u64).to_ne_bytes().to_vec();
        b.extend_from_slice(text.as_bytes());
        b
    }

    fn v6_meta(&mut self) -> io::Result<()> {
        let mut b = self.headers();
        b.extend_from_slice(&0u32.to_ne_bytes()); // no ftrace formats
        b.extend_from_slice(&self.event_formats());
        b.extend_from_slice(&0u32.to_ne_bytes()); // kallsyms
        b.extend_from_slice(&0u32.to_ne_bytes()); // printk formats
        b.extend_from_slice(&self.cmdlines());
        b.extend_from_slice(&self.spec.n_cpus.to_ne_bytes());
        b.extend_from_slice(b"options  \0");
        let clock = format!("[{}] global\0", self.spec.clock);
        b.extend_from_slice(&opt::TRACECLOCK.to_ne_bytes());
        b.extend_from_slice(&(clock.len() as u32).to_ne_bytes());
        b.extend_from_slice(clock.as_bytes());
        b.extend_from_slice(&opt::DONE.to_ne_bytes());
        b.extend_from_slice(b"flyrecord\0");
        self.out.write_all(&b)?;
        self.patch_at = self.out.stream_position()?;
        // CPU table, filled in by finish().
        self.out
            .write_all(&vec![0u8; 16 * self.spec.n_cpus as usize])?;
        Ok(())
    }

    fn compress(&self, data: &[u8]) -> io::Result<Vec<u8>> {
        Ok(match self.spec.codec {
            Some(Codec::Zlib) => {
                let mut z =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                z.write_all(data)?;
                z.finish()?
            }
            Some(Codec::Zstd) => zstd::bulk::compress(data, 1)?,
            None => data.to_vec(),
        })
    }

    /// Writes a v7 section; returns its offset.
    fn section(&mut self, id: u16, body: &[u8], compress: bool) -> io::Result<u64> {
        let at = self.out.stream_position()?;
        let compress = compress && self.spec.codec.is_some();
        let content = if compress {
            let c = self.compress(body)?;
            let mut v = (c.len() as u32).to_ne_bytes().to_vec();
            v.extend_from_slice(&(body.len() as u32).to_ne_bytes());
            v.extend_from_slice(&c);
            v
        } else {
            body.to_vec()
        };
        self.out.write_all(&id.to_ne_bytes())?;
        self.out
            .write_all(&(if compress { SEC_COMPRESSED } else { 0 }).to_ne_bytes())?;
        self.out.write_all(&0u32.to_ne_bytes())?;
        self.out.write_all(&(content.len() as u64).to_ne_bytes())?;
        self.out.write_all(&content)?;
        Ok(at)
    }

    fn option(b: &mut Vec<u8>, id: u16, data: &[u8]) {
        b.extend_from_slice(&id.to_ne_bytes());
        b.extend_from_slice(&(data.len() as u32).to_ne_bytes());
        b.extend_from_slice(data);
    }

    fn v7_meta(&mut self) -> io::Result<()> {
        let (name, ver) = match self.spec.codec {
            None => ("none", ""),
            Some(Codec::Zlib) => ("zlib", "1.2.13"),
            Some(Codec::Zstd) => ("zstd", "1.5.4"),
        };
        self.out.write_all(format!("{name}\0{ver}\0").as_bytes())?;
        let first_opts_ptr = self.out.stream_position()?;
        self.out.write_all(&0u64.to_ne_bytes())?;
        let headers = self.headers();
        let h = self.section(opt::HEADER_INFO, &headers, true)?;
        let f = self.section(opt::FTRACE_EVENTS, &0u32.to_ne_bytes(), true)?;
        let ev = self.event_formats();
        let e = self.section(opt::EVENT_FORMATS, &ev, true)?;
        let cl = self.cmdlines();
        let c = self.section(opt::CMDLINES, &cl, true)?;
        let mut o = Vec::new();
        Self::option(&mut o, opt::HEADER_INFO, &h.to_ne_bytes());
        Self::option(&mut o, opt::FTRACE_EVENTS, &f.to_ne_bytes());
        Self::option(&mut o, opt::EVENT_FORMATS, &e.to_ne_bytes());
        Self::option(&mut o, opt::CMDLINES, &c.to_ne_bytes());
        Self::option(&mut o, opt::CPUCOUNT, &self.spec.n_cpus.to_ne_bytes());
        let clock = format!("[{}] global\0", self.spec.clock);
        Self::option(&mut o, opt::TRACECLOCK, clock.as_bytes());
        Self::option(&mut o, opt::DONE, &0u64.to_ne_bytes());
        let opts_at = self.section(opt::DONE, &o, false)?;
        // The DONE option's next-section offset is the last 8 bytes written.
        self.patch_at = self.out.stream_position()? - 8;
        let end = self.out.stream_position()?;
        self.out.seek(SeekFrom::Start(first_opts_ptr))?;
        self.out.write_all(&opts_at.to_ne_bytes())?;
        self.out.seek(SeekFrom::Start(end))?;
        // The flyrecord section header; its data follows page aligned per CPU.
        self.out.write_all(&opt::BUFFER.to_ne_bytes())?;
        let flags = if self.spec.codec.is_some() {
            SEC_COMPRESSED
        } else {
            0
        };
        self.out.write_all(&flags.to_ne_bytes())?;
        self.out.write_all(&0u32.to_ne_bytes())?;
        self.out.write_all(&0u64.to_ne_bytes())?;
        Ok(())
    }

    fn buffer_section_at(&self) -> u64 {
        self.patch_at + 8
    }

    fn align_page(&mut self) -> io::Result<u64> {
        let at = self.out.stream_position()?;
        let ps = self.spec.page_size as u64;
        let aligned = at.div_ceil(ps) * ps;
        if aligned > at {
            self.out.write_all(&vec![0u8; (aligned - at) as usize])?;
        }
        Ok(aligned)
    }

    /// Starts CPU `cpu`'s data.
    pub fn begin_cpu(&mut self, cpu: u32) -> io::Result<()> {
        assert!(self.cur.is_none(), "end_cpu first");
        let start = self.align_page()?;
        if self.spec.version == 7 && self.spec.codec.is_some() {
            self.out.write_all(&0u32.to_ne_bytes())?; // chunk count, patched at end_cpu
        }
        self.cur = Some(CpuState {
            cpu,
            start,
            page: PageBuilder::new(self.layout),
            pending_missed: Missed::None,
            chunk: Vec::new(),
            chunk_pages: 0,
            chunks: 0,
        });
        Ok(())
    }

    /// Marks events as lost before the next page (`Missed::Count(n)` or `Unknown`).
    pub fn lost(&mut self, missed: Missed) -> io::Result<()> {
        self.flush_page()?;
        if let Some(c) = &mut self.cur {
            c.pending_missed = missed;
        }
        Ok(())
    }

    /// Appends an event record at time `ts` (time order within the CPU).
    pub fn push(&mut self, ts: u64, record: &[u8]) -> io::Result<()> {
        let ok = self
            .cur
            .as_mut()
            .expect("begin_cpu first")
            .page
            .push(ts, record);
        if !ok {
            self.flush_page()?;
            let c = self.cur.as_mut().expect("begin_cpu first");
            assert!(c.page.push(ts, record), "record larger than a page");
        }
        Ok(())
    }

    fn flush_page(&mut self) -> io::Result<()> {
        let chunk_pages = self.spec.chunk_pages;
        let Some(c) = &mut self.cur else {
            return Ok(());
        };
        if c.page.is_empty() {
            return Ok(());
        }
        let missed = std::mem::replace(&mut c.pending_missed, Missed::None);
        let page = c.page.finish(missed);
        if self.spec.version == 7 && self.spec.codec.is_some() {
            c.chunk.extend_from_slice(&page);
            c.chunk_pages += 1;
            if c.chunk_pages >= chunk_pages {
                self.flush_chunk()?;
            }
        } else {
            self.out.write_all(&page)?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> io::Result<()> {
        let data = match &mut self.cur {
            Some(c) if !c.chunk.is_empty() => {
                c.chunk_pages = 0;
                c.chunks += 1;
                std::mem::take(&mut c.chunk)
            }
            _ => return Ok(()),
        };
        let z = self.compress(&data)?;
        self.out.write_all(&(z.len() as u32).to_ne_bytes())?;
        self.out.write_all(&(data.len() as u32).to_ne_bytes())?;
        self.out.write_all(&z)?;
        if let Some(c) = &mut self.cur {
            c.chunk = data;
            c.chunk.clear();
        }
        Ok(())
    }

    /// Ends the current CPU's data.
    pub fn end_cpu(&mut self) -> io::Result<()> {
        self.flush_page()?;
        self.flush_chunk()?;
        let c = self.cur.take().expect("begin_cpu first");
        let end = self.out.stream_position()?;
        if self.spec.version == 7 && self.spec.codec.is_some() {
            self.out.seek(SeekFrom::Start(c.start))?;
            self.out.write_all(&c.chunks.to_ne_bytes())?;
            self.out.seek(SeekFrom::Start(end))?;
        }
        self.cpus.push((c.cpu, c.start, end - c.start));
        Ok(())
    }

    /// Writes the CPU table (v6) or the BUFFER option (v7) and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        assert!(self.cur.is_none(), "end_cpu first");
        let mut all = Vec::new();
        for cpu in 0..self.spec.n_cpus {
            let (o, s) = self
                .cpus
                .iter()
                .find(|c| c.0 == cpu)
                .map(|c| (c.1, c.2))
                .unwrap_or((0, 0));
            all.push((cpu, o, s));
        }
        if self.spec.version == 6 {
            let end = self.out.stream_position()?;
            self.out.seek(SeekFrom::Start(self.patch_at))?;
            for (_, o, s) in &all {
                self.out.write_all(&o.to_ne_bytes())?;
                self.out.write_all(&s.to_ne_bytes())?;
            }
            self.out.seek(SeekFrom::Start(end))?;
        } else {
            if self.spec.omit_idle_cpus {
                all.retain(|c| c.2 > 0);
            }
            let buf_at = self.buffer_section_at();
            let end = self.out.stream_position()?;
            // The buffer section's size: everything from its header to here.
            self.out.seek(SeekFrom::Start(buf_at + 8))?;
            self.out.write_all(&(end - (buf_at + 16)).to_ne_bytes())?;
            self.out.seek(SeekFrom::Start(end))?;
            let mut b = buf_at.to_ne_bytes().to_vec();
            b.push(0); // top instance
            b.extend_from_slice(self.spec.clock.as_bytes());
            b.push(0);
            // trace-cmd >= 3.1 stores the sub-buffer (page) size here.
            b.extend_from_slice(&(self.spec.page_size as u32).to_ne_bytes());
            b.extend_from_slice(&(all.len() as u32).to_ne_bytes());
            for (cpu, o, s) in &all {
                b.extend_from_slice(&cpu.to_ne_bytes());
                b.extend_from_slice(&o.to_ne_bytes());
                b.extend_from_slice(&s.to_ne_bytes());
            }
            let mut o = Vec::new();
            Self::option(&mut o, opt::BUFFER, &b);
            Self::option(&mut o, opt::DONE, &0u64.to_ne_bytes());
            let at = self.section(opt::DONE, &o, false)?;
            let end = self.out.stream_position()?;
            self.out.seek(SeekFrom::Start(self.patch_at))?;
            self.out.write_all(&at.to_ne_bytes())?;
            self.out.seek(SeekFrom::Start(end))?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}
