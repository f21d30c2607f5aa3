#!/bin/bash
# Regenerate kernel/patches/ from a git tree of linux-source-6.12 whose first commit is the
# unmodified source and whose following commits are the series (maintainer tool).
# usage: kernel/tools/export-series.sh GIT_TREE
# Checks that the tree carries kernel/include/uapi/drm/grtrace.h (patch 1) and vsched_drm.h
# (patch 8) unchanged and runs scripts/checkpatch.pl --strict on every patch.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
TREE=${1:?usage: export-series.sh GIT_TREE}
base=$(git -C "$TREE" rev-list --max-parents=0 HEAD)
for h in grtrace.h vsched_drm.h; do
    cmp "$HERE/include/uapi/drm/$h" "$TREE/include/uapi/drm/$h" ||
        { echo "uapi header $h differs between the repo and $TREE" >&2; exit 1; }
done
rm -f "$HERE"/patches/*.patch
git -C "$TREE" format-patch -q --cover-letter --zero-commit \
    --subject-prefix="RFC PATCH" -o "$HERE/patches" "$base"..HEAD
cover=$(ls "$HERE"/patches/0000-*.patch)
python3 - "$cover" "$HERE/patches/cover-body.txt" <<'PY'
import sys
p, body = sys.argv[1], open(sys.argv[2]).read()
s = open(p).read()
s = s.replace("*** SUBJECT HERE ***", body.splitlines()[0])
s = s.replace("*** BLURB HERE ***", "\n".join(body.splitlines()[2:]))
open(p, "w").write(s)
PY
for p in "$HERE"/patches/0*.patch; do
    case $p in */0000-*) continue ;; esac
    printf '%s: ' "$(basename "$p")"
    (cd "$TREE" && ./scripts/checkpatch.pl --strict --no-tree -q "$p" >/tmp/checkpatch.out 2>&1) &&
        echo "checkpatch --strict: clean" || { echo "checkpatch --strict: ISSUES"; cat /tmp/checkpatch.out; }
done
