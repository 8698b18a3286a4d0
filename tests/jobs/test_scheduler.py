"""The scheduler on real Spark: daily builds auto-merged week by week equal one build of the same days,
READY jobs run by priority, and jobs a dead process left RUNNING are recovered and resumed."""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path

import pytest

from precube.engine.context import BuildContext
from precube.jobs.lifecycle import AUTO_MERGE, Aftermath
from precube.jobs.plans import build_job
from precube.jobs.queue import DIED
from precube.jobs.scheduler import Scheduler
from precube.jobs.submission import act, jobs_of, submit
from precube.metadata import (
    Dataflow,
    IndexPlan,
    Job,
    JobAction,
    JobState,
    JobType,
    SegmentStatus,
    TimeRange,
)
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model, require_model
from tests.engine.conftest import SPEC
from tests.engine.test_operations import _comparable, _views, check_segment, day, read_layout

pytestmark = pytest.mark.spark


# A light model (additive measures, four layouts) keeps a dozen builds quick; the measure kinds are the
# build tests' concern, the segment lifecycle is this file's.
LIGHT = {
    **SPEC,
    "simplified_dimensions": ["DATES.D_YEAR", "CUSTOMER.C_REGION"],
    "simplified_measures": SPEC["simplified_measures"][:2],
    "aggregation_groups": [{"includes": ["D_YEAR", "C_REGION"]}],
}


def _light(ctx: BuildContext, alias: str) -> None:
    create_model(ctx.store, "ssb", parse_spec({**LIGHT, "alias": alias}))


def _auto_merge_on(ctx: BuildContext) -> None:
    with ctx.store.transaction("ssb") as tx:
        project = tx.project()
        project.segment_config.auto_merge_enabled = True  # levels: Kylin's default WEEK, MONTH, QUARTER, YEAR
        tx.update(project)


def _segments(ctx: BuildContext, alias: str) -> list[tuple[int, int, SegmentStatus]]:
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, alias)
        return sorted((s.range.start, s.range.end, s.status) for s in tx.require(Dataflow, model.uuid).segments)


def test_daily_builds_auto_merge_into_weeks_equal_to_one_build(ctx: BuildContext, ssb_dir: Path) -> None:
    _views(ctx.spark, ssb_dir)
    _auto_merge_on(ctx)
    _light(ctx, "light")
    ended: list[tuple[Job, Aftermath | None]] = []
    scheduler = Scheduler(ctx, poll_s=0.05, listener=lambda job, after: ended.append((job, after)))
    first = dt.date(1992, 1, 1)  # a Wednesday: the first week ends on Monday 01-06
    days = [(first + dt.timedelta(days=i)).isoformat() for i in range(13)]
    for start, end in itertools.pairwise(days):  # 12 daily builds, each followed by its aftermath
        submit(ctx.store, "ssb", build_job(ctx.store, "ssb", "light", TimeRange.of(day(start), day(end))))
        assert scheduler.run_until_idle(timeout_s=300)
    scheduler.stop()

    # Kylin's rule: a window starts at a segment's start and ends at the next calendar boundary; it merges
    # once data reaches its end. WEEK: [01-01, 01-06) after the build of 01-05, [01-06, 01-13) after 01-12.
    weeks = [("1992-01-01", "1992-01-06"), ("1992-01-06", "1992-01-13")]
    assert _segments(ctx, "light") == [(day(a), day(b), SegmentStatus.READY) for a, b in weeks]
    jobs = jobs_of(ctx.store, "ssb")
    assert all(j.state is JobState.SUCCEED for j in jobs)
    assert sorted((j.job_type, j.submitter) for j in jobs) == sorted(
        [(JobType.INC_BUILD, "precube")] * 12 + [(JobType.INDEX_MERGE, AUTO_MERGE)] * 2
    )
    merges = [after.merge for _, after in ended if after is not None and after.merge is not None]
    assert [m.time_range for m in merges] == [TimeRange.of(day(a), day(b)) for a, b in weeks]

    # Each merged week equals the oracle, and the same week built at once, layout by layout.
    _light(ctx, "light_once")
    with ctx.store.read("ssb") as tx:
        a, b = require_model(tx, "light"), require_model(tx, "light_once")
        plan = tx.require(IndexPlan, a.uuid)
        merged = sorted(tx.require(Dataflow, a.uuid).segments, key=lambda s: s.range)
    for segment, (start, end) in zip(merged, weeks, strict=True):
        aggregates = [lay for lay in plan.all_layouts() if not lay.is_table_index]
        assert check_segment(ctx, "light", segment.id, start, end) == len(aggregates) == 3
        once = build_job(ctx.store, "ssb", "light_once", segment.range)
        submit(ctx.store, "ssb", once)
        runner = Scheduler(ctx, poll_s=0.05)
        assert runner.run_until_idle(timeout_s=300)
        runner.stop()
        with ctx.store.read("ssb") as tx:
            built = next(s for s in tx.require(Dataflow, b.uuid).segments if s.range == segment.range)
        assert built.source_count == segment.source_count > 0
        for layout in plan.all_layouts():
            left = sorted(map(_comparable(a), read_layout(ctx, a, segment.id, layout)))
            right = sorted(map(_comparable(b), read_layout(ctx, b, built.id, layout)))
            assert left == right, f"layout {layout.id}"


