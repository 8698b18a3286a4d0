"""Python's cyclic garbage collector paused while a long statement is planned: sqlglot makes tens of
thousands of nodes for a 20,000-literal IN list, and each generation-0 threshold crossed scans all of them
again (~40 % of such a statement's planning). Paused only for statements past `LONG_STATEMENT_CHARS`, only
for the planning, and re-enabled when the last of the planning threads (a server plans in several) is done."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

LONG_STATEMENT_CHARS = 20_000

_lock = threading.Lock()
_paused = 0  # plannings in progress that paused the collector
_was_enabled = False


@contextmanager
def paused_for(sql: str) -> Iterator[None]:
    """The collector paused while the block runs, when `sql` is long."""
    global _paused, _was_enabled
    if len(sql) < LONG_STATEMENT_CHARS:
        yield
        return
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
