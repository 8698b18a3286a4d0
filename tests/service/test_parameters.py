"""The parameter binder: every supported value's literal reads back as that value — parsed in precube's dialect and
in Spark's (where a backslash escapes), typed as Spark types it, and evaluated by DuckDB after sqlglot writes it
out for DuckDB — hostile strings, NULs, the widest numbers and NaN included; what has no exact literal is refused;
and the module loads no engine (the DB-API's remote half imports it)."""

from __future__ import annotations

import datetime as dt
import math
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import duckdb
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from precube.errors import InvalidInputError
from precube.modeling.spark_types import literal_type
from precube.query.dialect import DIALECT
from precube.service.parameters import ParameterError, Real, literal, literal_sql

HOSTILE = [
    "",
    "it's",
    "''",
    "' or 1=1 --",
    "'; drop table t; --",
    "back\\slash",
    "ends in a backslash\\",
    "\\'",
    "\\\\'",
    "\\0 \\n \\t \\u0041 \\x41",
    '" or ""="',
    "`name`",
    "$1 ? :a %s %(a)s",
    "/* not a comment */ -- nor this",
    "nul\x00inside",
    "\x00",
    "line\nbreak\r\ttab\x1b\x7f",
    "unicode é 中 🙂 \u200b \ufeff",
]


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")  # Spark's TIMESTAMP is written as DuckDB's TIMESTAMPTZ
    yield con
    con.close()


def _read_back(value: Any) -> exp.Expr:
    """The literal's node, as precube's dialect reads its text back; Spark's reading writes out the same text."""
    text = literal_sql(value)
    for reader in (DIALECT, "spark"):  # Spark's own: a backslash in a string is an escape there too
        assert sqlglot.parse_one(text, read=reader).sql(dialect=DIALECT) == text
    return sqlglot.parse_one(text, read=DIALECT)


def _in_duckdb(con: duckdb.DuckDBPyConnection, value: Any) -> tuple[Any, str]:
    """The value DuckDB computes for the literal, and its type."""
    [sql] = sqlglot.transpile(f"SELECT {literal_sql(value)}", read=DIALECT, write="duckdb")
    result = con.execute(sql)
    [row] = result.fetchall()
    assert result.description is not None
    return row[0], str(result.description[0][1])


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_a_string_reads_back_as_itself(value: str, duck: duckdb.DuckDBPyConnection) -> None:
    node = _read_back(value)
    assert isinstance(node, exp.Literal) and node.is_string and node.this == value
    assert _in_duckdb(duck, value) == (value, "VARCHAR")


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_a_string_cannot_escape_its_literal(value: str) -> None:
    tree = sqlglot.parse_one(f"SELECT a FROM t WHERE b = {literal_sql(value)} AND c = 2", read=DIALECT)
    where = tree.find(exp.Where)
    assert where is not None and isinstance(where.this, exp.And)
    assert where.this.left == exp.EQ(this=exp.column("b"), expression=exp.Literal.string(value))
    assert where.this.right.sql(dialect=DIALECT) == "c = 2"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_any_text_reads_back_as_itself(duck: duckdb.DuckDBPyConnection, value: str) -> None:
    node = _read_back(value)
    assert isinstance(node, exp.Literal) and node.this == value
    assert _in_duckdb(duck, value)[0] == value


