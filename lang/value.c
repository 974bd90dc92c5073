/* value.c — the queuefs data model: construction, comparison, JSON text,
 * durations and datetimes, and the two binary forms (see value.h). */
#include "value.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_SEC   INT64_C(1000000000)
#define SECS_PER_DAY INT64_C(86400)
#define DECODE_MAX_DEPTH 1000

/* ------------------------------------------------------------------ */
/* construction                                                        */
/* ------------------------------------------------------------------ */

Value
value_none(void)
{
    Value v = {.kind = VAL_NONE};
    return v;
}

Value
value_null(void)
{
    Value v = {.kind = VAL_NULL};
    return v;
}

Value
value_bool(bool b)
{
    Value v = {.kind = VAL_BOOL, .u.b = b};
    return v;
}

Value
value_int(int64_t i)
{
    Value v = {.kind = VAL_INT, .u.i = i};
    return v;
}

Value
value_float(double f)
{
    Value v = {.kind = VAL_FLOAT, .u.f = f};
    return v;
}

Value
value_string(const char *s, size_t len)
{
    Value v = {.kind = VAL_STRING};
    v.u.str.s = xmalloc(len + 1);
    if (len)
        memcpy(v.u.str.s, s, len);
    v.u.str.s[len] = '\0';
    v.u.str.len = len;
    return v;
}

Value
value_cstring(const char *s)
{
    return value_string(s, strlen(s));
}

Value
value_duration(int64_t ns)
{
    Value v = {.kind = VAL_DURATION, .u.ns = ns};
    return v;
}

Value
value_datetime(int64_t ns)
{
    Value v = {.kind = VAL_DATETIME, .u.ns = ns};
    return v;
}

Value
value_record(const char *table, Value key)
{
    Value v = {.kind = VAL_RECORD};
    v.u.rec.table = xstrdup(table);
    v.u.rec.key = xmalloc(sizeof *v.u.rec.key);
    *v.u.rec.key = key;
    return v;
}

Value
value_array(void)
{
    Value v = {.kind = VAL_ARRAY};
    return v;
}

Value
value_object(void)
{
    Value v = {.kind = VAL_OBJECT};
    return v;
}

void
value_free(Value *v)
{
    switch (v->kind) {
    case VAL_STRING:
        free(v->u.str.s);
        break;
    case VAL_RECORD:
        free(v->u.rec.table);
        if (v->u.rec.key) {
            value_free(v->u.rec.key);
            free(v->u.rec.key);
        }
        break;
    case VAL_ARRAY:
        for (size_t i = 0; i < v->u.arr.len; i++)
            value_free(&v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case VAL_OBJECT:
        for (size_t i = 0; i < v->u.obj.len; i++) {
            free(v->u.obj.keys[i]);
            value_free(&v->u.obj.vals[i]);
        }
        free(v->u.obj.keys);
        free(v->u.obj.vals);
        break;
    default:
        break;
    }
    memset(v, 0, sizeof *v);
    v->kind = VAL_NONE;
}

Value
value_clone(const Value *v)
{
    Value c = *v;
    switch (v->kind) {
    case VAL_STRING:
        return value_string(v->u.str.s, v->u.str.len);
    case VAL_RECORD:
        c.u.rec.table = xstrdup(v->u.rec.table);
        c.u.rec.key = xmalloc(sizeof *c.u.rec.key);
        *c.u.rec.key = v->u.rec.key ? value_clone(v->u.rec.key) : value_none();
        return c;
    case VAL_ARRAY:
        c.u.arr.cap = v->u.arr.len;
        c.u.arr.items = v->u.arr.len ? xmalloc(v->u.arr.len * sizeof(Value)) : NULL;
        for (size_t i = 0; i < v->u.arr.len; i++)
            c.u.arr.items[i] = value_clone(&v->u.arr.items[i]);
        return c;
    case VAL_OBJECT:
        c.u.obj.cap = v->u.obj.len;
        c.u.obj.keys = v->u.obj.len ? xmalloc(v->u.obj.len * sizeof(char *)) : NULL;
        c.u.obj.vals = v->u.obj.len ? xmalloc(v->u.obj.len * sizeof(Value)) : NULL;
        for (size_t i = 0; i < v->u.obj.len; i++) {
            c.u.obj.keys[i] = xstrdup(v->u.obj.keys[i]);
            c.u.obj.vals[i] = value_clone(&v->u.obj.vals[i]);
        }
        return c;
    default:
        return c;
    }
}

/* ------------------------------------------------------------------ */
/* arrays and objects                                                  */
/* ------------------------------------------------------------------ */

void
value_array_push(Value *a, Value item)
{
    if (a->kind != VAL_ARRAY) {
        value_free(&item);
        return;
    }
    if (a->u.arr.len == a->u.arr.cap) {
        a->u.arr.cap = a->u.arr.cap ? a->u.arr.cap * 2 : 4;
        a->u.arr.items = xrealloc(a->u.arr.items, a->u.arr.cap * sizeof(Value));
    }
    a->u.arr.items[a->u.arr.len++] = item;
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
        o->u.obj.keys = xrealloc(o->u.obj.keys, o->u.obj.cap * sizeof(char *));
        o->u.obj.vals = xrealloc(o->u.obj.vals, o->u.obj.cap * sizeof(Value));
    }
    size_t tail = o->u.obj.len - idx;
    memmove(&o->u.obj.keys[idx + 1], &o->u.obj.keys[idx], tail * sizeof(char *));
    memmove(&o->u.obj.vals[idx + 1], &o->u.obj.vals[idx], tail * sizeof(Value));
    o->u.obj.keys[idx] = key;
    o->u.obj.vals[idx] = val;
    o->u.obj.len++;
}

