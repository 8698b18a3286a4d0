"""The plan cache (DESIGN §6, the hot path): a statement's *shape* keys the plan made for it, so a query seen
before — with any literals — skips parsing, qualifying, matching and rewriting.

The shape comes from sqlglot's tokenizer alone: tokens without whitespace, comments or trailing semicolons,
keywords by kind, names in lower case (they are case-insensitive), and every string and number literal lifted
out into a parameter (`?0`, `?1`…, equal literals sharing one, so the key also says which literals are equal). The
same key, with the parameters, identifies a statement exactly (the result cache's key).

What a plan does with a parameter decides how it is reused:
- *variable* parameters — literals of WHERE and HAVING predicates, LIMIT/OFFSET — are substituted into the
  engine's SQL text. Their values can only change which segments are pruned, so on a hit pruning runs
  again (over the context filters kept from the first plan) and the plan is reused only when every model
  keeps the same segments;
- *fixed* parameters — literals inside aggregate calls (a computed column may match) or inside any expression
  read from a computed column (its values hold the literal), projections (they name the outputs), GROUP BY,
  ORDER BY, join conditions (not the subqueries joined), window specifications, or any literal the front end
  consumed — are part of the key: another value plans afresh.
A template is only used for an engine after it reproduced, with the first statement's literals, exactly
the SQL that statement ran.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from precube.query.frontend import FOLDED, PARAM, tokens_of
from precube.query.matching import Probe, scanned_ids
from precube.query.project_metadata import ProjectMetadata

if TYPE_CHECKING:
    from precube.query.engines import Engine
    from precube.query.session import Plan

_LITERALS = {TokenType.STRING: True, TokenType.NUMBER: False}  # token kind → is a string literal
_NAMES = {TokenType.VAR, TokenType.IDENTIFIER}
_KIND_NAMES = {kind: kind.name for kind in TokenType}  # an enum member's `name` is a slow property
_STRUCTURAL = (exp.AggFunc, exp.Group, exp.Order, exp.Join, exp.Window, exp.Lambda)
_MARK = re.compile("'\ue000(\\d+)\ue001'")  # a parameter's marker as any dialect prints it


Param = tuple[bool, str]  # (is a string, text)


@dataclass(frozen=True)
class Shape:
    """A statement's tokens with its literals lifted out."""

    key: str
    params: tuple[Param, ...]  # distinct literals in order of first appearance
    starts: dict[int, int]  # offset of a literal's token in the text → its parameter (for `frontend.parse`)
    # the tokens themselves, for `frontend.parse` (tokenizing a statement of 20,000 literals again costs 30 ms)
    tokens: list[Token] = field(default_factory=list, compare=False, repr=False)


def shape_of(sql: str) -> Shape | None:
    """The statement's shape; None when it does not tokenize (the parser then gives the error)."""
    try:
        tokens = tokens_of(sql)  # a long IN list is one literal: one parameter
    except SqlglotError:
        return None
    parts: list[str] = []
    append = parts.append  # the loop runs once per token: a statement of 20,000 literals has 40,000
    index: dict[Param, int] = {}
    starts: dict[int, int] = {}
    while tokens and tokens[-1].token_type is TokenType.SEMICOLON:
        tokens = tokens[:-1]  # `select …;` is `select …`
    for token in tokens:
        kind = token.token_type
        is_string = _LITERALS.get(kind)
        if is_string is not None:
            i = index.setdefault((is_string, token.text), len(index))
            starts[token.start] = i
            append(f"{_KIND_NAMES[kind]}?{i}")
        elif kind in _NAMES:
            append(f"{_KIND_NAMES[kind]}:{token.text.lower()}")
        else:
            append(f"{_KIND_NAMES[kind]}:{token.text.upper()}")
    return Shape("\x1f".join(parts), tuple(index), starts, tokens)


def _param(node: exp.Expr) -> int | None:
    return node.meta.get(PARAM) if isinstance(node, exp.Literal) and node._meta else None


def _structural(lit: exp.Literal, known: dict[int, bool]) -> bool:
    """Whether the literal sits where the plan depends on it; `known` holds the answer of every node walked
    (by id) for the literals after it: the 20,000 of an IN list share one walk up."""
    path: list[exp.Expr] = []
    node: exp.Expr = lit
    found = False
    while node.parent is not None:
        if (seen := known.get(id(node))) is not None:
            found = seen
            break
        path.append(node)
        parent = node.parent
        # a JOIN's condition is structural, not the subquery it joins (whose filter is a context's, or runs as is)
        joined = isinstance(parent, exp.Join) and node.arg_key == "this"
        if (isinstance(parent, _STRUCTURAL) and not joined) or (
            isinstance(parent, exp.Select) and node.arg_key == "expressions"
        ):
            found = True
            break
        node = parent
    for walked in path:
        known[id(walked)] = found
    return found


def fixed_params(shape: Shape, qualified: exp.Query, final: exp.Query) -> frozenset[int]:
    """The parameters whose value the plan depends on beyond pruning (module docstring)."""
    seen: set[int] = set()
    fixed: set[int] = set()
    known: dict[int, bool] = {}
    for lit in qualified.find_all(exp.Literal):
        i = _param(lit)
        if i is not None:
            seen.add(i)
            if lit.meta.get(FOLDED) or _structural(lit, known):  # (a parameter's meta is a ParamMeta)
                fixed.add(i)
    kept = {i for lit in final.find_all(exp.Literal) if (i := _param(lit)) is not None}
    return frozenset(set(range(len(shape.params))) - (seen & kept) | fixed)


def _bind(node: exp.Expr, params: tuple[Param, ...]) -> exp.Expr:
    """A copy of `node` with every parameter's literal holding the given values."""
    copy = node.copy()
    for lit in copy.find_all(exp.Literal):
        i = _param(lit)
        if i is not None:
            lit.set("this", params[i][1])
    return copy


