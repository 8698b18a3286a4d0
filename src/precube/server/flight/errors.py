"""A precube error as a Flight error: its one-line message and, as closely as pyarrow's server lets it, the gRPC
code of its row in `service.errors`.

pyarrow's Flight server sends a clean message only for its own Flight errors, whose codes are CANCELLED,
DEADLINE_EXCEEDED, UNAUTHENTICATED, PERMISSION_DENIED, UNAVAILABLE, INTERNAL and UNKNOWN; any other exception
(`ArrowInvalid` for INVALID_ARGUMENT, `ArrowKeyError` for NOT_FOUND, …) reaches the client with the server's
Python traceback appended to its message. No traceback is sent: an error whose code is not one of those is
answered UNKNOWN (`FlightServerError`), a retryable one UNAVAILABLE (the code gRPC clients retry), and the
message says what is wrong in either case."""

from __future__ import annotations

import pyarrow.flight as flight

from precube.errors import PrecubeError
from precube.service.errors import disposition

_BY_CODE: dict[str, type[flight.FlightError]] = {
    "CANCELLED": flight.FlightCancelledError,
    "DEADLINE_EXCEEDED": flight.FlightTimedOutError,
    "UNAUTHENTICATED": flight.FlightUnauthenticatedError,
    "PERMISSION_DENIED": flight.FlightUnauthorizedError,
    "UNAVAILABLE": flight.FlightUnavailableError,
    "INTERNAL": flight.FlightInternalError,
}


def flight_error(err: PrecubeError) -> Exception:
    """The Flight error answering `err`."""
    answer = disposition(err)
    kind = _BY_CODE.get(answer.grpc)
    if kind is None:
        kind = flight.FlightUnavailableError if answer.retryable else flight.FlightServerError
    error: Exception = kind(str(err))
    return error


def unexpected() -> Exception:
    error: Exception = flight.FlightInternalError("internal error: see the server's log")
    return error
