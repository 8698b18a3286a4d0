"""The job service of a server process: one `Scheduler` per project (each under the project's job lease),
all on one warm Spark session, driven by one background thread that also finds projects created later.

Spark starts in the background when the server starts, so the first build does not pay the JVM start
and the server answers queries meanwhile; if it cannot start, the jobs run and fail at once with the
reason (one line, resumable once Spark is fixed) and the server keeps serving. The session is supervised
(`jobs.spark_supervisor`): one that dies (its JVM killed, out of memory, wedged) is replaced by a new one within
seconds, and the jobs it took down resume on it by themselves (`jobs.engine_loss`); `/ready` tells its state.

A scheduler taking a project's lease (at start-up, or from a server that died) makes READY, in one
transaction, the jobs a dead runner left RUNNING and those a stopped server paused (`jobs.shutdown.take_over`).
`stop()` (the server's SIGTERM / Ctrl-C) pauses the running jobs, which stop after their current layout,
waits for them a bounded time, stops Spark (cancelling what still runs: those jobs stay PAUSED), and
gives the leases back.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from precube.engine.context import BuildContext
from precube.errors import PrecubeError
from precube.jobs.joblog import detach, log_to_file
from precube.jobs.scheduler import Scheduler
from precube.jobs.shutdown import pause_for_stop
from precube.jobs.spark_supervisor import SparkSupervisor
from precube.metadata import Job

if TYPE_CHECKING:
    from precube.server.state import ServerState

LOG = logging.getLogger("precube.server.jobs")
WRITER = "server"
POLL_S = 0.5  # how often queued jobs are looked for
DISCOVER_S = 2.0  # how often new (and deleted) projects are looked for
JOB_LOG = "jobs-server.log"  # under HOME/logs, beside the background runners' jobs-PROJECT.log
PAUSE_WAIT_S = 20.0  # at stop: how long running jobs get to reach the end of their current layout


class JobService:
    """Runs every project's queued jobs in this process; `start(state)` … `stop()`."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.schedulers: dict[str, Scheduler] = {}
        settings = state.settings
        self.spark = SparkSupervisor(settings, console_log=settings.home / "logs" / "spark.log")
        self._log: logging.Handler | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="precube-job-service", daemon=True)

    @classmethod
    def start(cls, state: ServerState) -> JobService:
        service = cls(state)
        service._log = log_to_file(state.settings.home / "logs" / JOB_LOG)
        service._thread.start()
        return service

    # -- the service thread ------------------------------------------------------------------------

    def _serve(self) -> None:
        self.spark.start()  # here, not in start(): the server answers queries while the JVM starts
        discovered = 0.0
        while not self._stop.is_set():
            if time.monotonic() - discovered > DISCOVER_S:
                self._discover()
                discovered = time.monotonic()
            for project, scheduler in list(self.schedulers.items()):
                if self._stop.is_set():
                    break
                self._tick(project, scheduler)
            self._stop.wait(POLL_S)

    def _discover(self) -> None:
        try:
            names = {p.name for p in self.state.store.list_projects()}
        except Exception as err:  # noqa: BLE001 (the store is unreachable for now: try again later)
            LOG.warning("cannot list projects: %s", err)
            return
        for gone in set(self.schedulers) - names:
            self._retire(gone, self.schedulers.pop(gone))
        jobs = self.state.settings.jobs
        for name in sorted(names - set(self.schedulers)):
            ctx = BuildContext(self.spark.session, self.state.store, name, self.state.settings.warehouse_root, WRITER)
            self.schedulers[name] = Scheduler(
                ctx,
                jobs.concurrency,
                POLL_S,
                jobs.lease_ttl_s,
                self._ended,
                resume=True,
                spark=self.spark,
                min_free_bytes=jobs.min_free_bytes,
            )

    def _tick(self, project: str, scheduler: Scheduler) -> None:
        try:
            held = scheduler.lease.held
            scheduler.tick()
            if scheduler.lease.held and not held and scheduler.recovered:  # just taken, with jobs to continue
                LOG.info("project %s: resumed jobs %s", project, ", ".join(j.uuid for j in scheduler.recovered))
        except PrecubeError as err:  # a lease lost, a conflict, a project deleted meanwhile: next turn again
            LOG.warning("job scheduler of project %s: %s", project, err)
        except Exception:  # a store hiccup must not end the service: the next turn tries again
            LOG.exception("job scheduler of project %s failed a turn", project)

    def _ended(self, job: Job, aftermath: object) -> None:
        LOG.info("job %s (%s on %s) ended %s", job.uuid, job.job_type, job.model_alias, job.state)

    def _retire(self, project: str, scheduler: Scheduler) -> None:
        try:
            scheduler.stop()
        except PrecubeError as err:
            LOG.warning("stopping the job scheduler of project %s: %s", project, err)

    # -- what the routes ask ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Spark's state (`UP`, `DOWN`, `STARTING`; why a start failed; its restarts and why the last session
        was lost), and the projects whose jobs this server runs."""
        return {**self.spark.status(), "projects": sorted(p for p, s in self.schedulers.items() if s.lease.held)}

    # -- stop ------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Pause the running jobs (resumable; the next start resumes them), wait a bounded time for them to
        stop between two layouts, stop Spark, give the leases back."""
        self._stop.set()
        self._thread.join(timeout=60)
        for project, scheduler in self.schedulers.items():
            running = [j.uuid for j in scheduler.running]
            paused = pause_for_stop(self.state.store, project, running, WRITER)
            if paused:
                LOG.info("project %s: paused jobs %s (resumed at the next start)", project, ", ".join(paused))
        deadline = time.monotonic() + PAUSE_WAIT_S
        while any(s.busy for s in self.schedulers.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.spark.stop()  # cancels a layout still building: its job stays PAUSED
        for project, scheduler in self.schedulers.items():
            self._retire(project, scheduler)
        self.schedulers.clear()
        if self._log is not None:
            detach(self._log)
