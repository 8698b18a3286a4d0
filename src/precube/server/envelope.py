"""Kylin's response envelope `{"code": "000", "data": …, "msg": ""}` and the one place where an error becomes
an HTTP answer: every handler raises precube's errors and this module answers them by the service's map
(`precube.service.errors`): its status, and its SQLSTATE and `retryable` in the failure envelope (a retryable
failure also says `Retry-After`); and the one place a paged listing's `page_offset` and `page_size` are read."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Query
from fastapi.responses import JSONResponse
from starlette.datastructures import URL
from starlette.types import Scope

from precube.errors import InvalidInputError, PrecubeError
from precube.service.errors import UNEXPECTED, disposition

LOG = logging.getLogger("precube.server")
OK = "000"
FAILED = "999"  # Kylin's code of every failed request; `error_code` says which failure
RETRY_AFTER_S = 1  # a retryable failure's `Retry-After`: a store or cache back, a conflicting write done


def ok(data: Any = None, msg: str = "") -> dict[str, Any]:
    """The envelope of a successful answer."""
    return {"code": OK, "data": data, "msg": msg}


MAX_PAGE_SIZE = 100_000  # a larger `page_size` is this: clients ask for "everything" with Integer.MAX_VALUE - 1
MAX_PAGE_OFFSET = 2**31 - 1  # Java's int, as Kylin reads it; offset * size stays within SQL's 64-bit LIMIT/OFFSET


@dataclass(frozen=True)
class Paging:
    """Page `offset` (0-based) of `size` items."""

    offset: int
    size: int

    @property
    def start(self) -> int:
        """The index of the page's first item."""
        return self.offset * self.size


def paging(
    page_offset: int = Query(0, ge=0, description="Page number, from 0 (a larger one than 2^31-1 is that)."),
    page_size: int = Query(10, ge=1, description=f"Items per page (a larger one than {MAX_PAGE_SIZE:,} is that)."),
) -> Paging:
    """Every paged route's `page_offset` and `page_size` (a dependency): any positive size and any offset are
    taken, clamped to the maxima rather than refused, as Kylin's clients ask for a page of 2147483646 items."""
    return Paging(min(page_offset, MAX_PAGE_OFFSET), min(page_size, MAX_PAGE_SIZE))


def page(items: list[Any], paging: Paging, key: str = "value") -> dict[str, Any]:
    """Kylin's paged `data`: the page's items, its offset and size, and the total count."""
    start = paging.start
    window = items[start : start + paging.size]
    return {key: window, "offset": paging.offset, "limit": paging.size, "total_size": len(items)}


def error(err: PrecubeError, request_id: str = "", url: str = "") -> JSONResponse:
    """The failure envelope of one of precube's errors, as the service's map says."""
    how = disposition(err)
    retry_after = getattr(err, "retry_after_s", None)  # an error that knows when a retry may succeed
    return failure(
        how.http_status, err.message, err.code, request_id, how.sqlstate, how.retryable, retry_after, url=url
    )


def failure(
    status: int,
    msg: str,
    error_code: str,
    request_id: str = "",
    sqlstate: str = "",
    retryable: bool = False,
    retry_after_s: float | None = None,
    url: str = "",
) -> JSONResponse:
    """The envelope of a failed request: one line, never a stack trace; `sqlstate` (when known) and `retryable`
    tell a client what kind of failure it is, as the Postgres wire's SQLSTATE does. It has every field of Kylin
    5's `ErrorResponse` (`exception`, the message again, is what Kylin's clients print; `url` the request's,
    without its query; `stacktrace` and `suggestion` are null)."""
    line = msg.splitlines()[0] if msg else error_code
    body: dict[str, Any] = {
        "code": FAILED,
        "data": None,
        "msg": line,
        "error_code": error_code,
        "exception": line,
        "stacktrace": None,
        "suggestion": None,
        "url": url,
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


def url_of(scope: Scope) -> str:
    """The request's URL as it was sent, without its query (Kylin's `ErrorResponse.url`: `getRequestURL()`)."""
    raw = scope.get("raw_path")
    url = URL(scope=scope).replace(query="")
    return str(url.replace(path=raw.decode("latin-1")) if raw else url)


def invalid_input(errors: Sequence[Mapping[str, Any]], request_id: str = "", url: str = "") -> JSONResponse:
    """A 400 naming the first field that failed validation (pydantic's `errors()`)."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    return error(InvalidInputError(f"{where}: {message}" if where else message), request_id, url)


def unexpected(err: Exception, request_id: str = "", url: str = "") -> JSONResponse:
    """A 500 naming only the exception's type and the request; the traceback goes to the server log."""
    LOG.error("request %s failed", request_id, exc_info=err)
    message = f"internal error ({type(err).__name__}); see the server log, request {request_id}"
    return failure(UNEXPECTED.http_status, message, "INTERNAL", request_id, UNEXPECTED.sqlstate, url=url)
