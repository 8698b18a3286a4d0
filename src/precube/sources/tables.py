"""Registering, reloading and unloading source tables in a project's metadata."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from precube.errors import InvalidInputError
from precube.metadata import AlreadyExistsError, Column, MetadataStore, Model, SourceType, Table, TableExt, Transaction
from precube.metadata.csv_options import CsvOptions
from precube.sources.source import CatalogSource, FileSource, SparkProvider, TableSource, detect_file_type, source_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


IDENTIFIER = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def check_identifier(name: str, what: str) -> str:
    """Database and table names must be plain SQL identifiers, so queries can name them unquoted."""
    if not IDENTIFIER.match(name.upper()):
        raise InvalidInputError(f"invalid {what} {name!r}: use letters, digits and underscores (--{what} NAME)")
    return name.upper()


@dataclass(frozen=True)
class SchemaChange:
    """How a table's columns changed between its registered schema and the source's current one."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    retyped: list[tuple[str, str, str]] = field(default_factory=list)  # (column, old type, new type)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.retyped)

    def describe(self) -> str:
        if not self.changed:
            return "no schema change"
        parts = []
        if self.added:
            parts.append("added " + ", ".join(self.added))
        if self.removed:
            parts.append("removed " + ", ".join(self.removed))
        if self.retyped:
            parts.append("retyped " + ", ".join(f"{c} {old} -> {new}" for c, old, new in self.retyped))
        return "; ".join(parts)


def diff_columns(old: list[Column], new: list[tuple[str, str]]) -> SchemaChange:
    before = {c.name: c.datatype for c in old}
    after = dict(new)
    return SchemaChange(
        added=[n for n, _ in new if n not in before],
        removed=[c.name for c in old if c.name not in after],
        retyped=[(n, before[n], t) for n, t in new if n in before and before[n] != t],
    )


def _columns(schema: list[tuple[str, str]], previous: list[Column] | None = None) -> list[Column]:
    """Columns in source order; a column that existed before keeps its id, a new one gets the next id."""
    if len({n for n, _ in schema}) != len(schema):
        dupes = sorted({n for n, _ in schema if [m for m, _ in schema].count(n) > 1})
        raise InvalidInputError(f"the source has duplicate column names (case-insensitive): {', '.join(dupes)}")
    old_ids = {c.name: c.id for c in previous or []}
    next_id = max((int(i) for i in old_ids.values()), default=0) + 1
    columns = []
    for name, datatype in schema:
        if name in old_ids:
            cid = old_ids[name]
        else:
            cid, next_id = str(next_id), next_id + 1
        columns.append(Column(id=cid, name=name, datatype=datatype))
    return columns


def table_name(path: Path) -> str:
    """The default name of the table a path holds: a file's name up to its first dot, a directory's name."""
    return path.name.split(".", 1)[0] if path.is_file() else path.name


def load_file_table(
    store: MetadataStore,
    project: str,
    path: Path,
    source_type: SourceType,
    *,
    name: str | None = None,
    database: str | None = None,
    options: dict[str, str] | None = None,
    writer: str = "precube",
) -> Table:
    """Register the Parquet or CSV files at `path` as table `database.name` (default: the project's
    default database and the file's or directory's name, `table_name`)."""
    location = str(path.expanduser().resolve())
    source = FileSource(source_type, location, dict(options or {}))
    default = table_name(path)
    return _register(store, project, source, database, name or default, location, dict(options or {}), writer)


def load_path(
    store: MetadataStore,
    project: str,
    path: Path,
    source_type: SourceType | None,
    csv: CsvOptions,
    csv_given: Sequence[str] = (),
    *,
    name: str | None = None,
    database: str | None = None,
    writer: str = "precube",
) -> Table:
    """Register the files at `path` (format `source_type`, else detected from the file names); `csv` applies
    to CSV files, and `csv_given` names the CSV options the user set explicitly (refused for Parquet)."""
    found = source_type or detect_file_type(path)
    if found is not SourceType.CSV and csv_given:
        raise InvalidInputError(f"{', '.join(csv_given)} apply to CSV files; {path} holds {found.name} files")
    options = csv.properties() if found is SourceType.CSV else {}
    return load_file_table(store, project, path, found, name=name, database=database, options=options, writer=writer)


def load_catalog_table(
    store: MetadataStore, project: str, identity: str, spark: SparkProvider, writer: str = "precube"
) -> Table:
    """Register the Spark catalog table `DB.TABLE` under the same name."""
    database, _, name = identity.rpartition(".")
    if not database or not name:
        raise InvalidInputError(f"catalog table {identity!r} must be given as DB.TABLE")
    source = CatalogSource(f"{database}.{name}")
    return _register(store, project, source, database, name, None, {}, writer, spark)


def _register(
    store: MetadataStore,
    project: str,
    source: TableSource,
    database: str | None,
    name: str,
    location: str | None,
    properties: dict[str, str],
    writer: str,
    spark: SparkProvider | None = None,
) -> Table:
    db = check_identifier(database or store.get_project(project).default_database, "database")
    check_identifier(name, "name")
    schema = source.schema(spark or _no_spark)
    table = Table(
        name=name,
        database=db,
        columns=_columns(schema),
        source_type=source.source_type,
        location=location,
        source_properties=properties,
    )
    with store.transaction(project, writer) as tx:
        if tx.get(Table, table.identity) is not None:
            raise AlreadyExistsError(
                f"table {table.identity} already exists in project {project!r}; use `precube table reload`"
            )
        return tx.create(table)


def _no_spark() -> SparkSession:
    raise AssertionError("file sources read their schema without Spark")


def reread_table(store: MetadataStore, project: str, identity: str, spark: SparkProvider) -> tuple[Table, SchemaChange]:
    """A table as its source now describes it (not saved), and what changed."""
    with store.read(project) as tx:
        table = tx.require(Table, identity.upper())
    schema = source_for(table).schema(spark)
    change = diff_columns(table.columns, schema)
    if change.changed:
        table.columns = _columns(schema, table.columns)
    return table, change


def reload_table(
    store: MetadataStore, project: str, identity: str, spark: SparkProvider, writer: str = "precube"
) -> tuple[Table, SchemaChange]:
    """Re-read a table's schema from its source; record and return what changed."""
    table, change = reread_table(store, project, identity, spark)
    if change.changed:
        with store.transaction(project, writer) as tx:
            tx.update(table)
    return table, change


def models_using(tx: Transaction, identity: str) -> list[Model]:
    """The project's models that read table `identity` (as fact or lookup)."""
    wanted = identity.upper()
    return [
        m
        for m in tx.list(Model)
        if m.fact_table.upper() == wanted or any(j.table.upper() == wanted for j in m.join_tables)
    ]


def unload_table(store: MetadataStore, project: str, identity: str, writer: str = "precube") -> None:
    """Remove a table and its sampled stats from the project; refused while a model reads it (delete those
    models first: `precube table unload --cascade` does, after showing what it drops)."""
    with store.transaction(project, writer) as tx:
        table = tx.require(Table, identity.upper())
        users = models_using(tx, table.identity)
        if users:
            names = ", ".join(sorted(m.alias for m in users))
            raise InvalidInputError(
                f"table {table.identity} is used by model{'s' if len(users) > 1 else ''} {names}: delete "
                "them first, or unload with --cascade to delete them too"
            )
        ext = tx.get(TableExt, table.identity)
        if ext is not None:
            tx.delete(ext)
        tx.delete(table)
