"""The `precube` command: sub-commands, global options, and one-line errors.

Sub-commands are imported when one is run (`LazyGroup`), not when the command starts: `precube --help` and
`--version` import no engine (pandas, pyarrow, DuckDB, SQLAlchemy), which cost over a second of CPU.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import typer
import typer.core

from precube import __version__
from precube.cli.context import CliContext, err_console
from precube.errors import PrecubeError

# name → (module under precube.cli, attribute: a Typer app or a command function, the line `--help` shows);
# `tests/cli/test_cli.py` checks each line is the command's own
COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": (
        "demo",
        "demo",
        "Run the end-to-end demo: generate SSB data, load and sample its tables, create the SSB model with the "
        "layouts its 13 queries need, build yearly segments, then time the queries on the layouts beside DuckDB "
        "on the raw files.",
    ),
    "gc": (
        "gc",
        "gc",
        "Remove a project's built data that no model, segment or layout refers to any more (local warehouses).",
    ),
    "query": (
        "query",
        "query",
        "Answer SQL over a project's tables from precomputed layouts (or, failing that, the source tables).",
    ),
    "history": (
        "query",
        "history",
        "A project's latest queries: when, who, how long, how they were answered, and errors.",
    ),
    "build": ("build", "build", "Build a segment from source (incremental: it starts where the last segment ends)."),
    "refresh": (
        "build",
        "refresh",
        "Rebuild segments from source, each swapped in atomically when its job ends (one job per segment).",
    ),
    "merge": ("build", "merge", "Merge contiguous segments into one (no source read)."),
    "segments": ("build", "segments", "List a model's segments."),
    "project": ("project", "app", "Create, list and delete projects; view or change their segment settings."),
    "table": ("table", "app", "Register source tables, reload their schema, sample them."),
    "model": ("model", "app", "Define models: fact and lookup tables, dimensions, measures, partition."),
    "index": ("index", "app", "What to precompute: aggregation groups and table indexes."),
    "metadata": ("metadata", "app", "Back up and restore all metadata as a directory tree."),
    "jobs": ("jobs", "app", "Build, refresh and merge jobs: list, inspect, pause, resume, discard, restart."),
    "segment": ("build", "segment_app", "A model's segments: list, delete, rolling refresh."),
    "ssb": ("ssb", "app", "Star Schema Benchmark data."),
    "cache": ("cache", "app", "The query result cache: counters, entries, clearing."),
    "serve": (
        "serve",
        "serve",
        "Serve Kylin's REST API (/kylin/api) with users and project permissions; run queued jobs.",
    ),
    "user": ("user", "app", "The server's users: add, list, change passwords, delete, unlock."),
    "acl": ("user", "acl_app", "Project permissions of users and groups: grant, revoke, list."),
}


def load_command(name: str) -> Any:
    """The sub-command `name` as Click runs it (its module imported now)."""
    module, attribute, _ = COMMANDS[name]
    target = getattr(importlib.import_module(f"precube.cli.{module}"), attribute)
    holder = typer.Typer(pretty_exceptions_enable=False, add_completion=False)  # as the root would hold it
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
        holder.callback()(lambda: None)  # a group of one, not the command alone: it is found by name below
    group = typer.main.get_command(holder)
    assert isinstance(group, typer.core.TyperGroup)
    return group.commands[name]


class _Deferred(typer.core.TyperCommand):
    """A sub-command known by its name and help line until it is run: then its module is imported."""

    def __init__(self, name: str, help_line: str) -> None:
        super().__init__(name, help=help_line, short_help=help_line)
        self._loaded: Any = None

    def real(self) -> Any:
        """The sub-command itself (Typer's Click command or group)."""
        if self._loaded is None:
            assert self.name is not None
            self._loaded = load_command(self.name)
        return self._loaded

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        return self.real().make_context(info_name, args, parent=parent, **extra)


class LazyGroup(typer.core.TyperGroup):
    """The root group: its sub-commands listed from `COMMANDS`, each imported only when it runs."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in COMMANDS:
            found = _Deferred(cmd_name, COMMANDS[cmd_name][2])
        return found


app = typer.Typer(
    name="precube",
    help="precube: precomputed OLAP cubes on Spark, SQL answered in milliseconds.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=LazyGroup,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"precube {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    config: Path | None = typer.Option(
        None, "--config", envvar="PRECUBE_CONFIG", help="TOML settings file.", show_default=False
    ),
    home: Path | None = typer.Option(
        None, "--home", help="Home directory (metadata, warehouse); default ~/.precube.", show_default=False
    ),
    server: str | None = typer.Option(
        None,
        "--server",
        envvar="PRECUBE_SERVER",
        help="A precube server's URL (http://HOST:7070): query, build, jobs, segments and cache go through its "
        "REST API as [server] user (password: [server] password or PRECUBE__SERVER__PASSWORD).",
        show_default=False,
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    ctx.obj = CliContext(config=config, home=home, debug=debug, server=server)
    ctx.call_on_close(ctx.obj.close)


def run(argv: list[str]) -> int:
    """Run the CLI on `argv`; returns the exit status. Errors print one line unless --debug."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=argv, prog_name="precube", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except PrecubeError as err:
        if "--debug" in argv:
            raise
        err_console.print(f"[bold red]error:[/] {err.message}", highlight=False, soft_wrap=True)
        return 1
    except typer.Exit as exit_:
        return exit_.exit_code
    except typer.TyperException as err:  # usage errors: Typer's (vendored) click exceptions
        err.show()  # type: ignore[attr-defined]
        return int(getattr(err, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("aborted")
        return 130
    except Exception as err:
        if "--debug" in argv:
            raise
        err_console.print(f"[bold red]error:[/] {one_line(err)} (--debug shows where)", highlight=False, soft_wrap=True)
        return 1


def one_line(err: BaseException) -> str:
    """An unexpected error as one line: an OS error by what and which file (`Permission denied: /x`), any
    other by its type and first line."""
    if isinstance(err, OSError) and err.strerror:
        files = [str(f) for f in (err.filename, err.filename2) if f is not None]
        return f"{err.strerror}: {' -> '.join(files)}" if files else err.strerror
    first = next(iter(str(err).splitlines()), "")
    return f"{type(err).__name__}: {first}" if first else type(err).__name__


def main() -> None:
    sys.exit(run(sys.argv[1:]))
