"""Prepared statements of one DuckDB connection: a statement text run again skips DuckDB's parse and plan.

A warm answer over a small layout is mostly DuckDB's fixed cost per statement. `PREPARE name AS <text>` once,
then `EXECUTE name`, saves the parse, bind and optimisation of the text (measured on SSB Q1.1 at SF 0.05 with
DuckDB 2.0: ~0.35 ms of ~2 ms). The literals stay in the text: DuckDB 2.0 binds and plans a prepared statement
again whenever it is executed with parameter values (to push the values into its scans' filters), which saves
only the parse (~0.1 ms), and a parameter takes the type its context infers where the literal kept its own
(an INTEGER column compared with `2.5` would compare with 3). A text is prepared the second time it runs on
the connection, so a statement seen once pays nothing; the plan cache makes a repeated statement's text
identical (same plan, same literals, same layout relations).

Prepared statements name relations: when the database drops or replaces one (an eviction, a layout or source
registered again) its `generation` grows and each connection deallocates its statements before its next one
(`Statements.run` compares generations). A database reopened has new connections, hence no statements.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

import duckdb

PREPARED_PER_CONNECTION = 256  # statements a connection keeps prepared; least recently run deallocated beyond
_names = itertools.count()


class Statements:
    """The prepared statements of one connection, used only by the thread holding it (`duckdb_connections`)."""

    def __init__(self, capacity: int = PREPARED_PER_CONNECTION) -> None:
        self.capacity = capacity
        self._prepared: OrderedDict[str, str] = OrderedDict()  # text → statement name
        self._seen: OrderedDict[str, None] = OrderedDict()  # texts run once, not prepared
        self._generation = 0  # the database's generation the statements were prepared under

    def run(self, con: duckdb.DuckDBPyConnection, sql: str, generation: int) -> duckdb.DuckDBPyConnection:
        """Execute `sql` on `con`: its prepared statement when there is one, prepared now when `sql` ran before
        on `con`; `generation` is the database's (`forget_all` when it changed)."""
        if generation != self._generation:
            self.forget_all(con)
            self._generation = generation
        name = self._prepared.get(sql)
        if name is not None:
            self._prepared.move_to_end(sql)
            return con.execute(f"EXECUTE {name}")
        if sql not in self._seen:
            self._seen[sql] = None
            if len(self._seen) > self.capacity:
                self._seen.popitem(last=False)
            return con.execute(sql)
        del self._seen[sql]
        name = f"precube_s{next(_names)}"
        try:
            con.execute(f"PREPARE {name} AS {sql}")
        except duckdb.Error:  # one PREPARE cannot take (several statements): as text, which fails as it would
            return con.execute(sql)
        self._prepared[sql] = name
        if len(self._prepared) > self.capacity:
            _, oldest = self._prepared.popitem(last=False)
            con.execute(f"DEALLOCATE {oldest}")
        return con.execute(f"EXECUTE {name}")

    def forget_all(self, con: duckdb.DuckDBPyConnection) -> None:
        """Deallocate every prepared statement (a relation they may name was dropped or replaced)."""
        for name in self._prepared.values():
            con.execute(f"DEALLOCATE {name}")
        self._prepared.clear()
        self._seen.clear()

    def __len__(self) -> int:
        return len(self._prepared)
