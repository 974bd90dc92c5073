/* parse_state.h — the parse state that the parser's files share: parse.c
 * (the state, errors, lists, names), parse_expr.c (expressions and
 * constants), parse_stmt.c (statements) and parse_define.c (DEFINE and
 * ALTER QUEUE).  Not for other callers: they use parse.h.
 *
 * The state carries the current token, one token of lookahead and the
 * first error, as SQLite's parser does: once the error is set every parse
 * function returns early (NULL or false) and the loops stop, so the first
 * message is the one the caller sees.  Keywords are matched
 * case-insensitively on identifiers only where the grammar expects one;
 * nothing is reserved. */
#ifndef QUEUEFS_PARSE_STATE_H
#define QUEUEFS_PARSE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "ast.h"
#include "lex.h"

/* Nodes a constant uses before it allocates any: its nesting plus one. */
#define PARSE_POOL 8

typedef struct ParseState {
    Lexer lx;
    Token tok;   /* the current token */
    Token ahead; /* the one after it, when has_ahead */
    bool has_ahead;
    bool constant; /* parsing a constant (lang_literal_parse): no field
                             paths, calls, parentheses or operators */
    int depth;     /* nesting of expressions, for PARSE_MAX_DEPTH */
    LangError err; /* the first error */
    /* A constant's nodes: each item is folded into its object or array as
     * soon as it is parsed, so a few nodes serve a whole constant. */
    Expr *spare; /* spent nodes, linked through u.unary.arg */
    int npool;   /* nodes of "pool" handed out so far */
    Expr pool[PARSE_POOL];
} ParseState;

#define FAILED(ps) ((ps)->err.code != LANG_OK)

/* Doubles the capacity of an array when it is full. */
#define GROW(arr, len, cap) \
    do { \
        if ((len) == (cap)) { \
            (cap) = (cap) ? (cap)*2 : 4; \
            (arr) = lang_xrealloc((arr), (cap) * sizeof *(arr)); \
        } \
    } while (0)

/* ---- tokens ---- */

/* Steps to the next token. */
static inline void
next(ParseState *ps)
{
    if (ps->has_ahead) {
        Token t = ps->tok;
        ps->tok = ps->ahead;
        ps->ahead = t;
        ps->has_ahead = false;
    } else {
        lang_lex_next(&ps->lx, &ps->tok);
    }
}

/* The token after the current one (valid until the next step). */
static inline const Token *
peek(ParseState *ps)
{
    if (!ps->has_ahead) {
        lang_lex_next(&ps->lx, &ps->ahead);
        ps->has_ahead = true;
    }
    return &ps->ahead;
}

/* True when "t" is the unquoted word "kw", in any case. */
static inline bool
is_kw(const Token *t, const char *kw)
{
    return t->kind == TK_IDENT && !t->quoted && strlen(kw) == t->len &&
           strncasecmp(t->text, kw, t->len) == 0;
}

/* Consumes keyword "kw" when it is the current token. */
static inline bool
accept_kw(ParseState *ps, const char *kw)
{
    if (!is_kw(&ps->tok, kw))
        return false;
    next(ps);
    return true;
}

/* Consumes a token of kind "k" when it is the current one. */
static inline bool
accept(ParseState *ps, TokKind k)
{
    if (ps->tok.kind != k)
        return false;
    next(ps);
    return true;
}

/* True at the end of a statement: ';' or the end of the text. */
static inline bool
at_end(const ParseState *ps)
{
    return ps->tok.kind == TK_SEMI || ps->tok.kind == TK_EOF;
}

/* ---- the state and its errors (parse.c) ---- */

/* Starts a state over "len" bytes of "text" (not copied); no token is
 * read until the first next(). */
void lang_parse_init(ParseState *ps, const char *text, size_t len);
/* Releases what the state owns (its tokens, a spare node). */
void lang_parse_free(ParseState *ps);
/* Copies the state's error into "err": 0 when there is none, else -1 (the
 * return convention of lang_literal_parse and lang_parser_next). */
int lang_parse_result(const ParseState *ps, LangError *err);

/* Sets the error (unless one is set), LANG_PARSE_ERROR, with " at line L,
 * column C" of "t" after the message. */
