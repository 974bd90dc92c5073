/* exec.c — running statements: the dispatch from a statement to what runs
 * it, the one store transaction a statement (or a BEGIN … COMMIT) runs in,
 * the session's statement queue, and what every statement shares (its
 * answer, WHERE, the records a target names). */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "parse.h"

void
lang_exec_answer(Exec *x, Value *v)
{
    lang_value_to_json(v, x->out);
    lang_value_free(v);
}

LangErrorCode
lang_exec_answer_records(Exec *x, Value *records)
{
    if (x->err->code) {
        lang_value_free(records);
        return x->err->code;
    }
    lang_exec_answer(x, records);
    return LANG_OK;
}

/* Collects the identities of every record of a table (so statements can
 * change records while walking them). */
typedef struct KeyWalk {
    Value *keys;
    const TableDef *def;
    int64_t now; /* a done record expired by then is gone */
} KeyWalk;

static int
collect_key(void *ctx, const StoreRecord *sr)
{
    KeyWalk *w = ctx;
    if (lang_record_expired(w->def, sr, w->now))
        return 0;
    Record r = {0};
    LangError ignored = {0};
    if (lang_record_from_store(sr, w->def, &r, &ignored) == LANG_OK)
        lang_value_array_push(w->keys, lang_value_clone(&r.key));
    lang_record_free(&r);
    return 0;
}

LangErrorCode
lang_exec_target_keys(Exec *x, const TableDef *def, const Target *t, Value *keys)
{
    *keys = lang_value_array();
    if (t->id.kind == VAL_RECORD) {
        lang_value_array_push(keys, lang_value_clone(t->id.u.rec.key));
        return LANG_OK;
    }
    KeyWalk w = {keys, def, lang_exec_now(x)};
    int rc = store_record_each(x->txn, def->id, (StoreBytes){NULL, 0}, collect_key, &w);
    return rc ? lang_store_error(rc, "reading records", x->err) : LANG_OK;
}

int64_t
lang_exec_now(Exec *x)
{
    if (!x->now)
        x->now = store_txn_now(x->txn);
    return x->now;
}

LangErrorCode
lang_exec_where(Exec *x, const Expr *where, const Value *view, bool *yes)
{
    *yes = true;
    if (!where)
        return LANG_OK;
    EvalContext cx = {view, lang_exec_now(x)};
    Value v;
    if (lang_expr_eval(where, &cx, &v, x->err))
        return x->err->code;
    *yes = lang_value_truthy(&v);
    lang_value_free(&v);
    return LANG_OK;
}

/* How many records a paged walk (WALK_OWN_ONLY) reads at once. */
#define WALK_PAGE 1000

/* One page of a table's records in key order (a paged walk): each not
 * expired, decoded; "last" the store key of the last one read, where the
 * next page starts (that record passed over). */
typedef struct PageWalk {
    const TableDef *def;
    int64_t now;
    Record page[WALK_PAGE];
    size_t n, read;
    Buf last;
    bool after_last; /* the page starts at "last", which it passes over */
} PageWalk;

static int
collect_record(void *ctx, const StoreRecord *sr)
{
    PageWalk *w = ctx;
    if (w->after_last && sr->key.len == w->last.len &&
        memcmp(sr->key.data, w->last.data, sr->key.len) == 0)
        return 0;
    w->last.len = 0;
    lang_buf_append(&w->last, sr->key.data, sr->key.len);
    LangError ignored = {0};
    w->page[w->n] = (Record){0};
    if (!lang_record_expired(w->def, sr, w->now) &&
        lang_record_from_store(sr, w->def, &w->page[w->n], &ignored) == LANG_OK)
        w->n++;
    else
        lang_record_free(&w->page[w->n]);
    return ++w->read == WALK_PAGE ? -1 : 0; /* -1: the page is full */
}

