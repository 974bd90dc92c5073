/* view.c — the file view's operations (see lang.h), each built as the
 * statement it stands for and run through the same evaluator, so a file
 * operation and its statement cannot come to differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "lang.h"
#include "parse.h"

static Stmt *
stmt_new(StmtKind kind)
{
    Stmt *st = xcalloc(1, sizeof *st);
    st->kind = kind;
    st->line = 1;
    return st;
}

/* A target naming record "key" of "table", or the table when key is NULL. */
static Target
target_of(const char *table, const Value *key)
{
    Target t = {xstrdup(table), value_none()};
    if (key)
        t.id = value_record(table, value_clone(key));
    return t;
}

static Expr *
literal_expr(Value v)
{
    Expr *e = xcalloc(1, sizeof *e);
    e->kind = EX_LITERAL;
    e->u.literal = v;
    return e;
}

/* Keeps the result line of a one-record answer "[{…}]" as "{…}\n"; an
 * empty answer "[]" adds nothing. */
static void
keep_record(void *ctx, const char *line, size_t len)
{
    if (len > 2 && line[0] == '[') {
        buf_append(ctx, line + 1, len - 2);
        buf_putc(ctx, '\n');
    }
}

/* Runs one statement as the session and frees it. */
static LangErrorCode
run_one(LangSession *s, Stmt *st, LangEmitFn emit, void *ctx, LangError *err)
{
    LangErrorCode rc = session_run(s, &st, 1, emit, ctx, err);
    stmt_free(st);
    return rc;
}

LangErrorCode
lang_view_claim(LangSession *s, const char *table, Buf *out, LangError *err)
{
    Stmt *st = stmt_new(ST_CLAIM);
    st->u.claim.count = 1;
    st->u.claim.target = target_of(table, NULL);
    return run_one(s, st, keep_record, out, err);
}

LangErrorCode
lang_view_read(LangSession *s, const char *table, const Value *key, Buf *out, LangError *err)
{
    Stmt *st = stmt_new(ST_SELECT);
    st->u.select.star = true;
    st->u.select.from = target_of(table, key);
    st->u.select.limit = -1;
    size_t before = out->len;
    if (run_one(s, st, keep_record, out, err))
        return err->code;
    if (out->len == before) {
        RecordId id = {(char *)table, (Value *)key};
        Buf name = {0};
        record_id_format(&id, &name);
        lang_error_set(err, LANG_NO_SUCH_RECORD, "no record %s", name.data);
        buf_free(&name);
    }
    return err->code;
}

LangErrorCode
lang_view_delete(LangSession *s, const char *table, const Value *key, LangError *err)
{
    Stmt *st = stmt_new(ST_DELETE);
    st->u.del.target = target_of(table, key);
    return run_one(s, st, NULL, NULL, err);
}

LangErrorCode
lang_view_release(LangSession *s, const char *table, const Value *key, const Value *not_before,
                  LangError *err)
{
    Stmt *st = stmt_new(ST_RELEASE);
    st->u.release.target = target_of(table, key);
    if (not_before && not_before->kind != VAL_NONE)
        st->u.release.not_before = literal_expr(value_clone(not_before));
    return run_one(s, st, NULL, NULL, err);
}

/* Parses record content; empty or blank text is an empty record. */
static LangErrorCode
parse_content(const char *text, size_t len, Value *out, LangError *err)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i == len) {
        *out = value_object();
        return LANG_OK;
    }
    if (lang_literal_parse(text, len, out, err))
        return err->code;
    if (out->kind != VAL_OBJECT) {
        lang_error_set(err, LANG_PARSE_ERROR, "record content must be an object, not %s",
                       value_kind_name(out->kind));
        value_free(out);
        return LANG_PARSE_ERROR;
    }
    /* A file's name (or the store) gives the identity: an `id` in the
     * content, as a record read from another table carries, is ignored. */
    value_object_remove(out, "id");
    return LANG_OK;
}

LangErrorCode
lang_view_write(LangSession *s, const char *table, const Value *key, const char *text,
                size_t len, bool exclusive, LangError *err)
{
    Value content;
    if (parse_content(text, len, &content, err))
        return err->code;
    Stmt *st = stmt_new(exclusive ? ST_CREATE : ST_UPSERT);
    st->u.write.target = target_of(table, key);
    st->u.write.mode = WRITE_CONTENT;
    st->u.write.content = literal_expr(content);
    return run_one(s, st, NULL, NULL, err);
}

