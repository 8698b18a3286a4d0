"""Model building and validation, significant changes and broken models."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from precube.metadata import ColumnStatus, FunctionExpression, Model, Table
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling.errors import InvalidModelError
from precube.modeling.model_rules import (
    broken_reason,
    build_model,
    reading_columns,
    retyped_columns,
    significant_changes,
    spec_of,
)
from precube.modeling.model_spec import ModelSpec, parse_spec
from tests.modeling.conftest import ssb_spec_data


def _spec(**changes: Any) -> ModelSpec:
    data = ssb_spec_data()
    data.update(changes)
    return parse_spec(data)


def test_ssb_model_builds(ssb_spec: ModelSpec, ssb_tables: dict[str, Table]) -> None:
    model = build_model(ssb_spec, ssb_tables)
    assert model.fact_table == "SSB.LINEORDER" and model.root_alias == "LINEORDER"
    assert [j.alias for j in model.join_tables] == ["DATES", "CUSTOMER", "SUPPLIER", "PART"]
    ids = [c.id for c in model.all_named_columns]
    assert ids == list(range(len(ids)))  # 0.. in table order, computed columns last
    cc = model.computed_columns[0]
    assert (cc.column_name, cc.datatype) == ("V_REVENUE", "bigint")
    assert cc.inner_expression == "LINEORDER.LO_EXTENDEDPRICE * LINEORDER.LO_DISCOUNT"
    assert model.column_by_name("V_REVENUE") is not None
    dims = {c.name for c in model.dimensions()}
    assert {"D_YEAR", "C_CITY", "P_BRAND", "LO_ORDERDATE"} <= dims and len(dims) == 16
    measures = {m.name: m for m in model.measures()}
    assert [m.id for m in model.measures()] == list(range(MEASURE_ID_BASE, MEASURE_ID_BASE + len(measures)))
    assert measures["REVENUE"].function.returntype == "bigint"
    assert measures["CUSTOMERS"].function.returntype == "bitmap"
    assert measures["CUSTOMERS_APPROX"].function.returntype == "hllc(14)"
    assert measures["COUNT_ALL"].function.parameters[0].value == "1"
    assert model.partition_desc is not None
    assert model.partition_desc.partition_date_column == "LINEORDER.LO_ORDERDATE"
    assert model.semantic_version == 0


def test_ambiguous_names_get_alias_prefix(ssb_tables: dict[str, Table]) -> None:
    tables = dict(ssb_tables)
    dates = tables["SSB.DATES"]
    tables["SSB.DATES2"] = dates.model_copy(update={"name": "DATES2"})
    spec = _spec(
        join_tables=[
            *ssb_spec_data()["join_tables"],  # type: ignore[misc]
            {
                "table": "SSB.DATES2",
                "alias": "COMMIT_DATES",
                "join": {"foreign_key": ["LINEORDER.LO_COMMITDATE"], "primary_key": ["COMMIT_DATES.D_DATEKEY"]},
            },
        ],
        simplified_dimensions=["DATES.D_YEAR", {"column": "COMMIT_DATES.D_YEAR", "name": "COMMIT_YEAR"}],
        aggregation_groups=[],
    )
    model = build_model(spec, tables)
    assert model.column_by_name("DATES_D_YEAR") is not None  # the name exists on two tables: prefixed
    names = {c.column: c.name for c in model.all_named_columns}
    assert names["DATES.D_MONTH"] == "DATES_D_MONTH" and names["COMMIT_DATES.D_MONTH"] == "COMMIT_DATES_D_MONTH"
    assert names["COMMIT_DATES.D_YEAR"] == "COMMIT_YEAR"


def _without_groups(**changes: Any) -> ModelSpec:
    return _spec(aggregation_groups=[], **changes)


def _joins(*overrides: tuple[int, dict[str, Any]]) -> list[dict[str, Any]]:
    joins = copy.deepcopy(ssb_spec_data()["join_tables"])
    assert isinstance(joins, list)
    for i, change in overrides:
        joins[i].update(change)
    return joins


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("unknown fact", {"fact_table": "SSB.NOPE"}, "fact_table: table SSB.NOPE is not loaded"),
    ("unknown lookup", {"join_tables": _joins((0, {"table": "SSB.X"}))}, r"join_tables\[0\].table: table SSB.X"),
    ("unknown dim", {"simplified_dimensions": ["DATES.D_NOPE"]}, r"unknown column DATES.D_NOPE \(table SSB.DATES\)"),
    ("unknown alias", {"simplified_dimensions": ["FOO.D_YEAR"]}, "unknown table alias FOO"),
    ("ambiguous", {"simplified_dimensions": ["D_NOPE"]}, "unknown column D_NOPE"),
    (
        "key type",
        {
            "join_tables": _joins(
                (0, {"join": {"foreign_key": ["LINEORDER.LO_SHIPMODE"], "primary_key": ["DATES.D_DATEKEY"]}})
            )
        },
        "join key type mismatch: LINEORDER.LO_SHIPMODE is varchar.4096. but DATES.D_DATEKEY is date",
    ),
    (
        "pk elsewhere",
        {
            "join_tables": _joins(
                (0, {"join": {"foreign_key": ["LINEORDER.LO_ORDERDATE"], "primary_key": ["PART.P_PARTKEY"]}})
            )
        },
        "PART.P_PARTKEY is not a column of DATES",
    ),
    (
        "cycle",
        {
            "join_tables": _joins(
                (1, {"join": {"foreign_key": ["SUPPLIER.S_SUPPKEY"], "primary_key": ["CUSTOMER.C_CUSTKEY"]}}),
                (2, {"join": {"foreign_key": ["CUSTOMER.C_CUSTKEY"], "primary_key": ["SUPPLIER.S_SUPPKEY"]}}),
            )
        },
        "cycle in joins: CUSTOMER -> SUPPLIER -> CUSTOMER",
    ),
    ("dup alias", {"join_tables": _joins((1, {"alias": "DATES"}))}, "duplicate table alias DATES"),
    (
        "dup measure",
        {"simplified_measures": [{"name": "A", "expression": "COUNT"}, {"name": "a", "expression": "COUNT"}]},
        "duplicate measure name A",
    ),
    (
        "sum text",
        {"simplified_measures": [{"name": "S", "expression": "SUM", "column": "LINEORDER.LO_SHIPMODE"}]},
        "SUM needs a numeric column, not varchar",
    ),
    (
        "bad function",
        {"simplified_measures": [{"name": "S", "expression": "AVG", "column": "LINEORDER.LO_TAX"}]},
        "unknown function 'AVG'",
    ),
    (
        "hll precision",
        {
            "simplified_measures": [
                {"name": "U", "expression": "COUNT_DISTINCT", "column": "LO_CUSTKEY", "return_type": "hllc(30)"}
            ]
        },
        r"bitmap or hllc\(10..16\)",
    ),
    (
        "topn arity",
        {"simplified_measures": [{"name": "T", "expression": "TOP_N", "column": "LO_REVENUE"}]},
        r"TOP_N takes at least 2 parameter\(s\), got 1",
    ),
    (
        "min constant",
        {
            "simplified_measures": [
                {"name": "M", "expression": "MIN", "parameter_value": [{"type": "constant", "value": "1"}]}
            ]
        },
        "MIN takes columns, not the constant '1'",
    ),
    (
        "partition on lookup",
        {"partition_desc": {"partition_date_column": "DATES.D_DATEKEY", "partition_date_format": "yyyy-MM-dd"}},
        "partition column DATES.D_DATEKEY must be on the fact table LINEORDER",
    ),
    (
        "cc unknown column",
        {"computed_columns": [{"column_name": "X", "expression": "DATES.D_NOPE + 1"}]},
        "computed column X",
    ),
    (
        "cc clash",
        {"computed_columns": [{"column_name": "LO_TAX", "expression": "LINEORDER.LO_TAX + 1"}]},
        "computed column LO_TAX clashes",
    ),
    (
        "cc aggregate",
        {"computed_columns": [{"column_name": "X", "expression": "SUM(LO_TAX)"}]},
        "may not contain aggregates",
    ),
    ("cc syntax", {"computed_columns": [{"column_name": "X", "expression": "LO_TAX +"}]}, "is not valid SQL"),
    (
        "cc declared type it does not cast to",
        {"computed_columns": [{"column_name": "X", "expression": "LO_TAX > 1", "datatype": "date"}]},
        "computed_columns\\[0\\]: computed column X 'LO_TAX > 1' is boolean, which does not cast to its datatype date;",
    ),
    (
        "cc no type",
        {"computed_columns": [{"column_name": "X", "expression": "my_udf(LO_TAX)", "datatype": "decimal(("}]},
        "computed_columns\\[0\\]: computed column X: datatype 'decimal\\(\\(' is not a type;",
    ),
    (
        "cc partition",
        {
            "computed_columns": [
                {"column_name": "V_REVENUE", "expression": "LO_EXTENDEDPRICE * LO_DISCOUNT"},
                {"column_name": "DAY", "expression": "to_date(cast(LO_ORDERDATE as string))"},
            ],
            "partition_desc": {"partition_date_column": "LINEORDER.DAY", "partition_date_format": "yyyy-MM-dd"},
        },
        "^partition_desc.partition_date_column: LINEORDER.DAY is a computed column; partition on a column of SSB.LINEORDER",
    ),
    ("filter type", {"filter_condition": "LINEORDER.LO_TAX + 1"}, "is not a condition"),
    ("filter column", {"filter_condition": "LINEORDER.NOPE > 1"}, "filter_condition"),
    ("dup dim", {"simplified_dimensions": ["DATES.D_YEAR", "D_YEAR"]}, "listed twice"),
    ("bad alias", {"alias": "my model"}, "invalid model alias 'my model'"),
]


@pytest.mark.parametrize(("changes", "message"), [(c, m) for _, c, m in BAD], ids=[n for n, _, _ in BAD])
def test_invalid_models_are_refused(ssb_tables: dict[str, Table], changes: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidModelError, match=message):
        build_model(_without_groups(**changes), ssb_tables)


def test_edits_keep_ids_and_significant_changes_bump_version(ssb_spec: ModelSpec, ssb_tables: dict[str, Table]) -> None:
    first = build_model(ssb_spec, ssb_tables)
    data = ssb_spec_data()
    data["simplified_measures"] = [m for m in data["simplified_measures"] if m["name"] != "QUANTITY"]  # type: ignore[union-attr,index]
    data["simplified_measures"].append({"name": "MAX_TAX", "expression": "MAX", "column": "LO_TAX"})  # type: ignore[union-attr]
    data["simplified_dimensions"] = data["simplified_dimensions"][1:]  # type: ignore[index]
    second = build_model(parse_spec(data), ssb_tables, first)
    assert second.uuid == first.uuid and second.semantic_version == 0 and significant_changes(first, second) == []
    by_name = {m.name: m for m in second.all_measures}
    assert by_name["QUANTITY"].tomb and by_name["REVENUE"].id == first.measure_by_name("REVENUE").id  # type: ignore[union-attr]
    assert by_name["MAX_TAX"].id == max(m.id for m in first.all_measures) + 1
    orderdate = second.column_by_name("LO_ORDERDATE")
    assert orderdate is not None and orderdate.status is ColumnStatus.EXIST
    assert {c.column: c.id for c in second.all_named_columns} == {c.column: c.id for c in first.all_named_columns}
    # a measure that comes back does not get its old id
    data["simplified_measures"].append({"name": "QUANTITY", "expression": "SUM", "column": "LO_QUANTITY"})  # type: ignore[union-attr]
    third = build_model(parse_spec(data), ssb_tables, second)
    assert third.measure_by_name("QUANTITY").id > by_name["MAX_TAX"].id  # type: ignore[union-attr]

    for change, reason in [
        ({"filter_condition": "LINEORDER.LO_QUANTITY > 0"}, "filter condition changed"),
        ({"partition_desc": None}, "partition column changed"),
        (
            {
                "join_tables": _joins(
                    (
                        0,
                        {
                            "join": {
                                "type": "INNER",
                                "foreign_key": ["LINEORDER.LO_ORDERDATE"],
                                "primary_key": ["DATES.D_DATEKEY"],
                            }
                        },
                    )
                )
            },
            "joins changed",
        ),
        ({"join_tables": _joins((3, {"flattenable": "normalized"}))}, "a lookup's precompute flag changed"),
    ]:
        changed = build_model(_spec(**change), ssb_tables, first)
        assert significant_changes(first, changed) == [reason]
        assert changed.semantic_version == first.semantic_version + 1


def _reloaded(
    tables: dict[str, Table], identity: str, drop: str = "", retype: tuple[str, str] | None = None
) -> dict[str, Table]:
    table = tables[identity].model_copy(deep=True)
    table.columns = [c for c in table.columns if c.name != drop]
    if retype:
        for c in table.columns:
            if c.name == retype[0]:
                c.datatype = retype[1]
    return {**tables, identity: table}


def test_broken_and_recovered(ssb_spec: ModelSpec, ssb_tables: dict[str, Table]) -> None:
    model = build_model(ssb_spec, ssb_tables)
    assert broken_reason(model, ssb_tables) is None
    assert broken_reason(model, _reloaded(ssb_tables, "SSB.PART", drop="P_COLOR")) is None  # unused column
    dropped = broken_reason(model, _reloaded(ssb_tables, "SSB.CUSTOMER", drop="C_CITY"))
    assert dropped == "column CUSTOMER.C_CITY used by the model was dropped from SSB.CUSTOMER"
    retyped = broken_reason(model, _reloaded(ssb_tables, "SSB.LINEORDER", retype=("LO_REVENUE", "varchar(4096)")))
    assert retyped == "column LINEORDER.LO_REVENUE changed type incompatibly: bigint -> varchar(4096)"
    widened = _reloaded(ssb_tables, "SSB.DATES", retype=("D_YEAR", "bigint"))
    assert broken_reason(model, widened) is None  # integer widening is compatible
    cc_input = broken_reason(model, _reloaded(ssb_tables, "SSB.LINEORDER", drop="LO_DISCOUNT"))
    assert cc_input is not None and "LO_DISCOUNT" in cc_input
    gone = {k: v for k, v in ssb_tables.items() if k != "SSB.PART"}
    assert broken_reason(model, gone) == "table SSB.PART (PART) is no longer loaded"


def test_spec_of_round_trips(ssb_spec: ModelSpec, ssb_tables: dict[str, Table]) -> None:
    model = build_model(ssb_spec, ssb_tables)
    again = build_model(spec_of(model), ssb_tables, model)
    assert again.model_dump(exclude={"last_modified", "create_time"}) == model.model_dump(
        exclude={"last_modified", "create_time"}
    )
    assert isinstance(again, Model) and again.measures()[0].function.expression is FunctionExpression.COUNT


def test_count_distinct_of_several_columns_and_count_of_a_column(ssb_tables: dict[str, Table]) -> None:
    """COUNT_DISTINCT takes several columns, precise (a dictionary of their tuples) or HLL; COUNT a column."""
    pair = [{"type": "column", "value": f"LINEORDER.{c}"} for c in ("LO_PARTKEY", "LO_SUPPKEY")]
    data = ssb_spec_data()
    data["simplified_measures"] += [
        {"name": "PAIRS", "expression": "COUNT_DISTINCT", "parameter_value": pair, "return_type": "bitmap"},
        {"name": "PAIRS_APPROX", "expression": "COUNT_DISTINCT", "parameter_value": pair, "return_type": "hllc(12)"},
        {"name": "REVENUE_ROWS", "expression": "COUNT", "column": "LINEORDER.LO_REVENUE"},
    ]
    measures = {m.name: m.function for m in build_model(parse_spec(data), ssb_tables).measures()}
    assert [p.value for p in measures["PAIRS"].parameters] == ["LINEORDER.LO_PARTKEY", "LINEORDER.LO_SUPPKEY"]
    assert (measures["PAIRS"].returntype, measures["PAIRS_APPROX"].returntype) == ("bitmap", "hllc(12)")
    assert measures["REVENUE_ROWS"].expression is FunctionExpression.COUNT
    assert measures["REVENUE_ROWS"].parameters[0].value == "LINEORDER.LO_REVENUE"


def _decimal_prices(tables: dict[str, Table]) -> dict[str, Table]:
    """LO_EXTENDEDPRICE and LO_DISCOUNT as TPC-H types them: DECIMAL(15,2)."""
    price = _reloaded(tables, "SSB.LINEORDER", retype=("LO_EXTENDEDPRICE", "decimal(15,2)"))
    return _reloaded(price, "SSB.LINEORDER", retype=("LO_DISCOUNT", "decimal(15,2)"))


def test_computed_columns_are_typed_as_spark_types_them(ssb_tables: dict[str, Table]) -> None:
    tables = _decimal_prices(ssb_tables)
    spec = _spec(
        computed_columns=[
            {"column_name": "V_NET", "expression": "LINEORDER.LO_EXTENDEDPRICE * (1 - LINEORDER.LO_DISCOUNT)"},
            {"column_name": "V_SHARE", "expression": "LINEORDER.LO_DISCOUNT / 3"},
            {"column_name": "V_ROUNDED", "expression": "round(LINEORDER.LO_EXTENDEDPRICE * 0.05, 1)"},
        ],
        simplified_measures=[{"name": "NET", "expression": "SUM", "column": "LINEORDER.V_NET"}],
    )
    model = build_model(spec, tables)
    assert [(cc.column_name, cc.datatype) for cc in model.computed_columns] == [
        ("V_NET", "decimal(32,4)"),
        ("V_SHARE", "decimal(19,6)"),
        ("V_ROUNDED", "decimal(16,1)"),
    ]
    assert model.measure_by_name("NET").function.returntype == "decimal(38,4)"  # type: ignore[union-attr]


def test_a_computed_column_may_read_the_lookups(ssb_tables: dict[str, Table]) -> None:
    spec = _spec(
        computed_columns=[
            {"column_name": "NEXT_YEAR", "expression": "DATES.D_YEAR + 1"},
            {"column_name": "NET", "expression": "LINEORDER.LO_REVENUE - PART.P_SIZE * LINEORDER.LO_QUANTITY"},
        ],
        simplified_measures=[{"name": "NETS", "expression": "SUM", "column": "LINEORDER.NET"}],
    )
    model = build_model(spec, ssb_tables)
    assert [(cc.table_alias, cc.column_name, cc.datatype) for cc in model.computed_columns] == [
        ("LINEORDER", "NEXT_YEAR", "integer"),
        ("LINEORDER", "NET", "bigint"),
    ]
    assert model.computed_columns[1].inner_expression == "LINEORDER.LO_REVENUE - PART.P_SIZE * LINEORDER.LO_QUANTITY"


def test_a_computed_column_redefined_gets_new_ids_for_it_and_its_measures(ssb_tables: dict[str, Table]) -> None:
    cc = {"column_name": "V_COST", "expression": "LINEORDER.LO_SUPPLYCOST * 2"}
    measures = [
        {"name": "COST", "expression": "SUM", "column": "LINEORDER.V_COST"},
        {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
    ]
    dims = ["LINEORDER.V_COST", "DATES.D_YEAR"]
    first = build_model(
        _spec(computed_columns=[cc], simplified_measures=measures, simplified_dimensions=dims), ssb_tables
    )
    same = build_model(spec_of(first), ssb_tables, first)
    assert same.model_dump(exclude={"last_modified", "create_time"}) == first.model_dump(
        exclude={"last_modified", "create_time"}
    )
    changed = {**cc, "expression": "LINEORDER.LO_SUPPLYCOST * 3"}
    second = build_model(
        _spec(computed_columns=[changed], simplified_measures=measures, simplified_dimensions=dims), ssb_tables, first
    )
    old_cc, new_cc = (m.column_by_name("V_COST") for m in (first, second))
    assert old_cc is not None and new_cc is not None and new_cc.id > old_cc.id
    tomb = next(c for c in second.all_named_columns if c.id == old_cc.id)
    assert tomb.status is ColumnStatus.TOMB
    assert second.measure_by_name("COST").id != first.measure_by_name("COST").id  # type: ignore[union-attr]
    assert second.measure_by_name("REVENUE").id == first.measure_by_name("REVENUE").id  # type: ignore[union-attr]
    assert second.column_by_name("D_YEAR").id == first.column_by_name("D_YEAR").id  # type: ignore[union-attr]
    assert significant_changes(first, second) == []  # only the layouts holding it are dropped, not the segments


def test_a_computed_column_recorded_with_another_type_is_found(ssb_tables: dict[str, Table]) -> None:
    tables = _decimal_prices(ssb_tables)
    spec = _spec(
        computed_columns=[
            {"column_name": "V_NET", "expression": "LINEORDER.LO_EXTENDEDPRICE * (1 - LINEORDER.LO_DISCOUNT)"}
        ],
        simplified_measures=[{"name": "NET", "expression": "SUM", "column": "LINEORDER.V_NET"}],
    )
    model = build_model(spec, tables)
    assert retyped_columns(model, tables) == {}
    # as a model saved by an earlier precube recorded it (sqlglot's type, not Spark's)
    model.computed_columns[0].datatype = "decimal(15,2)"
    assert retyped_columns(model, tables) == {"V_NET": ("decimal(15,2)", "decimal(32,4)")}
    model.computed_columns[0].datatype = "decimal(31,4)"  # a wider precision changes no value: not reported
    assert retyped_columns(model, tables) == {}
    net = model.measure_by_name("NET")
    assert net is not None and net.id in reading_columns(model, {"LINEORDER.V_NET"})
    # an integer widened by a reload (INT → BIGINT: the column INT * 2 becomes BIGINT) changes no value
    narrow = _reloaded(ssb_tables, "SSB.LINEORDER", retype=("LO_SUPPLYCOST", "integer"))
    cost = [{"column_name": "V_COST", "expression": "LINEORDER.LO_SUPPLYCOST * 2"}]
    plain = build_model(_spec(computed_columns=cost, simplified_measures=[]), narrow)
    assert plain.computed_columns[0].datatype == "integer"
    assert retyped_columns(plain, ssb_tables) == {}


def test_a_computed_column_takes_its_declared_type_and_date_functions_are_typed(ssb_tables: dict[str, Table]) -> None:
    """A declared `datatype` is the column's (cast to); date and timestamp functions get Spark's types."""
    spec = _spec(
        computed_columns=[
            {"column_name": "V_REVENUE", "expression": "LINEORDER.LO_EXTENDEDPRICE * LINEORDER.LO_DISCOUNT"},
            {"column_name": "ORDER_DAY", "expression": "make_date(DATES.D_YEAR, DATES.D_MONTHNUMINYEAR, 1)"},
            {"column_name": "ORDER_MONTH", "expression": "date_trunc('MONTH', to_date(DATES.D_DATE))"},
            {
                "column_name": "MONTH_DAY",
                "expression": "date_trunc('MONTH', to_date(DATES.D_DATE))",
                "datatype": "date",
            },
            {"column_name": "FIRST", "expression": "trunc(to_date(DATES.D_DATE), 'MM')"},
            {"column_name": "LATER", "expression": "date_add(to_date(DATES.D_DATE), 7)"},
            {"column_name": "TAX", "expression": "LINEORDER.LO_TAX", "datatype": "decimal(10,2)"},
            {"column_name": "UNKNOWN", "expression": "some_udf(LINEORDER.LO_TAX)", "datatype": "bigint"},
        ]
    )
    model = build_model(spec, ssb_tables)
    assert [(cc.column_name, cc.datatype) for cc in model.computed_columns][1:] == [
        ("ORDER_DAY", "date"),
        ("ORDER_MONTH", "timestamp"),
        ("MONTH_DAY", "date"),
        ("FIRST", "date"),
        ("LATER", "date"),
        ("TAX", "decimal(10,2)"),
        ("UNKNOWN", "bigint"),
    ]
    inner = {cc.column_name: cc.inner_expression for cc in model.computed_columns}
    assert inner["TAX"] == "CAST(LINEORDER.LO_TAX AS DECIMAL(10, 2))" and inner["ORDER_DAY"].startswith("MAKE_DATE(")
    # the declared types survive `model show` then `model update` (and the inferred ones are not written)
    shown = {cc.column_name: cc.datatype for cc in spec_of(model).computed_columns}
    assert shown == {n: None for n in inner} | {"MONTH_DAY": "date", "TAX": "decimal(10,2)", "UNKNOWN": "bigint"}
    again = build_model(spec_of(model), ssb_tables, model)
    assert again.computed_columns == model.computed_columns
    with pytest.raises(InvalidModelError, match="cannot infer its type; declare it \\(datatype: TYPE\\)"):
        build_model(_spec(computed_columns=[{"column_name": "U", "expression": "some_udf(LO_TAX)"}]), ssb_tables)
