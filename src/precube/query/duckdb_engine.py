"""The in-process engine (DESIGN §6 step 5): DuckDB over layout Parquet files, and over file sources for
pushdown.

Layout relations are registered once per (layout, segments) — segment directories are immutable, so a
registration never goes stale; small ones are loaded into memory (planning a query over an in-memory
table is cheaper than over `read_parquet`). Measure cells that DuckDB cannot merge natively (Roaring
bitmaps, HLL and KLL sketches) are merged by scalar Python functions over the list of a group's cells.
"""

from __future__ import annotations

import contextlib
import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa
from duckdb import func, sqltypes
from sqlglot import exp

from precube.metadata import SourceType, Table, datatypes
from precube.metadata.csv_options import CsvOptions
from precube.query.bounds import UNBOUNDED, ResultBounds
from precube.query.cancel import CANCELLED, Cancellation
from precube.query.engine_errors import mapped_errors
from precube.query.errors import PushdownError, QueryCancelledError, QueryError, QueryTimeoutError
from precube.query.literal_lists import run_lifted
from precube.query.lookup_snapshot import SnapshotScan
from precube.query.rewrite import LayoutScan
from precube.query.spark_decimals import DECIMAL_OP, decimal_op, in_spark_terms, relation_types
from precube.query.value_bounds import bounded_values
from precube.query.watchdog import Watchdog
from precube.storage import cells
from precube.storage.paths import layout_path, local_path

# Layouts up to this many rows (over their segments) are held in memory: DuckDB's tables keep min/max per
# row group of ~120k rows, so a filter on a layout's leading (sorted) columns skips most of them, where a
# view over the layout's Parquet files, one row group a file at these sizes, reads every row.
IN_MEMORY_ROWS = 10_000_000
MEMORY_BUDGET_ROWS = 50_000_000  # least recently used in-memory layouts are dropped beyond this
# A statement over in-memory layouts of at most this many rows, or whose filter pins each layout's leading
# (sorted) column to a few values, runs on one thread.
SMALL_SCAN_ROWS = 2_000_000
ENUM_MAX_VALUES = 65_536  # a string column with at most this many distinct values is held as an ENUM
ENUM_SCREEN_ROWS = 200_000


T = TypeVar("T")

_SPARK_MEANING = (exp.Quantile, exp.Median, exp.CurrentDate, exp.CurrentTimestamp)


def _duckdb_tree(tree: exp.Query) -> exp.Query:
    """`tree`, or a copy of it where a call whose DuckDB form (as sqlglot prints it) means something else
    than in Spark is written so that it means the same. Spark's PERCENTILE and MEDIAN interpolate between
    the two nearest values and return DOUBLE (an array of them for an array of percentages): DuckDB's
    QUANTILE is the discrete one. The bare keywords CURRENT_DATE and CURRENT_TIMESTAMP resolve to an
    output of the same name in DuckDB."""
    if tree.find(*_SPARK_MEANING) is None:
        return tree
    tree = tree.copy()
    for node in list(tree.find_all(*_SPARK_MEANING)):
        if isinstance(node, exp.CurrentDate):
            node.replace(exp.Anonymous(this="CURRENT_DATE"))
        elif isinstance(node, exp.CurrentTimestamp):
            node.replace(exp.Anonymous(this="GET_CURRENT_TIMESTAMP"))
        elif not isinstance(node, exp.ApproxQuantile):
            q = node.args.get("quantile") if isinstance(node, exp.Quantile) else None
            whole: exp.Expr = node  # the cast goes around `… FILTER (…) OVER (…)`, which take the call itself
            for wrapper in (exp.Filter, exp.Window):
                whole = whole.parent if isinstance(whole.parent, wrapper) else whole
            call = exp.Anonymous(this="QUANTILE_CONT", expressions=[node.this, q or exp.Literal.number(0.5)])
            typed = exp.DataType.build("DOUBLE[]" if isinstance(q, exp.Array) else "DOUBLE", dialect="duckdb")
            if whole is node:
                node.replace(exp.cast(call, typed))
            else:
                node.replace(call)
                whole.replace(exp.cast(whole.copy(), typed))
    return tree


def _bitmap_count(blobs: list[bytes | None] | None) -> int:
    return cells.bitmap_cardinality(cells.bitmap_union(blobs or []))


