"""Direct answers: a statement over one layout held in memory, run on its columns with numpy, without DuckDB.

A warm answer over a held layout is mostly DuckDB's fixed cost per statement: it binds and optimises the text
again at every run, prepared or not (~0.7-1.5 ms of the SSB queries' 1-4 ms), where the work itself takes
0.1-0.5 ms. Most statements precube sends an engine for a layout have one form: a filter on the layout's
columns, GROUP BY some of them, sums, counts, minima and maxima of its measure columns, arithmetic over those,
ORDER BY and LIMIT. This module runs that form itself, from a copy of the held layout's columns as numpy arrays
(`direct_columns.DirectLayout`, made by the engine's loader when it holds the layout), and declines everything else (the
caller then runs the text on DuckDB), so an answer is the same either way: the same rows, and the Arrow types
DuckDB's path gives them (`tests/query/test_direct.py` compares the two on every form it takes).

What is taken (`compile_statement`), and why its answer equals DuckDB's:
- columns of integer types, and strings; strings are coded by their rank in the column's sorted distinct
  values, so comparing codes compares the strings (DuckDB compares VARCHARs bytewise: UTF-8's byte order is
  the code points' order, Python's);
- predicates `=`, `<>`, `<`, `<=`, `>`, `>=`, BETWEEN, IN, IS [NOT] NULL between a column and literals of its
  kind, under AND, OR and NOT, in SQL's three-valued logic;
- SUM, COUNT, MIN, MAX of columns; `+`, `-`, `*` of BIGINTs; CAST to BIGINT. A sum is taken only when no
  value it could reach overflows 64 bits (bounded by the column's largest magnitude times the layout's rows),
  and so is arithmetic over sums: DuckDB's answer could then be an overflow error, never a wrapped number;
- GROUP BY columns, ORDER BY outputs or columns (NULLS FIRST/LAST as written, DuckDB's default NULLS LAST),
  LIMIT and OFFSET. Rows equal in every ORDER BY key come in either engine's order (SQL leaves it open).

The layout's rows are sorted by its dimensions (`DuckDBEngine._load`): a conjunct pinning the leading ones to
values or a range narrows the rows read to a few slices by binary search, as DuckDB's row-group statistics do.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from precube.query.direct_columns import INT_TYPES, Column, DirectLayout

LOG = logging.getLogger(__name__)
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
PROGRAMS = 1024  # compiled statements kept (least recently run dropped beyond)
# A statement reading more rows than this (after the sort key narrowed them) is DuckDB's: its transient arrays
# (~80 bytes a row at most) stay bounded, and a large scan gains from DuckDB's threads more than it loses to planning
SCAN_MAX_ROWS = 2_000_000
# A statement reading at most this many rows may be answered in the caller's thread, an event loop's (a few ms
# at most: `Session.answers_at_once`)
AT_ONCE_ROWS = 200_000
MAX_SLICES = 256  # ranges of rows the sort key may narrow a scan to; past it the scan reads the whole range
Masks = tuple[np.ndarray, np.ndarray | None]  # (true, false) of a predicate; false None: it is never unknown


class DeclinedError(Exception):
    """The statement has a form this module does not run (DuckDB runs it)."""


# ---- predicates ---------------------------------------------------------------------------------------------


def _literal(node: exp.Expr, column: Column) -> int | str | None:
    """A literal of the column's kind (None: NULL); anything else declines."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        value = _literal(node.this, column)
        return -value if isinstance(value, int) else _decline("a negated literal")
    if not isinstance(node, exp.Literal):
        raise DeclinedError("not a literal")
    if column.text:
        if not node.is_string:
            raise DeclinedError("a number compared with a string")
        return str(node.this)
    if node.is_string or not _is_int(node.this):
        raise DeclinedError("not an integer literal")
    return int(node.this)


def _decline(why: str) -> Any:
    raise DeclinedError(why)


