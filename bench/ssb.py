"""Benchmark: the 13 SSB queries answered by precube from its layouts, against DuckDB and Spark SQL on the
raw Parquet files, in one run.

    .venv/bin/python bench/ssb.py --scale 1        # prints a table, writes bench/results/ssb-*.json

Set-up (reused when `--home` already holds it): SSB data at the scale, a project with the five tables,
the SSB model (`resources/ssb_model.yaml`) built as one segment over all order dates, with
`--plan spec` the spec's own index plan (its aggregation groups and base indexes: ~150 layouts, hours at SF 10 on
two cores), with `--plan recommended` (default) the layouts `precube index recommend` gives for the 13
queries (a dozen; no base indexes). Then each query runs on (a) precube, in one session as a server keeps
it: the first run of the query (its shape never seen: parse, match, rewrite, load the layout; every query's
first run comes before anything else), then `--repeat` warm runs, `--repeat` runs with the plan cache
emptied before each (a shape never seen, the layout already loaded), and `--repeat` runs of the query with
other literals (every year 1992-1997 moved one year on: a shape seen before, literals not, as the plan
cache's statements are forgotten before each), each series after 0.3 s of untimed runs; then, after every
query's (a), (b) DuckDB over the raw files (one untimed run, then `--repeat`), (c) chDB, ClickHouse embedded
(`pip install chdb`; the same runs; skipped with `--no-chdb`), and (d) Spark SQL over the raw files (one
untimed run, then `--spark-repeat`). The first runs read each layout from its files (nothing preloaded, as
`precube serve` starts); the warm runs read the layouts held in memory, as a server's loader holds them after a
few reads (`Session.hold`). Reported per query: medians, the layout that answered, and the speed-ups over the
warm runs; then the geometric means and the first query on each layout (p50 and slowest). Every answer, the
other-literals ones included, is checked against DuckDB's (and chDB's). `--form comma` runs the queries as
published (comma joins, INNER) instead of with Kylin's LEFT joins.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

import sqlglot
from chdb_baseline import RawChdb
from rich.console import Console
from rich.table import Table

from precube.cli.demo import SSB_DATABASE, create_recommended_model, ssb_model_spec
from precube.cli.ssb_baseline import geomean, median_ms, raw_duckdb, same_rows, to_duckdb
from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import Dataflow, Project, SegmentStatus, SourceType, TimeRange, open_store
from precube.modeling.model_store import create_model, find_model
from precube.modeling.partition_format import to_epoch_ms
from precube.query.frontend import DIALECT
from precube.query.session import Session
from precube.settings import load_settings
from precube.sources.tables import load_file_table
from precube.spark_session import spark_session
from precube.ssb.generate import TABLES, generate, read_manifest
from precube.ssb.queries import SSB_QUERIES, SSB_QUERIES_COMMA

PROJECT = "ssb"
WARM_S = 0.3  # untimed runs before precube's timed ones: a steady state, not the CPU's wake from the last phase
_YEAR = re.compile(r"\b199([2-7])\b")


def other_literals(sql: str) -> str:
    """The query with every year literal from 1992 to 1997 moved one year on."""
    return _YEAR.sub(lambda m: f"199{int(m.group(1)) + 1}", sql)


def _prepare(home: Path, data: Path, scale: float, master: str, plan: str) -> tuple[Any, Any, float]:
    """Store, settings and the build seconds (0 when reused)."""
    settings = load_settings(home=home, spark={"master": master})
    manifest = read_manifest(data)
    if manifest is None or manifest["scale"] != scale:
        generate(scale, data, seed=1)
    store = open_store(settings.metadata_url)
    if not any(p.name == PROJECT for p in store.list_projects()):
        store.create_project(Project(name=PROJECT, default_database=SSB_DATABASE))
        for name in TABLES:
            load_file_table(store, PROJECT, data / name, SourceType.PARQUET, database=SSB_DATABASE)
    with store.read(PROJECT) as tx:
        model = find_model(tx, "ssb")
    if model is None:
        if plan == "recommended":
            model = create_recommended_model(store, PROJECT, list(SSB_QUERIES.values()))[0].model
        else:
            model = create_model(store, PROJECT, ssb_model_spec()).model
    with store.read(PROJECT) as tx:
        # a segment not READY is a set-up stopped or failed: build_segment resumes it
        built = any(s.status == SegmentStatus.READY for s in tx.require(Dataflow, model.uuid).segments)
    seconds = 0.0
    if not built:
        spark = spark_session(settings)
        ctx = BuildContext(spark, store, PROJECT, settings.warehouse_root)
        rng = TimeRange.of(to_epoch_ms("1992-01-01", "yyyy-MM-dd"), to_epoch_ms("1999-01-01", "yyyy-MM-dd"))
        started = time.perf_counter()
        build_segment(ctx, model.alias, rng)
        seconds = time.perf_counter() - started
    return store, settings, seconds


def add_recommended_arguments(parser: argparse.ArgumentParser, scale: float) -> None:
    """The set-up options of a benchmark over this module's project with the recommended plan
    (`prepare_recommended`): --scale, --home, --data, --master."""
    parser.add_argument("--scale", type=float, default=scale)
    parser.add_argument(
        "--home", type=Path, default=None, help="work directory (default /tmp/precube-bench-sfN-recommended)"
    )
    parser.add_argument("--data", type=Path, default=None, help="SSB data directory (default HOME/data)")
    parser.add_argument("--master", default="local[*]")


def prepare_recommended(args: argparse.Namespace) -> tuple[Path, Path, Any, Any, float]:
    """The home, SSB data directory, store, settings and build seconds of the recommended plan's project for
    `args` (`add_recommended_arguments`): made once, reused by every benchmark that names the same home."""
    home: Path = args.home or Path(f"/tmp/precube-bench-sf{args.scale:g}-recommended")
    data: Path = args.data or home / "data"
    store, settings, build_s = _prepare(home, data, args.scale, args.master, "recommended")
    return home, data, store, settings, build_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--home", type=Path, default=None, help="work directory (default /tmp/precube-bench-sfN-PLAN)")
    parser.add_argument("--data", type=Path, default=None, help="SSB data directory (default HOME/data)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument(
        "--plan",
        choices=("recommended", "spec"),
        default="recommended",
        help="the model's index plan: the layouts recommended for the 13 queries, or the SSB spec's own",
    )
    parser.add_argument("--repeat", type=int, default=30, help="timed runs of precube and DuckDB per query")
    parser.add_argument("--spark-repeat", type=int, default=3, help="timed runs of Spark per query")
    parser.add_argument(
        "--form",
        choices=("left", "comma"),
        default="left",
        help="the queries with Kylin's LEFT joins, or as published (comma joins: INNER)",
    )
    parser.add_argument("--no-chdb", action="store_true", help="skip the chDB baseline")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark baseline (and its JVM)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    queries = SSB_QUERIES_COMMA if args.form == "comma" else SSB_QUERIES
    home = args.home or Path(f"/tmp/precube-bench-sf{args.scale:g}-{args.plan}")
    data = args.data or home / "data"
    console = Console(width=200)  # the whole table, also when the output is a file
    store, settings, build_s = _prepare(home, data, args.scale, args.master, args.plan)

    raw = raw_duckdb(data)
    results = []
    session = Session(store, PROJECT, settings.warehouse_root)
    session.metadata.get(PROJECT)  # a server has read its metadata before the first query
    firsts = {}
    for name, sql in queries.items():  # every layout loaded before any steady-state run (as in a server)
        started = time.perf_counter()
        answer = session.sql(sql)
        firsts[name] = (answer, (time.perf_counter() - started) * 1000)
    for sql in queries.values():  # what a warm server holds after a few reads (its loader's work, done now)
        session.hold(sql)
    time.sleep(2)  # runs right after a large load are slower for a while here (SF 10 Q4.3: 4.3 ms, then 2.3 ms)
    for name, sql in queries.items():
        answer, first_ms = firsts[name]
        precube_ms = median_ms(lambda q=sql: session.sql(q), args.repeat, WARM_S)
        # a shape never seen, its layout already loaded (as in a server that answered other queries)
        new_shape_ms = median_ms(lambda q=sql: (session.plans.clear(), session.sql(q)), args.repeat, WARM_S)
        other = other_literals(sql)
        # a known shape with literals never seen: the plan is reused after pruning with them
        other_ms = median_ms(lambda q=other: (session.plans.forget_statements(), session.sql(q)), args.repeat, WARM_S)
        other_answer = session.sql(other)
        results.append(
            {
                "query": name,
                "layout": None if answer.pushdown else answer.layout_ids[0],
                "pushdown": answer.pushdown,
                "rows": answer.table.num_rows,
                "precube_first_ms": first_ms,
                "precube_new_shape_ms": new_shape_ms,
                "precube_ms": precube_ms,
                "precube_other_literals_ms": other_ms,
                "other_literals_plan_cached": other_answer.plan_cached,
                "answers": (answer.rows, other_answer.rows),
            }
        )
    session.close()
    # The baselines after every precube run: their scans of the raw files (seconds of work on both cores, and
    # the memory it leaves to free) would otherwise run just before a query's timed series
    expected_of: dict[str, list[Any]] = {}  # DuckDB's answers, which chDB's must equal too
    for r in results:
        sql = queries[r["query"]]
        other = other_literals(sql)
        duck_sql = to_duckdb(sql)
        expected = raw.execute(duck_sql).fetchall()
        duck_other = raw.execute(to_duckdb(other)).fetchall()
        r["duckdb_raw_ms"] = median_ms(lambda q=duck_sql: raw.execute(q).fetchall(), args.repeat)
        r["vs_duckdb"] = r["duckdb_raw_ms"] / r["precube_ms"]
        rows, other_rows = r.pop("answers")
        r["same_as_duckdb"] = same_rows(rows, expected) and same_rows(other_rows, duck_other)
        expected_of[r["query"]] = expected
    raw.close()
    if not args.no_chdb:
        chdb = RawChdb(data)
        for r in results:
            ch_sql = chdb.dialect(queries[r["query"]])
            r["same_as_duckdb"] = r["same_as_duckdb"] and same_rows(chdb.rows(ch_sql), expected_of[r["query"]])
            r["chdb_raw_ms"] = median_ms(lambda q=ch_sql: chdb.rows(q), args.repeat)
            r["vs_chdb"] = r["chdb_raw_ms"] / r["precube_ms"]
        chdb.close()
    # Spark last: its JVM's work after a job (GC, cleanup) would otherwise run beside the timed runs
    if not args.no_spark:
        spark = spark_session(settings)
        for name in TABLES:
            spark.read.parquet(str(data / name)).createOrReplaceTempView(f"ssb_{name.lower()}")
        for r in results:
            spark_sql = sqlglot.transpile(queries[r["query"]], read=DIALECT, write="spark")[0].replace("ssb.", "ssb_")
            spark.sql(spark_sql).collect()
            r["spark_raw_ms"] = median_ms(lambda q=spark_sql: spark.sql(q).collect(), args.spark_repeat)
            r["vs_spark"] = r["spark_raw_ms"] / r["precube_ms"]

    table = Table(title=f"SSB ({args.form} joins) at scale {args.scale:g}: median latency (ms)")
    for col in (
        "query",
        "layout",
        "rows",
        "same",
        "precube first",
        "new shape",
        "precube warm",
        "new literals",
        "DuckDB raw",
        "chDB raw",
        "Spark raw",
        "x DuckDB",
        "x chDB",
        "x Spark",
    ):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            r["query"],
            "pushdown" if r["pushdown"] else str(r["layout"]),
            str(r["rows"]),
            "yes" if r["same_as_duckdb"] else "NO",
            f"{r['precube_first_ms']:.1f}",
            f"{r['precube_new_shape_ms']:.1f}",
            f"{r['precube_ms']:.2f}",
            f"{r['precube_other_literals_ms']:.2f}" + ("" if r["other_literals_plan_cached"] else " (planned)"),
            f"{r['duckdb_raw_ms']:.1f}",
            f"{r['chdb_raw_ms']:.1f}" if "chdb_raw_ms" in r else "-",
            f"{r['spark_raw_ms']:.0f}" if "spark_raw_ms" in r else "-",
            f"{r['vs_duckdb']:.1f}",
            f"{r['vs_chdb']:.1f}" if "vs_chdb" in r else "-",
            f"{r['vs_spark']:.0f}" if "vs_spark" in r else "-",
        )
    geo_duck = geomean([r["vs_duckdb"] for r in results])
    geo_spark = None if args.no_spark else geomean([r["vs_spark"] for r in results])
    geo_chdb = None if args.no_chdb else geomean([r["vs_chdb"] for r in results])
    seen: set[Any] = set()
    layout_firsts = []  # the first query on each layout: its files read where they lie
    for r in results:
        if not r["pushdown"] and r["layout"] not in seen:
            seen.add(r["layout"])
            layout_firsts.append(r["precube_first_ms"])
    console.print(table)
    summary = {
        "scale": args.scale,
        "plan": args.plan,
        "form": args.form,
        "from_layouts": sum(not r["pushdown"] for r in results),
        "build_seconds": build_s,
        "geomean_vs_duckdb": geo_duck,
        "geomean_vs_spark": geo_spark,
        "geomean_vs_chdb": geo_chdb,
        "first_on_layout_p50_ms": statistics.median(layout_firsts) if layout_firsts else None,
        "first_on_layout_slowest_ms": max(layout_firsts, default=None),
        "median_warm_ms": statistics.median(r["precube_ms"] for r in results),
        "median_first_ms": statistics.median(r["precube_first_ms"] for r in results),
        "median_new_shape_ms": statistics.median(r["precube_new_shape_ms"] for r in results),
        "median_other_literals_ms": statistics.median(r["precube_other_literals_ms"] for r in results),
        "slowest_warm_ms": max(r["precube_ms"] for r in results),
        "slowest_other_literals_ms": max(r["precube_other_literals_ms"] for r in results),
        "slowest_new_shape_ms": max(r["precube_new_shape_ms"] for r in results),
        "all_from_layouts": not any(r["pushdown"] for r in results),
        "all_same_as_duckdb": all(r["same_as_duckdb"] for r in results),
    }
    console.print(
        "geometric-mean speed-up on the raw files: "
        + ", ".join(
            f"{ratio:.1f}x {name}"
            for name, ratio in (("DuckDB", geo_duck), ("chDB", geo_chdb), ("Spark", geo_spark))
            if ratio is not None
        )
        + "; "
        f"median (slowest query) warm {summary['median_warm_ms']:.2f} ({summary['slowest_warm_ms']:.2f}) ms, "
        f"new literals {summary['median_other_literals_ms']:.2f} ({summary['slowest_other_literals_ms']:.2f}) ms, "
        f"new shape {summary['median_new_shape_ms']:.1f} ({summary['slowest_new_shape_ms']:.1f}) ms, "
        f"first {summary['median_first_ms']:.1f} ms; first on each of {len(layout_firsts)} layouts "
        f"{summary['first_on_layout_p50_ms'] or 0:.1f} ({summary['first_on_layout_slowest_ms'] or 0:.1f}) ms"
        + (f"; build {build_s:.0f} s" if build_s else "")
    )
    args.out.mkdir(parents=True, exist_ok=True)
    form = "" if args.form == "left" else f"-{args.form}"
    path = args.out / f"ssb-sf{args.scale:g}-{args.plan}{form}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"summary": summary, "queries": results}, indent=2))
    console.print(f"wrote {path}")


if __name__ == "__main__":
    main()
