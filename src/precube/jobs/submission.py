"""Submitting jobs and acting on them (pause, resume, discard, restart), each in one metadata
transaction, so two processes cannot both submit overlapping jobs of one model."""

from __future__ import annotations

from collections.abc import Sequence

from precube.errors import InvalidInputError
from precube.jobs.errors import JobConflictError
from precube.jobs.segment_removal import drop_job_segment
from precube.jobs.shutdown import PAUSED_AT_STOP
from precube.metadata import InvalidJobStateError, Job, JobAction, MetadataStore, NotFoundError, TimeRange, Transaction


def _span(job: Job) -> TimeRange:
    """The time a job writes; a job without a range (a full build) covers all of it."""
    return job.time_range or TimeRange.full()


def busy_jobs(tx: Transaction, model_uuid: str) -> list[Job]:
    """The model's unfinished jobs (READY, RUNNING, PAUSED, ERROR)."""
    return [j for j in tx.list(Job) if j.target_model == model_uuid and not j.state.is_final]


def submit(store: MetadataStore, project: str, job: Job, writer: str = "precube") -> Job:
    """Record a READY job, refusing one whose range overlaps that of an unfinished job (READY, RUNNING,
    PAUSED or ERROR: an ERROR job still holds its new segment) of the same model."""
    return submit_all(store, project, [job], writer)[0]


def submit_all(store: MetadataStore, project: str, jobs: Sequence[Job], writer: str = "precube") -> list[Job]:
    """Record several jobs in one transaction: all of them, or — one refused (`submit`'s rule, also between
    the jobs themselves) — none."""
    with store.transaction(project, writer) as tx:
        created: list[Job] = []
        for job in jobs:
            for other in [*busy_jobs(tx, job.target_model), *created] if job.target_model is not None else []:
                if other.target_model == job.target_model and _span(other).overlaps(_span(job)):
                    raise JobConflictError(
                        f"cannot submit {job.job_type} on model {job.model_alias or job.target_model}: "
                        f"job {other.uuid} ({other.job_type}, {other.state}) already covers part of its range; "
                        "wait for it, or discard it"
                    )
            created.append(tx.create(job))
        return created


MIN_JOB_PREFIX = 4  # as git takes a commit's id: shorter prefixes match too much to be meant


def _require(tx: Transaction, job_id: str) -> Job:
    """The job `job_id` names: its id, or a unique prefix of it of at least MIN_JOB_PREFIX characters."""
    job = tx.get(Job, job_id)  # a name that is no valid id is refused here
    if job is not None:
        return job
    wanted = job_id.strip().lower()
    found = [j for j in tx.list(Job) if j.uuid.lower().startswith(wanted)] if len(wanted) >= MIN_JOB_PREFIX else []
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        shown = ", ".join(sorted(j.uuid for j in found)[:5])
        raise InvalidInputError(f"job id {job_id!r} is the start of {len(found)} jobs' ids ({shown}): give more of it")
    raise NotFoundError(f"job {job_id!r} does not exist in project {tx.project_name!r}")


def get_job(store: MetadataStore, project: str, job_id: str) -> Job:
    with store.read(project) as tx:
        return _require(tx, job_id)


def act(store: MetadataStore, project: str, job_id: str, action: JobAction, writer: str = "precube") -> Job:
    """Apply a user's action to a job (`Job.apply` refuses one its state does not allow). A discard or a
    restart also drops the NEW segment the job was writing: the restart builds it from scratch."""
    with store.transaction(project, writer) as tx:
        job = _require(tx, job_id)
        job.apply(action)
        job.params.pop(PAUSED_AT_STOP, None)  # a user's action: the state they chose stands at the next start
        if action in (JobAction.DISCARD, JobAction.RESTART):
            drop_job_segment(tx, job)
        return tx.update(job)


def delete_jobs(store: MetadataStore, project: str, job_ids: Sequence[str], writer: str = "precube") -> list[Job]:
    """Delete finished or discarded jobs' records, all of them or (one missing or unfinished) none."""
    with store.transaction(project, writer) as tx:
        doomed = [_require(tx, job_id) for job_id in job_ids]
        for job in doomed:
            if not job.state.is_final:
                raise InvalidJobStateError(f"cannot delete job {job.uuid}: it is {job.state}; discard it first")
        for job in doomed:
            tx.delete(job)
        return doomed


def jobs_of(store: MetadataStore, project: str, model_uuid: str | None = None) -> list[Job]:
    """A project's jobs (of one model), newest first."""
    with store.read(project) as tx:
        jobs = tx.list(Job)
    chosen = [j for j in jobs if model_uuid is None or j.target_model == model_uuid]
    return sorted(chosen, key=lambda j: j.create_time, reverse=True)
