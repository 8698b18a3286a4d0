"""Fixtures of the server tests: one SSB project built once (two segments, the query tests' model) and
one real server on loopback over it, shared by the whole run. Tests that change metadata make their own
projects or models, so the shared ones stay as built."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import Project, SourceType, TimeRange, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.settings import Settings, load_settings
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from tests.query.conftest import MODEL, PROJECT, SEGMENT_BOUNDS, SPEC, day
from tests.query.oracle import Oracle
from tests.server.live import ADMIN, LiveServer, free_port

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class ServerHome:
    settings: Settings
    project: str
    model: str
    ssb_dir: Path


def server_settings(home: Path, **extra: Any) -> Settings:
    return load_settings(
        home=home,
        spark={"master": "local[2]", "shuffle_partitions": 2, "driver_memory": "2g"},
        server={"admin_password": ADMIN[1]},
        **extra,
    )


@pytest.fixture(scope="session")
def server_home(spark: SparkSession, ssb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> ServerHome:
    """Project `ssb` with the SSB tables and model `ssb` built into two segments."""
    settings = server_settings(tmp_path_factory.mktemp("server-home"))
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        store.create_project(Project(name=PROJECT, default_database="SSB"))
        for name in TABLES:
            load_file_table(store, PROJECT, ssb_dir / name, SourceType.PARQUET)
        create_model(store, PROJECT, parse_spec(SPEC))
        ctx = BuildContext(spark, store, PROJECT, settings.warehouse_root, writer="test")
        for start, end in itertools.pairwise(SEGMENT_BOUNDS):
            build_segment(ctx, MODEL, TimeRange.of(day(start), day(end)))
    return ServerHome(settings, PROJECT, MODEL, ssb_dir)


@pytest.fixture(scope="session")
def oracle(server_home: ServerHome) -> Iterator[Oracle]:
    """DuckDB over the raw SSB files of the shared project: the answers the server's must equal."""
    found = Oracle(server_home.ssb_dir)
    yield found
    found.close()


@pytest.fixture(scope="session")
def live(server_home: ServerHome) -> Iterator[LiveServer]:
    """The shared server (it runs jobs, on the test run's Spark session), with the Postgres wire protocol and
    Arrow Flight SQL."""
    settings = server_home.settings.model_copy(deep=True)
    settings.server.pg_port = free_port()
    settings.server.flight_port = free_port()
    server = LiveServer(settings)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def warm_live(live: LiveServer) -> LiveServer:
    """The shared server once it has preloaded its layouts: a first query answered while
    `precube-warm-layouts` loaded one once hung in DuckDB's Arrow export (the engine's, not a client's)."""
    live.wait_warm()
    return live


@pytest.fixture
def admin(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client() as client:
        yield client


def data(response: httpx.Response, status: int = 200) -> Any:
    """The `data` of a Kylin envelope, after checking the status and the envelope's code."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == ("000" if status < 400 else "999"), body
    return body["data"]


def error(response: httpx.Response, status: int) -> str:
    """The one-line `msg` of a failed request, after checking its status and envelope (Kylin 5's `ErrorResponse`
    fields: `exception` repeats `msg`, `url` is the request's without its query, no stack trace)."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == "999" and body["data"] is None, body
    assert body["msg"] and "\n" not in body["msg"] and "Traceback" not in body["msg"], body
    assert body["exception"] == body["msg"] and body["stacktrace"] is None and "suggestion" in body, body
    assert body["url"] == str(response.request.url.copy_with(query=None)), body
    return str(body["msg"])


def fingerprint(settings: Settings) -> str:
    """A hash of every metadata document (key and content) and every warehouse file (path and size): equal
    before and after a refused request means it changed nothing."""
    import hashlib

    digest = hashlib.sha256()
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        for doc in store.scan("/"):
            if "/job_lease/" in doc.key:  # the job service's heartbeat rewrites it every few seconds
                continue
            digest.update(doc.key.encode() + b"\0" + doc.content + b"\0")
    root = Path(settings.warehouse_root)
    if root.exists():
        for path in sorted(root.rglob("*")):
            size = path.stat().st_size if path.is_file() else -1
            digest.update(f"{path.relative_to(root)}\0{size}\0".encode())
    return digest.hexdigest()
