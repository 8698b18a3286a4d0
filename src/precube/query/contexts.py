"""Query contexts (DESIGN §6 step 2; Kylin's OLAP contexts): every SELECT block that reads source tables
becomes one context — its tables and joins, the columns it reads outside aggregates, its filter, its
aggregate calls. Blocks are found with sqlglot's scopes (subqueries, CTEs, UNION branches, IN/EXISTS
subqueries, derived tables); the nodes a context lists belong to its block only, so each block can be
rewritten on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

INNER = "INNER"
REFUSED = "precube_split_refused"  # meta key of a block `split_blocks` left whole: why
LEFT = "LEFT"


@dataclass(frozen=True)
class JoinEdge:
    """`left` ⋈ `right` on equal column pairs; `right` is the table the JOIN clause adds (for LEFT, the
    side that may be missing)."""

    left: str  # query alias
    right: str
    kind: str  # INNER or LEFT
    pairs: tuple[tuple[str, str], ...]  # (column of left, column of right), lower case


@dataclass
class QueryContext:
    select: exp.Select
    tables: dict[str, str]  # query alias → DB.TABLE (upper case)
    joins: list[JoinEdge]
    columns: list[exp.Column]  # every column read outside aggregate calls (nodes of this block)
    aggregates: list[exp.AggFunc]  # group aggregate calls (window functions excluded)
    filter: exp.Expr | None  # WHERE, without the join conditions of comma joins
    filter_columns: list[exp.Column] = field(default_factory=list)
    problem: str | None = None  # why no layout can answer this block, whatever the model
    correlated: bool = False  # it reads a column of an outer query

    @property
    def aggregating(self) -> bool:
        return bool(self.aggregates) or bool(self.select.args.get("group")) or bool(self.select.args.get("distinct"))


def contexts(tree: exp.Query) -> list[QueryContext]:
    """The contexts of a qualified tree (`frontend.normalise`), innermost first."""
    found = []
    for scope in traverse_scope(tree):
        if not isinstance(scope.expression, exp.Select):
            continue
        tables = {name: src for name, src in scope.sources.items() if isinstance(src, exp.Table)}
        if tables:
            found.append(_context(scope, tables))
    return found


_SOURCES = ("from_", "joins", "with_")  # a block's tables, joins and CTEs: not its own expressions


def own_nodes(select: exp.Select) -> Iterator[exp.Expr]:
    """Every node of the block itself, not of its sources or of the subqueries it holds."""
    stack: list[exp.Expr] = []
    for key, value in select.args.items():
        if key in _SOURCES or value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expr):
                stack.append(item)
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.Query, exp.Subquery)):
            continue
        yield node
        stack.extend(node.iter_expressions())


def is_group_aggregate(node: exp.Expr) -> bool:
    """An aggregate call of the GROUP BY, not a window function's own call."""
    parent = node.parent.parent if isinstance(node.parent, exp.Filter) else node.parent  # `f(x) FILTER (…) OVER`
    return isinstance(node, exp.AggFunc) and not isinstance(parent, exp.Window)


def _inside_aggregate(node: exp.Expr, select: exp.Select) -> bool:
    parent = node.parent
    while parent is not None and parent is not select:
        if is_group_aggregate(parent):
            return True
        parent = parent.parent
    return False


def _context(scope: Scope, tables: dict[str, exp.Table]) -> QueryContext:
    select = scope.expression
    assert isinstance(select, exp.Select)
    names = {alias: f"{t.db}.{t.name}".upper() for alias, t in tables.items()}
    ctx = QueryContext(select, names, [], [], [], select.args["where"].this if select.args.get("where") else None)
    if len(tables) != len(scope.selected_sources):  # `sources` also holds the CTEs it could read but does not
        refused = select.meta_get(REFUSED)
        ctx.problem = "it joins tables with a subquery"
        if refused:
            ctx.problem += f" and its model part cannot be split off: {refused}"
    nodes = list(own_nodes(select))
    ctx.aggregates = [n for n in nodes if isinstance(n, exp.AggFunc) and is_group_aggregate(n)]
    if any(is_group_aggregate(inner) for a in ctx.aggregates for inner in list(a.walk())[1:]):
        ctx.problem = ctx.problem or "it nests aggregate calls"
    # an unqualified column is a reference to an output alias (ORDER BY revenue), not a table column
    ctx.columns = [n for n in nodes if isinstance(n, exp.Column) and n.table and not _inside_aggregate(n, select)]
    for col in ctx.columns + [c for a in ctx.aggregates for c in a.find_all(exp.Column)]:
        if col.table and col.table not in scope.selected_sources:  # (a subquery's column: a problem above)
            ctx.problem = ctx.problem or f"column {col.sql()} refers to an outer query"
            ctx.correlated = True
    _joins(ctx, select, tables)
    if ctx.filter is not None:
        ctx.filter_columns = list(ctx.filter.find_all(exp.Column))
    return ctx


