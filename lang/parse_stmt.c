/* parse_stmt.c — statements: the rule of each statement but the
 * definitions (DEFINE and ALTER QUEUE: parse_define.c), targets, the
 * clause rules the two share, and freeing a statement's tree (see parse.h
 * and parse_state.h).
 *
 * Decisions beyond the grammar:
 *  - \u0000 is not allowed in consumer names.
 *  - A record named twice among the targets of DELETE or RELEASE is
 *    ParseError (the second would otherwise act on what the first left). */
#include <stdio.h>
#include <stdlib.h>

#include "lang.h"
#include "parse.h"
#include "parse_state.h"

static void
target_free(Target *t)
{
    free(t->table);
    t->table = NULL;
    lang_value_free(&t->id);
}

/* Frees a statement's target "t" and the expressions "a" and "b" that go
 * with it (NULL for none). */
static void
target_and_exprs_free(Target *t, Expr *a, Expr *b)
{
    target_free(t);
    lang_expr_free(a);
    lang_expr_free(b);
}

/* Frees the "n" targets "more" and the array holding them. */
static void
more_free(MoreTarget *more, size_t n)
{
    for (size_t i = 0; i < n; i++)
        target_free(&more[i].target);
    free(more);
}

void
lang_table_decl_free(TableDecl *d)
{
    free(d->name);
    free(d->priority_by);
    free(d->not_before);
    for (size_t i = 0; i < d->nper; i++)
        free(d->per[i].field);
    free(d->graph);
}

void
lang_stmt_free(Stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case ST_DEFINE_QUEUE:
    case ST_DEFINE_COLLECTION: lang_table_decl_free(&s->u.define_table); break;
    case ST_DEFINE_FIELD:
        free(s->u.define_field.name);
        free(s->u.define_field.table);
        free(s->u.define_field.type);
        break;
    case ST_DEFINE_INDEX:
        free(s->u.define_index.name);
        free(s->u.define_index.table);
        lang_parse_free_parts(s->u.define_index.fields, s->u.define_index.nfields);
        break;
    case ST_CREATE:
    case ST_UPDATE:
    case ST_UPSERT:
        target_and_exprs_free(&s->u.write.target, s->u.write.content, s->u.write.where);
        for (size_t i = 0; i < s->u.write.nafter; i++)
            target_free(&s->u.write.after[i]);
        free(s->u.write.after);
        break;
    case ST_DELETE:
        target_and_exprs_free(&s->u.del.target, s->u.del.where, NULL);
        more_free(s->u.del.more, s->u.del.nmore);
        break;
    case ST_SELECT:
        for (size_t i = 0; i < s->u.select.nfields; i++) {
            lang_expr_free(s->u.select.fields[i].expr);
            free(s->u.select.fields[i].alias);
        }
        free(s->u.select.fields);
        target_and_exprs_free(&s->u.select.from, s->u.select.where, NULL);
        for (size_t i = 0; i < s->u.select.norder; i++)
            lang_parse_free_parts(s->u.select.order[i].parts, s->u.select.order[i].len);
        free(s->u.select.order);
        break;
    case ST_CLAIM: target_free(&s->u.claim.target); break;
    case ST_RELEASE:
    case ST_RELEASE_ALL:
    case ST_RETRY:
    case ST_RETRY_ALL:
    case ST_TOUCH:
        target_and_exprs_free(&s->u.release.target, s->u.release.where, s->u.release.not_before);
        more_free(s->u.release.more, s->u.release.nmore);
        free(s->u.release.for_consumer);
        free(s->u.release.because);
        break;
    case ST_USE_CONSUMER: free(s->u.use_consumer.name); break;
    case ST_BEGIN:
    case ST_COMMIT:
    case ST_CANCEL: break;
    case ST_INFO_TABLE:
    case ST_DROP:
    case ST_PAUSE:
    case ST_RESUME: free(s->u.table_op.table); break;
    case ST_ALTER_QUEUE:
        free(s->u.alter.table);
        lang_table_decl_free(&s->u.alter.set); /* names no table: its name is NULL */
        break;
    }
    free(s);
}

/* ---- targets ---- */

