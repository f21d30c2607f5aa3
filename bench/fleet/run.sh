#!/usr/bin/env bash
# grtreport --parquet against the plain report, and DuckDB over a large dataset.
#
#   bash bench/fleet/run.sh                          # 1M and 10M events, 3 reps; DuckDB over 8 x 10M
#   SIZES=1000000 REPS=1 COPIES=2 bash bench/fleet/run.sh
#   GRTREPORT=bin/grtreport GRTGEN=bin/grtgen PYTHON=venv/bin/python3 ... (no cargo build)
#
# Inputs (generated once, kept in $WORK): grtgen -n N --cpus 2 -o g$N/run (grtrace-format's
# synthetic workload, ~8 events per job, as bench/report).
# Timed with /usr/bin/time -v, interleaved per rep so both see the same machine load:
#   plain     grtreport g$N/run --top 10
#   parquet   grtreport g$N/run --top 10 --parquet DIR --host bench --tag kernel=x
# Then the largest size is reported COPIES times into one dataset (a host each: COPIES x its
# jobs) and every query of sql/ runs over it with DuckDB (PYTHON: a python with duckdb,
# default the venv of scripts/pyenv.sh), each timed; the machine's load average is recorded
# before and after.
set -euo pipefail
. "$(dirname "$0")/../setup.sh"
bench_setup WORK=/tmp/bench-fleet SIZES="1000000 10000000" REPS=3 COPIES=8
log() { echo "[$(date +%T)] $*" >&2; }
PYTHON="${PYTHON:-$(bash "$ROOT/scripts/pyenv.sh")}"

RAW="$OUT/raw.tsv"
echo -e "events\ttool\trep\twall_s\tuser_s\tsys_s\tmaxrss_kb\trecords" > "$RAW"
echo "load before: $(cat /proc/loadavg); $(nproc) CPUs" > "$OUT/load.txt"

. "$ROOT/bench/measure.sh"

for N in $SIZES; do
  G="$WORK/g$N"
  mkdir -p "$G"
  if [[ ! -s "$G/run.grtrace.1" ]]; then
    log "grtgen $N"; "$GRTGEN" -n "$N" --cpus 2 -o "$G/run" > "$G/gen.log"
  fi
  GREC=$(sed -n 's/^records=\([0-9]*\).*/\1/p' "$G/gen.log")
  for rep in $(seq 1 "$REPS"); do
    measure "$N" plain "$rep" "$GREC" -- "$GRTREPORT" "$G/run" --top 10
    rm -rf "$WORK/ds$N"
    measure "$N" parquet "$rep" "$GREC" -- "$GRTREPORT" "$G/run" --top 10 \
      --parquet "$WORK/ds$N" --host bench --tag kernel=x
    cmp -s "$WORK/out_plain.txt" "$WORK/out_parquet.txt" || { log "N=$N: the report differs with --parquet"; exit 1; }
  done
  du -sb "$WORK/ds$N"/* | sed "s|$WORK/ds$N/||" > "$OUT/dataset_$N.txt"
done

python3 - "$RAW" > "$OUT/summary.txt" <<'PY'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
g = collections.defaultdict(list)
for n, tool, rep, w, u, s, rss, rec in rows:
    g[(int(n), tool)].append((float(w), float(u) + float(s), int(rss)))
print("%-10s %-8s %5s %9s %9s %10s %9s %9s" % ("events", "tool", "reps", "wall_med", "cpu_med", "maxrss_MB", "+wall", "+cpu"))
for n in sorted({k[0] for k in g}):
    base = None
    for tool in ("plain", "parquet"):
        v = g.get((n, tool))
        if not v:
            continue
        w = statistics.median(x[0] for x in v); c = statistics.median(x[1] for x in v)
        rss = max(x[2] for x in v) / 1024
        if tool == "plain":
            base = (w, c)
        xw = "%+.0f%%" % (100 * (w / base[0] - 1)) if base else "-"
        xc = "%+.0f%%" % (100 * (c / base[1] - 1)) if base else "-"
        print("%-10d %-8s %5d %9.3f %9.3f %10.1f %9s %9s" % (n, tool, len(v), w, c, rss, xw, xc))
PY
cat "$OUT/summary.txt"

# DuckDB over COPIES reports of the largest capture, a host each.
N=$(echo "$SIZES" | tr ' ' '\n' | sort -n | tail -1)
DS="$WORK/big"
if [[ ! -s "$WORK/big.done" || "$(cat "$WORK/big.done")" != "$N x $COPIES" ]]; then
  rm -rf "$DS"
  for c in $(seq 1 "$COPIES"); do
    log "dataset: copy $c of $COPIES ($N events)"
    "$GRTREPORT" "$WORK/g$N/run" -q --parquet "$DS" --host "h$c" --capture-id "c$c" --tag kernel="k$((c % 2))"
  done
  echo "$N x $COPIES" > "$WORK/big.done"
fi
JOBS=$("$PYTHON" -c "import duckdb; print(duckdb.connect().execute(\"SELECT count(*) FROM read_parquet('$DS/jobs/*/*.parquet')\").fetchall()[0][0])")
{
  echo "dataset: $COPIES x $N events = $JOBS jobs, $(du -sh "$DS" | cut -f1) on disk"
  "$PYTHON" "$ROOT/scripts/fleet_sql.py" duckdb "$DS" --json "$WORK/big.json" | grep '^-- '
} > "$OUT/duckdb.txt"
echo "load after: $(cat /proc/loadavg)" >> "$OUT/load.txt"
cat "$OUT/duckdb.txt" "$OUT/load.txt"
