/* value_test.c — unit tests for value.c: JSON text, objects, ordering,
 * durations, datetimes, the binary encoding and the key encoding. */
#include "value.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "../tests/unit_test.h"

#define SEC INT64_C(1000000000)

/* ---- helpers ---- */

/* The JSON of "v" (then frees "v"), as a heap string. */
static char *
json_take(Value v)
{
    Buf b = {0};
    value_to_json(&v, &b);
    value_free(&v);
    return buf_steal(&b);
}

static void
check_json(Value v, const char *want, int line)
{
    char *got = json_take(v);
    CHECK(strcmp(got, want) == 0, "line %d: got %s, want %s", line, got, want);
    free(got);
}
#define CHECK_JSON(v, want) check_json((v), (want), __LINE__)

/* An array of "n" values (taking ownership). */
static Value
arr(int n, ...)
{
    Value a = value_array();
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        value_array_push(&a, va_arg(ap, Value));
    va_end(ap);
    return a;
}

/* An object of "n" key/value pairs (taking ownership of the values). */
static Value
obj(int n, ...)
{
    Value o = value_object();
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        const char *key = va_arg(ap, const char *);
        value_object_set(&o, key, va_arg(ap, Value));
    }
    va_end(ap);
    return o;
}

static Value
rec_int(const char *table, int64_t key)
{
    return value_record(table, value_int(key));
}

static Value
rec_str(const char *table, const char *key)
{
    return value_record(table, value_cstring(key));
}

static int
sign(int x)
{
    return (x > 0) - (x < 0);
}

/* ---- JSON ---- */

static void
test_json_scalars(void)
{
    CHECK_JSON(value_none(), "null");
    CHECK_JSON(value_null(), "null");
    CHECK_JSON(value_bool(true), "true");
    CHECK_JSON(value_bool(false), "false");
    CHECK_JSON(value_int(0), "0");
    CHECK_JSON(value_int(-42), "-42");
    CHECK_JSON(value_int(INT64_MAX), "9223372036854775807");
    CHECK_JSON(value_int(INT64_MIN), "-9223372036854775808");
    CHECK_JSON(value_duration(90 * 60 * SEC), "\"1h30m\"");
    CHECK_JSON(value_duration(0), "\"0ns\"");
    CHECK_JSON(value_datetime(INT64_C(1796112000) * SEC), "\"2026-12-01T08:00:00Z\"");
    CHECK_JSON(value_datetime(INT64_C(1796112000) * SEC + 500000000),
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
        double      f;
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
        char *got = json_take(value_float(cases[i].f));
        CHECK(strcmp(got, cases[i].want) == 0, "float %zu: got %s, want %s", i, got,
              cases[i].want);
        CHECK(strtod(got, NULL) == cases[i].f, "float %s reads back", got);
        free(got);
    }
    CHECK_JSON(value_float(NAN), "null");
    CHECK_JSON(value_float(INFINITY), "null");
    CHECK_JSON(value_float(-INFINITY), "null");
}

static void
test_json_strings(void)
{
    static const struct {
        const char *s;
        size_t      len;
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
        char *got = json_take(value_string(cases[i].s, cases[i].len));
        CHECK(strcmp(got, cases[i].want) == 0, "string %zu: got %s, want %s", i, got,
              cases[i].want);
        free(got);
    }
}

static void
test_json_containers(void)
{
    CHECK_JSON(value_array(), "[]");
    CHECK_JSON(value_object(), "{}");
    CHECK_JSON(arr(3, value_int(1), value_none(), value_cstring("x")), "[1,null,\"x\"]");
    CHECK_JSON(obj(3, "url", value_cstring("a"), "id", rec_int("jobs", 1), "attempts",
                   value_int(1)),
               "{\"attempts\":1,\"id\":\"jobs:1\",\"url\":\"a\"}");
    CHECK_JSON(obj(2, "a", arr(2, value_float(2.0), value_object()), "b\"", value_null()),
               "{\"a\":[2.0,{}],\"b\\\"\":null}");
    CHECK_JSON(obj(2, "gone", value_none(), "k", value_bool(true)), "{\"k\":true}");

    /* a NONE stored directly (bypassing value_object_set) is omitted */
    Value o = obj(1, "b", value_int(2));
    o.u.obj.vals[0].kind = VAL_NONE;
    CHECK_JSON(o, "{}");
}

