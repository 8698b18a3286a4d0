"""`precube table load` as a user expects: many files in one command, each named after itself; a directory of
files; one error line per failed file, the others loaded."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.cli.app import run
from precube.metadata import Table, open_store


def _tables(home: Path) -> dict[str, str | None]:
    with open_store(f"sqlite:///{home / 'metadata.db'}") as store, store.read("p") as tx:
        return {t.identity: t.location for t in tx.list(Table)}


def _home(tmp_path: Path) -> list[str]:
    home = ["--home", str(tmp_path / "home")]
    assert run([*home, "project", "create", "p", "-d", "D"]) == 0
    return home


def _csv(path: Path, text: str = "ID,NAME\n1,a\n2,b\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_many_files_are_tables_named_after_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = _home(tmp_path)
    files = [_csv(tmp_path / "csv" / "flights.csv"), _csv(tmp_path / "csv" / "airlines.csv")]
    assert run([*home, "table", "load", "-p", "p", *map(str, files)]) == 0
    assert _tables(tmp_path / "home") == {"D.FLIGHTS": str(files[0]), "D.AIRLINES": str(files[1])}


def test_a_directory_of_files_is_a_table_each_and_a_part_directory_one(tmp_path: Path) -> None:
    home = _home(tmp_path)
    data = tmp_path / "data"
    _csv(data / "airports.csv")
    _csv(data / "_SUCCESS", "")  # not data
    _csv(data / "README.md", "# the tables")  # not a table
    pq.write_table(pa.table({"X": [1, 2]}), _csv(data / "sales" / "part-00000.parquet", ""))
    pq.write_table(pa.table({"X": [3]}), _csv(data / "sales" / "part-00001.parquet", ""))
    assert run([*home, "table", "load", "-p", "p", str(data)]) == 0
    assert _tables(tmp_path / "home") == {"D.AIRPORTS": str(data / "airports.csv"), "D.SALES": str(data / "sales")}
    # with --name, the directory is one table whatever it holds
    _csv(tmp_path / "years" / "y2015.csv")
    _csv(tmp_path / "years" / "y2016.csv")
    assert run([*home, "table", "load", "-p", "p", str(tmp_path / "years"), "--name", "years"]) == 0
    assert _tables(tmp_path / "home")["D.YEARS"] == str(tmp_path / "years")


def test_each_failed_file_is_one_line_and_the_others_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = _home(tmp_path)
    good = _csv(tmp_path / "carriers.csv")
    bad_name = _csv(tmp_path / "flights-2015.csv")
    empty = _csv(tmp_path / "empty.parquet", "not parquet")
    capsys.readouterr()
    assert run([*home, "table", "load", "-p", "p", str(bad_name), str(good), str(empty)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2, err
    assert (
        err[0].startswith(f"error: {bad_name}: 'flights-2015' is not a table name") and "--name FLIGHTS_2015" in err[0]
    )
    assert err[1].startswith(f"error: {empty}: cannot read"), err
    assert set(_tables(tmp_path / "home")) == {"D.CARRIERS"}
    # the suggested name loads it
    assert run([*home, "table", "load", "-p", "p", str(bad_name), "--name", "FLIGHTS_2015"]) == 0
    assert "D.FLIGHTS_2015" in _tables(tmp_path / "home")


def test_name_takes_one_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = _home(tmp_path)
    files = [str(_csv(tmp_path / "a.csv")), str(_csv(tmp_path / "b.csv"))]
    capsys.readouterr()
    assert run([*home, "table", "load", "-p", "p", *files, "--name", "X"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: --name names one table: give one PATH with it (without it, each file is named after itself)"
    assert _tables(tmp_path / "home") == {}
