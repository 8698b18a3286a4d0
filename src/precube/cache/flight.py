"""Single flight: identical concurrent queries run once.

The first sets the key's running marker atomically (SET NX with an expiry) and renews it while it runs, so a
server that crashes blocks the others only until the marker expires. The others poll, backing off from 2 ms
to 100 ms, for the answer in the cache. When the marker is gone without an answer (the first one failed or
crashed), one of them takes the marker over and runs the query. A run whose answer is not admitted says so,
and its waiters then run the query themselves instead of one after another. Errors are never cached.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from precube.cache.backend import CacheBackend
from precube.cache.key import CacheKey

T = TypeVar("T")

FIRST_DELAY_S = 0.002
MAX_DELAY_S = 0.1


@dataclass
class Flown(Generic[T]):
    value: T
    ran: bool  # this call ran the query (else it read the answer of another)
    waited: bool


class Flight:
    """Runs `compute` for a key at most once at a time across every process of the backend."""

    def __init__(self, backend: CacheBackend, expiry_s: float = 30.0, wait_s: float = 300.0) -> None:
        self.backend = backend
        self.expiry_s = expiry_s
        self.wait_s = wait_s

    def run(self, key: CacheKey, lookup: Callable[[], T | None], compute: Callable[[], tuple[T, bool]]) -> Flown[T]:
        """The answer from `lookup` (the cache) or `compute` (which returns the answer and whether it cached
        it), computing it only while holding the key's marker."""
        token = uuid.uuid4().hex
        deadline = time.monotonic() + self.wait_s
        delay = FIRST_DELAY_S
        waited = False
        while True:
            if self.backend.claim(key, token, self.expiry_s):
                try:
                    found = lookup() if waited else None  # the previous holder may have cached it just now
                    if found is not None:
                        return Flown(found, False, waited)
                    with _Heartbeat(self.backend, key, token, self.expiry_s):
                        value, cached = compute()
                    if not cached:
                        self.backend.mark_uncached(key, max(1.0, self.expiry_s))
                    return Flown(value, True, waited)
                finally:
                    self.backend.release(key, token)
            waited = True
            time.sleep(delay)
            delay = min(delay * 2, MAX_DELAY_S)
            found = lookup()
            if found is not None:
                return Flown(found, False, waited)
            if self.backend.uncached(key) or time.monotonic() > deadline:
                return Flown(compute()[0], True, waited)


class _Heartbeat:
    """Renews a marker every third of its expiry while the query runs."""

    def __init__(self, backend: CacheBackend, key: CacheKey, token: str, expiry_s: float) -> None:
        self.backend, self.key, self.token, self.expiry_s = backend, key, token, expiry_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="precube-cache-flight", daemon=True)

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