/* target -> name [':' key] */
static bool
target(ParseState *ps, Target *t, const char *what)
{
    t->table = lang_parse_table_name(ps, what);
    if (!t->table)
        return false;
    if (accept(ps, TK_COLON)) {
        Value k = {0};
        if (!lang_parse_key(ps, &k, "a record key (integer, name or quoted string) after ':'"))
            return false;
        t->id = lang_value_record(t->table, k);
    }
    return true;
}

/* record -> name ':' key */
static bool
record_target(ParseState *ps, Target *t, const char *what)
{
    if (ps->tok.kind != TK_IDENT || peek(ps)->kind != TK_COLON) {
        lang_parse_expected(ps, what);
        return false;
    }
    return target(ps, t, what);
}

/* fence -> ['~' INT]: the number of a hold, positive, into "*hold" (0
 * when there is no '~'). */
static bool
fence(ParseState *ps, int64_t *hold)
{
    *hold = 0;
    if (!accept(ps, TK_TILDE))
        return true;
    if (ps->tok.kind != TK_INT || ps->tok.int_min || ps->tok.i <= 0) {
        lang_parse_expected(ps, "a hold number (a positive integer) after '~'");
        return false;
    }
    *hold = ps->tok.i;
    next(ps);
    return true;
}

/* Orders targets by table, then key (qsort). */
static int
target_order(const void *pa, const void *pb)
{
    const Target *a = *(const Target *const *)pa, *b = *(const Target *const *)pb;
    int c = strcmp(a->table, b->table);
    return c ? c : lang_value_compare(a->id.u.rec.key, b->id.u.rec.key);
}

/* ParseError when a record is among "first" and the "n" targets "more"
 * twice: "jobs:1 is named twice". */
static bool
named_once(ParseState *ps, const Target *first, const MoreTarget *more, size_t n)
{
    if (!n)
        return true;
    const Target **all = lang_xcalloc(n + 1, sizeof *all);
    all[0] = first;
    for (size_t i = 0; i < n; i++)
        all[i + 1] = &more[i].target;
    qsort(all, n + 1, sizeof *all, target_order);
    for (size_t i = 0; i < n; i++) {
        if (target_order(&all[i], &all[i + 1]) == 0) {
            Buf name = {0};
            lang_record_id_format(&all[i]->id.u.rec, &name);
            lang_parse_error(ps, &ps->tok, "%s is named twice", name.data);
            lang_buf_free(&name);
            break;
        }
    }
    free(all);
    return !FAILED(ps);
}

/* records -> record [fence] {',' record [fence]}, after a first record
 * "first" ("what" names what a record after ',' is): its fence into
 * "*hold", the records after it into "*more" ("*n" of them).  Each record
 * is named once. */
static bool
records(ParseState *ps, const Target *first, int64_t *hold, MoreTarget **more, size_t *n,
        const char *what)
{
    size_t cap = 0;
    if (!fence(ps, hold))
        return false;
    while (accept(ps, TK_COMMA)) {
        GROW(*more, *n, cap);
        MoreTarget *m = &(*more)[(*n)++];
        *m = (MoreTarget){0};
        if (!record_target(ps, &m->target, what) || !fence(ps, &m->fence))
            return false;
    }
    return named_once(ps, first, *more, *n);
}

/* consumer -> STRING | IDENT */
static char *
consumer(ParseState *ps, const char *what)
{
    if (ps->tok.kind != TK_STRING && ps->tok.kind != TK_IDENT) {
        lang_parse_expected(ps, what);
        return NULL;
    }
    char *s = lang_parse_cstring(ps, &ps->tok, "a consumer name");
    if (s)
        next(ps);
    return s;
}

/* because -> BECAUSE STRING: the reason a release gives, its first
 * STORE_MAX_REASON bytes (cut where a character begins). */
static char *
because(ParseState *ps)
{
    if (ps->tok.kind != TK_STRING) {
        lang_parse_expected(ps, "a string after BECAUSE");
        return NULL;
    }
    char *s = lang_parse_cstring(ps, &ps->tok, "a reason");
    if (s) {
        lang_utf8_cut(s, STORE_MAX_REASON);
        next(ps);
    }
    return s;
}

/* ---- clauses ---- */

