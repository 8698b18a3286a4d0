"""Benchmark: the query result cache, in one run.

    .venv/bin/python bench/cache.py --scale 0.1     # prints a table, writes bench/results/cache-*.json

Set-up (reused when `--home` already holds it): SSB data at the scale, LINEORDER with a one-layout model
(order date, discount, ship mode; COUNT and SUM(LO_REVENUE)) built as one segment. A redis-server is started
on a free loopback port unless `--redis URL` is given. Then, for each backend (memory, Redis):
- hit latency through the Python API (`Session.sql`) — p50 and p99 — of a small result (11 rows) and of a
  100,000-row one, beside the uncached query's median;
- the throughput of 50 concurrent identical cold queries (the cache cleared first; the 100,000-row query),
  with and without single flight, and how many times the engine really ran.
Every hit is checked to be one and to equal the uncached answer.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from precube.cache import CachedSession, ResultCache, open_backend
from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import Dataflow, Project, SourceType, TimeRange, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model, find_model
from precube.modeling.partition_format import to_epoch_ms
from precube.query.session import Session
from precube.settings import CacheSettings, load_settings
from precube.sources.tables import load_file_table
from precube.spark_session import spark_session
from precube.ssb.generate import generate, read_manifest

PROJECT = "cachebench"
SPEC: dict[str, Any] = {
    "alias": "orders",
    "fact_table": "SSB.LINEORDER",
    "partition_desc": {"partition_date_column": "LINEORDER.LO_ORDERDATE", "partition_date_format": "yyyy-MM-dd"},
    "simplified_dimensions": ["LINEORDER.LO_ORDERDATE", "LINEORDER.LO_DISCOUNT", "LINEORDER.LO_SHIPMODE"],
    "simplified_measures": [
        {"name": "COUNT_ALL", "expression": "COUNT"},
        {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
    ],
    "aggregation_groups": [
        {
            "includes": ["LO_ORDERDATE", "LO_DISCOUNT", "LO_SHIPMODE"],
            "measures": ["COUNT_ALL", "REVENUE"],
            "select_rule": {"joint_dims": [["LO_ORDERDATE", "LO_DISCOUNT", "LO_SHIPMODE"]]},
        }
    ],
}
SMALL = "select lo_discount, sum(lo_revenue) as revenue from ssb.lineorder group by lo_discount order by lo_discount"
LARGE = (
    "select lo_orderdate, lo_discount, lo_shipmode, sum(lo_revenue) as revenue, count(*) as n from ssb.lineorder "
    "group by lo_orderdate, lo_discount, lo_shipmode order by lo_orderdate, lo_discount, lo_shipmode limit 100000"
)


def _prepare(home: Path, data: Path, scale: float, master: str) -> tuple[Any, str, float]:
    """Store, warehouse root and the build seconds (0 when reused)."""
    settings = load_settings(home=home, spark={"master": master})
    manifest = read_manifest(data)
    if manifest is None or manifest["scale"] != scale:
        generate(scale, data, seed=1)
    store = open_store(settings.metadata_url)
    if not any(p.name == PROJECT for p in store.list_projects()):
        store.create_project(Project(name=PROJECT, default_database="SSB"))
        load_file_table(store, PROJECT, data / "LINEORDER", SourceType.PARQUET, database="SSB")
    with store.read(PROJECT) as tx:
        model = find_model(tx, "orders")
    if model is None:
        model = create_model(store, PROJECT, parse_spec(SPEC)).model
    with store.read(PROJECT) as tx:
        built = bool(tx.require(Dataflow, model.uuid).segments)
    seconds = 0.0
    if not built:
        ctx = BuildContext(spark_session(settings), store, PROJECT, settings.warehouse_root)
        rng = TimeRange.of(to_epoch_ms("1992-01-01", "yyyy-MM-dd"), to_epoch_ms("1999-01-01", "yyyy-MM-dd"))
        started = time.perf_counter()
        build_segment(ctx, model.alias, rng)
        seconds = time.perf_counter() - started
    return store, settings.warehouse_root, seconds


def _redis() -> tuple[str, subprocess.Popen[bytes]]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server), or pass --redis URL")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    import redis

    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(200):
        try:
            redis.Redis.from_url(url).ping()
            return url, proc
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not start")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _hits(session: CachedSession, sql: str, repeat: int) -> dict[str, Any]:
    uncached = [session.sql(sql, no_cache=True) for _ in range(3)]
    expected = uncached[-1].rows
    session.sql(sql)  # the miss that stores it
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = session.sql(sql)
        times.append((time.perf_counter() - started) * 1000)
        assert result.from_cache, "a hit was expected"
    assert result.rows == expected, "the hit differs from the uncached answer"
    return {
        "rows": result.table.num_rows,
        "hit_p50_ms": statistics.median(times),
        "hit_p99_ms": _percentile(times, 0.99),
        "uncached_ms": statistics.median(r.duration_ms for r in uncached),
    }


def _burst(session: CachedSession, sql: str, n: int) -> dict[str, Any]:
    """`n` identical queries at once on a cold cache: seconds, queries per second, engine runs."""
    session.cache.clear(PROJECT)
    runs = [0]
    lock = threading.Lock()
    real = session.duckdb.execute

    def counted(*args: Any) -> Any:
        with lock:
            runs[0] += 1
        return real(*args)

    session.duckdb.execute = counted  # type: ignore[method-assign]
    barrier = threading.Barrier(n + 1)
    errors: list[BaseException] = []

    def one() -> None:
        barrier.wait()
        try:
            session.sql(sql)
        except Exception as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    session.duckdb.execute = real  # type: ignore[method-assign]
    if errors:
        raise SystemExit(f"a concurrent query failed: {errors[0]}")
    return {"seconds": seconds, "qps": n / seconds, "engine_runs": runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--home", type=Path, default=None, help="default /tmp/precube-cache-bench-sfN")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--redis", default=None, help="a Redis URL (default: start a redis-server on loopback)")
    parser.add_argument("--repeat", type=int, default=300, help="hits timed per small result")
    parser.add_argument("--large-repeat", type=int, default=30, help="hits timed per 100,000-row result")
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    home = args.home or Path(f"/tmp/precube-cache-bench-sf{args.scale:g}")
    store, warehouse, build_s = _prepare(home, home / "ssb", args.scale, args.master)
    server = None
    redis_url = args.redis
    if redis_url is None:
        redis_url, server = _redis()
    results: list[dict[str, Any]] = []
    try:
        for backend, url in (("memory", "memory"), ("redis", redis_url)):
            for flight in (True, False):
                config = CacheSettings(url=url, min_duration_ms=0, min_scanned_rows=0, single_flight=flight)
                cache = ResultCache(open_backend(url), config)
                with CachedSession(Session(store, PROJECT, warehouse), cache) as session:
                    row: dict[str, Any] = {"backend": backend, "single_flight": flight}
                    if flight:  # hit latency does not depend on single flight: measured once per backend
                        row["small"] = _hits(session, SMALL, args.repeat)
                        row["large"] = _hits(session, LARGE, args.large_repeat)
                    row["burst"] = _median_burst([_burst(session, LARGE, args.concurrency) for _ in range(3)])
                    results.append(row)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
    _report(results, args, build_s)


def _median_burst(bursts: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(bursts, key=lambda b: b["seconds"])[len(bursts) // 2]


def _report(results: list[dict[str, Any]], args: argparse.Namespace, build_s: float) -> None:
    console = Console(width=200)  # the whole table, also when the output is a file
    hits = Table(title=f"result-cache hits through Session.sql (SSB SF {args.scale:g})")
    for col in ("backend", "result", "rows", "hit p50 ms", "hit p99 ms", "uncached ms"):
        hits.add_column(col, justify="left" if col in ("backend", "result") else "right")
    for r in results:
        for size in ("small", "large"):
            if size in r:
                h = r[size]
                hits.add_row(
                    r["backend"], size, f"{h['rows']:,}", f"{h['hit_p50_ms']:.3f}", f"{h['hit_p99_ms']:.3f}",
                    f"{h['uncached_ms']:.1f}",
                )  # fmt: skip
    console.print(hits)
    burst = Table(title=f"{args.concurrency} concurrent identical cold queries (the 100,000-row result)")
    for col in ("backend", "single flight", "seconds", "queries/s", "engine runs"):
        burst.add_column(col, justify="left" if col == "backend" else "right")
    for r in results:
        b = r["burst"]
        burst.add_row(
            r["backend"], "yes" if r["single_flight"] else "no", f"{b['seconds']:.3f}", f"{b['qps']:.1f}",
            str(b["engine_runs"]),
        )  # fmt: skip
    console.print(burst)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"cache-sf{args.scale:g}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    summary = {"scale": args.scale, "concurrency": args.concurrency, "build_seconds": build_s}
    path.write_text(json.dumps({"summary": summary, "results": results}, indent=2))
    console.print(f"written {path}")


if __name__ == "__main__":
    main()