def _is_int(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return body.isdigit()


@dataclass
class _Scope:
    """What compiling reads: the layout's columns by the names the statement gives them."""

    layout: DirectLayout
    alias: str

    def column(self, node: exp.Expr) -> tuple[str, Column]:
        if not isinstance(node, exp.Column) or (node.table and node.table != self.alias):
            raise DeclinedError("not a column of the layout")
        name = node.name
        found = self.layout.columns.get(name)
        if found is None:
            raise DeclinedError(f"no column {name}")
        return name, found


Predicate = Callable[[dict[str, np.ndarray], dict[str, np.ndarray | None]], Masks]


def _code_bounds(column: Column, op: str, value: int | str) -> tuple[int, int] | None:
    """The closed range of values (codes for a string column) `column op value` holds for; None: none."""
    if column.text:
        words = column.words or []
        if op == "=":
            i = bisect.bisect_left(words, value)
            return (i, i) if i < len(words) and words[i] == value else None
        if op in ("<", "<="):
            hi = (bisect.bisect_left if op == "<" else bisect.bisect_right)(words, value) - 1
            return (0, hi) if hi >= 0 else None
        lo = (bisect.bisect_right if op == ">" else bisect.bisect_left)(words, value)
        return (lo, len(words) - 1) if lo < len(words) else None
    assert isinstance(value, int)
    lo, hi = {
        "=": (value, value),
        "<": (INT64_MIN, value - 1),
        "<=": (INT64_MIN, value),
        ">": (value + 1, INT64_MAX),
        ">=": (value, INT64_MAX),
    }[op]
    lo, hi = max(lo, column.lowest), min(hi, column.highest)  # within the column's type: numpy compares in it
    return (lo, hi) if lo <= hi else None


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}
_OPS: dict[type[exp.Expr], str] = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


@dataclass
class Narrowing:
    """What a conjunct says of one column: its values lie in one of `ranges` (closed, of values or codes)."""

    column: str
    ranges: list[tuple[int, int]]


def _compare(scope: _Scope, node: exp.Expr) -> tuple[Predicate, Narrowing | None]:
    """A comparison, BETWEEN, IN or IS NULL of a column with literals."""
    if isinstance(node, exp.Is):
        name, column = scope.column(node.this)
        if not isinstance(node.expression, exp.Null):
            raise DeclinedError("IS of a non-NULL")
        return _null_test(name, column), None
    if isinstance(node, exp.Between):
        name, column = scope.column(node.this)
        low, high = _literal(node.args["low"], column), _literal(node.args["high"], column)
        if low is None or high is None:  # `x BETWEEN 1 AND NULL` is false where x < 1, else unknown
            sides = [(">=", low), ("<=", high)]
            return _both([_unknown(name) if v is None else _side(name, column, op, v) for op, v in sides], True), None
        a, b = _code_bounds(column, ">=", low), _code_bounds(column, "<=", high)
        ranges = [(max(a[0], b[0]), min(a[1], b[1]))] if a and b and max(a[0], b[0]) <= min(a[1], b[1]) else []
        return _in_ranges(name, column, ranges), Narrowing(name, ranges)
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise DeclinedError("IN of a subquery")
        name, column = scope.column(node.this)
        values = [_literal(v, column) for v in node.expressions]
        if any(v is None for v in values):
            raise DeclinedError("IN with a NULL")  # x IN (…, NULL) is unknown where it is not true: not worth it
        ranges = sorted({r for v in values if v is not None and (r := _code_bounds(column, "=", v))})
        return _in_ranges(name, column, ranges), Narrowing(name, ranges)
    op = _OPS.get(type(node))
    if op is None:
        raise DeclinedError(f"a predicate {type(node).__name__}")
    left, right = node.this, node.expression
    if not isinstance(left, exp.Column):
        left, right, op = right, left, _FLIPPED[op]
    name, column = scope.column(left)
    value = _literal(right, column)
    if value is None:
        return _unknown(name), None
    if op == "<>":
        equal = _code_bounds(column, "=", value)
        return _negated(_in_ranges(name, column, [equal] if equal else [])), None
    bounds = _code_bounds(column, op, value)
    ranges = [bounds] if bounds else []
    return _in_ranges(name, column, ranges), Narrowing(name, ranges)


