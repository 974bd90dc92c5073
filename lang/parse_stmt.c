/* parse_stmt.c — statements: the rule of each statement, table names and
 * targets, and freeing a statement's tree (see parse.h and parse_state.h).
 *
 * Decisions beyond the grammar:
 *  - TIMEOUT, DEDUPLICATE and AT MOST … EVERY take a positive duration,
 *    ATTEMPTS a positive integer, AT MOST an integer from 1 to
 *    LANG_AT_MOST_MAX (1000000).
 *  - ALTER QUEUE takes every clause of DEFINE QUEUE, in any order, and
 *    DROP of each optional one: DROP ATTEMPTS, DROP DEDUPLICATE, DROP
 *    PRIORITY BY, DROP NOT BEFORE, DROP AT MOST PER, DROP AT MOST EVERY,
 *    DROP IN (SCHEMALESS undoes SCHEMAFULL).  DEFINE FIELD takes TYPE and REQUIRED in either order.
 *  - \u0000 is not allowed in consumer names. */
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

void
lang_stmt_free(Stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case ST_DEFINE_QUEUE:
    case ST_DEFINE_COLLECTION:
        free(s->u.define_table.name);
        free(s->u.define_table.priority_by);
        free(s->u.define_table.not_before);
        free(s->u.define_table.per_field);
        free(s->u.define_table.graph);
        break;
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
        target_free(&s->u.write.target);
        lang_expr_free(s->u.write.content);
        lang_expr_free(s->u.write.where);
        break;
    case ST_DELETE:
        target_free(&s->u.del.target);
        lang_expr_free(s->u.del.where);
        break;
    case ST_SELECT:
        for (size_t i = 0; i < s->u.select.nfields; i++) {
            lang_expr_free(s->u.select.fields[i].expr);
            free(s->u.select.fields[i].alias);
        }
        free(s->u.select.fields);
        target_free(&s->u.select.from);
        lang_expr_free(s->u.select.where);
        for (size_t i = 0; i < s->u.select.norder; i++)
            lang_parse_free_parts(s->u.select.order[i].parts, s->u.select.order[i].len);
        free(s->u.select.order);
        break;
    case ST_CLAIM:
        target_free(&s->u.claim.target);
        break;
    case ST_RELEASE:
    case ST_RELEASE_ALL:
    case ST_RETRY:
    case ST_RETRY_ALL:
    case ST_TOUCH:
        target_free(&s->u.release.target);
        lang_expr_free(s->u.release.where);
        lang_expr_free(s->u.release.not_before);
        free(s->u.release.for_consumer);
        break;
    case ST_USE_CONSUMER:
        free(s->u.use_consumer.name);
        break;
    case ST_BEGIN:
    case ST_COMMIT:
    case ST_CANCEL:
        break;
    case ST_INFO_TABLE:
    case ST_DROP:
    case ST_PAUSE:
    case ST_RESUME:
        free(s->u.table_op.table);
        break;
    case ST_ALTER_QUEUE:
        free(s->u.alter.table);
        free(s->u.alter.set.priority_by);
        free(s->u.alter.set.not_before);
        free(s->u.alter.set.per_field);
        free(s->u.alter.set.graph);
        break;
    }
    free(s);
}

/* ---- names and targets ---- */

/* tablename -> IDENT that lang_table_name_check accepts. */
static char *
table_name(ParseState *ps, const char *what)
{
    const Token *t = &ps->tok;
    if (t->kind != TK_IDENT) {
        lang_parse_expected(ps, what);
        return NULL;
    }
    LangError why = {0};
    if (lang_table_name_check(t->text, t->len, &why)) {
        lang_parse_error(ps, t, "%s", why.message);
        return NULL;
    }
    return lang_parse_name(ps, what);
}

