"""Garbage collection of unreferenced warehouse directories, on directories and metadata made by hand."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
import typer

from precube.cli.context import CliContext
from precube.cli.gc import gc
from precube.engine.dictionary import dictionary_path
from precube.errors import InvalidInputError
from precube.jobs.errors import JobError
from precube.jobs.gc import Garbage, UnsupportedWarehouseError, collect_garbage
from precube.metadata import (
    Dataflow,
    LayoutInstance,
    MetadataStore,
    Model,
    NotFoundError,
    Project,
    Segment,
    SegmentDetails,
    SegmentStatus,
    TimeRange,
    open_store,
)
from precube.modeling.model_store import delete_model
from precube.settings import load_settings
from precube.storage.paths import layout_path

PROJECT = "ssb"
DAY = 24 * 3600.0


@pytest.fixture
def root(store: MetadataStore, tmp_path: Path) -> Path:
    """The warehouse root, with the project created in `store`."""
    store.create_project(Project(name=PROJECT, default_database="SSB"))
    return tmp_path / "warehouse"


def add_model(store: MetadataStore, *segments: tuple[SegmentStatus, list[int]]) -> tuple[Model, list[str]]:
    """A model whose dataflow has one segment per (status, recorded layout ids); returns it and the segment ids."""
    model = Model(alias=f"m_{uuid.uuid4().hex[:8]}", fact_table="SSB.LINEORDER")
    built = [
        Segment(name=f"s{n}", status=status, seg_range=TimeRange.of(n, n + 1)) for n, (status, _) in enumerate(segments)
    ]
    with store.transaction(PROJECT) as tx:
        tx.create(model)
        tx.create(Dataflow(uuid=model.uuid, segments=built))
        for segment, (_, layouts) in zip(built, segments, strict=True):
            instances = [LayoutInstance(layout_id=i, is_ready=True) for i in layouts]
            tx.create(SegmentDetails(uuid=segment.id, dataflow=model.uuid, layout_instances=instances))
    return model, [s.id for s in built]


def write_layout(root: Path | str, model: str, segment: str, layout_id: int, size: int = 100) -> Path:
    path = Path(layout_path(str(root), PROJECT, model, segment, layout_id))
    path.mkdir(parents=True)
    (path / "part-00000.parquet").write_bytes(b"x" * size)
    return path


def age(path: Path, when: float) -> None:
    """Set the modification time of `path` and of everything in it."""
    for p in [*path.rglob("*"), path]:
        os.utime(p, (when, when), follow_symlinks=False)


def paths(garbage: tuple[Garbage, ...]) -> set[Path]:
    return {g.path for g in garbage}


def test_orphan_segment_removed_after_grace_and_kept_within(store: MetadataStore, root: Path) -> None:
    model, [ready] = add_model(store, (SegmentStatus.READY, [1]))
    recorded = write_layout(root, model.uuid, ready, 1)
    old = write_layout(root, model.uuid, str(uuid.uuid4()), 1, size=300).parent
    write_layout(root, model.uuid, old.name, 2, size=200)
    young = write_layout(root, model.uuid, str(uuid.uuid4()), 1).parent
    now = time.time()
    age(root / PROJECT, now - 2 * DAY)
    age(young, now - 3600)

    report = collect_garbage(store, str(root), PROJECT, now=now)

    assert paths(report.removed) == {old} and report.bytes_freed == 500
    assert [g.reason for g in report.removed] == ["segment not in the model's dataflow"]
    assert paths(report.pending) == {young}
    assert not old.exists() and young.exists() and recorded.exists()
    assert not report.dry_run and report.skipped == ()


@pytest.mark.parametrize("recent", ["part-00000.parquet", "."])
def test_a_recent_change_deep_inside_keeps_an_orphan(store: MetadataStore, root: Path, recent: str) -> None:
    model, _ = add_model(store)
    orphan = write_layout(root, model.uuid, str(uuid.uuid4()), 1)
    now = time.time()
    age(root / PROJECT, now - 2 * DAY)
    os.utime(orphan / recent, (now - 60, now - 60))  # a file written, or a file removed from the layout

    report = collect_garbage(store, str(root), PROJECT, now=now)

    assert report.removed == () and paths(report.pending) == {orphan.parent}
    assert orphan.exists()


def test_new_segment_keeps_its_unrecorded_layouts(store: MetadataStore, root: Path) -> None:
    model, [building] = add_model(store, (SegmentStatus.NEW, [1]))
    layouts = [write_layout(root, model.uuid, building, i) for i in (1, 2, 3)]
    later = time.time() + 3 * DAY  # long after anything here was written or recorded

    report = collect_garbage(store, str(root), PROJECT, now=later)

    assert report.removed == () and report.pending == ()
    assert all(p.exists() for p in layouts)


def test_ready_segment_loses_unrecorded_layouts_once_its_records_are_old(store: MetadataStore, root: Path) -> None:
    model, [ready, warning] = add_model(store, (SegmentStatus.READY, [1]), (SegmentStatus.WARNING, [2]))
    recorded = [write_layout(root, model.uuid, ready, 1), write_layout(root, model.uuid, warning, 2)]
    unrecorded = {write_layout(root, model.uuid, ready, 2), write_layout(root, model.uuid, warning, 3)}
    now = time.time()
    age(root / PROJECT, now - 2 * DAY)

    # The layout records changed just now: a layout dropped from them may still be read by a query.
    first = collect_garbage(store, str(root), PROJECT, now=now)
    assert first.removed == () and paths(first.pending) == unrecorded
    assert all(p.exists() for p in unrecorded)

    report = collect_garbage(store, str(root), PROJECT, now=now + 3 * DAY)
    assert paths(report.removed) == unrecorded
    assert {g.reason for g in report.removed} == {"layout not recorded in its segment"}
    assert not any(p.exists() for p in unrecorded) and all(p.exists() for p in recorded)


def test_segment_dropped_from_metadata_just_now_is_kept_through_the_grace(store: MetadataStore, root: Path) -> None:
    model, [kept, dropped] = add_model(store, (SegmentStatus.READY, [1]), (SegmentStatus.READY, [1]))
    write_layout(root, model.uuid, kept, 1)
    dropped_dir = write_layout(root, model.uuid, dropped, 1).parent
    now = time.time()
    age(root / PROJECT, now - 2 * DAY)  # its files are old, as those of any merged or deleted segment
    with store.transaction(PROJECT) as tx:
        dataflow = tx.require(Dataflow, model.uuid)
        dataflow.segments = [s for s in dataflow.segments if s.id != dropped]
        tx.update(dataflow)
        tx.delete(tx.require(SegmentDetails, model.uuid, dropped))

    assert paths(collect_garbage(store, str(root), PROJECT, now=now).pending) == {dropped_dir}
    assert dropped_dir.exists()
    assert paths(collect_garbage(store, str(root), PROJECT, now=now + 3 * DAY).removed) == {dropped_dir}
    assert not dropped_dir.exists()


def test_deleted_model_directory_removed(store: MetadataStore, root: Path) -> None:
    model, [ready] = add_model(store, (SegmentStatus.READY, [1]))
    write_layout(root, model.uuid, ready, 1)
    column = Path(dictionary_path(str(root), PROJECT, model.uuid, 7)) / "v1"
    column.mkdir(parents=True)
    (column / "_dictionary.json").write_text("{}")
    stranger = write_layout(root, str(uuid.uuid4()), str(uuid.uuid4()), 1).parent.parent  # never a model
    now = time.time()
    age(root / PROJECT, now - 2 * DAY)
    delete_model(store, PROJECT, model.alias)
    model_dir = root / PROJECT / model.uuid

    # Deleted just now: its files are old, but the audit log says when the metadata let go of them.
    first = collect_garbage(store, str(root), PROJECT, now=now)
    assert paths(first.removed) == {stranger} and paths(first.pending) == {model_dir}
    assert model_dir.exists() and not stranger.exists()

    report = collect_garbage(store, str(root), PROJECT, now=now + 3 * DAY)
    assert paths(report.removed) == {model_dir} and [g.reason for g in report.removed] == ["model does not exist"]
    assert not model_dir.exists() and (root / PROJECT).exists()


def test_dictionary_kept_but_unfinished_versions_removed(store: MetadataStore, root: Path) -> None:
    model, _ = add_model(store)
    column = Path(dictionary_path(str(root), PROJECT, model.uuid, 7))
    assert column.parent == root / PROJECT / model.uuid / "dict"
    for name in ("v1", "v2", f"_tmp-v3-{uuid.uuid4().hex}", f"_tmp-v4-{uuid.uuid4().hex}"):
        (column / name).mkdir(parents=True)
        (column / name / "part-00000.parquet").write_bytes(b"x" * 10)
    (column / "v1" / "_dictionary.json").write_text("{}")
    crashed, running = sorted(column.glob("_tmp-*"))
    now = time.time()
    age(root / PROJECT, now - 2 * DAY)
    age(running, now - 60)

    report = collect_garbage(store, str(root), PROJECT, now=now)

    assert paths(report.removed) == {crashed} and paths(report.pending) == {running}
    assert (column / "v1").exists() and (column / "v2").exists() and running.exists() and not crashed.exists()


def test_model_without_dataflow_is_kept_whole(store: MetadataStore, root: Path) -> None:
    model = Model(alias="lonely", fact_table="SSB.LINEORDER")
    with store.transaction(PROJECT) as tx:
        tx.create(model)
    layout = write_layout(root, model.uuid, str(uuid.uuid4()), 1)
    age(root / PROJECT, time.time() - 2 * DAY)

    report = collect_garbage(store, str(root), PROJECT)

    assert report.removed == () and report.pending == () and layout.exists()


def test_dry_run_removes_nothing_but_reports(store: MetadataStore, root: Path) -> None:
    model, [ready] = add_model(store, (SegmentStatus.READY, [1]))
    orphan = write_layout(root, model.uuid, str(uuid.uuid4()), 1, size=1000).parent
    unrecorded = write_layout(root, model.uuid, ready, 9, size=50)
    later = time.time() + 3 * DAY

    dry = collect_garbage(store, str(root), PROJECT, dry_run=True, now=later)

    assert dry.dry_run and paths(dry.removed) == {orphan, unrecorded} and dry.bytes_freed == 1050
    assert orphan.exists() and unrecorded.exists()
    real = collect_garbage(store, str(root), PROJECT, now=later)
    assert real.removed == dry.removed and not orphan.exists() and not unrecorded.exists()


def test_entries_precube_does_not_write_are_left_alone(store: MetadataStore, root: Path, tmp_path: Path) -> None:
    model, [ready] = add_model(store, (SegmentStatus.READY, [1]))
    write_layout(root, model.uuid, ready, 1)
    project_dir, model_dir = root / PROJECT, root / PROJECT / model.uuid
    unknown = [project_dir / "notes", model_dir / "scratch", model_dir / ready / "_temporary"]
    for p in unknown:
        p.mkdir()
    (project_dir / "README").write_text("mine")
    outside = tmp_path / "elsewhere" / str(uuid.uuid4())
    outside.mkdir(parents=True)
    link = project_dir / str(uuid.uuid4())
    link.symlink_to(outside, target_is_directory=True)
    beside = [root / "other" / str(uuid.uuid4()), root / str(uuid.uuid4())]  # not under the project
    for p in beside:
        p.mkdir(parents=True)
    later = time.time() + 3 * DAY
    age(root, later - 2 * DAY)
    age(outside, later - 2 * DAY)

    report = collect_garbage(store, str(root), PROJECT, now=later)

    assert report.removed == () and report.pending == ()
    assert set(report.skipped) == {*unknown, project_dir / "README", link}
    assert all(p.exists() for p in [*unknown, *beside, outside]) and link.is_symlink()


def test_file_uri_root(store: MetadataStore, root: Path) -> None:
    model, _ = add_model(store)
    orphan = write_layout(root, model.uuid, str(uuid.uuid4()), 1).parent

    report = collect_garbage(store, root.as_uri(), PROJECT, now=time.time() + 3 * DAY)

    assert paths(report.removed) == {orphan} and not orphan.exists()


def test_non_local_root_refused(store: MetadataStore, root: Path) -> None:
    with pytest.raises(UnsupportedWarehouseError, match="local warehouses only.*s3a://bucket/warehouse") as err:
        collect_garbage(store, "s3a://bucket/warehouse", PROJECT)
    assert isinstance(err.value, JobError)


def test_bad_arguments_refused(store: MetadataStore, root: Path) -> None:
    with pytest.raises(NotFoundError, match="nope"):
        collect_garbage(store, str(root), "nope")
    with pytest.raises(InvalidInputError, match="grace period must not be negative"):
        collect_garbage(store, str(root), PROJECT, grace_s=-1)


def test_cli_lists_and_sums_what_it_removes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    settings = load_settings(home=home)
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        store.create_project(Project(name=PROJECT, default_database="SSB"))
        model, _ = add_model(store)
    orphan = write_layout(settings.warehouse_root, model.uuid, str(uuid.uuid4()), 1, size=2_500_000).parent
    age(orphan, time.time() - 2 * DAY)
    app = typer.Typer()

    @app.callback()
    def _root(ctx: typer.Context) -> None:
        ctx.obj = CliContext(home=home)
        ctx.call_on_close(ctx.obj.close)

    app.command("gc")(gc)
    command = typer.main.get_command(app)

    command.main(args=["gc", "-p", PROJECT, "--dry-run"], standalone_mode=False)
    out = capsys.readouterr().out
    assert f"would remove {orphan} (2.5 MB)" in out and "would remove 1 directories, 2.5 MB" in out
    assert orphan.exists()
    command.main(args=["gc", "-p", PROJECT, "--grace-hours", "72"], standalone_mode=False)
    assert "removed 0 directories, 0.0 MB" in capsys.readouterr().out and orphan.exists()
    command.main(args=["gc", "-p", PROJECT], standalone_mode=False)
    assert "removed 1 directories, 2.5 MB" in capsys.readouterr().out and not orphan.exists()
