"""The project's tables and columns as Kylin 5 answers `GET /api/query/tables_and_columns` (and the legacy
`GET /api/tables_and_columns`): a plain list of `TableMetaWithType`, each with its `ColumnMetaWithType`s, under
the JSON names Jackson gives their getters (`getTABLE_SCHEM` is `table_SCHEM`: the leading capitals up to the
first `_` lower-cased), which Kylin's clients (kylinpy, the ODBC driver) read. As Kylin's `doGetMetadataV2`: every
table of the project, computed columns included (the catalog description's), never paged; `type` is what the
models make of a table (FACT, LOOKUP) and of a column (PK, FK: their join keys); a size only for the types that
have one; with a model (Kylin's `cube`), only its tables and its columns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from precube.metadata import Model
from precube.query.catalog.description import CatalogDescription, ColumnDescription, TableDescription

CATALOG = "defaultCatalog"  # Kylin's catalog name
SIZED_TYPES = ("TIMESTAMP", "DECIMAL", "VARCHAR", "CHAR")  # Kylin gives other types' column_SIZE as -1

Roles = dict[tuple[str, str], set[str]]  # (DB.TABLE, COLUMN or "") → its roles in the models


def tables_and_columns(catalog: CatalogDescription, models: Iterable[Model], model: str | None = None) -> list[Any]:
    """Every table of the catalog (only the tables and columns of the model aliased `model`, when given: Kylin
    compares the alias exactly) as Kylin lists them."""
    chosen = [m for m in models if model is None or m.alias == model]
    roles = _roles(chosen)
    columns = None if model is None else _columns(chosen)
    tables = catalog.tables
    if model is not None:
        tables = tuple(t for t in tables if (t.identity.upper(), "") in roles)
    return [_table(t, roles, columns) for t in tables]


def _aliases(model: Model) -> dict[str, str]:
    """The model's table aliases → DB.TABLE."""
    return {model.root_alias.upper(): model.fact_table} | {j.alias.upper(): j.table for j in model.join_tables}


def _resolve(aliases: dict[str, str], ref: str) -> tuple[str, str] | None:
    """`ALIAS.COLUMN` as (DB.TABLE, COLUMN), upper case; None for an alias the model does not have."""
    alias, _, column = ref.partition(".")
    table = aliases.get(alias.upper())
    return None if table is None else (table.upper(), column.upper())


def _roles(models: Iterable[Model]) -> Roles:
    """What the models make of each table and join key, as Kylin's `clarifyTblTypeToFactOrLookup` and
    `clarifyPkFkCols` type them."""
    roles: Roles = {}
    for m in models:
        aliases = _aliases(m)
        roles.setdefault((m.fact_table.upper(), ""), set()).add("FACT")
        for join in m.join_tables:
            roles.setdefault((join.table.upper(), ""), set()).add("LOOKUP")
            for refs, role in ((join.join.primary_key, "PK"), (join.join.foreign_key, "FK")):
                for ref in refs:
                    found = _resolve(aliases, ref)
                    if found is not None:
                        roles.setdefault(found, set()).add(role)
    return roles


def _columns(models: Iterable[Model]) -> set[tuple[str, str]]:
    """The models' columns (computed ones included) as (DB.TABLE, COLUMN)."""
    found = set()
    for m in models:
        aliases = _aliases(m)
        for named in m.live_columns():
            column = _resolve(aliases, named.column)
            if column is not None:
                found.add(column)
    return found


def _table(table: TableDescription, roles: Roles, columns: set[tuple[str, str]] | None) -> dict[str, Any]:
    schema, name = table.schema.upper(), table.name.upper()
    identity = f"{schema}.{name}"
    listed = [c for c in table.columns if columns is None or (identity, c.name.upper()) in columns]
    return {
        "table_CAT": CATALOG,
        "table_SCHEM": schema,
        "table_NAME": name,
        "table_TYPE": table.kind,
        "remarks": table.comment,
        "type_CAT": None,
        "type_SCHEM": None,
        "type_NAME": None,
        "self_REFERENCING_COL_NAME": None,
        "ref_GENERATION": None,
        "columns": [_column(schema, name, c, roles) for c in listed],
        "type": sorted(roles.get((identity, ""), ())),
    }


def _column(schema: str, table: str, column: ColumnDescription, roles: Roles) -> dict[str, Any]:
    t = column.jdbc
    name = column.name.upper()
    size = t.precision if t.name in SIZED_TYPES else -1
    return {
        "table_CAT": CATALOG,
        "table_SCHEM": schema,
        "table_NAME": table,
        "column_NAME": name,
        "data_TYPE": t.code,
        "type_NAME": t.name,
        "column_SIZE": size,
        "buffer_LENGTH": -1,
        "decimal_DIGITS": t.scale if t.name == "DECIMAL" else 0,
        "num_PREC_RADIX": 10,
        "nullable": 1 if column.nullable else 0,
        "remarks": column.comment,
        "column_DEF": None,
        "sql_DATA_TYPE": -1,
        "sql_DATETIME_SUB": -1,
        "char_OCTET_LENGTH": size,  # as Kylin sets it
        "ordinal_POSITION": column.position,
        "is_NULLABLE": "YES" if column.nullable else "NO",
        "scope_CATLOG": None,
        "scope_SCHEMA": None,
        "scope_TABLE": None,
        "source_DATA_TYPE": -1,
        "is_AUTOINCREMENT": "",  # as Kylin's constructColumnMeta sends it
        "type": sorted(roles.get((f"{schema}.{table}", name), ())),
        "fully_QUALIFIED_COLUMN_NAME": None,
    }
