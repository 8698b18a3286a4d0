"""Queries over `pg_catalog` and `information_schema` (and of the session functions alone: `version()`,
`current_database()`…), answered from the project's metadata, never from the engine.

Each project's catalog is a sandboxed in-memory DuckDB (no file or network access, configuration locked,
one thread) holding only the rows of `catalog_tables` in schemas of its own, rebuilt when the project's
metadata moves. A client's statement is rewritten on its parsed tree before it runs there: every
table must be an emulated relation (or a CTE, `unnest`, `generate_series`, `pg_get_keywords()`, a function
returning an array: one row), `pg_catalog.` and `information_schema.` prefixes and
`COLLATE` go, PostgreSQL's functions become macros of the sandbox or the connection's literal values
(`current_user`, `current_setting(…)`), casts to `regclass`/`regtype`/`name`/`oid` become lookups or plain
types, and `OPERATOR(pg_catalog.~)` a regular-expression match; any other `pg_*` function is refused."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
from sqlglot import exp

from precube.query.bounds import UNBOUNDED, ResultBounds
from precube.query.cancel import Cancellation, allowed, timeout_error
from precube.query.duckdb_engine import BATCH_ROWS
from precube.query.engine_errors import query_error
from precube.query.errors import QueryMemoryError, ResultTooLargeError
from precube.query.value_bounds import bounded_values
from precube.server.pgwire import catalog_tables as ct
from precube.server.pgwire.session_settings import SessionSettings
from precube.server.pgwire.sqlstate import PgError
from precube.server.pgwire.types import TYPES

if TYPE_CHECKING:
    from precube.query.project_metadata import ProjectMetadata

SCHEMAS = {"pg_catalog": "pgw_catalog", "information_schema": "pgw_information"}
KEYWORDS = "pgw_keywords"  # pg_get_keywords()'s rows: DuckDB's parser is PostgreSQL's, and so its keywords
MAX_SANDBOXES = 64  # (project, user) catalogs kept; the least recently built goes first
CATALOG_TABLES = frozenset(ct.COLUMNS["pg_catalog"])
_SESSION_FUNCTIONS: tuple[type[exp.Func], ...] = (exp.CurrentUser, exp.SessionUser, exp.CurrentDatabase)
_SESSION_FUNCTIONS += (exp.CurrentSchema, exp.CurrentSchemas, exp.CurrentVersion, exp.CurrentCatalog)
_SESSION_NAMES = frozenset({"current_setting", "pg_backend_pid", "version", "inet_server_port", "inet_server_addr"})
_SESSION_NAMES |= {"to_regclass", "to_regtype", "to_regnamespace", "to_regrole", "pg_get_keywords"}
_TABLE_FUNCTIONS = (exp.Explode, exp.Unnest, exp.ExplodingGenerateSeries, exp.GenerateSeries)
_READS = (
    "list_has_any(list_transform(string_split(lower({privileges}), ','), lambda p: trim(p)), "
    "['select', 'usage', 'connect', 'execute', 'select with grant option', 'usage with grant option'])"
)
# PostgreSQL's functions the sandbox defines (as `pgw_NAME` macros: DuckDB's own pg_catalog macros are never
# reached): name → DuckDB macro parameters and body
MACROS: dict[str, tuple[str, str]] = {
    "pg_get_userbyid": ("o", f"'{ct.OWNER_NAME}'"),
    "pg_table_is_visible": ("o", "true"),
    "pg_type_is_visible": ("o", "true"),
    "pg_function_is_visible": ("o", "true"),
    "pg_collation_is_visible": ("o", "true"),
    "pg_operator_is_visible": ("o", "true"),
    "pg_opclass_is_visible": ("o", "true"),
    "pg_opfamily_is_visible": ("o", "true"),
    "pg_conversion_is_visible": ("o", "true"),
    "pg_database_size": ("o", "CAST(0 AS BIGINT)"),
    "pg_get_serial_sequence": ("t, c", "CAST(NULL AS VARCHAR)"),  # no column is serial: precube is read-only
    "pg_get_expr": ("e, r, p := NULL", "CAST(e AS VARCHAR)"),  # an expression is stored as its text
    "pg_get_constraintdef": ("o, p := NULL", "CAST(NULL AS VARCHAR)"),
    "pg_get_indexdef": ("o, c := NULL, p := NULL", "CAST(NULL AS VARCHAR)"),
    "pg_get_viewdef": ("o, p := NULL", "CAST(NULL AS VARCHAR)"),
    "pg_get_triggerdef": ("o, p := NULL", "CAST(NULL AS VARCHAR)"),
    "pg_get_partkeydef": ("o", "CAST(NULL AS VARCHAR)"),
    "pg_get_statisticsobjdef_columns": ("o", "CAST(NULL AS VARCHAR)"),
    "pg_get_function_result": ("o", "CAST(NULL AS VARCHAR)"),
    "pg_get_function_arguments": ("o", "CAST(NULL AS VARCHAR)"),
    "pg_get_function_identity_arguments": ("o", "CAST(NULL AS VARCHAR)"),
    "pg_tablespace_location": ("o", "''"),
    "pg_encoding_to_char": ("e", "'UTF8'"),
    "pg_client_encoding": ("", "'UTF8'"),  # psqlODBC (Tableau) at connect
    "pg_char_to_encoding": ("e", "6"),
    "pg_relation_size": ("o, f := NULL", "CAST(0 AS BIGINT)"),
    "pg_total_relation_size": ("o", "CAST(0 AS BIGINT)"),
    "pg_table_size": ("o", "CAST(0 AS BIGINT)"),
    "pg_indexes_size": ("o", "CAST(0 AS BIGINT)"),
    "pg_size_pretty": ("b", "format_bytes(CAST(b AS BIGINT))"),
    "pg_relation_is_publishable": ("o", "false"),
    "pg_is_in_recovery": ("", "false"),
    "pg_postmaster_start_time": ("", "TIMESTAMP '2000-01-01 00:00:00'"),
    "pg_is_other_temp_schema": ("o", "false"),
    "pg_my_temp_schema": ("", "CAST(0 AS BIGINT)"),
    # precube is read-only: a listed privilege that reads is held (the last argument names them, `c` when the
    # user is given), none that writes or creates
    "has_table_privilege": ("a, b, c := NULL", _READS.format(privileges="coalesce(c, b)")),
    "has_schema_privilege": ("a, b, c := NULL", _READS.format(privileges="coalesce(c, b)")),
    "has_database_privilege": ("a, b, c := NULL", _READS.format(privileges="coalesce(c, b)")),
    "has_column_privilege": ("a, b, c, d := NULL", _READS.format(privileges="coalesce(d, c)")),
    "has_any_column_privilege": ("a, b, c := NULL", _READS.format(privileges="coalesce(c, b)")),
    "has_function_privilege": ("a, b, c := NULL", _READS.format(privileges="coalesce(c, b)")),
    "txid_current": ("", "CAST(1 AS BIGINT)"),
    "obj_description": (
        "o, c := NULL",
        "(SELECT description FROM pgw_catalog.pg_description WHERE objoid = o AND objsubid = 0 LIMIT 1)",
    ),
    "col_description": (
        "o, n",
        "(SELECT description FROM pgw_catalog.pg_description WHERE objoid = o AND objsubid = n LIMIT 1)",
    ),
    "shobj_description": ("o, c", "CAST(NULL AS VARCHAR)"),
    "format_type": (
        "t, m",
        "(SELECT CASE WHEN typname = 'numeric' AND m > 4 THEN 'numeric(' || ((m - 4) // 65536) || ',' || "
        "((m - 4) % 65536) || ')' WHEN typname = 'varchar' AND m > 4 THEN 'character varying(' || (m - 4) || ')' "
        "WHEN typname = 'bpchar' AND m > 4 THEN 'character(' || (m - 4) || ')' ELSE "
        + "CASE typname "
        + " ".join(f"WHEN '{t.name}' THEN '{t.sql_name}'" for t in TYPES)
        + " ELSE typname END END FROM pgw_catalog.pg_type WHERE oid = t)",
    ),
    "array_upper": ("a, d", "len(a)"),
    "array_lower": ("a, d", "CASE WHEN len(a) > 0 THEN 1 END"),
    # quoted only when needed, as PostgreSQL does (its reserved words, which it quotes too, are not listed)
    "quote_ident": (
        "s",
        "CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_$]*') THEN s ELSE '\"' || replace(s, '\"', '\"\"') || '\"' END",
    ),
    "parse_ident": (  # (dots inside a quoted name are not told apart)
        "s",
        "list_transform(string_split(s, '.'), lambda p: CASE WHEN starts_with(trim(p), '\"') "
        "THEN replace(substr(trim(p), 2, length(trim(p)) - 2), '\"\"', '\"') ELSE lower(trim(p)) END)",
    ),
    "pg_stat_get_numscans": ("o", "CAST(0 AS BIGINT)"),  # precube keeps no index statistics
    # information_schema's set-returning helper (pgjdbc's getPrimaryKeys, getIndexInfo): (x, n) for each element
    "_pg_expandarray": ("a", "unnest(list_transform(range(1, len(a) + 1), lambda i: {'x': a[i], 'n': i}))"),
}
# PostgreSQL's variadic functions (a macro's arguments are fixed) → DuckDB's of the same meaning
_RENAMED = {"json_build_object": "json_object", "jsonb_build_object": "json_object"}
_REFUSED_PREFIXES = ("pg_", "has_", "duckdb_", "pragma_", "read_", "query", "glob", "current_setting")


def is_catalog_query(tree: exp.Expr) -> bool:
    """A query the catalog answers: it reads an emulated relation, or calls session functions over no table."""
    tables = list(tree.find_all(exp.Table))
    for table in tables:
        if table.db.lower() in SCHEMAS or (not table.db and table.name.lower() in CATALOG_TABLES):
            return True
    if any(isinstance(t.this, exp.Identifier) for t in tables):
        return False
    for func in tree.find_all(exp.Func):
        if isinstance(func, _SESSION_FUNCTIONS) or func.name.lower() in _SESSION_NAMES | set(MACROS):
            return True
        if isinstance(func, exp.Cast) and _cast_target(func) in _LOOKUP_TYPES:
            return True
    return False


_LOOKUP_TYPES = frozenset({"regclass", "regtype", "regnamespace", "regrole", "regproc", "regprocedure"})


def _cast_target(node: exp.Cast) -> str:
    """A cast's type as PostgreSQL names it, without `pg_catalog.` and quotes (`regclass`, `int2[]`)."""
    return node.to.sql(dialect="postgres").lower().replace('"', "").removeprefix("pg_catalog.")