/* duration -> DURATION   (positive; "clause" names what it follows) */
bool
lang_parse_duration(ParseState *ps, int64_t *ns, const char *clause)
{
    char what[80];
    if (ps->tok.kind != TK_DURATION) {
        snprintf(what, sizeof what, "a duration (such as 30s or 5m) after %s", clause);
        lang_parse_expected(ps, what);
        return false;
    }
    if (ps->tok.ns <= 0) {
        lang_parse_error(ps, &ps->tok, "%s must be a positive duration", clause);
        return false;
    }
    *ns = ps->tok.ns;
    next(ps);
    return true;
}

/* Consumes the keyword that opens a clause, unless the clause was "given"
 * already: then the error is "<name> given twice". */
bool
lang_parse_clause_once(ParseState *ps, bool given, const char *name)
{
    if (given) {
        lang_parse_error(ps, &ps->tok, "%s given twice", name);
        return false;
    }
    next(ps);
    return true;
}

/* ---- statements ---- */

/* after -> AFTER record {',' record}: the records a CREATE waits for, into
 * "*after" ("*n" of them). */
static bool
after_records(ParseState *ps, Target **after, size_t *n)
{
    size_t cap = 0;
    do {
        GROW(*after, *n, cap);
        Target *t = &(*after)[(*n)++];
        *t = (Target){0};
        if (!record_target(ps, t, "a record id (table:key) after AFTER or ','"))
            return false;
    } while (accept(ps, TK_COMMA));
    return true;
}

/* create -> CREATE target [('=' | CONTENT) expr] [after] */
static void
create(ParseState *ps, Stmt *s)
{
    s->kind = ST_CREATE;
    s->u.write.mode = WRITE_NONE;
    if (!target(ps, &s->u.write.target, "a table or record id after CREATE"))
        return;
    if (accept(ps, TK_EQ) || accept_kw(ps, "CONTENT")) {
        s->u.write.mode = WRITE_CONTENT;
        if (!(s->u.write.content = lang_parse_expr(ps)))
            return;
    }
    if (accept_kw(ps, "AFTER"))
        after_records(ps, &s->u.write.after, &s->u.write.nafter);
    else if (s->u.write.mode == WRITE_NONE && !at_end(ps))
        lang_parse_expected(ps, "'=', CONTENT, AFTER or ';' after the target");
}

/* update -> UPDATE target ('=' expr | CONTENT expr | MERGE expr) [WHERE expr] */
static void
update(ParseState *ps, Stmt *s)
{
    s->kind = ST_UPDATE;
    if (!target(ps, &s->u.write.target, "a table or record id after UPDATE"))
        return;
    if (accept(ps, TK_EQ) || accept_kw(ps, "CONTENT")) {
        s->u.write.mode = WRITE_CONTENT;
    } else if (accept_kw(ps, "MERGE")) {
        s->u.write.mode = WRITE_MERGE;
    } else {
        lang_parse_expected(ps, "'=', CONTENT or MERGE after the target");
        return;
    }
    if (!(s->u.write.content = lang_parse_expr(ps)))
        return;
    if (accept_kw(ps, "WHERE"))
        s->u.write.where = lang_parse_expr(ps);
}

/* delete -> DELETE [FROM] (name | records) [WHERE expr] */
static void delete (ParseState *ps, Stmt *s)
{
    s->kind = ST_DELETE;
    if (is_kw(&ps->tok, "FROM") && peek(ps)->kind == TK_IDENT)
        next(ps);
    Target *t = &s->u.del.target;
    if (!target(ps, t, "a table or record id after DELETE"))
        return;
    if (t->id.kind == VAL_RECORD && !records(ps, t, &s->u.del.fence, &s->u.del.more,
                                             &s->u.del.nmore, "a record id (table:key) after ','"))
        return;
    if (t->id.kind != VAL_RECORD && ps->tok.kind == TK_COMMA) {
        lang_parse_error(ps, &ps->tok,
                         "DELETE of several targets names records (table:key), not a table");
        return;
    }
    if (accept_kw(ps, "WHERE"))
        s->u.del.where = lang_parse_expr(ps);
}

/* selectfield -> expr [AS name] */
static bool
select_field(ParseState *ps, void *ctx)
{
    ParseItems *it = ctx;
    Stmt *s = it->node;
    Expr *e = lang_parse_expr(ps);
    if (!e)
        return false;
    GROW(s->u.select.fields, s->u.select.nfields, it->cap);
    SelectField *f = &s->u.select.fields[s->u.select.nfields++];
    f->expr = e;
    f->alias = NULL;
    return !accept_kw(ps, "AS") || (f->alias = lang_parse_name(ps, "a name after AS"));
}

