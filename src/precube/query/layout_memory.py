"""Which layouts the DuckDB engine holds in memory (issue 40): a statement never waits for a copy. A layout (or
lookup snapshot) is first read where it lies, through a view over its Parquet files; holding it in memory, sorted
with coded strings (`DuckDBEngine._load`), is decided here from the statements' history and done by the engine's
background loader.

*Value.* Each relation keeps the statements that read it, decayed with a half-life (`HALF_LIFE_S`), and their mean
time over the view and over the held table (a statement reading several relations counts its whole time for
each). Holding saves `reads x (view time - table time)`; a time not yet seen is estimated from the other one
(`HELD_SHARE`). A relation earns holding once the time it would have saved pays its copy (`LOAD_S_PER_ROW`); one
whose rows are close to its model's largest layout's (`NEAR_FACT_SHARE`: it barely aggregates) must pay it
`NEAR_FACT_PAYBACK` times over.

*Budget.* `[query] layout_memory_mb` (0: `default_budget_bytes`) bounds the held bytes, estimated as the Parquet
bytes times `HELD_PER_PARQUET_BYTE` plus a table's fixed cost (measured on the SSB layouts at SF 0.05 with
`duckdb_memory()`: 2.2 to 9.3 times the Parquet bytes, 4 the median, the high ratios those of layouts of a few
thousand rows). The relations that earn holding are taken by value per byte until the budget is full; a held one
counts its value twice (its copy is paid) so that two close ones do not swap back and forth.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from precube.query.bounds import machine_memory

HALF_LIFE_S = 600.0  # a read counts half after ten minutes
HELD_SHARE = 0.25  # a held layout answers in about this share of its view's time (SSB at SF 0.05: 0.1-0.9)
# a copy's cost, its numpy columns included (SF 1, unloaded: Q3.4's 3.3M rows in 1.4 s, Q4.3's 4.2M in 3.5 s)
LOAD_S_PER_ROW = 1e-6
NEAR_FACT_SHARE = 0.5  # of the model's largest layout's rows
NEAR_FACT_PAYBACK = 4.0
HELD_PER_PARQUET_BYTE = 4
TABLE_BYTES = 256 * 1024  # DuckDB's smallest held table (one row group's blocks)
BUDGET_SHARE = 8  # the default budget: 1/8 of the machine's memory over the server's processes,
MAX_DEFAULT_BUDGET = 1024 * 2**20  # at most 1 GiB
MIN_BUDGET = 64 * 2**20


def default_budget_bytes(processes: int = 1, total: int | None = None) -> int:
    """The held layouts' budget of one engine when `[query] layout_memory_mb` is 0."""
    machine = machine_memory() if total is None else total
    return max(MIN_BUDGET, min(MAX_DEFAULT_BUDGET, machine // BUDGET_SHARE // max(1, processes)))


def held_bytes(parquet_bytes: int) -> int:
    """The estimated memory of a relation held in memory whose files hold `parquet_bytes`."""
    return parquet_bytes * HELD_PER_PARQUET_BYTE + TABLE_BYTES


@dataclass
class Use:
    """What the history says of one relation."""

    model: str
    rows: int
    bytes: int
    reads: float = 0.0  # decayed
    at: float = 0.0  # when `reads` was last decayed
    view_s: float = 0.0  # mean time of a statement over the view (0: none seen)
    view_n: int = 0
    held_s: float = 0.0  # over the held table
    held_n: int = 0
    credit: float = 0.0  # seconds of value granted without a read (warming at start), decayed as `reads`

    def decay(self, now: float) -> None:
        factor = 0.5 ** ((now - self.at) / HALF_LIFE_S) if self.at else 1.0
        self.reads *= factor
        self.credit *= factor
        self.at = now

    def saved_per_read(self) -> float:
        """Seconds a read saves when held (measured, or estimated from the time seen)."""
        view = self.view_s or (self.held_s / HELD_SHARE if self.held_n else 0.0)
        held = self.held_s if self.held_n else view * HELD_SHARE
        return max(0.0, view - held)

    def value(self) -> float:
        return self.reads * self.saved_per_read() + self.credit

    def load_s(self) -> float:
        return self.rows * LOAD_S_PER_ROW


class LayoutMemory:
    """The history of an engine's relations and the set worth holding within `budget` bytes (thread-safe)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._uses: dict[str, Use] = {}
        self._lock = threading.Lock()

    def know(self, name: str, model: str, rows: int, parquet_bytes: int) -> None:
        """A relation registered (as a view); its held size is estimated from its files."""
        with self._lock:
            if name not in self._uses:
                self._uses[name] = Use(model, rows, held_bytes(parquet_bytes))

    def size(self, name: str) -> int:
        with self._lock:
            use = self._uses.get(name)
            return use.bytes if use is not None else TABLE_BYTES

    def read(self, names: list[str], seconds: float, held: list[bool]) -> None:
        """A statement over these relations took `seconds` (`held`: each was read in memory)."""
        now = time.monotonic()
        with self._lock:
            for name, in_memory in zip(names, held, strict=True):
                use = self._uses.get(name)
                if use is None:
                    continue
                use.decay(now)
                use.reads += 1
                if in_memory:
                    use.held_n += 1
                    use.held_s += (seconds - use.held_s) / use.held_n
                else:
                    use.view_n += 1
                    use.view_s += (seconds - use.view_s) / use.view_n

    def offer(self, name: str) -> None:
        """Warming: the relation earns holding as if it had saved twice its copy's cost, which fades as reads do
        (a near-fact one still does not earn it)."""
        with self._lock:
            use = self._uses.get(name)
            if use is not None:
                use.decay(time.monotonic())
                use.credit = max(use.credit, 2 * use.load_s())

    def wanted(self, held: set[str]) -> list[str]:
        """The relations to hold, best first, within the budget (`held`: those held now)."""
        now = time.monotonic()
        with self._lock:
            largest: dict[str, int] = {}
            for use in self._uses.values():
                largest[use.model] = max(largest.get(use.model, 0), use.rows)
            ranked: list[tuple[float, str]] = []
            for name, use in self._uses.items():
                use.decay(now)
                value = use.value() * (2.0 if name in held else 1.0)
                near_fact = use.rows > NEAR_FACT_SHARE * largest[use.model] and use.rows > 0
                payback = NEAR_FACT_PAYBACK if near_fact else 1.0
                if use.rows > 0 and value > 0 and value >= payback * use.load_s():
                    ranked.append((value / use.bytes, name))
            chosen, room = [], self.budget
            for _, name in sorted(ranked, reverse=True):
                size = self._uses[name].bytes
                if size <= room:
                    chosen.append(name)
                    room -= size
            return chosen
