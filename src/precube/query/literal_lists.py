"""Long IN lists of literals, from the statement's text to the engine.

*Collapsed before tokenizing.* A list of more than `MIN_LIFTED` plain numbers or plain strings costs the
front end per item at every step (tokens, tree copies, qualifying, the plan cache's walks, printing): 20,000
of them took 0.8 s to plan. `collapse` finds such lists in the statement's text and `frontend.tokens_of`
gives each to the parser as ONE number literal whose text is the whole list (`1, 2, 3` or `'a', 'b'`): every
stage moves it as one node, the plan cache treats it as one parameter (its text is its value, so the result
cache's key holds every item), and a generator prints it back as the list it was, in any dialect — only
strings without quotes or backslashes are collapsed, so the items print alike everywhere. Stages that read
a literal's value ask `value_list` first (segment pruning reads the items).

*Bound on DuckDB.* DuckDB parses and binds 20,000 literals of SQL text in ~0.1-0.4 s, the same list bound as
one parameter (`x IN (SELECT UNNEST($1))`) in a few ms. `lift_lists` works on the engine's SQL text
(sqlglot's output: `IN (1, 2, ...)`, strings single-quoted with `''` doubled), skipping quoted strings,
quoted identifiers and comments, and takes only lists of more than `MIN_LIFTED` plain integers or plain
strings. `x IN (SELECT UNNEST(list))` keeps IN's three-valued logic (NULL when x is NULL, or when nothing
matches and the list holds NULL — a list with NULL is not lifted anyway), and NOT IN too. Where the list's
kind is not the column's (strings against a DATE, integers against a VARCHAR) DuckDB refuses to bind the
lifted form, where the text form would cast the literals: the caller then runs the text as it was
(`run_lifted`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import duckdb
from sqlglot import exp

MIN_LIFTED = 64  # shorter lists cost less as text than a prepared statement's set-up

# -- collapsing the user's text ------------------------------------------------------------------------------
# What the tokenizer of the Precube dialect reads as one unit that may hold `IN (`: strings (a backslash
# escapes), quoted identifiers, comments. Items: plain numbers, or strings with no quote or backslash.
_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
_PLAIN_STR = r"'[^'\\]*'"
_MORE = rf"{{{MIN_LIFTED},}}"
_SOURCE = re.compile(
    r"""(?P<skip>'[^'\\]*(?:\\.[^'\\]*)*'|"[^"]*(?:""[^"]*)*"|`[^`]*(?:``[^`]*)*`|/\*.*?\*/|--[^\n]*)"""
    rf"|(?<![\w$.])IN\s*\(\s*(?P<list>{_NUMBER}(?:\s*,\s*{_NUMBER}){_MORE}|{_PLAIN_STR}(?:\s*,\s*{_PLAIN_STR}){_MORE})"
    r"\s*\)",
    re.DOTALL | re.IGNORECASE,  # `\w` of any script: a letter glued to IN makes one name, as for the tokenizer
)
_ITEM = re.compile(rf"{_NUMBER}|{_PLAIN_STR}")
PLACEHOLDER = "0"  # what the tokenizer reads in a collapsed list's place: one number


def collapse(sql: str) -> tuple[str, dict[int, str]]:
    """`sql` with each long literal list replaced by PLACEHOLDER, and the offset of each placeholder in the
    new text → the list as one literal's text (items as written, `, ` between them). Nothing found: `sql`
    unchanged and no lists."""
    lists: dict[int, str] = {}
    if len(sql) < 4 * MIN_LIFTED:  # a shorter statement cannot hold a long list
        return sql, lists
    parts: list[str] = []
    at = 0  # end of the text already copied
    shift = 0  # how much shorter the new text is so far
    for m in _SOURCE.finditer(sql):
        if m["list"] is None:
            continue
        start = m.start("list")
        parts.append(sql[at:start])
        lists[start - shift] = ", ".join(_ITEM.findall(m["list"]))
        parts.append(PLACEHOLDER)
        shift += len(m["list"]) - len(PLACEHOLDER)
        at = m.end("list")
    if not lists:
        return sql, lists
    parts.append(sql[at:])
    return "".join(parts), lists


def value_list(node: exp.Expr) -> tuple[bool, list[str]] | None:
    """A collapsed list's items (whether they are strings, and their values: strings unquoted, numbers as
    written); None for any other node."""
    if type(node) is not exp.Literal or node.is_string or "," not in node.this:
        return None
    return _items(node.this)


@lru_cache(maxsize=16)
def _items(text: str) -> tuple[bool, list[str]]:
    if text.startswith("'"):
        return True, text[1:-1].split("', '")  # no item holds a quote (`collapse`)
    return False, text.split(", ")


def items_of(values: list[exp.Expr]) -> list[exp.Expr]:
    """An IN list's items, each collapsed list opened into literals (for a stage that needs them one by one)."""
    if not any(value_list(v) for v in values):
        return values
    opened: list[exp.Expr] = []
    for v in values:
        found = value_list(v)
        if found is None:
            opened.append(v)
        else:
            is_string, texts = found
            opened.extend(exp.Literal(this=t, is_string=is_string) for t in texts)
    return opened


# -- binding on DuckDB ---------------------------------------------------------------------------------------
_INT = r"-?\d{1,18}"  # fits BIGINT: a longer one stays text (DuckDB types it HUGEINT or DECIMAL)
_STR = r"'[^']*(?:''[^']*)*'"  # loops unrolled: a 300 kB statement is read in a few ms
_TOKENS = re.compile(
    rf"""(?P<skip>{_STR}|"[^"]*(?:""[^"]*)*"|/\*.*?\*/|--[^\n]*)"""
    rf"|\bIN \((?P<ints>{_INT}(?:, {_INT}){_MORE})\)"
    rf"|\bIN \((?P<strs>{_STR}(?:, {_STR}){_MORE})\)",
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


def run_lifted(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    plain: Callable[[str], duckdb.DuckDBPyConnection] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Execute `sql` on `con` with its long literal lists bound as parameters; the text as it was where
    DuckDB refuses the lifted form (a list of another kind than its column: the text casts the literals).
    A statement without such lists runs through `plain` (the connection's prepared statements), else as is."""
    text, params = lift_lists(sql)
    if not params:
        return plain(sql) if plain is not None else con.execute(sql)
    try:
        return con.execute(text, params)
    except (duckdb.BinderException, duckdb.InvalidInputException, duckdb.ConversionException):
        return con.execute(sql)


SHOWN_VALUES = 3


def abbreviated(tree: exp.Expr) -> exp.Expr:
    """`tree` for EXPLAIN: each IN list of more than MIN_LIFTED items shown by its first few and its length
    (`IN (1, 2, 3, … 20,000 values)`); a copy when there is one, never a tree to run."""
    if not any(_length(e) > MIN_LIFTED for e in tree.find_all(exp.In)):
        return tree
    tree = tree.copy()
    for e in tree.find_all(exp.In):
        if (n := _length(e)) > MIN_LIFTED:
            first = items_of(e.expressions[:SHOWN_VALUES])[:SHOWN_VALUES]
            e.set("expressions", [*first, exp.Var(this=f"… {n:,} values")])
    return tree


def _length(e: exp.In) -> int:
    return sum(len(found[1]) if (found := value_list(v)) else 1 for v in e.expressions)
