"""`/kylin/api/index_plans` and `/models/{model}/indexes` on a live server: the layout-count preview equals
what saving the rules then stores, the diff equals what changes, layouts with their built rows and bytes as
the store holds them, table indexes, the limits, the permission boundary, hostile input."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from precube.cli.app import run
from precube.metadata import Dataflow, IndexPlan, Model, SegmentDetails
from precube.modeling.agg_group import MAX_COMBINATION
from precube.modeling.agg_group import preview as preview_rule
from precube.modeling.model_store import find_model, groups_of, model_dims, model_measures
from tests.server.conftest import ServerHome, data, error, fingerprint
from tests.server.live import LiveServer
from tests.server.model_home import DEMO_SPEC, OwnProject, own_project, small_spec

API = "/kylin/api"
GROUPS: list[dict[str, Any]] = copy.deepcopy(DEMO_SPEC["aggregation_groups"])


@pytest.fixture(scope="module")
def own(live: LiveServer, server_home: ServerHome) -> OwnProject:
    return own_project(live, server_home)


@pytest.fixture
def client(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client() as c:
        yield c


def new_model(client: httpx.Client, project: str, alias: str) -> str:
    made = data(client.post(f"{API}/models", json=small_spec(alias) | {"project": project}))
    return str(made["uuid"])


def stored(live: LiveServer, project: str, alias: str) -> tuple[Model, IndexPlan]:
    with live.state.store.read(project) as tx:
        model = find_model(tx, alias)
        assert model is not None
        return model, tx.require(IndexPlan, model.uuid)


def rule_layouts(plan: IndexPlan) -> set[int]:
    return {lay.id for index in plan.rule_based_indexes for lay in index.layouts}


def test_preview_count_equals_what_saving_the_rules_stores(
    live: LiveServer, own: OwnProject, client: httpx.Client
) -> None:
    new_model(client, own.name, "i_rules")
    body = {"project": own.name, "model": "i_rules", "aggregation_groups": GROUPS}
    before = fingerprint(live.settings)
    counted = data(client.put(f"{API}/index_plans/agg_index_count", json=body))
    diff = data(client.put(f"{API}/index_plans/rule_based_index_diff", json=body))
    assert fingerprint(live.settings) == before  # previews save nothing
    assert [c["status"] for c in counted["agg_index_counts"]] == ["SUCCESS"] * len(GROUPS)
    assert counted["total_exact"] and counted["total_count"]["status"] == "SUCCESS"
    _, plan_before = stored(live, own.name, "i_rules")

    saved = data(client.put(f"{API}/index_plans/rule", json=body))
    model, plan = stored(live, own.name, "i_rules")
    assert plan.rule_based_index is not None
    # the CLI's `index set-rules` reports `preview(stored rule).total`: one count, whichever way it is asked
    total = preview_rule(plan.rule_based_index, model_dims(model), model_measures(model)).total
    assert counted["total_count"]["result"] == total == len(plan.rule_based_index.layout_id_mapping)
    assert len(rule_layouts(plan)) == total == saved["rule_layouts"]
    added = {lay.id for lay in plan.all_layouts()} - {lay.id for lay in plan_before.all_layouts()}
    assert diff["added_layouts"] == saved["added_layouts"] == sorted(added)
    assert diff["increase_layouts"] == len(added) and diff["decrease_layouts"] == 0
    assert saved["total_layouts"] == len(plan.all_layouts())

    got = data(client.get(f"{API}/index_plans/rule", params={"project": own.name, "model": model.uuid}))
    assert got["aggregation_groups"] == [g.model_dump(mode="json") for g in groups_of(model, plan.rule_based_index)]
    assert [g["includes"] for g in got["aggregation_groups"]] == [g["includes"] for g in GROUPS]

    # dropping the second group: the diff names exactly the layouts the plan then loses
    smaller = body | {"aggregation_groups": GROUPS[:1], "model": None, "model_name": "i_rules"}
    diff = data(client.put(f"{API}/index_plans/rule_based_index_diff", json=smaller))
    data(client.put(f"{API}/index_plans/agg_groups", json=smaller))
    _, after = stored(live, own.name, "i_rules")
    lost = {lay.id for lay in plan.all_layouts()} - {lay.id for lay in after.all_layouts()}
    assert diff["removed_layouts"] == sorted(lost) and lost and diff["dropped_built_layouts"] == []


def test_rules_without_their_base_layout(live: LiveServer, own: OwnProject, client: httpx.Client) -> None:
    new_model(client, own.name, "i_nobase")
    body = {"project": own.name, "model": "i_nobase", "aggregation_groups": GROUPS}
    data(client.put(f"{API}/index_plans/rule", json=body))
    _, with_base = stored(live, own.name, "i_nobase")
    off = body | {"base_layout_enabled": False}
    counted = data(client.put(f"{API}/index_plans/agg_index_count", json=off))
    diff = data(client.put(f"{API}/index_plans/rule_based_index_diff", json=off))
    saved = data(client.put(f"{API}/index_plans/rule", json=off))
    model, plan = stored(live, own.name, "i_nobase")
    assert plan.rule_based_index is not None and plan.rule_based_index.base_layout_enabled is False
    lost = rule_layouts(with_base) - rule_layouts(plan)
    assert len(lost) == 1 and diff["removed_layouts"] == saved["removed_layouts"] == sorted(lost)
    assert counted["total_count"]["result"] == len(rule_layouts(plan)) == len(rule_layouts(with_base)) - 1
    got = data(client.get(f"{API}/index_plans/rule", params={"project": own.name, "model": model.uuid}))
    assert got["base_layout_enabled"] is False
    data(client.put(f"{API}/index_plans/rule", json=body))  # not given: kept
    assert stored(live, own.name, "i_nobase")[1].rule_based_index.base_layout_enabled is False  # type: ignore[union-attr]


def test_groups_by_kylin_ids_store_the_same_rule_as_by_names(
    live: LiveServer, own: OwnProject, client: httpx.Client
) -> None:
    new_model(client, own.name, "i_names")
    new_model(client, own.name, "i_ids")
    model, _ = stored(live, own.name, "i_ids")

    def ids(group: dict[str, Any]) -> dict[str, Any]:
        col = {c.name: c.id for c in model.all_named_columns}
        rule = group.get("select_rule", {})
        return {
            "includes": [col[n] for n in group["includes"]],
            "measures": [model.measure_by_name(n).id for n in group["measures"]],  # type: ignore[union-attr]
            "select_rule": {
                "mandatory_dims": [col[n] for n in rule.get("mandatory_dims", [])],
                "hierarchy_dims": [[col[n] for n in h] for h in rule.get("hierarchy_dims", [])],
                "joint_dims": [[col[n] for n in j] for j in rule.get("joint_dims", [])],
            },
        }

    data(
        client.put(
            f"{API}/index_plans/rule", json={"project": own.name, "model": "i_names", "aggregation_groups": GROUPS}
        )
    )
    by_ids = [ids(g) for g in GROUPS]
    data(
        client.put(
            f"{API}/index_plans/rule", json={"project": own.name, "model_id": model.uuid, "aggregation_groups": by_ids}
        )
    )
    a, b = stored(live, own.name, "i_names")[1], stored(live, own.name, "i_ids")[1]
    assert a.rule_based_index is not None and b.rule_based_index is not None
    assert a.rule_based_index.aggregation_groups == b.rule_based_index.aggregation_groups
    assert sorted(lay.col_order for lay in a.all_layouts()) == sorted(lay.col_order for lay in b.all_layouts())


def test_indexes_list_the_built_rows_and_bytes_per_segment(
    live: LiveServer, server_home: ServerHome, client: httpx.Client
) -> None:
    project, alias = server_home.project, server_home.model
    params = {"project": project, "page_size": 10_000}
    listed = data(client.get(f"{API}/models/{alias}/indexes", params=params))
    with live.state.store.read(project) as tx:
        model = find_model(tx, alias)
        assert model is not None
        plan = tx.require(IndexPlan, model.uuid)
        segments = tx.require(Dataflow, model.uuid).segments
        built = {
            (d.uuid, li.layout_id): (li.rows, li.byte_size)
            for d in tx.list(SegmentDetails, model.uuid)
            for li in d.layout_instances
        }
    assert [i["id"] for i in listed["value"]] == sorted(lay.id for lay in plan.all_layouts())
    assert listed["total_size"] == len(plan.all_layouts()) and listed["model_id"] == model.uuid
    for item in listed["value"]:
        layout = plan.layout(item["id"])
        assert layout is not None and item["type"] == ("TABLE" if layout.is_table_index else "AGG")
        assert len(item["dimensions"]) + len(item["measures"]) == len(layout.col_order)
        got = {(s["segment_id"], item["id"]): (s["rows"], s["bytes"]) for s in item["segments"]}
        assert got == {k: v for k, v in built.items() if k[1] == item["id"]}
        assert item["status"] == ("ONLINE" if len(got) == len(segments) else "NO_BUILD")
    assert any(i["status"] == "ONLINE" and i["rows"] > 0 for i in listed["value"])
    by_uuid = data(client.get(f"{API}/index_plans/index", params=params | {"model": model.uuid}))
    assert by_uuid["value"] == listed["value"]
    tables = data(
        client.get(f"{API}/index_plans/index", params=params | {"model": alias, "sources": "BASE_TABLE_INDEX"})
    )
    assert [i["type"] for i in tables["value"]] == ["TABLE"]
    paged = data(
        client.get(f"{API}/models/{alias}/indexes", params={"project": project, "page_size": 2, "page_offset": 1})
    )
    assert [i["id"] for i in paged["value"]] == [i["id"] for i in listed["value"][2:4]]


def test_table_index_add_and_delete_and_layout_removal(live: LiveServer, own: OwnProject, client: httpx.Client) -> None:
    new_model(client, own.name, "i_table")
    body = {
        "project": own.name,
        "model": "i_table",
        "col_order": ["LO_ORDERDATE", "C_CITY"],
        "sort_by_columns": ["LO_ORDERDATE"],
    }
    layout_id = data(client.post(f"{API}/index_plans/table_index", json=body))["id"]
    model, plan = stored(live, own.name, "i_table")
    layout = plan.layout(layout_id)
    assert layout is not None and layout.is_table_index
    assert [model.column_by_id(i).name for i in layout.col_order] == ["LO_ORDERDATE", "C_CITY"]  # type: ignore[union-attr]
    agg = next(lay.id for lay in plan.all_layouts() if not lay.is_table_index)
    before = fingerprint(live.settings)
    assert "not a table index" in error(
        client.delete(f"{API}/index_plans/table_index/{agg}", params={"project": own.name, "model": "i_table"}), 400
    )
    error(client.delete(f"{API}/index_plans/table_index/123456", params={"project": own.name, "model": "i_table"}), 404)
    error(client.delete(f"{API}/index_plans/table_index/abc", params={"project": own.name, "model": "i_table"}), 400)
    assert fingerprint(live.settings) == before
    done = data(
        client.delete(f"{API}/index_plans/table_index/{layout_id}", params={"project": own.name, "model": "i_table"})
    )
    assert done["removed"] == [layout_id] and stored(live, own.name, "i_table")[1].layout(layout_id) is None

    data(
        client.put(
            f"{API}/index_plans/rule", json={"project": own.name, "model": "i_table", "aggregation_groups": GROUPS[:1]}
        )
    )
    _, plan = stored(live, own.name, "i_table")
    two = sorted(rule_layouts(plan))[:2]
    removed = data(
        client.delete(
            f"{API}/index_plans/index",
            params={"project": own.name, "model": "i_table", "index_ids": f"{two[0]},{two[1]}"},
        )
    )
    assert removed["removed"] == two
    _, plan = stored(live, own.name, "i_table")
    assert not set(two) & {lay.id for lay in plan.all_layouts()}
    assert plan.rule_based_index is not None and set(two) <= set(plan.rule_based_index.layout_black_list)


def test_too_many_layouts_is_a_400_naming_the_limit_and_the_preview_says_fail(
    live: LiveServer, own: OwnProject, client: httpx.Client
) -> None:
    new_model(client, own.name, "i_big")
    model, _ = stored(live, own.name, "i_big")
    every = [c.name for c in model.dimensions()]  # 16 dimensions, no rule: 65,536 layouts in one group
    body = {"project": own.name, "model": "i_big", "aggregation_groups": [{"includes": every}]}
    counted = data(client.put(f"{API}/index_plans/agg_index_count", json=body))
    assert (
        counted["agg_index_counts"][0] == {"result": 2 ** len(every) - 1, "status": "FAIL"}
        or counted["agg_index_counts"][0]["status"] == "FAIL"
    )
    assert counted["agg_index_counts"][0]["result"] > MAX_COMBINATION
    before = fingerprint(live.settings)
    assert f"{MAX_COMBINATION}" in error(client.put(f"{API}/index_plans/rule", json=body), 400).replace(",", "")
    huge = {"includes": every * 5_000}  # 80,000 names, the same ones over and over
    said = error(client.put(f"{API}/index_plans/rule", json=body | {"aggregation_groups": [huge]}), 400)
    assert "duplicate" in said and len(said) < 200, said  # the repeated column, not the 80,000 of them
    error(
        client.put(
            f"{API}/index_plans/agg_index_count", json=body | {"aggregation_groups": [{"includes": ["NO_SUCH"]}]}
        ),
        400,
    )
    error(client.put(f"{API}/index_plans/rule", json=body | {"aggregation_groups": [{"includes": [10**9]}]}), 400)
    assert fingerprint(live.settings) == before


def test_permissions_and_hostile_input(live: LiveServer, own: OwnProject, client: httpx.Client) -> None:
    new_model(client, own.name, "i_perm")
    body = {"project": own.name, "model": "i_perm", "aggregation_groups": GROUPS[:1]}
    q = {"project": own.name, "model": "i_perm"}
    before = fingerprint(live.settings)
    with live.client(auth=own.reader) as reader:
        data(reader.get(f"{API}/index_plans/rule", params=q))
        data(reader.get(f"{API}/index_plans/index", params=q))
        error(reader.put(f"{API}/index_plans/rule", json=body), 403)
    with live.client(auth=own.operator) as operator:
        error(operator.put(f"{API}/index_plans/rule", json=body), 403)
        error(operator.put(f"{API}/index_plans/agg_index_count", json=body), 403)
        error(operator.post(f"{API}/index_plans/table_index", json=q | {"col_order": ["C_CITY"]}), 403)
        error(operator.delete(f"{API}/index_plans/index", params=q | {"index_ids": "1"}), 403)
    with live.client(auth=own.outsider) as outsider:
        error(outsider.get(f"{API}/index_plans/rule", params=q), 403)
        error(outsider.get(f"{API}/models/i_perm/indexes", params={"project": own.name}), 403)
    for bad in (
        body | {"model": "../x"},
        body | {"model": "a'b\x00"},
        body | {"model_id": "also"},
        {k: v for k, v in body.items() if k != "model"},
        body | {"unknown": 1},
        body | {"aggregation_groups": "not a list"},
        body | {"global_dim_cap": -1},
        body | {"project": "../etc"},
    ):
        response = client.put(f"{API}/index_plans/rule", json=bad)
        assert 400 <= response.status_code < 500, response.text
        error(response, response.status_code)
    error(client.put(f"{API}/index_plans/rule", content=b"{", headers={"content-type": "application/json"}), 400)
    error(client.delete(f"{API}/index_plans/index", params=q | {"index_ids": "1;DROP"}), 400)
    error(client.get(f"{API}/index_plans/rule", params={"project": own.name}), 400)
    assert fingerprint(live.settings) == before
    with live.client(auth=own.modeler) as modeler:
        data(modeler.put(f"{API}/index_plans/rule", json=body))


def test_the_clis_preview_and_set_rules_agree_with_the_api(
    live: LiveServer, own: OwnProject, client: httpx.Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new_model(client, own.name, "i_cli")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"aggregation_groups": GROUPS}))
    home = ["--home", str(live.settings.home)]
    body = {"project": own.name, "model": "i_cli", "aggregation_groups": GROUPS}
    counted = data(client.put(f"{API}/index_plans/agg_index_count", json=body))
    capsys.readouterr()
    assert run([*home, "index", "preview", str(rules), "-p", own.name, "-m", "i_cli"]) == 0
    out = capsys.readouterr().out
    total = re.search(r"total distinct layouts \(with the base layout\): ([0-9,]+)", out)
    assert total is not None and int(total.group(1).replace(",", "")) == counted["total_count"]["result"], out
    assert run([*home, "index", "set-rules", str(rules), "-p", own.name, "-m", "i_cli", "--yes"]) == 0
    by_cli = stored(live, own.name, "i_cli")[1]
    got = data(client.get(f"{API}/index_plans/rule", params={"project": own.name, "model": "i_cli"}))
    assert got["rule_layouts"] == len(rule_layouts(by_cli)) == counted["total_count"]["result"]
    assert [g["includes"] for g in got["aggregation_groups"]] == [g["includes"] for g in GROUPS]
