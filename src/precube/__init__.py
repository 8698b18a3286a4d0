"""precube: an OLAP engine that precomputes star-schema aggregates on Spark and answers SQL from them."""

__version__ = "0.1.0"
