"""Garbage collection of warehouse directories that no metadata references (DESIGN §4).

A build writes a segment's files before the metadata that points at them commits, and segments leave
the metadata (merge, refresh, delete, retention, a discarded job) while their files stay, so a crash or
a replacement leaves unreferenced directories behind. Under `{root}/{project}/` this removes:

- a model directory (`{model_uuid}/`) whose model no longer exists, dictionaries included;
- a segment directory (`{model_uuid}/{segment_id}/`) that is not a segment of the model's dataflow;
- a layout directory (`…/{segment_id}/{layout_id}/`) of a READY or WARNING segment that its
  `SegmentDetails` does not record (dropped from the segment, or half written by an INDEX_BUILD job,
  which rewrites it from scratch if it runs again). A NEW segment keeps all of its layout directories:
  its build writes each one before recording it, and may be paused or resumable for days;
- a lookup snapshot (`snapshot/{DB.TABLE}/{key}/`) that no segment of the model's dataflow records (a
  segment replaced or deleted, a source changed since): snapshots are shared by the segments that record
  them, so one goes only when the last of them does;
- an unfinished dictionary version (`dict/{column}/_tmp-v{n}-{hex}/`, left by a crashed build). The
  committed versions are kept: they are append-only and any segment may have encoded with them.

Only directories last used before `now - grace` go: last used is the later of the newest modification
time in the directory (a running build writes before it records) and the time the metadata stopped
referencing it, from the store's audit log (a query planned just before a merge or a delete may still
be reading the old segment, whose files are old). Metadata restored without its audit log leaves the
modification time alone to decide.

Names precube does not write (not a uuid at the project and model level, not a layout id in a segment),
files and symbolic links are left alone and listed in the report. Only local warehouses are supported.

Nothing locks the warehouse: a directory is examined, then removed. Only an INDEX_BUILD job that starts
rewriting an old, unrecorded layout of a READY segment in that instant could lose files it then records.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from precube.engine.dictionary import TMP_DIR
from precube.errors import InvalidInputError
from precube.jobs.errors import JobError
from precube.metadata import Dataflow, MetadataStore, Model, SegmentDetails, SegmentStatus
from precube.metadata import paths as keys
from precube.storage.paths import local_path
from precube.storage.snapshots import SNAPSHOT_DIR

DEFAULT_GRACE_S = 24 * 3600.0
DICT_DIR = "dict"  # as `build.dictionary.dictionary_path` names it
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_LAYOUT = re.compile(r"\d+")


class GcError(JobError):
    """Garbage collection cannot run (or cannot remove a directory)."""

    code = "GC_ERROR"


class UnsupportedWarehouseError(GcError):
    """The warehouse is not on the local file system."""

    code = "GC_UNSUPPORTED_WAREHOUSE"


@dataclass(frozen=True)
class Garbage:
    """One unreferenced directory: its size (bytes of the files in it) and why nothing references it."""

    path: Path
    bytes: int
    reason: str


@dataclass(frozen=True)
class GcReport:
    """What one collection found.

    `removed`: directories removed (on a dry run: those that would be); `pending`: unreferenced ones
    used within the grace period, kept for now; `skipped`: entries not written by precube, left alone.
    """

    removed: tuple[Garbage, ...]
    pending: tuple[Garbage, ...]
    skipped: tuple[Path, ...]
    dry_run: bool

    @property
    def bytes_freed(self) -> int:
        return sum(g.bytes for g in self.removed)


@dataclass(frozen=True)
class _SegmentRefs:
    layouts: frozenset[int] | None  # recorded layout ids; None: keep every layout directory
    changed_s: float  # when its layout records last changed: a layout dropped then may still be read


@dataclass(frozen=True)
class _ModelRefs:
    segments: dict[str, _SegmentRefs]
    snapshots: frozenset[tuple[str, str]]  # (DB.TABLE, key) of every snapshot a segment records
    changed_s: float  # when the dataflow last changed: a snapshot it let go of then may still be read


@dataclass(frozen=True)
class _Candidate:
    path: Path
    reason: str
    dereferenced_s: float  # when metadata last pointed at it (0: unknown or never)


def collect_garbage(
    store: MetadataStore,
    warehouse_root: str,
    project: str,
    grace_s: float = DEFAULT_GRACE_S,
    dry_run: bool = False,
    now: float | None = None,
) -> GcReport:
    """Remove the project's warehouse directories that no metadata references and nothing has used for
    `grace_s` seconds (`now`: epoch seconds, default the current time). A dry run removes nothing."""
    root = local_path(warehouse_root)
    if root is None:
        raise UnsupportedWarehouseError(
            f"garbage collection supports local warehouses only for now; {warehouse_root} is not a local path"
        )
    if grace_s < 0:
        raise InvalidInputError(f"the grace period must not be negative (got {grace_s} s)")
    store.require_project(project)  # also checks the name, so `{root}/{project}` stays under the root
    cutoff = (time.time() if now is None else now) - grace_s
    # Metadata first, then the directories: whatever this snapshot does not reference is either garbage or
    # referenced later by a build, which records only what it has just written (a NEW segment before its
    # first file, a layout right after its last one), so its newest file is within the grace period.
    models = _references(store, project)
    removed: list[Garbage] = []
    pending: list[Garbage] = []
    skipped: list[Path] = []
    for candidate in _candidates(store, project, root / project, models, skipped):
        newest, size = _usage(candidate.path)
        garbage = Garbage(candidate.path, size, candidate.reason)
        if max(newest, candidate.dereferenced_s) >= cutoff:
            pending.append(garbage)
            continue
        if not dry_run:
            _remove(candidate.path)
        removed.append(garbage)
    return GcReport(tuple(removed), tuple(pending), tuple(skipped), dry_run)


def _references(store: MetadataStore, project: str) -> dict[str, _ModelRefs | None]:
    """Model uuid → its segments and snapshots (None: a model without a dataflow, whose directory is kept
    whole)."""
    with store.read(project) as tx:
        models: dict[str, _ModelRefs | None] = {m.uuid: None for m in tx.list(Model)}
        for dataflow in tx.list(Dataflow):
            details = {d.uuid: d for d in tx.list(SegmentDetails, dataflow.uuid)}
            segments = {}
            for segment in dataflow.segments:
                found = details.get(segment.id)
                # Without details (inconsistent metadata) nothing says which layouts the segment holds.
                if segment.status is SegmentStatus.NEW or found is None:
                    segments[segment.id] = _SegmentRefs(None, 0.0)
                else:
                    recorded = frozenset(li.layout_id for li in found.layout_instances)
                    segments[segment.id] = _SegmentRefs(recorded, found.last_modified / 1000)
            snapshots = frozenset((t, snap.key) for s in dataflow.segments for t, snap in s.lookup_snapshots.items())
            models[dataflow.uuid] = _ModelRefs(segments, snapshots, dataflow.last_modified / 1000)
        return models


def _candidates(
    store: MetadataStore,
    project: str,
    project_dir: Path,
    models: dict[str, _ModelRefs | None],
    skipped: list[Path],
) -> Iterator[_Candidate]:
    """The unreferenced directories under `project_dir`; unrecognised entries go to `skipped`."""
    for model_dir in _children(project_dir, skipped, _UUID):
        if model_dir.name not in models:
            deleted = _last_change(store, project, (Model.kind, model_dir.name), (Dataflow.kind, model_dir.name))
            yield _Candidate(model_dir, "model does not exist", deleted)
            continue
        refs = models[model_dir.name]
        if refs is None:
            continue
        segments = refs.segments
        for entry in _children(model_dir, skipped, None):
            if entry.name == DICT_DIR:
                yield from _dictionary_leftovers(entry)
            elif entry.name == SNAPSHOT_DIR:
                yield from _unrecorded_snapshots(entry, refs, skipped)
            elif not _UUID.fullmatch(entry.name):
                skipped.append(entry)
            elif entry.name not in segments:
                key = (SegmentDetails.kind, model_dir.name, entry.name)
                yield _Candidate(entry, "segment not in the model's dataflow", _last_change(store, project, key))
            else:
                yield from _unrecorded_layouts(entry, segments[entry.name], skipped)


def _unrecorded_layouts(segment_dir: Path, refs: _SegmentRefs, skipped: list[Path]) -> Iterator[_Candidate]:
    if refs.layouts is None:
        return
    for layout_dir in _children(segment_dir, skipped, _LAYOUT):
        if int(layout_dir.name) not in refs.layouts:
            yield _Candidate(layout_dir, "layout not recorded in its segment", refs.changed_s)


def _unrecorded_snapshots(snapshot_dir: Path, refs: _ModelRefs, skipped: list[Path]) -> Iterator[_Candidate]:
    for table_dir in _children(snapshot_dir, skipped, None):
        for key_dir in _children(table_dir, skipped, None):
            if (table_dir.name, key_dir.name) not in refs.snapshots:
                yield _Candidate(key_dir, "snapshot no segment records", refs.changed_s)


def _dictionary_leftovers(dict_dir: Path) -> Iterator[_Candidate]:
    # Everything else under dict/ is kept without being listed as skipped: the dictionary owns it.
    for column_dir in _children(dict_dir, None, None):
        for entry in _children(column_dir, None, TMP_DIR):
            yield _Candidate(entry, "unfinished dictionary version", 0.0)


def _children(directory: Path, skipped: list[Path] | None, name: re.Pattern[str] | None) -> Iterator[Path]:
    """The real subdirectories of `directory` (whose name matches `name`), sorted; others go to `skipped`."""
    if not directory.is_dir():
        return
    for entry in sorted(directory.iterdir()):
        if entry.is_dir() and not entry.is_symlink() and (name is None or name.fullmatch(entry.name)):
            yield entry
        elif skipped is not None:
            skipped.append(entry)


def _last_change(store: MetadataStore, project: str, *documents: tuple[str, ...]) -> float:
    """When any of these documents last changed (for a deleted one: its deletion), epoch seconds; 0 when
    the audit log has no record of them."""
    latest = 0
    for kind, *names in documents:
        records = store.audit_log(keys.entity_key(project, kind, *names), limit=1)
        latest = max([latest, *(r.ts for r in records)])
    return latest / 1000


def _usage(path: Path) -> tuple[float, int]:
    """The newest modification time of `path` and everything in it, and the bytes of its files. An entry
    that vanishes while we look means someone is writing there now: it counts as just modified."""
    unreadable: list[OSError] = []
    try:
        newest, size = path.lstat().st_mtime, 0
        for parent, dirs, files in os.walk(path, onerror=unreadable.append):
            for name in dirs:
                newest = max(newest, (Path(parent) / name).lstat().st_mtime)
            for name in files:
                stat = (Path(parent) / name).lstat()
                newest, size = max(newest, stat.st_mtime), size + stat.st_size
    except FileNotFoundError:
        return float("inf"), 0
    # A directory that vanished under os.walk, or that we may not read, is kept: treat it as just used.
    return (float("inf") if unreadable else newest), size


def _remove(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:  # removed meanwhile (another collection): the goal is reached
        pass
    except OSError as err:
        raise GcError(f"cannot remove {path}: {err}") from err