/* order -> path [ASC | DESC] */
static bool
order_term(ParseState *ps, void *ctx)
{
    ParseItems *it = ctx;
    Stmt *s = it->node;
    GROW(s->u.select.order, s->u.select.norder, it->cap);
    OrderTerm *o = &s->u.select.order[s->u.select.norder++];
    o->descending = false;
    if (!lang_parse_path(ps, &o->parts, &o->len, "a field name after ORDER BY"))
        return false;
    if (accept_kw(ps, "DESC"))
        o->descending = true;
    else
        accept_kw(ps, "ASC");
    return true;
}

/* select -> SELECT ('*' | selectfield {',' selectfield}) FROM target
 *           [WHERE expr] [ORDER [BY] order {',' order}] [LIMIT INT] */
static void
select_stmt(ParseState *ps, Stmt *s)
{
    s->kind = ST_SELECT;
    s->u.select.limit = -1;
    if (accept(ps, TK_STAR)) {
        s->u.select.star = true;
    } else {
        if (is_kw(&ps->tok, "FROM") && peek(ps)->kind == TK_IDENT && !is_kw(peek(ps), "FROM")) {
            lang_parse_expected(ps, "'*' or a field list after SELECT");
            return;
        }
        ParseItems fields = {s, 0};
        if (!lang_parse_list(ps, TK_EOF, select_field, &fields))
            return;
    }
    if (!lang_parse_expect_kw(ps, "FROM", "FROM after the selected fields") ||
        !target(ps, &s->u.select.from, "a table or record id after FROM"))
        return;
    if (accept_kw(ps, "WHERE") && !(s->u.select.where = lang_parse_expr(ps)))
        return;
    if (accept_kw(ps, "ORDER")) {
        accept_kw(ps, "BY");
        ParseItems order = {s, 0};
        if (!lang_parse_list(ps, TK_EOF, order_term, &order))
            return;
    }
    if (accept_kw(ps, "LIMIT")) {
        if (ps->tok.kind != TK_INT || ps->tok.int_min) {
            lang_parse_expected(ps, "a non-negative integer after LIMIT");
            return;
        }
        s->u.select.limit = ps->tok.i;
        next(ps);
    }
}

/* claim -> CLAIM [INT] FROM name [WAIT [duration]] [EXPLAIN]
 *        | CLAIM record [EXPLAIN] */
static void
claim(ParseState *ps, Stmt *s)
{
    s->kind = ST_CLAIM;
    s->u.claim.count = 1;
    const Token *t = &ps->tok;
    if (t->kind == TK_MINUS && peek(ps)->kind == TK_INT) {
        lang_parse_error(ps, t, "CLAIM -%.*s is not a claim: the count must be positive",
                         (int)(peek(ps)->rawlen > 30 ? 30 : peek(ps)->rawlen), peek(ps)->raw);
        return;
    }
    if (t->kind == TK_INT) {
        if (t->int_min) {
            lang_parse_error(ps, t, "integer 9223372036854775808 is out of range");
            return;
        }
        if (t->i == 0) {
            lang_parse_error(ps, t, "CLAIM 0 is not a claim: the count must be positive");
            return;
        }
        s->u.claim.count = t->i;
        next(ps);
        if (!lang_parse_expect_kw(ps, "FROM", "FROM after the CLAIM count"))
            return;
        s->u.claim.target.table = lang_parse_table_name(ps, "a queue name after FROM");
    } else if (is_kw(t, "FROM") && peek(ps)->kind == TK_IDENT) {
        next(ps);
        s->u.claim.target.table = lang_parse_table_name(ps, "a queue name after FROM");
    } else if (!record_target(ps, &s->u.claim.target,
                              "a count, FROM or a record id (table:key) after CLAIM")) {
        return;
    }
    if (!FAILED(ps) && s->u.claim.target.id.kind == VAL_NONE && accept_kw(ps, "WAIT")) {
        s->u.claim.wait_ns = INT64_MAX;
        if (ps->tok.kind == TK_DURATION && !lang_parse_duration(ps, &s->u.claim.wait_ns, "WAIT"))
            return;
    }
    if (!FAILED(ps))
        s->u.claim.explain = accept_kw(ps, "EXPLAIN");
}

