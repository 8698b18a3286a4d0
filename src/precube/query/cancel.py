"""A statement's cancel switch and deadline: whoever runs the statement (the service, for a client's cancel
request) holds it, and the engine running the statement binds its interrupt to it for as long as the statement
runs.

A cancel before the statement reaches an engine stops it at the next check (`check`, or when an engine
binds); a cancel while it runs interrupts the engine, which then frees its connection at once.

The deadline is `[query] timeout_s` from the statement's arrival (the service's `run`, or an embedded caller's
`Session.sql`): everything that waits or runs for the statement (an admission slot, an identical statement's
run, the engine, encoding and sending the answer) reads what is left of it (`remaining`), so the time limit
holds wherever the time goes. Waits note what they took (`spent`), which the time-out's message names."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from precube.query.errors import QueryCancelledError, QueryTimeoutError

CANCELLED = "canceling statement due to user request"  # PostgreSQL's words, which clients know

# binding an interrupt is a few attribute writes: one lock for every statement, none made per statement
_BINDING = threading.Lock()


class Cancellation:
    """Set once by `cancel`; an engine's `running_on(interrupt)` makes a cancel interrupt it. `timeout_s`
    (None: no time limit) sets the deadline `timeout_s` after `arrived` (a `time.monotonic()`; now by default)."""

    __slots__ = ("_cancelled", "_interrupt", "_spent", "arrived", "deadline", "timeout_s")

    def __init__(self, timeout_s: float | None = None, arrived: float | None = None) -> None:
        self._cancelled = False
        self._interrupt: Callable[[], None] | None = None
        self._spent: dict[str, float] | None = None
        self.arrived = time.monotonic() if arrived is None else arrived
        self.timeout_s = timeout_s
        self.deadline = None if timeout_s is None else self.arrived + timeout_s  # monotonic

    @classmethod
    def of(cls, cancel: Cancellation | None, timeout_s: float | None) -> Cancellation:
        """`cancel` with a deadline: an embedded caller's statement (no cancellation, or one without a
        deadline) gets `timeout_s` from now, so it is bounded as a server's statement is."""
        if cancel is None:
            return cls(timeout_s)
        if cancel.deadline is None and timeout_s is not None:
            cancel.arrived = time.monotonic()
            cancel.timeout_s = timeout_s
            cancel.deadline = cancel.arrived + timeout_s
        return cancel

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop the statement: now, if an engine runs it; else at its next check."""
        with _BINDING:
            self._cancelled = True
            interrupt = self._interrupt
        if interrupt is not None:
            interrupt()

    def remaining(self) -> float | None:
        """Seconds left until the deadline (0 or less: past it; None: no deadline)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def check(self) -> None:
        """Raise `QueryCancelledError` if the statement was cancelled, `QueryTimeoutError` if it is past its
        deadline."""
        if self._cancelled:
            raise QueryCancelledError(CANCELLED)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise self.timed_out()

    def spent(self, what: str, seconds: float) -> None:
        """Note that the statement spent `seconds` on `what` (a wait: "waiting for a slot"), for `timed_out`."""
        if self._spent is None:
            self._spent = {}
        self._spent[what] = self._spent.get(what, 0.0) + seconds

    def timed_out(self, doing: str = "running") -> QueryTimeoutError:
        """The error of a statement past its deadline, naming where its time went (the rest is `doing`)."""
        total = time.monotonic() - self.arrived
        parts = [f"{s:.1f} s {what}" for what, s in (self._spent or {}).items() if s >= 0.05]
        if parts:
            parts.append(f"{max(0.0, total - sum((self._spent or {}).values())):.1f} s {doing}")
        where = f": {', '.join(parts)}" if parts else ""
        return QueryTimeoutError(
            f"the query ran longer than the time limit of {self.timeout_s or 0:g} s ([query] timeout_s){where}"
        )

    @contextmanager
    def running_on(self, interrupt: Callable[[], None]) -> Iterator[None]:
        """While the block runs, a cancel calls `interrupt` (the block is the engine running the statement)."""
        with _BINDING:
            if self._cancelled:
                raise QueryCancelledError(CANCELLED)
            self._interrupt = interrupt
        try:
            yield
        finally:
            with _BINDING:
                self._interrupt = None


def allowed(cancel: Cancellation | None, timeout_s: float | None) -> float | None:
    """The seconds an engine may run the statement: what is left of its deadline, else the engine's own
    `timeout_s` (None: no limit). A statement past its deadline (or cancelled) fails here, before it runs."""
    if cancel is None or cancel.deadline is None:
        return timeout_s
    cancel.check()
    return cancel.remaining()


def timeout_error(cancel: Cancellation | None, timeout_s: float | None) -> QueryTimeoutError:
    """The error of a statement an engine stopped at its time limit (`allowed`'s)."""
    if cancel is not None and cancel.deadline is not None:
        return cancel.timed_out()
    return QueryTimeoutError(f"the query ran longer than the time limit of {timeout_s or 0:g} s ([query] timeout_s)")
