/* pg_queue.c — the PostgreSQL backend's queue primitives: claims (from
 * the head, named, grouped, rate-limited), releases, touches, retries,
 * give-backs, refiling, the counts and the waiting walk.
 *
 * Each primitive of an ungrouped queue is one statement of store/pg/pg_stmts.def
 * (a named claim, a retry and a failed fence read the row first).  A
 * grouped queue (AT MOST … PER, StoreQueue.per_group > 0) costs more
 * statements: a write that may move a ready record of a group locks the
 * group first (PG_GROUP_LOCK_OF), and every write that changes a group's
 * holds or ready records puts the group right after it (PG_GROUP_FIX);
 * its claims are functions of the schema (store/pg/pg_schema.c).  A
 * rate-limited queue's claim (AT MOST … EVERY) of an ungrouped queue's
 * head minds the window in its own statement (PG_CLAIM_HEAD_RATE,
 * PG_CLAIM_FROM_RATE); any other locks the queue's row of hand-outs first
 * (PG_RATE_ROOM) and notes what it handed out (PG_RATE_NOTE). */
#include "pg_internal.h"

#include "bigendian.h"

#include <stdlib.h>
#include <string.h>

static int64_t
deadline(int64_t now, int64_t timeout)
{
    int64_t until;
    return __builtin_add_overflow(now, timeout, &until) ? INT64_MAX : until;
}

static bool
bytes_ok(StoreBytes b)
{
    return b.len <= 255;
}

/* The window of AT MOST … EVERY that ends now starts after this instant. */
static int64_t
window_start(StoreTxn *txn, const StoreQueue *q)
{
    int64_t start;
    return __builtin_sub_overflow(pg_txn_now(txn), q->rate_window_ns, &start) ? INT64_MIN : start;
}

/* Runs RATE_NEXT ("next") or RATE_ROOM about the window of AT MOST …
 * EVERY queue "q" that ends now: 0 with its answer in "*res", or the
 * failure's status. */
static int
rate_ask(StoreTxn *txn, const StoreQueue *q, int64_t want, bool next, PGresult **res)
{
    int rc;
    int64_t start = window_start(txn, q);
    *res = next ? PG_RUN(txn, RATE_NEXT, &rc, .table = q->table, .start = start, .rate = q->rate)
                : PG_RUN(txn, RATE_ROOM, &rc, .table = q->table, .start = start, .rate = q->rate,
                         .want = want);
    return *res ? STORE_OK : rc;
}

/* How many records rate-limited queue "q" may hand out now, but "want" at
 * most, its row of hand-outs locked for the rest of the transaction;
 * INT64_MAX for a queue without a rate. */
static int
rate_room(StoreTxn *txn, const StoreQueue *q, int64_t want, int64_t *room)
{
    *room = INT64_MAX;
    if (q->rate <= 0)
        return STORE_OK;
    PGresult *res;
    int rc = rate_ask(txn, q, want, false, &res);
    if (!rc)
        *room = pg_i64(res, 0, 0);
    return rc;
}

/* Notes "handed" hand-outs of rate-limited queue "q" at now.  The queue
 * keeps its last "rate" instants whatever their age, ascending:
 * transactions take its lock in another order than their now(), and one
 * that began earlier still counts instants a later one's window has left
 * behind (and is noted at the newest of them, pg_schema.c's version 6). */
static int
rate_note(StoreTxn *txn, const StoreQueue *q, int64_t handed)
{
    if (q->rate <= 0 || handed <= 0)
        return STORE_OK;
    int rc;
    if (!PG_RUN(txn, RATE_NOTE, &rc, .table = q->table, .rate = q->rate, .now = pg_txn_now(txn),
                .handed = handed))
        return rc;
    return STORE_OK;
}

/* The claim of the one record "c->key" of an ungrouped queue: waits for
 * its row lock, then claims it when it is claimable now and "room"
 * allows. */
