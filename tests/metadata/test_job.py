"""Job documents: Kylin's states and moves, user actions, the key scheme, per-day statistics."""

from __future__ import annotations

import itertools

import pytest

from precube.metadata import (
    InvalidJobStateError,
    Job,
    JobAction,
    JobState,
    JobStats,
    JobStep,
    JobType,
    MetadataStore,
    Project,
    TimeRange,
    new_job_id,
)

MODEL = "0b3c9a8e-1111-2222-3333-444455556666"

# Kylin 5 ExecutableState.VALID_STATE_TRANSFER, as reference §2 lists it.
ALLOWED = {
    ("READY", "RUNNING"), ("READY", "ERROR"), ("READY", "DISCARDED"), ("READY", "PAUSED"),
    ("RUNNING", "READY"), ("RUNNING", "SUCCEED"), ("RUNNING", "DISCARDED"), ("RUNNING", "ERROR"),
    ("RUNNING", "PAUSED"), ("PAUSED", "READY"), ("PAUSED", "DISCARDED"), ("ERROR", "READY"),
    ("ERROR", "DISCARDED"), ("SUCCEED", "READY"),
}  # fmt: skip


def _job(state: JobState = JobState.READY) -> Job:
    steps = [JobStep(name=n) for n in ("flat table", "layer 1", "commit")]
    return Job(uuid=new_job_id(MODEL), job_type=JobType.INC_BUILD, target_model=MODEL, state=state, steps=steps)


@pytest.mark.parametrize(("source", "target"), list(itertools.product(JobState, JobState)))
def test_moves_are_kylins(source: JobState, target: JobState) -> None:
    job = _job(source)
    if source is target or (source.value, target.value) in ALLOWED:
        job.move_to(target)
        assert job.state is target
    else:
        with pytest.raises(InvalidJobStateError, match=f"from {source} to {target}"):
            job.move_to(target)
        assert job.state is source


@pytest.mark.parametrize(
    ("action", "source", "target"),
    [
        (JobAction.PAUSE, JobState.RUNNING, JobState.PAUSED),
        (JobAction.PAUSE, JobState.READY, JobState.PAUSED),
        (JobAction.RESUME, JobState.PAUSED, JobState.READY),
        (JobAction.RESUME, JobState.ERROR, JobState.READY),
        (JobAction.DISCARD, JobState.ERROR, JobState.DISCARDED),
        (JobAction.DISCARD, JobState.RUNNING, JobState.DISCARDED),
        (JobAction.RESTART, JobState.ERROR, JobState.READY),
    ],
)
def test_actions(action: JobAction, source: JobState, target: JobState) -> None:
    job = _job(source)
    job.apply(action)
    assert job.state is target


@pytest.mark.parametrize(
    ("action", "source"),
    [
        (JobAction.RESUME, JobState.RUNNING),
        (JobAction.PAUSE, JobState.ERROR),
        (JobAction.DISCARD, JobState.SUCCEED),
        (JobAction.RESTART, JobState.DISCARDED),
        (JobAction.RESTART, JobState.SUCCEED),
    ],
)
def test_actions_refused(action: JobAction, source: JobState) -> None:
    job = _job(source)
    with pytest.raises(InvalidJobStateError, match=f"cannot {action.value.lower()} job .*: it is {source}"):
        job.apply(action)


def test_resume_continues_where_it_stopped_and_restart_starts_over() -> None:
    job = _job(JobState.RUNNING)
    job.steps[0].state = JobState.SUCCEED
    job.steps[1].done, job.steps[1].total = 1, 4
    job.move_to(JobState.ERROR)
    assert job.current_step is job.steps[1] and job.progress == pytest.approx((1 + 0.25) / 3)
    job.apply(JobAction.RESUME)
    assert job.current_step is job.steps[1]
    job.move_to(JobState.ERROR)
    job.apply(JobAction.RESTART)
    assert job.current_step is job.steps[0] and job.progress == 0
    assert [s.name for s in job.steps] == ["flat table", "layer 1", "commit"]


def test_job_documents_in_the_store(store: MetadataStore) -> None:
    store.create_project(Project(name="ssb", default_database="SSB"))
    job = _job()
    job.time_range = TimeRange.of(0, 86_400_000)
    assert job.uuid.endswith(MODEL) and job.uuid != new_job_id(MODEL)
    with store.transaction("ssb") as tx:
        tx.create(job)
        stats = JobStats(uuid="2026-11-22")
        stats.add(job.model_copy(update={"start_time": 1_000, "end_time": 3_500}), source_rows=42)
        tx.create(stats)
    assert f"/ssb/execute/{job.uuid}" in [d.key for d in store.scan("/ssb/execute/")]
    with store.read("ssb") as tx:
        [read] = tx.list(Job)
        day = tx.require(JobStats, "2026-11-22")
    assert read.model_dump(exclude={"last_modified"}) == job.model_dump(exclude={"last_modified"})
    assert (day.count, day.duration_ms, day.source_rows, day.by_model) == (1, 2_500, 42, {MODEL: 1})
    with pytest.raises(ValueError, match="priority"):
        Job(job_type=JobType.INDEX_MERGE, priority=7)
