//! `--parquet DIR`: the report as tables of a Parquet dataset that many captures share
//! (SCHEMA.md): `DIR/TABLE/host=HOST/CAPTURE.parquet` for the tables captures, jobs, rings,
//! intervals, deps and processes. Hive-style partitions: DuckDB's `read_parquet(...,
//! hive_partitioning = true)`, Spark, Trino and ClickHouse read a directory of many captures
//! as one table with a `host` column.
//!
//! Jobs, their blocker edges and `--interval` rows are written while the report runs (each
//! table flushes row groups as they fill, [`crate::table`]); the per-capture, per-ring and
//! per-process tables at the end. Each card's job sink ([`DatasetJobs`], on the engine's
//! classifying thread when it has one) only copies finished jobs, with the ring and process
//! names they need, into batches; a thread of the dataset's own makes them rows (through the
//! one column table, [`crate::columns`]), and each table's thread encodes. A capture's files
//! appear all at the end (each is renamed into place once all are complete), the captures
//! row last, so a reader that joins on captures sees
//! only whole captures; reporting a capture again replaces its files.

use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use grtrace_format::{RunSummary, StreamHeader};

use crate::columns::{Cx, NameSource};
use crate::engine::{ClosedRows, Engine, IntervalSink, WorkerSink};
use crate::job::{BlockKind, Blocker, Job, JobKey, Origin, Tags, NONE, N_PHASES, PHASE_NAMES};
use crate::joiner::FxMap;
use crate::report::class_judged;
use crate::table::{ChunkTable, Field, Rows, Table, Ty, ROW_GROUP};

/// The schema's version (SCHEMA.md): raised when a column is added (always at the end of its
/// table); a column never changes meaning or goes away, so a reader of version N reads
/// every later file.
pub const SCHEMA_VERSION: i64 = 1;

/// The dataset's tables, in SCHEMA.md order.
pub const TABLES: [&str; 6] = [
    "captures",
    "jobs",
    "rings",
    "intervals",
    "deps",
    "processes",
];

/// The partition directory of a capture whose host is not known (Hive's name for null,
/// which Spark, DuckDB and Trino read as null).
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// What the command line asks of the dataset (checked: usage errors come from
/// [`DatasetPlan::new`]).
#[derive(Clone, Debug)]
pub struct DatasetPlan {
    pub dir: PathBuf,
    /// `--host`: the `host` partition (None: null).
    pub host: Option<String>,
    /// `--tag KEY=VALUE`, in the order given: `tag_KEY` columns of captures and jobs.
    pub tags: Vec<(String, String)>,
    /// `--capture-id`; None: derived from the inputs (see [`capture_id`]).
    pub capture_id: Option<String>,
}

/// Whether `s` is a name made of `[A-Za-z0-9._-]`, not empty, that is no special path.
fn plain_word(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Most `--tag`s a capture takes: each is a column of every jobs row.
pub const MAX_TAGS: usize = 16;
/// Longest `--tag` value, bytes: a jobs row group holds each value once per row before it
/// is encoded (100 tags of 1,000 bytes took 4 GB at 1M events).
pub const MAX_TAG_VALUE: usize = 256;

impl DatasetPlan {
    /// Checks `--host`, `--tag` (at most [`MAX_TAGS`], values of at most [`MAX_TAG_VALUE`]
    /// bytes) and `--capture-id`.
    pub fn new(
        dir: PathBuf,
        host: Option<String>,
        tags: &[String],
        capture_id: Option<String>,
    ) -> Result<DatasetPlan, String> {
        if dir.as_os_str().is_empty() {
            return Err("--parquet: the directory name is empty".into());
        }
        if let Some(h) = &host {
            if h == NULL_PARTITION {
                return Err(format!(
                    "--host {h}: that is the partition of captures without a host (leave --host out)"
                ));
            }
            if !plain_word(h) {
                return Err(format!(
                    "--host '{h}': give a host name of letters, digits, '.', '_' and '-'"
                ));
            }
        }
        if let Some(c) = &capture_id {
            if !plain_word(c) {
                return Err(format!(
                    "--capture-id '{c}': give letters, digits, '.', '_' and '-' (it names files)"
                ));
            }
        }
        let mut out: Vec<(String, String)> = Vec::new();
        for t in tags {
            let Some((k, v)) = t.split_once('=') else {
                return Err(format!("--tag '{t}': give KEY=VALUE"));
            };
            let ok = k.starts_with(|c: char| c.is_ascii_lowercase())
                && k.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !ok {
                return Err(format!(
                    "--tag '{t}': a key is lower-case letters, digits and '_', starting with a letter"
                ));
            }
            if out.iter().any(|(o, _)| o == k) {
                return Err(format!("--tag: the key '{k}' is given twice"));
            }
            if v.len() > MAX_TAG_VALUE {
                return Err(format!(
                    "--tag '{k}=...': a value is at most {MAX_TAG_VALUE} bytes (it is {})",
                    v.len()
                ));
            }
            out.push((k.to_string(), v.to_string()));
        }
        if out.len() > MAX_TAGS {
            // Every jobs row carries every tag: memory is rows of a row group x tags x length.
            return Err(format!(
                "--tag: at most {MAX_TAGS} tags (given {})",
                out.len()
            ));
        }
        Ok(DatasetPlan {
            dir,
            host,
            tags: out,
            capture_id,
        })
    }

    /// `host=HOST`, the partition directory of this capture's files in each table.
    pub fn partition(&self) -> String {
        format!("host={}", self.host.as_deref().unwrap_or(NULL_PARTITION))
    }

    /// Where table `table`'s file of capture `id` goes.
    pub fn file(&self, id: &str, table: &str) -> PathBuf {
        self.dir
            .join(table)
            .join(self.partition())
            .join(format!("{id}.parquet"))
    }
}

/// FNV-1a, 64 bits: a stable hash (std's hasher may change between Rust releases, and a
/// capture id must not).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
}

