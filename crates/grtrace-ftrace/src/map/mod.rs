//! The mapping of IMPORT.md: kernel GPU tracepoints in, grtrace events out.
//!
//! A [`Mapper`] is built from the event formats of one trace (trace.dat or tracefs); it
//! resolves each format to its layout in the one table of tracepoint variants
//! ([`Variant::TABLE`], variants.rs), reads the fields that layout names once, then turns
//! every raw event record into zero or more grtrace records through a [`Sink`]. A format
//! of a known tracepoint that fits no variant is counted and named, never mapped. The
//! rows of each driver are in its own file (drm_sched.rs, dma_fence.rs, amdgpu.rs, i915.rs,
//! xe.rs, msm.rs, v3d.rs, virtio_gpu.rs; lima's naming of scheduler jobs is amdgpu's, in
//! drm_sched.rs); this file holds what they share: rings, the inferred start of §3, waits.
//! It pairs events by kernel pointers and fence `context:seqno` inside; pointers never
//! reach a record. Jobs are named `<ctx, ring, seqno>`; rings are numbered per (device, ring
//! name) so two GPUs never share a ring.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::io;

use grtrace_format::abi::{eflag, lost_source, ring_flag, RING_UNIT_BYTES, RING_UNIT_SLOTS};
use grtrace_format::{Body, ClockSync, Endian, EventBody, Lost, RingNote};
use grtrace_format::{Card, Event};

use crate::format::{read_str, read_uint, EventFormat, Loc};

mod amdgpu;
mod dma_fence;
mod drm_sched;
mod i915;
mod msm;
mod v3d;
mod variants;
mod virtio_gpu;
mod xe;

pub use amdgpu::amdgpu_is_vm_fault;
pub use variants::Variant;

/// Ring id used by records that name no ring (fence events of fences no job owns).
pub const NO_RING: u32 = u32::MAX;

/// Where mapped records go.
pub trait Sink {
    /// One record, stamped with the CPU and task it happened on.
    fn record(&mut self, cpu: u32, pid: u32, time_ns: u64, body: &Body<'_>) -> io::Result<()>;

    /// The capture's first event (of any kind) is at `t`: told before any record, when the
    /// source knows it (IMPORT.md §1: the streams' time origin).
    fn capture_start(&mut self, _t: u64) {}

    /// Task `pid` is named `comm` by the source (a text line's task column), told before
    /// its first record; the first name told wins.
    fn task_name(&mut self, _pid: u32, _comm: &str) {}
}

/// FxHash for the pairing maps: keys are integers, one lookup per event.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);
impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// What a tracepoint becomes (one row of IMPORT.md each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// 6.12 `gpu_scheduler:drm_sched_job`: QUEUE.
    SchedQueue612,
    /// 6.12 `drm_run_job`: COMMIT + SUBMIT, START inferred.
    SchedRun612,
    /// 6.12 `drm_sched_process_job`: END (job found by its finished-fence pointer).
    SchedDone612,
    /// 6.12 `drm_sched_job_wait_dep`: SYNC_ENTER (host) on the awaited fence.
    SchedWaitDep612,
    /// 6.17+ `drm_sched_job_queue`.
    SchedQueue,
    /// 6.17+ `drm_sched_job_run`.
    SchedRun,
    /// 6.17+ `drm_sched_job_done`.
    SchedDone,
    /// 6.17+ `drm_sched_job_add_dep`: remembered, no record (a dependency, not a wait).
    SchedAddDep,
    /// 6.17+ `drm_sched_job_unschedulable`: SYNC_ENTER (host) on the awaited fence.
    SchedUnschedulable,
    /// `drm_sched_job_hw_fence` (the upstream series, kernel/upstream/): SUBMIT, measured;
    /// names the hardware fence, whose signal is the job's IRQ.
    SchedHwFence,
    /// `drm_sched_job_timeout` (the upstream series): TIMEOUT.
    SchedTimeout,
    /// `dma_fence:dma_fence_signaled`: SIGNAL, and SYNC_EXIT of jobs waiting for it.
    FenceSignaled,
    /// `dma_fence_wait_start`: WAIT.
    FenceWaitStart,
    /// `dma_fence_wait_end`: WAIT_END.
    FenceWaitEnd,
    /// `dma_fence_init/emit/enable_signal/destroy`: no grtrace event (counted).
    FenceNoRecord,
    /// `virtio_gpu:virtio_gpu_cmd_queue`: COMMIT + SUBMIT on the control queue.
    VirtioQueue,
    /// `virtio_gpu_cmd_response`: END of the command with that seqno.
    VirtioResponse,
    /// `virtio_gpu_notify` (the upstream series): SUBMIT, measured, of the commands queued
    /// up to its seqno.
    VirtioNotify,
    /// `virtio_gpu_ctrl_ack` (the upstream series): IRQ of the control queue.
    VirtioAck,
    /// `virtio_gpu_cmd_alloc` (the upstream series): no record yet (counted): a command
    /// has no seqno until it is queued.
    VirtioAlloc,
    /// `amdgpu:amdgpu_cs_ioctl`: names the job (fence context:seqno) for 6.12 kernels.
    AmdgpuCs,
    /// `amdgpu_sched_run_job`: nothing new after `drm_run_job` (counted).
    AmdgpuRunJob,
    /// `amdgpu_ib_pipe_sync`: SYNC_ENTER (GPU side) on the awaited fence.
    AmdgpuPipeSync,
    /// `amdgpu_vm_flush`: CTX_SWITCH to the VM id on that ring.
    AmdgpuVmFlush,
    /// `amdgpu_iv`: VM_FAULT for the page-fault interrupt sources.
    AmdgpuIv,
    /// `lima:lima_task_submit`: names the next queued job by its finished fence (as
    /// `amdgpu_cs_ioctl`).
    LimaSubmit,
    /// `lima_task_run`: nothing new after `drm_run_job` (counted).
    LimaRun,
    /// `i915:i915_request_queue`: QUEUE (no caller in 6.12).
    I915Queue,
    /// `i915_request_add`: QUEUE; without the low-level events also the hand-off.
    I915Add,
    /// `i915_request_submit` (low-level): COMMIT.
    I915Submit,
    /// `i915_request_in` (low-level): SUBMIT + START per §3, first time only.
    I915In,
    /// `i915_request_out` (low-level): END when completed.
    I915Out,
    /// `i915_request_retire`: END of a job still open.
    I915Retire,
    /// `i915_request_wait_begin`: WAIT.
    I915WaitBegin,
    /// `i915_request_wait_end`: WAIT_END.
    I915WaitEnd,
    /// `i915_request_execute`, `_guc_submit`: no record (counted).
    I915NoRecord,
    /// `xe:xe_exec_queue_create`: CTX_CREATE, names the queue's class.
    XeQueueCreate,
    /// `xe_exec_queue_destroy`: CTX_DESTROY.
    XeQueueDestroy,
    /// `xe_exec_queue_reset`: RESET of the queue.
    XeQueueReset,
    /// `xe_hw_fence_create`: fence pointer -> (context, seqno), no record.
    XeFenceCreate,
    /// `xe_sched_job_exec`: QUEUE.
    XeJobExec,
    /// `xe_sched_job_run`: COMMIT + SUBMIT + START per §3.
    XeJobRun,
    /// `xe_hw_fence_signal`: END of the job with that fence.
    XeFenceSignal,
    /// `xe_sched_job_timedout`: TIMEOUT.
    XeJobTimedout,
    /// `xe_vma_pagefault`: VM_FAULT.
    XeVmaPagefault,
    /// Other xe events: no record (counted).
    XeNoRecord,
    /// `drm_msm_gpu:msm_gpu_submit_flush`: COMMIT + SUBMIT and a GPU clock sync point.
    MsmFlush,
    /// `msm_gpu_submit_retired`: START and END at the hardware's own times.
    MsmRetired,
    /// `msm_gpu_submit`: no record (no caller in 6.12; counted).
    MsmNoRecord,
    /// `v3d:v3d_submit_cl` (bin or render by `is_render`): hand-off.
    V3dSubmitCl,
    /// `v3d_submit_tfu` / `v3d_submit_csd`: hand-off on that queue (index into the queue
    /// names: 2 tfu, 3 csd).
    V3dSubmit(u8),
    /// `v3d_{bcl,rcl,tfu,csd}_irq` (queue 0..3): END.
    V3dIrq(u8),
    /// `v3d_reset_begin`: RESET of the device.
    V3dReset,
    /// Other v3d events: no record (counted).
    V3dNoRecord,
}

