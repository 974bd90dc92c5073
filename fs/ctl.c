/* ctl.c — sessions on the ctl file (see ctl.h). */
#include "ctl.h"
#include "log.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lang/view.h"
#include "names.h"

/* A streamed result is produced this much at a time (plus one record). */
#define CTL_CHUNK ((size_t)256 << 10)
/* Unread lines beyond which a write is SessionBusy. */
#define CTL_UNREAD_MAX ((size_t)1 << 20)
/* Reads blocked on a waiting claim, at most, over all sessions: the rest
 * of the mount's request threads stay free. */
#define CTL_MAX_BLOCKED 128

static _Atomic int blocked_reads;

struct CtlFile {
    pthread_mutex_t lock; /* writes and reads of one description may race */
    pthread_cond_t idle;  /* signalled when "running" ends */
    bool running;         /* a read goes on with the session outside the lock */
    LangSession *session;
    Buf out;         /* result lines not yet read */
    size_t read_pos; /* how much of "out" has been read */
    LangError busy;  /* a write refused as SessionBusy: read after the rest */
    uid_t uid;       /* who wrote last: named in the log */
    bool (*interrupted)(void *ctx);
    bool (*abandoned)(void *ctx);
    LangUnclaims claims; /* the claims whose answers are in "out", each
                            "at" the start of the output of the write or
                            read that made it */
};

CtlFile *
fs_ctl_open(Store *store, const char *consumer, const char *instance,
            bool (*interrupted)(void *ctx), bool (*abandoned)(void *ctx))
{
    CtlFile *c = lang_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->idle, NULL);
    c->session = lang_session_new(store, consumer, instance);
    lang_session_set_name_rule(c->session, fs_table_name_rule, NULL);
    lang_view_keep_claims(c->session, &c->claims);
    c->interrupted = interrupted;
    c->abandoned = abandoned;
    return c;
}

/* Empties the unread lines: everything in them was read, the answers of
 * claims included. */
static void
out_reset(CtlFile *c)
{
    lang_buf_reset(&c->out);
    c->read_pos = 0;
    lang_unclaims_truncate(&c->claims, 0);
}

/* Notes that the claims from the "from"-th on were answered in the output
 * that starts at "start". */
static void
claims_place(CtlFile *c, size_t from, size_t start)
{
    for (size_t i = from; i < c->claims.n; i++)
        c->claims.v[i].at = start;
}

/* The first of the claims whose output nobody has begun to read (a
 * reader that read part of it may have seen them): claims.n when none. */
