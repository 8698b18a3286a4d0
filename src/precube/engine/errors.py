"""Errors of the build domain."""

from __future__ import annotations

from precube.errors import PrecubeError


class BuildError(PrecubeError):
    """Base of build errors."""

    code = "BUILD_ERROR"


class BuildConflictError(BuildError):
    """The build cannot start: the model is broken, a segment overlaps, a layout is unknown…"""

    code = "BUILD_CONFLICT"
