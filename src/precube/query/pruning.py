"""Segment pruning (Kylin's `SegmentPruningRule`): a segment is skipped when the query's filter cannot be true
for any row whose columns lie within the segment's ranges (its partition range and its dimensions' min/max).

A predicate is judged over the ranges as the pair (can be TRUE, can be FALSE) for some row; NULL is neither,
which makes NOT exact (it swaps the pair) and AND/OR simple. Ranges are treated as dense intervals, which only
over-approximates what a segment holds, so an answer of "cannot match" is always safe.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp

from precube.errors import PrecubeError
from precube.metadata import datatypes
from precube.metadata.dataflow import MAX_TIME, Segment
from precube.metadata.model import Model
from precube.modeling.partition_format import from_epoch_ms
from precube.query.literal_lists import items_of, value_list


@dataclass(frozen=True)
class ValueRange:
    """Every value of a column within a segment lies in [low, high] (or [low, high) when not high_inclusive).
    low/high are int, float, Decimal, str, date or datetime; None leaves that side unbounded."""

    low: object
    high: object
    high_inclusive: bool = True


Interval = tuple[Any, bool, Any, bool]  # low, low inclusive, high, high inclusive; a None bound is unbounded
Outcome = tuple[bool, bool]  # (some row can be TRUE, some row can be FALSE)
UNSURE: Outcome = (True, True)
RangeOf = Callable[[exp.Column], ValueRange | None]

_COMPARISONS: dict[type, str] = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME_TEXT = re.compile(r"[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?")
_TIME_TYPES = {t for t in exp.DataType.Type if t.name == "DATE" or t.name.startswith(("TIMESTAMP", "DATETIME"))}


def may_match(condition: exp.Expr | None, range_of: RangeOf) -> bool:
    """False only when `condition` is false or NULL for every row whose columns lie in their ranges (the segment
    can be skipped); True whenever unsure. `range_of` gives a column's range, None when unknown."""
    return condition is None or _judge(condition, range_of)[0]


def pinned_columns(condition: exp.Expr | None) -> list[exp.Column]:
    """The columns a filter pins to a few values on every row it keeps: the column of each top-level conjunct
    `col = literal` or `col IN (literals)`, or of an OR of such predicates over one column. Rows sorted by such
    a column that the filter keeps lie together, in a few row groups."""
    if condition is None:
        return []
    parts = condition.flatten() if isinstance(condition, exp.And) else [condition.unnest()]
    return [col for part in parts if (col := _pinned(part)) is not None]


def _pinned(e: exp.Expr) -> exp.Column | None:
    if isinstance(e, exp.Or):
        columns = [_pinned(p) for p in e.flatten()]
        first = columns[0]
        same = first is not None and all(
            c is not None and (c.table, c.name) == (first.table, first.name) for c in columns
        )
        return first if same else None
    if isinstance(e, exp.EQ):
        for col, value in ((e.this, e.expression), (e.expression, e.this)):
            if isinstance(col, exp.Column) and _is_literal(value):
                return col
    if isinstance(e, exp.In) and _bare(e, "expressions") and isinstance(e.this, exp.Column):
        return e.this if all(value_list(v) or _is_literal(v) for v in e.expressions) else None
    return None


def _is_literal(e: exp.Expr) -> bool:
    try:
        _literal(e)
    except (ValueError, ArithmeticError):
        return False
    return True


def _judge(e: exp.Expr, range_of: RangeOf) -> Outcome:
    if isinstance(e, exp.Paren):
        return _judge(e.this, range_of)
    if isinstance(e, exp.And | exp.Or):  # flatten: long AND chains would otherwise recurse deeply
        parts = [_judge(p, range_of) for p in e.flatten()]
        if isinstance(e, exp.And):  # FALSE if any side is; TRUE only if all sides can be
            return all(t for t, _ in parts), any(f for _, f in parts)
        return any(t for t, _ in parts), all(f for _, f in parts)
    if isinstance(e, exp.Not):
        can_true, can_false = _judge(e.this, range_of)
        return can_false, can_true  # NOT NULL is NULL, so the pair just swaps
    if isinstance(e, exp.Boolean):
        return e.this is True, e.this is False
    if isinstance(e, exp.Null):
        return False, False
    try:
        return _atom(e, range_of)
    except (TypeError, ValueError, ArithmeticError):  # odd literals or incomparable values: unsure, never an error
        return UNSURE


