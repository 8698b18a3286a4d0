"""One client connection of the Postgres wire front end: start-up (SSL refused or TLS when configured, the
project as the database, a server user signed in with a cleartext password, QUERY on the project), then the
simple and extended query protocols until Terminate.

Messages are read with pygwire's frontend decoder and written with its backend messages; result rows are
encoded in bulk (`rows.py`). Statements run one at a time in a worker thread (`executor.py`), so the event
loop that also serves HTTP stays responsive; a cancel request stops waiting for the running statement and
answers 57014, and rows not yet sent are dropped."""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pygwire.messages as m
from pygwire import ConnectionPhase, FrontendMessageDecoder, PygwireError, TransactionStatus

from precube.auth import User
from precube.errors import PrecubeError
from precube.metadata.paths import check_project_name
from precube.server.pgwire import placeholders
from precube.server.pgwire.cursors import Cursor
from precube.server.pgwire.executor import Executor, Outcome
from precube.server.pgwire.rows import data_rows, plain_text_rows
from precube.server.pgwire.session_settings import SessionSettings, command_line_options
from precube.server.pgwire.sqlstate import PgError
from precube.server.pgwire.statements import Kind, Statement, classify, split
from precube.server.pgwire.types import TEXT
from precube.service.principal import Principal

if TYPE_CHECKING:
    from precube.server.pgwire.listener import PgServer

LOG = logging.getLogger("precube.pgwire")
ROWS_PER_WRITE = 8_192  # DataRows written (and the client's reading awaited) at a time
INLINE_CELLS = 4_096  # answers of at most this many values are encoded on the event loop, not in a worker thread
_CANCELED = PgError("57014", "canceling statement due to user request")
_SQL_LEVEL = (Kind.PREPARE, Kind.EXECUTE, Kind.DECLARE, Kind.FETCH, Kind.MOVE, Kind.CLOSE)


@dataclass
class Prepared:
    statement: Statement
    param_types: list[int]


@dataclass
class Portal:
    prepared: Prepared
    values: list[Any]  # the bound literals
    formats: list[int]  # result column formats
    outcome: Outcome | None = None
    sent: int = 0  # rows already sent (Execute with a row limit)


@dataclass
class _Start:
    user: User
    project: str
    session_settings: SessionSettings


