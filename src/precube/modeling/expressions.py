"""SQL expressions of a model (computed columns, filter condition) parsed with sqlglot and typed as Spark
types them (`spark_types`)."""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from precube.metadata import datatypes
from precube.modeling import spark_types
from precube.modeling.errors import InvalidModelError

DIALECT = "spark"
# alias -> column -> Kylin type
Schema = Mapping[str, Mapping[str, str]]


def parse(sql: str, what: str) -> exp.Expr:
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except ParseError as err:
        raise InvalidModelError(f"{what} {sql!r} is not valid SQL: {str(err).splitlines()[0]}") from err
    if tree.find(exp.AggFunc, exp.Window, exp.Subquery, exp.Select) is not None and not isinstance(tree, exp.Select):
        raise InvalidModelError(f"{what} {sql!r} may not contain aggregates, window functions or subqueries")
    if isinstance(tree, exp.Select):
        raise InvalidModelError(f"{what} {sql!r} must be an expression, not a query")
    return tree


def _upper_identifiers(tree: exp.Expr) -> exp.Expr:
    for ident in tree.find_all(exp.Identifier):
        ident.set("this", ident.this.upper())
    return tree


def typed(sql: str, schema: Schema, what: str, declared: str | None = None) -> tuple[str, str, set[tuple[str, str]]]:
    """Parse `sql`, resolve its columns against `schema`, infer the type Spark gives it.

    Returns (normalized SQL with ALIAS.COLUMN references, Kylin type name, the (alias, column) pairs used).
    A `declared` type (a computed column's `datatype`) is the result's: the SQL casts to it when the inferred
    type differs and casts to it (`datatypes.castable`), or cannot be inferred. An unknown or ambiguous column,
    an expression of no inferable type and none declared, or one that does not cast to its declared type raises
    `InvalidModelError` naming it.
    """
    tree = parse(sql, what)
    spark_schema: dict[str, object] = {
        alias.upper(): {c.upper(): datatypes.to_spark(t) for c, t in cols.items()} for alias, cols in schema.items()
    }
    aliases = list(spark_schema)
    query = exp.select(tree.copy())
    for i, alias in enumerate(aliases):
        query = query.from_(alias) if i == 0 else query.join(alias, join_type="cross")
    try:
        qualified = qualify(query, schema=spark_schema, dialect=DIALECT, quote_identifiers=False, identify=False)
        annotated = spark_types.annotate(qualified, spark_schema)
    except SqlglotError as err:
        raise InvalidModelError(f"{what} {sql!r}: {str(err).splitlines()[0]}") from err
    assert isinstance(annotated, exp.Select)
    node = annotated.selects[0]
    node = node.this if isinstance(node, exp.Alias) else node
    used = {(c.table.upper(), c.name.upper()) for c in node.find_all(exp.Column)}
    dtype = node.type
    inferred = None if dtype is None or dtype.this == exp.DataType.Type.UNKNOWN else dtype.sql(dialect=DIALECT)
    normalized = _upper_identifiers(node.copy())
    if declared is None:
        if inferred is None:
            raise InvalidModelError(f"{what} {sql!r}: cannot infer its type; declare it (datatype: TYPE)")
        return normalized.sql(dialect=DIALECT), datatypes.normalize(inferred), used
    target = _declared_type(declared, what)
    if inferred is not None and datatypes.normalize(inferred) == target:
        return normalized.sql(dialect=DIALECT), target, used
    if inferred is not None and not datatypes.castable(inferred, target):
        raise InvalidModelError(
            f"{what} {sql!r} is {datatypes.normalize(inferred)}, which does not cast to its datatype {target}"
        )
    cast = exp.Cast(this=normalized, to=exp.DataType.build(datatypes.to_spark(target), dialect=DIALECT))
    return cast.sql(dialect=DIALECT), target, used


def _declared_type(declared: str, what: str) -> str:
    """A declared type's Kylin name; one Spark cannot parse is refused."""
    try:
        exp.DataType.build(datatypes.to_spark(declared), dialect=DIALECT)
    except (SqlglotError, ValueError) as err:
        raise InvalidModelError(f"{what}: datatype {declared!r} is not a type") from err
    return datatypes.normalize(declared)


def declared(expression: str, inner: str) -> bool:
    """Whether a computed column's saved SQL `inner` is its `expression` cast to a declared `datatype` (`typed`):
    the cast is the only top-level CAST `inner` has that `expression` has not."""
    try:
        written, saved = sqlglot.parse_one(expression, read=DIALECT), sqlglot.parse_one(inner, read=DIALECT)
    except ParseError:
        return False
    return isinstance(saved, exp.Cast) and not isinstance(written, exp.Cast)
