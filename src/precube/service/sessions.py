"""The query sessions statements run on: one per project, opened on first use, behind the result cache when
it is enabled. `session_on` is also what `precube.connect` opens."""

from __future__ import annotations

import getpass
import threading
from collections.abc import Callable

from precube.cache import CachedSession, ResultCache
from precube.errors import InvalidInputError
from precube.metadata import MetadataStore
from precube.query.history import QueryHistory
from precube.query.session import Session
from precube.settings import Settings


def session_on(
    settings: Settings,
    store: MetadataStore,
    project: str,
    *,
    history: QueryHistory | None,
    cache: ResultCache | None,
    engine: str | None = None,
    user: str | None = None,
) -> Session | CachedSession:
    """A session over `project` on an open store (Spark started only if a statement asks for it)."""

    def spark():  # type: ignore[no-untyped-def]
        from precube.spark_session import spark_session

        return spark_session(settings)

    session = Session(
        store,
        project,
        settings.warehouse_root,
        engine=engine or settings.query.engine,
        spark=spark,
        history=history,
        user=user or getpass.getuser(),
        settings=settings.query,
        processes=settings.server.workers,  # the memory bound's share of the machine
    )
    return session if cache is None else CachedSession(session, cache)


def open_cache(settings: Settings) -> ResultCache | None:
    """The result cache the settings describe (None when `cache.enabled` is false)."""
    return ResultCache.open(settings.cache) if settings.cache.enabled else None


class Sessions:
    """Each project's session, made by `make` on first use (the project must exist), kept warm for the
    process's life."""

    def __init__(self, store: MetadataStore, make: Callable[[str], Session | CachedSession]) -> None:
        self.store, self._make = store, make
        self._open: dict[str, Session | CachedSession] = {}
        self._lock = threading.Lock()

    @classmethod
    def serving(
        cls, settings: Settings, store: MetadataStore, history: QueryHistory | None, cache: ResultCache | None
    ) -> Sessions:
        """A server's sessions: every project of `store`, sharing its history and result cache."""
        return cls(store, lambda p: session_on(settings, store, p, history=history, cache=cache, user="server"))

    @classmethod
    def of(cls, session: Session | CachedSession) -> Sessions:
        """The one session given (an embedded caller's: `precube.connect`'s or the in-process DB-API's)."""

        def elsewhere(project: str) -> Session | CachedSession:
            raise InvalidInputError(f"this connection is to project {session.project}, not {project}")

        found = cls(session.store, elsewhere)
        found._open[session.project] = session
        return found

    def get(self, project: str) -> Session | CachedSession:
        found = self._open.get(project)
        if found is not None:
            return found
        with self._lock:
            found = self._open.get(project)
            if found is None:
                self.store.require_project(project)
                found = self._make(project)
                self._open[project] = found
            return found

    def opened(self, project: str) -> Session | CachedSession | None:
        """The project's session if one is open (no I/O)."""
        return self._open.get(project)

    def forget(self, project: str) -> None:
        """Drop a project's session (the project was deleted)."""
        with self._lock:
            self._open.pop(project, None)
