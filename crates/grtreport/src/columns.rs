//! The job columns: one table ([`COLUMNS`]) drives every per-job output: `--jobs` lines, the
//! `--csv` rows, the job objects of `--json` and the jobs of the `--html` page's data.
//!
//! A row names a column, says how to get its value from a [`Job`] (a [`Val`], which knows
//! its kind: a time, a phase, a count...) and in which outputs it appears; each output
//! renders a kind its own way (a phase is `2.300000` ms in text, ns in CSV and JSON, `-`,
//! an empty cell or `null` when unmeasured). A new column is its field in [`Job`], its value
//! and one row here (JOBS.md §10). The rows render into reused buffers: no allocation per
//! cell on the `--jobs` and `--csv` paths.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::job::{BlockKind, Blocker, Flags, Job, JobKey, Origin, Tags, NONE, N_PHASES};
use crate::joiner::Joiner;
use crate::table::{Field, Rows, Ty};
use crate::units::{push_fixed4, push_ms, push_pct0, push_secs, push_u64};

/// How one column appears in `--jobs` lines: its header label and width (right-aligned;
/// 0: as long as its value, for the last, free-form columns).
#[derive(Clone, Copy, Debug)]
pub struct Text {
    pub label: &'static str,
    pub width: usize,
}

/// How one column appears in the CSV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Csv {
    /// Not in the CSV.
    No,
    /// One column under the row's name.
    One,
    /// One 0/1 column per tag of the value ([`Val::Tags`]), named after the tag in
    /// snake_case.
    PerTag,
}

