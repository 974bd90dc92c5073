/* pg_internal.h — what the PostgreSQL backend's files share.
 *
 * The store is the database a postgresql:// URI names; queuefs keeps its
 * tables in the schema "queuefs" there (store/pg/pg_schema.c).  A Store is a
 * pool of connections: each transaction takes one for its length, so
 * concurrent requests commit concurrently and PostgreSQL groups their
 * commits itself.  Every statement is prepared once a connection, binds its
 * arguments in binary and reads binary results; instants are int8
 * nanoseconds since the Unix epoch, and the only clock is the server's
 * (a transaction's instant is its now()).
 *
 * A queue record's place is two columns of its row, kept by SQL functions
 * the schema defines: "state" (NULL: a collection's record; 0 ready; 1
 * waiting until "wake"; 2 retired; 3 parked: ready, but behind the next
 * record of its AT MOST … PER group; 4 done: finished on a queue that
 * KEEPs, "completed_at" set) and "dead" (at its ATTEMPTS ceiling when it
 * was filed).  The claim's partial indexes cover state 0 (in claim order)
 * and state 1 (in wake order), and the reaping's state 4 (in completed_at
 * order: the queue's writes remove the expired ones, pg_stmts.def's
 * REAPED); a group's ready records are indexed by group, and its row of
 * queuefs.groups locks it (store/pg/pg_schema.c).
 *
 * Only the files store/pg_*.c include libpq-fe.h. */
#ifndef QUEUEFS_PG_INTERNAL_H
#define QUEUEFS_PG_INTERNAL_H

#ifndef QUEUEFS_PG_BACKEND
#error \
    "the PostgreSQL backend's own header: only store/pg/ includes it (built with -DQUEUEFS_PG_BACKEND)"
#endif

#include "backend.h"
#include "queue.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* What a transaction makes of what a statement did (pg_stmts.def says
 * each kind's meaning, pg_txn.c acts on it). */
typedef enum PgKind { PG_READS, PG_TELLS, PG_QUIET, PG_COMMITS } PgKind;

/* The statements of the backend (pg_stmts.def), prepared per connection on
 * first use. */
typedef enum PgStmt {
#define PG_STMT(name, kind, args, sql) PG_##name,
#include "pg_stmts.def"
    PG_STMT_COUNT
} PgStmt;

/* The arguments of statement NAME by name (pg_stmts.def's ARGS):
 * PgArgs_NAME, its first member the statement it is of. */
#define I64(name) int64_t name;
#define BYTES(name) StoreBytes name;
#define BOOL(name) bool name;
#define PG_STMT(name, kind, args, sql) \
    typedef struct PgArgs_##name { \
        PgStmt stmt; \
        args \
    } PgArgs_##name;
#include "pg_stmts.def"

/* Statement NAME's arguments, given as designated initialisers of
 * PgArgs_NAME (".table = id, .key = k": one left out is 0, false or no
 * bytes): a pointer to them that lives to the end of the enclosing
 * block, for pg_run and pg_stmt_bind. */
#define PG_ARGS(NAME, ...) (&(const PgArgs_##NAME){.stmt = PG_##NAME, __VA_ARGS__}.stmt)
/* Runs statement NAME with those arguments: pg_run's answer. */
#define PG_RUN(txn, NAME, rc, ...) pg_run((txn), PG_ARGS(NAME, __VA_ARGS__), (rc))

/* One pooled connection. */
typedef struct PgConn {
    PGconn *conn;
    int slot;                                     /* its rows of each table's counters */
    uint64_t counted;                             /* writes of them (pg_counter_row) */
    uint64_t prepared[(PG_STMT_COUNT + 63) / 64]; /* statements prepared on it */
    bool busy;                                    /* a transaction has it */
    bool rolling_back;                            /* a ROLLBACK was sent, its answer not read */
    char started[64]; /* when its server started (pg_postmaster_start_time; "": unknown) */
} PgConn;

#define PG_POOL_MAX 32

/* The advisory lock class ("qfsc") of the counter rows' slots: a pooled
 * connection holds (PG_COUNTER_LOCKS, its slot) while it is open. */
#define PG_COUNTER_LOCKS 1902539619

struct Store {
    const StoreOps *ops; /* &store_pg_ops: first (backend.h) */
    char *conninfo;      /* the URI, as given (may hold a password) */
    char *server;        /* "the server host:port/dbname", for messages:
                                   * no password */
    bool sync, read_only;

    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    PgConn pool[PG_POOL_MAX];
    int opened;               /* pool[0 .. opened) have been used */
    uint64_t writes, waiting; /* StoreStats (under pool_mu) */
    int64_t clock_offset;     /* server clock - local clock, ns (atomic) */