def _literal_sql(param: Param, dialect: str) -> str:
    is_string, text = param
    return (exp.Literal.string(text) if is_string else exp.Literal.number(text)).sql(dialect=dialect)


@dataclass
class ContextProbe:
    """One context's filter as first planned (literals tagged) and the models whose joins fit it."""

    filter: exp.Expr | None
    probes: list[Probe]

    def bound(self, params: tuple[Param, ...]) -> exp.Expr | None:
        """The filter with these values (a copy)."""
        return None if self.filter is None else _bind(self.filter, params)

    def signature(self, params: tuple[Param, ...]) -> tuple[tuple[str, ...], ...]:
        """The segments each model keeps under the filter with these values."""
        if not self.probes:
            return ()
        # pruning only reads the filter: it needs no copy when it already holds these values (as it does for
        # the statement that made the plan; copying a filter of 20,000 literals costs more than pruning it)
        same = self.filter is None or all(
            (i := _param(lit)) is None or lit.this == params[i][1] for lit in self.filter.find_all(exp.Literal)
        )
        condition = self.filter if same else self.bound(params)
        return tuple(scanned_ids(condition, p) for p in self.probes)


@dataclass
class Template:
    """A plan reusable for other values of the variable parameters."""

    plan: Plan
    params: tuple[Param, ...]  # the values it was planned with
    fixed: tuple[int, ...]  # the parameters whose values the plan depends on
    # the tree it runs, variable parameters as markers: made when a second statement of the shape comes (a
    # copy of a tree of 20,000 literals costs more than the rest of the plan cache's bookkeeping)
    _marked: exp.Query | None = None
    texts: dict[str, str | None] = field(default_factory=dict)  # engine → marked SQL (None: not reusable)

    @property
    def marked(self) -> exp.Query:
        if self._marked is None:
            marked = self.plan.tree.copy()
            for lit in marked.find_all(exp.Literal):
                i = _param(lit)
                if i is not None and i not in self.fixed:
                    # in place: `replace` looks the node up in its parent's list, quadratic over an IN list
                    lit.set("this", f"\ue000{i}\ue001")
                    lit.set("is_string", True)
            self._marked = marked
        return self._marked

    def sql(self, engine: Engine, params: tuple[Param, ...]) -> str | None:
        """The engine's SQL for these values, or None when the template cannot print it faithfully."""
        if engine.name not in self.texts:
            plan = self.plan
            text = engine.render(self.marked, plan.scans, plan.sources)
            same = _fill(text, self.params, engine.dialect) == engine.render(plan.tree, plan.scans, plan.sources)
            self.texts[engine.name] = text if same else None
        marked = self.texts[engine.name]
        return None if marked is None else _fill(marked, params, engine.dialect)


def _fill(text: str, params: tuple[Param, ...], dialect: str) -> str:
    return _MARK.sub(lambda m: _literal_sql(params[int(m.group(1))], dialect), text)


@dataclass
class Entry:
    metadata: ProjectMetadata
    fixed: tuple[int, ...]
    contexts: list[ContextProbe]
    variants: dict[tuple[object, ...], Template] = field(default_factory=dict)
    # (engine, literals) → what `find` answered for them: a statement repeated exactly (a dashboard's) skips
    # pruning and printing; oldest first out beyond STATEMENTS_PER_SHAPE
    answers: dict[tuple[str, tuple[Param, ...]], tuple[Plan, str]] = field(default_factory=dict)

    def variant_key(self, params: tuple[Param, ...]) -> tuple[object, ...]:
        values = tuple(params[i] for i in self.fixed)
        return values, tuple(c.signature(params) for c in self.contexts)


STATEMENTS_PER_SHAPE = 64


class PlanCache:
    """Plans by (shape, pushdown flags) for the project's current metadata read; least recently used dropped."""

    def __init__(self, capacity: int = 1024) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[object, ...], Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def find(
        self, key: tuple[object, ...], shape: Shape, metadata: ProjectMetadata, engine: Engine, count: bool = True
    ) -> tuple[Plan, str] | None:
        """The cached plan and the engine's SQL for this statement, or None; `count`: in the hit and miss counts
        (a look before running, which runs it again, is not)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is None or entry.metadata is not metadata or len(shape.params) <= max(entry.fixed, default=-1):
            self.misses += count
            return None
        answer = entry.answers.get((engine.name, shape.params))
        if answer is None:
            template = entry.variants.get(entry.variant_key(shape.params))
            text = template.sql(engine, shape.params) if template is not None else None
            if template is None or text is None:
                self.misses += count
                return None
            answer = (template.plan, text)
            with self._lock:
                entry.answers[(engine.name, shape.params)] = answer
                if len(entry.answers) > STATEMENTS_PER_SHAPE:
                    del entry.answers[next(iter(entry.answers))]
        self.hits += count
        return answer

    def store(
        self,
        key: tuple[object, ...],
        shape: Shape,
        metadata: ProjectMetadata,
        plan: Plan,
        qualified: exp.Query,
    ) -> None:
        """Keep `plan`, made for `shape`'s statement from its qualified tree, for later statements of the shape."""
        fixed = tuple(sorted(fixed_params(shape, qualified, plan.tree)))
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.metadata is not metadata or entry.fixed != fixed:
                entry = Entry(metadata, fixed, plan.probes)
                self._entries[key] = entry
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
            entry.variants[entry.variant_key(shape.params)] = Template(plan, shape.params, fixed)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def forget_statements(self) -> None:
        """Keep the plans but forget the statements answered from them, as if each next one had new literals."""
        with self._lock:
            for entry in self._entries.values():
                entry.answers.clear()
