//! The subset of Perfetto's trace schema this reader needs: field numbers from Perfetto's
//! published protos (`protos/perfetto/trace/trace.proto`, `trace_packet.proto`,
//! `ftrace/ftrace_event_bundle.proto`, `ftrace/ftrace_event.proto`, `ftrace/ftrace_stats.proto`,
//! `clock_snapshot.proto`, and the per-system `ftrace/*.proto`). Perfetto names the fields of
//! its typed ftrace events after the kernel's format fields, so each typed event becomes
//! the kernel's (event, named fields) through one table row.

/// `Trace.packet`.
pub const TRACE_PACKET: u32 = 1;

/// `TracePacket` fields.
pub mod packet {
    pub const FTRACE_EVENTS: u32 = 1;
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const TIMESTAMP: u32 = 8;
    pub const TRUSTED_PACKET_SEQUENCE_ID: u32 = 10;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const FTRACE_STATS: u32 = 34;
    pub const PREVIOUS_PACKET_DROPPED: u32 = 42;
    pub const COMPRESSED_PACKETS: u32 = 50;
}

/// `FtraceEventBundle` fields.
pub mod bundle {
    pub const CPU: u32 = 1;
    pub const EVENT: u32 = 2;
    pub const LOST_EVENTS: u32 = 3;
    pub const COMPACT_SCHED: u32 = 4;
    pub const FTRACE_CLOCK: u32 = 5;
    pub const FTRACE_TIMESTAMP: u32 = 6;
    pub const BOOT_TIMESTAMP: u32 = 7;
    /// Perfetto v50+: descriptors of the events written with their own field numbers
    /// (`GenericEventDescriptor`: field_id 1, event_descriptor 2, a `DescriptorProto`).
    pub const GENERIC_EVENT_DESCRIPTORS: u32 = 11;
    /// `CompactSched.switch_timestamp` (packed, one per sched_switch).
    pub const COMPACT_SWITCH_TIMESTAMP: u32 = 1;
    /// `CompactSched.waking_timestamp` (packed, one per sched_waking).
    pub const COMPACT_WAKING_TIMESTAMP: u32 = 7;
}

/// `FtraceEvent` fields (the event's own message is one of the others).
pub mod event {
    pub const TIMESTAMP: u32 = 1;
    pub const PID: u32 = 2;
    pub const COMMON_FLAGS: u32 = 5;
    /// `GenericFtraceEvent`: events Perfetto has no typed proto for.
    pub const GENERIC: u32 = 327;
}

/// `GenericFtraceEvent` and its `Field`.
pub mod generic {
    pub const EVENT_NAME: u32 = 1;
    pub const FIELD: u32 = 2;
    pub const FIELD_NAME: u32 = 1;
    pub const STR_VALUE: u32 = 3;
    pub const INT_VALUE: u32 = 4;
    pub const UINT_VALUE: u32 = 5;
}

/// `FtraceStats` and `FtraceCpuStats`.
pub mod stats {
    pub const PHASE: u32 = 1;
    pub const CPU_STATS: u32 = 2;
    pub const PHASE_START: u64 = 1;
    pub const PHASE_END: u64 = 2;
    pub const CPU: u32 = 1;
    pub const OVERRUN: u32 = 3;
    pub const DROPPED_EVENTS: u32 = 8;
}

/// `ClockSnapshot` and `ClockSnapshot.Clock`, with the builtin clock ids.
pub mod clock {
    pub const CLOCKS: u32 = 1;
    pub const CLOCK_ID: u32 = 1;
    pub const TIMESTAMP: u32 = 2;
    pub const MONOTONIC: u64 = 3;
    pub const BOOTTIME: u64 = 6;
}

/// `FtraceEventBundle.ftrace_clock` values: 0 is the default, `boot`.
pub mod ftrace_clock {
    pub const UNSPECIFIED: u64 = 0;
    pub const GLOBAL: u64 = 2;
    pub const LOCAL: u64 = 3;
    pub const MONO_RAW: u64 = 4;
}

/// One typed ftrace event: its field in `FtraceEvent`, the kernel event it is, and its
/// proto fields by number with the kernel format field each carries.
pub struct Typed {
    pub field: u32,
    pub event: &'static str,
    pub fields: &'static [(u32, &'static str)],
}

