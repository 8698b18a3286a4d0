"""Which answers are kept (Kylin's `QueryCacheManager` rules, thresholds configurable): a successful query
that was slow or scanned many rows, or whose answer is small for the time it took, whose result is not too
large and does not depend on when or by whom it ran (`volatility`); pushdown answers only when allowed.

Small for its time: a hit costs ~0.05 ms where a warm answer from a small layout costs 0.5-2 ms, and the
cache's bound is bytes, so an answer pays for its place when it saves enough time per byte it holds
(`min_ms_per_mb`): a 1-row answer is kept even after 1 ms, a 10 MB one only after 10 times the ms per MB."""

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
    if result.duration_ms >= settings.min_duration_ms or scanned_rows(result) >= settings.min_scanned_rows:
        return None
    if settings.min_ms_per_mb and result.duration_ms >= settings.min_ms_per_mb * result.table.nbytes / MB:
        return None
    return (
        "faster than cache.min_duration_ms, fewer rows than cache.min_scanned_rows and larger than "
        "cache.min_ms_per_mb allows for its time"
    )


MB = 1024 * 1024
