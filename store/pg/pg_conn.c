/* pg_conn.c — the PostgreSQL backend's connections and the store's
 * opening and closing: decoding results, the statuses of failures, the
 * pool of connections and their counter rows.
 *
 * A Store is a pool of up to PG_POOL_MAX connections, opened as they are
 * needed; a transaction takes one for its length (pg_txn.c).  A connection
 * that broke (the server restarted, the network went) is connected again
 * when the next transaction finds it so. */
#include "pg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bigendian.h"

/* ---- results ---- */

int64_t
pg_i64(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col) || PQgetlength(res, row, col) != 8)
        return 0;
    return (int64_t)be_get((const unsigned char *)PQgetvalue(res, row, col), 8);
}

StoreBytes
pg_bytes(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return (StoreBytes){NULL, 0};
    return (StoreBytes){PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col)};
}

bool
pg_bool(const PGresult *res, int row, int col)
{
    return !PQgetisnull(res, row, col) && PQgetvalue(res, row, col)[0] != 0;
}

void
pg_record_of(const PGresult *res, int row, int col, StoreRecord *r)
{
    /* PG_RECORD_COLS' since .. claimed_until, in their order. */
    int64_t *const times[] = {&r->since,    &r->written, &r->changed,      &r->claimed,
                              &r->attempts, &r->hold,    &r->claimed_until};
    memset(r, 0, sizeof *r);
    r->key = pg_bytes(res, row, col);
    r->value = pg_bytes(res, row, col + 1);
    r->seq = (uint64_t)pg_i64(res, row, col + 2);
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        *times[i] = pg_i64(res, row, col + 3 + (int)i);
    r->consumer = pg_bytes(res, row, col + 10);
    r->instance = pg_bytes(res, row, col + 11);
    r->order = pg_bytes(res, row, col + 12);
    r->not_before = pg_i64(res, row, col + 13);
    r->errors = pg_bytes(res, row, col + 14);
    r->group = pg_bytes(res, row, col + 15);
    r->completed_at = pg_i64(res, row, col + 16);
    r->rerun = pg_bool(res, row, col + 17);
}

PgDelta *
pg_delta(StoreTxn *txn, uint32_t table)
{
    for (int i = 0; i < txn->ndeltas; i++)
        if (txn->deltas[i].table == table)
            return &txn->deltas[i];
    if (txn->ndeltas == PG_DELTAS_MAX)
        return NULL;
    PgDelta *d = &txn->deltas[txn->ndeltas++];
    *d = (PgDelta){.table = table};
    return d;
}

/* ---- errors ---- */

/* The StoreStatus of a failed statement on "conn"; "*retry" when running
 * the transaction again may succeed. */
int
pg_status_of(PGconn *conn, const PGresult *res, bool *retry)
{
    *retry = false;
    if (PQstatus(conn) != CONNECTION_OK)
        return STORE_IO;
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (!state)
        return STORE_IO;
    if (!strcmp(state, "40001") || !strcmp(state, "40P01")) {
        *retry = true;
        return STORE_IO;
    }
    if (!strcmp(state, "23505"))
        return STORE_EXISTS;
    if (!strcmp(state, "2200H"))
        return STORE_EXHAUSTED;
    if (!strcmp(state, "53100") || !strcmp(state, "54000"))
        return STORE_FULL;
    if (!strcmp(state, "25006") || !strcmp(state, "42501"))
        return STORE_READONLY;
    return STORE_IO;
}

/* ---- connections ---- */

static void
quiet_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Connects with the store's URI, the session set as queuefs wants it:
 * keepalives that notice a dead server within a minute and a request the
 * network stopped carrying failed after 30 s (TCP), synchronous_commit
 * by the store's sync option, no transaction left idle for long, and no
 * JIT: a claim's generic plan, costed high once the table is large, was
 * compiled anew at every run — a second a claim. */
