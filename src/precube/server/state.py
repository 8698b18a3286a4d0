"""What one server process holds for its whole life: the settings, the metadata store, the directory of
users and ACLs, the result cache, the query history, one query session per project (its layouts and plan
cache stay warm), and the job service."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from precube.api import open_cache, session_on
from precube.auth import Directory
from precube.cache import CachedSession, ResultCache
from precube.metadata import MetadataStore, open_store
from precube.query.history import QueryHistory
from precube.query.session import Session
from precube.settings import Settings


@dataclass
class ServerState:
    settings: Settings
    store: MetadataStore
    directory: Directory
    cache: ResultCache | None
    history: QueryHistory | None
    name: str  # host:port, the `server` field of query answers
    jobs: Any = None  # the job service, when this server runs jobs (set at start-up)
    _sessions: dict[str, Session | CachedSession] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, settings: Settings, name: str) -> ServerState:
        store = open_store(settings.metadata_url, settings.metadata.table)
        history = QueryHistory(settings.metadata_url, settings.metadata.table) if settings.query.history else None
        return cls(settings, store, Directory(store, writer="server"), open_cache(settings), history, name)

    def session(self, project: str) -> Session | CachedSession:
        """The project's query session, made on first use (the project must exist)."""
        found = self._sessions.get(project)
        if found is not None:
            return found
        with self._lock:
            found = self._sessions.get(project)
            if found is None:
                self.store.require_project(project)
                found = session_on(
                    self.settings, self.store, project, history=self.history, cache=self.cache, user="server"
                )
                self._sessions[project] = found
            return found

    def forget_session(self, project: str) -> None:
        """Drop a project's session (the project was deleted)."""
        with self._lock:
            self._sessions.pop(project, None)

    def close(self) -> None:
        self.store.close()
