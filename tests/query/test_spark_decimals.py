"""DuckDB answers decimal arithmetic with Spark's values and types (`query.spark_decimals`): every statement
here runs twice on the same source table, by DuckDB through precube and by Spark, and the answers must be
equal exactly — types (precision and scale) and values, digit for digit, not within a tolerance."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.metadata import Project, SourceType, open_store
from precube.query.errors import EngineError
from precube.query.session import Session
from precube.sources.tables import load_file_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROWS = 400
# column → (Arrow type, a random value); divisors (`q…`) are never 0: Spark's division by zero is an error
COLUMNS = {
    "d15_2": (pa.decimal128(15, 2), lambda r: Decimal(r.randint(-(10**8), 10**8)).scaleb(-2)),
    "d5_2": (pa.decimal128(5, 2), lambda r: Decimal(r.randint(-999, 999)).scaleb(-2)),
    "d38_10": (pa.decimal128(38, 10), lambda r: Decimal(r.randint(-(10**14), 10**14)).scaleb(-10)),
    "d20_18": (pa.decimal128(20, 18), lambda r: Decimal(r.randint(-(10**18), 10**18)).scaleb(-18)),
    "q7_3": (pa.decimal128(7, 3), lambda r: Decimal(r.choice([-1, 1]) * r.randint(1, 10**6)).scaleb(-3)),
    "qi": (pa.int32(), lambda r: r.choice([-1, 1]) * r.randint(1, 1000)),
    "i": (pa.int32(), lambda r: r.randint(-(10**6), 10**6)),
    "l": (pa.int64(), lambda r: r.randint(-(10**12), 10**12)),
    "g": (pa.string(), lambda r: r.choice("abc")),
    "dt": (pa.date32(), lambda r: date(1992, 1, 1) + timedelta(days=r.randint(0, 2500))),
    "dt2": (pa.date32(), lambda r: date(1992, 1, 1) + timedelta(days=r.randint(0, 2500))),
}

ROW_EXPRESSIONS = [
    "d15_2 * (1 - d5_2)",
    "d15_2 * (1 - d5_2) * (1 + d5_2)",
    "d38_10 * d38_10",
    "d38_10 * d20_18 * d20_18",
    "d15_2 / q7_3",
    "d38_10 / q7_3",
    "d20_18 / qi",
    "i / q7_3",
    "d15_2 div q7_3",
    "d15_2 % q7_3",
    "-(d15_2 * d5_2)",
    "abs(d5_2 - d15_2)",
    "round(d15_2 * d5_2, 3)",
    "round(d38_10 / q7_3, 2)",
    "floor(d15_2 / qi)",
    "ceil(d5_2 * 3.5)",
    "case when i > 0 then d15_2 * d5_2 else d38_10 end",
    "coalesce(d15_2 / qi, 0)",
    "d15_2 * 0.05 + 1.005",
    "100.00 * d5_2 / q7_3",
    "l * d5_2",
    "greatest(d15_2, d38_10)",
    # integers, DOUBLE with DECIMAL, dates
    "i * 2 + l",
    "i / qi",
    "i div qi",
    "d15_2 * 1.5e0",
    "dt + 1",
    "dt - 30",
    "date_add(dt, i % 100)",
    "date_sub(dt, 7)",
    "datediff(dt, dt2)",
    "add_months(dt, 1)",
    "year(dt) * 100 + month(dt)",
    "extract(day from dt)",
]

AGGREGATES = [
    "sum(d15_2 * (1 - d5_2))",
    "avg(d15_2)",
    "avg(d5_2 * d15_2)",
    "avg(d38_10)",
    "avg(i)",
    "100.00 * sum(case when i > 0 then d15_2 * (1 - d5_2) else 0 end) / sum(d15_2 * (1 - d5_2))",
    "sum(d15_2) / count(*)",
    "sum(d38_10) / sum(q7_3)",
    "avg(distinct d5_2)",
    "avg(d15_2) filter (where i > 0)",
    "max(d15_2 / q7_3)",
]


@pytest.fixture(scope="module")
def session(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    root = tmp_path_factory.mktemp("spark-decimals")
    rng = random.Random(36)
    data = {
        name: pa.array(
            [None if name[0] not in "qgd" and rng.random() < 0.05 else make(rng) for _ in range(ROWS)], type=kind
        )
        for name, (kind, make) in COLUMNS.items()
    }
    (root / "numbers").mkdir()
    pq.write_table(pa.table(data), root / "numbers" / "part-0.parquet")
    with open_store(f"sqlite:///{root / 'meta.db'}") as store:
        store.create_project(Project(name="decimals", default_database="DEC"))
        load_file_table(store, "decimals", Path(root / "numbers"), SourceType.PARQUET)
        with Session(store, "decimals", str(root / "warehouse"), spark=lambda: spark) as found:
            yield found


def _compare(session: Session, sql: str) -> None:
    ours = session.sql(sql)
    theirs = session.sql(sql, engine="spark")
    assert ours.engine == "duckdb" and theirs.engine == "spark"
    assert ours.table.schema.types == theirs.table.schema.types, f"{sql}\n{ours.table.schema}\n{theirs.table.schema}"
    mine, spark_rows = sorted(ours.rows, key=repr), sorted(theirs.rows, key=repr)
    differ = [(a, b) for a, b in zip(mine, spark_rows, strict=True) if a != b]
    assert not differ, f"{sql}: {len(differ)} rows differ, e.g. precube {differ[0][0]} Spark {differ[0][1]}"


@pytest.mark.parametrize("expression", ROW_EXPRESSIONS)
def test_row_arithmetic_is_sparks(session: Session, expression: str) -> None:
    _compare(session, f"select i, {expression} as v from numbers")


@pytest.mark.parametrize("call", AGGREGATES)
def test_aggregates_are_sparks(session: Session, call: str) -> None:
    _compare(session, f"select g, {call} as v from numbers group by g")
    _compare(session, f"select {call} as v from numbers")


@pytest.mark.parametrize("expression", ["i * 2147483647", "l * l", "sum(abs(l) * 9000000)"])
def test_integer_overflow_fails_on_both_engines(session: Session, expression: str) -> None:
    """ANSI mode: Spark fails on an integer overflow; so does DuckDB, rather than wrapping around or widening."""
    sql = f"select {expression} as v from numbers"
    for engine in ("duckdb", "spark"):
        with pytest.raises(EngineError, match="(?i)overflow|out of range"):
            session.sql(sql, engine=engine)


def test_window_functions_are_sparks(session: Session) -> None:
    _compare(session, "select i, avg(d15_2) over (partition by g) as v from numbers")
    _compare(
        session,
        "select i, row_number() over (partition by g order by i, l, dt) as r, rank() over (order by g) as k, "
        "dense_rank() over (order by g) as d, ntile(4) over (order by i, l, dt) as t, "
        "sum(d5_2 * 2) over (partition by g) as s from numbers",
    )