impl Kind {
    /// The tracepoints the recorder enables (`system/event`), in table order, each once.
    pub fn tracepoints() -> impl Iterator<Item = (&'static str, &'static str)> {
        Variant::TABLE
            .iter()
            .enumerate()
            .filter(|(i, v)| {
                !Variant::TABLE[..*i]
                    .iter()
                    .any(|w| w.system == v.system && w.event == v.event)
            })
            .map(|(_, v)| (v.system, v.event))
    }
}

/// Counts of one tracepoint in the input.
#[derive(Clone, Debug)]
pub struct Seen {
    /// Subsystem (`gpu_scheduler`).
    pub system: String,
    /// Event name (`drm_run_job`).
    pub name: String,
    /// None: an event this importer does not map (or whose format lacks a needed field).
    pub kind: Option<Kind>,
    /// Why a known tracepoint is not mapped (its format lacks a field), if so.
    pub unusable: Option<String>,
    /// Events of it in the input.
    pub count: u64,
}

/// Most fields a mapped tracepoint needs.
const MAX_FIELDS: usize = 8;

#[derive(Clone, Copy)]
struct Handler {
    kind: Kind,
    fields: [Loc; MAX_FIELDS],
    min_len: usize,
    seen: usize,
}

/// A record whose bytes do not match its format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapError(pub String);

impl std::fmt::Display for MapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
struct Key {
    ctx: u32,
    ring: u32,
    seqno: u64,
}

/// The key of records about no job of the trace (IMPORT.md §2).
const NO_JOB: Key = Key {
    ctx: 0,
    ring: NO_RING,
    seqno: 0,
};

#[derive(Clone, Copy, Debug)]
struct Pending {
    key: Key,
    run: u64,
    started: bool,
    /// An i915 request of a virtual engine: switched away from unfinished, it goes back to
    /// the virtual engine, which may give it to another of its engines.
    virt: bool,
}

struct Ring {
    dev: Vec<u8>,
    name: Vec<u8>,
    /// Announced `VIRTUAL` (an i915 virtual engine).
    virt: bool,
    /// An i915 engine: its requests end at their fence's signal.
    ends_at_signal: bool,
    /// Jobs handed to the driver and not done, in hand-off order.
    order: VecDeque<Pending>,
    last_done: u64,
    /// Its SUBMITs come from events of their own (`virtio_gpu_notify`,
    /// `drm_sched_job_hw_fence`), seen on this ring: a job is committed at its run or
    /// queue event and handed off at those.
    own_submits: bool,
}

/// Totals for the summary and NOTE_STREAM_INFO.
#[derive(Clone, Debug, Default)]
pub struct MapStats {
    /// Tracepoint events read.
    pub events_in: u64,
    /// Records written.
    pub records_out: u64,
    /// Events the kernel said it lost.
    pub lost_events: u64,
    /// Lost-events markers whose count the kernel did not store.
    pub lost_unknown: u64,
    /// Jobs handed to a driver (run_job and its kin).
    pub jobs_started: u64,
    /// Job starts inferred where the capture has none.
    pub inferred_starts: u64,
    /// Events with an id no format of the input describes (skipped).
    pub unknown_ids: u64,
    /// DRM scheduler events of a driver's queues skipped because the driver's own job
    /// tracepoints name those jobs (xe, msm, v3d).
    pub sched_duplicates: u64,
    /// Tracepoint events read per CPU (index = CPU).
    pub events_by_cpu: Vec<u64>,
    /// i915 requests ended at `i915_request_retire` (no fence signal or `out` came first):
    /// their END is the CPU retiring them, later than the GPU finished.
    pub retire_ends: u64,
    /// Times of the first and last input event of any kind (GPU or not) and loss marker
    /// (u64::MAX and 0 before any): the capture's span, see [`MapStats::span`].
    pub first_ns: u64,
    /// See `first_ns`.
    pub last_ns: u64,
}

impl MapStats {
    /// A stats block before any event.
    fn new() -> MapStats {
        MapStats {
            first_ns: u64::MAX,
            ..Default::default()
        }
    }

    #[inline(always)]
    fn saw(&mut self, t: u64) {
        self.first_ns = self.first_ns.min(t);
        self.last_ns = self.last_ns.max(t);
    }

    /// The capture's first and last event times, once any event came.
    pub fn span(&self) -> Option<(u64, u64)> {
        (self.first_ns <= self.last_ns).then_some((self.first_ns, self.last_ns))
    }
}