/// Bytes of each input file that go into its capture id.
const ID_PREFIX: u64 = 1 << 16;

/// A capture's id when none is given: a hash of what identifies the recording (every
/// stream header: card, CPU, session id, clock anchor, driver; each input file's size and
/// first 64 KiB) and the host, so that reporting the same capture again gives the same id
/// (and replaces its files). A stream on standard input whose headers carry no session id
/// and no clock anchor (an import or a simulation piped in) cannot be told apart that way:
/// its id also takes the time and process id of the run, so two such captures never share
/// an id.
pub fn capture_id(headers: &[StreamHeader], files: &[PathBuf], host: Option<&str>) -> String {
    use std::io::Read;
    let mut h = Fnv::new();
    let mut identified = false;
    for s in headers {
        h.u64(s.card.into());
        h.u64(s.cpu.into());
        h.u64(s.session_id);
        h.u64(s.anchor_realtime_ns);
        h.u64(s.anchor_clock_ns);
        h.bytes(s.driver.as_bytes());
        identified |= s.session_id != 0 || s.anchor_realtime_ns != 0;
    }
    let mut buf = Vec::new();
    for f in files {
        let Ok(file) = std::fs::File::open(f) else {
            continue;
        };
        h.u64(file.metadata().map_or(0, |m| m.len()));
        buf.clear();
        if file.take(ID_PREFIX).read_to_end(&mut buf).is_ok() && !buf.is_empty() {
            h.bytes(&buf);
            identified = true;
        }
    }
    h.bytes(host.unwrap_or("").as_bytes());
    if !identified {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        h.u64(now);
        h.u64(std::process::id().into());
    }
    format!("{:016x}", h.0)
}

/// The class of a ring from its name (SCHEMA.md, rings.class): `gfx`, `compute`, `copy`,
/// `video`, or `other` for a named ring none of these names; None for a ring without a
/// name (nothing to tell it from).
pub fn ring_class(name: &str) -> Option<&'static str> {
    // Prefixes of the ring names of amdgpu, i915/xe, virtio-gpu and grtsim, by class.
    const CLASSES: [(&str, &[&str]); 4] = [
        ("gfx", &["gfx", "rcs", "render", "3d"]),
        ("compute", &["comp", "ccs", "kfd"]),
        ("copy", &["sdma", "bcs", "copy", "blit", "dma"]),
        (
            "video",
            &[
                "vcn", "uvd", "vce", "jpeg", "vcs", "vecs", "video", "bsd", "vpe",
            ],
        ),
    ];
    if name.is_empty() {
        return None;
    }
    let n = name.to_ascii_lowercase();
    Some(
        CLASSES
            .iter()
            .find(|(_, p)| p.iter().any(|p| n.starts_with(p)))
            .map_or("other", |(c, _)| c),
    )
}

/// The dataset being written for one capture.
pub struct Dataset {
    plan: DatasetPlan,
    capture_id: String,
    /// To the renderer thread, which owns the jobs and deps tables (the cards' job sinks,
    /// [`DatasetJobs`], send it batches through clones of it).
    tx: SyncSender<ToRenderer>,
    renderer: Option<JoinHandle<io::Result<Renderer>>>,
    /// The renderer's error, for the sinks that find it gone.
    failure: Failure,
    /// None once finished.
    intervals: Option<Table>,
}

/// What the renderer thread is sent.
enum ToRenderer {
    Jobs(JobBatch),
    /// Every sink is done (or the run failed): end. Sent by the dataset, so that the thread
    /// ends whatever sinks are still around.
    Done,
}

/// The renderer's error message, once it stopped on one.
type Failure = std::sync::Arc<std::sync::Mutex<Option<String>>>;

