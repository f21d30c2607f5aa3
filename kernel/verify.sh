#!/bin/bash
# Host-side verdict on an e2e boot (kernel/boot.sh ... e2e): reads the guest's results from
# OUTDIR with the real grtparse and grtreport. Figures come from their machine-readable
# summaries (grtparse --summary-json, grtreport --json: schemas in their man pages), read
# with python3; the seqno comparisons read grtparse's event lines (fields, not prose).
# usage: kernel/verify.sh OUTDIR GRTPARSE GRTREPORT
#
# Checks, each printed as "ok"/"FAIL":
#  * the guest finished, no kernel warning, the KUnit suite passed, the recorders exited 0;
#  * control by ioctl: guest/grtrace-ioctl found the same errno through the ioctls as through
#    ctl at every step, the session id, the render node and a non-root caller refused; the
#    real grtrace logged that it controlled card0 by ioctl on /dev/dri/card0;
#  * run: no record lost, no sequence gap; grtreport finds every job complete (but the few
#    in flight at the edges: ended before the first COMMIT, committed after the last END);
#  * run: the kernel's own tracepoints, enabled over a window that contains the recording,
#    saw exactly the same things inside the recorded range: the ctrlq seqnos of
#    virtio_gpu_cmd_queue / _cmd_response equal those of COMMIT / END (fenced ones too),
#    and the fence seqnos of dma_fence_signaled / _wait_start / _wait_end equal those of
#    SIGNAL / WAIT / WAIT_END; the kicks of virtio_gpu_notify equal the SUBMITs (INFERRED
#    where no doorbell was rung); per command COMMIT <= SUBMIT <= END unless INFERRED;
#  * run: grtreport --perfetto writes valid Trace Event Format (when TEFCHECK is set);
#  * small (tiny buffers, recorded live): records were lost, and the LOST notes in the
#    stream add up to the kernel's dropped counter; no sequence gap;
#  * filt (real grtrace only, events=COMMIT|END): recorder exited 0, only those events;
#  * pidf (real grtrace only, --pid of a workload): its COMMITs and the ENDs the dequeue
#    worker reports are both recorded;
#  * ovf (no consumer at all): the same equality.
# Prints "FIGURE ..." lines and exits non-zero if any check failed.
set -uo pipefail
OUT=${1:?usage: verify.sh OUTDIR GRTPARSE GRTREPORT}; P=${2:?grtparse}; R=${3:?grtreport}
LOG=$OUT/serial-e2e.log; [ -f "$LOG" ] || LOG=$OUT/serial-e2e-virgl.log
fails=0
check() {  # check DESCRIPTION CONDITION-EXIT-STATUS
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
t() { "$@" > /dev/null 2>&1; echo $?; }
# jget FILE PATH: the value at PATH (keys and list indexes joined by dots, e.g. lost.kernel)
# of the JSON document in FILE; empty if the file or the value is missing or null.
jget() {
    python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
try:
    v = json.load(open(sys.argv[1]))
    for k in sys.argv[2].split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
except Exception:
    v = None
print("" if v is None else v)
PY
}
# jkeys FILE PATH: the keys of the object at PATH, sorted, each followed by a space.
jkeys() {
    python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
try:
    v = json.load(open(sys.argv[1]))
    for k in sys.argv[2].split("."):
        v = v[k]
    print("".join(k + " " for k in sorted(v)))
except Exception:
    print("")
PY
}

check "guest finished (GRT: done)" "$(t grep -q '^GRT: done' "$LOG")"
check "no kernel warning/oops (dmesg)" "$(t grep -q '^GRT: warnings=0' "$LOG")"
check "KUnit drm_grtrace suite passed" "$(t grep -qE '^\[ *[0-9.]+\] ok [0-9]+ drm_grtrace' "$LOG")"
kpass=$(grep -A0 -E '# drm_grtrace: pass:[0-9]+' "$LOG" | sed -n 's/.*# drm_grtrace: pass:\([0-9]*\) fail:0 .*/\1/p' | head -1)
check "KUnit drm_grtrace: every case passed (${kpass:-?} of 10)" "$([ "${kpass:-0}" = 10 ]; echo $?)"
check "workload completed (A and B paths)" "$(t grep -qE 'DONE A=[1-9][0-9]* B=[1-9]' "$LOG")"
check "recorder exited 0 (run)" "$(t grep -q '^GRT: workload rc=0 recorder rc=0' "$LOG")"
check "recorder exited 0 (tiny buffers)" "$(t grep -q '^GRT: small recorder rc=0' "$LOG")"
check "C drain of the unconsumed overflow exited 0 (lost == dropped, no bad record)" \
    "$(t grep -q '^GRT: overflow drain rc=0' "$LOG")"
echo "recorder: $(sed -n 's/^GRT: recorder=//p' "$LOG")"
# control by ioctl (DRM_IOCTL_GRTRACE_* on the primary node): the ctl file and the ioctls
# give the same errno at every step, SETUP returns info's session id, the render node and a
# caller without CAP_SYS_ADMIN are refused; the real grtrace says which control it used
check "control ioctls: same errnos as ctl, session id, render node and non-root refused" \
    "$(t grep -q '^GRT: ioctl check PASS' "$LOG")"
if grep -qE '^GRT: recorder=grtrace\s*$' "$LOG"; then
    check "the real grtrace controlled card0 by ioctl on /dev/dri/card0" \
        "$(t grep -q '^grtrace: card0: control by ioctl on /dev/dri/card0$' "$OUT/record.log")"
fi

# lockdown, the e2e boot's last step (raised at run time): the trace files are debugfs files a
# locked-down kernel refuses, so SETUP must fail with EPERM and leave the card idle, and the real
# grtrace must exit 1 saying "lockdown" (a kernel without the lockdown LSM cannot check it)
if grep -q '^GRT: lockdown now: ' "$LOG"; then
    check "lockdown=integrity: SETUP refused with EPERM (ioctl and ctl), the card stays idle" \
        "$(t grep -q '^GRT: ioctl lockdown check PASS' "$LOG")"
    if grep -q '^GRT: lockdown grtrace rc=' "$LOG"; then
        check "lockdown=integrity: grtrace exits 1 naming lockdown, the card stays idle" \
            "$(grep -q '^GRT: lockdown grtrace rc=1 state idle' "$LOG" &&
               grep -q '^GRT: \[lockdown grtrace\] .*lockdown' "$LOG"; echo $?)"
    fi