@dataclass
class _Sandbox:
    version: int
    db: duckdb.DuckDBPyConnection


class Catalog:
    """The catalog sandboxes of one server, one per project (and user: the rows name who asks); a statement
    runs at most `timeout_s` and answers within `bounds`."""

    def __init__(self, timeout_s: float | None = None, bounds: ResultBounds = UNBOUNDED) -> None:
        self._lock = threading.Lock()
        self._sandboxes: dict[tuple[str, str], _Sandbox] = {}
        self.timeout_s = timeout_s
        self.bounds = bounds

    def answer(
        self,
        metadata: ProjectMetadata,
        project: str,
        tree: exp.Expr,
        settings: SessionSettings,
        cancel: Cancellation | None = None,
    ) -> pa.Table:
        """Run a catalog query on the project's `metadata` for the connection with these settings, until the
        statement's deadline (`cancel`'s, else `timeout_s` from now)."""
        seconds = allowed(cancel, self.timeout_s)  # a statement past its deadline fails here
        sandbox = self._sandbox(project, settings.user, metadata)
        schemas = {schema.lower() for schema in metadata.description.schemas}
        current = current_schema(settings, schemas, metadata.default_database.lower())
        rewritten = rewrite(tree, project, current, settings)
        sql = bounded_values(rewritten, self.bounds.max_bytes).sql(dialect="duckdb")
        cursor = sandbox.db.cursor()
        # a timer per statement: catalog statements are few, and cursors of one sandbox run side by side
        timer = threading.Timer(seconds, cursor.interrupt) if seconds is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            reader = cursor.sql(sql).to_arrow_reader(BATCH_ROWS)  # streams: stopped at a bound
            return self.bounds.collect(reader.schema, reader)
        except duckdb.InterruptException as err:
            raise timeout_error(cancel, self.timeout_s) from err
        except duckdb.Error as err:
            found = query_error(err)  # out of memory, a value past its bound: precube's own error
            if isinstance(found, (QueryMemoryError, ResultTooLargeError)):
                raise found from err
            raise sandbox_error(str(err).splitlines()[0]) from err  # any other: PostgreSQL's words and SQLSTATE
        finally:
            if timer is not None:
                timer.cancel()
            cursor.close()

    def _sandbox(self, project: str, user: str, metadata: ProjectMetadata) -> _Sandbox:
        key = (project, user)
        with self._lock:
            found = self._sandboxes.get(key)
            if found is None or found.version != metadata.version:
                if found is not None:
                    found.db.close()
                found = _Sandbox(metadata.version, _build(user, metadata))
                self._sandboxes.pop(key, None)
                self._sandboxes[key] = found
                while len(self._sandboxes) > MAX_SANDBOXES:
                    self._sandboxes.pop(next(iter(self._sandboxes))).db.close()
            return found

    def close(self) -> None:
        with self._lock:
            for sandbox in self._sandboxes.values():
                sandbox.db.close()
            self._sandboxes.clear()


