"""Split a block that joins a model's tables with subqueries (DESIGN §6 step 2; Kylin's "join with a lookup
projection"): its model part becomes a block of its own, which a layout can answer like any other.

    SELECT x.d_yearmonth, SUM(lo_revenue) FROM lineorder LEFT JOIN dates ON … JOIN (SELECT …) x
        ON lo_orderdate = x.d_datekey WHERE d_year > 1993 GROUP BY x.d_yearmonth
 →  SELECT x.d_yearmonth, CAST(SUM(m.part_1) AS BIGINT)
    FROM (SELECT lo_orderdate, SUM(lo_revenue) AS part_1 FROM lineorder LEFT JOIN dates ON …
          WHERE d_year > 1993 GROUP BY lo_orderdate) m
    JOIN (SELECT …) x ON m.lo_orderdate = x.d_datekey GROUP BY x.d_yearmonth

The model part holds the block's tables (not its subqueries and CTEs) with their joins and the WHERE
conjuncts over them alone; it groups by every column of them the rest of the block reads outside
aggregate calls (group-by columns, the other conjuncts, the join conditions to the subqueries, FILTER
conditions, the arguments of DISTINCT calls) and computes each aggregate call as partials that the block
re-aggregates: SUM → SUM of sums, COUNT → SUM of counts, MIN/MAX of MIN/MAX, AVG → SUM of sums over SUM of
counts; a DISTINCT call reads the grouped column itself. A call over a subquery's columns alone stays
outside: MIN/MAX/DISTINCT as written, SUM/COUNT/AVG weighted by the part's COUNT(*). This is exact: a row
of the model part stands for fact rows with the same values of every column the rest reads, so a join
multiplies it as it multiplies those rows. A detail block (no aggregation) reads the part ungrouped.

It applies only when moving the model's joins together keeps the rows: every join is INNER, LEFT (the
table it adds optional) or a comma join, the model is not on the optional side of a LEFT join with a
subquery before it, and the joins among the model's tables read only them. Otherwise — and for a call
mixing the model's and a subquery's columns, one that does not re-aggregate (a percentile), a correlated
subquery over the model's tables outside the part, no model column shared with the subqueries — the
block is left as it is with the reason (`REFUSED`, read by `contexts`). The statement pushed down is the
original one, never the split.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from precube.modeling import spark_types
from precube.query.contexts import REFUSED, is_group_aggregate
from precube.query.frontend import Catalog
from precube.query.spark_decimals import spark_average

MODEL_PART = "model_part"  # the alias of the model part (a number added when the block already uses it)


@dataclass(frozen=True)
class Split:
    """A block whose model part became a block of its own."""

    original: exp.Select  # the block as it was (a copy)
    part: exp.Select  # the model part, in the split tree
    alias: str  # the model part's alias in the block
    subqueries: tuple[str, ...]  # the aliases of the subqueries it is joined with


class _RefusedError(Exception):
    """Why a block's model part cannot be split off (caught here: the block is then left whole)."""


def split_tree(tree: exp.Query, facts: frozenset[str], catalog: Catalog) -> tuple[exp.Query, list[Split]]:
    """`tree` with its blocks split (a copy; `tree` itself when no block has a subquery to split from)."""
    if not facts or tree.find(exp.Subquery, exp.CTE) is None:
        return tree, []
    copy = tree.copy()
    return copy, split_blocks(copy, facts, catalog)


def split_blocks(tree: exp.Query, facts: frozenset[str], catalog: Catalog) -> list[Split]:
    """Split, in place, every block of the qualified `tree` that joins tables including a model's fact table
    (`facts`: DB.TABLE, upper case) with subqueries; a block that cannot be split gets its reason under
    `REFUSED` in its meta."""
    found = []
    for scope in traverse_scope(tree):
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        tables = {a: s for a, (_, s) in scope.selected_sources.items() if isinstance(s, exp.Table)}
        derived = [a for a, (_, s) in scope.selected_sources.items() if isinstance(s, Scope)]
        if not derived or not any(f"{t.db}.{t.name}".upper() in facts for t in tables.values()):
            continue
        try:
            found.append(_split(select, scope, set(tables), tuple(derived), catalog))
        except _RefusedError as why:
            select.meta[REFUSED] = str(why)
    return found


