"""The Spark engine answers the same plans as DuckDB: layout statements (measure merges, bitmap and HLL
cells through Python UDFs, derived lookups) and pushdown to the source tables, equal to the oracle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from precube.query.session import Session
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same, load_case

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CASES = Path(__file__).parent / "cases"
# one case per kind of statement: SUM of a computed column, joins and IN lists, bitmap and HLL cells,
# AVG as SUM/COUNT, a window over aggregates, an empty pruned relation, a joined-back lookup, pushdown,
# FILTER and DISTINCT aggregates, an exact percentile
SAMPLE = (
    "ssb_q1_1",
    "ssb_q3_2_variant",
    "count_distinct_precise",
    "count_distinct_approx",
    "avg_with_count_measure",
    "window_rank",
    "empty_partition_range",
    "derived_lookup_aggregate",
    "pushdown_column_not_in_model",
    "sum_filter",  # FILTER as CASE inside the merges
    "sum_distinct",
    "percentile_exact",  # Spark's own PERCENTILE over a table index
)


@pytest.fixture(scope="module")
def session(query_model: QueryModel, spark: SparkSession) -> Iterator[Session]:
    with Session(*query_model.session_args, engine="spark", spark=lambda: spark) as found:
        yield found


@pytest.mark.spark
@pytest.mark.parametrize("name", SAMPLE)
def test_spark_engine_answers_like_the_oracle(name: str, session: Session, oracle: Oracle) -> None:
    case = load_case(CASES / f"{name}.sql")
    result = session.sql(case.sql)
    assert result.engine == "spark"
    assert result.pushdown is (case.answer == "pushdown")
    assert_same(case, oracle.run(case.sql), result.table)


@pytest.mark.spark
def test_pushdown_on_duckdb_returns_spark_sum_types(query_model: QueryModel, session: Session) -> None:
    # sums of an int column (LO_TAX, which no measure reads: pushed down) are bigint in Spark, HUGEINT in DuckDB
    sql = "select lo_shipmode, sum(lo_tax) as tax, sum(lo_tax * 2) as twice from ssb.lineorder group by lo_shipmode"
    on_spark = session.sql(sql)
    with Session(*query_model.session_args) as duck:
        on_duckdb = duck.sql(sql)
    assert on_spark.pushdown and on_duckdb.pushdown
    assert on_duckdb.table.schema.types == on_spark.table.schema.types
    assert str(on_duckdb.table.schema.field("tax").type) == "int64"
    assert sorted(on_duckdb.rows) == sorted(on_spark.rows)


@pytest.mark.spark
def test_pushdown_casts_window_sums_whole(query_model: QueryModel, oracle: Oracle) -> None:
    # LO_TAX is read by no measure: pushed down; the SUM inside a window keeps its OVER clause
    sql = (
        "select lo_shipmode, sum(lo_tax) as tax, sum(sum(lo_tax)) over () as total "
        "from ssb.lineorder group by lo_shipmode"
    )
    with Session(*query_model.session_args) as duck:
        result = duck.sql(sql)
    assert result.pushdown
    assert str(result.table.schema.field("total").type) == "int64"
    assert_same(Case("window_sum", "", "pushdown", False, 0.0, False, False, sql), oracle.run(sql), result.table)
