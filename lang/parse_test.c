/* parse_test.c — the lexer and parser, case by case.
 *
 * Statements are rendered back as a compact canonical text (dump_stmt) and
 * compared with the expected rendering; literals are compared as JSON;
 * errors, written "ERROR: fragment", by a fragment of their message. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse.h"
#include "../tests/unit_test.h"

/* ---- rendering ---- */

static void dump_expr(const Expr *e, Buf *b);

static void
dump_value(const Value *v, Buf *b)
{
    switch (v->kind) {
    case VAL_NONE: lang_buf_puts(b, "NONE"); break;
    case VAL_RECORD: lang_record_id_format(&v->u.rec, b); break;
    case VAL_DURATION: lang_duration_format(v->u.ns, b); break;
    case VAL_DATETIME:
        lang_buf_puts(b, "d'");
        lang_datetime_format(v->u.ns, b);
        lang_buf_putc(b, '\'');
        break;
    default: lang_value_to_json(v, b); break;
    }
}

static const char *const op_names[] = {
    [OP_EQ] = "=",  [OP_NE] = "!=",   [OP_LT] = "<",    [OP_LE] = "<=",   [OP_GT] = ">",
    [OP_GE] = ">=", [OP_AND] = "and", [OP_OR] = "or",   [OP_ADD] = "+",   [OP_SUB] = "-",
    [OP_MUL] = "*", [OP_DIV] = "/",   [OP_NOT] = "not", [OP_NEG] = "neg",
};

static void
dump_path(char **parts, size_t len, Buf *b)
{
    for (size_t i = 0; i < len; i++) {
        if (i)
            lang_buf_putc(b, '.');
        lang_buf_puts(b, parts[i]);
    }
}

/* Appends the "n" expressions "items", separated by commas, and "close". */
static void
dump_exprs(Expr *const *items, size_t n, char close, Buf *b)
{
    for (size_t i = 0; i < n; i++) {
        lang_buf_puts(b, i ? "," : "");
        dump_expr(items[i], b);
    }
    lang_buf_putc(b, close);
}

static void
dump_expr(const Expr *e, Buf *b)
{
    switch (e->kind) {
    case EX_LITERAL: dump_value(&e->u.literal, b); break;
    case EX_FIELD: dump_path(e->u.path.parts, e->u.path.len, b); break;
    case EX_OBJECT:
        lang_buf_putc(b, '{');
        for (size_t i = 0; i < e->u.object.len; i++) {
            lang_buf_printf(b, "%s%s:", i ? "," : "", e->u.object.keys[i]);
            dump_expr(e->u.object.vals[i], b);
        }
        lang_buf_putc(b, '}');
        break;
    case EX_ARRAY:
        lang_buf_putc(b, '[');
        dump_exprs(e->u.array.items, e->u.array.len, ']', b);
        break;
    case EX_UNARY:
        lang_buf_printf(b, "(%s ", op_names[e->u.unary.op]);
        dump_expr(e->u.unary.arg, b);
        lang_buf_putc(b, ')');
        break;
    case EX_BINARY:
        lang_buf_printf(b, "(%s ", op_names[e->u.binary.op]);
        dump_expr(e->u.binary.lhs, b);
        lang_buf_putc(b, ' ');
        dump_expr(e->u.binary.rhs, b);
        lang_buf_putc(b, ')');
        break;
    case EX_CALL:
        lang_buf_printf(b, "%s(", e->u.call.name);
        dump_exprs(e->u.call.args, e->u.call.len, ')', b);
        break;
    }
}

static void
dump_target(const Target *t, Buf *b)
{
    if (t->id.kind == VAL_RECORD) {
        CHECK(strcmp(t->id.u.rec.table, t->table) == 0, "record table %s vs %s", t->id.u.rec.table,
              t->table);
        lang_record_id_format(&t->id.u.rec, b);
    } else {
        CHECK(t->id.kind == VAL_NONE, "table target id kind %d", t->id.kind);
        lang_buf_puts(b, t->table);
    }
}

/* The fence "fence" of a target (nothing for none), and the "n" targets
 * "more" after it, each with its own. */
static void
dump_fences(int64_t fence, const MoreTarget *more, size_t n, Buf *b)
{
    if (fence)
        lang_buf_printf(b, "~%" PRId64, fence);
    for (size_t i = 0; i < n; i++) {
        lang_buf_putc(b, ',');
        dump_target(&more[i].target, b);
        if (more[i].fence)
            lang_buf_printf(b, "~%" PRId64, more[i].fence);
    }
}

/* The optional clauses of "d" (after TIMEOUT). */
static void
dump_clauses(const TableDecl *d, Buf *b)
{
    if (d->attempts)
        lang_buf_printf(b, " attempts=%" PRId64, d->attempts);
    if (d->priority_by)
        lang_buf_printf(b, " priority=%s", d->priority_by);
    if (d->not_before)
        lang_buf_printf(b, " notbefore=%s", d->not_before);
    if (d->deduplicate_ns) {
        lang_buf_puts(b, " dedup=");
        lang_duration_format(d->deduplicate_ns, b);
    }
    for (size_t i = 0; i < d->nper; i++)
        lang_buf_printf(b, " per=%" PRId64 "/%s", d->per[i].limit,
                        d->per[i].field ? d->per[i].field : "*");
    if (d->rate) {
        lang_buf_printf(b, " every=%" PRId64 "/", d->rate);
        lang_duration_format(d->rate_window_ns, b);
    }
    if (d->keep_ns) {
        lang_buf_puts(b, " keep=");
        lang_duration_format(d->keep_ns, b);
    }
    if (d->coalesce)
        lang_buf_puts(b, " coalesce");
    if (d->schema == SCHEMA_FULL)
        lang_buf_puts(b, " full");
    if (d->schema == SCHEMA_LESS)
        lang_buf_puts(b, " less");
    if (d->graph)
        lang_buf_printf(b, " in=%s", d->graph);
}

/* Appends " word expr" when "e" is given. */
static void
dump_clause(const char *word, const Expr *e, Buf *b)
{
    if (!e)
        return;
    lang_buf_printf(b, " %s ", word);
    dump_expr(e, b);
}

