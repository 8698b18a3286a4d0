"""A client of a precube server's REST API (`precube serve`): what the CLI's `--server` mode and the
remote DB-API use. Answers are unwrapped from Kylin's envelope; a failed request raises `RemoteError`
carrying the server's one-line message and its error code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from precube.errors import PrecubeError
from precube_client.http import ANSWER_HEADER, ARROW_TYPE, BASE, JSON_TYPE, failure_of

if TYPE_CHECKING:
    import httpx

__all__ = ["ANSWER_HEADER", "ARROW_TYPE", "BASE", "JSON_TYPE", "Remote", "RemoteError"]


class RemoteError(PrecubeError):
    """The server refused or failed a request; `code` is its `error_code`, `status` the HTTP status, `sqlstate`
    and `retryable` the failure envelope's (precube's map of the server's error; "" and False when absent)."""

    code = "REMOTE_ERROR"

    def __init__(
        self, message: str, code: str = "REMOTE_ERROR", status: int = 0, sqlstate: str = "", retryable: bool = False
    ) -> None:
        super().__init__(message)
        self.code, self.status, self.sqlstate, self.retryable = code, status, sqlstate, retryable


class Remote:
    """One HTTP connection pool to a server, signed in as `user` (HTTP Basic)."""

    def __init__(self, url: str, user: str | None, password: str | None, timeout: float = 600.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise PrecubeError(f"invalid server URL {url!r}: use http://HOST:PORT")
        import httpx  # only a client needs it: a server imports this module for `RemoteError` (81 ms)

        auth = (user, password or "") if user else None
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, auth=auth, timeout=timeout)

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The raw response of `METHOD /kylin/api{path}` (`kwargs` as httpx takes them); raises
        `RemoteError` for a failed request, naming the server when it cannot be reached."""
        import httpx

        try:
            response = self._http.request(method, f"{BASE}{path}", **kwargs)
        except httpx.TransportError as err:
            message = f"cannot reach precube server {self.url}: {err}"
            raise RemoteError(message, "SERVER_UNREACHABLE", retryable=True) from err
        if response.status_code >= 400:
            raise _error(response)
        return response

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The `data` of the envelope `METHOD /kylin/api{path}` answers."""
        return self.request(method, path, **kwargs).json()["data"]


def _error(response: httpx.Response) -> RemoteError:
    """The error of a failed request's answer (Kylin's failure envelope, read by the thin client's rule)."""
    found = failure_of(response.status_code, response.content)
    return RemoteError(found.message, found.code, response.status_code, found.sqlstate, found.retryable)
