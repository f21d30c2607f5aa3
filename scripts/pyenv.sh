#!/usr/bin/env bash
# The Python environment the tests use as an independent checker (Perfetto's own compiled
# trace schema, ...): a venv at $GRT_PYENV (default /var/tmp/grtrace-pyenv) with exactly
# scripts/py-requirements.txt, rebuilt when that file changes. Prints the venv's python.
# Tests find it through $GRT_PYTHON, else at the default path, and fail saying to run this.
#
#   scripts/pyenv.sh [ENV_DIR REQUIREMENTS]   # another venv the same way (fleet-spark.sh's)
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir=${1:-${GRT_PYENV:-/var/tmp/grtrace-pyenv}}
req=${2:-scripts/py-requirements.txt}
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ "$(cat "$env_dir/.grt-stamp" 2>/dev/null)" != "$want" ]; then
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    rm -rf "$env_dir"
    python3 -m venv "$env_dir" >&2
    "$env_dir/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
    echo "$want" > "$env_dir/.grt-stamp"
fi
echo "$env_dir/bin/python3"