def _atom(e: exp.Expr, range_of: RangeOf) -> Outcome:
    """A comparison, BETWEEN, IN or LIKE of a column (or year of one) against literals."""
    if type(e) in _COMPARISONS:
        op, subject, other = _COMPARISONS[type(e)], e.this, e.expression
        if isinstance(subject, exp.Null) or isinstance(other, exp.Null):
            return False, False  # a comparison with NULL is NULL on every row
        if (r := _subject(subject, range_of)) is None:
            op, other, r = _FLIPPED[op], subject, _subject(other, range_of)  # literal op column
            if r is None:
                return UNSURE
        r, v = _coerce(r, _literal(other))
        if op in ("=", "<>"):
            can_true, can_false = _outcome(r, [(v, True, v, True)])
            return (can_true, can_false) if op == "=" else (can_false, can_true)
        return _outcome(r, [(None, False, v, op == "<=")] if op[0] == "<" else [(v, op == ">=", None, False)])
    if isinstance(e, exp.Between) and _bare(e, "low", "high") and (r := _subject(e.this, range_of)):
        r, low = _coerce(r, _literal(e.args["low"]))
        r, high = _coerce(r, _literal(e.args["high"]))
        return _outcome(r, [(low, True, high, True)])
    if isinstance(e, exp.In) and _bare(e, "expressions") and (r := _subject(e.this, range_of)):
        values = _plain_values(r, e.expressions)
        if values is None:
            values = []
            for item in items_of(e.expressions):
                r, v = _coerce(r, _literal(item))
                values.append(v)
        return in_outcome(r, sorted(set(values)))
    if isinstance(e, exp.Like) and (r := _subject(e.this, range_of)) and isinstance(_sample(r), str):
        can_true, can_false = _like(r, e.expression)
        return (can_false, can_true) if e.args.get("negate") else (can_true, can_false)
    return UNSURE


def _plain_values(r: Interval, items: list[exp.Expr]) -> list[Any] | None:
    """An IN list of plain numbers against a number column, or of strings against a string column, read as
    `_literal` and `_coerce` would (an IN list may have 20,000 values, or one collapsed list of them); None for
    any other list."""
    sample = _sample(r)
    strings = isinstance(sample, str)
    if not strings and (not isinstance(sample, int | float | Decimal) or isinstance(sample, bool)):
        return None
    texts: list[str] = []
    for item in items:
        if (found := value_list(item)) is not None:
            if found[0] is not strings:
                return None
            texts.extend(found[1])
        elif type(item) is exp.Literal and item.is_string is strings:
            texts.append(item.this)
        else:
            return None
    if strings:
        return texts
    numbers = [_finite(Decimal(t)) for t in texts]
    return [float(v) for v in numbers] if isinstance(r[0], float) or isinstance(r[2], float) else numbers


def _like(r: Interval, pattern: exp.Expr) -> Outcome:
    if not (isinstance(pattern, exp.Literal) and pattern.is_string) or "\\" in pattern.this:
        return UNSURE  # escapes: not worth reading
    text: str = pattern.this
    prefix = re.split(r"[%_]", text, maxsplit=1)[0]
    if prefix == text:
        return _outcome(r, [(text, True, text, True)])
    if not prefix:
        return UNSURE
    # Strings starting with `prefix` are exactly those in [prefix, prefix with its last character incremented).
    stem = prefix.rstrip(chr(0x10FFFF))
    after = stem[:-1] + chr(ord(stem[-1]) + 1) if stem else None
    can_true, can_false = _outcome(r, [(prefix, True, after, False)])
    return can_true, (can_false if text == prefix + "%" else True)  # more after the prefix: FALSE stays possible


def _outcome(r: Interval, parts: list[Interval]) -> Outcome:
    """Over range `r`, a predicate TRUE exactly on the sorted, disjoint intervals `parts`."""
    gaps, low, low_in = [], None, False
    for p_low, p_low_in, p_high, p_high_in in parts:
        if p_low is not None:
            gaps.append((low, low_in, p_low, not p_low_in))
        low, low_in = p_high, not p_high_in
        if p_high is None:
            break
    else:
        gaps.append((low, low_in, None, False))
    return any(_meets(r, p) for p in parts), any(_meets(r, g) for g in gaps)


