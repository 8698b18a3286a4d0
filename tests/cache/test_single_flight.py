"""The single flight's rule for failed runs, on both backends, with scripted runs (the result-cache suite
drives the same rule through real engines): a run's failure of the statement is everyone's, a failure of the run
is run again once, and a cancel or a time-out (the runner's own deadline) never counts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from precube.cache import open_backend
from precube.cache.backend import CacheBackend
from precube.cache.entry import Entry
from precube.cache.key import CacheKey
from precube.cache.memory import MemoryBackend
from precube.cache.single_flight import SingleFlight
from precube.query.cancel import Cancellation
from precube.query.errors import EngineError, QueryCancelledError, QueryTimeoutError, SqlSyntaxError

KEY = CacheKey("scope", "digest")
Outcome = int | BaseException


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[CacheBackend]:
    found = MemoryBackend() if request.param == "memory" else open_backend(request.getfixturevalue("redis_url"))
    yield found
    found.close()


def _entry(n: int) -> Entry:
    table = pa.table({"n": [n]})
    return Entry(table, 0, 0, (), "duckdb", 0.0, 0, False, None, (), ())


def _fly(backend: CacheBackend, script: list[BaseException | None], n: int) -> tuple[list[Outcome], int]:
    """`n` identical concurrent calls whose runs, in turn, fail as `script` says (None: the answer, the number
    of the run); what each call got, and how many runs there were."""
    flight = SingleFlight(backend)
    runs = [0]
    lock = threading.Lock()
    outcomes: list[Outcome] = []
    barrier = threading.Barrier(n)

    def compute() -> tuple[int, bool]:
        with lock:
            runs[0] += 1
            mine = runs[0]
        time.sleep(0.3)  # every call arrives while the run runs
        failure = script[mine - 1] if mine <= len(script) else None
        if failure is not None:
            raise failure
        return mine, False

    def one() -> None:
        barrier.wait()
        try:
            got = flight.run(KEY, lambda: None, compute, _entry, lambda e: int(e.table.column(0)[0].as_py()))
            outcomes.append(got.value)
        except Exception as err:  # noqa: BLE001 (checked by the caller)
            outcomes.append(err)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return outcomes, runs[0]


def _errors(outcomes: list[Outcome]) -> list[BaseException]:
    return [o for o in outcomes if isinstance(o, BaseException)]


def test_the_statements_own_error_is_everyones(backend: CacheBackend) -> None:
    outcomes, runs = _fly(backend, [SqlSyntaxError("cannot parse the SQL")], 6)
    assert runs == 1 and len(outcomes) == 6
    assert all(isinstance(o, SqlSyntaxError) and str(o) == "cannot parse the SQL" for o in outcomes)


@pytest.mark.parametrize("failure", [EngineError("the statement ran out of memory"), QueryTimeoutError("too long")])
def test_a_failed_run_is_run_again_once(backend: CacheBackend, failure: BaseException) -> None:
    outcomes, runs = _fly(backend, [failure], 6)
    assert runs == 2 and [type(e) for e in _errors(outcomes)] == [type(failure)]  # the runner's alone
    assert sorted(o for o in outcomes if isinstance(o, int)) == [2] * 5


def test_a_query_that_fails_twice_fails_for_everyone(backend: CacheBackend) -> None:
    outcomes, runs = _fly(backend, [EngineError("first"), EngineError("second")], 6)
    assert runs == 2 and len(outcomes) == 6
    assert sorted(str(e) for e in _errors(outcomes)) == ["first"] + ["second"] * 5


def test_a_cancel_is_its_clients_alone_and_does_not_count(backend: CacheBackend) -> None:
    cancelled = QueryCancelledError("canceling statement due to user request")
    outcomes, runs = _fly(backend, [cancelled, EngineError("engine"), cancelled], 6)
    # run 1 cancelled (its caller's), run 2 failed (its caller's), run 3, again after a failure, was cancelled
    # (its caller's: not shared), run 4 answered the 3 others
    assert runs == 4
    assert sorted(type(e).__name__ for e in _errors(outcomes)) == ["EngineError", *["QueryCancelledError"] * 2]
    assert sorted(o for o in outcomes if isinstance(o, int)) == [4] * 3


def test_a_takeover_after_a_timeout_runs_only_until_the_waiters_deadline(backend: CacheBackend) -> None:
    """Each call has its own deadline: the first run times out (its own: not shared), and the waiter that takes
    the query over runs it only for what is left of its deadline, ending by it."""
    flight = SingleFlight(backend)
    left: list[float] = []  # the time each run had
    ended: dict[str, tuple[float, BaseException | None]] = {}

    def call(name: str, cancel: Cancellation) -> None:
        def compute() -> tuple[int, bool]:
            remaining = cancel.remaining()
            assert remaining is not None
            left.append(remaining)
            time.sleep(max(0.0, remaining))  # an engine that runs until the statement's deadline
            raise QueryTimeoutError("the query ran longer than the time limit")

        try:
            flight.run(KEY, lambda: None, compute, _entry, lambda e: 0, cancel)
            ended[name] = (time.monotonic(), None)
        except Exception as err:  # noqa: BLE001 (checked below)
            ended[name] = (time.monotonic(), err)

    first = threading.Thread(target=call, args=("first", Cancellation(0.6)))
    first.start()
    time.sleep(0.1)
    waiter = Cancellation(1.0)  # its deadline: 0.5 s after the first run's
    second = threading.Thread(target=call, args=("waiter", waiter))
    second.start()
    first.join(10)
    second.join(10)
    assert len(left) == 2 and left[1] < 0.6  # the takeover had what was left, not a whole timeout_s
    at, error = ended["waiter"]
    assert isinstance(error, QueryTimeoutError) and isinstance(ended["first"][1], QueryTimeoutError)
    assert waiter.deadline is not None and at < waiter.deadline + 0.3
