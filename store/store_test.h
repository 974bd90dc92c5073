/* store_test.h — what the store's unit tests share: the backend
 * conformance suite (store/store_test.c, store/conformance_test.c,
 * store/limits_test.c) and LMDB's own tests (store/lmdb/lmdb_format_test.c,
 * store/lmdb/lmdb_test.c, store/lmdb/lmdb_crash_test.c).
 *
 *   - the store under test: $QUEUEFS_TEST_STORE when set (an LMDB
 *     directory, or another backend's location), else a fresh LMDB
 *     directory under /tmp (test_store_pick, test_store_open);
 *   - names no other run uses (unique_name), so that a shared store keeps
 *     every run's tables apart;
 *   - store.h's calls in short forms that check as they go, and queue
 *     helpers (queue_new, add, claim, claim_expect, refile, counts_of);
 *   - the counted writers that the group commit tests run in threads and
 *     processes;
 *   - for LMDB's own tests only: a scratch directory of their stores;
 *   - main() of a test program: its cases run in order, on the store under
 *     test (test_store_main) or in the scratch directory (test_root_main).
 *
 * Test support only: every function is static inline, so that a test
 * program uses what it needs.  Nothing here is LMDB's but the scratch
 * directory's stores, which only LMDB's tests open. */
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
#include <time.h>
#include <unistd.h>

#include "../tests/unit_test.h"

#define SEC 1000000000LL
#define MS 1000000LL

/* ---- bytes and time ---- */

/* A StoreBytes viewing a NUL-terminated string (without the NUL). */
static inline StoreBytes
bytes_of(const char *s)
{
    return (StoreBytes){s, strlen(s)};
}

/* True when b holds exactly the string s. */
static inline bool
bytes_eq(StoreBytes b, const char *s)
{
    return b.len == strlen(s) && (b.len == 0 || memcmp(b.data, s, b.len) == 0);
}

static inline void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* ---- directories ---- */

/* Makes a new directory /tmp/<prog>.XXXXXX, its path into "dir" (of "len"
 * bytes): false (with a message) when it cannot. */
static inline bool
test_dir_make(char *dir, size_t len, const char *prog)
{
    snprintf(dir, len, "/tmp/%s.XXXXXX", prog);
    if (mkdtemp(dir))
        return true;
    perror("mkdtemp");
    return false;
}