impl Drop for Dataset {
    /// Unfinished (the run failed): the renderer ends and its tables remove their files.
    fn drop(&mut self) {
        if self.renderer.is_some() {
            let _ = self.join();
        }
    }
}

/// Jobs handed to the renderer at once.
const BATCH: usize = 4096;

/// Finished jobs (card, the run's origin, the job) and the ring and process names they need,
/// copied out of the cards' joiners: the jobs are rendered into rows on another thread, so
/// that the joining thread only copies them.
#[derive(Default)]
struct JobBatch {
    jobs: Vec<(u32, Origin, Job)>,
    rings: FxMap<(u32, u32), String>,
    comms: FxMap<(u32, u32), Option<String>>,
}

/// The names of one card's jobs in a batch.
struct CardNames<'a> {
    card: u32,
    batch: &'a JobBatch,
}

impl NameSource for CardNames<'_> {
    fn ring(&self, id: u32) -> &str {
        self.batch
            .rings
            .get(&(self.card, id))
            .map_or("", String::as_str)
    }
    fn comm(&self, pid: u32) -> Option<&str> {
        self.batch
            .comms
            .get(&(self.card, pid))
            .and_then(|c| c.as_deref())
    }
}

/// Batches of jobs that make one row group of the jobs table (at most [`ROW_GROUP`] jobs).
#[derive(Default)]
struct Chunk {
    batches: Vec<JobBatch>,
    jobs: usize,
}

/// What the jobs table's encoders need to make a chunk's rows.
#[derive(Clone)]
struct JobRows {
    capture_id: String,
    tags: Vec<String>,
    cell: Vec<u8>,
}

impl JobRows {
    /// The rows of `chunk`'s jobs, on one of the jobs table's encoder threads (several
    /// chunks at once: making a job's row costs as much as joining it).
    fn fill(&mut self, chunk: Chunk, t: &mut Rows) {
        for b in &chunk.batches {
            for (card, origin, j) in &b.jobs {
                let names = CardNames {
                    card: *card,
                    batch: b,
                };
                let cx = Cx {
                    origin: *origin,
                    joiner: None,
                    measurable: &crate::columns::ALL_PHASES,
                    names: Some(&names),
                };
                t.str(s(&self.capture_id));
                t.i64(i((*card).into()));
                crate::columns::parquet_row(t, &mut self.cell, j, &cx);
                for v in &self.tags {
                    t.str(s(v));
                }
                t.end_row();
            }
        }
    }
}

/// The thread that gathers the jobs into chunks for the jobs table (whose encoders make
/// them rows) and makes the deps table's rows (one or two for a blocked job, none for most).
struct Renderer {
    jobs: ChunkTable<Chunk>,
    chunk: Chunk,
    deps: Table,
    capture_id: String,
}

impl Renderer {
    fn batch(&mut self, b: JobBatch) -> io::Result<()> {
        let Renderer {
            deps, capture_id, ..
        } = self;
        for (card, _, j) in &b.jobs {
            let named = j.blocker();
            for bl in [&j.dep, &j.queued_behind] {
                if !bl.is_some() {
                    continue;
                }
                deps.str(s(capture_id));
                deps.i64(i((*card).into()));
                dep_row(deps, j.key, bl, std::ptr::eq(bl, named));
                deps.end_row()?;
            }
        }
        if self.chunk.jobs + b.jobs.len() > ROW_GROUP {
            self.end_chunk()?;
        }
        self.chunk.jobs += b.jobs.len();
        self.chunk.batches.push(b);
        Ok(())
    }

    /// Hands the chunk gathered so far to the jobs table.
    fn end_chunk(&mut self) -> io::Result<()> {
        if self.chunk.jobs == 0 {
            return Ok(());
        }
        self.jobs.push(std::mem::take(&mut self.chunk))
    }
}

/// A string value.
fn s(v: &str) -> Option<&[u8]> {
    Some(v.as_bytes())
}

/// A count or time as INT64.
fn i(v: u64) -> Option<i64> {
    Some(v as i64)
}

/// A time that may not have been seen ([`NONE`]).
fn at(v: u64) -> Option<i64> {
    (v != NONE).then_some(v as i64)
}

/// The columns every table starts with.
fn lead(card: bool) -> Vec<Field> {
    let mut f = vec![Field::req("capture_id", Ty::Str)];
    if card {
        f.push(Field::req("card", Ty::I64));
    }
    f
}

/// The `tag_KEY` columns.
fn tag_fields(plan: &DatasetPlan) -> Vec<Field> {
    plan.tags
        .iter()
        .map(|(k, _)| Field::req(format!("tag_{k}"), Ty::Str))
        .collect()
}

/// The jobs table's columns: capture and card, the job columns of [`COLUMNS`](crate::columns::COLUMNS),
/// the user's tags.
pub fn job_fields(plan: &DatasetPlan) -> Vec<Field> {
    let mut f = lead(true);
    f.extend(crate::columns::parquet_fields());
    f.extend(tag_fields(plan));
    f
}

