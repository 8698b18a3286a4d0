"""The rows of the emulated `pg_catalog` and `information_schema` for one project, presenting its catalog
description (`query.catalog.description`: schemas, tables, columns with computed ones, types) as PostgreSQL
lists it: names in lower case (PostgreSQL tools quote any other), Postgres types, comments, a model's computed
column as a stored generated column. What psql, psycopg and JDBC clients read to list and describe tables. OIDs
are stable hashes of the names, so an OID a client read in one query still names the same table in the next
(psql's `\\d` reads it, then asks by it)."""

from __future__ import annotations

import zlib

import sqlglot
from sqlglot import exp

from precube.query.catalog.description import CatalogDescription, ColumnDescription, TableDescription
from precube.query.frontend import DIALECT
from precube.server.pgwire import types as pg
from precube.server.pgwire.session_settings import SessionSettings

CATALOG_NS, INFO_NS, OWNER = 11, 13_000, 10
OWNER_NAME = "precube"

# DuckDB DDL of every emulated relation: schema → name → columns (with defaults, so rows give only what matters)
_B, _I, _T, _TA = "BOOLEAN DEFAULT false", "BIGINT DEFAULT 0", "VARCHAR", "VARCHAR[]"
COLUMNS: dict[str, dict[str, str]] = {
    "pg_catalog": {
        "pg_namespace": f"oid BIGINT, nspname {_T}, nspowner BIGINT DEFAULT {OWNER}, nspacl {_TA}",
        "pg_class": (
            f"oid BIGINT, relname {_T}, relnamespace BIGINT, reltype {_I}, reloftype {_I}, "
            f"relowner BIGINT DEFAULT {OWNER}, relam BIGINT DEFAULT 2, relfilenode {_I}, reltablespace {_I}, "
            f"relpages {_I}, reltuples DOUBLE DEFAULT -1, relallvisible {_I}, reltoastrelid {_I}, relhasindex {_B}, "
            f"relisshared {_B}, relpersistence VARCHAR DEFAULT 'p', relkind VARCHAR DEFAULT 'r', relnatts {_I}, "
            f"relchecks {_I}, relhasrules {_B}, relhastriggers {_B}, relhassubclass {_B}, relrowsecurity {_B}, "
            f"relforcerowsecurity {_B}, relispopulated BOOLEAN DEFAULT true, relreplident VARCHAR DEFAULT 'd', "
            f"relispartition {_B}, relrewrite {_I}, relfrozenxid {_I}, relminmxid {_I}, relacl {_TA}, "
            f"reloptions {_TA}, relpartbound {_T}"
        ),
        "pg_attribute": (
            f"attrelid BIGINT, attname {_T}, atttypid BIGINT, attstattarget BIGINT DEFAULT -1, attlen BIGINT, "
            f"attnum BIGINT, attndims {_I}, attcacheoff BIGINT DEFAULT -1, atttypmod BIGINT DEFAULT -1, "
            f"attbyval {_B}, attalign VARCHAR DEFAULT 'i', attstorage VARCHAR DEFAULT 'p', "
            f"attcompression VARCHAR DEFAULT '', attnotnull {_B}, atthasdef {_B}, atthasmissing {_B}, "
            f"attidentity VARCHAR DEFAULT '', attgenerated VARCHAR DEFAULT '', attisdropped {_B}, "
            f"attislocal BOOLEAN DEFAULT true, attinhcount {_I}, attcollation {_I}, attacl {_TA}, "
            f"attoptions {_TA}, attfdwoptions {_TA}, attmissingval {_TA}"
        ),
        "pg_type": (
            f"oid BIGINT, typname {_T}, typnamespace BIGINT DEFAULT {CATALOG_NS}, typowner BIGINT DEFAULT {OWNER}, "
            f"typlen BIGINT, typbyval {_B}, typtype VARCHAR DEFAULT 'b', typcategory {_T}, typispreferred {_B}, "
            f"typisdefined BOOLEAN DEFAULT true, typdelim VARCHAR DEFAULT ',', typrelid {_I}, "
            f"typsubscript {_T}, typelem {_I}, typarray {_I}, typinput {_T}, typoutput {_T}, typreceive {_T}, "
            f"typsend {_T}, typmodin {_T}, typmodout {_T}, typanalyze {_T}, typalign VARCHAR DEFAULT 'i', "
            f"typstorage VARCHAR DEFAULT 'p', typnotnull {_B}, typbasetype {_I}, typtypmod BIGINT DEFAULT -1, "
            f"typndims {_I}, typcollation {_I}, typdefaultbin {_T}, typdefault {_T}, typacl {_TA}"
        ),
        "pg_database": (
            f"oid BIGINT, datname {_T}, datdba BIGINT DEFAULT {OWNER}, encoding BIGINT DEFAULT 6, "
            f"datlocprovider VARCHAR DEFAULT 'c', datistemplate {_B}, datallowconn BOOLEAN DEFAULT true, "
            f"datconnlimit BIGINT DEFAULT -1, datfrozenxid {_I}, datminmxid {_I}, dattablespace BIGINT DEFAULT 1663, "
            f"datcollate VARCHAR DEFAULT 'C', datctype VARCHAR DEFAULT 'C', daticulocale {_T}, "
            f"datcollversion {_T}, datacl {_TA}"
        ),
        "pg_roles": (
            f"oid BIGINT, rolname {_T}, rolsuper {_B}, rolinherit BOOLEAN DEFAULT true, rolcreaterole {_B}, "
            f"rolcreatedb {_B}, rolcanlogin BOOLEAN DEFAULT true, rolreplication {_B}, rolconnlimit BIGINT DEFAULT -1, "
            f"rolpassword VARCHAR DEFAULT '********', rolvaliduntil {_T}, rolbypassrls {_B}, rolconfig {_TA}"
        ),
        "pg_user": (
            f"usename {_T}, usesysid BIGINT, usecreatedb {_B}, usesuper {_B}, userepl {_B}, usebypassrls {_B}, "
            f"passwd VARCHAR DEFAULT '********', valuntil {_T}, useconfig {_TA}"
        ),
        "pg_am": f"oid BIGINT, amname {_T}, amhandler {_T}, amtype VARCHAR",
        "pg_tablespace": f"oid BIGINT, spcname {_T}, spcowner BIGINT DEFAULT {OWNER}, spcacl {_TA}, spcoptions {_TA}",
        "pg_collation": (
            f"oid BIGINT, collname {_T}, collnamespace BIGINT DEFAULT {CATALOG_NS}, collowner BIGINT DEFAULT {OWNER}, "
            f"collprovider VARCHAR DEFAULT 'd', collisdeterministic BOOLEAN DEFAULT true, "
            f"collencoding BIGINT DEFAULT -1, collcollate {_T}, collctype {_T}"
        ),
        "pg_description": f"objoid BIGINT, classoid BIGINT, objsubid BIGINT, description {_T}",
        "pg_settings": f"name {_T}, setting {_T}, unit {_T}, category {_T}, short_desc {_T}, extra_desc {_T}, "
        f"context {_T}, vartype {_T}, source {_T}, min_val {_T}, max_val {_T}, enumvals {_TA}, boot_val {_T}, "
        f"reset_val {_T}, sourcefile {_T}, sourceline BIGINT, pending_restart {_B}",
        "pg_index": (
            "indexrelid BIGINT, indrelid BIGINT, indnatts BIGINT, indnkeyatts BIGINT, indisunique BOOLEAN, "
            "indnullsnotdistinct BOOLEAN, indisprimary BOOLEAN, indisexclusion BOOLEAN, indimmediate BOOLEAN, "
            "indisclustered BOOLEAN, indisvalid BOOLEAN, indcheckxmin BOOLEAN, indisready BOOLEAN, "
            "indislive BOOLEAN, indisreplident BOOLEAN, indkey BIGINT[], indcollation BIGINT[], "
            "indclass BIGINT[], indoption BIGINT[], indexprs VARCHAR, indpred VARCHAR"
        ),
        "pg_constraint": (
            "oid BIGINT, conname VARCHAR, connamespace BIGINT, contype VARCHAR, condeferrable BOOLEAN, "
            "condeferred BOOLEAN, convalidated BOOLEAN, conrelid BIGINT, contypid BIGINT, conindid BIGINT, "
            "conparentid BIGINT, confrelid BIGINT, confupdtype VARCHAR, confdeltype VARCHAR, confmatchtype VARCHAR, "
            "conislocal BOOLEAN, coninhcount BIGINT, connoinherit BOOLEAN, conkey BIGINT[], confkey BIGINT[], "
            "conpfeqop BIGINT[], conppeqop BIGINT[], conffeqop BIGINT[], confdelsetcols BIGINT[], "
            "conexclop BIGINT[], conbin VARCHAR"
        ),
        "pg_opfamily": "oid BIGINT, opfmethod BIGINT, opfname VARCHAR, opfnamespace BIGINT, opfowner BIGINT",
        "pg_opclass": "oid BIGINT, opcmethod BIGINT, opcname VARCHAR, opcnamespace BIGINT, opcowner BIGINT, "
        "opcfamily BIGINT, opcintype BIGINT, opcdefault BOOLEAN, opckeytype BIGINT",
        "pg_attrdef": "oid BIGINT, adrelid BIGINT, adnum BIGINT, adbin VARCHAR",
        "pg_inherits": "inhrelid BIGINT, inhparent BIGINT, inhseqno BIGINT, inhdetachpending BOOLEAN",
        "pg_proc": (
            "oid BIGINT, proname VARCHAR, pronamespace BIGINT, proowner BIGINT, prolang BIGINT, prokind VARCHAR, "
            "prorettype BIGINT, proargtypes BIGINT[], proallargtypes BIGINT[], proargmodes VARCHAR[], "
            "proargnames VARCHAR[], proretset BOOLEAN, prosrc VARCHAR"
        ),
        "pg_trigger": "oid BIGINT, tgrelid BIGINT, tgparentid BIGINT, tgname VARCHAR, tgfoid BIGINT, tgtype BIGINT, "
        "tgenabled VARCHAR, tgisinternal BOOLEAN, tgconstraint BIGINT",
        "pg_rewrite": "oid BIGINT, rulename VARCHAR, ev_class BIGINT, ev_type VARCHAR, ev_enabled VARCHAR, "
        "is_instead BOOLEAN",
        "pg_policy": "oid BIGINT, polname VARCHAR, polrelid BIGINT, polcmd VARCHAR, polpermissive BOOLEAN, "
        "polroles BIGINT[], polqual VARCHAR, polwithcheck VARCHAR",
        "pg_statistic_ext": "oid BIGINT, stxrelid BIGINT, stxname VARCHAR, stxnamespace BIGINT, stxowner BIGINT, "
        "stxstattarget BIGINT, stxkeys BIGINT[], stxkind VARCHAR[], stxexprs VARCHAR",
        "pg_publication": "oid BIGINT, pubname VARCHAR, pubowner BIGINT, puballtables BOOLEAN, pubinsert BOOLEAN, "
        "pubupdate BOOLEAN, pubdelete BOOLEAN, pubtruncate BOOLEAN, pubviaroot BOOLEAN",
        "pg_publication_rel": "oid BIGINT, prpubid BIGINT, prrelid BIGINT, prqual VARCHAR, prattrs BIGINT[]",
        "pg_publication_namespace": "oid BIGINT, pnpubid BIGINT, pnnspid BIGINT",
        "pg_foreign_table": "ftrelid BIGINT, ftserver BIGINT, ftoptions VARCHAR[]",
        "pg_partitioned_table": "partrelid BIGINT, partstrat VARCHAR, partnatts BIGINT, partdefid BIGINT",
        "pg_sequence": "seqrelid BIGINT, seqtypid BIGINT, seqstart BIGINT, seqincrement BIGINT, seqmax BIGINT, "
        "seqmin BIGINT, seqcache BIGINT, seqcycle BOOLEAN",
        "pg_extension": "oid BIGINT, extname VARCHAR, extowner BIGINT, extnamespace BIGINT, extversion VARCHAR",
        "pg_enum": "oid BIGINT, enumtypid BIGINT, enumsortorder DOUBLE, enumlabel VARCHAR",
        "pg_range": "rngtypid BIGINT, rngsubtype BIGINT, rngmultitypid BIGINT",
        "pg_depend": "classid BIGINT, objid BIGINT, objsubid BIGINT, refclassid BIGINT, refobjid BIGINT, "
        "refobjsubid BIGINT, deptype VARCHAR",
        "pg_auth_members": "oid BIGINT, roleid BIGINT, member BIGINT, grantor BIGINT, admin_option BOOLEAN",
        "pg_event_trigger": "oid BIGINT, evtname VARCHAR, evtevent VARCHAR, evtenabled VARCHAR",
        "pg_language": "oid BIGINT, lanname VARCHAR",
        "pg_operator": "oid BIGINT, oprname VARCHAR, oprnamespace BIGINT, oprleft BIGINT, oprright BIGINT, "
        "oprresult BIGINT, oprkind VARCHAR, oprcode VARCHAR, oprcom BIGINT, oprnegate BIGINT",
        "pg_cast": "oid BIGINT, castsource BIGINT, casttarget BIGINT, castfunc BIGINT, castcontext VARCHAR, "
        "castmethod VARCHAR",
        "pg_views": "schemaname VARCHAR, viewname VARCHAR, viewowner VARCHAR, definition VARCHAR",
        "pg_matviews": "schemaname VARCHAR, matviewname VARCHAR, matviewowner VARCHAR, definition VARCHAR",
        "pg_indexes": "schemaname VARCHAR, tablename VARCHAR, indexname VARCHAR, indexdef VARCHAR",
        "pg_shdescription": "objoid BIGINT, classoid BIGINT, description VARCHAR",
        "pg_stat_user_tables": (
            f"relid BIGINT, schemaname {_T}, relname {_T}, seq_scan {_I}, last_seq_scan TIMESTAMPTZ, "
            f"seq_tup_read {_I}, idx_scan {_I}, last_idx_scan TIMESTAMPTZ, idx_tup_fetch {_I}, n_tup_ins {_I}, "
            f"n_tup_upd {_I}, n_tup_del {_I}, n_tup_hot_upd {_I}, n_tup_newpage_upd {_I}, n_live_tup {_I}, "
            f"n_dead_tup {_I}, n_mod_since_analyze {_I}, n_ins_since_vacuum {_I}, last_vacuum TIMESTAMPTZ, "
            "last_autovacuum TIMESTAMPTZ, last_analyze TIMESTAMPTZ, last_autoanalyze TIMESTAMPTZ, "
            f"vacuum_count {_I}, autovacuum_count {_I}, analyze_count {_I}, autoanalyze_count {_I}"
        ),
        "pg_stat_activity": (
            f"datid BIGINT, datname {_T}, pid BIGINT DEFAULT 0, leader_pid BIGINT, usesysid BIGINT, usename {_T}, "
            f"application_name VARCHAR DEFAULT '', client_addr {_T}, client_hostname {_T}, client_port BIGINT, "
            "backend_start TIMESTAMPTZ, xact_start TIMESTAMPTZ, query_start TIMESTAMPTZ, state_change TIMESTAMPTZ, "
            f"wait_event_type {_T}, wait_event {_T}, state VARCHAR DEFAULT 'active', backend_xid BIGINT, "
            f"backend_xmin BIGINT, query_id BIGINT, query VARCHAR DEFAULT '', "
            "backend_type VARCHAR DEFAULT 'client backend'"
        ),
        "pg_tables": (
            f"schemaname {_T}, tablename {_T}, tableowner VARCHAR DEFAULT '{OWNER_NAME}', tablespace {_T}, "
            f"hasindexes {_B}, hasrules {_B}, hastriggers {_B}, rowsecurity {_B}"
        ),
    },
    "information_schema": {
        "schemata": (
            f"catalog_name {_T}, schema_name {_T}, schema_owner VARCHAR DEFAULT '{OWNER_NAME}', "
            f"default_character_set_catalog {_T}, default_character_set_schema {_T}, "
            f"default_character_set_name {_T}, sql_path {_T}"
        ),
        "tables": (
            f"table_catalog {_T}, table_schema {_T}, table_name {_T}, table_type VARCHAR DEFAULT 'BASE TABLE', "
            f"self_referencing_column_name {_T}, reference_generation {_T}, user_defined_type_catalog {_T}, "
            f"user_defined_type_schema {_T}, user_defined_type_name {_T}, is_insertable_into VARCHAR DEFAULT 'NO', "
            f"is_typed VARCHAR DEFAULT 'NO', commit_action {_T}"
        ),
        "columns": (
            f"table_catalog {_T}, table_schema {_T}, table_name {_T}, column_name {_T}, ordinal_position BIGINT, "
            f"column_default {_T}, is_nullable VARCHAR DEFAULT 'YES', data_type {_T}, "
            f"character_maximum_length BIGINT, character_octet_length BIGINT, numeric_precision BIGINT, "
            f"numeric_precision_radix BIGINT, numeric_scale BIGINT, datetime_precision BIGINT, interval_type {_T}, "
            f"interval_precision BIGINT, character_set_catalog {_T}, character_set_schema {_T}, "
            f"character_set_name {_T}, collation_catalog {_T}, collation_schema {_T}, collation_name {_T}, "
            f"domain_catalog {_T}, domain_schema {_T}, domain_name {_T}, udt_catalog {_T}, "
            f"udt_schema VARCHAR DEFAULT 'pg_catalog', udt_name {_T}, scope_catalog {_T}, scope_schema {_T}, "
            f"scope_name {_T}, maximum_cardinality BIGINT, dtd_identifier {_T}, is_self_referencing VARCHAR "
            f"DEFAULT 'NO', is_identity VARCHAR DEFAULT 'NO', identity_generation {_T}, identity_start {_T}, "
            f"identity_increment {_T}, identity_maximum {_T}, identity_minimum {_T}, identity_cycle VARCHAR "
            f"DEFAULT 'NO', is_generated VARCHAR DEFAULT 'NEVER', generation_expression {_T}, "
            f"is_updatable VARCHAR DEFAULT 'NO'"
        ),
        "views": f"table_catalog {_T}, table_schema {_T}, table_name {_T}, view_definition {_T}, "
        f"check_option VARCHAR DEFAULT 'NONE', is_updatable VARCHAR DEFAULT 'NO', "  # Npgsql's GetSchema("Views")
        f"is_insertable_into VARCHAR DEFAULT 'NO'",
        "table_constraints": f"constraint_catalog {_T}, constraint_schema {_T}, constraint_name {_T}, "
        f"table_catalog {_T}, table_schema {_T}, table_name {_T}, constraint_type {_T}",
        "key_column_usage": f"constraint_catalog {_T}, constraint_schema {_T}, constraint_name {_T}, "
        f"table_catalog {_T}, table_schema {_T}, table_name {_T}, column_name {_T}, ordinal_position BIGINT",
        "referential_constraints": f"constraint_catalog {_T}, constraint_schema {_T}, constraint_name {_T}, "
        f"unique_constraint_catalog {_T}, unique_constraint_schema {_T}, unique_constraint_name {_T}",
        "routines": f"specific_catalog {_T}, specific_schema {_T}, specific_name {_T}, routine_name {_T}",
        "table_privileges": (
            f"grantor VARCHAR DEFAULT '{OWNER_NAME}', grantee {_T}, table_catalog {_T}, table_schema {_T}, "
            f"table_name {_T}, privilege_type VARCHAR DEFAULT 'SELECT', is_grantable VARCHAR DEFAULT 'NO', "
            f"with_hierarchy VARCHAR DEFAULT 'NO'"
        ),
    },
}

