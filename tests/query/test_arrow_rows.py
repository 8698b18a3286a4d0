"""A small result's tuples laid out as Arrow (`arrow_rows`): equal to DuckDB's own Arrow export of the same
statement for every plain type, NULLs, edge values and random ones, and no pandas imported on the way."""

from __future__ import annotations

import random
import subprocess
import sys

import duckdb
import pyarrow as pa
import pytest

from precube.query import arrow_rows
from precube.query.duckdb_engine import _arrow_type

EDGES = {
    "BOOLEAN": ["true", "false"],
    "TINYINT": ["-128", "127", "0"],
    "SMALLINT": ["-32768", "32767"],
    "INTEGER": ["-2147483648", "2147483647"],
    "BIGINT": ["-9223372036854775808", "9223372036854775807"],
    "HUGEINT": ["-99999999999999999999999999999999999999", "99999999999999999999999999999999999999", "0"],
    "FLOAT": ["'nan'", "'inf'", "-1.5", "3.4e38"],
    "DOUBLE": ["'nan'", "'-inf'", "1e308", "-0.0", "0.1"],
    "VARCHAR": ["''", "'ascii'", "'naïve 数据 🚀'", "'quote '' inside'"],
    "DATE": ["'0001-01-01'", "'1969-12-31'", "'1970-01-01'", "'9999-12-31'"],
    "TIMESTAMP": ["'1969-12-31 23:59:59.999999'", "'1970-01-01 00:00:00'", "'2262-04-11 23:47:16.854775'"],
    "DECIMAL(38,4)": ["-9999999999999999999999999999999999.9999", "0.0001", "-0.0001", "12345.6"],
    "DECIMAL(18,2)": ["-9999999999999999.99", "0.05"],
    "DECIMAL(4,0)": ["-9999", "7"],
}


def _random_literal(kind: str, rng: random.Random) -> str:
    if kind in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT"):
        bits = {"TINYINT": 7, "SMALLINT": 15, "INTEGER": 31, "BIGINT": 63}[kind]
        return str(rng.randrange(-(2**bits), 2**bits))
    if kind == "HUGEINT":
        return str(rng.randrange(-(10**38) + 1, 10**38))
    if kind.startswith("DECIMAL"):
        precision, scale = (int(x) for x in kind[8:-1].split(","))
        unscaled = rng.randrange(-(10**precision) + 1, 10**precision)
        text = f"{abs(unscaled):0{scale + 1}d}"
        return ("-" if unscaled < 0 else "") + (f"{text[:-scale]}.{text[-scale:]}" if scale else text)
    if kind in ("FLOAT", "DOUBLE"):
        return repr(rng.uniform(-1e6, 1e6))
    if kind == "VARCHAR":
        return "'" + "".join(rng.choice("ab é中'") for _ in range(rng.randrange(8))).replace("'", "''") + "'"
    if kind == "DATE":
        return f"DATE '1970-01-01' + {rng.randrange(-700_000, 2_900_000)}"
    if kind == "TIMESTAMP":
        return f"make_timestamp({rng.randrange(-(10**15), 10**15)})"
    return rng.choice(["true", "false"])


@pytest.mark.parametrize("kind", list(EDGES))
def test_each_plain_type_is_laid_out_as_duckdb_exports_it(kind: str) -> None:
    rng = random.Random(kind)
    literals = [*EDGES[kind], "NULL", *(_random_literal(kind, rng) for _ in range(200)), "NULL"]
    con = duckdb.connect()
    sql = " UNION ALL ".join(f"SELECT {i} AS i, CAST({v} AS {kind}) AS v" for i, v in enumerate(literals))
    sql = f"SELECT v FROM ({sql}) ORDER BY i"
    cursor = con.execute(sql)
    arrow_type = _arrow_type(cursor.description[0][1])
    assert arrow_type is not None
    values = [row[0] for row in cursor.fetchall()]
    laid_out = arrow_rows.column(values, arrow_type)
    assert laid_out is not None
    laid_out.validate(full=True)
    exported = con.sql(sql).to_arrow_table().column("v").combine_chunks().cast(arrow_type)
    assert laid_out.type == exported.type and laid_out.null_count == exported.null_count
    # NaN equals NaN here: compare the bytes of each value as the export holds them
    assert laid_out.to_pylist() == exported.to_pylist() or _same_floats(laid_out, exported)


def _same_floats(a: pa.Array, b: pa.Array) -> bool:
    return all(
        (x is None and y is None) or x == y or (x != x and y != y)  # NaN
        for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)
    )


def test_empty_and_all_null_columns() -> None:
    for arrow_type in (pa.int64(), pa.string(), pa.decimal128(38, 2), pa.bool_(), pa.date32()):
        for values in ([], [None, None, None]):
            found = arrow_rows.column(values, arrow_type)
            assert found is not None
            found.validate(full=True)
            assert found.type == arrow_type and found.to_pylist() == values


def test_a_decimal_finer_than_its_scale_or_wider_than_its_precision_is_left_to_pyarrow() -> None:
    from decimal import Decimal

    assert arrow_rows.column([Decimal("1.005")], pa.decimal128(10, 2)) is None
    assert arrow_rows.column([10**38], pa.decimal128(38, 0)) is None  # a HUGEINT past 38 digits
    assert arrow_rows.column([Decimal("NaN")], pa.decimal128(10, 2)) is None
    found = arrow_rows.column([Decimal("1.50"), Decimal("2"), Decimal("-3E+1")], pa.decimal128(10, 2))
    assert found is not None and [str(v) for v in found.to_pylist()] == ["1.50", "2.00", "-30.00"]


def test_a_small_answer_imports_no_pandas() -> None:
    """pyarrow's converters from Python objects import pandas when it is installed (seconds in a process's
    first answers): the engine's tuple path does not use them."""
    script = (
        "import sys, tempfile\n"
        "from precube.query.duckdb_engine import DuckDBEngine\n"
        "engine = DuckDBEngine(tempfile.mkdtemp(), 'p')\n"
        "for i in range(3):\n"
        "    t = engine.execute(\"select 1 as a, 'x' as b, 1.5::decimal(10,2) as c, date '2020-01-01' as d\", [], [])\n"
        "assert t.num_rows == 1, t\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
