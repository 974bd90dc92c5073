/* pg_conn.c — the PostgreSQL backend's connections, statements,
 * transactions and the store's opening and closing.
 *
 * A Store is a pool of up to PG_POOL_MAX connections, opened as they are
 * needed; a transaction takes one for its length.  A connection that broke
 * (the server restarted, the network went) is reconnected at the next
 * BEGIN; the transaction that saw it break fails with STORE_IO.  store_write
 * runs its function again after a deadlock or serialization failure.  A
 * commit that changed something moves store_changes() on and has the
 * other processes told (pg_notify.c). */
#include "pg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "be.h"

/* How often store_write runs "fn" after a deadlock or serialization failure. */
#define WRITE_RETRIES 8

/* ---- arguments and results ---- */

/* Binds the "len" bytes the next argument has in a->ints. */
static void
arg_fixed(PgArgs *a, int len)
{
    a->values[a->n] = (const char *)a->ints[a->n];
    a->lengths[a->n] = len;
    a->formats[a->n++] = 1;
}

void
pg_arg_i64(PgArgs *a, int64_t v)
{
    be_put64(a->ints[a->n], (uint64_t)v);
    arg_fixed(a, 8);
}

void
pg_arg_bytes(PgArgs *a, StoreBytes b)
{
    a->values[a->n] = b.len ? b.data : "";
    a->lengths[a->n] = (int)b.len;
    a->formats[a->n++] = 1;
}

void
pg_arg_bool(PgArgs *a, bool v)
{
    a->ints[a->n][0] = v;
    arg_fixed(a, 1);
}

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
    int64_t *const times[] = {&r->since, &r->written, &r->changed, &r->claimed,
                              &r->attempts, &r->hold, &r->claimed_until};
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
    r->group = pg_bytes(res, row, col + 14);
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
static int
status_of(PGconn *conn, const PGresult *res, bool *retry)
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
 * by the store's sync option, and no transaction left idle for long. */
PGconn *
pg_connect(const Store *st, char *errbuf, size_t errlen)
{
    /* Defaults first: what the URI says wins. */
    const char *keys[] = {"application_name", "connect_timeout", "keepalives_idle",
                          "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                          "dbname", NULL};
    const char *values[] = {"queuefs", "10", "15", "5", "3", "30000", st->conninfo, NULL};
    PGconn *conn = PQconnectdbParams(keys, values, 1);
    if (PQstatus(conn) != CONNECTION_OK) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s", PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeProcessor(conn, quiet_notices, NULL);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SET synchronous_commit = %s; SET idle_in_transaction_session_timeout = '60s';"
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

/* The counter row (of the 64 a table has) pool connection "i" of this
 * process adds to: the process's own run of them, so that connections
 * seldom share one. */
static int
counter_slot(int i)
{
    return (int)(((unsigned)getpid() * PG_POOL_MAX + (unsigned)i) % 64);
}

/* Takes a connection of the pool for a transaction, opening one when none
 * is free and the pool has room, else waiting for one. */
static PgConn *
pool_take(Store *st)
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
            c->slot = counter_slot(st->opened++);
            pthread_mutex_unlock(&st->pool_mu);
            return c;
        }
        st->waiting++;
        pthread_cond_wait(&st->pool_cv, &st->pool_mu);
        st->waiting--;
    }
}

static void
pool_give(Store *st, PgConn *c)
{
    pthread_mutex_lock(&st->pool_mu);
    c->busy = false;
    pthread_cond_signal(&st->pool_cv);
    pthread_mutex_unlock(&st->pool_mu);
}

/* Makes sure "c" is connected (again): 0 or STORE_IO. */
static int
conn_ready(Store *st, PgConn *c, bool fresh)
{
    if (c->rolling_back) {
        /* The last transaction's ROLLBACK, answered by now as a rule. */
        PGresult *res;
        while ((res = PQgetResult(c->conn)))
            PQclear(res);
        c->rolling_back = false;
    }
    if (c->conn && !fresh && PQstatus(c->conn) == CONNECTION_OK)
        return 0;
    if (c->conn)
        PQfinish(c->conn);
    memset(c->prepared, 0, sizeof c->prepared);
    char msg[256] = "";
    c->conn = pg_connect(st, msg, sizeof msg);
    if (!c->conn)
        store_error_detail_set("%s: %s", st->server, msg);
    return c->conn ? 0 : STORE_IO;
}

