//! The one table of tracepoint variants (IMPORT.md §5): for every layout a kernel printed of
//! a GPU tracepoint, the fields that identify it, the kernels that printed it, what it
//! becomes ([`Kind`]) and how its job key is formed. A format is mapped by the first variant
//! of its (system, event) whose fields it has and whose `without` fields it lacks; a format
//! that fits none is counted and named as not mapped, never read as another layout
//! (IMPORT.md §2: an identity is never guessed).

use super::Kind;
use crate::format::EventFormat;

/// One layout of a tracepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Trace system (`i915`, `gpu_scheduler`, ...).
    pub system: &'static str,
    /// Event name.
    pub event: &'static str,
    /// What it becomes.
    pub kind: Kind,
    /// The fields the mapping reads, in the order its code uses them: every one must be in
    /// the format, but `name?` (read when present) and `-` (a slot this layout does not
    /// fill, so that the others keep their places).
    pub fields: &'static [&'static str],
    /// Fields whose presence means another layout (the variant does not fit then).
    pub without: &'static [&'static str],
    /// The kernels that printed this layout, as far as their sources were read.
    pub kernels: &'static str,
    /// How the job key `<ctx, ring, seqno>` (and the ring's device) is formed.
    pub key: &'static str,
}

impl Variant {
    /// Whether format `f` has this layout.
    pub fn fits(&self, f: &EventFormat) -> bool {
        self.fields
            .iter()
            .filter(|n| **n != "-" && !n.ends_with('?'))
            .all(|n| f.field(n).is_some())
            && self.without.iter().all(|n| f.field(n).is_none())
    }

    /// This variant's row of IMPORT.md §5.0 (the test that ties the table, the text
    /// importer and IMPORT.md together compares them).
    pub fn doc_row(&self) -> String {
        let mut by: Vec<String> = (self.fields.iter())
            .filter(|n| **n != "-")
            .map(|n| match n.strip_suffix('?') {
                Some(o) => format!("`{o}` if any"),
                None => format!("`{n}`"),
            })
            .collect();
        by.extend(self.without.iter().map(|n| format!("no `{n}`")));
        let by = if by.is_empty() {
            "(any)".to_string()
        } else {
            by.join(", ")
        };
        // `<ctx, ring, seqno>` would read as an HTML tag
        let key = match self.key.starts_with('<') {
            true => format!("`{}`", self.key),
            false => self.key.to_string(),
        };
        format!(
            "| `{}:{}` | {by} | {} | {:?} | {key} |",
            self.system, self.event, self.kernels, self.kind
        )
    }

    /// The variant of `f`'s tracepoint that fits it: `Ok(None)` for a tracepoint the table
    /// does not name, `Err(why)` for a known tracepoint whose layout no variant has.
    pub fn of(f: &EventFormat) -> Result<Option<&'static Variant>, String> {
        let mut known = false;
        for v in Self::TABLE
            .iter()
            .filter(|v| v.system == f.system && v.event == f.name)
        {
            known = true;
            if v.fits(f) {
                return Ok(Some(v));
            }
        }
        if !known {
            return Ok(None);
        }
        let names: Vec<&str> = f
            .fields
            .iter()
            .map(|x| x.name.as_str())
            .filter(|n| !n.starts_with("common_"))
            .collect();
        Err(format!(
            "format with fields {} is not known",
            names.join(", ")
        ))
    }
}

const fn row(
    system: &'static str,
    event: &'static str,
    kind: Kind,
    fields: &'static [&'static str],
    kernels: &'static str,
    key: &'static str,
) -> Variant {
    Variant {
        system,
        event,
        kind,
        fields,
        without: &[],
        kernels,
        key,
    }
}

impl Variant {
    const fn without(mut self, w: &'static [&'static str]) -> Variant {
        self.without = w;
        self
    }
}

