/* pg_txn.c — the PostgreSQL backend's transactions and statements.
 *
 * A write transaction sends nothing until its first statement, and then
 * BEGIN, the read of the server's clock and that statement in one round
 * trip (a pipeline); what it did before that from cached definitions is
 * checked against the catalog's version then, and run again when stale.
 * Its counters and COMMIT go in one round trip too — or, when the caller
 * said that first statement is its last change (store_txn_last) and it is
 * one that can count itself (the claim of the head, a delete), it goes
 * alone, without BEGIN, as one implicit transaction the server commits at
 * the pipeline's end, and answers the clock's read itself: a claim or a
 * finish is then one round trip and one statement (a second round trip
 * reads the clock when it answers no row).  A statement run in a
 * savepoint of its own (a create of many records: pg_run_undoable) goes
 * with the savepoint and its release, and with the COMMIT when the caller
 * said it is the last change.  A read transaction begins at once.  The
 * transaction that finds its connection broken when it begins connects
 * again, once; one that saw it break later fails with STORE_IO.
 * store_write runs its function again after a deadlock or serialization
 * failure.  A commit that may have made something claimable moves
 * store_changes() on and has the other processes told (pg_notify.c). */
#include "pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How often store_write runs "fn" after a deadlock or serialization failure. */
#define WRITE_RETRIES 8

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
    int rc = pg_status_of(txn->c->conn, res, &retry);
    /* (In a pipeline the connection's message is empty: the result's says why.) */
    if (rc == STORE_IO)
        store_error_detail_set("%s: %s", txn->st->server,
                               res ? PQresultErrorMessage(res) : PQerrorMessage(txn->c->conn));
    txn->failed = true;
    txn->retryable = txn->retryable || retry;
    PQclear(res);
    return rc;
}

/* The name statement "s" is prepared under, into "name" (16 bytes). */
static void
stmt_name(PgStmt s, char *name)
{
    snprintf(name, 16, "q%d", (int)s);
}

static bool
stmt_prepared(const PgConn *c, PgStmt s)
{
    return c->prepared[s / 64] & ((uint64_t)1 << (s % 64));
}

static void
stmt_mark_prepared(PgConn *c, PgStmt s)
{
    c->prepared[s / 64] |= (uint64_t)1 << (s % 64);
}

/* Marks "txn" changed when statement "s" answered "res" with a change that
 * may make something claimable (PG_TELLS), and keeps the result. */
static void
stmt_done(StoreTxn *txn, PgStmt s, PGresult *res)
{
    if (txn->write && pg_stmt_kind(s) == PG_TELLS &&
        (PQntuples(res) > 0 || atoi(PQcmdTuples(res)) > 0))
        txn->changed = true;
    results_keep(txn, res);
}

/* True when "d" changes no counter. */
static bool
delta_empty(const PgDelta *d)
{
    return !d->claims && !d->releases && !d->lapses && !d->deletes;
}

/* True when "txn" has nothing to add at its commit: no counters, no group
 * to put right. */
static bool
txn_nothing_pending(const StoreTxn *txn)
{
    for (int i = 0; i < txn->ndeltas; i++)
        if (!delta_empty(&txn->deltas[i]))
            return false;
    return txn->nfixes == 0;
}

/* After a commit that went with a statement: what may still run in "txn"
 * — anything, in a transaction begun afresh, when that statement changed
 * nothing; else nothing (store_txn_last promised so). */
static int
txn_after_commit(StoreTxn *txn)
{
    if (txn->committed_changes) {
        store_error_detail_set("%s: a statement after the transaction's last", txn->st->server);
        return STORE_IO;
    }
    txn->committed = false;
    return STORE_OK;
}

static int txn_begin_with(StoreTxn *txn, PgStmt s, const PgBound *a, PGresult **out, bool commit);

