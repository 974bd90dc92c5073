/* expr.c — evaluating expressions: comparisons, AND / OR / NOT,
 * arithmetic, datetime ± duration, field paths and the time:: functions. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "engine.h"

#define NS_PER_SEC 1000000000LL

static bool
is_number(const Value *v)
{
    return v->kind == VAL_INT || v->kind == VAL_FLOAT;
}

static double
as_double(const Value *v)
{
    return v->kind == VAL_INT ? (double)v->u.i : v->u.f;
}

/* "what" between two kinds cannot be done: a TypeError. */
static LangErrorCode
type_error(LangError *err, const char *what, const Value *a, const Value *b)
{
    return lang_error_set(err, LANG_TYPE_ERROR, "cannot %s %s and %s", what,
                          lang_value_kind_name(a->kind), lang_value_kind_name(b->kind));
}

/* Arithmetic: numbers, string concatenation, datetime ± duration,
 * datetime - datetime, duration ± duration. */
static LangErrorCode
arith(ExprOp op, const Value *a, const Value *b, Value *out, LangError *err)
{
    static const char *names[] = {
        [OP_ADD] = "add", [OP_SUB] = "subtract", [OP_MUL] = "multiply", [OP_DIV] = "divide"};
    const char *what = names[op];
    if (a->kind == VAL_INT && b->kind == VAL_INT) {
        int64_t r;
        bool overflow = false;
        switch (op) {
        case OP_ADD: overflow = __builtin_add_overflow(a->u.i, b->u.i, &r); break;
        case OP_SUB: overflow = __builtin_sub_overflow(a->u.i, b->u.i, &r); break;
        case OP_MUL: overflow = __builtin_mul_overflow(a->u.i, b->u.i, &r); break;
        default:
            if (b->u.i == 0)
                return lang_error_set(err, LANG_TYPE_ERROR, "division by zero");
            if (a->u.i % b->u.i == 0 && !(a->u.i == INT64_MIN && b->u.i == -1)) {
                r = a->u.i / b->u.i;
                break;
            }
            *out = lang_value_float((double)a->u.i / (double)b->u.i);
            return LANG_OK;
        }
        if (overflow)
            return lang_error_set(err, LANG_TYPE_ERROR, "integer overflow");
        *out = lang_value_int(r);
        return LANG_OK;
    }
    if (is_number(a) && is_number(b)) {
        double x = as_double(a), y = as_double(b), r;
        switch (op) {
        case OP_ADD: r = x + y; break;
        case OP_SUB: r = x - y; break;
        case OP_MUL: r = x * y; break;
        default:
            if (y == 0)
                return lang_error_set(err, LANG_TYPE_ERROR, "division by zero");
            r = x / y;
        }
        *out = lang_value_float(r);
        return LANG_OK;
    }
    if (op == OP_ADD && a->kind == VAL_STRING && b->kind == VAL_STRING) {
        Buf s = {0};
        lang_buf_append(&s, a->u.str.s, a->u.str.len);
        lang_buf_append(&s, b->u.str.s, b->u.str.len);
        *out = lang_value_string(s.data, s.len);
        lang_buf_free(&s);
        return LANG_OK;
    }
    int64_t r;
    bool overflow;
    if ((op == OP_ADD || op == OP_SUB) && a->kind == VAL_DATETIME && b->kind == VAL_DURATION) {
        overflow = op == OP_ADD ? __builtin_add_overflow(a->u.ns, b->u.ns, &r)
                                : __builtin_sub_overflow(a->u.ns, b->u.ns, &r);
        if (overflow)
            return lang_error_set(err, LANG_TYPE_ERROR, "datetime out of range");
        *out = lang_value_datetime(r);
        return LANG_OK;
    }
    if (op == OP_ADD && a->kind == VAL_DURATION && b->kind == VAL_DATETIME)
        return arith(op, b, a, out, err);
    if ((op == OP_ADD || op == OP_SUB) && a->kind == b->kind &&
        (a->kind == VAL_DURATION || (op == OP_SUB && a->kind == VAL_DATETIME))) {
        overflow = op == OP_ADD ? __builtin_add_overflow(a->u.ns, b->u.ns, &r)
                                : __builtin_sub_overflow(a->u.ns, b->u.ns, &r);
        if (overflow)
            return lang_error_set(err, LANG_TYPE_ERROR, "duration out of range");
        *out = lang_value_duration(r);
        return LANG_OK;
    }
    return type_error(err, what, a, b);
}

