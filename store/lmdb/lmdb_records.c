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

int
lmdb_record_parse(MDB_val k, const RecordHead *h, StoreRecord *r)
{
    const unsigned char *p = h->value, *end = h->value + h->value_len;
    memset(r, 0, sizeof *r);
    if (h->value_len < COLUMNS_FIXED_3 || (p[0] != COLUMNS_VERSION && p[0] != 3))
        return STORE_CORRUPT;
    bool has_errors = p[0] == COLUMNS_VERSION;
    int64_t *cols[] = {&r->since,    &r->written, &r->changed,       &r->claimed,
                       &r->attempts, &r->hold,    &r->claimed_until, &r->not_before};
    p++;
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++, p += 8)
        *cols[i] = (int64_t)be_get64(p);
    if (!column_bytes(&p, end, 1, &r->consumer) || !column_bytes(&p, end, 1, &r->instance) ||
        !column_bytes(&p, end, 2, &r->group) ||
        (has_errors && !column_bytes(&p, end, 4, &r->errors)))
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
    lmdb_copy(p, r->value.data, r->value.len);
}

int
lmdb_record_store(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r,
                  bool create, const int64_t *extra)
{
    KeyBuf rk;
    RecordHead old;
    uint64_t seq = 0;
    StoreBytes order = !q ? (StoreBytes){NULL, 0} : r->order.len ? r->order : r->key;
    int64_t delta[CNT_N] = {0}, wake, then;
    int kind, was;
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
    /* The groups the record leaves and joins (see lmdb_grouped). */
    unsigned char old_group_buf[STORE_MAX_KEY];
    StoreBytes old_group = {old_group_buf, 0};
    const unsigned char *group_at = buf + len - r->value.len - r->errors.len - 4 - r->group.len;
    StoreBytes group =
        lmdb_grouped(q, r->group) ? (StoreBytes){group_at, r->group.len} : (StoreBytes){NULL, 0};
    rc = mdb_get(txn->txn, txn->st->records, &kv, &v);
    if (rc == 0 && create) {
        rc = STORE_EXISTS;
    } else if (rc == 0) {
        if ((rc = lmdb_record_head_parse(v, &old)))
            goto done;
        seq = old.seq;
        StoreRecord was_r;
        if (q && q->per_group > 0) {
            if ((rc = lmdb_record_parse(kv, &old, &was_r)))
                goto done;
            if (lmdb_grouped(q, was_r.group)) {
                old_group.len = was_r.group.len;
                memcpy(old_group_buf, was_r.group.data, was_r.group.len);
            }
        }
        rc = lmdb_queue_index_remove(txn, table, rk.data + 4, rk.len - 4, &old, old_group, &was);
        lmdb_counts_note(delta, was, -1);
    } else if (rc == MDB_NOTFOUND && create) {
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
    if (rc == STORE_OK && old_group.len &&
        (old_group.len != group.len || memcmp(old_group.data, group.data, group.len)))
        rc = lmdb_group_settle(txn, table, q, old_group, delta);
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
    return lmdb_record_store(txn, table, q, &n, true, NULL);
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
    return lmdb_record_store(txn, table, q, &n, false, NULL);
}

int
lmdb_record_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key, int64_t hold)
{
    KeyBuf rk;
    RecordHead h;
    StoreRecord r;
    int rc = lmdb_record_find(txn, table, key, &rk, &h);
    if (rc)
        return rc;
    if (hold > 0) {
        if ((rc = lmdb_record_parse(lmdb_key_val(&rk), &h, &r)))
            return rc;
        if (r.hold != hold || r.claimed_until <= lmdb_txn_now(txn))
            return STORE_CONFLICT;
    }
    MDB_val kv = lmdb_key_val(&rk);
    int64_t delta[CNT_N] = {[CNT_RECORDS] = -1, [CNT_DELETES] = q ? 1 : 0};
    int was;
    unsigned char group_buf[STORE_MAX_KEY];
    StoreBytes group = {group_buf, 0};
    if (q && q->per_group > 0) {
        if ((rc = lmdb_record_parse(lmdb_key_val(&rk), &h, &r)))
            return rc;
        if (lmdb_grouped(q, r.group)) {
            group.len = r.group.len;
            memcpy(group_buf, r.group.data, r.group.len);
        }
    }
    if ((rc = lmdb_queue_index_remove(txn, table, rk.data + 4, rk.len - 4, &h, group, &was)))
        return rc;
    lmdb_counts_note(delta, was, -1);
    if ((rc = lmdb_status_of(lmdb_del(txn->st, txn->txn, txn->st->records, &kv, NULL))))
        return rc;
    if (group.len && (rc = lmdb_group_settle(txn, table, q, group, delta)))
        return rc;
    return lmdb_counts_add(txn, table, delta);
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