def _hll_count(blobs: list[bytes | None] | None) -> int:
    return round(cells.hll_estimate(blobs or []))


def _kll_quantile(blobs: list[bytes | None] | None, q: float) -> float | None:
    return cells.kll_quantile(blobs or [], q)


class DuckDBEngine:
    name = "duckdb"
    dialect = "duckdb"

    def __init__(
        self,
        warehouse_root: str,
        project: str,
        *,
        sources: Iterable[Table] = (),
        memory_limit: str = "",
        timeout_s: float | None = None,
        bounds: ResultBounds = UNBOUNDED,
    ) -> None:
        self.root = warehouse_root
        self.project = project
        self.memory_limit = memory_limit
        self.timeout_s = timeout_s
        self.bounds = bounds  # an answer's rows and bytes, checked as they are fetched
        # what DuckDB may read: the project's layouts, and each file source's directory or file
        self._allowed_dirs = {f"{warehouse_root.rstrip('/')}/{project}"}
        self._allowed_files: set[str] = set()
        for table in sources:
            self._allow(table)
        self._lock = threading.RLock()
        self._watchdog = Watchdog(self._interrupt)  # the statement time-out
        self.con = self._connect()
        self._layouts: OrderedDict[str, int] = OrderedDict()  # relation → rows held in memory (0: a view)
        self._sources: dict[str, str] = {}  # DB.TABLE → the view's definition
        self._threads = int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        self._fetched = False  # a statement was answered (`_fetch`)
        self._small = False  # the settings in force are those for small statements (`_settle`)

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """A connection that reads only the allowed paths and loads no extension (defence behind the
        front end's guard, for whatever SQL reaches it).

        `enable_external_access=false` freezes `allowed_directories`/`allowed_paths` and cannot be undone
        while the database runs; `LOAD` and `INSTALL` fail under it, and auto-loading and auto-installing are
        off. The configuration is not locked (`lock_configuration`): `_settle` switches `threads` and
        `disabled_optimizers` per statement, which a lock forbids; the settings left open only tune the
        engine, and only a SET statement, which the front end never passes, could change them. A source
        outside the allowed paths (a table loaded after the engine started) reopens the connection with the
        list grown (`_register_source`): the layouts held in memory are then loaded again on demand."""
        con = duckdb.connect()
        blobs = duckdb.list_type(sqltypes.BLOB)
        con.create_function("precube_bitmap_count", _bitmap_count, [blobs], sqltypes.BIGINT)
        con.create_function("precube_hll_count", _hll_count, [blobs], sqltypes.BIGINT)
        con.create_function("precube_kll_quantile", _kll_quantile, [blobs, sqltypes.DOUBLE], sqltypes.DOUBLE)
        text, integer = sqltypes.VARCHAR, sqltypes.INTEGER
        con.create_function(DECIMAL_OP, decimal_op, [text, text, text, integer], text, type=func.ARROW)
        return sealed(con, self.memory_limit, self._allowed_dirs, self._allowed_files)

    def _allow(self, table: Table) -> bool:
        """Add a file source's path to the allowed ones; whether it was new."""
        path = _source_path(table)
        if path is None:
            return False
        found = self._allowed_dirs if Path(path).is_dir() else self._allowed_files
        if path in found or any(path.startswith(d.rstrip("/") + "/") for d in self._allowed_dirs):
            return False
        found.add(path)
        return True

    def _reopen(self) -> None:
        """A new connection with the allowed paths as they are now; what the old one held is registered again
        on demand."""
        self.con.close()
        self.con = self._connect()
        self._layouts.clear()
        self._sources.clear()
        self._small = False

    def close(self) -> None:
        self._watchdog.close()
        self.con.close()

    def _files(self, model_uuid: str, segment_id: str, layout_id: int) -> str:
        path = layout_path(self.root, self.project, model_uuid, segment_id, layout_id)
        return f"{path}/*.parquet"

    def _register_layout(self, scan: LayoutScan | SnapshotScan) -> None:
        if scan.name in self._layouts:
            self._layouts.move_to_end(scan.name)
            return
        if isinstance(scan, SnapshotScan):  # immutable as a layout's files, registered the same way
            source = f"read_parquet({_sql_list([scan.path + '/*.parquet'])})"
        elif scan.segment_ids:
            files = [self._files(scan.model_uuid, s, scan.layout_id) for s in scan.segment_ids]
            source = f"read_parquet({_sql_list(files)})"
        else:
            schema_files = [self._files(scan.model_uuid, scan.schema_segment, scan.layout_id)]
            source = f"read_parquet({_sql_list(schema_files)}) WHERE false"
        if scan.rows <= IN_MEMORY_ROWS:
            self._load(scan, source)
            self._layouts[scan.name] = max(scan.rows, 1)
            self._evict()
        else:
            self.con.execute(f'CREATE OR REPLACE VIEW "{scan.name}" AS SELECT * FROM {source}')
            self._layouts[scan.name] = 0

    def _load(self, scan: LayoutScan | SnapshotScan, source: str) -> None:
        """Hold the layout's rows in memory, sorted by its dimensions (each file is sorted, the files are
        not), so min/max per row group skip most rows under a filter on leading dimensions; strings with
        few distinct values become ENUMs (in sorted order, so comparisons, ORDER BY, MIN/MAX and string
        functions behave as on VARCHAR), which filters and groups compare as integers."""
        staged = f"{scan.name}__staged"
        self.con.execute(f'CREATE OR REPLACE TEMP TABLE "{staged}" AS SELECT * FROM {source}')
        try:
            described = self.con.execute(f'DESCRIBE "{staged}"').fetchall()
            names = [str(row[0]) for row in described]
            coded = self._enum_types(staged, [str(row[0]) for row in described if row[1] == "VARCHAR"], scan.rows)
            select = ", ".join(f'CAST("{c}" AS {coded[c]}) AS "{c}"' if c in coded else f'"{c}"' for c in names)
            order = ", ".join(f'"{c}" NULLS FIRST' for c in scan.sort_by if c in names)
            self.con.execute(
                f'CREATE OR REPLACE TABLE "{scan.name}" AS SELECT {select} FROM "{staged}"'
                + (f" ORDER BY {order}" if order else "")
            )
        finally:
            self.con.execute(f'DROP TABLE IF EXISTS "{staged}"')

    def _enum_types(self, table: str, texts: list[str], rows: int) -> dict[str, str]:
        """The ENUM type for each string column worth coding: at most ENUM_MAX_VALUES distinct values, each
        repeated on average (a column of mostly unique strings gains nothing). The distinct values of the
        first rows screen the columns (their count is a lower bound; listing a large layout's unique strings
        would cost seconds), then the survivors' values are listed and counted exactly."""
        limit = min(ENUM_MAX_VALUES, rows // 2)
        if not texts or limit < 1:
            return {}
        screened = f'(SELECT * FROM "{table}" LIMIT {ENUM_SCREEN_ROWS})'
        counts = self._per_column('count(DISTINCT "{c}")', texts, screened)
        worth = [c for c, n in zip(texts, counts, strict=True) if n <= limit]
        if not worth:
            return {}
        values = self._per_column('list(DISTINCT "{c}" ORDER BY "{c}") FILTER ("{c}" IS NOT NULL)', worth, f'"{table}"')
        return {
            c: "ENUM(" + ", ".join(map(_sql_string, v)) + ")"
            for c, v in zip(worth, values, strict=True)
            if v and len(v) <= limit
        }

    def _per_column(self, call: str, columns: list[str], relation: str) -> tuple[Any, ...]:
        """An aggregate of each column over a relation, in one pass; `call` names the column `{c}`."""
        row = self.con.execute(
            "SELECT " + ", ".join(call.format(c=c) for c in columns) + f" FROM {relation}"
        ).fetchone()
        return row or ()

    def _evict(self) -> None:
        while sum(self._layouts.values()) > MEMORY_BUDGET_ROWS and len(self._layouts) > 1:
            name, rows = self._layouts.popitem(last=False)
            self.con.execute(f'DROP {"TABLE" if rows else "VIEW"} IF EXISTS "{name}"')

    def _register_source(self, table: Table) -> None:
        definition = _source_sql(table)
        if self._sources.get(table.identity) == definition:
            return
        db, name = table.database.lower(), table.name.lower()
        self.con.execute(f'CREATE SCHEMA IF NOT EXISTS "{db}"')
        self.con.execute(f'CREATE OR REPLACE VIEW "{db}"."{name}" AS {definition}')
        self._sources[table.identity] = definition

    def render(
        self, tree: exp.Query, scans: Sequence[LayoutScan | SnapshotScan] = (), sources: Sequence[Table] = ()
    ) -> str:
        """The SQL text `execute` takes for a tree over these relations (whose types make its decimal arithmetic
        Spark's: `spark_decimals`)."""
        return self._duckdb(tree, scans, sources).sql(dialect=self.dialect)

    def _duckdb(
        self, tree: exp.Query, scans: Sequence[LayoutScan | SnapshotScan], sources: Sequence[Table]
    ) -> exp.Query:
        schema = relation_types(((s.name, dict(s.types)) for s in scans), sources)
        return bounded_values(_duckdb_tree(in_spark_terms(tree, schema)), self.bounds.max_bytes)

    def run(self, tree: exp.Query, scans: list[LayoutScan | SnapshotScan], sources: list[Table]) -> pa.Table:
        return self.execute(self.render(tree, scans, sources), scans, sources)

    def execute(
        self,
        sql: str,
        scans: list[LayoutScan | SnapshotScan],
        sources: list[Table],
        cancel: Cancellation | None = None,
    ) -> pa.Table:
        """Run `sql` over the layouts and sources it reads; past `timeout_s` it is interrupted (a
        QueryTimeoutError), as on `cancel` (a QueryCancelledError); any other failure is a one-line QueryError."""
        with self._lock, mapped_errors(self.name):
            return time_limited(self._watchdog, self.timeout_s, lambda: self._execute(sql, scans, sources), cancel)

    def interrupt(self) -> None:
        """Stop the statement running now (if any): it fails at once and frees the connection."""
        self._watchdog.fire()

    def preload(self, scan: LayoutScan) -> None:
        """Register (load into memory, when small enough) one layout's relation ahead of its first query."""
        with self._lock, mapped_errors(self.name):
            if scan.name not in self._layouts:
                self._settle(False)  # loading a layout uses every thread
                self._register_layout(scan)

    def _interrupt(self) -> None:
        """The watchdog's call on a statement past its deadline."""
        # a connection being reopened (a new source) may refuse: the next round interrupts the new one
        with contextlib.suppress(duckdb.Error):
            self.con.interrupt()

    def _execute(self, sql: str, scans: list[LayoutScan | SnapshotScan], sources: list[Table]) -> pa.Table:
        with self._lock:
            if [t for t in sources if self._allow(t)]:  # before any registration: reopening drops them
                self._reopen()
            if any(s.name not in self._layouts for s in scans):
                self._settle(False)  # loading a layout uses every thread
            for scan in scans:
                self._register_layout(scan)
            for table in sources:
                self._register_source(table)
            in_memory = all(self._layouts.get(s.name) for s in scans)
            narrow = sum(s.rows for s in scans) <= SMALL_SCAN_ROWS or all(s.pinned for s in scans)
            self._settle(bool(scans) and not sources and in_memory and narrow)
            return self._fetch(sql)

    def _settle(self, small: bool) -> None:
        """Settings for a small statement over in-memory layouts, or for anything else. Most of a small
        statement's time is fixed cost: handing its one pipeline to a second thread and compressing its few
        grouped rows for the sort cost more than they save (measured on the SSB queries: 0.1-0.4 ms of 1-2
        ms). A switch costs about 0.3 ms (DuckDB restarts its threads), so it happens only on a change."""
        if small == self._small:
            return
        if small:
            self.con.execute("SET threads = 1")
            self.con.execute("SET disabled_optimizers = 'compressed_materialization'")
        else:
            self.con.execute(f"SET threads = {self._threads}")
            self.con.execute("RESET disabled_optimizers")
        self._small = small

    def _fetch(self, sql: str) -> pa.Table:
        """The statement's rows as Arrow. A small result of plain types is fetched as tuples and made into
        Arrow here: DuckDB's own Arrow export costs about a millisecond more per query, most of a warm
        query's time (the issue's figures: tuples win below ~1k rows). Not for the engine's first statement:
        making Arrow from tuples imports pandas (pyarrow's shim, ~0.3 s), most of a one-shot command's time."""
        cursor = run_lifted(self.con, self._capped(sql))  # long IN lists bound as parameters, not parsed as text
        first, self._fetched = not self._fetched, True
        types = [_arrow_type(d[1]) for d in cursor.description or []]
        if not all(types):
            return _arrow_of_cursor(cursor, self.bounds)  # a type the tuple path does not map: DuckDB's own export
        schema = pa.schema([(d[0], t) for d, t in zip(cursor.description or [], types, strict=True)])
        if first:  # the types the tuple path gives (a cast imports pyarrow.compute: only when they differ)
            exported = _arrow_of_cursor(cursor, self.bounds)
            return exported if exported.schema == schema else exported.cast(schema)
        rows = cursor.fetchmany(SMALL_RESULT_ROWS + 1)
        head = pa.Table.from_arrays(
            [pa.array(col, type=t) for col, t in zip(zip(*rows, strict=True), types, strict=True)]
            if rows
            else [pa.array([], type=t) for t in types],
            schema=schema,
        )
        self.bounds.check(head.num_rows, head.nbytes)
        if len(rows) <= SMALL_RESULT_ROWS:
            return head
        rest = _arrow_of_cursor(cursor, self.bounds, head.num_rows, head.nbytes)
        return pa.concat_tables([head, rest.cast(schema)]) if rest.num_columns else head

    def _capped(self, sql: str) -> str:
        """`sql` producing at most one row past `[query] max_result_rows`: enough to tell that its answer is too
        large. DuckDB materialises a result it exports as Arrow: without the cap, a cross join's would grow
        until the process dies. The parentheses keep the statement's own ORDER BY, LIMIT and column names."""
        if self.bounds.max_rows >= UNBOUNDED.max_rows:
            return sql
        return f"({sql}\n) LIMIT {self.bounds.max_rows + 1}"  # a newline: the statement may end in a comment

    def sql_of(
        self, tree: exp.Query, scans: Sequence[LayoutScan | SnapshotScan] = (), sources: Sequence[Table] = ()
    ) -> str:
        return self._duckdb(tree, scans, sources).sql(dialect="duckdb", pretty=True)


def sealed(
    con: duckdb.DuckDBPyConnection, memory_limit: str, dirs: Iterable[str] = (), files: Iterable[str] = ()
) -> duckdb.DuckDBPyConnection:
    """`con`, after its last setting that reaches outside: it reads only `dirs` and `files`, loads and installs
    no extension, and runs within `memory_limit` (a bad size is a one-line QueryError)."""
    if memory_limit:
        try:
            con.execute(f"SET memory_limit = {_sql_string(memory_limit)}")
        except duckdb.Error as err:
            con.close()
            raise QueryError(
                f"[query] memory_limit {memory_limit!r} is not a size DuckDB takes (e.g. 4GB): "
                + str(err).splitlines()[0]
            ) from err
    con.execute(f"SET allowed_directories = {_sql_list(sorted(dirs))}")
    con.execute(f"SET allowed_paths = {_sql_list(sorted(files))}")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_external_access = false")
    return con


def time_limited(
    watchdog: Watchdog, timeout_s: float | None, call: Callable[[], T], cancel: Cancellation | None = None
) -> T:
    """`call()`, interrupted by `watchdog` past `timeout_s` (a QueryTimeoutError) or on `cancel` (a
    QueryCancelledError); the caller holds the lock of the connection `watchdog` interrupts."""
    if timeout_s is None and cancel is None:
        return call()
    watchdog.arm(timeout_s if timeout_s is not None else NO_TIME_LIMIT_S)
    fired = False
    try:
        if cancel is None:
            return call()
        with cancel.running_on(watchdog.fire):
            return call()
    except duckdb.InterruptException as err:
        fired = watchdog.disarm()
        if cancel is not None and cancel.cancelled:
            raise QueryCancelledError(CANCELLED) from err
        if not fired:
            raise
        limit = f"{timeout_s:g} s ([query] timeout_s)"
        raise QueryTimeoutError(f"the query ran longer than the time limit of {limit}") from err
    finally:
        if not fired:
            watchdog.disarm()


SMALL_RESULT_ROWS = 1000
BATCH_ROWS = 65_536  # rows fetched at a time: an answer's bounds are checked after each batch
NO_TIME_LIMIT_S = 366 * 86400.0  # the watchdog's deadline for a statement without one that may be cancelled
_ARROW_TYPES = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "HUGEINT": pa.decimal128(38, 0),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
}
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")


