//! Helpers shared by the integration tests: build streams in memory and run them through
//! the same reader and engine as the binary.
#![allow(dead_code)]

use grtrace_format::abi;
use grtrace_format::builder::Builder;
use grtrace_format::Event;
use grtrace_format::{Body, EventBody, InputSource, RingNote, Stamp, Trace};
use grtreport::engine::{Engine, Filter};
use grtreport::joiner::JoinConfig;
use grtreport::{Job, Rules};

pub const T0: u64 = 1_000_000_000_000;

/// The grtreport binary under test.
pub fn grtreport() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_grtreport"))
}

/// Runs `cmd`, asserting that it succeeds (the command and its stderr in the message);
/// returns what it wrote.
pub fn succeed(cmd: &mut std::process::Command) -> std::process::Output {
    grtrace_cli::succeed(cmd)
}

/// What `cmd` writes on stdout, as text, asserting that it succeeds.
pub fn stdout_of(cmd: &mut std::process::Command) -> String {
    String::from_utf8(succeed(cmd).stdout).unwrap()
}
pub const US: u64 = 1_000;
pub const MS: u64 = 1_000_000;

/// A synthetic run of one CPU and `records` records.
pub fn one_cpu(records: u64) -> grtrace_format::synth::SynthConfig {
    grtrace_format::synth::SynthConfig {
        records,
        cpus: 1,
        ..Default::default()
    }
}

/// Imports `input` (a trace.dat or a capture's text) into the recording `base`, as
/// `grtimport -q INPUT -o BASE` does.
pub fn import(input: &std::path::Path, base: &std::path::Path) -> Result<(), grtrace_cli::Failure> {
    use clap::Parser;
    let args = grtimport::Args::try_parse_from([
        "grtimport".as_ref(),
        "-q".as_ref(),
        input.as_os_str(),
        "-o".as_ref(),
        base.as_os_str(),
    ])
    .unwrap();
    grtimport::run(&args)
}

/// An event record for [`Rec::add`]: where and when, and the record (`arg1` is always 0
/// here).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ev {
    pub cpu: u32,
    pub pid: u32,
    /// Time (ns).
    pub t: u64,
    pub body: EventBody,
}

/// Events of one job made from one template in a line each:
/// `let job = Ev::of_job(ctx, ring, seqno).flags(1);` then
/// `r.add(job.at(Event::SUBMIT, t).on(0, 7).args(0, 0, 1));`.
impl Ev {
    /// The template of the events of job <ctx, ring, seqno>, every other field 0.
    pub fn of_job(ctx: u32, ring: u32, seqno: u64) -> Ev {
        let body = EventBody {
            ctx,
            ring,
            seqno,
            ..EventBody::default()
        };
        Ev {
            body,
            ..Ev::default()
        }
    }
    /// This event as `code` at `t` (ns).
    pub fn at(mut self, code: Event, t: u64) -> Ev {
        self.body.code = code;
        Ev { t, ..self }
    }
    /// Written by CPU `cpu` in the context of thread `pid`.
    pub fn on(self, cpu: u32, pid: u32) -> Ev {
        Ev { cpu, pid, ..self }
    }
    /// With event flags `flags` (`abi::eflag`).
    pub fn flags(mut self, flags: u16) -> Ev {
        self.body.flags = flags;
        self
    }
    /// With arguments 0, 2 and 3 (their meaning is the event's, FORMAT.md 4.1).
    pub fn args(mut self, arg0: u64, arg2: u32, arg3: u32) -> Ev {
        (self.body.arg0, self.body.arg2, self.body.arg3) = (arg0, arg2, arg3);
        self
    }
}

/// Builds records with per-CPU sequence numbers (numbered by grtrace-format's `Builder`).
#[derive(Default)]
pub struct Rec {
    pub recs: Vec<(Stamp, Body<'static>)>,
    b: Builder,
}

impl Rec {
    pub fn push(&mut self, cpu: u32, pid: u32, t: u64, body: Body<'static>) {
        self.b.on(cpu).pid(pid).record(body).at(t);
        self.recs.extend(self.b.drain());
    }
    /// A SYNC_ENTER or SYNC_EXIT of job <ctx, ring, seqno> awaiting fence (context, seqno).
    #[allow(dead_code)]
    pub fn sync(&mut self, t: u64, code: Event, key: (u32, u32, u64), fence: (u64, u64)) {
        self.b
            .on(0)
            .pid(0)
            .event(code)
            .at(t)
            .flags(0)
            .job(key.0, key.1, key.2)
            .args(fence.0, fence.1, 0, 0);
        self.recs.extend(self.b.drain());
    }