/// Where one column appears in a `--json` job object: a key at the top, or in a nested
/// object (`phases`, `blocker`; see [`JSON_OBJECTS`]).
#[derive(Clone, Copy, Debug)]
pub enum Json {
    No,
    Key(&'static str),
    In(&'static str, &'static str),
}

/// One job column.
pub struct Column {
    /// The column's name: its CSV header, its key in the page's data (`job_columns`) and in
    /// JOBS.md §10.
    pub name: &'static str,
    /// Its value for one job.
    pub value: fn(&Job) -> Val<'_>,
    pub text: Option<Text>,
    pub csv: Csv,
    pub json: Json,
    /// In the `--html` page's job arrays.
    pub html: bool,
    /// Its name in the `--parquet` jobs table when not [`name`](Self::name) (the column
    /// is there when it is in the CSV: see [`parquet_fields`]).
    pub parquet_name: Option<&'static str>,
}

/// A column's value, with the kind that says how each output writes it.
#[derive(Clone, Copy, Debug)]
pub enum Val<'j> {
    /// A count or an id, always known.
    Int(u64),
    /// A number that may be unknown: `-` in text, an empty CSV cell, `null`.
    Opt(Option<u64>),
    /// A time in the trace clock ([`NONE`]: not seen): text and CSV absolute (`-`, empty),
    /// JSON absolute (`null`), the page since the origin (`-1`).
    At(u64),
    /// A time shown since the origin: text and CSV in seconds (`-`), JSON and the page in
    /// ns (`null`).
    Since(u64),
    /// Phase `i` (PHASE_NAMES order), None when unmeasured: text in ms, else ns. JSON also
    /// nulls it where the recording cannot measure the phase or the job is incomplete.
    Phase {
        i: usize,
        v: Option<u64>,
        incomplete: bool,
    },
    /// Ring fill at SUBMIT (NaN: unknown): text a whole percentage, CSV four decimals.
    Fill(f32),
    /// Tags: text and CSV their names, JSON a list of names, the page the bits.
    Tags(Tags),
    /// Tags that may be unknown (a blocker's).
    OptTags(Option<Tags>),
    /// Flags: their names, but the page's bits.
    Flags(Flags),
    /// Flags' names everywhere (the page's text for them).
    FlagsText(Flags),
    /// 0 or 1 (CSV), false or true.
    Bit(bool),
    /// A word that may be absent.
    Word(Option<&'static str>),
    /// A job key: `ctx/ring/seqno`, JSON an object.
    Key(Option<JobKey>),
    /// A fence: `context:seqno`, JSON `[context, seqno]`.
    Fence(Option<(u64, u64)>),
    /// A ring's name, looked up in the joiner.
    RingName(u32),
    /// A process's name (pid), looked up in the joiner.
    Comm(u32),
    /// The blocker in one word: `ctx/ring/seqno`, `fence:CTX:SEQNO`, `-`.
    BlockedBy(&'j Blocker),
    /// The blocker in a sentence ([`crate::report::describe_blocker`]).
    Attribution(&'j Job),
    /// The blocker as the page draws it: `[kind, who, ns lost, chain depth]`.
    BlockerInfo(&'j Job),
}

fn phase(j: &Job, i: usize) -> Val<'_> {
    Val::Phase {
        i,
        v: j.measured(i).then(|| j.phases.as_array()[i]),
        incomplete: j.flags.incomplete(),
    }
}

/// What a job's blocker says when it is a recorded job (`owned`), else None.
fn owned<T>(j: &Job, f: impl FnOnce(&Blocker) -> T) -> Option<T> {
    let b = j.blocker();
    (b.is_some() && b.owned).then(|| f(b))
}

/// A phase's column: nanoseconds in the CSV and in the JSON's `phases`, milliseconds in the
/// text column `ms` of `width`, and on the page.
const fn phase_col(
    name: &'static str,
    value: fn(&Job) -> Val<'_>,
    ms: &'static str,
    width: usize,
) -> Column {
    col(name, value)
        .text(ms, width)
        .json_in("phases", name)
        .html()
}

const fn col(name: &'static str, value: fn(&Job) -> Val<'_>) -> Column {
    Column {
        name,
        value,
        text: None,
        csv: Csv::One,
        json: Json::No,
        html: false,
        parquet_name: None,
    }
}

impl Column {
    const fn text(mut self, label: &'static str, width: usize) -> Self {
        self.text = Some(Text { label, width });
        self
    }
    const fn json(mut self, key: &'static str) -> Self {
        self.json = Json::Key(key);
        self
    }
    const fn json_in(mut self, object: &'static str, key: &'static str) -> Self {
        self.json = Json::In(object, key);
        self
    }
    const fn html(mut self) -> Self {
        self.html = true;
        self
    }
    /// Not in the CSV.
    const fn no_csv(mut self) -> Self {
        self.csv = Csv::No;
        self
    }
    const fn per_tag(mut self) -> Self {
        self.csv = Csv::PerTag;
        self
    }
    /// Named otherwise in the Parquet jobs table.
    const fn parquet_name(mut self, name: &'static str) -> Self {
        self.parquet_name = Some(name);
        self
    }
}

/// Every job column, in the order of the CSV and the `--jobs` lines (and the page's arrays).
pub static COLUMNS: &[Column] = &[
    col("time_s", |j| Val::Since(j.first_time()))
        .text("time", 14)
        .json("time_ns")
        .parquet_name("time_ns"),
    col("commit_ns", |j| Val::At(j.commit))
        .json("commit_ns")
        .html(),
    col("submit_ns", |j| Val::At(j.submit))
        .json("submit_ns")
        .html(),
    col("start_ns", |j| Val::At(j.start))
        .json("start_ns")
        .html(),
    col("end_ns", |j| Val::At(j.end)).json("end_ns").html(),
    col("done_ns", |j| Val::At(j.done)).json("done_ns").html(),
    col("ctx", |j| Val::Int(j.key.ctx.into()))
        .text("ctx", 7)
        .json("ctx")
        .html(),
    col("ring", |j| Val::Int(j.key.ring.into()))
        .text("ring", 6)
        .json("ring")
        .html(),
    col("ring_name", |j| Val::RingName(j.key.ring)),
    col("seqno", |j| Val::Int(j.key.seqno))
        .text("seqno", 10)
        .json("seqno")
        .html(),
    col("pid", |j| Val::Int(j.pid.into())).json("pid").html(),
    col("comm", |j| Val::Comm(j.pid)),
    phase_col("submit_host_ns", |j| phase(j, 0), "submit_ms", 9),
    phase_col("queue_ns", |j| phase(j, 1), "queue_ms", 10),
    phase_col("exec_ns", |j| phase(j, 2), "exec_ms", 10),
    phase_col("complete_ns", |j| phase(j, 3), "complete_ms", 11),
    phase_col("gpu_wait_ns", |j| phase(j, 4), "gpuwait_ms", 10),
    phase_col("vm_fault_ns", |j| phase(j, 5), "vmfault_ms", 10),
    phase_col("total_ns", |j| phase(j, 6), "total_ms", 10),
    col("exec_own_ns", |j| Val::Int(j.exec_own())),
    col("class_p90_ns", |j| Val::Int(j.class_ref)),
    col("fill", |j| Val::Fill(j.fill)).text("fill", 4).html(),
    col("outstanding", |j| Val::Int(j.outstanding.into()))
        .text("out", 3)
        .html(),
    col("batch", |j| Val::Int(j.batch.into())),
    col("sync_segments", |j| Val::Int(j.sync_segments.into())),
    col("faults", |j| Val::Int(j.faults.into())),
    col("preempts", |j| Val::Int(j.preempts.into())),
    col("switches", |j| Val::Int(j.switches.into())),
    col("tags", |j| Val::Tags(j.tags))
        .text("tags", 0)
        .json("tags")
        .html(),
    col("flags", |j| Val::Flags(j.flags))
        .text("flags", 0)
        .json("flags")
        .html(),
    col("flags_text", |j| Val::FlagsText(j.flags))
        .no_csv()
        .html(),
    col("blocked_by", |j| Val::BlockedBy(j.blocker()))
        .text("blocked_by", 0)
        .no_csv(),
    col("blocker_kind", |j| {
        Val::Word(match j.blocker().kind {
            BlockKind::None => None,
            BlockKind::Dep => Some("dep"),
            BlockKind::Queue => Some("queue"),
        })
    })
    .json_in("blocker", "kind"),
    col("blocker_owned", |j| Val::Bit(j.blocker().owned))
        .no_csv()
        .json_in("blocker", "owned"),
    col("blocker_ctx", |j| Val::Opt(owned(j, |b| b.key.ctx.into()))).json_in("blocker", "ctx"),
    col("blocker_ring", |j| {
        Val::Opt(owned(j, |b| b.key.ring.into()))
    })
    .json_in("blocker", "ring"),
    col("blocker_seqno", |j| Val::Opt(owned(j, |b| b.key.seqno))).json_in("blocker", "seqno"),
    col("blocker_fence", |j| {
        let b = j.blocker();
        Val::Fence((b.kind == BlockKind::Dep).then_some(b.fence))
    })
    .json_in("blocker", "fence"),
    col("blocker_lost_ns", |j| {
        let b = j.blocker();
        Val::Opt(b.is_some().then_some(b.lost))
    })
    .json_in("blocker", "lost_ns"),
    col("blocker_queue_ns", |j| {
        Val::Opt(owned(j, |b| b.queue).filter(|&v| v != NONE))
    })
    .json_in("blocker", "queue_ns"),
    col("blocker_exec_ns", |j| {
        Val::Opt(owned(j, |b| b.exec).filter(|&v| v != NONE))
    })
    .json_in("blocker", "exec_ns"),
    col("blocker_tags", |j| {
        Val::OptTags(owned(j, |b| b.tags).flatten())
    })
    .json_in("blocker", "tags"),
    col("blocker_chain", |j| Val::Opt(owned(j, |b| b.depth.into()))).json_in("blocker", "chain"),
    col("blocker_root", |j| Val::Key(owned(j, |b| b.root))).json_in("blocker", "root"),
    col("blocker_ahead", |j| {
        let b = j.blocker();
        Val::Opt((b.kind == BlockKind::Queue).then_some(b.ahead.into()))
    })
    .json_in("blocker", "ahead"),
    col("blocker_job", |j| Val::Key(owned(j, |b| b.key)))
        .no_csv()
        .html(),
    col("blocker_info", |j| Val::BlockerInfo(j)).no_csv().html(),
    col("attribution", |j| Val::Attribution(j))
        .no_csv()
        .json("attribution"),
    col("tag", |j| Val::Tags(j.tags)).per_tag(),
    col("inferred", |j| Val::Bit(j.flags.has(Flags::INFERRED))),
    col("incomplete", |j| Val::Bit(j.flags.incomplete())),
    col("queued_ns", |j| Val::At(j.queued)).json("queued_ns"),
    col("sched_ns", |j| {
        Val::Opt(Some(j.sched).filter(|&v| v != NONE))
    })
    .json("sched_ns"),
];

/// Whether a job has a nested `--json` object at all (else it is `null`).
pub type Present = fn(&Job) -> bool;

/// The nested objects of a `--json` job, and when each is there at all.
pub const JSON_OBJECTS: [(&str, Present); 2] =
    [("phases", |_| true), ("blocker", |j| j.blocker().is_some())];

/// What rendering a value may look up besides the job.
#[derive(Clone, Copy)]
pub struct Cx<'a> {
    /// The run's time origin.
    pub origin: Origin,
    /// Ring and process names; without it they are empty.
    pub joiner: Option<&'a Joiner>,
    /// `--json`: the phases the recording can measure (PHASE_NAMES order).
    pub measurable: &'a [bool; N_PHASES],
    /// Ring and process names copied out of the joiner, for a job rendered away from it
    /// (the `--parquet` jobs are rendered on a thread of their own); used without `joiner`.
    pub names: Option<&'a dyn NameSource>,
}

/// Ring and process names by id, as a [`Joiner`] knew them.
pub trait NameSource {
    /// A ring's name (`""`: none).
    fn ring(&self, id: u32) -> &str;
    /// A process's name, if a NOTE_PROCESS named it.
    fn comm(&self, pid: u32) -> Option<&str>;
}

/// Every phase measurable: the outputs other than `--json`.
pub const ALL_PHASES: [bool; N_PHASES] = [true; N_PHASES];

impl<'a> Cx<'a> {
    /// For `--jobs`, `--csv` and the page: names from `joiner` when given.
    pub fn new(origin: Origin, joiner: Option<&'a Joiner>) -> Self {
        Cx {
            origin,
            joiner,
            measurable: &ALL_PHASES,
            names: None,
        }
    }

    fn ring(&self, id: u32) -> &'a str {
        if let Some(n) = self.names {
            return n.ring(id);
        }
        self.joiner
            .and_then(|j| j.ring(id))
            .map_or("", |r| r.name.as_str())
    }

    fn comm(&self, pid: u32) -> Option<std::borrow::Cow<'a, str>> {
        if let Some(n) = self.names {
            return n.comm(pid).map(std::borrow::Cow::Borrowed);
        }
        self.joiner
            .and_then(|j| j.comms.get(pid))
            .map(std::borrow::Cow::Owned)
    }
}

