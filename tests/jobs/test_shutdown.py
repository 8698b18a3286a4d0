"""Jobs a stopping server pauses and the next start resumes; a user's own pause stands; deleting jobs;
the job lease of a deleted project."""

from __future__ import annotations

import pytest

from precube.jobs.lease import Lease
from precube.jobs.queue import recover
from precube.jobs.shutdown import PAUSED_AT_STOP, pause_for_stop, take_over
from precube.jobs.submission import act, delete_jobs, get_job, submit
from precube.metadata import (
    InvalidJobStateError,
    Job,
    JobAction,
    JobLease,
    JobState,
    JobType,
    MetadataStore,
    NotFoundError,
    TimeRange,
    new_job_id,
)

DAY = 86_400_000
MODEL = "0b3c9a8e-1111-2222-3333-444455556666"


def _running(store: MetadataStore, day: int) -> str:
    job = submit(
        store,
        "ssb",
        Job(uuid=new_job_id(MODEL), job_type=JobType.INC_BUILD, target_model=MODEL, model_alias="m",
            time_range=TimeRange.of(day * DAY, (day + 1) * DAY)),
    )  # fmt: skip
    with store.transaction("ssb") as tx:
        found = tx.require(Job, job.uuid)
        found.move_to(JobState.RUNNING)
        tx.update(found)
    return job.uuid


def test_a_stop_pauses_and_the_next_start_resumes_but_a_users_pause_stands(project: MetadataStore) -> None:
    stopped, users, died = _running(project, 0), _running(project, 1), _running(project, 2)
    assert pause_for_stop(project, "ssb", [stopped, "no-such-job"], "server") == [stopped]
    act(project, "ssb", users, JobAction.PAUSE)
    paused = get_job(project, "ssb", stopped)
    assert paused.state is JobState.PAUSED and paused.params[PAUSED_AT_STOP] == "true"
    resumed = take_over(project, "ssb", "server")  # the third one's runner died
    assert sorted(j.uuid for j in resumed) == sorted([stopped, died])
    assert get_job(project, "ssb", stopped).state is JobState.READY
    assert PAUSED_AT_STOP not in get_job(project, "ssb", stopped).params
    assert get_job(project, "ssb", died).state is JobState.READY
    assert get_job(project, "ssb", users).state is JobState.PAUSED


def test_a_users_action_clears_the_stop_mark(project: MetadataStore) -> None:
    job = _running(project, 0)
    pause_for_stop(project, "ssb", [job], "server")
    act(project, "ssb", job, JobAction.RESUME)
    act(project, "ssb", job, JobAction.PAUSE)
    assert take_over(project, "ssb", "server") == []
    assert get_job(project, "ssb", job).state is JobState.PAUSED


def test_without_resume_a_dead_runners_job_is_error_for_a_user_to_resume(project: MetadataStore) -> None:
    died = _running(project, 0)
    [recovered] = recover(project, "ssb")
    assert recovered.uuid == died and get_job(project, "ssb", died).state is JobState.ERROR
    assert take_over(project, "ssb", "server") == []  # an ERROR job is the user's to resume


def test_only_finished_or_discarded_jobs_are_deleted_all_or_none(project: MetadataStore) -> None:
    running, discarded = _running(project, 0), _running(project, 1)
    act(project, "ssb", discarded, JobAction.DISCARD)
    with pytest.raises(InvalidJobStateError, match="discard it first"):
        delete_jobs(project, "ssb", [discarded, running])
    assert get_job(project, "ssb", discarded).state is JobState.DISCARDED  # none went
    assert [j.uuid for j in delete_jobs(project, "ssb", [discarded])] == [discarded]
    with pytest.raises(NotFoundError):
        get_job(project, "ssb", discarded)


def test_no_lease_is_taken_on_a_deleted_project(project: MetadataStore) -> None:
    lease = Lease(project, "ssb")
    project.delete_project("ssb")
    with pytest.raises(NotFoundError):
        lease.acquire()
    assert [d.key for d in project.scan("/ssb/")] == []
    with project.read("ssb") as tx:
        assert tx.get(JobLease, "scheduler") is None


def test_a_job_launched_by_a_process_without_the_lease_is_not_started(project: MetadataStore) -> None:
    """The scheduler's fence refuses the start (the lease went to another process since its last renewal): the
    job stays READY for the holder, nothing of it changed."""
    from precube.engine.context import BuildContext
    from precube.jobs.runner import run_job

    job = submit(
        project,
        "ssb",
        Job(uuid=new_job_id(MODEL), job_type=JobType.INC_BUILD, target_model=MODEL, model_alias="m",
            time_range=TimeRange.of(0, DAY)),
    )  # fmt: skip
    holder, late = Lease(project, "ssb"), Lease(project, "ssb")
    assert holder.acquire()
    ctx = BuildContext(None, project, "ssb", "/nonexistent", fence=late.fence)  # type: ignore[arg-type]
    stopped = run_job(ctx, job.uuid)
    assert stopped.state is JobState.READY and stopped.runner is None and stopped.mvcc == job.mvcc
