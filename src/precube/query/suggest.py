"""`precube model suggest`: a model spec proposed from a project's tables and, optionally, the queries users will
ask, written as commented YAML that `precube model create` takes unchanged.

The queries are the strongest evidence: their joins (ON and WHERE equalities between two tables, several on one
pair of aliases making a composite key, a table under two aliases making two lookups) give the joins, rooted at
the table their FROM names most often; the columns they group and filter by give the dimensions; an aggregate of
an expression gives a computed column. Without queries the joins come from the data (`table_profile`): a column
is a foreign key of a lookup's column that is unique in the sample when at least `MIN_FOUND` of its distinct values
are found there and the names agree (same last word, or both dates); a lookup without a unique column is joined on
a pair of columns unique together that the fact has by name. Every join is LEFT (orphan keys keep their rows).

The rest follows Kylin's habits: the partition column is a date or timestamp column of the fact (or an integer or
string one whose values read as dates); SUM of the fact's numeric non-key columns and COUNT(*); then `recommend`
(the query path's own matching) adds the measures the queries need (COUNT DISTINCT as exact bitmaps, MIN, MAX)
and one aggregation group per distinct need, so that one build answers them from layouts.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sqlglot
import yaml
from sqlglot import exp

from precube.metadata import (
    Dataflow,
    DataflowStatus,
    IndexPlan,
    Join,
    JoinTable,
    JoinType,
    Parameter,
    ParameterType,
    PartitionDesc,
    SourceType,
)
from precube.metadata.datatypes import TypeFamily
from precube.modeling import partition_format as pf
from precube.modeling.model_rules import build_model
from precube.modeling.model_spec import ComputedColumnSpec, DimensionSpec, MeasureSpec, ModelSpec
from precube.query.errors import QueryError, UnknownTableError
from precube.query.frontend import DIALECT, normalise
from precube.query.project_metadata import ModelMetadata, ProjectMetadata
from precube.query.recommend import recommend
from precube.query.table_profile import Profiler

MIN_FOUND = 0.9  # of a foreign key's distinct values found in the lookup's key, without a query naming the join
MAX_DIMENSION_CARDINALITY = 10_000  # a column with more distinct values (in the sample) is no dimension by default
_PERCENTILES = (exp.PercentileCont, exp.PercentileDisc, exp.ApproxQuantile, exp.Quantile, exp.Median)


@dataclass
class Suggestion:
    spec: ModelSpec
    why: dict[str, str] = field(default_factory=dict)  # `join:ALIAS`, `dim:ALIAS.COLUMN`, … → why it was chosen
    notes: list[str] = field(default_factory=list)  # what the user should know (unanswered queries)

    def to_yaml(self) -> str:
        return render(self)


@dataclass(frozen=True)
class _Edge:
    """An equi-join seen in a query: `left` alias's columns = `right` alias's columns."""

    left: str
    left_cols: tuple[str, ...]
    right: str
    right_cols: tuple[str, ...]


@dataclass
class _Evidence:
    """What the queries say, with each query alias resolved to its table."""

    roots: Counter[str] = field(default_factory=Counter)  # table identity of each block's first FROM table
    # per query block: alias → table, and the edges between its aliases
    blocks: list[tuple[dict[str, str], list[_Edge]]] = field(default_factory=list)
    dims: list[tuple[int, str, str]] = field(default_factory=list)  # (block, alias, column) read outside aggregates
    aggregated: list[tuple[int, exp.Expr]] = field(default_factory=list)  # (block, argument of SUM/AVG/…)
    percentiles: list[tuple[int, exp.Column]] = field(default_factory=list)
    approx_distinct: list[tuple[int, exp.Column]] = field(default_factory=list)
    # (block, the summed column, the group key, the LIMIT) of `… GROUP BY k ORDER BY SUM(v) DESC LIMIT n`
    top_n: list[tuple[int, exp.Column, exp.Column, int]] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def suggest(
    metadata: ProjectMetadata,
    statements: Iterable[str] = (),
    fact: str | None = None,
    alias: str | None = None,
    sample_rows: int = 100_000,
) -> Suggestion:
    """A model spec for the project's tables (`metadata.tables`) and the statements it should answer."""
    evidence = _read_queries(metadata, list(statements))
    used = {i for i, t in metadata.tables.items() if t.source_type in (SourceType.PARQUET, SourceType.CSV)}
    if evidence.blocks:  # (a table DuckDB cannot read fails with the reason: `table_profile`)
        used = {t for tables, _ in evidence.blocks for t in tables.values()}
    if fact is not None:
        fact = _identity(metadata, fact)
        used.add(fact)
    profiler = Profiler([metadata.tables[t] for t in sorted(used)], sample_rows)
    try:
        return _Suggester(metadata, profiler, evidence).run(fact, alias)
    finally:
        profiler.close()


