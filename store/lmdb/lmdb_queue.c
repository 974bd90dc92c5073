/* lmdb_queue.c — the queue indexes (ready, deadline, done) and the
 * per-table counts kept beside them, moving waiting records on when their
 * instant comes, reaping the done records whose KEEP is over, and
 * store_queue_*.  See "Layout" in lmdb_internal.h.
 */
#include "lmdb_internal.h"

/* ---- the counts ---- */

void
lmdb_counts_key_build(KeyBuf *k, uint32_t table)
{
    k->len = 0;
    lmdb_key_append(k, "records", 7);
    be_put32(k->data + k->len, table);
    k->len += 4;
}

/* The counts of "table" as stored, without what "t" keeps unwritten. */
static int
counts_stored(StoreTxn *t, uint32_t table, uint64_t n[CNT_N])
{
    KeyBuf k;
    lmdb_counts_key_build(&k, table);
    MDB_val kv = lmdb_key_val(&k), v;
    int rc = mdb_get(t->txn, t->st->main, &kv, &v);
    memset(n, 0, sizeof(uint64_t) * CNT_N);
    if (rc == MDB_NOTFOUND)
        return STORE_OK;
    if (rc)
        return lmdb_status_of(rc);
    if (v.mv_size != 8 * CNT_N && v.mv_size != 8 * CNT_N_UNKEPT &&
        v.mv_size != 8 * CNT_N_UNGROUPED && v.mv_size != 8 * CNT_N_FORMAT2)
        return STORE_CORRUPT;
    for (int i = 0; i < (int)(v.mv_size / 8); i++)
        n[i] = be_get64((const unsigned char *)v.mv_data + 8 * i);
    return STORE_OK;
}

/* The place "t" keeps the unwritten counts of "table" in, or NULL. */
static int64_t *
counts_pending(StoreTxn *t, uint32_t table)
{
    for (int i = 0; i < COUNTS_PENDING; i++)
        if (t->pending[i].table == table)
            return t->pending[i].delta;
    return NULL;
}

int
lmdb_counts_get(StoreTxn *t, uint32_t table, uint64_t n[CNT_N])
{
    int rc = counts_stored(t, table, n);
    const int64_t *delta = counts_pending(t, table);
    for (int i = 0; delta && i < CNT_N; i++)
        n[i] += (uint64_t)delta[i];
    return rc;
}

void
lmdb_counts_forget(StoreTxn *t, uint32_t table)
{
    for (int i = 0; i < COUNTS_PENDING; i++)
        if (t->pending[i].table == table)
            memset(&t->pending[i], 0, sizeof t->pending[i]);
}

/* Stores "n" as the counts of "table": without the last counts while they
 * are 0 — the done count, then the group counts — in the shorter forms
 * of the builds before KEEP and AT MOST … PER.  What "t" kept unwritten
 * of them is forgotten: "n" is the whole of them. */
static int
counts_put(StoreTxn *t, uint32_t table, const uint64_t n[CNT_N])
{
    lmdb_counts_forget(t, table);
    unsigned char buf[8 * CNT_N];
    int len = n[CNT_DONE]                            ? CNT_N
              : n[CNT_GROUPED] || n[CNT_GROUPS_FULL] ? CNT_N_UNKEPT
                                                     : CNT_N_UNGROUPED;
    for (int i = 0; i < len; i++)
        be_put64(buf + 8 * i, n[i]);
    KeyBuf k;
    lmdb_counts_key_build(&k, table);
    MDB_val kv = lmdb_key_val(&k), v = {.mv_size = 8 * (size_t)len, .mv_data = buf};
    return lmdb_status_of(lmdb_put(t->st, t->txn, t->st->main, &kv, &v));
}

int
lmdb_counts_flush(StoreTxn *t)
{
    int rc = STORE_OK;
    for (int i = 0; i < COUNTS_PENDING && !rc; i++) {
        uint32_t table = t->pending[i].table;
        uint64_t n[CNT_N];
        if (!table)
            continue;
        if (!(rc = lmdb_counts_get(t, table, n)))
            rc = counts_put(t, table, n);
    }
    return rc;
}

