#!/usr/bin/env bash
# grtparse vs blkparse, same run, same number of records (N per size), warm page cache.
#
#   bash bench/parse/run.sh                         # N = 1M and 10M, 3 reps, callgrind at 1M
#   SIZES=1000000 REPS=1 CALLGRIND=0 bash bench/parse/run.sh   # quick
#   # another host, no cargo, no packages: carried release binaries and the generator
#   GRTPARSE=bin/grtparse GRTGEN=bin/grtgen BLKPARSE=bin/blkparse BLKGEN=bin/gen_blktrace.py \
#     WORK=/tmp/pb OUT=/tmp/pb/results bash bench/parse/run.sh
#
# Measured, alternating the tools within each repetition:
#   text:   blkparse -i dev -o /dev/null          vs  grtparse run -o /dev/null
#           (and grtparse -j 1 run -o /dev/null: the one-thread path; BEFORE=older grtparse
#           adds that binary's text run, tool "grtparse-before")
#   binary: blkparse -i dev -q -O -d merged.blk   vs  grtparse run -q -O -d merged.grt
# Inputs: 2 per-CPU files each. blktrace side: ../shared/bench/gen_blktrace.py (48-byte
# records, Q G I [Q M] D C requests); grtrace side: grtgen (72-byte records, QUEUE ALLOC
# COMMIT SUBMIT START / END IRQ SIGNAL jobs), both N records including notes.
# Reports median wall time, CPU time, peak RSS, events/s, each grtparse run's speed ratio to
# blkparse on wall time and on CPU time (user+sys, less sensitive to other load), and
# callgrind instructions per event (all threads together). The text of the default run and
# of -j 1 (and BEFORE's) are compared once per size: they must be byte-identical.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${WORK:-/tmp/grtparse-bench}
OUT=${OUT:-$HERE/results}
SIZES=${SIZES:-"1000000 10000000"}
REPS=${REPS:-3}
CALLGRIND=${CALLGRIND:-1}
CG_SIZE=${CG_SIZE:-1000000}
BLKGEN=${BLKGEN:-$ROOT/../shared/bench/gen_blktrace.py}
[[ -f $BLKGEN ]] || BLKGEN=$ROOT/../../shared/bench/gen_blktrace.py
BLKPARSE=${BLKPARSE:-blkparse}
BEFORE=${BEFORE:-}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$WORK" "$OUT"
log() { echo "[$(date -u +%T)] $*" >&2; }

command -v "$BLKPARSE" >/dev/null || { echo "needs blkparse (apt-get install blktrace, or BLKPARSE=path)"; exit 1; }
BLKPARSE=$(realpath "$(command -v "$BLKPARSE")"); BLKGEN=$(realpath "$BLKGEN")
if [[ -z ${GRTPARSE:-} ]]; then
  (cd "$ROOT" && cargo build -q --release -p grtparse && cargo build -q --release -p grtrace-format --example grtgen)
  GRTPARSE=$CARGO_TARGET_DIR/release/grtparse
  GRTGEN=$CARGO_TARGET_DIR/release/examples/grtgen
fi
GRTPARSE=$(realpath "$GRTPARSE"); GRTGEN=$(realpath "${GRTGEN:?GRTGEN=path to grtgen with GRTPARSE}")
[[ -z $BEFORE ]] || BEFORE=$(realpath "$BEFORE")
blkparse() { "$BLKPARSE" "$@"; }
{ nproc; grep -m1 "model name" /proc/cpuinfo; "$GRTPARSE" --version; } > "$OUT/machine.txt"

RAW=$OUT/raw.tsv
echo -e "n\ttool\tmode\trep\twall_s\tuser_s\tsys_s\tmaxrss_kb" > "$RAW"
t() { # label... -- command; appends a row
  local n=$1 tool=$2 mode=$3 rep=$4; shift 4
  local tf; tf=$(mktemp)
  /usr/bin/time -f "%e %U %S %M" -o "$tf" "$@" > /dev/null
  read -r w u s m < "$tf"; rm -f "$tf"
  echo -e "$n\t$tool\t$mode\t$rep\t$w\t$u\t$s\t$m" >> "$RAW"
  log "n=$n $tool $mode rep=$rep wall=$w user=$u sys=$s rss=${m}KB"
}

