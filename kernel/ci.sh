#!/bin/bash
# The kernel stage of CI, end to end, on a fresh Debian 12 machine (root, 2 cores):
#   1. apt dependencies (skipped when present)
#   2. the real grtrace recorder, built static, plus grtparse and grtreport
#   3. kernel: Debian linux-source-6.12 + kernel/patches/ + minimal config
#      (kernel/build.sh; skipped on a cache hit in /var/tmp/grtrace-kernel/cache)
#   4. initramfs, QEMU boot "e2e": record the virtio-gpu workload, count it with the
#      kernel's tracepoints in the same run, tiny-buffer and no-consumer loss runs, KUnit
#   5. host verdict with grtparse and grtreport (kernel/verify.sh)
#   6. QEMU boot "stress": teardown while recording, repeated start/stop, error paths
#   6b. QEMU boot "sched": drm_sched for real on the vsched test GPU (patch 13), recorded by
#      grtrace and checked one for one against the gpu_scheduler tracepoints
#      (kernel/verify-sched.sh; GRT_SCHED=0 skips it)
#   6c. QEMU boot "bench": the relay transport against an ftrace instance for the same
#      tracepoint and payload (patch 14): ns an event, rates, and every run's loss account
#      checked (kernel/bench.sh; GRT_BENCH=0 skips it)
#   7. compile test of the drm_sched, amdgpu and i915 hook sites (kernel/compile-test.sh)
#   7b. each patch builds on its own, option on and off (kernel/per-patch.sh; verdict cached
#      per series; GRT_PERPATCH=0 skips it)
#   8. stock kernel (build.sh stock: Debian's 6.12 without the series, cached the same way):
#      the GPU tracepoints recorded in one run by `grtrace --ftrace`, `trace-cmd record` into
#      trace.dat v7 and v6, and counted by a tracefs instance; host verdict with grtimport,
#      grtparse and grtreport (kernel/verify-stock.sh); 2D and virgl (GRT_STOCK=0 skips it)
#   8b. Debian's own prebuilt 7.x kernel (kernel/debian-kernel.sh, unpatched, from trixie-
#      backports), the same stock boot and verdict: formats of a real newer kernel (GRT_DEBIAN=0
#      skips it)
#   8c. the upstream series (kernel/upstream/: the tracepoints alone, on Debian's
#      linux-source-7.3; kernel/upstream/build.sh, cached the same way): checkpatch --strict
#      of every patch, each patch's objects built after it alone (W=1), and the same stock
#      boot and verdict, with the drm_sched KUnit suites loaded as a module and recorded
#      (GRT_UPSTREAM=0 skips it)
#   9. lockdep + KASAN kernel (build.sh debug, cached like the main one): e2e, stress and sched again
#      (GRT_DEBUG=0 skips it; it is last so that every other failure shows first); its drm is
#      modular (loaded from a second cpio appended to the initramfs), so its stress boot also
#      unloads and reloads the drm stack between two recordings
# The e2e boot runs twice: 2D (virtio-gpu-pci) and virgl (virtio-gpu-gl-pci; GRT_VIRGL=0 skips).
# Optional: GRT_COST=1 also builds the kernel without the series and measures the tracing
# cost (absent / present but off / on). Prints TIMING lines and a final VERDICT; exits
# non-zero on any failure.
#
# Two helper modes, for scripts/test.sh:
#   ci.sh --deps      the apt dependencies alone (1.)
#   ci.sh --prebuild  builds, one after the other, every kernel this run will boot (grtrace,
#                     then stock, debug and base as GRT_STOCK, GRT_DEBUG and GRT_COST ask),
#                     then the per-patch build (7b; its stage waits for it and prints its
#                     cached verdict), log in GRT_WORK/prebuild.log. test.sh starts it in the background at nice
#                     19 before the Rust stages, so that the kernels build on whatever CPU
#                     those leave idle; ci.sh's own build.sh calls then wait for the build of
#                     their variant (build.sh's lock) and find it in the cache. What is built
#                     and booted is the same as without it.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
. "$HERE/series.sh"
. "$HERE/tree.sh"   # TARBALL, new_tree
WORK=${GRT_WORK:-/var/tmp/grtrace-kernel/ci}
RUN=$WORK/run-$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN"
T0=$(date +%s.%N)
failed=()
# stage TITLE: the stage's heading; its wall and CPU clocks start (t, c) for its lap
stage() {
    printf '\n=== kernel: %s (%s)\n' "$*" "$(date -u +%T)"
    t=$(date +%s.%N) c=$(cpu_seconds)
}
# lap NAME WALL_START [CPU_START]: TIMING line, wall and CPU seconds (of ci.sh and what it waited
# for: a kernel built by the background prebuild counts in that build's own TIMING line);
# CPU_START defaults to $c, which stage set with t
lap() { printf 'TIMING %s: %.1f s wall, %.1f s CPU\n' "$1" "$(echo "$(date +%s.%N) - $2" | bc)" \
    "$(echo "$(cpu_seconds) - ${3:-$c}" | bc)"; }
