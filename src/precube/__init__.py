"""precube: an OLAP engine that precomputes star-schema aggregates on Spark and answers SQL from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "connect"]

if TYPE_CHECKING:  # the real signature for type checkers; at run time `connect` is imported on first use
    from precube.api import connect


def __getattr__(name: str) -> Any:
    """`precube.connect`, imported when first used so that `import precube` (and the CLI) stays light."""
    if name == "connect":
        from precube.api import connect

        return connect
    raise AttributeError(f"module 'precube' has no attribute {name!r}")
