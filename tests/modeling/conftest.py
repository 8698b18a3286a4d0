"""Fixtures for modeling: the SSB tables registered from generated Parquet (no JVM needed)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from precube.metadata import MetadataStore, Project, SourceType, Table
from precube.modeling.model_spec import ModelSpec, parse_spec
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES


@pytest.fixture
def ssb_store(store: MetadataStore, ssb_dir: Path) -> MetadataStore:
    store.create_project(Project(name="ssb", default_database="SSB"))
    for name in TABLES:
        load_file_table(store, "ssb", ssb_dir / name, SourceType.PARQUET)
    return store


@pytest.fixture
def ssb_tables(ssb_store: MetadataStore) -> dict[str, Table]:
    with ssb_store.read("ssb") as tx:
        return {t.identity: t for t in tx.list(Table)}


def ssb_spec_data() -> dict[str, object]:
    text = resources.files("precube").joinpath("resources/ssb_model.yaml").read_text()
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


@pytest.fixture
def ssb_spec() -> ModelSpec:
    return parse_spec(ssb_spec_data())