    /* Notifications: a thread LISTENs on a connection of its own, and
     * another NOTIFYs on one of its own after commits that changed
     * something (a NOTIFY inside each transaction would serialise their
     * commits on the server's notification lock). */
    pthread_mutex_t change_mu;
    pthread_cond_t change_cv;
    uint64_t changes; /* under change_mu */
    pthread_t listener;
    bool listening, stopping;
    int stop_pipe[2];
    /* The tables' definitions as of catalog version "catalog_version"
     * (queuefs.catalog, moved on by every change of a definition), so that
     * a statement need not read them from the server each time. */
    pthread_mutex_t catalog_mu;
    int64_t catalog_version;
    struct PgTableEntry *tables;
    pthread_cond_t notify_cv; /* under change_mu */
    bool notify_pending;      /* a commit changed something since the last NOTIFY */
    pthread_t notifier;
    bool notifying;
    /* Where claims of the head start, a table each (pg_hint.c). */
    pthread_mutex_t hint_mu;
    struct PgHintEntry *hints;
    char hint_server[64]; /* when the server they were found on started */
    /* Before when queues' writes need not reap, a table each (pg_reap.c). */
    pthread_mutex_t reap_mu;
    struct PgReapEntry *reaps;
};

/* A cached definition (Store.tables). */
typedef struct PgTableEntry {
    struct PgTableEntry *next;
    uint32_t id;
    size_t def_len;
    char *name;
    unsigned char def[];
} PgTableEntry;

/* Forgets the cached definitions (the store's catalog_mu held). */
void pg_catalog_forget(Store *st);

/* A table's changes to its counters in a transaction, written at commit. */
typedef struct PgDelta {
    uint32_t table;
    int64_t claims, releases, lapses, deletes;
} PgDelta;

#define PG_DELTAS_MAX 8

/* A group of a grouped queue whose records a transaction changed: put
 * right once, before the transaction reads groups or commits. */
typedef struct PgGroupFix {
    uint32_t table;
    int64_t per_group;
    size_t len;
    unsigned char group[STORE_MAX_KEY];
} PgGroupFix;

struct StoreTxn {
    const StoreOps *ops; /* &store_pg_ops: first (backend.h) */
    Store *st;
    PgConn *c;
    bool write;
    bool started;            /* BEGIN was sent: with the first statement, or when
                                   * its instant was first asked for (pg_txn_now) */
    bool cache_used;         /* read a cached definition before it started, so
                                   * the catalog version it assumed is checked then */
    bool changed;            /* a statement may have made something claimable: tell */
    bool failed;             /* a statement failed: only a rollback is left */
    bool retryable;          /* ... of a serialization failure or deadlock */
    bool last;               /* its next statement is its last change
                                   * (store_txn_last): its COMMIT may go with it */
    bool committed;          /* its COMMIT went with a statement: nothing is open */
    bool committed_changes;  /* ... and that statement changed something */
    int64_t now;             /* its instant, once started: read it with pg_txn_now */
    int64_t catalog_version; /* queuefs.catalog's at BEGIN (before it: the
                                   * version the store's cache holds) */
    uint32_t drawn_table;    /* the last identity store_identity_next */
    int64_t drawn_id;        /* drew in this transaction, and its table */
    bool catalog_changed;    /* this transaction changed a definition */
    /* The last record a get found absent (table, key): a create of it that
     * finds it there lost a race with another transaction's create, and
     * store_write runs its function again. */
    uint32_t missing_table;
    unsigned char missing[STORE_MAX_KEY];
    size_t missing_len;
    PGresult **results; /* kept until the transaction ends */
    size_t nresults, capresults;
    void **blobs; /* copies kept until it ends (definitions) */
    size_t nblobs;
    PgDelta deltas[PG_DELTAS_MAX];
    int ndeltas;
    PgGroupFix *fixes; /* groups to put right (pg_groups_fix) */
    size_t nfixes, capfixes;
};

/* A statement's arguments bound for libpq, in binary, in the order of its
 * $1 .. $n (pg_stmt_bind).  The bytes arguments point into the
 * PgArgs_NAME it was bound from; the integers are copies, in "ints". */
#define PG_ARGS_MAX 16
typedef struct PgBound {
    int n;
    const char *values[PG_ARGS_MAX];
    int lengths[PG_ARGS_MAX];
    int formats[PG_ARGS_MAX];
    unsigned char ints[PG_ARGS_MAX][8];
} PgBound;

