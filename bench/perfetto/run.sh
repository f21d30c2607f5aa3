#!/usr/bin/env bash
# grtreport --perfetto: Perfetto's protobuf trace against today's JSON export and against the
# plain report, on grtgen's synthetic workload: wall and CPU time, peak RSS, output size.
#
#   bash bench/perfetto/run.sh                       # 1M and 10M events, 3 reps
#   SIZES=10000000 REPS=1 bash bench/perfetto/run.sh
#   GRTREPORT=bin/grtreport GRTGEN=bin/grtgen ... (carried binaries: no cargo build)
# Inputs: grtgen -n N --cpus 2 -o $WORK/gN/run (kept; ~8 events per job). Commands, timed
# with /usr/bin/time, interleaved per rep so all see the same machine load:
#   report    grtreport gN/run -q
#   json      grtreport gN/run -q --perfetto out.json
#   protobuf  grtreport gN/run -q --perfetto out.pftrace
# Writes $OUT/perfetto.tsv (default bench/perfetto/results/) and a summary of medians:
# size ratio json/protobuf, protobuf wall / report wall, RSS of each.
set -euo pipefail
. "$(dirname "$0")/../setup.sh"
bench_setup WORK=/tmp/bench-perfetto SIZES="1000000 10000000" REPS=3
R=$GRTREPORT
tsv="$OUT/perfetto.tsv"
echo -e "events\tmode\trep\twall_s\tuser_s\tsys_s\tmaxrss_kb\toutput_bytes" > "$tsv"
run() { # mode output -- command...
    local mode=$1 o=$2; shift 3
    rm -f "$o"
    /usr/bin/time -f "%e\t%U\t%S\t%M" -o "$WORK/time.txt" "$@" > /dev/null
    local size=0; [ -f "$o" ] && size=$(stat -c %s "$o")
    echo -e "$N\t$mode\t$rep\t$(cat "$WORK/time.txt")\t$size" >> "$tsv"
    echo "[$(date +%T)] N=$N $mode rep=$rep: $(tail -1 "$tsv" | cut -f4-8)" >&2
}
for N in $SIZES; do
    G="$WORK/g$N"
    [ -e "$G/run.grtrace.0" ] || { mkdir -p "$G"; "$GRTGEN" -n "$N" --cpus 2 -o "$G/run" > /dev/null; }
    echo "[$(date +%T)] N=$N load: $(uptime)" >&2
    for rep in $(seq "$REPS"); do
        run report - -- "$R" "$G/run" -q
        run json "$WORK/out.json" -- "$R" "$G/run" -q --perfetto "$WORK/out.json"
        run protobuf "$WORK/out.pftrace" -- "$R" "$G/run" -q --perfetto "$WORK/out.pftrace"
    done
done
rm -f "$WORK/out.json" "$WORK/out.pftrace"
python3 - "$tsv" > "$OUT/summary.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
med = lambda n, m, k: statistics.median(float(r[k]) for r in rows if r["events"] == n and r["mode"] == m)
for n in sorted({r["events"] for r in rows}, key=int):
    print(f"{int(n):,} events (medians of {sum(1 for r in rows if r['events']==n and r['mode']=='report')}):")
    for m in ("report", "json", "protobuf"):
        print(f"  {m:9} wall {med(n,m,'wall_s'):7.2f} s  cpu {med(n,m,'user_s')+med(n,m,'sys_s'):7.2f} s"
              f"  rss {med(n,m,'maxrss_kb')/1024:7.1f} MiB  size {med(n,m,'output_bytes')/1e6:9.1f} MB")
    print(f"  json/protobuf size {med(n,'json','output_bytes')/med(n,'protobuf','output_bytes'):.1f}x;"
          f" protobuf wall / report wall {med(n,'protobuf','wall_s')/med(n,'report','wall_s'):.2f}"
          f" (json {med(n,'json','wall_s')/med(n,'report','wall_s'):.2f})")
PY
echo "load: $(uptime)" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
