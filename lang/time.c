/* time.c — durations and datetimes as text: parsing and formatting (see
 * value.h). */
#include "value.h"
#include "zone.h"

#include <inttypes.h>
#include <string.h>

#define NS_PER_SEC INT64_C(1000000000)
#define SECS_PER_DAY INT64_C(86400)

/* ---- durations ---- */

/* The units, largest first: what lang_duration_format writes and
 * lang_duration_parse reads ("alias" spellings are read, never written). */
static const struct {
    const char *name;
    uint64_t ns;
    bool alias;
} duration_units[] = {
    {"y", UINT64_C(365) * 86400 * 1000000000, false},
    {"w", UINT64_C(7) * 86400 * 1000000000, false},
    {"d", UINT64_C(86400) * 1000000000, false},
    {"h", UINT64_C(3600) * 1000000000, false},
    {"m", UINT64_C(60) * 1000000000, false},
    {"s", UINT64_C(1000000000), false},
    {"ms", UINT64_C(1000000), false},
    {"us", UINT64_C(1000), false},
    {"\xc2\xb5s", UINT64_C(1000), true},
    {"ns", UINT64_C(1), false},
};
#define N_DURATION_UNITS (sizeof duration_units / sizeof duration_units[0])

void
lang_duration_format(int64_t ns, Buf *out)
{
    if (ns == 0) {
        lang_buf_puts(out, "0ns");
        return;
    }
    uint64_t rest = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    if (ns < 0)
        lang_buf_putc(out, '-');
    for (size_t i = 0; i < N_DURATION_UNITS; i++) {
        if (duration_units[i].alias)
            continue;
        uint64_t n = rest / duration_units[i].ns;
        rest %= duration_units[i].ns;
        if (n)
            lang_buf_printf(out, "%" PRIu64 "%s", n, duration_units[i].name);
    }
}

/* Matches the longest unit spelling at s[*pos] ("ms" rather than "m"); its
 * size in nanoseconds, or 0 when no unit is there. */
static uint64_t
duration_unit_at(const char *s, size_t len, size_t *pos)
{
    size_t best = N_DURATION_UNITS, best_len = 0;
    for (size_t i = 0; i < N_DURATION_UNITS; i++) {
        size_t n = strlen(duration_units[i].name);
        if (n > best_len && len - *pos >= n && memcmp(s + *pos, duration_units[i].name, n) == 0) {
            best = i;
            best_len = n;
        }
    }
    if (best == N_DURATION_UNITS)
        return 0;
    *pos += best_len;
    return duration_units[best].ns;
}

int
lang_duration_parse(const char *s, size_t len, int64_t *ns_out)
{
    size_t pos = 0;
    uint64_t total = 0;
    if (len == 0)
        return -1;
    while (pos < len) {
        uint64_t n = 0;
        size_t start = pos;
        while (pos < len && s[pos] >= '0' && s[pos] <= '9') {
            unsigned d = (unsigned)(s[pos] - '0');
            if (n > ((uint64_t)INT64_MAX - d) / 10)
                return -1;
            n = n * 10 + d;
            pos++;
        }
        if (pos == start)
            return -1;
        uint64_t unit = duration_unit_at(s, len, &pos);
        if (unit == 0)
            return -1;
        if (n > (uint64_t)INT64_MAX / unit)
            return -1;
        n *= unit;
        if (n > (uint64_t)INT64_MAX - total)
            return -1;
        total += n;
    }
    *ns_out = (int64_t)total;
    return 0;
}

/* ---- datetimes ---- */

