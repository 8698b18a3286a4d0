"""What a client sends, read as PostgreSQL: a query string split into statements, each parsed with sqlglot's
Postgres dialect (so strings are read with `standard_conforming_strings = on`, as the server announces, and a
client's own quoting of a value is read as the client meant it) and classified:

- a query over the project's tables: its `$n` parameters bound as literals (`placeholders.bind`), then written out
  in precube's dialect for `Session.sql`;
- a query over `pg_catalog` / `information_schema`, or of the session functions alone (`version()`,
  `current_database()`…): answered by the catalog (`catalog.py`), never by the engine;
- `SET` / `RESET` / `SHOW` of a setting, transaction control (no-ops: precube is read-only), `DISCARD`,
  `DEALLOCATE`; `EXPLAIN` (precube's plan as text); precube's own `SHOW TABLES` / `DESCRIBE` (passed as
  written to the session)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import TokenType

from precube.errors import PrecubeError
from precube.query.frontend import DIALECT, parse_message, token_message
from precube.query.limits import check_text, check_token_depth, check_tree_depth
from precube.server.pgwire.catalog import is_catalog_query
from precube.server.pgwire.placeholders import count
from precube.server.pgwire.sqlstate import PgError

READ = "postgres"


class Kind(StrEnum):
    EMPTY = "EMPTY"
    QUERY = "QUERY"  # answered by the project's session
    CATALOG = "CATALOG"  # answered by the catalog
    PASSED = "PASSED"  # precube's own statements (SHOW TABLES, DESCRIBE …): the session reads them as written
    EXPLAIN = "EXPLAIN"
    SET = "SET"
    RESET = "RESET"
    SHOW = "SHOW"
    BEGIN = "BEGIN"
    COMMIT = "COMMIT"
    ROLLBACK = "ROLLBACK"
    NOOP = "NOOP"  # accepted and ignored: its command tag is `tag`
    DEALLOCATE = "DEALLOCATE"

    @property
    def returns_rows(self) -> bool:
        return self in (Kind.QUERY, Kind.CATALOG, Kind.PASSED, Kind.EXPLAIN, Kind.SHOW)


@dataclass(frozen=True)
class Statement:
    kind: Kind
    text: str  # as the client wrote it
    tree: exp.Expr | None = None  # QUERY, CATALOG, EXPLAIN: the parsed statement (with `$n` parameters)
    name: str = ""  # SET/RESET/SHOW: the setting (lower case); DEALLOCATE: the statement
    value: str = ""  # SET: the value
    tag: str = ""  # NOOP: the command tag

    @property
    def params(self) -> int:
        return count(self.tree) if self.tree is not None else 0


_SET = re.compile(
    r"^SET\s+(?:SESSION\s+|LOCAL\s+)?(?:(?P<tz>TIME\s+ZONE)\s+(?P<tzvalue>.+)|(?P<name>[A-Za-z_][\w.]*)\s*(?:=|\s+TO\s+)\s*(?P<value>.+))$",
    re.IGNORECASE | re.DOTALL,
)
_SET_TRANSACTION = re.compile(r"^SET\s+(?:SESSION\s+CHARACTERISTICS\s+AS\s+)?TRANSACTION\b", re.IGNORECASE)
_RESET = re.compile(r"^RESET\s+(?P<name>ALL|[A-Za-z_][\w.]*)$", re.IGNORECASE)
_SHOW = re.compile(r"^SHOW\s+(?P<name>ALL|TIME\s+ZONE|TRANSACTION\s+ISOLATION\s+LEVEL|[A-Za-z_][\w.]*)$", re.IGNORECASE)
_PASSED_SHOW = {"tables", "databases", "schemas", "columns", "create", "functions", "partitions", "catalogs"}
_PASSED = re.compile(r"^(?:DESCRIBE|DESC)\s", re.IGNORECASE)
_EXPLAIN = re.compile(r"^EXPLAIN\s+(?:\((?P<options>[^)]*)\)\s*)?(?P<rest>.+)$", re.IGNORECASE | re.DOTALL)
_TRANSACTIONS = [
    (re.compile(r"^(?:BEGIN|START\s+TRANSACTION)\b", re.IGNORECASE), Kind.BEGIN),
    (re.compile(r"^(?:COMMIT|END)(?:\s+(?:WORK|TRANSACTION))?$", re.IGNORECASE), Kind.COMMIT),
    (re.compile(r"^(?:ROLLBACK|ABORT)(?:\s+(?:WORK|TRANSACTION))?$", re.IGNORECASE), Kind.ROLLBACK),
]
_NOOPS = [  # (statement, command tag): what pools and drivers send around queries
    (re.compile(r"^SAVEPOINT\s", re.IGNORECASE), "SAVEPOINT"),
    (re.compile(r"^RELEASE\s", re.IGNORECASE), "RELEASE"),
    (re.compile(r"^ROLLBACK\s+(?:WORK\s+|TRANSACTION\s+)?TO\s", re.IGNORECASE), "ROLLBACK"),
    (re.compile(r"^DISCARD\s+(?:ALL|PLANS|SEQUENCES|TEMP|TEMPORARY)$", re.IGNORECASE), "DISCARD ALL"),
    (re.compile(r"^CLOSE\s+ALL$", re.IGNORECASE), "CLOSE CURSOR ALL"),
    (re.compile(r"^UNLISTEN\s", re.IGNORECASE), "UNLISTEN"),
]
_DEALLOCATE = re.compile(r"^DEALLOCATE\s+(?:PREPARE\s+)?(?P<name>ALL|\"[^\"]+\"|[A-Za-z_]\w*)$", re.IGNORECASE)


def split(sql: str, max_chars: int) -> list[str]:
    """The statements of a simple query's text, each as written (separated by `;` outside literals)."""
    _check(lambda: check_text(sql, max_chars))
    try:
        tokens = sqlglot.Dialect.get_or_raise(READ).tokenize(sql)
    except TokenError as err:
        raise PgError("42601", token_message(err)) from err
    texts, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            texts.append(sql[start : token.start])
            start = token.end + 1
    texts.append(sql[start:])
    found = [t.strip() for t in texts if t.strip()]
    return found or [""]


