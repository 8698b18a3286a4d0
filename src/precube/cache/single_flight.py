"""Single flight: identical concurrent queries run once.

The first sets the key's running marker atomically (SET NX with an expiry) and renews it while it runs, so a
server that crashes blocks the others only until the marker expires. The others note which run holds the
marker and poll, backing off from 2 ms to 100 ms, for the answer: in the cache when it was kept, else
handed over by that run (its answer, or how it failed) for a few seconds under the run's token. Only the
queries that waited on that run take it: a later query runs afresh. When the marker is gone with neither (the
run crashed), one of them takes the marker over and runs the query. Errors are never cached.

A failure of the statement itself (`PrecubeError.deterministic`: a syntax error, a forbidden or unknown name,
no layout, no permission) is every waiter's: running it again would fail the same way. A failure of the run
(an engine failure, a timeout, a memory bound, its client's cancel) is only the runner's: one waiter takes the
marker over and runs the query again while the others wait for that run, whose failure, if it fails too, is
then everyone's (so a query that always fails runs twice, not once per waiter). A cancel is its runner's alone
and never counts: the next waiter runs the query, as after a crash. So is a time-out: each statement has its own
deadline (`Cancellation`, from its arrival), which a waiter never waits past, and a waiter that takes over runs
the query only for what is left of its own; a query that always times out then ends for every waiter by its
deadline, and none of its runs goes past the deadline of the waiter that runs it.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from precube import metrics
from precube.cache.backend import CacheBackend, Failure
from precube.cache.entry import Entry
from precube.cache.errors import CacheError, CacheUnavailableError
from precube.cache.key import CacheKey
from precube.errors import PrecubeError
from precube.query.cancel import Cancellation
from precube.query.errors import QueryCancelledError, QueryTimeoutError

T = TypeVar("T")

FIRST_DELAY_S = 0.002
MAX_DELAY_S = 0.1
HANDED_S = 5.0  # how long a run's answer waits for its waiters (they poll at least every MAX_DELAY_S)
WAITING = "waiting for an identical statement's run"  # where a statement's time went (`Cancellation.spent`)
_OWN = (QueryCancelledError, QueryTimeoutError)  # failures of the runner's own statement (its client, its deadline)

log = logging.getLogger(__name__)


@dataclass
class Flown(Generic[T]):
    value: T
    ran: bool  # this call ran the query (else it read the answer of another)
    waited: bool


class SingleFlight:
    """Runs `compute` for a key at most once at a time across every process of the backend."""

    def __init__(self, backend: CacheBackend, expiry_s: float = 30.0, wait_s: float = 300.0) -> None:
        self.backend = backend
        self.expiry_s = expiry_s
        self.wait_s = wait_s

    def run(
        self,
        key: CacheKey,
        lookup: Callable[[], T | None],
        compute: Callable[[], tuple[T, bool]],
        share: Callable[[T], Entry],
        take: Callable[[Entry], T],
        cancel: Cancellation | None = None,
    ) -> Flown[T]:
        """The answer from `lookup` (the cache), from the run this call waited on, or from `compute` (which
        returns the answer and whether it cached it), computing it only while holding the key's marker. An
        answer not cached is handed to the waiters as `share` makes it, and read back with `take`. `cancel`: the
        statement's, whose cancel or deadline ends the wait (a QueryCancelledError, a QueryTimeoutError)."""
        token = uuid.uuid4().hex
        began = time.monotonic()
        deadline = began + self.wait_s
        delay = FIRST_DELAY_S
        waited = False
        awaited: set[str] = set()  # the runs this call waits on
        ended: set[str] = set()  # the runs this call waited on that failed: never waited on again
        failed: list[str] = []  # of those, the ones that failed by no cancel of their own client
        while True:
            holder = self.backend.claim(key, token, self.expiry_s)
            if holder is None:
                try:
                    # the run waited on may have ended just now: its answer is cached or handed over
                    found = self._ready(key, lookup, take, awaited, ended, failed) if waited else None
                    if found is not None:
                        return Flown(found, False, waited)
                    if waited and cancel is not None:
                        cancel.spent(WAITING, time.monotonic() - began)  # the run gets only what is left
                    return Flown(self._compute(key, token, compute, share, again=bool(failed)), True, waited)
                finally:
                    self.backend.release(key, token)
            if holder and holder not in ended:  # a failed run may hold its marker a moment after its hand-over
                awaited.add(holder)
            waited = True
            left = cancel.remaining() if cancel is not None else None
            time.sleep(delay if left is None else max(0.0, min(delay, left)))
            delay = min(delay * 2, MAX_DELAY_S)
            found = self._ready(key, lookup, take, awaited, ended, failed)
            if found is not None:
                return Flown(found, False, waited)
            if cancel is not None:
                _check(cancel, began)
            if time.monotonic() > deadline:
                if cancel is not None:
                    cancel.spent(WAITING, time.monotonic() - began)
                return Flown(compute()[0], True, waited)

    def _ready(
        self,
        key: CacheKey,
        lookup: Callable[[], T | None],
        take: Callable[[Entry], T],
        awaited: set[str],
        ended: set[str],
        failed: list[str],
    ) -> T | None:
        """The cached answer, else what a run this call waited on handed over. Its error is raised when shared,
        or when a run failed before it (a cancel or time-out of the runner's own aside); else the run is noted as
        `ended` and, but for those, `failed`, and this call tries to run the query."""
        found = lookup()
        if found is not None:
            return found
        for run in list(awaited):
            handed = self.backend.handed(key, run)
            if isinstance(handed, Failure):
                own = isinstance(handed.error, _OWN)  # its client's or its deadline: no fault of the query
                if handed.shared or (failed and not own):
                    raise _copy(handed.error)
                awaited.discard(run)  # taken over: its failure is not waited on again
                ended.add(run)
                if not own:
                    failed.append(run)
                return None
            if handed is not None:
                return take(handed)
        return None

    def _compute(
        self,
        key: CacheKey,
        token: str,
        compute: Callable[[], tuple[T, bool]],
        share: Callable[[T], Entry],
        again: bool = False,
    ) -> T:
        """`compute()` under the marker; `again`: the run of a waiter after a failed run, whose failure is then
        shared (but for its own client's cancel)."""
        if again:
            metrics.FLIGHT_TAKEOVERS.inc()
        with _Heartbeat(self.backend, key, token, self.expiry_s):
            try:
                value, cached = compute()
            except Exception as err:
                self._hand(key, token, Failure(err, _shared(err, again)))
                raise
        if not cached:
            self._hand(key, token, share(value))
        return value

    def _hand(self, key: CacheKey, token: str, handed: Entry | Failure) -> None:
        try:
            self.backend.hand_over(key, token, handed, HANDED_S)
        except CacheError as err:  # the waiters then take over and run it themselves
            level = logging.DEBUG if isinstance(err, CacheUnavailableError) else logging.WARNING
            log.log(level, "query answer not handed to waiters: %s", err)


