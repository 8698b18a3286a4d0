"""The hot path: `POST /kylin/api/query` dispatched by a pure ASGI middleware instead of FastAPI's router.

FastAPI matches a request against its routes, builds a `Request`, resolves dependencies and hops to its thread
pool: about 0.6 ms a request on the 2-core machine, more than a result-cache hit costs in all. This middleware
sits inside `Authenticate` and `BodyLimit` (the caller is signed in and the body bounded before it runs) and
answers the one route itself with the route's own parts: the body validated by the same `QueryRequest` model,
the route's requirement checked by the same `Requirement.check`, the answer made by the same
`routers.query.answer` (the query service: its fast lane for a cache hit or a direct answer from a held layout's
columns, its executor otherwise), failures in
the same envelope as the app's error handlers. The FastAPI route stays declared and answers the same way when
the hot path is off (`create_app(hot_path=False)`; a test compares the two).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from fastapi.exceptions import RequestValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from precube.errors import InvalidInputError, PrecubeError
from precube.server.envelope import error, invalid_input, unexpected, url_of
from precube.server.routers.query import ASK_QUERY, QUERY_PATH, answer, query_request
from precube.server.security import Requirement, parse_json


class QueryHotPath:
    """Answers `POST {base}/query`; every other request goes on to the application."""

    def __init__(self, app: ASGIApp, base: str) -> None:
        self.app, self.path = app, base + QUERY_PATH
        self.requirement: Requirement = ASK_QUERY.requirement  # type: ignore[attr-defined]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope["state"]
        rid = str(state.get("request_id", ""))
        try:
            response = await self._answer(scope, receive, state)
        except PrecubeError as err:
            response = error(err, rid, url_of(scope))
        except RequestValidationError as err:
            response = invalid_input(err.errors(), rid, url_of(scope))
        except Exception as err:  # noqa: BLE001 (answered in the envelope and logged, as the app's handler does)
            response = unexpected(err, rid, url_of(scope))
        await response(scope, receive, send)

    async def _answer(self, scope: Scope, receive: Receive, state: dict[str, Any]) -> Response:
        headers = dict(scope["headers"])
        kind = headers.get(b"content-type", b"application/json").decode("latin-1").lower()
        raw = await _body(receive)
        parsed = parse_json(raw) if "json" in kind and raw else None  # as the route's dependency reads it
        server = scope["app"].state.server
        named = parsed.get("project") if isinstance(parsed, dict) else None
        given = [*_query_values(scope["query_string"], "project"), named]
        # the permission first, as the route's dependency: a caller without it learns nothing of the body's faults
        caller = self.requirement.check(server.directory, state["principal"], given)
        body = query_request(kind, parsed)
        accept = headers.get(b"accept", b"").decode("latin-1")
        return await answer(server, caller, body, accept, receive, state)


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise InvalidInputError("the client closed the connection before sending the body")
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _query_values(query: bytes, name: str) -> list[str]:
    """Every value of `name` in a query string (each is checked: two different projects are refused)."""
    return parse_qs(query.decode("latin-1"), keep_blank_values=True).get(name, []) if query else []
