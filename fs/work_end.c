/* work_end.c — how queuefs-work ends its records through the mount, and
 * what it logs.
 *
 * A record ends through its fenced names: `rm MOUNT/QUEUE/held/ID~N`
 * finishes it, `mv … MOUNT/QUEUE/released/ID[@DELAY]` releases it, and a
 * reason written to `released/ID~N[@DELAY]` releases it with that reason
 * (the release happens at the close).  A name that is gone means the hold
 * lapsed: the record is lost and nothing changes.  With --batch the
 * records end in one write to the worker's ctl session: `DELETE t:k~N,
 * …;` and one `RELEASE …[ NOT BEFORE D][ BECAUSE "…"];` a delay, in
 * BEGIN…COMMIT when more than one statement; when that fails nothing of it
 * was done, and each record ends through its names instead.
 *
 * Decisions beyond the script it replaces: a worker keeps one ctl session
 * open for its claims and its ends, where the script opened one for each
 * (an open and a close of ctl cost the mount a session each time; about a
 * fifth of the records a second at --batch 100 ×16).
 *
 * The log: one line a record, `TIME worker=W id=ID attempt=N outcome=O
 * status=S duration=D[ delay=…| error="…"]`, and notes, `TIME message`;
 * TIME is UTC to the millisecond (2026-11-30T10:36:22.465Z). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../lang/parse.h"
#include "../lang/value.h"
#include "work.h"

/* Record lines not yet written to standard error. */
static Buf log_lines;

int64_t
work_clock_ns(int clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
work_ms_format(int64_t ms, Buf *out)
{
    static const struct {
        int64_t ms;
        const char *unit;
    } units[] = {{3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
    size_t before = out->len;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        int64_t n = i == 0 ? ms / units[i].ms : ms / units[i].ms % (units[i - 1].ms / units[i].ms);
        if (n)
            lang_buf_printf(out, "%lld%s", (long long)n, units[i].unit);
    }
    if (out->len == before)
        lang_buf_puts(out, "0s");
}

/* Appends the time now, UTC to the millisecond: 2026-11-30T10:36:22.465Z.
 * (The date and time to the second are kept from one call to the next:
 * a batch logs a line a record.) */
static void
put_time(Buf *out)
{
    static time_t second = -1;
    static char prefix[96];
    int64_t now = work_clock_ns(CLOCK_REALTIME);
    time_t secs = (time_t)(now / 1000000000);
    if (secs != second) {
        struct tm tm;
        gmtime_r(&secs, &tm);
        snprintf(prefix, sizeof prefix, "%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        second = secs;
    }
    lang_buf_puts(out, prefix);
    lang_buf_put_digits(out, (uint64_t)(now / 1000000 % 1000), 3);
    lang_buf_putc(out, 'Z');
}

void
work_stderr_write(const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

void
work_log_flush(void)
{
    size_t done = 0;
    while (done < log_lines.len) {
        /* As many whole lines as fit in PIPE_BUF (a longer line alone). */
        size_t end = done, next;
        while (end < log_lines.len) {
            const char *nl = memchr(log_lines.data + end, '\n', log_lines.len - end);
            next = nl ? (size_t)(nl - log_lines.data) + 1 : log_lines.len;
            if (end > done && next - done > PIPE_BUF)
                break;
            end = next;
        }
        work_stderr_write(log_lines.data + done, end - done);
        done = end;
    }
    lang_buf_reset(&log_lines);
}

void
work_note(const char *fmt, ...)
{
    work_log_flush();
    Buf line = {0};
    put_time(&line);
    lang_buf_putc(&line, ' ');
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) >= 0)
        lang_buf_puts(&line, text);
    va_end(ap);
    free(text);
    lang_buf_putc(&line, '\n');
    work_stderr_write(line.data, line.len);
    lang_buf_free(&line);
}

void
work_log_id(const char *name, Buf *out)
{
    if (!name[strcspn(name, " \t\n\v\f\r\"\\")]) {
        lang_buf_puts(out, name);
        return;
    }
    lang_buf_putc(out, '"');
    for (const char *p = name; *p; p++) {
        if (*p == '"' || *p == '\\')
            lang_buf_putc(out, '\\');
        lang_buf_putc(out, *p);
    }
    lang_buf_putc(out, '"');
}

static const char *const outcome_names[] = {
    [WORK_FINISHED] = "finished",   [WORK_REARMED] = "rearmed", [WORK_RELEASED] = "released",
    [WORK_LOST] = "lost",           [WORK_KILLED] = "killed",   [WORK_RETURNED] = "returned",
    [WORK_CANCELLED] = "cancelled", [WORK_ERROR] = "error",
};

void
work_log_record(int worker, const WorkGroup *g, const WorkRecord *r, WorkOutcome outcome,
                const char *extra)
{
    int64_t us = (work_clock_ns(CLOCK_MONOTONIC) - g->start_ns) / 1000;
    put_time(&log_lines);
    lang_buf_puts(&log_lines, " worker=");
    lang_buf_put_int(&log_lines, worker);
    lang_buf_puts(&log_lines, " id=");
    work_log_id(r->name, &log_lines);
    lang_buf_puts(&log_lines, " attempt=");
    lang_buf_put_int(&log_lines, r->attempts);
    lang_buf_puts(&log_lines, " outcome=");
    lang_buf_puts(&log_lines, outcome_names[outcome]);
    lang_buf_puts(&log_lines, " status=");
    if (g->status < 0)
        lang_buf_putc(&log_lines, '-');
    else
        lang_buf_put_int(&log_lines, g->status);
    lang_buf_puts(&log_lines, " duration=");
    lang_buf_put_int(&log_lines, us / 1000000);
    lang_buf_putc(&log_lines, '.');
    lang_buf_put_digits(&log_lines, (uint64_t)(us / 1000 % 1000), 3);
    lang_buf_putc(&log_lines, 's');
    if (extra && *extra) {
        lang_buf_putc(&log_lines, ' ');
        lang_buf_puts(&log_lines, extra);
    }
    lang_buf_putc(&log_lines, '\n');
}

bool
work_read_all(int fd, Buf *out)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        lang_buf_append(out, chunk, (size_t)n);
    }
}

