#!/usr/bin/env python3
"""Runs the fleet queries (sql/*.sql) over a grtreport --parquet dataset.

    fleet_sql.py duckdb DATASET [QUERY.sql...] [--json OUT]
    fleet_sql.py spark  DATASET [QUERY.sql...] [--json OUT]

Each table of the dataset (DATASET/<table>/host=<HOST>/<capture>.parquet, SCHEMA.md) is
made a view of the same name, with the host partition as a column and the schemas of all
captures merged by name (captures may carry different --tag columns). The queries are the
same text on both engines (standard SQL both accept: PERCENTILE_CONT ... WITHIN GROUP, CASE,
COUNT(DISTINCT)); they are run unchanged. Prints each result as a table; --json writes
{query: {"columns": [...], "rows": [[...]...], "seconds": s}} for comparing engines.
"""

import glob
import json
import os
import sys
import time

TABLES = ["captures", "jobs", "rings", "intervals", "deps", "processes"]


def duckdb_engine(dataset):
    import duckdb

    con = duckdb.connect()
    for t in TABLES:
        files = os.path.join(dataset, t, "*", "*.parquet")
        if not glob.glob(files):
            continue
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{files}', "
            # host is a name: without the type, hosts 001 and 1 would both read as 1
            "hive_partitioning = true, hive_types = {'host': VARCHAR}, union_by_name = true)"
        )

    def run(sql):
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return cols, [[plain(v) for v in r] for r in cur.fetchall()]

    return run, lambda: None


def plain(v):
    """A DECIMAL (a literal like 1e6 is one in some dialects) as the float it stands for."""
    import decimal

    return float(v) if isinstance(v, decimal.Decimal) else v


def spark_engine(dataset):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(os.environ.get("GRT_SPARK_MASTER", "local[2]"))
        .appName("grtrace-fleet")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        # host is a name, never a number (hosts 001 and 1 must stay apart)
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in TABLES:
        path = os.path.join(dataset, t)
        if not glob.glob(os.path.join(path, "*", "*.parquet")):
            continue
        df = spark.read.option("mergeSchema", "true").parquet(path)
        df.createOrReplaceTempView(t)

    def run(sql):
        df = spark.sql(sql)
        cols = df.columns
        return cols, [[plain(v) for v in r] for r in df.collect()]

    return run, spark.stop


def show(name, cols, rows, secs):
    print(f"-- {name} ({len(rows)} rows, {secs:.2f} s)")
    cells = [[("NULL" if v is None else str(v)) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    for r in cells:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)))
    print()


def main(argv):
    out = None
    if "--json" in argv:
        i = argv.index("--json")
        out = argv[i + 1]
        del argv[i : i + 2]
    if len(argv) < 2 or argv[0] not in ("duckdb", "spark"):
        sys.exit(__doc__)
    engine, dataset, queries = argv[0], argv[1], argv[2:]
    if not queries:
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")
        queries = sorted(glob.glob(os.path.join(here, "*.sql")))
    if not os.path.isdir(os.path.join(dataset, "captures")):
        sys.exit(f"fleet_sql.py: {dataset}: no captures table (not a grtreport --parquet dataset)")
    run, stop = (duckdb_engine if engine == "duckdb" else spark_engine)(dataset)
    results = {}
    try:
        for q in queries:
            name = os.path.splitext(os.path.basename(q))[0]
            with open(q) as f:
                sql = f.read()
            t0 = time.monotonic()
            cols, rows = run(sql)
            secs = time.monotonic() - t0
            show(name, cols, rows, secs)
            results[name] = {"columns": cols, "rows": rows, "seconds": secs}
    finally:
        stop()
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1:])
