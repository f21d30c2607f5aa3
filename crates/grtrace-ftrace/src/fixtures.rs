//! The event formats of the kernels the mapping covers, as tracefs prints them: text files
//! under `fixtures/import/<kernel>/<system>/<event>.format`, written from the kernels'
//! `TP_STRUCT__entry` definitions with x86_64 field layout (see `fixtures/import/README.md`).
//! Tests, the trace.dat writer and the benchmark build their traces from these.

use crate::format::EventFormat;

/// (kernel, system, format text) of every fixture.
pub const FORMATS: &[(&str, &str, &str)] = &[
    (
        "6.12",
        "amdgpu",
        include_str!("../../../fixtures/import/6.12/amdgpu/amdgpu_cs_ioctl.format"),
    ),
    (
        "6.12",
        "amdgpu",
        include_str!("../../../fixtures/import/6.12/amdgpu/amdgpu_ib_pipe_sync.format"),
    ),
    (
        "6.12",
        "amdgpu",
        include_str!("../../../fixtures/import/6.12/amdgpu/amdgpu_iv.format"),
    ),
    (
        "6.12",
        "amdgpu",
        include_str!("../../../fixtures/import/6.12/amdgpu/amdgpu_sched_run_job.format"),
    ),
    (
        "6.12",
        "amdgpu",
        include_str!("../../../fixtures/import/6.12/amdgpu/amdgpu_vm_flush.format"),
    ),
    (
        "6.12",
        "dma_fence",
        include_str!("../../../fixtures/import/6.12/dma_fence/dma_fence_destroy.format"),
    ),
    (
        "6.12",
        "dma_fence",
        include_str!("../../../fixtures/import/6.12/dma_fence/dma_fence_emit.format"),
    ),
    (
        "6.12",
        "dma_fence",
        include_str!("../../../fixtures/import/6.12/dma_fence/dma_fence_enable_signal.format"),
    ),
    (
        "6.12",
        "dma_fence",
        include_str!("../../../fixtures/import/6.12/dma_fence/dma_fence_init.format"),
    ),
    (
        "6.12",
        "dma_fence",
        include_str!("../../../fixtures/import/6.12/dma_fence/dma_fence_signaled.format"),
    ),
    (
        "6.12",
        "dma_fence",
        include_str!("../../../fixtures/import/6.12/dma_fence/dma_fence_wait_end.format"),
    ),
    (
        "6.12",
        "dma_fence",
        include_str!("../../../fixtures/import/6.12/dma_fence/dma_fence_wait_start.format"),
    ),
    (
        "6.12",
        "drm_msm_gpu",
        include_str!("../../../fixtures/import/6.12/drm_msm_gpu/msm_gpu_submit.format"),
    ),
    (
        "6.12",
        "drm_msm_gpu",
        include_str!("../../../fixtures/import/6.12/drm_msm_gpu/msm_gpu_submit_flush.format"),
    ),
    (
        "6.12",
        "drm_msm_gpu",
        include_str!("../../../fixtures/import/6.12/drm_msm_gpu/msm_gpu_submit_retired.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_add.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_execute.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_guc_submit.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_in.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_out.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_queue.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_retire.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_submit.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_wait_begin.format"),
    ),
    (
        "6.12",
        "i915",
        include_str!("../../../fixtures/import/6.12/i915/i915_request_wait_end.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_bcl_irq.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_csd_irq.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_rcl_irq.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_reset_begin.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_reset_end.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_submit_cl.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_submit_csd.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_submit_tfu.format"),
    ),
    (
        "6.12",
        "v3d",
        include_str!("../../../fixtures/import/6.12/v3d/v3d_tfu_irq.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_exec_queue_create.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_exec_queue_destroy.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_exec_queue_kill.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_exec_queue_register.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_exec_queue_reset.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_exec_queue_submit.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_hw_fence_create.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_hw_fence_signal.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_hw_fence_try_signal.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_sched_job_ban.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_sched_job_create.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_sched_job_exec.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_sched_job_free.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_sched_job_run.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_sched_job_set_error.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_sched_job_timedout.format"),
    ),
    (
        "6.12",
        "xe",
        include_str!("../../../fixtures/import/6.12/xe/xe_vma_pagefault.format"),
    ),
    (
        "6.12",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.12/gpu_scheduler/drm_run_job.format"),
    ),
    (
        "6.12",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.12/gpu_scheduler/drm_sched_job.format"),
    ),
    (
        "6.12",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.12/gpu_scheduler/drm_sched_job_wait_dep.format"),
    ),
    (
        "6.12",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.12/gpu_scheduler/drm_sched_process_job.format"),
    ),
    (
        "6.12",
        "lima",
        include_str!("../../../fixtures/import/6.12/lima/lima_task_run.format"),
    ),
    (
        "6.12",
        "lima",
        include_str!("../../../fixtures/import/6.12/lima/lima_task_submit.format"),
    ),
    (
        "6.12",
        "sched",
        include_str!("../../../fixtures/import/6.12/sched/sched_switch.format"),
    ),
    (
        "6.12",
        "virtio_gpu",
        include_str!("../../../fixtures/import/6.12/virtio_gpu/virtio_gpu_cmd_queue.format"),
    ),
    (
        "6.12",
        "virtio_gpu",
        include_str!("../../../fixtures/import/6.12/virtio_gpu/virtio_gpu_cmd_response.format"),
    ),
    (
        "6.17",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.17/gpu_scheduler/drm_sched_job_add_dep.format"),
    ),
    (
        "6.17",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.17/gpu_scheduler/drm_sched_job_done.format"),
    ),
    (
        "6.17",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.17/gpu_scheduler/drm_sched_job_queue.format"),
    ),
    (
        "6.17",
        "gpu_scheduler",
        include_str!("../../../fixtures/import/6.17/gpu_scheduler/drm_sched_job_run.format"),
    ),
    (
        "6.17",
        "gpu_scheduler",
        include_str!(
            "../../../fixtures/import/6.17/gpu_scheduler/drm_sched_job_unschedulable.format"
        ),
    ),
    (
        "6.17",
        "amdgpu",
        include_str!("../../../fixtures/import/6.17/amdgpu/amdgpu_cs_ioctl.format"),
    ),
    (
        "6.17",
        "amdgpu",
        include_str!("../../../fixtures/import/6.17/amdgpu/amdgpu_ib_pipe_sync.format"),
    ),
    (
        "6.17",
        "amdgpu",
        include_str!("../../../fixtures/import/6.17/amdgpu/amdgpu_sched_run_job.format"),
    ),
    (
        "6.17",
        "lima",
        include_str!("../../../fixtures/import/6.17/lima/lima_task_run.format"),
    ),
    (
        "6.17",
        "lima",
        include_str!("../../../fixtures/import/6.17/lima/lima_task_submit.format"),
    ),
];

