"""Two servers on one PostgreSQL and one Redis, behind HAProxy (the module's `cluster`): a build through one is
answered by the other (its cached answer dropped), users, grants and model states changed through one hold on the
other within a bounded delay, a queued job runs once however many servers want it, a killed runner's job is
resumed by the other server, a server starved of CPU keeps its job lease, and Redis, PostgreSQL or a server going
away costs no answer beyond those in flight.

Every answer is compared with the oracle (the same SQL on the raw files, restricted to the built range)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

from precube.jobs.plans import build_job
from precube.jobs.submission import act, submit
from precube.metadata import Dataflow, Job, JobAction, JobLease, JobState, TimeRange
from precube.modeling.model_store import require_model
from precube.remote import ANSWER_HEADER, ARROW_TYPE
from tests.cluster.conftest import PROJECT, Cluster, answer
from tests.query.conftest import day
from tests.server.conftest import data
from tests.server.tiny import MODEL, QUERY, build, make_project, oracle_rows, rows, wait_job

pytestmark = pytest.mark.spark
SQL = QUERY.format(where="")
BOUND_S = 5.0  # a change made through one server holds on the other within this (it takes ~1 s at most)


def _arrow(client: httpx.Client, sql: str = SQL, project: str = PROJECT) -> tuple[pa.Table, dict[str, Any]]:
    """The answer as Arrow, and the rest of it (cached or not, which server, …)."""
    response = client.post("/kylin/api/query", json={"sql": sql, "project": project}, headers={"Accept": ARROW_TYPE})
    assert response.status_code == 200, response.text
    return pa.ipc.open_stream(response.content).read_all(), json.loads(response.headers[ANSWER_HEADER])


def _until(check: Callable[[], bool], what: str, timeout: float = BOUND_S) -> float:
    """Poll `check` until it holds; the seconds it took (fails after `timeout`)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.02)
    return time.monotonic() - started


def _expected(cluster: Cluster, ssb_dir: Path) -> list[tuple[Any, ...]]:
    """The oracle's answer to SQL over the range the model's segments cover now (they start at 1992-01-01)."""
    with cluster.store.read(PROJECT) as tx:
        model = require_model(tx, MODEL)
        end = max(s.range.end for s in tx.require(Dataflow, model.uuid).segments)
    return oracle_rows(ssb_dir, dt.datetime.fromtimestamp(end / 1000, dt.UTC).date().isoformat())


def _job(cluster: Cluster, project: str, job_id: str) -> Job:
    with cluster.store.read(project) as tx:
        return tx.require(Job, job_id)


def test_a_build_through_one_server_is_answered_by_the_other_which_drops_its_cached_answer(
    cluster: Cluster, ssb_dir: Path
) -> None:
    before, after = oracle_rows(ssb_dir, "1995-01-01"), oracle_rows(ssb_dir, "1999-01-01")
    with cluster.client(0) as a, cluster.client(1) as b:
        table, meta = _arrow(b)
        assert rows(table) == before and not meta["storageCacheUsed"]
        table, meta = _arrow(b)
        assert rows(table) == before and meta["storageCacheUsed"]  # cached in Redis …
        assert _arrow(a)[1]["storageCacheUsed"]  # … for every server
        job = build(a, PROJECT, None, "1999-01-01")
        seen: list[list[tuple[Any, ...]]] = []
        while data(a.get(f"/kylin/api/jobs/{job}/detail", params={"project": PROJECT}))["job_status"] != "FINISHED":
            seen.append(rows(_arrow(b)[0]))  # while it builds: the old answer, then the new, nothing between
            time.sleep(0.05)
        assert all(r in (before, after) for r in seen)
        delay = _until(lambda: rows(_arrow(b)[0]) == after, "server B answers with the new segment")
        wait_job(a, PROJECT, job)
        table, meta = _arrow(b)
        assert rows(table) == after and meta["storageCacheUsed"]  # B's new answer is the cached one now
        print(f"server B answered with the segment built through A {delay * 1000:.0f} ms after A said FINISHED")


def test_users_grants_and_model_states_changed_through_one_server_hold_on_the_other(
    cluster: Cluster, ssb_dir: Path
) -> None:
    carol = ("carol", "Car0l-pass!")
    with cluster.client(0) as a, cluster.client(1) as b, cluster.client(1, auth=carol) as carol_on_b:
        data(a.post("/kylin/api/user", json={"username": carol[0], "password": carol[1]}))
        grant = {"project": PROJECT, "type": "user", "permission": "QUERY", "names": [carol[0]]}
        data(a.post("/kylin/api/access/project", json=grant))
        query = {"sql": SQL, "project": PROJECT}
        granted = _until(lambda: carol_on_b.post("/kylin/api/query", json=query).status_code == 200, "the grant")
        revoke = {"project": PROJECT, "type": "user", "name": carol[0]}
        data(a.delete("/kylin/api/access/project", params=revoke))
        revoked = _until(lambda: carol_on_b.post("/kylin/api/query", json=query).status_code == 403, "the revoke")
        expected = _expected(cluster, ssb_dir)
        assert answer(b, SQL)["pushDown"] is False
        status = f"/kylin/api/models/{MODEL}/status"
        data(a.put(status, json={"project": PROJECT, "status": "OFFLINE"}))
        offline = _until(lambda: answer(b, SQL)["pushDown"], "the model going offline")  # the cached answer dropped
        assert rows(_arrow(b)[0]) == expected  # now from the source tables
        data(a.put(status, json={"project": PROJECT, "status": "ONLINE"}))
        _until(lambda: not answer(b, SQL)["pushDown"], "the model coming back online")
        assert rows(_arrow(b)[0]) == expected
        print(f"seen on the other server after: grant {granted:.2f} s, revoke {revoked:.2f} s, offline {offline:.2f} s")


