"""Parameters bound as SQL literals (paramstyle `qmark`) by the one binder (`precube.service.parameters.bind`:
the statement parsed with its `?` marks, each replaced by its value's literal node; no value is ever pasted into
the text), its refusals raised as PEP 249's errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from precube.dbapi.errors import NotSupportedError, ProgrammingError
from precube.service import parameters
from precube.service.parameters import ParameterError, ParameterMarksError


def bind(sql: str, values: Sequence[Any] | Mapping[str, Any] | None) -> str:
    """`sql` with each `?` replaced by the literal of the parameter at its position."""
    try:
        return parameters.bind(sql, values)
    except ParameterMarksError as err:
        raise ProgrammingError(err.message) from err
    except ParameterError as err:
        raise NotSupportedError(err.message) from err
