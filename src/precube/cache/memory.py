"""The in-process backend (the default): an LRU of entries bounded by their bytes, with TTLs, and the
flight markers, handed-over answers and counters of this process. Entries are kept as objects, so a hit
deserializes nothing.

One backend per process (per memory size): every session of the process shares its answers, which is the
point of the cache. `open_backend("memory")` returns that one; `MemoryBackend()` makes a private one.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, defaultdict

from precube.cache.backend import STATS, Handed, register
from precube.cache.entry import Entry
from precube.cache.key import CacheKey

SWEEP_AT = 1024  # handed-over answers kept before the expired ones are dropped


class MemoryBackend:
    name = "memory"
    in_process = True
    available = True  # in this process: never down

    def __init__(self, memory_mb: float = 256.0) -> None:
        self.limit = int(memory_mb * 1024 * 1024)
        self._entries: OrderedDict[CacheKey, tuple[Entry, float, int]] = OrderedDict()  # entry, expiry, bytes
        self._bytes = 0
        self._markers: dict[CacheKey, tuple[str, float]] = {}  # token, expiry
        self._handed: dict[tuple[CacheKey, str], tuple[Handed, float]] = {}  # (key, run) → answer, expiry
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

    def clear(self, scope: str) -> int:
        with self._lock:
            keys = [k for k in self._entries if k.scope == scope]
            for k in keys:
                self._drop(k)
            return len(keys)

    def size(self, scope: str) -> tuple[int, int]:
        with self._lock:
            sizes = [s for k, (_, _, s) in self._entries.items() if k.scope == scope]
        return len(sizes), sum(sizes)

    def claim(self, key: CacheKey, token: str, expiry_s: float) -> str | None:
        now = time.monotonic()
        with self._lock:
            held = self._markers.get(key)
            if held is not None and held[1] > now:
                return held[0]
            self._markers[key] = (token, now + expiry_s)
            return None

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

    def hand_over(self, key: CacheKey, token: str, handed: Handed, expiry_s: float) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._handed) >= SWEEP_AT:  # most answers are not kept: forget the expired ones
                self._handed = {k: v for k, v in self._handed.items() if v[1] > now}
            self._handed[key, token] = (handed, now + expiry_s)

    def handed(self, key: CacheKey, token: str) -> Handed | None:
        with self._lock:
            found = self._handed.get((key, token))
        return found[0] if found is not None and found[1] > time.monotonic() else None

    def count(self, scope: str, stat: str, n: int = 1) -> None:
        with self._lock:
            self._stats[scope][stat] += n

    def stats(self, scope: str) -> dict[str, int]:
        with self._lock:
            return dict(self._stats[scope])

    def close(self) -> None:
        """Nothing to release; entries stay for other sessions sharing this backend."""


_SHARED: dict[float, MemoryBackend] = {}  # the process's backends, by memory size (module docstring)
_SHARED_LOCK = threading.Lock()


def shared(memory_mb: float) -> MemoryBackend:
    """The process's memory backend of this size (made on first use)."""
    with _SHARED_LOCK:
        found = _SHARED.get(memory_mb)
        if found is None:
            found = _SHARED[memory_mb] = MemoryBackend(memory_mb)
        return found


register("memory", lambda url, settings: shared(settings.memory_mb))
