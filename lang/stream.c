/* stream.c — statements run piece by piece (lang_session_start and
 * lang_session_continue): a streamed SELECT read in chunks of their own
 * read transactions, the streamed answer of a whole-table UPDATE, a
 * CLAIM … WAIT kept until it claims, and the statements kept behind
 * them. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "parse.h"

/* How many records one chunk of a streamed SELECT looks at, at most: a
 * WHERE that few records match still ends each chunk's transaction soon. */
#define CHUNK_RECORDS 4096

/* Where a streamed SELECT is: the next chunk starts after "after". */
typedef struct SelectCursor {
    bool begun;     /* its checks passed and "[" was written */
    uint32_t table; /* the table's id when it began */
    Buf after;      /* the store key of the last record looked at */
    int64_t rows;   /* rows written (LIMIT) */
    int64_t now;    /* the statement's instant, the same for every chunk */
} SelectCursor;

/* The work a session keeps between lang_session_start and
 * lang_session_continue. */
typedef struct LangStream {
    Stmt **stmts; /* parsed statements still to run, from "next" */
    size_t n, next;
    LangError parse_err; /* the text after them that did not parse */
    Stmt *current;       /* in progress: a CLAIM … WAIT or a streamed SELECT */
    int64_t deadline;    /* CLAIM … WAIT: the instant it answers [] */
    SelectCursor cur;    /* streamed SELECT; UPDATE: "begun" and "table" */
    Buf keys;            /* UPDATE: the changed records' keys (lang_keys_push) */
    size_t key_off;      /* UPDATE: where the next chunk of its answer starts */
} LangStream;

void
lang_stream_free(LangSession *s)
{
    LangStream *r = s->stream;
    if (!r)
        return;
    for (size_t i = r->next; i < r->n; i++)
        lang_stmt_free(r->stmts[i]);
    free(r->stmts);
    lang_stmt_free(r->current);
    lang_buf_free(&r->cur.after);
    lang_buf_free(&r->keys);
    free(r);
    s->stream = NULL;
}

bool
lang_session_pending(const LangSession *s)
{
    return s->stream != NULL;
}

bool
lang_session_waiting(const LangSession *s)
{
    return s->stream && s->stream->current && s->stream->current->kind == ST_CLAIM;
}

/* Appends one result line, and its newline, to the Buf "ctx". */
static void
add_line(void *ctx, const char *line, size_t len)
{
    lang_buf_append(ctx, line, len);
    lang_buf_putc(ctx, '\n');
}

/* True for a statement that is kept on the session when it cannot end at
 * once: a CLAIM … WAIT, a SELECT of a whole table in identity order, an
 * UPDATE of a whole table (its answer). */
static bool
resumable(const LangSession *s, const Stmt *st)
{
    if (s->in_txn)
        return false;
    if (st->kind == ST_CLAIM)
        return st->u.claim.wait_ns && !st->u.claim.explain;
    if (st->kind == ST_UPDATE)
        return st->u.write.target.id.kind != VAL_RECORD;
    return st->kind == ST_SELECT && st->u.select.from.id.kind != VAL_RECORD && !st->u.select.norder;
}

/* What one chunk of a streamed SELECT walks with. */
typedef struct ChunkWalk {
    Exec *x;
    const Stmt *st;
    const TableDef *def;
    SelectCursor *cur;
    size_t room;
    size_t looked;
    bool full; /* stopped for room: more may follow */
} ChunkWalk;

/* Writes record "value" as the next row when WHERE holds; stops (-1)
 * when the chunk is full, LIMIT is reached or an error is met. */
static int
chunk_row(void *ctx, const StoreRecord *sr)
{
    ChunkWalk *w = ctx;
    StoreBytes key = sr->key;
    SelectCursor *c = w->cur;
    const Buf *after = &c->after;
    if (after->len && key.len == after->len && memcmp(key.data, after->data, key.len) == 0)
        return 0; /* the last record of the chunk before */
    if (w->st->u.select.limit >= 0 && c->rows >= w->st->u.select.limit)
        return -1;
    if (w->x->out->len >= w->room || w->looked >= CHUNK_RECORDS) {
        w->full = true;
        return -1;
    }
    w->looked++;
    lang_buf_reset(&c->after);
    lang_buf_append(&c->after, key.data, key.len);
    if (lang_record_expired(w->def, sr, lang_exec_now(w->x)))
        return 0; /* done, and its KEEP is over: gone */
    Record r = {0};
    if (lang_record_from_store(sr, w->def, &r, w->x->err)) {
        lang_record_free(&r);
        return -1;
    }
    Value view = lang_record_view(&r, w->def, lang_exec_now(w->x)), row;
    bool yes;
    if (!lang_exec_where(w->x, w->st->u.select.where, &view, &yes) && yes &&
        !lang_select_project(w->x, w->st, &view, &row)) {
        if (c->rows++)
            lang_buf_putc(w->x->out, ',');
        lang_value_to_json(&row, w->x->out);
        lang_value_free(&row);
    }
    lang_value_free(&view);
    lang_record_free(&r);
    return w->x->err->code ? -1 : 0;
}