/* pathtext -> path, kept as the text "a.b.c" */
static char *
path_text(ParseState *ps, const char *what)
{
    char **parts;
    size_t len;
    if (!lang_parse_path(ps, &parts, &len, what)) {
        lang_parse_free_parts(parts, len);
        return NULL;
    }
    Buf b = {0};
    for (size_t i = 0; i < len; i++) {
        if (i)
            lang_buf_putc(&b, '.');
        lang_buf_puts(&b, parts[i]);
    }
    lang_parse_free_parts(parts, len);
    return lang_buf_steal(&b);
}

/* target -> name [':' key] */
static bool
target(ParseState *ps, Target *t, const char *what)
{
    t->table = table_name(ps, what);
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

/* recordtarget -> name ':' key */
static bool
record_target(ParseState *ps, Target *t, const char *what)
{
    if (ps->tok.kind != TK_IDENT || peek(ps)->kind != TK_COLON) {
        lang_parse_expected(ps, what);
        return false;
    }
    return target(ps, t, what);
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

/* ---- statements ---- */

/* ifnotexists -> [IF NOT EXISTS] */
static bool
if_not_exists(ParseState *ps)
{
    if (!is_kw(&ps->tok, "IF") || !is_kw(peek(ps), "NOT"))
        return false;
    next(ps);
    next(ps);
    lang_parse_expect_kw(ps, "EXISTS", "EXISTS after IF NOT");
    return true;
}

/* duration -> DURATION   (positive; "clause" names what it follows) */
static bool
duration(ParseState *ps, int64_t *ns, const char *clause)
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
static bool
clause_once(ParseState *ps, bool given, const char *name)
{
    if (given) {
        lang_parse_error(ps, &ps->tok, "%s given twice", name);
        return false;
    }
    next(ps);
    return true;
}

/* tableclause -> SCHEMAFULL | SCHEMALESS | IN name
 * (shared by queues and collections; false when the token is none of them) */
static bool
table_clause(ParseState *ps, TableDecl *d)
{
    const Token *t = &ps->tok;
    if (is_kw(t, "SCHEMAFULL") || is_kw(t, "SCHEMALESS")) {
        SchemaMode m = is_kw(t, "SCHEMAFULL") ? SCHEMA_FULL : SCHEMA_LESS;
        if (d->schema != SCHEMA_UNSPECIFIED) {
            lang_parse_error(ps, t, "%s repeats the schema clause (%s was given already)",
                             m == SCHEMA_FULL ? "SCHEMAFULL" : "SCHEMALESS",
                             d->schema == SCHEMA_FULL ? "SCHEMAFULL" : "SCHEMALESS");
            return true;
        }
        d->schema = m;
        next(ps);
        return true;
    }
    if (is_kw(t, "IN")) {
        if (clause_once(ps, d->graph, "IN"))
            d->graph = lang_parse_name(ps, "a graph name after IN");
        return true;
    }
    return false;
}

/* Consumes the keyword that opens clause "bit" of a queue, unless it was
 * given already ("*given" holds the CLAUSE_* bits seen): then the error is
 * "<name> given twice". */
static bool
clause_bit(ParseState *ps, unsigned *given, unsigned bit, const char *name)
{
    if (*given & bit) {
        lang_parse_error(ps, &ps->tok, "%s given twice", name);
        return false;
    }
    *given |= bit;
    next(ps);
    return true;
}

/* atmost -> AT MOST INT (PER pathtext | EVERY duration)
 * (INT from 1 to LANG_AT_MOST_MAX) */
static const char *
at_most(ParseState *ps, TableDecl *d, unsigned *given)
{
    next(ps);
    if (!lang_parse_expect_kw(ps, "MOST", "MOST after AT"))
        return NULL;
    const Token *t = &ps->tok;
    if (t->kind != TK_INT || t->int_min || t->i <= 0) {
        lang_parse_expected(ps, "a positive integer after AT MOST");
        return NULL;
    }
    if (t->i > LANG_AT_MOST_MAX) {
        lang_parse_error(ps, t, "AT MOST %lld is above the greatest allowed, %d",
                         (long long)t->i, LANG_AT_MOST_MAX);
        return NULL;
    }
    int64_t n = t->i;
    next(ps);
    if (is_kw(&ps->tok, "PER")) {
        if (clause_bit(ps, given, CLAUSE_PER, "AT MOST … PER")) {
            d->per_group = n;
            d->per_field = path_text(ps, "a field name after AT MOST n PER");
        }
        return "AT MOST … PER";
    }
    if (is_kw(&ps->tok, "EVERY")) {
        if (clause_bit(ps, given, CLAUSE_EVERY, "AT MOST … EVERY") &&
            duration(ps, &d->rate_window_ns, "AT MOST n EVERY"))
            d->rate = n;
        return "AT MOST … EVERY";
    }
    lang_parse_expected(ps, "PER or EVERY after AT MOST n");
    return NULL;
}

/* queueclause -> PRIORITY BY pathtext | NOT BEFORE pathtext
 *              | DEDUPLICATE duration | atmost | SCHEMAFULL | SCHEMALESS | IN name
 * Each at most once ("*given": the CLAUSE_* bits seen).  The clause's name,
 * or NULL when the token opens none (nothing consumed, no error) or on an
 * error. */
static const char *
queue_clause(ParseState *ps, TableDecl *d, unsigned *given)
{
    const Token *t = &ps->tok;
    if (is_kw(t, "PRIORITY")) {
        if (clause_bit(ps, given, CLAUSE_PRIORITY_BY, "PRIORITY BY") &&
            lang_parse_expect_kw(ps, "BY", "BY after PRIORITY"))
            d->priority_by = path_text(ps, "a field name after PRIORITY BY");
        return "PRIORITY BY";
    }
    if (is_kw(t, "NOT")) {
        if (clause_bit(ps, given, CLAUSE_NOT_BEFORE, "NOT BEFORE") &&
            lang_parse_expect_kw(ps, "BEFORE", "BEFORE after NOT"))
            d->not_before = path_text(ps, "a field name after NOT BEFORE");
        return "NOT BEFORE";
    }
    if (is_kw(t, "DEDUPLICATE")) {
        if (clause_bit(ps, given, CLAUSE_DEDUPLICATE, "DEDUPLICATE"))
            duration(ps, &d->deduplicate_ns, "DEDUPLICATE");
        return "DEDUPLICATE";
    }
    if (is_kw(t, "AT"))
        return at_most(ps, d, given);
    bool schema = is_kw(t, "SCHEMAFULL") || is_kw(t, "SCHEMALESS");
    if (!schema && is_kw(t, "IN") && (*given & CLAUSE_IN)) {
        lang_parse_error(ps, t, "IN given twice");
        return NULL;
    }
    if (!table_clause(ps, d))
        return NULL;
    *given |= schema ? CLAUSE_SCHEMA : CLAUSE_IN;
    return schema ? "the schema clause" : "IN";
}

#define QUEUE_CLAUSES "PRIORITY BY, NOT BEFORE, DEDUPLICATE, AT MOST, SCHEMAFULL, SCHEMALESS, IN"

/* queuedef -> [IF NOT EXISTS] name TIMEOUT duration [ATTEMPTS INT] {queueclause} */
static void
define_queue(ParseState *ps, TableDecl *d)
{
    d->if_not_exists = if_not_exists(ps);
    if (FAILED(ps) || !(d->name = table_name(ps, "a queue name after DEFINE QUEUE")))
        return;
    if (!lang_parse_expect_kw(ps, "TIMEOUT",
                              "TIMEOUT after the queue name (a queue needs TIMEOUT)") ||
        !duration(ps, &d->timeout_ns, "TIMEOUT"))
        return;
    const char *last = "TIMEOUT";
    if (is_kw(&ps->tok, "ATTEMPTS")) {
        next(ps);
        if (ps->tok.kind != TK_INT || ps->tok.int_min || ps->tok.i <= 0) {
            lang_parse_expected(ps, "a positive integer after ATTEMPTS");
            return;
        }
        d->attempts = ps->tok.i;
        next(ps);
    }
    unsigned given = CLAUSE_TIMEOUT | CLAUSE_ATTEMPTS;
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        const char *clause;
        if (is_kw(t, "ATTEMPTS")) {
            lang_parse_error(ps, t, "ATTEMPTS must follow TIMEOUT, found it after %s", last);
        } else if (is_kw(t, "TIMEOUT")) {
            lang_parse_error(ps, t, "TIMEOUT given twice");
        } else if ((clause = queue_clause(ps, d, &given))) {
            last = clause;
        } else if (!FAILED(ps)) {
            lang_parse_expected(ps, "a queue clause (" QUEUE_CLAUSES ") or ';'");
        }
    }
}

/* tabledef -> [IF NOT EXISTS] name {SCHEMAFULL | SCHEMALESS | IN name} */
static void
define_collection(ParseState *ps, TableDecl *d)
{
    d->if_not_exists = if_not_exists(ps);
    if (FAILED(ps) || !(d->name = table_name(ps, "a collection name")))
        return;
    while (!FAILED(ps) && !at_end(ps)) {
        if (!table_clause(ps, d)) {
            lang_parse_expected(ps, "SCHEMAFULL, SCHEMALESS, IN or ';'");
            break;
        }
    }
}

/* on -> ON [TABLE] name */
static char *
on_table(ParseState *ps, const char *what)
{
    if (!lang_parse_expect_kw(ps, "ON", what))
        return NULL;
    if (is_kw(&ps->tok, "TABLE") && peek(ps)->kind == TK_IDENT)
        next(ps);
    return table_name(ps, "a table name after ON");
}

static const char *const type_names[] = {
    "any", "bool", "int", "float", "number", "string", "datetime", "duration",
    "object", "array", "record",
};

/* typename -> TYPE | OPTION '<' TYPE '>' */
static char *
type_name(ParseState *ps)
{
    static const char *const list =
        "a type (any, bool, int, float, number, string, datetime, duration, object, "
        "array, record or option<type>) after TYPE";
    bool option = is_kw(&ps->tok, "option") && peek(ps)->kind == TK_LT;
    int line = 0, col = 0;   /* where '<' opens */
    if (option) {
        next(ps);
        line = ps->tok.line;
        col = ps->tok.col;
        next(ps);
    }
    const char *found = NULL;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (is_kw(&ps->tok, type_names[i]))
            found = type_names[i];
    if (!found) {
        lang_parse_expected(ps, list);
        return NULL;
    }
    next(ps);
    if (!option)
        return lang_xstrdup(found);
    if (!lang_parse_check_match(ps, TK_GT, TK_LT, line, col))
        return NULL;
    Buf b = {0};
    lang_buf_printf(&b, "option<%s>", found);
    return lang_buf_steal(&b);
}

/* fielddef -> pathtext ON [TABLE] name [TYPE typename] [REQUIRED]
 *             (TYPE and REQUIRED in either order, each at most once) */
static void
define_field(ParseState *ps, Stmt *s)
{
    if (!(s->u.define_field.name = path_text(ps, "a field name after DEFINE FIELD")))
        return;
    if (!(s->u.define_field.table = on_table(ps, "ON after the field name")))
        return;
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        if (is_kw(t, "TYPE")) {
            if (clause_once(ps, s->u.define_field.type, "TYPE"))
                s->u.define_field.type = type_name(ps);
        } else if (is_kw(t, "REQUIRED")) {
            if (clause_once(ps, s->u.define_field.required, "REQUIRED"))
                s->u.define_field.required = true;
        } else {
            lang_parse_expected(ps, "TYPE, REQUIRED or ';'");
        }
    }
}

