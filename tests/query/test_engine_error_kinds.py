"""An engine's failure becomes the error class of its kind (`query.engine_errors`), so every door answers it
with PostgreSQL's SQLSTATE for the same error: DuckDB's by exception class and, for its broad classes, by what
the message says; Spark's by its error condition."""

from __future__ import annotations

import duckdb
import pytest

from precube.query.engine_errors import _spark_kind, query_error
from precube.query.errors import EngineError
from precube.service.errors import disposition

DUCKDB = [  # (statement DuckDB refuses, PostgreSQL's SQLSTATE for it)
    ("select 1 // 0", "22012"),
    ("select cast('abc' as int)", "22P02"),
    ("select 1000::tinyint", "22003"),
    ("select 9223372036854775807::bigint + 1", "22003"),
    ("select nope", "42703"),
    ("select nope(1)", "42883"),
    ("select lower(1, 2)", "42883"),
    ("select * from nope", "42P01"),
    ("select x.a from (select 1 a) y", "42P01"),
    ("select a from (select 1 a) x, (select 2 a) y", "42702"),
    ("select 'a'::date", "22P02"),  # PostgreSQL: invalid input syntax for type date
]


@pytest.mark.parametrize(("sql", "sqlstate"), DUCKDB, ids=[s for s, _ in DUCKDB])
def test_a_duckdb_failure_gets_postgresqls_sqlstate(sql: str, sqlstate: str) -> None:
    with pytest.raises(duckdb.Error) as raised:
        duckdb.connect().sql(sql).fetchall()
    found = query_error(raised.value)
    assert disposition(found).sqlstate == sqlstate, found
    assert "\n" not in found.message and found.message  # one line: DuckDB's, or precube's words for a type error


class _SparkError(Exception):
    """Stands in for pyspark's exceptions: their error condition is all the mapping reads."""

    def __init__(self, condition: str) -> None:
        super().__init__(condition)
        self.condition = condition

    def getCondition(self) -> str:  # noqa: N802 - pyspark's name
        return self.condition


@pytest.mark.parametrize(
    ("condition", "sqlstate"),
    [
        ("UNRESOLVED_COLUMN.WITH_SUGGESTION", "42703"),
        ("TABLE_OR_VIEW_NOT_FOUND", "42P01"),
        ("UNRESOLVED_ROUTINE", "42883"),
        ("AMBIGUOUS_REFERENCE", "42702"),
        ("DIVIDE_BY_ZERO", "22012"),
        ("CAST_INVALID_INPUT", "22P02"),
        ("ARITHMETIC_OVERFLOW", "22003"),
        ("DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES", "42804"),
        ("INTERNAL_ERROR", "22000"),
    ],
)
def test_a_spark_failure_gets_postgresqls_sqlstate_by_its_condition(condition: str, sqlstate: str) -> None:
    kind = _spark_kind(_SparkError(condition))
    assert disposition(kind("m")).sqlstate == sqlstate
    assert issubclass(kind, EngineError) == (sqlstate[:2] == "22" or sqlstate == "42804")  # a data error
