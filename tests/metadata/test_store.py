"""The metadata store on SQLite and PostgreSQL: mvcc, conflicts, audit log, transactions."""

from __future__ import annotations

import pytest

from precube.errors import InvalidInputError
from precube.metadata import (
    AlreadyExistsError,
    MetadataStore,
    NotFoundError,
    Project,
    StoreUnavailableError,
    Table,
    TableExt,
    VersionConflictError,
    open_store,
)
from precube.metadata.errors import InvalidKeyError
from precube.metadata.table import Column, SourceType


def _table(name: str = "DATES") -> Table:
    return Table(
        name=name,
        database="SSB",
        columns=[Column(id="1", name="D_DATEKEY", datatype="date")],
        source_type=SourceType.PARQUET,
    )


def _keys(store: MetadataStore) -> list[str]:
    return [d.key for d in store.scan("/")]


def test_create_and_read_project_and_table(store: MetadataStore) -> None:
    store.create_project(Project(name="ssb", default_database="SSB"))
    with store.transaction("ssb") as tx:
        tx.create(_table())
    with store.read("ssb") as tx:
        table = tx.require(Table, "SSB.DATES")
        assert table.mvcc == 0
        assert table.columns[0].name == "D_DATEKEY"
        assert tx.project().default_database == "SSB"
    assert "/ssb/table/SSB.DATES.json" in _keys(store)
    assert "/_global/project/ssb.json" in _keys(store)
    assert [p.name for p in store.list_projects()] == ["ssb"]


def test_update_bumps_mvcc_and_stale_write_conflicts(store: MetadataStore) -> None:
    store.create_project(Project(name="p"))
    with store.transaction("p") as tx:
        tx.create(_table())
    with store.read("p") as tx:
        first = tx.require(Table, "SSB.DATES")
        second = tx.require(Table, "SSB.DATES")
    first.table_comment = "one"
    with store.transaction("p") as tx:
        tx.update(first)
    assert first.mvcc == 1
    second.table_comment = "two"
    with (
        pytest.raises(VersionConflictError, match=r"SSB\.DATES.*mvcc 0.*has 1"),
        store.transaction("p") as tx,
    ):
        tx.update(second)
    with store.read("p") as tx:
        assert tx.require(Table, "SSB.DATES").table_comment == "one"


def test_transaction_is_all_or_nothing(store: MetadataStore) -> None:
    store.create_project(Project(name="p"))
    with store.transaction("p") as tx:
        tx.create(_table("A"))
    before = store.scan("/")
    with store.read("p") as tx:
        stale = tx.require(Table, "SSB.A")
        fresh = tx.require(Table, "SSB.A")
    with store.transaction("p") as tx:
        tx.update(fresh)
    with pytest.raises(VersionConflictError), store.transaction("p") as tx:
        tx.create(_table("B"))
        tx.create(TableExt(table_name="SSB.B"))
        tx.update(stale)  # stale: the whole unit must roll back
    keys = _keys(store)
    assert "/p/table/SSB.B.json" not in keys and "/p/table_exd/SSB.B.json" not in keys
    assert len(store.scan("/")) == len(before)


def test_create_existing_fails_and_missing_is_not_found(store: MetadataStore) -> None:
    store.create_project(Project(name="p"))
    with pytest.raises(AlreadyExistsError, match="project 'p' already exists"):
        store.create_project(Project(name="p"))
    with store.transaction("p") as tx:
        tx.create(_table())
    with pytest.raises(AlreadyExistsError, match="SSB.DATES"), store.transaction("p") as tx:
        tx.create(_table())
    with (
        pytest.raises(NotFoundError, match="table 'SSB.NOPE' does not exist in project 'p'"),
        store.read("p") as tx,
    ):
        tx.require(Table, "SSB.NOPE")
    with pytest.raises(NotFoundError, match="project 'nope' does not exist"):
        store.get_project("nope")


def test_transaction_cannot_write_outside_its_project(store: MetadataStore) -> None:
    store.create_project(Project(name="a"))
    store.create_project(Project(name="b"))
    with pytest.raises(InvalidKeyError, match="belongs to project 'b'"), store.transaction("a") as tx:
        tx.put_document("/b/table/SSB.X.json", b"{}", -1)
    assert not any(k.startswith("/b/") for k in _keys(store))


def test_audit_log_records_every_change(store: MetadataStore) -> None:
    store.create_project(Project(name="p"))
    with store.transaction("p", writer="alice") as tx:
        table = tx.create(_table())
    table.table_comment = "changed"
    with store.transaction("p", writer="bob") as tx:
        tx.update(table)
    with store.transaction("p", writer="carol") as tx:
        tx.delete(table)
    log = store.audit_log("/p/table/")
    assert [(r.mvcc, r.writer, r.content is None) for r in log] == [
        (0, "alice", False),
        (1, "bob", False),
        (2, "carol", True),
    ]
    assert b"changed" in (log[1].content or b"")
    assert log[0].ts <= log[1].ts <= log[2].ts


def test_last_change_moves_on_every_commit_seen_from_another_connection(store_url: str, store: MetadataStore) -> None:
    before = store.last_change()
    assert store.last_change() == before  # asking again changes nothing
    store.create_project(Project(name="p"))
    created = store.last_change()
    assert created > before
    table = store.backend._docs.name  # type: ignore[attr-defined]  # the fixture's own tables
    with open_store(store_url, table=table) as other:  # another process's store: its own connections
        with other.transaction("p") as tx:
            tx.create(_table())
        assert other.last_change() > created
    committed = store.last_change()
    assert committed > created  # the autocommit probe sees the other store's commit
    with pytest.raises(ValueError), store.transaction("p") as tx:
        tx.create(_table("LINEORDER"))
        raise ValueError("rolled back")
    assert store.last_change() == committed  # nothing committed, nothing moved
    assert [r.id for r in store.audit_log("/", 1)] == [store.last_change()]


