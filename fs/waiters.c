/* waiters.c — opens of T/wait that wait, holding no thread (waiters.h).
 *
 * Every waiter is on the registry's list of all waiters (how an interrupt,
 * which names it by id, finds it).  A filed one is also in its uid's line
 * within its queue, in arrival order; the uid served longest ago is served
 * next (line_next).  The wait thread takes a waiter out of its line to
 * serve it (SERVING) and puts it back at the front when nothing was
 * claimable after all.
 *
 * Wake-ups: the thread reads store_changes() before each pass over the
 * queues and sleeps on it after the pass.  A filer whose own look at the
 * queue came from an older ticket than the thread's, or that brings a new
 * queue or an earlier wake instant, makes the thread pass again: by a
 * flag while it passes, by store_wake() once it is idle.  An interrupt
 * arrives on a FUSE thread with the request's lock held; it only marks the
 * waiter (replying there could free the request under libfuse's feet) and
 * the wait thread answers it. */
#include "waiters.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef enum WaiterState { W_NEW, W_FILED, W_SERVING, W_GONE } WaiterState;

typedef struct UidLine UidLine;
typedef struct WaitQueue WaitQueue;

typedef struct Waiter {
    uint64_t id;
    WaitCall call;
    atomic_bool interrupted;
    WaiterState state;
    WaitQueue *queue;    /* while filed or serving */
    struct Waiter *next; /* in its line, or in the answered list */
    struct Waiter *all_prev, *all_next;
} Waiter;

struct UidLine {
    uint32_t uid;
    size_t n;
    uint64_t served; /* the queue's serve count at its last serve */
    Waiter *head, *tail;
    UidLine *next;
};

struct WaitQueue {
    char *table;
    size_t n;        /* its waiters, filed */
    uint64_t serves; /* waiters it has served */
    UidLine *lines;  /* one per uid that waited since it was made */
    WaitQueue *next;
};

struct Waiters {
    Mount *m;
    WaitServe serve;
    pthread_mutex_t lock;
    pthread_t thread;
    bool started;
    bool stopping;
    int detached; /* non-zero: answer every waiter with it */
    WaitQueue *queues;
    Waiter *all;
    Waiter *answered; /* interrupted: the thread answers EINTR */
    uint64_t next_id;
    bool idle;     /* the thread sleeps (or is about to) ... */
    uint64_t seen; /* ... on this ticket ... */
    int64_t until; /* ... until this instant */
    bool again;    /* pass again before sleeping */
    bool resting;  /* nobody waits: the thread sleeps on "rest",
                                   * not on the store, so commits cost nothing */
    pthread_cond_t rest;
    pthread_t watcher; /* watches the mount table (fs_waiters_watch) */
    bool watching;
    int stop_fd;  /* an eventfd that ends the watcher */
    char dev[32]; /* the mount's "major:minor" */
};

Waiters *
fs_waiters_new(Mount *m, WaitServe serve)
{
    Waiters *ws = lang_xcalloc(1, sizeof *ws);
    ws->m = m;
    ws->serve = serve;
    pthread_mutex_init(&ws->lock, NULL);
    pthread_cond_init(&ws->rest, NULL);
    return ws;
}

/* Makes the thread pass again soon: at once when it is idle (store_wake
 * after the lock is dropped: returns true), or after its pass.  Called
 * with the lock held. */
static bool
rouse_locked(Waiters *ws)
{
    if (ws->resting) {
        ws->resting = false;
        pthread_cond_signal(&ws->rest);
        return false;
    }
    if (ws->idle) {
        ws->idle = false;
        return true;
    }
    ws->again = true;
    return false;
}

static WaitQueue *
queue_find(Waiters *ws, const char *table)
{
    for (WaitQueue *q = ws->queues; q; q = q->next)
        if (strcmp(q->table, table) == 0)
            return q;
    return NULL;
}

/* Removes "q", empty, from the registry. */
static void
queue_drop(Waiters *ws, WaitQueue *q)
{
    for (WaitQueue **p = &ws->queues; *p; p = &(*p)->next)
        if (*p == q) {
            *p = q->next;
            break;
        }
    while (q->lines) {
        UidLine *next = q->lines->next;
        free(q->lines);
        q->lines = next;
    }
    free(q->table);
    free(q);
}

