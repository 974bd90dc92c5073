/* log.h — what the daemon tells its administrator: statements refused
 * through ctl (whose writer sees only an errno) and what the store met on
 * a file operation (a failing or full disk).  Lines go to syslog (facility
 * daemon, ident "queuefs") when the daemon runs in the background, and to
 * standard error with -f or -d; each names the source file and line that
 * wrote it, as "ctl.c:63: …".  On standard error a line starts with the
 * local time to the millisecond (syslog stamps its own):
 *
 *     2026-12-04T16:40:01.123+0100 queuefs: ctl.c:63: ctl: uid 0: ParseError: …
 *
 *     fs_log_open(foreground);
 *     FS_LOG(LOG_NOTICE, "ctl: uid %u: %s: %s", uid, name, message);
 */
#ifndef QUEUEFS_LOG_H
#define QUEUEFS_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Where lines go from now on: standard error when "to_stderr", else
 * syslog.  Before it is called, lines go to standard error. */
void fs_log_open(bool to_stderr);

/* Writes one line of "priority" (LOG_ERR, LOG_NOTICE, …) from "file" at
 * "line"; FS_LOG fills those in. */
void fs_log_at(const char *file, int line, int priority, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define FS_LOG(priority, ...) fs_log_at(__FILE__, __LINE__, (priority), __VA_ARGS__)

#endif
