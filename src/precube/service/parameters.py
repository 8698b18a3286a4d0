"""A parameter's value as a SQL literal: the one rule every front end binds by (the DB-API's `?`, the wire's `$n`).

The literal is a sqlglot node put in place of the placeholder in the parsed statement, so a value never becomes
SQL text by pasting: the generator quotes and escapes it for precube's dialect (Spark SQL, where a backslash in a
string is an escape), and `literal_sql` is that node's text. Each literal reads back as the value it came from,
typed as Spark types it:

- None → NULL; bool → TRUE/FALSE
- int → a number (INT, BIGINT, or DECIMAL(p, 0) past BIGINT); Decimal → its exact digits, never via a float
  (`12.50` is DECIMAL(4, 2)). Either refused past 38 digits as written (a 0 before the point counts): the widest
  DECIMAL of Spark and of DuckDB, which read a longer fraction as a DOUBLE, losing digits (and Spark has no
  exact type for a longer integer).
- float → `CAST('repr' AS DOUBLE)` (a bare `1.5` would be a DECIMAL), NaN and ±Infinity included; `Real` → FLOAT
- str → a string (quotes, backslashes, NULs and any unicode are its content); bytes → `X'hex'` (BINARY)
- date → `CAST('yyyy-mm-dd' AS DATE)`; datetime → `CAST(… AS TIMESTAMP)`, an aware one moved to UTC first
  (precube's timestamps are UTC); time → a string (Spark SQL has no TIME type)

Anything else (a list, a timedelta, a NaN decimal, …) raises `ParameterError`: each front end answers it in its
own terms (PEP 249's NotSupportedError, SQLSTATE 22P02)."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

from sqlglot import exp

from precube.errors import InvalidInputError
from precube.modeling.spark_types import MAX_PRECISION
from precube.query.dialect import DIALECT


class ParameterError(InvalidInputError):
    """A parameter has no literal that reads back as its value: its type, or a value such as a NaN decimal."""


class Real(float):
    """A single-precision float (Postgres `real`): bound as Spark's FLOAT, so `0.1` meets a FLOAT column's 0.1."""


def literal_sql(value: Any) -> str:
    """The literal's text in precube's dialect."""
    return literal(value).sql(dialect=DIALECT)


def literal(value: Any) -> exp.Expr:
    """The literal node of a Python value."""
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, int):
        return _number(int(value))
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, Decimal):
        return _number(value)
    if isinstance(value, str):
        return exp.Literal.string(str(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return exp.HexString(this=bytes(value).hex())
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            try:
                value = value.astimezone(dt.UTC).replace(tzinfo=None)
            except OverflowError as err:  # 0001-01-01 00:00 at +02:00 is in year 0
                raise ParameterError(f"the timestamp {value} is out of range in UTC") from err
        return _typed(value.isoformat(sep=" "), "timestamp")
    if isinstance(value, dt.date):
        return _typed(value.isoformat(), "date")
    if isinstance(value, dt.time):
        return exp.Literal.string(value.isoformat())
    raise ParameterError(f"a parameter of type {type(value).__name__} cannot be bound (value {value!r:.60})")


def _number(value: int | Decimal) -> exp.Expr:
    """A number literal of the exact digits (a negative one is a Neg node, as `-5` parses: `x - ?` is `x - -5`)."""
    exact = Decimal(value)
    if not exact.is_finite():
        raise ParameterError(f"the decimal {value} has no SQL literal")
    exponent = exact.as_tuple().exponent
    assert isinstance(exponent, int)  # finite
    whole = exact.adjusted() + 1 if exact and exact.adjusted() >= 0 else 1  # DuckDB types 0.001 DECIMAL(4, 3)
    digits = whole + max(0, -exponent)
    if digits > MAX_PRECISION:  # checked before writing the digits out: 1E+999999999 is a gigabyte of zeros
        raise ParameterError(f"the number {exact:.6} has {digits} digits; SQL's DECIMAL holds {MAX_PRECISION}")
    number = exp.Literal.number(format(exact.copy_abs(), "f"))  # not `str`: 1E-7 would be read as a DOUBLE
    return exp.Neg(this=number) if exact.is_signed() else number


def _float(value: float) -> exp.Expr:
    if math.isfinite(value):
        shown = repr(float(value))  # the shortest text that reads back as this float
    else:
        shown = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return _typed(shown, "float" if isinstance(value, Real) else "double")


def _typed(text: str, kind: str) -> exp.Expr:
    return exp.cast(exp.Literal.string(text), exp.DataType.build(kind))