@dataclass
class Connection:
    server: PgServer
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    pid: int
    secret: bytes
    decoder: FrontendMessageDecoder = field(default_factory=FrontendMessageDecoder)
    status: TransactionStatus = TransactionStatus.IDLE
    prepared: dict[str, Prepared] = field(default_factory=dict)
    portals: dict[str, Portal] = field(default_factory=dict)
    cursors: dict[str, Cursor] = field(default_factory=dict)  # SQL-level cursors (DECLARE), by name
    canceled: asyncio.Event = field(default_factory=asyncio.Event)
    over_cap: bool = False  # opened past `[server] pg_max_connections`: refused at its start-up message (53300)
    _failed: bool = False  # an extended-protocol error: skip messages until Sync
    _out: list[bytes] = field(default_factory=list)  # messages queued, not yet written (`_send`)
    _reported: list[tuple[str, str]] = field(default_factory=list)  # ParameterStatus due before ReadyForQuery
    _executor: Executor | None = None

    # -- the loop ------------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            started = await self._start()
            if started is None:
                return
            self._executor = Executor(self.server, started.user, started.project, started.session_settings)
            await self._serve()
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError, ssl.SSLError):
            pass  # the client went away (or stalled during start-up)
        except PgError as err:
            await self._fatal(err)
        except Exception:  # a bug ends this connection only; the server goes on
            LOG.exception("pg connection %d failed", self.pid)
            await self._fatal(PgError("XX000", "internal error; see the server log"))
        finally:
            self.writer.close()

    async def _next(self) -> m.PGMessage | None:
        """The next message from the client (None at the end of the stream). Each is read whole by its length
        before it is decoded, so a length over the limit is refused before its bytes are waited for."""
        startup = self.decoder.phase == ConnectionPhase.STARTUP  # no type byte before the length
        try:
            head = await self.reader.readexactly(4 if startup else 5)
        except asyncio.IncompleteReadError as err:
            if err.partial:
                raise
            return None
        length = int.from_bytes(head[-4:], "big")
        if length < 4 or length - 4 > self.server.max_message_bytes:
            raise PgError("54000", f"a message of {length} bytes; the limit is {self.server.max_message_bytes}", True)
        self.decoder.feed(head + await self.reader.readexactly(length - 4))
        try:
            message = next(self.decoder, None)
        except (PygwireError, UnicodeDecodeError) as err:
            raise PgError("08P01", f"invalid message from the client: {err}", fatal=True) from err
        if message is None:
            raise PgError("08P01", "invalid message from the client", fatal=True)
        return message

    def _send(self, *messages: m.PGMessage) -> None:
        """Queue messages: they are written together at the next flush (as PostgreSQL does, at Sync, Flush or
        the end of a simple query), one write for a statement's whole answer rather than one per message."""
        self._out.extend(message.to_wire() for message in messages)

    def _write(self) -> None:
        if self._out:
            self.writer.write(b"".join(self._out))
            self._out.clear()

    async def _flush(self) -> None:
        self._write()
        await self.writer.drain()

    async def _fatal(self, err: PgError) -> None:
        err.fatal = True
        try:
            self._send(m.ErrorResponse(fields=err.fields()))
            await self._flush()
        except ConnectionError:
            pass

    # -- start-up ------------------------------------------------------------------------------------

    async def _start(self) -> _Start | None:
        timeout = self.server.startup_timeout_s
        async with asyncio.timeout(timeout):
            while True:
                message = await self._next()
                if message is None:
                    return None
                if isinstance(message, m.CancelRequest):
                    self.server.cancel(message.process_id, message.secret_key)
                    return None
                if isinstance(message, m.GSSEncRequest):
                    self.writer.write(b"N")
                elif isinstance(message, m.SSLRequest):
                    await self._ssl()
                elif isinstance(message, m.StartupMessage):
                    return await self._startup(message)
                else:
                    raise PgError("08P01", f"expected a startup message, not {type(message).__name__}", fatal=True)

    async def _ssl(self) -> None:
        context = self.server.tls
        if context is None:
            self.writer.write(b"N")
            return
        self.writer.write(b"S")
        await self.writer.drain()
        await self.writer.start_tls(context)

    async def _startup(self, message: m.StartupMessage) -> _Start:
        if message.protocol_version >> 16 != 3:
            raise PgError("0A000", f"unsupported frontend protocol {message.protocol_version >> 16}", fatal=True)
        if self.over_cap:
            limit = self.server.max_connections
            raise PgError("53300", f"sorry, too many clients already (at most {limit})", fatal=True)
        options = [key for key in message.params if key.startswith("_pq_.")]
        if message.protocol_version & 0xFFFF or options:
            self._send(m.NegotiateProtocolVersion(newest_minor=0, unrecognized=options))
        user_name = message.params.get("user", "")
        project = message.params.get("database") or user_name
        if not user_name:
            raise PgError("28000", "no user name given in the start-up message", fatal=True)
        self._send(m.AuthenticationCleartextPassword())
        await self._flush()
        self.decoder.phase = ConnectionPhase.AUTHENTICATING
        answer = await self._next()
        if not isinstance(answer, m.PasswordMessage) or not isinstance(answer.password, str):
            raise PgError("08P01", "expected a password message", fatal=True)
        self.decoder.phase = ConnectionPhase.READY
        state = self.server.state
        try:
            peer = self.writer.get_extra_info("peername")
            user = await state.signin(user_name, answer.password, peer[0] if isinstance(peer, tuple) else None)
            check_project_name(project)
            state.queries.authorise(Principal(user.username, project))  # checked again for every statement
            state.store.require_project(project)
        except PrecubeError as err:
            raise PgError.of(err, fatal=True) from err
        settings = SessionSettings(user.username, message.params.get("application_name", ""))
        for key, value in message.params.items():
            if key not in ("user", "database", "options", "replication") and not key.startswith("_pq_."):
                settings.set(key, value)
        for key, value in command_line_options(message.params.get("options", "")):
            settings.set(key, value)
        self._send(m.AuthenticationOk())
        self._send(*(m.ParameterStatus(name=k, value=v) for k, v in settings.reported()))
        self._send(m.BackendKeyData(process_id=self.pid, secret_key=self.secret))
        self._send(m.ReadyForQuery(status=self.status))
        await self._flush()
        LOG.info("pg connection %d: user=%s project=%s", self.pid, user.username, project)
        return _Start(user, project, settings)

    # -- queries -------------------------------------------------------------------------------------

    async def _serve(self) -> None:
        while (message := await self._next()) is not None:
            if isinstance(message, m.Terminate):
                return
            if isinstance(message, m.Query):
                await self._simple(message.query_string)
            elif isinstance(message, m.Sync):
                self._failed = False
                if self.status == TransactionStatus.IDLE:
                    self.portals.clear()
                await self._ready()
            elif isinstance(message, m.Flush):
                await self._flush()
            elif self._failed:
                continue  # after an error, the extended protocol skips to the next Sync
            else:
                try:
                    await self._extended(message)
                except PgError as err:
                    self._error(err)
                    self._failed = True
                    await self._flush()

    def _error(self, err: PgError) -> None:
        if self.status == TransactionStatus.IN_TRANSACTION:
            self.status = TransactionStatus.ERROR_TRANSACTION
        self._send(m.ErrorResponse(fields=err.fields()))

    async def _simple(self, sql: str) -> None:
        assert self._executor is not None
        try:
            texts = split(sql, self._executor.max_chars)
            for text in texts:
                statement = classify(text, self._executor.max_depth)
                if statement.params:
                    raise PgError("08P01", f"there is no parameter ${statement.params} (no values are bound)")
                outcome = await self._execute(statement, [])
                await self._answer(outcome, outcome.formats or [], 0, describe=True, portal=None)
        except PgError as err:
            self._error(err)
        await self._ready()

    async def _ready(self) -> None:
        """ReadyForQuery, after the settings changed since the last one (as PostgreSQL reports them)."""
        self._send(*(m.ParameterStatus(name=k, value=v) for k, v in self._reported))
        self._reported.clear()
        self._send(m.ReadyForQuery(status=self.status))
        await self._flush()

    async def _extended(self, message: m.PGMessage) -> None:
        if isinstance(message, m.Parse):
            await self._parse(message)
        elif isinstance(message, m.Bind):
            self._bind(message)
        elif isinstance(message, m.Describe):
            await self._describe(message)
        elif isinstance(message, m.Execute):
            portal = self._portal(message.portal)
            if portal.outcome is None:
                portal.outcome = await self._execute(portal.prepared.statement, portal.values)
            await self._answer(portal.outcome, portal.formats, message.max_rows, describe=False, portal=portal)
        elif isinstance(message, m.Close):
            (self.prepared if message.kind == "S" else self.portals).pop(message.name, None)
            if message.kind != "S" and message.name:  # a SQL-level cursor is a portal too
                self.cursors.pop(message.name, None)
            self._send(m.CloseComplete())
        else:
            raise PgError("0A000", f"{type(message).__name__} messages are not supported")

    async def _parse(self, message: m.Parse) -> None:
        assert self._executor is not None
        if message.statement and message.statement in self.prepared:
            raise PgError("42P05", f'prepared statement "{message.statement}" already exists')
        statement = classify(message.query, self._executor.max_depth)
        self._not_aborted(statement)
        types = list(message.param_types) + [0] * max(0, statement.params - len(message.param_types))
        self.prepared[message.statement] = Prepared(statement, types)
        self._send(m.ParseComplete())

    def _bind(self, message: m.Bind) -> None:
        prepared = self.prepared.get(message.statement)
        if prepared is None:
            raise PgError("26000", f'prepared statement "{message.statement}" does not exist')
        self._not_aborted(prepared.statement)
        given, wanted = len(message.param_values), len(prepared.param_types)
        if given != wanted:
            raise PgError("08P01", f"bind message supplies {given} parameters, but the statement requires {wanted}")
        formats = message.param_formats
        values = [
            placeholders.literal(raw, oid, (formats[0] if len(formats) == 1 else formats[i] if formats else 0) == 1)
            for i, (raw, oid) in enumerate(zip(message.param_values, prepared.param_types, strict=True))
        ]
        self.portals[message.portal] = Portal(prepared, values, list(message.result_formats))
        self._send(m.BindComplete())

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise PgError("34000", f'portal "{name}" does not exist')
        return portal

    async def _describe(self, message: m.Describe) -> None:
        if message.kind == "S":
            prepared = self.prepared.get(message.name)
            if prepared is None:
                raise PgError("26000", f'prepared statement "{message.name}" does not exist')
            self._send(m.ParameterDescription(type_oids=[oid or TEXT.oid for oid in prepared.param_types]))
            if not prepared.statement.kind.returns_rows:
                self._send(m.NoData())
                return
            if prepared.statement.kind == Kind.FETCH:  # its cursor's columns: describing moves no cursor
                self._send(Outcome(self._cursor(prepared.statement.name).table, "").description([]))
                return
            nulls = [placeholders.literal(None, 0, False)] * len(prepared.param_types)
            outcome = await self._execute(prepared.statement, nulls)  # its columns, with every parameter NULL
            self._send(outcome.description([]))
            return
        if message.name not in self.portals and message.name in self.cursors:  # a cursor is a portal too
            cursor = self.cursors[message.name]
            self._send(Outcome(cursor.table, "").description([1] if cursor.binary else []))
            return
        portal = self._portal(message.name)
        if portal.outcome is None:
            portal.outcome = await self._execute(portal.prepared.statement, portal.values)
        self._send(portal.outcome.description(portal.formats) if portal.outcome.table is not None else m.NoData())

    def _not_aborted(self, statement: Statement) -> None:
        """In a failed transaction block only COMMIT and ROLLBACK are taken (PostgreSQL checks at Parse, Bind and
        run alike)."""
        if self.status == TransactionStatus.ERROR_TRANSACTION and statement.kind not in (Kind.COMMIT, Kind.ROLLBACK):
            raise PgError("25P02", "current transaction is aborted, commands ignored until end of transaction block")

    async def _execute(self, statement: Statement, values: list[Any]) -> Outcome:
        """Run one statement in a worker thread; a cancel request stops the wait (57014)."""
        assert self._executor is not None
        self._not_aborted(statement)
        if statement.kind in _SQL_LEVEL:
            return await self._sql_level(statement, values)
        self.canceled.clear()
        started, begun = time.perf_counter(), time.monotonic()  # `begun`: the deadline of a statement without one
        work = asyncio.ensure_future(asyncio.to_thread(self._executor.run, statement, values))
        canceled = asyncio.ensure_future(self.canceled.wait())
        try:
            await asyncio.wait((work, canceled), return_when=asyncio.FIRST_COMPLETED)
        finally:
            canceled.cancel()
        if not work.done():
            self._executor.cancel()  # the engine is interrupted and frees its connection
            work.add_done_callback(lambda w: w.exception())  # the thread finishes alone; its answer is dropped
            raise _CANCELED
        try:
            outcome = work.result()
            if outcome.deadline is None:
                outcome.deadline = begun + self.server.state.settings.query.timeout_s
            if statement.kind == Kind.COMMIT and self.status == TransactionStatus.ERROR_TRANSACTION:
                outcome.tag = "ROLLBACK"  # as PostgreSQL answers the COMMIT of a failed transaction
        except PgError:
            raise
        except Exception as err:  # a bug must not drop the connection: answered as XX000, and logged
            LOG.exception("pg connection %d: %s failed", self.pid, statement.kind)
            raise PgError("XX000", f"internal error ({type(err).__name__}); see the server log") from err
        self._after(statement, outcome)
        # at DEBUG: the query history records every statement, as for the REST API (a line each cost ~0.4 ms of a
        # one-value answer's ~4 ms on the wire)
        LOG.debug(
            "pg %s %.1fms user=%s project=%s pid=%d",
            outcome.tag,
            (time.perf_counter() - started) * 1000,
            self._executor.user.username,
            self._executor.project,
            self.pid,
        )
        return outcome

    async def _sql_level(self, statement: Statement, values: list[Any]) -> Outcome:
        """SQL-level prepared statements and cursors: this connection's, in the namespaces the extended protocol's
        statements and portals use (a protocol-level statement can be EXECUTEd, a cursor Described)."""
        kind, name = statement.kind, statement.name
        if kind == Kind.PREPARE:
            assert statement.inner is not None
            if name in self.prepared:
                raise PgError("42P05", f'prepared statement "{name}" already exists')
            types = list(statement.types) + [0] * max(0, statement.inner.params - len(statement.types))
            self.prepared[name] = Prepared(statement.inner, types)
            return Outcome(None, "PREPARE")
        if kind == Kind.EXECUTE:
            prepared = self.prepared.get(name)
            if prepared is None:
                raise PgError("26000", f'prepared statement "{name}" does not exist')
            if len(statement.args) != len(prepared.param_types):
                raise PgError("42601", f'wrong number of parameters for prepared statement "{name}"')
            bound = [placeholders.argument(a, t) for a, t in zip(statement.args, prepared.param_types, strict=True)]
            return await self._execute(prepared.statement, bound)
        if kind == Kind.DECLARE:
            assert statement.inner is not None
            if not statement.hold and self.status != TransactionStatus.IN_TRANSACTION:
                raise PgError("25P01", "DECLARE CURSOR can only be used in transaction blocks")
            if name in self.cursors:
                raise PgError("42P03", f'cursor "{name}" already exists')
            answer = await self._execute(statement.inner, values)
            assert answer.table is not None
            # the answers a connection keeps are bounded together, as one answer is: cursors are not a way round it
            max_bytes = self.server.state.settings.query.max_result_bytes
            kept = answer.table.nbytes + sum(c.table.nbytes for c in self.cursors.values())
            if kept > max_bytes:
                raise PgError(
                    "54000",
                    f"the connection's open cursors would hold {kept:,} bytes, past [query] max_result_bytes "
                    f"({max_bytes:,}): CLOSE a cursor first",
                )
            self.cursors[name] = Cursor(answer.table, statement.hold, statement.scroll, statement.binary)
            return Outcome(None, "DECLARE CURSOR")
        if kind == Kind.CLOSE:
            if name == "ALL":
                self.cursors.clear()
                return Outcome(None, "CLOSE CURSOR ALL")
            self._cursor(name)
            del self.cursors[name]
            return Outcome(None, "CLOSE CURSOR")
        cursor = self._cursor(name)
        assert statement.direction is not None
        indexes, moved = cursor.move(name, statement.direction)
        if kind == Kind.MOVE:
            return Outcome(None, f"MOVE {moved}")
        return Outcome(cursor.rows(indexes), f"FETCH {moved}", formats=[1] if cursor.binary else None)

    def _cursor(self, name: str) -> Cursor:
        cursor = self.cursors.get(name)
        if cursor is None:
            raise PgError("34000", f'cursor "{name}" does not exist')
        return cursor

    def _after(self, statement: Statement, outcome: Outcome) -> None:
        """Transaction status, prepared statements and cursors after a statement (all else is the executor's)."""
        if statement.kind == Kind.BEGIN:
            self.status = TransactionStatus.IN_TRANSACTION
        elif statement.kind in (Kind.COMMIT, Kind.ROLLBACK):
            self.status = TransactionStatus.IDLE
            self.cursors = {k: c for k, c in self.cursors.items() if c.hold}  # WITHOUT HOLD ends with its block
        elif statement.kind == Kind.DEALLOCATE:
            if statement.name.upper() == "ALL":
                self.prepared.clear()
            elif self.prepared.pop(statement.name, None) is None:
                raise PgError("26000", f'prepared statement "{statement.name}" does not exist')
        self._reported += outcome.reported

    async def _answer(
        self, outcome: Outcome, formats: list[int], max_rows: int, *, describe: bool, portal: Portal | None
    ) -> None:
        """Send an outcome's rows (from where the portal stopped, at most `max_rows`; 0: all) and its tag."""
        if outcome.table is None:
            self._send(m.EmptyQueryResponse() if outcome.tag == "" else m.CommandComplete(tag=outcome.tag))
            return
        if describe:
            self._send(outcome.description(formats))
        start = portal.sent if portal is not None else 0
        # `[query] timeout_s` holds for encoding and sending too: the statement's deadline (from its arrival), or
        # from this Execute when it reads on from where an earlier one stopped (a client reading a portal by
        # pieces at its pace)
        timeout_s = self.server.state.settings.query.timeout_s
        deadline = outcome.deadline if start == 0 and outcome.deadline is not None else time.monotonic() + timeout_s
        total = outcome.table.num_rows
        # a small answer is encoded on the event loop: a worker thread's round trip costs more than its encoding
        small = total * outcome.table.num_columns <= INLINE_CELLS
        stop = min(total, start + max_rows) if max_rows > 0 else total
        plain = plain_text_rows(outcome.table, formats) if start == 0 and stop == total else None
        if plain is not None:  # written with the messages after it
            self._out.append(plain)
            encoded, pieces = [], range(0)
        else:
            encoded = outcome.encoded(formats) if small else await asyncio.to_thread(outcome.encoded, formats)
            pieces = range(start, stop, ROWS_PER_WRITE)
        for lo in pieces:
            if self.canceled.is_set():
                raise _CANCELED
            if time.monotonic() > deadline:
                raise PgError(
                    "57014",
                    f"the query and sending its answer took longer than the time limit of {timeout_s:g} s "
                    "([query] timeout_s)",
                )
            end = min(stop, lo + ROWS_PER_WRITE)
            chunk = data_rows(encoded, lo, end) if small else await asyncio.to_thread(data_rows, encoded, lo, end)
            self._out.append(chunk)
            if small:
                continue  # written with the messages after it
            self._write()
            # a client that stops reading is dropped at the deadline (TimeoutError ends the connection)
            async with asyncio.timeout_at(_loop_time(deadline)):
                await self.writer.drain()
        if portal is not None:
            portal.sent = stop
        if stop < total:
            self._send(m.PortalSuspended())
        elif (start > 0 or max_rows > 0) and outcome.tag.startswith("SELECT "):
            # a portal read by pieces: PostgreSQL counts the rows of this Execute (0 once it has run out)
            self._send(m.CommandComplete(tag=f"SELECT {stop - start}"))
        else:
            self._send(m.CommandComplete(tag=outcome.tag))


def _loop_time(deadline: float) -> float:
    """A `time.monotonic()` deadline on the event loop's clock (`asyncio.timeout_at`)."""
    return asyncio.get_running_loop().time() + (deadline - time.monotonic())