/* time::cron(expression[, zone]): the first instant after "now" that the
 * cron expression "args[0]" names, in UTC or in IANA zone "args[1]"
 * (cron.h), into "*out".  TypeError when an argument is not a string,
 * ParseError when the expression or the zone is refused. */
static LangErrorCode
cron_call(const Value *args, size_t n, int64_t now, Value *out, LangError *err)
{
    for (size_t i = 0; i < n; i++)
        if (args[i].kind != VAL_STRING)
            return lang_error_set(err, LANG_TYPE_ERROR,
                                  "time::cron takes a cron expression and a time zone as strings, "
                                  "not %s",
                                  lang_value_kind_name(args[i].kind));
        else if (strlen(args[i].u.str.s) != args[i].u.str.len)
            return lang_error_set(err, LANG_PARSE_ERROR, "time::cron: a NUL byte in '%s'",
                                  args[i].u.str.s);
    int64_t after = now / NS_PER_SEC - (now % NS_PER_SEC < 0), next;
    char msg[CRON_MSG_MAX];
    if (cron_next_text(args[0].u.str.s, n > 1 ? args[1].u.str.s : NULL, after, &next, msg,
                       sizeof msg))
        return lang_error_set(err, LANG_PARSE_ERROR, "%s", msg);
    if (next > INT64_MAX / NS_PER_SEC)
        return lang_error_set(err, LANG_TYPE_ERROR, "datetime out of range");
    *out = lang_value_datetime(next * NS_PER_SEC);
    return LANG_OK;
}

static LangErrorCode
call(const Expr *e, const EvalContext *cx, Value *out, LangError *err)
{
    const char *name = e->u.call.name;
    size_t n = e->u.call.len;
    Value args[2] = {{0}};
    if (n > 2)
        return lang_error_set(err, LANG_TYPE_ERROR, "%s takes at most 2 arguments", name);
    for (size_t i = 0; i < n; i++)
        if (lang_expr_eval(e->u.call.args[i], cx, &args[i], err)) {
            lang_value_free(&args[0]);
            return err->code;
        }
    LangErrorCode rc = LANG_OK;
    if (strcmp(name, "time::now") == 0 && n == 0) {
        *out = lang_value_datetime(cx->now);
    } else if (strcmp(name, "time::unix") == 0 && n <= 1) {
        int64_t ns = n == 0 ? cx->now : args[0].u.ns;
        if (n == 1 && args[0].kind != VAL_DATETIME)
            rc = lang_error_set(err, LANG_TYPE_ERROR, "time::unix takes a datetime, not %s",
                                lang_value_kind_name(args[0].kind));
        else
            *out =
                lang_value_int(ns >= 0 ? ns / NS_PER_SEC : -((-ns + NS_PER_SEC - 1) / NS_PER_SEC));
    } else if (strcmp(name, "time::from_unix") == 0 && n == 1) {
        if (args[0].kind == VAL_INT && args[0].u.i <= INT64_MAX / NS_PER_SEC &&
            args[0].u.i >= INT64_MIN / NS_PER_SEC)
            *out = lang_value_datetime(args[0].u.i * NS_PER_SEC);
        else if (args[0].kind == VAL_FLOAT && fabs(args[0].u.f) < 9.2e9)
            *out = lang_value_datetime((int64_t)(args[0].u.f * 1e9));
        else
            rc = lang_error_set(err, LANG_TYPE_ERROR,
                                "time::from_unix takes seconds as a number in range");
    } else if (strcmp(name, "time::cron") == 0 && n >= 1) {
        rc = cron_call(args, n, cx->now, out, err);
    } else {
        rc = lang_error_set(err, LANG_PARSE_ERROR,
                            "unknown function %s() with %zu arguments (known: time::now(), "
                            "time::unix([datetime]), time::from_unix(seconds), "
                            "time::cron(expression[, zone]))",
                            name, n);
    }
    for (size_t i = 0; i < n; i++)
        lang_value_free(&args[i]);
    return rc;
}

/* Evaluates the "n" expressions "items" into "*out": "all", an empty
 * array or object (taken), with their values pushed, or, in an object,
 * each set under its key of "keys".  The first error, with nothing left in
 * "*out" to free. */
static LangErrorCode
eval_all(Value all, Expr *const *items, char *const *keys, size_t n, const EvalContext *cx,
         Value *out, LangError *err)
{
    for (size_t i = 0; i < n; i++) {
        Value v;
        if (lang_expr_eval(items[i], cx, &v, err)) {
            lang_value_free(&all);
            return err->code;
        }
        if (all.kind == VAL_OBJECT)
            lang_value_object_set(&all, keys[i], v);
        else
            lang_value_array_push(&all, v);
    }
    *out = all;
    return LANG_OK;
}

