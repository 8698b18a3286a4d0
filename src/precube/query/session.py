"""A query session over one project: SQL in, an Arrow table out (DESIGN §6).

`Session.sql` normalises the SQL, finds its contexts, matches each to a model's layout and rewrites it
onto that layout's files; when a context has no layout it pushes the whole statement down to the
source tables (unless pushdown is forbidden, per query or by the project property
`kylin.query.pushdown-enabled=false`: then a `NoLayoutError` gives each model's reason). A statement over
layouts that fails on the engine is a `LayoutReadError` naming the layouts and segments, re-run on the source
tables only when `QuerySettings.pushdown_on_failure` allows it; every result's `pushdown_reason` says why it
was not answered from layouts. `explain` returns the same plan without running it.

The session knows nothing of the result cache: `precube.cache.CachedSession` wraps it from above.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
from sqlglot import exp

from precube.metadata import MetadataStore, Table
from precube.metadata.entity import now_ms
from precube.query import guard
from precube.query.bounds import WHOLE, ResultBounds, Window, memory_limit
from precube.query.cancel import Cancellation
from precube.query.catalog import CatalogAnswers
from precube.query.collector import paused_for
from precube.query.computed import inline_computed
from precube.query.contexts import QueryContext, contexts
from precube.query.duckdb_engine import DuckDBEngine
from precube.query.engine_errors import mapped_errors, query_error
from precube.query.engines import ENGINES, Engine
from precube.query.errors import EngineError, LayoutReadError, NoLayoutError, QueryError
from precube.query.explain import Explanation
from precube.query.frontend import normalise, parse, spark_sum_types
from precube.query.history import QueryHistory, QueryRecord
from precube.query.layout_memory import default_budget_bytes
from precube.query.limits import check_text
from precube.query.literal_lists import abbreviated
from precube.query.lookup_snapshot import SnapshotMatch, SnapshotScan, match_snapshots, rewrite_snapshots, stale_scans
from precube.query.matching import Match, Rejection, match, probes
from precube.query.plan_cache import ContextProbe, Param, PlanCache, Shape, shape_of
from precube.query.project_metadata import MetadataReader, ProjectMetadata
from precube.query.reshape import lookup_keys, reshaped
from precube.query.rewrite import LayoutScan, rewrite, whole_scans
from precube.query.spill import Spill
from precube.query.split_blocks import Split, split_tree
from precube.query.type_checks import check_comparisons
from precube.settings import QuerySettings
from precube.storage.paths import layout_path, local_path

if TYPE_CHECKING:
    import pandas as pd

PUSHDOWN_PROPERTY = "kylin.query.pushdown-enabled"
SHAPE_MEMO_SIZE, SHAPE_MEMO_CHARS = 1024, 8192  # statements whose shape a session remembers (count, length)
CATALOG = "catalog"  # the engine a catalog statement's answer names: precube's metadata (`query.catalog`)
# A statement's admission to the engines (a server's `precube.service.admission`): called with whether the planned
# statement is pushed down, it gives the context held while an engine runs it (waiting for a slot, or failing)
Admit = Callable[[bool], AbstractContextManager[object]]


@dataclass
class ContextPlan:
    """One context: the layout that answers it, or each model's reason why none."""

    block: exp.Select  # the block as the user wrote it (qualified), in a tree no later stage changes
    match: Match | None
    rejections: list[Rejection]
    from_source: bool = False  # no layout answers it, but it reads no fact table: the source tables do
    snapshot: SnapshotMatch | None = None  # no layout: the lookup snapshots that answer it instead

    @property
    def sql(self) -> str:
        """The block's text, printed when asked for: printing every nested block while planning costs the
        square of the nesting."""
        return abbreviated(self.block).sql(dialect="spark")  # a long IN list by its first values


@dataclass
class Plan:
    tree: exp.Query  # what runs
    pushdown: bool
    contexts: list[ContextPlan]
    scans: list[LayoutScan | SnapshotScan] = field(default_factory=list)
    sources: list[Table] = field(default_factory=list)
    pushdown_reason: str | None = None
    # each context's filter with its literals tagged, and the models that fit it: kept when the statement
    # had a shape, so the plan serves other literals (plan cache) and their filters (result cache)
    probes: list[ContextProbe] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)  # blocks whose model part became a block (`split_blocks`)


