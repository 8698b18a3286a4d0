"""Which tables a path given to `precube table load` holds, and what each is called.

A file is one table named after the file without its extensions (`flights.csv` → FLIGHTS). A directory is
one table, named after the directory, when it is laid out as one: Hive-style partitions (`COLUMN=value/`) or the
part files Spark and pyarrow write (`part-00000.parquet`). Any other directory holds tables: each data file in it
is one (named after the file; other files, a README, are skipped) and each subdirectory one (named after
the subdirectory). `--name` loads the path
as one table whatever its layout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from precube.errors import InvalidInputError
from precube.sources.source import CSV_SUFFIXES, PARQUET_SUFFIXES
from precube.sources.tables import IDENTIFIER, table_name

_PART = re.compile(r"^part[-_]", re.IGNORECASE)


@dataclass(frozen=True)
class TablePath:
    """One table to load: its files and its name."""

    path: Path
    name: str


def _hidden(path: Path) -> bool:
    return path.name.startswith((".", "_"))  # as a dataset sees them: not data


def is_one_table(directory: Path) -> bool:
    """Whether a directory is laid out as one table: Hive partitions or part files at its top level."""
    entries = [p for p in directory.iterdir() if not _hidden(p)]
    return any((p.is_dir() and "=" in p.name) or (p.is_file() and _PART.match(p.name)) for p in entries)


def check_table_name(name: str) -> str:
    """`name` upper-cased, or a refusal naming the rule and the `--name` that would load the path."""
    upper = name.upper()
    if IDENTIFIER.match(upper):
        return upper
    suggestion = re.sub(r"[^A-Z0-9_]", "_", upper)
    suggestion = suggestion if IDENTIFIER.match(suggestion) else f"T_{suggestion}"
    raise InvalidInputError(
        f"{name!r} is not a table name (letters, digits and underscores, not starting with a digit); "
        f"load it alone with --name {suggestion}"
    )


def tables_at(path: Path) -> list[TablePath]:
    """The tables at `path` given without `--name` (see the module's docstring); a missing path is one table,
    so loading it reports the missing path."""
    if not path.is_dir() or is_one_table(path):
        return [TablePath(path, table_name(path))]
    data = PARQUET_SUFFIXES | CSV_SUFFIXES  # other files beside the tables (a README) are not tables
    entries = sorted(p for p in path.iterdir() if not _hidden(p) and (p.is_dir() or p.suffix.lower() in data))
    return [TablePath(p, table_name(p)) for p in entries] or [TablePath(path, path.name)]
