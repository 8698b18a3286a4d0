"""The in-process engine (DESIGN §6 step 5): DuckDB over layout Parquet files, and over file sources for
pushdown.

Layout relations are registered once per (layout, segments) — segment directories are immutable, so a
registration never goes stale — as a view over their Parquet files, answered at once (projection and row-group
pruning on the layout's sort key); a background loader holds in memory those the history says earn it
(`layout_memory`), swapped in for the statements that start after. Measure cells that DuckDB cannot merge
natively (Roaring bitmaps, HLL and KLL sketches) are merged by scalar Python functions over the list of a group's
cells.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import threading
import time
import warnings
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa
from duckdb import func, sqltypes
from sqlglot import exp

from precube.metadata import SourceType, Table, datatypes
from precube.metadata.csv_options import CsvOptions
from precube.query import arrow_rows
from precube.query.bounds import UNBOUNDED, WHOLE, ResultBounds, Window
from precube.query.cancel import CANCELLED, Cancellation, allowed, timeout_error
from precube.query.direct import AT_ONCE_ROWS, DirectAnswers
from precube.query.direct_columns import direct_columns
from precube.query.duckdb_connections import Connections, Cursor
from precube.query.engine_errors import mapped_errors
from precube.query.errors import PushdownError, QueryCancelledError, QueryError
from precube.query.layout_memory import LayoutMemory, default_budget_bytes
from precube.query.literal_lists import run_lifted
from precube.query.lookup_snapshot import SnapshotScan
from precube.query.rewrite import LayoutScan
from precube.query.spark_decimals import DECIMAL_OP, decimal_op, in_spark_terms, relation_types
from precube.query.spill import Spill
from precube.query.value_bounds import bounded_values
from precube.query.watchdog import Watchdog
from precube.storage import cells
from precube.storage.paths import layout_path, local_path

LOG = logging.getLogger(__name__)
# A statement over in-memory layouts of at most this many rows, or whose filter pins each layout's leading
# (sorted) column to a few values, runs on one thread.
SMALL_SCAN_ROWS = 2_000_000
ENUM_MAX_VALUES = 65_536  # a string column with at most this many distinct values is held as an ENUM
ENUM_SCREEN_ROWS = 200_000
CONNECTIONS = 4  # statements one engine runs at once unless told otherwise (a server: `[query] max_running`)
DIRECT_MAX_ROWS = 10_000_000  # a held layout of at most this many rows is also held as numpy columns (`direct`)


T = TypeVar("T")

# Engines whose background loader runs: stopped at interpreter exit, before daemon threads are torn down (a
# loader torn down inside DuckDB aborts the process: "terminate called … exception not rethrown").
_LOADING: weakref.WeakSet[DuckDBEngine] = weakref.WeakSet()


@atexit.register
def _stop_loaders() -> None:
    for engine in list(_LOADING):
        engine.close()


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


@dataclass(eq=False)
class _Database:
    """One sealed database of the engine and what it holds: the relations registered in it (a layout held in
    memory: its estimated bytes; a view: 0) and the scan and Parquet source of each, the source views, how many
    running statements read each relation (never evicted while read) and the settings in force
    (`DuckDBEngine._settle`)."""

    connections: Connections
    layouts: OrderedDict[str, int] = field(default_factory=OrderedDict)
    scans: dict[str, tuple[LayoutScan | SnapshotScan, str]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    reading: Counter[str] = field(default_factory=Counter)
    small: bool = False  # the settings in force are those for small statements
    wide: int = 0  # statements running with the settings for anything else
    generation: int = 0  # grows when a relation is dropped or replaced (`changed`)

    def changed(self) -> None:
        """A relation was dropped or replaced: the connections' prepared statements may name it (`prepared`)."""
        self.generation += 1


