#!/usr/bin/env bash
# What the report holds for jobs left open (committed, never completed): RATE COMMITs a
# second for each of SECONDS (default 20 100 200 at 10,000/s), grtreport's peak RSS and CPU
# time (/usr/bin/time -v). A job left open is held until the horizon (10 s) gives it up, so
# the peak should follow the jobs open within one horizon, not the length of the capture.
#   bench/report/open-jobs.sh                     release build of grtreport, results on stdout
#   GRTREPORT=bin/grtreport OPENJOBS=bin/openjobs SECONDS_LIST="20 100" RATE=10000 bench/report/open-jobs.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
rate=${RATE:-10000}
list=${SECONDS_LIST:-20 100 200}
work=${WORK:-/tmp/grt-open-jobs}
mkdir -p "$work"
if [ -z "${GRTREPORT:-}" ]; then
    cargo build --release --quiet -p grtreport --bin grtreport --example openjobs
    dir=$(cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release
    GRTREPORT=$dir/grtreport OPENJOBS=$dir/examples/openjobs
fi
echo "# $(uptime)"
printf 'seconds\tcommits\tinput_MB\tpeak_rss_MB\tcpu_s\tincomplete_line\n'
for s in $list; do
    f=$work/open-$s-$rate.grtrace
    [ -s "$f" ] || "$OPENJOBS" "$s" "$rate" "$f"
    /usr/bin/time -v "$GRTREPORT" "$f" -o "$work/report-$s.txt" 2> "$work/time-$s.txt" || true
    rss=$(awk -F': ' '/Maximum resident/ {printf "%.1f", $2/1024}' "$work/time-$s.txt")
    cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {printf "%.2f", u+s}' "$work/time-$s.txt")
    mb=$(du -m "$f" | cut -f1)
    jobs=$(grep -m1 -o '[0-9]* job(s): [0-9]* complete, [0-9]* incomplete' "$work/report-$s.txt" || echo '?')
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$((s * rate))" "$mb" "$rss" "$cpu" "$jobs"
done
