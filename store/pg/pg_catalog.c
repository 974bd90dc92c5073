/* pg_catalog.c — the PostgreSQL backend's tables, identities and
 * DEDUPLICATE windows.
 *
 * A table is a row of queuefs.tables; its records, counters and dedup
 * entries carry its id.  Its store-assigned identities come from a sequence
 * of its own, queuefs.ids_<id>, and its records' arrival numbers from
 * queuefs.arrivals_<id>, both made with it: numbers drawn by a transaction
 * that rolls back are not handed out again (the gaps are documented). */
#include "pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int catalog_changed(StoreTxn *txn);

static StoreBytes
name_bytes(const char *name)
{
    return (StoreBytes){name, strlen(name)};
}

static bool
name_ok(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= STORE_MAX_KEY;
}

int
pg_table_create(StoreTxn *txn, const char *name, StoreBytes def, uint32_t *id_out)
{
    if (!name_ok(name))
        return STORE_TOOBIG;
    int rc;
    PGresult *res = PG_RUN(txn, TABLE_CREATE, &rc, .name = name_bytes(name), .def = def);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return STORE_EXISTS;
    uint32_t id = (uint32_t)pg_i64(res, 0, 0);
    char sql[320];
    /* Its counter rows of the first 64 slots are made now, so that their
     * updates find room in their pages even when the tablespace fills
     * later; a connection of a higher slot (more than 64 open on the
     * database) makes its row with its first count. */
    snprintf(sql, sizeof sql,
             "CREATE SEQUENCE queuefs.ids_%u; CREATE SEQUENCE queuefs.arrivals_%u;"
             " INSERT INTO queuefs.counts (table_id, slot)"
             " SELECT %u, slot FROM generate_series(0, 63) slot",
             id, id, id);
    if ((rc = pg_run_sql(txn, sql)) || (rc = catalog_changed(txn)))
        return rc;
    if (id_out)
        *id_out = id;
    return STORE_OK;
}

int
pg_table_redefine(StoreTxn *txn, const char *name, StoreBytes def)
{
    int rc;
    PGresult *res = PG_RUN(txn, TABLE_REDEFINE, &rc, .name = name_bytes(name), .def = def);
    return !res ? rc : !PQntuples(res) ? STORE_NOTFOUND : catalog_changed(txn);
}

/* ---- the cache of definitions ---- */

void
pg_catalog_forget(Store *st)
{
    while (st->tables) {
        PgTableEntry *e = st->tables;
        st->tables = e->next;
        free(e->name);
        free(e);
    }
}

/* Keeps "p" until "txn" ends. */
static void
txn_keep(StoreTxn *txn, void *p)
{
    txn->blobs = realloc(txn->blobs, (txn->nblobs + 1) * sizeof *txn->blobs);
    if (!txn->blobs)
        abort();
    txn->blobs[txn->nblobs++] = p;
}

/* Looks "name" up in the cache, valid for "txn" when it reads the catalog
 * version the cache holds and has changed no definition itself (a
 * transaction not yet begun assumes so, and has it checked when it begins:
 * pg_txn.c); the definition is copied for the transaction (the cache may
 * be cleared meanwhile).  True when found. */
static bool
cache_get(StoreTxn *txn, const char *name, uint32_t *id_out, StoreBytes *def_out)
{
    Store *st = txn->st;
    bool found = false;
    if (txn->catalog_changed)
        return false;
    pthread_mutex_lock(&st->catalog_mu);
    if (st->catalog_version == txn->catalog_version)
        for (PgTableEntry *e = st->tables; e; e = e->next)
            if (!strcmp(e->name, name)) {
                if (id_out)
                    *id_out = e->id;
                if (def_out) {
                    void *copy = malloc(e->def_len ? e->def_len : 1);
                    if (!copy)
                        abort();
                    memcpy(copy, e->def, e->def_len);
                    txn_keep(txn, copy);
                    *def_out = (StoreBytes){copy, e->def_len};
                }
                found = true;
                break;
            }
    pthread_mutex_unlock(&st->catalog_mu);
    txn->cache_used = txn->cache_used || (found && !txn->started);
    return found;
}

/* Remembers what "txn" read of "name", when it reads the cache's version. */
static void
cache_put(StoreTxn *txn, const char *name, uint32_t id, StoreBytes def)
{
    Store *st = txn->st;
    if (txn->catalog_changed)
        return;
    PgTableEntry *e = malloc(sizeof *e + def.len);
    if (!e)
        abort();
    e->id = id;
    e->def_len = def.len;
    if (def.len)
        memcpy(e->def, def.data, def.len);
    e->name = strdup(name);
    if (!e->name)
        abort();
    pthread_mutex_lock(&st->catalog_mu);
    if (st->catalog_version == txn->catalog_version) {
        e->next = st->tables;
        st->tables = e;
        e = NULL;
    }
    pthread_mutex_unlock(&st->catalog_mu);
    if (e) {
        free(e->name);
        free(e);
    }
}

/* Moves the catalog version on, in "txn": every cache of definitions, in
 * every process, reads them again after its commit. */
static int
catalog_changed(StoreTxn *txn)
{
    txn->catalog_changed = true;
    return pg_run_sql(txn, "UPDATE queuefs.catalog SET version = version + 1");
}

/* Runs the statement "args" is of (PG_ARGS), which answers a table's id
 * first: 0 with its answer in "*res" and the id in "*id"; STORE_NOTFOUND
 * when it answers no row; or the failure's status. */
