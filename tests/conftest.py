"""Shared fixtures: metadata stores on SQLite and PostgreSQL, one local Spark session, SSB data."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from precube.metadata import MetadataStore, open_store
from precube.settings import Settings, load_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POSTGRES_ENV = "PRECUBE_TEST_POSTGRES_URL"


def postgres_url() -> str:
    """The test PostgreSQL URL; skips (or, in CI, fails) when none is configured."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        message = f"PostgreSQL store tests need {POSTGRES_ENV} (./dev test starts a server when one is installed)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the PostgreSQL tests: {message}")
        pytest.skip(message)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'meta.db'}"
    return postgres_url()


@pytest.fixture
def store(store_url: str) -> Iterator[MetadataStore]:
    """A store in its own tables, so PostgreSQL tests do not see each other's documents."""
    table = f"t_{uuid.uuid4().hex[:12]}"
    s = open_store(store_url, table=table)
    yield s
    if store_url.startswith("postgres"):
        from sqlalchemy import text

        engine = s.backend._engine  # type: ignore[attr-defined]
        with engine.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {table}_audit_log, {table}"))
    s.close()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(home=tmp_path / "home", spark={"master": "local[2]", "shuffle_partitions": 2})


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> SparkSession:
    """One local Spark session for the whole run (starting one costs ~8 s)."""
    from precube.spark_session import spark_session

    home = tmp_path_factory.mktemp("spark-home")
    s = load_settings(home=home, spark={"master": "local[2]", "shuffle_partitions": 2, "driver_memory": "2g"})
    return spark_session(s)


@pytest.fixture(scope="session")
def ssb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SSB data at scale 0.01, generated once per run."""
    from precube.ssb.generate import generate

    out = tmp_path_factory.mktemp("ssb")
    generate(0.01, out, seed=7)
    return out
