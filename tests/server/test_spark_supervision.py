"""kill -9 of the build engine's JVM during a build: the job finishes by itself on a new Spark session, without
restarting `precube serve` (or `precube jobs run`), within 60 s; `/ready` says Spark was DOWN, then UP; the job
says "the build engine restarted; job resumed" and never shows the raw `ConnectionRefusedError`.

Each test runs its runner as a child process with its own small Spark (one core, 1 GB), so that killing its JVM
touches nothing of the test run's; the test process starts no JVM (the answers are checked on DuckDB)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from precube.api import session_on
from precube.jobs.engine_loss import ENGINE_NOTE, ENGINE_RESUMES, RESUMED
from precube.jobs.plans import build_job
from precube.jobs.submission import submit
from precube.metadata import Job, JobState, TimeRange, open_store
from precube.settings import Settings
from tests.query.conftest import day
from tests.server.conftest import data, server_settings
from tests.server.live import ServerProcess
from tests.server.tiny import MODEL, QUERY, build, make_project, oracle_rows, rows, wait_job

pytestmark = pytest.mark.spark
PROJECT = "pt"
START, END = "1992-01-01", "1994-01-01"  # two years of orders: a build of seconds on an idle machine
CHILD = {
    "PRECUBE__SPARK__MASTER": "local[1]",
    "PRECUBE__SPARK__DRIVER_MEMORY": "1g",
    "PRECUBE__SPARK__SHUFFLE_PARTITIONS": "2",
}
RECOVERY_S = 60  # the goal: a killed Spark JVM costs a job at most this, not a restart
IDLE_START_S = 10.0  # about what a Spark JVM's start takes on an idle 2-core machine


def _budget(start_s: float) -> float:
    """How long the job may take to finish after the kill: the goal, scaled by how much slower than on an idle
    machine this one started the first JVM (`start_s`). Beside other test runs, starts of 70 s were measured, the
    new JVM's first Spark job took 55 s and the tiny build's layouts 99 s: a fixed 60 s would measure the load."""
    return RECOVERY_S * max(1.0, start_s / IDLE_START_S)


def _descendants(root: int) -> list[int]:
    """The processes below `root` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _spark_jvm(root: int, timeout: float = 60) -> int:
    """The pid of the Spark JVM `root` launched (`java … SparkSubmit`)."""
    deadline = time.monotonic() + timeout
    while True:
        for pid in _descendants(root):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"org.apache.spark.deploy.SparkSubmit" in command:
                return pid
        assert time.monotonic() < deadline, f"no Spark JVM under process {root} after {timeout} s"
        time.sleep(0.2)


def _job(settings: Settings, job_id: str) -> Job:
    with open_store(settings.metadata_url, settings.metadata.table) as store, store.read(PROJECT) as tx:
        return tx.require(Job, job_id)


def _answers_the_built_range(settings: Settings, ssb_dir: Path) -> None:
    """The built segment answers like the oracle over the orders before END (in this process, on DuckDB)."""
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        session = session_on(settings, store, PROJECT, history=None, cache=None)
        assert rows(session.sql(QUERY.format(where=""), pushdown=False).table) == oracle_rows(ssb_dir, END)


def _ready(client: httpx.Client) -> dict[str, Any]:
    answer: dict[str, Any] = data(client.get("/ready"))
    return answer


def test_kill_9_of_the_servers_spark_jvm_during_a_build_costs_the_job_a_restart_not_the_server(
    tmp_path: Path, ssb_dir: Path
) -> None:
    settings = server_settings(tmp_path)
    make_project(settings, ssb_dir, PROJECT)
    server = ServerProcess(tmp_path, env=CHILD)
    try:
        with server.client() as client:
            started = time.monotonic()
            while _ready(client)["spark"] != "UP":  # the JVM starts in the background
                assert time.monotonic() < started + 180, _ready(client)
                time.sleep(0.2)
            start_s = time.monotonic() - started  # what a JVM's start costs on this machine now
            jvm = _spark_jvm(server.process.pid)
            job = build(client, PROJECT, START, END)
            wait_job(client, PROJECT, job, until=("RUNNING",), timeout=60)
            os.kill(jvm, signal.SIGKILL)
            killed = time.monotonic()
            seen: list[str] = []  # the states of Spark /ready told, each once in a row
            while True:
                ready = _ready(client)
                assert ready["status"] == "READY"  # queries need no Spark: the server stays in
                if not seen or seen[-1] != ready["spark"]:
                    seen.append(ready["spark"])
                detail = data(client.get(f"/kylin/api/jobs/{job}/detail", params={"project": PROJECT}))
                assert detail["job_status"] not in ("ERROR", "DISCARDED"), detail
                if detail["job_status"] == "FINISHED" and detail["params"].get("aftermath_done") == "true":
                    break
                assert time.monotonic() - killed < _budget(start_s), (detail["job_status"], seen, start_s)
                time.sleep(0.1)
            ready = _ready(client)
            assert seen[0] == "UP" and {"DOWN", "STARTING"} & set(seen) and ready["spark"] == "UP", seen
            jobs = ready["jobs"]
            # the JVM seen gone ("exited") or its connection refused first ("stopped answering"), whichever came first
            assert jobs["spark_restarts"] == 1 and jobs["spark_last_loss"].startswith("its JVM "), jobs
            assert _spark_jvm(server.process.pid) != jvm  # a new JVM, in the same server process
            assert server.process.poll() is None
            assert detail["params"][ENGINE_RESUMES] == "1"
            assert detail["params"][ENGINE_NOTE] == f"{RESUMED} (1 of at most 3)"
            assert detail["error"] is None and "ConnectionRefusedError" not in str(detail)
            outputs = [
                data(client.get(f"/kylin/api/jobs/{job}/steps/{step['id']}/output", params={"project": PROJECT}))
                for step in data(client.get(f"/kylin/api/jobs/{job}/detail", params={"project": PROJECT}))["steps"]
            ]
            told = "\n".join(o["cmd_output"] for o in outputs)
            assert "ConnectionRefusedError" not in told and "Py4J" not in told, told
    finally:
        server.terminate()
    _answers_the_built_range(settings, ssb_dir)


def test_kill_9_of_the_spark_jvm_of_precube_jobs_run_during_a_build(tmp_path: Path, ssb_dir: Path) -> None:
    settings = server_settings(tmp_path)
    make_project(settings, ssb_dir, PROJECT)
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        job = submit(store, PROJECT, build_job(store, PROJECT, MODEL, TimeRange.of(day(START), day(END)))).uuid
    log = tmp_path / "jobs-run.log"
    command = [sys.executable, "-m", "precube", "--home", str(tmp_path), "jobs", "run", "--project", PROJECT]
    with log.open("wb") as out:
        runner = subprocess.Popen(command, env={**os.environ, **CHILD}, stdout=out, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        while _job(settings, job).state is not JobState.RUNNING:  # Spark starts, then the job
            assert runner.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < started + 180, "the job did not start"
            time.sleep(0.05)
        start_s = time.monotonic() - started
        os.kill(_spark_jvm(runner.pid), signal.SIGKILL)
        # it runs the job to its end on a new JVM, then stops
        assert runner.wait(_budget(start_s)) == 0, log.read_text()[-3000:]
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(30)
    done = _job(settings, job)
    told = log.read_text()
    assert done.state is JobState.SUCCEED and done.params[ENGINE_NOTE] == f"{RESUMED} (1 of at most 3)", told
    assert "the build engine restarted; job resumed" in told and "ConnectionRefusedError" not in told
    _answers_the_built_range(settings, ssb_dir)
