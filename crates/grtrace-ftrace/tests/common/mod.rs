//! Test helpers: traces built from the kernels' own formats (fixtures/import), written as
//! real trace.dat files, imported into a collecting sink.
#![allow(dead_code)]

use std::io::{self, Cursor};

use grtrace_format::{Body, EventBody};
use grtrace_ftrace::datwriter::{fixture_formats, DatSpec, DatWriter, Record};
use grtrace_ftrace::import;
use grtrace_ftrace::map::{Mapper, Sink};
use grtrace_ftrace::page::Missed;
use grtrace_ftrace::tracedat::{Codec, TraceDat};
use grtrace_ftrace::EventFormat;

/// A record as the sink got it.
#[derive(Clone, Debug, PartialEq)]
pub enum Out {
    Event {
        cpu: u32,
        pid: u32,
        t: u64,
        ev: EventBody,
    },
    Ring {
        id: u32,
        class: u32,
        unit: u32,
        flags: u32,
        name: String,
    },
    Lost {
        cpu: u32,
        count: u64,
        t: u64,
    },
    Other,
}

#[derive(Default)]
pub struct Collect(pub Vec<Out>);

impl Sink for Collect {
    fn record(&mut self, cpu: u32, pid: u32, t: u64, body: &Body<'_>) -> io::Result<()> {
        self.0.push(match body {
            Body::Event(ev) => Out::Event {
                cpu,
                pid,
                t,
                ev: *ev,
            },
            Body::Ring(r) => Out::Ring {
                id: r.ring,
                class: r.engine_class,
                unit: r.unit,
                flags: r.flags,
                name: String::from_utf8_lossy(r.name).into_owned(),
            },
            Body::Lost(l) => Out::Lost {
                cpu: l.cpu,
                count: l.count,
                t: l.last_ns,
            },
            _ => Out::Other,
        });
        Ok(())
    }
}

/// (code name, time, key, flags, args) of one event.
pub type EvTuple = (String, u64, (u32, u32, u64), u16, (u64, u64, u32, u32));

impl Collect {
    /// (code name, time, key, flags, args) of every event, for compact assertions.
    pub fn events(&self) -> Vec<EvTuple> {
        self.0
            .iter()
            .filter_map(|o| match o {
                Out::Event { t, ev, .. } => Some((
                    ev.code.name().map_or("?".into(), str::to_string),
                    *t,
                    (ev.ctx, ev.ring, ev.seqno),
                    ev.flags,
                    (ev.arg0, ev.arg1, ev.arg2, ev.arg3),
                )),
                _ => None,
            })
            .collect()
    }

    pub fn codes(&self) -> Vec<String> {
        self.events().into_iter().map(|e| e.0).collect()
    }

    pub fn rings(&self) -> Vec<(u32, String)> {
        self.0
            .iter()
            .filter_map(|o| match o {
                Out::Ring { id, name, .. } => Some((*id, name.clone())),
                _ => None,
            })
            .collect()
    }

    /// (name, ring flags) of every ring note.
    pub fn ring_flags(&self) -> Vec<(String, u32)> {
        self.0
            .iter()
            .filter_map(|o| match o {
                Out::Ring { name, flags, .. } => Some((name.clone(), *flags)),
                _ => None,
            })
            .collect()
    }
}

/// One tracepoint event of a test trace.
pub struct Ev {
    pub cpu: u32,
    pub t: u64,
    pub bytes: Vec<u8>,
}

/// Builds events of `kernel`'s formats.
pub struct Trace {
    pub kernel: &'static str,
    pub formats: Vec<(EventFormat, String)>,
    pub events: Vec<Ev>,
    /// (cpu, before event index on that cpu, missed)
    pub lost: Vec<(u32, usize, Missed)>,
}

impl Trace {
    pub fn new(kernel: &'static str) -> Trace {
        Trace {
            kernel,
            formats: fixture_formats(kernel),
            events: Vec::new(),
            lost: Vec::new(),
        }
    }