def test_ready_jobs_run_by_priority_and_a_dead_runners_job_resumes(ctx: BuildContext) -> None:
    low = submit(
        ctx.store, "ssb", build_job(ctx.store, "ssb", "sales", TimeRange.of(day("1994-01-01"), day("1994-01-02")), 4)
    )
    high = submit(
        ctx.store, "ssb", build_job(ctx.store, "ssb", "sales", TimeRange.of(day("1994-02-01"), day("1994-02-02")), 0)
    )
    # A process died while running `high`: its job is left RUNNING, its NEW segment half built.
    with ctx.store.transaction("ssb") as tx:
        job = tx.require(Job, high.uuid)
        job.move_to(JobState.RUNNING)
        job.steps[0].state = JobState.RUNNING
        tx.update(job)
    order: list[str] = []
    scheduler = Scheduler(ctx, poll_s=0.05, listener=lambda job, _after: order.append(job.uuid))
    assert scheduler.run_until_idle(timeout_s=300)
    assert [j.uuid for j in scheduler.recovered] == [high.uuid]
    assert order == [low.uuid]  # the recovered job waits for a resume
    with ctx.store.read("ssb") as tx:
        recovered = tx.require(Job, high.uuid)
    assert recovered.state is JobState.ERROR and recovered.error == DIED
    assert recovered.steps[0].state is JobState.ERROR

    act(ctx.store, "ssb", high.uuid, JobAction.RESUME)
    extra = submit(
        ctx.store, "ssb", build_job(ctx.store, "ssb", "sales", TimeRange.of(day("1994-03-01"), day("1994-03-02")), 4)
    )
    assert scheduler.run_until_idle(timeout_s=300)
    scheduler.stop()
    assert order == [low.uuid, high.uuid, extra.uuid]  # priority 0 before the older priority 4
    assert [s[2] for s in _segments(ctx, "sales")] == [SegmentStatus.READY] * 3