/* A one-dimensional array argument (a BYTES bound as a bytea[] or int8[])
 * in PostgreSQL's binary form, built element by element: [ndim 1][no
 * nulls][element type][length][lower bound 1], then each element as
 * [length][bytes].  Its data is the caller's to free. */
typedef struct PgArray {
    unsigned char *data;
    size_t len, cap;
    int n;
} PgArray;

#define PG_OID_BYTEA 17
#define PG_OID_INT8 20

/* Empties "a" for elements of type "oid" (PG_OID_*). */
void pg_array_reset(PgArray *a, uint32_t oid);
/* Appends an element of "n" bytes at "p" to "a"; an int8 "v". */
void pg_array_add(PgArray *a, const void *p, size_t n);
void pg_array_add_i64(PgArray *a, int64_t v);
/* "a" as the bytes of a BYTES argument. */
static inline StoreBytes
pg_array_bytes(const PgArray *a)
{
    return (StoreBytes){a->data, a->len};
}

/* Runs the statement "args" is of (PG_ARGS; PG_RUN says both at once) in
 * "txn" — the first one also begins the transaction, in the same round
 * trip, so its arguments must not hold its instant: an argument read from
 * pg_txn_now has begun it already.  The result (tuples or a command)
 * lives until the transaction ends.  NULL on failure, with *rc the status
 * (STORE_IO for a lost server, STORE_FULL for a full disk,
 * STORE_EXHAUSTED for a sequence at its end, ...) and the transaction left
 * to roll back. */
PGresult *pg_run(StoreTxn *txn, const PgStmt *args, int *rc);
/* Runs the statement "args" is of as pg_run does, in a savepoint of its
 * own, in one round trip with it and its release (the transaction begun
 * first, when it has not) — and with the COMMIT too when the caller said
 * it is the transaction's last change (store_txn_last), nothing else is
 * left for the commit and "settled": its answer leaves nothing to do
 * there (no group to put right).  When a unique index refuses it
 * (unique_violation), what it did is undone and the transaction goes on,
 * uncommitted: NULL with *rc STORE_EXISTS.  Any other failure is
 * pg_run's; a connection lost before the answers came is STORE_IO, and
 * not run again (it may have committed). */
PGresult *pg_run_undoable(StoreTxn *txn, const PgStmt *args, bool settled, int *rc);
/* True when the next statement of "txn", if one that can (the claim of
 * the head, a delete), carries its commit (store_txn_last): such a
 * statement then counts itself, the commit adding nothing. */
bool pg_txn_commits_with_next(const StoreTxn *txn);
/* The catalog version a statement that may begin "txn" is to find still
 * current (CATALOG_IS in store/pg/pg_stmts.def): the one its cached definitions
 * were read at, before it began; 0 (no check) once begun. */
int64_t pg_txn_version_to_check(const StoreTxn *txn);
/* Runs "sql" (no arguments: DDL, several statements) in "txn", failing as
 * pg_run does: 0 or the status. */
int pg_run_sql(StoreTxn *txn, const char *sql);
/* Frees the results "txn" holds from index "from" on (for a walk that
 * pages: its pages are valid only during the callback). */
void pg_results_drop(StoreTxn *txn, size_t from);

/* Decoding a binary result. */
int64_t pg_i64(const PGresult *res, int row, int col);
StoreBytes pg_bytes(const PGresult *res, int row, int col);
bool pg_bool(const PGresult *res, int row, int col);

/* The counter changes of "table" in "txn", to add to at commit. */
PgDelta *pg_delta(StoreTxn *txn, uint32_t table);

/* The record columns every record statement answers, in this order, and
 * their decoding into "r" (pointers into "res"). */
#define PG_RECORD_COLS \
    "key, value, seq, since, written, changed, claimed, attempts, hold, claimed_until, " \
    "consumer, instance, ord, not_before, errors, grp, completed_at, rerun"
#define PG_RECORD_NCOLS 18
/* The columns of PG_RECORD_COLS that are the record's last claim's
 * instant and its group. */
#define PG_RECORD_CLAIMED 6
#define PG_RECORD_GRP 15
void pg_record_of(const PGresult *res, int row, int col, StoreRecord *r);

/* The row of each table's counters that the next write of them on
 * connection "c" adds to: one of PG_COUNTER_TURNS of its slot's, in turn,
 * PG_COUNTER_RUN writes each.  While a transaction elsewhere holds back
 * the xmin, every version a row's writes leave stays in its chain, which
 * each write walks: taking turns keeps the chains short. */