/// Fields of i915's request events since the uabi engine (`engine=class:instance`).
const I915_REQ: &[&str] = &["dev", "ctx", "class", "instance", "seqno"];
/// Fields of i915's request events before it: `ring` is the engine's `enum intel_engine_id`.
const I915_RING: &[&str] = &["dev", "ctx", "ring", "-", "seqno"];
/// Fields of xe's `xe_exec_queue` class.
const XE_QUEUE: &[&str] = &["dev", "class", "guc_id"];
/// Fields of xe's `xe_sched_job` class.
const XE_JOB: &[&str] = &["dev", "seqno", "guc_id", "fence"];
/// Fields of xe's `xe_hw_fence` class.
const XE_FENCE: &[&str] = &["dev", "ctx", "seqno", "fence"];
/// Fields of v3d's submit and IRQ events.
const V3D_JOB: &[&str] = &["dev", "seqno"];
/// Fields of the dma_fence class (also the `fence` system before 4.10).
const FENCE: &[&str] = &["context", "seqno"];

const K_SCHED612: &str =
    "<entity number or amdgpu/lima fence context, ring name, scheduler job id or fence seqno>";
const K_SCHED617: &str = "<fence_context, dev/name, fence_seqno>";
const K_FENCE: &str = "the job whose finished fence context:seqno it is, else no ring";
const K_VIRTIO: &str = "<ctx_id, virtio<dev>/vq name, seqno>";
const K_VIRTIO_KICK: &str = "the commands queued on virtio<dev>'s control queue up to seqno";
const K_VIRTIO_RING: &str = "the ring virtio<dev>/control, no job";
const K_AMD_NAME: &str = "names a scheduler job: (ring, sched_job_id) -> context:seqno";
const K_AMD_OWN: &str =
    "<context, ring, seqno> (the finished fence) when no scheduler event names jobs";
const K_AMD_OLD: &str = "<context, timeline (the ring's name), seqno>; ring_name is a pointer";
const K_AMD_RING: &str = "<vmid or job, ring name, 0 or job id>";
const K_NONE: &str = "no record";
const K_I915: &str = "<fence ctx, card<dev>/<class><instance>, seqno>";
const K_I915_ID: &str = "<fence ctx, card<dev>/engine<ring>, seqno>: ring = enum intel_engine_id";
const K_XE: &str = "<hw fence context, dev/<class>-q<guc_id>, seqno>";
const K_MSM: &str = "<pid, msm/rb<ringid>, seqno>";
const K_V3D: &str = "<0, card<dev>/<queue>, seqno>";
const K_FAULT: &str = "no ring (a fault names no job)";

