"""What a client sends, read as PostgreSQL: a query string split into statements, each parsed with sqlglot's
Postgres dialect (so strings are read with `standard_conforming_strings = on`, as the server announces, and a
client's own quoting of a value is read as the client meant it) and classified:

- a query over the project's tables: its `$n` parameters bound as literals (`placeholders.bind`), then written out
  in precube's dialect for `Session.sql`;
- a query over `pg_catalog` / `information_schema`, or of the session functions alone (`version()`,
  `current_database()`…): answered by the catalog (`catalog.py`), never by the engine;
- `SET` / `RESET` / `SHOW` of a setting, transaction control (no-ops: precube is read-only), `DISCARD`;
- SQL-level `PREPARE` / `EXECUTE` / `DEALLOCATE` and cursors' `DECLARE` / `FETCH` / `MOVE` / `CLOSE` (the
  connection keeps their state); `EXPLAIN` (precube's plan as text); precube's own `SHOW TABLES` /
  `DESCRIBE` (passed as written to the session)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property, lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from precube.errors import PrecubeError
from precube.query.frontend import DIALECT, parse_message, token_message
from precube.query.limits import check_text, check_token_depth, check_tree_depth
from precube.server.pgwire import placeholders
from precube.server.pgwire.catalog import is_catalog_query
from precube.server.pgwire.cursors import Direction
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
    PREPARE = "PREPARE"  # SQL-level: `inner` under `name`, its parameters typed by `types`
    EXECUTE = "EXECUTE"  # SQL-level: the prepared statement `name` with `args`
    DECLARE = "DECLARE"  # a cursor `name` over `inner` (its `$n` bound at Bind, like a query's)
    FETCH = "FETCH"  # rows of the cursor `name` by `direction`
    MOVE = "MOVE"  # FETCH without rows
    CLOSE = "CLOSE"  # the cursor `name`, or ALL

    @property
    def returns_rows(self) -> bool:
        return self in (Kind.QUERY, Kind.CATALOG, Kind.PASSED, Kind.EXPLAIN, Kind.SHOW, Kind.EXECUTE, Kind.FETCH)


@dataclass(frozen=True)
class Statement:
    kind: Kind
    text: str  # as the client wrote it
    tree: exp.Expr | None = None  # QUERY, CATALOG, EXPLAIN: the parsed statement (with `$n` parameters)
    name: str = ""  # SET/RESET/SHOW: the setting (lower case); DEALLOCATE: the statement
    value: str = ""  # SET: the value
    tag: str = ""  # NOOP: the command tag
    inner: Statement | None = None  # PREPARE, DECLARE: the statement prepared or the cursor's query
    types: tuple[int, ...] = ()  # PREPARE: the parameters' type OIDs (0: unknown)
    args: tuple[exp.Expr, ...] = ()  # EXECUTE: the parameters' values as written
    direction: Direction | None = None  # FETCH, MOVE
    hold: bool = False  # DECLARE … WITH HOLD: the cursor outlives its transaction
    scroll: bool = True  # DECLARE … NO SCROLL: forward only
    binary: bool = False  # DECLARE BINARY: rows in the binary format

    @cached_property
    def params(self) -> int:
        if self.kind == Kind.DECLARE and self.inner is not None:
            return self.inner.params
        return count(self.tree) if self.tree is not None else 0

    @cached_property
    def unbound_sql(self) -> str:
        """The statement without parameters in precube's dialect (made once: a remembered statement is run
        again without generating it again)."""
        assert self.tree is not None
        return precube_sql(placeholders.bind(self.tree, []))


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
    (re.compile(r"^UNLISTEN\s", re.IGNORECASE), "UNLISTEN"),
]
_NAME = r"(?P<name>\"(?:[^\"]|\"\")+\"|[A-Za-z_][\w$]*)"
_DEALLOCATE = re.compile(rf"^DEALLOCATE\s+(?:PREPARE\s+)?(?:(?P<all>ALL)|{_NAME})$", re.IGNORECASE)
_PREPARE = re.compile(
    rf"^PREPARE\s+{_NAME}\s*(?:\((?P<types>(?:[^()]|\([^()]*\))*)\))?\s*AS\s+(?P<rest>.+)$", re.IGNORECASE | re.DOTALL
)
_EXECUTE = re.compile(rf"^EXECUTE\s+{_NAME}\s*(?:\((?P<args>.*)\))?$", re.IGNORECASE | re.DOTALL)
_DECLARE = re.compile(
    rf"^DECLARE\s+{_NAME}\s+(?P<binary>BINARY\s+)?(?:(?P<insensitive>ASENSITIVE|INSENSITIVE)\s+)?"
    r"(?:(?P<no>NO\s+)?SCROLL\s+)?CURSOR\s+(?:(?P<hold>WITH|WITHOUT)\s+HOLD\s+)?FOR\s+(?P<rest>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_FETCH = re.compile(
    rf"^(?P<verb>FETCH|MOVE)\s+(?:(?P<direction>.*?)\s+)??(?:(?:FROM|IN)\s+)?{_NAME}$", re.IGNORECASE | re.DOTALL
)
_TYPE_LIST = re.compile(r",(?![^()]*\))")  # the commas between PREPARE's types, not in numeric(10, 2)
_SQL_LEVEL = re.compile(r"^(?:PREPARE|EXECUTE|DECLARE|FETCH|MOVE)\s", re.IGNORECASE)
_CLOSE = re.compile(rf"^CLOSE\s+(?:(?P<all>ALL)|{_NAME})$", re.IGNORECASE)


# Statements up to this long are remembered parsed, by their text: tools send the same ones again and again, and
# parsing one costs about as much as answering it from the result cache. At most _REMEMBERED of them.
_REMEMBERED_CHARS = 4_096
_REMEMBERED = 256


def split(sql: str, max_chars: int) -> list[str]:
    """The statements of a simple query's text, each as written (separated by `;` outside literals)."""
    if len(sql) <= _REMEMBERED_CHARS:
        return list(_split_remembered(sql, max_chars))
    return _split(sql, max_chars)


