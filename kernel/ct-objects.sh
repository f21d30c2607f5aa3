# shellcheck shell=bash
# The objects of the series' hook sites and of its own files, and the options they are built
# with, defined once for compile-test.sh and per-patch.sh (sourced, not run).
# HOOKS: the objects the series changes (built with CONFIG_DRM_GRTRACE on and off);
# CORE: the core and the probe providers (tracepoint consumers), built only with the option.
D=drivers/gpu/drm
HOOKS=(
  $D/drm_drv.o $D/drm_ioctl.o
  $D/scheduler/sched_main.o $D/scheduler/sched_entity.o $D/scheduler/sched_fence.o
  $D/grtrace/vsched.o
  $D/virtio/virtgpu_vq.o $D/virtio/virtgpu_fence.o $D/virtio/virtgpu_ioctl.o
  $D/virtio/virtgpu_kms.o $D/virtio/virtgpu_object.o $D/virtio/virtgpu_drv.o
  $D/virtio/virtgpu_trace_points.o drivers/dma-buf/dma-fence.o
  $D/amd/amdgpu/amdgpu_ring.o $D/amd/amdgpu/amdgpu_fence.o $D/amd/amdgpu/amdgpu_ib.o
  $D/amd/amdgpu/amdgpu_job.o $D/amd/amdgpu/amdgpu_vm.o $D/amd/amdgpu/amdgpu_object.o
  $D/amd/amdgpu/amdgpu_device.o $D/amd/amdgpu/amdgpu_ring_mux.o $D/amd/amdgpu/gmc_v9_0.o
  $D/amd/amdgpu/amdgpu_drv.o $D/amd/amdgpu/amdgpu_trace_points.o
  $D/i915/i915_trace_points.o $D/i915/i915_module.o $D/i915/gt/intel_ring.o
  $D/i915/gt/intel_lrc.o $D/i915/gt/intel_execlists_submission.o
  $D/i915/gt/intel_engine_user.o $D/i915/i915_gem.o
)
CORE=($D/drm_grtrace.o $D/drm_grtrace_probes.o $D/tests/drm_grtrace_test.o
  $D/scheduler/sched_grtrace.o $D/virtio/virtgpu_grtrace.o $D/amd/amdgpu/amdgpu_grtrace.o
  $D/i915/i915_grtrace.o)

# ct_options VARIANT(on|off) CONFIG...: sets the compile test's options on a tinyconfig with
# CONFIG... (the kernel's scripts/config and its --file), DRM_GRTRACE on or off by VARIANT
ct_options() {
    local v=$1; shift
    "$@" -e 64BIT -e SMP -e PRINTK -e TTY -e PROC_FS -e SYSFS -e DEBUG_FS -e RELAY -e SHMEM -e TMPFS \
       -e MULTIUSER -e FUTEX -e PCI -e PCI_MSI -e DRM -e DRM_FBDEV_EMULATION \
       -e FTRACE -e ENABLE_DEFAULT_TRACERS -e KUNIT \
       -e DRM_AMDGPU -d DRM_AMD_DC -e DRM_I915 -e DRM_VIRTIO_GPU -e VIRTIO_MENU -e VIRTIO_PCI \
       -e MTRR -e X86_PAT -e DRM_GRTRACE_VSCHED -e EXPERT -e DRM_I915_LOW_LEVEL_TRACEPOINTS
    if [ "$v" = on ]; then "$@" -e DRM_GRTRACE -e DRM_GRTRACE_KUNIT_TEST; else "$@" -d DRM_GRTRACE; fi
}