pub use crate::job::snake;

// ------------------------------------------------------------------------- text

/// The `--jobs` header: each text column's label right-aligned in its width, the first
/// char a `#`.
pub fn text_header() -> String {
    let mut h = String::new();
    for t in COLUMNS.iter().filter_map(|c| c.text) {
        if !h.is_empty() {
            h.push(' ');
        }
        h.push_str(&format!("{:>w$}", t.label, w = t.width));
    }
    h.replace_range(0..1, "#");
    h
}

/// Writes one column's value as `--jobs` text.
fn text_cell(out: &mut Vec<u8>, v: Val<'_>, cx: &Cx<'_>) {
    match v {
        Val::Int(n) | Val::Opt(Some(n)) => push_u64(out, n),
        Val::At(t) if t != NONE => push_u64(out, t),
        Val::Since(t) => push_secs(out, t, cx.origin),
        Val::Phase { v: Some(ns), .. } => push_ms(out, ns),
        Val::Fill(f) if f.is_finite() => {
            push_pct0(out, f);
        }
        Val::Tags(t) | Val::OptTags(Some(t)) => {
            let _ = write!(out, "{t}");
        }
        Val::Flags(f) | Val::FlagsText(f) => {
            let _ = write!(out, "{f}");
        }
        Val::Bit(b) => out.push(b'0' + u8::from(b)),
        Val::Word(Some(w)) => out.extend_from_slice(w.as_bytes()),
        Val::Key(Some(k)) => push_key(out, &k),
        Val::Fence(Some(f)) => push_fence(out, f),
        Val::RingName(id) => out.extend_from_slice(cx.ring(id).as_bytes()),
        Val::Comm(pid) => match cx.comm(pid) {
            Some(c) => out.extend_from_slice(c.as_bytes()),
            None => out.push(b'-'),
        },
        Val::BlockedBy(b) => push_blocker_word(out, b),
        Val::Attribution(j) => match crate::report::describe_blocker(j) {
            Some(s) => out.extend_from_slice(s.as_bytes()),
            None => out.push(b'-'),
        },
        Val::BlockerInfo(j) => match crate::timeline::blocker_info(j) {
            Some((_, who, _)) => out.extend_from_slice(who.as_bytes()),
            None => out.push(b'-'),
        },
        _ => out.push(b'-'),
    }
}

