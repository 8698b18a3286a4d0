"""Integer codes of lookup string columns, as Kylin encodes dimensions (`flat_table`'s `encode`): a column's
code table maps each distinct value of the lookup column to its dense rank, so codes sort like the values;
the join, shuffle, group-by and sort of root layouts then move integers, and the (much smaller) output is
decoded before it is written.

A code table depends on its lookup alone, not on the segment: `CodeTables` keeps each one (cached in Spark)
while its source's fingerprint (`storage.snapshots.source_fingerprint`: the files' paths, sizes and modification
times, the registered columns) is unchanged, so the segments built by one process compute it once. A source
without a fingerprint (a catalog table) gets a code table per build, released with it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from precube.metadata import Table
from precube.storage.snapshots import source_fingerprint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class Codes:
    """The code tables one build uses: flat column name → DataFrame(code int, value)."""

    tables: dict[str, DataFrame] = field(default_factory=dict)
    owned: list[DataFrame] = field(default_factory=list)  # made for this build only: released with it

    def decode(self, df: DataFrame) -> DataFrame:
        """`df` with every coded column replaced by its values, columns unchanged. Rows come out in any order
        (a join keeps none, whatever its strategy): sort after decoding."""
        from pyspark.sql import functions as F  # noqa: N812

        coded = [c for c in df.columns if c in self.tables]
        if not coded:
            return df
        out, order = df, list(df.columns)
        for name in coded:
            code, value = f"__code_{name}", f"__value_{name}"
            mapping = self.tables[name].select(F.col("code").alias(code), F.col("value").alias(value))
            out = out.join(F.broadcast(mapping), F.col(name) == F.col(code), "left")
        return out.select(*[F.col(f"__value_{c}").alias(c) if c in self.tables else F.col(c) for c in order])

    def release(self) -> None:
        for mapping in self.owned:
            mapping.unpersist()
        self.owned.clear()


def code_table(lookup: DataFrame, column: str) -> DataFrame:
    """The code table of one column of a lookup: its distinct values (NULL included) and their dense ranks,
    cached (the flat table and every root layout's decoding read it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    order = Window.orderBy(F.col("value").asc_nulls_first())
    mapping = lookup.select(F.col(column).alias("value")).distinct()
    return mapping.withColumn("code", F.dense_rank().over(order).cast("int")).persist()


class CodeTables:
    """Code tables kept across builds while their lookup's source is unchanged; shared by the jobs of one
    process (`BuildContext.code_tables`)."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[str, DataFrame]] = {}  # (table, column) → (fingerprint, codes)
        self._lock = threading.Lock()

    def get(self, table: Table, column: str, lookup: DataFrame, codes: Codes) -> DataFrame:
        """The code table of `table.column` (`lookup`: its rows as this build reads them); one made for
        this build only is added to `codes.owned`."""
        fingerprint = source_fingerprint(table)
        if fingerprint is None:
            mapping = code_table(lookup, column)
            codes.owned.append(mapping)
            return mapping
        key = (table.identity, column)
        with self._lock:
            held = self._held.get(key)
            if held is not None and held[0] == fingerprint:
                return held[1]
            mapping = code_table(lookup, column)
            if held is not None:  # the lookup changed: its old codes are no use to anyone
                held[1].unpersist()
            self._held[key] = (fingerprint, mapping)
            return mapping

    def fingerprints(self) -> dict[tuple[str, str], str]:
        """(table, column) → the fingerprint of the lookup files each held code table was made from."""
        with self._lock:
            return {key: fingerprint for key, (fingerprint, _) in self._held.items()}

    def clear(self) -> None:
        """Release every code table held (e.g. when the Spark session goes)."""
        with self._lock:
            for _, mapping in self._held.values():
                mapping.unpersist()
            self._held.clear()
