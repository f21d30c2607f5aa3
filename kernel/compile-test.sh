#!/bin/bash
# Compile test of every hook site of the series, including those QEMU cannot run (amdgpu,
# i915), and of the vsched test GPU, as single objects, twice: with CONFIG_DRM_GRTRACE=y and
# with it off, each in its own build tree configured with DRM_AMDGPU=y (no DC), DRM_I915=y,
# DRM_VIRTIO_GPU=y, DRM_GRTRACE_VSCHED=y, and DRM_I915_LOW_LEVEL_TRACEPOINTS=y in both (so that
# i915's probe on i915_request_guc_submit, built only with that debugging option, is compiled).
# Both builds use W=1 and sparse (C=2, when `sparse` is installed).
#
# Verdict: the objects build; the series' own files (drm_grtrace*, *_grtrace.[ch]) have no
# compiler or sparse warning at all; and the other objects have exactly the same warnings with
# the option on and off (upstream files carry some W=1 and sparse warnings of their own; they are
# compared without line numbers). A warning only with the option on comes from a hook; one only
# with it off comes from the stubs (v1's missing `struct drm_device;` was one).
#
# usage: kernel/compile-test.sh SRC_TREE [OBJDIR]
#   SRC_TREE: a linux-source-6.12 tree with the series applied (ci.sh keeps one in
#   $GRT_WORK/src-ct, stamped with the series it carries); OBJDIR (default SRC_TREE/grt-ct) gets
#   -on and -off siblings. Directly inside SRC_TREE, kbuild uses relative paths (srctree=..), so
#   the ccache entries do not depend on where the tree is (see build.sh)
# env: JOBS (default nproc)  GRT_SPARSE=0 skips sparse
set -uo pipefail
SRC=${1:?usage: compile-test.sh SRC_TREE [OBJDIR]}
OBJ=${2:-$SRC/grt-ct}
JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-/var/tmp/grtrace-kernel/ccache}
. "$(dirname "$0")/tree.sh"   # ccache_summary
grep -q drm_grtrace_event "$SRC/include/drm/drm_grtrace.h" || { echo "compile-test: $SRC has no grtrace series" >&2; exit 1; }
SPARSE=()
if [ "${GRT_SPARSE:-1}" = 1 ]; then
    command -v sparse >/dev/null && SPARSE=(C=2) || echo "compile-test: sparse not installed, compiler warnings only"
fi
LOG=$OBJ.log
: > "$LOG"

. "$(dirname "$0")/ct-objects.sh"   # HOOKS, CORE

# config VARIANT(on|off) DIR
config() {
    local v=$1 o=$2 s want
    mkdir -p "$o"
    make -C "$SRC" O="$o" ARCH=x86_64 tinyconfig >> "$LOG" 2>&1 || return 1
    ct_options "$v" "$SRC/scripts/config" --file "$o/.config"
    make -C "$SRC" O="$o" ARCH=x86_64 olddefconfig >> "$LOG" 2>&1 || return 1
    want=(DRM_SCHED DRM_AMDGPU DRM_I915 DRM_I915_LOW_LEVEL_TRACEPOINTS DRM_VIRTIO_GPU DRM_GRTRACE_VSCHED)
    [ "$v" = on ] && want+=(DRM_GRTRACE DRM_GRTRACE_KUNIT_TEST)
    for s in "${want[@]}"; do
        grep -q "^CONFIG_$s=y" "$o/.config" || { echo "compile-test: $v: MISSING CONFIG_$s" >&2; return 1; }
    done
    if [ "$v" = off ] && grep -q '^CONFIG_DRM_GRTRACE=y' "$o/.config"; then
        echo "compile-test: off: CONFIG_DRM_GRTRACE still set" >&2; return 1
    fi
}

# objs DIR OUT OBJECTS...: build with W=1 (and sparse), all diagnostics into OUT; ccache's log
# of these compilations into OUT.statslog
objs() {
    local o=$1 out=$2; shift 2
    local make=(make -C "$SRC" O="$o" ARCH=x86_64 -j"$JOBS" W=1 "${SPARSE[@]}")
    rm -f "$out.statslog"
    command -v ccache >/dev/null && make+=(CC="ccache gcc") && export CCACHE_STATSLOG=$out.statslog
    "${make[@]}" prepare >> "$LOG" 2>&1 || return 1
    "${make[@]}" "$@" > "$out" 2>&1
}

