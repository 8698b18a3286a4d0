"""One deployment for the cluster tests, shared by the module (it costs a PostgreSQL cluster, a Redis and two
servers with a JVM each): `deploy.services` starts PostgreSQL, Redis, two `precube serve` processes on one
configuration (`deploy.cluster.config_text`: PostgreSQL metadata, the Redis cache, one warehouse directory, local
Spark in each server) and HAProxy in front of them. Project `pc` holds the SSB tables and the jobs tests' `tiny`
model with one segment, [1992, 1995), built by this process. Tests that stop a service start it again."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from deploy.cluster import CHECK_USER, config_text
from deploy.services import (
    Postgres,
    Process,
    Redis,
    ServiceError,
    free_port,
    start_haproxy,
    start_server,
    wait_balanced,
    write_private,
)
from precube.auth import Directory
from precube.auth.model import ROLE_ADMIN
from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import JobLease, MetadataStore, TimeRange, open_store
from precube.settings import Settings, load_settings
from tests.query.conftest import day
from tests.server.live import ADMIN
from tests.server.tiny import MODEL, make_project

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROJECT = "pc"
CHECK_PASSWORD = "Check-0nly!"
LEASE_TTL_S = 10.0
# Each server's own Spark: small, one core (the test run's own session shares the two cores); every answer
# admitted to the result cache, so that the tests see what is cached.
SERVER_ENV = {
    "PRECUBE__SPARK__MASTER": "local[1]",
    "PRECUBE__SPARK__DRIVER_MEMORY": "1g",
    "PRECUBE__SPARK__SHUFFLE_PARTITIONS": "2",
    "PRECUBE__CACHE__MIN_DURATION_MS": "0",
    "PRECUBE__CACHE__MIN_SCANNED_ROWS": "0",
}


def need(service: str, err: Exception) -> None:
    """A service the cluster tests need is missing: skip, or in CI fail (./dev installs it)."""
    message = f"the cluster tests need {service}: {err}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class Cluster:
    dir: Path
    config: Path
    settings: Settings
    store: MetadataStore  # this process's view of the metadata (for checks)
    pg: Postgres
    redis: Redis
    redis_process: Process
    ports: list[int]
    servers: list[Process]
    balancer: Process
    balancer_url: str

    def url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.ports[i]}"

    def client(self, i: int | None = None, auth: tuple[str, str] = ADMIN) -> httpx.Client:
        """A client of server `i`, or of HAProxy when None."""
        return httpx.Client(base_url=self.url(i) if i is not None else self.balancer_url, auth=auth, timeout=120)

    def start(self, i: int) -> None:
        """(Re)start server `i` on its port (HAProxy knows it by the port)."""
        self.servers[i] = start_server(self.config, self.dir / f"server-{i}", self.ports[i], SERVER_ENV, f"server-{i}")

    def holder(self, project: str = PROJECT) -> int | None:
        """Which server holds the project's job lease (None: none of them)."""
        with self.store.read(project) as tx:
            lease = tx.get(JobLease, "scheduler")
        pids = [s.pid for s in self.servers]
        return pids.index(lease.pid) if lease is not None and lease.owner and lease.pid in pids else None

    def wait_balanced(self, up: set[str], timeout: float = 30) -> None:
        """Until HAProxy sees exactly the servers `up` (s1, s2) UP."""
        wait_balanced(self.dir, up, timeout)


@pytest.fixture(scope="module")
def cluster(spark: SparkSession, ssb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    directory = tmp_path_factory.mktemp("cluster")
    try:
        pg = Postgres.create()
    except ServiceError as err:
        need("PostgreSQL", err)
    started: list[Process] = []
    try:
        try:
            redis = Redis.create(directory / "redis")
            redis_process = redis.start()
        except ServiceError as err:
            need("redis-server", err)
        started.append(redis_process)
        config = write_private(directory / "precube.toml", config_text(directory, pg, redis, None, LEASE_TTL_S))
        settings = load_settings(config, home=directory / "test")
        store = open_store(settings.metadata_url, settings.metadata.table)
        directory_ = Directory(store, writer="test")
        directory_.add_user(ADMIN[0], ADMIN[1], [ROLE_ADMIN])
        directory_.add_user(CHECK_USER, CHECK_PASSWORD)
        make_project(settings, ssb_dir, PROJECT)
        ctx = BuildContext(spark, store, PROJECT, settings.warehouse_root, writer="test")
        build_segment(ctx, MODEL, TimeRange.of(day("1992-01-01"), day("1995-01-01")))
        ports = [free_port(), free_port()]
        servers = []
        for i, port in enumerate(ports):
            servers.append(start_server(config, directory / f"server-{i}", port, SERVER_ENV, f"server-{i}"))
            started.append(servers[-1])
        check = base64.b64encode(f"{CHECK_USER}:{CHECK_PASSWORD}".encode()).decode()
        try:
            balancer_port = free_port()
            balancer = start_haproxy(directory, balancer_port, ports, check)
        except ServiceError as err:
            need("HAProxy", err)
        started.append(balancer)
        found = Cluster(
            directory, config, settings, store, pg, redis, redis_process, ports, servers, balancer,
            f"http://127.0.0.1:{balancer_port}",
        )  # fmt: skip
        found.wait_balanced({"s1", "s2"})
        yield found
        started = [*found.servers, found.redis_process, found.balancer]
        store.close()
    finally:
        for process in reversed(started):
            process.stop()
        pg.remove()


def answer(client: httpx.Client, sql: str, project: str = PROJECT, **extra: Any) -> dict[str, Any]:
    """Kylin's answer to `sql` (the envelope checked)."""
    response = client.post("/kylin/api/query", json={"sql": sql, "project": project, **extra})
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()["data"]
    return found
