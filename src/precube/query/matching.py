"""Model and layout matching (DESIGN §6 steps 3-4; reference §5.1-5.3).

A model can answer a context when its join graph holds the context's joins with the same keys (the fact
table at the root; LEFT lookups may be left out). A join of another type than the model's, or a left-out
INNER join of the model (it filters the fact rows), needs a proof that it was exact in every scanned
segment (`join_proof`: no orphan fact rows, no duplicate keys), else the model is rejected. Its
queryable segments are pruned by the filter; the layouts built in every remaining segment are the
candidates. An aggregate layout answers when it holds every column the block reads outside aggregate
calls and a way for every call (`aggregates`); a table index answers when it holds every column the
block reads, for detail queries and, failing every aggregate layout, for aggregating ones. The cheapest
wins: aggregate before table index, fewest rows over the scanned segments, filter columns early in the
column order, fewest dimensions, fewest measures.

Derived dimensions (Kylin's `IndexMatcher.goThruDerivedDims`): a lookup's columns that a layout lacks are
still answered when the layout holds every foreign key of the lookup's join: the lookup's source table is
joined back to the layout's rows at query time, with the query's join type (the model's, or proven
equal). A layout row stands for fact rows with one foreign key value, so the join multiplies it exactly
as it multiplies those fact rows, and each measure's merge stays correct. Layouts that need no such join
are preferred.

Computed columns (Kylin's `ComputedColumnRewriter`): an expression of the block, outside aggregate calls (in
WHERE, HAVING, GROUP BY, the SELECT list, a CASE, an aggregate's FILTER), whose canonical text is a computed
column's expression is read from that column, the largest such expression first (`folded`): the layout needs the
computed column as a dimension, not the columns the expression reads. The column holds the expression's value on
every row of the flat table, NULL included, so `expr`, `NOT expr` and `CASE WHEN expr …` give what they give over
the source rows; an aggregate argument is matched by `aggregates` (a measure over the computed column).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from precube.metadata import Layout, Model, Segment
from precube.metadata.model import JoinType
from precube.query.aggregates import AggCall, AggWay, agg_call
from precube.query.contexts import INNER, LEFT, QueryContext, is_group_aggregate
from precube.query.frontend import canonical
from precube.query.join_proof import COUNTS_KEYS, DROPS, KEEPS, LEAVES_OUT, JoinProof, join_proof
from precube.query.project_metadata import ModelMetadata, SegmentLayouts
from precube.query.pruning import ValueRange, may_match
from precube.query.reshape import UNIQUE_KEY
from precube.query.topn import TopNAnswer, topn_answers

ColumnKey = tuple[str, str]  # (query alias, column name), lower case
Folded = tuple[exp.Expr, int]  # an expression of a block (a node of its tree) → the computed column holding it


@dataclass(frozen=True)
class DerivedJoin:
    """A lookup joined back at query time: the layout lacks some of its columns but holds its join keys."""

    alias: str  # the lookup's query alias
    table: str  # DB.TABLE (upper case)
    kind: str  # INNER or LEFT, the model's join type
    keys: tuple[tuple[int, str], ...]  # (column id of a foreign key in the layout, primary key column, lower case)


@dataclass(frozen=True)
class Rejection:
    model: str
    reason: str


@dataclass
class Match:
    model: ModelMetadata
    layout: Layout
    columns: dict[ColumnKey, int]  # every source column of the block → model column id
    ways: list[AggWay]  # one per aggregate call, for an aggregate layout
    scanned: list[SegmentLayouts]
    pruned: list[Segment]
    rows: int
    derived: tuple[DerivedJoin, ...] = ()
    rejected: list[Rejection] = field(default_factory=list)
    proof: JoinProof = field(default_factory=JoinProof)  # joins the query treats otherwise than the model
    filters: tuple[exp.Expr, ...] = ()  # the block's join conditions that are filters on the model (`JoinMapping`)
    folded: tuple[Folded, ...] = ()  # the block's expressions read from computed columns

    @property
    def table_index(self) -> bool:
        return self.layout.is_table_index


def _join_kind(join_type: JoinType) -> str:
    return LEFT if join_type is JoinType.LEFT else INNER


def argument_columns(ctx: QueryContext, m: ModelMetadata) -> Callable[[exp.Expr], int | None] | None:
    """How the context's columns and computed-column expressions map to the model's column ids, when its tables
    and joins are the model's."""
    joins = join_mapping(ctx, m.model)
    return None if isinstance(joins, str) else _ModelColumns(m, joins.aliases).argument


