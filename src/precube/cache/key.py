"""The cache key: project + the statement's exact identity + limit, offset, accept-partial and (when access
rules differ) the user.

The statement's identity is the plan cache's shape (`precube.query.plan_cache.shape_of`): sqlglot's tokens
without whitespace or comments, keywords by kind and names in lower case, with the literals' text kept
verbatim as parameters. Spellings that differ only in whitespace, keyword case or comments share a key;
text inside string literals never changes it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from precube.query.plan_cache import Shape, shape_of


@dataclass(frozen=True)
class CacheKey:
    """Where an answer is kept: its project (entries are cleared per project) and a digest of the rest."""

    project: str
    digest: str

    def __str__(self) -> str:
        return f"{self.project}/{self.digest}"


def cache_key(
    project: str,
    shape: Shape,
    *,
    limit: int | None = None,
    offset: int | None = None,
    accept_partial: bool = False,
    user: str | None = None,
) -> CacheKey:
    """The key of a statement of `shape` run in `project` with these request options."""
    # JSON quotes every part, so no literal's text can run into the next part
    text = json.dumps([shape.key, shape.params, limit, offset, accept_partial, user], ensure_ascii=False)
    return CacheKey(project, hashlib.blake2b(text.encode(), digest_size=20).hexdigest())


def key_of_sql(project: str, sql: str, *, user: str | None = None) -> CacheKey | None:
    """The key of `sql` as `Session.sql` runs it; None when it does not tokenize (such a statement is never
    cached)."""
    shape = shape_of(sql)
    return None if shape is None else cache_key(project, shape, user=user)
