"""How an aggregate call of a query is answered from an aggregate layout's cells (DESIGN §4 "merge").

Each call gets its ways (`AggWay`), best first; a layout can answer the call when one way's dimensions
and measures are all in it. A way builds the SQL that replaces the call in the rewritten block:
each measure's merge function over the cells (SUM of SUM, SUM of COUNT, MIN of MIN, OR of bitmaps,
union of HLL or KLL sketches), or an aggregate over dimension values ("dimension as measure",
Kylin's rule for MIN/MAX/COUNT DISTINCT, widened here to SUM/COUNT/AVG of a dimension weighted by
COUNT(*), which is exact too). Results are cast to the type Spark gives the same call on raw rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from precube.metadata import Measure, Model, datatypes
from precube.metadata.model import FunctionExpression, ParameterType
from precube.modeling import spark_types
from precube.modeling.measure_rules import avg_type, sum_type
from precube.query.spark_decimals import spark_average

Scan = Callable[[str], exp.Expr]  # layout file column name → column of the scan


@dataclass(frozen=True)
class Unnest:
    """A way that reads a TOP_N measure's cells unnested (`query.topn`): one row per (cell, entry), with
    the entry's key as the model column `key` (of type `key_type`)."""

    measure: int
    key: int
    key_type: str
    approximate: bool  # a cell may have dropped keys beyond its capacity


@dataclass(frozen=True)
class AggWay:
    dims: frozenset[int]
    measures: frozenset[int]
    describe: str
    build: Callable[[Scan, frozenset[int]], exp.Expr]  # (scan, layout dims) → replacement
    unnest: Unnest | None = None  # the scan unnests this TOP_N measure; the key column comes from it


@dataclass(frozen=True)
class AggCall:
    """One aggregate call of a context and its ways; `problem` says why it has none."""

    node: exp.AggFunc
    ways: list[AggWay]
    problem: str | None = None


def _cast(e: exp.Expr, spark_type: str) -> exp.Expr:
    return exp.cast(e, exp.DataType.build(spark_type, dialect="spark"))


def _zero_if_null(e: exp.Expr) -> exp.Expr:
    return exp.func("coalesce", e, exp.Literal.number(0))


