"""A statement's time limit on an in-process engine: one thread per connection that interrupts the statement
running on it once it is past its deadline.

One long-lived thread rather than a timer per statement: starting a thread costs 0.1-0.25 ms, a tenth of a
warm query, while arming and disarming the watchdog takes a lock and, at most, wakes the idle thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

INTERRUPT_EVERY_S = 0.05  # a statement past its deadline is interrupted again this often until it ends


class Watchdog:
    """Calls `interrupt` while an armed statement is past its deadline (again every INTERRUPT_EVERY_S: an
    engine may forget an interrupt that falls between two statements of one call). One statement at a
    time: the engine arms it while the statement holds the connection."""

    def __init__(self, interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._wake_at: float | None = None  # when the thread's current wait ends (None: it waits for an arm)
        self._fired = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float) -> None:
        """Start watching a statement that may run `seconds`."""
        with self._cond:
            self._deadline = time.monotonic() + seconds
            self._fired = False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="precube-query-watchdog", daemon=True)
                self._thread.start()
            elif self._wake_at is None or self._wake_at > self._deadline:
                self._cond.notify()

    def fire(self) -> None:
        """Interrupt the armed statement now, and again until it is disarmed (a cancel: `time_limited` tells it
        from a time-out by the statement's `Cancellation`). Nothing armed: nothing to interrupt."""
        with self._cond:
            if self._deadline is None:
                return
            self._deadline = time.monotonic()
            self._cond.notify()

    def disarm(self) -> bool:
        """Stop watching; whether the statement was interrupted for running past its deadline."""
        with self._cond:
            self._deadline = None
            return self._fired

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                if self._deadline is None:
                    self._wake_at = None
                    self._cond.wait()
                elif now < self._deadline:
                    self._wake_at = self._deadline
                    self._cond.wait(self._deadline - now)
                else:
                    self._fired = True
                    self._interrupt()
                    self._wake_at = now + INTERRUPT_EVERY_S
                    self._cond.wait(INTERRUPT_EVERY_S)