# the sandbox's errors PostgreSQL raises too, as PostgreSQL words them (with its SQLSTATE: tools match on both)
_ERRORS = [
    (re.compile(r'Referenced column "(?P<name>[^"]+)" not found'), "42703", 'column "{name}" does not exist'),
    (re.compile(r'does not have a column named "(?P<name>[^"]+)"'), "42703", 'column "{name}" does not exist'),
    (
        re.compile(r'Referenced table "(?P<name>[^"]+)" not found'),
        "42P01",
        'missing FROM-clause entry for table "{name}"',
    ),
    (re.compile(r"Table with name (?P<name>\S+) does not exist"), "42P01", 'relation "{name}" does not exist'),
    (re.compile(r"Function with name (?P<name>\S+) does not exist"), "42883", "function {name}() does not exist"),
    (
        re.compile(r"No function matches the given name and argument types '(?P<name>[^(]+)\("),
        "42883",
        "function {name}() does not exist",
    ),
    (re.compile(r"^Conversion Error: (?P<name>.+)$"), "22P02", "invalid input syntax: {name}"),
]


def sandbox_error(message: str) -> PgError:
    """The sandbox's error as PostgreSQL's for the same mistake; anything else is a query the catalog does not
    support (0A000)."""
    for pattern, sqlstate, text in _ERRORS:
        if found := pattern.search(message):
            return PgError(sqlstate, text.format(name=found.group("name")))
    return PgError("0A000", f"the catalog cannot answer this query: {message}")


