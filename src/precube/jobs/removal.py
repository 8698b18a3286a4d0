"""What a destructive command drops, told before it drops it: the built bytes of segments (a model update or
delete, a segment delete), and a whole project — whose metadata and warehouse directory are then removed,
nothing of it left for `gc`, which knows only live projects."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from precube.jobs.errors import JobConflictError, JobError
from precube.metadata import Dataflow, IndexPlan, Job, JobState, MetadataStore, Model, Segment
from precube.modeling.model_store import delete_model, require_model
from precube.modeling.segments import validate_delete
from precube.storage.paths import local_path, segment_path


@dataclass(frozen=True)
class ProjectRemoval:
    """What deleting a project drops."""

    project: str
    documents: int
    models: tuple[str, ...]
    segments: int
    directory: Path | None  # its local warehouse directory, None when remote
    data_bytes: int

    def describe(self) -> str:
        data = f"{self.data_bytes / 1e6:,.1f} MB of built data in {self.directory}" if self.directory else "no data"
        models = ", ".join(self.models) or "none"
        return (
            f"project {self.project}: {self.documents} metadata documents, models {models}, "
            f"{self.segments} segments, {data}"
        )


def preview_project_removal(store: MetadataStore, warehouse_root: str, project: str) -> ProjectRemoval:
    """What `remove_project` would drop, dropping nothing."""
    with store.read(project) as tx:
        documents = len(tx.scan_documents(f"/{project}/")) + 1
        models = tuple(sorted(m.alias for m in tx.list(Model)))
        segments = sum(len(d.segments) for d in tx.list(Dataflow))
    directory = local_path(f"{warehouse_root.rstrip('/')}/{project}")
    return ProjectRemoval(project, documents, models, segments, directory, _bytes(directory))


def remove_project(store: MetadataStore, warehouse_root: str, project: str, writer: str) -> ProjectRemoval:
    """Delete the project's metadata, then its warehouse directory; refused while one of its jobs runs (it
    would write into a project that is gone)."""
    found = preview_project_removal(store, warehouse_root, project)
    with store.read(project) as tx:
        running = [j.uuid for j in tx.list(Job) if j.state is JobState.RUNNING]
    if running:
        raise JobConflictError(
            f"project {project} has running jobs ({', '.join(running)}): pause or discard them first"
        )
    store.delete_project(project, writer=writer)
    if found.directory is not None and found.directory.exists():
        try:
            shutil.rmtree(found.directory)
        except OSError as err:
            raise JobError(
                f"deleted project {project}'s metadata but not its data in {found.directory}: {err}"
            ) from err
    return found


@dataclass(frozen=True)
class ModelRemoval:
    """What deleting a model drops: its segments (their built bytes), its layouts."""

    model: str
    uuid: str
    segments: int
    data_bytes: int | None  # None for a remote warehouse
    layouts: int

    def describe(self) -> str:
        return f"model {self.model}: {drop_text(self.segments, self.data_bytes, self.layouts)}"


def preview_model_removal(store: MetadataStore, warehouse_root: str, project: str, alias: str) -> ModelRemoval:
    """What `remove_model` would drop, dropping nothing."""
    with store.read(project) as tx:
        model = require_model(tx, alias)
        segments = [s.id for s in tx.require(Dataflow, model.uuid).segments]
        layouts = len(tx.require(IndexPlan, model.uuid).all_layouts())
    size = segment_bytes(warehouse_root, project, model.uuid, segments)
    return ModelRemoval(model.alias, model.uuid, len(segments), size, layouts)


def remove_model(store: MetadataStore, warehouse_root: str, project: str, alias: str, writer: str) -> ModelRemoval:
    """Delete a model with its index plan, dataflow and segments' metadata (their files are `gc`'s)."""
    found = preview_model_removal(store, warehouse_root, project, alias)
    delete_model(store, project, alias, writer=writer)
    return found


def segment_bytes(warehouse_root: str, project: str, model_uuid: str, segment_ids: list[str]) -> int | None:
    """The bytes the segments' files hold (None for a remote warehouse, which is not measured)."""
    total = 0
    for segment_id in segment_ids:
        directory = local_path(segment_path(warehouse_root, project, model_uuid, segment_id))
        if directory is None:
            return None
        total += _bytes(directory)
    return total


def drop_text(segments: int, data_bytes: int | None, layouts: int | None = None) -> str:
    """`3 segments (12.5 MB of built data)`, with `, 4 layouts` when layouts are dropped too."""
    data = "" if data_bytes is None else f" ({data_bytes / 1e6:,.1f} MB of built data)"
    held = "" if layouts is None else f", {layouts} layout{'s' if layouts != 1 else ''}"
    return f"{segments} segment{'s' if segments != 1 else ''}{data}{held}"


def _bytes(directory: Path | None) -> int:
    if directory is None or not directory.is_dir():
        return 0
    return sum((Path(parent) / f).lstat().st_size for parent, _, files in os.walk(directory) for f in files)


@dataclass(frozen=True)
class SegmentRemoval:
    """What deleting some segments of a model drops."""

    model: str
    segments: tuple[Segment, ...]
    data_bytes: int | None

    def describe(self) -> str:
        """The one line `precube segment delete` and the REST API show before deleting."""
        names = ", ".join(f"{s.name} {s.range}" for s in self.segments)
        return f"{drop_text(len(self.segments), self.data_bytes)} of model {self.model}: {names}"


def preview_segment_removal(
    store: MetadataStore, warehouse_root: str, project: str, alias: str, targets: Sequence[str]
) -> SegmentRemoval:
    """What deleting the segments `targets` (ids or names) would drop, refused as the delete itself would be
    (`validate_delete`), dropping nothing."""
    with store.read(project) as tx:
        model = require_model(tx, alias)
        chosen = validate_delete(tx.require(Dataflow, model.uuid).segments, targets)
    size = segment_bytes(warehouse_root, project, model.uuid, [s.id for s in chosen])
    return SegmentRemoval(model.alias, tuple(chosen), size)
