/* pg_records.c — the PostgreSQL backend's records and queue primitives.
 *
 * Each primitive is one statement of store/pg_sql.c (a named claim, a
 * retry and a failed fence read the row first); the counters they keep are
 * added up in the transaction and written at its commit, to a row of the
 * connection's own, so no row is rewritten by every claim. */
#include "pg_internal.h"

#include "be.h"

#include <stdlib.h>
#include <string.h>

/* How many rows a walk reads at a time. */
#define PAGE 256

static const StoreBytes NO_BYTES = {NULL, 0};

static int64_t
deadline(int64_t now, int64_t timeout)
{
    int64_t until;
    return __builtin_add_overflow(now, timeout, &until) ? INT64_MAX : until;
}

static void
count(StoreTxn *txn, uint32_t table, int64_t claims, int64_t releases, int64_t lapses,
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

/* The answer for a fenced write that changed no row: NOTFOUND when the
 * record is absent, else CONFLICT. */
static int
fence_failed(StoreTxn *txn, uint32_t table, StoreBytes key)
{
    PgArgs a = {0};
    pg_arg_i64(&a, table);
    pg_arg_bytes(&a, key);
    int rc;
    PGresult *res = pg_run(txn, PG_RECORD_GET, &a, &rc);
    return !res ? rc : PQntuples(res) ? STORE_CONFLICT : STORE_NOTFOUND;
}

/* A walk's place: "k" copied into "*buf" (replacing what it held), so it
 * outlives the page it came from. */
static StoreBytes
key_keep(char **buf, StoreBytes k)
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
    pg_arg_i64(a, txn->now);
    pg_arg_bytes(a, !q ? NO_BYTES : r->order.len ? r->order : r->key);
    pg_arg_i64(a, q ? r->not_before : 0);
    pg_arg_bytes(a, q ? r->group : NO_BYTES);
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
        return STORE_OK;
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
    return STORE_OK;
}

int
pg_record_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key, int64_t hold)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    PgArgs a = {0};
    pg_arg_i64(&a, table);
    pg_arg_bytes(&a, key);
    pg_arg_i64(&a, hold);
    pg_arg_i64(&a, txn->now);
    int rc;
    PGresult *res = pg_run(txn, PG_RECORD_DELETE, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return hold > 0 ? fence_failed(txn, table, key) : STORE_NOTFOUND;
    if (q)
        count(txn, table, 0, 0, 0, 1);
    return STORE_OK;
}

int
pg_record_each(StoreTxn *txn, uint32_t table, StoreBytes from,
               int (*fn)(void *ctx, const StoreRecord *r), void *ctx)
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
        pg_arg_i64(&a, PAGE);
        PGresult *res = pg_run(txn, s, &a, &rc);
        if (!res)
            break;
        int n = PQntuples(res);
        for (int i = 0; i < n && rc == STORE_OK; i++) {
            StoreRecord r;
            pg_record_of(res, i, 0, &r);
            rc = fn(ctx, &r);
        }
        if (rc || n < PAGE)
            break;
        at = key_keep(&last, pg_bytes(res, n - 1, 0));
        s = PG_RECORD_AFTER;
        pg_results_drop(txn, mark);
    }
    pg_results_drop(txn, mark);
    free(last);
    return rc;
}

/* ---- the queue ---- */

static bool
bytes_ok(StoreBytes b)
{
    return b.len <= 255;
}

/* The claim of the one record "c->key": waits for its row lock, then
 * claims it when it is claimable now. */