static int
table_row(StoreTxn *txn, const PgStmt *args, PGresult **res, uint32_t *id)
{
    int rc;
    if (!(*res = pg_run(txn, args, &rc)))
        return rc;
    if (PQntuples(*res) == 0)
        return STORE_NOTFOUND;
    *id = (uint32_t)pg_i64(*res, 0, 0);
    return STORE_OK;
}

int
pg_table_get(StoreTxn *txn, const char *name, uint32_t *id_out, StoreBytes *def_out)
{
    if (!name_ok(name))
        return STORE_NOTFOUND;
    if (cache_get(txn, name, id_out, def_out))
        return STORE_OK;
    PGresult *res;
    uint32_t id = 0;
    int rc = table_row(txn, PG_ARGS(TABLE_GET, .name = name_bytes(name)), &res, &id);
    if (rc)
        return rc;
    StoreBytes def = pg_bytes(res, 0, 1);
    cache_put(txn, name, id, def);
    if (id_out)
        *id_out = id;
    if (def_out)
        *def_out = def;
    return STORE_OK;
}

int
pg_table_each(StoreTxn *txn, int (*fn)(void *ctx, const char *name, uint32_t id, StoreBytes def),
              void *ctx)
{
    int rc;
    PGresult *res = PG_RUN(txn, TABLE_EACH, &rc);
    if (!res)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        StoreBytes name = pg_bytes(res, i, 0);
        char buf[STORE_MAX_KEY + 1];
        size_t n = name.len > STORE_MAX_KEY ? STORE_MAX_KEY : name.len;
        memcpy(buf, name.data, n);
        buf[n] = 0;
        if ((rc = fn(ctx, buf, (uint32_t)pg_i64(res, i, 1), pg_bytes(res, i, 2))))
            return rc;
    }
    return STORE_OK;
}

int
pg_table_drop(StoreTxn *txn, const char *name)
{
    PGresult *res;
    uint32_t id = 0;
    int rc = table_row(txn, PG_ARGS(TABLE_DROP, .name = name_bytes(name)), &res, &id);
    if (rc)
        return rc;
    PgDelta *d = pg_delta(txn, id);
    if (d)
        *d = (PgDelta){.table = id};
    char sql[128];
    snprintf(sql, sizeof sql,
             "DROP SEQUENCE IF EXISTS queuefs.ids_%u; DROP SEQUENCE IF EXISTS queuefs.arrivals_%u",
             id, id);
    return (rc = pg_run_sql(txn, sql)) ? rc : catalog_changed(txn);
}

int
pg_table_rename(StoreTxn *txn, const char *from, const char *to)
{
    if (!name_ok(to))
        return STORE_TOOBIG;
    int rc;
    PGresult *res =
        PG_RUN(txn, TABLE_RENAME, &rc, .name = name_bytes(from), .new_name = name_bytes(to));
    if (!res)
        return rc;
    if (PQntuples(res))
        return catalog_changed(txn);
    if (!(res = PG_RUN(txn, TABLE_NAMED, &rc, .name = name_bytes(to))))
        return rc;
    return PQntuples(res) ? STORE_EXISTS : STORE_NOTFOUND;
}

/* ---- identities ---- */

/* qsort order of identities: ascending. */
static int
id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int
pg_identity_next(StoreTxn *txn, uint32_t table, size_t n, int64_t *out)
{
    int rc;
    PGresult *res = PG_RUN(txn, ID_NEXT, &rc, .table = table, .n = (int64_t)n);
    if (!res)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if ((size_t)PQntuples(res) <= i || PQgetisnull(res, (int)i, 0))
            return STORE_EXHAUSTED;
        out[i] = pg_i64(res, (int)i, 0);
    }
    if (n > 1)
        qsort(out, n, sizeof *out, id_cmp); /* in the order drawn */
    if (n) {
        txn->drawn_table = table;
        txn->drawn_id = out[n - 1];
    }
    return STORE_OK;
}

int
pg_identity_note(StoreTxn *txn, uint32_t table, int64_t id)
{
    /* (a note of what the sequence just handed out needs no look) */
    if (id < 1 || (txn->drawn_table == table && id <= txn->drawn_id))
        return STORE_OK;
    int rc;
    /* Mostly the sequence is past it already (a note of what it assigned). */
    PGresult *res = PG_RUN(txn, ID_HELD, &rc, .table = table, .id = id);
    if (!res)
        return rc;
    if (pg_bool(res, 0, 0))
        return STORE_OK;
    /* Notes of one table take turns, so that none lowers another's. */
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(1903522561, %u)", table);
    if ((rc = pg_run_sql(txn, sql)))
        return rc;
    return PG_RUN(txn, ID_NOTE, &rc, .table = table, .id = id) ? STORE_OK : rc;
}

/* ---- deduplication ---- */

int
pg_dedup_check(StoreTxn *txn, uint32_t table, StoreBytes key, int64_t window_ns, bool *repeat)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    int64_t now = pg_txn_now(txn), start;
    if (__builtin_sub_overflow(now, window_ns, &start))
        start = INT64_MIN;
    int rc;
    PGresult *res = PG_RUN(txn, DEDUP, &rc, .table = table, .key = key, .now = now, .start = start);
    if (!res)
        return rc;
    *repeat = PQntuples(res) == 0;
    return STORE_OK;
}

/* ---- health ---- */

int
pg_health(StoreTxn *txn, StoreHealth *out)
{
    int rc;
    PGresult *res = PG_RUN(txn, HEALTH, &rc);
    if (!res)
        return rc;
    *out = (StoreHealth){.known = true,
                         .live_rows = (uint64_t)pg_i64(res, 0, 0),
                         .dead_rows = (uint64_t)pg_i64(res, 0, 1)};
    return STORE_OK;
}