int
lmdb_counts_add(StoreTxn *t, uint32_t table, const int64_t delta[CNT_N])
{
    bool any = false;
    for (int i = 0; i < CNT_N; i++)
        any = any || delta[i] != 0;
    if (!any)
        return STORE_OK;
    int64_t *pending = counts_pending(t, table);
    if (!pending) {
        int rc = (pending = counts_pending(t, 0)) ? STORE_OK : lmdb_counts_flush(t);
        if (rc)
            return rc;
        if (!pending)
            pending = counts_pending(t, 0);
        /* a place's table is set as its first delta comes */
        for (int i = 0; i < COUNTS_PENDING; i++)
            if (t->pending[i].delta == pending)
                t->pending[i].table = table;
    }
    for (int i = 0; i < CNT_N; i++)
        pending[i] += delta[i];
    return STORE_OK;
}

void
lmdb_counts_note(int64_t delta[CNT_N], int cls, int by)
{
    if (cls >= 0)
        delta[cls] += by;
}

int
lmdb_slot_class(int64_t wake, int kind)
{
    if (wake == WAKE_NO_SLOT)
        return -1;
    if (wake == 0)
        return CNT_READY;
    return kind == WAIT_HOLD ? CNT_HELD : kind == WAIT_DELAY ? CNT_DELAYED : CNT_UNSORTED;
}

/* The kind of a deadline entry from its value (0: unsorted, format 1). */
static int
wait_kind(MDB_val v)
{
    const unsigned char *p = v.mv_data;
    if (v.mv_size >= 1 && p[0] == WAIT_DELAY)
        return WAIT_DELAY;
    if (v.mv_size >= WAIT_VALUE_LEN && p[0] == WAIT_HOLD)
        return WAIT_HOLD;
    return 0;
}

/* What a deadline entry of value "v" becomes once its instant has come at
 * "now": its new wake — 0 ready, > 0 delayed until then, WAKE_NO_SLOT
 * retired. */
static int64_t
wait_next(MDB_val v, int64_t now)
{
    QueuePlace p = {.state = QUEUE_DELAYED, .next = QUEUE_READY};
    if (wait_kind(v) == WAIT_HOLD) {
        int64_t then = (int64_t)be_get64((const unsigned char *)v.mv_data + 1);
        p.state = QUEUE_HELD;
        p.next = then == THEN_RETIRE ? QUEUE_RETIRED : then ? QUEUE_DELAYED : QUEUE_READY;
        p.next_wake = then > 0 ? then : 0;
    }
    p = queue_woken(&p, now); /* (the entry's wake has come: p.wake 0 is past) */
    return p.state == QUEUE_RETIRED ? WAKE_NO_SLOT : p.state == QUEUE_DELAYED ? p.wake : 0;
}

/* ---- the queue indexes ---- */

/* Builds the ready entry of a record: key [T][order], data [seq][rkey]. */
static void
ready_entry_build(KeyBuf *k, KeyBuf *d, uint32_t table, const void *order, size_t order_len,
                  uint64_t seq, const void *rkey, size_t rkey_len)
{
    lmdb_key_set_table(k, table);
    lmdb_key_append(k, order, order_len);
    d->len = 0;
    lmdb_key_append_u64(d, seq);
    lmdb_key_append(d, rkey, rkey_len);
}

/* Builds the deadline or done key of a record: [T][instant][rkey]. */
static void
instant_key_build(KeyBuf *k, uint32_t table, int64_t wake, const void *rkey, size_t rkey_len)
{
    lmdb_key_set_table(k, table);
    lmdb_key_append_u64(k, (uint64_t)wake);
    lmdb_key_append(k, rkey, rkey_len);
}

int
lmdb_ready_entry(StoreTxn *t, uint32_t table, const void *order, size_t order_len, uint64_t seq,
                 const void *rkey, size_t rkey_len, bool put)
{
    KeyBuf k, d;
    ready_entry_build(&k, &d, table, order, order_len, seq, rkey, rkey_len);
    MDB_val kv = lmdb_key_val(&k), dv = lmdb_key_val(&d);
    return put ? lmdb_put(t->st, t->txn, t->st->ready, &kv, &dv)
               : lmdb_del(t->st, t->txn, t->st->ready, &kv, &dv);
}

