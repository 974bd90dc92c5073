/* cron_test.c — unit tests for cron.c and zone.c: the next instant of an
 * expression, in UTC and in zones of the system's tz database across
 * their changes of the clock, and the expressions and zones refused. */
#include <inttypes.h>

#include "../tests/unit_test.h"
#include "buf.h"
#include "cron.h"
#include "value.h"

/* An expression, its zone (NULL: UTC), the instant after which to look
 * and the next instant it names (UTC, ISO 8601); or, when "next" is NULL,
 * a part of the message that refuses it. */
typedef struct NextCase {
    const char *expr, *zone, *after, *next, *error;
} NextCase;

static const NextCase cases[] = {
    /* UTC: the fields, lists, ranges, steps, names */
    {"0 3 * * *", NULL, "2026-12-06T02:56:00Z", "2026-12-06T03:00:00Z", NULL},
    {"0 3 * * *", NULL, "2026-12-06T03:00:00Z", "2026-12-07T03:00:00Z", NULL}, /* strictly after */
    {"0 3 * * *", NULL, "2026-12-06T02:59:59.999Z", "2026-12-06T03:00:00Z", NULL},
    {"* * * * *", NULL, "2026-12-06T02:56:30Z", "2026-12-06T02:57:00Z", NULL},
    {"* * * * *", NULL, "2026-12-31T23:59:00Z", "2027-01-01T00:00:00Z", NULL},
    {"*/15 * * * *", NULL, "2026-12-06T10:07:00Z", "2026-12-06T10:15:00Z", NULL},
    {"1-30/5 * * * *", NULL, "2026-12-06T10:07:00Z", "2026-12-06T10:11:00Z", NULL},
    {"1-30/5 * * * *", NULL, "2026-12-06T10:26:00Z", "2026-12-06T11:01:00Z", NULL},
    {"0,15,30,45 * * * *", NULL, "2026-12-06T10:45:00Z", "2026-12-06T11:00:00Z", NULL},
    {"5,10-12,50 */6 * * *", NULL, "2026-12-06T06:12:00Z", "2026-12-06T06:50:00Z", NULL},
    {"5,10-12,50 */6 * * *", NULL, "2026-12-06T06:50:00Z", "2026-12-06T12:05:00Z", NULL},
    {"0 0 1 jan *", NULL, "2026-12-06T00:00:00Z", "2027-01-01T00:00:00Z", NULL},
    {"0 0 1 JAN-mar/2 *", NULL, "2027-01-01T00:00:00Z", "2027-03-01T00:00:00Z", NULL},
    {"0 0 * * sun", NULL, "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z", NULL},
    {"0 0 * * 0", NULL, "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z", NULL},
    {"0 0 * * 7", NULL, "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z", NULL},
    {"0 0 * * 5-7", NULL, "2026-12-06T00:00:00Z", "2026-12-11T00:00:00Z", NULL},
    {"0 12 * * MON-Fri", NULL, "2026-12-05T13:00:00Z", "2026-12-07T12:00:00Z", NULL},
    {"30 9 * * mon", NULL, "2026-12-07T09:30:00Z", "2026-12-14T09:30:00Z", NULL},
    /* the day fields: both restricted, either matches; else both */
    {"0 0 13 * fri", NULL, "2026-12-06T00:00:00Z", "2026-12-11T00:00:00Z", NULL},
    {"0 0 13 * fri", NULL, "2026-12-11T00:00:00Z", "2026-12-13T00:00:00Z", NULL},
    {"0 0 */10 * fri", NULL, "2026-12-06T00:00:00Z", "2026-12-11T00:00:00Z", NULL},
    {"0 0 13 * *", NULL, "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z", NULL},
    {"0 0 * 12 */7", NULL, "2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z", NULL},
    {"0 0 1 * */2", NULL, "2026-12-06T00:00:00Z", "2027-04-01T00:00:00Z", NULL},
    /* month ends, February 29, years */
    {"0 0 31 * *", NULL, "2026-04-01T00:00:00Z", "2026-05-31T00:00:00Z", NULL},
    {"0 0 30,31 * *", NULL, "2026-02-01T00:00:00Z", "2026-03-30T00:00:00Z", NULL},
    {"0 0 29 2 *", NULL, "2026-12-06T00:00:00Z", "2028-02-29T00:00:00Z", NULL},
    {"0 0 29 2 *", NULL, "2097-01-01T00:00:00Z", "2104-02-29T00:00:00Z", NULL},
    {"0 0 29 feb mon", NULL, "2026-12-06T00:00:00Z", "2027-02-01T00:00:00Z", NULL},
    {"59 23 31 12 *", NULL, "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z", NULL},
    /* UTC named as a zone, and a zone without DST */
    {"0 3 * * *", "UTC", "2026-12-06T02:56:00Z", "2026-12-06T03:00:00Z", NULL},
    {"30 9 * * mon", "Asia/Tokyo", "2026-12-06T02:56:00Z", "2026-12-07T00:30:00Z", NULL},
    {"0 0 * * *", "Asia/Kolkata", "2026-12-06T02:56:00Z", "2026-12-06T18:30:00Z", NULL},
    /* Europe/Berlin, spring: 02:00 CET is 03:00 CEST at 2026-03-29T01:00Z */
    {"30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z", NULL},
    {"15 2 * * *", "Europe/Berlin", "2026-03-29T00:50:00Z", "2026-03-29T01:00:00Z", NULL},
    {"30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", NULL},
    {"15,45 * * * *", "Europe/Berlin", "2026-03-29T00:50:00Z", "2026-03-29T01:15:00Z", NULL},
    {"*/20 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-30T00:00:00Z", NULL},
    {"0 3 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z", NULL},
    /* … autumn: 03:00 CEST is 02:00 CET at 2026-10-25T01:00Z */
    {"30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z", NULL},
    {"30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z", NULL},
    {"30 * * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", NULL},
    {"*/20 2 * * *", "Europe/Berlin", "2026-10-25T00:45:00Z", "2026-10-25T01:00:00Z", NULL},
    {"0 12 * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", "2026-10-25T11:00:00Z", NULL},
    /* … after the file's transitions, by its footer's rule */
    {"0 3 * * *", "Europe/Berlin", "2040-07-01T00:00:00Z", "2040-07-01T01:00:00Z", NULL},
    {"30 2 * * *", "Europe/Berlin", "2040-03-24T12:00:00Z", "2040-03-25T01:00:00Z", NULL},
    {"30 2 * * *", "Europe/Berlin", "2040-10-28T00:30:00Z", "2040-10-29T01:30:00Z", NULL},
    /* America/New_York: 2026-03-08T07:00Z skips 02:00-03:00, 2026-11-01T06:00Z repeats 01:00-02:00 */
    {"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z", NULL},
    {"30 2 * * *", "America/New_York", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", NULL},
    {"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z", NULL},
    {"30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", NULL},
    {"30 * * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", NULL},
    {"0 9 * * mon-fri", "America/New_York", "2026-12-06T02:56:00Z", "2026-12-07T14:00:00Z", NULL},
    /* the southern hemisphere: Sydney's 03:00 AEDT is 02:00 AEST at 2026-04-04T16:00Z */
    {"30 2 * * *", "Australia/Sydney", "2026-04-04T12:00:00Z", "2026-04-04T15:30:00Z", NULL},
    {"30 2 * * *", "Australia/Sydney", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z", NULL},
    /* refused */
    {"0 0 30 2 *", NULL, "2026-12-06T00:00:00Z", NULL, "it never matches"},
    {"0 0 31 4,6,9,11 *", NULL, "2026-12-06T00:00:00Z", NULL, "it never matches"},
    {"0 0 30 2 */2", NULL, "2026-12-06T00:00:00Z", NULL, "it never matches"},
    {"60 * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "minute field: 60 is out of range 0-59"},
    {"* 24 * * *", NULL, "2026-12-06T00:00:00Z", NULL, "hour field: 24 is out of range 0-23"},
    {"0 0 0 * *", NULL, "2026-12-06T00:00:00Z", NULL, "day-of-month field: 0 is out of range"},
    {"0 0 * 13 *", NULL, "2026-12-06T00:00:00Z", NULL, "month field: 13 is out of range"},
    {"* * * * 8", NULL, "2026-12-06T00:00:00Z", NULL, "day-of-week field: 8 is out of range"},
    {"* * * *", NULL, "2026-12-06T00:00:00Z", NULL, "five fields"},
    {"* * * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "found more"},
    {"", NULL, "2026-12-06T00:00:00Z", NULL, "found 0"},
    {"@daily", NULL, "2026-12-06T00:00:00Z", NULL, "'@daily' is not a value"},
    {"5/15 * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "write 5-59/…"},
    {"*/0 * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "a step is a number from 1 to 59"},
    {"*/60 * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "a step is a number from 1 to 59"},
    {"*/ * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "a step is a number"},
    {"30-10 * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "the range 30-10 runs backwards"},
    {"* * * foo *", NULL, "2026-12-06T00:00:00Z", NULL,
     "month field: 'foo' is not a value or a name"},
    {"* * * * monday", NULL, "2026-12-06T00:00:00Z", NULL, "'monday' is not a value"},
    {"mon * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "minute field: 'mon' is not a value"},
    {"* * * jan mon-", NULL, "2026-12-06T00:00:00Z", NULL, "is not a value to end a range"},
    {"1,,2 * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "minute field: ',' is not a value"},
    {"1, * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "minute field"},
    {"0x * * * *", NULL, "2026-12-06T00:00:00Z", NULL, "minute field: unexpected 'x'"},
    {"0 3 * * *", "Mars/Olympus_Mons", "2026-12-06T00:00:00Z", NULL, "unknown time zone"},
    {"0 3 * * *", "../../../etc/passwd", "2026-12-06T00:00:00Z", NULL, "is not a time zone name"},
    {"0 3 * * *", "/etc/localtime", "2026-12-06T00:00:00Z", NULL, "is not a time zone name"},
    {"0 3 * * *", "", "2026-12-06T00:00:00Z", NULL, "is not a time zone name"},
    {"0 3 * * *", "Europe", "2026-12-06T00:00:00Z", NULL, "unknown time zone"},
    {"0 3 * * *", "Europe/Berlin ", "2026-12-06T00:00:00Z", NULL, "is not a time zone name"},
};

static int64_t
instant(const char *iso)
{
    int64_t ns = 0;
    if (lang_datetime_parse(iso, strlen(iso), &ns))
        fprintf(stderr, "bad instant in the table: %s\n", iso);
    return ns;
}

static void
test_cases(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const NextCase *c = &cases[i];
        int64_t after_ns = instant(c->after);
        int64_t after = after_ns / 1000000000 - (after_ns % 1000000000 < 0), next = 0;
        char msg[CRON_MSG_MAX] = "";
        int rc = cron_next_text(c->expr, c->zone, after, &next, msg, sizeof msg);
        if (c->next) {
            Buf got = {0};
            lang_datetime_format(next * 1000000000, &got);
            CHECK(rc == 0 && next * 1000000000 == instant(c->next),
                  "'%s' in %s after %s: rc %d \"%s\", got %s want %s", c->expr,
                  c->zone ? c->zone : "UTC", c->after, rc, msg, got.data, c->next);
            lang_buf_free(&got);
        } else {
            CHECK(rc == -1 && strstr(msg, c->error), "'%s' in %s: rc %d \"%s\", want \"%s\"",
                  c->expr, c->zone ? c->zone : "UTC", rc, msg, c->error);
        }
    }
}

/* Every minute of a day of each change of the clock: the next instant of
 * "* * * * *" is always the next real minute, and of a fixed time once a
 * day, never in the past. */
static void
test_walk(void)
{
    static const struct {
        const char *zone, *day;
    } days[] = {{"Europe/Berlin", "2026-03-28T12:00:00Z"},
                {"Europe/Berlin", "2026-10-24T12:00:00Z"},
                {"America/New_York", "2026-03-07T18:00:00Z"},
                {"America/New_York", "2026-10-31T18:00:00Z"}};
    for (size_t d = 0; d < sizeof days / sizeof days[0]; d++) {
        Zone *z;
        char msg[CRON_MSG_MAX];
        CronExpr every, fixed;
        CHECK(zone_load(days[d].zone, &z, msg, sizeof msg) == 0, "%s", msg);
        CHECK(cron_parse("* * * * *", &every, msg, sizeof msg) == 0, "%s", msg);
        CHECK(cron_parse("30 2 * * *", &fixed, msg, sizeof msg) == 0, "%s", msg);
        int64_t start = instant(days[d].day) / 1000000000, runs = 0, last = start;
        bool ok = true;
        for (int64_t t = start; t < start + 86400; t += 60) {
            int64_t next;
            ok &= cron_next(&every, z, t, &next, msg, sizeof msg) == 0 && next == t + 60;
            ok &= cron_next(&fixed, z, t, &next, msg, sizeof msg) == 0 && next > t;
            if (next != last)
                runs++;
            last = next;
        }
        CHECK(ok && runs == 2, "%s from %s: every minute %s, %" PRId64 " runs of 30 2 * * *",
              days[d].zone, days[d].day, ok ? "right" : "wrong", runs);
        zone_free(z);
    }
}

/* True when local time "local" (seconds, as if UTC) matches "e". */
static bool
matches(const CronExpr *e, int64_t local)
{
    int64_t day = local / 86400 - (local % 86400 < 0), y;
    int m, d, secs = (int)(local - day * 86400), weekday = (int)(((day + 4) % 7 + 7) % 7);
    zone_civil_from_days(day, &y, &m, &d);
    bool dm = e->days >> d & 1, wm = e->weekdays >> weekday & 1;
    return (e->minutes >> (secs / 60 % 60) & 1) && (e->hours >> (secs / 3600) & 1) &&
           (e->months >> m & 1) && (e->day_star || e->weekday_star ? dm && wm : dm || wm);
}

/* Expressions that are not fixed-time follow real time: their next
 * instant is the first whole minute whose local time matches, found here
 * minute by minute, around changes of the clock in zones whose changes are
 * an hour, half an hour (Lord Howe), two hours (Troll) or at 00:00
 * (Santiago). */
static void
test_real_time(void)
{
    static const char *const zones[][2] = {
        {"Europe/Berlin", "2026-03-28T00:00:00Z"},
        {"Europe/Berlin", "2026-10-24T00:00:00Z"},
        {"America/New_York", "2026-03-07T00:00:00Z"},
        {"America/New_York", "2026-10-31T00:00:00Z"},
        {"Australia/Lord_Howe", "2026-04-04T00:00:00Z"},
        {"Australia/Lord_Howe", "2026-10-03T00:00:00Z"},
        {"Antarctica/Troll", "2026-03-28T00:00:00Z"},
        {"America/Santiago", "2026-04-04T00:00:00Z"},
        {"America/Santiago", "2026-09-05T00:00:00Z"},
    };
    static const char *const exprs[] = {"*/10 * * * *", "*/10 2 * * *", "0,30 * * * *",
                                        "45 */2 * * *", "*/5 0,1 * * *"};
    int checked = 0, wrong = 0;
    for (size_t zi = 0; zi < sizeof zones / sizeof zones[0]; zi++) {
        Zone *z;
        char msg[CRON_MSG_MAX];
        if (zone_load(zones[zi][0], &z, msg, sizeof msg)) {
            CHECK(false, "%s", msg);
            continue;
        }
        for (size_t ei = 0; ei < sizeof exprs / sizeof exprs[0]; ei++) {
            CronExpr e;
            CHECK(cron_parse(exprs[ei], &e, msg, sizeof msg) == 0 && !e.fixed_time, "%s",
                  exprs[ei]);
            int64_t start = instant(zones[zi][1]) / 1000000000;
            for (int64_t after = start; after < start + 3 * 86400; after += 31 * 60 + 7) {
                int64_t next = 0, u = (after / 60 + 1) * 60;
                while (!matches(&e, u + zone_at(z, u).offset))
                    u += 60;
                checked++;
                if (cron_next(&e, z, after, &next, msg, sizeof msg) || next != u) {
                    if (wrong++ < 5)
                        CHECK(false,
                              "'%s' in %s after %" PRId64 ": %" PRId64
                              ", minute by minute %" PRId64,
                              exprs[ei], zones[zi][0], after, next, u);
                }
            }
        }
        zone_free(z);
    }
    CHECK(wrong == 0 && checked > 3000, "%d of %d wrong", wrong, checked);
}

/* Files that are not TZif are refused; a zone without DST from its rule. */
static void
test_tzif(void)
{
    Zone *z;
    char msg[ZONE_MSG_MAX];
    static const unsigned char junk[] = "TZif2 but not really";
    CHECK(zone_parse(junk, sizeof junk, &z, msg, sizeof msg) == -1 && strstr(msg, "TZif"), "%s",
          msg);
    CHECK(zone_load("leapseconds", &z, msg, sizeof msg) == -1 && strstr(msg, "not a TZif file"),
          "%s", msg);
    CHECK(zone_load("right/UTC", &z, msg, sizeof msg) == -1 && strstr(msg, "leap seconds"), "%s",
          msg);
    CHECK(zone_load("zone.tab", &z, msg, sizeof msg) == -1 && strstr(msg, "not a time zone name"),
          "%s", msg);
    CHECK(zone_load("Asia/Tokyo", &z, msg, sizeof msg) == 0, "%s", msg);
    ZoneSpan s = zone_at(z, 4102444800); /* 2100 */
    CHECK(s.offset == 9 * 3600 && s.end == INT64_MAX, "offset %d", (int)s.offset);
    zone_free(z);
}

int
main(void)
{
    test_cases();
    test_walk();
    test_real_time();
    test_tzif();
    return unit_test_summary();
}
