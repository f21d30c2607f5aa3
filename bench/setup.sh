# Sourced first by the benchmarks that time grtreport on grtgen's synthetic workload
# (bench/report/run.sh, bench/report/export.sh, bench/fleet/run.sh, bench/perfetto/run.sh).
# Sets HERE (the benchmark's folder) and ROOT (the repository), and defines bench_setup.
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# bench_setup NAME=DEFAULT...: each setting takes its default unless the environment sets
# it (OUT defaults to results/ beside the benchmark); makes WORK and OUT; sets GRTREPORT and
# GRTGEN to absolute paths, building both (release) unless GRTREPORT is given, as carried
# binaries are on a machine without cargo.
bench_setup() {
  local kv name
  for kv in "OUT=$HERE/results" "$@"; do
    name=${kv%%=*}
    [[ -n ${!name:-} ]] || declare -g "$kv"
  done
  mkdir -p "$WORK" "$OUT"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
  if [[ -z ${GRTREPORT:-} ]]; then
    (cd "$ROOT" && cargo build --release -q -p grtreport && cargo build --release -q -p grtrace-format --example grtgen)
    GRTREPORT="$CARGO_TARGET_DIR/release/grtreport"
    GRTGEN="$CARGO_TARGET_DIR/release/examples/grtgen"
  fi
  GRTREPORT=$(realpath "$GRTREPORT")
  GRTGEN=$(realpath "${GRTGEN:?GRTGEN=path to grtgen with GRTREPORT}")
}
