"""The `precube` command: sub-commands, global options, and one-line errors."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from precube import __version__
from precube.cli import build, cache, demo, gc, index, jobs, metadata, model, project, query, ssb, table
from precube.cli.context import CliContext, err_console
from precube.errors import PrecubeError

app = typer.Typer(
    name="precube",
    help="precube: precomputed OLAP cubes on Spark, SQL answered in milliseconds.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(project.app, name="project")
app.add_typer(table.app, name="table")
app.add_typer(model.app, name="model")
app.add_typer(index.app, name="index")
app.add_typer(metadata.app, name="metadata")
app.add_typer(jobs.app, name="jobs")
app.add_typer(build.segment_app, name="segment")
app.add_typer(ssb.app, name="ssb")
app.add_typer(cache.app, name="cache")
app.command("demo")(demo.demo)
app.command("gc")(gc.gc)
app.command("query")(query.query)
app.command("history")(query.history)
for _name, _command in build.COMMANDS.items():
    app.command(_name)(_command)


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
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
) -> None:
    ctx.obj = CliContext(config=config, home=home, debug=debug)
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


def main() -> None:
    sys.exit(run(sys.argv[1:]))
