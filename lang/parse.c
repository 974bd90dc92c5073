/* parse.c — statements and literals from tokens (see parse.h).
 *
 * A recursive-descent parser in the manner of Lua's lparser.c: each
 * function opens with the rule it parses.  The parse state carries the
 * first error, as SQLite's does; once it is set every function returns
 * early (NULL or false) and the loops stop, so the first message is the one
 * the caller sees.  Keywords are matched case-insensitively on identifiers
 * only where the grammar expects one; nothing is reserved.
 *
 * Decisions beyond the grammar in parse.h:
 *  - Duplicate object keys are allowed: the last one wins.
 *  - TIMEOUT and DEDUPLICATE take a positive duration, ATTEMPTS a positive
 *    integer.  DEFINE FIELD takes TYPE and REQUIRED in either order.
 *  - A negative duration literal (-5s) is an error; "-" before an integer or
 *    a float literal is folded into the literal.
 *  - \u0000 is allowed inside string values (a Value string may hold NUL)
 *    but not in names: object keys, consumer names.
 *  - A raw newline inside a quoted string ends it as unterminated.
 *  - A record key is never the empty string (`jobs:''` is an error): every
 *    identity is also a file name, and a file name cannot be empty. */
#include "parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lang.h"
#include "lex.h"

typedef struct ParseState {
    Lexer     lx;
    Token     tok;        /* the current token */
    Token     ahead;      /* the one after it, when has_ahead */
    bool      has_ahead;
    int       depth;      /* nesting of expressions, for PARSE_MAX_DEPTH */
    LangError err;        /* the first error */
} ParseState;

struct Parser {
    ParseState ps;
    bool       started;
};

#define FAILED(ps) ((ps)->err.code != LANG_OK)

/* ---- freeing ---- */

static void
free_parts(char **parts, size_t len)
{
    for (size_t i = 0; i < len; i++)
        free(parts[i]);
    free(parts);
}

void
expr_free(Expr *e)
{
    if (!e)
        return;
    switch (e->kind) {
    case EX_LITERAL:
        value_free(&e->u.literal);
        break;
    case EX_FIELD:
        free_parts(e->u.path.parts, e->u.path.len);
        break;
    case EX_OBJECT:
        for (size_t i = 0; i < e->u.object.len; i++) {
            free(e->u.object.keys[i]);
            expr_free(e->u.object.vals[i]);
        }
        free(e->u.object.keys);
        free(e->u.object.vals);
        break;
    case EX_ARRAY:
        for (size_t i = 0; i < e->u.array.len; i++)
            expr_free(e->u.array.items[i]);
        free(e->u.array.items);
        break;
    case EX_UNARY:
        expr_free(e->u.unary.arg);
        break;
    case EX_BINARY:
        expr_free(e->u.binary.lhs);
        expr_free(e->u.binary.rhs);
        break;
    case EX_CALL:
        free(e->u.call.name);
        for (size_t i = 0; i < e->u.call.len; i++)
            expr_free(e->u.call.args[i]);
        free(e->u.call.args);
        break;
    }
    free(e);
}

static void
target_free(Target *t)
{
    free(t->table);
    t->table = NULL;
    value_free(&t->id);
}

void
stmt_free(Stmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case ST_DEFINE_QUEUE:
    case ST_DEFINE_COLLECTION:
        free(s->u.define_table.name);
        free(s->u.define_table.priority_by);
        free(s->u.define_table.not_before);
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
        free_parts(s->u.define_index.fields, s->u.define_index.nfields);
        break;
    case ST_CREATE:
    case ST_UPDATE:
    case ST_UPSERT:
        target_free(&s->u.write.target);
        expr_free(s->u.write.content);
        expr_free(s->u.write.where);
        break;
    case ST_DELETE:
        target_free(&s->u.del.target);
        expr_free(s->u.del.where);
        break;
    case ST_SELECT:
        for (size_t i = 0; i < s->u.select.nfields; i++) {
            expr_free(s->u.select.fields[i].expr);
            free(s->u.select.fields[i].alias);
        }
        free(s->u.select.fields);
        target_free(&s->u.select.from);
        expr_free(s->u.select.where);
        for (size_t i = 0; i < s->u.select.norder; i++)
            free_parts(s->u.select.order[i].parts, s->u.select.order[i].len);
        free(s->u.select.order);
        break;
    case ST_CLAIM:
        target_free(&s->u.claim.target);
        break;
    case ST_RELEASE:
    case ST_RELEASE_ALL:
    case ST_TOUCH:
        target_free(&s->u.release.target);
        expr_free(s->u.release.not_before);
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
        free(s->u.table_op.table);
        break;
    }
    free(s);
}

/* ---- the parse state ---- */

static void
ps_init(ParseState *ps, const char *text, size_t len)
{
    memset(ps, 0, sizeof *ps);
    lex_init(&ps->lx, text, len, &ps->err);
}

static void
ps_free(ParseState *ps)
{
    token_free(&ps->tok);
    token_free(&ps->ahead);
}

/* Steps to the next token. */
static void
next(ParseState *ps)
{
    if (ps->has_ahead) {
        Token t = ps->tok;
        ps->tok = ps->ahead;
        ps->ahead = t;
        ps->has_ahead = false;
    } else {
        lex_next(&ps->lx, &ps->tok);
    }
}

/* The token after the current one. */
static const Token *
peek(ParseState *ps)
{
    if (!ps->has_ahead) {
        lex_next(&ps->lx, &ps->ahead);
        ps->has_ahead = true;
    }
    return &ps->ahead;
}

