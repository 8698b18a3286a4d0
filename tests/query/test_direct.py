"""Direct answers (`query.direct`): statements of the simple form over a held layout's numpy columns answer
exactly as DuckDB answers the same text over the same rows — values, order, NULLs and Arrow types — and every
other form is declined (DuckDB runs it). Random statements over a layout with NULLs, negative numbers, coded
and plain strings are the main check; the oracle is DuckDB's own answer through the engine's fetch."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from precube.query import direct
from precube.query.direct import DeclinedError, compile_statement
from precube.query.direct_columns import DirectLayout, direct_layout
from precube.query.duckdb_engine import DuckDBEngine
from precube.query.session import Session
from precube.service.admission import Limits
from precube.service.principal import Principal
from precube.service.queries import QueryService, RunOptions
from precube.service.sessions import Sessions
from precube.settings import QuerySettings
from tests.query.conftest import QueryModel
from tests.query.oracle import Oracle, assert_same, load_case

CASES = Path(__file__).parent / "cases"
NAME = "layout_1_test"
SORT_BY = ("1", "2", "3", "4")
STRINGS = ["", "a", "b'q", "MFGR#12", "MFGR#2", "é", "z"]
ROWS = """SELECT
    (['ASIA', 'AMERICA', 'EUROPE', 'AFRICA'])[1 + i % 4]::ENUM('AFRICA', 'AMERICA', 'ASIA', 'EUROPE') AS "1",
    ((i * 7) % 23 - 3)::integer AS "2",
    CASE WHEN i % 13 = 0 THEN NULL ELSE (['', 'a', 'b''q', 'MFGR#12', 'MFGR#2', 'é', 'z'])[1 + i % 7] END AS "3",
    CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 31 % 11)::bigint - 5 END AS "4",
    CASE WHEN i % 19 = 0 THEN NULL ELSE (i * 7919 % 100003)::bigint - 50000 END AS "100001",
    (i % 1000)::integer AS "100002",
    CASE WHEN i < 4000 THEN NULL ELSE i::bigint END AS "100003"
FROM range(5000) t(i)
ORDER BY "1" NULLS FIRST, "2" NULLS FIRST, "3" NULLS FIRST, "4" NULLS FIRST"""
DIMENSIONS = ["1", "2", "3", "4"]
MEASURES = ["100001", "100002", "100003"]
TEXT = {"1", "3"}


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> tuple[DuckDBEngine, DirectLayout]:
    engine = DuckDBEngine(str(tmp_path_factory.mktemp("direct")), "p")
    engine.con.execute(f'CREATE TABLE "{NAME}" AS {ROWS}')
    table = engine.con.sql(f'SELECT * FROM "{NAME}"').to_arrow_table()
    layout = direct_layout(NAME, table, SORT_BY)
    assert layout is not None
    yield engine, layout
    engine.close()


def _check(engine: DuckDBEngine, layout: DirectLayout, sql: str) -> bool:
    """Whether `sql` was compiled; if so, its answer equals DuckDB's."""
    try:
        program = compile_statement(sql, layout)
    except DeclinedError:
        return False
    found = program.run(layout)
    expected = engine._fetch(engine.con, sql)
    assert found.schema == expected.schema, sql
    assert found.to_pylist() == expected.to_pylist(), sql
    return True


def test_sort_prefix_is_the_leading_columns_without_nulls(held: tuple[DuckDBEngine, DirectLayout]) -> None:
    _, layout = held
    assert layout.sorted_by == ("1", "2")  # "3" has NULLs: no binary search on it
    assert layout.columns["1"].words == ["AFRICA", "AMERICA", "ASIA", "EUROPE"]


FIXED = [
    'SELECT CAST(SUM(layout."100001") AS BIGINT) AS s FROM layout_1_test AS layout',
    'SELECT CAST(SUM(layout."100003") AS BIGINT) AS s, COUNT(*) AS n FROM layout_1_test AS layout WHERE layout."2" < 0',
    'SELECT CAST(SUM("100001") AS BIGINT) AS s FROM layout_1_test WHERE "1" = \'ASIA\' AND "2" BETWEEN 3 AND 5',
    'SELECT CAST(SUM("100001") AS BIGINT) AS s FROM layout_1_test WHERE "1" = \'nowhere\'',
    'SELECT "3" AS c, COUNT("4") AS n, MIN("4") AS lo, MAX("3") AS hi FROM layout_1_test GROUP BY "3" '
    "ORDER BY c NULLS FIRST",
    'SELECT "4", "3", CAST(SUM("100001") AS BIGINT) - CAST(SUM("100002") AS BIGINT) AS p FROM layout_1_test '
    'GROUP BY "4", "3" ORDER BY "4" DESC NULLS LAST, "3" NULLS FIRST LIMIT 7 OFFSET 3',
    'SELECT "2" AS y FROM layout_1_test WHERE ("1" = \'ASIA\' OR "1" = \'EUROPE\') AND "2" IN (1, 2, 19) '
    'GROUP BY "2" ORDER BY y',
    'SELECT "1" AS r, CAST(SUM("100003") AS BIGINT) AS s FROM layout_1_test WHERE NOT ("3" <> \'a\') '
    'GROUP BY "1" ORDER BY s DESC, r',
    'SELECT "3" AS c, COUNT(*) AS n FROM layout_1_test WHERE "3" IS NULL OR "4" IS NOT NULL AND "4" > -2 '
    'GROUP BY "3" ORDER BY c NULLS LAST',
    'SELECT COUNT(*) AS n FROM layout_1_test WHERE "2" > 100',  # nothing: one row, 0
    'SELECT "1" AS r, COUNT(*) AS n FROM layout_1_test WHERE "2" > 100 GROUP BY "1"',  # nothing: no rows
    'SELECT MIN("100003") AS lo, CAST(SUM("100003") AS BIGINT) AS s FROM layout_1_test WHERE "2" = 0',
]