def _side(name: str, column: Column, op: str, value: int | str) -> Predicate:
    bounds = _code_bounds(column, op, value)
    return _in_ranges(name, column, [bounds] if bounds else [])


def _in_ranges(name: str, column: Column, ranges: list[tuple[int, int]]) -> Predicate:
    """`column` lies in one of `ranges`; unknown where it is NULL."""
    points = [lo for lo, hi in ranges if lo == hi]
    spans = [(lo, hi) for lo, hi in ranges if lo != hi]

    def test(values: dict[str, np.ndarray], valid: dict[str, np.ndarray | None]) -> Masks:
        v = values[name]
        hit = np.zeros(len(v), dtype=bool)
        if len(points) == 1:
            hit = v == points[0]
        elif points:
            hit = np.isin(v, points)
        for lo, hi in spans:
            hit |= (v >= lo) & (v <= hi)
        ok = valid[name]
        return (hit, None) if ok is None else (hit & ok, ~hit & ok)

    return test


def _null_test(name: str, column: Column) -> Predicate:
    def test(values: dict[str, np.ndarray], valid: dict[str, np.ndarray | None]) -> Masks:
        ok = valid[name]
        return (np.zeros(len(values[name]), dtype=bool) if ok is None else ~ok), None

    return test


def _unknown(name: str) -> Predicate:
    """A comparison with NULL: unknown on every row."""

    def test(values: dict[str, np.ndarray], valid: dict[str, np.ndarray | None]) -> Masks:
        none = np.zeros(len(values[name]), dtype=bool)
        return none, none

    return test


def _negated(inner: Predicate) -> Predicate:
    def test(values: dict[str, np.ndarray], valid: dict[str, np.ndarray | None]) -> Masks:
        true, false = inner(values, valid)
        return (~true, true) if false is None else (false, true)

    return test


def _both(parts: list[Predicate], conjunction: bool) -> Predicate:
    def test(values: dict[str, np.ndarray], valid: dict[str, np.ndarray | None]) -> Masks:
        true, false = parts[0](values, valid)
        for part in parts[1:]:
            t2, f2 = part(values, valid)
            if false is None and f2 is None:
                true = true & t2 if conjunction else true | t2
                continue
            fa = ~true if false is None else false
            fb = ~t2 if f2 is None else f2
            true, false = (true & t2, fa | fb) if conjunction else (true | t2, fa & fb)
        return true, false

    return test


