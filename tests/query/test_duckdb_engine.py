"""The DuckDB engine's result fetch: small results of plain types come as tuples made into Arrow here, and
must equal DuckDB's own Arrow export — schema and values — for every type and size. Its cursors: statements
run side by side, each interrupted (cancel, time-out) alone, every cursor sealed."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from precube.query.bounds import UNBOUNDED, ResultBounds, Window
from precube.query.cancel import Cancellation
from precube.query.duckdb_engine import SMALL_RESULT_ROWS, SMALL_SCAN_ROWS, DuckDBEngine
from precube.query.errors import QueryCancelledError, QueryError, QueryTimeoutError, ResultTooLargeError
from precube.query.rewrite import LayoutScan
from precube.storage.paths import layout_path

COLUMNS = (
    "true a, 1::tinyint b, 2::smallint c, 3::integer d, range::bigint e, 4::hugeint f, 1.5::float g, "
    "range * 0.5 h, 'x' || range i, date '2020-01-02' j, timestamp '2020-01-02 03:04:05' k, "
    "1.25::decimal(10,2) l, null::integer m"
)


@pytest.mark.parametrize(
    "sql",
    [
        f"select {COLUMNS} from range(3)",
        f"select {COLUMNS} from range(0)",
        f"select {COLUMNS} from range({SMALL_RESULT_ROWS})",
        f"select {COLUMNS} from range({SMALL_RESULT_ROWS + 1})",
        f"select {COLUMNS} from range(5000)",
        "select [range] a, {'k': range} b from range(4)",  # types the tuple path leaves to DuckDB
        "select [range] a from range(3000)",
    ],
)
def test_fetch_equals_duckdbs_arrow_export(sql: str, tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p")
    try:
        expected = engine.con.sql(sql).to_arrow_table()
        found = engine._fetch(engine.con, sql)
        assert found.schema == expected.schema
        assert found.equals(expected)
    finally:
        engine.close()


def _layout(tmp_path: Path, rows: int = 4000) -> tuple[DuckDBEngine, LayoutScan]:
    """A layout of two unsorted files: `1` a string of 7 values, `2` an int, `3` a string of `rows` values
    (too many to code), `100001` a sum cell."""
    engine = DuckDBEngine(str(tmp_path), "p")
    folder = Path(layout_path(str(tmp_path), "p", "m", "s", 1))
    folder.mkdir(parents=True)
    for part in range(2):
        engine.con.execute(
            f"""COPY (SELECT CASE WHEN i % 11 = 0 THEN NULL ELSE 'v' || (i * 7919 % 7)::varchar || '''' END AS "1",
            (i * 31 % 97)::integer AS "2", 'u' || i::varchar AS "3", i::bigint AS "100001"
            FROM range({part}, {rows}, 2) t(i)) TO '{folder}/part-{part}.parquet'"""
        )
    return engine, LayoutScan("layout_1_x", "m", 1, ("s",), "s", rows, ("1", "2"))


def _files(tmp_path: Path) -> str:
    """The layout's files as DuckDB reads them raw (the oracle of a statement over the held layout); the
    engine reads only under its project's directory."""
    return f"read_parquet('{tmp_path}/p/**/*.parquet')"


# Statements over a layout with coded strings, each compared with the same statement over the files.
CODED = [
    'SELECT "1", sum("100001") s FROM {t} GROUP BY "1" ORDER BY "1" NULLS FIRST',
    "SELECT count(*) FROM {t} WHERE \"1\" = 'v3'''",
    "SELECT count(*) FROM {t} WHERE \"1\" = 'absent'",
    "SELECT count(*) FROM {t} WHERE \"1\" BETWEEN 'v2' AND 'v4zz'",
    "SELECT count(*) FROM {t} WHERE \"1\" > 'v1' AND \"1\" < 'v6'",
    "SELECT count(*) FROM {t} WHERE \"1\" IN ('v1''', 'nope') OR \"1\" LIKE 'v5%'",
    'SELECT min("1"), max("1"), count(DISTINCT "1") FROM {t}',
    'SELECT upper("1") || \'-\' || substr("1", 2) u, length("1") n FROM {t} ORDER BY "2", "100001" LIMIT 20',
    'SELECT "1" FROM {t} WHERE "2" < 3 UNION ALL SELECT \'other\' ORDER BY 1 NULLS LAST',
    "SELECT coalesce(\"1\", 'none') c, count(*) FROM {t} GROUP BY 1 ORDER BY 1",
    'SELECT a."1", count(*) FROM {t} a JOIN {t} b ON a."1" = b."1" AND a."2" = b."2" GROUP BY 1 ORDER BY 1',
    'SELECT "3", "1", rank() OVER (PARTITION BY "1" ORDER BY "100001" DESC) r FROM {t} ORDER BY "100001" LIMIT 5',
]


