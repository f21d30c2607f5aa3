#!/bin/bash
# Regenerate kernel/upstream/*.patch from a git tree of linux-source-7.3 whose first commit
# is the unmodified source and whose following commits are the upstream series (maintainer
# tool), with kernel/upstream/cover-body.txt as the cover letter, and run
# scripts/checkpatch.pl --strict on every patch.
# usage: kernel/tools/export-upstream.sh GIT_TREE
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../upstream" && pwd)
TREE=${1:?usage: export-upstream.sh GIT_TREE}
base=$(git -C "$TREE" rev-list --max-parents=0 HEAD)
rm -f "$HERE"/*.patch
git -C "$TREE" format-patch -q --cover-letter --zero-commit --subject-prefix="PATCH" \
    -o "$HERE" "$base"..HEAD
python3 - "$(ls "$HERE"/0000-*.patch)" "$HERE/cover-body.txt" <<'PY'
import sys
p, body = sys.argv[1], open(sys.argv[2]).read()
s = open(p).read()
s = s.replace("*** SUBJECT HERE ***", body.splitlines()[0])
s = s.replace("*** BLURB HERE ***", "\n".join(body.splitlines()[2:]))
open(p, "w").write(s)
PY
for p in "$HERE"/0*.patch; do
    case $p in */0000-*) continue ;; esac
    printf '%s: ' "$(basename "$p")"
    (cd "$TREE" && ./scripts/checkpatch.pl --strict --no-tree -q "$p" > /tmp/checkpatch.out 2>&1) &&
        echo "checkpatch --strict: clean" || { echo "checkpatch --strict: ISSUES"; cat /tmp/checkpatch.out; }
done
