"""Comparisons a column's type cannot take, caught while planning (`query.type_checks`): long literal lists, which
the front end reads as one collapsed literal, are checked item by item like short ones."""

from __future__ import annotations

import pytest

from precube.query.errors import InvalidTextError, OperatorTypeError
from precube.query.frontend import Catalog, normalise, parse
from precube.query.plan_cache import shape_of
from precube.query.type_checks import check_comparisons

CATALOG = Catalog("ssb", {"ssb": {"lineorder": {"lo_orderdate": "date", "lo_quantity": "int"}}})
DAYS = ", ".join(f"'1992-{m:02d}-{d:02d}'" for m in range(1, 13) for d in range(1, 29))  # collapsed: > MIN_LIFTED
NUMBERS = ", ".join(str(19920000 + 100 * m + d) for m in range(1, 13) for d in range(1, 29))


def _check(where: str) -> None:
    sql = f"select count(*) from ssb.lineorder where {where}"
    shape = shape_of(sql)  # parsed as a session parses it: a long list collapsed into one literal
    assert shape is not None
    check_comparisons(normalise(parse(sql, shape.starts, 100, shape.tokens), CATALOG), CATALOG)


@pytest.mark.parametrize(
    "where",
    [f"lo_orderdate in ({DAYS})", "lo_orderdate in ('1992-01-01', '1992-01-02')", f"lo_quantity in ({NUMBERS})"],
)
def test_a_list_of_the_columns_type_passes(where: str) -> None:
    _check(where)


@pytest.mark.parametrize(
    ("where", "kind", "words"),
    [
        (f"lo_orderdate in ({NUMBERS})", OperatorTypeError, "cannot compare lo_orderdate (DATE) with 19920101"),
        ("lo_orderdate < 19940101", OperatorTypeError, "write DATE '1994-01-01'"),
        (f"lo_quantity in ({DAYS})", InvalidTextError, "'1992-01-01'"),
    ],
)
def test_a_list_of_another_type_is_refused_in_one_line(where: str, kind: type[Exception], words: str) -> None:
    with pytest.raises(kind) as raised:
        _check(where)
    assert words in str(raised.value) and "\n" not in str(raised.value)
