/* pgmq.c — bench/pgmq: the peer on PostgreSQL, for the benchmark only: pgmq's
 * queue table and its read and delete, re-created in plain SQL, driven by
 * worker processes with a connection each.
 *
 *     bench/pgmq [-w WORKERS] [-t SECONDS] [-n UNITS] [-b ROWS] MODE CONNINFO
 *
 * MODE is what each worker repeats:
 *
 *   setup         (one worker) drops and creates the table pgmq_jobs and its
 *                 index, as pgmq's create() makes a queue's; ops are none
 *   send          one INSERT of ROWS messages (default 1,000); ops are rows
 *   read-delete   pgmq's read of one message with a 30 s visibility timeout
 *                 (the oldest visible, locked and skipped when another
 *                 worker has it, read_ct + 1, vt moved on — one statement),
 *                 then its delete: a claim and a finish, two commits, as
 *                 queuefs's cat claim and rm are
 *   read-delete-batch
 *                 pgmq's read of ROWS (-b, default 1,000) messages at once
 *                 (read with qty), then one delete of them all by an array
 *                 of their ids (pgmq's delete of msg_ids[]); ops are
 *                 messages
 *   records-floor the floor of queuefs's own table on the same server (a
 *                 database queuefs's schema is in, its queue "jobs"
 *                 filled): the least a claim and a finish can be there —
 *                 one UPDATE of the first ready record in claim order,
 *                 locked and skipped when another worker has it, filed
 *                 held as queuefs's claim files it (attempts, hold,
 *                 deadline, wake), then its DELETE; two commits, with
 *                 none of queuefs's counters, clock, catalog check,
 *                 fences or answer.  What its cycle costs the server
 *                 bounds what any claim and finish on that table can
 *
 * A read that finds nothing ends that worker.  Prints the line run.h
 * describes. */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

typedef enum Mode { SETUP, SEND, READ_DELETE, READ_DELETE_BATCH, RECORDS_FLOOR } Mode;

typedef struct Config {
    Mode mode;
    const char *conninfo;
    long rows;
} Config;

typedef struct Worker {
    const Config *cfg;
    PGconn *conn;
} Worker;

static const char usage[] = "usage: bench/pgmq [-w WORKERS] [-t SECONDS] [-n UNITS] [-b ROWS] "
                            "setup|send|read-delete|read-delete-batch|records-floor CONNINFO\n";

/* pgmq's queue table (pgmq.q_<name>) and its index on vt. */
static const char setup_sql[] =
    "SET client_min_messages = warning; DROP TABLE IF EXISTS pgmq_jobs;"
    "CREATE TABLE pgmq_jobs (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY,"
    " read_ct int DEFAULT 0 NOT NULL, enqueued_at timestamptz DEFAULT now() NOT NULL,"
    " vt timestamptz NOT NULL, message jsonb);"
    "CREATE INDEX ON pgmq_jobs (vt ASC);";

/* pgmq's read(queue, vt => 30, qty => 1). */
static const char read_sql[] =
    "WITH cte AS (SELECT msg_id FROM pgmq_jobs WHERE vt <= clock_timestamp()"
    " ORDER BY msg_id ASC LIMIT 1 FOR UPDATE SKIP LOCKED)"
    " UPDATE pgmq_jobs m SET vt = clock_timestamp() + interval '30 seconds',"
    " read_ct = read_ct + 1 FROM cte WHERE m.msg_id = cte.msg_id"
    " RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message";

/* pgmq's read(queue, vt => 30, qty => $1). */
static const char read_batch_sql[] =
    "WITH cte AS (SELECT msg_id FROM pgmq_jobs WHERE vt <= clock_timestamp()"
    " ORDER BY msg_id ASC LIMIT $1::int FOR UPDATE SKIP LOCKED)"
    " UPDATE pgmq_jobs m SET vt = clock_timestamp() + interval '30 seconds',"
    " read_ct = read_ct + 1 FROM cte WHERE m.msg_id = cte.msg_id"
    " RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message";

