/* lmdb_records.c — a table's records: their keys [T][key], their stored
 * values (a header with the slot, then the caller's bytes), and
 * store_record_*, which keep the queue indexes and the counts as records
 * come and go.  See "Layout" in lmdb_internal.h.
 */
#include "lmdb_internal.h"

int
lmdb_record_head_parse(MDB_val v, RecordHead *h)
{
    const unsigned char *p = v.mv_data;
    if (v.mv_size < RECORD_HEAD_LEN)
        return STORE_CORRUPT;
    h->seq = be_get64(p);
    h->wake = (int64_t)be_get64(p + 8);
    h->order_len = be_get16(p + 16);
    if (h->order_len > STORE_MAX_KEY || v.mv_size < RECORD_HEAD_LEN + h->order_len)
        return STORE_CORRUPT;
    h->order = p + RECORD_HEAD_LEN;
    h->value = h->order + h->order_len;
    h->value_len = v.mv_size - RECORD_HEAD_LEN - h->order_len;
    return STORE_OK;
}

void
lmdb_record_head_write(unsigned char *p, uint64_t seq, int64_t wake, size_t order_len)
{
    be_put64(p, seq);
    be_put64(p + 8, (uint64_t)wake);
    be_put16(p + 16, (uint16_t)order_len);
}

int
lmdb_put_copy(Store *st, MDB_txn *txn, MDB_dbi dbi, MDB_val key, const void *data, size_t len)
{
    void *copy = lmdb_alloc(len);
    lmdb_copy(copy, data, len);
    MDB_val v = {.mv_size = len, .mv_data = copy};
    int rc = lmdb_put(st, txn, dbi, &key, &v);
    free(copy);
    return lmdb_status_of(rc);
}

int
lmdb_table_cursor(StoreTxn *txn, MDB_dbi dbi, uint32_t table, MDB_cursor **cur, KeyBuf *prefix)
{
    int rc = mdb_cursor_open(txn->txn, dbi, cur);
    if (rc)
        return lmdb_status_of(rc);
    lmdb_key_set_table(prefix, table);
    return STORE_OK;
}

bool
lmdb_table_next(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op, uint32_t table, int *rc)
{
    int got = lmdb_cursor_in_table(cur, k, v, op, table);
    *rc = got == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(got);
    return got == MDB_SUCCESS;
}

int
lmdb_table_walk(StoreTxn *txn, MDB_dbi dbi, uint32_t table, MDB_val start,
                int (*fn)(void *ctx, MDB_val k, MDB_val v), void *ctx)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn->txn, dbi, &cur);
    if (rc)
        return lmdb_status_of(rc);
    MDB_val k = start, v;
    for (MDB_cursor_op op = MDB_SET_RANGE; lmdb_table_next(cur, &k, &v, op, table, &rc);
         op = MDB_NEXT)
        if ((rc = fn(ctx, k, v)))
            break;
    mdb_cursor_close(cur);
    return rc;
}

/* Builds the records key [T][key]; STORE_TOOBIG when key is too long. */
static int
record_key_build(KeyBuf *k, uint32_t table, StoreBytes key)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    lmdb_key_set_table(k, table);
    lmdb_key_append(k, key.data, key.len);
    return STORE_OK;
}

void
lmdb_placement(const StoreQueue *q, const StoreRecord *r, int64_t now, int64_t *wake, int *kind,
               int64_t *then)
{
    *kind = WAIT_DELAY;
    *then = 0;
    *wake = WAKE_NO_SLOT;
    if (!q)
        return;
    QueuePlace p = queue_place(q, r, now);
    switch (p.state) {
    case QUEUE_HELD:
        *wake = p.wake;
        *kind = WAIT_HOLD;
        *then = p.next == QUEUE_RETIRED ? THEN_RETIRE : p.next == QUEUE_DELAYED ? p.next_wake : 0;
        break;
    case QUEUE_DELAYED: *wake = p.wake; break;
    case QUEUE_READY: *wake = 0; break;
    case QUEUE_RETIRED:
    case QUEUE_DONE: break;
    }
}

/* Reads a length-prefixed string of "width" (1, 2 or 4) bytes at "*p"
 * within "end" into "out", moving "*p" past it; false when it overruns. */
static bool
column_bytes(const unsigned char **p, const unsigned char *end, int width, StoreBytes *out)
{
    if (end - *p < width)
        return false;
    size_t n = (size_t)be_get(*p, width);
    *p += width;
    if ((size_t)(end - *p) < n)
        return false;
    *out = (StoreBytes){*p, n};
    *p += n;
    return true;
}

