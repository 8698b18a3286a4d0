"""An aggregate way's replacement under FILTER (WHERE …): the condition inside every merge; the ways of a
call: COUNT/AVG of a column without NULLs, COUNT(DISTINCT a, b) from a measure of the pair."""

from __future__ import annotations

from typing import cast

import sqlglot
from sqlglot import exp

from precube.metadata import Function, FunctionExpression, Measure, Model
from precube.query.aggregates import MeasureIndex, agg_call, filtered


def _filtered(merge: str, condition: str, counting: bool = False) -> str:
    return filtered(sqlglot.parse_one(merge), sqlglot.parse_one(condition), counting).sql()


def test_every_aggregate_of_the_merge_reads_only_the_cells_where_the_condition_holds() -> None:
    assert _filtered("CAST(SUM(a) AS DOUBLE) / SUM(n)", "d > 3") == (
        "CAST(SUM(CASE WHEN d > 3 THEN a END) AS DOUBLE) / SUM(CASE WHEN d > 3 THEN n END)"
    )
    assert _filtered("COUNT(DISTINCT x)", "d = 1") == "COUNT(DISTINCT CASE WHEN d = 1 THEN x END)"
    assert _filtered("precube_bitmap_count(ARRAY_AGG(m))", "d = 1") == (
        "PRECUBE_BITMAP_COUNT(ARRAY_AGG(CASE WHEN d = 1 THEN m END))"
    )


def test_a_count_of_no_cells_is_zero() -> None:
    merged = filtered(sqlglot.parse_one("MAX(c)"), sqlglot.parse_one("d = 1"), counting=True)
    assert isinstance(merged, exp.Coalesce)
    assert merged.sql() == "COALESCE(MAX(CASE WHEN d = 1 THEN c END), 0)"


# --- the ways of a call (agg_call) over a hand-made measure index -----------------------------------------

SUM_A, COUNT_STAR, COUNT_B, SUM_B, PAIR_HLL, PAIR_BITMAP = 100001, 100002, 100003, 100004, 100005, 100006
A, B, C, D = 1, 2, 3, 4  # model column ids: a bigint, b a decimal(15,2), c and d integers
TYPES = {A: "bigint", B: "decimal(15,2)", C: "integer", D: "integer"}


def _measure(mid: int, fn: FunctionExpression, returntype: str = "") -> Measure:
    return Measure(id=mid, name=f"M{mid}", function=Function(expression=fn, parameters=[], returntype=returntype))


F_ = FunctionExpression
INDEX = MeasureIndex(
    cast(Model, None),
    {
        ("SUM", A): [_measure(SUM_A, F_.SUM)],
        ("COUNT", None): [_measure(COUNT_STAR, F_.COUNT)],
        ("SUM", B): [_measure(SUM_B, F_.SUM)],
        ("COUNT", B): [_measure(COUNT_B, F_.COUNT)],
    },
    COUNT_STAR,
    {
        frozenset({C, D}): [
            _measure(PAIR_HLL, F_.COUNT_DISTINCT, "hllc(14)"),
            _measure(PAIR_BITMAP, F_.COUNT_DISTINCT, "bitmap"),
        ]
    },
)


def _ways(sql: str, non_null: frozenset[int] = frozenset()) -> list[tuple[frozenset[int], frozenset[int], str]]:
    node = sqlglot.parse_one(sql, read="spark")
    assert isinstance(node, exp.AggFunc)
    ids = {"a": A, "b": B, "c": C, "d": D}

    def column_of(arg: exp.Expr) -> int | None:
        return ids.get(arg.name) if isinstance(arg, exp.Column) else None

    call = agg_call(node, INDEX, column_of, TYPES, frozenset({D}), non_null)
    return [(w.dims, w.measures, w.build(lambda c: exp.column(c), frozenset({D})).sql()) for w in call.ways]


def _measured(sql: str, non_null: frozenset[int] = frozenset()) -> list[tuple[frozenset[int], frozenset[int], str]]:
    """The ways from measures alone (a layout without the argument as a dimension)."""
    return [w for w in _ways(sql, non_null) if not w[0]]


def test_count_of_a_column_without_nulls_is_count_star() -> None:
    assert _measured("count(a)") == []  # no COUNT(a) measure: NULLs would be counted
    [(dims, measures, sql)] = _measured("count(a)", non_null=frozenset({A}))
    assert (dims, measures) == (frozenset(), frozenset({COUNT_STAR}))
    assert sql == 'COALESCE(CAST(SUM("100002") AS BIGINT), 0)'


def test_avg_of_a_column_without_nulls_is_its_sum_over_count_star() -> None:
    assert _measured("avg(a)") == []
    [(_, measures, sql)] = _measured("avg(a)", non_null=frozenset({A}))
    assert measures == frozenset({SUM_A, COUNT_STAR})
    assert sql == 'CAST(SUM("100001") AS DOUBLE) / SUM("100002")'


def test_avg_of_a_decimal_has_sparks_decimal_type_and_prefers_its_count_measure() -> None:
    ways = _measured("avg(b)", non_null=frozenset({B}))
    assert [m for _, m, _ in ways] == [frozenset({SUM_B, COUNT_B}), frozenset({SUM_B, COUNT_STAR})]
    # Spark's AVG: the sum as DECIMAL(p+10, s) over the count as DECIMAL(20, 0), cast to DECIMAL(p+4, s+4)
    assert ways[0][2] == (
        'CAST(CAST(SUM("100004") AS DECIMAL(25, 2)) / CAST(SUM("100003") AS DECIMAL(20, 0)) AS DECIMAL(19, 6))'
    )


def test_count_distinct_of_a_pair_uses_the_measure_of_that_pair_in_any_order_bitmap_first() -> None:
    for sql in ("count(distinct c, d)", "count(distinct d, c)"):
        ways = _ways(sql)
        assert [m for _, m, _ in ways] == [frozenset(), frozenset({PAIR_BITMAP}), frozenset({PAIR_HLL})]
        assert ways[0][0] == frozenset({C, D})  # the distinct tuples of a layout holding both
    assert [m for _, m, _ in _ways("count(distinct c, d, a)")] == [frozenset()]  # no measure of the triple
    assert [m for _, m, _ in _ways("count(distinct c, c)")] == [frozenset()]
