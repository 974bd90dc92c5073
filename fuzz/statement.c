/* statement.c — libFuzzer target: the statement parser over any bytes.
 *
 * The input is a whole text as a ctl write or queuefs-sql would hand it to
 * the parser.  Every statement parsed is walked and freed; the parser must
 * end with 0 (end of text) or -1 (an error with a named code and a
 * message), never crash, leak or loop, and no expression may be deeper
 * than PARSE_MAX_DEPTH (the evaluator recurses through it).  Built by
 * scripts/fuzz. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lang/parse.h"

/* Aborts with "why" when "ok" is false, so the fuzzer saves the input. */
static void
check(int ok, const char *why)
{
    if (!ok) {
        fprintf(stderr, "statement: %s\n", why);
        abort();
    }
}

/* The height of expression tree "e" (0 for none): evaluating and freeing it
 * recurse this deep, so the parser must keep it near PARSE_MAX_DEPTH. */
static int
height(const Expr *e)
{
    if (!e)
        return 0;
    int h = 0, k;
    switch (e->kind) {
    case EX_OBJECT:
        for (size_t i = 0; i < e->u.object.len; i++)
            if ((k = height(e->u.object.vals[i])) > h)
                h = k;
        break;
    case EX_ARRAY:
        for (size_t i = 0; i < e->u.array.len; i++)
            if ((k = height(e->u.array.items[i])) > h)
                h = k;
        break;
    case EX_UNARY: h = height(e->u.unary.arg); break;
    case EX_BINARY:
        h = height(e->u.binary.lhs);
        if ((k = height(e->u.binary.rhs)) > h)
            h = k;
        break;
    case EX_CALL:
        for (size_t i = 0; i < e->u.call.len; i++)
            if ((k = height(e->u.call.args[i])) > h)
                h = k;
        break;
    default: break;
    }
    return h + 1;
}

/* The height of the tallest expression statement "s" holds. */
static int
stmt_height(const Stmt *s)
{
    int h = 0, k;
    switch (s->kind) {
    case ST_CREATE:
    case ST_UPDATE:
    case ST_UPSERT:
        h = height(s->u.write.content);
        if ((k = height(s->u.write.where)) > h)
            h = k;
        break;
    case ST_DELETE: h = height(s->u.del.where); break;
    case ST_SELECT:
        h = height(s->u.select.where);
        for (size_t i = 0; i < s->u.select.nfields; i++)
            if ((k = height(s->u.select.fields[i].expr)) > h)
                h = k;
        break;
    case ST_RELEASE:
    case ST_RELEASE_ALL: h = height(s->u.release.not_before); break;
    default: break;
    }
    return h;
}

/* Parses "size" bytes of "data" statement by statement; returns 0. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Parser *p = lang_parser_new((const char *)data, size);
    Stmt *s;
    LangError err = {0};
    int rc, n = 0;
    while ((rc = lang_parser_next(p, &s, &err)) == 1) {
        check(s != NULL, "lang_parser_next returned 1 without a statement");
        check(s->line >= 1, "a statement starts before line 1");
        check(stmt_height(s) <= PARSE_MAX_DEPTH + 2, "an expression deeper than PARSE_MAX_DEPTH");
        lang_stmt_free(s);
        check(++n <= (int)size + 1, "more statements than bytes");
    }
    check(s == NULL, "lang_parser_next set a statement without returning 1");
    if (rc == -1) {
        check(err.code != LANG_OK, "an error without a code");
        check(err.message[0] != '\0', "an error without a message");
        check(memchr(err.message, '\0', sizeof err.message) != NULL, "an unterminated message");
        /* After an error the parser stays failed: nothing more is parsed. */
        LangError again = {0};
        check(lang_parser_next(p, &s, &again) == -1 && s == NULL,
              "the parser went on after an error");
    } else {
        check(rc == 0, "lang_parser_next returned neither 1, 0 nor -1");
        check(err.code == LANG_OK, "end of text with an error set");
        check(lang_parser_next(p, &s, &err) == 0 && s == NULL,
              "the parser went on after the end of the text");
    }
    lang_parser_free(p);
    /* lang_stmt_free and lang_parser_free take NULL, as error paths rely on. */
    lang_stmt_free(NULL);
    lang_parser_free(NULL);
    return 0;
}