def _identity(metadata: ProjectMetadata, name: str) -> str:
    upper = name.upper()
    found = upper if "." in upper else f"{metadata.default_database.upper()}.{upper}"
    if found not in metadata.tables:
        raise UnknownTableError(f"table {name} is not loaded in project {metadata.project}")
    return found


def _read_queries(metadata: ProjectMetadata, statements: list[str]) -> _Evidence:
    found = _Evidence(statements=statements)
    for sql in statements:
        try:
            tree = normalise(sql, metadata.catalog)
        except (QueryError, sqlglot.errors.SqlglotError) as err:
            found.unreadable.append((sql, str(err).splitlines()[0]))
            continue
        for select in tree.find_all(exp.Select):
            tables = {
                t.alias_or_name: f"{t.db}.{t.name}".upper()
                for t in select.find_all(exp.Table)
                if t.parent_select is select and t.db
            }
            if not tables:
                continue
            block = len(found.blocks)
            first = select.args.get("from_") or select.args.get("from")
            if first is not None and isinstance(first.this, exp.Table) and first.this.alias_or_name in tables:
                found.roots[tables[first.this.alias_or_name]] += 1
            edges: list[_Edge] = []
            join_columns: set[int] = set()  # (a join key is no dimension for being joined on)
            conditions = [j.args.get("on") for j in select.args.get("joins") or []]
            where = select.args.get("where")
            for condition in [*conditions, where.this if where is not None else None]:
                if condition is not None:
                    edges += _equalities(condition, tables, join_columns)
            found.blocks.append((tables, _merged(edges)))
            for col in select.find_all(exp.Column):
                if col.table not in tables or id(col) in join_columns or col.find_ancestor(exp.Select) is not select:
                    continue
                call = col.find_ancestor(exp.AggFunc)
                if call is None:
                    found.dims.append((block, col.table, col.name.upper()))
            for call in select.find_all(exp.AggFunc):
                if call.find_ancestor(exp.Select) is not select:
                    continue
                if isinstance(call, _PERCENTILES) and isinstance(call.this, exp.Column):
                    found.percentiles.append((block, call.this))
                elif isinstance(call, exp.ApproxDistinct) and isinstance(call.this, exp.Column):
                    found.approx_distinct.append((block, call.this))
                elif isinstance(call, (exp.Sum, exp.Avg, exp.Min, exp.Max)) and call.this is not None:
                    found.aggregated.append((block, call.this))
            top = _top_n(select)
            if top is not None:
                found.top_n.append((block, *top))
    return found


def _top_n(select: exp.Select) -> tuple[exp.Column, exp.Column, int] | None:
    """(v, k, n) of `SELECT k, SUM(v) … GROUP BY k … ORDER BY SUM(v) DESC LIMIT n` (`topn`'s shape)."""
    group, order, limit = select.args.get("group"), select.args.get("order"), select.args.get("limit")
    if group is None or order is None or limit is None or not order.expressions:
        return None
    first = order.expressions[0]
    key = group.expressions[0] if group.expressions else None
    sums = {o.alias_or_name.lower(): o.unalias() for o in select.expressions}
    by = first.this
    if isinstance(by, exp.Column) and not by.table:
        by = sums.get(by.name.lower(), by)
    value = limit.expression
    if not (first.args.get("desc") and isinstance(by, exp.Sum) and isinstance(by.this, exp.Column)):
        return None
    if not isinstance(key, exp.Column) or not isinstance(value, exp.Literal) or value.is_string:
        return None
    return by.this, key, int(value.this)


