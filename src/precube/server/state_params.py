"""Kylin's prepared-statement parameters (`StateParam`: a Java class name and the value as text, as Kylin's JDBC
driver and precube's thin client send them in `POST /query`'s `params`) read back as the Python values the one
binder (`precube.service.parameters`) takes. The thin client writes them (`precube_client.params`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from precube.errors import InvalidInputError
from precube.service.parameters import Real


class StateParam(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    class_name: str = Field(alias="className", max_length=64)
    value: str | None = None


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


_READERS: dict[str, Callable[[str], Any]] = {
    "java.lang.String": str,
    "java.lang.Character": str,
    "java.lang.Object": str,
    "java.lang.Boolean": _boolean,
    "java.lang.Byte": int,
    "java.lang.Short": int,
    "java.lang.Integer": int,
    "java.lang.Long": int,
    "java.math.BigInteger": int,
    "java.lang.Float": lambda text: Real(float(text)),  # bound as FLOAT, not DOUBLE
    "java.lang.Double": float,
    "java.math.BigDecimal": Decimal,
    "java.sql.Date": dt.date.fromisoformat,
    "java.sql.Time": dt.time.fromisoformat,
    "java.sql.Timestamp": dt.datetime.fromisoformat,
    "[B": bytes.fromhex,  # byte[]: its bytes in hex
}


def values_of(params: list[StateParam]) -> list[Any]:
    """Each parameter's value (null: NULL); an unknown class or a value it cannot read is the request's error."""
    found: list[Any] = []
    for at, param in enumerate(params, 1):
        reader = _READERS.get(param.class_name)
        if reader is None:
            raise InvalidInputError(f"parameter {at} has an unknown className {param.class_name!r}")
        try:
            found.append(None if param.value is None else reader(param.value))
        except (ValueError, InvalidOperation) as err:
            raise InvalidInputError(f"parameter {at} is not a {param.class_name}: {param.value!r:.60}") from err
    return found