def _predicate(scope: _Scope, node: exp.Expr) -> tuple[Predicate, Narrowing | None]:
    """The predicate of a WHERE tree, and what it says of one column's values when it says so alone."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, (exp.And, exp.Or)):
        parts = [_predicate(scope, p) for p in node.flatten()]
        narrowings = [n for _, n in parts]
        narrowing = None
        if isinstance(node, exp.Or) and all(n is not None for n in narrowings):
            names = {n.column for n in narrowings if n is not None}
            if len(names) == 1:  # `x = 1 OR x = 2`: one column's values
                narrowing = Narrowing(names.pop(), sorted({r for n in narrowings if n for r in n.ranges}))
        return _both([p for p, _ in parts], isinstance(node, exp.And)), narrowing
    if isinstance(node, exp.Not):
        inner, _ = _predicate(scope, node.this)
        return _negated(inner), None
    return _compare(scope, node)


def _conjuncts(node: exp.Expr | None) -> list[exp.Expr]:
    if node is None:
        return []
    while isinstance(node, exp.Paren):
        node = node.this
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


# ---- aggregates and outputs ---------------------------------------------------------------------------------

Values = tuple[np.ndarray, np.ndarray | None]  # values per group, and where they are not NULL (None: everywhere)


@dataclass(frozen=True)
class Aggregate:
    """SUM, COUNT, MIN or MAX of a column (None: COUNT(*))."""

    function: str
    column: str | None


@dataclass
class Output:
    """An answer column: `compute(keys, aggregates)` over the groups; its Arrow type; its largest magnitude."""

    name: str
    compute: Callable[[list[Values], list[Values]], Values]
    arrow_type: pa.DataType
    largest: int
    source: Column | None = None  # the column whose codes it holds (a string column's, decoded at the end)


_HUGEINT = pa.decimal128(38, 0)  # DuckDB's type of an integer sum (taken only under a CAST to BIGINT)
_OPERATORS: dict[type[exp.Expr], Any] = {exp.Add: np.add, exp.Sub: np.subtract, exp.Mul: np.multiply}


_FUNCTIONS: dict[type[exp.Expr], str] = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max"}


class _Outputs:
    """Compiles the select list: group keys by position, aggregates collected as met."""

    def __init__(self, scope: _Scope, keys: list[str]) -> None:
        self.scope = scope
        self.keys = keys
        self.aggregates: list[Aggregate] = []

    def _aggregate(self, function: str, column: str | None) -> int:
        found = Aggregate(function, column)
        if found not in self.aggregates:
            self.aggregates.append(found)
        return self.aggregates.index(found)

    def compile(self, node: exp.Expr, name: str) -> Output:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            key, column = self.scope.column(node)
            if key not in self.keys:
                raise DeclinedError("a column neither grouped nor aggregated")
            i = self.keys.index(key)
            return Output(name, lambda k, a: k[i], column.arrow_type, column.largest, column)
        if isinstance(node, exp.Cast):
            inner = self.compile(node.this, name)
            if node.to.this is not exp.DataType.Type.BIGINT or (inner.source is not None and inner.source.text):
                raise DeclinedError("a CAST other than an integer's to BIGINT")

            def widened(k: list[Values], a: list[Values]) -> Values:
                values, valid = inner.compute(k, a)
                return values.astype(np.int64, copy=False), valid

            return Output(name, widened, pa.int64(), inner.largest)
        operator = _OPERATORS.get(type(node))
        if operator is not None:
            left, right = self.compile(node.this, name), self.compile(node.expression, name)
            if left.arrow_type != pa.int64() or right.arrow_type != pa.int64():
                raise DeclinedError("arithmetic on other than BIGINTs")
            largest = left.largest * right.largest if operator is np.multiply else left.largest + right.largest
            if largest > INT64_MAX:
                raise DeclinedError("arithmetic that could overflow")  # DuckDB's answer could be an error

            def arithmetic(k: list[Values], a: list[Values]) -> Values:
                (x, x_valid), (y, y_valid) = left.compute(k, a), right.compute(k, a)
                return operator(x, y), _and(x_valid, y_valid)

            return Output(name, arithmetic, pa.int64(), largest)
        if isinstance(node, exp.Count):
            if isinstance(node.this, exp.Distinct) or node.args.get("big_int") is False:
                raise DeclinedError("COUNT(DISTINCT)")
            counted = None if isinstance(node.this, exp.Star) else self.scope.column(node.this)[0]
            j = self._aggregate("count", counted)
            return Output(name, lambda k, a: a[j], pa.int64(), self.scope.layout.rows)
        function = _FUNCTIONS.get(type(node))
        if function is None:
            raise DeclinedError(f"an output {type(node).__name__}")
        read, column = self.scope.column(node.this)
        j = self._aggregate(function, read)
        if function != "sum":
            return Output(name, lambda k, a: a[j], column.arrow_type, column.largest, column)
        largest = column.largest * max(self.scope.layout.rows, 1)
        if column.text or largest > INT64_MAX:
            raise DeclinedError("a sum of strings, or one that could overflow 64 bits")
        return Output(name, lambda k, a: a[j], _HUGEINT, largest)


def _and(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    return a if b is None else a & b


# ---- the program ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Order:
    output: int  # index into the outputs (an ORDER BY of something not selected is an output not shown)
    descending: bool
    nulls_first: bool


@dataclass
class Program:
    """A compiled statement over one held layout: `run` answers it."""

    where: Predicate | None
    narrowings: list[Narrowing]  # what the top-level conjuncts say of single columns
    reads: tuple[str, ...]  # the columns it reads
    keys: list[str]  # GROUP BY
    grouped: bool
    aggregates: list[Aggregate]
    outputs: list[Output]
    shown: int  # the first `shown` outputs are the answer's columns
    order: list[Order] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    _read: tuple[DirectLayout, np.ndarray | None] | None = field(default=None, repr=False, compare=False)

    def rows_read(self, layout: DirectLayout) -> int:
        """How many rows `run` reads (those the sort key narrows the scan to)."""
        rows = self._rows(layout)
        return layout.rows if rows is None else len(rows)

    def _rows(self, layout: DirectLayout) -> np.ndarray | None:
        """The rows the sort key narrows the scan to (None: all): fixed for a layout's copy, found once (a check
        before running reads them too)."""
        found = self._read
        if found is None or found[0] is not layout:
            found = self._read = (layout, _narrowed(layout, self.narrowings))
        return found[1]

    def run(self, layout: DirectLayout) -> pa.Table:
        rows = self._rows(layout)
        if (layout.rows if rows is None else len(rows)) > SCAN_MAX_ROWS:
            raise DeclinedError("too many rows to read")
        values, valid = {}, {}
        for name in self.reads:
            column = layout.columns[name]
            values[name] = column.values if rows is None else column.values[rows]
            valid[name] = column.valid if rows is None or column.valid is None else column.valid[rows]
        count = layout.rows if rows is None else len(rows)
        if self.where is not None:
            keep = np.flatnonzero(self.where(values, valid)[0])
            if len(keep) != count:
                values = {n: v[keep] for n, v in values.items()}
                valid = {n: None if v is None else v[keep] for n, v in valid.items()}
                count = len(keep)
        keys, aggregates = self._groups(values, valid, count)
        columns = [o.compute(keys, aggregates) for o in self.outputs]
        picked = self._picked(columns, len(keys[0][0]) if keys else 1)
        shown = self.outputs[: self.shown]
        arrays = [
            _arrow(o, v[picked], None if ok is None else ok[picked]) for o, (v, ok) in zip(shown, columns, strict=False)
        ]
        return pa.Table.from_arrays(arrays, names=[o.name for o in shown])

    def _groups(
        self, values: dict[str, np.ndarray], valid: dict[str, np.ndarray | None], count: int
    ) -> tuple[list[Values], list[Values]]:
        """The groups' keys and aggregates. Each key column is coded by its distinct values (NULL last), the
        codes are combined into one integer per row, and rows sorted by it give each group a run of rows."""
        if not self.grouped:
            return [], [_reduce(a, values, valid, None, count) for a in self.aggregates]
        if not count:
            none: Values = (np.zeros(0, dtype=np.int64), None)
            return [none for _ in self.keys], [none for _ in self.aggregates]
        parts: list[tuple[np.ndarray, np.ndarray, bool]] = []
        radix = 1
        for name in self.keys:
            distinct, inverse = np.unique(values[name], return_inverse=True)
            ok = valid[name]
            nullable = ok is not None and not bool(ok.all())
            if ok is not None and nullable:
                inverse = np.where(ok, inverse, len(distinct))
            parts.append((distinct, inverse.astype(np.int64), nullable))
            radix *= len(distinct) + nullable
        if radix > INT64_MAX:
            raise DeclinedError("too many groups to number")
        combined = np.zeros(count, dtype=np.int64)
        radix = 1
        for distinct, inverse, nullable in reversed(parts):
            combined += inverse * radix
            radix *= len(distinct) + nullable
        order = np.argsort(combined, kind="stable")
        ranked = combined[order]
        starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
        group = ranked[starts]
        keys: list[Values] = []
        radix = 1
        for distinct, _, nullable in reversed(parts):
            size = len(distinct) + nullable
            code = (group // radix) % size
            radix *= size
            # a NULL key's value is any of the column's (its validity says NULL)
            keys.append((distinct[np.minimum(code, len(distinct) - 1)], code < len(distinct) if nullable else None))
        keys.reverse()
        return keys, [_reduce(a, values, valid, (order, starts), count) for a in self.aggregates]

    def _picked(self, columns: list[Values], size: int) -> np.ndarray | slice:
        """The answer's rows in order, within LIMIT and OFFSET (indices into the groups, or a slice)."""
        picked: np.ndarray | slice = slice(None)
        if self.order and size > 1:
            sort_keys = []
            for item in reversed(self.order):  # np.lexsort: the last key is the first
                v, ok = columns[item.output]
                v = v.astype(np.int64, copy=False)  # a key's values may be of a narrower type: negated below
                if ok is not None:
                    v = np.where(ok, v, 0)  # NULLs tie on the value: the next key orders them
                sort_keys.append(-v if item.descending else v)
                if ok is not None:
                    sort_keys.append(ok if item.nulls_first else ~ok)
            picked = np.lexsort(sort_keys)
        if self.limit is not None or self.offset:
            stop = None if self.limit is None else self.offset + self.limit
            picked = np.arange(size)[self.offset : stop] if isinstance(picked, slice) else picked[self.offset : stop]
        return picked


