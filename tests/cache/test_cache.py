"""The result cache's behaviour, the same suite on the in-memory backend and on a real Redis server, over the
cache tests' own small model (never changed in this module): hits equal uncached answers, spelling does not matter but
literals do, keep rules, no_cache, pushdown, errors, single flight and take-over, operations."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from precube.cache import CachedSession, ResultCache, open_backend
from precube.cache.key import key_of_sql
from precube.cache.validity import model_uses
from precube.query.cancel import Cancellation
from precube.query.errors import NoLayoutError, QueryCancelledError, SqlSyntaxError
from precube.query.session import QueryResult, Session
from precube.settings import CacheSettings
from tests.cache.conftest import ADMIT_ALL, CACHE_PROJECT, CacheModel, MakeCache, _free_port, start_redis

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

SQL = "select lo_discount, sum(lo_revenue) as revenue from ssb.lineorder group by lo_discount order by lo_discount"
RESPELLED = """SELECT LO_DISCOUNT, SUM(LO_REVENUE) AS revenue -- the same statement
  FROM ssb.lineorder /* spelled otherwise */
  GROUP   BY lo_discount ORDER BY lo_discount"""
SHIPPED = "select lo_discount, count(*) as n from ssb.lineorder where lo_shipmode = '{}' group by lo_discount order by lo_discount"


@pytest.fixture
def session(cache_model: CacheModel, make_cache: MakeCache) -> Iterator[CachedSession]:
    with cache_model.cached(make_cache()) as s:
        yield s


def _uncached(session: CachedSession, sql: str) -> list[tuple[Any, ...]]:
    return session.sql(sql, no_cache=True).rows


class Counted:
    """Counts the statements the session's DuckDB engine really runs (optionally slowed down; with
    `fail_first`, every statement of the thread that ran first fails, its pushdown retry included), keeping the
    real engine underneath."""

    def __init__(self, session: CachedSession, delay_s: float = 0.0, fail_first: bool = False) -> None:
        self.calls = 0  # statements handed to the real engine
        self.failed = 0
        self.started = threading.Event()  # a statement reached the engine
        self._failing: int | None = None
        self._lock = threading.Lock()
        real = session.duckdb.execute

        def execute(*args: Any) -> Any:
            self.started.set()
            me = threading.get_ident()
            with self._lock:
                if fail_first and self._failing is None:
                    self._failing = me
                failing = me == self._failing
            time.sleep(delay_s)
            with self._lock:
                if failing:
                    self.failed += 1
                else:
                    self.calls += 1
            if failing:
                raise RuntimeError("the first run fails")
            return real(*args)

        session.duckdb.execute = execute  # type: ignore[method-assign]


def test_a_hit_answers_as_the_query_does(session: CachedSession) -> None:
    first = session.sql(SQL)
    assert not first.from_cache
    second = session.sql(SQL)
    assert second.from_cache and second.rows == first.rows == _uncached(session, SQL)
    assert second.columns == first.columns
    assert (second.model, second.layout_ids, second.segments) == (first.model, first.layout_ids, first.segments)
    assert first.pushdown_reason is None and second.pushdown_reason is None
    stats = session.cache.stats(session.project) if session.cache else None
    assert stats is not None and stats.hits == 1 and stats.misses == 1 and stats.stores == 1 and stats.entries == 1


def test_spelling_shares_a_key_but_string_contents_do_not(session: CachedSession) -> None:
    session.sql(SQL)
    assert session.sql(RESPELLED).from_cache
    asia = session.sql(SHIPPED.format("MAIL"))
    assert not session.sql(SHIPPED.format("mail")).from_cache  # another string: another statement
    again = session.sql(SHIPPED.format("MAIL"))
    assert again.from_cache and again.rows == asia.rows == _uncached(session, SHIPPED.format("MAIL"))
    assert session.sql(SQL.replace("group by", "GROUP  BY")).from_cache
    assert session.sql(f"{SQL};").from_cache and session.sql(f"  {RESPELLED} ;\n").from_cache


def test_keep_rules_thresholds_and_no_cache(cache_model: CacheModel, make_cache: MakeCache) -> None:
    with cache_model.cached(make_cache(min_duration_ms=60_000, min_scanned_rows=10**9, min_ms_per_mb=0)) as s:
        s.sql(SQL)
        assert not s.sql(SQL).from_cache  # fast and few rows scanned: not kept
    with cache_model.cached(make_cache(min_duration_ms=60_000, min_scanned_rows=10**9, min_ms_per_mb=10**9)) as s:
        s.sql(SQL)
        assert not s.sql(SQL).from_cache  # too large an answer for the time it took
    with cache_model.cached(make_cache(max_cells=3)) as s:
        s.sql(SQL)
        assert not s.sql(SQL).from_cache  # 11 rows x 2 columns exceed 3 cells
    with cache_model.cached(make_cache(min_duration_ms=60_000, min_scanned_rows=1)) as s:
        s.sql(SQL)
        assert s.sql(SQL).from_cache  # slow enough or scanning enough rows: either admits
    with cache_model.cached(make_cache(min_duration_ms=60_000, min_scanned_rows=10**9)) as s:
        assert s.cache is not None
        s.cache.clear(s.project)
        s.sql(SQL)
        assert s.sql(SQL).from_cache  # 11 rows: small enough for any time it took (`min_ms_per_mb`)
    with cache_model.cached(make_cache()) as s:
        assert s.cache is not None
        s.cache.clear(s.project)  # a Redis backend still holds the answer admitted above
        s.sql(SQL, no_cache=True)
        assert not s.sql(SQL).from_cache  # no_cache neither read nor stored
        assert not s.sql(SQL, no_cache=True).from_cache


def test_pushdown_answers_are_not_cached_unless_allowed(cache_model: CacheModel, make_cache: MakeCache) -> None:
    sql = "select lo_orderkey, lo_tax from ssb.lineorder order by lo_orderkey, lo_tax limit 3"  # no layout has them
    with cache_model.cached(make_cache()) as s:
        assert s.sql(sql).pushdown
        assert not s.sql(sql).from_cache
    with cache_model.cached(make_cache(cache_pushdown=True)) as s:
        first = s.sql(sql)
        second = s.sql(sql)
        assert second.from_cache and second.pushdown and second.rows == first.rows
        assert first.pushdown_reason is not None and second.pushdown_reason == first.pushdown_reason
        with pytest.raises(NoLayoutError):  # forbidding pushdown is not answered by a cached pushdown answer
            s.sql(sql, pushdown=False)


def test_errors_are_never_cached(session: CachedSession) -> None:
    bad = "select no_such_column from ssb.lineorder"
    for _ in range(2):
        with pytest.raises(Exception, match="(?i)no_such_column"):
            session.sql(bad)
    assert session.cache is not None
    assert session.cache.stats(session.project).stores == 0


def _concurrently(n: int, call: Callable[[], QueryResult]) -> tuple[list[QueryResult], list[BaseException]]:
    results: list[QueryResult] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def one() -> None:
        barrier.wait()
        try:
            results.append(call())
        except Exception as err:  # noqa: BLE001 (collected for the assertions)
            errors.append(err)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results, errors


def test_identical_concurrent_queries_run_once(cache_model: CacheModel, make_cache: MakeCache) -> None:
    with cache_model.cached(make_cache()) as s:
        expected = _uncached(s, SQL)
        counted = Counted(s, delay_s=0.3)
        results, errors = _concurrently(20, lambda: s.sql(SQL))
        assert not errors and len(results) == 20
        assert counted.calls == 1
        assert all(r.rows == expected for r in results)
        assert sum(not r.from_cache for r in results) == 1
        assert s.cache is not None and s.cache.stats(s.project).waits >= 1


def test_without_single_flight_they_all_run(cache_model: CacheModel, make_cache: MakeCache) -> None:
    with cache_model.cached(make_cache(single_flight=False)) as s:
        counted = Counted(s, delay_s=0.3)
        results, errors = _concurrently(5, lambda: s.sql(SQL))
        assert not errors and len(results) == 5
        assert counted.calls == 5  # the check above would catch a single flight that did nothing


def test_a_failed_run_is_run_again_by_one_waiter(cache_model: CacheModel, make_cache: MakeCache) -> None:
    """The first run fails with an unexpected engine error: the runner alone gets it, one waiter runs the query
    again and the others take that run's answer (2 engine runs, not 1 failure for all nor 1 run per waiter)."""
    with cache_model.cached(make_cache()) as s:
        expected = _uncached(s, SQL)
        counted = Counted(s, delay_s=0.3, fail_first=True)
        results, errors = _concurrently(8, lambda: s.sql(SQL))
        assert len(errors) == 1 and "first run fails" in str(errors[0])
        assert len(results) == 7 and all(r.rows == expected for r in results)
        assert counted.failed == 1 and counted.calls == 1
        assert s.cache.stats().stores == 1  # the second run's answer, not an error, was kept


