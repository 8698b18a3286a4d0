"""`/kylin/api/models` on a live server: the answers against the metadata store, the CLI's rules (what an
update drops, the segment settings), the permission boundary, isolation between projects, hostile input."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.jobs.lifecycle import segment_config
from precube.metadata import Dataflow, DataflowStatus, IndexPlan, Job, JobState, JobType, Model, TimeRange
from precube.modeling.model_store import editable_spec, find_model
from tests.query.conftest import day
from tests.server.conftest import ServerHome, data, error, fingerprint
from tests.server.live import LiveServer
from tests.server.model_home import OwnProject, own_project, small_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

API = "/kylin/api"


@pytest.fixture(scope="module")
def own(live: LiveServer, server_home: ServerHome) -> OwnProject:
    return own_project(live, server_home)


@pytest.fixture
def client(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client() as c:
        yield c


def create(client: httpx.Client, project: str, spec: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = data(client.post(f"{API}/models", json=spec | {"project": project}))
    return result


def stored(live: LiveServer, project: str, alias: str) -> tuple[Model, IndexPlan, Dataflow]:
    with live.state.store.read(project) as tx:
        model = find_model(tx, alias)
        assert model is not None
        return model, tx.require(IndexPlan, model.uuid), tx.require(Dataflow, model.uuid)


def build_one(spark: SparkSession, live: LiveServer, project: str, alias: str) -> None:
    """One READY segment, [1992-01-01, 1993-01-01), built straight through the engine."""
    ctx = BuildContext(spark, live.state.store, project, live.settings.warehouse_root, writer="test")
    build_segment(ctx, alias, TimeRange.of(day("1992-01-01"), day("1993-01-01")))


def test_create_then_list_and_model_desc_match_the_store(
    live: LiveServer, own: OwnProject, client: httpx.Client
) -> None:
    made = create(client, own.name, small_spec("m_list"))
    model, plan, dataflow = stored(live, own.name, "m_list")
    assert made["uuid"] == model.uuid and made["status"] == "OFFLINE" and made["segment_count"] == 0
    assert made["total_indexes"] == len(plan.all_layouts()) == 2  # the base agg and base table indexes
    listed = data(client.get(f"{API}/models", params={"project": own.name, "model_name": "m_li"}))
    assert [m["uuid"] for m in listed["value"]] == [model.uuid] and listed["total_size"] == 1
    assert (
        data(client.get(f"{API}/models", params={"project": own.name, "model_name": "m_li", "exact": True}))["value"]
        == []
    )
    assert data(client.get(f"{API}/models", params={"project": own.name, "table": "ssb.part"}))["total_size"] >= 1
    assert data(client.get(f"{API}/models", params={"project": own.name, "status": "ONLINE"}))["value"] == [
        m
        for m in data(client.get(f"{API}/models", params={"project": own.name, "page_size": 100}))["value"]
        if m["status"] == "ONLINE"
    ]
    desc = data(client.get(f"{API}/models/{own.name}/m_list/model_desc"))
    assert desc["uuid"] == model.uuid and desc["fact_table"] == "SSB.LINEORDER"
    assert [d["name"] for d in desc["dimensions"]] == [c.name for c in model.dimensions()]
    assert [m["name"] for m in desc["measures"]] == [m.name for m in model.measures()]
    assert desc["spec"] == editable_spec(model, plan).model_dump(mode="json", exclude_defaults=True)
    assert dataflow.status is DataflowStatus.OFFLINE


def test_list_pages_and_sorts(own: OwnProject, client: httpx.Client) -> None:
    for alias in ("m_page_a", "m_page_b", "m_page_c"):
        create(client, own.name, small_spec(alias))
    q = {"project": own.name, "model_name": "m_page_", "sort_by": "alias", "reverse": False, "page_size": 2}
    first = data(client.get(f"{API}/models", params=q))
    second = data(client.get(f"{API}/models", params=q | {"page_offset": 1}))
    assert [m["alias"] for m in first["value"] + second["value"]] == ["m_page_a", "m_page_b", "m_page_c"]
    assert first["total_size"] == 3 and first["limit"] == 2 and second["offset"] == 1
    assert "sort_by" in error(client.get(f"{API}/models", params=q | {"sort_by": "nope"}), 400)
    assert "status" in error(client.get(f"{API}/models", params=q | {"status": "SLEEPING"}), 400)


@pytest.mark.parametrize(
    ("change", "status", "named"),
    [
        ({"fact_table": None}, 400, "fact_table"),
        ({"simplified_measures": [{"name": "X", "expression": "SUM"}]}, 400, "parameter"),
        ({"simplified_dimensions": ["LINEORDER.NO_SUCH"]}, 400, "NO_SUCH"),
        ({"bogus_field": 1}, 400, "bogus_field"),
        ({"alias": "../etc"}, 400, "model"),
        ({"alias": "a'b\"c"}, 400, "model"),
        ({"alias": "a\x00b"}, 400, "model"),
        ({"alias": 17}, 400, "alias"),
        ({"partition_desc": {"partition_date_column": "LINEORDER.LO_ORDERDATE"}}, 400, "partition_date_format"),
        ({"management_type": "TABLE_ORIENTED"}, 400, "management_type"),
    ],
)
def test_bad_specs_are_one_line_400s_naming_the_field_and_change_nothing(
    live: LiveServer, own: OwnProject, client: httpx.Client, change: dict[str, Any], status: int, named: str
) -> None:
    spec = {k: v for k, v in (small_spec("m_bad") | change).items() if v is not None}
    before = fingerprint(live.settings)
    assert named.lower() in error(client.post(f"{API}/models", json=spec | {"project": own.name}), status).lower()
    assert fingerprint(live.settings) == before


def test_malformed_bodies_and_hostile_names(live: LiveServer, own: OwnProject, client: httpx.Client) -> None:
    create(client, own.name, small_spec("m_hostile"))
    before = fingerprint(live.settings)
    error(client.post(f"{API}/models", content=b"{not json", headers={"content-type": "application/json"}), 400)
    error(client.post(f"{API}/models", json=[1, 2]), 400)
    error(client.post(f"{API}/models", json=small_spec("m_x") | {"project": "../x"}), 400)
    assert "already exists" in error(
        client.post(f"{API}/models", json=small_spec("M_HOSTILE") | {"project": own.name}), 409
    )
    for name in ("..%2Fx", "a%27b", "a%00b", "a%22b"):
        response = client.put(f"{API}/models/{name}/status", json={"project": own.name, "status": "OFFLINE"})
        assert response.status_code in (400, 404), response.text
        error(response, response.status_code)
    error(client.put(f"{API}/models/m_hostile/name", json={"project": own.name, "new_model_name": "x/../y"}), 400)
    error(client.put(f"{API}/models/m_hostile/status", json={"project": own.name, "status": "SLEEPING"}), 400)
    error(client.put(f"{API}/models/m_hostile/status", json={"project": own.name, "status": 1, "x": 2}), 400)
    error(client.put(f"{API}/models/m_hostile/config", json={"project": own.name, "auto_merge_enabled": "maybe"}), 400)
    error(client.put(f"{API}/models/m_hostile/config", json={"project": own.name, "override_props": {"a": "b"}}), 400)
    error(client.delete(f"{API}/models/no_such_model", params={"project": own.name}), 404)
    assert fingerprint(live.settings) == before


def test_permissions_query_reads_management_edits(live: LiveServer, own: OwnProject) -> None:
    with live.client() as admin:
        create(admin, own.name, small_spec("m_perm"))
    spec = small_spec("m_perm2") | {"project": own.name}
    before = fingerprint(live.settings)
    with live.client(auth=own.reader) as reader:
        assert (
            data(reader.get(f"{API}/models", params={"project": own.name, "model_name": "m_perm"}))["total_size"] >= 1
        )
        data(reader.get(f"{API}/models/{own.name}/m_perm/model_desc"))
        error(reader.post(f"{API}/models", json=spec), 403)
    with live.client(auth=own.operator) as operator:  # just below MANAGEMENT
        error(operator.post(f"{API}/models", json=spec), 403)
        error(operator.put(f"{API}/models/m_perm/name", json={"project": own.name, "new_model_name": "x"}), 403)
        error(operator.delete(f"{API}/models/m_perm", params={"project": own.name}), 403)
    with live.client(auth=own.outsider) as outsider:  # MANAGEMENT, on another project
        error(outsider.get(f"{API}/models", params={"project": own.name}), 403)
        error(outsider.get(f"{API}/models/{own.name}/m_perm/model_desc"), 403)
        error(outsider.post(f"{API}/models", json=spec), 403)
    with live.client(auth=None) as anonymous:
        error(anonymous.get(f"{API}/models", params={"project": own.name}), 401)
    assert fingerprint(live.settings) == before
    with live.client(auth=own.modeler) as modeler:
        assert data(modeler.post(f"{API}/models", json=spec))["alias"] == "m_perm2"
        data(modeler.delete(f"{API}/models/m_perm2", params={"project": own.name}))


def test_rename_and_config(live: LiveServer, own: OwnProject, client: httpx.Client) -> None:
    uuid = create(client, own.name, small_spec("m_old"))["uuid"]
    create(client, own.name, small_spec("m_taken"))
    # a job runs on its model's alias: a model with an unfinished (here PAUSED) job keeps its name
    paused = Job(job_type=JobType.INC_BUILD, target_model=uuid, model_alias="m_old", state=JobState.PAUSED)
    with live.state.store.transaction(own.name, "test") as tx:
        tx.create(paused)
    rename = {"project": own.name, "new_model_name": "m_new"}
    assert paused.uuid in error(client.put(f"{API}/models/m_old/name", json=rename), 400)
    with live.state.store.transaction(own.name, "test") as tx:
        job = tx.require(Job, paused.uuid)
        job.state = JobState.DISCARDED
        tx.update(job)
    error(client.put(f"{API}/models/m_old/name", json={"project": own.name, "new_model_name": "M_TAKEN"}), 409)
    assert data(client.put(f"{API}/models/m_old/name", json={"project": own.name, "new_model_name": "m_new"})) == {
        "uuid": uuid,
        "alias": "m_new",
    }
    assert stored(live, own.name, "m_new")[0].uuid == uuid
    error(client.get(f"{API}/models/{own.name}/m_old/model_desc"), 404)

    body = {
        "project": own.name,
        "auto_merge_enabled": True,
        "auto_merge_time_ranges": ["WEEK", "MONTH"],
        "volatile_range": {"volatile_range_number": 2, "volatile_range_enabled": True, "volatile_range_type": "DAY"},
    }
    answer = data(client.put(f"{API}/models/m_new/config", json=body))
    model, _, _ = stored(live, own.name, "m_new")
    with live.state.store.read(own.name) as tx:
        in_force = segment_config(tx.project(), model)  # the CLI's `model config` reads it so
    assert answer["in_force"] == in_force.model_dump(mode="json")
    assert in_force.auto_merge_enabled and in_force.volatile_range.volatile_range_number == 2
    assert model.segment_config is not None and model.segment_config.retention_range is None  # the project's
    assert data(client.get(f"{API}/models/m_new/config", params={"project": own.name})) == answer
    inherited = data(client.put(f"{API}/models/m_new/config", json={"project": own.name, "inherit": True}))
    assert inherited["segment_config"] == {} and stored(live, own.name, "m_new")[0].segment_config is None


def test_status_update_partition_and_delete_on_a_built_model(
    spark: SparkSession, live: LiveServer, own: OwnProject, client: httpx.Client
) -> None:
    create(client, own.name, small_spec("m_built"))
    assert "READY segment" in error(
        client.put(f"{API}/models/m_built/status", json={"project": own.name, "status": "ONLINE"}), 400
    )
    build_one(spark, live, own.name, "m_built")
    _, _, dataflow = stored(live, own.name, "m_built")
    assert dataflow.status is DataflowStatus.ONLINE and len(dataflow.segments) == 1
    put = {"project": own.name, "status": "OFFLINE"}
    assert data(client.put(f"{API}/models/m_built/status", json=put))["status"] == "OFFLINE"
    assert stored(live, own.name, "m_built")[2].status is DataflowStatus.OFFLINE
    assert data(client.put(f"{API}/models/m_built/status", json=put | {"status": "ONLINE"}))["status"] == "ONLINE"

    # an insignificant edit (a description) keeps the segment; a new filter is significant and drops it
    desc = data(client.get(f"{API}/models/{own.name}/m_built/model_desc"))["spec"]
    kept = data(client.put(f"{API}/models/m_built", json=desc | {"description": "edited", "project": own.name}))
    assert kept["dropped_segments"] == [] and kept["significant_changes"] == [] and kept["saved"]
    assert stored(live, own.name, "m_built")[0].description == "edited"
    filtered = desc | {"filter_condition": "LINEORDER.LO_QUANTITY > 0", "project": own.name}
    before = fingerprint(live.settings)
    preview = data(client.put(f"{API}/models/m_built", params={"dry_run": True}, json=filtered))
    assert fingerprint(live.settings) == before and not preview["saved"]
    segment_ids = [s.id for s in dataflow.segments]
    assert preview["dropped_segments"] == segment_ids and preview["significant_changes"]
    assert preview["dropped_bytes"] > 0 and preview["dropped_layouts"]
    error(client.put(f"{API}/models/m_built", json=filtered | {"alias": "other"}), 400)
    done = data(client.put(f"{API}/models/semantic", json=filtered | {"alias": "m_built"}))
    assert done["dropped_segments"] == segment_ids and done["saved"]
    assert stored(live, own.name, "m_built")[2].segments == []

    # the partition: the same one changes nothing; another column, or none, is significant
    build_one(spark, live, own.name, "m_built")
    same = {"project": own.name, "partition_desc": desc["partition_desc"]}
    assert data(client.put(f"{API}/models/m_built/partition", json=same))["dropped_segments"] == []
    assert len(stored(live, own.name, "m_built")[2].segments) == 1
    error(
        client.put(
            f"{API}/models/m_built/partition",
            json=same | {"partition_desc": {"partition_date_column": "DATES.D_YEAR", "partition_date_format": "yyyy"}},
        ),
        400,
    )
    gone = data(client.put(f"{API}/models/m_built/partition", json={"project": own.name, "partition_desc": None}))
    assert len(gone["dropped_segments"]) == 1 and stored(live, own.name, "m_built")[0].partition_desc is None

    build_one_full = BuildContext(spark, live.state.store, own.name, live.settings.warehouse_root, writer="test")
    build_segment(build_one_full, "m_built")
    model, plan, dataflow = stored(live, own.name, "m_built")
    removed = data(client.delete(f"{API}/models/m_built", params={"project": own.name}))
    assert removed["uuid"] == model.uuid and removed["segments"] == len(dataflow.segments) == 1
    assert removed["layouts"] == len(plan.all_layouts()) and removed["data_bytes"] > 0
    with live.state.store.read(own.name) as tx:
        assert find_model(tx, "m_built") is None
        assert tx.get(IndexPlan, model.uuid) is None and tx.get(Dataflow, model.uuid) is None
