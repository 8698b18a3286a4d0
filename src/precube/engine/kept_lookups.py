"""Lookup tables kept across builds while their files are unchanged, as `CodeTables` keeps codes: in Spark's
memory, since every build broadcasts each lookup it joins, and for a small segment reading the lookups' files
again was most of its Spark time (SSB's PART, 200,000 rows, for a day of 2,400 fact rows); and on the driver as
Arrow, for a tiny segment's joins (`local_rows`), while they are small (`ARROW_MAX_VALUES`).

A lookup is kept while its source's fingerprint (`storage.snapshots.source_fingerprint`) is unchanged; a
changed lookup is read again and its old rows released; a source without a fingerprint is read each build.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from precube.metadata import Table
from precube.storage.snapshots import source_fingerprint

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

# A lookup is read and kept on the driver only up to this many values (rows times columns), about 100 MB.
ARROW_MAX_VALUES = 16_000_000

ArrowRows = tuple["pa.Table", "StructType"]  # the rows and their Spark schema


class KeptLookups:
    """The lookups kept by one process (`BuildContext.lookups`), shared by its builds."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[str, Any]] = {}  # (DB.TABLE, kind) → (fingerprint, rows)
        self._lock = threading.Lock()

    def get(self, table: Table, read: Callable[[], DataFrame]) -> DataFrame:
        """The rows of lookup `table`: kept ones while its files are unchanged, else `read()` (and kept)."""
        from pyspark import StorageLevel

        def release(rows: DataFrame) -> None:
            rows.unpersist()

        kept: DataFrame | None = self._keep(
            table, "spark", lambda: read().persist(StorageLevel.MEMORY_AND_DISK), release
        )
        return kept if kept is not None else read()

    def arrow(self, table: Table, read: Callable[[], ArrowRows | None]) -> ArrowRows | None:
        """The rows of lookup `table` on the driver, kept while its files are unchanged; None when `read()`
        cannot read them there."""
        kept: ArrowRows | None = self._keep(table, "arrow", read, lambda rows: None)
        return kept

    def _keep(self, table: Table, kind: str, read: Callable[[], Any], release: Callable[[Any], None]) -> Any:
        """The kept rows of `kind` while `table`'s files are unchanged, else `read()` kept (None without a
        fingerprint: the caller reads them itself); rows of an older state are released."""
        fingerprint = source_fingerprint(table)
        if fingerprint is None:
            return None
        key = (table.identity, kind)
        with self._lock:
            held = self._held.get(key)
            if held is not None and held[0] == fingerprint:
                return held[1]
            rows = read()
            self._held[key] = (fingerprint, rows)
        if held is not None and held[1] is not None:  # the lookup changed: its old rows are no use to anyone
            release(held[1])
        return rows
