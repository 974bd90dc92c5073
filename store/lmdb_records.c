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
lmdb_put_copy(MDB_txn *txn, MDB_dbi dbi, MDB_val key, const void *data, size_t len)
{
    void *copy = lmdb_alloc(len);
    lmdb_copy(copy, data, len);
    MDB_val v = {.mv_size = len, .mv_data = copy};
    int rc = mdb_put(txn, dbi, &key, &v, 0);
    free(copy);
    return lmdb_status_of(rc);
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
    for (MDB_cursor_op op = MDB_SET_RANGE;; op = MDB_NEXT) {
        rc = lmdb_cursor_in_table(cur, &k, &v, op, table);
        if (rc == MDB_NOTFOUND) {
            rc = STORE_OK;
            break;
        }
        if (rc) {
            rc = lmdb_status_of(rc);
            break;
        }
        if ((rc = fn(ctx, k, v)))
            break;
    }
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

int
store_record_put(StoreTxn *txn, uint32_t table, StoreBytes key, StoreBytes value,
                 const StoreSlot *slot)
{
    KeyBuf rk;
    RecordHead old;
    uint64_t seq = 0;
    size_t order_len = slot ? slot->order_len : 0;
    int64_t wake = !slot ? WAKE_NO_SLOT : slot->wake_ns > 0 ? slot->wake_ns : 0;
    int kind = slot && slot->held ? WAIT_HOLD : WAIT_DELAY;
    int64_t then = slot && slot->held ? slot->then_ns : 0;
    int64_t delta[CNT_N] = {0};
    int was;
    int rc = record_key_build(&rk, table, key);
    if (rc)
        return rc;
    if (order_len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    /* Copy every caller byte first: they may point into LMDB memory. */
    size_t len = RECORD_HEAD_LEN + order_len + value.len;
    unsigned char *buf = lmdb_alloc(len);
    if (slot)
        lmdb_copy(buf + RECORD_HEAD_LEN, slot->order_key, order_len);
    lmdb_copy(buf + RECORD_HEAD_LEN + order_len, value.data, value.len);

    MDB_val kv = lmdb_key_val(&rk), v;
    rc = mdb_get(txn->txn, txn->st->records, &kv, &v);
    if (rc == 0) {
        if ((rc = lmdb_record_head_parse(v, &old)))
            goto done;
        seq = old.seq;
        rc = lmdb_queue_index_remove(txn, table, rk.data + 4, rk.len - 4, &old, &was);
        lmdb_counts_note(delta, was, -1);
    } else if (rc == MDB_NOTFOUND) {
        rc = lmdb_table_seq_next(txn, table, &seq);
        delta[CNT_RECORDS] = 1;
    } else {
        rc = lmdb_status_of(rc);
    }
    if (rc)
        goto done;
    lmdb_record_head_write(buf, seq, wake, order_len);
    v = (MDB_val){.mv_size = len, .mv_data = buf};
    if ((rc = lmdb_status_of(mdb_put(txn->txn, txn->st->records, &kv, &v, 0))))
        goto done;
    rc = lmdb_queue_index_add(txn, table, rk.data + 4, rk.len - 4, buf + RECORD_HEAD_LEN,
                              order_len, seq, wake, kind, then);
    lmdb_counts_note(delta, lmdb_slot_class(wake, kind), 1);
    if (rc == STORE_OK)
        rc = lmdb_counts_add(txn, table, delta);
done:
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
store_record_get(StoreTxn *txn, uint32_t table, StoreBytes key, StoreBytes *value_out,
                 uint64_t *seq_out)
{
    KeyBuf rk;
    RecordHead h;
    int rc = lmdb_record_find(txn, table, key, &rk, &h);
    if (rc)
        return rc;
    if (value_out)
        *value_out = (StoreBytes){h.value, h.value_len};
    if (seq_out)
        *seq_out = h.seq;
    return STORE_OK;
}

int
store_record_delete(StoreTxn *txn, uint32_t table, StoreBytes key)
{
    KeyBuf rk;
    RecordHead h;
    int rc = lmdb_record_find(txn, table, key, &rk, &h);
    if (rc)
        return rc;
    MDB_val kv = lmdb_key_val(&rk);
    int64_t delta[CNT_N] = {[CNT_RECORDS] = -1};
    int was;
    if ((rc = lmdb_queue_index_remove(txn, table, rk.data + 4, rk.len - 4, &h, &was)))
        return rc;
    lmdb_counts_note(delta, was, -1);
    if ((rc = lmdb_status_of(mdb_del(txn->txn, txn->st->records, &kv, NULL))))
        return rc;
    return lmdb_counts_add(txn, table, delta);
}

/* store_record_each's caller's function, for lmdb_table_walk. */
typedef struct RecordWalk {
    int (*fn)(void *ctx, StoreBytes key, StoreBytes value);
    void *ctx;
} RecordWalk;

static int
each_record(void *ctx, MDB_val k, MDB_val v)
{
    RecordWalk *w = ctx;
    RecordHead h;
    int rc = lmdb_record_head_parse(v, &h);
    if (rc)
        return rc;
    StoreBytes kb = {(const unsigned char *)k.mv_data + 4, k.mv_size - 4};
    return w->fn(w->ctx, kb, (StoreBytes){h.value, h.value_len});
}

int
store_record_each(StoreTxn *txn, uint32_t table, StoreBytes from,
                  int (*fn)(void *ctx, StoreBytes key, StoreBytes value), void *ctx)
{
    KeyBuf start;
    int rc = record_key_build(&start, table, from);
    if (rc)
        return rc;
    RecordWalk w = {fn, ctx};
    return lmdb_table_walk(txn, txn->st->records, table, lmdb_key_val(&start), each_record, &w);
}