/* Sets the error (unless one is set) with " at line L, column C" of "t". */
static void
error_at(ParseState *ps, const Token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
error_at(ParseState *ps, const Token *t, const char *fmt, ...)
{
    if (FAILED(ps))
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lang_error_set(&ps->err, LANG_PARSE_ERROR, "%s at line %d, column %d", msg, t->line,
                   t->col);
}

/* "expected <what>, found <current token> at line L, column C" */
static void
expected(ParseState *ps, const char *what)
{
    char found[64];
    token_describe(&ps->tok, found, sizeof found);
    error_at(ps, &ps->tok, "expected %s, found %s", what, found);
}

static bool
is_kw(const Token *t, const char *kw)
{
    return t->kind == TK_IDENT && !t->quoted && strlen(kw) == t->len &&
           strncasecmp(t->text, kw, t->len) == 0;
}

static bool
accept_kw(ParseState *ps, const char *kw)
{
    if (!is_kw(&ps->tok, kw))
        return false;
    next(ps);
    return true;
}

/* Consumes keyword "kw" or fails with "expected <what>". */
static bool
expect_kw(ParseState *ps, const char *kw, const char *what)
{
    if (accept_kw(ps, kw))
        return true;
    expected(ps, what);
    return false;
}

static bool
accept(ParseState *ps, TokKind k)
{
    if (ps->tok.kind != k)
        return false;
    next(ps);
    return true;
}

static bool
expect(ParseState *ps, TokKind k, const char *what)
{
    if (accept(ps, k))
        return true;
    expected(ps, what);
    return false;
}

static bool
at_end(const ParseState *ps)
{
    return ps->tok.kind == TK_SEMI || ps->tok.kind == TK_EOF;
}

/* Doubles the capacity of an array when it is full. */
#define GROW(arr, len, cap)                                               \
    do {                                                                  \
        if ((len) == (cap)) {                                             \
            (cap) = (cap) ? (cap) * 2 : 4;                                \
            (arr) = xrealloc((arr), (cap) * sizeof *(arr));               \
        }                                                                 \
    } while (0)

/* ---- names, paths, keys, targets ---- */

/* name -> IDENT */
static char *
name(ParseState *ps, const char *what)
{
    if (ps->tok.kind != TK_IDENT) {
        expected(ps, what);
        return NULL;
    }
    char *s = xstrndup(ps->tok.text, ps->tok.len);
    next(ps);
    return s;
}

/* tablename -> IDENT that lang_table_name_check accepts. */
static char *
table_name(ParseState *ps, const char *what)
{
    const Token *t = &ps->tok;
    if (t->kind != TK_IDENT) {
        expected(ps, what);
        return NULL;
    }
    LangError why = {0};
    if (lang_table_name_check(t->text, t->len, &why)) {
        error_at(ps, t, "%s", why.message);
        return NULL;
    }
    return name(ps, what);
}

/* path -> IDENT {'.' IDENT} */
static bool
path(ParseState *ps, char ***parts, size_t *len, const char *what)
{
    size_t cap = 0;
    *parts = NULL;
    *len = 0;
    do {
        char *part = name(ps, *len ? "a field name after '.'" : what);
        if (!part)
            return false;
        GROW(*parts, *len, cap);
        (*parts)[(*len)++] = part;
    } while (!FAILED(ps) && accept(ps, TK_DOT));
    return !FAILED(ps);
}

/* pathtext -> path, kept as the text "a.b.c" */
static char *
path_text(ParseState *ps, const char *what)
{
    char **parts;
    size_t len;
    if (!path(ps, &parts, &len, what)) {
        free_parts(parts, len);
        return NULL;
    }
    Buf b = {0};
    for (size_t i = 0; i < len; i++) {
        if (i)
            buf_putc(&b, '.');
        buf_puts(&b, parts[i]);
    }
    free_parts(parts, len);
    return buf_steal(&b);
}

/* key -> INT | IDENT | STRING */
static bool
key(ParseState *ps, Value *out, const char *what)
{
    const Token *t = &ps->tok;
    switch (t->kind) {
    case TK_INT:
        if (t->int_min) {
            error_at(ps, t, "integer 9223372036854775808 is out of range");
            return false;
        }
        *out = value_int(t->i);
        break;
    case TK_IDENT:
    case TK_STRING:
        if (t->len == 0) {
            /* An identity is a file name too, and a file name is never empty. */
            error_at(ps, t, "a record key cannot be empty");
            return false;
        }
        *out = value_string(t->text, t->len);
        break;
    default:
        expected(ps, what);
        return false;
    }
    next(ps);
    return true;
}

/* record -> IDENT ':' key   (the current token is the IDENT, the next ':') */
static bool
record(ParseState *ps, Value *out)
{
    char *table = xstrndup(ps->tok.text, ps->tok.len);
    next(ps);
    next(ps);
    Value k = {0};
    if (!key(ps, &k, "a record key (integer, name or quoted string) after ':'")) {
        free(table);
        return false;
    }
    *out = value_record(table, k);
    free(table);
    return true;
}

/* recstr -> RECSTR whose text is IDENT ':' key   (r'jobs:1') */
static bool
record_text(ParseState *ps, const Token *t, Value *out)
{
    ParseState sub;
    ps_init(&sub, t->text, t->len);
    next(&sub);
    bool ok = sub.tok.kind == TK_IDENT && peek(&sub)->kind == TK_COLON && record(&sub, out) &&
              sub.tok.kind == TK_EOF && !FAILED(&sub);
    if (!ok) {
        if (out->kind != VAL_NONE)
            value_free(out);
        char found[64];
        token_describe(t, found, sizeof found);
        error_at(ps, t, "expected a record id such as r'jobs:1', found %s", found);
    }
    ps_free(&sub);
    return ok;
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
        if (!key(ps, &k, "a record key (integer, name or quoted string) after ':'"))
            return false;
        t->id = value_record(t->table, k);
    }
    return true;
}

