"""Building and validating a model from its spec; significant changes; broken models (seed 002).

`build_model(spec, tables, existing)` is the one entry: it resolves tables and columns, checks the
joins, types computed columns and the filter with sqlglot, assigns stable ids (a column or measure
keeps its id across edits; removed ones become TOMB and their ids are never reused), and bumps
`semantic_version` on a significant change. Every error names the offending field and value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from precube.metadata import (
    ColumnStatus,
    ComputedColumn,
    JoinTable,
    Measure,
    Model,
    NamedColumn,
    ParameterType,
    PartitionDesc,
    Table,
)
from precube.metadata import datatypes as dt
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling import expressions, measure_rules
from precube.modeling.errors import InvalidModelError
from precube.modeling.model_spec import ComputedColumnSpec, DimensionSpec, MeasureSpec, ModelSpec
from precube.modeling.partition_format import check_format

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_name(name: str, what: str) -> str:
    if not _NAME.match(name):
        raise InvalidModelError(f"invalid {what} {name!r}: use letters, digits and underscores")
    return name.upper()


def check_model_name(alias: str) -> str:
    """`alias` if it is a valid model name (kept as written: models are compared case-insensitively)."""
    _check_name(alias, "model name")
    return alias


class _DependentError(InvalidModelError):
    """A rule broken only because of another problem, reported already (a measure of a refused computed column)."""


class _Problems:
    """Every rule a spec breaks, each with its path in the spec: the checks go on past a problem."""

    def __init__(self) -> None:
        self.found: list[str] = []

    @contextmanager
    def at(self, path: str) -> Iterator[None]:
        """Check the part of the spec at `path`: a problem is recorded (prefixed with `path` unless its message
        starts with it) and the block is left."""
        try:
            yield
        except _DependentError:
            pass
        except InvalidModelError as err:
            for problem in err.problems:
                self.found.append(problem if problem.startswith(path) else f"{path}: {problem}")

    def raise_found(self) -> None:
        if self.found:
            raise InvalidModelError.of(self.found)


class _Scope:
    """The model's tables by alias, and column resolution against them."""

    def __init__(self, spec: ModelSpec, tables: Mapping[str, Table], problems: _Problems) -> None:
        self.tables = {k.upper(): v for k, v in tables.items()}
        self.fact = self._table(spec.fact_table, "fact_table")
        self.fact_alias = _check_name(spec.fact_table_alias or self.fact.name, "fact table alias")
        self.by_alias: dict[str, Table] = {self.fact_alias: self.fact}
        self.failed: set[str] = set()  # aliases and ALIAS.COLUMN refs refused already: what uses them is not told
        for i, jt in enumerate(spec.join_tables):
            self.failed.add(jt.alias.upper())
            with problems.at(f"join_tables[{i}]"):
                alias = _check_name(jt.alias, f"join_tables[{i}].alias")
                if alias in self.by_alias:
                    raise InvalidModelError(f"duplicate table alias {alias} (join_tables[{i}])")
                self.by_alias[alias] = self._table(jt.table, f"join_tables[{i}].table")
                self.failed.discard(alias)
        self.computed: dict[str, str] = {}  # column -> type, on the fact alias

    def _table(self, identity: str, field: str) -> Table:
        table = self.tables.get(identity.upper())
        if table is None:
            raise InvalidModelError(f"{field}: table {identity} is not loaded in the project")
        return table

    def columns(self, alias: str) -> dict[str, str]:
        cols = {c.name: c.datatype for c in self.by_alias[alias].columns}
        if alias == self.fact_alias:
            cols.update(self.computed)
        return cols

    def schema(self) -> dict[str, dict[str, str]]:
        return {alias: self.columns(alias) for alias in self.by_alias}

    def resolve(self, ref: str, field: str) -> tuple[str, str, str]:
        """`ALIAS.COLUMN` or an unambiguous bare `COLUMN` → (alias, column, type)."""
        alias, _, column = ref.upper().rpartition(".")
        if alias in self.failed or f"{alias or self.fact_alias}.{column}" in self.failed:
            raise _DependentError(f"{field}: {ref} was refused")
        if alias:
            if alias not in self.by_alias:
                raise InvalidModelError(f"{field}: unknown table alias {alias} in {ref}")
            cols = self.columns(alias)
            if column not in cols:
                raise InvalidModelError(f"{field}: unknown column {ref} (table {self.by_alias[alias].identity})")
            return alias, column, cols[column]
        hits = [(a, column, self.columns(a)[column]) for a in self.by_alias if column in self.columns(a)]
        if not hits and f"{self.fact_alias}.{column}" in self.failed:
            raise _DependentError(f"{field}: {ref} was refused")
        if not hits:
            raise InvalidModelError(f"{field}: unknown column {ref}")
        if len(hits) > 1:
            raise InvalidModelError(f"{field}: column {ref} is ambiguous ({', '.join(a for a, _, _ in hits)})")
        return hits[0]


