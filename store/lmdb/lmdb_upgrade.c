/* lmdb_upgrade.c — bringing a store of format 2 to format 3, where a
 * queue record's engine columns (attempts, its hold, its times) live
 * beside the caller's value instead of inside it, the queue counters live
 * in the counts, and DEDUPLICATE entries have a time index to be pruned
 * by.  Run once, by the first process that opens the store for writing,
 * in the transaction that marks the new format: all or nothing.  See
 * "Layout" in lmdb_internal.h. */
#include "lmdb_internal.h"

/* The counters format 2 kept as meta values, in CNT_CLAIMS… order. */
static const char *const old_counters[] = {"count:claims", "count:releases", "count:lapses",
                                           "count:deletes"};

static int
collect_key(void *ctx, MDB_val k, MDB_val v)
{
    (void)v;
    lmdb_list_add(ctx, k.mv_data, k.mv_size);
    return 0;
}

/* Gives every record of table "id" its columns. */
static int
upgrade_records(StoreTxn *t, uint32_t id, StoreBytes def)
{
    ByteList keys = {0};
    KeyBuf prefix;
    lmdb_key_set_table(&prefix, id);
    int rc = lmdb_table_walk(t, t->st->records, id, lmdb_key_val(&prefix), collect_key, &keys);
    StoreBytes item;
    for (size_t off = 0; rc == STORE_OK && lmdb_list_next(&keys, &off, &item);) {
        MDB_val k = {.mv_size = item.len, .mv_data = (void *)item.data}, v;
        RecordHead h;
        if ((rc = lmdb_status_of(mdb_get(t->txn, t->st->records, &k, &v))) ||
            (rc = lmdb_record_head_parse(v, &h)))
            break;
        StoreRecord r = {0};
        StoreBytes old = {h.value, h.value_len};
        if (t->st->upgrade && t->st->upgrade(t->st->upgrade_ctx, def, old, &r)) {
            rc = STORE_CORRUPT;
            break;
        }
        if (!t->st->upgrade)
            r.value = old;
        r.key = (StoreBytes){(const unsigned char *)k.mv_data + 4, k.mv_size - 4};
        rc = lmdb_record_rewrite(t, id, &h, &r);
    }
    free(keys.data);
    return rc;
}

/* Moves the counters of table "id" from its meta values into its counts
 * (an entry of format 2, without them, reads as zero counters). */
static int
upgrade_counters(StoreTxn *t, uint32_t id)
{
    int64_t delta[CNT_N] = {0};
    for (int i = 0; i < 4; i++) {
        StoreBytes name = {old_counters[i], strlen(old_counters[i])};
        int rc = lmdb_meta_get_i64(t, id, old_counters[i], &delta[CNT_CLAIMS + i]);
        if (rc || (rc = lmdb_meta_del(t, id, name)))
            return rc;
    }
    return lmdb_counts_add(t, id, delta);
}

/* Gives the DEDUPLICATE entries of table "id" their time index. */
static int
upgrade_dedup(StoreTxn *t, uint32_t id)
{
    ByteList entries = {0};
    KeyBuf start;
    lmdb_key_set_table(&start, id);
    start.data[start.len++] = 0x01;
    lmdb_key_append(&start, "dedup:", 6);
    size_t head = start.len;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(t->txn, t->st->meta, &cur);
    if (rc)
        return lmdb_status_of(rc);
    MDB_val k = lmdb_key_val(&start), v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size < head || memcmp(k.mv_data, start.data, head) != 0)
            break;
        if (v.mv_size != 8)
            continue;
        unsigned char name[META_NAME_MAX];
        size_t klen = k.mv_size - head;
        memcpy(name, "dedupt:", 7);
        memcpy(name + 7, v.mv_data, 8);
        memcpy(name + 15, (const unsigned char *)k.mv_data + head, klen);
        lmdb_list_add(&entries, name, 15 + klen);
    }
    mdb_cursor_close(cur);
    rc = rc == MDB_NOTFOUND || rc == 0 ? STORE_OK : lmdb_status_of(rc);
    StoreBytes name;
    for (size_t off = 0; rc == STORE_OK && lmdb_list_next(&entries, &off, &name);)
        rc = lmdb_meta_put(t, id, name, (StoreBytes){NULL, 0});
    free(entries.data);
    return rc;
}

static int
upgrade_table(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)name;
    StoreTxn *t = ctx;
    int rc = upgrade_records(t, id, def);
    if (rc == STORE_OK)
        rc = upgrade_counters(t, id);
    return rc ? rc : upgrade_dedup(t, id);
}

int
lmdb_upgrade_columns(StoreTxn *t)
{
    return lmdb_table_each(t, upgrade_table, t);
}
