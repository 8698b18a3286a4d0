"""An aggregate way's replacement under FILTER (WHERE …): the condition inside every merge."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from precube.query.aggregates import filtered


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