/* Runs "step" on record "r" when "where" holds for it. */
static void
step_record(Exec *x, const TableDef *def, Record *r, const Expr *where, RecordStep *step, void *ctx)
{
    Value view = lang_record_view(r, def, lang_exec_now(x));
    bool yes;
    if (!lang_exec_where(x, where, &view, &yes) && yes)
        step(x, def, r, &view, ctx);
    lang_value_free(&view);
}

/* lang_exec_each_record of a whole table whose steps change no record
 * but their own (WALK_OWN_ONLY): a page at a time. */
static LangErrorCode
each_record_paged(Exec *x, const TableDef *def, const Expr *where, RecordStep *step, void *ctx)
{
    PageWalk *w = lang_xcalloc(1, sizeof *w);
    w->def = def;
    w->now = lang_exec_now(x);
    Buf from = {0};
    int rc = STORE_OK;
    do {
        w->n = w->read = 0;
        from.len = 0;
        lang_buf_append(&from, w->last.data, w->last.len);
        rc = store_record_each(x->txn, def->id, (StoreBytes){from.data, from.len}, collect_record,
                               w);
        w->after_last = true;
        for (size_t i = 0; i < w->n; i++) {
            if (!x->err->code)
                step_record(x, def, &w->page[i], where, step, ctx);
            lang_record_free(&w->page[i]);
        }
    } while (rc == -1 && !x->err->code);
    lang_buf_free(&from);
    lang_buf_free(&w->last);
    free(w);
    if (rc > 0 && !x->err->code)
        lang_store_error(rc, "reading records", x->err);
    return x->err->code;
}

LangErrorCode
lang_exec_each_record(Exec *x, const TableDef *def, const Target *t, const Expr *where,
                      unsigned walk, RecordStep *step, void *ctx)
{
    if ((walk & WALK_OWN_ONLY) && t->id.kind != VAL_RECORD)
        return each_record_paged(x, def, where, step, ctx);
    Value keys;
    lang_exec_target_keys(x, def, t, &keys);
    for (size_t i = 0; i < keys.u.arr.len && !x->err->code; i++) {
        Record r = {0};
        LangError absent = {0};
        if (lang_record_load(x->txn, def, &keys.u.arr.items[i], &r, &absent)) {
            if (!(walk & WALK_SKIP_ABSENT) || absent.code != LANG_NO_SUCH_RECORD)
                *x->err = absent;
            lang_record_free(&r);
            continue;
        }
        step_record(x, def, &r, where, step, ctx);
        lang_record_free(&r);
    }
    lang_value_free(&keys);
    return x->err->code;
}

/* Runs "st" in x->txn by what kind of statement it is. */
static LangErrorCode
lang_exec_stmt(Exec *x, const Stmt *st)
{
    switch (st->kind) {
    case ST_DEFINE_QUEUE:
    case ST_DEFINE_COLLECTION: return lang_exec_define_table(x, st);
    case ST_DEFINE_FIELD:
    case ST_DEFINE_INDEX:
    case ST_CREATE:
    case ST_UPDATE:
    case ST_UPSERT:
    case ST_DELETE:
    case ST_SELECT:
    case ST_PAUSE:
    case ST_RESUME:
    case ST_ALTER_QUEUE:
    case ST_INFO_TABLE:
    case ST_DROP: return lang_exec_table_statement(x, st);
    case ST_CLAIM: return lang_exec_claim(x, st);
    case ST_RELEASE: return lang_exec_release(x, st);
    case ST_RELEASE_ALL: return lang_exec_release_all(x, st);
    case ST_TOUCH: return lang_exec_touch(x, st);
    case ST_RETRY:
    case ST_RETRY_ALL: return lang_exec_retry(x, st);
    case ST_USE_CONSUMER: return lang_exec_use_consumer(x, st);
    case ST_BEGIN:
    case ST_COMMIT:
    case ST_CANCEL: break;
    }
    return lang_error_set(x->err, LANG_PARSE_ERROR, "unexpected statement");
}

/* True for statements that never change the store. */
static bool
read_only(const Stmt *st)
{
    return st->kind == ST_SELECT || st->kind == ST_INFO_TABLE ||
           (st->kind == ST_CLAIM && st->u.claim.explain);
}

