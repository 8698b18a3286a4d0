"""The Arrow Flight SQL server on `[server] flight_port`: pyarrow's gRPC Flight server, started and stopped by the
HTTP application's lifespan beside the Postgres wire (one process, one `ServerState`), its calls run on
gRPC's threads.

Every call is signed in (`flight.auth`) and every statement and catalog read goes through the query service,
authorised there with the directory as it is at that moment, as REST's and the wire's are.

- Catalog commands (`CommandGetCatalogs`, `…DbSchemas`, `…Tables`, `…TableTypes`, `…SqlInfo`; `…PrimaryKeys`,
  `…ExportedKeys`, `…ImportedKeys` are empty): `GetFlightInfo` answers with the schema and a ticket that is the
  command itself; `DoGet` reads the catalog then. They list every project the user may query (the catalogs).
- A statement (`CommandStatementQuery`, or a prepared one's `CommandPreparedStatementQuery`): `GetFlightInfo`
  runs it (a cancelled call cancels it: `QueryService.cancel`, which is what ADBC's `adbc_cancel` does) and
  keeps the answer under a one-use ticket (`TicketStatementQuery`) for `DoGet`, which streams it as record
  batches of at most `BATCH_BYTES`. The answer is within the statement's bounds (`[query] max_result_rows`,
  `max_result_bytes`, `timeout_s`), as through every door. `CancelFlightInfo` drops an answer not yet read.
- Prepared statements: `CreatePreparedStatement` keeps the SQL under a handle; `DoPut` of parameter rows binds
  one row of values by the one binder (`service.parameters`: the statement's `?` marks, in order);
  `ClosePreparedStatement` forgets it.

Errors carry the error's one-line message and the gRPC code of its row in `service.errors` (INVALID_ARGUMENT,
NOT_FOUND, UNIMPLEMENTED, PERMISSION_DENIED, …) as far as pyarrow lets a server send it (`flight.errors`); the
trailers `x-precube-sqlstate` and `x-precube-grpc-code` carry its SQLSTATE and its own gRPC code (ADBC: the
error's `details`). The server is read-only: updates, Substrait plans and transactions are refused as not supported."""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.flight as flight

from precube.auth import Permission, User
from precube.errors import ConfigError, InvalidInputError, PrecubeError, UnsupportedError
from precube.query.catalog.description import CatalogDescription
from precube.server.flight import catalog, errors, messages, sqlinfo
from precube.server.flight.auth import Authenticate, Caller, HandshakeAnswer, Tokens
from precube.server.flight.errors import flight_error, unexpected
from precube.server.flight.watch import CallWatch
from precube.server.state import ServerState
from precube.service.errors import disposition
from precube.service.parameters import bind
from precube.service.principal import Principal
from precube.settings import ServerSettings

LOG = logging.getLogger("precube.flight")

BATCH_BYTES = 4 * 2**20  # a record batch's most bytes on the wire (gRPC clients' message limit is 16 MiB or more)
ANSWER_TTL_S = 120.0  # an answer not fetched within this is dropped
MAX_ANSWERS = 256  # answers waiting for their DoGet (the oldest dropped past it)
MAX_PREPARED = 4096  # prepared statements open (the oldest closed past it)
SQLSTATE_TRAILER, GRPC_CODE_TRAILER = "x-precube-sqlstate", "x-precube-grpc-code"  # on a failed call
ACTIONS = ("CreatePreparedStatement", "ClosePreparedStatement", "CancelFlightInfo")

F = TypeVar("F", bound=Callable[..., Any])


def answers_errors(method: F) -> F:
    """The handler's precube errors as Flight errors; anything unforeseen logged and answered INTERNAL."""

    @wraps(method)
    def wrapper(server: FlightSqlServer, context: flight.ServerCallContext, *args: Any) -> Any:
        try:
            return method(server, context, *args)
        except (flight.FlightError, errors.RefusalError):
            raise
        except PrecubeError as err:
            answer = disposition(err)  # the SQLSTATE and the gRPC code meant, whatever pyarrow can send
            context.add_trailer(SQLSTATE_TRAILER, answer.sqlstate)
            context.add_trailer(GRPC_CODE_TRAILER, answer.grpc)
            raise flight_error(err) from None
        except messages.UnknownCommandError as err:
            raise flight_error(InvalidInputError(str(err))) from None
        except Exception:
            LOG.exception("flight %s failed", method.__name__)
            raise unexpected() from None

    return wrapper  # type: ignore[return-value]


@dataclass
class Prepared:
    user: str
    project: str
    sql: str
    parameters: list[Any] | None = None