else
    echo "not covered: lockdown ($(grep -m1 '^GRT: lockdown absent' "$LOG" || echo 'no lockdown step'))"
fi

# ---- run ----
# parse NAME: grtparse OUTDIR/NAME into NAME.txt (lines and summary), NAME.err and the
# summary's figures NAME.summary.json; returns grtparse's status
parse() {
    rm -f "$OUT/$1.summary.json"
    "$P" "$OUT/$1" --summary-json "$OUT/$1.summary.json" > "$OUT/$1.txt" 2> "$OUT/$1.err"
}
parse run
check "grtparse reads the run" $?
S=$OUT/run.summary.json
lost=$(jget "$S" lost.kernel); gaps=$(jget "$S" lost.gap)
events=$(jget "$S" events)
check "run: no record lost (lost(kernel)=${lost:-?})" "$([ "${lost:-x}" = 0 ]; echo $?)"
check "run: no sequence gap (lost(gap)=${gaps:-?})" "$([ "${gaps:-x}" = 0 ]; echo $?)"
check "run: no sequence error" "$([ "$(jget "$S" sequence_errors)" = 0 ]; echo $?)"
"$R" "$OUT/run" > "$OUT/report.txt" 2>&1
check "grtreport reads the run" $?
# the figures of the report's first line ("N job(s): C complete, I incomplete"), as JSON
"$R" "$OUT/run" --json -o "$OUT/report.json" > /dev/null 2>&1
set -- $(jget "$OUT/report.json" all.jobs) $(jget "$OUT/report.json" all.complete) \
    $(jget "$OUT/report.json" all.incomplete)
# The fbdev worker flushes the console every ~200 ms, so a flush can straddle the start or the
# stop (ctrlq is the one traced ring): jobs-edge.sh
. "$(dirname "$0")/jobs-edge.sh"
"$R" "$OUT/run" --jobs -q > "$OUT/jobs.txt" 2>&1
# The run as a Perfetto timeline, checked against the Trace Event Format by the checker of
# grtreport's tests (TEFCHECK = crates/grtreport/examples/tefcheck.rs; skipped if unset).
if [ -n "${TEFCHECK:-}" ]; then
    "$R" "$OUT/run" -q --perfetto "$OUT/run.json" > "$OUT/perfetto.err" 2>&1 &&
        "$TEFCHECK" "$OUT/run.json" > "$OUT/tefcheck.txt" 2>&1
    check "grtreport --perfetto: valid Trace Event Format ($(head -1 "$OUT/tefcheck.txt" | cut -d: -f3-))" $?
