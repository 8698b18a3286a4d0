"""Connection hygiene of the HTTP door: how uvicorn serves `precube serve` (and the tests' live servers).

uvicorn closes an idle keep-alive connection after `timeout_keep_alive`, but it has no deadline for the
headers of a request: a client that opens a connection and sends nothing, or half a request line, holds it
for ever (400 such connections were all still open after 10 s). `HeaderTimeout` closes a connection whose
next request's headers have not all arrived `[server] header_timeout_s` after it opened or after its last
answer; a request whose headers arrived is the application's to bound. `[server] max_connections` is
uvicorn's `limit_concurrency`: past it, a request is answered 503 at once."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from precube.settings import ServerSettings


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
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's headers are due within the timeout too

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