def _joins(ctx: QueryContext, select: exp.Select, tables: dict[str, exp.Table]) -> None:
    joined = [select.args["from_"].this] + [j.this for j in select.args.get("joins") or []]
    aliases = [t.alias_or_name for t in joined]
    comma_pairs: list[tuple[exp.Column, exp.Column]] = []
    for i, join in enumerate(select.args.get("joins") or [], start=1):
        side, kind = (join.args.get("side") or "").upper(), (join.args.get("kind") or "").upper()
        on = join.args.get("on")
        if join.args.get("using"):
            ctx.problem = ctx.problem or "it joins with USING"
            continue
        if kind == "CROSS" or (on is None and not side):
            continue  # a comma join: its conditions are in WHERE
        if side not in ("", LEFT) or kind not in ("", "INNER", "OUTER"):
            ctx.problem = ctx.problem or f"it uses a {side or kind} JOIN, which no model join is"
            continue
        pairs = _equalities(on)
        if pairs is None:
            ctx.problem = ctx.problem or f"the join condition {on.sql()} is not a conjunction of column equalities"
            continue
        edge = _edge(aliases[i], pairs, LEFT if side == LEFT else INNER)
        if edge is None:
            ctx.problem = ctx.problem or f"the join condition {on.sql()} does not relate {aliases[i]} to one table"
            continue
        ctx.joins.append(edge)
    if len(ctx.joins) + 1 < len(aliases) and ctx.filter is not None:
        comma_pairs, ctx.filter = _split_comma_joins(
            ctx.filter, aliases, {frozenset((e.left, e.right)) for e in ctx.joins}
        )
        ctx.joins.extend(_comma_edges(comma_pairs))
        # the join conditions are no columns the block reads (a layout needs neither key)
        keys = {id(c) for pair in comma_pairs for c in pair}
        ctx.columns = [c for c in ctx.columns if id(c) not in keys]
    if len(ctx.joins) + 1 < len(aliases) and ctx.problem is None:
        ctx.problem = "it joins tables without an equality between their columns (a cross join)"


def _equalities(on: exp.Expr) -> list[tuple[exp.Column, exp.Column]] | None:
    pairs = []
    for part in on.flatten() if isinstance(on, exp.And) else [on]:
        part = part.unnest()
        if not (
            isinstance(part, exp.EQ) and isinstance(part.this, exp.Column) and isinstance(part.expression, exp.Column)
        ):
            return None
        pairs.append((part.this, part.expression))
    return pairs


def _edge(right: str, pairs: list[tuple[exp.Column, exp.Column]], kind: str) -> JoinEdge | None:
    """The edge between `right` and the single other table its equalities reach."""
    mine = []
    others = set()
    for a, b in pairs:
        if a.table == right and b.table != right:
            a, b = b, a
        if b.table != right or a.table == right:
            continue
        others.add(a.table)
        mine.append((a.name.lower(), b.name.lower()))
    if len(others) != 1:
        return None
    return JoinEdge(others.pop(), right, kind, tuple(mine))


def _comma_edges(pairs: list[tuple[exp.Column, exp.Column]]) -> list[JoinEdge]:
    """One INNER edge per pair of tables the equalities relate (a snowflake's comma joins too: CUSTOMER is
    related to LINEORDER and to NATION by two edges); its direction does not matter to an INNER join."""
    grouped: dict[frozenset[str], list[tuple[exp.Column, exp.Column]]] = {}
    for a, b in pairs:
        grouped.setdefault(frozenset((a.table, b.table)), []).append((a, b))
    edges = []
    for group in grouped.values():
        left = group[0][0].table
        right = group[0][1].table
        on = tuple(
            (a.name.lower(), b.name.lower()) if a.table == left else (b.name.lower(), a.name.lower()) for a, b in group
        )
        edges.append(JoinEdge(left, right, INNER, on))
    return edges


def _split_comma_joins(
    where: exp.Expr, aliases: list[str], joined: set[frozenset[str]]
) -> tuple[list[tuple[exp.Column, exp.Column]], exp.Expr | None]:
    """Column equalities between two tables of a comma join (not already joined by a JOIN clause: `joined`),
    and the rest of the filter."""
    pairs, rest = [], []
    for part in where.flatten() if isinstance(where, exp.And) else [where]:
        inner = part.unnest()
        if (
            isinstance(inner, exp.EQ)
            and isinstance(inner.this, exp.Column)
            and isinstance(inner.expression, exp.Column)
            and inner.this.table != inner.expression.table
            and {inner.this.table, inner.expression.table} <= set(aliases)
            and frozenset((inner.this.table, inner.expression.table)) not in joined
        ):
            pairs.append((inner.this, inner.expression))
        else:
            rest.append(part)
    return pairs, exp.and_(*rest) if rest else None
