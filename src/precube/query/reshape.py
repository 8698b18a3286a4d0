"""A qualified statement reshaped into one that means the same and whose blocks layouts can answer (before
`split_blocks` and `contexts`; a statement pushed down runs as written):

- a derived table or a CTE that only projects and filters tables, read alone by its block, is merged into
  it (sqlglot's `merge_subqueries`): `SUM(volume) FROM (SELECT l_extendedprice * (1 - l_discount) AS volume
  FROM lineitem, … WHERE …) GROUP BY …` aggregates the joined tables themselves (TPC-H Q7-Q9); a derived
  table joined with other tables is left to `split_blocks`;
- conjuncts common to every branch of an OR are taken out of it: `(j AND x) OR (j AND y)` is `j AND (x OR
  y)` — distributivity, which holds in SQL's three-valued logic too (TPC-H Q19 repeats its join in each
  branch);
- a conjunct `[NOT] EXISTS (SELECT … WHERE inner.k = outer.k AND p)` whose subquery reads the outer block
  through that one equality is `outer.k IN (SELECT inner.k … WHERE p)` (for NOT EXISTS: `outer.k IS NULL OR
  NOT outer.k IN (… AND inner.k IS NOT NULL)`, which is never NULL either): a semi- or anti-join on an
  uncorrelated block (TPC-H Q4);
- the block of `x IN (SELECT c …)` is grouped by `c` (IN ignores duplicates): an aggregate layout answers
  it like any grouped block;
- a block over one lookup table T that only counts rows (`COUNT(*)`) and keeps those whose key is in the fact
  table F's foreign keys, `T.pk IN (SELECT F.fk FROM F WHERE q)` with F.fk = T.pk a model's join (`lookup_keys`),
  is the same count over F joined to T: `COUNT(DISTINCT F.fk) FROM F JOIN T ON F.fk = T.pk WHERE p AND q` (TPC-H
  Q4, whose layout then holds T's columns and a bitmap of F.fk instead of every F.fk). Why: a T row counted by
  the block is one whose key k is non-NULL, is some F row's key with q, and whose own columns satisfy p and
  fall in the group. When T's key is unique, that T row is the only one with key k, so the rows counted in a
  group are one per such k: exactly the distinct F.fk the join keeps in that group (a join row pairs an F row
  with q to the one T row of its key, and p and the group read only T's columns; a NULL key joins nothing and
  COUNT(DISTINCT) skips it). With a duplicate key the block counts each T row and the join each key once, so
  the reshaped block asks matching to prove T's key unique in every segment it scans (`UNIQUE_KEY`, `join_proof`:
  the build's join statistics); an orphan F row is no T row, so the proof also asks for none (the INNER join
  drops it; a layout built with a LEFT join holds it). No proof, no layout: the statement as written is pushed
  down.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.scope import traverse_scope

from precube.metadata import Model
from precube.query.contexts import own_nodes

# (fact DB.TABLE, its foreign key column, lookup DB.TABLE, the lookup's key column), upper case: a model's
# one-column join of a lookup to its fact table
LookupKey = tuple[str, str, str, str]
UNIQUE_KEY = "precube_unique_key"  # meta key of a block counting a lookup's keys: its alias, whose key must be unique


def lookup_keys(models: Iterable[Model]) -> frozenset[LookupKey]:
    """The one-column joins of a lookup to the fact table of each model."""
    found = set()
    for model in models:
        root = model.root_alias.upper()
        for jt in model.join_tables:
            fks, pks = jt.join.foreign_key, jt.join.primary_key
            if len(fks) == 1 and fks[0].split(".", 1)[0].upper() == root:
                fk, pk = fks[0].split(".", 1)[1], pks[0].split(".", 1)[1]
                found.add((model.fact_table.upper(), fk.upper(), jt.table.upper(), pk.upper()))
    return frozenset(found)


def reshaped(tree: exp.Query, keys: frozenset[LookupKey] = frozenset()) -> exp.Query:
    """A reshaped copy of the qualified `tree` (`frontend.normalise`); `tree` itself when no rule can apply.
    `keys`: the models' lookup joins (`lookup_keys`), for counted semi-joins."""
    return reshape(tree.copy(), keys) if tree.find(exp.Subquery, exp.CTE, exp.Or, exp.Exists) is not None else tree


