//! Output of imported records as grtrace streams: `BASE.grtrace.<cpu>` per CPU, or one
//! merged stream (`-o -`). Every stream's header has `IMPORTED` set and its first record is
//! a `NOTE_MSG` naming the source, stamped at the capture's start; `NOTE_PROCESS` comes
//! before a task's first event when the source knows its name; each stream ends with
//! `NOTE_STREAM_INFO`, stamped at the capture's end. Readers start their clock at the first
//! record and take the span up to the last, as for a recording of the grtrace series, so
//! the two notes carry the capture's span (IMPORT.md §1).

use std::collections::HashMap;
use std::fs::File;
use std::hash::BuildHasherDefault;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use grtrace_format::abi::{self, stream_off, INFO_STOPPED_CLEANLY};
use grtrace_format::{encode_into, encoded_size, Body, Stamp, StreamHeader, StreamInfo};

use crate::map::{Fx, Mapper, Sink};

/// Linux clock id of an ftrace trace clock, or an importer-private id (FORMAT.md §2.1) for
/// the sched_clock-based ones; None for clocks that do not count nanoseconds.
pub fn clock_id(name: &str) -> Option<u32> {
    Some(match name {
        "mono" => 1,
        "mono_raw" => 4,
        "boot" => 7,
        "tai" => 11,
        "local" => CLOCK_FTRACE_LOCAL,
        "global" => CLOCK_FTRACE_GLOBAL,
        "perf" => CLOCK_FTRACE_PERF,
        _ => return None,
    })
}

/// Stream `clock_id` of ftrace's `local` clock (per-CPU sched_clock, ns).
pub const CLOCK_FTRACE_LOCAL: u32 = 0x1000_0001;
/// ftrace's `global` clock (sched_clock made monotonic across CPUs, ns).
pub const CLOCK_FTRACE_GLOBAL: u32 = 0x1000_0002;
/// ftrace's `perf` clock (ns).
pub const CLOCK_FTRACE_PERF: u32 = 0x1000_0003;

/// Where the output goes.
pub enum Target {
    /// `BASE.grtrace.<cpu>` files.
    Files(PathBuf),
    /// One merged stream.
    Merged(Box<dyn Write>),
}

/// Bytes gathered before a `write()`.
const FLUSH_AT: usize = 1 << 20;

/// One output stream: records are encoded straight into `buf` (no per-record copy through
/// a writer) and written out a megabyte at a time.
struct Out {
    path: String,
    w: Box<dyn Write>,
    buf: Vec<u8>,
    records: u64,
    bytes: u64,
    /// Where in `buf` the source note's `time_ns` is, until the first write: the note is
    /// stamped there with the capture's start (known by then, see [`Streams::set_start`]),
    /// or the stream's first record when that is earlier.
    note_time: Option<usize>,
    /// The capture's start as known so far.
    start: Option<u64>,
    /// Time of the stream's first record after the note.
    first: Option<u64>,
    /// Whether the header is still in `buf` (nothing written yet).
    header_in_buf: bool,
    /// The output file, to rewrite the header's `driver` once the import is over.
    file: Option<File>,
}

impl Out {
    fn new(
        path: String,
        w: Box<dyn Write>,
        h: &StreamHeader,
        note: &str,
        cpu: u32,
    ) -> io::Result<Out> {
        let mut o = Out {
            path,
            w,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            records: 0,
            bytes: 0,
            note_time: None,
            start: None,
            first: None,
            header_in_buf: true,
            file: None,
        };
        o.buf.extend_from_slice(&h.encode());
        o.bytes = o.buf.len() as u64;
        // Record header: the time is at byte 16.
        o.note_time = Some(o.buf.len() + 16);
        o.put(
            h.endian,
            &Stamp {
                cpu,
                pid: 0,
                time_ns: 0,
                seq: 0,
            },
            &Body::Msg {
                text: note.as_bytes(),
            },
        )?;
        Ok(o)
    }

    #[inline]
    fn put(&mut self, e: grtrace_format::Endian, stamp: &Stamp, body: &Body<'_>) -> io::Result<()> {
        let n = encoded_size(body);
        let at = self.buf.len();
        self.buf.resize(at + n, 0);
        encode_into(stamp, body, e, &mut self.buf[at..]);
        self.records += 1;
        self.bytes += n as u64;
        if self.records > 1 && self.first.is_none() {
            self.first = Some(stamp.time_ns);
        }
        if self.buf.len() >= FLUSH_AT {
            self.flush(e)?;
        }
        Ok(())
    }

