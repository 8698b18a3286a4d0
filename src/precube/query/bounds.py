"""What one statement may take: the memory of the DuckDB databases that run it, and the rows and bytes of its
answer.

*Memory.* DuckDB bounds each database instance (`memory_limit`, shared by every connection and cursor of it).
Unless `[query] memory_limit` names a size, each database the query path opens gets
`max(MIN_MEMORY_BYTES, MEMORY_SHARE x RAM / processes)`: RAM is the machine's (or the cgroup's, when smaller)
and `processes` the `precube serve` processes sharing it (`[server] workers`); DuckDB's own default, 80 % of
RAM per database, lets one statement take the machine.

*Answers.* An answer holds at most `[query] max_result_rows` rows and `max_result_bytes` bytes (Arrow's size of
its columns): the rows are fetched from the engine in batches and the statement fails as soon as a batch takes
it past either bound, so an answer too large is never held whole (`collect`).

*Windows.* A client may ask for only some rows of the answer (REST's `offset`/`limit`, Kylin's rule:
`QueryUtil.appendLimitOffset` puts them in the SQL): the engine then fetches the window and one row past it, which
tells whether more rows existed (the answer is `partial`, Kylin's flag), so the bounds apply to the rows asked
for, not to the whole answer (`Window`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from precube.query.errors import ResultTooLargeError
from precube.settings import QuerySettings

MEMORY_SHARE = 0.5  # of the machine's memory, for the engines of all the server's processes together
MIN_MEMORY_BYTES = 256 * 2**20
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def machine_memory() -> int:
    """The bytes of memory this process may use: the machine's RAM, or its cgroup's limit when smaller."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def default_memory_limit(processes: int = 1, total: int | None = None) -> str:
    """The memory bound of one DuckDB database when `[query] memory_limit` is empty (DuckDB's syntax)."""
    machine = machine_memory() if total is None else total
    share = max(MIN_MEMORY_BYTES, int(MEMORY_SHARE * machine / max(1, processes)))
    return f"{share // 2**20}MiB"


def memory_limit(configured: str, processes: int = 1) -> str:
    """`[query] memory_limit` when it names a size, else the default for `processes` server processes."""
    return configured.strip() or default_memory_limit(processes)


@dataclass(frozen=True)
class ResultBounds:
    """The most rows and bytes an answer may hold (`[query] max_result_rows`, `max_result_bytes`)."""

    max_rows: int
    max_bytes: int

    @classmethod
    def of(cls, settings: QuerySettings) -> ResultBounds:
        return cls(settings.max_result_rows, settings.max_result_bytes)

    def check(self, rows: int, size: int) -> None:
        """Raise ResultTooLargeError when an answer of `rows` rows and `size` bytes is past a bound."""
        if rows > self.max_rows:
            raise ResultTooLargeError(
                f"the answer has more than {self.max_rows:,} rows ([query] max_result_rows): add a LIMIT or a "
                "filter, or raise the bound (env PRECUBE__QUERY__MAX_RESULT_ROWS)"
            )
        if size > self.max_bytes:
            raise ResultTooLargeError(
                f"the answer holds more than {self.max_bytes:,} bytes ([query] max_result_bytes): select fewer "
                "rows or columns, or raise the bound (env PRECUBE__QUERY__MAX_RESULT_BYTES)"
            )

    def collect(self, schema: pa.Schema, batches: Iterable[pa.RecordBatch], rows: int = 0, size: int = 0) -> pa.Table:
        """The batches as one table, failing at the first batch past a bound (the rest is never fetched); `rows`
        and `size`: what the answer already holds before them."""
        kept: list[pa.RecordBatch] = []
        try:
            for batch in batches:
                rows += batch.num_rows
                size += batch.nbytes
                self.check(rows, size)
                kept.append(batch)
        finally:
            if isinstance(batches, pa.RecordBatchReader):
                batches.close()  # a reader of DuckDB's holds its connection until it is closed
        return pa.Table.from_batches(kept, schema)

    def table(self, table: pa.Table) -> pa.Table:
        """`table`, checked (an answer an engine returns whole)."""
        self.check(table.num_rows, table.nbytes)
        return table


UNBOUNDED = ResultBounds(2**63 - 1, 2**63 - 1)


@dataclass(frozen=True)
class Window:
    """The rows of an answer a client asked for: `limit` rows (0: all) after the first `offset`."""

    offset: int = 0
    limit: int = 0

    @property
    def whole(self) -> bool:
        return not self.offset and not self.limit

    def rows(self, bounds: ResultBounds) -> int:
        """The most rows an engine fetches for this window: one past `limit` (was there more?), never more than
        one past the bound (the answer is then too large)."""
        most = bounds.max_rows + 1 if bounds.max_rows < UNBOUNDED.max_rows else UNBOUNDED.max_rows
        return min(self.limit + 1, most) if self.limit else most

    def bounds(self, bounds: ResultBounds) -> ResultBounds:
        """The bounds of the fetch: the row past a `limit` within the bound is a probe, not part of the answer."""
        if self.limit and self.limit <= bounds.max_rows < UNBOUNDED.max_rows:
            return ResultBounds(bounds.max_rows + 1, bounds.max_bytes)
        return bounds

    def sql(self, sql: str, bounds: ResultBounds) -> str:
        """`sql` producing the window's rows and the probe row (the parentheses keep its own ORDER BY and LIMIT;
        a newline: it may end in a comment)."""
        most = self.rows(bounds)
        limit = f" LIMIT {most}" if most < UNBOUNDED.max_rows else ""
        offset = f" OFFSET {self.offset}" if self.offset else ""
        return f"({sql}\n){limit}{offset}" if limit or offset else sql

    def cut(self, fetched: pa.Table) -> tuple[pa.Table, bool]:
        """The window's rows of `fetched` (its rows from `offset` on, the probe row included) and whether the
        answer had more rows past them."""
        if self.limit and fetched.num_rows > self.limit:
            return fetched.slice(0, self.limit), True
        return fetched, False

    def of(self, answer: pa.Table) -> tuple[pa.Table, bool]:
        """The window's rows of a whole answer, and whether it had more rows past them."""
        return self.cut(answer.slice(self.offset, self.limit + 1 if self.limit else None))


WHOLE = Window()
