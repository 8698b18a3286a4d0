"""The in-process backend (the default): an LRU of entries bounded by their bytes, with TTLs, and the
flight markers and counters of this process. Entries are kept as objects, so a hit deserializes nothing."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, defaultdict

from precube.cache.backend import STATS, register
from precube.cache.entry import Entry
from precube.cache.key import CacheKey

SWEEP_AT = 1024  # "not cached" marks kept before the expired ones are dropped


class MemoryBackend:
    name = "memory"

    def __init__(self, memory_mb: float = 256.0) -> None:
        self.limit = int(memory_mb * 1024 * 1024)
        self._entries: OrderedDict[CacheKey, tuple[Entry, float, int]] = OrderedDict()  # entry, expiry, bytes
        self._bytes = 0
        self._markers: dict[CacheKey, tuple[str, float]] = {}  # token, expiry
        self._uncached: dict[CacheKey, float] = {}
        self._stats: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(STATS, 0))
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> Entry | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if found[1] <= time.monotonic():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: CacheKey, entry: Entry, ttl_s: float) -> None:
        size = entry.nbytes
        if size > self.limit:
            return  # would evict everything else and still not fit
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (entry, time.monotonic() + ttl_s, size)
            self._bytes += size
            while self._bytes > self.limit:
                self._drop(next(iter(self._entries)))

    def _drop(self, key: CacheKey) -> None:
        self._bytes -= self._entries.pop(key)[2]

    def delete(self, key: CacheKey) -> bool:
        with self._lock:
            if key not in self._entries:
                return False
            self._drop(key)
            return True

    def clear(self, project: str) -> int:
        with self._lock:
            keys = [k for k in self._entries if k.project == project]
            for k in keys:
                self._drop(k)
            return len(keys)

    def size(self, project: str) -> tuple[int, int]:
        with self._lock:
            sizes = [s for k, (_, _, s) in self._entries.items() if k.project == project]
        return len(sizes), sum(sizes)

    def claim(self, key: CacheKey, token: str, expiry_s: float) -> bool:
        now = time.monotonic()
        with self._lock:
            held = self._markers.get(key)
            if held is not None and held[1] > now:
                return False
            self._markers[key] = (token, now + expiry_s)
            self._uncached.pop(key, None)
            return True

    def renew(self, key: CacheKey, token: str, expiry_s: float) -> bool:
        with self._lock:
            held = self._markers.get(key)
            if held is None or held[0] != token:
                return False
            self._markers[key] = (token, time.monotonic() + expiry_s)
            return True

    def release(self, key: CacheKey, token: str) -> None:
        with self._lock:
            held = self._markers.get(key)
            if held is not None and held[0] == token:
                del self._markers[key]

    def running(self, key: CacheKey) -> bool:
        with self._lock:
            held = self._markers.get(key)
            return held is not None and held[1] > time.monotonic()

    def mark_uncached(self, key: CacheKey, expiry_s: float) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._uncached) >= SWEEP_AT:  # most answers are not admitted: forget the expired marks
                self._uncached = {k: until for k, until in self._uncached.items() if until > now}
            self._uncached[key] = now + expiry_s

    def uncached(self, key: CacheKey) -> bool:
        with self._lock:
            until = self._uncached.get(key)
            return until is not None and until > time.monotonic()

    def count(self, project: str, stat: str, n: int = 1) -> None:
        with self._lock:
            self._stats[project][stat] += n

    def stats(self, project: str) -> dict[str, int]:
        with self._lock:
            return dict(self._stats[project])

    def close(self) -> None:
        """Nothing to release; entries stay for other sessions sharing this backend."""


register("memory", lambda url, memory_mb: MemoryBackend(memory_mb))