    /// Sets the header's `driver` field: in the buffer while it is there, else in the file
    /// (after everything was written); a merged stream on stdout keeps what it said.
    fn set_driver(&mut self, driver: &str) -> io::Result<()> {
        let mut field = [0u8; stream_off::DRIVER_LEN];
        let n = driver.len().min(field.len());
        field[..n].copy_from_slice(&driver.as_bytes()[..n]);
        if self.header_in_buf {
            self.buf[stream_off::DRIVER..stream_off::DRIVER + field.len()].copy_from_slice(&field);
        } else if let Some(f) = &mut self.file {
            f.seek(SeekFrom::Start(stream_off::DRIVER as u64))?;
            f.write_all(&field)?;
        }
        Ok(())
    }

    fn flush(&mut self, e: grtrace_format::Endian) -> io::Result<()> {
        if let Some(at) = self.note_time.take() {
            // Never after the stream's first record: the stream stays in time order.
            let t = match (self.start, self.first) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).unwrap_or(0),
            };
            e.put_u64(&mut self.buf, at, t);
        }
        self.header_in_buf = false;
        let res = self.w.write_all(&self.buf);
        self.buf.clear();
        res.map_err(|e| self.error(e))
    }

    /// A write error naming this stream's file (`-`: standard output), of the error's own
    /// kind (a closed pipe stays recognisable).
    fn error(&self, e: io::Error) -> io::Error {
        let name = if self.path == "-" {
            "standard output"
        } else {
            &self.path
        };
        io::Error::new(e.kind(), format!("{name}: {e}"))
    }
}

/// Finds the name of a task the first time one of its records is written.
pub type CommLookup = Box<dyn FnMut(u32) -> Option<String>>;

/// The set of output streams; implements [`Sink`].
pub struct Streams {
    base: Option<PathBuf>,
    /// Per CPU (files), or one at index 0 (merged).
    outs: Vec<Option<Out>>,
    merged: bool,
    header: StreamHeader,
    note: String,
    comms: HashMap<u32, String, BuildHasherDefault<Fx>>,
    /// Asked for a task name the source did not give (live recording: /proc, tracefs).
    lookup: Option<CommLookup>,
    /// Bit per pid: NOTE_PROCESS written.
    announced: Vec<u64>,
    last_ns: u64,
    /// The capture's start and end when the source knows them (see [`Streams::set_start`]).
    start: Option<u64>,
    end: Option<u64>,
    /// The driver names to leave in the headers (see [`Streams::set_driver`]).
    driver: Option<String>,
    /// A closing source note (see [`Streams::set_trailer`]).
    trailer: Option<String>,
    /// The files created, removed again by [`discard`](Self::discard).
    created: Vec<PathBuf>,
    /// Records written so far.
    pub records: u64,
}

impl Streams {
    /// `driver` and `clock` go into every header; `note` is the source description.
    pub fn new(target: Target, driver: &str, clock: u32, note: String) -> io::Result<Streams> {
        let mut header = StreamHeader::new(0, 0, driver);
        header.clock_id = clock;
        header.flags = abi::STREAM_IMPORTED;
        let mut st = Streams {
            base: None,
            outs: Vec::new(),
            merged: false,
            header,
            note,
            comms: HashMap::default(),
            lookup: None,
            announced: Vec::new(),
            last_ns: 0,
            start: None,
            end: None,
            driver: None,
            trailer: None,
            created: Vec::new(),
            records: 0,
        };
        match target {
            Target::Files(base) => {
                // A file is made for every CPU with records (and, from trace.dat, for every
                // CPU of the machine): a CPU without one had none, which readers need not
                // warn about.
                st.header.flags |= abi::STREAM_CPUS_WHOLE;
                st.base = Some(base)
            }
            Target::Merged(w) => {
                let mut h = st.header.clone();
                h.cpu = abi::CPU_MERGED;
                h.flags |= abi::STREAM_MERGED;
                st.merged = true;
                st.outs
                    .push(Some(Out::new("-".into(), w, &h, &st.note, 0)?));
            }
        }
        Ok(st)
    }