def build_model(spec: ModelSpec, tables: Mapping[str, Table], existing: Model | None = None) -> Model:
    """Validate `spec` against the project's `tables` and return the `Model` (an update of `existing`); a spec
    that breaks rules raises one `InvalidModelError` with every problem, each with its path in the spec."""
    problems = _Problems()
    with problems.at("alias"):
        _check_name(spec.alias, "model alias")
    alias = spec.alias  # kept as written, compared case-insensitively (as Kylin does)
    scope = _Scope(spec, tables, problems)  # an unknown fact table: nothing else can be checked
    joins: list[JoinTable] = []
    for i, jt in enumerate(spec.join_tables):
        if jt.alias.upper() not in scope.failed:
            with problems.at(f"join_tables[{i}]"):
                joins.append(_check_join(scope, i, jt))
    with problems.at("join_tables"):
        _check_join_graph(scope.fact_alias, joins)
    computed = _computed_columns(scope, spec, problems)
    redefined = _redefined(computed, existing)
    columns = _named_columns(scope, spec, existing, redefined, problems)
    measures = _measures(scope, spec, columns, existing, redefined, problems)
    partition = None
    with problems.at("partition_desc"):
        partition = _partition(scope, spec.partition_desc)
    filter_sql = ""
    if spec.filter_condition.strip():
        with problems.at("filter_condition"):
            filter_sql, ftype, _ = expressions.typed(spec.filter_condition, scope.schema(), "filter_condition")
            if dt.family(ftype) is not dt.TypeFamily.BOOLEAN:
                raise InvalidModelError(f"filter_condition {spec.filter_condition!r} is not a condition ({ftype})")
    problems.raise_found()
    model = Model(
        alias=alias,
        description=spec.description,
        fact_table=scope.fact.identity,
        fact_table_alias=scope.fact_alias,
        join_tables=joins,
        filter_condition=filter_sql,
        partition_desc=partition,
        all_named_columns=columns,
        all_measures=measures,
        computed_columns=computed,
        segment_config=spec.segment_config,
    )
    if existing is not None:
        model.uuid, model.create_time, model.owner = existing.uuid, existing.create_time, existing.owner
        model.semantic_version = existing.semantic_version + (1 if significant_changes(existing, model) else 0)
    return model


def _check_join(scope: _Scope, i: int, jt: JoinTable) -> JoinTable:
    field = f"join_tables[{i}]"
    alias = jt.alias.upper()
    pk, fk = jt.join.primary_key, jt.join.foreign_key
    if not pk or len(pk) != len(fk):
        raise InvalidModelError(f"{field}: join needs as many primary_key as foreign_key columns (≥1)")
    from_aliases = set()
    pk_norm, fk_norm = [], []
    for p, f in zip(pk, fk, strict=True):
        pa, pc, ptype = scope.resolve(p, f"{field}.join.primary_key")
        if pa != alias:
            raise InvalidModelError(f"{field}.join.primary_key: {p} is not a column of {alias}")
        fa, fc, ftype = scope.resolve(f, f"{field}.join.foreign_key")
        if fa == alias:
            raise InvalidModelError(f"{field}.join.foreign_key: {f} is on the joined table itself")
        if not dt.comparable(ptype, ftype):
            raise InvalidModelError(f"{field}: join key type mismatch: {f} is {ftype} but {p} is {ptype}")
        from_aliases.add(fa)
        pk_norm.append(f"{pa}.{pc}")
        fk_norm.append(f"{fa}.{fc}")
    if len(from_aliases) != 1:
        raise InvalidModelError(
            f"{field}.join.foreign_key: all columns must be on one table, got {', '.join(sorted(from_aliases))}"
        )
    join = jt.join.model_copy(update={"primary_key": pk_norm, "foreign_key": fk_norm})
    if jt.flattenable not in ("flatten", "normalized"):
        raise InvalidModelError(f"{field}.flattenable must be 'flatten' or 'normalized', got {jt.flattenable!r}")
    return jt.model_copy(update={"table": scope.by_alias[alias].identity, "alias": alias, "join": join})


