//! Test captures: one list of kernel events written both as a trace-cmd trace.dat (through
//! [`DatWriter`]) and as the text `trace-cmd report` or tracefs `trace` prints for it, each
//! line rendered from the event's own `print fmt` (the kernel's TP_printk, as the fixture
//! format files give it), the way libtraceevent and the kernel render it. So an import test
//! can check that text and binary captures of the same events give the same report, without
//! hand-written text that might only match the parser.

use std::io::{self, Cursor};

use crate::datwriter::{fixture_formats, DatSpec, DatWriter, Record};
use crate::format::{read_str, read_uint, EventFormat};
use crate::page::Missed;
use crate::tracedat::Codec;

/// An argument of a `print fmt`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Arg {
    /// `REC->name`
    Field(String),
    /// `REC->name[i]`: element `i` of an array field of `n` elements.
    Elem(String, usize, usize),
    /// `__get_str(name)`
    Str(String),
    /// `REC->name ? "a" : "b"`
    Cond(String, String, String),
    /// `"text"`
    Lit(String),
}

/// A parsed `print fmt:` line: the format string and its arguments.
#[derive(Clone, Debug)]
pub struct PrintFmt {
    fmt: String,
    args: Vec<Arg>,
}

/// Splits `s` at commas outside quotes and parentheses.
fn split_args(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quoted) = (Vec::new(), String::new(), 0i32, false);
    for c in s.chars() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' if !quoted => depth += 1,
            ')' | ']' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

impl PrintFmt {
    /// From a format file's text (its `print fmt:` line).
    pub fn parse(text: &str) -> Option<PrintFmt> {
        let line = text.lines().find_map(|l| l.strip_prefix("print fmt: "))?;
        let rest = line.strip_prefix('"')?;
        // The format string ends at the first unescaped quote.
        let mut end = None;
        let b = rest.as_bytes();
        for i in 0..b.len() {
            if b[i] == b'"' && (i == 0 || b[i - 1] != b'\\') {
                end = Some(i);
                break;
            }
        }
        let end = end?;
        let fmt = rest[..end].replace("\\\"", "\"");
        let arg_text = rest[end + 1..].trim_start().trim_start_matches(',');
        let mut args = Vec::new();
        for a in split_args(arg_text) {
            let arg = if let Some(n) = a.strip_prefix("__get_str(") {
                Arg::Str(n.trim_end_matches(')').to_string())
            } else if let Some((c, ab)) = a.split_once('?') {
                let (x, y) = ab.split_once(':')?;
                let q = |s: &str| s.trim().trim_matches('"').to_string();
                let f = c.trim().strip_prefix("REC->")?.to_string();
                Arg::Cond(f, q(x), q(y))
            } else if let Some(f) = a.strip_prefix("REC->") {
                match f.split_once('[') {
                    Some((n, i)) => {
                        let i: usize = i.trim_end_matches(']').parse().ok()?;
                        // The array's length, from its declaration `TYPE n[N];`.
                        let decl = format!(" {n}[");
                        let len = text
                            .lines()
                            .find_map(|l| l.split_once(&decl).map(|(_, r)| r))
                            .and_then(|r| r.split(']').next()?.parse().ok())?;
                        Arg::Elem(n.to_string(), i, len)
                    }
                    None => Arg::Field(f.to_string()),
                }
            } else {
                Arg::Lit(a.trim_matches('"').to_string())
            };
            args.push(arg);
        }
        Some(PrintFmt { fmt, args })
    }

