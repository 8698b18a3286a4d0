"""SQL-level cursors' movement (`pgwire/cursors.py`) as PostgreSQL moves one, and the statements that declare,
fetch, move and close them and PREPARE / EXECUTE / DEALLOCATE, as the wire reads them."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot

from precube.server.pgwire import placeholders
from precube.server.pgwire.cursors import ALL, Cursor, Direction
from precube.server.pgwire.sqlstate import PgError
from precube.server.pgwire.statements import Kind, classify


def _cursor(rows: int = 5, scroll: bool = True) -> Cursor:
    return Cursor(pa.table({"n": list(range(1, rows + 1))}), hold=False, scroll=scroll, binary=False)


def _fetch(cursor: Cursor, direction: str) -> list[int]:
    indexes, moved = cursor.move("c", Direction.of(direction))
    assert moved == len(indexes)
    return cursor.rows(indexes).column("n").to_pylist()


def test_fetch_and_move_go_as_postgresql_goes() -> None:
    cursor = _cursor()
    assert _fetch(cursor, "FORWARD 2") == [1, 2] and cursor.position == 2
    assert _fetch(cursor, "") == [3]
    assert _fetch(cursor, "BACKWARD 2") == [2, 1] and cursor.position == 1
    assert _fetch(cursor, "ALL") == [2, 3, 4, 5] and cursor.position == 6  # after the last row
    assert _fetch(cursor, "NEXT") == [] and cursor.position == 6
    assert _fetch(cursor, "PRIOR") == [5]
    assert _fetch(cursor, "ABSOLUTE 2") == [2] and _fetch(cursor, "LAST") == [5] and _fetch(cursor, "FIRST") == [1]
    assert _fetch(cursor, "RELATIVE 3") == [4] and _fetch(cursor, "ABSOLUTE -2") == [4]
    assert _fetch(cursor, "FORWARD 10") == [5] and cursor.position == 6
    assert cursor.move("c", Direction("absolute", 0)) == ([], 0) and cursor.position == 0
    assert cursor.move("c", Direction("forward", ALL)) == ([0, 1, 2, 3, 4], 5)  # MOVE ALL's tag: MOVE 5


def test_a_no_scroll_cursor_goes_forward_only() -> None:
    cursor = _cursor(scroll=False)
    assert _fetch(cursor, "FORWARD 3") == [1, 2, 3]
    with pytest.raises(PgError) as refused:
        _fetch(cursor, "PRIOR")
    assert refused.value.sqlstate == "55000"
    with pytest.raises(PgError):
        Direction.of("SIDEWAYS 2")


def test_the_statements_are_read_as_psycopg_and_psycopg2_send_them() -> None:
    declared = classify('DECLARE "c1" NO SCROLL CURSOR WITH HOLD FOR select a from t where b = $1', 100)
    assert (declared.kind, declared.name, declared.hold, declared.scroll, declared.params) == (
        Kind.DECLARE, "c1", True, False, 1,
    )  # fmt: skip
    assert classify("declare C binary cursor without hold for select 1", 100).binary
    fetched = classify('FETCH FORWARD 2000 FROM "c1"', 100)
    assert (fetched.kind, fetched.name, fetched.direction) == (Kind.FETCH, "c1", Direction("forward", 2000))
    assert classify("MOVE ABSOLUTE 5 FROM c", 100).direction == Direction("absolute", 5)
    assert classify("fetch all in C", 100).name == "c"  # folded to lower case unless quoted
    assert classify("CLOSE ALL", 100).name == "ALL" and classify('close "Mixed"', 100).name == "Mixed"
    prepared = classify("PREPARE q (int, text) AS select $1 + 1, $2", 100)
    assert (prepared.kind, prepared.types, prepared.inner and prepared.inner.params) == (Kind.PREPARE, (23, 25), 2)
    assert classify("PREPARE q (numeric(10, 2), date) AS select $1, $2", 100).types == (1700, 1082)
    executed = classify("EXECUTE q (1, 'it''s')", 100)
    assert (executed.kind, executed.name, len(executed.args)) == (Kind.EXECUTE, "q", 2)
    assert classify("deallocate prepare Q", 100).name == "q"
    with pytest.raises(PgError) as refused:
        classify("PREPARE q AS set x = 1", 100)
    assert refused.value.sqlstate == "42601"


def test_execute_arguments_bind_as_values_never_as_text() -> None:
    def bound(arg: str, oid: int = 0) -> str:
        return placeholders.argument(sqlglot.parse_one(f"select {arg}", read="postgres").expressions[0], oid).sql()

    assert bound("'x'' or 1=1 --'") == "'x'' or 1=1 --'"
    assert bound("-5") == "-5" and bound("2.50") == "2.50" and bound("NULL") == "NULL" and bound("true") == "TRUE"
    assert bound("'12'", 23) == "12" and bound("'1995-01-02'::date") == "CAST('1995-01-02' AS DATE)"
    for bad, oid in (("'x'", 23), ("1 + 1", 0), ("(select 1)", 0)):
        with pytest.raises(PgError) as refused:
            bound(bad, oid)
        assert refused.value.sqlstate in ("22P02", "0A000")
