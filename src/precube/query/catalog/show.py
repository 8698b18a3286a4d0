"""SHOW and DESCRIBE, as Spark SQL spells them, answered from the project's catalog (`description`):

    SHOW {DATABASES | SCHEMAS | NAMESPACES} [[LIKE] 'pattern']      → namespace
    SHOW TABLES [{IN | FROM} db] [[LIKE] 'pattern']                 → namespace, tableName, isTemporary
    SHOW COLUMNS {IN | FROM} [db.]table [{IN | FROM} db]            → col_name
    {DESCRIBE | DESC} [TABLE] [EXTENDED | FORMATTED] [db.]table      → col_name, data_type, comment

A pattern is Spark's: `*` (or SQL's `%`) matches any characters, `|` separates alternatives, anything else
matches itself, case-insensitively. Names are the metadata's (upper case); a table without a database is in the
project's default one."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from precube.query.dialect import DIALECT, Precube
from precube.query.errors import SqlSyntaxError, UnknownObjectError, UnknownTableError
from precube.query.frontend import token_message
from precube.query.project_metadata import ProjectMetadata

SUPPORTED = "SHOW DATABASES, SHOW TABLES [IN db], SHOW COLUMNS IN table and DESCRIBE table"
_STARTS = {"SHOW", "DESCRIBE", "DESC"}
_DATABASES = {"DATABASES", "SCHEMAS", "NAMESPACES"}
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Show:
    """A parsed SHOW or DESCRIBE: `what` is databases, tables, columns or describe."""

    what: str
    database: str | None = None  # SHOW TABLES IN db; the table's database
    table: str | None = None  # SHOW COLUMNS, DESCRIBE
    pattern: str | None = None


def starts_show(sql: str) -> bool:
    """Whether the statement's first word is SHOW, DESCRIBE or DESC (comments and blanks before it skipped)."""
    text = sql.lstrip()
    while text.startswith(("--", "/*")):
        end = text.find("\n") if text.startswith("--") else text.find("*/")
        if end < 0:
            return False
        text = text[end + (1 if text.startswith("--") else 2) :].lstrip()
    word = _WORD.match(text)
    return word is not None and word.group(0).upper() in _STARTS


class _Tokenizer(Precube.Tokenizer):
    """The dialect's tokenizer, with SHOW's words as tokens (the dialect's takes them as one string)."""

    COMMANDS = Precube.Tokenizer.COMMANDS - {TokenType.SHOW}


class _Tokens:
    def __init__(self, sql: str) -> None:
        try:
            tokens: list[Token] = _Tokenizer(dialect=DIALECT()).tokenize(sql)
        except TokenError as err:
            raise SqlSyntaxError(token_message(err)) from err
        while tokens and tokens[-1].token_type is TokenType.SEMICOLON:
            tokens = tokens[:-1]
        self.tokens, self.at = tokens, 0

    def peek(self) -> str | None:
        if self.at >= len(self.tokens):
            return None
        token = self.tokens[self.at]
        return None if token.token_type in (TokenType.IDENTIFIER, TokenType.STRING) else token.text.upper()

    def take(self, *words: str) -> str | None:
        """The next word if it is one of `words` (consumed), else None."""
        found = self.peek()
        if found in words:
            self.at += 1
            return found
        return None

    def name(self, what: str) -> str:
        token = self._next(what)
        if token.token_type is TokenType.IDENTIFIER or re.fullmatch(r"[A-Za-z_]\w*", token.text):
            return token.text.upper()
        raise SqlSyntaxError(f"cannot parse the SQL: expected {what}, found {token.text!r}")

    def string(self) -> str | None:
        if self.at < len(self.tokens) and self.tokens[self.at].token_type is TokenType.STRING:
            self.at += 1
            text: str = self.tokens[self.at - 1].text
            return text
        return None

    def _next(self, what: str) -> Token:
        if self.at >= len(self.tokens):
            raise SqlSyntaxError(f"cannot parse the SQL: expected {what} at the end of the statement")
        self.at += 1
        token: Token = self.tokens[self.at - 1]
        return token

    def end(self) -> None:
        if self.at < len(self.tokens):
            raise SqlSyntaxError(
                f"cannot parse the SQL: unexpected {self.tokens[self.at].text!r} (precube answers {SUPPORTED})"
            )


