/* after.c — CREATE … AFTER: a queue record that is not handed out until
 * the records it names have finished (deleted, or done on a KEEP queue).
 *
 * A blocked record is a queue record whose field "after" lists the
 * records it still waits for, as their ids show ("q:7").  lang files it
 * delayed until AFTER_NEVER (lang_record_filing), so no claim finds it and
 * finding the head costs what it did however many are blocked; the store
 * knows nothing of dependencies.  What ties them together lives in a table
 * no user can name (LANG_AFTER_TABLE, hidden: see lang_hidden_table):
 *
 *   'd' [u32 table][u16 len][key][u32 waiting table][waiting key]
 *        → the id the waiting record's "after" shows for record
 *          (table, key): one entry for each record a blocked record waits
 *          for, walked by the prefix up to [key] when that record finishes
 *   'n' [u32 table] → i64: the table's blocked records (stats' "blocked")
 *
 * Every table a dependency touches — the waiting record's and each named
 * one's — is marked after_used in its definition (once); only the deletes
 * of such a table read the record first and walk its entries, so a queue
 * that never used AFTER pays nothing.  A finish — a delete that removes
 * the record or makes it done, not one that hands it out again under
 * COALESCE — takes each waiting record's entry: the id leaves its "after",
 * and a record with none left is filed anew (ready, or delayed by its NOT
 * BEFORE field), keeping its place in claim order.  That costs one step a
 * waiting record.  An entry whose waiting record is gone, or no longer
 * waits for that id, is dropped when it is walked. */
#include <stdlib.h>
#include <string.h>

#include "../store/bigendian.h"
#include "engine.h"
#include "exec.h"

/* The id of the dependencies' table into "*id" (see lang_hidden_table). */
static int
after_table(StoreTxn *txn, bool make, uint32_t *id)
{
    return lang_hidden_table(txn, LANG_AFTER_TABLE, make, id);
}

/* Appends table id "table", big-endian, to "out". */
static void
table_put(Buf *out, uint32_t table)
{
    lang_buf_put_be(out, table, 4);
}

/* Appends [u32 table][u16 len][key] to "out". */
static void
record_ref(Buf *out, uint32_t table, StoreBytes key)
{
    table_put(out, table);
    lang_buf_put_be(out, key.len, 2);
    lang_buf_append(out, key.data, key.len);
}

/* The key of table "table"'s count of blocked records. */
static void
count_key(Buf *out, uint32_t table)
{
    lang_buf_putc(out, 'n');
    table_put(out, table);
}

/* Adds "by" to the blocked records of "table". */
static int
count_add(StoreTxn *txn, uint32_t aid, uint32_t table, int64_t by)
{
    Buf k = {0};
    count_key(&k, table);
    StoreRecord sr;
    unsigned char v[8];
    int rc = store_record_get(txn, aid, (StoreBytes){k.data, k.len}, &sr);
    int64_t n = rc == STORE_OK && sr.value.len == 8 ? (int64_t)be_get64(sr.value.data) : 0;
    be_put64(v, (uint64_t)(n + by > 0 ? n + by : 0));
    StoreRecord w = {.key = {k.data, k.len}, .value = {v, 8}};
    if (rc == STORE_OK)
        rc = store_record_update(txn, aid, NULL, &w);
    else if (rc == STORE_NOTFOUND)
        rc = store_record_create(txn, aid, NULL, &w);
    lang_buf_free(&k);
    return rc;
}

int64_t
lang_after_blocked(StoreTxn *txn, const TableDef *def)
{
    uint32_t aid;
    if (!def->after_used || after_table(txn, false, &aid))
        return 0;
    Buf k = {0};
    count_key(&k, def->id);
    StoreRecord sr;
    int rc = store_record_get(txn, aid, (StoreBytes){k.data, k.len}, &sr);
    lang_buf_free(&k);
    return rc == STORE_OK && sr.value.len == 8 ? (int64_t)be_get64(sr.value.data) : 0;
}

