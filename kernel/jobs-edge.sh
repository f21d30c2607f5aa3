# shellcheck shell=bash
# The "complete but at the edges" rule, sourced by verify.sh and verify-stock.sh (not run).
# A recording starts and stops while the GPU may be busy: jobs that ended before the first
# COMMIT were committed before the recording started, and jobs committed after the last END
# were still in flight when it stopped. Neither can be complete; every job in between must be.
# A job line's time is its COMMIT, or its earliest event without one: a job whose time is
# before the recording's first COMMIT has none, whatever its flags say (grtreport cannot call
# it no-commit before it has seen that the recording holds COMMITs at all).
# edge_jobs PARSE_TXT JOBS_TXT: prints "EDGE OTHER", the incomplete jobs of JOBS_TXT
# (`grtreport --jobs -q`: $1 time, $4 seqno, $15 flags; $16 is blocked_by) at an edge and elsewhere, using the
# first COMMIT time and the highest END seqno of PARSE_TXT (grtparse: $4 time, $6 name, $9 seqno).
edge_jobs() {
    local first_commit last_end
    first_commit=$(awk '$6 == "COMMIT" { print $4; exit }' "$1")
    last_end=$(awk '$6 == "END" && $9 + 0 > m { m = $9 + 0 } END { print m + 0 }' "$1")
    awk -v f="${first_commit:-0}" -v m="$last_end" '$15 ~ /incomplete/ {
        if ($1 + 0 < f + 0 || $4 + 0 > m) e++; else o++ }
        END { print e + 0, o + 0 }' "$2"
}
# edge_ok JOBS COMPLETE EDGE OTHER: the verdict on edge_jobs' figures and grtreport's summary
# (at most 6 jobs at the edges: a few fbdev flushes straddle a start or a stop)
edge_ok() {
    [ -n "${1:-}" ] && [ "$1" -gt 0 ] && [ "$4" = 0 ] && [ "$3" -le 6 ] && [ "$(( $2 + $3 ))" = "$1" ]
}