def in_outcome(r: Interval, values: list[Any]) -> Outcome:
    """Over range `r`, a predicate TRUE exactly at the sorted distinct points `values` (an IN list): what
    `_outcome` of one interval per value answers, found by bisection (an IN list may have 20,000 values)."""
    low, low_in, high, high_in = r
    if low is not None and high is not None and (low > high or (low == high and not (low_in and high_in))):
        return False, False  # an empty range
    i = 0 if low is None else (bisect_left(values, low) if low_in else bisect_right(values, low))
    can_true = i < len(values) and (high is None or values[i] < high or (values[i] == high and high_in))
    if low is None or high is None or low < high:
        return can_true, True  # a range of more than one point holds values outside any finite list
    return can_true, not can_true  # a single point: FALSE exactly when it is no value of the list


def _meets(a: Interval, b: Interval) -> bool:
    """Whether two intervals share a point."""
    low = _edge([a[:2], b[:2]], upper=False)
    high = _edge([a[2:], b[2:]], upper=True)
    return low is None or high is None or low[0] < high[0] or (low[0] == high[0] and low[1] and high[1])


def _edge(bounds: list[tuple[Any, bool]], upper: bool) -> tuple[Any, bool] | None:
    found: tuple[Any, bool] | None = None
    for value, inclusive in bounds:
        if value is None:
            continue
        if found is None or (value < found[0] if upper else value > found[0]):
            found = (value, inclusive)
        elif value == found[0]:
            found = (value, inclusive and found[1])
    return found


def _subject(e: exp.Expr, range_of: RangeOf) -> Interval | None:
    """The range of a column, or of year() of a date/timestamp column."""
    if isinstance(e, exp.Column):
        r = range_of(e)
        if r is None or (r.low is None and r.high is None) or r.low != r.low or r.high != r.high:  # x != x: NaN
            return None
        return r.low, True, r.high, r.high_inclusive
    if (isinstance(e, exp.Extract) and e.this.name.upper() == "YEAR") or isinstance(e, exp.Year):
        column = e.expression if isinstance(e, exp.Extract) else e.this
        if isinstance(column, exp.TsOrDsToDate) and _bare(column):
            column = column.this  # year(col) parses as YEAR(TO_DATE(col)); same year
        r = range_of(column) if isinstance(column, exp.Column) else None
        if r is None or not all(v is None or isinstance(v, dt.date) for v in (r.low, r.high)):
            return None
        low, high = (v.year if isinstance(v, dt.date) else None for v in (r.low, r.high))
        if high is not None and not r.high_inclusive and _midnight(r.high) == dt.datetime(high, 1, 1):
            high -= 1  # an exclusive end at Jan 1 00:00 holds nothing of its year
        return low, True, high, True
    return None


def _literal(e: exp.Expr) -> object:
    """The Python value of a literal: str, Decimal (exact, as written), date or datetime."""
    if isinstance(e, exp.Literal):
        return e.this if e.is_string else _finite(Decimal(e.this))
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return -_finite(Decimal(e.this.this))
    if isinstance(e, exp.Cast | exp.TsOrDsToDate) and isinstance(e.this, exp.Literal) and e.this.is_string:
        to = e.args.get("to") if isinstance(e, exp.Cast) else exp.DataType.build("date")
        if _bare(e, "to", "safe") and isinstance(to, exp.DataType) and to.this in _TIME_TYPES:
            return _time(e.this.this, with_time=to.this is not exp.DataType.Type.DATE)
    raise ValueError(f"not a literal: {e.sql()}")


def _coerce(r: Interval, value: object) -> tuple[Interval, object]:
    """`r` and `value` made comparable, as SQL compares them (dates are midnight timestamps); ValueError if not."""
    sample = _sample(r)
    if isinstance(sample, dt.date):
        if isinstance(value, str):  # a date column reads text as a date (Spark drops any time: unsure)
            value = _time(value, with_time=isinstance(sample, dt.datetime))
        if not isinstance(value, dt.date):
            raise ValueError(f"{value!r} is no date")
        return (_midnight(r[0]), r[1], _midnight(r[2]), r[3]), _midnight(value)
    if isinstance(sample, int | float | Decimal) and not isinstance(sample, bool):
        if isinstance(value, str):
            value = _finite(Decimal(value.strip()))
            if isinstance(sample, int) and value != value.to_integral_value():
                raise ValueError("engines round fractional text for integer columns differently")
        if not isinstance(value, Decimal):
            raise ValueError(f"{value!r} is no number")
        # Float columns compare as doubles: 0.1 must meet float 0.1, which Decimal("0.1") does not equal.
        return r, (float(value) if isinstance(r[0], float) or isinstance(r[2], float) else value)
    if isinstance(sample, str) and isinstance(value, str):
        return r, value
    raise ValueError(f"{value!r} does not compare with {sample!r}")