@dataclass
class Answer:
    user: str
    table: pa.Table
    expires: float = field(default_factory=lambda: time.monotonic() + ANSWER_TTL_S)


class FlightSqlServer(flight.FlightServerBase):  # type: ignore[misc]
    """Flight SQL over the server's state; listening once constructed, until `shutdown`."""

    def __init__(self, state: ServerState, host: str, port: int, loop: asyncio.AbstractEventLoop) -> None:
        settings = state.settings.server
        certificates = _certificates(settings)
        scheme = "grpc+tls" if certificates else "grpc+tcp"
        self.state = state
        self.tls = bool(certificates)
        self._answers: OrderedDict[bytes, Answer] = OrderedDict()
        self._prepared: OrderedDict[bytes, Prepared] = OrderedDict()
        self._lock = threading.Lock()
        self._watch = CallWatch(state.queries.cancel)
        self._info = sqlinfo.server_info(_version(), state.settings.query.timeout_s)
        factory = Authenticate(state.signin, state.directory.user, Tokens(), loop)
        errors.install()  # refusals sent as Arrow's exceptions carry no traceback
        super().__init__(
            f"{scheme}://{host}:{port}",
            auth_handler=HandshakeAnswer(),
            middleware={"auth": factory},
            tls_certificates=certificates,
        )

    def stopping(self) -> None:
        """The server is about to shut down: cancel the statements running and any that start."""
        self._watch.stop()

    # -- who calls, on what ----------------------------------------------------------------------------

    def _caller(self, context: flight.ServerCallContext) -> Caller:
        caller = context.get_middleware("auth")
        assert isinstance(caller, Caller)  # every call passes the middleware, or is refused there
        return caller

    def _principal(self, caller: Caller) -> Principal:
        if not caller.project:
            raise InvalidInputError("name the project: the x-precube-project header (the catalog a statement runs in)")
        return Principal(caller.user.username, caller.project, tuple(caller.user.groups))

    def _projects(self, user: User, catalog_name: str | None) -> list[CatalogDescription]:
        """The catalogs of the projects `user` may query now (the one named, when a catalog is given)."""
        names = [p.name for p in self.state.store.list_projects()]
        if catalog_name is not None:
            names = [n for n in names if n == catalog_name]
        held = {n: self.state.directory.permission(user, n) for n in names}
        allowed = [n for n in names if (level := held[n]) is not None and level >= Permission.QUERY]
        return [self.state.queries.catalog(Principal(user.username, n, tuple(user.groups))) for n in allowed]

    # -- GetFlightInfo and DoGet -----------------------------------------------------------------------

    @answers_errors
    def get_flight_info(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor) -> Any:
        command = _command(descriptor)
        name = messages.name_of(command)
        caller = self._caller(context)
        if name == "CommandStatementQuery" and command.HasField("transaction_id"):
            raise _unsupported("a transaction")
        if name == "CommandStatementQuery":
            return self._execute(context, descriptor, caller, self._principal(caller), command.query, None)
        if name == "CommandPreparedStatementQuery":
            prepared = self._prepared_of(caller, command.prepared_statement_handle)
            principal = Principal(caller.user.username, prepared.project, tuple(caller.user.groups))
            return self._execute(context, descriptor, caller, principal, prepared.sql, prepared.parameters)
        table = self._catalog_answer(caller, command)
        ticket = flight.Ticket(descriptor.command)  # a catalog ticket is its command: DoGet reads it anew
        return flight.FlightInfo(table.schema, descriptor, [flight.FlightEndpoint(ticket, [])], -1, -1)

    @answers_errors
    def get_schema(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor) -> Any:
        command = _command(descriptor)
        if messages.name_of(command) in ("CommandStatementQuery", "CommandPreparedStatementQuery"):
            raise _unsupported("the schema of a statement before it runs")
        return flight.SchemaResult(self._catalog_answer(self._caller(context), command).schema)

    @answers_errors
    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> Any:
        command = messages.unpack(ticket.ticket)
        caller = self._caller(context)
        if messages.name_of(command) == "TicketStatementQuery":
            with self._lock:
                answer = self._answers.get(command.statement_handle)
                if answer is None or answer.user != caller.user.username:
                    raise InvalidInputError("the ticket's answer is gone: fetched already, cancelled or expired")
                del self._answers[command.statement_handle]
            return flight.RecordBatchStream(_batched(answer.table))
        return flight.RecordBatchStream(self._catalog_answer(caller, command))

    def _execute(
        self,
        context: flight.ServerCallContext,
        descriptor: flight.FlightDescriptor,
        caller: Caller,
        principal: Principal,
        sql: str,
        parameters: list[Any] | None,
    ) -> Any:
        queries = self.state.queries
        started = time.perf_counter()
        text = bind(sql, parameters)  # bound once: the memory lane and the run see the same statement
        result = queries.answer_from_memory(principal, text)
        if result is None:
            with self._watch.watching(context) as watch:  # cancelled with its call (`flight.watch`)
                result = queries.run_here(principal, text, started=watch).result()
        table = result.table
        statement_handle = secrets.token_bytes(16)
        self._keep(statement_handle, Answer(caller.user.username, table))
        # at DEBUG: the query history records every statement, as for the REST API (a line each cost ~0.4 ms)
        LOG.debug(
            "flight %.1fms user=%s project=%s rows=%d engine=%s",
            (time.perf_counter() - started) * 1000,
            principal.user,
            principal.project,
            table.num_rows,
            result.engine,
        )
        ticket = flight.Ticket(messages.pack(messages.new("TicketStatementQuery", statement_handle=statement_handle)))
        return flight.FlightInfo(
            table.schema, descriptor, [flight.FlightEndpoint(ticket, [])], table.num_rows, table.nbytes
        )

    def _keep(self, key: bytes, answer: Answer) -> None:
        now = time.monotonic()
        with self._lock:
            for stale in [k for k, a in self._answers.items() if a.expires < now]:
                del self._answers[stale]
            self._answers[key] = answer
            while len(self._answers) > MAX_ANSWERS:
                self._answers.popitem(last=False)

    def _catalog_answer(self, caller: Caller, command: Any) -> pa.Table:
        name = messages.name_of(command)
        user = caller.user
        if name == "CommandGetCatalogs":
            return catalog.catalogs(d.project for d in self._projects(user, None))
        if name == "CommandGetDbSchemas":
            found = self._projects(user, _optional(command, "catalog"))
            return catalog.db_schemas(found, _optional(command, "db_schema_filter_pattern"))
        if name == "CommandGetTables":
            return catalog.tables(
                self._projects(user, _optional(command, "catalog")),
                _optional(command, "db_schema_filter_pattern"),
                _optional(command, "table_name_filter_pattern"),
                list(command.table_types),
                command.include_schema,
            )
        if name == "CommandGetTableTypes":
            return catalog.table_types()
        if name == "CommandGetSqlInfo":
            return sqlinfo.answer(self._info, command.info)
        if name == "CommandGetPrimaryKeys":
            return catalog.PRIMARY_KEYS.empty_table()  # precube's tables declare no keys
        if name in ("CommandGetExportedKeys", "CommandGetImportedKeys"):
            return catalog.FOREIGN_KEYS.empty_table()
        raise _unsupported(name)

    # -- prepared statements ---------------------------------------------------------------------------

    def _prepared_of(self, caller: Caller, handle: bytes) -> Prepared:
        with self._lock:
            found = self._prepared.get(handle)
        if found is None or found.user != caller.user.username:
            raise InvalidInputError("no such prepared statement: closed, or never created on this server")
        return found

    @answers_errors
    def do_put(
        self,
        context: flight.ServerCallContext,
        descriptor: flight.FlightDescriptor,
        reader: flight.MetadataRecordBatchReader,
        writer: flight.FlightMetadataWriter,
    ) -> None:
        command = _command(descriptor)
        if messages.name_of(command) != "CommandPreparedStatementQuery":
            raise _unsupported(f"{messages.name_of(command)} (precube is read-only)")
        prepared = self._prepared_of(self._caller(context), command.prepared_statement_handle)
        rows = reader.read_all()
        if rows.num_rows > 1:
            raise InvalidInputError(f"bind one row of parameters to a query, not {rows.num_rows}")
        prepared.parameters = [column[0].as_py() for column in rows.columns] if rows.num_rows else None
        handle = command.prepared_statement_handle
        writer.write(messages.new("DoPutPreparedStatementResult", prepared_statement_handle=handle).SerializeToString())

    # -- actions ---------------------------------------------------------------------------------------

    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return [(name, "") for name in ACTIONS]

    @answers_errors
    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        caller = self._caller(context)
        body = action.body.to_pybytes() if action.body is not None else b""
        if action.type == "CreatePreparedStatement":
            request = messages.unpack(body, "ActionCreatePreparedStatementRequest")
            if request.HasField("transaction_id"):
                raise _unsupported("a transaction")
            principal = self._principal(caller)
            self.state.queries.authorise(principal)
            self.state.store.require_project(principal.project)
            handle = secrets.token_bytes(16)
            with self._lock:
                self._prepared[handle] = Prepared(principal.user, principal.project, request.query)
                while len(self._prepared) > MAX_PREPARED:
                    self._prepared.popitem(last=False)
            result = messages.new("ActionCreatePreparedStatementResult", prepared_statement_handle=handle)
            return iter([messages.pack(result)])
        if action.type == "ClosePreparedStatement":
            request = messages.unpack(body, "ActionClosePreparedStatementRequest")
            with self._lock:
                found = self._prepared.get(request.prepared_statement_handle)
                if found is not None and found.user == caller.user.username:
                    del self._prepared[request.prepared_statement_handle]
            return iter([])
        if action.type == "CancelFlightInfo":
            return iter([self._cancel(caller, body)])
        raise _unsupported(f"the action {action.type}")

    def _cancel(self, caller: Caller, body: bytes) -> bytes:
        """CancelFlightInfo: the answers of the FlightInfo's tickets dropped (a statement runs within its
        GetFlightInfo call: cancelling that call cancels it). CANCELLED (1) once none is left to read."""
        info = flight.FlightInfo.deserialize(messages.parse("CancelFlightInfoRequest", body).info)
        for endpoint in info.endpoints:
            try:
                ticket = messages.unpack(endpoint.ticket.ticket)
            except messages.UnknownCommandError:
                continue
            if messages.name_of(ticket) == "TicketStatementQuery":
                with self._lock:
                    answer = self._answers.get(ticket.statement_handle)
                    if answer is not None and answer.user == caller.user.username:
                        del self._answers[ticket.statement_handle]
        result = messages.new("CancelFlightInfoResult", status=messages.CANCEL_STATUS_CANCELLED)
        return bytes(result.SerializeToString())


