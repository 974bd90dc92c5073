/* zone.c — IANA time zones read from TZif files (see zone.h): the
 * transitions a file lists, and the POSIX TZ rule of its footer for the
 * instants after them.
 *
 * Decisions beyond RFC 8536:
 *  - Instants before the first transition take local time type 0.
 *  - A file with leap seconds (the right/ zones) is refused: queuefs's
 *    clock is POSIX time, which has none.
 *  - A footer that names a DST zone but no rule takes the US rule of POSIX
 *    ("M3.2.0,M11.1.0"), as glibc does. */
#include "zone.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZONEINFO_DIR "/usr/share/zoneinfo"
#define MAX_TZIF_BYTES (1 << 20)
#define SECS_PER_DAY INT64_C(86400)

/* A date of a POSIX rule: Jn (day 1-365, February 29 never counted), n
 * (day 0-365) or Mm.w.d (weekday d of week w, 5 = the last, of month m);
 * "time" is the local time of day of the change, in seconds. */
typedef struct RuleDate {
    char kind; /* 'J', 'N' or 'M' */
    int n, m, w, d;
    int32_t time;
} RuleDate;

/* A POSIX TZ rule: standard time at "std", and when "has_dst", daylight
 * time at "dst" from "start" to "end" (offsets in seconds east of UTC). */
typedef struct Posix {
    int32_t std, dst;
    bool has_dst;
    RuleDate start, end;
} Posix;

struct Zone {
    size_t n;       /* transitions */
    int64_t *times; /* ascending */
    uint8_t *types; /* the local time type each begins */
    size_t ntypes;
    int32_t *offsets; /* each type's offset, seconds east of UTC */
    bool has_posix;
    Posix posix;
    int32_t min, max;
};

/* ---- the calendar ---- */

int64_t
zone_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void
zone_civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static bool
is_leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

