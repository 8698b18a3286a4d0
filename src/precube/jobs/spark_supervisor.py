"""The supervised Spark session of a job runner (a server's job service, `precube jobs run`, `build --wait`).

A monitor thread probes the session every `[spark] probe_interval_s`: the JVM process gone (killed, out of memory,
an executor that could not send heartbeats exits it in local mode), a SparkContext that stopped itself, or no
answer to a cheap call within `[spark] probe_timeout_s` (a wedged JVM) make it DOWN. What is left is then
stopped (the JVM killed, which also fails the job threads still waiting on it), PySpark's process-wide
singletons are reset so that a new session can start in this process, and a fresh one starts: DOWN → STARTING →
UP, its `generation` one more. Schedulers launch jobs only while `accepting` and give each the new session
(`jobs.scheduler`); a job that failed because the session died is put back to READY (`jobs.engine_loss`).

A start that fails (no Java, a bad conf) leaves Spark DOWN with the reason: jobs then run and fail with it, at
once and resumable, as before supervision, while starts are tried again with a growing pause.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precube.errors import EnvironmentMissingError
from precube.jobs.engine_loss import OUT_OF_MEMORY, engine_failure
from precube.settings import Settings

if TYPE_CHECKING:
    from subprocess import Popen

    from pyspark.sql import SparkSession

LOG = logging.getLogger("precube.jobs.spark")  # in the job log (a server's, `jobs run`'s), as job "-"
STOP_WAIT_S = 10.0  # how long a graceful stop or a gateway shutdown may take before it is left behind
RETRY_START_S = (5.0, 120.0)  # a failed start is tried again after 5 s, doubling up to 120 s


class SparkState(StrEnum):
    UP = "UP"
    DOWN = "DOWN"
    STARTING = "STARTING"


class _NoSpark:
    """Stands for the Spark session that could not start: a job touching it fails with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __getattr__(self, name: str) -> Any:
        raise EnvironmentMissingError(f"Spark could not start in the server: {self.reason}")


