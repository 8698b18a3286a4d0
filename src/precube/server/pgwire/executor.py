"""Running one classified statement for a connection (in a worker thread): queries on the server's session of
the project (result cache and query history included, the signed-in user recorded), catalog queries on the
catalog, settings and transaction control locally. The answer is an `Outcome`: rows as an Arrow table (None
for a command) and the command tag."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pygwire.messages as m
from sqlglot import exp

from precube.auth import User
from precube.errors import PrecubeError
from precube.query.cancel import Cancellation
from precube.server.pgwire import placeholders
from precube.server.pgwire.colnames import names as pg_names
from precube.server.pgwire.rows import Encoded, encode
from precube.server.pgwire.session_settings import REPORTED, SessionSettings
from precube.server.pgwire.sqlstate import PgError
from precube.server.pgwire.statements import Kind, Statement, precube_sql
from precube.server.pgwire.types import of_arrow, typmod
from precube.service.principal import Principal
from precube.service.queries import Handle

if TYPE_CHECKING:
    from precube.server.pgwire.listener import PgServer

_TAGS = {Kind.BEGIN: "BEGIN", Kind.COMMIT: "COMMIT", Kind.ROLLBACK: "ROLLBACK"}


@dataclass
class Outcome:
    table: pa.Table | None  # None: a command without rows
    tag: str  # CommandComplete's tag ("" with no table: an empty query)
    reported: list[tuple[str, str]] = field(default_factory=list)  # ParameterStatus to send
    formats: list[int] | None = None  # the simple protocol's result formats (None: text; a BINARY cursor's FETCH)
    deadline: float | None = None  # the statement's (`Cancellation`): encoding and sending end by it
    _encoded: dict[tuple[int, ...], list[Encoded]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def description(self, formats: list[int]) -> m.RowDescription:
        assert self.table is not None
        return m.RowDescription(
            fields=[
                m.FieldDescription(
                    name=f.name,
                    type_oid=of_arrow(f.type).oid,
                    type_size=of_arrow(f.type).size,
                    type_modifier=typmod(f.type),
                    format_code=formats[0] if len(formats) == 1 else formats[i] if formats else 0,
                )
                for i, f in enumerate(self.table.schema)
            ]
        )

    def encoded(self, formats: list[int]) -> list[Encoded]:
        """The columns encoded in these formats (once per portal, however many Executes read it)."""
        assert self.table is not None
        with self._lock:
            key = tuple(formats)
            if key not in self._encoded:
                self._encoded[key] = encode(self.table, formats)
            return self._encoded[key]


def answer(table: pa.Table, tag: str = "SELECT") -> Outcome:
    """The outcome of a statement answering `table` (SELECT: the tag counts the rows)."""
    return Outcome(table, f"{tag} {table.num_rows}" if tag == "SELECT" else tag)


def pg_named(table: pa.Table, tree: exp.Expr) -> pa.Table:
    """`table` with its columns named as PostgreSQL names the select items of `tree` (`colnames.py`); a `*`'s
    columns keep the engine's names (the items before the first `*` and after the last are placed by position)."""
    found = pg_names(tree)
    if found is None:
        return table
    width = table.num_columns
    if None not in found:
        if len(found) != width:
            return table
        return table.rename_columns(found)
    first, last = found.index(None), len(found) - 1 - found[::-1].index(None)
    after = len(found) - 1 - last
    if first + after > width:
        return table
    renamed = list(table.column_names)
    renamed[:first] = [n or "" for n in found[:first]]
    if after:
        renamed[width - after :] = [n or "" for n in found[last + 1 :]]
    return table.rename_columns(renamed)


