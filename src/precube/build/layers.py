"""Building a set of layouts into one segment, layer by layer (seed 003, reference §4.1): a layout
reads its smallest already-built parent (fewest rows, then fewest columns), the flat table only when
no built layout derives it. Each finished layout is recorded at once, so a rerun skips it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from precube.build.context import BuildContext, record_layout
from precube.build.layout_build import compute_layout
from precube.build.storage import layout_path, written
from precube.metadata import Layout, LayoutInstance, Model
from precube.modeling.spanning_tree import build_layers, choose_parent

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# Returns the flat table of the segment and its row count; called only if some layout needs it.
FlatSource = Callable[[], tuple["DataFrame", int]]


def build_into_segment(
    ctx: BuildContext,
    model: Model,
    segment_id: str,
    to_build: Sequence[Layout],
    built: dict[int, tuple[Layout, LayoutInstance]],
    flat: FlatSource,
    source_rows: Callable[[], int],
) -> None:
    """Build `to_build` into the segment; `built` are its layouts already there (updated in place)."""
    pending = [lay for lay in to_build if lay.id not in built]
    layers = build_layers(pending, {i: (lay, li.rows) for i, (lay, li) in built.items()})
    total = len(pending)
    done = 0
    for number, layer in enumerate(layers, start=1):
        for layout in layer:
            parent = choose_parent(layout, {i: (lay, li.rows) for i, (lay, li) in built.items()})
            if parent is None:
                source, rows = flat()
            else:
                source = ctx.spark.read.parquet(_path(ctx, model, segment_id, parent.id))
                rows = built[parent.id][1].rows
            df = compute_layout(source, layout, model, from_flat=parent is None, input_rows=rows)
            instance = write_layout(ctx, model, segment_id, layout.id, df, source_rows())
            built[layout.id] = (layout, instance)
            done += 1
            ctx.progress(f"layer {number}/{len(layers)}", done, total)


def write_layout(
    ctx: BuildContext, model: Model, segment_id: str, layout_id: int, df: DataFrame, source_rows: int
) -> LayoutInstance:
    """Write one layout's rows into the segment and record it as built."""
    path = _path(ctx, model, segment_id, layout_id)
    # overwrite: a killed earlier attempt may have left part of this (unrecorded) directory
    df.write.mode("overwrite").parquet(path)
    files = written(ctx.spark, path)
    instance = LayoutInstance(
        layout_id=layout_id,
        build_job_id=ctx.job_id,
        rows=files.rows,
        byte_size=files.bytes,
        file_count=files.files,
        source_rows=source_rows,
        is_ready=True,
    )
    record_layout(ctx, model, segment_id, instance)
    return instance


def _path(ctx: BuildContext, model: Model, segment_id: str, layout_id: int) -> str:
    return layout_path(ctx.warehouse_root, ctx.project, model.uuid, segment_id, layout_id)
