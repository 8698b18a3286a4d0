"""The build tests' store (SSB tables, the `sales` model) and build context, for jobs that build."""

from tests.build.conftest import build_store, ctx

__all__ = ["build_store", "ctx"]
