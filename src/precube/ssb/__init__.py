"""Star Schema Benchmark (SSB) data: a vectorized, deterministic generator writing Parquet."""
