"""What a build needs (Spark, metadata, warehouse), and the metadata reads and writes it makes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from precube.engine.code_tables import CodeTables
from precube.engine.errors import BuildConflictError
from precube.engine.kept_lookups import KeptLookups
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
from precube.modeling.model_store import broken_text, require_model
from precube.sources.scan_plan import ScanPlan

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


LAYOUTS_STEP = "layouts"  # the step that builds a segment's layouts; its parts name it (`BuildReport.step`)


@dataclass
class BuildReport:
    """What a build operation tells of itself: the source scans it planned (what it read and skipped), the
    seconds of each of its steps, in order, the layouts merged from a built parent on the driver
    (`arrow_merge`) rather than by Spark, and the source rows read on the driver (`local_rows`)."""

    scans: list[ScanPlan] = field(default_factory=list)
    steps: dict[str, float] = field(default_factory=dict)
    merged_on_driver: list[int] = field(default_factory=list)
    read_on_driver: list[str] = field(default_factory=list)  # the source rows of tiny segments (`local_rows`)

    @contextlib.contextmanager
    def step(self, name: str, within: str | None = None) -> Iterator[None]:
        """Time a step (a step met again adds up); `within`: the step it is part of (its seconds are counted in
        that step's too), kept as "within / name"."""
        started = time.perf_counter()
        key = name if within is None else f"{within} / {name}"
        try:
            yield
        finally:
            self.steps[key] = self.steps.get(key, 0.0) + time.perf_counter() - started

    def describe_steps(self) -> str:
        """The steps and their seconds; a part is told in parentheses after the step it belongs to."""
        told: list[str] = []
        for key, seconds in self.steps.items():  # a part ends before the step it is in, so comes first
            if " / " not in key:
                within = f"{key} / "
                parts = [f"{k.removeprefix(within)} {s:.3f} s" for k, s in self.steps.items() if k.startswith(within)]
                told.append(f"{key} {seconds:.3f} s" + (f" ({', '.join(parts)})" if parts else ""))
        return ", ".join(told)


# A segment estimated (then counted) to hold at most this many flat rows is small: all its aggregate layouts
# are computed from its flat table in one Spark job (GROUPING SETS), rather than layer by layer.
SMALL_SEGMENT_ROWS = 1_000_000


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
    small_segment_rows: int = SMALL_SEGMENT_ROWS
    # kept by the process across its builds (`dataclasses.replace` shares it), while their lookups are unchanged
    code_tables: CodeTables = field(default_factory=CodeTables)
    lookups: KeptLookups = field(default_factory=KeptLookups)
    report: BuildReport = field(default_factory=BuildReport)  # give each operation a new one to read it after


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
            raise BuildConflictError(broken_text(model.alias, dataflow.broken_detail, ctx.project))
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
    record_layouts(ctx, model, segment_id, [instance])


def record_layouts(ctx: BuildContext, model: Model, segment_id: str, instances: Sequence[LayoutInstance]) -> None:
    """Record finished layouts in one transaction (a transaction each cost ~20 ms on SQLite)."""
    done = {li.layout_id for li in instances}
    with ctx.store.transaction(ctx.project, ctx.writer) as tx:
        ctx.fence(tx)
        details = tx.require(SegmentDetails, model.uuid, segment_id)
        details.layout_instances = [li for li in details.layout_instances if li.layout_id not in done]
        details.layout_instances.extend(instances)
        tx.update(details)