PGresult *
pg_run(StoreTxn *txn, const PgStmt *args, int *rc)
{
    if (txn->failed || (txn->committed && (*rc = txn_after_commit(txn)))) {
        *rc = STORE_IO;
        return NULL;
    }
    PgStmt s = *args;
    PgBound a;
    pg_stmt_bind(args, &a);
    bool commit = pg_txn_commits_with_next(txn) && pg_stmt_kind(s) == PG_COMMITS;
    txn->last = false;
    PGresult *res;
    if (!txn->started) {
        if ((*rc = txn_begin_with(txn, s, &a, &res, commit)))
            return NULL;
    } else {
        PGconn *conn = txn->c->conn;
        char name[16];
        stmt_name(s, name);
        if (!stmt_prepared(txn->c, s)) {
            res = PQprepare(conn, name, pg_stmt_sql(s), 0, NULL);
            if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                *rc = txn_failed(txn, res);
                return NULL;
            }
            PQclear(res);
            stmt_mark_prepared(txn->c, s);
        }
        res = PQexecPrepared(conn, name, a.n, a.values, a.lengths, a.formats, 1);
    }
    ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        *rc = txn_failed(txn, res);
        return NULL;
    }
    stmt_done(txn, s, res);
    *rc = STORE_OK;
    return res;
}

int
pg_run_sql(StoreTxn *txn, const char *sql)
{
    if (txn->committed && txn_after_commit(txn))
        return STORE_IO;
    if (!txn->started && !txn->failed)
        pg_txn_now(txn); /* never outside its transaction */
    if (txn->failed)
        return STORE_IO;
    PGresult *res = PQexec(txn->c->conn, sql);
    ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        return txn_failed(txn, res);
    PQclear(res);
    return STORE_OK;
}

/* ---- pipelines: several statements, one round trip ---- */

/* The most statements one pipeline sends (a commit's: the counters of
 * PG_DELTAS_MAX tables and COMMIT). */
#define PIPE_MAX (PG_DELTAS_MAX + 4)

/* Statements sent together and answered together. */
typedef struct Pipe {
    PgConn *c;
    int n;
    PgStmt preparing[PIPE_MAX]; /* the statement a prepare at [i] is of, or
                                     * PG_STMT_COUNT for any other statement */
    PGresult *res[PIPE_MAX];
    PGresult *extra; /* an answer after the last statement's: the
                                     * failure of an implicit transaction's commit */
    bool ok;         /* every send succeeded */
    char why[256];   /* what the connection said when it failed */
} Pipe;

static void
pipe_open(Pipe *p, PgConn *c)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    p->ok = PQenterPipelineMode(c->conn) == 1;
}

/* Sends "sql" (no arguments), its results binary. */
static void
pipe_sql(Pipe *p, const char *sql)
{
    if (p->ok && p->n < PIPE_MAX) {
        p->preparing[p->n++] = PG_STMT_COUNT;
        p->ok = PQsendQueryParams(p->c->conn, sql, 0, NULL, NULL, NULL, NULL, 1) == 1;
    } else {
        p->ok = false;
    }
}

/* Sends statement "s" with "a", preparing it first when the connection has
 * not; the index of its result once answered (pipe_end). */
static int
pipe_stmt(Pipe *p, PgStmt s, const PgBound *a)
{
    char name[16];
    stmt_name(s, name);
    bool preparing = stmt_prepared(p->c, s); /* or prepared earlier in this pipeline */
    for (int i = 0; i < p->n && !preparing; i++)
        preparing = p->preparing[i] == s;
    if (p->ok && !preparing && p->n < PIPE_MAX) {
        p->preparing[p->n++] = s;
        p->ok = PQsendPrepare(p->c->conn, name, pg_stmt_sql(s), 0, NULL) == 1;
    }
    if (!p->ok || p->n == PIPE_MAX) {
        p->ok = false;
        return 0;
    }
    p->preparing[p->n++] = PG_STMT_COUNT;
    p->ok = PQsendQueryPrepared(p->c->conn, name, a->n, a->values, a->lengths, a->formats, 1) == 1;
    return p->n - 1;
}

/* Sends the pipeline's end and reads every answer up to it, in order:
 * true when the connection carried them all (each may still be an error).
 * A statement whose prepare failed is answered by that failure. */
