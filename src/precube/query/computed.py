"""Computed columns on the source tables: a query may name a model's computed column as a column of its
fact table (the catalog lists it, hidden from `*`); a statement pushed down to the source tables, which
lack it, reads its expression instead (as Kylin's pushdown does).
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from precube.metadata import Model
from precube.query.frontend import DIALECT

Expressions = dict[tuple[str, str], tuple[str, exp.Expr]]  # (DB.TABLE, COLUMN) → (model alias, expression)


def computed_expressions(models: Iterable[Model]) -> Expressions:
    """Each computed column's expression over its table's model alias; a name two models define
    differently has none (a query naming it is ambiguous, so the source tables cannot answer it)."""
    found: Expressions = {}
    clashes = set()
    for model in models:
        for cc in model.computed_columns:
            key = (cc.table_identity.upper(), cc.column_name.upper())
            parsed = sqlglot.parse_one(cc.expression, read=DIALECT)
            alias = cc.table_alias.upper()
            if key in found and (found[key][0], found[key][1].sql()) != (alias, parsed.sql()):
                clashes.add(key)
            found.setdefault(key, (alias, parsed))
    return {k: v for k, v in found.items() if k not in clashes}


def inline_computed(tree: exp.Query, computed: Expressions, real: dict[str, frozenset[str]]) -> exp.Query:
    """`tree` (qualified), changed in place: each column that is a computed column of its table, and no
    real column of it (`real`: DB.TABLE → its column names, lower case), becomes the column's expression
    over the same table alias."""
    if not computed:
        return tree
    for scope in traverse_scope(tree):
        for col in scope.columns:
            source = scope.sources.get(col.table)
            if not isinstance(source, exp.Table):
                continue
            identity = f"{source.db}.{source.name}".upper()
            found = computed.get((identity, col.name.upper()))
            if found is None or col.name.lower() in real.get(identity, frozenset()):
                continue
            alias, expression = found
            inlined = expression.copy()
            for ref in list(inlined.find_all(exp.Column)):
                if ref.table.upper() != alias:
                    break  # a column of another table: not expressible over this one
                ref.replace(exp.column(ref.name.lower(), col.table))
            else:
                col.replace(exp.Paren(this=inlined))
    return tree
