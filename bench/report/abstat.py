#!/usr/bin/env python3
"""Medians of bench/report/ab.sh output: per mode and build, wall and CPU, peak RSS, and the
wall against the same build's plain report."""
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if f[0] == "bin" or len(f) < 7: continue
    d[(f[1], f[0])].append((float(f[3]), float(f[4]) + float(f[5]), int(f[6])))
modes = []
for m, b in d:
    if m not in modes: modes.append(m)
base = {b: statistics.median(w for w, _, _ in d[("report", b)]) for b in ("before", "after") if ("report", b) in d}
print(f"{'mode':<8} {'bin':<7} {'n':>2} {'wall_med':>8} {'cpu_med':>8} {'rss_MB':>7} {'+wall_vs_report':>16}")
for m in modes:
    for b in ("before", "after"):
        v = d.get((m, b))
        if not v: continue
        w = statistics.median(x[0] for x in v); c = statistics.median(x[1] for x in v); r = max(x[2] for x in v) / 1024
        rel = f"{(w / base[b] - 1) * 100:+.0f}%" if b in base else "-"
        print(f"{m:<8} {b:<7} {len(v):>2} {w:>8.3f} {c:>8.3f} {r:>7.1f} {rel:>16}")
