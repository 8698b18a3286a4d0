"""A held layout's columns as numpy arrays, for direct answers (`direct`): integers, and strings coded by their
rank among the column's sorted distinct values, each in the smallest integer type that holds them; the rows in
the layout's sort order, and the prefix of its dimensions that order is checked to hold for. Columns of other
types are not copied (a statement reading one is DuckDB's)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

INT_TYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}
PY_STRING_BYTES = 50  # a Python string's bytes besides its text


@dataclass(frozen=True)
class Column:
    """One column of a held layout: integers, or strings as codes into `words` (sorted), each in the smallest
    integer type that holds them; NULLs where `valid` is False (their values are 0), `valid` None when there are
    none."""

    values: np.ndarray
    valid: np.ndarray | None
    arrow_type: pa.DataType  # the type of the column in an answer (strings: pa.string())
    lowest: int  # the least and greatest value (of a string column: code)
    highest: int
    words: list[str] | None = None  # a string column's distinct values, sorted; its codes index them
    dictionary: pa.Array | None = None  # the same as Arrow, to decode codes

    @property
    def largest(self) -> int:
        """The largest magnitude of the column's values."""
        return max(abs(self.lowest), abs(self.highest))

    @property
    def text(self) -> bool:
        return self.words is not None


@dataclass(frozen=True)
class DirectLayout:
    """The columns of a held layout, its rows sorted by `sorted_by` (a prefix of its dimensions without NULLs)."""

    name: str
    rows: int
    columns: dict[str, Column]
    sorted_by: tuple[str, ...]
    nbytes: int


def direct_layout(name: str, table: pa.Table, sort_by: Iterable[str]) -> DirectLayout | None:
    """The layout's columns of the types this module takes from its held rows (a statement reading another is
    DuckDB's); None when there are none."""
    named = ((f.name, c) for f, c in zip(table.schema, table.columns, strict=True))
    return direct_columns(name, table.num_rows, named, sort_by)


def direct_columns(
    name: str, rows: int, exported: Iterable[tuple[str, pa.ChunkedArray]], sort_by: Iterable[str]
) -> DirectLayout | None:
    """`direct_layout` from its columns given one at a time (each may be freed before the next is read)."""
    columns: dict[str, Column] = {}
    for column_name, chunked in exported:
        column = _column(chunked)
        if column is not None:
            columns[column_name] = column
    pa.default_memory_pool().release_unused()  # the exports' buffers: back to the system, not kept by the pool
    if not columns:
        return None
    prefix: list[str] = []
    for name_ in sort_by:
        if name_ not in columns or columns[name_].valid is not None:
            break
        prefix.append(name_)
    while prefix and not _sorted([columns[c].values for c in prefix]):
        prefix.pop()  # the rows are sorted by the layout's dimensions; checked, not assumed
    return DirectLayout(name, rows, columns, tuple(prefix), sum(map(_bytes, columns.values())))


def _bytes(column: Column) -> int:
    """What a column holds: its arrays, and a string column's values (as Arrow, and as Python strings: ~50 bytes
    each besides their text)."""
    size = column.values.nbytes + (column.valid.nbytes if column.valid is not None else 0)
    if column.dictionary is not None:
        size += 2 * column.dictionary.nbytes + PY_STRING_BYTES * len(column.dictionary)
    return size


def _column(chunked: pa.ChunkedArray) -> Column | None:
    import pyarrow.compute as pc  # on the loader's thread: not on a process's first statement

    kind = chunked.type
    coded = pa.types.is_dictionary(kind) and pa.types.is_string(kind.value_type)
    if coded:
        chunked = chunked.unify_dictionaries()  # an ENUM's chunks share its values
    array = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
    valid = None if array.null_count == 0 else np.asarray(array.is_valid().to_numpy(zero_copy_only=False))
    if kind in INT_TYPES:
        values = np.asarray(pc.fill_null(array, 0).to_numpy())
        low, high = (int(values.min()), int(values.max())) if len(values) else (0, 0)
        return Column(_narrow(values, low, high), valid, kind, low, high)
    if coded:
        dictionary, indices = array.dictionary, array.indices
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        encoded = pc.dictionary_encode(array)
        dictionary, indices = encoded.dictionary, encoded.indices
    else:
        return None
    dictionary = dictionary.cast(pa.string())
    order = pc.array_sort_indices(dictionary)  # codes by rank: comparing codes compares the strings
    rank = _narrow(np.empty(len(dictionary), dtype=np.int64), 0, len(dictionary) - 1)
    rank[order.to_numpy()] = np.arange(len(dictionary))
    codes = rank[np.asarray(pc.fill_null(indices, 0).to_numpy())] if len(array) else rank[:0]
    words = dictionary.take(order)
    return Column(codes, valid, pa.string(), 0, len(words) - 1, words.to_pylist(), words)


def _narrow(values: np.ndarray, low: int, high: int) -> np.ndarray:
    """The values in the smallest integer type that holds them (a held layout's columns take less memory)."""
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values.astype(np.int64)


def _sorted(keys: list[np.ndarray]) -> bool:
    """Whether the rows are in ascending order of `keys` (the first most significant)."""
    if not keys or len(keys[0]) < 2:
        return True
    ok = np.ones(len(keys[0]) - 1, dtype=bool)
    for key in reversed(keys):
        ok = (key[:-1] < key[1:]) | ((key[:-1] == key[1:]) & ok)
    return bool(ok.all())