static int
claim_one(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c, int64_t until, int64_t room,
          int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
          int64_t *claimed)
{
    if (c->key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    int rc;
    PGresult *res = PG_RUN(txn, RECORD_LOCK, &rc, .table = q->table, .key = c->key);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return STORE_NOTFOUND;
    StoreRecord before;
    pg_record_of(res, 0, 0, &before);
    int state =
        PQgetisnull(res, 0, PG_RECORD_NCOLS)
            ? -1
            : (int16_t)be_get((const unsigned char *)PQgetvalue(res, 0, PG_RECORD_NCOLS), 2);
    int64_t wake = pg_i64(res, 0, PG_RECORD_NCOLS + 1);
    bool dead = pg_bool(res, 0, PG_RECORD_NCOLS + 2);
    int64_t now = pg_txn_now(txn);
    bool ready = state == 0 || (state == 1 && wake <= now && before.claimed_until <= now && !dead &&
                                before.not_before <= now);
    if (q->paused || !ready || room < 1)
        return STORE_OK;
    PGresult *done = PG_RUN(txn, CLAIM_ONE, &rc, .table = q->table, .key = c->key, .now = now,
                            .ceiling = q->max_attempts, .until = until, .consumer = c->consumer,
                            .instance = c->instance, .keep = q->keep_ns);
    if (!done)
        return rc;
    StoreRecord r;
    pg_record_of(done, 0, 0, &r);
    pg_count(txn, q->table, 1, 0, before.claimed_until != 0, 0);
    *claimed = 1;
    if ((rc = rate_note(txn, q, 1)))
        return rc;
    return fn ? fn(ctx, &r, &before) : STORE_OK;
}

/* Hands out the records claim "res" claimed (the record as now stored,
 * then its columns before the claim: PG_CLAIM_HEAD's columns): counts the
 * claims and lapses unless the statement did ("counted"), notes the
 * hand-outs of a rate-limited queue unless the statement did ("noted"),
 * and calls "fn" for each, in claim order. */
static int
hand_out(StoreTxn *txn, const StoreQueue *q, const PGresult *res, bool counted, bool noted,
         int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
         int64_t *claimed)
{
    int n = PQntuples(res), lapses = 0, rc;
    for (int i = 0; i < n; i++)
        lapses += pg_i64(res, i, PG_RECORD_NCOLS + 2) != 0;
    if (!counted)
        pg_count(txn, q->table, n, 0, lapses, 0);
    *claimed = n;
    if (!noted && (rc = rate_note(txn, q, n)))
        return rc;
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
        before.errors = pg_bytes(res, i, col + 8);
        if ((rc = fn(ctx, &r, &before)))
            return rc;
    }
    return STORE_OK;
}

/* The arguments the claims of a grouped queue (CLAIM_GROUPED and
 * CLAIM_NAMED) share, as designated initialisers: the ceiling, the new
 * deadline "until", the consumer and instance of claim "c", per_group and
 * the KEEP its reaping goes by. */
#define CLAIMING(q, c, until_ns) \
    .ceiling = (q)->max_attempts, .until = (until_ns), .consumer = (c)->consumer, \
    .instance = (c)->instance, .per_group = (q)->per_group, .keep = (q)->keep_ns

/* The claim of the one record "c->key" of a grouped queue: its group
 * locked, then the record, claimed when it is ready or parked, its group
 * has room and "room" allows. */
static int
claim_named(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c, int64_t until, int64_t room,
            int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
            int64_t *claimed)
{
    StoreBytes group;
    int rc = pg_group_lock_of(txn, q, c->key, PG_NO_BYTES, &group);
    if (rc)
        return rc;
    if (q->paused || room < 1)
        return STORE_OK;
    PGresult *res = PG_RUN(txn, CLAIM_NAMED, &rc, .table = q->table, .key = c->key,
                           .now = pg_txn_now(txn), CLAIMING(q, c, until));
    return res ? hand_out(txn, q, res, false, false, fn, ctx, claimed) : rc;
}

/* The arguments of a claim of "n" from the head of queue "q" by claim "c"
 * (CLAIM_HEAD, CLAIM_HEAD_REAP, CLAIM_HEAD_RATE and the CLAIM_FROM of
 * each), counted by the statement when "counted", as designated
 * initialisers. */