/* indexfield -> pathtext */
static bool
index_field(ParseState *ps, void *ctx)
{
    ParseItems *it = ctx;
    Stmt *s = it->node;
    char *f = path_text(ps, "a field name");
    if (!f)
        return false;
    GROW(s->u.define_index.fields, s->u.define_index.nfields, it->cap);
    s->u.define_index.fields[s->u.define_index.nfields++] = f;
    return true;
}

/* indexdef -> name ON [TABLE] name (FIELDS | COLUMNS) indexfield {',' indexfield} */
static void
define_index(ParseState *ps, Stmt *s)
{
    if (!(s->u.define_index.name = lang_parse_name(ps, "an index name after DEFINE INDEX")))
        return;
    if (!(s->u.define_index.table = on_table(ps, "ON after the index name")))
        return;
    if (!accept_kw(ps, "FIELDS") && !accept_kw(ps, "COLUMNS")) {
        lang_parse_expected(ps, "FIELDS after the table name");
        return;
    }
    ParseItems it = {s, 0};
    lang_parse_list(ps, TK_EOF, index_field, &it);
}

/* define -> DEFINE (QUEUE queuedef | (COLLECTION | TABLE) tabledef
 *                   | FIELD fielddef | INDEX indexdef) */
static void
define(ParseState *ps, Stmt *s)
{
    if (accept_kw(ps, "QUEUE")) {
        s->kind = ST_DEFINE_QUEUE;
        define_queue(ps, &s->u.define_table);
    } else if (accept_kw(ps, "COLLECTION") || accept_kw(ps, "TABLE")) {
        s->kind = ST_DEFINE_COLLECTION;
        define_collection(ps, &s->u.define_table);
    } else if (accept_kw(ps, "FIELD")) {
        s->kind = ST_DEFINE_FIELD;
        define_field(ps, s);
    } else if (accept_kw(ps, "INDEX")) {
        s->kind = ST_DEFINE_INDEX;
        define_index(ps, s);
    } else {
        lang_parse_expected(ps, "QUEUE, COLLECTION, TABLE, FIELD or INDEX after DEFINE");
    }
}