/* ---- record ids ---- */

static void
test_record_id_format(void)
{
    static const struct {
        const char *key;
        const char *want;
    } cases[] = {
        {"abc", "jobs:abc"},
        {"_x9", "jobs:_x9"},
        {"A_b_C", "jobs:A_b_C"},
        {"123", "jobs:'123'"},
        {"9abc", "jobs:'9abc'"},
        {"", "jobs:''"},
        {"bucket/key", "jobs:'bucket/key'"},
        {"it's", "jobs:'it\\'s'"},
        {"a\\b", "jobs:'a\\\\b'"},
        {"has space", "jobs:'has space'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Value r = rec_str("jobs", cases[i].key);
        Buf b = {0};
        record_id_format(&r.u.rec, &b);
        CHECK_STR(b.data, cases[i].want);
        buf_free(&b);
        value_free(&r);
    }
    static const struct {
        int64_t     key;
        const char *want;
    } ints[] = {{1, "jobs:1"}, {0, "jobs:0"}, {-7, "jobs:-7"}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        Value r = rec_int("jobs", ints[i].key);
        Buf b = {0};
        record_id_format(&r.u.rec, &b);
        CHECK_STR(b.data, ints[i].want);
        buf_free(&b);
        value_free(&r);
    }
}

/* ---- objects ---- */

static void
test_objects(void)
{
    static const char *keys[] = {"m", "b", "z", "a", "mm", "", "B", "y", "c"};
    static const char *sorted[] = {"", "B", "a", "b", "c", "m", "mm", "y", "z"};
    size_t n = sizeof keys / sizeof keys[0];
    Value o = value_object();
    for (size_t i = 0; i < n; i++)
        value_object_set(&o, keys[i], value_int((int64_t)i));
    CHECK(o.u.obj.len == n, "len %zu", o.u.obj.len);
    for (size_t i = 0; i < n; i++)
        CHECK_STR(o.u.obj.keys[i], sorted[i]);
    for (size_t i = 0; i < n; i++) {
        const Value *v = value_object_get(&o, keys[i]);
        CHECK(v && v->kind == VAL_INT && v->u.i == (int64_t)i, "get %s", keys[i]);
    }
    CHECK(value_object_get(&o, "nope") == NULL, "absent key");

    /* replacing keeps one entry */
    value_object_set(&o, "m", value_cstring("new"));
    CHECK(o.u.obj.len == n, "replace keeps len");
    const Value *m = value_object_get(&o, "m");
    CHECK(m && m->kind == VAL_STRING && strcmp(m->u.str.s, "new") == 0, "replaced");

    /* NONE removes */
    value_object_set(&o, "m", value_none());
    CHECK(value_object_get(&o, "m") == NULL, "NONE removes");
    CHECK(o.u.obj.len == n - 1, "len after NONE");
    value_object_set(&o, "never", value_none());
    CHECK(o.u.obj.len == n - 1, "NONE on absent key adds nothing");

    CHECK(value_object_remove(&o, "a"), "remove present");
    CHECK(!value_object_remove(&o, "a"), "remove absent");
    CHECK(!value_object_remove(&o, "zz"), "remove never-present");
    CHECK(value_object_get(&o, "a") == NULL, "removed");
    char *j = json_take(o);
    CHECK_STR(j, "{\"\":5,\"B\":6,\"b\":1,\"c\":8,\"mm\":4,\"y\":7,\"z\":2}");
    free(j);

    /* remove everything, in an awkward order */
    o = obj(3, "a", value_int(1), "b", value_int(2), "c", value_int(3));
    CHECK(value_object_remove(&o, "b") && value_object_remove(&o, "c") &&
              value_object_remove(&o, "a"), "remove all");
    CHECK(o.u.obj.len == 0, "empty");
    value_object_set(&o, "again", value_null());
    CHECK(o.u.obj.len == 1, "reuse after emptying");
    value_free(&o);
    CHECK(o.kind == VAL_NONE, "free leaves NONE");
    value_free(&o);   /* safe on NONE */
    CHECK(o.kind == VAL_NONE, "free twice");
}

static void
test_clone(void)
{
    Value v = obj(3, "list", arr(2, value_int(1), value_cstring("two")),
                  "rec", rec_str("t", "k/1"), "s", value_string("a\0b", 3));
    Value c = value_clone(&v);
    CHECK(value_equal(&v, &c), "clone equal");
    value_object_set(&c, "s", value_cstring("changed"));
    value_array_push((Value *)value_object_get(&c, "list"), value_null());
    CHECK(!value_equal(&v, &c), "clone independent");
    const Value *s = value_object_get(&v, "s");
    CHECK(s && s->u.str.len == 3 && memcmp(s->u.str.s, "a\0b", 3) == 0, "original intact");
    value_free(&c);
    value_free(&v);
}

static void
test_truthy(void)
{
    static const struct {
        int  which;
        bool want;
    } cases[] = {
        {0, false}, {1, false}, {2, false}, {3, true}, {4, false}, {5, true},
        {6, false}, {7, false}, {8, true}, {9, false}, {10, true}, {11, false},
        {12, true}, {13, true}, {14, true}, {15, true}, {16, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Value v;
        switch (cases[i].which) {
        case 0:  v = value_none(); break;
        case 1:  v = value_null(); break;
        case 2:  v = value_bool(false); break;
        case 3:  v = value_bool(true); break;
        case 4:  v = value_int(0); break;
        case 5:  v = value_int(-1); break;
        case 6:  v = value_float(0.0); break;
        case 7:  v = value_string("", 0); break;
        case 8:  v = value_cstring("0"); break;
        case 9:  v = value_array(); break;
        case 10: v = arr(1, value_null()); break;
        case 11: v = value_object(); break;
        case 12: v = obj(1, "a", value_bool(false)); break;
        case 13: v = value_float(0.5); break;
        case 14: v = value_duration(1); break;
        case 15: v = rec_int("t", 0); break;
        default: v = value_float(-0.0); break;
        }
        CHECK(value_truthy(&v) == cases[i].want, "truthy case %zu (%s)", i,
              value_kind_name(v.kind));
        value_free(&v);
    }
}

/* ---- ordering: value_compare and value_key_encode ---- */

/* Values in ascending order; equal "rank" means value_compare says equal. */
typedef struct Ordered {
    int   rank;
    Value v;
} Ordered;

static size_t
ordered_values(Ordered *out)
{
    size_t n = 0;
    int r = 0;
#define ADD(val) (out[n].rank = r, out[n].v = (val), n++)
#define NEXT(val) (r++, ADD(val))
    ADD(value_none());
    NEXT(value_null());
    NEXT(value_bool(false));
    NEXT(value_bool(true));
    NEXT(value_float(NAN));
    NEXT(value_float(-INFINITY));
    NEXT(value_float(-1e300));
    NEXT(value_int(INT64_MIN));
    ADD(value_float(-0x1p63));
    NEXT(value_int(INT64_MIN + 1));
    NEXT(value_int(-5));
    NEXT(value_float(-4.5));
    NEXT(value_int(0));
    ADD(value_float(0.0));
    ADD(value_float(-0.0));
    NEXT(value_float(0.1));
    NEXT(value_int(3));
    ADD(value_float(3.0));
    NEXT(value_float(3.5));
    NEXT(value_int(INT64_C(9007199254740992)));
    ADD(value_float(0x1p53));
    NEXT(value_int(INT64_C(9007199254740993)));
    NEXT(value_float(0x1p53 + 2));
    NEXT(value_int(INT64_MAX - 1));
    NEXT(value_int(INT64_MAX));
    NEXT(value_float(0x1p63));
    NEXT(value_float(INFINITY));
    NEXT(value_string("", 0));
    NEXT(value_cstring("a"));
    NEXT(value_string("a\0", 2));
    NEXT(value_string("a\0\0", 3));
    NEXT(value_string("a\0b", 3));
    NEXT(value_string("a\x01", 2));
    NEXT(value_cstring("ab"));
    NEXT(value_cstring("b"));
    NEXT(value_cstring("\xff"));
    NEXT(value_duration(0));
    NEXT(value_duration(3600 * SEC));
    NEXT(value_datetime(INT64_MIN));
    NEXT(value_datetime(-1));
    NEXT(value_datetime(0));
    NEXT(rec_int("jobs", -1));
    NEXT(rec_int("jobs", 2));
    ADD(value_record("jobs", value_float(2.0)));
    NEXT(rec_str("jobs", ""));
    NEXT(rec_str("jobs", "a"));
    NEXT(rec_str("jobs", "b"));
    NEXT(rec_int("jobsx", 1));
    NEXT(value_array());
    NEXT(arr(1, value_none()));
    NEXT(arr(1, value_null()));
    NEXT(arr(2, value_null(), value_int(1)));
    NEXT(arr(1, value_int(1)));
    ADD(arr(1, value_float(1.0)));
    NEXT(arr(2, value_int(1), value_int(2)));
    NEXT(arr(1, value_cstring("a")));
    NEXT(arr(1, value_array()));
    NEXT(value_object());
    NEXT(obj(1, "", value_null()));
    NEXT(obj(1, "a", value_int(1)));
    NEXT(obj(2, "a", value_int(1), "b", value_int(1)));
    NEXT(obj(1, "a", value_int(2)));
    NEXT(obj(1, "a\x01", value_int(0)));
    NEXT(obj(1, "b", value_int(0)));
#undef ADD
#undef NEXT
    return n;
}

static int
key_cmp(const Buf *a, const Buf *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->data, b->data, n) : 0;
    if (c)
        return sign(c);
    return (a->len > b->len) - (a->len < b->len);
}

static void
test_ordering(void)
{
    Ordered vals[80];
    size_t n = ordered_values(vals);
    Buf asc[80], desc[80];
    for (size_t i = 0; i < n; i++) {
        asc[i] = (Buf){0};
        desc[i] = (Buf){0};
        value_key_encode(&vals[i].v, false, &asc[i]);
        value_key_encode(&vals[i].v, true, &desc[i]);
    }
    /* every pair, for each of the four properties: one check each, naming
     * the first pair that breaks it */
    size_t wrong[4] = {0};
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            int want = (vals[i].rank > vals[j].rank) - (vals[i].rank < vals[j].rank);
            int got[4] = {sign(value_compare(&vals[i].v, &vals[j].v)),
                          value_equal(&vals[i].v, &vals[j].v) ? 0 : want ? want : 2,
                          key_cmp(&asc[i], &asc[j]), -key_cmp(&desc[i], &desc[j])};
            for (int k = 0; k < 4; k++) {
                if (got[k] == want)
                    continue;
                if (!wrong[k]++) {
                    char *ji = json_take(value_clone(&vals[i].v));
                    char *jj = json_take(value_clone(&vals[j].v));
                    fprintf(stderr, "property %d: %s [%zu] vs %s [%zu] gave %d, want %d\n", k,
                            ji, i, jj, j, got[k], want);
                    free(ji);
                    free(jj);
                }
            }
        }
    }
    CHECK(wrong[0] == 0, "value_compare disagrees with the order on %zu pairs", wrong[0]);
    CHECK(wrong[1] == 0, "value_equal disagrees with the order on %zu pairs", wrong[1]);
    CHECK(wrong[2] == 0, "ascending keys disagree with the order on %zu pairs", wrong[2]);
    CHECK(wrong[3] == 0, "descending keys disagree with the order on %zu pairs", wrong[3]);

    /* prefix-free: composite keys (x, y) order as the pairs do */
    size_t bad = 0, total = 0;
    for (size_t a = 0; a < n; a += 3)
        for (size_t b = 0; b < n; b += 2)
            for (size_t c = 0; c < n; c += 3)
                for (size_t d = 0; d < n; d += 2) {
                    int want = sign(vals[a].rank - vals[c].rank);
                    if (!want)
                        want = sign(vals[b].rank - vals[d].rank);
                    Buf x = {0}, y = {0};
                    value_key_encode(&vals[a].v, false, &x);
                    value_key_encode(&vals[b].v, true, &x);
                    value_key_encode(&vals[c].v, false, &y);
                    value_key_encode(&vals[d].v, true, &y);
                    /* second component descending: reverse its part */
                    if (sign(vals[a].rank - vals[c].rank) == 0)
                        want = -want;
                    bad += key_cmp(&x, &y) != want;
                    total++;
                    buf_free(&x);
                    buf_free(&y);
                }
    CHECK(bad == 0, "%zu of %zu composite keys out of order", bad, total);

    for (size_t i = 0; i < n; i++) {
        buf_free(&asc[i]);
        buf_free(&desc[i]);
        value_free(&vals[i].v);
    }
}

