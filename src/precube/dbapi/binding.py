"""Parameters bound as SQL literals (paramstyle `qmark`): the statement is parsed with its `?` placeholders,
each placeholder replaced by its value's literal node (`precube.service.parameters`, the rule the wire binds by
too), and the tree rendered in precube's dialect. No value is ever pasted into the text: a quote, a backslash, a
NUL or `' or 1=1 --` is a string's content.

A `?` inside a string, a quoted name or a comment is not a placeholder (the tokenizer says which are)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from precube.dbapi.errors import NotSupportedError, ProgrammingError
from precube.query.dialect import DIALECT
from precube.service.parameters import ParameterError, literal


def bind(sql: str, parameters: Sequence[Any] | Mapping[str, Any] | None) -> str:
    """`sql` with each `?` replaced by the literal of the parameter at its position."""
    if parameters is None:
        return sql
    if isinstance(parameters, Mapping | str | bytes) or not isinstance(parameters, Sequence):
        raise ProgrammingError("parameters are positional (paramstyle qmark): give a list or tuple for the ? marks")
    dialect = DIALECT()
    try:
        tokens = _numbered(dialect.tokenize(sql))
        parsed = [s for s in dialect.parser().parse(tokens, sql) if s is not None]
    except SqlglotError as err:
        raise ProgrammingError(f"cannot parse the SQL to bind its parameters: {str(err).splitlines()[0]}") from err
    except RecursionError as err:
        raise ProgrammingError("the statement nests too deeply to bind its parameters") from err
    if len(parsed) != 1:
        raise ProgrammingError(f"give one statement to bind parameters in, not {len(parsed)}")
    [tree] = parsed
    marks = list(tree.find_all(exp.Placeholder))
    named = sorted({str(m.this) for m in marks if not str(m.this).isdigit()})
    if named:
        raise ProgrammingError(f"named parameters (:{named[0]}) are not supported: use ? (paramstyle qmark)")
    if len(marks) != len(parameters):
        raise ProgrammingError(f"the statement has {len(marks)} ? marks but {len(parameters)} parameters were given")
    try:
        for mark in marks:
            mark.replace(literal(parameters[int(mark.this)]))
    except ParameterError as err:
        raise NotSupportedError(err.message) from err
    return tree.sql(dialect=DIALECT)


def _numbered(tokens: list[Token]) -> list[Token]:
    """The tokens with the i-th `?` as the named placeholder `:i` (the parsed tree keeps no positions: the
    names say which parameter each placeholder is)."""
    out: list[Token] = []
    marks = 0
    for token in tokens:
        if token.token_type is TokenType.PLACEHOLDER and token.text == "?":
            at = (token.line, token.col, token.start)
            out.append(Token(TokenType.COLON, ":", *at, token.start))
            out.append(Token(TokenType.VAR, str(marks), *at, token.end))
            marks += 1
        else:
            out.append(token)
    return out
