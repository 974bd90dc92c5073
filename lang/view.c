/* view.c — the file view's operations (see lang.h), each built as the
 * statement it stands for and run through the same evaluator, so a file
 * operation and its statement cannot come to differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "parse.h"

void
lang_record_stat(const Record *r, size_t size, LangRecordStat *stat)
{
    stat->size = size;
    stat->written = r->written;
    stat->changed = r->changed;
    stat->claimed = r->claimed;
}

static Stmt *
stmt_new(StmtKind kind)
{
    Stmt *st = lang_xcalloc(1, sizeof *st);
    st->kind = kind;
    st->line = 1;
    return st;
}

/* A target naming record "key" of "table", or the table when key is NULL. */
static Target
target_of(const char *table, const Value *key)
{
    Target t = {lang_xstrdup(table), lang_value_none()};
    if (key)
        t.id = lang_value_record(table, lang_value_clone(key));
    return t;
}

static Expr *
literal_expr(Value v)
{
    Expr *e = lang_xcalloc(1, sizeof *e);
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
        lang_buf_append(ctx, line + 1, len - 2);
        lang_buf_putc(ctx, '\n');
    }
}

/* Runs one statement as the session and frees it. */
static LangErrorCode
run_one(LangSession *s, Stmt *st, LangEmit emit, void *ctx, LangError *err)
{
    LangErrorCode rc = lang_session_run(s, &st, 1, emit, ctx, err);
    lang_stmt_free(st);
    return rc;
}

void
lang_claimed_clear(LangClaimed *c)
{
    lang_value_free(&c->key);
    memset(c, 0, sizeof *c);
}

/* The claim of the file view, keeping in "undo" and "claimed" (either may
 * be NULL) what lang_view_claim_undoable and lang_view_claim promise. */
static LangErrorCode
claim_one(LangSession *s, const char *table, Buf *out, LangUnclaims *undo, LangClaimed *claimed,
          LangError *err)
{
    if (undo)
        lang_unclaims_truncate(undo, 0);
    if (claimed)
        lang_claimed_clear(claimed);
    size_t before = out->len;
    lang_session_capture_claim(s, undo, claimed);
    Stmt *st = stmt_new(ST_CLAIM);
    st->u.claim.count = 1;
    st->u.claim.target = target_of(table, NULL);
    LangErrorCode rc = run_one(s, st, keep_record, out, err);
    lang_session_capture_claim(s, NULL, NULL);
    if (rc || out->len == before) {
        /* Nothing claimed: nothing to give back or to tell. */
        if (undo)
            lang_unclaims_truncate(undo, 0);
        if (claimed)
            lang_claimed_clear(claimed);
    } else if (claimed) {
        claimed->stat.size = out->len - before;
    }
    return rc;
}

LangErrorCode
lang_view_claim(LangSession *s, const char *table, Buf *out, LangClaimed *claimed, LangError *err)
{
    return claim_one(s, table, out, NULL, claimed, err);
}

void
lang_view_keep_claims(LangSession *s, LangUnclaims *undo)
{
    lang_session_capture_claim(s, undo, NULL);
}

LangErrorCode
lang_view_claim_undoable(LangSession *s, const char *table, Buf *out, LangUnclaims *undo,
                         LangClaimed *claimed, LangError *err)
{
    return claim_one(s, table, out, undo, claimed, err);
}

void
lang_table_info(const TableDef *def, LangTableInfo *info)
{
    info->is_queue = def->is_queue;
    info->has_delay = def->is_queue && def->decl.not_before;
    info->has_owner = def->uid >= 0;
    info->uid = def->uid >= 0 ? (uint32_t)def->uid : 0;
    info->gid = def->gid >= 0 ? (uint32_t)def->gid : 0;
    info->mode = def->mode >= 0 ? (uint32_t)def->mode : 0755;
}

