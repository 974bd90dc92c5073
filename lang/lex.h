/* lex.h — the tokens of the queuefs language.
 *
 * A small hand-written lexer in the manner of Lua's llex.c.  Keywords are
 * not reserved: every word is a TK_IDENT and the parser matches keywords
 * case-insensitively where its grammar expects one, so a field may be
 * called `value`, `type` or `from`.
 *
 *     Lexer lx; Token t = {0}; LangError err = {0};
 *     lang_lex_init(&lx, text, len, &err);
 *     while (lang_lex_next(&lx, &t) > TK_EOF) use(&t);   // TK_ERROR: "err" says why
 *     lang_token_free(&t);
 *
 * Every byte of the text is checked as it is scanned: a NUL byte, invalid
 * UTF-8 (in strings, comments and identifiers alike) and raw control
 * characters inside a string are errors, reported with line and column
 * (1-based, the column counted in bytes). */
#ifndef QUEUEFS_LEX_H
#define QUEUEFS_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"

typedef enum TokKind {
    TK_ERROR = -1, /* the lexer failed; the LangError says why */
    TK_EOF = 0,
    TK_IDENT,    /* word or `backtick quoted`: text/len */
    TK_INT,      /* integer: i */
    TK_FLOAT,    /* number with '.' or an exponent: f */
    TK_DURATION, /* 30s, 1h30m, 500ms: ns */
    TK_STRING,   /* '…' or "…", escapes decoded: text/len */
    TK_DATETIME, /* d'…': ns */
    TK_RECSTR,   /* r'…': the text between the quotes, decoded */
    TK_SEMI,
    TK_COMMA,
    TK_DOT,
    TK_COLON,
    TK_DCOLON, /* ; , . : :: */
    TK_LPAREN,
    TK_RPAREN,
    TK_LBRACE,
    TK_RBRACE, /* ( ) { } */
    TK_LBRACKET,
    TK_RBRACKET, /* [ ] */
    TK_EQ,
    TK_EQEQ,
    TK_NE,
    TK_LT,
    TK_LE,
    TK_GT,
    TK_GE, /* = == != < <= > >= */
    TK_PLUS,
    TK_MINUS,
    TK_STAR,
    TK_SLASH, /* + - * / */
    TK_BANG,
    TK_ANDAND,
    TK_OROR,  /* ! && || */
    TK_TILDE, /* ~ (a fence: q:7~N) */
} TokKind;

typedef struct Token {
    TokKind kind;
    int line, col;    /* where the token starts */
    const char *raw;  /* the token's source text … */
    size_t rawlen;    /* … and its length */
    const char *text; /* TK_IDENT, TK_STRING, TK_RECSTR: the name or */
    size_t len;       /* decoded contents (not NUL-terminated) */
    bool quoted;      /* TK_IDENT written in backticks (never a keyword) */
    bool int_min;     /* TK_INT 9223372036854775808: valid only negated */
    int64_t i;        /* TK_INT */
    double f;         /* TK_FLOAT */
    int64_t ns;       /* TK_DURATION, TK_DATETIME */
    Buf buf;          /* storage for decoded text; reused token to token */
} Token;

typedef struct Lexer {
    const char *src, *p, *end;
    const char *bol; /* start of the current line */
    int line;
    bool failed; /* an error was reported: TK_ERROR from now on */
    LangError *err;
} Lexer;

/* Starts scanning "len" bytes of "src" (not copied).  Errors go to "err". */
void lang_lex_init(Lexer *lx, const char *src, size_t len, LangError *err);
/* Scans the next token into "t" and returns its kind.  "t->text" stays
 * valid until "t" is scanned into again.  After TK_ERROR or TK_EOF every
 * further call returns the same kind again. */
TokKind lang_lex_next(Lexer *lx, Token *t);
/* Releases what a token owns; it stays usable. */
void lang_token_free(Token *t);
/* Writes a short description of "t" for messages: "';'", "'jobs'",
 * "end of text" (into "out", at most "size" bytes). */
void lang_token_describe(const Token *t, char *out, size_t size);

#endif
