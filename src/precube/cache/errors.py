"""Errors of the result cache."""

from __future__ import annotations

from precube.errors import PrecubeError


class CacheError(PrecubeError):
    """The cache backend cannot be reached or holds something unreadable."""

    code = "CACHE_ERROR"
    retryable = True


class CacheUnavailableError(CacheError):
    """The backend is known to be down (a recent call failed to reach it): the cache is bypassed without
    trying, until a background probe finds it back."""

    code = "CACHE_UNAVAILABLE"