/* Reads what version 5 of the columns added at "*p" within "end" into
 * "r", moving "*p" past it; false when it overruns. */
static bool
column_tail(const unsigned char **p, const unsigned char *end, StoreRecord *r)
{
    if (end - *p < COLUMNS_TAIL)
        return false;
    r->completed_at = (int64_t)be_get64(*p);
    r->rerun = (*p)[8] != 0;
    *p += COLUMNS_TAIL;
    return true;
}

int
lmdb_record_parse(MDB_val k, const RecordHead *h, StoreRecord *r)
{
    const unsigned char *p = h->value, *end = h->value + h->value_len;
    memset(r, 0, sizeof *r);
    if (h->value_len < COLUMNS_FIXED_3 || p[0] < 3 || p[0] > COLUMNS_VERSION)
        return STORE_CORRUPT;
    int version = p[0];
    int64_t *cols[] = {&r->since,    &r->written, &r->changed,       &r->claimed,
                       &r->attempts, &r->hold,    &r->claimed_until, &r->not_before};
    p++;
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++, p += 8)
        *cols[i] = (int64_t)be_get64(p);
    if (!column_bytes(&p, end, 1, &r->consumer) || !column_bytes(&p, end, 1, &r->instance) ||
        !column_bytes(&p, end, 2, &r->group) ||
        (version >= 4 && !column_bytes(&p, end, 4, &r->errors)) ||
        (version >= 5 && !column_tail(&p, end, r)))
        return STORE_CORRUPT;
    r->key = (StoreBytes){(const unsigned char *)k.mv_data + 4, k.mv_size - 4};
    r->value = (StoreBytes){p, (size_t)(end - p)};
    r->seq = h->seq;
    r->order = (StoreBytes){h->order, h->order_len};
    return STORE_OK;
}

/* Appends "b" with a length prefix of "width" bytes at "*p". */
static void
column_put_bytes(unsigned char **p, int width, StoreBytes b)
{
    be_put(*p, b.len, width);
    *p += width;
    lmdb_copy(*p, b.data, b.len);
    *p += b.len;
}

/* Encodes the columns of "r" and its value at "p" (room: COLUMNS_FIXED
 * plus the strings plus the value). */
static void
columns_write(unsigned char *p, const StoreRecord *r)
{
    const int64_t cols[] = {r->since,    r->written, r->changed,       r->claimed,
                            r->attempts, r->hold,    r->claimed_until, r->not_before};
    *p++ = COLUMNS_VERSION;
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++, p += 8)
        be_put64(p, (uint64_t)cols[i]);
    column_put_bytes(&p, 1, r->consumer);
    column_put_bytes(&p, 1, r->instance);
    column_put_bytes(&p, 2, r->group);
    column_put_bytes(&p, 4, r->errors);
    be_put64(p, (uint64_t)r->completed_at);
    p[8] = r->rerun;
    lmdb_copy(p + COLUMNS_TAIL, r->value.data, r->value.len);
}

/* What a write learns of the record it replaces. */
typedef struct OldRecord {
    RecordHead h;
    int64_t completed_at; /* 0: not done */
    StoreBytes group;     /* its group, when the queue groups it (see lmdb_grouped) */
    unsigned char group_buf[STORE_MAX_KEY];
} OldRecord;

/* Reads the record stored under records key "kv" as "v" into "o": its
 * header, and — parsing its columns only for a record in no index (only
 * such a one may be done) or when queue "q" groups records — whether it
 * is done and its group. */
static int
old_record_read(MDB_val kv, MDB_val v, const StoreQueue *q, OldRecord *o)
{
    StoreRecord r;
    o->completed_at = 0;
    o->group = (StoreBytes){o->group_buf, 0};
    int rc = lmdb_record_head_parse(v, &o->h);
    if (rc || (o->h.wake != WAKE_NO_SLOT && !(q && q->per_group > 0)))
        return rc;
    if ((rc = lmdb_record_parse(kv, &o->h, &r)))
        return rc;
    o->completed_at = r.completed_at;
    if (lmdb_grouped(q, r.group)) {
        o->group.len = r.group.len;
        memcpy(o->group_buf, r.group.data, r.group.len);
    }
    return STORE_OK;
}

/* For write "put" of "r" over the record found under "rk" (stored as
 * "v"): reads it into "old", refuses to create over it (STORE_EXISTS)
 * unless it is a done record of queue "q", takes it out of its claim
 * index and — when "r" is not done at the same instant — of the done
 * index, noting both in "delta", and gives the arrival sequence the write
 * keeps or takes into "*seq". */
