"""Lookup tables kept in Spark's memory across builds while their files are unchanged, as `CodeTables` keeps
codes: every build broadcasts each lookup it joins, and for a small segment reading the lookups' files again
was most of its Spark time (SSB's PART, 200,000 rows, for a day of 2,400 fact rows).

A lookup is kept while its source's fingerprint (`storage.snapshots.source_fingerprint`) is unchanged; a
changed lookup is read again and its old rows released; a source without a fingerprint is read each build.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from precube.metadata import Table
from precube.storage.snapshots import source_fingerprint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class KeptLookups:
    """The lookups kept by one process (`BuildContext.lookups`), shared by its builds."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, DataFrame]] = {}  # DB.TABLE → (fingerprint, rows)
        self._lock = threading.Lock()

    def get(self, table: Table, read: Callable[[], DataFrame]) -> DataFrame:
        """The rows of lookup `table`: kept ones while its files are unchanged, else `read()` (and kept)."""
        from pyspark import StorageLevel

        fingerprint = source_fingerprint(table)
        if fingerprint is None:
            return read()
        with self._lock:
            held = self._held.get(table.identity)
            if held is not None and held[0] == fingerprint:
                return held[1]
            rows = read().persist(StorageLevel.MEMORY_AND_DISK)
            self._held[table.identity] = (fingerprint, rows)
        if held is not None:  # the lookup changed: its old rows are no use to anyone
            held[1].unpersist()
        return rows
