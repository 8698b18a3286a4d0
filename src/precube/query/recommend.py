"""Index recommendation (Kylin 5's recommendations from query patterns): for the queries a model should
answer, the aggregate layouts that answer each of them by themselves with nothing to spare.

Each aggregating SELECT block the model can match needs the dimensions it reads and, for each aggregate
call, the dimensions and measures of its best way (`aggregates`). Every distinct need becomes one
aggregation group whose dimensions are all mandatory, so it yields exactly that layout; its dimensions
come filter columns first (equality before range), so that the layout's sorted rows let a filter skip
row groups. A block no
aggregate layout of the model can answer (a detail query, a column that is no dimension, an aggregate no
measure computes) is reported with the reason instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from precube.modeling.model_spec import AggregationGroupSpec, SelectRuleSpec
from precube.query.contexts import contexts
from precube.query.errors import QueryError
from precube.query.frontend import normalise
from precube.query.matching import map_aliases, requirements
from precube.query.snapshot import ModelSnapshot, ProjectSnapshot


@dataclass
class Recommendation:
    groups: list[AggregationGroupSpec] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)  # statements every block of which a group answers
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (statement, why not)


def recommend(snapshot: ProjectSnapshot, model_alias: str, statements: Iterable[str]) -> Recommendation:
    """The aggregation groups that let the model answer the statements' aggregating blocks."""
    m = next((m for m in snapshot.models if m.model.alias.lower() == model_alias.lower()), None)
    if m is None:
        raise QueryError(f"project {snapshot.project} has no model {model_alias}")
    result = Recommendation()
    needs: dict[tuple[frozenset[int], frozenset[int]], tuple[int, ...]] = {}  # need → dimension order (first seen)
    for sql in statements:
        why = _statement_needs(sql, m, snapshot, needs)
        if why is None:
            result.answered.append(sql)
        else:
            result.skipped.append((sql, why))
    result.groups = [_group(m, order, measures) for (_, measures), order in needs.items()]
    return result


def _statement_needs(
    sql: str,
    m: ModelSnapshot,
    snapshot: ProjectSnapshot,
    needs: dict[tuple[frozenset[int], frozenset[int]], tuple[int, ...]],
) -> str | None:
    """Add the statement's needs; why one of its blocks cannot be answered, if so."""
    try:
        blocks = contexts(normalise(sql, snapshot.catalog))
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


def _group(m: ModelSnapshot, dims: tuple[int, ...], measures: frozenset[int]) -> AggregationGroupSpec:
    named = {c.id: c.name for c in m.model.dimensions()}
    names = [named[c] for c in dims]
    # every layout holds at least one measure; an empty list would mean all of them
    chosen = [x.name for x in m.model.measures() if x.id in measures] or [m.model.measures()[0].name]
    return AggregationGroupSpec(includes=names, measures=chosen, select_rule=SelectRuleSpec(mandatory_dims=names))
