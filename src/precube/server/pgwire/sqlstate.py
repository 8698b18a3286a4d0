"""Errors as the wire sends them: an ErrorResponse's SQLSTATE, mapped from precube's stable error codes (so a
client raises its own exception class — psycopg's ProgrammingError for 42xxx, DataError for 22xxx, …) with
precube's one-line message."""

from __future__ import annotations

from precube.errors import PrecubeError

# precube's `code` → SQLSTATE; codes not listed are input a user can change (42000), as the REST API's 400
SQLSTATE_BY_CODE: dict[str, str] = {
    "SQL_SYNTAX": "42601",  # syntax_error
    "STATEMENT_TOO_LARGE": "54000",  # program_limit_exceeded
    "NESTING_TOO_DEEP": "54001",  # statement_too_complex
    "UNKNOWN_OBJECT": "42704",  # undefined_object
    "FORBIDDEN_SQL": "42501",  # insufficient_privilege
    "ACCESS_DENIED": "42501",
    "UNAUTHENTICATED": "28P01",  # invalid_password
    "NOT_FOUND": "3D000",  # invalid_catalog_name: the project a connection names
    "NO_LAYOUT": "55000",  # object_not_in_prerequisite_state: no layout answers it, pushdown is off
    "PUSHDOWN": "0A000",  # feature_not_supported
    "QUERY_TIMEOUT": "57014",  # query_canceled
    "INVALID_INPUT": "22023",  # invalid_parameter_value
    "ENGINE_ERROR": "XX000",  # internal_error
    "LAYOUT_FAILED": "58030",  # io_error
    "STORE_UNAVAILABLE": "58000",  # system_error
    "ENVIRONMENT_MISSING": "58000",
    "CACHE_ERROR": "58000",
    "METADATA_ERROR": "58000",
}
DEFAULT = "42000"  # syntax_error_or_access_rule_violation


class PgError(Exception):
    """An error answered as an ErrorResponse: SQLSTATE, one-line message, and whether it ends the connection."""

    def __init__(self, sqlstate: str, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.sqlstate, self.message, self.fatal = sqlstate, message.splitlines()[0] if message else sqlstate, fatal

    @classmethod
    def of(cls, err: PrecubeError, fatal: bool = False) -> PgError:
        return cls(SQLSTATE_BY_CODE.get(err.code, DEFAULT), err.message, fatal)

    def fields(self) -> dict[str, str]:
        severity = "FATAL" if self.fatal else "ERROR"
        return {"S": severity, "V": severity, "C": self.sqlstate, "M": self.message}
