"""Benchmark: precube's segment build against the floor (a hand-written Spark job that joins the flat
table and writes only the base cuboid), in one run, on SSB data.

    .venv/bin/python bench/build.py --scale 1            # prints a table, writes bench/results/build-*.json

Reported: source rows/s, seconds, layouts built, precube / floor ratio, a one-day incremental segment's
cost against the full build, and peak memory (driver JVM heap, Python RSS). Each side runs once untimed
(a job's first run in a JVM is about twice as slow), then `--repeat` turns time the floor and a full
precube build one after the other; the ratio is the median of the turns' ratios, and the untimed first
precube build is reported as well.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import Project, Segment, SourceType, TimeRange, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.modeling.partition_format import to_epoch_ms
from precube.settings import load_settings
from precube.sources.tables import load_file_table
from precube.spark_session import spark_session
from precube.ssb.generate import TABLES, generate, read_manifest

# A realistic plan for SSB's Q2-Q4 flights: year mandatory, three geography/product hierarchies.
GROUPS = [
    {
        "includes": ["D_YEAR", "C_REGION", "C_NATION", "S_REGION", "S_NATION", "P_MFGR", "P_CATEGORY"],
        "measures": ["REVENUE", "SUPPLYCOST", "COUNT_ALL"],
        "select_rule": {
            "mandatory_dims": ["D_YEAR"],
            "hierarchy_dims": [["C_REGION", "C_NATION"], ["S_REGION", "S_NATION"], ["P_MFGR", "P_CATEGORY"]],
        },
    },
    {"includes": ["D_YEAR", "D_YEARMONTHNUM", "LO_DISCOUNT", "LO_QUANTITY"], "measures": ["V_REVENUE_SUM"]},
]
DIMENSIONS = [
    "DATES.D_YEAR", "DATES.D_YEARMONTHNUM", "LINEORDER.LO_DISCOUNT", "LINEORDER.LO_QUANTITY",
    "CUSTOMER.C_REGION", "CUSTOMER.C_NATION", "SUPPLIER.S_REGION", "SUPPLIER.S_NATION",
    "PART.P_MFGR", "PART.P_CATEGORY",
]  # fmt: skip
MEASURES = [
    {"name": "COUNT_ALL", "expression": "COUNT"},
    {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
    {"name": "SUPPLYCOST", "expression": "SUM", "column": "LINEORDER.LO_SUPPLYCOST"},
    {"name": "V_REVENUE_SUM", "expression": "SUM", "column": "LINEORDER.V_REVENUE"},
]
FLOOR_SQL = """
    SELECT d.D_YEAR, d.D_YEARMONTHNUM, l.LO_DISCOUNT, l.LO_QUANTITY, c.C_REGION, c.C_NATION,
           s.S_REGION, s.S_NATION, p.P_MFGR, p.P_CATEGORY,
           count(*) AS cnt, sum(l.LO_REVENUE) AS revenue, sum(l.LO_SUPPLYCOST) AS cost,
           sum(l.LO_EXTENDEDPRICE * l.LO_DISCOUNT) AS v_revenue
    FROM b_LINEORDER l
    LEFT JOIN b_DATES d ON l.LO_ORDERDATE = d.D_DATEKEY
    LEFT JOIN b_CUSTOMER c ON l.LO_CUSTKEY = c.C_CUSTKEY
    LEFT JOIN b_SUPPLIER s ON l.LO_SUPPKEY = s.S_SUPPKEY
    LEFT JOIN b_PART p ON l.LO_PARTKEY = p.P_PARTKEY
    WHERE l.LO_ORDERDATE >= DATE '1992-01-01' AND l.LO_ORDERDATE < DATE '1998-08-01'
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
"""


def _spec(base_indexes: list[str]) -> dict[str, Any]:
    text = resources.files("precube").joinpath("resources/ssb_model.yaml").read_text(encoding="utf-8")
    spec = yaml.safe_load(text)
    spec.update(alias="bench", simplified_dimensions=DIMENSIONS, simplified_measures=MEASURES)
    spec["base_index_type"] = base_indexes
    spec["aggregation_groups"] = GROUPS
    return dict(spec)


def _day(text: str) -> int:
    return to_epoch_ms(text, "yyyy-MM-dd")


def _heap_peak_mb(spark: Any) -> float:
    mf = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    pools = [p for p in mf.getMemoryPoolMXBeans() if str(p.getType()) == "Heap memory"]
    return sum(p.getPeakUsage().getUsed() for p in pools) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--data", type=Path, default=None, help="SSB data directory (reused when it matches)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--repeat", type=int, default=2, help="timed turns of floor then precube (medians reported)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument(
        "--base-index",
        action="append",
        choices=["BASE_AGG_INDEX", "BASE_TABLE_INDEX"],
        default=[],
        help="also build this base index (Kylin's API default is none: the groups' own base cuboid remains)",
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    work = Path(tempfile.mkdtemp(prefix="precube-bench-"))
    data = args.data or Path(tempfile.gettempdir()) / f"precube-ssb-sf{args.scale:g}"
    manifest = read_manifest(data)
    if manifest is None or manifest["scale"] != args.scale:
        generate(args.scale, data, seed=1)
    settings = load_settings(home=work, spark={"master": args.master, "driver_memory": "8g"})
    spark = spark_session(settings)
    for name in TABLES:
        spark.read.parquet(str(data / name)).createOrReplaceTempView(f"b_{name}")
    spark.sql("SELECT count(*) FROM b_LINEORDER").collect()  # warm the JVM before timing anything

    store = open_store(f"sqlite:///{work / 'meta.db'}")
    store.create_project(Project(name="bench", default_database="SSB"))
    for name in TABLES:
        load_file_table(store, "bench", data / name, SourceType.PARQUET)
    ctx = BuildContext(spark, store, "bench", str(work / "warehouse"))
    full = TimeRange.of(_day("1992-01-01"), _day("1998-08-01"))

    def floor() -> float:
        t = time.perf_counter()
        spark.sql(FLOOR_SQL).write.mode("overwrite").parquet(str(work / "floor"))
        return time.perf_counter() - t

    def precube(alias: str) -> tuple[float, Segment, int]:
        saved = create_model(store, "bench", parse_spec({**_spec(args.base_index), "alias": alias}))
        t = time.perf_counter()
        segment = build_segment(ctx, alias, full)
        return time.perf_counter() - t, segment, len(saved.index_plan.all_layouts())

    # A job's first run in a JVM is about twice as slow as later ones (code generation, JIT): each side
    # runs once untimed, then both are timed in turns, so they are measured alike, warm, as in a service.
    floor()
    first_s, _, _ = precube("warmup")
    pairs = []
    for n in range(args.repeat):
        floor_s = floor()
        build_s, segment, layouts = precube(f"bench{n}")
        pairs.append((floor_s, build_s))
    t = time.perf_counter()
    build_segment(ctx, f"bench{args.repeat - 1}", TimeRange.of(_day("1998-08-01"), _day("1998-08-02")))
    day_s = time.perf_counter() - t
    floor_s = statistics.median(f for f, _ in pairs)
    build_s = statistics.median(b for _, b in pairs)

    rows = segment.source_count
    result = {
        "scale": args.scale,
        "master": args.master,
        "source_rows": rows,
        "layouts": layouts,
        "base_indexes": ",".join(args.base_index) or "none",
        "repeat": args.repeat,
        "floor_seconds": round(floor_s, 2),
        "precube_seconds": round(build_s, 2),
        "ratio_precube_to_floor": round(statistics.median(b / f for f, b in pairs), 2),
        "ratios_per_turn": ", ".join(f"{b / f:.2f}" for f, b in pairs),
        "precube_first_run_seconds": round(first_s, 2),
        "precube_rows_per_second": round(rows / build_s),
        "floor_rows_per_second": round(rows / floor_s),
        "one_day_segment_seconds": round(day_s, 2),
        "one_day_to_full_ratio": round(day_s / build_s, 3),
        "driver_heap_peak_mb": round(_heap_peak_mb(spark), 1),
        "python_max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    table = Table("metric", "value", title=f"precube build vs floor, SSB SF {args.scale:g}")
    for key, value in result.items():
        table.add_row(key, f"{value:,}" if isinstance(value, int | float) else str(value))
    Console().print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"build-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    store.close()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