/* Writes the next rows of streamed SELECT "st" to "out", in a read
 * transaction of its own, until "out" reaches "room" (or CHUNK_RECORDS were
 * looked at); "*done" once the line has ended.  The first chunk checks the
 * statement (NoSuchTable, PermissionDenied…) and an error in it leaves
 * "out" as it was; a later error ends the line where it stopped.  A table
 * dropped meanwhile ends the line. */
static LangErrorCode
select_chunk(LangSession *s, const Stmt *st, SelectCursor *c, Buf *out, size_t room, bool *done,
             LangError *err)
{
    StoreTxn *txn;
    size_t start = out->len;
    *done = true;
    if (lang_session_read(s, &txn, err))
        return err->code;
    Exec x = {s, txn, c->now, out, err, NULL, false, false};
    TableDef def;
    LangError gone = {0};
    bool first = !c->begun;
    if (first ? lang_table_load(&x, st->u.select.from.table, ACCESS_READ, &def)
              : lang_table_def_load(txn, st->u.select.from.table, &def, &gone)) {
        store_txn_abort(txn);
        if (first)
            return err->code;
        lang_buf_puts(out, "]\n"); /* dropped meanwhile: no more records */
        return LANG_OK;
    }
    if (first) {
        c->begun = true;
        c->table = def.id;
        lang_buf_putc(out, '[');
    }
    ChunkWalk w = {&x, st, &def, c, room, 0, false};
    if (def.id == c->table) {
        const Buf *a = &c->after;
        int rc = store_record_each(txn, def.id, (StoreBytes){a->data, a->len}, chunk_row, &w);
        if (rc > 0)
            lang_store_error(rc, "reading records", err);
    }
    lang_table_def_free(&def);
    store_txn_abort(txn);
    if (err->code && first) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
        return err->code;
    }
    if (w.full && !err->code) {
        *done = false;
        return LANG_OK;
    }
    lang_buf_puts(out, "]\n");
    return err->code;
}

/* What a whole-table UPDATE runs with: its statement and where the keys
 * of the records it changed go. */
typedef struct UpdateRun {
    LangSession *s;
    const Stmt *st;
    Buf *keys;
    LangError *err;
} UpdateRun;

static int
update_txn(StoreTxn *txn, void *ctx)
{
    UpdateRun *u = ctx;
    Buf unused = {0};
    lang_buf_reset(u->keys);
    *u->err = (LangError){0};
    Exec x = {u->s, txn, 0, &unused, u->err, u->keys, false, false};
    int rc = lang_exec_table_statement(&x, u->st) ? -1 : 0;
    lang_buf_free(&unused);
    return rc;
}

/* Runs UPDATE "st" as one write transaction, keeping only the keys of the
 * records it changed in "keys": its answer is then streamed from them. */
static LangErrorCode
update_keep_keys(LangSession *s, const Stmt *st, Buf *keys, LangError *err)
{
    UpdateRun u = {s, st, keys, err};
    return lang_session_write(s, update_txn, &u, "committing", err);
}

/* Writes the next records of a streamed UPDATE answer to "out", read by
 * key in a read transaction of its own, until "out" reaches "room";
 * "*done" once the line has ended.  A record deleted since is left out; a
 * table dropped since ends the line. */
static LangErrorCode
update_chunk(LangSession *s, LangStream *r, Buf *out, size_t room, bool *done, LangError *err)
{
    StoreTxn *txn;
    *done = true;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TableDef def;
    LangError gone = {0};
    bool have = !lang_table_def_load(txn, r->current->u.write.target.table, &def, &gone);
    if (!r->cur.begun) {
        r->cur.begun = true;
        r->cur.table = have ? def.id : 0;
        lang_buf_putc(out, '[');
    }
    while (have && def.id == r->cur.table && r->key_off < r->keys.len && !err->code) {
        if (out->len >= room) {
            *done = false;
            break;
        }
        StoreBytes kb;
        StoreRecord sr;
        lang_keys_next(&r->keys, &r->key_off, &kb);
        Record rec = {0};
        int rc = lang_record_get_stored(txn, &def, kb, &sr);
        if (rc && rc != STORE_NOTFOUND) {
            lang_store_error(rc, "reading a record", err);
        } else if (!rc && !lang_record_from_store(&sr, &def, &rec, err)) {
            Value view = lang_record_view(&rec, &def, store_txn_now(txn));
            if (r->cur.rows++)
                lang_buf_putc(out, ',');
            lang_value_to_json(&view, out);
            lang_value_free(&view);
        }
        lang_record_free(&rec);
    }
    if (have)
        lang_table_def_free(&def);
    store_txn_abort(txn);
    if (*done || err->code)
        lang_buf_puts(out, "]\n");
    return err->code;
}

