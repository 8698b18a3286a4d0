"""The Spark SQL engine (DESIGN §6 step 5, "Spark for pushdown/large"): the same rewritten statement run
on the process's Spark session over layout files, or over the source tables for pushdown (any source
Spark reads, the Spark catalog included). The only module of the query package that imports pyspark,
and only when a query asks for Spark.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from precube.metadata import Table
from precube.query.bounds import UNBOUNDED, WHOLE, ResultBounds, Window
from precube.query.cancel import CANCELLED, Cancellation, allowed, timeout_error
from precube.query.engine_errors import mapped_errors
from precube.query.errors import QueryCancelledError
from precube.query.lookup_snapshot import SnapshotScan
from precube.query.rewrite import LayoutScan
from precube.storage import cells
from precube.storage.paths import layout_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CANCEL_EVERY_S = 0.1  # a timed-out statement's jobs are cancelled again this often until it ends


def _blobs(values: list[bytes | bytearray | None] | None) -> list[bytes | None]:
    return [bytes(v) if v is not None else None for v in values or []]


def _source_view(database: str, table: str) -> str:
    """The temp view of a source table (Spark's temp views have no database)."""
    return f"precube_source_{database}_{table}".lower()


class SparkEngine:
    name = "spark"
    dialect = "spark"

    def __init__(
        self,
        spark: Callable[[], SparkSession],
        warehouse_root: str,
        project: str,
        *,
        timeout_s: float | None = None,
        bounds: ResultBounds = UNBOUNDED,
    ) -> None:
        self._spark = spark
        self.root = warehouse_root
        self.project = project
        self.timeout_s = timeout_s
        self.bounds = bounds
        self._ready: object = None  # the session the UDFs are registered in (a job runner may replace it)
        self._lock = threading.Lock()
        self._running: dict[str, Callable[[], None]] = {}  # each running statement's job tag → how to stop it

    def _session(self) -> SparkSession:
        session = self._spark()
        if self._ready is not session:
            session.udf.register(
                "precube_bitmap_count", lambda v: cells.bitmap_cardinality(cells.bitmap_union(_blobs(v))), "bigint"
            )
            session.udf.register("precube_hll_count", lambda v: round(cells.hll_estimate(_blobs(v))), "bigint")
            session.udf.register("precube_kll_quantile", lambda v, q: cells.kll_quantile(_blobs(v), q), "double")
            self._ready = session
        return session

    def _spark_tree(self, tree: exp.Query) -> exp.Query:
        """Source tables become the temporary views `run` registers (Spark's temp views have no database)."""
        copy = tree.copy()
        for t in copy.find_all(exp.Table):
            if t.db:
                alias = t.alias_or_name
                t.replace(
                    exp.Table(
                        this=exp.to_identifier(_source_view(t.db, t.name)),
                        alias=exp.TableAlias(this=exp.to_identifier(alias)),
                    )
                )
        return copy

    def sql_of(self, tree: exp.Query, scans: Sequence[object] = (), sources: Sequence[Table] = ()) -> str:
        return self._spark_tree(tree).sql(dialect="spark", pretty=True)

    def render(self, tree: exp.Query, scans: Sequence[object] = (), sources: Sequence[Table] = ()) -> str:
        """The SQL text `execute` takes for a tree (Spark computes Spark's types itself: the relations are
        not needed)."""
        return self._spark_tree(tree).sql(dialect=self.dialect)

    def run(self, tree: exp.Query, scans: list[LayoutScan | SnapshotScan], sources: list[Table]) -> pa.Table:
        return self.execute(self.render(tree), scans, sources)

    def execute(
        self,
        sql: str,
        scans: list[LayoutScan | SnapshotScan],
        sources: list[Table],
        cancel: Cancellation | None = None,
        window: Window = WHOLE,
    ) -> pa.Table:
        """Run `sql` over the layouts and sources it reads; at the statement's deadline (`cancel`'s, else
        `timeout_s` from now) its Spark jobs (tagged with the statement's own tag) are cancelled, a
        QueryTimeoutError, as on `cancel` (a QueryCancelledError). Any failure is a one-line QueryError. Only
        `window`'s rows are collected (and the one past them)."""
        with mapped_errors(self.name):
            return self._tagged(self._session(), sql, scans, sources, cancel or Cancellation(), window)

    def interrupt(self) -> None:
        """Stop the statements running now: their Spark jobs are cancelled."""
        with self._lock:
            running = list(self._running.values())
        for stop in running:
            stop()

    def _tagged(
        self,
        spark: SparkSession,
        sql: str,
        scans: list[LayoutScan | SnapshotScan],
        sources: list[Table],
        cancel: Cancellation,
        window: Window = WHOLE,
    ) -> pa.Table:
        context = spark.sparkContext
        tag = f"precube-{uuid.uuid4().hex}"
        done = threading.Event()
        stopped = threading.Event()

        def stop() -> None:
            # again until the statement ends: a job that starts after a cancel would otherwise run on
            while not done.wait(0 if not stopped.is_set() else CANCEL_EVERY_S):
                stopped.set()
                context.cancelJobsWithTag(tag)

        def stop_soon() -> None:  # the canceller's thread must not wait for the statement's end
            threading.Thread(target=stop, name="precube-spark-cancel", daemon=True).start()

        seconds = allowed(cancel, self.timeout_s)  # what is left of the statement's time (past it: fails here)
        timer = threading.Timer(seconds, stop) if seconds is not None else None
        context.addJobTag(tag)  # the tag is the calling thread's, as are the jobs it starts
        with self._lock:
            self._running[tag] = stop_soon
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            with cancel.running_on(stop_soon):
                return self._execute(spark, sql, scans, sources, window)
        except Exception as err:
            if cancel.cancelled:
                raise QueryCancelledError(CANCELLED) from err
            if stopped.is_set():
                raise timeout_error(cancel, self.timeout_s) from err
            raise
        finally:
            done.set()
            if timer is not None:
                timer.cancel()
            with self._lock:
                self._running.pop(tag, None)
            context.removeJobTag(tag)

    def _execute(
        self,
        spark: SparkSession,
        sql: str,
        scans: list[LayoutScan | SnapshotScan],
        sources: list[Table],
        window: Window = WHOLE,
    ) -> pa.Table:
        from precube.sources.source import source_for

        for scan in scans:
            if isinstance(scan, SnapshotScan):
                spark.read.parquet(scan.path).createOrReplaceTempView(scan.name)
                continue
            paths = [layout_path(self.root, self.project, scan.model_uuid, s, scan.layout_id) for s in scan.segment_ids]
            if paths:
                df = spark.read.parquet(*paths)
            else:
                schema_path = layout_path(self.root, self.project, scan.model_uuid, scan.schema_segment, scan.layout_id)
                df = spark.read.parquet(schema_path).limit(0)
            df.createOrReplaceTempView(scan.name)
        for table in sources:
            source_for(table).read(spark, table.columns).createOrReplaceTempView(
                _source_view(table.database, table.name)
            )
        # the driver collects one row past the bound (or the window) at most: enough to tell that there is more
        frame = spark.sql(sql)
        if window.offset:
            frame = frame.offset(window.offset)
        if (rows := window.rows(self.bounds)) < UNBOUNDED.max_rows:
            frame = frame.limit(rows)
        return window.bounds(self.bounds).table(frame.toArrow())
