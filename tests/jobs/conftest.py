"""Fixtures of the build and modeling tests that jobs reuse: the SSB store, the `sales` model, a build context."""

from tests.engine.conftest import build_store, ctx
from tests.modeling.conftest import ssb_store

__all__ = ["build_store", "ctx", "ssb_store"]
