#!/usr/bin/env bash
# The project's whole test run, as CI runs it (`.ci/run` calls exactly this):
#   1. Rust: format, lints, unit/integration/end-to-end tests on the simulator (minutes);
#   2. browser: grtreport --html on a simulator scenario, checked in headless chromium through
#      playwright-core (scripts/browser/run.sh; about a minute, installs what it needs);
#   3. kernel: apply the patch series to Debian's linux-source-6.12, build (skipped when a
#      cached kernel matches the series), boot under QEMU, record real virtio-gpu traffic with
#      the real grtrace binary and check it; compile-test the drm_sched/amdgpu/i915 hooks.
# Set GRTRACE_SKIP_KERNEL=1 to skip the kernel stage, GRTRACE_SKIP_BROWSER=1 the browser stage.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s (%s)\n' "$*" "$(date -u +%T)"; }

. scripts/rust.sh
need_rust
if ! command -v cc >/dev/null; then
    step "installing build tools"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential >/dev/null
fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
cargo test --workspace --release

if [ "${GRTRACE_SKIP_BROWSER:-0}" = 1 ]; then
    step "browser stage skipped (GRTRACE_SKIP_BROWSER=1)"
else
    step "browser: grtreport --html in headless chromium (playwright-core)"
    bash scripts/browser/run.sh
fi

if [ "${GRTRACE_SKIP_KERNEL:-0}" = 1 ]; then
    step "kernel stage skipped (GRTRACE_SKIP_KERNEL=1)"
    exit 0
fi
step "kernel: patch series, build, QEMU end to end, compile tests"
bash kernel/ci.sh
