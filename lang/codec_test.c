/* codec_test.c — unit tests for codec.c: the stored form round trips,
 * and truncated, corrupt or too deep input is refused. */
#include <math.h>

#include "value_test.h"

/* ---- the stored form ---- */

static Value
nested_sample(void)
{
    return obj(8, "arr",
               arr(4, lang_value_int(-1), lang_value_float(2.5), lang_value_null(),
                   arr(1, lang_value_object())),
               "b", lang_value_bool(true), "dt", lang_value_datetime(INT64_MIN), "dur",
               lang_value_duration(5 * SEC), "f", lang_value_bool(false), "rec",
               rec_str("reclaim", "bucket/key"), "rid", rec_int("jobs", INT64_MAX), "s",
               lang_value_string("x\0y\xff", 4));
}

static void
test_encode_decode(void)
{
    Value v = nested_sample();
    lang_value_object_set(&v, "big", lang_value_int(INT64_MIN));
    lang_value_object_set(&v, "nan", lang_value_float(NAN));
    lang_value_object_set(&v, "neg0", lang_value_float(-0.0));
    Buf b = {0};
    lang_value_encode(&v, &b);

    Value back;
    CHECK(lang_value_decode(b.data, b.len, &back) == 0, "decode round trip");
    CHECK(lang_value_equal(&v, &back), "round trip equal");
    const Value *neg0 = lang_value_object_get(&back, "neg0");
    CHECK(neg0 && neg0->kind == VAL_FLOAT && signbit(neg0->u.f), "-0.0 kept");
    const Value *nan = lang_value_object_get(&back, "nan");
    CHECK(nan && nan->kind == VAL_FLOAT && isnan(nan->u.f), "NaN kept");
    lang_value_free(&back);

    /* every strict prefix is incomplete */
    size_t bad = 0;
    for (size_t len = 0; len < b.len; len++) {
        Value part;
        int rc = lang_value_decode(b.data, len, &part);
        if (rc != -1 || part.kind != VAL_NONE)
            bad++;
        lang_value_free(&part);
    }
    CHECK(bad == 0, "%zu of %zu truncated prefixes decoded", bad, b.len);

    /* a trailing byte is also refused */
    lang_buf_putc(&b, 0);
    CHECK(lang_value_decode(b.data, b.len, &back) == -1 && back.kind == VAL_NONE,
          "trailing byte refused");

    /* each scalar kind on its own */
    Value scalars[] = {
        lang_value_none(),         lang_value_null(),
        lang_value_bool(false),    lang_value_int(0),
        lang_value_int(1),         lang_value_int(-64),
        lang_value_int(INT64_MAX), lang_value_float(1e-300),
        lang_value_string("", 0),  lang_value_duration(INT64_MAX),
        lang_value_datetime(-1),   rec_int("t", 0),
        lang_value_array(),        lang_value_object(),
    };
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        lang_buf_reset(&b);
        lang_value_encode(&scalars[i], &b);
        int rc = lang_value_decode(b.data, b.len, &back);
        CHECK(rc == 0 && back.kind == scalars[i].kind && lang_value_equal(&back, &scalars[i]),
              "scalar %zu (%s) round trip", i, lang_value_kind_name(scalars[i].kind));
        lang_value_free(&back);
        lang_value_free(&scalars[i]);
    }
    lang_buf_free(&b);
    lang_value_free(&v);
}

static void
test_decode_garbage(void)
{
    /* hand-made bad inputs */
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"", 0},
        {"\x0c", 1}, /* unknown tag */
        {"\xff", 1},
        {"\x04\x80", 2},                                      /* unterminated varint */
        {"\x04\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11}, /* varint > 64 bits */
        {"\x06\x05"
         "abc",
         5},                                                  /* string too short */
        {"\x06\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11}, /* huge length */
        {"\x0a\xff\xff\xff\xff\x0f", 6},                      /* huge array count */
        {"\x0b\x02\x01"
         "b"
         "\x01\x01"
         "a"
         "\x01",
         8}, /* keys out of order */
        {"\x0b\x02\x01"
         "a"
         "\x01\x01"
         "a"
         "\x01",
         8}, /* duplicate keys */
        {"\x0b\x01\x01"
         "a"
         "\x00",
         5}, /* NONE value in object */
        {"\x0b\x01\x02"
         "a\0"
         "\x01",
         5}, /* NUL in key */
        {"\x09\x01"
         "t"
         "\x01",
         4}, /* record key of kind null */
        {"\x09\x02"
         "t\0"
         "\x04\x00",
         6},                     /* NUL in table name */
        {"\x05\x00\x00\x00", 4}, /* short float */
        {"\x01\x01", 2},         /* two values */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Value v;
        int rc = lang_value_decode(bad[i].bytes, bad[i].len, &v);
        CHECK(rc == -1 && v.kind == VAL_NONE, "bad input %zu refused", i);
        lang_value_free(&v);
    }

    /* nesting: 1000 levels below the top decode, deeper is refused */
    static const int depths[] = {1, 100, 1000, 1001, 5000};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        Buf b = {0};
        for (int k = 0; k < depths[i]; k++)
            lang_buf_append(&b, "\x0a\x01", 2);
        lang_buf_putc(&b, 0x01);
        Value v;
        int rc = lang_value_decode(b.data, b.len, &v);
        int want = depths[i] <= 1000 ? 0 : -1;
        CHECK(rc == want, "depth %d: rc %d", depths[i], rc);
        lang_value_free(&v);
        lang_buf_free(&b);
    }

    /* random mutations of a valid encoding never crash or leak */
    Value sample = nested_sample();
    Buf enc = {0};
    lang_value_encode(&sample, &enc);
    unsigned seed = 12345;
    size_t decoded = 0;
    for (int round = 0; round < 20000; round++) {
        Buf m = {0};
        lang_buf_append(&m, enc.data, enc.len);
        int flips = 1 + round % 4;
        for (int k = 0; k < flips; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % m.len;
            seed = seed * 1103515245u + 12345u;
            m.data[at] = (char)(seed >> 16);
        }
        seed = seed * 1103515245u + 12345u;
        size_t len = round % 3 ? m.len : (seed >> 8) % (m.len + 1);
        Value v;
        if (lang_value_decode(m.data, len, &v) == 0) {
            decoded++;
            Buf again = {0};
            lang_value_encode(&v, &again);
            Value w;
            if (lang_value_decode(again.data, again.len, &w) == 0 && lang_value_equal(&v, &w))
                decoded--; /* a decoded value must re-encode and round trip */
            lang_value_free(&w);
            lang_buf_free(&again);
        } else if (v.kind != VAL_NONE) {
            decoded += 1000000;
        }
        lang_value_free(&v);
        lang_buf_free(&m);
    }
    CHECK(decoded == 0, "mutated inputs misbehaved (%zu)", decoded);
    lang_buf_free(&enc);
    lang_value_free(&sample);
}

int
main(void)
{
    test_encode_decode();
    test_decode_garbage();
    return unit_test_summary();
}
