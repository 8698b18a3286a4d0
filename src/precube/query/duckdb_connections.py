"""The DuckDB engine's connections to its in-memory database: a small pool of cursors, so that one statement
runs while another does (a layout answer beside a slow pushdown) over the same layouts held in memory.

A cursor (`con.cursor()`) is another connection to the same database: it sees the same tables and views, and
the database's settings, which are global in DuckDB — the sealing (`duckdb_engine.sealed`: the allowed paths,
no extension, the memory limit) and `threads`. Each cursor has its own watchdog, so a time-out or a cancel
interrupts that cursor's statement alone. A cursor is made when every one is busy, up to `size`, and kept for
the next statements: taking one costs a lock, never a thread."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

import duckdb

from precube.query.prepared import Statements
from precube.query.watchdog import Watchdog


@dataclass(eq=False)
class Cursor:
    """One connection of the pool, the watchdog that interrupts the statement it runs and its prepared
    statements."""

    con: duckdb.DuckDBPyConnection
    watchdog: Watchdog
    statements: Statements = field(default_factory=Statements)


class Connections:
    """Cursors of the database `con` is connected to, at most `size` at once."""

    def __init__(self, con: duckdb.DuckDBPyConnection, size: int) -> None:
        self.con = con  # the database's first connection, which the cursors are made from
        self._size = max(1, size)
        self._cond = threading.Condition()
        self._idle: list[Cursor] = []
        self._made: list[Cursor] = []
        self._closing = False  # closed once the last cursor is back
        self.closed = False

    def take(self) -> Cursor | None:
        """A cursor for one statement (waiting while `size` are busy), until `give_back`; None once the
        database is closed (the engine opened another meanwhile)."""
        with self._cond:
            while not self._idle and len(self._made) >= self._size and not self.closed:
                self._cond.wait()
            if self.closed:
                return None
            if self._idle:
                return self._idle.pop()
            con = self.con.cursor()
            made = Cursor(con, Watchdog(lambda: _interrupt(con)))
            self._made.append(made)
            return made

    def give_back(self, cursor: Cursor) -> None:
        with self._cond:
            self._idle.append(cursor)
            if self._closing and len(self._idle) == len(self._made):
                self._close()
            else:
                self._cond.notify()

    def interrupt(self) -> None:
        """Interrupt every statement running on the database now."""
        with self._cond:
            made = list(self._made)
        for cursor in made:
            cursor.watchdog.fire()

    def close(self) -> None:
        """Close the database now when no statement runs on it, else when the last one ends."""
        with self._cond:
            self._closing = True
            if len(self._idle) == len(self._made):
                self._close()

    def _close(self) -> None:
        for cursor in self._made:
            cursor.watchdog.close()
            with contextlib.suppress(duckdb.Error):
                cursor.con.close()
        self.con.close()
        self._idle.clear()
        self._made.clear()
        self.closed = True
        self._cond.notify_all()


def _interrupt(con: duckdb.DuckDBPyConnection) -> None:
    """The watchdog's call on a statement past its deadline, or cancelled."""
    # a connection being closed may refuse: nothing runs on it any more
    with contextlib.suppress(duckdb.Error):
        con.interrupt()