int
work_ctl_exchange(const WorkConfig *cfg, int *session, const char *text, size_t len, Buf *answer,
                  bool *wrote)
{
    lang_buf_reset(answer);
    lang_buf_append(answer, "", 0);
    int fd = session ? *session : -1;
    if (fd < 0)
        fd = open(cfg->ctl_path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        lang_buf_printf(answer, "cannot open %s: %s", cfg->ctl_path, strerror(errno));
        return -1;
    }
    ssize_t n;
    do
        n = write(fd, text, len);
    while (n < 0 && errno == EINTR);
    *wrote = n == (ssize_t)len;
    bool read = work_read_all(fd, answer);
    if (session && read) {
        *session = fd;
    } else {
        close(fd);
        if (session)
            *session = -1;
    }
    return 0;
}

bool
work_ctl_error(const char *answer, Buf *out)
{
    static const char mark[] = "{\"error\":";
    const char *line = answer;
    while (line && strncmp(line, mark, sizeof mark - 1) != 0) {
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!line)
        return false;
    size_t len = strcspn(line, "\n");
    Value v = {0};
    LangError err = {0};
    if (lang_literal_parse(line, len, &v, &err) == 0 && v.kind == VAL_OBJECT) {
        const Value *name = lang_value_object_get(&v, "error");
        const Value *message = lang_value_object_get(&v, "message");
        lang_buf_printf(out, "%s: %s", name && name->kind == VAL_STRING ? name->u.str.s : "null",
                        message && message->kind == VAL_STRING ? message->u.str.s : "null");
    } else {
        lang_buf_puts(out, "the write to ctl failed");
    }
    lang_value_free(&v);
    return true;
}

/* The released/ name of "r": its file name, or with "fenced" its held/
 * name's last part (NAME~N), then @DELAY when it is released NOT BEFORE
 * one, or --rearm's @cron … for a record re-armed. */
static void
released_name(const WorkConfig *cfg, const WorkRecord *r, bool fenced, Buf *out)
{
    lang_buf_printf(out, "%s/released/", cfg->queue);
    lang_buf_puts(out, fenced ? strrchr(r->held, '/') + 1 : r->name);
    if (r->end == WORK_REARMED) {
        lang_buf_puts(out, cfg->rearm_when);
    } else if (r->end != WORK_FINISHED && r->delay_ms > 0 && cfg->not_before) {
        lang_buf_putc(out, '@');
        work_ms_format(r->delay_ms, out);
    }
}

/* Writes "reason" and a newline to "path" (created, truncated), the
 * release happening at the close: 0 or an errno. */
static int
write_reason(const char *path, const char *reason)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return errno;
    Buf text = {0};
    lang_buf_printf(&text, "%s\n", reason);
    ssize_t n = write(fd, text.data, text.len);
    int rc = n == (ssize_t)text.len ? 0 : n < 0 ? errno : EIO;
    lang_buf_free(&text);
    if (close(fd) != 0 && !rc)
        rc = errno;
    return rc;
}

/* Ends "r" through its fenced names as its "end" says (see the header).
 * WORK_FINISHED, WORK_REARMED or WORK_RELEASED (for any release) when it
 * was done, WORK_LOST when the name is gone (the hold lapsed), or
 * WORK_ERROR with why in "error". */
static WorkOutcome
end_by_name(const WorkConfig *cfg, const WorkRecord *r, const char *reason, Buf *error)
{
    Buf to = {0};
    int rc;
    const char *verb = "remove";
    if (r->end == WORK_FINISHED) {
        rc = unlink(r->held) ? errno : 0;
    } else if (reason && *reason) {
        released_name(cfg, r, true, &to);
        rc = write_reason(to.data, reason);
        verb = NULL;
    } else {
        released_name(cfg, r, false, &to);
        rc = rename(r->held, to.data) ? errno : 0;
        verb = "move";
    }
    struct stat st;
    WorkOutcome got = r->end == WORK_FINISHED || r->end == WORK_REARMED ? r->end : WORK_RELEASED;
    if (rc && stat(r->held, &st) != 0 && stat(cfg->held_dir, &st) == 0 && S_ISDIR(st.st_mode)) {
        got = WORK_LOST;
    } else if (rc) {
        got = WORK_ERROR;
        if (!verb)
            lang_buf_printf(error, "%s: %s", to.data, strerror(rc));
        else if (to.len)
            lang_buf_printf(error, "cannot move '%s' to '%s': %s", r->held, to.data, strerror(rc));
        else
            lang_buf_printf(error, "cannot %s '%s': %s", verb, r->held, strerror(rc));
    }
    lang_buf_free(&to);
    return got;
}