int
zone_month_days(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* ---- the POSIX TZ rule of a footer ---- */

/* Reads [+-]hh[:mm[:ss]] at "*s" (hours up to "max_hours") into "*secs";
 * false when it is not there. */
static bool
rule_time(const char **s, int max_hours, int32_t *secs)
{
    const char *p = *s;
    int sign = 1;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    int32_t part[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (i > 0 && *p != ':')
            break;
        if (i > 0)
            p++;
        if (*p < '0' || *p > '9')
            return false;
        int v = 0;
        while (*p >= '0' && *p <= '9' && v <= 999)
            v = v * 10 + (*p++ - '0');
        if (v > (i == 0 ? max_hours : 59))
            return false;
        part[i] = v;
    }
    *secs = sign * (part[0] * 3600 + part[1] * 60 + part[2]);
    *s = p;
    return true;
}

/* Skips a zone abbreviation at "*s": three or more letters, or <…>. */
static bool
rule_name(const char **s)
{
    const char *p = *s;
    if (*p == '<') {
        while (*p && *p != '>')
            p++;
        if (*p != '>')
            return false;
        *s = p + 1;
        return true;
    }
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    if (p - *s < 3)
        return false;
    *s = p;
    return true;
}

/* Reads an integer in [lo, hi] at "*s". */
static bool
rule_int(const char **s, int lo, int hi, int *out)
{
    const char *p = *s;
    int v = 0;
    if (*p < '0' || *p > '9')
        return false;
    while (*p >= '0' && *p <= '9' && v <= 999)
        v = v * 10 + (*p++ - '0');
    if (v < lo || v > hi)
        return false;
    *out = v;
    *s = p;
    return true;
}

/* date -> Jn | n | Mm.w.d, then [/time] */
static bool
rule_date(const char **s, RuleDate *r)
{
    const char *p = *s;
    bool ok;
    r->time = 7200;
    if (*p == 'J') {
        p++;
        r->kind = 'J';
        ok = rule_int(&p, 1, 365, &r->n);
    } else if (*p == 'M') {
        p++;
        r->kind = 'M';
        ok = rule_int(&p, 1, 12, &r->m) && *p++ == '.' && rule_int(&p, 1, 5, &r->w) &&
             *p++ == '.' && rule_int(&p, 0, 6, &r->d);
    } else {
        r->kind = 'N';
        ok = rule_int(&p, 0, 365, &r->n);
    }
    if (ok && *p == '/') {
        p++;
        ok = rule_time(&p, 167, &r->time);
    }
    *s = p;
    return ok;
}

/* rules -> ,date,date */
static bool
posix_rules(const char *s, Posix *out)
{
    return *s++ == ',' && rule_date(&s, &out->start) && *s++ == ',' && rule_date(&s, &out->end) &&
           !*s;
}

/* tz -> std offset [dst [offset] [rules]] */
static bool
posix_parse(const char *s, Posix *out)
{
    int32_t west;
    memset(out, 0, sizeof *out);
    if (!rule_name(&s) || !rule_time(&s, 24, &west))
        return false;
    out->std = -west;
    if (!*s)
        return true;
    if (!rule_name(&s))
        return false;
    out->has_dst = true;
    out->dst = out->std + 3600;
    if (*s && *s != ',') {
        if (!rule_time(&s, 24, &west))
            return false;
        out->dst = -west;
    }
    return posix_rules(*s ? s : ",M3.2.0,M11.1.0", out);
}

/* The instant (UTC) at which "r" changes the clock in year "y", while
 * "offset" is in force. */
static int64_t
rule_instant(const RuleDate *r, int64_t y, int32_t offset)
{
    int64_t day = zone_days_from_civil(y, 1, 1);
    if (r->kind == 'J')
        day += r->n - 1 + (is_leap(y) && r->n >= 60);
    else if (r->kind == 'N')
        day += r->n;
    else {
        int64_t first = zone_days_from_civil(y, r->m, 1);
        int dow = (int)(((first + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday */
        int mday = 1 + (r->d - dow + 7) % 7 + (r->w - 1) * 7;
        while (mday > zone_month_days(y, r->m))
            mday -= 7;
        day = first + mday - 1;
    }
    return day * SECS_PER_DAY + r->time - offset;
}

/* A change of the clock by a rule: when, and whether DST begins. */
typedef struct Change {
    int64_t at;
    bool dst;
} Change;

/* The span of rule "p" that holds "t", begun no earlier than "floor". */
static ZoneSpan
posix_at(const Posix *p, int64_t t, int64_t floor)
{
    ZoneSpan s = {p->std, floor, INT64_MAX};
    if (!p->has_dst)
        return s;
    int64_t y;
    int m, d;
    zone_civil_from_days((t + p->std) / SECS_PER_DAY - ((t + p->std) % SECS_PER_DAY < 0), &y, &m,
                         &d);
    /* The changes of the year before to the year after, in order. */
    Change ch[6] = {{0, false}};
    for (int i = 0; i < 3; i++) {
        ch[2 * i] = (Change){rule_instant(&p->start, y - 1 + i, p->std), true};
        ch[2 * i + 1] = (Change){rule_instant(&p->end, y - 1 + i, p->dst), false};
    }
    for (size_t i = 1; i < 6; i++)
        for (size_t j = i; j > 0 && ch[j].at < ch[j - 1].at; j--) {
            Change tmp = ch[j];
            ch[j] = ch[j - 1];
            ch[j - 1] = tmp;
        }
    bool dst = !ch[0].dst;
    int64_t start = INT64_MIN;
    for (size_t i = 0; i < 6; i++) {
        if (ch[i].at > t) {
            s.end = ch[i].at;
            break;
        }
        dst = ch[i].dst;
        start = ch[i].at;
    }
    s.offset = dst ? p->dst : p->std;
    s.start = start > floor ? start : floor;
    return s;
}

/* ---- TZif ---- */

/* Sets "msg" and answers -1. */
static int fail(char *msg, size_t msg_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(char *msg, size_t msg_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_len, fmt, ap);
    va_end(ap);
    return -1;
}

static uint32_t
be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t
be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* A TZif header's counts. */
typedef struct Counts {
    uint32_t isut, isstd, leap, time, type, chars;
} Counts;

/* Reads the header at "p" ("left" bytes) into "c"; the size of the data
 * block after it, with transition times of "tsize" bytes, or 0 when the
 * header is bad or the block does not fit. */
static size_t
header(const unsigned char *p, size_t left, size_t tsize, Counts *c)
{
    if (left < 44 || memcmp(p, "TZif", 4) != 0)
        return 0;
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    if (c->time > 100000 || c->type == 0 || c->type > 256 || c->chars > 100000 ||
        c->leap > 100000 || c->isut > c->type || c->isstd > c->type)
        return 0;
    size_t block = (size_t)c->time * (tsize + 1) + (size_t)c->type * 6 + c->chars +
                   (size_t)c->leap * (tsize + 4) + c->isstd + c->isut;
    return block <= left - 44 ? block : 0;
}

int
zone_parse(const unsigned char *data, size_t len, Zone **out, char *msg, size_t msg_len)
{
    *out = NULL;
    Counts c;
    size_t block = header(data, len, 4, &c);
    if (!block)
        return fail(msg, msg_len, "not a TZif file");
    size_t tsize = 4;
    const unsigned char *p = data + 44, *end = data + len;
    if (data[4] >= '2') {
        p += block;
        if (!(block = header(p, (size_t)(end - p), 8, &c)))
            return fail(msg, msg_len, "a TZif file whose second header is bad");
        p += 44;
        tsize = 8;
    }
    if (c.leap)
        return fail(msg, msg_len, "a zone with leap seconds (right/…), which queuefs does not use");
    Zone *z = calloc(1, sizeof *z);
    z->n = c.time;
    z->ntypes = c.type;
    z->times = calloc(c.time ? c.time : 1, sizeof *z->times);
    z->types = calloc(c.time ? c.time : 1, 1);
    z->offsets = calloc(c.type, sizeof *z->offsets);
    if (!z->times || !z->types || !z->offsets) {
        zone_free(z);
        return fail(msg, msg_len, "out of memory");
    }
    const unsigned char *times = p, *idx = p + (size_t)c.time * tsize, *types = idx + c.time;
    for (size_t i = 0; i < c.time; i++) {
        z->times[i] = tsize == 8 ? be64(times + i * 8) : (int32_t)be32(times + i * 4);
        z->types[i] = idx[i];
        if (idx[i] >= c.type || (i > 0 && z->times[i] <= z->times[i - 1])) {
            zone_free(z);
            return fail(msg, msg_len, "a TZif file whose transitions are bad");
        }
    }
    z->min = INT32_MAX;
    z->max = INT32_MIN;
    for (size_t i = 0; i < c.type; i++) {
        int32_t off = (int32_t)be32(types + i * 6);
        if (off < -26 * 3600 || off > 26 * 3600) {
            zone_free(z);
            return fail(msg, msg_len, "a TZif file with an offset out of range");
        }
        z->offsets[i] = off;
        z->min = off < z->min ? off : z->min;
        z->max = off > z->max ? off : z->max;
    }
    p += block;
    /* The footer: "\nTZ\n", the rule between newlines; empty is none. */
    if (tsize == 8 && p < end && *p == '\n') {
        const unsigned char *nl = memchr(p + 1, '\n', (size_t)(end - p - 1));
        char rule[128];
        size_t rlen = nl ? (size_t)(nl - p - 1) : 0;
        if (nl && rlen > 0 && rlen < sizeof rule) {
            memcpy(rule, p + 1, rlen);
            rule[rlen] = '\0';
            if (!posix_parse(rule, &z->posix)) {
                zone_free(z);
                return fail(msg, msg_len, "a TZif file whose rule '%s' cannot be read", rule);
            }
            z->has_posix = true;
            int32_t o[2] = {z->posix.std, z->posix.has_dst ? z->posix.dst : z->posix.std};
            for (int i = 0; i < 2; i++) {
                z->min = o[i] < z->min ? o[i] : z->min;
                z->max = o[i] > z->max ? o[i] : z->max;
            }
        }
    }
    *out = z;
    return 0;
}

/* True when "name" may name a file under the zone directory. */
static bool
valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 200 || name[0] == '/' || strstr(name, "..") || name[len - 1] == '/')
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '/' || *p == '_' || *p == '+' || *p == '-'))
            return false;
    return true;
}