def _check_join_graph(fact_alias: str, joins: Sequence[JoinTable]) -> None:
    """Every lookup must be reachable from the fact table through the joins, without a cycle."""
    parent = {j.alias: j.parent for j in joins}
    for start in parent:
        seen, node = [start], parent[start]
        while node != fact_alias:
            if node in seen:
                raise InvalidModelError(f"cycle in joins: {' -> '.join([*seen, node])}")
            if node not in parent:
                raise InvalidModelError(f"table {start} is joined from {node}, which is not joined to the fact table")
            seen.append(node)
            node = parent[node]


def _computed_columns(scope: _Scope, spec: ModelSpec, problems: _Problems) -> list[ComputedColumn]:
    result = []
    fact_cols = {c.name for c in scope.fact.columns}
    for i, cc in enumerate(spec.computed_columns):
        ref = f"{scope.fact_alias}.{cc.column_name.upper()}"
        refused = cc.column_name.upper() not in fact_cols  # a clash with a source column refuses no source column
        with problems.at(f"computed_columns[{i}]"):
            scope.failed.update([ref] if refused else [])
            result.append(_computed_column(scope, cc, i, fact_cols))
            scope.failed.discard(ref)
    return result


def _computed_column(scope: _Scope, cc: ComputedColumnSpec, i: int, fact_cols: set[str]) -> ComputedColumn:
    name = _check_name(cc.column_name, f"computed_columns[{i}].column_name")
    if name in fact_cols or name in scope.computed:
        raise InvalidModelError(f"computed column {name} clashes with a column of {scope.fact.identity}")
    # over any table of the model (Kylin 5): the flat table joins them before computing it
    sql, ctype, _ = expressions.typed(cc.expression, scope.schema(), f"computed column {name}", cc.datatype)
    scope.computed[name] = ctype
    return ComputedColumn(
        table_identity=scope.fact.identity,
        table_alias=scope.fact_alias,
        column_name=name,
        expression=cc.expression,
        inner_expression=sql,
        datatype=ctype,
        comment=cc.comment,
    )


def _redefined(computed: list[ComputedColumn], existing: Model | None) -> set[str]:
    """`ALIAS.COLUMN` of the computed columns whose expression or type differs from `existing`'s: their data is
    not the data built before, so they and the measures over them take new ids (the layouts holding the old
    ones are dropped and built again)."""
    old = {(cc.table_alias, cc.column_name): cc for cc in existing.computed_columns} if existing else {}
    return {
        f"{cc.table_alias}.{cc.column_name}"
        for cc in computed
        if (before := old.get((cc.table_alias, cc.column_name))) is not None
        and (before.inner_expression != cc.inner_expression or _changes_values(before.datatype, cc.datatype))
    }


def _changes_values(recorded: str, now: str) -> bool:
    """Whether cells built with a computed column typed `recorded` may hold other values than with `now` (another
    kind of type, or another decimal scale: a SUM cell is cast to the column's SUM type); a wider integer or
    decimal precision does not."""
    if dt.family(recorded) != dt.family(now):
        return True
    return (
        dt.family(now) is dt.TypeFamily.DECIMAL
        and dt.normalize(recorded).split(",")[1:] != dt.normalize(now).split(",")[1:]
    )


def _named_columns(
    scope: _Scope, spec: ModelSpec, existing: Model | None, redefined: set[str], problems: _Problems
) -> list[NamedColumn]:
    refs = [(a, c, t) for a in scope.by_alias for c, t in scope.columns(a).items()]
    counts: dict[str, int] = {}
    for _, c, _ in refs:
        counts[c] = counts.get(c, 0) + 1
    before = existing.all_named_columns if existing else []
    old = {nc.column: nc for nc in before if nc.status is not ColumnStatus.TOMB}
    next_id = max((nc.id for nc in before), default=-1) + 1
    columns: dict[str, NamedColumn] = {}
    for a, c, t in refs:
        ref = f"{a}.{c}"
        name = c if counts[c] == 1 else f"{a}_{c}"
        if ref in old and ref not in redefined:
            cid = old[ref].id
        else:
            cid, next_id = next_id, next_id + 1
        columns[ref] = NamedColumn(id=cid, name=name, column=ref, status=ColumnStatus.EXIST, datatype=t)
    for i, d in enumerate(spec.simplified_dimensions):
        with problems.at(f"simplified_dimensions[{i}]"):
            a, c, _ = scope.resolve(d.column, f"simplified_dimensions[{i}]")
            col = columns[f"{a}.{c}"]
            if col.status is ColumnStatus.DIMENSION:
                raise InvalidModelError(f"simplified_dimensions[{i}]: {d.column} is listed twice")
            col.status = ColumnStatus.DIMENSION
            if d.name:
                col.name = _check_name(d.name, f"simplified_dimensions[{i}].name")
    names: dict[str, str] = {}
    for col in columns.values():
        with problems.at("simplified_dimensions"):
            if col.name in names:
                raise InvalidModelError(f"duplicate column name {col.name} ({names[col.name]} and {col.column})")
            names[col.name] = col.column
    live = {nc.id for nc in columns.values()}
    tombs = [nc.model_copy(update={"status": ColumnStatus.TOMB}) for nc in before if nc.id not in live]
    return sorted([*columns.values(), *tombs], key=lambda nc: nc.id)


