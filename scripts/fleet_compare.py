#!/usr/bin/env python3
"""Compares the answers of two engines to the fleet queries (fleet_sql.py --json files).

    fleet_compare.py duckdb.json spark.json

Every query must be in both, with the same columns and the same rows in the same order
(the queries order their rows fully); numbers equal, or within 1e-9 relative for floating
point (engines may sum doubles in another order). A query that answered no rows in either
fails too: agreeing on nothing shows nothing. Exits 1 naming every difference.
"""

import json
import math
import sys


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return str(a) == str(b)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    a, b = (json.load(open(p)) for p in argv)
    bad = []
    if not a and not b:
        bad.append("no queries in either file")
    if sorted(a) != sorted(b):
        bad.append(f"queries differ: {sorted(a)} / {sorted(b)}")
    for q in sorted(set(a) & set(b)):
        qa, qb = a[q], b[q]
        if qa["columns"] != qb["columns"]:
            bad.append(f"{q}: columns {qa['columns']} / {qb['columns']}")
            continue
        if not qa["rows"] or not qb["rows"]:
            bad.append(f"{q}: no rows ({len(qa['rows'])} / {len(qb['rows'])})")
            continue
        if len(qa["rows"]) != len(qb["rows"]):
            bad.append(f"{q}: {len(qa['rows'])} rows / {len(qb['rows'])}")
            continue
        for i, (ra, rb) in enumerate(zip(qa["rows"], qb["rows"])):
            for c, va, vb in zip(qa["columns"], ra, rb):
                if not same(va, vb):
                    bad.append(f"{q}: row {i} {c}: {va!r} / {vb!r}")
    for line in bad:
        print(f"fleet_compare: {line}", file=sys.stderr)
    if bad:
        sys.exit(1)
    rows = sum(len(a[q]["rows"]) for q in a)
    print(f"fleet_compare: {len(a)} queries, {rows} rows: the same answers")


if __name__ == "__main__":
    main(sys.argv[1:])