    pub fn fmt(&self, name: &str) -> &EventFormat {
        &self
            .formats
            .iter()
            .find(|(f, _)| f.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .0
    }

    /// Rewrites the text of format `name` (`from` becomes `to`) and parses it again: the
    /// layout of a kernel that differs from the fixture's.
    pub fn edit_format(&mut self, name: &str, from: &str, to: &str) {
        let (f, text) = self
            .formats
            .iter_mut()
            .find(|(f, _)| f.name == name)
            .unwrap_or_else(|| panic!("no {name}"));
        *text = text.replace(from, to);
        *f = EventFormat::parse(&f.system, text).unwrap();
    }

    /// Adds event `name` at `t` on `cpu` by `pid`, with integer and string fields.
    pub fn ev(
        &mut self,
        cpu: u32,
        t: u64,
        pid: u32,
        name: &str,
        ints: &[(&str, u64)],
        strs: &[(&str, &str)],
    ) -> &mut Self {
        let f = self.fmt(name).clone();
        let mut r = Record::new(&f, pid);
        for (k, v) in ints {
            r.set(k, *v);
        }
        for (k, v) in strs {
            r.set_str(k, v);
        }
        self.events.push(Ev {
            cpu,
            t,
            bytes: r.bytes().to_vec(),
        });
        self
    }

    /// Adds fence event `name` (`dma_fence_signaled`, `fence_wait_start`, ...) at `t` on
    /// `cpu` by `pid`, of fence (context, seqno) `fence` on `driver`'s `timeline`.
    pub fn fence(
        &mut self,
        cpu: u32,
        t: u64,
        pid: u32,
        name: &str,
        fence: (u64, u64),
        (driver, timeline): (&str, &str),
    ) -> &mut Self {
        self.ev(
            cpu,
            t,
            pid,
            name,
            &[("context", fence.0), ("seqno", fence.1)],
            &[("driver", driver), ("timeline", timeline)],
        )
    }

    /// Adds `dma_fence_signaled` of fence (context, seqno) `fence` on `driver`'s `timeline`
    /// at `t` on `cpu`, signalled from an interrupt (pid 0).
    pub fn signaled(
        &mut self,
        cpu: u32,
        t: u64,
        fence: (u64, u64),
        names: (&str, &str),
    ) -> &mut Self {
        self.fence(cpu, t, 0, "dma_fence_signaled", fence, names)
    }

    /// Adds `drm_sched_job_done` (6.17+) of the job whose finished fence is `fence` at `t`
    /// on `cpu`, from an interrupt (pid 0).
    pub fn sched_done(&mut self, cpu: u32, t: u64, fence: (u64, u64)) -> &mut Self {
        let f = [("fence_context", fence.0), ("fence_seqno", fence.1)];
        self.ev(cpu, t, 0, "drm_sched_job_done", &f, &[])
    }

    /// Writes the trace as a trace.dat of `version` / `codec`.
    pub fn dat(&self, version: u32, codec: Option<Codec>) -> Vec<u8> {
        let cpus = self.events.iter().map(|e| e.cpu + 1).max().unwrap_or(1);
        let mut spec = DatSpec::new(version, codec, &self.formats, cpus);
        spec.cmdlines = vec![(100, "glmark2".into())];
        spec.chunk_pages = 2;
        let mut w = DatWriter::new(Cursor::new(Vec::new()), spec).unwrap();
        for cpu in 0..cpus {
            w.begin_cpu(cpu).unwrap();
            let mut evs: Vec<&Ev> = self.events.iter().filter(|e| e.cpu == cpu).collect();
            evs.sort_by_key(|e| e.t);
            for (i, e) in evs.iter().enumerate() {
                for (_, _, m) in self.lost.iter().filter(|(c, at, _)| *c == cpu && *at == i) {
                    w.lost(*m).unwrap();
                }
                w.push(e.t, &e.bytes).unwrap();
            }
            w.end_cpu().unwrap();
        }
        w.finish().unwrap().into_inner()
    }
}

/// Imports trace.dat bytes; returns the records and the mapper (for its stats).
pub fn import(bytes: &[u8]) -> (Collect, Mapper, Result<(), String>) {
    let dat = TraceDat::parse(bytes).expect("parses");
    let mut m = Mapper::new(dat.endian, &dat.formats);
    let mut c = Collect::default();
    let r = import::run(dat.streams(), &mut m, &mut c).map_err(|e| e.to_string());
    (c, m, r)
}

/// Imports the trace as a v6 file.
pub fn run(t: &Trace) -> (Collect, Mapper) {
    let (c, m, r) = import(&t.dat(6, None));
    r.expect("imports");
    (c, m)
}