def test_kylin_a2_empty_daily_segments_auto_merge(ctx: BuildContext) -> None:
    """Kylin's AutoMergeTest A2 as its own dates: four daily builds from 2010-01-01 (no SSB orders then, so
    empty segments) and Kylin's default levels merge [01-01, 01-04) once 01-04 (a Monday) is reached."""
    _auto_merge_on(ctx)
    _light(ctx, "light")
    scheduler = Scheduler(ctx, poll_s=0.05)
    days = ["2010-01-01", "2010-01-02", "2010-01-03", "2010-01-04", "2010-01-05"]
    for start, end in itertools.pairwise(days):
        submit(ctx.store, "ssb", build_job(ctx.store, "ssb", "light", TimeRange.of(day(start), day(end))))
        assert scheduler.run_until_idle(timeout_s=300)
    scheduler.stop()
    expected = [("2010-01-01", "2010-01-04"), ("2010-01-04", "2010-01-05")]
    assert _segments(ctx, "light") == [(day(a), day(b), SegmentStatus.READY) for a, b in expected]
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "light")
        assert all(s.source_count == 0 for s in tx.require(Dataflow, model.uuid).segments)


def test_seed_001_thresholds_merge_c_to_i_through_real_builds(ctx: BuildContext) -> None:
    """Seed 001 §4.4's example with thresholds 7 and 28 days, built for real (2010: empty segments, so quick):
    A (28 days), B (7 days), then C…H one day each merge nothing; I completes a 7-day run and C…I merge once."""
    with ctx.store.transaction("ssb") as tx:
        project = tx.project()
        project.segment_config.auto_merge_enabled = True
        project.segment_config.auto_merge_thresholds_ms = [7 * 86_400_000, 28 * 86_400_000]
        tx.update(project)
    _light(ctx, "seed")
    scheduler = Scheduler(ctx, poll_s=0.05)
    ends = ["2010-01-01", "2010-01-29", "2010-02-05", *(f"2010-02-{d:02d}" for d in range(6, 13))]
    merged_after = []
    for start, end in itertools.pairwise(ends):  # A, B, C … H, I
        submit(ctx.store, "ssb", build_job(ctx.store, "ssb", "seed", TimeRange.of(day(start), day(end))))
        assert scheduler.run_until_idle(timeout_s=300)
        if any(j.job_type is JobType.INDEX_MERGE for j in jobs_of(ctx.store, "ssb") if j.model_alias == "seed"):
            merged_after.append(end)
    scheduler.stop()
    assert merged_after[0] == "2010-02-12"  # no merge before I was built
    expected = [("2010-01-01", "2010-01-29"), ("2010-01-29", "2010-02-05"), ("2010-02-05", "2010-02-12")]
    assert _segments(ctx, "seed") == [(day(a), day(b), SegmentStatus.READY) for a, b in expected]
    merges = [j for j in jobs_of(ctx.store, "ssb") if j.job_type is JobType.INDEX_MERGE and j.model_alias == "seed"]
    assert [(m.submitter, m.state) for m in merges] == [(AUTO_MERGE, JobState.SUCCEED)]


def test_a_servers_scheduler_takes_a_dead_runners_job_over_and_runs_it(ctx: BuildContext) -> None:
    """With `resume` (a server), the job a dead process left RUNNING is READY as soon as the lease is taken, in
    the same transaction (never ERROR on the way), and runs to its end."""
    job = submit(
        ctx.store, "ssb", build_job(ctx.store, "ssb", "sales", TimeRange.of(day("1994-04-01"), day("1994-04-02")))
    )
    with ctx.store.transaction("ssb") as tx:
        dead = tx.require(Job, job.uuid)
        dead.move_to(JobState.RUNNING)
        dead.steps[0].state = JobState.RUNNING
        dead.runner = "otherhost:1:dead"
        tx.update(dead)
    ended: list[Job] = []
    scheduler = Scheduler(ctx, poll_s=0.05, listener=lambda job, _after: ended.append(job), resume=True)
    assert scheduler.run_until_idle(timeout_s=300)
    scheduler.stop()
    assert [j.uuid for j in scheduler.recovered] == [job.uuid]
    assert scheduler.recovered[0].state is JobState.READY and scheduler.recovered[0].steps[0].state is JobState.READY
    assert [(j.uuid, j.state) for j in ended] == [(job.uuid, JobState.SUCCEED)]
    assert ended[0].runner != "otherhost:1:dead" and ended[0].error is None
