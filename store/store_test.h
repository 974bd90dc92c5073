/* store_test.h — what the store's unit tests (store/store_test.c,
 * store/lmdb_test.c) share: a scratch directory, the store's calls in short
 * forms that check as they go, collectors for the store's walks, queue
 * scripts (tables of steps and what each must find), and the counted
 * writers that the group commit tests run in threads and processes.  Test support only: every
 * function is static inline, so that a test program uses what it needs. */
#ifndef QUEUEFS_STORE_TEST_H
#define QUEUEFS_STORE_TEST_H

#include "store.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tests/unit_test.h"

#define SEC 1000000000LL

/* The test program's scratch directory (see test_root_make). */
static char test_root[64];

/* Makes the scratch directory /tmp/<prog>.XXXXXX: false (with a message)
 * when it cannot. */
static inline bool
test_root_make(const char *prog)
{
    snprintf(test_root, sizeof test_root, "/tmp/%s.XXXXXX", prog);
    if (mkdtemp(test_root))
        return true;
    perror("mkdtemp");
    return false;
}

/* Removes the scratch directory and all it holds. */
static inline void
test_root_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", test_root);
}

/* A path under the scratch directory (static storage, four at a time). */
static inline const char *
path_of(const char *name)
{
    static char buf[4][256];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", test_root, name);
    return p;
}

/* A StoreBytes viewing a NUL-terminated string (without the NUL). */
static inline StoreBytes
bytes_of(const char *s)
{
    return (StoreBytes){s, strlen(s)};
}

/* True when b holds exactly the string s. */
static inline int
bytes_eq(StoreBytes b, const char *s)
{
    return b.len == strlen(s) && (b.len == 0 || memcmp(b.data, s, b.len) == 0);
}

/* Opens a store under the scratch directory, checking success. */
static inline Store *
open_store(const char *name, bool sync, size_t map_size)
{
    StoreOptions opts = {.sync = sync, .map_size = map_size};
    char err[256];
    Store *st = NULL;
    int rc = store_open(path_of(name), &opts, &st, err, sizeof err);
    CHECK(rc == STORE_OK && st, "store_open %s: %s", name, err);
    return st;
}

/* Begins a transaction, checking success. */
static inline StoreTxn *
begin(Store *st, bool write)
{
    StoreTxn *t = NULL;
    int rc = store_txn_begin(st, write, &t);
    CHECK(rc == STORE_OK, "begin: %s", store_strerror(rc));
    return t;
}

/* Commits, checking success. */
static inline void
commit(StoreTxn *t)
{
    int rc = store_txn_commit(t);
    CHECK(rc == STORE_OK, "commit: %s", store_strerror(rc));
}

/* Creates table "name" in a transaction of its own; returns its id. */
static inline uint32_t
table_make(Store *st, const char *name)
{
    StoreTxn *t = begin(st, true);
    uint32_t id = 0;
    CHECK(store_table_create(t, name, bytes_of(""), &id) == STORE_OK, "create %s", name);
    commit(t);
    return id;
}

/* Puts a record with an optional slot (order == NULL: no slot). */
static inline int
put(StoreTxn *t, uint32_t table, const char *key, const char *value,
    const char *order, int64_t wake)
{
    StoreSlot slot = {.order_key = order, .order_len = order ? strlen(order) : 0,
                      .wake_ns = wake};
    return store_record_put(t, table, bytes_of(key), bytes_of(value), order ? &slot : NULL);
}

/* Puts a held record: waiting until "wake", then doing "then" (0 ready,
 * later: delayed, STORE_SLOT_RETIRE: out of the indexes). */
static inline int
put_held(StoreTxn *t, uint32_t table, const char *key, const char *order, int64_t wake,
         int64_t then)
{
    StoreSlot slot = {order, strlen(order), wake, true, then};
    return store_record_put(t, table, bytes_of(key), bytes_of(key), &slot);
}

/* The key of the queue head as a string ("" when none; rc in *rc_out). */
static inline const char *
head_key(StoreTxn *t, uint32_t table, int64_t now, int *rc_out)
{
    static char buf[STORE_MAX_KEY + 1];
    StoreBytes k = {0}, v = {0};
    int rc = store_queue_head(t, table, now, &k, &v);
    if (rc_out)
        *rc_out = rc;
    if (rc != STORE_OK)
        return "";
    memcpy(buf, k.data, k.len);
    buf[k.len] = '\0';
    return buf;
}

/* Checks the counts of "table" at "now": records, ready, held, delayed,
 * idle, unsorted, and the head ("" for none). */