# read-only settings pg_settings lists beyond the session's (pgjdbc reads max_index_keys for getImportedKeys)
_SETTINGS = {"max_index_keys": "32", "block_size": "8192", "max_function_args": "100", "segment_size": "131072"}
# each catalog's own OID (pg_class's rows for the catalogs), which a row's `tableoid` system column holds
TABLE_OIDS = {"pg_class": 1259, "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_database": 1262}
TABLE_OIDS |= {"pg_namespace": 2615, "pg_constraint": 2606, "pg_opclass": 2616, "pg_opfamily": 2753}
TABLE_OIDS |= {"pg_rewrite": 2618, "pg_trigger": 2620, "pg_description": 2609, "pg_am": 2601, "pg_index": 2610}
TABLE_OIDS |= {"pg_attrdef": 2604, "pg_collation": 3456, "pg_operator": 2617, "pg_cast": 2605, "pg_language": 2612}
TABLE_OIDS |= {"pg_extension": 3079, "pg_policy": 3256, "pg_statistic_ext": 3381, "pg_event_trigger": 3466}
TABLE_OIDS |= {"pg_inherits": 2611, "pg_tablespace": 1213, "pg_enum": 3501, "pg_depend": 2608, "pg_sequence": 2224}
TABLE_OIDS |= {"pg_publication": 6104, "pg_roles": 1260, "pg_shdescription": 2396}
_CATEGORY = {pg.BOOL: "B", pg.NUMERIC: "N", pg.INT2: "N", pg.INT4: "N", pg.INT8: "N", pg.FLOAT4: "N"}
_CATEGORY |= {pg.FLOAT8: "N", pg.OID: "N", pg.DATE: "D", pg.TIMESTAMP: "D", pg.TIMESTAMPTZ: "D", pg.TIME: "D"}
_CATEGORY |= {pg.INTERVAL: "T", pg.BYTEA: "U", pg.JSON: "U", pg.UNKNOWN: "X"}