static UidLine *
line_find(WaitQueue *q, uint32_t uid)
{
    for (UidLine *l = q->lines; l; l = l->next)
        if (l->uid == uid)
            return l;
    return NULL;
}

/* The line of "uid" in "q", made (never served) when absent. */
static UidLine *
line_get(WaitQueue *q, uint32_t uid)
{
    UidLine *l = line_find(q, uid), **p;
    if (l)
        return l;
    l = lang_xcalloc(1, sizeof *l);
    l->uid = uid;
    for (p = &q->lines; *p; p = &(*p)->next)
        ;
    *p = l;
    return l;
}

/* Takes "w" out of its line (filed), dropping what empties. */
static void
unfile_locked(Waiters *ws, Waiter *w)
{
    WaitQueue *q = w->queue;
    UidLine *l = line_find(q, w->call.who.uid);
    Waiter *prev = NULL;
    for (Waiter *c = l ? l->head : NULL; c; prev = c, c = c->next)
        if (c == w) {
            if (prev)
                prev->next = w->next;
            else
                l->head = w->next;
            if (l->tail == w)
                l->tail = prev;
            l->n--;
            q->n--;
            break;
        }
    w->next = NULL;
    w->queue = NULL;
    if (!q->n)
        queue_drop(ws, q); /* its lines' history goes with it */
}

/* Puts "w" into its uid's line of queue "table": at the back, or at the
 * front when "front" (it was served and waits on).  False when the line
 * is full. */
static bool
file_locked(Waiters *ws, Waiter *w, bool front)
{
    WaitQueue *q = queue_find(ws, w->call.table);
    if (!q) {
        q = lang_xcalloc(1, sizeof *q);
        q->table = lang_xstrdup(w->call.table);
        q->next = ws->queues;
        ws->queues = q;
    }
    UidLine *l = line_get(q, w->call.who.uid);
    if (!front && l->n >= FS_WAITERS_PER_UID) {
        if (!q->n)
            queue_drop(ws, q);
        return false;
    }
    if (front) {
        w->next = l->head;
        l->head = w;
        if (!l->tail)
            l->tail = w;
    } else {
        w->next = NULL;
        if (l->tail)
            l->tail->next = w;
        else
            l->head = w;
        l->tail = w;
    }
    l->n++;
    q->n++;
    w->queue = q;
    /* The table name is the queue's from now on: the caller's copy goes. */
    w->call.table = q->table;
    w->state = W_FILED;
    return true;
}

static void
all_unlink_locked(Waiters *ws, Waiter *w)
{
    if (w->all_prev)
        w->all_prev->all_next = w->all_next;
    else if (ws->all == w)
        ws->all = w->all_next;
    if (w->all_next)
        w->all_next->all_prev = w->all_prev;
    w->all_prev = w->all_next = NULL;
}

static void
waiter_free(Waiter *w)
{
    free((char *)w->call.table);
    free(w);
}

/* Unlinks "w" (not filed) from the registry and answers it "error". */
static void
answer(Waiters *ws, Waiter *w, int error)
{
    pthread_mutex_lock(&ws->lock);
    all_unlink_locked(ws, w);
    pthread_mutex_unlock(&ws->lock);
    fuse_reply_err(w->call.req, error);
    waiter_free(w);
}

/* The interrupt callback of a filed request: marks the waiter, and hands
 * it to the thread to answer when it is filed. */
static void
on_interrupt(fuse_req_t req, void *data)
{
    Mount *m = fuse_req_userdata(req);
    Waiters *ws = m->waiters;
    uint64_t id = (uint64_t)(uintptr_t)data;
    bool wake = false;
    pthread_mutex_lock(&ws->lock);
    for (Waiter *w = ws->all; w; w = w->all_next) {
        if (w->id != id)
            continue;
        atomic_store(&w->interrupted, true);
        if (w->state == W_FILED) {
            /* Its own copy of the name: the queue may go with its line. */
            w->call.table = lang_xstrdup(w->call.table);
            unfile_locked(ws, w);
            w->state = W_GONE;
            w->next = ws->answered;
            ws->answered = w;
            wake = rouse_locked(ws);
        }
        break;
    }
    pthread_mutex_unlock(&ws->lock);
    if (wake)
        store_wake(m->store);
}