/* create -> CREATE target [('=' | CONTENT) expr] */
static void
create(ParseState *ps, Stmt *s)
{
    s->kind = ST_CREATE;
    s->u.write.mode = WRITE_NONE;
    if (!target(ps, &s->u.write.target, "a table or record id after CREATE"))
        return;
    if (accept(ps, TK_EQ) || accept_kw(ps, "CONTENT")) {
        s->u.write.mode = WRITE_CONTENT;
        s->u.write.content = lang_parse_expr(ps);
    } else if (!at_end(ps)) {
        lang_parse_expected(ps, "'=', CONTENT or ';' after the target");
    }
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

/* delete -> DELETE [FROM] target [WHERE expr] */
static void
delete(ParseState *ps, Stmt *s)
{
    s->kind = ST_DELETE;
    if (is_kw(&ps->tok, "FROM") && peek(ps)->kind == TK_IDENT)
        next(ps);
    if (!target(ps, &s->u.del.target, "a table or record id after DELETE"))
        return;
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
        s->u.claim.target.table = table_name(ps, "a queue name after FROM");
    } else if (is_kw(t, "FROM") && peek(ps)->kind == TK_IDENT) {
        next(ps);
        s->u.claim.target.table = table_name(ps, "a queue name after FROM");
    } else if (!record_target(ps, &s->u.claim.target,
                              "a count, FROM or a record id (table:key) after CLAIM")) {
        return;
    }
    if (!FAILED(ps) && s->u.claim.target.id.kind == VAL_NONE && accept_kw(ps, "WAIT")) {
        s->u.claim.wait_ns = INT64_MAX;
        if (ps->tok.kind == TK_DURATION && !duration(ps, &s->u.claim.wait_ns, "WAIT"))
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

/* release -> RELEASE ALL FROM name {relclause} | RELEASE record {relclause}
 * relclause -> NOT BEFORE expr | FOR CONSUMER consumer   (each at most once) */
static void
release(ParseState *ps, Stmt *s)
{
    s->kind = ST_RELEASE;
    if (is_kw(&ps->tok, "ALL") && is_kw(peek(ps), "FROM")) {
        s->kind = ST_RELEASE_ALL;
        next(ps);
        next(ps);
        if (!(s->u.release.target.table = table_name(ps, "a queue name after RELEASE ALL FROM")))
            return;
    } else if (!record_target(ps, &s->u.release.target,
                              "a record id (table:key) or ALL FROM after RELEASE")) {
        return;
    }
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        if (is_kw(t, "NOT")) {
            if (clause_once(ps, s->u.release.not_before, "NOT BEFORE") &&
                lang_parse_expect_kw(ps, "BEFORE", "BEFORE after NOT"))
                s->u.release.not_before = lang_parse_expr(ps);
        } else if (is_kw(t, "FOR")) {
            if (clause_once(ps, s->u.release.for_consumer, "FOR CONSUMER") &&
                lang_parse_expect_kw(ps, "CONSUMER", "CONSUMER after FOR"))
                s->u.release.for_consumer = consumer(ps, "a consumer name after FOR CONSUMER");
        } else {
            lang_parse_expected(ps, "NOT BEFORE, FOR CONSUMER or ';'");
        }
    }
}

/* retry -> RETRY ALL FROM name [WHERE expr] [NOT BEFORE expr]
 *        | RETRY record [NOT BEFORE expr] */
static void
retry(ParseState *ps, Stmt *s)
{
    s->kind = ST_RETRY;
    if (is_kw(&ps->tok, "ALL") && is_kw(peek(ps), "FROM")) {
        s->kind = ST_RETRY_ALL;
        next(ps);
        next(ps);
        if (!(s->u.release.target.table = table_name(ps, "a queue name after RETRY ALL FROM")))
            return;
        if (accept_kw(ps, "WHERE"))
            s->u.release.where = lang_parse_expr(ps);
    } else if (!record_target(ps, &s->u.release.target,
                              "a record id (table:key) or ALL FROM after RETRY")) {
        return;
    }
    if (!FAILED(ps) && accept_kw(ps, "NOT") &&
        lang_parse_expect_kw(ps, "BEFORE", "BEFORE after NOT"))
        s->u.release.not_before = lang_parse_expr(ps);
}

/* pause -> (PAUSE | RESUME) QUEUE name */
static void
pause_resume(ParseState *ps, Stmt *s, StmtKind kind, const char *what)
{
    s->kind = kind;
    if (lang_parse_expect_kw(ps, "QUEUE", what))
        s->u.table_op.table = table_name(ps, "a queue name");
}

/* dropclause -> ATTEMPTS | DEDUPLICATE | PRIORITY BY | NOT BEFORE
 *             | AT MOST (PER | EVERY) | IN
 * (after ALTER QUEUE's DROP: the clause is given, its value left absent) */
static void
alter_drop(ParseState *ps, unsigned *given)
{
    static const struct {
        const char *kw, *then, *name;   /* then: the word that must follow, or NULL */
        unsigned bit;
    } drops[] = {
        {"ATTEMPTS", NULL, "ATTEMPTS", CLAUSE_ATTEMPTS},
        {"DEDUPLICATE", NULL, "DEDUPLICATE", CLAUSE_DEDUPLICATE},
        {"PRIORITY", "BY", "PRIORITY BY", CLAUSE_PRIORITY_BY},
        {"NOT", "BEFORE", "NOT BEFORE", CLAUSE_NOT_BEFORE},
        {"PER", NULL, "AT MOST … PER", CLAUSE_PER},       /* after AT MOST */
        {"EVERY", NULL, "AT MOST … EVERY", CLAUSE_EVERY},  /* after AT MOST */
        {"IN", NULL, "IN", CLAUSE_IN},
    };
    bool at_most = is_kw(&ps->tok, "AT");
    if (at_most) {
        next(ps);
        if (!lang_parse_expect_kw(ps, "MOST", "MOST after DROP AT"))
            return;
    }
    for (size_t i = 0; i < sizeof drops / sizeof drops[0]; i++) {
        bool limit = drops[i].bit == CLAUSE_PER || drops[i].bit == CLAUSE_EVERY;
        if (limit != at_most || !is_kw(&ps->tok, drops[i].kw))
            continue;
        if (clause_bit(ps, given, drops[i].bit, drops[i].name) && drops[i].then) {
            char what[40];
            snprintf(what, sizeof what, "%s after DROP %s", drops[i].then, drops[i].kw);
            lang_parse_expect_kw(ps, drops[i].then, what);
        }
        return;
    }
    lang_parse_expected(ps, at_most ? "PER or EVERY after DROP AT MOST"
                                    : "ATTEMPTS, DEDUPLICATE, PRIORITY BY, NOT BEFORE, "
                                      "AT MOST PER, AT MOST EVERY or IN after DROP");
}

/* alter -> ALTER QUEUE name alterclause {alterclause}
 * alterclause -> TIMEOUT duration | ATTEMPTS INT | queueclause | DROP dropclause
 * (each clause at most once, in any order) */
static void
alter(ParseState *ps, Stmt *s)
{
    s->kind = ST_ALTER_QUEUE;
    TableDecl *d = &s->u.alter.set;
    unsigned *given = &s->u.alter.given;
    if (!lang_parse_expect_kw(ps, "QUEUE", "QUEUE after ALTER") ||
        !(s->u.alter.table = table_name(ps, "a queue name after ALTER QUEUE")))
        return;
    if (at_end(ps))
        lang_parse_expected(ps, "a clause (TIMEOUT, ATTEMPTS, " QUEUE_CLAUSES
                                " or DROP) after the queue name");
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        if (accept_kw(ps, "DROP")) {
            alter_drop(ps, given);
        } else if (is_kw(t, "TIMEOUT")) {
            if (clause_bit(ps, given, CLAUSE_TIMEOUT, "TIMEOUT"))
                duration(ps, &d->timeout_ns, "TIMEOUT");
        } else if (is_kw(t, "ATTEMPTS")) {
            if (!clause_bit(ps, given, CLAUSE_ATTEMPTS, "ATTEMPTS"))
                break;
            if (ps->tok.kind != TK_INT || ps->tok.int_min || ps->tok.i <= 0) {
                lang_parse_expected(ps, "a positive integer after ATTEMPTS");
                break;
            }
            d->attempts = ps->tok.i;
            next(ps);
        } else if (!queue_clause(ps, d, given) && !FAILED(ps)) {
            lang_parse_expected(ps, "TIMEOUT, ATTEMPTS, " QUEUE_CLAUSES ", DROP or ';'");
        }
    }
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
        s->u.table_op.table = table_name(ps, "a table name after INFO FOR TABLE");
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
    s->u.table_op.table = table_name(ps, "a table name after DROP");
}

