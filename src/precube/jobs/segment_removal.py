"""Taking segments out of a model's metadata: a user's delete, retention, and the NEW segment of a job
that was discarded or restarted. Their files stay until garbage collection (`jobs.gc`)."""

from __future__ import annotations

from collections.abc import Sequence

from precube.metadata import Dataflow, DataflowStatus, Job, Model, Segment, SegmentDetails, SegmentStatus, Transaction


def remove_segments(tx: Transaction, model: Model, segment_ids: Sequence[str]) -> list[Segment]:
    """Drop segments and their layout records in `tx`; a model left without segments goes OFFLINE."""
    dataflow = tx.require(Dataflow, model.uuid)
    doomed = set(segment_ids)
    removed = [s for s in dataflow.segments if s.id in doomed]
    for segment in removed:
        details = tx.get(SegmentDetails, model.uuid, segment.id)
        if details is not None:
            tx.delete(details)
    dataflow.segments = [s for s in dataflow.segments if s.id not in doomed]
    if not dataflow.segments:
        dataflow.status = DataflowStatus.OFFLINE
    tx.update(dataflow)
    return removed


def drop_job_segment(tx: Transaction, job: Job) -> list[Segment]:
    """The NEW segment a build, refresh or merge job was writing (same range), for a discard or restart:
    the segments it would have replaced stay as they were."""
    if job.target_model is None or job.time_range is None:
        return []
    dataflow = tx.get(Dataflow, job.target_model)
    model = tx.get(Model, job.target_model)
    if dataflow is None or model is None:
        return []
    mine = [s.id for s in dataflow.segments if s.status is SegmentStatus.NEW and s.range == job.time_range]
    return remove_segments(tx, model, mine) if mine else []