def _arrow_of_cursor(
    cursor: duckdb.DuckDBPyConnection, bounds: ResultBounds = UNBOUNDED, rows: int = 0, size: int = 0
) -> pa.Table:
    """The rows a cursor has left, as Arrow, fetched in batches within `bounds` (`rows` and `size`: what the
    answer already holds); ENUMs, which DuckDB exports as dictionaries, decoded to strings. DuckDB warns of an
    extra copy, the price of having looked at the result's types first."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = cursor.to_arrow_reader(BATCH_ROWS)
        if reader is None:  # an earlier fetch took every row
            return pa.table({})
        table = bounds.collect(reader.schema, reader, rows, size)
    schema = pa.schema([f.with_type(_decoded(f.type)) for f in table.schema])
    return table if schema == table.schema else table.cast(schema)


def _decoded(arrow_type: pa.DataType) -> pa.DataType:
    """The type with every dictionary, also inside lists, structs and maps, replaced by its values' type."""
    if pa.types.is_dictionary(arrow_type):
        return _decoded(arrow_type.value_type)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = arrow_type.value_field
        kind = pa.list_ if pa.types.is_list(arrow_type) else pa.large_list
        return kind(item.with_type(_decoded(item.type)))
    if pa.types.is_struct(arrow_type):
        return pa.struct([f.with_type(_decoded(f.type)) for f in arrow_type])
    if pa.types.is_map(arrow_type):
        return pa.map_(_decoded(arrow_type.key_type), _decoded(arrow_type.item_type))
    return arrow_type


