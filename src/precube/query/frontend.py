"""The SQL front end (DESIGN §6 step 1): parse with sqlglot, qualify every table and column against the
project's tables, normalise.

The dialect (`dialect.py`) is Spark's grammar with Calcite's (Kylin's) quoting: `"name"` and `` `name` `` are
identifiers, `'text'` is a string. Names are case-insensitive, quoted or not (Spark's default
`spark.sql.caseSensitive=false`; Kylin upper-cases them): the qualified tree carries them in lower case.
A table without a database is looked up in the project's default database.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError, TokenError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema
from sqlglot.tokenizer_core import Token, TokenType

from precube.metadata import Table, datatypes
from precube.modeling import spark_types
from precube.query.dialect import DIALECT, Precube
from precube.query.errors import (
    AmbiguousColumnError,
    NestingTooDeepError,
    ReadOnlyStatementError,
    SqlSyntaxError,
    UnknownColumnError,
    UnknownTableError,
)
from precube.query.limits import check_token_depth, check_tree_depth
from precube.query.literal_lists import collapse

__all__ = ["DIALECT", "Catalog", "Precube", "normalise", "parse"]


@dataclass(frozen=True)
class Catalog:
    """The project's tables as SQL sees them: database → table → column → Spark type (lower-case names);
    `visible`: the columns `*` expands to, per database and table (None: all of them)."""

    default_database: str
    tables: Mapping[str, Mapping[str, Mapping[str, str]]]
    visible: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None

    @classmethod
    def of(
        cls, default_database: str, tables: Iterable[Table], extra: Mapping[str, Mapping[str, str]] | None = None
    ) -> Catalog:
        """`extra`: more columns per DB.TABLE (computed columns, queryable as columns of their table by name
        but, as in Kylin, not part of `*`)."""
        found: dict[str, dict[str, dict[str, str]]] = {}
        visible: dict[str, dict[str, tuple[str, ...]]] = {}
        for t in tables:
            columns = {c.name.lower(): datatypes.to_spark(c.datatype) for c in t.columns}
            visible.setdefault(t.database.lower(), {})[t.name.lower()] = tuple(columns)
            columns.update({k: v for k, v in (extra or {}).get(t.identity, {}).items() if k not in columns})
            found.setdefault(t.database.lower(), {})[t.name.lower()] = columns
        return cls(default_database.lower(), found, visible)

    def has(self, database: str, table: str) -> bool:
        return table in self.tables.get(database, {})

    @cached_property
    def schema(self) -> MappingSchema:
        """sqlglot's view of the catalog, built once (building it costs more than qualifying a query)."""
        return MappingSchema(
            {db: {t: dict(cols) for t, cols in tables.items()} for db, tables in self.tables.items()},
            dialect=DIALECT,
            visible=None
            if self.visible is None
            else {db: {t: list(cols) for t, cols in tables.items()} for db, tables in self.visible.items()},
        )


PARAM = "precube_param"  # the meta key of a literal that came from a lifted literal token (`plan_cache`)
# the meta key of a literal a rewrite folded into a layout column (a computed column's expression): the plan holds
# its value, so `plan_cache` keys plans by it
FOLDED = "precube_folded"


class ParamMeta(dict[str, int]):
    """A literal's meta {PARAM: index}, shared by every copy of the tree (sqlglot deep-copies each node's meta;
    for 20,000 literals that was a third of copying the tree). Only sqlglot's type annotation adds to it, a
    `nonnull` that is true of a literal in every copy alike."""

    def __deepcopy__(self, memo: dict[int, object]) -> ParamMeta:
        return self


def parse(
    sql: str, params: Mapping[int, int] | None = None, max_depth: int | None = None, tokens: list[Token] | None = None
) -> exp.Query:
    """One query (SELECT, UNION, WITH …); a syntax error or another kind of statement is a SqlSyntaxError,
    nesting deeper than `max_depth` (in tokens, then in the tree: `limits`) a NestingTooDeepError.

    The parser's source positions are dropped (copying a tree with them is several times slower), except
    that a literal whose token starts at an offset in `params` keeps that parameter's index under PARAM.
    `tokens`: the statement's, when already tokenized (`plan_cache.shape_of`)."""
    dialect = DIALECT()
    try:
        tokens = tokens or tokens_of(sql)
    except TokenError as err:
        raise SqlSyntaxError(token_message(err)) from err
    if max_depth is not None:
        check_token_depth((t.token_type for t in tokens), max_depth)
    _check_dropped_arguments(tokens)
    try:
        try:
            statements = [s for s in dialect.parser().parse(tokens, sql) if s is not None]
        except ParseError:
            if not any(_is_collapsed(t) for t in tokens):
                raise
            # the error's position is in the text as written: parse that (once, for the message)
            statements = [s for s in dialect.parser().parse(dialect.tokenize(sql), sql) if s is not None]
    except ParseError as err:
        raise SqlSyntaxError(f"cannot parse the SQL: {parse_message(err)}") from err
    except RecursionError as err:  # nesting the token check does not see (e.g. long operator chains)
        raise NestingTooDeepError(
            "the statement nests too deeply for the parser (e.g. a long run of NOT or unary minus): simplify it"
        ) from err
    if not statements:
        raise SqlSyntaxError("the statement is empty: give one query")
    if len(statements) != 1:
        raise SqlSyntaxError(f"give one query, not {len(statements)} statements")
    [tree] = statements
    if not isinstance(tree, exp.Query):
        raise ReadOnlyStatementError(f"only queries can be answered, not {tree.key.upper()} statements")
    if max_depth is not None:
        check_tree_depth(tree, max_depth)
    for node in tree.walk():
        if node._meta:
            start = node._meta.get("start") if params and isinstance(node, exp.Literal) else None
            node._meta = ParamMeta({PARAM: params[start]}) if params and start is not None and start in params else None
    return tree


