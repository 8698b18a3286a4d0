"""Which answers are kept (Kylin's `QueryCacheManager` rules, thresholds configurable): a successful query
that was slow or scanned many rows, whose result is not too large and does not depend on when or by whom it
ran (`volatility`); pushdown answers only when allowed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from precube.cache.volatility import volatile_call

if TYPE_CHECKING:
    from precube.query.session import QueryResult
    from precube.settings import CacheSettings


def scanned_rows(result: QueryResult) -> int:
    """Layout rows the query read (0 for pushdown: the source's are unknown)."""
    return sum(m.rows for m in result.matches)


def refusal(result: QueryResult, settings: CacheSettings) -> str | None:
    """Why `result` is not cached; None when it is."""
    call = volatile_call(result.plan.tree) if result.plan is not None else None
    if call is not None:
        return f"it calls {call}, whose value changes from one run to the next"
    if result.pushdown and not settings.cache_pushdown:
        return "pushdown answers are not cached (cache.cache_pushdown)"
    cells = result.table.num_rows * result.table.num_columns
    if cells > settings.max_cells:
        return f"{cells} cells exceed cache.max_cells ({settings.max_cells})"
    if result.duration_ms < settings.min_duration_ms and scanned_rows(result) < settings.min_scanned_rows:
        return "faster than cache.min_duration_ms and fewer rows than cache.min_scanned_rows"
    return None