/* pgmq's delete(queue, msg_ids[]). */
static const char delete_batch_sql[] =
    "DELETE FROM pgmq_jobs WHERE msg_id = ANY($1::bigint[]) RETURNING msg_id";

/* pgmq's delete(queue, msg_id). */
static const char delete_sql[] = "DELETE FROM pgmq_jobs WHERE msg_id = $1::bigint RETURNING msg_id";

/* pgmq's send_batch of $1 messages. */
static const char send_sql[] =
    "INSERT INTO pgmq_jobs (vt, message) SELECT clock_timestamp(), jsonb_build_object('n', g)"
    " FROM generate_series(1, $1::int) g";

/* records-floor's claim of the head of queue "jobs", and its finish. */
#define FLOOR_TABLE "(SELECT id FROM queuefs.tables WHERE name = 'jobs'::bytea)"
#define FLOOR_NOW "((extract(epoch FROM now()) * 1000000)::int8 * 1000)"
static const char floor_claim_sql[] =
    "UPDATE queuefs.records r SET state = 1, attempts = r.attempts + 1,"
    " hold = nextval('queuefs.holds'), claimed = " FLOOR_NOW ", changed = " FLOOR_NOW ","
    " claimed_until = " FLOOR_NOW " + 300000000000, wake = " FLOOR_NOW " + 300000000000"
    " WHERE r.table_id = " FLOOR_TABLE " AND r.key = (SELECT key FROM queuefs.records"
    "  WHERE table_id = " FLOOR_TABLE " AND state = 0 ORDER BY ord, seq LIMIT 1"
    "  FOR NO KEY UPDATE SKIP LOCKED) RETURNING r.key, r.value";
static const char floor_delete_sql[] =
    "DELETE FROM queuefs.records WHERE table_id = " FLOOR_TABLE " AND key = $1::bytea";

static long rows_option = 1000;

static int
take_option(int opt, const char *arg)
{
    if (opt != 'b')
        return -1;
    rows_option = atol(arg);
    return rows_option > 0 ? 0 : -1;
}

/* Fails with the server's message. */
static int
failed(PGconn *conn, PGresult *res, const char *what)
{
    fprintf(stderr, "bench/pgmq: %s: %s", what, PQerrorMessage(conn));
    PQclear(res);
    return -1;
}

static void *
setup(int i, void *arg)
{
    (void)i;
    Config *cfg = arg;
    PGconn *conn = PQconnectdb(cfg->conninfo);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "bench/pgmq: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    /* The statements of the mode's table, by name. */
    static const char *const pgmq_stmts[][2] = {{"read", read_sql},
                                                {"delete", delete_sql},
                                                {"send", send_sql},
                                                {"read_batch", read_batch_sql},
                                                {"delete_batch", delete_batch_sql},
                                                {NULL, NULL}};
    static const char *const floor_stmts[][2] = {
        {"read", floor_claim_sql}, {"delete", floor_delete_sql}, {NULL, NULL}};
    /* (queuefs's sessions plan so: pg_conn.c) */
    PGresult *res = PQexec(
        conn, cfg->mode == RECORDS_FLOOR ? "SET plan_cache_mode = force_generic_plan" : "SELECT 1");
    for (const char *const(*st)[2] = cfg->mode == RECORDS_FLOOR ? floor_stmts : pgmq_stmts;
         (*st)[0] && PQresultStatus(res) != PGRES_FATAL_ERROR; st++) {
        PQclear(res);
        res = PQprepare(conn, (*st)[0], (*st)[1], 0, NULL);
    }
    /* (the table may not be there yet in setup mode: nothing to prepare) */
    if (PQresultStatus(res) != PGRES_COMMAND_OK && cfg->mode != SETUP) {
        failed(conn, res, "prepare");
        PQfinish(conn);
        return NULL;
    }
    PQclear(res);
    Worker *w = calloc(1, sizeof *w);
    if (!w)
        abort();
    *w = (Worker){cfg, conn};
    return w;
}

