"""The query service: the one door every front end runs statements through.

`run(principal, statement, parameters, options)` authorises the principal on its project (every statement, so
a grant revoked mid-connection stops the next one), binds the statement's `?` marks to `parameters` (the one
binder, `service.parameters`; the wire binds its `$n` with the same literals) and runs it on the project's
session in the service's own executor, returning a `Handle` at once; `cancel(handle)` interrupts
the engine running it. `run_here` does the same in the caller's thread, for front ends that give each statement
a thread of their own (the wire's, Flight's). `answer_from_memory` is the fast lane: a result-cache hit in this
process's memory, or a statement answered at once from a held layout's numpy columns (`query.direct`), in the
caller's thread with the same authorisation. `explain` and `metadata` serve the rest.

Admission control (`service.admission`): a statement holds a slot of its lane (layout answer or pushdown)
while an engine runs it, waiting in a bounded queue for one. Every statement in the service, from `run` to its
end, has a thread (planning, a cache lookup, waiting for a slot or running): one of the executor's, or its
caller's (`run_here`). At most `max_running + max_queued` statements are in the service at once, and `run` and
`run_here` refuse one beyond that at once (`AdmissionError`), so none waits unseen behind the executor."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from precube.auth import AccessDeniedError, Directory, Permission
from precube.cache import CachedSession
from precube.query.bounds import WHOLE, Window
from precube.query.cancel import Cancellation
from precube.query.catalog.description import CatalogDescription
from precube.query.errors import QueryCancelledError
from precube.query.explain import Explanation
from precube.query.project_metadata import ProjectMetadata
from precube.query.session import PUSHDOWN_PROPERTY, QueryResult, Session
from precube.service.admission import Admission, AdmissionError, AdmissionStats, Limits
from precube.service.metrics import record
from precube.service.parameters import bind
from precube.service.principal import Principal
from precube.service.sessions import Sessions

__all__ = ["PUSHDOWN_PROPERTY", "Handle", "QueryCancelledError", "QueryResult", "QueryService", "RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """How a statement may be answered: the engine (None: the project's), pushdown None (the project's rule),
    False (never: layouts or an error) or `force_pushdown` (the source tables, skipping layouts); `no_cache`
    neither reads nor stores the result cache; `window`: the rows of the answer wanted (the engine fetches no
    more, and the result says whether there were: `QueryResult.partial`)."""

    engine: str | None = None
    pushdown: bool | None = None
    force_pushdown: bool = False
    no_cache: bool = False
    window: Window = WHOLE


@dataclass
class Handle:
    """A statement submitted to the service: its result when done, cancellable meanwhile."""

    principal: Principal
    statement: str
    future: Future[QueryResult]
    cancellation: Cancellation = field(default_factory=Cancellation)  # and the statement's deadline
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    submitted: float = field(default_factory=time.perf_counter)  # its latency counts the wait for a worker

    def result(self, timeout: float | None = None) -> QueryResult:
        """The answer (its error raised), waiting at most `timeout` seconds (None: until it is done)."""
        return self.future.result(timeout)

    async def wait(self) -> QueryResult:
        """The answer, awaited without blocking the event loop."""
        return await asyncio.wrap_future(self.future)


class QueryService:
    """Runs statements of principals on their projects' sessions (`sessions`), authorised by `directory`
    (None: every principal must be `trusted`, an embedded caller's), within `limits` (admission control)."""

    def __init__(self, sessions: Sessions, directory: Directory | None, limits: Limits) -> None:
        self.sessions = sessions
        self.directory = directory
        self.admission = Admission(limits)
        self._capacity = limits.max_running + limits.max_queued
        self._executor = ThreadPoolExecutor(max_workers=self._capacity, thread_name_prefix="precube-query")
        self._running: dict[str, Handle] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Cancel what runs and stop the executor (statements not yet started never start)."""
        for handle in self.running():
            self.cancel(handle)
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- authorisation: the one check, made for every statement ------------------------------------------

    def authorise(self, principal: Principal) -> None:
        """Raise unless `principal` may query its project now: the directory as it is now (a user removed,
        disabled or a grant revoked since sign-in is refused)."""
        if self.directory is None:
            if not principal.trusted:
                raise AccessDeniedError("this service has no directory of users: only embedded callers run here")
            return
        user = self.directory.user(principal.user)
        if user is None:
            raise AccessDeniedError(f"user {principal.user} no longer exists")
        self.directory.require(user, principal.project, Permission.QUERY)

    # -- statements ------------------------------------------------------------------------------------

    def run(
        self,
        principal: Principal,
        statement: str,
        parameters: Sequence[Any] | Mapping[str, Any] | None = None,
        options: RunOptions = RunOptions(),
    ) -> Handle:
        """Submit `statement` (its `?` marks bound to `parameters`); the handle's result is the answer.
        Authorisation and binding fail here, before anything is queued, and so does a statement beyond the
        service's capacity (`AdmissionError`). The statement's deadline is `[query] timeout_s` from now: waiting
        for a worker, a slot or an identical statement's run, running and answering all count against it."""
        handle, session = self._admitted(principal, statement, parameters)
        try:
            self._executor.submit(self._run, handle, session, options)
        except RuntimeError:  # shut down: the process is stopping
            self._finish(handle)
            raise
        return handle

    def run_here(
        self,
        principal: Principal,
        statement: str,
        parameters: Sequence[Any] | Mapping[str, Any] | None = None,
        options: RunOptions = RunOptions(),
        started: Callable[[Handle], None] = lambda handle: None,
    ) -> Handle:
        """`run` in the caller's thread; the statement's handle, once it is done. For a front end that gives each
        statement a thread of its own (the Postgres wire's worker, a Flight call's gRPC thread): it saves the
        hand-off to the executor and back, whose wake-ups cost ~0.3-0.5 ms a statement on a machine whose idle
        cores sleep (measured through Flight SQL). The statement counts against the same capacity as `run`'s;
        `started` gets its handle before it runs, for `cancel` from another thread."""
        handle, session = self._admitted(principal, statement, parameters)
        try:
            started(handle)
        except BaseException:
            self._finish(handle)
            raise
        self._run(handle, session, options)
        return handle

    def _admitted(
        self,
        principal: Principal,
        statement: str,
        parameters: Sequence[Any] | Mapping[str, Any] | None,
        authorised: bool = False,
    ) -> tuple[Handle, Session | CachedSession]:
        """The statement authorised (unless the caller just did), bound and counted in (`AdmissionError` beyond
        the capacity), with its session; the deadline runs from now."""
        arrived = time.monotonic()
        if not authorised:
            self.authorise(principal)
        text = bind(statement, parameters)
        session = self.sessions.get(principal.project)
        future: Future[QueryResult] = Future()
        handle = Handle(principal, text, future, Cancellation(session.settings.timeout_s, arrived))
        with self._lock:
            if len(self._running) >= self._capacity:
                raise AdmissionError(
                    f"the server is busy: {len(self._running)} statements are in progress ([query] max_running "
                    "+ max_queued); retry later"
                )
            self._running[handle.id] = handle
        return handle, session

    def execute(
        self,
        principal: Principal,
        statement: str,
        parameters: Sequence[Any] | Mapping[str, Any] | None = None,
        options: RunOptions = RunOptions(),
    ) -> QueryResult:
        """The answer, run in the caller's thread (`run_here`: for a caller already on its own thread, the
        embedded DB-API's)."""
        return self.run_here(principal, statement, parameters, options).result()

    def _run(
        self,
        handle: Handle,
        session: Session | CachedSession,
        options: RunOptions,
        at_once: ProjectMetadata | None = None,
    ) -> None:
        """Run the handle's statement here; `at_once`: the metadata a statement answered at once runs on (it takes
        no slot: it cannot wait, as a cache hit does not)."""
        future = handle.future
        if not future.set_running_or_notify_cancel():
            self._finish(handle)
            return
        principal, cancel = handle.principal, handle.cancellation
        try:
            result = session.sql(
                handle.statement,
                engine=options.engine,
                pushdown=options.pushdown,
                force_pushdown=options.force_pushdown,
                no_cache=options.no_cache,
                user=principal.user,
                cancel=cancel,
                access=principal.access,
                admit=None if at_once is not None else lambda p: self.admission.slot(principal.user, p, cancel),
                window=options.window,
                metadata=at_once,
            )
        except BaseException as err:  # noqa: BLE001 (the caller gets it from the handle)
            record(None, time.perf_counter() - handle.submitted)
            future.set_exception(err)
        else:
            record(result, time.perf_counter() - handle.submitted)
            future.set_result(result)
        finally:
            self._finish(handle)

    def _finish(self, handle: Handle) -> None:
        with self._lock:
            self._running.pop(handle.id, None)

    def answer_from_memory(
        self,
        principal: Principal,
        statement: str,
        options: RunOptions = RunOptions(),
    ) -> QueryResult | None:
        """The fast lane, in the caller's thread (an event loop's), after the same authorisation: the answer when
        this process's result cache holds it in memory and checking it needs no I/O, or when the session answers
        it at once from a held layout's columns (`Session.answers_at_once`: a few milliseconds, no I/O, no wait;
        the result cache is not filled with it, an answer cheaper to make again than to keep). It saves the
        hand-off to the executor and back: measured through REST at concurrency 8, ~0.7 ms of the server's CPU
        a statement. None sends the statement to `run`."""
        session = self.sessions.opened(principal.project)
        if session is None:
            return None
        started = time.perf_counter()
        self.authorise(principal)
        if isinstance(session, CachedSession):
            result = session.cached(
                statement,
                pushdown=options.pushdown,
                force_pushdown=options.force_pushdown,
                no_cache=options.no_cache,
                user=principal.user,
                access=principal.access,
                window=options.window,
            )
            if result is not None:
                record(result, time.perf_counter() - started)
                return result
            session = session.session
        metadata = session.answers_at_once(
            statement,
            engine=options.engine,
            pushdown=options.pushdown,
            force_pushdown=options.force_pushdown,
            access=principal.access,
        )
        if metadata is None:
            return None
        handle, _ = self._admitted(principal, statement, None, authorised=True)
        self._run(handle, session, options, metadata)
        return handle.result()

    def cancel(self, handle: Handle) -> None:
        """Stop the statement: the engine running it is interrupted (its connection freed at once); a
        statement waiting for a slot leaves the queue; one not yet running never starts."""
        handle.cancellation.cancel()

    def running(self) -> list[Handle]:
        """The statements submitted and not yet finished."""
        with self._lock:
            return list(self._running.values())

    def stats(self) -> AdmissionStats:
        """The statements running on the engines and waiting for a slot now, per lane (for metrics)."""
        return self.admission.stats()

    # -- the rest ---------------------------------------------------------------------------------------

    def explain(
        self,
        principal: Principal,
        statement: str,
        parameters: Sequence[Any] | Mapping[str, Any] | None = None,
        options: RunOptions = RunOptions(),
    ) -> Explanation:
        """How the statement would be answered, without running it."""
        self.authorise(principal)
        session = self.sessions.get(principal.project)
        return session.explain(
            bind(statement, parameters),
            engine=options.engine,
            pushdown=options.pushdown,
            force_pushdown=options.force_pushdown,
        )

    def catalog(self, principal: Principal) -> CatalogDescription:
        """The project's schemas, tables and columns (computed columns included) as every door lists them."""
        return self.metadata(principal).description

    def metadata(self, principal: Principal) -> ProjectMetadata:
        """The project's metadata as statements see it now (its tables, models and computed columns)."""
        self.authorise(principal)
        session = self.sessions.get(principal.project)
        return session.metadata.get(principal.project)