def map_aliases(ctx: QueryContext, model: Model) -> dict[str, str] | str:
    """Query alias → model table alias, or why the context's tables and joins are not the model's."""
    found = join_mapping(ctx, model)
    return found if isinstance(found, str) else found.aliases


@dataclass(frozen=True)
class JoinMapping:
    """How a context's tables and joins map onto a model's: query alias → model alias, the query's join
    type of each lookup it joins, and the model joins it treats otherwise, proven by the scanned segments."""

    aliases: dict[str, str]
    kinds: dict[str, str]  # query alias → INNER or LEFT
    proof: JoinProof
    # comma-join equalities between tables the model joins otherwise (TPC-H Q5's c_nationkey = s_nationkey):
    # conditions on the joined rows, so filters over the model's columns
    filters: tuple[exp.Expr, ...] = ()


def join_mapping(ctx: QueryContext, model: Model) -> JoinMapping | str:
    """The context's tables and joins on the model's, or why they are not. A join whose type differs from
    the model's, or an INNER join of the model the query leaves out, fits subject to a proof
    (`join_proof`) that the scanned segments check."""
    fact = model.fact_table.upper()
    roots = [
        a for a, t in ctx.tables.items() if t == fact and not any(e.right == a and e.kind == LEFT for e in ctx.joins)
    ]
    if not roots:
        return (
            f"the query does not read its fact table {fact}"
            if fact not in ctx.tables.values()
            else "the fact table is on the optional side of a join"
        )
    reason = "the query's joins are not the model's"
    for root in roots:
        mapped = {root: model.root_alias}
        kinds: dict[str, str] = {}
        differing: dict[str, str] = {}
        pending = list(ctx.joins)
        progress = True
        while pending and progress:
            progress = False
            for edge in list(pending):
                for near, far in ((edge.left, edge.right), (edge.right, edge.left)):
                    if near not in mapped or far in mapped:
                        continue
                    if edge.kind == LEFT and far != edge.right:
                        continue  # a LEFT join's optional side is the lookup
                    pairs = {(a, b) if near == edge.left else (b, a) for a, b in edge.pairs}
                    found = _model_join(model, mapped[near], ctx.tables[far], pairs)
                    if found is None:
                        continue
                    alias, kind = found
                    if alias in mapped.values():
                        continue
                    if kind != edge.kind:
                        differing[alias] = DROPS if edge.kind == INNER else KEEPS
                    mapped[far] = alias
                    kinds[far] = edge.kind
                    pending.remove(edge)
                    progress = True
                    break
        if len(mapped) != len(ctx.tables) or any(e.kind != INNER for e in pending):
            continue
        used = set(mapped.values())
        for jt in model.join_tables:
            if jt.join.type is not JoinType.LEFT and jt.alias.upper() not in used:
                differing[jt.alias.upper()] = LEAVES_OUT
        counted = ctx.select._meta.get(UNIQUE_KEY) if ctx.select._meta else None
        if counted in mapped:  # one row per key of it: its key must be unique, and every fact row find it
            differing.setdefault(mapped[counted], COUNTS_KEYS)
        filters = tuple(
            exp.EQ(this=exp.column(a, table=e.left), expression=exp.column(b, table=e.right))
            for e in pending
            for a, b in e.pairs
        )
        return JoinMapping(mapped, kinds, join_proof(model, differing), filters)
    return reason


def _lookup_joins(ctx: QueryContext, m: ModelMetadata, joins: JoinMapping) -> dict[str, DerivedJoin]:
    """Query alias of each lookup the context joins → how to join it back onto a layout: with the query's
    join type (where it differs from the model's, the proof makes them give the same rows)."""
    aliases = joins.aliases
    by_alias = {jt.alias.upper(): jt for jt in m.model.join_tables}
    found = {}
    for query_alias, model_alias in aliases.items():
        jt = by_alias.get(model_alias)
        if jt is None:
            continue
        fks = [m.columns_by_ref.get(ref.upper()) for ref in jt.join.foreign_key]
        if any(fk is None for fk in fks):
            continue
        pks = [ref.split(".", 1)[1].lower() for ref in jt.join.primary_key]
        keys = tuple((fk.id, pk) for fk, pk in zip(fks, pks, strict=True) if fk is not None)
        kind = joins.kinds.get(query_alias, _join_kind(jt.join.type))
        found[query_alias] = DerivedJoin(query_alias, ctx.tables[query_alias], kind, keys)
    return found