int pg_counter_row(PgConn *c);

/* ---- what pg_conn.c shares with pg_txn.c ---- */

/* The StoreStatus of a failed statement on "conn" ("res" may be NULL);
 * "*retry" when running the transaction again may succeed. */
int pg_status_of(PGconn *conn, const PGresult *res, bool *retry);
/* Takes a connection of the pool for a transaction, opening one when none
 * is free and the pool has room, else waiting for one. */
PgConn *pg_pool_take(Store *st);
/* Gives "c" back to the pool. */
void pg_pool_give(Store *st, PgConn *c);
/* Makes sure "c" is connected ("fresh": connects again): 0 or STORE_IO. */
int pg_conn_ready(Store *st, PgConn *c, bool fresh);

/* ---- what pg_conn.c shares with pg_notify.c ---- */

/* A new connection with the store's URI, its session set as queuefs wants
 * it (pg_conn.c); NULL when it failed, with the reason in "errbuf" unless
 * that is NULL. */
PGconn *pg_connect(const Store *st, char *errbuf, size_t errlen);
/* This machine's clock: nanoseconds since the Unix epoch. */
int64_t pg_local_now(void);
/* Moves store_changes() on, waking this process's waiters; "tell": and
 * has the notifier tell the other processes and hosts. */
void pg_changes_note(Store *st, bool tell);
/* Starts the listener and the notifier of store "st", which is open. */
void pg_notify_start(Store *st);
/* Stops them at the store's close, the notifier once it has told every
 * change. */
void pg_notify_stop(Store *st);

/* ---- what pg_records.c shares with pg_queue.c ---- */

#define PG_NO_BYTES ((StoreBytes){NULL, 0})
#define PG_PAGE 256 /* the rows a walk reads at a time */

/* True for a queue whose records AT MOST … PER groups. */
static inline bool
pg_grouped(const StoreQueue *q)
{
    return q && q->per_group > 0;
}

/* Adds to the counters of "table" that "txn" writes at its commit. */
void pg_count(StoreTxn *txn, uint32_t table, int64_t claims, int64_t releases, int64_t lapses,
              int64_t deletes);
/* The answer for a fenced write that changed no row: NOTFOUND when the
 * record is absent, else CONFLICT. */
int pg_fence_failed(StoreTxn *txn, uint32_t table, StoreBytes key);
/* Notes that groups "g1" and "g2" (empty: none) of grouped queue "q" are
 * to be put right after a change of their records (nothing for an
 * ungrouped queue): done once a group by pg_groups_fix, however many of
 * its records the transaction changes. */
int pg_group_fix(StoreTxn *txn, const StoreQueue *q, StoreBytes g1, StoreBytes g2);
/* Puts right every group pg_group_fix noted, in group order: before a
 * statement reads the groups (a claim, the counts, a refile) and before
 * the commit.  0 or the failure's status. */
int pg_groups_fix(StoreTxn *txn);
/* For a write of record "key" of queue "q": on a grouped queue, locks the
 * record's group (and "moving_to", the group an update files it in), then
 * the record, its group into "*group" (empty on an ungrouped queue);
 * STORE_NOTFOUND for a key longer than any record's, and when the record
 * is absent (known only when grouped). */
int pg_group_lock_of(StoreTxn *txn, const StoreQueue *q, StoreBytes key, StoreBytes moving_to,
                     StoreBytes *group);
/* A walk's place: "k" copied into "*buf" (replacing what it held), so it
 * outlives the page it came from. */
StoreBytes pg_key_keep(char **buf, StoreBytes k);
/* Walks the records of "table" from key "from" on, in key order, a page of
 * at most PG_PAGE at a time: "page" is handed each page that is not empty,
 * its "n" rows of PG_RECORD_COLS valid only during the call, and a
 * non-zero answer ends the walk with it.  0 or the status. */
int pg_record_pages(StoreTxn *txn, uint32_t table, StoreBytes from,
                    int (*page)(void *ctx, const PGresult *res, int n), void *ctx);

/* ---- pg_hint.c: where a claim of the head starts ---- */

/* Where a claim of the head starts: CLAIM_FROM's arguments of the same
 * names, when "hinted" (else from the start: CLAIM_HEAD). */
