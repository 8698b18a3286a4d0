"""Index recommendation (Kylin 5's recommendations from query patterns): for the queries a model should
answer, the aggregate layouts that answer each of them by themselves with nothing to spare.

Each aggregating SELECT block the model can match needs the dimensions it reads and, for each aggregate
call, the dimensions and measures of its best way (`aggregates`). Every distinct need becomes one
aggregation group whose dimensions are all mandatory, so it yields exactly that layout; its dimensions
come filter columns first (equality before range), so that the layout's sorted rows let a filter skip
row groups. Statements are reshaped first as the query path reshapes them (`reshape`).

A SUM, AVG, COUNT, MIN or MAX of a column (or computed column) that no measure of the model computes gets the
measures it needs proposed (AVG: SUM and COUNT of the column), named after them — also for a dimension, whose
values would otherwise have to be a dimension of the layout (a SUM weighted by COUNT(*)), multiplying its
rows; the groups use them, so the model must hold them first (`--apply` adds them). A block no aggregate layout of the
model can answer even so (a detail query, a column that is no dimension, an aggregate no measure computes) is
reported with the reason instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlglot import exp

from precube.metadata import Function, Measure, Parameter, ParameterType
from precube.metadata.model import MEASURE_ID_BASE
from precube.metadata.model import FunctionExpression as F
from precube.modeling.model_spec import AggregationGroupSpec, MeasureSpec, SelectRuleSpec
from precube.query.contexts import QueryContext, contexts
from precube.query.errors import QueryError
from precube.query.frontend import normalise
from precube.query.matching import argument_columns, map_aliases, requirements
from precube.query.project_metadata import ModelMetadata, ProjectMetadata
from precube.query.reshape import reshape


@dataclass
class Recommendation:
    groups: list[AggregationGroupSpec] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)  # statements every block of which a group answers
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (statement, why not)
    measures: list[MeasureSpec] = field(default_factory=list)  # to add to the model before the groups


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
    result = Recommendation(measures=_missing_measures(m, metadata, statements))
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
    return contexts(reshape(normalise(sql, metadata.catalog)))


def _missing_measures(m: ModelMetadata, metadata: ProjectMetadata, statements: list[str]) -> list[MeasureSpec]:
    """The measures the statements' plain aggregate calls need that the model lacks (`_NEEDED`)."""
    refs = {c.id: c.column for c in m.model.live_columns()}
    have = {(x.function.expression, p.value) for x in m.model.measures() for p in x.function.parameters[:1]}
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
                if type(call) not in _NEEDED or arg is None or isinstance(arg, (exp.Distinct, exp.Star)):
                    continue
                col = column_of(arg)
                if col is None:
                    continue
                for fn in _NEEDED[type(call)]:
                    key = (fn, refs[col])
                    if key in have or key in found:
                        continue
                    name = _fresh(f"{fn.value}_{refs[col].split('.', 1)[1]}", names)
                    found[key] = MeasureSpec(name=name, expression=fn.value, column=refs[col])
    order = list(F)
    return [found[k] for k in sorted(found, key=lambda k: (k[1], order.index(k[0])))]


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
