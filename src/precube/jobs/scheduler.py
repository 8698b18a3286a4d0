"""The in-process scheduler (seed 002 "Task & Job"): a bounded pool of threads runs a project's READY
jobs on the process's one Spark session, by priority then age, while this process holds the project's
job lease, which a heartbeat thread renews (`Lease.keep_alive`). On taking the lease it turns the jobs a dead
process left RUNNING into ERROR (resumable), and keeps none RUNNING without a run (`jobs.reconcile`): outcomes
the store refused are recorded again once it takes them, and a periodic sweep settles RUNNING jobs no run of
this process stands for. Before a build starts, free disk space is checked (`jobs.disk`). After each
successful job it applies retention and submits the auto-merge job (`lifecycle.after_success`), which
it then runs like any other.

Jobs of one model run one at a time: they append to the model's global dictionaries and replace its
segments, so they are serialised; jobs of different models run side by side, up to `concurrency`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from precube.engine.code_tables import CodeTables
from precube.engine.context import BuildContext
from precube.engine.kept_lookups import KeptLookups
from precube.errors import PrecubeError
from precube.jobs.disk import MIN_FREE_BYTES, ensure_space
from precube.jobs.lease import TTL_S, Lease
from precube.jobs.lifecycle import Aftermath, after_success
from precube.jobs.queue import ready_jobs, recover
from precube.jobs.reconcile import OutcomeNotRecordedError, Reconciler
from precube.jobs.runner import run_job
from precube.jobs.shutdown import take_over
from precube.metadata import Job, JobState

LOG = logging.getLogger("precube.jobs.scheduler")

if TYPE_CHECKING:
    from precube.jobs.spark_supervisor import SparkSupervisor

Listener = Callable[[Job, Aftermath | None], None]  # told of every job that ended here (and its aftermath)


def _quiet(job: Job, aftermath: Aftermath | None) -> None:
    """The default listener: the job documents say it all."""


class Scheduler:
    """Runs `ctx.project`'s jobs in this process: `run_until` in the caller's thread, or `start`/`stop`
    in a background thread (a long-lived service)."""

    def __init__(
        self,
        ctx: BuildContext,
        concurrency: int = 1,
        poll_s: float = 0.5,
        lease_ttl_s: float = TTL_S,
        listener: Listener = _quiet,
        resume: bool = False,
        spark: SparkSupervisor | None = None,
        min_free_bytes: int = MIN_FREE_BYTES,
    ) -> None:
        """`resume` (a server): on taking the lease, the jobs a dead runner left RUNNING and a stopped server
        paused are made READY at once (`shutdown.take_over`); otherwise a dead runner's become ERROR, for a
        user to resume (`queue.recover`). `spark`: the supervisor of the session jobs run on (`ctx.spark` is
        then its current session): jobs start only while it accepts them, each on its latest session.
        `min_free_bytes`: the least free space a build starts with (`disk.ensure_space`)."""
        if concurrency < 1:
            raise ValueError(f"the scheduler needs at least one worker, not {concurrency}")
        self.ctx, self.concurrency, self.poll_s, self.listener = ctx, concurrency, poll_s, listener
        self.spark = spark
        self._ticket: int | None = 0  # the generation of the supervisor's session `ctx` holds (0: none bound yet)
        self.lease = Lease(ctx.store, ctx.project, lease_ttl_s, ctx.writer)
        self._fenced = dataclasses.replace(ctx, fence=self.lease.fence)  # jobs start and write only under the lease
        self._preflight = functools.partial(ensure_space, min_free_bytes=min_free_bytes)
        self.reconciler = Reconciler(ctx.store, ctx.project, ctx.writer, take_over if resume else recover)
        self.recovered: list[Job] = []  # jobs a dead (or stopped) process left, found when the lease was taken
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="precube-job")
        self._running: dict[Future[Job], Job] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- one turn of the loop -------------------------------------------------------------------

    def _hold_lease(self) -> bool:
        """Whether this process may launch jobs: it holds the lease, renewed within its TTL (the heartbeat
        renews it; a lease it failed to renew for a TTL may be another's already)."""
        if not self.lease.held:
            if not self.lease.acquire():
                return False
            self.lease.keep_alive()
            self.recovered = self.reconciler.settle_now(self._live())
        return self.lease.fresh

    def _live(self) -> set[str]:
        """The jobs a run of this process still stands for."""
        return {job.uuid for future, job in self._running.items() if not future.done()}

    def _reap(self) -> None:
        """Take in the runs that ended, and record the outcomes the store refused before, once it takes them."""
        for future in [f for f in self._running if f.done()]:
            job = self._running.pop(future)
            error = future.exception()
            if isinstance(error, OutcomeNotRecordedError):  # RUNNING in the store until the write is retried
                self.reconciler.keep(error)
                continue
            if error is not None:  # a bug of the run: its job may be left RUNNING, the sweep settles it
                LOG.error("job %s: its run failed", job.uuid, exc_info=error)
                self.reconciler.force_sweep()
                continue
            ended = future.result()
            self._ended(ended)
        for ended in self.reconciler.retry():
            self._ended(ended)

    def _ended(self, ended: Job) -> None:
        if ended.state is JobState.READY:  # put back after its Spark session died: it runs again, not ended
            return
        aftermath = None
        if ended.state is JobState.SUCCEED:
            try:
                aftermath = after_success(self.ctx.store, self.ctx.project, ended, self.ctx.writer)
            except PrecubeError as err:  # e.g. a metadata conflict: the next successful job tries again
                aftermath = Aftermath(skipped=f"retention and auto-merge after job {ended.uuid} failed: {err}")
        self.listener(ended, aftermath)

    def _bind(self) -> bool:
        """Whether jobs may start now; after the supervisor started a new session, they run on it, with the
        Spark data kept across builds (code tables, lookups) forgotten: it lived in the old JVM. The session and
        its ticket are read together, and each run is given the ticket of the session it runs on: read apart, a
        restart between the reads would pair a new ticket with the old session (or the stand-in), and a job
        failing on it would be taken for failing by itself (ERROR, not resumed)."""
        spark = self.spark
        if spark is None:
            return True
        current = spark.current()
        if current is None:
            return False
        ticket, session = current
        if ticket is None or ticket != self._ticket:  # None: Spark could not start; the stand-in tells why now
            self._ticket = ticket
            self.ctx = dataclasses.replace(self.ctx, spark=session, code_tables=CodeTables(), lookups=KeptLookups())
            self._fenced = dataclasses.replace(self.ctx, fence=self.lease.fence)
        return True

    def _launch(self) -> None:
        if not self._bind():
            return
        busy_models = {j.target_model for j in self._running.values()}
        for job in ready_jobs(self.ctx.store, self.ctx.project):
            if len(self._running) >= self.concurrency:
                return
            if job.target_model in busy_models:  # a running job's own model is busy too
                continue
            busy_models.add(job.target_model)
            run = self._pool.submit(run_job, self._fenced, job.uuid, self.spark, self._preflight, self._ticket)
            self._running[run] = job

    def tick(self) -> bool:
        """One turn: keep the lease, take in finished jobs (recording the outcomes the store refused before),
        settle RUNNING jobs no run stands for, start ready ones. True if jobs are running."""
        if not self._hold_lease():
            return False
        self._reap()
        self.reconciler.sweep(self._live())
        self._launch()
        return bool(self._running)

    @property
    def running(self) -> list[Job]:
        """The jobs this process runs now (as they were when started)."""
        return list(self._running.values())

    @property
    def busy(self) -> bool:
        """Whether a job started here has not ended yet."""
        return any(not future.done() for future in self._running)

    # -- loops ----------------------------------------------------------------------------------

    def run_until(self, done: Callable[[], bool], timeout_s: float | None = None) -> bool:
        """Run jobs in this thread until `done()` holds after a turn (True), or `timeout_s` passes (False)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            self.tick()
            if done():
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self.wait()

    def wait(self) -> None:
        """Until a running job ends, at most one poll interval."""
        if self._running:
            wait(list(self._running), timeout=self.poll_s, return_when=FIRST_COMPLETED)
        else:
            time.sleep(self.poll_s)

    def run_until_idle(self, timeout_s: float | None = None) -> bool:
        """Run until no job is running here and none is READY (the auto-merge chain included), or at once
        when another process holds the project's lease (it runs them)."""
        return self.run_until(
            lambda: not self._running and (not self.lease.held or not ready_jobs(self.ctx.store, self.ctx.project)),
            timeout_s,
        )

    def start(self) -> None:
        """Run in a background thread until `stop`."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, name="precube-scheduler", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.poll_s)

    def stop(self) -> None:
        """Stop taking jobs, wait for the running ones to end, give the lease back."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        wait(list(self._running))
        self._reap()
        self._pool.shutdown(wait=True)
        self.lease.release()
