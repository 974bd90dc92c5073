/* json_test.c — unit tests for json.c: JSON text of every kind, record ids
 * as text, and the UTF-8 check. */
#include <math.h>

#include "value_test.h"

/* ---- JSON ---- */

static void
test_json_scalars(void)
{
    CHECK_JSON(lang_value_none(), "null");
    CHECK_JSON(lang_value_null(), "null");
    CHECK_JSON(lang_value_bool(true), "true");
    CHECK_JSON(lang_value_bool(false), "false");
    CHECK_JSON(lang_value_int(0), "0");
    CHECK_JSON(lang_value_int(-42), "-42");
    CHECK_JSON(lang_value_int(INT64_MAX), "9223372036854775807");
    CHECK_JSON(lang_value_int(INT64_MIN), "-9223372036854775808");
    CHECK_JSON(lang_value_duration(90 * 60 * SEC), "\"1h30m\"");
    CHECK_JSON(lang_value_duration(0), "\"0ns\"");
    CHECK_JSON(lang_value_datetime(INT64_C(1796112000) * SEC), "\"2026-12-01T08:00:00Z\"");
    CHECK_JSON(lang_value_datetime(INT64_C(1796112000) * SEC + 500000000),
               "\"2026-12-01T08:00:00.5Z\"");
    CHECK_JSON(rec_int("jobs", 1), "\"jobs:1\"");
    CHECK_JSON(rec_int("jobs", -7), "\"jobs:-7\"");
    CHECK_JSON(rec_str("reclaim", "bucket/key"), "\"reclaim:'bucket/key'\"");
    CHECK_JSON(rec_str("jobs", "it's"), "\"jobs:'it\\\\'s'\"");
}

