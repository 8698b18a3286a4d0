"""The remote backend: a precube server's `POST /kylin/api/query`, the rows as one Arrow IPC stream
(`Accept: application/vnd.apache.arrow.stream`), signed in with HTTP Basic, parameters sent as Kylin's
`params` for the server to bind (`params`). It needs no engine: only the standard library's HTTP client,
pyarrow and the server's REST API; the constants and the failure envelope here are the server's and the CLI's
too (`precube.remote`).

One keep-alive connection per DB-API connection (PEP 249 threadsafety 1: connections are not shared between
threads), through `http.client` rather than httpx: a query's own client cost is then a few tenths of a
millisecond, where httpx spends 1-4 ms of CPU a request (measured by `bench/serve.py`), more than the server's
own overhead. A connection the server closed while idle is opened again once (statements only read)."""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import pyarrow as pa

from precube_client.errors import Error, InterfaceError, OperationalError, error_of
from precube_client.params import state_params

BASE = "/kylin/api"
JSON_TYPE = "application/json"
ARROW_TYPE = "application/vnd.apache.arrow.stream"
ANSWER_HEADER = "X-Precube-Answer"  # an Arrow query answer's metadata: the JSON answer without its rows
UNREACHABLE = "08001"  # sqlclient_unable_to_establish_sqlconnection


@dataclass(frozen=True)
class Failure:
    """What a failed request's answer (Kylin's failure envelope) says: its one-line `msg`, error code, SQLSTATE
    ("" when absent) and whether a retry may succeed."""

    message: str
    code: str
    sqlstate: str
    retryable: bool


def failure_of(status: int, body: bytes) -> Failure:
    """The failure a failed answer's body carries (a body that is not the envelope: the HTTP status alone)."""
    try:
        found = json.loads(body)
        message, code = str(found["msg"]), str(found.get("error_code") or "REMOTE_ERROR")
        return Failure(message, code, str(found.get("sqlstate") or ""), found.get("retryable") is True)
    except (ValueError, KeyError, TypeError):
        return Failure(f"HTTP {status} from the server", "REMOTE_ERROR", "", False)


def failed(status: int, body: bytes) -> Error:
    """The PEP 249 error of a failed answer: its class by the envelope's SQLSTATE (by the HTTP status when it
    has none), its `retryable` as the envelope says."""
    found = failure_of(status, body)
    return error_of(found.message, found.code, found.sqlstate or None, status, found.retryable)


class HttpBackend:
    """The server at `url`; the project is checked (and the credentials with it) when the connection opens,
    as a database driver's connect does."""

    def __init__(self, url: str, project: str, user: str | None, password: str | None, timeout: float) -> None:
        self.project = project
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/"):
            raise InterfaceError(f"invalid server URL {url!r}: use http://HOST:PORT (or https://)")
        self.url = f"{parts.scheme}://{parts.netloc}"
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._http = kind(parts.hostname, parts.port, timeout=timeout)
        self._headers = {"Content-Type": JSON_TYPE}
        if user:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            self._headers["Authorization"] = f"Basic {token}"
        config = json.loads(
            self._request("GET", f"/projects/{quote(project, safe='')}/project_config", None, JSON_TYPE)
        )
        self._default = str(config["data"].get("default_database") or "DEFAULT").upper()

    def _request(self, method: str, path: str, body: dict[str, Any] | None, accept: str) -> bytes:
        """The answer's body; a failure is the PEP 249 error of the server's SQLSTATE, code and one-line message."""
        payload = json.dumps(body).encode() if body is not None else None
        headers = {**self._headers, "Accept": accept}
        for attempt in (1, 2):
            try:
                self._http.request(method, f"{BASE}{path}", body=payload, headers=headers)
                response = self._http.getresponse()
                data = response.read()
                break
            except (http.client.HTTPException, OSError) as err:
                self._http.close()
                stale = isinstance(err, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError)
                if attempt == 1 and stale:
                    continue  # the server closed the idle keep-alive connection: open it again
                message = f"cannot reach precube server {self.url}: {err}"
                raise OperationalError(message, "SERVER_UNREACHABLE", sqlstate=UNREACHABLE, retryable=True) from err
        if response.status >= 400:
            raise failed(response.status, data)
        if not response.getheader("content-type", "").startswith(accept):
            raise OperationalError(f"the server answered {response.getheader('content-type')!r}, not {accept}")
        return data

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None) -> pa.Table:
        """The statement and its parameters as Kylin's `params`, bound by the server."""
        body: dict[str, Any] = {"sql": sql, "project": self.project}
        if parameters is not None:
            body["params"] = state_params(parameters)
        data = self._request("POST", "/query", body, ARROW_TYPE)
        table: pa.Table = pa.ipc.open_stream(data).read_all()
        return table

    def default_database(self) -> str:
        return self._default

    def close(self) -> None:
        self._http.close()
