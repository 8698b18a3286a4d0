"""Every kind of job resumes after stopping at any point: BUILD, REFRESH, MERGE and add-layouts jobs, each
failed before its layouts, between two layouts, and in its metadata commit (after every layout is written),
and each paused between two layouts.
Resumed, each ends SUCCEED with its segments' layouts equal to the oracle and no segment left NEW or LOCKED.
(A kill -9 of the process is `test_crash`; a kill leaves the job as a failure does, plus a dead runner.)"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from precube.engine import operations
from precube.engine.context import BuildContext
from precube.jobs.plans import build_job, index_build_job, merge_job, refresh_job
from precube.jobs.runner import run_job
from precube.jobs.submission import act, submit
from precube.metadata import Dataflow, IndexPlan, Job, JobAction, JobState, SegmentDetails, SegmentStatus, TimeRange
from precube.metadata.dataflow import time_text
from precube.modeling.model_store import add_model_table_index, require_model
from precube.modeling.segments import SegmentDisplayStatus, display_status
from tests.engine.test_operations import _views, check_segment, day

pytestmark = pytest.mark.spark

DAYS = [("1995-03-01", "1995-03-02"), ("1995-03-02", "1995-03-03")]


class StoppedError(Exception):
    """The injected failure."""


def _built(ctx: BuildContext, start: str, end: str) -> None:
    job = submit(ctx.store, "ssb", build_job(ctx.store, "ssb", "sales", TimeRange.of(day(start), day(end))))
    assert run_job(ctx, job.uuid).state is JobState.SUCCEED


def _job(ctx: BuildContext, kind: str) -> Job:
    """The job under test, with what it needs built first."""
    if kind == "build":
        return build_job(ctx.store, "ssb", "sales", TimeRange.of(day(DAYS[0][0]), day(DAYS[0][1])))
    _built(ctx, *DAYS[0])
    with ctx.store.read("ssb") as tx:
        [first] = tx.require(Dataflow, require_model(tx, "sales").uuid).segments
    if kind == "refresh":
        return refresh_job(ctx.store, "ssb", "sales", first.id)
    if kind == "merge":
        _built(ctx, *DAYS[1])
        with ctx.store.read("ssb") as tx:
            ids = [s.id for s in tx.require(Dataflow, require_model(tx, "sales").uuid).segments]
        return merge_job(ctx.store, "ssb", "sales", ids)
    add_model_table_index(ctx.store, "ssb", "sales", ["LO_ORDERDATE", "C_REGION", "LO_REVENUE"])
    return index_build_job(ctx.store, "ssb", "sales")


def _stop_at(point: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, int, int], None]:
    """A progress callback (and patches) that stop the job once at `point`."""
    if point == "commit":  # every layout written, then the metadata commit fails

        def commit_fails(*_: Any, **__: Any) -> NoReturn:
            raise StoppedError("the metadata commit failed")

        real_build_layouts = operations.build_layouts  # the function the runner calls

        def layouts_then_fail(*args: Any, **kwargs: Any) -> NoReturn:
            real_build_layouts(*args, **kwargs)
            raise StoppedError("the job failed after its layouts were recorded")

        monkeypatch.setattr(operations, "_commit", commit_fails)
        monkeypatch.setattr(operations, "build_layouts", layouts_then_fail)  # the runner imports it per job
        return lambda *_: None

    def progress(stage: str, done: int, total: int) -> None:
        if point == "start" or (point == "middle" and stage.split(" ")[0] in ("layer", "merge") and done >= 1):
            raise StoppedError(f"stopped at {stage} {done}/{total}")

    return progress


def _pause_at_first_layout(ctx: BuildContext, job_id: str) -> Callable[[str, int, int], None]:
    """A user's pause (Ctrl-C of `--wait`, `jobs pause`) once a layout is written: the job stops before the next."""

    def progress(stage: str, done: int, total: int) -> None:
        if stage.split(" ")[0] in ("layer", "merge") and done == 1:
            act(ctx.store, "ssb", job_id, JobAction.PAUSE)

    return progress


@pytest.mark.parametrize("point", ["start", "middle", "commit", "pause"])
@pytest.mark.parametrize("kind", ["build", "refresh", "merge", "add-layouts"])
def test_a_stopped_job_resumes_to_the_oracle(
    ctx: BuildContext, ssb_dir: Path, monkeypatch: pytest.MonkeyPatch, kind: str, point: str
) -> None:
    _views(ctx.spark, ssb_dir)
    job = submit(ctx.store, "ssb", _job(ctx, kind))
    if point == "pause":
        paused = run_job(dataclasses.replace(ctx, progress=_pause_at_first_layout(ctx, job.uuid)), job.uuid)
        assert paused.state is JobState.PAUSED
    else:
        with monkeypatch.context() as patches:
            failed = run_job(dataclasses.replace(ctx, progress=_stop_at(point, patches)), job.uuid)
        assert failed.state is JobState.ERROR and "StoppedError" in (failed.error or ""), failed.error
    act(ctx.store, "ssb", job.uuid, JobAction.RESUME)
    done = run_job(ctx, job.uuid)
    assert done.state is JobState.SUCCEED, done.error
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        segments = tx.require(Dataflow, model.uuid).segments
        planned_layouts = tx.require(IndexPlan, model.uuid).all_layouts()
        planned = {lay.id for lay in planned_layouts}
        held = {
            s.id: {li.layout_id for li in tx.require(SegmentDetails, model.uuid, s.id).layout_instances}
            for s in segments
        }
    assert all(s.status is SegmentStatus.READY for s in segments)
    assert all(display_status(s, segments) is SegmentDisplayStatus.ONLINE for s in segments)
    assert all(layouts == planned for layouts in held.values())  # every layout of the plan, in every segment
    aggregates = len([lay for lay in planned_layouts if not lay.is_table_index])
    for segment in segments:  # each aggregate layout equal to the oracle over the segment's days
        assert (
            check_segment(ctx, "sales", segment.id, time_text(segment.range.start), time_text(segment.range.end))
            == aggregates
        )
