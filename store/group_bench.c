/* group_bench.c — queuefs-group-bench: how many durable single-record
 * writes a store takes per second as the number of concurrent writers
 * grows (a benchmark, not a test: it prints figures and asserts nothing).
 *
 *     queuefs-group-bench [-o sync=full|none] [-n WRITES] [-d DIR]
 *
 * For 1, 4 and 16 threads in one process, and 2 processes of 8 threads,
 * on a fresh store each time: WRITES creates of one queue record (each its
 * own store_write), then WRITES claims — the head claimed, then deleted by
 * its hold, in one store_write.  Prints each rate, how many writers a commit served on
 * average, how many group syncs were made (each commit also syncs its data
 * pages: see store.h, "Durability"), and the ratio of 16 threads to 1. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define VALUE "{\"url\":\"https://example.test/a/long/enough/path\",\"n\":12345}"

typedef struct Bench {
    Store *st;
    uint32_t table;
    StoreQueue q; /* the queue "table" is (TIMEOUT 60 s) */
    long per_thread;
    int proc; /* process number (keys differ per process) */
    pthread_barrier_t start, middle;
    long failures;
} Bench;

typedef struct Worker {
    Bench *b;
    int id;
    long i; /* the put being made */
} Worker;

/* Phase timings of one run, in seconds, and the store's figures. */
typedef struct Result {
    double put_s, claim_s;
    StoreStats stats;
    long failures;
} Result;

/* Seconds on the monotonic clock. */
static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Puts one ready queue record with a key unique to the worker and put. */
static int
put_one(StoreTxn *txn, void *ctx)
{
    Worker *w = ctx;
    char key[64];
    int n = snprintf(key, sizeof key, "p%d-t%02d-%08ld", w->b->proc, w->id, w->i);
    StoreRecord r = {.key = {key, (size_t)n}, .value = {VALUE, sizeof VALUE - 1}};
    return store_record_create(txn, w->b->table, &w->b->q, &r);
}

/* Notes the one record a claim took: its key (copied) and hold. */
typedef struct Taken {
    char key[64];
    size_t len;
    int64_t hold;
} Taken;

static int
note_taken(void *ctx, const StoreRecord *now, const StoreRecord *before)
{
    (void)before;
    Taken *k = ctx;
    k->len = now->key.len < sizeof k->key ? now->key.len : sizeof k->key;
    memcpy(k->key, now->key.data, k->len);
    k->hold = now->hold;
    return 0;
}

/* Claims the head of the queue and deletes it (a worker's whole cycle). */
static int
claim_one(StoreTxn *txn, void *ctx)
{
    Worker *w = ctx;
    StoreClaim c = {.n = 1, .instance = {"bench", 5}};
    Taken k = {0};
    int64_t got = 0;
    int rc = store_claim(txn, &w->b->q, &c, note_taken, &k, &got);
    if (rc)
        return rc;
    if (got == 0)
        return STORE_NOTFOUND;
    return store_record_delete(txn, w->b->table, &w->b->q, (StoreBytes){k.key, k.len}, k.hold);
}

/* One thread: its puts, then (after every thread's puts) its claims. */
static void *
worker_main(void *p)
{
    Worker *w = p;
    Bench *b = w->b;
    long failures = 0;
    pthread_barrier_wait(&b->start);
    for (w->i = 0; w->i < b->per_thread; w->i++)
        failures += store_write(b->st, put_one, w) != 0;
    pthread_barrier_wait(&b->middle);
    pthread_barrier_wait(&b->start);
    for (long i = 0; i < b->per_thread; i++)
        failures += store_write(b->st, claim_one, w) != 0;
    __atomic_add_fetch(&b->failures, failures, __ATOMIC_RELAXED);
    return NULL;
}

/* Opens the store at "dir", exiting on failure. */
static Store *
bench_open(const char *dir, bool sync)
{
    StoreOptions opts = {.sync = sync};
    char msg[512];
    Store *st;
    if (store_open(dir, &opts, &st, msg, sizeof msg)) {
        fprintf(stderr, "queuefs-group-bench: %s\n", msg);
        exit(1);
    }
    return st;
}

/* Creates the table "jobs" in a fresh store at "dir"; returns its id. */
static uint32_t
bench_setup(const char *dir, bool sync)
{
    Store *st = bench_open(dir, sync);
    StoreTxn *t;
    uint32_t id = 0;
    if (store_txn_begin(st, true, &t) || store_table_create(t, "jobs", (StoreBytes){"", 0}, &id) ||
        store_txn_commit(t)) {
        fprintf(stderr, "queuefs-group-bench: cannot create the table\n");
        exit(1);
    }
    store_close(st);
    return id;
}

/* Runs "threads" workers in this process on the open store.  When "to"
 * and "from" are pipes (a child process), each phase starts on a byte read
 * from "from" and its end is told by a byte written to "to"; otherwise the
 * phases are timed here. */
