/* parse.c — the parse state: errors, the one list rule, names and paths,
 * and the Parser that walks a text statement by statement (see parse.h and
 * parse_state.h).
 *
 * A recursive-descent parser in the manner of Lua's lparser.c, in four
 * files: this one, parse_expr.c (expressions, and constants, which are
 * expressions restricted to constant values), parse_stmt.c (statements)
 * and parse_define.c (the definitions: DEFINE and ALTER QUEUE).  Each parse function opens with the rule it parses.  A raw
 * newline inside a quoted string ends it as unterminated (lex.c). */
#include "parse.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lang.h"
#include "parse_state.h"

struct Parser {
    ParseState ps;
    bool started;
};

/* ---- the state ---- */

void
lang_parse_init(ParseState *ps, const char *text, size_t len)
{
    memset(ps, 0, offsetof(ParseState, pool));
    lang_lex_init(&ps->lx, text, len, &ps->err);
}

void
lang_parse_free(ParseState *ps)
{
    lang_token_free(&ps->tok);
    lang_token_free(&ps->ahead);
    uintptr_t pool = (uintptr_t)ps->pool, end = (uintptr_t)(ps->pool + PARSE_POOL);
    while (ps->spare) {
        Expr *e = ps->spare;
        ps->spare = e->u.unary.arg;
        if ((uintptr_t)e < pool || (uintptr_t)e >= end)
            free(e);
    }
}

int
lang_parse_result(const ParseState *ps, LangError *err)
{
    if (!FAILED(ps))
        return 0;
    lang_error_set(err, ps->err.code, "%s", ps->err.message);
    return -1;
}

/* ---- errors ---- */

void
lang_parse_error(ParseState *ps, const Token *t, const char *fmt, ...)
{
    if (FAILED(ps))
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lang_error_set(&ps->err, LANG_PARSE_ERROR, "%s at line %d, column %d", msg, t->line, t->col);
}

void
lang_parse_expected(ParseState *ps, const char *what)
{
    char found[64];
    lang_token_describe(&ps->tok, found, sizeof found);
    lang_parse_error(ps, &ps->tok, "expected %s, found %s", what, found);
}

bool
lang_parse_expect(ParseState *ps, TokKind k, const char *what)
{
    if (accept(ps, k))
        return true;
    lang_parse_expected(ps, what);
    return false;
}

bool
lang_parse_expect_kw(ParseState *ps, const char *kw, const char *what)
{
    if (accept_kw(ps, kw))
        return true;
    lang_parse_expected(ps, what);
    return false;
}

void
lang_parse_not_constant(ParseState *ps)
{
    char found[64];
    lang_token_describe(&ps->tok, found, sizeof found);
    lang_parse_error(ps, &ps->tok, "record content must be a literal value, found %s", found);
}

bool
lang_parse_nonconstant(ParseState *ps)
{
    if (!ps->constant)
        return false;
    switch (ps->tok.kind) {
    case TK_DOT:
    case TK_DCOLON:
    case TK_LPAREN:
    case TK_EQ:
    case TK_EQEQ:
    case TK_NE:
    case TK_LT:
    case TK_LE:
    case TK_GT:
    case TK_GE:
    case TK_PLUS:
    case TK_MINUS:
    case TK_STAR:
    case TK_SLASH:
    case TK_BANG:
    case TK_ANDAND:
    case TK_OROR:
    case TK_IDENT: lang_parse_not_constant(ps); return true;
    default: return false;
    }
}

/* The source text of a bracket, quoted, for messages. */
static const char *
bracket_text(TokKind k)
{
    switch (k) {
    case TK_LBRACE: return "'{'";
    case TK_RBRACE: return "'}'";
    case TK_LBRACKET: return "'['";
    case TK_RBRACKET: return "']'";
    case TK_LPAREN: return "'('";
    case TK_RPAREN: return "')'";
    case TK_LT: return "'<'";
    case TK_GT: return "'>'";
    default: return "the bracket";
    }
}

bool
lang_parse_check_match(ParseState *ps, TokKind what, TokKind who, int line, int col)
{
    if (accept(ps, what))
        return true;
    if (!lang_parse_nonconstant(ps)) {
        char found[64];
        lang_token_describe(&ps->tok, found, sizeof found);
        lang_parse_error(ps, &ps->tok, "%s expected (to close %s at line %d, column %d), found %s",
                         bracket_text(what), bracket_text(who), line, col, found);
    }
    return false;
}

bool
lang_parse_list(ParseState *ps, TokKind close, ParseItem item, void *ctx)
{
    if (close == TK_EOF) {
        do {
            if (!item(ps, ctx))
                return false;
        } while (accept(ps, TK_COMMA));
        return !FAILED(ps);
    }
    TokKind open = ps->tok.kind;
    int line = ps->tok.line, col = ps->tok.col;
    next(ps);
    while (!FAILED(ps) && ps->tok.kind != close) {
        if (!item(ps, ctx))
            return false;
        if (!accept(ps, TK_COMMA))
            break;
    }
    return !FAILED(ps) && lang_parse_check_match(ps, close, open, line, col);
}

/* ---- names ---- */

/* name -> IDENT */
char *
lang_parse_name(ParseState *ps, const char *what)
{
    if (ps->tok.kind != TK_IDENT) {
        lang_parse_expected(ps, what);
        return NULL;
    }
    char *s = lang_xstrndup(ps->tok.text, ps->tok.len);
    next(ps);
    return s;
}

/* tablename -> IDENT that lang_table_name_check accepts. */
char *
lang_parse_table_name(ParseState *ps, const char *what)
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

/* path -> IDENT {'.' IDENT} */
bool
lang_parse_path(ParseState *ps, char ***parts, size_t *len, const char *what)
{
    size_t cap = 0;
    *parts = NULL;
    *len = 0;
    do {
        char *part = lang_parse_name(ps, *len ? "a field name after '.'" : what);
        if (!part)
            return false;
        GROW(*parts, *len, cap);
        (*parts)[(*len)++] = part;
    } while (!FAILED(ps) && accept(ps, TK_DOT));
    return !FAILED(ps);
}

void
lang_parse_free_parts(char **parts, size_t len)
{
    for (size_t i = 0; i < len; i++)
        free(parts[i]);
    free(parts);
}

/* string -> STRING | IDENT, as a C string (no NUL inside) */
char *
lang_parse_cstring(ParseState *ps, const Token *t, const char *what)
{
    if (memchr(t->text, '\0', t->len)) {
        lang_parse_error(ps, t, "%s cannot contain a NUL character", what);
        return NULL;
    }
    return lang_xstrndup(t->text, t->len);
}

/* ---- the Parser ---- */

Parser *
lang_parser_new(const char *text, size_t len)
{
    Parser *p = lang_xcalloc(1, sizeof *p);
    lang_parse_init(&p->ps, text, len);
    return p;
}

void
lang_parser_free(Parser *p)
{
    if (!p)
        return;
    lang_parse_free(&p->ps);
    free(p);
}

/* text -> {';'} [statement {';' {';'}} ] */
int
lang_parser_next(Parser *p, Stmt **out, LangError *err)
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
    Stmt *s = FAILED(ps) ? NULL : lang_parse_statement(ps);
    if (!s)
        return lang_parse_result(ps, err);
    *out = s;
    return 1;
}