static int
old_record_take(StoreTxn *txn, uint32_t table, const StoreQueue *q, const KeyBuf *rk, MDB_val v,
                RecordPut put, const StoreRecord *r, OldRecord *old, uint64_t *seq,
                int64_t delta[CNT_N])
{
    KeyBuf key = *rk;
    const unsigned char *rkey = key.data + 4;
    int was, rc = old_record_read(lmdb_key_val(&key), v, q, old);
    if (rc)
        return rc;
    if (put == PUT_CREATE && !(q && old->completed_at))
        return STORE_EXISTS;
    *seq = old->h.seq;
    rc = lmdb_queue_index_remove(txn, table, rkey, key.len - 4, &old->h, old->group, &was);
    lmdb_counts_note(delta, was, -1);
    if (rc == STORE_OK && old->completed_at && old->completed_at != r->completed_at) {
        delta[CNT_DONE]--;
        rc = lmdb_done_entry(txn, table, old->completed_at, rkey, key.len - 4, false);
    }
    return rc || put == PUT_UPDATE ? rc : lmdb_table_seq_next(txn, table, seq);
}

int
lmdb_record_store(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r,
                  RecordPut put, const int64_t *extra)
{
    KeyBuf rk;
    OldRecord old = {.completed_at = 0};
    uint64_t seq = 0;
    StoreBytes order = !q ? (StoreBytes){NULL, 0} : r->order.len ? r->order : r->key;
    int64_t delta[CNT_N] = {0}, wake, then;
    int kind;
    int rc = record_key_build(&rk, table, r->key);
    if (rc)
        return rc;
    if (order.len > STORE_MAX_KEY || r->consumer.len > 255 || r->instance.len > 255 ||
        r->group.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    lmdb_placement(q, r, lmdb_txn_now(txn), &wake, &kind, &then);
    /* Copy every caller byte first: they may point into LMDB memory. */
    size_t cols = COLUMNS_FIXED + r->consumer.len + r->instance.len + r->group.len + r->errors.len;
    size_t len = RECORD_HEAD_LEN + order.len + cols + r->value.len;
    unsigned char *buf = lmdb_alloc(len);
    lmdb_copy(buf + RECORD_HEAD_LEN, order.data, order.len);
    columns_write(buf + RECORD_HEAD_LEN + order.len, r);

    MDB_val kv = lmdb_key_val(&rk), v;
    /* The group the record joins (see lmdb_grouped), among its columns. */
    const unsigned char *group_at =
        buf + len - r->value.len - COLUMNS_TAIL - r->errors.len - 4 - r->group.len;
    StoreBytes group =
        lmdb_grouped(q, r->group) ? (StoreBytes){group_at, r->group.len} : (StoreBytes){NULL, 0};
    rc = mdb_get(txn->txn, txn->st->records, &kv, &v);
    if (rc == 0) {
        rc = old_record_take(txn, table, q, &rk, v, put, r, &old, &seq, delta);
    } else if (rc == MDB_NOTFOUND && put == PUT_CREATE) {
        rc = lmdb_table_seq_next(txn, table, &seq);
        delta[CNT_RECORDS] = 1;
    } else {
        rc = rc == MDB_NOTFOUND ? STORE_NOTFOUND : lmdb_status_of(rc);
    }
    if (rc)
        goto done;
    lmdb_record_head_write(buf, seq, wake, order.len);
    v = (MDB_val){.mv_size = len, .mv_data = buf};
    if ((rc = lmdb_status_of(lmdb_put(txn->st, txn->txn, txn->st->records, &kv, &v))))
        goto done;
    int cls = -1;
    rc = lmdb_queue_index_add(txn, table, rk.data + 4, rk.len - 4, buf + RECORD_HEAD_LEN, order.len,
                              seq, wake, kind, then, group, &cls);
    lmdb_counts_note(delta, cls, 1);
    if (rc == STORE_OK && r->completed_at && r->completed_at != old.completed_at) {
        delta[CNT_DONE]++;
        rc = lmdb_done_entry(txn, table, r->completed_at, rk.data + 4, rk.len - 4, true);
    }
    if (rc == STORE_OK && old.group.len &&
        (old.group.len != group.len || memcmp(old.group.data, group.data, group.len)))
        rc = lmdb_group_settle(txn, table, q, old.group, delta);
    if (rc == STORE_OK && group.len)
        rc = lmdb_group_settle(txn, table, q, group, delta);
    for (int i = 0; extra && i < CNT_N; i++)
        delta[i] += extra[i];
    if (rc == STORE_OK)
        rc = lmdb_counts_add(txn, table, delta);
done:
    free(buf);
    return rc;
}

int
lmdb_record_rewrite(StoreTxn *txn, uint32_t table, const RecordHead *h, const StoreRecord *r)
{
    KeyBuf rk;
    int rc = record_key_build(&rk, table, r->key);
    if (rc)
        return rc;
    if (r->consumer.len > 255 || r->instance.len > 255 || r->group.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    size_t cols = COLUMNS_FIXED + r->consumer.len + r->instance.len + r->group.len + r->errors.len;
    size_t len = RECORD_HEAD_LEN + h->order_len + cols + r->value.len;
    unsigned char *buf = lmdb_alloc(len);
    lmdb_record_head_write(buf, h->seq, h->wake, h->order_len);
    lmdb_copy(buf + RECORD_HEAD_LEN, h->order, h->order_len);
    columns_write(buf + RECORD_HEAD_LEN + h->order_len, r);
    MDB_val kv = lmdb_key_val(&rk), v = {.mv_size = len, .mv_data = buf};
    rc = lmdb_status_of(lmdb_put(txn->st, txn->txn, txn->st->records, &kv, &v));
    free(buf);
    return rc;
}

int
lmdb_record_find(StoreTxn *txn, uint32_t table, StoreBytes key, KeyBuf *rk, RecordHead *h)
{
    int rc = record_key_build(rk, table, key);
    if (rc)
        return rc;
    MDB_val kv = lmdb_key_val(rk), v;
    if ((rc = mdb_get(txn->txn, txn->st->records, &kv, &v)))
        return lmdb_status_of(rc);
    return lmdb_record_head_parse(v, h);
}

int
lmdb_record_load(StoreTxn *txn, uint32_t table, StoreBytes key, StoreRecord *r, RecordHead *h)
{
    KeyBuf rk;
    RecordHead own = {0};
    RecordHead *head = h ? h : &own;
    int rc = lmdb_record_find(txn, table, key, &rk, head);
    if (rc || (rc = lmdb_record_parse(lmdb_key_val(&rk), head, r)))
        return rc;
    r->key = key; /* the caller's bytes outlive "rk" */
    return STORE_OK;
}

int
lmdb_record_get(StoreTxn *txn, uint32_t table, StoreBytes key, StoreRecord *out)
{
    return lmdb_record_load(txn, table, key, out, NULL);
}

int
lmdb_record_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    int64_t now = lmdb_txn_now(txn);
    StoreRecord n = {.key = r->key,
                     .value = r->value,
                     .since = now,
                     .written = now,
                     .changed = now,
                     .order = r->order,
                     .not_before = r->not_before,
                     .group = r->group};
    int rc = lmdb_record_store(txn, table, q, &n, PUT_CREATE, NULL);
    /* Reaped after it, as "r" may point into LMDB memory. */
    return rc || !q ? rc : lmdb_done_reap(txn, q);
}

int
lmdb_records_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *rs,
                    size_t n, size_t *failed)
{
    int rc = STORE_OK;
    for (size_t i = 0; i < n && rc == STORE_OK; i++)
        if ((rc = lmdb_record_create(txn, table, q, &rs[i])) == STORE_EXISTS && failed)
            *failed = i;
    return rc;
}

