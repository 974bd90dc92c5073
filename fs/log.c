/* log.c — the daemon's log (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
    if (use_syslog)
        syslog(priority, "%s:%d: %s", base, line, msg);
    else
        fprintf(stderr, "queuefs: %s:%d: %s\n", base, line, msg);
}
