/* lmdb_claim.c — the queue primitives of store.h on LMDB: claims,
 * releases, touches, retries, give-backs and COALESCE's mark, each a
 * change of a record's columns that refiles it (lmdb_record_store) and
 * keeps the queue's counters; and the store-assigned identities and
 * DEDUPLICATE windows, kept in the table's meta values.  See "Layout" in
 * lmdb_internal.h. */
#include "lmdb_internal.h"

#define META_HOLDS "holds"
#define META_NEXT_ID "next_id"
#define NEXT_ID_EXHAUSTED INT64_MIN
#define DEDUP_PREFIX "dedup:"
#define DEDUP_TIME_PREFIX "dedupt:"
/* The expired DEDUPLICATE entries one check prunes at most: more than one,
 * so pruning outruns the writes that add them. */
#define DEDUP_PRUNE 8

/* A record's bytes copied out of LMDB memory, so it outlives the writes
 * that move it. */
typedef struct RecordCopy {
    StoreRecord r;
    unsigned char *buf;
} RecordCopy;

static void
record_copy(const StoreRecord *src, RecordCopy *out)
{
    StoreBytes *parts[] = {&out->r.key,   &out->r.value, &out->r.consumer, &out->r.instance,
                           &out->r.order, &out->r.group, &out->r.errors};
    out->r = *src;
    size_t len = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        len += parts[i]->len;
    unsigned char *p = out->buf = lmdb_alloc(len);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        lmdb_copy(p, parts[i]->data, parts[i]->len);
        parts[i]->data = p;
        p += parts[i]->len;
    }
}

/* True when "r" is held at "now". */
static bool
held(const StoreRecord *r, int64_t now)
{
    return queue_hold_runs(r->claimed_until, now);
}

/* True when queue "q" may hand "r" out at "now". */
static bool
claimable(const StoreQueue *q, const StoreRecord *r, int64_t now)
{
    return queue_place(q, r, now).state == QUEUE_READY;
}

/* Adds "text" to the errors of "r" as the failure of attempt "attempt" at
 * "at": r->errors then points into "*buf", which the caller frees after
 * storing "r". */
static void
errors_add(StoreRecord *r, int64_t attempt, int64_t at, StoreBytes text, unsigned char **buf)
{
    QueueError e = {attempt, at, text};
    *buf = lmdb_alloc(r->errors.len + QUEUE_ERROR_HEAD + STORE_MAX_REASON);
    r->errors = (StoreBytes){*buf, queue_errors_add(r->errors, &e, *buf)};
}

/* Records the lapse of the hold of "r", if it lapsed by "now", as
 * errors_add does ("*buf" NULL when it did not). */
static void
lapse_note(StoreRecord *r, int64_t now, unsigned char **buf)
{
    *buf = NULL;
    if (queue_hold_lapsed(r, now))
        errors_add(r, r->attempts, r->claimed_until,
                   (StoreBytes){(const unsigned char *)QUEUE_LAPSED, strlen(QUEUE_LAPSED)}, buf);
}

/* The number of a new hold: 1 + the last the store handed out. */
static int
hold_next(StoreTxn *txn, int64_t *out)
{
    int64_t last;
    int rc = lmdb_meta_get_i64(txn, 0, META_HOLDS, &last);
    if (rc)
        return rc;
    *out = last + 1;
    return lmdb_meta_put_i64(txn, 0, META_HOLDS, *out);
}

/* Claims record "r" (claimable) for "c", calling "fn" as store_claim
 * promises. */
static int
claim_one(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c, const StoreRecord *r,
          int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx)
{
    int64_t now = lmdb_txn_now(txn), hold;
    RecordCopy before;
    unsigned char *errors;
    int rc = hold_next(txn, &hold);
    if (rc)
        return rc;
    record_copy(r, &before);
    StoreRecord n = before.r;
    lapse_note(&n, now, &errors);
    n.attempts++;
    n.hold = hold;
    n.claimed_until = queue_hold_deadline(q, now);
    n.consumer = c->consumer;
    n.instance = c->instance;
    n.changed = n.claimed = now;
    int64_t extra[CNT_N] = {[CNT_CLAIMS] = 1, [CNT_LAPSES] = queue_claim_lapses(&before.r)};
    rc = lmdb_record_store(txn, q->table, q, &n, PUT_UPDATE, extra);
    /* "n" is the record as stored (its bytes in "before" and "c"): no
     * read back. */
    if (rc == STORE_OK && fn)
        rc = fn(ctx, &n, &before.r);
    free(before.buf);
    free(errors);
    return rc;
}

