/* value.c — values: their kinds, construction, objects and arrays,
 * comparison, truthiness, freeing and copying (see value.h). */
#include "value.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- construction ---- */

/* A value of one of the kinds that hold nanoseconds, VAL_DURATION and
 * VAL_DATETIME. */
static Value
ns_value(ValueKind kind, int64_t ns)
{
    return (Value){.kind = kind, .u.ns = ns};
}

Value
lang_value_none(void)
{
    return (Value){.kind = VAL_NONE};
}

Value
lang_value_null(void)
{
    return (Value){.kind = VAL_NULL};
}

Value
lang_value_bool(bool b)
{
    return (Value){.kind = VAL_BOOL, .u.b = b};
}

Value
lang_value_int(int64_t i)
{
    return (Value){.kind = VAL_INT, .u.i = i};
}

Value
lang_value_float(double f)
{
    return (Value){.kind = VAL_FLOAT, .u.f = f};
}

Value
lang_value_string(const char *s, size_t len)
{
    Value v = {.kind = VAL_STRING};
    v.u.str.s = lang_xmalloc(len + 1);
    if (len)
        memcpy(v.u.str.s, s, len);
    v.u.str.s[len] = '\0';
    v.u.str.len = len;
    return v;
}

Value
lang_value_cstring(const char *s)
{
    return lang_value_string(s, strlen(s));
}

Value
lang_value_duration(int64_t ns)
{
    return ns_value(VAL_DURATION, ns);
}

Value
lang_value_datetime(int64_t ns)
{
    return ns_value(VAL_DATETIME, ns);
}

Value
lang_value_record(const char *table, Value key)
{
    Value v = {.kind = VAL_RECORD};
    v.u.rec.table = lang_xstrdup(table);
    v.u.rec.key = lang_xmalloc(sizeof *v.u.rec.key);
    *v.u.rec.key = key;
    return v;
}

