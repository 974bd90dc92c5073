/* time_test.c — unit tests for time.c: durations and datetimes, parsed,
 * formatted and read back. */
#include <inttypes.h>

#include "value_test.h"

/* A text form of time (durations, datetimes): its name for messages, and
 * how it is read and written. */
typedef struct TimeForm {
    const char *name;
    int (*parse)(const char *s, size_t len, int64_t *ns_out);
    void (*format)(int64_t ns, Buf *out);
} TimeForm;

/* A text of a time form, the nanoseconds it reads as, and how they are
 * written back. */
typedef struct TimeCase {
    const char *text;
    int64_t ns;
    const char *formatted;
} TimeCase;

/* Checks that each of the "n" cases reads as its nanoseconds, that these
 * are written as its formatted text, and that this reads back the same. */
static void
check_time_cases(const TimeForm *form, const TimeCase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t ns = 12345;
        int rc = form->parse(cases[i].text, strlen(cases[i].text), &ns);
        CHECK(rc == 0 && ns == cases[i].ns, "%s %s: rc %d ns %" PRId64 " want %" PRId64, form->name,
              cases[i].text, rc, ns, cases[i].ns);
        Buf b = {0};
        form->format(cases[i].ns, &b);
        CHECK_STR(b.data, cases[i].formatted);
        rc = form->parse(b.data, b.len, &ns);
        CHECK(rc == 0 && ns == cases[i].ns, "round trip %s", b.data);
        lang_buf_free(&b);
    }
}

/* Checks that each of the "n" texts is refused. */
static void
check_time_rejects(const TimeForm *form, const char *const *rejects, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int64_t ns = 12345;
        int rc = form->parse(rejects[i], strlen(rejects[i]), &ns);
        CHECK(rc == -1, "%s \"%s\" should be rejected", form->name, rejects[i]);
    }
}

/* ---- durations ---- */

static const TimeForm duration = {"duration", lang_duration_parse, lang_duration_format};

static void
test_durations(void)
{
    static const TimeCase cases[] = {
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
    check_time_cases(&duration, cases, sizeof cases / sizeof cases[0]);
    static const char *const rejects[] = {
        "",       "5",
        "1x",     "99999999999999999999s",
        "1h30",   "h",
        "-1s",    "+1s",
        " 1s",    "1s ",
        "1.5h",   "1 s",
        "300y",   "9223372036854775807ns1ns",
        "1M",     "1mss",
        "1\xc2s", "1u",
        "1n",
    };
    check_time_rejects(&duration, rejects, sizeof rejects / sizeof rejects[0]);
    /* length is honoured: "1h30m" cut to "1h3" is a bad duration */
    int64_t ns;
    CHECK(lang_duration_parse("1h30m", 3, &ns) == -1, "length honoured");
    CHECK(lang_duration_parse("1h30m", 2, &ns) == 0 && ns == 3600 * SEC, "prefix parse");

    Buf b = {0};
    lang_duration_format(-90 * SEC, &b);
    CHECK_STR(b.data, "-1m30s");
    lang_buf_reset(&b);
    lang_duration_format(INT64_MIN, &b);
    CHECK_STR(b.data, "-292y24w3d23h47m16s854ms775us808ns");
    lang_buf_free(&b);
}

/* ---- datetimes ---- */

static const TimeForm datetime = {"datetime", lang_datetime_parse, lang_datetime_format};

static void
test_datetimes(void)
{
    static const TimeCase cases[] = {
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
    check_time_cases(&datetime, cases, sizeof cases / sizeof cases[0]);
    static const char *const rejects[] = {
        "",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "1900-02-29",
        "2026-04-31",
        "2026-01-00",
        "2300-01-01T00:00:00Z",
        "1600-01-01T00:00:00Z",
        "0000-01-01",
        "9999-12-31",
        "2262-04-11T23:47:16.854775808Z",
        "1677-09-21T00:12:43.145224191Z",
        "2262-04-11T23:47:16.854775807-00:01",
        "2026-12-01T24:00:00Z",
        "2026-12-01T23:60:00Z",
        "2026-12-01T23:59:60Z",
        "2026-12-01T08:00:00",
        "2026-12-01T08:00:00+25:00",
        "2026-12-01T08:00:00+02:60",
        "2026-12-01T08:00:00+0200",
        "2026-12-01T08:00:00+02",
        "2026-12-01T08:00:00.Z",
        "2026-12-01T08:00:00.1234567890Z",
        "2026-12-01T08:00Z",
        "26-12-01",
        "2026-12-01T",
        "2026-12-01X08:00:00Z",
        "2026-12-01T08:00:00Zjunk",
        "2026-12-01T08:00:00ZZ",
        "+2026-12-01",
        "2026-1-01",
        "2026-12-01T8:00:00Z",
        " 2026-12-01",
        "2026-12-01 ",
        "2026/12/01",
        "abcd-ef-gh",
    };
    check_time_rejects(&datetime, rejects, sizeof rejects / sizeof rejects[0]);
    int64_t ns;
    CHECK(lang_datetime_parse("2026-12-01T08:00:00Z", 10, &ns) == 0 &&
              ns == INT64_C(1796083200) * SEC,
          "length honoured");
}

int
main(void)
{
    test_durations();
    test_datetimes();
    return unit_test_summary();
}
