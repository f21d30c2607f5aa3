#!/bin/bash
# Host-side verdict on a stock-kernel boot (kernel/boot.sh STOCK_BZIMAGE ... stock): the
# unpatched kernel's GPU tracepoints, recorded in one run by four consumers, each with its own
# tracefs instance (guest/init, mode stock):
#   stock-count.txt  the ground truth: the `trace` text of an instance that only counted
#   v7.dat           trace-cmd record (top-level instance), trace.dat version 7
#   v6.dat           trace-cmd record -B grt_tc6 --file-version 6
#   live.grtrace.*   grtrace --ftrace (its own instance, trace_pipe_raw)
# usage: kernel/verify-stock.sh OUTDIR GRTIMPORT|- GRTPARSE GRTREPORT
#   GRTIMPORT "-": the import checks are reported as not covered (no grtimport built)
#
# Checks, each printed as "ok"/"FAIL" (what could not be checked prints as "NOT COVERED"):
#  * the guest finished, no kernel warning, the workload ran, trace-cmd exited 0 twice;
#  * the counting instance overran nothing, and its per-event counts add up to the ring
#    buffer's own `entries`;
#  * the files are what they claim: trace.dat version 7 (and its compression) and version 6;
#  * `trace-cmd report` (Debian's decoder) of each file gives, per tracepoint, exactly the
#    counting instance's counts: nothing lost or added by recording;
#  * grtrace --ftrace exited 0, recorded, and removed its instance;
#  * grtimport of v7.dat, v6.dat and of the counting instance's text, and the live recording:
#    the same number of events of every grtrace type (so the counts equal the instance's through
#    the one mapping), the same jobs with the same phases (`grtreport --jobs`) for the three
#    binary sources, no record lost, and grtreport finds every job complete but those in flight
#    at the edges (jobs-edge.sh, the rule of verify.sh);
#  * lockdown (raised at run time): tracefs recording works under integrity; the result under
#    confidentiality is printed as a FIGURE.
# Prints "FIGURE ..." lines and exits non-zero if any check failed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: verify-stock.sh OUTDIR GRTIMPORT|- GRTPARSE GRTREPORT}
I=${2:?grtimport or -}; P=${3:?grtparse}; R=${4:?grtreport}
LOG=$OUT/serial-stock.log; [ -f "$LOG" ] || LOG=$OUT/serial-stock-virgl.log
. "$HERE/jobs-edge.sh"
fails=0; uncovered=0
check() {  # check DESCRIPTION CONDITION-EXIT-STATUS
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
not_covered() { echo "NOT COVERED $*"; uncovered=$((uncovered + 1)); }
t() { "$@" > /dev/null 2>&1; echo $?; }
# the serial log ends lines in CR LF
glog() { sed -n "s/^GRT: $1\r\?$/\1/p" "$LOG" | head -1; }
# tally FILE: "event count" per tracepoint of ftrace text (tracefs `trace` or `trace-cmd report`)
tally() {
    sed -n 's/^.* [0-9][0-9]*\.[0-9][0-9]*: \([a-z_0-9]*\): .*$/\1/p' "$1" | sort | uniq -c |
        awk '{print $2, $1}'
}

check "guest finished (GRT: done)" "$(t grep -q '^GRT: done' "$LOG")"
check "no kernel warning/oops (dmesg)" "$(t grep -q '^GRT: warnings=0' "$LOG")"
check "workload completed (A and B paths)" "$(t grep -qE 'DONE A=[1-9][0-9]* B=[1-9]' "$LOG")"
echo "kernel: $(sed -n 's/^GRT: init .* kernel=\([^ ]*\).*/\1/p' "$LOG" | head -1), event systems:$(glog 'stock event systems:\(.*\)')"
check "trace-cmd in the guest ($(glog 'trace-cmd=\([^ ]*\) .*'))" "$(t grep -q '^GRT: trace-cmd=/' "$LOG")"
check "trace-cmd v7 exited 0" "$(t grep -q '^GRT: trace-cmd v7 rc=0' "$LOG")"
check "trace-cmd v6 exited 0" "$(t grep -q '^GRT: trace-cmd v6 rc=0' "$LOG")"

# ---- the ground truth: the counting instance ----
CNT=$OUT/stock-count.txt
tally "$CNT" > "$OUT/count.tally"
overrun=$(awk '/^overrun:/ {s += $2} END {print s + 0}' "$OUT/stock-count-stats.txt" 2>/dev/null)
entries=$(awk '/^entries:/ {s += $2} END {print s + 0}' "$OUT/stock-count-stats.txt" 2>/dev/null)
total=$(awk '{s += $2} END {print s + 0}' "$OUT/count.tally")
check "counting instance: nothing overrun (${overrun:-?})" "$([ "${overrun:-x}" = 0 ]; echo $?)"
check "counting instance: $total events counted = ring buffer entries ${entries:-?}" \
    "$([ "$total" -gt 0 ] && [ "$total" = "${entries:-x}" ]; echo $?)"
while read -r e n; do echo "FIGURE count $e $n"; done < "$OUT/count.tally"

# ---- the trace-cmd files, read by trace-cmd itself ----
for v in 7 6; do
    f=$OUT/v$v.dat
    # trace.dat: "\027\010\104tracing" then the version as a NUL-terminated decimal string
    ver=$(dd if="$f" bs=1 skip=10 count=4 2>/dev/null | tr -d '\0')
    check "v$v.dat is trace.dat version $v (header says ${ver:-none})" "$([ "$ver" = "$v" ]; echo $?)"
    trace-cmd report -i "$f" > "$OUT/v$v.report" 2> "$OUT/v$v.report.err"
    check "trace-cmd report reads v$v.dat" $?
    tally "$OUT/v$v.report" > "$OUT/v$v.tally"
    check "v$v.dat: per tracepoint, trace-cmd report's counts = the counting instance's ($(awk '{s += $2} END {print s + 0}' "$OUT/v$v.tally") events)" \
        "$(t cmp "$OUT/v$v.tally" "$OUT/count.tally")"
done
comp=$(trace-cmd dump --summary -i "$OUT/v7.dat" 2>/dev/null | sed -n 's/.*[Cc]ompression.*: *//p' | head -1)
echo "FIGURE v7.dat compression ${comp:-?} size $(stat -c %s "$OUT/v7.dat" 2>/dev/null) B, v6.dat size $(stat -c %s "$OUT/v6.dat" 2>/dev/null) B"

# ---- grtrace --ftrace ----
live=0
if grep -q '^GRT: .*grtrace-ftrace=/' "$LOG"; then
    live=1
    check "grtrace --ftrace exited 0" "$(t grep -q '^GRT: grtrace --ftrace rc=0' "$LOG")"
    check "grtrace --ftrace wrote live.grtrace.*" "$(ls "$OUT"/live.grtrace.* > /dev/null 2>&1; echo $?)"
    left=$(glog 'instances left: *\(.*\)')
    check "every tracefs instance removed at exit (left: ${left:-none})" "$([ -z "${left// /}" ]; echo $?)"
else
    not_covered "grtrace --ftrace: the guest's grtrace has no --ftrace option (live recording not tested)"
fi

# ---- grtimport: the same jobs and counts from every source ----
if [ "$I" != - ] && [ -x "$I" ]; then
    SRCS=(v7 v6)
    for v in v7 v6; do
        "$I" "$OUT/$v.dat" -o "$OUT/imp-$v" > "$OUT/imp-$v.log" 2>&1
        check "grtimport $v.dat" $?
    done
    "$I" "$CNT" -o "$OUT/imp-count" > "$OUT/imp-count.log" 2>&1
    check "grtimport of the counting instance's trace text" $?
    [ $live = 1 ] && SRCS+=(live)
    for s in "${SRCS[@]}" count; do
        base=$OUT/imp-$s; [ "$s" = live ] && base=$OUT/live
        "$P" "$base" > "$OUT/$s.txt" 2> "$OUT/$s.parse.err"
        check "grtparse reads $s" $?
        # event lines (not notes, which differ by source): $3 sequence, $6 name, $9 job seqno
        awk '$3 ~ /^[0-9]+$/ && $9 ~ /^[0-9]+$/ {print $6}' "$OUT/$s.txt" | sort | uniq -c |
            awk '{print $2, $1}' > "$OUT/$s.types"
    done
    for s in "${SRCS[@]}"; do
        check "$s: per grtrace event type, the same counts as the counting instance imported ($(awk '{s += $2} END {print s + 0}' "$OUT/$s.types") records)" \
            "$(t cmp "$OUT/$s.types" "$OUT/count.types")"
    done
    while read -r e n; do echo "FIGURE imported $e $n"; done < "$OUT/count.types"
    for s in "${SRCS[@]}"; do
        base=$OUT/imp-$s; [ "$s" = live ] && base=$OUT/live
        "$R" "$base" --jobs -q > "$OUT/$s.jobs" 2> "$OUT/$s.jobs.err"
        check "grtreport --jobs reads $s" $?
        "$R" "$base" > "$OUT/$s.report" 2>&1
        lost=$(sed -n 's/^lost(kernel) *\([0-9 ]*\)$/\1/p' "$OUT/$s.txt" | awk '{print $NF}')
        gaps=$(sed -n 's/^lost(gap) *\([0-9 ]*\)$/\1/p' "$OUT/$s.txt" | awk '{print $NF}')
        check "$s: no record lost (lost(kernel)=${lost:-?}, lost(gap)=${gaps:-?})" \
            "$([ "${lost:-x}" = 0 ] && [ "${gaps:-x}" = 0 ]; echo $?)"
        set -- $(sed -n 's/.* \([0-9]*\) job(s): \([0-9]*\) complete, \([0-9]*\) incomplete.*/\1 \2 \3/p' "$OUT/$s.report" | head -1)
        read -r edge other < <(edge_jobs "$OUT/$s.txt" "$OUT/$s.jobs")
        check "$s: grtreport finds every job complete but those in flight at the start or stop (${1:-?} jobs, ${2:-?} complete, $edge at an edge, $other other incomplete)" \
            "$(edge_ok "${1:-}" "${2:-}" "$edge" "$other"; echo $?)"
        echo "FIGURE jobs $s ${1:-?} complete=${2:-?} edge=$edge"
    done
    # the same jobs: ctx, ring, seqno, every phase, tags and flags (the time column is relative
    # to each stream's first record, which differs between sources)
    for s in "${SRCS[@]}"; do grep -v '^#' "$OUT/$s.jobs" | cut -c15- > "$OUT/$s.jobkeys"; done
    for s in "${SRCS[@]:1}"; do
        check "$s and v7: the same jobs with the same phases ($(wc -l < "$OUT/$s.jobkeys") / $(wc -l < "$OUT/v7.jobkeys"))" \
            "$([ -s "$OUT/v7.jobkeys" ] && cmp -s "$OUT/$s.jobkeys" "$OUT/v7.jobkeys"; echo $?)"
    done
else
    not_covered "grtimport: not built (the trace.dat files were checked with trace-cmd report only)"
fi

# ---- lockdown, raised at run time ----
if grep -q '^GRT: lockdown now: ' "$LOG"; then
    for level in integrity confidentiality; do
        echo "FIGURE lockdown=$level: $(grep -E "^GRT: lockdown=$level " "$LOG" | sed 's/^GRT: lockdown=[a-z]* //' | tr -d '\r' | tr '\n' ';')"
    done
    check "lockdown=integrity: trace-cmd still records (tracefs is not locked down)" \
        "$(t grep -q '^GRT: lockdown=integrity trace-cmd rc=0' "$LOG")"
    [ $live = 1 ] && check "lockdown=integrity: grtrace --ftrace still records" \
        "$(t grep -q '^GRT: lockdown=integrity grtrace --ftrace rc=0' "$LOG")"
else
    not_covered "lockdown: the kernel has no lockdown LSM"
fi

if [ $fails = 0 ]; then echo "VERDICT stock: PASS ($uncovered not covered)"; else echo "VERDICT stock: FAIL ($fails checks, $uncovered not covered)"; fi
[ $fails = 0 ]
