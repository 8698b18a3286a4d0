"""Kylin 5's `tables` endpoints: load (Spark catalog tables, and precube's file tables from `[server]
source_roots` only), list with sampled stats, sample, pre_reload + reload, prepare_unload + unload.

Sampling runs synchronously on the server's Spark session, in the request's worker thread."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from precube.auth import Permission
from precube.errors import InvalidInputError
from precube.jobs.table_changes import apply_reload, preview_reload, preview_unload, unload_tables
from precube.metadata import SourceType, Table, TableExt
from precube.metadata.csv_options import CsvOptions
from precube.server.envelope import Paging, ok, page, paging
from precube.server.security import Caller, requires, state_of
from precube.server.state import ServerState
from precube.sources.csv_files import check_columns, check_encoding
from precube.sources.errors import UnreadableSourceError
from precube.sources.roots import SourceAccessError, check_source_path
from precube.sources.sampling import sample_and_store
from precube.sources.tables import check_identifier, load_catalog_table, load_path, unload_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

router = APIRouter(tags=["tables"])

_NAME = 200  # longest name accepted before any validator runs
_MAX_TABLES = 1000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ColumnIn(_Body):
    name: str = Field(max_length=_NAME)
    type: str = Field(max_length=_NAME)


class FileTableIn(_Body):
    """precube's file source: Parquet or CSV files under one of `[server] source_roots`."""

    path: str = Field(max_length=4096)
    format: Literal["parquet", "csv"] | None = None  # default: from the file names
    database: str | None = Field(None, max_length=_NAME)
    name: str | None = Field(None, max_length=_NAME)
    header: bool | None = None
    delimiter: str | None = Field(None, min_length=1, max_length=1)
    quote: str | None = Field(None, min_length=1, max_length=1)
    escape: str | None = Field(None, min_length=1, max_length=1)
    null: str | None = Field(None, max_length=_NAME)
    encoding: str | None = Field(None, max_length=_NAME)
    columns: list[ColumnIn] | None = Field(None, max_length=10_000)

    def csv(self) -> tuple[CsvOptions, list[str]]:
        """The CSV options, and the names of those given (which Parquet files refuse)."""
        csv_fields = ("header", "delimiter", "quote", "escape", "null", "encoding", "columns")
        given = [k for k in csv_fields if getattr(self, k) is not None]
        for key in ("delimiter", "quote", "escape"):
            char = getattr(self, key)
            if char is not None and char != "\t" and not char.isprintable():
                raise InvalidInputError(f"{key} must be a printable character or a tab")
        declared = check_columns([(c.name, c.type) for c in self.columns], "columns") if self.columns else None
        quote = self.quote or '"'
        options = CsvOptions(
            header=self.header if self.header is not None else True,
            delimiter=self.delimiter or ",",
            quote=quote,
            escape=self.escape or quote,
            null=self.null,
            encoding=check_encoding(self.encoding or "utf-8"),
            columns=tuple(declared) if declared is not None else None,
        )
        return options, given


class LoadTables(_Body):
    """Kylin's `TableLoadRequest` (catalog tables `DB.TABLE`, whole databases) plus precube's `files`."""

    project: str
    tables: list[str] = Field(default_factory=list, max_length=_MAX_TABLES)
    databases: list[str] = Field(default_factory=list, max_length=100)
    files: list[FileTableIn] = Field(default_factory=list, max_length=_MAX_TABLES)
    data_source_type: Literal[9] = 9  # Kylin's Hive/Spark catalog, the only one
    need_sampling: bool = False
    sampling_rows: int | None = Field(None, ge=1, le=2_000_000_000)


class SamplingJob(_Body):
    project: str
    qualified_table_name: str = Field(max_length=2 * _NAME + 1)
    rows: int | None = Field(None, ge=1, le=2_000_000_000)


class ReloadTable(_Body):
    project: str
    table: str = Field(max_length=2 * _NAME + 1)
    need_sampling: bool = False
    max_rows: int | None = Field(None, ge=0, le=2_000_000_000)
    need_building: Literal[False] = False  # builds go through the segments endpoints