static Result
run_threads(Store *st, uint32_t table, int proc, int threads, long per_thread, int from, int to)
{
    Bench b = {.st = st,
               .table = table,
               .per_thread = per_thread,
               .proc = proc,
               .q = {.table = table, .timeout_ns = 60 * 1000000000LL}};
    Worker *w = calloc((size_t)threads, sizeof *w);
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    Result r = {0};
    char byte = 0;
    pthread_barrier_init(&b.start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&b.middle, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        w[i] = (Worker){&b, i, 0};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    if (from >= 0 && read(from, &byte, 1) != 1)
        exit(1);
    double t0 = now_s();
    pthread_barrier_wait(&b.start);
    pthread_barrier_wait(&b.middle);
    double t1 = now_s();
    if (to >= 0 && (write(to, &byte, 1) != 1 || read(from, &byte, 1) != 1))
        exit(1);
    double t2 = now_s();
    pthread_barrier_wait(&b.start);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double t3 = now_s();
    r.put_s = t1 - t0;
    r.claim_s = t3 - t2;
    r.failures = b.failures;
    store_stats(st, &r.stats);
    pthread_barrier_destroy(&b.start);
    pthread_barrier_destroy(&b.middle);
    free(w);
    free(th);
    return r;
}

/* Runs one phase in the "procs" child processes run_threads runs: a byte
 * to each on "go" starts it there, and each one's byte on "done" says it
 * ended there; returns when all have.  Exits when a pipe fails. */
static void
phase_run(int go, int done, int procs)
{
    char bytes[2] = {0};
    size_t n = (size_t)procs < sizeof bytes ? (size_t)procs : sizeof bytes;
    if (write(go, bytes, n) != (ssize_t)n)
        exit(1);
    for (int p = 0; p < procs; p++)
        if (read(done, bytes, 1) != 1)
            exit(1);
}

/* Runs "procs" processes of "threads" threads each on a fresh store in
 * "dir" (procs == 1: in this process). */
static Result
run_config(const char *dir, bool sync, int procs, int threads, long writes)
{
    if (procs < 1 || procs > 2) {
        fprintf(stderr, "queuefs-group-bench: 1 or 2 processes\n");
        exit(2);
    }
    uint32_t table = bench_setup(dir, sync);
    long per_thread = writes / (procs * threads);
    if (procs == 1) {
        Store *st = bench_open(dir, sync);
        Result r = run_threads(st, table, 0, threads, per_thread, -1, -1);
        store_close(st);
        return r;
    }
    int go[2], done[2], report[2];
    if (pipe(go) || pipe(done) || pipe(report)) {
        perror("queuefs-group-bench: pipe");
        exit(1);
    }
    fflush(NULL);
    for (int p = 0; p < procs; p++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("queuefs-group-bench: fork");
            exit(1);
        }
        if (pid == 0) {
            /* The store is opened after the fork: an environment must not cross it. */
            Store *st = bench_open(dir, sync);
            Result r = run_threads(st, table, p, threads, per_thread, go[0], done[1]);
            char byte = 0;
            if (write(done[1], &byte, 1) != 1 || write(report[1], &r, sizeof r) != sizeof r)
                _exit(1);
            store_close(st);
            _exit(0);
        }
    }
    Result total = {0};
    double t0 = now_s();
    phase_run(go[1], done[0], procs); /* the puts */
    double t1 = now_s();
    phase_run(go[1], done[0], procs); /* the claims */
    double t2 = now_s();
    for (int p = 0; p < procs; p++) {
        Result r;
        if (read(report[0], &r, sizeof r) != sizeof r)
            exit(1);
        total.failures += r.failures;
        total.stats.writes += r.stats.writes;
        total.stats.groups += r.stats.groups;
        total.stats.syncs += r.stats.syncs;
    }
    while (wait(NULL) > 0)
        ;
    total.put_s = t1 - t0;
    total.claim_s = t2 - t1;
    close(go[0]), close(go[1]), close(done[0]), close(done[1]);
    close(report[0]), close(report[1]);
    return total;
}

int
main(int argc, char **argv)
{
    bool sync = true;
    long writes = 4000;
    const char *parent = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int c;
    while ((c = getopt(argc, argv, "o:n:d:")) != -1) {
        if (c == 'o' && strcmp(optarg, "sync=full") == 0)
            sync = true;
        else if (c == 'o' && strcmp(optarg, "sync=none") == 0)
            sync = false;
        else if (c == 'n' && atol(optarg) >= 16)
            writes = atol(optarg);
        else if (c == 'd')
            parent = optarg;
        else {
            fprintf(stderr,
                    "usage: queuefs-group-bench [-o sync=full|none] [-n WRITES] [-d DIR]\n");
            return 2;
        }
    }
    static const struct {
        int procs, threads;
    } configs[] = {{1, 1}, {1, 4}, {1, 16}, {2, 8}};
    double put_rate[4], claim_rate[4];
    printf("queuefs-group-bench: sync=%s, %ld puts then %ld claim+delete per configuration\n",
           sync ? "full" : "none", writes, writes);
    printf("%-22s %12s %16s %14s %8s\n", "writers", "puts/s", "claim+delete/s", "writers/commit",
           "syncs");
    for (int i = 0; i < 4; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/queuefs-group-bench.XXXXXX", parent);
        if (!mkdtemp(dir)) {
            fprintf(stderr, "queuefs-group-bench: mkdtemp %s: %s\n", dir, strerror(errno));
            return 1;
        }
        int procs = configs[i].procs, threads = configs[i].threads;
        long done = writes / (procs * threads) * procs * threads;
        Result r = run_config(dir, sync, procs, threads, writes);
        char name[64];
        if (procs == 1)
            snprintf(name, sizeof name, "%d thread%s", threads, threads == 1 ? "" : "s");
        else
            snprintf(name, sizeof name, "%d processes x %d threads", procs, threads);
        put_rate[i] = (double)done / r.put_s;
        claim_rate[i] = (double)done / r.claim_s;
        printf("%-22s %12.0f %16.0f %14.1f %8" PRIu64 "%s\n", name, put_rate[i], claim_rate[i],
               r.stats.groups ? (double)r.stats.writes / (double)r.stats.groups : 0.0,
               r.stats.syncs, r.failures ? "  (some writes failed)" : "");
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "queuefs-group-bench: could not remove %s\n", dir);
    }
    printf("16 threads / 1 thread: puts %.1fx, claim+delete %.1fx\n", put_rate[2] / put_rate[0],
           claim_rate[2] / claim_rate[0]);
    return 0;
}
