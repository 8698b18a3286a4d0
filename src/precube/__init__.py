"""precube: an OLAP engine that precomputes star-schema aggregates on Spark and answers SQL from them."""

__version__ = "0.1.0"


def connect(project: str, **options: object) -> object:
    """Open a query session over a project (see `precube.api.connect`); imported lazily so that
    `import precube` stays light."""
    from precube.api import connect as _connect

    return _connect(project, **options)  # type: ignore[arg-type]