/* Reads up to the batch's ROWS messages and deletes them by an array of
 * their ids: the messages, 0 when none was visible, -1 on an error. */
static long
read_delete_batch(Worker *w)
{
    char n[32];
    snprintf(n, sizeof n, "%ld", w->cfg->rows);
    const char *args[] = {n};
    PGresult *res = PQexecPrepared(w->conn, "read_batch", 1, args, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return failed(w->conn, res, "read");
    long got = PQntuples(res);
    /* the ids as an array literal: {1,2,3} */
    size_t cap = 2 + (size_t)got * 21, len = 0;
    char *ids = malloc(cap + 1);
    if (!ids)
        abort();
    ids[len++] = '{';
    for (long i = 0; i < got; i++)
        len += (size_t)snprintf(ids + len, cap + 1 - len, "%s%s", i ? "," : "",
                                PQgetvalue(res, (int)i, 0));
    ids[len++] = '}';
    ids[len] = 0;
    PQclear(res);
    if (!got) {
        free(ids);
        return 0;
    }
    const char *del[] = {ids};
    res = PQexecPrepared(w->conn, "delete_batch", 1, del, NULL, NULL, 0);
    free(ids);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != got)
        return failed(w->conn, res, "delete");
    PQclear(res);
    return got;
}

static long
unit(void *state)
{
    Worker *w = state;
    PGresult *res;
    switch (w->cfg->mode) {
    case SETUP:
        res = PQexec(w->conn, setup_sql);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            return failed(w->conn, res, "setup");
        PQclear(res);
        return 0;
    case SEND: {
        char n[32];
        snprintf(n, sizeof n, "%ld", w->cfg->rows);
        const char *args[] = {n};
        res = PQexecPrepared(w->conn, "send", 1, args, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            return failed(w->conn, res, "send");
        PQclear(res);
        return w->cfg->rows;
    }
    case READ_DELETE:
    case RECORDS_FLOOR: {
        res = PQexecPrepared(w->conn, "read", 0, NULL, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK)
            return failed(w->conn, res, "read");
        if (PQntuples(res) == 0) {
            PQclear(res);
            return 0;
        }
        char id[2 * 1024 + 3]; /* a message's id, or a record's key in hex */
        snprintf(id, sizeof id, "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
        const char *args[] = {id};
        res = PQexecPrepared(w->conn, "delete", 1, args, NULL, NULL, 0);
        if (w->cfg->mode == RECORDS_FLOOR
                ? PQresultStatus(res) != PGRES_COMMAND_OK || strcmp(PQcmdTuples(res), "1") != 0
                : PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
            return failed(w->conn, res, "delete");
        PQclear(res);
        return 1;
    }
    case READ_DELETE_BATCH: return read_delete_batch(w);
    }
    return -1;
}

static int
teardown(void *state)
{
    Worker *w = state;
    PQfinish(w->conn);
    free(w);
    return 0;
}

/* Runs the workers against the server and prints their line (run.h). */
int
main(int argc, char **argv)
{
    Config cfg = {0};
    BenchSpec spec = BENCH_SPEC_DEFAULT(&cfg);
    int first = bench_parse_options(argc, argv, &spec, "b:", take_option, usage, 2);
    if (first < 0)
        return 2;
    const char *mode = argv[first];
    cfg.mode = strcmp(mode, "setup") == 0               ? SETUP
               : strcmp(mode, "send") == 0              ? SEND
               : strcmp(mode, "read-delete") == 0       ? READ_DELETE
               : strcmp(mode, "read-delete-batch") == 0 ? READ_DELETE_BATCH
               : strcmp(mode, "records-floor") == 0     ? RECORDS_FLOOR
                                                        : (Mode)-1;
    if ((int)cfg.mode < 0) {
        fputs(usage, stderr);
        return 2;
    }
    cfg.conninfo = argv[first + 1];
    cfg.rows = rows_option;
    return bench_run_and_print(&spec);
}