@pytest.mark.parametrize("sql", FIXED)
def test_fixed_statements_answer_as_duckdb(held: tuple[DuckDBEngine, DirectLayout], sql: str) -> None:
    engine, layout = held
    assert _check(engine, layout, sql), "declined"


DECLINED = [
    'SELECT SUM("100001") AS s FROM layout_1_test',  # a HUGEINT: DuckDB's type, not taken
    "SELECT COUNT(*) FROM layout_1_test",  # no name: DuckDB names it after its text
    'SELECT COUNT(DISTINCT "3") AS n FROM layout_1_test',
    'SELECT "1" AS r, COUNT(*) AS n FROM layout_1_test GROUP BY "1" HAVING COUNT(*) > 3',
    'SELECT DISTINCT "1" AS r FROM layout_1_test',
    'SELECT "1" AS r FROM layout_1_test',  # no aggregation
    "SELECT COUNT(*) AS n FROM layout_1_test WHERE \"2\" = '3'",  # a string compared with an integer
    "SELECT COUNT(*) AS n FROM layout_1_test WHERE \"3\" LIKE 'a%'",
    'SELECT COUNT(*) AS n FROM layout_1_test WHERE "2" = 2.5',
    'SELECT COUNT(*) AS n FROM layout_1_test a JOIN layout_1_test b ON a."2" = b."2"',
    "SELECT COUNT(*) AS n FROM other_table",
    'SELECT "2" + 1 AS y, COUNT(*) AS n FROM layout_1_test GROUP BY "2"',  # INTEGER arithmetic
    'SELECT COUNT(*) AS n FROM layout_1_test WHERE "2" IN (1, NULL)',
]


@pytest.mark.parametrize("sql", DECLINED)
def test_other_forms_are_declined(held: tuple[DuckDBEngine, DirectLayout], sql: str) -> None:
    engine, layout = held
    assert not _check(engine, layout, sql)
    engine._fetch(engine.con, sql.replace("other_table", NAME))  # DuckDB answers it (a valid statement)


def _literal(rng: random.Random, column: str) -> str:
    if rng.random() < 0.05:
        return "NULL"
    if column in TEXT:
        word = rng.choice([*STRINGS, "ASIA", "EUROPE", "AMERICA", "ANTARCTICA", "A", "zz"])
        return "'" + word.replace("'", "''") + "'"
    return str(rng.randint(-8, 22))


