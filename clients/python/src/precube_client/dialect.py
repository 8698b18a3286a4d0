"""precube's SQLAlchemy dialect (SQLAlchemy 1.4 and 2.x), registered by entry point (`sqlalchemy.dialects`):

    precube+http://USER:PASSWORD@HOST:7070/PROJECT  a precube server (precube+https for TLS)
    precube:///PROJECT?home=/var/lib/precube        a query session in this process (the full `precube`
                                                    package's `precube.dbapi.dialect`, on `PrecubeBaseDialect`)

Statements compile to precube's SQL (Spark's, with `"` for identifiers): Spark's type names in CASTs, LIMIT
and OFFSET as literals, parameters as `?` bound by the DB-API. Names are case-insensitive and stored upper
case: SQLAlchemy sees them in lower case (`requires_name_normalize`, as for Oracle and Snowflake).

The inspector reads the catalog statements (`information_schema`, answered from the project's metadata): the
project's databases are the schemas, its tables the tables, no views; columns carry SQLAlchemy types from
precube's column types, and a model's computed columns are reported as computed. Primary keys, foreign keys,
indexes and constraints are empty: precube's tables declare none, and a model's joins are not constraints
(LEFT joins allow orphan rows, two models may join the same tables differently), as Kylin's JDBC driver and
kylinpy report none."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import URL, Connection, default, reflection
from sqlalchemy.exc import NoSuchTableError
from sqlalchemy.sql import compiler

if TYPE_CHECKING:  # SQLAlchemy 2's typed dictionaries (plain dictionaries at run time, as 1.4 has them)
    from sqlalchemy.engine.interfaces import (
        ReflectedColumn,
        ReflectedPrimaryKeyConstraint,
        ReflectedTableComment,
    )

SQLALCHEMY_1 = sqlalchemy.__version__.startswith("1.")
F = TypeVar("F", bound=Callable[..., Any])


def cached(fn: F) -> F:
    """SQLAlchemy's reflection cache. 1.4's rewrites the method from its signature, annotations included, and
    cannot write string annotations (this module's, `from __future__`): there it gets the method without them."""
    if SQLALCHEMY_1:
        fn.__annotations__ = {}
    return reflection.cache(fn)


_SPARK_TYPES: dict[str, type[sqltypes.TypeEngine[Any]]] = {
    "BOOLEAN": sqltypes.BOOLEAN,
    "TINYINT": sqltypes.SMALLINT,
    "SMALLINT": sqltypes.SMALLINT,
    "INT": sqltypes.INTEGER,
    "INTEGER": sqltypes.INTEGER,
    "BIGINT": sqltypes.BIGINT,
    "FLOAT": sqltypes.FLOAT,
    "REAL": sqltypes.FLOAT,
    "DOUBLE": getattr(sqltypes, "DOUBLE", sqltypes.FLOAT),  # SQLAlchemy 1.4 has no DOUBLE
    "STRING": sqltypes.VARCHAR,
    "VARCHAR": sqltypes.VARCHAR,
    "CHAR": sqltypes.CHAR,
    "DATE": sqltypes.DATE,
    "TIMESTAMP": sqltypes.TIMESTAMP,
    "BINARY": sqltypes.LargeBinary,
}
_DECIMAL = re.compile(r"(?:DECIMAL|NUMERIC)\((\d+),\s*(\d+)\)")


def column_type(spark_type: str) -> sqltypes.TypeEngine[Any]:
    """The SQLAlchemy type of a column of this Spark type (`INT`, `DECIMAL(15,2)`, `STRING` …)."""
    name = spark_type.strip().upper()
    decimal = _DECIMAL.fullmatch(name)
    if decimal is not None:
        return sqltypes.DECIMAL(int(decimal.group(1)), int(decimal.group(2)))
    found = _SPARK_TYPES.get(name.split("(", 1)[0].split("<", 1)[0])
    return found() if found is not None else sqltypes.NullType()


class PrecubeTypeCompiler(compiler.GenericTypeCompiler):
    """Spark's type names (a CAST in a statement)."""

    def visit_string(self, type_: Any, **kw: Any) -> str:
        return "STRING"

    visit_VARCHAR = visit_NVARCHAR = visit_CHAR = visit_NCHAR = visit_TEXT = visit_unicode = visit_string  # noqa: N815
    visit_unicode_text = visit_text = visit_string

    def visit_INTEGER(self, type_: Any, **kw: Any) -> str:  # noqa: N802 (SQLAlchemy's visitor names)
        return "INT"

    def visit_FLOAT(self, type_: Any, **kw: Any) -> str:  # noqa: N802
        return "DOUBLE"

    def visit_DATETIME(self, type_: Any, **kw: Any) -> str:  # noqa: N802
        return "TIMESTAMP"

    def visit_large_binary(self, type_: Any, **kw: Any) -> str:
        return "BINARY"

    visit_BLOB = visit_BINARY = visit_VARBINARY = visit_large_binary  # noqa: N815


class PrecubeCompiler(compiler.SQLCompiler):
    def limit_clause(self, select: Any, **kw: Any) -> str:
        """LIMIT and OFFSET as literals (precube's planner reads them as written)."""
        text = ""
        if select._limit_clause is not None:
            text += f"\n LIMIT {int(select._limit)}"
        if select._offset_clause is not None:
            text += f"\n OFFSET {int(select._offset)}"
        return text


class PrecubeIdentifierPreparer(compiler.IdentifierPreparer):
    reserved_words = compiler.RESERVED_WORDS | {"date", "timestamp", "interval", "range", "rows", "year", "month"}


class PrecubeBaseDialect(default.DefaultDialect):
    """What every precube dialect shares: its SQL, types and inspector; a driver says how to connect."""

    name = "precube"
    default_paramstyle = "qmark"
    supports_statement_cache = True
    supports_native_boolean = True
    supports_native_decimal = True
    returns_native_bytes = True
    supports_alter = False
    supports_sequences = False
    supports_comments = True
    postfetch_lastrowid = False
    requires_name_normalize = True
    statement_compiler = PrecubeCompiler
    type_compiler_cls = PrecubeTypeCompiler  # SQLAlchemy 2's name
    preparer = PrecubeIdentifierPreparer

    if SQLALCHEMY_1:
        type_compiler: Any = PrecubeTypeCompiler  # SQLAlchemy 1.4's name

        @classmethod
        def dbapi(cls) -> ModuleType:  # type: ignore[override]  # SQLAlchemy 1.4 asks this (2.x: import_dbapi)
            return cls.import_dbapi()

    @classmethod
    def import_dbapi(cls) -> ModuleType:
        import precube_client

        return precube_client

    def _get_default_schema_name(self, connection: Connection) -> str:
        pooled: Any = connection.connection  # SQLAlchemy 1.4's first connect hands the DB-API connection itself
        dbapi_connection: Any = getattr(pooled, "dbapi_connection", pooled)
        return self._name(dbapi_connection.backend.default_database())

    def _get_server_version_info(self, connection: Connection) -> tuple[int, ...]:
        from precube_client import __version__

        return tuple(int(p) for p in __version__.split(".") if p.isdigit())

    def do_rollback(self, dbapi_connection: Any) -> None:
        """Nothing to roll back: precube's SQL only reads."""

    def _name(self, name: str) -> str:
        return str(self.normalize_name(name))  # type: ignore[no-untyped-call]  # (untyped in SQLAlchemy)

    def _rows(self, connection: Connection, sql: str, *params: str) -> list[Any]:
        return list(connection.exec_driver_sql(sql, params).fetchall())

    def _schema(self, connection: Connection, schema: str | None) -> str:
        return (schema or self._get_default_schema_name(connection)).upper()

    @cached
    def get_schema_names(self, connection: Connection, **kw: Any) -> list[str]:
        found = self._rows(connection, "SELECT schema_name FROM information_schema.schemata ORDER BY schema_name")
        return [self._name(r[0]) for r in found]

    @cached
    def get_table_names(self, connection: Connection, schema: str | None = None, **kw: Any) -> list[str]:
        found = self._rows(
            connection,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name",
            self._schema(connection, schema),
        )
        return [self._name(r[0]) for r in found]

    def get_view_names(self, connection: Connection, schema: str | None = None, **kw: Any) -> list[str]:
        return []  # precube has no views

    def has_table(self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any) -> bool:
        found = self._rows(
            connection,
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            self._schema(connection, schema),
            table_name.upper(),
        )
        return bool(found and found[0][0])

    @cached
    def get_columns(
        self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any
    ) -> list[ReflectedColumn]:
        found = self._rows(
            connection,
            "SELECT column_name, full_data_type, is_nullable, column_comment, generation_expression "
            "FROM information_schema.columns WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            self._schema(connection, schema),
            table_name.upper(),
        )
        if not found:
            raise NoSuchTableError(f"{schema}.{table_name}" if schema else table_name)
        columns = []
        for name, spark_type, nullable, comment, expression in found:
            column: ReflectedColumn = {
                "name": self._name(name),
                "type": column_type(spark_type),
                "nullable": nullable == "YES",
                "default": None,
                "comment": comment,
            }
            if expression is not None:
                column["computed"] = {"sqltext": expression, "persisted": True}
            columns.append(column)
        return columns

    @cached
    def get_table_comment(
        self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any
    ) -> ReflectedTableComment:
        found = self._rows(
            connection,
            "SELECT table_comment FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            self._schema(connection, schema),
            table_name.upper(),
        )
        if not found:
            raise NoSuchTableError(table_name)
        return {"text": found[0][0]}

    def get_pk_constraint(
        self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any
    ) -> ReflectedPrimaryKeyConstraint:
        return {"constrained_columns": [], "name": None}

    def get_foreign_keys(
        self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any
    ) -> list[Any]:
        return []

    def get_indexes(self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any) -> list[Any]:
        return []

    def get_unique_constraints(
        self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any
    ) -> list[Any]:
        return []

    def get_check_constraints(
        self, connection: Connection, table_name: str, schema: str | None = None, **kw: Any
    ) -> list[Any]:
        return []


class PrecubeHTTPDialect(PrecubeBaseDialect):
    """`precube+http://USER:PASSWORD@HOST:PORT/PROJECT`: a precube server."""

    driver = "http"
    scheme = "http"
    supports_statement_cache = True  # SQLAlchemy asks each subclass to say so itself

    def create_connect_args(self, url: URL) -> tuple[list[Any], dict[str, Any]]:
        project = (url.database or "").strip("/")
        unknown = sorted(set(url.query) - {"timeout"})
        if unknown:
            raise ValueError(f"unknown option {unknown[0]!r} in the URL: precube+{self.driver}:// takes timeout")
        host = url.host or "127.0.0.1"
        server = f"{self.scheme}://{host}:{url.port or 7070}"
        options: dict[str, Any] = {"project": project, "user": url.username, "password": url.password}
        if "timeout" in url.query:
            options["timeout"] = float(str(url.query["timeout"]))
        return [server], options


class PrecubeHTTPSDialect(PrecubeHTTPDialect):
    """`precube+https://…`: a precube server behind TLS."""

    driver = "https"
    scheme = "https"
    supports_statement_cache = True