def _build(user: str, metadata: ProjectMetadata) -> duckdb.DuckDBPyConnection:
    db = duckdb.connect(
        ":memory:",
        config={
            "enable_external_access": False,  # no file, extension or network access
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "threads": 1,
            "memory_limit": "256MB",
        },
    )
    found = ct.rows(metadata.description, user)
    for schema, relations in ct.COLUMNS.items():
        db.execute(f"CREATE SCHEMA {SCHEMAS[schema]}")
        for name, columns in relations.items():
            db.execute(f"CREATE TABLE {SCHEMAS[schema]}.{name} ({columns})")
            for row in found[name]:
                into = f"{SCHEMAS[schema]}.{name} ({', '.join(row)})"
                db.execute(f"INSERT INTO {into} VALUES ({', '.join('?' for _ in row)})", list(row.values()))
    db.execute(
        f"CREATE TABLE {SCHEMAS['pg_catalog']}.{KEYWORDS} AS SELECT DISTINCT keyword_name AS word, "
        "CASE keyword_category WHEN 'reserved' THEN 'R' WHEN 'unreserved' THEN 'U' WHEN 'type_function' THEN 'T' "
        "ELSE 'C' END AS catcode, true AS barelabel, CASE keyword_category WHEN 'reserved' THEN 'reserved' "
        "WHEN 'unreserved' THEN 'unreserved' WHEN 'type_function' THEN 'reserved (can be function or type name)' "
        "ELSE 'unreserved (cannot be function or type name)' END AS catdesc, 'can be bare label' AS baredesc "
        "FROM duckdb_keywords() ORDER BY word"
    )
    for name, (args, body) in MACROS.items():
        db.execute(f"CREATE MACRO pgw_{name}({args}) AS {body}")
    db.execute("SET lock_configuration = true")
    return db


