"""Rewrite a matched block onto its layout (DESIGN §6 step 5): the block's tables and joins become one scan
of the layout's files over the segments left after pruning; aggregate calls become the chosen way's
merge expression over the cells; an expression a computed column holds (`Match.folded`) becomes that column;
every other column becomes the layout column that holds it, except
the columns of a lookup joined back (a derived dimension), which keep reading the lookup. What
surrounds the block (outer queries, ORDER BY, LIMIT, HAVING, window functions) is left as written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlglot import exp

from precube.query.aggregates import filtered
from precube.query.contexts import LEFT, QueryContext, own_nodes
from precube.query.frontend import FOLDED, PARAM, Catalog, spark_sum_types
from precube.query.matching import DerivedJoin, Match
from precube.query.project_metadata import ModelMetadata
from precube.query.pruning import pinned_columns
from precube.query.topn import fix_limit, unnested
from precube.storage import columns

SCAN_ALIAS = "layout"


@dataclass(frozen=True)
class LayoutScan:
    """A relation the engine provides: one layout's files in the given segments (none: an empty relation
    with the layout's columns, read from `schema_segment`)."""

    name: str
    model_uuid: str
    layout_id: int
    segment_ids: tuple[str, ...]
    schema_segment: str
    rows: int
    sort_by: tuple[str, ...] = ()  # the columns the layout's rows are sorted by (its dimensions in order)
    pinned: bool = False  # the filter pins the first of them to a few values: it reads a few row groups
    types: tuple[tuple[str, str], ...] = ()  # file column → Spark type (`ModelMetadata.layout_types`)


def scan_of(match: Match, pinned: frozenset[int]) -> LayoutScan:
    """The relation a match reads; `pinned`: the model columns the block's filter pins (`pinned_columns`)."""
    model_uuid = match.model.model.uuid
    ids = tuple(s.segment.id for s in match.scanned)
    digest = hashlib.sha1("/".join((model_uuid, str(match.layout.id), *ids)).encode()).hexdigest()[:12]
    schema_segment = next(s.segment.id for s in match.model.segments if match.layout.id in s.layouts)
    dims = match.layout.dimensions
    return LayoutScan(
        f"layout_{match.layout.id}_{digest}",
        model_uuid,
        match.layout.id,
        ids,
        schema_segment,
        match.rows,
        tuple(columns.column(d) for d in dims),
        bool(dims) and dims[0] in pinned,
        match.model.layout_types(match.layout),
    )


def whole_scans(model: ModelMetadata) -> list[LayoutScan]:
    """The relation of each layout over all the model's queryable segments (the one a query that prunes
    no segment reads), smallest first: what a server loads at start so that first queries are warm."""
    found = []
    for layout in model.layouts.values():
        if not model.segments or any(layout.id not in s.layouts for s in model.segments):
            continue  # a layout missing from a segment answers no query over all of them
        rows = sum(s.layouts[layout.id].rows for s in model.segments)
        found.append(scan_of(Match(model, layout, {}, [], list(model.segments), [], rows), frozenset()))
    return sorted(found, key=lambda scan: scan.rows)


def _scan_column(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True), table=SCAN_ALIAS)


def rewrite(ctx: QueryContext, match: Match, catalog: Catalog | None = None) -> LayoutScan:
    """Rewrite the context's block in place; returns the relation it now reads. With the `catalog`, every
    SUM the engine computes over a layout's values (a table index's raw rows, a window over merged cells)
    is cast to the type Spark gives it on the source rows (`spark_sum_types`)."""
    select = ctx.select
    if catalog is not None and match.table_index:
        spark_sum_types(select, catalog)  # before its columns become the layout's, whose types it lacks
    pinned = [match.columns.get((c.table, c.name.lower())) for c in pinned_columns(ctx.filter)]
    pinned += _pinned_folded(ctx.filter, match)
    scan = scan_of(match, frozenset(c for c in pinned if c is not None))
    where = select.args.get("where")
    if match.filters or (where is not None and where.this is not ctx.filter):
        # comma joins: their conditions leave the filter, but those the model joins otherwise are filters
        condition = [*([ctx.filter] if ctx.filter is not None else []), *(f.copy() for f in match.filters)]
        select.set("where", exp.Where(this=exp.and_(*condition, copy=False)) if condition else None)
    for node, cid in match.folded:  # before the aggregates: a FILTER's condition is copied into their merge
        for lit in node.find_all(exp.Literal):
            if lit._meta and PARAM in lit._meta:
                lit._meta[FOLDED] = 1  # the plan holds this value (`plan_cache.fixed_params`)
        node.replace(_scan_column(str(cid)))
    if not match.table_index:
        dims = frozenset(match.layout.col_order)
        for call, way in zip(ctx.aggregates, match.ways, strict=True):
            replacement = way.build(_scan_column, dims)
            if isinstance(call.parent, exp.Filter):  # its condition's columns, layout dimensions, are renamed below
                counting = isinstance(call, (exp.Count, exp.ApproxDistinct))
                call.parent.replace(filtered(replacement, call.parent.expression.this, counting))
            else:
                call.replace(replacement)
    derived = {d.alias for d in match.derived}
    for node in list(own_nodes(select)):
        if isinstance(node, exp.Column) and node.table in ctx.tables and node.table not in derived:
            node.replace(_scan_column(str(match.columns[(node.table, node.name.lower())])))
    joined = [select.args["from_"].this, *(j.this for j in select.args.get("joins") or [])]
    tables = {t.alias_or_name: t for t in joined if t.alias_or_name in derived}
    relation: exp.Expr = exp.Table(
        this=exp.to_identifier(scan.name), alias=exp.TableAlias(this=exp.to_identifier(SCAN_ALIAS))
    )
    unnest = next((w.unnest for w in match.ways if w.unnest is not None), None)
    if unnest is not None:  # a TOP_N measure's cells, one row per entry (`topn`)
        relation = unnested(relation, SCAN_ALIAS, match.layout.dimensions, unnest)
        fix_limit(select)
    select.set("from_", exp.From(this=relation))
    select.set("joins", [_join_back(d, tables[d.alias].copy()) for d in match.derived] or None)
    if catalog is not None and not match.table_index and any(w.find(exp.Sum) for w in select.find_all(exp.Window)):
        spark_sum_types(select, catalog)  # `SUM(SUM(x)) OVER`: the merge inside is cast, so its type is known
    return scan


def _pinned_folded(condition: exp.Expr | None, match: Match) -> list[int]:
    """The computed columns a top-level conjunct of the filter pins to one value (`cc`, `NOT cc`)."""
    if condition is None or not match.folded:
        return []
    parts = [p.unnest() for p in (condition.flatten() if isinstance(condition, exp.And) else [condition])]
    held = {id(p.this.unnest() if isinstance(p, exp.Not) else p) for p in parts}
    return [cid for node, cid in match.folded if id(node) in held]


def _join_back(lookup: DerivedJoin, table: exp.Table) -> exp.Join:
    """The lookup's source table joined to the layout's rows on the join keys the layout holds."""
    on = exp.and_(
        *(exp.EQ(this=_scan_column(str(fk)), expression=exp.column(pk, table=lookup.alias)) for fk, pk in lookup.keys)
    )
    return exp.Join(this=table, on=on, side="LEFT" if lookup.kind == LEFT else None)
