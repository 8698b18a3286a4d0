"""TPC-H's aggregate queries on the TPC-H model (`conftest`): each answer equals Spark SQL's on the source
tables exactly — the same types, DECIMAL precision and scale included, and the same values digit for digit —,
equals DuckDB's on the raw files within DuckDB's own types, and is answered as its file's `-- answer:` line
says (from an aggregate layout, a table index, or the source tables)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest
import sqlglot

from precube import tpch
from precube.query.session import QueryResult, Session
from tests.tpch.conftest import TpchModel

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

_ANSWER = re.compile(r"^--\s*answer:\s*(layout|table index|pushdown)\s*$", re.MULTILINE)


def expected_answer(path: Path) -> str:
    found = _ANSWER.search(path.read_text(encoding="utf-8"))
    assert found is not None, f"{path.name} needs an `-- answer: layout|table index|pushdown` line"
    return found.group(1)


def answered_by(result: QueryResult) -> str:
    if result.pushdown:
        return "pushdown"
    return "table index" if any(m.layout.is_table_index for m in result.matches) else "layout"


@pytest.fixture(scope="module")
def session(tpch_model: TpchModel, spark: SparkSession) -> Iterator[Session]:
    with Session(*tpch_model.session_args, spark=lambda: spark) as found:
        yield found


@pytest.fixture(scope="module")
def raw(tpch_model: TpchModel) -> Iterator[duckdb.DuckDBPyConnection]:
    """DuckDB over the generated files, independent of precube."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA tpch")
    for table in tpch.TABLES:
        files = str(tpch_model.data / table / "*.parquet").replace("'", "''")
        con.execute(f"CREATE VIEW tpch.{table} AS SELECT * FROM read_parquet('{files}')")
    con.execute("USE tpch")
    yield con
    con.close()


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True)) if table.num_columns else []


def _ordered(sql: str) -> bool:
    """Whether the statement's outermost query orders its rows (the last ORDER BY is outside any subquery)."""
    tree = sqlglot.parse_one(sql, read="spark")
    return tree.args.get("order") is not None


def _close(ours: object, theirs: object) -> bool:
    """Equal within DuckDB's types: exactly where DuckDB's value is exact (an integer, a decimal, a string);
    where DuckDB divides or averages in DOUBLE, ours (Spark's decimal, rounded to its scale) is DuckDB's value
    rounded: within half a unit of its last digit (and DOUBLE's own error)."""
    if isinstance(theirs, float) and isinstance(ours, Decimal):
        half_unit = Decimal(1).scaleb(ours.as_tuple().exponent) / 2  # type: ignore[arg-type]
        return abs(Decimal(theirs) - ours) <= half_unit + Decimal(abs(theirs)) * Decimal("1e-15")
    if isinstance(theirs, float) and isinstance(ours, int | float):
        return math.isclose(float(ours), theirs, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(theirs, int | Decimal) and isinstance(ours, int | Decimal):
        return Decimal(theirs) == Decimal(ours)
    return ours == theirs


QUERIES = tpch.query_files()


# more shapes over the same layouts, each equal to Spark's answer exactly (whatever answers it)
MORE = {
    "split_avg": """select x.n_name, avg(l_extendedprice) as price, avg(l_quantity) as quantity
        from lineitem join supplier on l_suppkey = s_suppkey
        join (select n_nationkey, n_name from nation where n_regionkey = 1) x on s_nationkey = x.n_nationkey
        group by x.n_name order by x.n_name""",
    "window_share": """select l_returnflag, sum(l_extendedprice * (1 - l_discount)) as revenue,
        sum(l_extendedprice * (1 - l_discount)) / sum(sum(l_extendedprice * (1 - l_discount))) over () as share
        from lineitem group by l_returnflag order by l_returnflag""",
    "ratios": """select l_returnflag, avg(l_discount) * 100 as pct, sum(l_quantity) / count(*) as per_line,
        round(avg(l_extendedprice), 1) as price from lineitem
        where l_shipdate < date '1995-01-01' group by l_returnflag order by l_returnflag""",
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_shapes_equal_spark(name: str, session: Session) -> None:
    ours, spark = session.sql(MORE[name]), session.sql(MORE[name], engine="spark", force_pushdown=True)
    assert ours.table.schema.types == spark.table.schema.types, f"{ours.table.schema}\nSpark: {spark.table.schema}"
    assert _rows(ours.table) == _rows(spark.table)


def test_every_query_is_recommended_a_layout(tpch_model: TpchModel) -> None:
    """`index recommend` finds a layout for every query (with the measures Q1's AVGs need)."""
    found = tpch_model.recommendation
    assert found.skipped == [] and len(found.answered) == len(QUERIES)
    assert {(m.expression, m.column) for m in found.measures} >= {("COUNT", "LINEITEM.L_EXTENDEDPRICE")}


@pytest.mark.parametrize("path", QUERIES, ids=[q.stem for q in QUERIES])
def test_tpch_query(path: Path, session: Session, raw: duckdb.DuckDBPyConnection) -> None:
    sql = tpch.query_text(path)
    ours = session.sql(sql)
    spark = session.sql(sql, engine="spark", force_pushdown=True)
    assert ours.table.num_rows > 0, f"{path.stem}: an empty answer proves little"
    assert ours.table.schema.types == spark.table.schema.types, (
        f"{path.stem}: types differ from Spark's\nprecube: {ours.table.schema}\nSpark: {spark.table.schema}"
    )
    mine, sparks = _rows(ours.table), _rows(spark.table)
    if not _ordered(sql):
        mine, sparks = sorted(mine, key=repr), sorted(sparks, key=repr)
    assert mine == sparks, f"{path.stem}: values differ from Spark's\nprecube: {mine[:3]}\nSpark: {sparks[:3]}"

    duck = _rows(raw.sql(sqlglot.transpile(sql, read="spark", write="duckdb")[0]).to_arrow_table())
    if not _ordered(sql):
        duck = sorted(duck, key=repr)
    assert len(duck) == len(mine)
    differ = [(a, b) for a, b in zip(mine, duck, strict=True) if not all(map(_close, a, b))]
    assert not differ, f"{path.stem}: differs from DuckDB's on the raw files: {differ[:2]}"

    assert answered_by(ours) == expected_answer(path), f"{path.stem}: {ours.pushdown_reason or ours.layout_ids}"
