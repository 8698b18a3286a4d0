"""Spark's types of SQL expressions: the one rule precube follows wherever a type is decided (computed
columns, measures' return types, re-aggregated cells, pushdown and table-index casts, results).

sqlglot's type annotation resolves columns through scopes and types most functions; Spark's own rules
(Spark 4, ANSI mode, `spark.sql.decimalOperations.allowPrecisionLoss` on) replace it where the two differ:

- number literals: `12` INT, `3000000000` BIGINT, a longer integer DECIMAL(digits, 0), `0.05` DECIMAL(2,2)
  (precision = the digits of its unscaled value, at least its scale), `1e3` DOUBLE;
- arithmetic: integers widen to the wider integer; an integer meets a float as DOUBLE; a decimal meets a
  float or double as DOUBLE and an integer as DECIMAL(3|5|10|20, 0) — an integer *literal* as
  DECIMAL(its digits, 0); two decimals give `+ -` (max(p1-s1, p2-s2) + max(s1, s2) + 1, max(s1, s2)),
  `*` (p1+p2+1, s1+s2), `/` (p1-s1+s2+max(6, s1+p2+1), max(6, s1+p2+1)), `%` (min(p1-s1, p2-s2) +
  max(s1, s2), max(s1, s2)), and a precision past 38 keeps the integer digits and cuts the scale, to no
  less than min(scale, 6) (`adjusted`); `/` of integers or floats is DOUBLE, `div` BIGINT;
- CASE, IF, COALESCE, NVL2, GREATEST, LEAST: the wider type of their values (`wider`: integers as
  DECIMAL(3|5|10|20, 0), literal or not; two decimals (max(p1-s1, p2-s2) + max(s1, s2), max(s1, s2)),
  past 38 digits losing fraction digits first);
- SUM: BIGINT, DOUBLE or DECIMAL(p+10, s); AVG: DOUBLE or DECIMAL(p+4, s+4) (both bounded at 38);
  ROUND/BROUND(x, d), FLOOR, CEIL of DECIMAL(p, s): DECIMAL(p-s+1+min(s, d), min(s, d)); SIGN DOUBLE;
- date parts (YEAR, MONTH, DAY, QUARTER, WEEKOFYEAR, EXTRACT…): INT, but EXTRACT(SECOND …) DECIMAL(8,6).

`tests/modeling/test_spark_types.py` checks every rule against Spark's own analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.schema import Schema
from sqlglot.typing import spark as sqlglot_spark

D = exp.DType
_SQLGLOT_SPARK: dict[type[exp.Expr], dict[str, Any]] = sqlglot_spark.EXPRESSION_METADATA  # type: ignore[attr-defined]
MAX_PRECISION = 38
MIN_ADJUSTED_SCALE = 6
_INTEGRAL = (D.TINYINT, D.SMALLINT, D.INT, D.BIGINT)
_INTEGRAL_DIGITS = {D.TINYINT: 3, D.SMALLINT: 5, D.INT: 10, D.BIGINT: 20}  # Spark's DecimalType.forType
_FLOATING = (D.FLOAT, D.DOUBLE)
_INT_RANGE, _LONG_RANGE = 2**31, 2**63


@dataclass(frozen=True)
class DecimalType:
    precision: int
    scale: int

    def data_type(self) -> exp.DataType:
        return exp.DataType(
            this=D.DECIMAL,
            expressions=[exp.DataTypeParam(this=exp.Literal.number(n)) for n in (self.precision, self.scale)],
        )


_FLOATING_AS_DECIMAL = {D.FLOAT: DecimalType(14, 7), D.DOUBLE: DecimalType(30, 15)}  # DecimalType.forType


def bounded(precision: int, scale: int) -> DecimalType:
    return DecimalType(min(precision, MAX_PRECISION), min(scale, MAX_PRECISION))


def integral_first(precision: int, scale: int) -> DecimalType:
    """A decimal type cut to 38 digits by dropping fraction digits first (Spark 4's wider decimal type,
    `DecimalType.boundedPreferIntegralDigits`)."""
    if precision <= MAX_PRECISION:
        return DecimalType(precision, scale)
    return DecimalType(MAX_PRECISION, max(0, scale - (precision - MAX_PRECISION)))


def adjusted(precision: int, scale: int) -> DecimalType:
    """Spark's result type of a decimal operation whose exact type may exceed 38 digits: the integer digits
    are kept and the scale cut, but not below min(scale, 6) (`DecimalType.adjustPrecisionScale`)."""
    if precision <= MAX_PRECISION:
        return DecimalType(precision, scale)
    int_digits = precision - scale
    return DecimalType(MAX_PRECISION, max(MAX_PRECISION - int_digits, min(scale, MIN_ADJUSTED_SCALE)))


def decimal_of(dtype: exp.DataType | None) -> DecimalType | None:
    """The precision and scale of a DECIMAL type (DECIMAL without them is DECIMAL(10,0)); None otherwise."""
    if dtype is None or dtype.this != D.DECIMAL:
        return None
    params = [int(p.name) for p in dtype.expressions]
    return DecimalType(*(params + [10, 0][len(params) :])[:2])


def _kind(dtype: exp.DataType | None) -> D:
    return dtype.this if dtype is not None and isinstance(dtype.this, D) else D.UNKNOWN


def is_decimal(dtype: exp.DataType | None) -> bool:
    return _kind(dtype) == D.DECIMAL


def _literal_value(node: exp.Expr) -> int | None:
    """The value of an integer literal, possibly negated (`-5`, which Spark reads as one literal; `-(5)` is
    not one), in parentheses or not."""
    node = node.unnest()
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if not isinstance(inner, exp.Literal) or inner.is_string or not inner.name.isdigit():
        return None
    return -int(inner.name) if negative else int(inner.name)


def _as_decimal(node: exp.Expr, literal_precision: bool) -> DecimalType | None:
    """A decimal or integral operand as Spark converts it to a decimal: an integer literal to its own digits
    when `literal_precision` (binary arithmetic), any other integer to DECIMAL(3|5|10|20, 0)."""
    dtype = node.type
    found = decimal_of(dtype)
    if found is not None:
        return found
    kind = _kind(dtype)
    if kind not in _INTEGRAL:
        return None
    value = _literal_value(node) if literal_precision else None
    if value is not None:
        return DecimalType(len(str(abs(value))), 0)
    return DecimalType(_INTEGRAL_DIGITS[kind], 0)


def _wider_integral(a: D, b: D) -> D:
    return max(a, b, key=_INTEGRAL.index)


def decimal_result(op: type[exp.Expr], a: DecimalType, b: DecimalType) -> DecimalType:
    """Spark's type of `a op b` for two decimals (`op`: Add, Sub, Mul, Div or Mod)."""
    p1, s1, p2, s2 = a.precision, a.scale, b.precision, b.scale
    if op in (exp.Add, exp.Sub):
        scale = max(s1, s2)
        return adjusted(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op is exp.Mul:
        return adjusted(p1 + p2 + 1, s1 + s2)
    if op is exp.Div:
        scale = max(MIN_ADJUSTED_SCALE, s1 + p2 + 1)
        return adjusted(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)  # remainder
    return adjusted(min(p1 - s1, p2 - s2) + scale, scale)


def arithmetic_type(op: type[exp.Expr], left: exp.Expr, right: exp.Expr) -> exp.DataType | None:
    """Spark's type of `left op right` for numeric operands (`op`: Add, Sub, Mul, Div, Mod, IntDiv; both
    sides annotated); None when either side is not a number (dates, intervals, strings: sqlglot's rule)."""
    lt, rt = left.type, right.type
    lk, rk = _kind(lt), _kind(rt)
    left_null = lk == D.NULL
    if D.NULL in (lk, rk):  # NULL takes the other side's type
        other, kind = (right, rk) if lk == D.NULL else (left, lk)
        if kind == D.NULL:
            return None
        left = right = other
        lt = rt = other.type
        lk = rk = kind
    numeric = (*_INTEGRAL, *_FLOATING, D.DECIMAL)
    if lk not in numeric or rk not in numeric:
        return None
    if op is exp.IntDiv:
        return exp.DataType.build("BIGINT")
    if op is exp.Div and (D.FLOAT in (lk, rk) or left_null):  # `/` takes only doubles and decimals
        return exp.DataType.build("DOUBLE")
    if D.DOUBLE in (lk, rk) or (D.FLOAT in (lk, rk) and (lk, rk) != (D.FLOAT, D.FLOAT)):
        return exp.DataType.build("DOUBLE")
    if lk == rk == D.FLOAT:
        return exp.DataType.build("FLOAT")
    if D.DECIMAL in (lk, rk):
        a, b = _as_decimal(left, True), _as_decimal(right, True)
        assert a is not None and b is not None
        return decimal_result(op, a, b).data_type()
    if op is exp.Div:
        return exp.DataType.build("DOUBLE")
    return exp.DataType.build(_wider_integral(lk, rk).value)


def wider(types: list[exp.DataType]) -> exp.DataType | None:
    """The type Spark gives values of these types together (CASE branches, COALESCE arguments…); None when
    they are not all numbers (sqlglot's rule then)."""
    known = [t for t in types if _kind(t) != D.NULL]
    if not known:
        return None
    kinds = {_kind(t) for t in known}
    if not kinds <= {*_INTEGRAL, *_FLOATING, D.DECIMAL}:
        return None
    if kinds & set(_FLOATING):
        return exp.DataType.build("FLOAT" if kinds == {D.FLOAT} else "DOUBLE")
    if D.DECIMAL not in kinds:
        widest = D.TINYINT
        for kind in kinds:
            widest = _wider_integral(widest, kind)
        return exp.DataType.build(widest.value)
    decimals = [decimal_of(t) or DecimalType(_INTEGRAL_DIGITS[_kind(t)], 0) for t in known]
    scale = max(d.scale for d in decimals)
    digits = max(d.precision - d.scale for d in decimals)
    return integral_first(digits + scale, scale).data_type()


def sum_type(dtype: exp.DataType | None) -> exp.DataType | None:
    """Spark's type of SUM over values of `dtype`; None when it is not a number."""
    kind = _kind(dtype)
    if kind in _INTEGRAL:
        return exp.DataType.build("BIGINT")
    if kind in (*_FLOATING, D.NULL):
        return exp.DataType.build("DOUBLE")
    found = decimal_of(dtype)
    return bounded(found.precision + 10, found.scale).data_type() if found is not None else None


def avg_type(dtype: exp.DataType | None) -> exp.DataType | None:
    """Spark's type of AVG over values of `dtype`; None when it is not a number."""
    found = decimal_of(dtype)
    if found is not None:
        return bounded(found.precision + 4, found.scale + 4).data_type()
    return exp.DataType.build("DOUBLE") if _kind(dtype) in (*_INTEGRAL, *_FLOATING, D.NULL) else None


def literal_type(node: exp.Literal) -> exp.DataType | None:
    """Spark's type of a number literal (None for a string)."""
    if node.is_string:
        return None
    text = node.name
    if "e" in text.lower():
        return exp.DataType.build("DOUBLE")
    if text.isdigit():
        value = int(text)
        if value < _INT_RANGE:
            return exp.DataType.build("INT")
        if value < _LONG_RANGE:
            return exp.DataType.build("BIGINT")
        return DecimalType(len(str(value)), 0).data_type() if len(str(value)) <= MAX_PRECISION else None
    try:
        digits, exponent = Decimal(text).as_tuple()[1:]
    except (InvalidOperation, ValueError):
        return None
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    precision = max(len(digits), scale)
    return DecimalType(precision, scale).data_type() if precision <= MAX_PRECISION else exp.DataType.build("DOUBLE")


def _round_type(dtype: exp.DataType | None, digits: exp.Expr | None, floor_or_ceil: bool) -> exp.DataType | None:
    """ROUND/BROUND(x, d), or FLOOR/CEIL(x[, d]) when `floor_or_ceil`."""
    found = decimal_of(dtype)
    kind = _kind(dtype)
    if kind not in (*_INTEGRAL, *_FLOATING, D.DECIMAL):
        return None
    if floor_or_ceil and digits is None:  # to an integer
        if found is None:
            return exp.DataType.build("BIGINT")
        return dtype if found.scale == 0 else bounded(found.precision - found.scale + 1, 0).data_type()
    if found is None:
        if not floor_or_ceil:
            return dtype  # ROUND keeps an integer's or a float's type
        found = _FLOATING_AS_DECIMAL.get(kind) or DecimalType(_INTEGRAL_DIGITS[kind], 0)
    places = _literal_value(digits) if digits is not None else 0
    if places is None:
        return None
    integral = found.precision - found.scale + 1  # rounding may carry one more integer digit
    if places < 0:  # at least the digits left of the rounded one, and one more
        return DecimalType(min(max(integral, 1 - places), MAX_PRECISION), 0).data_type()
    scale = min(found.scale, places)
    return DecimalType(min(integral + scale, MAX_PRECISION), scale).data_type()


# --- sqlglot annotators (each runs after the node's children are annotated) -----------------------------

Annotator = Callable[[Any, Any], Any]


def _keep_sqlglot(cls: type[exp.Expr]) -> Annotator:
    """sqlglot's own annotator of `cls` for Spark (used where Spark's rule does not apply)."""
    spec = _SQLGLOT_SPARK.get(cls) or {}
    annotator = spec.get("annotator")
    returns = spec.get("returns")

    def fallback(self: Any, e: exp.Expr) -> exp.Expr:
        if annotator is not None:
            return annotator(self, e)  # type: ignore[no-any-return]
        return self._set_type(e, returns)  # type: ignore[no-any-return]

    return fallback


def _with(cls: type[exp.Expr], rule: Callable[[Any], exp.DataType | None]) -> dict[str, Annotator]:
    fallback = _keep_sqlglot(cls)

    def annotate(self: Any, e: exp.Expr) -> exp.Expr:
        found = rule(e)
        return self._set_type(e, found) if found is not None else fallback(self, e)  # type: ignore[no-any-return]

    return {"annotator": annotate}


def _arithmetic(cls: type[exp.Binary]) -> dict[str, Annotator]:
    return _with(cls, lambda e: arithmetic_type(cls, e.left, e.right))


def _argument(e: exp.Expr) -> exp.Expr:
    arg: exp.Expr = e.this
    return arg.expressions[0] if isinstance(arg, exp.Distinct) and arg.expressions else arg


def _values(e: exp.Expr) -> list[exp.Expr]:
    if isinstance(e, exp.Case):
        default = e.args.get("default")
        return [i.args["true"] for i in e.args.get("ifs") or []] + ([default] if default is not None else [])
    if isinstance(e, (exp.If, exp.Nvl2)):
        return [v for v in (e.args.get("true"), e.args.get("false")) if v is not None]
    return [e.this, *e.expressions]  # COALESCE, GREATEST, LEAST


def _wider_of(e: exp.Expr) -> exp.DataType | None:
    types = [v.type for v in _values(e)]
    if any(t is None or _kind(t) == D.UNKNOWN for t in types):
        return None
    return wider([t for t in types if t is not None])


def _literal(e: exp.Literal) -> exp.DataType | None:
    return literal_type(e)


def _negated(e: exp.Neg) -> exp.DataType | None:
    value = _literal_value(e)
    if value is None or not -_INT_RANGE <= value < _LONG_RANGE:
        return e.this.type  # type: ignore[no-any-return]
    return exp.DataType.build("INT" if value >= -_INT_RANGE and value < _INT_RANGE else "BIGINT")


def _date_part(unit: str) -> exp.DataType:
    """EXTRACT/DATE_PART: the seconds with their fraction as DECIMAL(8,6), every other part INT."""
    return exp.DataType.build("DECIMAL(8,6)" if unit.upper() in ("SECOND", "SECONDS", "S", "SEC", "SECS") else "INT")


def _anonymous(e: exp.Anonymous) -> exp.DataType | None:
    """Spark functions sqlglot does not model: PMOD (a remainder), POSITIVE (its argument), BROUND (a
    ROUND), DATE_PART (EXTRACT), WEEKDAY (INT), MAKE_DATE (DATE)."""
    name, args = e.name.lower(), e.expressions
    if name == "date_part" and len(args) == 2 and isinstance(args[0], exp.Literal):
        return _date_part(args[0].name)
    if name == "make_date" and len(args) == 3:
        return exp.DataType.build("DATE")
    if name == "weekday" and len(args) == 1:
        return exp.DataType.build("INT")
    if name == "pmod" and len(args) == 2:
        return arithmetic_type(exp.Mod, args[0], args[1])
    if name == "positive" and len(args) == 1:
        return args[0].type  # type: ignore[no-any-return]
    if name == "bround" and 1 <= len(args) <= 2:
        return _round_type(args[0].type, args[1] if len(args) == 2 else None, False)
    return None


SPARK_METADATA: dict[type[exp.Expr], dict[str, Any]] = {
    **_SQLGLOT_SPARK,
    exp.Literal: _with(exp.Literal, _literal),
    exp.Neg: _with(exp.Neg, _negated),
    **{cls: _arithmetic(cls) for cls in (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)},
    **{cls: _with(cls, _wider_of) for cls in (exp.Case, exp.If, exp.Coalesce, exp.Nvl2, exp.Greatest, exp.Least)},
    exp.Sum: _with(exp.Sum, lambda e: sum_type(_argument(e).type)),
    exp.Avg: _with(exp.Avg, lambda e: avg_type(_argument(e).type)),
    exp.Round: _with(exp.Round, lambda e: _round_type(e.this.type, e.args.get("decimals"), False)),
    exp.Floor: _with(exp.Floor, lambda e: _round_type(e.this.type, e.args.get("decimals"), True)),
    exp.Ceil: _with(exp.Ceil, lambda e: _round_type(e.this.type, e.args.get("decimals"), True)),
    exp.Abs: _with(exp.Abs, lambda e: e.this.type),
    exp.Sign: {"returns": D.DOUBLE},
    # date parts are INT in Spark (sqlglot types some TINYINT); EXTRACT(SECOND …) keeps its fraction
    **{
        cls: {"returns": D.INT}
        for cls in (exp.Year, exp.Quarter, exp.Month, exp.Day, exp.DayOfMonth, exp.DayOfWeek, exp.DayOfYear)
    },
    exp.WeekOfYear: {"returns": D.INT},
    # Spark's date_trunc gives a timestamp, trunc a date; make_date/make_timestamp what they say
    exp.TimestampTrunc: {"returns": D.TIMESTAMP},
    exp.DateTrunc: {"returns": D.DATE},
    exp.DateFromParts: {"returns": D.DATE},
    exp.TimestampFromParts: {"returns": D.TIMESTAMP},
    **{cls: {"returns": D.INT} for cls in (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)},
    **{cls: {"returns": D.DOUBLE} for cls in (exp.PercentRank, exp.CumeDist)},
    exp.Extract: _with(exp.Extract, lambda e: _date_part(e.this.name)),
    exp.Anonymous: _with(exp.Anonymous, _anonymous),
}


def annotate(tree: exp.Expr, schema: Schema | Mapping[str, object] | None = None) -> exp.Expr:
    """`tree` (qualified), each node annotated in place with the type Spark gives it; `schema`: sqlglot's
    schema, or its mapping (table → column → Spark type name)."""
    found = schema if isinstance(schema, Schema) else dict(schema or {})
    annotated: exp.Expr = annotate_types(tree, schema=found, expression_metadata=SPARK_METADATA, dialect="spark")
    return annotated


def type_name(dtype: exp.DataType) -> str:
    """A type as Spark SQL spells it (`decimal(32,4)`, `int`, `string`)."""
    return dtype.sql(dialect="spark").lower().replace(" ", "")
