"""PEP 249's connection, over a `Backend` (DESIGN §10's Connection protocol): what answers a statement with an
Arrow table. Two implement it: `http.HttpBackend` here (a precube server's REST API, the rows as Arrow IPC) and
`precube.dbapi.local.LocalBackend` in the full package (a query session in this process). precube's SQL reads
only, so there are no transactions: `commit` and `rollback` do nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import pyarrow as pa

from precube_client.cursor import Cursor
from precube_client.errors import InterfaceError


class Backend(Protocol):
    """Answers statements over one project."""

    project: str

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None) -> pa.Table:
        """The statement's rows, its `?` marks bound to `parameters`; a failure is a PEP 249 error carrying
        precube's one-line message."""
        ...

    def default_database(self) -> str:
        """The database a table without one is looked up in (upper case)."""
        ...

    def close(self) -> None: ...


class Connection:
    """A connection to one precube project."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._closed = False

    @property
    def project(self) -> str:
        return self.backend.project

    @property
    def closed(self) -> bool:
        return self._closed

    def cursor(self) -> Cursor:
        self.check_open()
        return Cursor(self)

    def commit(self) -> None:
        """Nothing to commit: precube's SQL only reads."""
        self.check_open()

    def rollback(self) -> None:
        """Nothing to roll back: precube's SQL only reads."""
        self.check_open()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.backend.close()

    def check_open(self) -> None:
        if self._closed:
            raise InterfaceError("the connection is closed")

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
