"""Errors of the result cache."""

from __future__ import annotations

from precube.errors import PrecubeError


class CacheError(PrecubeError):
    """The cache backend cannot be reached or holds something unreadable."""

    code = "CACHE_ERROR"
    retryable = True