LangErrorCode
lang_view_read(LangSession *s, const char *table, const Value *key, int64_t fence, Buf *out,
               LangTableInfo *info, LangRecordStat *stat, LangError *err)
{
    StoreTxn *txn;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TableDef def;
    Record r = {0};
    if (!lang_table_def_load(txn, table, &def, err)) {
        if (info)
            lang_table_info(&def, info);
        if (!lang_access_check(s, &def, ACCESS_READ, err) &&
            !lang_record_load(txn, &def, key, &r, err) &&
            !lang_record_fence(&def, &r, fence, store_txn_now(txn), err)) {
            size_t before = out->len;
            Value view = lang_record_view(&r, &def, store_txn_now(txn));
            lang_value_to_json(&view, out);
            lang_buf_putc(out, '\n');
            lang_value_free(&view);
            if (stat)
                lang_record_stat(&r, out->len - before, stat);
        }
        lang_record_free(&r);
        lang_table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

LangErrorCode
lang_view_delete(LangSession *s, const char *table, const Value *key, int64_t fence, LangError *err)
{
    Stmt *st = stmt_new(ST_DELETE);
    st->u.del.target = target_of(table, key);
    st->u.del.fence = fence;
    return run_one(s, st, NULL, NULL, err);
}

/* RELEASE, RETRY or TOUCH ("kind") of record "key", NOT BEFORE
 * "not_before" unless it is NULL or NONE, BECAUSE "because" unless it is
 * NULL, under "fence". */
static LangErrorCode
hold_stmt(LangSession *s, StmtKind kind, const char *table, const Value *key,
          const Value *not_before, int64_t fence, const char *because, LangError *err)
{
    Stmt *st = stmt_new(kind);
    st->u.release.target = target_of(table, key);
    st->u.release.fence = fence;
    st->u.release.because = because ? lang_xstrdup(because) : NULL;
    if (not_before && not_before->kind != VAL_NONE)
        st->u.release.not_before = lang_expr_not_before(not_before);
    return run_one(s, st, NULL, NULL, err);
}

LangErrorCode
lang_view_release(LangSession *s, const char *table, const Value *key, const Value *not_before,
                  int64_t fence, const char *because, LangError *err)
{
    return hold_stmt(s, ST_RELEASE, table, key, not_before, fence, because, err);
}

LangErrorCode
lang_view_retry(LangSession *s, const char *table, const Value *key, const Value *not_before,
                int64_t fence, LangError *err)
{
    return hold_stmt(s, ST_RETRY, table, key, not_before, fence, NULL, err);
}

LangErrorCode
lang_view_touch(LangSession *s, const char *table, const Value *key, int64_t fence, LangError *err)
{
    return hold_stmt(s, ST_TOUCH, table, key, NULL, fence, NULL, err);
}

/* Parses record content into "out" (empty or blank text is an empty
 * record) and takes its `id`, when it has one, out of it into "id" (else
 * NONE): a file's name, a line's `id` or the store gives the identity. */
static LangErrorCode
parse_content(const char *text, size_t len, Value *out, Value *id, LangError *err)
{
    *id = lang_value_none();
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i == len) {
        *out = lang_value_object();
        return LANG_OK;
    }
    if (lang_literal_parse(text, len, out, err))
        return err->code;
    if (out->kind != VAL_OBJECT) {
        lang_error_set(err, LANG_PARSE_ERROR, "record content must be an object, not %s",
                       lang_value_kind_name(out->kind));
        lang_value_free(out);
        return LANG_PARSE_ERROR;
    }
    const Value *given = lang_value_object_get(out, "id");
    if (given) {
        *id = lang_value_clone(given);
        lang_value_object_remove(out, "id");
    }
    return LANG_OK;
}

LangErrorCode
lang_view_write(LangSession *s, const char *table, const Value *key, const char *text, size_t len,
                bool exclusive, LangError *err)
{
    Value content, id;
    if (parse_content(text, len, &content, &id, err))
        return err->code;
    lang_value_free(&id); /* the file's name gives the identity */
    Stmt *st = stmt_new(exclusive ? ST_CREATE : ST_UPSERT);
    st->u.write.target = target_of(table, key);
    st->u.write.mode = WRITE_CONTENT;
    st->u.write.content = literal_expr(content);
    return run_one(s, st, NULL, NULL, err);
}

/* The identity a line of new names by its `id` (SPEC section 8), into
 * "*key": an integer is that integer; a string is the identity that a
 * record of "table" shows as that id ("jobs:7", "jobs:abc",
 * "jobs:'a b'"), or else that string itself — except the id a record of
 * another table shows ("other:7"), which names none: a record copied from
 * another table gets a new identity.  NONE when it names none (and when
 * there is no id); ParseError for an id of another kind, or the empty
 * string. */
static LangErrorCode
line_key(const char *table, const Value *id, Value *key, LangError *err)
{
    *key = lang_value_none();
    if (id->kind == VAL_NONE)
        return LANG_OK;
    if (id->kind == VAL_INT) {
        *key = lang_value_int(id->u.i);
        return LANG_OK;
    }
    if (id->kind != VAL_STRING || id->u.str.len == 0)
        return lang_error_set(err, LANG_PARSE_ERROR,
                              "a line's id must be an integer or a non-empty string, not %s",
                              lang_value_kind_name(id->kind));
    Value named;
    LangError ignored = {0};
    if (lang_literal_parse(id->u.str.s, id->u.str.len, &named, &ignored) == 0) {
        bool shown_so = false, ours = false;
        if (named.kind == VAL_RECORD) {
            Buf shown = {0};
            lang_record_id_format(&named.u.rec, &shown);
            shown_so = shown.len == id->u.str.len && !memcmp(shown.data, id->u.str.s, shown.len);
            ours = strcmp(named.u.rec.table, table) == 0;
            lang_buf_free(&shown);
        }
        if (shown_so && ours)
            *key = lang_value_clone(named.u.rec.key);
        lang_value_free(&named);
        if (shown_so)
            return LANG_OK;
    }
    *key = lang_value_clone(id);
    return LANG_OK;
}

/* Takes a line's `after` (SPEC section 9) out of "content" into the
 * CREATE "st": each record it names as its id shows ("jobs:7", or an
 * integer for a record of "table").  ParseError for anything else. */
static LangErrorCode
line_after(const char *table, Value *content, Stmt *st, LangError *err)
{
    const Value *after = lang_value_object_get(content, FIELD_AFTER);
    if (!after)
        return LANG_OK;
    if (after->kind != VAL_ARRAY)
        return lang_error_set(err, LANG_PARSE_ERROR,
                              "a line's after must be an array of record ids, not %s",
                              lang_value_kind_name(after->kind));
    st->u.write.after = lang_xcalloc(after->u.arr.len ? after->u.arr.len : 1, sizeof(Target));
    for (size_t i = 0; i < after->u.arr.len; i++) {
        const Value *v = &after->u.arr.items[i];
        Value named = lang_value_none();
        LangError ignored = {0};
        if (v->kind == VAL_INT) {
            st->u.write.after[st->u.write.nafter++] = target_of(table, v);
            continue;
        }
        if (v->kind != VAL_STRING ||
            lang_literal_parse(v->u.str.s, v->u.str.len, &named, &ignored) ||
            named.kind != VAL_RECORD) {
            lang_value_free(&named);
            return lang_error_set(err, LANG_PARSE_ERROR,
                                  "a line's after names records as their ids show ('%s:7')", table);
        }
        st->u.write.after[st->u.write.nafter++] = target_of(named.u.rec.table, named.u.rec.key);
        lang_value_free(&named);
    }
    lang_value_object_remove(content, FIELD_AFTER);
    return LANG_OK;
}

LangErrorCode
lang_view_append(LangSession *s, const char *table, const char *text, size_t len, LangError *err)
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
        Value content, id, key = lang_value_none();
        bool parsed = !parse_content(text + a, b - a, &content, &id, err);
        if (!parsed || line_key(table, &id, &key, err)) {
            size_t m = strlen(err->message);
            snprintf(err->message + m, sizeof err->message - m, " (line %zu of the write)", lineno);
            if (parsed) {
                lang_value_free(&content);
                lang_value_free(&id);
            }
            rc = err->code;
            break;
        }
        lang_value_free(&id);
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            stmts = lang_xrealloc(stmts, cap * sizeof *stmts);
        }
        Stmt *st = stmt_new(ST_CREATE);
        st->u.write.target = target_of(table, key.kind != VAL_NONE ? &key : NULL);
        st->u.write.mode = WRITE_CONTENT;
        lang_value_free(&key);
        stmts[n++] = st;
        if (line_after(table, &content, st, err)) {
            size_t m = strlen(err->message);
            snprintf(err->message + m, sizeof err->message - m, " (line %zu of the write)", lineno);
            lang_value_free(&content);
            rc = err->code;
            break;
        }
        st->u.write.content = literal_expr(content);
    }
    if (!rc && n)
        rc = lang_session_run(s, stmts, n, NULL, NULL, err);
    for (size_t i = 0; i < n; i++)
        lang_stmt_free(stmts[i]);
    free(stmts);
    return rc;
}