fi
read -r edge early < <(edge_jobs "$OUT/run.txt" "$OUT/jobs.txt")
check "grtreport: every job complete but those in flight at the start or stop (${1:-?} jobs, ${2:-?} complete, $edge in flight at an edge, $early other incomplete)" \
    "$(edge_ok "${1:-}" "${2:-}" "$edge" "$early"; echo $?)"

# event lines: $6 name, $9 job seqno; fseqno=N for fence events
ev() { awk -v n="$1" '$6 == n' "$OUT/run.txt"; }
ev COMMIT | awk '{print $9}' | sort -n > "$OUT/g.commit"
ev COMMIT | awk '/flags=[a-z,]*fenced/ {print $9}' | sort -n > "$OUT/g.commit.fenced"
ev END | awk '{print $9}' | sort -n > "$OUT/g.end"
for e in SIGNAL WAIT WAIT_END; do
    ev $e | sed -n 's/.* fseqno=\([0-9]*\).*/\1/p' | sort -n > "$OUT/g.$e"
done
FT=$OUT/ftrace.txt
ftq() { grep " $1: " "$FT" | grep 'name=control' | sed -n "s/.*$2.* seqno=\([0-9]*\).*/\1/p" | sort -n; }
ftq virtio_gpu_cmd_queue '' > "$OUT/f.commit.all"
grep ' virtio_gpu_cmd_queue: ' "$FT" | grep 'name=control' | grep 'flags=0x[13579bdf] ' |
    sed -n 's/.* seqno=\([0-9]*\).*/\1/p' | sort -n > "$OUT/f.commit.fenced.all"
ftq virtio_gpu_cmd_response '' > "$OUT/f.end.all"
ftf() { grep " $1: driver=virtio_gpu" "$FT" | sed -n 's/.* seqno=\([0-9]*\).*/\1/p' | sort -n; }
ftf dma_fence_signaled > "$OUT/f.SIGNAL.all"
ftf dma_fence_wait_start > "$OUT/f.WAIT.all"
ftf dma_fence_wait_end > "$OUT/f.WAIT_END.all"
# the tracepoints ran over a longer window: compare inside the recorded seqno range
same() {  # same LABEL GRTRACE_FILE FTRACE_ALL_FILE RANGE_FILE
    local lo hi n_g n_f
    lo=$(head -1 "$4"); hi=$(tail -1 "$4")
    awk -v lo="${lo:-1}" -v hi="${hi:-0}" '$1 >= lo && $1 <= hi' "$3" > "$3.win"
    n_g=$(wc -l < "$2"); n_f=$(wc -l < "$3.win")
    check "$1: grtrace $n_g = tracepoints $n_f (seqnos ${lo:-?}..${hi:-?}, identical sets)" \
        "$([ "$n_g" -gt 0 ] && cmp -s "$2" "$3.win"; echo $?)"
    echo "FIGURE count $1 grtrace=$n_g tracepoint=$n_f tracepoint_total=$(wc -l < "$3")"
}
same "COMMIT vs virtio_gpu_cmd_queue" "$OUT/g.commit" "$OUT/f.commit.all" "$OUT/g.commit"
same "fenced COMMIT vs fenced cmd_queue" "$OUT/g.commit.fenced" "$OUT/f.commit.fenced.all" "$OUT/g.commit"
same "END vs virtio_gpu_cmd_response" "$OUT/g.end" "$OUT/f.end.all" "$OUT/g.end"
same "SIGNAL vs dma_fence_signaled" "$OUT/g.SIGNAL" "$OUT/f.SIGNAL.all" "$OUT/g.SIGNAL"
same "WAIT vs dma_fence_wait_start" "$OUT/g.WAIT" "$OUT/f.WAIT.all" "$OUT/g.WAIT"
same "WAIT_END vs dma_fence_wait_end" "$OUT/g.WAIT_END" "$OUT/f.WAIT_END.all" "$OUT/g.WAIT_END"
# SUBMIT = virtio_gpu_notify, the ctrlq kick (under the queue lock, before its doorbell): every
# kick that made commands visible, in the recorded range; a kick with neither a doorbell nor a
# new command writes none. INFERRED where the device took commands without the kick's doorbell:
# always when it needed none (notify=0), and where it had completed one of them already
# ("early", not in the tracepoint: counted)
ev SUBMIT | awk '{ print $9, ($0 ~ /flags=[a-z,]*inferred/ ? 0 : 1) }' | sort -n -k1,1 -k2,2 > "$OUT/g.submit"
grep ' virtio_gpu_notify: ' "$FT" | sed -n 's/.* seqno=\([0-9]*\) .*notify=\([01]\).*/\1 \2/p' |
    awk '$2 == 1 || $1 != prev { print } { prev = $1 }' | sort -n -k1,1 -k2,2 > "$OUT/f.submit.all"