LangErrorCode
lang_expr_eval(const Expr *e, const EvalContext *cx, Value *out, LangError *err)
{
    *out = lang_value_none();
    switch (e->kind) {
    case EX_LITERAL: *out = lang_value_clone(&e->u.literal); return LANG_OK;
    case EX_FIELD: {
        const Value *v =
            cx->record ? lang_path_get(cx->record, e->u.path.parts, e->u.path.len) : NULL;
        if (v)
            *out = lang_value_clone(v);
        return LANG_OK;
    }
    case EX_OBJECT:
        return eval_all(lang_value_object(), e->u.object.vals, e->u.object.keys, e->u.object.len,
                        cx, out, err);
    case EX_ARRAY:
        return eval_all(lang_value_array(), e->u.array.items, NULL, e->u.array.len, cx, out, err);
    case EX_UNARY: {
        Value v;
        if (lang_expr_eval(e->u.unary.arg, cx, &v, err))
            return err->code;
        LangErrorCode rc = LANG_OK;
        if (e->u.unary.op == OP_NOT)
            *out = lang_value_bool(!lang_value_truthy(&v));
        else if (v.kind == VAL_INT && v.u.i != INT64_MIN)
            *out = lang_value_int(-v.u.i);
        else if (v.kind == VAL_FLOAT)
            *out = lang_value_float(-v.u.f);
        else
            rc = lang_error_set(err, LANG_TYPE_ERROR, "cannot negate %s",
                                lang_value_kind_name(v.kind));
        lang_value_free(&v);
        return rc;
    }
    case EX_BINARY: {
        ExprOp op = e->u.binary.op;
        Value a, b;
        if (lang_expr_eval(e->u.binary.lhs, cx, &a, err))
            return err->code;
        if (op == OP_AND || op == OP_OR) {
            bool t = lang_value_truthy(&a);
            lang_value_free(&a);
            if ((op == OP_AND && !t) || (op == OP_OR && t)) {
                *out = lang_value_bool(t);
                return LANG_OK;
            }
            if (lang_expr_eval(e->u.binary.rhs, cx, &b, err))
                return err->code;
            *out = lang_value_bool(lang_value_truthy(&b));
            lang_value_free(&b);
            return LANG_OK;
        }
        if (lang_expr_eval(e->u.binary.rhs, cx, &b, err)) {
            lang_value_free(&a);
            return err->code;
        }
        LangErrorCode rc = LANG_OK;
        switch (op) {
        case OP_EQ: *out = lang_value_bool(lang_value_compare(&a, &b) == 0); break;
        case OP_NE: *out = lang_value_bool(lang_value_compare(&a, &b) != 0); break;
        case OP_LT: *out = lang_value_bool(lang_value_compare(&a, &b) < 0); break;
        case OP_LE: *out = lang_value_bool(lang_value_compare(&a, &b) <= 0); break;
        case OP_GT: *out = lang_value_bool(lang_value_compare(&a, &b) > 0); break;
        case OP_GE: *out = lang_value_bool(lang_value_compare(&a, &b) >= 0); break;
        default: rc = arith(op, &a, &b, out, err);
        }
        lang_value_free(&a);
        lang_value_free(&b);
        return rc;
    }
    case EX_CALL: return call(e, cx, out, err);
    }
    return lang_error_set(err, LANG_TYPE_ERROR, "unknown expression");
}

/* A new EX_LITERAL of "v" (taken). */
static Expr *
literal_of(Value v)
{
    Expr *e = lang_xcalloc(1, sizeof *e);
    e->kind = EX_LITERAL;
    e->u.literal = v;
    return e;
}

Expr *
lang_expr_not_before(const Value *when)
{
    const Value *cron = when->kind == VAL_OBJECT ? lang_value_object_get(when, "cron") : NULL;
    if (!cron)
        return literal_of(lang_value_clone(when));
    const Value *zone = lang_value_object_get(when, "zone");
    Expr *e = lang_xcalloc(1, sizeof *e);
    e->kind = EX_CALL;
    e->u.call.name = lang_xstrdup("time::cron");
    e->u.call.args = lang_xcalloc(2, sizeof *e->u.call.args);
    e->u.call.args[e->u.call.len++] = literal_of(lang_value_clone(cron));
    if (zone)
        e->u.call.args[e->u.call.len++] = literal_of(lang_value_clone(zone));
    return e;
}