/// Heuristic engine class from a ring name (`gfx_0.0.0`, `comp_1.0.0`, `sdma0`, `vcn_dec`,
/// `control`, `rcs0`, ...); 0 when it says nothing.
pub fn engine_class(name: &[u8]) -> u32 {
    let n = String::from_utf8_lossy(name).to_ascii_lowercase();
    let has = |s: &str| n.contains(s);
    if has("gfx")
        || has("rcs")
        || has("render")
        || n.starts_with("v3d_render")
        || has("gp")
        || has("pp")
    {
        1
    } else if has("comp") || has("ccs") || has("csd") {
        2
    } else if has("sdma") || has("bcs") || has("copy") || has("tfu") {
        3
    } else if has("dec") || has("vcs") || has("uvd") {
        4
    } else if has("enc") || has("vecs") || has("vce") {
        5
    } else if has("control") || has("kiq") || has("mes") {
        6
    } else {
        0
    }
}

const EIO: u32 = 5;
/// errno of a timed-out job (TIMEOUT's error).
const ETIME: u32 = 62;

/// Whether `name` is `prefix` followed by one or more digits.
fn numbered(name: &[u8], prefix: &[u8]) -> bool {
    name.len() > prefix.len()
        && name.starts_with(prefix)
        && name[prefix.len()..].iter().all(u8::is_ascii_digit)
}

fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = Fx::default();
    h.write(b);
    h.finish()
}

/// What a capture measures beyond what every source does ([`Mapper::measures`]): the
/// phases `unmeasured` leaves out of its list (IMPORT.md §1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measures {
    /// The jobs' dependency waits ([`Mapper::sees_dependencies`]).
    pub gpu_wait: bool,
    /// COMMIT to SUBMIT: every job has a SUBMIT event of its own.
    pub submit_host: bool,
    /// IRQ to END: every job's completion interrupt has an event.
    pub complete: bool,
}

/// Drivers whose own job tracepoints are in the trace: the DRM scheduler's events of their
/// queues would name the same jobs a second time (IMPORT.md 5.8-5.10).
#[derive(Clone, Copy, Debug, Default)]
struct DriverRows {
    xe: bool,
    msm: bool,
    v3d: bool,
    /// i915's low-level request tracepoints (`i915_request_in`) are in the trace.
    i915_low_level: bool,
    /// DRM scheduler events that hand jobs off are in the trace: amdgpu's own events then
    /// only name the scheduler's jobs (IMPORT.md 5.5).
    sched: bool,
}

/// The mapper: formats in, grtrace records out.
pub struct Mapper {
    endian: Endian,
    by_id: Vec<u32>,
    handlers: Vec<Handler>,
    seen: Vec<Seen>,
    rings: Vec<Ring>,
    /// Entity pointer (6.12) -> small context id.
    entities: FxMap<u64, u32>,
    /// 6.12 finished-fence pointer -> (job, job id, its finished fence's context when a
    /// driver event named it, else 0).
    fence_ptr: FxMap<u64, (Key, u64, u64)>,
    /// (ring, 6.12 job id) -> job, from queue to done (wait_dep, pipe_sync).
    job_ids: FxMap<(u32, u64), Key>,
    /// amdgpu (ring, job id) -> (fence context, seqno), from cs_ioctl to the queue event.
    fence_names: FxMap<(u32, u64), (u64, u64)>,
    /// Finished fence (context, seqno) -> job, queue to done (6.17+ and named 6.12 jobs).
    fences: FxMap<(u64, u64), Key>,
    /// Recently done fences for the SIGNAL that follows the done event.
    recent: VecDeque<((u64, u64), Key)>,
    /// Awaited fence -> jobs waiting for it (host or GPU side).
    waits: FxMap<(u64, u64), Vec<(Key, bool)>>,
    /// virtio (ring, seqno) -> (ctx, flags), queue to response.
    virtio: FxMap<(u32, u64), (u32, u16)>,
    /// virtio device index -> ring id of its control queue.
    vq_rings: Vec<(u64, u32)>,
    /// Jobs committed on a ring with [`Ring::own_submits`], not handed off yet: their
    /// COMMIT's flags and START arguments.
    committed: FxMap<Key, (u16, (u64, u64))>,
    /// The virtio commands among them, by (ring, seqno): a kick hands off those up to its
    /// seqno without a scan of every committed job.
    unkicked: BTreeMap<(u32, u64), Key>,
    /// Hardware fence (context, seqno) -> job, from `drm_sched_job_hw_fence` to its signal
    /// or the job's done event (without dma_fence events there is no signal).
    hw_fences: FxMap<(u64, u64), Key>,
    /// The other way round, to forget a job's hardware fence when it is done.
    hw_fence_of: FxMap<Key, (u64, u64)>,
    /// Last time written per CPU: inferred records never go back in a stream.
    cpu_last: Vec<u64>,
    drivers: DriverRows,
    /// Driver rings by (driver tag, device, queue), so naming them costs nothing per event.
    drv_rings: FxMap<(u8, u64, u64), u32>,
    /// xe (device, GuC id) -> engine class of the exec queue.
    xe_class: FxMap<(u64, u64), u32>,
    /// xe hardware fence pointer -> (context, seqno), create to signal.
    xe_fence: FxMap<u64, (u64, u64)>,
    /// xe job fence pointer -> job, exec to signal.
    xe_jobs: FxMap<u64, Key>,
    /// msm ring id -> (CPU time, always-on ticks) of its last flush.
    msm_sync: FxMap<u64, (u64, u64)>,
    /// The job each CPU last handed to a driver through the scheduler (by CPU): a 6.17+
    /// `amdgpu_ib_pipe_sync` (no job id) names the job being run there. Kept only when
    /// such a pipe sync format is in the trace.
    last_run: Vec<Option<Key>>,
    pipe_sync_by_run: bool,
    /// GPU-side waits of jobs not started yet (see [`Mapper::gpu_wait`]).
    deferred: FxMap<Key, Vec<(u64, u64)>>,
    /// Totals for the summary and NOTE_STREAM_INFO.
    pub stats: MapStats,
}

/// Fence signalled records kept for a late SIGNAL lookup.
const RECENT_DONE: usize = 4096;