static size_t
unread_claims(const CtlFile *c)
{
    size_t i = c->claims.n;
    while (i > 0 && c->claims.v[i - 1].at >= c->read_pos)
        i--;
    return i;
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

/* Appends the error line of "err" to the unread lines. */
static void
add_error(CtlFile *c, const LangError *err)
{
    /* The writer sees only an errno; the administrator sees why. */
    FS_LOG(err->code == LANG_STORE_ERROR || err->code == LANG_STORE_FULL ? LOG_ERR : LOG_NOTICE,
           "ctl: uid %u: %s: %s", (unsigned)c->uid, lang_error_name(err->code), err->message);
    lang_error_to_json(err, &c->out);
    lang_buf_putc(&c->out, '\n');
}

/* True while the session cannot take a write: its last result is still
 * being produced or waits, or too much of it is unread. */
static bool
session_busy(const CtlFile *c)
{
    return c->running || lang_session_pending(c->session) ||
           c->out.len - c->read_pos > CTL_UNREAD_MAX;
}

/* Makes a claim the session waits for ask "interrupted" with "ctx", the
 * request it runs in from now on.  Called with the lock held, by the one
 * call that may go on with the session. */
static void
interrupt_with(CtlFile *c, void *ctx)
{
    if (c->interrupted)
        lang_session_set_interrupt(c->session, c->interrupted, ctx);
}

ssize_t
fs_ctl_write(CtlFile *c, const char *data, size_t size, uint32_t uid, uint32_t gid,
             const uint32_t *groups, int ngroups, bool enforce, void *ctx)
{
    pthread_mutex_lock(&c->lock);
    if (session_busy(c)) {
        lang_error_set(&c->busy, LANG_SESSION_BUSY,
                       "a write came before the session's last result was read to its end: "
                       "nothing of it ran");
        pthread_mutex_unlock(&c->lock);
        return -(ssize_t)lang_error_errno(LANG_SESSION_BUSY);
    }
    lang_session_set_caller(c->session, uid, gid, groups, ngroups < 64 ? ngroups : 64, enforce);
    interrupt_with(c, ctx);
    c->uid = uid;
    /* Lines not yet read stay ahead of this write's. */
    if (c->read_pos == c->out.len)
        out_reset(c);
    size_t start = c->out.len, made = c->claims.n;
    LangError err = {0};
    /* The kernel cuts a write() longer than max_write into pieces, and only
     * the first piece's error reaches the writer as an errno: a full piece
     * that does not end a statement is refused whole, before anything runs. */
    if (size > FS_CTL_MAX_WRITE - 4096 && !ends_statement(data, size))
        lang_error_set(&err, LANG_TOO_LARGE,
                       "a write to ctl carries at most %zu KiB of statements; "
                       "write large records to their files",
                       (FS_CTL_MAX_WRITE - 4096) >> 10);
    else
        lang_session_start(c->session, data, size, &c->out, c->out.len + CTL_CHUNK, &err);
    claims_place(c, made, start);
    if (err.code)
        add_error(c, &err);
    pthread_mutex_unlock(&c->lock);
    return err.code ? -(ssize_t)lang_error_errno(err.code) : (ssize_t)size;
}

/* Goes on with the session's kept work until there is something to read
 * or it ended.  A claim that waits is waited for outside the lock
 * ("running" keeps writes and other reads off the session meanwhile).  0,
 * -EAGAIN (O_NONBLOCK and the claim would wait, or too many reads block
 * already) or -EINTR (the caller's interruption ended the claim: its
 * Interrupted line is read next). */
static ssize_t
produce(CtlFile *c, bool nonblock)
{
    LangError err = {0};
    out_reset(c);
    while (c->out.len == 0 && lang_session_pending(c->session) && !err.code) {
        if (!lang_session_waiting(c->session) || nonblock) {
            /* A claim is tried once: with O_NONBLOCK, EAGAIN while it waits. */
            lang_session_continue(c->session, &c->out, CTL_CHUNK, false, &err);
            if (nonblock && c->out.len == 0 && lang_session_waiting(c->session) && !err.code)
                return -EAGAIN;
            continue;
        }
        if (++blocked_reads > CTL_MAX_BLOCKED) {
            blocked_reads--;
            return -EAGAIN;
        }
        c->running = true;
        pthread_mutex_unlock(&c->lock);
        lang_session_continue(c->session, &c->out, CTL_CHUNK, true, &err);
        pthread_mutex_lock(&c->lock);
        c->running = false;
        pthread_cond_broadcast(&c->idle);
        blocked_reads--;
    }
    claims_place(c, 0, 0); /* everything was read before: all of it is new */
    if (err.code)
        add_error(c, &err);
    return err.code == LANG_INTERRUPTED ? -EINTR : 0;
}

ssize_t
fs_ctl_read(CtlFile *c, char *buf, size_t size, bool nonblock, void *ctx)
{
    ssize_t rc = 0;
    pthread_mutex_lock(&c->lock);
    /* Another read of this description waits for the claim: wait behind
     * it, as long as this one is not given up. */
    while (c->running && !rc) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 20 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        if (nonblock)
            rc = -EAGAIN;
        else if (c->interrupted && c->interrupted(ctx))
            rc = -EINTR;
        else
            pthread_cond_timedwait(&c->idle, &c->lock, &until);
    }
    if (!rc && c->read_pos == c->out.len && lang_session_pending(c->session)) {
        interrupt_with(c, ctx);
        rc = produce(c, nonblock);
    }
    /* Claims told to a reader that is being killed would be held for
     * nobody: they stay unread, and go back at the close. */
    if (!rc && unread_claims(c) < c->claims.n && c->abandoned && c->abandoned(ctx))
        rc = -EINTR;
    if (!rc) {
        size_t n = c->out.len - c->read_pos;
        if (n > size)
            n = size;
        if (n)
            memcpy(buf, c->out.data + c->read_pos, n);
        c->read_pos += n;
        rc = (ssize_t)n;
    }
    /* A refused write's line comes once everything before it was read. */
    if (c->read_pos == c->out.len && !lang_session_pending(c->session) && c->busy.code) {
        add_error(c, &c->busy);
        c->busy = (LangError){0};
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

bool
fs_ctl_claims_unread(const CtlFile *c)
{
    return c && unread_claims(c) < c->claims.n;
}

void
fs_ctl_close(CtlFile *c)
{
    if (!c)
        return;
    LangError err = {0};
    lang_view_unclaim(c->session, &c->claims, unread_claims(c), &err);
    lang_unclaims_truncate(&c->claims, 0);
    bool large = c->out.cap > CTL_CHUNK;
    lang_session_free(c->session);
    lang_buf_free(&c->out);
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->lock);
    free(c);
    /* A large result's memory goes back to the system, not only to the
     * allocator's free lists. */
    if (large)
        malloc_trim(0);
}
