"""TOP_N at query time without Spark: which blocks a TOP_N measure answers, and the unnested scan."""

from __future__ import annotations

import duckdb
import pytest
from sqlglot import exp

from precube.metadata import Column, Function, FunctionExpression, Measure, Parameter, ParameterType, SourceType, Table
from precube.query.aggregates import Unnest
from precube.query.contexts import contexts
from precube.query.frontend import Catalog, normalise
from precube.query.pruning import ValueRange
from precube.query.topn import topn_answers, unnested
from precube.storage import cells

CATALOG = Catalog.of(
    "SSB",
    [
        Table(
            name="LINEORDER",
            database="SSB",
            source_type=SourceType.PARQUET,
            columns=[
                Column(id="1", name="LO_PARTKEY", datatype="integer"),
                Column(id="2", name="LO_REVENUE", datatype="bigint"),
                Column(id="3", name="LO_YEAR", datatype="integer"),
                Column(id="4", name="LO_PRICE", datatype="decimal(15,2)"),
            ],
        )
    ],
)
IDS = {"LINEORDER.LO_PARTKEY": 1, "LINEORDER.LO_REVENUE": 2, "LINEORDER.LO_YEAR": 3, "LINEORDER.LO_PRICE": 4}
TYPES = {1: "integer", 2: "bigint", 3: "integer", 4: "decimal(15,2)"}


def _topn(mid: int, value: str, key: str, n: int) -> Measure:
    params = [Parameter(type=ParameterType.COLUMN, value=f"LINEORDER.{c}") for c in (value, key)]
    return Measure(
        id=mid,
        name=f"TOP{mid}",
        function=Function(expression=FunctionExpression.TOP_N, parameters=params, returntype=f"topn({n})"),
    )


MEASURES = [_topn(100001, "LO_REVENUE", "LO_PARTKEY", 10), _topn(100002, "LO_PRICE", "LO_PARTKEY", 10)]


def _answers(
    sql: str, non_null: frozenset[int] = frozenset({2, 4}), ranges: list[dict[int, ValueRange]] | None = None
) -> list[int]:
    [ctx] = contexts(normalise(sql, CATALOG))

    def column_of(node: exp.Expr) -> int | None:
        return IDS.get(f"{node.table}.{node.name}".upper()) if isinstance(node, exp.Column) else None

    group = ctx.select.args.get("group")
    group_dims = frozenset(c for g in group.expressions if (c := column_of(g)) is not None) if group else None
    found = topn_answers(ctx, MEASURES, column_of, IDS.get, TYPES, group_dims, non_null, lambda: ranges or [])
    return [a.unnest.measure for a in found]


TOP = "select lo_partkey, sum(lo_revenue) as r from lineorder"


@pytest.mark.parametrize(
    "sql",
    [
        f"{TOP} group by lo_partkey order by r desc limit 10",
        f"{TOP} group by lo_partkey order by r desc, lo_partkey limit 5 offset 5",
        f"{TOP} group by 1 order by 2 desc limit 3",
        "select lo_partkey, sum(lo_revenue) from lineorder group by lo_partkey order by sum(lo_revenue) desc limit 3",
        f"{TOP} where lo_year = 1995 group by lo_partkey, lo_year order by r desc limit 10",
        "select lo_partkey from lineorder group by lo_partkey order by sum(lo_revenue) desc limit 4",
    ],
)
def test_a_top_n_query_within_the_capacity_is_answered_from_the_measure(sql: str) -> None:
    assert _answers(sql) == [100001]


@pytest.mark.parametrize(
    "sql",
    [
        f"{TOP} group by lo_partkey order by r desc limit 11",  # beyond topn(10)
        f"{TOP} group by lo_partkey order by r desc limit 5 offset 6",
        f"{TOP} group by lo_partkey order by r desc",  # every key: no TOP_N
        f"{TOP} group by lo_partkey order by r limit 10",  # the smallest
        f"{TOP} group by lo_partkey order by lo_partkey desc limit 10",
        "select lo_year, sum(lo_revenue) as r from lineorder group by lo_year order by r desc limit 3",  # other key
        "select lo_partkey, sum(lo_revenue) as r, count(*) as n from lineorder group by lo_partkey order by r desc limit 3",
        "select lo_partkey, max(lo_revenue) as r from lineorder group by lo_partkey order by r desc limit 3",
        "select lo_partkey, sum(distinct lo_revenue) as r from lineorder group by lo_partkey order by r desc limit 3",
        "select lo_partkey, sum(lo_revenue) filter (where lo_year > 1) as r from lineorder group by lo_partkey order by r desc limit 3",
        "select lo_partkey, sum(lo_price) as r from lineorder group by lo_partkey order by r desc limit 3",  # decimal
    ],
)
def test_other_blocks_are_not(sql: str) -> None:
    assert _answers(sql) == []


def test_a_value_column_that_may_hold_null_is_not_answered() -> None:
    assert _answers(f"{TOP} group by lo_partkey order by r desc limit 10", non_null=frozenset()) == []


def test_exact_only_when_every_segment_has_fewer_keys_than_a_cell_holds() -> None:
    [ctx] = contexts(normalise(f"{TOP} group by lo_partkey order by r desc limit 10", CATALOG))

    def approximate(high: int) -> bool:
        ranges = [{1: ValueRange(1, 400)}, {1: ValueRange(1, high)}]
        column_of = lambda n: IDS.get(f"{n.table}.{n.name}".upper())  # noqa: E731
        [found] = topn_answers(
            ctx, MEASURES[:1], column_of, IDS.get, TYPES, frozenset({1}), frozenset({2}), lambda: ranges
        )
        return found.unnest.approximate

    assert not approximate(cells.topn_capacity(10))
    assert approximate(cells.topn_capacity(10) + 1)


@pytest.mark.parametrize("key_type, values", [("integer", [5, None, 7]), ("varchar(20)", ["a|b\\", None, "\\N"])])
def test_the_unnested_scan_decodes_keys_back_to_their_values(key_type: str, values: list[object]) -> None:
    con = duckdb.connect()
    keys = [cells.encode_key([None if v is None else str(v)]) for v in values]
    con.execute(
        'create table layout_t as select 1995 as "3", ? as "100001"',
        [[{"key": k, "value": float(i)} for i, k in enumerate(keys)]],
    )
    scan = exp.to_table("layout_t").as_("layout")
    sql = exp.select("*").from_(unnested(scan, "layout", [3], Unnest(100001, 1, key_type, False))).sql(dialect="duckdb")
    rows = con.execute(sql).fetchall()
    assert rows == [(1995, v, float(i)) for i, v in enumerate(values)]
