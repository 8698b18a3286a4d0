"""The result cache: look up before planning, run identical queries once, keep after (`CachedSession` puts it
in front of a query session).

The hit path is the statement's token shape, the project's metadata read (a change-counter check), the
validity check and the entry's table: no parsing, planning or engine. A backend that fails is reported and
bypassed: the query still runs. Entries live in the scope of the session's metadata store and project.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from precube import metrics
from precube.cache.backend import CacheBackend, open_backend
from precube.cache.cached_result import CachedResult
from precube.cache.entry import Entry, ModelUse
from precube.cache.errors import CacheError, CacheUnavailableError
from precube.cache.keep_rules import refusal, scanned_rows
from precube.cache.key import CacheKey, cache_key, key_of_sql, scope_of
from precube.cache.single_flight import SingleFlight
from precube.cache.validity import model_uses, stale_reason
from precube.metadata.entity import now_ms
from precube.query.bounds import WHOLE, Window
from precube.query.cancel import Cancellation
from precube.query.plan_cache import Shape
from precube.query.project_metadata import ProjectMetadata
from precube.query.session import QueryResult, Session
from precube.settings import CacheSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheStats:
    """A project's counters (shared by every process of the backend) and what it holds now."""

    project: str
    backend: str
    hits: int
    misses: int
    stale: int  # hits dropped because a segment or the model changed
    waits: int  # queries that waited for an identical one
    stores: int
    skipped: int  # answers not kept (too large or too cheap)
    entries: int
    bytes: int

    def as_dict(self) -> dict[str, int | str]:
        return dict(self.__dict__)