#define CLAIMING_HEAD(txn, q, c, n_, counted) \
    .table = (q)->table, .timeout = (q)->timeout_ns, .n = (n_), .ceiling = (q)->max_attempts, \
    .consumer = (c)->consumer, .instance = (c)->instance, .catalog = pg_txn_version_to_check(txn), \
    .slot = pg_counter_row((txn)->c), .counts = (counted)
/* Those of CLAIM_FROM's that say where it starts: PgHint "h". */
#define STARTING(h) \
    .snap = (h).snap, .from_ord = (h).from_ord, .from_seq = (h).from_seq, .from_wake = (h).from_wake
/* Those of CLAIM_HEAD_RATE's and CLAIM_FROM_RATE's of their own: queue
 * "q"'s KEEP and AT MOST … EVERY. */
#define RATING(q) .keep = (q)->keep_ns, .rate = (q)->rate, .window = (q)->rate_window_ns

/* The claim of "n" from the head of ungrouped queue "q": from the
 * position kept for the queue while the xmin is held back (pg_hint.c),
 * else from the start of the claim's indexes — each the statement of a
 * rate-limited queue (which minds its window, and reaps), of a queue that
 * keeps when "reap" (pg_reap_wanted), or of neither; of the ready records
 * alone while none waiting can be due (pg_due_quiet), else learning till
 * when none will be.  The position it found is kept when the claim is its
 * whole transaction ("counted"). */
static PGresult *
claim_head(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c, int64_t n, bool counted,
           bool reap, int *rc)
{
    PgHint h;
    pg_hint_get(txn->st, txn->c, q->table, txn->catalog_version, &h);
    PGresult *res;
    uint64_t changes = pg_changes(txn->st);
    int64_t sent = pg_local_now();
    if (q->rate > 0)
        res = !h.hinted ? PG_RUN(txn, CLAIM_HEAD_RATE, rc, CLAIMING_HEAD(txn, q, c, n, counted),
                                 RATING(q))
                        : PG_RUN(txn, CLAIM_FROM_RATE, rc, CLAIMING_HEAD(txn, q, c, n, counted),
                                 STARTING(h), RATING(q));
    else if (!h.hinted && !reap && pg_due_quiet(txn->st, q, changes))
        res = PG_RUN(txn, CLAIM_READY, rc, CLAIMING_HEAD(txn, q, c, n, counted));
    else if (!h.hinted) {
        res = reap ? PG_RUN(txn, CLAIM_HEAD_REAP, rc, CLAIMING_HEAD(txn, q, c, n, counted),
                            .keep = q->keep_ns)
                   : PG_RUN(txn, CLAIM_HEAD, rc, CLAIMING_HEAD(txn, q, c, n, counted));
        if (res && PQntuples(res) > 0)
            pg_due_learn(txn->st, q, changes, pg_i64(res, 0, PG_RECORD_CLAIMED),
                         pg_i64(res, 0, PG_QUIET_COL));
    } else
        res = reap ? PG_RUN(txn, CLAIM_FROM_REAP, rc, CLAIMING_HEAD(txn, q, c, n, counted),
                            STARTING(h), .keep = q->keep_ns)
                   : PG_RUN(txn, CLAIM_FROM, rc, CLAIMING_HEAD(txn, q, c, n, counted), STARTING(h));
    if (!res)
        pg_hint_forget(txn->st, q->table);
    else if (counted && PQntuples(res) > 0)
        pg_hint_put(txn->st, txn->c, q->table, txn->catalog_version, &h, res,
                    pg_local_now() - sent);
    pg_hint_free(&h);
    return res;
}