/// The deps table's columns.
pub fn dep_fields() -> Vec<Field> {
    let mut f = lead(true);
    use Ty::*;
    f.extend([
        Field::req("kind", Str),
        Field::opt("ctx", I64),
        Field::opt("ring", I64),
        Field::opt("seqno", I64),
        Field::opt("named", Bool),
        Field::opt("owned", Bool),
        Field::opt("blocker_ctx", I64),
        Field::opt("blocker_ring", I64),
        Field::opt("blocker_seqno", I64),
        Field::opt("fence_context", I64),
        Field::opt("fence_seqno", I64),
        Field::req("lost_ns", I64),
        Field::opt("chain", I64),
        Field::opt("root_ctx", I64),
        Field::opt("root_ring", I64),
        Field::opt("root_seqno", I64),
        Field::opt("ahead", I64),
        Field::opt("until_ns", I64),
        Field::opt("via", Str),
        Field::opt("link", I64),
        Field::opt("from_ns", I64),
        Field::opt("to_ns", I64),
    ]);
    f
}

/// The intervals table's columns.
pub fn interval_fields() -> Vec<Field> {
    let mut f = lead(true);
    use Ty::*;
    f.extend([
        Field::req("ring", I64),
        Field::opt("ring_name", Str),
        Field::req("start_ns", I64),
        Field::req("end_ns", I64),
        Field::req("since_ns", I64),
        Field::req("busy_ns", I64),
        Field::req("jobs_ended", I64),
        Field::req("outstanding_avg", F64),
        Field::req("outstanding_max", I64),
        Field::opt("fill_max", F64),
        Field::opt("idle_host_ns", I64),
        Field::opt("idle_dep_ns", I64),
        Field::req("idle_sched_ns", I64),
        Field::req("idle_none_ns", I64),
    ]);
    f
}

/// The rings table's columns.
pub fn ring_fields() -> Vec<Field> {
    let mut f = lead(true);
    use Ty::*;
    f.extend([
        Field::req("ring", I64),
        Field::opt("name", Str),
        Field::opt("class", Str),
        Field::req("size", I64),
        Field::req("jobs", I64),
        Field::req("complete", I64),
        Field::req("incomplete", I64),
        Field::req("inferred", I64),
        Field::req("errors", I64),
    ]);
    for p in PHASE_NAMES {
        for (stat, ty) in [
            ("n", I64),
            ("min_ns", I64),
            ("avg_ns", I64),
            ("p50_ns", I64),
            ("p90_ns", I64),
            ("p99_ns", I64),
            ("max_ns", I64),
            ("share", F64),
        ] {
            f.push(Field::opt(format!("{p}_{stat}"), ty));
        }
    }
    f.extend([
        Field::opt("busy", F64),
        Field::opt("jobs_per_s", F64),
        Field::opt("outstanding_avg", F64),
        Field::opt("outstanding_max", I64),
        Field::opt("fill_avg", F64),
        Field::opt("fill_max", F64),
        Field::opt("idle_host", F64),
        Field::opt("idle_dep", F64),
        Field::opt("idle_sched", F64),
        Field::opt("idle_none", F64),
        Field::opt("gpu_wait", F64),
        Field::opt("verdict", Str),
        Field::req("switches", I64),
        Field::req("stalls", I64),
        Field::req("faults", I64),
        Field::req("resets", I64),
    ]);
    f.extend(crate::processes::class_fields());
    f
}

/// The processes table's columns.
pub fn process_fields() -> Vec<Field> {
    let mut f = lead(true);
    f.extend(crate::processes::fields());
    f
}

/// The captures table's columns.
pub fn capture_fields(plan: &DatasetPlan) -> Vec<Field> {
    let mut f = lead(false);
    use Ty::*;
    f.extend([
        Field::req("schema_version", I64),
        Field::req("grtrace_version", Str),
        Field::opt("kernel", Str),
        Field::req("drivers", Str),
        Field::req("cards", I64),
        Field::req("source", Str),
        Field::opt("source_detail", Str),
        Field::req("simulated", Bool),
        Field::req("clock", Str),
        Field::opt("first_ns", I64),
        Field::opt("last_ns", I64),
        Field::req("span_ns", I64),
        Field::opt("start_realtime_ns", I64),
        Field::req("records", I64),
        Field::req("events", I64),
        Field::req("jobs", I64),
        Field::req("complete_jobs", I64),
        Field::req("incomplete_jobs", I64),
        Field::req("lost_records", I64),
        Field::req("loss_gaps", I64),
        Field::req("input_errors", I64),
        Field::opt("first_error", Str),
        Field::req("inputs", Str),
    ]);
    f.extend(tag_fields(plan));
    f
}

/// What the end of the run tells the captures table.
pub struct RunFacts<'a> {
    pub headers: &'a [StreamHeader],
    pub sum: &'a RunSummary,
    pub input: &'a str,
}

