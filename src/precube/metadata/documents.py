"""Raw documents and the Protocols a storage backend implements."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Document:
    key: str
    content: bytes
    mvcc: int
    ts: int  # last write, epoch ms


@dataclass(frozen=True)
class AuditRecord:
    """One change: the content written (None for a delete), the version it created, who and when."""

    id: int
    key: str
    content: bytes | None
    mvcc: int
    ts: int
    unit_id: str  # the transaction that made the change
    writer: str


class RawTransaction(Protocol):
    """Document operations inside one database transaction; commits on clean exit, else rolls back."""

    def get(self, key: str) -> Document | None: ...

    def scan(self, prefix: str) -> list[Document]:
        """Every document whose key starts with `prefix`, sorted by key."""
        ...

    def put(self, key: str, content: bytes, expected_mvcc: int) -> Document:
        """Create (`expected_mvcc == -1`, new mvcc 0) or update (new mvcc = expected + 1)."""
        ...

    def delete(self, key: str, expected_mvcc: int) -> None: ...


class StoreBackend(Protocol):
    display_url: str  # the URL with any password hidden

    def begin(self, writer: str, readonly: bool) -> AbstractContextManager[RawTransaction]: ...

    def audit_log(self, prefix: str, limit: int) -> list[AuditRecord]: ...

    def last_change(self) -> int:
        """A number that moves whenever any change commits (the newest audit record's id); cheap."""
        ...

    def local_commits(self) -> int:
        """How many writes this process committed to the backend's database, through any backend on it."""
        ...

    def dedicated(self) -> StoreBackend:
        """The same database through a connection of its own (close it after use), so that a caller's few
        writes never wait for a connection behind the rest of the process (the job lease's heartbeat)."""
        ...

    def close(self) -> None: ...