def _equalities(condition: exp.Expr, tables: dict[str, str], columns: set[int]) -> list[_Edge]:
    """The column = column equalities under ANDs between two of the block's aliases (their columns' ids are
    added to `columns`)."""
    found = []
    stack = [condition]
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.And, exp.Paren)):
            stack.extend(reversed(list(node.iter_expressions())))  # (a composite key's columns in written order)
        elif isinstance(node, exp.EQ) and isinstance(node.this, exp.Column) and isinstance(node.expression, exp.Column):
            a, b = node.this, node.expression
            if a.table in tables and b.table in tables and a.table != b.table:
                found.append(_Edge(a.table, (a.name.upper(),), b.table, (b.name.upper(),)))
                columns |= {id(a), id(b)}
    return found


def _merged(edges: list[_Edge]) -> list[_Edge]:
    """Equalities between the same two aliases as one edge of several columns (a composite key)."""
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for e in edges:
        a, b = sorted((e.left, e.right))
        cols = (e.left_cols[0], e.right_cols[0]) if a == e.left else (e.right_cols[0], e.left_cols[0])
        if cols not in pairs.setdefault((a, b), []):
            pairs[(a, b)].append(cols)
    return [_Edge(a, tuple(x for x, _ in c), b, tuple(y for _, y in c)) for (a, b), c in pairs.items()]


def _key_like(name: str) -> bool:
    """Named as an id or key is (`LO_ORDERKEY`, `BUYER_ID`, `ORDER_NO`)."""
    return name.upper().endswith(("KEY", "_ID", "_NO", "_CODE")) or name.upper() in ("ID", "KEY", "CODE")


def _last_word(name: str) -> str:
    return name.rsplit("_", 1)[-1]


_Candidate = tuple[str, tuple[str, ...], str, tuple[str, ...], int, int]


@dataclass
class _Lookup:
    alias: str
    table: str
    parent: str  # model alias the foreign key is on
    fk: tuple[str, ...]
    pk: tuple[str, ...]


