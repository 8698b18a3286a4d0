"""Jobs made from a user's request and checked against the model's segments before they exist, as
Kylin refuses a bad build, refresh or merge at submission (reference §2): a refused request leaves
no job behind."""

from __future__ import annotations

from collections.abc import Sequence

from precube.jobs.errors import ModelNotBuildableError
from precube.jobs.runner import new_job
from precube.metadata import (
    Dataflow,
    DataflowStatus,
    IndexPlan,
    Job,
    JobType,
    MetadataStore,
    Model,
    SegmentDetails,
    SegmentStatus,
    TimeRange,
)
from precube.modeling.errors import SegmentRuleError
from precube.modeling.model_store import broken_text, require_model
from precube.modeling.segments import validate_build, validate_merge, validate_refresh


def _model(store: MetadataStore, project: str, alias: str) -> tuple[Model, Dataflow]:
    with store.read(project) as tx:
        model = require_model(tx, alias)
        return model, _buildable(model, tx.require(Dataflow, model.uuid), project)


def _buildable(model: Model, dataflow: Dataflow, project: str) -> Dataflow:
    """The dataflow of a model a job may be submitted for; a BROKEN one is refused with its reason."""
    if dataflow.status is DataflowStatus.BROKEN:
        raise ModelNotBuildableError(
            broken_text(model.alias, dataflow.broken_detail or dataflow.broken_reason, project)
        )
    return dataflow


def _with_layouts(store: MetadataStore, project: str, alias: str) -> tuple[Model, Dataflow, dict[str, set[int]]]:
    """The model, its dataflow, and each segment's built layouts, read in one transaction."""
    with store.read(project) as tx:
        model = require_model(tx, alias)
        dataflow = _buildable(model, tx.require(Dataflow, model.uuid), project)
        held = {
            s.id: {li.layout_id for li in d.layout_instances if li.is_ready}
            for s in dataflow.segments
            if (d := tx.get(SegmentDetails, model.uuid, s.id)) is not None
        }
        return model, dataflow, held


def build_job(store: MetadataStore, project: str, alias: str, time_range: TimeRange | None, priority: int = 3) -> Job:
    """A new segment: of `time_range` (partitioned model), or the full build (None)."""
    model, dataflow = _model(store, project, alias)
    partition = model.partition_desc
    fmt = partition.partition_date_format if partition is not None else None
    rng = validate_build(dataflow.segments, time_range, partition is not None, fmt)
    kind = JobType.INC_BUILD if partition is not None else JobType.FULL_BUILD
    return new_job(model, kind, rng, priority=priority)


def refresh_job(store: MetadataStore, project: str, alias: str, target: str, priority: int = 3) -> Job:
    """Rebuild one READY segment (id or name) from source."""
    model, dataflow = _model(store, project, alias)
    [segment] = validate_refresh(dataflow.segments, [target])
    return new_job(model, JobType.INDEX_REFRESH, segment.range, segment_ids=(segment.id,), priority=priority)


def segments_in(store: MetadataStore, project: str, alias: str, time_range: TimeRange) -> list[str]:
    """The ids of the segments holding data of `time_range` (overlapping it), in range order: what a
    refresh of a range rebuilds. Refused when there are none."""
    model, dataflow = _model(store, project, alias)
    found = [s.id for s in sorted(dataflow.segments, key=lambda s: s.range) if s.range.overlaps(time_range)]
    if not found:
        raise SegmentRuleError(f"model {model.alias} has no segment in {time_range} to refresh")
    return found


def index_build_job(store: MetadataStore, project: str, alias: str, priority: int = 3) -> Job:
    """Build the layouts of the index plan that READY segments lack (newly added indexes) into them."""
    model, dataflow, held = _with_layouts(store, project, alias)
    with store.read(project) as tx:
        planned = {lay.id for lay in tx.require(IndexPlan, model.uuid).all_layouts()}
    missing = {
        s.id: planned - held.get(s.id, set())
        for s in dataflow.segments
        if s.status is not SegmentStatus.NEW and planned - held.get(s.id, set())
    }
    if not missing:
        raise SegmentRuleError(f"every layout of model {model.alias} is built in all its READY segments")
    chosen = [s for s in dataflow.segments if s.id in missing]
    span = TimeRange.of(min(s.range.start for s in chosen), max(s.range.end for s in chosen))
    layouts = tuple(sorted(set().union(*missing.values())))
    ids = tuple(s.id for s in sorted(chosen, key=lambda s: s.range))
    return new_job(model, JobType.INDEX_BUILD, span, segment_ids=ids, layout_ids=layouts, priority=priority)


def merge_job(
    store: MetadataStore,
    project: str,
    alias: str,
    targets: Sequence[str],
    priority: int = 3,
    submitter: str = "precube",
) -> Job:
    """Merge contiguous READY segments (ids or names) into one."""
    model, dataflow, held = _with_layouts(store, project, alias)
    rng = validate_merge(dataflow.segments, list(targets), held)
    merged = tuple(
        s.id for s in sorted(dataflow.segments, key=lambda s: s.range)
        if s.status is not SegmentStatus.NEW and rng.contains(s.range)
    )  # fmt: skip
    return new_job(model, JobType.INDEX_MERGE, rng, segment_ids=merged, priority=priority, submitter=submitter)