/* Marks "def" (stored as table "def->decl.name") after_used, once. */
static int
mark_used(StoreTxn *txn, TableDef *def)
{
    if (def->after_used)
        return STORE_OK;
    def->after_used = true;
    return lang_table_redefine(txn, def->decl.name, def);
}

/* True when "shown" is among the strings of array "a". */
static bool
array_has(const Value *a, const char *shown, size_t len)
{
    for (size_t i = 0; i < a->u.arr.len; i++) {
        const Value *s = &a->u.arr.items[i];
        if (s->kind == VAL_STRING && s->u.str.len == len && memcmp(s->u.str.s, shown, len) == 0)
            return true;
    }
    return false;
}

/* Records that the new record "key" of "def" waits for record "dep_key"
 * of table "dep", shown "shown". */
static int
dependency_put(StoreTxn *txn, uint32_t aid, const TableDef *def, StoreBytes key, uint32_t dep,
               StoreBytes dep_key, const Buf *shown)
{
    Buf k = {0};
    lang_buf_putc(&k, 'd');
    record_ref(&k, dep, dep_key);
    table_put(&k, def->id);
    lang_buf_append(&k, key.data, key.len);
    StoreRecord w = {.key = {k.data, k.len}, .value = {shown->data, shown->len}};
    int rc = store_record_create(txn, aid, NULL, &w);
    if (rc == STORE_EXISTS)
        rc = store_record_update(txn, aid, NULL, &w);
    lang_buf_free(&k);
    return rc;
}

/* Whether record "key" of "dep" has finished (for AFTER): absent, or done. */
static LangErrorCode
finished(Exec *x, const TableDef *dep, StoreBytes key, bool *yes)
{
    StoreRecord sr;
    int rc = lang_record_get_stored(x->txn, dep, key, &sr);
    if (rc && rc != STORE_NOTFOUND)
        return lang_store_error(rc, "reading a record AFTER names", x->err);
    *yes = rc == STORE_NOTFOUND || sr.completed_at != 0;
    return LANG_OK;
}

LangErrorCode
lang_after_create(Exec *x, TableDef *def, Record *r, const Target *after, size_t n)
{
    if (!n)
        return LANG_OK;
    if (!def->is_queue)
        return lang_error_set(x->err, LANG_WRONG_KIND,
                              "'%s' is a collection: only a queue's records wait (AFTER)",
                              def->decl.name);
    Value waits = lang_value_array();
    Buf key = {0}, dep_key = {0}, shown = {0};
    uint32_t aid = 0;
    lang_record_key_encode(&r->key, &key);
    int rc = after_table(x->txn, true, &aid);
    for (size_t i = 0; i < n && !rc && !x->err->code; i++) {
        TableDef dep;
        bool done = false;
        if (lang_table_load(x, after[i].table, ACCESS_READ, &dep))
            break;
        lang_buf_reset(&dep_key);
        lang_buf_reset(&shown);
        lang_record_key_encode(after[i].id.u.rec.key, &dep_key);
        lang_record_id_format(&after[i].id.u.rec, &shown);
        bool self = dep.id == def->id && dep_key.len == key.len &&
                    memcmp(dep_key.data, key.data, key.len) == 0;
        if (!self && !array_has(&waits, shown.data, shown.len) &&
            !finished(x, &dep, (StoreBytes){dep_key.data, dep_key.len}, &done) && !done) {
            lang_value_array_push(&waits, lang_value_string(shown.data, shown.len));
            rc = dependency_put(x->txn, aid, def, (StoreBytes){key.data, key.len}, dep.id,
                                (StoreBytes){dep_key.data, dep_key.len}, &shown);
            if (!rc)
                rc = mark_used(x->txn, dep.id == def->id ? def : &dep);
        }
        lang_table_def_free(&dep);
    }
    if (!rc && !x->err->code && waits.u.arr.len) {
        rc = count_add(x->txn, aid, def->id, 1);
        if (!rc)
            rc = mark_used(x->txn, def);
        if (!rc) {
            lang_value_object_set(&r->fields, FIELD_AFTER, waits);
            waits = lang_value_none();
        }
    }
    if (rc && !x->err->code)
        lang_store_error(rc, "recording what a record waits for", x->err);
    lang_value_free(&waits);
    lang_buf_free(&key);
    lang_buf_free(&dep_key);
    lang_buf_free(&shown);
    return x->err->code;
}

