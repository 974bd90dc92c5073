/* pg_schema.c — the PostgreSQL backend's schema, created on first use.
 *
 * Everything lives in the schema "queuefs" of the database the URI names;
 * queuefs.version holds the schema's version, so that a later release can
 * migrate it.  Creating it needs CREATE on the database (see the README for
 * the grants); processes opening the store at once serialise on an
 * advisory lock, so one of them creates it. */
#include "pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The advisory lock the creation holds: "qfs\0" */
#define SCHEMA_LOCK "1903522560"

static const char schema_sql[] =
    "CREATE SCHEMA IF NOT EXISTS queuefs;"
    "CREATE TABLE queuefs.version (version int8 NOT NULL);"
    "CREATE TABLE queuefs.tables ("
    "  id int8 PRIMARY KEY, name bytea NOT NULL UNIQUE, def bytea NOT NULL);"
    "CREATE SEQUENCE queuefs.table_ids;"
    /* Moved on by every change of a definition: what caches of them check. */
    "CREATE TABLE queuefs.catalog (version int8 NOT NULL);"
    "INSERT INTO queuefs.catalog VALUES (1);"
    "CREATE SEQUENCE queuefs.holds;"
    /* A record; instants are int8 nanoseconds since the epoch (0: none). */
    "CREATE TABLE queuefs.records ("
    "  table_id int8 NOT NULL, key bytea NOT NULL, value bytea NOT NULL,"
    "  seq int8 NOT NULL, since int8 NOT NULL, written int8 NOT NULL,"
    "  changed int8 NOT NULL, claimed int8 NOT NULL DEFAULT 0,"
    "  attempts int8 NOT NULL DEFAULT 0, hold int8 NOT NULL DEFAULT 0,"
    "  claimed_until int8 NOT NULL DEFAULT 0,"
    "  consumer bytea NOT NULL DEFAULT '', instance bytea NOT NULL DEFAULT '',"
    "  ord bytea NOT NULL DEFAULT '', not_before int8 NOT NULL DEFAULT 0,"
    "  grp bytea NOT NULL DEFAULT '',"
    "  state int2, wake int8 NOT NULL DEFAULT 0, dead bool NOT NULL DEFAULT false,"
    "  PRIMARY KEY (table_id, key))"
    "  WITH (fillfactor = 80);"
    "CREATE INDEX records_ready ON queuefs.records (table_id, ord, seq) WHERE state = 0;"
    "CREATE INDEX records_waiting ON queuefs.records (table_id, wake, key) WHERE state = 1;"
    /* Counters: a row per table and connection slot, so no row is every
     * claim's; pages mostly empty, so their updates stay in the page (HOT)
     * and go on when the tablespace is full. */
    "CREATE TABLE queuefs.counts ("
    "  table_id int8 NOT NULL, slot int4 NOT NULL,"
    "  claims int8 NOT NULL DEFAULT 0, releases int8 NOT NULL DEFAULT 0,"
    "  lapses int8 NOT NULL DEFAULT 0, deletes int8 NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (table_id, slot)) WITH (fillfactor = 10);"
    "CREATE TABLE queuefs.dedup ("
    "  table_id int8 NOT NULL, key bytea NOT NULL, seen int8 NOT NULL,"
    "  PRIMARY KEY (table_id, key));"
    "CREATE INDEX dedup_seen ON queuefs.dedup (table_id, seen);"
    /* Where a queue record is filed at instant "now": held until its
     * deadline; retired when dead (at the ceiling); delayed until its
     * not_before; or ready. */
    "CREATE FUNCTION queuefs.place_state(cu int8, nb int8, dead bool, now int8)"
    "  RETURNS int2 LANGUAGE sql IMMUTABLE AS $$"
    "  SELECT (CASE WHEN cu > now THEN 1 WHEN dead THEN 2 WHEN nb > now THEN 1 ELSE 0 END)::int2"
    "  $$;"
    "CREATE FUNCTION queuefs.place_wake(cu int8, nb int8, dead bool, now int8)"
    "  RETURNS int8 LANGUAGE sql IMMUTABLE AS $$"
    "  SELECT CASE WHEN cu > now THEN cu WHEN dead THEN 0 WHEN nb > now THEN nb ELSE 0 END"
    "  $$;"
    "INSERT INTO queuefs.version VALUES (1);";

/* Runs "sql" (simple protocol); 0, or STORE_IO with the server's message. */
static int
exec_ok(PGconn *conn, const char *sql, char *errbuf, size_t errlen, PGresult **keep)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType s = PQresultStatus(res);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        if (keep)
            *keep = res;
        else
            PQclear(res);
        return 0;
    }
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    int rc = state && !strcmp(state, "42501") ? STORE_READONLY : STORE_IO;
    if (errbuf)
        snprintf(errbuf, errlen, "%s", PQerrorMessage(conn));
    PQclear(res);
    PQexec(conn, "ROLLBACK");
    return rc;
}

/* True in *exists when the schema's version table is there. */
static int
schema_exists(PGconn *conn, bool *exists, char *errbuf, size_t errlen)
{
    PGresult *res = NULL;
    int rc = exec_ok(conn,
                     "SELECT 1 FROM pg_namespace n, pg_class c WHERE n.nspname = 'queuefs'"
                     " AND c.relnamespace = n.oid AND c.relname = 'version'",
                     errbuf, errlen, &res);
    if (!rc) {
        *exists = PQntuples(res) == 1;
        PQclear(res);
    }
    return rc;
}

int
pg_schema_ensure(PGconn *conn, bool read_only, char *errbuf, size_t errlen)
{
    bool exists;
    int rc = schema_exists(conn, &exists, errbuf, errlen);
    if (!rc && !exists && read_only) {
        snprintf(errbuf, errlen, "no schema queuefs in the database yet");
        return STORE_NOTFOUND;
    }
    if (!rc && !exists) {
        rc = exec_ok(conn, "BEGIN; SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ")", errbuf, errlen,
                     NULL);
        /* Another process may have made it while this one waited. */
        if (!rc)
            rc = schema_exists(conn, &exists, errbuf, errlen);
        if (!rc && !exists)
            rc = exec_ok(conn, schema_sql, errbuf, errlen, NULL);
        if (!rc)
            rc = exec_ok(conn, "COMMIT", errbuf, errlen, NULL);
    }
    PGresult *res = NULL;
    if (rc || (rc = exec_ok(conn, "SELECT max(version) FROM queuefs.version", errbuf, errlen,
                            &res)))
        return rc;
    long version = atol(PQgetvalue(res, 0, 0));
    PQclear(res);
    if (version != PG_SCHEMA_VERSION) {
        snprintf(errbuf, errlen, "schema queuefs is version %ld; this queuefs knows %d", version,
                 PG_SCHEMA_VERSION);
        return STORE_CORRUPT;
    }
    return 0;
}