def test_a_cancelled_run_is_run_again_for_its_waiters(cache_model: CacheModel, make_cache: MakeCache) -> None:
    """The first of 7 identical queries is cancelled by its client while the others wait on it: it alone fails,
    the others get the answer of the run one of them makes (exactly 2 engine runs)."""
    with cache_model.cached(make_cache()) as s:
        expected = _uncached(s, SQL)
        counted = Counted(s, delay_s=1.5)
        cancel = Cancellation()
        outcomes: list[Any] = []

        def one(c: Cancellation | None) -> None:
            try:
                outcomes.append(s.sql(SQL, cancel=c))
            except Exception as err:  # noqa: BLE001 (checked below)
                outcomes.append(err)

        first = threading.Thread(target=one, args=(cancel,))
        first.start()
        assert counted.started.wait(30)  # the first run is in the engine, holding the flight
        waiters = [threading.Thread(target=one, args=(None,)) for _ in range(6)]
        for t in waiters:
            t.start()
        time.sleep(0.2)  # they wait on the first run (which sleeps 1.5 s before its engine sees the cancel)
        cancel.cancel()
        for t in [first, *waiters]:
            t.join(timeout=60)
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(outcomes) == 7 and len(errors) == 1 and isinstance(errors[0], QueryCancelledError)
        assert all(o.rows == expected for o in outcomes if isinstance(o, QueryResult))
        assert counted.calls == 2


