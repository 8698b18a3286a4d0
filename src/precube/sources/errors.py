"""Errors of the sources domain."""

from __future__ import annotations

from precube.errors import PrecubeError


class SourceError(PrecubeError):
    """Base of source errors."""

    code = "SOURCE_ERROR"


class UnreadableSourceError(SourceError):
    """A table's files or catalog entry cannot be read."""

    code = "SOURCE_UNREADABLE"


class UnsupportedTypeError(SourceError):
    """A column type precube cannot represent."""

    code = "UNSUPPORTED_TYPE"
