/* parse_expr.c — expressions and constants: the one expression grammar,
 * record keys and ids, and lang_literal_parse, which parses a constant
 * with it (see parse.h and parse_state.h).
 *
 * A constant is an expression restricted to constant values: with
 * "ps->constant" the grammar refuses field paths, calls, parentheses and
 * operators ("record content must be a literal value, found '+'") and
 * folds what it parses into one EX_LITERAL as it goes, so that an object
 * of literals costs no tree.
 *
 * Decisions beyond the grammar:
 *  - Duplicate object keys are allowed: the last one wins.
 *  - "-" before an integer or a float literal is folded into the literal;
 *    in a constant "-" may only precede a number, or the duration 0 (-5s is
 *    an error: a duration cannot be negative).
 *  - \u0000 is allowed inside string values (a Value string may hold NUL)
 *    but not in object keys.
 *  - A record key is never the empty string (`jobs:''` is an error): every
 *    identity is also a file name, and a file name cannot be empty. */
#include <stdlib.h>

#include "lang.h"
#include "parse.h"
#include "cron.h"
#include "parse_state.h"

/* ---- trees ---- */

void
lang_expr_free(Expr *e)
{
    if (!e)
        return;
    switch (e->kind) {
    case EX_LITERAL: lang_value_free(&e->u.literal); break;
    case EX_FIELD: lang_parse_free_parts(e->u.path.parts, e->u.path.len); break;
    case EX_OBJECT:
        for (size_t i = 0; i < e->u.object.len; i++) {
            free(e->u.object.keys[i]);
            lang_expr_free(e->u.object.vals[i]);
        }
        free(e->u.object.keys);
        free(e->u.object.vals);
        break;
    case EX_ARRAY:
        for (size_t i = 0; i < e->u.array.len; i++)
            lang_expr_free(e->u.array.items[i]);
        free(e->u.array.items);
        break;
    case EX_UNARY: lang_expr_free(e->u.unary.arg); break;
    case EX_BINARY:
        lang_expr_free(e->u.binary.lhs);
        lang_expr_free(e->u.binary.rhs);
        break;
    case EX_CALL:
        free(e->u.call.name);
        for (size_t i = 0; i < e->u.call.len; i++)
            lang_expr_free(e->u.call.args[i]);
        free(e->u.call.args);
        break;
    }
    free(e);
}

static Expr *
new_expr(ExprKind kind)
{
    Expr *e = lang_xcalloc(1, sizeof *e);
    e->kind = kind;
    return e;
}

/* A new EX_LITERAL of "v" (taking ownership).  A constant's nodes come
 * from the state (see take_literal), an expression's from the heap. */
static Expr *
literal(ParseState *ps, Value v)
{
    Expr *e = ps->spare;
    if (e)
        ps->spare = e->u.unary.arg;
    else if (ps->constant && ps->npool < PARSE_POOL)
        e = &ps->pool[ps->npool++];
    else
        e = lang_xmalloc(sizeof *e); /* not calloc: it bypasses malloc's cache */
    e->kind = EX_LITERAL;
    e->u.literal = v;
    return e;
}

/* The value of a constant's EX_LITERAL "e", whose node is spent: the state
 * keeps it for the next literal (lang_parse_free releases it). */
static Value
take_literal(ParseState *ps, Expr *e)
{
    Value v = e->u.literal;
    e->u.unary.arg = ps->spare;
    ps->spare = e;
    return v;
}

/* Frees "e" and its tree: a constant's node goes back to the state. */
static void
discard(ParseState *ps, Expr *e)
{
    if (e && ps->constant) {
        Value v = take_literal(ps, e);
        lang_value_free(&v);
    } else {
        lang_expr_free(e);
    }
}