/* recordtarget -> name ':' key */
static bool
record_target(ParseState *ps, Target *t, const char *what)
{
    if (ps->tok.kind != TK_IDENT || peek(ps)->kind != TK_COLON) {
        expected(ps, what);
        return false;
    }
    return target(ps, t, what);
}

/* string -> STRING, as a C string (no NUL inside) */
static char *
cstring(ParseState *ps, const Token *t, const char *what)
{
    if (memchr(t->text, '\0', t->len)) {
        error_at(ps, t, "%s cannot contain a NUL character", what);
        return NULL;
    }
    return xstrndup(t->text, t->len);
}

/* consumer -> STRING | IDENT */
static char *
consumer(ParseState *ps, const char *what)
{
    if (ps->tok.kind != TK_STRING && ps->tok.kind != TK_IDENT) {
        expected(ps, what);
        return NULL;
    }
    char *s = cstring(ps, &ps->tok, "a consumer name");
    if (s)
        next(ps);
    return s;
}

/* ---- expressions ---- */

static Expr *expr(ParseState *ps);

static Expr *
new_expr(ExprKind kind)
{
    Expr *e = xcalloc(1, sizeof *e);
    e->kind = kind;
    return e;
}

static Expr *
literal(Value v)
{
    Expr *e = new_expr(EX_LITERAL);
    e->u.literal = v;
    return e;
}

static Expr *
unary(ExprOp op, Expr *arg)
{
    if (!arg)
        return NULL;
    Expr *e = new_expr(EX_UNARY);
    e->u.unary.op = op;
    e->u.unary.arg = arg;
    return e;
}

static Expr *
binary(ExprOp op, Expr *lhs, Expr *rhs)
{
    if (!rhs) {
        expr_free(lhs);
        return NULL;
    }
    Expr *e = new_expr(EX_BINARY);
    e->u.binary.op = op;
    e->u.binary.lhs = lhs;
    e->u.binary.rhs = rhs;
    return e;
}

/* One level deeper; false (with the error set) past PARSE_MAX_DEPTH. */
static bool
enter(ParseState *ps)
{
    if (++ps->depth <= PARSE_MAX_DEPTH)
        return true;
    error_at(ps, &ps->tok, "nesting deeper than %d levels", PARSE_MAX_DEPTH);
    ps->depth--;
    return false;
}

/* object -> '{' [field {',' field} [',']] '}'
 * field -> (IDENT | STRING | INT) ':' expr */
static Expr *
object(ParseState *ps)
{
    Expr *e = new_expr(EX_OBJECT);
    size_t cap = 0;
    next(ps);  /* '{' */
    while (!FAILED(ps) && ps->tok.kind != TK_RBRACE) {
        const Token *t = &ps->tok;
        if (t->kind != TK_IDENT && t->kind != TK_STRING && t->kind != TK_INT) {
            expected(ps, "a field name or '}'");
            break;
        }
        char *k = t->kind == TK_INT ? xstrndup(t->raw, t->rawlen) : cstring(ps, t, "a field name");
        if (!k)
            break;
        next(ps);
        if (!expect(ps, TK_COLON, "':' after the field name")) {
            free(k);
            break;
        }
        Expr *v = expr(ps);
        if (!v) {
            free(k);
            break;
        }
        if (e->u.object.len == cap) {
            cap = cap ? cap * 2 : 4;
            e->u.object.keys = xrealloc(e->u.object.keys, cap * sizeof(char *));
            e->u.object.vals = xrealloc(e->u.object.vals, cap * sizeof(Expr *));
        }
        e->u.object.keys[e->u.object.len] = k;
        e->u.object.vals[e->u.object.len++] = v;
        if (!accept(ps, TK_COMMA)) {
            if (ps->tok.kind != TK_RBRACE)
                expected(ps, "',' or '}' in the object");
            break;
        }
    }
    if (!FAILED(ps))
        next(ps);  /* '}' */
    if (FAILED(ps)) {
        expr_free(e);
        return NULL;
    }
    return e;
}

/* array -> '[' [expr {',' expr} [',']] ']' */
static Expr *
array(ParseState *ps)
{
    Expr *e = new_expr(EX_ARRAY);
    size_t cap = 0;
    next(ps);  /* '[' */
    while (!FAILED(ps) && ps->tok.kind != TK_RBRACKET) {
        Expr *v = expr(ps);
        if (!v)
            break;
        GROW(e->u.array.items, e->u.array.len, cap);
        e->u.array.items[e->u.array.len++] = v;
        if (!accept(ps, TK_COMMA)) {
            if (ps->tok.kind != TK_RBRACKET)
                expected(ps, "',' or ']' in the array");
            break;
        }
    }
    if (!FAILED(ps))
        next(ps);  /* ']' */
    if (FAILED(ps)) {
        expr_free(e);
        return NULL;
    }
    return e;
}