static bool
pipe_end(Pipe *p)
{
    PGconn *conn = p->c->conn;
    bool ok = p->ok && PQpipelineSync(conn) == 1;
    int got = 0, nulls = 0;
    while (ok) {
        PGresult *r = PQgetResult(conn);
        if (!r) {
            /* Each answer ends with a NULL; two in a row, or one on a
             * broken connection, is a pipeline that will not finish. */
            ok = ++nulls < 2 && PQstatus(conn) == CONNECTION_OK;
            continue;
        }
        nulls = 0;
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            break;
        }
        if (got < p->n)
            p->res[got++] = r;
        else if (!p->extra)
            p->extra = r;
        else
            PQclear(r);
    }
    ok = ok && got == p->n;
    if (PQexitPipelineMode(conn) != 1)
        ok = false;
    if (!ok) {
        /* Answers may still be on their way: the connection is of no
         * further use (the next transaction connects again). */
        snprintf(p->why, sizeof p->why, "%s", PQerrorMessage(conn));
        PQfinish(conn);
        p->c->conn = NULL;
    }
    for (int i = 0; ok && i < p->n; i++) {
        if (p->preparing[i] == PG_STMT_COUNT)
            continue;
        if (PQresultStatus(p->res[i]) == PGRES_COMMAND_OK) {
            stmt_mark_prepared(p->c, p->preparing[i]);
        } else if (i + 1 < p->n) {
            PQclear(p->res[i + 1]); /* aborted: its prepare's failure says why */
            p->res[i + 1] = p->res[i];
            p->res[i] = NULL;
        }
    }
    return ok;
}

/* Frees the answers "p" holds but "keep" (an index, or -1). */
static void
pipe_free(Pipe *p, int keep)
{
    for (int i = 0; i < p->n; i++)
        if (i != keep)
            PQclear(p->res[i]);
    PQclear(p->extra);
}

/* The savepoint pg_run_undoable sets. */
#define UNDO_POINT "queuefs_undo"

PGresult *
pg_run_undoable(StoreTxn *txn, const PgStmt *args, bool settled, int *rc)
{
    if (!txn->started)
        pg_txn_now(txn); /* begun first: its instant is bound already */
    if (txn->failed || !txn->started || (txn->committed && (*rc = txn_after_commit(txn)))) {
        *rc = STORE_IO;
        return NULL;
    }
    bool commit = settled && txn->last && txn_nothing_pending(txn);
    txn->last = false;
    PgStmt s = *args;
    PgBound a;
    pg_stmt_bind(args, &a);
    Pipe p;
    pipe_open(&p, txn->c);
    pipe_sql(&p, "SAVEPOINT " UNDO_POINT);
    int at = pipe_stmt(&p, s, &a);
    pipe_sql(&p, "RELEASE " UNDO_POINT);
    if (commit)
        pipe_sql(&p, "COMMIT");
    if (!pipe_end(&p)) {
        /* (not sent again, even on a new connection: it may have committed) */
        store_error_detail_set("%s: %s", txn->st->server, p.why);
        txn->failed = true;
        pipe_free(&p, -1);
        *rc = STORE_IO;
        return NULL;
    }
    PGresult *res = p.res[at], *failed = NULL;
    for (int i = 0; i < p.n && !failed; i++)
        if (p.res[i] && PQresultStatus(p.res[i]) != PGRES_COMMAND_OK &&
            PQresultStatus(p.res[i]) != PGRES_TUPLES_OK)
            failed = p.res[i]; /* (NULL: a prepare whose failure is the next's) */
    const char *state = failed ? PQresultErrorField(failed, PG_DIAG_SQLSTATE) : NULL;
    txn->started = PQtransactionStatus(txn->c->conn) != PQTRANS_IDLE;
    if (failed == res && state && !strcmp(state, "23505") && txn->started) {
        /* refused: undone (a COMMIT after it was not carried out), and the
         * transaction goes on */
        pipe_free(&p, -1);
        *rc = pg_run_sql(txn, "ROLLBACK TO " UNDO_POINT "; RELEASE " UNDO_POINT);
        if (!*rc)
            *rc = STORE_EXISTS;
        return NULL;
    }
    if (!failed && commit && strcmp(PQcmdStatus(p.res[p.n - 1]), "COMMIT") != 0)
        failed = p.res[p.n - 1];
    if (failed) {
        for (int i = 0; i < p.n; i++)
            if (p.res[i] == failed)
                p.res[i] = NULL;
        pipe_free(&p, -1);
        *rc = txn_failed(txn, failed);
        if (!*rc)
            *rc = STORE_IO;
        return NULL;
    }
    pipe_free(&p, at);
    stmt_done(txn, s, res);
    if (commit) {
        txn->committed = true;
        txn->committed_changes = PQntuples(res) > 0 || atoi(PQcmdTuples(res)) > 0;
    }
    *rc = STORE_OK;
    return res;
}

/* ---- transactions ---- */