/* statement -> define | create | update | delete | select | claim | release
 *            | touch | retry | pause | alter | use | (BEGIN | COMMIT | CANCEL) [TRANSACTION] | info | drop */
Stmt *
lang_parse_statement(ParseState *ps)
{
    Stmt *s = lang_xcalloc(1, sizeof *s);
    s->line = ps->tok.line;
    s->kind = ST_BEGIN;  /* owns nothing until a rule sets its kind */
    const Token *t = &ps->tok;
    if (t->kind != TK_IDENT || t->quoted) {
        lang_parse_expected(ps, "a statement");
    } else if (accept_kw(ps, "DEFINE")) {
        define(ps, s);
    } else if (accept_kw(ps, "CREATE")) {
        create(ps, s);
    } else if (accept_kw(ps, "UPDATE")) {
        update(ps, s);
    } else if (accept_kw(ps, "DELETE")) {
        delete(ps, s);
    } else if (accept_kw(ps, "SELECT")) {
        select_stmt(ps, s);
    } else if (accept_kw(ps, "CLAIM")) {
        claim(ps, s);
    } else if (accept_kw(ps, "RELEASE")) {
        release(ps, s);
    } else if (accept_kw(ps, "TOUCH")) {
        touch(ps, s);
    } else if (accept_kw(ps, "ALTER")) {
        alter(ps, s);
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
        lang_parse_expected(ps, "a statement (DEFINE, CREATE, UPDATE, DELETE, SELECT, CLAIM, "
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
