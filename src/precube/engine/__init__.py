"""The build engine: the Spark pipeline that turns source rows into precomputed layouts (seed 003).

flat table → global dictionaries → layouts layer by layer (each from its smallest built parent) →
Parquet under the warehouse → stats committed to metadata in one transaction. Also merge, refresh,
and building new layouts into existing segments. pyspark is imported only inside functions.
"""
