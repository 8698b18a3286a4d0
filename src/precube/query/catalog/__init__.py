"""The catalog a BI tool reads, answered from the project's metadata and never from an engine's own catalog:
SHOW/DESCRIBE (`show`) and the information_schema views (`views`, their rows in `rows`), both presenting the
one description of the project's catalog (`description`) that every door lists."""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from precube.query.bounds import UNBOUNDED, ResultBounds
from precube.query.cancel import Cancellation
from precube.query.catalog.show import Show, answer_show, parse_show, starts_show
from precube.query.catalog.views import InformationSchema, reads_views
from precube.query.errors import QueryError
from precube.query.frontend import parse
from precube.query.project_metadata import ProjectMetadata
from precube.query.spill import Spill

_MENTIONS_VIEWS = re.compile(r"information_schema", re.IGNORECASE)


class CatalogAnswers:
    """Recognises a session's catalog statements and answers them (one per session: it holds the views'
    connection)."""

    def __init__(
        self,
        memory_limit: str = "",
        timeout_s: float | None = None,
        max_depth: int | None = None,
        bounds: ResultBounds = UNBOUNDED,
        spill: Spill | None = None,
    ) -> None:
        self.views = InformationSchema(memory_limit, timeout_s, bounds, spill)
        self.max_depth = max_depth

    @staticmethod
    def may_answer(sql: str) -> bool:
        """Whether the statement may be a catalog statement (a prefix and a substring test: no parsing)."""
        return starts_show(sql) or _MENTIONS_VIEWS.search(sql) is not None

    def recognise(self, sql: str) -> Show | exp.Query | None:
        """The statement parsed, when it is a catalog statement (SHOW/DESCRIBE, or a query over an
        information_schema view); None for any other (cheap: a prefix and a substring test first)."""
        if starts_show(sql):
            return parse_show(sql)
        if _MENTIONS_VIEWS.search(sql) is None:  # (`may_answer` without testing the prefix again)
            return None
        try:
            tree = parse(sql, max_depth=self.max_depth)
        except QueryError:  # not a query: the query path reports its error
            return None
        return tree if reads_views(tree) else None

    def answer(
        self, statement: Show | exp.Query, metadata: ProjectMetadata, cancel: Cancellation | None = None
    ) -> pa.Table:
        """The statement's rows; a query over the views runs within the statement's deadline (`cancel`'s)."""
        if isinstance(statement, Show):
            return answer_show(statement, metadata)
        return self.views.query(statement, metadata, cancel)

    def close(self) -> None:
        self.views.close()


__all__ = ["CatalogAnswers", "Show"]