def _refuse_table(table: exp.Table) -> PgError:
    name = ".".join(part.name for part in table.parts) if isinstance(table.this, exp.Identifier) else table.name
    return PgError("42P01", f'relation "{name or table.this.sql(dialect="postgres")}" does not exist')


def current_schema(settings: SessionSettings, schemas: set[str], default: str) -> str:
    """`current_schema()`: the first schema of `search_path` the project has (`"$user"` the user's name), as
    PostgreSQL answers; the project's default database when none is (PostgreSQL's NULL would leave a tool
    without a schema to list)."""
    for part in settings.show("search_path").split(","):
        name = part.strip()
        if name == '"$user"':
            name = settings.user
        elif name.startswith('"'):
            name = name[1:-1].replace('""', '"')
        if name.lower() in schemas:
            return name.lower()
    return default


def rewrite(tree: exp.Expr, project: str, schema: str, settings: SessionSettings) -> exp.Expr:
    """The statement as the sandbox runs it (see the module's docstring)."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    user = settings.user

    def sub(node: exp.Expr) -> exp.Expr:
        """A node's part, rewritten on its own (`transform` does not descend into a node it replaced)."""
        return node.transform(visit, copy=False)

    def visit(node: exp.Expr) -> exp.Expr:
        if (
            isinstance(node, exp.Dot)
            and isinstance(node.expression, exp.Func)
            and node.this.name.lower() in SCHEMAS  # pg_catalog.f(…), information_schema._pg_expandarray(…)
        ):
            return sub(node.expression)
        if isinstance(node, exp.Table) and _in_from(node.this):
            keywords = node.this.name.lower() == "pg_get_keywords"
            return _function_table(node, node.this if keywords else sub(node.this))
        if isinstance(node, exp.Table):
            return _table(node, ctes)
        if isinstance(node, exp.Column) and node.db.lower() in SCHEMAS:  # pg_catalog.pg_class.relname
            node.set("db", exp.to_identifier(SCHEMAS[node.db.lower()]))
            return node
        if isinstance(node, exp.Collate):
            return sub(node.this)
        if isinstance(node, exp.Operator):
            return _operator(sub(node.this), str(node.args.get("operator", "")), sub(node.expression))
        if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
            return exp.Literal.string(user)
        if isinstance(node, (exp.CurrentDatabase, exp.CurrentCatalog)):
            return exp.Literal.string(project)
        if isinstance(node, exp.CurrentSchema):
            return exp.Literal.string(schema)
        if isinstance(node, exp.CurrentSchemas):
            return exp.Array(expressions=[exp.Literal.string(schema)])
        if isinstance(node, exp.CurrentVersion):
            return exp.Literal.string(f"PostgreSQL {settings.show('server_version')} on precube")
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return _cast(node, sub(node.this))
        if isinstance(node, exp.Anonymous):
            return _function(node, settings)
        return node

    return _table_oids(tree.copy()).transform(visit, copy=False)


def _table_oids(tree: exp.Expr) -> exp.Expr:
    """`alias.tableoid` (a system column: psql's `\\dd` joins on it) as its catalog's OID, the alias looked up
    among the tables of the query that names it."""
    for column in list(tree.find_all(exp.Column)):
        select = column.find_ancestor(exp.Select)
        if column.name.lower() != "tableoid" or not column.table or select is None:
            continue
        sources = [select.args.get("from_"), *select.args.get("joins", [])]
        tables = [source.this for source in sources if source is not None and isinstance(source.this, exp.Table)]
        names = {table.alias_or_name.lower(): table.name.lower() for table in tables}
        found = ct.TABLE_OIDS.get(names.get(column.table.lower(), ""))
        if found is not None:
            column.replace(exp.Literal.number(found))
    return tree