fn push_key(out: &mut Vec<u8>, k: &JobKey) {
    push_u64(out, k.ctx.into());
    out.push(b'/');
    push_u64(out, k.ring.into());
    out.push(b'/');
    push_u64(out, k.seqno);
}

fn push_fence(out: &mut Vec<u8>, f: (u64, u64)) {
    push_u64(out, f.0);
    out.push(b':');
    push_u64(out, f.1);
}

/// A blocker in one word for job lines: `ctx/ring/seqno`, `fence:CTX:SEQNO` when no
/// recorded job owns the awaited fence, `-` for none.
fn push_blocker_word(out: &mut Vec<u8>, b: &Blocker) {
    match (b.kind, b.owned) {
        (BlockKind::None, _) | (BlockKind::Queue, false) => out.push(b'-'),
        (_, true) => push_key(out, &b.key),
        (BlockKind::Dep, false) => {
            out.extend_from_slice(b"fence:");
            push_fence(out, b.fence);
        }
    }
}

/// Appends one `--jobs` line of `j` to `out` (no newline); `cell`: a scratch buffer.
pub fn text_row(out: &mut Vec<u8>, cell: &mut Vec<u8>, j: &Job, cx: &Cx<'_>) {
    let mut first = true;
    for c in COLUMNS {
        let Some(t) = c.text else { continue };
        if !first {
            out.push(b' ');
        }
        first = false;
        cell.clear();
        text_cell(cell, (c.value)(j), cx);
        // Values are ASCII but for process names, which are not text columns.
        out.resize(out.len() + t.width.saturating_sub(cell.len()), b' ');
        out.extend_from_slice(cell);
    }
}