/* touch -> TOUCH record */
static void
touch(ParseState *ps, Stmt *s)
{
    s->kind = ST_TOUCH;
    record_target(ps, &s->u.release.target, "a record id (table:key) after TOUCH");
}

/* The target of RELEASE or RETRY: a record id ("what_record" names what
 * must follow), which makes "s" of kind "one", or ALL FROM name, a queue
 * ("what_queue"), which makes it of kind "all".  False after an error. */
static bool
all_or_record(ParseState *ps, Stmt *s, StmtKind one, StmtKind all, const char *what_queue,
              const char *what_record)
{
    s->kind = one;
    if (!is_kw(&ps->tok, "ALL") || !is_kw(peek(ps), "FROM"))
        return record_target(ps, &s->u.release.target, what_record);
    s->kind = all;
    next(ps);
    next(ps);
    return (s->u.release.target.table = lang_parse_table_name(ps, what_queue)) != NULL;
}

/* release -> RELEASE ALL FROM name {relclause} | RELEASE records {relclause}
 * relclause -> NOT BEFORE notbefore | FOR CONSUMER consumer | BECAUSE STRING
 *              (each at most once) */
static void
release(ParseState *ps, Stmt *s)
{
    if (!all_or_record(ps, s, ST_RELEASE, ST_RELEASE_ALL, "a queue name after RELEASE ALL FROM",
                       "a record id (table:key) or ALL FROM after RELEASE"))
        return;
    if (s->kind == ST_RELEASE &&
        !records(ps, &s->u.release.target, &s->u.release.fence, &s->u.release.more,
                 &s->u.release.nmore, "a record id (table:key) after ','"))
        return;
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        if (is_kw(t, "NOT")) {
            if (lang_parse_clause_once(ps, s->u.release.not_before, "NOT BEFORE") &&
                lang_parse_expect_kw(ps, "BEFORE", "BEFORE after NOT"))
                s->u.release.not_before = lang_parse_not_before(ps);
        } else if (is_kw(t, "FOR")) {
            if (lang_parse_clause_once(ps, s->u.release.for_consumer, "FOR CONSUMER") &&
                lang_parse_expect_kw(ps, "CONSUMER", "CONSUMER after FOR"))
                s->u.release.for_consumer = consumer(ps, "a consumer name after FOR CONSUMER");
        } else if (is_kw(t, "BECAUSE")) {
            if (lang_parse_clause_once(ps, s->u.release.because, "BECAUSE"))
                s->u.release.because = because(ps);
        } else {
            lang_parse_expected(ps, "NOT BEFORE, FOR CONSUMER, BECAUSE or ';'");
        }
    }
}

/* retry -> RETRY ALL FROM name [WHERE expr] [NOT BEFORE notbefore]
 *        | RETRY record [NOT BEFORE notbefore]
 * notbefore -> CRON STRING [IN STRING] | expr  (parse_expr.c) */
static void
retry(ParseState *ps, Stmt *s)
{
    if (!all_or_record(ps, s, ST_RETRY, ST_RETRY_ALL, "a queue name after RETRY ALL FROM",
                       "a record id (table:key) or ALL FROM after RETRY"))
        return;
    if (s->kind == ST_RETRY_ALL && accept_kw(ps, "WHERE"))
        s->u.release.where = lang_parse_expr(ps);
    if (!FAILED(ps) && accept_kw(ps, "NOT") &&
        lang_parse_expect_kw(ps, "BEFORE", "BEFORE after NOT"))
        s->u.release.not_before = lang_parse_not_before(ps);
}

/* pause -> (PAUSE | RESUME) QUEUE name */
static void
pause_resume(ParseState *ps, Stmt *s, StmtKind kind, const char *what)
{
    s->kind = kind;
    if (lang_parse_expect_kw(ps, "QUEUE", what))
        s->u.table_op.table = lang_parse_table_name(ps, "a queue name");
}

/* use -> USE CONSUMER consumer */
static void
use(ParseState *ps, Stmt *s)
{
    s->kind = ST_USE_CONSUMER;
    if (lang_parse_expect_kw(ps, "CONSUMER", "CONSUMER after USE"))
        s->u.use_consumer.name = consumer(ps, "a consumer name after USE CONSUMER");
}

