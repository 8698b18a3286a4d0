"""Errors as the wire sends them: an ErrorResponse with the SQLSTATE the service's map gives precube's error
(`precube.service.errors`; a client raises its own exception class — psycopg's ProgrammingError for 42xxx,
DataError for 22xxx, …) and precube's one-line message. Whether a retry may succeed shows only in the SQLSTATE,
as with PostgreSQL (40001, 57014, 58000)."""

from __future__ import annotations

from precube.errors import PrecubeError
from precube.service.errors import disposition


class PgError(Exception):
    """An error answered as an ErrorResponse: SQLSTATE, one-line message, and whether it ends the connection."""

    def __init__(self, sqlstate: str, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.sqlstate, self.message, self.fatal = sqlstate, message.splitlines()[0] if message else sqlstate, fatal

    @classmethod
    def of(cls, err: PrecubeError, fatal: bool = False) -> PgError:
        return cls(disposition(err).sqlstate, err.message, fatal)

    def fields(self) -> dict[str, str]:
        severity = "FATAL" if self.fatal else "ERROR"
        return {"S": severity, "V": severity, "C": self.sqlstate, "M": self.message}
