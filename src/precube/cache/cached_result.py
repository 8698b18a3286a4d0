"""A result-cache answer: the rows a session computed earlier, and how they were computed then (the cache keeps
no plan). It reads as the session's `QueryResult` does, so front ends need not know where an answer came from."""

from __future__ import annotations

from dataclasses import dataclass

from precube.query.session import QueryResult


@dataclass
class CachedResult(QueryResult):
    """An answer from the result cache; `from_cache` is False for the answer of the identical query this one
    waited on (computed just now, not read from the cache)."""

    from_cache: bool = True  # type: ignore[misc]  # a field here, the base's constant False
    answered_pushdown: bool = False
    answered_model: str | None = None
    answered_layouts: tuple[int, ...] = ()
    answered_segments: tuple[str, ...] = ()
    answered_reason: str | None = None
    cached_ms: int = 0  # epoch ms it was cached

    @property
    def pushdown(self) -> bool:
        return self.answered_pushdown

    @property
    def pushdown_reason(self) -> str | None:
        return self.answered_reason

    @property
    def model(self) -> str | None:
        return self.answered_model

    @property
    def layout_ids(self) -> list[int]:
        return list(self.answered_layouts)

    @property
    def segments(self) -> list[str]:
        return list(self.answered_segments)