def _model_join(model: Model, parent: str, table: str, pairs: set[tuple[str, str]]) -> tuple[str, str] | None:
    """The model lookup joined to `parent` from `table` on exactly these (parent column, lookup column) pairs."""
    for jt in model.join_tables:
        if jt.table.upper() != table:
            continue
        fks = [r.split(".", 1) for r in jt.join.foreign_key]
        pks = [r.split(".", 1) for r in jt.join.primary_key]
        if any(a.upper() != parent for a, _ in fks):
            continue
        want = {(f[1].lower(), p[1].lower()) for f, p in zip(fks, pks, strict=True)}
        if want == pairs:
            return jt.alias.upper(), _join_kind(jt.join.type)
    return None


class _ModelColumns:
    """Query columns → model column ids under one alias mapping; computed-column expressions too."""

    def __init__(self, m: ModelMetadata, aliases: dict[str, str]) -> None:
        self.m = m
        self.aliases = aliases

    def column(self, col: exp.Column) -> int | None:
        alias = self.aliases.get(col.table)
        named = self.m.columns_by_ref.get(f"{alias}.{col.name}".upper()) if alias else None
        return named.id if named is not None else None

    def argument(self, node: exp.Expr) -> int | None:
        if isinstance(node, exp.Column):
            return self.column(node)
        if any(c.table not in self.aliases for c in node.find_all(exp.Column)):
            return None
        return self.m.computed_columns.get(canonical(node, self.aliases))

    def name(self, column_id: int) -> str:
        return self.m.column_names.get(column_id, str(column_id))

    def folded(self, ctx: QueryContext) -> list[Folded]:
        """The block's largest expressions outside aggregate calls that are a computed column's (module
        docstring). WHERE is walked as the context's filter, without the join conditions of comma joins."""
        kinds = self.m.computed_kinds
        found: list[Folded] = []

        def fold(node: exp.Expr) -> bool:
            if type(node) not in kinds or isinstance(node, exp.Column) or node.find(exp.Column) is None:
                return False
            cid = self.argument(node)
            if cid is not None:
                found.append((node, cid))
            return cid is not None

        if kinds:
            _walk_block(ctx, fold)
        return found


def _walk_block(ctx: QueryContext, visit: Callable[[exp.Expr], bool]) -> None:
    """Visit the block's own expressions outside aggregate calls and subqueries, parents first, WHERE as the
    context's filter (a comma join's conditions left out); not below a node `visit` returns True for."""
    stack: list[exp.Expr] = [ctx.filter] if ctx.filter is not None else []
    for key, value in ctx.select.args.items():
        if key not in ("from_", "joins", "with_", "where") and value is not None:
            stack.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, exp.Expr))
    while stack:
        node = stack.pop()
        if not isinstance(node, (exp.Query, exp.Subquery)) and not is_group_aggregate(node) and not visit(node):
            stack.extend(node.iter_expressions())


def columns_outside(ctx: QueryContext, skipped: Collection[int]) -> list[exp.Column]:
    """The columns the block reads outside aggregate calls and outside the nodes `skipped` (by id): the
    context's `columns` less those the skipped expressions read (the filter's nodes are not the WHERE's when
    `contexts` took a comma join's conditions out of it)."""
    found: list[exp.Column] = []

    def read(node: exp.Expr) -> bool:
        if isinstance(node, exp.Column) and node.table:
            found.append(node)
        return id(node) in skipped

    _walk_block(ctx, read)
    return found


_FILTER_LEVEL = {exp.EQ: 5, exp.In: 5, exp.GTE: 4, exp.LTE: 4, exp.GT: 3, exp.LT: 3, exp.Between: 3, exp.Like: 2}


def _filter_order(ctx: QueryContext, columns: _ModelColumns, folded: Sequence[Folded]) -> list[int]:
    """Filter columns by how selective their predicate kind is (Kylin's filter levels); a computed column the
    filter reads (a condition: two values) after equalities."""
    ranked: dict[int, int] = {}
    if folded and ctx.filter is not None:
        within = {id(n) for n in ctx.filter.walk()}
        ranked.update((cid, _FILTER_LEVEL[exp.GTE]) for node, cid in folded if id(node) in within)
    for col in ctx.filter_columns:
        cid = columns.column(col)
        if cid is None:
            continue
        level = next((v for k, v in _FILTER_LEVEL.items() if isinstance(col.parent, k)), 1)
        ranked[cid] = max(level, ranked.get(cid, 0))
    return sorted(ranked, key=lambda c: -ranked[c])