/* ---- statements ---- */

static void
results_keep(StoreTxn *txn, PGresult *res)
{
    if (txn->nresults == txn->capresults) {
        txn->capresults = txn->capresults ? 2 * txn->capresults : 8;
        txn->results = realloc(txn->results, txn->capresults * sizeof *txn->results);
        if (!txn->results)
            abort();
    }
    txn->results[txn->nresults++] = res;
}

void
pg_results_drop(StoreTxn *txn, size_t from)
{
    while (txn->nresults > from)
        PQclear(txn->results[--txn->nresults]);
}

/* Marks "txn" failed by "res" (may be NULL) and answers its status. */
static int
txn_failed(StoreTxn *txn, PGresult *res)
{
    bool retry;
    int rc = status_of(txn->c->conn, res, &retry);
    if (rc == STORE_IO)
        store_error_detail_set("%s: %s", txn->st->server, PQerrorMessage(txn->c->conn));
    txn->failed = true;
    txn->retryable = txn->retryable || retry;
    PQclear(res);
    return rc;
}

/* True for the statements that change nothing. */
static bool
stmt_reads(PgStmt s)
{
    switch (s) {
    case PG_TABLE_GET: case PG_TABLE_EACH: case PG_TABLE_NAMED: case PG_RECORD_GET:
    case PG_RECORD_LOCK: case PG_RECORD_FROM: case PG_RECORD_AFTER: case PG_COUNTS:
    case PG_WAITING: case PG_ID_HELD: case PG_HEALTH: case PG_GROUP_LOCK_OF:
    case PG_REFILE_LOCK: case PG_COUNTS_GROUPED: case PG_RATE_NEXT:
        return true;
    default:
        return false;
    }
}

PGresult *
pg_run(StoreTxn *txn, PgStmt s, const PgArgs *a, int *rc)
{
    PGconn *conn = txn->c->conn;
    char name[16];
    snprintf(name, sizeof name, "q%d", (int)s);
    if (txn->failed) {
        *rc = STORE_IO;
        return NULL;
    }
    uint64_t bit = (uint64_t)1 << (s % 64);
    if (!(txn->c->prepared[s / 64] & bit)) {
        PGresult *res = PQprepare(conn, name, pg_stmt_sql(s), 0, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            *rc = txn_failed(txn, res);
            return NULL;
        }
        PQclear(res);
        txn->c->prepared[s / 64] |= bit;
    }
    PGresult *res = PQexecPrepared(conn, name, a->n, a->values, a->lengths, a->formats, 1);
    ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        *rc = txn_failed(txn, res);
        return NULL;
    }
    if (txn->write && !stmt_reads(s) && (PQntuples(res) > 0 || atoi(PQcmdTuples(res)) > 0))
        txn->changed = true;
    results_keep(txn, res);
    *rc = STORE_OK;
    return res;
}

int
pg_run_sql(StoreTxn *txn, const char *sql)
{
    if (txn->failed)
        return STORE_IO;
    PGresult *res = PQexec(txn->c->conn, sql);
    ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        return txn_failed(txn, res);
    PQclear(res);
    return STORE_OK;
}

/* ---- transactions ---- */