    /// The capture began at `t` (its first event, or the instant tracing was turned on):
    /// every stream's source note is stamped there, so that readers count the capture's
    /// time from its start, not from 0 (IMPORT.md §1). To be called before the first
    /// record; an earlier time wins.
    pub fn set_start(&mut self, t: u64) {
        let t = self.start.map_or(t, |s| s.min(t));
        self.start = Some(t);
        for o in self.outs.iter_mut().flatten() {
            o.start = Some(t);
        }
    }

    /// The capture ended at `t` (its last event, or the instant tracing was turned off):
    /// the streams' `NOTE_STREAM_INFO` is stamped there if that is after the last record.
    pub fn set_end(&mut self, t: u64) {
        self.end = Some(self.end.map_or(t, |e| e.max(t)));
    }

    /// What the capture turned out to contain (the drivers of the events it had, see
    /// [`Mapper::drivers_seen`](crate::map::Mapper::drivers_seen)): written into every
    /// stream's header by [`finish`](Self::finish), where the header written at the start
    /// named what the source's formats promised. A merged stream already written to a pipe
    /// keeps that.
    pub fn set_driver(&mut self, driver: &str) {
        self.driver = Some(driver.to_string());
    }

    /// What the import learnt only by its end, as a second `grtrace-import:` note before
    /// every stream's NOTE_STREAM_INFO (IMPORT.md §1: `late_ends=N`).
    pub fn set_trailer(&mut self, text: String) {
        self.trailer = Some(text);
    }

    /// What the capture turned out to be, known only at its end (IMPORT.md §1): its last
    /// event (the streams' end), the drivers it really had events of (the headers'
    /// `driver`) and the closing note. One place for the importer and the recorder.
    pub fn end_capture(&mut self, m: &Mapper) {
        if let Some((_, last)) = m.stats.span() {
            self.set_end(last);
        }
        self.set_driver(&m.drivers_seen());
        if let Some(note) = crate::import::closing_note(m) {
            self.set_trailer(note);
        }
    }

    /// Task names known from the source (trace.dat saved command lines, text comm fields).
    pub fn set_comm(&mut self, pid: u32, comm: &str) {
        self.comms.insert(pid, comm.to_string());
    }

    /// Where names come from for tasks [`set_comm`](Self::set_comm) did not name: asked
    /// once per task, before its first record.
    pub fn set_comm_lookup(&mut self, f: CommLookup) {
        self.lookup = Some(f);
    }

    /// File name of CPU `cpu`'s stream under `base`.
    pub fn file_name(base: &Path, cpu: u32) -> PathBuf {
        let mut s = base.as_os_str().to_os_string();
        s.push(format!(".grtrace.{cpu}"));
        PathBuf::from(s)
    }

    /// Creates CPU `cpu`'s stream now (so a CPU without events still has its file).
    pub fn open_cpu(&mut self, cpu: u32) -> io::Result<()> {
        self.out(cpu).map(|_| ())
    }

    #[inline]
    fn out(&mut self, cpu: u32) -> io::Result<&mut Out> {
        let i = if self.merged { 0 } else { cpu as usize };
        if self.outs.get(i).is_some_and(|o| o.is_some()) {
            return Ok(self.outs[i].as_mut().expect("checked"));
        }
        self.create(i, cpu)
    }