void
lang_value_free(Value *v)
{
    switch (v->kind) {
    case VAL_STRING: free(v->u.str.s); break;
    case VAL_RECORD:
        free(v->u.rec.table);
        if (v->u.rec.key) {
            lang_value_free(v->u.rec.key);
            free(v->u.rec.key);
        }
        break;
    case VAL_ARRAY:
        for (size_t i = 0; i < v->u.arr.len; i++)
            lang_value_free(&v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case VAL_OBJECT:
        for (size_t i = 0; i < v->u.obj.len; i++) {
            free(v->u.obj.keys[i]);
            lang_value_free(&v->u.obj.vals[i]);
        }
        free(v->u.obj.keys);
        free(v->u.obj.vals);
        break;
    default: break;
    }
    memset(v, 0, sizeof *v);
    v->kind = VAL_NONE;
}

Value
lang_value_clone(const Value *v)
{
    Value c = *v;
    switch (v->kind) {
    case VAL_STRING: return lang_value_string(v->u.str.s, v->u.str.len);
    case VAL_RECORD:
        c.u.rec.table = lang_xstrdup(v->u.rec.table);
        c.u.rec.key = lang_xmalloc(sizeof *c.u.rec.key);
        *c.u.rec.key = v->u.rec.key ? lang_value_clone(v->u.rec.key) : lang_value_none();
        return c;
    case VAL_ARRAY:
        c.u.arr.cap = v->u.arr.len;
        c.u.arr.items = v->u.arr.len ? lang_xmalloc(v->u.arr.len * sizeof(Value)) : NULL;
        for (size_t i = 0; i < v->u.arr.len; i++)
            c.u.arr.items[i] = lang_value_clone(&v->u.arr.items[i]);
        return c;
    case VAL_OBJECT:
        c.u.obj.cap = v->u.obj.len;
        c.u.obj.keys = v->u.obj.len ? lang_xmalloc(v->u.obj.len * sizeof(char *)) : NULL;
        c.u.obj.vals = v->u.obj.len ? lang_xmalloc(v->u.obj.len * sizeof(Value)) : NULL;
        for (size_t i = 0; i < v->u.obj.len; i++) {
            c.u.obj.keys[i] = lang_xstrdup(v->u.obj.keys[i]);
            c.u.obj.vals[i] = lang_value_clone(&v->u.obj.vals[i]);
        }
        return c;
    default: return c;
    }
}

/* ---- arrays and objects ---- */

Value
lang_value_array(void)
{
    return (Value){.kind = VAL_ARRAY};
}

void
lang_value_array_push(Value *a, Value item)
{
    if (a->kind != VAL_ARRAY) {
        lang_value_free(&item);
        return;
    }
    if (a->u.arr.len == a->u.arr.cap) {
        a->u.arr.cap = a->u.arr.cap ? a->u.arr.cap * 2 : 4;
        a->u.arr.items = lang_xrealloc(a->u.arr.items, a->u.arr.cap * sizeof(Value));
    }
    a->u.arr.items[a->u.arr.len++] = item;
}

Value
lang_value_object(void)
{
    return (Value){.kind = VAL_OBJECT};
}

/* The index of "key" in object "o" when present (*found set), else the
 * index where it would be inserted to keep the keys sorted. */
static size_t
object_find(const Value *o, const char *key, bool *found)
{
    size_t lo = 0, hi = o->u.obj.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(o->u.obj.keys[mid], key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* Inserts the owned "key" and "val" at "idx", shifting later entries. */
static void
object_insert_at(Value *o, size_t idx, char *key, Value val)
{
    if (o->u.obj.len == o->u.obj.cap) {
        o->u.obj.cap = o->u.obj.cap ? o->u.obj.cap * 2 : 4;
        o->u.obj.keys = lang_xrealloc(o->u.obj.keys, o->u.obj.cap * sizeof(char *));
        o->u.obj.vals = lang_xrealloc(o->u.obj.vals, o->u.obj.cap * sizeof(Value));
    }
    size_t tail = o->u.obj.len - idx;
    memmove(&o->u.obj.keys[idx + 1], &o->u.obj.keys[idx], tail * sizeof(char *));
    memmove(&o->u.obj.vals[idx + 1], &o->u.obj.vals[idx], tail * sizeof(Value));
    o->u.obj.keys[idx] = key;
    o->u.obj.vals[idx] = val;
    o->u.obj.len++;
}

void
lang_value_object_append(Value *o, char *key, Value val)
{
    object_insert_at(o, o->u.obj.len, key, val);
}

const Value *
lang_value_object_get(const Value *o, const char *key)
{
    if (o->kind != VAL_OBJECT)
        return NULL;
    bool found;
    size_t idx = object_find(o, key, &found);
    return found ? &o->u.obj.vals[idx] : NULL;
}

void
lang_value_object_set(Value *o, const char *key, Value val)
{
    if (o->kind != VAL_OBJECT) {
        lang_value_free(&val);
        return;
    }
    if (val.kind == VAL_NONE) {
        lang_value_object_remove(o, key);
        return;
    }
    bool found;
    size_t idx = object_find(o, key, &found);
    if (found) {
        lang_value_free(&o->u.obj.vals[idx]);
        o->u.obj.vals[idx] = val;
        return;
    }
    object_insert_at(o, idx, lang_xstrdup(key), val);
}

bool
lang_value_object_remove(Value *o, const char *key)
{
    if (o->kind != VAL_OBJECT)
        return false;
    bool found;
    size_t idx = object_find(o, key, &found);
    if (!found)
        return false;
    free(o->u.obj.keys[idx]);
    lang_value_free(&o->u.obj.vals[idx]);
    size_t tail = o->u.obj.len - idx - 1;
    memmove(&o->u.obj.keys[idx], &o->u.obj.keys[idx + 1], tail * sizeof(char *));
    memmove(&o->u.obj.vals[idx], &o->u.obj.vals[idx + 1], tail * sizeof(Value));
    o->u.obj.len--;
    return true;
}

/* ---- comparison ---- */

/* The rank of a kind in the total order; ints and floats share one. */
static int
kind_rank(ValueKind k)
{
    switch (k) {
    case VAL_NONE: return 0;
    case VAL_NULL: return 1;
    case VAL_BOOL: return 2;
    case VAL_INT:
    case VAL_FLOAT: return 3;
    case VAL_STRING: return 4;
    case VAL_DURATION: return 5;
    case VAL_DATETIME: return 6;
    case VAL_RECORD: return 7;
    case VAL_ARRAY: return 8;
    case VAL_OBJECT: return 9;
    }
    return 10;
}

static int
cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

/* Floats with NaN below every number and equal to itself; -0.0 == 0.0. */
static int
cmp_float(double a, double b)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb)
        return (int)nb - (int)na;
    return (a > b) - (a < b);
}

/* An int against a float, exactly (no rounding of the int). */
static int
cmp_int_float(int64_t i, double f)
{
    if (isnan(f))
        return 1;
    if (f >= 0x1p63)
        return -1;
    if (f < -0x1p63)
        return 1;
    int64_t t = (int64_t)f; /* truncation; exact for |f| < 2^63 */
    if (i != t)
        return cmp_i64(i, t);
    double frac = f - (double)t; /* exact */
    return (frac < 0) - (frac > 0);
}

static int
cmp_number(const Value *a, const Value *b)
{
    if (a->kind == VAL_INT && b->kind == VAL_INT)
        return cmp_i64(a->u.i, b->u.i);
    if (a->kind == VAL_FLOAT && b->kind == VAL_FLOAT)
        return cmp_float(a->u.f, b->u.f);
    if (a->kind == VAL_INT)
        return cmp_int_float(a->u.i, b->u.f);
    return -cmp_int_float(b->u.i, a->u.f);
}

/* Bytewise, then by length. */
static int
cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return (alen > blen) - (alen < blen);
}