def tokens_of(sql: str) -> list[Token]:
    """The statement's tokens, each long IN list of literals one number token holding the whole list
    (`literal_lists.collapse`); a TokenError for text the tokenizer refuses."""
    text, lists = collapse(sql)
    tokens = DIALECT().tokenize(text)
    if lists:
        for i, token in enumerate(tokens):
            found = lists.get(token.start) if token.token_type is TokenType.NUMBER else None
            if found is not None:
                tokens[i] = Token(TokenType.NUMBER, found, token.line, token.col, token.start, token.end)
    return tokens


def _is_collapsed(token: Token) -> bool:
    return token.token_type is TokenType.NUMBER and "," in token.text


# Spark functions whose arguments past a count sqlglot's parser drops without a word: the call would be
# answered without them (PERCENTILE's third argument is each value's frequency).
_DROPPED_ARGUMENTS = {"percentile": 2}


def _check_dropped_arguments(tokens: list[Token]) -> None:
    """Refuse a call with arguments the parser would silently drop, since its answer would ignore them."""
    for i, token in enumerate(tokens[:-1]):
        most = _DROPPED_ARGUMENTS.get(token.text.lower()) if token.token_type is TokenType.VAR else None
        if most is None or tokens[i + 1].token_type is not TokenType.L_PAREN:
            continue
        depth, commas = 0, 0
        for inner in tokens[i + 1 :]:
            if inner.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET):
                depth += 1
            elif inner.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET):
                depth -= 1
                if depth == 0:
                    break
            elif inner.token_type is TokenType.COMMA and depth == 1:
                commas += 1
        if commas + 1 > most:
            raise SqlSyntaxError(
                f"{token.text.upper()} takes at most {most} arguments here, not {commas + 1} "
                "(a frequency argument is not supported)"
            )


_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+, col: \d+, start: .*?>", re.DOTALL)


_CLASS = re.compile(r"<class '(?:\w+\.)*(\w+)'>")


def _token_text(found: re.Match[str]) -> str:
    return "the end of the statement" if found.group(1) == "SENTINEL" else repr(found.group(2))


def token_message(err: TokenError) -> str:
    """What a statement the tokenizer refuses has wrong (an unclosed string, quoted name or comment)."""
    first = str(err).splitlines()[0] if str(err) else "a token is not closed"
    return f"cannot parse the SQL: a string, quoted name or comment is not closed ({first})"


def parse_message(err: ParseError) -> str:
    """sqlglot's first error, with the token it names as its text (not its repr) and where it is."""
    first = err.errors[0] if err.errors else None
    if not first or not first.get("description"):
        return str(err).splitlines()[0] if str(err) else "a syntax error"
    text = _TOKEN.sub(_token_text, str(first["description"])).splitlines()[0].rstrip(".")
    text = _CLASS.sub(r"\1", text)
    near = str(first.get("highlight") or "").strip()
    line, col = first.get("line"), first.get("col")
    where = f"line {line}, column {col}" + (f", near {near[:40]!r}" if near else "")
    return f"{text} ({where})" if line and col else text


def _ctes(tree: exp.Expr) -> set[str]:
    return {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}


def _resolve_tables(tree: exp.Query, catalog: Catalog) -> None:
    """Give every table its database (the default one when none is written); unknown tables are an error."""
    ctes = _ctes(tree)
    for table in tree.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes):
            continue  # a CTE reference, or a table function
        database = (table.db or catalog.default_database).lower()
        if not catalog.has(database, table.name.lower()):
            name = table.name.upper()
            where = f"{table.db.upper()}.{name}" if table.db else f"{name} (default database {database.upper()})"
            raise UnknownTableError(f"table {where} does not exist in the project")
        table.set("db", exp.to_identifier(database))
        table.set("catalog", None)


_UNRESOLVED = re.compile(r"Column '([^']+)' could not be resolved( for table)?")


