"""Where DuckDB spills what does not fit in its memory bound, and how much it may spill.

DuckDB's default spills to `.tmp` in the working directory, up to 90 % of the disk's free space: one hostile sort
could fill the disk the metadata store and the builds need. Each database of the query path spills instead to its
own directory `<root>/<pid>/<id>` (`[query] spill_dir`, by default `<home>/spill`), which DuckDB creates and
removes when the database closes, and at most `[query] max_spill_mb` (0: a quarter of the disk's free space when
the database opens); a statement past it fails with the memory error (503, SQLSTATE 53200). The directories of
processes that died without closing their databases are removed when the next engine starts (`clean`)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

FREE_SHARE = 0.25  # of the disk's free space, when `[query] max_spill_mb` is 0
MIB = 2**20


@dataclass(frozen=True)
class Spill:
    """The spill directories' root and the bound of each database's spill (`max_mb`; 0: derived)."""

    root: Path
    max_mb: int = 0

    @classmethod
    def of(cls, spill_dir: str, max_mb: int) -> Spill:
        """`[query] spill_dir` (empty: under the system's temporary directory, for a session opened without a home)
        and `max_spill_mb`."""
        root = Path(spill_dir) if spill_dir else Path(tempfile.gettempdir()) / "precube-spill"
        return cls(root.expanduser().resolve(), max_mb)

    def directory(self) -> Path:
        """A directory of its own for one database (not created: DuckDB creates it and removes it on close)."""
        parent = self.root / str(os.getpid())
        parent.mkdir(parents=True, exist_ok=True)
        return parent / uuid.uuid4().hex

    def max_size(self) -> str:
        """The most one database may spill, in DuckDB's syntax."""
        if self.max_mb:
            return f"{self.max_mb}MiB"
        free = shutil.disk_usage(self.root).free if self.root.exists() else 0
        return f"{max(1, int(free * FREE_SHARE) // MIB)}MiB"

    def clean(self) -> None:
        """Remove the spill directories of processes no longer running (a crash leaves its spill behind)."""
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            if entry.is_dir() and entry.name.isdigit() and not _alive(int(entry.name)):
                shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