def test_delete_project_removes_its_documents_only(store: MetadataStore) -> None:
    for name in ("a", "b"):
        store.create_project(Project(name=name))
        with store.transaction(name) as tx:
            tx.create(_table())
    assert store.delete_project("a") == 2
    keys = _keys(store)
    assert not any(k.startswith("/a/") or k == "/_global/project/a.json" for k in keys)
    assert "/b/table/SSB.DATES.json" in keys


def test_store_reopens_with_same_data(store_url: str) -> None:
    with open_store(store_url, table="reopen") as s:
        s.create_project(Project(name="keep"))
        uuid_doc = s.scan("/UUID")[0].content
    with open_store(store_url, table="reopen") as s:
        assert [p.name for p in s.list_projects()] == ["keep"]
        assert s.scan("/UUID")[0].content == uuid_doc
        s.delete_project("keep")


def test_invalid_names_are_rejected(store: MetadataStore) -> None:
    with pytest.raises(InvalidKeyError, match="invalid project name"):
        store.create_project(Project(name="bad/name"))
    with pytest.raises(InvalidKeyError, match="invalid project name"):
        store.create_project(Project(name="_global"))


def test_unsupported_and_unreachable_urls() -> None:
    with pytest.raises(InvalidInputError, match="unsupported metadata URL 'mysql://x/y'"):
        open_store("mysql://x/y")
    with pytest.raises(StoreUnavailableError, match=r"cannot open metadata store postgresql\+psycopg://u:\*\*\*@127"):
        open_store("postgresql://u:secret@127.0.0.1:1/nodb")


def test_concurrent_writers_exactly_one_wins(store_url: str, store: MetadataStore) -> None:
    """Eight threads, each with its own connection, update the same version of one document."""
    import threading

    store.create_project(Project(name="p"))
    with store.transaction("p") as tx:
        tx.create(_table())
    table_name = store.backend._docs.name  # type: ignore[attr-defined]
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        with open_store(store_url, table=table_name) as own:
            with own.read("p") as tx:
                mine = tx.require(Table, "SSB.DATES")
            mine.table_comment = f"writer {i}"
            barrier.wait()
            try:
                with own.transaction("p", writer=f"w{i}") as tx:
                    tx.update(mine)
                outcomes.append("ok")
            except VersionConflictError:
                outcomes.append("conflict")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 7 + ["ok"]
    with store.read("p") as tx:
        final = tx.require(Table, "SSB.DATES")
    assert final.mvcc == 1
    assert [r.mvcc for r in store.audit_log("/p/table/")] == [0, 1]


def test_a_recent_reading_is_reused_until_this_process_commits(store_url: str, store: MetadataStore) -> None:
    """`last_change(max_age_s)`: another process's commit is seen once the reading is older than `max_age_s`;
    a commit of this process, through any store object on the database, at once."""
    import subprocess
    import sys
    import time

    table = store.backend._docs.name  # type: ignore[attr-defined]
    seen = store.last_change(60.0)
    assert store.known_change(60.0) == seen and store.known_change(0.0) is None
    write = (
        "import sys; from precube.metadata import Project, open_store\n"
        "with open_store(sys.argv[1], table=sys.argv[2]) as s: s.create_project(Project(name='elsewhere'))"
    )
    subprocess.run([sys.executable, "-c", write, store_url, table], check=True, timeout=120)
    assert store.last_change(60.0) == seen  # another process's commit: the reading is younger than 60 s
    assert store.last_change() > seen  # a fresh reading sees it
    seen = store.last_change(60.0)
    with open_store(store_url, table=table) as other:  # another store object of this process
        other.create_project(Project(name="here"))
    assert store.known_change(60.0) is None
    assert store.last_change(60.0) > seen  # seen at once
    seen = store.last_change(0.05)
    subprocess.run([sys.executable, "-c", write.replace("elsewhere", "later"), store_url, table], check=True)
    time.sleep(0.06)
    assert store.last_change(0.05) > seen  # the reading aged out


def test_change_positions_follow_commit_order(store_url: str, store: MetadataStore) -> None:
    """A writer that opened its transaction first commits its change at a smaller position than a writer that
    commits after it, so a reader that saw the later position has seen the earlier change too: writers are
    serialised (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock), else another server whose
    `last_change` read the later position would never see the earlier change."""
    import threading

    store.create_project(Project(name="p"))
    table = store.backend._docs.name  # type: ignore[attr-defined]
    second_done = threading.Event()
    with open_store(store_url, table=table) as other:

        def second() -> None:
            with other.transaction("p") as tx:
                tx.create(_table("LINEORDER"))
            second_done.set()

        with store.transaction("p") as tx:
            tx.create(_table("DATES"))
            thread = threading.Thread(target=second)
            thread.start()
            assert not second_done.wait(0.5)  # the second writer waits for the first to commit
            seen_while_open = store.backend.last_change()
        thread.join(30)
        assert second_done.is_set()
    log = {r.key: r.id for r in store.audit_log("/p/table/")}
    assert log["/p/table/SSB.DATES.json"] < log["/p/table/SSB.LINEORDER.json"]
    assert seen_while_open < log["/p/table/SSB.DATES.json"]