def _sources(select: exp.Select) -> list[tuple[exp.Expr, exp.Join | None]]:
    """The block's sources in order: (source node, its JOIN; None for FROM)."""
    return [(select.args["from_"].this, None), *((j.this, j) for j in select.args.get("joins") or [])]


def _kind(join: exp.Join) -> str:
    """INNER, LEFT or COMMA; a _RefusedError for other joins."""
    side, kind = (join.args.get("side") or "").upper(), (join.args.get("kind") or "").upper()
    if join.args.get("using"):
        raise _RefusedError("it joins with USING")
    if kind == "CROSS" or (join.args.get("on") is None and not side and kind in ("", "INNER")):
        return "COMMA"
    if side not in ("", "LEFT") or kind not in ("", "INNER", "OUTER"):
        raise _RefusedError(f"it uses a {side or kind} JOIN")
    return "LEFT" if side == "LEFT" else "INNER"


def _refs(node: exp.Expr, aliases: set[str]) -> set[str]:
    """The aliases of `aliases` that `node` reads, also from inside the subqueries it holds (correlated)."""
    found = {c.table for c in node.find_all(exp.Column) if c.table in aliases}
    for query in node.find_all(exp.Query):
        defined = {t.alias_or_name for t in query.find_all(exp.Table, exp.Subquery)}
        defined |= {c.alias_or_name for c in query.find_all(exp.CTE)}
        found |= {c.table for c in query.find_all(exp.Column) if c.table in aliases and c.table not in defined}
    return found


def _nested_refs(node: exp.Expr, aliases: set[str]) -> bool:
    """Whether a subquery held by `node` reads one of `aliases` (is correlated with the model part)."""
    return any(_refs(q, aliases) for q in node.find_all(exp.Query) if q is not node)


def _fresh(taken: set[str], name: str) -> str:
    i = 1
    found = name
    while found in taken:
        i += 1
        found = f"{name}_{i}"
    taken.add(found)
    return found


class _Part:
    """The model part being built: its grouped columns and its partial aggregates, each with its name."""

    def __init__(self, alias: str, taken: set[str]) -> None:
        self.alias = alias
        self.names = taken  # output names in use
        self.keys: dict[tuple[str, str], str] = {}  # (table alias, column) → output name
        self.key_nodes: dict[str, exp.Column] = {}  # output name → the column it holds
        self.partials: dict[str, str] = {}  # SQL of a partial call → output name
        self.partial_nodes: dict[str, exp.Expr] = {}  # output name → the call

    def key(self, col: exp.Column) -> exp.Column:
        """The model part's column holding `col` (grouped by it)."""
        ident = (col.table, col.name.lower())
        name = self.keys.get(ident)
        if name is None:
            plain = col.name.lower()
            name = _fresh(self.names, plain if plain not in self.names else f"{col.table}_{plain}")
            self.keys[ident] = name
            self.key_nodes[name] = exp.column(col.name, table=col.table)
        return exp.column(exp.to_identifier(name), table=exp.to_identifier(self.alias))

    def partial(self, call: exp.Expr) -> exp.Column:
        """The model part's column holding this aggregate call over each group."""
        text = call.sql()
        name = self.partials.get(text)
        if name is None:
            name = _fresh(self.names, f"part_{len(self.partials) + 1}")
            self.partials[text] = name
            self.partial_nodes[name] = call
        return exp.column(exp.to_identifier(name), table=exp.to_identifier(self.alias))


