#!/usr/bin/env bash
# grtreport vs btt: event rate and peak RSS on the same number of events, in one run.
#
#   bash bench/report/run.sh                      # 1M, 10M, 100M; 3 reps (100M: 1 rep)
#   SIZES="1000000 10000000" REPS=1 bash bench/report/run.sh
#   WORK=/tmp/bench-report OUT=bench/report/results bash bench/report/run.sh
#   SIZES=100000000 APPEND=1 bash bench/report/run.sh   # add a size to an earlier run
#   SIZES="10000000 40000000" REPS=1 READ=0 BTT=0 BEFORE=old/grtreport bash bench/report/run.sh
#   GRTREPORT=bin/grtreport GRTGEN=bin/grtgen ... (carried binaries: no cargo build)
#
# Inputs (generated once, kept in $WORK):
#   grtrace:  grtgen -n N --cpus 2 -o g$N/run       (grtrace-format's synthetic workload:
#             ~8 events per job on 2 CPUs, realistic phases; about 72 bytes per event)
#   btt:      ../shared/bench/gen_blktrace.py -n N, merged by `blkparse -d` (btt's input);
#             needs the blktrace package. The shared generator is only used here, at bench time.
# Commands timed with /usr/bin/time -v, interleaved per rep so both see the same machine load:
#   btt        btt -i merged.bin -o x
#   grtreport  grtreport g$N/run --top 10 > report.txt          (default: files mapped)
#   grtreport --read ...                                        (files read with read(); READ=0: not run)
#   grtreport --critical-path ...                               (the critical path, bounded
#             by its window; BEFORE=older grtreport adds its --critical-path run, and the
#             two critical-path sections are compared: a path not cut must be the same)
# BTT=0 leaves btt out (no anchor: for sizes whose btt input is too slow to generate).
# Events/s = records in the input / wall seconds (and / user+sys CPU seconds).
set -euo pipefail
. "$(dirname "$0")/../setup.sh"
bench_setup WORK=/tmp/bench-report SIZES="1000000 10000000 100000000" REPS=3 \
  GEN_BLK="$ROOT/../shared/bench/gen_blktrace.py"
[[ -f $GEN_BLK ]] || GEN_BLK="$ROOT/../../shared/bench/gen_blktrace.py"
log() { echo "[$(date +%T)] $*" >&2; }
BEFORE="${BEFORE:-}"; [[ -z $BEFORE ]] || BEFORE=$(realpath "$BEFORE")
READ="${READ:-1}"; BTT="${BTT:-1}"; CRITICAL="${CRITICAL:-1}"

RAW="$OUT/raw.tsv"
# APPEND=1 keeps earlier rows (e.g. run 100M separately) and summarises them all.
if [[ "${APPEND:-0}" != 1 || ! -s "$RAW" ]]; then
  echo -e "events\ttool\trep\twall_s\tuser_s\tsys_s\tmaxrss_kb\trecords" > "$RAW"
fi

. "$ROOT/bench/measure.sh"

for N in $SIZES; do
  G="$WORK/g$N"; B="$WORK/blk$N"
  mkdir -p "$G" "$B/bttout"
  if [[ ! -s "$G/run.grtrace.1" ]]; then
    log "grtgen $N"; "$GRTGEN" -n "$N" --cpus 2 -o "$G/run" > "$G/gen.log"
  fi
  GREC=$(sed -n 's/^records=\([0-9]*\).*/\1/p' "$G/gen.log")
  if [[ $BTT == 1 && ! -s "$B/merged.bin" ]]; then
    log "gen_blktrace $N (slow: pure Python)"
    (cd "$B" && python3 "$GEN_BLK" -n "$N" -o dev --seed 42 2> gen.log \
      && blkparse -i dev -q -O -d merged.bin > /dev/null && rm -f dev.blktrace.*)
  fi
  reps=$REPS; [[ $N -ge 100000000 ]] && reps=1
  for rep in $(seq 1 "$reps"); do
    if [[ $BTT == 1 ]]; then
      BREC=$(( $(stat -c %s "$B/merged.bin") / 48 ))
      (cd "$B/bttout" && measure "$N" btt "$rep" "$BREC" -- btt -i "$B/merged.bin" -o "$B/bttout/x")
    fi
    measure "$N" grtreport "$rep" "$GREC" -- "$GRTREPORT" "$G/run" --top 10
    cp "$WORK/out_grtreport.txt" "$OUT/report_$N.txt"
    [[ $READ != 1 ]] || measure "$N" grtreport-read "$rep" "$GREC" -- "$GRTREPORT" --read "$G/run" --top 10
    if [[ $CRITICAL == 1 ]]; then
      measure "$N" grtreport-critical "$rep" "$GREC" -- "$GRTREPORT" "$G/run" --top 10 --critical-path
      sed -n '/== Critical Path ==/,/^==.*==$/p' "$WORK/out_grtreport-critical.txt" > "$OUT/critical_$N.txt"
      if [[ -n $BEFORE ]]; then
        measure "$N" grtreport-critical-before "$rep" "$GREC" -- "$BEFORE" "$G/run" --top 10 --critical-path
        sed -n '/== Critical Path ==/,/^==.*==$/p' "$WORK/out_grtreport-critical-before.txt" > "$OUT/critical_before_$N.txt"
        if grep -q "^warning: .* cut" "$OUT/critical_$N.txt"; then
          log "N=$N: the window cut a path (see critical_$N.txt)"
        elif grep -q "^not computed: more than" "$OUT/critical_before_$N.txt"; then
          log "N=$N: BEFORE kept too many jobs and computed no path"
        elif ! cmp -s "$OUT/critical_$N.txt" "$OUT/critical_before_$N.txt"; then
          log "N=$N: critical path differs from BEFORE's without a cut"; exit 1
        fi
      fi
    fi
  done
done

python3 - "$RAW" > "$OUT/summary.txt" <<'PY'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
g = collections.defaultdict(list)
for n, tool, rep, w, u, s, rss, rec in rows:
    g[(int(n), tool)].append((float(w), float(u) + float(s), int(rss), int(rec)))
print("%-10s %-26s %5s %9s %9s %12s %12s %10s %9s %9s" % ("events", "tool", "reps", "wall_med", "cpu_med",
      "ev/s_wall", "ev/s_cpu", "maxrss_MB", "x_wall", "x_cpu"))
for n in sorted({k[0] for k in g}):
    base = None
    for tool in ("btt", "grtreport", "grtreport-read", "grtreport-critical", "grtreport-critical-before"):
        v = g.get((n, tool))
        if not v:
            continue
        w = statistics.median(x[0] for x in v); c = statistics.median(x[1] for x in v)
        rss = max(x[2] for x in v) / 1024; rec = v[0][3]
        rw, rc = rec / w, rec / max(c, 1e-9)
        if tool == "btt":
            base = (rw, rc)
        xw = "%.1f" % (rw / base[0]) if base else "-"
        xc = "%.1f" % (rc / base[1]) if base else "-"
        print("%-10d %-26s %5d %9.3f %9.3f %12.0f %12.0f %10.1f %9s %9s" % (n, tool, len(v), w, c, rw, rc, rss, xw, xc))
PY
cat "$OUT/summary.txt"