def _fn(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _weighted(s: Scan, col: int, count_star: int) -> exp.Expr:
    """SUM of a dimension over its rows: the value times its cell's COUNT(*)."""
    return exp.func("sum", exp.Mul(this=s(str(col)), expression=s(str(count_star))))


def _present_rows(s: Scan, col: int, count_star: int) -> exp.Expr:
    """A cell's rows where the dimension is not NULL (summed: COUNT(dimension) over the rows)."""
    present = exp.Not(this=exp.Is(this=s(str(col)), expression=exp.Null()))
    return exp.If(this=present, true=s(str(count_star)))


@dataclass(frozen=True)
class MeasureIndex:
    """The model's live measures by (function, argument column id or None for a constant); COUNT DISTINCT
    measures of several columns by their set of column ids."""

    model: Model
    by_call: Mapping[tuple[str, int | None], list[Measure]]
    count_star: int | None
    by_tuple: Mapping[frozenset[int], list[Measure]] = field(default_factory=dict)

    @classmethod
    def of(cls, model: Model) -> MeasureIndex:
        found: dict[tuple[str, int | None], list[Measure]] = {}
        tuples: dict[frozenset[int], list[Measure]] = {}
        count_star = None
        ids = {c.column: c.id for c in model.live_columns()}
        for m in model.measures():
            params = m.function.parameters
            columns = [ids.get(p.value) for p in params if p.type is ParameterType.COLUMN]
            if any(c is None for c in columns):
                continue  # a column that is no longer live
            arg = columns[0] if params and params[0].type is ParameterType.COLUMN else None
            if len(params) > 1 and m.function.expression is FunctionExpression.COUNT_DISTINCT:
                key = frozenset(c for c in columns if c is not None)
                if len(key) == len(params):  # the distinct tuples of these columns, in any order
                    tuples.setdefault(key, []).append(m)
                continue
            found.setdefault((m.function.expression.value, arg), []).append(m)
            if m.function.expression is FunctionExpression.COUNT and arg is None:
                count_star = m.id
        return cls(model, found, count_star, tuples)

    def find(self, fn: FunctionExpression, arg: int | None) -> list[Measure]:
        return self.by_call.get((fn.value, arg), [])


def agg_call(
    node: exp.AggFunc,
    index: MeasureIndex,
    column_of: Callable[[exp.Expr], int | None],
    types: Mapping[int, str],
    group_dims: frozenset[int] | None,
    non_null: frozenset[int] = frozenset(),
) -> AggCall:
    """The ways to answer `node`; `column_of` maps an argument (a column, or an expression equal to a
    computed column) to a model column id; `group_dims` are the model columns the block groups by (None
    when it groups by anything else too); `non_null`: columns proven to hold no NULL in the rows read."""
    ways: list[AggWay] = []
    arg_node = node.this
    distinct = isinstance(arg_node, exp.Distinct)
    if distinct:
        args = arg_node.expressions
        if len(args) != 1:
            return _distinct_tuples(node, args, column_of, index, group_dims)
        arg_node = args[0]
    count_all = isinstance(node, exp.Count) and (arg_node is None or isinstance(arg_node, (exp.Star, exp.Literal)))
    if count_all and distinct:
        return AggCall(node, [], f"{node.sql(dialect='spark')} counts distinct constants")
    if isinstance(node, exp.Sum) and not distinct and index.count_star is not None and _is_integer(arg_node):
        # SUM of an integer constant: the constant times the rows, NULL for none (no cell), as Spark's
        cs_id, constant = index.count_star, arg_node.copy()
        ways.append(
            AggWay(
                frozenset(),
                frozenset({cs_id}),
                "the constant times COUNT(*)",
                lambda s, d: _cast(exp.func("sum", exp.Mul(this=constant.copy(), expression=s(str(cs_id)))), "bigint"),
            )
        )
        return AggCall(node, ways)
    if isinstance(node, exp.Sum) and not distinct and isinstance(arg_node.unnest(), exp.Case):
        return _case_sum(node, arg_node.unnest(), index, column_of, types)
    if isinstance(node, (exp.PercentileCont, exp.PercentileDisc)):
        # exact: a PERCENTILE_APPROX measure is a sketch, so only rows (a table index or the tables) answer it
        return AggCall(node, [], f"{node.sql(dialect='spark')} is an exact percentile: no aggregate holds it")
    col = None if count_all or arg_node is None else column_of(arg_node)
    if not count_all and col is None:
        return AggCall(node, [], f"the argument of {node.sql(dialect='spark')} is no model column or computed column")
    cs = index.count_star
    star = frozenset({cs}) if cs is not None else frozenset()

    def measure_way(m: Measure, build: Callable[[exp.Expr], exp.Expr]) -> None:
        ways.append(AggWay(frozenset(), frozenset({m.id}), f"measure {m.name}", lambda s, d: build(s(str(m.id)))))

    def weighted_way(describe: str, build: Callable[[Scan, int, int], exp.Expr]) -> None:
        """A way over the dimension itself, weighted by the cells' COUNT(*)."""
        if col is not None and cs is not None:
            ways.append(AggWay(frozenset({col}), star, describe, lambda s, d: build(s, col, cs)))

    def count_of(c: exp.Expr) -> exp.Expr:
        return _zero_if_null(_cast(exp.func("sum", c), "bigint"))

    if distinct and isinstance(node, (exp.Sum, exp.Avg, exp.Min, exp.Max)):
        # a layout holds one row per group of its dimensions: within a query group the set of values of a
        # dimension is the raw rows' set, so the call over the DISTINCT values is exact (no measure is)
        if col is not None and (not isinstance(node, (exp.Sum, exp.Avg)) or sum_type(types[col]) is not None):
            ways.append(
                AggWay(
                    frozenset({col}),
                    frozenset(),
                    "over the distinct values of the dimension",
                    lambda s, d: _distinct_call(node, s(str(col)), types[col]),
                )
            )
        if not ways:
            return AggCall(node, [], f"{node.sql(dialect='spark')}: DISTINCT of a non-numeric column")
        return AggCall(node, ways)
    if isinstance(node, exp.Count) and not distinct:
        for m in index.find(FunctionExpression.COUNT, None if count_all else col):
            measure_way(m, count_of)
        if not count_all and col in non_null and cs is not None:
            # no NULL among the rows: COUNT(col) counts them all
            ways.append(
                AggWay(frozenset(), star, "COUNT(*), the column has no NULL", lambda s, d: count_of(s(str(cs))))
            )
        if not count_all:
            weighted_way("COUNT(*) where the dimension is not NULL", lambda s, c, n: count_of(_present_rows(s, c, n)))
    elif isinstance(node, exp.Sum) and col is not None:
        out = sum_type(types[col])
        if out is not None:
            for m in index.find(FunctionExpression.SUM, col):
                measure_way(m, lambda c: _cast(exp.func("sum", c), out))
            weighted_way("SUM of the dimension weighted by COUNT(*)", lambda s, c, n: _cast(_weighted(s, c, n), out))
    elif isinstance(node, (exp.Min, exp.Max)) and col is not None:
        fn = FunctionExpression.MIN if isinstance(node, exp.Min) else FunctionExpression.MAX
        for m in index.find(fn, col):
            measure_way(m, lambda c: exp.func(fn.value.lower(), c))
        ways.append(
            AggWay(
                frozenset({col}),
                frozenset(),
                "from the dimension",
                lambda s, d: exp.func(fn.value.lower(), s(str(col))),
            )
        )
    elif (isinstance(node, exp.Count) and distinct) or isinstance(node, exp.ApproxDistinct):
        assert col is not None
        ways.append(
            AggWay(
                frozenset({col}),
                frozenset(),
                "from the dimension",
                lambda s, d: exp.Count(this=exp.Distinct(expressions=[s(str(col))])),
            )
        )
        approximate = isinstance(node, exp.ApproxDistinct)
        # an exact call prefers a bitmap, an approximate one the cheaper HLL sketch
        for m in sorted(index.find(FunctionExpression.COUNT_DISTINCT, col), key=lambda m: _is_hll(m) != approximate):
            if _is_hll(m):
                measure_way(m, lambda c: _fn("precube_hll_count", exp.ArrayAgg(this=c)))
                continue

            ways.append(AggWay(frozenset(), frozenset({m.id}), f"measure {m.name}", _bitmap_count(m.id, group_dims)))
    elif isinstance(node, exp.Avg) and col is not None and sum_type(types[col]) is not None:
        datatype = types[col]
        sums = index.find(FunctionExpression.SUM, col)
        counts = index.find(FunctionExpression.COUNT, col)
        counters = [(c.id, "SUM / COUNT measures") for c in counts[:1]]
        if col in non_null and cs is not None:  # no NULL among the rows: AVG = SUM / COUNT(*)
            counters.append((cs, "SUM / COUNT(*) measures, the column has no NULL"))
        for s_id, c_id, describe in ((sums[0].id, c, d) for c, d in counters if sums):
            ways.append(
                AggWay(
                    frozenset(),
                    frozenset({s_id, c_id}),
                    describe,
                    _sum_over_count(s_id, c_id, datatype),
                )
            )
        weighted_way(
            "the dimension weighted by COUNT(*)",
            lambda s, c, n: _average(_weighted(s, c, n), exp.func("sum", _present_rows(s, c, n)), datatype),
        )
    elif isinstance(node, exp.ApproxQuantile) and col is not None:
        q = node.args.get("quantile")
        value_type = types[col] if sum_type(types[col]) is not None else "double"  # numeric, else DOUBLE
        if isinstance(q, exp.Literal) and not q.is_string:
            for m in index.find(FunctionExpression.PERCENTILE_APPROX, col):
                # Spark's PERCENTILE_APPROX returns one of the values, typed as they are
                measure_way(m, lambda c: _cast(_fn("precube_kll_quantile", exp.ArrayAgg(this=c), q.copy()), value_type))
    if not ways:
        return AggCall(node, [], f"{node.sql(dialect='spark')}: no measure of the model computes it")
    return AggCall(node, ways)


def _case_sum(
    node: exp.Sum,
    case: exp.Case,
    index: MeasureIndex,
    column_of: Callable[[exp.Expr], int | None],
    types: Mapping[int, str],
) -> AggCall:
    """SUM(CASE WHEN c THEN x … ELSE y END), the conditions over dimensions and each value a column or computed
    column, a number or NULL: the same CASE over the cells, summed — each value by its measure's cell (or the
    dimension weighted by COUNT(*)), a number k by k times the cell's COUNT(*). Exact: a cell stands for rows
    equal on every dimension, so the CASE picks the same branch for all of them (TPC-H Q8, Q12, Q14)."""
    branches = [(i.this, i.args["true"]) for i in case.args.get("ifs") or []]
    default = case.args.get("default")
    values = [v for _, v in branches] + ([default] if default is not None else [])
    refused = AggCall(node, [], f"{node.sql(dialect='spark')}: no measure of the model computes it")
    conditions: set[int] = set()
    for condition, _ in branches:
        for col in condition.find_all(exp.Column):
            found = column_of(col)
            if found is None:
                return refused
            conditions.add(found)
        if condition.find(exp.AggFunc, exp.Query, exp.Subquery) is not None:
            return refused
    typed: list[exp.DataType] = []
    by_measure: list[tuple[exp.Expr, int | None, Measure | None]] = []  # (value, its column, its SUM measure)
    for value in values:
        col = None if _number(value) is not None or isinstance(value, exp.Null) else column_of(value)
        if col is None and _number(value) is None and not isinstance(value, exp.Null):
            return refused
        if col is not None:
            typed.append(exp.DataType.build(datatypes.to_spark(types[col]), dialect="spark"))
        elif (number := _number(value)) is not None:
            typed.append(number)
        sums = index.find(FunctionExpression.SUM, col) if col is not None else []
        by_measure.append((value, col, sums[0] if sums else None))
    wider = spark_types.wider(typed) if typed else None
    out = spark_types.sum_type(wider) if wider is not None else None
    cs = index.count_star
    if out is None or (cs is None and any(c is not None or _number(v) for v, c, _ in by_measure)):
        return refused

    def way(weighted: bool) -> AggWay | None:
        dims, measures = set(conditions), {cs} if cs is not None else set()
        parts: list[Callable[[Scan], exp.Expr]] = []
        for value, col, measure in by_measure:
            if col is not None and weighted:
                dims.add(col)
            elif col is not None:
                if measure is None:
                    return None
                measures.add(measure.id)
            parts.append(_case_value(value, col, None if weighted else measure, cs))
        conds = [c for c, _ in branches]

        def build(s: Scan, d: frozenset[int]) -> exp.Expr:
            ifs = [exp.If(this=c.copy(), true=p(s)) for c, p in zip(conds, parts, strict=False)]
            otherwise = parts[len(conds)](s) if default is not None else None
            return _cast(exp.func("sum", exp.Case(ifs=ifs, default=otherwise)), spark_types.type_name(out))

        describe = "the CASE over the dimensions, of " + ("dimensions weighted by COUNT(*)" if weighted else "measures")
        return AggWay(frozenset(dims), frozenset(measures), describe, build)

    ways = [w for w in (way(False), way(True)) if w is not None]
    return AggCall(node, ways) if ways else refused


def _case_value(
    value: exp.Expr, col: int | None, measure: Measure | None, count_star: int | None
) -> Callable[[Scan], exp.Expr]:
    """A CASE value over a cell: its SUM measure's cell, else the dimension weighted by COUNT(*); a number k times
    COUNT(*); NULL."""
    if col is None and _number(value) is None:
        return lambda s: exp.Null()
    if col is None:
        return lambda s: exp.Mul(this=value.copy(), expression=s(str(count_star)))
    if measure is not None:
        return lambda s: s(str(measure.id))
    return lambda s: exp.Mul(this=s(str(col)), expression=s(str(count_star)))


def _number(node: exp.Expr) -> exp.DataType | None:
    """The type of a number literal, possibly negated; None for anything else."""
    inner = node.unnest()
    inner = inner.this.unnest() if isinstance(inner, exp.Neg) else inner
    return spark_types.literal_type(inner) if isinstance(inner, exp.Literal) and not inner.is_string else None


def _distinct_tuples(
    node: exp.AggFunc,
    args: list[exp.Expr],
    column_of: Callable[[exp.Expr], int | None],
    index: MeasureIndex,
    group_dims: frozenset[int] | None,
) -> AggCall:
    """COUNT(DISTINCT a, b, …) of dimensions: the distinct tuples of a layout's values are the raw rows'
    (each engine's SQL counts only tuples without a NULL, as Spark does); or a COUNT DISTINCT measure of
    exactly these columns, in any order (its sketch skips the rows where one of them is NULL)."""
    cols = [column_of(a) for a in args]
    if not isinstance(node, exp.Count) or any(c is None for c in cols):
        return AggCall(node, [], f"{node.sql(dialect='spark')}: DISTINCT of several arguments that are not all columns")
    ids = [c for c in cols if c is not None]
    way = AggWay(
        frozenset(ids),
        frozenset(),
        "distinct tuples of the dimensions",
        lambda s, d: exp.Count(this=exp.Distinct(expressions=[s(str(c)) for c in ids])),
    )
    ways = [way]
    measures = index.by_tuple.get(frozenset(ids), []) if len(set(ids)) == len(ids) else []
    for m in sorted(measures, key=_is_hll):  # a bitmap first: exact
        count = _hll_count(m.id) if _is_hll(m) else _bitmap_count(m.id, group_dims)
        ways.append(AggWay(frozenset(), frozenset({m.id}), f"measure {m.name}", count))
    return AggCall(node, ways)


def _distinct_call(node: exp.AggFunc, column: exp.Expr, arg_type: str) -> exp.Expr:
    """`node`'s function over the DISTINCT values of a layout column, typed as Spark types the call."""
    call = node.__class__(this=exp.Distinct(expressions=[column]))
    if isinstance(node, exp.Sum):
        out = sum_type(arg_type)
        return _cast(call, out) if out is not None else call
    averaged = avg_type(arg_type) if isinstance(node, exp.Avg) else None
    return _cast(call, averaged) if averaged is not None else call


def filtered(replacement: exp.Expr, condition: exp.Expr, counting: bool) -> exp.Expr:
    """A way's replacement under `FILTER (WHERE condition)`, the condition over layout dimensions: every
    aggregate over the cells reads only the cells where it holds (a NULL argument is skipped, as a
    filtered-out row is), and a COUNT of none is 0."""
    for agg in list(replacement.find_all(exp.AggFunc)):
        arg = agg.this
        targets = arg.expressions if isinstance(arg, exp.Distinct) else [arg]
        for target in targets:
            if isinstance(target, exp.Expr) and not isinstance(target, exp.Star):
                target.replace(exp.Case(ifs=[exp.If(this=condition.copy(), true=target.copy())]))
    return _zero_if_null(replacement) if counting else replacement


def _sum_over_count(sum_id: int, count_id: int, datatype: str) -> Callable[[Scan, frozenset[int]], exp.Expr]:
    return lambda s, d: _average(exp.func("sum", s(str(sum_id))), exp.func("sum", s(str(count_id))), datatype)


def _bitmap_count(measure_id: int, group_dims: frozenset[int] | None) -> Callable[[Scan, frozenset[int]], exp.Expr]:
    def count(s: Scan, dims: frozenset[int]) -> exp.Expr:
        if group_dims is not None and dims <= group_dims:
            # one cell per group: its stored cardinality needs no bitmap
            return _cast(exp.func("max", s(f"{measure_id}_count")), "bigint")
        return _fn("precube_bitmap_count", exp.ArrayAgg(this=s(str(measure_id))))

    return count


def _hll_count(measure_id: int) -> Callable[[Scan, frozenset[int]], exp.Expr]:
    return lambda s, d: _fn("precube_hll_count", exp.ArrayAgg(this=s(str(measure_id))))


def _average(total: exp.Expr, rows: exp.Expr, datatype: str) -> exp.Expr:
    """SUM / COUNT as Spark computes AVG over values of `datatype`: a DOUBLE division, or for decimals
    `spark_decimals.spark_average`."""
    result = avg_type(datatype)
    if result is None or not result.startswith("decimal"):
        return exp.Div(this=_cast(total, "double"), expression=rows)
    return spark_average(total, rows, exp.DataType.build(datatypes.to_spark(datatype), dialect="spark"))


def _is_integer(node: exp.Expr | None) -> bool:
    """An integer literal, possibly negative."""
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and node.name.isdigit()


def _is_hll(m: Measure) -> bool:
    return m.function.returntype.lower().startswith("hllc")