int
lmdb_queue_index_add(StoreTxn *t, uint32_t table, const void *rkey, size_t rkey_len,
                     const void *order, size_t order_len, uint64_t seq, int64_t wake, int kind,
                     int64_t then, StoreBytes group, int *cls)
{
    KeyBuf k, d;
    MDB_val kv, dv = {0, NULL};
    MDB_dbi dbi;
    unsigned char wait[WAIT_VALUE_LEN];
    int rc;
    *cls = lmdb_slot_class(wake, kind);
    if (wake == WAKE_NO_SLOT)
        return STORE_OK;
    if (wake == 0 && group.len) {
        *cls = CNT_GROUPED;
        return lmdb_group_file(t, table, group, order, order_len, seq, rkey, rkey_len);
    }
    if (kind == WAIT_HOLD && group.len && (rc = lmdb_group_held_add(t, table, group, 1)))
        return rc;
    if (wake == 0) {
        ready_entry_build(&k, &d, table, order, order_len, seq, rkey, rkey_len);
        dv = lmdb_key_val(&d);
        dbi = t->st->ready;
    } else {
        instant_key_build(&k, table, wake, rkey, rkey_len);
        dbi = t->st->deadline;
        wait[0] = (unsigned char)kind;
        be_put64(wait + 1, (uint64_t)then);
        dv = (MDB_val){.mv_size = kind == WAIT_HOLD ? WAIT_VALUE_LEN : 1, .mv_data = wait};
    }
    kv = lmdb_key_val(&k);
    return lmdb_status_of(lmdb_put(t->st, t->txn, dbi, &kv, &dv));
}

int
lmdb_queue_index_remove(StoreTxn *t, uint32_t table, const void *rkey, size_t rkey_len,
                        const RecordHead *h, StoreBytes group, int *cls)
{
    KeyBuf k, d;
    MDB_val kv, dv;
    int rc;
    *cls = -1;
    if (h->wake == WAKE_NO_SLOT)
        return STORE_OK;
    if (h->wake == 0 && group.len)
        return lmdb_group_unfile(t, table, group, h, rkey, rkey_len, cls);
    if (h->wake == 0) {
        ready_entry_build(&k, &d, table, h->order, h->order_len, h->seq, rkey, rkey_len);
        kv = lmdb_key_val(&k);
        dv = lmdb_key_val(&d);
        rc = lmdb_del(t->st, t->txn, t->st->ready, &kv, &dv);
        if (rc == 0)
            *cls = CNT_READY;
    } else {
        instant_key_build(&k, table, h->wake, rkey, rkey_len);
        kv = lmdb_key_val(&k);
        rc = mdb_get(t->txn, t->st->deadline, &kv, &dv);
        if (rc == 0) {
            int kind = wait_kind(dv);
            rc = lmdb_del(t->st, t->txn, t->st->deadline, &kv, NULL);
            if (rc == 0)
                *cls = lmdb_slot_class(h->wake, kind);
            if (rc == 0 && kind == WAIT_HOLD && group.len)
                return lmdb_group_held_add(t, table, group, -1);
        }
    }
    return rc == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(rc);
}

/* Files the waiting record of queue "q" under [T][rkey] anew: its
 * header's wake becomes "wake" (0: ready, > 0: delayed until then,
 * WAKE_NO_SLOT: in no index) and it gets that index entry, noted in
 * "delta"; a hold's end ("was_hold") is its group's.  The deadline entry is
 * the caller's to delete.  A deadline entry without a record is ignored. */
static int
queue_record_refile(StoreTxn *t, const StoreQueue *q, const KeyBuf *rk, int64_t wake, bool was_hold,
                    int64_t delta[CNT_N])
{
    uint32_t table = q->table;
    KeyBuf key = *rk;
    MDB_val kv = lmdb_key_val(&key), v;
    RecordHead h;
    StoreRecord r;
    unsigned char group_buf[STORE_MAX_KEY];
    StoreBytes group = {group_buf, 0};
    int rc = mdb_get(t->txn, t->st->records, &kv, &v);
    if (rc == MDB_NOTFOUND)
        return STORE_OK;
    if (rc)
        return lmdb_status_of(rc);
    if ((rc = lmdb_record_head_parse(v, &h)))
        return rc;
    if (q->per_group > 0) {
        if ((rc = lmdb_record_parse(kv, &h, &r)))
            return rc;
        group.len = r.group.len;
        lmdb_copy(group_buf, r.group.data, r.group.len);
    }
    if (was_hold && group.len && (rc = lmdb_group_held_add(t, table, group, -1)))
        return rc;
    size_t len = v.mv_size;
    unsigned char *copy = lmdb_alloc(len);
    memcpy(copy, v.mv_data, len);
    lmdb_record_head_write(copy, h.seq, wake, h.order_len);
    MDB_val nv = {.mv_size = len, .mv_data = copy};
    rc = lmdb_status_of(lmdb_put(t->st, t->txn, t->st->records, &kv, &nv));
    int cls;
    if (rc == STORE_OK)
        rc = lmdb_queue_index_add(t, table, key.data + 4, key.len - 4, copy + RECORD_HEAD_LEN,
                                  h.order_len, h.seq, wake, WAIT_DELAY, 0, group, &cls);
    if (rc == STORE_OK)
        lmdb_counts_note(delta, cls, 1);
    free(copy);
    if (rc == STORE_OK && group.len)
        rc = lmdb_group_settle(t, table, q, group, delta);
    return rc;
}

