"""Jobs a stopping process pauses and the next process resumes: a server stopped (SIGTERM, Ctrl-C) pauses the
jobs it runs, marking them so that the next start continues them, while a user's own pause stands; jobs found
RUNNING from a process that died (kill -9) are resumed too, by whichever server takes the project's lease next."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from precube.errors import PrecubeError
from precube.metadata import Job, JobAction, JobState, MetadataStore

PAUSED_AT_STOP = "paused_at_stop"  # a job param: the process running it stopped; its next start resumes it


def pause_for_stop(store: MetadataStore, project: str, job_ids: Iterable[str], writer: str) -> list[str]:
    """Pause the running jobs (each stops after its current layout), marked for resumption; the ids paused."""
    paused = []
    for job_id in job_ids:
        try:
            with store.transaction(project, writer) as tx:
                job = tx.get(Job, job_id)
                if job is None or job.state not in JobAction.PAUSE.sources:
                    continue
                job.apply(JobAction.PAUSE)
                job.params[PAUSED_AT_STOP] = "true"
                tx.update(job)
        except PrecubeError:  # it ended (or moved) meanwhile: nothing to pause
            continue
        paused.append(job_id)
    return paused


def take_over(store: MetadataStore, project: str, writer: str, keep: Collection[str] = ()) -> list[Job]:
    """When a server takes a project's job lease (and in its sweep, `jobs.reconcile`): the jobs a dead runner left
    RUNNING (but those in `keep`, run by this process) and those a stopped server paused become READY, to continue
    where they stopped, in one transaction (no reader sees a dead runner's job ERROR on its way back to READY, as
    `queue.recover` then a resume would show it). The jobs resumed."""
    resumed = []
    with store.transaction(project, writer) as tx:
        for job in tx.list(Job):
            paused = job.state is JobState.PAUSED and job.params.get(PAUSED_AT_STOP) == "true"
            if not paused and (job.state is not JobState.RUNNING or job.uuid in keep):
                continue
            if job.state is JobState.RUNNING:  # its runner died (the lease was free): its step starts again
                step = job.current_step
                if step is not None and step.state is JobState.RUNNING:
                    step.state = JobState.READY
                job.move_to(JobState.READY)
            else:
                job.apply(JobAction.RESUME)
            job.params.pop(PAUSED_AT_STOP, None)
            resumed.append(tx.update(job))
    return resumed