/* The 'd' entries of one finished record, copied out of a walk. */
typedef struct Entries {
    Buf prefix; /* 'd' and the finished record's reference */
    Buf *keys;  /* each entry's key */
    Buf *shown; /* and value */
    size_t n, cap;
    bool table_wide; /* the prefix stops at the table: every record of it */
} Entries;

static int
entry_take(void *ctx, const StoreRecord *sr)
{
    Entries *e = ctx;
    if (sr->key.len < e->prefix.len || memcmp(sr->key.data, e->prefix.data, e->prefix.len) != 0)
        return 1;
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 8;
        e->keys = lang_xrealloc(e->keys, e->cap * sizeof *e->keys);
        e->shown = lang_xrealloc(e->shown, e->cap * sizeof *e->shown);
    }
    e->keys[e->n] = (Buf){0};
    e->shown[e->n] = (Buf){0};
    lang_buf_append(&e->keys[e->n], sr->key.data, sr->key.len);
    lang_buf_append(&e->shown[e->n], sr->value.data, sr->value.len);
    e->n++;
    return 0;
}

static void
entries_free(Entries *e)
{
    for (size_t i = 0; i < e->n; i++) {
        lang_buf_free(&e->keys[i]);
        lang_buf_free(&e->shown[i]);
    }
    free(e->keys);
    free(e->shown);
    lang_buf_free(&e->prefix);
}

/* Finds the table of id "id" (a walk of the catalog). */
typedef struct TableById {
    uint32_t id;
    char *name;
} TableById;

static int
table_by_id(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)def;
    TableById *t = ctx;
    if (id != t->id)
        return 0;
    t->name = lang_xstrdup(name);
    return 1;
}

/* The definition of the table of id "id" into "*def", through a walk of
 * the catalog: false when no table has that id (it was dropped). */
static bool
def_of_id(StoreTxn *txn, uint32_t id, TableDef *def)
{
    TableById t = {id, NULL};
    LangError err = {0};
    store_table_each(txn, table_by_id, &t);
    bool found = t.name && !lang_table_def_load(txn, t.name, def, &err);
    free(t.name);
    return found;
}

/* Takes "shown" out of the "after" of record "key" of table "def": with
 * none left it is filed anew and counted out of the blocked. */
static int
unblock_one(StoreTxn *txn, uint32_t aid, const TableDef *def, StoreBytes key, const Buf *shown)
{
    LangError err = {0};
    Record r = {0};
    StoreRecord sr;
    int rc = store_record_get(txn, def->id, key, &sr);
    Value *waits = NULL;
    if (rc == STORE_OK && !sr.completed_at && sr.not_before == AFTER_NEVER &&
        !lang_record_from_store(&sr, def, &r, &err) &&
        (waits = (Value *)lang_value_object_get(&r.fields, FIELD_AFTER)) &&
        waits->kind == VAL_ARRAY) {
        size_t k = 0;
        for (size_t i = 0; i < waits->u.arr.len; i++) {
            Value *s = &waits->u.arr.items[i];
            if (s->kind == VAL_STRING && s->u.str.len == shown->len &&
                memcmp(s->u.str.s, shown->data, shown->len) == 0)
                lang_value_free(s);
            else
                waits->u.arr.items[k++] = *s;
        }
        bool changed = k < waits->u.arr.len;
        waits->u.arr.len = k;
        if (!k)
            lang_value_object_remove(&r.fields, FIELD_AFTER);
        if (changed && lang_record_store(txn, def, &r, false, &err))
            rc = STORE_CORRUPT;
        else if (changed && !k)
            rc = count_add(txn, aid, def->id, -1);
    } else if (rc == STORE_NOTFOUND) {
        rc = STORE_OK;
    }
    lang_record_free(&r);
    return err.code && !rc ? STORE_CORRUPT : rc;
}

