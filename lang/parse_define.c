/* parse_define.c — definitions: DEFINE QUEUE, DEFINE COLLECTION (or
 * TABLE), DEFINE FIELD and DEFINE INDEX, and ALTER QUEUE, with the clauses
 * of a queue (see parse.h and parse_state.h).
 *
 * Decisions beyond the grammar:
 *  - TIMEOUT, DEDUPLICATE, KEEP and AT MOST … EVERY take a positive duration,
 *    ATTEMPTS a positive integer, AT MOST an integer from 1 to
 *    LANG_AT_MOST_MAX (1000000).
 *  - ALTER QUEUE takes every clause of DEFINE QUEUE, in any order, and
 *    DROP of each optional one: DROP ATTEMPTS, DROP DEDUPLICATE, DROP
 *    PRIORITY BY, DROP NOT BEFORE, DROP AT MOST PER [f], DROP AT MOST
 *    EVERY, DROP KEEP, DROP COALESCE, DROP IN (SCHEMALESS undoes
 *    SCHEMAFULL).
 *  - AT MOST … PER may be given up to LANG_PER_MAX times, each of another
 *    field; in ALTER QUEUE each adds a key or changes its limit, and DROP
 *    AT MOST PER f drops one (without f: every one).
 *  - COALESCE and DEDUPLICATE refuse each other in one DEFINE QUEUE
 *    (ParseError); ALTER QUEUE refuses a queue left with both (exec).
 *  - DEFINE FIELD takes TYPE and REQUIRED in either order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "parse.h"
#include "parse_state.h"

/* ---- clauses ---- */

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
        if (lang_parse_clause_once(ps, d->graph, "IN"))
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
    bool was_given = *given & bit;
    *given |= bit;
    return lang_parse_clause_once(ps, was_given, name);
}

/* attempts -> INT   (positive; after ATTEMPTS) */
static bool
attempts(ParseState *ps, TableDecl *d)
{
    if (ps->tok.kind != TK_INT || ps->tok.int_min || ps->tok.i <= 0) {
        lang_parse_expected(ps, "a positive integer after ATTEMPTS");
        return false;
    }
    d->attempts = ps->tok.i;
    next(ps);
    return true;
}

/* True when "t" opens a clause of ALTER QUEUE. */
static bool
queue_clause_opens(const Token *t)
{
    static const char *const opens[] = {"TIMEOUT",     "ATTEMPTS",   "PRIORITY", "NOT",
                                        "DEDUPLICATE", "KEEP",       "COALESCE", "AT",
                                        "SCHEMAFULL",  "SCHEMALESS", "IN"};
    for (size_t i = 0; i < sizeof opens / sizeof *opens; i++)
        if (is_kw(t, opens[i]))
            return true;
    return false;
}

/* The clause of "d" whose field is "field", or -1. */
static int
per_key_of(const TableDecl *d, const char *field)
{
    for (size_t i = 0; i < d->nper; i++)
        if (d->per[i].field && field && strcmp(d->per[i].field, field) == 0)
            return (int)i;
    return -1;
}

/* Appends AT MOST "limit" PER the field that follows ("what" names it)
 * to "d": up to LANG_PER_MAX clauses, each of another field.  A "limit"
 * of 0 is ALTER's DROP AT MOST PER [field]: the field may be left out. */
static void
per_key(ParseState *ps, TableDecl *d, int64_t limit, const char *what)
{
    const Token *t = &ps->tok;
    char *field = NULL;
    if (limit || !(at_end(ps) || is_kw(t, "DROP") || queue_clause_opens(t)))
        if (!(field = path_text(ps, what)))
            return;
    if (d->nper == LANG_PER_MAX)
        lang_parse_error(ps, t, "at most %d AT MOST … PER clauses may be given", LANG_PER_MAX);
    else if (!field ? d->nper > 0 : d->nper && !d->per[d->nper - 1].field)
        lang_parse_error(ps, t,
                         "DROP AT MOST PER without a field drops every key: no other "
                         "AT MOST … PER may be given beside it");
    else if (per_key_of(d, field) >= 0)
        lang_parse_error(ps, t, "AT MOST … PER %s given twice", field);
    if (FAILED(ps)) {
        free(field);
        return;
    }
    d->per[d->nper++] = (PerKey){limit, field};
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
        lang_parse_error(ps, t, "AT MOST %lld is above the greatest allowed, %d", (long long)t->i,
                         LANG_AT_MOST_MAX);
        return NULL;
    }
    int64_t n = t->i;
    next(ps);
    if (is_kw(&ps->tok, "PER")) {
        next(ps);
        per_key(ps, d, n, "a field name after AT MOST n PER");
        *given |= CLAUSE_PER;
        return "AT MOST … PER";
    }
    if (is_kw(&ps->tok, "EVERY")) {
        if (clause_bit(ps, given, CLAUSE_EVERY, "AT MOST … EVERY") &&
            lang_parse_duration(ps, &d->rate_window_ns, "AT MOST n EVERY"))
            d->rate = n;
        return "AT MOST … EVERY";
    }
    lang_parse_expected(ps, "PER or EVERY after AT MOST n");
    return NULL;
}

