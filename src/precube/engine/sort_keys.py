"""Packed keys: a layout's leading integer dimensions whose values lie in known ranges (codes of lookup
strings, integer columns whose Parquet statistics bound them) packed into one 64-bit integer, first dimension
in the highest bits, as Kylin packs a cuboid's dimensions into its row key.

A layout from the flat table is then grouped and sorted on that one integer when every dimension packs:
hashing and comparing one long instead of ten columns, and Spark radix-sorts a single integral key. When only
some leading dimensions pack, the key is the first sort column and the rest follow: it still settles nearly
every comparison by the sort prefix alone. Packing keeps the order of the values: NULL is 0, and a value
`v` of a range starting at `low` is `v - low + 1`, so the rows come out sorted as by the columns themselves
(NULL first), and the columns are unpacked from the key exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column

KEY = "__packed_key"
KEY_BITS = 62  # a signed long's bits, less one spare: no sum or shift can overflow


@dataclass(frozen=True)
class IntRange:
    """The inclusive bounds of an integer column's values (NULL aside) and its Spark type."""

    low: int
    high: int
    spark_type: str  # as `DataType.simpleString()` gives it: the type a value is unpacked to

    @property
    def width(self) -> int:
        """Bits for NULL (0) and every value (1 … high - low + 1)."""
        return (self.high - self.low + 1).bit_length()


@dataclass(frozen=True)
class Field:
    column: str
    range: IntRange
    shift: int


@dataclass(frozen=True)
class Packing:
    """How some leading dimensions of a layout pack into `KEY`, and the dimensions after them."""

    fields: tuple[Field, ...]
    rest: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """Every dimension is in the key: the key alone groups and orders the rows."""
        return not self.rest

    def key(self) -> Column:
        from pyspark.sql import functions as F  # noqa: N812

        key = F.lit(0).cast("long")
        for f in self.fields:
            slot = F.coalesce(F.col(f.column).cast("long") - F.lit(f.range.low - 1), F.lit(0).cast("long"))
            key = key + F.shiftleft(slot, f.shift)
        return key

    def order(self) -> list[Column]:
        """The sort order of the layout's dimensions: the key (a column `KEY` in the frame), then the rest."""
        from pyspark.sql import functions as F  # noqa: N812

        return [F.col(KEY).asc(), *[F.col(c).asc_nulls_first() for c in self.rest]]

    def unpacked(self) -> list[Column]:
        """The packed dimensions, each as its column again, from `KEY`."""
        from pyspark.sql import functions as F  # noqa: N812

        columns = []
        for f in self.fields:
            slot = F.shiftright(F.col(KEY), f.shift).bitwiseAND(F.lit((1 << f.range.width) - 1))
            value = F.when(slot != 0, slot + F.lit(f.range.low - 1)).cast(f.range.spark_type)
            columns.append(value.alias(f.column))
        return columns


def packing(dims: Sequence[str], ranges: Mapping[str, IntRange]) -> Packing | None:
    """The packing of the longest run of leading `dims` with known ranges that fits `KEY_BITS`; None when it
    would hold fewer than two of them (one column sorts as fast on its own)."""
    chosen: list[tuple[str, IntRange]] = []
    bits = 0
    for d in dims:
        rng = ranges.get(d)
        if rng is None or bits + rng.width > KEY_BITS:
            break
        chosen.append((d, rng))
        bits += rng.width
    if len(chosen) < 2:
        return None
    fields, shift = [], bits
    for d, rng in chosen:
        shift -= rng.width
        fields.append(Field(d, rng, shift))
    return Packing(tuple(fields), tuple(dims[len(chosen) :]))