# functions a FROM may name besides the table functions: pg_get_keywords(), and ones returning an array (one row)
_IN_FROM = frozenset({"pg_get_keywords", "string_to_array", "regexp_split_to_array", "parse_ident"})


def _in_from(node: exp.Expr) -> bool:
    return isinstance(node, exp.StringToArray) or (isinstance(node, exp.Anonymous) and node.name.lower() in _IN_FROM)


def _function_table(table: exp.Table, func: exp.Expr) -> exp.Expr:
    """A function in FROM: `pg_get_keywords()` the sandbox's keyword list; any other (`string_to_array(…) s`)
    one row whose single column is named by the alias, as PostgreSQL reads a function returning no set."""
    alias = table.args.get("alias")
    if func.name.lower() == "pg_get_keywords":
        found = exp.Table(this=exp.to_identifier(KEYWORDS), db=exp.to_identifier(SCHEMAS["pg_catalog"]))
        if alias is not None:
            found.set("alias", alias)
        return found
    relation = alias.this if alias is not None else exp.to_identifier(func.name)
    column = alias.columns[0] if alias is not None and alias.columns else relation  # `AS t(c)` names the column
    return exp.select(exp.alias_(func, column.copy())).subquery(relation.copy())


def _table(table: exp.Table, ctes: set[str]) -> exp.Expr:
    if not isinstance(table.this, exp.Identifier):
        if isinstance(table.this, _TABLE_FUNCTIONS):
            table.set("db", None)
            return table
        raise _refuse_table(table)
    db, name = table.db.lower(), table.name.lower()
    if not db and name in ctes:
        return table
    schema = db or "pg_catalog"
    if schema in SCHEMAS and name in ct.COLUMNS[schema] and not table.catalog:
        table.set("db", exp.to_identifier(SCHEMAS[schema]))
        table.set("this", exp.to_identifier(name))
        return table
    raise _refuse_table(table)


_OPERATORS = {"~": (exp.RegexpLike, False), "~*": (exp.RegexpILike, False), "!~": (exp.RegexpLike, True)}
_OPERATORS |= {"!~*": (exp.RegexpILike, True), "~~": (exp.Like, False), "!~~": (exp.Like, True)}
_OPERATORS |= {"~~*": (exp.ILike, False), "!~~*": (exp.ILike, True)}


def _operator(left: exp.Expr, operator: str, right: exp.Expr) -> exp.Expr:
    symbol = operator.removeprefix("pg_catalog.").strip()
    comparisons = {"=": exp.EQ, "<>": exp.NEQ, "!=": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}
    if symbol in comparisons:
        return comparisons[symbol](this=left, expression=right)
    if symbol not in _OPERATORS:
        raise PgError("42883", f"operator {symbol} is not supported by precube's catalog")
    kind, negated = _OPERATORS[symbol]
    found: exp.Expr = kind(this=left, expression=right)
    return exp.Not(this=found) if negated else found


def _lookup(column: str, table: str, key: str, value: exp.Expr) -> exp.Expr:
    query = (
        exp.select(column)
        .from_(f"{SCHEMAS['pg_catalog']}.{table}")
        .where(exp.EQ(this=exp.column(key), expression=value))
    )
    return exp.Subquery(this=query.limit(1))


_TYPE_NAMES = {t.sql_name: t.name for t in TYPES} | {"int": "int4", "float": "float8", "boolean": "bool"}


def _reg(target: str, value: exp.Expr) -> exp.Expr | None:
    """A cast to an OID alias type (`'dates'::regclass`, `oid::regtype`): a name's OID, or an OID's name."""
    given = value.name.strip().lower() if isinstance(value, exp.Literal) and value.is_string else None
    if target == "regclass":
        if given is not None:
            return _lookup("oid", "pg_class", "relname", exp.Literal.string(given.split(".")[-1].strip('"')))
        return _lookup("relname", "pg_class", "oid", value)
    if target == "regtype":
        if given is not None:
            return _lookup("oid", "pg_type", "typname", exp.Literal.string(_TYPE_NAMES.get(given, given)))
        return _lookup("typname", "pg_type", "oid", value)
    if target == "regnamespace":
        if given is not None:
            return _lookup("oid", "pg_namespace", "nspname", exp.Literal.string(given.strip('"')))
        return _lookup("nspname", "pg_namespace", "oid", value)
    if target == "regrole":
        return _lookup("rolname", "pg_roles", "oid", value)
    return None