int
fs_waiters_file(Waiters *ws, const WaitCall *c, uint64_t seen, int64_t next_wake)
{
    Waiter *w = lang_xcalloc(1, sizeof *w);
    w->call = *c;
    w->call.table = lang_xstrdup(c->table);
    atomic_init(&w->interrupted, false);
    pthread_mutex_lock(&ws->lock);
    w->id = ++ws->next_id;
    w->all_next = ws->all;
    if (ws->all)
        ws->all->all_prev = w;
    ws->all = w;
    pthread_mutex_unlock(&ws->lock);
    /* Called at once when the request was interrupted already: it only
     * marks the waiter, which is not filed yet. */
    fuse_req_interrupt_func(c->req, on_interrupt, (void *)(uintptr_t)w->id);

    pthread_mutex_lock(&ws->lock);
    int rc = ws->detached ? -ws->detached : ws->stopping ? -EINTR : 0;
    if (!rc && atomic_load(&w->interrupted))
        rc = -EINTR;
    bool known = !rc && queue_find(ws, c->table) != NULL;
    char *name = (char *)w->call.table;
    if (!rc && !file_locked(ws, w, false))
        rc = -EAGAIN;
    bool wake = false;
    if (!rc) {
        free(name);
        /* The thread must look again when this look was older than its
         * own, or its sleep does not cover this queue's next instant. */
        if (!known || (int32_t)((uint32_t)ws->seen - (uint32_t)seen) > 0 || next_wake < ws->until)
            wake = rouse_locked(ws);
    } else {
        all_unlink_locked(ws, w);
    }
    pthread_mutex_unlock(&ws->lock);
    if (rc) {
        waiter_free(w);
        if (rc == -EINTR) {
            fuse_reply_err(c->req, EINTR);
            return 0;
        }
        return rc;
    }
    if (wake)
        store_wake(ws->m->store);
    return 0;
}

/* The line of "q" to serve next: of the uids waiting, the one served
 * longest ago (never, first), and of those the one with the fewest
 * waiting — so the uids take turns however many each has waiting. */
static UidLine *
line_next(WaitQueue *q)
{
    UidLine *best = NULL;
    for (UidLine *l = q->lines; l; l = l->next)
        if (l->head &&
            (!best || l->served < best->served || (l->served == best->served && l->n < best->n)))
            best = l;
    return best;
}

/* Takes the next waiter of queue "table" to serve (see line_next), or
 * NULL. */
static Waiter *
take_next(Waiters *ws, const char *table)
{
    pthread_mutex_lock(&ws->lock);
    WaitQueue *q = queue_find(ws, table);
    UidLine *l = q ? line_next(q) : NULL;
    Waiter *w = l ? l->head : NULL;
    if (w) {
        l->served = ++q->serves;
        w->call.table = lang_xstrdup(w->call.table);
        unfile_locked(ws, w);
        w->state = W_SERVING;
    }
    pthread_mutex_unlock(&ws->lock);
    return w;
}

/* After "serve" found nothing for "w": back to the front of its line, or
 * answered EINTR when it was interrupted meanwhile. */
static void
put_back(Waiters *ws, Waiter *w)
{
    pthread_mutex_lock(&ws->lock);
    bool gone = atomic_load(&w->interrupted) || ws->detached || ws->stopping;
    char *name = (char *)w->call.table;
    if (!gone) {
        file_locked(ws, w, true);
        free(name);
    }
    int error = ws->detached ? ws->detached : EINTR;
    pthread_mutex_unlock(&ws->lock);
    if (gone)
        answer(ws, w, error);
}

/* Answers every waiter of queue "table" with "error" (the queue is gone). */
static void
answer_queue(Waiters *ws, const char *table, int error)
{
    Waiter *w;
    while ((w = take_next(ws, table)))
        answer(ws, w, error);
}

/* Serves the waiters of queue "table" while it has something claimable;
 * returns the instant its first held or delayed record becomes claimable
 * (INT64_MAX: none, or look again only after a change). */
