"""The Spark supervisor on stand-in sessions (no JVM): a JVM that exits, a wedged one and a stopped context are
each found and replaced (DOWN → STARTING → UP); a job's failure is told apart from the session's death; a start
that fails leaves Spark DOWN with the reason and is tried again. The runner then puts a job the session took down
back to READY, resumes it with a note, and leaves it in ERROR after `[jobs] engine_resumes` such resumes.

The end-to-end case (kill -9 of a real server's Spark JVM during a build) is `tests/server/test_spark_supervision.py`."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JError, Py4JNetworkError

from precube.engine.context import BuildContext
from precube.errors import EnvironmentMissingError
from precube.jobs import joblog, runner, spark_supervisor
from precube.jobs.engine_loss import ENGINE_NOTE, ENGINE_RESUMES, OUT_OF_MEMORY, RESUMED, engine_failure, put_back
from precube.jobs.runner import new_job, run_job
from precube.jobs.scheduler import Scheduler
from precube.jobs.spark_supervisor import SparkState, SparkSupervisor
from precube.jobs.submission import submit
from precube.metadata import Job, JobState, JobType, MetadataStore, TimeRange
from precube.modeling.model_store import require_model
from precube.settings import Settings, load_settings


class FakeJvm:
    """A stand-in session whose JVM can exit, hang or stop its context."""

    def __init__(self) -> None:
        self.returncode: int | None = None
        self.context_stopped = False
        self.released = threading.Event()
        self.released.set()  # set: the JVM answers; cleared: every call hangs until it is killed
        self.sparkContext = self
        self._gateway = self
        self.proc = self
        self._jsc = self
        self.stopped = False

    # the process
    def poll(self) -> int | None:
        return self.returncode

    # the JVM's SparkContext, through py4j
    def sc(self) -> FakeJvm:
        return self

    def isStopped(self) -> bool:  # noqa: N802 (Spark's name)
        self.released.wait()
        if self.returncode is not None:
            raise Py4JNetworkError("Answer from Java side is empty")
        return self.context_stopped

    def kill(self) -> None:
        self.returncode = -9
        self.released.set()

    def stop(self) -> None:
        self.stopped = True


class Sessions:
    """The supervisor's `make` and `reset`: hands out FakeJvms, kills the current one on reset; `gate` (cleared)
    holds the next start so that STARTING can be seen."""

    def __init__(self) -> None:
        self.made: list[FakeJvm] = []
        self.resets = 0
        self.gate = threading.Event()
        self.gate.set()
        self.fail: Exception | None = None

    def make(self) -> Any:
        self.gate.wait(10)
        if self.fail is not None:
            raise self.fail
        self.made.append(FakeJvm())
        return self.made[-1]

    def reset(self) -> None:
        self.resets += 1
        self.made[-1].kill()


def _settings(tmp_path: Path, interval: float = 0.05, resumes: int = 3) -> Settings:
    return load_settings(
        home=tmp_path, spark={"probe_interval_s": interval, "probe_timeout_s": 0.5}, jobs={"engine_resumes": resumes}
    )


@pytest.fixture
def sessions() -> Sessions:
    return Sessions()


@pytest.fixture
def supervised(tmp_path: Path, sessions: Sessions) -> Iterator[SparkSupervisor]:
    supervisor = SparkSupervisor(_settings(tmp_path), make=sessions.make, reset=sessions.reset).start()
    try:
        yield supervisor
    finally:
        supervisor.stop()


def _until(check: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        time.sleep(0.01)


def test_a_jvm_that_exits_is_replaced_and_jobs_wait_while_it_starts(
    supervised: SparkSupervisor, sessions: Sessions
) -> None:
    assert (supervised.state, supervised.generation, supervised.ticket()) == (SparkState.UP, 1, 1)
    assert supervised.session is sessions.made[0] and supervised.accepting
    sessions.gate.clear()  # the new session's start waits
    sessions.made[0].returncode = 137
    _until(lambda: supervised.state is SparkState.STARTING, "STARTING")
    assert not supervised.accepting and supervised.ticket() is None  # jobs wait for the new session
    assert sessions.resets == 1
    sessions.gate.set()
    _until(lambda: supervised.state is SparkState.UP, "UP again")
    assert supervised.session is sessions.made[1] and supervised.generation == 2
    status = supervised.status()
    assert status["spark"] == "UP" and status["spark_restarts"] == 1 and status["spark_error"] is None
    assert status["spark_last_loss"].startswith("its JVM exited (code 137)")


def test_a_wedged_jvm_is_killed_and_replaced(supervised: SparkSupervisor, sessions: Sessions) -> None:
    hung = sessions.made[0]
    hung.released.clear()  # the probe gets no answer
    _until(lambda: supervised.generation == 2 and supervised.state is SparkState.UP, "replaced", timeout=5)
    assert hung.returncode == -9  # killed by the reset, which also frees the call that hung
    assert "did not answer for 0.5 s" in str(supervised.last_loss)


def test_a_stopped_context_is_replaced(supervised: SparkSupervisor, sessions: Sessions) -> None:
    sessions.made[0].context_stopped = True
    _until(lambda: supervised.generation == 2 and supervised.state is SparkState.UP, "replaced")
    assert str(supervised.last_loss).startswith("its SparkContext stopped")


def test_a_jobs_failure_is_told_from_the_sessions_death(tmp_path: Path, sessions: Sessions) -> None:
    supervisor = SparkSupervisor(_settings(tmp_path, interval=60), make=sessions.make, reset=sessions.reset).start()
    try:
        ticket = supervisor.ticket()
        assert supervisor.lost(ValueError("column X is not a number"), ticket) is None  # the job's own
        assert supervisor.state is SparkState.UP and sessions.resets == 0
        sessions.made[0].returncode = 1  # died; the monitor would see it only in a minute
        assert supervisor.lost(ConnectionRefusedError(111, "Connection refused"), ticket) == "its JVM stopped answering"
        assert sessions.resets == 1  # given up at once: no job is launched on it again meanwhile
        _until(lambda: supervisor.state is SparkState.UP, "restarted by the monitor, woken")
        # a job of the old session fails for any reason once it is gone: the engine's death
        assert supervisor.lost(ValueError("whatever"), ticket) == "the build engine was restarted while it ran"
        # out of memory on a JVM that still answers: it is replaced all the same
        oom = Py4JError("An error occurred while calling o9.count: java.lang.OutOfMemoryError: Java heap space")
        assert supervisor.lost(oom, supervisor.ticket()) == OUT_OF_MEMORY
        assert sessions.resets == 2
        _until(lambda: supervisor.generation == 3 and supervisor.state is SparkState.UP, "replaced after OOM")
        assert supervisor.lost(ConnectionRefusedError(), None) is None  # it ran without a session: its own
    finally:
        supervisor.stop()
    assert sessions.made[-1].stopped  # its own session is stopped at the end


def test_a_failed_start_leaves_spark_down_with_the_reason_and_is_tried_again(
    tmp_path: Path, sessions: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spark_supervisor, "RETRY_START_S", (0.2, 0.2))
    sessions.fail = EnvironmentMissingError("Java 17+ is required by Spark and was not found")
    supervisor = SparkSupervisor(_settings(tmp_path), make=sessions.make, reset=sessions.reset).start()
    try:
        assert supervisor.state is SparkState.DOWN and supervisor.accepting  # jobs run, and fail with the reason
        assert supervisor.error == "EnvironmentMissingError: Java 17+ is required by Spark and was not found"
        assert supervisor.ticket() is None
        with pytest.raises(EnvironmentMissingError, match="Spark could not start in the server: .*Java 17"):
            supervisor.session.read  # noqa: B018 (touching it is the failure)
        sessions.fail = None
        _until(lambda: supervisor.state is SparkState.UP, "UP once Spark can start")
        assert supervisor.error is None and supervisor.restarts == 0 and supervisor.generation == 1
    finally:
        supervisor.stop()


def test_engine_failures_are_read_through_the_chain_of_causes() -> None:
    def chained(inner: BaseException) -> BaseException:
        try:
            try:
                raise inner
            except BaseException as err:
                raise RuntimeError("the build failed") from err
        except RuntimeError as outer:
            return outer

    assert engine_failure(chained(ConnectionRefusedError(111, "Connection refused"))) == "its JVM stopped answering"
    assert engine_failure(Py4JNetworkError("Error while sending")) == "its JVM stopped answering"
    assert engine_failure(Py4JError("An error occurred while calling o1.count: Answer from Java side is empty"))
    shut = Py4JError("org.apache.spark.SparkException: Job 3 cancelled because SparkContext was shut down")
    assert engine_failure(shut) == "its SparkContext was shut down"
    assert engine_failure(ValueError("cannot cast 'x' to INT")) is None
    assert engine_failure(Py4JError("[UNRESOLVED_COLUMN] A column `X` cannot be resolved")) is None


def test_put_back_is_bounded() -> None:
    job = Job(uuid="j1", job_type=JobType.INC_BUILD, state=JobState.RUNNING)
    for count in (1, 2):
        assert put_back(job, "its JVM stopped answering", 2)
        assert job.state is JobState.READY and job.params[ENGINE_RESUMES] == str(count)
        job.move_to(JobState.RUNNING)
    assert not put_back(job, "its JVM stopped answering", 2)
    assert job.state is JobState.ERROR and ENGINE_RESUMES not in job.params
    assert job.error is not None and job.error.startswith("the build engine stopped 3 times while this job ran")
    assert "Error" not in job.error  # no exception's name


def test_the_scheduler_binds_a_session_with_its_ticket_and_the_stand_in_after_a_failed_restart(
    job_ctx: BuildContext, tmp_path: Path, sessions: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs run on the session whose ticket they carry; a lost session whose replacement cannot start is not kept
    (its jobs would fail with the dead JVM's raw error): they get the stand-in, failing with the reason."""
    monkeypatch.setattr(spark_supervisor, "RETRY_START_S", (60.0, 60.0))
    supervisor = SparkSupervisor(_settings(tmp_path, interval=60), make=sessions.make, reset=sessions.reset).start()
    scheduler = Scheduler(job_ctx, spark=supervisor)
    try:
        assert scheduler._bind() and scheduler.ctx.spark is sessions.made[0] and scheduler._ticket == 1
        sessions.fail = EnvironmentMissingError("Java 17+ is required by Spark and was not found")
        sessions.made[0].returncode = 137
        assert supervisor.lost(ConnectionRefusedError(), 1) == "its JVM stopped answering"  # given up: restarting
        _until(lambda: supervisor.error is not None, "the failed start")
        assert scheduler._bind() and scheduler._ticket is None
        with pytest.raises(EnvironmentMissingError, match="Spark could not start in the server: .*Java 17"):
            scheduler._fenced.spark.read  # noqa: B018 (touching it is the failure)
        sessions.fail = None
        supervisor._retry_at = 0.0
        supervisor._wake.set()
        _until(lambda: supervisor.state is SparkState.UP, "UP again")
        assert scheduler._bind() and scheduler._fenced.spark is sessions.made[1] and scheduler._ticket == 2
    finally:
        supervisor.stop()