static inline void
check_counts(StoreTxn *t, uint32_t table, int64_t now, const uint64_t want[6],
             const char *head, const char *what)
{
    StoreQueueCounts c;
    int rc = store_queue_counts(t, table, now, &c);
    CHECK(rc == STORE_OK, "%s: counts: %s", what, store_strerror(rc));
    uint64_t got[6] = {c.records, c.ready, c.held, c.delayed, c.idle, c.unsorted};
    CHECK(memcmp(got, want, sizeof got) == 0,
          "%s: counts %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
          ", want %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
          what, got[0], got[1], got[2], got[3], got[4], got[5], want[0], want[1], want[2],
          want[3], want[4], want[5]);
    CHECK(c.has_head == (head[0] != '\0') && (!c.has_head || bytes_eq(c.head_key, head)),
          "%s: head %.*s, want %s", what, c.has_head ? (int)c.head_key.len : 4,
          c.has_head ? (const char *)c.head_key.data : "none", head);
}

/* What the catalog walk met: the first 8 names and ids, and how many. */
struct each_tables {
    char names[8][32];
    uint32_t ids[8];
    int n;
};

/* A store_table_each function filling a struct each_tables. */
static inline int
collect_table(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    struct each_tables *e = ctx;
    (void)def;
    if (e->n < 8) {
        snprintf(e->names[e->n], sizeof e->names[0], "%s", name);
        e->ids[e->n] = id;
    }
    e->n++;
    return 0;
}

/* A store_table_each function that stops the walk at the second table
 * with 42; counts in *(int *)ctx. */
static inline int
stop_at_second(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)name, (void)id, (void)def;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

/* What a records walk met: the first 16 keys and values, how many, and
 * after how many the walk is to stop with 7 (0: never). */
struct each_records {
    char keys[16][16];
    char vals[16][16];
    int n;
    int stop_after;
};

/* A store_record_each function filling a struct each_records. */
static inline int
collect_record(void *ctx, StoreBytes key, StoreBytes value)
{
    struct each_records *e = ctx;
    if (e->n < 16) {
        snprintf(e->keys[e->n], 16, "%.*s", (int)key.len, (const char *)key.data);
        snprintf(e->vals[e->n], 16, "%.*s", (int)value.len, (const char *)value.data);
    }
    e->n++;
    return e->stop_after && e->n == e->stop_after ? 7 : 0;
}

/* What a walk of the waiting records met: the first 8 keys and their wake
 * instants, and how many. */
struct each_waiting {
    char keys[8][16];
    int64_t wakes[8];
    int n;
};

/* A store_queue_each_waiting function filling a struct each_waiting. */
static inline int
collect_waiting(void *ctx, StoreBytes key, int64_t wake)
{
    struct each_waiting *e = ctx;
    if (e->n < 8) {
        snprintf(e->keys[e->n], 16, "%.*s", (int)key.len, (const char *)key.data);
        e->wakes[e->n] = wake;
    }
    e->n++;
    return 0;
}

/* Collects the waiting records of "table" into "e": how many, or -1 when
 * the walk fails. */
static inline int
waiting_of(StoreTxn *t, uint32_t table, struct each_waiting *e)
{
    memset(e, 0, sizeof *e);
    return store_queue_each_waiting(t, table, collect_waiting, e) == 0 ? e->n : -1;
}

/* One step of a queue script (queue_script), written with the Q_*
 * macros below.  Instants are offsets from the script's "now" ("at" 0:
 * now; a put's wake 0: ready). */
typedef struct QueueStep {
    enum { QS_PUT, QS_HOLD, QS_DELETE, QS_HEAD, QS_WAITING, QS_COUNTS } op;
    const char *key;
    const char *order;
    int64_t at;
    int64_t then;
    uint64_t counts[6];
} QueueStep;

/* Puts record "key" (its value is its key) with order key "order" (NULL:
 * no slot), waking at "at" (0: ready). */
#define Q_PUT(key, order, at) {QS_PUT, (key), (order), (at), 0, {0}}
/* Puts record "key" held until "at", then doing "then" (0: ready,
 * STORE_SLOT_RETIRE, or an instant: delayed until it). */
#define Q_HOLD(key, order, at, then) {QS_HOLD, (key), (order), (at), (then), {0}}
/* Deletes record "key". */
#define Q_DELETE(key) {QS_DELETE, (key), NULL, 0, 0, {0}}
/* The head at "at" must be "key" ("": nothing ready). */
#define Q_HEAD(key, at) {QS_HEAD, (key), NULL, (at), 0, {0}}
/* The waiting records must be "keys", in wake order, joined by ','. */
#define Q_WAITING(keys) {QS_WAITING, (keys), NULL, 0, 0, {0}}
/* The counts at "at" must be the six numbers (records, ready, held,
 * delayed, idle, unsorted) and the head "head". */
#define Q_COUNTS(head, at, ...) {QS_COUNTS, (head), NULL, (at), 0, {__VA_ARGS__}}