class ResultCache:
    """Cached answers of queries, by metadata store and project, in one backend."""

    def __init__(self, backend: CacheBackend, settings: CacheSettings | None = None) -> None:
        self.backend = backend
        self.settings = settings or CacheSettings()
        self.single_flight = SingleFlight(backend, self.settings.flight_expiry_s, self.settings.flight_wait_s)

    @classmethod
    def open(cls, settings: CacheSettings) -> ResultCache:
        return cls(open_backend(settings.url, settings), settings)

    def close(self) -> None:
        self.backend.close()

    def answer(
        self,
        session: Session,
        sql: str,
        shape: Shape,
        pushdown: bool | None,
        run: Callable[[ProjectMetadata], QueryResult],
        access: str = "",
        window: Window = WHOLE,
        cancel: Cancellation | None = None,
    ) -> QueryResult:
        """The cached answer of `sql` (whose token shape is `shape`) in `session`'s store and project, or the
        answer `run` computes on the project's metadata (once for identical concurrent queries, whose waiters get
        it, or its error, even when it is not kept). `window`: the rows asked for, kept apart from the whole answer.
        A wait for that run ends at the statement's deadline or cancel (`cancel`)."""
        started = time.perf_counter()
        project = session.project
        key = cache_key(session.store.identity, project, shape, access=access, window=window)
        ran: list[QueryResult] = []

        def compute() -> tuple[QueryResult, bool]:
            metadata = session.metadata.get(project)  # the answer is computed on it: the entry is dated by it
            ran.append(run(metadata))
            return ran[0], self._keep(key, sql, metadata, ran[0])

        def take(entry: Entry) -> QueryResult:
            return _result(entry, started, from_cache=False)  # computed just now by the run it waited on

        try:
            hit = self._lookup(key, session.metadata.get(project), pushdown, started)
            if hit is not None:
                return hit
            metrics.CACHE_MISS.inc()  # counted even when the backend's own counter cannot be reached
            self.backend.count(key.scope, "misses")
            if not self.settings.single_flight:
                return compute()[0]
            # identical queries that may get different answers (pushdown allowed or not) fly apart
            flying = CacheKey(key.scope, f"{key.digest}.{pushdown}")
            flown = self.single_flight.run(
                flying,
                lambda: self._lookup(key, session.metadata.get(project), pushdown, started),
                compute,
                _entry,
                take,
                cancel,
            )
            if flown.waited:
                self._count(key.scope, "waits")
            return flown.value
        except CacheError as err:
            _bypassed("query cache bypassed: %s", err)
            return ran[0] if ran else run(session.metadata.get(project))

    def cached(
        self, session: Session, shape: Shape, pushdown: bool | None, access: str = "", window: Window = WHOLE
    ) -> QueryResult | None:
        """The answer of the statement whose token shape is `shape` when this process's memory holds a valid
        one and telling so needs no I/O: an in-process backend, and a recent reading of the metadata's change
        counter (`MetadataReader.known`). A server answers such hits on its event loop; None sends the query on
        to `answer` (which counts the miss)."""
        if not self.backend.in_process:
            return None
        metadata = session.metadata.known(session.project)
        if metadata is None:
            return None
        started = time.perf_counter()
        key = cache_key(session.store.identity, session.project, shape, access=access, window=window)
        return self._lookup(key, metadata, pushdown, started)

    def _lookup(
        self, key: CacheKey, metadata: ProjectMetadata, pushdown: bool | None, started: float
    ) -> QueryResult | None:
        entry = self.backend.get(key)
        if entry is None or (entry.pushdown and pushdown is False):
            return None
        why = stale_reason(entry, metadata)
        if why is not None:
            log.debug("cache entry %s dropped: %s", key, why)
            self.backend.delete(key)
            self.backend.count(key.scope, "stale")
            return None
        self.backend.count(key.scope, "hits")
        metrics.CACHE_HIT.inc()
        return _result(entry, started)

    def _keep(self, key: CacheKey, sql: str, metadata: ProjectMetadata, result: QueryResult) -> bool:
        """Keep `result` if the keep rules allow; whether it was kept. A backend failure only loses the entry."""
        why = refusal(result, self.settings)
        plan = result.plan
        uses = None
        if why is None and plan is not None:
            matched = [(i, m) for i, c in enumerate(plan.contexts) if (m := c.match or c.snapshot) is not None]
            uses = model_uses(sql, [] if result.pushdown else matched, metadata, plan.probes, result.params)
            why = "a model it used is not in the project's metadata" if uses is None else None
        if why is not None or uses is None:
            log.debug("not cached: %s", why)
            self._count(key.scope, "skipped")
            return False
        try:
            self.backend.put(key, _entry(result, metadata.version, uses), self.settings.ttl_s)
        except CacheError as err:
            _bypassed("query answer not cached: %s", err)
            return False
        self._count(key.scope, "stores")
        return True

    def _count(self, scope: str, stat: str) -> None:
        try:
            self.backend.count(scope, stat)
        except CacheError as err:
            _bypassed("query cache counter lost: %s", err)

    def clear(self, project: str, sql: str | None = None, *, store: str) -> int:
        """Drop the entries of `project` of the store whose identity is `store`, or only the entry of `sql`;
        how many were dropped."""
        if sql is None:
            return self.backend.clear(scope_of(store, project))
        key = key_of_sql(store, project, sql)
        return int(key is not None and self.backend.delete(key))

    def stats(self, project: str, *, store: str) -> CacheStats:
        """The counters and contents of `project` of the store whose identity is `store`."""
        scope = scope_of(store, project)
        counted = self.backend.stats(scope)
        entries, size = self.backend.size(scope)
        return CacheStats(
            project,
            self.backend.name,
            counted["hits"],
            counted["misses"],
            counted["stale"],
            counted["waits"],
            counted["stores"],
            counted["skipped"],
            entries,
            size,
        )


def _bypassed(message: str, err: CacheError) -> None:
    """Log a failed cache call: a warning, unless the backend is down, which it has said once already."""
    log.log(logging.DEBUG if isinstance(err, CacheUnavailableError) else logging.WARNING, message, err)


def _entry(result: QueryResult, version: int = 0, uses: tuple[ModelUse, ...] = ()) -> Entry:
    """`result` as an entry (for the cache, dated by the project's metadata `version`; else for waiters)."""
    return Entry(
        table=result.table,
        cached_ms=now_ms(),
        snapshot_version=version,
        models=uses,
        engine=result.engine,
        duration_ms=result.duration_ms,
        scanned_rows=scanned_rows(result),
        pushdown=result.pushdown,
        model=result.model,
        layout_ids=tuple(result.layout_ids),
        segments=tuple(result.segments),
        pushdown_reason=result.pushdown_reason,
        partial=result.partial,
    )


def _result(entry: Entry, started: float, from_cache: bool = True) -> CachedResult:
    return CachedResult(
        entry.table,
        None,
        entry.engine,
        (time.perf_counter() - started) * 1000,
        from_cache=from_cache,
        answered_pushdown=entry.pushdown,
        answered_model=entry.model,
        answered_layouts=entry.layout_ids,
        answered_segments=entry.segments,
        answered_reason=entry.pushdown_reason,
        cached_ms=entry.cached_ms,
        partial=entry.partial,
    )
