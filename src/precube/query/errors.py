"""Errors of the query domain: each names what is wrong in the user's SQL."""

from __future__ import annotations

from precube.errors import PrecubeError


class QueryError(PrecubeError):
    """Base of query errors."""

    code = "QUERY_ERROR"


class SqlSyntaxError(QueryError):
    """The SQL does not parse, or is not a query."""

    code = "SQL_SYNTAX"
    deterministic = True


class UnknownObjectError(QueryError):
    """A table or column the SQL names does not exist in the project."""

    code = "UNKNOWN_OBJECT"
    deterministic = True


class UnknownTableError(UnknownObjectError):
    """A table the SQL names does not exist in the project."""


class UnknownColumnError(UnknownObjectError):
    """A column the SQL names is in none of the query's tables."""


class AmbiguousColumnError(UnknownObjectError):
    """An unqualified column the SQL names is in more than one of the query's tables."""


class UnknownFunctionError(UnknownObjectError):
    """A function the SQL calls does not exist, or not for its arguments' types."""


class ReadOnlyStatementError(SqlSyntaxError):
    """The statement would change something (INSERT, CREATE, …): precube answers queries only."""


class NoLayoutError(QueryError):
    """No layout can answer the query and pushdown is forbidden; the message gives each model's reason."""

    code = "NO_LAYOUT"
    deterministic = True


class PushdownError(QueryError):
    """The query cannot run on the source tables with the chosen engine."""

    code = "PUSHDOWN"
    deterministic = True


class ForbiddenSqlError(QueryError):
    """The SQL reads something other than the project's tables: a file, a URL, a table function, an engine
    catalog, or calls a function that is not an ordinary SQL function."""

    code = "FORBIDDEN_SQL"
    deterministic = True


class QueryTimeoutError(QueryError):
    """The statement ran longer than `[query] timeout_s` and was stopped."""

    code = "QUERY_TIMEOUT"


class QueryCancelledError(QueryError):
    """The statement was cancelled by its client (a cancel request, a closed connection) and stopped."""

    code = "QUERY_CANCELLED"


class ResultTooLargeError(QueryError):
    """The answer has more rows or bytes than `[query] max_result_rows` / `max_result_bytes`; the statement was
    stopped when it went past the bound."""

    code = "RESULT_TOO_LARGE"
    deterministic = True  # the same statement over the same data is as large: waiters share the refusal


class QueryMemoryError(QueryError):
    """The statement needed more memory than the engine's bound (`[query] memory_limit`, or its default) and
    was stopped."""

    code = "OUT_OF_MEMORY"


class StatementTooLargeError(SqlSyntaxError):
    """The statement's text is longer than `[query] max_statement_chars`."""

    code = "STATEMENT_TOO_LARGE"


class NestingTooDeepError(SqlSyntaxError):
    """The statement nests deeper than `[query] max_nesting_depth` (or than the parser can follow)."""

    code = "NESTING_TOO_DEEP"


class EngineError(QueryError):
    """The engine refused or failed the statement at run time (a type error, an overflow, unreadable data);
    the message is the engine's own first line."""

    code = "ENGINE_ERROR"
    reading = False  # the engine failed to read data (a file missing, unreadable or corrupt)


class TypeMismatchError(EngineError):
    """Values of types that do not go together (a CASE, COALESCE or BETWEEN mixing a date and a number): names
    the types and how to make them one."""

    code = "TYPE_MISMATCH"


class OperatorTypeError(TypeMismatchError):
    """No operator or function takes the statement's argument types (a date column compared with a number):
    names the column or function, the types and what to write instead."""


class InvalidTextError(EngineError):
    """A string the statement compares with or converts to another type is no value of it ('abc' as a number)."""

    code = "INVALID_VALUE"


class LayoutReadError(QueryError):
    """A statement over layouts failed on the engine (files missing or unreadable): names the layouts and
    segments; the source tables answer instead only when `query.pushdown_on_failure` allows it."""

    code = "LAYOUT_FAILED"
    missing = False  # a layout's files were found missing (not only the engine's word for it)


class DivisionByZeroError(EngineError):
    """The engine divided by zero (an integer division or modulo)."""


class NumericRangeError(EngineError):
    """A number is out of its type's range (an overflow, a cast to a narrower type)."""