for N in $SIZES; do
  D=$WORK/n$N; mkdir -p "$D"; cd "$D"
  if [[ ! -s dev.blktrace.1 ]]; then
    log "generating blktrace N=$N"; python3 "$BLKGEN" -n "$N" -o dev --seed 42 2> blkgen.log
  fi
  if [[ ! -s run.grtrace.1 ]]; then
    log "generating grtrace N=$N"; "$GRTGEN" -n "$N" --cpus 2 --seed 42 -o run > grtgen.log
  fi
  blk_n=$(sed -n 's/.*records=\([0-9]*\).*/\1/p' blkgen.log)
  grt_n=$(sed -n 's/records=\([0-9]*\).*/\1/p' grtgen.log)
  # Validation: both parsers see every record, no gaps.
  "$GRTPARSE" run -O > check.txt
  grep -q "^Sequence gaps: 0 gaps" check.txt || { echo "grtparse found gaps"; exit 1; }
  blkparse -i dev -o check.blk > /dev/null
  grep -q "^Skips: 0 forward" check.blk || { echo "blkparse found skips"; exit 1; }
  # The text on worker threads is the one-thread text (and BEFORE's), byte for byte.
  "$GRTPARSE" run -o par.txt; "$GRTPARSE" -j 1 run -o one.txt
  cmp par.txt one.txt || { echo "grtparse: threads and -j 1 differ"; exit 1; }
  if [[ -n $BEFORE ]]; then
    "$BEFORE" run -o one.txt; cmp par.txt one.txt || { echo "grtparse and BEFORE differ"; exit 1; }
  fi
  rm -f check.txt check.blk par.txt one.txt
  echo -e "$N\t$blk_n\t$grt_n" >> "$OUT/sizes.tsv.tmp"
  for rep in $(seq 1 "$REPS"); do
    t "$N" blkparse text "$rep" "$BLKPARSE" -i dev -o /dev/null
    t "$N" grtparse text "$rep" "$GRTPARSE" run -o /dev/null
    t "$N" grtparse-j1 text "$rep" "$GRTPARSE" -j 1 run -o /dev/null
    [[ -z $BEFORE ]] || t "$N" grtparse-before text "$rep" "$BEFORE" run -o /dev/null
    # Each dump starts from a clean page cache: without the sync, one tool's write-back and
    # the freeing of the previous output (ext4 here is mounted with `discard`) land in the
    # other tool's timing.
    rm -f merged.blk merged.grt; sync
    t "$N" blkparse binary "$rep" "$BLKPARSE" -i dev -q -O -d merged.blk
    sync
    t "$N" grtparse binary "$rep" "$GRTPARSE" run -q -O -d merged.grt
  done
  # The dumps hold every record.
  [[ $(stat -c %s merged.grt) -eq $(( $(stat -c %s run.grtrace.0) + $(stat -c %s run.grtrace.1) - 128 )) ]] \
    || { echo "grtparse dump size mismatch"; exit 1; }
  uptime >> "$OUT/load.txt"
done
sort -u "$OUT/sizes.tsv.tmp" > "$OUT/sizes.tsv"; rm -f "$OUT/sizes.tsv.tmp"

