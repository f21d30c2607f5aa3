#!/usr/bin/env bash
# The fleet queries on Apache Spark (local mode) give DuckDB's answers: a small demo fleet
# (scripts/fleet.sh with GRT_FLEET_HOSTS=4 GRT_FLEET_CAPTURES=3 by default), then every
# sql/*.sql on DuckDB and on Spark over the same dataset, compared by scripts/fleet_compare.py.
#
#   scripts/fleet-spark.sh [DIR]      # GRT_SPARK=0: skipped (exit 0)
#
# Installs what it needs: a Java 17 runtime (apt, openjdk-17-jre-headless) when `java` is
# missing, and a venv with scripts/spark-requirements.txt at $GRT_SPARKENV (default
# /var/tmp/grtrace-sparkenv), rebuilt when that file changes (scripts/pyenv.sh makes it).
# Prints the time of each part.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${GRT_SPARK:-1}" = 0 ]; then
    echo "fleet-spark: skipped (GRT_SPARK=0)"
    exit 0
fi
out=${1:-/tmp/grtrace-fleet-spark}
t0=$(date +%s)
lap() { echo "fleet-spark: $1: $(($(date +%s) - t0)) s"; t0=$(date +%s); }

if ! command -v java >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
py=$(scripts/pyenv.sh "${GRT_SPARKENV:-/var/tmp/grtrace-sparkenv}" scripts/spark-requirements.txt)
lap "java and the venv"

GRT_PYTHON=$py GRT_FLEET_HOSTS=${GRT_FLEET_HOSTS:-4} GRT_FLEET_CAPTURES=${GRT_FLEET_CAPTURES:-3} \
    scripts/fleet.sh "$out" > "$out.duckdb.txt"
lap "demo fleet and DuckDB"
"$py" scripts/fleet_sql.py spark "$out/dataset" --json "$out/spark.json" > "$out.spark.txt"
lap "Spark (local mode)"
"$py" scripts/fleet_compare.py "$out/duckdb.json" "$out/spark.json"