PGconn *
pg_connect(const Store *st, char *errbuf, size_t errlen)
{
    /* Defaults first: what the URI says wins. */
    const char *keys[] = {
        "application_name", "connect_timeout",  "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "dbname",          NULL};
    const char *values[] = {"queuefs", "10", "15", "5", "3", "30000", st->conninfo, NULL};
    PGconn *conn = PQconnectdbParams(keys, values, 1);
    if (PQstatus(conn) != CONNECTION_OK) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s", PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeProcessor(conn, quiet_notices, NULL);
    char sql[384];
    snprintf(sql, sizeof sql,
             "SET synchronous_commit = %s; SET idle_in_transaction_session_timeout = '60s';"
             " SET plan_cache_mode = force_generic_plan; SET jit = off;"
             " SET default_transaction_isolation = 'read committed';"
             " SET client_min_messages = warning",
             st->sync ? "on" : "off");
    PGresult *res = PQexec(conn, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s", PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

/* How many counter slots a table may have: one each for as many
 * connections as are open at once on the database (its rows made as they
 * are first written; the first row of 64 slots is made with the table). */
#define COUNTER_SLOTS 4096
/* A slot's rows, taken in turn, and the writes of each before the next. */
#define PG_COUNTER_TURNS 256
#define PG_COUNTER_RUN 32

int
pg_counter_row(PgConn *c)
{
    uint64_t turn = (c->counted++ / PG_COUNTER_RUN) % PG_COUNTER_TURNS;
    return c->slot + (int)turn * COUNTER_SLOTS;
}

/* Gives pool connection "c", just connected, a row of each table's
 * counters that no other connection open on the database adds to: the
 * first of them whose advisory lock (held for the connection's life) it
 * gets.  Rows shared between connections would make their transactions
 * wait for each other's commits, the flush included.  When every one is
 * taken, one by the process and connection, shared. */
static void
conn_slot(PgConn *c, int i)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT s FROM generate_series(0, %d) s"
             " WHERE pg_try_advisory_lock(%d, s) LIMIT 1",
             COUNTER_SLOTS - 1, PG_COUNTER_LOCKS);
    PGresult *res = PQexec(c->conn, sql);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        c->slot = atoi(PQgetvalue(res, 0, 0));
    else
        c->slot = (int)(((unsigned)getpid() * 2654435761u + (unsigned)i * 40503u) % COUNTER_SLOTS);
    PQclear(res);
}

/* Notes in "c", just connected, when its server started ("" when it
 * could not tell). */
static void
conn_started(PgConn *c)
{
    PGresult *res = PQexec(c->conn, "SELECT pg_postmaster_start_time()::text");
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    snprintf(c->started, sizeof c->started, "%s", ok ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
}

/* Readies pool connection "c" of "st", just connected: its row of the
 * counters, and when its server started — which may be another (a standby
 * promoted, a restart, a restore), whose transaction ids are not those the
 * claims' positions were found by (pg_hint.c). */
static void
conn_made(Store *st, PgConn *c)
{
    conn_slot(c, (int)(c - st->pool));
    conn_started(c);
    pg_hint_server(st, c);
}

/* Takes a connection of the pool for a transaction, opening one when none
 * is free and the pool has room, else waiting for one. */
PgConn *
pg_pool_take(Store *st)
{
    pthread_mutex_lock(&st->pool_mu);
    for (;;) {
        for (int i = 0; i < st->opened; i++)
            if (!st->pool[i].busy) {
                st->pool[i].busy = true;
                pthread_mutex_unlock(&st->pool_mu);
                return &st->pool[i];
            }
        if (st->opened < PG_POOL_MAX) {
            PgConn *c = &st->pool[st->opened];
            c->busy = true;
            st->opened++;
            pthread_mutex_unlock(&st->pool_mu);
            return c;
        }
        st->waiting++;
        pthread_cond_wait(&st->pool_cv, &st->pool_mu);
        st->waiting--;
    }
}

void
pg_pool_give(Store *st, PgConn *c)
{
    pthread_mutex_lock(&st->pool_mu);
    c->busy = false;
    pthread_cond_signal(&st->pool_cv);
    pthread_mutex_unlock(&st->pool_mu);
}

/* True when nothing came on idle connection "conn" since its last answer.
 * A server that closed it (a termination, a restart, a failover) has sent
 * its message and its end by then, and libpq would read the message alone
 * (as a notice) and still call the connection good: anything readable
 * makes a pooled connection suspect, so a transaction finds out before it
 * sends anything (one that carries its commit is never sent again). */
static bool
conn_quiet(PGconn *conn)
{
    struct pollfd p = {.fd = PQsocket(conn), .events = POLLIN | POLLRDHUP};
    int n;
    if (p.fd < 0)
        return false;
    while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR)
        ;
    return n == 0;
}

/* Makes sure "c" is connected (again), connecting anew when its
 * connection broke or may have (see conn_quiet): 0 or STORE_IO. */
int
pg_conn_ready(Store *st, PgConn *c, bool fresh)
{
    if (c->rolling_back) {
        /* The last transaction's ROLLBACK, answered by now as a rule. */
        PGresult *res;
        while ((res = PQgetResult(c->conn)))
            PQclear(res);
        c->rolling_back = false;
    }
    if (c->conn && !fresh && PQstatus(c->conn) == CONNECTION_OK && conn_quiet(c->conn))
        return 0;
    if (c->conn)
        PQfinish(c->conn);
    memset(c->prepared, 0, sizeof c->prepared);
    char msg[256] = "";
    c->conn = pg_connect(st, msg, sizeof msg);
    if (!c->conn) {
        store_error_detail_set("%s: %s", st->server, msg);
        return STORE_IO;
    }
    conn_made(st, c);
    pg_reap_forget(st);
    return 0;
}

/* ---- the store ---- */

/* "the server host:port/dbname" of "conn", for messages: never the
 * password. */
static char *
server_name(PGconn *conn)
{
    const char *host = PQhost(conn), *port = PQport(conn), *db = PQdb(conn);
    char buf[512];
    snprintf(buf, sizeof buf, "the server %s:%s/%s", host ? host : "", port ? port : "",
             db ? db : "");
    return strdup(buf);
}

static void
store_free(Store *st)
{
    for (int i = 0; i < st->opened; i++)
        if (st->pool[i].conn)
            PQfinish(st->pool[i].conn);
    pthread_mutex_destroy(&st->pool_mu);
    pthread_cond_destroy(&st->pool_cv);
    pthread_mutex_destroy(&st->change_mu);
    pthread_cond_destroy(&st->change_cv);
    pthread_cond_destroy(&st->notify_cv);
    pg_catalog_forget(st);
    pthread_mutex_destroy(&st->catalog_mu);
    pg_hint_forget(st, 0);
    pthread_mutex_destroy(&st->hint_mu);
    pg_reap_forget(st);
    pthread_mutex_destroy(&st->reap_mu);
    if (st->stop_pipe[0] >= 0) {
        close(st->stop_pipe[0]);
        close(st->stop_pipe[1]);
    }
    free(st->conninfo);
    free(st->server);
    free(st);
}

int
pg_open(const char *location, const StoreOptions *opts, Store **out, char *errbuf, size_t errlen)
{
    static const StoreOptions defaults = {.sync = true};
    if (!opts)
        opts = &defaults;
    *out = NULL;
    Store *st = calloc(1, sizeof *st);
    if (!st)
        abort();
    st->ops = &store_pg_ops;
    st->conninfo = strdup(location);
    st->sync = opts->sync;
    st->read_only = opts->read_only;
    st->stop_pipe[0] = st->stop_pipe[1] = -1;
    pthread_mutex_init(&st->pool_mu, NULL);
    pthread_cond_init(&st->pool_cv, NULL);
    pthread_mutex_init(&st->change_mu, NULL);
    pthread_cond_init(&st->change_cv, NULL);
    pthread_cond_init(&st->notify_cv, NULL);
    pthread_mutex_init(&st->catalog_mu, NULL);
    pthread_mutex_init(&st->hint_mu, NULL);
    pthread_mutex_init(&st->reap_mu, NULL);
    char msg[512] = "";
    PgConn *c = &st->pool[st->opened++];
    int rc = STORE_IO;
    if ((c->conn = pg_connect(st, msg, sizeof msg)) &&
        !(rc = pg_schema_ensure(c->conn, st->read_only, msg, sizeof msg)) &&
        pipe2(st->stop_pipe, O_CLOEXEC) != 0)
        rc = STORE_IO, snprintf(msg, sizeof msg, "pipe: %s", strerror(errno));
    if (!rc) {
        conn_made(st, c);
        st->server = server_name(c->conn);
        pg_notify_start(st);
        *out = st;
        return STORE_OK;
    }
    if (errbuf) {
        size_t n = strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
            msg[--n] = 0;
        char shown[512];
        store_location_shown(location, shown, sizeof shown);
        snprintf(errbuf, errlen, "%s: %s", shown, msg);
    }
    store_free(st);
    return rc;
}

void
pg_close(Store *st)
{
    pg_notify_stop(st);
    store_free(st);
}

void
pg_stats(Store *st, StoreStats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&st->pool_mu);
    out->writes = out->groups = st->writes;
    out->waiting = st->waiting;
    pthread_mutex_unlock(&st->pool_mu);
}

bool
pg_owner(StoreTxn *txn, uint32_t *uid, uint32_t *gid)
{
    (void)txn;
    *uid = (uint32_t)getuid(); /* as the mount shows it (see store_owner) */
    *gid = (uint32_t)getgid();
    return true;
}

const StoreOps store_pg_ops = {
    .name = "postgresql",
#define STORE_OP(ret, op, params, args, self) .op = pg_##op,
#define STORE_VOID_OP(op, params, args, self) .op = pg_##op,
#include "ops.def"
};