# -- the runner, on a stand-in session ------------------------------------------------------------------


@pytest.fixture
def job_ctx(build_store: MetadataStore, tmp_path: Path) -> BuildContext:
    return BuildContext(object(), build_store, "ssb", str(tmp_path / "warehouse"), writer="test")  # type: ignore[arg-type]


def _submit(ctx: BuildContext) -> Job:
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
    return submit(ctx.store, "ssb", new_job(model, JobType.INC_BUILD, TimeRange.of(0, 86_400_000)))


def test_a_job_the_session_took_down_resumes_with_a_note_then_errs_after_the_bound(
    job_ctx: BuildContext, tmp_path: Path, sessions: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = SparkSupervisor(
        _settings(tmp_path, interval=60, resumes=1), make=sessions.make, reset=sessions.reset
    ).start()
    log = io.StringIO()
    joblog.log_to(log)

    def dies(ctx: BuildContext, job: Job) -> tuple[None, int]:
        sessions.made[-1].returncode = 137
        raise ConnectionRefusedError(111, "Connection refused")

    try:
        job = _submit(job_ctx)
        monkeypatch.setattr(runner, "_execute", dies)
        back = run_job(job_ctx, job.uuid, supervisor, ticket=supervisor.ticket())
        assert back.state is JobState.READY and back.error is None and back.params[ENGINE_RESUMES] == "1"
        _until(lambda: supervisor.state is SparkState.UP, "a new session")
        monkeypatch.setattr(runner, "_execute", lambda ctx, job: (None, 0))
        done = run_job(job_ctx, job.uuid, supervisor, ticket=supervisor.ticket())
        assert done.state is JobState.SUCCEED and done.params[ENGINE_NOTE] == f"{RESUMED} (1 of at most 1)"
        again = _submit(job_ctx)
        monkeypatch.setattr(runner, "_execute", dies)
        assert run_job(job_ctx, again.uuid, supervisor, ticket=supervisor.ticket()).state is JobState.READY
        _until(lambda: supervisor.state is SparkState.UP, "a third session")
        failed = run_job(
            job_ctx, again.uuid, supervisor, ticket=supervisor.ticket()
        )  # its second loss: past the bound of 1
        assert failed.state is JobState.ERROR and failed.error is not None
        assert failed.error.startswith("the build engine stopped 2 times while this job ran")
    finally:
        joblog.logger.handlers.clear()
        supervisor.stop()
    lines = log.getvalue()
    assert f"job={job.uuid} the build engine restarted; job resumed (1 of at most 1)" in lines
    assert "the build engine stopped (its JVM stopped answering); the job resumes once it has restarted" in lines
    assert "ConnectionRefusedError" not in lines and "Connection refused" not in lines
