/* names.c — record identities <-> file names (see names.h). */
#include "names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../lang/cron.h"

static const char *const reserved[FS_RESERVED_N] = {
    [FS_NEW] = "new",     [FS_CLAIM] = "claim",       [FS_WAIT] = "wait",
    [FS_STATS] = "stats", [FS_RELEASED] = "released", [FS_HELD] = "held",
    [FS_DEAD] = "dead",   [FS_DONE] = "done",         [FS_BLOCKED] = "blocked",
};

int
fs_name_reserved(const char *name)
{
    for (int i = 0; i < FS_RESERVED_N; i++)
        if (strcmp(name, reserved[i]) == 0)
            return i;
    return -1;
}

LangErrorCode
fs_table_name_rule(void *ctx, const char *name, LangError *err)
{
    (void)ctx;
    const char *why = NULL;
    if (strchr(name, '/'))
        why = "holds '/'";
    else if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        why = "is '.' or '..'";
    else if (strcmp(name, "ctl") == 0 || strcmp(name, "metrics") == 0)
        why = "is the name of one of the mount's files";
    if (!why)
        return LANG_OK;
    return lang_error_set(err, LANG_PARSE_ERROR,
                          "a table name %s (a table is a directory of the mount)", why);
}

/* True when "s" of "len" bytes would read as an integer: an optional '-'
 * and one or more digits. */
static bool
reads_as_integer(const char *s, size_t len)
{
    size_t i = len && s[0] == '-' ? 1 : 0;
    if (i == len)
        return false;
    for (; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* True for the bytes a name always writes as %XX. */
static bool
must_escape(unsigned char c)
{
    return c == '%' || c == '/' || c == '@' || c == '~' || c < 0x20 || c == 0x7f;
}

void
fs_name_from_key(const Value *key, Buf *out)
{
    lang_buf_append(out, "", 0); /* "out->data" is a string even for an empty key */
    if (key->kind == VAL_INT) {
        lang_buf_put_int(out, key->u.i);
        return;
    }
    const char *s = key->u.str.s;
    size_t len = key->u.str.len;
    bool escape_first = len == 0 || reads_as_integer(s, len) || s[0] == '.' ||
                        (strlen(s) == len && fs_name_reserved(s) >= 0);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (must_escape(c) || (i == 0 && escape_first))
            lang_buf_printf(out, "%%%02X", c);
        else
            lang_buf_putc(out, (char)c);
    }
}

/* The value of upper-case hex digit "c", or -1 for any other byte. */
static int
hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
fs_name_to_key(const char *name, Value *key)
{
    size_t len = strlen(name);
    if (len == 0)
        return -1;
    if (reads_as_integer(name, len)) {
        errno = 0;
        char *end;
        long long v = strtoll(name, &end, 10);
        if (errno || *end)
            return -1;
        *key = lang_value_int(v);
    } else {
        Buf text = {0};
        for (size_t i = 0; i < len; i++) {
            if (name[i] != '%') {
                lang_buf_putc(&text, name[i]);
                continue;
            }
            int hi = i + 2 < len ? hex_digit(name[i + 1]) : -1;
            int lo = hi >= 0 ? hex_digit(name[i + 2]) : -1;
            if (lo < 0) {
                lang_buf_free(&text);
                return -1;
            }
            lang_buf_putc(&text, (char)(hi << 4 | lo));
            i += 2;
        }
        if (!lang_utf8_valid(text.data, text.len)) {
            lang_buf_free(&text);
            return -1;
        }
        *key = lang_value_string(text.data, text.len);
        lang_buf_free(&text);
    }
    /* One-to-one: only the canonical spelling of an identity names it. */
    Buf again = {0};
    fs_name_from_key(key, &again);
    bool canonical = strcmp(again.data, name) == 0;
    lang_buf_free(&again);
    if (!canonical) {
        lang_value_free(key);
        return -1;
    }
    return 0;
}

int64_t
fs_name_fence(const char *name, size_t *id_len)
{
    const char *tilde = strrchr(name, '~');
    *id_len = strlen(name);
    if (!tilde || tilde[1] < '1' || tilde[1] > '9')
        return 0;
    char *end;
    errno = 0;
    long long number = strtoll(tilde + 1, &end, 10);
    if (errno || *end || number <= 0)
        return 0;
    *id_len = (size_t)(tilde - name);
    return number;
}

/* The WHEN "cron EXPR [in ZONE]" of a released/ name, "spec" with its
 * "cron " taken off: into "*when" the object {"cron": EXPR[, "zone":
 * ZONE]}, with each "%2F" read as '/'; -EINVAL when the expression or the
 * zone is refused (cron.h, zone.h). */
static int
cron_when(const char *spec, Value *when)
{
    Buf text = {0};
    for (const char *p = spec; *p; p++)
        if (p[0] == '%' && p[1] == '2' && (p[2] == 'F' || p[2] == 'f')) {
            lang_buf_putc(&text, '/');
            p += 2;
        } else {
            lang_buf_putc(&text, *p);
        }
    lang_buf_putc(&text, '\0');
    /* " in ZONE" at the end: the word before the last is "in". */
    char *end = text.data + strlen(text.data), *zone = NULL;
    while (end > text.data && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    char *last = end;
    while (last > text.data && last[-1] != ' ' && last[-1] != '\t')
        last--;
    char *in = last;
    while (in > text.data && (in[-1] == ' ' || in[-1] == '\t'))
        in--;
    if (in - text.data >= 3 && strncasecmp(in - 2, "in", 2) == 0 &&
        (in[-3] == ' ' || in[-3] == '\t') && last < end) {
        zone = last;
        in[-2] = '\0';
    }
    CronExpr e;
    Zone *z = NULL;
    char msg[CRON_MSG_MAX];
    int rc =
        cron_parse(text.data, &e, msg, sizeof msg) || (zone && zone_load(zone, &z, msg, sizeof msg))
            ? -EINVAL
            : 0;
    zone_free(z);
    if (!rc) {
        *when = lang_value_object();
        lang_value_object_set(when, "cron", lang_value_cstring(text.data));
        if (zone)
            lang_value_object_set(when, "zone", lang_value_cstring(zone));
    }
    lang_buf_free(&text);
    return rc;
}

int
fs_name_when(const char *name, size_t *id_len, Value *when)
{
    *when = lang_value_none();
    const char *at = strchr(name, '@');
    *id_len = at ? (size_t)(at - name) : strlen(name);
    if (!at)
        return 0;
    const char *spec = at + 1;
    size_t len = strlen(spec);
    int64_t ns;
    if (strncasecmp(spec, "cron", 4) == 0 && (spec[4] == ' ' || spec[4] == '\t'))
        return cron_when(spec + 5, when);
    if (lang_duration_parse(spec, len, &ns) == 0)
        *when = lang_value_duration(ns);
    else if (lang_datetime_parse(spec, len, &ns) == 0)
        *when = lang_value_datetime(ns);
    else
        return -EINVAL;
    return 0;
}