@pytest.mark.parametrize(
    ("sql", "pushdown", "error"),
    [
        ("select lo_discount from ssb.lineorder where", None, SqlSyntaxError),
        ("select lo_orderkey, lo_tax from ssb.lineorder order by lo_orderkey limit 3", False, NoLayoutError),
    ],
)
def test_the_statements_own_error_is_given_to_its_waiters(
    cache_model: CacheModel, make_cache: MakeCache, sql: str, pushdown: bool | None, error: type[Exception]
) -> None:
    """A syntax error, or no layout with pushdown forbidden: running it again would fail the same way, so all 8
    get the runner's error and the statement ran once."""
    with cache_model.cached(make_cache()) as s:
        runs = _slowed(s, 0.5)
        results, errors = _concurrently(8, lambda: s.sql(sql, pushdown=pushdown))
        assert not results and len(errors) == 8
        assert all(type(e) is error for e in errors), errors
        assert runs == [1]
        with pytest.raises(error):  # a later query runs afresh
            s.sql(sql, pushdown=pushdown)
        assert runs == [2]


def _slowed(s: CachedSession, delay_s: float) -> list[int]:
    """Counts (in its one item) the statements the wrapped session runs, each delayed by `delay_s` first."""
    runs = [0]
    real = s.session.sql

    def sql(*args: Any, **kwargs: Any) -> QueryResult:
        runs[0] += 1
        time.sleep(delay_s)
        return real(*args, **kwargs)

    s.session.sql = sql  # type: ignore[method-assign]
    return runs


PUSHDOWN_SQL = "select lo_orderkey, lo_tax from ssb.lineorder order by lo_orderkey, lo_tax limit 3"  # no layout


def test_concurrent_answers_not_cached_are_shared_too(cache_model: CacheModel, make_cache: MakeCache) -> None:
    """20 identical pushdown queries (pushdown answers are not admitted) run once; all get the answer."""
    with cache_model.cached(make_cache()) as s:
        expected = _uncached(s, PUSHDOWN_SQL)
        counted = Counted(s, delay_s=0.3)
        results, errors = _concurrently(20, lambda: s.sql(PUSHDOWN_SQL))
        assert not errors and len(results) == 20
        assert counted.calls == 1
        assert all(r.rows == expected and r.pushdown and r.pushdown_reason for r in results)
        assert not any(r.from_cache for r in results)
        stats = s.cache.stats()
        assert stats.stores == 0 and stats.entries == 0 and stats.waits >= 1
        s.sql(PUSHDOWN_SQL)
        assert counted.calls == 2  # handed to those that waited, not kept for later queries