const Value *
value_object_get(const Value *o, const char *key)
{
    if (o->kind != VAL_OBJECT)
        return NULL;
    bool found;
    size_t idx = object_find(o, key, &found);
    return found ? &o->u.obj.vals[idx] : NULL;
}

void
value_object_set(Value *o, const char *key, Value val)
{
    if (o->kind != VAL_OBJECT) {
        value_free(&val);
        return;
    }
    if (val.kind == VAL_NONE) {
        value_object_remove(o, key);
        return;
    }
    bool found;
    size_t idx = object_find(o, key, &found);
    if (found) {
        value_free(&o->u.obj.vals[idx]);
        o->u.obj.vals[idx] = val;
        return;
    }
    object_insert_at(o, idx, xstrdup(key), val);
}

bool
value_object_remove(Value *o, const char *key)
{
    if (o->kind != VAL_OBJECT)
        return false;
    bool found;
    size_t idx = object_find(o, key, &found);
    if (!found)
        return false;
    free(o->u.obj.keys[idx]);
    value_free(&o->u.obj.vals[idx]);
    size_t tail = o->u.obj.len - idx - 1;
    memmove(&o->u.obj.keys[idx], &o->u.obj.keys[idx + 1], tail * sizeof(char *));
    memmove(&o->u.obj.vals[idx], &o->u.obj.vals[idx + 1], tail * sizeof(Value));
    o->u.obj.len--;
    return true;
}

/* ------------------------------------------------------------------ */
/* comparison                                                          */
/* ------------------------------------------------------------------ */

