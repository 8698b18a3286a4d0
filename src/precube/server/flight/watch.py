"""The statements Flight calls run in their own gRPC threads (`QueryService.run_here`), each cancelled when its
call is: the client cancelled it (ADBC's `adbc_cancel`) or went away, or the server is stopping. pyarrow's server
tells a handler nothing of a cancelled call but `ServerCallContext.is_cancelled()`, so one thread asks that of
every running call each `POLL_S`, and sleeps while none runs."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from precube.service.queries import Handle

POLL_S = 0.05  # how often a running statement's call is checked for a client gone


class CallWatch:
    """Running statements and their calls; `cancel` stops a statement (the query service's)."""

    def __init__(self, cancel: Callable[[Handle], None], poll_s: float = POLL_S) -> None:
        self._cancel = cancel
        self._poll_s = poll_s
        self._calls: dict[int, tuple[Any, Handle]] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, context: Any) -> Iterator[Callable[[Handle], None]]:
        """For the statement of the call `context`: the callback that starts watching it once it has a handle
        (`run_here`'s `started`); the watch ends with the block, before the call does."""
        key = next(self._ids)

        def started(handle: Handle) -> None:
            with self._lock:
                self._calls[key] = (context, handle)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._loop, name="precube-flight-calls", daemon=True)
                    self._thread.start()
            self._wake.set()
            if self._stopped.is_set():
                self._cancel(handle)

        try:
            yield started
        finally:
            with self._lock:  # waits for a check of this call in progress: its context is not used after
                self._calls.pop(key, None)

    def stop(self) -> None:
        """Cancel every running statement, and those that start from now on."""
        self._stopped.set()
        self._wake.set()
        with self._lock:
            handles = [handle for _, handle in self._calls.values()]
        for handle in handles:
            self._cancel(handle)

    def _loop(self) -> None:
        while not self._stopped.is_set():
            with self._lock:  # a call's context is valid while it is listed, and it stays listed until unlocked
                gone = [handle for context, handle in self._calls.values() if context.is_cancelled()]
                idle = not self._calls
                if idle:
                    self._wake.clear()
            for handle in gone:
                self._cancel(handle)
            if idle:
                self._wake.wait()
            else:
                self._stopped.wait(self._poll_s)
