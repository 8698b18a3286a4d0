"""Single flight: identical concurrent queries run once.

The first sets the key's running marker atomically (SET NX with an expiry) and renews it while it runs, so a
server that crashes blocks the others only until the marker expires. The others note which run holds the
marker and poll, backing off from 2 ms to 100 ms, for the answer: in the cache when it was kept, else
handed over by that run (its answer, or the error it ended with) for a few seconds under the run's token.
Only the queries that waited on that run take it: a later query runs afresh. When the marker is gone with
neither (the run crashed), one of them takes the marker over and runs the query. Errors are never cached.
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

from precube.cache.backend import CacheBackend
from precube.cache.entry import Entry
from precube.cache.errors import CacheError, CacheUnavailableError
from precube.cache.key import CacheKey

T = TypeVar("T")

FIRST_DELAY_S = 0.002
MAX_DELAY_S = 0.1
HANDED_S = 5.0  # how long a run's answer waits for its waiters (they poll at least every MAX_DELAY_S)

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
    ) -> Flown[T]:
        """The answer from `lookup` (the cache), from the run this call waited on, or from `compute` (which
        returns the answer and whether it cached it), computing it only while holding the key's marker. An
        answer not cached is handed to the waiters as `share` makes it, and read back with `take`."""
        token = uuid.uuid4().hex
        deadline = time.monotonic() + self.wait_s
        delay = FIRST_DELAY_S
        waited = False
        awaited: set[str] = set()  # the runs this call waited on
        while True:
            holder = self.backend.claim(key, token, self.expiry_s)
            if holder is None:
                try:
                    # the run waited on may have ended just now: its answer is cached or handed over
                    found = self._ready(key, lookup, take, awaited) if waited else None
                    if found is not None:
                        return Flown(found, False, waited)
                    return Flown(self._compute(key, token, compute, share), True, waited)
                finally:
                    self.backend.release(key, token)
            if holder:
                awaited.add(holder)
            waited = True
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY_S)
            found = self._ready(key, lookup, take, awaited)
            if found is not None:
                return Flown(found, False, waited)
            if time.monotonic() > deadline:
                return Flown(compute()[0], True, waited)

    def _ready(
        self, key: CacheKey, lookup: Callable[[], T | None], take: Callable[[Entry], T], awaited: set[str]
    ) -> T | None:
        """The cached answer, else what a run this call waited on handed over (its error is raised)."""
        found = lookup()
        if found is not None:
            return found
        for run in awaited:
            handed = self.backend.handed(key, run)
            if isinstance(handed, BaseException):
                raise _copy(handed)
            if handed is not None:
                return take(handed)
        return None

    def _compute(
        self, key: CacheKey, token: str, compute: Callable[[], tuple[T, bool]], share: Callable[[T], Entry]
    ) -> T:
        with _Heartbeat(self.backend, key, token, self.expiry_s):
            try:
                value, cached = compute()
            except Exception as err:
                self._hand(key, token, err)
                raise
        if not cached:
            self._hand(key, token, share(value))
        return value

    def _hand(self, key: CacheKey, token: str, handed: Entry | BaseException) -> None:
        try:
            self.backend.hand_over(key, token, handed, HANDED_S)
        except CacheError as err:  # the waiters then take over and run it themselves
            level = logging.DEBUG if isinstance(err, CacheUnavailableError) else logging.WARNING
            log.log(level, "query answer not handed to waiters: %s", err)


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
