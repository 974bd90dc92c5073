/* order_test.c — unit tests for order.c and lang_value_compare: one list of
 * values in order, which lang_value_compare, lang_value_equal and both directions of
 * lang_value_key_encode must all agree with. */
#include <math.h>

#include "value_test.h"

static int
sign(int x)
{
    return (x > 0) - (x < 0);
}

/* ---- ordering: lang_value_compare and lang_value_key_encode ---- */

/* Values in ascending order; equal "rank" means lang_value_compare says equal. */
typedef struct Ordered {
    int rank;
    Value v;
} Ordered;

static size_t
ordered_values(Ordered *out)
{
    size_t n = 0;
    int r = 0;
#define ADD(val) (out[n].rank = r, out[n].v = (val), n++)
#define NEXT(val) (r++, ADD(val))
    ADD(lang_value_none());
    NEXT(lang_value_null());
    NEXT(lang_value_bool(false));
    NEXT(lang_value_bool(true));
    NEXT(lang_value_float(NAN));
    NEXT(lang_value_float(-INFINITY));
    NEXT(lang_value_float(-1e300));
    NEXT(lang_value_int(INT64_MIN));
    ADD(lang_value_float(-0x1p63));
    NEXT(lang_value_int(INT64_MIN + 1));
    NEXT(lang_value_int(-5));
    NEXT(lang_value_float(-4.5));
    NEXT(lang_value_int(0));
    ADD(lang_value_float(0.0));
    ADD(lang_value_float(-0.0));
    NEXT(lang_value_float(0.1));
    NEXT(lang_value_int(3));
    ADD(lang_value_float(3.0));
    NEXT(lang_value_float(3.5));
    NEXT(lang_value_int(INT64_C(9007199254740992)));
    ADD(lang_value_float(0x1p53));
    NEXT(lang_value_int(INT64_C(9007199254740993)));
    NEXT(lang_value_float(0x1p53 + 2));
    NEXT(lang_value_int(INT64_MAX - 1));
    NEXT(lang_value_int(INT64_MAX));
    NEXT(lang_value_float(0x1p63));
    NEXT(lang_value_float(INFINITY));
    NEXT(lang_value_string("", 0));
    NEXT(lang_value_cstring("a"));
    NEXT(lang_value_string("a\0", 2));
    NEXT(lang_value_string("a\0\0", 3));
    NEXT(lang_value_string("a\0b", 3));
    NEXT(lang_value_string("a\x01", 2));
    NEXT(lang_value_cstring("ab"));
    NEXT(lang_value_cstring("b"));
    NEXT(lang_value_cstring("\xff"));
    NEXT(lang_value_duration(0));
    NEXT(lang_value_duration(3600 * SEC));
    NEXT(lang_value_datetime(INT64_MIN));
    NEXT(lang_value_datetime(-1));
    NEXT(lang_value_datetime(0));
    NEXT(rec_int("jobs", -1));
    NEXT(rec_int("jobs", 2));
    ADD(lang_value_record("jobs", lang_value_float(2.0)));
    NEXT(rec_str("jobs", ""));
    NEXT(rec_str("jobs", "a"));
    NEXT(rec_str("jobs", "b"));
    NEXT(rec_int("jobsx", 1));
    NEXT(lang_value_array());
    NEXT(arr(1, lang_value_none()));
    NEXT(arr(1, lang_value_null()));
    NEXT(arr(2, lang_value_null(), lang_value_int(1)));
    NEXT(arr(1, lang_value_int(1)));
    ADD(arr(1, lang_value_float(1.0)));
    NEXT(arr(2, lang_value_int(1), lang_value_int(2)));
    NEXT(arr(1, lang_value_cstring("a")));
    NEXT(arr(1, lang_value_array()));
    NEXT(lang_value_object());
    NEXT(obj(1, "", lang_value_null()));
    NEXT(obj(1, "a", lang_value_int(1)));
    NEXT(obj(2, "a", lang_value_int(1), "b", lang_value_int(1)));
    NEXT(obj(1, "a", lang_value_int(2)));
    NEXT(obj(1, "a\x01", lang_value_int(0)));
    NEXT(obj(1, "b", lang_value_int(0)));
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
        lang_value_key_encode(&vals[i].v, false, &asc[i]);
        lang_value_key_encode(&vals[i].v, true, &desc[i]);
    }
    /* every pair, for each of the four properties: one check each, naming
     * the first pair that breaks it */
    size_t wrong[4] = {0};
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            int want = (vals[i].rank > vals[j].rank) - (vals[i].rank < vals[j].rank);
            int got[4] = {sign(lang_value_compare(&vals[i].v, &vals[j].v)),
                          lang_value_equal(&vals[i].v, &vals[j].v) ? 0
                          : want                                   ? want
                                                                   : 2,
                          key_cmp(&asc[i], &asc[j]), -key_cmp(&desc[i], &desc[j])};
            for (int k = 0; k < 4; k++) {
                if (got[k] == want)
                    continue;
                if (!wrong[k]++) {
                    char *ji = json_take(lang_value_clone(&vals[i].v));
                    char *jj = json_take(lang_value_clone(&vals[j].v));
                    fprintf(stderr, "property %d: %s [%zu] vs %s [%zu] gave %d, want %d\n", k, ji,
                            i, jj, j, got[k], want);
                    free(ji);
                    free(jj);
                }
            }
        }
    }
    CHECK(wrong[0] == 0, "lang_value_compare disagrees with the order on %zu pairs", wrong[0]);
    CHECK(wrong[1] == 0, "lang_value_equal disagrees with the order on %zu pairs", wrong[1]);
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
                    lang_value_key_encode(&vals[a].v, false, &x);
                    lang_value_key_encode(&vals[b].v, true, &x);
                    lang_value_key_encode(&vals[c].v, false, &y);
                    lang_value_key_encode(&vals[d].v, true, &y);
                    /* second component descending: reverse its part */
                    if (sign(vals[a].rank - vals[c].rank) == 0)
                        want = -want;
                    bad += key_cmp(&x, &y) != want;
                    total++;
                    lang_buf_free(&x);
                    lang_buf_free(&y);
                }
    CHECK(bad == 0, "%zu of %zu composite keys out of order", bad, total);

    for (size_t i = 0; i < n; i++) {
        lang_buf_free(&asc[i]);
        lang_buf_free(&desc[i]);
        lang_value_free(&vals[i].v);
    }
}

int
main(void)
{
    test_ordering();
    return unit_test_summary();
}
