"""Running jobs on real Spark: steps and progress persisted, failures kept as ERROR and resumed, a pause
honoured between layouts, job statistics per day."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from precube.engine.context import BuildContext
from precube.jobs import runner
from precube.jobs.runner import new_job, run_job
from precube.jobs.submission import act, submit
from precube.metadata import Dataflow, Job, JobAction, JobState, JobStats, JobType, SegmentDetails, TimeRange
from precube.modeling.model_store import require_model
from tests.engine.test_operations import _views, check_segment, day

pytestmark = pytest.mark.spark


def _submit(ctx: BuildContext, start: str, end: str) -> Job:
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
    job = new_job(model, JobType.INC_BUILD, TimeRange.of(day(start), day(end)))
    return submit(ctx.store, "ssb", job)


def _stored(ctx: BuildContext, job_id: str) -> Job:
    with ctx.store.read("ssb") as tx:
        return tx.require(Job, job_id)


def test_a_build_job_runs_its_steps_and_counts_in_the_days_stats(ctx: BuildContext) -> None:
    import io
    import re

    from precube.jobs import joblog

    job = _submit(ctx, "1995-03-01", "1995-03-02")
    log = io.StringIO()
    joblog.log_to(log)
    try:
        done = run_job(ctx, job.uuid)
    finally:
        joblog.logger.handlers.clear()
    lines = log.getvalue().splitlines()  # the job log: time, level and job on every line
    assert all(re.match(rf"\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO job={job.uuid} ", line) for line in lines), lines
    assert "INC_BUILD on model sales [1995-03-01, 1995-03-02) started" in lines[0] and "succeeded in" in lines[-1]
    assert any("step layers" in line for line in lines)
    assert any("step dictionaries: dictionary of " in line for line in lines)  # names the column it builds
    assert done.steps[0].output.startswith("dictionary done: ")  # then its end: every column
    # what the build read of its source and what it skipped, and the seconds of its steps, on the job
    assert done.params["source_scan"].startswith("SSB.LINEORDER: read 1 of 1 files, ")
    assert done.params["source_scan"] in done.steps[0].output
    assert done.params["step_seconds"].startswith("steps: source plan ") and "commit" in done.params["step_seconds"]
    # the parts of the layouts step in parentheses after it: a small segment's layouts from its flat table
    assert re.search(r"layouts [\d.]+ s \((.+, )?from the flat table [\d.]+ s", done.params["step_seconds"])
    assert any(done.params["source_scan"] in line for line in lines)
    assert done.state is JobState.SUCCEED and done.error is None and done.progress == 1
    assert [s.name for s in done.steps] == ["dictionaries", "layers", "commit"]
    assert all(s.state is JobState.SUCCEED and s.start_time and s.end_time for s in done.steps)
    assert all(s.done == s.total for s in done.steps if s.total)  # each step's last count is written
    assert done.start_time is not None and done.end_time is not None and done.duration_ms > 0
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        [segment] = tx.require(Dataflow, model.uuid).segments
        details = tx.require(SegmentDetails, model.uuid, segment.id)
        stats = tx.require(JobStats, time.strftime("%Y-%m-%d", time.gmtime(done.end_time / 1000)))
    assert {li.build_job_id for li in details.layout_instances} == {job.uuid}
    assert (stats.count, stats.source_rows, stats.by_model) == (1, segment.source_count, {model.uuid: 1})


def test_a_failed_job_keeps_its_error_and_resumes_where_it_stopped(ctx: BuildContext, ssb_dir: Path) -> None:
    _views(ctx.spark, ssb_dir)  # the oracle's raw tables
    job = _submit(ctx, "1995-03-01", "1995-03-03")
    layouts = 0

    def disk_full_after_two(stage: str, done: int, total: int) -> None:
        nonlocal layouts
        layouts += stage.startswith("layer")
        if layouts > 2:
            raise OSError("No space left on device")

    failed = run_job(dataclasses.replace(ctx, progress=disk_full_after_two), job.uuid)
    assert failed.state is JobState.ERROR and failed.error == "OSError: No space left on device"
    assert [s.state for s in failed.steps] == [JobState.SUCCEED, JobState.ERROR, JobState.READY]
    assert failed.steps[1].error == failed.error and 0 < failed.steps[1].done < failed.steps[1].total
    with pytest.raises(Exception, match="cannot go from ERROR to RUNNING"):
        run_job(ctx, job.uuid)  # resume first
    act(ctx.store, "ssb", job.uuid, JobAction.RESUME)
    done = run_job(ctx, job.uuid)
    assert done.state is JobState.SUCCEED and done.error is None
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        [segment] = tx.require(Dataflow, model.uuid).segments
    assert check_segment(ctx, "sales", segment.id, "1995-03-01", "1995-03-03") > 0


def test_a_pause_stops_the_job_between_layouts(ctx: BuildContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "SAVE_EVERY_S", 0.0)  # look at the stored state at every layout
    job = _submit(ctx, "1995-03-01", "1995-03-02")

    def pause_at_first_layout(stage: str, done: int, total: int) -> None:
        if stage.startswith("layer") and done == 1:
            act(ctx.store, "ssb", job.uuid, JobAction.PAUSE)

    paused = run_job(dataclasses.replace(ctx, progress=pause_at_first_layout), job.uuid)
    assert paused.state is JobState.PAUSED
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        [segment] = tx.require(Dataflow, model.uuid).segments
        built = tx.require(SegmentDetails, model.uuid, segment.id).layout_instances
    assert segment.status.value == "NEW" and len(built) > 0  # nothing visible, the finished layouts kept
    act(ctx.store, "ssb", job.uuid, JobAction.RESUME)
    assert run_job(ctx, job.uuid).state is JobState.SUCCEED
    assert _stored(ctx, job.uuid).steps[-1].state is JobState.SUCCEED


@pytest.mark.parametrize("kind", [JobType.INDEX_REFRESH, JobType.INDEX_MERGE])
def test_a_failed_refresh_or_merge_resumes_though_it_locked_its_segments(ctx: BuildContext, kind: JobType) -> None:
    """A refresh or merge that stopped keeps its NEW segment, which LOCKS the segments it replaces; resumed,
    it finds that segment again (the segment rules would refuse the LOCKED targets) and ends with no segment
    left LOCKED or NEW."""
    from precube.jobs.plans import merge_job, refresh_job
    from precube.metadata import SegmentStatus
    from precube.modeling.segments import SegmentDisplayStatus, display_status

    for start, end in (("1995-03-01", "1995-03-02"), ("1995-03-02", "1995-03-03")):
        assert run_job(ctx, _submit(ctx, start, end).uuid).state is JobState.SUCCEED
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        before = sorted(tx.require(Dataflow, model.uuid).segments, key=lambda s: s.range)
    if kind is JobType.INDEX_REFRESH:
        job = submit(ctx.store, "ssb", refresh_job(ctx.store, "ssb", "sales", before[0].id))
    else:
        job = submit(ctx.store, "ssb", merge_job(ctx.store, "ssb", "sales", [s.id for s in before]))

    def fail_after_one(stage: str, done: int, total: int) -> None:
        if stage.split(" ")[0] in ("layer", "merge") and done >= 1:
            raise OSError("No space left on device")

    failed = run_job(dataclasses.replace(ctx, progress=fail_after_one), job.uuid)
    assert failed.state is JobState.ERROR
    with ctx.store.read("ssb") as tx:
        segments = tx.require(Dataflow, model.uuid).segments
    assert any(display_status(s, segments) is SegmentDisplayStatus.LOCKED for s in segments)
    act(ctx.store, "ssb", job.uuid, JobAction.RESUME)
    done = run_job(ctx, job.uuid)
    assert done.state is JobState.SUCCEED, done.error
    with ctx.store.read("ssb") as tx:
        after = sorted(tx.require(Dataflow, model.uuid).segments, key=lambda s: s.range)
    assert all(s.status is SegmentStatus.READY for s in after)
    assert all(display_status(s, after) is SegmentDisplayStatus.ONLINE for s in after)
    expected = (
        [s.range for s in before]
        if kind is JobType.INDEX_REFRESH
        else [TimeRange.of(before[0].range.start, before[-1].range.end)]
    )
    assert [s.range for s in after] == expected
    assert before[0].id not in {s.id for s in after}  # replaced by the refreshed or merged segment
    assert sum(s.source_count for s in after) == sum(s.source_count for s in before)


@pytest.mark.parametrize("save_every_s", [0.0, 3600.0], ids=["progress-write", "layout-write"])
def test_a_run_whose_job_was_taken_over_stops_and_publishes_nothing(
    ctx: BuildContext, ssb_dir: Path, monkeypatch: pytest.MonkeyPatch, save_every_s: float
) -> None:
    """A run stalled while another process took the project's lease over (its jobs found RUNNING made
    READY and started again by a run of its own): the first run's next write — its progress, or with
    progress writes throttled the next layout's record — is refused: no layout recorded after that instant,
    the job's state left to the other run, which finishes it."""
    from precube.jobs.shutdown import take_over

    _views(ctx.spark, ssb_dir)
    monkeypatch.setattr(runner, "SAVE_EVERY_S", save_every_s)
    job = _submit(ctx, "1995-03-01", "1995-03-03")
    other = "otherhost:1:takeover"
    recorded: list[int] = []

    def take_over_at_first_layout(stage: str, done: int, total: int) -> None:
        if stage.startswith("layer") and done == 1 and not recorded:
            with ctx.store.read("ssb") as tx:
                model = require_model(tx, "sales")
                [segment] = tx.require(Dataflow, model.uuid).segments
                recorded.extend(
                    li.layout_id for li in tx.require(SegmentDetails, model.uuid, segment.id).layout_instances
                )
            take_over(ctx.store, "ssb", "other")
            with ctx.store.transaction("ssb", "other") as tx:  # the other process's run starts
                taken = tx.require(Job, job.uuid)
                taken.state, taken.runner = JobState.RUNNING, other
                tx.update(taken)

    stopped = run_job(dataclasses.replace(ctx, progress=take_over_at_first_layout), job.uuid)
    assert stopped.state is JobState.RUNNING and stopped.runner == other  # left as the other run set it
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        [segment] = tx.require(Dataflow, model.uuid).segments
        kept = [li.layout_id for li in tx.require(SegmentDetails, model.uuid, segment.id).layout_instances]
    assert recorded and sorted(kept) == sorted(recorded)  # nothing recorded after the takeover
    assert segment.status.value == "NEW"  # nothing published
    with ctx.store.transaction("ssb", "other") as tx:  # the other process died too: its job is resumable
        taken = tx.require(Job, job.uuid)
        taken.state = JobState.READY
        tx.update(taken)
    done = run_job(ctx, job.uuid)
    assert done.state is JobState.SUCCEED and done.runner not in (None, other, stopped.runner)
    with ctx.store.read("ssb") as tx:
        [segment] = tx.require(Dataflow, model.uuid).segments
    assert check_segment(ctx, "sales", segment.id, "1995-03-01", "1995-03-03") > 0
