"""PEP 249's cursor over a connection's backend: `execute` binds the parameters (`binding`), the backend answers
with an Arrow table, and the fetch methods hand out its rows as tuples, converted a batch at a time.
`fetch_arrow_table()` and `fetch_df()` return the rows not fetched yet as Arrow or pandas, without tuples."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from precube_client.errors import InterfaceError, ProgrammingError
from precube_client.types import Description, description, rows

if TYPE_CHECKING:
    import pandas as pd

    from precube_client.connection import Connection

BATCH = 1024  # rows converted to tuples at a time by fetchone/fetchmany


class Cursor:
    """One statement's result at a time (`execute` again replaces it)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1
        self._table: pa.Table | None = None
        self._at = 0  # the next row to hand out
        self._batch: list[tuple[Any, ...]] = []
        self._batch_at = 0  # the row index of _batch[0]
        self._closed = False

    @property
    def description(self) -> list[Description] | None:
        return description(self._table.schema) if self._table is not None else None

    @property
    def rowcount(self) -> int:
        """The number of rows of the last result (-1 before any)."""
        return self._table.num_rows if self._table is not None else -1

    @property
    def rownumber(self) -> int | None:
        return self._at if self._table is not None else None

    def execute(self, operation: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None) -> Cursor:
        """Run one statement, its `?` marks bound to `parameters` as literals."""
        self._check()
        if not isinstance(operation, str):
            raise ProgrammingError(f"the statement must be a string, not {type(operation).__name__}")
        self._table, self._at, self._batch, self._batch_at = None, 0, [], 0
        self._table = self.connection.backend.execute(operation, parameters)
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> Cursor:
        """`execute` once per parameter sequence; the last result remains."""
        for parameters in seq_of_parameters:
            self.execute(operation, parameters)
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        table = self._result()
        if self._at >= table.num_rows:
            return None
        if not self._batch_at <= self._at < self._batch_at + len(self._batch):
            self._batch, self._batch_at = rows(table.slice(self._at, max(BATCH, self.arraysize))), self._at
        row = self._batch[self._at - self._batch_at]
        self._at += 1
        return row

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        size = self.arraysize if size is None else size
        if size < 0:
            raise ProgrammingError(f"fetchmany needs a size of 0 or more, not {size}")
        return self._some(size) if size <= BATCH else self._take(size)

    def _some(self, size: int) -> list[tuple[Any, ...]]:
        found: list[tuple[Any, ...]] = []
        while len(found) < size and (row := self.fetchone()) is not None:
            found.append(row)
        return found

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._take(None)

    def _take(self, size: int | None) -> list[tuple[Any, ...]]:
        """The next `size` rows (None: all), converted in one go."""
        table = self._result()
        count = table.num_rows - self._at if size is None else min(size, table.num_rows - self._at)
        found = rows(table.slice(self._at, count)) if count > 0 else []
        self._at += len(found)
        return found

    def fetch_arrow_table(self) -> pa.Table:
        """The rows not fetched yet, as an Arrow table (precube's own answer: no conversion)."""
        table = self._result()
        rest = table.slice(self._at)
        self._at = table.num_rows
        return rest

    def fetch_df(self) -> pd.DataFrame:
        """The rows not fetched yet, as a pandas DataFrame."""
        return self.fetch_arrow_table().to_pandas()

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchone, None)

    def setinputsizes(self, sizes: Any) -> None:
        """PEP 249's: nothing to prepare."""

    def setoutputsize(self, size: Any, column: int | None = None) -> None:
        """PEP 249's: nothing to prepare."""

    def close(self) -> None:
        self._closed, self._table, self._batch = True, None, []

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the cursor is closed")
        self.connection.check_open()

    def _result(self) -> pa.Table:
        self._check()
        if self._table is None:
            raise InterfaceError("no result to fetch: execute a statement first")
        return self._table