def _split(select: exp.Select, scope: Scope, model: set[str], derived: tuple[str, ...], catalog: Catalog) -> Split:
    original = select.copy()
    aliases = model | set(derived)
    sources = _sources(select)
    kinds = [None if join is None else _kind(join) for _, join in sources]
    positions = [i for i, (node, _) in enumerate(sources) if node.alias_or_name in model]
    first, moved = positions[0], set(positions[1:])
    if first > 0 and kinds[first] == "LEFT":
        raise _RefusedError(
            f"the model's tables are on the optional side of a LEFT JOIN with {sources[0][0].alias_or_name}"
        )
    for i in moved:
        on = sources[i][1].args.get("on")  # type: ignore[union-attr]
        if on is not None and not _refs(on, aliases) <= model:
            raise _RefusedError(f"the join to {sources[i][0].alias_or_name} reads a subquery's columns")
    if any(select.args.get(k) for k in ("laterals", "pivots", "connect", "prewhere")):
        raise _RefusedError("it uses a lateral view, pivot or CONNECT BY")

    # WHERE: the conjuncts over the model's tables alone filter the model part; the rest stay
    where = select.args.get("where")
    conjuncts = list(where.this.flatten()) if where is not None and isinstance(where.this, exp.And) else []
    if where is not None and not conjuncts:
        conjuncts = [where.this]
    inner = [c for c in conjuncts if (refs := _refs(c, aliases)) and refs <= model]
    outer = [c for c in conjuncts if not any(c is i for i in inner)]
    ons = [j.args["on"] for i, (_, j) in enumerate(sources) if j is not None and i not in moved and j.args.get("on")]
    roots = [*_top_expressions(select), *outer, *ons]  # what stays in the block
    for root in roots:
        if _nested_refs(root, model):
            raise _RefusedError("a subquery in it reads the model's tables")
        for col in _columns_outside(root, set()):
            if col.table and col.table not in aliases:
                raise _RefusedError(f"column {col.sql()} refers to an outer query")

    calls: list[exp.Expr] = [
        n for r in roots for n in _own_walk(r) if isinstance(n, exp.AggFunc) and is_group_aggregate(n)
    ]
    calls = [c for c in calls if not _within(c.parent, calls)]  # a nested call is its outer call's problem
    aggregating = bool(calls or select.args.get("group") or select.args.get("distinct"))
    taken = set(aliases) | {t.alias_or_name for t in select.find_all(exp.Table, exp.Subquery)}
    part = _Part(_fresh(taken, MODEL_PART), set())
    merges: dict[int, tuple[exp.Expr, exp.Expr]] = {}  # id of the node replaced → (it, its replacement)
    for call in calls:
        if any(is_group_aggregate(n) for n in list(call.walk())[1:]):
            raise _RefusedError("it nests aggregate calls")
        assert isinstance(call, exp.AggFunc)
        target: exp.Expr = call.parent if isinstance(call.parent, exp.Filter) else call
        merges[id(target)] = (target, _merge(call, part, model, catalog, select))

    # every other column of the model's tables the block reads: a column of the model part
    replaced = [(c, part.key(c)) for root in roots for c in _columns_outside(root, merges) if c.table in model]
    if not part.keys:
        raise _RefusedError("it reads no column of the model's tables besides aggregate calls (a cross join)")

    body = exp.Select(
        expressions=[
            *(exp.alias_(node.copy(), exp.to_identifier(name)) for name, node in part.key_nodes.items()),
            *(exp.alias_(node.copy(), exp.to_identifier(name)) for name, node in part.partial_nodes.items()),
        ]
    )
    # the model's tables, joins and conjuncts move (not copied: a subquery in them may be a split part)
    body.set("from_", exp.From(this=sources[first][0]))
    body.set("joins", [sources[i][1] for i in sorted(moved)] or None)
    if inner:
        body.set("where", exp.Where(this=exp.and_(*(c.pop() for c in inner), copy=False)))
    if aggregating:
        body.set("group", exp.Group(expressions=[n.copy() for n in part.key_nodes.values()]))
    relation = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(part.alias)))

    for col, new in replaced:
        col.replace(new)
    for target, replacement in merges.values():
        target.replace(replacement)
    head: exp.Expr | None = None
    rebuilt: list[exp.Join] = []
    for i, (node, join) in enumerate(sources):
        if i in moved:
            continue
        this = relation if i == first else node
        if join is None:
            head = this
        else:
            join.set("this", this)
            rebuilt.append(join)
    assert head is not None
    select.set("from_", exp.From(this=head))
    select.set("joins", rebuilt or None)
    select.set("where", exp.Where(this=exp.and_(*(c.pop() for c in outer), copy=False)) if outer else None)
    return Split(original, body, part.alias, derived)