/* Begins the transaction on "txn->c" and reads the server's now(). */
static int
txn_start(StoreTxn *txn)
{
    const char *sql = txn->write
                          ? "BEGIN ISOLATION LEVEL READ COMMITTED;"
                            " SELECT (extract(epoch FROM now()) * 1000000)::int8,"
                            " (SELECT version FROM queuefs.catalog)"
                          : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
                            " SELECT (extract(epoch FROM now()) * 1000000)::int8,"
                            " (SELECT version FROM queuefs.catalog)";
    int64_t sent = pg_local_now();
    PGresult *res = PQexec(txn->c->conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        PQclear(res);
        return STORE_IO;
    }
    txn->now = atoll(PQgetvalue(res, 0, 0)) * 1000;
    txn->catalog_version = atoll(PQgetvalue(res, 0, 1));
    PQclear(res);
    Store *st = txn->st;
    pthread_mutex_lock(&st->catalog_mu);
    if (txn->catalog_version > st->catalog_version) {
        pg_catalog_forget(st);
        st->catalog_version = txn->catalog_version;
    }
    pthread_mutex_unlock(&st->catalog_mu);
    /* The server began the transaction after this process sent its BEGIN
     * and before the answer came: timed from the sending, the offset puts
     * the server's clock ahead by the request's way there at most, never
     * behind by a slow answer — a wait for an instant then wakes a little
     * early and looks again rather than oversleeping. */
    __atomic_store_n(&txn->st->clock_offset, txn->now - sent, __ATOMIC_RELAXED);
    return STORE_OK;
}

int
pg_txn_begin(Store *st, bool write, StoreTxn **out)
{
    *out = NULL;
    if (write && st->read_only)
        return STORE_READONLY;
    PgConn *c = pool_take(st);
    StoreTxn *txn = calloc(1, sizeof *txn);
    if (!txn)
        abort();
    *txn = (StoreTxn){.ops = &store_pg_ops, .st = st, .c = c, .write = write};
    /* A pooled connection the server dropped is found out here: connect
     * again, once. */
    int rc = conn_ready(st, c, false);
    if (!rc && (rc = txn_start(txn)) && !(rc = conn_ready(st, c, true)))
        rc = txn_start(txn);
    if (rc) {
        if (c->conn)
            store_error_detail_set("%s: %s", st->server, PQerrorMessage(c->conn));
        pool_give(st, c);
        free(txn);
        return rc;
    }
    *out = txn;
    return STORE_OK;
}

static void
txn_free(StoreTxn *txn)
{
    pg_results_drop(txn, 0);
    free(txn->results);
    for (size_t i = 0; i < txn->nblobs; i++)
        free(txn->blobs[i]);
    free(txn->blobs);
    free(txn->fixes);
    pool_give(txn->st, txn->c);
    free(txn);
}

int
pg_txn_commit(StoreTxn *txn)
{
    Store *st = txn->st;
    int fixed = txn->failed ? STORE_OK : pg_groups_fix(txn);
    if (txn->failed) {
        pg_txn_abort(txn);
        return fixed ? fixed : STORE_IO;
    }
    /* The counters' changes, the notification and the commit: one round
     * trip. */
    size_t cap = 160 + (size_t)txn->ndeltas * 256, len = 0;
    char *sql = malloc(cap);
    if (!sql)
        abort();
    for (int i = 0; i < txn->ndeltas; i++) {
        const PgDelta *d = &txn->deltas[i];
        if (!d->claims && !d->releases && !d->lapses && !d->deletes)
            continue;
        len += (size_t)snprintf(
            sql + len, cap - len,
            "INSERT INTO queuefs.counts VALUES (%u, %d, %lld, %lld, %lld, %lld)"
            " ON CONFLICT (table_id, slot) DO UPDATE SET"
            " claims = queuefs.counts.claims + EXCLUDED.claims,"
            " releases = queuefs.counts.releases + EXCLUDED.releases,"
            " lapses = queuefs.counts.lapses + EXCLUDED.lapses,"
            " deletes = queuefs.counts.deletes + EXCLUDED.deletes;",
            d->table, txn->c->slot, (long long)d->claims, (long long)d->releases,
            (long long)d->lapses, (long long)d->deletes);
    }
    snprintf(sql + len, cap - len, "COMMIT");
    PGresult *res = PQexec(txn->c->conn, sql);
    free(sql);
    int rc = STORE_OK;
    if (PQresultStatus(res) != PGRES_COMMAND_OK || strcmp(PQcmdStatus(res), "COMMIT") != 0) {
        bool retry;
        rc = status_of(txn->c->conn, res, &retry);
        if (rc == STORE_OK)
            rc = STORE_IO;
        if (rc == STORE_IO)
            store_error_detail_set("%s: %s", st->server, PQerrorMessage(txn->c->conn));
        txn->retryable = retry;
        PQclear(PQexec(txn->c->conn, "ROLLBACK"));
    }
    PQclear(res);
    bool changed = txn->changed && rc == STORE_OK;
    txn_free(txn);
    if (changed)
        pg_changes_note(st, true);
    return rc;
}

