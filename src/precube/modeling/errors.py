"""Errors of the modeling domain; each message names the offending field or value."""

from __future__ import annotations

from precube.errors import PrecubeError


class ModelingError(PrecubeError):
    """Base of modeling errors."""

    code = "MODELING_ERROR"


class InvalidModelError(ModelingError):
    """A model definition breaks a rule (unknown column, bad join, duplicate name, …); `problems`: every rule
    a spec breaks, each with its path in the file (the message joins them in one line)."""

    code = "INVALID_MODEL"

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)

    @classmethod
    def of(cls, problems: list[str]) -> InvalidModelError:
        """One error for all of `problems` (at least one)."""
        text = problems[0] if len(problems) == 1 else f"{len(problems)} problems: " + "; ".join(problems)
        return cls(text, tuple(problems))


class InvalidIndexPlanError(ModelingError):
    """An aggregation group, rule set or explicit index is invalid."""

    code = "INVALID_INDEX_PLAN"


class TooManyLayoutsError(InvalidIndexPlanError):
    """A rule set expands to more layouts than allowed (4,096 per group, 40,960 in all)."""

    code = "TOO_MANY_LAYOUTS"


class SegmentRuleError(ModelingError):
    """A segment operation (build, refresh, merge, delete) is not allowed on the current segments."""

    code = "SEGMENT_RULE"