def _narrowed(layout: DirectLayout, narrowings: list[Narrowing]) -> np.ndarray | None:
    """The rows a filter can hold for, by binary search on the layout's sort key (None: too many to gain)."""
    pinned: dict[str, list[tuple[int, int]]] = {}
    for n in narrowings:  # `x >= 1992 AND x <= 1997`: what both allow
        pinned[n.column] = _intersected(pinned[n.column], n.ranges) if n.column in pinned else n.ranges
    slices = [(0, layout.rows)]
    narrowed = False
    for name in layout.sorted_by:
        ranges = pinned.get(name)
        if ranges is None:
            break
        values = layout.columns[name].values
        found = []
        for start, stop in slices:
            within = values[start:stop]
            for lo, hi in ranges:  # keys of the array's type: numpy would convert the array to the key's
                a = start + int(within.searchsorted(within.dtype.type(lo), "left"))
                b = start + int(within.searchsorted(within.dtype.type(hi), "right"))
                if a < b:
                    found.append((a, b))
        if len(found) > MAX_SLICES:
            break
        slices, narrowed = found, True
        if any(lo != hi for lo, hi in ranges):
            break  # within a range of this column's values the next column is not sorted
    read = sum(b - a for a, b in slices)
    if not narrowed or (read > layout.rows // 2 and layout.rows <= SCAN_MAX_ROWS):
        return None  # reading every row costs less than gathering most of them
    if not slices:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(a, b) for a, b in slices])


