"""A precube error as a Flight error: its one-line message and the gRPC code of its row in `service.errors`, as
far as pyarrow's server can send that code.

pyarrow sends a Flight error (CANCELLED, DEADLINE_EXCEEDED, UNAUTHENTICATED, PERMISSION_DENIED, UNAVAILABLE,
INTERNAL, UNKNOWN) with its message as given. Three more codes come only from Arrow's own exceptions:
`ArrowInvalid` (INVALID_ARGUMENT), `ArrowKeyError` (NOT_FOUND) and `ArrowNotImplementedError` (UNIMPLEMENTED);
pyarrow appends such an exception's Python traceback to the message it sends, formatted by
`traceback.format_exception` when the call ends. precube raises its own subclasses of them (`RefusalError`), and
`install()` has that function format one as its SQLSTATE alone, so no traceback or server path reaches a
client. No other code (RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ALREADY_EXISTS, ABORTED, OUT_OF_RANGE) can be
sent by a pyarrow server: such an error is answered UNAVAILABLE when retryable (the code gRPC clients retry),
else UNKNOWN; the trailer `x-precube-grpc-code` always names the intended code."""

from __future__ import annotations

import traceback
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from precube.errors import PrecubeError
from precube.service.errors import disposition

_FLIGHT: dict[str, type[flight.FlightError]] = {
    "CANCELLED": flight.FlightCancelledError,
    "DEADLINE_EXCEEDED": flight.FlightTimedOutError,
    "UNAUTHENTICATED": flight.FlightUnauthenticatedError,
    "PERMISSION_DENIED": flight.FlightUnauthorizedError,
    "UNAVAILABLE": flight.FlightUnavailableError,
    "INTERNAL": flight.FlightInternalError,
}


class RefusalError(Exception):
    """A precube error sent as one of Arrow's exceptions: its traceback is formatted as its SQLSTATE."""

    sqlstate = ""


class _InvalidError(RefusalError, pa.ArrowInvalid):  # type: ignore[misc]
    pass


class _NotFoundError(RefusalError, pa.ArrowKeyError):  # type: ignore[misc]
    pass


class _NotImplementedError(RefusalError, pa.ArrowNotImplementedError):  # type: ignore[misc]
    pass


_ARROW: dict[str, type[RefusalError]] = {
    "INVALID_ARGUMENT": _InvalidError,
    "NOT_FOUND": _NotFoundError,
    "UNIMPLEMENTED": _NotImplementedError,
}


def flight_error(err: PrecubeError) -> Exception:
    """The exception answering `err` with its gRPC code (or the nearest one pyarrow can send)."""
    answer = disposition(err)
    arrow = _ARROW.get(answer.grpc)
    if arrow is not None:
        refusal = arrow(str(err))
        refusal.sqlstate = answer.sqlstate
        return refusal
    kind = _FLIGHT.get(answer.grpc)
    if kind is None:
        kind = flight.FlightUnavailableError if answer.retryable else flight.FlightServerError
    error: Exception = kind(str(err))
    return error


def unexpected() -> Exception:
    error: Exception = flight.FlightInternalError("internal error: see the server's log")
    return error


_format_exception = traceback.format_exception


def _format(exc: Any, /, *args: Any, **kwargs: Any) -> list[str]:
    value = args[0] if args and not isinstance(exc, BaseException) else exc
    if isinstance(value, RefusalError):
        return [f"SQLSTATE {value.sqlstate}"]
    return _format_exception(exc, *args, **kwargs)


def install() -> None:
    """Format precube's refusals without their traceback, for pyarrow's server (idempotent; every other
    exception is formatted as before)."""
    traceback.format_exception = _format