@dataclass
class QueryResult:
    """A statement's answer as the session computed it: the rows, and how (its plan, engine and time). A
    result-cache answer is the cache's `CachedResult`, read the same way."""

    table: pa.Table
    plan: Plan | None  # for a plan-cache hit, the plan of the statement that first had this shape
    engine: str
    duration_ms: float
    plan_cached: bool = False  # the plan came from the plan cache
    params: tuple[Param, ...] | None = None  # the statement's literals, as its plan's probes take them
    partial: bool = False  # the rows of a window asked for, and the answer had more past them (Kylin's flag)
    from_cache: ClassVar[bool] = False  # computed now (a `CachedResult` says otherwise)

    @property
    def pushdown(self) -> bool:
        return self.plan is not None and self.plan.pushdown

    @property
    def pushdown_reason(self) -> str | None:
        """Why the answer came from the source tables; None when layouts answered it."""
        return self.plan.pushdown_reason if self.plan is not None and self.plan.pushdown else None

    @property
    def matches(self) -> list[Match]:
        if self.plan is None or self.pushdown:
            return []
        return [c.match for c in self.plan.contexts if c.match is not None]

    @property
    def snapshots(self) -> list[SnapshotMatch]:
        """The blocks answered from lookup snapshots (`lookup_snapshot`)."""
        if self.plan is None or self.pushdown:
            return []
        return [c.snapshot for c in self.plan.contexts if c.snapshot is not None]

    @property
    def model(self) -> str | None:
        if self.matches:
            return self.matches[0].model.model.alias
        return self.snapshots[0].model.model.alias if self.snapshots else None

    @property
    def layout_ids(self) -> list[int]:
        return [m.layout.id for m in self.matches]

    @property
    def segments(self) -> list[str]:
        snapshotted = {t.segment.id for found in self.snapshots for t in found.tables}
        return sorted({s.segment.id for m in self.matches for s in m.scanned} | snapshotted)

    @property
    def columns(self) -> list[tuple[str, str]]:
        return [(f.name, str(f.type)) for f in self.table.schema]

    @property
    def rows(self) -> list[tuple[Any, ...]]:
        return list(zip(*(c.to_pylist() for c in self.table.columns), strict=True)) if self.table.num_columns else []

    def to_pandas(self) -> pd.DataFrame:
        return self.table.to_pandas()


