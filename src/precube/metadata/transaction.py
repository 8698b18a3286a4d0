"""A project-scoped unit of work: typed reads and writes of entities over one raw transaction."""

from __future__ import annotations

from typing import TypeVar

from precube.metadata import paths
from precube.metadata.documents import Document, RawTransaction
from precube.metadata.entity import Entity, now_ms
from precube.metadata.errors import InvalidKeyError, MetadataError, NotFoundError
from precube.metadata.project import Project

E = TypeVar("E", bound=Entity)


class Transaction:
    """Reads and writes documents of one project; all writes commit together when the block exits."""

    def __init__(self, raw: RawTransaction, project: str, readonly: bool = False) -> None:
        self._raw = raw
        self.project_name = project
        self.readonly = readonly

    # -- raw documents ------------------------------------------------------------------------

    def _check_scope(self, key: str) -> None:
        owner = paths.project_of(key)
        if owner != self.project_name:
            raise InvalidKeyError(f"key {key} belongs to project {owner or '(global)'!r}, not {self.project_name!r}")

    def get_document(self, key: str) -> Document | None:
        self._check_scope(key)
        return self._raw.get(key)

    def scan_documents(self, prefix: str) -> list[Document]:
        if not prefix.startswith(f"/{self.project_name}/"):
            raise InvalidKeyError(f"prefix {prefix} is outside project {self.project_name!r}")
        return self._raw.scan(prefix)

    def put_document(self, key: str, content: bytes, expected_mvcc: int) -> Document:
        self._check_writable()
        self._check_scope(key)
        return self._raw.put(key, content, expected_mvcc)

    def delete_document(self, key: str, expected_mvcc: int) -> None:
        self._check_writable()
        self._check_scope(key)
        self._raw.delete(key, expected_mvcc)

    def _check_writable(self) -> None:
        if self.readonly:
            raise MetadataError("this is a read-only view of the metadata")

    # -- entities -----------------------------------------------------------------------------

    def project(self) -> Project:
        doc = self._raw.get(paths.project_key(self.project_name))
        if doc is None:
            raise NotFoundError(f"project {self.project_name!r} does not exist")
        return Project.from_json(doc.content, doc.mvcc, doc.key)

    def get(self, cls: type[E], *names: str) -> E | None:
        """The entity at `/{project}/{kind}/{names…}{suffix}`, or None."""
        key = paths.entity_key(self.project_name, cls.kind, *names, suffix=cls.suffix)
        doc = self._raw.get(key)
        return None if doc is None else cls.from_json(doc.content, doc.mvcc, doc.key)

    def require(self, cls: type[E], *names: str) -> E:
        entity = self.get(cls, *names)
        if entity is None:
            raise NotFoundError(f"{cls.kind} {'/'.join(names)!r} does not exist in project {self.project_name!r}")
        return entity

    def list(self, cls: type[E], *folder: str) -> list[E]:
        """Every entity of a kind (under `folder`, e.g. one dataflow's segment details)."""
        prefix = "/".join([f"/{self.project_name}", cls.kind, *folder]) + "/"
        docs = self._raw.scan(prefix)
        return [cls.from_json(d.content, d.mvcc, d.key) for d in docs]

    def create(self, entity: E) -> E:
        """Store a new entity; fails if its key exists."""
        return self._write(entity, -1)

    def update(self, entity: E) -> E:
        """Store a changed entity read earlier; fails with a conflict if it changed since."""
        if entity.mvcc < 0:
            raise MetadataError(f"{entity.kind} {entity.resource_name()!r} was never stored; use create")
        return self._write(entity, entity.mvcc)

    def save(self, entity: E) -> E:
        """Create or update, by whether the entity was read from the store."""
        return self._write(entity, entity.mvcc)

    def replace(self, entity: E) -> E:
        """Store `entity` in place of whatever is at its key; a replaced document keeps its uuid and
        create_time (e.g. a table's stats after re-sampling)."""
        doc = self.get_document(entity.key(self.project_name))
        if doc is None:
            return self.create(entity)
        old = type(entity).from_json(doc.content, doc.mvcc, doc.key)
        entity.uuid, entity.create_time = old.uuid, old.create_time
        return self._write(entity, doc.mvcc)

    def delete(self, entity: Entity) -> None:
        self.delete_document(entity.key(self.project_name), entity.mvcc)

    def _write(self, entity: E, expected_mvcc: int) -> E:
        entity.last_modified = now_ms()
        doc = self.put_document(entity.key(self.project_name), entity.to_json(), expected_mvcc)
        entity._stored(doc.mvcc)
        return entity