/* True for statements that add or enlarge nothing but what a claim,
 * release, touch, delete or drop does: the store lets them use its
 * reserve, so they keep working on a full store. */
static bool
uses_reserve(const Stmt *st)
{
    switch (st->kind) {
    case ST_CLAIM:
    case ST_RELEASE:
    case ST_RELEASE_ALL:
    case ST_TOUCH:
    case ST_RETRY:
    case ST_RETRY_ALL:
    case ST_DELETE:
    case ST_DROP:
    case ST_USE_CONSUMER:
    case ST_SELECT:
    case ST_INFO_TABLE: return true;
    default: return false;
    }
}

/* True for statements that change nothing but holds (a claim, a touch) or
 * nothing at all: a run of only these need not be durable when it returns
 * (store_txn_lazy) — a crash that loses it ends holds that the crash ends
 * anyway on a store of one machine. */
static bool
holds_only(const Stmt *st)
{
    return st->kind == ST_CLAIM || st->kind == ST_TOUCH || st->kind == ST_USE_CONSUMER ||
           read_only(st);
}

/* What one run of a statement list needs, and what it leaves: the result
 * lines, and where each statement's line ends. */
typedef struct SessionRun {
    LangSession *s;
    Stmt **stmts;
    size_t n;
    const char *saved_consumer; /* the session's identity before the run */
    const char *saved_instance;
    Buf lines;
    size_t *ends;
    LangError *err;
    bool reserve;     /* every statement may use the store's reserve */
    bool lazy;        /* every statement changes only holds */
    bool unread;      /* nobody reads the answers (no emit) */
    size_t undo_mark; /* the session's captured claims before the run */
} SessionRun;

/* Puts back the consumer and instance the session had before the run. */
static void
session_restore(SessionRun *r)
{
    free(r->s->consumer);
    r->s->consumer = r->saved_consumer ? lang_xstrdup(r->saved_consumer) : NULL;
    memcpy(r->s->instance, r->saved_instance, sizeof r->s->instance);
}

/* Runs the statements in "txn", from scratch each time it is called (the
 * store may run it again): 0, or -1 with r->err filled. */
static int
session_run_stmts(StoreTxn *txn, void *ctx)
{
    SessionRun *r = ctx;
    if (r->reserve)
        store_txn_use_reserve(txn);
    if (r->lazy)
        store_txn_lazy(txn);
    session_restore(r);
    if (r->s->undo)
        lang_unclaims_truncate(r->s->undo, r->undo_mark); /* a run again claims afresh */
    lang_buf_reset(&r->lines);
    *r->err = (LangError){0};
    Exec x = {r->s, txn, 0, &r->lines, r->err, NULL, r->n == 1, r->unread};
    for (size_t i = 0, k; i < r->n; i += k) {
        /* A run of CREATEs of one table that name no record goes to the
         * store together: a server's round trips are a few, not a few a
         * record (the lines of a write to new, a BEGIN … COMMIT). */
        k = lang_creates_run(r->stmts + i, r->n - i);
        x.alone = k > 1 ? k == r->n : r->n == 1;
        if (k > 1 ? lang_exec_creates(&x, r->stmts + i, k, r->ends + i)
                  : lang_exec_stmt(&x, r->stmts[i]))
            return -1;
        k = k > 1 ? k : 1;
        r->ends[i + k - 1] = r->lines.len;
    }
    return 0;
}

/* A write transaction shared with concurrent writers (store_write) when
 * any of the statements writes, else a read transaction. */
