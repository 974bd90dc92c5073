/* pg_sql.c — the statements of store/pg/pg_stmts.def made ready for the
 * server: a statement's named arguments bound (in binary, in the order its
 * ARGS lists them), and its $names numbered $1 .. $n for the prepare.
 *
 * The numbering is done once, for every statement, when the first is
 * prepared; a $name that is not one of its statement's arguments, or an
 * argument its SQL never names, stops the process there, naming both: a
 * mistake in pg_stmts.def, which any statement run finds. */
#include "pg_internal.h"

#include "bigendian.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each statement's SQL as pg_stmts.def writes it, with $names. */
static const char *const stmt_text[PG_STMT_COUNT] = {
#define PG_STMT(name, kind, args, sql) [PG_##name] = sql,
#include "pg_stmts.def"
};

static const char *const stmt_label[PG_STMT_COUNT] = {
#define PG_STMT(name, kind, args, sql) [PG_##name] = #name,
#include "pg_stmts.def"
};

static const PgKind stmt_kind[PG_STMT_COUNT] = {
#define PG_STMT(name, kind, args, sql) [PG_##name] = kind,
#include "pg_stmts.def"
};

/* Each statement's argument names, in order, then NULL. */
#define I64(name) #name,
#define BYTES(name) #name,
#define BOOL(name) #name,
#define PG_STMT(name, kind, args, sql) static const char *const names_##name[] = {args NULL};
#include "pg_stmts.def"

static const char *const *const stmt_names[PG_STMT_COUNT] = {
#define PG_STMT(name, kind, args, sql) [PG_##name] = names_##name,
#include "pg_stmts.def"
};

/* No statement has more arguments than a PgBound holds. */
#define I64(name) +1
#define BYTES(name) +1
#define BOOL(name) +1
#define PG_STMT(name, kind, args, sql) \
    _Static_assert(0 args <= PG_ARGS_MAX, "PG_" #name ": more arguments than PG_ARGS_MAX");
#include "pg_stmts.def"

/* ---- binding ---- */

/* Binds the "len" bytes the next argument has in b->ints. */
static void
bind_fixed(PgBound *b, int len)
{
    b->values[b->n] = (const char *)b->ints[b->n];
    b->lengths[b->n] = len;
    b->formats[b->n++] = 1;
}

static void
bind_i64(PgBound *b, int64_t v)
{
    be_put64(b->ints[b->n], (uint64_t)v);
    bind_fixed(b, 8);
}

static void
bind_bytes(PgBound *b, StoreBytes v)
{
    b->values[b->n] = v.len ? v.data : "";
    b->lengths[b->n] = (int)v.len;
    b->formats[b->n++] = 1;
}

static void
bind_bool(PgBound *b, bool v)
{
    b->ints[b->n][0] = v;
    bind_fixed(b, 1);
}

void
pg_stmt_bind(const PgStmt *p, PgBound *out)
{
    out->n = 0;
    switch (*p) {
#define I64(name) bind_i64(out, a->name);
#define BYTES(name) bind_bytes(out, a->name);
#define BOOL(name) bind_bool(out, a->name);
#define PG_STMT(name, kind, args, sql) \
    case PG_##name: { \
        const PgArgs_##name *a = (const PgArgs_##name *)p; \
        (void)a; \
        args break; \
    }
#include "pg_stmts.def"
    default: abort();
    }
}

/* ---- numbering ---- */

static char *stmt_sql[PG_STMT_COUNT];
static pthread_once_t numbered = PTHREAD_ONCE_INIT;

static bool
name_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static void
misnamed(PgStmt s, const char *what, const char *name, size_t len)
{
    fprintf(stderr, "queuefs: pg_stmts.def: %s: %s $%.*s\n", stmt_label[s], what, (int)len, name);
    abort();
}

/* Statement "s" with each $name replaced by $i, i the name's place in its
 * arguments (from 1). */
static char *
number(PgStmt s)
{
    const char *text = stmt_text[s];
    const char *const *names = stmt_names[s];
    bool named[PG_ARGS_MAX] = {false};
    /* ("$a" becomes at most "$16".) */
    char *out = malloc(3 * strlen(text) + 1), *o = out;
    if (!out)
        abort();
    for (const char *p = text; *p;) {
        if (*p != '$') {
            *o++ = *p++;
            continue;
        }
        const char *name = ++p;
        while (name_char(*p))
            p++;
        size_t len = (size_t)(p - name);
        if (len == 0 || (name[0] >= '0' && name[0] <= '9'))
            misnamed(s, "not a name:", name, len);
        int i = 0;
        while (names[i] && (strlen(names[i]) != len || memcmp(names[i], name, len)))
            i++;
        if (!names[i])
            misnamed(s, "no such argument:", name, len);
        named[i] = true;
        o += sprintf(o, "$%d", i + 1);
    }
    *o = 0;
    for (int i = 0; names[i]; i++)
        if (!named[i])
            misnamed(s, "an argument the SQL never names:", names[i], strlen(names[i]));
    return out;
}

static void
number_all(void)
{
    for (int s = 0; s < PG_STMT_COUNT; s++)
        stmt_sql[s] = number((PgStmt)s);
}

const char *
pg_stmt_sql(PgStmt s)
{
    pthread_once(&numbered, number_all);
    return stmt_sql[s];
}

PgKind
pg_stmt_kind(PgStmt s)
{
    return stmt_kind[s];
}

/* ---- array arguments ---- */

#define PG_ARRAY_HEAD 20

static void
array_put(PgArray *a, const void *p, size_t n)
{
    if (a->len + n > a->cap) {
        a->cap = (a->len + n) * 2 + 256;
        a->data = realloc(a->data, a->cap);
        if (!a->data)
            abort();
    }
    if (n)
        memcpy(a->data + a->len, p, n);
    a->len += n;
}

void
pg_array_reset(PgArray *a, uint32_t oid)
{
    unsigned char head[PG_ARRAY_HEAD] = {0};
    be_put32(head, 1);
    be_put32(head + 8, oid);
    be_put32(head + 16, 1);
    a->len = 0;
    a->n = 0;
    array_put(a, head, sizeof head);
}

void
pg_array_add(PgArray *a, const void *p, size_t n)
{
    unsigned char len[4];
    be_put32(len, (uint32_t)n);
    array_put(a, len, 4);
    array_put(a, p, n);
    be_put32(a->data + 12, (uint32_t)++a->n);
}

void
pg_array_add_i64(PgArray *a, int64_t v)
{
    unsigned char b[8];
    be_put64(b, (uint64_t)v);
    pg_array_add(a, b, 8);
}