def _identity(text: str) -> str:
    """`DB.TABLE`, both parts plain identifiers (upper-cased)."""
    database, dot, name = text.partition(".")
    if not dot:
        raise InvalidInputError(f"table {text!r} must be given as DB.TABLE")
    return f"{check_identifier(database, 'database')}.{check_identifier(name, 'name')}"


def _spark_of(state: ServerState) -> SparkSession:
    from precube.spark_session import spark_session

    return spark_session(state.settings)


def _sample(state: ServerState, project: str, identity: str, rows: int | None, writer: str) -> TableExt:
    settings = state.settings.sampling
    spark = _spark_of(state)
    return sample_and_store(
        state.store, project, identity, spark, rows or settings.rows, settings.sample_rows, writer=writer
    )


def _stats(ext: TableExt) -> dict[str, Any]:
    return {
        "table": ext.table_name,
        "total_rows": ext.total_rows,
        "sampled_rows": ext.sampled_rows,
        "columns_stats": [s.model_dump(mode="json") for s in ext.columns_stats],
        "sample_rows": ext.sample_rows,
    }


@router.post("/tables")
def load_tables(
    request: Request, body: LoadTables, caller: Caller = Depends(requires(Permission.MANAGEMENT))
) -> dict[str, Any]:
    """Register tables; every name and path is checked before anything is read or written, and a load that
    fails part-way unloads what it had loaded."""
    state, project = state_of(request), caller.project
    assert project is not None
    writer = caller.writer
    catalog = [_identity(t) for t in body.tables]
    databases = [check_identifier(d, "database") for d in body.databases]
    files = [(f, _checked_path(state, f.path), *f.csv()) for f in body.files]
    for f, _, _, _ in files:
        if f.database is not None:
            check_identifier(f.database, "database")
        if f.name is not None:
            check_identifier(f.name, "name")
    if not catalog and not databases and not files:
        raise InvalidInputError("give at least one of tables, databases or files")
    state.store.require_project(project)
    if databases:  # a whole database: its tables not loaded yet
        spark = _spark_of(state)
        with state.store.read(project) as tx:
            known = {t.identity for t in tx.list(Table)}
        missing = [db for db in databases if not spark.catalog.databaseExists(db)]
        if missing:
            raise UnreadableSourceError(f"no database {', '.join(missing)} in the Spark catalog")
        listed = [
            f"{db}.{t.name.upper()}" for db in databases for t in spark.catalog.listTables(db) if not t.isTemporary
        ]
        catalog += [t for t in listed if t not in known and t not in catalog]
    loaded: list[Table] = []
    try:
        for f, location, options, given in files:
            fmt = SourceType[f.format.upper()] if f.format else None
            loaded.append(
                load_path(
                    state.store,
                    project,
                    Path(location),
                    fmt,
                    options,
                    given,
                    name=f.name,
                    database=f.database,
                    writer=writer,
                )
            )
        for identity in catalog:
            loaded.append(load_catalog_table(state.store, project, identity, lambda: _spark_of(state), writer))
    except Exception:
        for table in loaded:  # all or nothing
            unload_table(state.store, project, table.identity, writer=writer)
        raise
    rows = body.sampling_rows
    sampled = [_stats(_sample(state, project, t.identity, rows, writer)) for t in loaded] if body.need_sampling else []
    return ok({"loaded": [t.identity for t in loaded], "failed": [], "sampling": sampled})


def _checked_path(state: ServerState, path: str) -> str:
    checked = check_source_path(path, state.settings.server.source_roots)
    if not checked.startswith("/"):
        raise SourceAccessError(f"{path!r}: file tables are read from local paths only")
    return checked