@pytest.mark.parametrize("sql", CODED)
def test_coded_layout_answers_as_its_files(sql: str, tmp_path: Path) -> None:
    engine, scan = _layout(tmp_path)
    try:
        assert engine.hold(scan)
        found = engine.execute(sql.format(t=scan.name), [scan], [])
        expected = engine.con.sql(sql.format(t=_files(tmp_path))).to_arrow_table()
        assert found.schema == expected.schema
        assert found.equals(expected)
    finally:
        engine.close()


def test_layout_held_sorted_with_few_valued_strings_coded(tmp_path: Path) -> None:
    engine, scan = _layout(tmp_path)
    try:
        assert engine.hold(scan)
        types = {str(r[0]): str(r[1]) for r in engine.con.execute(f'DESCRIBE "{scan.name}"').fetchall()}
        assert types["1"].startswith("ENUM(") and types["3"] == "VARCHAR" and types["2"] == "INTEGER"
        held = engine.con.execute(f'SELECT "1"::varchar, "2" FROM "{scan.name}"').fetchall()
        assert held == sorted(held, key=lambda r: (r[0] is not None, r[0] or "", r[1]))
        assert len(held) == scan.rows
        # a result DuckDB exports itself (a large one, or one of nested types) has the coded strings decoded
        big = engine.execute(f'SELECT "1", [1] l FROM "{scan.name}"', [scan], [])
        assert big.schema.field("1").type == pa.string() and big.num_rows == scan.rows
        nested_sql = (
            'SELECT "2", list("1" ORDER BY "100001") l, {{\'k\': min("1")}} s, map([max("1")], [1]) m '
            'FROM {t} GROUP BY "2" ORDER BY "2"'
        )
        nested = engine.execute(nested_sql.format(t=f'"{scan.name}"'), [scan], [])
        expected = engine.con.sql(nested_sql.format(t=_files(tmp_path))).to_arrow_table()
        assert nested.schema == expected.schema and nested.equals(expected)
    finally:
        engine.close()


def test_small_statements_run_on_one_thread_others_on_all(tmp_path: Path) -> None:
    engine, scan = _layout(tmp_path)

    def threads_after(layout: LayoutScan) -> int:  # LIKE: a statement DuckDB runs, not `direct`
        counted = engine.execute(f'SELECT count(*) n FROM "{layout.name}" WHERE "3" LIKE \'u%\'', [layout], [])
        assert counted.to_pylist() == [{"n": scan.rows}]
        return int(engine.con.execute("SELECT current_setting('threads')").fetchall()[0][0])

    try:
        threads = engine._threads
        assert threads_after(scan) == threads  # read from its files: every thread
        assert engine.hold(scan) and threads_after(scan) == 1
        # as many rows in the metadata as a large layout: every thread, unless the filter pins its leading column
        wide = LayoutScan("layout_1_y", "m", 1, ("s",), "s", SMALL_SCAN_ROWS + 1, ("1", "2"))
        assert engine.hold(wide) and threads_after(wide) == threads
        assert threads_after(dataclasses.replace(wide, pinned=True)) == 1
    finally:
        engine.close()


SLOW = "select sum(a.range * b.range) s from range(200000) a, range(200000) b"  # 4e10 pairs: many seconds


class Running:
    """`sql` run on `engine` in a thread of its own, cancellable; `error` is what it raised."""

    def __init__(self, engine: DuckDBEngine, sql: str) -> None:
        self.cancel = Cancellation()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(engine, sql), daemon=True)
        self._thread.start()

    def _run(self, engine: DuckDBEngine, sql: str) -> None:
        try:
            engine.execute(sql, [], [], self.cancel)
        except BaseException as err:  # noqa: BLE001 (the test reads it)
            self.error = err

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> BaseException | None:
        self.cancel.cancel()
        self._thread.join(10)
        assert not self._thread.is_alive(), "the statement ran on after its cancel"
        return self.error


def test_a_statement_runs_while_another_does_and_a_cancel_stops_only_its_own(tmp_path: Path) -> None:
    """Each statement has a cursor of its own: a cheap one is answered while slow ones run, and a cancel
    interrupts the statement it was given, not its neighbour."""
    engine = DuckDBEngine(str(tmp_path), "p", timeout_s=60, connections=3)
    try:
        first, second = Running(engine, SLOW), Running(engine, SLOW)
        time.sleep(0.3)
        started = time.monotonic()
        assert engine.execute("select 42 x", [], []).to_pylist() == [{"x": 42}]
        assert time.monotonic() - started < 2
        assert first.alive and second.alive
        assert isinstance(first.stop(), QueryCancelledError)
        time.sleep(0.3)
        assert second.alive  # interrupting the first's cursor left the second's running
        assert isinstance(second.stop(), QueryCancelledError)
        assert engine.execute("select 43 x", [], []).to_pylist() == [{"x": 43}]
    finally:
        engine.close()


