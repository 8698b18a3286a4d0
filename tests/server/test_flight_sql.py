"""Arrow Flight SQL (`precube serve --flight-port`, issue 39) driven by real clients: ADBC's Flight SQL driver (Go's
client, through `adbc_driver_flightsql.dbapi`) and `pyarrow.flight` for the protocol's own calls. A server of the
module's own over project `ssb` whose SSB tables are file sources (statements are pushed down to DuckDB: no Spark),
with a model defining a computed column (listed with the table's columns, as through every door)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import adbc_driver_flightsql.dbapi as flightsql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from precube.auth import Permission
from precube.errors import ConfigError
from precube.metadata import Project, SourceType, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.query.errors import UnknownColumnError
from precube.server.flight import errors, messages
from precube.server.flight.server import BATCH_BYTES, FlightListener
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from precube.ssb.queries import SSB_QUERIES
from tests.query.oracle import DEFAULT_TOLERANCE, Case, Oracle, assert_same
from tests.server.conftest import server_settings
from tests.server.live import ADMIN, LiveServer, free_port, live_server
from tests.server.model_home import small_spec

PROJECT = "ssb"
READER = ("flight_reader", "Passw0rd!")  # QUERY on the project
STRANGER = ("flight_stranger", "Passw0rd!")  # no permission on it
SLOW = "select count(*) from ssb.lineorder a, ssb.lineorder b where (a.lo_orderkey * b.lo_revenue) % 9973 = 17"
HEADER = "adbc.flight.sql.rpc.call_header.x-precube-project"
ADBC_STATUS = {  # the ADBC status the Flight SQL driver gives a gRPC code
    "INVALID_ARGUMENT": adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT,
    "NOT_FOUND": adbc_driver_manager.AdbcStatusCode.NOT_FOUND,
    "PERMISSION_DENIED": adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED,
}


@pytest.fixture(scope="module")
def server(ssb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = server_settings(tmp_path_factory.mktemp("flight-home"))
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        store.create_project(Project(name=PROJECT, default_database="SSB"))
        for name in TABLES:
            load_file_table(store, PROJECT, ssb_dir / name, SourceType.PARQUET)
        create_model(store, PROJECT, parse_spec(small_spec("flight_model")))  # computed column V_REVENUE; no build
    settings.cache.enabled = False  # every statement runs (and can be cancelled)
    settings.query.timeout_s = 60
    settings.server.flight_port = free_port()
    live = LiveServer(settings, run_jobs=False)
    directory = live.state.directory
    for user, password in (READER, STRANGER):
        directory.add_user(user, password, [])
    directory.grant(PROJECT, READER[0], Permission.QUERY)
    yield live
    live.stop()


@pytest.fixture(scope="module")
def oracle(ssb_dir: Path) -> Iterator[Oracle]:
    found = Oracle(ssb_dir)
    yield found
    found.close()


def uri(server: LiveServer) -> str:
    return f"grpc://127.0.0.1:{server.settings.server.flight_port}"


def connect(server: LiveServer, user: tuple[str, str] = ADMIN, project: str | None = PROJECT) -> Any:
    options = {"username": user[0], "password": user[1]}
    if project is not None:
        options[HEADER] = project
    return flightsql.connect(uri(server), db_kwargs=options, autocommit=True)


@pytest.fixture(scope="module")
def adbc(server: LiveServer) -> Iterator[Any]:
    connection = connect(server)
    yield connection
    connection.close()


def test_get_objects_lists_the_projects_schemas_tables_and_columns(adbc: Any, server: LiveServer) -> None:
    described = server.state.queries.metadata(_principal()).description
    [catalog] = adbc.adbc_get_objects().read_all().to_pylist()
    assert catalog["catalog_name"] == PROJECT
    [schema] = catalog["catalog_db_schemas"]
    assert schema["db_schema_name"] == "SSB"
    listed = [(t["table_name"], [c["column_name"] for c in t["table_columns"]]) for t in schema["db_schema_tables"]]
    assert listed == [(t.name, [c.name for c in t.columns]) for t in described.tables]
    lineorder = dict(listed)["LINEORDER"]
    assert "V_REVENUE" in lineorder and lineorder[-1] == "V_REVENUE"  # the model's computed column, after the source's
    assert {t["table_type"] for t in schema["db_schema_tables"]} == {"TABLE"}
    schema_of = adbc.adbc_get_table_schema("LINEORDER", db_schema_filter="SSB", catalog_filter=PROJECT)
    assert schema_of.names == lineorder
    assert schema_of.field("LO_ORDERKEY").type == pa.int64()
    assert schema_of.field("V_REVENUE").metadata[b"precube:computed"] == b"1"
    assert adbc.adbc_get_table_types() == ["TABLE"]
    info = adbc.adbc_get_info()
    assert info["vendor_name"] == "precube"
    assert info["vendor_arrow_version"] == pa.__version__


@pytest.mark.parametrize("name", list(SSB_QUERIES))
def test_ssb_queries_equal_duckdb_on_the_raw_tables(name: str, adbc: Any, oracle: Oracle) -> None:
    sql = SSB_QUERIES[name]
    with adbc.cursor() as cursor:
        cursor.execute(sql)
        answer = cursor.fetch_arrow_table()
    expected = oracle.run(sql)
    assert answer.num_rows == expected.num_rows
    assert_same(
        Case(name, "", "pushdown", True, DEFAULT_TOLERANCE, False, expected.num_rows == 0, sql), expected, answer
    )


def test_a_large_answer_equals_duckdb(adbc: Any, oracle: Oracle) -> None:
    sql = "select * from ssb.lineorder"
    with adbc.cursor() as cursor:
        cursor.execute(sql)
        answer = cursor.fetch_arrow_table()
    expected = oracle.run(sql)
    assert answer.num_rows == expected.num_rows > 50_000
    expected = expected.rename_columns([n.lower() for n in expected.column_names])  # DuckDB keeps the files' case
    assert answer.column_names == expected.column_names
    keys = [("lo_orderkey", "ascending"), ("lo_linenumber", "ascending")]
    compared = ["lo_orderkey", "lo_linenumber", "lo_revenue", "lo_shipmode"]
    assert answer.sort_by(keys).select(compared).to_pylist() == expected.sort_by(keys).select(compared).to_pylist()


def test_a_prepared_statement_binds_its_parameters(adbc: Any, oracle: Oracle) -> None:
    sql = "select c_region, count(*) as n from ssb.customer where c_region = ? and c_custkey > ? group by c_region"
    with adbc.cursor() as cursor:
        cursor.execute(sql, ("ASIA", 10))
        answer = cursor.fetch_arrow_table()
        cursor.execute(sql, ("EUROPE", 0))  # the same statement again, other values
        again = cursor.fetch_arrow_table()
    assert answer.to_pylist() == [{"c_region": "ASIA", "n": _count(oracle, "c_region = 'ASIA' and c_custkey > 10")}]
    assert again.to_pylist() == [{"c_region": "EUROPE", "n": _count(oracle, "c_region = 'EUROPE' and c_custkey > 0")}]
    assert again.column("c_region").to_pylist() == ["EUROPE"]


def _count(oracle: Oracle, where: str) -> int:
    return int(oracle.run(f"select count(*) from ssb.customer where {where}").column(0)[0].as_py())


def test_a_refused_statement_is_an_error_with_its_one_line_message(adbc: Any) -> None:
    with adbc.cursor() as cursor, pytest.raises(adbc_driver_manager.Error) as refused:
        cursor.execute("select nope from ssb.lineorder")
    message = str(refused.value)
    assert "column NOPE" in message and "Traceback" not in message
    details = dict(refused.value.details)  # the call's trailers
    assert details[b"x-precube-sqlstate"] == b"42703"  # undefined_column, as through every door
    assert details[b"x-precube-grpc-code"] == b"NOT_FOUND"
    assert details[b"x-arrow-status-message-bin"].decode().startswith("column NOPE is in none")
    with adbc.cursor() as cursor, pytest.raises(adbc_driver_manager.Error, match="read-only|not allowed|DROP"):
        cursor.execute("drop table ssb.lineorder")


@pytest.mark.parametrize(
    ("sql", "status", "sqlstate"),
    [
        ("selec 1", "INVALID_ARGUMENT", "42601"),  # syntax_error
        ("select nope from ssb.lineorder", "NOT_FOUND", "42703"),  # undefined_column
        ("select * from ssb.nope", "NOT_FOUND", "42P01"),  # undefined_table
        ("select lo_orderkey from ssb.lineorder a, ssb.lineorder b", "INVALID_ARGUMENT", "42702"),  # ambiguous_column
        ("drop table ssb.lineorder", "INVALID_ARGUMENT", "25006"),  # read_only_sql_transaction
        ("select read_csv('/etc/passwd')", "PERMISSION_DENIED", "42501"),  # insufficient_privilege: an escape
    ],
)
def test_a_refused_statement_has_its_grpc_code_and_no_traceback(
    adbc: Any, sql: str, status: str, sqlstate: str
) -> None:
    with adbc.cursor() as cursor, pytest.raises(adbc_driver_manager.Error) as refused:
        cursor.execute(sql)
    assert refused.value.status_code == ADBC_STATUS[status], str(refused.value)  # the call's own gRPC code
    details = dict(refused.value.details)
    assert (details[b"x-precube-sqlstate"], details[b"x-precube-grpc-code"]) == (sqlstate.encode(), status.encode())
    message = str(refused.value)
    assert "Traceback" not in message and ".py" not in message and "site-packages" not in message, message


def test_time_outs_and_cancels_have_their_grpc_codes(adbc: Any, server: LiveServer) -> None:
    settings = server.state.settings.query
    limit, settings.timeout_s = settings.timeout_s, 0.5
    try:
        with adbc.cursor() as cursor, pytest.raises(adbc_driver_manager.Error) as timed_out:
            cursor.execute(SLOW)
    finally:
        settings.timeout_s = limit
    assert timed_out.value.status_code == adbc_driver_manager.AdbcStatusCode.TIMEOUT, str(timed_out.value)


def test_a_wrong_password_is_refused(server: LiveServer) -> None:
    with pytest.raises(adbc_driver_manager.Error, match="UNAUTHENTICATED") as refused:
        connect(server, (READER[0], "wrong-password")).close()
    assert refused.value.status_code == adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED


def test_every_call_is_authorised_on_the_project(server: LiveServer) -> None:
    reader = connect(server, READER)
    try:
        assert [c["catalog_name"] for c in reader.adbc_get_objects(depth="catalogs").read_all().to_pylist()] == [
            PROJECT
        ]
        with reader.cursor() as cursor:
            cursor.execute("select count(*) as n from ssb.dates")
            assert cursor.fetchone()[0] > 0
    finally:
        reader.close()
    stranger = connect(server, STRANGER)
    try:
        assert stranger.adbc_get_objects(depth="catalogs").read_all().num_rows == 0  # no project it may query
        with stranger.cursor() as cursor, pytest.raises(adbc_driver_manager.Error, match="QUERY") as refused:
            cursor.execute("select 1")
        assert refused.value.status_code == adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED
    finally:
        stranger.close()
    no_project = connect(server, READER, project=None)
    try:
        with no_project.cursor() as cursor, pytest.raises(adbc_driver_manager.Error, match="x-precube-project"):
            cursor.execute("select 1")
    finally:
        no_project.close()


def test_a_cancelled_statement_stops(adbc: Any, server: LiveServer) -> None:
    cursor = adbc.cursor()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            cursor.execute(SLOW)
        except BaseException as err:  # noqa: BLE001 (the test reads it)
            failure.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.state.queries.running() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.state.queries.running(), "the statement never started"
    started = time.monotonic()
    cursor.adbc_cancel()
    thread.join(30)
    assert not thread.is_alive() and failure, "the statement was not cancelled"
    assert "cancel" in str(failure[0]).lower()
    assert isinstance(failure[0], adbc_driver_manager.Error)
    assert failure[0].status_code == adbc_driver_manager.AdbcStatusCode.CANCELLED
    while server.state.queries.running() and time.monotonic() < started + 10:
        time.sleep(0.02)
    assert not server.state.queries.running(), "the server still runs the cancelled statement"
    cursor.close()


# -- the protocol through pyarrow.flight --------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(server: LiveServer) -> Iterator[tuple[flight.FlightClient, flight.FlightCallOptions]]:
    found = flight.connect(uri(server))
    token = found.authenticate_basic_token(*ADMIN)
    yield found, flight.FlightCallOptions(headers=[token, (b"x-precube-project", PROJECT.encode())])
    found.close()


def _info(client: tuple[flight.FlightClient, flight.FlightCallOptions], name: str, **fields: Any) -> Any:
    command = flight.FlightDescriptor.for_command(messages.pack(messages.new(name, **fields)))
    return client[0].get_flight_info(command, client[1])


def test_basic_sign_in_answers_a_bearer_token(client: tuple[flight.FlightClient, flight.FlightCallOptions]) -> None:
    name, value = client[0].authenticate_basic_token(*READER)
    assert (name, value[:7]) == (b"authorization", b"Bearer ")
    signed_in = flight.FlightCallOptions(headers=[(name, value)])
    command = flight.FlightDescriptor.for_command(messages.pack(messages.new("CommandGetCatalogs")))
    assert client[0].get_flight_info(command, signed_in).schema.names == ["catalog_name"]
    forged = flight.FlightCallOptions(headers=[(b"authorization", value[:-2] + b"xx")])
    with pytest.raises(flight.FlightUnauthenticatedError, match="token"):
        client[0].get_flight_info(command, forged)
    with pytest.raises(flight.FlightUnauthenticatedError, match="sign in"):
        client[0].get_flight_info(command)


def test_catalog_commands(client: tuple[flight.FlightClient, flight.FlightCallOptions]) -> None:
    def read(info: Any) -> pa.Table:
        return client[0].do_get(info.endpoints[0].ticket, client[1]).read_all()

    assert read(_info(client, "CommandGetCatalogs")).column("catalog_name").to_pylist() == [PROJECT]
    schemas = read(_info(client, "CommandGetDbSchemas", catalog=PROJECT, db_schema_filter_pattern="S%"))
    assert schemas.to_pylist() == [{"catalog_name": PROJECT, "db_schema_name": "SSB"}]
    tables = read(_info(client, "CommandGetTables", table_name_filter_pattern="%ORDER", include_schema=True))
    [row] = tables.to_pylist()
    assert (row["db_schema_name"], row["table_name"], row["table_type"]) == ("SSB", "LINEORDER", "TABLE")
    assert "V_REVENUE" in pa.ipc.read_schema(pa.py_buffer(row["table_schema"])).names
    info = read(_info(client, "CommandGetSqlInfo", info=[0, 3, 9]))
    assert info.column("info_name").to_pylist() == [0, 3, 9]
    assert [v.as_py() for v in info.column("value")] == ["precube", True, True]  # name, read-only, cancel
    with pytest.raises(pa.ArrowNotImplementedError, match="not supported"):  # UNIMPLEMENTED
        _info(client, "CommandStatementUpdate", query="delete from ssb.dates")


def test_cancel_flight_info_drops_an_unread_answer(
    client: tuple[flight.FlightClient, flight.FlightCallOptions],
) -> None:
    info = _info(client, "CommandStatementQuery", query="select count(*) as n from ssb.part")
    assert info.schema.names == ["n"] and info.total_records == 1
    body = messages.new("CancelFlightInfoRequest", info=info.serialize()).SerializeToString()
    [result] = list(client[0].do_action(flight.Action("CancelFlightInfo", body), client[1]))
    status = messages.parse("CancelFlightInfoResult", result.body.to_pybytes()).status
    assert status == messages.CANCEL_STATUS_CANCELLED
    with pytest.raises(pa.ArrowInvalid, match="gone"):
        client[0].do_get(info.endpoints[0].ticket, client[1]).read_all()


def test_do_get_streams_record_batches(client: tuple[flight.FlightClient, flight.FlightCallOptions]) -> None:
    info = _info(client, "CommandStatementQuery", query="select * from ssb.lineorder")
    assert info.total_bytes > BATCH_BYTES  # large enough to be sent in several batches
    reader = client[0].do_get(info.endpoints[0].ticket, client[1])
    batches = [chunk.data for chunk in reader]
    assert len(batches) > 1 and all(b.nbytes <= BATCH_BYTES * 1.1 for b in batches)
    assert sum(b.num_rows for b in batches) == info.total_records
    with pytest.raises(pa.ArrowInvalid, match="gone"):  # a ticket is read once
        client[0].do_get(info.endpoints[0].ticket, client[1]).read_all()


def _principal() -> Any:
    from precube.service.principal import Principal

    return Principal(ADMIN[0], PROJECT)


def test_tls_when_a_certificate_is_configured(server: LiveServer, tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    names = ["-addext", "subjectAltName=IP:127.0.0.1"]  # Go's TLS checks the address against the names
    subprocess.run([openssl, *request, *names, "-keyout", str(key), "-out", str(cert)], check=True, timeout=60)
    settings = server.settings.model_copy(deep=True)
    settings.server.flight_port, settings.server.preload = free_port(), False
    settings.server.pg_tls_cert, settings.server.pg_tls_key = str(cert), str(key)
    with live_server(settings, run_jobs=False) as tls:
        options = {
            "username": ADMIN[0],
            "password": ADMIN[1],
            HEADER: PROJECT,
            "adbc.flight.sql.client_option.tls_root_certs": cert.read_text(),
        }
        address = f"grpc+tls://127.0.0.1:{settings.server.flight_port}"
        with flightsql.connect(address, db_kwargs=options, autocommit=True) as conn, conn.cursor() as cursor:
            cursor.execute("select count(*) as n from ssb.part")
            assert cursor.fetchone()[0] > 0
        with pytest.raises(adbc_driver_manager.Error):  # plain gRPC is not answered on a TLS port
            connect(tls).close()


def test_a_port_taken_is_left_to_the_worker_serving_it(server: LiveServer) -> None:
    port = server.settings.server.flight_port
    assert port is not None
    assert asyncio.run(FlightListener.start(server.state, "127.0.0.1", port, shared=True)) is None  # --workers
    with pytest.raises(ConfigError, match="cannot listen"):  # a single process: the port must be its own
        asyncio.run(FlightListener.start(server.state, "127.0.0.1", port))


def test_a_malformed_command_is_refused_as_invalid(
    client: tuple[flight.FlightClient, flight.FlightCallOptions],
) -> None:
    with pytest.raises(pa.ArrowInvalid, match="not a protobuf Any"):  # INVALID_ARGUMENT
        client[0].get_flight_info(flight.FlightDescriptor.for_command(b"\x00garbage"), client[1])
    wrong_kind = messages.pack(messages.new("CommandGetCatalogs"))
    with pytest.raises(pa.ArrowInvalid, match="was expected"):
        list(client[0].do_action(flight.Action("CreatePreparedStatement", wrong_kind), client[1]))


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ("S%", ["SSB", "S_B"]),
        ("S_B", ["SSB", "S_B"]),
        ("S\\_B", ["S_B"]),
        ("%", ["SSB", "S_B", "X.Y"]),
        ("X.Y", ["X.Y"]),
    ],
)
def test_filter_patterns_are_like_patterns(pattern: str, matches: list[str]) -> None:
    from precube.server.flight.catalog import _like

    assert [name for name in ("SSB", "S_B", "X.Y") if _like(pattern, name)] == matches


def test_only_precubes_refusals_are_formatted_without_a_traceback() -> None:
    errors.install()
    try:
        raise ValueError("a bug")
    except ValueError as err:
        assert "Traceback" in "".join(traceback.format_exception(err))  # every other exception as before
    refusal = errors.flight_error(UnknownColumnError("column NOPE is in none of the tables"))
    assert isinstance(refusal, pa.ArrowKeyError)  # NOT_FOUND
    try:
        raise refusal
    except pa.ArrowKeyError as err:
        assert traceback.format_exception(type(err), err, err.__traceback__) == ["SQLSTATE 42703"]