    /// A recording whose ring 0, `gfx` (1 MiB), is announced at [`T0`].
    pub fn with_gfx() -> Rec {
        let mut r = Rec::default();
        r.ring(T0, 0, 1 << 20, b"gfx");
        r
    }
    /// An event record, by field (those left out are 0, `..Ev::default()`).
    pub fn add(&mut self, e: Ev) {
        self.push(e.cpu, e.pid, e.t, Body::Event(e.body));
    }
    pub fn ring(&mut self, t: u64, ring: u32, size: u64, name: &'static [u8]) {
        self.ring_flags(t, ring, size, name, 0);
    }
    /// A NOTE_RING with `abi::ring_flag` bits.
    pub fn ring_flags(&mut self, t: u64, ring: u32, size: u64, name: &'static [u8], flags: u32) {
        self.push(
            0,
            0,
            t,
            Body::Ring(RingNote {
                ring,
                engine_class: 1,
                size,
                unit: abi::RING_UNIT_SLOTS,
                flags,
                name,
            }),
        );
    }
}

/// Encodes records (sorted by time, stable) as one merged stream, numbering `seq` per CPU
/// in time order as the kernel would.
pub fn merged_stream(recs: &[(Stamp, Body<'static>)]) -> Vec<u8> {
    ended_stream(recs, 0, "virtio_gpu")
}

/// [`merged_stream`] of card `card` and driver `driver`. The stream ends as a recorder that
/// stopped cleanly ends it, with a STREAM_INFO (a stream without one is warned about as cut
/// short).
pub fn ended_stream(recs: &[(Stamp, Body<'static>)], card: u32, driver: &str) -> Vec<u8> {
    let mut all = recs.to_vec();
    let last = recs.iter().map(|(s, _)| s.time_ns).max().unwrap_or(T0);
    let info = grtrace_format::StreamInfo {
        kernel_dropped: 0,
        records: recs.len() as u64 + 1,
        bytes: 0,
        flags: abi::INFO_STOPPED_CLEANLY,
    };
    let stamp = Stamp {
        cpu: recs.first().map_or(0, |r| r.0.cpu),
        pid: 0,
        time_ns: last,
        seq: 0,
    };
    all.push((stamp, Body::StreamInfo(info)));
    grtrace_format::builder::merged_stream(&all, card, driver)
}

/// An engine with `rules` and the default joiner and filter, as the binary makes it.
pub fn engine(rules: Rules) -> Engine {
    Engine::new(rules, JoinConfig::default(), Filter::default(), 3)
}

/// Runs stream `data` through the reader into engine `e` and finishes the engine; returns
/// how many read errors the run met.
pub fn feed(data: Vec<u8>, e: &mut Engine) -> usize {
    let mut trace = Trace::open(vec![InputSource::Bytes {
        name: "test".into(),
        data,
    }])
    .unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (sum, out, _) = grtreport::input::run(&mut trace, e, &stop, false);
    out.unwrap();
    e.finish().unwrap();
    sum.errors.len()
}

/// [`feed`] into `e`, asserting that the stream read without errors.
pub fn feed_clean(data: Vec<u8>, e: &mut Engine) {
    assert_eq!(feed(data, e), 0, "read errors");
}

/// Every frame's critical path that `path` finds in stream `data` (all kept, none handed
/// to a report), and the finished engine.
pub fn frame_paths(
    data: Vec<u8>,
    path: grtreport::critical::CriticalPath,
) -> (Engine, Vec<grtreport::critical::FramePath>) {
    let mut e = engine(Rules::default());
    e.critical = Some(path);
    e.critical.as_mut().unwrap().keep_all();
    feed_clean(data, &mut e);
    let all = e.critical.as_mut().unwrap().take_all();
    (e, all)
}

/// Asserts that the links of `p` cover its frame, `[start, end]`, in order, without gaps or
/// overlaps.
pub fn assert_covers(p: &grtreport::critical::FramePath) {
    assert!(!p.links.is_empty());
    assert_eq!(p.links[0].from, p.start, "{p:#?}");
    assert_eq!(p.links.last().unwrap().to, p.end, "{p:#?}");
    for w in p.links.windows(2) {
        assert_eq!(w[0].to, w[1].from, "{p:#?}");
    }
}

/// Runs a stream through the reader and the engine; returns the engine (finished) and jobs.
pub fn run_bytes(data: Vec<u8>, rules: Rules) -> (Engine, Vec<Job>) {
    let mut e = engine(rules);
    e.keep_jobs();
    feed_clean(data, &mut e);
    let jobs = e.take_jobs();
    (e, jobs)
}

/// A scenario's records (times relative to session start) as one merged stream, numbered
/// per CPU like the kernel would.
pub fn scenario_stream(recs: &[(Stamp, Body<'static>)]) -> Vec<u8> {
    let mut r = Rec::default();
    for (s, b) in recs {
        r.push(s.cpu, s.pid, s.time_ns + T0, *b);
    }
    merged_stream(&r.recs)
}

/// Simulator scenario `name` (seed, jobs) as the stream file of card `card` of driver
/// `driver`, `{base}.card{card}.grtrace` in this process's temporary directory, its times
/// after [`T0`].
pub fn scenario_card_file(
    base: &str,
    card: u32,
    (name, seed, jobs): (&str, u64, usize),
    driver: &str,
) -> std::path::PathBuf {
    let sc = grtrace_sim::scenarios::by_name(name, seed, jobs).expect("scenario");
    let recs: Vec<_> = sc
        .records
        .iter()
        .map(|&(mut s, b)| {
            s.time_ns += T0;
            (s, b)
        })
        .collect();
    let p = tmp(&format!("{base}.card{card}.grtrace"));
    std::fs::write(&p, ended_stream(&recs, card, driver)).unwrap();
    p
}

/// Per-tag (true positives, false positives, false negatives) of `jobs` against `truth`.
pub fn score(
    jobs: &[Job],
    truth: &[grtrace_sim::scenarios::TruthJob],
) -> [(u64, u64, u64); grtreport::Tags::COUNT] {
    use std::collections::HashMap;
    let got: HashMap<(u32, u32, u64), grtreport::Tags> = jobs
        .iter()
        .map(|j| ((j.key.ctx, j.key.ring, j.key.seqno), j.tags))
        .collect();
    let mut s = [(0, 0, 0); grtreport::Tags::COUNT];
    for t in truth {
        let tags = got
            .get(&(t.ctx, t.ring, t.seqno))
            .copied()
            .unwrap_or_default();
        for (i, name) in grtreport::Tags::NAMES.iter().enumerate() {
            let want = t.tags.contains(name);
            let have = tags.has(1 << i);
            match (want, have) {
                (true, true) => s[i].0 += 1,
                (false, true) => s[i].1 += 1,
                (true, false) => s[i].2 += 1,
                _ => {}
            }
        }
    }
    s
}

/// grtreport with `args`, its standard output a pipe whose reader is gone.
pub fn output_into_closed_stdout<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    grtreport().args(args).stdout(writer).output().unwrap()
}

/// Asserts what a run stopped by its closed standard output says of the file `path` that
/// option `flag` would have written: exit status 1 and one line, that it was not written.
pub fn assert_not_written_for_closed_stdout(
    out: &std::process::Output,
    flag: &str,
    path: &std::path::Path,
) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{flag} {}: {err}",
        path.display()
    );
    assert_eq!(
        err.trim_end(),
        format!(
            "grtreport: {flag} {}: not written: standard output was closed before the trace was read",
            path.display()
        )
    );
}

/// grtreport with `args` under a file size limit of `blocks` (the shell's `ulimit -f`):
/// a write past it fails (File too large) instead of killing the process.
pub fn output_under_file_limit<S: AsRef<std::ffi::OsStr>>(
    blocks: u32,
    args: &[S],
) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_grtreport"))
        .args(args)
        .output()
        .unwrap()
}

/// A file name in this test process's own temporary directory.
pub fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("grtreport-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// A simulator scenario as a stream file, written once per process: tests run in parallel,
/// and none may read it half-written.
pub fn scenario_file(name: &str, seed: u64, jobs: usize) -> std::path::PathBuf {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Files = HashMap<(String, u64, usize), std::path::PathBuf>;
    static FILES: OnceLock<Mutex<Files>> = OnceLock::new();
    let mut files = FILES.get_or_init(Default::default).lock().unwrap();
    files
        .entry((name.to_string(), seed, jobs))
        .or_insert_with(|| {
            let p = tmp(&format!("{name}-{seed}-{jobs}.grtrace"));
            let sc = grtrace_sim::scenarios::by_name(name, seed, jobs).expect("scenario");
            std::fs::write(&p, scenario_stream(&sc.records)).unwrap();
            p
        })
        .clone()
}

/// Where the page's job arrays hold column `name` (from the data's `job_columns`).
pub fn page_column(page_data: &serde_json::Value, name: &str) -> usize {
    page_data["job_columns"]
        .as_array()
        .expect("the page's job_columns")
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no job column {name} in the page's data"))
}

/// The (ctx, ring, seqno) of every job an HTML page's data element carries, sorted.
pub fn page_job_keys(page_data: &serde_json::Value) -> Vec<(u64, u64, u64)> {
    let at = ["ctx", "ring", "seqno"].map(|c| page_column(page_data, c));
    let mut keys: Vec<_> = page_data["jobs"]
        .as_array()
        .expect("the page's jobs")
        .iter()
        .map(|j| {
            let n = |i: usize| j[at[i]].as_u64().expect("a job key number");
            (n(0), n(1), n(2))
        })
        .collect();
    keys.sort();
    keys
}

/// The line of `text` that starts with `prefix` after the line containing `section`.
pub fn line_after<'a>(text: &'a str, section: &str, prefix: &str) -> &'a str {
    text.lines()
        .skip_while(|l| !l.contains(section))
        .find(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` after `{section}`:\n{text}"))
}