int
zone_load(const char *name, Zone **out, char *msg, size_t msg_len)
{
    *out = NULL;
    if (!valid_name(name))
        return fail(msg, msg_len, "'%s' is not a time zone name (like 'Europe/Berlin')", name);
    char path[sizeof ZONEINFO_DIR + 256];
    snprintf(path, sizeof path, "%s/%s", ZONEINFO_DIR, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_TZIF_BYTES) {
        int e = fd < 0 ? errno : 0;
        if (fd >= 0)
            close(fd);
        return fail(msg, msg_len, "unknown time zone '%s'%s%s", name, e && e != ENOENT ? ": " : "",
                    e && e != ENOENT ? strerror(e) : "");
    }
    unsigned char *data = malloc(st.st_size ? (size_t)st.st_size : 1);
    ssize_t got = data ? read(fd, data, (size_t)st.st_size) : -1;
    close(fd);
    int rc;
    if (got != st.st_size)
        rc = fail(msg, msg_len, "time zone '%s' cannot be read", name);
    else if ((rc = zone_parse(data, (size_t)got, out, msg, msg_len))) {
        char why[ZONE_MSG_MAX];
        snprintf(why, sizeof why, "%s", msg);
        fail(msg, msg_len, "unknown time zone '%s': %s", name, why);
    }
    free(data);
    return rc;
}

void
zone_free(Zone *z)
{
    if (!z)
        return;
    free(z->times);
    free(z->types);
    free(z->offsets);
    free(z);
}

ZoneSpan
zone_at(const Zone *z, int64_t t)
{
    if (z->n == 0)
        return z->has_posix ? posix_at(&z->posix, t, INT64_MIN)
                            : (ZoneSpan){z->offsets[0], INT64_MIN, INT64_MAX};
    if (t < z->times[0])
        return (ZoneSpan){z->offsets[0], INT64_MIN, z->times[0]};
    size_t lo = 0, hi = z->n; /* times[lo] <= t < times[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->times[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    if (hi == z->n && z->has_posix)
        return posix_at(&z->posix, t, z->times[lo]);
    return (ZoneSpan){z->offsets[z->types[lo]], z->times[lo], hi < z->n ? z->times[hi] : INT64_MAX};
}

void
zone_offset_range(const Zone *z, int32_t *min, int32_t *max)
{
    *min = z->min;
    *max = z->max;
}