    /// The event's fields printed as the kernel prints them (`%p` as tracefs prints a
    /// hashed pointer: 16 hex digits, no `0x`).
    pub fn render(&self, f: &EventFormat, rec: &[u8]) -> String {
        let e = grtrace_format::Endian::NATIVE;
        let mut out = String::new();
        let mut args = self.args.iter();
        let mut chars = self.fmt.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                out.push('%');
                continue;
            }
            let mut spec = String::new();
            while let Some(&d) = chars.peek() {
                spec.push(d);
                chars.next();
                if d.is_ascii_alphabetic() && !matches!(d, 'l' | 'L' | 'h' | 'z') {
                    break;
                }
            }
            let conv = spec.chars().last().unwrap_or('d');
            let flags: String = spec
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            let zero = flags.starts_with('0');
            let width: usize = flags.trim_start_matches('0').parse().unwrap_or(0);
            let (val, signed, size, s) = match args.next() {
                Some(Arg::Field(n)) => match f.field(n) {
                    Some(fl) if fl.data_loc || fl.rel_loc || conv == 's' => (
                        0,
                        false,
                        0,
                        Some(String::from_utf8_lossy(read_str(e, rec, fl.loc())).into_owned()),
                    ),
                    Some(fl) => (
                        read_uint(e, rec, fl.offset, fl.size.min(8)),
                        fl.signed,
                        fl.size,
                        None,
                    ),
                    None => (0, false, 8, None),
                },
                Some(Arg::Elem(n, i, len)) => match f.field(n) {
                    Some(fl) => {
                        let sz = fl.size / (*len).max(1);
                        (read_uint(e, rec, fl.offset + i * sz, sz), false, sz, None)
                    }
                    None => (0, false, 4, None),
                },
                Some(Arg::Str(n)) => (
                    0,
                    false,
                    0,
                    Some(f.field(n).map_or(String::new(), |fl| {
                        String::from_utf8_lossy(read_str(e, rec, fl.loc())).into_owned()
                    })),
                ),
                Some(Arg::Cond(n, a, b)) => {
                    let v = f
                        .field(n)
                        .map_or(0, |fl| read_uint(e, rec, fl.offset, fl.size));
                    (
                        0,
                        false,
                        0,
                        Some(if v != 0 { a.clone() } else { b.clone() }),
                    )
                }
                Some(Arg::Lit(l)) => (0, false, 0, Some(l.clone())),
                None => (0, false, 0, Some(String::new())),
            };
            let text = match (s, conv) {
                (Some(s), _) => s,
                (None, 'p') => format!("{val:016x}"),
                (None, 'x') => format!("{val:x}"),
                (None, 'd' | 'i') if signed || conv == 'd' => {
                    let shift = 64 - 8 * size.clamp(1, 8);
                    (((val << shift) as i64) >> shift).to_string()
                }
                (None, _) => val.to_string(),
            };
            let pad = width.saturating_sub(text.len());
            if zero {
                out.push_str(&"0".repeat(pad));
            } else if !flags.starts_with('-') {
                out.push_str(&" ".repeat(pad));
            }
            out.push_str(&text);
        }
        out
    }
}

/// How a text capture is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextStyle {
    /// `trace-cmd report`: `cpus=N` preamble, microsecond times, `CPU:N [K EVENTS DROPPED]`.
    Report,
    /// `trace-cmd report -t`: nanosecond times.
    ReportNs,
    /// tracefs `trace`: comment header, the flags column, `CPU:N [LOST K EVENTS]`.
    Tracefs,
}

/// One event of a capture.
#[derive(Clone, Debug)]
struct Ev {
    cpu: u32,
    t: u64,
    pid: u32,
    comm: String,
    fmt: usize,
    bytes: Vec<u8>,
}

