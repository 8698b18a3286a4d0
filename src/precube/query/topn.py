"""TOP_N measures at query time (reference §4.2; Kylin's TopNMeasureType): a block

    SELECT k, SUM(v) FROM … [WHERE …] GROUP BY k [, d …] ORDER BY SUM(v) DESC [, …] LIMIT n [OFFSET o]

is answered from a layout that holds a TOP_N(SUM(v)) measure by k, even though the layout lacks k: each
cell keeps the `50 N` keys with the largest sums of its rows (`storage.cells`), so the layout's cells,
unnested into one row per (cell, key) with the key's value as the column k and its sum as the value,
stand for the raw rows grouped by the layout's dimensions and k. Summing those rows per group of the
block gives SUM(v) per group (Kylin merges the counters, then takes the top n), exact when no cell was
cut to its capacity, the `50 N` largest otherwise: hence only for ORDER BY that sum DESC with
LIMIT + OFFSET ≤ N, and EXPLAIN says "approximate TOP_N" unless the key's recorded range proves that no
segment has more keys than a cell holds. A TOP_N entry never holds a NULL value: the value column must
have no NULL in the segments (their recorded null counts), or a group whose values are all NULL would
be missing from the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlglot import exp

from precube.metadata import FunctionExpression, Measure, ParameterType
from precube.metadata import datatypes as dt
from precube.modeling.measure_rules import sum_type
from precube.query.aggregates import AggWay, Scan, Unnest
from precube.query.contexts import QueryContext, own_nodes
from precube.query.pruning import ValueRange
from precube.storage import cells
from precube.storage import columns as names

ELEMENT = "topn_entry"  # the unnested struct of one TOP_N entry: key, value


@dataclass(frozen=True)
class TopNAnswer:
    """A TOP_N measure that can answer the block: the way of each of its calls (all SUM(v))."""

    unnest: Unnest
    ways: list[AggWay]


def value_column(unnest: Unnest) -> str:
    """The column of the unnested scan holding an entry's summed value."""
    return f"{unnest.measure}_value"


def topn_answers(
    ctx: QueryContext,
    measures: list[Measure],
    column_of: Callable[[exp.Expr], int | None],
    column_id: Callable[[str], int | None],
    types: Mapping[int, str],
    group_dims: frozenset[int] | None,
    non_null: frozenset[int],
    ranges: Callable[[], list[dict[int, ValueRange]]],
) -> list[TopNAnswer]:
    """The TOP_N measures among `measures` that answer the block, with one way per aggregate call;
    `column_id`: a model column's id by `ALIAS.COLUMN`; `ranges`: the recorded ranges of every queryable
    segment (for the exactness proof, read only when a measure answers)."""
    select = ctx.select
    if not measures or not group_dims or not ctx.aggregates or not _ordered_by_sum(select, ctx.aggregates):
        return []
    if any(isinstance(n, exp.Window) for n in own_nodes(select)):
        return []  # a window over the unnested groups would read their merged rows: keep to plain blocks
    args = set()
    for call in ctx.aggregates:
        if not isinstance(call, exp.Sum) or isinstance(call.this, exp.Distinct) or isinstance(call.parent, exp.Filter):
            return []
        args.add(column_of(call.this))
    if len(args) != 1 or None in args:
        return []
    [value] = args
    out = sum_type(types.get(value, "")) if value is not None else None
    # a TOP_N cell holds DOUBLE sums: exact for integers and floats, not for every decimal digit
    if value is None or out not in ("bigint", "double") or value not in non_null:
        return []
    rows = _rows_wanted(select)
    found = []
    for m in measures:
        params = m.function.parameters
        if m.function.expression is not FunctionExpression.TOP_N or len(params) != 2:
            continue
        if any(p.type is not ParameterType.COLUMN for p in params):
            continue
        v, k = (column_id(p.value.upper()) for p in params)
        if v != value or k is None or k not in group_dims:
            continue
        n = cells.return_parameter(m.function.returntype, "topn")
        if rows is None or rows > n:
            continue
        unnest = Unnest(m.id, k, types.get(k, "string"), not _exact(k, types, ranges(), cells.topn_capacity(n)))
        exactness = "approximate TOP_N" if unnest.approximate else "TOP_N, every key kept"
        way = AggWay(frozenset(), frozenset({m.id}), f"measure {m.name} ({exactness})", _summed(unnest, out), unnest)
        found.append(TopNAnswer(unnest, [way] * len(ctx.aggregates)))
    return found


