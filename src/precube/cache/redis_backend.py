"""The shared backend: entries, flight markers and counters in Redis, so every process of a deployment sees
the same answers and runs an identical query once.

Keys, per scope (a store's identity and a project): `precube:{scope}:e:{digest}` (a serialized entry, with the
TTL as its expiry), `…:run:{digest}` (the running marker: SET NX PX), `…:hand:{digest}:{run}` (what a run
handed its waiters: an entry, or its error's class and message and whether they share it),
`precube:{scope}:stats` (a hash of counters).

A Redis that cannot be reached must not slow queries down: calls time out after `[cache] redis_timeout_s`, and
the first call that fails to reach Redis marks it down (one warning in the log): from then on every call fails
at once (`CacheUnavailableError`, the cache bypassed) while a background thread pings it; when it answers again
the pool's stale connections are dropped, caching resumes and the log says so.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from precube.cache.backend import STATS, Failure, Handed, register
from precube.cache.entry import Entry, dumps, loads
from precube.cache.errors import CacheError, CacheUnavailableError
from precube.cache.key import CacheKey
from precube.errors import PrecubeError
from precube.query.errors import QueryError

log = logging.getLogger(__name__)
PROBE_S = 1.0  # while Redis is down, how often the background probe pings it

# Compare-and-delete and compare-and-expire: only the holder of a marker may release or extend it.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_GLOB = str.maketrans({c: f"\\{c}" for c in "*?[]\\"})


def _shown(url: str) -> str:
    """`url` with its password, if any, replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{parts.netloc.rsplit('@', 1)[1]}"))


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisBackend:
    name = "redis"
    in_process = False

    def __init__(self, url: str, timeout_s: float = 0.5) -> None:
        import redis  # the one client of the shared backend; imported only when a redis:// URL is configured

        self._errors: tuple[type[Exception], ...] = (redis.RedisError,)
        self._unreachable: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError, OSError)
        self.url = _shown(url)  # what logs and errors name: without the password
        self.client: Any = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self._release = self.client.register_script(_RELEASE)
        self._renew = self.client.register_script(_RENEW)
        self._down: str | None = None  # why Redis is thought unreachable; None while it answers
        self._down_lock = threading.Lock()
        self._closed = threading.Event()

    @property
    def available(self) -> bool:
        return self._down is None

    @staticmethod
    def _key(key: CacheKey, kind: str) -> str:
        return f"precube:{key.scope}:{kind}:{key.digest}"

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        down = self._down
        if down is not None:
            raise CacheUnavailableError(f"cache backend {self.url} is unreachable ({down}): bypassed")
        try:
            return fn(*args, **kwargs)
        except self._unreachable as err:
            self._mark_down(str(err) or type(err).__name__)
            raise CacheUnavailableError(f"cache backend {self.url} is unreachable: {err}") from err
        except self._errors as err:
            raise CacheError(f"cache backend {self.url}: {err}") from err

    def _mark_down(self, reason: str) -> None:
        with self._down_lock:
            if self._down is not None or self._closed.is_set():
                return
            self._down = reason
        log.warning(
            "query cache %s is unreachable (%s): queries bypass it until it answers (checked every %.0f s)",
            self.url,
            reason,
            PROBE_S,
        )
        threading.Thread(target=self._probe, name="precube-cache-probe", daemon=True).start()

    def _probe(self) -> None:
        """Ping until Redis answers, then drop the pool's connections (made before it went away) and resume."""
        while not self._closed.wait(PROBE_S):
            try:
                self.client.ping()
            except self._errors:
                continue
            self.client.connection_pool.disconnect(inuse_connections=False)
            self._down = None
            log.warning("query cache %s answers again: caching resumed", self.url)
            return

    def get(self, key: CacheKey) -> Entry | None:
        data = self._call(self.client.get, self._key(key, "e"))
        return None if data is None else loads(data)

    def put(self, key: CacheKey, entry: Entry, ttl_s: float) -> None:
        self._call(self.client.set, self._key(key, "e"), dumps(entry), px=_ms(ttl_s))

    def delete(self, key: CacheKey) -> bool:
        return bool(self._call(self.client.delete, self._key(key, "e")))

    def _entry_keys(self, scope: str) -> list[bytes]:
        pattern = f"precube:{scope.translate(_GLOB)}:e:*"
        return list(self._call(lambda: list(self.client.scan_iter(match=pattern, count=1000))))

    def clear(self, scope: str) -> int:
        keys = self._entry_keys(scope)
        for i in range(0, len(keys), 500):
            self._call(self.client.delete, *keys[i : i + 500])
        return len(keys)

    def size(self, scope: str) -> tuple[int, int]:
        keys = self._entry_keys(scope)
        pipe = self.client.pipeline(transaction=False)
        for k in keys:
            pipe.strlen(k)
        return len(keys), sum(self._call(pipe.execute)) if keys else 0

    def claim(self, key: CacheKey, token: str, expiry_s: float) -> str | None:
        pipe = self.client.pipeline(transaction=True)  # MULTI: the holder read is the one SET NX saw
        pipe.set(self._key(key, "run"), token, nx=True, px=_ms(expiry_s))
        pipe.get(self._key(key, "run"))
        claimed, holder = self._call(pipe.execute)
        if claimed:
            return None
        return holder.decode() if holder is not None else ""  # expired between the two: claim again

    def renew(self, key: CacheKey, token: str, expiry_s: float) -> bool:
        return bool(self._call(self._renew, keys=[self._key(key, "run")], args=[token, _ms(expiry_s)]))

    def release(self, key: CacheKey, token: str) -> None:
        self._call(self._release, keys=[self._key(key, "run")], args=[token])

    def hand_over(self, key: CacheKey, token: str, handed: Handed, expiry_s: float) -> None:
        if isinstance(handed, Entry):
            data = b"E" + dumps(handed)
        else:
            kind = type(handed.error)
            failed = {"type": f"{kind.__module__}:{kind.__qualname__}", "message": str(handed.error)}
            data = b"X" + json.dumps({**failed, "shared": handed.shared}).encode()
        self._call(self.client.set, f"{self._key(key, 'hand')}:{token}", data, px=_ms(expiry_s))

    def handed(self, key: CacheKey, token: str) -> Handed | None:
        data = self._call(self.client.get, f"{self._key(key, 'hand')}:{token}")
        if data is None:
            return None
        if data[:1] == b"E":
            return loads(data[1:])
        failed = json.loads(data[1:])
        return Failure(_error(failed), bool(failed.get("shared", False)))

    def count(self, scope: str, stat: str, n: int = 1) -> None:
        self._call(self.client.hincrby, f"precube:{scope}:stats", stat, n)

    def stats(self, scope: str) -> dict[str, int]:
        found = self._call(self.client.hgetall, f"precube:{scope}:stats")
        counted = {k.decode(): int(v) for k, v in found.items()}
        return {s: counted.get(s, 0) for s in STATS}

    def close(self) -> None:
        """Close the connections (a later call reconnects) and stop probing."""
        self._closed.set()
        self.client.close()


def _error(found: dict[str, str]) -> BaseException:
    """The error another process's run ended with: its own precube class when it is one (only precube's
    modules are imported, whatever the shared store holds), else a `QueryError` with its message."""
    module, _, name = str(found.get("type", "")).partition(":")
    message = str(found.get("message", ""))
    if module.startswith("precube.") and name.isidentifier():
        try:
            kind = getattr(importlib.import_module(module), name, None)
        except ImportError:
            kind = None
        if isinstance(kind, type) and issubclass(kind, PrecubeError):
            try:
                return kind(message)
            except TypeError:  # a class with another constructor: its message still reaches the waiter
                pass
    return QueryError(message)


register("redis", lambda url, settings: RedisBackend(url, settings.redis_timeout_s))
register("rediss", lambda url, settings: RedisBackend(url, settings.redis_timeout_s))
