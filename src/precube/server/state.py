"""What one server process holds for its whole life: the settings, the metadata store, the directory of
users and ACLs, the result cache, the query history, the query service (one session per project, whose
layouts and plan cache stay warm) and the job service."""

from __future__ import annotations

import gc
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from precube.auth import Directory
from precube.auth.throttle import Throttle
from precube.metadata import MetadataStore, open_store
from precube.query.history import QueryHistory
from precube.server.signin import SignIn
from precube.service.admission import Limits
from precube.service.queries import QueryService
from precube.service.sessions import Sessions, open_cache
from precube.settings import Settings

if TYPE_CHECKING:
    from precube.cache import ResultCache

LOG = logging.getLogger("precube.server")


@dataclass
class ServerState:
    settings: Settings
    store: MetadataStore
    directory: Directory
    cache: ResultCache | None
    history: QueryHistory | None
    name: str  # host:port, the `server` field of query answers
    queries: QueryService
    signin: SignIn  # both doors' sign-in: throttled, its password checks bounded
    jobs: Any = None  # the job service, when this server runs jobs (set at start-up)
    _closing: threading.Event = field(default_factory=threading.Event)
    _warmer: threading.Thread | None = None

    @classmethod
    def open(cls, settings: Settings, name: str) -> ServerState:
        store = open_store(settings.metadata_url, settings.metadata.table)
        history = QueryHistory(settings.metadata_url, settings.metadata.table) if settings.query.history else None
        directory, cache = Directory(store, writer="server"), open_cache(settings)
        sessions = Sessions.serving(settings, store, history, cache)
        queries = QueryService(sessions, directory, Limits.of(settings.query))
        auth = settings.auth
        signin = SignIn(directory, Throttle(store, auth), auth.password_checks, auth.password_queue)
        return cls(settings, store, directory, cache, history, name, queries, signin)

    def start_warming(self) -> None:
        """Open every project's session in a background thread and offer its layouts to its engine's background
        loader (`Session.warm`: held in memory within the budget); queries are answered from the layouts' files
        meanwhile, never waiting for a copy."""
        self._warmer = threading.Thread(target=self._warm, name="precube-warm-layouts", daemon=True)
        self._warmer.start()

    def _warm(self) -> None:
        started = time.perf_counter()
        loaded = 0
        for project in self.store.list_projects():
            if self._closing.is_set():
                return
            try:
                loaded += self.queries.sessions.get(project.name).warm(self._closing.is_set)
            except Exception as err:  # noqa: BLE001 (warming is an optimisation: a query reports the failure itself)
                LOG.warning("warming the layouts of project %s failed: %s", project.name, err)
        LOG.info("loaded %d layouts in %.1f s", loaded, time.perf_counter() - started)
        freeze_heap()

    def close(self) -> None:
        self._closing.set()
        if self._warmer is not None:
            self._warmer.join(timeout=30)
        self.queries.close()
        self.signin.close()
        self.store.close()


def freeze_heap() -> None:
    """Move every object alive now (modules, the app, loaded sessions and plans) out of the garbage
    collector's reach. They live as long as the process, yet a full collection walks them all: at SF 1 one
    such walk paused the event loop for ~150 ms every few thousand requests, the whole p99 at concurrency 32.
    One collection first, so no garbage is frozen with them."""
    gc.collect()
    gc.freeze()