class _Suggester:
    def __init__(self, metadata: ProjectMetadata, profiler: Profiler, evidence: _Evidence) -> None:
        self.metadata, self.profiler, self.evidence = metadata, profiler, evidence
        self.why: dict[str, str] = {}
        self.notes: list[str] = []
        self.aliases: list[dict[str, str]] = []  # per query block: query alias → model alias
        self._edges: list[_Candidate] | None = None

    # -- joins ---------------------------------------------------------------------------------------------

    def _fact(self, fact: str | None) -> tuple[str, str]:
        if fact is not None:
            return fact, "given with --fact"
        if self.evidence.roots:
            table, n = self.evidence.roots.most_common(1)[0]
            return table, f"the FROM table of {n} of the queries' blocks"
        referencing = {e[0] for e in self._data_edges()}
        candidates = referencing or set(self.profiler.profiles)
        table = max(candidates, key=lambda t: self.profiler.profiles[t].rows)
        rows = self.profiler.profiles[table].rows
        return table, f"the table with the most rows ({rows:,}) that references others"

    def _query_lookups(self, fact: str, fact_alias: str) -> list[_Lookup]:
        """The lookups the queries join, found from each block's fact alias outwards; one model alias per
        distinct join path (the query's alias when it is not the table's name)."""
        lookups: list[_Lookup] = []
        by_path: dict[tuple[str, tuple[str, ...], str, tuple[str, ...]], _Lookup] = {}
        taken = {fact_alias}
        for tables, edges in self.evidence.blocks:
            mapping: dict[str, str] = {}
            roots = [a for a, t in tables.items() if t == fact]
            if not roots:
                self.aliases.append(mapping)
                continue
            mapping[roots[0]] = fact_alias
            frontier = [roots[0]]
            while frontier:
                here = frontier.pop(0)
                for e in edges:
                    if here not in (e.left, e.right):
                        continue
                    there = e.right if e.left == here else e.left
                    if there in mapping:
                        continue
                    fk, pk = (e.left_cols, e.right_cols) if e.left == here else (e.right_cols, e.left_cols)
                    key = (mapping[here], fk, tables[there], pk)
                    if key not in by_path:
                        table_name = tables[there].split(".", 1)[1]
                        # a descriptive alias (`BUYER_ACCOUNT`) names the lookup, an abbreviation (`c`) does not
                        wanted = there.upper() if len(there) > 3 else table_name
                        name = self._fresh(wanted, fk, table_name, taken)
                        by_path[key] = _Lookup(name, tables[there], mapping[here], fk, pk)
                        lookups.append(by_path[key])
                    mapping[there] = by_path[key].alias
                    frontier.append(there)
            self.aliases.append(mapping)
        return lookups

    @staticmethod
    def _fresh(wanted: str, fk: tuple[str, ...], table_name: str, taken: set[str]) -> str:
        """`wanted`, or when taken (the table's second join) one named after its foreign key (`BUYER_ID` →
        `BUYER_ACCOUNT`)."""
        candidates = [wanted]
        words = fk[0].split("_")
        # `BUYER_ID` → BUYER; `LO_COMMITDATE` → COMMITDATE (a short first word is the table's prefix)
        stem = "_".join(words[1:] if len(words) > 1 and len(words[0]) <= 3 else words[:-1] or words)
        candidates += [f"{stem}_{table_name}", f"{fk[0]}_{table_name}"]
        candidates += [f"{table_name}_{n}" for n in range(2, 100)]
        name = next(c for c in candidates if c.upper() not in taken)
        taken.add(name.upper())
        return name

    def _data_edges(self) -> list[_Candidate]:
        """Join candidates from the data: (table, columns, lookup, key columns, distinct values, found)."""
        if self._edges is not None:
            return self._edges
        profiles = self.profiler.profiles
        keys: dict[str, list[tuple[str, ...]]] = {}
        for t, p in profiles.items():
            single: list[tuple[str, ...]] = [
                (c,) for c, cp in p.columns.items() if p.unique(c) and cp.family is not TypeFamily.FLOAT
            ]
            keys[t] = single
            if not single:  # a composite key: a pair of columns unique together
                cols = [c for c, cp in p.columns.items() if cp.family is not TypeFamily.FLOAT][:12]
                keys[t] = [
                    (a, b)
                    for i, a in enumerate(cols)
                    for b in cols[i + 1 :]
                    if self.profiler.unique_together(t, [a, b])
                ]
        found: list[_Candidate] = []
        for t, p in profiles.items():
            for lookup, pks in keys.items():
                if lookup == t:
                    continue
                for pk in pks:
                    for fk in self._fk_candidates(t, pk, lookup):
                        if len(fk) == 1 and p.unique(fk[0]):
                            continue  # one-to-one: two tables' keys, no lookup
                        n, hit = self.profiler.found(t, list(fk), lookup, list(pk))
                        if n and hit / n >= MIN_FOUND:
                            found.append((t, fk, lookup, pk, n, hit))
        # a column references one lookup key at most: the one holding most of its values
        best: dict[tuple[str, tuple[str, ...]], _Candidate] = {}
        for e in found:
            k = (e[0], e[1])
            if k not in best or e[5] / e[4] > best[k][5] / best[k][4]:
                best[k] = e
        self._edges = list(best.values())
        return self._edges

    def _fk_candidates(self, table: str, pk: tuple[str, ...], lookup: str) -> list[tuple[str, ...]]:
        """The columns (tuples) of `table` whose names and types agree with the lookup key `pk`."""
        cols = self.profiler.profiles[table].columns
        key_cols = self.profiler.profiles[lookup].columns

        def agree(c: str, k: str) -> bool:
            a, b = cols[c].family, key_cols[k].family
            if a is TypeFamily.FLOAT or b is TypeFamily.FLOAT:
                return False
            if a is TypeFamily.DATE and b is TypeFamily.DATE:
                return True  # a date column of a date lookup, whatever their names
            compatible = a is b or {a, b} <= {TypeFamily.INTEGER, TypeFamily.STRING}
            return compatible and (c == k or _last_word(c) == _last_word(k))

        options = [[c for c in cols if agree(c, k)] for k in pk]
        if len(pk) == 1:
            return [(c,) for c in options[0]]
        # a composite key: columns of the same names (or last words) per key column, one choice each
        pairs: list[tuple[str, ...]] = [(a, b) for a in options[0] for b in options[1] if a != b]
        return pairs[:4]

    def _data_lookups(self, fact: str, fact_alias: str) -> list[_Lookup]:
        """The lookups the data suggests, from the fact outwards (a snowflake's lookups of lookups too)."""
        edges = self._data_edges()
        lookups: list[_Lookup] = []
        taken = {fact_alias}
        # (table, its alias, the tables on the way there, its key columns: equal to its parent's, so joining
        # a lookup on them again adds nothing)
        frontier: list[tuple[str, str, frozenset[str], tuple[str, ...]]] = [(fact, fact_alias, frozenset({fact}), ())]
        while frontier:
            table, here, path, joined_on = frontier.pop(0)
            for t, fk, lookup, pk, _, _ in sorted(edges, key=lambda e: e[1]):
                if t != table or lookup in path or set(fk) <= set(joined_on):
                    continue
                name = self._fresh(lookup.split(".", 1)[1], fk, lookup.split(".", 1)[1], taken)
                lookups.append(_Lookup(name, lookup, here, fk, pk))
                frontier.append((lookup, name, path | {lookup}, pk))
        return lookups

    def _join_why(self, parent_table: str, lk: _Lookup) -> str:
        n, hit = self.profiler.found(parent_table, list(lk.fk), lk.table, list(lk.pk))
        unique = (
            self.profiler.profiles[lk.table].unique(lk.pk[0])
            if len(lk.pk) == 1
            else self.profiler.unique_together(lk.table, list(lk.pk))
        )
        parts = ["composite key" if len(lk.pk) > 1 else "key"]
        parts[0] += " unique in sample" if unique else " NOT unique in sample: duplicates multiply fact rows"
        orphans = 100 * (n - hit) / n if n else 0.0
        parts.append(f"orphan keys {orphans:.0f} % — LEFT join" if orphans else "no orphan keys in sample — LEFT join")
        nulls = self.profiler.profiles[parent_table].columns[lk.fk[0]]
        sampled = self.profiler.profiles[parent_table].sampled
        if nulls.non_null < sampled:
            parts.append(f"{100 * (sampled - nulls.non_null) / sampled:.0f} % NULL keys")
        return "; ".join(parts)

    # -- the spec ------------------------------------------------------------------------------------------

    def run(self, fact: str | None, alias: str | None) -> Suggestion:
        fact, fact_why = self._fact(fact)
        fact_alias = fact.split(".", 1)[1]
        lookups = (
            self._query_lookups(fact, fact_alias) if self.evidence.blocks else self._data_lookups(fact, fact_alias)
        )
        self._rename_clashes(fact, fact_alias, lookups)
        tables_of = {fact_alias: fact, **{lk.alias: lk.table for lk in lookups}}
        spec = ModelSpec(
            alias=alias or fact_alias.lower(),
            description="suggested by precube model suggest",
            fact_table=fact,
            join_tables=[
                JoinTable(
                    table=lk.table,
                    alias=lk.alias,
                    join=Join(
                        type=JoinType.LEFT,
                        foreign_key=[f"{lk.parent}.{c}" for c in lk.fk],
                        primary_key=[f"{lk.alias}.{c}" for c in lk.pk],
                    ),
                )
                for lk in lookups
            ],
        )
        self.why["fact_table"] = fact_why
        for lk in lookups:
            self.why[f"join:{lk.alias}"] = self._join_why(tables_of[lk.parent], lk)
        keys = {(lk.parent, c) for lk in lookups for c in lk.fk} | {(lk.alias, c) for lk in lookups for c in lk.pk}
        spec.partition_desc = self._partition(fact, fact_alias)
        spec.computed_columns = self._computed(fact_alias)
        spec.simplified_dimensions = self._dimensions(tables_of, keys, spec)
        spec.simplified_measures = self._measures(fact, fact_alias, keys, spec)
        return self._with_recommendation(spec)

    def _rename_clashes(self, fact: str, fact_alias: str, lookups: list[_Lookup]) -> None:
        """Rename a lookup whose `ALIAS_COLUMN` names (the model's names of a column several tables have) would
        be another column's name (`ORIGIN.AIRPORT` and the fact's `ORIGIN_AIRPORT`) to `ALIAS_TABLE`."""
        while True:
            tables = {fact_alias: fact, **{lk.alias: lk.table for lk in lookups}}
            columns = {a: [c.name for c in self.metadata.tables[t].columns] for a, t in tables.items()}
            counts = Counter(c for cols in columns.values() for c in cols)
            plain = set(counts)
            clash = next(
                (lk for lk in lookups for c in columns[lk.alias] if counts[c] > 1 and f"{lk.alias}_{c}" in plain),
                None,
            )
            if clash is None:
                return
            old, new = clash.alias, f"{clash.alias}_{clash.table.split('.', 1)[1]}"
            for lk in lookups:
                lk.alias = new if lk.alias == old else lk.alias
                lk.parent = new if lk.parent == old else lk.parent
            for mapping in self.aliases:
                for k, v in mapping.items():
                    mapping[k] = new if v == old else v

    def _partition(self, fact: str, alias: str) -> PartitionDesc | None:
        profile = self.profiler.profiles[fact]
        dates = [c for c in profile.columns.values() if c.family in (TypeFamily.DATE, TypeFamily.TIMESTAMP)]
        queried = {col for _, a, col in self.evidence.dims}
        if dates:
            c = max(dates, key=lambda c: (c.name in queried, c.family is TypeFamily.DATE, -len(c.name)))
            fmt = pf.YMD_DASH if c.family is TypeFamily.DATE else pf.YMD_HMS
            self.why["partition"] = f"{c.datatype} column of the fact"
            return PartitionDesc(partition_date_column=f"{alias}.{c.name}", partition_date_format=fmt)
        for c in profile.columns.values():
            parsed = _date_format(c.low, c.high, c.family)
            if parsed is not None and c.non_null == profile.sampled:
                self.why["partition"] = f"{c.datatype} column whose values read as {parsed} ({c.low} … {c.high})"
                return PartitionDesc(partition_date_column=f"{alias}.{c.name}", partition_date_format=parsed)
        self.notes.append("no date column on the fact: the model is built whole (one segment, no partition)")
        return None

    def _computed(self, fact_alias: str) -> list[ComputedColumnSpec]:
        """A computed column per aggregated expression of the fact's columns (`sum(a * b)`)."""
        found: dict[str, ComputedColumnSpec] = {}
        for block, arg in self.evidence.aggregated:
            if isinstance(arg, exp.Column) or not list(arg.find_all(exp.Column)):
                continue
            mapping = self.aliases[block] if block < len(self.aliases) else {}
            copy = arg.copy()
            ok = True
            for col in copy.find_all(exp.Column):
                if mapping.get(col.table) != fact_alias:
                    ok = False
                col.replace(exp.column(col.name.upper(), mapping.get(col.table, col.table).upper()))
            text = copy.sql(dialect=DIALECT)
            if not ok or text in found:
                continue
            words = [c.name.upper() for c in copy.find_all(exp.Column)]
            name = re.sub(r"[^A-Z0-9_]", "", "_".join(dict.fromkeys(words)))[:60] or "CC"
            name = f"CC_{name}"
            found[text] = ComputedColumnSpec(column_name=name, expression=text)
            self.why[f"cc:{name}"] = f"the queries aggregate {arg.sql(dialect=DIALECT)}"
        return list(found.values())

    def _dimensions(
        self, tables_of: dict[str, str], keys: set[tuple[str, str]], spec: ModelSpec
    ) -> list[DimensionSpec]:
        refs: dict[str, str] = {}
        for block, alias, col in self.evidence.dims:
            mapping = self.aliases[block] if block < len(self.aliases) else {}
            if alias in mapping:
                refs.setdefault(f"{mapping[alias]}.{col}", "the queries group or filter by it")
        if not self.evidence.blocks:
            for a, t in tables_of.items():
                p = self.profiler.profiles[t]
                for c in p.columns.values():
                    if (a, c.name) in keys or c.family is TypeFamily.FLOAT:
                        continue
                    if t == spec.fact_table and c.family in (TypeFamily.INTEGER, TypeFamily.DECIMAL):
                        continue  # the fact's numbers are measures
                    if 0 < c.distinct <= MAX_DIMENSION_CARDINALITY:
                        refs.setdefault(f"{a}.{c.name}", f"{c.distinct:,} distinct values in sample")
        if spec.partition_desc is not None:
            refs.setdefault(spec.partition_desc.partition_date_column, "the partition column")
        names = Counter(r.split(".", 1)[1] for r in refs)
        dims = []
        for ref, why in refs.items():
            a, col = ref.split(".", 1)
            name = col if names[col] == 1 else f"{a}_{col}"
            dims.append(DimensionSpec(column=ref, name=None if name == col else name))
            self.why[f"dim:{ref}"] = why
        return dims

    def _measures(self, fact: str, alias: str, keys: set[tuple[str, str]], spec: ModelSpec) -> list[MeasureSpec]:
        measures = [MeasureSpec(name="COUNT_ALL", expression="COUNT")]
        self.why["measure:COUNT_ALL"] = "COUNT(*)"
        dims = {d.column for d in spec.simplified_dimensions}
        for c in self.profiler.profiles[fact].columns.values():
            numeric = c.family in (TypeFamily.INTEGER, TypeFamily.DECIMAL, TypeFamily.FLOAT)
            if not numeric or (alias, c.name) in keys or f"{alias}.{c.name}" in dims:
                continue
            if self.profiler.profiles[fact].unique(c.name) or _key_like(c.name):
                continue  # an id: no sum of it means anything
            name = f"SUM_{c.name}"
            measures.append(MeasureSpec(name=name, expression="SUM", column=f"{alias}.{c.name}"))
            self.why[f"measure:{name}"] = "numeric non-key column of the fact"
        seen: set[tuple[str, ...]] = set()

        def add(key: tuple[str, ...], measure: MeasureSpec, why: str) -> None:
            """A candidate measure, once per kind and columns."""
            if key not in seen:
                seen.add(key)
                measures.append(measure)
                self.why[f"measure:{measure.name}"] = why

        for block, col in self.evidence.approx_distinct:
            ref = self._ref(block, col)
            if ref is not None:
                name = f"APPROX_COUNT_DISTINCT_{col.name.upper()}"
                hll = MeasureSpec(name=name, expression="COUNT_DISTINCT", column=ref, return_type="hllc(14)")
                add(("hll", ref), hll, "the queries count its values approximately (an HLL sketch)")
        for block, value, key, n in self.evidence.top_n:
            ref, by = self._ref(block, value), self._ref(block, key)
            if ref is not None and by is not None:
                params = [
                    Parameter(type=ParameterType.COLUMN, value=ref),
                    Parameter(type=ParameterType.COLUMN, value=by),
                ]
                name = f"TOP_{key.name.upper()}_BY_{value.name.upper()}"
                capacity = 100 if n <= 100 else 1000
                top = MeasureSpec(
                    name=name, expression="TOP_N", parameter_value=params, return_type=f"topn({capacity})"
                )
                why = f"TOP_N candidate: a query asks the top {n} {key.name.upper()} by SUM({value.name.upper()})"
                add(("topn", ref, by), top, why)
        for block, col in self.evidence.percentiles:
            ref = self._ref(block, col)
            if ref is not None:
                name = f"PERCENTILE_{col.name.upper()}"
                pct = MeasureSpec(name=name, expression="PERCENTILE_APPROX", column=ref, return_type="percentile(100)")
                add(("percentile", ref), pct, "the queries ask a percentile of it")
        return measures

    def _ref(self, block: int, col: exp.Column) -> str | None:
        """A query block's column as the model's `ALIAS.COLUMN` (None: on no table of the model)."""
        mapping = self.aliases[block] if block < len(self.aliases) else {}
        return f"{mapping[col.table]}.{col.name.upper()}" if col.table in mapping else None

    def _with_recommendation(self, spec: ModelSpec) -> Suggestion:
        """The spec with the measures, computed columns and aggregation groups `recommend` finds for the queries;
        it is validated as `model create` will (`build_model`)."""
        model = build_model(spec, self.metadata.tables)
        if not self.evidence.statements:
            return Suggestion(spec, self.why, self.notes)
        m = ModelMetadata(
            model, IndexPlan(uuid=model.uuid), Dataflow(uuid=model.uuid, status=DataflowStatus.OFFLINE), []
        )
        meta = dataclasses.replace(self.metadata, models=[m])
        found = recommend(meta, spec.alias, self.evidence.statements)
        for x in found.measures:
            spec.simplified_measures.append(x)
            self.why[f"measure:{x.name}"] = "a query computes it"
        for cc in found.computed_columns:
            spec.computed_columns.append(cc)
            spec.simplified_dimensions.append(DimensionSpec(column=f"{model.root_alias}.{cc.column_name}"))
            self.why[f"cc:{cc.column_name}"] = "a query filters by it (a boolean dimension)"
        spec.aggregation_groups = found.groups
        spec.base_layout_enabled = False  # as `index recommend --apply`: each group answers its own queries
        for sql, why in found.skipped:
            self.notes.append(f"not answered from layouts: {' '.join(sql.split())[:100]} — {why}")
        for sql, why in self.evidence.unreadable:
            self.notes.append(f"unreadable query: {' '.join(sql.split())[:100]} — {why}")
        self.notes.append(f"{len(found.answered)} of {len(self.evidence.statements)} queries answered from layouts")
        build_model(spec, self.metadata.tables)  # what create will check
        return Suggestion(spec, self.why, self.notes)