int
pg_claim(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c,
         int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
         int64_t *claimed)
{
    *claimed = 0;
    if (!bytes_ok(c->consumer) || !bytes_ok(c->instance))
        return STORE_TOOBIG;
    int64_t room = INT64_MAX;
    /* The claim of an ungrouped queue's head minds AT MOST … EVERY in its
     * own statement (claim_head); any other takes its room first. */
    bool head = !c->key.len && !pg_grouped(q);
    int rc = pg_groups_fix(txn); /* what this transaction changed first */
    if (rc || (!q->paused && !head && (c->key.len || c->n > 0) &&
               (rc = rate_room(txn, q, c->key.len ? 1 : c->n, &room))))
        return rc;
    if (c->key.len) {
        int64_t until = deadline(pg_txn_now(txn), q->timeout_ns);
        return pg_grouped(q) ? claim_named(txn, q, c, until, room, fn, ctx, claimed)
                             : claim_one(txn, q, c, until, room, fn, ctx, claimed);
    }
    if (q->paused || c->n <= 0 || room <= 0)
        return STORE_OK;
    int64_t n = c->n < room ? c->n : room;
    bool counted = false; /* by the statement */
    PGresult *res;
    if (pg_grouped(q)) {
        int64_t now = pg_txn_now(txn);
        res = PG_RUN(txn, CLAIM_GROUPED, &rc, .table = q->table, .now = now, .n = n,
                     CLAIMING(q, c, deadline(now, q->timeout_ns)));
    } else {
        /* The transaction's instant is the server's to put in: this claim
         * may be the statement that begins it. */
        bool reap = q->rate == 0 && pg_reap_wanted(txn, q);
        counted = pg_txn_commits_with_next(txn);
        res = claim_head(txn, q, c, n, counted, reap, &rc);
    }
    return res ? hand_out(txn, q, res, counted, head, fn, ctx, claimed) : rc;
}

