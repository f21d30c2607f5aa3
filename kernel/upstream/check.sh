#!/bin/bash
# The upstream series as a maintainer would take it: scripts/checkpatch.pl --strict of every
# patch (the 7.3 tree's own), then each patch's objects built after it alone with W=1
# (build.sh --check-each). Run after kernel/upstream/build.sh, whose unpacked source it uses.
# usage: kernel/upstream/check.sh        env: GRT_WORK as build.sh
# Prints "== <patch>: ..." per check and a VERDICT line; exit 1 on any failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../series.sh"
WORK=${GRT_WORK:-/var/tmp/grtrace-kernel/ci}
fails=0
TREE=$(ls -d "$WORK"/up-pristine-*/linux-source-7.3 2>/dev/null | head -1)
if [ -z "$TREE" ] || [ ! -x "$TREE/scripts/checkpatch.pl" ]; then
    echo "== no unpacked linux-source-7.3 under $WORK (run kernel/upstream/build.sh first)"; fails=1
else
    for p in $(series_patches "$HERE"); do
        if (cd "$TREE" && ./scripts/checkpatch.pl --strict --no-tree -q "$p") > "$WORK/checkpatch.out" 2>&1; then
            echo "== $(basename "$p"): checkpatch --strict clean"
        else
            echo "== $(basename "$p"): checkpatch --strict ISSUES"; cat "$WORK/checkpatch.out"; fails=$((fails + 1))
        fi
    done
fi
bash "$HERE/build.sh" --check-each || fails=$((fails + 1))
if [ $fails = 0 ]; then echo "VERDICT upstream series: PASS"; else echo "VERDICT upstream series: FAIL ($fails)"; fi
[ $fails = 0 ]