static int64_t
serve_queue(Waiters *ws, const char *table)
{
    Mount *m = ws->m;
    int misses = 0;
    for (;;) {
        LangSession *s = lang_session_new(m->store, NULL, NULL);
        LangError err = {0};
        bool yes;
        int64_t next;
        LangErrorCode rc = lang_view_claimable(s, table, &yes, &next, &err);
        lang_session_free(s);
        if (rc) {
            answer_queue(ws, table, lang_error_errno(rc));
            return INT64_MAX;
        }
        if (!yes)
            return next;
        Waiter *w = take_next(ws, table);
        if (!w)
            return next;
        if (ws->serve(m, &w->call, &w->interrupted)) {
            pthread_mutex_lock(&ws->lock);
            all_unlink_locked(ws, w);
            pthread_mutex_unlock(&ws->lock);
            waiter_free(w);
            misses = 0;
            continue;
        }
        put_back(ws, w);
        /* Claimable, yet the claim found nothing: another took it, or the
         * look is in doubt.  Look again shortly rather than spin. */
        if (++misses >= 2)
            return store_now(m->store) + 100 * 1000 * 1000;
    }
}

/* The names of the waited queues, as a NULL-terminated array to free. */
static char **
queue_names_locked(Waiters *ws)
{
    size_t n = 0, i = 0;
    for (WaitQueue *q = ws->queues; q; q = q->next)
        n++;
    char **names = lang_xcalloc(n + 1, sizeof *names);
    for (WaitQueue *q = ws->queues; q; q = q->next)
        names[i++] = lang_xstrdup(q->table);
    return names;
}

/* One pass: answers the interrupted EINTR, then serves every queue of
 * "names" (freeing them) — or, once the mount is detached, answers their
 * waiters "detached".  The earliest instant to look again. */
static int64_t
pass(Waiters *ws, char **names, Waiter *answered, int detached)
{
    while (answered) {
        Waiter *next = answered->next;
        answer(ws, answered, EINTR);
        answered = next;
    }
    int64_t until = INT64_MAX;
    for (size_t i = 0; names[i]; i++) {
        if (detached) {
            answer_queue(ws, names[i], detached);
        } else {
            int64_t t = serve_queue(ws, names[i]);
            if (t < until)
                until = t;
        }
        free(names[i]);
    }
    free(names);
    return until;
}

static void *
wait_thread(void *arg)
{
    Waiters *ws = arg;
    Store *st = ws->m->store;
    for (;;) {
        pthread_mutex_lock(&ws->lock);
        ws->idle = false;
        ws->again = false;
        if (ws->stopping) {
            pthread_mutex_unlock(&ws->lock);
            break;
        }
        uint64_t seen = ws->seen = store_changes(st);
        ws->until = INT64_MAX;
        Waiter *answered = ws->answered;
        ws->answered = NULL;
        char **names = queue_names_locked(ws);
        int detached = ws->detached;
        pthread_mutex_unlock(&ws->lock);

        int64_t until = pass(ws, names, answered, detached);

        pthread_mutex_lock(&ws->lock);
        bool sleep = !ws->again && !ws->stopping && !ws->answered;
        if (sleep && !ws->all) {
            /* Nobody waits: rest until a wait is filed (rouse_locked),
             * without listening to the store's commits. */
            ws->resting = true;
            while (ws->resting)
                pthread_cond_wait(&ws->rest, &ws->lock);
            pthread_mutex_unlock(&ws->lock);
            continue;
        }
        if (sleep) {
            ws->idle = true;
            ws->until = until;
        }
        pthread_mutex_unlock(&ws->lock);
        if (sleep)
            store_wait_change(st, seen, until);
    }
    return NULL;
}

int
fs_waiters_start(Waiters *ws)
{
    int rc = pthread_create(&ws->thread, NULL, wait_thread, ws);
    ws->started = rc == 0;
    return rc;
}

/* Makes every waiter be answered "detached" from now on (when non-zero),
 * or the thread end ("stopping"), and the thread pass again to do it. */
static void
end_waiting(Waiters *ws, int detached, bool stopping)
{
    pthread_mutex_lock(&ws->lock);
    if (detached)
        ws->detached = detached;
    ws->stopping = ws->stopping || stopping;
    bool wake = rouse_locked(ws);
    pthread_mutex_unlock(&ws->lock);
    if (wake)
        store_wake(ws->m->store);
}

