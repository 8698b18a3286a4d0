"""The server's job service: SIGTERM during a build pauses the job and the next start finishes it; kill -9
during a build leaves it RUNNING, the next start recovers and finishes it, and the READY segment answers
throughout; a server whose Spark cannot start keeps serving and fails the job with the reason.

The two process tests run `precube serve` as a child process (its own JVM) on a tiny model with one
segment built beforehand, and build the next one there."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest

from precube.api import session_on
from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.errors import EnvironmentMissingError
from precube.jobs.shutdown import PAUSED_AT_STOP
from precube.metadata import Job, JobState, MetadataStore, open_store
from precube.settings import Settings
from tests.query.conftest import day
from tests.server.conftest import data, server_settings
from tests.server.live import ServerProcess, live_server
from tests.server.tiny import MODEL, QUERY, build, make_project, oracle_rows, rows, wait_job

pytestmark = pytest.mark.spark
PROJECT = "pt"
# The child's Spark: small, one core, so that it shares the machine with the test run's own.
CHILD = {
    "PRECUBE__SPARK__MASTER": "local[1]",
    "PRECUBE__SPARK__DRIVER_MEMORY": "1g",
    "PRECUBE__SPARK__SHUFFLE_PARTITIONS": "2",
}


@pytest.fixture
def home(tmp_path: Path, ssb_dir: Path, spark: object) -> tuple[Path, Settings]:
    """A home with project `pt` and model `tiny` holding one READY segment, [1992, 1993)."""
    settings = server_settings(tmp_path)
    make_project(settings, ssb_dir, PROJECT)
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        ctx = BuildContext(spark, store, PROJECT, settings.warehouse_root, writer="test")  # type: ignore[arg-type]
        from precube.metadata import TimeRange

        build_segment(ctx, MODEL, TimeRange.of(day("1992-01-01"), day("1993-01-01")))
    return tmp_path, settings


def _job(settings: Settings, job_id: str) -> Job:
    with open_store(settings.metadata_url, settings.metadata.table) as store, store.read(PROJECT) as tx:
        return tx.require(Job, job_id)


def _answers(settings: Settings, ssb_dir: Path, before: str) -> None:
    """The built segments answer like the oracle over the orders before `before` (in this process)."""
    store: MetadataStore = open_store(settings.metadata_url, settings.metadata.table)
    try:
        session = session_on(settings, store, PROJECT, history=None, cache=None)
        assert rows(session.sql(QUERY.format(where=""), pushdown=False).table) == oracle_rows(ssb_dir, before)
    finally:
        store.close()


def test_sigterm_pauses_the_running_build_and_the_next_start_finishes_it(
    home: tuple[Path, Settings], ssb_dir: Path
) -> None:
    path, settings = home
    server = ServerProcess(path, env=CHILD)
    try:
        with server.client() as client:
            job = build(client, PROJECT, None, "1994-01-01")
            wait_job(client, PROJECT, job, until=("RUNNING",))
        # uvicorn ends by re-raising the signal it handled, after the application's shutdown completed
        assert server.terminate() in (0, -signal.SIGTERM)
        assert "Application shutdown complete" in server.log.read_text()
    finally:
        if server.process.poll() is None:
            server.kill()
    stopped = _job(settings, job)
    assert stopped.state is JobState.PAUSED and stopped.params.get(PAUSED_AT_STOP) == "true", stopped
    _answers(settings, ssb_dir, "1993-01-01")
    again = ServerProcess(path, env=CHILD)
    try:
        with again.client() as client:
            done = wait_job(client, PROJECT, job)
            assert done["data_range_start"] == day("1993-01-01")
    finally:
        again.terminate()
    _answers(settings, ssb_dir, "1994-01-01")


def test_kill_9_during_a_build_then_the_next_start_resumes_it(home: tuple[Path, Settings], ssb_dir: Path) -> None:
    path, settings = home
    server = ServerProcess(path, env=CHILD)
    try:
        with server.client() as client:
            job = build(client, PROJECT, None, "1994-01-01")
            wait_job(client, PROJECT, job, until=("RUNNING",))
    finally:
        server.kill()
    assert _job(settings, job).state is JobState.RUNNING  # nobody ran its end
    _answers(settings, ssb_dir, "1993-01-01")  # the READY segment answers while the build is dead
    again = ServerProcess(path, env=CHILD)
    try:
        with again.client() as client:
            wait_job(client, PROJECT, job)
            segments = data(client.get(f"/kylin/api/models/{MODEL}/segments", params={"project": PROJECT}))
            assert [s["status_to_display"] for s in segments["value"]] == ["ONLINE", "ONLINE"]
    finally:
        again.terminate()
    _answers(settings, ssb_dir, "1994-01-01")


def test_a_server_whose_spark_cannot_start_serves_and_fails_jobs_with_the_reason(
    tmp_path: Path, ssb_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_spark(*args: object, **kwargs: object) -> None:
        raise EnvironmentMissingError("Java 17+ is required by Spark and was not found")

    monkeypatch.setattr("precube.spark_session.spark_session", no_spark)
    settings = server_settings(tmp_path)
    project = f"p_{uuid.uuid4().hex[:8]}"
    make_project(settings, ssb_dir, project)
    with live_server(settings) as server, server.client() as client:
        job = build(client, project, "1992-01-01", "1993-01-01")
        failed = wait_job(client, project, job, until=("ERROR",), timeout=60)
        assert "Spark could not start in the server" in failed["error"] and "Java 17+" in failed["error"]
        assert "\n" not in failed["error"]
        assert data(client.get("/ready"))["status"] == "READY"


def test_low_disk_refuses_a_build_before_any_work_and_ready_says_so_but_stays_200(
    tmp_path: Path, ssb_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[jobs] min_free_mb` above the disk's free space (a full disk): the build ends ERROR with one line naming
    the space (not Spark's failure: nothing ran), and `/ready` reports the disk low while still READY (queries
    work on a full disk)."""

    def no_spark(*args: object, **kwargs: object) -> None:
        raise EnvironmentMissingError("Spark is not needed by this test")

    monkeypatch.setattr("precube.spark_session.spark_session", no_spark)
    settings = server_settings(tmp_path)
    settings.jobs.min_free_mb = 1024.0**3  # an exabyte
    project = f"p_{uuid.uuid4().hex[:8]}"
    make_project(settings, ssb_dir, project)
    with live_server(settings) as server, server.client() as client:
        ready = client.get("/ready")
        assert ready.status_code == 200 and data(ready)["status"] == "READY"
        assert data(ready)["disk"]["low"] is True and data(ready)["disk"]["free_bytes"] > 0
        job = build(client, project, "1992-01-01", "1993-01-01")
        failed = wait_job(client, project, job, until=("ERROR",), timeout=60)
        assert failed["error"].startswith("InsufficientDiskSpaceError: not enough free disk space for job ")
        assert "\n" not in failed["error"] and "Spark" not in failed["error"]
    settings.jobs.min_free_mb = 1.0
    with live_server(settings, run_jobs=False) as server, server.client() as client:
        assert data(client.get("/ready"))["disk"]["low"] is False