def _bare(e: exp.Expr, *allowed: str) -> bool:
    """Whether `e` has no arguments but `this` and `allowed` (no FORMAT, subquery, SYMMETRIC …)."""
    return all(not value or key in ("this", *allowed) for key, value in e.args.items())


def _sample(r: Interval) -> Any:
    return r[0] if r[0] is not None else r[2]


def _midnight(value: Any) -> Any:
    return dt.datetime.combine(value, dt.time()) if type(value) is dt.date else value


def _finite(value: Decimal) -> Decimal:
    if not value.is_finite():
        raise ValueError(f"{value} is not finite")
    return value


def _time(text: str, with_time: bool) -> dt.date:
    """A date (or, `with_time`, a timestamp: date only is midnight) written as ISO text; ValueError if not."""
    text = text.strip()
    day, rest = _DATE_TEXT.match(text), text[10:]
    if day is None or (rest and not (with_time and _TIME_TEXT.fullmatch(rest))):
        raise ValueError(f"{text!r} is no date or timestamp")
    return dt.datetime.fromisoformat(text) if with_time else dt.date.fromisoformat(text)


def segment_ranges(segment: Segment, model: Model, column_types: Mapping[int, str]) -> dict[int, ValueRange]:
    """Model column id → ValueRange in one segment: the partition column's from the segment's range (none for a
    full one), each dimension's from its recorded min/max. `column_types`: model column id → Kylin datatype."""
    ranges = dict(_partition_range(segment, model, column_types))
    for key, found in segment.dimension_range_info_map.items():
        datatype = column_types.get(int(key)) if key.strip().isdecimal() else None  # not isdigit: int("²") fails
        if datatype is None or found.min is None or found.max is None:
            continue
        low, high = _typed(found.min, datatype), _typed(found.max, datatype)
        if low is None or high is None:
            continue
        if isinstance(low, float) and isinstance(high, float) and datatypes.base_name(datatype) == "float":
            # A 32-bit float read back as a double: a literal may round to it without being equal to it.
            low, high = _widen(low, -1), _widen(high, 1)
        ranges[int(key)] = ValueRange(low, high)  # the data's own bounds: within the partition range, or tighter
    return ranges


def _partition_range(segment: Segment, model: Model, column_types: Mapping[int, str]) -> dict[int, ValueRange]:
    desc, rng = model.partition_desc, segment.seg_range
    if desc is None or rng.is_full:
        return {}
    try:
        column = model.column_by_ref(desc.partition_date_column)
    except KeyError:
        return {}
    datatype = column_types.get(column.id)
    if datatype is None:
        return {}

    def boundary(ms: int) -> object:  # as the build's range predicate writes it; an unwritable one is unbounded
        try:
            return _typed(str(from_epoch_ms(ms, desc.partition_date_format, datatype)), datatype)
        except PrecubeError:
            return None

    low, high = boundary(max(rng.start, 0)), None if rng.end >= MAX_TIME else boundary(rng.end)
    return {} if low is None and high is None else {column.id: ValueRange(low, high, high_inclusive=False)}


def _widen(value: float, direction: int) -> float:
    return value if math.isinf(value) else value + direction * (abs(value) * 1e-6 + 1e-44)


def _typed(text: str, datatype: str) -> object:
    """A min/max or boundary text as a value of `datatype` (as `to_text` wrote it); None if unreadable."""
    base = datatypes.base_name(datatype)
    try:
        if base in ("tinyint", "smallint", "integer", "bigint"):
            return int(text)
        if base in ("float", "double"):
            number = float(text)
            return None if number != number else number  # NaN orders nothing
        if base == "decimal":
            return _finite(Decimal(text))
        if base == "date":
            return dt.date.fromisoformat(text)
        if base == "timestamp":
            stamp = dt.datetime.fromisoformat(text)
            return stamp.astimezone(dt.UTC).replace(tzinfo=None) if stamp.tzinfo else stamp  # precube runs in UTC
    except (ValueError, ArithmeticError):
        return None
    return text if base in ("varchar", "char") else None