lo=$(head -1 "$OUT/g.submit" | cut -d' ' -f1); hi=$(tail -1 "$OUT/g.submit" | cut -d' ' -f1)
awk -v lo="${lo:-1}" -v hi="${hi:-0}" '$1 >= lo && $1 <= hi' "$OUT/f.submit.all" > "$OUT/f.submit.all.win"
n_g=$(wc -l < "$OUT/g.submit"); n_f=$(wc -l < "$OUT/f.submit.all.win")
# pairs "kick_seqno notify submit_seqno doorbell": same seqnos, and no doorbell => INFERRED
read -r n_nodb n_early n_bad < <(paste -d' ' "$OUT/f.submit.all.win" "$OUT/g.submit" |
    awk '$1 != $3 || ($2 == 0 && $4 == 1) { bad++ } $2 == 0 { nodb++ } $2 == 1 && $4 == 0 { early++ }
         END { print nodb + 0, early + 0, bad + 0 }')
check "SUBMIT vs virtio_gpu_notify: grtrace $n_g = tracepoints $n_f (seqnos ${lo:-?}..${hi:-?}; $n_nodb without a doorbell, all INFERRED; $n_early more INFERRED: a command done before its kick)" \
    "$([ "$n_g" -gt 0 ] && [ "$n_g" = "$n_f" ] && [ "$n_bad" = 0 ]; echo $?)"
echo "FIGURE count SUBMIT vs virtio_gpu_notify grtrace=$n_g tracepoint=$n_f without_doorbell=$n_nodb done_before_kick=$n_early"
# Per ctrlq command, in time order: COMMIT <= the SUBMIT that covers it (the first one after
# its COMMIT with a seqno at least its own) <= END, unless that SUBMIT is INFERRED (the device
# took the command without its doorbell; counted). A SUBMIT written after the doorbell could
# follow the END (v3's first B9 fix: 404 of 592 commands in CI).
sub_order=$(sort -k4,4n "$OUT/run.txt" | python3 -c '
import sys
commit, end, subs = {}, {}, []
for line in sys.stdin:
    f = line.split()
    if len(f) < 9 or f[6] != "ctrlq":
        continue
    t, name, seq = float(f[3]), f[5], int(f[8])
    if name == "COMMIT":
        commit[seq] = t
    elif name == "END":
        end.setdefault(seq, t)
    elif name == "SUBMIT":
        subs.append((t, seq, "inferred" in line))
pending = sorted(commit)  # seqnos committed, not yet covered
cover, i = {}, 0
for t, seq, inf in subs:
    for s in [s for s in pending if s <= seq and commit[s] <= t]:
        cover[s] = (t, inf)
    pending = [s for s in pending if s not in cover]
jobs = [s for s in commit if s in end]
late = [s for s in jobs if s in cover and not cover[s][1] and cover[s][0] > end[s]]
late_inf = [s for s in jobs if s in cover and cover[s][1] and cover[s][0] > end[s]]
none = [s for s in jobs if s not in cover]
print(len(jobs), len(late), len(late_inf), len(none), " ".join(map(str, (late + none)[:5])))
' 2>&1)
read -r so_jobs so_late so_late_inf so_none so_first <<< "$sub_order"
check "per command COMMIT <= SUBMIT <= END (${so_jobs:-?} commands: ${so_late:-?} with a doorbell SUBMIT after END, ${so_none:-?} never submitted${so_first:+: seqnos $so_first})" \
    "$([ "${so_jobs:-0}" -gt 0 ] && [ "$so_late" = 0 ] && [ "$so_none" = 0 ]; echo $?)"
echo "FIGURE submit_order commands=${so_jobs:-?} late_doorbell=${so_late:-?} late_inferred=${so_late_inf:-?} never=${so_none:-?}"
echo "FIGURE events_recorded $events"

# ---- tiny buffers, recorded live ----
parse small
check "grtparse reads the tiny-buffer run" $?
S=$OUT/small.summary.json
slost=$(jget "$S" lost.kernel); sgaps=$(jget "$S" lost.gap)
sdrop=$(jget "$S" device_dropped)
check "tiny buffers: records were lost (${slost:-?})" "$([ "${slost:-0}" -gt 0 ]; echo $?)"
check "tiny buffers: LOST notes in the stream = kernel dropped (${slost:-?} = ${sdrop:-?})" \
    "$([ -n "$sdrop" ] && [ "${slost:-x}" = "$sdrop" ]; echo $?)"
check "tiny buffers: no sequence gap" "$([ "${sgaps:-x}" = 0 ]; echo $?)"
"$R" "$OUT/small" > "$OUT/small-report.txt" 2>&1
check "grtreport reads the tiny-buffer run (jobs across losses are incomplete, not wrong)" $?
echo "FIGURE small lost=$slost dropped=$sdrop"

# ---- kernel-side filter (events=COMMIT|END), recorded by the real grtrace only ----
recorder=$(sed -n 's/^GRT: recorder=\([a-z-]*\).*/\1/p' "$LOG" | head -1)  # the serial log ends lines in CR LF
if [ "$recorder" != grtrace-drain ]; then  # grtrace, or unknown (guest broke early)
    check "filter recorder exited 0" "$(t grep -q '^GRT: filter recorder rc=0' "$LOG")"
    check "filter recording present (filt.grtrace.0)" "$([ -f "$OUT/filt.grtrace.0" ]; echo $?)"
    "$P" -q -O "$OUT/filt" --summary-json "$OUT/filt.summary.json" > /dev/null 2>&1
    names=$(jkeys "$OUT/filt.summary.json" counts)  # every event and note name recorded
    bad=$(echo "$names" | tr ' ' '\n' | grep -vxE 'COMMIT|END|RING|PROCESS|MSG|LOST|STREAM_INFO|' | tr '\n' ' ')
    check "event-mask filter: only COMMIT and END recorded (seen: $names)" \
        "$([ -z "$bad" ] && echo "$names" | grep -q COMMIT && echo "$names" | grep -q END; echo $?)"

    # pid filter: the workload's COMMITs are there, and so are the END events, which the
    # virtio-gpu dequeue worker reports (a v1 pid filter dropped every one of them)
    wlpid=$(sed -n 's/^GRT: pid filter recorder rc=0 pid=\([0-9]*\).*/\1/p' "$LOG" | head -1)
    check "pid filter recorder exited 0" "$([ -n "$wlpid" ]; echo $?)"
    "$P" -q "$OUT/pidf" > "$OUT/pidf.txt" 2>/dev/null
    pcommit=$(awk -v p="$wlpid" '$6 == "COMMIT" && $5 == p' "$OUT/pidf.txt" | wc -l)
    pend=$(awk '$6 == "END"' "$OUT/pidf.txt" | wc -l)
    check "pid filter: the workload's COMMITs ($pcommit) and the worker's ENDs ($pend) recorded" \
        "$([ "$pcommit" -gt 0 ] && [ "$pend" -gt 0 ]; echo $?)"
else
    echo "skip event-mask and pid filters (recorder ${recorder:-?}: the C drain has neither)"
fi

# ---- overflow with no consumer ----
parse ovf
olost=$(jget "$OUT/ovf.summary.json" lost.kernel)
odrop=$(sed -n 's/^GRT: overflow dropped=\([0-9]*\).*/\1/p' "$LOG")
check "no consumer: LOST notes = dropped (${olost:-?} = ${odrop:-?})" \
    "$([ -n "$odrop" ] && [ "$odrop" -gt 0 ] && [ "${olost:-x}" = "$odrop" ]; echo $?)"

if [ $fails = 0 ]; then echo "VERDICT e2e: PASS"; else echo "VERDICT e2e: FAIL ($fails checks)"; fi
[ $fails = 0 ]