def oid_of(kind: str, name: str) -> int:
    """A stable OID for a schema or table name, above every built-in type's."""
    return 0x40000000 | (zlib.crc32(f"{kind}:{name}".encode()) & 0x3FFFFFFF)


Rows = dict[str, list[dict[str, object]]]


def rows(description: CatalogDescription, user: str) -> Rows:
    """Every emulated relation's rows for the project's catalog, seen by `user`."""
    project = description.project
    found: Rows = {name: [] for schema in COLUMNS.values() for name in schema}
    found["pg_namespace"] += [
        {"oid": CATALOG_NS, "nspname": "pg_catalog"},
        {"oid": INFO_NS, "nspname": "information_schema"},
    ]
    found["pg_am"].append({"oid": 2, "amname": "heap", "amhandler": "heap_tableam_handler", "amtype": "t"})
    found["pg_tablespace"].append({"oid": 1663, "spcname": "pg_default"})
    found["pg_collation"].append({"oid": 100, "collname": "default"})
    found["pg_database"].append({"oid": oid_of("database", project), "datname": project})
    # this connection's backend (pg_backend_pid() is 0), as PostgreSQL lists the session asking
    activity = {"datid": oid_of("database", project), "datname": project, "usename": user}
    found["pg_stat_activity"].append(activity | {"usesysid": OWNER if user == OWNER_NAME else oid_of("role", user)})
    found["pg_settings"] += [
        {"name": name, "setting": value, "context": "user", "vartype": "string", "source": "default"}
        for name, value in sorted({**SessionSettings(user).values, **_SETTINGS}.items())
    ]
    found["pg_roles"] += [{"oid": OWNER, "rolname": OWNER_NAME, "rolcanlogin": False}]
    if user != OWNER_NAME:
        found["pg_roles"].append({"oid": oid_of("role", user), "rolname": user})
        found["pg_user"].append({"usename": user, "usesysid": oid_of("role", user)})
    for t in pg.TYPES:
        category = _CATEGORY.get(t, "S")
        found["pg_type"].append(
            {
                "oid": t.oid,
                "typname": t.name,
                "typlen": t.size,
                "typbyval": 0 < t.size <= 8,
                "typcategory": category,
                "typarray": t.array_oid,
                "typinput": f"{t.name}in",
                "typoutput": f"{t.name}out",
                "typreceive": f"{t.name}recv",
                "typsend": f"{t.name}send",
            }
        )
        if t.array_oid:
            found["pg_type"].append(
                {
                    "oid": t.array_oid,
                    "typname": f"_{t.name}",
                    "typlen": -1,
                    "typcategory": "A",
                    "typelem": t.oid,
                    "typinput": "array_in",
                    "typoutput": "array_out",
                    "typreceive": "array_recv",
                    "typsend": "array_send",
                }
            )
    for schema in description.schemas:
        found["pg_namespace"].append({"oid": oid_of("schema", schema.lower()), "nspname": schema.lower()})
        found["schemata"].append({"catalog_name": project, "schema_name": schema.lower()})
    for table in description.tables:
        _table(found, project, user, table)
    return found


