"""The one error map (`precube.service.errors`): every `PrecubeError` subclass resolves to a disposition every
door can use, subclasses inherit their base's unless listed, and `retryable` reaches REST and DB-API clients."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from starlette.responses import Response

import precube
from precube.cache.errors import CacheError, CacheUnavailableError
from precube.dbapi.local import _mapped
from precube.errors import InvalidInputError, PrecubeError
from precube.metadata.errors import NotFoundError, StoreUnavailableError, VersionConflictError
from precube.query.errors import EngineError, QueryError, SqlSyntaxError
from precube.remote import RemoteError
from precube.server.envelope import error, invalid_input, unexpected
from precube.server.pgwire.sqlstate import PgError
from precube.service.errors import _TABLE, GRPC_CODES, Disposition, disposition
from precube_client import errors as db
from precube_client.http import failed

_DEFINES_ERROR = re.compile(r"^class \w+\([^)]*Error\b", re.MULTILINE)


def _every_error() -> list[type[PrecubeError]]:
    """Every `PrecubeError` subclass in the package: the modules that define an error class are imported (not
    every module: some need Spark), then the subclasses collected recursively."""
    root = Path(precube.__file__).parent
    for path in sorted(root.rglob("*.py")):
        if _DEFINES_ERROR.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    found: list[type[PrecubeError]] = []
    pending = [PrecubeError]
    while pending:
        kind = pending.pop()
        found.append(kind)
        pending.extend(kind.__subclasses__())
    return sorted(set(found), key=lambda kind: f"{kind.__module__}.{kind.__qualname__}")


EVERY_ERROR = _every_error()


def _bare(kind: type[PrecubeError]) -> PrecubeError:
    """An instance without calling `__init__` (some take more than a message)."""
    err = kind.__new__(kind)
    err.message = "m"
    return err


def test_the_walk_finds_the_errors_defined_outside_the_errors_modules() -> None:
    names = {kind.__name__ for kind in EVERY_ERROR}
    expected = {"CacheUnavailableError", "JobTakenOverError", "LeaseLostError", "UnsupportedWarehouseError"}
    assert expected | {"SourceAccessError", "InvalidJobStateError", "RemoteError"} <= names
    assert len(EVERY_ERROR) >= 50


@pytest.mark.parametrize("kind", EVERY_ERROR, ids=lambda kind: kind.__name__)
def test_every_error_resolves_for_every_door(kind: type[PrecubeError]) -> None:
    how = disposition(_bare(kind))
    assert 400 <= how.http_status < 600
    assert re.fullmatch(r"[0-9A-Z]{5}", how.sqlstate), how.sqlstate
    assert how.grpc in GRPC_CODES
    pep249 = db.class_of(how.sqlstate)
    assert issubclass(pep249, db.DatabaseError)
    assert how.retryable is kind.retryable
    if how.http_status >= 500:  # the server's fault is never blamed on the statement
        assert pep249 in (db.OperationalError, db.InternalError), (kind, how)
    # gRPC clients retry UNAVAILABLE and ABORTED: exactly the errors that say a retry may succeed
    assert (how.grpc in ("UNAVAILABLE", "ABORTED")) is how.retryable, (kind, how)
    # a failure of the statement itself (shared by a single flight's waiters) is the caller's to fix, for good
    if kind.deterministic:
        assert how.http_status < 500 and not how.retryable, (kind, how)


@pytest.mark.parametrize("kind", [k for k in EVERY_ERROR if k not in _TABLE], ids=lambda kind: kind.__name__)
def test_an_unlisted_error_answers_as_its_base(kind: type[PrecubeError]) -> None:
    base = next(b for b in kind.__mro__[1:] if issubclass(b, PrecubeError))
    mine, its = disposition(_bare(kind)), disposition(_bare(base))
    assert (mine.http_status, mine.sqlstate, mine.grpc) == (its.http_status, its.sqlstate, its.grpc)


def test_a_cache_down_is_503_like_any_cache_error_not_a_400() -> None:
    assert disposition(CacheUnavailableError("down")) == disposition(CacheError("down"))
    assert disposition(CacheUnavailableError("down")) == Disposition(503, "58000", "UNAVAILABLE", retryable=True)
    assert PgError.of(CacheUnavailableError("down")).sqlstate == "58000"


def test_the_default_is_an_input_error_and_an_instance_may_say_it_is_retryable() -> None:
    assert disposition(PrecubeError("x")) == Disposition(400, "42000", "INVALID_ARGUMENT", retryable=False)
    assert disposition(InvalidInputError("x")) == disposition(PrecubeError("x"))
    err = QueryError("x")
    err.retryable = True
    assert disposition(err).retryable is True and disposition(QueryError("x")).retryable is False


@pytest.mark.parametrize("kind", EVERY_ERROR, ids=lambda kind: kind.__name__)
def test_the_dbapi_raises_the_class_a_postgres_driver_raises_over_the_wire(kind: type[PrecubeError]) -> None:
    psycopg_errors = pytest.importorskip("psycopg.errors")
    import psycopg

    sqlstate = disposition(_bare(kind)).sqlstate
    try:
        theirs = psycopg_errors.lookup(sqlstate)
    except KeyError:
        theirs = psycopg_errors.get_base_exception(sqlstate)
    assert issubclass(theirs, getattr(psycopg, db.class_of(sqlstate).__name__)), (kind, sqlstate, theirs)


@pytest.mark.parametrize(
    ("sqlstate", "kind"),
    [
        ("22012", db.DataError),
        ("23505", db.IntegrityError),
        ("0A000", db.NotSupportedError),
        ("42P01", db.ProgrammingError),
        ("3D000", db.ProgrammingError),
        ("28P01", db.OperationalError),
        ("40001", db.OperationalError),
        ("54000", db.OperationalError),
        ("57014", db.OperationalError),
        ("F0000", db.OperationalError),
        ("XX000", db.InternalError),
        ("ZZ999", db.DatabaseError),
    ],
)
def test_the_pep249_class_follows_the_sqlstate_class(sqlstate: str, kind: type[db.Error]) -> None:
    assert db.class_of(sqlstate) is kind


def _body(response: Response) -> dict[str, object]:
    found: dict[str, object] = json.loads(response.body)
    return found


def test_rest_answers_a_retryable_failure_with_retry_after() -> None:
    response = error(VersionConflictError("the model changed meanwhile"), "rid-1")
    assert response.status_code == 409 and response.headers["retry-after"] == "1"
    assert _body(response) == {
        "code": "999",
        "data": None,
        "msg": "the model changed meanwhile",
        "exception": "the model changed meanwhile",  # Kylin 5's error fields: kylinpy shows `exception`
        "stacktrace": None,
        "suggestion": None,
        "url": "",
        "error_code": "VERSION_CONFLICT",
        "sqlstate": "40001",
        "retryable": True,
        "request_id": "rid-1",
    }
    refused = error(SqlSyntaxError("cannot parse the SQL"))
    assert refused.status_code == 400 and "retry-after" not in refused.headers
    assert _body(refused)["retryable"] is False and _body(refused)["sqlstate"] == "42601"
    assert error(StoreUnavailableError("store down")).headers["retry-after"] == "1"


def test_rest_failures_outside_the_error_classes_carry_a_sqlstate_too() -> None:
    invalid = invalid_input([{"loc": ("body", "limit"), "msg": "must be positive"}])
    assert invalid.status_code == 400 and _body(invalid)["sqlstate"] == "42000"
    assert _body(invalid)["error_code"] == "INVALID_INPUT" and _body(invalid)["msg"] == "limit: must be positive"
    bug = unexpected(ZeroDivisionError("x"), "rid-2")
    assert bug.status_code == 500 and _body(bug)["sqlstate"] == "XX000" and _body(bug)["retryable"] is False


def test_the_local_dbapi_error_carries_sqlstate_and_retryable() -> None:
    with pytest.raises(db.OperationalError) as down, _mapped():
        raise StoreUnavailableError("the metadata store is down")
    assert down.value.retryable is True and down.value.sqlstate == "58000" and down.value.code == "STORE_UNAVAILABLE"
    with pytest.raises(db.DataError) as overflow, _mapped():
        raise EngineError("Out of Range Error: overflow in addition")
    assert overflow.value.retryable is False and overflow.value.sqlstate == "22000"
    assert str(overflow.value) == "Out of Range Error: overflow in addition"


def test_the_remote_dbapi_error_reads_the_envelope() -> None:
    conflict = error(VersionConflictError("stale"))
    raised = failed(conflict.status_code, bytes(conflict.body))
    assert isinstance(raised, db.OperationalError) and raised.retryable is True and raised.sqlstate == "40001"
    assert raised.code == "VERSION_CONFLICT" and raised.status == 409 and str(raised) == "stale"
    missing = error(NotFoundError("project nope not found"))
    found = failed(missing.status_code, bytes(missing.body))
    assert isinstance(found, db.ProgrammingError) and found.sqlstate == "3D000" and found.retryable is False


def test_the_remote_dbapi_falls_back_on_the_http_status_without_a_sqlstate() -> None:
    old = failed(404, json.dumps({"code": "999", "msg": "no such thing", "error_code": "NOT_FOUND"}).encode())
    assert isinstance(old, db.ProgrammingError) and old.sqlstate is None and old.retryable is False
    proxy = failed(502, b"<html>bad gateway</html>")
    assert isinstance(proxy, db.InternalError) and str(proxy) == "HTTP 502 from the server"


def test_a_remote_error_keeps_the_envelopes_retryable_for_the_cli() -> None:
    err = RemoteError("busy", "STORE_UNAVAILABLE", 503, "58000", retryable=True)
    assert disposition(err).retryable is True
