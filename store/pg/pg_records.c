/* pg_records.c — the PostgreSQL backend's records (get, create, update,
 * delete, walk), and what its queue primitives (pg_queue.c) share with
 * them: the counters, fences, and a grouped queue's group locks and fixes.
 *
 * Each write is one statement of store/pg/pg_stmts.def (but the finish
 * of a record marked to run again on a queue without KEEP: RECORD_DELETE,
 * then RECORD_FINISH; and a create of many records a key of which is
 * there: RECORDS_ADD, refused, then RECORDS_CREATE); the counters they keep are added up in the
 * transaction and written at its commit, to a row of the connection's
 * own, so no row is rewritten by every claim.  On a grouped queue (AT
 * MOST … PER) a write that may move a ready record of a group locks the
 * group first (PG_GROUP_LOCK_OF), and puts it right after
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
        return; /* more tables than PG_DELTAS_MAX in one transaction: not counted */
    d->claims += claims;
    d->releases += releases;
    d->lapses += lapses;
    d->deletes += deletes;
}

int
pg_fence_failed(StoreTxn *txn, uint32_t table, StoreBytes key)
{
    int rc;
    PGresult *res = PG_RUN(txn, RECORD_GET, &rc, .table = table, .key = key);
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
        if (!PG_RUN(txn, GROUP_FIX, &rc, .table = f->table, .group = {f->group, f->len},
                    .per_group = f->per_group, .now = pg_txn_now(txn)))
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
    int rc;
    PGresult *res = PG_RUN(txn, GROUP_LOCK_OF, &rc, .table = q->table, .key = key,
                           .moving_to = moving_to, .per_group = q->per_group);
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
    int rc;
    PGresult *res = txn->write ? PG_RUN(txn, RECORD_LOCK, &rc, .table = table, .key = key)
                               : PG_RUN(txn, RECORD_GET, &rc, .table = table, .key = key);
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

/* The arguments a create and an update of record "r" of table "id" (of
 * queue "q", or NULL) in transaction "t" share, as designated initialisers
 * of PgArgs_RECORD_CREATE and PgArgs_RECORD_UPDATE (RECORDS_CREATE binds
 * the same in arrays). */
#define FILING(t, id, q, r) \
    .table = (id), .key = (r)->key, .value = (r)->value, .now = pg_txn_now(t), \
    .ord = filed_order(q, r), .not_before = (q) ? (r)->not_before : 0, \
    .grp = (q) ? (r)->group : PG_NO_BYTES, .queued = (q) != NULL

/* The claim-order key record "r" is filed by: its order key, else its key
 * (none on a collection). */
static StoreBytes
filed_order(const StoreQueue *q, const StoreRecord *r)
{
    return !q ? PG_NO_BYTES : r->order.len ? r->order : r->key;
}

static int
filing_check(const StoreQueue *q, const StoreRecord *r)
{
    if (r->key.len > STORE_MAX_KEY ||
        (q && (r->order.len > STORE_MAX_KEY || r->group.len > STORE_MAX_KEY)))
        return STORE_TOOBIG;
    return STORE_OK;
}

/* What a create of records rs[0 .. n) makes of the keys RECORDS_CREATE
 * answered in "res" (those it created, in the records' order; NULL:
 * every one, as RECORDS_ADD's success says): every one's group to put
 * right, or STORE_EXISTS for the first it did not create, into "*failed"
 * (may be NULL). */
static int
creates_settled(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *rs, size_t n,
                const PGresult *res, size_t *failed)
{
    int m = res ? PQntuples(res) : (int)n, j = 0;
    for (size_t i = 0; i < n; i++) {
        StoreBytes k = res && j < m ? pg_bytes(res, j, 0) : PG_NO_BYTES;
        const StoreRecord *r = &rs[i];
        bool made =
            j < m &&
            (!res || (k.len == r->key.len && (!k.len || !memcmp(k.data, r->key.data, k.len))));
        if (!made) {
            if (failed)
                *failed = i;
            if (was_missing(txn, table, r->key))
                txn->retryable = true; /* created meanwhile by another transaction */
            return STORE_EXISTS;
        }
        j++;
        if (was_missing(txn, table, r->key))
            txn->missing_len = 0, txn->missing_table = 0; /* its own now */
        pg_group_fix(txn, q, r->group, PG_NO_BYTES);
    }
    return STORE_OK;
}

/* The fewest records a create sends as a plain INSERT in a savepoint
 * (RECORDS_ADD) before the INSERT that finds a key taken (RECORDS_CREATE):
 * fewer go as that one alone, as they did before, whose cost is no more
 * than the savepoint's for so few, and which takes no subtransaction. */
#define ADD_MIN 16

/* The arrays RECORDS_CREATE binds, in the order of its arguments. */
enum { A_KEYS, A_VALS, A_ORDS, A_NOT_BEFORES, A_GRPS, A_COUNT };

int
pg_records_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *rs,
                  size_t n, size_t *failed)
{
    static const uint32_t oids[A_COUNT] = {PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_INT8,
                                           PG_OID_BYTEA};
    PgArray a[A_COUNT] = {{0}};
    int rc = STORE_OK;
    for (int j = 0; j < A_COUNT; j++)
        pg_array_reset(&a[j], oids[j]);
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        const StoreRecord *r = &rs[i];
        StoreBytes ord = filed_order(q, r), grp = q ? r->group : PG_NO_BYTES;
        if ((rc = filing_check(q, r)))
            break;
        pg_array_add(&a[A_KEYS], r->key.data, r->key.len);
        pg_array_add(&a[A_VALS], r->value.data, r->value.len);
        pg_array_add(&a[A_ORDS], ord.data, ord.len);
        pg_array_add_i64(&a[A_NOT_BEFORES], q ? r->not_before : 0);
        pg_array_add(&a[A_GRPS], grp.data, grp.len);
    }