impl Mapper {
    /// A mapper for the events described by `formats` (every format of the trace, mapped or
    /// not, so unknown events are named in the summary).
    pub fn new(endian: Endian, formats: &[EventFormat]) -> Mapper {
        let mut m = Mapper {
            endian,
            by_id: Vec::new(),
            handlers: Vec::new(),
            seen: Vec::new(),
            rings: Vec::new(),
            entities: FxMap::default(),
            fence_ptr: FxMap::default(),
            job_ids: FxMap::default(),
            fence_names: FxMap::default(),
            fences: FxMap::default(),
            recent: VecDeque::new(),
            waits: FxMap::default(),
            virtio: FxMap::default(),
            vq_rings: Vec::new(),
            committed: FxMap::default(),
            unkicked: BTreeMap::new(),
            hw_fences: FxMap::default(),
            hw_fence_of: FxMap::default(),
            cpu_last: Vec::new(),
            drivers: DriverRows::default(),
            drv_rings: FxMap::default(),
            xe_class: FxMap::default(),
            xe_fence: FxMap::default(),
            xe_jobs: FxMap::default(),
            msm_sync: FxMap::default(),
            last_run: Vec::new(),
            pipe_sync_by_run: false,
            deferred: FxMap::default(),
            stats: MapStats::new(),
        };
        for f in formats {
            m.add_format(f);
        }
        m
    }

    /// Registers one event format.
    pub fn add_format(&mut self, f: &EventFormat) {
        let id = f.id as usize;
        if self.by_id.len() <= id {
            self.by_id.resize(id + 1, u32::MAX);
        }
        let mut seen = Seen {
            system: f.system.clone(),
            name: f.name.clone(),
            kind: None,
            unusable: None,
            count: 0,
        };
        let seen_idx = self.seen.len();
        let mut hidx = u32::MAX;
        match Variant::of(f) {
            Ok(None) => {}
            Err(why) => seen.unusable = Some(why),
            Ok(Some(v)) => {
                let kind = v.kind;
                let mut fields = [Loc::default(); MAX_FIELDS];
                for (i, n) in v.fields.iter().enumerate() {
                    // `name?` (a field some kernels lack) and `-` (a slot this layout does
                    // not fill): the location stays empty (size 0).
                    if let Some(fl) = f.field(n.strip_suffix('?').unwrap_or(n)) {
                        fields[i] = fl.loc();
                    }
                }
                let min_len = fields[..v.fields.len()]
                    .iter()
                    .map(|x| x.offset + x.size)
                    .max()
                    .unwrap_or(8)
                    .max(8);
                seen.kind = Some(kind);
                if kind == Kind::AmdgpuPipeSync && f.field("id").is_none() {
                    self.pipe_sync_by_run = true;
                }
                match kind {
                    Kind::XeJobRun => self.drivers.xe = true,
                    Kind::MsmRetired => self.drivers.msm = true,
                    Kind::V3dSubmitCl => self.drivers.v3d = true,
                    Kind::I915In => self.drivers.i915_low_level = true,
                    Kind::SchedQueue612 | Kind::SchedRun612 | Kind::SchedQueue | Kind::SchedRun => {
                        self.drivers.sched = true
                    }
                    _ => {}
                }
                hidx = self.handlers.len() as u32;
                self.handlers.push(Handler {
                    kind,
                    fields,
                    min_len,
                    seen: seen_idx,
                });
            }
        }
        self.seen.push(seen);
        // Unmapped events still count by id.
        self.by_id[id] = if hidx != u32::MAX {
            hidx
        } else {
            (1 << 31) | seen_idx as u32
        };
    }

    /// Every event type of the input with its count (mapped or not).
    pub fn seen(&self) -> &[Seen] {
        &self.seen
    }

    /// The driver names of the mapped systems whose formats the trace carries (for the
    /// stream header before the events are read): a trace.dat carries the formats of the
    /// events it recorded, tracefs those of every event the kernel has.
    pub fn drivers(&self) -> String {
        self.driver_names(false)
    }

    /// The driver names of the mapped systems that had events in the capture (what the
    /// stream header says once the import is over, IMPORT.md §1): `i915`,
    /// `virtio_gpu+amdgpu`; `drm_sched` when only scheduler (and fence) events came,
    /// `dma_fence` when only fence events came, `none` when no GPU event came.
    pub fn drivers_seen(&self) -> String {
        self.driver_names(true)
    }

    /// Whether the capture can show its jobs' dependency waits (IMPORT.md §1, `unmeasured`):
    /// it carries a dependency tracepoint (`drm_sched_job_wait_dep`, `_unschedulable`,
    /// `amdgpu_ib_pipe_sync`; with `any_sched`, any scheduler event stands for them: text
    /// shows only the events that happened), and not all its jobs come from i915, xe, msm
    /// or v3d, whose waits no tracepoint names (i915 has no scheduler events; the scheduler
    /// events of xe, msm and v3d queues are skipped as duplicates, their job ids unknown to
    /// the drivers' own events).
    pub fn sees_dependencies(&self, any_sched: bool) -> bool {
        let has = |k: Kind| self.handlers.iter().any(|h| h.kind == k);
        let dep_events = has(Kind::SchedWaitDep612)
            || has(Kind::SchedUnschedulable)
            || has(Kind::AmdgpuPipeSync)
            || (any_sched && self.seen.iter().any(|s| s.system == "gpu_scheduler"));
        // A capture of such a driver alone (a scheduler of another GPU in the same trace
        // is taken to be amdgpu's or lima's, whose events say so).
        let system = |names: &[&str]| {
            self.seen
                .iter()
                .any(|s| s.kind.is_some() && names.contains(&s.system.as_str()))
        };
        let only_own_rows =
            system(&["i915", "xe", "drm_msm_gpu", "v3d"]) && !system(&["amdgpu", "lima"]);
        dep_events && !only_own_rows
    }

    /// What the capture measures of its jobs beyond what every source does (IMPORT.md §1,
    /// `unmeasured`); `any`: as for [`Mapper::sees_dependencies`], the events that happened
    /// (text) rather than the formats. `submit_host` (COMMIT to SUBMIT) and `complete` (IRQ
    /// to END) are measured only on a kernel with the upstream series (kernel/upstream/),
    /// whose events give every job of the capture its own SUBMIT and IRQ: virtio-gpu
    /// commands (`virtio_gpu_notify`, `virtio_gpu_ctrl_ack`) and scheduler jobs
    /// (`drm_sched_job_hw_fence`, whose hardware fence's `dma_fence_signaled` is the IRQ),
    /// and no jobs of drivers whose own events hand them off (i915, xe, msm, v3d; the 6.12
    /// scheduler names).
    pub fn measures(&self, any: bool) -> Measures {
        let has = |k: Kind| {
            if any {
                self.seen.iter().any(|s| s.kind == Some(k))
            } else {
                self.handlers.iter().any(|h| h.kind == k)
            }
        };
        let own_jobs = self.seen.iter().any(|s| {
            s.kind.is_some()
                && (matches!(s.system.as_str(), "i915" | "xe" | "drm_msm_gpu" | "v3d")
                    || s.kind == Some(Kind::SchedRun612))
        });
        let (virtio, sched) = (has(Kind::VirtioQueue), has(Kind::SchedRun));
        let jobs = (virtio || sched) && !own_jobs;
        let submits = (!virtio || has(Kind::VirtioNotify)) && (!sched || has(Kind::SchedHwFence));
        let irqs = (!virtio || has(Kind::VirtioAck))
            && (!sched || (has(Kind::SchedHwFence) && has(Kind::FenceSignaled)));
        Measures {
            gpu_wait: self.sees_dependencies(any),
            submit_host: jobs && submits,
            complete: jobs && irqs,
        }
    }

