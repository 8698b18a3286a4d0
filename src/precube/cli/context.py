"""What every command shares: settings, the metadata store and the Spark session, opened on first use."""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

if TYPE_CHECKING:  # imported when used: `precube --help` must not pay for them (`app`)
    from pyspark.sql import SparkSession

    from precube.jobs.spark_supervisor import SparkSupervisor
    from precube.metadata import MetadataStore
    from precube.remote import Remote
    from precube.settings import Settings


def _console(stderr: bool = False) -> Console:
    """Long lines stay whole and tables get room when output goes to a file or pipe (Rich would use 80)."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, soft_wrap=True, width=None if stream.isatty() else 160)


console = _console()
err_console = _console(stderr=True)


@dataclass
class CliContext:
    config: Path | None = None
    home: Path | None = None
    debug: bool = False
    server: str | None = None  # --server: commands that can go through a server's REST API do
    _store: MetadataStore | None = field(default=None, repr=False)
    _remote: Remote | None = field(default=None, repr=False)
    _supervisor: SparkSupervisor | None = field(default=None, repr=False)

    @cached_property
    def settings(self) -> Settings:
        from precube.settings import load_settings

        overrides = {"home": self.home} if self.home is not None else {}
        return load_settings(self.config, **overrides)

    @property
    def writer(self) -> str:
        return f"cli:{getpass.getuser()}"

    def store(self) -> MetadataStore:
        if self._store is None:
            from precube.metadata import open_store

            self._store = open_store(self.settings.metadata_url, self.settings.metadata.table)
        return self._store

    def spark(self) -> SparkSession:
        """The supervisor's current session (`spark_supervisor`): one JVM per command, whatever it runs on Spark."""
        return self.spark_supervisor().session

    def spark_supervisor(self) -> SparkSupervisor:
        """The supervised Spark session jobs run on in this process (`jobs run`, `--wait`), started on first use:
        one that dies is replaced, and the jobs it took down resume on the new one."""
        if self._supervisor is None:
            from precube.jobs.spark_supervisor import SparkSupervisor

            supervisor = SparkSupervisor(self.settings, console_log=self.settings.home / "logs" / "spark.log")
            with err_console.status("starting Spark…"):  # its console output goes to the log, not among the bars
                supervisor.start()
            if supervisor.start_failure is not None:  # a command fails at once with the fix (no Java, a bad conf)
                supervisor.stop(stop_session=False)
                raise supervisor.start_failure
            self._supervisor = supervisor
        return self._supervisor

    def remote(self) -> Remote | None:
        """The server to talk to (`--server`, else `[server] url`), signed in as `[server] user`; None: work
        on the metadata store directly."""
        url = self.server or self.settings.server.url
        if url is None:
            return None
        if self._remote is None:
            from precube.remote import Remote

            secret = self.settings.server.password
            self._remote = Remote(url, self.settings.server.user, secret.get_secret_value() if secret else None)
        return self._remote

    def close(self) -> None:
        if self._supervisor is not None:
            self._supervisor.stop(stop_session=False)  # the JVM ends with this process, as it always did
            self._supervisor = None
        if self._remote is not None:
            self._remote.close()
            self._remote = None
        if self._store is not None:
            self._store.close()
            self._store = None


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


PROJECT = typer.Option(..., "--project", "-p", help="Project name.")
FORMAT = typer.Option(OutputFormat.table, "--format", help="table (to read) or json (for scripts: raw values).")


Columns = dict[str, Callable[[dict[str, Any]], str]]  # a table's header → the text of a record's cell


def print_records(
    fmt: OutputFormat,
    records: list[dict[str, Any]],
    columns: Columns,
    title: str | None = None,
) -> None:
    """`records` (JSON-ready values: numbers, text, None; times in epoch ms, as Kylin's REST API gives them)
    as a JSON array, or as a table with one column per header of `columns`, each cell the text its function
    makes of a record."""
    if fmt is OutputFormat.json:
        typer.echo(json.dumps(records, ensure_ascii=False, default=str))
        return
    from rich.table import Table as RichTable

    view = RichTable(*columns, title=title)
    for record in records:
        view.add_row(*(cell(record) for cell in columns.values()))
    console.print(view)


MODEL = typer.Option(..., "--model", "-m", help="Model alias.")


YES = typer.Option(False, "--yes", "-y", help="Do not ask before dropping anything.")
DRY_RUN = typer.Option(False, "--dry-run", help="Show what would be dropped; change nothing.")


def confirm_drop(what: str, yes: bool, dry_run: bool, verb: str = "drop") -> bool:
    """Tell what a command drops or deletes (`what`), then whether to go on: not on --dry-run, without
    asking on --yes, else as the user answers (no: aborted)."""
    console.print(f"{'would ' + verb if dry_run else verb + 's'} {what}", markup=False)
    if dry_run:
        return False
    if not yes:
        typer.confirm("go on?", abort=True)
    return True


def state(ctx: typer.Context) -> CliContext:
    obj = ctx.find_root().obj
    assert isinstance(obj, CliContext), "the root callback sets the context"
    return obj


def project_state(ctx: typer.Context, project: str) -> CliContext:
    """The CLI state, once `project` is known to exist (else a clear error naming it)."""
    cli = state(ctx)
    cli.store().require_project(project)
    return cli


def when(ms: int | None) -> str:
    """A time in epoch ms as UTC text (midnight as the date alone; no time: empty; the open end: ∞)."""
    from precube.metadata.dataflow import time_text

    return "" if ms is None else time_text(ms)