def match(ctx: QueryContext, models: list[ModelMetadata]) -> Match | list[Rejection]:
    """The cheapest layout of any model for the context, or each model's reason why none."""
    if ctx.problem is not None:
        return [Rejection("*", ctx.problem)]
    rejected: list[Rejection] = []
    best: tuple[tuple[object, ...], Match] | None = None
    for m in models:
        if not m.online:
            rejected.append(Rejection(m.model.alias, "the model has no queryable segment"))
            continue
        found = _match_model(ctx, m)
        if isinstance(found, str):
            rejected.append(Rejection(m.model.alias, found))
            continue
        key, chosen = found
        if best is None or key < best[0]:
            if best is not None:
                rejected.append(Rejection(best[1].model.model.alias, "another model's layout is cheaper"))
            best = (key, chosen)
        else:
            rejected.append(Rejection(m.model.alias, "another model's layout is cheaper"))
    if best is None:
        return rejected
    best[1].rejected = rejected
    return best[1]


@dataclass
class _Needs:
    """What a context reads of one model whose joins fit it."""

    cols: _ModelColumns
    columns: dict[ColumnKey, int]  # columns read outside aggregate calls → model column ids
    inner: dict[ColumnKey, int]  # columns read inside aggregate calls
    calls: list[AggCall]
    topn: list[TopNAnswer]  # TOP_N measures that answer the block from layouts lacking their key
    joins: JoinMapping
    folded: list[Folded]

    @property
    def needed(self) -> frozenset[int]:
        return frozenset(self.columns.values()) | {cid for _, cid in self.folded}


def _needs(ctx: QueryContext, m: ModelMetadata, fold: bool = True) -> _Needs | str:
    """What the block reads of the model: with its expressions read from computed columns (`fold`), or as
    written (a layout built before the computed column was added holds the columns it reads)."""
    joins = join_mapping(ctx, m.model)
    if isinstance(joins, str):
        return joins
    cols = _ModelColumns(m, joins.aliases)
    folded = cols.folded(ctx) if fold else []
    read = columns_outside(ctx, {id(node) for node, _ in folded}) if folded else ctx.columns
    columns: dict[ColumnKey, int] = {}
    for col in [*read, *(c for f in joins.filters for c in f.find_all(exp.Column))]:
        cid = cols.column(col)
        if cid is None:
            return f"column {col.table.upper()}.{col.name.upper()} is not a column of the model"
        columns[(col.table, col.name.lower())] = cid
    inner: dict[ColumnKey, int] = {}
    for agg in ctx.aggregates:
        for col in agg.find_all(exp.Column):
            cid = cols.column(col)
            if cid is not None:
                inner[(col.table, col.name.lower())] = cid
    group = ctx.select.args.get("group")
    group_cols = [g for g in group.expressions] if group else []
    grouping_sets = group is not None and any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets", "all"))
    by_node = {id(node): cid for node, cid in folded}
    group_ids = [
        by_node.get(id(g), columns.get((g.table, g.name.lower())) if isinstance(g, exp.Column) else None)
        for g in group_cols
    ]
    group_dims = (
        frozenset(g for g in group_ids if g is not None)
        if not grouping_sets and all(g is not None for g in group_ids)
        else None
    )
    calls = [
        agg_call(a, m.measure_index, cols.argument, m.column_types, group_dims, m.non_null_columns)
        for a in ctx.aggregates
    ]
    topn = (
        topn_answers(
            ctx,
            m.topn_measures,
            cols.argument,
            lambda ref: c.id if (c := m.columns_by_ref.get(ref)) is not None else None,
            m.column_types,
            group_dims,
            m.non_null_columns,
            lambda: [m.segment_ranges[s.segment.id] for s in m.segments],
        )
        if m.topn_measures
        else []
    )
    return _Needs(cols, columns, inner, calls, topn, joins, folded)


