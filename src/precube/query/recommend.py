"""Index recommendation (Kylin 5's recommendations from query patterns): for the queries a model should
answer, the aggregate layouts that answer each of them by themselves with nothing to spare.

Each aggregating SELECT block the model can match needs the dimensions it reads and, for each aggregate
call, the dimensions and measures of its best way (`aggregates`). Every distinct need becomes one
aggregation group whose dimensions are all mandatory, so it yields exactly that layout; its dimensions
come filter columns first (equality before range), so that the layout's sorted rows let a filter skip
row groups. Statements are reshaped first as the query path reshapes them (`reshape`).

A SUM, AVG, COUNT, MIN, MAX or COUNT(DISTINCT) of a column (or computed column) that no measure of the model
computes gets the measures it needs proposed (AVG: SUM and COUNT of the column; COUNT(DISTINCT): an exact bitmap
COUNT_DISTINCT), named after them — also for a dimension, whose
values would otherwise have to be a dimension of the layout (a SUM weighted by COUNT(*)), multiplying its
rows; the groups use them, so the model must hold them first (`--apply` adds them).

A row-level predicate of a block's filter that would make the columns it reads dimensions only for it gets a
boolean computed column proposed (Kylin's computed columns; `matching` reads the predicate from it), a dimension
of two values (and NULL) in place of the columns: a comparison between two model columns when one of them is read
nowhere else in the block (TPC-H Q12's `l_commitdate < l_receiptdate`: the layout holds neither date), and a LIKE
or a function of one model column and literals when that column is read nowhere else (Q9's `p_name like
'%green%'`). It is named after its columns (`L_COMMITDATE_LT_L_RECEIPTDATE`), typed as the model types computed
columns, and `--apply` adds it as a dimension. A block no aggregate layout of the
model can answer even so (a detail query, a column that is no dimension, an aggregate no measure computes) is
reported with the reason instead.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from precube.metadata import Function, Measure, Parameter, ParameterType
from precube.metadata.model import MEASURE_ID_BASE, ColumnStatus, ComputedColumn, NamedColumn
from precube.metadata.model import FunctionExpression as F
from precube.modeling.expressions import typed
from precube.modeling.model_spec import AggregationGroupSpec, ComputedColumnSpec, MeasureSpec, SelectRuleSpec
from precube.query.contexts import QueryContext, contexts
from precube.query.errors import QueryError
from precube.query.frontend import DIALECT, canonical, normalise
from precube.query.matching import argument_columns, columns_outside, map_aliases, requirements
from precube.query.project_metadata import ModelMetadata, ProjectMetadata
from precube.query.reshape import lookup_keys, reshape


@dataclass
class Recommendation:
    groups: list[AggregationGroupSpec] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)  # statements every block of which a group answers
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (statement, why not)
    measures: list[MeasureSpec] = field(default_factory=list)  # to add to the model before the groups
    computed_columns: list[ComputedColumnSpec] = field(default_factory=list)  # to add, as dimensions, too


Needs = dict[tuple[frozenset[int], frozenset[int]], tuple[int, ...]]  # (dims, measures) → dimension order
_NEEDED = {
    exp.Sum: (F.SUM,),
    exp.Avg: (F.SUM, F.COUNT),
    exp.Count: (F.COUNT,),
    exp.Min: (F.MIN,),
    exp.Max: (F.MAX,),
}


def recommend(metadata: ProjectMetadata, model_alias: str, statements: Iterable[str]) -> Recommendation:
    """The aggregation groups (and the measures they need) that let the model answer the statements'
    aggregating blocks."""
    m = next((m for m in metadata.models if m.model.alias.lower() == model_alias.lower()), None)
    if m is None:
        raise QueryError(f"project {metadata.project} has no model {model_alias}")
    statements = list(statements)
    computed = _predicate_columns(m, metadata, statements)
    if computed:
        m = _with_computed(m, computed)
    result = Recommendation(measures=_missing_measures(m, metadata, statements), computed_columns=computed)
    if result.measures:
        m = _with_measures(m, result.measures)
    needs: Needs = {}  # (first seen)
    for sql in statements:
        why = _statement_needs(sql, m, metadata, needs)
        if why is None:
            result.answered.append(sql)
        else:
            result.skipped.append((sql, why))
    result.groups = [_group(m, order, measures) for (_, measures), order in _with_grand_totals(m, needs).items()]
    return result


def _with_grand_totals(m: ModelMetadata, needs: Needs) -> Needs:
    """The needs with those of no dimension (a grand total; an aggregation group needs one) answered by another
    layout: its measures go to the need with fewest dimensions (rolled up whole), or with none, to a layout of
    the model's first dimension."""
    totals = [measures for dims, measures in needs if not dims]
    kept = {key: order for key, order in needs.items() if key[0]}
    if not totals:
        return kept
    wanted = frozenset().union(*totals)
    if kept:
        (dims, measures), order = min(kept.items(), key=lambda item: len(item[0][0]))
        del kept[(dims, measures)]
        kept[(dims, measures | wanted)] = order
        return kept
    first = m.model.dimensions()[0].id
    return {(frozenset({first}), wanted): (first,)}


