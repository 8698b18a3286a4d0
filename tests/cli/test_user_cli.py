"""`precube user …` and `precube acl …` on the metadata store: what they change, what they refuse, and the
password asked twice without echo (or read from stdin)."""

from __future__ import annotations

import getpass
import io
import json
from pathlib import Path

import pytest

from precube.auth import Directory, Permission
from precube.cli.app import run
from precube.metadata import open_store
from precube.settings import load_settings

PASSWORD = "Passw0rd!"


def _directory(home: Path) -> Directory:
    settings = load_settings(home=home)
    return Directory(open_store(settings.metadata_url, settings.metadata.table), refresh_s=0)


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().err.split())


def test_users_and_grants_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = ["--home", str(tmp_path)]
    assert run([*home, "project", "create", "sales"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{PASSWORD}\n"))
    assert run([*home, "user", "add", "root", "--admin", "--password-stdin"]) == 0
    asked = iter([PASSWORD, PASSWORD])
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": next(asked))  # asked twice, hidden
    assert run([*home, "user", "add", "alice", "--group", "ROLE_ANALYST"]) == 0
    directory = _directory(tmp_path)
    assert directory.authenticate("alice", PASSWORD).groups == ["ALL_USERS", "ROLE_ANALYST"]
    assert directory.authenticate("root", PASSWORD).is_admin

    assert run([*home, "acl", "grant", "sales", "alice", "read"]) == 0
    assert run([*home, "acl", "grant", "sales", "ROLE_ANALYST", "OPERATION", "--group"]) == 0
    assert directory.permission(directory.require_user("alice"), "sales") is Permission.OPERATION
    capsys.readouterr()
    assert run([*home, "acl", "list", "sales", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"type": "user", "name": "alice", "permission": "QUERY"},
        {"type": "group", "name": "ROLE_ANALYST", "permission": "OPERATION"},
    ]
    assert run([*home, "user", "list", "--format", "json"]) == 0
    listed = capsys.readouterr().out
    assert {u["username"] for u in json.loads(listed)} == {"root", "alice"} and "$2" not in listed

    monkeypatch.setattr("sys.stdin", io.StringIO("N3w-pass!\n"))
    assert run([*home, "user", "passwd", "alice", "--password-stdin"]) == 0
    assert directory.authenticate("alice", "N3w-pass!").username == "alice"

    assert run([*home, "acl", "revoke", "sales", "ROLE_ANALYST", "--group"]) == 0
    assert run([*home, "user", "delete", "alice", "--dry-run"]) == 0
    assert "would delete user alice and their grants on sales" in " ".join(capsys.readouterr().out.split())
    assert directory.user("alice") is not None
    assert run([*home, "user", "delete", "alice", "--yes"]) == 0
    assert directory.user("alice") is None and directory.acl("sales").entries == []


def test_the_cli_refuses_bad_users_and_grants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = ["--home", str(tmp_path)]
    assert run([*home, "project", "create", "sales"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{PASSWORD}\n"))
    assert run([*home, "user", "add", "root", "--admin", "--password-stdin"]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert run([*home, "user", "add", "bob", "--password-stdin"]) == 1
    assert "at least 8 characters" in _err(capsys)
    assert run([*home, "user", "add", "../x", "--password-stdin"]) == 1
    assert "invalid user name" in _err(capsys)
    assert run([*home, "acl", "grant", "sales", "nobody", "QUERY"]) == 1
    assert _err(capsys) == "error: user 'nobody' does not exist"
    assert run([*home, "acl", "grant", "sales", "root", "SUPER"]) == 1
    assert "unknown permission 'SUPER'" in _err(capsys)
    assert run([*home, "acl", "grant", "nope", "root", "QUERY"]) == 1
    assert "nope" in _err(capsys)
    assert run([*home, "user", "delete", "root", "--yes"]) == 1
    assert "last system admin" in _err(capsys)
    assert _directory(tmp_path).user("root") is not None