impl Dataset {
    /// Opens the streaming tables of one capture (the others are written by
    /// [`Dataset::finish`]).
    pub fn open(plan: &DatasetPlan, capture_id: String) -> io::Result<Dataset> {
        let table = |name: &str, fields: Vec<Field>| {
            Table::create(name, plan.file(&capture_id, name), fields, Self::meta(name))
        };
        let mut rows = JobRows {
            capture_id: capture_id.clone(),
            tags: plan.tags.iter().map(|(_, v)| v.clone()).collect(),
            cell: Vec::new(),
        };
        let mut r = Renderer {
            jobs: ChunkTable::create(
                "jobs",
                plan.file(&capture_id, "jobs"),
                job_fields(plan),
                Self::meta("jobs"),
                move |chunk, t: &mut Rows| rows.fill(chunk, t),
            )?,
            chunk: Chunk::default(),
            deps: table("deps", dep_fields())?,
            capture_id: capture_id.clone(),
        };
        let intervals = table("intervals", interval_fields())?;
        // Two batches queued at most: the sinks wait beyond that (bounded memory).
        let (tx, rx) = sync_channel::<ToRenderer>(2);
        let failure = Failure::default();
        let failed = failure.clone();
        let renderer = std::thread::Builder::new()
            .name("parquet-rows".into())
            .spawn(move || -> io::Result<Renderer> {
                let mut run = || {
                    while let Ok(ToRenderer::Jobs(b)) = rx.recv() {
                        r.batch(b)?;
                    }
                    r.end_chunk()
                };
                if let Err(e) = run() {
                    if let Ok(mut f) = failed.lock() {
                        *f = Some(e.to_string());
                    }
                    return Err(e);
                }
                Ok(r)
            })?;
        Ok(Dataset {
            plan: plan.clone(),
            capture_id,
            tx,
            renderer: Some(renderer),
            failure,
            intervals: Some(intervals),
        })
    }

    /// The job sink of `card`'s engine: it may run on the engine's classifying thread.
    pub fn job_sink(&self, card: u32) -> DatasetJobs {
        DatasetJobs {
            card,
            tx: self.tx.clone(),
            batch: JobBatch::default(),
            failure: self.failure.clone(),
        }
    }