def _blocks(sql: str, metadata: ProjectMetadata) -> list[QueryContext]:
    return contexts(reshape(normalise(sql, metadata.catalog), lookup_keys(m.model for m in metadata.models)))


def _missing_measures(m: ModelMetadata, metadata: ProjectMetadata, statements: list[str]) -> list[MeasureSpec]:
    """The measures the statements' plain aggregate calls need that the model lacks (`_NEEDED`)."""
    refs = {c.id: c.column for c in m.model.live_columns()}
    # (an HLL sketch is no exact COUNT_DISTINCT)
    have = {
        (x.function.expression, p.value)
        for x in m.model.measures()
        for p in x.function.parameters[:1]
        if not x.function.returntype.lower().startswith("hllc")
    }
    names = {x.name.upper() for x in m.model.measures()} | {c.name.upper() for c in m.model.live_columns()}
    found: dict[tuple[F, str], MeasureSpec] = {}
    for sql in statements:
        try:
            blocks = _blocks(sql, metadata)
        except QueryError:
            continue  # reported when the statement's needs are
        for ctx in blocks:
            column_of = argument_columns(ctx, m)
            if column_of is None:
                continue
            for call in ctx.aggregates:
                arg = call.this
                distinct = isinstance(call, exp.Count) and isinstance(arg, exp.Distinct) and len(arg.expressions) == 1
                if distinct:  # an exact COUNT(DISTINCT x): a bitmap of x's values
                    arg = arg.expressions[0]
                elif type(call) not in _NEEDED or arg is None or isinstance(arg, (exp.Distinct, exp.Star)):
                    continue
                col = column_of(arg)
                if col is None:
                    continue
                for fn in (F.COUNT_DISTINCT,) if distinct else _NEEDED[type(call)]:
                    key = (fn, refs[col])
                    if key in have or key in found:
                        continue
                    name = _fresh(f"{fn.value}_{refs[col].split('.', 1)[1]}", names)
                    kind = "bitmap" if fn is F.COUNT_DISTINCT else ""
                    found[key] = MeasureSpec(name=name, expression=fn.value, column=refs[col], return_type=kind)
    order = list(F)
    return [found[k] for k in sorted(found, key=lambda k: (k[1], order.index(k[0])))]


_COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "EQ",
    exp.NEQ: "NE",
    exp.LT: "LT",
    exp.LTE: "LE",
    exp.GT: "GT",
    exp.GTE: "GE",
}


def _predicate_columns(m: ModelMetadata, metadata: ProjectMetadata, statements: list[str]) -> list[ComputedColumnSpec]:
    """The boolean computed columns the statements' row-level predicates call for (module docstring)."""
    refs = {c.id: c.column for c in m.model.live_columns()}
    taken = {x.name.upper() for x in m.model.measures()} | {c.name.upper() for c in m.model.live_columns()}
    taken |= {ref.split(".", 1)[1].upper() for ref in refs.values()}
    found: dict[str, ComputedColumnSpec] = {}  # by expression
    for sql in statements:
        try:
            blocks = _blocks(sql, metadata)
        except QueryError:
            continue  # reported when the statement's needs are
        for ctx in blocks:
            aliases = map_aliases(ctx, m.model)
            column_of = argument_columns(ctx, m)
            if isinstance(aliases, str) or column_of is None or ctx.filter is None or not ctx.aggregating:
                continue
            candidates = [p for p in _predicates(ctx.filter) if column_of(p) is None]  # (none a computed column's)
            outside = columns_outside(ctx, {id(p) for p in candidates})
            elsewhere = {
                (c.table, c.name.lower())
                for c in [*outside, *(c for a in ctx.aggregates for c in a.find_all(exp.Column))]
            }
            for pred in candidates:
                cols = list(pred.find_all(exp.Column))
                ids = [column_of(c) for c in cols]
                free = [(c.table, c.name.lower()) not in elsewhere for c in cols]
                comparison = type(pred) in _COMPARISONS
                if any(i is None for i in ids) or not (any(free) if comparison else all(free)):
                    continue
                expression = canonical(pred, aliases)
                if expression in found:
                    continue
                parsed = sqlglot.parse_one(expression, read=DIALECT)  # a comparison as `canonical` turns it
                name = _fresh(_predicate_name(parsed), taken)
                found[expression] = ComputedColumnSpec(column_name=name, expression=expression)
    return list(found.values())