/* store_claim but for the reaping. */
static int
claim_records(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c,
              int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
              int64_t *claimed)
{
    int64_t now = lmdb_txn_now(txn), room;
    StoreRecord r;
    bool full = false;
    *claimed = 0;
    int rc = lmdb_rate_room(txn, q, c->key.len ? 1 : c->n, &room);
    if (rc || q->paused || room <= 0)
        return rc;
    if (c->key.len) {
        /* Drained first, a lapsed hold of its group no longer counts. */
        StoreBytes head;
        if (q->per_group > 0 && (rc = lmdb_queue_head(txn, q, now, &head)) && rc != STORE_NOTFOUND)
            return rc;
        if ((rc = lmdb_record_load(txn, q->table, c->key, &r, NULL)))
            return rc == STORE_TOOBIG ? STORE_NOTFOUND : rc;
        if ((rc = lmdb_group_at_limit(txn, q->table, q, r.group, &full)))
            return rc;
        if (full || !claimable(q, &r, now))
            return STORE_OK;
        if ((rc = claim_one(txn, q, c, &r, fn, ctx)) == STORE_OK)
            *claimed = 1;
        return rc ? rc : lmdb_rate_note(txn, q, 1);
    }
    while (*claimed < c->n && *claimed < room) {
        StoreBytes key;
        if ((rc = lmdb_queue_head(txn, q, now, &key)) == STORE_NOTFOUND)
            break;
        if (rc || (rc = lmdb_record_load(txn, q->table, key, &r, NULL)))
            return rc == STORE_NOTFOUND ? STORE_CORRUPT : rc;
        if (!claimable(q, &r, now))
            rc = lmdb_record_store(txn, q->table, q, &r, PUT_UPDATE, NULL); /* refile it */
        else if ((rc = claim_one(txn, q, c, &r, fn, ctx)) == STORE_OK)
            ++*claimed;
        if (rc)
            return rc;
    }
    return lmdb_rate_note(txn, q, *claimed);
}

int
lmdb_claim(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c,
           int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
           int64_t *claimed)
{
    /* Reaped after it, as c->key may point into LMDB memory. */
    int rc = claim_records(txn, q, c, fn, ctx, claimed);
    return rc ? rc : lmdb_done_reap(txn, q);
}

/* Loads record "key" and checks that its live hold is number "hold". */
static int
load_held(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, StoreRecord *r)
{
    int rc = lmdb_record_load(txn, q->table, key, r, NULL);
    if (rc)
        return rc == STORE_TOOBIG ? STORE_NOTFOUND : rc;
    return r->hold == hold && held(r, lmdb_txn_now(txn)) ? STORE_OK : STORE_CONFLICT;
}

/* Stores "r" with its hold ended (counted as a release when it had one,
 * its errors given "reason" when non-empty, or "lapsed" when it lapsed):
 * since = changed = now, delayed until "not_before" when non-zero; then
 * "retry" sets attempts back to 0.  Reads it back into "out" (may be
 * NULL). */
static int
end_hold(StoreTxn *txn, const StoreQueue *q, StoreRecord *r, int64_t not_before, StoreBytes reason,
         bool retry, StoreRecord *out)
{
    int64_t now = lmdb_txn_now(txn);
    int64_t extra[CNT_N] = {[CNT_RELEASES] = held(r, now)};
    unsigned char *errors;
    if (reason.len && held(r, now))
        errors_add(r, r->attempts, now, reason, &errors);
    else
        lapse_note(r, now, &errors);
    if (retry)
        r->attempts = 0;
    r->hold = r->claimed_until = 0;
    r->consumer = r->instance = (StoreBytes){NULL, 0};
    r->since = r->changed = now;
    if (not_before)
        r->not_before = not_before;
    int rc = lmdb_record_store(txn, q->table, q, r, PUT_UPDATE, extra);
    free(errors);
    return rc || !out ? rc : lmdb_record_load(txn, q->table, r->key, out, NULL);
}