static void
dump_stmt(const Stmt *s, Buf *b)
{
    const TableDecl *d = &s->u.define_table;
    switch (s->kind) {
    case ST_DEFINE_QUEUE:
    case ST_DEFINE_COLLECTION:
        lang_buf_printf(b, "%s %s", s->kind == ST_DEFINE_QUEUE ? "queue" : "collection", d->name);
        if (d->if_not_exists)
            lang_buf_puts(b, " ine");
        if (s->kind == ST_DEFINE_QUEUE) {
            lang_buf_puts(b, " timeout=");
            lang_duration_format(d->timeout_ns, b);
        } else {
            CHECK(d->timeout_ns == 0, "collection timeout %" PRId64, d->timeout_ns);
        }
        dump_clauses(d, b);
        break;
    case ST_DEFINE_FIELD:
        lang_buf_printf(b, "field %s on %s", s->u.define_field.name, s->u.define_field.table);
        if (s->u.define_field.type)
            lang_buf_printf(b, " type=%s", s->u.define_field.type);
        if (s->u.define_field.required)
            lang_buf_puts(b, " required");
        break;
    case ST_DEFINE_INDEX:
        lang_buf_printf(b, "index %s on %s fields=", s->u.define_index.name,
                        s->u.define_index.table);
        for (size_t i = 0; i < s->u.define_index.nfields; i++)
            lang_buf_printf(b, "%s%s", i ? "," : "", s->u.define_index.fields[i]);
        break;
    case ST_CREATE:
    case ST_UPDATE:
    case ST_UPSERT: /* the file view's; never parsed */
        lang_buf_puts(b, s->kind == ST_CREATE   ? "create "
                         : s->kind == ST_UPDATE ? "update "
                                                : "upsert ");
        dump_target(&s->u.write.target, b);
        if (s->u.write.mode == WRITE_NONE) {
            CHECK(s->u.write.content == NULL, "WRITE_NONE with content");
        } else {
            lang_buf_puts(b, s->u.write.mode == WRITE_MERGE ? " merge " : " content ");
            dump_expr(s->u.write.content, b);
        }
        dump_clause("where", s->u.write.where, b);
        for (size_t i = 0; i < s->u.write.nafter; i++) {
            lang_buf_puts(b, i ? "," : " after ");
            dump_target(&s->u.write.after[i], b);
        }
        break;
    case ST_DELETE:
        lang_buf_puts(b, "delete ");
        dump_target(&s->u.del.target, b);
        dump_fences(s->u.del.fence, s->u.del.more, s->u.del.nmore, b);
        dump_clause("where", s->u.del.where, b);
        break;
    case ST_SELECT:
        lang_buf_puts(b, "select ");
        if (s->u.select.star)
            lang_buf_puts(b, "*");
        for (size_t i = 0; i < s->u.select.nfields; i++) {
            if (i)
                lang_buf_putc(b, ',');
            dump_expr(s->u.select.fields[i].expr, b);
            if (s->u.select.fields[i].alias)
                lang_buf_printf(b, " as %s", s->u.select.fields[i].alias);
        }
        lang_buf_puts(b, " from ");
        dump_target(&s->u.select.from, b);
        dump_clause("where", s->u.select.where, b);
        if (s->u.select.norder)
            lang_buf_puts(b, " order ");
        for (size_t i = 0; i < s->u.select.norder; i++) {
            if (i)
                lang_buf_putc(b, ',');
            dump_path(s->u.select.order[i].parts, s->u.select.order[i].len, b);
            if (s->u.select.order[i].descending)
                lang_buf_puts(b, " desc");
        }
        if (s->u.select.limit >= 0)
            lang_buf_printf(b, " limit %" PRId64, s->u.select.limit);
        break;
    case ST_CLAIM:
        lang_buf_printf(b, "claim %" PRId64 " ", s->u.claim.count);
        if (s->u.claim.target.id.kind == VAL_NONE)
            lang_buf_puts(b, "from ");
        dump_target(&s->u.claim.target, b);
        if (s->u.claim.explain)
            lang_buf_puts(b, " explain");
        break;
    case ST_RELEASE:
    case ST_RELEASE_ALL:
    case ST_TOUCH:
        lang_buf_puts(b, s->kind == ST_RELEASE ? "release "
                         : s->kind == ST_TOUCH ? "touch "
                                               : "release all ");
        dump_target(&s->u.release.target, b);
        dump_fences(s->u.release.fence, s->u.release.more, s->u.release.nmore, b);
        dump_clause("notbefore", s->u.release.not_before, b);
        if (s->u.release.for_consumer)
            lang_buf_printf(b, " for %s", s->u.release.for_consumer);
        if (s->u.release.because)
            lang_buf_printf(b, " because %s", s->u.release.because);
        break;
    case ST_USE_CONSUMER: lang_buf_printf(b, "use %s", s->u.use_consumer.name); break;
    case ST_BEGIN: lang_buf_puts(b, "begin"); break;
    case ST_COMMIT: lang_buf_puts(b, "commit"); break;
    case ST_CANCEL: lang_buf_puts(b, "cancel"); break;
    case ST_INFO_TABLE: lang_buf_printf(b, "info %s", s->u.table_op.table); break;
    case ST_DROP: lang_buf_printf(b, "drop%d %s", s->u.table_op.kind, s->u.table_op.table); break;
    case ST_RETRY:
    case ST_RETRY_ALL:
        lang_buf_puts(b, s->kind == ST_RETRY ? "retry " : "retry all ");
        dump_target(&s->u.release.target, b);
        dump_clause("where", s->u.release.where, b);
        dump_clause("notbefore", s->u.release.not_before, b);
        break;
    case ST_ALTER_QUEUE: {
        /* the clauses given, by bit, then their values */
        static const char *const bits[] = {"timeout", "attempts", "priority", "notbefore",
                                           "dedup",   "per",      "every",    "schema",
                                           "in",      "keep",     "coalesce"};
        lang_buf_printf(b, "alter %s given=", s->u.alter.table);
        for (size_t i = 0, n = 0; i < sizeof bits / sizeof bits[0]; i++)
            if (s->u.alter.given & (1u << i))
                lang_buf_printf(b, "%s%s", n++ ? "," : "", bits[i]);
        if (s->u.alter.set.timeout_ns) {
            lang_buf_puts(b, " timeout=");
            lang_duration_format(s->u.alter.set.timeout_ns, b);
        }
        dump_clauses(&s->u.alter.set, b);
        break;
    }
    case ST_PAUSE:
    case ST_RESUME:
        lang_buf_printf(b, "%s %s", s->kind == ST_PAUSE ? "pause" : "resume", s->u.table_op.table);
        break;
    }
}

/* Parses all of "sql"; the statements rendered and joined by " | ", or
 * "ERROR: message" at the first error. */
static char *
parse_all(const char *sql, size_t len)
{
    Buf b = {0};
    Parser *p = lang_parser_new(sql, len);
    Stmt *s;
    LangError err = {0};
    int rc, n = 0;
    while ((rc = lang_parser_next(p, &s, &err)) == 1) {
        if (n++)
            lang_buf_puts(&b, " | ");
        dump_stmt(s, &b);
        lang_stmt_free(s);
    }
    if (rc < 0) {
        CHECK(err.code == LANG_PARSE_ERROR, "code %d", err.code);
        lang_buf_reset(&b);
        lang_buf_printf(&b, "ERROR: %s", err.message);
        /* the error sticks */
        LangError again = {0};
        CHECK(lang_parser_next(p, &s, &again) == -1 && s == NULL, "error not sticky: %s", sql);
    }
    lang_parser_free(p);
    return lang_buf_steal(&b);
}

/* True when "got" is "want", or, for a "want" of "ERROR: fragment", when
 * "got" is an error whose message contains the fragment. */
static bool
result_is(const char *got, const char *want)
{
    if (strncmp(want, "ERROR: ", 7) != 0)
        return strcmp(got, want) == 0;
    return strncmp(got, "ERROR: ", 7) == 0 && strstr(got + 7, want + 7);
}

/* ---- statements ---- */