/* info -> INFO FOR TABLE name */
static void
info(ParseState *ps, Stmt *s)
{
    s->kind = ST_INFO_TABLE;
    if (lang_parse_expect_kw(ps, "FOR", "FOR after INFO") &&
        lang_parse_expect_kw(ps, "TABLE", "TABLE after INFO FOR"))
        s->u.table_op.table = lang_parse_table_name(ps, "a table name after INFO FOR TABLE");
}

/* drop -> DROP (QUEUE | COLLECTION | TABLE) name */
static void
drop(ParseState *ps, Stmt *s)
{
    s->kind = ST_DROP;
    if (accept_kw(ps, "QUEUE"))
        s->u.table_op.kind = 1;
    else if (accept_kw(ps, "COLLECTION"))
        s->u.table_op.kind = 2;
    else if (accept_kw(ps, "TABLE"))
        s->u.table_op.kind = 0;
    else {
        lang_parse_expected(ps, "QUEUE, COLLECTION or TABLE after DROP");
        return;
    }
    s->u.table_op.table = lang_parse_table_name(ps, "a table name after DROP");
}

/* statement -> define | create | update | delete | select | claim | release
 *            | touch | retry | pause | alter | use | (BEGIN | COMMIT | CANCEL) [TRANSACTION] | info | drop */
Stmt *
lang_parse_statement(ParseState *ps)
{
    Stmt *s = lang_xcalloc(1, sizeof *s);
    s->line = ps->tok.line;
    s->kind = ST_BEGIN; /* owns nothing until a rule sets its kind */
    const Token *t = &ps->tok;
    if (t->kind != TK_IDENT || t->quoted) {
        lang_parse_expected(ps, "a statement");
    } else if (accept_kw(ps, "DEFINE")) {
        lang_parse_define(ps, s);
    } else if (accept_kw(ps, "CREATE")) {
        create(ps, s);
    } else if (accept_kw(ps, "UPDATE")) {
        update(ps, s);
    } else if (accept_kw(ps, "DELETE")) {
        delete (ps, s);
    } else if (accept_kw(ps, "SELECT")) {
        select_stmt(ps, s);
    } else if (accept_kw(ps, "CLAIM")) {
        claim(ps, s);
    } else if (accept_kw(ps, "RELEASE")) {
        release(ps, s);
    } else if (accept_kw(ps, "TOUCH")) {
        touch(ps, s);
    } else if (accept_kw(ps, "ALTER")) {
        lang_parse_alter(ps, s);
    } else if (accept_kw(ps, "RETRY")) {
        retry(ps, s);
    } else if (accept_kw(ps, "PAUSE")) {
        pause_resume(ps, s, ST_PAUSE, "QUEUE after PAUSE");
    } else if (accept_kw(ps, "RESUME")) {
        pause_resume(ps, s, ST_RESUME, "QUEUE after RESUME");
    } else if (accept_kw(ps, "USE")) {
        use(ps, s);
    } else if (accept_kw(ps, "INFO")) {
        info(ps, s);
    } else if (accept_kw(ps, "DROP")) {
        drop(ps, s);
    } else if (accept_kw(ps, "BEGIN")) {
        s->kind = ST_BEGIN;
        accept_kw(ps, "TRANSACTION");
    } else if (accept_kw(ps, "COMMIT")) {
        s->kind = ST_COMMIT;
        accept_kw(ps, "TRANSACTION");
    } else if (accept_kw(ps, "CANCEL")) {
        s->kind = ST_CANCEL;
        accept_kw(ps, "TRANSACTION");
    } else {
        lang_parse_expected(
            ps, "a statement (DEFINE, CREATE, UPDATE, DELETE, SELECT, CLAIM, "
                "RELEASE, TOUCH, RETRY, PAUSE, RESUME, ALTER, USE, BEGIN, COMMIT, CANCEL, "
                "INFO or DROP)");
    }
    if (!FAILED(ps) && !at_end(ps))
        lang_parse_expected(ps, "';' or end of text after the statement");
    if (FAILED(ps)) {
        lang_stmt_free(s);
        return NULL;
    }
    return s;
}