def test_identical_queries_that_may_answer_differently_fly_apart(
    cache_model: CacheModel, make_cache: MakeCache
) -> None:
    """One forbids pushdown, the other allows it: neither takes the other's answer or error."""
    with cache_model.cached(make_cache()) as s:
        Counted(s, delay_s=0.3)
        calls: list[Callable[[], QueryResult]] = [
            lambda: s.sql(PUSHDOWN_SQL, pushdown=False),
            lambda: s.sql(PUSHDOWN_SQL),
        ]
        barrier = threading.Barrier(2)
        outcomes: list[Any] = [None, None]

        def one(i: int) -> None:
            barrier.wait()
            try:
                outcomes[i] = calls[i]()
            except Exception as err:  # noqa: BLE001 (checked below)
                outcomes[i] = err

        threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert isinstance(outcomes[0], NoLayoutError)
        assert isinstance(outcomes[1], QueryResult) and outcomes[1].pushdown


def test_clear_one_entry_or_the_project(session: CachedSession) -> None:
    cache = session.cache
    assert cache is not None
    session.sql(SQL)
    session.sql(SHIPPED.format("MAIL"))
    assert cache.stats(session.project).entries == 2
    assert cache.clear(session.project, RESPELLED) == 1  # any spelling names the entry
    assert not session.sql(SQL).from_cache
    assert session.sql(SHIPPED.format("MAIL")).from_cache
    assert cache.clear(session.project) == 2
    stats = cache.stats(session.project)
    assert stats.entries == 0 and stats.bytes == 0
    assert not session.sql(SHIPPED.format("MAIL")).from_cache


def test_the_key_is_the_plan_cache_shape() -> None:
    a, b = key_of_sql("s", "p", SQL), key_of_sql("s", "p", RESPELLED)
    assert a is not None and a == b
    assert key_of_sql("s", "p", f"{SQL} ;") == a == key_of_sql("s", "p", f"{RESPELLED};;\n-- done\n")
    assert key_of_sql("s", "p", f"{SQL}; select 1") != a
    assert key_of_sql("s", "q", SQL) != a  # per project
    assert key_of_sql("t", "p", SQL) != a  # per metadata store
    assert key_of_sql("s", "p", "select 'unterminated") is None


# --- separate processes sharing a Redis backend -------------------------------------------------------------