void
pg_txn_abort(StoreTxn *txn)
{
    /* Not waited for: the next transaction on the connection reads its
     * answer (a read transaction's end costs no round trip). */
    PgConn *c = txn->c;
    if (PQstatus(c->conn) == CONNECTION_OK) {
        if (PQsendQuery(c->conn, "ROLLBACK"))
            c->rolling_back = true;
        else
            PQclear(PQexec(c->conn, "ROLLBACK"));
    }
    txn_free(txn);
}

void
pg_txn_use_reserve(StoreTxn *txn)
{
    (void)txn;   /* PostgreSQL keeps no reserve of its own */
}

int64_t
pg_txn_now(StoreTxn *txn)
{
    return txn->now;
}

int
pg_write(Store *st, int (*fn)(StoreTxn *txn, void *ctx), void *ctx)
{
    int rc = STORE_IO;
    pthread_mutex_lock(&st->pool_mu);
    st->writes++;
    pthread_mutex_unlock(&st->pool_mu);
    for (int attempt = 0; attempt < WRITE_RETRIES; attempt++) {
        StoreTxn *txn;
        if ((rc = pg_txn_begin(st, true, &txn)))
            return rc;
        rc = fn(txn, ctx);
        if (rc) {
            bool again = txn->retryable;
            pg_txn_abort(txn);
            if (again)
                continue;
            return rc;
        }
        /* A commit is not run again: it may have happened. */
        return pg_txn_commit(txn);
    }
    return rc;
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
    if (st->stop_pipe[0] >= 0) {
        close(st->stop_pipe[0]);
        close(st->stop_pipe[1]);
    }
    free(st->conninfo);
    free(st->server);
    free(st);
}

int
pg_open(const char *location, const StoreOptions *opts, Store **out, char *errbuf,
        size_t errlen)
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
    char msg[512] = "";
    PgConn *c = &st->pool[st->opened++];
    c->slot = counter_slot(0);
    int rc = STORE_IO;
    if ((c->conn = pg_connect(st, msg, sizeof msg)) &&
        !(rc = pg_schema_ensure(c->conn, st->read_only, msg, sizeof msg)) &&
        pipe2(st->stop_pipe, O_CLOEXEC) != 0)
        rc = STORE_IO, snprintf(msg, sizeof msg, "pipe: %s", strerror(errno));
    if (!rc) {
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
    (void)uid;
    (void)gid;
    return false;   /* a database has no owner among the mount's users */
}

const StoreOps store_pg_ops = {
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .now = pg_now,
    .changes = pg_changes,
    .wait_change = pg_wait_change,
    .wake = pg_wake,
    .stats = pg_stats,
    .owner = pg_owner,
    .txn_now = pg_txn_now,
    .write = pg_write,
    .txn_begin = pg_txn_begin,
    .txn_commit = pg_txn_commit,
    .txn_abort = pg_txn_abort,
    .txn_use_reserve = pg_txn_use_reserve,
    .table_create = pg_table_create,
    .table_redefine = pg_table_redefine,
    .table_get = pg_table_get,
    .table_each = pg_table_each,
    .table_drop = pg_table_drop,
    .table_rename = pg_table_rename,
    .record_get = pg_record_get,
    .record_create = pg_record_create,
    .record_update = pg_record_update,
    .record_delete = pg_record_delete,
    .record_each = pg_record_each,
    .claim = pg_claim,
    .release = pg_release,
    .release_all = pg_release_all,
    .touch = pg_touch,
    .retry = pg_retry,
    .unclaim = pg_unclaim,
    .queue_refile = pg_queue_refile,
    .queue_rate_next = pg_queue_rate_next,
    .queue_counts = pg_queue_counts,
    .queue_each_waiting = pg_queue_each_waiting,
    .identity_next = pg_identity_next,
    .identity_note = pg_identity_note,
    .dedup_check = pg_dedup_check,
    .health = pg_health,
};
