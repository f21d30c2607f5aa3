#!/usr/bin/env bash
# grtreport's timeline exports on grtgen's synthetic workload: wall and CPU time, peak RSS and
# output size of the plain report, --perfetto (to /dev/null and to a file) and --html.
#
#   bash bench/report/export.sh                 # 10M events, 2 reps
#   N=1000000 REPS=3 bash bench/report/export.sh
# Writes $OUT/export.tsv (default bench/report/results/) and prints it.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="${WORK:-/tmp/bench-report}"
OUT="${OUT:-$HERE/results}"
N="${N:-10000000}"
REPS="${REPS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
mkdir -p "$WORK" "$OUT"
(cd "$ROOT" && cargo build --release -q -p grtreport && cargo build --release -q -p grtrace-format --example grtgen)
R="$CARGO_TARGET_DIR/release/grtreport"
G="$WORK/g$N"
[ -e "$G/run.grtrace.0" ] || { mkdir -p "$G"; "$CARGO_TARGET_DIR/release/examples/grtgen" -n "$N" --cpus 2 -o "$G/run" > /dev/null; }
tsv="$OUT/export.tsv"
echo -e "events\tmode\trep\twall_s\tuser_s\tsys_s\tmaxrss_kb\toutput_bytes" > "$tsv"
run() { # mode output -- command...
    local mode=$1 o=$2; shift 3
    /usr/bin/time -f "%e\t%U\t%S\t%M" -o "$WORK/time.txt" "$@" > /dev/null
    local size=0; [ -f "$o" ] && size=$(stat -c %s "$o")
    echo -e "$N\t$mode\t$rep\t$(cat "$WORK/time.txt")\t$size" >> "$tsv"
}
for rep in $(seq "$REPS"); do
    run report - -- "$R" "$G/run" -q
    run perfetto-null - -- "$R" "$G/run" -q --perfetto /dev/null
    run perfetto-file "$WORK/out.json" -- "$R" "$G/run" -q --perfetto "$WORK/out.json"
    run html "$WORK/out.html" -- "$R" "$G/run" -q --html "$WORK/out.html"
done
rm -f "$WORK/out.json"
column -t "$tsv"