/* The rank of a kind in the total order; ints and floats share one. */
static int
kind_rank(ValueKind k)
{
    switch (k) {
    case VAL_NONE:     return 0;
    case VAL_NULL:     return 1;
    case VAL_BOOL:     return 2;
    case VAL_INT:
    case VAL_FLOAT:    return 3;
    case VAL_STRING:   return 4;
    case VAL_DURATION: return 5;
    case VAL_DATETIME: return 6;
    case VAL_RECORD:   return 7;
    case VAL_ARRAY:    return 8;
    case VAL_OBJECT:   return 9;
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
    int64_t t = (int64_t)f;           /* truncation; exact for |f| < 2^63 */
    if (i != t)
        return cmp_i64(i, t);
    double frac = f - (double)t;      /* exact */
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
    Value none = value_none();
    return value_compare(a->key ? a->key : &none, b->key ? b->key : &none);
}

static int
cmp_array(const Value *a, const Value *b)
{
    size_t n = a->u.arr.len < b->u.arr.len ? a->u.arr.len : b->u.arr.len;
    for (size_t i = 0; i < n; i++) {
        int c = value_compare(&a->u.arr.items[i], &b->u.arr.items[i]);
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
        c = value_compare(&a->u.obj.vals[i], &b->u.obj.vals[i]);
        if (c)
            return c;
    }
    return (a->u.obj.len > b->u.obj.len) - (a->u.obj.len < b->u.obj.len);
}

int
value_compare(const Value *a, const Value *b)
{
    int ra = kind_rank(a->kind), rb = kind_rank(b->kind);
    if (ra != rb)
        return ra < rb ? -1 : 1;
    switch (a->kind) {
    case VAL_BOOL:
        return (int)a->u.b - (int)b->u.b;
    case VAL_INT:
    case VAL_FLOAT:
        return cmp_number(a, b);
    case VAL_STRING:
        return cmp_bytes(a->u.str.s, a->u.str.len, b->u.str.s, b->u.str.len);
    case VAL_DURATION:
    case VAL_DATETIME:
        return cmp_i64(a->u.ns, b->u.ns);
    case VAL_RECORD:
        return cmp_record(&a->u.rec, &b->u.rec);
    case VAL_ARRAY:
        return cmp_array(a, b);
    case VAL_OBJECT:
        return cmp_object(a, b);
    default:
        return 0;
    }
}

bool
value_equal(const Value *a, const Value *b)
{
    return value_compare(a, b) == 0;
}

bool
value_truthy(const Value *v)
{
    switch (v->kind) {
    case VAL_NONE:
    case VAL_NULL:
        return false;
    case VAL_BOOL:
        return v->u.b;
    case VAL_INT:
        return v->u.i != 0;
    case VAL_FLOAT:
        return v->u.f != 0.0;
    case VAL_STRING:
        return v->u.str.len != 0;
    case VAL_ARRAY:
        return v->u.arr.len != 0;
    case VAL_OBJECT:
        return v->u.obj.len != 0;
    default:
        return true;
    }
}

const char *
value_kind_name(ValueKind k)
{
    switch (k) {
    case VAL_NONE:     return "none";
    case VAL_NULL:     return "null";
    case VAL_BOOL:     return "bool";
    case VAL_INT:      return "int";
    case VAL_FLOAT:    return "float";
    case VAL_STRING:   return "string";
    case VAL_DURATION: return "duration";
    case VAL_DATETIME: return "datetime";
    case VAL_RECORD:   return "record";
    case VAL_ARRAY:    return "array";
    case VAL_OBJECT:   return "object";
    }
    return "unknown";
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */
/* ------------------------------------------------------------------ */

/* Appends "s" as a quoted JSON string; UTF-8 passes through unchanged. */
static void
json_string(const char *s, size_t len, Buf *out)
{
    buf_putc(out, '"');
    size_t run = 0;   /* start of the pending run of plain bytes */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        switch (c) {
        case '"':  esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                snprintf(hex, sizeof hex, "\\u%04x", c);
                esc = hex;
            }
            break;
        }
        if (!esc)
            continue;
        buf_append(out, s + run, i - run);
        buf_puts(out, esc);
        run = i + 1;
    }
    buf_append(out, s + run, len - run);
    buf_putc(out, '"');
}

/* Appends a finite float in the shortest %g form that reads back exactly,
 * with ".0" added when it would otherwise look like an integer. */
static void
json_float(double f, Buf *out)
{
    if (!isfinite(f)) {
        buf_puts(out, "null");
        return;
    }
    char text[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, f);
        if (strtod(text, NULL) == f)
            break;
    }
    buf_puts(out, text);
    if (!strpbrk(text, ".eE"))
        buf_puts(out, ".0");
}

/* Renders a text form (datetime, duration, record id) as a JSON string. */
static void
json_quoted_buf(const Buf *text, Buf *out)
{
    json_string(text->data ? text->data : "", text->len, out);
}

void
value_to_json(const Value *v, Buf *out)
{
    Buf tmp = {0};
    switch (v->kind) {
    case VAL_NONE:
    case VAL_NULL:
        buf_puts(out, "null");
        break;
    case VAL_BOOL:
        buf_puts(out, v->u.b ? "true" : "false");
        break;
    case VAL_INT:
        buf_put_int(out, v->u.i);
        break;
    case VAL_FLOAT:
        json_float(v->u.f, out);
        break;
    case VAL_STRING:
        json_string(v->u.str.s, v->u.str.len, out);
        break;
    case VAL_DURATION:
        duration_format(v->u.ns, &tmp);
        json_quoted_buf(&tmp, out);
        break;
    case VAL_DATETIME:
        datetime_format(v->u.ns, &tmp);
        json_quoted_buf(&tmp, out);
        break;
    case VAL_RECORD:
        record_id_format(&v->u.rec, &tmp);
        json_quoted_buf(&tmp, out);
        break;
    case VAL_ARRAY:
        buf_putc(out, '[');
        for (size_t i = 0; i < v->u.arr.len; i++) {
            if (i)
                buf_putc(out, ',');
            value_to_json(&v->u.arr.items[i], out);
        }
        buf_putc(out, ']');
        break;
    case VAL_OBJECT: {
        buf_putc(out, '{');
        bool first = true;
        for (size_t i = 0; i < v->u.obj.len; i++) {
            if (v->u.obj.vals[i].kind == VAL_NONE)
                continue;
            if (!first)
                buf_putc(out, ',');
            first = false;
            json_string(v->u.obj.keys[i], strlen(v->u.obj.keys[i]), out);
            buf_putc(out, ':');
            value_to_json(&v->u.obj.vals[i], out);
        }
        buf_putc(out, '}');
        break;
    }
    }
    buf_free(&tmp);
}