def test_a_queued_job_wanted_by_both_servers_runs_once(cluster: Cluster, ssb_dir: Path) -> None:
    """A new project with a READY job: both servers find it (every 2 s) and race for its lease; one runs it."""
    project = "race"
    make_project(cluster.settings, ssb_dir, project)
    rng = TimeRange.of(day("1992-01-01"), day("1995-01-01"))
    job = submit(cluster.store, project, build_job(cluster.store, project, MODEL, rng))
    with cluster.client(None) as client:
        wait_job(client, project, job.uuid)
    ran = _job(cluster, project, job.uuid)
    holder = cluster.holder(project)
    assert holder is not None and ran.runner is not None and f":{cluster.servers[holder].pid}:" in ran.runner
    started = [_log_lines(cluster, i, f"job={job.uuid} .* started") for i in range(2)]
    assert sorted(len(s) for s in started) == [0, 1], started  # one run, on one server


def test_kill_9_of_the_running_server_and_the_other_resumes_the_job(cluster: Cluster, ssb_dir: Path) -> None:
    project = "kill"
    make_project(cluster.settings, ssb_dir, project)
    with cluster.client(None) as balanced:  # any server takes the build
        job = build(balanced, project, "1992-01-01", "1999-01-01")
        wait_job(balanced, project, job, until=("RUNNING",))
    holder = cluster.holder(project)
    assert holder is not None
    other = 1 - holder
    victim = cluster.servers[holder]
    running = _job(cluster, project, job)
    victim.kill()
    killed = time.monotonic()
    assert running.state is JobState.RUNNING and f":{victim.pid}:" in str(running.runner)
    assert _job(cluster, project, job).state is JobState.RUNNING  # nobody ended it
    try:
        taken = _until(
            lambda: f":{cluster.servers[other].pid}:" in str(_job(cluster, project, job).runner),
            "the other server resuming the job",
            timeout=cluster.settings.jobs.lease_ttl_s + 30,
        )
        with cluster.client(other) as client:
            done = wait_job(client, project, job)
            segments = data(client.get(f"/kylin/api/models/{MODEL}/segments", params={"project": project}))
            table, _ = _arrow(client, project=project)
        finished = time.monotonic() - killed
        assert done["job_status"] == "FINISHED"
        assert [s["status_to_display"] for s in segments["value"]] == ["ONLINE"]
        assert rows(table) == oracle_rows(ssb_dir, "1999-01-01")
        print(f"the other server took the job over {taken:.1f} s after kill -9 and finished it after {finished:.1f} s")
    finally:
        cluster.start(holder)
        cluster.wait_balanced({"s1", "s2"})


# A process spinning on a CPU at normal priority, bounded in time by itself too (should the test process die).
SPINNER = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def _lease(cluster: Cluster, project: str) -> tuple[str, int]:
    with cluster.store.read(project) as tx:
        lease = tx.require(JobLease, "scheduler")
    return lease.owner, lease.epoch


def test_under_cpu_starvation_the_holder_keeps_its_lease_and_a_killed_one_is_replaced_within_the_ttl(
    cluster: Cluster, ssb_dir: Path
) -> None:
    """Issue 38: at lease_ttl_s = 10, with 4 spinning processes per core for three TTLs while one server builds,
    its lease never changes hands (not even briefly: the epoch would grow) and the job runs once, there; kill -9
    of the holder and the other server holds the lease within the TTL (at once: a dead process of this machine)."""
    project, ttl = "starve", cluster.settings.jobs.lease_ttl_s
    make_project(cluster.settings, ssb_dir, project)
    with cluster.client(None) as balanced:
        job = build(balanced, project, "1992-01-01", "1993-01-01")
        wait_job(balanced, project, job, until=("RUNNING", "FINISHED"))
    holder = cluster.holder(project)
    assert holder is not None
    held = _lease(cluster, project)
    spin_s = 3 * ttl
    command = [sys.executable, "-c", SPINNER.format(seconds=spin_s + 5)]
    spinners = [subprocess.Popen(command) for _ in range(4 * (os.cpu_count() or 1))]
    try:
        started = time.monotonic()
        while time.monotonic() - started < spin_s:
            assert _lease(cluster, project) == held, f"the lease changed hands {time.monotonic() - started:.1f} s in"
            time.sleep(0.5)
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()
    assert _lease(cluster, project) == held
    runs = [_log_lines(cluster, i, f"job={job} .* started") for i in range(2)]
    assert [len(r) for r in runs] == [int(i == holder) for i in range(2)], runs  # one run, on the holder
    if _job(cluster, project, job).state is JobState.RUNNING:  # not left for the other server to resume
        act(cluster.store, project, job, JobAction.DISCARD, "test")
    other = 1 - holder
    cluster.servers[holder].kill()
    try:
        took = _until(lambda: cluster.holder(project) == other, "the other server taking the lease", timeout=ttl + 5)
        assert _lease(cluster, project)[1] == held[1] + 1
        print(
            f"{len(spinners)} spinners for {spin_s:g} s: no takeover; kill -9: the other held the lease {took:.1f} s after"
        )
    finally:
        cluster.start(holder)
        cluster.wait_balanced({"s1", "s2"})