LangErrorCode
lang_session_run(LangSession *s, Stmt **stmts, size_t n, LangEmit emit, void *ctx, LangError *err)
{
    bool writes = false;
    for (size_t i = 0; i < n; i++)
        writes |= !read_only(stmts[i]);
    char *saved_consumer = s->consumer ? lang_xstrdup(s->consumer) : NULL;
    char saved_instance[sizeof s->instance];
    memcpy(saved_instance, s->instance, sizeof saved_instance);

    SessionRun r = {.s = s,
                    .stmts = stmts,
                    .n = n,
                    .saved_consumer = saved_consumer,
                    .saved_instance = saved_instance,
                    .err = err,
                    .unread = !emit,
                    .undo_mark = s->undo ? s->undo->n : 0};
    r.ends = lang_xcalloc(n, sizeof *r.ends);
    r.reserve = r.lazy = true;
    for (size_t i = 0; i < n; i++) {
        r.reserve &= uses_reserve(stmts[i]);
        r.lazy &= holds_only(stmts[i]);
    }
    LangErrorCode rc;
    if (writes) {
        rc = lang_session_write(s, session_run_stmts, &r, "committing", err);
    } else {
        StoreTxn *txn;
        rc = lang_session_read(s, &txn, err);
        if (!rc) {
            rc = session_run_stmts(txn, &r) ? err->code : LANG_OK;
            store_txn_abort(txn);
        }
    }
    if (rc) {
        session_restore(&r);
        if (s->undo)
            lang_unclaims_truncate(s->undo, r.undo_mark); /* nothing of it was kept */
        free(saved_consumer);
        free(r.ends);
        lang_buf_free(&r.lines);
        return err->code;
    }
    for (size_t i = 0, start = 0; i < n; start = r.ends[i], i++)
        if (emit)
            emit(ctx, r.lines.data + start, r.ends[i] - start);
    free(saved_consumer);
    free(r.ends);
    lang_buf_free(&r.lines);
    return LANG_OK;
}

LangErrorCode
lang_session_statement(LangSession *s, Stmt *st, LangEmit emit, void *ctx, LangError *err)
{
    LangErrorCode rc = LANG_OK;
    switch (st->kind) {
    case ST_BEGIN:
        if (s->in_txn)
            rc = lang_error_set(err, LANG_PARSE_ERROR,
                                "BEGIN inside a transaction (COMMIT or CANCEL it first)");
        else
            s->in_txn = true;
        break;
    case ST_COMMIT:
    case ST_CANCEL:
        if (!s->in_txn) {
            rc = lang_error_set(err, LANG_PARSE_ERROR, "%s without BEGIN",
                                st->kind == ST_COMMIT ? "COMMIT" : "CANCEL");
            break;
        }
        if (st->kind == ST_COMMIT)
            rc = lang_session_run(s, s->pending, s->npending, emit, ctx, err);
        lang_session_drop_pending(s);
        break;
    default:
        if (st->kind == ST_CLAIM && st->u.claim.wait_ns && s->in_txn) {
            rc = lang_error_set(err, LANG_PARSE_ERROR,
                                "CLAIM … WAIT cannot wait inside BEGIN: COMMIT first");
            break;
        }
        if (s->in_txn) {
            if (s->npending == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 8;
                s->pending = lang_xrealloc(s->pending, s->cap * sizeof *s->pending);
            }
            s->pending[s->npending++] = st;
            return LANG_OK;
        }
        if (st->kind == ST_CLAIM && st->u.claim.wait_ns && !st->u.claim.explain)
            rc = lang_claim_wait(s, st, emit, ctx, err);
        else
            rc = lang_session_run(s, &st, 1, emit, ctx, err);
    }
    if (!rc && emit && (st->kind == ST_BEGIN || st->kind == ST_COMMIT || st->kind == ST_CANCEL))
        emit(ctx, "null", 4);
    lang_stmt_free(st);
    return rc;
}

LangErrorCode
lang_session_exec(LangSession *s, const char *text, size_t len, LangEmit emit, void *ctx,
                  LangError *err)
{
    Parser *p = lang_parser_new(text, len);
    Stmt *st;
    int got;
    LangErrorCode rc = LANG_OK;
    while (!rc && (got = lang_parser_next(p, &st, err)) == 1)
        rc = lang_session_statement(s, st, emit, ctx, err);
    lang_parser_free(p);
    return rc ? rc : err->code;
}
