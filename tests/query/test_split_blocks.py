"""Splitting a block that joins the model's tables with subqueries (`split_blocks`): what its model part
groups by and computes, when a block is left whole and why, and — over the built SSB test model — that the
plan cache reuses a split plan for other literals and EXPLAIN shows each block. The answers of the shapes
themselves are the `cases/lookup_projection_*.sql` cases."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlglot import exp

from precube.metadata import Column, SourceType, Table
from precube.query.contexts import contexts
from precube.query.frontend import DIALECT, Catalog, normalise
from precube.query.session import Session
from precube.query.split_blocks import split_tree
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same


def _table(name: str, **columns: str) -> Table:
    cols = [Column(id=str(i), name=c, datatype=t) for i, (c, t) in enumerate(columns.items(), start=1)]
    return Table(name=name, database="SSB", columns=cols, source_type=SourceType.PARQUET)


CATALOG = Catalog.of(
    "SSB",
    [
        _table(
            "LINEORDER",
            LO_ORDERDATE="date",
            LO_CUSTKEY="integer",
            LO_REVENUE="bigint",
            LO_DISCOUNT="bigint",
            LO_TAX="decimal(10,2)",
        ),
        _table("DATES", D_DATEKEY="date", D_YEAR="integer", D_YEARMONTH="varchar(4096)"),
        _table("CUSTOMER", C_CUSTKEY="integer", C_NATION="varchar(4096)", C_REGION="varchar(4096)"),
    ],
)
FACTS = frozenset({"SSB.LINEORDER"})
PROJECTION = "(select c_custkey, c_nation from ssb.customer where c_region = 'ASIA') x"


def _split(sql: str) -> exp.Query:
    tree, _ = split_tree(normalise(sql, CATALOG), FACTS, CATALOG)
    return tree


def _problems(sql: str) -> list[str | None]:
    return [c.problem for c in contexts(_split(sql))]


def test_the_model_part_groups_by_what_the_rest_reads_and_keeps_its_own_filter() -> None:
    tree, splits = split_tree(
        normalise(
            "select x.c_nation, sum(lo_revenue) as r, avg(lo_tax) as t, count(distinct lo_discount) as d "
            f"from ssb.lineorder left join ssb.dates on lo_orderdate = d_datekey join {PROJECTION} "
            "on lo_custkey = x.c_custkey where d_year = 1994 and x.c_nation <> 'CHINA' group by x.c_nation",
            CATALOG,
        ),
        FACTS,
        CATALOG,
    )
    [split] = splits
    part = split.part
    grouped = {g.sql(dialect=DIALECT) for g in part.args["group"].expressions}
    assert grouped == {"lineorder.lo_custkey", "lineorder.lo_discount"}
    partials = {p.this.sql(dialect=DIALECT) for p in part.expressions if p.alias.startswith("part_")}
    assert partials == {"SUM(lineorder.lo_revenue)", "SUM(lineorder.lo_tax)", "COUNT(lineorder.lo_tax)"}
    assert part.args["where"].this.sql(dialect=DIALECT) == "dates.d_year = 1994"
    outer = tree.sql(dialect=DIALECT)
    assert "x.c_nation <> 'CHINA'" in outer.split("FROM (", 1)[0] + outer.rsplit(") AS x", 1)[1]
    assert "CAST(SUM(model_part.part_1) AS BIGINT)" in outer  # the type Spark gives SUM(lo_revenue)
    assert "COUNT(DISTINCT model_part.lo_discount)" in outer
    assert [c.problem for c in contexts(tree)] == [None, None]


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        (
            f"select x.c_nation, count(*) from {PROJECTION} left join ssb.lineorder on lo_custkey = x.c_custkey "
            "group by x.c_nation",
            "the model's tables are on the optional side of a LEFT JOIN with x",
        ),
        (
            f"select x.c_nation, count(*) from ssb.lineorder right join {PROJECTION} on lo_custkey = x.c_custkey "
            "group by x.c_nation",
            "it uses a RIGHT JOIN",
        ),
        (
            f"select x.c_nation, sum(lo_revenue * x.c_custkey) from ssb.lineorder join {PROJECTION} "
            "on lo_custkey = x.c_custkey group by x.c_nation",
            "reads both the model's tables and a subquery's columns",
        ),
        (
            f"select x.c_nation, percentile(lo_revenue, 0.5) from ssb.lineorder join {PROJECTION} "
            "on lo_custkey = x.c_custkey group by x.c_nation",
            "cannot be re-aggregated",
        ),
        (
            f"select x.c_nation, count(*) from ssb.lineorder join {PROJECTION} on lo_custkey = x.c_custkey "
            "left join ssb.dates on d_datekey = lo_orderdate and d_year = length(x.c_nation) group by x.c_nation",
            "the join to dates reads a subquery's columns",
        ),
        (
            f"select x.c_nation, count(*) from ssb.lineorder join {PROJECTION} on lo_custkey = x.c_custkey "
            "where x.c_custkey in (select d_year from ssb.dates where d_datekey = lineorder.lo_orderdate) "
            "group by x.c_nation",
            "a subquery in it reads the model's tables",
        ),
    ],
)
def test_a_block_that_cannot_be_split_is_left_whole_with_the_reason(sql: str, reason: str) -> None:
    problems = [p for p in _problems(sql) if p is not None and "subquery" in p]
    assert problems and all(reason in p for p in problems), problems


def test_blocks_without_a_fact_table_or_a_subquery_are_not_split() -> None:
    assert split_tree(normalise("select count(*) from ssb.lineorder", CATALOG), FACTS, CATALOG)[1] == []
    lookups = f"select x.c_nation, count(*) from ssb.dates join {PROJECTION} on d_year = x.c_custkey group by 1"
    assert split_tree(normalise(lookups, CATALOG), FACTS, CATALOG)[1] == []


@pytest.fixture
def fresh(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as session:
        yield session


SHAPE = (
    "select x.d_yearmonth, sum(lo_revenue) as revenue, count(*) as lines from ssb.lineorder "
    "left join ssb.dates on lo_orderdate = d_datekey "
    "join (select d_datekey, d_yearmonth from ssb.dates where d_year = {}) x on lo_orderdate = x.d_datekey "
    "where d_year >= {} group by x.d_yearmonth"
)


@pytest.mark.spark
def test_the_plan_cache_reuses_a_split_plan_for_other_literals(
    query_model: QueryModel, fresh: Session, oracle: Oracle
) -> None:
    for (inner, outer), cached in [
        ((1994, 1993), False),
        ((1995, 1992), True),  # other values, the same segments: the same plan
        ((1996, 1995), False),  # the model part's filter prunes the first segment: planned again
        ((1997, 1996), True),
    ]:
        sql = SHAPE.format(inner, outer)
        result = fresh.sql(sql)
        assert_same(Case("split", "", "layout", False, 0.0, False, False, sql), oracle.run(sql), result.table)
        assert result.pushdown is False and result.plan_cached is cached, (sql, result.plan_cached)
    assert fresh.sql(SHAPE.format(1997, 1996)).segments == [query_model.segments[1].id]


@pytest.mark.spark
def test_explain_shows_the_split_and_how_each_block_is_answered(fresh: Session) -> None:
    explained = fresh.explain(SHAPE.format(1994, 1993))
    text = explained.text()
    assert "block split: SELECT" in text and "its model part (model_part) is context 1, joined with x" in text
    assert "lookup snapshots (model ssb)" in text  # the lookup projection: from the snapshot of DATES
    found = explained.as_dict()
    assert [c["answer"] for c in found["contexts"]] == ["aggregate index", "lookup snapshot"]
    assert found["splits"][0]["model_part_context"] == 1 and found["splits"][0]["joined_with"] == ["x"]
    refused = fresh.explain(
        f"select x.c_nation, count(*) from {PROJECTION} left join ssb.lineorder on lo_custkey = x.c_custkey "
        "group by x.c_nation"
    )
    assert refused.plan.pushdown and "on the optional side of a LEFT JOIN with x" in str(refused.plan.pushdown_reason)
    assert [c["answer"] for c in refused.as_dict()["contexts"]] == ["pushdown", "pushdown"]