static Expr *
binary(ExprOp op, Expr *lhs, Expr *rhs)
{
    if (!rhs) {
        lang_expr_free(lhs);
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
    lang_parse_error(ps, &ps->tok, "nesting deeper than %d levels", PARSE_MAX_DEPTH);
    ps->depth--;
    return false;
}

/* ---- record keys and ids ---- */

/* An INT token as a value, or false for 9223372036854775808 (valid only
 * negated). */
static bool
int_value(ParseState *ps, const Token *t, Value *out)
{
    if (t->int_min) {
        lang_parse_error(ps, t, "integer 9223372036854775808 is out of range");
        return false;
    }
    *out = lang_value_int(t->i);
    return true;
}

/* key -> INT | IDENT | STRING */
bool
lang_parse_key(ParseState *ps, Value *out, const char *what)
{
    const Token *t = &ps->tok;
    switch (t->kind) {
    case TK_INT:
        if (!int_value(ps, t, out))
            return false;
        break;
    case TK_IDENT:
    case TK_STRING:
        if (t->len == 0) {
            /* An identity is a file name too, and a file name is never empty. */
            lang_parse_error(ps, t, "a record key cannot be empty");
            return false;
        }
        *out = lang_value_string(t->text, t->len);
        break;
    default: lang_parse_expected(ps, what); return false;
    }
    next(ps);
    return true;
}

/* record -> IDENT ':' key   (the current token is the IDENT, the next ':') */
static bool
record(ParseState *ps, Value *out)
{
    char *table = lang_xstrndup(ps->tok.text, ps->tok.len);
    next(ps);
    next(ps);
    Value k = {0};
    if (!lang_parse_key(ps, &k, "a record key (integer, name or quoted string) after ':'")) {
        free(table);
        return false;
    }
    *out = lang_value_record(table, k);
    free(table);
    return true;
}

/* recstr -> RECSTR whose text is IDENT ':' key   (r'jobs:1') */
static bool
record_text(ParseState *ps, const Token *t, Value *out)
{
    ParseState sub;
    lang_parse_init(&sub, t->text, t->len);
    next(&sub);
    bool ok = sub.tok.kind == TK_IDENT && peek(&sub)->kind == TK_COLON && record(&sub, out) &&
              sub.tok.kind == TK_EOF && !FAILED(&sub);
    if (!ok) {
        if (out->kind != VAL_NONE)
            lang_value_free(out);
        char found[64];
        lang_token_describe(t, found, sizeof found);
        lang_parse_error(ps, t, "expected a record id such as r'jobs:1', found %s", found);
    }
    lang_parse_free(&sub);
    return ok;
}

/* ---- objects, arrays, calls ---- */

/* field -> (IDENT | STRING | INT) ':' expr */
static bool
field(ParseState *ps, void *ctx)
{
    ParseItems *it = ctx;
    const Token *t = &ps->tok;
    if (t->kind != TK_IDENT && t->kind != TK_STRING && t->kind != TK_INT) {
        lang_parse_expected(ps, "a field name or '}'");
        return false;
    }
    const char *kt = t->kind == TK_INT ? t->raw : t->text;
    size_t kl = t->kind == TK_INT ? t->rawlen : t->len;
    if (memchr(kt, '\0', kl)) {
        lang_parse_error(ps, t, "a field name cannot contain a NUL character");
        return false;
    }
    char small[64], *k = small;
    if (kl >= sizeof small)
        k = lang_xmalloc(kl + 1);
    memcpy(k, kt, kl);
    k[kl] = '\0';
    next(ps);
    Expr *v = NULL;
    if (lang_parse_expect(ps, TK_COLON, "':' after the field name"))
        v = lang_parse_expr(ps);
    Expr *o = it->node;
    if (v && o->kind == EX_LITERAL) {
        lang_value_object_set(&o->u.literal, k, take_literal(ps, v));
    } else if (v) {
        if (o->u.object.len == it->cap) {
            it->cap = it->cap ? it->cap * 2 : 4;
            o->u.object.keys = lang_xrealloc(o->u.object.keys, it->cap * sizeof(char *));
            o->u.object.vals = lang_xrealloc(o->u.object.vals, it->cap * sizeof(Expr *));
        }
        o->u.object.keys[o->u.object.len] = lang_xstrdup(k);
        o->u.object.vals[o->u.object.len++] = v;
    }
    if (k != small)
        free(k);
    return v != NULL;
}

/* element -> expr   (of an array) */
static bool
element(ParseState *ps, void *ctx)
{
    ParseItems *it = ctx;
    Expr *v = lang_parse_expr(ps);
    if (!v)
        return false;
    Expr *a = it->node;
    if (a->kind == EX_LITERAL) {
        lang_value_array_push(&a->u.literal, take_literal(ps, v));
    } else {
        GROW(a->u.array.items, a->u.array.len, it->cap);
        a->u.array.items[a->u.array.len++] = v;
    }
    return true;
}

/* argument -> expr   (of a call) */
static bool
argument(ParseState *ps, void *ctx)
{
    ParseItems *it = ctx;
    Expr *v = lang_parse_expr(ps), *c = it->node;
    if (!v)
        return false;
    GROW(c->u.call.args, c->u.call.len, it->cap);
    c->u.call.args[c->u.call.len++] = v;
    return true;
}

/* Parses the list that the current token opens into "e" (freed on
 * failure). */
static Expr *
items(ParseState *ps, Expr *e, TokKind close, ParseItem item)
{
    ParseItems it = {e, 0};
    if (lang_parse_list(ps, close, item, &it))
        return e;
    discard(ps, e);
    return NULL;
}

/* object -> '{' [field {',' field} [',']] '}' */
static Expr *
object(ParseState *ps)
{
    Expr *e = ps->constant ? literal(ps, lang_value_object()) : new_expr(EX_OBJECT);
    return items(ps, e, TK_RBRACE, field);
}

/* array -> '[' [element {',' element} [',']] ']' */
static Expr *
array(ParseState *ps)
{
    Expr *e = ps->constant ? literal(ps, lang_value_array()) : new_expr(EX_ARRAY);
    return items(ps, e, TK_RBRACKET, element);
}

/* call -> IDENT '::' IDENT {'::' IDENT} '(' [argument {',' argument} [',']] ')' */
static Expr *
call(ParseState *ps)
{
    Expr *e = new_expr(EX_CALL);
    Buf b = {0};
    lang_buf_append(&b, ps->tok.text, ps->tok.len);
    next(ps);
    while (accept(ps, TK_DCOLON)) {
        if (ps->tok.kind != TK_IDENT) {
            lang_parse_expected(ps, "a function name after '::'");
            break;
        }
        lang_buf_puts(&b, "::");
        lang_buf_append(&b, ps->tok.text, ps->tok.len);
        next(ps);
    }
    e->u.call.name = lang_buf_steal(&b);
    if (!FAILED(ps) && ps->tok.kind != TK_LPAREN)
        lang_parse_expected(ps, "'(' after the function name");
    if (FAILED(ps)) {
        lang_expr_free(e);
        return NULL;
    }
    return items(ps, e, TK_RPAREN, argument);
}

/* The STRING at the current token as the next argument of call "c",
 * which is freed on failure: false with "expected <what>". */
static bool
string_argument(ParseState *ps, Expr *c, const char *what)
{
    char *text = ps->tok.kind == TK_STRING ? lang_parse_cstring(ps, &ps->tok, what) : NULL;
    if (!text) {
        if (!FAILED(ps))
            lang_parse_expected(ps, what);
        lang_expr_free(c);
        return false;
    }
    Expr *l = new_expr(EX_LITERAL);
    l->u.literal = lang_value_string(text, strlen(text));
    c->u.call.args[c->u.call.len++] = l;
    free(text);
    next(ps);
    return true;
}

Expr *
lang_parse_not_before(ParseState *ps)
{
    if (!is_kw(&ps->tok, "CRON") || peek(ps)->kind != TK_STRING)
        return lang_parse_expr(ps);
    next(ps);
    Token at = ps->tok;
    Expr *e = new_expr(EX_CALL);
    e->u.call.name = lang_xstrdup("time::cron");
    e->u.call.args = lang_xcalloc(2, sizeof *e->u.call.args);
    if (!string_argument(ps, e, "a cron expression after CRON"))
        return NULL;
    CronExpr cron;
    char msg[CRON_MSG_MAX];
    if (cron_parse(e->u.call.args[0]->u.literal.u.str.s, &cron, msg, sizeof msg)) {
        lang_parse_error(ps, &at, "%s", msg);
        lang_expr_free(e);
        return NULL;
    }
    if (accept_kw(ps, "IN") && !string_argument(ps, e, "a time zone name (a string) after IN"))
        return NULL;
    return e;
}

/* ---- operands and operators ---- */

/* group -> '(' expr ')' */
static Expr *
group(ParseState *ps)
{
    int line = ps->tok.line, col = ps->tok.col;
    next(ps);
    Expr *e = lang_parse_expr(ps);
    if (e && !lang_parse_check_match(ps, TK_RPAREN, TK_LPAREN, line, col)) {
        lang_expr_free(e);
        return NULL;
    }
    return e;
}

/* primary -> INT | FLOAT | STRING | DURATION | DATETIME | RECSTR
 *          | TRUE | FALSE | NULL | NONE | group | object | array
 *          | call | record | path
 * (in a constant: neither group, call nor path) */
static Expr *
primary(ParseState *ps)
{
    const Token *t = &ps->tok;
    Value v = {0};
    switch (t->kind) {
    case TK_INT:
        if (!int_value(ps, t, &v))
            return NULL;
        break;
    case TK_FLOAT: v = lang_value_float(t->f); break;
    case TK_STRING: v = lang_value_string(t->text, t->len); break;
    case TK_DURATION: v = lang_value_duration(t->ns); break;
    case TK_DATETIME: v = lang_value_datetime(t->ns); break;
    case TK_RECSTR:
        if (!record_text(ps, t, &v))
            return NULL;
        break;
    case TK_LPAREN:
        if (ps->constant)
            goto refuse;
        return group(ps);
    case TK_LBRACE: return object(ps);
    case TK_LBRACKET: return array(ps);
    case TK_IDENT: {
        TokKind after = peek(ps)->kind;
        if (after == TK_COLON)
            return record(ps, &v) ? literal(ps, v) : NULL;
        if (after == TK_DCOLON && !ps->constant)
            return call(ps);
        if (is_kw(t, "true"))
            v = lang_value_bool(true);
        else if (is_kw(t, "false"))
            v = lang_value_bool(false);
        else if (is_kw(t, "null"))
            v = lang_value_null();
        else if (is_kw(t, "none"))
            v = lang_value_none();
        else if (ps->constant)
            goto refuse;
        else {
            Expr *e = new_expr(EX_FIELD);
            if (!lang_parse_path(ps, &e->u.path.parts, &e->u.path.len, "a field name")) {
                lang_expr_free(e);
                return NULL;
            }
            return e;
        }
        break;
    }
    default: goto refuse;
    }
    next(ps);
    return literal(ps, v);
refuse:
    if (!lang_parse_nonconstant(ps))
        lang_parse_expected(ps, ps->constant ? "a value" : "an expression");
    return NULL;
}

/* Prefix operator "op" (the current token) applied to what "operand"
 * parses: a level of nesting, counted towards PARSE_MAX_DEPTH. */
static Expr *
prefix(ParseState *ps, ExprOp op, Expr *(*operand)(ParseState *))
{
    if (!enter(ps))
        return NULL;
    next(ps);
    Expr *arg = operand(ps), *e = NULL;
    if (arg) {
        e = new_expr(EX_UNARY);
        e->u.unary.op = op;
        e->u.unary.arg = arg;
    }
    ps->depth--;
    return e;
}

/* unary -> '-' unary | primary
 * (in a constant: '-' INT | '-' FLOAT | '-' DURATION, the duration 0) */
static Expr *
unary_expr(ParseState *ps)
{
    if (ps->tok.kind != TK_MINUS)
        return primary(ps);
    const Token *n = peek(ps);
    if (n->kind == TK_INT || n->kind == TK_FLOAT || (ps->constant && n->kind == TK_DURATION)) {
        next(ps); /* fold -5 into the literal */
        const Token *t = &ps->tok;
        if (t->kind == TK_DURATION && t->ns != 0) {
            lang_parse_error(ps, t, "a duration cannot be negative");
            return NULL;
        }
        Value v = t->kind == TK_DURATION ? lang_value_duration(0)
                  : t->kind == TK_FLOAT  ? lang_value_float(-t->f)
                  : t->int_min           ? lang_value_int(INT64_MIN)
                                         : lang_value_int(-t->i);
        next(ps);
        return literal(ps, v);
    }
    if (ps->constant) {
        next(ps);
        lang_parse_not_constant(ps);
        return NULL;
    }
    return prefix(ps, OP_NEG, unary_expr);
}

/* One more operator in a left-deep chain (a + b + c …): each is a level of
 * the tree that evaluating and freeing it recurse through, so it counts
 * towards PARSE_MAX_DEPTH like a bracket.  On true "*levels" grows by one
 * (the caller gives them back); on false the error is set and "*e" freed. */
static bool
chain(ParseState *ps, Expr **e, int *levels)
{
    if (!enter(ps)) {
        lang_expr_free(*e);
        *e = NULL;
        return false;
    }
    (*levels)++;
    return true;
}

/* The levels of left-associative operators, loosest first. */
enum { LV_OR, LV_AND, LV_ADD, LV_MUL };

static Expr *level(ParseState *ps, int lv);
static Expr *not_expr(ParseState *ps);

/* The operator of level "lv" that "t" is, or -1. */
static int
level_op(const Token *t, int lv)
{
    switch (lv) {
    case LV_OR: return t->kind == TK_OROR || is_kw(t, "OR") ? OP_OR : -1;
    case LV_AND: return t->kind == TK_ANDAND || is_kw(t, "AND") ? OP_AND : -1;
    case LV_ADD: return t->kind == TK_PLUS ? OP_ADD : t->kind == TK_MINUS ? OP_SUB : -1;
    default: return t->kind == TK_STAR ? OP_MUL : t->kind == TK_SLASH ? OP_DIV : -1;
    }
}

/* The operand of level "lv": the next level, or the rule below the chains. */
static Expr *
level_operand(ParseState *ps, int lv)
{
    switch (lv) {
    case LV_OR: return level(ps, LV_AND);
    case LV_AND: return not_expr(ps);
    case LV_ADD: return level(ps, LV_MUL);
    default: return unary_expr(ps);
    }
}

/* or -> and {(OR | '||') and}
 * and -> not {(AND | '&&') not}
 * add -> mul {('+' | '-') mul}
 * mul -> unary {('*' | '/') unary} */
static Expr *
level(ParseState *ps, int lv)
{
    Expr *e = level_operand(ps, lv);
    int levels = 0, op;
    while (e && (op = level_op(&ps->tok, lv)) >= 0 && chain(ps, &e, &levels)) {
        next(ps);
        e = binary((ExprOp)op, e, level_operand(ps, lv));
    }
    ps->depth -= levels;
    return e;
}

/* cmp -> add [('=' | '==' | IS | '!=' | IS NOT | '<' | '<=' | '>' | '>=') add] */
static Expr *
cmp_expr(ParseState *ps)
{
    Expr *e = level(ps, LV_ADD);
    if (!e)
        return NULL;
    ExprOp op;
    switch (ps->tok.kind) {
    case TK_EQ:
    case TK_EQEQ: op = OP_EQ; break;
    case TK_NE: op = OP_NE; break;
    case TK_LT: op = OP_LT; break;
    case TK_LE: op = OP_LE; break;
    case TK_GT: op = OP_GT; break;
    case TK_GE: op = OP_GE; break;
    case TK_IDENT:
        if (is_kw(&ps->tok, "IS")) {
            next(ps);
            op = accept_kw(ps, "NOT") ? OP_NE : OP_EQ;
            return binary(op, e, level(ps, LV_ADD));
        }
        return e;
    default: return e;
    }
    next(ps);
    return binary(op, e, level(ps, LV_ADD));
}

/* not -> (NOT | '!') not | cmp */
static Expr *
not_expr(ParseState *ps)
{
    if (ps->tok.kind != TK_BANG && !is_kw(&ps->tok, "NOT"))
        return cmp_expr(ps);
    return prefix(ps, OP_NOT, not_expr);
}

/* expr -> or   (a constant: unary, with no operators) */
Expr *
lang_parse_expr(ParseState *ps)
{
    if (FAILED(ps) || !enter(ps))
        return NULL;
    Expr *e = ps->constant ? unary_expr(ps) : level(ps, LV_OR);
    ps->depth--;
    if (FAILED(ps)) { /* a lexer error in a lookahead token */
        discard(ps, e);
        return NULL;
    }
    return e;
}

/* ---- constants ---- */

/* constant -> expr EOF   (an expression restricted to constant values) */
int
lang_literal_parse(const char *text, size_t len, Value *out, LangError *err)
{
    ParseState ps;
    lang_parse_init(&ps, text, len);
    ps.constant = true;
    next(&ps);
    Expr *e = lang_parse_expr(&ps);
    if (e && ps.tok.kind != TK_EOF && !lang_parse_nonconstant(&ps))
        lang_parse_expected(&ps, "end of text after the value");
    *out = e ? take_literal(&ps, e) : lang_value_none();
    if (FAILED(&ps))
        lang_value_free(out);
    int rc = lang_parse_result(&ps, err);
    lang_parse_free(&ps);
    return rc;
}
