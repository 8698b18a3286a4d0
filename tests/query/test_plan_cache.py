"""The plan cache: statements of one shape share a plan whatever their literals, and every answer still
equals the oracle's — when a literal changes the segments pruned, the aggregate computed, the output
names or the order, the plan is made afresh."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from precube.query.plan_cache import STATEMENTS_PER_SHAPE, shape_of
from precube.query.session import Session
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same


def _case(sql: str, ordered: bool = False) -> Case:
    return Case("plan_cache", "", "layout", ordered, 0.0, False, False, sql)


def test_shape_ignores_spelling_but_not_string_contents() -> None:
    a = shape_of("select d_year, sum(lo_revenue) from ssb.lineorder where d_year = 1993 and x = 'Asia'")
    b = shape_of(
        "SELECT  D_YEAR ,SUM( lo_revenue )\n-- a comment\nFROM SSB.LINEORDER /* another */ WHERE d_year=1993 AND x='Asia'"
    )
    c = shape_of("select d_year, sum(lo_revenue) from ssb.lineorder where d_year = 1993 and x = 'ASIA'")
    assert a is not None and b is not None and c is not None
    assert a.key == b.key and a.params == b.params == ((False, "1993"), (True, "Asia"))
    assert c.key == a.key and c.params != a.params  # a string's text is a value, never normalised


def test_shape_tells_equal_literals_apart_from_different_ones() -> None:
    same = shape_of("select 1 from t where a = 5 and b = 5")
    different = shape_of("select 1 from t where a = 5 and b = 6")
    string = shape_of("select 1 from t where a = '5' and b = 6")
    assert same is not None and different is not None and string is not None
    assert len({same.key, different.key, string.key}) == 3
    assert shape_of("select 'unterminated") is None


@pytest.fixture
def fresh(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as session:
        yield session


def _check(session: Session, oracle: Oracle, sql: str, *, cached: bool, ordered: bool = False) -> None:
    result = session.sql(sql)
    assert_same(_case(sql, ordered), oracle.run(sql), result.table)
    assert result.plan_cached is cached, f"plan cached {result.plan_cached}, expected {cached}: {sql}"
    assert result.pushdown is False


@pytest.mark.spark
def test_new_literals_reuse_the_plan_while_pruning_keeps_the_same_segments(
    query_model: QueryModel, fresh: Session, oracle: Oracle
) -> None:
    shape = (
        "select d_year, c_region, sum(lo_revenue) as revenue from ssb.lineorder "
        "left join ssb.customer on lo_custkey = c_custkey left join ssb.dates on lo_orderdate = d_datekey "
        "where d_year = {} and c_region = '{}' group by d_year, c_region"
    )
    _check(fresh, oracle, shape.format(1993, "ASIA"), cached=False)
    _check(fresh, oracle, shape.format(1993, "ASIA"), cached=True)
    _check(fresh, oracle, shape.format(1994, "EUROPE"), cached=True)  # the same segment (1992-1994)
    _check(fresh, oracle, shape.format(1996, "ASIA"), cached=False)  # the other segment: planned again
    _check(fresh, oracle, shape.format(1997, "AMERICA"), cached=True)
    assert fresh.sql(shape.format(1997, "AMERICA")).segments == [query_model.segments[1].id]
    assert fresh.sql(shape.format(1992, "AMERICA")).segments == [query_model.segments[0].id]


@pytest.mark.spark
def test_literals_the_plan_depends_on_are_part_of_its_key(fresh: Session, oracle: Oracle) -> None:
    # a literal inside an aggregate, in an unnamed output, in ORDER BY or GROUP BY positions
    for sql in (
        "select lo_discount, sum(lo_revenue * 2) as r from ssb.lineorder group by lo_discount",
        "select lo_discount, sum(lo_revenue * 3) as r from ssb.lineorder group by lo_discount",
        "select lo_discount, count(*) + 1 from ssb.lineorder group by lo_discount",
        "select lo_discount, count(*) + 2 from ssb.lineorder group by lo_discount",
    ):
        _check(fresh, oracle, sql, cached=False)
    ordered = "select lo_discount, count(*) as n from ssb.lineorder group by lo_discount order by {} desc, 1 limit {}"
    _check(fresh, oracle, ordered.format(1, 3), cached=False, ordered=True)
    _check(fresh, oracle, ordered.format(2, 3), cached=False, ordered=True)
    _check(fresh, oracle, ordered.format(2, 5), cached=True, ordered=True)  # LIMIT is only substituted
    assert fresh.sql(ordered.format(2, 5)).table.num_rows == 5


@pytest.mark.spark
def test_a_metadata_change_drops_the_plans(query_model: QueryModel, fresh: Session, oracle: Oracle) -> None:
    sql = (
        "select d_year, count(*) as n from ssb.lineorder left join ssb.dates on lo_orderdate = d_datekey "
        "where lo_discount = {} group by d_year"
    )
    _check(fresh, oracle, sql.format(1), cached=False)
    _check(fresh, oracle, sql.format(2), cached=True)
    with query_model.store.transaction(query_model.project) as tx:
        project = tx.project()
        project.override_kylin_properties["precube.test.touched"] = str(len(project.override_kylin_properties))
        tx.update(project)
    _check(fresh, oracle, sql.format(3), cached=False)


@pytest.mark.spark
def test_repeated_statements_are_answered_for_their_own_literals(fresh: Session, oracle: Oracle) -> None:
    sql = (
        "select d_year, count(*) as n from ssb.lineorder left join ssb.dates on lo_orderdate = d_datekey "
        "where lo_quantity <= {} group by d_year"
    )
    _check(fresh, oracle, sql.format(1), cached=False)
    for quantity in [*range(2, STATEMENTS_PER_SHAPE + 6), 2, 1, 7, 2]:  # more statements than a shape keeps
        _check(fresh, oracle, sql.format(quantity), cached=True)
    [entry] = fresh.plans._entries.values()
    assert len(entry.answers) == STATEMENTS_PER_SHAPE
    fresh.plans.forget_statements()  # the plans stay
    assert not entry.answers
    _check(fresh, oracle, sql.format(3), cached=True)
