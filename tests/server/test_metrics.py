"""`GET /metrics`: Prometheus's text, parsed by prometheus_client's own parser, changes by what the server did
(queries by how they were answered, their latency, cache hits and misses, failed sign-ins on REST and the wire),
carries the values read when scraped (statements running, jobs by state, Spark, memory), needs credentials, and
sums the workers of `precube serve --workers 2`."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from precube.metadata.job import JobState
from precube.settings import AuthSettings
from tests.server.conftest import ServerHome, data, error, server_settings
from tests.server.live import ADMIN, LiveServer, ServerProcess, free_port, live_server

pytestmark = pytest.mark.spark

QUERY = "/kylin/api/query"
SSB_Q = (
    "select d_year, sum(lo_revenue) as revenue from ssb.lineorder "
    "join ssb.dates on lo_orderdate = d_datekey group by d_year order by d_year"
)
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def server(server_home: ServerHome) -> Iterator[LiveServer]:
    """A server of its own whose result cache admits every answer, with the Postgres wire, running no jobs."""
    settings = server_settings(server_home.settings.home, cache={"min_duration_ms": 0, "min_scanned_rows": 0})
    settings.server.pg_port = free_port()
    with live_server(settings, run_jobs=False) as found:
        yield found


def scrape(client: httpx.Client) -> Samples:
    """Every sample of a scrape, by name and labels."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_queries_cache_and_failed_sign_ins_are_counted(server: LiveServer, server_home: ServerHome) -> None:
    import psycopg

    project = server_home.project
    with server.client() as admin:
        data(admin.delete(f"{QUERY}/cache", params={"project": project}))
        before = scrape(admin)
        data(admin.post(QUERY, json={"sql": SSB_Q, "project": project}))  # a miss, answered by a layout
        assert data(admin.post(QUERY, json={"sql": SSB_Q, "project": project}))["storageCacheUsed"] is True
        forced = data(admin.post(QUERY, json={"sql": SSB_Q, "project": project, "forcedToPushDown": True}))
        assert forced["pushDown"] is True  # the cache is neither read nor kept
        error(admin.post(QUERY, json={"sql": "select d_year from ssb.dates where", "project": project}), 400)
    with server.client(auth=(ADMIN[0], "not-it-1!")) as wrong:
        error(wrong.get("/metrics"), 401)
    dsn = f"host=127.0.0.1 port={server.pg_port} dbname={project} user={ADMIN[0]} password=not-it-2!"
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(dsn, connect_timeout=30).close()
    time.sleep(AuthSettings().delay_s + 0.2)  # after two failures the throttle holds ADMIN's next try this long
    with server.client() as admin:
        after = scrape(admin)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    for kind in ("layout", "cache", "pushdown", "error"):
        assert delta("precube_queries_total", answer=kind) == 1, kind
        assert delta("precube_query_seconds_count", answer=kind) == 1, kind
    assert delta("precube_query_seconds_sum", answer="pushdown") > 0
    assert delta("precube_queries_total", answer="table_index") == 0
    # the fast lane's hit; the misses: the first query and the failing one (the forced pushdown looks nothing up)
    assert (
        delta("precube_cache_lookups_total", result="hit"),
        delta("precube_cache_lookups_total", result="miss"),
    ) == (
        1,
        2,
    )
    assert delta("precube_sign_in_failures_total") == 2  # REST and the wire
    # the values read when scraped
    assert value(after, "precube_queries_running") == 0  # every statement above has finished
    lanes = {(name, labels) for name, labels in after if name.startswith("precube_admission_")}
    assert lanes == {
        (n, (("lane", lane),))
        for n in ("precube_admission_running", "precube_admission_queued")
        for lane in ("layout", "pushdown")
    }
    assert sum(value(after, "precube_admission_running", lane=lane) for lane in ("layout", "pushdown")) == 0
    assert {labels for name, labels in after if name == "precube_jobs"} == {(("state", s.value),) for s in JobState}
    assert value(after, "precube_spark_state", state="off") == 1  # this server runs no jobs
    assert value(after, "process_resident_memory_bytes") > 50e6


def test_metrics_need_credentials_but_no_permission(server: LiveServer) -> None:
    with server.client(auth=None) as anonymous:
        assert "credentials" in error(anonymous.get("/metrics"), 401)
    name, password = f"scraper_{uuid.uuid4().hex[:8]}", "Scr4per-pass!"
    server.state.directory.add_user(name, password, [])  # no role, no grant on any project
    with server.client(auth=(name, password)) as scraper:
        assert value(scrape(scraper), "precube_spark_state", state="off") == 1


def _answered_by_worker(folder: Path) -> list[float]:
    """The statements each worker counted, read from its own counter file alone."""
    counts = []
    for found in sorted(folder.glob("counter_*.db")):
        with tempfile.TemporaryDirectory() as alone:
            shutil.copy(found, alone)
            families = MultiProcessCollector(None, path=alone).collect()
            counts.append(sum(s.value for f in families for s in f.samples if s.name == "precube_queries_total"))
    return counts


def test_the_workers_of_one_server_are_summed(server_home: ServerHome) -> None:
    """`--workers 2`: each worker records in its files under HOME/metrics/PORT, and a scrape of either sums both."""
    home = server_home.settings.home
    process = ServerProcess(home, args=("--workers", "2", "--no-jobs"))
    try:
        folder = home / "metrics" / str(process.port)
        sent = 0
        while sent < 40 and sum(n > 0 for n in _answered_by_worker(folder)) < 2:
            with process.client() as client:  # a connection each: the kernel spreads them over the workers
                data(client.post(QUERY, json={"sql": SSB_Q, "project": server_home.project}))
            sent += 1
        by_worker = _answered_by_worker(folder)
        assert len(by_worker) == 2 and all(n > 0 for n in by_worker) and sum(by_worker) == sent, by_worker
        for _ in range(3):  # whichever worker answers the scrape: both workers' statements
            with process.client() as client:
                samples = scrape(client)
            assert sum(v for (name, _), v in samples.items() if name == "precube_queries_total") == sent
    finally:
        assert process.terminate() == 0