/* call -> IDENT '::' IDENT {'::' IDENT} '(' [expr {',' expr}] ')' */
static Expr *
call(ParseState *ps)
{
    Expr *e = new_expr(EX_CALL);
    Buf b = {0};
    size_t cap = 0;
    buf_append(&b, ps->tok.text, ps->tok.len);
    next(ps);
    while (accept(ps, TK_DCOLON)) {
        if (ps->tok.kind != TK_IDENT) {
            expected(ps, "a function name after '::'");
            break;
        }
        buf_puts(&b, "::");
        buf_append(&b, ps->tok.text, ps->tok.len);
        next(ps);
    }
    e->u.call.name = buf_steal(&b);
    if (!FAILED(ps) && expect(ps, TK_LPAREN, "'(' after the function name")) {
        while (!FAILED(ps) && ps->tok.kind != TK_RPAREN) {
            Expr *a = expr(ps);
            if (!a)
                break;
            GROW(e->u.call.args, e->u.call.len, cap);
            e->u.call.args[e->u.call.len++] = a;
            if (!accept(ps, TK_COMMA)) {
                if (ps->tok.kind != TK_RPAREN)
                    expected(ps, "',' or ')' after the argument");
                break;
            }
        }
        if (!FAILED(ps))
            next(ps);  /* ')' */
    }
    if (FAILED(ps)) {
        expr_free(e);
        return NULL;
    }
    return e;
}

/* primary -> INT | FLOAT | STRING | DURATION | DATETIME | RECSTR
 *          | TRUE | FALSE | NULL | NONE | '(' expr ')' | object | array
 *          | call | record | path */
static Expr *
primary(ParseState *ps)
{
    const Token *t = &ps->tok;
    Value v = {0};
    switch (t->kind) {
    case TK_INT:
        if (t->int_min) {
            error_at(ps, t, "integer 9223372036854775808 is out of range");
            return NULL;
        }
        v = value_int(t->i);
        break;
    case TK_FLOAT: v = value_float(t->f); break;
    case TK_STRING: v = value_string(t->text, t->len); break;
    case TK_DURATION: v = value_duration(t->ns); break;
    case TK_DATETIME: v = value_datetime(t->ns); break;
    case TK_RECSTR:
        if (!record_text(ps, t, &v))
            return NULL;
        break;
    case TK_LPAREN: {
        next(ps);
        Expr *e = expr(ps);
        if (e && !expect(ps, TK_RPAREN, "')' to close '('")) {
            expr_free(e);
            return NULL;
        }
        return e;
    }
    case TK_LBRACE:
        return object(ps);
    case TK_LBRACKET:
        return array(ps);
    case TK_IDENT: {
        TokKind after = peek(ps)->kind;
        if (after == TK_COLON) {
            if (!record(ps, &v))
                return NULL;
            return literal(v);
        }
        if (after == TK_DCOLON)
            return call(ps);
        if (is_kw(t, "true")) v = value_bool(true);
        else if (is_kw(t, "false")) v = value_bool(false);
        else if (is_kw(t, "null")) v = value_null();
        else if (is_kw(t, "none")) v = value_none();
        else {
            Expr *e = new_expr(EX_FIELD);
            if (!path(ps, &e->u.path.parts, &e->u.path.len, "a field name")) {
                expr_free(e);
                return NULL;
            }
            return e;
        }
        break;
    }
    default:
        expected(ps, "an expression");
        return NULL;
    }
    next(ps);
    return literal(v);
}

/* unary -> '-' unary | primary */
static Expr *
unary_expr(ParseState *ps)
{
    if (ps->tok.kind != TK_MINUS)
        return primary(ps);
    const Token *n = peek(ps);
    if (n->kind == TK_INT || n->kind == TK_FLOAT) {  /* fold -5 into the literal */
        next(ps);
        Value v = ps->tok.kind == TK_FLOAT ? value_float(-ps->tok.f)
                  : ps->tok.int_min        ? value_int(INT64_MIN)
                                           : value_int(-ps->tok.i);
        next(ps);
        return literal(v);
    }
    if (!enter(ps))
        return NULL;
    next(ps);
    Expr *e = unary(OP_NEG, unary_expr(ps));
    ps->depth--;
    return e;
}

/* One more operator in a left-deep chain (a + b + c …): each is a level of
 * the tree that evaluating and freeing it recurse through, so it counts
 * towards PARSE_MAX_DEPTH like a bracket.  On true "*levels" grows by one
 * (the caller gives them back); on false the error is set and "*e" freed. */
static bool
chain(ParseState *ps, Expr **e, int *levels)
{
    if (!enter(ps)) {
        expr_free(*e);
        *e = NULL;
        return false;
    }
    (*levels)++;
    return true;
}

/* mul -> unary {('*' | '/') unary} */
static Expr *
mul_expr(ParseState *ps)
{
    Expr *e = unary_expr(ps);
    int levels = 0;
    while (e && (ps->tok.kind == TK_STAR || ps->tok.kind == TK_SLASH) && chain(ps, &e, &levels)) {
        ExprOp op = ps->tok.kind == TK_STAR ? OP_MUL : OP_DIV;
        next(ps);
        e = binary(op, e, unary_expr(ps));
    }
    ps->depth -= levels;
    return e;
}

/* add -> mul {('+' | '-') mul} */
static Expr *
add_expr(ParseState *ps)
{
    Expr *e = mul_expr(ps);
    int levels = 0;
    while (e && (ps->tok.kind == TK_PLUS || ps->tok.kind == TK_MINUS) && chain(ps, &e, &levels)) {
        ExprOp op = ps->tok.kind == TK_PLUS ? OP_ADD : OP_SUB;
        next(ps);
        e = binary(op, e, mul_expr(ps));
    }
    ps->depth -= levels;
    return e;
}

