/* pg_records.c — the PostgreSQL backend's records (get, create, update,
 * delete, walk), and what its queue primitives (pg_queue.c) share with
 * them: the counters, fences, and a grouped queue's group locks and fixes.
 *
 * Each write is one statement of store/pg/pg_sql.c; the counters they keep
 * are added up in the transaction and written at its commit, to a row of
 * the connection's own, so no row is rewritten by every claim.  On a
 * grouped queue (AT MOST … PER) a write that may move a ready record of a
 * group locks the group first (PG_GROUP_LOCK_OF), and puts it right after
 * (PG_GROUP_FIX). */
#include "pg_internal.h"

#include "bigendian.h"

#include <stdlib.h>
#include <string.h>

void
pg_count(StoreTxn *txn, uint32_t table, int64_t claims, int64_t releases, int64_t lapses,
         int64_t deletes)
{
    PgDelta *d = pg_delta(txn, table);
    if (!d)
        return;   /* more tables than PG_DELTAS_MAX in one transaction: not counted */
    d->claims += claims;
    d->releases += releases;
    d->lapses += lapses;
    d->deletes += deletes;
}

int
pg_fence_failed(StoreTxn *txn, uint32_t table, StoreBytes key)
{
    PgArgs a = {0};
    pg_arg_i64(&a, table);
    pg_arg_bytes(&a, key);
    int rc;
    PGresult *res = pg_run(txn, PG_RECORD_GET, &a, &rc);
    return !res ? rc : PQntuples(res) ? STORE_CONFLICT : STORE_NOTFOUND;
}

int
pg_group_fix(StoreTxn *txn, const StoreQueue *q, StoreBytes g1, StoreBytes g2)
{
    const StoreBytes groups[] = {g1, g2};
    for (size_t i = 0; pg_grouped(q) && i < 2; i++) {
        StoreBytes g = groups[i];
        bool noted = g.len == 0 || g.len > STORE_MAX_KEY;
        for (size_t j = 0; j < txn->nfixes && !noted; j++) {
            PgGroupFix *f = &txn->fixes[j];
            noted = f->table == q->table && f->len == g.len && !memcmp(f->group, g.data, g.len);
            if (noted)
                f->per_group = q->per_group;
        }
        if (noted)
            continue;
        if (txn->nfixes == txn->capfixes) {
            txn->capfixes = txn->capfixes ? 2 * txn->capfixes : 4;
            txn->fixes = realloc(txn->fixes, txn->capfixes * sizeof *txn->fixes);
            if (!txn->fixes)
                abort();
        }
        PgGroupFix *f = &txn->fixes[txn->nfixes++];
        f->table = q->table;
        f->per_group = q->per_group;
        f->len = g.len;
        memcpy(f->group, g.data, g.len);
    }
    return STORE_OK;
}

/* qsort order of PgGroupFix: by table, then group bytes. */
static int
fix_cmp(const void *a, const void *b)
{
    const PgGroupFix *x = a, *y = b;
    if (x->table != y->table)
        return x->table < y->table ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->group, y->group, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

int
pg_groups_fix(StoreTxn *txn)
{
    int rc = STORE_OK;
    if (txn->nfixes > 1)
        qsort(txn->fixes, txn->nfixes, sizeof *txn->fixes, fix_cmp);
    for (size_t i = 0; i < txn->nfixes && rc == STORE_OK; i++) {
        const PgGroupFix *f = &txn->fixes[i];
        PgArgs a = {0};
        pg_arg_i64(&a, f->table);
        pg_arg_bytes(&a, (StoreBytes){f->group, f->len});
        pg_arg_bytes(&a, PG_NO_BYTES);
        pg_arg_i64(&a, f->per_group);
        pg_arg_i64(&a, pg_txn_now(txn));
        if (!pg_run(txn, PG_GROUP_FIX, &a, &rc))
            break;
    }
    txn->nfixes = 0;
    return rc;
}

int
pg_group_lock_of(StoreTxn *txn, const StoreQueue *q, StoreBytes key, StoreBytes moving_to,
                 StoreBytes *group)
{
    *group = PG_NO_BYTES;
    if (key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    if (!pg_grouped(q))
        return STORE_OK;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_bytes(&a, key);
    pg_arg_bytes(&a, moving_to);
    pg_arg_i64(&a, q->per_group);
    int rc;
    PGresult *res = pg_run(txn, PG_GROUP_LOCK_OF, &a, &rc);
    if (!res)
        return rc;
    if (PQgetisnull(res, 0, 0))
        return STORE_NOTFOUND;
    *group = pg_bytes(res, 0, 0);
    return STORE_OK;
}

StoreBytes
pg_key_keep(char **buf, StoreBytes k)
{
    free(*buf);
    *buf = malloc(k.len ? k.len : 1);
    if (!*buf)
        abort();
    if (k.len)
        memcpy(*buf, k.data, k.len);
    return (StoreBytes){*buf, k.len};
}

/* ---- records ---- */

/* True when the last record a get of "txn" found absent is (table, key). */
static bool
was_missing(const StoreTxn *txn, uint32_t table, StoreBytes key)
{
    return txn->missing_len == key.len && txn->missing_table == table &&
           (!key.len || !memcmp(txn->missing, key.data, key.len)) && txn->missing_table != 0;
}

int
pg_record_get(StoreTxn *txn, uint32_t table, StoreBytes key, StoreRecord *out)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    PgArgs a = {0};
    pg_arg_i64(&a, table);
    pg_arg_bytes(&a, key);
    int rc;
    PGresult *res = pg_run(txn, txn->write ? PG_RECORD_LOCK : PG_RECORD_GET, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0) {
        txn->missing_table = table;
        if (key.len)
            memcpy(txn->missing, key.data, key.len);
        txn->missing_len = key.len;
        return STORE_NOTFOUND;
    }
    pg_record_of(res, 0, 0, out);
    return STORE_OK;
}

/* The arguments of a create or update: $1 .. $8 (and $9, the ceiling). */
static void
filing_args(PgArgs *a, StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    pg_arg_i64(a, table);
    pg_arg_bytes(a, r->key);
    pg_arg_bytes(a, r->value);
    pg_arg_i64(a, pg_txn_now(txn));
    pg_arg_bytes(a, !q ? PG_NO_BYTES : r->order.len ? r->order : r->key);
    pg_arg_i64(a, q ? r->not_before : 0);
    pg_arg_bytes(a, q ? r->group : PG_NO_BYTES);
    pg_arg_bool(a, q != NULL);
    pg_arg_i64(a, q ? q->max_attempts : 0);
}

static int
filing_check(const StoreQueue *q, const StoreRecord *r)
{
    if (r->key.len > STORE_MAX_KEY || (q && (r->order.len > STORE_MAX_KEY ||
                                             r->group.len > STORE_MAX_KEY)))
        return STORE_TOOBIG;
    return STORE_OK;
}

int
pg_record_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    int rc = filing_check(q, r);
    if (rc)
        return rc;
    PgArgs a = {0};
    filing_args(&a, txn, table, q, r);
    a.n = 8;   /* no ceiling: a new record has no attempts */
    PGresult *res = pg_run(txn, PG_RECORD_CREATE, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res)) {
        if (was_missing(txn, table, r->key))
            txn->missing_len = 0, txn->missing_table = 0;   /* its own now */
        return pg_group_fix(txn, q, r->group, PG_NO_BYTES);
    }
    if (was_missing(txn, table, r->key))
        txn->retryable = true;   /* created meanwhile by another transaction */
    return STORE_EXISTS;
}