impl Variant {
    /// Every variant, in the order they are tried.
    // rustfmt would put every argument on a line of its own; a row a line (its fields on the
    // next where they are many) reads as a table.
    #[rustfmt::skip]
    pub const TABLE: &'static [Variant] = &[
        // gpu_scheduler: before 6.17
        row("gpu_scheduler", "drm_sched_job", Kind::SchedQueue612,
            &["entity", "fence", "name", "id", "job_count", "hw_job_count"],
            "<=6.16 (read: 6.12)", K_SCHED612),
        row("gpu_scheduler", "drm_run_job", Kind::SchedRun612,
            &["entity", "fence", "name", "id"], "<=6.16 (read: 6.12)", K_SCHED612),
        row("gpu_scheduler", "drm_sched_process_job", Kind::SchedDone612,
            &["fence"], "<=6.16 (read: 6.12)", K_SCHED612),
        row("gpu_scheduler", "drm_sched_job_wait_dep", Kind::SchedWaitDep612,
            &["name", "id", "ctx", "seqno"], "<=6.16 (read: 6.12)", K_SCHED612),
        // gpu_scheduler: 6.17 and later
        row("gpu_scheduler", "drm_sched_job_queue", Kind::SchedQueue,
            &["name", "dev", "fence_context", "fence_seqno", "client_id", "job_count", "hw_job_count"],
            "6.17+", K_SCHED617),
        row("gpu_scheduler", "drm_sched_job_run", Kind::SchedRun,
            &["name", "dev", "fence_context", "fence_seqno", "client_id"], "6.17+", K_SCHED617),
        row("gpu_scheduler", "drm_sched_job_done", Kind::SchedDone,
            &["fence_context", "fence_seqno", "error?"],
            "6.17+ (`error`: the upstream series)", K_SCHED617),
        row("gpu_scheduler", "drm_sched_job_hw_fence", Kind::SchedHwFence,
            &["name", "dev", "fence_context", "fence_seqno", "hw_fence_context", "hw_fence_seqno"],
            "7.3 with the upstream series (kernel/upstream/)", K_SCHED617),
        row("gpu_scheduler", "drm_sched_job_timeout", Kind::SchedTimeout,
            &["name", "dev", "fence_context", "fence_seqno"],
            "7.3 with the upstream series", K_SCHED617),
        row("gpu_scheduler", "drm_sched_job_add_dep", Kind::SchedAddDep,
            &["fence_context", "fence_seqno", "ctx", "seqno"], "6.17+", K_NONE),
        row("gpu_scheduler", "drm_sched_job_unschedulable", Kind::SchedUnschedulable,
            &["fence_context", "fence_seqno", "ctx", "seqno"], "6.17+", K_SCHED617),
        // dma_fence (4.10+), and the same class as `fence` before the rename
        row("dma_fence", "dma_fence_signaled",      Kind::FenceSignaled,  FENCE, "4.10+", K_FENCE),
        row("dma_fence", "dma_fence_wait_start",    Kind::FenceWaitStart, FENCE, "4.10+", K_FENCE),
        row("dma_fence", "dma_fence_wait_end",      Kind::FenceWaitEnd,   FENCE, "4.10+", K_FENCE),
        row("dma_fence", "dma_fence_init",          Kind::FenceNoRecord,  &[], "4.10+", K_NONE),
        row("dma_fence", "dma_fence_emit",          Kind::FenceNoRecord,  &[], "4.10+", K_NONE),
        row("dma_fence", "dma_fence_enable_signal", Kind::FenceNoRecord,  &[], "4.10+", K_NONE),
        row("dma_fence", "dma_fence_destroy",       Kind::FenceNoRecord,  &[], "4.10+", K_NONE),
        row("fence", "fence_signaled",              Kind::FenceSignaled,  FENCE, "<=4.9", K_FENCE),
        row("fence", "fence_wait_start",            Kind::FenceWaitStart, FENCE, "<=4.9", K_FENCE),
        row("fence", "fence_wait_end",              Kind::FenceWaitEnd,   FENCE, "<=4.9", K_FENCE),
        row("fence", "fence_init",                  Kind::FenceNoRecord,  &[], "<=4.9", K_NONE),
        row("fence", "fence_emit",                  Kind::FenceNoRecord,  &[], "<=4.9", K_NONE),
        row("fence", "fence_enable_signal",         Kind::FenceNoRecord,  &[], "<=4.9", K_NONE),
        row("fence", "fence_destroy",               Kind::FenceNoRecord,  &[], "<=4.9", K_NONE),
        // virtio_gpu
        row("virtio_gpu", "virtio_gpu_cmd_queue", Kind::VirtioQueue,
            &["dev", "vq", "name", "flags", "ctx_id", "seqno", "num_free"],
            "6.3+ (read: 6.12, 6.17)", K_VIRTIO),
        row("virtio_gpu", "virtio_gpu_cmd_response", Kind::VirtioResponse,
            &["dev", "vq", "name", "type", "ctx_id", "seqno"], "6.3+ (read: 6.12, 6.17)", K_VIRTIO),
        row("virtio_gpu", "virtio_gpu_notify", Kind::VirtioNotify,
            &["dev", "vq", "seqno", "notify"], "7.3 with the upstream series", K_VIRTIO_KICK),
        row("virtio_gpu", "virtio_gpu_ctrl_ack", Kind::VirtioAck,
            &["dev", "vq"],
            "7.3 with the upstream series; 6.12 with the grtrace series", K_VIRTIO_RING),
        row("virtio_gpu", "virtio_gpu_cmd_alloc", Kind::VirtioAlloc,
            &["dev", "vq", "ctx_id", "elemcnt", "num_free", "stall"],
            "7.3 with the upstream series", K_NONE),
        // amdgpu: `ring` is a string since 5.x; before it, `ring_name` was a pointer
        // and the ring's name is the `timeline` string (the scheduler fence's timeline)
        row("amdgpu", "amdgpu_cs_ioctl", Kind::AmdgpuCs,
            &["sched_job_id?", "context", "seqno", "ring"],
            "5.x-6.16 with sched_job_id, 6.17+ without", K_AMD_NAME),
        row("amdgpu", "amdgpu_cs_ioctl", Kind::AmdgpuCs,
            &["sched_job_id?", "context", "seqno", "timeline"],
            "4.x (sched_job_id, timeline, context, seqno, ring_name pointer)", K_AMD_OLD)
        .without(&["ring"]),
        row("amdgpu", "amdgpu_sched_run_job", Kind::AmdgpuRunJob,
            &["-", "context", "seqno", "ring"], "5.x+", K_AMD_OWN),
        row("amdgpu", "amdgpu_sched_run_job", Kind::AmdgpuRunJob,
            &["-", "context", "seqno", "timeline"], "4.x", K_AMD_OLD).without(&["ring"]),
        row("amdgpu", "amdgpu_ib_pipe_sync", Kind::AmdgpuPipeSync,
            &["ring", "id?", "ctx", "seqno"], "5.x-6.16 with id, 6.17+ without", K_AMD_RING),
        row("amdgpu", "amdgpu_vm_flush", Kind::AmdgpuVmFlush,
            &["ring", "vmid"], "5.x+ (read: 6.12)", K_AMD_RING),
        row("amdgpu", "amdgpu_iv", Kind::AmdgpuIv,
            &["client_id", "src_id", "ring_id", "vmid", "pasid", "src_data"],
            "5.x+ (read: 6.12)", K_FAULT),
        // lima
        row("lima", "lima_task_submit", Kind::LimaSubmit,
            &["task_id?", "context", "seqno", "pipe"],
            "5.2+ (read: 6.12 with task_id, 6.17 without)", K_AMD_NAME),
        row("lima", "lima_task_run", Kind::LimaRun, &[], "5.2+", K_NONE),
        // i915: the uabi engine (class:instance)
        row("i915", "i915_request_queue",      Kind::I915Queue,     I915_REQ, "5.1+ (read: 6.12)", K_I915),
        row("i915", "i915_request_add",        Kind::I915Add,       I915_REQ, "5.1+", K_I915),
        row("i915", "i915_request_submit",     Kind::I915Submit,    I915_REQ, "5.1+", K_I915),
        row("i915", "i915_request_in",         Kind::I915In,        I915_REQ, "5.1+", K_I915),
        row("i915", "i915_request_out", Kind::I915Out,
            &["dev", "ctx", "class", "instance", "seqno", "completed"], "5.1+", K_I915),
        row("i915", "i915_request_retire",     Kind::I915Retire,    I915_REQ, "5.1+", K_I915),
        row("i915", "i915_request_wait_begin", Kind::I915WaitBegin, I915_REQ, "5.1+", K_I915),
        row("i915", "i915_request_wait_end",   Kind::I915WaitEnd,   I915_REQ, "5.1+", K_I915),
        row("i915", "i915_request_execute",    Kind::I915NoRecord,  &["class"], "5.1+", K_NONE),
        row("i915", "i915_request_guc_submit", Kind::I915NoRecord,  &["class"], "5.1+", K_NONE),
        // i915 before the uabi engine: `ring` (engine->id), with `hw_id` from 4.17
        // (`i915_request_*`: the class's layout only; its queue, wait_begin, in and out
        // were not read, so they are not mapped) and without it before
        // (`i915_gem_request_*`). The low-level events of those kernels are counted only
        // (`out` has no completion state).
        row("i915", "i915_request_add", Kind::I915Add,
            I915_RING, "4.17-5.0", K_I915_ID).without(&["class"]),
        row("i915", "i915_request_retire", Kind::I915Retire,
            I915_RING, "4.17-5.0", K_I915_ID).without(&["class"]),
        row("i915", "i915_request_wait_end", Kind::I915WaitEnd,
            I915_RING, "4.17-5.0", K_I915_ID).without(&["class"]),
        row("i915", "i915_request_submit", Kind::I915NoRecord,
            &["ring"], "4.17-5.0", K_NONE).without(&["class"]),
        row("i915", "i915_request_execute", Kind::I915NoRecord,
            &["ring"], "4.17-5.0", K_NONE).without(&["class"]),
        row("i915", "i915_gem_request_queue",   Kind::I915Queue,    I915_RING, "4.9-4.16", K_I915_ID),
        row("i915", "i915_gem_request_add",     Kind::I915Add,      I915_RING, "4.9-4.16", K_I915_ID),
        row("i915", "i915_gem_request_retire",  Kind::I915Retire,   I915_RING, "4.9-4.16", K_I915_ID),
        row("i915", "i915_gem_request_wait_begin", Kind::I915WaitBegin,
            I915_RING, "4.9-4.16", K_I915_ID),
        row("i915", "i915_gem_request_wait_end", Kind::I915WaitEnd,
            I915_RING, "4.9-4.16", K_I915_ID),
        row("i915", "i915_gem_request_submit",  Kind::I915NoRecord, &["ring"], "4.9-4.16", K_NONE),
        row("i915", "i915_gem_request_in",      Kind::I915NoRecord, &["ring"], "4.9-4.16", K_NONE),
        row("i915", "i915_gem_request_out",     Kind::I915NoRecord, &["ring"], "4.9-4.16", K_NONE),
        row("i915", "i915_gem_request_execute", Kind::I915NoRecord, &["ring"], "4.9-4.16", K_NONE),
        // xe
        row("xe", "xe_exec_queue_create",   Kind::XeQueueCreate,  XE_QUEUE, "6.8+ (read: 6.12)", K_XE),
        row("xe", "xe_exec_queue_destroy",  Kind::XeQueueDestroy, XE_QUEUE, "6.8+", K_XE),
        row("xe", "xe_exec_queue_reset",    Kind::XeQueueReset,   XE_QUEUE, "6.8+", K_XE),
        row("xe", "xe_exec_queue_kill",     Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_exec_queue_register", Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_exec_queue_submit",   Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_hw_fence_create",     Kind::XeFenceCreate,  XE_FENCE, "6.8+", K_XE),
        row("xe", "xe_hw_fence_signal",     Kind::XeFenceSignal,  XE_FENCE, "6.8+", K_XE),
        row("xe", "xe_hw_fence_try_signal", Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_sched_job_create",    Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_sched_job_exec",      Kind::XeJobExec,      XE_JOB, "6.8+", K_XE),
        row("xe", "xe_sched_job_run",       Kind::XeJobRun,       XE_JOB, "6.8+", K_XE),
        row("xe", "xe_sched_job_free",      Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_sched_job_timedout",  Kind::XeJobTimedout,  XE_JOB, "6.8+", K_XE),
        row("xe", "xe_sched_job_set_error", Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_sched_job_ban",       Kind::XeNoRecord,     &[], "6.8+", K_NONE),
        row("xe", "xe_vma_pagefault", Kind::XeVmaPagefault,
            &["dev", "asid", "start"], "6.8+", K_FAULT),
        // msm
        row("drm_msm_gpu", "msm_gpu_submit", Kind::MsmNoRecord, &[], "5.x+ (read: 6.12)", K_NONE),
        row("drm_msm_gpu", "msm_gpu_submit_flush", Kind::MsmFlush,
            &["pid", "ringid", "seqno", "ticks"], "5.x+ (read: 6.12)", K_MSM),
        row("drm_msm_gpu", "msm_gpu_submit_retired", Kind::MsmRetired,
            &["pid", "ringid", "seqno", "start_ticks", "end_ticks", "elapsed"],
            "5.x+ (read: 6.12)", K_MSM),
        // v3d
        row("v3d", "v3d_submit_cl", Kind::V3dSubmitCl,
            &["dev", "seqno", "is_render"], "5.x+ (read: 6.12)", K_V3D),
        row("v3d", "v3d_submit_tfu",  Kind::V3dSubmit(2), V3D_JOB, "5.x+", K_V3D),
        row("v3d", "v3d_submit_csd",  Kind::V3dSubmit(3), V3D_JOB, "5.x+", K_V3D),
        row("v3d", "v3d_bcl_irq",     Kind::V3dIrq(0),    V3D_JOB, "5.x+", K_V3D),
        row("v3d", "v3d_rcl_irq",     Kind::V3dIrq(1),    V3D_JOB, "5.x+", K_V3D),
        row("v3d", "v3d_tfu_irq",     Kind::V3dIrq(2),    V3D_JOB, "5.x+", K_V3D),
        row("v3d", "v3d_csd_irq",     Kind::V3dIrq(3),    V3D_JOB, "5.x+", K_V3D),
        row("v3d", "v3d_reset_begin", Kind::V3dReset,     &["dev"], "5.x+", K_V3D),
        row("v3d", "v3d_reset_end",   Kind::V3dNoRecord,  &[], "5.x+", K_NONE),
    ];
}