CG=$OUT/callgrind.tsv
if [[ "$CALLGRIND" == 1 ]]; then
  cd "$WORK/n$CG_SIZE"
  echo -e "n\ttool\tmode\tIr" > "$CG"
  cg() { local tool=$1 mode=$2; shift 2
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" > /dev/null 2> cg.log
    local ir; ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' cg.log)
    echo -e "$CG_SIZE\t$tool\t$mode\t$ir" >> "$CG"; log "callgrind $tool $mode Ir=$ir"; }
  cg blkparse text "$BLKPARSE" -i dev -o /dev/null
  cg grtparse text "$GRTPARSE" run -o /dev/null
  cg grtparse-j1 text "$GRTPARSE" -j 1 run -o /dev/null
  [[ -z $BEFORE ]] || cg grtparse-before text "$BEFORE" run -o /dev/null
  cg blkparse binary "$BLKPARSE" -i dev -q -O -d cg.blk
  cg grtparse binary "$GRTPARSE" run -q -O -d cg.grt
  rm -f cg.blk cg.grt
fi

python3 - "$RAW" "$OUT/sizes.tsv" "${CG:-}" "$CALLGRIND" > "$OUT/summary.txt" <<'PY'
import sys, statistics, collections
raw, sizes, cg, cgon = sys.argv[1:5]
rows = [l.rstrip('\n').split('\t') for l in open(raw)][1:]
nrec = {}
for l in open(sizes):
    n, b, g = l.split()
    nrec[(n, 'blkparse')] = int(b)
    for t in ('grtparse', 'grtparse-j1', 'grtparse-before'):
        nrec[(n, t)] = int(g)
ir = {}
if cgon == '1':
    for l in list(open(cg))[1:]:
        n, tool, mode, i = l.split(); ir[(tool, mode)] = (int(i), int(n))
g = collections.defaultdict(list)
for n, tool, mode, rep, w, u, s, m in rows:
    g[(n, tool, mode)].append((float(w), float(u) + float(s), int(m)))
print('%-9s %-6s %-16s %8s %8s %9s %12s %12s %9s' % ('N', 'mode', 'tool', 'wall_s', 'cpu_s', 'rss_MB', 'events/s', 'ev/s(cpu)', 'Ir/event'))
for (n, tool, mode), v in sorted(g.items(), key=lambda kv: (int(kv[0][0]), kv[0][2], kv[0][1])):
    w = statistics.median(x[0] for x in v); c = statistics.median(x[1] for x in v)
    rss = max(x[2] for x in v) / 1024
    e = nrec[(n, tool)]
    i = ir.get((tool, mode))
    ipe = '%.0f' % (i[0] / nrec[(str(i[1]), tool)]) if i else '-'
    print('%-9s %-6s %-16s %8.3f %8.3f %9.1f %12.0f %12.0f %9s' % (n, mode, tool, w, c, rss, e / max(w, 1e-3), e / max(c, 1e-3), ipe))
print()
for n in sorted({k[0] for k in g}, key=int):
    for mode in ('text', 'binary'):
        for tool in ('grtparse', 'grtparse-j1', 'grtparse-before'):
            b = g[(n, 'blkparse', mode)]; r = g.get((n, tool, mode))
            if not r:
                continue
            eb = nrec[(n, 'blkparse')]; er = nrec[(n, tool)]
            wr = (er / max(statistics.median(x[0] for x in r), 1e-3)) / (eb / statistics.median(x[0] for x in b))
            cr = (er / max(statistics.median(x[1] for x in r), 1e-3)) / (eb / max(statistics.median(x[1] for x in b), 1e-3))
            print('N=%s %-6s %s/blkparse events/s: %.1fx (wall), %.1fx (cpu time)' % (n, mode, tool, wr, cr))
if ir:
    for mode in ('text', 'binary'):
        b = ir.get(('blkparse', mode)); r = ir.get(('grtparse', mode))
        if b and r:
            print('N=%d %-6s instructions/event: blkparse %.0f, grtparse %.0f (%.1fx fewer)' % (
                b[1], mode, b[0] / nrec[(str(b[1]), 'blkparse')], r[0] / nrec[(str(r[1]), 'grtparse')],
                (b[0] / nrec[(str(b[1]), 'blkparse')]) / (r[0] / nrec[(str(r[1]), 'grtparse')])))
PY
cat "$OUT/summary.txt"
