#!/usr/bin/env bash
# Recorder drain benchmark against grtsim (no kernel, no root needed).
#
# For each configuration, grtsim produces EVENTS events per simulated CPU (full speed, or
# paced at RATE events/s per CPU) and grtrace drains them to a sink; grtrace -v reports the
# drain rate per CPU (events and bytes over the time records were flowing) and its own CPU
# time. One line per configuration goes to stdout and to $OUT/results.tsv.
#
#   bench/record/run.sh                      # defaults below
#   EVENTS=5000000 CPUS="1" SINKS=pipe bench/record/run.sh
#
# Knobs: EVENTS per CPU (20000000), CPUS ("1 2"), RATES per CPU ("max 10000000"),
#        SINKS ("pipe tmpfs": -o - > /dev/null, or files in /dev/shm), B (4M), N (16),
#        REPS (3), WORK (/dev/shm/grtrace-bench), TARGET (cargo target dir).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
EVENTS=${EVENTS:-20000000}
CPUS=${CPUS:-"1 2"}
RATES=${RATES:-"max 10000000"}
SINKS=${SINKS:-"pipe tmpfs"}
B=${B:-4M}
N=${N:-16}
REPS=${REPS:-3}
WORK=${WORK:-/dev/shm/grtrace-bench}
TARGET=${TARGET:-${CARGO_TARGET_DIR:-$repo/target}}
OUT=${OUT:-$here/results}

(cd "$repo" && CARGO_TARGET_DIR=$TARGET cargo build --release -q -p grtrace-record -p grtrace-sim)
GRTRACE=$TARGET/release/grtrace
GRTSIM=$TARGET/release/grtsim
mkdir -p "$OUT"
rm -rf "$WORK"; mkdir -p "$WORK"
echo "# $(date -u +%FT%TZ) $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg), B=$B N=$N" | tee -a "$OUT/results.tsv"
printf 'cpus\trate/cpu\tsink\trep\tevents\tdropped\tdrain_Mev/s/cpu\tdrain_GB/s/cpu\tcpu_ms/Mev\tsys_ms/Mev\tproducer_Mev/s/cpu\n' | tee -a "$OUT/results.tsv"

for cpus in $CPUS; do
  for rate in $RATES; do
    for sink in $SINKS; do
      for rep in $(seq "$REPS"); do
        total=$((EVENTS * cpus))
        if [ "$rate" = max ]; then simrate=max; else simrate=$((rate * cpus)); fi
        "$GRTSIM" --root "$WORK/sim" --cpus "$cpus" --rate "$simrate" --events "$total" -v \
          2>"$WORK/sim.log" & sim=$!
        for _ in $(seq 100); do [ -e "$WORK/sim/grtrace/card0/info" ] && break; sleep 0.05; done
        rm -rf "$WORK/out"; mkdir -p "$WORK/out"
        # Safety cap only: the run normally ends when production stops (below).
        cap=$((EVENTS / 1000000 + 20))
        if [ "$sink" = pipe ]; then
          "$GRTRACE" -r "$WORK/sim" -d card0 -b "$B" -n "$N" -w "$cap" -v -o - \
            >/dev/null 2>"$WORK/rec.log" & rec=$!
        else
          "$GRTRACE" -r "$WORK/sim" -d card0 -b "$B" -n "$N" -w "$cap" -v -o "$WORK/out/run" \
            >"$WORK/rec.out" 2>"$WORK/rec.log" & rec=$!
        fi
        # Production is over when for 0.6 s no CPU has switched sub-buffers and none has
        # refused a record (the `state` and `dropped` files, as the kernel shows them).
        prev=""; stable=0
        while kill -0 "$rec" 2>/dev/null; do
          sleep 0.2
          cur=$(cat "$WORK/sim/grtrace/card0/state" "$WORK/sim/grtrace/card0/dropped" 2>/dev/null |
                awk 'NF == 4 { s += $2 } NF == 1 { s += $1 } END { print s + 0 }')
          if [ "$cur" = "$prev" ] && [ "$cur" != 0 ]; then stable=$((stable + 1)); else stable=0; fi
          prev=$cur
          [ "$stable" -ge 3 ] && break
        done
        kill -INT "$rec" 2>/dev/null || true; wait "$rec" || true
        kill "$sim"; wait "$sim" || true
        awk -v cpus="$cpus" -v rate="$rate" -v sink="$sink" -v rep="$rep" '
          FILENAME ~ /sim.log/ && /produced/ { for (i=1;i<=NF;i++) if ($i ~ /^\(/) { p += substr($i,2); np++ } }
          FILENAME ~ /rec.log/ && / drained / { ev += $5; for (i=1;i<=NF;i++) { if ($(i+1) ~ /^M$/) m += $i; if ($(i+1) ~ /^GB/) g += $i }; n++ }
          FILENAME ~ /rec.log/ && /^recorder:/ { cpu = $(NF-5); sys = substr($5, 2) }
          FILENAME ~ /rec.log/ && /dropped events/ { d = $3 }
          END { printf "%s\t%s\t%s\t%s\t%d\t%d\t%.2f\t%.3f\t%.1f\t%.1f\t%.2f\n", cpus, rate, sink, rep, ev, d+0, m/n, g/n, cpu, (ev > 0 ? sys * 1e9 / ev : 0), p/np }
        ' "$WORK/sim.log" "$WORK/rec.log" | tee -a "$OUT/results.tsv"
      done
    done
  done
done
rm -rf "$WORK"
