"""Comparisons of a column with a literal the engine would refuse for their types, caught while planning: the
error names the column as the statement wrote it and says what to write instead (the engine's own error, which
`engine_errors` words for the rest, knows only the types).

A date or timestamp column compared with a number (`lo_orderdate < 19940101`) cannot be run: PostgreSQL's
"operator does not exist" (SQLSTATE 42883). A numeric column compared with a string that is no number
(`lo_quantity = 'ten'`) fails when the string is converted: PostgreSQL's "invalid input syntax" (22P02)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from sqlglot import exp

from precube.query.errors import InvalidTextError, OperatorTypeError
from precube.query.frontend import Catalog
from precube.query.literal_lists import items_of

_COMPARISONS = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)
_TEMPORAL = ("date", "timestamp")
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
_YYYYMMDD = re.compile(r"(\d{4})(\d{2})(\d{2})")
_SQL_NAMES = {"int": "INTEGER", "string": "VARCHAR"}  # Spark's type names SQL spells otherwise


def check_comparisons(tree: exp.Expr, catalog: Catalog) -> None:
    """Raise OperatorTypeError / InvalidTextError for the first comparison of a column of a catalog table with a
    literal its type cannot take (a qualified tree: every column names its table's alias)."""
    for node in tree.find_all(*_COMPARISONS, exp.Between, exp.In):
        for column, literal in _pairs(node):
            spark_type = _column_type(column, catalog)
            if spark_type is not None:
                _check(column, spark_type, literal)


def _pairs(node: exp.Expr) -> Iterator[tuple[exp.Column, exp.Literal]]:
    """The (column, literal) pairs a comparison, BETWEEN or IN makes."""
    if isinstance(node, (exp.Between, exp.In)):
        if isinstance(node.this, exp.Column):
            between = isinstance(node, exp.Between)
            # a long list is one collapsed literal (`literal_lists`): its items are checked one by one
            others = [node.args.get("low"), node.args.get("high")] if between else items_of(node.expressions)
            yield from ((node.this, v) for v in others if isinstance(v, exp.Literal))
        return
    left, right = node.args.get("this"), node.args.get("expression")
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal):
        yield left, right
    elif isinstance(right, exp.Column) and isinstance(left, exp.Literal):
        yield right, left


def _column_type(column: exp.Column, catalog: Catalog) -> str | None:
    """The Spark type of a column of a catalog table in the column's own block (None: a derived table's, or
    unknown)."""
    select = column.find_ancestor(exp.Select)
    if select is None or not column.table:
        return None
    for table in select.find_all(exp.Table):
        if table.alias_or_name == column.table and table.find_ancestor(exp.Select) is select:
            return catalog.tables.get(table.db.lower(), {}).get(table.name.lower(), {}).get(column.name.lower())
    return None


def _check(column: exp.Column, spark_type: str, literal: exp.Literal) -> None:
    kind = spark_type.split("(")[0].lower()
    name, shown = column.name, _SQL_NAMES.get(spark_type.lower(), spark_type.upper())
    if kind in _TEMPORAL and literal.is_number:
        literal_type = "INTEGER" if literal.this.lstrip("-").isdigit() else "DECIMAL"
        day = _YYYYMMDD.fullmatch(literal.this)
        example = f"'{day[1]}-{day[2]}-{day[3]}'" if day else "'1994-01-01'"
        raise OperatorTypeError(
            f"cannot compare {name} ({shown}) with {literal.this} ({literal_type}): write {kind.upper()} {example}"
        )
    if kind in _NUMERIC and literal.is_string and not _is_number(literal.this):
        text = literal.this if len(literal.this) <= 40 else literal.this[:39] + "…"
        raise InvalidTextError(f"cannot compare {name} ({shown}) with {text!r}: it is not a number")


def _is_number(text: str) -> bool:
    try:
        float(text.strip())
    except ValueError:
        return False
    return True
