"""The flat table of a segment built from source (seed 003 steps 1 and 2): computed on first use, cached only
when read more than once, with the global dictionaries of its precise COUNT DISTINCT inputs appended to.

Whether the segment is small is decided here (`small_rows`): the source plan's estimate of its rows, then the
rows of the row groups the plan reads (an upper bound), or else a count of the cached flat table. A small
segment's flat table is not coded (codes pay off on many rows only) and all its aggregate layouts come from it
in one job (`layers.build_into_segment`).

A dictionary whose input is a plain lookup column is built from the whole lookup column, once per state of
its source (the fingerprint of its files): while the lookup is unchanged, later segments skip the
dictionary's pass altogether (a marker in the dictionary says it holds every value of that state).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from precube.engine.code_tables import Codes
from precube.engine.context import LAYOUTS_STEP, BuildContext, ModelState
from precube.engine.dictionary import (
    DictionaryVersion,
    build_dictionary,
    dictionary_path,
    encode,
    holds_source,
    latest_version,
    load_version,
    mark_source,
)
from precube.engine.flat_table import FlatMetrics, encodable, flat_table
from precube.engine.layout_build import dictionary_key, measure_inputs, needs_dictionary
from precube.engine.local_rows import LocalRows, local_rows
from precube.engine.measures import tuple_key
from precube.engine.sort_keys import IntRange
from precube.engine.source_reads import SourceReads
from precube.metadata import Layout, Segment
from precube.metadata.model import MEASURE_ID_BASE
from precube.storage import columns as names
from precube.storage.snapshots import source_fingerprint

# A flat table cached for several layouts stays in memory (spilling what does not fit) up to this many rows
# (estimated); a larger one is cached on disk.
MEMORY_CACHE_ROWS = 20_000_000

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class SegmentFlat:
    """The segment's flat table for building `layouts`, read through `reads`."""

    def __init__(
        self, ctx: BuildContext, state: ModelState, segment: Segment, layouts: Sequence[Layout], reads: SourceReads
    ) -> None:
        self.ctx, self.state, self.segment, self.reads = ctx, state, segment, reads
        model = state.model
        measures = {i for lay in layouts for i in lay.col_order if i >= MEASURE_ID_BASE}
        # global dictionaries: one per precise COUNT DISTINCT input column, or per measure of several
        # columns (the dictionary of its tuples, named by the measure id)
        self.bitmap_inputs = {
            dictionary_key(m, cols): cols
            for m in model.measures()
            if m.id in measures and needs_dictionary(m) and (cols := measure_inputs(model, m))
        }
        inputs = {c for m in model.measures() if m.id in measures for c in measure_inputs(model, m)}
        layout_cols = {i for lay in layouts for i in lay.col_order if i < MEASURE_ID_BASE}
        self.inputs = sorted(inputs)
        self.columns = sorted(inputs | layout_cols)
        self._df: DataFrame | None = None
        self._cached: DataFrame | None = None
        self.encoded = encodable(model, self.columns, inputs)
        self.codes = Codes()
        self.dictionaries: dict[str, str] = {}
        self.rows: int | None = None  # counted when the segment was found small
        self.tiny = False  # found small from the plan alone: its rows may be read on the driver (`local_rows`)
        self.local: LocalRows | None = None  # the rows read there (`_local`)
        self.metrics = FlatMetrics(self.inputs)  # counted by the first pass over the flat table
        self._lock = threading.Lock()

    def read(self, readers: int) -> tuple[DataFrame, Codes]:
        """The flat rows, some columns coded, and their codes (how to decode and pack a layout computed from
        them); `readers`: how many layouts will read them (known at the first call)."""
        with self._lock:  # root layouts of one layer ask from several threads
            if self._df is None:
                self._df = self._compute(cache=readers > 1 or bool(self.bitmap_inputs), pack=bool(self.encoded))
            return self._df, self.codes

    def small_rows(self) -> int | None:
        """At most how many flat rows the segment has if it is small (`BuildContext.small_segment_rows`):
        estimated from the source plan, then bounded by the rows of the row groups the plan reads, or else
        counted (its flat table computed and cached); None for a larger or unknown one. A small segment's flat
        table is not coded."""
        limit, estimate = self.ctx.small_segment_rows, self.reads.estimated_rows
        if estimate is None or estimate > limit:
            return None
        self.encoded = set()
        bound = self.reads.most_rows
        if bound is not None and bound <= limit:  # no count job (it cost a one-day segment ~0.15 s)
            self.tiny = True
            return bound
        with self._lock:
            if self._df is None:
                self._df = self._compute(cache=True, pack=False)
        self.rows = self._df.count()
        return self.rows if self.rows <= limit else None

    def _compute(self, cache: bool, pack: bool) -> DataFrame:
        """The flat table (`cache`d when read more than once); `pack`: learn its integer ranges (`sort_keys`)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F  # noqa: N812

        ctx, model = self.ctx, self.state.model
        df, self.codes = flat_table(
            self.reads,
            model,
            self.columns,
            self.segment.range,
            self.encoded,
            ctx.code_tables,
            self.metrics,
            self._local if self.tiny else None,
        )
        if self.local is not None and self.local.tables:
            self.ctx.report.read_on_driver.append(self.local.describe())
            # one partition: a layout's aggregation needs no shuffle then, one stage not two
            df = df.coalesce(1)
        if pack:
            self.codes.ranges.update(self._integer_ranges(df))
        if cache:
            # A large flat table goes to disk: held in the heap's storage memory, it left the layouts'
            # aggregations too little execution memory (SSB SF 10, one 60M-row segment, 4 GiB driver:
            # AGGREGATE_OUT_OF_MEMORY); read back from disk it still spares recomputing the joins.
            estimate = self.reads.estimated_rows
            held = estimate is not None and estimate <= MEMORY_CACHE_ROWS
            level = StorageLevel.MEMORY_AND_DISK if held else StorageLevel.DISK_ONLY
            df = self._cached = df.persist(level)
        inputs = sorted(self.bitmap_inputs.items())
        named = {c.id: c.name for c in model.all_named_columns} | {m.id: m.name for m in model.all_measures}
        for n, (cid, cols) in enumerate(inputs):  # global dictionaries: append this segment's new values
            ctx.progress(f"dictionary of {named.get(cid, cid)}", n, len(inputs))  # which column, n of all
            value = names.column(cid) if len(cols) == 1 else f"{cid}_tuple"
            if len(cols) > 1:
                df = df.withColumn(value, tuple_key([F.col(names.column(c)) for c in cols]))
            version = self._dictionary(cid, df.select(F.col(value).alias("value")))
            # no eager check: the dictionary holds every value of this frame
            df = encode(ctx.spark, df, value, version, names.dict_column(cid), check=False)
            if len(cols) > 1:
                df = df.drop(value)
            self.dictionaries[f"dict.{cid}"] = str(version.version)
        if inputs:
            ctx.progress("dictionary done", len(inputs), len(inputs))
        return df

    def _local(self, aliases: list[str]) -> LocalRows:
        """The rows of the fact table and of `aliases` read on the driver (`local_rows`)."""
        with self.ctx.report.step("read on driver", within=LAYOUTS_STEP):
            self.local = local_rows(self.reads, self.state.model, aliases)
        return self.local

    def _integer_ranges(self, df: DataFrame) -> dict[str, IntRange]:
        """The ranges of the flat table's plain integer columns that their source files' statistics bound."""
        from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

        model = self.state.model
        by_id = {c.id: c for c in model.all_named_columns}
        computed = {f"{cc.table_alias}.{cc.column_name}".upper() for cc in model.computed_columns}
        types = {f.name: f.dataType for f in df.schema.fields}
        wanted: dict[str, dict[str, str]] = {}  # alias → source column → flat column
        for cid in self.columns:
            name, column = names.column(cid), by_id.get(cid)
            if column is None or name in self.codes.ranges or column.column.upper() in computed:
                continue
            if isinstance(types.get(name), ByteType | ShortType | IntegerType | LongType):
                alias, source_column = column.column.split(".", 1)
                wanted.setdefault(alias, {})[source_column.upper()] = name
        ranges = {}
        for alias, columns in wanted.items():
            for source_column, (low, high) in self.reads.integer_ranges(alias, list(columns)).items():
                flat = columns[source_column]
                ranges[flat] = IntRange(low, high, types[flat].simpleString())
        return ranges

    def _dictionary(self, cid: int, values: DataFrame) -> DictionaryVersion:
        """The dictionary of input `cid` holding every value of `values`: from the lookup column it reads, once
        per state of the lookup's files, else appended from the segment's values."""
        from pyspark.sql import functions as F  # noqa: N812

        spark, model = self.ctx.spark, self.state.model
        path = dictionary_path(self.ctx.warehouse_root, self.ctx.project, model.uuid, cid)
        lookup = self._lookup_column(cid)
        fingerprint = source_fingerprint(self.reads.tables[lookup[0]]) if lookup is not None else None
        if lookup is None or fingerprint is None:
            return build_dictionary(spark, values, path)
        identity, column = lookup
        token = hashlib.sha256(f"{identity}\0{column}\0{fingerprint}".encode()).hexdigest()[:24]
        latest = latest_version(spark, path)
        if latest is not None and holds_source(spark, path, token):
            return load_version(spark, path, latest)
        version = build_dictionary(spark, self.reads.table(identity).select(F.col(column).alias("value")), path)
        mark_source(spark, path, token, version)
        return version

    def _lookup_column(self, cid: int) -> tuple[str, str] | None:
        """(DB.TABLE, column) when dictionary `cid` encodes a plain column of a lookup table."""
        model = self.state.model
        column = next((c for c in model.all_named_columns if c.id == cid), None)
        if column is None:
            return None
        alias, name = column.column.split(".", 1)
        join = next((j for j in model.join_tables if j.alias.upper() == alias.upper()), None)
        computed = {f"{cc.table_alias}.{cc.column_name}".upper() for cc in model.computed_columns}
        if join is None or column.column.upper() in computed:
            return None
        return join.table.upper(), name

    def count(self) -> int:
        """The flat rows (when no built layout counts them): as the build's pass over them counted them, else
        counted by a job of their own."""
        if self.rows is not None:
            return self.rows
        observed = self.metrics.result()
        if observed is not None:
            return observed["rows"]
        df, _ = flat_table(self.reads, self.state.model, self.columns, self.segment.range)
        return df.count()

    def orphans(self) -> dict[str, int] | None:
        """Per lookup join, the fact rows that found no lookup row, when the build's pass counted them."""
        observed = self.metrics.result()
        if observed is None or not self.metrics.orphans:
            return None
        return {alias: observed[f"orphans_{alias}"] for alias in self.metrics.orphans}

    def null_counts(self) -> dict[str, int]:
        """NULLs of each measure input column among the flat rows (measure inputs are never coded, so their
        NULLs are the source's): as the build's pass counted them, else in one job (over the cached frame when
        the build cached it)."""
        from pyspark.sql import functions as F  # noqa: N812

        if not self.inputs:
            return {}
        observed = self.metrics.result()
        if observed is not None:
            return {str(c): observed["rows"] - observed[f"c{c}"] for c in self.inputs}
        df = self._df
        if df is None:
            df, _ = flat_table(self.reads, self.state.model, self.columns, self.segment.range)
        counts = [F.count(F.col(names.column(c))).alias(f"c{c}") for c in self.inputs]
        row = df.agg(F.count(F.lit(1)).alias("rows"), *counts).first()
        assert row is not None  # a global aggregate has one row
        return {str(c): int(row["rows"]) - int(row[f"c{c}"]) for c in self.inputs}

    def close(self) -> None:
        if self._cached is not None:
            self._cached.unpersist()
