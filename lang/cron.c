/* cron.c — five-field cron expressions and their next instant (see
 * cron.h).
 *
 * Decisions beyond Vixie cron:
 *  - A step is 1 to the field's largest value, and follows only '*' or a
 *    range, as in cronie; names are the three-letter ones only.
 *  - An expression no day of whose months exists is refused when it is
 *    parsed, rather than never running.
 *  - Expressions are exact to the minute: an instant named is a whole
 *    minute of local time (or the end of a gap, which in every zone of
 *    the database is a whole minute too). */
#include "cron.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SECS_PER_DAY INT64_C(86400)
#define SEARCH_YEARS 400

/* A field: its name for messages, its values, and the names of its values
 * from "base" on (NULL: none). */
typedef struct Field {
    const char *name;
    int lo, hi;
    const char *const *names;
    int base;
} Field;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const day_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const Field fields[5] = {
    {"minute", 0, 59, NULL, 0},          {"hour", 0, 23, NULL, 0},
    {"day-of-month", 1, 31, NULL, 0},    {"month", 1, 12, month_names, 1},
    {"day-of-week", 0, 7, day_names, 0},
};

/* Sets "msg" to "expr" and what is wrong, and answers -1. */
static int fail(char *msg, size_t msg_len, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
fail(char *msg, size_t msg_len, const char *expr, const char *fmt, ...)
{
    char why[CRON_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(msg, msg_len, "cron expression '%.120s': %s", expr, why);
    return -1;
}

static bool
blank(char c)
{
    return c == ' ' || c == '\t';
}

static char
lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Reads a value of "f" at "*s" into "*v": digits or a name.  False (with
 * "*s" where the bad text begins) when neither is there. */
static bool
value(const char **s, const Field *f, int *v)
{
    const char *p = *s;
    if (*p >= '0' && *p <= '9') {
        int n = 0;
        while (*p >= '0' && *p <= '9' && n < 1000)
            n = n * 10 + (*p++ - '0');
        *v = n;
        *s = p;
        return true;
    }
    for (int i = 0; f->names && f->names[i]; i++)
        if (lower(p[0]) == f->names[i][0] && lower(p[1]) == f->names[i][1] &&
            lower(p[2]) == f->names[i][2] && !((lower(p[3]) >= 'a' && lower(p[3]) <= 'z'))) {
            *v = f->base + i;
            *s = p + 3;
            return true;
        }
    return false;
}

/* The end of the token at "s" for a message: up to a blank, ',' or the end. */
static int
token_len(const char *s)
{
    int n = 0;
    while (s[n] && !blank(s[n]) && s[n] != ',' && n < 40)
        n++;
    return n ? n : 1;
}

/* field -> item {',' item}
 * item  -> ('*' | value ['-' value]) ['/' number]
 * Reads field "f" at "*s" into "*bits"; 0 or -1 with a message. */
static int
field(const char **s, const Field *f, const char *expr, uint64_t *bits, char *msg, size_t msg_len)
{
    const char *p = *s;
    *bits = 0;
    for (;;) {
        int a, b, step = 1;
        bool single = false;
        if (*p == '*') {
            a = f->lo;
            b = f->hi;
            p++;
        } else {
            if (!value(&p, f, &a))
                return fail(msg, msg_len, expr, "%s field: '%.*s' is not a value%s", f->name,
                            token_len(p), p, f->names ? " or a name" : "");
            b = a;
            single = *p != '-';
            if (*p == '-') {
                p++;
                if (!value(&p, f, &b))
                    return fail(msg, msg_len, expr,
                                "%s field: '%.*s' is not a value to end a range", f->name,
                                token_len(p), p);
            }
            int bad = a < f->lo || a > f->hi ? a : b;
            if (bad < f->lo || bad > f->hi)
                return fail(msg, msg_len, expr, "%s field: %d is out of range %d-%d", f->name, bad,
                            f->lo, f->hi);
            if (a > b)
                return fail(msg, msg_len, expr, "%s field: the range %d-%d runs backwards", f->name,
                            a, b);
        }
        if (*p == '/') {
            p++;
            if (single)
                return fail(msg, msg_len, expr,
                            "%s field: a step follows '*' or a range (write %d-%d/… for %d/…)",
                            f->name, a, f->hi, a);
            if (*p < '0' || *p > '9' || !value(&p, &fields[0], &step) || step < 1 || step > f->hi)
                return fail(msg, msg_len, expr, "%s field: a step is a number from 1 to %d",
                            f->name, f->hi);
        }
        for (int v = a; v <= b; v += step)
            *bits |= UINT64_C(1) << v;
        if (*p != ',')
            break;
        p++;
    }
    if (*p && !blank(*p))
        return fail(msg, msg_len, expr, "%s field: unexpected '%.*s'", f->name, token_len(p), p);
    *s = p;
    return 0;
}

int
cron_parse(const char *text, CronExpr *out, char *msg, size_t msg_len)
{
    memset(out, 0, sizeof *out);
    const char *p = text;
    uint64_t bits[5];
    bool star[5];
    for (int i = 0; i < 5; i++) {
        while (blank(*p))
            p++;
        if (!*p)
            return fail(msg, msg_len, text,
                        "five fields (minute hour day-of-month month day-of-week), found %d", i);
        star[i] = *p == '*';
        if (field(&p, &fields[i], text, &bits[i], msg, msg_len))
            return -1;
    }
    while (blank(*p))
        p++;
    if (*p)
        return fail(msg, msg_len, text,
                    "five fields (minute hour day-of-month month day-of-week), found more");
    out->minutes = bits[0];
    out->hours = (uint32_t)bits[1];
    out->days = (uint32_t)bits[2];
    out->months = (uint16_t)bits[3];
    out->weekdays = (uint8_t)((bits[4] | bits[4] >> 7) & 0x7f);
    out->day_star = star[2];
    out->weekday_star = star[4];
    out->fixed_time = !star[0] && !star[1];
    /* Days must all match when either day field begins with '*': then a
     * day-of-month no month of the expression has can never match. */
    if (out->day_star || out->weekday_star) {
        bool any = false;
        for (int m = 1; m <= 12 && !any; m++)
            if (out->months >> m & 1)
                any = (out->days & ((UINT32_C(2) << zone_month_days(2000, m)) - 2)) != 0;
        if (!any)
            return fail(msg, msg_len, text,
                        "no month it names has a day it names: it never matches");
    }
    return 0;
}

/* ---- the next instant ---- */

static int64_t
floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b < 0);
}