/* Notes what the clock's read of "txn" answered, in its columns "col" and
 * "col" + 1 of row 0 of "res" (TXN_CLOCK's, or the last two of a
 * PG_COMMITS statement's): its instant, the catalog's version (a cache
 * older than that is forgotten, and a transaction that used it before
 * it began is run again), the server's clock, read at "sent" by this
 * process's.  0, or STORE_IO. */
static int
txn_clocked(StoreTxn *txn, const PGresult *res, int col, int64_t sent)
{
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) < 1 ||
        PQnfields(res) < col + 2 || PQftype(res, col) != PG_OID_INT8 ||
        PQftype(res, col + 1) != PG_OID_INT8)
        return STORE_IO;
    txn->now = pg_i64(res, 0, col);
    int64_t version = pg_i64(res, 0, col + 1);
    Store *st = txn->st;
    pthread_mutex_lock(&st->catalog_mu);
    if (version > st->catalog_version) {
        pg_catalog_forget(st);
        st->catalog_version = version;
    }
    pthread_mutex_unlock(&st->catalog_mu);
    bool stale = txn->cache_used && version != txn->catalog_version;
    txn->catalog_version = version;
    /* The server began the transaction after this process sent its BEGIN
     * and before the answer came: timed from the sending, the offset puts
     * the server's clock ahead by the request's way there at most, never
     * behind by a slow answer — a wait for an instant then wakes a little
     * early and looks again rather than oversleeping. */
    __atomic_store_n(&st->clock_offset, txn->now - sent, __ATOMIC_RELAXED);
    if (stale) {
        /* What it did from the cache may be of definitions since changed:
         * store_write runs it again, reading them afresh. */
        txn->failed = txn->retryable = true;
        store_error_detail_set("%s: a definition changed meanwhile", st->server);
        return STORE_IO;
    }
    return STORE_OK;
}

/* Notes how the implicit transaction of statement "stmt" (its answer, a
 * success) ended: committed, or failed with the status of "failure", an
 * answer after the statement's (NULL: none). */
static int
txn_committed(StoreTxn *txn, const PGresult *stmt, PGresult *failure)
{
    if (!failure) {
        txn->committed = true;
        txn->committed_changes = PQntuples(stmt) > 0 || atoi(PQcmdTuples((PGresult *)stmt)) > 0;
        return STORE_OK;
    }
    int rc = txn_failed(txn, failure);
    return rc ? rc : STORE_IO;
}

/* What TXN_CLOCK is bound with: nothing. */
static const PgBound no_args = {0};

/* The clock's read (TXN_CLOCK) of "txn" as a statement of its own, sent
 * at "sent", outside any transaction; txn_clocked's value. */
static int
txn_clock_apart(StoreTxn *txn, int64_t sent)
{
    Pipe p;
    pipe_open(&p, txn->c);
    int clock = pipe_stmt(&p, PG_TXN_CLOCK, &no_args);
    bool carried = pipe_end(&p);
    int rc = carried ? txn_clocked(txn, p.res[clock], 0, sent) : STORE_IO;
    if (rc && !txn->failed) {
        store_error_detail_set("%s: %s", txn->st->server,
                               carried ? PQresultErrorMessage(p.res[clock]) : p.why);
        txn->failed = true;
    }
    pipe_free(&p, -1);
    return rc;
}

/* Notes the clock of "txn", whose statement "res" (PG_COMMITS, sent at
 * "sent") began and committed it: the last two columns of its first row,
 * or when it answered none, a read of the clock after it (on a version
 * moved meanwhile, the statement, which changed nothing, runs again with
 * the transaction). */
static int
txn_clocked_by(StoreTxn *txn, const PGresult *res, int64_t sent)
{
    return PQntuples(res) > 0 ? txn_clocked(txn, res, PQnfields(res) - 2, sent)
                              : txn_clock_apart(txn, sent);
}

/* Begins "txn" on its connection, in one round trip: BEGIN, the clock's
 * read and, when "out" is not NULL, statement "s" with "a", whose answer
 * (whatever its status) goes to "*out" — or, with "commit" (which needs
 * a PG_COMMITS statement), "s" alone, whose rows answer the clock too: a
 * pipeline without BEGIN is one implicit transaction, committed at its
 * end (READ COMMITTED, the sessions' default: pg_conn.c).  0; STORE_IO
 * with "*broken" when the connection failed before the answers came
 * (without "commit", nothing happened: it may be connected again and
 * begun again); or the status of a failed BEGIN, clock or commit. */
