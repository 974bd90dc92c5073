/* order.c — order keys: lang_value_key_encode, the encoding whose memcmp order
 * is lang_value_compare's order (see value.h). */
#include "value.h"

#include <math.h>
#include <string.h>

#include "../store/bigendian.h"

enum {
    KEY_END = 0x00, /* ends an array or object */
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
    KEY_PAIR = 0x01, /* starts each object entry */
};

static void
key_i64(int64_t v, Buf *out)
{
    unsigned char b[8];
    be_put64(b, (uint64_t)v ^ (UINT64_C(1) << 63));
    lang_buf_append(out, b, sizeof b);
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
        bits = 0; /* below -inf, which encodes as 0x000fffffffffffff */
    } else {
        if (d == 0)
            d = 0.0; /* -0.0 == 0.0 */
        memcpy(&bits, &d, 8);
        bits = (bits >> 63) ? ~bits : bits | (UINT64_C(1) << 63);
    }
    unsigned char b[10];
    be_put64(b, bits);
    be_put16(b + 8, (uint16_t)(r + 0x8000));
    lang_buf_append(out, b, sizeof b);
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
        lang_buf_append(out, s + run, i - run);
        lang_buf_append(out, esc, 2);
        run = i + 1;
    }
    lang_buf_append(out, s + run, len - run);
    lang_buf_append(out, end, 2);
}

static void
key_encode_asc(const Value *v, Buf *out)
{
    switch (v->kind) {
    case VAL_NONE: lang_buf_putc(out, KEY_NONE); break;
    case VAL_NULL: lang_buf_putc(out, KEY_NULL); break;
    case VAL_BOOL:
        lang_buf_putc(out, KEY_BOOL);
        lang_buf_putc(out, v->u.b ? 1 : 0);
        break;
    case VAL_INT:
    case VAL_FLOAT:
        lang_buf_putc(out, KEY_NUMBER);
        key_number(v, out);
        break;
    case VAL_STRING:
        lang_buf_putc(out, KEY_STRING);
        key_bytes(v->u.str.s, v->u.str.len, out);
        break;
    case VAL_DURATION:
        lang_buf_putc(out, KEY_DURATION);
        key_i64(v->u.ns, out);
        break;
    case VAL_DATETIME:
        lang_buf_putc(out, KEY_DATETIME);
        key_i64(v->u.ns, out);
        break;
    case VAL_RECORD: {
        Value none = lang_value_none();
        lang_buf_putc(out, KEY_RECORD);
        key_bytes(v->u.rec.table, strlen(v->u.rec.table), out);
        key_encode_asc(v->u.rec.key ? v->u.rec.key : &none, out);
        break;
    }
    case VAL_ARRAY:
        lang_buf_putc(out, KEY_ARRAY);
        for (size_t i = 0; i < v->u.arr.len; i++)
            key_encode_asc(&v->u.arr.items[i], out);
        lang_buf_putc(out, KEY_END);
        break;
    case VAL_OBJECT:
        lang_buf_putc(out, KEY_OBJECT);
        for (size_t i = 0; i < v->u.obj.len; i++) {
            lang_buf_putc(out, KEY_PAIR);
            key_bytes(v->u.obj.keys[i], strlen(v->u.obj.keys[i]), out);
            key_encode_asc(&v->u.obj.vals[i], out);
        }
        lang_buf_putc(out, KEY_END);
        break;
    }
}

void
lang_value_key_encode(const Value *v, bool descending, Buf *out)
{
    size_t start = out->len;
    key_encode_asc(v, out);
    if (descending)
        for (size_t i = start; i < out->len; i++)
            out->data[i] = (char)~(unsigned char)out->data[i];
}
