"""What a cache backend stores (DESIGN §9.5: a Protocol plus a registry): entries with a TTL, the single-flight
markers and the answers (or errors) a run hands to its waiters, and per-scope counters (a scope is one store's
project, `key.scope_of`). `memory` keeps them in this process (one backend per process and size); `redis://…`
shares them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from precube.cache.entry import Entry
from precube.cache.errors import CacheError
from precube.cache.key import CacheKey
from precube.settings import CacheSettings

STATS = ("hits", "misses", "stale", "waits", "stores", "skipped")


@dataclass(frozen=True)
class Failure:
    """The error a run ended with, and whether its waiters take it (`shared`) or one of them runs the query
    again (after a failure of the run, not of the statement: `precube.cache.single_flight`)."""

    error: BaseException
    shared: bool


# What a run hands its waiters: its answer as an entry, or how it failed.
Handed = Entry | Failure


class CacheBackend(Protocol):
    """A store of cache entries, flight markers and counters, safe to use from many threads."""

    name: str
    in_process: bool  # entries live in this process's memory: reading one needs no I/O

    @property
    def available(self) -> bool:
        """Whether the backend is thought reachable (no I/O): False while a shared one is down and bypassed."""
        ...

    def get(self, key: CacheKey) -> Entry | None: ...

    def put(self, key: CacheKey, entry: Entry, ttl_s: float) -> None: ...

    def delete(self, key: CacheKey) -> bool:
        """Drop one entry; whether it was there."""
        ...

    def clear(self, scope: str) -> int:
        """Drop every entry of a scope; how many there were."""
        ...

    def size(self, scope: str) -> tuple[int, int]:
        """A scope's entries and their bytes."""
        ...

    def claim(self, key: CacheKey, token: str, expiry_s: float) -> str | None:
        """Set the running marker of `key` unless one is set (atomically); None when this call set it, else the
        token of the run that holds it."""
        ...

    def renew(self, key: CacheKey, token: str, expiry_s: float) -> bool:
        """Push the marker's expiry back while `token` holds it."""
        ...

    def release(self, key: CacheKey, token: str) -> None:
        """Remove the marker if `token` still holds it."""
        ...

    def hand_over(self, key: CacheKey, token: str, handed: Handed, expiry_s: float) -> None:
        """Keep the answer (or error) of run `token` briefly for the queries that waited on it."""
        ...

    def handed(self, key: CacheKey, token: str) -> Handed | None:
        """What run `token` handed over; None while it runs (or when it died without a word)."""
        ...

    def count(self, scope: str, stat: str, n: int = 1) -> None: ...

    def stats(self, scope: str) -> dict[str, int]: ...

    def close(self) -> None: ...


_REGISTRY: dict[str, Callable[[str, CacheSettings], CacheBackend]] = {}


def register(scheme: str, factory: Callable[[str, CacheSettings], CacheBackend]) -> None:
    """Make `open_backend` open URLs of `scheme` with `factory(url, settings)`."""
    _REGISTRY[scheme] = factory


def open_backend(url: str, settings: CacheSettings | None = None) -> CacheBackend:
    """The backend a settings URL names: `memory` (or `memory://`) or `redis://host:port/db`; `settings`: its
    bounds (the memory backend's size, Redis's timeouts)."""
    import precube.cache.memory
    import precube.cache.redis_backend  # noqa: F401 (each module registers its scheme)

    scheme = url.split("://", 1)[0] if "://" in url else url
    factory = _REGISTRY.get(scheme.lower())
    if factory is None:
        raise CacheError(f"unknown cache backend {url!r}: use 'memory' or 'redis://host:port/db'")
    return factory(url, settings or CacheSettings())