def _date_format(low: Any, high: Any, family: TypeFamily) -> str | None:
    """yyyyMMdd for integers between 1900-01-01 and 2100-12-31, yyyy-MM-dd or yyyyMMdd for strings so shaped."""
    if family is TypeFamily.INTEGER and isinstance(low, int) and isinstance(high, int):
        ok = 19000101 <= low <= high <= 21001231 and _valid_ymd(str(low)) and _valid_ymd(str(high))
        return pf.YMD_INT if ok else None
    if family is TypeFamily.STRING and isinstance(low, str) and isinstance(high, str):
        for fmt, pattern in ((pf.YMD_DASH, r"\d{4}-\d{2}-\d{2}"), (pf.YMD_INT, r"\d{8}")):
            shaped = re.fullmatch(pattern, low) and re.fullmatch(pattern, high)
            if shaped and _valid_ymd(low.replace("-", "")) and _valid_ymd(high.replace("-", "")):
                return fmt
    return None


def _valid_ymd(text: str) -> bool:
    y, m, d = int(text[:4]), int(text[4:6]), int(text[6:8])
    return 1900 <= y <= 2100 and 1 <= m <= 12 and 1 <= d <= pf.days_in_month(y, m)


# -- YAML --------------------------------------------------------------------------------------------------


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000).strip()
    return text.removesuffix("...").strip()  # (a plain scalar's document end)