class DuckDBEngine:
    """Statements on DuckDB, several at once (`connections` cursors of one database: `duckdb_connections`);
    the engine's lock guards what the database holds (registrations, settings), not the statements' runs."""

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
        connections: int = CONNECTIONS,
        spill: Spill | None = None,
        layout_memory: int | None = None,
    ) -> None:
        self.root = warehouse_root
        self.project = project
        self.memory_limit = memory_limit
        self.spill = spill  # where and how much its databases spill (None: DuckDB's default)
        if spill is not None:
            spill.clean()  # what dead processes left behind
        self.timeout_s = timeout_s
        self.bounds = bounds  # an answer's rows and bytes, checked as they are fetched
        # what DuckDB may read: the project's layouts, and each file source's directory or file
        self._allowed_dirs = {f"{warehouse_root.rstrip('/')}/{project}"}
        self._allowed_files: set[str] = set()
        for table in sources:
            self._allow(table)
        self._lock = threading.Lock()
        self._size = connections + 1  # and one for the background loader: a statement never waits for a copy
        self._db = _Database(Connections(self._connect(), connections))
        self._retired: list[_Database] = []  # reopened: closed once their last statement ends
        self._closed = False
        self._threads = int(self.con.execute("SELECT current_setting('threads')").fetchall()[0][0])
        # the bytes of layouts held in memory (`layout_memory`: None, the machine's default) and the one thread
        # that copies them (started at the first relation worth considering)
        self.memory = LayoutMemory(default_budget_bytes() if layout_memory is None else layout_memory)
        self._hold_lock = threading.Lock()  # one copy at a time; taken before the engine's lock
        self._wake = threading.Event()
        self._loader: threading.Thread | None = None
        self._failed: set[str] = set()  # relations whose copy failed: read from their files for good
        self._holding: Cursor | None = None  # the cursor a copy runs on
        self.direct = DirectAnswers()  # held layouts' columns, answering statements of a simple form (`direct`)

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The database's first connection (its cursors run the statements)."""
        return self._db.connections.con

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """A connection that reads only the allowed paths and loads no extension (defence behind the
        front end's guard, for whatever SQL reaches it).

        `enable_external_access=false` freezes `allowed_directories`/`allowed_paths` and cannot be undone
        while the database runs; `LOAD` and `INSTALL` fail under it, and auto-loading and auto-installing are
        off. The configuration is not locked (`lock_configuration`): `_settle` switches `threads` and
        `disabled_optimizers` per statement, which a lock forbids; the settings left open only tune the
        engine, and only a SET statement, which the front end never passes, could change them. All of these are
        the database's, so every cursor of it (`duckdb_connections`) is sealed alike. A source outside the
        allowed paths (a table loaded after the engine started) opens a new database with the list grown
        (`_reopened`): the layouts held in memory are then loaded again on demand."""
        con = duckdb.connect()
        blobs = duckdb.list_type(sqltypes.BLOB)
        con.create_function("precube_bitmap_count", _bitmap_count, [blobs], sqltypes.BIGINT)
        con.create_function("precube_hll_count", _hll_count, [blobs], sqltypes.BIGINT)
        con.create_function("precube_kll_quantile", _kll_quantile, [blobs, sqltypes.DOUBLE], sqltypes.DOUBLE)
        text, integer = sqltypes.VARCHAR, sqltypes.INTEGER
        con.create_function(DECIMAL_OP, decimal_op, [text, text, text, integer], text, type=func.ARROW)
        return sealed(con, self.memory_limit, self._allowed_dirs, self._allowed_files, self.spill)

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

    def _reopened(self, sources: Sequence[Table]) -> _Database:
        """The database to run a statement over `sources` on: a new one when a source is outside the allowed
        paths (what the old one held is registered again on demand; it is closed once its statements end)."""
        with self._lock:
            if self._closed:
                raise QueryError("the DuckDB engine was closed")
            if [t for t in sources if self._allow(t)]:
                self._retired = [d for d in self._retired if not d.connections.closed]
                self._retired.append(self._db)
                self._db.connections.close()
                self._db = _Database(Connections(self._connect(), self._size))
                self.direct.clear()
            return self._db

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._holding is not None:
                self._holding.watchdog.fire()  # a copy under way fails at once (its database closes after it)
            for db in (*self._retired, self._db):
                db.connections.close()
        self._wake.set()
        if self._loader is not None and self._loader is not threading.current_thread():
            self._loader.join(timeout=10)

    def _files(self, model_uuid: str, segment_id: str, layout_id: int) -> str:
        path = layout_path(self.root, self.project, model_uuid, segment_id, layout_id)
        return f"{path}/*.parquet"

    def _register_layout(self, db: _Database, con: duckdb.DuckDBPyConnection, scan: LayoutScan | SnapshotScan) -> None:
        """Make the relation `scan.name` readable at once: a view over its Parquet files (unless registered)."""
        if scan.name in db.layouts:
            db.layouts.move_to_end(scan.name)
            return
        if isinstance(scan, SnapshotScan):  # immutable as a layout's files, registered the same way
            folders = [scan.path]
        elif scan.segment_ids:
            folders = [
                layout_path(self.root, self.project, scan.model_uuid, s, scan.layout_id) for s in scan.segment_ids
            ]
        else:
            folders = []
            schema_files = [self._files(scan.model_uuid, scan.schema_segment, scan.layout_id)]
        source = (
            f"read_parquet({_sql_list([f + '/*.parquet' for f in folders])})"
            if folders
            else f"read_parquet({_sql_list(schema_files)}) WHERE false"
        )
        con.execute(f'CREATE OR REPLACE VIEW "{scan.name}" AS SELECT * FROM {source}')
        db.layouts[scan.name] = 0
        db.scans[scan.name] = (scan, source)
        self.memory.know(scan.name, scan.model_uuid, scan.rows, sum(map(_parquet_bytes, folders)))

    def preload(self, scan: LayoutScan) -> None:
        """Warming: register one layout's relation (a view, at once) and offer it to the background loader,
        which holds it in memory when it fits the budget (`LayoutMemory.offer`); nothing waits for the copy."""
        with mapped_errors(self.name):
            db, cursor = self._cursor(())
            try:
                with self._lock:
                    self._register_layout(db, cursor.con, scan)
            finally:
                db.connections.give_back(cursor)
        self.memory.offer(scan.name)
        self._wake_loader()

    def hold(self, scan: LayoutScan | SnapshotScan) -> bool:
        """Copy the relation into memory now (registering it first) and swap it in for the statements that start
        after; whether it is held. What the background loader does, and a test's way to hold one at once."""
        with self._hold_lock:
            db, cursor = self._cursor(())  # one of the pool's: the database closes once it is back
            try:
                return self._hold(db, cursor, scan)
            finally:
                db.connections.give_back(cursor)

    def _hold(self, db: _Database, cursor: Cursor, scan: LayoutScan | SnapshotScan) -> bool:
        con = cursor.con
        with self._lock:
            self._register_layout(db, con, scan)
            if db.layouts[scan.name]:
                return True
            source = db.scans[scan.name][1]
            self._holding = cursor  # `close` interrupts the copy
        staged = f"{scan.name}__held"
        try:
            self._load(con, scan, source, staged)
            with self._lock:
                if db is not self._db or self._closed:
                    return False  # reopened meanwhile: the new database registers it again
                con.execute("BEGIN")  # one change for the statements of other cursors: the view, then the table
                con.execute(f'DROP VIEW IF EXISTS "{scan.name}"')
                con.execute(f'ALTER TABLE "{staged}" RENAME TO "{scan.name}"')
                con.execute("COMMIT")
                db.changed()  # statements prepared over the view go
                db.layouts[scan.name] = self.memory.size(scan.name)
            try:
                self._hold_direct(db, con, scan)
            except Exception as err:  # noqa: BLE001 (the numpy columns are an optimisation: DuckDB's copy answers)
                LOG.warning("holding %s as numpy columns failed: %s", scan.name, err)
            return True
        finally:
            self._holding = None
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")  # only when the swap failed: no transaction is open otherwise
            with contextlib.suppress(duckdb.Error):
                con.execute(f'DROP TABLE IF EXISTS "{staged}"')

    def _hold_direct(self, db: _Database, con: duckdb.DuckDBPyConnection, scan: LayoutScan | SnapshotScan) -> None:
        """Also hold a layout just held, if small enough, as numpy columns that answer simple statements
        without DuckDB (`direct`); its bytes count against the budget with the layout's."""
        if not isinstance(scan, LayoutScan) or scan.rows > DIRECT_MAX_ROWS:
            return
        names = [str(row[0]) for row in con.execute(f'DESCRIBE "{scan.name}"').fetchall()]

        def exported() -> Iterator[tuple[str, pa.ChunkedArray]]:
            # a column at a time, in the table's order (DuckDB keeps insertion order): a large layout's export is
            # never whole in memory at once
            for name in names:
                yield name, con.sql(f'SELECT "{name}" FROM "{scan.name}"').to_arrow_table().column(0)

        layout = direct_columns(scan.name, scan.rows, exported(), scan.sort_by)
        if layout is None:
            return
        with self._lock:
            if db is self._db and db.layouts.get(scan.name):
                self.direct.add(layout)
                db.layouts[scan.name] += layout.nbytes

    def _unhold(self, db: _Database, con: duckdb.DuckDBPyConnection, name: str) -> None:
        """Replace a held relation no statement reads by its view again (under the engine's lock)."""
        self.direct.drop(name)
        con.execute("BEGIN")
        con.execute(f'DROP TABLE IF EXISTS "{name}"')
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM {db.scans[name][1]}')
        con.execute("COMMIT")
        db.changed()  # statements prepared over the table go
        db.layouts[name] = 0

    def _wake_loader(self) -> None:
        """Have the loader look at the history again (started at the first call)."""
        if self._loader is None:
            with self._lock:
                if self._loader is None and not self._closed:
                    self._loader = threading.Thread(
                        target=self._load_in_background, name="precube-layouts", daemon=True
                    )
                    self._loader.start()
                    _LOADING.add(self)
        self._wake.set()

    def _load_in_background(self) -> None:
        """The loader: on each wake, hold what the history wants (best first), evicting what it no longer wants
        and no statement reads, one copy at a time; a failed copy is logged and its relation read from its files."""
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            while not self._closed:
                try:
                    if not self._load_step():
                        break
                except Exception as err:  # noqa: BLE001 (holding is an optimisation: the view keeps answering)
                    if not self._closed:
                        LOG.warning("holding a layout in memory failed: %s", err)
                    break

    def _load_step(self) -> bool:
        """Hold the best wanted relation not held, first evicting (least recently registered or read first) held
        ones no longer wanted and read by no statement until it fits; whether one was held."""
        with self._lock:
            held = {n for n, size in self._db.layouts.items() if size}
        wanted = [n for n in self.memory.wanted(held) if n not in self._failed]
        with self._hold_lock:
            db, cursor = self._cursor(())
            try:
                with self._lock:
                    todo = next((n for n in wanted if n in db.scans and not db.layouts.get(n)), None)
                    if todo is None:
                        return False
                    need = sum(db.layouts.values()) + self.memory.size(todo) - self.memory.budget
                    evictable = [n for n, size in db.layouts.items() if size and n not in wanted and not db.reading[n]]
                    if need > sum(db.layouts[n] for n in evictable):
                        return False  # what is still wanted or read takes the room
                    for name in evictable:
                        if need <= 0:
                            break
                        need -= db.layouts[name]
                        self._unhold(db, cursor.con, name)
                    scan = db.scans[todo][0]
                try:
                    return self._hold(db, cursor, scan)
                except Exception:
                    self._failed.add(scan.name)
                    raise
            finally:
                db.connections.give_back(cursor)

    def _load(self, con: duckdb.DuckDBPyConnection, scan: LayoutScan | SnapshotScan, source: str, target: str) -> None:
        """Copy the layout's rows into the table `target`, sorted by its dimensions (each file is sorted, the files
        are not), so min/max per row group skip most rows under a filter on leading dimensions; strings with
        few distinct values become ENUMs (in sorted order, so comparisons, ORDER BY, MIN/MAX and string
        functions behave as on VARCHAR), which filters and groups compare as integers."""
        staged = f"{scan.name}__staged"
        con.execute(f'CREATE OR REPLACE TEMP TABLE "{staged}" AS SELECT * FROM {source}')
        try:
            described = con.execute(f'DESCRIBE "{staged}"').fetchall()
            names = [str(row[0]) for row in described]
            texts = [str(row[0]) for row in described if row[1] == "VARCHAR"]
            coded = self._enum_types(con, staged, texts, scan.rows)
            select = ", ".join(f'CAST("{c}" AS {coded[c]}) AS "{c}"' if c in coded else f'"{c}"' for c in names)
            order = ", ".join(f'"{c}" NULLS FIRST' for c in scan.sort_by if c in names)
            con.execute(
                f'CREATE OR REPLACE TABLE "{target}" AS SELECT {select} FROM "{staged}"'
                + (f" ORDER BY {order}" if order else "")
            )
        finally:
            con.execute(f'DROP TABLE IF EXISTS "{staged}"')

    def _enum_types(self, con: duckdb.DuckDBPyConnection, table: str, texts: list[str], rows: int) -> dict[str, str]:
        """The ENUM type for each string column worth coding: at most ENUM_MAX_VALUES distinct values, each
        repeated on average (a column of mostly unique strings gains nothing). The distinct values of the
        first rows screen the columns (their count is a lower bound; listing a large layout's unique strings
        would cost seconds), then the survivors' values are listed and counted exactly."""
        limit = min(ENUM_MAX_VALUES, rows // 2)
        if not texts or limit < 1:
            return {}
        screened = f'(SELECT * FROM "{table}" LIMIT {ENUM_SCREEN_ROWS})'
        counts = self._per_column(con, 'count(DISTINCT "{c}")', texts, screened)
        worth = [c for c, n in zip(texts, counts, strict=True) if n <= limit]
        if not worth:
            return {}
        listed = 'list(DISTINCT "{c}" ORDER BY "{c}") FILTER ("{c}" IS NOT NULL)'
        values = self._per_column(con, listed, worth, f'"{table}"')
        return {
            c: "ENUM(" + ", ".join(map(_sql_string, v)) + ")"
            for c, v in zip(worth, values, strict=True)
            if v and len(v) <= limit
        }

    def _per_column(
        self, con: duckdb.DuckDBPyConnection, call: str, columns: list[str], relation: str
    ) -> tuple[Any, ...]:
        """An aggregate of each column over a relation, in one pass; `call` names the column `{c}`."""
        row = con.execute("SELECT " + ", ".join(call.format(c=c) for c in columns) + f" FROM {relation}").fetchone()
        return row or ()

    def _register_source(self, db: _Database, con: duckdb.DuckDBPyConnection, table: Table) -> None:
        definition = source_sql(table)
        if db.sources.get(table.identity) == definition:
            return
        if table.identity in db.sources:
            db.changed()  # a view replaced (its table changed): statements prepared over it go
        schema, name = table.database.lower(), table.name.lower()
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        con.execute(f'CREATE OR REPLACE VIEW "{schema}"."{name}" AS {definition}')
        db.sources[table.identity] = definition

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
        window: Window = WHOLE,
    ) -> pa.Table:
        """Run `sql` over the layouts and sources it reads, on a cursor of its own (statements of other threads
        run beside it); at the statement's deadline (`cancel`'s, else `timeout_s` from now) it is interrupted (a
        QueryTimeoutError), as on `cancel` (a QueryCancelledError); any other failure is a one-line QueryError.
        Only `window`'s rows are fetched (and the one past them: `Window.cut`). A statement of a simple form over
        one layout held as numpy columns is answered from them (`direct`)."""
        if len(scans) == 1 and not sources and (answer := self._direct(sql, scans[0], cancel, window)) is not None:
            return answer
        with mapped_errors(self.name):
            db, cursor = self._cursor(sources)
            try:
                return time_limited(
                    cursor.watchdog,
                    self.timeout_s,
                    lambda: self._execute(db, cursor, sql, scans, sources, window),
                    cancel,
                )
            finally:
                db.connections.give_back(cursor)

    def answers_at_once(self, sql: str, scan: LayoutScan) -> bool:
        """Whether `sql` over `scan` is answered from the layout's numpy columns reading at most `AT_ONCE_ROWS`
        rows: a few milliseconds at most, no I/O, no wait."""
        found = self.direct.ready(sql, scan.name)
        return found is not None and found[1].rows_read(found[0]) <= AT_ONCE_ROWS

    def _direct(
        self, sql: str, scan: LayoutScan | SnapshotScan, cancel: Cancellation | None, window: Window
    ) -> pa.Table | None:
        """The statement's answer from the layout's numpy columns, or None (not held so, or a form declined)."""
        found = self.direct.ready(sql, scan.name)
        if found is None:
            return None
        if cancel is not None:
            cancel.check()
        started = time.perf_counter()
        table = self.direct.run(sql, *found)
        if table is None:
            return None
        fetched = table.slice(window.offset, window.rows(self.bounds))
        window.bounds(self.bounds).check(fetched.num_rows, fetched.nbytes)
        self._read([scan.name], time.perf_counter() - started, [True])
        return fetched

    def _cursor(self, sources: Sequence[Table]) -> tuple[_Database, Cursor]:
        """A cursor of the database to run a statement over `sources` on (`_reopened`), and that database."""
        while True:
            db = self._reopened(sources)  # before any registration: a new database holds none
            cursor = db.connections.take()
            if cursor is not None:  # else the database was replaced meanwhile: a cursor of the new one
                return db, cursor

    def interrupt(self) -> None:
        """Stop the statements running now (if any): they fail at once and free their connections."""
        with self._lock:
            databases = (*self._retired, self._db)
        for db in databases:
            db.connections.interrupt()

    def _execute(
        self,
        db: _Database,
        cursor: Cursor,
        sql: str,
        scans: list[LayoutScan | SnapshotScan],
        sources: list[Table],
        window: Window = WHOLE,
    ) -> pa.Table:
        """Register what `sql` reads and settle the settings under the lock, then run it on `cursor` outside it."""
        con = cursor.con
        names = [s.name for s in scans]
        with self._lock:
            db.reading.update(names)  # first: registering another relation evicts none of these
            try:
                for scan in scans:
                    self._register_layout(db, con, scan)
                for table in sources:
                    self._register_source(db, con, table)
                held = [bool(db.layouts.get(n)) for n in names]
                in_memory = all(held)
                narrow = sum(s.rows for s in scans) <= SMALL_SCAN_ROWS or all(s.pinned for s in scans)
                small = bool(scans) and not sources and in_memory and narrow
                self._settle(db, con, small)
            except BaseException:
                self._done(db, names, wide=False)
                raise
            db.wide += int(not small)
        started = time.perf_counter()
        try:
            generation = db.generation
            return self._fetch(con, sql, window, lambda text: cursor.statements.run(con, text, generation))
        finally:
            with self._lock:
                self._done(db, names, wide=not small)
            self._read(names, time.perf_counter() - started, held)

    def _read(self, names: list[str], seconds: float, held: list[bool]) -> None:
        """A statement's time over its relations, into the history; the loader looks again after a view's."""
        if names:
            self.memory.read(names, seconds, held)
            if not all(held):
                self._wake_loader()

    @staticmethod
    def _done(db: _Database, names: list[str], wide: bool) -> None:
        """A statement's end: the relations it read may be evicted again."""
        for name in names:
            db.reading[name] -= 1
            if db.reading[name] <= 0:
                del db.reading[name]
        db.wide -= int(wide)

    def _settle(self, db: _Database, con: duckdb.DuckDBPyConnection, small: bool) -> None:
        """Settings for a small statement over in-memory layouts, or for anything else. Most of a small
        statement's time is fixed cost: handing its one pipeline to a second thread and compressing its few
        grouped rows for the sort cost more than they save (measured on the SSB queries: 0.1-0.4 ms of 1-2
        ms). A switch costs about 0.3 ms (DuckDB restarts its threads), so it happens only on a change. Both
        settings are the database's, not the cursor's: a small statement keeps every thread while a larger one
        runs beside it (which one thread would slow down); neither changes an answer."""
        if small == db.small or (small and db.wide):
            return
        if small:
            con.execute("SET threads = 1")
            con.execute("SET disabled_optimizers = 'compressed_materialization'")
        else:
            con.execute(f"SET threads = {self._threads}")
            con.execute("RESET disabled_optimizers")
        db.small = small

    def _fetch(
        self,
        con: duckdb.DuckDBPyConnection,
        sql: str,
        window: Window = WHOLE,
        plain: Callable[[str], duckdb.DuckDBPyConnection] | None = None,
    ) -> pa.Table:
        """The statement's rows as Arrow. A small result of plain types is fetched as tuples and laid out as
        Arrow here (`arrow_rows`): DuckDB's own Arrow export costs ~0.4 ms more per statement, most of a warm
        answer's time over a tiny layout.

        The statement produces at most one row past `[query] max_result_rows` (or past the window asked for):
        enough to tell that its answer is too large. DuckDB materialises a result it exports as Arrow: without
        the cap, a cross join's would grow until the process dies. `plain` runs a statement without long IN lists
        (the connection's prepared statements: `prepared`)."""
        bounds = window.bounds(self.bounds)
        # long IN lists bound as parameters, not as text
        cursor = run_lifted(con, window.sql(sql, self.bounds), plain)
        types = [_arrow_type(d[1]) for d in cursor.description or []]
        if not all(types):
            return _arrow_of_cursor(cursor, bounds)  # a type the tuple path does not map: DuckDB's own export
        schema = pa.schema([(d[0], t) for d, t in zip(cursor.description or [], types, strict=True)])
        rows = cursor.fetchmany(SMALL_RESULT_ROWS + 1)
        values = list(zip(*rows, strict=True)) if rows else [() for _ in types]
        # pyarrow's own conversion where a value cannot be laid out exactly (it imports pandas: seldom)
        columns = [arrow_rows.column(v, t) or pa.array(v, type=t) for v, t in zip(values, types, strict=True)]
        head = pa.Table.from_arrays(columns, schema=schema)
        bounds.check(head.num_rows, head.nbytes)
        if len(rows) <= SMALL_RESULT_ROWS:
            return head
        rest = _arrow_of_cursor(cursor, bounds, head.num_rows, head.nbytes)
        return pa.concat_tables([head, rest.cast(schema)]) if rest.num_columns else head

    def sql_of(
        self, tree: exp.Query, scans: Sequence[LayoutScan | SnapshotScan] = (), sources: Sequence[Table] = ()
    ) -> str:
        return self._duckdb(tree, scans, sources).sql(dialect="duckdb", pretty=True)