void
fs_waiters_stop(Waiters *ws)
{
    end_waiting(ws, 0, true);
    if (ws->started)
        pthread_join(ws->thread, NULL);
    ws->started = false;
    /* No thread serves now: answer what is left, filed or interrupted. */
    pthread_mutex_lock(&ws->lock);
    Waiter *answered = ws->answered;
    ws->answered = NULL;
    char **names = queue_names_locked(ws);
    int error = ws->detached ? ws->detached : EINTR;
    pthread_mutex_unlock(&ws->lock);
    pass(ws, names, answered, error);
}

/* The "major:minor" of the newest mount at "mountpoint" in mountinfo
 * "text" into "dev" (empty when none). */
static void
mount_dev(const char *text, const char *mountpoint, char dev[32])
{
    dev[0] = '\0';
    for (const char *line = text; line && *line;) {
        const char *end = strchrnul(line, '\n');
        char id[32], point[4096], plain[4096];
        /* mount id, parent id, major:minor, root, mount point */
        if (sscanf(line, "%*s %*s %31s %*s %4095s", id, point) == 2) {
            size_t n = 0;
            for (const char *c = point; *c && n < sizeof plain - 1; c++) {
                if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] && c[3]) {
                    plain[n++] = (char)((c[1] - '0') << 6 | (c[2] - '0') << 3 | (c[3] - '0'));
                    c += 3;
                } else {
                    plain[n++] = *c;
                }
            }
            plain[n] = '\0';
            if (strcmp(plain, mountpoint) == 0)
                snprintf(dev, 32, "%s", id);
        }
        line = *end ? end + 1 : NULL;
    }
}

/* The whole of mountinfo from "fd", as a string to free. */
static char *
mountinfo_read(int fd)
{
    Buf b = {0};
    char chunk[8192];
    ssize_t n;
    if (lseek(fd, 0, SEEK_SET) < 0)
        return lang_xstrdup("");
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
        lang_buf_append(&b, chunk, (size_t)n);
    lang_buf_putc(&b, '\0');
    return lang_buf_steal(&b);
}

/* Answers every waiter ENODEV once the mount is no longer in the mount
 * table (a lazy unmount, fusermount3 -u -z): nobody can open its files
 * again, and the waiting opens are what keeps the kernel's connection —
 * and this process — alive.  Sleeps in poll() on mountinfo, which the
 * kernel wakes at every change of the table. */
static void *
watch_thread(void *arg)
{
    Waiters *ws = arg;
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    for (;;) {
        struct pollfd p[2] = {{fd, POLLPRI, 0}, {ws->stop_fd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!(p[0].revents & (POLLPRI | POLLERR)))
            continue;
        char *text = mountinfo_read(fd), *at = strstr(text, ws->dev);
        /* Whole field only: " 0:53 " */
        bool there = false;
        for (; at; at = strstr(at + 1, ws->dev))
            there |= at > text && at[-1] == ' ' && at[strlen(ws->dev)] == ' ';
        free(text);
        if (!there) {
            end_waiting(ws, ENODEV, false);
            break;
        }
    }
    close(fd);
    return NULL;
}

int
fs_waiters_watch(Waiters *ws, const char *mountpoint)
{
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    char *text = mountinfo_read(fd);
    close(fd);
    mount_dev(text, mountpoint, ws->dev);
    free(text);
    if (!ws->dev[0])
        return ENOENT;
    ws->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (ws->stop_fd < 0)
        return errno;
    int rc = pthread_create(&ws->watcher, NULL, watch_thread, ws);
    ws->watching = rc == 0;
    return rc;
}

void
fs_waiters_free(Waiters *ws)
{
    if (!ws)
        return;
    if (ws->watching) {
        uint64_t one = 1;
        ssize_t ignored = write(ws->stop_fd, &one, sizeof one);
        (void)ignored;
        pthread_join(ws->watcher, NULL);
    }
    if (ws->watching || ws->stop_fd > 0)
        close(ws->stop_fd);
    pthread_cond_destroy(&ws->rest);
    pthread_mutex_destroy(&ws->lock);
    free(ws);
}