static int
txn_begin_once(StoreTxn *txn, PgStmt s, const PgBound *a, PGresult **out, bool commit, bool *broken,
               char why[256])
{
    const char *begin = txn->write ? "BEGIN ISOLATION LEVEL READ COMMITTED"
                                   : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    Pipe p;
    int64_t sent = pg_local_now();
    pipe_open(&p, txn->c);
    int opened = -1;
    if (!commit) {
        pipe_sql(&p, begin);
        opened = p.n - 1;
    }
    int clock = commit ? -1 : pipe_stmt(&p, PG_TXN_CLOCK, &no_args);
    int at = out ? pipe_stmt(&p, s, a) : -1;
    *broken = !pipe_end(&p);
    if (*broken)
        memcpy(why, p.why, sizeof p.why);
    int rc = STORE_IO;
    if (*broken)
        ;
    else if (opened >= 0 && PQresultStatus(p.res[opened]) != PGRES_COMMAND_OK)
        rc = txn_failed(txn, p.res[opened]), p.res[opened] = NULL;
    else if (clock < 0)
        rc = STORE_OK; /* read from the statement's answer, below */
    else if (PQresultStatus(p.res[clock]) != PGRES_TUPLES_OK)
        rc = txn_failed(txn, p.res[clock]), p.res[clock] = NULL;
    else
        rc = txn_clocked(txn, p.res[clock], 0, sent);
    if (rc == STORE_OK && txn->failed)
        rc = STORE_IO;
    /* Begun, unless implicit ("commit": then ended) or BEGIN failed; a ROLLBACK ends
     * it, whatever else failed. */
    if (!*broken)
        txn->started = PQtransactionStatus(txn->c->conn) != PQTRANS_IDLE;
    if (!*broken && commit && PQresultStatus(p.res[at]) == PGRES_TUPLES_OK) {
        /* The statement was carried out: how its transaction ended stands,
         * even when the clock finds the cache stale (the statement then
         * changed nothing: CATALOG_IS). */
        int committed = txn_committed(txn, p.res[at], p.extra);
        p.extra = NULL;
        if (!rc)
            rc = committed;
        if (!rc)
            rc = txn_clocked_by(txn, p.res[at], sent);
    }
    if (!rc && out)
        *out = p.res[at];
    pipe_free(&p, rc || !out ? -1 : at);
    return rc;
}

/* txn_begin_once, and once more on a connection made again when the
 * pooled one had broken (the server dropped it while it was idle). */
static int
txn_begin_with(StoreTxn *txn, PgStmt s, const PgBound *a, PGresult **out, bool commit)
{
    bool broken;
    char why[256] = "";
    int rc = txn_begin_once(txn, s, a, out, commit, &broken, why);
    /* (Not sent again when it carried its commit: it may have committed.) */
    if (rc && broken && !commit) {
        if ((rc = pg_conn_ready(txn->st, txn->c, true))) {
            txn->failed = true; /* the server is away: pg_conn_ready said why */
            return rc;
        }
        rc = txn_begin_once(txn, s, a, out, commit, &broken, why);
    }
    if (rc) {
        if (broken)
            store_error_detail_set("%s: %s", txn->st->server, why);
        else if (!txn->failed)
            store_error_detail_set("%s: %s", txn->st->server, PQerrorMessage(txn->c->conn));
        txn->failed = true;
    }
    return rc;
}

