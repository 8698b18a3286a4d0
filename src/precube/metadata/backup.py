"""Backup and restore of the store as a directory tree, one file per document (seed 002 "Overview").

The file at `DIR/{key without the leading slash}` holds the document's bytes exactly, so a backup
restored into any store and backed up again is byte-identical.

A store's identity (`paths.IDENTITY_KEY`) is the one document never backed up nor restored: a restore that
overwrites a store keeps that store's identity, and a restore into another store leaves it the one it was
created with, so the copy is never taken for the original (a result cache they share keeps them apart).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from precube.metadata import paths
from precube.metadata.dataflow import Dataflow, SegmentDetails
from precube.metadata.documents import Document
from precube.metadata.entity import Entity
from precube.metadata.errors import BackupFormatError, InvalidKeyError, MetadataError
from precube.metadata.index_plan import IndexPlan
from precube.metadata.job import Job, JobLease, JobStats
from precube.metadata.model import Model
from precube.metadata.project import Project
from precube.metadata.store import MetadataStore
from precube.metadata.table import Table, TableExt

# Documents whose content is checked against their entity on restore; others need only be JSON.
ENTITY_CLASSES: dict[str, type[Entity]] = {
    cls.kind: cls
    for cls in (Project, Table, TableExt, Model, IndexPlan, Dataflow, SegmentDetails, Job, JobStats, JobLease)
}


def backup(store: MetadataStore, directory: Path, project: str | None = None) -> int:
    """Write every document (or one project's) under `directory`, which must be new or empty."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise BackupFormatError(f"backup directory {directory} exists and is not empty")
    docs = [d for d in store.scan("/") if d.key != paths.IDENTITY_KEY]
    if project is not None:
        store.require_project(project)
        own = {paths.UUID_KEY, paths.project_key(project)}
        docs = [d for d in docs if d.key in own or d.key.startswith(f"/{project}/")]
    for doc in docs:
        target = directory / doc.key.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(doc.content)
    return len(docs)


@dataclass(frozen=True)
class _File:
    key: str
    content: bytes


def read_tree(directory: Path) -> list[_File]:
    """Read and validate a backup tree; raise `BackupFormatError` naming the first bad file."""
    if not directory.is_dir():
        raise BackupFormatError(f"backup directory {directory} does not exist")
    files: list[_File] = []
    for root, dirs, names in os.walk(directory):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            key = "/" + path.relative_to(directory).as_posix()
            if key == paths.IDENTITY_KEY:
                continue  # another store's identity is never taken over (module docstring)
            files.append(_File(key, _check_file(path, key)))
    if not files:
        raise BackupFormatError(f"backup directory {directory} holds no metadata")
    projects = {
        f.key.removeprefix(f"/{paths.GLOBAL}/project/").removesuffix(paths.JSON)
        for f in files
        if f.key.startswith(f"/{paths.GLOBAL}/project/")
    }
    for f in files:
        owner = paths.parse_key(f.key).project
        if owner not in ("", paths.GLOBAL) and owner not in projects:
            raise BackupFormatError(
                f"malformed backup: {f.key} belongs to project {owner!r}, but _global/project/{owner}.json is missing"
            )
    return files


def _check_file(path: Path, key: str) -> bytes:
    try:
        content = path.read_bytes()
    except OSError as err:
        raise BackupFormatError(f"cannot read {path}: {err.strerror}") from err
    if key == paths.UUID_KEY:
        return content
    try:
        parsed = paths.parse_key(key)
    except InvalidKeyError as err:
        raise BackupFormatError(f"malformed backup: {path} is not a metadata document ({err})") from err
    entity_cls = ENTITY_CLASSES.get(parsed.kind)
    try:
        if entity_cls is not None:
            entity = entity_cls.from_json(content, key=key)
            if entity.resource_name() != Path(parsed.name).name.removesuffix(entity_cls.suffix):
                raise BackupFormatError(f"malformed backup: {path} holds {entity_cls.kind} {entity.resource_name()!r}")
        else:
            json.loads(content)
    except (ValueError, MetadataError) as err:
        if isinstance(err, BackupFormatError):
            raise
        raise BackupFormatError(f"malformed backup: {path} is not a valid document: {err}") from err
    return content


def restore(store: MetadataStore, directory: Path, overwrite: bool = False, writer: str = "restore") -> int:
    """Load a backup tree into the store in one transaction. Without `overwrite` the store must hold
    no project; with it, every existing document is replaced. Nothing changes if anything fails."""
    files = read_tree(directory)
    with store.backend.begin(writer, readonly=False) as tx:
        existing: list[Document] = tx.scan("/")
        existing = [d for d in existing if d.key != paths.IDENTITY_KEY]  # the store's own, kept
        others = [d for d in existing if d.key != paths.UUID_KEY]
        if others and not overwrite:
            names = sorted({paths.project_of(d.key) for d in others})
            raise BackupFormatError(
                f"the metadata store already holds projects {', '.join(names)}; "
                "restore into an empty store or pass --overwrite"
            )
        incoming = {f.key for f in files}
        for doc in existing:
            if doc.key not in incoming:
                tx.delete(doc.key, doc.mvcc)
        current = {d.key: d for d in existing}
        for f in files:
            old = current.get(f.key)
            tx.put(f.key, f.content, -1 if old is None else old.mvcc)
    return len(files)