def render(s: Suggestion) -> str:
    """The spec as YAML with a comment on each choice."""
    spec = s.spec
    why = {k: " ".join(v.split()) for k, v in s.why.items()}  # (one line each: a comment ends at a line's end)
    data = spec.model_dump(mode="json", exclude_defaults=True)
    lines = ["# Suggested by `precube model suggest`: review it, then `precube model create` it."]
    lines += [f"# {' '.join(n.split())}" for n in s.notes]
    lines += [f"alias: {_flow(spec.alias)}", f"description: {_flow(spec.description)}"]
    lines += [f"# {why.get('fact_table', '')}", f"fact_table: {spec.fact_table}"]
    if data.get("join_tables"):
        lines.append("join_tables:")
        for jt in data["join_tables"]:
            lines += [f"  # {jt['alias']}: {why.get('join:' + jt['alias'], '')}", f"  - {_flow(jt)}"]
    if data.get("computed_columns"):
        lines.append("computed_columns:")
        for cc in data["computed_columns"]:
            lines += [f"  # {why.get('cc:' + cc['column_name'], '')}", f"  - {_flow(cc)}"]
    if spec.partition_desc is not None:
        lines += [f"# {why.get('partition', '')}", f"partition_desc: {_flow(data['partition_desc'])}"]
    lines.append("simplified_dimensions:")
    for d in data.get("simplified_dimensions", []):
        lines.append(f"  - {_flow(d)}  # {why.get('dim:' + d['column'], '')}")
    lines.append("simplified_measures:")
    for x in data.get("simplified_measures", []):
        lines.append(f"  - {_flow(x)}  # {why.get('measure:' + x['name'], '')}")
    if data.get("aggregation_groups"):
        lines.append("# one layout per distinct need of the queries (`precube index recommend`)")
        lines.append("aggregation_groups:")
        lines += [f"  - {_flow(g)}" for g in data["aggregation_groups"]]
        if spec.base_layout_enabled is False:
            lines.append("base_layout_enabled: false  # no layout of all the groups' dimensions: no query needs it")
    return "\n".join(lines) + "\n"