int
pg_release(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, int64_t not_before,
           StoreBytes reason, StoreRecord *out)
{
    if (reason.len > STORE_MAX_REASON)
        return STORE_TOOBIG;
    if (key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    int rc;
    PGresult *res = PG_RUN(txn, RELEASE, &rc, .table = q->table, .key = key, .hold = hold,
                           .now = pg_txn_now(txn), .not_before = not_before,
                           .ceiling = q->max_attempts, .reason = reason);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return pg_fence_failed(txn, q->table, key);
    pg_count(txn, q->table, 0, 1, 0, 0);
    if (out)
        pg_record_of(res, 0, 0, out);
    return pg_group_fix(txn, q, pg_bytes(res, 0, PG_RECORD_GRP), PG_NO_BYTES);
}

static int
bytes_cmp(const void *a, const void *b)
{
    const StoreBytes *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->data, y->data, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Puts right, in group order, the groups of the records "res" released
 * (PG_RECORD_COLS) of grouped queue "q". */
static int
groups_fix_released(StoreTxn *txn, const StoreQueue *q, const PGresult *res)
{
    int n = PQntuples(res), rc = STORE_OK;
    if (!pg_grouped(q) || n == 0)
        return STORE_OK;
    StoreBytes *groups = malloc((size_t)n * sizeof *groups);
    if (!groups)
        abort();
    for (int i = 0; i < n; i++)
        groups[i] = pg_bytes(res, i, PG_RECORD_GRP);
    qsort(groups, (size_t)n, sizeof *groups, bytes_cmp);
    for (int i = 0; i < n && !rc; i++)
        if (i == 0 || bytes_cmp(&groups[i - 1], &groups[i]))
            rc = pg_group_fix(txn, q, groups[i], PG_NO_BYTES);
    free(groups);
    return rc;
}

int
pg_release_all(StoreTxn *txn, const StoreQueue *q, StoreBytes who, StoreBytes instance,
               int64_t not_before, StoreBytes reason, int (*fn)(void *ctx, const StoreRecord *r),
               void *ctx)
{
    if (reason.len > STORE_MAX_REASON)
        return STORE_TOOBIG;
    int rc;
    PGresult *res = PG_RUN(txn, RELEASE_ALL, &rc, .table = q->table, .now = pg_txn_now(txn),
                           .not_before = not_before, .consumer = who, .instance = instance,
                           .ceiling = q->max_attempts, .reason = reason);
    if (!res)
        return rc;
    int n = PQntuples(res);
    pg_count(txn, q->table, 0, n, 0, 0);
    if ((rc = groups_fix_released(txn, q, res)))
        return rc;
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
    int rc;
    PGresult *res =
        PG_RUN(txn, TOUCH, &rc, .table = q->table, .key = key, .hold = hold, .now = pg_txn_now(txn),
               .until = deadline(pg_txn_now(txn), q->timeout_ns));
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return pg_fence_failed(txn, q->table, key);
    if (out)
        pg_record_of(res, 0, 0, out);
    return STORE_OK;
}

int
pg_retry(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t not_before, StoreRecord *out)
{
    StoreBytes was_in;
    int rc = pg_group_lock_of(txn, q, key, PG_NO_BYTES, &was_in);
    if (rc)
        return rc;
    PGresult *res = PG_RUN(txn, RETRY, &rc, .table = q->table, .key = key, .now = pg_txn_now(txn),
                           .not_before = not_before);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        return STORE_NOTFOUND;
    pg_count(txn, q->table, 0, pg_bool(res, 0, PG_RECORD_NCOLS), 0, 0);
    if (out)
        pg_record_of(res, 0, 0, out);
    return pg_group_fix(txn, q, was_in, PG_NO_BYTES);
}

int
pg_records_retry(StoreTxn *txn, const StoreQueue *q, const StoreBytes *keys,
                 const int64_t *not_befores, size_t n, int (*fn)(void *ctx, const StoreRecord *r),
                 void *ctx, size_t *failed)
{
    PGresult *res = NULL;
    int rc = STORE_OK, rows = 0, row = 0;
    /* all in one statement where no group's lock is to be taken */
    if (n > 1 && !q->per_group) {
        PgArray k = {0}, nb = {0};
        pg_array_reset(&k, PG_OID_BYTEA);
        pg_array_reset(&nb, PG_OID_INT8);
        for (size_t i = 0; i < n; i++) {
            pg_array_add(&k, keys[i].data, keys[i].len);
            pg_array_add_i64(&nb, not_befores[i]);
        }
        res = PG_RUN(txn, RECORDS_RETRY, &rc, .table = q->table, .keys = pg_array_bytes(&k),
                     .not_befores = pg_array_bytes(&nb), .now = pg_txn_now(txn));
        free(k.data);
        free(nb.data);
        if (!res)
            return rc;
        rows = PQntuples(res);
        int64_t ended = 0;
        for (int i = 0; i < rows; i++)
            ended += pg_bool(res, i, PG_RECORD_NCOLS);
        if (ended)
            pg_count(txn, q->table, 0, ended, 0, 0);
    }
    /* the statement's rows in the keys' order; those it has none for
     * (missing, done, given twice) one by one: the first that fails says
     * why */
    for (size_t i = 0; i < n && rc == STORE_OK; i++) {
        StoreRecord r;
        if (row < rows && pg_i64(res, row, PG_RECORD_NCOLS + 1) == (int64_t)i + 1)
            pg_record_of(res, row++, 0, &r);
        else if ((rc = pg_retry(txn, q, keys[i], not_befores[i], &r)) != STORE_OK) {
            if (failed)
                *failed = i;
            break;
        }
        rc = fn(ctx, &r);
    }
    return rc;
}

int
pg_unclaim(StoreTxn *txn, const StoreQueue *q, const StoreRecord *before, int64_t hold,
           bool *given_back)
{
    *given_back = false;
    if (before->key.len > STORE_MAX_KEY)
        return STORE_OK;
    int rc;
    PGresult *res =
        PG_RUN(txn, UNCLAIM, &rc, .table = q->table, .key = before->key, .hold = hold,
               .written = before->written, .attempts = before->attempts, .was_hold = before->hold,
               .claimed_until = before->claimed_until, .consumer = before->consumer,
               .instance = before->instance, .since = before->since, .changed = before->changed,
               .claimed = before->claimed, .now = pg_txn_now(txn), .ceiling = q->max_attempts,
               .errors = before->errors);
    if (!res)
        return rc;
    if (!PQntuples(res))
        return STORE_OK;
    *given_back = true;
    pg_count(txn, q->table, -1, 0, before->claimed_until ? -1 : 0, 0);
    return pg_group_fix(txn, q, pg_bytes(res, 0, 0), PG_NO_BYTES);
}

/* A refile's state: its queue, how it files a record, and the arrays a
 * page's filings are bound in. */
typedef struct Refile {
    StoreTxn *txn;
    const StoreQueue *q;
    int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out);
    void *ctx;
    PgArray arrays[4];
} Refile;

/* Files the records of page "res" ("n" rows) by "file", in one statement. */
static int
refile_page(void *arg, const PGresult *res, int n)
{
    static const uint32_t oids[4] = {PG_OID_BYTEA, PG_OID_BYTEA, PG_OID_INT8, PG_OID_BYTEA};
    Refile *rf = arg;
    PgArray *arrays = rf->arrays;
    for (int i = 0; i < 4; i++)
        pg_array_reset(&arrays[i], oids[i]);
    for (int i = 0; i < n; i++) {
        StoreRecord r;
        StoreFiling f = {PG_NO_BYTES, 0, PG_NO_BYTES};
        pg_record_of(res, i, 0, &r);
        int rc = rf->file(rf->ctx, &r, &f);
        if (rc)
            return rc;
        if (f.order.len > STORE_MAX_KEY || f.group.len > STORE_MAX_KEY)
            return STORE_TOOBIG;
        StoreBytes order = f.order.len ? f.order : r.key;
        pg_array_add(&arrays[0], r.key.data, r.key.len);
        pg_array_add(&arrays[1], order.data, order.len);
        pg_array_add_i64(&arrays[2], f.not_before);
        pg_array_add(&arrays[3], f.group.data, f.group.len);
    }
    int rc;
    if (!PG_RUN(rf->txn, REFILE_PAGE, &rc, .table = rf->q->table,
                .keys = pg_array_bytes(&arrays[0]), .ords = pg_array_bytes(&arrays[1]),
                .not_befores = pg_array_bytes(&arrays[2]), .grps = pg_array_bytes(&arrays[3])))
        return rc;
    return STORE_OK;
}

/* Files every record of queue "q" as "file" says (see store_queue_refile),
 * a page of records at a time, a statement a page. */
static int
refile_each(StoreTxn *txn, const StoreQueue *q,
            int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx)
{
    Refile rf = {.txn = txn, .q = q, .file = file, .ctx = ctx};
    int rc = pg_record_pages(txn, q->table, PG_NO_BYTES, refile_page, &rf);
    for (int i = 0; i < 4; i++)
        free(rf.arrays[i].data);
    return rc;
}

int
pg_queue_refile(StoreTxn *txn, const StoreQueue *q,
                int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx)
{
    int rc = pg_groups_fix(txn);
    if (rc)
        return rc;
    /* The groups first, so that no claim changes their holds meanwhile. */
    if (!PG_RUN(txn, REFILE_LOCK, &rc, .table = q->table) ||
        (file && (rc = refile_each(txn, q, file, ctx))))
        return rc;
    if (!PG_RUN(txn, REFILE, &rc, .table = q->table, .now = pg_txn_now(txn),
                .ceiling = q->max_attempts, .per_group = q->per_group, .keep = q->keep_ns))
        return rc;
    if (!PG_RUN(txn, REFILE_GROUPED, &rc, .table = q->table, .per_group = q->per_group))
        return rc;
    return STORE_OK;
}

int
pg_queue_rate_next(StoreTxn *txn, const StoreQueue *q, int64_t *at)
{
    *at = pg_txn_now(txn);
    if (q->rate <= 0)
        return STORE_OK;
    PGresult *res;
    int rc = rate_ask(txn, q, 0, true, &res);
    /* The hand-out whose leaving the window makes room. */
    if (!rc && !PQgetisnull(res, 0, 0))
        *at = deadline(pg_i64(res, 0, 0), q->rate_window_ns);
    return rc;
}

/* Reads the first row of counts "res" (COUNTS, COUNTS_GROUPED) into
 * "out": its first "n" columns, counts, into "*to[0]" .. "*to[n - 1]", and
 * column "head", the head's key (NULL: no head). */
static void
counts_read(const PGresult *res, uint64_t *const to[], int n, int head, StoreQueueCounts *out)
{
    for (int i = 0; i < n; i++)
        *to[i] = (uint64_t)pg_i64(res, 0, i);
    out->has_head = !PQgetisnull(res, 0, head);
    out->head_key = out->has_head ? pg_bytes(res, 0, head) : PG_NO_BYTES;
}

int
pg_queue_counts(StoreTxn *txn, uint32_t table, StoreQueueCounts *out)
{
    memset(out, 0, sizeof *out);
    int rc = pg_groups_fix(txn);
    if (rc)
        return rc;
    PGresult *res = PG_RUN(txn, COUNTS, &rc, .table = table, .now = pg_txn_now(txn));
    if (!res)
        return rc;
    uint64_t *const counts[] = {&out->records, &out->ready, &out->held, &out->delayed, &out->idle};
    counts_read(res, counts, 5, 6, out);
    out->next_wake = pg_i64(res, 0, 5);
    pg_due_lower(txn->st, table, out->has_head ? 0 : out->next_wake);
    /* The counters as committed, and this transaction's changes to them. */
    const PgDelta *d = NULL;
    for (int i = 0; i < txn->ndeltas; i++)
        if (txn->deltas[i].table == table)
            d = &txn->deltas[i];
    out->claims = (uint64_t)(pg_i64(res, 0, 7) + (d ? d->claims : 0));
    out->releases = (uint64_t)(pg_i64(res, 0, 8) + (d ? d->releases : 0));
    out->lapses = (uint64_t)(pg_i64(res, 0, 9) + (d ? d->lapses : 0));
    out->deletes = (uint64_t)(pg_i64(res, 0, 10) + (d ? d->deletes : 0));
    out->done = (uint64_t)pg_i64(res, 0, 12);
    if (!pg_bool(res, 0, 11))
        return STORE_OK;
    /* A grouped queue: which of its ready records a claim may take. */
    PGresult *g = PG_RUN(txn, COUNTS_GROUPED, &rc, .table = table, .now = pg_txn_now(txn));
    if (!g)
        return rc;
    uint64_t *const grouped[] = {&out->ready, &out->grouped, &out->groups_full};
    counts_read(g, grouped, 3, 3, out);
    return STORE_OK;
}

int
pg_queue_each_waiting(StoreTxn *txn, uint32_t table,
                      int (*fn)(void *ctx, const StoreRecord *r, int64_t wake_ns), void *ctx)
{
    size_t mark = txn->nresults;
    int64_t after_wake = -1;
    char *last = NULL;
    StoreBytes after_key = PG_NO_BYTES;
    int rc = STORE_OK;
    for (;;) {
        PGresult *res = PG_RUN(txn, WAITING, &rc, .table = table, .after_wake = after_wake,
                               .after_key = after_key, .page = PG_PAGE, .now = pg_txn_now(txn));
        if (!res)
            break;
        int n = PQntuples(res);
        for (int i = 0; i < n && rc == STORE_OK; i++) {
            StoreRecord r;
            pg_record_of(res, i, 0, &r);
            rc = fn(ctx, &r, pg_i64(res, i, PG_RECORD_NCOLS));
        }
        if (rc || n < PG_PAGE)
            break;
        after_wake = pg_i64(res, n - 1, PG_RECORD_NCOLS);
        after_key = pg_key_keep(&last, pg_bytes(res, n - 1, 0));
        pg_results_drop(txn, mark);
    }
    pg_results_drop(txn, mark);
    free(last);
    return rc;
}

int
pg_record_rerun(StoreTxn *txn, const StoreQueue *q, StoreBytes key)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_NOTFOUND;
    int rc;
    PGresult *res = PG_RUN(txn, RERUN, &rc, .table = q->table, .key = key, .now = pg_txn_now(txn));
    if (!res)
        return rc;
    return PQntuples(res) ? STORE_OK : pg_fence_failed(txn, q->table, key);
}
