"""Building a set of layouts into one segment, layer by layer (seed 003, reference §4.1): a layout
reads its smallest already-built parent (fewest rows, then fewest columns), the flat table only when
no built layout derives it. Each finished layout is recorded at once, so a rerun skips it.

On a local warehouse, a layout whose measures Arrow merges exactly (`arrow_merge`: COUNT, SUM, MIN, MAX) is
merged from its built parent on the driver when the parent fits in memory: no Spark job at all. Elsewhere,
layouts are computed together in one Spark job (GROUPING SETS, `layout_build.compute_batch`) wherever a job
each would mostly pay for scheduling or for reading the same input again:
- A small segment (its flat rows counted, `BuildContext.small_segment_rows`): every aggregate layout from
  the flat table at once, whatever the spanning tree says (its layers would each cost a job); or, when the
  layouts merge on the driver, one aggregation by all the roots' columns, collected, and every layout merged
  from it there.
- The roots (aggregate layouts no other layout derives) from the flat table at once: one pass over the
  source rows, however many aggregation groups the plan has.
- When the chosen parent is small (`SMALL_PARENT_ROWS`), that parent's pending descendants, in this
  layer and later ones, with the measures' merge functions. A larger parent feeds each layout in a job of its
  own: each reads only its columns and hashes only its dimensions, where GROUPING SETS would expand every
  row once per layout over all of them (SF 1's base layout fed its two children in 3.2 CPU s apart,
  5.8 together).
A batch from a small input that yields few rows at most (`COLLECT_MAX_ROWS`) is collected and written from
the driver with pyarrow (local warehouses); any other batch is cached and each of its layouts written by
Spark. The work items of a layer (one layout, a run of same-column layouts, or a batch) are independent, so up
to `BuildContext.parallel_layouts` run as concurrent Spark jobs. Layouts with the same columns in another order
go one after the other: all but the first re-sort their sibling. Each finished layout is recorded at once, so a
stopped build resumes after it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from precube.engine.arrow_merge import MERGE_MAX_VALUES, in_layout_order, merge_locally, merge_table, mergeable
from precube.engine.code_tables import Codes
from precube.engine.context import LAYOUTS_STEP, BuildContext, record_layouts
from precube.engine.layout_build import (
    GROUPING_ID,
    LayoutShape,
    compute_batch,
    compute_layout,
    finish_layout,
    grouping_id,
)
from precube.engine.storage import WrittenFiles, write_arrow, written
from precube.metadata import Layout, LayoutInstance, Model
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling.spanning_tree import build_layers, choose_parent, fully_derives
from precube.storage.paths import is_local, layout_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# The segment's flat table and its codes (`Codes`: how to decode and pack its coded columns), given how many
# layouts will read it (so it is cached only when worth it).
FlatSource = Callable[[int], tuple["DataFrame", Codes]]

SMALL_PARENT_ROWS = 1_000_000  # a parent this small feeds all its pending descendants in one job
BATCH_MAX_ROWS = 20_000_000  # parent rows x grouping sets per batch job (its Expand size)
# at most this many rows (input rows x layouts: what the batch may produce) collected to the driver: beyond it
# Spark writes each layout (TPC-H SF 1's yearly segments, 0.9M rows x 13 layouts one of them 35 columns wide,
# passed spark.driver.maxResultSize's 1 GiB)
COLLECT_MAX_ROWS = 2_000_000
ROW_GROUP_ROWS = 122_880  # rows of a layout file's Parquet row group: as many as a DuckDB row group


def _shape(layout: Layout) -> tuple[bool, frozenset[int]]:
    return layout.is_table_index, frozenset(layout.col_order)


class _Segment:
    """One segment's build: what is built so far, and how to build more."""

    def __init__(
        self,
        ctx: BuildContext,
        model: Model,
        segment_id: str,
        built: dict[int, tuple[Layout, LayoutInstance]],
        flat: FlatSource,
        source_rows: int | None,
        total: int,
    ) -> None:
        self.ctx, self.model, self.segment_id, self.built = ctx, model, segment_id, built
        self.flat, self.source_rows, self.total = flat, source_rows, total
        self.flat_rows: int | None = None  # at most how many rows the flat table has (a small segment's)
        self.lock = threading.Lock()  # guards `built`, the metadata record and the progress count
        self.done = 0
        self.stage = ""

    def path(self, layout_id: int) -> str:
        return layout_path(self.ctx.warehouse_root, self.ctx.project, self.model.uuid, self.segment_id, layout_id)

    def parent_of(self, layout: Layout) -> Layout | None:
        with self.lock:
            return choose_parent(layout, {i: (lay, li.rows) for i, (lay, li) in self.built.items()})

    def rows(self, layout_id: int) -> int:
        with self.lock:
            return self.built[layout_id][1].rows

    def finished(self, layout: Layout, instance: LayoutInstance) -> None:
        self.all_finished([(layout, instance)])

    def all_finished(self, done: Sequence[tuple[Layout, LayoutInstance]]) -> None:
        """Record finished layouts (in one transaction), then count each in the progress."""
        with self.lock:
            record_layouts(self.ctx, self.model, self.segment_id, [instance for _, instance in done])
            for layout, instance in done:
                self.built[layout.id] = (layout, instance)
                self.done += 1
                self.ctx.progress(self.stage, self.done, self.total)

    def build_run(self, run: list[Layout], roots: int) -> None:
        """Layouts with the same columns: the first from its parent (or the flat table), the rest re-sort it."""
        for layout in run:
            parent = self.parent_of(layout)
            if parent is None:
                source, codes = self.flat(roots)
                df = compute_layout(source, layout, self.model, True, self.flat_rows, codes=codes)
            elif self.merged_locally([layout], parent):
                continue
            else:
                source = self.ctx.spark.read.parquet(self.path(parent.id))
                same_grain = _shape(parent) == _shape(layout)
                df = compute_layout(source, layout, self.model, False, self.rows(parent.id), same_grain)
            self.finished(layout, write_layout(self.ctx, self.model, self.segment_id, layout.id, df, self.source_rows))

    def build_batch(self, batch: list[Layout], parent: Layout | None, input_rows: int | None, readers: int = 1) -> None:
        """Agg layouts computed together in one Spark job from a built `parent` or (None) the flat table
        (`readers`: how many work items read it); `input_rows`: the input's rows when known."""
        if parent is None:
            source, codes = self.flat(readers)
        elif self.merged_locally(batch, parent):
            return
        else:
            source, codes = self.ctx.spark.read.parquet(self.path(parent.id)), Codes()
        df, all_dims = compute_batch(source, batch, self.model, from_flat=parent is None)
        if (
            is_local(self.ctx.warehouse_root)
            and input_rows is not None
            and input_rows <= SMALL_PARENT_ROWS
            and input_rows * len(batch) <= COLLECT_MAX_ROWS
        ):
            self._write_collected(codes.decode(df).toArrow(), batch, all_dims)
        else:
            self._write_each(df, codes, batch, all_dims)

    def merged_locally(self, layouts: list[Layout], parent: Layout) -> bool:
        """Merge agg `layouts` from a built `parent` on the driver with Arrow (`arrow_merge`), write and record
        them together; False (nothing done) where Spark must merge them."""
        if not is_local(self.ctx.warehouse_root) or any(lay.is_table_index for lay in (parent, *layouts)):
            return False
        tables = merge_locally(self.path(parent.id), self.rows(parent.id), layouts, self.model)
        if tables is None:
            return False
        self.all_finished([self._written(layout, table) for layout, table in zip(layouts, tables, strict=True)])
        self.ctx.report.merged_on_driver.extend(layout.id for layout in layouts)
        return True

    def merged_from_union(self, roots: list[Layout], flat_rows: int, readers: int) -> bool:
        """Merge a small segment's agg `roots` on the driver from their union (every dimension and measure of
        them), computed from the flat table in one plain aggregation and collected, never written; False
        (nothing recorded) where Arrow cannot merge them. A GROUPING SETS job for the roots expands every
        flat row once per root: the demo's layouts took 7.0-9.2 s a year at SF 0.1 so, 3.4-3.9 s this way."""
        dims = sorted({d for root in roots for d in root.dimensions})
        measures = sorted({i for root in roots for i in root.col_order if i >= MEASURE_ID_BASE})
        union = Layout(id=0, col_order=dims + measures)
        cells = len(LayoutShape.of(union, self.model).columns()[1])
        if flat_rows > COLLECT_MAX_ROWS or flat_rows * (len(dims) + cells) > MERGE_MAX_VALUES:
            return False
        source, codes = self.flat(readers)
        df, _ = compute_batch(source, [union], self.model, from_flat=True)
        tables = merge_table(codes.decode(df.drop(GROUPING_ID)).toArrow(), roots, self.model)
        if tables is None:
            return False
        self.all_finished([self._written(root, table) for root, table in zip(roots, tables, strict=True)])
        self.ctx.report.merged_on_driver.extend(root.id for root in roots)
        return True

    def _write_collected(self, table: pa.Table, batch: list[Layout], all_dims: list[int]) -> None:
        """Each layout's rows of a collected batch, sorted and written from the driver, then recorded together:
        the batch is one unit of work (stopped before its record, it is computed again when resumed)."""
        done = []
        for layout in batch:
            dims, cells = LayoutShape.of(layout, self.model).columns()
            one = table.filter(pc.equal(table[GROUPING_ID], grouping_id(layout, all_dims))).select(dims + cells)
            done.append(self._written(layout, in_layout_order(one, dims)))
        self.all_finished(done)

    def _written(self, layout: Layout, table: pa.Table) -> tuple[Layout, LayoutInstance]:
        """Write a layout's rows from the driver; the layout and its instance, to record."""
        files = write_arrow(self.path(layout.id), table)
        return layout, _instance(self.ctx, self.path(layout.id), layout.id, self.source_rows, files)

    def _write_each(self, df: DataFrame, codes: Codes, batch: list[Layout], all_dims: list[int]) -> None:
        """Each layout of a batch written by Spark from the batch's rows, computed once and cached."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F  # noqa: N812

        cached = df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            counts = {int(r[0]): int(r[1]) for r in cached.groupBy(GROUPING_ID).count().collect()}
            for layout in batch:
                gid = grouping_id(layout, all_dims)
                dims, cells = LayoutShape.of(layout, self.model).columns()
                one = cached.where(F.col(GROUPING_ID) == gid).select(*dims, *cells)
                out = codes.decode(finish_layout(one, layout, self.model, counts.get(gid, 0), codes.packing(dims)))
                instance = write_layout(self.ctx, self.model, self.segment_id, layout.id, out, self.source_rows)
                self.finished(layout, instance)
        finally:
            cached.unpersist()


def _runs(layouts: Sequence[Layout]) -> dict[tuple[bool, frozenset[int]], list[Layout]]:
    """Layouts grouped by shape: the first of each is computed, the rest re-sort it."""
    runs: dict[tuple[bool, frozenset[int]], list[Layout]] = {}
    for layout in layouts:
        runs.setdefault(_shape(layout), []).append(layout)
    return runs


def _rootless(pending: Sequence[Layout], built: dict[int, tuple[Layout, LayoutInstance]]) -> list[Layout]:
    """One layout of each shape that no built or pending layout of another shape derives: what is read
    from the flat table."""
    candidates = [*(lay for lay, _ in built.values()), *pending]
    found: dict[tuple[bool, frozenset[int]], Layout] = {}
    for layout in pending:
        if not any(_shape(o) != _shape(layout) and fully_derives(o, layout) for o in candidates):
            found.setdefault(_shape(layout), layout)
    return list(found.values())


def build_into_segment(
    ctx: BuildContext,
    model: Model,
    segment_id: str,
    to_build: Sequence[Layout],
    built: dict[int, tuple[Layout, LayoutInstance]],
    flat: FlatSource,
    source_rows: int | None,
    flat_rows: int | None = None,
    estimated_rows: int | None = None,
) -> None:
    """Build `to_build` into the segment; `built` are its layouts already there (updated in place).
    `source_rows`: the segment's, when known before the build (else the commit records them); `flat_rows`:
    at most how many rows a small segment's flat table has (all its aggregate layouts come from it in one job);
    `estimated_rows`: the source plan's estimate of a larger one's."""
    pending = [lay for lay in to_build if lay.id not in built]
    seg = _Segment(ctx, model, segment_id, built, flat, source_rows, len(pending))
    if flat_rows is not None:
        _build_small(seg, pending, flat_rows)
        return
    layers = build_layers(pending, {i: (lay, li.rows) for i, (lay, li) in built.items()})
    taken: set[int] = set()  # layouts given to a batch
    rootless = _rootless(pending, built)
    roots = [lay for lay in rootless if not lay.is_table_index]
    if len(roots) > 1:  # a pass over the flat rows for as many of them with the same measures as BATCH_MAX_ROWS allows
        seg.stage = f"layer 1/{len(layers)}"
        flat_estimate = source_rows or estimated_rows
        parts = _batches(roots, model, BATCH_MAX_ROWS // flat_estimate if flat_estimate else 1)
        readers = len(parts) + len(rootless) - len(roots)
        work = [
            functools.partial(seg.build_batch, part, None, None, readers)
            if len(part) > 1
            else functools.partial(seg.build_run, part, readers)  # a plain aggregation, written as it comes
            for part in parts
        ]
        _run_all(work, ctx.parallel_layouts)
        taken.update(lay.id for lay in roots)
    for number, layer in enumerate(layers, start=1):
        seg.stage = f"layer {number}/{len(layers)}"
        runs: dict[tuple[bool, frozenset[int]], list[Layout]] = {}
        batches: dict[int, list[Layout]] = {}
        for layout in layer:
            if layout.id in taken:
                continue
            parent = seg.parent_of(layout)
            if parent is not None and not layout.is_table_index and seg.rows(parent.id) <= SMALL_PARENT_ROWS:
                in_runs = {lay.id for run in runs.values() for lay in run}
                batch = [
                    c
                    for c in pending
                    if c.id not in taken | in_runs and not c.is_table_index and fully_derives(parent, c)
                ]
                taken.update(c.id for c in batch)
                batches.setdefault(parent.id, []).extend(batch)
            else:
                runs.setdefault(_shape(layout), []).append(layout)
        left = sum(1 for run in runs.values() if seg.parent_of(run[0]) is None)
        work = [functools.partial(seg.build_run, run, left) for run in runs.values()]
        for parent_id, members in batches.items():
            rows = seg.rows(parent_id)
            for chunk in _batches(members, seg.model, BATCH_MAX_ROWS // max(1, rows)):
                work.append(functools.partial(seg.build_batch, chunk, built[parent_id][0], rows))
        _run_all(work, ctx.parallel_layouts)


def _build_small(seg: _Segment, pending: list[Layout], flat_rows: int) -> None:
    """A small segment's layouts: the aggregate ones from the flat table in one job per measure set, or, where
    Arrow merges their measures on the driver, all merged there: those no other layout derives (its roots) from
    their union (`_Segment.merged_from_union`), the rest from them (a job computing every layout spent most of
    its time expanding each row once per layout)."""
    seg.stage, seg.flat_rows = "layer 1/1", flat_rows
    aggs = [lay for lay in pending if not lay.is_table_index]
    local = is_local(seg.ctx.warehouse_root) and mergeable(aggs, seg.model)
    firsts = _rootless(aggs, seg.built) if local else aggs
    tables = list(_runs([lay for lay in pending if lay.is_table_index]).values())
    with seg.ctx.report.step("from the flat table", within=LAYOUTS_STEP):
        if len(firsts) > 1 and local and seg.merged_from_union(firsts, flat_rows, 1 + len(tables)):
            firsts = []
        chunks = _batches(firsts, seg.model, BATCH_MAX_ROWS // max(1, flat_rows))
        readers = len(chunks) + len(tables)  # of the flat table: cached when more than one
        work = [functools.partial(seg.build_batch, chunk, None, flat_rows, readers) for chunk in chunks]
        work += [functools.partial(seg.build_run, run, readers) for run in tables]
        _run_all(work, seg.ctx.parallel_layouts)
    by_parent: dict[int, list[Layout]] = {}
    for layout in aggs:
        parent = seg.parent_of(layout) if layout.id not in seg.built else None
        if parent is not None:
            by_parent.setdefault(parent.id, []).append(layout)
    work = [
        functools.partial(seg.build_batch, members, seg.built[parent_id][0], seg.rows(parent_id))
        for parent_id, members in by_parent.items()
    ]
    with seg.ctx.report.step("from built layouts", within=LAYOUTS_STEP):
        _run_all(work, seg.ctx.parallel_layouts)


def _batches(layouts: list[Layout], model: Model, size: int) -> list[list[Layout]]:
    """Agg layouts of one input in batch jobs of at most `size` (at least 1), one job per set of measures: a
    GROUPING SETS job computes every measure of its batch for every grouping set (TPC-H's layouts, most with
    one SUM, each computed Q1's nine as well), and one COUNT DISTINCT or sketch makes Spark aggregate every
    grouping set of its job with object buffers, sort-based past 128 groups per task. TPC-H SF 1, a year's
    twelve recommended layouts (seven measure sets): its whole build took 275 CPU s with these layouts in two
    jobs (plain measures; the COUNT DISTINCT), 199 in one per measure set (Spark's event log)."""
    by_measures: dict[frozenset[int], list[Layout]] = {}
    for layout in layouts:
        by_measures.setdefault(frozenset(m.id for m in LayoutShape.of(layout, model).measures), []).append(layout)
    size = max(1, size)
    return [part[i : i + size] for part in by_measures.values() for i in range(0, len(part), size)]


def _run_all(work: Sequence[Callable[[], None]], parallel: int) -> None:
    """Run independent work items, up to `parallel` at a time; the first failure is raised once the
    running ones end (what they finished is recorded), and the rest never start."""
    if parallel <= 1 or len(work) <= 1:
        for item in work:
            item()
        return
    with ThreadPoolExecutor(min(parallel, len(work)), thread_name_prefix="precube-layout") as pool:
        futures = [pool.submit(item) for item in work]
        finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in finished if f.exception() is not None]
        if failed:
            for f in futures:
                f.cancel()
            raise failed[0].exception()  # type: ignore[misc]


def _instance(
    ctx: BuildContext, path: str, layout_id: int, source_rows: int | None, files: WrittenFiles | None = None
) -> LayoutInstance:
    """The instance of a written layout (`files`: what the write knows it wrote; else read from the footers)."""
    files = files or written(ctx.spark, path)
    return LayoutInstance(
        layout_id=layout_id,
        build_job_id=ctx.job_id,
        rows=files.rows,
        byte_size=files.bytes,
        file_count=files.files,
        source_rows=source_rows or 0,
        is_ready=True,
    )


def write_layout(
    ctx: BuildContext, model: Model, segment_id: str, layout_id: int, df: DataFrame, source_rows: int | None
) -> LayoutInstance:
    """Write one layout's rows into the segment with Spark; the caller records the returned instance."""
    path = layout_path(ctx.warehouse_root, ctx.project, model.uuid, segment_id, layout_id)
    # overwrite: a killed earlier attempt may have left part of this (unrecorded) directory; row groups of
    # ROW_GROUP_ROWS (each file is sorted by the layout's dimensions, `finish_layout`): their min/max let a query
    # over the files skip most of them under a filter on leading dimensions, where Spark's 128 MB default made
    # one row group of each file
    df.write.mode("overwrite").option("parquet.block.row.count.limit", ROW_GROUP_ROWS).parquet(path)
    return _instance(ctx, path, layout_id, source_rows)
