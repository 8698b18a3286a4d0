"""`information_schema.schemata`, `.tables` and `.columns` as SQL: virtual tables whose rows are built from the
project's catalog description (`rows`), queried in a DuckDB connection of their own that holds nothing else.

A statement that reads one of these views is a catalog query: it may read only them (and its own CTEs), and
passes the front end's guard against a catalog of the views alone, so no engine catalog, file or function
outside the allow-list is reachable; the connection is sealed as the query engine's is (no file, no network, no
extension), and past `[query] timeout_s` a statement is interrupted. Filters, joins, ordering and aggregates
over the views work as SQL."""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa
from sqlglot import exp

from precube.query import guard
from precube.query.bounds import UNBOUNDED, ResultBounds
from precube.query.cancel import Cancellation
from precube.query.catalog.rows import VIEWS, view_tables
from precube.query.duckdb_engine import BATCH_ROWS, sealed, time_limited
from precube.query.engine_errors import mapped_errors
from precube.query.errors import UnknownTableError
from precube.query.frontend import Catalog
from precube.query.project_metadata import ProjectMetadata
from precube.query.spill import Spill
from precube.query.value_bounds import bounded_values
from precube.query.watchdog import Watchdog

SCHEMA = "information_schema"
_SPARK_TYPES = {"string": "string", "int32": "int"}
VIEW_CATALOG = Catalog(
    SCHEMA,
    {SCHEMA: {name: {f.name: _SPARK_TYPES[str(f.type)] for f in schema} for name, schema in VIEWS.items()}},
)


def _is_view(table: exp.Table) -> bool:
    return table.db.lower() == SCHEMA and table.name.lower() in VIEWS and not table.catalog


def reads_views(tree: exp.Query) -> bool:
    """Whether the statement reads an information_schema view (it is then answered here, or refused)."""
    return any(_is_view(t) for t in tree.find_all(exp.Table))


def _relation(name: str) -> str:
    return f"information_schema__{name}"


class InformationSchema:
    """One project's information_schema views, in a connection of their own (made on first use, its tables
    replaced when the project's metadata is a newer read)."""

    def __init__(
        self,
        memory_limit: str = "",
        timeout_s: float | None = None,
        bounds: ResultBounds = UNBOUNDED,
        spill: Spill | None = None,
    ) -> None:
        self.memory_limit = memory_limit
        self.spill = spill
        self.timeout_s = timeout_s
        self.bounds = bounds
        self._con: duckdb.DuckDBPyConnection | None = None
        self._version: int | None = None
        self._lock = threading.Lock()
        self._watchdog = Watchdog(self._interrupt)

    def query(self, tree: exp.Query, metadata: ProjectMetadata, cancel: Cancellation | None = None) -> pa.Table:
        """The rows of `tree` (parsed, reading at least one view) over the views of `metadata`'s project, within
        the statement's deadline (`cancel`'s, else `timeout_s`)."""
        guard.check(tree, VIEW_CATALOG)  # table functions, engine catalogs, files; functions off the allow-list
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if not _is_view(table) and not (not table.db and table.name.lower() in ctes):
                shown = ".".join(p for p in (table.catalog, table.db, table.name) if p).upper()
                raise UnknownTableError(
                    f"table {shown} cannot be read beside information_schema: a catalog query reads only "
                    f"information_schema.{', information_schema.'.join(VIEWS)}"
                )
        tree = tree.copy()
        for table in list(tree.find_all(exp.Table)):
            if _is_view(table):
                alias = table.alias or table.name.lower()
                table.replace(exp.alias_(exp.to_table(_relation(table.name.lower())), alias, table=True))
        text = bounded_values(tree, self.bounds.max_bytes).sql(dialect="duckdb")
        with self._lock, mapped_errors("duckdb"):
            con = self._connection(metadata)
            return time_limited(self._watchdog, self.timeout_s, lambda: self._fetch(con, text), cancel)

    def _fetch(self, con: duckdb.DuckDBPyConnection, text: str) -> pa.Table:
        reader = con.sql(text).to_arrow_reader(BATCH_ROWS)  # streams: stopped at a bound
        return self.bounds.collect(reader.schema, reader)

    def _connection(self, metadata: ProjectMetadata) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = sealed(duckdb.connect(), self.memory_limit, spill=self.spill)
        if self._version != metadata.version:
            for name, rows in view_tables(metadata.description).items():
                self._con.register(_relation(name), rows)
            self._version = metadata.version
        return self._con

    def _interrupt(self) -> None:
        if self._con is not None:
            self._con.interrupt()

    def close(self) -> None:
        self._watchdog.close()
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
