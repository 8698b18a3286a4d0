"""What a build needs (Spark, metadata, warehouse), and the metadata reads and writes it makes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from precube.engine.errors import BuildConflictError
from precube.metadata import (
    Dataflow,
    DataflowStatus,
    IndexPlan,
    LayoutInstance,
    MetadataStore,
    Model,
    Segment,
    SegmentDetails,
    Table,
    Transaction,
)
from precube.modeling.model_store import require_model

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# (stage, done, total): e.g. ("layer 2", 3, 7), ("flat table", 0, 1)
Progress = Callable[[str, int, int], None]


# Called inside every transaction that records what the build wrote (its NEW segment, a layout, the final
# commit): raises to refuse the write, so a run that lost its job to another process publishes nothing.
Fence = Callable[[Transaction], None]


def _quiet(stage: str, done: int, total: int) -> None:
    pass


def _unfenced(tx: Transaction) -> None:
    pass


@dataclass
class BuildContext:
    spark: SparkSession
    store: MetadataStore
    project: str
    warehouse_root: str
    writer: str = "build"
    job_id: str | None = None
    progress: Progress = _quiet
    parallel_layouts: int = 2  # layouts of one layer built as concurrent Spark jobs
    fence: Fence = _unfenced


@dataclass(frozen=True)
class ModelState:
    model: Model
    plan: IndexPlan
    dataflow: Dataflow
    tables: dict[str, Table]


def load_state(ctx: BuildContext, model_alias: str) -> ModelState:
    with ctx.store.read(ctx.project) as tx:
        model = require_model(tx, model_alias)
        dataflow = tx.require(Dataflow, model.uuid)
        if dataflow.status is DataflowStatus.BROKEN:
            raise BuildConflictError(f"model {model.alias} is BROKEN ({dataflow.broken_detail}); fix it first")
        return ModelState(model, tx.require(IndexPlan, model.uuid), dataflow, {t.identity: t for t in tx.list(Table)})


def built_layouts(ctx: BuildContext, model: Model, segment_id: str) -> dict[int, LayoutInstance]:
    with ctx.store.read(ctx.project) as tx:
        details = tx.get(SegmentDetails, model.uuid, segment_id)
    return {li.layout_id: li for li in details.layout_instances if li.is_ready} if details else {}


def add_segment(ctx: BuildContext, model: Model, segment: Segment) -> Segment:
    """Record a NEW segment (not queryable) and its empty details, before any data is written."""
    with ctx.store.transaction(ctx.project, ctx.writer) as tx:
        ctx.fence(tx)
        dataflow = tx.require(Dataflow, model.uuid)
        dataflow.segments.append(segment)
        tx.update(dataflow)
        tx.create(SegmentDetails(uuid=segment.id, dataflow=model.uuid))
    return segment


def record_layout(ctx: BuildContext, model: Model, segment_id: str, instance: LayoutInstance) -> None:
    """Record one finished layout; a rerun of the build skips it."""
    with ctx.store.transaction(ctx.project, ctx.writer) as tx:
        ctx.fence(tx)
        details = tx.require(SegmentDetails, model.uuid, segment_id)
        details.layout_instances = [li for li in details.layout_instances if li.layout_id != instance.layout_id]
        details.layout_instances.append(instance)
        tx.update(details)
