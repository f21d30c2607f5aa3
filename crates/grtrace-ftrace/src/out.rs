//! Output of imported records as grtrace streams: `BASE.grtrace.<cpu>` per CPU, or one
//! merged stream (`-o -`). Every stream's header has `IMPORTED` set and its first record is
//! a `NOTE_MSG` naming the source; `NOTE_PROCESS` comes before a task's first event when the
//! source knows its name; each stream ends with `NOTE_STREAM_INFO`.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::BuildHasherDefault;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use grtrace_format::abi::{self, INFO_STOPPED_CLEANLY};
use grtrace_format::{Body, Stamp, StreamHeader, StreamInfo, StreamWriter};

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

enum Outs {
    Files(
        PathBuf,
        Vec<Option<(PathBuf, StreamWriter<BufWriter<File>>)>>,
    ),
    Merged(Option<StreamWriter<Box<dyn Write>>>),
}

/// The set of output streams; implements [`Sink`].
pub struct Streams {
    outs: Outs,
    header: StreamHeader,
    note: String,
    comms: HashMap<u32, String, BuildHasherDefault<Fx>>,
    announced: HashSet<u32, BuildHasherDefault<Fx>>,
    last_ns: u64,
    pub records: u64,
}

impl Streams {
    /// `driver` and `clock` go into every header; `note` is the source description.
    pub fn new(target: Target, driver: &str, clock: u32, note: String) -> io::Result<Streams> {
        let mut header = StreamHeader::new(0, 0, driver);
        header.clock_id = clock;
        header.flags = abi::STREAM_IMPORTED;
        let outs = match target {
            Target::Files(base) => Outs::Files(base, Vec::new()),
            Target::Merged(w) => {
                let mut h = header.clone();
                h.cpu = abi::CPU_MERGED;
                h.flags |= abi::STREAM_MERGED;
                let mut s = StreamWriter::new(w, &h)?;
                write_note(&mut s, 0, &note)?;
                Outs::Merged(Some(s))
            }
        };
        Ok(Streams {
            outs,
            header,
            note,
            comms: HashMap::default(),
            announced: HashSet::default(),
            last_ns: 0,
            records: 0,
        })
    }

    /// Task names known from the source (trace.dat saved command lines, text comm fields).
    pub fn set_comm(&mut self, pid: u32, comm: &str) {
        self.comms.insert(pid, comm.to_string());
    }

    /// File name of CPU `cpu`'s stream under `base`.
    pub fn file_name(base: &Path, cpu: u32) -> PathBuf {
        let mut s = base.as_os_str().to_os_string();
        s.push(format!(".grtrace.{cpu}"));
        PathBuf::from(s)
    }

    /// Creates CPU `cpu`'s stream now (so a CPU without events still has its file).
    pub fn open_cpu(&mut self, cpu: u32) -> io::Result<()> {
        self.writer(cpu).map(|_| ())
    }

    fn writer(&mut self, cpu: u32) -> io::Result<&mut dyn StreamOut> {
        match &mut self.outs {
            Outs::Merged(s) => Ok(s.as_mut().expect("merged stream open until finish")),
            Outs::Files(base, v) => {
                let i = cpu as usize;
                if v.len() <= i {
                    v.resize_with(i + 1, || None);
                }
                if v[i].is_none() {
                    let path = Self::file_name(base, cpu);
                    let f = File::create(&path).map_err(|e| {
                        io::Error::new(e.kind(), format!("creating {}: {e}", path.display()))
                    })?;
                    let mut h = self.header.clone();
                    h.cpu = cpu;
                    let mut s = StreamWriter::new(BufWriter::with_capacity(1 << 20, f), &h)?;
                    write_note(&mut s, cpu, &self.note)?;
                    v[i] = Some((path, s));
                }
                Ok(&mut v[i].as_mut().expect("just created").1)
            }
        }
    }

    /// Ends every stream with NOTE_STREAM_INFO (`lost` = events the kernel reported lost)
    /// and flushes; returns (path or "-", records, bytes) per stream.
    pub fn finish(mut self, lost: u64) -> io::Result<Vec<(String, u64, u64)>> {
        let end = self.last_ns;
        let mut out = Vec::new();
        let info = |records: u64, bytes: u64| StreamInfo {
            kernel_dropped: lost,
            records,
            bytes,
            flags: INFO_STOPPED_CLEANLY,
        };
        match &mut self.outs {
            Outs::Merged(s) => {
                let mut s = s.take().expect("finish once");
                let i = info(s.records(), s.bytes());
                s.write(
                    &Stamp {
                        cpu: 0,
                        pid: 0,
                        time_ns: end,
                        seq: 0,
                    },
                    &Body::StreamInfo(i),
                )?;
                out.push(("-".to_string(), s.records(), s.bytes()));
                s.into_inner().flush()?;
            }
            Outs::Files(_, v) => {
                for (cpu, slot) in v.iter_mut().enumerate() {
                    if let Some((path, mut s)) = slot.take() {
                        let i = info(s.records(), s.bytes());
                        s.write(
                            &Stamp {
                                cpu: cpu as u32,
                                pid: 0,
                                time_ns: end,
                                seq: 0,
                            },
                            &Body::StreamInfo(i),
                        )?;
                        out.push((path.display().to_string(), s.records(), s.bytes()));
                        s.into_inner().flush()?;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A stream writer of either kind.
trait StreamOut {
    fn put(&mut self, stamp: &Stamp, body: &Body<'_>) -> io::Result<()>;
}
impl<W: Write> StreamOut for StreamWriter<W> {
    fn put(&mut self, stamp: &Stamp, body: &Body<'_>) -> io::Result<()> {
        self.write(stamp, body)
    }
}

fn write_note<W: Write>(s: &mut StreamWriter<W>, cpu: u32, note: &str) -> io::Result<()> {
    s.write(
        &Stamp {
            cpu,
            pid: 0,
            time_ns: 0,
            seq: 0,
        },
        &Body::Msg {
            text: note.as_bytes(),
        },
    )
}

impl Sink for Streams {
    #[inline]
    fn record(&mut self, cpu: u32, pid: u32, time_ns: u64, body: &Body<'_>) -> io::Result<()> {
        self.last_ns = self.last_ns.max(time_ns);
        let comm = if pid != 0 && !self.comms.is_empty() && self.announced.insert(pid) {
            self.comms.get(&pid).cloned()
        } else {
            None
        };
        self.records += 1;
        let w = self.writer(cpu)?;
        let stamp = Stamp {
            cpu,
            pid,
            time_ns,
            seq: 0,
        };
        if let Some(c) = comm {
            w.put(&stamp, &Body::Process { comm: c.as_bytes() })?;
        }
        w.put(&stamp, body)
    }
}
