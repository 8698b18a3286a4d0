"""Limits on a statement (`[query] max_statement_chars`, `max_nesting_depth`), checked before the work that
grows with them: the text's size and encoding before tokenizing, the nesting of its parentheses and CASEs in
its tokens before parsing (sqlglot's parser recurses per level), and the nesting of its parsed expressions
(chains of operators included: later stages, and the engines, recurse over them too) before planning.

Every check walks iteratively: a check that recursed would fail on the input it exists to refuse.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlglot import exp
from sqlglot.tokenizer_core import TokenType

from precube.query.errors import NestingTooDeepError, SqlSyntaxError, StatementTooLargeError

_OPEN = {TokenType.L_PAREN, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.END}
# Nodes that are one level of nesting, as parentheses and CASEs are in the tokens: queries, calls, operators.
# Wrappers (FROM, WHERE, aliases, names), the DerivedTable around a query (a subquery is its SELECT's level),
# IN/EXISTS around a subquery and the WHEN branches of a CASE are not.
_LEVELS = (exp.Select, exp.SetOperation, exp.Func, exp.Binary, exp.Unary)


def check_text(sql: str, max_chars: int) -> None:
    """The statement is at most `max_chars` characters of valid Unicode text (no lone surrogate, as a
    non-UTF-8 byte read with `surrogateescape` becomes)."""
    if len(sql) > max_chars:
        raise StatementTooLargeError(
            f"the statement has {len(sql):,} characters, more than [query] max_statement_chars = {max_chars:,}"
        )
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as err:
        raise SqlSyntaxError(
            f"the statement is not valid UTF-8 text: character {err.start + 1} is {sql[err.start]!r}, "
            "a lone surrogate (an undecodable byte?)"
        ) from None


def _refuse(depth: int, limit: int, what: str) -> NestingTooDeepError:
    return NestingTooDeepError(
        f"the statement nests {what} {depth} levels deep, more than [query] max_nesting_depth = {limit}"
    )


def check_token_depth(token_types: Iterable[TokenType], limit: int) -> None:
    """Parentheses and CASE … END nest at most `limit` deep."""
    depth = deepest = 0
    for kind in token_types:
        if kind in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif kind in _CLOSE and depth:
            depth -= 1
    if deepest > limit:
        raise _refuse(deepest, limit, "parentheses and CASE expressions")


def tree_depth(tree: exp.Expr) -> int:
    """How many levels (queries, calls, operators) below the statement the deepest path of the tree crosses."""
    deepest = 0
    stack: list[tuple[exp.Expr, int]] = [(tree, -1)]  # the statement itself is no nesting
    while stack:
        node, depth = stack.pop()
        if isinstance(node, _LEVELS) and not (isinstance(node, exp.If) and isinstance(node.parent, exp.Case)):
            depth += 1
            deepest = max(deepest, depth)
        stack.extend((child, depth) for child in node.iter_expressions())
    return deepest


def check_tree_depth(tree: exp.Expr, limit: int) -> None:
    """The parsed statement nests at most `limit` levels (a chain `a AND b AND …` nests one per operator)."""
    depth = tree_depth(tree)
    if depth > limit:
        raise _refuse(depth, limit, "expressions (queries, calls, operators)")