def _cast(node: exp.Cast, value: exp.Expr) -> exp.Expr:
    target = _cast_target(node)
    node.set("this", value)
    found = _reg(target, value)
    if found is not None:
        return found
    if target in ("int2vector", "oidvector"):
        return value
    base = target.removesuffix("[]")
    if target.endswith("[]") and isinstance(value, exp.Literal) and value.is_string:
        value = _array_literal(value.name)  # '{a,"b c"}'::text[]: PostgreSQL's array text, which DuckDB does not read
        node.set("this", value)
    if base in _PLAIN_TYPES:
        suffix = "[]" if target.endswith("[]") else ""
        return exp.cast(value, exp.DataType.build(_PLAIN_TYPES[base] + suffix, dialect="duckdb"))
    return node


_ELEMENT = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)')


def _array_literal(text: str) -> exp.Expr:
    """A one-dimensional array's text (`{a,"b,c",NULL}`) as a list of its elements."""
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        return exp.Literal.string(text)
    inner = inner[1:-1]
    elements: list[exp.Expr] = []
    for found in _ELEMENT.finditer(inner) if inner.strip() else ():
        item = found.group(1).strip()
        if found.start() == len(inner) and not item:
            break
        if item.startswith('"'):
            elements.append(exp.Literal.string(re.sub(r"\\(.)", r"\1", item[1:-1])))
        else:
            elements.append(exp.Null() if item.upper() == "NULL" else exp.Literal.string(item))
    return exp.Array(expressions=elements)


# PostgreSQL's type names in casts → the sandbox's (catalog identifiers and OIDs are text and integers there)
_PLAIN_TYPES = {"int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real", "float8": "double"}
_PLAIN_TYPES |= {"bool": "boolean", "oid": "bigint", "xid": "bigint", "cid": "bigint", "regoper": "bigint"}
_PLAIN_TYPES |= {"regconfig": "bigint", "regtype": "bigint"}
_PLAIN_TYPES |= dict.fromkeys(
    ("name", "char", "text", "bpchar", "regproc", "regprocedure", "pg_node_tree", "aclitem", "unknown"), "varchar"
)


def _function(node: exp.Anonymous, settings: SessionSettings) -> exp.Expr:
    name = node.name.lower()
    if name == "current_setting":
        [setting, *rest] = node.expressions or [exp.Null()]
        while isinstance(setting, exp.Cast):  # a bound parameter's `$1::VARCHAR`
            setting = setting.this
        if not (isinstance(setting, exp.Literal) and setting.is_string):
            raise PgError("0A000", "current_setting() takes a setting's name as a string literal")
        missing_ok = bool(rest) and rest[0].sql(dialect="postgres").lower() in ("true", "'t'", "'true'", "'on'")
        try:
            return exp.Literal.string(settings.show(setting.name.lower()))
        except PgError:
            if missing_ok:  # current_setting(name, true): NULL for a setting that does not exist
                return exp.Null()
            raise
    if name in ("to_regclass", "to_regtype", "to_regnamespace", "to_regrole") and len(node.expressions) == 1:
        found = _reg(name.removeprefix("to_"), node.expressions[0])
        if found is not None:
            return found
    if name == "version":
        return exp.Literal.string(f"PostgreSQL {settings.show('server_version')} on precube")
    if name in ("pg_backend_pid", "inet_server_port"):
        return exp.Literal.number(0)
    if name == "inet_server_addr":
        return exp.Null()
    if name in MACROS:
        node.set("this", f"pgw_{name}")
        return node
    if name in _RENAMED:
        node.set("this", _RENAMED[name])
        return node
    if name.startswith(_REFUSED_PREFIXES):
        raise PgError("42883", f"function {name}() is not supported by precube's catalog")
    return node