def _one_line(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"


def _timed(call: Callable[[], Any], timeout_s: float) -> tuple[bool, Any]:
    """(True, result) or (True, the exception raised) if `call` returned within `timeout_s`, else (False, None);
    a call that hangs is left to its daemon thread (killing the JVM ends it)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as err:  # noqa: BLE001 (the caller judges it)
            outcome.append(err)

    thread = threading.Thread(target=run, name="precube-spark-probe", daemon=True)
    thread.start()
    thread.join(timeout_s)
    return (True, outcome[0]) if outcome else (False, None)


def reset_pyspark() -> None:
    """Forget this process's Spark session, context and JVM gateway (killing the JVM if it still runs), so that
    the next `SparkSession.builder.getOrCreate()` launches a new JVM. `SparkContext.stop()` alone is not enough
    after a JVM died: it fails on the dead connection before clearing the active context, and nothing in PySpark
    clears `SparkContext._gateway`, so `_ensure_initialized` would keep the dead gateway for good."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql.context import SQLContext

    with SparkContext._lock:
        context, gateway = SparkContext._active_spark_context, SparkContext._gateway
    proc: Popen[bytes] | None = getattr(gateway, "proc", None)  # spark-submit exec's the JVM: the same process
    if proc is not None and proc.poll() is None:
        proc.kill()
        try:
            proc.wait(STOP_WAIT_S)
        except Exception as err:  # noqa: BLE001 (a zombie the kernel has not reaped yet: nothing more to do)
            LOG.warning("the old Spark JVM (pid %s) did not exit: %s", proc.pid, err)
    elif proc is None and context is not None:  # a gateway this process did not launch: ask it to stop
        _timed(context.stop, STOP_WAIT_S)
    if context is not None:
        context._jsc = None
        accumulators = getattr(context, "_accumulatorServer", None)
        if accumulators is not None:
            _timed(accumulators.shutdown, STOP_WAIT_S)
            context._accumulatorServer = None  # type: ignore[assignment]
    if gateway is not None:
        _timed(gateway.shutdown, STOP_WAIT_S)  # its Python callback server; the JVM side is gone
    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
    SQLContext._instantiatedContext = None


class SparkSupervisor:
    """The process's Spark session, kept alive: `start()`, then `session`, `state`, `accepting`, `lost(…)`;
    `stop()` at the end."""

    def __init__(
        self,
        settings: Settings,
        console_log: Path | None = None,
        make: Callable[[], SparkSession] | None = None,
        reset: Callable[[], None] = reset_pyspark,
    ) -> None:
        """`make`: starts a session (default: `spark_session(settings, console_log)`); `reset`: forgets a dead one
        (default: `reset_pyspark`)."""
        self.settings = settings
        self._reset = reset
        self.probe_interval_s = settings.spark.probe_interval_s
        self.probe_timeout_s = settings.spark.probe_timeout_s
        self.resumes = settings.jobs.engine_resumes  # how often one job is resumed by itself after a loss
        self._make = make or (lambda: _spark_session(settings, console_log))
        self.state = SparkState.STARTING
        self.error: str | None = None  # why the last start failed
        self.start_failure: Exception | None = None  # and the error itself
        self.generation = 0  # sessions started so far: a job knows which one it ran on
        self.restarts = 0
        self.last_loss: str | None = None  # why the last session was given up, and when
        self.owned = False  # whether this process made the session (the test run's own is not stopped)
        self._session: SparkSession | None = None
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._retry_at = 0.0
        self._failed_starts = 0
        self._thread: threading.Thread | None = None
        # One thread makes every probe call: py4j gives each Python thread its own connection (and JVM thread).
        # A call that hangs holds it until the JVM is killed; the probes meanwhile time out, as they should.
        self._prober = ThreadPoolExecutor(max_workers=1, thread_name_prefix="precube-spark-probe")

    # -- what schedulers and routes ask ----------------------------------------------------------------

    @property
    def session(self) -> SparkSession:
        """The live session; while there is none, a stand-in whose every use fails with the reason."""
        session = self._session
        if session is not None:
            return session
        return _NoSpark(self.error or "Spark is restarting")  # type: ignore[return-value]

    def current(self) -> tuple[int | None, SparkSession] | None:
        """What a job launched now runs on, read together under the lock (a restart may come between two reads):
        (its ticket — the session's generation —, the session) while UP; (None, a stand-in failing with the reason)
        while Spark could not start; None while a lost session is being replaced (jobs wait)."""
        with self._lock:
            if self.state is SparkState.UP and self._session is not None:
                return self.generation, self._session
            if self.state is SparkState.DOWN and self.error is not None:
                return None, _NoSpark(self.error)  # type: ignore[return-value]
            return None

    @property
    def accepting(self) -> bool:
        """Whether jobs may start now: Spark is UP, or its start failed (they fail at once with the reason);
        not while a lost session is being replaced."""
        return self.current() is not None

    def ticket(self) -> int | None:
        """What a job starting now runs on: the session's generation, None without a session."""
        current = self.current()
        return None if current is None else current[0]

    def status(self) -> dict[str, Any]:
        """For `/ready`: the state, why the last start failed, the restarts and why the last session was lost."""
        return {
            "spark": self.state.value,
            "spark_error": self.error,
            "spark_restarts": self.restarts,
            "spark_last_loss": self.last_loss,
        }

    def lost(self, err: BaseException, ticket: int | None) -> str | None:
        """Why a job that ran on session `ticket` and failed with `err` failed because the session died (one
        line, without the raw exception), or None when the failure is the job's own. The session is checked at
        once, so that the job is not launched again on a session about to be replaced."""
        if ticket is None or self._stopping.is_set():  # it ran without Spark, or the runner is stopping
            return None
        told = engine_failure(err)
        with self._lock:
            if ticket != self.generation or self.state is not SparkState.UP:
                return told or "the build engine was restarted while it ran"
        trouble = self._probe(self.probe_timeout_s)
        if trouble is None and told == OUT_OF_MEMORY:
            trouble = told  # a JVM that ran out of memory is not trusted again: a fresh one is started
        if trouble is not None:
            self._give_up(ticket, trouble)
            return told or trouble
        return told

    # -- life cycle ------------------------------------------------------------------------------------

    def start(self) -> SparkSupervisor:
        """Start the session here (a failure leaves Spark DOWN with the reason), then the monitor thread."""
        from pyspark.sql import SparkSession

        self.owned = SparkSession._instantiatedSession is None
        self._start_session()
        self._thread = threading.Thread(target=self._monitor, name="precube-spark-supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self, stop_session: bool = True) -> None:
        """Stop watching; with `stop_session`, stop the session if this process made it (cancelling what still
        runs on it)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        self._prober.shutdown(wait=False, cancel_futures=True)
        session = self._session
        if stop_session and self.owned and session is not None:
            try:
                session.stop()
            except Exception as err:  # noqa: BLE001 (a JVM already gone: nothing left to stop)
                LOG.warning("stopping Spark: %s", _one_line(err))

    def _monitor(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(self.probe_interval_s)
            self._wake.clear()
            if self._stopping.is_set():
                return
            if self._session is None:
                if time.monotonic() >= self._retry_at:
                    self._start_session()
                continue
            ticket = self.generation
            trouble = self._probe(self.probe_timeout_s)
            if trouble is not None:
                self._give_up(ticket, trouble)
                self._start_session()

    def _probe(self, timeout_s: float) -> str | None:
        """What is wrong with the session (None: it answers): its JVM exited, it stopped, or it does not answer."""
        session = self._session
        if session is None:
            return "it is not running"
        context = session.sparkContext
        proc: Popen[bytes] | None = getattr(getattr(context, "_gateway", None), "proc", None)  # the JVM it launched
        if proc is not None and proc.poll() is not None:
            return f"its JVM exited (code {proc.returncode})"
        jsc = context._jsc
        if jsc is None:
            return "it was stopped"
        try:
            stopped = self._prober.submit(lambda: jsc.sc().isStopped()).result(timeout_s)
        except FutureTimeout:
            return f"its JVM did not answer for {timeout_s:g} s"
        except Exception as err:  # noqa: BLE001 (py4j's errors when the JVM is gone: the session is)
            LOG.debug("the Spark session's probe failed: %s", _one_line(err))  # the raw error, for debugging
            return engine_failure(err) or "its JVM does not answer"
        return "its SparkContext stopped" if stopped else None

    def _give_up(self, ticket: int, trouble: str) -> None:
        """Session `ticket` is unusable: DOWN, and what is left of it is stopped (once, whoever saw it first)."""
        with self._lock:
            if ticket != self.generation or self._session is None:
                return  # already given up
            self.state = SparkState.DOWN
            self.error = None
            self._session = None
            self.last_loss = f"{trouble} ({time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC)"
            LOG.error("the Spark session died: %s; starting a new one", trouble)
            self._reset()
        self._retry_at = 0.0
        self._wake.set()  # the monitor starts the new session (when this was a job thread's finding)

    def _start_session(self) -> None:
        with self._lock:
            if self._session is not None or self._stopping.is_set():
                return
            restart = self.generation > 0
            self.state = SparkState.STARTING
        try:
            session = self._make()
        except Exception as err:  # noqa: BLE001 (no Java, a bad conf, a JVM that dies at once: jobs fail with it)
            with self._lock:
                self.error, self.start_failure = _one_line(err), err
                self.state = SparkState.DOWN
            self._failed_starts += 1
            low, high = RETRY_START_S
            pause = min(low * 2 ** (self._failed_starts - 1), high)
            self._retry_at = time.monotonic() + pause
            # PySpark itself cleans up a context that failed to start (its JVM gateway is reused by the next try)
            LOG.error("Spark could not start (tried again in %g s): %s", pause, self.error)
            return
        with self._lock:
            self._session = session
            self.error = self.start_failure = None
            self._failed_starts = 0
            self.generation += 1
            if restart:
                self.restarts += 1
                self.owned = True  # the replacement is this process's own
            self.state = SparkState.UP
        LOG.info("Spark session %s", "restarted" if restart else "ready for jobs")


def _spark_session(settings: Settings, console_log: Path | None) -> SparkSession:
    from precube.spark_session import spark_session

    return spark_session(settings, console_log=console_log)
