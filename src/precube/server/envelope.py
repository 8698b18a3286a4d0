"""Kylin's response envelope `{"code": "000", "data": …, "msg": ""}` and the one place where an error
becomes an HTTP status: every handler raises precube's errors and this module answers them."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi.responses import JSONResponse

from precube.errors import PrecubeError

LOG = logging.getLogger("precube.server")
OK = "000"
FAILED = "999"  # Kylin's code of every failed request; `error_code` says which failure

# By the error's stable `code`; an error whose code is not listed is a 400 (precube raises its own errors
# on purpose, about input a user can change) unless it is listed as the server's or the store's fault.
STATUS_BY_CODE: dict[str, int] = {
    "UNAUTHENTICATED": 401,
    "ACCESS_DENIED": 403,
    "SOURCE_FORBIDDEN": 403,  # a file path outside [server] source_roots
    "NOT_FOUND": 404,
    "UNKNOWN_OBJECT": 400,
    "ALREADY_EXISTS": 409,
    "VERSION_CONFLICT": 409,
    "JOB_CONFLICT": 409,
    "BUILD_CONFLICT": 409,
    "JOB_STATE": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "QUERY_TIMEOUT": 503,
    "STORE_UNAVAILABLE": 503,
    "ENVIRONMENT_MISSING": 503,
    "CACHE_ERROR": 503,
    "ENGINE_ERROR": 500,
    "LAYOUT_FAILED": 500,
    "BUILD_ERROR": 500,
    "JOB_ERROR": 500,
    "METADATA_ERROR": 500,
    "BACKUP_FORMAT": 500,
}


def ok(data: Any = None, msg: str = "") -> dict[str, Any]:
    """The envelope of a successful answer."""
    return {"code": OK, "data": data, "msg": msg}


def page(items: list[Any], offset: int, size: int, key: str = "value") -> dict[str, Any]:
    """Kylin's paged `data`: page `offset` (0-based) of `size` items, and the total count."""
    start = offset * size
    return {key: items[start : start + size], "offset": offset, "limit": size, "total_size": len(items)}


def status_of(err: PrecubeError) -> int:
    return STATUS_BY_CODE.get(err.code, 400)


def failure(status: int, msg: str, error_code: str, request_id: str = "") -> JSONResponse:
    """The envelope of a failed request: one line, never a stack trace."""
    body = {"code": FAILED, "data": None, "msg": msg.splitlines()[0] if msg else error_code, "error_code": error_code}
    if request_id:
        body["request_id"] = request_id
    return JSONResponse(
        body, status_code=status, headers={"WWW-Authenticate": 'Basic realm="precube"'} if status == 401 else None
    )


def invalid_input(errors: Sequence[Mapping[str, Any]], request_id: str = "") -> JSONResponse:
    """A 400 naming the first field that failed validation (pydantic's `errors()`)."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    return failure(400, f"{where}: {message}" if where else message, "INVALID_INPUT", request_id)


def unexpected(err: Exception, request_id: str = "") -> JSONResponse:
    """A 500 naming only the exception's type and the request; the traceback goes to the server log."""
    LOG.error("request %s failed", request_id, exc_info=err)
    message = f"internal error ({type(err).__name__}); see the server log, request {request_id}"
    return failure(500, message, "INTERNAL", request_id)
