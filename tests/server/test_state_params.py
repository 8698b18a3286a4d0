"""Parameters on the wire between the thin client and the server (Kylin's `params`): every value the binder
takes reads back as itself, and what the wire cannot carry is refused on either side with a one-line message."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pytest

from precube.errors import InvalidInputError
from precube.server.state_params import StateParam, values_of
from precube.service.parameters import Real
from precube_client.errors import NotSupportedError, ProgrammingError
from precube_client.params import state_params

VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -(2**63),
    2**63,  # past a Java long: BigInteger
    -(10**30),
    1.5,
    -0.1,
    1e300,
    math.inf,
    -math.inf,
    Decimal("12.50"),
    Decimal("-0.001"),
    "O'Brien \\ nul\x00 é 中",
    "",
    b"\x00\xffbytes",
    dt.date(1995, 5, 1),
    dt.datetime(1995, 5, 1, 12, 30, 15, 250),
    dt.datetime(1995, 5, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    dt.time(23, 59, 58, 7),
]


def _round_trip(values: list[Any]) -> list[Any]:
    return values_of([StateParam.model_validate(p) for p in state_params(values)])


def test_every_value_reads_back_as_itself() -> None:
    back = _round_trip(VALUES)
    assert back == VALUES
    assert [type(v) for v in back] == [type(v) for v in VALUES]
    [nan] = _round_trip([math.nan])
    assert math.isnan(nan)


def test_a_java_float_is_bound_as_real() -> None:
    [value] = values_of([StateParam(className="java.lang.Float", value="0.1")])
    assert isinstance(value, Real) and value == 0.1


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ({"className": "java.util.List", "value": "[]"}, "parameter 1 has an unknown className 'java.util.List'"),
        ({"className": "java.lang.Long", "value": "x"}, "parameter 1 is not a java.lang.Long: 'x'"),
        ({"className": "java.math.BigDecimal", "value": "1,5"}, "parameter 1 is not a java.math.BigDecimal: '1,5'"),
        ({"className": "java.lang.Boolean", "value": "yes"}, "parameter 1 is not a java.lang.Boolean: 'yes'"),
        ({"className": "java.sql.Date", "value": "1995-13-01"}, "parameter 1 is not a java.sql.Date: '1995-13-01'"),
    ],
)
def test_the_server_refuses_what_it_cannot_read(param: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        values_of([StateParam.model_validate(param)])
    assert raised.value.message == message


def test_the_client_refuses_what_the_wire_cannot_carry() -> None:
    with pytest.raises(ProgrammingError, match="positional"):
        state_params({"a": 1})
    with pytest.raises(NotSupportedError, match="a parameter of type list cannot be bound"):
        state_params([[1, 2]])