/* Seeks "cur", on the deadline or the done index, to the first entry of
 * "table": true with its instant in "*at", its record's records key
 * [T][key] copied into "rk" and its value in "*v"; false past the table's
 * last entry ("*rc" STORE_OK), for a malformed key ("*rc" STORE_CORRUPT)
 * or when LMDB failed ("*rc" its status). */
static bool
instant_first(MDB_cursor *cur, uint32_t table, int64_t *at, KeyBuf *rk, MDB_val *v, int *rc)
{
    KeyBuf prefix;
    lmdb_key_set_table(&prefix, table);
    MDB_val k = lmdb_key_val(&prefix);
    if (!lmdb_table_next(cur, &k, v, MDB_SET_RANGE, table, rc))
        return false;
    if (k.mv_size < 12 || k.mv_size > 12 + STORE_MAX_KEY) {
        *rc = STORE_CORRUPT;
        return false;
    }
    const unsigned char *p = k.mv_data;
    *at = (int64_t)be_get64(p + 4);
    lmdb_key_set_table(rk, table);
    lmdb_key_append(rk, p + 12, k.mv_size - 12);
    return true;
}

/* Moves every waiting record of queue "q" whose wake is <= now where its
 * entry says (see wait_next), at O(log n) per record moved, and keeps the
 * counts; stops at the first entry still in the future. */
static int
queue_drain(StoreTxn *t, const StoreQueue *q, int64_t now)
{
    uint32_t table = q->table;
    MDB_cursor *cur;
    KeyBuf prefix, rk;
    int rc = lmdb_table_cursor(t, t->st->deadline, table, &cur, &prefix);
    if (rc)
        return rc;
    int64_t delta[CNT_N] = {0}, at;
    MDB_val v;
    while (instant_first(cur, table, &at, &rk, &v, &rc) && at <= now) {
        int kind = wait_kind(v);
        int was = lmdb_slot_class(at, kind);
        int64_t wake = wait_next(v, now);
        if ((rc = lmdb_cursor_del(t->st, cur, t->st->deadline, 0))) {
            rc = lmdb_status_of(rc);
            break;
        }
        lmdb_counts_note(delta, was, -1);
        if ((rc = queue_record_refile(t, q, &rk, wake, kind == WAIT_HOLD, delta)))
            break;
    }
    mdb_cursor_close(cur);
    return rc ? rc : lmdb_counts_add(t, table, delta);
}

/* What lmdb_table_recount adds up. */
typedef struct Recount {
    StoreTxn *t;
    uint32_t table;
    uint64_t n[CNT_N];
} Recount;

static int
recount_one(void *ctx, MDB_val k, MDB_val v)
{
    Recount *r = ctx;
    RecordHead h;
    KeyBuf dk;
    MDB_val dv;
    int rc = lmdb_record_head_parse(v, &h);
    if (rc)
        return rc;
    r->n[CNT_RECORDS]++;
    int kind = 0;
    if (h.wake > 0) {
        instant_key_build(&dk, r->table, h.wake, (const unsigned char *)k.mv_data + 4,
                          k.mv_size - 4);
        MDB_val dkv = lmdb_key_val(&dk);
        if (mdb_get(r->t->txn, r->t->st->deadline, &dkv, &dv) != 0)
            return 0;
        kind = wait_kind(dv);
    }
    int cls = lmdb_slot_class(h.wake, kind);
    if (cls >= 0)
        r->n[cls]++;
    return 0;
}

/* A done entry: a done record (the records of stores before KEEP, whose
 * columns may not be parsed yet, are never done). */