/* Removes directory "dir" and all it holds (a message when it cannot). */
static inline void
test_dir_remove(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* ---- the store under test ---- */

static char test_location[256]; /* where the store under test is */
static char test_made[64];      /* the directory made for it ("": given) */

/* True when the store under test is LMDB's (not a server's): the group
 * commit tests are LMDB's, whose writers share one transaction. */
static inline bool
test_store_is_lmdb(void)
{
    return strncmp(test_location, "postgres", 8) != 0;
}

/* Picks the store under test: $QUEUEFS_TEST_STORE, or a new directory
 * /tmp/<prog>.XXXXXX to hold a fresh LMDB store.  False when it cannot. */
static inline bool
test_store_pick(const char *prog)
{
    const char *given = getenv("QUEUEFS_TEST_STORE");
    if (given && *given) {
        snprintf(test_location, sizeof test_location, "%s", given);
        return true;
    }
    if (!test_dir_make(test_made, sizeof test_made, prog))
        return false;
    snprintf(test_location, sizeof test_location, "%s/store", test_made);
    return true;
}

/* Opens the store under test (NULL, with a failed check, when it cannot).
 * A process opens it at most once at a time. */
static inline Store *
test_store_open(bool sync)
{
    StoreOptions opts = {.sync = sync};
    char err[256] = "";
    Store *s = NULL;
    int rc = store_open(test_location, &opts, &s, err, sizeof err);
    CHECK(rc == STORE_OK && s, "open %s: %s", test_location, err);
    return rc == STORE_OK ? s : NULL;
}

/* Removes the directory test_store_pick made (a given store stays). */
static inline void
test_store_cleanup(void)
{
    if (test_made[0])
        test_dir_remove(test_made);
}

/* "prefix" and a suffix no other run uses: this process and an instant
 * (static storage, four at a time). */
static inline const char *
unique_name(const char *prefix)
{
    static char buf[4][128];
    static int next;
    static unsigned serial;
    char *p = buf[next++ % 4];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(p, sizeof buf[0], "%s-%d-%" PRId64 "-%u", prefix, (int)getpid(),
             (int64_t)(ts.tv_sec * SEC + ts.tv_nsec), serial++);
    return p;
}

/* ---- transactions and tables ---- */

/* Begins a transaction, checking success. */
static inline StoreTxn *
begin(Store *s, bool write)
{
    StoreTxn *t = NULL;
    int rc = store_txn_begin(s, write, &t);
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
table_make(Store *s, const char *name)
{
    StoreTxn *t = begin(s, true);
    uint32_t id = 0;
    CHECK(store_table_create(t, name, bytes_of(""), &id) == STORE_OK, "create %s", name);
    commit(t);
    return id;
}

/* Creates collection record "key" with "value" (no queue). */
static inline int
put(StoreTxn *t, uint32_t table, const char *key, const char *value)
{
    StoreRecord r = {.key = bytes_of(key), .value = bytes_of(value)};
    return store_record_create(t, table, NULL, &r);
}

/* Replaces the value of collection record "key". */
static inline int
replace(StoreTxn *t, uint32_t table, const char *key, StoreBytes value)
{
    StoreRecord r = {.key = bytes_of(key), .value = value};
    return store_record_update(t, table, NULL, &r);
}

/* Reads the definition of table "name" in "t" into "out" (a string, cut
 * to "len" - 1 bytes) and its id into "*id": 0, or the status. */
static inline int
def_copy(StoreTxn *t, const char *name, uint32_t *id, char *out, size_t len)
{
    StoreBytes def;
    int rc = store_table_get(t, name, id, &def);
    if (!rc)
        snprintf(out, len, "%.*s", (int)def.len, (const char *)def.data);
    return rc;
}

/* Redefines table "name" as "def" from another process, which opens the
 * store on its own (an environment does not cross fork()); true when it
 * did.  For the cases about definitions a backend may keep cached. */
static inline bool
redefine_elsewhere(const char *name, const char *def)
{
    pid_t kid = fork();
    if (kid == 0) {
        Store *other;
        StoreTxn *w;
        char err[256];
        StoreOptions opts = {.sync = true};
        if (store_open(test_location, &opts, &other, err, sizeof err) ||
            store_txn_begin(other, true, &w) || store_table_redefine(w, name, bytes_of(def)) ||
            store_txn_commit(w))
            _exit(2);
        store_close(other);
        _exit(0);
    }
    int status;
    return kid > 0 && waitpid(kid, &status, 0) == kid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

/* ---- queues ---- */

/* A queue of its own for a case, named after "prefix" (unique_name), with
 * the given TIMEOUT and ATTEMPTS. */
static inline StoreQueue
queue_new(Store *s, const char *prefix, int64_t timeout_ns, int64_t max_attempts)
{
    StoreQueue q = {.timeout_ns = timeout_ns, .max_attempts = max_attempts};
    q.table = table_make(s, unique_name(prefix));
    return q;
}

/* Creates queue record "key" with "value" in "t", ordered by "order"
 * (NULL: its key) and delayed until "not_before" (0: not). */
static inline int
add_in(StoreTxn *t, const StoreQueue *q, const char *key, const char *value, const char *order,
       int64_t not_before)
{
    StoreRecord r = {.key = bytes_of(key),
                     .value = bytes_of(value),
                     .order = order ? bytes_of(order) : (StoreBytes){NULL, 0},
                     .not_before = not_before};
    return store_record_create(t, q->table, q, &r);
}

/* The same in a transaction of its own, checking success. */
static inline void
add(Store *s, const StoreQueue *q, const char *key, const char *value, const char *order,
    int64_t not_before)
{
    StoreTxn *t = begin(s, true);
    int rc = add_in(t, q, key, value, order, not_before);
    CHECK(rc == STORE_OK, "create %s: %s", key, store_strerror(rc));
    commit(t);
}

/* What one claim found: the keys claimed, in order, joined by ',', and the
 * last claimed record's columns. */
typedef struct Claimed {
    char keys[512];
    int64_t attempts, hold, claimed_until, claimed, before_attempts, before_until;
    char consumer[64], instance[64];
} Claimed;

static inline int
note_claimed(void *ctx, const StoreRecord *now, const StoreRecord *before)
{
    Claimed *c = ctx;
    size_t n = strlen(c->keys);
    snprintf(c->keys + n, sizeof c->keys - n, "%s%.*s", n ? "," : "", (int)now->key.len,
             (const char *)now->key.data);
    c->attempts = now->attempts;
    c->hold = now->hold;
    c->claimed_until = now->claimed_until;
    c->claimed = now->claimed;
    c->before_attempts = before->attempts;
    c->before_until = before->claimed_until;
    snprintf(c->consumer, sizeof c->consumer, "%.*s", (int)now->consumer.len,
             (const char *)now->consumer.data);
    snprintf(c->instance, sizeof c->instance, "%.*s", (int)now->instance.len,
             (const char *)now->instance.data);
    return 0;
}

/* Claims in "t" up to "n" records (or the one "key") for instance
 * "inst-a" signed by "consumer"; returns the status and fills "out". */
static inline int
claim_in(StoreTxn *t, const StoreQueue *q, int64_t n, const char *key, const char *consumer,
         Claimed *out)
{
    memset(out, 0, sizeof *out);
    StoreClaim c = {.n = n,
                    .key = key ? bytes_of(key) : (StoreBytes){NULL, 0},
                    .consumer = bytes_of(consumer ? consumer : ""),
                    .instance = bytes_of("inst-a")};
    int64_t got = 0;
    int rc = store_claim(t, q, &c, note_claimed, out, &got);
    int64_t listed = out->keys[0] != 0;
    for (const char *k = out->keys; *k; k++)
        listed += *k == ',';
    CHECK(rc != STORE_OK || got == listed, "claimed %" PRId64 ", passed %" PRId64, got, listed);
    return rc;
}

/* The same in a transaction of its own (committed when it succeeded). */
static inline int
claim(Store *s, const StoreQueue *q, int64_t n, const char *key, const char *consumer, Claimed *out)
{
    StoreTxn *t = begin(s, true);
    int rc = claim_in(t, q, n, key, consumer, out);
    if (rc == STORE_OK)
        commit(t);
    else
        store_txn_abort(t);
    return rc;
}

/* Claims as claim() does (no consumer) and checks that the claim succeeded
 * and took exactly the keys "want" ("a,b"; "" for none); "what" names the
 * step in a failure.  Returns what it found. */
static inline Claimed
claim_expect(Store *s, const StoreQueue *q, int64_t n, const char *key, const char *want,
             const char *what)
{
    Claimed c;
    int rc = claim(s, q, n, key, NULL, &c);
    CHECK(rc == STORE_OK, "%s: %s", what, store_strerror(rc));
    CHECK(strcmp(c.keys, want) == 0, "%s: took \"%s\", want \"%s\"", what, c.keys, want);
    return c;
}

/* Refiles queue "q" (store_queue_refile with "file" and "ctx") in a
 * transaction of its own, checking success; "what" names the step. */
static inline void
refile(Store *s, const StoreQueue *q,
       int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx, const char *what)
{
    StoreTxn *t = begin(s, true);
    int rc = store_queue_refile(t, q, file, ctx);
    CHECK(rc == STORE_OK, "%s: %s", what, store_strerror(rc));
    commit(t);
}

/* The counts of table "table" in "t". */
static inline StoreQueueCounts
counts_in(StoreTxn *t, uint32_t table)
{
    StoreQueueCounts n;
    memset(&n, 0, sizeof n);
    int rc = store_queue_counts(t, table, &n);
    CHECK(rc == STORE_OK, "counts: %s", store_strerror(rc));
    return n;
}

/* The counts of queue "q" in a read transaction; its head key is copied
 * (the store's memory ends with the transaction) and valid until the next
 * call. */
static inline StoreQueueCounts
counts_of(Store *s, const StoreQueue *q)
{
    static _Thread_local char head[STORE_MAX_KEY];
    StoreTxn *t = begin(s, false);
    StoreQueueCounts n = counts_in(t, q->table);
    if (n.has_head && n.head_key.len <= sizeof head) {
        if (n.head_key.len)
            memcpy(head, n.head_key.data, n.head_key.len);
        n.head_key.data = head;
    }
    store_txn_abort(t);
    return n;
}

/* Checks the counts of "table" in "t": records, ready, held, delayed,
 * idle, unsorted, and the head ("" for none). */
static inline void
check_counts(StoreTxn *t, uint32_t table, const uint64_t want[6], const char *head,
             const char *what)
{
    StoreQueueCounts c = counts_in(t, table);
    uint64_t got[6] = {c.records, c.ready, c.held, c.delayed, c.idle, c.unsorted};
    CHECK(memcmp(got, want, sizeof got) == 0,
          "%s: counts %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
          ", want %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
          what, got[0], got[1], got[2], got[3], got[4], got[5], want[0], want[1], want[2], want[3],
          want[4], want[5]);
    CHECK(c.has_head == (head[0] != '\0') && (!c.has_head || bytes_eq(c.head_key, head)),
          "%s: head %.*s, want %s", what, c.has_head ? (int)c.head_key.len : 4,
          c.has_head ? (const char *)c.head_key.data : "none", head);
}

/* Reads record "key" of "table" into "out" in a read transaction (columns
 * only: its bytes are not kept). */
static inline int
get(Store *s, uint32_t table, const char *key, StoreRecord *out)
{
    StoreTxn *t = begin(s, false);
    int rc = store_record_get(t, table, bytes_of(key), out);
    out->key = out->value = out->consumer = out->instance = out->order = out->group =
        (StoreBytes){NULL, 0};
    store_txn_abort(t);
    return rc;
}

/* ---- walks ---- */

/* Counts the records a walk meets into *(int *)ctx, but for "#counter". */
static inline int
count_one(void *ctx, const StoreRecord *r)
{
    if (!bytes_eq(r->key, "#counter"))
        (*(int *)ctx)++;
    return 0;
}

/* The records of "table" (but "#counter"), counted in a read transaction. */
static inline int
records_count(Store *s, uint32_t table)
{
    int n = 0;
    StoreTxn *t = begin(s, false);
    store_record_each(t, table, bytes_of(""), count_one, &n);
    store_txn_abort(t);
    return n;
}

/* ---- counted writers ---- */

/* The counter record "#counter" of "table": an 8-byte count (0 when
 * absent). */
static inline uint64_t
counter_read(StoreTxn *t, uint32_t table)
{
    StoreRecord r;
    uint64_t n = 0;
    if (store_record_get(t, table, bytes_of("#counter"), &r) == STORE_OK && r.value.len == 8)
        memcpy(&n, r.value.data, 8);
    return n;
}

/* Adds 1 to the counter record of "table", creating it at 1. */
static inline int
counter_add(StoreTxn *t, uint32_t table)
{
    uint64_t n = counter_read(t, table) + 1;
    StoreRecord r = {.key = bytes_of("#counter"), .value = {&n, 8}};
    int rc = store_record_update(t, table, NULL, &r);
    return rc == STORE_NOTFOUND ? store_record_create(t, table, NULL, &r) : rc;
}

/* One counted writer (write_put_count) and what came of its writes. */
typedef struct WriteArg {
    Store *st;
    uint32_t table;
    int thread;
    int i;
    int writes;
    int failures;
    int runs;          /* times the function ran */
    const char *value; /* put under "w<thread>-<i>" */
    size_t value_len;
    int result; /* what the function returns after its put */
} WriteArg;

/* A store_write function: creates record w<thread>-<i> and adds 1 to the
 * counter record, then returns a->result. */
static inline int
write_put_count(StoreTxn *txn, void *ctx)
{
    WriteArg *a = ctx;
    char key[32];
    a->runs++;
    snprintf(key, sizeof key, "w%02d-%04d", a->thread, a->i);
    StoreRecord r = {.key = bytes_of(key), .value = {a->value, a->value_len}};
    int rc = store_record_create(txn, a->table, NULL, &r);
    if (rc || (rc = counter_add(txn, a->table)))
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
writers_run(Store *s, uint32_t table, int n, int base, int writes, const char *value,
            size_t value_len)
{
    pthread_t th[16];
    WriteArg args[16];
    int failures = 0, started = 0;
    for (int i = 0; i < n && i < 16; i++, started++) {
        args[i] = (WriteArg){.st = s,
                             .table = table,
                             .thread = base + i,
                             .writes = writes,
                             .value = value,
                             .value_len = value_len};
        if (pthread_create(&th[i], NULL, thread_write, &args[i]) != 0)
            break;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    return started < n ? -1 : failures;
}

/* ---- LMDB's tests' scratch directory of stores ---- */

static char test_root[64];

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

/* Opens store "name" under the scratch directory, checking success. */
static inline Store *
open_store(const char *name, bool sync, size_t map_size)
{
    StoreOptions opts = {.sync = sync, .map_size = map_size};
    char err[256] = "";
    Store *s = NULL;
    int rc = store_open(path_of(name), &opts, &s, err, sizeof err);
    CHECK(rc == STORE_OK && s, "store_open %s: %s", name, err);
    return s;
}

/* In a child: "threads" threads of "writes" durable counted writes each on
 * its own store handle; exits 0 when all succeeded. */
static inline void
child_writers(const char *name, int proc, int threads, int writes)
{
    StoreOptions opts = {.sync = true};
    Store *st = NULL;
    StoreTxn *t = NULL;
    uint32_t id;
    if (store_open(path_of(name), &opts, &st, NULL, 0) != STORE_OK)
        _exit(1);
    if (store_txn_begin(st, false, &t) != STORE_OK || store_table_get(t, "x", &id, NULL))
        _exit(2);
    store_txn_abort(t);
    int failures = writers_run(st, id, threads, proc * 16, writes, "c", 1);
    store_close(st);
    _exit(failures < 0 ? 3 : failures ? 4 : 0);
}

/* Waits for the child "pid" (what fork() returned) and checks it exited 0. */
static inline void
child_check(pid_t pid)
{
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* Runs "fn" (which exits) in a child process and checks it exited 0. */
static inline void
child_run(void (*fn)(const char *name), const char *name)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        fn(name);
    child_check(pid);
}

/* Runs "procs" (<= 16) child processes of child_writers on store "name" at
 * once, process p numbered p, and checks each exited 0. */
static inline void
child_writers_run(const char *name, int procs, int threads, int writes)
{
    pid_t pids[16];
    fflush(NULL);
    for (int p = 0; p < procs && p < 16; p++)
        if ((pids[p] = fork()) == 0)
            child_writers(name, p, threads, writes);
    for (int p = 0; p < procs && p < 16; p++)
        child_check(pids[p]);
}

/* ---- main() ---- */

/* A case of a test program: it checks as it goes (CHECK). */
typedef void (*TestCase)(void);

/* Runs "cases", up to the NULL that ends them, in order. */
static inline void
test_cases_run(const TestCase *cases)
{
    for (; *cases; cases++)
        (*cases)();
}

/* main() of a program of cases on the store under test: picks the store
 * (test_store_pick), opens it into "*st" with sync off, runs "cases",
 * closes it and removes what was made for it.  Returns main's status:
 * non-zero when a check failed or the store did not open. */
static inline int
test_store_main(const char *prog, Store **st, const TestCase *cases)
{
    if (!test_store_pick(prog) || !(*st = test_store_open(false)))
        return unit_test_summary() | 1;
    test_cases_run(cases);
    store_close(*st);
    test_store_cleanup();
    return unit_test_summary();
}

/* main() of a program of cases in the scratch directory (LMDB's own
 * tests): makes it, runs "cases", removes it.  Returns main's status. */
static inline int
test_root_main(const char *prog, const TestCase *cases)
{
    if (!test_dir_make(test_root, sizeof test_root, prog))
        return 1;
    test_cases_run(cases);
    test_dir_remove(test_root);
    return unit_test_summary();
}

#endif
