"""Errors of the query domain: each names what is wrong in the user's SQL."""

from __future__ import annotations

from precube.errors import PrecubeError


class QueryError(PrecubeError):
    """Base of query errors."""

    code = "QUERY_ERROR"


class SqlSyntaxError(QueryError):
    """The SQL does not parse, or is not a query."""

    code = "SQL_SYNTAX"


class UnknownObjectError(QueryError):
    """A table or column the SQL names does not exist in the project."""

    code = "UNKNOWN_OBJECT"


class NoLayoutError(QueryError):
    """No layout can answer the query and pushdown is forbidden; the message gives each model's reason."""

    code = "NO_LAYOUT"


class PushdownError(QueryError):
    """The query cannot run on the source tables with the chosen engine."""

    code = "PUSHDOWN"


class LayoutReadError(QueryError):
    """A statement over layouts failed on the engine (files missing or unreadable): names the layouts and
    segments; the source tables answer instead only when `query.pushdown_on_failure` allows it."""

    code = "LAYOUT_FAILED"
    missing = False  # a layout's files were found missing (not only the engine's word for it)
