"""Who runs a statement: the signed-in user, their groups and the project; later their data permissions."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    """A caller of the query service on one project. `trusted`: an embedded caller (the in-process DB-API,
    the CLI, `precube.connect`) that runs as the machine's user, with no directory to check."""

    user: str
    project: str
    groups: tuple[str, ...] = ()
    trusted: bool = False

    @property
    def access(self) -> str:
        """The digest of what about the principal can change an answer. Nothing can yet (every user with QUERY
        on a project sees all of it); table, column and row permissions will be hashed here, and the plan and
        result caches keep answers apart by it."""
        return ""