/* cmp -> add [('=' | '==' | IS | '!=' | IS NOT | '<' | '<=' | '>' | '>=') add] */
static Expr *
cmp_expr(ParseState *ps)
{
    Expr *e = add_expr(ps);
    if (!e)
        return NULL;
    ExprOp op;
    switch (ps->tok.kind) {
    case TK_EQ: case TK_EQEQ: op = OP_EQ; break;
    case TK_NE: op = OP_NE; break;
    case TK_LT: op = OP_LT; break;
    case TK_LE: op = OP_LE; break;
    case TK_GT: op = OP_GT; break;
    case TK_GE: op = OP_GE; break;
    case TK_IDENT:
        if (is_kw(&ps->tok, "IS")) {
            next(ps);
            op = accept_kw(ps, "NOT") ? OP_NE : OP_EQ;
            return binary(op, e, add_expr(ps));
        }
        return e;
    default:
        return e;
    }
    next(ps);
    return binary(op, e, add_expr(ps));
}

/* not -> (NOT | '!') not | cmp */
static Expr *
not_expr(ParseState *ps)
{
    if (ps->tok.kind != TK_BANG && !is_kw(&ps->tok, "NOT"))
        return cmp_expr(ps);
    if (!enter(ps))
        return NULL;
    next(ps);
    Expr *e = unary(OP_NOT, not_expr(ps));
    ps->depth--;
    return e;
}

/* and -> not {(AND | '&&') not} */
static Expr *
and_expr(ParseState *ps)
{
    Expr *e = not_expr(ps);
    int levels = 0;
    while (e && (ps->tok.kind == TK_ANDAND || is_kw(&ps->tok, "AND")) && chain(ps, &e, &levels)) {
        next(ps);
        e = binary(OP_AND, e, not_expr(ps));
    }
    ps->depth -= levels;
    return e;
}

/* or -> and {(OR | '||') and} */
static Expr *
or_expr(ParseState *ps)
{
    Expr *e = and_expr(ps);
    int levels = 0;
    while (e && (ps->tok.kind == TK_OROR || is_kw(&ps->tok, "OR")) && chain(ps, &e, &levels)) {
        next(ps);
        e = binary(OP_OR, e, and_expr(ps));
    }
    ps->depth -= levels;
    return e;
}

/* expr -> or */
static Expr *
expr(ParseState *ps)
{
    if (FAILED(ps) || !enter(ps))
        return NULL;
    Expr *e = or_expr(ps);
    ps->depth--;
    if (FAILED(ps)) {  /* a lexer error in a lookahead token */
        expr_free(e);
        return NULL;
    }
    return e;
}

/* ---- constant values (lang_literal_parse) ---- */

/* Reports a token that would make a literal into an expression. */
static void
not_literal(ParseState *ps)
{
    char found[64];
    token_describe(&ps->tok, found, sizeof found);
    error_at(ps, &ps->tok, "record content must be a literal value, found %s", found);
}

/* True for tokens that can only continue an expression: operators,
 * calls, paths and names. */
static bool
expression_token(const Token *t)
{
    switch (t->kind) {
    case TK_DOT: case TK_DCOLON: case TK_LPAREN: case TK_EQ: case TK_EQEQ: case TK_NE:
    case TK_LT: case TK_LE: case TK_GT: case TK_GE: case TK_PLUS: case TK_MINUS:
    case TK_STAR: case TK_SLASH: case TK_BANG: case TK_ANDAND: case TK_OROR:
    case TK_IDENT:
        return true;
    default:
        return false;
    }
}

static bool lit_value(ParseState *ps, Value *out);

/* After an item of an object or array: "',' or <close>". */
static void
lit_expected_sep(ParseState *ps, const char *what)
{
    if (expression_token(&ps->tok))
        not_literal(ps);
    else
        expected(ps, what);
}

/* litobject -> '{' [field {',' field} [',']] '}'
 * field -> (IDENT | STRING | INT) ':' value */
static bool
lit_object(ParseState *ps, Value *out)
{
    *out = value_object();
    next(ps);  /* '{' */
    while (!FAILED(ps) && ps->tok.kind != TK_RBRACE) {
        const Token *t = &ps->tok;
        if (t->kind != TK_IDENT && t->kind != TK_STRING && t->kind != TK_INT) {
            expected(ps, "a field name or '}'");
            break;
        }
        const char *kt = t->kind == TK_INT ? t->raw : t->text;
        size_t kl = t->kind == TK_INT ? t->rawlen : t->len;
        if (memchr(kt, '\0', kl)) {
            error_at(ps, t, "a field name cannot contain a NUL character");
            break;
        }
        char small[64], *k = small;
        if (kl >= sizeof small)
            k = xmalloc(kl + 1);
        memcpy(k, kt, kl);
        k[kl] = '\0';
        next(ps);
        Value v = {0};
        if (expect(ps, TK_COLON, "':' after the field name") && lit_value(ps, &v))
            value_object_set(out, k, v);
        else
            value_free(&v);  /* what a failed nested value built so far */
        if (k != small)
            free(k);
        if (FAILED(ps))
            break;
        if (!accept(ps, TK_COMMA)) {
            if (ps->tok.kind != TK_RBRACE)
                lit_expected_sep(ps, "',' or '}' in the object");
            break;
        }
    }
    if (!FAILED(ps))
        next(ps);  /* '}' */
    return !FAILED(ps);
}

/* litarray -> '[' [value {',' value} [',']] ']' */
static bool
lit_array(ParseState *ps, Value *out)
{
    *out = value_array();
    next(ps);  /* '[' */
    while (!FAILED(ps) && ps->tok.kind != TK_RBRACKET) {
        Value v = {0};
        if (!lit_value(ps, &v)) {
            value_free(&v);  /* what a failed nested value built so far */
            break;
        }
        value_array_push(out, v);
        if (!accept(ps, TK_COMMA)) {
            if (ps->tok.kind != TK_RBRACKET)
                lit_expected_sep(ps, "',' or ']' in the array");
            break;
        }
    }
    if (!FAILED(ps))
        next(ps);  /* ']' */
    return !FAILED(ps);
}