static const struct {
    const char *sql, *want;
} stmt_cases[] = {
    /* every statement of seed 000 */
    {"DEFINE QUEUE jobs TIMEOUT 30s;", "queue jobs timeout=30s"},
    {"DEFINE COLLECTION notes;", "collection notes"},
    {"CREATE notes:2 = { attempts: 3, claimed_until: 'whenever' };",
     "create notes:2 content {attempts:3,claimed_until:\"whenever\"}"},
    {"CREATE jobs:9 = { url: 'd', claimed_until: 1 };",
     "create jobs:9 content {url:\"d\",claimed_until:1}"},
    {"CREATE jobs:1 = { url: 'a' };", "create jobs:1 content {url:\"a\"}"},
    {"CREATE jobs:2 = { url: 'b' };", "create jobs:2 content {url:\"b\"}"},
    {"CREATE jobs:3 = { url: 'c' };", "create jobs:3 content {url:\"c\"}"},
    {"CLAIM FROM jobs;", "claim 1 from jobs"},
    {"CLAIM FROM jobs;   -- rows 0, once everything is held", "claim 1 from jobs"},
    {"CLAIM 5 FROM jobs;", "claim 5 from jobs"},
    {"RELEASE jobs:1;", "release jobs:1"},
    {"DEFINE QUEUE later TIMEOUT 30s NOT BEFORE due;", "queue later timeout=30s notbefore=due"},
    {"CREATE later:1 = { job: 'resize' };", "create later:1 content {job:\"resize\"}"},
    {"CLAIM FROM later;", "claim 1 from later"},
    {"RELEASE later:1 NOT BEFORE 10m;", "release later:1 notbefore 10m"},
    {"RELEASE ALL FROM later NOT BEFORE 10m", "release all later notbefore 10m"},
    {"DEFINE QUEUE fast TIMEOUT 1ns ATTEMPTS 2;", "queue fast timeout=1ns attempts=2"},
    {"DEFINE QUEUE retries TIMEOUT 30s ATTEMPTS 5;", "queue retries timeout=30s attempts=5"},
    {"SELECT url FROM fast WHERE attempts >= 2;", "select url from fast where (>= attempts 2)"},
    {"DEFINE QUEUE alerts TIMEOUT 1m PRIORITY BY severity;",
     "queue alerts timeout=1m priority=severity"},
    {"DEFINE INDEX by_severity ON alerts FIELDS severity;",
     "index by_severity on alerts fields=severity"},
    {"DEFINE QUEUE mail TIMEOUT 5m ATTEMPTS 3 NOT BEFORE send_at;",
     "queue mail timeout=5m attempts=3 notbefore=send_at"},
    {"CREATE alerts = { severity: 2, text: 'disk at 80%' };",
     "create alerts content {severity:2,text:\"disk at 80%\"}"},
    {"CREATE alerts = { severity: 9, text: 'disk full' };",
     "create alerts content {severity:9,text:\"disk full\"}"},
    {"CREATE mail = { to: 'ada@example.test', send_at: time::from_unix(time::unix(time::now()) + 600) };",
     "create mail content {to:\"ada@example.test\",send_at:time::from_unix((+ time::unix(time::now()) 600))}"},
    {"CLAIM FROM alerts;", "claim 1 from alerts"},
    {"CLAIM FROM mail;", "claim 1 from mail"},
    {"DEFINE QUEUE ticks TIMEOUT 5m NOT BEFORE next;", "queue ticks timeout=5m notbefore=next"},
    {"CREATE ticks:1 = { job: 'cleanup', next: time::now() };",
     "create ticks:1 content {job:\"cleanup\",next:time::now()}"},
    {"CLAIM FROM ticks;", "claim 1 from ticks"},
    {"RELEASE ticks:1 NOT BEFORE 1h;", "release ticks:1 notbefore 1h"},
    {"DEFINE QUEUE reclaim TIMEOUT 1m DEDUPLICATE 10m;", "queue reclaim timeout=1m dedup=10m"},
    {"CREATE reclaim:'bucket/key' = { reason: 'overwritten' };",
     "create reclaim:'bucket/key' content {reason:\"overwritten\"}"},
    {"SELECT * FROM reclaim;", "select * from reclaim"},
    {"INFO FOR TABLE reclaim;", "info reclaim"},
    {"CLAIM jobs:1;", "claim 1 jobs:1"},
    {"USE CONSUMER 'billing';", "use billing"},
    {"TOUCH jobs:7;", "touch jobs:7"},
    {"RETRY jobs:7;", "retry jobs:7"},
    {"RETRY jobs:7 NOT BEFORE 10m;", "retry jobs:7 notbefore 10m"},
    {"RETRY ALL FROM jobs;", "retry all jobs"},
    {"PAUSE QUEUE jobs; RESUME QUEUE jobs;", "pause jobs | resume jobs"},
    {"ALTER QUEUE jobs TIMEOUT 5m ATTEMPTS 3;",
     "alter jobs given=timeout,attempts timeout=5m attempts=3"},
    {"ALTER QUEUE jobs DROP ATTEMPTS DEDUPLICATE 1m;", "alter jobs given=attempts,dedup dedup=1m"},
    {"DEFINE QUEUE crawl TIMEOUT 30s AT MOST 1 PER account AT MOST 4 PER host AT MOST 2 PER a.b",
     "queue crawl timeout=30s per=1/account per=4/host per=2/a.b"},
    {"ALTER QUEUE q ATTEMPTS 2 TIMEOUT 1s PRIORITY BY a.b NOT BEFORE due AT MOST 3 PER host "
     "AT MOST 5 EVERY 2s SCHEMAFULL IN g DEDUPLICATE 1h;",
     "alter q given=timeout,attempts,priority,notbefore,dedup,per,every,schema,in timeout=1s "
     "attempts=2 priority=a.b notbefore=due dedup=1h per=3/host every=5/2s full in=g"},
    {"ALTER QUEUE q DROP PRIORITY BY DROP NOT BEFORE DROP AT MOST PER DROP AT MOST EVERY "
     "DROP IN DROP DEDUPLICATE DROP ATTEMPTS SCHEMALESS;",
     "alter q given=attempts,priority,notbefore,dedup,per,every,schema,in per=0/* less"},
    {"ALTER QUEUE q DROP AT MOST PER host TIMEOUT 1s",
     "alter q given=timeout,per timeout=1s per=0/host"},
    {"ALTER QUEUE q DROP AT MOST PER TIMEOUT 1s", "alter q given=timeout,per timeout=1s per=0/*"},
    {"ALTER QUEUE q AT MOST 4 PER host DROP AT MOST PER a.b",
     "alter q given=per per=4/host per=0/a.b"},
    {"alter queue q at most 1 per account;", "alter q given=per per=1/account"},
    {"DEFINE QUEUE crawl TIMEOUT 1m AT MOST 2 PER host AT MOST 10 EVERY 1s;",
     "queue crawl timeout=1m per=2/host every=10/1s"},
    {"DEFINE QUEUE q TIMEOUT 1m ATTEMPTS 3 AT MOST 10 EVERY 1s PRIORITY BY p "
     "AT MOST 1 PER a.`b c` IN g;",
     "queue q timeout=1m attempts=3 priority=p per=1/a.b c every=10/1s in=g"},
    {"DEFINE QUEUE q TIMEOUT 30s KEEP 1d;", "queue q timeout=30s keep=1d"},
    {"DEFINE QUEUE q TIMEOUT 1m PRIORITY BY demand NOT BEFORE due COALESCE;",
     "queue q timeout=1m priority=demand notbefore=due coalesce"},
    {"DEFINE QUEUE q TIMEOUT 1m COALESCE KEEP 1h SCHEMALESS;",
     "queue q timeout=1m keep=1h coalesce less"},
    {"ALTER QUEUE q KEEP 10s DROP COALESCE;", "alter q given=keep,coalesce keep=10s"},
    {"ALTER QUEUE q DROP KEEP COALESCE;", "alter q given=keep,coalesce coalesce"},
    {"DEFINE QUEUE q TIMEOUT 1m AT MOST 1000000 EVERY 1ms;",
     "queue q timeout=1m every=1000000/1ms"},
    {"RELEASE jobs:7 FOR CONSUMER 'billing';", "release jobs:7 for billing"},
    {"RELEASE ALL FROM jobs;", "release all jobs"},
    {"RELEASE ALL FROM jobs FOR CONSUMER 'billing';", "release all jobs for billing"},
    {"DEFINE QUEUE jobs  TIMEOUT 30s SCHEMAFULL;", "queue jobs timeout=30s full"},
    {"DEFINE QUEUE tasks TIMEOUT 10m SCHEMAFULL IN work;", "queue tasks timeout=10m full in=work"},
    {"DEFINE FIELD url ON jobs TYPE string REQUIRED;", "field url on jobs type=string required"},
    {"UPDATE jobs:7 = { url: 'b' }", "update jobs:7 content {url:\"b\"}"},
    {"DROP QUEUE fast;", "drop1 fast"},

    /* DEFINE QUEUE clause order */
    {"DEFINE QUEUE q TIMEOUT 1s IN g SCHEMAFULL", "queue q timeout=1s full in=g"},
    {"DEFINE QUEUE q TIMEOUT 1s SCHEMALESS PRIORITY BY a.b DEDUPLICATE 1h NOT BEFORE at IN g",
     "queue q timeout=1s priority=a.b notbefore=at dedup=1h less in=g"},
    {"define queue if not exists q timeout 1h30m attempts 9 priority by p",
     "queue q ine timeout=1h30m attempts=9 priority=p"},
    {"DEFINE QUEUE `my-queue` TIMEOUT 500ms", "queue my-queue timeout=500ms"},
    {"DEFINE QUEUE q TIMEOUT 2µs", "queue q timeout=2us"},
    /* collections, fields, indexes */
    {"DEFINE TABLE t SCHEMAFULL IN g", "collection t full in=g"},
    {"DEFINE COLLECTION IF NOT EXISTS `my-notes` SCHEMALESS", "collection my-notes ine less"},
    {"DEFINE COLLECTION if", "collection if"},
    {"DEFINE FIELD a.b ON TABLE t TYPE option<int>", "field a.b on t type=option<int>"},
    {"DEFINE FIELD n ON t REQUIRED TYPE Datetime", "field n on t type=datetime required"},
    {"DEFINE FIELD n ON table", "field n on table"},
    {"DEFINE INDEX i ON TABLE t COLUMNS a, b.c", "index i on t fields=a,b.c"},
    /* writes */
    {"CREATE t", "create t"},
    {"CREATE t:abc CONTENT {}", "create t:abc content {}"},
    {"create t:\"x y\" content [1, -2, 3.5, -0.5, null, none, TRUE, false,]",
     "create t:'x y' content [1,-2,3.5,-0.5,null,NONE,true,false]"},
    {"UPDATE t MERGE { a: 1 } WHERE a = 2 AND NOT b OR !c",
     "update t merge {a:1} where (or (and (= a 2) (not b)) (not c))"},
    {"UPDATE t:1 CONTENT { ref: jobs:1, at: d'2026-12-01T08:00:00Z', r: r'jobs:x', k: r\"q:'a b'\" }",
     "update t:1 content {ref:jobs:1,at:d'2026-12-01T08:00:00Z',r:jobs:x,k:q:'a b'}"},
    {"DELETE FROM t WHERE x IS NOT NONE", "delete t where (!= x NONE)"},
    {"DELETE t:5", "delete t:5"},
    {"DELETE from", "delete from"},
    {"DELETE FROM from:1", "delete from:1"},
    {"SELECT from FROM t", "select from from t"},
    /* select */
    {"SELECT a.b AS x, c, 1 + 2 * -d FROM t:1", "select a.b as x,c,(+ 1 (* 2 (neg d))) from t:1"},
    {"SELECT * FROM t WHERE (a || b) && c != 'x' ORDER BY a DESC, b.c ASC, d LIMIT 10",
     "select * from t where (and (or a b) (!= c \"x\")) order a desc,b.c,d limit 10"},
    {"SELECT value, type, url FROM t ORDER x", "select value,type,url from t order x"},
    {"SELECT * FROM t WHERE a == 1 OR a < 2 OR a <= 3 OR a > 4 OR a / 2 - 1 = 0",
     "select * from t where (or (or (or (or (= a 1) (< a 2)) (<= a 3)) (> a 4)) (= (- (/ a 2) 1) 0))"},
    {"SELECT * FROM t WHERE x = -9223372036854775808",
     "select * from t where (= x -9223372036854775808)"},
    /* claim, release, consumer, transactions */
    {"CLAIM 5000 FROM jobs EXPLAIN", "claim 5000 from jobs explain"},
    {"CLAIM jobs:'a/b' EXPLAIN", "claim 1 jobs:'a/b'"
                                 " explain"},
    {"claim from:1", "claim 1 from:1"},
    {"RELEASE jobs:1 FOR CONSUMER billing NOT BEFORE time::now() + 1h",
     "release jobs:1 notbefore (+ time::now() 1h) for billing"},
    {"RELEASE ALL FROM q FOR CONSUMER 'b' NOT BEFORE d'2026-01-01'",
     "release all q notbefore d'2026-01-01T00:00:00Z' for b"},
    {"RELEASE all:1", "release all:1"},
    /* CREATE … AFTER */
    {"CREATE q:8 = {n: 1} AFTER q:7, other:'a b'",
     "create q:8 content {n:1} after q:7,other:'a b'"},
    {"CREATE q AFTER q:1", "create q after q:1"},
    {"create q:2 content {} after q:1;", "create q:2 content {} after q:1"},
    /* NOT BEFORE CRON: a call of time::cron, its expression checked */
    {"RELEASE ticks:1 NOT BEFORE CRON '0 3 * * *';",
     "release ticks:1 notbefore time::cron(\"0 3 * * *\")"},
    {"RELEASE ticks:1 NOT BEFORE cron '30 9 * * mon' IN 'Asia/Tokyo' BECAUSE 'tick';",
     "release ticks:1 notbefore time::cron(\"30 9 * * mon\",\"Asia/Tokyo\") because tick"},
    {"RELEASE ticks:1, ticks:2 NOT BEFORE CRON '*/15 * * * *'",
     "release ticks:1,ticks:2 notbefore time::cron(\"*/15 * * * *\")"},
    {"RELEASE ALL FROM ticks NOT BEFORE CRON '0 3 * * *' IN 'UTC'",
     "release all ticks notbefore time::cron(\"0 3 * * *\",\"UTC\")"},
    {"RETRY ticks:1 NOT BEFORE CRON '0 3 1 jan *'",
     "retry ticks:1 notbefore time::cron(\"0 3 1 jan *\")"},
    {"RETRY ALL FROM ticks WHERE a = 1 NOT BEFORE CRON '0 3 * * *' IN 'Europe/Berlin'",
     "retry all ticks where (= a 1) notbefore time::cron(\"0 3 * * *\",\"Europe/Berlin\")"},
    {"RELEASE ticks:1 NOT BEFORE cron", "release ticks:1 notbefore cron"},
    {"RELEASE ticks:1 NOT BEFORE time::cron('0 3 * * *', 'Asia/Tokyo') + 1m",
     "release ticks:1 notbefore (+ time::cron(\"0 3 * * *\",\"Asia/Tokyo\") 1m)"},
    {"CREATE ticks:1 = { next: time::cron('0 3 * * *') }",
     "create ticks:1 content {next:time::cron(\"0 3 * * *\")}"},
    /* several targets, fences (q:7~N) */
    {"DELETE q:1, q:2, other:'a b'", "delete q:1,q:2,other:'a b'"},
    {"DELETE FROM q:1~5, q:2 WHERE x = 1", "delete q:1~5,q:2 where (= x 1)"},
    {"DELETE q:7~1042", "delete q:7~1042"},
    {"delete q:1,q:2~3,q:abc", "delete q:1,q:2~3,q:abc"},
    {"RELEASE q:1, q:2~9 NOT BEFORE 10m BECAUSE 'HTTP 503'",
     "release q:1,q:2~9 notbefore 10m because HTTP 503"},
    {"RELEASE q:1~4, r:'x y' FOR CONSUMER b", "release q:1~4,r:'x y' for b"},
    {"RELEASE q:1, q:'1'", "release q:1,q:'1'"},
    {"USE CONSUMER billing", "use billing"},
    {"BEGIN; BEGIN TRANSACTION; COMMIT; commit transaction; CANCEL; Cancel Transaction",
     "begin | begin | commit | commit | cancel | cancel"},
    {"DROP TABLE a; DROP COLLECTION b; drop queue c", "drop0 a | drop2 b | drop1 c"},
    /* blanks, comments, stray semicolons */
    {"", ""},
    {" ;; -- nothing\n # nor this\n /* nor \n this */ ;", ""},
    {";;CLAIM FROM a;;; CLAIM FROM b /* x */ ; -- end", "claim 1 from a | claim 1 from b"},
    {"SELECT * FROM t WHERE a = 5--3", "select * from t where (= a 5)"},
    /* statements that fail: "ERROR: " and a fragment the message must contain */
    {"RELEASE ticks:1 NOT BEFORE CRON '0 0 30 2 *'",
     "ERROR: cron expression '0 0 30 2 *': no month it names has a day it names: it never matches "
     "at line 1, column 33"},
    {"RELEASE ticks:1 NOT BEFORE CRON '61 * * * *';",
     "ERROR: minute field: 61 is out of range 0-59 at line 1, column 33"},
    {"RETRY ticks:1 NOT BEFORE CRON '* * * *'", "ERROR: five fields"},
    {"RELEASE ticks:1 NOT BEFORE CRON '0 3 * * *' IN", "ERROR: expected a time zone name"},
    {"RELEASE ticks:1 NOT BEFORE CRON '0 3 * * *' IN Europe",
     "ERROR: expected a time zone name (a string) after IN, found 'Europe'"},
    {"RELEASE ticks:1 NOT BEFORE CRON '0 3 * * *' IN 'UTC' IN 'UTC'",
     "ERROR: expected NOT BEFORE, FOR CONSUMER, BECAUSE or ';'"},
    {"RELEASE ticks:1 NOT BEFORE CRON 'a\\u0000b'", "ERROR: NUL"},
    {"DEFINE QUEUE q TIMEOUT 1s PRIORITY BY p ATTEMPTS 3",
     "ERROR: ATTEMPTS must follow TIMEOUT, found it after PRIORITY BY at line 1, column 41"},
    {"DEFINE QUEUE q TIMEOUT 1s SCHEMAFULL SCHEMAFULL",
     "ERROR: SCHEMAFULL repeats the schema clause"},
    {"DEFINE QUEUE q TIMEOUT 1s SCHEMAFULL SCHEMALESS",
     "ERROR: SCHEMALESS repeats the schema clause (SCHEMAFULL was given already) at line 1, column 38"},
    {"DEFINE QUEUE q TIMEOUT 1s IN a IN b", "ERROR: IN given twice"},
    {"DEFINE QUEUE q TIMEOUT 1s NOT BEFORE a NOT BEFORE b", "ERROR: NOT BEFORE given twice"},
    {"DEFINE QUEUE q TIMEOUT 1s DEDUPLICATE 1s DEDUPLICATE 2s", "ERROR: DEDUPLICATE given twice"},
    {"DEFINE QUEUE q TIMEOUT 1s TIMEOUT 2s", "ERROR: TIMEOUT given twice"},
    {"DEFINE QUEUE jobs;",
     "ERROR: expected TIMEOUT after the queue name (a queue needs TIMEOUT), found ';' at line 1, column 18"},
    {"DEFINE QUEUE jobs ATTEMPTS 3 TIMEOUT 1s", "ERROR: a queue needs TIMEOUT"},
    {"DEFINE QUEUE jobs TIMEOUT 30",
     "ERROR: expected a duration (such as 30s or 5m) after TIMEOUT, found '30'"},
    {"DEFINE QUEUE jobs TIMEOUT 0s", "ERROR: TIMEOUT must be a positive duration"},
    {"DEFINE QUEUE jobs TIMEOUT 1s ATTEMPTS 0",
     "ERROR: expected a positive integer after ATTEMPTS, found '0'"},
    {"DEFINE QUEUE jobs TIMEOUT 1s ATTEMPTS -1",
     "ERROR: expected a positive integer after ATTEMPTS"},
    {"DEFINE QUEUE jobs TIMEOUT 1s WIBBLE", "ERROR: expected a queue clause"},
    {"DEFINE QUEUE jobs TIMEOUT 5x", "ERROR: invalid number or duration '5x'"},
    {"DEFINE QUEUE IF NOT q TIMEOUT 1s", "ERROR: expected EXISTS after IF NOT, found 'q'"},
    {"DEFINE COLLECTION c TIMEOUT 1s", "ERROR: expected SCHEMAFULL, SCHEMALESS, IN or ';'"},
    {"DEFINE FIELD f ON t TYPE thing", "ERROR: expected a type (any, bool, int"},
    {"DEFINE FIELD f ON t TYPE option<int",
     "ERROR: '>' expected (to close '<' at line 1, column 32), found end of text"},
    {"DEFINE FIELD f t", "ERROR: expected ON after the field name, found 't'"},
    {"DEFINE INDEX i ON t",
     "ERROR: expected FIELDS after the table name, found end of text at line 1, column 20"},
    {"DEFINE VIEW v",
     "ERROR: expected QUEUE, COLLECTION, TABLE, FIELD or INDEX after DEFINE, found 'VIEW'"},
    {"CLAIM 0 FROM jobs", "ERROR: CLAIM 0 is not a claim"},
    {"CLAIM -3 FROM jobs", "ERROR: CLAIM -3 is not a claim"},
    {"CLAIM jobs",
     "ERROR: expected a count, FROM or a record id (table:key) after CLAIM, found 'jobs'"},
    {"CLAIM 2 jobs", "ERROR: expected FROM after the CLAIM count"},
    {"TOUCH jobs", "ERROR: expected a record id (table:key) after TOUCH, found 'jobs'"},
    {"RETRY jobs", "ERROR: expected a record id (table:key) or ALL FROM after RETRY"},
    {"PAUSE jobs", "ERROR: expected QUEUE after PAUSE"},
    {"ALTER QUEUE jobs", "ERROR: expected a clause (TIMEOUT, ATTEMPTS, PRIORITY BY, NOT BEFORE, "
                         "DEDUPLICATE, AT MOST, KEEP, COALESCE, SCHEMAFULL, SCHEMALESS, IN or "
                         "DROP) after the queue name"},
    {"DEFINE QUEUE q TIMEOUT 1m KEEP 0s", "ERROR: "},
    {"DEFINE QUEUE q TIMEOUT 1m KEEP 1h KEEP 2h", "ERROR: KEEP given twice"},
    {"DEFINE QUEUE q TIMEOUT 1m COALESCE COALESCE", "ERROR: COALESCE given twice"},
    {"DEFINE QUEUE q TIMEOUT 1m DEDUPLICATE 1h COALESCE",
     "ERROR: COALESCE and DEDUPLICATE refuse each other"},
    {"ALTER QUEUE jobs TIMEOUT 1m TIMEOUT 2m", "ERROR: TIMEOUT given twice at line 1, column 29"},
    {"ALTER QUEUE jobs DROP TIMEOUT",
     "ERROR: expected ATTEMPTS, DEDUPLICATE, PRIORITY BY, NOT BEFORE, "
     "AT MOST PER, AT MOST EVERY, KEEP, COALESCE or IN after DROP"},
    {"ALTER QUEUE jobs DROP ATTEMPTS ATTEMPTS 3", "ERROR: ATTEMPTS given twice"},
    {"ALTER QUEUE jobs AT MOST 1 PER a DROP AT MOST PER",
     "ERROR: DROP AT MOST PER without a field drops every key: no other AT MOST … PER may be "
     "given beside it"},
    {"ALTER QUEUE jobs AT MOST 1 PER a DROP AT MOST PER a", "ERROR: AT MOST … PER a given twice"},
    {"ALTER QUEUE jobs DROP IN IN g", "ERROR: IN given twice"},
    {"ALTER QUEUE jobs DROP PRIORITY", "ERROR: expected BY after DROP PRIORITY, found end of text"},
    {"ALTER QUEUE jobs DROP AT MOST 3",
     "ERROR: expected PER or EVERY after DROP AT MOST, found '3'"},
    {"ALTER QUEUE jobs WIBBLE", "ERROR: expected TIMEOUT, ATTEMPTS, PRIORITY BY"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 0 PER a",
     "ERROR: expected a positive integer after AT MOST, found '0'"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST -1 PER a",
     "ERROR: expected a positive integer after AT MOST"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 1.5 PER a",
     "ERROR: expected a positive integer after AT MOST"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 1000001 EVERY 1s",
     "ERROR: AT MOST 1000001 is above the greatest allowed, 1000000 at line 1, column 35"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 2",
     "ERROR: expected PER or EVERY after AT MOST n, found end of text"},
    {"DEFINE QUEUE q TIMEOUT 1s AT LEAST 2 PER a", "ERROR: expected MOST after AT, found 'LEAST'"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 2 PER", "ERROR: expected a field name after AT MOST n PER"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 2 EVERY 10",
     "ERROR: expected a duration (such as 30s or 5m) after AT MOST n EVERY"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 2 EVERY 0s",
     "ERROR: AT MOST n EVERY must be a positive duration"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 1 PER a AT MOST 2 PER a",
     "ERROR: AT MOST … PER a given twice"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 1 PER a AT MOST 1 PER b AT MOST 1 PER c AT MOST 1 PER d "
     "AT MOST 1 PER e",
     "ERROR: at most 4 AT MOST … PER clauses may be given"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 1 EVERY 1s AT MOST 2 EVERY 1m",
     "ERROR: AT MOST … EVERY given twice"},
    {"DEFINE QUEUE q TIMEOUT 1s AT MOST 1 PER a ATTEMPTS 2",
     "ERROR: ATTEMPTS must follow TIMEOUT, found it after AT MOST … PER"},
    {"CLAIM FROM jobs:1", "ERROR: expected ';' or end of text after the statement, found ':'"},
    {"RELEASE jobs", "ERROR: expected a record id (table:key) or ALL FROM after RELEASE"},
    {"RELEASE jobs:1 NOT BEFORE 1m NOT BEFORE 2m", "ERROR: NOT BEFORE given twice"},
    {"RELEASE jobs:1 FOR CONSUMER 'a' FOR CONSUMER 'b'", "ERROR: FOR CONSUMER given twice"},
    {"RELEASE jobs:1 FOR CONSUMER 'a\\u0000b'",
     "ERROR: a consumer name cannot contain a NUL character"},
    {"RELEASE jobs:1 LATER", "ERROR: expected NOT BEFORE, FOR CONSUMER, BECAUSE or ';'"},
    {"RELEASE jobs:1 BECAUSE", "ERROR: expected a string after BECAUSE"},
    {"RELEASE jobs:1 BECAUSE 'a' BECAUSE 'b'", "ERROR: BECAUSE given twice"},
    {"RELEASE jobs:1 BECAUSE reason", "ERROR: expected a string after BECAUSE"},
    {"DELETE q:1, q", "ERROR: expected a record id (table:key) after ',', found 'q'"},
    {"DELETE q:1,", "ERROR: expected a record id (table:key) after ',', found end of text"},
    {"DELETE q, q:1", "ERROR: DELETE of several targets names records (table:key), not a table"},
    {"DELETE q~1", "ERROR: expected ';' or end of text after the statement, found '~'"},
    {"DELETE q:1~", "ERROR: expected a hold number (a positive integer) after '~', found end"},
    {"DELETE q:1~0", "ERROR: expected a hold number (a positive integer) after '~', found '0'"},
    {"DELETE q:1~-2", "ERROR: expected a hold number (a positive integer) after '~', found '-'"},
    {"DELETE q:1~x", "ERROR: expected a hold number (a positive integer) after '~', found 'x'"},
    {"DELETE q:1, q:2, q:1~3", "ERROR: q:1 is named twice"},
    {"CREATE q:8 AFTER q", "ERROR: expected a record id (table:key) after AFTER or ','"},
    {"CREATE q:8 = {} AFTER q:1,", "ERROR: expected a record id (table:key) after AFTER or ','"},
    {"CREATE q:8 = {} AFTER", "ERROR: expected a record id (table:key) after AFTER or ','"},
    {"CREATE q:8 q:1", "ERROR: expected '=', CONTENT, AFTER or ';' after the target"},
    {"RELEASE q:'a b', r:1, q:'a b'", "ERROR: q:'a b' is named twice"},
    {"RELEASE q:1 q:2", "ERROR: expected NOT BEFORE, FOR CONSUMER, BECAUSE or ';'"},
    {"RELEASE q:1, ALL FROM q", "ERROR: expected a record id (table:key) after ',', found 'ALL'"},
    {"RELEASE ALL FROM q, q:1", "ERROR: expected NOT BEFORE, FOR CONSUMER, BECAUSE or ';'"},
    {"TOUCH q:1~2", "ERROR: expected ';' or end of text after the statement, found '~'"},
    {"RETRY q:1, q:2", "ERROR: expected ';' or end of text after the statement, found ','"},
    {"CREATE q:1 = {a: ~1}", "ERROR: expected an expression, found '~'"},
    {"USE CONSUMER", "ERROR: expected a consumer name after USE CONSUMER, found end of text"},
    {"USE jobs", "ERROR: expected CONSUMER after USE"},
    {"UPDATE t", "ERROR: expected '=', CONTENT or MERGE after the target"},
    {"CREATE t = ", "ERROR: expected an expression, found end of text"},
    {"CREATE t:1 = {a: 1 b: 2}",
     "ERROR: '}' expected (to close '{' at line 1, column 14), found 'b' at line 1, column 20"},
    {"CREATE t:1 = {\n  a: [1,\n  2",
     "ERROR: ']' expected (to close '[' at line 2, column 6), found end of text at line 3, column 4"},
    {"CREATE t:1 = time::now(1 2)",
     "ERROR: ')' expected (to close '(' at line 1, column 23), found '2'"},
    {"CREATE t:1 = {a 1}", "ERROR: expected ':' after the field name, found '1'"},
    {"CREATE t:1 = [1 2]", "ERROR: ']' expected (to close '[' at line 1, column 14), found '2'"},
    {"CREATE t:1 = [,]", "ERROR: expected an expression, found ','"},
    {"CREATE t:1 = f(1)", "ERROR: expected ';' or end of text after the statement, found '('"},
    {"CREATE t:1 = time::now(1,", "ERROR: expected an expression, found end of text"},
    {"CREATE t:1 = (1",
     "ERROR: ')' expected (to close '(' at line 1, column 14), found end of text at line 1, column 16"},
    {"CREATE t:", "ERROR: expected a record key (integer, name or quoted string) after ':'"},
    {"CREATE t:1 = 9223372036854775808", "ERROR: integer 9223372036854775808 is out of range"},
    {"CREATE t:1 = 99999999999999999999", "ERROR: integer '99999999999999999999' is out of range"},
    {"CREATE t:1 = r'nope'", "ERROR: expected a record id such as r'jobs:1', found r'nope'"},
    {"CREATE t:1 = d'yesterday'", "ERROR: invalid datetime d'yesterday' at line 1, column 14"},
    {"SELECT FROM t", "ERROR: expected '*' or a field list after SELECT, found 'FROM'"},
    {"SELECT * t", "ERROR: expected FROM after the selected fields, found 't'"},
    {"SELECT * FROM t LIMIT -1", "ERROR: expected a non-negative integer after LIMIT"},
    {"SELECT * FROM t ORDER BY", "ERROR: expected a field name after ORDER BY, found end of text"},
    {"SELECT a AS FROM t", "ERROR: expected FROM after the selected fields, found 't'"},
    {"SELECT * FROM t WHERE a & b", "ERROR: unexpected character '&' at line 1, column 25"},
    {"INFO FOR t", "ERROR: expected TABLE after INFO FOR"},
    {"DROP INDEX i", "ERROR: expected QUEUE, COLLECTION or TABLE after DROP"},
    {"FROB jobs", "ERROR: expected a statement (DEFINE"},
    {"`CLAIM` FROM jobs", "ERROR: expected a statement, found `CLAIM`"},
    {"CLAIM FROM a CLAIM FROM b",
     "ERROR: expected ';' or end of text after the statement, found 'CLAIM' at line 1, column 14"},
    /* lexical errors */
    {"CREATE t:1 = 'abc", "ERROR: unterminated string starting at line 1, column 14"},
    {"CLAIM FROM a;\n\n  CREATE t:1 = {a: \"abc\n",
     "ERROR: unterminated string starting at line 3, column 20"},
    {"CREATE t:1 = 'a\tb'", "ERROR: control character (byte 0x09) in a string"},
    {"CREATE t:1 = 'a\\qb'", "ERROR: invalid escape '\\q' in a string at line 1, column 16"},
    {"CREATE t:1 = 'a\\0'", "ERROR: invalid escape '\\0'"},
    {"CREATE t:1 = '\\ud800'", "ERROR: unpaired surrogate \\ud800"},
    {"CREATE t:1 = '\\udc00'", "ERROR: unpaired surrogate \\udc00"},
    {"CREATE t:1 = '\\u12'", "ERROR: expected four hex digits after \\u"},
    {"CREATE t:1 = '\xff'", "ERROR: invalid UTF-8 in a string at line 1, column 15"},
    {"CREATE t:1 = 'a\xc0\x80'", "ERROR: invalid UTF-8"},
    {"CREATE t:1 = '\xed\xa0\x80'", "ERROR: invalid UTF-8"}, /* an encoded surrogate */
    {"CLAIM FROM a -- \xfe\n", "ERROR: invalid UTF-8 in a comment at line 1, column 17"},
    {"CLAIM FROM a /* é \xe9 */", "ERROR: invalid UTF-8 in a comment at line 1, column 20"},
    {"CLAIM FROM a /* open", "ERROR: unterminated comment starting at line 1, column 14"},
    {"CLAIM FROM `a", "ERROR: unterminated `identifier` starting at line 1, column 12"},
    {"CLAIM FROM ``", "ERROR: empty `identifier`"},
    {"CLAIM FROM é", "ERROR: unexpected character 'é' at line 1, column 12"},
    {"CLAIM FROM a\x01", "ERROR: unexpected control character (byte 0x01)"},
    {"SELECT * FROM t WHERE a = 1.5s", "ERROR: invalid number or duration '1.5s'"},
    {"SELECT * FROM t WHERE a = 1e999", "ERROR: number '1e999' is out of range"},
    {"SELECT * FROM t WHERE a = 99999999999999999999y", "ERROR: invalid number or duration"},
};

