"""Submitting jobs: overlap refusal per model (Kylin's KE-010032206), actions, listing."""

from __future__ import annotations

import pytest

from precube.errors import InvalidInputError
from precube.jobs.errors import JobConflictError
from precube.jobs.submission import MIN_JOB_PREFIX, act, get_job, jobs_of, submit
from precube.metadata import (
    InvalidJobStateError,
    Job,
    JobAction,
    JobState,
    JobType,
    MetadataStore,
    NotFoundError,
    TimeRange,
    new_job_id,
)

DAY = 86_400_000
MODEL, OTHER = "0b3c9a8e-1111-2222-3333-444455556666", "5d1e0000-1111-2222-3333-444455556666"


def _job(model: str, start: int | None, end: int | None, kind: JobType = JobType.INC_BUILD) -> Job:
    rng = None if start is None or end is None else TimeRange.of(start * DAY, end * DAY)
    return Job(uuid=new_job_id(model), job_type=kind, target_model=model, model_alias="sales", time_range=rng)


def test_overlapping_jobs_of_one_model_are_refused(project: MetadataStore) -> None:
    first = submit(project, "ssb", _job(MODEL, 0, 10))
    with pytest.raises(JobConflictError, match=f"job {first.uuid} \\(INC_BUILD, READY\\) already covers"):
        submit(project, "ssb", _job(MODEL, 9, 12, JobType.INDEX_REFRESH))
    submit(project, "ssb", _job(MODEL, 10, 12))  # touching is not overlapping
    submit(project, "ssb", _job(OTHER, 0, 10))  # another model
    with pytest.raises(JobConflictError):
        submit(project, "ssb", _job(MODEL, None, None, JobType.FULL_BUILD))  # no range: all of time
    act(project, "ssb", first.uuid, JobAction.DISCARD)
    submit(project, "ssb", _job(MODEL, 0, 5))  # a discarded job holds nothing
    assert [j.time_range for j in jobs_of(project, "ssb", MODEL)] == [
        TimeRange.of(0, 5 * DAY),
        TimeRange.of(10 * DAY, 12 * DAY),
        TimeRange.of(0, 10 * DAY),
    ]
    assert len(jobs_of(project, "ssb")) == 4


def test_actions_are_persisted_and_checked(project: MetadataStore) -> None:
    job = submit(project, "ssb", _job(MODEL, 0, 1))
    assert act(project, "ssb", job.uuid, JobAction.PAUSE).state is JobState.PAUSED
    with pytest.raises(InvalidJobStateError, match="cannot pause"):
        act(project, "ssb", job.uuid, JobAction.PAUSE)
    assert act(project, "ssb", job.uuid, JobAction.RESUME).state is JobState.READY
    with project.read("ssb") as tx:
        assert tx.require(Job, job.uuid).state is JobState.READY


def test_a_job_is_named_by_a_unique_prefix_of_its_id(project: MetadataStore) -> None:
    first, second = submit(project, "ssb", _job(MODEL, 0, 1)), submit(project, "ssb", _job(OTHER, 0, 1))
    common = next(i for i, (a, b) in enumerate(zip(first.uuid, second.uuid, strict=False)) if a != b)
    if common >= MIN_JOB_PREFIX:  # both ids start alike: that start names neither
        with pytest.raises(InvalidInputError, match=f"is the start of 2 jobs' ids .*{first.uuid}"):
            get_job(project, "ssb", first.uuid[:common])
    prefix = first.uuid[: max(common + 1, MIN_JOB_PREFIX)]
    assert get_job(project, "ssb", prefix).uuid == first.uuid
    assert get_job(project, "ssb", prefix.upper()).uuid == first.uuid
    assert act(project, "ssb", prefix, JobAction.PAUSE).uuid == first.uuid
    with pytest.raises(NotFoundError, match="does not exist"):
        get_job(project, "ssb", first.uuid[: MIN_JOB_PREFIX - 1])  # too short to be meant
    with pytest.raises(NotFoundError, match="does not exist"):
        get_job(project, "ssb", "ffffffff-no-such-job")


def test_several_jobs_are_submitted_all_or_none(project: MetadataStore) -> None:
    """A refresh of a range over several segments (or a rolling refresh) is several jobs: one refused, none
    is left behind — also when two of them overlap each other."""
    from precube.jobs.submission import submit_all

    held = submit(project, "ssb", _job(MODEL, 5, 6))
    with pytest.raises(JobConflictError, match=held.uuid):
        submit_all(project, "ssb", [_job(MODEL, 0, 1), _job(MODEL, 1, 2), _job(MODEL, 5, 6)])
    assert [j.uuid for j in jobs_of(project, "ssb")] == [held.uuid]
    with pytest.raises(JobConflictError, match="already covers"):
        submit_all(project, "ssb", [_job(MODEL, 0, 2), _job(MODEL, 1, 3)])
    assert len(jobs_of(project, "ssb")) == 1
    both = submit_all(project, "ssb", [_job(MODEL, 0, 1), _job(OTHER, 0, 1)])
    assert {j.uuid for j in jobs_of(project, "ssb")} == {held.uuid, *(j.uuid for j in both)}