LangErrorCode
lang_view_mkdir(LangSession *s, const char *name, uint32_t mode, LangError *err)
{
    Stmt *st = stmt_new(ST_DEFINE_COLLECTION);
    st->u.define_table.name = lang_xstrdup(name);
    st->u.define_table.mode = mode & 07777;
    return run_one(s, st, NULL, NULL, err);
}

LangErrorCode
lang_view_table(LangSession *s, const char *name, LangTableInfo *info, LangError *err)
{
    StoreTxn *txn;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TableDef def;
    if (!lang_table_def_load(txn, name, &def, err)) {
        lang_table_info(&def, info);
        lang_table_def_free(&def);
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
    if (lang_hidden_table_name(name))
        return 0;
    int stop = w->fn(w->ctx, name);
    if (stop)
        w->stopped = 1;
    return stop;
}

LangErrorCode
lang_view_tables(LangSession *s, int (*fn)(void *ctx, const char *name), void *ctx, LangError *err)
{
    StoreTxn *txn;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TablesWalk w = {fn, ctx, 0};
    int rc = store_table_each(txn, each_table, &w);
    store_txn_abort(txn);
    if (rc && !w.stopped)
        return lang_store_error(rc, "listing tables", err);
    return LANG_OK;
}

typedef struct KeysWalk {
    int (*fn)(void *ctx, const Value *key);
    void *ctx;
    const Value *after;
    int stopped;
} KeysWalk;

static int
each_key(void *ctx, const StoreRecord *sr)
{
    KeysWalk *w = ctx;
    Value k;
    if (sr->completed_at || lang_record_key_from_store(sr, &k) < 0)
        return 0; /* a done record is listed in done/, not with the work */
    int stop = w->after && lang_value_equal(&k, w->after) ? 0 : w->fn(w->ctx, &k);
    lang_value_free(&k);
    if (stop)
        w->stopped = 1;
    return stop;
}

LangErrorCode
lang_view_keys(LangSession *s, const char *table, const Value *after,
               int (*fn)(void *ctx, const Value *key), void *ctx, LangError *err)
{
    StoreTxn *txn;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TableDef def;
    if (!lang_table_def_load(txn, table, &def, err) &&
        !lang_access_check(s, &def, ACCESS_READ, err)) {
        Buf from = {0};
        if (after)
            lang_record_key_encode(after, &from);
        KeysWalk w = {fn, ctx, after, 0};
        int rc = store_record_each(txn, def.id, (StoreBytes){from.data, from.len}, each_key, &w);
        if (rc && !w.stopped)
            lang_store_error(rc, "listing records", err);
        lang_buf_free(&from);
        lang_table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

typedef struct ListingWalk {
    const TableDef *def;
    int (*fn)(void *ctx, const Value *key, const LangRecordStat *stat);
    void *ctx;
    const Value *after;
    Buf json; /* reused for every record */
    int stopped;
    LangError *err;
    int64_t now; /* the listing's instant */
} ListingWalk;

static int
each_listed(void *ctx, const StoreRecord *sr)
{
    ListingWalk *w = ctx;
    Record r = {0};
    int stop = 0;
    if (sr->completed_at)
        return 0; /* a done record is listed in done/, not with the work */
    if (!lang_record_from_store(sr, w->def, &r, w->err) &&
        !(w->after && lang_value_equal(&r.key, w->after))) {
        Value view = lang_record_view(&r, w->def, w->now);
        lang_buf_reset(&w->json);
        lang_value_to_json(&view, &w->json);
        lang_value_free(&view);
        LangRecordStat st;
        lang_record_stat(&r, w->json.len + 1, &st); /* and its newline */
        stop = w->fn(w->ctx, &r.key, &st);
    }
    lang_record_free(&r);
    if (stop)
        w->stopped = 1;
    return stop || w->err->code;
}

LangErrorCode
lang_view_listing(LangSession *s, const char *table, const Value *after,
                  int (*fn)(void *ctx, const Value *key, const LangRecordStat *stat), void *ctx,
                  LangTableInfo *info, LangError *err)
{
    StoreTxn *txn;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TableDef def;
    if (!lang_table_def_load(txn, table, &def, err) &&
        !lang_access_check(s, &def, ACCESS_READ, err)) {
        if (info)
            lang_table_info(&def, info);
        Buf from = {0};
        if (after)
            lang_record_key_encode(after, &from);
        ListingWalk w = {&def, fn, ctx, after, {0}, 0, err, store_txn_now(txn)};
        int rc = store_record_each(txn, def.id, (StoreBytes){from.data, from.len}, each_listed, &w);
        if (rc && !w.stopped && !err->code)
            lang_store_error(rc, "listing records", err);
        lang_buf_free(&w.json);
        lang_buf_free(&from);
        lang_table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

/* ---- what a table's owner changes: chmod, chown, rmdir, mv ---- */

/* One change the owner of table "name" makes, in a write transaction of
 * its own that may use the store's reserve (each keeps the definition's
 * size, or drops the table). */
typedef struct OwnerRun {
    LangSession *s;
    const char *name;
    /* Makes the change to "def": 0, or -1 with r->err filled. */
    int (*change)(StoreTxn *txn, TableDef *def, const struct OwnerRun *r);
    int64_t mode, uid, gid; /* chattr: -1 stays */
    const char *to;         /* rename */
    LangError *err;
} OwnerRun;

static int
owner_run(StoreTxn *txn, void *ctx)
{
    OwnerRun *r = ctx;
    TableDef def;
    *r->err = (LangError){0};
    store_txn_use_reserve(txn);
    if (lang_table_def_load(txn, r->name, &def, r->err))
        return -1;
    int rc = lang_access_check(r->s, &def, ACCESS_OWNER, r->err) ? -1 : r->change(txn, &def, r);
    lang_table_def_free(&def);
    return rc;
}

/* Runs change "r" "while <what>". */
static LangErrorCode
owner_write(OwnerRun *r, const char *what)
{
    return lang_session_write(r->s, owner_run, r, what, r->err);
}

/* Stores the table's new owner and mode. */
static int
chattr_change(StoreTxn *txn, TableDef *def, const OwnerRun *r)
{
    if (r->mode >= 0)
        def->mode = r->mode & 07777;
    if (r->uid >= 0)
        def->uid = r->uid;
    if (r->gid >= 0)
        def->gid = r->gid;
    int rc = lang_table_redefine(txn, r->name, def);
    if (rc) {
        lang_store_error(rc, "changing a table's owner or mode", r->err);
        return -1;
    }
    return 0;
}

LangErrorCode
lang_view_chattr(LangSession *s, const char *name, int64_t mode, int64_t uid, int64_t gid,
                 LangError *err)
{
    OwnerRun r = {s, name, chattr_change, mode, uid, gid, NULL, err};
    return owner_write(&r, "changing a table's owner or mode");
}

static int
found_one(void *ctx, const StoreRecord *sr)
{
    if (sr->completed_at)
        return 0; /* finished work is no reason to keep the table */
    *(bool *)ctx = true;
    return 1;
}

/* Drops the table when it holds no record still outstanding (done ones
 * go with it). */
static int
rmdir_change(StoreTxn *txn, TableDef *def, const OwnerRun *r)
{
    bool any = false;
    int rc = store_record_each(txn, def->id, (StoreBytes){NULL, 0}, found_one, &any);
    if (any) {
        lang_error_set(r->err, LANG_NOT_EMPTY, "table '%s' holds records", r->name);
        return -1;
    }
    if (rc || (rc = lang_after_drop(txn, def)) || (rc = lang_perkeys_drop(txn, def)) ||
        (rc = store_table_drop(txn, r->name))) {
        lang_store_error(rc, "dropping a table", r->err);
        return -1;
    }
    return 0;
}

LangErrorCode
lang_view_rmdir(LangSession *s, const char *name, LangError *err)
{
    OwnerRun r = {s, name, rmdir_change, -1, -1, -1, NULL, err};
    return owner_write(&r, "dropping a table");
}

/* Moves the table's catalog entry to its new name and writes the name into
 * its definition. */
static int
rename_change(StoreTxn *txn, TableDef *def, const OwnerRun *r)
{
    int rc = store_table_rename(txn, r->name, r->to);
    if (!rc) {
        free(def->decl.name);
        def->decl.name = lang_xstrdup(r->to);
        rc = lang_table_redefine(txn, r->to, def);
    }
    if (rc == STORE_EXISTS)
        lang_error_set(r->err, LANG_TABLE_EXISTS, "a table named '%s' already exists", r->to);
    else if (rc)
        lang_store_error(rc, "renaming a table", r->err);
    return rc ? -1 : 0;
}

LangErrorCode
lang_view_rename(LangSession *s, const char *from, const char *to, LangError *err)
{
    OwnerRun r = {s, from, rename_change, -1, -1, -1, to, err};
    if (lang_session_name_check(s, to, err))
        return err->code;
    return owner_write(&r, "renaming a table");
}
