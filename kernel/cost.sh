#!/bin/bash
# Tracing cost of the series: the same workload on the kernel without the series
# ("absent"), and on the kernel with it, interleaved in one guest: tracing off
# ("present but off") and on (recording with the C drain).  TCG inflates absolute
# times, so only ratios are reported; absent vs present compares two boots.
# usage: kernel/cost.sh BASE_BZIMAGE GRTRACE_BZIMAGE INITRAMFS OUTDIR
# env: REPS (default 15), ITERS (default 64)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${1:?base bzImage}; GRT=${2:?grtrace bzImage}; INITRD=${3:?initramfs}; OUT=${4:?outdir}
REPS=${REPS:-15}; ITERS=${ITERS:-64}
mkdir -p "$OUT"
bash "$HERE/boot.sh" "$BASE" "$INITRD" "$OUT/absent" cost grt.reps="$REPS" grt.iters="$ITERS" || exit 1
bash "$HERE/boot.sh" "$GRT" "$INITRD" "$OUT/present" cost grt.reps="$REPS" grt.iters="$ITERS" || exit 1
# median, and min (the run least disturbed by other load on the host)
stat() { sed -n "s/^GRT: cost $1 .*total_us=\([0-9]*\).*/\1/p" "$2" | sort -n |
    awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)], a[1]; else print 0, 0}'; }
read -r absent absent_min < <(stat off "$OUT/absent/serial-cost.log")
read -r off off_min < <(stat off "$OUT/present/serial-cost.log")
read -r on on_min < <(stat on "$OUT/present/serial-cost.log")
events=$(sed -n 's/^GRT: cost DRAIN: TOTAL records=\([0-9]*\).*/\1/p' "$OUT/present/serial-cost.log" | head -1)
echo "FIGURE cost workload time, us ($REPS reps x $ITERS iters, records per traced run: $events)"
echo "FIGURE cost   median: absent=$absent off=$off on=$on"
echo "FIGURE cost   min:    absent=$absent_min off=$off_min on=$on_min"
awk -v a="$absent" -v f="$off" -v o="$on" -v am="$absent_min" -v fm="$off_min" -v om="$on_min" 'BEGIN {
    if (a <= 0 || f <= 0 || o <= 0) { print "cost: missing measurements"; exit 1 }
    printf "FIGURE cost ratios (median): off/absent = %.3f (two boots), on/off = %.3f (same guest)\n", f / a, o / f
    printf "FIGURE cost ratios (min):    off/absent = %.3f (two boots), on/off = %.3f (same guest)\n", fm / am, om / fm }'
