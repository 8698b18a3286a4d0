"""The Python API: `precube.connect(project)` opens a query session on the settings' metadata and
warehouse (the same ones the CLI uses), with Spark started only if a query asks for it."""

from __future__ import annotations

import getpass
from pathlib import Path

from precube.metadata import open_store
from precube.query.history import QueryHistory
from precube.query.session import Session
from precube.settings import Settings, load_settings


def connect(
    project: str,
    *,
    home: str | Path | None = None,
    config: str | Path | None = None,
    engine: str | None = None,
    settings: Settings | None = None,
    user: str | None = None,
) -> Session:
    """A `Session` over `project`: `session.sql(...)` returns a result with `.table` (Arrow) and
    `.to_pandas()`; `session.explain(...)` tells how a query would be answered."""
    if settings is None:
        overrides = {"home": Path(home)} if home is not None else {}
        settings = load_settings(Path(config) if config is not None else None, **overrides)
    store = open_store(settings.metadata_url, settings.metadata.table)
    history = QueryHistory(settings.metadata_url, settings.metadata.table) if settings.query.history else None
    resolved = settings

    def spark():  # type: ignore[no-untyped-def]
        from precube.spark_session import spark_session

        return spark_session(resolved)

    return Session(
        store,
        project,
        settings.warehouse_root,
        engine=engine or settings.query.engine,
        spark=spark,
        history=history,
        user=user or getpass.getuser(),
    )
