"""The metadata store: a table of JSON documents keyed by path, each with an `mvcc` version.

`StoreBackend` is the raw storage (one implementation per database family, chosen by URL scheme from
`BACKENDS`); `MetadataStore` adds project-scoped typed transactions and project lifecycle on top.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from precube.errors import InvalidInputError
from precube.metadata import paths
from precube.metadata.documents import AuditRecord, Document, StoreBackend
from precube.metadata.entity import new_uuid, now_ms
from precube.metadata.errors import AlreadyExistsError
from precube.metadata.project import Project
from precube.metadata.transaction import Transaction

BackendFactory = Callable[[str, str], StoreBackend]


def _sql_backend(url: str, table: str) -> StoreBackend:
    from precube.metadata.sql_backend import SqlBackend  # SQLAlchemy loads only when needed

    return SqlBackend(url, table)


BACKENDS: dict[str, BackendFactory] = {"sqlite": _sql_backend, "postgresql": _sql_backend}


def open_store(url: str, table: str = "precube_metadata") -> MetadataStore:
    """Open (and create if needed) the metadata store at `url` (`sqlite:///PATH`, `postgresql://…`)."""
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme == "postgres":
        scheme = "postgresql"
    factory = BACKENDS.get(scheme)
    if factory is None or ":" not in url:
        raise InvalidInputError(
            f"unsupported metadata URL {url!r}: use sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DB"
        )
    return MetadataStore(factory(url, table))


class MetadataStore:
    """Typed, project-scoped access to the documents of one backend."""

    def __init__(self, backend: StoreBackend) -> None:
        self.backend = backend
        with backend.begin("precube", readonly=False) as tx:
            if tx.get(paths.UUID_KEY) is None:
                tx.put(paths.UUID_KEY, new_uuid().encode(), -1)
            found = tx.get(paths.IDENTITY_KEY)
            if found is None:
                doc = {"uuid": new_uuid(), "create_time": now_ms()}
                found = tx.put(paths.IDENTITY_KEY, json.dumps(doc).encode(), -1)
        self._identity: str = json.loads(found.content)["uuid"]
        self._reading: tuple[int, float, int] | None = None  # last_change: (value, monotonic time, local commits)

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.backend.close()

    def dedicated(self) -> MetadataStore:
        """This store through a connection of its own (`StoreBackend.dedicated`; close it after use): a few
        writes that must not wait behind the process's other work for a connection (the job lease's heartbeat)."""
        backend = self.backend.dedicated()
        if backend is self.backend:  # nothing of its own to give (an in-memory database): this store
            return self
        other = copy.copy(self)
        other.backend, other._reading = backend, None
        return other

    @property
    def identity(self) -> str:
        """This store's own uuid (`paths.IDENTITY_KEY`): a copy restored from its backup has another."""
        return self._identity

    @property
    def url(self) -> str:
        return self.backend.display_url

    @contextmanager
    def transaction(self, project: str, writer: str = "precube") -> Iterator[Transaction]:
        """A read-write unit over one project's documents: all its writes commit together or none do."""
        paths.check_project_name(project)
        with self.backend.begin(writer, readonly=False) as raw:
            yield Transaction(raw, project)

    @contextmanager
    def read(self, project: str) -> Iterator[Transaction]:
        """A read-only view of one project (writes raise)."""
        paths.check_project_name(project)
        with self.backend.begin("precube", readonly=True) as raw:
            yield Transaction(raw, project, readonly=True)

    def scan(self, prefix: str = "/") -> list[Document]:
        with self.backend.begin("precube", readonly=True) as raw:
            return raw.scan(prefix)

    def audit_log(self, prefix: str = "/", limit: int = 1000) -> list[AuditRecord]:
        return self.backend.audit_log(prefix, limit)

    def last_change(self, max_age_s: float = 0.0) -> int:
        """Moves whenever any change commits, in any project: a cheap check that nothing changed. With
        `max_age_s`, a reading at most that old is reused unless this process committed to the database since:
        this process's changes are seen at once, other processes' within `max_age_s`."""
        known = self.known_change(max_age_s)
        if known is not None:
            return known
        commits, at = self.backend.local_commits(), time.monotonic()  # before reading: a commit meanwhile counts
        value = self.backend.last_change()
        self._reading = (value, at, commits)
        return value

    def known_change(self, max_age_s: float) -> int | None:
        """`last_change(max_age_s)` when it needs no database round trip, else None."""
        reading = self._reading
        if reading is None or max_age_s <= 0:
            return None
        value, at, commits = reading
        if commits != self.backend.local_commits() or time.monotonic() - at > max_age_s:
            return None
        return value

    # -- projects -----------------------------------------------------------------------------

    def list_projects(self) -> list[Project]:
        prefix = f"/{paths.GLOBAL}/project/"
        return [Project.from_json(d.content, d.mvcc, d.key) for d in self.scan(prefix)]

    def get_project(self, name: str) -> Project:
        with self.read(name) as tx:
            return tx.project()

    def create_project(self, project: Project, writer: str = "precube") -> Project:
        with self.transaction(project.name, writer) as tx:
            if tx.get_document(project.key()) is not None:
                raise AlreadyExistsError(f"project {project.name!r} already exists")
            return tx.create(project)

    def delete_project(self, name: str, writer: str = "precube") -> int:
        """Delete a project and every document under it; returns how many documents went."""
        with self.transaction(name, writer) as tx:
            project = tx.project()
            docs = tx.scan_documents(f"/{name}/")
            acl = tx.get_document(f"/{paths.GLOBAL}/acl/{name}{paths.JSON}")
            docs += [acl] if acl is not None else []
            for doc in docs:
                tx.delete_document(doc.key, doc.mvcc)
            tx.delete(project)
            return len(docs) + 1

    def require_project(self, name: str) -> None:
        self.get_project(name)  # raises NotFoundError naming the project
