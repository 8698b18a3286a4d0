"""The Spark SQL engine (DESIGN §6 step 5, "Spark for pushdown/large"): the same rewritten statement run
on the process's Spark session over layout files, or over the source tables for pushdown (any source
Spark reads, the Spark catalog included). The only module of the query package that imports pyspark,
and only when a query asks for Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from precube.metadata import Table
from precube.query.engine_errors import mapped_errors
from precube.query.rewrite import LayoutScan
from precube.storage import cells
from precube.storage.paths import layout_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _blobs(values: list[bytes | bytearray | None] | None) -> list[bytes | None]:
    return [bytes(v) if v is not None else None for v in values or []]


def _source_view(database: str, table: str) -> str:
    """The temp view of a source table (Spark's temp views have no database)."""
    return f"precube_source_{database}_{table}".lower()


class SparkEngine:
    name = "spark"
    dialect = "spark"

    def __init__(self, spark: Callable[[], SparkSession], warehouse_root: str, project: str) -> None:
        self._spark = spark
        self.root = warehouse_root
        self.project = project
        self._ready = False

    def _session(self) -> SparkSession:
        session = self._spark()
        if not self._ready:
            session.udf.register(
                "precube_bitmap_count", lambda v: cells.bitmap_cardinality(cells.bitmap_union(_blobs(v))), "bigint"
            )
            session.udf.register("precube_hll_count", lambda v: round(cells.hll_estimate(_blobs(v))), "bigint")
            session.udf.register("precube_kll_quantile", lambda v, q: cells.kll_quantile(_blobs(v), q), "double")
            self._ready = True
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

    def sql_of(self, tree: exp.Query) -> str:
        return self._spark_tree(tree).sql(dialect="spark", pretty=True)

    def render(self, tree: exp.Query) -> str:
        """The SQL text `execute` takes for a tree."""
        return self._spark_tree(tree).sql(dialect=self.dialect)

    def run(self, tree: exp.Query, scans: list[LayoutScan], sources: list[Table]) -> pa.Table:
        return self.execute(self.render(tree), scans, sources)

    def execute(self, sql: str, scans: list[LayoutScan], sources: list[Table]) -> pa.Table:
        from precube.sources.source import source_for

        with mapped_errors(self.name):
            spark = self._session()
            for scan in scans:
                segments = scan.segment_ids
                paths = [layout_path(self.root, self.project, scan.model_uuid, s, scan.layout_id) for s in segments]
                if paths:
                    df = spark.read.parquet(*paths)
                else:
                    schema = layout_path(self.root, self.project, scan.model_uuid, scan.schema_segment, scan.layout_id)
                    df = spark.read.parquet(schema).limit(0)
                df.createOrReplaceTempView(scan.name)
            for table in sources:
                source_for(table).read(spark, table.columns).createOrReplaceTempView(
                    _source_view(table.database, table.name)
                )
            result: pa.Table = spark.sql(sql).toArrow()
            return result