def _table(found: Rows, project: str, user: str, table: TableDescription) -> None:
    schema, name = table.schema.lower(), table.name.lower()
    namespace, relation = oid_of("schema", schema), oid_of("table", f"{schema}.{name}")
    found["pg_class"].append(
        {"oid": relation, "relname": name, "relnamespace": namespace, "relnatts": len(table.columns)}
    )
    found["pg_tables"].append({"schemaname": schema, "tablename": name})
    found["pg_stat_user_tables"].append({"relid": relation, "schemaname": schema, "relname": name})
    found["tables"].append({"table_catalog": project, "table_schema": schema, "table_name": name})
    found["table_privileges"].append(
        {"grantee": user, "table_catalog": project, "table_schema": schema, "table_name": name}
    )
    if table.comment:
        found["pg_description"].append(
            {"objoid": relation, "classoid": 1259, "objsubid": 0, "description": table.comment}
        )
    for column in table.columns:
        _column(found, project, schema, name, relation, column)


def _column(found: Rows, project: str, schema: str, table: str, relation: int, column: ColumnDescription) -> None:
    typed, position = pg.of_datatype(column.datatype), column.position
    found["pg_attribute"].append(
        {
            "attrelid": relation,
            "attname": column.name.lower(),
            "atttypid": typed.type.oid,
            "attlen": typed.type.size,
            "attnum": position,
            "atttypmod": typed.modifier,
            "attbyval": 0 < typed.type.size <= 8,
            "attnotnull": not column.nullable,
            "atthasdef": column.computed,
            "attgenerated": "s" if column.computed else "",
        }
    )
    expression = deparsed(column.expression) if column.expression is not None else None
    if expression is not None:
        # adbin holds the expression's text, which the sandbox's pg_get_expr returns as it is
        default = oid_of("attrdef", f"{schema}.{table}.{position}")
        found["pg_attrdef"].append({"oid": default, "adrelid": relation, "adnum": position, "adbin": expression})
    if column.comment:
        found["pg_description"].append(
            {"objoid": relation, "classoid": 1259, "objsubid": position, "description": column.comment}
        )
    row = _info_column(project, schema, table, column.name.lower(), position, typed)
    row["is_nullable"] = "YES" if column.nullable else "NO"
    if expression is not None:
        row |= {"is_generated": "ALWAYS", "generation_expression": expression}
    found["columns"].append(row)


