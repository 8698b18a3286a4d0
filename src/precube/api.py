"""The Python API: `precube.connect(project)` opens a query session on the settings' metadata and
warehouse (the same ones the CLI uses), with Spark started only if a query asks for it, behind the result
cache when it is enabled."""

from __future__ import annotations

from pathlib import Path

from precube.cache import CachedSession, ResultCache
from precube.metadata import open_store
from precube.query.history import QueryHistory
from precube.query.session import Session
from precube.service.sessions import open_cache, session_on
from precube.settings import Settings, load_settings

__all__ = ["connect", "open_cache", "session_on"]


def connect(
    project: str,
    *,
    home: str | Path | None = None,
    config: str | Path | None = None,
    engine: str | None = None,
    settings: Settings | None = None,
    user: str | None = None,
    cache: ResultCache | None = None,
) -> Session | CachedSession:
    """A session over `project`: `session.sql(...)` returns a result with `.table` (Arrow) and
    `.to_pandas()` (`.pushdown_reason` says why the source tables answered; `.from_cache` tells a result-cache
    answer; `sql(..., no_cache=True)` skips the cache); `session.explain(...)` tells how a query would be
    answered. The result cache is `cache`, else the settings' (`[cache]`): the session is then a
    `CachedSession`, whose `session.cache.stats()` and `session.cache.clear(sql=None)` operate it."""
    if settings is None:
        overrides = {"home": Path(home)} if home is not None else {}
        settings = load_settings(Path(config) if config is not None else None, **overrides)
    store = open_store(settings.metadata_url, settings.metadata.table)
    history = QueryHistory(settings.metadata_url, settings.metadata.table) if settings.query.history else None
    cache = cache if cache is not None else open_cache(settings)
    return session_on(settings, store, project, history=history, cache=cache, engine=engine, user=user)
