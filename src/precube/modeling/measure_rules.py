"""Measure validation and result types (reference §4.2): which functions take which columns and what
each stores. Return types use Kylin's spelling: `bitmap`, `hllc(p)`, `topn(n)`, `percentile(c)`."""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from precube.metadata import Function, FunctionExpression, Parameter, ParameterType
from precube.metadata import datatypes as dt
from precube.modeling import spark_types
from precube.modeling.errors import InvalidModelError

F = FunctionExpression
_RETURN = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*(\d+)\s*\))?\s*$")
SKETCHES = (F.COUNT_DISTINCT, F.TOP_N, F.PERCENTILE_APPROX)  # measures whose return_type the user chooses

# what each measure's parameters are, for the message that refuses a wrong number of them
FORMS = {
    F.SUM: "SUM(column), or SUM(constant)",
    F.COUNT: "COUNT(column), or COUNT(*) without parameters",
    F.MIN: "MIN(column)",
    F.MAX: "MAX(column)",
    F.COUNT_DISTINCT: "COUNT_DISTINCT(column, ...)",
    F.TOP_N: "TOP_N(SUM(value_column), key_column, ...) is parameter_value [value_column, key_column, ...]",
    F.PERCENTILE_APPROX: "PERCENTILE_APPROX(column)",
}

# (alias, column, type) for a column reference
Resolver = Callable[[str, str], tuple[str, str, str]]


def count_star() -> Function:
    return Function(
        expression=F.COUNT, parameters=[Parameter(type=ParameterType.CONSTANT, value="1")], returntype="bigint"
    )


def function_of(expression: str, params: list[Parameter], return_type: str, resolve: Resolver, field: str) -> Function:
    """Validate one measure's function; columns are resolved with `resolve(ref, field)`."""
    try:
        expr = F(expression.upper().replace(" ", "_"))
    except ValueError:
        known = ", ".join(e.value for e in F)
        raise InvalidModelError(f"{field}: unknown function {expression!r} (known: {known})") from None
    if expr is F.COUNT and params in ([], [Parameter(type=ParameterType.CONSTANT, value="1")]):
        return count_star()
    resolved: list[Parameter] = []
    types: list[str] = []
    for p in params:
        if p.type is ParameterType.CONSTANT:
            if expr not in (F.SUM, F.COUNT):
                raise InvalidModelError(f"{field}: {expr} takes columns, not the constant {p.value!r}")
            resolved.append(p)
            types.append("bigint")
        else:
            alias, column, ctype = resolve(p.value, field)
            resolved.append(Parameter(type=ParameterType.COLUMN, value=f"{alias}.{column}"))
            types.append(ctype)
    low, high = {F.TOP_N: (2, 99), F.COUNT_DISTINCT: (1, 99)}.get(expr, (1, 1))
    if not low <= len(resolved) <= high:
        want = f"{low}" if low == high else f"at least {low}"
        raise InvalidModelError(
            f"{field}: {expr} takes {want} parameter(s), got {len(resolved)}: {FORMS[expr]}, each parameter "
            "{type: column, value: ALIAS.COLUMN} in parameter_value (or column: ALIAS.COLUMN for one)"
        )
    if return_type and expr not in SKETCHES and dt.normalize(return_type) != _plain_type(expr, types, field):
        raise InvalidModelError(f"{field}: {expr} returns {_plain_type(expr, types, field)}, not {return_type!r}")
    returns = _sketch_type(expr, types, return_type, field) if expr in SKETCHES else _plain_type(expr, types, field)
    return Function(expression=expr, parameters=resolved, returntype=returns)


def _spark(datatype: str) -> exp.DataType:
    return exp.DataType.build(dt.to_spark(datatype), dialect="spark")


def sum_type(datatype: str) -> str | None:
    """Spark's type of SUM over a column of this type (`spark_types.sum_type`); None when it is not numeric."""
    found = spark_types.sum_type(_spark(datatype)) if dt.is_numeric(datatype) else None
    return dt.normalize(spark_types.type_name(found)) if found is not None else None


def avg_type(datatype: str) -> str | None:
    """Spark's type of AVG over a column of this type: DOUBLE, or DECIMAL(p+4, s+4); None when it is not numeric."""
    found = spark_types.avg_type(_spark(datatype)) if dt.is_numeric(datatype) else None
    return dt.normalize(spark_types.type_name(found)) if found is not None else None


def _plain_type(expr: FunctionExpression, types: list[str], field: str) -> str:
    first = types[0]
    fam = dt.family(first)
    if expr is F.COUNT:
        return "bigint"
    if expr is F.SUM:
        summed = sum_type(first)
        if summed is None:
            raise InvalidModelError(f"{field}: SUM needs a numeric column, not {first}")
        return summed
    if fam is dt.TypeFamily.OTHER:
        raise InvalidModelError(f"{field}: {expr} needs an orderable column, not {first}")
    return dt.normalize(first)  # MIN, MAX


def _sketch_type(expr: FunctionExpression, types: list[str], given: str, field: str) -> str:
    match = _RETURN.match(given.lower()) if given else None
    if given and match is None:
        raise InvalidModelError(f"{field}: invalid return_type {given!r}")
    kind, arg = (match.group(1), match.group(2)) if match else (None, None)
    if expr is F.COUNT_DISTINCT:
        if kind in (None, "bitmap"):
            return "bitmap"  # of several columns: a dictionary of their tuples (build.layout_build)
        if kind == "hllc" and arg is not None and 10 <= int(arg) <= 16:
            return f"hllc({arg})"
        raise InvalidModelError(f"{field}: COUNT_DISTINCT return_type must be bitmap or hllc(10..16), got {given!r}")
    if not dt.is_numeric(types[0]):
        raise InvalidModelError(f"{field}: {expr} needs a numeric first column, not {types[0]}")
    if expr is F.TOP_N:
        n = 100 if kind is None else int(arg) if kind == "topn" and arg else 0
        if not 1 <= n <= 10000:
            raise InvalidModelError(f"{field}: TOP_N return_type must be topn(1..10000), got {given!r}")
        return f"topn({n})"
    c = 100 if kind is None else int(arg) if kind == "percentile" and arg else 0
    if c not in (100, 1000, 10000):
        raise InvalidModelError(f"{field}: PERCENTILE_APPROX return_type must be percentile(100|1000|10000)")
    return f"percentile({c})"
