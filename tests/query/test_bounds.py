"""A statement's bounds (`precube.query.bounds`): the default memory bound's formula, the answer's rows and bytes
checked batch by batch (an answer past them is never fetched whole), on the DuckDB engine and the catalog's
views, and an engine out of memory as its own error."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from sqlglot import exp, parse_one

from precube.query.bounds import MIN_MEMORY_BYTES, ResultBounds, Window, default_memory_limit, memory_limit
from precube.query.duckdb_engine import SMALL_RESULT_ROWS, DuckDBEngine
from precube.query.engine_errors import query_error
from precube.query.errors import EngineError, QueryMemoryError, ResultTooLargeError
from precube.query.spill import Spill
from precube.query.value_bounds import bounded_values
from precube.service.errors import disposition
from precube.settings import QuerySettings

GIB = 2**30


def test_the_default_memory_bound_is_half_the_machine_over_the_processes() -> None:
    assert default_memory_limit(1, total=8 * GIB) == "4096MiB"
    assert default_memory_limit(4, total=8 * GIB) == "1024MiB"
    assert default_memory_limit(64, total=8 * GIB) == f"{MIN_MEMORY_BYTES // 2**20}MiB"  # never below the floor
    assert memory_limit("3GB", processes=8) == "3GB"  # [query] memory_limit overrides
    assert memory_limit("", processes=1) == default_memory_limit(1)


def test_the_default_is_a_size_duckdb_takes(tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p", memory_limit=default_memory_limit(2))
    try:
        found = engine.con.execute("select current_setting('memory_limit')").fetchone()
        default = duckdb.connect().execute("select current_setting('memory_limit')").fetchone()
        assert found is not None and default is not None and found[0] != default[0]
    finally:
        engine.close()


def _batches(count: int, rows: int, seen: list[int]) -> Iterator[pa.RecordBatch]:
    for i in range(count):
        seen.append(i)
        yield pa.record_batch({"x": pa.array(range(rows), pa.int64())})


def test_collect_stops_at_the_first_batch_past_a_bound() -> None:
    schema = pa.schema({"x": pa.int64()})
    seen: list[int] = []
    with pytest.raises(ResultTooLargeError, match=r"more than 250 rows \(\[query\] max_result_rows\).*MAX_RESULT_ROWS"):
        ResultBounds(250, 10**9).collect(schema, _batches(10, 100, seen))
    assert seen == [0, 1, 2]  # the batches after the one past the bound were never asked for
    seen.clear()
    with pytest.raises(ResultTooLargeError, match=r"more than 1,000 bytes \(\[query\] max_result_bytes\)"):
        ResultBounds(10**9, 1000).collect(schema, _batches(10, 100, seen))
    assert seen == [0, 1]  # 800 bytes a batch
    table = ResultBounds(1000, 10**9).collect(schema, _batches(10, 100, []))
    assert table.num_rows == 1000 and table.schema == schema
    assert ResultBounds.of(QuerySettings(max_result_rows=7, max_result_bytes=9)) == ResultBounds(7, 9)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[DuckDBEngine]:
    found = DuckDBEngine(str(tmp_path), "p", bounds=ResultBounds(5_000, 2**20))
    yield found
    found.close()


@pytest.mark.parametrize("rows", [10, SMALL_RESULT_ROWS, SMALL_RESULT_ROWS + 1, 5_000])  # tuples, edges, export
def test_an_answer_within_the_bounds_is_whole(engine: DuckDBEngine, rows: int) -> None:
    table = engine.execute(f"select range as x, 'v' || range as s from range({rows})", [], [])
    assert table.num_rows == rows
    assert table.column("x").to_pylist() == list(range(rows))
    assert table.column("s").to_pylist() == [f"v{i}" for i in range(rows)]


def test_an_answer_past_the_rows_is_stopped_without_being_fetched(engine: DuckDBEngine) -> None:
    started = time.monotonic()
    with pytest.raises(ResultTooLargeError, match="max_result_rows"):
        engine.execute("select range as x from range(10000000000)", [], [])  # 80 GB if fetched whole
    assert time.monotonic() - started < 5
    assert engine.execute("select 42 as x", [], []).to_pylist() == [{"x": 42}]  # the engine goes on


@pytest.mark.parametrize(
    ("window", "rows", "partial"),
    [
        (Window(0, 500), list(range(500)), True),
        (Window(9_990, 500), list(range(9_990, 10_000)), False),  # the last rows: nothing past them
        (Window(100, 5_000), list(range(100, 5_100)), True),  # as many rows as the bound: the probe row is not one
        (Window(9_000, 0), list(range(9_000, 10_000)), False),  # an offset alone
        (Window(0, 10_000), None, False),  # more rows than the bound
    ],
)
def test_a_window_fetches_its_rows_and_tells_whether_more_existed(
    engine: DuckDBEngine, window: Window, rows: list[int] | None, partial: bool
) -> None:
    sql = "select range as x from range(10000) order by x"  # twice the bound: whole, it is too large
    if rows is None:
        with pytest.raises(ResultTooLargeError, match="max_result_rows"):
            engine.execute(sql, [], [], window=window)
        return
    found, more = window.cut(engine.execute(sql, [], [], window=window))
    assert found.column("x").to_pylist() == rows and more is partial


def test_a_window_of_a_whole_answer() -> None:
    table = pa.table({"x": list(range(10))})
    assert [(t.column("x").to_pylist(), more) for t, more in (Window(8, 0).of(table), Window(2, 3).of(table))] == [
        ([8, 9], False),
        ([2, 3, 4], True),
    ]
    assert Window(7, 3).of(table)[1] is False  # exactly to the end
    assert Window().sql("select 1", ResultBounds(10**18, 1)) == "(select 1\n) LIMIT 1000000000000000001"


def test_an_answer_past_the_bytes_fails(engine: DuckDBEngine) -> None:
    with pytest.raises(ResultTooLargeError, match="max_result_bytes"):
        engine.execute("select repeat('x', 10000) as s from range(200)", [], [])  # 2 MB in 200 rows
    with pytest.raises(ResultTooLargeError, match="max_result_bytes"):
        engine.execute("select list(range) as l from range(1000000)", [], [])  # one value of 8 MB


def test_out_of_memory_is_its_own_error() -> None:
    found = query_error(duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block"))
    assert isinstance(found, QueryMemoryError) and "[query] memory_limit" in found.message
    assert isinstance(query_error(MemoryError()), QueryMemoryError)
    how = disposition(found)
    assert (how.http_status, how.sqlstate) == (503, "53200")
    assert disposition(ResultTooLargeError("m")).http_status == 400
    assert isinstance(query_error(duckdb.ConversionException("Conversion Error: x")), EngineError)


def test_a_statement_past_the_memory_bound_fails_and_the_engine_goes_on(tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p", memory_limit="64MB")
    try:
        with pytest.raises(QueryMemoryError, match="memory_limit"):
            engine.execute("select max(l[1]) from (select list(range) as l from range(30000000))", [], [])
        assert engine.execute("select 1 as x", [], []).to_pylist() == [{"x": 1}]
    finally:
        engine.close()


def test_a_statement_past_the_spill_bound_fails_and_its_spill_is_removed(tmp_path: Path) -> None:
    """DuckDB spills to a directory of its own under `[query] spill_dir`, at most `max_spill_mb`: past it the
    statement gets the memory error (503/53200), and the directory goes with the database."""
    dead = tmp_path / "999999999"  # a process that died with its databases open
    (dead / "x").mkdir(parents=True)
    engine = DuckDBEngine(str(tmp_path), "p", memory_limit="32MB", spill=Spill(tmp_path, max_mb=2))
    try:
        assert not dead.exists()  # cleaned as the engine starts
        found = engine.con.execute("select current_setting('temp_directory')").fetchone()
        assert found is not None and Path(found[0]).parent == tmp_path / str(os.getpid())
        sort = "select count(*) from (select md5(range::varchar) as m from range(3000000) order by m)"
        with pytest.raises(QueryMemoryError, match=r"\[query\] max_spill_mb") as raised:
            engine.execute(sort, [], [])
        assert disposition(raised.value).sqlstate == "53200"
        assert engine.execute("select 1 as x", [], []).to_pylist() == [{"x": 1}]  # the engine goes on
    finally:
        engine.close()
    assert not any((tmp_path / str(os.getpid())).iterdir())  # DuckDB removed its spill directory


@pytest.mark.parametrize(
    ("call", "name"),
    [
        ("repeat('x', 2000000000)", "REPEAT"),
        ("repeat(repeat('ab', 1000), 1000)", "REPEAT"),  # the repeated value's own size counts
        ("lpad('x', 2000000000, 'y')", "PAD"),
        ("space(2000000000)", "SPACE"),
        ("sequence(1, 100000000)", "SEQUENCE"),
        ("printf('%200000000d', 1)", "PRINTF"),
    ],
)
def test_a_value_past_its_bound_fails_before_it_is_built(engine: DuckDBEngine, call: str, name: str) -> None:
    tree = parse_one(f"select length(cast({call} as string)) as n", read="spark")
    assert isinstance(tree, exp.Query)
    started = time.monotonic()
    with pytest.raises(ResultTooLargeError, match=rf"a value of {name} would hold more than 512 bytes"):
        engine.run(tree, [], [])
    assert time.monotonic() - started < 2  # DuckDB takes 50 s and 4 GB to build REPEAT's 2 GB


def test_values_within_their_bound_are_unchanged(engine: DuckDBEngine) -> None:
    sql = (
        "select repeat('ab', 3) as r, lpad('x', 4, 'y') as l, rpad('x', 3) as p, space(2) as s, "
        "sequence(10, 1, -3) as q, printf('%5d', 3) as f, repeat(cast(null as string), 3) as n"
    )
    tree = parse_one(sql, read="spark")
    assert isinstance(tree, exp.Query)
    found = engine.run(tree, [], []).to_pylist()
    assert found == [{"r": "ababab", "l": "yyyx", "p": "x  ", "s": "  ", "q": [10, 7, 4, 1], "f": "    3", "n": None}]
    assert bounded_values(parse_one("select 1 + 2"), 10) is not None
