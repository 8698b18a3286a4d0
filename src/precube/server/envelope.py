"""Kylin's response envelope `{"code": "000", "data": …, "msg": ""}` and the one place where an error becomes
an HTTP answer: every handler raises precube's errors and this module answers them by the service's map
(`precube.service.errors`): its status, and its SQLSTATE and `retryable` in the failure envelope (a retryable
failure also says `Retry-After`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi.responses import JSONResponse

from precube.errors import InvalidInputError, PrecubeError
from precube.service.errors import UNEXPECTED, disposition

LOG = logging.getLogger("precube.server")
OK = "000"
FAILED = "999"  # Kylin's code of every failed request; `error_code` says which failure
RETRY_AFTER_S = 1  # a retryable failure's `Retry-After`: a store or cache back, a conflicting write done


def ok(data: Any = None, msg: str = "") -> dict[str, Any]:
    """The envelope of a successful answer."""
    return {"code": OK, "data": data, "msg": msg}


def page(items: list[Any], offset: int, size: int, key: str = "value") -> dict[str, Any]:
    """Kylin's paged `data`: page `offset` (0-based) of `size` items, and the total count."""
    start = offset * size
    return {key: items[start : start + size], "offset": offset, "limit": size, "total_size": len(items)}


def error(err: PrecubeError, request_id: str = "") -> JSONResponse:
    """The failure envelope of one of precube's errors, as the service's map says."""
    how = disposition(err)
    retry_after = getattr(err, "retry_after_s", None)  # an error that knows when a retry may succeed
    return failure(how.http_status, err.message, err.code, request_id, how.sqlstate, how.retryable, retry_after)


def failure(
    status: int,
    msg: str,
    error_code: str,
    request_id: str = "",
    sqlstate: str = "",
    retryable: bool = False,
    retry_after_s: float | None = None,
) -> JSONResponse:
    """The envelope of a failed request: one line, never a stack trace; `sqlstate` (when known) and `retryable`
    tell a client what kind of failure it is, as the Postgres wire's SQLSTATE does."""
    body: dict[str, Any] = {
        "code": FAILED,
        "data": None,
        "msg": msg.splitlines()[0] if msg else error_code,
        "error_code": error_code,
    }
    if sqlstate:
        body["sqlstate"] = sqlstate
    body["retryable"] = retryable
    if request_id:
        body["request_id"] = request_id
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW-Authenticate"] = 'Basic realm="precube"'
    if retryable:
        headers["Retry-After"] = str(RETRY_AFTER_S if retry_after_s is None else max(1, math.ceil(retry_after_s)))
    return JSONResponse(body, status_code=status, headers=headers or None)


def invalid_input(errors: Sequence[Mapping[str, Any]], request_id: str = "") -> JSONResponse:
    """A 400 naming the first field that failed validation (pydantic's `errors()`)."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    return error(InvalidInputError(f"{where}: {message}" if where else message), request_id)


def unexpected(err: Exception, request_id: str = "") -> JSONResponse:
    """A 500 naming only the exception's type and the request; the traceback goes to the server log."""
    LOG.error("request %s failed", request_id, exc_info=err)
    message = f"internal error ({type(err).__name__}); see the server log, request {request_id}"
    return failure(UNEXPECTED.http_status, message, "INTERNAL", request_id, UNEXPECTED.sqlstate)
