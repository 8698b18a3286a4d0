"""A model's segments as `precube segments` and `GET …/segments` show them: display status (Kylin's
`status_to_display`), source rows, built layouts and bytes."""

from __future__ import annotations

from dataclasses import dataclass

from precube.jobs.removal import segment_bytes
from precube.metadata import Dataflow, IndexPlan, MetadataStore, Model, Segment, SegmentDetails
from precube.modeling.model_store import require_model
from precube.modeling.segments import SegmentDisplayStatus, display_source_rows, display_status


@dataclass(frozen=True)
class SegmentView:
    segment: Segment
    status: SegmentDisplayStatus
    source_rows: int | None  # None: not known yet (a new range loading)
    layouts: int  # layouts built in it
    data_bytes: int | None  # None: a remote warehouse, not measured


@dataclass(frozen=True)
class SegmentListing:
    model: Model
    dataflow: Dataflow
    planned_layouts: int  # layouts of the index plan
    segments: list[SegmentView]  # in range order


def list_segments(store: MetadataStore, warehouse_root: str, project: str, alias: str) -> SegmentListing:
    with store.read(project) as tx:
        model = require_model(tx, alias)
        dataflow = tx.require(Dataflow, model.uuid)
        plan = tx.get(IndexPlan, model.uuid)
        details = {s.id: tx.get(SegmentDetails, model.uuid, s.id) for s in dataflow.segments}
    views = []
    for seg in sorted(dataflow.segments, key=lambda s: s.range):
        held = details.get(seg.id)
        views.append(
            SegmentView(
                seg,
                display_status(seg, dataflow.segments),
                display_source_rows(seg, dataflow.segments),
                sum(1 for li in held.layout_instances if li.is_ready) if held is not None else 0,
                segment_bytes(warehouse_root, project, model.uuid, [seg.id]),
            )
        )
    return SegmentListing(model, dataflow, len(plan.all_layouts()) if plan is not None else 0, views)