int
pg_record_update(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    int rc = filing_check(q, r);
    if (rc)
        return rc == STORE_TOOBIG && r->key.len > STORE_MAX_KEY ? STORE_NOTFOUND : rc;
    StoreBytes was_in;
    if ((rc = pg_group_lock_of(txn, q, r->key, r->group, &was_in)))
        return rc;
    PgArgs a = {0};
    filing_args(&a, txn, table, q, r);
    PGresult *res = pg_run(txn, PG_RECORD_UPDATE, &a, &rc);
    if (!res)
        return rc;
    if (!PQntuples(res))
        return STORE_NOTFOUND;
    if (was_missing(txn, table, r->key)) {
        /* Another transaction created it since this one found it absent:
         * what this one computed from its absence must not overwrite it. */
        txn->failed = txn->retryable = true;
        return STORE_CONFLICT;
    }
    return pg_group_fix(txn, q, was_in, r->group);
}

int
pg_record_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key, int64_t hold)
{
    StoreBytes was_in;
    int rc = pg_group_lock_of(txn, q, key, PG_NO_BYTES, &was_in);
    if (rc)
        return rc;
    PgArgs a = {0};
    pg_arg_i64(&a, table);
    pg_arg_bytes(&a, key);
    pg_arg_i64(&a, hold);
    bool counted = q && pg_txn_commits_with_next(txn);   /* by the statement */
    pg_arg_bool(&a, counted);
    pg_arg_i64(&a, txn->c->slot);
    pg_arg_i64(&a, pg_txn_version_to_check(txn));
    PGresult *res = pg_run(txn, PG_RECORD_DELETE, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return hold > 0 ? pg_fence_failed(txn, table, key) : STORE_NOTFOUND;
    if (q && !counted)
        pg_count(txn, table, 0, 0, 0, 1);
    return pg_group_fix(txn, q, was_in, PG_NO_BYTES);
}

int
pg_record_pages(StoreTxn *txn, uint32_t table, StoreBytes from,
                int (*page)(void *ctx, const PGresult *res, int n), void *ctx)
{
    size_t mark = txn->nresults;
    PgStmt s = PG_RECORD_FROM;
    char *last = NULL;
    StoreBytes at = from;
    int rc = STORE_OK;
    for (;;) {
        PgArgs a = {0};
        pg_arg_i64(&a, table);
        pg_arg_bytes(&a, at);
        pg_arg_i64(&a, PG_PAGE);
        PGresult *res = pg_run(txn, s, &a, &rc);
        if (!res)
            break;
        int n = PQntuples(res);
        if (n && (rc = page(ctx, res, n)))
            break;
        if (n < PG_PAGE)
            break;
        at = pg_key_keep(&last, pg_bytes(res, n - 1, 0));
        s = PG_RECORD_AFTER;
        pg_results_drop(txn, mark);
    }
    pg_results_drop(txn, mark);
    free(last);
    return rc;
}

/* What pg_record_each's pages are handed to. */
typedef struct EachRecord {
    int (*fn)(void *ctx, const StoreRecord *r);
    void *ctx;
} EachRecord;

static int
each_record(void *ctx, const PGresult *res, int n)
{
    const EachRecord *e = ctx;
    int rc = STORE_OK;
    for (int i = 0; i < n && rc == STORE_OK; i++) {
        StoreRecord r;
        pg_record_of(res, i, 0, &r);
        rc = e->fn(e->ctx, &r);
    }
    return rc;
}

int
pg_record_each(StoreTxn *txn, uint32_t table, StoreBytes from,
               int (*fn)(void *ctx, const StoreRecord *r), void *ctx)
{
    EachRecord e = {fn, ctx};
    return pg_record_pages(txn, table, from, each_record, &e);
}

/* ---- the queue ---- */