/* True when day "y"-"m"-"d" matches "e"'s day fields. */
static bool
day_matches(const CronExpr *e, int64_t y, int m, int d)
{
    int64_t days = zone_days_from_civil(y, m, d);
    int weekday = (int)(((days + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
    bool dm = e->days >> d & 1, wm = e->weekdays >> weekday & 1;
    return e->day_star || e->weekday_star ? dm && wm : dm || wm;
}

/* The first local minute at or after "local" (seconds of local time, as
 * if it were UTC) that "e" matches, into "*out"; false when there is none
 * before day "limit_day". */
static bool
next_local(const CronExpr *e, int64_t local, int64_t limit_day, int64_t *out)
{
    int64_t day = floor_div(local, SECS_PER_DAY), y;
    int64_t secs = local - day * SECS_PER_DAY + 59; /* up to a whole minute */
    int m, d, hour = (int)(secs / 3600), minute = (int)(secs / 60 % 60);
    if (hour > 23) {
        day++;
        hour = minute = 0;
    }
    zone_civil_from_days(day, &y, &m, &d);
    for (;;) {
        if (!(e->months >> m & 1) || d > zone_month_days(y, m)) {
            d = 1;
            hour = minute = 0;
            if (++m > 12) {
                m = 1;
                y++;
            }
        } else if (!day_matches(e, y, m, d)) {
            d++;
            hour = minute = 0;
        } else if (!(e->hours >> hour & 1)) {
            minute = 0;
            if (++hour > 23) {
                hour = 0;
                d++;
            }
        } else if (!(e->minutes >> minute & 1)) {
            if (++minute > 59) {
                minute = 0;
                if (++hour > 23) {
                    hour = 0;
                    d++;
                }
            }
        } else {
            break;
        }
        if (d == 1 && zone_days_from_civil(y, m, 1) > limit_day)
            return false;
    }
    *out = zone_days_from_civil(y, m, d) * SECS_PER_DAY + hour * 3600 + minute * 60;
    return true;
}

/* The instants that local time "local" of "z" names under "e"'s rules,
 * into "out" (at most 2); their number.  "min" and "max" are "z"'s offset
 * range. */
static int
instants(const CronExpr *e, const Zone *z, int64_t local, int32_t min, int32_t max, int64_t out[2])
{
    int n = 0;
    int64_t gap = INT64_MIN;
    ZoneSpan prev = {0};
    for (int64_t t = local - max; t <= local - min;) {
        ZoneSpan s = zone_at(z, t);
        int64_t u = local - s.offset;
        if (u >= s.start && u < s.end && n < 2)
            out[n++] = u;
        if (t != local - max && s.start + prev.offset <= local && local < s.start + s.offset)
            gap = s.start;
        if (s.end == INT64_MAX)
            break;
        prev = s;
        t = s.end;
    }
    if (n == 0 && gap != INT64_MIN && e->fixed_time)
        out[n++] = gap;
    if (n == 2 && e->fixed_time)
        n = 1;
    return n;
}

int
cron_next(const CronExpr *e, const Zone *zone, int64_t after, int64_t *next, char *msg,
          size_t msg_len)
{
    int32_t min = 0, max = 0;
    if (zone)
        zone_offset_range(zone, &min, &max);
    int64_t local = after + min + 1;
    int64_t limit_day = floor_div(local, SECS_PER_DAY) + SEARCH_YEARS * INT64_C(366);
    bool found = false;
    int64_t best = 0;
    while (next_local(e, local, limit_day, &local)) {
        if (found && local - max > best)
            break;
        int64_t u[2] = {local, local};
        int n = zone ? instants(e, zone, local, min, max, u) : 1;
        for (int i = 0; i < n; i++)
            if (u[i] > after && (!found || u[i] < best)) {
                best = u[i];
                found = true;
            }
        if (!zone && found)
            break;
        local += 60;
    }
    if (!found) {
        snprintf(msg, msg_len, "cron expression names no instant in the %d years after now",
                 SEARCH_YEARS);
        return -1;
    }
    *next = best;
    return 0;
}

int
cron_next_text(const char *expr, const char *zone, int64_t after, int64_t *next, char *msg,
               size_t msg_len)
{
    CronExpr e;
    if (cron_parse(expr, &e, msg, msg_len))
        return -1;
    Zone *z = NULL;
    if (zone && zone_load(zone, &z, msg, msg_len))
        return -1;
    int rc = cron_next(&e, z, after, next, msg, msg_len);
    zone_free(z);
    return rc;
}