def test_every_cursor_is_sealed_and_has_the_merge_functions(tmp_path: Path) -> None:
    """A statement on a second cursor (the first busy) reads no path outside the allowed ones and calls the
    engine's scalar functions as the first connection does."""
    canary = tmp_path / "outside.csv"
    canary.write_text("secret\n")
    engine = DuckDBEngine(str(tmp_path / "wh"), "p", timeout_s=60)
    try:
        busy = Running(engine, SLOW)
        time.sleep(0.2)
        with pytest.raises(QueryError):
            engine.execute(f"select * from read_csv('{canary}')", [], [])
        found = engine.execute("select precube_bitmap_count([]::blob[]) n", [], [])
        assert found.to_pylist() == [{"n": 0}]
        assert busy.alive
        assert isinstance(busy.stop(), QueryCancelledError)
    finally:
        engine.close()


def test_a_time_out_stops_a_statement_on_its_cursor_alone(tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p", timeout_s=1.5)
    try:
        first = Running(engine, SLOW)
        time.sleep(0.75)
        second = Running(engine, SLOW)  # its deadline is 0.75 s after the first's
        assert engine.execute("select 42 x", [], []).to_pylist() == [{"x": 42}]  # beside both
        first._thread.join(10)
        assert isinstance(first.error, QueryTimeoutError)
        assert second.alive  # the first's time-out interrupted its own cursor only
        second._thread.join(10)
        assert isinstance(second.error, QueryTimeoutError)
    finally:
        engine.close()


def test_a_statement_run_again_is_prepared_and_answers_the_same(tmp_path: Path) -> None:
    engine, scan = _layout(tmp_path)
    try:
        assert engine.hold(scan)  # held first: the loader changes nothing meanwhile
        for sql in CODED:
            text = sql.format(t=scan.name)
            expected = engine.con.sql(sql.format(t=_files(tmp_path))).to_arrow_table()
            for _ in range(3):  # as text, then prepared, then its prepared statement executed
                assert engine.execute(text, [scan], []).equals(expected)
        cursors = engine._db.connections._made
        assert sum(len(c.statements) for c in cursors) == len(CODED)
    finally:
        engine.close()


def test_prepared_statements_go_when_a_relation_they_read_is_swapped(tmp_path: Path) -> None:
    """A view replaced by the held table (or the table by its view again) drops the statements prepared over it."""
    engine, scan = _layout(tmp_path)
    engine.memory.budget = 0  # the loader holds nothing by itself
    try:
        sql = f'SELECT "2", count(*) c FROM "{scan.name}" GROUP BY 1 ORDER BY 1'
        first = engine.execute(sql, [scan], [])  # over the view
        assert engine.execute(sql, [scan], []).equals(first)
        prepared = [c for c in engine._db.connections._made if c.statements]
        assert [len(c.statements) for c in prepared] == [1]
        assert engine.hold(scan)  # the view swapped for the table
        assert engine.execute(sql, [scan], []).equals(first)  # prepared anew, over the table
        assert len(prepared[0].statements) == 0
        assert engine.execute(sql, [scan], []).equals(first) and len(prepared[0].statements) == 1
    finally:
        engine.close()


def test_a_held_layout_answers_simple_statements_from_its_columns(tmp_path: Path) -> None:
    """Held, a layout is also numpy columns (`direct`) that answer a simple statement as DuckDB does, within the
    window and bounds asked for; evicted, they go with it."""
    engine, scan = _layout(tmp_path)
    engine.memory.budget = 0  # the loader holds nothing by itself
    sql = (
        f'SELECT layout."1" AS v, CAST(SUM(layout."100001") AS BIGINT) AS s FROM {scan.name} AS layout '
        'WHERE layout."2" BETWEEN 3 AND 40 GROUP BY layout."1" ORDER BY v NULLS FIRST'
    )
    try:
        from_files = engine.execute(sql, [scan], [])  # a view over the files: DuckDB answers
        assert engine.direct.layout(scan.name) is None
        assert engine.hold(scan)
        layout = engine.direct.layout(scan.name)
        assert layout is not None and layout.rows == scan.rows
        assert engine.direct.program(sql, layout) is not None  # the form taken: answered from the columns
        found = engine.execute(sql, [scan], [])
        assert found.schema == from_files.schema and found.equals(from_files)
        assert engine.execute(sql, [scan], [], window=Window(1, 2)).equals(from_files.slice(1, 3))  # and the probe
        engine.bounds = ResultBounds(2, 1 << 30)
        with pytest.raises(ResultTooLargeError):
            engine.execute(sql, [scan], [])
        engine.bounds = UNBOUNDED
        other = sql.replace("BETWEEN 3 AND 40", "BETWEEN 3 AND 41")  # a fault of the columns' run: DuckDB answers
        program = engine.direct.program(other, layout)
        assert program is not None
        program.keys = ["no such column"]
        assert engine.execute(other, [scan], []).equals(engine.execute(other.replace("41", "41 + 0"), [scan], []))
        assert engine.direct.program(other, layout) is None  # and runs it from now on
        with engine._lock:
            engine._unhold(engine._db, engine.con, scan.name)  # evicted: the columns go too
        assert engine.direct.layout(scan.name) is None
        assert engine.execute(sql, [scan], []).equals(from_files)
    finally:
        engine.close()
