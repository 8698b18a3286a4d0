"""What the query service records of each statement (`precube.metrics`): how it was answered, and in how long."""

from __future__ import annotations

from precube import metrics
from precube.metadata.index_plan import is_table_index
from precube.query.session import CATALOG, QueryResult


def answer_kind(result: QueryResult) -> str:
    """How `result` was answered: one of `metrics.ANSWER_KINDS` (a table index when any layout it read is one)."""
    if result.from_cache:
        return "cache"
    if result.pushdown:
        return "pushdown"
    if result.engine == CATALOG:
        return "catalog"
    return "table_index" if any(is_table_index(i) for i in result.layout_ids) else "layout"


def record(result: QueryResult | None, seconds: float) -> None:
    """Count a statement answered by `result` (None: it failed) after `seconds`."""
    metrics.answered("error" if result is None else answer_kind(result), seconds)
