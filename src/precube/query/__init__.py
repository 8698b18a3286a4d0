"""The query side (seed 004): SQL over a project's tables answered from precomputed layouts.

The front end (`frontend`) parses and qualifies SQL against the project's tables; `context` extracts
what each SELECT block needs from a model. Nothing here imports pyspark: the query path starts and
answers without a JVM.
"""
