"""Lookup snapshots end to end on a small snowflake model of its own (its source files are rewritten): a
build records them, lookup-only blocks read them while their source is unchanged, a changed source is read by
pushdown with the reason, a refresh takes a new snapshot, GC keeps the recorded ones and removes the others.
Every answer is compared with DuckDB over the source files as they are at that moment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.engine.context import BuildContext
from precube.engine.operations import build_segment, refresh_segment
from precube.jobs.gc import collect_garbage
from precube.metadata import Dataflow, MetadataStore, Project, SourceType, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model, require_model
from precube.query.session import Session
from precube.sources.tables import load_file_table
from precube.storage.snapshots import snapshot_root

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SPEC: dict[str, Any] = {
    "alias": "shops",
    "fact_table": "S.SALES",
    "join_tables": [
        {
            "table": "S.SHOP",
            "alias": "SHOP",
            "join": {"foreign_key": ["SALES.SA_SHOP"], "primary_key": ["SHOP.SH_KEY"]},
        },
        {
            "table": "S.REGION",
            "alias": "REGION",
            "join": {"foreign_key": ["SHOP.SH_REGION"], "primary_key": ["REGION.R_KEY"]},
        },
    ],
    "simplified_dimensions": ["SHOP.SH_CITY", "REGION.R_NAME"],
    "simplified_measures": [{"name": "ROWS", "expression": "COUNT"}],
    "aggregation_groups": [{"includes": ["SH_CITY", "R_NAME"]}],
}
QUERIES = [
    "select count(*) as shops from s.shop",
    "select distinct sh_city from s.shop where sh_region <> 2 order by sh_city",
    "select r.r_name, count(*) as shops, sum(sh.sh_size) as size "
    "from s.shop sh join s.region r on sh.sh_region = r.r_key group by r.r_name",
]


def _shops(n: int) -> pa.Table:
    return pa.table(
        {
            "SH_KEY": pa.array(range(n), pa.int32()),
            "SH_CITY": [f"city {i % 7}" for i in range(n)],
            "SH_REGION": pa.array([i % 3 for i in range(n)], pa.int32()),
            "SH_SIZE": pa.array([i * 10 for i in range(n)], pa.int64()),
        }
    )


def _write(path: Path, table: pa.Table) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.parquet"):
        old.unlink()
    pq.write_table(table, path / "part-0.parquet")


@pytest.fixture
def project(tmp_path: Path, spark: SparkSession) -> Iterator[tuple[MetadataStore, BuildContext, Path]]:
    data = tmp_path / "data"
    _write(
        data / "SALES",
        pa.table(
            {"SA_ID": pa.array(range(50), pa.int32()), "SA_SHOP": pa.array([i % 20 for i in range(50)], pa.int32())}
        ),
    )
    _write(data / "SHOP", _shops(20))
    _write(data / "REGION", pa.table({"R_KEY": pa.array(range(3), pa.int32()), "R_NAME": ["north", "south", "east"]}))
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="s", default_database="S"))
        for name in ("SALES", "SHOP", "REGION"):
            load_file_table(store, "s", data / name, SourceType.PARQUET)
        create_model(store, "s", parse_spec(SPEC))
        ctx = BuildContext(spark, store, "s", str(tmp_path / "warehouse"), writer="test")
        build_segment(ctx, "shops")
        yield store, ctx, data


def _oracle(data: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA s")
    for name in ("SALES", "SHOP", "REGION"):
        con.execute(f"CREATE VIEW s.{name.lower()} AS SELECT * FROM read_parquet('{data / name}/*.parquet')")
    return sorted(con.execute(sql).fetchall())


def _rows(session: Session, sql: str, **kwargs: Any) -> tuple[list[tuple[Any, ...]], Any]:
    result = session.sql(sql, **kwargs)
    return sorted(result.rows), result


def _snapshot_dirs(ctx: BuildContext, store: MetadataStore) -> set[str]:
    with store.read("s") as tx:
        uuid = require_model(tx, "shops").uuid
    root = Path(snapshot_root(ctx.warehouse_root, "s", uuid))
    return {f"{t.name}/{k.name}" for t in root.iterdir() for k in t.iterdir()}


def test_snapshots_follow_their_source(project: tuple[MetadataStore, BuildContext, Path], spark: SparkSession) -> None:
    store, ctx, data = project
    with Session(store, "s", ctx.warehouse_root, spark=lambda: spark) as session:
        for sql in QUERIES:
            for engine in ("duckdb", "duckdb", "spark"):  # twice: the second plan comes from the plan cache
                rows, result = _rows(session, sql, engine=engine)
                assert rows == _oracle(data, sql), sql
                assert not result.pushdown and result.snapshots and result.layout_ids == [], result.pushdown_reason
                assert result.model == "shops" and len(result.segments) == 1
        assert "lookup snapshots" in session.explain(QUERIES[2]).text()
        before = _snapshot_dirs(ctx, store)
        assert {d.split("/")[0] for d in before} == {"S.SHOP", "S.REGION"}

        _write(data / "SHOP", _shops(30))  # the source changes: its snapshot is no longer current
        for sql in QUERIES:
            rows, result = _rows(session, sql)
            assert rows == _oracle(data, sql), sql
            assert result.pushdown, sql
            assert "the snapshot of S.SHOP in model shops is older than its source" in result.pushdown_reason
        region_only = "select count(*) from s.region"
        assert not session.sql(region_only).pushdown  # the other lookup's snapshot is still current

        with store.read("s") as tx:
            segment = tx.require(Dataflow, require_model(tx, "shops").uuid).segments[0]
        refreshed = refresh_segment(ctx, "shops", segment.id)
        for sql in QUERIES:
            rows, result = _rows(session, sql)
            assert rows == _oracle(data, sql), sql
            assert not result.pushdown and result.segments == [refreshed.id], result.pushdown_reason

    after = _snapshot_dirs(ctx, store)
    new = after - before
    assert before < after and len(new) == 1 and next(iter(new)).startswith("S.SHOP/")  # REGION's was reused
    os.utime(ctx.warehouse_root)  # nothing else to collect than the old snapshot and segment
    report = collect_garbage(store, ctx.warehouse_root, "s", grace_s=0)
    removed = {g.reason for g in report.removed}
    assert "snapshot no segment records" in removed
    assert _snapshot_dirs(ctx, store) == {d for d in after if not (d.startswith("S.SHOP/") and d in before)}
    with Session(store, "s", ctx.warehouse_root) as session:  # what GC kept still answers
        assert not session.sql(QUERIES[2]).pushdown