def deparsed(expression: str) -> str:
    """A computed column's expression as PostgreSQL's `pg_get_expr` gives a stored one: an operator at the top
    in parentheses (`(a * b)`), a column, a constant or a function call (`CASE` included) as it is."""
    try:
        tree = sqlglot.parse_one(expression, read=DIALECT)
    except sqlglot.ParseError:
        return expression
    bare = (exp.Column, exp.Literal, exp.Func, exp.Paren, exp.Null, exp.Boolean)
    return expression if isinstance(tree, bare) else f"({expression})"


def _info_column(
    project: str, schema: str, table: str, column: str, position: int, typed: pg.ColumnType
) -> dict[str, object]:
    t, modifier = typed.type, typed.modifier
    row: dict[str, object] = {
        "table_catalog": project,
        "table_schema": schema,
        "table_name": table,
        "column_name": column,
        "ordinal_position": position,
        "data_type": t.sql_name,
        "udt_catalog": project,
        "udt_name": t.name,
        "dtd_identifier": str(position),
    }
    if t in (pg.VARCHAR, pg.BPCHAR) and modifier > 4:
        row["character_maximum_length"] = modifier - 4
        row["character_octet_length"] = (modifier - 4) * 4
    elif t is pg.NUMERIC and modifier > 4:
        row |= {"numeric_precision": (modifier - 4) >> 16, "numeric_scale": (modifier - 4) & 0xFFFF}
        row["numeric_precision_radix"] = 10
    elif t in (pg.INT2, pg.INT4, pg.INT8):
        row |= {"numeric_precision": {2: 16, 4: 32, 8: 64}[t.size], "numeric_scale": 0, "numeric_precision_radix": 2}
    elif t in (pg.FLOAT4, pg.FLOAT8):
        row |= {"numeric_precision": 24 if t is pg.FLOAT4 else 53, "numeric_precision_radix": 2}
    elif t in (pg.DATE, pg.TIMESTAMP, pg.TIMESTAMPTZ):
        row["datetime_precision"] = 0 if t is pg.DATE else 6
    return row