    fn driver_names(&self, seen_only: bool) -> String {
        let mut names: Vec<&str> = Vec::new();
        let present = |s: &&Seen| s.kind.is_some() && (!seen_only || s.count > 0);
        for s in self.seen.iter().filter(present) {
            if !matches!(s.system.as_str(), "gpu_scheduler" | "dma_fence")
                && !names.contains(&s.system.as_str())
            {
                names.push(&s.system);
            }
        }
        if names.is_empty() {
            let has = |sys: &str| self.seen.iter().filter(present).any(|s| s.system == sys);
            return if !seen_only || has("gpu_scheduler") {
                "drm_sched".into()
            } else if has("dma_fence") {
                "dma_fence".into()
            } else {
                "none".into()
            };
        }
        // The header's driver field holds 32 bytes: whole names only, then "+more".
        let mut out = String::new();
        for (i, n) in names.iter().enumerate() {
            let sep = if out.is_empty() { "" } else { "+" };
            let room = if i + 1 == names.len() {
                32
            } else {
                32 - "+more".len()
            };
            if out.len() + sep.len() + n.len() > room {
                out.push_str("+more");
                break;
            }
            out.push_str(sep);
            out.push_str(n);
        }
        out
    }

    fn stamp_time(&mut self, cpu: u32, t: u64) -> u64 {
        let c = cpu as usize;
        if self.cpu_last.len() <= c {
            self.cpu_last.resize(c + 1, 0);
        }
        let t = t.max(self.cpu_last[c]);
        self.cpu_last[c] = t;
        t
    }

    /// Hands `body` to `sink` at `at`, its time kept from going back on that CPU
    /// (stamp_time), and counts it.
    #[inline]
    fn record<S: Sink>(&mut self, sink: &mut S, at: At, body: &Body<'_>) -> io::Result<()> {
        let at = At {
            t: self.stamp_time(at.cpu, at.t),
            ..at
        };
        self.stats.records_out += 1;
        sink.record(at.cpu, at.pid, at.t, body)
    }

