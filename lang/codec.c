/* codec.c — the stored form of a value: lang_value_encode and lang_value_decode, a
 * compact self-describing encoding (see value.h). */
#include "value.h"

#include <stdlib.h>
#include <string.h>

#define DECODE_MAX_DEPTH 1000

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
    lang_buf_append(out, bytes, n);
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
    lang_buf_putc(out, (char)tag);
    put_varint(out, zigzag(v));
}

static void
put_bytes(Buf *out, const char *s, size_t len)
{
    put_varint(out, len);
    lang_buf_append(out, s, len);
}

void
lang_value_encode(const Value *v, Buf *out)
{
    switch (v->kind) {
    case VAL_NONE: lang_buf_putc(out, TAG_NONE); break;
    case VAL_NULL: lang_buf_putc(out, TAG_NULL); break;
    case VAL_BOOL: lang_buf_putc(out, v->u.b ? TAG_TRUE : TAG_FALSE); break;
    case VAL_INT: put_tagged_int(out, TAG_INT, v->u.i); break;
    case VAL_FLOAT: {
        uint64_t bits;
        unsigned char le[8];
        memcpy(&bits, &v->u.f, 8);
        for (int i = 0; i < 8; i++)
            le[i] = (unsigned char)(bits >> (8 * i));
        lang_buf_putc(out, TAG_FLOAT);
        lang_buf_append(out, le, 8);
        break;
    }
    case VAL_STRING:
        lang_buf_putc(out, TAG_STRING);
        put_bytes(out, v->u.str.s, v->u.str.len);
        break;
    case VAL_DURATION: put_tagged_int(out, TAG_DURATION, v->u.ns); break;
    case VAL_DATETIME: put_tagged_int(out, TAG_DATETIME, v->u.ns); break;
    case VAL_RECORD: {
        Value none = lang_value_none();
        lang_buf_putc(out, TAG_RECORD);
        put_bytes(out, v->u.rec.table, strlen(v->u.rec.table));
        lang_value_encode(v->u.rec.key ? v->u.rec.key : &none, out);
        break;
    }
    case VAL_ARRAY:
        lang_buf_putc(out, TAG_ARRAY);
        put_varint(out, v->u.arr.len);
        for (size_t i = 0; i < v->u.arr.len; i++)
            lang_value_encode(&v->u.arr.items[i], out);
        break;
    case VAL_OBJECT: {
        size_t n = 0;
        for (size_t i = 0; i < v->u.obj.len; i++)
            n += v->u.obj.vals[i].kind != VAL_NONE;
        lang_buf_putc(out, TAG_OBJECT);
        put_varint(out, n);
        for (size_t i = 0; i < v->u.obj.len; i++) {
            if (v->u.obj.vals[i].kind == VAL_NONE)
                continue;
            put_bytes(out, v->u.obj.keys[i], strlen(v->u.obj.keys[i]));
            lang_value_encode(&v->u.obj.vals[i], out);
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
            return false; /* more than 64 bits */
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
    return lang_xstrndup(s, len);
}

static int decode_value(Decoder *d, int depth, Value *out);

static int
decode_record(Decoder *d, int depth, Value *out)
{
    char *table = get_cstring(d);
    if (!table)
        return -1;
    Value key;
    if (decode_value(d, depth + 1, &key) < 0 || (key.kind != VAL_INT && key.kind != VAL_STRING)) {
        lang_value_free(&key);
        free(table);
        return -1;
    }
    out->kind = VAL_RECORD;
    out->u.rec.table = table;
    out->u.rec.key = lang_xmalloc(sizeof *out->u.rec.key);
    *out->u.rec.key = key;
    return 0;
}

static int
decode_array(Decoder *d, int depth, Value *out)
{
    uint64_t n;
    if (!get_varint(d, &n) || n > d->len - d->pos) /* each item >= 1 byte */
        return -1;
    *out = lang_value_array();
    for (uint64_t i = 0; i < n; i++) {
        Value item;
        if (decode_value(d, depth + 1, &item) < 0) {
            lang_value_free(out);
            return -1;
        }
        lang_value_array_push(out, item);
    }
    return 0;
}

static int
decode_object(Decoder *d, int depth, Value *out)
{
    uint64_t n;
    if (!get_varint(d, &n) || n > (d->len - d->pos) / 2) /* pair >= 2 bytes */
        return -1;
    *out = lang_value_object();
    for (uint64_t i = 0; i < n; i++) {
        Value val;
        char *key = get_cstring(d);
        /* keys must arrive sorted and unique, values present */
        if (!key || (i > 0 && strcmp(out->u.obj.keys[i - 1], key) >= 0) ||
            decode_value(d, depth + 1, &val) < 0) {
            free(key);
            lang_value_free(out);
            return -1;
        }
        if (val.kind == VAL_NONE) {
            free(key);
            lang_value_free(out);
            return -1;
        }
        lang_value_object_append(out, key, val);
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
    *out = lang_value_none();
    if (depth > DECODE_MAX_DEPTH || !get_byte(d, &tag))
        return -1;
    switch (tag) {
    case TAG_NONE: return 0;
    case TAG_NULL: *out = lang_value_null(); return 0;
    case TAG_FALSE:
    case TAG_TRUE: *out = lang_value_bool(tag == TAG_TRUE); return 0;
    case TAG_INT:
    case TAG_DURATION:
    case TAG_DATETIME:
        if (!get_varint(d, &u))
            return -1;
        *out = tag == TAG_INT        ? lang_value_int(unzigzag(u))
               : tag == TAG_DURATION ? lang_value_duration(unzigzag(u))
                                     : lang_value_datetime(unzigzag(u));
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
        *out = lang_value_float(f);
        return 0;
    }
    case TAG_STRING: {
        const char *s;
        size_t len;
        if (!get_bytes(d, &s, &len))
            return -1;
        *out = lang_value_string(s, len);
        return 0;
    }
    case TAG_RECORD: return decode_record(d, depth, out);
    case TAG_ARRAY: return decode_array(d, depth, out);
    case TAG_OBJECT: return decode_object(d, depth, out);
    default: return -1;
    }
}

int
lang_value_decode(const void *data, size_t len, Value *out)
{
    Decoder d = {.p = data, .len = len, .pos = 0};
    if (decode_value(&d, 0, out) < 0)
        return -1;
    if (d.pos != len) {
        lang_value_free(out);
        return -1;
    }
    return 0;
}