    /// Ends the renderer thread (after the batches sent) and takes its tables back.
    fn join(&mut self) -> io::Result<Renderer> {
        // Fails only if the thread is gone already (it stopped on an error).
        let _ = self.tx.send(ToRenderer::Done);
        match self.renderer.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the parquet row thread panicked")),
            None => Err(io::Error::other("the parquet row thread is gone")),
        }
    }

    /// The file's key-value metadata: the table and the schema's version.
    fn meta(table: &str) -> Vec<(String, String)> {
        vec![
            ("grtrace.table".into(), table.into()),
            ("grtrace.schema_version".into(), SCHEMA_VERSION.to_string()),
        ]
    }

    /// The capture's id.
    pub fn capture_id(&self) -> &str {
        &self.capture_id
    }

    /// Where table `name`'s file of this capture goes.
    pub fn path(&self, name: &str) -> PathBuf {
        self.plan.file(&self.capture_id, name)
    }

    fn lead(&self, t: &mut Table, card: Option<u32>) {
        t.str(s(&self.capture_id));
        if let Some(c) = card {
            t.i64(i(c.into()));
        }
    }

    fn tags(&self, t: &mut Table) {
        for (_, v) in &self.plan.tags {
            t.str(s(v));
        }
    }

    /// `--interval` rows of `card`.
    fn intervals(&mut self, card: u32, closed: ClosedRows<'_>) -> io::Result<()> {
        let Some(t) = self.intervals.as_mut() else {
            return Ok(());
        };
        let ClosedRows {
            rows,
            origin,
            rings,
            measurable: m,
        } = closed;
        for row in rows {
            t.str(s(&self.capture_id));
            t.i64(i(card.into()));
            let f = &row.figures;
            let len = row.end.saturating_sub(row.start);
            let name = rings(row.ring).map(|r| r.name).unwrap_or_default();
            t.i64(i(row.ring.into()));
            t.str((!name.is_empty()).then_some(name.as_bytes()));
            t.i64(i(row.start));
            t.i64(i(row.end));
            t.i64(i(origin.since(row.start)));
            t.i64(i(f.busy));
            t.i64(i(f.ended));
            t.f64(Some(f.out_area as f64 / len.max(1) as f64));
            t.i64(i(f.out_max.into()));
            t.f64((f.fill_max > 0.0).then_some(f.fill_max as f64));
            t.i64(m[crate::job::SUBMIT_HOST].then_some(f.idle.host as i64));
            t.i64(m[crate::job::GPU_WAIT].then_some(f.idle.dep as i64));
            t.i64(i(f.idle.sched));
            t.i64(i(f.idle_none(len)));
            t.end_row()?;
        }
        Ok(())
    }

    /// Writes the end-of-run tables (rings, processes, the critical path links into deps,
    /// captures) and moves every file into place; `engines`: each card's, finished.
    pub fn finish(mut self, engines: &[(u32, &Engine)], facts: &RunFacts<'_>) -> io::Result<()> {
        let table = |ds: &Dataset, name: &str, fields: Vec<Field>| {
            Table::create(name, ds.path(name), fields, Self::meta(name))
        };
        let mut rings = table(&self, "rings", ring_fields())?;
        let mut procs = table(&self, "processes", process_fields())?;
        let mut caps = table(&self, "captures", capture_fields(&self.plan))?;
        // The engines are finished: their sinks sent every job.
        let Renderer { jobs, mut deps, .. } = self.join()?;
        for &(card, e) in engines {
            self.ring_rows(&mut rings, card, e)?;
            self.process_rows(&mut procs, card, e)?;
            self.critical_rows(&mut deps, card, e)?;
        }
        self.capture_row(&mut caps, engines, facts)?;
        let intervals = self.intervals.take().expect("finished once");
        // Every file is written whole before any is moved into place: a table that fails
        // leaves none of the capture's new files (the closed ones go when dropped).
        let closed = std::iter::once(jobs.close())
            .chain([deps, intervals, rings, procs, caps].map(Table::close))
            .collect::<io::Result<Vec<_>>>()?;
        // Captures last: a captures row says every table of the capture is in place.
        closed
            .into_iter()
            .try_for_each(crate::table::Closed::publish)
    }

    fn ring_rows(&self, t: &mut Table, card: u32, e: &Engine) -> io::Result<()> {
        let m = e.measurable();
        let util = e.util_rows();
        for (id, g) in &e.summary.rings {
            let info = e.ring_info(*id).unwrap_or_default();
            let u = util.iter().find(|u| u.is_ring && u.id == *id);
            self.lead(t, Some(card));
            t.i64(i((*id).into()));
            t.str((!info.name.is_empty()).then_some(info.name.as_bytes()));
            t.str(ring_class(&info.name).and_then(s));
            for v in [
                info.size,
                g.jobs,
                g.complete,
                g.incomplete,
                g.inferred,
                g.errors,
            ] {
                t.i64(i(v));
            }
            for p in 0..N_PHASES {
                // Not measurable in this recording: every figure null (never 0); measurable
                // but no job had the phase: n = 0, the figures null.
                let n = m.phases[p].then_some(g.n[p]);
                let has = n.is_some_and(|n| n > 0);
                t.i64(n.map(|n| n as i64));
                for v in [
                    g.min[p],
                    g.avg(p),
                    g.quantile(p, 0.5),
                    g.quantile(p, 0.9),
                    g.quantile(p, 0.99),
                    g.max[p],
                ] {
                    t.i64(has.then_some(v as i64));
                }
                t.f64((has && m.phases[6]).then(|| g.share(p)));
            }
            let f = |v: Option<f64>| t_f64(v);
            t.f64(f(u.map(|u| u.busy)));
            t.f64(f(u.map(|u| u.jobs_per_s)));
            t.f64(f(u.map(|u| u.out_avg)));
            t.i64(u.map(|u| u.out_max.into()));
            t.f64(f(u.map(|u| u.fill_avg)));
            t.f64(f(u.map(|u| u.fill_max)));
            t.f64(f(u.map(|u| u.idle_host)));
            t.f64(f(u.map(|u| u.idle_dep)));
            t.f64(f(u.map(|u| u.idle_sched)));
            t.f64(f(u.map(|u| u.idle_none)));
            t.f64(f(u.map(|u| u.gpu_wait)));
            t.str(u.and_then(|u| u.verdict).map(|v| v.name().as_bytes()));
            for v in [info.switches, info.stalls, info.faults, info.resets] {
                t.i64(i(v));
            }
            for tag in 0..Tags::COUNT {
                let judged = class_judged(&m, g, tag).is_some();
                t.i64(judged.then_some(g.tag_jobs[tag] as i64));
                t.i64(judged.then_some(g.tag_lost[tag] as i64));
            }
            t.end_row()?;
        }
        Ok(())
    }

    fn process_rows(&self, t: &mut Table, card: u32, e: &Engine) -> io::Result<()> {
        use crate::processes::Cell;
        let m = e.measurable();
        let span = e.origin().span_to(e.joiner.stats.last_ns);
        for p in e.process_rows() {
            self.lead(t, Some(card));
            let name = e.ring_info(p.ring).map(|r| r.name).unwrap_or_default();
            for v in p.cells(&name, span, &m) {
                match v {
                    Cell::Int(v) => t.i64(v.map(|v| v as i64)),
                    Cell::Share(v) => t.f64(v),
                    Cell::Text(v) => t.str(v.map(str::as_bytes)),
                }
            }
            t.end_row()?;
        }
        Ok(())
    }

    /// `--critical-path`: the links of the window's or the slowest frame's path, as deps
    /// rows of kind `critical`.
    fn critical_rows(&self, t: &mut Table, card: u32, e: &Engine) -> io::Result<()> {
        let Some(path) = e
            .critical
            .as_ref()
            .and_then(|c| c.report().slowest.as_ref())
        else {
            return Ok(());
        };
        for (n, l) in path.links.iter().enumerate() {
            t.str(s(&self.capture_id));
            t.i64(i(card.into()));
            t.str(s("critical"));
            let k = l.job;
            t.i64(k.map(|k| k.ctx.into()));
            t.i64(k.map(|k| k.ring.into()));
            t.i64(k.map(|k| k.seqno as i64));
            for _ in 0..2 {
                t.bool(None);
            }
            for _ in 0..3 {
                t.i64(None);
            }
            let fence = matches!(
                l.via,
                crate::critical::Via::Dep | crate::critical::Via::Fence
            );
            t.i64(fence.then_some(l.fence.0 as i64));
            t.i64(fence.then_some(l.fence.1 as i64));
            t.i64(i(l.ns()));
            for _ in 0..6 {
                t.i64(None);
            }
            t.str(s(l.via.name()));
            t.i64(i(n as u64));
            t.i64(i(l.from));
            t.i64(i(l.to));
            t.end_row()?;
        }
        Ok(())
    }

    fn capture_row(
        &self,
        t: &mut Table,
        engines: &[(u32, &Engine)],
        facts: &RunFacts<'_>,
    ) -> io::Result<()> {
        let mut drivers: Vec<&str> = facts.headers.iter().map(|h| h.driver.as_str()).collect();
        drivers.sort_unstable();
        drivers.dedup();
        let import = engines.iter().find_map(|(_, e)| e.import.as_ref());
        let simulated = facts
            .headers
            .iter()
            .any(|h| h.flags & grtrace_format::abi::STREAM_SIMULATED != 0);
        let (mut records, mut events, mut first, mut last) = (0, 0, None::<u64>, None::<u64>);
        let (mut jobs, mut complete, mut incomplete, mut lost, mut gaps) = (0, 0, 0, 0, 0);
        for (_, e) in engines {
            let st = &e.joiner.stats;
            records += st.records;
            events += st.events;
            if let Some(o) = e.origin().get() {
                first = Some(first.map_or(o, |f| f.min(o)));
                last = Some(last.map_or(st.last_ns, |l| l.max(st.last_ns)));
            }
            jobs += e.summary.all.jobs;
            complete += e.summary.all.complete;
            incomplete += e.summary.all.incomplete;
            lost += st.lost_records;
            gaps += st.loss_notes;
        }
        // Wall-clock time of the first record, from the first header with a clock anchor.
        let realtime = facts
            .headers
            .iter()
            .find(|h| h.anchor_realtime_ns != 0)
            .and_then(|h| {
                let f = first?;
                Some(h.anchor_realtime_ns as i128 + f as i128 - h.anchor_clock_ns as i128)
            });
        let clock = facts.headers.first().map_or(1, |h| h.clock_id);
        self.lead(t, None);
        t.i64(Some(SCHEMA_VERSION));
        t.str(s(env!("CARGO_PKG_VERSION")));
        t.str(
            import
                .map(|im| im.kernel.as_str())
                .filter(|k| !k.is_empty())
                .and_then(s),
        );
        t.str(s(&drivers.join(",")));
        t.i64(i(engines.len() as u64));
        t.str(s(if import.is_some() {
            "import"
        } else if simulated {
            "grtsim"
        } else {
            "grtrace"
        }));
        t.str(import.map(|im| im.describe()).as_deref().and_then(s));
        t.bool(Some(simulated));
        t.str(s(clock_name(clock)));
        t.i64(first.map(|v| v as i64));
        t.i64(last.map(|v| v as i64));
        t.i64(i(match (first, last) {
            (Some(f), Some(l)) => l.saturating_sub(f),
            _ => 0,
        }));
        t.i64(realtime.and_then(|r| i64::try_from(r).ok()));
        for v in [records, events, jobs, complete, incomplete, lost, gaps] {
            t.i64(i(v));
        }
        t.i64(i(facts.sum.errors.len() as u64));
        let err = facts.sum.errors.first().map(|e| e.to_string());
        t.str(err.as_deref().and_then(s));
        t.str(s(facts.input));
        self.tags(t);
        t.end_row()
    }
}

