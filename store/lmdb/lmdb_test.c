/* lmdb_test.c — the LMDB backend's own tests, part two: what it does
 * beyond store.h's promises with the environment it opened — several
 * processes on one environment and its shared sync page, the map (full,
 * grown by another process, grown by store_write, QUEUEFS_MAP_SIZE) — and
 * what its KEEP and COALESCE do that the conformance cases leave out.  Part
 * one (stores it refuses, formats and their upgrades) is
 * lmdb_format_test.c; what a machine crash leaves, lmdb_crash_test.c. */
#include "store_test.h"

#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>

/* ---- several processes on one environment ---- */

/* In a child: opens its own store on "name", adds record "from-child" to
 * table "shared", checks it sees "from-parent"; exits 0 when all went well. */
static void
child_write(const char *name)
{
    StoreOptions opts = {.sync = true};
    Store *st = NULL;
    StoreTxn *t = NULL;
    uint32_t id;
    StoreRecord r;
    if (store_open(path_of(name), &opts, &st, NULL, 0) != STORE_OK)
        _exit(1);
    if (store_txn_begin(st, true, &t) != STORE_OK ||
        store_table_get(t, "shared", &id, NULL) != STORE_OK ||
        store_record_get(t, id, bytes_of("from-parent"), &r) != STORE_OK ||
        put(t, id, "from-child", "hi") != STORE_OK || store_txn_commit(t) != STORE_OK)
        _exit(2);
    store_close(st);
    _exit(0);
}

static void
test_two_processes(void)
{
    Store *st = open_store("shared", true, 0);
    uint32_t id = table_make(st, "shared");
    StoreRecord v;
    StoreTxn *t = begin(st, true);
    CHECK(put(t, id, "from-parent", "p") == STORE_OK, "put");
    commit(t);

    /* A read transaction open across the child's commit keeps its snapshot. */
    StoreTxn *old = begin(st, false);
    child_run(child_write, "shared");
    CHECK(store_record_get(old, id, bytes_of("from-child"), &v) == STORE_NOTFOUND, "old snapshot");
    store_txn_abort(old);
    t = begin(st, false);
    CHECK(store_record_get(t, id, bytes_of("from-child"), &v) == STORE_OK &&
              bytes_eq(v.value, "hi"),
          "parent sees the child's commit");
    store_txn_abort(t);
    store_close(st);
}

/* A process that only reads a store — opened alone, read, kept open over
 * many checkpoint ticks — syncs nothing: the commit of nothing its open
 * makes is no commit of its own to make durable. */
static void
test_reader_syncs_nothing(void)
{
    Store *st = open_store("reader", true, 0);
    uint32_t id = table_make(st, "t");
    StoreTxn *t = begin(st, true);
    CHECK(put(t, id, "k", "v") == STORE_OK, "put");
    commit(t);
    store_close(st);
    st = open_store("reader", true, 0);
    t = begin(st, false);
    StoreRecord r;
    CHECK(store_record_get(t, id, bytes_of("k"), &r) == STORE_OK, "read");
    store_txn_abort(t);
    sleep_ms(200);
    StoreStats s;
    store_stats(st, &s);
    CHECK(s.syncs == 0, "a reader made %" PRIu64 " syncs", s.syncs);
    store_close(st);
}

/* Two processes of four writer threads on one store: all counted. */
static void
test_write_processes(void)
{
    enum { P = 2, T = 4, W = 25 };
    Store *st = open_store("write-procs", true, 0);
    uint32_t id = table_make(st, "x");
    store_close(st);
    child_writers_run("write-procs", P, T, W);
    st = open_store("write-procs", true, 0);
    CHECK(records_count(st, id) == P * T * W, "every record of both processes");
    StoreTxn *t = begin(st, false);
    CHECK(counter_read(t, id) == P * T * W, "the counter is exact across processes");
    store_txn_abort(t);
    store_close(st);
    struct stat sb;
    CHECK(stat(path_of("write-procs/queuefs.sync"), &sb) == 0, "the shared sync file exists");
}

/* ---- the map ---- */

/* In a child: opens "name" with a large map and writes ~8 MiB into table
 * "grow", more than the parent's 1 MiB map holds. */
static void
child_grow(const char *name)
{
    StoreOptions opts = {.sync = false, .map_size = 64 << 20};
    Store *st = NULL;
    StoreTxn *t = NULL;
    uint32_t id;
    static char val[64 << 10];
    char key[16];
    if (store_open(path_of(name), &opts, &st, NULL, 0) != STORE_OK)
        _exit(1);
    if (store_txn_begin(st, true, &t) != STORE_OK ||
        store_table_get(t, "grow", &id, NULL) != STORE_OK)
        _exit(2);
    memset(val, 'g', sizeof val);
    for (int i = 0; i < 128; i++) {
        snprintf(key, sizeof key, "g%03d", i);
        StoreRecord r = {.key = bytes_of(key), .value = {val, sizeof val}};
        if (store_record_create(t, id, NULL, &r))
            _exit(3);
    }
    if (store_txn_commit(t) != STORE_OK)
        _exit(4);
    store_close(st);
    _exit(0);
}