/* Goes on with the statement in progress; "*done" once its line ended. */
static LangErrorCode
current_step(LangSession *s, Buf *out, size_t room, bool block, bool *done, LangError *err)
{
    LangStream *r = s->stream;
    if (r->current->kind == ST_SELECT)
        return select_chunk(s, r->current, &r->cur, out, room, done, err);
    if (r->current->kind == ST_UPDATE)
        return update_chunk(s, r, out, room, done, err);
    int64_t left = r->deadline - store_now(s->store);
    Buf line = {0};
    *done = true;
    if (!lang_claim_wait_for(s, r->current, block ? left : 0, &line, err)) {
        *done = block || left <= 0 || strcmp(line.data, "[]") != 0;
        if (*done)
            add_line(out, line.data, line.len);
    }
    lang_buf_free(&line);
    return err->code;
}

/* Starts statement "st" (taking it): runs it, or makes it the statement in
 * progress when it is resumable. */
static LangErrorCode
rest_start(LangSession *s, Stmt *st, Buf *out, LangError *err)
{
    LangStream *r = s->stream;
    if (!resumable(s, st))
        return lang_session_statement(s, st, add_line, out, err);
    if (st->kind == ST_CLAIM) {
        int64_t now = store_now(s->store);
        if (lang_claim_wait_check(s, st, err)) {
            lang_stmt_free(st);
            return err->code;
        }
        if (__builtin_add_overflow(now, st->u.claim.wait_ns, &r->deadline))
            r->deadline = INT64_MAX;
    } else if (st->kind == ST_UPDATE) {
        r->cur.begun = false;
        r->cur.rows = 0;
        r->key_off = 0;
        if (update_keep_keys(s, st, &r->keys, err)) {
            lang_stmt_free(st);
            return err->code;
        }
    } else {
        lang_buf_reset(&r->cur.after);
        r->cur.begun = false;
        r->cur.rows = 0;
        r->cur.now = store_now(s->store);
    }
    r->current = st;
    return LANG_OK;
}

/* Runs what the session keeps until it is all done (the rest is freed),
 * an error ends it (freed too), or the statement in progress stops for
 * room or for a claim that would wait — unless "block" and nothing was
 * appended yet, when the claim waits. */
static LangErrorCode
rest_run(LangSession *s, Buf *out, size_t room, bool block, LangError *err)
{
    LangStream *r = s->stream;
    size_t start = out->len;
    while (!err->code) {
        if (r->current) {
            bool done;
            /* Lines already produced are read before a claim waits. */
            if (current_step(s, out, room, block && out->len == start, &done, err))
                break;
            if (!done)
                return LANG_OK;
            lang_stmt_free(r->current);
            r->current = NULL;
        } else if (r->next < r->n) {
            rest_start(s, r->stmts[r->next++], out, err);
        } else {
            if (r->parse_err.code)
                *err = r->parse_err;
            break;
        }
    }
    lang_stream_free(s);
    return err->code;
}

LangErrorCode
lang_session_start(LangSession *s, const char *text, size_t len, Buf *out, size_t room,
                   LangError *err)
{
    if (s->stream)
        return lang_error_set(err, LANG_SESSION_BUSY,
                              "the session's last result has not been read to its end");
    LangStream *r = lang_xcalloc(1, sizeof *r);
    Parser *p = lang_parser_new(text, len);
    Stmt *st;
    size_t cap = 0;
    while (lang_parser_next(p, &st, &r->parse_err) == 1) {
        if (r->n == cap) {
            cap = cap ? 2 * cap : 8;
            r->stmts = lang_xrealloc(r->stmts, cap * sizeof *r->stmts);
        }
        r->stmts[r->n++] = st;
    }
    lang_parser_free(p);
    s->stream = r;
    return rest_run(s, out, room, false, err);
}

LangErrorCode
lang_session_continue(LangSession *s, Buf *out, size_t room, bool block, LangError *err)
{
    if (!s->stream)
        return LANG_OK;
    return rest_run(s, out, room, block, err);
}