def _arrow_type(duck_type: sqltypes.DuckDBPyType) -> pa.DataType | None:
    """The Arrow type of a column of this type in a result, for the plain types; None otherwise. An ENUM (a
    layout's coded strings) is a string, as the column it codes."""
    if duck_type.id == "enum":
        return pa.string()
    name = str(duck_type)
    found = _ARROW_TYPES.get(name)
    if found is None and (decimal := _DECIMAL.fullmatch(name)):
        found = pa.decimal128(int(decimal.group(1)), int(decimal.group(2)))
    return found


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_list(items: list[str]) -> str:
    return "[" + ", ".join(map(_sql_string, items)) + "]"


def _source_path(table: Table) -> str | None:
    """The local file or directory a file source reads (None for any other source)."""
    if table.source_type not in (SourceType.PARQUET, SourceType.CSV) or not table.location:
        return None
    path = local_path(table.location)
    return str(path) if path is not None else None


def _source_sql(table: Table) -> str:
    """A SELECT over a file source's rows with the registered column names and types."""
    if table.source_type not in (SourceType.PARQUET, SourceType.CSV) or not table.location:
        raise PushdownError(
            f"table {table.identity} is a {table.source_type.name} source, which DuckDB cannot read: use Spark"
        )
    path = local_path(table.location)
    if path is None:
        raise PushdownError(
            f"table {table.identity} is at {table.location}, which DuckDB cannot read: use the Spark engine"
        )
    pattern = (
        str(path / "**" / ("*.parquet" if table.source_type is SourceType.PARQUET else "*"))
        if Path(path).is_dir()
        else str(path)
    )
    columns = ", ".join(
        f'CAST("{c.case_sensitive_name or c.name}" AS {_duck_type(c.datatype)}) AS "{c.name}"' for c in table.columns
    )
    if table.source_type is SourceType.PARQUET:
        return f"SELECT {columns} FROM read_parquet({_sql_list([pattern])})"
    names = _sql_list([c.case_sensitive_name or c.name for c in table.columns])
    options = CsvOptions.of(table.source_properties).duckdb_arguments()  # as the build's Spark reads it
    return f"SELECT {columns} FROM read_csv({_sql_list([pattern])}, {options}, names={names}, all_varchar=true)"


def _duck_type(datatype: str) -> str:
    return exp.DataType.build(datatypes.to_spark(datatype), dialect="spark").sql("duckdb")