@pytest.mark.parametrize(
    ("value", "spark_type", "duckdb_type"),
    [
        (0, "INT", "INTEGER"),
        (-7, "INT", "INTEGER"),
        (2**31 - 1, "INT", "INTEGER"),
        (2**31, "BIGINT", "BIGINT"),
        (-(2**63 - 1), "BIGINT", "BIGINT"),
        (2**63 - 1, "BIGINT", "BIGINT"),
        (2**63, "DECIMAL(19, 0)", "HUGEINT"),
        (10**38 - 1, "DECIMAL(38, 0)", "HUGEINT"),
        (-(10**38 - 1), "DECIMAL(38, 0)", "HUGEINT"),
        (Decimal("12.50"), "DECIMAL(4, 2)", "DECIMAL(4,2)"),
        (Decimal("-12345.678"), "DECIMAL(8, 3)", "DECIMAL(8,3)"),
        (Decimal("0.001"), "DECIMAL(3, 3)", "DECIMAL(4,3)"),
        (Decimal("-0.50"), "DECIMAL(2, 2)", "DECIMAL(3,2)"),
        (Decimal("1E-7"), "DECIMAL(7, 7)", "DECIMAL(8,7)"),  # written 0.0000001: `1E-7` would be a DOUBLE
        (Decimal("1E+3"), "INT", "INTEGER"),
        (Decimal("0." + "9" * 37), "DECIMAL(37, 37)", "DECIMAL(38,37)"),
        (Decimal("-" + "1" * 20 + "." + "1" * 18), "DECIMAL(38, 18)", "DECIMAL(38,18)"),
    ],
)
def test_a_number_keeps_its_exact_digits(
    value: int | Decimal, spark_type: str, duckdb_type: str, duck: duckdb.DuckDBPyConnection
) -> None:
    node = _read_back(value)
    number = node.this if isinstance(node, exp.Neg) else node
    assert isinstance(number, exp.Literal) and not number.is_string
    assert isinstance(node, exp.Neg) == (value < 0)
    found = literal_type(number)
    assert found is not None and found.sql(dialect="spark") == spark_type
    answer, kind = _in_duckdb(duck, value)
    assert kind == duckdb_type and answer == value
    if isinstance(answer, Decimal):
        assert format(answer, "f") == format(value, "f")  # the scale too: 12.50, not 12.5


@pytest.mark.parametrize(
    "value",
    [10**38, -(10**38), 10**5000, Decimal("1E+38"), Decimal("0." + "1" * 38), Decimal("1E+999999999")],
    ids=["1e38", "-1e38", "1e5000", "decimal 1e38", "38 fraction digits", "decimal 1e999999999"],
)
def test_a_number_wider_than_decimal_is_refused(value: int | Decimal, duck: duckdb.DuckDBPyConnection) -> None:
    """Spark and DuckDB read such text as a DOUBLE (or not at all): its digits would be lost."""
    if isinstance(value, Decimal) and value.adjusted() < 0:  # what the refusal prevents
        assert duck.execute(f"SELECT {format(value, 'f')}").description[0][1] == "DOUBLE"
    with pytest.raises(ParameterError, match="digits; SQL's DECIMAL holds 38"):
        literal(value)


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("sNaN"), Decimal("Infinity"), Decimal("-Infinity")])
def test_a_decimal_that_is_no_number_is_refused(value: Decimal) -> None:
    with pytest.raises(ParameterError, match="has no SQL literal"):
        literal(value)


@pytest.mark.parametrize(
    "value",
    [0.0, 1.5, -0.1, 0.1 + 0.2, 1e300, -5e-324, 2.0**53 + 2, 1 / 3, math.pi],
)
def test_a_float_is_a_double_of_the_same_bits(value: float, duck: duckdb.DuckDBPyConnection) -> None:
    node = _read_back(value)
    assert isinstance(node, exp.Cast) and node.to.sql(dialect="spark") == "DOUBLE"
    assert _in_duckdb(duck, value) == (value, "DOUBLE")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -0.0])
def test_a_float_that_is_no_number_or_a_negative_zero(value: float, duck: duckdb.DuckDBPyConnection) -> None:
    node = _read_back(value)
    assert isinstance(node, exp.Cast) and node.to.sql(dialect="spark") == "DOUBLE" and node.this.is_string
    answer, kind = _in_duckdb(duck, value)
    assert kind == "DOUBLE"
    if math.isnan(value):
        assert math.isnan(answer)
    else:
        assert answer == value and math.copysign(1, answer) == math.copysign(1, value)


@pytest.mark.parametrize("value", [0.1, 3.4028234663852886e38, math.nan, -math.inf])
def test_a_real_is_a_single_precision_float(value: float, duck: duckdb.DuckDBPyConnection) -> None:
    node = _read_back(Real(value))
    assert isinstance(node, exp.Cast) and node.to.sql(dialect="spark") == "FLOAT"
    answer, kind = _in_duckdb(duck, Real(value))
    single = duck.execute("SELECT ?::REAL", [value]).fetchall()[0][0]
    assert kind == "FLOAT" and (answer == single or (math.isnan(answer) and math.isnan(single)))