def _column_error(message: str, tree: exp.Query, catalog: Catalog) -> UnknownColumnError | AmbiguousColumnError:
    """sqlglot's word on a column it cannot resolve, as the column unknown or ambiguous: an unqualified column
    in more than one of the query's tables is ambiguous (sqlglot says only that it cannot resolve it)."""
    found = _UNRESOLVED.match(message)
    if found is None:
        return UnknownColumnError(message)
    column = found.group(1).lower()
    tables = [(t.db.lower(), t.name.lower()) for t in tree.find_all(exp.Table) if t.db]  # each occurrence
    holding = sum(column in catalog.tables.get(db, {}).get(name, {}) for db, name in tables)
    if not found.group(2) and holding > 1:
        return AmbiguousColumnError(f"column {column.upper()} is in more than one of the query's tables: qualify it")
    return UnknownColumnError(
        f"column {column.upper()} is in none of the query's tables, or in more than one of them "
        "(qualify it with its table); a string takes single quotes"
    )


def qualify_query(tree: exp.Query, catalog: Catalog) -> exp.Query:
    """`tree`, changed in place, with every table as `db.table AS alias` and every column as `alias.column`,
    names in lower case, `*` expanded; an unknown or ambiguous column is an UnknownObjectError naming it."""
    _resolve_tables(tree, catalog)
    try:
        qualified = qualify(tree, schema=catalog.schema, dialect=DIALECT, quote_identifiers=False, identify=False)
    except OptimizeError as err:
        raise _column_error(str(err).splitlines()[0], tree, catalog) from err
    except SqlglotError as err:
        raise SqlSyntaxError(str(err).splitlines()[0]) from err
    assert isinstance(qualified, exp.Query)
    for ident in qualified.find_all(exp.Identifier):
        # names are compared in lower case, unquoted; one that is no bare identifier (Tableau's alias
        # "Custom SQL Query") must stay quoted in the SQL the engines run
        if not ident.quoted and not exp.SAFE_IDENTIFIER_RE.match(ident.name):
            ident.set("quoted", True)
    return qualified


def canonical(node: exp.Expr, aliases: Mapping[str, str] | None = None) -> str:
    """An expression's text with columns as upper-case `TABLE.COLUMN`, their tables renamed by `aliases`
    (query alias → model alias), `a > b` as `b < a` and `a >= b` as `b <= a` (one text for a comparison however it
    is written): equal texts mean equal expressions over the same columns."""
    copy = node.copy()
    for col in copy.find_all(exp.Column):
        table = aliases.get(col.table, col.table) if aliases is not None else col.table
        col.replace(exp.column(col.name.upper(), table.upper()))
    for kind, flipped in ((exp.GT, exp.LT), (exp.GTE, exp.LTE)):
        for cmp in list(copy.find_all(kind)):
            swapped = flipped(this=cmp.expression, expression=cmp.this)
            if cmp is copy:
                copy = swapped
            else:
                cmp.replace(swapped)
    return copy.sql(dialect=DIALECT)


def name_outputs(tree: exp.Query) -> exp.Query:
    """Give every unnamed output expression the name it is written as (`sum(lo_revenue)`), as Spark and
    DuckDB name it, so a rewrite of the expression keeps its name."""
    for select in tree.find_all(exp.Select):
        for proj in select.expressions:
            if isinstance(proj, (exp.Alias, exp.Column, exp.Star)):
                continue
            name = proj.sql(dialect=DIALECT, normalize_functions="lower")
            proj.replace(exp.alias_(proj.copy(), exp.to_identifier(name, quoted=True)))
    return tree


def normalise(sql: str | exp.Query, catalog: Catalog) -> exp.Query:
    """Parse (unless given a parsed tree, which is then changed in place), name the outputs, qualify: the
    tree every later stage works on."""
    return qualify_query(name_outputs(parse(sql) if isinstance(sql, str) else sql), catalog)


def spark_sum_types(tree: exp.Query, catalog: Catalog) -> exp.Query:
    """`tree`, changed in place, with each SUM over a typed argument cast to the type Spark gives it
    (`spark_types`), so that a statement run on the source tables by another engine (DuckDB sums integers into
    HUGEINT, decimals into DECIMAL(38, s)) returns the types a layout answer and Spark do."""
    spark_types.annotate(tree, catalog.schema)
    for node in list(tree.find_all(exp.Sum)):
        out = node.type
        if out is None or not out.is_type(exp.DType.BIGINT, exp.DType.DOUBLE, exp.DType.DECIMAL):
            continue  # a SUM of no number: the engine's error
        call: exp.Expr = node  # cast `SUM(x) FILTER (…) OVER (…)` whole
        for wrapper in (exp.Filter, exp.Window):
            call = call.parent if isinstance(call.parent, wrapper) else call
        call.replace(exp.cast(call.copy(), out.copy()))
    return tree