class Session:
    """Answers SQL over one project's tables. Keep one per process: it caches the project's metadata
    (re-read when it changes) and the layouts it has loaded."""

    def __init__(
        self,
        store: MetadataStore,
        project: str,
        warehouse_root: str,
        *,
        engine: str = "duckdb",
        spark: Callable[[], Any] | None = None,
        history: QueryHistory | None = None,
        user: str = "ADMIN",
        settings: QuerySettings | None = None,
        processes: int = 1,
    ) -> None:
        if engine not in ENGINES:
            raise QueryError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
        store.require_project(project)
        self.settings = settings or QuerySettings()  # limits and failure policy of every statement
        self.store = store
        self.project = project
        self.engine = engine
        self.metadata = MetadataReader(store, self.settings.metadata_check_ms / 1000)
        self.plans = PlanCache()
        self._shapes: dict[str, Shape | None] = {}  # text → shape: a repeated statement is not tokenized again
        self._shapes_lock = threading.Lock()
        # every statement's bounds (`bounds`): its database's memory (`processes`: the server processes sharing
        # the machine), its answer's rows and bytes
        limits = self.settings
        memory = memory_limit(limits.memory_limit, processes)
        self.bounds = ResultBounds.of(limits)
        spill = Spill.of(limits.spill_dir, limits.max_spill_mb)  # where and how much its engines spill to disk
        self.duckdb = DuckDBEngine(
            warehouse_root,
            project,
            sources=self.metadata.get(project).tables.values(),  # the paths DuckDB may read (guard's backstop)
            memory_limit=memory,
            timeout_s=limits.timeout_s,
            bounds=self.bounds,
            connections=self.settings.max_running,  # admission lets no more statements run at once
            spill=spill,
            layout_memory=limits.layout_memory_mb * 2**20 or default_budget_bytes(processes),
        )
        # SHOW/DESCRIBE and information_schema, from the metadata in a connection of their own
        self.catalog = CatalogAnswers(memory, limits.timeout_s, limits.max_nesting_depth, self.bounds, spill)
        self._spark = spark
        self._spark_engine: Engine | None = None
        self.history = history
        self.user = user

    def close(self) -> None:
        """Close the engines, first stopping what they run (a statement of another thread fails at once rather
        than holding the connection being closed)."""
        for engine in (self.duckdb, self._spark_engine):
            if engine is not None:
                engine.interrupt()
        self.duckdb.close()
        self.catalog.close()
        if self.history is not None:
            self.history.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def plan(self, sql: str, *, pushdown: bool | None = None, force_pushdown: bool = False) -> Plan:
        """How `sql` would run: the layouts that answer its contexts, or why it must be pushed down."""
        with mapped_errors():
            check_text(sql, self.settings.max_statement_chars)
            if self.catalog.recognise(sql) is not None:
                raise QueryError("a catalog statement is answered from the project's metadata: it has no plan")
            with paused_for(sql):
                return self._plan(sql, self.metadata.get(self.project), None, pushdown, force_pushdown)[0]

    def _plan(
        self, sql: str, metadata: ProjectMetadata, shape: Shape | None, pushdown: bool | None, force_pushdown: bool
    ) -> tuple[Plan, exp.Query]:
        """The plan (with a shape, with its probes) and the qualified tree it came from."""
        depth = self.settings.max_nesting_depth
        parsed = parse(sql, shape.starts, depth, shape.tokens) if shape else parse(sql, None, depth)
        guard.check(parsed, metadata.catalog)  # before anything is resolved or reaches an engine
        tree = normalise(parsed, metadata.catalog)
        check_comparisons(tree, metadata.catalog)  # a column compared with a literal of a type it cannot take
        facts = frozenset(m.model.fact_table.upper() for m in metadata.models)
        # the same meaning in blocks layouts answer (pushdown runs `tree`)
        shaped = reshaped(tree, lookup_keys(m.model for m in metadata.models))
        split, splits = split_tree(shaped, facts, metadata.catalog)  # model parts apart from subqueries
        work = split.copy()
        found = contexts(work)
        # each block of `work` → the same block of `split` (the copy walks in the same order), for explain
        blocks = {id(w): t for w, t in zip(work.walk(), split.walk(), strict=True) if isinstance(w, exp.Select)}
        kept = (
            [ContextProbe(c.filter.copy() if c.filter else None, probes(c, metadata.models)) for c in found]
            if shape is not None
            else []
        )
        plans = [self._plan_context(ctx, metadata, blocks[id(ctx.select)]) for ctx in found]
        # a block over no fact table (a lookup's projection) that neither a layout nor a lookup snapshot answers
        # reads the source tables when other blocks are answered from layouts: its rows are the source's either
        # way (unless it reads an outer block's columns: that block's tables become a layout's)
        reads_fact = [bool(facts & set(ctx.tables.values())) for ctx in found]
        if any(p.match is not None for p in plans):
            for ctx, p, fact in zip(found, plans, reads_fact, strict=True):
                p.from_source = p.match is None and p.snapshot is None and not fact and not ctx.correlated
        missing = [p for p in plans if p.match is None and p.snapshot is None and not p.from_source]
        # the reason names the blocks over a fact table, when some are missing: a lookup's alone follows them
        over_facts = [p for p, fact in zip(plans, reads_fact, strict=True) if not p.match and fact]
        reason = "pushdown was asked for" if force_pushdown else _reasons(over_facts or missing)
        if not missing and not force_pushdown:
            try:
                scans: list[LayoutScan | SnapshotScan] = [
                    rewrite(ctx, p.match, metadata.catalog)
                    for ctx, p in zip(found, plans, strict=True)
                    if p.match is not None
                ]
                for ctx, p in zip(found, plans, strict=True):
                    if p.snapshot is not None:
                        scans += rewrite_snapshots(ctx, p.snapshot, self.duckdb.root, self.project, metadata.catalog)
                lookups = {d.table for p in plans if p.match is not None for d in p.match.derived}
                read = [ctx for ctx, p in zip(found, plans, strict=True) if p.from_source]
                lookups |= {t for ctx in read for t in ctx.tables.values()}
                for ctx in read:  # as a pushdown would run them
                    spark_sum_types(ctx.select, metadata.catalog)
                if read:
                    inline_computed(work, metadata.computed, metadata.real_columns)
                sources = [metadata.tables[t] for t in sorted(lookups) if t in metadata.tables]
                plan = Plan(work, False, plans, scans=scans, sources=sources, probes=kept, splits=splits)
                return plan, tree
            except Exception as err:  # noqa: BLE001 (a rewrite that fails leaves the source tables to answer)
                reason = f"the rewrite onto layouts failed: {err}"
        allowed = pushdown if pushdown is not None else _enabled(metadata)
        if not allowed:
            why = "pushdown is forbidden for this query" if pushdown is False else f"{PUSHDOWN_PROPERTY} is false"
            raise NoLayoutError(f"no layout can answer the query and {why}: {reason}")
        tables = {f"{t.db}.{t.name}".upper() for t in tree.find_all(exp.Table) if t.db}
        plan = Plan(
            spark_sum_types(inline_computed(tree.copy(), metadata.computed, metadata.real_columns), metadata.catalog),
            True,
            plans,
            sources=[metadata.tables[t] for t in sorted(tables) if t in metadata.tables],
            pushdown_reason=reason,
            probes=kept,
            splits=splits,
        )
        return plan, tree

    def _planned(
        self,
        sql: str,
        shape: Shape | None,
        metadata: ProjectMetadata,
        engine: Engine,
        pushdown: bool | None,
        force_pushdown: bool,
        access: str,
    ) -> tuple[Plan, str, bool]:
        """The plan, the engine's SQL and whether the plan cache had it (plans are kept per `access`)."""
        if shape is None:
            plan = self._plan(sql, metadata, None, pushdown, force_pushdown)[0]
            return plan, engine.render(plan.tree, plan.scans, plan.sources), False
        key = (shape.key, pushdown, force_pushdown, access)
        found = self.plans.find(key, shape, metadata, engine)
        if found is not None and not stale_scans(found[0].scans):  # a lookup's source changed: plan again
            return found[0], found[1], True
        plan, qualified = self._plan(sql, metadata, shape, pushdown, force_pushdown)
        self.plans.store(key, shape, metadata, plan, qualified)
        return plan, engine.render(plan.tree, plan.scans, plan.sources), False

    def _plan_context(self, ctx: QueryContext, metadata: ProjectMetadata, block: exp.Expr) -> ContextPlan:
        assert isinstance(block, exp.Select)
        try:
            found = match(ctx, metadata.models)
        except Exception as err:  # noqa: BLE001 (a block the matcher cannot read is one no layout answers)
            return ContextPlan(block, None, [Rejection("*", f"matching failed: {err}")])
        if isinstance(found, Match):
            return ContextPlan(block, found, found.rejected)
        rejected = found or [Rejection("*", "the project has no model")]
        if ctx.correlated:  # it reads an outer block's columns: that block's tables must stay, not become a layout's
            return ContextPlan(block, None, rejected)
        lookups = match_snapshots(ctx, metadata)
        if isinstance(lookups, SnapshotMatch):
            return ContextPlan(block, None, rejected, snapshot=lookups)
        return ContextPlan(block, None, [Rejection("*", why) for why in lookups] + rejected)

    def sql(
        self,
        sql: str,
        *,
        engine: str | None = None,
        pushdown: bool | None = None,
        force_pushdown: bool = False,
        no_cache: bool = False,
        shape: Shape | None = None,
        metadata: ProjectMetadata | None = None,
        user: str | None = None,
        cancel: Cancellation | None = None,
        access: str = "",
        admit: Admit | None = None,
        window: Window = WHOLE,
    ) -> QueryResult:
        """Run `sql`; pushdown None follows the project, False forbids it, `force_pushdown` skips layouts.
        `no_cache` is for a result-cache wrapper (this session has none). A wrapper may pass the statement's
        `shape` (tokenized once) and the project's `metadata` read to plan on (its answer is dated by it). `user`:
        who the history records (a server's signed-in caller), else the session's user. `cancel` stops the
        statement and carries its deadline (`[query] timeout_s` from its arrival; without one, from now), which
        every step reads; `access` is the digest of what about the caller may change the answer (plans are kept
        per digest); `admit` is held while an engine runs the statement (a server's admission control). The answer
        is `window`'s rows of it (the engine fetches no more), `partial` when it had more past them."""
        # both steps raise only one-line QueryErrors (`engine_errors`)
        cancel = Cancellation.of(cancel, self.settings.timeout_s)  # an embedded caller's: timeout_s from now
        shape = shape if shape is not None else self.shape_of(sql)  # the plan cache's key
        chosen = engine or self.engine
        return self._execute(
            sql, shape, chosen, pushdown, force_pushdown, metadata, user, cancel, access, admit, window
        )

    def answers_at_once(
        self,
        sql: str,
        *,
        engine: str | None = None,
        pushdown: bool | None = None,
        force_pushdown: bool = False,
        access: str = "",
    ) -> ProjectMetadata | None:
        """The metadata to run `sql` on when its answer costs a few milliseconds at most, with no I/O or wait: a
        plan already made (for `access`) reads one layout held as numpy columns, in a form `direct` runs, over
        few rows (`DuckDBEngine.answers_at_once`), on metadata known current without asking the store; else None.
        A caller that may not block long (an event loop) runs such a statement itself: `sql(…, metadata=…)`."""
        if force_pushdown or (engine or self.engine) != DuckDBEngine.name or len(sql) > SHAPE_MEMO_CHARS:
            return None
        metadata = self.metadata.known(self.project)
        if metadata is None or self.catalog.may_answer(sql):
            return None
        try:
            shape = self.shape_of(sql)
        except QueryError:
            return None  # too long, or not text: `sql` reports it
        found = (
            None
            if shape is None
            else self.plans.find(
                (shape.key, pushdown, force_pushdown, access), shape, metadata, self.duckdb, count=False
            )
        )
        if found is None:
            return None
        plan, text = found
        scans = plan.scans
        if plan.sources or len(scans) != 1 or not isinstance(scans[0], LayoutScan):
            return None
        return metadata if self.duckdb.answers_at_once(text, scans[0]) else None

    def shape_of(self, sql: str) -> Shape | None:
        """The statement's token shape (the plan cache's and the result cache's key; None: it has none),
        after the size and text checks (`[query] max_statement_chars`): a failure is a one-line QueryError."""
        try:
            return self._shapes[sql]
        except KeyError:
            pass
        with mapped_errors():
            check_text(sql, self.settings.max_statement_chars)
            shape = shape_of(sql)
        if len(sql) <= SHAPE_MEMO_CHARS:
            with self._shapes_lock:
                if len(self._shapes) >= SHAPE_MEMO_SIZE:
                    del self._shapes[next(iter(self._shapes))]  # the oldest
                self._shapes[sql] = shape
        return shape

    def _execute(
        self,
        sql: str,
        shape: Shape | None,
        chosen: str,
        pushdown: bool | None,
        force_pushdown: bool,
        metadata: ProjectMetadata | None = None,
        user: str | None = None,
        cancel: Cancellation | None = None,
        access: str = "",
        admit: Admit | None = None,
        window: Window = WHOLE,
    ) -> QueryResult:
        """Plan (on `metadata`, else the latest) and run `sql` on engine `chosen`, recording it in the history."""
        started, start_ms = time.perf_counter(), now_ms()
        cached = False
        try:
            catalog = self.catalog.recognise(sql)
            if catalog is not None:  # answered from the metadata: no plan, no engine
                chosen = CATALOG
                answer = self.catalog.answer(catalog, metadata or self.metadata.get(self.project), cancel)
                answer, partial = window.of(answer)
                took = (time.perf_counter() - started) * 1000
                result = QueryResult(answer, None, CATALOG, took, partial=partial)
                self._record(sql, start_ms, started, CATALOG, result, user=user)
                return result
            runner = self._engine(chosen)
            metadata = metadata or self.metadata.get(self.project)
            if cancel is not None:
                cancel.check()
            with paused_for(sql):
                plan, text, cached = self._planned(sql, shape, metadata, runner, pushdown, force_pushdown, access)
            failure: LayoutReadError | None = None
            with admitted(admit, plan.pushdown):  # a slot of the statement's lane while the engine runs it
                try:
                    table = runner.execute(text, plan.scans, plan.sources, cancel, window)
                except Exception as failed:
                    # layouts that cannot be read (files gone after a restore, a bad disk): an error, unless the
                    # operator allowed the source tables to answer instead (then the result says so); precube's own
                    # errors (a time-out, a type error in the statement) stand unless data could not be read
                    error = None if plan.pushdown else _layout_failure(plan, self.duckdb.root, self.project, failed)
                    unread = error is not None and (
                        error.missing or (isinstance(failed, EngineError) and failed.reading)
                    )
                    if error is None or (isinstance(failed, QueryError) and not unread):
                        raise
                    allowed = pushdown if pushdown is not None else _enabled(metadata)
                    if not (self.settings.pushdown_on_failure and allowed):
                        raise error from failed
                    failure = error
            if failure is not None:  # the source tables answer, in a slot of the pushdown lane
                plan, cached = self._plan(sql, metadata, None, pushdown, True)[0], False
                plan.pushdown_reason = f"pushdown on failure: {failure}"
                with admitted(admit, True):
                    rendered = runner.render(plan.tree, plan.scans, plan.sources)
                    table = runner.execute(rendered, plan.scans, plan.sources, cancel, window)
        except Exception as err:
            shown = query_error(err, chosen)  # the history keeps the line the user is shown
            self._record(sql, start_ms, started, chosen, None, error=str(shown), user=user)
            if shown is err:
                raise
            raise shown from err
        params = shape.params if shape is not None and plan.probes else None
        table, partial = window.cut(table)
        took = (time.perf_counter() - started) * 1000
        result = QueryResult(table, plan, chosen, took, cached, params=params, partial=partial)
        self._record(sql, start_ms, started, chosen, result, user=user)
        return result

    def record_answer(
        self, sql: str, start_ms: int, started: float, result: QueryResult, user: str | None = None
    ) -> None:
        """Record in the history an answer given without running (a result-cache hit)."""
        self._record(sql, start_ms, started, result.engine, result, user=user)

    def warm(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Register the online models' layouts (over all their segments, smallest first) in the DuckDB engine and
        offer them to its background loader, which holds in memory those that fit its budget (`layout_memory`),
        until `stop()`; how many were offered. No query waits for a copy: each reads the layout's files until then."""
        loaded = 0
        for model in self.metadata.get(self.project).models:
            if not model.online:
                continue
            for scan in whole_scans(model):
                if stop():
                    return loaded
                self.duckdb.preload(scan)
                loaded += 1
            # one statement planned and run over the model warms what every first query pays once (the planner's
            # and the engine's first use); it is not recorded in the history
            plan = self.plan(f"select count(*) from {model.model.fact_table}")
            if not plan.pushdown:
                self.duckdb.execute(self.duckdb.render(plan.tree, plan.scans, plan.sources), plan.scans, plan.sources)
        return loaded

    def hold(self, sql: str) -> int:
        """Copy into memory now the layouts and snapshots `sql` reads, as a warm server's loader does by use
        (`layout_memory`); how many. A statement pushed down holds nothing."""
        plan = self.plan(sql)
        return sum(self.duckdb.hold(scan) for scan in plan.scans)

    def explain(
        self, sql: str, *, engine: str | None = None, pushdown: bool | None = None, force_pushdown: bool = False
    ) -> Explanation:
        """How `sql` would be answered, without running it."""
        chosen = engine or self.engine
        plan = self.plan(sql, pushdown=pushdown, force_pushdown=force_pushdown)
        with mapped_errors(chosen):
            shown = abbreviated(plan.tree)  # a long IN list by its first values
            assert isinstance(shown, exp.Query)
            text = self._engine(chosen).sql_of(shown, plan.scans, plan.sources)
            return Explanation(plan, chosen, text)

    def _record(
        self,
        sql: str,
        start_ms: int,
        started: float,
        engine: str,
        result: QueryResult | None,
        error: str | None = None,
        user: str | None = None,
    ) -> None:
        if self.history is None:
            return
        self.history.record(
            QueryRecord(
                project=self.project,
                sql=sql,
                user=user or self.user,
                start_ms=start_ms,
                duration_ms=(time.perf_counter() - started) * 1000,
                engine=engine,
                pushdown=result.pushdown if result else False,
                model=result.model if result else None,
                layouts=",".join(map(str, result.layout_ids)) if result else "",
                rows=result.table.num_rows if result else 0,
                succeeded=result is not None,
                error=error,
            )
        )

    def _engine(self, name: str) -> Engine:
        if name == "duckdb":
            return self.duckdb
        if name != "spark":
            raise QueryError(f"unknown engine {name!r}: choose one of {', '.join(ENGINES)}")
        if self._spark is None:
            raise QueryError("the Spark engine needs a Spark session: this session was opened without one")
        if self._spark_engine is None:
            from precube.query.spark_engine import SparkEngine

            self._spark_engine = SparkEngine(
                self._spark, self.duckdb.root, self.project, timeout_s=self.settings.timeout_s, bounds=self.bounds
            )
        return self._spark_engine


def admitted(admit: Admit | None, pushdown: bool) -> AbstractContextManager[object]:
    """The context an engine run is held in: `admit`'s for its lane, or none."""
    return admit(pushdown) if admit is not None else nullcontext()


def _enabled(metadata: ProjectMetadata) -> bool:
    return metadata.properties.get(PUSHDOWN_PROPERTY, "true").strip().lower() != "false"


def _layout_failure(plan: Plan, root: str, project: str, failed: Exception) -> LayoutReadError:
    """The error of a statement over layouts that failed on the engine: the layouts and segments it read (those
    whose files are missing, when a local warehouse shows which)."""
    models = {c.match.model.model.uuid: c.match.model.model.alias for c in plan.contexts if c.match is not None}
    parts: list[str] = []
    missing = False
    for scan in plan.scans:
        if isinstance(scan, SnapshotScan):
            gone_snapshot = _no_files(scan.path)
            missing = missing or gone_snapshot
            parts.append(f"the snapshot of {scan.table} recorded by segment {scan.segment_id}")
            continue
        ids = scan.segment_ids or (scan.schema_segment,)
        gone = [s for s in ids if _no_files(layout_path(root, project, scan.model_uuid, s, scan.layout_id))]
        missing = missing or bool(gone)
        named = gone or list(ids)
        where = f"segment{'s' if len(named) > 1 else ''} {', '.join(named)}"
        parts.append(f"layout {scan.layout_id} of model {models.get(scan.model_uuid, scan.model_uuid)} in {where}")
    first = next(iter(str(failed).splitlines()), "") or type(failed).__name__
    error = LayoutReadError(f"{'; '.join(parts) or 'a layout'} could not be read: {first}")
    error.missing = missing
    return error


def _no_files(path: str) -> bool:
    local = local_path(path)
    return local is not None and not any(local.glob("*.parquet"))


def _reasons(missing: list[ContextPlan]) -> str:
    parts = []
    for p in missing:
        why = "; ".join(f"model {r.model}: {r.reason}" if r.model != "*" else r.reason for r in p.rejections)
        parts.append(why)
    return " | ".join(parts)