/* value -> INT | FLOAT | STRING | DURATION | DATETIME | RECSTR
 *        | TRUE | FALSE | NULL | NONE | '-' (INT | FLOAT | DURATION)
 *        | litobject | litarray | record */
static bool
lit_value(ParseState *ps, Value *out)
{
    if (FAILED(ps) || !enter(ps))
        return false;
    const Token *t = &ps->tok;
    bool ok = true;
    switch (t->kind) {
    case TK_INT:
        if (t->int_min) {
            error_at(ps, t, "integer 9223372036854775808 is out of range");
            ok = false;
            break;
        }
        *out = value_int(t->i);
        next(ps);
        break;
    case TK_FLOAT: *out = value_float(t->f); next(ps); break;
    case TK_STRING: *out = value_string(t->text, t->len); next(ps); break;
    case TK_DURATION: *out = value_duration(t->ns); next(ps); break;
    case TK_DATETIME: *out = value_datetime(t->ns); next(ps); break;
    case TK_RECSTR:
        ok = record_text(ps, t, out);
        if (ok)
            next(ps);
        break;
    case TK_MINUS:
        next(ps);
        if (t->kind == TK_INT) *out = value_int(t->int_min ? INT64_MIN : -t->i);
        else if (t->kind == TK_FLOAT) *out = value_float(-t->f);
        else if (t->kind == TK_DURATION && t->ns == 0) *out = value_duration(0);
        else if (t->kind == TK_DURATION) {
            error_at(ps, t, "a duration cannot be negative");
            ok = false;
            break;
        } else {
            not_literal(ps);
            ok = false;
            break;
        }
        next(ps);
        break;
    case TK_LBRACE:
        ok = lit_object(ps, out);
        break;
    case TK_LBRACKET:
        ok = lit_array(ps, out);
        break;
    case TK_IDENT:
        if (peek(ps)->kind == TK_COLON) {
            ok = record(ps, out);
            break;
        }
        if (t->quoted) { not_literal(ps); ok = false; }
        else if (is_kw(t, "true")) *out = value_bool(true);
        else if (is_kw(t, "false")) *out = value_bool(false);
        else if (is_kw(t, "null")) *out = value_null();
        else if (is_kw(t, "none")) *out = value_none();
        else { not_literal(ps); ok = false; }
        if (ok)
            next(ps);
        break;
    case TK_EOF:
        expected(ps, "a value");
        ok = false;
        break;
    default:
        if (expression_token(t))
            not_literal(ps);
        else
            expected(ps, "a value");
        ok = false;
        break;
    }
    ps->depth--;
    return ok && !FAILED(ps);
}

int
lang_literal_parse(const char *text, size_t len, Value *out, LangError *err)
{
    ParseState ps;
    ps_init(&ps, text, len);
    next(&ps);
    Value v = {0};
    if (lit_value(&ps, &v) && ps.tok.kind != TK_EOF) {
        if (expression_token(&ps.tok))
            not_literal(&ps);
        else
            expected(&ps, "end of text after the value");
    }
    ps_free(&ps);
    if (FAILED(&ps)) {
        value_free(&v);
        *out = value_none();
        lang_error_set(err, ps.err.code, "%s", ps.err.message);
        return -1;
    }
    *out = v;
    return 0;
}

int
lang_record_key_parse(const char *text, size_t len, Value *out, LangError *err)
{
    ParseState ps;
    ps_init(&ps, text, len);
    next(&ps);
    Value v = {0};
    if (key(&ps, &v, "a record key (integer, name or quoted string)") && ps.tok.kind != TK_EOF)
        expected(&ps, "end of text after the record key");
    ps_free(&ps);
    if (FAILED(&ps)) {
        value_free(&v);
        *out = value_none();
        lang_error_set(err, ps.err.code, "%s", ps.err.message);
        return -1;
    }
    *out = v;
    return 0;
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
    expect_kw(ps, "EXISTS", "EXISTS after IF NOT");
    return true;
}

/* duration -> DURATION   (positive; "clause" names what it follows) */
static bool
duration(ParseState *ps, int64_t *ns, const char *clause)
{
    char what[80];
    if (ps->tok.kind != TK_DURATION) {
        snprintf(what, sizeof what, "a duration (such as 30s or 5m) after %s", clause);
        expected(ps, what);
        return false;
    }
    if (ps->tok.ns <= 0) {
        error_at(ps, &ps->tok, "%s must be a positive duration", clause);
        return false;
    }
    *ns = ps->tok.ns;
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
            error_at(ps, t, "%s repeats the schema clause (%s was given already)",
                     m == SCHEMA_FULL ? "SCHEMAFULL" : "SCHEMALESS",
                     d->schema == SCHEMA_FULL ? "SCHEMAFULL" : "SCHEMALESS");
            return true;
        }
        d->schema = m;
        next(ps);
        return true;
    }
    if (is_kw(t, "IN")) {
        if (d->graph) {
            error_at(ps, t, "IN given twice");
            return true;
        }
        next(ps);
        d->graph = name(ps, "a graph name after IN");
        return true;
    }
    return false;
}

/* queuedef -> [IF NOT EXISTS] name TIMEOUT duration [ATTEMPTS INT]
 *             {PRIORITY BY path | NOT BEFORE path | DEDUPLICATE duration
 *              | SCHEMAFULL | SCHEMALESS | IN name} */
