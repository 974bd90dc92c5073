/* lmdb_catalog.c — the catalog (table name -> id and definition) and the
 * per-table meta values, among them each table's arrival sequence.  See
 * "Layout" in lmdb_internal.h.
 */
#include "lmdb_internal.h"

#define META_INTERNAL 0x00
#define META_CALLER 0x01

int
lmdb_delete_prefixed(StoreTxn *t, MDB_dbi dbi, uint32_t table, const void *sub, size_t n)
{
    MDB_cursor *cur;
    KeyBuf prefix;
    int rc = lmdb_table_cursor(t, dbi, table, &cur, &prefix);
    if (rc)
        return rc;
    lmdb_key_append(&prefix, sub, n);
    for (;;) {
        MDB_val k = lmdb_key_val(&prefix), v;
        if ((rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)))
            break;
        if (k.mv_size < prefix.len || memcmp(k.mv_data, prefix.data, prefix.len)) {
            rc = MDB_NOTFOUND;
            break;
        }
        if ((rc = lmdb_cursor_del(t->st, cur, dbi, MDB_NODUPDATA)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(rc);
}

/* Builds the meta key [T][sub][name]; the caller has checked the length. */
static void
meta_key_build(KeyBuf *k, uint32_t table, unsigned char sub, const void *name, size_t len)
{
    lmdb_key_set_table(k, table);
    k->data[k->len++] = sub;
    lmdb_key_append(k, name, len);
}

int
lmdb_table_seq_next(StoreTxn *t, uint32_t table, uint64_t *seq)
{
    KeyBuf k;
    meta_key_build(&k, table, META_INTERNAL, "seq", 3);
    MDB_val kv = lmdb_key_val(&k), v;
    uint64_t last = 0;
    int rc = mdb_get(t->txn, t->st->meta, &kv, &v);
    if (rc == 0 && v.mv_size == 8)
        last = be_get64(v.mv_data);
    else if (rc == 0)
        return STORE_CORRUPT;
    else if (rc != MDB_NOTFOUND)
        return lmdb_status_of(rc);
    unsigned char buf[8];
    be_put64(buf, last + 1);
    v = (MDB_val){.mv_size = 8, .mv_data = buf};
    rc = lmdb_put(t->st, t->txn, t->st->meta, &kv, &v);
    if (rc)
        return lmdb_status_of(rc);
    *seq = last + 1;
    return STORE_OK;
}

/* ---- the catalog ---- */

/* Builds the catalog key of "name": STORE_TOOBIG when it is longer than
 * STORE_MAX_KEY, STORE_NOTFOUND when empty (LMDB keys are never empty, so
 * no table has the empty name). */
static int
catalog_key_build(KeyBuf *k, const char *name)
{
    size_t len = strlen(name);
    if (len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    if (len == 0)
        return STORE_NOTFOUND;
    k->len = 0;
    lmdb_key_append(k, name, len);
    return STORE_OK;
}

/* Writes the catalog entry name → [id][def]. */
static int
catalog_entry_put(StoreTxn *t, KeyBuf *k, uint32_t id, StoreBytes def)
{
    unsigned char *buf = lmdb_alloc(4 + def.len);
    be_put32(buf, id);
    lmdb_copy(buf + 4, def.data, def.len);
    MDB_val kv = lmdb_key_val(k), v = {.mv_size = 4 + def.len, .mv_data = buf};
    int rc = lmdb_put(t->st, t->txn, t->st->catalog, &kv, &v);
    free(buf);
    return lmdb_status_of(rc);
}

int
lmdb_catalog_entry_parse(MDB_val v, uint32_t *id_out, StoreBytes *def_out)
{
    if (v.mv_size < 4)
        return STORE_CORRUPT;
    if (id_out)
        *id_out = be_get32(v.mv_data);
    if (def_out)
        *def_out = (StoreBytes){(const unsigned char *)v.mv_data + 4, v.mv_size - 4};
    return STORE_OK;
}

/* Takes the next table id from sys "next_table_id". */
static int
catalog_id_next(StoreTxn *t, uint32_t *id)
{
    MDB_val k = {13, "next_table_id"}, v;
    int rc = mdb_get(t->txn, t->st->sys, &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? STORE_CORRUPT : lmdb_status_of(rc);
    if (v.mv_size != 4)
        return STORE_CORRUPT;
    uint32_t next = be_get32(v.mv_data);
    if (next == UINT32_MAX)
        return STORE_FULL;
    unsigned char buf[4];
    be_put32(buf, next + 1);
    v = (MDB_val){4, buf};
    if ((rc = lmdb_put(t->st, t->txn, t->st->sys, &k, &v)))
        return lmdb_status_of(rc);
    *id = next;
    return STORE_OK;
}

int
lmdb_table_create(StoreTxn *txn, const char *name, StoreBytes def, uint32_t *id_out)
{
    KeyBuf k;
    uint32_t id = 0;
    int rc = catalog_key_build(&k, name);
    if (rc)
        return STORE_TOOBIG; /* too long, or empty */
    MDB_val kv = lmdb_key_val(&k), v;
    rc = mdb_get(txn->txn, txn->st->catalog, &kv, &v);
    if (rc == 0)
        return STORE_EXISTS;
    if (rc != MDB_NOTFOUND)
        return lmdb_status_of(rc);
    /* def may point into LMDB memory: copy it before the first write. */
    unsigned char *copy = lmdb_alloc(def.len);
    lmdb_copy(copy, def.data, def.len);
    rc = catalog_id_next(txn, &id);
    if (rc == STORE_OK)
        rc = catalog_entry_put(txn, &k, id, (StoreBytes){copy, def.len});
    free(copy);
    if (rc == STORE_OK && id_out)
        *id_out = id;
    return rc;
}

/* Finds table "name" in the catalog: its catalog key into "k", its id and
 * definition into "id_out" and "def_out" (either may be NULL).
 * STORE_NOTFOUND when there is no such table (or "name" is empty),
 * STORE_TOOBIG when "name" is too long. */
static int
catalog_find(StoreTxn *txn, const char *name, KeyBuf *k, uint32_t *id_out, StoreBytes *def_out)
{
    int rc = catalog_key_build(k, name);
    if (rc)
        return rc;
    MDB_val kv = lmdb_key_val(k), v;
    if ((rc = mdb_get(txn->txn, txn->st->catalog, &kv, &v)))
        return lmdb_status_of(rc);
    return lmdb_catalog_entry_parse(v, id_out, def_out);
}

int
lmdb_table_redefine(StoreTxn *txn, const char *name, StoreBytes def)
{
    KeyBuf k;
    uint32_t id;
    int rc = catalog_find(txn, name, &k, &id, NULL);
    return rc ? rc : catalog_entry_put(txn, &k, id, def);
}

int
lmdb_table_get(StoreTxn *txn, const char *name, uint32_t *id_out, StoreBytes *def_out)
{
    KeyBuf k;
    return catalog_find(txn, name, &k, id_out, def_out);
}

int
lmdb_table_each(StoreTxn *txn, int (*fn)(void *ctx, const char *name, uint32_t id, StoreBytes def),
                void *ctx)
{
    MDB_cursor *cur;
    MDB_val k, v;
    char name[STORE_MAX_KEY + 1];
    uint32_t id;
    StoreBytes def;
    int rc = mdb_cursor_open(txn->txn, txn->st->catalog, &cur);
    if (rc)
        return lmdb_status_of(rc);
    for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
        rc = mdb_cursor_get(cur, &k, &v, op);
        if (rc) {
            rc = rc == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(rc);
            break;
        }
        if (k.mv_size > STORE_MAX_KEY) {
            rc = STORE_CORRUPT;
            break;
        }
        if ((rc = lmdb_catalog_entry_parse(v, &id, &def)))
            break;
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = '\0';
        if ((rc = fn(ctx, name, id, def)))
            break;
    }
    mdb_cursor_close(cur);
    return rc;
}

int
lmdb_table_drop(StoreTxn *txn, const char *name)
{
    KeyBuf k;
    uint32_t id;
    int rc = catalog_find(txn, name, &k, &id, NULL);
    if (rc)
        return rc;
    MDB_val kv = lmdb_key_val(&k);
    if ((rc = lmdb_del(txn->st, txn->txn, txn->st->catalog, &kv, NULL)))
        return lmdb_status_of(rc);
    MDB_dbi dbs[] = {txn->st->records,     txn->st->ready, txn->st->deadline,
                     txn->st->group_index, txn->st->meta,  txn->st->done_index};
    for (size_t i = 0; i < sizeof dbs / sizeof *dbs; i++)
        if ((rc = lmdb_delete_prefixed(txn, dbs[i], id, NULL, 0)))
            return rc;
    KeyBuf ck;
    lmdb_counts_key_build(&ck, id);
    lmdb_counts_forget(txn, id);
    kv = lmdb_key_val(&ck);
    rc = lmdb_del(txn->st, txn->txn, txn->st->main, &kv, NULL);
    return rc == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(rc);
}

int
lmdb_table_rename(StoreTxn *txn, const char *from, const char *to)
{
    KeyBuf fk, tk;
    int rc = catalog_key_build(&fk, from);
    if (rc)
        return rc;
    if (catalog_key_build(&tk, to))
        return STORE_TOOBIG; /* too long, or empty */
    MDB_val fkv = lmdb_key_val(&fk), tkv = lmdb_key_val(&tk), v, taken;
    if ((rc = mdb_get(txn->txn, txn->st->catalog, &fkv, &v)))
        return lmdb_status_of(rc);
    rc = mdb_get(txn->txn, txn->st->catalog, &tkv, &taken);
    if (rc == 0)
        return STORE_EXISTS;
    if (rc != MDB_NOTFOUND)
        return lmdb_status_of(rc);
    /* The records are under the id: only the catalog entry moves. */
    if ((rc = lmdb_put_copy(txn->st, txn->txn, txn->st->catalog, tkv, v.mv_data, v.mv_size)))
        return rc;
    return lmdb_status_of(lmdb_del(txn->st, txn->txn, txn->st->catalog, &fkv, NULL));
}

/* ---- per-table meta values ---- */

int
lmdb_meta_get(StoreTxn *txn, uint32_t table, StoreBytes name, StoreBytes *value_out)
{
    KeyBuf k;
    if (name.len > META_NAME_MAX)
        return STORE_TOOBIG;
    meta_key_build(&k, table, META_CALLER, name.data, name.len);
    MDB_val kv = lmdb_key_val(&k), v;
    int rc = mdb_get(txn->txn, txn->st->meta, &kv, &v);
    if (rc)
        return lmdb_status_of(rc);
    if (value_out)
        *value_out = (StoreBytes){v.mv_data, v.mv_size};
    return STORE_OK;
}

int
lmdb_meta_put(StoreTxn *txn, uint32_t table, StoreBytes name, StoreBytes value)
{
    KeyBuf k;
    if (name.len > META_NAME_MAX)
        return STORE_TOOBIG;
    meta_key_build(&k, table, META_CALLER, name.data, name.len);
    return lmdb_put_copy(txn->st, txn->txn, txn->st->meta, lmdb_key_val(&k), value.data, value.len);
}

int
lmdb_meta_del(StoreTxn *txn, uint32_t table, StoreBytes name)
{
    KeyBuf k;
    if (name.len > META_NAME_MAX)
        return STORE_TOOBIG;
    meta_key_build(&k, table, META_CALLER, name.data, name.len);
    MDB_val kv = lmdb_key_val(&k);
    int rc = lmdb_del(txn->st, txn->txn, txn->st->meta, &kv, NULL);
    return rc == MDB_NOTFOUND ? STORE_OK : lmdb_status_of(rc);
}

int
lmdb_meta_get_i64(StoreTxn *txn, uint32_t table, const char *name, int64_t *out)
{
    StoreBytes v;
    int rc = lmdb_meta_get(txn, table, (StoreBytes){name, strlen(name)}, &v);
    *out = 0;
    if (rc == STORE_NOTFOUND)
        return STORE_OK;
    if (rc)
        return rc;
    if (v.len != 8)
        return STORE_CORRUPT;
    *out = (int64_t)be_get64(v.data);
    return STORE_OK;
}

int
lmdb_meta_put_i64(StoreTxn *txn, uint32_t table, const char *name, int64_t v)
{
    unsigned char b[8];
    be_put64(b, (uint64_t)v);
    return lmdb_meta_put(txn, table, (StoreBytes){name, strlen(name)}, (StoreBytes){b, 8});
}