@lru_cache(maxsize=_REMEMBERED)
def _split_remembered(sql: str, max_chars: int) -> tuple[str, ...]:
    return tuple(_split(sql, max_chars))


def _split(sql: str, max_chars: int) -> list[str]:
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
    """One statement's kind, parsed as PostgreSQL (a syntax error is 42601 with sqlglot's reason). A statement is
    immutable: the one remembered for a text is shared (Bind copies its tree)."""
    if len(text) <= _REMEMBERED_CHARS:
        return _classify_remembered(text, max_depth)
    return _classify(text, max_depth)


@lru_cache(maxsize=_REMEMBERED)
def _classify_remembered(text: str, max_depth: int) -> Statement:
    return _classify(text, max_depth)


def _classify(text: str, max_depth: int) -> Statement:
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
        return Statement(Kind.DEALLOCATE, text, name="ALL" if found.group("all") else identifier(found.group("name")))
    if found := _CLOSE.match(text):
        return Statement(Kind.CLOSE, text, name="ALL" if found.group("all") else identifier(found.group("name")))
    if _SQL_LEVEL.match(text):
        return _sql_level(text, max_depth)
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


def identifier(text: str) -> str:
    """A name as PostgreSQL keeps it: folded to lower case unless quoted (`""` in quotes is one `"`)."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"')
    return text.lower()


def _sql_level(text: str, max_depth: int) -> Statement:
    """PREPARE / EXECUTE of SQL-level prepared statements, and DECLARE / FETCH / MOVE of cursors."""
    verb = text.split(None, 1)[0].upper()
    if verb == "PREPARE" and (found := _PREPARE.match(text)):
        inner = classify(found.group("rest"), max_depth)
        if inner.kind not in (Kind.QUERY, Kind.CATALOG):
            raise PgError("42601", "PREPARE takes a query (SELECT, VALUES, WITH …)")
        types = tuple(type_oid(t) for t in _TYPE_LIST.split(found.group("types") or "") if t.strip())
        return Statement(Kind.PREPARE, text, name=identifier(found.group("name")), inner=inner, types=types)
    if verb == "EXECUTE" and (found := _EXECUTE.match(text)):
        args = found.group("args")
        values = tuple(_parse(f"SELECT {args}", max_depth).expressions) if args and args.strip() else ()
        return Statement(Kind.EXECUTE, text, name=identifier(found.group("name")), args=values)
    if verb == "DECLARE" and (found := _DECLARE.match(text)):
        inner = classify(found.group("rest"), max_depth)
        if inner.kind not in (Kind.QUERY, Kind.CATALOG):
            raise PgError("42601", "DECLARE … CURSOR FOR takes a query (SELECT, VALUES, WITH …)")
        hold = (found.group("hold") or "").upper() == "WITH"
        return Statement(
            Kind.DECLARE,
            text,
            name=identifier(found.group("name")),
            inner=inner,
            hold=hold,
            scroll=not found.group("no"),
            binary=bool(found.group("binary")),
        )
    if verb in ("FETCH", "MOVE") and (found := _FETCH.match(text)):
        kind = Kind.FETCH if verb == "FETCH" else Kind.MOVE
        direction = Direction.of(found.group("direction") or "")
        return Statement(kind, text, name=identifier(found.group("name")), direction=direction)
    raise PgError("42601", f"cannot parse the SQL: {verb} statement not understood: {text[:80]!r}")


def type_oid(name: str) -> int:
    """The OID of a PREPARE parameter's type (0, unknown, for a type the wire has no OID for: read as text)."""
    try:
        datatype = exp.DataType.build(name.strip(), dialect=READ)
    except (ParseError, ValueError) as err:
        raise PgError("42704", f'type "{name.strip()}" does not exist') from err
    return placeholders.type_oid(datatype)


_WORD = re.compile(r"[A-Za-z_]\w*")
_NAMES = (TokenType.VAR, TokenType.IDENTIFIER, TokenType.STRING)  # a name or a quoted one, not a keyword


def _keyword_labels(tokens: list[Token]) -> list[Token]:
    """A keyword after AS is a column label, as PostgreSQL reads `… AS select` (Metabase's privileges query)."""
    for before, token in itertools.pairwise(tokens):
        if before.token_type == TokenType.ALIAS and token.token_type not in _NAMES and _WORD.fullmatch(token.text):
            token.token_type = TokenType.VAR
    return tokens


def _parse(text: str, max_depth: int) -> exp.Expr:
    dialect = sqlglot.Dialect.get_or_raise(READ)
    try:
        tokens = _keyword_labels(dialect.tokenize(text))
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