def _check(cancel: Cancellation, began: float) -> None:
    """End a wait on an identical statement's run once the waiting statement is cancelled or past its
    deadline (the time-out's message names the wait)."""
    if cancel.cancelled or (cancel.deadline is not None and time.monotonic() >= cancel.deadline):
        cancel.spent(WAITING, time.monotonic() - began)
        cancel.check()


def _shared(err: BaseException, again: bool) -> bool:
    """Whether the waiters take `err`: it follows from the statement alone (every identical statement fails so),
    or the query failed a second time, unless that was its runner's own (a cancel by its client, its deadline:
    another waiter then runs it)."""
    if isinstance(err, PrecubeError) and err.deterministic:
        return True
    return again and not isinstance(err, _OWN)


def _copy(err: BaseException) -> BaseException:
    """The runner's error for one waiter (each raise then has its own traceback)."""
    try:
        return copy.copy(err).with_traceback(None)
    except Exception:  # noqa: BLE001 (an error that cannot be copied is raised as it is)
        return err


class _Heartbeat:
    """Renews a marker every third of its expiry while the query runs."""

    def __init__(self, backend: CacheBackend, key: CacheKey, token: str, expiry_s: float) -> None:
        self.backend, self.key, self.token, self.expiry_s = backend, key, token, expiry_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="precube-cache-single-flight", daemon=True)

    def __enter__(self) -> None:
        self._thread.start()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.expiry_s / 3):
            try:
                self.backend.renew(self.key, self.token, self.expiry_s)
            except Exception:  # noqa: BLE001 (a missed renewal only lets another server run the query too)
                continue