def _intersected(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    both = [(max(x[0], y[0]), min(x[1], y[1])) for x in a for y in b]
    return sorted({(lo, hi) for lo, hi in both if lo <= hi})


def _reduce(
    aggregate: Aggregate,
    values: dict[str, np.ndarray],
    valid: dict[str, np.ndarray | None],
    grouping: tuple[np.ndarray, np.ndarray] | None,
    count: int,
) -> Values:
    """One aggregate per group (`grouping`: the rows' order by group and where each group's run starts; None:
    one group of every row)."""
    if grouping is None:
        order: np.ndarray | slice = slice(None)
        starts = np.zeros(1 if count else 0, dtype=np.int64)
    else:
        order, starts = grouping
    if aggregate.column is None:  # COUNT(*)
        return (np.diff(np.append(starts, count)) if len(starts) else np.zeros(1, dtype=np.int64)), None
    v, ok = values[aggregate.column][order].astype(np.int64, copy=False), valid[aggregate.column]  # codes: int32
    present = None if ok is None else ok[order]
    counts = None if present is None else np.add.reduceat(present.astype(np.int64), starts) if len(starts) else None
    if aggregate.function == "count":
        if not len(starts):
            return np.zeros(1, dtype=np.int64), None
        return (np.diff(np.append(starts, count)) if counts is None else counts), None
    if not len(starts):  # no rows and no GROUP BY: one row, NULL
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=bool)
    some = None if counts is None else counts > 0
    if aggregate.function == "sum":
        return np.add.reduceat(v if present is None else np.where(present, v, 0), starts), some
    reducer, neutral = (np.minimum, INT64_MAX) if aggregate.function == "min" else (np.maximum, INT64_MIN)
    return reducer.reduceat(v if present is None else np.where(present, v, neutral), starts), some