/// The integer fields of request `seqno` of context `ctx` on the first render engine of
/// card 0, as i915's request events carry them (for [`Capture::ev`]).
pub fn i915_request(ctx: u64, seqno: u64) -> [(&'static str, u64); 5] {
    [
        ("dev", 0),
        ("ctx", ctx),
        ("class", 0),
        ("instance", 0),
        ("seqno", seqno),
    ]
}

/// A list of kernel events (any formats of the fixtures, GPU or not) and losses, written as
/// a trace.dat or as text.
pub struct Capture {
    formats: Vec<(EventFormat, String, PrintFmt)>,
    events: Vec<Ev>,
    /// (cpu, time, count): events lost on `cpu` before its first event at or after `time`
    /// (no count: the ring buffer stored none).
    lost: Vec<(u32, u64, Option<u64>)>,
    /// Systems whose formats a trace.dat carries though none of their events happened (a
    /// `trace-cmd record -e SYSTEM` of a system that stayed quiet).
    quiet_systems: Vec<String>,
    /// CPUs of the machine the capture was made on.
    pub cpus: u32,
}

impl Capture {
    /// A capture of `kernel`'s formats (`6.12`, or `6.17`: the 6.17 scheduler names with
    /// the 6.12 formats of the other systems) on `cpus` CPUs.
    pub fn new(kernel: &str, cpus: u32) -> Capture {
        let formats = fixture_formats(kernel)
            .into_iter()
            .map(|(f, t)| {
                let p = PrintFmt::parse(&t).expect("fixture print fmt");
                (f, t, p)
            })
            .collect();
        Capture {
            formats,
            events: Vec::new(),
            lost: Vec::new(),
            quiet_systems: Vec::new(),
            cpus,
        }
    }

    /// The kernel has no such events (a config option leaves them out, as
    /// `CONFIG_DRM_I915_LOW_LEVEL_TRACEPOINTS` does i915's `submit`, `execute`, `in`, `out`
    /// and `guc_submit`): a trace.dat does not carry their formats.
    pub fn without(&mut self, events: &[&str]) -> &mut Self {
        self.formats
            .retain(|(f, _, _)| !events.contains(&f.name.as_str()));
        self
    }

    /// Also carries the formats of `system` in a trace.dat, whether or not its events came.
    pub fn record_system(&mut self, system: &str) -> &mut Self {
        self.quiet_systems.push(system.to_string());
        self
    }

    /// A 6.12 capture on two CPUs of one scheduler switch at `t` ns (bash, pid 5, to pid 6)
    /// and no GPU event: what a capture of an idle GPU gives.
    pub fn no_gpu(t: u64) -> Capture {
        let mut c = Capture::new("6.12", 2);
        c.ev(
            1,
            t,
            "bash",
            5,
            "sched_switch",
            &[("prev_pid", 5), ("next_pid", 6)],
            &[("prev_comm", "bash"), ("next_comm", "x")],
        );
        c
    }

    /// Adds event `name` at `t` ns on `cpu`, by task `comm`-`pid`, with integer and string
    /// fields (fields the format lacks are ignored).
    #[allow(clippy::too_many_arguments)]
    pub fn ev(
        &mut self,
        cpu: u32,
        t: u64,
        comm: &str,
        pid: u32,
        name: &str,
        ints: &[(&str, u64)],
        strs: &[(&str, &str)],
    ) -> &mut Self {
        let fmt = self
            .formats
            .iter()
            .position(|(f, _, _)| f.name == name)
            .unwrap_or_else(|| panic!("no format for {name}"));
        let mut r = Record::new(&self.formats[fmt].0, pid);
        for (k, v) in ints {
            r.set(k, *v);
        }
        for (k, v) in strs {
            r.set_str(k, v);
        }
        let bytes = r.bytes().to_vec();
        self.events.push(Ev {
            cpu,
            t,
            pid,
            comm: comm.to_string(),
            fmt,
            bytes,
        });
        self
    }

    /// `count` events were lost on `cpu` before its first event at or after `t` (None: the
    /// ring buffer did not count them).
    pub fn lost(&mut self, cpu: u32, t: u64, count: Option<u64>) -> &mut Self {
        self.lost.push((cpu, t, count));
        self
    }

    /// The events of `cpu` in time order (stable: events at one time keep their order).
    fn of_cpu(&self, cpu: u32) -> Vec<&Ev> {
        let mut v: Vec<&Ev> = self.events.iter().filter(|e| e.cpu == cpu).collect();
        v.sort_by_key(|e| e.t);
        v
    }

    /// The capture as a trace.dat (`version` 6 or 7), carrying the formats of every system
    /// that had an event and of those named by [`record_system`](Self::record_system).
    pub fn dat(&self, version: u32, codec: Option<Codec>) -> Vec<u8> {
        let mut systems: Vec<&str> = self
            .events
            .iter()
            .map(|e| self.formats[e.fmt].0.system.as_str())
            .chain(self.quiet_systems.iter().map(String::as_str))
            .collect();
        systems.sort_unstable();
        systems.dedup();
        let formats: Vec<(EventFormat, String)> = self
            .formats
            .iter()
            .filter(|(f, _, _)| systems.contains(&f.system.as_str()))
            .map(|(f, t, _)| (f.clone(), t.clone()))
            .collect();
        let mut spec = DatSpec::new(version, codec, &formats, self.cpus);
        let mut cmdlines: Vec<(u32, String)> = self
            .events
            .iter()
            .filter(|e| e.pid != 0)
            .map(|e| (e.pid, e.comm.clone()))
            .collect();
        cmdlines.sort();
        cmdlines.dedup();
        spec.cmdlines = cmdlines;
        spec.clock = "mono".into();
        spec.chunk_pages = 2;
        let w = || -> io::Result<Vec<u8>> {
            let mut w = DatWriter::new(Cursor::new(Vec::new()), spec)?;
            for cpu in 0..self.cpus {
                w.begin_cpu(cpu)?;
                let mut lost: Vec<&(u32, u64, Option<u64>)> =
                    self.lost.iter().filter(|l| l.0 == cpu).collect();
                lost.sort_by_key(|l| l.1);
                let mut li = 0;
                for e in self.of_cpu(cpu) {
                    while li < lost.len() && lost[li].1 <= e.t {
                        w.lost(lost[li].2.map_or(Missed::Unknown, Missed::Count))?;
                        li += 1;
                    }
                    w.push(e.t, &e.bytes)?;
                }
                w.end_cpu()?;
            }
            Ok(w.finish()?.into_inner())
        };
        w().expect("writing to memory")
    }

    /// The capture as text, every line from its event's print fmt, in time order.
    pub fn text(&self, style: TextStyle) -> String {
        let mut out = String::new();
        match style {
            TextStyle::Report | TextStyle::ReportNs => {
                out.push_str(&format!("cpus={}\n", self.cpus));
                for cpu in 0..self.cpus {
                    if self.of_cpu(cpu).is_empty() {
                        out.push_str(&format!("CPU {cpu} is empty\n"));
                    }
                }
            }
            TextStyle::Tracefs => out.push_str(
                "# tracer: nop\n#\n#                                _-----=> irqs-off/BH-disabled\n\
                 #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
                 #              | |         |   |||||     |         |\n",
            ),
        }
        let mut all: Vec<&Ev> = self.events.iter().collect();
        all.sort_by_key(|e| (e.t, e.cpu));
        let mut lost: Vec<&(u32, u64, Option<u64>)> = self.lost.iter().collect();
        lost.sort_by_key(|l| l.1);
        let mut told = vec![false; lost.len()];
        for e in all {
            for (i, l) in lost.iter().enumerate() {
                if !told[i] && l.0 == e.cpu && l.1 <= e.t {
                    told[i] = true;
                    // As the kernel and trace-cmd print them.
                    out.push_str(&match (style, l.2) {
                        (TextStyle::Tracefs, Some(n)) => format!("CPU:{} [LOST {n} EVENTS]\n", l.0),
                        (TextStyle::Tracefs, None) => format!("CPU:{} [LOST EVENTS]\n", l.0),
                        (_, Some(n)) => format!("CPU:{} [{n} EVENTS DROPPED]\n", l.0),
                        (_, None) => format!("CPU:{} [EVENTS DROPPED]\n", l.0),
                    });
                }
            }
            let (f, _, p) = &self.formats[e.fmt];
            let comm = if e.pid == 0 { "<idle>" } else { &e.comm };
            let secs = e.t / 1_000_000_000;
            let frac = e.t % 1_000_000_000;
            let when = match style {
                TextStyle::ReportNs => format!("{secs}.{frac:09}"),
                _ => format!("{secs}.{:06}", frac / 1000),
            };
            let who = format!("{comm}-{}", e.pid);
            let flags = if style == TextStyle::Tracefs {
                " d..2."
            } else {
                ""
            };
            out.push_str(&format!(
                "{who:>16} [{:03}]{flags} {when}: {}: {}\n",
                e.cpu,
                f.name,
                p.render(f, &e.bytes)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_printed_from_the_kernels_print_fmt() {
        let mut c = Capture::new("6.12", 1);
        c.ev(
            0,
            1_500_000_123,
            "app",
            7,
            "v3d_submit_cl",
            &[
                ("dev", 1),
                ("is_render", 1),
                ("seqno", 9),
                ("ctnqba", 0x100),
            ],
            &[],
        );
        c.ev(
            0,
            1_500_001_000,
            "app",
            7,
            "drm_sched_job",
            &[
                ("entity", 0xffff_8881_0000_1000),
                ("id", 4),
                ("hw_job_count", 2),
            ],
            &[("name", "gfx_0.0.0")],
        );
        let t = c.text(TextStyle::Report);
        assert!(
            t.contains(
                " [000] 1.500000: v3d_submit_cl: dev=1, RCL, seqno=9, 0x00000100..0x00000000\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("drm_sched_job: entity=ffff888100001000, id=4, fence=0000000000000000, ring=gfx_0.0.0, job count:0, hw job count:2\n"),
            "{t}"
        );
    }
}
