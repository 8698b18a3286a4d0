"""Errors of the modeling domain; each message names the offending field or value."""

from __future__ import annotations

from precube.errors import PrecubeError


class ModelingError(PrecubeError):
    """Base of modeling errors."""

    code = "MODELING_ERROR"


class InvalidModelError(ModelingError):
    """A model definition breaks a rule (unknown column, bad join, duplicate name, …)."""

    code = "INVALID_MODEL"


class InvalidIndexPlanError(ModelingError):
    """An aggregation group, rule set or explicit index is invalid."""

    code = "INVALID_INDEX_PLAN"


class TooManyLayoutsError(InvalidIndexPlanError):
    """A rule set expands to more layouts than allowed (4,096 per group, 40,960 in all)."""

    code = "TOO_MANY_LAYOUTS"


class SegmentRuleError(ModelingError):
    """A segment operation (build, refresh, merge, delete) is not allowed on the current segments."""

    code = "SEGMENT_RULE"