    #[cold]
    fn create(&mut self, i: usize, cpu: u32) -> io::Result<&mut Out> {
        let base = self.base.as_ref().expect("files mode");
        let path = Self::file_name(base, cpu);
        let f = File::create(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", path.display())))?;
        self.created.push(path.clone());
        let mut h = self.header.clone();
        h.cpu = cpu;
        let patch = f.try_clone().ok();
        let mut o = Out::new(path.display().to_string(), Box::new(f), &h, &self.note, cpu)?;
        o.start = self.start;
        o.file = patch;
        if self.outs.len() <= i {
            self.outs.resize_with(i + 1, || None);
        }
        self.outs[i] = Some(o);
        Ok(self.outs[i].as_mut().expect("just created"))
    }

    /// Gives the output up after a failed write: removes every file created (a CPU's file
    /// cut short, or one never written, would be read as part of a whole capture); returns
    /// how many were removed. A merged stream on standard output cannot be taken back.
    pub fn discard(mut self) -> usize {
        self.outs.clear();
        self.created
            .iter()
            .filter(|p| std::fs::remove_file(p).is_ok())
            .count()
    }

    /// [`discard`](Self::discard)s after the failed write `e`, saying so in the error.
    pub fn discard_after(self, e: io::Error) -> io::Error {
        match self.discard() {
            0 => e,
            n => io::Error::new(
                e.kind(),
                format!("{e} (the {n} file(s) of this output were removed)"),
            ),
        }
    }

    /// Ends every stream with NOTE_STREAM_INFO (`lost` = events the kernel reported lost)
    /// and flushes; returns (path or "-", records, bytes) per stream. On a failed write,
    /// every file is removed ([`discard`](Self::discard)) and the error names the file.
    pub fn finish(mut self, lost: u64) -> io::Result<Vec<(String, u64, u64)>> {
        match self.finish_streams(lost) {
            Ok(res) => Ok(res),
            Err(e) => Err(self.discard_after(e)),
        }
    }

    fn finish_streams(&mut self, lost: u64) -> io::Result<Vec<(String, u64, u64)>> {
        let end = self.end.map_or(self.last_ns, |e| e.max(self.last_ns));
        let e = self.header.endian;
        let mut res = Vec::new();
        for (cpu, slot) in self.outs.iter_mut().enumerate() {
            if let Some(mut o) = slot.take() {
                let cpu_id = if self.merged { 0 } else { cpu as u32 };
                if let Some(text) = &self.trailer {
                    let stamp = Stamp {
                        cpu: cpu_id,
                        pid: 0,
                        time_ns: end,
                        seq: 0,
                    };
                    o.put(
                        e,
                        &stamp,
                        &Body::Msg {
                            text: text.as_bytes(),
                        },
                    )?;
                }
                let info = StreamInfo {
                    kernel_dropped: lost,
                    records: o.records,
                    bytes: o.bytes,
                    flags: INFO_STOPPED_CLEANLY,
                };
                let cpu = if self.merged { 0 } else { cpu as u32 };
                o.put(
                    e,
                    &Stamp {
                        cpu,
                        pid: 0,
                        time_ns: end,
                        seq: 0,
                    },
                    &Body::StreamInfo(info),
                )?;
                // In the buffer if the header is still there, else in the file once all is
                // written.
                let in_buf = o.header_in_buf;
                if let (Some(d), true) = (&self.driver, in_buf) {
                    o.set_driver(d)?;
                }
                o.flush(e)?;
                o.w.flush().map_err(|err| o.error(err))?;
                if let (Some(d), false) = (&self.driver, in_buf) {
                    o.set_driver(d).map_err(|err| o.error(err))?;
                }
                res.push((o.path, o.records, o.bytes));
            }
        }
        Ok(res)
    }
}

impl Sink for Streams {
    fn capture_start(&mut self, t: u64) {
        self.set_start(t);
    }

    fn task_name(&mut self, pid: u32, comm: &str) {
        self.comms.entry(pid).or_insert_with(|| comm.to_string());
    }

    #[inline]
    fn record(&mut self, cpu: u32, pid: u32, time_ns: u64, body: &Body<'_>) -> io::Result<()> {
        self.last_ns = self.last_ns.max(time_ns);
        self.records += 1;
        let stamp = Stamp {
            cpu,
            pid,
            time_ns,
            seq: 0,
        };
        let e = self.header.endian;
        if pid != 0 && (!self.comms.is_empty() || self.lookup.is_some()) {
            let (w, b) = (pid as usize / 64, 1u64 << (pid % 64));
            if self.announced.len() <= w {
                self.announced.resize(w + 1, 0);
            }
            if self.announced[w] & b == 0 {
                self.announced[w] |= b;
                let c = match self.comms.get(&pid) {
                    Some(c) => Some(c.clone()),
                    None => self.lookup.as_mut().and_then(|f| f(pid)),
                };
                if let Some(c) = c {
                    self.out(cpu)?
                        .put(e, &stamp, &Body::Process { comm: c.as_bytes() })?;
                }
            }
        }
        self.out(cpu)?.put(e, &stamp, body)
    }
}