#define CREATES_ARGS \
    .table = table, .keys = pg_array_bytes(&a[A_KEYS]), .vals = pg_array_bytes(&a[A_VALS]), \
    .now = pg_txn_now(txn), .ords = pg_array_bytes(&a[A_ORDS]), \
    .not_befores = pg_array_bytes(&a[A_NOT_BEFORES]), .grps = pg_array_bytes(&a[A_GRPS]), \
    .queued = q != NULL, .keep = q ? q->keep_ns : 0
    PGresult *res = NULL;
    bool add = rc == STORE_OK && n >= ADD_MIN;
    if (add && pg_run_undoable(txn, PG_ARGS(RECORDS_ADD, CREATES_ARGS), !pg_grouped(q), &rc))
        rc = creates_settled(txn, table, q, rs, n, NULL, failed);
    /* fewer, or a key taken: the INSERT that finds which */
    if (add ? rc == STORE_EXISTS : rc == STORE_OK && n)
        res = PG_RUN(txn, RECORDS_CREATE, &rc, CREATES_ARGS);
#undef CREATES_ARGS
    if (res)
        rc = creates_settled(txn, table, q, rs, n, res, failed);
    for (int j = 0; j < A_COUNT; j++)
        free(a[j].data);
    return rc;
}

int
pg_record_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    int rc = filing_check(q, r);
    if (rc)
        return rc;
    PGresult *res =
        PG_RUN(txn, RECORD_CREATE, &rc, FILING(txn, table, q, r), .keep = q ? q->keep_ns : 0);
    return res ? creates_settled(txn, table, q, r, 1, res, NULL) : rc;
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
    PGresult *res = PG_RUN(txn, RECORD_UPDATE, &rc, FILING(txn, table, q, r),
                           .ceiling = q ? q->max_attempts : 0);
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

/* The arguments of a finish (RECORD_DELETE, RECORD_FINISH) of record
 * "key" of table "id" fenced by "hold" in "t", counted by the statement
 * when "counted", as designated initialisers. */
#define FINISHING(t, id, key_, hold_, counted) \
    .table = (id), .key = (key_), .hold = (hold_), .counts = (counted), \
    .slot = pg_counter_row((t)->c), .catalog = pg_txn_version_to_check(t)

