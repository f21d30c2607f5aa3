#!/usr/bin/env bash
# grtreport's per-job outputs and exports against the plain report (issue 24 part 1, issues
# 25 and 26), on grtgen's synthetic workload (~8 events a job): wall and CPU time, peak RSS
# and output size of each mode below, interleaved per rep so that all see the same load.
#
#   bash bench/report/export.sh                         # 10M events, 3 reps
#   SIZES="10000000 40000000" REPS=3 bash bench/report/export.sh
#   GRTREPORT=bin/grtreport GRTGEN=bin/grtgen WORK=/tmp/w OUT=/tmp/out bash bench/report/export.sh
#   MODES="report parquet" bash bench/report/export.sh  # a subset
# Writes $OUT/export.tsv (default bench/report/results/) and $OUT/export-summary.txt (medians,
# and each mode's wall and CPU as a ratio to the plain report of the same size).
set -euo pipefail
. "$(dirname "$0")/../setup.sh"
bench_setup WORK=/tmp/bench-report SIZES="${N:-10000000}" REPS=3
R=$GRTREPORT

# The modes: name, the output file it writes (- for none), its arguments after the input.
# Everything that would go to stdout goes to /dev/null.
MODE_TABLE="
report          -                   --top 10
jobs            -                   -q --jobs
csv             out.csv             -q --csv @
json            -                   --json --top 10
perfetto-json   out.json            -q --perfetto @
perfetto-pb     out.pftrace         -q --perfetto @
html            out.html            -q --html @
parquet         ds                  -q --parquet @ --host bench --tag kernel=x
critical        -                   --critical-path --top 10
"
MODES="${MODES:-$(awk 'NF { print $1 }' <<< "$MODE_TABLE" | tr '\n' ' ')}"

tsv="$OUT/export.tsv"
echo -e "events\tmode\trep\twall_s\tuser_s\tsys_s\tmaxrss_kb\toutput_bytes" > "$tsv"
for N in $SIZES; do
    G="$WORK/g$N"
    [ -e "$G/run.grtrace.1" ] || { mkdir -p "$G"; "$GRTGEN" -n "$N" --cpus 2 -o "$G/run" > /dev/null; }
    for rep in $(seq "$REPS"); do
        for mode in $MODES; do
            read -r _ out args <<< "$(awk -v m="$mode" '$1 == m' <<< "$MODE_TABLE")"
            [ -n "${args:-}" ] || { echo "export.sh: no mode $mode" >&2; exit 2; }
            o="$WORK/$out"
            rm -rf "$WORK"/out.* "$WORK/ds"
            # shellcheck disable=SC2086 # the arguments are words of the table
            /usr/bin/time -f "%e\t%U\t%S\t%M" -o "$WORK/time.txt" \
                "$R" "$G/run" ${args//@/$o} > /dev/null
            size=0
            [ "$out" = - ] || size=$(du -sb "$o" | cut -f1)
            echo -e "$N\t$mode\t$rep\t$(cat "$WORK/time.txt")\t$size" >> "$tsv"
            rm -rf "$WORK"/out.* "$WORK/ds"
        done
    done
done

# Medians per size and mode, and the ratios to the plain report.
python3 - "$tsv" > "$OUT/export-summary.txt" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault((int(r["events"]), r["mode"]), []).append(r)
print(f"{'events':>9} {'mode':<14} {'reps':>4} {'wall_med':>9} {'cpu_med':>8} {'rss_MB':>7} "
      f"{'out_MB':>8} {'+wall':>7} {'+cpu':>7}")
base = {}
for (n, mode), rs in by.items():
    wall = statistics.median(float(r["wall_s"]) for r in rs)
    cpu = statistics.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs)
    if mode == "report":
        base[n] = (wall, cpu)
for (n, mode), rs in sorted(by.items(), key=lambda kv: (kv[0][0], list(by).index(kv[0]))):
    wall = statistics.median(float(r["wall_s"]) for r in rs)
    cpu = statistics.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs)
    rss = max(int(r["maxrss_kb"]) for r in rs) / 1024
    size = max(int(r["output_bytes"]) for r in rs) / 1e6
    bw, bc = base.get(n, (0, 0))
    pw = f"{(wall / bw - 1) * 100:+.0f}%" if bw else "-"
    pc = f"{(cpu / bc - 1) * 100:+.0f}%" if bc else "-"
    print(f"{n:>9} {mode:<14} {len(rs):>4} {wall:>9.3f} {cpu:>8.3f} {rss:>7.1f} {size:>8.1f} {pw:>7} {pc:>7}")
EOF
cat "$OUT/export-summary.txt"
