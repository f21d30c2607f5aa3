#!/usr/bin/env bash
# The project's whole test run, as CI runs it (`.ci/run` calls exactly this):
#   1. Rust: format, lints, unit/integration/end-to-end tests on the simulator (minutes);
#   2. browser: grtreport --html on a simulator scenario, checked in headless chromium through
#      playwright-core (scripts/browser/run.sh; about a minute, installs what it needs);
#   3. kernel: apply the patch series to Debian's linux-source-6.12, build (skipped when a
#      cached kernel matches the series), boot under QEMU, record real virtio-gpu traffic with
#      the real grtrace binary and check it; compile-test the drm_sched/amdgpu/i915 hooks.
# Set GRTRACE_SKIP_KERNEL=1 to skip the kernel stage, GRTRACE_SKIP_BROWSER=1 the browser stage.
#
# The kernels (grtrace, stock, debug: about two thirds of a cold run's CPU time) are built in
# the background from the start (`kernel/ci.sh --prebuild`, after the kernel stage's apt
# dependencies), beside the Rust stages, which still run and report first; the kernel stage
# then finds each kernel built or waits for it. The build runs in a session of its own (so
# that it can be ended as a whole when a stage fails). With the kernel's autogroup
# scheduling (sched_autogroup_enabled=1, as on the reference machine) a session is its own
# scheduling group, so its nice 19 only orders it against itself: the kernel builds and the
# Rust stages then share the CPU about equally, and beside other engineers' builds the run
# gets two groups' shares. Without autogroups the nice 19 gives the Rust stages the priority.
# GRT_PREBUILD=0 builds the kernels in the kernel stage instead, one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s (%s)\n' "$*" "$(date -u +%T)"; }
# CPU seconds of this shell's waited-for children so far (user + system)
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.1f", ($14 + $15) / hz }' "/proc/$$/stat"; }
T0=$(date +%s.%N) C0=$(cpu) ts=$T0 cs=$C0
# lap NAME: TIMING line of the stage since the previous lap (wall, CPU of this shell's children;
# awk, not bc: bc comes with the kernel stage's packages)
lap() {
    local now c; now=$(date +%s.%N) c=$(cpu)
    awk -v n="$1" -v w="$now" -v w0="$ts" -v c="$c" -v c0="$cs" \
        'BEGIN { printf "TIMING %s: %.1f s wall, %.1f s CPU\n", n, w - w0, c - c0 }' 
    ts=$now cs=$c
}

. scripts/rust.sh
need_rust
# The tests want optimised code (proptests, long scenarios), not the shipped binaries' thin LTO
# and line tables: without them a cold `cargo test --release` build took 613 s of CPU here
# (7 Dec, all 68 test binaries; the last CI run spent 2,174 s of CPU in its cargo test
# stage). Every cargo call below (the browser and kernel stages too) shares this profile;
# the benchmarks (bench/*/run.sh) build with Cargo.toml's own.
export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}
export CARGO_PROFILE_RELEASE_DEBUG=${CARGO_PROFILE_RELEASE_DEBUG:-0}
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=${CARGO_PROFILE_RELEASE_CODEGEN_UNITS:-16}
if ! command -v cc >/dev/null; then
    step "installing build tools"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential >/dev/null
fi

if [ "${GRTRACE_SKIP_KERNEL:-0}" != 1 ] && [ "${GRT_PREBUILD:-1}" = 1 ]; then
    step "kernel: apt dependencies, then the kernel builds start in the background (nice 19)"
    bash kernel/ci.sh --deps
    # its own session, so that the whole build (make, gcc) can be ended if a stage fails
    setsid nice -n 19 bash kernel/ci.sh --prebuild < /dev/null > /dev/null 2>&1 &
    prebuild=$!
    trap 'kill -- -$prebuild 2>/dev/null || true' EXIT
    echo "kernel builds in the background: pid $prebuild, log ${GRT_WORK:-/var/tmp/grtrace-kernel/ci}/prebuild.log"
    lap "kernel apt dependencies"
fi

step "rust-version against Cargo.lock"
check_rust_version

step "cargo fmt --check"
cargo fmt --all -- --check
lap "cargo fmt"

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
lap "cargo clippy"

step "grtrace-format without its default features (a reader's build)"
cargo test -p grtrace-format --no-default-features
lap "grtrace-format --no-default-features"

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
lap "cargo doc"

step "python checkers (scripts/pyenv.sh: Perfetto's compiled schema for the tests)"
GRT_PYTHON=$(bash scripts/pyenv.sh)
export GRT_PYTHON
lap "python checkers"

step "cargo test"
cargo test --workspace --release
lap "cargo test"

if [ "${GRTRACE_SKIP_BROWSER:-0}" = 1 ]; then
    step "browser stage skipped (GRTRACE_SKIP_BROWSER=1)"
else
    step "browser: grtreport --html in headless chromium (playwright-core)"
    bash scripts/browser/run.sh
    lap "browser"
fi

if [ "${GRT_SPARK:-1}" = 0 ]; then
    step "fleet: Spark stage skipped (GRT_SPARK=0)"
else
    step "fleet: sql/*.sql on DuckDB and Spark (local mode) over a demo fleet, answers compared"
    bash scripts/fleet-spark.sh
    lap "fleet (DuckDB, Spark)"
fi

if [ "${GRTRACE_SKIP_KERNEL:-0}" = 1 ]; then
    step "kernel stage skipped (GRTRACE_SKIP_KERNEL=1)"
    exit 0
fi
step "kernel: patch series, build, QEMU end to end, compile tests"
rc=0
bash kernel/ci.sh || rc=$?
lap "kernel stage"
# (the background kernel builds count from when bash reaps them: in the kernel stage's line)
ts=$T0 cs=$C0 lap "test.sh total"
exit $rc
