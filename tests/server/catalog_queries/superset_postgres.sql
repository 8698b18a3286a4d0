-- Superset's Postgres engine spec (apache/superset, superset/db_engine_specs/postgres.py, PostgresEngineSpec):
-- the statements it writes itself (get_catalog_names, get_prequeries' search path, get_cancel_query_id,
-- estimate_statement_cost's EXPLAIN), the settings SQL Lab reads back, the connection test's ping and the base
-- spec's select_star (a dataset's preview). Its schema, table, view, column,
-- index, key and comment listings go through SQLAlchemy's inspector (tested with the real dialect), and its
-- latest-partition methods are the base spec's, which send no query for PostgreSQL.

SELECT datname FROM pg_database
WHERE datistemplate = false;

set search_path = "ssb";

SHOW search_path;

select current_schema();

SELECT pg_backend_pid();

EXPLAIN SELECT lo_orderkey FROM ssb.lineorder LIMIT 1;

SELECT 1;

SELECT *
FROM ssb.dates
LIMIT 100;
