"""PEP 249's exceptions, each carrying precube's one-line message (`str(err)`), its stable error `code` and, for a
server's answer, the HTTP `status`; and the one map from precube's errors to them."""

from __future__ import annotations


class Warning(Exception):  # noqa: N818 (PEP 249's name)
    """PEP 249's warning (precube raises none)."""


class Error(Exception):
    """The base of every error the DB-API raises."""

    def __init__(self, message: str, code: str = "CLIENT_ERROR", status: int = 0) -> None:
        super().__init__(message)
        self.message, self.code, self.status = message, code, status


class InterfaceError(Error):
    """The driver was misused (a closed cursor or connection, a fetch before any execute)."""


class DatabaseError(Error):
    """precube refused or failed the statement."""


class DataError(DatabaseError):
    """The data could not be processed (the engine's type error, overflow, division by zero)."""


class OperationalError(DatabaseError):
    """precube could not answer, for a reason outside the statement: the server unreachable, the sign-in
    refused, a time-out, no layout built for the query, layouts unreadable, a store or cache down."""


class IntegrityError(DatabaseError):
    """PEP 249's (precube writes nothing through SQL: never raised)."""


class InternalError(DatabaseError):
    """precube failed unexpectedly (a server's 500)."""


class ProgrammingError(DatabaseError):
    """The statement is wrong: a syntax error, an unknown table or column, SQL reading outside the project,
    wrong parameters, or no permission on the project."""


class NotSupportedError(DatabaseError):
    """Something precube does not do (transactions, a parameter type, a statement the engine cannot run)."""


# precube's error codes (`PrecubeError.code`, a server's `error_code`) by the PEP 249 class they raise
_BY_CODE: dict[str, type[Error]] = {
    "SQL_SYNTAX": ProgrammingError,
    "STATEMENT_TOO_LARGE": ProgrammingError,
    "NESTING_TOO_DEEP": ProgrammingError,
    "UNKNOWN_OBJECT": ProgrammingError,
    "FORBIDDEN_SQL": ProgrammingError,
    "INVALID_INPUT": ProgrammingError,
    "NOT_FOUND": ProgrammingError,
    "ACCESS_DENIED": ProgrammingError,
    "PUSHDOWN": NotSupportedError,
    "ENGINE_ERROR": DataError,
    "NO_LAYOUT": OperationalError,
    "QUERY_TIMEOUT": OperationalError,
    "LAYOUT_FAILED": OperationalError,
    "UNAUTHENTICATED": OperationalError,
    "SERVER_UNREACHABLE": OperationalError,
    "STORE_UNAVAILABLE": OperationalError,
    "ENVIRONMENT_MISSING": OperationalError,
    "CACHE_ERROR": OperationalError,
    "CONFIG_ERROR": OperationalError,
    "PAYLOAD_TOO_LARGE": ProgrammingError,
    "SOURCE_UNREADABLE": OperationalError,
    "UNSUPPORTED_TYPE": NotSupportedError,
    "QUERY_ERROR": DatabaseError,
    "METADATA_ERROR": InternalError,
    "INTERNAL": InternalError,
}


def error_of(message: str, code: str, status: int = 0) -> Error:
    """The PEP 249 error for precube's `code` (else by the HTTP `status`: 4xx the statement's fault, 5xx
    precube's)."""
    kind = _BY_CODE.get(code)
    if kind is None:
        kind = ProgrammingError if 400 <= status < 500 else InternalError if status >= 500 else DatabaseError
    return kind(message, code, status)