/// A share that may be unknown (NaN) as a nullable DOUBLE.
fn t_f64(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

/// The name of a Linux clock id.
fn clock_name(id: u32) -> &'static str {
    match id {
        0 => "CLOCK_REALTIME",
        1 => "CLOCK_MONOTONIC",
        4 => "CLOCK_MONOTONIC_RAW",
        7 => "CLOCK_BOOTTIME",
        11 => "CLOCK_TAI",
        _ => "other",
    }
}

/// One blocker edge of the job `waiter` as a deps row (after capture and card).
fn dep_row(t: &mut Table, waiter: JobKey, b: &Blocker, named: bool) {
    let dep = b.kind == BlockKind::Dep;
    t.str(s(if dep { "dep" } else { "queue" }));
    t.i64(i(waiter.ctx.into()));
    t.i64(i(waiter.ring.into()));
    t.i64(i(waiter.seqno));
    t.bool(Some(named));
    t.bool(Some(b.owned));
    let owned = |v: u64| b.owned.then_some(v as i64);
    t.i64(owned(b.key.ctx.into()));
    t.i64(owned(b.key.ring.into()));
    t.i64(owned(b.key.seqno));
    t.i64(dep.then_some(b.fence.0 as i64));
    t.i64(dep.then_some(b.fence.1 as i64));
    t.i64(i(b.lost));
    let chain = dep && b.owned;
    t.i64(chain.then_some(b.depth.into()));
    t.i64(chain.then_some(b.root.ctx.into()));
    t.i64(chain.then_some(b.root.ring.into()));
    t.i64(chain.then_some(b.root.seqno as i64));
    t.i64((!dep).then_some(b.ahead.into()));
    t.i64(if dep { at(b.until) } else { None });
    t.str(None);
    t.i64(None);
    t.i64(None);
    t.i64(None);
}

