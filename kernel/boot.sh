#!/bin/bash
# Boot a test kernel under QEMU (TCG: KVM does not work on the reference machine) with a
# virtio-gpu and a 9p share for the results.
# usage: kernel/boot.sh BZIMAGE INITRAMFS OUTDIR MODE [extra kernel args...]
#   MODE: e2e | stress | cost | shell (see guest/init)
# env: SMP (default 2,sockets=2,cores=1: without ACPI only the MP table lists CPUs, one per
#      socket), MEM (default 512M), TIMEOUT (default 300 s), ACCEL (default tcg)
#      VIRGL=1: virtio-gpu-gl-pci (virgl 3D: per-file contexts, SUBMIT_3D fences), rendered
#      by Mesa llvmpipe in an Xvfb display (apt-get install xvfb xauth)
# Serial log: OUTDIR/serial-MODE.log.  Exit 0 iff the guest printed "GRT: done".
# Under TCG a guest killed by a stale int3 (oops.sh: QEMU's fault, not the kernel's) is
# booted once more, said in a KNOWN line; the first boot's log and files go to
# OUTDIR/stale-int3/.
set -uo pipefail
. "$(dirname "$0")/oops.sh"
KERNEL=${1:?bzImage}; INITRD=${2:?initramfs}; OUT=${3:?outdir}; MODE=${4:?mode}; shift 4
SMP=${SMP:-2,sockets=2,cores=1}; MEM=${MEM:-512M}; TIMEOUT=${TIMEOUT:-300}
mkdir -p "$OUT"
LOG=$OUT/serial-$MODE.log
# TCG gives no PIT/HPET reference, so the guest would fall back to the 4 ms jiffies clock;
# tell it the TSC rate (TCG's TSC follows the host's) to get nanosecond timestamps.
KHZ=$(awk -F: '/^cpu MHz/ {printf "%d", $2 * 1000; exit}' /proc/cpuinfo 2>/dev/null)
CLOCK=${KHZ:+tsc_early_khz=$KHZ tsc=reliable}
# the grtrace KUnit suite runs at boot in e2e mode
KUNIT=; [ "$MODE" = e2e ] && KUNIT="kunit.enable=1 kunit.filter_glob=drm_grtrace"
# the drm_sched suites of the upstream series' kernel, a module loaded in stock mode (the
# slow ones left out: they take minutes under TCG)
[ "$MODE" = stock ] && KUNIT="kunit.enable=1 kunit.filter_glob=drm_sched* kunit.filter=speed>slow"
case ${ACCEL:-tcg} in
    kvm) ACC=(-enable-kvm -cpu host) ;;
    *) ACC=(-accel tcg,thread=multi -cpu max) ;;
esac
GPU=virtio-gpu-pci; DISP=(-display none); XVFB_PID=
if [ "${VIRGL:-0}" = 1 ]; then
    GPU=virtio-gpu-gl-pci; DISP=(-display sdl,gl=on); LOG=$OUT/serial-$MODE-virgl.log
    if [ -z "${DISPLAY:-}" ]; then
        export DISPLAY=:${XVFB_DISPLAY:-77}
        Xvfb "$DISPLAY" -screen 0 1280x1024x24 -nolisten tcp > /dev/null 2>&1 &
        XVFB_PID=$!
        sleep 1
    fi
fi
CMD=(qemu-system-x86_64 "${ACC[@]}" -smp "$SMP" -m "$MEM" -nodefaults -no-user-config
     "${DISP[@]}" -serial stdio -no-reboot
     -device "$GPU"
     -virtfs "local,path=$OUT,mount_tag=out,security_model=none,id=out"
     -kernel "$KERNEL" -initrd "$INITRD"
     -append "console=ttyS0 panic=-1 oops=panic no_timer_check grt.mode=$MODE $CLOCK $KUNIT $*")
if [ "$MODE" = shell ]; then exec "${CMD[@]}"; fi
boot() {
    local t0 t1 rc
    t0=$(date +%s.%N)
    timeout "$TIMEOUT" "${CMD[@]}" < /dev/null > "$LOG" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    printf 'TIMING boot %s: %.2f s wall (qemu rc=%s)\n' "$MODE" "$(echo "$t1 - $t0" | bc)" "$rc"
}
declare -A HAD   # what OUTDIR held before (a caller's tee may be writing there)
for f in "$OUT"/* "$OUT"/.[!.]*; do [ -e "$f" ] && HAD[$f]=1; done
boot
# that emulator fault (TCG's only), and only it, gets one more boot; the first boot's log
# and new files are kept aside
if [ "${ACCEL:-tcg}" != kvm ] && ! grep -q '^GRT: done' "$LOG" && stale_int3 "$LOG"; then
    KEPT=$OUT/stale-int3
    rm -rf "$KEPT"; mkdir "$KEPT"
    mv "$LOG" "$KEPT/"
    for f in "$OUT"/* "$OUT"/.[!.]*; do
        [ -e "$f" ] && [ "$f" != "$KEPT" ] && [ -z "${HAD[$f]:-}" ] && mv "$f" "$KEPT/"
    done
    echo "KNOWN: the guest ran a stale int3 (QEMU TCG translation race, not a kernel fault;" \
         "kernel/README.md); booting once more, first boot's files in $KEPT"
    boot
fi
[ -n "$XVFB_PID" ] && kill "$XVFB_PID" 2>/dev/null
grep -q '^GRT: done' "$LOG"
