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
];

/// The formats a `kernel` ("6.12" or "6.17") has: its own files, plus the 6.12 files of
/// systems whose formats did not change (dma_fence, virtio_gpu, amdgpu, sched).
pub fn formats(kernel: &str) -> Vec<EventFormat> {
    let own: Vec<&str> = FORMATS
        .iter()
        .filter(|(k, _, _)| *k == kernel)
        .map(|(_, s, _)| *s)
        .collect();
    FORMATS
        .iter()
        .filter(|(k, s, _)| *k == kernel || (*k == "6.12" && !own.contains(s)))
        .map(|(_, s, text)| EventFormat::parse(s, text).expect("fixture formats parse"))
        .collect()
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
    }
}
