"""Modeling: the pure rules that decide what is precomputed and which segments exist.

No Spark and no DuckDB here: model validation, aggregation-group expansion, layout ids, spanning
tree, segment arithmetic, auto-merge, retention and rolling-refresh planning are plain functions.
"""
