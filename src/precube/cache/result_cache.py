"""The result cache a query session owns: look up before planning, run identical queries once, admit after.

The hit path is the statement's token shape, the project's metadata snapshot (a change-counter check), the
validity check and the entry's table: no parsing, planning or engine. A backend that fails is reported and
bypassed: the query still runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from precube.cache.admission import refusal, scanned_rows
from precube.cache.backend import CacheBackend, open_backend
from precube.cache.entry import Entry
from precube.cache.errors import CacheError
from precube.cache.flight import Flight
from precube.cache.key import CacheKey, cache_key, key_of_sql
from precube.cache.validity import model_uses, stale_reason
from precube.metadata.entity import now_ms
from precube.query.plan_cache import Shape
from precube.query.session import Answered, QueryResult
from precube.query.snapshot import ProjectSnapshot
from precube.settings import CacheSettings

if TYPE_CHECKING:
    from precube.query.session import Session

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
    skipped: int  # answers not admitted
    entries: int
    bytes: int

    def as_dict(self) -> dict[str, int | str]:
        return dict(self.__dict__)


class ResultCache:
    """Cached answers of queries, by project, in one backend."""

    def __init__(self, backend: CacheBackend, settings: CacheSettings | None = None) -> None:
        self.backend = backend
        self.settings = settings or CacheSettings()
        self.flight = Flight(backend, self.settings.flight_expiry_s, self.settings.flight_wait_s)

    @classmethod
    def open(cls, settings: CacheSettings) -> ResultCache:
        return cls(open_backend(settings.url, settings.memory_mb), settings)

    def close(self) -> None:
        self.backend.close()

    def answer(
        self,
        session: Session,
        sql: str,
        shape: Shape,
        pushdown: bool | None,
        run: Callable[[ProjectSnapshot], QueryResult],
    ) -> QueryResult:
        """The cached answer of `sql` (whose token shape is `shape`), or the answer `run` computes on a metadata
        snapshot (once for identical concurrent queries), admitted after."""
        started = time.perf_counter()
        project = session.project
        key = cache_key(project, shape)
        ran: list[QueryResult] = []

        def compute() -> tuple[QueryResult, bool]:
            snapshot = session.snapshots.get(project)  # the answer is computed on it: the entry is dated by it
            ran.append(run(snapshot))
            return ran[0], self._admit(key, sql, snapshot, ran[0])

        try:
            hit = self._lookup(key, session.snapshots.get(project), pushdown, started)
            if hit is not None:
                return hit
            self.backend.count(project, "misses")
            if not self.settings.single_flight:
                return compute()[0]
            flown = self.flight.run(
                key, lambda: self._lookup(key, session.snapshots.get(project), pushdown, started), compute
            )
            if flown.waited:
                self.backend.count(project, "waits")
            return flown.value
        except CacheError as err:
            log.warning("query cache bypassed: %s", err)
            return ran[0] if ran else run(session.snapshots.get(project))

    def _lookup(
        self, key: CacheKey, snapshot: ProjectSnapshot, pushdown: bool | None, started: float
    ) -> QueryResult | None:
        entry = self.backend.get(key)
        if entry is None or (entry.pushdown and pushdown is False):
            return None
        why = stale_reason(entry, snapshot)
        if why is not None:
            log.debug("cache entry %s dropped: %s", key, why)
            self.backend.delete(key)
            self.backend.count(key.project, "stale")
            return None
        self.backend.count(key.project, "hits")
        return _result(entry, started)

    def _admit(self, key: CacheKey, sql: str, snapshot: ProjectSnapshot, result: QueryResult) -> bool:
        """Keep `result` if admitted; whether it was kept. A backend failure only loses the entry."""
        why = refusal(result, self.settings)
        plan = result.plan
        uses = None
        if why is None and plan is not None:
            matched = [(i, c.match) for i, c in enumerate(plan.contexts) if c.match is not None]
            uses = model_uses(sql, [] if result.pushdown else matched, snapshot, plan.probes, result.params)
            why = "a model it used is not in the metadata snapshot" if uses is None else None
        if why is not None or uses is None:
            log.debug("not cached: %s", why)
            self._count(key.project, "skipped")
            return False
        entry = Entry(
            table=result.table,
            cached_ms=now_ms(),
            snapshot_version=snapshot.version,
            models=uses,
            engine=result.engine,
            duration_ms=result.duration_ms,
            scanned_rows=scanned_rows(result),
            pushdown=result.pushdown,
            model=result.model,
            layout_ids=tuple(result.layout_ids),
            segments=tuple(result.segments),
        )
        try:
            self.backend.put(key, entry, self.settings.ttl_s)
        except CacheError as err:
            log.warning("query answer not cached: %s", err)
            return False
        self._count(key.project, "stores")
        return True

    def _count(self, project: str, stat: str) -> None:
        try:
            self.backend.count(project, stat)
        except CacheError as err:
            log.warning("query cache counter lost: %s", err)

    def clear(self, project: str, sql: str | None = None) -> int:
        """Drop a project's entries, or only the entry of `sql`; how many were dropped."""
        if sql is None:
            return self.backend.clear(project)
        key = key_of_sql(project, sql)
        return int(key is not None and self.backend.delete(key))

    def stats(self, project: str) -> CacheStats:
        counted = self.backend.stats(project)
        entries, size = self.backend.size(project)
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


def _result(entry: Entry, started: float) -> QueryResult:
    answered = Answered(entry.pushdown, entry.model, entry.layout_ids, entry.segments, entry.cached_ms)
    return QueryResult(
        entry.table, None, entry.engine, (time.perf_counter() - started) * 1000, from_cache=True, answered=answered
    )