int
lmdb_release(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, int64_t not_before,
             StoreBytes reason, StoreRecord *out)
{
    StoreRecord r;
    if (reason.len > STORE_MAX_REASON)
        return STORE_TOOBIG;
    int rc = load_held(txn, q, key, hold, &r);
    r.key = key;
    return rc ? rc : end_hold(txn, q, &r, not_before, reason, false, out);
}

int
lmdb_touch(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, StoreRecord *out)
{
    StoreRecord r;
    int64_t now = lmdb_txn_now(txn);
    int rc = load_held(txn, q, key, hold, &r);
    if (rc)
        return rc;
    r.key = key;
    r.claimed_until = queue_hold_deadline(q, now);
    r.changed = now;
    rc = lmdb_record_store(txn, q->table, q, &r, PUT_UPDATE, NULL);
    return rc || !out ? rc : lmdb_record_load(txn, q->table, key, out, NULL);
}

int
lmdb_retry(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t not_before, StoreRecord *out)
{
    StoreRecord r;
    int rc = lmdb_record_load(txn, q->table, key, &r, NULL);
    if (rc)
        return rc == STORE_TOOBIG ? STORE_NOTFOUND : rc;
    if (r.completed_at)
        return STORE_NOTFOUND; /* finished: CREATE queues it again */
    r.key = key;
    return end_hold(txn, q, &r, not_before, (StoreBytes){NULL, 0}, true, out);
}

int
lmdb_records_retry(StoreTxn *txn, const StoreQueue *q, const StoreBytes *keys,
                   const int64_t *not_befores, size_t n, int (*fn)(void *ctx, const StoreRecord *r),
                   void *ctx, size_t *failed)
{
    int rc = STORE_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        StoreRecord r;
        if ((rc = lmdb_retry(txn, q, keys[i], not_befores[i], &r)) == STORE_OK)
            rc = fn(ctx, &r);
        else if (failed)
            *failed = i;
    }
    return rc;
}

/* What store_release_all collects: the keys of the holds it ends. */
typedef struct HoldList {
    StoreBytes who, instance;
    int64_t now;
    ByteList keys;
} HoldList;

static int
collect_hold(void *ctx, const StoreRecord *r, int64_t wake)
{
    (void)wake;
    HoldList *l = ctx;
    StoreBytes by = l->who.len ? r->consumer : r->instance;
    StoreBytes want = l->who.len ? l->who : l->instance;
    if (held(r, l->now) && by.len == want.len && (!by.len || !memcmp(by.data, want.data, by.len)))
        lmdb_list_add(&l->keys, r->key.data, r->key.len);
    return 0;
}

int
lmdb_release_all(StoreTxn *txn, const StoreQueue *q, StoreBytes who, StoreBytes instance,
                 int64_t not_before, StoreBytes reason, int (*fn)(void *ctx, const StoreRecord *r),
                 void *ctx)
{
    if (reason.len > STORE_MAX_REASON)
        return STORE_TOOBIG;
    HoldList l = {who, instance, lmdb_txn_now(txn), {0}};
    int rc = lmdb_queue_each_waiting(txn, q->table, collect_hold, &l);
    StoreBytes key;
    for (size_t off = 0; rc == STORE_OK && lmdb_list_next(&l.keys, &off, &key);) {
        StoreRecord r, out;
        if ((rc = lmdb_record_load(txn, q->table, key, &r, NULL)))
            break;
        r.key = key;
        if ((rc = end_hold(txn, q, &r, not_before, reason, false, &out)) == STORE_OK && fn)
            rc = fn(ctx, &out);
    }
    free(l.keys.data);
    return rc;
}