static int
recount_done(void *ctx, MDB_val k, MDB_val v)
{
    (void)k, (void)v;
    ((Recount *)ctx)->n[CNT_DONE]++;
    return 0;
}

int
lmdb_table_recount(StoreTxn *t, uint32_t table)
{
    Recount r = {t, table, {0}};
    KeyBuf prefix;
    lmdb_key_set_table(&prefix, table);
    MDB_val start = lmdb_key_val(&prefix);
    int rc = lmdb_table_walk(t, t->st->records, table, start, recount_one, &r);
    if (rc == STORE_OK)
        rc = lmdb_table_walk(t, t->st->done_index, table, start, recount_done, &r);
    return rc ? rc : counts_put(t, table, r.n);
}

/* ---- the queue primitives ---- */

/* Where a ready entry stands in claim order: its order key and arrival
 * sequence, as the ready index sorts them. */
typedef struct ClaimPlace {
    const unsigned char *order;
    size_t order_len;
    uint64_t seq;
} ClaimPlace;

/* True when "a" comes before "b" in claim order: memcmp of the order keys,
 * the shorter first on a tie, then arrival. */
bool
lmdb_claim_place_before(const unsigned char *a, size_t a_len, uint64_t a_seq,
                        const unsigned char *b, size_t b_len, uint64_t b_seq)
{
    size_t n = a_len < b_len ? a_len : b_len;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c < 0;
    if (a_len != b_len)
        return a_len < b_len;
    return a_seq < b_seq;
}

static bool
claim_place_before(const ClaimPlace *a, const ClaimPlace *b)
{
    return lmdb_claim_place_before(a->order, a->order_len, a->seq, b->order, b->order_len, b->seq);
}

/* The first ready entry of "table" into "out" (its place and record key);
 * STORE_NOTFOUND when the ready index has none. */
static int
ready_first(StoreTxn *t, uint32_t table, ClaimPlace *place, StoreBytes *key)
{
    MDB_cursor *cur;
    KeyBuf prefix;
    int rc = lmdb_table_cursor(t, t->st->ready, table, &cur, &prefix);
    if (rc)
        return rc;
    MDB_val k = lmdb_key_val(&prefix), v;
    rc = lmdb_cursor_in_table(cur, &k, &v, MDB_SET_RANGE, table);
    mdb_cursor_close(cur);
    if (rc)
        return lmdb_status_of(rc);
    if (v.mv_size < 8 || v.mv_size > 8 + STORE_MAX_KEY)
        return STORE_CORRUPT;
    *place = (ClaimPlace){(const unsigned char *)k.mv_data + 4, k.mv_size - 4, be_get64(v.mv_data)};
    *key = (StoreBytes){(const unsigned char *)v.mv_data + 8, v.mv_size - 8};
    return STORE_OK;
}

int
lmdb_queue_head(StoreTxn *txn, const StoreQueue *q, int64_t now, StoreBytes *key_out)
{
    ClaimPlace place;
    int rc = queue_drain(txn, q, now);
    return rc ? rc : ready_first(txn, q->table, &place, key_out);
}

/* Makes record "key" of "table", which a claim at this instant would move
 * into the ready index, the head in "out" when it comes before the head
 * found so far ("*best"). */
static int
head_consider(StoreTxn *t, uint32_t table, StoreBytes key, ClaimPlace *best, StoreQueueCounts *out)
{
    KeyBuf rk;
    RecordHead h;
    int rc = lmdb_record_find(t, table, key, &rk, &h);
    if (rc == STORE_NOTFOUND)
        return STORE_OK;
    if (rc)
        return rc == STORE_TOOBIG ? STORE_CORRUPT : rc;
    ClaimPlace place = {h.order, h.order_len, h.seq};
    if (!out->has_head || claim_place_before(&place, best)) {
        *best = place;
        out->has_head = true;
        out->head_key = key;
    }
    return STORE_OK;
}

/* deadline_each's caller's function, for lmdb_table_walk. */
typedef struct DeadlineWalk {
    int (*fn)(void *ctx, StoreBytes key, int64_t wake, MDB_val v);
    void *ctx;
} DeadlineWalk;

