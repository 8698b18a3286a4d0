"""`precube model …` and `precube index …` on the SSB tables, through the real command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from precube.cli.app import run
from precube.metadata import DataflowStatus, open_store
from tests.cli.home import ssb_home
from tests.modeling.conftest import ssb_spec_data


@pytest.fixture
def home(tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    args = ssb_home(tmp_path / "home", ssb_dir, ssb_spec_data())
    out = capsys.readouterr().out
    assert "created model ssb" in out and "16 dimensions, 8 measures" in out
    return args


def test_list_show_and_update(home: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*home, "model", "list", "-p", "ssb"]) == 0
    assert "SSB.LINEORDER" in capsys.readouterr().out
    assert run([*home, "model", "show", "-p", "ssb", "ssb"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["fact_table"] == "SSB.LINEORDER" and len(shown["simplified_measures"]) == 8
    shown["filter_condition"] = "LINEORDER.LO_QUANTITY > 0"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(shown))
    assert run([*home, "model", "update", "-p", "ssb", str(edited)]) == 0
    out = capsys.readouterr().out
    assert "semantic version 1" in out and "significant change (filter condition changed)" in out
    assert run([*home, "model", "show", "-p", "ssb", "ssb", "--format", "json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert docs["model_desc"]["filter_condition"] == "LINEORDER.LO_QUANTITY > 0"
    assert docs["dataflow"]["status"] == DataflowStatus.OFFLINE


def test_index_commands(home: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"aggregation_groups": [{"includes": ["D_YEAR", "C_REGION", "S_REGION"]}]}))
    assert run([*home, "index", "preview", "-p", "ssb", "-m", "ssb", str(rules)]) == 0
    assert "total distinct layouts (with the base layout): 7" in capsys.readouterr().out
    assert run([*home, "index", "set-rules", "-p", "ssb", "-m", "ssb", str(rules)]) == 0
    assert "7 layouts from the rules (with the base layout" in capsys.readouterr().out  # as preview counts
    assert run([*home, "index", "add-table-index", "-p", "ssb", "-m", "ssb", "-c", "LO_ORDERDATE,C_CITY"]) == 0
    assert "added table index layout 200000" in capsys.readouterr().out
    assert run([*home, "index", "list", "-p", "ssb", "-m", "ssb"]) == 0
    listing = capsys.readouterr().out
    assert "table manual" in listing and "agg base" in listing
    big = tmp_path / "big.yaml"
    dims = ["D_YEAR", "D_YEARMONTH", "D_YEARMONTHNUM", "D_WEEKNUMINYEAR", "C_REGION", "C_NATION", "C_CITY"]
    dims += ["S_REGION", "S_NATION", "S_CITY", "P_MFGR", "P_CATEGORY", "P_BRAND"]
    big.write_text(yaml.safe_dump({"aggregation_groups": [{"includes": dims}]}))
    assert run([*home, "index", "preview", "-p", "ssb", "-m", "ssb", str(big)]) == 0
    assert "groups 1 exceed 4,096 layouts each" in capsys.readouterr().out
    assert run([*home, "index", "set-rules", "-p", "ssb", "-m", "ssb", str(big)]) == 1
    assert "aggregation group 1" in capsys.readouterr().err


def test_bad_spec_is_one_line(home: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    data = ssb_spec_data()
    data["alias"] = "other"
    data["simplified_measures"] = [{"name": "S", "expression": "SUM", "column": "LINEORDER.LO_SHIPMODE"}]
    bad.write_text(yaml.safe_dump(data))
    assert run([*home, "model", "create", "-p", "ssb", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: simplified_measures[0] (S): SUM needs a numeric column, not varchar(4096)"
    (tmp_path / "broken.yaml").write_text("alias: [")
    assert run([*home, "model", "create", "-p", "ssb", str(tmp_path / "broken.yaml")]) == 1
    assert "is not valid YAML" in capsys.readouterr().err
    assert run([*home, "model", "delete", "-p", "ssb", "ssb", "--yes"]) == 0
    assert run([*home, "model", "delete", "-p", "ssb", "ssb", "--yes"]) == 1
    assert capsys.readouterr().err.strip().endswith("model 'ssb' does not exist in project 'ssb'")


def test_listings_give_json_for_scripts(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`--format json` gives each listing's raw values (times in epoch ms), the same rows as the table."""
    from precube.metadata import Dataflow, IndexPlan, Model, Table, open_store

    def listed(*command: str) -> list[dict[str, object]]:
        assert run([*home, *command, "--format", "json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert isinstance(found, list)
        return found

    with open_store(f"sqlite:///{home[1]}/metadata.db") as store, store.read("ssb") as tx:
        model = tx.require(Model, next(m.uuid for m in tx.list(Model)))
        layouts = len(tx.require(IndexPlan, model.uuid).all_layouts())
        dataflow = tx.require(Dataflow, model.uuid)
        tables = sorted(t.identity for t in tx.list(Table))
    [row] = listed("model", "list", "-p", "ssb")
    assert row == {
        "model": "ssb",
        "fact_table": "SSB.LINEORDER",
        "dimensions": 16,
        "measures": 8,
        "layouts": layouts,
        "segments": 0,
        "status": dataflow.status.value,
        "broken_detail": None,
        "semantic_version": model.semantic_version,
    }
    assert sorted(r["table"] for r in listed("table", "list", "-p", "ssb")) == tables
    assert all(r["rows_sampled"] is None and r["source"] == "PARQUET" for r in listed("table", "list", "-p", "ssb"))
    assert listed("segments", "-p", "ssb", "-m", "ssb") == [] == listed("segment", "list", "-p", "ssb", "-m", "ssb")
    assert listed("jobs", "list", "-p", "ssb") == []
    assert run([*home, "query", "-p", "ssb", "select 1 as x"]) == 0
    capsys.readouterr()
    [query] = listed("history", "-p", "ssb")
    assert query["sql"] == "select 1 as x" and query["succeeded"] is True and isinstance(query["started"], int)
    assert run([*home, "model", "list", "-p", "ssb", "--format", "xml"]) == 2  # only table or json


def test_show_then_update_changes_nothing(home: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/using.md's edit workflow: `model show > m.yaml && model update m.yaml` keeps the index rules, the
    base indexes and every layout id."""
    from precube.metadata import IndexPlan, Model, open_store

    rules = tmp_path / "rules.yaml"
    group = {
        "includes": ["D_YEAR", "D_YEARMONTH", "C_REGION", "C_NATION", "S_REGION"],
        "select_rule": {"hierarchy_dims": [["C_REGION", "C_NATION"]], "joint_dims": [["D_YEAR", "D_YEARMONTH"]]},
    }
    rules.write_text(yaml.safe_dump({"aggregation_groups": [group], "global_dim_cap": 3}))
    assert run([*home, "index", "set-rules", "-p", "ssb", "-m", "ssb", str(rules)]) == 0

    def plan() -> IndexPlan:
        with open_store(f"sqlite:///{home[1]}/metadata.db") as store, store.read("ssb") as tx:
            return tx.require(IndexPlan, next(m.uuid for m in tx.list(Model)))

    before = plan()
    capsys.readouterr()
    assert run([*home, "model", "show", "-p", "ssb", "ssb"]) == 0
    shown = capsys.readouterr().out
    spec = yaml.safe_load(shown)
    assert spec["aggregation_groups"][0]["select_rule"]["hierarchy_dims"] == [["C_REGION", "C_NATION"]]
    assert spec["global_dim_cap"] == 3 and sorted(spec["base_index_type"]) == ["BASE_AGG_INDEX", "BASE_TABLE_INDEX"]
    edited = tmp_path / "m.yaml"
    edited.write_text(shown)
    assert run([*home, "model", "update", "-p", "ssb", str(edited)]) == 0
    assert "significant change" not in capsys.readouterr().out
    after = plan()
    assert [lay.id for lay in after.all_layouts()] == [lay.id for lay in before.all_layouts()]
    assert after.rule_based_index is not None and before.rule_based_index is not None
    assert after.rule_based_index.aggregation_groups == before.rule_based_index.aggregation_groups


def test_unloading_a_table_a_model_reads(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Refused while the model reads it; --dry-run shows what --cascade drops; --cascade --yes drops it."""
    assert run([*home, "table", "unload", "-p", "ssb", "ssb.dates"]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: table SSB.DATES is used by model ssb: delete them first, or unload with --cascade to delete them too"
    )
    assert run([*home, "table", "unload", "-p", "ssb", "ssb.dates", "--cascade", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would delete models ssb (0 segments)" in out and "would unload SSB.DATES" in out
    assert run([*home, "model", "list", "-p", "ssb", "--format", "json"]) == 0
    assert [m["model"] for m in json.loads(capsys.readouterr().out)] == ["ssb"]
    assert run([*home, "table", "unload", "-p", "ssb", "ssb.dates", "--cascade", "--yes"]) == 0
    assert "deleted model ssb" in capsys.readouterr().out
    assert run([*home, "model", "list", "-p", "ssb", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert run([*home, "table", "list", "-p", "ssb", "--format", "json"]) == 0
    assert "SSB.DATES" not in {t["table"] for t in json.loads(capsys.readouterr().out)}


def test_a_significant_update_shows_what_it_drops_and_asks(
    home: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With built segments, a significant change drops them: shown first, refused unless confirmed
    (--yes, or answering the question), and nothing changes on --dry-run or a no."""
    from tests.jobs.test_plans import _ready

    with open_store(f"sqlite:///{home[1]}/metadata.db") as store:
        _ready(store, [(0, 1), (1, 2)], [{1}, {1}])
    assert run([*home, "model", "show", "-p", "ssb", "ssb"]) == 0
    spec = yaml.safe_load(capsys.readouterr().out)
    spec["filter_condition"] = "LINEORDER.LO_QUANTITY > 0"
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(spec))

    def kept() -> int:
        capsys.readouterr()  # what came before
        assert run([*home, "segments", "-p", "ssb", "-m", "ssb", "--format", "json"]) == 0
        return len(json.loads(capsys.readouterr().out))

    assert run([*home, "model", "update", "-p", "ssb", str(edited), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "would drop 2 segments (0.0 MB of built data), 1 layout of model ssb" in out
    assert "(significant change: filter condition changed)" in out
    assert kept() == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert run([*home, "model", "update", "-p", "ssb", str(edited)]) == 130  # answered no: aborted
    assert kept() == 2
    assert run([*home, "model", "update", "-p", "ssb", str(edited), "--yes"]) == 0
    assert "built segments dropped" in capsys.readouterr().out
    assert kept() == 0
    assert run([*home, "model", "delete", "-p", "ssb", "ssb", "--dry-run"]) == 0
    assert "would drop model ssb: 0 segments" in capsys.readouterr().out


def test_a_reload_that_breaks_a_model_shows_it_first(
    tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reload that drops a column a model uses would break the model and drop its segments: --dry-run
    shows it and saves nothing; --yes saves the schema and the model is BROKEN, its segments gone."""
    import shutil

    import pyarrow.parquet as pq

    from tests.jobs.test_plans import _ready

    data = tmp_path / "data"
    shutil.copytree(ssb_dir, data)
    home = ssb_home(tmp_path / "home", data, ssb_spec_data())
    with open_store(f"sqlite:///{home[1]}/metadata.db") as store:
        _ready(store, [(0, 1)], [{1}])
    for part in (data / "DATES").rglob("*.parquet"):
        pq.write_table(pq.read_table(part).drop_columns(["D_YEAR"]), part)
    capsys.readouterr()
    assert run([*home, "table", "reload", "-p", "ssb", "ssb.dates", "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "D_YEAR" in out.split("model ssb would break")[0]  # the schema change, then what it breaks
    assert "model ssb would break (" in out and "D_YEAR" in out and "1 segment" in out
    assert "would drop the segments of the models above" in out
    assert run([*home, "model", "list", "-p", "ssb", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] != "BROKEN"
    assert run([*home, "table", "reload", "-p", "ssb", "ssb.dates", "--yes"]) == 0
    capsys.readouterr()
    assert run([*home, "model", "list", "-p", "ssb", "--format", "json"]) == 0
    [model] = json.loads(capsys.readouterr().out)
    assert model["status"] == "BROKEN" and model["segments"] == 0

    # a build is refused with the commands that fix the model; an update that repairs it recovers it
    assert run([*home, "build", "-p", "ssb", "-m", "ssb", "--start", "1992-01-01", "--end", "1992-02-01"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "model ssb is BROKEN (" in err and "precube model update -p ssb FILE" in err
    assert "precube model check -p ssb" in err
    fixed = {**ssb_spec_data(), "aggregation_groups": []}
    fixed["simplified_dimensions"] = [d for d in fixed["simplified_dimensions"] if d != "DATES.D_YEAR"]  # type: ignore[attr-defined]
    (tmp_path / "fixed.yaml").write_text(yaml.safe_dump(fixed))
    assert run([*home, "model", "update", "-p", "ssb", str(tmp_path / "fixed.yaml"), "--yes"]) == 0
    assert "model ssb recovered (OFFLINE until rebuilt)" in capsys.readouterr().out
    assert run([*home, "model", "list", "-p", "ssb", "--format", "json"]) == 0
    [model] = json.loads(capsys.readouterr().out)
    assert model["status"] == "OFFLINE" and model["broken_detail"] is None


def test_rules_that_drop_built_layouts_show_them_and_ask(
    home: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from precube.metadata import IndexPlan, Model
    from tests.jobs.test_plans import _ready

    wide, narrow = tmp_path / "wide.yaml", tmp_path / "narrow.yaml"
    wide.write_text(yaml.safe_dump({"aggregation_groups": [{"includes": ["D_YEAR", "C_REGION", "S_REGION"]}]}))
    narrow.write_text(yaml.safe_dump({"aggregation_groups": [{"includes": ["D_YEAR"]}]}))
    assert run([*home, "index", "set-rules", "-p", "ssb", "-m", "ssb", str(wide)]) == 0
    with open_store(f"sqlite:///{home[1]}/metadata.db") as store:
        with store.read("ssb") as tx:
            plan = tx.require(IndexPlan, next(m.uuid for m in tx.list(Model)))
        rule_layouts = {lay.id for index in plan.rule_based_indexes for lay in index.layouts}
        _ready(store, [(0, 1)], [rule_layouts])
    capsys.readouterr()
    assert run([*home, "index", "set-rules", "-p", "ssb", "-m", "ssb", str(narrow), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "would drop 6 built layouts of model ssb:" in out  # of the 7 rule layouts, D_YEAR's alone stays
    assert run([*home, "index", "set-rules", "-p", "ssb", "-m", "ssb", str(narrow), "--yes"]) == 0
    assert "1 layouts from the rules" in capsys.readouterr().out


def test_validate_reports_every_problem_with_its_path(
    home: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`model validate` names every problem of a spec in one pass, each with its path; create refuses the same."""
    data = ssb_spec_data()
    data["alias"] = "other"
    data["computed_columns"] = [
        *data["computed_columns"],  # type: ignore[list-item]
        {"column_name": "DAY", "expression": "make_date(DATES.D_YEAR, DATES.D_MONTHNUMINYEAR, 1)"},
        {"column_name": "BAD", "expression": "LINEORDER.LO_NOPE + 1"},
    ]
    data["simplified_dimensions"] = [*data["simplified_dimensions"], "DATES.D_NOPE", "LINEORDER.BAD"]  # type: ignore[list-item]
    data["simplified_measures"] = [
        *data["simplified_measures"],  # type: ignore[list-item]
        {"name": "TOP_SELLERS", "expression": "TOP_N", "column": "LINEORDER.LO_REVENUE"},
        {"name": "BAD_SUM", "expression": "SUM", "column": "LINEORDER.BAD"},  # BAD was refused: not told again
    ]
    data["partition_desc"] = {"partition_date_column": "LINEORDER.DAY", "partition_date_format": "yyyy-MM-dd"}
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(data))
    capsys.readouterr()
    assert run([*home, "model", "validate", "-p", "ssb", str(path)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "computed_columns[2]",
        "simplified_dimensions[16]",
        "simplified_measures[8] (TOP_SELLERS)",
        "partition_desc.partition_date_column",
    ], lines
    assert all(line.startswith(f"{path}: ") for line in lines)
    assert "Unknown column: lo_nope" in lines[0] and "unknown column DATES.D_NOPE" in lines[1]
    assert "TOP_N takes at least 2 parameter(s), got 1: TOP_N(SUM(value_column), key_column, ...)" in lines[2]
    assert "LINEORDER.DAY is a computed column" in lines[3]
    assert run([*home, "model", "create", "-p", "ssb", str(path)]) == 1
    assert "error: 4 problems: computed_columns[2]: " in capsys.readouterr().err
    # a spec that does not parse: every field that is wrong
    path.write_text(yaml.safe_dump({"alias": "x", "simplified_measures": [{"name": "M"}], "nope": 1}))
    assert run([*home, "model", "validate", "-p", "ssb", str(path)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"{path}: fact_table: Field required",
        f"{path}: simplified_measures[0].expression: Field required",
        f"{path}: nope: Extra inputs are not permitted",
    ]
    path.write_text(yaml.safe_dump({**ssb_spec_data(), "alias": "fine"}))
    assert run([*home, "model", "validate", "-p", "ssb", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"{path}: no problems"
