#!/bin/bash
# Compile test of every hook site of the series that QEMU cannot run: drm_sched, amdgpu and
# i915 (plus the core, virtio-gpu and the vsched test GPU), as single objects with -Werror, in a second build
# tree configured with DRM_AMDGPU=y (no DC), DRM_I915=y, DRM_VIRTIO_GPU=y, DRM_GRTRACE=y.
# usage: kernel/compile-test.sh SRC_TREE [OBJDIR]
#   SRC_TREE: a linux-source-6.12 tree with the series applied (ci.sh keeps one in
#   $GRT_WORK/src-ct, stamped with the series it carries)
# env: JOBS (default nproc)
set -euo pipefail
SRC=${1:?usage: compile-test.sh SRC_TREE [OBJDIR]}
OBJ=${2:-/var/tmp/grtrace-kernel/ci/build-ct}
JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-/var/tmp/grtrace-kernel/ccache}
mkdir -p "$OBJ"
MAKE=(make -C "$SRC" O="$OBJ" ARCH=x86_64 -j"$JOBS" KCFLAGS=-Werror)
command -v ccache >/dev/null && MAKE+=(CC="ccache gcc")
grep -q drm_grtrace_event "$SRC/include/drm/drm_grtrace.h" || { echo "compile-test: $SRC has no grtrace series" >&2; exit 1; }

t0=$(date +%s.%N)
"${MAKE[@]}" tinyconfig > /dev/null
C="$SRC/scripts/config --file $OBJ/.config"
$C -e 64BIT -e SMP -e PRINTK -e TTY -e PROC_FS -e SYSFS -e DEBUG_FS -e RELAY -e SHMEM -e TMPFS \
   -e MULTIUSER -e FUTEX -e PCI -e PCI_MSI -e DRM -e DRM_FBDEV_EMULATION \
   -e FTRACE -e ENABLE_DEFAULT_TRACERS -e KUNIT \
   -e DRM_AMDGPU -d DRM_AMD_DC -e DRM_I915 -e DRM_VIRTIO_GPU -e VIRTIO_MENU -e VIRTIO_PCI \
   -e MTRR -e X86_PAT -e DRM_GRTRACE -e DRM_GRTRACE_KUNIT_TEST -e DRM_GRTRACE_VSCHED
"${MAKE[@]}" olddefconfig > /dev/null
for s in DRM_SCHED DRM_AMDGPU DRM_I915 DRM_VIRTIO_GPU DRM_GRTRACE DRM_GRTRACE_KUNIT_TEST DRM_GRTRACE_VSCHED; do
    grep -q "^CONFIG_$s=y" "$OBJ/.config" || { echo "compile-test: MISSING CONFIG_$s" >&2; exit 1; }
done
"${MAKE[@]}" prepare > "$OBJ/../compile-test.log" 2>&1 || { tail -30 "$OBJ/../compile-test.log"; exit 1; }
t1=$(date +%s.%N)
D=drivers/gpu/drm
OBJS=(
  $D/drm_grtrace.o $D/drm_drv.o
  $D/scheduler/sched_main.o $D/scheduler/sched_entity.o $D/scheduler/sched_fence.o
  $D/grtrace/vsched.o
  $D/virtio/virtgpu_vq.o $D/virtio/virtgpu_fence.o $D/virtio/virtgpu_ioctl.o
  $D/virtio/virtgpu_kms.o $D/virtio/virtgpu_object.o
  $D/amd/amdgpu/amdgpu_ring.o $D/amd/amdgpu/amdgpu_fence.o $D/amd/amdgpu/amdgpu_ib.o
  $D/amd/amdgpu/amdgpu_job.o $D/amd/amdgpu/amdgpu_vm.o $D/amd/amdgpu/amdgpu_object.o
  $D/amd/amdgpu/amdgpu_device.o $D/amd/amdgpu/amdgpu_ring_mux.o $D/amd/amdgpu/gmc_v9_0.o
  $D/i915/i915_request.o $D/i915/gt/intel_ring.o $D/i915/gt/intel_breadcrumbs.o
  $D/i915/gt/intel_execlists_submission.o $D/i915/gt/intel_reset.o
  $D/i915/gt/intel_engine_user.o
)
if ! "${MAKE[@]}" "${OBJS[@]}" >> "$OBJ/../compile-test.log" 2>&1; then
    grep -E 'error|warning' "$OBJ/../compile-test.log" | head -30
    echo "compile-test: FAIL (log $OBJ/../compile-test.log)"
    exit 1
fi
t2=$(date +%s.%N)
printf 'TIMING compile-test: config+prepare %.1f s, %d hook objects %.1f s\n' \
    "$(echo "$t1 - $t0" | bc)" "${#OBJS[@]}" "$(echo "$t2 - $t1" | bc)"
echo "compile-test: OK (${#OBJS[@]} objects: core, drm_sched, vsched, virtio-gpu, amdgpu, i915, -Werror)"