def requirements(ctx: QueryContext, m: ModelMetadata) -> tuple[tuple[int, ...], frozenset[int]] | str:
    """The dimensions and measures of the smallest aggregate layout that answers the context by itself
    (no lookup joined back), or why no aggregate layout of the model can. The dimensions come filter
    columns first, most selective predicate first (the layout's rows are sorted in this order, so a
    filter reads few row groups), then the others in the model's order."""
    if ctx.problem is not None:
        return ctx.problem
    if not ctx.aggregating:
        return "a detail query needs a table index"
    needs = _needs(ctx, m)
    if isinstance(needs, str):
        return needs
    dims = {c.id for c in m.model.dimensions()}
    if needs.folded and not needs.needed <= dims:  # a computed column that is no dimension: the columns it reads
        plain = _needs(ctx, m, fold=False)
        needs = plain if isinstance(plain, _Needs) else needs
    missing = sorted(needs.needed - dims)
    if missing:
        return "no dimension: " + ", ".join(needs.cols.name(c) for c in missing)
    wanted: set[int] = set(needs.needed)
    measures: set[int] = set()
    sketches = {x.id for x in m.model.measures() if x.function.returntype.lower().startswith("hllc")}
    for call in needs.calls:
        # an exact way adding no dimension first (a measure of a column the block does not otherwise read)
        fitting = [w for w in call.ways if w.dims <= dims]
        exact = (w for w in fitting if w.dims <= needs.needed and not w.measures & sketches)
        way = next(exact, fitting[0] if fitting else None)
        if way is None:
            return call.problem or f"{call.node.sql(dialect='spark')}: no measure of the model computes it"
        wanted |= way.dims
        measures |= way.measures
    first = [c for c in _filter_order(ctx, needs.cols, needs.folded) if c in wanted]
    position = {c.id: i for i, c in enumerate(m.model.dimensions())}
    rest = sorted(wanted - set(first), key=position.__getitem__)
    return (*first, *rest), frozenset(measures)


def _match_model(ctx: QueryContext, m: ModelMetadata) -> tuple[tuple[object, ...], Match] | str:
    needs = _needs(ctx, m)
    if isinstance(needs, str):
        return needs
    variants = [needs]
    if needs.folded:  # a layout may hold the columns an expression reads and not its computed column
        plain = _needs(ctx, m, fold=False)
        variants += [plain] if not isinstance(plain, str) else []
    cols = needs.cols
    lookups = _lookup_joins(ctx, m, needs.joins)
    scanned, pruned = _prune(ctx.filter, m, cols)
    unproven = needs.joins.proof.check(s.segment for s in scanned)
    if unproven is not None:
        return unproven
    pool = scanned or m.segments
    built = set.intersection(*(set(s.layouts) for s in pool)) if pool else set()
    candidates = [m.layouts[i] for i in sorted(built) if i in m.layouts]
    if not candidates:
        return "no layout is built in every segment the query reads"

    best: tuple[tuple[object, ...], Match] | None = None
    reasons: list[Misfit] = []  # (of the first variant: why a layout cannot answer the block at its best)
    retyped_fit = False  # a layout that fits but holds a column built with another type than Spark's
    for variant in variants:
        columns, inner = variant.columns, variant.inner
        owners = {cid: alias for (alias, _), cid in {**inner, **columns}.items()}
        filter_order = _filter_order(ctx, cols, variant.folded)
        misfits: list[Misfit] = reasons if variant is needs else []
        for layout in candidates:
            found = _layout_fits(ctx, layout, variant.needed, variant.calls, cols, inner, variant.topn)
            if not isinstance(found, tuple):
                misfits.append(found)
                continue
            if m.layout_columns[layout.id] & m.retyped:
                retyped_fit = True
                continue
            ways, missing = found
            derived = _derive(missing, owners, lookups, cols.m.layout_columns[layout.id]) if missing else ()
            if derived is None:
                misfits.append(missing)
                continue
            rows = sum(s.layouts[layout.id].rows for s in scanned)
            positions = tuple(layout.col_order.index(c) if c in layout.col_order else 999 for c in filter_order)
            dims = layout.dimensions
            key = (
                layout.is_table_index,
                bool(derived),
                rows,
                positions,
                len(dims),
                len(layout.col_order) - len(dims),
                layout.id,
            )
            if best is None or key < best[0]:  # (a tie: the folded variant, tried first)
                best = (
                    key,
                    Match(
                        m,
                        layout,
                        {**inner, **columns},
                        ways,
                        scanned,
                        pruned,
                        rows,
                        derived,
                        proof=needs.joins.proof,
                        filters=needs.joins.filters,
                        folded=tuple(variant.folded),
                    ),
                )
    if best is None:
        return m.retyped_reason if retyped_fit else _why_not(reasons, needs.calls, needs.needed, candidates, cols)
    return best