def reshape(tree: exp.Query, keys: frozenset[LookupKey] = frozenset()) -> exp.Query:
    """`tree` reshaped in place (module docstring); a qualified tree (`frontend.normalise`)."""
    if tree.find(exp.Subquery, exp.CTE) is not None and _derived_tables_alone(tree):
        with contextlib.suppress(OptimizeError):  # a shape sqlglot does not merge: left as it is
            tree = merge_subqueries(tree)
    for select in list(tree.find_all(exp.Select)):
        where = select.args.get("where")
        if where is not None:
            where.set("this", _conjuncts_factored(where.this))
    for select in list(tree.find_all(exp.Select)):
        where = select.args.get("where")
        if where is not None:
            where.set("this", exp.and_(*(_semi_join(c) for c in _conjuncts(where.this))))
    for node in list(tree.find_all(exp.In)):
        query = node.args.get("query")
        if query is not None:
            _grouped(query.this)
    if keys:
        for select in list(tree.find_all(exp.Select)):
            _counted_semi_join(select, keys)
    return tree


def _derived_tables_alone(tree: exp.Query) -> bool:
    """Whether every derived table or CTE is the one source of the block that reads it: merged, it is that
    block's tables (a derived table joined to other tables would become a join condition with its filter,
    which `split_blocks` answers better)."""
    for scope in traverse_scope(tree):
        sources = scope.selected_sources
        if len(sources) > 1 and any(not isinstance(source, exp.Table) for _, source in sources.values()):
            return False
    return True


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


def _conjuncts_factored(condition: exp.Expr) -> exp.Expr:
    """`condition` with each OR among its conjuncts factored (`_factored`)."""
    parts = [_factored(o) if isinstance(o := c.unnest(), exp.Or) else c for c in _conjuncts(condition)]
    return exp.and_(*parts) if len(parts) > 1 else parts[0]


def _factored(disjunction: exp.Or) -> exp.Expr:
    """`(a AND x) OR (a AND y)` as `a AND (x OR y)`; as it is when the branches share no conjunct."""
    branches = [[c.unnest() for c in _conjuncts(b.unnest())] for b in disjunction.flatten()]
    texts = [[c.sql() for c in branch] for branch in branches]
    common = set(texts[0]).intersection(*map(set, texts[1:]))
    if not common:
        return disjunction
    shared = [node for text, node in dict(zip(texts[0], branches[0], strict=True)).items() if text in common]
    rests = [
        [c for c, t in zip(branch, text, strict=True) if t not in common]
        for branch, text in zip(branches, texts, strict=True)
    ]
    if any(not rest for rest in rests):  # a branch holds nothing more: the OR is true wherever the rest holds
        return exp.and_(*(s.copy() for s in shared))
    either = exp.or_(*(exp.paren(exp.and_(*(c.copy() for c in rest)), copy=False) for rest in rests))
    return exp.and_(*(s.copy() for s in shared), exp.paren(either, copy=False))


def _semi_join(conjunct: exp.Expr) -> exp.Expr:
    """A conjunct `[NOT] EXISTS` over one correlating equality as an uncorrelated `[NOT] IN`; else as it is."""
    node = conjunct.unnest()
    negated = isinstance(node, exp.Not)
    exists = node.this.unnest() if negated else node
    if not isinstance(exists, exp.Exists) or not isinstance(exists.this, exp.Select):
        return conjunct
    inner = exists.this
    scope = next((s for s in traverse_scope(inner) if s.expression is inner), None)
    if scope is None or any(inner.args.get(k) for k in ("group", "having", "limit", "distinct", "with_")):
        return conjunct
    if inner.find(exp.AggFunc) is not None or inner.args.get("where") is None:
        return conjunct
    own = set(scope.selected_sources)
    correlating, rest = [], []
    for part in _conjuncts(inner.args["where"].this):
        tables = {c.table for c in part.find_all(exp.Column)}
        if tables <= own:
            rest.append(part)
            continue
        eq = part.unnest()
        if isinstance(eq, exp.EQ) and isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Column):
            sides = sorted((eq.this, eq.expression), key=lambda c: c.table in own)
            if sides[0].table not in own and sides[1].table in own:
                correlating.append((sides[0], sides[1]))
                continue
        return conjunct  # another reference to the outer block
    if len(correlating) != 1 or any(s is not inner for s in inner.find_all(exp.Select)):
        return conjunct  # (a nested subquery might read the outer block too)
    outer, key = correlating[0]
    kept = [*rest, exp.Not(this=exp.Is(this=key.copy(), expression=exp.Null()))] if negated else rest
    subquery = exp.select(key.copy()).from_(inner.args["from_"].copy())
    subquery.set("joins", [j.copy() for j in inner.args.get("joins") or []] or None)
    if kept:
        subquery = subquery.where(exp.and_(*(k.copy() for k in kept)), copy=False)
    member = exp.In(this=outer.copy(), query=exp.Subquery(this=_grouped(subquery)))
    if not negated:
        return member
    return exp.paren(exp.or_(exp.Is(this=outer.copy(), expression=exp.Null()), exp.Not(this=member)), copy=False)


