"""No job left behind: a RUNNING job always has a live run behind it.

Two ways a job could stay RUNNING with nobody running it, and what ends each:
- its run ended but could not write its outcome (the metadata store full or unreachable): the run raises
  `OutcomeNotRecordedError` carrying the write, and the scheduler keeps it (`Reconciler.keep`) and tries it
  again with backoff until the store takes it — the job then shows the outcome it really had (ERROR with its
  error, resumable; or SUCCEED);
- its run is gone without a word (its process died, or its thread ended on a bug): whoever holds the project's
  job lease settles it by the crash rule of `queue.recover` (ERROR, resumable) or `shutdown.take_over` (READY
  again, a server's) — when it takes the lease (the previous holder is dead or stopped renewing, `jobs.lease`)
  and, while it holds it, in a periodic sweep (`Reconciler.sweep`) of the RUNNING jobs that none of its own
  runs (nor kept outcomes) stands for. Only the lease holder starts runs (their start is fenced), so a RUNNING
  job the holder does not run has no live run anywhere.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from precube.jobs.errors import JobError
from precube.metadata import Job, JobState, MetadataStore, StoreUnavailableError, VersionConflictError

LOG = logging.getLogger("precube.jobs.reconcile")
SWEEP_S = 5.0  # how often the lease holder looks for RUNNING jobs none of its runs stands for
RETRY_FIRST_S = 0.5  # an outcome not recorded is tried again after this, doubling up to RETRY_MAX_S
RETRY_MAX_S = 15.0
# What a store that refuses a write for now raises (full, unreachable, a conflicting writer): try it again later
REFUSED = (StoreUnavailableError, VersionConflictError, OSError)

Record = Callable[[], Job]  # writes a run's outcome to its job; returns the job as stored
# Settles the RUNNING jobs of a project, but those in `keep`: `queue.recover` or `shutdown.take_over`
Settle = Callable[[MetadataStore, str, str, Collection[str]], list[Job]]


class OutcomeNotRecordedError(JobError):
    """A run ended, but writing its outcome to the job failed: `record` writes it once the store takes it."""

    code = "JOB_OUTCOME_NOT_RECORDED"

    def __init__(self, job_id: str, record: Record, cause: BaseException) -> None:
        super().__init__(f"job {job_id}: its outcome could not be recorded: {type(cause).__name__}: {cause}")
        self.job_id, self.record = job_id, record


def recorded(job_id: str, record: Record) -> Job:
    """`record()`, or OutcomeNotRecordedError (keeping `record`) when the store refuses the write for now (full,
    unreachable, a conflicting writer); any other failure is a bug and propagates."""
    try:
        return record()
    except REFUSED as err:
        raise OutcomeNotRecordedError(job_id, record, err) from err


@dataclass
class _Kept:
    record: Record
    wait_s: float
    due: float


class Reconciler:
    """One project's outcomes waiting to be recorded, and its sweep for RUNNING jobs without a run."""

    def __init__(self, store: MetadataStore, project: str, writer: str, settle: Settle) -> None:
        self.store, self.project, self.writer, self.settle = store, project, writer, settle
        self._kept: dict[str, _Kept] = {}
        self._swept = time.monotonic()  # taking the lease settled the project: the first sweep can wait

    @property
    def kept(self) -> list[str]:
        """The jobs whose outcome is known here but not recorded yet."""
        return list(self._kept)

    def keep(self, err: OutcomeNotRecordedError) -> None:
        LOG.error("%s; trying again", err.message)
        self._kept[err.job_id] = _Kept(err.record, RETRY_FIRST_S, time.monotonic() + RETRY_FIRST_S)

    def retry(self) -> list[Job]:
        """Record the kept outcomes now due; the jobs recorded."""
        done = []
        for job_id, kept in list(self._kept.items()):
            if time.monotonic() < kept.due:
                continue
            try:
                job = kept.record()
            except REFUSED:  # still: later, less often
                self._again(kept)
                continue
            except Exception as err:  # noqa: BLE001 (e.g. the project was deleted: drop it, the sweep settles it)
                LOG.warning("job %s: its outcome cannot be recorded, dropped: %s", job_id, err)
                del self._kept[job_id]
                self.force_sweep()
                continue
            del self._kept[job_id]
            LOG.info("job %s: its outcome is recorded now: %s", job_id, job.state.value)
            done.append(job)
        return done

    def _again(self, kept: _Kept) -> None:
        kept.wait_s = min(kept.wait_s * 2, RETRY_MAX_S)
        kept.due = time.monotonic() + kept.wait_s

    def settle_now(self, live: Collection[str]) -> list[Job]:
        """Settle every RUNNING job neither `live` (a run of this process) nor kept; the jobs settled."""
        self._swept = time.monotonic()
        return self.settle(self.store, self.project, self.writer, {*live, *self._kept})

    def sweep(self, live: Collection[str]) -> list[Job]:
        """`settle_now`, at most every SWEEP_S, and only when some RUNNING job has no run here (a cheap read
        first: the sweep's transaction is a write)."""
        if time.monotonic() - self._swept < SWEEP_S:
            return []
        self._swept = time.monotonic()
        with self.store.read(self.project) as tx:
            orphans = [
                j.uuid
                for j in tx.list(Job)
                if j.state is JobState.RUNNING and j.uuid not in live and j.uuid not in self._kept
            ]
        if not orphans:
            return []
        settled = self.settle_now(live)
        for job in settled:
            LOG.warning("job %s was RUNNING with no run behind it: now %s", job.uuid, job.state.value)
        return settled

    def force_sweep(self) -> None:
        """Sweep at the next turn (a run ended without a word)."""
        self._swept = 0.0