def _ordered_by_sum(select: exp.Select, calls: list[exp.AggFunc]) -> bool:
    """The block's first sort key is one of its SUM calls, descending (as written, through the alias or
    position of its output)."""
    order = select.args.get("order")
    if order is None or not order.expressions:
        return False
    first = order.expressions[0]
    if not isinstance(first, exp.Ordered) or not first.args.get("desc"):
        return False
    key = first.this
    outputs = select.expressions
    if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.name) <= len(outputs):
        key = outputs[int(key.name) - 1]
    elif isinstance(key, exp.Column) and not key.table:
        key = next((o for o in outputs if isinstance(o, exp.Alias) and o.alias_or_name == key.name), key)
    if isinstance(key, exp.Alias):
        key = key.this
    return isinstance(key, exp.Sum) and any(key is c for c in calls)


def _rows_wanted(select: exp.Select) -> int | None:
    """LIMIT + OFFSET, when both are integer literals; None without a LIMIT."""
    limit = select.args.get("limit")
    offset = select.args.get("offset")
    total = 0
    for clause in (limit, offset):
        if clause is None:
            continue
        n = clause.expression
        if not (isinstance(n, exp.Literal) and n.is_int):
            return None
        total += int(n.name)
    return total if limit is not None else None


def _exact(key: int, types: Mapping[int, str], ranges: list[dict[int, ValueRange]], capacity: int) -> bool:
    """Whether no cell can hold more keys than its capacity: an integer key whose recorded range in every
    segment spans at most that many values."""
    if dt.family(types.get(key, "")) is not dt.TypeFamily.INTEGER or not ranges:
        return False
    for seg in ranges:
        r = seg.get(key)
        if r is None or not isinstance(r.low, int) or not isinstance(r.high, int) or r.high - r.low + 1 > capacity:
            return False
    return True


def _summed(unnest: Unnest, out: str) -> Callable[[Scan, frozenset[int]], exp.Expr]:
    value = value_column(unnest)
    return lambda s, d: exp.cast(exp.func("sum", s(value)), exp.DataType.build(out, dialect="spark"))


def unnested(table: exp.Expr, alias: str, dims: list[int], unnest: Unnest) -> exp.Subquery:
    """The layout's rows (`table`, a scan aliased `alias`) with their TOP_N cell unnested: its dimensions,
    the key's value as the key column (`cells.decode_key` of one column, cast back to its type), the
    entry's value; named as the layout's columns, aliased `alias` again."""
    entry = exp.to_identifier(ELEMENT)

    def field(name: str) -> exp.Expr:
        return exp.column(name, table=entry)

    key = field("key")
    unescaped: exp.Expr = key.copy()
    if dt.family(unnest.key_type) in (dt.TypeFamily.STRING, dt.TypeFamily.OTHER):  # numbers, dates: neither `\` nor `|`
        separator = exp.func(
            "replace", key.copy(), exp.Literal.string(cells.KEY_ESCAPE + cells.KEY_SEPARATOR), exp.Literal.string("|")
        )
        unescaped = exp.func(
            "replace", separator, exp.Literal.string(cells.KEY_ESCAPE * 2), exp.Literal.string(cells.KEY_ESCAPE)
        )
    text = exp.Case(
        ifs=[exp.If(this=exp.EQ(this=key.copy(), expression=exp.Literal.string(cells.KEY_NULL)), true=exp.Null())],
        default=unescaped,
    )
    spark_type = dt.to_spark(unnest.key_type)
    decoded = text if spark_type == "string" else exp.cast(text, exp.DataType.build(spark_type, dialect="spark"))

    def scan_column(name: str) -> exp.Column:
        return exp.column(exp.to_identifier(name, quoted=True), table=alias)

    outputs: list[exp.Expr] = [scan_column(names.column(d)) for d in dims]
    outputs.append(exp.alias_(decoded, exp.to_identifier(names.column(unnest.key), quoted=True)))
    outputs.append(exp.alias_(field("value"), exp.to_identifier(value_column(unnest), quoted=True)))
    lateral = exp.Unnest(
        expressions=[scan_column(names.measure_column(unnest.measure))],
        alias=exp.TableAlias(this=exp.to_identifier("topn_entries"), columns=[entry.copy()]),
    )
    inner = exp.select(*outputs).from_(table).join(exp.Join(this=lateral, kind="CROSS"))
    return inner.subquery(alias)


def fix_limit(select: exp.Select) -> None:
    """Make the block's LIMIT and OFFSET literals new nodes: the plan cache then keys plans on their values
    (a literal the final tree lost counts as consumed), since a larger LIMIT may exceed the TOP_N capacity."""
    for clause in (select.args.get("limit"), select.args.get("offset")):
        if clause is not None and isinstance(clause.expression, exp.Literal):
            clause.set("expression", exp.Literal.number(clause.expression.name))