def sealed(
    con: duckdb.DuckDBPyConnection,
    memory_limit: str,
    dirs: Iterable[str] = (),
    files: Iterable[str] = (),
    spill: Spill | None = None,
) -> duckdb.DuckDBPyConnection:
    """`con`, after its last setting that reaches outside: it reads only `dirs` and `files`, loads and installs
    no extension, runs within `memory_limit` (a bad size is a one-line QueryError) and spills to a directory of
    its own under `spill`'s root, at most its bound (`query.spill`)."""
    if memory_limit:
        try:
            con.execute(f"SET memory_limit = {_sql_string(memory_limit)}")
        except duckdb.Error as err:
            con.close()
            raise QueryError(
                f"[query] memory_limit {memory_limit!r} is not a size DuckDB takes (e.g. 4GB): "
                + str(err).splitlines()[0]
            ) from err
    if spill is not None:
        con.execute(f"SET temp_directory = {_sql_string(str(spill.directory()))}")
        con.execute(f"SET max_temp_directory_size = {_sql_string(spill.max_size())}")
    con.execute(f"SET allowed_directories = {_sql_list(sorted(dirs))}")
    con.execute(f"SET allowed_paths = {_sql_list(sorted(files))}")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_external_access = false")
    return con


def time_limited(
    watchdog: Watchdog, timeout_s: float | None, call: Callable[[], T], cancel: Cancellation | None = None
) -> T:
    """`call()`, interrupted by `watchdog` at the statement's deadline (`cancel`'s, else `timeout_s` from now: a
    QueryTimeoutError) or on `cancel` (a QueryCancelledError); a statement already past its deadline fails
    without running. The caller holds the connection `watchdog` interrupts (none other runs on it)."""
    seconds = allowed(cancel, timeout_s)
    if seconds is None and cancel is None:
        return call()
    watchdog.arm(seconds if seconds is not None else NO_TIME_LIMIT_S)
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
        raise timeout_error(cancel, timeout_s) from err
    finally:
        if not fired:
            watchdog.disarm()


# At most this many rows of a result are fetched as tuples (`arrow_rows`); DuckDB exports the rest as Arrow.
# Fetching the first rows as tuples and the rest through the export pays both: SSB's answers of 150-600 rows
# took 1-2 ms more with a bound of 100 than with this one (the 13 queries warm at SF 1, in turn).
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


def _parquet_bytes(folder: str) -> int:
    """The bytes of a layout's (or snapshot's) Parquet files (0: the folder is missing)."""
    try:
        with os.scandir(folder) as entries:
            return sum(e.stat().st_size for e in entries if e.name.endswith(".parquet"))
    except OSError:
        return 0


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


def source_sql(table: Table) -> str:
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
