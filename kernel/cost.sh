#!/bin/bash
# Tracing cost of the series: the same workload on the kernel without the series
# ("absent"), and on the kernel with it, interleaved in one guest: tracing off
# ("present but off") and on (recording with the C drain).  TCG inflates absolute
# times, so only ratios are reported; absent vs present compares two boots.
# usage: kernel/cost.sh BASE_BZIMAGE GRTRACE_BZIMAGE INITRAMFS OUTDIR
# env: REPS (default 7), ITERS (default 64)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${1:?base bzImage}; GRT=${2:?grtrace bzImage}; INITRD=${3:?initramfs}; OUT=${4:?outdir}
REPS=${REPS:-7}; ITERS=${ITERS:-64}
mkdir -p "$OUT"
bash "$HERE/boot.sh" "$BASE" "$INITRD" "$OUT/absent" cost grt.reps="$REPS" grt.iters="$ITERS" || exit 1
bash "$HERE/boot.sh" "$GRT" "$INITRD" "$OUT/present" cost grt.reps="$REPS" grt.iters="$ITERS" || exit 1
med() { sed -n "s/^GRT: cost $1 .*total_us=\([0-9]*\).*/\1/p" "$2" | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : 0)}'; }
absent=$(med off "$OUT/absent/serial-cost.log")
off=$(med off "$OUT/present/serial-cost.log")
on=$(med on "$OUT/present/serial-cost.log")
events=$(sed -n 's/^GRT: cost DRAIN: TOTAL records=\([0-9]*\).*/\1/p' "$OUT/present/serial-cost.log" | head -1)
echo "FIGURE cost median workload time (us, $REPS reps x $ITERS iters): absent=$absent off=$off on=$on (records per traced run: $events)"
awk -v a="$absent" -v f="$off" -v o="$on" 'BEGIN {
    if (a <= 0 || f <= 0 || o <= 0) { print "cost: missing measurements"; exit 1 }
    printf "FIGURE cost ratios: off/absent = %.3f (two boots), on/off = %.3f (same guest)\n", f / a, o / f }'