int
pg_txn_begin(Store *st, bool write, StoreTxn **out)
{
    *out = NULL;
    if (write && st->read_only)
        return STORE_READONLY;
    PgConn *c = pg_pool_take(st);
    StoreTxn *txn = calloc(1, sizeof *txn);
    if (!txn)
        abort();
    *txn = (StoreTxn){.ops = &store_pg_ops, .st = st, .c = c, .write = write};
    pthread_mutex_lock(&st->catalog_mu);
    txn->catalog_version = st->catalog_version; /* assumed until it begins */
    pthread_mutex_unlock(&st->catalog_mu);
    int rc = pg_conn_ready(st, c, false);
    /* A write transaction begins with its first statement (store_write
     * runs it again when what it read from the cache before was stale); a
     * read transaction, which nothing runs again, begins now. */
    if (!rc && !write)
        rc = txn_begin_with(txn, PG_STMT_COUNT, NULL, NULL, false);
    if (rc) {
        /* A BEGIN answered is rolled back: the pooled connection must not
         * stay in a failed transaction. */
        pg_txn_abort(txn);
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
    pg_pool_give(txn->st, txn->c);
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
    if (!txn->started) {
        /* It asked the server nothing, or its commit went with its last
         * statement: nothing to commit. */
        bool changed = txn->changed;
        txn_free(txn);
        if (changed)
            pg_changes_note(st, true);
        return STORE_OK;
    }
    /* The counters' changes and the commit: one round trip. */
    Pipe p;
    PgBound args[PG_DELTAS_MAX];
    pipe_open(&p, txn->c);
    for (int i = 0; i < txn->ndeltas; i++) {
        const PgDelta *d = &txn->deltas[i];
        if (delta_empty(d))
            continue;
        pg_stmt_bind(PG_ARGS(COUNT_ADD, .table = d->table, .slot = pg_counter_row(txn->c),
                             .claims = d->claims, .releases = d->releases, .lapses = d->lapses,
                             .deletes = d->deletes),
                     &args[i]);
        pipe_stmt(&p, PG_COUNT_ADD, &args[i]);
    }
    pipe_sql(&p, "COMMIT");
    int rc = STORE_OK;
    bool carried = pipe_end(&p);
    const PGresult *failed = NULL;
    for (int i = 0; carried && i < p.n && !failed; i++)
        if (p.res[i] && PQresultStatus(p.res[i]) != PGRES_COMMAND_OK)
            failed = p.res[i];
    const PGresult *end = carried ? p.res[p.n - 1] : NULL;
    if (!carried || failed || strcmp(PQcmdStatus((PGresult *)end), "COMMIT") != 0) {
        /* A COMMIT after a failure in its pipeline is skipped, and the
         * transaction stays open, failed, until a ROLLBACK; a COMMIT of a
         * transaction failed earlier answers ROLLBACK. */
        bool retry = false;
        rc = carried ? pg_status_of(txn->c->conn, failed, &retry) : STORE_IO;
        if (rc == STORE_OK)
            rc = STORE_IO;
        if (rc == STORE_IO)
            store_error_detail_set("%s: %s", st->server,
                                   failed    ? PQresultErrorMessage(failed)
                                   : carried ? PQerrorMessage(txn->c->conn)
                                             : p.why);
        /* (A commit is not run again: it may have happened.) */
        if (txn->c->conn && PQtransactionStatus(txn->c->conn) != PQTRANS_IDLE)
            PQclear(PQexec(txn->c->conn, "ROLLBACK"));
    }
    pipe_free(&p, -1);
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
    if (txn->started && PQstatus(c->conn) == CONNECTION_OK) {
        if (PQsendQuery(c->conn, "ROLLBACK"))
            c->rolling_back = true;
        else
            PQclear(PQexec(c->conn, "ROLLBACK"));
    }
    txn_free(txn);
}

void
pg_txn_last(StoreTxn *txn)
{
    txn->last = txn->write;
}

void
pg_txn_lazy(StoreTxn *txn)
{
    (void)txn; /* holders may be on other hosts: every write stays durable */
}

bool
pg_txn_commits_with_next(const StoreTxn *txn)
{
    return txn->last && !txn->started && !txn->failed && !txn->committed &&
           txn_nothing_pending(txn);
}

int64_t
pg_txn_version_to_check(const StoreTxn *txn)
{
    return !txn->started && txn->cache_used ? txn->catalog_version : 0;
}

void
pg_txn_use_reserve(StoreTxn *txn)
{
    (void)txn; /* PostgreSQL keeps no reserve of its own */
}

int64_t
pg_txn_now(StoreTxn *txn)
{
    /* Its instant is the server's: asking for it begins the transaction,
     * so that it can be bound to the statements that follow. */
    if (!txn->started && !txn->failed && !txn->committed)
        txn_begin_with(txn, PG_STMT_COUNT, NULL, NULL, false);
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
        /* What it did from cached definitions alone, asking the server
         * nothing — succeeded, or failed, say for a permission a definition
         * since changed elsewhere gives — stands once the catalog is known
         * not to have moved; else it runs again. */
        if (!txn->started && !txn->committed && txn->cache_used) {
            pg_txn_now(txn);
            if (txn->failed && !rc)
                rc = STORE_IO;
        }
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