static void
define_queue(ParseState *ps, TableDecl *d)
{
    d->if_not_exists = if_not_exists(ps);
    if (FAILED(ps) || !(d->name = table_name(ps, "a queue name after DEFINE QUEUE")))
        return;
    if (!expect_kw(ps, "TIMEOUT", "TIMEOUT after the queue name (a queue needs TIMEOUT)") ||
        !duration(ps, &d->timeout_ns, "TIMEOUT"))
        return;
    const char *last = "TIMEOUT";
    if (is_kw(&ps->tok, "ATTEMPTS")) {
        next(ps);
        if (ps->tok.kind != TK_INT || ps->tok.int_min || ps->tok.i <= 0) {
            expected(ps, "a positive integer after ATTEMPTS");
            return;
        }
        d->attempts = ps->tok.i;
        next(ps);
    }
    while (!FAILED(ps) && !at_end(ps)) {
        const Token *t = &ps->tok;
        if (is_kw(t, "PRIORITY")) {
            if (d->priority_by) {
                error_at(ps, t, "PRIORITY BY given twice");
                break;
            }
            next(ps);
            if (expect_kw(ps, "BY", "BY after PRIORITY"))
                d->priority_by = path_text(ps, "a field name after PRIORITY BY");
            last = "PRIORITY BY";
        } else if (is_kw(t, "NOT")) {
            if (d->not_before) {
                error_at(ps, t, "NOT BEFORE given twice");
                break;
            }
            next(ps);
            if (expect_kw(ps, "BEFORE", "BEFORE after NOT"))
                d->not_before = path_text(ps, "a field name after NOT BEFORE");
            last = "NOT BEFORE";
        } else if (is_kw(t, "DEDUPLICATE")) {
            if (d->deduplicate_ns) {
                error_at(ps, t, "DEDUPLICATE given twice");
                break;
            }
            next(ps);
            duration(ps, &d->deduplicate_ns, "DEDUPLICATE");
            last = "DEDUPLICATE";
        } else if (is_kw(t, "ATTEMPTS")) {
            error_at(ps, t, "ATTEMPTS must follow TIMEOUT, found it after %s", last);
        } else if (is_kw(t, "TIMEOUT")) {
            error_at(ps, t, "TIMEOUT given twice");
        } else {
            bool schema = is_kw(t, "SCHEMAFULL") || is_kw(t, "SCHEMALESS");
            if (!table_clause(ps, d)) {
                expected(ps, "a queue clause (PRIORITY BY, NOT BEFORE, DEDUPLICATE, "
                             "SCHEMAFULL, SCHEMALESS, IN) or ';'");
                break;
            }
            last = schema ? "the schema clause" : "IN";
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
            expected(ps, "SCHEMAFULL, SCHEMALESS, IN or ';'");
            break;
        }
    }
}

/* on -> ON [TABLE] name */
static char *
on_table(ParseState *ps, const char *what)
{
    if (!expect_kw(ps, "ON", what))
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
    if (option) {
        next(ps);
        next(ps);
    }
    const char *found = NULL;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (is_kw(&ps->tok, type_names[i]))
            found = type_names[i];
    if (!found) {
        expected(ps, list);
        return NULL;
    }
    next(ps);
    if (!option)
        return xstrdup(found);
    if (!expect(ps, TK_GT, "'>' to close option<"))
        return NULL;
    Buf b = {0};
    buf_printf(&b, "option<%s>", found);
    return buf_steal(&b);
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
            if (s->u.define_field.type) {
                error_at(ps, t, "TYPE given twice");
                break;
            }
            next(ps);
            s->u.define_field.type = type_name(ps);
        } else if (is_kw(t, "REQUIRED")) {
            if (s->u.define_field.required) {
                error_at(ps, t, "REQUIRED given twice");
                break;
            }
            s->u.define_field.required = true;
            next(ps);
        } else {
            expected(ps, "TYPE, REQUIRED or ';'");
        }
    }
}

/* indexdef -> name ON [TABLE] name (FIELDS | COLUMNS) pathtext {',' pathtext} */
static void
define_index(ParseState *ps, Stmt *s)
{
    if (!(s->u.define_index.name = name(ps, "an index name after DEFINE INDEX")))
        return;
    if (!(s->u.define_index.table = on_table(ps, "ON after the index name")))
        return;
    if (!accept_kw(ps, "FIELDS") && !accept_kw(ps, "COLUMNS")) {
        expected(ps, "FIELDS after the table name");
        return;
    }
    size_t cap = 0;
    do {
        char *f = path_text(ps, "a field name");
        if (!f)
            return;
        GROW(s->u.define_index.fields, s->u.define_index.nfields, cap);
        s->u.define_index.fields[s->u.define_index.nfields++] = f;
    } while (accept(ps, TK_COMMA));
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
        expected(ps, "QUEUE, COLLECTION, TABLE, FIELD or INDEX after DEFINE");
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
        s->u.write.content = expr(ps);
    } else if (!at_end(ps)) {
        expected(ps, "'=', CONTENT or ';' after the target");
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
        expected(ps, "'=', CONTENT or MERGE after the target");
        return;
    }
    if (!(s->u.write.content = expr(ps)))
        return;
    if (accept_kw(ps, "WHERE"))
        s->u.write.where = expr(ps);
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
        s->u.del.where = expr(ps);
}

/* select -> SELECT ('*' | field {',' field}) FROM target [WHERE expr]
 *           [ORDER [BY] order {',' order}] [LIMIT INT]
 * field -> expr [AS name] ;  order -> path [ASC | DESC] */