def _check(check: Callable[[], None]) -> None:
    """Run one of the query limits' checks, its error as the wire's."""
    try:
        check()
    except PrecubeError as err:
        raise PgError.of(err) from err


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def classify(text: str, max_depth: int) -> Statement:
    """One statement's kind, parsed as PostgreSQL (a syntax error is 42601 with sqlglot's reason)."""
    text = text.strip().rstrip(";").strip()
    if not text:
        return Statement(Kind.EMPTY, text)
    for pattern, kind in _TRANSACTIONS:
        if pattern.match(text):
            return Statement(kind, text)
    for pattern, tag in _NOOPS:
        if pattern.match(text):
            return Statement(Kind.NOOP, text, tag=tag)
    if _SET_TRANSACTION.match(text):
        return Statement(Kind.NOOP, text, tag="SET")
    if found := _SET.match(text):
        if found.group("tz"):
            return Statement(Kind.SET, text, name="timezone", value=_unquote(found.group("tzvalue")))
        return Statement(Kind.SET, text, name=found.group("name").lower(), value=_unquote(found.group("value")))
    if found := _RESET.match(text):
        return Statement(Kind.RESET, text, name=found.group("name").lower())
    if (found := _SHOW.match(text)) and found.group("name").lower() not in _PASSED_SHOW:
        return Statement(Kind.SHOW, text, name=re.sub(r"\s+", "_", found.group("name").lower()))
    if text.upper().startswith("SHOW ") or _PASSED.match(text):
        return Statement(Kind.PASSED, text)
    if found := _DEALLOCATE.match(text):
        return Statement(Kind.DEALLOCATE, text, name=found.group("name").strip('"'))
    if found := _EXPLAIN.match(text):
        options = (found.group("options") or "").upper()
        if "ANALYZE" in options.replace("ANALYSE", "ANALYZE").split() or found.group("rest").upper().startswith(
            "ANALYZE"
        ):
            raise PgError("0A000", "EXPLAIN ANALYZE is not supported: precube explains without running")
        return Statement(Kind.EXPLAIN, text, tree=_parse(found.group("rest"), max_depth))
    tree = _parse(text, max_depth)
    if isinstance(tree, _WRITES) or (isinstance(tree, exp.Copy) and tree.args.get("kind")):  # COPY … FROM
        raise PgError("25006", f"cannot execute {_command(tree)} in a read-only transaction")
    if isinstance(tree, exp.Query) and is_catalog_query(tree):
        return Statement(Kind.CATALOG, text, tree=tree)
    return Statement(Kind.QUERY, text, tree=tree)


