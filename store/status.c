/* status.c — what every backend shares below the interface: the messages
 * of the StoreStatus codes, the detail of the last failure in a thread,
 * and how a store's location reads (which backend, and shown without a
 * password).  Backends call these; this file calls no backend. */
#include "backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const store_messages[] = {
#define STORE_STATUS_MESSAGE(name, message) [name] = message,
    STORE_STATUSES(STORE_STATUS_MESSAGE)
#undef STORE_STATUS_MESSAGE
};

static _Thread_local char error_detail[512];

const char *
store_error_detail(void)
{
    return error_detail;
}

void
store_error_detail_clear(void)
{
    error_detail[0] = 0;
}

void
store_error_detail_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_detail, sizeof error_detail, fmt, ap);
    va_end(ap);
    size_t n = strlen(error_detail);
    while (n && (error_detail[n - 1] == '\n' || error_detail[n - 1] == ' '))
        error_detail[--n] = 0;
}

const char *
store_strerror(int status)
{
    if (status < 0 || (size_t)status >= sizeof store_messages / sizeof store_messages[0])
        return "unknown store error";
    return store_messages[status];
}

bool
store_location_is_server(const char *location)
{
    return strncmp(location, "postgresql://", 13) == 0 || strncmp(location, "postgres://", 11) == 0;
}

void
store_location_shown(const char *location, char *out, size_t len)
{
    if (!len)
        return;
    if (!store_location_is_server(location)) {
        snprintf(out, len, "%s", location);
        return;
    }
    /* scheme://[user[:password]@]host.../db[?param&param...] */
    const char *authority = strstr(location, "://") + 3;
    const char *end = authority + strcspn(authority, "/?");
    const char *at = memchr(authority, '@', (size_t)(end - authority));
    const char *colon = at ? memchr(authority, ':', (size_t)(at - authority)) : NULL;
    const char *query = strchr(end, '?');
    size_t upto = query ? (size_t)(query - location) : strlen(location);
    size_t n = 0;
    for (size_t i = 0; i < upto && n + 1 < len; i++) {
        if (colon && location + i == colon)
            i = (size_t)(at - location); /* ":password" goes; '@' stays */
        out[n++] = location[i];
    }
    /* The parameters but password=... */
    char sep = '?';
    for (const char *q = query; q && *q && n + 1 < len;) {
        q++;
        size_t plen = strcspn(q, "&");
        if (strncmp(q, "password=", 9) != 0) {
            out[n++] = sep;
            for (size_t i = 0; i < plen && n + 1 < len; i++)
                out[n++] = q[i];
            sep = '&';
        }
        q += plen;
    }
    out[n] = 0;
}