def _grouped(query: exp.Expr) -> exp.Expr:
    """The block of an IN subquery grouped by the one column it selects (when it neither groups nor
    aggregates nor limits)."""
    if not isinstance(query, exp.Select) or len(query.expressions) != 1:
        return query
    if any(query.args.get(k) for k in ("group", "having", "limit", "distinct", "order")):
        return query
    selected = query.expressions[0]
    value = selected.this if isinstance(selected, exp.Alias) else selected
    if value.find(exp.AggFunc, exp.Window) is not None or isinstance(value, exp.Star):
        return query
    return query.group_by(value.copy(), copy=False)


def _counted_semi_join(select: exp.Select, keys: frozenset[LookupKey]) -> None:
    """The block, changed in place, as a count of distinct foreign keys over the fact joined to the lookup it
    counts (module docstring); as it is when it is not that shape."""
    source = select.args.get("from_")
    lookup = source.this if source is not None else None
    where = select.args.get("where")
    if not isinstance(lookup, exp.Table) or where is None or select.args.get("joins") or select.args.get("distinct"):
        return
    alias = lookup.alias_or_name
    nodes = list(own_nodes(select))
    counts = [n for n in nodes if isinstance(n, exp.AggFunc)]
    if not counts or any(not (isinstance(c, exp.Count) and isinstance(c.this, exp.Star)) for c in counts):
        return  # only COUNT(*): another aggregate would read the lookup's rows, which the join repeats
    if any(isinstance(n, (exp.Window, exp.Filter)) for n in nodes) or any(
        c.table not in ("", alias) for c in nodes if isinstance(c, exp.Column)
    ):
        return
    if len(list(select.find_all(exp.Subquery))) != 1:
        return  # (another subquery might read the lookup's rows)
    conjuncts = _conjuncts(where.this)
    found = [(i, m) for i, c in enumerate(conjuncts) if (m := _fact_keys(c.unnest(), lookup, keys)) is not None]
    if len(found) != 1:
        return
    i, (member, fact, fk) = found[0]
    if fact.alias_or_name == alias:
        return
    inner = member.args["query"].this.args.get("where")
    rest = [*conjuncts[:i], *([inner.this.copy()] if inner is not None else []), *conjuncts[i + 1 :]]
    on = exp.EQ(this=fk.copy(), expression=member.this.copy())
    select.set("joins", [exp.Join(this=lookup.copy(), on=on)])
    select.set("from_", exp.From(this=fact.copy()))
    select.set("where", exp.Where(this=exp.and_(*(r.copy() for r in rest))) if rest else None)
    for count in counts:
        count.replace(exp.Count(this=exp.Distinct(expressions=[fk.copy()])))
    select.meta[UNIQUE_KEY] = alias


def _fact_keys(
    node: exp.Expr, lookup: exp.Table, keys: frozenset[LookupKey]
) -> tuple[exp.In, exp.Table, exp.Column] | None:
    """`lookup.pk IN (SELECT fact.fk FROM fact [WHERE q] [GROUP BY fact.fk])` over a model's join: the IN, the
    fact table and its key column; else None."""
    query = node.args.get("query") if isinstance(node, exp.In) else None
    inner = query.this if isinstance(query, exp.Subquery) else None
    if not isinstance(node, exp.In) or not isinstance(inner, exp.Select) or not isinstance(node.this, exp.Column):
        return None
    source = inner.args.get("from_")
    fact = source.this if source is not None else None
    if not isinstance(fact, exp.Table) or inner.args.get("joins") or len(inner.expressions) != 1:
        return None
    if any(inner.args.get(k) for k in ("having", "limit", "offset", "distinct", "order", "with_")):
        return None
    selected = inner.expressions[0]
    fk = selected.this if isinstance(selected, exp.Alias) else selected
    group = inner.args.get("group")
    if not isinstance(fk, exp.Column) or (group is not None and [g.sql() for g in group.expressions] != [fk.sql()]):
        return None
    if any(isinstance(n, (exp.AggFunc, exp.Subquery, exp.Query)) for n in own_nodes(inner)):
        return None
    if any(c.table != fact.alias_or_name for c in inner.find_all(exp.Column)):
        return None  # (it reads the outer block: correlated)
    if node.this.table != lookup.alias_or_name:
        return None
    key = (
        f"{fact.db}.{fact.name}".upper(),
        fk.name.upper(),
        f"{lookup.db}.{lookup.name}".upper(),
        node.this.name.upper(),
    )
    return (node, fact, fk) if key in keys else None
