/* pg_notify.c — the PostgreSQL backend's clock and changes: store_now()
 * (the server's clock, as the last transaction read it), store_changes()
 * and waiting for a change, and the two threads that carry changes between
 * processes and hosts.
 *
 * After a write transaction that changed something commits (pg_conn.c), a
 * thread of the store NOTIFYs channel "queuefs" on a connection of its own
 * (one NOTIFY for all the commits made while the last was sent: inside the
 * transactions, NOTIFY would serialise their commits, fsyncs included, on
 * the server's notification lock); another LISTENs on a connection of its
 * own and moves store_changes() on at each notification (and whenever it
 * had to reconnect, since notifications may have been lost meanwhile).  A
 * waiter also wakes every few seconds to look again, the safety net for
 * notifications lost without the connection breaking. */
#include "pg_internal.h"

#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

/* How long a waiter sleeps at most before looking again. */
#define WAIT_POLL_NS (5 * 1000000000LL)

/* ---- the clock and changes ---- */

int64_t
pg_local_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
pg_now(Store *st)
{
    return pg_local_now() + __atomic_load_n(&st->clock_offset, __ATOMIC_RELAXED);
}

void
pg_changes_note(Store *st, bool tell)
{
    pthread_mutex_lock(&st->change_mu);
    st->changes++;
    pthread_cond_broadcast(&st->change_cv);
    if (tell) {
        st->notify_pending = true;
        pthread_cond_signal(&st->notify_cv);
    }
    pthread_mutex_unlock(&st->change_mu);
}

static void
changes_bump(Store *st)
{
    pg_changes_note(st, false);
}

uint64_t
pg_changes(Store *st)
{
    pthread_mutex_lock(&st->change_mu);
    uint64_t n = st->changes;
    pthread_mutex_unlock(&st->change_mu);
    return n;
}

bool
pg_wait_change(Store *st, uint64_t seen, int64_t until_ns)
{
    int64_t limit = pg_local_now() + WAIT_POLL_NS;
    int64_t local_until = until_ns == INT64_MAX
                              ? INT64_MAX
                              : until_ns - __atomic_load_n(&st->clock_offset, __ATOMIC_RELAXED);
    if (local_until > limit)
        local_until = limit;
    struct timespec ts = {(time_t)(local_until / 1000000000), (long)(local_until % 1000000000)};
    pthread_mutex_lock(&st->change_mu);
    while (st->changes == seen &&
           pthread_cond_timedwait(&st->change_cv, &st->change_mu, &ts) != ETIMEDOUT)
        ;
    bool moved = st->changes != seen;
    pthread_mutex_unlock(&st->change_mu);
    return moved;
}

void
pg_wake(Store *st)
{
    pg_changes_note(st, true);
}

/* ---- the notifier and the listener ---- */

/* The notifier thread: one NOTIFY queuefs for the commits made since the
 * last, on a connection of its own (synchronous_commit off: a notification
 * is not data); at the store's close, the last one before it ends. */
static void *
notify_loop(void *arg)
{
    Store *st = arg;
    PGconn *conn = NULL;
    pthread_mutex_lock(&st->change_mu);
    for (;;) {
        while (!st->notify_pending && !st->stopping)
            pthread_cond_wait(&st->notify_cv, &st->change_mu);
        if (!st->notify_pending)
            break; /* closing, with every change told */
        st->notify_pending = false;
        pthread_mutex_unlock(&st->change_mu);
        store_fork_hold();
        if (!conn || PQstatus(conn) != CONNECTION_OK) {
            PQfinish(conn);
            conn = pg_connect(st, NULL, 0);
            if (conn)
                PQclear(PQexec(conn, "SET synchronous_commit = off"));
        }
        PGresult *res = conn ? PQexec(conn, "NOTIFY queuefs") : NULL;
        bool ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
        store_fork_release();
        pthread_mutex_lock(&st->change_mu);
        if (!ok && st->stopping)
            break;
        if (!ok) {
            /* The server is away: try again in a while, not in a loop. */
            st->notify_pending = true;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&st->notify_cv, &st->change_mu, &ts);
        }
    }
    pthread_mutex_unlock(&st->change_mu);
    store_fork_hold();
    PQfinish(conn);
    store_fork_release();
    return NULL;
}

/* Sleeps "ms" unless the store is closing; true when it is. */
static bool
listener_pause(Store *st, int ms)
{
    struct pollfd p = {st->stop_pipe[0], POLLIN, 0};
    return poll(&p, 1, ms) > 0;
}

/* The listener thread: LISTEN queuefs, and a change at each notification. */
static void *
listen_loop(void *arg)
{
    Store *st = arg;
    PGconn *conn = NULL;
    for (;;) {
        if (!conn) {
            store_fork_hold();
            conn = pg_connect(st, NULL, 0);
            PGresult *res = conn ? PQexec(conn, "LISTEN queuefs") : NULL;
            bool ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;
            PQclear(res);
            if (!ok) {
                PQfinish(conn);
                conn = NULL;
            }
            store_fork_release();
            if (!ok) {
                if (listener_pause(st, 1000))
                    break;
                continue;
            }
            changes_bump(st); /* what happened while not listening */
        }
        struct pollfd p[2] = {{PQsocket(conn), POLLIN, 0}, {st->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!p[0].revents)
            continue;
        store_fork_hold();
        bool lost = !PQconsumeInput(conn), any = false;
        PGnotify *n;
        if (lost) {
            PQfinish(conn);
            conn = NULL;
        }
        while (!lost && (n = PQnotifies(conn))) {
            any = true;
            PQfreemem(n);
        }
        store_fork_release();
        if (lost || any)
            changes_bump(st);
    }
    store_fork_hold();
    PQfinish(conn);
    store_fork_release();
    return NULL;
}

void
pg_notify_start(Store *st)
{
    store_fork_guard(); /* they allocate: see backend.h */
    if (pthread_create(&st->listener, NULL, listen_loop, st) == 0)
        st->listening = true;
    if (pthread_create(&st->notifier, NULL, notify_loop, st) == 0)
        st->notifying = true;
}

void
pg_notify_stop(Store *st)
{
    pthread_mutex_lock(&st->change_mu);
    st->stopping = true;
    pthread_cond_signal(&st->notify_cv);
    pthread_mutex_unlock(&st->change_mu);
    if (st->notifying)
        pthread_join(st->notifier, NULL);
    if (st->listening) {
        ssize_t w = write(st->stop_pipe[1], "x", 1);
        (void)w;
        pthread_join(st->listener, NULL);
    }
}