@dataclass
class Executor:
    """What one connection runs its statements with: the server, the signed-in user, the project, settings."""

    server: PgServer
    user: User
    project: str
    session_settings: SessionSettings
    _running: Handle | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def principal(self) -> Principal:
        return Principal(self.user.username, self.project, tuple(self.user.groups))

    @property
    def max_chars(self) -> int:
        return self.server.state.settings.query.max_statement_chars

    @property
    def max_depth(self) -> int:
        return self.server.state.settings.query.max_nesting_depth

    def run(self, statement: Statement, values: list[Any]) -> Outcome:
        try:
            return self._run(statement, values)
        except PrecubeError as err:
            raise PgError.of(err) from err

    def _run(self, statement: Statement, values: list[Any]) -> Outcome:
        kind = statement.kind
        if kind == Kind.EMPTY:
            return Outcome(None, "")
        if kind in _TAGS:
            return Outcome(None, _TAGS[kind])
        if kind == Kind.NOOP:
            return Outcome(None, statement.tag)
        if kind == Kind.DEALLOCATE:
            return Outcome(None, "DEALLOCATE ALL" if statement.name.upper() == "ALL" else "DEALLOCATE")
        if kind == Kind.SET:
            name = self.session_settings.set(statement.name, statement.value)
            return Outcome(None, "SET", self._reported(name))
        if kind == Kind.RESET:
            name = self.session_settings.reset(statement.name)
            reported = self.session_settings.reported() if name == "all" else self._reported(name)
            return Outcome(None, "RESET", reported)
        if kind == Kind.SHOW:
            return self._show(statement.name)
        queries = self.server.state.queries
        if kind == Kind.PASSED:
            return self._query(statement.text)
        assert statement.tree is not None
        if kind == Kind.QUERY and not values:  # most statements: their SQL made once (`Statement.unbound_sql`)
            return self._renamed(self._query(statement.unbound_sql), statement.tree)
        bound = placeholders.bind(statement.tree, values)
        if kind == Kind.CATALOG:
            cancel = Cancellation(self.server.state.settings.query.timeout_s)  # the statement's deadline
            metadata = queries.metadata(self.principal)
            table = self.server.catalog.answer(metadata, self.project, bound, self.session_settings, cancel)
            found = answer(pg_named(table, statement.tree))
            found.deadline = cancel.deadline
            return found
        if kind == Kind.EXPLAIN:
            text = queries.explain(self.principal, precube_sql(bound)).text()
            return answer(pa.table({"QUERY PLAN": text.splitlines()}), tag="EXPLAIN")
        return self._renamed(self._query(precube_sql(bound)), statement.tree)

    @staticmethod
    def _renamed(found: Outcome, tree: exp.Expr) -> Outcome:
        assert found.table is not None  # a query's answer has rows
        found.table = pg_named(found.table, tree)  # PostgreSQL's column names, on the wire only
        return found

    def _query(self, text: str) -> Outcome:
        """`text` run by the query service in this worker thread (authorised now: a grant revoked since sign-in
        stops it), cancellable through `cancel` while it runs; its answer is sent by the statement's deadline."""
        try:
            handle = self.server.state.queries.run_here(self.principal, text, started=self._started)
        finally:
            with self._lock:
                self._running = None
        found = answer(handle.result().table)
        found.deadline = handle.cancellation.deadline
        return found

    def _started(self, handle: Handle) -> None:
        with self._lock:
            self._running = handle

    def cancel(self) -> None:
        """The client's cancel request: interrupt the statement running now, if any."""
        with self._lock:
            running = self._running
        if running is not None:
            self.server.state.queries.cancel(running)

    def _reported(self, name: str) -> list[tuple[str, str]]:
        return [(name, self.session_settings.values[name])] if name in REPORTED else []

    def _show(self, name: str) -> Outcome:
        if name == "all":
            settings = sorted(self.session_settings.values.items(), key=lambda p: p[0].lower())
            table = pa.table(
                {
                    "name": [k for k, _ in settings],
                    "setting": [v for _, v in settings],
                    "description": [""] * len(settings),
                }
            )
            return answer(table, tag="SHOW")
        return answer(pa.table({name: [self.session_settings.show(name)]}), tag="SHOW")