/* Runs the "n" steps of script "name" on queue "table" in "t". */
static inline void
queue_script(StoreTxn *t, uint32_t table, int64_t now, const QueueStep *steps, size_t n,
             const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const QueueStep *s = &steps[i];
        bool putting = s->op == QS_PUT || s->op == QS_HOLD;
        int64_t at = s->at ? now + s->at : putting ? 0 : now;
        int64_t then = s->then > 0 ? now + s->then : s->then;
        char what[64], got[STORE_MAX_KEY + 1] = "";
        struct each_waiting e;
        int rc = STORE_OK;
        snprintf(what, sizeof what, "%s, step %zu", name, i);
        switch (s->op) {
        case QS_PUT:
            rc = put(t, table, s->key, s->key, s->order, at);
            break;
        case QS_HOLD:
            rc = put_held(t, table, s->key, s->order, at, then);
            break;
        case QS_DELETE:
            rc = store_record_delete(t, table, bytes_of(s->key));
            break;
        case QS_HEAD:
            snprintf(got, sizeof got, "%s", head_key(t, table, at, &rc));
            CHECK(strcmp(got, s->key) == 0 && rc == (s->key[0] ? STORE_OK : STORE_NOTFOUND),
                  "%s: head '%s' (%s), want '%s'", what, got, store_strerror(rc), s->key);
            rc = STORE_OK;
            break;
        case QS_WAITING:
            for (int w = 0; w < waiting_of(t, table, &e) && w < 8; w++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", w ? "," : "",
                         e.keys[w]);
            CHECK(strcmp(got, s->key) == 0, "%s: waiting '%s', want '%s'", what, got, s->key);
            break;
        case QS_COUNTS:
            check_counts(t, table, at, s->counts, s->key, what);
            break;
        }
        CHECK(rc == STORE_OK, "%s: %s", what, store_strerror(rc));
    }
}

#define QUEUE_SCRIPT(t, table, now, steps) \
    queue_script((t), (table), (now), (steps), sizeof(steps) / sizeof(steps)[0], #steps)

/* Counts the records a walk meets into *(int *)ctx. */
static inline int
count_one(void *ctx, StoreBytes key, StoreBytes value)
{
    (void)key;
    (void)value;
    (*(int *)ctx)++;
    return 0;
}

/* The records of "table", counted in a read transaction. */
static inline int
records_count(Store *st, uint32_t table)
{
    int n = 0;
    StoreTxn *t = begin(st, false);
    store_record_each(t, table, bytes_of(""), count_one, &n);
    store_txn_abort(t);
    return n;
}

/* Reads the 8-byte counter meta "name" of "table" (0 when absent). */
static inline uint64_t
counter_read(StoreTxn *t, uint32_t table, const char *name)
{
    StoreBytes v;
    uint64_t n = 0;
    if (store_meta_get(t, table, bytes_of(name), &v) == STORE_OK && v.len == 8)
        memcpy(&n, v.data, 8);
    return n;
}

/* Runs "fn" (which exits) in a child process and checks it exited 0. */
static inline void
child_run(void (*fn)(const char *name), const char *name)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        fn(name);
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* One counted writer (write_put_count) and what came of its writes. */
typedef struct WriteArg {
    Store *st;
    uint32_t table;
    int thread;
    int i;
    int writes;
    int failures;
    int runs;                   /* times the function ran */
    const char *value;          /* put under "w<thread>-<i>" */
    size_t value_len;
    int result;                 /* what the function returns after its put */
} WriteArg;

/* A store_write function: puts record w<thread>-<i> and adds 1 to meta
 * "counter", then returns a->result. */
static inline int
write_put_count(StoreTxn *txn, void *ctx)
{
    WriteArg *a = ctx;
    char key[32];
    a->runs++;
    snprintf(key, sizeof key, "w%02d-%04d", a->thread, a->i);
    int rc = store_record_put(txn, a->table, bytes_of(key),
                              (StoreBytes){a->value, a->value_len}, NULL);
    if (rc)
        return rc;
    uint64_t n = counter_read(txn, a->table, "counter") + 1;
    if ((rc = store_meta_put(txn, a->table, bytes_of("counter"), (StoreBytes){&n, 8})))
        return rc;
    return a->result;
}

/* A thread making a->writes store_write calls of write_put_count. */
static inline void *
thread_write(void *p)
{
    WriteArg *a = p;
    for (a->i = 0; a->i < a->writes; a->i++)
        if (store_write(a->st, write_put_count, a) != 0)
            a->failures++;
    return NULL;
}

/* Runs "n" (<= 16) writer threads on "table" at once, thread i numbered
 * "base" + i and making "writes" counted writes of "value": the number of
 * writes that failed (-1 when a thread could not start). */
static inline int
writers_run(Store *st, uint32_t table, int n, int base, int writes, const char *value,
            size_t value_len)
{
    pthread_t th[16];
    WriteArg args[16];
    int failures = 0, started = 0;
    for (int i = 0; i < n && i < 16; i++, started++) {
        args[i] = (WriteArg){.st = st, .table = table, .thread = base + i, .writes = writes,
                             .value = value, .value_len = value_len};
        if (pthread_create(&th[i], NULL, thread_write, &args[i]) != 0)
            break;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    return started < n ? -1 : failures;
}

#endif
