"""Result column names as PostgreSQL gives them: its rule (`FigureColname` in `parse_target.c`) applied to the
statement as the client wrote it, for the wire's RowDescription only (REST and the DB-API keep Kylin's names).

An alias is the name, folded to lower case unless quoted; otherwise a column reference is its last name, a
function call its name (`count(*)` → `count`, `extract(…)` → `extract`, `trim(…)` → `btrim`), a cast its
operand's name or else its type's (`x::date` → `x`, `'1'::int` → `int4`), `CASE` its `ELSE`'s name or else
`case`, `coalesce`/`nullif`/`greatest`/`least`/`exists`/`array`/`row` those words, a scalar subquery its first
column's name, and anything else (a literal, an operator, a parameter) `?column?`. Duplicates stay duplicated.

sqlglot reads some functions as another's node (`mod(a, b)` as `a % b`, `ceiling` as `ceil`, `now()` as
`current_timestamp`): those are named by the node's name, the one gap with PostgreSQL."""

from __future__ import annotations

import re

from sqlglot import exp

UNNAMED = "?column?"
_CALL = re.compile(r"^([A-Za-z_]\w*)\s*\(")
_WORDS: dict[type[exp.Expr], str] = {
    exp.Coalesce: "coalesce",
    exp.Nullif: "nullif",
    exp.Greatest: "greatest",
    exp.Least: "least",
    exp.Exists: "exists",
    exp.Array: "array",
    exp.Interval: "interval",
    exp.CurrentDate: "current_date",
    exp.CurrentTimestamp: "current_timestamp",
    exp.CurrentTime: "current_time",
    exp.CurrentUser: "current_user",
    exp.SessionUser: "session_user",
    exp.CurrentSchema: "current_schema",
    exp.CurrentSchemas: "current_schemas",
    exp.CurrentDatabase: "current_database",
    exp.CurrentCatalog: "current_catalog",
}
_NOT_NAMES = (exp.Literal, exp.Boolean, exp.Null, exp.Neg, exp.Parameter, exp.Placeholder, exp.Binary, exp.Not)
# PostgreSQL's internal type names, which a cast of an unnamed operand is named by
_TYPES = {
    exp.DataType.Type.INT: "int4",
    exp.DataType.Type.BIGINT: "int8",
    exp.DataType.Type.SMALLINT: "int2",
    exp.DataType.Type.FLOAT: "float4",
    exp.DataType.Type.DOUBLE: "float8",
    exp.DataType.Type.DECIMAL: "numeric",
    exp.DataType.Type.BOOLEAN: "bool",
    exp.DataType.Type.CHAR: "bpchar",
    exp.DataType.Type.NCHAR: "bpchar",
    exp.DataType.Type.VARCHAR: "varchar",
    exp.DataType.Type.NVARCHAR: "varchar",
    exp.DataType.Type.TIMESTAMPTZ: "timestamptz",
    exp.DataType.Type.TIMETZ: "timetz",
}


def names(tree: exp.Expr) -> list[str | None] | None:
    """Each select item's name (None: a `*`, whose columns keep the engine's names), or None when `tree` is no
    query."""
    select = _first_select(tree)
    if select is None:
        return None
    return [None if _is_star(item) else name(item) for item in select.expressions]


def name(item: exp.Expr) -> str:
    return _figure(item)[0]


def _first_select(tree: exp.Expr) -> exp.Select | None:
    """The select whose items name the columns: a set operation's leftmost, a parenthesised query's own."""
    while isinstance(tree, (exp.SetOperation, exp.Subquery)):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


def _is_star(item: exp.Expr) -> bool:
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))


def _identifier(node: exp.Expr) -> str:
    """An identifier as PostgreSQL keeps it: folded to lower case unless quoted."""
    text = str(node.this) if isinstance(node, exp.Identifier) else node.name
    return text if isinstance(node, exp.Identifier) and node.quoted else text.lower()


def _figure(node: exp.Expr) -> tuple[str, int]:
    """(name, strength) as FigureColnameInternal: 2 a real name, 1 a fallback word (a cast's type, `case`), 0
    none."""
    if isinstance(node, exp.Alias):
        return _identifier(node.args["alias"]), 2
    if isinstance(node, exp.Column):
        return _identifier(node.this), 2
    if isinstance(node, exp.Dot):  # a qualified function (pg_catalog.lower(x)) or a field reference
        return _figure(node.expression) if isinstance(node.expression, exp.Func) else (_identifier(node), 2)
    if isinstance(node, (exp.Paren, exp.Window, exp.Filter, exp.WithinGroup, exp.Distinct)):
        inner = node.expressions[0] if isinstance(node, exp.Distinct) and node.expressions else node.this
        return _figure(inner) if isinstance(inner, exp.Expr) else (UNNAMED, 0)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        found, strength = _figure(node.this)
        return (found, strength) if strength > 1 else (_type_name(node.to), 1)
    if isinstance(node, exp.Case):
        default = node.args.get("default")
        found, strength = _figure(default) if default is not None else (UNNAMED, 0)
        return (found, strength) if strength > 1 else ("case", 1)
    if isinstance(node, exp.Subquery):
        select = _first_select(node.this)
        return (name(select.expressions[0]), 2) if select is not None and select.expressions else (UNNAMED, 0)
    if isinstance(node, exp.Trim):
        position = str(node.args.get("position") or "").upper()
        return {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "btrim"), 2
    for kind, word in _WORDS.items():
        if isinstance(node, kind):
            return word, 2
    if isinstance(node, exp.Anonymous):
        return ("row" if node.name.lower() == "row" else node.name.lower()), 2
    if isinstance(node, exp.Func) and not isinstance(node, _NOT_NAMES):
        call = _CALL.match(node.sql(dialect="postgres"))
        if call:
            return call.group(1).lower(), 2
    return UNNAMED, 0


def _type_name(to: exp.Expr) -> str:
    if isinstance(to, exp.ObjectIdentifier):  # `::oid`, `::regclass`
        return to.name.lower()
    if not isinstance(to, exp.DataType):
        return UNNAMED
    if to.this in _TYPES:
        return _TYPES[to.this]
    if to.this == exp.DataType.Type.USERDEFINED:
        return str(to.args.get("kind") or to.sql(dialect="postgres")).lower()
    return str(to.this.value).lower()
