#!/bin/bash
# Each patch of the series builds on its own (issue 27): the series is applied one patch at a
# time to a fresh copy of the pristine tree, and after each patch the objects of the
# directories it touches are built, with CONFIG_DRM_GRTRACE=y and with it off.
#
# The objects of a step: those of ct-objects.sh (the hook sites, and with the option the core
# and the probe providers) whose directory the patch touches and whose source exists by then.
# A patch that touches only headers under include/ (patch 1, the uapi header) builds none
# here: its users are built by the steps that add them. The two object dirs are kept from
# step to step, so make rebuilds only what a patch changed (header dependencies included);
# the configuration (compile-test.sh's: amdgpu, i915, virtio-gpu, vsched) is refreshed after
# every patch, since patches add Kconfig symbols. W=1 as in compile-test.sh, so that an object
# whose sources a patch leaves as they end up is a ccache hit from the compile test, which runs
# first in ci.sh; its warnings are not judged here (compile-test.sh judges those of the whole
# series, with sparse): this checks that no patch depends on a later one.
#
# The verdict is cached like a kernel build (GRT_CACHE/perpatch-KEY, KEY = sha256 of the
# source version, the series, this script, ct-objects.sh and the gcc version): a rerun on the
# same series prints the cached verdict.
#
# usage: kernel/per-patch.sh PATCH_DIR
# One run per work dir at a time (flock on WORK/.lock-perpatch): ci.sh --prebuild runs it in the
# background after the kernels, and ci.sh's own stage waits for that run and prints its verdict.
# env: GRT_WORK (default /var/tmp/grtrace-kernel/ci; the tree is WORK/src-pp)
#      GRT_CACHE (default /var/tmp/grtrace-kernel/cache)  JOBS (default nproc)  GRT_FORCE=1
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PATCHES=${1:?usage: per-patch.sh PATCH_DIR}
WORK=${GRT_WORK:-/var/tmp/grtrace-kernel/ci}
CACHE=${GRT_CACHE:-/var/tmp/grtrace-kernel/cache}
JOBS=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-/var/tmp/grtrace-kernel/ccache} CCACHE_NOHASHDIR=1
. "$HERE/series.sh"      # series_patches
. "$HERE/tree.sh"        # TARBALL, TREE_NAME, new_tree, ccache_summary
. "$HERE/ct-objects.sh"  # HOOKS, CORE
mapfile -t SERIES < <(series_patches "$PATCHES")
[ ${#SERIES[@]} -gt 0 ] || { echo "per-patch: no patches in $PATCHES"; exit 1; }

# one run per work dir at a time: a second one (ci.sh's stage while --prebuild's still runs)
# waits, then finds the verdict in the cache
mkdir -p "$WORK"
exec 9> "$WORK/.lock-perpatch"
flock 9
key=$( { dpkg-query -W -f='${Version}\n' linux-source-6.12; stat -c '%s %Y' "$TARBALL"
         for p in "${SERIES[@]}"; do echo "${p##*/}"; cat "$p"; done
         cat "$0" "$HERE/ct-objects.sh"; gcc --version | head -1; } 2>&1 | sha256sum | cut -c1-16)
if [ "${GRT_FORCE:-0}" != 1 ] && [ -f "$CACHE/perpatch-$key/PASS" ]; then
    echo "per-patch: cached verdict (key $key): $(cat "$CACHE/perpatch-$key/PASS")"
    exit 0
fi

T=$WORK/src-pp; SRC=$T/$TREE_NAME; LOG=$T/per-patch.log
t0=$(date +%s.%N)
new_tree "$WORK" "$T" || { echo "per-patch: unpack $TARBALL failed"; exit 1; }
: > "$LOG"
MAKE=(make -C "$SRC" ARCH=x86_64 -j"$JOBS" W=1)
command -v ccache > /dev/null && MAKE+=(CC="ccache gcc") && export CCACHE_STATSLOG=$T/ccache.statslog
rm -f "$T/ccache.statslog"

# configure VARIANT: (re)configure SRC/pp-VARIANT as compile-test.sh does; the symbols the
# series adds are set once their Kconfig exists (olddefconfig drops unknown ones)
configure() {
    local o=$SRC/pp-$1
    if [ ! -f "$o/.config" ]; then
        mkdir -p "$o"
        "${MAKE[@]}" O="$o" tinyconfig >> "$LOG" 2>&1 || return 1
    fi
    ct_options "$1" "$SRC/scripts/config" --file "$o/.config"
    "${MAKE[@]}" O="$o" olddefconfig >> "$LOG" 2>&1 || return 1
    if [ "$1" = on ] && grep -q '^config DRM_GRTRACE$' "$SRC/drivers/gpu/drm/Kconfig"; then
        grep -q '^CONFIG_DRM_GRTRACE=y' "$o/.config" || { echo "per-patch: on: CONFIG_DRM_GRTRACE not set" >&2; return 1; }
    fi
    if [ "$1" = off ] && grep -q '^CONFIG_DRM_GRTRACE=y' "$o/.config"; then
        echo "per-patch: off: CONFIG_DRM_GRTRACE still set" >&2; return 1
    fi
}

fail=0; nobj=0; n=0
for p in "${SERIES[@]}"; do
    n=$((n + 1)); name=${p##*/}
    if ! patch -d "$SRC" -p1 -s -f < "$p" >> "$LOG" 2>&1; then
        echo "per-patch: $name does not apply"; fail=1; break
    fi
    # the directories the patch touches (new and changed files)
    mapfile -t dirs < <(sed -n 's|^+++ b/\(.*\)/[^/]*$|\1|p' "$p" | sort -u)
    step() {  # step VARIANT OBJECTS...: the objects of the touched dirs whose source exists
        local v=$1 o s want=(); shift
        for o in "$@"; do
            s=${o%.o}.c
            [ -f "$SRC/$s" ] || continue
            printf '%s\n' "${dirs[@]}" | grep -qxF "${o%/*}" && want+=("$o")
        done
        [ ${#want[@]} -gt 0 ] || { echo "  $v: no object"; return 0; }
        configure "$v" || { echo "  $v: config FAILED (log $LOG)"; return 1; }
        if "${MAKE[@]}" O="$SRC/pp-$v" "${want[@]}" > "$T/step-$n-$v.out" 2>&1; then
            echo "  $v: ${#want[@]} objects built (${want[*]##*/})"
            nobj=$((nobj + ${#want[@]}))
        else
            echo "  $v: build FAILED:"; grep -E 'error|Error' "$T/step-$n-$v.out" | head -10
            return 1
        fi
    }
    echo "per-patch: $name"
    step on "${HOOKS[@]}" "${CORE[@]}" || fail=1
    step off "${HOOKS[@]}" || fail=1
    [ $fail = 0 ] || break
done
cat "$T"/step-*.out >> "$LOG" 2>/dev/null
printf 'TIMING per-patch: %d patches, %d object builds, %.1f s\n' "$n" "$nobj" "$(echo "$(date +%s.%N) - $t0" | bc)"
command -v ccache > /dev/null && ccache_summary "per-patch" "$T/ccache.statslog"
if [ $fail = 1 ]; then
    echo "per-patch: FAIL at $name (log $LOG)"; exit 1
fi
verdict="each of the ${#SERIES[@]} patches builds on its own, option on and off ($nobj object builds)"
mkdir -p "$CACHE/perpatch-$key" && echo "$verdict" > "$CACHE/perpatch-$key/PASS"
echo "per-patch: OK: $verdict"