static int
cmp_cstr(const char *a, const char *b)
{
    int c = strcmp(a, b);
    return (c > 0) - (c < 0);
}

static int
cmp_record(const RecordId *a, const RecordId *b)
{
    int c = cmp_cstr(a->table, b->table);
    if (c)
        return c;
    Value none = lang_value_none();
    return lang_value_compare(a->key ? a->key : &none, b->key ? b->key : &none);
}

static int
cmp_array(const Value *a, const Value *b)
{
    size_t n = a->u.arr.len < b->u.arr.len ? a->u.arr.len : b->u.arr.len;
    for (size_t i = 0; i < n; i++) {
        int c = lang_value_compare(&a->u.arr.items[i], &b->u.arr.items[i]);
        if (c)
            return c;
    }
    return (a->u.arr.len > b->u.arr.len) - (a->u.arr.len < b->u.arr.len);
}

static int
cmp_object(const Value *a, const Value *b)
{
    size_t n = a->u.obj.len < b->u.obj.len ? a->u.obj.len : b->u.obj.len;
    for (size_t i = 0; i < n; i++) {
        int c = cmp_cstr(a->u.obj.keys[i], b->u.obj.keys[i]);
        if (c)
            return c;
        c = lang_value_compare(&a->u.obj.vals[i], &b->u.obj.vals[i]);
        if (c)
            return c;
    }
    return (a->u.obj.len > b->u.obj.len) - (a->u.obj.len < b->u.obj.len);
}

int
lang_value_compare(const Value *a, const Value *b)
{
    int ra = kind_rank(a->kind), rb = kind_rank(b->kind);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    switch (a->kind) {
    case VAL_BOOL: return (int)a->u.b - (int)b->u.b;
    case VAL_INT:
    case VAL_FLOAT: return cmp_number(a, b);
    case VAL_STRING: return cmp_bytes(a->u.str.s, a->u.str.len, b->u.str.s, b->u.str.len);
    case VAL_DURATION:
    case VAL_DATETIME: return cmp_i64(a->u.ns, b->u.ns);
    case VAL_RECORD: return cmp_record(&a->u.rec, &b->u.rec);
    case VAL_ARRAY: return cmp_array(a, b);
    case VAL_OBJECT: return cmp_object(a, b);
    default: return 0;
    }
}

bool
lang_value_equal(const Value *a, const Value *b)
{
    return lang_value_compare(a, b) == 0;
}

bool
lang_value_truthy(const Value *v)
{
    switch (v->kind) {
    case VAL_NONE:
    case VAL_NULL: return false;
    case VAL_BOOL: return v->u.b;
    case VAL_INT: return v->u.i != 0;
    case VAL_FLOAT: return v->u.f != 0.0;
    case VAL_STRING: return v->u.str.len != 0;
    case VAL_ARRAY: return v->u.arr.len != 0;
    case VAL_OBJECT: return v->u.obj.len != 0;
    default: return true;
    }
}

const char *
lang_value_kind_name(ValueKind k)
{
    switch (k) {
    case VAL_NONE: return "none";
    case VAL_NULL: return "null";
    case VAL_BOOL: return "bool";
    case VAL_INT: return "int";
    case VAL_FLOAT: return "float";
    case VAL_STRING: return "string";
    case VAL_DURATION: return "duration";
    case VAL_DATETIME: return "datetime";
    case VAL_RECORD: return "record";
    case VAL_ARRAY: return "array";
    case VAL_OBJECT: return "object";
    }
    return "unknown";
}
