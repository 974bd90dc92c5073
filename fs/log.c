/* log.c — the daemon's log (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static bool use_syslog;

void
fs_log_open(bool to_stderr)
{
    use_syslog = !to_stderr;
    if (use_syslog)
        openlog("queuefs", LOG_PID, LOG_DAEMON);
}

void
fs_log_at(const char *file, int line, int priority, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (use_syslog) {
        syslog(priority, "%s:%d: %s", base, line, msg); /* syslog stamps it */
        return;
    }
    struct timespec now;
    struct tm tm;
    char when[40];
    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &tm);
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(when + n, sizeof when - n, ".%03ld", now.tv_nsec / 1000000);
    strftime(when + n, sizeof when - n, "%z", &tm);
    fprintf(stderr, "%s queuefs: %s:%d: %s\n", when, base, line, msg);
}
