/* parse.h — statements and literals from text.
 *
 * The grammar is SurrealQL-shaped (see the man page and seed 000).  A
 * Parser walks a text one statement at a time so that a caller can run each
 * statement before parsing the next: at the first error everything after it
 * is left unparsed.
 *
 *     Parser *p = lang_parser_new(text, len);
 *     Stmt *s; LangError err = {0};
 *     while (lang_parser_next(p, &s, &err) == 1) { run(s); lang_stmt_free(s); }
 *     lang_parser_free(p);
 *
 * Errors are LANG_PARSE_ERROR with a message that says what was expected,
 * what was found and where: "expected TIMEOUT after queue name, found ';'
 * at line 1, column 20"; a bracket left open says where it opened: "'}'
 * expected (to close '{' at line 1, column 14), found 'b' at line 1, column
 * 20".  Nesting deeper than PARSE_MAX_DEPTH, invalid UTF-8 and NUL bytes are
 * parse errors too. */
#ifndef QUEUEFS_PARSE_H
#define QUEUEFS_PARSE_H

#include <stddef.h>

#include "ast.h"
#include "error.h"

/* The deepest nesting of brackets and parentheses a text may have. */
#define PARSE_MAX_DEPTH 256
/* The most records one CLAIM may ask for; above it is ClaimAboveCeiling
 * (raised by the evaluator; the parser accepts any positive count). */
#define CLAIM_CEILING 1000

typedef struct Parser Parser;

/* A parser over "len" bytes of "text" (not copied: keep it alive). */
Parser *lang_parser_new(const char *text, size_t len);
/* Frees the parser (NULL is allowed); statements it returned stay valid. */
void lang_parser_free(Parser *p);

/* Parses the next statement.  Returns 1 and sets "*out" (caller frees with
 * lang_stmt_free) when one was parsed; 0 at the end of the text (only blanks,
 * comments and stray ';' left); -1 on error, with "err" filled.  Each
 * statement ends with ';' or the end of the text.  Comments: "-- …" and
 * "# …" to end of line, and C-style block comments. */
int lang_parser_next(Parser *p, Stmt **out, LangError *err);

/* Parses a whole text as one constant: an expression restricted to
 * constant values, which is JSON or a SurrealQL literal (unquoted keys,
 * single-quoted strings, d'…' datetimes, durations such as 1h30m, record
 * ids jobs:1 / jobs:'bucket/key', NONE, trailing commas).  Field paths,
 * calls, parentheses and operators are refused: "record content must be a
 * literal value, found '+'".
 * Leading and trailing white space is allowed; anything else after the
 * value is an error.  Returns 0 and sets "*out" (caller frees), or -1 with
 * "err" filled (LANG_PARSE_ERROR). */
int lang_literal_parse(const char *text, size_t len, Value *out, LangError *err);

#endif
