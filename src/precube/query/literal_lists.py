"""Long IN lists of literals as bound parameters: DuckDB parses and binds 20,000 literals of SQL text in
~0.1-0.4 s, the same list bound as one parameter (`x IN (SELECT UNNEST($1))`) in a few ms.

The lift works on the engine's SQL text (sqlglot's output: `IN (1, 2, ...)`, strings single-quoted with
`''` doubled), skipping quoted strings, quoted identifiers and comments, and takes only lists of more than
`MIN_LIFTED` plain integers or plain strings. `x IN (SELECT UNNEST(list))` keeps IN's three-valued logic
(NULL when x is NULL, or when nothing matches and the list holds NULL — a list with NULL is not lifted
anyway), and NOT IN too. Where the list's kind is not the column's (strings against a DATE, integers
against a VARCHAR) DuckDB refuses to bind the lifted form, where the text form would cast the literals:
the caller then runs the text as it was (`run_lifted`).
"""

from __future__ import annotations

import re
from typing import Any

import duckdb
from sqlglot import exp

MIN_LIFTED = 64  # shorter lists cost less as text than a prepared statement's set-up

_INT = r"-?\d{1,18}"  # fits BIGINT: a longer one stays text (DuckDB types it HUGEINT or DECIMAL)
_STR = r"'(?:[^']|'')*'"
_TOKENS = re.compile(
    rf"""(?P<skip>{_STR}|"(?:[^"]|"")*"|/\*.*?\*/|--[^\n]*)"""
    rf"|\bIN \((?P<ints>{_INT}(?:, {_INT}){{{MIN_LIFTED},}})\)"
    rf"|\bIN \((?P<strs>{_STR}(?:, {_STR}){{{MIN_LIFTED},}})\)",
    re.DOTALL,
)
_ONE_STR = re.compile(_STR)


def lift_lists(sql: str) -> tuple[str, list[list[Any]]]:
    """`sql` with each long literal list made `IN (SELECT UNNEST($n))`, and the lists' values in order
    (none: `sql` unchanged)."""
    params: list[list[Any]] = []

    def lifted(m: re.Match[str]) -> str:
        if m["ints"] is not None:
            params.append([int(v) for v in m["ints"].split(", ")])
        elif m["strs"] is not None:
            params.append([s[1:-1].replace("''", "'") for s in _ONE_STR.findall(m["strs"])])
        else:
            return m[0]
        return f"IN (SELECT UNNEST(${len(params)}))"

    if "IN (" not in sql:
        return sql, params
    text = _TOKENS.sub(lifted, sql)
    return text, params


def run_lifted(con: duckdb.DuckDBPyConnection, sql: str) -> duckdb.DuckDBPyConnection:
    """Execute `sql` on `con` with its long literal lists bound as parameters; the text as it was where
    DuckDB refuses the lifted form (a list of another kind than its column: the text casts the literals)."""
    text, params = lift_lists(sql)
    if not params:
        return con.execute(sql)
    try:
        return con.execute(text, params)
    except (duckdb.BinderException, duckdb.InvalidInputException, duckdb.ConversionException):
        return con.execute(sql)


SHOWN_VALUES = 3


def abbreviated(tree: exp.Expr) -> exp.Expr:
    """`tree` for EXPLAIN: each IN list of more than MIN_LIFTED items shown by its first few and its length
    (`IN (1, 2, 3, … 20,000 values)`); a copy when there is one, never a tree to run."""
    if not any(len(e.expressions) > MIN_LIFTED for e in tree.find_all(exp.In)):
        return tree
    tree = tree.copy()
    for e in tree.find_all(exp.In):
        items = e.expressions
        if len(items) > MIN_LIFTED:
            e.set("expressions", [*items[:SHOWN_VALUES], exp.Var(this=f"… {len(items):,} values")])
    return tree
