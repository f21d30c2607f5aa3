#!/bin/bash
# Build the test guest's initramfs: busybox (static), /init, the static virtio-gpu and
# vsched (drm_sched) workloads, the static C protocol drain, and the real grtrace recorder if given.
# usage: kernel/mkinitramfs.sh OUT.cpio [GRTRACE_BINARY]
#   GRTRACE_BINARY: a statically linked `grtrace` (see ci.sh); without it the guest
#   records with grtrace-drain, the C implementation of FORMAT.md section 7.2.
# env: TRACE_CMD=/usr/bin/trace-cmd adds Debian's trace-cmd (dynamically linked) with the
#   shared libraries `ldd` names and their loader, for the stock-kernel stage.
# usage: kernel/mkinitramfs.sh --modules MODDIR BASE.cpio OUT.cpio
#   OUT = BASE followed by a second cpio of MODDIR/lib/modules (build.sh's "MODULES" dir): the
#   kernel unpacks concatenated archives in turn, and guest/init loads drm from /lib/modules
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --modules ]; then
    MODDIR=${2:?usage: mkinitramfs.sh --modules MODDIR BASE.cpio OUT.cpio}
    BASE=${3:?base cpio}; OUTF=${4:?output cpio}
    [ -f "$MODDIR"/lib/modules/*/modules.dep ] || { echo "mkinitramfs.sh: no modules.dep under $MODDIR/lib/modules" >&2; exit 1; }
    { cat "$BASE"; (cd "$MODDIR" && find lib -print0 | cpio --null -o -H newc --quiet --owner=0:0); } > "$OUTF.tmp"
    mv "$OUTF.tmp" "$OUTF"
    echo "initramfs $OUTF: $(stat -c %s "$OUTF") bytes, $BASE + $(find "$MODDIR" -name '*.ko' | wc -l) modules from $MODDIR"
    exit 0
fi
OUTF=${1:?usage: mkinitramfs.sh OUT.cpio [grtrace]}
REC=${2:-}
BB=$(command -v busybox || echo /bin/busybox)
file -L "$BB" | grep -q 'statically linked' || { echo "mkinitramfs.sh: need busybox-static" >&2; exit 1; }
STAGE=$(mktemp -d /tmp/grt-initramfs.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE"/{bin,dev,proc,sys,tmp,mnt/out}
cp "$BB" "$STAGE/bin/busybox"
install -m 755 "$HERE/guest/init" "$STAGE/init"
# uapi headers: the drm ones vendored from 6.12.117 (MIT), grtrace's from the series;
# grtrace.h and vsched_drm.h (kept here) include "drm.h" as the kernel's uapi headers do
CFLAGS=(-static -O2 -Wall -Werror -D__user= -I"$HERE/guest/vendor/include" -I"$HERE/include/uapi"
        -I"$HERE/guest/vendor/include/drm")
gcc "${CFLAGS[@]}" -o "$STAGE/bin/vgpu-workload" "$HERE/guest/vgpu-workload.c"
gcc "${CFLAGS[@]}" -o "$STAGE/bin/grtrace-drain" "$HERE/guest/grtrace-drain.c"
gcc "${CFLAGS[@]}" -o "$STAGE/bin/sched-workload" "$HERE/guest/sched-workload.c"
# the control ioctls against the ctl file (errnos, session id, render node, non-root)
gcc "${CFLAGS[@]}" -o "$STAGE/bin/grtrace-ioctl" "$HERE/guest/grtrace-ioctl.c"
# the ftrace side of the transport benchmark (bench mode)
gcc "${CFLAGS[@]}" -o "$STAGE/bin/ftrace-drain" "$HERE/guest/ftrace-drain.c"
if [ -n "$REC" ]; then
    file -L "$REC" | grep -qE 'statically linked|static-pie linked' ||
        { echo "mkinitramfs.sh: $REC is not static" >&2; exit 1; }
    install -m 755 "$REC" "$STAGE/bin/grtrace"
    strip --strip-debug "$STAGE/bin/grtrace"
fi
if [ -n "${TRACE_CMD:-}" ]; then
    install -m 755 "$TRACE_CMD" "$STAGE/bin/trace-cmd"
    # every library ldd resolves (absolute paths, the loader included), at the same path
    libs=$(ldd "$TRACE_CMD" | grep -oE '/[^ ]+' | sort -u)
    [ -n "$libs" ] || { echo "mkinitramfs.sh: ldd found no libraries for $TRACE_CMD" >&2; exit 1; }
    for l in $libs; do
        mkdir -p "$STAGE$(dirname "$l")"
        cp -L "$l" "$STAGE$l"
    done
fi
# the kernel opens /dev/console for init before /init can mount devtmpfs
mknod -m 600 "$STAGE/dev/console" c 5 1
(cd "$STAGE" && find . -print0 | cpio --null -o -H newc --quiet --owner=0:0) > "$OUTF"
echo "initramfs $OUTF: $(stat -c %s "$OUTF") bytes, recorder: ${REC:-grtrace-drain}${TRACE_CMD:+, trace-cmd}"
