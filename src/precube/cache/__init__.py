"""The query result cache (DESIGN §7): answers of earlier queries, shared by every session of a backend,
dropped when a segment they could cover changes.

`key` names a statement (its sqlglot token shape, shared with the plan cache) in one metadata store's
project; `entry` is the cached value and its serialization; `backend` is the Protocol of the stores
(`memory`, `redis_backend`); `validity` decides on read whether an entry still holds; `single_flight` runs
identical concurrent queries once; `keep_rules` and `volatility` decide what is kept; `result_cache` ties them
together, and `cached_session` puts them in front of a query session (the query package never imports the
cache).
"""

from precube.cache.backend import CacheBackend, open_backend
from precube.cache.cached_session import CachedSession, SessionCache
from precube.cache.result_cache import ResultCache

__all__ = ["CacheBackend", "CachedSession", "ResultCache", "SessionCache", "open_backend"]