/* Lets the records waiting for those under "e->prefix" go on: each entry
 * is taken (unblock_one) and removed. */
static int
entries_finish(StoreTxn *txn, uint32_t aid, Entries *e)
{
    int rc =
        store_record_each(txn, aid, (StoreBytes){e->prefix.data, e->prefix.len}, entry_take, e);
    if (rc == 1)
        rc = STORE_OK;
    TableDef def = {0}; /* the last waiting record's table, while "have" */
    bool have = false;
    for (size_t i = 0; i < e->n && !rc; i++) {
        const Buf *k = &e->keys[i];
        /* [u8 'd'][u32 table][u16 len][key][u32 waiting table][waiting key] */
        size_t at = 1 + 4 + 2 + be_get16((const unsigned char *)k->data + 5);
        if (k->len < at + 4)
            continue;
        uint32_t table = be_get32((const unsigned char *)k->data + at);
        StoreBytes key = {k->data + at + 4, k->len - at - 4};
        if (have && def.id != table) {
            lang_table_def_free(&def);
            have = false;
        }
        if (!have)
            have = def_of_id(txn, table, &def);
        if (have)
            rc = unblock_one(txn, aid, &def, key, &e->shown[i]);
        if (!rc)
            rc = store_record_delete(txn, aid, NULL, (StoreBytes){k->data, k->len}, 0);
    }
    if (have)
        lang_table_def_free(&def);
    return rc;
}

int
lang_after_delete(Exec *x, const TableDef *def, StoreBytes key, int64_t hold)
{
    StoreQueue q;
    const StoreQueue *qp = lang_record_queue(def, &q);
    if (!def->after_used)
        return store_record_delete(x->txn, def->id, qp, key, hold);
    StoreRecord sr;
    int rc = store_record_get(x->txn, def->id, key, &sr);
    if (rc)
        return rc;
    bool blocked = !sr.completed_at && sr.not_before == AFTER_NEVER;
    bool finishes = !sr.completed_at && !sr.rerun;
    if ((rc = store_record_delete(x->txn, def->id, qp, key, hold)))
        return rc;
    uint32_t aid;
    if ((rc = after_table(x->txn, false, &aid)))
        return rc == STORE_NOTFOUND ? STORE_OK : rc;
    if (blocked && (rc = count_add(x->txn, aid, def->id, -1)))
        return rc;
    if (!finishes)
        return STORE_OK;
    Entries e = {0};
    lang_buf_putc(&e.prefix, 'd');
    record_ref(&e.prefix, def->id, key);
    rc = entries_finish(x->txn, aid, &e);
    entries_free(&e);
    return rc;
}

int
lang_after_drop(StoreTxn *txn, const TableDef *def)
{
    uint32_t aid;
    int rc;
    if (!def->after_used || (rc = after_table(txn, false, &aid)))
        return STORE_OK;
    Buf k = {0};
    count_key(&k, def->id);
    rc = store_record_delete(txn, aid, NULL, (StoreBytes){k.data, k.len}, 0);
    lang_buf_free(&k);
    if (rc && rc != STORE_NOTFOUND)
        return rc;
    /* Every record of the table is gone: all its waiting records go on. */
    Entries e = {0};
    lang_buf_putc(&e.prefix, 'd');
    table_put(&e.prefix, def->id);
    rc = entries_finish(txn, aid, &e);
    entries_free(&e);
    return rc;
}
