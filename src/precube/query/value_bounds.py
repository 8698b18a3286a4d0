"""Calls whose one value grows with an argument (REPEAT, LPAD/RPAD, SPACE, SEQUENCE, a printf width), bounded
before DuckDB runs them.

DuckDB builds such a value outside its memory bound and does not see an interrupt until it is built: `REPEAT('x',
2000000000)` takes 50 s and 4 GB whatever `memory_limit` says, `SEQUENCE(1, 100000000)` 80 s and 7 GB. Each
such call's size argument gets a guard that fails the statement first (DuckDB's `error()`, evaluated before the
call it guards) when the value would hold more than `max_value_bytes`: DuckDB builds 2048 values at a time, so
`[query] max_result_bytes` / 2048 keeps one batch of them within the answer's own byte bound. A literal printf
width past it is refused before the statement runs.
"""

from __future__ import annotations

import re
from typing import TypeVar

from sqlglot import exp

from precube.query.errors import ResultTooLargeError

VECTOR_ROWS = 2048  # the rows DuckDB computes a scalar function over at a time
MARK = "precube value bound: "  # the guard's message starts so; `engine_errors` makes it a ResultTooLargeError
_WIDTHS = re.compile(r"%[-+ #0']*(\d*)(?:\.(\d+))?")
_PRINTF = frozenset({"printf", "format"})
E = TypeVar("E", bound=exp.Expr)


def max_value_bytes(max_result_bytes: int) -> int:
    """The largest value a bounded call may build, for an answer bound of `max_result_bytes`."""
    return max(1, max_result_bytes // VECTOR_ROWS)


def _message(call: str, limit: int) -> str:
    return (
        f"{MARK}a value of {call} would hold more than {limit:,} bytes ([query] max_result_bytes / {VECTOR_ROWS}): "
        "raise the bound (env PRECUBE__QUERY__MAX_RESULT_BYTES)"
    )


def _guarded(size: exp.Expr, limit: exp.Expr, message: str) -> exp.Expr:
    """`size`, or an error when it is past `limit` (NULL passes: the call answers NULL)."""
    return exp.Case(
        ifs=[
            exp.If(
                this=exp.GT(this=size.copy(), expression=limit),
                true=exp.Anonymous(this="error", expressions=[exp.Literal.string(message)]),
            )
        ],
        default=size,
    )


def _per(limit: int, unit: exp.Expr) -> exp.Expr:
    """`limit` over a unit's size (at least 1)."""
    return exp.Div(
        this=exp.Literal.number(limit),
        expression=exp.Anonymous(this="greatest", expressions=[unit, exp.Literal.number(1)]),
        typed=True,
    )


def _strlen(value: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="strlen", expressions=[exp.cast(value.copy(), "VARCHAR")])


def _check_printf(node: exp.Expr, limit: int) -> None:
    template = node.expressions[0] if isinstance(node, exp.Anonymous) and node.expressions else node.this
    if not isinstance(template, exp.Literal) or not template.is_string:
        return
    for width, precision in _WIDTHS.findall(template.this):
        if max(int(width or 0), int(precision or 0)) > limit:
            raise ResultTooLargeError(_message("PRINTF", limit).removeprefix(MARK))


def bounded_values(tree: E, max_result_bytes: int) -> E:
    """`tree`, or a copy of it where every growing call is guarded (see the module's docstring)."""
    growing = (exp.Repeat, exp.Pad, exp.Space, exp.GenerateSeries, exp.Format, exp.Anonymous)
    found = [n for n in tree.find_all(*growing) if not isinstance(n, exp.Anonymous) or n.name.lower() in _PRINTF]
    if not found:
        return tree
    limit = max_value_bytes(max_result_bytes)
    tree = tree.copy()
    for node in list(tree.find_all(*growing)):
        if isinstance(node, (exp.Format, exp.Anonymous)):
            if not isinstance(node, exp.Anonymous) or node.name.lower() in _PRINTF:
                _check_printf(node, limit)
        elif isinstance(node, exp.Repeat):
            node.set("times", _guarded(node.args["times"], _per(limit, _strlen(node.this)), _message("REPEAT", limit)))
        elif isinstance(node, exp.Pad):
            node.set("expression", _guarded(node.expression, exp.Literal.number(limit // 4), _message("PAD", limit)))
        elif isinstance(node, exp.Space):
            node.set("this", _guarded(node.this, exp.Literal.number(limit), _message("SPACE", limit)))
        elif isinstance(node, exp.GenerateSeries):
            _guard_series(node, limit)
    return tree


def _guard_series(node: exp.GenerateSeries, limit: int) -> None:
    """A numeric SEQUENCE of more than `limit` / 8 elements fails (a series of dates or times passes: its
    bounds do not subtract to a count)."""
    start, end, step = node.args.get("start"), node.args.get("end"), node.args.get("step")
    if start is None or end is None:
        return
    number = exp.DataType.build("DOUBLE")
    span = exp.Abs(
        this=exp.Sub(this=exp.TryCast(this=end.copy(), to=number), expression=exp.TryCast(this=start.copy(), to=number))
    )
    per = exp.Abs(this=exp.TryCast(this=step.copy(), to=number)) if step is not None else exp.Literal.number(1)
    count = exp.Div(
        this=span, expression=exp.Anonymous(this="greatest", expressions=[per, exp.Literal.number(1)]), typed=False
    )
    check = exp.If(
        this=exp.GT(this=count, expression=exp.Literal.number(limit // 8)),
        true=exp.Anonymous(this="error", expressions=[exp.Literal.string(_message("SEQUENCE", limit))]),
    )
    node.set("end", exp.Case(ifs=[check], default=end.copy()))
