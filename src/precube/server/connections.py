"""Connection hygiene of the HTTP door: how uvicorn serves `precube serve` (and the tests' live servers).

uvicorn closes an idle keep-alive connection after `timeout_keep_alive`, but it has no deadline for the
headers of a request: a client that opens a connection and sends nothing, or half a request line, holds it
for ever (400 such connections were all still open after 10 s). `HeaderTimeout` closes a connection whose
next request's headers have not all arrived `[server] header_timeout_s` after it opened or after its last
answer; a request whose headers arrived is the application's to bound. `[server] max_connections` is
uvicorn's `limit_concurrency`: past it, a request is answered 503 at once.

An answer is written whole into the connection's buffer, and closing a connection waits for that buffer to
drain: a client that stops reading would hold the answer's memory for ever. A route that sets `SEND_DEADLINE`
in its request's scope state (a query: its statement's deadline) has the connection dropped (aborted) when
its answer is still not all sent by then."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from precube.settings import ServerSettings

SEND_DEADLINE = "precube.send_deadline"  # scope state: the `time.monotonic()` by which the answer is sent


class HeaderTimeout(HttpToolsProtocol):
    """uvicorn's HTTP protocol (httptools), with a deadline for a request's headers."""

    def __init__(self, *args: Any, header_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = header_timeout_s
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        cycle = self.cycle
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's headers are due within the timeout too
        deadline = cycle.scope.get("state", {}).get(SEND_DEADLINE) if cycle is not None else None
        if deadline is not None and self.transport.get_write_buffer_size():  # most answers are sent by now
            self.loop.call_later(max(0.0, deadline - time.monotonic()), self._unsent)

    def _unsent(self) -> None:
        """The deadline of an answer not all sent when it completed: a client still not reading is dropped (a
        later answer on the connection, if the client read this one and asked again, is dropped with it)."""
        if self.transport.get_write_buffer_size():  # closing (idle) or not: a close would wait for the client
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._expired, self.cycle)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, waiting_after: object) -> None:
        """No new request's headers since the deadline was armed (the cycle is the one of then) and none is
        being answered: the connection is dropped."""
        self._deadline = None
        idle = self.cycle is None or self.cycle.response_complete
        if self.cycle is waiting_after and idle and not self.transport.is_closing():
            self.transport.close()


def uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """The options of `uvicorn.run` / `uvicorn.Config` that bound connections, from `[server]`."""
    return {
        "http": functools.partial(HeaderTimeout, header_timeout_s=settings.header_timeout_s),
        "timeout_keep_alive": settings.keep_alive_s,
        "limit_concurrency": settings.max_connections,
    }
