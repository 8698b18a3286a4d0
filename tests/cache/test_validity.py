"""Segment-aware validity against real builds: a new day's segment invalidates a count over all time but not a
query filtered to an older year; refresh and merge invalidate what they touch; a model change invalidates all.
Both backends watch the same model through the same changes (one Spark build per change, not two)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from precube.cache import CachedSession, ResultCache, open_backend
from precube.engine.operations import build_segment, merge_segments, refresh_segment
from precube.metadata import Dataflow, DataflowStatus, TimeRange
from precube.modeling.model_store import require_model
from precube.settings import CacheSettings
from tests.cache.conftest import ADMIT_ALL, CACHE_MODEL, CACHE_PROJECT, FIRST, SECOND, CacheModel
from tests.query.conftest import day

pytestmark = pytest.mark.spark

ALL = "select count(*) as n, sum(lo_revenue) as revenue from ssb.lineorder"
OLD = ALL + " where lo_orderdate >= date '1993-01-01' and lo_orderdate < date '1994-01-01'"  # in the first segment
MID = ALL + " where lo_orderdate between date '1996-01-01' and date '1996-12-31'"  # in the second
NEW_DAY = (day("1998-08-01"), day("1998-08-02"))


@pytest.fixture
def sessions(cache_model: CacheModel, redis_url: str) -> Iterator[dict[str, CachedSession]]:
    """One session per backend (memory and Redis) over the same model."""
    found = {}
    for name, url in (("memory", "memory"), ("redis", redis_url)):
        config = CacheSettings(url=url, **ADMIT_ALL)
        found[name] = cache_model.cached(ResultCache(open_backend(config.url), config))
    yield found
    for s in found.values():
        s.close()


def _segments(model: CacheModel) -> dict[tuple[int, int], str]:
    with model.store.read(CACHE_PROJECT) as tx:
        flow = tx.require(Dataflow, require_model(tx, CACHE_MODEL).uuid)
    return {(s.seg_range.start, s.seg_range.end): s.id for s in flow.segments}


def _check(sessions: dict[str, CachedSession], sql: str, *, cached: bool) -> list[tuple[Any, ...]]:
    """Ask `sql` on every backend: from the cache or not as expected, and the answer of an uncached run."""
    answers = []
    for name, s in sessions.items():
        result = s.sql(sql)
        assert result.from_cache is cached, f"{name}: from_cache {result.from_cache}, expected {cached}: {sql}"
        assert result.rows == s.sql(sql, no_cache=True).rows, f"{name}: {sql}"
        answers.append(result.rows)
    return answers[0]


def test_builds_refreshes_and_merges_invalidate_what_they_touch(
    cache_model: CacheModel, sessions: dict[str, CachedSession]
) -> None:
    for sql in (ALL, OLD, MID):
        _check(sessions, sql, cached=False)
        _check(sessions, sql, cached=True)
    before = _check(sessions, ALL, cached=True)

    # a new day: all time changes, 1993 and 1996 do not
    build_segment(cache_model.ctx, CACHE_MODEL, TimeRange.of(*NEW_DAY))
    after = _check(sessions, ALL, cached=False)
    assert after != before  # the day has orders: the stale answer would have been wrong
    _check(sessions, OLD, cached=True)
    _check(sessions, MID, cached=True)
    _check(sessions, ALL, cached=True)

    # refreshing the first segment touches 1993 and all time, not 1996
    segments = _segments(cache_model)
    with cache_model.store.read(CACHE_PROJECT) as tx:
        first = tx.require(Dataflow, require_model(tx, CACHE_MODEL).uuid).segment(segments[FIRST])
    assert first is not None
    refresh_segment(cache_model.ctx, CACHE_MODEL, first.name)
    _check(sessions, OLD, cached=False)
    _check(sessions, ALL, cached=False)
    _check(sessions, MID, cached=True)

    # merging the second segment with the new day touches 1996 and all time, not 1993
    segments = _segments(cache_model)
    merge_segments(cache_model.ctx, CACHE_MODEL, [segments[SECOND], segments[NEW_DAY]])
    _check(sessions, MID, cached=False)
    _check(sessions, ALL, cached=False)
    _check(sessions, OLD, cached=True)

    for name, s in sessions.items():
        assert s.cache is not None
        stats = s.cache.stats(CACHE_PROJECT)
        assert stats.stale == 5, f"{name}: {stats}"  # ALL three times, OLD once, MID once

    # a change of the model's document drops every answer over the model; a copy of it taken offline too
    with cache_model.store.transaction(CACHE_PROJECT, "test") as tx:
        model = require_model(tx, CACHE_MODEL)
        model.description = "changed after the answers were cached"
        tx.update(model)
    _check(sessions, OLD, cached=False)
    _check(sessions, OLD, cached=True)
    with cache_model.store.transaction(CACHE_PROJECT, "test") as tx:
        flow = tx.require(Dataflow, require_model(tx, CACHE_MODEL).uuid)
        flow.status = DataflowStatus.OFFLINE
        tx.update(flow)
    for name, s in sessions.items():
        result = s.sql(OLD)  # no online model: pushed down to the source table, which is not cached
        assert not result.from_cache and result.pushdown, name
