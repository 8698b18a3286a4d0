"""A query session with the result cache in front (DESIGN §7): the cache wraps the session from above, so
the query package knows nothing of it.

`CachedSession` has the session's API (`sql`, `explain`, `plan`, `close`, a context manager, and its parts by
name: `project`, `store`, `metadata`, `history`, …; `.session` is the wrapped session). `sql` answers from the
cache, or runs the session on the metadata read the answer is dated by (once for identical concurrent queries)
and keeps its answer if the keep rules allow (`keep_rules`). `.cache` is the cache as this session sees it:
`stats()` and `clear(sql=None)` of its store's project.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from precube.cache.backend import CacheBackend
from precube.cache.cached_result import CachedResult
from precube.cache.result_cache import CacheStats, ResultCache
from precube.metadata import MetadataStore
from precube.metadata.entity import now_ms
from precube.query.bounds import WHOLE, Window
from precube.query.cancel import Cancellation
from precube.query.catalog import CatalogAnswers
from precube.query.duckdb_engine import DuckDBEngine
from precube.query.explain import Explanation
from precube.query.history import QueryHistory
from precube.query.plan_cache import Shape
from precube.query.project_metadata import MetadataReader, ProjectMetadata
from precube.query.session import Admit, Plan, QueryResult, Session
from precube.settings import CacheSettings, QuerySettings


class SessionCache:
    """The result cache scoped to one session's metadata store (and, by default, its project)."""

    def __init__(self, cache: ResultCache, session: Session) -> None:
        self.result_cache = cache
        self._session = session

    @property
    def backend(self) -> CacheBackend:
        return self.result_cache.backend

    @property
    def settings(self) -> CacheSettings:
        return self.result_cache.settings

    def stats(self, project: str | None = None) -> CacheStats:
        return self.result_cache.stats(project or self._session.project, store=self._session.store.identity)

    def clear(self, project: str | None = None, sql: str | None = None) -> int:
        """Drop the project's entries, or only the entry of `sql` (any spelling); how many were dropped."""
        return self.result_cache.clear(project or self._session.project, sql, store=self._session.store.identity)


class CachedSession:
    """`session` answered through `cache`."""

    def __init__(self, session: Session, cache: ResultCache) -> None:
        self.session = session
        self.cache = SessionCache(cache, session)

    # the wrapped session's parts, named (a proxy of every attribute would type them all `Any`)
    @property
    def project(self) -> str:
        return self.session.project

    @property
    def store(self) -> MetadataStore:
        return self.session.store

    @property
    def metadata(self) -> MetadataReader:
        return self.session.metadata

    @property
    def history(self) -> QueryHistory | None:
        return self.session.history

    @property
    def user(self) -> str:
        return self.session.user

    @property
    def settings(self) -> QuerySettings:
        return self.session.settings

    @property
    def engine(self) -> str:
        return self.session.engine

    @property
    def duckdb(self) -> DuckDBEngine:
        return self.session.duckdb

    @property
    def catalog(self) -> CatalogAnswers:
        return self.session.catalog

    def warm(self, stop: Callable[[], bool] = lambda: False) -> int:
        return self.session.warm(stop)

    def hold(self, sql: str) -> int:
        return self.session.hold(sql)

    def shape_of(self, sql: str) -> Shape | None:
        return self.session.shape_of(sql)

    def sql(
        self,
        sql: str,
        *,
        engine: str | None = None,
        pushdown: bool | None = None,
        force_pushdown: bool = False,
        no_cache: bool = False,
        user: str | None = None,
        cancel: Cancellation | None = None,
        access: str = "",
        admit: Admit | None = None,
        window: Window = WHOLE,
        metadata: ProjectMetadata | None = None,
    ) -> QueryResult:
        """As `Session.sql`, from the cache when it holds the answer (kept per `access`, the digest of what about
        the caller can change it); `no_cache` and `force_pushdown` neither read nor store it. Only a run on the
        engine is admitted (`admit`): a hit, or a wait for an identical statement's answer, takes no slot.
        `metadata`: the project's metadata to plan on when the cache is not read (`Session.sql`'s)."""
        session = self.session
        cancel = Cancellation.of(cancel, session.settings.timeout_s)  # the deadline holds from here (`Session.sql`)
        shape = session.shape_of(sql)  # tokenized once: the result cache's key and the plan cache's

        def run(read: ProjectMetadata | None = metadata) -> QueryResult:
            return session.sql(
                sql,
                engine=engine,
                pushdown=pushdown,
                force_pushdown=force_pushdown,
                shape=shape,
                metadata=read,
                user=user,
                cancel=cancel,
                access=access,
                admit=admit,
                window=window,
            )

        # a catalog statement's answer follows the metadata, which the cache's validity does not watch
        if no_cache or force_pushdown or shape is None or session.catalog.may_answer(sql):
            return run()
        started, start_ms = time.perf_counter(), now_ms()
        result = self.cache.result_cache.answer(session, sql, shape, pushdown, run, access, window, cancel)
        if isinstance(result, CachedResult):  # a hit, or the answer of the identical query it waited on
            session.record_answer(sql, start_ms, started, result, user=user)
        return result

    def cached(
        self,
        sql: str,
        *,
        pushdown: bool | None = None,
        force_pushdown: bool = False,
        no_cache: bool = False,
        user: str | None = None,
        access: str = "",
        window: Window = WHOLE,
    ) -> QueryResult | None:
        """`sql`'s answer when the cache holds it in this process's memory and checking it needs no I/O
        (`ResultCache.cached`), recorded in the history as `sql` records a hit; else None."""
        if no_cache or force_pushdown or not self.cache.backend.in_process:  # before tokenizing: no hit is possible
            return None
        session = self.session
        shape = session.shape_of(sql)
        if shape is None:
            return None
        started, start_ms = time.perf_counter(), now_ms()
        result = self.cache.result_cache.cached(session, shape, pushdown, access, window)
        if result is not None:
            session.record_answer(sql, start_ms, started, result, user=user)
        return result

    def explain(
        self, sql: str, *, engine: str | None = None, pushdown: bool | None = None, force_pushdown: bool = False
    ) -> Explanation:
        return self.session.explain(sql, engine=engine, pushdown=pushdown, force_pushdown=force_pushdown)

    def plan(self, sql: str, *, pushdown: bool | None = None, force_pushdown: bool = False) -> Plan:
        return self.session.plan(sql, pushdown=pushdown, force_pushdown=force_pushdown)

    def close(self) -> None:
        self.session.close()
        self.cache.result_cache.close()

    def __enter__(self) -> CachedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
