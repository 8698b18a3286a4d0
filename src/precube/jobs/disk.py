"""Free disk space, checked before a build starts and reported by `/ready`.

A build that fills its disk fails half-way, and when the metadata store (SQLite) shares that disk, it cannot
even record its failure. So before a job does any work (`run_job`'s preflight), the free space of the
warehouse (a local one: a remote warehouse's space is not ours to measure) and of the SQLite metadata store's
directory must hold an estimate of what the job writes, or the job is refused with `InsufficientDiskSpaceError`
(ERROR, resumable once space is freed). The estimate, per directory:
- the warehouse: `[jobs] min_free_mb`, plus what the job's new files will take, judged from the model's segments
  on record (`LayoutInstance.byte_size`): for a build or a refresh, the largest segment the model has (a new
  segment is much like the others); for a merge, the segments it merges (all rewritten into one); for added
  layouts, nothing more (their size is unknown before they are built);
- the metadata store: `[jobs] min_free_mb` (its documents are small: the floor is what it needs).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from precube.engine.context import BuildContext
from precube.jobs.errors import InsufficientDiskSpaceError
from precube.metadata import Dataflow, Job, JobType, SegmentDetails
from precube.storage.paths import local_path

MIN_FREE_BYTES = 256 * 1024 * 1024  # `[jobs] min_free_mb`'s default
MB = 1024 * 1024


def free_bytes(path: Path) -> int:
    """Free bytes (for an unprivileged writer) on the file system of `path`, or of its nearest existing parent."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return shutil.disk_usage(candidate).free
    return shutil.disk_usage(Path.cwd()).free


def metadata_dir(store_url: str) -> Path | None:
    """The directory of a SQLite metadata store (None for another database, or one in memory)."""
    prefix = "sqlite:///"
    if not store_url.startswith(prefix):
        return None
    database = store_url[len(prefix) :].split("?", 1)[0]
    return None if database in ("", ":memory:") else Path(database).parent


@dataclass(frozen=True)
class Space:
    """One directory a build writes to: its free bytes, and the least a build needs there."""

    name: str  # "warehouse" or "metadata"
    path: Path
    free_bytes: int
    needed_bytes: int

    @property
    def low(self) -> bool:
        return self.free_bytes < self.needed_bytes


def spaces(warehouse_root: str, store_url: str, min_free_bytes: int, warehouse_needs: int = 0) -> list[Space]:
    """The local directories builds write to, with what they need: the floor, plus `warehouse_needs` there."""
    found = []
    warehouse = local_path(warehouse_root)
    if warehouse is not None:
        found.append(Space("warehouse", warehouse, free_bytes(warehouse), min_free_bytes + warehouse_needs))
    metadata = metadata_dir(store_url)
    if metadata is not None:
        found.append(Space("metadata", metadata, free_bytes(metadata), min_free_bytes))
    return found


def estimate(ctx: BuildContext, job: Job) -> int:
    """The bytes `job` will write to the warehouse, judged from its model's segments on record (see above)."""
    if job.target_model is None or job.job_type is JobType.INDEX_BUILD:
        return 0
    with ctx.store.read(ctx.project) as tx:
        dataflow = tx.get(Dataflow, job.target_model)
        if dataflow is None:
            return 0
        sizes = {}
        for segment in dataflow.segments:
            details = tx.get(SegmentDetails, job.target_model, segment.id)
            sizes[segment.id] = sum(li.byte_size for li in details.layout_instances) if details else 0
    if job.job_type is JobType.INDEX_MERGE:
        return sum(sizes.get(s, 0) for s in job.segment_ids)
    return max(sizes.values(), default=0)


def ensure_space(ctx: BuildContext, job: Job, min_free_bytes: int = MIN_FREE_BYTES) -> None:
    """Refuse `job` (InsufficientDiskSpaceError) unless the warehouse and the metadata store have room for it."""
    for space in spaces(ctx.warehouse_root, ctx.store.url, min_free_bytes, estimate(ctx, job)):
        if space.low:
            raise InsufficientDiskSpaceError(
                f"not enough free disk space for job {job.uuid}: the {space.name} ({space.path}) has "
                f"{space.free_bytes / MB:.0f} MB free, the job needs {space.needed_bytes / MB:.0f} MB "
                "(free some space, or lower [jobs] min_free_mb; then resume the job)"
            )


def report(warehouse_root: str, store_url: str, min_free_bytes: int) -> dict[str, object]:
    """What `/ready` says of the disk: the least free space among the directories builds write to, and whether
    it is below `[jobs] min_free_mb` (builds are then refused; queries still work)."""
    found = spaces(warehouse_root, store_url, min_free_bytes)
    if not found:
        return {"free_bytes": None, "min_free_bytes": min_free_bytes, "low": False, "where": None}
    least = min(found, key=lambda s: s.free_bytes)
    return {
        "free_bytes": least.free_bytes,
        "min_free_bytes": min_free_bytes,
        "low": any(s.low for s in found),
        "where": least.name,  # not its path: any signed-in user reads /ready
    }