def _arrow(output: Output, values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """An answer column as Arrow, laid out from buffers (pyarrow's converters from Python import pandas)."""
    bitmap = None if valid is None or valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    source = output.source
    if source is not None and source.dictionary is not None:
        codes = np.ascontiguousarray(values if valid is None else np.where(valid, values, 0), dtype=np.int32)
        return source.dictionary.take(pa.Array.from_buffers(pa.int32(), len(codes), [bitmap, pa.py_buffer(codes)]))
    data = np.ascontiguousarray(values, dtype=INT_TYPES[output.arrow_type])
    return pa.Array.from_buffers(output.arrow_type, len(data), [bitmap, pa.py_buffer(data)])


_CLAUSES = {"expressions", "from_", "from", "where", "group", "order", "limit", "offset"}


def compile_statement(sql: str, layout: DirectLayout) -> Program:
    """The program of `sql` (DuckDB's dialect, as the engine renders it) over `layout`; DeclinedError otherwise."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError as err:
        raise DeclinedError("does not parse") from err
    if not isinstance(tree, exp.Select) or any(v for k, v in tree.args.items() if k not in _CLAUSES):
        raise DeclinedError("not a SELECT of the form taken")
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    if not isinstance(table, exp.Table) or table.name != layout.name or table.args.get("db"):
        raise DeclinedError("not one layout")
    scope = _Scope(layout, table.alias_or_name)
    group = tree.args.get("group")
    if group is not None and any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup", "totals")):
        raise DeclinedError("GROUPING SETS")
    keys = [scope.column(e)[0] for e in group.expressions] if group is not None else []
    if not all(isinstance(i, (exp.Alias, exp.Column)) for i in tree.expressions):
        raise DeclinedError("an output without a name")  # DuckDB names it after its text, as this module does not
    outputs = _Outputs(scope, keys)
    compiled = [outputs.compile(i.this if isinstance(i, exp.Alias) else i, i.alias_or_name) for i in tree.expressions]
    if not outputs.aggregates and group is None:
        raise DeclinedError("no aggregation")  # a plain projection: DuckDB streams it
    if any(o.arrow_type == _HUGEINT for o in compiled) or len({o.name for o in compiled}) != len(compiled):
        raise DeclinedError("an integer sum not cast to BIGINT, or two outputs of one name")
    shown = len(compiled)
    order = []
    for ordered in tree.args["order"].expressions if tree.args.get("order") is not None else []:
        target = ordered.this
        index = None
        if isinstance(target, exp.Column) and not target.table:  # an output's name first, as DuckDB reads it
            index = next((i for i, o in enumerate(compiled[:shown]) if o.name == target.name), None)
        if index is None:
            compiled.append(outputs.compile(target, ""))
            index = len(compiled) - 1
        order.append(Order(index, bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))))
    where, narrowings = None, []
    condition = tree.args.get("where")
    if condition is not None:
        where = _predicate(scope, condition.this)[0]
        narrowings = [n for c in _conjuncts(condition.this) if (n := _predicate(scope, c)[1]) is not None]
    reads = set(keys) | {a.column for a in outputs.aggregates if a.column}
    if condition is not None:
        reads |= {c.name for c in condition.find_all(exp.Column)}
    return Program(
        where,
        narrowings,
        tuple(sorted(reads)),
        keys,
        group is not None,
        outputs.aggregates,
        compiled,
        shown,
        order,
        _count(tree.args.get("limit")),
        _count(tree.args.get("offset")) or 0,
    )


def _count(node: exp.Expr | None) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression") or node.this
    if not isinstance(value, exp.Literal) or value.is_string or not str(value.this).isdigit():
        raise DeclinedError("LIMIT or OFFSET not a number")
    return int(value.this)


class DirectAnswers:
    """The held layouts' columns and the statements compiled over them (shared by the engine's threads)."""

    def __init__(self, capacity: int = PROGRAMS) -> None:
        self.capacity = capacity
        self._layouts: dict[str, DirectLayout] = {}
        # text → the layout it was compiled over and its program (None: declined)
        self._programs: OrderedDict[str, tuple[DirectLayout | None, Program | None]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, layout: DirectLayout) -> None:
        with self._lock:
            self._layouts[layout.name] = layout

    def drop(self, name: str) -> None:
        with self._lock:
            self._layouts.pop(name, None)

    def clear(self) -> None:
        with self._lock:
            self._layouts.clear()

    def layout(self, name: str) -> DirectLayout | None:
        return self._layouts.get(name)

    def ready(self, sql: str, name: str) -> tuple[DirectLayout, Program] | None:
        """The held copy of the layout `name` and `sql` compiled over it, when there are both."""
        layout = self._layouts.get(name)
        program = None if layout is None else self.program(sql, layout)
        return None if layout is None or program is None else (layout, program)

    def run(self, sql: str, layout: DirectLayout, program: Program) -> pa.Table | None:
        """The program's answer; None when it declines while running (too many rows to read) or fails (logged):
        DuckDB answers `sql` then, and from then on."""
        try:
            return program.run(layout)
        except Exception as err:  # noqa: BLE001 (a fault here must not fail a statement DuckDB can answer)
            if not isinstance(err, DeclinedError):
                LOG.warning("direct answers: a statement failed, DuckDB runs it: %r", err)
            self.decline(sql)
            return None

    def program(self, sql: str, layout: DirectLayout) -> Program | None:
        """The statement compiled over `layout` (None: declined); compiled once per text and held copy (a text
        names one layout's rows, but a copy held again is compiled over again: its codes are its own)."""
        with self._lock:
            found = self._programs.get(sql)
            if found is not None and (found[0] is layout or found[1] is None):
                self._programs.move_to_end(sql)
                return found[1]
        try:
            program: Program | None = compile_statement(sql, layout)
        except DeclinedError:
            program = None
        except Exception as err:  # noqa: BLE001 (a fault here must not fail a statement DuckDB can answer)
            LOG.warning("direct answers: compiling a statement failed, DuckDB runs it: %r", err)
            program = None
        self._keep(sql, layout, program)
        return program

    def decline(self, sql: str) -> None:
        """Run `sql` on DuckDB from now on (its program declined it while running)."""
        self._keep(sql, None, None)

    def _keep(self, sql: str, layout: DirectLayout | None, program: Program | None) -> None:
        with self._lock:
            self._programs[sql] = (layout, program)
            while len(self._programs) > self.capacity:
                self._programs.popitem(last=False)
