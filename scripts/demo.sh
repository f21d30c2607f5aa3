#!/usr/bin/env bash
# The main job: build the tools, start a simulated GPU (no kernel or root needed), record it
# for a few seconds with grtrace, then show grtparse's lines and summary and grtreport's
# blocking report. Usage: scripts/demo.sh [SECONDS] [SCENARIO]
#   SCENARIO: a grtsim scenario with injected bottlenecks (grtsim --list-scenarios),
#             default report-mixed; `live` runs the open-ended workload model instead.
# On a machine with the grtrace kernel series, record real hardware instead:
#   sudo grtrace -d card0 -w 5 -o run && grtparse run | less && grtreport run --top 10
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
scenario=${2:-report-mixed}

. scripts/rust.sh
need_rust
# cargo's own lines (Compiling ...) are the progress: the first build takes a few minutes.
echo "### building the tools (cargo build --release; the first build takes a few minutes)"
cargo build --release --bins
bin=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release

work=$(mktemp -d /tmp/grtrace-demo.XXXXXX)
trap 'kill "$sim" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
if [ "$scenario" != live ]; then
    # A scenario plays about 2,900 jobs a second: enough jobs to last the whole recording
    # (its default 1,000 end after 0.34 s, and the 2.7 s of idle tail made every ring
    # "host-bound, nothing queued 97%", a verdict about the demo, not the scenario).
    jobs=$((secs * 3000))
    echo "### scenario $scenario (grtsim --list-scenarios lists them): $jobs jobs with injected bottlenecks;"
    echo "### its ground truth, the tags each job was given, goes to $work/truth.csv (ctx,ring,seqno,tags)"
    "$bin/grtsim" --root "$work/debugfs" --scenario "$scenario" --jobs "$jobs" --truth "$work/truth.csv" &
else
    "$bin/grtsim" --root "$work/debugfs" --rate 200000 &
fi
sim=$!
for _ in $(seq 50); do [ -e "$work/debugfs/grtrace/card0/info" ] && break; sleep 0.1; done

echo "### grtrace -r $work/debugfs -d card0 -w $secs -D $work -o run"
"$bin/grtrace" -r "$work/debugfs" -d card0 -w "$secs" -D "$work" -o run
echo
echo "### grtparse $work/run | head -20"
"$bin/grtparse" "$work/run" | head -20
echo "..."
echo "### grtparse -O $work/run: no event lines, the summary only"
"$bin/grtparse" -O "$work/run"
echo
echo "### grtreport $work/run --top 5"
"$bin/grtreport" "$work/run" --top 5
echo
if [ "$scenario" != live ]; then
    echo "Scenario $scenario: compare the report's tags with the truth in $work/truth.csv"
    echo "(grtreport $work/run --csv $work/jobs.csv -q writes the report's per job)."
fi
echo "Files kept in $work. The binaries are in $bin; to put them on PATH with their man"
echo "pages and shell completions: scripts/install.sh (PREFIX=\$HOME/.local for no root)."
