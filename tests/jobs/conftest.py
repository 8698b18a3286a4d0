"""Fixtures of the build and modeling tests that jobs reuse (the SSB store, the `sales` model, a build context),
an empty `ssb` project on the store under test, and `until`, a bounded wait that turns a scheduler."""

import time
from collections.abc import Callable

import pytest

from precube.metadata import MetadataStore, Project
from tests.engine.conftest import build_store, ctx
from tests.modeling.conftest import ssb_store

__all__ = ["build_store", "ctx", "project", "ssb_store", "until"]


@pytest.fixture
def project(store: MetadataStore) -> MetadataStore:
    store.create_project(Project(name="ssb", default_database="SSB"))
    return store


def until(condition: Callable[[], bool], turn: Callable[[], object], timeout_s: float = 20) -> None:
    """Call `turn` until `condition` holds (an assertion after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        turn()
        time.sleep(0.05)