def _measures(
    scope: _Scope,
    spec: ModelSpec,
    columns: list[NamedColumn],
    existing: Model | None,
    redefined: set[str],
    problems: _Problems,
) -> list[Measure]:
    dims = {nc.name for nc in columns if nc.status is ColumnStatus.DIMENSION}
    old = {m.name.upper(): m for m in existing.all_measures} if existing else {}
    next_id = max((m.id for m in old.values()), default=MEASURE_ID_BASE - 1) + 1
    result: dict[str, Measure] = {}
    for i, ms in enumerate(spec.simplified_measures):
        field = f"simplified_measures[{i}]"
        with problems.at(field):
            name = _check_name(ms.name, f"{field}.name")
            if name in result:
                raise InvalidModelError(f"{field}: duplicate measure name {name}")
            if name in dims:
                raise InvalidModelError(f"{field}: measure name {name} is also a dimension name")
            function = measure_rules.function_of(
                ms.expression, ms.parameters(), ms.return_type, scope.resolve, f"{field} ({name})"
            )
            prior = old.get(name)
            reads_redefined = any(p.value in redefined for p in function.parameters if p.type is ParameterType.COLUMN)
            if prior is not None and not prior.tomb and prior.function == function and not reads_redefined:
                mid = prior.id
            else:
                mid, next_id = next_id, next_id + 1
            result[name] = Measure(id=mid, name=name, function=function, comment=ms.comment)
    if not result and not spec.simplified_measures:
        # Kylin adds COUNT(*) to every model; precube does so when no measure is given
        prior = old.get("COUNT_ALL")
        keep = prior is not None and not prior.tomb and prior.function == measure_rules.count_star()
        result["COUNT_ALL"] = Measure(
            id=prior.id if prior and keep else next_id, name="COUNT_ALL", function=measure_rules.count_star()
        )
    live_ids = {m.id for m in result.values()}
    tombs = [m.model_copy(update={"tomb": True}) for m in old.values() if m.id not in live_ids]
    return sorted([*result.values(), *tombs], key=lambda m: m.id)


def _partition(scope: _Scope, desc: PartitionDesc | None) -> PartitionDesc | None:
    if desc is None or not desc.partition_date_column:
        return None
    a, c, t = scope.resolve(desc.partition_date_column, "partition_desc.partition_date_column")
    if a != scope.fact_alias:
        raise InvalidModelError(
            f"partition_desc: partition column {a}.{c} must be on the fact table {scope.fact_alias}"
        )
    if c in scope.computed:
        # a segment's range is applied where the fact table is read, before any computed column exists
        raise InvalidModelError(
            f"partition_desc.partition_date_column: {a}.{c} is a computed column; partition on a column of "
            f"{scope.fact.identity} itself (a date, timestamp, or formatted string or integer: partition_date_format)"
        )
    check_format(desc.partition_date_format, t)
    return desc.model_copy(update={"partition_date_column": f"{a}.{c}"})


def significant_changes(old: Model, new: Model) -> list[str]:
    """Why `new` invalidates the data built for `old` (seed 002 "Significant Change"); empty if it does not."""
    reasons = []
    if old.partition_desc != new.partition_desc:
        reasons.append("partition column changed")
    if (old.fact_table, old.root_alias) != (new.fact_table, new.root_alias):
        reasons.append("fact table changed")
    if _join_shape(old) != _join_shape(new):
        reasons.append("joins changed")
    if old.filter_condition != new.filter_condition:
        reasons.append("filter condition changed")
    flags = [{j.alias: j.flattenable for j in m.join_tables} for m in (old, new)]
    if _join_shape(old) == _join_shape(new) and flags[0] != flags[1]:
        reasons.append("a lookup's precompute flag changed")
    return reasons