def _layout_fits(
    ctx: QueryContext,
    layout: Layout,
    needed: frozenset[int],
    calls: list[AggCall],
    cols: _ModelColumns,
    inner: dict[ColumnKey, int],
    topn: Sequence[TopNAnswer] = (),
) -> tuple[list[AggWay], frozenset[int]] | Misfit:
    """The ways the layout answers the block and the columns it lacks (a lookup may give them), or why not;
    a layout that lacks a TOP_N measure's key and holds the measure answers from its unnested cells."""
    held = cols.m.layout_columns[layout.id]
    if layout.is_table_index:
        wanted = needed | frozenset(inner.values())
        for call in calls:
            for arg in call.node.find_all(exp.Column):
                if cols.column(arg) is None:
                    return f"{call.node.sql(dialect='spark')} reads a column the model lacks"
        return [], frozenset(wanted - held)
    if not ctx.aggregating:
        return "a detail query needs a table index"
    for answer in topn:
        unnest = answer.unnest
        if unnest.measure in held and unnest.key not in held and needed - {unnest.key} <= held:
            return answer.ways, frozenset()
    ways = []
    for call in calls:
        way = next((w for w in call.ways if w.dims <= held and w.measures <= held), None)
        if way is None:
            return call.problem or call
        ways.append(way)
    return ways, frozenset(needed - held)


def _derive(
    missing: frozenset[int], owners: dict[int, str], lookups: dict[str, DerivedJoin], held: frozenset[int]
) -> tuple[DerivedJoin, ...] | None:
    """The lookups to join back for the columns a layout lacks; None when one of them is no lookup's or the
    layout lacks a join key."""
    joins = {}
    for cid in missing:
        lookup = lookups.get(owners.get(cid, ""))
        if lookup is None or not all(fk in held for fk, _ in lookup.keys):
            return None
        joins[lookup.alias] = lookup
    return tuple(joins[a] for a in sorted(joins))


# Why a layout cannot answer: a reason, the columns it lacks, or the call no measure of it computes. Kept
# raw and put in words only when shown: most layouts of a plan are rejected for every query.
Misfit = str | frozenset[int] | AggCall


def _misfit_text(misfit: Misfit, cols: _ModelColumns) -> str:
    if isinstance(misfit, str):
        return misfit
    if isinstance(misfit, AggCall):
        return f"{misfit.node.sql(dialect='spark')}: no measure in the layout computes it"
    return "missing dimension " + ", ".join(cols.name(c) for c in sorted(misfit))


def _why_not(
    reasons: list[Misfit], calls: list[AggCall], needed: frozenset[int], candidates: list[Layout], cols: _ModelColumns
) -> str:
    for call in calls:
        if call.problem is not None:
            return call.problem
    held = set().union(*(cols.m.layout_columns[lay.id] for lay in candidates))
    missing = sorted(needed - held)
    if missing:
        return "no layout has dimension " + ", ".join(cols.name(c) for c in missing)
    texts = sorted({_misfit_text(r, cols) for r in reasons})
    return texts[0] if len(texts) == 1 else "no single layout has every column and measure: " + "; ".join(texts[:3])


@dataclass(frozen=True)
class Probe:
    """A model whose tables and joins fit a context, with its column lookup: enough to prune again."""

    model: ModelMetadata
    columns: _ModelColumns


def probes(ctx: QueryContext, models: list[ModelMetadata]) -> list[Probe]:
    """The online models whose join graph holds the context's tables and joins."""
    if ctx.problem is not None:
        return []
    found = []
    for m in models:
        if m.online and isinstance(aliases := map_aliases(ctx, m.model), dict):
            found.append(Probe(m, _ModelColumns(m, aliases)))
    return found


def scanned_ids(condition: exp.Expr | None, probe: Probe) -> tuple[str, ...]:
    """The segments of the probe's model that a filter keeps."""
    return tuple(s.segment.id for s in _prune(condition, probe.model, probe.columns)[0])


def _prune(
    condition: exp.Expr | None, m: ModelMetadata, cols: _ModelColumns
) -> tuple[list[SegmentLayouts], list[Segment]]:
    if condition is None:
        return list(m.segments), []
    scanned, pruned = [], []
    for seg in m.segments:
        ranges = m.segment_ranges[seg.segment.id]

        def range_of(col: exp.Column, ranges: dict[int, ValueRange] = ranges) -> ValueRange | None:
            cid = cols.column(col)
            return ranges.get(cid) if cid is not None else None

        if may_match(condition, range_of):
            scanned.append(seg)
        else:
            pruned.append(seg.segment)
    return scanned, pruned