def _worker(cache_model: CacheModel, redis_url: str, sql: str, **extra: Any) -> subprocess.Popen[str]:
    config = {
        "redis_url": redis_url,
        "meta_url": cache_model.meta_url,
        "project": CACHE_PROJECT,
        "warehouse": cache_model.warehouse,
        "sql": sql,
        **extra,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "tests.cache.worker", json.dumps(config)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def _answer(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return found


def test_two_processes_share_hits(cache_model: CacheModel, redis_url: str) -> None:
    first = _answer(_worker(cache_model, redis_url, SQL))
    second = _answer(_worker(cache_model, redis_url, RESPELLED))
    assert not first["from_cache"] and second["from_cache"]
    with cache_model.session(None) as s:
        assert second["rows"] == first["rows"] == [list(r) for r in s.sql(SQL).rows]


def test_a_waiting_query_survives_the_first_ones_crash(cache_model: CacheModel, redis_url: str) -> None:
    config = CacheSettings(url=redis_url, flight_expiry_s=1.0, **ADMIT_ALL)
    with cache_model.cached(ResultCache(open_backend(redis_url), config)) as s:
        expected = _uncached(s, SQL)
        first = _worker(cache_model, redis_url, SQL, delay_s=600, expiry_s=1.0)
        assert first.stdout is not None and first.stdout.readline().strip() == "running"  # it holds the marker
        counted = Counted(s)
        waiter: list[QueryResult] = []
        thread = threading.Thread(target=lambda: waiter.append(s.sql(SQL)))
        thread.start()
        time.sleep(0.5)
        assert thread.is_alive()  # waiting for the first process's answer
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        thread.join(timeout=60)
        assert waiter and waiter[0].rows == expected and not waiter[0].from_cache
        assert counted.calls == 1  # the marker expired: the waiter took over and ran the query itself
        assert s.cache is not None and s.cache.stats(CACHE_PROJECT).waits == 1
    assert _answer(_worker(cache_model, redis_url, SQL))["from_cache"]  # and its answer is shared


def test_cli_query_says_cached_and_operates_the_cache(
    cache_model: CacheModel, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from precube.cli.app import run

    config = tmp_path / "precube.toml"
    config.write_text(
        f'[metadata]\nurl = "{cache_model.meta_url}"\n[warehouse]\nroot = "{cache_model.warehouse}"\n'
        f'[query]\nhistory = false\n[cache]\nurl = "{redis_url}"\nmin_duration_ms = 0\nmin_scanned_rows = 0\n'
    )
    base = ["--config", str(config)]

    def query(sql: str, *flags: str) -> dict[str, Any]:
        assert run([*base, "query", "-p", CACHE_PROJECT, sql, "--format", "json", *flags]) == 0
        found: dict[str, Any] = json.loads(capsys.readouterr().out)
        return found

    first, second = query(SQL), query(RESPELLED)  # two CLI runs: only Redis can share the answer
    assert not first["cached"] and second["cached"] and second["rows"] == first["rows"]
    assert first["pushdown_reason"] is None and second["pushdown_reason"] is None  # layouts answered it
    assert not query(SQL, "--no-cache")["cached"]
    assert run([*base, "cache", "stats", "-p", CACHE_PROJECT, "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["backend"], stats["hits"], stats["misses"], stats["entries"]) == ("redis", 1, 1, 1)
    assert run([*base, "cache", "clear", "-p", CACHE_PROJECT, "--sql", SQL]) == 0
    assert "cleared 1 cached answer of" in capsys.readouterr().out
    assert not query(SQL)["cached"]
    assert run([*base, "cache", "clear", "-p", CACHE_PROJECT]) == 0
    assert "cleared 1 cached answer" in capsys.readouterr().out


def test_memory_backend_forgets_expired_handed_answers() -> None:
    from precube.cache.backend import Failure
    from precube.cache.key import CacheKey
    from precube.cache.memory import SWEEP_AT, MemoryBackend

    backend = MemoryBackend()
    for i in range(3 * SWEEP_AT):  # every distinct fast query of a server hands its answer over, briefly
        backend.hand_over(CacheKey("p", str(i)), "run", Failure(RuntimeError("x"), True), expiry_s=0.0)
    assert len(backend._handed) <= SWEEP_AT
    backend.hand_over(CacheKey("p", "live"), "run", Failure(RuntimeError("live"), True), expiry_s=60.0)
    found = backend.handed(CacheKey("p", "live"), "run")
    assert isinstance(found, Failure) and str(found.error) == "live"
    assert backend.handed(CacheKey("p", "live"), "another run") is None


def test_an_answer_records_its_own_filter_also_from_a_reused_plan(cache_model: CacheModel) -> None:
    """The filter an entry is dated by comes from the plan's kept context filters bound to the statement's
    literals (no parsing), and equals the one parsing the statement gives, also when the plan was made for
    other literals."""
    dated = (
        "select lo_shipmode, count(*) as n from ssb.lineorder where lo_orderdate between date '{}' and date '{}' "
        "and lo_discount in ({}, 7) group by lo_shipmode"
    )
    with cache_model.session(None) as s:
        # both in the first segment (the plan is reused), the last in the second (planned again)
        ranges = [("1993-01-01", "1993-12-31"), ("1994-02-01", "1994-03-31"), ("1996-02-01", "1996-03-31")]
        statements = [dated.format(start, end, i) for i, (start, end) in enumerate(ranges, 1)]
        results = [s.sql(sql) for sql in statements]
        assert [r.plan_cached for r in results] == [False, True, False]
        metadata = s.metadata.get(CACHE_PROJECT)
        covered = []
        for sql, result, (start, end) in zip(statements, results, ranges, strict=True):
            assert result.plan is not None and result.params is not None
            matched = [(i, c.match) for i, c in enumerate(result.plan.contexts) if c.match is not None]
            fast = model_uses(sql, matched, metadata, result.plan.probes, result.params)
            assert fast is not None and fast == model_uses(sql, matched, metadata)
            assert fast[0].filter is not None and f"'{start}'" in fast[0].filter and f"'{end}'" in fast[0].filter
            covered.append(fast[0].covered)
        first, second = (s.segment.id for s in metadata.models[0].segments)
        assert covered == [(first,), (first,), (second,)]


# --- what is never cached, and who shares what ----------------------------------------------------------------

VOLATILE = [
    "select lo_discount, count(*) as n, current_date as today from ssb.lineorder group by lo_discount",
    "select lo_discount, count(*) as n from ssb.lineorder where lo_orderdate < now() group by lo_discount",
    "select lo_discount, count(*) as n, max(random()) as r from ssb.lineorder group by lo_discount",
    "select lo_discount, count(*) as n, current_timestamp() as t from ssb.lineorder group by lo_discount",
    "select lo_discount, count(*) as n, uuid() as u from ssb.lineorder group by lo_discount",
]


@pytest.mark.parametrize("sql", VOLATILE)
def test_clock_and_chance_relative_statements_are_never_cached(
    cache_model: CacheModel, make_cache: MakeCache, sql: str
) -> None:
    with cache_model.cached(make_cache(cache_pushdown=True)) as s:
        first = s.sql(sql)
        second = s.sql(sql)
        assert not first.from_cache and not second.from_cache
        stats = s.cache.stats()
        assert stats.stores == 0 and stats.entries == 0 and stats.skipped == 2
        s.sql(SQL)  # the same cache does keep a statement without them
        assert s.sql(SQL).from_cache and s.cache.stats().stores == 1


def test_volatile_calls_are_found_in_the_tree_not_the_text() -> None:
    import sqlglot

    from precube.cache.volatility import volatile_call
    from precube.query.frontend import DIALECT

    def found(sql: str) -> str | None:
        return volatile_call(sqlglot.parse_one(sql, read=DIALECT))

    for sql in (
        "select current_timestamp()",
        "select x from t where d > current_date - interval 1 day",
        "select rand(7)",
        "select randn()",
        "select shuffle(array(1, 2))",
        "select current_timezone()",
        "select unix_timestamp()",
        "select (select max(now()) from t) as m",
        "select GetDate()",
        "select current_user()",
    ):
        assert found(sql) is not None, sql
    for sql in ("select 'now()' as t", "select unix_timestamp(d) from t", "select count(*) from t", "select x as now"):
        assert found(sql) is None, sql


def test_two_metadata_stores_on_one_redis_do_not_share(cache_model: CacheModel, redis_url: str, tmp_path: Path) -> None:
    """A copy of the store (restored from its backup: the same project, models and segments) is another store."""
    from precube.metadata import open_store
    from precube.metadata.backup import backup, restore

    backup(cache_model.store, tmp_path / "backup")
    config = CacheSettings(url=redis_url, **ADMIT_ALL)
    with open_store(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        restore(copy, tmp_path / "backup")
        assert copy.identity != cache_model.store.identity
        original = cache_model.cached(ResultCache(open_backend(redis_url), config))
        other = CachedSession(Session(copy, CACHE_PROJECT, cache_model.warehouse), ResultCache.open(config))
        with original, other:
            first = original.sql(SQL)
            assert not other.sql(SQL).from_cache  # the same project and SQL, another store
            assert original.sql(SQL).from_cache and other.sql(SQL).from_cache
            assert other.sql(SQL).rows == first.rows
            assert original.cache.stats().entries == 1 and other.cache.stats().entries == 1
            assert original.cache.clear() == 1
            assert other.sql(SQL).from_cache  # clearing one store's project leaves the other's


def test_sessions_of_one_process_share_the_memory_backend(cache_model: CacheModel) -> None:
    config = CacheSettings(url="memory", memory_mb=7.5, **ADMIT_ALL)  # a size no other test opens
    assert open_backend("memory", config) is open_backend("memory://", config)
    with cache_model.cached(ResultCache.open(config)) as a, cache_model.cached(ResultCache.open(config)) as b:
        a.cache.clear()
        first = a.sql(SQL)
        second = b.sql(SQL)
        assert not first.from_cache and second.from_cache and second.rows == first.rows
        assert b.cache.stats().hits == 1


def test_a_redis_that_goes_away_is_bypassed_then_used_again(
    cache_model: CacheModel, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis stopped: queries are still answered (without the cache), the log says so once, and the backend
    reports itself unavailable; Redis back on its port: the probe finds it and answers are cached again."""
    import logging

    port = _free_port()
    proc = start_redis(port)
    config = CacheSettings(url=f"redis://127.0.0.1:{port}/0", **ADMIT_ALL)
    try:
        with cache_model.cached(ResultCache.open(config)) as s:
            first = s.sql(SQL)
            assert s.sql(SQL).from_cache and s.cache.backend.available
            proc.terminate()
            proc.wait(10)
            with caplog.at_level(logging.WARNING, logger="precube.cache"):
                answers = [s.sql(SQL) for _ in range(20)]
            assert all(a.rows == first.rows and not a.from_cache for a in answers)
            assert not s.cache.backend.available
            warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
            assert len(warned) == 1 and "unreachable" in warned[0], warned
            proc = start_redis(port)  # an empty Redis on the same port
            deadline = time.monotonic() + 10
            while not s.cache.backend.available and time.monotonic() < deadline:
                time.sleep(0.05)
            assert s.cache.backend.available
            assert not s.sql(SQL).from_cache  # the new Redis holds nothing
            again = s.sql(SQL)
            assert again.from_cache and again.rows == first.rows
    finally:
        proc.terminate()
        proc.wait(10)