/// One `--jobs` line of `j` (no newline), times since `origin`.
pub fn text_line(j: &Job, origin: Origin) -> String {
    let (mut out, mut cell) = (Vec::new(), Vec::new());
    text_row(&mut out, &mut cell, j, &Cx::new(origin, None));
    String::from_utf8_lossy(&out).into_owned()
}

// ------------------------------------------------------------------------- CSV

/// The per-job CSV header.
pub fn csv_header() -> Vec<String> {
    let mut h = Vec::new();
    for c in COLUMNS {
        match c.csv {
            Csv::No => {}
            Csv::One => h.push(c.name.to_string()),
            Csv::PerTag => h.extend(Tags::NAMES.iter().map(|n| snake(n))),
        }
    }
    h
}

/// Writes one column's value as a CSV cell (unquoted; the CSV writer quotes).
fn csv_cell(out: &mut Vec<u8>, v: Val<'_>, cx: &Cx<'_>) {
    match v {
        Val::Opt(None)
        | Val::At(NONE)
        | Val::Phase { v: None, .. }
        | Val::OptTags(None)
        | Val::Word(None)
        | Val::Key(None)
        | Val::Fence(None) => {}
        Val::Phase { v: Some(ns), .. } => push_u64(out, ns),
        Val::Fill(f) => {
            if f.is_finite() {
                push_fixed4(out, f);
            }
        }
        Val::Comm(pid) => {
            if let Some(c) = cx.comm(pid) {
                out.extend_from_slice(c.as_bytes());
            }
        }
        Val::Attribution(j) => {
            if let Some(s) = crate::report::describe_blocker(j) {
                out.extend_from_slice(s.as_bytes());
            }
        }
        v => text_cell(out, v, cx),
    }
}

