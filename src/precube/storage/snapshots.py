"""Lookup table snapshots in the warehouse (DESIGN §4), shared by the build that writes them and the query
path that reads them:

    {root}/{project}/{model_uuid}/snapshot/{DB.TABLE}/{key}/part-*.parquet

A snapshot directory is immutable: its key is a digest of the source's fingerprint and the columns it holds,
so a build whose source has not changed finds it again (Spark's `_SUCCESS` marks it complete) and writes
nothing, and a changed source gets a new directory.

The fingerprint of a file source is a digest of its data files (relative path, size, modification time), its
registered columns and types and its read options: what the rows read from it depend on. It needs no engine
and costs one directory walk, so the query path checks it before every answer from a snapshot.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from precube.metadata import SourceType, Table
from precube.storage.paths import local_path

SNAPSHOT_DIR = "snapshot"
COMPLETE = "_SUCCESS"  # written by Spark when a write commits


def snapshot_root(root: str, project: str, model_uuid: str) -> str:
    return f"{root.rstrip('/')}/{project}/{model_uuid}/{SNAPSHOT_DIR}"


def snapshot_path(root: str, project: str, model_uuid: str, table: str, key: str) -> str:
    return f"{snapshot_root(root, project, model_uuid)}/{table.upper()}/{key}"


def source_fingerprint(table: Table) -> str | None:
    """The fingerprint of a local file source as it is now; None for a source it cannot be taken of (a Spark
    catalog table, files not on the local file system, a path that does not exist)."""
    if table.source_type not in (SourceType.PARQUET, SourceType.CSV) or not table.location:
        return None
    base = local_path(table.location)
    if base is None or not base.exists():
        return None
    files: list[tuple[str, int, int]] = []
    try:
        if base.is_file():
            stat = base.stat()
            files.append((base.name, stat.st_size, stat.st_mtime_ns))
        else:
            for parent, dirs, names in os.walk(base):
                # as a Parquet/CSV dataset is discovered: names starting with `.` or `_` are not data
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                for name in sorted(names):
                    if name.startswith((".", "_")):
                        continue
                    path = Path(parent) / name
                    stat = path.stat()
                    files.append((str(path.relative_to(base)), stat.st_size, stat.st_mtime_ns))
    except FileNotFoundError:  # a file replaced while we look: the source is changing now
        return None
    described = {
        "files": files,
        "columns": [(c.name, c.case_sensitive_name, c.datatype) for c in table.columns],
        "options": sorted(table.source_properties.items()),
        "type": int(table.source_type),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:32]


def snapshot_key(fingerprint: str, columns: list[str]) -> str:
    """The directory name of the snapshot of these columns of a source with this fingerprint."""
    return hashlib.sha256(json.dumps([fingerprint, columns]).encode()).hexdigest()[:20]


def is_complete(path: str) -> bool:
    """Whether a local snapshot directory holds a committed write."""
    local = local_path(path)
    return local is not None and (local / COMPLETE).is_file()