def test_null_and_booleans(duck: duckdb.DuckDBPyConnection) -> None:
    assert _read_back(None) == exp.null() and literal_sql(None) == "NULL"
    assert _in_duckdb(duck, None)[0] is None
    for value in (True, False):
        assert _read_back(value) == exp.Boolean(this=value)
        assert _in_duckdb(duck, value) == (value, "BOOLEAN")  # not 1 or 0: a bool is checked before an int


@pytest.mark.parametrize(
    "value", [b"", b"\x00\xff'", b"\\'\x00", bytearray(b"ab"), memoryview(b"\x01\x02")], ids=range(5)
)
def test_bytes_are_binary(value: bytes | bytearray | memoryview, duck: duckdb.DuckDBPyConnection) -> None:
    assert isinstance(_read_back(value), exp.HexString)
    assert _in_duckdb(duck, value) == (bytes(value), "BLOB")


@pytest.mark.parametrize("value", [dt.date(2024, 2, 29), dt.date(1, 1, 1), dt.date(9999, 12, 31)])
def test_a_date_is_a_date(value: dt.date, duck: duckdb.DuckDBPyConnection) -> None:
    assert literal_sql(value) == f"CAST('{value.isoformat()}' AS DATE)"
    _read_back(value)
    assert _in_duckdb(duck, value) == (value, "DATE")


@pytest.mark.parametrize(
    ("value", "utc"),
    [
        (dt.datetime(1995, 3, 1, 12, 30, 15, 250000), dt.datetime(1995, 3, 1, 12, 30, 15, 250000)),
        (dt.datetime(2024, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))), dt.datetime(2023, 12, 31, 23, 0)),
        (dt.datetime(2024, 6, 1, 12, 0, 0, 1, tzinfo=dt.UTC), dt.datetime(2024, 6, 1, 12, 0, 0, 1)),
        (dt.datetime(1, 1, 1), dt.datetime(1, 1, 1)),
    ],
)
def test_a_datetime_is_a_utc_timestamp(value: dt.datetime, utc: dt.datetime, duck: duckdb.DuckDBPyConnection) -> None:
    """precube's timestamps are UTC: an aware datetime is moved to UTC, a naive one is taken as UTC."""
    assert literal_sql(value) == f"CAST('{utc.isoformat(sep=' ')}' AS TIMESTAMP)"
    _read_back(value)
    answer, _ = _in_duckdb(duck, value)
    assert answer == utc.replace(tzinfo=dt.UTC)


def test_an_aware_datetime_out_of_range_in_utc_is_refused() -> None:
    with pytest.raises(ParameterError, match="out of range in UTC"):
        literal(dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=2))))


def test_a_time_is_text(duck: duckdb.DuckDBPyConnection) -> None:
    """Spark SQL has no TIME type."""
    value = dt.time(12, 30, 15, 5)
    assert _read_back(value) == exp.Literal.string("12:30:15.000005")
    assert _in_duckdb(duck, value) == ("12:30:15.000005", "VARCHAR")


@pytest.mark.parametrize(
    "value",
    [[1, 2], (1,), {"a": 1}, {1}, dt.timedelta(days=1), 1j, object(), Decimal, str],
    ids=["list", "tuple", "dict", "set", "timedelta", "complex", "object", "a type", "another type"],
)
def test_other_types_are_refused(value: object) -> None:
    with pytest.raises(ParameterError, match="cannot be bound") as refused:
        literal(value)
    assert isinstance(refused.value, InvalidInputError) and refused.value.code == "INVALID_INPUT"


def test_the_binder_loads_no_engine() -> None:
    """The DB-API's remote half binds with it, in a process with no engine, store or JVM."""
    heavy = ("duckdb", "pyspark", "pyarrow", "precube.metadata", "precube.query.session", "precube.cache")
    code = f"import sys, precube.service.parameters; print([m for m in {heavy!r} if m in sys.modules])"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]", shown.stderr