/* True when "s" is [A-Za-z_][A-Za-z0-9_]* (so never all digits). */
static bool
is_plain_ident(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0))
            return false;
    }
    return true;
}

void
record_id_format(const RecordId *id, Buf *out)
{
    buf_puts(out, id->table);
    buf_putc(out, ':');
    const Value *key = id->key;
    if (!key)
        return;
    if (key->kind == VAL_INT) {
        buf_put_int(out, key->u.i);
    } else if (key->kind == VAL_STRING) {
        const char *s = key->u.str.s;
        size_t len = key->u.str.len;
        if (is_plain_ident(s, len)) {
            buf_append(out, s, len);
            return;
        }
        buf_putc(out, '\'');
        for (size_t i = 0; i < len; i++) {
            if (s[i] == '\'' || s[i] == '\\')
                buf_putc(out, '\\');
            buf_putc(out, s[i]);
        }
        buf_putc(out, '\'');
    } else {
        value_to_json(key, out);
    }
}

/* ------------------------------------------------------------------ */
/* durations                                                           */
/* ------------------------------------------------------------------ */

static const struct {
    const char *name;
    uint64_t    ns;
} duration_units[] = {
    {"y",  UINT64_C(365) * 86400 * 1000000000},
    {"w",  UINT64_C(7) * 86400 * 1000000000},
    {"d",  UINT64_C(86400) * 1000000000},
    {"h",  UINT64_C(3600) * 1000000000},
    {"m",  UINT64_C(60) * 1000000000},
    {"s",  UINT64_C(1000000000)},
    {"ms", UINT64_C(1000000)},
    {"us", UINT64_C(1000)},
    {"ns", UINT64_C(1)},
};
#define N_DURATION_UNITS (sizeof duration_units / sizeof duration_units[0])

void
duration_format(int64_t ns, Buf *out)
{
    if (ns == 0) {
        buf_puts(out, "0ns");
        return;
    }
    uint64_t rest = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        buf_putc(out, '-');
    for (size_t i = 0; i < N_DURATION_UNITS; i++) {
        uint64_t n = rest / duration_units[i].ns;
        rest %= duration_units[i].ns;
        if (n)
            buf_printf(out, "%" PRIu64 "%s", n, duration_units[i].name);
    }
}

/* Matches the unit at s[*pos] (longest first: "ms" before "m"); its size in
 * nanoseconds, or 0 when no unit is there. */
static uint64_t
duration_unit_at(const char *s, size_t len, size_t *pos)
{
    static const struct {
        const char *text;
        uint64_t    ns;
    } spellings[] = {
        {"ms", UINT64_C(1000000)},
        {"us", UINT64_C(1000)},
        {"\xc2\xb5s", UINT64_C(1000)},
        {"ns", UINT64_C(1)},
        {"y", UINT64_C(365) * 86400 * 1000000000},
        {"w", UINT64_C(7) * 86400 * 1000000000},
        {"d", UINT64_C(86400) * 1000000000},
        {"h", UINT64_C(3600) * 1000000000},
        {"m", UINT64_C(60) * 1000000000},
        {"s", UINT64_C(1000000000)},
    };
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        size_t n = strlen(spellings[i].text);
        if (len - *pos >= n && memcmp(s + *pos, spellings[i].text, n) == 0) {
            *pos += n;
            return spellings[i].ns;
        }
    }
    return 0;
}

int
duration_parse(const char *s, size_t len, int64_t *ns_out)
{
    size_t pos = 0;
    uint64_t total = 0;
    if (len == 0)
        return -1;
    while (pos < len) {
        uint64_t n = 0;
        size_t start = pos;
        while (pos < len && s[pos] >= '0' && s[pos] <= '9') {
            unsigned d = (unsigned)(s[pos] - '0');
            if (n > ((uint64_t)INT64_MAX - d) / 10)
                return -1;
            n = n * 10 + d;
            pos++;
        }
        if (pos == start)
            return -1;
        uint64_t unit = duration_unit_at(s, len, &pos);
        if (unit == 0)
            return -1;
        if (n > (uint64_t)INT64_MAX / unit)
            return -1;
        n *= unit;
        if (n > (uint64_t)INT64_MAX - total)
            return -1;
        total += n;
    }
    *ns_out = (int64_t)total;
    return 0;
}

/* ------------------------------------------------------------------ */
/* datetimes                                                           */
/* ------------------------------------------------------------------ */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The date of a day count since 1970-01-01 (inverse of the above). */
static void
civil_from_days(int64_t z, int64_t *y_out, int *m_out, int *d_out)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y_out = yoe + era * 400 + (m <= 2);
    *m_out = m;
    *d_out = d;
}