int
lmdb_records_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreBytes *keys,
                    const int64_t *holds, size_t n, size_t *failed)
{
    int rc = STORE_OK;
    for (size_t i = 0; i < n && rc == STORE_OK; i++)
        if ((rc = lmdb_record_delete(txn, table, q, keys[i], holds[i])) && failed)
            *failed = i;
    return rc;
}

int
lmdb_record_update(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r)
{
    StoreRecord n;
    int rc = lmdb_record_load(txn, table, r->key, &n, NULL);
    if (rc)
        return rc == STORE_TOOBIG ? STORE_NOTFOUND : rc;
    n.key = r->key;
    n.value = r->value;
    n.order = r->order;
    n.not_before = r->not_before;
    n.group = r->group;
    n.written = lmdb_txn_now(txn);
    return lmdb_record_store(txn, table, q, &n, PUT_UPDATE, NULL);
}

/* Ends the hold of "r", if it has one: hold, claimed_until, consumer and
 * instance cleared. */
static void
hold_clear(StoreRecord *r)
{
    r->hold = r->claimed_until = 0;
    r->consumer = r->instance = (StoreBytes){NULL, 0};
}

/* The finish of record "r" of queue "q" marked to run again: stored as
 * new work (store_record_delete), counted as a delete. */
static int
finish_rerun(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreRecord *r)
{
    int64_t extra[CNT_N] = {[CNT_DELETES] = 1};
    hold_clear(r);
    r->attempts = 0;
    r->errors = (StoreBytes){NULL, 0};
    r->rerun = false;
    r->completed_at = 0;
    r->since = r->changed = lmdb_txn_now(txn);
    return lmdb_record_store(txn, table, q, r, PUT_RENEW, extra);
}