static void
test_map_resized_and_full(void)
{
    Store *st = open_store("grow", false, 1 << 20);
    uint32_t id = table_make(st, "grow");
    StoreRecord v;

    /* Full: a 1 MiB map cannot take 2 MiB. */
    static char val[64 << 10];
    memset(val, 'f', sizeof val);
    StoreTxn *t = begin(st, true);
    int rc = STORE_OK;
    char key[16];
    for (int i = 0; i < 32 && rc == STORE_OK; i++) {
        snprintf(key, sizeof key, "f%03d", i);
        StoreRecord r = {.key = bytes_of(key), .value = {val, sizeof val}};
        rc = store_record_create(t, id, NULL, &r);
    }
    if (rc == STORE_OK)
        rc = store_txn_commit(t);
    else
        store_txn_abort(t);
    CHECK(rc == STORE_FULL, "map full: got %s", store_strerror(rc));

    /* Another process grows the map; this one adopts the new size. */
    child_run(child_grow, "grow");
    t = NULL;
    rc = store_txn_begin(st, false, &t);
    CHECK(rc == STORE_OK, "begin after resize: %s", store_strerror(rc));
    if (t) {
        CHECK(store_record_get(t, id, bytes_of("g127"), &v) == STORE_OK &&
                  v.value.len == sizeof val,
              "reads the grown data");
        store_txn_abort(t);
    }
    t = NULL;
    rc = store_txn_begin(st, true, &t);
    CHECK(rc == STORE_OK, "write after resize: %s", store_strerror(rc));
    if (t) {
        CHECK(put(t, id, "after", "x") == STORE_OK, "put after resize");
        commit(t);
    }
    store_close(st);
}

/* When set, the next open() of a "queuefs.log" runs it first (once).
 * store_open makes that call after it has opened the environment (and let
 * other openers in) and before its first transaction: the window in which
 * another process growing the map used to make the open fail with
 * MDB_MAP_RESIZED. */
static void (*before_log_open)(void);