void lang_parse_error(ParseState *ps, const Token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "expected <what>, found <current token> at line L, column C" */
void lang_parse_expected(ParseState *ps, const char *what);
/* Consumes a token of kind "k" or fails with "expected <what>". */
bool lang_parse_expect(ParseState *ps, TokKind k, const char *what);
/* Consumes keyword "kw" or fails with "expected <what>". */
bool lang_parse_expect_kw(ParseState *ps, const char *kw, const char *what);
/* In a constant, refuses a current token that can only continue an
 * expression (an operator, '(', '.', '::', a name): "record content must be
 * a literal value, found '+'".  True when it did. */
bool lang_parse_nonconstant(ParseState *ps);
/* Refuses the current token as what makes a constant an expression. */
void lang_parse_not_constant(ParseState *ps);

/* Consumes "what", the closer of "who" opened at line "line", column "col",
 * or fails: "'}' expected (to close '{' at line 1, column 5), found 'b' at
 * line 1, column 9" (in a constant, lang_parse_nonconstant's message when
 * it applies). */
bool lang_parse_check_match(ParseState *ps, TokKind what, TokKind who, int line, int col);

/* What a list's items go into: its node (an Expr or a Stmt) and the room
 * the node's array has (for GROW). */
typedef struct ParseItems {
    void *node;
    size_t cap;
} ParseItems;

/* Parses one item of a list into "ctx" (a ParseItems); false (with the error set) when it
 * failed. */
typedef bool (*ParseItem)(ParseState *ps, void *ctx);
/* list -> open [item {',' item} [',']] close
 * The current token opens the list ('{', '[' or '('); "close" is its
 * closer, checked with lang_parse_check_match.  With "close" TK_EOF the
 * list is bare, item {',' item}, and the current token is its first item's. */
bool lang_parse_list(ParseState *ps, TokKind close, ParseItem item, void *ctx);

/* ---- names (parse.c) ---- */

/* name -> IDENT: a new string, or NULL with "expected <what>". */
char *lang_parse_name(ParseState *ps, const char *what);
/* path -> IDENT {'.' IDENT}: the parts, as new strings, in "*parts" (the
 * caller frees them with lang_parse_free_parts, also on failure). */
bool lang_parse_path(ParseState *ps, char ***parts, size_t *len, const char *what);
/* Frees "len" strings and the array holding them. */
void lang_parse_free_parts(char **parts, size_t len);
/* tablename -> IDENT that lang_table_name_check accepts: a new string, or
 * NULL with "expected <what>" or the rule's message. */
char *lang_parse_table_name(ParseState *ps, const char *what);
/* The text of STRING or IDENT "t" as a new C string, or NULL with "<what>
 * cannot contain a NUL character". */
char *lang_parse_cstring(ParseState *ps, const Token *t, const char *what);

/* ---- expressions and constants (parse_expr.c) ---- */

/* expr -> or  (see parse_expr.c): the new tree, or NULL with the error
 * set.  With "ps->constant" the tree is one EX_LITERAL. */
Expr *lang_parse_expr(ParseState *ps);
/* notbefore -> CRON STRING [IN STRING] | expr  (the operand of NOT
 * BEFORE): CRON 'e' [IN 'z'] is the call time::cron('e'[, 'z']), its
 * expression checked here (a ParseError at the string); NULL with the
 * error set. */
Expr *lang_parse_not_before(ParseState *ps);
/* key -> INT | IDENT | STRING: a record key into "*out" (caller frees), or
 * false with "expected <what>". */
bool lang_parse_key(ParseState *ps, Value *out, const char *what);

/* ---- statements (parse_stmt.c) ---- */

/* statement -> define | create | … (see parse_stmt.c), up to its ';' or
 * the end of the text: the new statement (lang_stmt_free), or NULL with the
 * error set. */
Stmt *lang_parse_statement(ParseState *ps);
/* duration -> DURATION, positive: into "*ns", or false with "expected a
 * duration … after <clause>" or "<clause> must be a positive duration". */
bool lang_parse_duration(ParseState *ps, int64_t *ns, const char *clause);
/* Consumes the keyword that opens clause "name", unless it was "given"
 * already: then false, with "<name> given twice". */
bool lang_parse_clause_once(ParseState *ps, bool given, const char *name);

/* ---- definitions (parse_define.c) ---- */

/* define -> DEFINE (QUEUE | COLLECTION | TABLE | FIELD | INDEX) …, after
 * DEFINE: sets "s"'s kind and fills it in (the error set on failure). */
void lang_parse_define(ParseState *ps, Stmt *s);
/* alter -> ALTER QUEUE name alterclause {alterclause}, after ALTER: the
 * same. */
void lang_parse_alter(ParseState *ps, Stmt *s);

#endif