    fn emit<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        code: Event,
        flags: u16,
        k: Key,
        a: (u64, u64, u32, u32),
    ) -> io::Result<()> {
        self.record(
            sink,
            at,
            &Body::Event(EventBody {
                code,
                flags,
                ctx: k.ctx,
                ring: k.ring,
                seqno: k.seqno,
                arg0: a.0,
                arg1: a.1,
                arg2: a.2,
                arg3: a.3,
            }),
        )
    }

    /// A GPU page fault at `addr`, of no job, at event `f`: VM_FAULT with the driver's
    /// fault `status` and the faulting address `space` as the driver names it (amdgpu:
    /// `vmid << 16 | pasid`; xe: the asid).
    fn vm_fault<S: Sink>(
        &mut self,
        sink: &mut S,
        f: &Ev<'_>,
        addr: u64,
        status: u32,
        space: u32,
    ) -> io::Result<()> {
        let args = (addr, 0, status, space);
        self.emit(sink, f.at, Event::VM_FAULT, 0, NO_JOB, args)
    }

    /// Ring id of (device, ring name), announcing a new ring with NOTE_RING (no ring flags)
    /// at `at`, on no task (the note is the ring's, not the event's).
    fn ring<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        dev: &[u8],
        name: &[u8],
        unit: u32,
    ) -> io::Result<u32> {
        self.ring_flagged(sink, at, dev, name, unit, 0)
    }

    /// [`Mapper::ring`] with `ring_flag` bits for its NOTE_RING (IMPORT.md §2).
    fn ring_flagged<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        dev: &[u8],
        name: &[u8],
        unit: u32,
        flags: u32,
    ) -> io::Result<u32> {
        if let Some(i) = self
            .rings
            .iter()
            .position(|r| r.name == name && r.dev == dev)
        {
            return Ok(i as u32);
        }
        let id = self.rings.len() as u32;
        self.rings.push(Ring {
            dev: dev.to_vec(),
            name: name.to_vec(),
            virt: flags & ring_flag::VIRTUAL != 0,
            ends_at_signal: false,
            order: VecDeque::new(),
            last_done: 0,
            own_submits: false,
        });
        let mut label = Vec::with_capacity(dev.len() + name.len() + 1);
        if !dev.is_empty() {
            label.extend_from_slice(dev);
            label.push(b'/');
        }
        label.extend_from_slice(name);
        // The NOTE_RING name holds 32 bytes: keep the end (ring names differ at the end).
        let keep = &label[label.len().saturating_sub(32)..];
        self.record(
            sink,
            At { pid: 0, ..at },
            &Body::Ring(RingNote {
                ring: id,
                engine_class: engine_class(name),
                size: 0,
                unit,
                flags,
                name: keep,
            }),
        )?;
        Ok(id)
    }

    /// Events were lost on `cpu` before time `t` (`count` None: the kernel did not say how
    /// many). Job pairing across the gap cannot be trusted: ring orders are reset.
    pub fn lost<S: Sink>(
        &mut self,
        sink: &mut S,
        cpu: u32,
        count: Option<u64>,
        first_ns: u64,
        t: u64,
    ) -> io::Result<()> {
        match count {
            Some(n) => self.stats.lost_events += n,
            None => self.stats.lost_unknown += 1,
        }
        self.stats.saw(t);
        for r in &mut self.rings {
            r.order.clear();
        }
        self.deferred.clear();
        let t = self.stamp_time(cpu, t);
        self.stats.records_out += 1;
        sink.record(
            cpu,
            0,
            t,
            &Body::Lost(Lost {
                cpu,
                source: lost_source::KERNEL,
                count: count.unwrap_or(0),
                first_ns: first_ns.min(t),
                last_ns: t,
            }),
        )
    }

    /// A job was handed to the driver at `at`: COMMIT and SUBMIT now; START now if the ring
    /// is idle, else when the job ahead is done.
    fn run<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        k: Key,
        a0: u64,
        a1: u64,
        flags: u16,
    ) -> io::Result<()> {
        self.emit(sink, at, Event::COMMIT, flags, k, (0, 0, 0, 0))?;
        self.hand_off(sink, at, k, a0, a1, flags)
    }

    /// A job was handed to the driver at `at` on a ring whose SUBMITs have events of their
    /// own ([`Ring::own_submits`]): COMMIT now, SUBMIT at that event ([`Mapper::submit`]);
    /// elsewhere COMMIT and SUBMIT now ([`Mapper::run`]).
    fn commit<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        k: Key,
        a: (u64, u64),
        flags: u16,
    ) -> io::Result<()> {
        if !self.rings[k.ring as usize].own_submits {
            return self.run(sink, at, k, a.0, a.1, flags);
        }
        self.emit(sink, at, Event::COMMIT, flags, k, (0, 0, 0, 0))?;
        self.committed.insert(k, (flags, a));
        Ok(())
    }

    /// The SUBMIT event of job `k` ([`Mapper::commit`]): its SUBMIT and START per §3, if it
    /// was committed and not handed off yet; `inferred` flags the SUBMIT (its time is the
    /// latest the job was visible to the device, not when the device was told).
    fn submit<S: Sink>(&mut self, sink: &mut S, at: At, k: Key, inferred: bool) -> io::Result<()> {
        let Some((flags, a)) = self.committed.remove(&k) else {
            return Ok(());
        };
        let f = flags | if inferred { eflag::INFERRED } else { 0 };
        self.hand_off(sink, at, k, a.0, a.1, f)
    }

    /// SUBMIT of a committed job, and its START per §3.
    fn hand_off<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        k: Key,
        a0: u64,
        a1: u64,
        flags: u16,
    ) -> io::Result<()> {
        self.emit(sink, at, Event::SUBMIT, flags, k, (0, 0, 0, 1))?;
        let r = &mut self.rings[k.ring as usize];
        let idle = r.order.is_empty();
        r.order.push_back(Pending {
            key: k,
            run: at.t,
            started: idle,
            virt: false,
        });
        self.stats.jobs_started += 1;
        if idle {
            self.start(sink, at, k, flags, (a0, a1))?;
        }
        Ok(())
    }

    /// Job `k` was handed to the driver on `cpu` (see `last_run`).
    #[inline]
    fn note_run(&mut self, cpu: u32, k: Key) {
        if self.pipe_sync_by_run {
            let c = cpu as usize;
            if self.last_run.len() <= c {
                self.last_run.resize(c + 1, None);
            }
            self.last_run[c] = Some(k);
        }
    }

    /// Whether job `k` was handed off and is not done.
    fn is_open(&self, k: Key) -> bool {
        self.rings[k.ring as usize].order.iter().any(|p| p.key == k)
    }

    /// The key under which fence `f`'s job is open on another ring than `k`'s (an i915
    /// request of a virtual engine: handed off on the virtual ring or on another engine).
    fn open_elsewhere(&self, f: (u64, u64), k: Key) -> Option<Key> {
        self.fences
            .get(&f)
            .copied()
            .filter(|o| o.ring != k.ring && self.is_open(*o))
    }

    /// Job `k` leaves its ring's line at `at` without ending there (it goes back to a
    /// virtual engine): if it was the one running, the next in line starts now (on no
    /// task: the GPU starts it, not the event's task).
    fn leave<S: Sink>(&mut self, sink: &mut S, at: At, k: Key) -> io::Result<()> {
        let r = &mut self.rings[k.ring as usize];
        let Some(i) = r.order.iter().position(|p| p.key == k) else {
            return Ok(());
        };
        let p = r.order.remove(i).expect("position is in range");
        if !p.started {
            return Ok(());
        }
        r.last_done = at.t;
        let next = match r.order.front_mut() {
            Some(n) if !n.started => {
                n.started = true;
                Some(n.key)
            }
            _ => None,
        };
        match next {
            Some(nk) => self.start(sink, At { pid: 0, ..at }, nk, 0, (0, 0)),
            None => Ok(()),
        }
    }

    /// Whether a scheduler ring `name` is a queue of a driver whose own job tracepoints are
    /// in the trace (counted, skipped: IMPORT.md 5.8-5.10).
    fn sched_duplicate(&mut self, name: &[u8]) -> bool {
        let d = self.drivers;
        let dup = (d.xe
            && [&b"rcs"[..], b"vcs", b"vecs", b"bcs", b"ccs", b"gsccs"]
                .iter()
                .any(|p| numbered(name, p)))
            || (d.msm && numbered(name, b"ring"))
            || (d.v3d && name.starts_with(b"v3d_"));
        if dup {
            self.stats.sched_duplicates += 1;
        }
        dup
    }

    /// A driver ring, looked up by (tag, a, b); `name` gives (device, ring name, ring flags)
    /// the first time.
    fn drv_ring<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        id: (u8, u64, u64),
        name: impl FnOnce() -> (Vec<u8>, Vec<u8>, u32),
    ) -> io::Result<u32> {
        if let Some(&r) = self.drv_rings.get(&id) {
            return Ok(r);
        }
        let (dev, n, flags) = name();
        let r = self.ring_flagged(sink, at, &dev, &n, RING_UNIT_BYTES, flags)?;
        self.drv_rings.insert(id, r);
        Ok(r)
    }

    /// An inferred START (§3 of IMPORT.md), counted.
    #[inline]
    fn start<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        k: Key,
        flags: u16,
        a: (u64, u64),
    ) -> io::Result<()> {
        self.stats.inferred_starts += 1;
        let f = flags | eflag::INFERRED;
        self.emit(sink, at, Event::START, f, k, (a.0, a.1, 0, 0))?;
        if self.deferred.is_empty() {
            return Ok(());
        }
        self.start_waits(sink, at, k)
    }

    /// The GPU waits for a pipeline sync's fence once it reaches the job, not before: the
    /// waits put off to job `k`'s START begin now, on no task (the GPU waits, not a task).
    #[cold]
    #[inline(never)]
    fn start_waits<S: Sink>(&mut self, sink: &mut S, at: At, k: Key) -> io::Result<()> {
        if let Some(deps) = self.deferred.remove(&k) {
            for dep in deps {
                self.sync_enter(sink, At { pid: 0, ..at }, k, dep, false)?;
            }
        }
        Ok(())
    }

    /// Job `k` waits GPU-side for fence `dep` (amdgpu's pipeline sync, traced when the job
    /// is handed to the driver): the wait begins when the job starts on the GPU, so for a
    /// job still behind another on its ring it is put off to its START (IMPORT.md §5.5),
    /// and forgotten if the fence signals first.
    fn gpu_wait<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        k: Key,
        dep: (u64, u64),
    ) -> io::Result<()> {
        let waiting = self
            .rings
            .get(k.ring as usize)
            .is_some_and(|r| r.order.iter().any(|p| p.key == k && !p.started));
        if waiting {
            let list = self.deferred.entry(k).or_default();
            if !list.contains(&dep) {
                list.push(dep);
            }
            return Ok(());
        }
        self.sync_enter(sink, at, k, dep, false)
    }

    /// A job is done at `at`: its START if still owed, END, then START of the next in line.
    fn done<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        k: Key,
        a: (u64, u64),
        flags: u16,
        err: u32,
    ) -> io::Result<()> {
        self.done_as(sink, at, k, k, a, flags, err)
    }

    /// [`Mapper::done`] of a job in line as `held` whose owed START and END name `k`: the
    /// ring that ran it, when it was handed off on another (an i915 virtual engine). The
    /// owed START and the next job's are the GPU's, on no task.
    #[allow(clippy::too_many_arguments)]
    fn done_as<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        held: Key,
        k: Key,
        a: (u64, u64),
        flags: u16,
        err: u32,
    ) -> io::Result<()> {
        // A job that ends before its turn came: when its GPU wait began is not known.
        if !self.deferred.is_empty() {
            self.deferred.remove(&held);
        }
        let r = &mut self.rings[held.ring as usize];
        let mut owed = None;
        if let Some(i) = r.order.iter().position(|p| p.key == held) {
            let p = r.order.remove(i).expect("position is in range");
            if !p.started {
                owed = Some(p.run.max(r.last_done).min(at.t));
            }
        }
        r.last_done = at.t;
        let next = match r.order.front_mut() {
            Some(p) if !p.started => {
                p.started = true;
                Some(p.key)
            }
            _ => None,
        };
        if let Some(t) = owed {
            self.start(sink, At { pid: 0, t, ..at }, k, 0, a)?;
        }
        let ef = flags | if err != 0 { eflag::ERROR } else { 0 };
        self.emit(sink, at, Event::END, ef, k, (a.0, a.1, err, 0))?;
        if let Some(nk) = next {
            self.start(sink, At { pid: 0, ..at }, nk, 0, (0, 0))?;
        }
        Ok(())
    }

    fn sync_enter<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        k: Key,
        dep: (u64, u64),
        host: bool,
    ) -> io::Result<()> {
        let list = self.waits.entry(dep).or_default();
        if list.iter().any(|(w, _)| *w == k) {
            return Ok(());
        }
        list.push((k, host));
        let f = if host { eflag::HOST } else { 0 };
        self.emit(sink, at, Event::SYNC_ENTER, f, k, (dep.0, dep.1, 0, 0))
    }

    /// Ends the waits of `k` (all of them, at its hand-off) or of every job waiting on
    /// `dep` (when that fence signals), on no task (the wait ends, no task ends it).
    fn sync_exit<S: Sink>(
        &mut self,
        sink: &mut S,
        at: At,
        dep: Option<(u64, u64)>,
        job: Option<Key>,
        host_only: bool,
    ) -> io::Result<()> {
        let mut out: Vec<((u64, u64), Key, bool)> = Vec::new();
        match (dep, job) {
            (Some(d), _) => {
                if let Some(list) = self.waits.remove(&d) {
                    out.extend(list.into_iter().map(|(k, h)| (d, k, h)));
                }
            }
            (None, Some(k)) => {
                if self.waits.is_empty() {
                    return Ok(());
                }
                self.waits.retain(|d, list| {
                    list.retain(|(w, h)| {
                        if *w == k && (*h || !host_only) {
                            out.push((*d, k, *h));
                            false
                        } else {
                            true
                        }
                    });
                    !list.is_empty()
                });
            }
            _ => {}
        }
        let at = At { pid: 0, ..at };
        for (d, k, host) in out {
            let f = if host { eflag::HOST } else { 0 };
            self.emit(sink, at, Event::SYNC_EXIT, f, k, (d.0, d.1, 0, 0))?;
        }
        Ok(())
    }

    fn fence_job(&self, f: (u64, u64)) -> Option<Key> {
        self.fences.get(&f).copied().or_else(|| {
            self.recent
                .iter()
                .rev()
                .find(|(x, _)| *x == f)
                .map(|(_, k)| *k)
        })
    }

    fn done_fence(&mut self, f: (u64, u64), k: Key) {
        self.fences.remove(&f);
        if self.recent.len() == RECENT_DONE {
            self.recent.pop_front();
        }
        self.recent.push_back((f, k));
    }

    fn entity_ctx(&mut self, ptr: u64) -> u32 {
        let n = self.entities.len() as u32 + 1;
        *self.entities.entry(ptr).or_insert(n)
    }

    /// An event of a known tracepoint whose layout no variant has (text lines: the layout
    /// is told by the keys the line prints) happened at `t`: counted and named as not
    /// mapped, under `why`, with the formats that were not mapped (IMPORT.md §2).
    pub fn unmapped(&mut self, system: &str, name: &str, why: String, t: u64) {
        self.stats.saw(t);
        match (self.seen.iter_mut())
            .find(|s| s.kind.is_none() && s.name == name && s.unusable.as_ref() == Some(&why))
        {
            Some(s) => s.count += 1,
            None => self.seen.push(Seen {
                system: system.to_string(),
                name: name.to_string(),
                kind: None,
                unusable: Some(why),
                count: 1,
            }),
        }
    }

    /// Events of GPU tracepoints that were not mapped because their layout is not known
    /// (IMPORT.md §2), for the closing note and the summary.
    pub fn not_mapped(&self) -> u64 {
        self.seen
            .iter()
            .filter(|s| s.unusable.is_some())
            .map(|s| s.count)
            .sum()
    }

    /// An event the source did not hand over (text of an event this importer does not
    /// read) happened at `t`: it is part of the capture's span.
    pub fn other_event(&mut self, t: u64) {
        self.stats.saw(t);
    }

    /// Maps one raw event (payload from `common_type` on) that happened at `t` on `cpu`.
    #[inline]
    pub fn event<S: Sink>(
        &mut self,
        sink: &mut S,
        cpu: u32,
        t: u64,
        data: &[u8],
    ) -> Result<io::Result<()>, MapError> {
        self.stats.events_in += 1;
        self.stats.saw(t);
        let c = cpu as usize;
        if self.stats.events_by_cpu.len() <= c {
            self.stats.events_by_cpu.resize(c + 1, 0);
        }
        self.stats.events_by_cpu[c] += 1;
        if data.len() < 8 {
            return Err(MapError(format!(
                "event record of {} bytes has no common header",
                data.len()
            )));
        }
        let e = self.endian;
        let id = e.u16(data, 0) as usize;
        let Some(&h) = self.by_id.get(id) else {
            self.stats.unknown_ids += 1;
            return Ok(Ok(()));
        };
        if h == u32::MAX {
            self.stats.unknown_ids += 1;
            return Ok(Ok(()));
        }
        if h & (1 << 31) != 0 {
            self.seen[(h & !(1 << 31)) as usize].count += 1;
            return Ok(Ok(()));
        }
        let hd = &self.handlers[h as usize];
        if data.len() < hd.min_len {
            let s = &self.seen[hd.seen];
            return Err(MapError(format!(
                "{}:{} record of {} bytes is shorter than its format ({} bytes)",
                s.system,
                s.name,
                data.len(),
                hd.min_len
            )));
        }
        let kind = hd.kind;
        let seen = hd.seen;
        self.seen[seen].count += 1;
        let at = At::new(cpu, e.u32(data, 4), t);
        Ok(self.dispatch(sink, kind, h as usize, at, data))
    }

    fn dispatch<S: Sink>(
        &mut self,
        sink: &mut S,
        kind: Kind,
        h: usize,
        at: At,
        data: &[u8],
    ) -> io::Result<()> {
        let f = Ev {
            e: self.endian,
            data,
            hd: self.handlers[h],
            kind,
            at,
        };
        match kind {
            Kind::SchedQueue612
            | Kind::SchedRun612
            | Kind::SchedDone612
            | Kind::SchedWaitDep612
            | Kind::SchedQueue
            | Kind::SchedRun
            | Kind::SchedDone
            | Kind::SchedAddDep
            | Kind::SchedUnschedulable
            | Kind::SchedHwFence
            | Kind::SchedTimeout
            | Kind::LimaSubmit => self.map_drm_sched(sink, &f),
            Kind::AmdgpuCs | Kind::AmdgpuRunJob if !self.drivers.sched => self.map_amdgpu(sink, &f),
            Kind::AmdgpuCs => self.map_drm_sched(sink, &f),
            Kind::AmdgpuPipeSync if f.hd.fields[1].size != 0 => self.map_drm_sched(sink, &f),
            Kind::AmdgpuPipeSync | Kind::AmdgpuVmFlush | Kind::AmdgpuIv => {
                self.map_amdgpu(sink, &f)
            }
            Kind::FenceSignaled | Kind::FenceWaitStart | Kind::FenceWaitEnd => {
                self.map_dma_fence(sink, &f)
            }
            Kind::FenceNoRecord
            | Kind::AmdgpuRunJob
            | Kind::LimaRun
            | Kind::I915NoRecord
            | Kind::XeNoRecord
            | Kind::MsmNoRecord
            | Kind::V3dNoRecord
            | Kind::VirtioAlloc => Ok(()),
            Kind::I915Queue
            | Kind::I915Add
            | Kind::I915Submit
            | Kind::I915In
            | Kind::I915Out
            | Kind::I915Retire
            | Kind::I915WaitBegin
            | Kind::I915WaitEnd => self.map_i915(sink, &f),
            Kind::XeQueueCreate
            | Kind::XeQueueDestroy
            | Kind::XeQueueReset
            | Kind::XeFenceCreate
            | Kind::XeJobExec
            | Kind::XeJobRun
            | Kind::XeJobTimedout
            | Kind::XeFenceSignal
            | Kind::XeVmaPagefault => self.map_xe(sink, &f),
            Kind::MsmFlush | Kind::MsmRetired => self.map_msm(sink, &f),
            Kind::V3dSubmitCl | Kind::V3dSubmit(_) | Kind::V3dIrq(_) | Kind::V3dReset => {
                self.map_v3d(sink, &f)
            }
            Kind::VirtioQueue | Kind::VirtioResponse | Kind::VirtioNotify | Kind::VirtioAck => {
                self.map_virtio_gpu(sink, &f)
            }
        }
    }
}