/* ---- durations ---- */

static void
test_durations(void)
{
    static const struct {
        const char *text;
        int64_t     ns;
        const char *formatted;
    } cases[] = {
        {"1h30m", 90 * 60 * SEC, "1h30m"},
        {"500ms", 500000000, "500ms"},
        {"90s", 90 * SEC, "1m30s"},
        {"1d2h", 26 * 3600 * SEC, "1d2h"},
        {"8d", 8 * 86400 * SEC, "1w1d"},
        {"2w", 14 * 86400 * SEC, "2w"},
        {"1y", 365 * 86400 * SEC, "1y"},
        {"1us", 1000, "1us"},
        {"1\xc2\xb5s", 1000, "1us"},
        {"7ns", 7, "7ns"},
        {"0s", 0, "0ns"},
        {"0ns", 0, "0ns"},
        {"1m1ms", 60 * SEC + 1000000, "1m1ms"},
        {"1500ms", 1500000000, "1s500ms"},
        {"30m1h", 90 * 60 * SEC, "1h30m"},
        {"1h1m1s1ms1us1ns", 3661 * SEC + 1001001, "1h1m1s1ms1us1ns"},
        {"9223372036854775807ns", INT64_MAX, "292y24w3d23h47m16s854ms775us807ns"},
        {"292y24w3d23h47m16s854ms775us807ns", INT64_MAX, "292y24w3d23h47m16s854ms775us807ns"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = -1;
        int rc = duration_parse(cases[i].text, strlen(cases[i].text), &ns);
        CHECK(rc == 0 && ns == cases[i].ns, "parse %s: rc %d ns %" PRId64, cases[i].text,
              rc, ns);
        Buf b = {0};
        duration_format(cases[i].ns, &b);
        CHECK_STR(b.data, cases[i].formatted);
        rc = duration_parse(b.data, b.len, &ns);
        CHECK(rc == 0 && ns == cases[i].ns, "round trip %s", b.data);
        buf_free(&b);
    }
    static const char *rejects[] = {
        "", "5", "1x", "99999999999999999999s", "1h30", "h", "-1s", "+1s", " 1s",
        "1s ", "1.5h", "1 s", "300y", "9223372036854775807ns1ns", "1M", "1mss", "1\xc2s",
        "1u", "1n",
    };
    for (size_t i = 0; i < sizeof rejects / sizeof rejects[0]; i++) {
        int64_t ns = 12345;
        int rc = duration_parse(rejects[i], strlen(rejects[i]), &ns);
        CHECK(rc == -1, "duration \"%s\" should be rejected", rejects[i]);
    }
    /* length is honoured: "1h30m" cut to "1h3" is a bad duration */
    int64_t ns;
    CHECK(duration_parse("1h30m", 3, &ns) == -1, "length honoured");
    CHECK(duration_parse("1h30m", 2, &ns) == 0 && ns == 3600 * SEC, "prefix parse");

    Buf b = {0};
    duration_format(-90 * SEC, &b);
    CHECK_STR(b.data, "-1m30s");
    buf_reset(&b);
    duration_format(INT64_MIN, &b);
    CHECK_STR(b.data, "-292y24w3d23h47m16s854ms775us808ns");
    buf_free(&b);
}

/* ---- datetimes ---- */

static void
test_datetimes(void)
{
    static const struct {
        const char *text;
        int64_t     ns;
        const char *formatted;
    } cases[] = {
        {"2026-12-01T08:00:00Z", INT64_C(1796112000) * SEC, "2026-12-01T08:00:00Z"},
        {"2026-12-01t08:00:00z", INT64_C(1796112000) * SEC, "2026-12-01T08:00:00Z"},
        {"2026-12-01 08:00:00Z", INT64_C(1796112000) * SEC, "2026-12-01T08:00:00Z"},
        {"2026-12-01T08:00:00+00:00", INT64_C(1796112000) * SEC, "2026-12-01T08:00:00Z"},
        {"2026-12-01T08:00:00.5+02:00", INT64_C(1796104800) * SEC + 500000000,
         "2026-12-01T06:00:00.5Z"},
        {"2026-01-01T00:30:00-00:30", INT64_C(1767229200) * SEC, "2026-01-01T01:00:00Z"},
        {"1970-01-01T00:00:00Z", 0, "1970-01-01T00:00:00Z"},
        {"1970-01-01", 0, "1970-01-01T00:00:00Z"},
        {"2026-12-01", INT64_C(1796083200) * SEC, "2026-12-01T00:00:00Z"},
        {"1969-12-31T23:59:59.999999999Z", -1, "1969-12-31T23:59:59.999999999Z"},
        {"1969-12-31T23:59:59.5Z", -500000000, "1969-12-31T23:59:59.5Z"},
        {"2000-02-29T12:00:00Z", INT64_C(951825600) * SEC, "2000-02-29T12:00:00Z"},
        {"2026-01-01T00:00:00.120Z", INT64_C(1767225600) * SEC + 120000000,
         "2026-01-01T00:00:00.12Z"},
        {"2026-01-01T00:00:00.123456789Z", INT64_C(1767225600) * SEC + 123456789,
         "2026-01-01T00:00:00.123456789Z"},
        {"2026-01-01T00:00:00.000001Z", INT64_C(1767225600) * SEC + 1000,
         "2026-01-01T00:00:00.000001Z"},
        {"2026-01-01T09:05:03.000000001Z", INT64_C(1767258303) * SEC + 1,
         "2026-01-01T09:05:03.000000001Z"},
        {"2262-04-11T23:47:16.854775807Z", INT64_MAX, "2262-04-11T23:47:16.854775807Z"},
        {"1677-09-21T00:12:43.145224192Z", INT64_MIN, "1677-09-21T00:12:43.145224192Z"},
        {"2262-04-12T01:47:16.854775807+02:00", INT64_MAX, "2262-04-11T23:47:16.854775807Z"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = 12345;
        int rc = datetime_parse(cases[i].text, strlen(cases[i].text), &ns);
        CHECK(rc == 0 && ns == cases[i].ns, "parse %s: rc %d ns %" PRId64 " want %" PRId64,
              cases[i].text, rc, ns, cases[i].ns);
        Buf b = {0};
        datetime_format(cases[i].ns, &b);
        CHECK_STR(b.data, cases[i].formatted);
        rc = datetime_parse(b.data, b.len, &ns);
        CHECK(rc == 0 && ns == cases[i].ns, "round trip %s", b.data);
        buf_free(&b);
    }
    static const char *rejects[] = {
        "", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z", "1900-02-29", "2026-04-31", "2026-01-00",
        "2300-01-01T00:00:00Z", "1600-01-01T00:00:00Z", "0000-01-01", "9999-12-31",
        "2262-04-11T23:47:16.854775808Z", "1677-09-21T00:12:43.145224191Z",
        "2262-04-11T23:47:16.854775807-00:01",
        "2026-12-01T24:00:00Z", "2026-12-01T23:60:00Z", "2026-12-01T23:59:60Z",
        "2026-12-01T08:00:00", "2026-12-01T08:00:00+25:00", "2026-12-01T08:00:00+02:60",
        "2026-12-01T08:00:00+0200", "2026-12-01T08:00:00+02", "2026-12-01T08:00:00.Z",
        "2026-12-01T08:00:00.1234567890Z", "2026-12-01T08:00Z", "26-12-01", "2026-12-01T",
        "2026-12-01X08:00:00Z", "2026-12-01T08:00:00Zjunk", "2026-12-01T08:00:00ZZ",
        "+2026-12-01", "2026-1-01", "2026-12-01T8:00:00Z", " 2026-12-01",
        "2026-12-01 ", "2026/12/01", "abcd-ef-gh",
    };
    for (size_t i = 0; i < sizeof rejects / sizeof rejects[0]; i++) {
        int64_t ns = 12345;
        int rc = datetime_parse(rejects[i], strlen(rejects[i]), &ns);
        CHECK(rc == -1, "datetime \"%s\" should be rejected", rejects[i]);
    }
    int64_t ns;
    CHECK(datetime_parse("2026-12-01T08:00:00Z", 10, &ns) == 0 &&
              ns == INT64_C(1796083200) * SEC, "length honoured");
}

/* ---- binary encoding ---- */

static Value
nested_sample(void)
{
    return obj(8, "arr", arr(4, value_int(-1), value_float(2.5), value_null(),
                             arr(1, value_object())),
               "b", value_bool(true), "dt", value_datetime(INT64_MIN), "dur",
               value_duration(5 * SEC), "f", value_bool(false), "rec",
               rec_str("reclaim", "bucket/key"), "rid", rec_int("jobs", INT64_MAX),
               "s", value_string("x\0y\xff", 4));
}

static void
test_encode_decode(void)
{
    Value v = nested_sample();
    value_object_set(&v, "big", value_int(INT64_MIN));
    value_object_set(&v, "nan", value_float(NAN));
    value_object_set(&v, "neg0", value_float(-0.0));
    Buf b = {0};
    value_encode(&v, &b);

    Value back;
    CHECK(value_decode(b.data, b.len, &back) == 0, "decode round trip");
    CHECK(value_equal(&v, &back), "round trip equal");
    const Value *neg0 = value_object_get(&back, "neg0");
    CHECK(neg0 && neg0->kind == VAL_FLOAT && signbit(neg0->u.f), "-0.0 kept");
    const Value *nan = value_object_get(&back, "nan");
    CHECK(nan && nan->kind == VAL_FLOAT && isnan(nan->u.f), "NaN kept");
    value_free(&back);

    /* every strict prefix is incomplete */
    size_t bad = 0;
    for (size_t len = 0; len < b.len; len++) {
        Value part;
        int rc = value_decode(b.data, len, &part);
        if (rc != -1 || part.kind != VAL_NONE)
            bad++;
        value_free(&part);
    }
    CHECK(bad == 0, "%zu of %zu truncated prefixes decoded", bad, b.len);

    /* a trailing byte is also refused */
    buf_putc(&b, 0);
    CHECK(value_decode(b.data, b.len, &back) == -1 && back.kind == VAL_NONE,
          "trailing byte refused");

    /* each scalar kind on its own */
    Value scalars[] = {
        value_none(), value_null(), value_bool(false), value_int(0), value_int(1),
        value_int(-64), value_int(INT64_MAX), value_float(1e-300), value_string("", 0),
        value_duration(INT64_MAX), value_datetime(-1), rec_int("t", 0), value_array(),
        value_object(),
    };
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        buf_reset(&b);
        value_encode(&scalars[i], &b);
        int rc = value_decode(b.data, b.len, &back);
        CHECK(rc == 0 && back.kind == scalars[i].kind && value_equal(&back, &scalars[i]),
              "scalar %zu (%s) round trip", i, value_kind_name(scalars[i].kind));
        value_free(&back);
        value_free(&scalars[i]);
    }
    buf_free(&b);
    value_free(&v);
}

static void
test_decode_garbage(void)
{
    /* hand-made bad inputs */
    static const struct {
        const char *bytes;
        size_t      len;
    } bad[] = {
        {"", 0},
        {"\x0c", 1},                                  /* unknown tag */
        {"\xff", 1},
        {"\x04\x80", 2},                              /* unterminated varint */
        {"\x04\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11},   /* varint > 64 bits */
        {"\x06\x05" "abc", 5},                        /* string too short */
        {"\x06\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11},   /* huge length */
        {"\x0a\xff\xff\xff\xff\x0f", 6},              /* huge array count */
        {"\x0b\x02\x01" "b" "\x01\x01" "a" "\x01", 8}, /* keys out of order */
        {"\x0b\x02\x01" "a" "\x01\x01" "a" "\x01", 8}, /* duplicate keys */
        {"\x0b\x01\x01" "a" "\x00", 5},               /* NONE value in object */
        {"\x0b\x01\x02" "a\0" "\x01", 5},             /* NUL in key */
        {"\x09\x01" "t" "\x01", 4},                   /* record key of kind null */
        {"\x09\x02" "t\0" "\x04\x00", 6},             /* NUL in table name */
        {"\x05\x00\x00\x00", 4},                      /* short float */
        {"\x01\x01", 2},                              /* two values */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Value v;
        int rc = value_decode(bad[i].bytes, bad[i].len, &v);
        CHECK(rc == -1 && v.kind == VAL_NONE, "bad input %zu refused", i);
        value_free(&v);
    }

    /* nesting: 1000 levels below the top decode, deeper is refused */
    static const int depths[] = {1, 100, 1000, 1001, 5000};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        Buf b = {0};
        for (int k = 0; k < depths[i]; k++)
            buf_append(&b, "\x0a\x01", 2);
        buf_putc(&b, 0x01);
        Value v;
        int rc = value_decode(b.data, b.len, &v);
        int want = depths[i] <= 1000 ? 0 : -1;
        CHECK(rc == want, "depth %d: rc %d", depths[i], rc);
        value_free(&v);
        buf_free(&b);
    }

    /* random mutations of a valid encoding never crash or leak */
    Value sample = nested_sample();
    Buf enc = {0};
    value_encode(&sample, &enc);
    unsigned seed = 12345;
    size_t decoded = 0;
    for (int round = 0; round < 20000; round++) {
        Buf m = {0};
        buf_append(&m, enc.data, enc.len);
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
        if (value_decode(m.data, len, &v) == 0) {
            decoded++;
            Buf again = {0};
            value_encode(&v, &again);
            Value w;
            if (value_decode(again.data, again.len, &w) == 0 && value_equal(&v, &w))
                decoded--;   /* a decoded value must re-encode and round trip */
            value_free(&w);
            buf_free(&again);
        } else if (v.kind != VAL_NONE) {
            decoded += 1000000;
        }
        value_free(&v);
        buf_free(&m);
    }
    CHECK(decoded == 0, "mutated inputs misbehaved (%zu)", decoded);
    buf_free(&enc);
    value_free(&sample);
}

/* ---- UTF-8 ---- */

static void
test_utf8(void)
{
    static const struct {
        const char *s;
        size_t      len;
        bool        want;
    } cases[] = {
        {"", 0, true},
        {"ascii", 5, true},
        {"a\0b", 3, true},
        {"\xc3\xa9", 2, true},
        {"\xe2\x82\xac", 3, true},
        {"\xf0\x9f\x98\x80", 4, true},
        {"\xf4\x8f\xbf\xbf", 4, true},          /* U+10FFFF */
        {"\xed\x9f\xbf", 3, true},              /* U+D7FF */
        {"\xee\x80\x80", 3, true},              /* U+E000 */
        {"\xc0\x80", 2, false},                 /* overlong NUL */
        {"\xc1\xbf", 2, false},
        {"\xe0\x9f\xbf", 3, false},             /* overlong */
        {"\xf0\x8f\xbf\xbf", 4, false},         /* overlong */
        {"\xed\xa0\x80", 3, false},             /* surrogate */
        {"\xed\xbf\xbf", 3, false},
        {"\xf4\x90\x80\x80", 4, false},         /* > U+10FFFF */
        {"\xf5\x80\x80\x80", 4, false},
        {"\xff", 1, false},
        {"\x80", 1, false},
        {"\xc3", 1, false},                     /* truncated */
        {"\xe2\x82", 2, false},
        {"\xf0\x9f\x98", 3, false},
        {"\xc3\x28", 2, false},                 /* bad continuation */
        {"\xe2\x28\xac", 3, false},
        {"\xf0\x9f\x28\x80", 4, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(utf8_valid(cases[i].s, cases[i].len) == cases[i].want, "utf8 case %zu", i);
}

static void
test_kind_names(void)
{
    CHECK_STR(value_kind_name(VAL_NONE), "none");
    CHECK_STR(value_kind_name(VAL_STRING), "string");
    CHECK_STR(value_kind_name(VAL_DATETIME), "datetime");
    CHECK_STR(value_kind_name(VAL_OBJECT), "object");
}

int
main(void)
{
    test_json_scalars();
    test_json_floats();
    test_json_strings();
    test_json_containers();
    test_record_id_format();
    test_objects();
    test_clone();
    test_truthy();
    test_ordering();
    test_durations();
    test_datetimes();
    test_encode_decode();
    test_decode_garbage();
    test_utf8();
    test_kind_names();
    return unit_test_summary();
}
