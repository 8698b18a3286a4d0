"""A layout's answer has the column types Spark gives the same SQL on the source tables (the oracle's
DuckDB types SUMs as HUGEINT, so the case files compare kinds only); and a computed column named in a
statement pushed down to the source tables reads its expression."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from precube.query.session import Session
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

JOINS = """from ssb.lineorder
left join ssb.dates on lo_orderdate = d_datekey
left join ssb.customer on lo_custkey = c_custkey"""

TYPED = {
    "table_index_sums": """select lo_shipmode, sum(lo_revenue) as revenue, sum(lo_revenue * 2) as doubled,
        sum(lo_revenue) filter (where lo_orderkey > 100) as later, count(*) as n
        from ssb.lineorder where lo_orderkey < 2000 group by lo_shipmode""",
    "window_over_merge": f"select d_year, sum(sum(lo_revenue)) over () as total {JOINS} group by d_year",
    "distinct": f"""select d_year, sum(distinct lo_discount) as s, avg(distinct lo_quantity) as a,
        count(distinct lo_discount) as c, max(distinct lo_quantity) as m {JOINS} group by d_year""",
    "filter": f"""select d_year, sum(lo_revenue) filter (where c_region = 'ASIA') as s,
        avg(lo_revenue) filter (where c_region = 'ASIA') as a, count(*) filter (where c_region = 'ASIA') as c
        {JOINS} group by d_year""",
    "constants": f"select d_year, sum(1) as a, sum(2.5) as b, count(null) as c {JOINS} group by d_year",
    "kll_percentile": f"select d_year, percentile_approx(lo_revenue, 0.5) as p {JOINS} group by d_year",
    "percentile": """select lo_shipmode, percentile(lo_revenue, 0.5) as p, median(lo_revenue) as m
        from ssb.lineorder group by lo_shipmode""",
}


def _types(table: pa.Table) -> list[pa.DataType]:
    return [pa.string() if pa.types.is_large_string(t) else t for t in table.schema.types]


@pytest.fixture(scope="module")
def session(query_model: QueryModel, spark: SparkSession) -> Iterator[Session]:
    with Session(*query_model.session_args, spark=lambda: spark) as found:
        yield found


@pytest.mark.parametrize("name", sorted(TYPED))
def test_layout_answer_has_sparks_types(name: str, session: Session) -> None:
    sql = TYPED[name]
    answer = session.sql(sql, pushdown=False)
    assert answer.layout_ids, f"{name}: no layout answered"
    raw = session.sql(sql, engine="spark", force_pushdown=True)
    assert _types(answer.table) == _types(raw.table), f"{name}: {answer.table.schema} vs Spark's {raw.table.schema}"


def test_pushdown_reads_computed_column_expression(session: Session, oracle: Oracle) -> None:
    """V_REVENUE (LO_EXTENDEDPRICE * LO_DISCOUNT) is no column of the source table."""
    sql = "select lo_orderkey, lo_linenumber, v_revenue, lo_tax from ssb.lineorder where lo_orderkey < 50"
    result = session.sql(sql)
    assert result.pushdown
    written_out = sql.replace("v_revenue", "lo_extendedprice * lo_discount as v_revenue")
    case = Case("computed_pushdown", "", "pushdown", False, 1e-9, False, False, written_out)
    assert_same(case, oracle.run(written_out), result.table)
    assert result.table.column_names[2] == "v_revenue"