static int
each_deadline(void *ctx, MDB_val k, MDB_val v)
{
    DeadlineWalk *w = ctx;
    if (k.mv_size < 12)
        return STORE_CORRUPT;
    const unsigned char *p = k.mv_data;
    StoreBytes key = {p + 12, k.mv_size - 12};
    return w->fn(w->ctx, key, (int64_t)be_get64(p + 4), v);
}

/* Calls "fn" with each waiting entry of "table" in the deadline index, in
 * wake order — its record key, its wake instant and its value — until "fn"
 * returns non-zero, which is returned.  STORE_CORRUPT for a malformed
 * entry. */
static int
deadline_each(StoreTxn *txn, uint32_t table,
              int (*fn)(void *ctx, StoreBytes key, int64_t wake, MDB_val v), void *ctx)
{
    KeyBuf prefix;
    lmdb_key_set_table(&prefix, table);
    DeadlineWalk w = {fn, ctx};
    return lmdb_table_walk(txn, txn->st->deadline, table, lmdb_key_val(&prefix), each_deadline, &w);
}

/* What store_queue_counts adds up over the waiting entries whose instant
 * has come: where each goes now, and the best of those that are ready. */
typedef struct DueWalk {
    StoreTxn *txn;
    uint32_t table;
    int64_t now;
    int64_t d[CNT_N];
    ClaimPlace best;
    StoreQueueCounts *out;
} DueWalk;

/* count_due's "the rest wake later": not a StoreStatus. */
#define DUE_DONE 1000

static int
count_due(void *ctx, StoreBytes key, int64_t wake, MDB_val v)
{
    DueWalk *w = ctx;
    if (wake > w->now) {
        w->out->next_wake = wake;
        return DUE_DONE;
    }
    int was = lmdb_slot_class(wake, wait_kind(v));
    if (was == CNT_UNSORTED)
        return 0;
    int64_t next = wait_next(v, w->now); /* retired: idle, the rest */
    w->d[was]--;
    if (next != WAKE_NO_SLOT)
        w->d[next > 0 ? CNT_DELAYED : CNT_READY]++;
    return next == 0 ? head_consider(w->txn, w->table, key, &w->best, w->out) : 0;
}

int
lmdb_queue_counts(StoreTxn *txn, uint32_t table, StoreQueueCounts *out)
{
    uint64_t n[CNT_N];
    memset(out, 0, sizeof *out);
    DueWalk w = {txn, table, lmdb_txn_now(txn), {0}, {NULL, 0, 0}, out};
    out->next_wake = INT64_MAX;
    int rc = lmdb_counts_get(txn, table, n);
    if (rc)
        return rc;
    rc = ready_first(txn, table, &w.best, &out->head_key);
    if (rc && rc != STORE_NOTFOUND)
        return rc;
    out->has_head = rc == STORE_OK;
    /* The waiting entries whose instant has come count where they go. */
    if ((rc = deadline_each(txn, table, count_due, &w)) && rc != DUE_DONE)
        return rc;
    int64_t *d = w.d;
    out->records = n[CNT_RECORDS];
    out->ready = n[CNT_READY] + (uint64_t)d[CNT_READY];
    out->held = n[CNT_HELD] + (uint64_t)d[CNT_HELD];
    out->delayed = n[CNT_DELAYED] + (uint64_t)d[CNT_DELAYED];
    out->unsorted = n[CNT_UNSORTED];
    out->claims = n[CNT_CLAIMS];
    out->releases = n[CNT_RELEASES];
    out->lapses = n[CNT_LAPSES];
    out->deletes = n[CNT_DELETES];
    out->grouped = n[CNT_GROUPED];
    out->groups_full = n[CNT_GROUPS_FULL];
    out->done = n[CNT_DONE];
    uint64_t filed =
        out->ready + out->held + out->delayed + out->unsorted + out->grouped + out->done;
    if (filed > out->records)
        return STORE_CORRUPT;
    out->idle = out->records - filed;
    return STORE_OK;
}

/* store_queue_each_waiting's caller's function, for deadline_each. */
typedef struct WaitingWalk {
    int (*fn)(void *ctx, const StoreRecord *r, int64_t wake_ns);
    void *ctx;
    StoreTxn *txn;
    uint32_t table;
} WaitingWalk;

static int
each_waiting(void *ctx, StoreBytes key, int64_t wake, MDB_val v)
{
    (void)v;
    WaitingWalk *w = ctx;
    StoreRecord r;
    int rc = lmdb_record_load(w->txn, w->table, key, &r, NULL);
    if (rc == STORE_NOTFOUND)
        return STORE_OK; /* an entry without its record: nothing waits */
    return rc ? rc : w->fn(w->ctx, &r, wake);
}