/// Per-job CSV rows into reused buffers.
#[derive(Default)]
pub struct CsvRow {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl CsvRow {
    /// Renders `j` and hands its cells to `write`; `lead`: a first cell (a number, or
    /// empty), as the card column of several cards.
    pub fn write<R>(
        &mut self,
        j: &Job,
        cx: &Cx<'_>,
        lead: Option<Option<u64>>,
        write: impl FnOnce(&mut dyn Iterator<Item = &[u8]>) -> R,
    ) -> R {
        self.bytes.clear();
        self.ends.clear();
        if let Some(l) = lead {
            if let Some(n) = l {
                push_u64(&mut self.bytes, n);
            }
            self.ends.push(self.bytes.len());
        }
        for c in COLUMNS {
            match c.csv {
                Csv::No => {}
                Csv::One => {
                    csv_cell(&mut self.bytes, (c.value)(j), cx);
                    self.ends.push(self.bytes.len());
                }
                Csv::PerTag => {
                    let tags = match (c.value)(j) {
                        Val::Tags(t) | Val::OptTags(Some(t)) => t,
                        _ => Tags(0),
                    };
                    for i in 0..Tags::COUNT {
                        self.bytes.push(b'0' + u8::from(tags.has(1 << i)));
                        self.ends.push(self.bytes.len());
                    }
                }
            }
        }
        let bytes = &self.bytes;
        let mut start = 0;
        let mut cells = self.ends.iter().map(|&e| {
            let c = &bytes[start..e];
            start = e;
            c
        });
        write(&mut cells)
    }
}

// ------------------------------------------------------------------------- JSON

/// One column's value as JSON.
fn json_value(v: Val<'_>, cx: &Cx<'_>) -> Value {
    let opt = |v: Option<u64>| v.map_or(Value::Null, |n| json!(n));
    match v {
        Val::Int(n) => json!(n),
        Val::Opt(v) => opt(v),
        Val::At(t) => opt((t != NONE).then_some(t)),
        Val::Since(t) => opt(cx.origin.since_seen(t)),
        Val::Phase { i, v, incomplete } => opt(v.filter(|_| cx.measurable[i] && !incomplete)),
        Val::Fill(f) if f.is_finite() => json!(f as f64),
        Val::Fill(_) => Value::Null,
        Val::Tags(t) | Val::OptTags(Some(t)) => {
            json!(t.iter().map(|i| Tags::NAMES[i]).collect::<Vec<_>>())
        }
        Val::OptTags(None) => Value::Null,
        Val::Flags(f) | Val::FlagsText(f) => json!(f.to_string()),
        Val::Bit(b) => json!(b),
        Val::Word(w) => w.map_or(Value::Null, |w| json!(w)),
        Val::Key(k) => k.map_or(
            Value::Null,
            |k| json!({"ctx": k.ctx, "ring": k.ring, "seqno": k.seqno}),
        ),
        Val::Fence(f) => f.map_or(Value::Null, |f| json!([f.0, f.1])),
        Val::RingName(id) => json!(cx.ring(id)),
        Val::Comm(pid) => cx.comm(pid).map_or(Value::Null, |c| json!(c)),
        Val::BlockedBy(_) => {
            let mut s = Vec::new();
            text_cell(&mut s, v, cx);
            json!(String::from_utf8_lossy(&s))
        }
        Val::Attribution(j) => json!(crate::report::describe_blocker(j)),
        Val::BlockerInfo(j) => json!(crate::timeline::blocker_info(j)
            .map(|(kind, who, lost)| json!([kind, who, lost, j.blocker().depth]))),
    }
}

/// One job as a `--json` object.
pub fn json_job(j: &Job, cx: &Cx<'_>) -> Value {
    let mut top = Map::new();
    let mut nested: [Map<String, Value>; JSON_OBJECTS.len()] = Default::default();
    for c in COLUMNS {
        match c.json {
            Json::No => {}
            Json::Key(k) => {
                top.insert(k.to_string(), json_value((c.value)(j), cx));
            }
            Json::In(o, k) => {
                let at = JSON_OBJECTS
                    .iter()
                    .position(|(name, _)| *name == o)
                    .expect("a JSON_OBJECTS name");
                nested[at].insert(k.to_string(), json_value((c.value)(j), cx));
            }
        }
    }
    for ((name, there), m) in JSON_OBJECTS.iter().zip(nested) {
        let v = if there(j) {
            Value::Object(m)
        } else {
            Value::Null
        };
        top.insert(name.to_string(), v);
    }
    Value::Object(top)
}

// ------------------------------------------------------------------------- the page

/// The names of the page's job columns, as a JSON array (`job_columns`).
pub fn write_html_names<W: Write + ?Sized>(o: &mut W) -> io::Result<()> {
    o.write_all(b"[")?;
    for (i, c) in COLUMNS.iter().filter(|c| c.html).enumerate() {
        if i > 0 {
            o.write_all(b",")?;
        }
        crate::jsonw::string(o, c.name.as_bytes())?;
    }
    o.write_all(b"]")
}

/// One job of the page's data: an array of its page columns' values; `cell`: scratch.
pub fn write_html_row<W: Write + ?Sized>(
    o: &mut W,
    cell: &mut Vec<u8>,
    j: &Job,
    cx: &Cx<'_>,
) -> io::Result<()> {
    o.write_all(b"[")?;
    for (i, c) in COLUMNS.iter().filter(|c| c.html).enumerate() {
        if i > 0 {
            o.write_all(b",")?;
        }
        html_cell(o, cell, (c.value)(j), cx)?;
    }
    o.write_all(b"]")
}

fn html_cell<W: Write + ?Sized>(
    o: &mut W,
    cell: &mut Vec<u8>,
    v: Val<'_>,
    cx: &Cx<'_>,
) -> io::Result<()> {
    cell.clear();
    match v {
        Val::At(t) if t == NONE => return o.write_all(b"-1"),
        Val::At(t) => push_u64(cell, cx.origin.since(t)),
        Val::Since(t) if t == NONE => return o.write_all(b"-1"),
        Val::Since(t) => push_u64(cell, cx.origin.since(t)),
        Val::Int(n) | Val::Opt(Some(n)) | Val::Phase { v: Some(n), .. } => push_u64(cell, n),
        Val::Fill(f) => return crate::jsonw::num(o, f as f64),
        Val::Tags(t) | Val::OptTags(Some(t)) => push_u64(cell, t.0.into()),
        Val::Flags(f) => push_u64(cell, f.0.into()),
        Val::Bit(b) => cell.extend_from_slice(if b { b"true" } else { b"false" }),
        Val::Opt(None)
        | Val::Phase { v: None, .. }
        | Val::OptTags(None)
        | Val::Word(None)
        | Val::Key(None)
        | Val::Fence(None) => cell.extend_from_slice(b"null"),
        Val::Fence(Some(f)) => {
            cell.push(b'[');
            push_u64(cell, f.0);
            cell.push(b',');
            push_u64(cell, f.1);
            cell.push(b']');
        }
        Val::BlockerInfo(j) => match crate::timeline::blocker_info(j) {
            Some((kind, who, lost)) => {
                write!(o, "[\"{kind}\",")?;
                crate::jsonw::string(o, who.as_bytes())?;
                return write!(o, ",{lost},{}]", j.blocker().depth);
            }
            None => cell.extend_from_slice(b"null"),
        },
        Val::Comm(pid) => {
            return match cx.comm(pid) {
                Some(c) => crate::jsonw::string(o, c.as_bytes()),
                None => o.write_all(b"null"),
            }
        }
        Val::Attribution(j) => {
            return match crate::report::describe_blocker(j) {
                Some(s) => crate::jsonw::string(o, s.as_bytes()),
                None => o.write_all(b"null"),
            }
        }
        // Text: as in `--jobs`, quoted.
        v => {
            text_cell(cell, v, cx);
            return crate::jsonw::string(o, cell);
        }
    }
    o.write_all(cell)
}

// ------------------------------------------------------------------------- Parquet

/// The Parquet type of a column's values, and whether it may be null (SCHEMA.md §jobs):
/// times, phases and counts are INT64 (ns, `time_ns` since the origin, the others in the
/// trace clock), ring fill a DOUBLE, bits BOOLEAN, the rest their CSV text as a string.
fn parquet_type(v: Val<'_>) -> (Ty, bool) {
    match v {
        Val::Int(_) => (Ty::I64, false),
        Val::Opt(_) | Val::At(_) | Val::Since(_) | Val::Phase { .. } => (Ty::I64, true),
        Val::Fill(_) => (Ty::F64, true),
        Val::Bit(_) => (Ty::Bool, false),
        Val::Tags(_) | Val::Flags(_) | Val::FlagsText(_) => (Ty::Str, false),
        Val::OptTags(_)
        | Val::Word(_)
        | Val::Key(_)
        | Val::Fence(_)
        | Val::RingName(_)
        | Val::Comm(_)
        | Val::BlockedBy(_)
        | Val::Attribution(_)
        | Val::BlockerInfo(_) => (Ty::Str, true),
    }
}

/// The job columns of the `--parquet` jobs table, in [`COLUMNS`] order: every CSV column
/// (a per-tag column as one BOOLEAN column per tag), under its [`Column::parquet_name`].
/// A column's type comes from the kind of value it gives (the same for every job).
pub fn parquet_fields() -> Vec<Field> {
    let probe = Job::default();
    let mut out = Vec::new();
    for c in COLUMNS {
        match c.csv {
            Csv::No => {}
            Csv::One => {
                let (ty, nullable) = parquet_type((c.value)(&probe));
                out.push(Field {
                    name: c.parquet_name.unwrap_or(c.name).to_string(),
                    ty,
                    nullable,
                });
            }
            Csv::PerTag => out.extend(Tags::NAMES.iter().map(|n| Field::req(snake(n), Ty::Bool))),
        }
    }
    out
}

/// Writes one job's values of [`parquet_fields`] into the row being added to `t`; `cell`:
/// a scratch buffer for the string values.
pub fn parquet_row(t: &mut Rows, cell: &mut Vec<u8>, j: &Job, cx: &Cx<'_>) {
    let i64_of = |n: u64| Some(n as i64);
    for c in COLUMNS {
        if c.csv == Csv::No {
            continue;
        }
        let v = (c.value)(j);
        if c.csv == Csv::PerTag {
            let tags = match v {
                Val::Tags(t) | Val::OptTags(Some(t)) => t,
                _ => Tags(0),
            };
            for i in 0..Tags::COUNT {
                t.bool(Some(tags.has(1 << i)));
            }
            continue;
        }
        match v {
            Val::Int(n) => t.i64(i64_of(n)),
            Val::Opt(n) => t.i64(n.and_then(i64_of)),
            Val::At(n) => t.i64((n != NONE).then_some(n as i64)),
            Val::Since(n) => t.i64(cx.origin.since_seen(n).and_then(i64_of)),
            Val::Phase { v, .. } => t.i64(v.and_then(i64_of)),
            Val::Fill(f) => t.f64(f.is_finite().then_some(f as f64)),
            Val::Bit(b) => t.bool(Some(b)),
            Val::Tags(tags) if tags.is_empty() => t.str(Some(b"")),
            Val::Flags(f) | Val::FlagsText(f) if f.0 == 0 => t.str(Some(b"")),
            Val::RingName(id) => {
                let name = cx.ring(id);
                t.str((!name.is_empty()).then_some(name.as_bytes()));
            }
            v => {
                cell.clear();
                csv_cell(cell, v, cx);
                // Empty CSV cells are the unknown values; a process name is never empty.
                t.str((!cell.is_empty()).then_some(&cell[..]));
            }
        }
    }
}
