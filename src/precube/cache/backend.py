"""What a cache backend stores (DESIGN §9.5: a Protocol plus a registry): entries with a TTL, the single-flight
markers, and per-project counters. `memory` keeps them in this process; `redis://…` shares them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from precube.cache.entry import Entry
from precube.cache.errors import CacheError
from precube.cache.key import CacheKey

STATS = ("hits", "misses", "stale", "waits", "stores", "skipped")


class CacheBackend(Protocol):
    """A store of cache entries, flight markers and counters, safe to use from many threads."""

    name: str

    def get(self, key: CacheKey) -> Entry | None: ...

    def put(self, key: CacheKey, entry: Entry, ttl_s: float) -> None: ...

    def delete(self, key: CacheKey) -> bool:
        """Drop one entry; whether it was there."""
        ...

    def clear(self, project: str) -> int:
        """Drop every entry of a project; how many there were."""
        ...

    def size(self, project: str) -> tuple[int, int]:
        """A project's entries and their bytes."""
        ...

    def claim(self, key: CacheKey, token: str, expiry_s: float) -> bool:
        """Set the running marker of `key` unless one is set (atomically); whether this call set it."""
        ...

    def renew(self, key: CacheKey, token: str, expiry_s: float) -> bool:
        """Push the marker's expiry back while `token` holds it."""
        ...

    def release(self, key: CacheKey, token: str) -> None:
        """Remove the marker if `token` still holds it."""
        ...

    def running(self, key: CacheKey) -> bool: ...

    def mark_uncached(self, key: CacheKey, expiry_s: float) -> None:
        """Tell waiters the run ended well but its answer was not admitted, so they should run it themselves."""
        ...

    def uncached(self, key: CacheKey) -> bool: ...

    def count(self, project: str, stat: str, n: int = 1) -> None: ...

    def stats(self, project: str) -> dict[str, int]: ...

    def close(self) -> None: ...


_REGISTRY: dict[str, Callable[[str, float], CacheBackend]] = {}


def register(scheme: str, factory: Callable[[str, float], CacheBackend]) -> None:
    """Make `open_backend` open URLs of `scheme` with `factory(url, memory_mb)`."""
    _REGISTRY[scheme] = factory


def open_backend(url: str, memory_mb: float = 256.0) -> CacheBackend:
    """The backend a settings URL names: `memory` (or `memory://`) or `redis://host:port/db`."""
    import precube.cache.memory
    import precube.cache.redis_backend  # noqa: F401 (each module registers its scheme)

    scheme = url.split("://", 1)[0] if "://" in url else url
    factory = _REGISTRY.get(scheme.lower())
    if factory is None:
        raise CacheError(f"unknown cache backend {url!r}: use 'memory' or 'redis://host:port/db'")
    return factory(url, memory_mb)