def _command(descriptor: flight.FlightDescriptor) -> Any:
    if descriptor.descriptor_type != flight.DescriptorType.CMD:
        raise InvalidInputError("a Flight SQL descriptor is a command, not a path")
    return messages.unpack(descriptor.command)


def _optional(message: Any, name: str) -> str | None:
    return getattr(message, name) if message.HasField(name) else None


def _unsupported(what: str) -> Exception:
    return flight_error(UnsupportedError(f"{what} is not supported by precube's Flight SQL server"))


def _batched(table: pa.Table) -> pa.Table:
    """The answer in record batches of at most about `BATCH_BYTES` each (zero-copy slices)."""
    if table.num_rows == 0 or table.nbytes <= BATCH_BYTES:
        return table
    rows = max(1, table.num_rows * BATCH_BYTES // table.nbytes)
    return pa.Table.from_batches(table.to_batches(max_chunksize=rows), table.schema)


def _certificates(settings: ServerSettings) -> list[flight.CertKeyPair]:
    """The server's certificate (`pg_tls_cert` / `pg_tls_key`, the one TLS identity of its non-HTTP doors)."""
    if settings.pg_tls_cert is None or settings.pg_tls_key is None:
        return []
    try:
        cert, key = Path(settings.pg_tls_cert).read_bytes(), Path(settings.pg_tls_key).read_bytes()
        return [flight.CertKeyPair(cert=cert, key=key)]
    except OSError as err:
        raise ConfigError(f"[server] pg_tls_cert / pg_tls_key cannot be read for Flight SQL: {err}") from err


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("precube")
    except PackageNotFoundError:
        return "0"


@dataclass
class FlightListener:
    """The Flight SQL server of one `precube serve` process."""

    server: FlightSqlServer
    port: int

    @classmethod
    async def start(cls, state: ServerState, host: str, port: int, shared: bool = False) -> FlightListener | None:
        """Listen on host:port. `shared`: one of several `--workers` processes, of which the first to bind the port
        serves Flight SQL (pyarrow's gRPC server does not share a port): the others get None."""
        loop = asyncio.get_running_loop()
        try:
            server = await asyncio.to_thread(FlightSqlServer, state, host, port, loop)  # binds and starts listening
        except pa.ArrowException as err:
            if not shared:
                raise ConfigError(f"Arrow Flight SQL cannot listen on {host}:{port}: {err}") from err
            LOG.info("Arrow Flight SQL on %s:%d is served by another worker", host, port)
            return None
        LOG.info("Arrow Flight SQL on %s:%d%s", host, server.port, " (TLS)" if server.tls else "")
        return cls(server, server.port)

    async def stop(self) -> None:
        """Stop listening; the statements of the calls in progress are cancelled, and the calls end."""
        self.server.stopping()
        await asyncio.to_thread(self.server.shutdown)