static void
select_stmt(ParseState *ps, Stmt *s)
{
    s->kind = ST_SELECT;
    s->u.select.limit = -1;
    size_t cap = 0;
    if (accept(ps, TK_STAR)) {
        s->u.select.star = true;
    } else {
        if (is_kw(&ps->tok, "FROM") && peek(ps)->kind == TK_IDENT && !is_kw(peek(ps), "FROM")) {
            expected(ps, "'*' or a field list after SELECT");
            return;
        }
        do {
            Expr *e = expr(ps);
            if (!e)
                return;
            GROW(s->u.select.fields, s->u.select.nfields, cap);
            SelectField *f = &s->u.select.fields[s->u.select.nfields++];
            f->expr = e;
            f->alias = NULL;
            if (accept_kw(ps, "AS") && !(f->alias = name(ps, "a name after AS")))
                return;
        } while (accept(ps, TK_COMMA));
    }
    if (!expect_kw(ps, "FROM", "FROM after the selected fields") ||
        !target(ps, &s->u.select.from, "a table or record id after FROM"))
        return;
    if (accept_kw(ps, "WHERE") && !(s->u.select.where = expr(ps)))
        return;
    if (accept_kw(ps, "ORDER")) {
        accept_kw(ps, "BY");
        cap = 0;
        do {
            GROW(s->u.select.order, s->u.select.norder, cap);
            OrderTerm *o = &s->u.select.order[s->u.select.norder++];
            o->descending = false;
            if (!path(ps, &o->parts, &o->len, "a field name after ORDER BY"))
                return;
            if (accept_kw(ps, "DESC"))
                o->descending = true;
            else
                accept_kw(ps, "ASC");
        } while (accept(ps, TK_COMMA));
    }
    if (accept_kw(ps, "LIMIT")) {
        if (ps->tok.kind != TK_INT || ps->tok.int_min) {
            expected(ps, "a non-negative integer after LIMIT");
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
        error_at(ps, t, "CLAIM -%.*s is not a claim: the count must be positive",
                 (int)(peek(ps)->rawlen > 30 ? 30 : peek(ps)->rawlen), peek(ps)->raw);
        return;
    }
    if (t->kind == TK_INT) {
        if (t->int_min) {
            error_at(ps, t, "integer 9223372036854775808 is out of range");
            return;
        }
        if (t->i == 0) {
            error_at(ps, t, "CLAIM 0 is not a claim: the count must be positive");
            return;
        }
        s->u.claim.count = t->i;
        next(ps);
        if (!expect_kw(ps, "FROM", "FROM after the CLAIM count"))
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
            if (s->u.release.not_before) {
                error_at(ps, t, "NOT BEFORE given twice");
                break;
            }
            next(ps);
            if (expect_kw(ps, "BEFORE", "BEFORE after NOT"))
                s->u.release.not_before = expr(ps);
        } else if (is_kw(t, "FOR")) {
            if (s->u.release.for_consumer) {
                error_at(ps, t, "FOR CONSUMER given twice");
                break;
            }
            next(ps);
            if (expect_kw(ps, "CONSUMER", "CONSUMER after FOR"))
                s->u.release.for_consumer = consumer(ps, "a consumer name after FOR CONSUMER");
        } else {
            expected(ps, "NOT BEFORE, FOR CONSUMER or ';'");
        }
    }
}

/* use -> USE CONSUMER consumer */
static void
use(ParseState *ps, Stmt *s)
{
    s->kind = ST_USE_CONSUMER;
    if (expect_kw(ps, "CONSUMER", "CONSUMER after USE"))
        s->u.use_consumer.name = consumer(ps, "a consumer name after USE CONSUMER");
}

/* info -> INFO FOR TABLE name */
static void
info(ParseState *ps, Stmt *s)
{
    s->kind = ST_INFO_TABLE;
    if (expect_kw(ps, "FOR", "FOR after INFO") && expect_kw(ps, "TABLE", "TABLE after INFO FOR"))
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
        expected(ps, "QUEUE, COLLECTION or TABLE after DROP");
        return;
    }
    s->u.table_op.table = table_name(ps, "a table name after DROP");
}

/* statement -> define | create | update | delete | select | claim | release
 *            | touch | use | (BEGIN | COMMIT | CANCEL) [TRANSACTION] | info | drop */
static Stmt *
statement(ParseState *ps)
{
    Stmt *s = xcalloc(1, sizeof *s);
    s->line = ps->tok.line;
    s->kind = ST_BEGIN;  /* owns nothing until a rule sets its kind */
    const Token *t = &ps->tok;
    if (t->kind != TK_IDENT || t->quoted) {
        expected(ps, "a statement");
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
        expected(ps, "a statement (DEFINE, CREATE, UPDATE, DELETE, SELECT, CLAIM, RELEASE, "
                     "TOUCH, USE, BEGIN, COMMIT, CANCEL, INFO or DROP)");
    }
    if (!FAILED(ps) && !at_end(ps))
        expected(ps, "';' or end of text after the statement");
    if (FAILED(ps)) {
        stmt_free(s);
        return NULL;
    }
    return s;
}

Parser *
parser_new(const char *text, size_t len)
{
    Parser *p = xcalloc(1, sizeof *p);
    ps_init(&p->ps, text, len);
    return p;
}

void
parser_free(Parser *p)
{
    if (!p)
        return;
    ps_free(&p->ps);
    free(p);
}

int
parser_next(Parser *p, Stmt **out, LangError *err)
{
    ParseState *ps = &p->ps;
    *out = NULL;
    if (!p->started) {
        p->started = true;
        next(ps);
    }
    while (!FAILED(ps) && ps->tok.kind == TK_SEMI)
        next(ps);
    if (!FAILED(ps) && ps->tok.kind == TK_EOF)
        return 0;
    Stmt *s = FAILED(ps) ? NULL : statement(ps);
    if (!s) {
        lang_error_set(err, ps->err.code, "%s", ps->err.message);
        return -1;
    }
    *out = s;
    return 1;
}