static int
days_in_month(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* Reads exactly "n" decimal digits at s[*pos]. */
static bool
read_digits(const char *s, size_t len, size_t *pos, int n, int *out)
{
    int v = 0;
    if (len - *pos < (size_t)n)
        return false;
    for (int i = 0; i < n; i++) {
        char c = s[*pos + (size_t)i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *pos += (size_t)n;
    *out = v;
    return true;
}

static bool
read_char(const char *s, size_t len, size_t *pos, const char *accept)
{
    if (*pos >= len || s[*pos] == '\0' || !strchr(accept, s[*pos]))
        return false;
    (*pos)++;
    return true;
}

/* Reads an optional ".fraction" (1 to 9 digits) as nanoseconds. */
static bool
read_fraction(const char *s, size_t len, size_t *pos, int64_t *nanos)
{
    *nanos = 0;
    if (*pos >= len || s[*pos] != '.')
        return true;
    (*pos)++;
    int digits = 0;
    int64_t v = 0;
    while (*pos < len && s[*pos] >= '0' && s[*pos] <= '9') {
        if (++digits > 9)
            return false;
        v = v * 10 + (s[*pos] - '0');
        (*pos)++;
    }
    if (digits == 0)
        return false;
    for (int i = digits; i < 9; i++)
        v *= 10;
    *nanos = v;
    return true;
}

/* Reads "Z" or "+HH:MM" / "-HH:MM" as an offset east of UTC in seconds. */
static bool
read_zone(const char *s, size_t len, size_t *pos, int64_t *offset)
{
    *offset = 0;
    if (read_char(s, len, pos, "Zz"))
        return true;
    if (*pos >= len || (s[*pos] != '+' && s[*pos] != '-'))
        return false;
    int sign = s[*pos] == '-' ? -1 : 1;
    int hh, mm;
    (*pos)++;
    if (!read_digits(s, len, pos, 2, &hh) || !read_char(s, len, pos, ":") ||
        !read_digits(s, len, pos, 2, &mm) || hh > 23 || mm > 59)
        return false;
    *offset = sign * (hh * 3600 + mm * 60);
    return true;
}

int
datetime_parse(const char *s, size_t len, int64_t *ns_out)
{
    size_t pos = 0;
    int y, mo, d, h = 0, mi = 0, sec = 0;
    int64_t nanos = 0, offset = 0;
    if (!read_digits(s, len, &pos, 4, &y) || !read_char(s, len, &pos, "-") ||
        !read_digits(s, len, &pos, 2, &mo) || !read_char(s, len, &pos, "-") ||
        !read_digits(s, len, &pos, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return -1;
    if (pos < len) {
        if (!read_char(s, len, &pos, "Tt ") ||
            !read_digits(s, len, &pos, 2, &h) || !read_char(s, len, &pos, ":") ||
            !read_digits(s, len, &pos, 2, &mi) || !read_char(s, len, &pos, ":") ||
            !read_digits(s, len, &pos, 2, &sec) ||
            !read_fraction(s, len, &pos, &nanos) ||
            !read_zone(s, len, &pos, &offset) || pos != len)
            return -1;
        if (h > 23 || mi > 59 || sec > 59)
            return -1;
    }
    int64_t secs = days_from_civil(y, mo, d) * SECS_PER_DAY +
                   h * 3600 + mi * 60 + sec - offset;
    int64_t ns;
    if (secs < 0 && nanos > 0) {   /* keep the product in range near INT64_MIN */
        secs++;
        nanos -= NS_PER_SEC;
    }
    if (__builtin_mul_overflow(secs, NS_PER_SEC, &ns) ||
        __builtin_add_overflow(ns, nanos, &ns))
        return -1;
    *ns_out = ns;
    return 0;
}

void
datetime_format(int64_t ns, Buf *out)
{
    int64_t secs = ns / NS_PER_SEC, nanos = ns % NS_PER_SEC;
    if (nanos < 0) {
        nanos += NS_PER_SEC;
        secs--;
    }
    int64_t days = secs / SECS_PER_DAY, sod = secs % SECS_PER_DAY;
    if (sod < 0) {
        sod += SECS_PER_DAY;
        days--;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    /* Every int64 nanosecond count falls in the years 1677..2262. */
    buf_put_digits(out, (uint64_t)y, 4);
    const int parts[] = {m, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60)};
    const char seps[] = "--T::";
    for (int i = 0; i < 5; i++) {
        buf_putc(out, seps[i]);
        buf_put_digits(out, (uint64_t)parts[i], 2);
    }
    if (nanos) {
        int width = 9;   /* the fraction without its trailing zeros */
        for (; nanos % 10 == 0; nanos /= 10)
            width--;
        buf_putc(out, '.');
        buf_put_digits(out, (uint64_t)nanos, width);
    }
    buf_putc(out, 'Z');
}

/* ------------------------------------------------------------------ */
/* value_encode / value_decode                                         */
/* ------------------------------------------------------------------ */

enum {
    TAG_NONE = 0,
    TAG_NULL,
    TAG_FALSE,
    TAG_TRUE,
    TAG_INT,
    TAG_FLOAT,
    TAG_STRING,
    TAG_DURATION,
    TAG_DATETIME,
    TAG_RECORD,
    TAG_ARRAY,
    TAG_OBJECT,
};

static void
put_varint(Buf *out, uint64_t v)
{
    unsigned char bytes[10];
    size_t n = 0;
    do {
        unsigned char b = v & 0x7f;
        v >>= 7;
        bytes[n++] = b | (v ? 0x80 : 0);
    } while (v);
    buf_append(out, bytes, n);
}

static uint64_t
zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0);
}

static int64_t
unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void
put_tagged_int(Buf *out, int tag, int64_t v)
{
    buf_putc(out, (char)tag);
    put_varint(out, zigzag(v));
}

static void
put_bytes(Buf *out, const char *s, size_t len)
{
    put_varint(out, len);
    buf_append(out, s, len);
}

void
value_encode(const Value *v, Buf *out)
{
    switch (v->kind) {
    case VAL_NONE:
        buf_putc(out, TAG_NONE);
        break;
    case VAL_NULL:
        buf_putc(out, TAG_NULL);
        break;
    case VAL_BOOL:
        buf_putc(out, v->u.b ? TAG_TRUE : TAG_FALSE);
        break;
    case VAL_INT:
        put_tagged_int(out, TAG_INT, v->u.i);
        break;
    case VAL_FLOAT: {
        uint64_t bits;
        unsigned char le[8];
        memcpy(&bits, &v->u.f, 8);
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)(bits >> (8 * i));
        buf_putc(out, TAG_FLOAT);
        buf_append(out, le, 8);
        break;
    }
    case VAL_STRING:
        buf_putc(out, TAG_STRING);
        put_bytes(out, v->u.str.s, v->u.str.len);
        break;
    case VAL_DURATION:
        put_tagged_int(out, TAG_DURATION, v->u.ns);
        break;
    case VAL_DATETIME:
        put_tagged_int(out, TAG_DATETIME, v->u.ns);
        break;
    case VAL_RECORD: {
        Value none = value_none();
        buf_putc(out, TAG_RECORD);
        put_bytes(out, v->u.rec.table, strlen(v->u.rec.table));
        value_encode(v->u.rec.key ? v->u.rec.key : &none, out);
        break;
    }
    case VAL_ARRAY:
        buf_putc(out, TAG_ARRAY);
        put_varint(out, v->u.arr.len);
        for (size_t i = 0; i < v->u.arr.len; i++)
            value_encode(&v->u.arr.items[i], out);
        break;
    case VAL_OBJECT: {
        size_t n = 0;
        for (size_t i = 0; i < v->u.obj.len; i++)
            n += v->u.obj.vals[i].kind != VAL_NONE;
        buf_putc(out, TAG_OBJECT);
        put_varint(out, n);
        for (size_t i = 0; i < v->u.obj.len; i++) {
            if (v->u.obj.vals[i].kind == VAL_NONE)
                continue;
            put_bytes(out, v->u.obj.keys[i], strlen(v->u.obj.keys[i]));
            value_encode(&v->u.obj.vals[i], out);
        }
        break;
    }
    }
}

typedef struct Decoder {
    const unsigned char *p;
    size_t len, pos;
} Decoder;

static bool
get_byte(Decoder *d, unsigned char *b)
{
    if (d->pos >= d->len)
        return false;
    *b = d->p[d->pos++];
    return true;
}

static bool
get_varint(Decoder *d, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        unsigned char b;
        if (!get_byte(d, &b))
            return false;
        if (shift == 63 && b > 1)
            return false;   /* more than 64 bits */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* A length-prefixed byte string, pointing into the input. */
static bool
get_bytes(Decoder *d, const char **s, size_t *len)
{
    uint64_t n;
    if (!get_varint(d, &n) || n > d->len - d->pos)
        return false;
    *s = (const char *)d->p + d->pos;
    *len = (size_t)n;
    d->pos += (size_t)n;
    return true;
}

/* A length-prefixed string without NUL bytes, as a new C string. */
static char *
get_cstring(Decoder *d)
{
    const char *s;
    size_t len;
    if (!get_bytes(d, &s, &len) || memchr(s, '\0', len))
        return NULL;
    return xstrndup(s, len);
}

static int decode_value(Decoder *d, int depth, Value *out);

static int
decode_record(Decoder *d, int depth, Value *out)
{
    char *table = get_cstring(d);
    if (!table)
        return -1;
    Value key;
    if (decode_value(d, depth + 1, &key) < 0 ||
        (key.kind != VAL_INT && key.kind != VAL_STRING)) {
        value_free(&key);
        free(table);
        return -1;
    }
    out->kind = VAL_RECORD;
    out->u.rec.table = table;
    out->u.rec.key = xmalloc(sizeof *out->u.rec.key);
    *out->u.rec.key = key;
    return 0;
}

static int
decode_array(Decoder *d, int depth, Value *out)
{
    uint64_t n;
    if (!get_varint(d, &n) || n > d->len - d->pos)   /* each item >= 1 byte */
        return -1;
    *out = value_array();
    for (uint64_t i = 0; i < n; i++) {
        Value item;
        if (decode_value(d, depth + 1, &item) < 0) {
            value_free(out);
            return -1;
        }
        value_array_push(out, item);
    }
    return 0;
}

static int
decode_object(Decoder *d, int depth, Value *out)
{
    uint64_t n;
    if (!get_varint(d, &n) || n > (d->len - d->pos) / 2)   /* pair >= 2 bytes */
        return -1;
    *out = value_object();
    for (uint64_t i = 0; i < n; i++) {
        Value val;
        char *key = get_cstring(d);
        /* keys must arrive sorted and unique, values present */
        if (!key || (i > 0 && strcmp(out->u.obj.keys[i - 1], key) >= 0) ||
            decode_value(d, depth + 1, &val) < 0) {
            free(key);
            value_free(out);
            return -1;
        }
        if (val.kind == VAL_NONE) {
            free(key);
            value_free(out);
            return -1;
        }
        object_insert_at(out, out->u.obj.len, key, val);
    }
    return 0;
}

/* Decodes one value at d->pos; on failure "out" is VAL_NONE and nothing
 * is leaked. */
static int
decode_value(Decoder *d, int depth, Value *out)
{
    unsigned char tag;
    uint64_t u;
    *out = value_none();
    if (depth > DECODE_MAX_DEPTH || !get_byte(d, &tag))
        return -1;
    switch (tag) {
    case TAG_NONE:
        return 0;
    case TAG_NULL:
        *out = value_null();
        return 0;
    case TAG_FALSE:
    case TAG_TRUE:
        *out = value_bool(tag == TAG_TRUE);
        return 0;
    case TAG_INT:
    case TAG_DURATION:
    case TAG_DATETIME:
        if (!get_varint(d, &u))
            return -1;
        *out = tag == TAG_INT ? value_int(unzigzag(u))
             : tag == TAG_DURATION ? value_duration(unzigzag(u))
             : value_datetime(unzigzag(u));
        return 0;
    case TAG_FLOAT: {
        uint64_t bits = 0;
        double f;
        if (d->len - d->pos < 8)
            return -1;
        for (int i = 0; i < 8; i++)
            bits |= (uint64_t)d->p[d->pos + (size_t)i] << (8 * i);
        d->pos += 8;
        memcpy(&f, &bits, 8);
        *out = value_float(f);
        return 0;
    }
    case TAG_STRING: {
        const char *s;
        size_t len;
        if (!get_bytes(d, &s, &len))
            return -1;
        *out = value_string(s, len);
        return 0;
    }
    case TAG_RECORD:
        return decode_record(d, depth, out);
    case TAG_ARRAY:
        return decode_array(d, depth, out);
    case TAG_OBJECT:
        return decode_object(d, depth, out);
    default:
        return -1;
    }
}

int
value_decode(const void *data, size_t len, Value *out)
{
    Decoder d = {.p = data, .len = len, .pos = 0};
    if (decode_value(&d, 0, out) < 0)
        return -1;
    if (d.pos != len) {
        value_free(out);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* value_key_encode                                                    */
/* ------------------------------------------------------------------ */

enum {
    KEY_END = 0x00,      /* ends an array or object */
    KEY_NONE = 0x01,
    KEY_NULL,
    KEY_BOOL,
    KEY_NUMBER,
    KEY_STRING,
    KEY_DURATION,
    KEY_DATETIME,
    KEY_RECORD,
    KEY_ARRAY,
    KEY_OBJECT,
    KEY_PAIR = 0x01,     /* starts each object entry */
};

static void
key_i64(int64_t v, Buf *out)
{
    buf_put_u64be(out, (uint64_t)v ^ (UINT64_C(1) << 63));
}

/* A number as (d, r): d the nearest double, in order-preserving bits (NaN
 * lowest), then r = value - d (|r| <= 1024, only for large ints) as two
 * offset big-endian bytes.  Equal numeric values give equal bytes. */
static void
key_number(const Value *v, Buf *out)
{
    double d;
    int64_t r = 0;
    uint64_t bits;
    if (v->kind == VAL_INT) {
        d = (double)v->u.i;
        if (d >= 0x1p63)
            r = (v->u.i - INT64_MAX) - 1;
        else
            r = v->u.i - (int64_t)d;
    } else {
        d = v->u.f;
    }
    if (isnan(d)) {
        bits = 0;   /* below -inf, which encodes as 0x000fffffffffffff */
    } else {
        if (d == 0)
            d = 0.0;    /* -0.0 == 0.0 */
        memcpy(&bits, &d, 8);
        bits = (bits >> 63) ? ~bits : bits | (UINT64_C(1) << 63);
    }
    buf_put_u64be(out, bits);
    uint16_t rr = (uint16_t)(r + 0x8000);
    unsigned char two[2] = {(unsigned char)(rr >> 8), (unsigned char)rr};
    buf_append(out, two, 2);
}

/* Bytes with 0x00 escaped as 00 FF, ended by 00 00. */
static void
key_bytes(const char *s, size_t len, Buf *out)
{
    static const unsigned char esc[2] = {0x00, 0xff}, end[2] = {0x00, 0x00};
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\0')
            continue;
        buf_append(out, s + run, i - run);
        buf_append(out, esc, 2);
        run = i + 1;
    }
    buf_append(out, s + run, len - run);
    buf_append(out, end, 2);
}

static void
key_encode_asc(const Value *v, Buf *out)
{
    switch (v->kind) {
    case VAL_NONE:
        buf_putc(out, KEY_NONE);
        break;
    case VAL_NULL:
        buf_putc(out, KEY_NULL);
        break;
    case VAL_BOOL:
        buf_putc(out, KEY_BOOL);
        buf_putc(out, v->u.b ? 1 : 0);
        break;
    case VAL_INT:
    case VAL_FLOAT:
        buf_putc(out, KEY_NUMBER);
        key_number(v, out);
        break;
    case VAL_STRING:
        buf_putc(out, KEY_STRING);
        key_bytes(v->u.str.s, v->u.str.len, out);
        break;
    case VAL_DURATION:
        buf_putc(out, KEY_DURATION);
        key_i64(v->u.ns, out);
        break;
    case VAL_DATETIME:
        buf_putc(out, KEY_DATETIME);
        key_i64(v->u.ns, out);
        break;
    case VAL_RECORD: {
        Value none = value_none();
        buf_putc(out, KEY_RECORD);
        key_bytes(v->u.rec.table, strlen(v->u.rec.table), out);
        key_encode_asc(v->u.rec.key ? v->u.rec.key : &none, out);
        break;
    }
    case VAL_ARRAY:
        buf_putc(out, KEY_ARRAY);
        for (size_t i = 0; i < v->u.arr.len; i++)
            key_encode_asc(&v->u.arr.items[i], out);
        buf_putc(out, KEY_END);
        break;
    case VAL_OBJECT:
        buf_putc(out, KEY_OBJECT);
        for (size_t i = 0; i < v->u.obj.len; i++) {
            buf_putc(out, KEY_PAIR);
            key_bytes(v->u.obj.keys[i], strlen(v->u.obj.keys[i]), out);
            key_encode_asc(&v->u.obj.vals[i], out);
        }
        buf_putc(out, KEY_END);
        break;
    }
}

void
value_key_encode(const Value *v, bool descending, Buf *out)
{
    size_t start = out->len;
    key_encode_asc(v, out);
    if (descending)
        for (size_t i = start; i < out->len; i++)
            out->data[i] = (char)~(unsigned char)out->data[i];
}

/* ------------------------------------------------------------------ */
/* UTF-8                                                               */
/* ------------------------------------------------------------------ */

bool
utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        unsigned lo = 0x80, hi = 0xbf;   /* range of the second byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            if (c == 0xe0)
                lo = 0xa0;       /* no overlongs */
            else if (c == 0xed)
                hi = 0x9f;       /* no surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            if (c == 0xf0)
                lo = 0x90;       /* no overlongs */
            else if (c == 0xf4)
                hi = 0x8f;       /* max U+10FFFF */
        } else {
            return false;
        }
        if (len - i < n || p[i + 1] < lo || p[i + 1] > hi)
            return false;
        for (size_t k = 2; k < n; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xbf)
                return false;
        i += n;
    }
    return true;
}