def test_redis_stopped_and_started_again_during_queries(cluster: Cluster, ssb_dir: Path) -> None:
    expected = _expected(cluster, ssb_dir)
    with cluster.client(None) as balanced, cluster.client(0) as a, cluster.client(1) as b:
        cluster.redis_process.stop()
        try:
            for _ in range(20):  # through HAProxy: both servers, each finding Redis gone
                table, meta = _arrow(balanced)
                assert rows(table) == expected and not meta["storageCacheUsed"]
            for server in (a, b):
                ready = server.get("/ready")
                assert ready.status_code == 200 and ready.json()["data"]["cache"] == "DEGRADED"
        finally:
            cluster.redis_process = cluster.redis.start()
        for server in (a, b):
            _until(lambda server=server: data(server.get("/ready"))["cache"] == "UP", "Redis found again")
        _arrow(a)
        table, meta = _arrow(b)
        assert rows(table) == expected and meta["storageCacheUsed"]  # cached again, shared again
    for i in range(2):  # one warning each, not one per query; the URL without Redis's password
        [down] = _log_lines(cluster, i, "query cache .* is unreachable")
        assert len(_log_lines(cluster, i, "query cache .* answers again")) == 1
        assert f":***@127.0.0.1:{cluster.redis.port}" in down and cluster.redis.password not in down


def test_postgres_restarted_and_the_servers_reconnect_by_themselves(cluster: Cluster, ssb_dir: Path) -> None:
    expected = _expected(cluster, ssb_dir)
    with cluster.client(0) as a, cluster.client(1) as b:
        cluster.pg.stop()
        try:
            for server in (a, b):  # not ready: the balancer routes around them
                _until(lambda server=server: server.get("/ready").status_code == 503, "/ready saying 503")
        finally:
            cluster.pg.start()
        for server in (a, b):
            _until(lambda server=server: server.get("/ready").status_code == 200, "/ready again", timeout=30)
            assert rows(_arrow(server)[0]) == expected
    cluster.wait_balanced({"s1", "s2"})


def test_a_killed_server_costs_no_query(cluster: Cluster, ssb_dir: Path) -> None:
    """Queries through HAProxy, one at a time, while one server is killed: the one in flight on it is sent again
    to the other server (a query only reads), the next ones go there: every query is answered. Only if the kill
    lands between the response's head and its body (HAProxy has passed the head on and cannot send the query
    again; it logs the server's close in the data phase, `SD`) is that one answer cut short."""
    expected = _expected(cluster, ssb_dir)
    log = Path(cluster.balancer.log)
    logged_before = log.stat().st_size
    outcomes: list[int | str] = []
    stop = threading.Event()

    def ask() -> None:
        with cluster.client(None) as balanced:
            while not stop.is_set():
                try:
                    response = balanced.post("/kylin/api/query", json={"sql": SQL, "project": PROJECT})
                    outcomes.append(response.status_code)
                except httpx.TransportError as err:
                    outcomes.append(type(err).__name__)

    asking = threading.Thread(target=ask)
    asking.start()
    try:
        time.sleep(1.0)
        cluster.servers[1].kill()
        killed_at = len(outcomes)
        cluster.wait_balanced({"s1"})
        time.sleep(1.0)
    finally:
        stop.set()
        asking.join(60)
        cluster.start(1)
    assert killed_at > 0 and len(outcomes) > killed_at + 5
    failed = [s for s in outcomes if s != 200]
    with log.open("rb") as logged:
        logged.seek(logged_before)
        cut = re.findall(r"queries/s2 \S+ 200 \d+ - - SD", logged.read().decode(errors="replace"))
    assert failed == [] or (len(failed) == 1 and isinstance(failed[0], str) and len(cut) == 1), (failed, cut)
    with cluster.client(None) as balanced:
        assert rows(_arrow(balanced)[0]) == expected
    cluster.wait_balanced({"s1", "s2"})


def _log_lines(cluster: Cluster, server: int, pattern: str) -> list[str]:
    """Lines of server `server`'s logs (its output and its job log) matching `pattern`."""
    home = cluster.dir / f"server-{server}"
    found = []
    for log in (home / "serve.log", home / "logs" / "jobs-server.log"):
        if log.exists():
            found += [line for line in log.read_text(errors="replace").splitlines() if re.search(pattern, line)]
    return found