# warnings FILE: "path: message" per diagnostic, without line and column numbers
warnings() {
    grep -E '^[^ :]+:[0-9]+:([0-9]+:)? (warning|error):' "$1" |
        sed -E 's/^([^ :]+):[0-9]+:([0-9]+:)? /\1: /' | sed "s|^$SRC/||; s|^\.\./||" | sort -u
}

t0=$(date +%s.%N)
fail=0
# No register access at trace time (issue 27 B1): a tracepoint probe must not sleep, and on an
# SR-IOV virtual function amdgpu's register reads (the ring pointers among them) go through
# the KIQ/MES, which takes a mutex and may msleep(). The amdgpu probes read software state only.
regs=$(grep -nE 'amdgpu_ring_get_[rw]ptr|->get_[rw]ptr|\bW?RREG[0-9]*(_[A-Z0-9]+)*\(|amdgpu_device_[rw]reg|amdgpu_kiq_[rw]reg|amdgpu_mm_[rw]reg' \
    "$SRC/drivers/gpu/drm/amd/amdgpu/amdgpu_grtrace.c" || true)
[ -z "$regs" ] || { echo "compile-test: register access in the amdgpu probes:"; echo "$regs"; fail=1; }
config on "$OBJ-on" && config off "$OBJ-off" || { tail -30 "$LOG"; echo "compile-test: FAIL (config)"; exit 1; }
t1=$(date +%s.%N)
objs "$OBJ-on" "$OBJ-on.out" "${CORE[@]}" "${HOOKS[@]}" || { echo "compile-test: on: build FAILED"; fail=1; }
objs "$OBJ-off" "$OBJ-off.out" "${HOOKS[@]}" || { echo "compile-test: off: build FAILED"; fail=1; }
t2=$(date +%s.%N)
cat "$OBJ-on.out" "$OBJ-off.out" >> "$LOG"
warnings "$OBJ-on.out" > "$OBJ-on.warn"
warnings "$OBJ-off.out" > "$OBJ-off.warn"
own=$(grep -E 'drm_grtrace|_grtrace\.[ch]' "$OBJ-on.warn" "$OBJ-off.warn" || true)
on_only=$(comm -23 "$OBJ-on.warn" "$OBJ-off.warn" | grep -vE 'drm_grtrace|_grtrace\.[ch]' || true)
off_only=$(comm -13 "$OBJ-on.warn" "$OBJ-off.warn" | grep -vE 'drm_grtrace|_grtrace\.[ch]' || true)
[ -z "$own" ] || { echo "compile-test: warnings in the series' own files:"; echo "$own"; fail=1; }
[ -z "$on_only" ] || { echo "compile-test: warnings only with DRM_GRTRACE=y:"; echo "$on_only"; fail=1; }
[ -z "$off_only" ] || { echo "compile-test: warnings only with DRM_GRTRACE off:"; echo "$off_only"; fail=1; }
if [ $fail = 1 ]; then
    # make's own error lines name the object that failed; the diagnostics are in the .out files
    grep -hE '^make.*Error [0-9]' "$OBJ-on.out" "$OBJ-off.out" | head -10
    echo "compile-test: diagnostics in $OBJ-on.out and $OBJ-off.out"
    echo "compile-test: FAIL (log $LOG)"
    exit 1
fi
printf 'TIMING compile-test: config on+off %.1f s, %d + %d objects (W=1%s) %.1f s\n' \
    "$(echo "$t1 - $t0" | bc)" "$(( ${#CORE[@]} + ${#HOOKS[@]} ))" "${#HOOKS[@]}" \
    "${SPARSE[*]:+, sparse}" "$(echo "$t2 - $t1" | bc)"
if command -v ccache >/dev/null; then
    ccache_summary "compile-test on" "$OBJ-on.out.statslog"; ccache_summary "compile-test off" "$OBJ-off.out.statslog"
fi
echo "compile-test: OK ($(( ${#CORE[@]} + ${#HOOKS[@]} )) objects with DRM_GRTRACE=y, ${#HOOKS[@]} with it off; W=1${SPARSE[*]:+ and sparse}: no warning in the series' own files, the same with the option on and off; upstream's own: $(wc -l < "$OBJ-off.warn") (off) / $(wc -l < "$OBJ-on.warn") (on))"
