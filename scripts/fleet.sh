#!/usr/bin/env bash
# A demo fleet, end to end: grtsim plays a scenario on each of HOSTS simulated hosts,
# CAPTURES times per host (a scenario and seed of its own each time), grtrace records it,
# grtreport adds each capture to one Parquet dataset (--parquet, --host, --tag kernel=...
# --tag scenario=...), and DuckDB runs the queries in sql/ over the whole dataset.
#
#   scripts/fleet.sh [DIR]          # DIR (default /tmp/grtrace-fleet): captures/, dataset/
#
# Environment: GRT_FLEET_HOSTS (20), GRT_FLEET_CAPTURES (captures per host, 10),
# GRT_FLEET_JOBS (jobs per capture, 200), GRT_FLEET_PAR (recordings at once, 4),
# GRT_PYTHON (a python with duckdb; default: the venv of scripts/pyenv.sh).
#
# Half the hosts run "kernel 6.12", half "6.13". The 6.13 hosts play the queue-wait
# scenario where 6.12 hosts play the clean and the mixed one (4 captures of 10): a
# regression the queries must find (the per-kernel p99 of queue waits), injected by the
# demo, not measured on a kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/grtrace-fleet}
hosts=${GRT_FLEET_HOSTS:-20}
per=${GRT_FLEET_CAPTURES:-10}
jobs=${GRT_FLEET_JOBS:-200}
par=${GRT_FLEET_PAR:-4}
secs=$(python3 -c "print(round($jobs / 2500 + 0.02, 3))")

. scripts/rust.sh
need_rust
echo "### building grtsim, grtrace, grtreport (release)" >&2
cargo build --release -q -p grtrace-sim -p grtrace-record -p grtreport --bins
bin=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release
py=${GRT_PYTHON:-$(bash scripts/pyenv.sh)}

# Only what this script writes there goes: OUT may be a directory of the user's.
rm -rf "$out/captures" "$out/dataset" "$out/duckdb.json"
mkdir -p "$out/captures" "$out/dataset"
work=$(mktemp -d /tmp/grtrace-fleet-sim.XXXXXX)
# On any exit, no simulator is left running (each is ended by its pid).
stop_sims() {
    local p
    for p in $(cat "$work/sims" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap stop_sims EXIT

# Scenario of capture C (0-based) on a host of kernel K: each host plays the same round.
scenario() {
    local k=$1 c=$2
    local round=(report-mixed dep-wait report-clean exec-tail frames report-mixed dep-chain report-clean vm-fault host-submit)
    local s=${round[$((c % ${#round[@]}))]}
    case "$k/$s" in 6.13/report-clean | 6.13/report-mixed) s=queue-wait ;; esac
    echo "$s"
}

# One capture: a simulated device of its own, recorded until the scenario is over, then
# reported into the dataset.
capture() {
    local h=$1 c=$2
    local host kernel scen seed root dir sim
    host=$(printf 'host-%02d' "$h")
    if [ "$h" -le $((hosts / 2)) ]; then kernel=6.12; else kernel=6.13; fi
    scen=$(scenario "$kernel" "$c")
    seed=$((h * 1000 + c))
    root="$work/$host-$c"
    dir="$out/captures/$host/$c"
    mkdir -p "$root" "$dir"
    "$bin/grtsim" --root "$root" --scenario "$scen" --seed "$seed" --jobs "$jobs" 2>/dev/null &
    sim=$!
    echo "$sim" >> "$work/sims"
    for _ in $(seq 100); do [ -e "$root/grtrace/card0/info" ] && break; sleep 0.05; done
    # A scenario plays about 2,900 jobs a second from the start of the recording: record
    # little more than that (a long idle tail would make every ring host-bound).
    local rc=0
    "$bin/grtrace" -r "$root" -d card0 -w "$secs" -D "$dir" -o run >"$dir/grtrace.log" 2>&1 || rc=$?
    # The simulator goes whatever happened to the recording.
    kill "$sim" 2>/dev/null || true
    wait "$sim" 2>/dev/null || true
    if [ "$rc" -ne 0 ]; then
        echo "fleet.sh: $host capture $c: grtrace failed: $(tail -1 "$dir/grtrace.log")" >&2
        return 1
    fi
    "$bin/grtreport" "$dir/run" -q --parquet "$out/dataset" --host "$host" \
        --tag kernel="$kernel" --tag scenario="$scen"
}

echo "### $hosts hosts x $per captures of $jobs jobs: grtsim -> grtrace -> grtreport --parquet $out/dataset" >&2
t0=$(date +%s.%N)
failed=0 pids=()
# wait_all: waits for the captures in flight, counting those that failed (each said why)
wait_all() {
    local p
    for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
    pids=()
}
for h in $(seq "$hosts"); do
    for c in $(seq 0 $((per - 1))); do
        capture "$h" "$c" &
        pids+=($!)
        if [ ${#pids[@]} -ge "$par" ]; then wait_all; fi
    done
done
wait_all
t1=$(date +%s.%N)
if [ "$failed" -ne 0 ]; then
    echo "fleet.sh: $failed of $((hosts * per)) captures failed" >&2
    exit 1
fi
caps=$(find "$out/dataset/captures" -name '*.parquet' | wc -l)
echo "### $caps captures in $(python3 -c "print(round($t1 - $t0, 1))") s; dataset: $(du -sh "$out/dataset" | cut -f1)" >&2
if [ "$caps" -ne $((hosts * per)) ]; then
    echo "fleet.sh: $caps captures in the dataset, expected $((hosts * per))" >&2
    exit 1
fi

echo "### DuckDB: sql/*.sql over $out/dataset" >&2
"$py" scripts/fleet_sql.py duckdb "$out/dataset" --json "$out/duckdb.json"
