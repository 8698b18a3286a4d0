"""The engines a session runs statements on, behind one protocol: DuckDB in process (the default) and Spark
(`spark_engine`, imported only when a statement asks for it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa
from sqlglot import exp

from precube.metadata import Table
from precube.query.bounds import WHOLE, Window
from precube.query.cancel import Cancellation
from precube.query.lookup_snapshot import SnapshotScan
from precube.query.rewrite import LayoutScan

Scans = Sequence[LayoutScan | SnapshotScan]
ENGINES = ("duckdb", "spark")


class Engine(Protocol):
    """Renders a planned tree to its SQL and runs it over the layouts and source tables it reads."""

    name: str
    dialect: str  # sqlglot's name of the SQL it renders
    root: str  # the warehouse the layouts are read from

    def render(self, tree: exp.Query, scans: Scans = (), sources: Sequence[Table] = ()) -> str:
        """The SQL text `execute` takes for `tree` over these relations."""
        ...

    def sql_of(self, tree: exp.Query, scans: Scans = (), sources: Sequence[Table] = ()) -> str:
        """The SQL as `explain` shows it (pretty-printed)."""
        ...

    def execute(
        self,
        sql: str,
        scans: list[LayoutScan | SnapshotScan],
        sources: list[Table],
        cancel: Cancellation | None = None,
        window: Window = WHOLE,
    ) -> pa.Table:
        """Run rendered SQL; `cancel` interrupts it while it runs. Only `window`'s rows are fetched, and the one
        past them (`Window.cut` tells whether there were more)."""
        ...

    def run(self, tree: exp.Query, scans: list[LayoutScan | SnapshotScan], sources: list[Table]) -> pa.Table:
        """Render and execute."""
        ...

    def interrupt(self) -> None:
        """Stop what the engine runs now; it frees its connection at once."""
        ...
