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
own terms (PEP 249's NotSupportedError, SQLSTATE 0A000).

`bind(sql, parameters)` puts the literals in place of a statement's `?` marks (paramstyle qmark: the DB-API's,
and the query service's `run(…, parameters)`); the wire places its `$n` through its own parse
(`pgwire/placeholders.py`), with the same literals. A `?` inside a string, a quoted name or a comment is not a
mark (the tokenizer says which are); marks that do not match the parameters raise `ParameterMarksError`."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from precube.errors import InvalidInputError
from precube.modeling.spark_types import MAX_PRECISION
from precube.query.dialect import DIALECT


class ParameterError(InvalidInputError):
    """A parameter has no literal that reads back as its value: its type, or a value such as a NaN decimal."""


class ParameterMarksError(ParameterError):
    """The statement's `?` marks do not match the parameters given (their number, a named mark, no statement)."""


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


def bind(sql: str, parameters: Sequence[Any] | Mapping[str, Any] | None) -> str:
    """`sql` with each `?` replaced by the literal of the parameter at its position (None: `sql` as written)."""
    if parameters is None:
        return sql
    if isinstance(parameters, Mapping | str | bytes) or not isinstance(parameters, Sequence):
        raise ParameterMarksError("parameters are positional (paramstyle qmark): give a list or tuple for the ? marks")
    dialect = DIALECT()
    try:
        tokens = _numbered(dialect.tokenize(sql))
        parsed = [s for s in dialect.parser().parse(tokens, sql) if s is not None]
    except SqlglotError as err:
        raise ParameterMarksError(f"cannot parse the SQL to bind its parameters: {str(err).splitlines()[0]}") from err
    except RecursionError as err:
        raise ParameterMarksError("the statement nests too deeply to bind its parameters") from err
    if len(parsed) != 1:
        raise ParameterMarksError(f"give one statement to bind parameters in, not {len(parsed)}")
    [tree] = parsed
    marks = list(tree.find_all(exp.Placeholder))
    named = sorted({str(m.this) for m in marks if not str(m.this).isdigit()})
    if named:
        raise ParameterMarksError(f"named parameters (:{named[0]}) are not supported: use ? (paramstyle qmark)")
    if len(marks) != len(parameters):
        raise ParameterMarksError(f"the statement has {len(marks)} ? marks but {len(parameters)} parameters were given")
    for mark in marks:
        mark.replace(literal(parameters[int(mark.this)]))
    return tree.sql(dialect=DIALECT)


def _numbered(tokens: list[Token]) -> list[Token]:
    """The tokens with the i-th `?` as the named placeholder `:i` (the parsed tree keeps no positions: the
    names say which parameter each placeholder is)."""
    out: list[Token] = []
    marks = 0
    for token in tokens:
        if token.token_type is TokenType.PLACEHOLDER and token.text == "?":
            at = (token.line, token.col, token.start)
            out.append(Token(TokenType.COLON, ":", *at, token.start))
            out.append(Token(TokenType.VAR, str(marks), *at, token.end))
            marks += 1
        else:
            out.append(token)
    return out