LangErrorCode
lang_view_append(LangSession *s, const char *table, const char *text, size_t len,
                 LangError *err)
{
    Stmt **stmts = NULL;
    size_t n = 0, cap = 0;
    LangErrorCode rc = LANG_OK;
    for (size_t start = 0, lineno = 1; start < len && !rc; lineno++) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t a = start, b = end;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r'))
            a++;
        start = end + 1;
        if (a == b)
            continue;
        Value content;
        if (parse_content(text + a, b - a, &content, err)) {
            size_t m = strlen(err->message);
            snprintf(err->message + m, sizeof err->message - m, " (line %zu of the write)",
                     lineno);
            rc = err->code;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            stmts = xrealloc(stmts, cap * sizeof *stmts);
        }
        Stmt *st = stmt_new(ST_CREATE);
        st->u.write.target = target_of(table, NULL);
        st->u.write.mode = WRITE_CONTENT;
        st->u.write.content = literal_expr(content);
        stmts[n++] = st;
    }
    if (!rc && n)
        rc = session_run(s, stmts, n, NULL, NULL, err);
    for (size_t i = 0; i < n; i++)
        stmt_free(stmts[i]);
    free(stmts);
    return rc;
}

LangErrorCode
lang_view_mkdir(LangSession *s, const char *name, LangError *err)
{
    Stmt *st = stmt_new(ST_DEFINE_COLLECTION);
    st->u.define_table.name = xstrdup(name);
    return run_one(s, st, NULL, NULL, err);
}

/* Begins a transaction on the session's store. */
static LangErrorCode
begin(LangSession *s, bool write, StoreTxn **txn, LangError *err)
{
    int rc = store_txn_begin(session_store(s), write, txn);
    return rc ? store_error(rc, "beginning a transaction", err) : LANG_OK;
}

LangErrorCode
lang_view_table(LangSession *s, const char *name, bool *is_queue, LangError *err)
{
    StoreTxn *txn;
    if (begin(s, false, &txn, err))
        return err->code;
    TableDef def;
    if (!table_def_load(txn, name, &def, err)) {
        *is_queue = def.is_queue;
        table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

typedef struct TablesWalk {
    int (*fn)(void *ctx, const char *name);
    void *ctx;
    int stopped;
} TablesWalk;

static int
each_table(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)id;
    (void)def;
    TablesWalk *w = ctx;
    int stop = w->fn(w->ctx, name);
    if (stop)
        w->stopped = 1;
    return stop;
}

LangErrorCode
lang_view_tables(LangSession *s, int (*fn)(void *ctx, const char *name), void *ctx,
                 LangError *err)
{
    StoreTxn *txn;
    if (begin(s, false, &txn, err))
        return err->code;
    TablesWalk w = {fn, ctx, 0};
    int rc = store_table_each(txn, each_table, &w);
    store_txn_abort(txn);
    if (rc && !w.stopped)
        return store_error(rc, "listing tables", err);
    return LANG_OK;
}

typedef struct KeysWalk {
    int (*fn)(void *ctx, const Value *key);
    void *ctx;
    const Value *after;
    int stopped;
} KeysWalk;

static int
each_key(void *ctx, StoreBytes key, StoreBytes value)
{
    (void)key;
    KeysWalk *w = ctx;
    Value k;
    if (record_decode_key(value, &k) < 0)
        return 0;
    int stop = w->after && value_equal(&k, w->after) ? 0 : w->fn(w->ctx, &k);
    value_free(&k);
    if (stop)
        w->stopped = 1;
    return stop;
}

LangErrorCode
lang_view_keys(LangSession *s, const char *table, const Value *after,
               int (*fn)(void *ctx, const Value *key), void *ctx, LangError *err)
{
    StoreTxn *txn;
    if (begin(s, false, &txn, err))
        return err->code;
    TableDef def;
    if (!table_def_load(txn, table, &def, err)) {
        Buf from = {0};
        if (after)
            record_key_encode(after, &from);
        KeysWalk w = {fn, ctx, after, 0};
        int rc = store_record_each(txn, def.id, (StoreBytes){from.data, from.len}, each_key, &w);
        if (rc && !w.stopped)
            store_error(rc, "listing records", err);
        buf_free(&from);
        table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

static int
found_one(void *ctx, StoreBytes key, StoreBytes value)
{
    (void)key;
    (void)value;
    *(bool *)ctx = true;
    return 1;
}

typedef struct RmdirRun {
    const char *name;
    LangError *err;
} RmdirRun;

/* Drops the table when it holds no record: 0, or -1 with the error. */
static int
rmdir_run(StoreTxn *txn, void *ctx)
{
    RmdirRun *r = ctx;
    TableDef def;
    bool any = false;
    *r->err = (LangError){0};
    if (table_def_load(txn, r->name, &def, r->err))
        return -1;
    int rc = store_record_each(txn, def.id, (StoreBytes){NULL, 0}, found_one, &any);
    table_def_free(&def);
    if (any) {
        lang_error_set(r->err, LANG_NOT_EMPTY, "table '%s' holds records", r->name);
        return -1;
    }
    if (rc || (rc = store_table_drop(txn, r->name))) {
        store_error(rc, "dropping a table", r->err);
        return -1;
    }
    return 0;
}

LangErrorCode
lang_view_rmdir(LangSession *s, const char *name, LangError *err)
{
    RmdirRun r = {name, err};
    int rc = store_write(session_store(s), rmdir_run, &r);
    if (rc > 0)
        store_error(rc, "dropping a table", err);
    return rc ? err->code : LANG_OK;
}
