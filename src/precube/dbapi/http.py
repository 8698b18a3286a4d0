"""The remote backend: a precube server's `POST /kylin/api/query`, the rows as one Arrow IPC stream
(`Accept: application/vnd.apache.arrow.stream`), signed in with HTTP Basic. It needs no engine: only httpx,
pyarrow and the server's REST API."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import httpx
import pyarrow as pa

from precube.dbapi.errors import InterfaceError, OperationalError, error_of
from precube.errors import PrecubeError
from precube.remote import ARROW_TYPE, Remote, RemoteError


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except RemoteError as err:
        raise error_of(err.message, err.code, err.status) from err


class HttpBackend:
    """One keep-alive connection pool to the server at `url`; the project is checked (and the credentials with
    it) when the connection opens, as a database driver's connect does."""

    def __init__(self, url: str, project: str, user: str | None, password: str | None, timeout: float) -> None:
        self.project = project
        try:
            self.remote = Remote(url, user, password, timeout)
        except (PrecubeError, httpx.InvalidURL) as err:
            raise InterfaceError(f"invalid server URL {url!r}: {err}") from err
        with _mapped():
            config = self.remote.call("GET", f"/projects/{quote(project, safe='')}/project_config")
        self._default = str(config.get("default_database") or "DEFAULT").upper()

    def execute(self, sql: str) -> pa.Table:
        with _mapped():
            response = self.remote.request(
                "POST", "/query", json={"sql": sql, "project": self.project}, headers={"Accept": ARROW_TYPE}
            )
        if not response.headers.get("content-type", "").startswith(ARROW_TYPE):
            raise OperationalError(f"the server answered {response.headers.get('content-type')!r}, not Arrow")
        table: pa.Table = pa.ipc.open_stream(response.content).read_all()
        return table

    def default_database(self) -> str:
        return self._default

    def close(self) -> None:
        self.remote.close()