int
lmdb_unclaim(StoreTxn *txn, const StoreQueue *q, const StoreRecord *before, int64_t hold,
             bool *given_back)
{
    StoreRecord r;
    *given_back = false;
    int rc = lmdb_record_load(txn, q->table, before->key, &r, NULL);
    if (rc == STORE_NOTFOUND || rc == STORE_TOOBIG)
        return STORE_OK;
    /* Still as that claim left it: its hold, not touched, not rewritten. */
    if (rc || r.hold != hold || r.changed != r.claimed || r.written != before->written ||
        r.attempts != before->attempts + 1)
        return rc;
    StoreRecord back = r;
    back.key = before->key;
    back.attempts = before->attempts;
    back.hold = before->hold;
    back.claimed_until = before->claimed_until;
    back.consumer = before->consumer;
    back.instance = before->instance;
    back.since = before->since;
    back.changed = before->changed;
    back.claimed = before->claimed;
    back.errors = before->errors;
    int64_t extra[CNT_N] = {[CNT_CLAIMS] = -1, [CNT_LAPSES] = -queue_claim_lapses(before)};
    if ((rc = lmdb_record_store(txn, q->table, q, &back, PUT_UPDATE, extra)) == STORE_OK)
        *given_back = true;
    return rc;
}

int
lmdb_record_rerun(StoreTxn *txn, const StoreQueue *q, StoreBytes key)
{
    StoreRecord r;
    int rc = lmdb_record_load(txn, q->table, key, &r, NULL);
    if (rc)
        return rc == STORE_TOOBIG ? STORE_NOTFOUND : rc;
    if (!held(&r, lmdb_txn_now(txn)))
        return STORE_CONFLICT;
    if (r.rerun)
        return STORE_OK;
    r.key = key;
    r.rerun = true;
    return lmdb_record_store(txn, q->table, q, &r, PUT_UPDATE, NULL);
}

/* store_queue_refile's walk: the records' keys, to refile after it. */
static int
collect_key(void *ctx, const StoreRecord *r)
{
    lmdb_list_add(ctx, r->key.data, r->key.len);
    return 0;
}

/* Removes done record "r" of queue "q", whose KEEP was dropped, and
 * counts it. */
static int
done_drop(StoreTxn *txn, const StoreQueue *q, const StoreRecord *r)
{
    int64_t delta[CNT_N] = {0};
    int rc = lmdb_done_remove(txn, q->table, r->completed_at, r->key.data, r->key.len, delta);
    return rc ? rc : lmdb_counts_add(txn, q->table, delta);
}

int
lmdb_queue_refile(StoreTxn *txn, const StoreQueue *q,
                  int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx)
{
    ByteList keys = {0};
    StoreBytes key;
    int rc = lmdb_queue_unfile_all(txn, q->table);
    if (rc == STORE_OK)
        rc = lmdb_record_each(txn, q->table, (StoreBytes){NULL, 0}, collect_key, &keys);
    for (size_t off = 0; rc == STORE_OK && lmdb_list_next(&keys, &off, &key);) {
        StoreRecord r;
        StoreFiling f;
        if ((rc = lmdb_record_load(txn, q->table, key, &r, NULL)))
            break;
        if (r.completed_at && q->keep_ns == 0) {
            rc = done_drop(txn, q, &r);
            continue;
        }
        if (file) {
            if ((rc = file(ctx, &r, &f)))
                break;
            r.order = f.order;
            r.not_before = f.not_before;
            r.group = f.group;
        }
        rc = lmdb_record_store(txn, q->table, q, &r, PUT_UPDATE, NULL);
    }
    free(keys.data);
    return rc;
}

/* ---- identities ---- */

int
lmdb_identity_next(StoreTxn *txn, uint32_t table, size_t n, int64_t *out)
{
    int64_t next;
    int rc = lmdb_meta_get_i64(txn, table, META_NEXT_ID, &next);
    if (rc)
        return rc;
    size_t drawn = 0;
    for (; drawn < n && next != NEXT_ID_EXHAUSTED; drawn++) {
        out[drawn] = next < 1 ? 1 : next;
        next = out[drawn] == INT64_MAX ? NEXT_ID_EXHAUSTED : out[drawn] + 1;
    }
    if (drawn < n)
        return STORE_EXHAUSTED;
    return lmdb_meta_put_i64(txn, table, META_NEXT_ID, next);
}