/// One event: its bytes, where its handler's fields are, what it maps as, and where and
/// when it happened (what every driver's handler takes).
#[derive(Clone, Copy)]
pub(super) struct Ev<'a> {
    e: Endian,
    data: &'a [u8],
    hd: Handler,
    kind: Kind,
    at: At,
}

/// Where and when a tracepoint fired: the place and time every record mapped from it is
/// stamped with (a record the GPU's doing, not the task's, keeps the CPU and time with no
/// task: `At { pid: 0, ..at }`).
#[derive(Clone, Copy, Debug)]
pub(super) struct At {
    /// The CPU whose ring buffer holds the event (the stream its records go to).
    cpu: u32,
    /// The task the event happened in (0 for a record that is no task's).
    pid: u32,
    /// The event's time in ns, of the trace clock.
    t: u64,
}

impl At {
    /// The event on `cpu`, in task `pid`, at `t`.
    #[inline(always)]
    const fn new(cpu: u32, pid: u32, t: u64) -> At {
        At { cpu, pid, t }
    }
}

impl Ev<'_> {
    /// Field `i` of the handler as an integer.
    #[inline(always)]
    fn u(&self, i: usize) -> u64 {
        let f = self.hd.fields[i];
        read_uint(self.e, self.data, f.offset, f.size.min(8))
    }

    /// Field `i` of the handler as a string.
    #[inline(always)]
    fn s(&self, i: usize) -> &[u8] {
        read_str(self.e, self.data, self.hd.fields[i])
    }
}

/// The device of a driver ring's note from a tracepoint's `dev` field (a DRM minor): `card1`.
/// A field too wide for a minor (damaged, or a format that is not the kernel's) is named
/// with its whole value, never cut to 32 bits into another card's name.
fn card_name(dev: u64) -> Vec<u8> {
    match u32::try_from(dev) {
        Ok(n) => Card(n).to_string().into_bytes(),
        Err(_) => format!("card{dev}").into_bytes(),
    }
}