/* Appends to "stmts" the statements that end the records "idx" of "g" in
 * one commit; their number is returned. */
static int
end_statements(const WorkConfig *cfg, const WorkGroup *g, const size_t *idx, size_t count,
               Buf *stmts)
{
    int n = 0;
    const char *sep = "DELETE ";
    for (size_t i = 0; i < count; i++) {
        if (g->recs[idx[i]].end != WORK_FINISHED)
            continue;
        lang_buf_printf(stmts, "%s%s", sep, g->recs[idx[i]].target);
        sep = ", ";
    }
    if (*sep == ',') {
        lang_buf_putc(stmts, ';');
        n++;
    }
    /* One RELEASE a delay, the delays in the order they come. */
    for (size_t i = 0; i < count; i++) {
        const WorkRecord *r = &g->recs[idx[i]];
        int64_t d = cfg->not_before ? r->delay_ms : 0;
        bool seen = r->end == WORK_FINISHED;
        for (size_t j = 0; j < i && !seen; j++) {
            const WorkRecord *o = &g->recs[idx[j]];
            seen = o->end != WORK_FINISHED && (cfg->not_before ? o->delay_ms : 0) == d;
        }
        if (seen)
            continue;
        sep = "RELEASE ";
        for (size_t j = i; j < count; j++) {
            const WorkRecord *o = &g->recs[idx[j]];
            if (o->end == WORK_FINISHED || (cfg->not_before ? o->delay_ms : 0) != d)
                continue;
            lang_buf_printf(stmts, "%s%s", sep, o->target);
            sep = ", ";
        }
        if (d > 0) {
            lang_buf_puts(stmts, " NOT BEFORE ");
            work_ms_format(d, stmts);
        }
        if (g->reason && *g->reason) {
            Value why = lang_value_cstring(g->reason);
            lang_buf_puts(stmts, " BECAUSE ");
            lang_value_to_json(&why, stmts);
            lang_value_free(&why);
        }
        lang_buf_putc(stmts, ';');
        n++;
    }
    return n;
}

/* Ends the records "idx" of "g" in one commit through ctl: true when it
 * was done. */
static bool
end_in_one_commit(const WorkConfig *cfg, int *session, const WorkGroup *g, const size_t *idx,
                  size_t count)
{
    Buf stmts = {0}, text = {0}, answer = {0}, error = {0};
    int n = end_statements(cfg, g, idx, count, &stmts);
    lang_buf_printf(&text, n > 1 ? "BEGIN;%sCOMMIT;\n" : "%s\n", stmts.data);
    bool wrote = false;
    bool ok = work_ctl_exchange(cfg, session, text.data, text.len, &answer, &wrote) == 0 && wrote &&
              !work_ctl_error(answer.data, &error);
    lang_buf_free(&stmts);
    lang_buf_free(&text);
    lang_buf_free(&answer);
    lang_buf_free(&error);
    return ok;
}

void
work_end(const WorkConfig *cfg, int *session, int worker, const WorkGroup *g, const size_t *idx,
         size_t count)
{
    if (count == 0)
        return;
    bool committed = cfg->batch > 0 && end_in_one_commit(cfg, session, g, idx, count);
    Buf extra = {0}, error = {0};
    for (size_t i = 0; i < count; i++) {
        const WorkRecord *r = &g->recs[idx[i]];
        WorkOutcome outcome = r->end;
        lang_buf_reset(&extra);
        lang_buf_append(&extra, "", 0);
        if (outcome != WORK_FINISHED && outcome != WORK_REARMED && r->delay_ms > 0) {
            lang_buf_puts(&extra, "delay=");
            work_ms_format(r->delay_ms, &extra);
        }
        WorkOutcome got = committed ? outcome : end_by_name(cfg, r, g->reason, &error);
        if (got == WORK_LOST) {
            outcome = WORK_LOST;
            lang_buf_reset(&extra);
        } else if (got == WORK_ERROR) {
            outcome = WORK_ERROR;
            lang_buf_reset(&extra);
            for (size_t k = 0; k < error.len; k++)
                error.data[k] = error.data[k] == '\n' ? ' ' : error.data[k];
            lang_buf_printf(&extra, "error=\"%s\"", error.data);
            lang_buf_reset(&error);
        }
        work_log_record(worker, g, r, outcome, extra.data);
    }
    lang_buf_free(&extra);
    lang_buf_free(&error);
    work_log_flush();
}