def _predicates(condition: exp.Expr) -> list[exp.Expr]:
    """The filter's row-level predicates under AND, OR and NOT that a boolean computed column could hold: a
    comparison of two columns, a LIKE of a column with a literal pattern, a function of one column and literals."""
    found = []
    stack = [condition]
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.And, exp.Or)):
            stack.extend([node.this, node.expression])
        elif isinstance(node, (exp.Not, exp.Paren)):
            stack.append(node.this)
        elif type(node) in _COMPARISONS:
            if isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Column):
                found.append(node)
        elif isinstance(node, (exp.Like, exp.ILike)):
            if isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Literal):
                found.append(node)
        elif isinstance(node, exp.Func) and not isinstance(node, exp.AggFunc):
            args = list(node.iter_expressions())
            columns = [a for a in args if isinstance(a, exp.Column)]
            if len(columns) == 1 and all(isinstance(a, (exp.Column, exp.Literal)) for a in args):
                found.append(node)
    return found


def _predicate_name(pred: exp.Expr) -> str:
    """`L_COMMITDATE_LT_L_RECEIPTDATE`, `P_NAME_LIKE_GREEN`, `STARTSWITH_P_NAME`."""
    columns = [c.name.upper() for c in (pred.this, pred.expression) if isinstance(c, exp.Column)]
    columns = columns or [c.name.upper() for c in pred.find_all(exp.Column)]
    if type(pred) in _COMPARISONS:
        return f"{columns[0]}_{_COMPARISONS[type(pred)]}_{columns[1]}"
    if isinstance(pred, (exp.Like, exp.ILike)):
        words = re.sub(r"[^A-Z0-9]+", "_", str(pred.expression.name).upper()).strip("_")
        return f"{columns[0]}_{pred.key.upper()}_{words or 'PATTERN'}"
    return f"{(pred.sql_name() if isinstance(pred, exp.Func) else pred.key).upper()}_{columns[0]}"


def _with_computed(m: ModelMetadata, added: list[ComputedColumnSpec]) -> ModelMetadata:
    """The model as if it held the `added` computed columns as dimensions (ids after its own, typed as saving
    them would type them: `expressions.typed`)."""
    model = m.model.model_copy(deep=True)
    schema: dict[str, dict[str, str]] = {}
    for c in model.live_columns():
        alias, name = c.column.split(".", 1)
        schema.setdefault(alias, {})[name] = m.column_types[c.id]
    next_id = max((c.id for c in model.all_named_columns), default=-1) + 1
    root = model.root_alias
    for i, spec in enumerate(added):
        sql, datatype, _ = typed(spec.expression, schema, f"computed column {spec.column_name}")
        model.computed_columns.append(
            ComputedColumn(
                table_identity=model.fact_table,
                table_alias=root,
                column_name=spec.column_name,
                expression=spec.expression,
                inner_expression=sql,
                datatype=datatype,
            )
        )
        column = NamedColumn(
            id=next_id + i,
            name=spec.column_name,
            column=f"{root}.{spec.column_name}",
            status=ColumnStatus.DIMENSION,
            datatype=datatype,
        )
        model.all_named_columns.append(column)
    return dataclasses.replace(m, model=model)


def _fresh(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate.upper() in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate.upper())
    return candidate


def _with_measures(m: ModelMetadata, added: list[MeasureSpec]) -> ModelMetadata:
    """The model as if it held the `added` measures too (ids after its own, as saving them would give)."""
    model = m.model.model_copy(deep=True)
    next_id = max((x.id for x in model.all_measures), default=MEASURE_ID_BASE - 1) + 1
    for i, spec in enumerate(added):
        params = [Parameter(type=ParameterType.COLUMN, value=spec.column or "")]
        function = Function(expression=F(spec.expression), parameters=params)
        model.all_measures.append(Measure(id=next_id + i, name=spec.name, function=function))
    return dataclasses.replace(m, model=model)


def _statement_needs(
    sql: str,
    m: ModelMetadata,
    metadata: ProjectMetadata,
    needs: Needs,
) -> str | None:
    """Add the statement's needs; why one of its blocks cannot be answered, if so."""
    try:
        blocks = _blocks(sql, metadata)
    except QueryError as err:
        return str(err)
    found = []
    for ctx in blocks:
        if isinstance(map_aliases(ctx, m.model), str):
            continue  # a block over other tables: not this model's
        need = requirements(ctx, m)
        if isinstance(need, str):
            return need
        found.append(need)
    if not found:
        return f"no block of it reads model {m.model.alias}'s tables"
    for dims, measures in found:
        needs.setdefault((frozenset(dims), measures), dims)
    return None


def _group(m: ModelMetadata, dims: tuple[int, ...], measures: frozenset[int]) -> AggregationGroupSpec:
    named = {c.id: c.name for c in m.model.dimensions()}
    names = [named[c] for c in dims]
    # every layout holds at least one measure; an empty list would mean all of them
    chosen = [x.name for x in m.model.measures() if x.id in measures] or [m.model.measures()[0].name]
    return AggregationGroupSpec(includes=names, measures=chosen, select_rule=SelectRuleSpec(mandatory_dims=names))