static int
days_in_month(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* Reads exactly "n" decimal digits at s[*pos]. */
static bool
read_digits(const char *s, size_t len, size_t *pos, int n, int *out)
{
    int v = 0;
    if (len - *pos < (size_t)n)
        return false;
    for (int i = 0; i < n; i++) {
        char c = s[*pos + (size_t)i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *pos += (size_t)n;
    *out = v;
    return true;
}

static bool
read_char(const char *s, size_t len, size_t *pos, const char *accept)
{
    if (*pos >= len || s[*pos] == '\0' || !strchr(accept, s[*pos]))
        return false;
    (*pos)++;
    return true;
}

/* Reads an optional ".fraction" (1 to 9 digits) as nanoseconds. */
static bool
read_fraction(const char *s, size_t len, size_t *pos, int64_t *nanos)
{
    *nanos = 0;
    if (*pos >= len || s[*pos] != '.')
        return true;
    (*pos)++;
    int digits = 0;
    int64_t v = 0;
    while (*pos < len && s[*pos] >= '0' && s[*pos] <= '9') {
        if (++digits > 9)
            return false;
        v = v * 10 + (s[*pos] - '0');
        (*pos)++;
    }
    if (digits == 0)
        return false;
    for (int i = digits; i < 9; i++)
        v *= 10;
    *nanos = v;
    return true;
}

/* Reads "Z" or "+HH:MM" / "-HH:MM" as an offset east of UTC in seconds. */
static bool
read_zone(const char *s, size_t len, size_t *pos, int64_t *offset)
{
    *offset = 0;
    if (read_char(s, len, pos, "Zz"))
        return true;
    if (*pos >= len || (s[*pos] != '+' && s[*pos] != '-'))
        return false;
    int sign = s[*pos] == '-' ? -1 : 1;
    int hh, mm;
    (*pos)++;
    if (!read_digits(s, len, pos, 2, &hh) || !read_char(s, len, pos, ":") ||
        !read_digits(s, len, pos, 2, &mm) || hh > 23 || mm > 59)
        return false;
    *offset = sign * (hh * 3600 + mm * 60);
    return true;
}

int
lang_datetime_parse(const char *s, size_t len, int64_t *ns_out)
{
    size_t pos = 0;
    int y, mo, d, h = 0, mi = 0, sec = 0;
    int64_t nanos = 0, offset = 0;
    if (!read_digits(s, len, &pos, 4, &y) || !read_char(s, len, &pos, "-") ||
        !read_digits(s, len, &pos, 2, &mo) || !read_char(s, len, &pos, "-") ||
        !read_digits(s, len, &pos, 2, &d))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return -1;
    if (pos < len) {
        if (!read_char(s, len, &pos, "Tt ") || !read_digits(s, len, &pos, 2, &h) ||
            !read_char(s, len, &pos, ":") || !read_digits(s, len, &pos, 2, &mi) ||
            !read_char(s, len, &pos, ":") || !read_digits(s, len, &pos, 2, &sec) ||
            !read_fraction(s, len, &pos, &nanos) || !read_zone(s, len, &pos, &offset) || pos != len)
            return -1;
        if (h > 23 || mi > 59 || sec > 59)
            return -1;
    }
    int64_t secs =
        zone_days_from_civil(y, mo, d) * SECS_PER_DAY + h * 3600 + mi * 60 + sec - offset;
    int64_t ns;
    if (secs < 0 && nanos > 0) { /* keep the product in range near INT64_MIN */
        secs++;
        nanos -= NS_PER_SEC;
    }
    if (__builtin_mul_overflow(secs, NS_PER_SEC, &ns) || __builtin_add_overflow(ns, nanos, &ns))
        return -1;
    *ns_out = ns;
    return 0;
}

void
lang_datetime_format(int64_t ns, Buf *out)
{
    int64_t secs = ns / NS_PER_SEC, nanos = ns % NS_PER_SEC;
    if (nanos < 0) {
        nanos += NS_PER_SEC;
        secs--;
    }
    int64_t days = secs / SECS_PER_DAY, sod = secs % SECS_PER_DAY;
    if (sod < 0) {
        sod += SECS_PER_DAY;
        days--;
    }
    int64_t y;
    int m, d;
    zone_civil_from_days(days, &y, &m, &d);
    /* Every int64 nanosecond count falls in the years 1677..2262. */
    lang_buf_put_digits(out, (uint64_t)y, 4);
    const int parts[] = {m, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60)};
    const char seps[] = "--T::";
    for (int i = 0; i < 5; i++) {
        lang_buf_putc(out, seps[i]);
        lang_buf_put_digits(out, (uint64_t)parts[i], 2);
    }
    if (nanos) {
        int width = 9; /* the fraction without its trailing zeros */
        for (; nanos % 10 == 0; nanos /= 10)
            width--;
        lang_buf_putc(out, '.');
        lang_buf_put_digits(out, (uint64_t)nanos, width);
    }
    lang_buf_putc(out, 'Z');
}