static void
test_json_floats(void)
{
    static const struct {
        double f;
        const char *want;
    } cases[] = {
        {0.1, "0.1"},
        {1e300, "1e+300"},
        {2.0, "2.0"},
        {-0.0, "-0.0"},
        {0.0, "0.0"},
        {100.0, "100.0"},
        {-1.5, "-1.5"},
        {1.0 / 3.0, "0.3333333333333333"},
        {0.1 + 0.2, "0.30000000000000004"},
        {5e-324, "4.94065645841247e-324"},
        {1e21, "1e+21"},
        {123456789012345.0, "123456789012345.0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = json_take(lang_value_float(cases[i].f));
        CHECK(strcmp(got, cases[i].want) == 0, "float %zu: got %s, want %s", i, got, cases[i].want);
        CHECK(strtod(got, NULL) == cases[i].f, "float %s reads back", got);
        free(got);
    }
    CHECK_JSON(lang_value_float(NAN), "null");
    CHECK_JSON(lang_value_float(INFINITY), "null");
    CHECK_JSON(lang_value_float(-INFINITY), "null");
}

static void
test_json_strings(void)
{
    static const struct {
        const char *s;
        size_t len;
        const char *want;
    } cases[] = {
        {"", 0, "\"\""},
        {"plain", 5, "\"plain\""},
        {"q\"b\\s", 5, "\"q\\\"b\\\\s\""},
        {"\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\""},
        {"\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\""},
        {"a\0b", 3, "\"a\\u0000b\""},
        {"caf\xc3\xa9 \xe2\x82\xac", 9, "\"caf\xc3\xa9 \xe2\x82\xac\""},
        {"/<>'", 4, "\"/<>'\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = json_take(lang_value_string(cases[i].s, cases[i].len));
        CHECK(strcmp(got, cases[i].want) == 0, "string %zu: got %s, want %s", i, got,
              cases[i].want);
        free(got);
    }
}

static void
test_json_containers(void)
{
    CHECK_JSON(lang_value_array(), "[]");
    CHECK_JSON(lang_value_object(), "{}");
    CHECK_JSON(arr(3, lang_value_int(1), lang_value_none(), lang_value_cstring("x")),
               "[1,null,\"x\"]");
    CHECK_JSON(obj(3, "url", lang_value_cstring("a"), "id", rec_int("jobs", 1), "attempts",
                   lang_value_int(1)),
               "{\"attempts\":1,\"id\":\"jobs:1\",\"url\":\"a\"}");
    CHECK_JSON(
        obj(2, "a", arr(2, lang_value_float(2.0), lang_value_object()), "b\"", lang_value_null()),
        "{\"a\":[2.0,{}],\"b\\\"\":null}");
    CHECK_JSON(obj(2, "gone", lang_value_none(), "k", lang_value_bool(true)), "{\"k\":true}");

    /* a NONE stored directly (bypassing lang_value_object_set) is omitted */
    Value o = obj(1, "b", lang_value_int(2));
    o.u.obj.vals[0].kind = VAL_NONE;
    CHECK_JSON(o, "{}");
}

/* ---- record ids ---- */

static void
test_record_id_format(void)
{
    struct {
        Value id;
        const char *want;
    } cases[] = {
        {rec_str("jobs", "abc"), "jobs:abc"},
        {rec_str("jobs", "_x9"), "jobs:_x9"},
        {rec_str("jobs", "A_b_C"), "jobs:A_b_C"},
        {rec_str("jobs", "123"), "jobs:'123'"},
        {rec_str("jobs", "9abc"), "jobs:'9abc'"},
        {rec_str("jobs", ""), "jobs:''"},
        {rec_str("jobs", "bucket/key"), "jobs:'bucket/key'"},
        {rec_str("jobs", "it's"), "jobs:'it\\'s'"},
        {rec_str("jobs", "a\\b"), "jobs:'a\\\\b'"},
        {rec_str("jobs", "has space"), "jobs:'has space'"},
        {rec_int("jobs", 1), "jobs:1"},
        {rec_int("jobs", 0), "jobs:0"},
        {rec_int("jobs", -7), "jobs:-7"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Buf b = {0};
        lang_record_id_format(&cases[i].id.u.rec, &b);
        CHECK_STR(b.data, cases[i].want);
        lang_buf_free(&b);
        lang_value_free(&cases[i].id);
    }
}

/* ---- UTF-8 ---- */

static void
test_utf8(void)
{
    static const struct {
        const char *s;
        size_t len;
        bool want;
    } cases[] = {
        {"", 0, true},
        {"ascii", 5, true},
        {"a\0b", 3, true},
        {"\xc3\xa9", 2, true},
        {"\xe2\x82\xac", 3, true},
        {"\xf0\x9f\x98\x80", 4, true},
        {"\xf4\x8f\xbf\xbf", 4, true}, /* U+10FFFF */
        {"\xed\x9f\xbf", 3, true},     /* U+D7FF */
        {"\xee\x80\x80", 3, true},     /* U+E000 */
        {"\xc0\x80", 2, false},        /* overlong NUL */
        {"\xc1\xbf", 2, false},
        {"\xe0\x9f\xbf", 3, false},     /* overlong */
        {"\xf0\x8f\xbf\xbf", 4, false}, /* overlong */
        {"\xed\xa0\x80", 3, false},     /* surrogate */
        {"\xed\xbf\xbf", 3, false},
        {"\xf4\x90\x80\x80", 4, false}, /* > U+10FFFF */
        {"\xf5\x80\x80\x80", 4, false},
        {"\xff", 1, false},
        {"\x80", 1, false},
        {"\xc3", 1, false}, /* truncated */
        {"\xe2\x82", 2, false},
        {"\xf0\x9f\x98", 3, false},
        {"\xc3\x28", 2, false}, /* bad continuation */
        {"\xe2\x28\xac", 3, false},
        {"\xf0\x9f\x28\x80", 4, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(lang_utf8_valid(cases[i].s, cases[i].len) == cases[i].want, "utf8 case %zu", i);
}

int
main(void)
{
    test_json_scalars();
    test_json_floats();
    test_json_strings();
    test_json_containers();
    test_record_id_format();
    test_utf8();
    return unit_test_summary();
}
