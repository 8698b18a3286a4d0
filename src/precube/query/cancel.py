"""A statement's cancel switch: whoever runs the statement (the service, for a client's cancel request) holds
it, and the engine running the statement binds its interrupt to it for as long as the statement runs.

A cancel before the statement reaches an engine stops it at the next check (`check`, or when an engine
binds); a cancel while it runs interrupts the engine, which then frees its connection at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from precube.query.errors import QueryCancelledError

CANCELLED = "canceling statement due to user request"  # PostgreSQL's words, which clients know


class Cancellation:
    """Set once by `cancel`; an engine's `running_on(interrupt)` makes a cancel interrupt it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._interrupt: Callable[[], None] | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop the statement: now, if an engine runs it; else at its next check."""
        with self._lock:
            self._cancelled = True
            interrupt = self._interrupt
        if interrupt is not None:
            interrupt()

    def check(self) -> None:
        """Raise `QueryCancelledError` if the statement was cancelled."""
        if self._cancelled:
            raise QueryCancelledError(CANCELLED)

    @contextmanager
    def running_on(self, interrupt: Callable[[], None]) -> Iterator[None]:
        """While the block runs, a cancel calls `interrupt` (the block is the engine running the statement)."""
        with self._lock:
            self.check()
            self._interrupt = interrupt
        try:
            yield
        finally:
            with self._lock:
                self._interrupt = None