static void
test_statements(void)
{
    for (size_t i = 0; i < sizeof stmt_cases / sizeof stmt_cases[0]; i++) {
        char *got = parse_all(stmt_cases[i].sql, strlen(stmt_cases[i].sql));
        CHECK(result_is(got, stmt_cases[i].want), "%s\n   got  %s\n   want %s", stmt_cases[i].sql,
              got, stmt_cases[i].want);
        free(got);
    }
}

/* A text parsed one statement at a time: lines, and the statements before
 * an error are handed out before it. */
static void
test_parser_walk(void)
{
    static const char text[] = "DEFINE QUEUE jobs TIMEOUT 30s;\n"
                               "CREATE jobs:1 = { url: 'a' };\n"
                               "\n"
                               "  CLAIM FROM jobs; CLAIM 0 FROM jobs; CLAIM FROM jobs;\n";
    Parser *p = lang_parser_new(text, sizeof text - 1);
    Stmt *s;
    LangError err = {0};
    int lines[3] = {0}, n = 0, rc;
    while ((rc = lang_parser_next(p, &s, &err)) == 1) {
        if (n < 3)
            lines[n] = s->line;
        n++;
        lang_stmt_free(s);
    }
    CHECK(rc == -1 && n == 3, "rc %d n %d", rc, n);
    CHECK(lines[0] == 1 && lines[1] == 2 && lines[2] == 4, "lines %d %d %d", lines[0], lines[1],
          lines[2]);
    CHECK(strstr(err.message, "CLAIM 0 is not a claim") && strstr(err.message, "line 4, column 26"),
          "%s", err.message);
    lang_parser_free(p);

    /* a NUL byte in the text, and a lexical error after a complete statement */
    static const char nul[] = "CLAIM FROM a; CLAIM\0 FROM b";
    char *got = parse_all(nul, sizeof nul - 1);
    CHECK(strstr(got, "NUL byte at line 1, column 20"), "%s", got);
    free(got);
    p = lang_parser_new("CLAIM FROM a; \xff", 15);
    err = (LangError){0};
    CHECK(lang_parser_next(p, &s, &err) == 1, "first statement before the bad byte");
    lang_stmt_free(s);
    CHECK(lang_parser_next(p, &s, &err) == -1 &&
              strstr(err.message, "invalid UTF-8 at line 1, column 15"),
          "%s", err.message);
    lang_parser_free(p);

    /* deep nesting is an error, not a stack overflow */
    static const char *const opens[] = {"[", "(", "{a:", "- ", "NOT ", "!"};
    for (size_t k = 0; k < sizeof opens / sizeof opens[0]; k++) {
        Buf b = {0};
        lang_buf_puts(&b, "CREATE t:1 = ");
        for (int i = 0; i < 100000; i++)
            lang_buf_puts(&b, opens[k]);
        lang_buf_puts(&b, "x");
        got = parse_all(b.data, b.len);
        CHECK(strstr(got, "nesting deeper than 256 levels"), "%s: %.200s", opens[k], got);
        free(got);
        lang_buf_free(&b);
    }
    /* ... while 200 levels are fine */
    Buf b = {0};
    lang_buf_puts(&b, "CREATE t:1 = ");
    for (int i = 0; i < 200; i++)
        lang_buf_puts(&b, "[");
    for (int i = 0; i < 200; i++)
        lang_buf_puts(&b, "]");
    got = parse_all(b.data, b.len);
    CHECK(strncmp(got, "create t:1 content [[[", 22) == 0, "%.100s", got);
    free(got);
    lang_buf_free(&b);
}

