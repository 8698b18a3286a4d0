"""A project of the test's own for the models and index-plan API tests: the SSB tables loaded straight into
the store, users at each permission level, and a small model spec (the demo's, base indexes only unless a
test adds groups), so the shared `ssb` project stays as built."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from precube.auth import Permission
from precube.metadata import Project, SourceType
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from tests.server.conftest import ServerHome
from tests.server.live import LiveServer

PASSWORD = "Passw0rd!"
DEMO_SPEC: dict[str, Any] = yaml.safe_load(resources.files("precube").joinpath("resources/ssb_model.yaml").read_text())


def small_spec(alias: str, **changes: Any) -> dict[str, Any]:
    """The demo's SSB model without its aggregation groups (two base layouts: quick to build)."""
    spec = copy.deepcopy(DEMO_SPEC)
    spec.pop("aggregation_groups")
    return spec | {"alias": alias} | changes


@dataclass(frozen=True)
class OwnProject:
    name: str
    reader: tuple[str, str]  # QUERY
    operator: tuple[str, str]  # OPERATION: just below MANAGEMENT
    modeler: tuple[str, str]  # MANAGEMENT
    outsider: tuple[str, str]  # MANAGEMENT on another project only


def own_project(live: LiveServer, home: ServerHome) -> OwnProject:
    """A new project with the SSB tables, and one user per permission level (plus one of another project)."""
    tag = uuid.uuid4().hex[:8]
    name = f"p_{tag}"
    store = live.state.store
    store.create_project(Project(name=name, default_database="SSB"))
    for table in TABLES:
        load_file_table(store, name, home.ssb_dir / table, SourceType.PARQUET)
    directory = live.state.directory
    users = {}
    for role, level in (("r", Permission.QUERY), ("o", Permission.OPERATION), ("m", Permission.MANAGEMENT)):
        user = f"u{role}_{tag}"
        directory.add_user(user, PASSWORD, [])
        directory.grant(name, user, level)
        users[role] = (user, PASSWORD)
    other = f"p_{uuid.uuid4().hex[:8]}"
    store.create_project(Project(name=other, default_database="SSB"))
    outsider = f"ux_{tag}"
    directory.add_user(outsider, PASSWORD, [])
    directory.grant(other, outsider, Permission.MANAGEMENT)
    return OwnProject(name, users["r"], users["o"], users["m"], (outsider, PASSWORD))