/* queueclause -> PRIORITY BY pathtext | NOT BEFORE pathtext
 *              | DEDUPLICATE duration | atmost | KEEP duration | COALESCE
 *              | SCHEMAFULL | SCHEMALESS | IN name
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
            lang_parse_duration(ps, &d->deduplicate_ns, "DEDUPLICATE");
        return "DEDUPLICATE";
    }
    if (is_kw(t, "KEEP")) {
        if (clause_bit(ps, given, CLAUSE_KEEP, "KEEP"))
            lang_parse_duration(ps, &d->keep_ns, "KEEP");
        return "KEEP";
    }
    if (is_kw(t, "COALESCE")) {
        if (clause_bit(ps, given, CLAUSE_COALESCE, "COALESCE"))
            d->coalesce = true;
        return "COALESCE";
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

#define QUEUE_CLAUSES \
    "PRIORITY BY, NOT BEFORE, DEDUPLICATE, AT MOST, KEEP, COALESCE, SCHEMAFULL, SCHEMALESS, IN"

/* ---- DEFINE ---- */

/* queuedef -> [IF NOT EXISTS] name TIMEOUT duration [ATTEMPTS INT] {queueclause} */
static void
define_queue(ParseState *ps, TableDecl *d)
{
    d->if_not_exists = if_not_exists(ps);
    if (FAILED(ps) || !(d->name = lang_parse_table_name(ps, "a queue name after DEFINE QUEUE")))
        return;
    if (!lang_parse_expect_kw(ps, "TIMEOUT",
                              "TIMEOUT after the queue name (a queue needs TIMEOUT)") ||
        !lang_parse_duration(ps, &d->timeout_ns, "TIMEOUT"))
        return;
    const char *last = "TIMEOUT";
    if (is_kw(&ps->tok, "ATTEMPTS")) {
        next(ps);
        if (!attempts(ps, d))
            return;
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
    if (!FAILED(ps) && d->coalesce && d->deduplicate_ns)
        lang_parse_error(ps, &ps->tok,
                         "COALESCE and DEDUPLICATE refuse each other: a repeated CREATE is "
                         "either demand or a duplicate");
}

/* tabledef -> [IF NOT EXISTS] name {SCHEMAFULL | SCHEMALESS | IN name} */
static void
define_collection(ParseState *ps, TableDecl *d)
{
    d->if_not_exists = if_not_exists(ps);
    if (FAILED(ps) || !(d->name = lang_parse_table_name(ps, "a collection name")))
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
    return lang_parse_table_name(ps, "a table name after ON");
}

static const char *const type_names[] = {
    "any",      "bool",     "int",    "float", "number", "string",
    "datetime", "duration", "object", "array", "record",
};

/* typename -> TYPE | OPTION '<' TYPE '>' */
static char *
type_name(ParseState *ps)
{
    static const char *const list =
        "a type (any, bool, int, float, number, string, datetime, duration, object, "
        "array, record or option<type>) after TYPE";
    bool option = is_kw(&ps->tok, "option") && peek(ps)->kind == TK_LT;
    int line = 0, col = 0; /* where '<' opens */
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
    if (!(s->u.define_field.name = path_text(ps, "a field name after DEFINE FIELD")) ||
        !(s->u.define_field.table = on_table(ps, "ON after the field name")))
        return;
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        if (is_kw(t, "TYPE")) {
            if (lang_parse_clause_once(ps, s->u.define_field.type, "TYPE"))
                s->u.define_field.type = type_name(ps);
        } else if (is_kw(t, "REQUIRED")) {
            if (lang_parse_clause_once(ps, s->u.define_field.required, "REQUIRED"))
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
    if (!(s->u.define_index.name = lang_parse_name(ps, "an index name after DEFINE INDEX")) ||
        !(s->u.define_index.table = on_table(ps, "ON after the index name")))
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
void
lang_parse_define(ParseState *ps, Stmt *s)
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

/* ---- ALTER QUEUE ---- */

/* dropclause -> ATTEMPTS | DEDUPLICATE | PRIORITY BY | NOT BEFORE
 *             | AT MOST (PER | EVERY) | KEEP | COALESCE | IN
 * (after ALTER QUEUE's DROP: the clause is given, its value left absent;
 * DROP AT MOST PER [pathtext] appends the key with limit 0: see PerKey) */
static void
alter_drop(ParseState *ps, TableDecl *d, unsigned *given)
{
    static const struct {
        const char *kw, *then, *name; /* then: the word that must follow, or NULL */
        unsigned bit;
    } drops[] = {
        {"ATTEMPTS", NULL, "ATTEMPTS", CLAUSE_ATTEMPTS},
        {"DEDUPLICATE", NULL, "DEDUPLICATE", CLAUSE_DEDUPLICATE},
        {"PRIORITY", "BY", "PRIORITY BY", CLAUSE_PRIORITY_BY},
        {"NOT", "BEFORE", "NOT BEFORE", CLAUSE_NOT_BEFORE},
        {"EVERY", NULL, "AT MOST … EVERY", CLAUSE_EVERY}, /* after AT MOST */
        {"KEEP", NULL, "KEEP", CLAUSE_KEEP},
        {"COALESCE", NULL, "COALESCE", CLAUSE_COALESCE},
        {"IN", NULL, "IN", CLAUSE_IN},
    };
    bool at_most = is_kw(&ps->tok, "AT");
    if (at_most) {
        next(ps);
        if (!lang_parse_expect_kw(ps, "MOST", "MOST after DROP AT"))
            return;
        if (accept_kw(ps, "PER")) {
            per_key(ps, d, 0, "a field name after DROP AT MOST PER");
            *given |= CLAUSE_PER;
            return;
        }
    }
    for (size_t i = 0; i < sizeof drops / sizeof drops[0]; i++) {
        bool limit = drops[i].bit == CLAUSE_EVERY;
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
                                      "AT MOST PER, AT MOST EVERY, KEEP, COALESCE or IN "
                                      "after DROP");
}

/* alter -> ALTER QUEUE name alterclause {alterclause}
 * alterclause -> TIMEOUT duration | ATTEMPTS INT | queueclause | DROP dropclause
 * (each clause at most once, in any order) */
void
lang_parse_alter(ParseState *ps, Stmt *s)
{
    s->kind = ST_ALTER_QUEUE;
    TableDecl *d = &s->u.alter.set;
    unsigned *given = &s->u.alter.given;
    if (!lang_parse_expect_kw(ps, "QUEUE", "QUEUE after ALTER") ||
        !(s->u.alter.table = lang_parse_table_name(ps, "a queue name after ALTER QUEUE")))
        return;
    if (at_end(ps))
        lang_parse_expected(ps, "a clause (TIMEOUT, ATTEMPTS, " QUEUE_CLAUSES
                                " or DROP) after the queue name");
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        if (accept_kw(ps, "DROP")) {
            alter_drop(ps, d, given);
        } else if (is_kw(t, "TIMEOUT")) {
            if (clause_bit(ps, given, CLAUSE_TIMEOUT, "TIMEOUT"))
                lang_parse_duration(ps, &d->timeout_ns, "TIMEOUT");
        } else if (is_kw(t, "ATTEMPTS")) {
            if (clause_bit(ps, given, CLAUSE_ATTEMPTS, "ATTEMPTS"))
                attempts(ps, d);
        } else if (!queue_clause(ps, d, given) && !FAILED(ps)) {
            lang_parse_expected(ps, "TIMEOUT, ATTEMPTS, " QUEUE_CLAUSES ", DROP or ';'");
        }
    }
}