/* open(2), for every caller in this program, with the hook above. */
int
open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    size_t n = strlen(path), k = strlen("/queuefs.log");
    if (before_log_open && n >= k && strcmp(path + n - k, "/queuefs.log") == 0) {
        void (*hook)(void) = before_log_open;
        before_log_open = NULL;
        hook();
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* Grows the map of store "resize-open" from a child process, and waits. */
static void
grow_in_child(void)
{
    child_run(child_grow, "resize-open");
}

/* A map another process grows while this one opens the store is adopted:
 * the open succeeds and reads what the other process wrote. */
static void
test_map_resized_while_opening(void)
{
    Store *st = open_store("resize-open", false, 1 << 20);
    uint32_t id = table_make(st, "grow");
    StoreRecord v;
    store_close(st);

    before_log_open = grow_in_child;
    st = open_store("resize-open", false, 1 << 20);
    CHECK(before_log_open == NULL, "the child grew the map during the open");
    if (!st)
        return;
    StoreTxn *t = begin(st, false);
    CHECK(store_record_get(t, id, bytes_of("g127"), &v) == STORE_OK && v.value.len == 64 << 10,
          "reads what the child wrote");
    store_txn_abort(t);
    store_close(st);
}

/* A store opened with a tiny map grows it by itself: one large write, and
 * many writers at once, all fit; the map grew. */
static void
test_write_grows(void)
{
    enum { N = 4, M = 16 };
    static char big[64 << 10];
    memset(big, 'b', sizeof big);
    Store *st = open_store("write-grow", false, 128 << 10);
    uint32_t id = table_make(st, "big");
    StoreStats s0, s1;
    store_stats(st, &s0);
    CHECK(s0.map_size == 128 << 10, "the map starts as asked: %zu", s0.map_size);

    /* One caller alone, far larger than the map: 32 x 64 KiB. */
    WriteArg one = {.st = st, .table = id, .thread = 99, .value = big, .value_len = sizeof big};
    int rc = STORE_OK;
    for (one.i = 0; one.i < 32 && rc == STORE_OK; one.i++)
        rc = store_write(st, write_put_count, &one);
    CHECK(rc == STORE_OK, "large writes fit after growing: %s", store_strerror(rc));

    /* Many callers at once, each run again after a growth if need be. */
    int failures = writers_run(st, id, N, 0, M, big, sizeof big);
    CHECK(failures == 0, "%d writes failed", failures);
    store_stats(st, &s1);
    CHECK(s1.grows > s0.grows, "the map grew (%" PRIu64 " times)", s1.grows - s0.grows);
    CHECK(s1.map_size >= (size_t)(32 + N * M) * sizeof big, "the map is %zu bytes", s1.map_size);
    CHECK(records_count(st, id) == 32 + N * M, "every record is there");
    StoreTxn *t = begin(st, false);
    CHECK(counter_read(t, id) == 32 + N * M, "the counter is exact");
    store_txn_abort(t);
    store_close(st);

    /* Reopened with a map smaller than the data: the map is the data's size. */
    st = open_store("write-grow", false, 64 << 10);
    store_stats(st, &s0);
    struct stat sb;
    CHECK(stat(path_of("write-grow/data.mdb"), &sb) == 0 && s0.map_size >= (size_t)sb.st_size,
          "map %zu >= data file", s0.map_size);
    CHECK(records_count(st, id) == 32 + N * M, "every record is there after reopening");
    store_close(st);
}

/* QUEUEFS_MAP_SIZE sets the initial map; a malformed one is refused. */
static void
test_map_size_env(void)
{
    StoreOptions opts = {.sync = false};
    char err[256];
    Store *st = NULL;
    StoreStats s;
    setenv("QUEUEFS_MAP_SIZE", "1M", 1);
    CHECK(store_open(path_of("env-size"), &opts, &st, err, sizeof err) == STORE_OK, "%s", err);
    if (st) {
        store_stats(st, &s);
        CHECK(s.map_size == 1 << 20, "QUEUEFS_MAP_SIZE=1M: map %zu", s.map_size);
        store_close(st);
    }
    opts.map_size = 2 << 20;
    CHECK(store_open(path_of("env-size"), &opts, &st, err, sizeof err) == STORE_OK, "%s", err);
    if (st) {
        store_stats(st, &s);
        CHECK(s.map_size == 2 << 20, "the option wins over the variable: %zu", s.map_size);
        store_close(st);
    }
    opts.map_size = 0;
    static const char *const bad[] = {"junk", "12X", "0", "-5", " 5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("QUEUEFS_MAP_SIZE", bad[i], 1);
        st = NULL;
        CHECK(store_open(path_of("env-size"), &opts, &st, err, sizeof err) == STORE_INVALID &&
                  !st && strstr(err, "QUEUEFS_MAP_SIZE"),
              "QUEUEFS_MAP_SIZE='%s' refused: %s", bad[i], err);
    }
    unsetenv("QUEUEFS_MAP_SIZE");
    st = open_store("env-size", false, 0);
    if (st) {
        store_stats(st, &s);
        CHECK(s.map_size == STORE_DEFAULT_MAP_SIZE, "the default map: %zu", s.map_size);
        store_close(st);
    }
}

/* ---- KEEP and COALESCE ---- */

/* Creates record "key" of "q" in group "group" in a transaction of its own. */
static void
add_grouped(Store *s, const StoreQueue *q, const char *key, const char *group)
{
    StoreTxn *t = begin(s, true);
    StoreRecord r = {.key = bytes_of(key), .value = bytes_of("v"), .group = bytes_of(group)};
    CHECK(store_record_create(t, q->table, q, &r) == STORE_OK, "create %s", key);
    commit(t);
}

/* The finish of a marked record hands it out again behind the records of
 * its order key that were waiting (a new arrival sequence); on a queue
 * that keeps, the finish of a held record lets its AT MOST … PER group's
 * hold go, so that the group's next record is claimable. */
static void
test_rerun_order_keep_groups(void)
{
    Store *st = open_store("keep", false, 0);
    if (!st)
        return;
    StoreQueue q = queue_new(st, "rerun", 30 * SEC, 0);
    add(st, &q, "a", "v", "x", 0);
    add(st, &q, "b", "v", "x", 0);
    Claimed c = claim_expect(st, &q, 1, NULL, "a", "claim a");
    StoreTxn *t = begin(st, true);
    CHECK(store_record_rerun(t, &q, bytes_of("a")) == STORE_OK &&
              store_record_delete(t, q.table, &q, bytes_of("a"), c.hold) == STORE_OK,
          "mark a, finish it");
    commit(t);
    claim_expect(st, &q, 2, NULL, "b,a", "run again behind b, of the same order key");

    StoreQueue g = queue_new(st, "keep-group", 30 * SEC, 0);
    g.per_group = 1;
    g.keep_ns = 3600 * SEC;
    add_grouped(st, &g, "g1", "G");
    add_grouped(st, &g, "g2", "G");
    c = claim_expect(st, &g, 5, NULL, "g1", "one of the group at a time");
    t = begin(st, true);
    CHECK(store_record_delete(t, g.table, &g, bytes_of("g1"), c.hold) == STORE_OK, "finish g1");
    commit(t);
    claim_expect(st, &g, 5, NULL, "g2", "its finish let the group's hold go");
    StoreQueueCounts n = counts_of(st, &g);
    CHECK(n.records == 2 && n.done == 1 && n.held == 1 && n.grouped == 0 && n.groups_full == 1,
          "g1 done, g2 held: %" PRIu64 " done, %" PRIu64 " held", n.done, n.held);
    store_close(st);
}

int
main(void)
{
    static const TestCase cases[] = {test_two_processes,
                                     test_reader_syncs_nothing,
                                     test_map_resized_and_full,
                                     test_map_resized_while_opening,
                                     test_write_grows,
                                     test_map_size_env,
                                     test_write_processes,
                                     test_rerun_order_keep_groups,
                                     NULL};
    return test_root_main("lmdb_test", cases);
}