@router.get("/tables")
def list_tables(
    request: Request,
    caller: Caller = Depends(requires(Permission.QUERY)),
    project: str = Query(max_length=_NAME),
    database: str | None = Query(None, max_length=_NAME),
    table: str | None = Query(None, max_length=_NAME),
    is_fuzzy: bool = False,
    ext: bool = True,
    paged: Paging = Depends(paging),
) -> dict[str, Any]:
    """The project's tables, by database and name (`is_fuzzy`: a case-insensitive substring); `ext` adds the
    sampled stats and example rows."""
    state = state_of(request)
    with state.store.read(project) as tx:
        tables = sorted(tx.list(Table), key=lambda t: t.identity)
        exts = {e.table_name: e for e in tx.list(TableExt)} if ext else {}
    wanted_db = database.upper() if database else None
    wanted = table.upper() if table else None
    found = []
    for t in tables:
        if wanted_db is not None and t.database != wanted_db:
            continue
        if wanted is not None and (wanted not in t.name if is_fuzzy else wanted != t.name):
            continue
        described = t.model_dump(mode="json")
        if ext:
            stats = exts.get(t.identity)
            described["ext"] = _stats(stats) if stats is not None else None
        found.append(described)
    return ok(page(found, paged))


@router.post("/tables/sampling_jobs")
def sample_table(
    request: Request, body: SamplingJob, caller: Caller = Depends(requires(Permission.MANAGEMENT))
) -> dict[str, Any]:
    """Sample a table now (synchronously, on the server's Spark session) and answer its stats."""
    assert caller.project is not None
    state = state_of(request)
    identity = _identity(body.qualified_table_name)
    with state.store.read(caller.project) as tx:
        tx.require(Table, identity)
    return ok(_stats(_sample(state, caller.project, identity, body.rows, caller.writer)))


@router.get("/tables/pre_reload")
def pre_reload(
    request: Request,
    caller: Caller = Depends(requires(Permission.MANAGEMENT)),
    project: str = Query(max_length=_NAME),
    table: str = Query(max_length=2 * _NAME + 1),
) -> dict[str, Any]:
    """The schema diff a reload would apply and the models it would break; changes nothing."""
    state = state_of(request)
    found = preview_reload(
        state.store, state.settings.warehouse_root, project, [_identity(table)], lambda: _spark_of(state)
    )
    return ok(found.as_dict())


@router.post("/tables/reload")
def reload_table(
    request: Request, body: ReloadTable, caller: Caller = Depends(requires(Permission.MANAGEMENT))
) -> dict[str, Any]:
    """Re-read the table's schema and save it; models it breaks lose their segments (as pre_reload told)."""
    assert caller.project is not None
    state, writer = state_of(request), caller.writer
    identity = _identity(body.table)
    found = preview_reload(
        state.store, state.settings.warehouse_root, caller.project, [identity], lambda: _spark_of(state)
    )
    checks = apply_reload(state.store, caller.project, found, writer)
    answer = found.as_dict()
    answer["models"] = [{"model": c.model, "broken_reason": c.reason, "changed": c.changed} for c in checks]
    if body.need_sampling:
        answer["sampling"] = _stats(_sample(state, caller.project, identity, body.max_rows or None, writer))
    return ok(answer)


@router.get("/tables/{database}/{table}/prepare_unload")
def prepare_unload(
    request: Request,
    database: str,
    table: str,
    caller: Caller = Depends(requires(Permission.MANAGEMENT)),
    project: str = Query(max_length=_NAME),
) -> dict[str, Any]:
    """What unloading the table would drop: the models that read it (deleted only with `cascade`)."""
    identity = _identity(f"{database}.{table}")
    found = preview_unload(state_of(request).store, project, [identity])
    return ok(
        {
            "table": identity,
            "has_model": bool(found.models),
            "models": [{"model": a, "segments": n} for a, n in sorted(found.models.items())],
        }
    )


@router.delete("/tables/{database}/{table}")
def unload(
    request: Request,
    database: str,
    table: str,
    caller: Caller = Depends(requires(Permission.MANAGEMENT)),
    project: str = Query(max_length=_NAME),
    cascade: bool = False,
) -> dict[str, Any]:
    """Unload the table; refused while a model reads it, unless `cascade`, which deletes those models."""
    identity = _identity(f"{database}.{table}")
    found = unload_tables(state_of(request).store, project, [identity], cascade, caller.writer)
    return ok({"table": identity, "deleted_models": sorted(found.models) if cascade else []})