# statements that would change data or schema: PostgreSQL refuses them on a read-only server (as precube is)
# with 25006 before looking at the objects they name
_WRITES: tuple[type[exp.Expr], ...] = (exp.Create, exp.Drop, exp.Alter, exp.Insert, exp.Update, exp.Delete)
_WRITES += (exp.Merge, exp.TruncateTable, exp.Grant, exp.Revoke, exp.Comment)


def _command(tree: exp.Expr) -> str:
    """A write statement's command as PostgreSQL's message names it (`CREATE TABLE`, `INSERT`)."""
    kind = tree.args.get("kind")
    if isinstance(tree, (exp.Create, exp.Drop, exp.Alter)) and isinstance(kind, str):
        return f"{tree.key.upper()} {kind.upper()}"
    return {"truncatetable": "TRUNCATE TABLE", "copy": "COPY FROM"}.get(tree.key, tree.key.upper())


def _parse(text: str, max_depth: int) -> exp.Expr:
    dialect = sqlglot.Dialect.get_or_raise(READ)
    try:
        tokens = dialect.tokenize(text)
        _check(lambda: check_token_depth((t.token_type for t in tokens), max_depth))
        statements = [s for s in dialect.parser().parse(tokens, text) if s is not None]
    except TokenError as err:
        raise PgError("42601", token_message(err)) from err
    except ParseError as err:
        raise PgError("42601", f"cannot parse the SQL: {parse_message(err)}") from err
    except RecursionError as err:
        raise PgError("54001", "the statement nests too deeply for the parser: simplify it") from err
    if len(statements) != 1:
        raise PgError("42601", "cannot insert multiple commands into a prepared statement")
    [tree] = statements
    _check(lambda: check_tree_depth(tree, max_depth))
    return tree


def precube_sql(tree: exp.Expr) -> str:
    """A (bound) statement in precube's dialect, for `Session.sql`."""
    return tree.transform(_ordered_set).sql(dialect=DIALECT)


def _ordered_set(node: exp.Expr) -> exp.Expr:
    """`percentile_cont(q) WITHIN GROUP (ORDER BY x)` as precube's exact PERCENTILE(x, q) (Spark's generator
    would write the approximate PERCENTILE_APPROX), `percentile_disc` as PERCENTILE_DISC(x, q)."""
    if not isinstance(node, exp.WithinGroup) or not isinstance(node.this, (exp.PercentileCont, exp.PercentileDisc)):
        return node
    order = node.expression
    keys = order.expressions if isinstance(order, exp.Order) else []
    if len(keys) != 1:
        raise PgError("42601", f"{node.this.key.upper()} WITHIN GROUP takes one ORDER BY expression")
    [key] = keys
    fraction, value = node.this.this, key.this if isinstance(key, exp.Ordered) else key
    descending = isinstance(key, exp.Ordered) and bool(key.args.get("desc"))
    if isinstance(node.this, exp.PercentileDisc):
        if descending:
            raise PgError(
                "0A000", "percentile_disc(…) WITHIN GROUP (ORDER BY … DESC) is not supported: order ascending"
            )
        return exp.PercentileDisc(this=value, expression=fraction)
    if descending:  # the q-th fraction of a descending order is the (1 - q)-th of the ascending one
        fraction = exp.Sub(this=exp.Literal.number(1), expression=exp.Paren(this=fraction))
    return exp.Quantile(this=value, quantile=fraction)
