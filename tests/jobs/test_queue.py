"""What the scheduler finds: READY jobs by priority then age; RUNNING jobs of a dead process become ERROR."""

from __future__ import annotations

from precube.jobs.queue import DIED, ready_jobs, recover
from precube.jobs.submission import act, submit
from precube.metadata import Job, JobAction, JobState, JobStep, JobType, MetadataStore, Project, TimeRange

DAY = 86_400_000


def _job(n: int, priority: int, created: int) -> Job:
    return Job(
        uuid=f"job-{n}",
        job_type=JobType.INC_BUILD,
        target_model=f"model-{n}",
        time_range=TimeRange.of(0, DAY),
        priority=priority,
        create_time=created,
        steps=[JobStep(name="layers"), JobStep(name="commit")],
    )


def test_ready_jobs_by_priority_then_age_and_recovery(store: MetadataStore) -> None:
    store.create_project(Project(name="ssb", default_database="SSB"))
    for n, priority, created in [(1, 3, 100), (2, 1, 300), (3, 3, 50), (4, 1, 200), (5, 0, 900)]:
        submit(store, "ssb", _job(n, priority, created))
    act(store, "ssb", "job-5", JobAction.PAUSE)
    assert [j.uuid for j in ready_jobs(store, "ssb")] == ["job-4", "job-2", "job-3", "job-1"]

    with store.transaction("ssb") as tx:  # job-4 was running, in its first step, when its process died
        job = tx.require(Job, "job-4")
        job.move_to(JobState.RUNNING)
        job.steps[0].state, job.steps[0].done, job.steps[0].total = JobState.RUNNING, 2, 5
        tx.update(job)
    [recovered] = recover(store, "ssb")
    assert recovered.uuid == "job-4" and recovered.state is JobState.ERROR and recovered.error == DIED
    assert recovered.steps[0].state is JobState.ERROR and recovered.steps[0].done == 2
    assert recover(store, "ssb") == []
    assert act(store, "ssb", "job-4", JobAction.RESUME).current_step is not None
    assert [j.uuid for j in ready_jobs(store, "ssb")] == ["job-4", "job-2", "job-3", "job-1"]
