"""A tiny project whose slow statements are real DuckDB cross joins of a small table (pushed down: the project
has no model), and query services over it with given `[query]` settings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import duckdb
import pytest

from precube.cache import CachedSession, ResultCache
from precube.cache.memory import MemoryBackend
from precube.metadata import MetadataStore, Project, SourceType, open_store
from precube.query.session import Session
from precube.service.admission import Limits
from precube.service.queries import QueryService
from precube.service.sessions import Sessions
from precube.settings import QuerySettings
from precube.sources.tables import load_file_table

ROWS = 3000
SLOW = "select sum(a.x + b.x * c.x) s from tiny.t a, tiny.t b, tiny.t c"  # 2.7e10 rows: many seconds
CHEAP = "select count(*) n from tiny.t"


@pytest.fixture
def tiny(tmp_path: Path) -> Iterator[MetadataStore]:
    """Project `tiny` with one Parquet table `tiny.t` of ROWS rows, and no model: every statement is pushed down."""
    folder = tmp_path / "t"
    folder.mkdir()
    duckdb.sql(f"copy (select range::integer x from range({ROWS})) to '{folder}/part-0.parquet'")
    store = open_store(f"sqlite:///{tmp_path / 'metadata.db'}")
    store.create_project(Project(name="tiny", default_database="TINY"))
    load_file_table(store, "tiny", folder, SourceType.PARQUET)
    yield store
    store.close()


ServiceOf = Callable[..., QueryService]


@pytest.fixture
def service_of(tiny: MetadataStore, tmp_path: Path) -> Iterator[ServiceOf]:
    """A factory of query services over `tiny` with the given `[query]` settings (`timeout_s` 60 unless given;
    `cached`: behind an in-memory result cache, single flight on), all closed at the end."""
    with ExitStack() as stack:

        def make(cached: bool = False, **limits: Any) -> QueryService:
            settings = QuerySettings(**{"timeout_s": 60, **limits})
            session: Session | CachedSession = Session(
                tiny, "tiny", str(tmp_path / "warehouse"), history=None, settings=settings
            )
            if cached:
                session = CachedSession(session, ResultCache(MemoryBackend()))
            stack.callback(session.close)
            service = QueryService(Sessions.of(session), None, Limits.of(settings))
            stack.callback(service.close)
            return service

        yield make
