"""Benchmark: precube's segment builds against the floor (a hand-written Spark job that joins the flat table
and writes only the base cuboid), in one run, on SSB data.

    .venv/bin/python bench/build.py --scale 1 --repeat 2           # a table, and bench/results/build-*.json
    .venv/bin/python bench/build.py --scale 10 --repeat 1          # SF 10, against SF 1 measured in the same run
    .venv/bin/python bench/build.py --scale 1 --baseline /tmp/main/src   # the same with another precube

Each (scale, precube) is measured in a process of its own (its own Spark JVM), one after the other: it runs
the floor, a precube build of a year and three one-day segments once untimed (a job's first run in a JVM is
about twice as slow; a service that builds a segment a day has both paths warm), then `--repeat` turns of: the
floor, a full build of the model (43 layouts) over all dates but the last eight days, a one-day segment after
it, a seven-day segment of the last week and its REFRESH (seed 001 §4.6). Reported per scale and precube:
medians of the turns' seconds and ratios (precube / floor, a day / the full build, a week's refresh / the full
build), each step's seconds of the full build, the one-day segment and the refresh (`BuildReport`), what their
source scans read and skipped, and the executor CPU seconds and Spark jobs of each phase (from Spark's event
log; CPU is much less sensitive to other load on a shared machine than wall time). SF 1 is always measured
(first, when not asked for): every other scale's full build is given as a ratio to it (`full_to_sf1`).

The source: `--source sorted` (default) reads LINEORDER sorted by its partition column (LO_ORDERDATE), as
a day-partitioned or date-clustered fact table is in practice, so a segment's range maps to few row groups;
the copy is made once with Spark beside the generated data. `--source generated` reads the generator's
order-key order, where every row group spans all dates: nothing can be skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

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
FIRST, FULL_END, DAY_END, LAST = "1992-01-01", "1998-07-25", "1998-07-26", "1998-08-02"  # SSB orders end 08-02
WARMUP_DAYS = [("1993-01-01", "1993-01-02"), ("1993-01-02", "1993-01-03"), ("1993-01-03", "1993-01-04")]
FLOOR_SQL = f"""
    SELECT d.D_YEAR, d.D_YEARMONTHNUM, l.LO_DISCOUNT, l.LO_QUANTITY, c.C_REGION, c.C_NATION,
           s.S_REGION, s.S_NATION, p.P_MFGR, p.P_CATEGORY,
           count(*) AS cnt, sum(l.LO_REVENUE) AS revenue, sum(l.LO_SUPPLYCOST) AS cost,
           sum(l.LO_EXTENDEDPRICE * l.LO_DISCOUNT) AS v_revenue
    FROM b_LINEORDER l
    LEFT JOIN b_DATES d ON l.LO_ORDERDATE = d.D_DATEKEY
    LEFT JOIN b_CUSTOMER c ON l.LO_CUSTKEY = c.C_CUSTKEY
    LEFT JOIN b_SUPPLIER s ON l.LO_SUPPKEY = s.S_SUPPKEY
    LEFT JOIN b_PART p ON l.LO_PARTKEY = p.P_PARTKEY
    WHERE l.LO_ORDERDATE >= DATE '{FIRST}' AND l.LO_ORDERDATE < DATE '{FULL_END}'
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
"""
TABLES = ("LINEORDER", "DATES", "CUSTOMER", "SUPPLIER", "PART")
PHASES = ("floor", "full", "day", "week", "week_refresh")
REFERENCE_SCALE = 1.0


def prepare(scale: float, data: Path, source: str) -> Path:
    """The SSB data at `scale` (generated once into `data`), as `source` lays LINEORDER out."""
    from precube.ssb.generate import generate, read_manifest

    manifest = read_manifest(data)
    if manifest is None or manifest["scale"] != scale:
        generate(scale, data, seed=1)
    if source == "generated":
        return data
    sorted_dir = data.with_name(f"{data.name}-by-date")
    marker = sorted_dir / "LINEORDER" / "_SUCCESS"
    if not marker.exists():
        from precube.settings import load_settings
        from precube.spark_session import spark_session

        work = Path(tempfile.mkdtemp(prefix="precube-bench-sort-"))
        spark = spark_session(load_settings(home=work, spark={"master": "local[*]", "driver_memory": "6g"}))
        df = spark.read.parquet(str(data / "LINEORDER"))
        files = max(1, round(6 * scale))  # ~1M rows a file, as generated; row groups of ~8 MiB
        df = df.repartitionByRange(files, "LO_ORDERDATE").sortWithinPartitions("LO_ORDERDATE")
        df.write.mode("overwrite").option("parquet.block.size", str(8 * 2**20)).parquet(str(sorted_dir / "LINEORDER"))
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    for name in TABLES[1:]:
        link = sorted_dir / name
        if not link.exists():
            link.symlink_to(data / name)
    return sorted_dir


def _spec(base_indexes: list[str], alias: str) -> dict[str, Any]:
    text = resources.files("precube").joinpath("resources/ssb_model.yaml").read_text(encoding="utf-8")
    spec = yaml.safe_load(text)
    spec.update(alias=alias, simplified_dimensions=DIMENSIONS, simplified_measures=MEASURES)
    spec["base_index_type"] = base_indexes
    spec["aggregation_groups"] = GROUPS
    return dict(spec)


def _spark_events(events_dir: Path, windows: dict[str, tuple[float, float]]) -> tuple[dict[str, float], dict[str, int]]:
    """Executor CPU seconds of the Spark tasks that ended inside each named wall-clock window (epoch s), and
    the Spark jobs submitted inside it."""
    found = dict.fromkeys(windows, 0.0)
    jobs = dict.fromkeys(windows, 0)
    for path in sorted(events_dir.rglob("events_*")):
        data = path.read_bytes()
        if path.suffix == ".zstd":
            data = subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout
        for line in data.decode().splitlines():
            if '"SparkListenerJobStart"' in line:
                submitted = json.loads(line)["Submission Time"] / 1000
                for name, (start, end) in windows.items():
                    jobs[name] += start <= submitted <= end
                continue
            if '"SparkListenerTaskEnd"' not in line:
                continue
            event = json.loads(line)
            metrics = event.get("Task Metrics") or {}
            ended = event["Task Info"]["Finish Time"] / 1000
            seconds = (metrics.get("Executor CPU Time", 0) + metrics.get("Executor Deserialize CPU Time", 0)) / 1e9
            for name, (start, end) in windows.items():
                if start <= ended <= end:
                    found[name] += seconds
    return {name: round(value, 2) for name, value in found.items()}, jobs


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One process's measurement (run as a child: `--child`): warm-up, then `--repeat` turns."""
    from precube.engine import context as engine_context
    from precube.engine.context import BuildContext
    from precube.engine.operations import build_segment, refresh_segment
    from precube.metadata import Project, SourceType, TimeRange, open_store
    from precube.modeling.model_spec import parse_spec
    from precube.modeling.model_store import create_model
    from precube.modeling.partition_format import to_epoch_ms
    from precube.settings import load_settings
    from precube.sources.tables import load_file_table
    from precube.spark_session import spark_session

    def day(text: str) -> int:
        return to_epoch_ms(text, "yyyy-MM-dd")

    work = Path(tempfile.mkdtemp(prefix="precube-bench-"))
    events = work / "events"
    events.mkdir()
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events)}
    settings = load_settings(home=work, spark={"master": args.master, "driver_memory": "8g", "conf": conf})
    spark = spark_session(settings)
    data = Path(args.data)
    for name in TABLES:
        spark.read.parquet(str(data / name)).createOrReplaceTempView(f"b_{name}")
    spark.sql("SELECT count(*) FROM b_LINEORDER").collect()  # warm the JVM before timing anything
    store = open_store(f"sqlite:///{work / 'meta.db'}")
    store.create_project(Project(name="bench", default_database="SSB"))
    for name in TABLES:
        load_file_table(store, "bench", data / name, SourceType.PARQUET)
    ctx = BuildContext(spark, store, "bench", str(work / "warehouse"))
    report_type: Callable[[], Any] | None = getattr(engine_context, "BuildReport", None)  # absent before issue 24
    windows: dict[str, tuple[float, float]] = {}

    def timed(name: str, run: Callable[[], Any]) -> tuple[float, Any, dict[str, Any]]:
        if report_type is not None:
            ctx.report = report_type()
        started, wall = time.perf_counter(), time.time()
        result = run()
        seconds = time.perf_counter() - started
        windows[name] = (wall, time.time())
        report = getattr(ctx, "report", None)
        told: dict[str, Any] = {}
        if report is not None:
            told = {"steps": {k: round(v, 3) for k, v in report.steps.items()}}
            told["scans"] = [scan.describe() for scan in report.scans]
            told["merged_on_driver"] = len(getattr(report, "merged_on_driver", []))  # absent before Arrow merges
            told["read_on_driver"] = list(getattr(report, "read_on_driver", []))  # absent before local rows
        return seconds, result, told

    def floor() -> None:
        spark.sql(FLOOR_SQL).write.mode("overwrite").parquet(str(work / "floor"))

    def model(alias: str) -> int:
        saved = create_model(store, "bench", parse_spec(_spec(args.base_index, alias)))
        return len(saved.index_plan.all_layouts())

    floor()  # untimed: each side's first run in the JVM
    model("warmup")
    build_segment(ctx, "warmup", TimeRange.of(day(FIRST), day("1993-01-01")))
    # and a daily build's own path (one job, collected and written from the driver), warm in a service that
    # builds a segment a day: the first few days in a JVM take up to twice as long
    for start, end in WARMUP_DAYS:
        build_segment(ctx, "warmup", TimeRange.of(day(start), day(end)))
    turns = []
    for n in range(args.repeat):
        alias = f"bench{n}"
        turn: dict[str, Any] = {"floor": timed(f"floor{n}", floor)[0], "layouts": model(alias)}

        def build(start: str, end: str, alias: str = alias) -> Any:
            return build_segment(ctx, alias, TimeRange.of(day(start), day(end)))

        seconds, segment, told = timed(f"full{n}", lambda: build(FIRST, FULL_END))
        turn.update(full=seconds, source_rows=segment.source_count, full_report=told)
        seconds, segment, told = timed(f"day{n}", lambda: build(FULL_END, DAY_END))
        turn.update(day=seconds, day_rows=segment.source_count, day_report=told)
        seconds, week, _ = timed(f"week{n}", lambda: build(DAY_END, LAST))
        turn.update(week=seconds, week_rows=week.source_count)
        seconds, _, told = timed(f"week_refresh{n}", lambda: refresh_segment(ctx, alias, week.name))  # noqa: B023
        turn.update(week_refresh=seconds, week_refresh_report=told)
        turns.append(turn)
    mf = spark.sparkContext._jvm.java.lang.management.ManagementFactory  # type: ignore[union-attr]
    heap = sum(p.getPeakUsage().getUsed() for p in mf.getMemoryPoolMXBeans() if str(p.getType()) == "Heap memory")
    spark.stop()  # flushes the event log
    cpu, jobs = _spark_events(events, windows)
    for n, turn in enumerate(turns):
        turn["executor_cpu_seconds"] = {phase: cpu.get(f"{phase}{n}", 0.0) for phase in PHASES}
        turn["spark_jobs"] = {phase: jobs.get(f"{phase}{n}", 0) for phase in PHASES}
    store.close()
    shutil.rmtree(work, ignore_errors=True)
    return {
        "turns": turns,
        "driver_heap_peak_mb": round(heap / 2**20, 1),
        "python_max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _child(side: str, src: Path, scale: float, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Run `measure` in a new process with `src` first on the path (the precube measured)."""
    options = {"data": str(data), "master": args.master, "repeat": args.repeat, "base_index": args.base_index}
    env = {**os.environ, "PYTHONPATH": str(src), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(options)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{side} at SF {scale:g} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def summarize(side: str, scale: float, measured: dict[str, Any]) -> dict[str, Any]:
    turns: list[dict[str, Any]] = measured["turns"]

    def median(key: str) -> float:
        return round(float(statistics.median(t[key] for t in turns)), 2)

    last = turns[-1]
    summary = {
        "side": side,
        "scale": scale,
        "source_rows": last["source_rows"],
        "layouts": last["layouts"],
        "turns": len(turns),
        **{f"{phase}_seconds": median(phase) for phase in PHASES},
        "full_to_floor": round(statistics.median(t["full"] / t["floor"] for t in turns), 2),
        "full_to_floor_per_turn": ", ".join(f"{t['full'] / t['floor']:.2f}" for t in turns),
        "day_to_full": round(statistics.median(t["day"] / t["full"] for t in turns), 3),
        "day_to_full_per_turn": ", ".join(f"{t['day'] / t['full']:.3f}" for t in turns),
        "week_refresh_to_full": round(statistics.median(t["week_refresh"] / t["full"] for t in turns), 3),
        "rows_per_second": round(last["source_rows"] / median("full")),
        "day_rows": last["day_rows"],
        "week_rows": last["week_rows"],
        "executor_cpu_seconds": {
            phase: round(statistics.median(t["executor_cpu_seconds"][phase] for t in turns), 2) for phase in PHASES
        },
        "spark_jobs": last["spark_jobs"],
        "full_report": last["full_report"],
        "day_report": last["day_report"],
        "week_refresh_report": last["week_refresh_report"],
        "driver_heap_peak_mb": measured["driver_heap_peak_mb"],
        "python_max_rss_mb": measured["python_max_rss_mb"],
    }
    cpu = summary["executor_cpu_seconds"]
    summary["full_to_floor_cpu"] = round(cpu["full"] / cpu["floor"], 2) if cpu["floor"] else None
    return summary


def _show(results: list[dict[str, Any]]) -> None:
    view = Table(title="precube builds vs the floor (medians of the turns; CPU: Spark executors')")
    for column in ("metric", *(f"{r['side']} SF {r['scale']:g}" for r in results)):
        view.add_column(column, justify="left" if column == "metric" else "right")
    nested = ("side", "scale", "executor_cpu_seconds", "spark_jobs", "full_report", "day_report", "week_refresh_report")
    keys = [k for k in dict.fromkeys(k for r in results for k in r) if k not in nested]
    for key in keys:
        cells = [r.get(key, "") for r in results]
        view.add_row(key, *[f"{c:,}" if isinstance(c, int | float) else str(c) for c in cells])
    for phase in PHASES:
        view.add_row(f"cpu {phase} s", *[f"{r['executor_cpu_seconds'][phase]:,}" for r in results])
    for phase in PHASES:
        view.add_row(f"spark jobs {phase}", *[str(r["spark_jobs"][phase]) for r in results])
    for name in ("full_report", "day_report", "week_refresh_report"):
        steps = list(dict.fromkeys(step for r in results for step in r[name].get("steps", {})))
        for step in steps:
            view.add_row(f"{name[:-7]}: {step} s", *[str(r[name].get("steps", {}).get(step, "")) for r in results])
        merged = [str(r[name].get("merged_on_driver", "")) for r in results]
        view.add_row(f"{name[:-7]}: layouts merged on the driver", *merged)
    Console(width=220).print(view)
    for r in results:
        for scan in r["day_report"].get("scans", []):
            Console().print(f"{r['side']} SF {r['scale']:g} one-day segment read {scan}", markup=False)
        for rows in r["day_report"].get("read_on_driver", []):
            Console().print(f"{r['side']} SF {r['scale']:g} one-day segment read on the driver: {rows}", markup=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, action="append", help="SSB scale (repeat; SF 1 is always measured)")
    parser.add_argument("--data", type=Path, default=None, help="SSB data directory of SF 1")
    parser.add_argument("--source", choices=["sorted", "generated"], default="sorted", help="LINEORDER's layout")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--repeat", type=int, default=2, help="timed turns per process (medians reported)")
    parser.add_argument("--baseline", type=Path, default=None, help="another precube's src directory")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument(
        "--base-index",
        action="append",
        choices=["BASE_AGG_INDEX", "BASE_TABLE_INDEX"],
        default=[],
        help="also build this base index (Kylin's API default is none: the groups' own base cuboid remains)",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        options = json.loads(args.child)
        print(json.dumps(measure(argparse.Namespace(**options))))
        return
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    scales = list(dict.fromkeys([REFERENCE_SCALE, *(args.scale or [])]))  # every scale against SF 1's run
    sides = {"this": Path(__file__).resolve().parents[1] / "src"}
    if args.baseline is not None:
        sides["baseline"] = args.baseline.resolve()
    results = []
    for n, scale in enumerate(scales):
        raw = args.data if n == 0 and args.data else Path(tempfile.gettempdir()) / f"precube-ssb-sf{scale:g}"
        data = prepare(scale, raw, args.source)
        for side, src in sides.items():
            Console(stderr=True).print(f"measuring {side} at SF {scale:g} ({data})")
            results.append(summarize(side, scale, _child(side, src, scale, data, args)))
    first = {r["side"]: r for r in results if r["scale"] == REFERENCE_SCALE}
    for r in results:  # the figures across scales and against the baseline, in the same run
        r["full_to_sf1"] = round(r["full_seconds"] / first[r["side"]]["full_seconds"], 2)
        if "baseline" in sides and r["side"] == "this":
            base = next(b for b in results if b["side"] == "baseline" and b["scale"] == r["scale"])
            r["full_to_baseline"] = round(r["full_seconds"] / base["full_seconds"], 2)
            r["day_to_baseline"] = round(r["day_seconds"] / base["day_seconds"], 3)
    args.out.mkdir(parents=True, exist_ok=True)
    label = "-".join(f"sf{s:g}" for s in scales)
    out = args.out / f"build-{label}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    payload = {"source": args.source, "master": args.master, "repeat": args.repeat, "results": results}
    out.write_text(json.dumps(payload, indent=2) + "\n")
    _show(results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
