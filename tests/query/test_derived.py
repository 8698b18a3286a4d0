"""Derived dimensions: a lookup's columns that a layout lacks come from the lookup joined back on the
foreign key the layout holds; a layout needing no join is preferred; the answers equal the oracle's. (The detail case is
`cases/derived_lookup_detail.sql`.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from precube.query.session import Session
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same

JOINS = (
    "from ssb.lineorder left join ssb.supplier on lo_suppkey = s_suppkey "
    "left join ssb.dates on lo_orderdate = d_datekey "
)


@pytest.fixture(scope="module")
def session(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as found:
        yield found


def _answer(session: Session, oracle: Oracle, sql: str) -> list[tuple[str, str]]:
    """Check the answer against the oracle (pushdown forbidden, aggregate indexes only); the lookups each
    context joined back."""
    result = session.sql(sql, pushdown=False)
    assert_same(Case("derived", "", "layout", False, 0.0, False, False, sql), oracle.run(sql), result.table)
    assert not any(m.table_index for m in result.matches), "expected an aggregate index to answer"
    return [(d.table, d.kind) for m in result.matches for d in m.derived]


@pytest.mark.spark
def test_lookup_columns_no_layout_holds_are_joined_back(session: Session, oracle: Oracle) -> None:
    sql = f"select s_address, d_year, sum(lo_revenue) as revenue, count(*) as n {JOINS} group by s_address, d_year"
    assert _answer(session, oracle, sql) == [("SSB.SUPPLIER", "LEFT")]
    explained = session.explain(sql).text()
    assert "joined back" in explained and "SSB.SUPPLIER" in explained


@pytest.mark.spark
def test_a_layout_holding_the_column_is_preferred_to_a_join(session: Session, oracle: Oracle) -> None:
    sql = f"select s_nation, d_year, sum(lo_revenue) as revenue {JOINS} group by s_nation, d_year"
    assert _answer(session, oracle, sql) == []


@pytest.mark.spark
def test_derived_columns_in_filters_and_outer_queries(session: Session, oracle: Oracle) -> None:
    sql = (
        "select d_year, n, revenue, rank() over (order by revenue desc) as place from ("
        f"select d_year, count(*) as n, sum(lo_revenue) as revenue {JOINS} "
        "where s_phone like '2%' or s_name = 'Supplier#000000003' group by d_year) t"
    )
    assert _answer(session, oracle, sql) == [("SSB.SUPPLIER", "LEFT")]
