"""Column value ranges from Parquet footers: the min/max statistics of every row group, no data read. The build
uses them for what it wrote (a segment's dimension ranges) and for what it reads (the integer ranges that pack
into sort keys)."""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq


def footer_ranges(files: Collection[Path | str], columns: Collection[str]) -> dict[str, tuple[Any, Any]]:
    """Min and max of each of some (top-level, primitive) columns, matched without regard to case, over the files'
    row groups. A column that some file lacks, or that has a row group without usable statistics (very long
    strings, INT96 timestamps, NaN), is left out; one with only NULLs gets (None, None)."""
    found: dict[str, tuple[Any, Any]] = {name: (None, None) for name in columns}
    for f in files:
        meta = pq.read_metadata(f)
        index = {meta.schema.column(i).path.upper(): i for i in range(meta.num_columns)}
        for name in list(found):
            i = index.get(name.upper())
            if i is None:
                del found[name]
                continue
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                stats = group.column(i).statistics
                if group.num_rows == 0 or (
                    stats is not None and stats.has_null_count and stats.null_count == group.num_rows
                ):
                    continue  # no value here: nothing to widen
                try:
                    lo, hi = (stats.min, stats.max) if stats is not None and stats.has_min_max else (None, None)
                except (ValueError, TypeError, OverflowError):  # a logical type pyarrow cannot convert
                    lo = hi = None
                if lo is None or hi is None or _nan(lo) or _nan(hi):
                    del found[name]
                    break
                low, high = found[name]
                found[name] = (lo if low is None else min(low, lo), hi if high is None else max(high, hi))
    return found


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