def _join_shape(model: Model) -> list[tuple[str, str, str, list[str], list[str]]]:
    return sorted((j.alias, j.table, j.join.type, j.join.primary_key, j.join.foreign_key) for j in model.join_tables)


def used_columns(model: Model) -> set[str]:
    """ALIAS.COLUMN references the model relies on (dimensions, measures, joins, partition, filter, computed)."""
    used = {nc.column for nc in model.dimensions()}
    used |= {p.value for m in model.measures() for p in m.function.parameters if p.type is ParameterType.COLUMN}
    for j in model.join_tables:
        used |= set(j.join.primary_key) | set(j.join.foreign_key)
    if model.partition_desc:
        used.add(model.partition_desc.partition_date_column)
    return used


def broken_reason(model: Model, tables: Mapping[str, Table]) -> str | None:
    """Why the model no longer fits the project's tables (a dropped table or used column, an
    incompatible retype, an expression that no longer types), or None if it still fits."""
    by_upper = {k.upper(): v for k, v in tables.items()}
    alias_table = {model.root_alias: model.fact_table, **{j.alias: j.table for j in model.join_tables}}
    for alias, identity in alias_table.items():
        if identity.upper() not in by_upper:
            return f"table {identity} ({alias}) is no longer loaded"
    computed = {f"{cc.table_alias}.{cc.column_name}" for cc in model.computed_columns}
    recorded = {nc.column: nc.datatype for nc in model.all_named_columns}
    for ref in sorted(used_columns(model) - computed):
        alias, _, column = ref.partition(".")
        col = by_upper[alias_table[alias].upper()].column(column)
        if col is None:
            return f"column {ref} used by the model was dropped from {alias_table[alias]}"
        old_type = recorded.get(ref, "")
        if old_type and not dt.comparable(old_type, col.datatype):
            return f"column {ref} changed type incompatibly: {old_type} -> {col.datatype}"
    try:
        spec = spec_of(model)
        build_model(spec, tables, model)
    except InvalidModelError as err:
        return err.message
    return None


def retyped_columns(model: Model, tables: Mapping[str, Table]) -> dict[str, tuple[str, str]]:
    """Computed columns whose recorded type differs from the one Spark gives their expression so that built
    cells may hold other values (`_changes_values`; a model saved before precube typed them as Spark does):
    name → (recorded type, Spark's). Re-saving the model re-types them and drops the layouts holding them."""
    spec = spec_of(model)
    problems = _Problems()
    try:
        computed = _computed_columns(_Scope(spec, tables, problems), spec, problems)
        problems.raise_found()
    except InvalidModelError:
        return {}  # a model that no longer fits its tables: `broken_reason` says why
    now = {cc.column_name: cc.datatype for cc in computed}
    return {
        cc.column_name: (cc.datatype, now[cc.column_name])
        for cc in model.computed_columns
        if cc.column_name in now and _changes_values(cc.datatype, now[cc.column_name])
    }


def reading_columns(model: Model, refs: set[str]) -> set[int]:
    """The ids of the named columns `refs` (`ALIAS.COLUMN`) and of the measures that read them."""
    ids = {nc.id for nc in model.live_columns() if nc.column in refs}
    params = [(m.id, m.function.parameters) for m in model.measures()]
    return ids | {i for i, ps in params if any(p.type is ParameterType.COLUMN and p.value in refs for p in ps)}


def spec_of(model: Model) -> ModelSpec:
    """The spec that rebuilds `model` (for edits and re-validation)."""
    return ModelSpec(
        alias=model.alias,
        description=model.description,
        fact_table=model.fact_table,
        fact_table_alias=model.fact_table_alias,
        join_tables=model.join_tables,
        computed_columns=[
            ComputedColumnSpec(
                column_name=cc.column_name,
                expression=cc.expression,
                datatype=cc.datatype if expressions.declared(cc.expression, cc.inner_expression) else None,
                comment=cc.comment,
            )
            for cc in model.computed_columns
        ],
        simplified_dimensions=[DimensionSpec(column=nc.column, name=nc.name) for nc in model.dimensions()],
        simplified_measures=[
            MeasureSpec(
                name=m.name,
                expression=m.function.expression.value,
                parameter_value=m.function.parameters,
                return_type=m.function.returntype if m.function.expression in measure_rules.SKETCHES else "",
                comment=m.comment,
            )
            for m in model.measures()
        ],
        partition_desc=model.partition_desc,
        filter_condition=model.filter_condition,
        segment_config=model.segment_config,
    )