fail() { echo "FAIL: $*"; failed+=("$*"); }
finish() {
    local kept
    kept=$(cd "$RUN" && ls -d */stale-int3 2>/dev/null | tr '\n' ' ')
    [ -z "$kept" ] || echo "KNOWN: booted again after QEMU ran a stale int3 (kernel/README.md): $kept"
    printf '\nTIMING kernel stage total: %.1f s wall, %s s CPU\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$(cpu_seconds)"
    if [ ${#failed[@]} = 0 ]; then
        echo "VERDICT kernel: PASS (results in $RUN)"; exit 0
    fi
    echo "VERDICT kernel: FAIL: ${failed[*]} (results in $RUN)"; exit 1
}
# kbuild VARIANT: build.sh VARIANT (cache hit or build), log $RUN/build-VARIANT.log; sets KIMG
# to the bzImage and KMODS to its modules dir (empty: none), or records a failure and returns 1
# (the caller skips what needs the kernel)
kbuild() {
    KIMG=; KMODS=
    bash "$HERE/build.sh" "$1" 2>&1 | tee "$RUN/build-$1.log" &&
        KIMG=$(sed -n 's/^KERNEL //p' "$RUN/build-$1.log" | tail -1) &&
        KMODS=$(sed -n 's/^MODULES //p' "$RUN/build-$1.log" | tail -1)
    [ -n "$KIMG" ] && [ -f "$KIMG" ] && return 0
    KIMG=; fail "$1 kernel build"; return 1
}
# e2e KERNEL DIR LABEL: boot mode e2e into $RUN/DIR, host verdict in $RUN/DIR/verify.txt
# (env such as VIRGL, TIMEOUT, MEM passes through to boot.sh; INITRD, default the shared
# initramfs, names the one to boot)
e2e() {
    bash "$HERE/boot.sh" "$1" "${INITRD:-$RUN/initramfs.cpio}" "$RUN/$2" e2e || fail "$3 boot"
    grep -hE '^GRT: (\[wl\] .*(us/iter|DONE)|.*rc=|overflow dropped)' "$RUN/$2"/serial-e2e*.log
    bash "$HERE/verify.sh" "$RUN/$2" "$GRTPARSE" "$GRTREPORT" | tee "$RUN/$2/verify.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "$3 verification"
}
# stress KERNEL DIR LABEL: boot mode stress into $RUN/DIR: no kernel warning, no error path
# accepted; with RELOAD=1 (drm as modules) the drm reload step must have run without warning
stress() {
    local log=$RUN/$2/serial-stress.log
    bash "$HERE/boot.sh" "$1" "${INITRD:-$RUN/initramfs.cpio}" "$RUN/$2" stress || fail "$3 boot"
    grep '^GRT:' "$log" | grep -v -- '---'
    grep -q '^GRT: warnings=0' "$log" || fail "$3: kernel warnings"
    ! grep -q 'FAIL' "$log" || fail "$3: error path accepted"
    hotplug_refused "$log" "$3"
    [ "${RELOAD:-0}" = 0 ] || grep -q '^GRT: reload step: kernel warnings=0' "$log" || fail "$3: drm module reload"
}
# hotplug_refused LOG LABEL: in the stress boot's CPU hotplug step, the real grtrace recorder
# read the kernel's refused_cpu at stop and warned of it (#1: CPU 1 online after setup, at
# least as many as info showed while recording, and more than none), and warned of nothing
# when CPU 1 was online at setup (#2: offline and online again keeps its buffer)
hotplug_refused() {
    grep -q '^GRT: cpu 1 online after setup' "$1" || return 0  # no hotplug in this guest
    if ! grep -qE '^GRT: hotplug recorder=grtrace\s*$' "$1"; then
        fail "$2: hotplug step not recorded by grtrace (the C drain does not read refused_cpu)"
        return
    fi
    local seen said total
    seen=$(sed -n 's/^GRT: cpu 1 online after setup: .*refused_cpu \([0-9]*\).*/\1/p' "$1")
    said=$(sed -n 's/^GRT: \[hp1\] You have \([0-9]*\) records refused on card0 .*/\1/p' "$1")
    total=$(sed -n 's/^GRT: \[hp1\] .*Total:.*refused \([0-9]*\) on CPUs online after setup.*/\1/p' "$1")
    echo "hotplug: info refused_cpu=${seen:-?} while recording, grtrace at stop: warning ${said:-none}, summary ${total:-none}"
    [ -n "$seen" ] && [ "$seen" -gt 0 ] || fail "$2: hotplug #1: no record refused on CPU 1 (nothing to check)"
    [ -n "$said" ] && [ "$said" -ge "${seen:-1}" ] && [ "$total" = "$said" ] ||
        fail "$2: hotplug #1: grtrace did not report the records refused on CPU 1"
    ! grep -q '^GRT: \[hp2\]' "$1" || fail "$2: hotplug #2: grtrace reported refused records of a CPU online at setup"
}

# apt_deps: install what the kernel stage needs (and the pinned kernel source, so that
# build.sh does not run apt-get itself, perhaps beside the browser stage's apt-get)
apt_deps() {
    local DEPS missing d apt=(apt-get -o DPkg::Lock::Timeout=600)
    DEPS=(build-essential flex bison bc libelf-dev libssl-dev cpio xz-utils file busybox-static
          qemu-system-x86 ccache patch)
    [ "${GRT_STOCK:-1}" = 1 ] && DEPS+=(trace-cmd)
    [ "${GRT_VIRGL:-1}" = 1 ] && DEPS+=(xvfb xauth)
    missing=()
    for d in "${DEPS[@]}"; do dpkg -s "$d" > /dev/null 2>&1 || missing+=("$d"); done
    if [ ${#missing[@]} -gt 0 ]; then
        "${apt[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq "${missing[@]}" > /dev/null ||
            { fail "apt-get install ${missing[*]}"; return 1; }
    fi
    if [ ! -f "$TARBALL" ]; then
        # build.sh's pinned version when there is one (it warns when another is installed)
        DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq "linux-source-6.12=$(sed -n 's/^TESTED_VERSION=\([^ ]*\).*/\1/p' "$HERE/build.sh")" > /dev/null 2>&1 ||
            DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq linux-source-6.12 > /dev/null ||
            { fail "apt-get install linux-source-6.12"; return 1; }
    fi
}

case ${1:-} in
    --deps) rmdir "$RUN"; stage "apt dependencies"; apt_deps || finish; lap "apt" "$T0" 0; exit 0 ;;
    --prebuild)
        exec > "$WORK/prebuild.log" 2>&1
        rmdir "$RUN"
        variants=(grtrace)
        [ "${GRT_STOCK:-1}" = 1 ] && variants+=(stock)
        [ "${GRT_DEBUG:-1}" = 1 ] && variants+=(debug)
        [ "${GRT_COST:-0}" = 1 ] && variants+=(base)
        # Debian's own 7.x kernel (a download, not a build) first, while the network is idle
        if [ "${GRT_STOCK:-1}" = 1 ] && [ "${GRT_DEBIAN:-1}" = 1 ]; then
            echo "== prebuild debian ($(date -u +%T))"
            bash "$HERE/debian-kernel.sh" || echo "== prebuild debian FAILED (ci.sh's own call will show why)"
        fi
        for v in "${variants[@]}"; do
            echo "== prebuild $v ($(date -u +%T))"
            bash "$HERE/build.sh" "$v" || echo "== prebuild $v FAILED (ci.sh's own build.sh call will show why)"
        done
        if [ "${GRT_STOCK:-1}" = 1 ] && [ "${GRT_UPSTREAM:-1}" = 1 ]; then
            echo "== prebuild upstream ($(date -u +%T))"
            bash "$HERE/upstream/build.sh" || echo "== prebuild upstream FAILED (ci.sh's own call will show why)"
        fi
        if [ "${GRT_PERPATCH:-1}" = 1 ]; then
            echo "== prebuild per-patch ($(date -u +%T))"
            bash "$HERE/per-patch.sh" "$HERE/patches" || echo "== prebuild per-patch FAILED (ci.sh's stage runs it again and shows why)"
        fi
        echo "== prebuild done ($(date -u +%T))"
        exit 0 ;;
esac

stage "apt dependencies"
apt_deps || finish
lap "apt" "$t"

stage "boot.sh's reading of a guest killed by QEMU (oops.sh)"
# boot.sh boots again only after a death that is QEMU's: the real one of 7 Dec is recognised
# (also as the serial port's CRLF lines); with the int3 still in memory, another oops, an
# int3 oops after another, or a Code: line without bytes, it is not
. "$HERE/oops.sh"
OOPS=$ROOT/fixtures/kernel/stale-int3.serial
if stale_int3 "$OOPS" && stale_int3 <(sed 's/$/\r/' "$OOPS") &&
    ! stale_int3 <(sed 's/ eb <57>/ cc <57>/' "$OOPS") &&
    ! stale_int3 <(sed 's/Oops: int3:/Oops: general protection fault:/' "$OOPS") &&
    ! stale_int3 <(sed 's/\[#1\]/[#2]/' "$OOPS") &&
    ! stale_int3 <(sed 's/Code: .*/Code: Unable to access opcode bytes at 0xffffffff81000000./' "$OOPS"); then
    echo "ok   the real stale int3 recognised, five variants refused (fixtures/kernel/stale-int3.serial)"
else
    fail "boot.sh's stale int3 reading (kernel/oops.sh)"
fi

stage "Rust binaries: grtrace (static), grtparse, grtreport"
cd "$ROOT"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
REC=
if RUSTFLAGS="-C target-feature=+crt-static" cargo build -q --release \
        --target x86_64-unknown-linux-gnu -p grtrace-record > "$RUN/cargo-grtrace.log" 2>&1; then
    REC=$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/grtrace
    if ! "$REC" --help 2>&1 | grep -q -- '-o'; then
        # the guest still records with the C drain, so the other checks run, but CI fails
        fail "static grtrace has no usable CLI (no -o in --help)"; REC=
    fi
else
    tail -20 "$RUN/cargo-grtrace.log"; fail "cargo build grtrace (static)"
fi
{ cargo build -q --release -p grtparse -p grtreport &&
    cargo build -q --release -p grtreport --example tefcheck; } > "$RUN/cargo-tools.log" 2>&1 ||
    { tail -20 "$RUN/cargo-tools.log"; fail "cargo build grtparse/grtreport"; finish; }
export TEFCHECK=$CARGO_TARGET_DIR/release/examples/tefcheck  # verify.sh checks --perfetto with it
GRTPARSE=$CARGO_TARGET_DIR/release/grtparse
GRTREPORT=$CARGO_TARGET_DIR/release/grtreport
lap "Rust binaries" "$t"

stage "kernel build (series + minimal config)"
kbuild grtrace || finish
KERNEL=$KIMG
lap "kernel build (cache hit or build)" "$t"

stage "initramfs"
bash "$HERE/mkinitramfs.sh" "$RUN/initramfs.cpio" $REC || { fail "initramfs"; finish; }

stage "QEMU e2e: record the virtio-gpu workload, count it with tracepoints, loss runs, KUnit"
e2e "$KERNEL" e2e e2e
lap "boot to verdict (e2e boot + host checks)" "$t"

if [ "${GRT_VIRGL:-1}" = 1 ]; then
    stage "QEMU e2e with virgl (virtio-gpu-gl-pci, llvmpipe in Xvfb): real contexts, SUBMIT_3D fences"
    VIRGL=1 e2e "$KERNEL" e2e-virgl "virgl e2e"
    grep -E '^(CTX_CREATE|CTX_SWITCH|CTX_DESTROY) ' "$RUN/e2e-virgl/run.txt"  # verify.sh's grtparse output
    lap "virgl boot to verdict" "$t"
fi

stage "QEMU stress: teardown while recording, start/stop x40, error paths"
stress "$KERNEL" stress stress
lap "stress boot" "$t"

if [ "${GRT_SCHED:-1}" = 1 ]; then
    stage "QEMU sched: drm_sched on the vsched test GPU, grtrace vs the gpu_scheduler tracepoints"
    bash "$HERE/boot.sh" "$KERNEL" "$RUN/initramfs.cpio" "$RUN/sched" sched || fail "sched boot"
    grep -hE '^GRT: (\[swl\]|sched workload rc=|after sched run|vsched grtrace dir)' "$RUN/sched/serial-sched.log"
    bash "$HERE/verify-sched.sh" "$RUN/sched" "$GRTPARSE" "$GRTREPORT" | tee "$RUN/sched/verify.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "sched verification"
    lap "sched boot to verdict" "$t"
fi

if [ "${GRT_BENCH:-1}" = 1 ]; then
    stage "QEMU bench: the relay transport against an ftrace instance (vsched_bench)"
    mkdir -p "$RUN/bench"
    : > "$RUN/bench/figures.txt"  # there before boot.sh looks (its retry moves only new files)
    bash "$HERE/bench.sh" "$KERNEL" "$RUN/initramfs.cpio" "$RUN/bench" | tee "$RUN/bench/figures.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "bench accounts"
    lap "bench boot to verdict" "$t"
fi

stage "compile test of the hook sites (drm_sched, amdgpu, i915)"
# Its own tree, stamped (CT/SERIES) with the source version and the series it carries, written
# only once every patch applied; copied anew from the pristine tree (tree.sh) and re-patched
# whenever the stamp differs.  (build.sh's src-grtrace is kept across cache hits, so it may carry
# an older series.)  Its object dirs are inside it (grt-ct-on, grt-ct-off), for the same relative
# paths as build.sh's trees: on and off share the ccache entries of every object the option does
# not change, and so does the next run's tree after a series change.
CT=$WORK/src-ct; CT_SRC=$CT/$TREE_NAME
mapfile -t SERIES < <(series_patches "$HERE/patches")
ct_stamp=$( { dpkg-query -W -f='${Version}\n' linux-source-6.12; stat -c '%s %Y' "$TARBALL"
              for p in "${SERIES[@]}"; do echo "${p##*/}"; cat "$p"; done; } 2>&1 | sha256sum | cut -c1-16)
ct_ok=1
[ ${#SERIES[@]} -gt 0 ] || { fail "compile test: no patches in $HERE/patches"; ct_ok=0; }
if [ $ct_ok = 1 ] && [ "$(cat "$CT/SERIES" 2>/dev/null)" != "$ct_stamp" ]; then
    echo "compile-test tree $CT: copying the pristine tree and applying ${#SERIES[@]} patches (stamp $ct_stamp)"
    rm -rf "$WORK/build-ct-on" "$WORK/build-ct-off"   # the object dirs of older versions
    new_tree "$WORK" "$CT" || { fail "compile test: unpack $TARBALL"; ct_ok=0; }
    for p in "${SERIES[@]}"; do
        [ $ct_ok = 1 ] || break
        if ! patch -d "$CT_SRC" -p1 -s -f < "$p"; then
            fail "compile test: $(basename "$p") does not apply"; ct_ok=0
        fi
    done
    [ $ct_ok = 1 ] && echo "$ct_stamp" > "$CT/SERIES"
fi
if [ $ct_ok = 1 ]; then
    bash "$HERE/compile-test.sh" "$CT_SRC" "$CT_SRC/grt-ct" || fail "compile test"
else
    echo "compile test skipped: no tree with the current series"
fi
lap "compile test" "$t"

if [ "${GRT_PERPATCH:-1}" = 1 ]; then
    stage "each patch builds on its own (the objects of the directories it touches, option on and off)"
    bash "$HERE/per-patch.sh" "$HERE/patches" || fail "per-patch build"
    lap "per-patch build" "$t"
fi

if [ "${GRT_COST:-0}" = 1 ]; then
    stage "tracing cost: series absent / present but off / on"
    if kbuild base; then
        bash "$HERE/cost.sh" "$KIMG" "$KERNEL" "$RUN/initramfs.cpio" "$RUN/cost" || fail "cost"
    fi
    lap "tracing cost" "$t"
fi

if [ "${GRT_STOCK:-1}" = 1 ]; then
    stage "stock kernel (no series): grtrace --ftrace, trace-cmd v7 + v6, counting instance, grtimport"
    GRTIMPORT=
    if grep -qs '"grtimport"' "$ROOT"/crates/*/Cargo.toml; then
        if cargo build -q --release --bin grtimport > "$RUN/cargo-grtimport.log" 2>&1; then
            GRTIMPORT=$CARGO_TARGET_DIR/release/grtimport
        else
            tail -20 "$RUN/cargo-grtimport.log"; fail "cargo build grtimport"
        fi
    fi
    if kbuild stock; then
        STOCK_KERNEL=$KIMG
        lap "stock kernel (cache hit or build)" "$t"
        TRACE_CMD=$(command -v trace-cmd) bash "$HERE/mkinitramfs.sh" "$RUN/initramfs-stock.cpio" $REC ||
            fail "stock initramfs"
        # stock DIR LABEL: boot the stock kernel (mode stock) into $RUN/DIR, verdict in DIR/verify.txt
        # (SINITRD names another initramfs)
        stock() {
            local t1 c1; t1=$(date +%s.%N) c1=$(cpu_seconds)
            bash "$HERE/boot.sh" "$STOCK_KERNEL" "${SINITRD:-$RUN/initramfs-stock.cpio}" "$RUN/$1" stock || fail "$2 boot"
            grep -hE '^GRT: (\[wl\] .*DONE|.*rc=|count instance|lockdown|stock event|trace-cmd=)' "$RUN/$1"/serial-stock*.log
            bash "$HERE/verify-stock.sh" "$RUN/$1" "${GRTIMPORT:--}" "$GRTPARSE" "$GRTREPORT" | tee "$RUN/$1/verify.txt"
            [ "${PIPESTATUS[0]}" = 0 ] || fail "$2 verification"
            lap "$2 boot to verdict" "$t1" "$c1"
        }
        stock stock "stock kernel"
        [ "${GRT_VIRGL:-1}" = 1 ] && VIRGL=1 stock stock-virgl "stock kernel virgl"
        # modular DIR LABEL SCRIPT...: SCRIPT prints a kernel and its modules (KERNEL, MODULES
        # lines); booted in the stock mode with the modules in a second cpio, into $RUN/DIR
        modular() {
            local dir=$1 label=$2 log=$RUN/$1-kernel.log img mods t1; shift 2
            t1=$(date +%s.%N)
            if "$@" > "$log" 2>&1 &&
                img=$(sed -n 's/^KERNEL //p' "$log") && mods=$(sed -n 's/^MODULES //p' "$log") &&
                bash "$HERE/mkinitramfs.sh" --modules "$mods" "$RUN/initramfs-stock.cpio" "$RUN/initramfs-$dir.cpio"; then
                grep -E '^(== cache|TIMING|ccache)' "$log"
                lap "$label (cache hit, build or download)" "$t1"
                STOCK_KERNEL=$img SINITRD=$RUN/initramfs-$dir.cpio TIMEOUT=600 stock "$dir" "$label"
            else
                tail -5 "$log"; fail "$label (build, download or initramfs)"
            fi
        }
        # Debian's own prebuilt 7.x kernel, unpatched (kernel/debian-kernel.sh): a real newer
        # kernel's formats, the same workload and checks; its drm and 9p are modules
        # (GRT_DEBIAN=0 skips it)
        [ "${GRT_DEBIAN:-1}" = 1 ] && modular debian "Debian 7.x kernel" bash "$HERE/debian-kernel.sh"
        # The upstream series on 7.3 (kernel/upstream/): its events through the same
        # stock-kernel path, and the drm_sched KUnit suites (a module) recorded
        if [ "${GRT_UPSTREAM:-1}" = 1 ]; then
            modular upstream "upstream series (7.3)" bash "$HERE/upstream/build.sh"
            bash "$HERE/upstream/check.sh" > "$RUN/upstream-check.log" 2>&1 ||
                { tail -20 "$RUN/upstream-check.log"; fail "upstream series: checkpatch or a patch on its own"; }
            grep -E '^(==|VERDICT)' "$RUN/upstream-check.log"
        fi
    fi
    lap "stock kernel stage" "$t"
fi

if [ "${GRT_DEBUG:-1}" = 1 ]; then
    stage "lockdep + KASAN kernel (drm as modules): e2e, stress with drm reload, sched"
    if kbuild debug; then
        # its modules in a second cpio after the shared initramfs
        DINITRD=$RUN/initramfs.cpio; RELOAD=0
        if [ -n "$KMODS" ]; then
            if bash "$HERE/mkinitramfs.sh" --modules "$KMODS" "$RUN/initramfs.cpio" "$RUN/initramfs-debug.cpio"; then
                DINITRD=$RUN/initramfs-debug.cpio; RELOAD=1
            else
                fail "debug initramfs with modules"
            fi
        fi
        INITRD=$DINITRD TIMEOUT=600 MEM=1G e2e "$KIMG" debug-e2e "debug e2e"
        INITRD=$DINITRD RELOAD=$RELOAD TIMEOUT=600 MEM=1G stress "$KIMG" debug-stress "debug stress"
        if [ "${GRT_SCHED:-1}" = 1 ]; then
            TIMEOUT=600 MEM=1G bash "$HERE/boot.sh" "$KIMG" "$DINITRD" "$RUN/debug-sched" sched ||
                fail "debug sched boot"
            bash "$HERE/verify-sched.sh" "$RUN/debug-sched" "$GRTPARSE" "$GRTREPORT" | tee "$RUN/debug-sched/verify.txt"
            [ "${PIPESTATUS[0]}" = 0 ] || fail "debug sched verification"
        fi
    fi
    lap "lockdep+KASAN" "$t"
fi
finish
