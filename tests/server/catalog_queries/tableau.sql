-- Tableau's PostgreSQL connections. Through ODBC (psqlODBC, Tableau Desktop's PostgreSQL driver before its
-- JDBC one): what the driver sends at connect (its DateStyle, extra_float_digits and isolation batch, sent
-- here one by one; its large-object type probe; the client encoding) and its SQLTables listing, as recorded by
-- servers that emulate PostgreSQL for Tableau (e.g. the `SELECT_LO` and `SELECT_TABLES` statements of such a
-- server's handler). Through JDBC (tableau/connector-plugin-sdk, samples/plugins/postgres_jdbc/manifest.xml):
-- pgjdbc's DatabaseMetaData lists the catalog (pgjdbc's own query set), and the connector's capabilities
-- shape Tableau's own statements: CAP_QUERY_WHERE_FALSE_METADATA (a table's or custom SQL's columns read from
-- a `WHERE 1 = 0` query), CAP_QUERY_TOP_N (a preview with LIMIT), CAP_QUERY_SUBQUERIES (custom SQL as a
-- derived table). Those are written as Tableau writes such statements: quoted names, its own aliases. Custom SQL as
-- Tableau wraps it: `SELECT * FROM (…) "Custom SQL Query" WHERE (1 = 0)`, then the same with an aggregate.

SET DateStyle = 'ISO';

SET extra_float_digits = 2;

show transaction_isolation;

select oid, typbasetype from pg_type where typname = 'lo';

select pg_client_encoding();

show max_identifier_length;

select relname, nspname, relkind from pg_catalog.pg_class c, pg_catalog.pg_namespace n where relkind in ('r', 'v', 'm', 'f', 'p') and nspname not in ('pg_catalog', 'information_schema', 'pg_toast', 'pg_temp_1') and n.oid = relnamespace order by nspname, relname;

SELECT *
FROM "ssb"."lineorder" "lineorder"
WHERE (1 = 0);

SELECT "dates"."d_year" AS "d_year",
  SUM("lineorder"."lo_revenue") AS "sum:lo_revenue:ok"
FROM "ssb"."lineorder" "lineorder"
  INNER JOIN "ssb"."dates" "dates" ON ("lineorder"."lo_orderdate" = "dates"."d_datekey")
GROUP BY 1;

SELECT "lineorder"."lo_orderkey" AS "lo_orderkey",
  "lineorder"."lo_shipmode" AS "lo_shipmode"
FROM "ssb"."lineorder" "lineorder"
LIMIT 1000;

SELECT * FROM (select d_year, sum(lo_revenue) as revenue from lineorder left join dates on lo_orderdate = d_datekey group by d_year) "Custom SQL Query"
WHERE (1 = 0);

SELECT "Custom SQL Query"."d_year" AS "d_year",
  SUM("Custom SQL Query"."revenue") AS "sum:revenue:ok"
FROM (select d_year, sum(lo_revenue) as revenue from lineorder left join dates on lo_orderdate = d_datekey group by d_year) "Custom SQL Query"
GROUP BY 1;