def _predicate(rng: random.Random, depth: int = 0) -> str:
    if depth < 2 and rng.random() < 0.35:
        joiner = rng.choice([" AND ", " OR "])
        return "(" + joiner.join(_predicate(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    if depth < 2 and rng.random() < 0.1:
        return f"NOT ({_predicate(rng, depth + 1)})"
    column = rng.choice(DIMENSIONS + MEASURES)
    ref = f'layout."{column}"'
    kind = rng.random()
    if kind < 0.45:
        op = rng.choice(["=", "<>", "<", "<=", ">", ">="])
        return f"{ref} {op} {_literal(rng, column)}" if rng.random() < 0.8 else f"{_literal(rng, column)} {op} {ref}"
    if kind < 0.6:
        return f"{ref} BETWEEN {_literal(rng, column)} AND {_literal(rng, column)}"
    if kind < 0.85:
        values = {_literal(rng, column) for _ in range(rng.randint(1, 4))} - {"NULL"}
        return f"{ref} IN ({', '.join(sorted(values)) or _literal(rng, column).replace('NULL', '1')})"
    return f"{ref} IS {rng.choice(['', 'NOT '])}NULL"


def _aggregate(rng: random.Random) -> str:
    kind = rng.random()
    measure = rng.choice(MEASURES)
    if kind < 0.35:
        return f'CAST(SUM(layout."{measure}") AS BIGINT)'
    if kind < 0.5:
        return "COUNT(*)"
    if kind < 0.6:
        return f'COUNT(layout."{rng.choice(DIMENSIONS + MEASURES)}")'
    if kind < 0.8:
        return f'{rng.choice(["MIN", "MAX"])}(layout."{rng.choice(DIMENSIONS + MEASURES)}")'
    other = rng.choice(MEASURES)
    return f'CAST(SUM(layout."{measure}") AS BIGINT) {rng.choice("+-")} CAST(SUM(layout."{other}") AS BIGINT)'


def _statement(rng: random.Random) -> str:
    keys = rng.sample(DIMENSIONS, rng.randint(0, 3))
    outputs = [(f'layout."{k}"', f"k{i}") for i, k in enumerate(keys)]
    outputs += [(_aggregate(rng), f"a{i}") for i in range(rng.randint(1 if not keys else 0, 3))]
    rng.shuffle(outputs)
    sql = "SELECT " + ", ".join(f"{e} AS {n}" for e, n in outputs) + f" FROM {NAME} AS layout"
    if rng.random() < 0.8:
        sql += " WHERE " + " AND ".join(_predicate(rng) for _ in range(rng.randint(1, 3)))
    if keys:
        sql += " GROUP BY " + ", ".join(f'layout."{k}"' for k in keys)
    names = [n for _, n in outputs]
    rng.shuffle(names)  # every output in the order: ties are equal rows, so both engines agree on the order
    order = [f"{n} {rng.choice(['', 'ASC', 'DESC'])} {rng.choice(['', 'NULLS FIRST', 'NULLS LAST'])}" for n in names]
    sql += " ORDER BY " + ", ".join(order)
    if rng.random() < 0.3:
        sql += f" LIMIT {rng.randint(0, 12)}" + (f" OFFSET {rng.randint(1, 5)}" if rng.random() < 0.5 else "")
    return sql


def test_random_statements_answer_as_duckdb(held: tuple[DuckDBEngine, DirectLayout]) -> None:
    engine, layout = held
    rng = random.Random(20261128)
    statements = [_statement(rng) for _ in range(400)]
    taken = sum(_check(engine, layout, sql) for sql in statements)
    assert taken >= 0.9 * len(statements)  # the form is the common one: nearly all are taken, not declined


def test_columns_of_other_types_are_left_to_duckdb() -> None:
    table = pa.table({"1": pa.array([1.5, 2.5]), "2": pa.array([1, 2], pa.int32()), "100001": pa.array([1, 2])})
    layout = direct_layout("layout_2_x", table, ("1", "2"))
    assert layout is not None and set(layout.columns) == {"2", "100001"} and layout.sorted_by == ()
    with pytest.raises(DeclinedError):
        compile_statement('SELECT "1" AS a, COUNT(*) AS n FROM layout_2_x GROUP BY "1"', layout)
    sql = 'SELECT "2" AS a, COUNT(*) AS n FROM layout_2_x GROUP BY "2" ORDER BY a'
    oracle = duckdb.connect()
    oracle.register("layout_2_x", table)
    assert compile_statement(sql, layout).run(layout).equals(oracle.sql(sql).to_arrow_table())
    assert direct_layout("layout_3_x", pa.table({"1": pa.array([1.5])}), ("1",)) is None


def test_a_scan_past_the_bound_is_declined(
    held: tuple[DuckDBEngine, DirectLayout], monkeypatch: pytest.MonkeyPatch
) -> None:
    """More rows to read than `SCAN_MAX_ROWS`, after the sort key narrowed them: DuckDB's statement."""
    engine, layout = held
    monkeypatch.setattr(direct, "SCAN_MAX_ROWS", 1000)
    narrow = 'SELECT COUNT(*) AS n FROM layout_1_test WHERE "1" = \'ASIA\' AND "2" = 4'  # ~54 rows
    wide = 'SELECT COUNT(*) AS n FROM layout_1_test WHERE "2" = 4'  # ~220 rows, but all 5,000 read
    assert _check(engine, layout, narrow)
    with pytest.raises(DeclinedError):
        compile_statement(wide, layout).run(layout)


@pytest.mark.spark
def test_a_direct_answer_is_given_at_once_in_the_callers_thread(query_model: QueryModel, oracle: Oracle) -> None:
    """The service's fast lane answers a statement planned before, over a layout held as numpy columns, in the
    caller's thread (an event loop's), equal to the oracle; anything else goes to the executor."""
    case = load_case(CASES / "ssb_q3_1.sql")
    # the metadata's change counter read at most a minute before is current: the lane never asks the store
    settings = QuerySettings(metadata_check_ms=60_000)
    with Session(*query_model.session_args, history=None, settings=settings) as session:
        service = QueryService(Sessions.of(session), None, Limits.of(session.settings))
        principal = Principal("analyst", query_model.project, trusted=True)
        try:
            assert service.answer_from_memory(principal, case.sql) is None  # never planned
            first = service.execute(principal, case.sql)  # planned (in this thread: `run_here`)
            assert first.plan is not None
            assert service.answer_from_memory(principal, case.sql) is None  # read from its files
            for scan in first.plan.scans:
                assert session.duckdb.hold(scan)
            session.metadata.get(query_model.project)  # the counter read (a server's statements read it)
            found = service.answer_from_memory(principal, case.sql)
            assert found is not None and not service._executor._threads  # no executor thread was started
            assert_same(case, oracle.run(case.sql), found.table)
            assert service.answer_from_memory(principal, case.sql, RunOptions(engine="spark")) is None
            assert service.answer_from_memory(principal, case.sql, RunOptions(force_pushdown=True)) is None
        finally:
            service.close()
