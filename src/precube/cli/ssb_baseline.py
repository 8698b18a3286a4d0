"""DuckDB over the raw SSB Parquet files: the baseline `precube demo` and `bench/ssb.py` time precube's layout
answers against, and whose answers they must equal."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import sqlglot

from precube.query.frontend import DIALECT
from precube.ssb.generate import TABLES


def raw_duckdb(data: Path, orders_before: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-process DuckDB whose views `ssb.TABLE` read the generated Parquet under `data`; with
    `orders_before` (yyyy-MM-dd), LINEORDER holds only the orders before that day (what a model built up to
    it holds)."""
    raw = duckdb.connect()
    raw.execute("CREATE SCHEMA ssb")
    for name in TABLES:
        scan = f"SELECT * FROM read_parquet('{data / name}/*.parquet')"
        if name == "LINEORDER" and orders_before is not None:
            scan += f" WHERE LO_ORDERDATE < DATE '{orders_before}'"
        raw.execute(f"CREATE VIEW ssb.{name.lower()} AS {scan}")
    return raw


def to_duckdb(sql: str) -> str:
    """A statement in precube's dialect as DuckDB's."""
    return sqlglot.transpile(sql, read=DIALECT, write="duckdb")[0]


def same_rows(ours: Sequence[Sequence[Any]], theirs: Sequence[Sequence[Any]]) -> bool:
    """Whether two ordered answers are equal, numbers compared as floats (a SUM's DECIMAL against DuckDB's
    HUGEINT) to within rounding."""
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs, strict=True):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if _number(x) and _number(y):
                if not math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def _number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or hasattr(value, "as_tuple")


def median_ms(run: Callable[[], object], repeat: int, warm_s: float = 0.0) -> float:
    """The median of `repeat` timed runs, after running untimed for `warm_s` seconds."""
    until = time.perf_counter() + warm_s
    while time.perf_counter() < until:
        run()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive numbers."""
    return math.exp(statistics.fmean(math.log(v) for v in values))