const SCHED612: &[(u32, &str)] = &[
    (1, "entity"),
    (2, "fence"),
    (3, "hw_job_count"),
    (4, "id"),
    (5, "job_count"),
    (6, "name"),
];
const SCHED617: &[(u32, &str)] = &[
    (1, "name"),
    (2, "job_count"),
    (3, "hw_job_count"),
    (4, "dev"),
    (5, "fence_context"),
    (6, "fence_seqno"),
    (7, "client_id"),
];
const DEP617: &[(u32, &str)] = &[
    (1, "fence_context"),
    (2, "fence_seqno"),
    (3, "ctx"),
    (4, "seqno"),
];
const FENCE: &[(u32, &str)] = &[(1, "context"), (2, "driver"), (3, "seqno"), (4, "timeline")];
const VIRTIO: &[(u32, &str)] = &[
    (1, "ctx_id"),
    (2, "dev"),
    (3, "fence_id"),
    (4, "flags"),
    (5, "name"),
    (6, "num_free"),
    (7, "seqno"),
    (8, "type"),
    (9, "vq"),
];

/// The GPU tracepoints Perfetto has typed protos for. Others (i915, amdgpu, xe, msm, v3d,
/// lima, `drm_sched_job_wait_dep`) come as `GenericFtraceEvent`s.
pub const TYPED: &[Typed] = &[
    Typed {
        field: 411,
        event: "drm_sched_job",
        fields: SCHED612,
    },
    Typed {
        field: 412,
        event: "drm_run_job",
        fields: SCHED612,
    },
    Typed {
        field: 413,
        event: "drm_sched_process_job",
        fields: &[(1, "fence")],
    },
    Typed {
        field: 414,
        event: "dma_fence_init",
        fields: FENCE,
    },
    Typed {
        field: 415,
        event: "dma_fence_emit",
        fields: FENCE,
    },
    Typed {
        field: 416,
        event: "dma_fence_signaled",
        fields: FENCE,
    },
    Typed {
        field: 417,
        event: "dma_fence_wait_start",
        fields: FENCE,
    },
    Typed {
        field: 418,
        event: "dma_fence_wait_end",
        fields: FENCE,
    },
    Typed {
        field: 468,
        event: "virtio_gpu_cmd_queue",
        fields: VIRTIO,
    },
    Typed {
        field: 469,
        event: "virtio_gpu_cmd_response",
        fields: VIRTIO,
    },
    Typed {
        field: 591,
        event: "drm_sched_job_add_dep",
        fields: DEP617,
    },
    Typed {
        field: 592,
        event: "drm_sched_job_done",
        fields: &[(1, "fence_context"), (2, "fence_seqno")],
    },
    Typed {
        field: 593,
        event: "drm_sched_job_queue",
        fields: SCHED617,
    },
    Typed {
        field: 594,
        event: "drm_sched_job_run",
        fields: SCHED617,
    },
    Typed {
        field: 595,
        event: "drm_sched_job_unschedulable",
        fields: DEP617,
    },
];

/// Names of common typed events grtrace does not map, for the summary (others are named
/// by their field number).
pub const OTHER_NAMES: &[(u32, &str)] = &[
    (3, "ftrace:print"),
    (4, "sched:sched_switch"),
    (11, "power:cpu_frequency"),
    (13, "power:cpu_idle"),
    (17, "sched:sched_wakeup"),
    (20, "sched:sched_waking"),
    (36, "irq:irq_handler_entry"),
    (37, "irq:irq_handler_exit"),
    (50, "binder:binder_transaction"),
    (51, "binder:binder_transaction_received"),
    (56, "workqueue:workqueue_activate_work"),
    (57, "workqueue:workqueue_execute_end"),
    (58, "workqueue:workqueue_execute_start"),
    (59, "workqueue:workqueue_queue_work"),
    (113, "power:suspend_resume"),
    (114, "sched:sched_wakeup_new"),
    (235, "task:task_newtask"),
    (236, "task:task_rename"),
    (238, "sched:sched_process_exit"),
    (239, "sched:sched_process_fork"),
    (240, "sched:sched_process_free"),
    (316, "fence:fence_init"),
    (317, "fence:fence_destroy"),
    (318, "fence:fence_enable_signal"),
    (319, "fence:fence_signaled"),
    (329, "raw_syscalls:sys_enter"),
    (330, "raw_syscalls:sys_exit"),
    (332, "power:gpu_frequency"),
    (340, "gpu_mem:gpu_mem_total"),
    (409, "drm:drm_vblank_event"),
    (410, "drm:drm_vblank_event_delivered"),
    (485, "binder:binder_command"),
    (486, "binder:binder_return"),
    (488, "power:gpu_work_period"),
    (601, "power:gpu_power_state"),
];
