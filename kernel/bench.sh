#!/bin/bash
# The transport benchmark: grtrace's relay buffers against an ftrace instance, for the same
# tracepoint and payload (vsched_bench, patch 14), in one guest (guest/init's bench mode).
# usage: kernel/bench.sh BZIMAGE INITRAMFS OUTDIR
# env: REPS (default 5), EVENTS (events a CPU in each cost run, default 20000), RATES (events/s
#      a CPU, comma-separated; guest/init's default), MAX (events a CPU flat out), SMP, ACCEL,
#      MEM (default 1G), TIMEOUT (900)
# Prints FIGURE lines (ns an event, delivered and lost at each rate) and
# "VERDICT bench: PASS" when every run's account balances:
#   relay:  fired = delivered + lost, lost = the kernel's dropped counter, drain exit 0
#   cost runs (4 MiB a CPU, more than they fire) lose nothing: a dropped event costs less
#   ftrace: fired = delivered + lost, lost = the seqno gaps the drain found; ftrace's own
#           count (per-CPU overrun + dropped events, what `grtrace --ftrace` reports) is
#           printed next to it: a difference is a finding, not a failure of this script
# TCG inflates absolute times; compare the transports with each other, in one run.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KERNEL=${1:?bzImage}; INITRD=${2:?initramfs}; OUT=${3:?outdir}
REPS=${REPS:-5}; EVENTS=${EVENTS:-20000}
MEM=${MEM:-1G} TIMEOUT=${TIMEOUT:-900} bash "$HERE/boot.sh" "$KERNEL" "$INITRD" "$OUT" bench \
    grt.reps="$REPS" grt.events="$EVENTS" ${RATES:+grt.rates=$RATES} ${MAX:+grt.max=$MAX} ||
    { echo "VERDICT bench: FAIL (boot)"; exit 1; }
LOG=$OUT/serial-bench.log
grep -q '^GRT: bench file=/' "$LOG" && ! grep -q '^GRT: FAIL' "$LOG" ||
    { grep -E '^GRT: (bench file|FAIL)' "$LOG"; echo "VERDICT bench: FAIL (setup)"; exit 1; }
tr -d '\r' < "$LOG" | awk -v reps="$REPS" -v events="$EVENTS" '
function median(key,   n, i, j, t, v) {
    n = split(vals[key], v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
        t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n ? (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : -1
}
# GRT: bench cost T cpus=N rep=R cpu C fired F rate 0 busy_ns B elapsed_ns E
$2 == "bench" && $3 == "cost" && $7 == "cpu" {
    key = $4 " " $5; vals[key] = vals[key] " " $14 / $10; cpus[$5] = 1 }
# GRT: bench rate T cpus=N rate=R cpu C fired F rate R busy_ns B elapsed_ns E
$2 == "bench" && $3 == "rate" && $7 == "cpu" {
    key = $4 " " $6; el[key] = ($16 > el[key] ? $16 : el[key]); busy[key] += $14; fired[key] += $10
    ncpu[key]++ }
# GRT: bench KIND T cpus=N [rep=R|rate=R] account fired=F delivered=D lost=L ...
$2 == "bench" && / account / {
    runs++
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    ok = f["fired"] == f["delivered"] + f["lost"] && f["drain_rc"] == 0
    if ($4 == "relay") ok = ok && f["lost"] == f["kernel_dropped"]
    if ($3 == "cost") ok = ok && f["lost"] == 0
    if (!ok) { bad++; print "MISMATCH " $0 }
    if ($3 == "rate") {
        key = $4 " " $6; lost[key] = f["lost"]; deliv[key] = f["delivered"]; cons[key] = f["consumer_us"]
        own[key] = $4 == "relay" ? f["kernel_dropped"] : f["overrun"] + f["dropped_events"]
        if (!(($6) in seen)) { seen[$6] = 1; nr++; rate[nr] = $6 }
    }
}
END {
    printf "FIGURE bench cost, ns an event in the tracepoint call (median over %d reps x CPUs, %d events a CPU):\n", reps, events
    for (c in cpus) {
        off = median("off " c); r = median("relay " c); ft = median("ftrace " c)
        printf "FIGURE bench   %-7s off=%.0f relay=%.0f ftrace=%.0f; above off: relay=%.0f ftrace=%.0f (relay/ftrace %.2f)\n",
            c, off, r, ft, r - off, ft - off, ((ft - off) > 0 ? (r - off) / (ft - off) : 0)
    }
    print "FIGURE bench rates (all CPUs, half a second a rate, 1 MiB a CPU, drained every 20 ms):"
    print "FIGURE bench   rate/CPU   transport  fired     achieved/s/CPU  ns/event  consumer ns/event  delivered  lost  (own count)"
    for (i = 1; i <= nr; i++) for (t = 0; t < 2; t++) {
        r = rate[i]; tr = t ? "ftrace" : "relay"; key = tr " " r; split(r, rv, "=")
        printf "FIGURE bench   %-10s %-10s %-9d %-15.0f %-9.0f %-18.0f %-10d %-5d (%d)\n", rv[2], tr, fired[key],
            (el[key] ? fired[key] / ncpu[key] / (el[key] / 1e9) : 0), (fired[key] ? busy[key] / fired[key] : 0),
            (deliv[key] ? cons[key] * 1000 / deliv[key] : 0), deliv[key], lost[key], own[key]
    }
    if (!runs) { print "VERDICT bench: FAIL (no runs)"; exit 1 }
    if (bad) { printf "VERDICT bench: FAIL (%d of %d accounts do not balance)\n", bad, runs; exit 1 }
    printf "VERDICT bench: PASS (%d runs, every account balances)\n", runs
}'
