"""The project's catalog as every door lists it, described once per metadata read
(`ProjectMetadata.description`): the query session's information_schema and SHOW/DESCRIBE (`rows`, `show`), the
Postgres wire's pg_catalog and information_schema, REST's tables_and_columns and, through the session's
information_schema, the DB-API's SQLAlchemy inspector.

Its schemas are the databases holding the project's tables; each table's columns are its source columns in
order, then the computed columns the project's models define on it (on the model's fact table, as in Kylin:
queryable by name, though not part of `*`), the first definition of a name winning, and none shadowing a source
column. Names and types are as the metadata records them (upper-case names; Kylin's type names, `varchar(256)`,
`decimal(15,2)`, `integer`): case and a type's spelling are each door's presentation."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from precube.jdbc_types import of_name
from precube.metadata import Model, Table, datatypes
from precube_client.jdbc_types import JdbcType

if TYPE_CHECKING:
    from precube.query.project_metadata import ProjectMetadata

COMPUTED_DEFAULT_TYPE = "double"  # a computed column saved before validation inferred its type


@dataclass(frozen=True)
class ColumnDescription:
    name: str
    position: int  # 1-based, as ANSI's ordinal_position and PostgreSQL's attnum
    datatype: str  # as the metadata records it (Kylin's names)
    comment: str | None = None
    expression: str | None = None  # a computed column's, as its model writes it (columns as ALIAS.COLUMN)
    nullable: bool = True  # precube's tables declare no NOT NULL

    @property
    def computed(self) -> bool:
        return self.expression is not None

    @property
    def spark_type(self) -> str:
        """The type as precube's SQL (Spark's) spells it: `int`, `string`, `decimal(15,2)`."""
        return datatypes.to_spark(self.datatype)

    @property
    def jdbc(self) -> JdbcType:
        """The type as JDBC clients name it (`java.sql.Types` code, name, precision, scale)."""
        return of_name(self.datatype)


@dataclass(frozen=True)
class TableDescription:
    schema: str  # the table's database
    name: str
    comment: str | None
    columns: tuple[ColumnDescription, ...]
    kind: str = "TABLE"  # precube has no views

    @property
    def identity(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class CatalogDescription:
    """Schemas sorted, tables sorted by (schema, name), columns in ordinal position."""

    project: str
    default_schema: str
    schemas: tuple[str, ...]
    tables: tuple[TableDescription, ...]

    @cached_property
    def _by_identity(self) -> dict[str, TableDescription]:
        return {t.identity: t for t in self.tables}

    def table(self, schema: str, name: str) -> TableDescription | None:
        return self._by_identity.get(f"{schema}.{name}")

    def columns(self) -> Iterator[tuple[TableDescription, ColumnDescription]]:
        """Every column with its table, in the catalog's order."""
        return ((t, c) for t in self.tables for c in t.columns)


def describe(metadata: ProjectMetadata) -> CatalogDescription:
    """The catalog of the metadata's project (read it as `metadata.description`: described once)."""
    tables = sorted(metadata.tables.values(), key=lambda t: (t.database, t.name))
    computed = _computed_by_table(m.model for m in metadata.models)
    return CatalogDescription(
        metadata.project,
        metadata.default_database.upper(),
        tuple(sorted({t.database for t in tables})),
        tuple(_table(t, computed.get(t.identity, [])) for t in tables),
    )


def _computed_by_table(models: Iterable[Model]) -> dict[str, list[tuple[str, str, str | None, str]]]:
    """DB.TABLE → its computed columns (name, type, comment, expression), in the models' order."""
    found: dict[str, list[tuple[str, str, str | None, str]]] = {}
    for model in models:
        for cc in model.computed_columns:
            datatype = cc.datatype or COMPUTED_DEFAULT_TYPE
            found.setdefault(cc.table_identity.upper(), []).append(
                (cc.column_name.upper(), datatype, cc.comment, cc.expression)
            )
    return found


def _table(table: Table, computed: list[tuple[str, str, str | None, str]]) -> TableDescription:
    columns = [ColumnDescription(c.name, i, c.datatype, c.comment) for i, c in enumerate(table.columns, start=1)]
    names = {c.name.upper() for c in columns}
    for name, datatype, comment, expression in computed:
        if name not in names:
            names.add(name)
            columns.append(ColumnDescription(name, len(columns) + 1, datatype, comment, expression))
    return TableDescription(table.database, table.name, table.table_comment, tuple(columns))