int
lmdb_queue_each_waiting(StoreTxn *txn, uint32_t table,
                        int (*fn)(void *ctx, const StoreRecord *r, int64_t wake_ns), void *ctx)
{
    WaitingWalk w = {fn, ctx, txn, table};
    return deadline_each(txn, table, each_waiting, &w);
}

int
lmdb_queue_unfile_all(StoreTxn *t, uint32_t table)
{
    uint64_t n[CNT_N];
    int rc = lmdb_counts_get(t, table, n);
    if (rc || (rc = lmdb_delete_prefixed(t, t->st->ready, table, NULL, 0)) ||
        (rc = lmdb_delete_prefixed(t, t->st->deadline, table, NULL, 0)) ||
        (rc = lmdb_groups_clear(t, table)))
        return rc;
    static const int filed[] = {CNT_READY,    CNT_HELD,    CNT_DELAYED,
                                CNT_UNSORTED, CNT_GROUPED, CNT_GROUPS_FULL};
    for (size_t i = 0; i < sizeof filed / sizeof *filed; i++)
        n[filed[i]] = 0;
    return counts_put(t, table, n);
}

/* ---- the done index (KEEP) ---- */

int
lmdb_done_entry(StoreTxn *t, uint32_t table, int64_t completed_at, const void *rkey,
                size_t rkey_len, bool put)
{
    static const unsigned char none[1];
    KeyBuf k;
    instant_key_build(&k, table, completed_at, rkey, rkey_len);
    MDB_val kv = lmdb_key_val(&k), v = {.mv_size = 0, .mv_data = (void *)none};
    int rc = put ? lmdb_put(t->st, t->txn, t->st->done_index, &kv, &v)
                 : lmdb_del(t->st, t->txn, t->st->done_index, &kv, NULL);
    return rc == MDB_NOTFOUND && !put ? STORE_OK : lmdb_status_of(rc);
}

int
lmdb_done_remove(StoreTxn *t, uint32_t table, int64_t completed_at, const void *rkey,
                 size_t rkey_len, int64_t delta[CNT_N])
{
    KeyBuf rk;
    RecordHead h;
    StoreRecord r;
    int rc = lmdb_record_find(t, table, (StoreBytes){rkey, rkey_len}, &rk, &h);
    if (rc == STORE_OK && (rc = lmdb_record_parse(lmdb_key_val(&rk), &h, &r)) == STORE_OK &&
        r.completed_at == completed_at) {
        MDB_val kv = lmdb_key_val(&rk);
        if ((rc = lmdb_status_of(lmdb_del(t->st, t->txn, t->st->records, &kv, NULL))))
            return rc;
        delta[CNT_RECORDS]--;
        delta[CNT_DONE]--;
    }
    if (rc && rc != STORE_NOTFOUND)
        return rc;
    /* "rkey" may point into LMDB memory: "rk" holds a copy. */
    return lmdb_done_entry(t, table, completed_at, rk.data + 4, rk.len - 4, false);
}

int
lmdb_done_reap(StoreTxn *t, const StoreQueue *q)
{
    uint32_t table = q->table;
    int64_t now = lmdb_txn_now(t), delta[CNT_N] = {0};
    MDB_cursor *cur;
    MDB_val v;
    KeyBuf prefix, rk;
    StoreRecord done = {.completed_at = 0};
    MDB_stat ms;
    /* A store with no done record at all (the transaction knows how many
     * entries each database has) pays no seek. */
    int rc = mdb_stat(t->txn, t->st->done_index, &ms);
    if (rc || ms.ms_entries == 0)
        return lmdb_status_of(rc);
    if ((rc = lmdb_table_cursor(t, t->st->done_index, table, &cur, &prefix)))
        return rc;
    for (int i = 0;
         i < STORE_REAP_MAX && instant_first(cur, table, &done.completed_at, &rk, &v, &rc) &&
         queue_done_expired(q, &done, now);
         i++)
        if ((rc = lmdb_done_remove(t, table, done.completed_at, rk.data + 4, rk.len - 4, delta)))
            break;
    mdb_cursor_close(cur);
    return rc ? rc : lmdb_counts_add(t, table, delta);
}
