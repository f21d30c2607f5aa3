//! Output of imported records as grtrace streams: `BASE.grtrace.<cpu>` per CPU, or one
//! merged stream (`-o -`). Every stream's header has `IMPORTED` set and its first record is
//! a `NOTE_MSG` naming the source; `NOTE_PROCESS` comes before a task's first event when the
//! source knows its name; each stream ends with `NOTE_STREAM_INFO`.

use std::collections::HashMap;
use std::fs::File;
use std::hash::BuildHasherDefault;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use grtrace_format::abi::{self, INFO_STOPPED_CLEANLY};
use grtrace_format::{encode_into, encoded_size, Body, Stamp, StreamHeader, StreamInfo};

use crate::map::{Fx, Sink};

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
        };
        o.buf.extend_from_slice(&h.encode());
        o.bytes = o.buf.len() as u64;
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
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
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
            records: 0,
        };
        match target {
            Target::Files(base) => st.base = Some(base),
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
        let mut h = self.header.clone();
        h.cpu = cpu;
        let o = Out::new(path.display().to_string(), Box::new(f), &h, &self.note, cpu)?;
        if self.outs.len() <= i {
            self.outs.resize_with(i + 1, || None);
        }
        self.outs[i] = Some(o);
        Ok(self.outs[i].as_mut().expect("just created"))
    }

    /// Ends every stream with NOTE_STREAM_INFO (`lost` = events the kernel reported lost)
    /// and flushes; returns (path or "-", records, bytes) per stream.
    pub fn finish(mut self, lost: u64) -> io::Result<Vec<(String, u64, u64)>> {
        let end = self.last_ns;
        let e = self.header.endian;
        let mut res = Vec::new();
        for (cpu, slot) in self.outs.iter_mut().enumerate() {
            if let Some(mut o) = slot.take() {
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
                o.flush()?;
                o.w.flush()?;
                res.push((o.path, o.records, o.bytes));
            }
        }
        Ok(res)
    }
}

impl Sink for Streams {
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