def _within(node: exp.Expr | None, roots: Sequence[exp.Expr]) -> bool:
    while node is not None:
        if any(node is r for r in roots):
            return True
        node = node.parent
    return False


def _top_expressions(select: exp.Select) -> Iterator[exp.Expr]:
    """The block's own expressions but its sources and WHERE (select list, GROUP BY, HAVING, ORDER BY, …)."""
    for key, value in select.args.items():
        if value is None or key in ("from_", "joins", "with_", "where"):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expr):
                yield item


def _own_walk(root: exp.Expr, skip: Container[int] = ()) -> Iterator[exp.Expr]:
    """The nodes of `root` outside the subqueries it holds and outside the nodes whose ids are in `skip`."""
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in skip or (isinstance(node, (exp.Query, exp.Subquery)) and node is not root):
            continue
        yield node
        stack.extend(node.iter_expressions())


def _columns_outside(root: exp.Expr, skip: Container[int]) -> Iterator[exp.Column]:
    """The columns of `root` outside subqueries and outside the nodes whose ids are in `skip`."""
    return (n for n in _own_walk(root, skip) if isinstance(n, exp.Column))


def _keyed(node: exp.Expr, part: _Part, model: set[str]) -> exp.Expr:
    """A copy of `node` reading the model part's columns for the model's."""
    copy = node.copy()
    for col in list(copy.find_all(exp.Column)):
        if col.table in model:
            new = part.key(col)
            if col is copy:
                return new
            col.replace(new)
    return copy


def _call_over(fn: type[exp.AggFunc], arg: exp.Expr, condition: exp.Expr | None) -> exp.Expr:
    call = fn(this=arg)
    return exp.Filter(this=call, expression=exp.Where(this=condition.copy())) if condition is not None else call


def _merge(call: exp.AggFunc, part: _Part, model: set[str], catalog: Catalog, select: exp.Select) -> exp.Expr:
    """What replaces `call` (with its FILTER, if any) in the block: its partials re-aggregated, under the
    FILTER's condition over the model part's columns."""
    wrapper = call.parent if isinstance(call.parent, exp.Filter) else None
    condition = _keyed(wrapper.expression.this, part, model) if wrapper is not None else None
    arg = call.this
    shown = call.sql(dialect="spark")
    read = {c.table for c in call.find_all(exp.Column)}
    extreme = isinstance(call, (exp.Min, exp.Max)) and bool(read - model)
    if isinstance(arg, exp.Distinct) or isinstance(call, exp.ApproxDistinct) or extreme:
        # over the distinct values (the model part groups by the columns of the argument), or the extremes of
        # a subquery's columns: a row of the model part stands for at least one row of the block
        return _keyed(wrapper or call, part, model)
    if read & model and read - model:
        raise _RefusedError(f"{shown} reads both the model's tables and a subquery's columns")
    if read - model:
        return _weighted(call, part, condition, catalog, select)
    if isinstance(call, exp.Count):
        counted = part.partial(exp.Count(this=arg.copy() if arg is not None else exp.Star()))
        return _zero_if_null(exp.cast(_call_over(exp.Sum, counted, condition), exp.DataType.build("bigint")))
    if isinstance(call, (exp.Min, exp.Max)):
        return _call_over(type(call), part.partial(type(call)(this=arg.copy())), condition)
    if isinstance(call, exp.Sum):
        summed = _call_over(exp.Sum, part.partial(exp.Sum(this=arg.copy())), condition)
        return _typed_sum(summed, arg, select, catalog)
    if isinstance(call, exp.Avg):
        total = _call_over(exp.Sum, part.partial(exp.Sum(this=arg.copy())), condition)
        count = _call_over(exp.Sum, part.partial(exp.Count(this=arg.copy())), condition)
        return _ratio(total, count, arg, select, catalog)
    raise _RefusedError(f"{shown} cannot be re-aggregated from partial aggregates after a join with a subquery")


