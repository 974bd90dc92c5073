/* lex.c — text to tokens (see lex.h). */
#include "lex.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "value.h"

#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_ALPHA(c) (((c) | 0x20) >= 'a' && ((c) | 0x20) <= 'z')
#define IS_IDSTART(c) (IS_ALPHA(c) || (c) == '_')
#define IS_IDCHAR(c) (IS_IDSTART(c) || IS_DIGIT(c))

void
lang_lex_init(Lexer *lx, const char *src, size_t len, LangError *err)
{
    lx->src = lx->p = lx->bol = src;
    lx->end = src + len;
    lx->line = 1;
    lx->err = err;
    lx->failed = false;
}

void
lang_token_free(Token *t)
{
    lang_buf_free(&t->buf);
    t->text = NULL;
    t->len = 0;
}

static int
col_of(const Lexer *lx, const char *at)
{
    return (int)(at - lx->bol) + 1;
}

/* The byte at "q" + "k", or 0 past the end. */
static unsigned char
byte_at(const Lexer *lx, const char *q, size_t k)
{
    return (size_t)(lx->end - q) > k ? (unsigned char)q[k] : 0;
}

/* Length of the well-formed UTF-8 sequence at "q" (a lead byte >= 0x80),
 * or 0 when it is not one. */
static int
utf8_len(const Lexer *lx, const char *q)
{
    unsigned char c = (unsigned char)q[0];
    size_t avail = (size_t)(lx->end - q);
    int n;
    unsigned lo = 0x80, hi = 0xBF; /* bounds of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (avail < (size_t)n)
        return 0;
    unsigned char c1 = (unsigned char)q[1];
    if (c1 < lo || c1 > hi)
        return 0;
    for (int k = 2; k < n; k++)
        if (((unsigned char)q[k] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* Ends the text after an error set in lx->err: "t" is TK_ERROR, and so
 * is every token asked for after it. */
static TokKind
lex_stop(Lexer *lx, Token *t)
{
    t->kind = TK_ERROR;
    lx->p = lx->end;
    lx->failed = true;
    return TK_ERROR;
}

static TokKind lex_fail(Lexer *lx, Token *t, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static TokKind
lex_fail(Lexer *lx, Token *t, const char *at, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lang_error_set(lx->err, LANG_PARSE_ERROR, "%s at line %d, column %d", msg, lx->line,
                   col_of(lx, at));
    return lex_stop(lx, t);
}

/* A string or quoted identifier that "start" opens and nothing closes
 * before the end of its line. */
static TokKind
unterminated(Lexer *lx, Token *t, const char *start, const char *what)
{
    lang_error_set(lx->err, LANG_PARSE_ERROR, "unterminated %s starting at line %d, column %d",
                   what, lx->line, col_of(lx, start));
    return lex_stop(lx, t);
}

/* Reports the byte at "at", which no token may contain: NUL, invalid
 * UTF-8, or a character the grammar has no use for. */
static TokKind
bad_byte(Lexer *lx, Token *t, const char *at, const char *where)
{
    unsigned char c = (unsigned char)*at;
    char what[64];
    if (c == 0)
        return lex_fail(lx, t, at, "NUL byte%s", where);
    if (c >= 0x80) {
        int n = utf8_len(lx, at);
        if (n == 0)
            return lex_fail(lx, t, at, "invalid UTF-8%s", where);
        snprintf(what, sizeof what, "unexpected character '%.*s'", n, at);
    } else if (c < 0x20 || c == 0x7F)
        snprintf(what, sizeof what, "unexpected control character (byte 0x%02x)", c);
    else
        snprintf(what, sizeof what, "unexpected character '%c'", c);
    return lex_fail(lx, t, at, "%s", what);
}

/* Checks the non-ASCII or NUL byte at lx->p inside a comment and steps
 * over its character; false (with the error set) when it is bad. */
static bool
comment_char(Lexer *lx, Token *t)
{
    unsigned char c = (unsigned char)*lx->p;
    if (c == 0 || (c >= 0x80 && utf8_len(lx, lx->p) == 0)) {
        bad_byte(lx, t, lx->p, " in a comment");
        return false;
    }
    lx->p += c >= 0x80 ? utf8_len(lx, lx->p) : 1;
    return true;
}

/* Skips white space and comments; false on a bad byte inside a comment. */
static bool
skip_blank(Lexer *lx, Token *t)
{
    while (lx->p < lx->end) {
        char c = *lx->p;
        if (c == '\n') {
            lx->p++;
            lx->line++;
            lx->bol = lx->p;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->p++;
        } else if (c == '#' || (c == '-' && byte_at(lx, lx->p, 1) == '-')) {
            while (lx->p < lx->end && *lx->p != '\n') {
                unsigned char b = (unsigned char)*lx->p;
                if (b != 0 && b < 0x80)
                    lx->p++;
                else if (!comment_char(lx, t))
                    return false;
            }
        } else if (c == '/' && byte_at(lx, lx->p, 1) == '*') {
            int line = lx->line, col = col_of(lx, lx->p);
            lx->p += 2;
            for (;;) {
                if (lx->p >= lx->end) {
                    lang_error_set(lx->err, LANG_PARSE_ERROR,
                                   "unterminated comment starting at line %d, column %d", line,
                                   col);
                    t->kind = TK_ERROR;
                    lx->failed = true;
                    return false;
                }
                unsigned char b = (unsigned char)*lx->p;
                if (b == '*' && byte_at(lx, lx->p, 1) == '/') {
                    lx->p += 2;
                    break;
                } else if (b == '\n') {
                    lx->p++;
                    lx->line++;
                    lx->bol = lx->p;
                } else if (b != 0 && b < 0x80) {
                    lx->p++;
                } else if (!comment_char(lx, t)) {
                    return false;
                }
            }
        } else {
            break;
        }
    }
    return true;
}

static void
put_utf8(Buf *b, uint32_t cp)
{
    char s[4];
    size_t n;
    if (cp < 0x80) {
        s[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        s[0] = (char)(0xC0 | (cp >> 6));
        s[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        s[0] = (char)(0xE0 | (cp >> 12));
        s[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        s[0] = (char)(0xF0 | (cp >> 18));
        s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        s[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    lang_buf_append(b, s, n);
}

/* Four hex digits at "q" into "*cp"; false when they are not. */
static bool
hex4(const Lexer *lx, const char *q, uint32_t *cp)
{
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char c = byte_at(lx, q, (size_t)k);
        v <<= 4;
        if (IS_DIGIT(c))
            v |= (uint32_t)(c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            v |= (uint32_t)((c | 0x20) - 'a' + 10);
        else
            return false;
    }
    *cp = v;
    return true;
}

/* string -> '\'' {char} '\'' | '"' {char} '"'
 * Decodes the string starting at lx->p (its opening quote) into t->buf. */
static TokKind
lex_string(Lexer *lx, Token *t)
{
    const char *start = lx->p;
    char q = *lx->p++;
    lang_buf_reset(&t->buf);
    for (;;) {
        const char *run = lx->p;
        while (lx->p < lx->end) {
            unsigned char c = (unsigned char)*lx->p;
            if (c < 0x20 || c >= 0x80 || c == '\\' || c == (unsigned char)q)
                break;
            lx->p++;
        }
        if (lx->p > run)
            lang_buf_append(&t->buf, run, (size_t)(lx->p - run));
        if (lx->p >= lx->end || *lx->p == '\n')
            return unterminated(lx, t, start, "string");
        unsigned char c = (unsigned char)*lx->p;
        if (c == (unsigned char)q) {
            lx->p++;
            break;
        }
        if (c >= 0x80) {
            int n = utf8_len(lx, lx->p);
            if (n == 0)
                return lex_fail(lx, t, lx->p, "invalid UTF-8 in a string");
            lang_buf_append(&t->buf, lx->p, (size_t)n);
            lx->p += n;
            continue;
        }
        if (c < 0x20) {
            if (c == 0)
                return lex_fail(lx, t, lx->p, "NUL byte in a string");
            char what[32];
            snprintf(what, sizeof what, "byte 0x%02x", c);
            return lex_fail(lx, t, lx->p,
                            "control character (%s) in a string: write it as an escape", what);
        }
        /* c == '\\' */
        const char *esc = lx->p;
        unsigned char e = byte_at(lx, lx->p, 1);
        int out = lang_escape_byte(e); /* JSON's one-letter escapes */
        if (out < 0 && (e == '\'' || e == '/' || e == '`'))
            out = e; /* the quotes and the slash stand for themselves */
        if (out >= 0) {
            lang_buf_putc(&t->buf, (char)out);
            lx->p += 2;
            continue;
        }
        if (e != 'u') {
            char what[16];
            if (e >= 0x20 && e < 0x7F)
                snprintf(what, sizeof what, "\\%c", e);
            else
                snprintf(what, sizeof what, "\\ (byte 0x%02x)", e);
            return lex_fail(lx, t, esc, "invalid escape '%s' in a string", what);
        }
        uint32_t cp, lo;
        if (!hex4(lx, lx->p + 2, &cp))
            return lex_fail(lx, t, esc, "expected four hex digits after \\u");
        lx->p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return lex_fail(lx, t, esc, "unpaired surrogate \\u%.4s in a string", esc + 2);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (byte_at(lx, lx->p, 0) != '\\' || byte_at(lx, lx->p, 1) != 'u' ||
                !hex4(lx, lx->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return lex_fail(lx, t, esc, "unpaired surrogate \\u%.4s in a string", esc + 2);
            lx->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        put_utf8(&t->buf, cp);
    }
    t->text = t->buf.data ? t->buf.data : "";
    t->len = t->buf.len;
    return TK_STRING;
}

/* ident -> '`' {char} '`'   (\` and \\ are the only escapes) */
static TokKind
lex_backtick(Lexer *lx, Token *t)
{
    const char *start = lx->p++;
    lang_buf_reset(&t->buf);
    for (;;) {
        if (lx->p >= lx->end || *lx->p == '\n')
            return unterminated(lx, t, start, "`identifier`");
        unsigned char c = (unsigned char)*lx->p;
        if (c == '`') {
            lx->p++;
            break;
        }
        if (c == '\\' && (byte_at(lx, lx->p, 1) == '`' || byte_at(lx, lx->p, 1) == '\\')) {
            lang_buf_putc(&t->buf, lx->p[1]);
            lx->p += 2;
        } else if (c < 0x20 || c == 0x7F) {
            return bad_byte(lx, t, lx->p, " in an identifier");
        } else if (c >= 0x80) {
            int n = utf8_len(lx, lx->p);
            if (n == 0)
                return bad_byte(lx, t, lx->p, " in an identifier");
            lang_buf_append(&t->buf, lx->p, (size_t)n);
            lx->p += n;
        } else {
            lang_buf_putc(&t->buf, (char)c);
            lx->p++;
        }
    }
    if (t->buf.len == 0)
        return lex_fail(lx, t, start, "empty `identifier`");
    t->text = t->buf.data;
    t->len = t->buf.len;
    t->quoted = true;
    return TK_IDENT;
}

static bool
is_micro(const Lexer *lx, const char *q)
{
    return byte_at(lx, q, 0) == 0xC2 && byte_at(lx, q, 1) == 0xB5;
}

/* number -> digits ['.' digits] [('e'|'E') ['+'|'-'] digits]
 * duration -> digits unit {digits unit} */
static TokKind
lex_number(Lexer *lx, Token *t)
{
    const char *s = lx->p, *q = s;
    bool is_float = false;
    while (q < lx->end && IS_DIGIT(*q))
        q++;
    if (byte_at(lx, q, 0) == '.' && IS_DIGIT(byte_at(lx, q, 1))) {
        is_float = true;
        q++;
        while (q < lx->end && IS_DIGIT(*q))
            q++;
    }
    if ((byte_at(lx, q, 0) | 0x20) == 'e') {
        unsigned char c1 = byte_at(lx, q, 1);
        size_t k = (c1 == '+' || c1 == '-') ? 2 : 1;
        if (IS_DIGIT(byte_at(lx, q, k))) {
            is_float = true;
            q += k;
            while (q < lx->end && IS_DIGIT(*q))
                q++;
        }
    }
    unsigned char next = byte_at(lx, q, 0);
    if (IS_IDSTART(next) || is_micro(lx, q)) {
        /* a duration, or garbage glued to a number */
        const char *d = q;
        while (d < lx->end && (IS_IDCHAR(*d) || is_micro(lx, d)))
            d += is_micro(lx, d) ? 2 : 1;
        char text[48];
        snprintf(text, sizeof text, "%.*s", (int)(d - s) > 40 ? 40 : (int)(d - s), s);
        if (is_float || lang_duration_parse(s, (size_t)(d - s), &t->ns) != 0)
            return lex_fail(lx, t, s,
                            "invalid number or duration '%s' (durations are written "
                            "like 30s, 1h30m, 500ms)",
                            text);
        lx->p = d;
        return TK_DURATION;
    }
    lx->p = q;
    if (is_float) {
        char tmp[64];
        char *heap = NULL, *text = tmp;
        size_t n = (size_t)(q - s);
        if (n >= sizeof tmp)
            text = heap = lang_xmalloc(n + 1);
        memcpy(text, s, n);
        text[n] = '\0';
        t->f = strtod(text, NULL);
        free(heap);
        if (t->f > 1.7976931348623157e308) {
            snprintf(tmp, sizeof tmp, "%.*s", (int)(n > 40 ? 40 : n), s);
            return lex_fail(lx, t, s, "number '%s' is out of range", tmp);
        }
        return TK_FLOAT;
    }
    uint64_t v = 0;
    for (const char *d = s; d < q; d++) {
        unsigned dig = (unsigned)(*d - '0');
        if (v > (UINT64_C(9223372036854775808) - dig) / 10) {
            char text[48];
            snprintf(text, sizeof text, "%.*s", (int)(q - s) > 40 ? 40 : (int)(q - s), s);
            return lex_fail(lx, t, s, "integer '%s' is out of range", text);
        }
        v = v * 10 + dig;
    }
    t->int_min = v == UINT64_C(9223372036854775808);
    t->i = t->int_min ? INT64_MIN : (int64_t)v;
    return TK_INT;
}

/* The punctuation of the grammar: a character alone, and the token it
 * makes with "second" after it (TK_ERROR: alone, it is no token). */
static const struct Punctuation {
    char c, second;
    TokKind alone, paired;
} punctuation[] = {
    {';', 0, TK_SEMI, TK_ERROR},     {',', 0, TK_COMMA, TK_ERROR},
    {'.', 0, TK_DOT, TK_ERROR},      {'(', 0, TK_LPAREN, TK_ERROR},
    {')', 0, TK_RPAREN, TK_ERROR},   {'{', 0, TK_LBRACE, TK_ERROR},
    {'}', 0, TK_RBRACE, TK_ERROR},   {'[', 0, TK_LBRACKET, TK_ERROR},
    {']', 0, TK_RBRACKET, TK_ERROR}, {'+', 0, TK_PLUS, TK_ERROR},
    {'-', 0, TK_MINUS, TK_ERROR},    {'*', 0, TK_STAR, TK_ERROR},
    {'/', 0, TK_SLASH, TK_ERROR},    {':', ':', TK_COLON, TK_DCOLON},
    {'=', '=', TK_EQ, TK_EQEQ},      {'!', '=', TK_BANG, TK_NE},
    {'<', '=', TK_LT, TK_LE},        {'>', '=', TK_GT, TK_GE},
    {'&', '&', TK_ERROR, TK_ANDAND}, {'|', '|', TK_ERROR, TK_OROR},
    {'~', 0, TK_TILDE, TK_ERROR},
};

/* punct -> ; , . ( ) { } [ ] + - * / : :: = == ! != < <= > >= && || ~
 * The punctuation at lx->p, the longer token first; anything else is an
 * unexpected character. */
static TokKind
lex_punctuation(Lexer *lx, Token *t)
{
    const char *s = lx->p;
    for (size_t i = 0; i < sizeof punctuation / sizeof *punctuation; i++) {
        const struct Punctuation *p = &punctuation[i];
        if (*s != p->c)
            continue;
        if (p->second && byte_at(lx, s, 1) == (unsigned char)p->second) {
            lx->p += 2;
            return p->paired;
        }
        if (p->alone != TK_ERROR) {
            lx->p += 1;
            return p->alone;
        }
        break;
    }
    return bad_byte(lx, t, s, "");
}

TokKind
lang_lex_next(Lexer *lx, Token *t)
{
    t->quoted = false;
    t->int_min = false;
    t->text = NULL;
    t->len = 0;
    if (lx->failed) {
        t->kind = TK_ERROR;
        t->raw = lx->end;
        t->rawlen = 0;
        return TK_ERROR;
    }
    if (!skip_blank(lx, t)) {
        t->kind = TK_ERROR;
        lx->p = lx->end;
        t->raw = lx->p;
        t->rawlen = 0;
        return TK_ERROR;
    }
    const char *s = lx->p;
    t->raw = s;
    t->line = lx->line;
    t->col = col_of(lx, s);
    TokKind k;
    if (s >= lx->end) {
        k = TK_EOF;
    } else {
        unsigned char c = (unsigned char)*s;
        unsigned char c1 = byte_at(lx, s, 1);
        if (IS_IDSTART(c)) {
            if ((c == 'd' || c == 'r') && (c1 == '\'' || c1 == '"') &&
                !(s > lx->src && IS_IDCHAR(s[-1]))) {
                lx->p++;
                k = lex_string(lx, t);
                if (k == TK_STRING && c == 'd') {
                    if (lang_datetime_parse(t->text, t->len, &t->ns) != 0) {
                        char text[64];
                        snprintf(text, sizeof text, "%.*s", t->len > 40 ? 40 : (int)t->len,
                                 t->text);
                        lx->p = s; /* report at the literal */
                        k = lex_fail(lx, t, s, "invalid datetime d'%s'", text);
                    } else
                        k = TK_DATETIME;
                } else if (k == TK_STRING)
                    k = TK_RECSTR;
            } else {
                const char *q = s + 1;
                while (q < lx->end && IS_IDCHAR(*q))
                    q++;
                lx->p = q;
                t->text = s;
                t->len = (size_t)(q - s);
                k = TK_IDENT;
            }
        } else if (IS_DIGIT(c)) {
            k = lex_number(lx, t);
        } else if (c == '\'' || c == '"') {
            k = lex_string(lx, t);
        } else if (c == '`') {
            k = lex_backtick(lx, t);
        } else {
            k = lex_punctuation(lx, t);
        }
    }
    t->kind = k;
    if (k == TK_ERROR)
        lx->p = lx->end;
    t->rawlen = (size_t)(lx->p - s);
    return k;
}

void
lang_token_describe(const Token *t, char *out, size_t size)
{
    if (t->kind == TK_EOF) {
        snprintf(out, size, "end of text");
        return;
    }
    size_t n = t->rawlen;
    bool cut = false;
    if (n > 40) {
        n = 40;
        while (n > 0 && ((unsigned char)t->raw[n] & 0xC0) == 0x80)
            n--; /* never split a UTF-8 sequence */
        cut = true;
    }
    if (t->kind == TK_STRING || t->kind == TK_DATETIME || t->kind == TK_RECSTR ||
        (t->kind == TK_IDENT && t->quoted))
        snprintf(out, size, "%.*s%s", (int)n, t->raw, cut ? "…" : "");
    else
        snprintf(out, size, "'%.*s%s'", (int)n, t->raw, cut ? "…" : "");
}
