"""Parameters as a precube server takes them: Kylin's prepared-statement `params` (`StateParam`: a Java class
name and the value as text, `null` for NULL), bound by the server's one binder (`precube.service.parameters`),
so this client needs no SQL parser. A value the wire cannot carry is refused here, as the binder would."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from precube_client.errors import NotSupportedError, ProgrammingError

LONG = range(-(2**63), 2**63)


def state_params(values: Sequence[Any] | Mapping[str, Any]) -> list[dict[str, str | None]]:
    """Each positional value as `{"className": …, "value": …}`."""
    if isinstance(values, Mapping | str | bytes) or not isinstance(values, Sequence):
        raise ProgrammingError("parameters are positional (paramstyle qmark): give a list or tuple for the ? marks")
    return [state_param(v) for v in values]


def state_param(value: Any) -> dict[str, str | None]:
    """One value's class name and text (a datetime before a date: it is one)."""
    if value is None:
        return _param("java.lang.Object", None)
    if isinstance(value, bool):
        return _param("java.lang.Boolean", "true" if value else "false")
    if isinstance(value, int):
        return _param("java.lang.Long" if value in LONG else "java.math.BigInteger", str(int(value)))
    if isinstance(value, float):
        shown = repr(float(value)) if math.isfinite(value) else "NaN" if math.isnan(value) else _infinity(value)
        return _param("java.lang.Double", shown)
    if isinstance(value, Decimal):
        return _param("java.math.BigDecimal", str(value))
    if isinstance(value, str):
        return _param("java.lang.String", str(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return _param("[B", bytes(value).hex())  # byte[]'s class name; the bytes in hex
    if isinstance(value, dt.datetime):
        return _param("java.sql.Timestamp", value.isoformat(sep=" "))
    if isinstance(value, dt.date):
        return _param("java.sql.Date", value.isoformat())
    if isinstance(value, dt.time):
        return _param("java.sql.Time", value.isoformat())
    raise NotSupportedError(f"a parameter of type {type(value).__name__} cannot be bound (value {value!r:.60})")


def _param(class_name: str, value: str | None) -> dict[str, str | None]:
    return {"className": class_name, "value": value}


def _infinity(value: float) -> str:
    return "Infinity" if value > 0 else "-Infinity"