/// The dataset shared by the engines of every card.
pub type Shared = Rc<RefCell<Option<Dataset>>>;

/// The job sink of one card's engine ([`Dataset::job_sink`]): it copies finished jobs, with
/// the ring and process names they need, into batches for the renderer thread, which makes
/// them rows; it may run on the engine's classifying thread.
pub struct DatasetJobs {
    card: u32,
    tx: SyncSender<ToRenderer>,
    batch: JobBatch,
    failure: Failure,
}

impl DatasetJobs {
    /// Hands the batch to the renderer.
    fn send(&mut self) -> io::Result<()> {
        if self.batch.jobs.is_empty() {
            return Ok(());
        }
        let full = std::mem::take(&mut self.batch);
        if self.tx.send(ToRenderer::Jobs(full)).is_ok() {
            return Ok(());
        }
        // The renderer stopped on an error: say which.
        let why = self.failure.lock().ok().and_then(|f| f.clone());
        Err(DatasetError::wrap(io::Error::other(why.unwrap_or_else(
            || "the parquet row thread stopped".into(),
        ))))
    }
}

impl WorkerSink for DatasetJobs {
    fn job(&mut self, j: &Job, origin: Origin, names: &dyn NameSource) -> io::Result<()> {
        let (card, b) = (self.card, &mut self.batch);
        b.rings
            .entry((card, j.key.ring))
            .or_insert_with(|| names.ring(j.key.ring).to_string());
        b.comms
            .entry((card, j.pid))
            .or_insert_with(|| names.comm(j.pid).map(str::to_string));
        b.jobs.push((card, origin, j.clone()));
        if b.jobs.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.send()
    }
}

/// A failed write of the dataset, as the engine's sinks hand it on: told apart from the
/// other outputs' errors (stdout, `--csv`) so that the message is its own (it names the
/// dataset's file).
#[derive(Debug)]
pub struct DatasetError(io::Error);

impl DatasetError {
    fn wrap(e: io::Error) -> io::Error {
        io::Error::other(DatasetError(e))
    }

    /// Whether `e` is a failed write of the dataset.
    pub fn is(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|i| i.is::<DatasetError>())
    }
}

impl std::fmt::Display for DatasetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DatasetError {}

/// The `--interval` sink of one card's engine: rows into the dataset, and on to the text
/// rows when they are printed too.
pub struct DatasetIntervals {
    pub card: u32,
    pub ds: Shared,
    pub also: Option<Rc<RefCell<dyn IntervalSink>>>,
}

impl IntervalSink for DatasetIntervals {
    fn rows(&mut self, card: Option<u32>, closed: ClosedRows<'_>) -> io::Result<()> {
        if let Some(d) = self.ds.borrow_mut().as_mut() {
            d.intervals(self.card, closed).map_err(DatasetError::wrap)?;
        }
        match &self.also {
            Some(a) => a.borrow_mut().rows(card, closed),
            None => Ok(()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &self.also {
            Some(a) => a.borrow_mut().flush(),
            None => Ok(()),
        }
    }
}

/// The directory a dataset table's files of `host` are in (tests, scripts).
pub fn partition_dir(dir: &Path, table: &str, host: Option<&str>) -> PathBuf {
    dir.join(table)
        .join(format!("host={}", host.unwrap_or(NULL_PARTITION)))
}