/* ---- literals ---- */

static const struct {
    const char *text, *want; /* its JSON, or "ERROR: fragment" */
} literal_cases[] = {
    {"{\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": -2.5e3}, \"e\": \"x\\ny\"}",
     "{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":-2500.0},\"e\":\"x\\ny\"}"},
    {"  { url: 'a', attempts: 3 }  \n", "{\"attempts\":3,\"url\":\"a\"}"},
    {"{ due: d'2026-12-01T08:00:00Z', wait: 1h30m, ref: jobs:1, key: jobs:'bucket/key', }",
     "{\"due\":\"2026-12-01T08:00:00Z\",\"key\":\"jobs:'bucket/key'\",\"ref\":\"jobs:1\",\"wait\":\"1h30m\"}"},
    {"[1, [2, [3, {x: [4,]}]],]", "[1,[2,[3,{\"x\":[4]}]]]"},
    {"{gone: NONE, kept: null}", "{\"kept\":null}"},
    {"{'single': 'it\\'s', \"double\": \"say \\\"hi\\\"\", 7: 'seven'}",
     "{\"7\":\"seven\",\"double\":\"say \\\"hi\\\"\",\"single\":\"it's\"}"},
    {"'\\u00e9\\u20ac\\ud83d\\ude00\\/\\b\\f\\r\\t'", "\"é€😀/\\b\\f\\r\\t\""},
    {"\"é 😀\"", "\"é 😀\""},
    {"'a\\u0000b'", "\"a\\u0000b\""},
    {"-9223372036854775808", "-9223372036854775808"},
    {"9223372036854775807", "9223372036854775807"},
    {"-0.5", "-0.5"},
    {"1E2", "100.0"},
    {"-0s", "\"0ns\""},
    {"500ms", "\"500ms\""},
    {"r'jobs:7'", "\"jobs:7\""},
    {"{a: 1, a: 2}", "{\"a\":2}"},
    {"TRUE", "true"},
    {"None", "null"},
    {"{}", "{}"},
    {"[]", "[]"},
    {"{`odd key`: 1}", "{\"odd key\":1}"},
    {"/* c */ 5 -- trailing comment", "5"},
    /* texts that are no literal: "ERROR: " and a fragment the message must contain */
    {"{url: 'a}", "ERROR: unterminated string starting at line 1, column 7"},
    {"'\xc3'", "ERROR: invalid UTF-8"},
    {"{a: 'b\x01'}", "ERROR: control character (byte 0x01) in a string"},
    {"99999999999999999999", "ERROR: integer '99999999999999999999' is out of range"},
    {"9223372036854775808", "ERROR: integer 9223372036854775808 is out of range"},
    {"{a: 1} x", "ERROR: record content must be a literal value, found 'x'"},
    {"{a: 1} }", "ERROR: expected end of text after the value, found '}'"},
    {"1 2", "ERROR: expected end of text after the value, found '2'"},
    {"{a: b}", "ERROR: record content must be a literal value, found 'b' at line 1, column 5"},
    {"{a: 1 + 2}", "ERROR: record content must be a literal value, found '+'"},
    {"{a: time::now()}", "ERROR: record content must be a literal value, found 'time'"},
    {"[(1)]", "ERROR: record content must be a literal value, found '('"},
    {"[- x]", "ERROR: record content must be a literal value, found 'x'"},
    {"-5s", "ERROR: a duration cannot be negative"},
    {"1 + 2", "ERROR: record content must be a literal value, found '+'"},
    {"", "ERROR: expected a value, found end of text"},
    {"   ", "ERROR: expected a value, found end of text at line 1, column 4"},
    {"{a: 1,,}", "ERROR: expected a field name or '}', found ','"},
    {"{a 1}", "ERROR: expected ':' after the field name"},
    {"[1,", "ERROR: expected a value, found end of text"},
    {"{\"a\": 1",
     "ERROR: '}' expected (to close '{' at line 1, column 1), found end of text at line 1, column 8"},
    {"[1 2]", "ERROR: ']' expected (to close '[' at line 1, column 1), found '2'"},
    {"[1 -2]", "ERROR: record content must be a literal value, found '-'"},
    {"{a: [1] . b}", "ERROR: record content must be a literal value, found '.'"},
    {"-d'2026-12-01'", "ERROR: record content must be a literal value, found d'2026-12-01'"},
    {"{\"a\\u0000\": 1}", "ERROR: a field name cannot contain a NUL character"},
    {"d'2026-13-01'", "ERROR: invalid datetime"},
    {"5x", "ERROR: invalid number or duration '5x'"},
    {"`x`", "ERROR: record content must be a literal value, found `x`"},
};

