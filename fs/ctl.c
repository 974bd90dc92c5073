/* ctl.c — sessions on the ctl file (see ctl.h). */
#include "ctl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../lang/lang.h"

struct CtlFile {
    pthread_mutex_t lock;     /* writes and reads of one description may race */
    LangSession    *session;
    Buf             out;      /* result lines not yet read */
    size_t          read_pos; /* how much of "out" has been read */
};

CtlFile *
ctl_open(Store *store, const char *consumer, const char *instance,
         bool (*interrupted)(void *ctx))
{
    CtlFile *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->session = lang_session_new(store, consumer, instance);
    if (interrupted)
        lang_session_set_interrupt(c->session, interrupted, NULL);
    return c;
}

static void
add_line(void *ctx, const char *line, size_t len)
{
    buf_append(ctx, line, len);
    buf_putc(ctx, '\n');
}

/* True when "data" ends with ';' and blanks: a complete statement. */
static bool
ends_statement(const char *data, size_t n)
{
    while (n && (data[n - 1] == ' ' || data[n - 1] == '\t' || data[n - 1] == '\n' ||
                 data[n - 1] == '\r'))
        n--;
    return n && data[n - 1] == ';';
}

ssize_t
ctl_write(CtlFile *c, const char *data, size_t size, uid_t uid, gid_t gid, const gid_t *groups,
          int ngroups, bool enforce)
{
    uint32_t ids[64];
    for (int i = 0; i < ngroups && i < 64; i++)
        ids[i] = groups[i];
    pthread_mutex_lock(&c->lock);
    lang_session_set_caller(c->session, uid, gid, ids, ngroups < 64 ? ngroups : 64, enforce);
    /* Lines not yet read stay ahead of this write's. */
    if (c->read_pos == c->out.len) {
        buf_reset(&c->out);
        c->read_pos = 0;
    }
    LangError err = {0};
    /* The kernel cuts a write() longer than max_write into pieces, and only
     * the first piece's error reaches the writer as an errno: a full piece
     * that does not end a statement is refused whole, before anything runs. */
    if (size > CTL_MAX_WRITE - 4096 && !ends_statement(data, size))
        lang_error_set(&err, LANG_TOO_LARGE,
                       "a write to ctl carries at most %zu KiB of statements; "
                       "write large records to their files", (CTL_MAX_WRITE - 4096) >> 10);
    else
        lang_session_exec(c->session, data, size, add_line, &c->out, &err);
    if (err.code) {
        lang_error_to_json(&err, &c->out);
        buf_putc(&c->out, '\n');
    }
    pthread_mutex_unlock(&c->lock);
    return err.code ? -(ssize_t)lang_error_errno(err.code) : (ssize_t)size;
}

size_t
ctl_read(CtlFile *c, char *buf, size_t size)
{
    pthread_mutex_lock(&c->lock);
    size_t n = c->out.len - c->read_pos;
    if (n > size)
        n = size;
    memcpy(buf, c->out.data + c->read_pos, n);
    c->read_pos += n;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void
ctl_close(CtlFile *c)
{
    if (!c)
        return;
    lang_session_free(c->session);
    buf_free(&c->out);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
