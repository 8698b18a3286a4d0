"""The job queue as the scheduler sees it: which READY job runs next, and what a restart finds.

A job found RUNNING when a process takes the project's lease was left by a process that died (one process runs
a project's jobs at a time): it becomes ERROR, keeping its finished steps, and a resume continues it (a server
resumes it at once instead: `shutdown.take_over`).
"""

from __future__ import annotations

from collections.abc import Collection

from precube.metadata import Job, JobState, MetadataStore
from precube.metadata.entity import now_ms

DIED = "the process running this job stopped before it ended; resume it to continue"


def ready_jobs(store: MetadataStore, project: str) -> list[Job]:
    """READY jobs in the order they run: priority (0 first), then the oldest."""
    with store.read(project) as tx:
        ready = [j for j in tx.list(Job) if j.state is JobState.READY]
    return sorted(ready, key=lambda j: (j.priority, j.create_time, j.uuid))


def recover(store: MetadataStore, project: str, writer: str = "precube", keep: Collection[str] = ()) -> list[Job]:
    """At start-up (and in the lease holder's sweep, `jobs.reconcile`): every RUNNING job but those in `keep`
    (run by this process) becomes ERROR (its running step too); returns them."""
    recovered = []
    with store.transaction(project, writer) as tx:
        for job in tx.list(Job):
            if job.state is not JobState.RUNNING or job.uuid in keep:
                continue
            job.move_to(JobState.ERROR)
            job.error = DIED
            step = job.current_step
            if step is not None and step.state is JobState.RUNNING:
                step.state, step.error, step.end_time = JobState.ERROR, DIED, now_ms()
            recovered.append(tx.update(job))
    return recovered