def _weighted(
    call: exp.AggFunc, part: _Part, condition: exp.Expr | None, catalog: Catalog, select: exp.Select
) -> exp.Expr:
    """SUM, COUNT or AVG of a subquery's columns: each joined row of the model part counts for the fact rows
    it stands for (its COUNT(*))."""
    arg = call.this
    rows = part.partial(exp.Count(this=exp.Star()))
    present = exp.If(this=exp.Not(this=exp.Is(this=arg.copy(), expression=exp.Null())), true=rows.copy())
    counted = _call_over(exp.Sum, exp.Case(ifs=[present]), condition)
    if isinstance(call, exp.Count):
        return _zero_if_null(exp.cast(counted, exp.DataType.build("bigint")))
    summed = _call_over(exp.Sum, exp.Mul(this=exp.Paren(this=arg.copy()), expression=rows.copy()), condition)
    if isinstance(call, exp.Sum):
        return _typed_sum(summed, arg, select, catalog)
    if isinstance(call, exp.Avg):
        return _ratio(summed, counted, arg, select, catalog)
    raise _RefusedError(f"{call.sql(dialect='spark')} reads a subquery's columns and cannot be weighted by rows")


def _zero_if_null(e: exp.Expr) -> exp.Expr:
    return exp.func("coalesce", e, exp.Literal.number(0))


def _ratio(total: exp.Expr, count: exp.Expr, arg: exp.Expr, select: exp.Select, catalog: Catalog) -> exp.Expr:
    """AVG from its SUM and COUNT, as Spark computes AVG(`arg`): a DOUBLE division, or for a decimal argument
    `spark_decimals.spark_average` (as a layout's AVG is)."""
    datatype = _argument_type(arg, select, catalog)
    if spark_types.decimal_of(datatype) is not None and datatype is not None:
        return spark_average(total, count, datatype)
    return exp.Div(
        this=exp.cast(total, exp.DataType.build("double")),
        expression=exp.func("nullif", count, exp.Literal.number(0)),
    )


def _typed_sum(summed: exp.Expr, arg: exp.Expr, select: exp.Select, catalog: Catalog) -> exp.Expr:
    """`summed` cast to the type Spark gives SUM(`arg`) over the block's sources (`spark_types`)."""
    datatype = spark_types.sum_type(_argument_type(arg, select, catalog))
    return exp.cast(summed, datatype) if datatype is not None else summed


def _argument_type(arg: exp.Expr, select: exp.Select, catalog: Catalog) -> exp.DataType | None:
    """The Spark type of an aggregate's argument over the block's sources (and the CTEs it may read)."""
    sources = [n.copy() for n, _ in _sources(select)]
    probe = exp.Select(expressions=[arg.copy()]).from_(sources[0])
    for source in sources[1:]:
        probe = probe.join(source)
    scopes = [select, *_ancestors(select, exp.Query)]  # the CTEs it may read
    ctes = [cte.copy() for q in scopes[::-1] if q.args.get("with_") for cte in q.args["with_"].expressions]
    if ctes:
        probe.set("with_", exp.With(expressions=ctes))
    spark_types.annotate(probe, catalog.schema)
    found = probe.expressions[0].type
    return None if found is None or found.is_type(exp.DType.UNKNOWN) else found


def _ancestors(node: exp.Expr, kind: type[exp.Expr]) -> list[exp.Expr]:
    """The nodes of `kind` above `node`, nearest first."""
    found = []
    parent = node.parent
    while parent is not None:
        if isinstance(parent, kind):
            found.append(parent)
        parent = parent.parent
    return found