/* Parses literal "text": its JSON, or "ERROR: message" for a ParseError
 * that leaves NONE behind; any other failure is a "WRONG ERROR", which no
 * case wants. */
static char *
literal_result(const char *text)
{
    Value v;
    LangError err = {0};
    Buf b = {0};
    int rc = lang_literal_parse(text, strlen(text), &v, &err);
    if (rc == 0)
        lang_value_to_json(&v, &b);
    else if (rc == -1 && err.code == LANG_PARSE_ERROR && v.kind == VAL_NONE)
        lang_buf_printf(&b, "ERROR: %s", err.message);
    else
        lang_buf_printf(&b, "WRONG ERROR (rc %d, code %d, kind %d): %s", rc, err.code, (int)v.kind,
                        err.message);
    lang_value_free(&v);
    return lang_buf_steal(&b);
}

static void
test_literals(void)
{
    for (size_t i = 0; i < sizeof literal_cases / sizeof literal_cases[0]; i++) {
        char *got = literal_result(literal_cases[i].text);
        CHECK(result_is(got, literal_cases[i].want), "%s\n   got  %s\n   want %s",
              literal_cases[i].text, got, literal_cases[i].want);
        free(got);
    }

    /* kinds that JSON cannot show */
    Value v;
    LangError err = {0};
    const char *text = "[1h30m, d'2026-12-01', jobs:'bucket/key', 1.0, 7]";
    CHECK(lang_literal_parse(text, strlen(text), &v, &err) == 0, "%s", err.message);
    CHECK(v.kind == VAL_ARRAY && v.u.arr.len == 5, "array");
    if (v.kind == VAL_ARRAY && v.u.arr.len == 5) {
        Value *it = v.u.arr.items;
        CHECK(it[0].kind == VAL_DURATION && it[0].u.ns == INT64_C(5400000000000), "duration");
        CHECK(it[1].kind == VAL_DATETIME && it[1].u.ns == INT64_C(1796083200000000000),
              "datetime %" PRId64, it[1].u.ns);
        CHECK(it[2].kind == VAL_RECORD && strcmp(it[2].u.rec.table, "jobs") == 0 &&
                  it[2].u.rec.key->kind == VAL_STRING &&
                  strcmp(it[2].u.rec.key->u.str.s, "bucket/key") == 0,
              "record");
        CHECK(it[3].kind == VAL_FLOAT && it[4].kind == VAL_INT, "numbers");
    }
    lang_value_free(&v);

    /* a NUL byte in the text */
    static const char nul[] = "{a: 1}\0";
    CHECK(lang_literal_parse(nul, sizeof nul - 1, &v, &err) == -1 &&
              strstr(err.message, "NUL byte at line 1, column 7"),
          "%s", err.message);
    lang_value_free(&v);

    /* 100000 levels of nesting */
    for (int k = 0; k < 2; k++) {
        size_t n = 100000;
        char *deep = malloc(n + 1);
        memset(deep, k ? '{' : '[', n);
        err = (LangError){0};
        if (k) { /* {a:{a:{a: … */
            Buf b = {0};
            for (size_t i = 0; i < n; i++)
                lang_buf_puts(&b, "{a:");
            CHECK(lang_literal_parse(b.data, b.len, &v, &err) == -1 &&
                      strstr(err.message, "nesting deeper than 256 levels"),
                  "%s", err.message);
            lang_buf_free(&b);
        } else {
            CHECK(lang_literal_parse(deep, n, &v, &err) == -1 &&
                      strstr(err.message, "nesting deeper than 256 levels"),
                  "%s", err.message);
        }
        lang_value_free(&v);
        free(deep);
    }
}

static void
test_literal_speed(void)
{
    const char *text =
        "{\"url\":\"https://example.test/a/b\",\"attempts\":3,\"tags\":[\"x\",\"y\"],"
        "\"due\":d'2026-12-01T08:00:00Z',\"ok\":true}";
    size_t len = strlen(text);
    int n = 20000;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        Value v;
        LangError err = {0};
        if (lang_literal_parse(text, len, &v, &err) != 0) {
            CHECK(0, "%s", err.message);
            break;
        }
        lang_value_free(&v);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us =
        ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
    fprintf(stderr, "lang_literal_parse: %.2f us per small record\n", us);
    CHECK(us < 100.0, "%.2f us per record", us);
}

int
main(void)
{
    test_statements();
    test_parser_walk();
    test_literals();
    test_literal_speed();
    return unit_test_summary();
}
