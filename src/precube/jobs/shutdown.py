"""Jobs a stopping process pauses and the next process resumes: a server stopped (SIGTERM, Ctrl-C) pauses the
jobs it runs, marking them so that the next start continues them, while a user's own pause stands; jobs found
RUNNING from a process that died (kill -9) are resumed too."""

from __future__ import annotations

from collections.abc import Iterable

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


def resume_after_start(store: MetadataStore, project: str, recovered: Iterable[Job], writer: str) -> list[str]:
    """Make READY the jobs a stopped process paused and those a dead one left RUNNING (`recovered`, now
    ERROR): they continue where they stopped. The ids resumed."""
    dead = {j.uuid for j in recovered}
    resumed = []
    with store.transaction(project, writer) as tx:
        for job in tx.list(Job):
            ours = job.state is JobState.PAUSED and job.params.get(PAUSED_AT_STOP) == "true"
            if not ours and not (job.uuid in dead and job.state is JobState.ERROR):
                continue
            job.apply(JobAction.RESUME)
            job.params.pop(PAUSED_AT_STOP, None)
            tx.update(job)
            resumed.append(job.uuid)
    return resumed
