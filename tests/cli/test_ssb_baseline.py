"""The DuckDB baseline of `precube demo` and `bench/ssb.py`: the answer check must catch a difference."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from precube.cli.ssb_baseline import geomean, raw_duckdb, same_rows, to_duckdb
from precube.ssb.generate import TABLES


def test_same_rows_compares_numbers_as_numbers_and_everything_else_exactly() -> None:
    assert same_rows([(1993, Decimal("12.50"), "ASIA")], [(1993, 12.5, "ASIA")])
    assert not same_rows([(1993, Decimal("12.50"), "ASIA")], [(1993, 12.51, "ASIA")])
    assert not same_rows([(1993, 1, "ASIA")], [(1993, 1, "EUROPE")])
    assert not same_rows([(1993, 1)], [(1993, 1), (1994, 2)])  # a missing row
    assert not same_rows([(1993, 1), (1994, 2)], [(1994, 2), (1993, 1)])  # the order is part of the answer
    assert not same_rows([(None,)], [(0,)])
    assert same_rows([], [])


def test_raw_duckdb_reads_the_files_and_cuts_orders_at_the_built_end(tmp_path: Path) -> None:
    import datetime as dt

    for name in TABLES:
        (tmp_path / name).mkdir()
        columns = {"LO_ORDERDATE": [dt.date(1992, 5, 1), dt.date(1993, 5, 1)]} if name == "LINEORDER" else {"X": [1]}
        pq.write_table(pa.table(columns), tmp_path / name / "part-0.parquet")
    count = to_duckdb("select count(*) from ssb.lineorder")
    assert raw_duckdb(tmp_path).execute(count).fetchall() == [(2,)]
    assert raw_duckdb(tmp_path, orders_before="1993-01-01").execute(count).fetchall() == [(1,)]
    assert round(geomean([2.0, 8.0]), 9) == 4.0