/// Systems whose 6.17 files are the whole system (the scheduler's events were renamed):
/// none of their 6.12 events is left on 6.17.
const WHOLE_IN_617: [&str; 1] = ["gpu_scheduler"];

/// The formats a `kernel` ("6.12" or "6.17") has: its own files, plus the 6.12 files of
/// the events whose formats did not change (dma_fence, virtio_gpu, sched, amdgpu's fault
/// and VM flush events, i915, xe, msm, v3d).
pub fn formats(kernel: &str) -> Vec<EventFormat> {
    let parse =
        |(s, text): (&str, &str)| EventFormat::parse(s, text).expect("fixture formats parse");
    let own: Vec<EventFormat> = FORMATS
        .iter()
        .filter(|(k, _, _)| *k == kernel)
        .map(|(_, s, t)| parse((s, t)))
        .collect();
    let mut all: Vec<EventFormat> = FORMATS
        .iter()
        .filter(|(k, _, _)| *k == "6.12" && kernel != "6.12")
        .map(|(_, s, t)| parse((s, t)))
        .filter(|f| !WHOLE_IN_617.contains(&f.system.as_str()))
        .filter(|f| !own.iter().any(|o| o.system == f.system && o.name == f.name))
        .collect();
    all.extend(own);
    all
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_fixture_parses_and_ids_are_unique() {
        let mut ids = std::collections::HashSet::new();
        for (_, s, text) in super::FORMATS {
            let f = crate::format::EventFormat::parse(s, text).unwrap();
            assert!(ids.insert(f.id), "{}", f.name);
        }
        assert!(super::formats("6.17")
            .iter()
            .any(|f| f.name == "drm_sched_job_run"));
        assert!(!super::formats("6.17")
            .iter()
            .any(|f| f.name == "drm_run_job"));
        // amdgpu's events that lost the job id in 6.17 are 6.17's, the others 6.12's.
        let f617 = super::formats("6.17");
        let pipe: Vec<_> = f617
            .iter()
            .filter(|f| f.name == "amdgpu_ib_pipe_sync")
            .collect();
        assert_eq!(pipe.len(), 1);
        assert!(pipe[0].field("id").is_none());
        assert!(f617.iter().any(|f| f.name == "amdgpu_iv"));
    }
}
