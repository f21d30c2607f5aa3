#!/bin/bash
# The transport benchmark: grtrace's relay buffers against an ftrace instance, for the same
# tracepoint and payload (vsched_bench, patch 14), in one guest (guest/init's bench mode).
# usage: kernel/bench.sh BZIMAGE INITRAMFS OUTDIR
# env: REPS (default 5), EVENTS (events a CPU in each cost run, default 20000), RATES (events/s
#      a CPU, comma-separated; guest/init's default), MAX (events a CPU flat out), SMP, ACCEL,
#      MEM (default 1G), TIMEOUT (900)
# Prints FIGURE lines (ns an event, delivered and lost at each rate) and
# "VERDICT bench: PASS" when the kernel warned of nothing and every run's account balances:
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
# no kernel warning, lockdep or KASAN report while the benchmark ran
grep -q '^GRT: warnings=0' "$LOG" ||
    { grep -E '^GRT: (\[dmesg\]|warnings=)' "$LOG"; echo "VERDICT bench: FAIL (kernel warnings)"; exit 1; }
tr -d '\r' < "$LOG" | awk -v reps="$REPS" -v events="$EVENTS" '
function median(list,   n, i, j, t, v) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
        t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n ? (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : -1
}
# every line: "GRT: bench KIND TRANSPORT cpus=N rep=R|at=R sweep=S" then either a CPU of the
# run ("cpu C fired F rate R busy_ns B elapsed_ns E", the vsched_bench file) or the account
# ("account fired=F delivered=D lost=L ... consumer_us=U drain_rc=X")
$1 == "GRT:" && $2 == "bench" && ($3 == "cost" || $3 == "rate") {
    delete f
    for (i = 4; i <= NF; i++)
        if (split($i, kv, "=") == 2) f[kv[1]] = kv[2]
        else if ($i ~ /^(cpu|fired|busy_ns|elapsed_ns)$/) f[$i] = $(i + 1)
    kind = $3; tr = $4; point = kind == "cost" ? f["cpus"] : f["at"]
    key = kind " " tr " " point
    if (kind == "cost" && !((f["cpus"]) in seen_cpus)) { seen_cpus[f["cpus"]] = 1; ncpus++; cpus[ncpus] = f["cpus"] }
    if (kind == "rate" && !(point in seen_at)) { seen_at[point] = 1; nat++; at[nat] = point }
    if ($5 ~ /^cpus=/ && $0 ~ / cpu [0-9]+ fired /) {
        if (kind == "cost") cost[key] = cost[key] " " f["busy_ns"] / f["fired"]
        else {
            busy[key] += f["busy_ns"]; fired[key] += f["fired"]
            achieved[key] = achieved[key] " " f["fired"] / (f["elapsed_ns"] / 1e9)
        }
    }
    if ($0 ~ / account /) {
        runs++
        ok = f["fired"] == f["delivered"] + f["lost"] && f["drain_rc"] == 0
        if (tr == "relay") ok = ok && f["lost"] == f["kernel_dropped"]
        if (kind == "cost") ok = ok && f["lost"] == 0
        if (!ok) { bad++; print "MISMATCH " $0 }
        if (kind == "rate") {
            total[key] += f["fired"]; deliv[key] += f["delivered"]; lost[key] += f["lost"]
            own[key] += tr == "relay" ? f["kernel_dropped"] : f["overrun"] + f["dropped_events"]
            cons[key] += f["consumer_us"]
            if (f["lost"] > 0) lossy[key]++
        }
    }
}
END {
    printf "FIGURE bench cost: ns an event in the tracepoint call, median over %d reps x CPUs (%d events a CPU, nothing lost)\n", reps, events
    for (i = 1; i <= ncpus; i++) {
        c = cpus[i]
        off = median(cost["cost off " c]); r = median(cost["cost relay " c]); ft = median(cost["cost ftrace " c])
        printf "FIGURE bench   %d CPU(s): off=%.0f relay=%.0f ftrace=%.0f; above off: relay=%.0f ftrace=%.0f (relay/ftrace %.2f)\n",
            c, off, r, ft, r - off, ft - off, ((ft - off) > 0 ? (r - off) / (ft - off) : 0)
    }
    printf "FIGURE bench rates: all CPUs, half a second a rate, %d sweeps, 1 MiB a CPU, drained every 20 ms\n", reps
    print "FIGURE bench   events/s/CPU asked  achieved (median)  transport  ns/event  consumer ns/event  fired  delivered  lost  (own count)  sweeps with loss"
    for (i = 1; i <= nat; i++) for (t = 0; t < 2; t++) {
        tr = t ? "ftrace" : "relay"; key = "rate " tr " " at[i]
        printf "FIGURE bench   %-18s  %-17.0f  %-9s  %-8.0f  %-17.0f  %-6d %-10d %-5d (%d)  %d/%d\n", at[i],
            median(achieved[key]), tr, (fired[key] ? busy[key] / fired[key] : 0),
            (deliv[key] ? cons[key] * 1000 / deliv[key] : 0), total[key], deliv[key], lost[key], own[key],
            lossy[key], reps
    }
    for (t = 0; t < 2; t++) {
        tr = t ? "ftrace" : "relay"; best = "none"
        for (i = 1; i <= nat && at[i] != "max" && !lossy["rate " tr " " at[i]]; i++) best = at[i]
        printf "FIGURE bench   %s: highest rate with no loss in any sweep: %s events/s a CPU\n", tr, best
    }
    if (!runs) { print "VERDICT bench: FAIL (no runs)"; exit 1 }
    if (bad) { printf "VERDICT bench: FAIL (%d of %d accounts do not balance)\n", bad, runs; exit 1 }
    printf "VERDICT bench: PASS (%d runs, every account balances)\n", runs
}'