def parse_show(sql: str) -> Show:
    """The SHOW or DESCRIBE statement `sql` (which `starts_show`); a SqlSyntaxError names what is wrong."""
    t = _Tokens(sql)
    if t.take("DESCRIBE", "DESC"):
        t.take("TABLE")
        t.take("EXTENDED", "FORMATTED")
        database, table = _qualified(t)
        t.end()
        return Show("describe", database, table)
    t.take("SHOW")
    if t.take(*_DATABASES):
        shown = Show("databases", pattern=_pattern(t))
    elif t.take("TABLES"):
        database = t.name("a database name") if t.take("IN", "FROM") else None
        shown = Show("tables", database, pattern=_pattern(t))
    elif t.take("COLUMNS", "FIELDS"):
        if not t.take("IN", "FROM"):
            raise SqlSyntaxError("cannot parse the SQL: SHOW COLUMNS needs IN table")
        database, table = _qualified(t)
        if t.take("IN", "FROM"):
            other = t.name("a database name")
            if database is not None and database != other:
                raise SqlSyntaxError(f"SHOW COLUMNS names two databases ({database}, {other})")
            database = other
        shown = Show("columns", database, table)
    else:
        word = t.peek() or "nothing"
        raise SqlSyntaxError(f"SHOW {word} is not supported: precube answers {SUPPORTED}")
    t.end()
    return shown


def _qualified(t: _Tokens) -> tuple[str | None, str]:
    first = t.name("a table name")
    if t.take("."):
        return first, t.name("a table name")
    return None, first


def _pattern(t: _Tokens) -> str | None:
    like = t.take("LIKE")
    found = t.string()
    if like and found is None:
        raise SqlSyntaxError("cannot parse the SQL: LIKE needs a quoted pattern")
    return found


MAX_WILDCARDS = 16  # more would let a pattern's matching cost grow as names' length to that power


def _matcher(pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    if len(re.findall(r"[*%]", pattern)) > MAX_WILDCARDS:
        raise SqlSyntaxError(f"the pattern {pattern[:40]!r} has more than {MAX_WILDCARDS} wildcards")
    parts = [".*".join(re.escape(p) for p in re.split(r"[*%]", alt.strip())) for alt in pattern.split("|")]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


def _matches(found: re.Pattern[str] | None, name: str) -> bool:
    return found is None or found.fullmatch(name) is not None


def answer_show(show: Show, metadata: ProjectMetadata) -> pa.Table:
    """The rows of a SHOW or DESCRIBE statement over the project's catalog."""
    catalog = metadata.description
    found = _matcher(show.pattern)
    if show.what == "databases":
        names = [d for d in catalog.schemas if _matches(found, d)]
        return pa.table({"namespace": pa.array(names, pa.string())})
    if show.what == "tables":
        database = show.database or catalog.default_schema
        if show.database is not None and database not in catalog.schemas:
            raise UnknownObjectError(f"database {database} does not exist in the project")
        listed = [t for t in catalog.tables if t.schema == database and _matches(found, t.name)]
        return pa.table(
            {
                "namespace": pa.array([t.schema for t in listed], pa.string()),
                "tableName": pa.array([t.name for t in listed], pa.string()),
                "isTemporary": pa.array([False] * len(listed), pa.bool_()),
            }
        )
    assert show.table is not None
    database = show.database or catalog.default_schema
    table = catalog.table(database, show.table)
    if table is None:
        where = f"{database}.{show.table}" if show.database else f"{show.table} (default database {database})"
        raise UnknownTableError(f"table {where} does not exist in the project")
    columns = table.columns
    if show.what == "columns":
        return pa.table({"col_name": pa.array([c.name for c in columns], pa.string())})
    return pa.table(
        {
            "col_name": pa.array([c.name for c in columns], pa.string()),
            "data_type": pa.array([c.spark_type for c in columns], pa.string()),
            "comment": pa.array([c.comment for c in columns], pa.string()),
        }
    )
