#!/bin/bash
# Host-side verdict on a drm_sched boot (kernel/boot.sh ... sched): the vsched test GPU (patch
# 6: two rings, each a drm_gpu_scheduler with 2 credits, timer engines) ran sched-workload's
# known pattern (guest/sched-workload.c) while the real grtrace recorded the vsched card and
# the scheduler's own tracepoints ran in a tracefs instance (trace clock mono) over a window
# that contains the recording (guest/init, mode sched).
# usage: kernel/verify-sched.sh OUTDIR GRTPARSE GRTREPORT
#
# Inputs in OUTDIR: serial-sched.log, sched.grtrace.* (grtrace), sched-ftrace.txt (the
# instance's `trace`), sched-ftrace-stats.txt, sched-jobs.txt (the workload's own account:
# per job its round, label, context, ring, finished fence context and seqno, the scheduler's
# job id, its dependency).
#
# The tracepoints of Linux 6.12 name a job by (scheduler name, job id) and by a hashed
# pointer to its finished fence, never by (fence context, seqno); the workload's account
# maps (ring, id) to (context, seqno), and drm_sched_process_job's fence pointer is the one
# the job's drm_sched_job event printed last (a pointer is reused only after the job is freed).
# The series' own events (drm_sched_job_hw_fence, _wait_dep_end, _timeout, _result) name the
# job as later kernels do, by fence=context:seqno and ring=name, without the job id.
#
# Checks, each printed as "ok"/"FAIL":
#  * the guest finished, no kernel warning, workload and recorder exited 0, the tracepoint
#    instance overran nothing;
#  * no record lost, no sequence gap, no sequence error;
#  * one for one, by <ctx, ring, seqno> (ctx = the finished fence's context): QUEUE =
#    drm_sched_job, START = drm_sched_job_hw_fence (and the same jobs as drm_run_job), END =
#    drm_sched_process_job (status = drm_sched_job_result's result), SYNC_ENTER (with the awaited fence's
#    context and seqno) = drm_sched_job_wait_dep, SYNC_EXIT = drm_sched_job_wait_dep_end; and
#    each is exactly the workload's job set (SYNC_ENTER: its dependency list); grtrace takes
#    these events from exactly these tracepoints (probes), so this checks the probes' keys;
#  * START carries the hardware fence run_job() returned (arg2 context, arg3 seqno), the
#    tracepoint's; on vsched one context per ring and seqnos 1, 2, 3, ... in order;
#  * no TIMEOUT and no drm_sched_job_timeout;
#  * each of those events is stamped at or after its tracepoint (a FIGURE gives the delays);
#  * END carries the hardware fence's error: F (failed by the engine) status 5 (EIO) with the
#    ERROR flag, every other job status 0;
#  * QUEUE/START/END name the job's own fence context (arg0) and one DRM client id per
#    context, three distinct ones;
#  * every SYNC_ENTER has one SYNC_EXIT naming the same fence, not before it;
#  * per job QUEUE <= START <= END (queue time never negative), END - drm_run_job >= the job's
#    engine time (the engine starts inside run_job(), before START); the pattern's orderings
#    hold: s2 and s3 wait for a credit that only L's and s1's completions return
#    (START(s2) >= RUN(L) + 30 ms, START(s3) >= RUN(L) + 32 ms, RUN = drm_run_job;
#    not END(L): drm_sched_job_done() returns the credit before END is stamped, so another
#    CPU may hand s2 over between the two), X starts after L ends (cross-ring
#    dependency), Y starts after X starts and ends after X (same ring: pipelined on the
#    scheduled fence, then FIFO on the engine);
#  * grtreport: every job complete, and the dependency waits attributed to the right blocker:
#    X blocked by L, Y blocked by X (the dependency each SYNC_ENTER named), in every round.
# Prints "FIGURE ..." lines and exits non-zero if any check failed.
set -uo pipefail
export LC_ALL=C
OUT=${1:?usage: verify-sched.sh OUTDIR GRTPARSE GRTREPORT}; P=${2:?grtparse}; R=${3:?grtreport}
LOG=$OUT/serial-sched.log
fails=0
check() {  # check DESCRIPTION CONDITION-EXIT-STATUS
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
t() { "$@" > /dev/null 2>&1; echo $?; }
W=$OUT/sched-verify; mkdir -p "$W"

check "guest finished (GRT: done)" "$(t grep -q '^GRT: done' "$LOG")"
check "no kernel warning/oops (dmesg)" "$(t grep -q '^GRT: warnings=0' "$LOG")"
check "sched workload and recorder exited 0" "$(t grep -q '^GRT: sched workload rc=0 recorder rc=0' "$LOG")"
J=$OUT/sched-jobs.txt
njobs=$(grep -c '^JOB ' "$J" 2>/dev/null); njobs=${njobs:-0}
check "workload account: $njobs jobs" "$([ "$njobs" -gt 0 ]; echo $?)"
ovr=$(awk '/^(overrun|dropped events):/ {s += $NF} END {print s + 0}' "$OUT/sched-ftrace-stats.txt" 2>/dev/null)
check "tracepoint instance: nothing overrun or dropped (${ovr:-?})" "$([ "${ovr:-x}" = 0 ]; echo $?)"

# ---- grtrace side ----
"$P" "$OUT/sched" > "$OUT/sched.txt" 2> "$OUT/sched.err"
check "grtparse reads the recording" $?
sum() { sed -n "s/^$1 *\([0-9 ]*\)$/\1/p" "$2" | awk '{print $NF}'; }
lost=$(sum 'lost(kernel)' "$OUT/sched.txt"); gaps=$(sum 'lost(gap)' "$OUT/sched.txt")
check "no record lost (lost(kernel)=${lost:-?})" "$([ "${lost:-x}" = 0 ]; echo $?)"
check "no sequence gap (lost(gap)=${gaps:-?})" "$([ "${gaps:-x}" = 0 ]; echo $?)"
check "no sequence error" "$(t grep -q 'Sequence errors: 0 ' "$OUT/sched.txt")"
# the ring table: vsched names jobs by their entity's finished fence, so both rings are
# announced with per-context seqnos (FORMAT.md 3.1), and the flags reach grtparse's RING line
nctx=$(grep -cE ' RING +[01] - - name=vsched-(gfx|copy) .* flags=ctx-seqno ' "$OUT/sched.txt")
check "ring table: vsched-gfx and vsched-copy flagged ctx-seqno ($nctx of 2)" "$([ "$nctx" = 2 ]; echo $?)"
# grtparse event lines: $4 time, $6 name, $7 ring name, $8 ctx, $9 seqno, then key=value
# g.NAME: "ctx ring seqno" (+ " fctx fseqno" for SYNC_*), one line per event, sorted
awk -v dir="$W" '
    function val(k,   i) { for (i = 10; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "?" }
    $7 ~ /^vsched-/ && $6 ~ /^(QUEUE|START|END|SYNC_ENTER|SYNC_EXIT)$/ {
        key = $8 " " $7 " " $9
        if ($6 ~ /^SYNC_/) print key, val("fctx"), val("fseqno") > (dir "/g." $6)
        else print key > (dir "/g." $6)
        print $6, key, $4, val("fctx"), val("client"), val("fseqno"), val("status"), ($0 ~ / flags=([a-z]+,)*error/) > (dir "/g.all")
    }' "$OUT/sched.txt"
for e in QUEUE START END SYNC_ENTER SYNC_EXIT; do touch "$W/g.$e"; sort -o "$W/g.$e" "$W/g.$e"; done

# ---- the workload's account: the truth ----
# JOB round label ctx ring fctx seqno id dep ; ring 0 = vsched-gfx, 1 = vsched-copy
awk '$1 == "JOB" { rn = $5 == 0 ? "vsched-gfx" : "vsched-copy"; print $6, rn, $7 }' "$J" | sort > "$W/truth.jobs"
awk '$1 == "JOB" { rn = $5 == 0 ? "vsched-gfx" : "vsched-copy"; k[$2 " " $3] = $6 " " rn " " $7 " " $6 " " $7; j[NR] = $0 }
     END { for (n in j) { split(j[n], f, " "); if (f[9] == "-") continue
             r = f[9] ~ /@prev$/ ? f[2] - 1 : f[2]; d = f[9]; sub(/@.*/, "", d)
             rn = f[5] == 0 ? "vsched-gfx" : "vsched-copy"; split(k[r " " d], g, " ")
             print f[6], rn, f[7], g[1], g[3] } }' "$J" | sort > "$W/truth.deps"

# ---- tracepoint side ----
# the instance's `trace` is merged in time order; "t.NAME": "ctx ring seqno" lines
awk -v dir="$W" -v map="$J" '
    BEGIN { while ((getline l < map) > 0) { split(l, f, " "); if (f[1] != "JOB") continue
                rn = f[5] == 0 ? "vsched-gfx" : "vsched-copy"; key[rn "/" f[8]] = f[6] " " rn " " f[7] } }
    function get(k,   s) { if (!match($0, k "=[^ ,]+")) return "?"; s = substr($0, RSTART, RLENGTH); return substr(s, length(k) + 2) }
    {
        ev = ""
        for (i = 1; i < NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ev = $(i + 1); ts = substr($i, 1, length($i) - 1); break }
        sub(/:$/, "", ev)
        if (ev == "drm_sched_job" || ev == "drm_run_job" || ev == "drm_sched_job_wait_dep") {
            ring = get("ring"); k = key[ring "/" get("id")]
            if (k == "") { unknown++; k = "unknown " ring " id" get("id") }
        } else if (ev == "drm_sched_job_hw_fence" || ev == "drm_sched_job_wait_dep_end" ||
                   ev == "drm_sched_job_timeout" || ev == "drm_sched_job_result") {
            # the series events name the job as later kernels do: fence=context:seqno, ring=name
            split(get("fence"), fc, ":"); k = fc[1] " " get("ring") " " fc[2]
        }
        if (ev == "drm_sched_job") { fk[get("fence")] = k; ty = "QUEUE"; print k > (dir "/t.QUEUE") }
        else if (ev == "drm_run_job") { ty = "RUN"; print k > (dir "/t.RUN") }
        else if (ev == "drm_sched_job_hw_fence") {
            # the hand-over: run_job() returned the hardware fence; START is taken from it
            ty = "START"; print k > (dir "/t.START")
            split(get("hw_fence"), hf, ":"); print k, hf[1], hf[2], get("error") > (dir "/t.HW")
        } else if (ev == "drm_sched_process_job") {
            fp = get("fence"); k = fk[fp]; delete fk[fp]
            if (k == "") { unknown++; k = "unknown fence " fp }
            ty = "END"; print k > (dir "/t.END")
        } else if (ev == "drm_sched_job_result") { print k, 0 - get("result") > (dir "/t.ENDST"); n[ev]++; next
        } else if (ev == "drm_sched_job_wait_dep") { ty = "SYNC_ENTER"; print k, get("context"), get("seq") > (dir "/t.SYNC_ENTER") }
        else if (ev == "drm_sched_job_wait_dep_end") { ty = "SYNC_EXIT"; print k > (dir "/t.SYNC_EXIT") }
        else if (ev == "drm_sched_job_timeout") { ty = "TIMEOUT"; print k > (dir "/t.TIMEOUT") }
        else next
        print ty, k, ts > (dir "/t.times")
        n[ev]++
    }
    END { for (e in n) printf "FIGURE tracepoint %s %d\n", e, n[e]; printf "FIGURE tracepoint unmapped %d\n", unknown + 0 }
' "$OUT/sched-ftrace.txt"
for e in QUEUE RUN START END ENDST HW SYNC_ENTER SYNC_EXIT TIMEOUT; do touch "$W/t.$e"; sort -o "$W/t.$e" "$W/t.$e"; done

# ---- the same instants: grtrace's time of each event minus its tracepoint's (both
# CLOCK_MONOTONIC: the instance's trace clock is mono; grtrace's wall clock minus the session
# anchor); grtrace's probe runs in the same tracepoint call, after the instance's (registered
# first), so the difference is the probe's delay ----
anchor=$(sed -n 's/^GRT: sched info: .* anchor \([0-9]*\) \([0-9]*\) .*/\1 \2/p' "$LOG" | head -1)
"$P" "$OUT/sched" -a QUEUE,START,END,SYNC_ENTER -f '%a %x %r %n %z\n' 2> /dev/null |
    awk -v a="$anchor" -v T="$W/t.times" '
    BEGIN { split(a, an, " "); rs = substr(an[1], 1, length(an[1]) - 9); rn = substr(an[1], length(an[1]) - 8)
            while ((getline l < T) > 0) { split(l, f, " "); p = index(f[5], ".")
                tp[f[1] " " f[2] " " f[3] " " f[4]] = substr(f[5], 1, p - 1) * 1000000 + substr(f[5], p + 1) } }
    $2 ~ /^[0-9]+$/ && $3 ~ /^vsched-/ {
        k = $1 " " $2 " " $3 " " $4; if (!(k in tp)) next
        p = index($5, "."); mono = (substr($5, 1, p - 1) - rs) * 1000000000 + (substr($5, p + 1) - rn) + an[2]
        d = mono / 1000 - tp[k]; print $1, d
    }' | sort -k1,1 -k2,2n | awk '
    { v[$1, ++n[$1]] = $2 }
    END { for (e in n) printf "FIGURE grtrace-minus-tracepoint %s n=%d min=%.0f median=%.0f max=%.0f us\n", e, n[e], v[e, 1], v[e, int((n[e] + 1) / 2)], v[e, n[e]] }' |
    tee "$W/times.txt"
# same CPU, same thread, one clock source: a hook is never stamped before its tracepoint (the
# instance prints microseconds, so -1 us is the resolution)
early=$(awk '{ m = $5; sub(/^min=/, "", m); if (m + 0 < -1) n++ } END { print n + 0 }' "$W/times.txt")
check "every event stamped at or after its tracepoint, the same instant of the same job ($(awk '{ a = $5; b = $7; sub(/^min=/, "", a); sub(/^max=/, "", b); printf "%s %s..%s us; ", $3, a, b }' "$W/times.txt"))" \
    "$([ "$(wc -l < "$W/times.txt")" = 4 ] && [ "$early" = 0 ]; echo $?)"

# ---- one for one ----
same() {  # same LABEL A B
    check "$1 ($(wc -l < "$2") = $(wc -l < "$3"))" "$([ -s "$2" ] && cmp -s "$2" "$3"; echo $?)"
    cmp -s "$2" "$3" || diff "$2" "$3" | head -5 | sed 's/^/     /'
}
same "QUEUE = drm_sched_job, by <ctx, ring, seqno>" "$W/g.QUEUE" "$W/t.QUEUE"
same "START = drm_sched_job_hw_fence (the hand-over after run_job())" "$W/g.START" "$W/t.START"
same "START = drm_run_job (the same jobs)" "$W/g.START" "$W/t.RUN"
same "END = drm_sched_process_job" "$W/g.END" "$W/t.END"
same "SYNC_ENTER = drm_sched_job_wait_dep, with the awaited fence" "$W/g.SYNC_ENTER" "$W/t.SYNC_ENTER"
cut -d' ' -f1-3 "$W/g.SYNC_EXIT" | sort > "$W/g.SYNC_EXITk"
same "SYNC_EXIT = drm_sched_job_wait_dep_end, by job" "$W/g.SYNC_EXITk" "$W/t.SYNC_EXIT"
# the link to the driver's ring job: START carries the hardware fence run_job() returned
"$P" "$OUT/sched" -q -a START -f '%x %r %n %2 %3 %f\n' 2> /dev/null |
    awk '$2 ~ /^vsched-/ && $6 !~ /error/ { print $1, $2, $3, $4, $5, 0 }' | sort > "$W/g.HW"
same "START's hardware fence (arg2, arg3) = drm_sched_job_hw_fence's hw context and seq" "$W/g.HW" "$W/t.HW"
# vsched's engines: one fence context per ring, seqnos 1, 2, 3, ... in hand-over order
hwbad=$("$P" "$OUT/sched" -q -a START -f '%r %2 %3\n' 2> /dev/null | awk '
    $1 ~ /^vsched-/ { if (!($1 in c)) { c[$1] = $2; n[$1] = 0; if (u[$2]++) bad++ }
                      if ($2 != c[$1] || $3 != ++n[$1]) bad++ }
    END { print bad + 0 }')
check "START names the ring's own hardware fence: one context per ring, seqnos 1, 2, ... in order ($hwbad wrong)" \
    "$([ "$hwbad" = 0 ] && [ -s "$W/g.HW" ]; echo $?)"
"$P" "$OUT/sched" -q -a END -f '%x %r %n %2\n' 2> /dev/null | awk '$2 ~ /^vsched-/' | sort > "$W/g.ENDST"
same "END status = drm_sched_job_result's result" "$W/g.ENDST" "$W/t.ENDST"
check "no TIMEOUT, no drm_sched_job_timeout ($(grep -c . "$W/t.TIMEOUT") tracepoint events)" \
    "$([ ! -s "$W/t.TIMEOUT" ] && ! grep -q ' TIMEOUT ' "$OUT/sched.txt"; echo $?)"
same "QUEUE = the workload's jobs" "$W/g.QUEUE" "$W/truth.jobs"
same "START = the workload's jobs" "$W/g.START" "$W/truth.jobs"
same "END = the workload's jobs" "$W/g.END" "$W/truth.jobs"
same "SYNC_ENTER = the workload's dependencies" "$W/g.SYNC_ENTER" "$W/truth.deps"

# ---- per-job consistency and the pattern's orderings ----
# g.all: NAME ctx ring seqno time fctx client fseqno status error-flag
awk -v J="$J" '
    BEGIN { while ((getline l < J) > 0) { split(l, f, " "); if (f[1] != "JOB") continue
                rn = f[5] == 0 ? "vsched-gfx" : "vsched-copy"; k = f[6] " " rn " " f[7]
                lab[k] = f[3]; rnd[k] = f[2]; cx[k] = f[4]; fc[k] = f[6]
                byl[f[2] " " f[3]] = k; ex[k] = (f[3] == "L" ? 30000 : f[3] == "X" ? 5000 : f[3] == "F" ? 1000 : 2000) * 1000 } }
    function ns(s,   p) { p = index(s, "."); return substr(s, 1, p - 1) * 1000000000 + substr(s, p + 1) }
    {
        k = $2 " " $3 " " $4; t = ns($5)
        if ($1 == "SYNC_ENTER") { se[k, $8 " " $6]++; st[k, $6 " " $8] = t; next }
        if ($1 == "SYNC_EXIT") {
            if ((k, $8 " " $6) in se) { if (t < st[k, $6 " " $8]) exit_early++; sx[k, $8 " " $6]++ }
            else { exit_other++; if (exit_other <= 3) printf "     SYNC_EXIT of %s (%s) names fence %s:%s, not one its SYNC_ENTER named\n", k, lab[k], $6, $8 }
            next
        }
        if ($1 == "END") {
            # F is failed by the engine (-EIO = 5 on Linux), every other job succeeds
            if (lab[k] == "F") { nf++; if ($9 != 5 || $10 != 1) baderr++ }
            else if ($9 != 0 || $10 != 0) baderr++
        }
        if ($6 != fc[k]) badfctx++
        if (!(cx[k] in cl)) cl[cx[k]] = $7; else if (cl[cx[k]] != $7) badclient++
        tm[$1, k] = t
    }
    END {
        for (p in se) if (sx[p] != se[p]) unpaired++
        for (k in lab) {
            q = tm["QUEUE", k]; s = tm["START", k]; e = tm["END", k]
            if (q == "" || s == "" || e == "") { missing++; continue }
            if (s < q) negq++
            if (e < s) nege++
            if (minq == "" || s - q < minq) minq = s - q
            if (s - q > maxq) maxq = s - q
        }
        for (c in cl) { nc++; if (c2[cl[c]]++) dupc++ }
        for (r = 0; (r " L") in byl; r++) {
            L = byl[r " L"]; s1 = byl[r " s1"]; s2 = byl[r " s2"]; s3 = byl[r " s3"]; X = byl[r " X"]; Y = byl[r " Y"]
            if (tm["START", X] < tm["END", L]) xdep++
            if (tm["START", Y] < tm["START", X] || tm["END", Y] < tm["END", X]) ydep++
        }
        printf "failed %d baderr %d ", nf, baderr
        printf "missing %d negq %d nege %d minq %d maxq %d badfctx %d badclient %d contexts %d dupclient %d unpaired %d exit_other %d exit_early %d xdep %d ydep %d rounds %d\n",
            missing, negq, nege, minq, maxq, badfctx, badclient, nc, dupc, unpaired, exit_other, exit_early, xdep, ydep, r
    }' "$W/g.all" > "$W/order.txt"
# Engine time and credits, measured from drm_run_job (the tracepoint right before run_job()):
# vsched's engine starts a job inside run_job(), before START (drm_sched_job_hw_fence) is
# stamped, so a vCPU held up between the two could make END - START shorter than the engine
# time. grtrace's END/START on CLOCK_MONOTONIC (through the session anchor) against the
# tracepoint's time in microseconds.
"$P" "$OUT/sched" -q -a START,END -f '%a %x %r %n %z\n' 2> /dev/null |
    awk -v a="$anchor" -v T="$W/t.times" -v J="$J" '
    BEGIN { split(a, an, " "); rs = substr(an[1], 1, length(an[1]) - 9); rn = substr(an[1], length(an[1]) - 8)
            while ((getline l < T) > 0) { split(l, f, " "); if (f[1] != "RUN") continue; p = index(f[5], ".")
                run[f[2] " " f[3] " " f[4]] = substr(f[5], 1, p - 1) * 1000000 + substr(f[5], p + 1) }
            while ((getline l < J) > 0) { split(l, f, " "); if (f[1] != "JOB") continue
                rn2 = f[5] == 0 ? "vsched-gfx" : "vsched-copy"; k = f[6] " " rn2 " " f[7]
                lab[k] = f[3]; byl[f[2] " " f[3]] = k
                ex[k] = f[3] == "L" ? 30000 : f[3] == "X" ? 5000 : f[3] == "F" ? 1000 : 2000 } }
    $3 ~ /^vsched-/ { p = index($5, "."); mono = (substr($5, 1, p - 1) - rs) * 1000000000 + (substr($5, p + 1) - rn) + an[2]
                      t[$1, $2 " " $3 " " $4] = mono / 1000 }
    END {
        # -1 us: the instance prints microseconds
        for (k in lab) if (!(k in run) || t["END", k] - run[k] < ex[k] - 1) { short++; if (short <= 3) printf "     %s (%s): END %.0f us after drm_run_job, engine time %d us\n", k, lab[k], t["END", k] - run[k], ex[k] }
        for (r = 0; (r " L") in byl; r++) {
            # L, s1, s2, s3 in the order the scheduler handed them over (usually that order;
            # it may pick s1 first: the job of its entity is as ready as L). The engine runs them
            # in that order, and with 2 credits the third and fourth are handed over only when
            # the first, then the second, ended. A credit is returned (atomic_sub) before END
            # is stamped, so the causal bound is the first hand-over plus the engine times.
            n = 0
            split("L s1 s2 s3", names, " ")
            for (i = 1; i <= 4; i++) {
                k = byl[r " " names[i]]
                for (j = n; j > 0 && run[o[j]] > run[k]; j--) o[j + 1] = o[j]
                o[j + 1] = k; n++
            }
            if (t["START", o[3]] < run[o[1]] + ex[o[1]] - 1 ||
                t["START", o[4]] < run[o[1]] + ex[o[1]] + ex[o[2]] - 1) credit++
        }
        printf "short %d credit %d\n", short, credit
    }' > "$W/engine.txt"
cat "$W/order.txt" "$W/engine.txt" > "$W/order-all.txt"
grep -h '^     ' "$W/order.txt" "$W/engine.txt"
o() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$W/order-all.txt" | tail -1; }
check "every job has QUEUE, START and END ($(o missing) without)" "$([ "$(o missing)" = 0 ]; echo $?)"
check "queue time never negative: QUEUE <= START for every job ($(o negq) negative; min $(o minq) ns, max $(o maxq) ns)" "$([ "$(o negq)" = 0 ]; echo $?)"
check "START <= END, END - drm_run_job >= the job's engine time ($(o nege) negative, $(o short) shorter)" \
    "$([ "$(o nege)" = 0 ] && [ "$(o short)" = 0 ]; echo $?)"
check "END reports the hardware fence's error: F (failed by the engine) status=5 with the error flag in each of $(o failed) rounds, every other job status=0 ($(o baderr) wrong)" \
    "$([ "$(o failed)" = "$(o rounds)" ] && [ "$(o baderr)" = 0 ]; echo $?)"
check "QUEUE/START/END name the job's own fence context ($(o badfctx) do not)" "$([ "$(o badfctx)" = 0 ]; echo $?)"
check "one DRM client id per context, $(o contexts) distinct (other ids: $(o badclient), shared: $(o dupclient))" \
    "$([ "$(o contexts)" = 3 ] && [ "$(o badclient)" = 0 ] && [ "$(o dupclient)" = 0 ]; echo $?)"
check "every SYNC_ENTER has one SYNC_EXIT naming the same fence ($(o unpaired) unpaired, $(o exit_other) SYNC_EXIT naming another fence)" \
    "$([ "$(o unpaired)" = 0 ] && [ "$(o exit_other)" = 0 ]; echo $?)"
check "SYNC_EXIT never before its SYNC_ENTER ($(o exit_early))" "$([ "$(o exit_early)" = 0 ]; echo $?)"
check "credits: the third job handed over starts only when the first ended, the fourth when the second did (L, s1, s2, s3: 30 and 32 ms after L's drm_run_job when L goes first) ($(o credit) of $(o rounds) rounds not)" "$([ "$(o credit)" = 0 ]; echo $?)"
check "cross-ring dependency: X starts after L ends ($(o xdep) rounds not)" "$([ "$(o xdep)" = 0 ]; echo $?)"
check "same-ring dependency: Y starts after X starts and ends after X ($(o ydep) rounds not)" "$([ "$(o ydep)" = 0 ]; echo $?)"

# ---- grtreport ----
"$R" "$OUT/sched" > "$OUT/sched-report.txt" 2>&1
check "grtreport reads the recording" $?
"$R" "$OUT/sched" --jobs -q > "$W/jobs.txt" 2>&1
jl=$(sed -n 's/.* \([0-9]*\) job(s): \([0-9]*\) complete, \([0-9]*\) incomplete.*/\1 \2 \3/p' "$OUT/sched-report.txt" | head -1)
set -- $jl
check "grtreport: every job complete (${1:-?} jobs, ${2:-?} complete, ${3:-?} incomplete; the workload ran $njobs)" \
    "$([ "${1:-x}" = "$njobs" ] && [ "${2:-x}" = "$njobs" ]; echo $?)"
# --jobs -q: $2 ctx, $3 ring id, $4 seqno, $16 blocked_by (ctx/ring/seqno)
awk -v J="$J" '
    BEGIN { while ((getline l < J) > 0) { split(l, f, " "); if (f[1] != "JOB") continue
                k = f[6] "/" f[5] "/" f[7]; lab[k] = f[3]; byl[f[2] " " f[3]] = k; rnd[k] = f[2] } }
    $1 !~ /^#/ && NF >= 16 {
        k = $2 "/" $3 "/" $4; b[k] = $16
    }
    END {
        for (r = 0; (r " L") in byl; r++) {
            X = byl[r " X"]; Y = byl[r " Y"]
            if (b[X] != byl[r " L"]) { bad++; if (bad <= 3) printf "     round %d: X %s blocked by %s, not L %s\n", r, X, b[X], byl[r " L"] }
            if (b[Y] != X) { bad++; if (bad <= 3) printf "     round %d: Y %s blocked by %s, not X %s\n", r, Y, b[Y], X }
        }
        printf "blockers_wrong %d of %d\n", bad, 2 * r
    }' "$W/jobs.txt" > "$W/blockers.txt"
grep '^     ' "$W/blockers.txt"
bw=$(awk '/^blockers_wrong/ {print $2}' "$W/blockers.txt")
check "grtreport attributes the dependency waits: X blocked by L, Y by X in every round ($(tail -1 "$W/blockers.txt"))" \
    "$([ "${bw:-x}" = 0 ]; echo $?)"
echo "FIGURE sched jobs=$njobs events=$(sum events "$OUT/sched.txt") $(tail -1 "$W/order.txt")"
grep -h 'sched-workload\|DONE jobs' "$LOG" | grep -o 'DONE.*' | head -1 | sed 's/^/FIGURE workload /'

if [ $fails = 0 ]; then echo "VERDICT sched: PASS"; else echo "VERDICT sched: FAIL ($fails checks)"; fi
[ $fails = 0 ]
