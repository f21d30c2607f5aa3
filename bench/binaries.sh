# Sourced by the benchmarks that time grtreport on grtgen's synthetic workload
# (bench/report/run.sh, bench/report/export.sh, bench/fleet/run.sh, bench/perfetto/run.sh):
# sets GRTREPORT and GRTGEN to absolute paths, building both (release) unless GRTREPORT is
# given, as carried binaries are on a machine without cargo. Needs ROOT.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
if [[ -z ${GRTREPORT:-} ]]; then
  (cd "$ROOT" && cargo build --release -q -p grtreport && cargo build --release -q -p grtrace-format --example grtgen)
  GRTREPORT="$CARGO_TARGET_DIR/release/grtreport"
  GRTGEN="$CARGO_TARGET_DIR/release/examples/grtgen"
fi
GRTREPORT=$(realpath "$GRTREPORT")
GRTGEN=$(realpath "${GRTGEN:?GRTGEN=path to grtgen with GRTREPORT}")
