#!/usr/bin/env bash
# The browser stage of scripts/test.sh: makes an HTML report from a simulator scenario
# (grtsim plays it, grtrace records it) and checks it in Debian's chromium, headless, driven
# by playwright-core (scripts/browser/html.test.mjs, node's test runner), then the same
# scenario on two cards (html-cards.test.mjs). Installs chromium,
# nodejs, npm and playwright-core when missing (fresh Debian 12, as root). The page and the
# screenshot are kept under target/browser/ (gitignored).
#   scripts/browser/run.sh [SCENARIO [JOBS]]        default: report-mixed 400
#   SHOTS=docs/img scripts/browser/run.sh          also the README's screenshots (shots.mjs)
set -euo pipefail
cd "$(dirname "$0")/../.."
scenario=${1:-report-mixed}
jobs=${2:-400}

# Only what is missing: a machine may carry NodeSource's nodejs, which bundles npm and
# conflicts with Debian's npm package (apt then refuses the whole install).
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
# playwright-core drives the installed chromium (it never downloads a browser). Its newest
# releases need node 20; Debian 12's node is 18.
mods=scripts/browser/node_modules
if [ ! -d "$mods/playwright-core" ]; then
    major=$(node -p 'process.versions.node.split(".")[0]')
    if [ "$major" -ge 20 ]; then ver=1.65.1; else ver=1.49.1; fi
    (cd scripts/browser && npm install --silent --no-audit --no-fund --no-save "playwright-core@$ver")
fi

cargo build --release --quiet -p grtreport -p grtparse -p grtrace-sim -p grtrace-record
bin=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release
out=$(dirname "$bin")/browser
mkdir -p "$out"
work=$(mktemp -d /tmp/grtrace-browser.XXXXXX)
trap 'kill "$sim" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin/grtsim" --root "$work/debugfs" --scenario "$scenario" --jobs "$jobs" &
sim=$!
for _ in $(seq 100); do [ -e "$work/debugfs/grtrace/card0/info" ] && break; sleep 0.1; done
"$bin/grtrace" -r "$work/debugfs" -d card0 -w 2 -D "$work" -o run >/dev/null 2>&1
kill "$sim"
cp "$work"/run.grtrace.* "$out/"
"$bin/grtreport" "$out/run" --html "$out/$scenario.html" -q
# Expected bars: every job with both START and END (no "no-end" flag) that --jobs lists.
bars=$("$bin/grtreport" "$out/run" --jobs -q | tail -n +2 | grep -vc 'no-end' || true)
echo "browser test: $out/$scenario.html, $bars job bars expected"
PATH="$bin:$PATH" PAGE="$out/$scenario.html" BARS="$bars" SHOT="$out/$scenario.png" \
    NODE_PATH="$PWD/$mods" node --test scripts/browser/html.test.mjs
echo "screenshot: $out/$scenario.png"

# Two cards: grtsim plays the scenario on card0 and card1, grtrace records both
# (two.card0.grtrace.<cpu>, two.card1.grtrace.<cpu>); the page has a section per card.
"$bin/grtsim" --root "$work/debugfs2" --cards 2 --scenario "$scenario" --jobs "$jobs" &
sim=$!
for _ in $(seq 100); do [ -e "$work/debugfs2/grtrace/card1/info" ] && break; sleep 0.1; done
"$bin/grtrace" -r "$work/debugfs2" -d card0 -d card1 -w 2 -D "$work" -o two >/dev/null 2>&1
kill "$sim"
cp "$work"/two.card*.grtrace.* "$out/"
"$bin/grtreport" "$out/two" --html "$out/$scenario-cards.html" -q
card_bars() { "$bin/grtreport" "$out/two" --jobs -q | tail -n +2 | grep -v 'no-end' | awk -v c="$1" '$1 == c' | wc -l; }
bars0=$(card_bars 0) bars1=$(card_bars 1)
echo "browser test: $out/$scenario-cards.html, $bars0 + $bars1 job bars expected"
PATH="$bin:$PATH" PAGE="$out/$scenario-cards.html" BARS0="$bars0" BARS1="$bars1" \
    NODE_PATH="$PWD/$mods" node --test scripts/browser/html-cards.test.mjs
if [ -n "${SHOTS:-}" ]; then
    "$bin/grtreport" "$out/run" --perfetto "$out/$scenario.json" -q
    node scripts/browser/shots.mjs "$out/$scenario.html" "$SHOTS"
fi
