"""The cache key: the metadata store's identity + project + the statement's exact identity + the window of rows
asked for (offset, limit: a window's answer is not the whole answer), accept-partial and the digest of what about
the caller can change an answer (`access`: empty today; table, column and row permissions will fill it in).

The statement's identity is the plan cache's shape (`precube.query.plan_cache.shape_of`): sqlglot's tokens
without whitespace, comments or trailing semicolons, keywords by kind and names in lower case, with the
literals' text kept verbatim as parameters. Spellings that differ only in those share a key; text inside
string literals never changes it.

Entries, flight markers and counters live in a *scope*: one store's project. Two metadata stores sharing one
Redis (a restored copy beside the original, two deployments) never see each other's answers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from precube.query.bounds import WHOLE, Window
from precube.query.plan_cache import Shape, shape_of


def scope_of(store: str, project: str) -> str:
    """The namespace of `project` of the metadata store whose identity is `store`."""
    return f"{store}:{project}"


@dataclass(frozen=True)
class CacheKey:
    """Where an answer is kept: its scope (entries are cleared per scope) and a digest of the rest."""

    scope: str
    digest: str

    def __str__(self) -> str:
        return f"{self.scope}/{self.digest}"


def cache_key(
    store: str,
    project: str,
    shape: Shape,
    *,
    window: Window = WHOLE,
    accept_partial: bool = False,
    access: str = "",
) -> CacheKey:
    """The key of a statement of `shape` run in `project` of store `store` with these request options."""
    # JSON quotes every part, so no literal's text can run into the next part; a whole answer's window is
    # (None, None), as before windows were kept apart
    limit, offset = window.limit or None, window.offset or None
    text = json.dumps([shape.key, shape.params, limit, offset, accept_partial, access], ensure_ascii=False)
    return CacheKey(scope_of(store, project), hashlib.blake2b(text.encode(), digest_size=20).hexdigest())


def key_of_sql(store: str, project: str, sql: str, *, access: str = "") -> CacheKey | None:
    """The key of `sql` as `CachedSession.sql` runs it; None when it does not tokenize (such a statement is
    never cached)."""
    shape = shape_of(sql)
    return None if shape is None else cache_key(store, project, shape, access=access)