/* The finish of record "r" (not done) of queue "q", which keeps: stored
 * done now, out of every claim index, counted as a delete. */
static int
finish_keep(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreRecord *r)
{
    int64_t extra[CNT_N] = {[CNT_DELETES] = 1};
    hold_clear(r);
    r->completed_at = r->changed = lmdb_txn_now(txn);
    return lmdb_record_store(txn, table, q, r, PUT_UPDATE, extra);
}

/* Removes record "rk" (header "h", parsed into "r") with its index
 * entries, counted as a delete of queue "q" (NULL: a collection's). */
static int
record_remove(StoreTxn *txn, uint32_t table, const StoreQueue *q, KeyBuf *rk, const RecordHead *h,
              const StoreRecord *r)
{
    int64_t delta[CNT_N] = {[CNT_DELETES] = q ? 1 : 0};
    int was, rc;
    if (r->completed_at) {
        rc = lmdb_done_remove(txn, table, r->completed_at, rk->data + 4, rk->len - 4, delta);
        return rc ? rc : lmdb_counts_add(txn, table, delta);
    }
    MDB_val kv = lmdb_key_val(rk);
    unsigned char group_buf[STORE_MAX_KEY];
    StoreBytes group = {group_buf, lmdb_grouped(q, r->group) ? r->group.len : 0};
    lmdb_copy(group_buf, r->group.data, group.len);
    delta[CNT_RECORDS] = -1;
    if ((rc = lmdb_queue_index_remove(txn, table, rk->data + 4, rk->len - 4, h, group, &was)))
        return rc;
    lmdb_counts_note(delta, was, -1);
    if ((rc = lmdb_status_of(lmdb_del(txn->st, txn->txn, txn->st->records, &kv, NULL))))
        return rc;
    if (group.len && (rc = lmdb_group_settle(txn, table, q, group, delta)))
        return rc;
    return lmdb_counts_add(txn, table, delta);
}

int
lmdb_record_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key, int64_t hold)
{
    KeyBuf rk;
    RecordHead h;
    StoreRecord r;
    int rc = lmdb_record_find(txn, table, key, &rk, &h);
    if (rc || (rc = lmdb_record_parse(lmdb_key_val(&rk), &h, &r)))
        return rc;
    if (hold > 0 && (r.hold != hold || r.claimed_until <= lmdb_txn_now(txn)))
        return STORE_CONFLICT;
    if (q && r.rerun)
        rc = finish_rerun(txn, table, q, &r);
    else if (q && q->keep_ns > 0 && !r.completed_at)
        rc = finish_keep(txn, table, q, &r);
    else
        rc = record_remove(txn, table, q, &rk, &h, &r);
    return rc || !q ? rc : lmdb_done_reap(txn, q);
}

/* store_record_each's caller's function, for lmdb_table_walk. */
typedef struct RecordWalk {
    int (*fn)(void *ctx, const StoreRecord *r);
    void *ctx;
} RecordWalk;

static int
each_record(void *ctx, MDB_val k, MDB_val v)
{
    const RecordWalk *w = ctx;
    RecordHead h;
    StoreRecord r;
    int rc = lmdb_record_head_parse(v, &h);
    if (rc || (rc = lmdb_record_parse(k, &h, &r)))
        return rc;
    return w->fn(w->ctx, &r);
}

int
lmdb_record_each(StoreTxn *txn, uint32_t table, StoreBytes from,
                 int (*fn)(void *ctx, const StoreRecord *r), void *ctx)
{
    KeyBuf start;
    int rc = record_key_build(&start, table, from);
    if (rc)
        return rc;
    RecordWalk w = {fn, ctx};
    return lmdb_table_walk(txn, txn->st->records, table, lmdb_key_val(&start), each_record, &w);
}