static int
claim_one(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c, int64_t until,
          int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
          int64_t *claimed)
{
    if (c->key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_bytes(&a, c->key);
    int rc;
    PGresult *res = pg_run(txn, PG_RECORD_LOCK, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return STORE_NOTFOUND;
    StoreRecord before;
    pg_record_of(res, 0, 0, &before);
    int state = PQgetisnull(res, 0, PG_RECORD_NCOLS)
                    ? -1
                    : (int16_t)be_get((const unsigned char *)PQgetvalue(res, 0, PG_RECORD_NCOLS), 2);
    int64_t wake = pg_i64(res, 0, PG_RECORD_NCOLS + 1);
    bool dead = pg_bool(res, 0, PG_RECORD_NCOLS + 2);
    int64_t now = txn->now;
    bool ready = state == 0 ||
                 (state == 1 && wake <= now && before.claimed_until <= now && !dead &&
                  before.not_before <= now);
    if (q->paused || !ready)
        return STORE_OK;
    PgArgs b = {0};
    pg_arg_i64(&b, q->table);
    pg_arg_bytes(&b, c->key);
    pg_arg_i64(&b, now);
    pg_arg_i64(&b, q->max_attempts);
    pg_arg_i64(&b, until);
    pg_arg_bytes(&b, c->consumer);
    pg_arg_bytes(&b, c->instance);
    PGresult *done = pg_run(txn, PG_CLAIM_ONE, &b, &rc);
    if (!done)
        return rc;
    StoreRecord r;
    pg_record_of(done, 0, 0, &r);
    count(txn, q->table, 1, 0, before.claimed_until != 0, 0);
    *claimed = 1;
    return fn ? fn(ctx, &r, &before) : STORE_OK;
}

int
pg_claim(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c,
         int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
         int64_t *claimed)
{
    *claimed = 0;
    if (q->per_group || q->rate)
        return STORE_INVALID;
    if (!bytes_ok(c->consumer) || !bytes_ok(c->instance))
        return STORE_TOOBIG;
    int64_t until = deadline(txn->now, q->timeout_ns);
    if (c->key.len)
        return claim_one(txn, q, c, until, fn, ctx, claimed);
    if (q->paused || c->n <= 0)
        return STORE_OK;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_i64(&a, txn->now);
    pg_arg_i64(&a, c->n);
    pg_arg_i64(&a, q->max_attempts);
    pg_arg_i64(&a, until);
    pg_arg_bytes(&a, c->consumer);
    pg_arg_bytes(&a, c->instance);
    int rc;
    PGresult *res = pg_run(txn, PG_CLAIM_HEAD, &a, &rc);
    if (!res)
        return rc;
    int n = PQntuples(res), lapses = 0;
    for (int i = 0; i < n; i++)
        lapses += pg_i64(res, i, PG_RECORD_NCOLS + 2) != 0;
    count(txn, q->table, n, 0, lapses, 0);
    *claimed = n;
    for (int i = 0; fn && i < n; i++) {
        StoreRecord r, before;
        pg_record_of(res, i, 0, &r);
        before = r;
        int col = PG_RECORD_NCOLS;
        before.attempts = pg_i64(res, i, col);
        before.hold = pg_i64(res, i, col + 1);
        before.claimed_until = pg_i64(res, i, col + 2);
        before.consumer = pg_bytes(res, i, col + 3);
        before.instance = pg_bytes(res, i, col + 4);
        before.since = pg_i64(res, i, col + 5);
        before.changed = pg_i64(res, i, col + 6);
        before.claimed = pg_i64(res, i, col + 7);
        if ((rc = fn(ctx, &r, &before)))
            return rc;
    }
    return STORE_OK;
}

int
pg_release(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, int64_t not_before,
           StoreRecord *out)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_bytes(&a, key);
    pg_arg_i64(&a, hold);
    pg_arg_i64(&a, txn->now);
    pg_arg_i64(&a, not_before);
    pg_arg_i64(&a, q->max_attempts);
    int rc;
    PGresult *res = pg_run(txn, PG_RELEASE, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return fence_failed(txn, q->table, key);
    count(txn, q->table, 0, 1, 0, 0);
    if (out)
        pg_record_of(res, 0, 0, out);
    return STORE_OK;
}

int
pg_release_all(StoreTxn *txn, const StoreQueue *q, StoreBytes who, StoreBytes instance,
               int64_t not_before, int (*fn)(void *ctx, const StoreRecord *r), void *ctx)
{
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_i64(&a, txn->now);
    pg_arg_i64(&a, not_before);
    pg_arg_bytes(&a, who);
    pg_arg_bytes(&a, instance);
    pg_arg_i64(&a, q->max_attempts);
    int rc;
    PGresult *res = pg_run(txn, PG_RELEASE_ALL, &a, &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    count(txn, q->table, 0, n, 0, 0);
    for (int i = 0; fn && i < n; i++) {
        StoreRecord r;
        pg_record_of(res, i, 0, &r);
        if ((rc = fn(ctx, &r)))
            return rc;
    }
    return STORE_OK;
}

int
pg_touch(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, StoreRecord *out)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_bytes(&a, key);
    pg_arg_i64(&a, hold);
    pg_arg_i64(&a, txn->now);
    pg_arg_i64(&a, deadline(txn->now, q->timeout_ns));
    int rc;
    PGresult *res = pg_run(txn, PG_TOUCH, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return fence_failed(txn, q->table, key);
    if (out)
        pg_record_of(res, 0, 0, out);
    return STORE_OK;
}

int
pg_retry(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t not_before,
         StoreRecord *out)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_bytes(&a, key);
    pg_arg_i64(&a, txn->now);
    pg_arg_i64(&a, not_before);
    int rc;
    PGresult *res = pg_run(txn, PG_RETRY, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return STORE_NOTFOUND;
    count(txn, q->table, 0, pg_bool(res, 0, PG_RECORD_NCOLS), 0, 0);
    if (out)
        pg_record_of(res, 0, 0, out);
    return STORE_OK;
}

int
pg_unclaim(StoreTxn *txn, const StoreQueue *q, const StoreRecord *before, int64_t hold,
           bool *given_back)
{
    *given_back = false;
    if (before->key.len > STORE_MAX_KEY)
        return STORE_OK;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_bytes(&a, before->key);
    pg_arg_i64(&a, hold);
    pg_arg_i64(&a, before->written);
    pg_arg_i64(&a, before->attempts);
    pg_arg_i64(&a, before->hold);
    pg_arg_i64(&a, before->claimed_until);
    pg_arg_bytes(&a, before->consumer);
    pg_arg_bytes(&a, before->instance);
    pg_arg_i64(&a, before->since);
    pg_arg_i64(&a, before->changed);
    pg_arg_i64(&a, before->claimed);
    pg_arg_i64(&a, txn->now);
    pg_arg_i64(&a, q->max_attempts);
    int rc;
    PGresult *res = pg_run(txn, PG_UNCLAIM, &a, &rc);
    if (!res)
        return rc;
    if (PQntuples(res)) {
        *given_back = true;
        count(txn, q->table, -1, 0, before->claimed_until ? -1 : 0, 0);
    }
    return STORE_OK;
}

int
pg_queue_refile(StoreTxn *txn, const StoreQueue *q,
                int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx)
{
    if (file)
        return STORE_INVALID;   /* not yet */
    (void)ctx;
    PgArgs a = {0};
    pg_arg_i64(&a, q->table);
    pg_arg_i64(&a, txn->now);
    pg_arg_i64(&a, q->max_attempts);
    int rc;
    return pg_run(txn, PG_REFILE, &a, &rc) ? STORE_OK : rc;
}

int
pg_queue_rate_next(StoreTxn *txn, const StoreQueue *q, int64_t *at)
{
    *at = txn->now;
    return q->rate ? STORE_INVALID : STORE_OK;   /* not yet */
}

int
pg_queue_counts(StoreTxn *txn, uint32_t table, StoreQueueCounts *out)
{
    memset(out, 0, sizeof *out);
    PgArgs a = {0};
    pg_arg_i64(&a, table);
    pg_arg_i64(&a, txn->now);
    int rc;
    PGresult *res = pg_run(txn, PG_COUNTS, &a, &rc);
    if (!res)
        return rc;
    out->records = (uint64_t)pg_i64(res, 0, 0);
    out->ready = (uint64_t)pg_i64(res, 0, 1);
    out->held = (uint64_t)pg_i64(res, 0, 2);
    out->delayed = (uint64_t)pg_i64(res, 0, 3);
    out->idle = (uint64_t)pg_i64(res, 0, 4);
    out->next_wake = pg_i64(res, 0, 5);
    out->has_head = !PQgetisnull(res, 0, 6);
    if (out->has_head)
        out->head_key = pg_bytes(res, 0, 6);
    /* The counters as committed, and this transaction's changes to them. */
    const PgDelta *d = NULL;
    for (int i = 0; i < txn->ndeltas; i++)
        if (txn->deltas[i].table == table)
            d = &txn->deltas[i];
    out->claims = (uint64_t)(pg_i64(res, 0, 7) + (d ? d->claims : 0));
    out->releases = (uint64_t)(pg_i64(res, 0, 8) + (d ? d->releases : 0));
    out->lapses = (uint64_t)(pg_i64(res, 0, 9) + (d ? d->lapses : 0));
    out->deletes = (uint64_t)(pg_i64(res, 0, 10) + (d ? d->deletes : 0));
    return STORE_OK;
}

int
pg_queue_each_waiting(StoreTxn *txn, uint32_t table,
                      int (*fn)(void *ctx, const StoreRecord *r, int64_t wake_ns), void *ctx)
{
    size_t mark = txn->nresults;
    int64_t after_wake = -1;
    char *last = NULL;
    StoreBytes after_key = NO_BYTES;
    int rc = STORE_OK;
    for (;;) {
        PgArgs a = {0};
        pg_arg_i64(&a, table);
        pg_arg_i64(&a, after_wake);
        pg_arg_bytes(&a, after_key);
        pg_arg_i64(&a, PAGE);
        pg_arg_i64(&a, txn->now);
        PGresult *res = pg_run(txn, PG_WAITING, &a, &rc);
        if (!res)
            break;
        int n = PQntuples(res);
        for (int i = 0; i < n && rc == STORE_OK; i++) {
            StoreRecord r;
            pg_record_of(res, i, 0, &r);
            rc = fn(ctx, &r, pg_i64(res, i, PG_RECORD_NCOLS));
        }
        if (rc || n < PAGE)
            break;
        after_wake = pg_i64(res, n - 1, PG_RECORD_NCOLS);
        after_key = key_keep(&last, pg_bytes(res, n - 1, 0));
        pg_results_drop(txn, mark);
    }
    pg_results_drop(txn, mark);
    free(last);
    return rc;
}
