"""Backup → restore → backup is byte-identical; malformed trees are refused and change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precube.metadata import (
    BackupFormatError,
    Job,
    JobType,
    MetadataStore,
    Project,
    SegmentDetails,
    Table,
    TableExt,
    open_store,
)
from precube.metadata.backup import backup, restore
from precube.metadata.table import Column, ColumnStats, SourceType


def _fill(store: MetadataStore) -> None:
    for name in ("ssb", "def"):
        store.create_project(Project(name=name, default_database="SSB"))
        with store.transaction(name) as tx:
            for t in ("DATES", "LINEORDER"):
                tx.create(
                    Table(
                        name=t,
                        database="SSB",
                        columns=[Column(id="1", name="K", datatype="integer")],
                        source_type=SourceType.PARQUET,
                        location=f"/data/{t}",
                    )
                )
                tx.create(TableExt(table_name=f"SSB.{t}", columns_stats=[ColumnStats(column_name="K", cardinality=3)]))
            # jobs live under execute/ with no suffix, as in Kylin
            tx.create(Job(uuid="1c7dd6c1-6da5-72e6-a2fe-e87e5c764502", job_type=JobType.INC_BUILD))
            tx.create(SegmentDetails(uuid="0b36355d", dataflow="de52affe"))


def _tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def test_tree_layout_matches_seed_002(store: MetadataStore, tmp_path: Path) -> None:
    _fill(store)
    backup(store, tmp_path / "b")
    files = set(_tree(tmp_path / "b"))
    assert {
        "UUID",
        "_global/project/ssb.json",
        "_global/project/def.json",
        "ssb/table/SSB.DATES.json",
        "ssb/table_exd/SSB.LINEORDER.json",
        "ssb/execute/1c7dd6c1-6da5-72e6-a2fe-e87e5c764502",
        "def/dataflow_details/de52affe/0b36355d.json",
    } <= files
    assert len(files) == 1 + 2 + 2 * 6
    doc = json.loads((tmp_path / "b/ssb/table/SSB.DATES.json").read_bytes())
    assert doc["name"] == "DATES" and doc["database"] == "SSB" and "mvcc" not in doc


def test_backup_restore_backup_is_byte_identical(store: MetadataStore, tmp_path: Path) -> None:
    _fill(store)
    backup(store, tmp_path / "first")
    # into a SQLite store whatever the source backend: documents are bytes, not dialect-specific
    with open_store(f"sqlite:///{tmp_path / 'other.db'}") as other:
        assert restore(other, tmp_path / "first") == len(_tree(tmp_path / "first"))
        backup(other, tmp_path / "second")
        with other.read("ssb") as tx:
            assert tx.require(Table, "SSB.DATES").location == "/data/DATES"
    assert _tree(tmp_path / "first") == _tree(tmp_path / "second")


def test_restore_refuses_non_empty_store_unless_overwrite(store: MetadataStore, tmp_path: Path) -> None:
    _fill(store)
    backup(store, tmp_path / "b")
    store.delete_project("def")
    store.create_project(Project(name="extra"))
    before = store.scan("/")
    with pytest.raises(BackupFormatError, match="already holds projects extra, ssb"):
        restore(store, tmp_path / "b")
    assert store.scan("/") == before
    restore(store, tmp_path / "b", overwrite=True)
    assert sorted(p.name for p in store.list_projects()) == ["def", "ssb"]
    backup(store, tmp_path / "again")
    assert _tree(tmp_path / "b") == _tree(tmp_path / "again")


@pytest.mark.parametrize(
    ("path", "content", "message"),
    [
        ("ssb/table/SSB.X.json", b"{not json", "not a valid document"),
        ("ssb/table/SSB.X.json", b'{"name": "X"}', "not a valid document"),
        ("ssb/table/SSB.Y.json", None, "holds table 'SSB.DATES'"),
        ("ssb/cube/x.json", b"{}", "unknown kind 'cube'"),
        ("ghost/table/SSB.DATES.json", None, "_global/project/ghost.json is missing"),
        ("stray.txt", b"x", "is not a metadata document"),
    ],
)
def test_malformed_tree_is_refused(
    store: MetadataStore, tmp_path: Path, path: str, content: bytes | None, message: str
) -> None:
    _fill(store)
    backup(store, tmp_path / "b")
    target = tmp_path / "b" / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content if content is not None else (tmp_path / "b/ssb/table/SSB.DATES.json").read_bytes())
    before = store.scan("/")
    with pytest.raises(BackupFormatError, match=message):
        restore(store, tmp_path / "b", overwrite=True)
    assert store.scan("/") == before


def test_backup_needs_an_empty_directory_and_one_project_works(store: MetadataStore, tmp_path: Path) -> None:
    _fill(store)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(BackupFormatError, match="exists and is not empty"):
        backup(store, tmp_path / "full")
    backup(store, tmp_path / "one", project="ssb")
    files = _tree(tmp_path / "one")
    assert "_global/project/ssb.json" in files and not any(f.startswith("def/") for f in files)


def test_a_store_keeps_its_own_identity_through_backup_and_restore(store: MetadataStore, tmp_path: Path) -> None:
    _fill(store)
    mine = store.identity
    backup(store, tmp_path / "b")
    assert not (tmp_path / "b" / "_global" / "store").exists()  # never in a backup
    restore(store, tmp_path / "b", overwrite=True)
    assert store.identity == mine and store.scan("/_global/store/")[0].content == _identity_doc(store)
    with open_store(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        restore(copy, tmp_path / "b")
        assert copy.identity != mine  # a restored copy is another store
        assert copy.scan("/UUID")[0].content == store.scan("/UUID")[0].content  # Kylin's metadata id travels
    with open_store(f"sqlite:///{tmp_path / 'copy.db'}") as again:
        assert again.identity == copy.identity  # kept in the store, not made per open


def _identity_doc(store: MetadataStore) -> bytes:
    return store.scan("/_global/store/")[0].content