int
lmdb_identity_note(StoreTxn *txn, uint32_t table, int64_t id)
{
    int64_t next;
    int rc = lmdb_meta_get_i64(txn, table, META_NEXT_ID, &next);
    if (rc || next == NEXT_ID_EXHAUSTED || id < next)
        return rc;
    return lmdb_meta_put_i64(txn, table, META_NEXT_ID,
                             id == INT64_MAX ? NEXT_ID_EXHAUSTED : id + 1);
}

/* ---- DEDUPLICATE windows ---- */

/* Builds the meta name "prefix"["first" when >= 0]["key"] into "out". */
static StoreBytes
dedup_name(unsigned char *out, const char *prefix, int64_t first, StoreBytes key)
{
    size_t n = strlen(prefix);
    memcpy(out, prefix, n);
    if (first >= 0) {
        be_put64(out + n, (uint64_t)first);
        n += 8;
    }
    lmdb_copy(out + n, key.data, key.len);
    return (StoreBytes){out, n + key.len};
}

/* Deletes up to DEDUP_PRUNE entries of "table" first seen before "limit". */
static int
dedup_prune(StoreTxn *txn, uint32_t table, int64_t limit)
{
    KeyBuf k;
    size_t plen = strlen(DEDUP_TIME_PREFIX);
    lmdb_key_set_table(&k, table);
    k.data[k.len++] = 0x01; /* the caller's meta namespace (lmdb_catalog.c) */
    lmdb_key_append(&k, DEDUP_TIME_PREFIX, plen);
    size_t head = k.len;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn->txn, txn->st->meta, &cur);
    if (rc)
        return lmdb_status_of(rc);
    for (int i = 0; i < DEDUP_PRUNE; i++) {
        MDB_val kv = {.mv_size = head, .mv_data = k.data}, v;
        if ((rc = mdb_cursor_get(cur, &kv, &v, MDB_SET_RANGE)))
            break;
        const unsigned char *p = kv.mv_data;
        if (kv.mv_size < head + 8 || memcmp(p, k.data, head) != 0 ||
            (int64_t)be_get64(p + head) >= limit)
            break;
        unsigned char name[META_NAME_MAX];
        StoreBytes key = {p + head + 8, kv.mv_size - head - 8};
        StoreBytes first = dedup_name(name, DEDUP_PREFIX, -1, key);
        int64_t seen = 0;
        StoreBytes sv;
        if (lmdb_meta_get(txn, table, first, &sv) == STORE_OK && sv.len == 8)
            seen = (int64_t)be_get64(sv.data);
        if (seen == (int64_t)be_get64(p + head) && (rc = lmdb_meta_del(txn, table, first)))
            break;
        if ((rc = lmdb_cursor_del(txn->st, cur, txn->st->meta, 0)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(rc);
}

int
lmdb_dedup_check(StoreTxn *txn, uint32_t table, StoreBytes key, int64_t window_ns, bool *repeat)
{
    int64_t now = lmdb_txn_now(txn), first = 0;
    unsigned char name[META_NAME_MAX], tname[META_NAME_MAX];
    *repeat = false;
    if (key.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    int rc = dedup_prune(txn, table, now - window_ns);
    StoreBytes n = dedup_name(name, DEDUP_PREFIX, -1, key), v;
    if (rc == STORE_OK && (rc = lmdb_meta_get(txn, table, n, &v)) == STORE_OK && v.len == 8)
        first = (int64_t)be_get64(v.data);
    if (rc && rc != STORE_NOTFOUND)
        return rc;
    if (first && now - first < window_ns) {
        *repeat = true;
        return STORE_OK;
    }
    unsigned char b[8];
    be_put64(b, (uint64_t)now);
    if (first)
        lmdb_meta_del(txn, table, dedup_name(tname, DEDUP_TIME_PREFIX, first, key));
    if ((rc = lmdb_meta_put(txn, table, n, (StoreBytes){b, 8})))
        return rc;
    return lmdb_meta_put(txn, table, dedup_name(tname, DEDUP_TIME_PREFIX, now, key),
                         (StoreBytes){NULL, 0});
}
