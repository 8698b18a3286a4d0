"""Fixtures of the result-cache tests: a real Redis server on a free loopback port, a cache on either backend,
and a small SSB model of the cache's own (built by Spark) for the tests that build, refresh and merge."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from precube.cache import CachedSession, ResultCache, open_backend
from precube.cache.memory import MemoryBackend
from precube.metadata import MetadataStore, Project, SourceType, TimeRange, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.query.session import Session
from precube.settings import CacheSettings
from precube.sources.tables import load_file_table
from tests.query.conftest import day

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from precube.engine.context import BuildContext

# Every answer admitted: the tests decide what is cached by the thresholds they set themselves.
ADMIT_ALL = {"min_duration_ms": 0.0, "min_scanned_rows": 0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(port: int) -> subprocess.Popen[bytes]:
    """A throwaway redis-server on loopback `port` (nothing saved), answering when this returns; skips (in CI:
    fails) when redis-server is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = "the Redis cache tests need redis-server (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Redis tests: {message}")
        pytest.skip(message)
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    import redis

    client = redis.Redis.from_url(f"redis://127.0.0.1:{port}/0")
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    client.close()
    return proc


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """A throwaway redis-server on loopback; its URL."""
    port = _free_port()
    proc = start_redis(port)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """The server, emptied for this test."""
    import redis

    with redis.Redis.from_url(redis_server) as client:
        client.flushdb()
    return redis_server


@pytest.fixture(params=["memory", "redis"])
def backend_url(request: pytest.FixtureRequest) -> str:
    return "memory" if request.param == "memory" else str(request.getfixturevalue("redis_url"))


MakeCache = Callable[..., ResultCache]


@pytest.fixture
def make_cache(backend_url: str) -> Iterator[MakeCache]:
    """Caches on the test's backend; settings admit every answer unless overridden. Each test has a memory
    backend of its own (the process's shared one would carry answers and counters from test to test)."""
    made: list[ResultCache] = []
    private = MemoryBackend()

    def make(**settings: Any) -> ResultCache:
        config = CacheSettings(url=backend_url, **{**ADMIT_ALL, **settings})
        backend = private if config.url == "memory" else open_backend(config.url, config)
        cache = ResultCache(backend, config)
        made.append(cache)
        return cache

    yield make
    for cache in made:
        cache.close()


# --- a model of the cache tests' own, which they build, refresh and merge --------------------------------

CACHE_PROJECT = "cache"
CACHE_MODEL = "orders"
SPEC: dict[str, Any] = {
    "alias": CACHE_MODEL,
    "fact_table": "SSB.LINEORDER",
    "partition_desc": {"partition_date_column": "LINEORDER.LO_ORDERDATE", "partition_date_format": "yyyy-MM-dd"},
    "simplified_dimensions": ["LINEORDER.LO_ORDERDATE", "LINEORDER.LO_DISCOUNT", "LINEORDER.LO_SHIPMODE"],
    "simplified_measures": [
        {"name": "COUNT_ALL", "expression": "COUNT"},
        {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
    ],
    "aggregation_groups": [
        {
            "includes": ["LO_ORDERDATE", "LO_DISCOUNT", "LO_SHIPMODE"],
            "measures": ["COUNT_ALL", "REVENUE"],
            "select_rule": {"joint_dims": [["LO_ORDERDATE", "LO_DISCOUNT", "LO_SHIPMODE"]]},
        }
    ],
}
# [1992-01-01, 1995-01-01) and [1995-01-01, 1998-08-01): the last days of the SSB orders are left to be built
FIRST, SECOND = (day("1992-01-01"), day("1995-01-01")), (day("1995-01-01"), day("1998-08-01"))


@dataclass
class CacheModel:
    store: MetadataStore
    warehouse: str
    ctx: BuildContext

    def session(self, cache: ResultCache | None) -> Session | CachedSession:
        session = Session(self.store, CACHE_PROJECT, self.warehouse)
        return session if cache is None else CachedSession(session, cache)

    def cached(self, cache: ResultCache) -> CachedSession:
        return CachedSession(Session(self.store, CACHE_PROJECT, self.warehouse), cache)

    @property
    def meta_url(self) -> str:
        return str(self.store.url)


@pytest.fixture(scope="module")
def cache_model(spark: SparkSession, ssb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CacheModel]:
    """LINEORDER alone with one small layout, built into two segments (per test module: some change it)."""
    from precube.engine.context import BuildContext
    from precube.engine.operations import build_segment

    root = tmp_path_factory.mktemp("cache-model")
    with open_store(f"sqlite:///{root / 'meta.db'}") as store:
        store.create_project(Project(name=CACHE_PROJECT, default_database="SSB"))
        load_file_table(store, CACHE_PROJECT, ssb_dir / "LINEORDER", SourceType.PARQUET)
        create_model(store, CACHE_PROJECT, parse_spec(SPEC))
        ctx = BuildContext(spark, store, CACHE_PROJECT, str(root / "warehouse"), writer="test")
        for start, end in (FIRST, SECOND):
            build_segment(ctx, CACHE_MODEL, TimeRange.of(start, end))
        yield CacheModel(store, str(root / "warehouse"), ctx)
