"""Pure ASGI middleware (cheaper than Starlette's BaseHTTPMiddleware): a request id and one access-log
line per request, and a bound on the request body that stops reading at `max_body_bytes`."""

from __future__ import annotations

import logging
import random
import re
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from precube.server.envelope import failure, url_of

ACCESS = logging.getLogger("precube.access")
_GOOD_ID = re.compile(r"^[A-Za-z0-9._\-]{1,64}$")


class RequestLog:
    """Gives every request an id (the caller's `X-Request-ID` when it is sane), returns it as a header,
    and logs `METHOD PATH STATUS MS user=… rid=…` when the response starts."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _GOOD_ID.match(given) else f"{random.getrandbits(64):016x}"  # an id, not a secret: no syscall
        state: dict[str, Any] = scope.setdefault("state", {})
        state["request_id"] = rid
        started = time.perf_counter()

        async def send_logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
                ms = (time.perf_counter() - started) * 1000
                path = scope["path"] + (f"?{scope['query_string'].decode('latin-1')}" if scope["query_string"] else "")
                ACCESS.info(
                    "%s %s %d %.1fms user=%s rid=%s",
                    scope["method"],
                    path,
                    message["status"],
                    ms,
                    state.get("user", "-"),
                    rid,
                )
            await send(message)

        await self.app(scope, receive, send_logged)


class BodyLimit:
    """Refuses a body larger than `max_bytes` with 413 in Kylin's envelope, by its Content-Length or, when
    it is streamed, as soon as more arrives (the body is read here, at most `max_bytes`, then handed on)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body exceeds {self.max_bytes} bytes"
        await failure(413, message, "PAYLOAD_TOO_LARGE", url=url_of(scope))(scope, receive, send)