int
pg_record_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key, int64_t hold)
{
    StoreBytes was_in;
    int rc = pg_group_lock_of(txn, q, key, PG_NO_BYTES, &was_in);
    if (rc)
        return rc;
    bool counted;
    PGresult *res;
    /* The usual case first — a removal (RECORD_DELETE), or on a queue
     * that keeps and need not reap now, the record made done
     * (RECORD_DONE) — which does nothing to a record marked to run again;
     * then, for a queue's finish that found nothing to do, or one that
     * reaps, the finish of every case (RECORD_FINISH), on the record as it
     * is now. */
    enum { REMOVE, MAKE_DONE, FINISH } look = REMOVE;
    if (q && q->keep_ns > 0)
        look = pg_reap_wanted(txn, q) ? FINISH : MAKE_DONE;
    for (; look <= (q ? FINISH : REMOVE); look = look == REMOVE ? FINISH : look + 1) {
        counted = q && pg_txn_commits_with_next(txn); /* by the statement */
        res = look == FINISH ? PG_RUN(txn, RECORD_FINISH, &rc,
                                      FINISHING(txn, table, key, hold, counted), .keep = q->keep_ns)
              : look == MAKE_DONE
                  ? PG_RUN(txn, RECORD_DONE, &rc, FINISHING(txn, table, key, hold, counted))
                  : PG_RUN(txn, RECORD_DELETE, &rc, FINISHING(txn, table, key, hold, counted));
        if (!res)
            return rc;
        if (PQntuples(res))
            break;
    }
    if (PQntuples(res) == 0)
        return hold > 0 ? pg_fence_failed(txn, table, key) : STORE_NOTFOUND;
    if (pg_bool(res, 0, 0))
        txn->changed = true; /* handed out anew: claimable */
    if (q && !counted)
        pg_count(txn, table, 0, 0, 0, 1);
    return pg_group_fix(txn, q, was_in, PG_NO_BYTES);
}

/* Whether record "key" is among the keys "res" answers (RECORDS_DELETE:
 * removed), which it marks taken in "taken" so that a key given twice is
 * found once. */
static bool
removed(const PGresult *res, bool *taken, StoreBytes key)
{
    for (int i = 0; i < PQntuples(res); i++) {
        StoreBytes k = pg_bytes(res, i, 0);
        if (!taken[i] && k.len == key.len && memcmp(k.data, key.data, k.len) == 0)
            return taken[i] = true;
    }
    return false;
}

int
pg_records_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreBytes *keys,
                  const int64_t *holds, size_t n, size_t *failed)
{
    PGresult *res = NULL;
    int rc = STORE_OK;
    /* the plain removals in one statement, where a finish can be one */
    if (n > 1 && (!q || (!q->keep_ns && !q->per_group))) {
        PgArray k = {0}, h = {0};
        pg_array_reset(&k, PG_OID_BYTEA);
        pg_array_reset(&h, PG_OID_INT8);
        for (size_t i = 0; i < n; i++) {
            pg_array_add(&k, keys[i].data, keys[i].len);
            pg_array_add_i64(&h, holds[i]);
        }
        res = PG_RUN(txn, RECORDS_DELETE, &rc, .table = table, .keys = pg_array_bytes(&k),
                     .holds = pg_array_bytes(&h), .catalog = pg_txn_version_to_check(txn));
        free(k.data);
        free(h.data);
        if (!res)
            return rc;
        if (q && PQntuples(res))
            pg_count(txn, table, 0, 0, 0, PQntuples(res));
    }
    bool *taken = res ? calloc((size_t)PQntuples(res) + 1, sizeof *taken) : NULL;
    if (res && !taken)
        return STORE_IO;
    /* the rest one by one, in order: the first that fails says why */
    for (size_t i = 0; i < n && rc == STORE_OK; i++)
        if (!(res && removed(res, taken, keys[i])) &&
            (rc = pg_record_delete(txn, table, q, keys[i], holds[i])) && failed)
            *failed = i;
    free(taken);
    return rc;
}

int
pg_record_pages(StoreTxn *txn, uint32_t table, StoreBytes from,
                int (*page)(void *ctx, const PGresult *res, int n), void *ctx)
{
    size_t mark = txn->nresults;
    char *last = NULL;
    StoreBytes at = from;
    int rc = STORE_OK;
    for (;;) {
        PGresult *res =
            !last ? PG_RUN(txn, RECORD_FROM, &rc, .table = table, .key = at, .page = PG_PAGE)
                  : PG_RUN(txn, RECORD_AFTER, &rc, .table = table, .key = at, .page = PG_PAGE);
        if (!res)
            break;
        int n = PQntuples(res);
        if (n && (rc = page(ctx, res, n)))
            break;
        if (n < PG_PAGE)
            break;
        at = pg_key_keep(&last, pg_bytes(res, n - 1, 0));
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