typedef struct PgHint {
    bool hinted;
    StoreBytes snap, from_ord; /* owned */
    int64_t from_seq, from_wake;
} PgHint;
/* The columns of a claim of the head's answer after the record's
 * before-columns: its snapshot (h_snap) and whether the due records were
 * as many as it takes at once (h_due_full). */
#define PG_HINT_COL (PG_RECORD_NCOLS + 9)
/* The column h_quiet of CLAIM_HEAD's and CLAIM_HEAD_REAP's answer. */
#define PG_QUIET_COL (PG_HINT_COL + 2)
/* Where the next claim of "table" under catalog version "catalog" on
 * connection "c" starts, into "*out": "hinted" while the last claim's
 * snapshot showed the xmin held back and a position found on c's server
 * is kept; pg_hint_free frees it. */
void pg_hint_get(Store *st, const PgConn *c, uint32_t table, int64_t catalog, PgHint *out);
void pg_hint_free(PgHint *h);
/* Keeps the position a claim of the head on "c" that was its whole
 * transaction, started at "used" (not "hinted": at the head), answered in
 * "res" (it claimed a record at least), "took" ns from its sending to its
 * answer — unless c's server is not the one positions are kept for. */
void pg_hint_put(Store *st, const PgConn *c, uint32_t table, int64_t catalog, const PgHint *used,
                 const PGresult *res, int64_t took);
/* Forgets the position of "table" (0: of every table). */
void pg_hint_forget(Store *st, uint32_t table);
/* Notes that connection "c" was made: every position is forgotten, and
 * positions are kept for c's server from then on, unless it is the server
 * they were found on. */
void pg_hint_server(Store *st, const PgConn *c);

/* ---- pg_reap.c: whether a write of a queue need reap, or look for due
 * records ---- */

/* True when a claim or finish of queue "q" in "txn" should remove the
 * queue's expired done records (the statements that reap: REAPED); false
 * while none can have expired, or when "q" keeps none.  May run a probe
 * (REAP_NEXT) in "txn" first. */
bool pg_reap_wanted(StoreTxn *txn, const StoreQueue *q);
/* How long at most claims go without looking for due records (pg_reap.c),
 * in nanoseconds: a plain number, which pg_stmts.def writes into SQL. */
#define PG_DUE_SPELL_NS 1000000000
/* True when no waiting record of queue "q" can be due yet, as far as
 * this process knows: a claim of its head need not look for them
 * (CLAIM_READY), "changes" being store_changes() now. */
bool pg_due_quiet(Store *st, const StoreQueue *q, uint64_t changes);
/* Keeps what a claim of "q"'s head at server instant "now" found: no
 * waiting record due before "quiet" (its h_quiet; 0: some were), while
 * store_changes() was "changes" (read before the claim was sent). */
void pg_due_learn(Store *st, const StoreQueue *q, uint64_t changes, int64_t now, int64_t quiet);
/* What a look at "table"'s counts found: a waiting record due at "at"
 * (0: one to claim now, of any kind) — no claim goes without looking
 * for due records from then on. */
void pg_due_lower(Store *st, uint32_t table, int64_t at);
/* Forgets every table's instants. */
void pg_reap_forget(Store *st);

/* ---- pg_sql.c: the statements of pg_stmts.def ---- */

/* The SQL of statement "s" as prepared: its $names numbered $1 .. $n in
 * the order of its arguments. */
const char *pg_stmt_sql(PgStmt s);
/* The kind of statement "s". */
PgKind pg_stmt_kind(PgStmt s);
/* Binds the arguments "args" (PG_ARGS) into "*out", in place: "*out" is
 * not to be copied, for its values point into it. */
void pg_stmt_bind(const PgStmt *args, PgBound *out);

/* Creates or checks the schema on connection "conn" (store/pg/pg_schema.c):
 * 0, or a StoreStatus with a message in errbuf. */
int pg_schema_ensure(PGconn *conn, bool read_only, char *errbuf, size_t errlen);
/* The schema version this build creates and reads. */
#define PG_SCHEMA_VERSION 7
/* The records index records_filed holds (pg_schema.c's version 7), which
 * a statement's WHERE repeats for the index to serve it: the ready, and
 * those waiting for anything but their hold's deadline. */
#define PG_FILED_PREDICATE "(state = 0 OR (state = 1 AND wake <> claimed_until))"

/* ---- the backend's operations (backend.h: store.h's meaning) ---- */

/* pg_NAME for each operation NAME of ops.def. */
#define STORE_OP(ret, op, params, args, self) ret pg_##op params;
#define STORE_VOID_OP(op, params, args, self) void pg_##op params;
#include "ops.def"

#endif
