"""Measures used without their columns as layout dimensions (issue 18 §3): TOP_N from the unnested cells
of the layout holding it, on both engines; COUNT(col) / AVG(col) from COUNT(*) and SUM where the build
recorded no NULL in the column; COUNT(DISTINCT a, b) from a measure of the pair. Answers equal the
oracle's; the cases in `cases/` check the same forms against pushdown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from precube.metadata import Dataflow
from precube.query.session import Session
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same, load_case

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

TOP_PARTS = """select lo_partkey, sum(lo_revenue) as revenue from ssb.lineorder
    left join ssb.dates on lo_orderdate = d_datekey where d_year >= 1995
    group by lo_partkey order by revenue desc, lo_partkey limit 12"""


@pytest.fixture(scope="module")
def session(query_model: QueryModel, spark: SparkSession) -> Iterator[Session]:
    with Session(*query_model.session_args, spark=lambda: spark) as found:
        yield found


def _measure(query_model: QueryModel, name: str) -> int:
    found = query_model.model.measure_by_name(name)
    assert found is not None
    return found.id


def _column(query_model: QueryModel, ref: str) -> int:
    return query_model.model.column_by_ref(ref).id


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_top_n_reads_the_unnested_cells_of_the_layout_holding_it(
    engine: str, session: Session, oracle: Oracle, query_model: QueryModel
) -> None:
    result = session.sql(TOP_PARTS, engine=engine, pushdown=False)
    assert_same(
        Case("top_parts", "", "layout", True, 1e-9, False, False, TOP_PARTS), oracle.run(TOP_PARTS), result.table
    )
    [match] = result.matches
    assert _measure(query_model, "TOP_PARTS") in match.layout.col_order
    assert _column(query_model, "LINEORDER.LO_PARTKEY") not in match.layout.col_order
    explained = session.explain(TOP_PARTS, engine=engine).text()
    # LO_PARTKEY is no dimension: no recorded range proves that every key of a segment fits in a cell
    assert "TOP_PARTS (approximate TOP_N)" in explained


def test_the_build_records_the_nulls_of_measure_inputs(query_model: QueryModel) -> None:
    with query_model.store.read(query_model.project) as tx:
        segments = tx.require(Dataflow, query_model.model.uuid).segments
    cost, sometimes = (_column(query_model, f"LINEORDER.{c}") for c in ("LO_SUPPLYCOST", "V_SMALL_QUANTITY_COST"))
    assert len(segments) == 2
    for segment in segments:
        assert segment.column_null_counts[str(cost)] == 0
        assert segment.column_null_counts[str(sometimes)] > 0


def test_count_and_avg_of_a_column_without_nulls_come_from_count_star(session: Session, oracle: Oracle) -> None:
    sql = """select d_year, count(lo_supplycost) as n, avg(lo_supplycost) as a from ssb.lineorder
        left join ssb.dates on lo_orderdate = d_datekey group by d_year"""
    result = session.sql(sql, pushdown=False)
    assert_same(Case("count_avg", "", "layout", False, 1e-9, False, False, sql), oracle.run(sql), result.table)
    explained = session.explain(sql).text()
    assert "COUNT(*), the column has no NULL" in explained
    assert "SUM / COUNT(*) measures, the column has no NULL" in explained


def test_count_distinct_of_a_pair_uses_its_measure(session: Session, query_model: QueryModel) -> None:
    sql = "select count(distinct lo_partkey, lo_suppkey) as pairs from ssb.lineorder"
    result = session.sql(sql, pushdown=False)
    [match] = result.matches
    assert _measure(query_model, "PART_SUPPLIERS") in match.layout.col_order


def test_a_plan_from_top_n_is_not_reused_for_a_limit_beyond_its_capacity(session: Session, oracle: Oracle) -> None:
    """The plan cache reuses a plan for other LIMIT values; not one that read a TOP_N measure."""
    first = session.sql(TOP_PARTS)
    assert not first.matches[0].table_index
    more = TOP_PARTS.replace("limit 12", "limit 60")
    again = session.sql(more)
    assert again.plan_cached is False
    assert again.matches[0].table_index, "topn(50) cannot answer 60 rows: the base table index's raw rows do"
    assert_same(Case("more", "", "layout", True, 1e-9, False, False, more), oracle.run(more), again.table)


@pytest.mark.parametrize(
    "name", ["topn_over_capacity", "count_distinct_triple", "count_nullable_without_count_measure"]
)
def test_what_no_measure_answers_reads_raw_rows(name: str, session: Session) -> None:
    """The cases of these names are answered by the base table index, never by a measure that would be wrong."""
    case = load_case(Path(__file__).parent / "cases" / f"{name}.sql")
    [match] = session.sql(case.sql, pushdown=False).matches
    assert match.table_index, f"{name}: answered from aggregate layout {match.layout.id}"
