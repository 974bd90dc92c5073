/* lmdb_test.c — unit tests of the LMDB store backend (store.h). */
#include "store.h"
#include "lmdb_checkpoint.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tests/unit_test.h"

#define SEC 1000000000LL

static char root[] = "/tmp/lmdb_test.XXXXXX";

/* A StoreBytes viewing a NUL-terminated string (without the NUL). */
static StoreBytes
bytes_of(const char *s)
{
    return (StoreBytes){s, strlen(s)};
}

/* True when b holds exactly the string s. */
static int
bytes_eq(StoreBytes b, const char *s)
{
    return b.len == strlen(s) && (b.len == 0 || memcmp(b.data, s, b.len) == 0);
}

/* A path under the test root (static storage, one at a time per slot). */
static const char *
path_of(const char *name)
{
    static char buf[4][256];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", root, name);
    return p;
}

/* Opens a store under the test root, checking success. */
static Store *
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
static StoreTxn *
begin(Store *st, bool write)
{
    StoreTxn *t = NULL;
    int rc = store_txn_begin(st, write, &t);
    CHECK(rc == STORE_OK, "begin: %s", store_strerror(rc));
    return t;
}

/* Commits, checking success. */
static void
commit(StoreTxn *t)
{
    int rc = store_txn_commit(t);
    CHECK(rc == STORE_OK, "commit: %s", store_strerror(rc));
}

/* Puts a record with an optional slot (order == NULL: no slot). */
static int
put(StoreTxn *t, uint32_t table, const char *key, const char *value,
    const char *order, int64_t wake)
{
    StoreSlot slot = {order, order ? strlen(order) : 0, wake};
    return store_record_put(t, table, bytes_of(key), bytes_of(value), order ? &slot : NULL);
}

/* The key of the queue head as a string ("" when none; rc in *rc_out). */
static const char *
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

/* ---- environment ---- */

static void
test_open_reopen(void)
{
    Store *st = open_store("env", true, 0);
    struct stat sb;
    CHECK(stat(path_of("env"), &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700,
          "directory created 0700");
    StoreTxn *t = begin(st, true);
    uint32_t id = 0;
    CHECK(store_table_create(t, "persist", bytes_of("def1"), &id) == STORE_OK, "create");
    CHECK(put(t, id, "k", "v", NULL, 0) == STORE_OK, "put");
    CHECK(store_meta_put(t, id, bytes_of("m"), bytes_of("mv")) == STORE_OK, "meta put");
    commit(t);
    store_close(st);

    st = open_store("env", true, 0);
    t = begin(st, false);
    uint32_t id2 = 0;
    StoreBytes def, v;
    CHECK(store_table_get(t, "persist", &id2, &def) == STORE_OK && id2 == id, "table persisted");
    CHECK(bytes_eq(def, "def1"), "definition persisted");
    CHECK(store_record_get(t, id, bytes_of("k"), &v, NULL) == STORE_OK && bytes_eq(v, "v"),
          "record persisted");
    CHECK(store_meta_get(t, id, bytes_of("m"), &v) == STORE_OK && bytes_eq(v, "mv"),
          "meta persisted");
    store_txn_abort(t);
    store_close(st);

    /* An aborted write leaves nothing behind. */
    st = open_store("env", true, 0);
    t = begin(st, true);
    CHECK(put(t, id, "gone", "x", NULL, 0) == STORE_OK, "put in aborted txn");
    store_txn_abort(t);
    store_txn_abort(NULL);
    t = begin(st, false);
    CHECK(store_record_get(t, id, bytes_of("gone"), &v, NULL) == STORE_NOTFOUND,
          "aborted put not visible");
    store_txn_abort(t);
    store_close(st);
}

static void
test_not_a_store(void)
{
    char err[256] = "";
    Store *st = (Store *)1;
    StoreOptions opts = {.sync = true};

    mkdir(path_of("garbage"), 0700);
    FILE *f = fopen(path_of("garbage/data.mdb"), "w");
    CHECK(f != NULL, "create garbage file");
    if (f) {
        for (int i = 0; i < 8192; i++)
            fputc('x', f);
        fclose(f);
    }
    int rc = store_open(path_of("garbage"), &opts, &st, err, sizeof err);
    CHECK(rc == STORE_CORRUPT, "garbage data.mdb: got %s", store_strerror(rc));
    CHECK(st == NULL && err[0] != '\0', "failed open sets NULL and a message");

    /* mdb_load comes with lmdb-utils, which the test command installs. */
    CHECK(access("/usr/bin/mdb_load", X_OK) == 0, "mdb_load (lmdb-utils) is installed");
    /* An LMDB environment of something else. */
    char cmd[512];
    mkdir(path_of("foreign"), 0700);
    snprintf(cmd, sizeof cmd, "printf 'hello\\nworld\\n' | mdb_load -T '%s'", path_of("foreign"));
    CHECK(system(cmd) == 0, "mdb_load foreign");
    rc = store_open(path_of("foreign"), &opts, &st, err, sizeof err);
    CHECK(rc == STORE_CORRUPT, "foreign env: got %s", store_strerror(rc));

    /* A store of a future format version. */
    st = open_store("future", true, 0);
    store_close(st);
    snprintf(cmd, sizeof cmd,
             "printf 'version\\nqueuefs-store\\\\00\\\\00\\\\00\\\\63\\n' | mdb_load -T -s sys '%s'",
             path_of("future"));
    CHECK(system(cmd) == 0, "mdb_load future version");
    rc = store_open(path_of("future"), &opts, &st, err, sizeof err);
    CHECK(rc == STORE_CORRUPT, "future version: got %s", store_strerror(rc));
}

static void
test_strerror(void)
{
    for (int s = STORE_OK; s <= STORE_CORRUPT; s++)
        CHECK(store_strerror(s) && store_strerror(s)[0], "message for %d", s);
    CHECK(strcmp(store_strerror(999), store_strerror(STORE_OK)) != 0, "unknown status");
    CHECK(strcmp(store_strerror(STORE_FULL), store_strerror(STORE_IO)) != 0, "distinct");
}

/* ---- catalog ---- */

struct each_tables {
    char names[8][32];
    uint32_t ids[8];
    int n;
};

static int
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

static int
stop_at_second(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)name, (void)id, (void)def;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

static void
test_catalog(Store *st)
{
    StoreTxn *t = begin(st, true);
    uint32_t a = 0, b = 0, c = 0, id = 0;
    int rc0;
    StoreBytes def;
    CHECK(store_table_create(t, "beta", bytes_of("B"), &b) == STORE_OK, "create beta");
    CHECK(store_table_create(t, "alpha", bytes_of("A"), &a) == STORE_OK, "create alpha");
    CHECK(store_table_create(t, "gamma", (StoreBytes){NULL, 0}, &c) == STORE_OK, "create gamma");
    CHECK(a != b && b != c && a != c, "distinct ids");
    CHECK(store_table_create(t, "alpha", bytes_of("X"), &id) == STORE_EXISTS, "exists");
    CHECK(store_table_get(t, "alpha", &id, &def) == STORE_OK && id == a && bytes_eq(def, "A"),
          "get alpha");
    CHECK(store_table_get(t, "gamma", NULL, &def) == STORE_OK && def.len == 0, "empty def");
    CHECK(store_table_get(t, "delta", &id, &def) == STORE_NOTFOUND, "absent table");
    CHECK(store_table_redefine(t, "alpha", bytes_of("A2")) == STORE_OK, "redefine");
    CHECK(store_table_get(t, "alpha", &id, &def) == STORE_OK && id == a && bytes_eq(def, "A2"),
          "redefined keeps id");
    CHECK(store_table_redefine(t, "delta", bytes_of("D")) == STORE_NOTFOUND, "redefine absent");

    struct each_tables e = {0};
    CHECK(store_table_each(t, collect_table, &e) == 0, "each");
    CHECK(e.n == 3, "3 tables, got %d", e.n);
    CHECK_STR(e.names[0], "alpha");
    CHECK_STR(e.names[1], "beta");
    CHECK_STR(e.names[2], "gamma");
    CHECK(e.ids[0] == a && e.ids[1] == b, "ids in each");
    int n = 0;
    CHECK(store_table_each(t, stop_at_second, &n) == 42 && n == 2, "each stops");

    /* Rename moves the name; id, definition and records go with it. */
    CHECK(put(t, c, "g1", "gv", "o", 0) == STORE_OK, "put gamma g1");
    CHECK(store_table_rename(t, "gamma", "alpha") == STORE_EXISTS, "rename onto a table");
    CHECK(store_table_rename(t, "gamma", "gamma") == STORE_EXISTS, "rename onto itself");
    CHECK(store_table_rename(t, "delta", "omega") == STORE_NOTFOUND, "rename absent");
    CHECK(store_table_rename(t, "gamma", "") == STORE_TOOBIG, "rename to the empty name");
    CHECK(store_table_rename(t, "gamma", "omega") == STORE_OK, "rename");
    CHECK(store_table_get(t, "gamma", &id, &def) == STORE_NOTFOUND, "old name gone");
    CHECK(store_table_get(t, "omega", &id, &def) == STORE_OK && id == c && def.len == 0,
          "new name keeps id and definition");
    CHECK(strcmp(head_key(t, c, store_now(st), &rc0), "g1") == 0, "records and index kept");
    CHECK(store_table_rename(t, "omega", "gamma") == STORE_OK, "rename back");

    /* Drop removes records, indexes and meta; the name comes back empty. */
    CHECK(put(t, a, "r1", "v1", "o", 0) == STORE_OK, "put r1");
    CHECK(put(t, a, "r2", "v2", "o", store_now(st) + 100 * SEC) == STORE_OK, "put r2");
    CHECK(put(t, a, "r3", "v3", NULL, 0) == STORE_OK, "put r3");
    CHECK(put(t, b, "r1", "b1", "o", 0) == STORE_OK, "put beta r1");
    CHECK(store_meta_put(t, a, bytes_of("m"), bytes_of("x")) == STORE_OK, "meta");
    CHECK(store_table_drop(t, "alpha") == STORE_OK, "drop");
    CHECK(store_table_drop(t, "alpha") == STORE_NOTFOUND, "drop again");
    CHECK(store_table_get(t, "alpha", &id, &def) == STORE_NOTFOUND, "dropped");
    StoreBytes v;
    CHECK(store_record_get(t, a, bytes_of("r1"), &v, NULL) == STORE_NOTFOUND, "records gone");
    CHECK(store_record_get(t, a, bytes_of("r3"), &v, NULL) == STORE_NOTFOUND, "records gone");
    CHECK(store_meta_get(t, a, bytes_of("m"), &v) == STORE_NOTFOUND, "meta gone");
    int rc;
    head_key(t, a, store_now(st) + 1000 * SEC, &rc);
    CHECK(rc == STORE_NOTFOUND, "ready and deadline entries gone: %s", store_strerror(rc));
    CHECK(strcmp(head_key(t, b, store_now(st), &rc), "r1") == 0, "other table untouched");
    CHECK(store_record_get(t, b, bytes_of("r1"), &v, NULL) == STORE_OK && bytes_eq(v, "b1"),
          "other table record");

    CHECK(store_table_create(t, "alpha", bytes_of("new"), &id) == STORE_OK, "recreate");
    CHECK(id != a && id > c, "new id %u", (unsigned)id);
    CHECK(store_record_get(t, id, bytes_of("r1"), &v, NULL) == STORE_NOTFOUND, "new is empty");
    uint64_t seq = 0;
    CHECK(put(t, id, "r1", "v", NULL, 0) == STORE_OK, "put in new");
    CHECK(store_record_get(t, id, bytes_of("r1"), &v, &seq) == STORE_OK && seq == 1,
          "arrival sequence restarts: %" PRIu64, seq);
    CHECK(store_table_create(t, "", bytes_of("x"), &id) == STORE_TOOBIG, "empty name");
    commit(t);
}

/* ---- records ---- */

struct each_records {
    char keys[16][16];
    char vals[16][16];
    int n;
    int stop_after;
};

static int
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

static void
test_records(Store *st)
{
    StoreTxn *t = begin(st, true);
    uint32_t id, other;
    CHECK(store_table_create(t, "recs", bytes_of(""), &id) == STORE_OK, "create");
    CHECK(store_table_create(t, "recs2", bytes_of(""), &other) == STORE_OK, "create 2");
    const char *keys[] = {"d", "b", "a", "c", "e"};
    for (int i = 0; i < 5; i++)
        CHECK(put(t, id, keys[i], keys[i], NULL, 0) == STORE_OK, "put %s", keys[i]);
    CHECK(put(t, other, "0", "other", NULL, 0) == STORE_OK, "other table");
    CHECK(put(t, id, "", "empty key", NULL, 0) == STORE_OK, "empty key");

    StoreBytes v;
    uint64_t seq = 0, seq2 = 0;
    CHECK(store_record_get(t, id, bytes_of("d"), &v, &seq) == STORE_OK && bytes_eq(v, "d"), "get");
    CHECK(seq == 1, "first arrival is 1, got %" PRIu64, seq);
    CHECK(store_record_get(t, id, bytes_of("a"), NULL, &seq) == STORE_OK && seq == 3, "seq 3");
    CHECK(put(t, id, "a", "A!", NULL, 0) == STORE_OK, "replace");
    CHECK(store_record_get(t, id, bytes_of("a"), &v, &seq2) == STORE_OK && bytes_eq(v, "A!"),
          "replaced value");
    CHECK(seq2 == seq, "replace keeps seq");
    CHECK(store_record_get(t, id, bytes_of("zz"), &v, NULL) == STORE_NOTFOUND, "absent");

    struct each_records e = {0};
    CHECK(store_record_each(t, id, (StoreBytes){NULL, 0}, collect_record, &e) == 0, "each");
    CHECK(e.n == 6, "6 records, got %d", e.n);
    CHECK_STR(e.keys[0], "");
    CHECK_STR(e.keys[1], "a");
    CHECK_STR(e.vals[1], "A!");
    CHECK_STR(e.keys[5], "e");
    memset(&e, 0, sizeof e);
    CHECK(store_record_each(t, id, bytes_of("bb"), collect_record, &e) == 0, "each from");
    CHECK(e.n == 3 && strcmp(e.keys[0], "c") == 0, "from bb starts at c");
    memset(&e, 0, sizeof e);
    e.stop_after = 2;
    CHECK(store_record_each(t, id, bytes_of("b"), collect_record, &e) == 7, "each stops");
    CHECK(e.n == 2 && strcmp(e.keys[0], "b") == 0, "from b inclusive");

    CHECK(store_record_delete(t, id, bytes_of("c")) == STORE_OK, "delete");
    CHECK(store_record_delete(t, id, bytes_of("c")) == STORE_NOTFOUND, "delete again");
    CHECK(store_record_get(t, id, bytes_of("c"), &v, NULL) == STORE_NOTFOUND, "deleted");
    CHECK(put(t, id, "c", "c2", NULL, 0) == STORE_OK, "re-create");
    CHECK(store_record_get(t, id, bytes_of("c"), &v, &seq) == STORE_OK && seq == 7,
          "re-created gets a new seq, got %" PRIu64, seq);

    /* Binary keys and values with NUL bytes. */
    const char bk[] = {'\0', 'x', '\0'}, bv[] = {'\0', '\1', '\0', '\2'};
    CHECK(store_record_put(t, id, (StoreBytes){bk, 3}, (StoreBytes){bv, 4}, NULL) == STORE_OK,
          "binary put");
    CHECK(store_record_get(t, id, (StoreBytes){bk, 3}, &v, NULL) == STORE_OK && v.len == 4 &&
          memcmp(v.data, bv, 4) == 0, "binary get");

    /* Putting bytes that point into the store's own memory. */
    CHECK(store_record_get(t, id, bytes_of("d"), &v, NULL) == STORE_OK, "get d");
    CHECK(store_record_put(t, id, bytes_of("d"), v, NULL) == STORE_OK, "put own bytes");
    CHECK(store_record_get(t, id, bytes_of("d"), &v, NULL) == STORE_OK && bytes_eq(v, "d"),
          "own bytes kept");
    commit(t);
}

static void
test_toobig(Store *st)
{
    char big[STORE_MAX_KEY + 2];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0';      /* 401 bytes */
    StoreBytes k401 = {big, STORE_MAX_KEY + 1}, k400 = {big, STORE_MAX_KEY}, v;
    StoreTxn *t = begin(st, true);
    uint32_t id;
    CHECK(store_table_create(t, "big", bytes_of(""), &id) == STORE_OK, "create");
    CHECK(store_record_put(t, id, k401, bytes_of("v"), NULL) == STORE_TOOBIG, "401-byte key");
    CHECK(store_record_put(t, id, k400, bytes_of("v"), NULL) == STORE_OK, "400-byte key");
    CHECK(store_record_get(t, id, k400, &v, NULL) == STORE_OK && bytes_eq(v, "v"), "get 400");
    CHECK(store_record_get(t, id, k401, &v, NULL) == STORE_TOOBIG, "get 401");
    StoreSlot slot = {big, STORE_MAX_KEY + 1, 0};
    CHECK(store_record_put(t, id, bytes_of("r"), bytes_of("v"), &slot) == STORE_TOOBIG,
          "401-byte order key");
    slot.order_len = STORE_MAX_KEY;
    CHECK(store_record_put(t, id, k400, bytes_of("v"), &slot) == STORE_OK, "400-byte order");
    slot.wake_ns = store_now(st) + SEC;
    CHECK(store_record_put(t, id, k400, bytes_of("v"), &slot) == STORE_OK, "400 waiting");
    CHECK(store_meta_put(t, id, k401, bytes_of("v")) == STORE_TOOBIG, "401-byte meta name");
    CHECK(store_meta_put(t, id, k400, bytes_of("v")) == STORE_OK, "400-byte meta name");
    CHECK(store_table_create(t, big, bytes_of(""), &id) == STORE_TOOBIG, "401-byte table name");
    big[STORE_MAX_KEY] = '\0';
    CHECK(store_table_create(t, big, bytes_of(""), &id) == STORE_OK, "400-byte table name");
    /* A big value is fine. */
    size_t vlen = 1 << 20;
    char *bigv = malloc(vlen);
    memset(bigv, 'v', vlen);
    CHECK(store_record_put(t, id, bytes_of("x"), (StoreBytes){bigv, vlen}, NULL) == STORE_OK,
          "1 MiB value");
    CHECK(store_record_get(t, id, bytes_of("x"), &v, NULL) == STORE_OK && v.len == vlen &&
          memcmp(v.data, bigv, vlen) == 0, "1 MiB value back");
    free(bigv);
    commit(t);
}

/* ---- queues ---- */

struct each_waiting {
    char keys[8][16];
    int64_t wakes[8];
    int n;
};

static int
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

static void
test_queue(Store *st)
{
    StoreTxn *t = begin(st, true);
    uint32_t q, q2;
    int rc;
    int64_t now = store_now(st);
    StoreBytes k, v;
    CHECK(store_table_create(t, "q", bytes_of(""), &q) == STORE_OK, "create q");
    CHECK(store_table_create(t, "q2", bytes_of(""), &q2) == STORE_OK, "create q2");
    CHECK(strcmp(head_key(t, q, now, &rc), "") == 0 && rc == STORE_NOTFOUND, "empty queue");

    /* Five ready records; order keys not in key or arrival order. */
    CHECK(put(t, q, "r1", "v1", "30", 0) == STORE_OK, "r1");
    CHECK(put(t, q, "r2", "v2", "10", 0) == STORE_OK, "r2");
    CHECK(put(t, q, "r3", "v3", "20", 0) == STORE_OK, "r3");
    CHECK(put(t, q, "r4", "v4", "10", 0) == STORE_OK, "r4 (same order as r2, later)");
    CHECK(put(t, q, "r5", "v5", "40", 0) == STORE_OK, "r5");
    CHECK(put(t, q2, "x", "vx", "00", 0) == STORE_OK, "other queue");
    CHECK(store_queue_head(t, q, now, &k, &v) == STORE_OK && bytes_eq(k, "r2") &&
          bytes_eq(v, "v2"), "head is smallest order, earliest arrival");

    /* Claim the head using the bytes the store returned. */
    StoreSlot held = {"10", 2, now + SEC};
    CHECK(store_record_put(t, q, k, v, &held) == STORE_OK, "claim r2 with own bytes");
    CHECK(store_record_get(t, q, bytes_of("r2"), &v, NULL) == STORE_OK && bytes_eq(v, "v2"),
          "claimed value intact");
    CHECK(strcmp(head_key(t, q, now, &rc), "r4") == 0, "head moves to r4, got %s",
          head_key(t, q, now, &rc));
    CHECK(put(t, q, "r4", "v4", "10", now + 2 * SEC) == STORE_OK, "claim r4");
    CHECK_STR(head_key(t, q, now, &rc), "r3");

    struct each_waiting e = {0};
    CHECK(store_queue_each_waiting(t, q, collect_waiting, &e) == 0, "each waiting");
    CHECK(e.n == 2 && strcmp(e.keys[0], "r2") == 0 && strcmp(e.keys[1], "r4") == 0,
          "waiting in wake order");
    CHECK(e.wakes[0] == now + SEC && e.wakes[1] == now + 2 * SEC, "wake instants");

    /* Read-only transactions look without draining. */
    commit(t);
    t = begin(st, false);
    CHECK_STR(head_key(t, q, now + 10 * SEC, &rc), "r3");
    store_txn_abort(t);
    t = begin(st, true);

    /* At now + 1.5 s r2 is due again: back in its original place, ahead of
     * r3 (order 20); r4 (same order, later arrival) is still held. */
    CHECK_STR(head_key(t, q, now + SEC + SEC / 2, &rc), "r2");
    memset(&e, 0, sizeof e);
    store_queue_each_waiting(t, q, collect_waiting, &e);
    CHECK(e.n == 1 && strcmp(e.keys[0], "r4") == 0, "r2 drained, r4 waits");
    /* Both due: r2 before r4 by arrival sequence. */
    CHECK(put(t, q, "r2", "v2", "10", now + 3 * SEC) == STORE_OK, "hold r2 after r4");
    CHECK_STR(head_key(t, q, now + 5 * SEC, &rc), "r2");
    CHECK(put(t, q, "r2", "v2", NULL, 0) == STORE_OK, "r2 loses its slot");
    CHECK_STR(head_key(t, q, now + 5 * SEC, &rc), "r4");
    CHECK(store_record_get(t, q, bytes_of("r2"), &v, NULL) == STORE_OK, "slotless still there");
    CHECK(store_record_delete(t, q, bytes_of("r4")) == STORE_OK, "delete r4");
    CHECK_STR(head_key(t, q, now + 5 * SEC, &rc), "r3");
    CHECK(put(t, q, "r1", "v1", "30", now + SEC) == STORE_OK, "hold r1");
    CHECK(store_record_delete(t, q, bytes_of("r1")) == STORE_OK, "delete held r1");
    memset(&e, 0, sizeof e);
    store_queue_each_waiting(t, q, collect_waiting, &e);
    CHECK(e.n == 0, "delete removes the deadline entry");
    CHECK(put(t, q, "r3", "v3", "20", now + SEC) == STORE_OK, "hold r3");
    CHECK(put(t, q, "r3", "v3", NULL, 0) == STORE_OK, "r3 loses its slot while held");
    memset(&e, 0, sizeof e);
    store_queue_each_waiting(t, q, collect_waiting, &e);
    CHECK(e.n == 0, "slot NULL removes the deadline entry");
    CHECK_STR(head_key(t, q, now + 5 * SEC, &rc), "r5");
    CHECK(store_record_delete(t, q, bytes_of("r5")) == STORE_OK, "delete r5");
    head_key(t, q, now + 5 * SEC, &rc);
    CHECK(rc == STORE_NOTFOUND, "nothing ready");
    CHECK_STR(head_key(t, q2, now, &rc), "x");

    /* Order keys that are prefixes of each other, and the empty order key. */
    CHECK(put(t, q, "p1", "", "a\x01", 0) == STORE_OK, "p1");
    const char a0[] = {'a', '\0'};
    StoreSlot s0 = {a0, 2, 0};
    CHECK(store_record_put(t, q, bytes_of("p2"), bytes_of(""), &s0) == STORE_OK, "p2");
    CHECK(put(t, q, "p3", "", "a", 0) == STORE_OK, "p3");
    CHECK_STR(head_key(t, q, now, &rc), "p3");
    CHECK(put(t, q, "p3", "", NULL, 0) == STORE_OK, "p3 out");
    CHECK_STR(head_key(t, q, now, &rc), "p2");
    CHECK(put(t, q, "p4", "", "", 0) == STORE_OK, "p4 empty order");
    CHECK_STR(head_key(t, q, now, &rc), "p4");
    commit(t);

    /* Dropping a queue removes its waiting records too. */
    t = begin(st, true);
    CHECK(put(t, q, "w", "", "z", now + SEC) == STORE_OK, "w waits");
    CHECK(store_table_drop(t, "q") == STORE_OK, "drop q");
    memset(&e, 0, sizeof e);
    store_queue_each_waiting(t, q, collect_waiting, &e);
    CHECK(e.n == 0, "drop removes deadline entries");
    head_key(t, q, now + 10 * SEC, &rc);
    CHECK(rc == STORE_NOTFOUND, "drop removes ready entries");
    CHECK_STR(head_key(t, q2, now, &rc), "x");
    commit(t);
}

static void
test_queue_scale(Store *st)
{
    enum { N = 20000, HELD = 10000 };
    StoreTxn *t = begin(st, true);
    uint32_t q;
    int64_t now = store_now(st);
    char key[32], order[32];
    int rc, bad = 0;
    CHECK(store_table_create(t, "scale", bytes_of(""), &q) == STORE_OK, "create");
    for (int i = 1; i <= N; i++) {
        snprintf(key, sizeof key, "rec%05d", i);
        snprintf(order, sizeof order, "%08d", i);
        if (put(t, q, key, key, order, i <= HELD ? now + 60 * SEC + i : 0) != STORE_OK)
            bad++;
    }
    CHECK(bad == 0, "%d puts failed", bad);
    commit(t);
    t = begin(st, true);
    CHECK_STR(head_key(t, q, now, &rc), "rec10001");
    commit(t);

    /* The held ones become due together and drain back into order. */
    t = begin(st, true);
    CHECK_STR(head_key(t, q, now + 61 * SEC + HELD, &rc), "rec00001");
    struct each_waiting e = {0};
    store_queue_each_waiting(t, q, collect_waiting, &e);
    CHECK(e.n == 0, "all drained, %d left", e.n);
    CHECK(store_table_drop(t, "scale") == STORE_OK, "drop");
    commit(t);
}

/* ---- the counts ---- */

/* Puts a held record: waiting until "wake", then doing "then" (0 ready,
 * later: delayed, STORE_SLOT_RETIRE: out of the indexes). */
static int
put_held(StoreTxn *t, uint32_t table, const char *key, const char *order, int64_t wake,
         int64_t then)
{
    StoreSlot slot = {order, strlen(order), wake, true, then};
    return store_record_put(t, table, bytes_of(key), bytes_of(key), &slot);
}

/* Checks the counts of "table" at "now": records, ready, held, delayed,
 * idle, unsorted, and the head ("" for none). */
static void
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

static int
fail_after_put(StoreTxn *t, void *ctx)
{
    uint32_t *table = ctx;
    put(t, *table, "doomed", "", "00", 0);
    return -1;
}

static void
test_counts(Store *st)
{
    StoreTxn *t = begin(st, true);
    uint32_t q;
    int64_t now = store_now(st);
    CHECK(store_table_create(t, "counted", bytes_of(""), &q) == STORE_OK, "create");
    check_counts(t, q, now, (uint64_t[6]){0, 0, 0, 0, 0, 0}, "", "empty");
    CHECK(put(t, q, "b", "", "20", 0) == STORE_OK, "b ready");
    CHECK(put(t, q, "c", "", "30", 0) == STORE_OK, "c ready");
    CHECK(put(t, q, "d", "", "40", now + 2 * SEC) == STORE_OK, "d delayed");
    CHECK(put(t, q, "x", "", NULL, 0) == STORE_OK, "x in no index");
    CHECK(put_held(t, q, "h", "10", now + SEC, 0) == STORE_OK, "h held");
    CHECK(put_held(t, q, "l", "05", now + SEC, STORE_SLOT_RETIRE) == STORE_OK, "l held, last");
    CHECK(put_held(t, q, "n", "01", now + SEC, now + 3 * SEC) == STORE_OK, "n held, then delayed");
    check_counts(t, q, now, (uint64_t[6]){7, 2, 3, 1, 1, 0}, "b", "filed");
    CHECK(put(t, q, "b", "new value", "20", 0) == STORE_OK, "b rewritten");
    check_counts(t, q, now, (uint64_t[6]){7, 2, 3, 1, 1, 0}, "b", "a rewrite counts nothing");
    commit(t);

    /* Read-only, nothing moved: the holds that ended count where they go;
     * h goes back ahead of b in claim order. */
    t = begin(st, false);
    int64_t later = now + SEC + SEC / 2;
    check_counts(t, q, later, (uint64_t[6]){7, 3, 0, 2, 2, 0}, "h", "holds ended, not moved");
    store_txn_abort(t);
    /* A claim moves them: the same counts. */
    t = begin(st, true);
    int rc;
    CHECK_STR(head_key(t, q, later, &rc), "h");
    check_counts(t, q, later, (uint64_t[6]){7, 3, 0, 2, 2, 0}, "h", "holds ended, moved");
    struct each_waiting e = {0};
    store_queue_each_waiting(t, q, collect_waiting, &e);
    CHECK(e.n == 2 && strcmp(e.keys[0], "d") == 0 && strcmp(e.keys[1], "n") == 0 &&
          e.wakes[1] == now + 3 * SEC, "l retired, n delayed until its then: %d", e.n);
    /* Past every instant: all ready but the retired and the slotless. */
    check_counts(t, q, now + 4 * SEC, (uint64_t[6]){7, 5, 0, 0, 2, 0}, "n",
                 "every delay over, not moved");
    CHECK_STR(head_key(t, q, now + 4 * SEC, &rc), "n");
    check_counts(t, q, now + 4 * SEC, (uint64_t[6]){7, 5, 0, 0, 2, 0}, "n",
                 "every delay over, moved");
    /* Deletes: a ready one, a held one, one in no index. */
    CHECK(put_held(t, q, "h", "10", now + 60 * SEC, 0) == STORE_OK, "h held again");
    CHECK(store_record_delete(t, q, bytes_of("h")) == STORE_OK, "delete held h");
    CHECK(store_record_delete(t, q, bytes_of("n")) == STORE_OK, "delete ready n");
    CHECK(store_record_delete(t, q, bytes_of("x")) == STORE_OK, "delete slotless x");
    check_counts(t, q, now + 4 * SEC, (uint64_t[6]){4, 3, 0, 0, 1, 0}, "b", "after deletes");
    commit(t);

    /* A write that fails is rolled back with its counts. */
    CHECK(store_write(st, fail_after_put, &q) == -1, "failing write");
    t = begin(st, false);
    check_counts(t, q, now + 4 * SEC, (uint64_t[6]){4, 3, 0, 0, 1, 0}, "b", "after a rollback");
    store_txn_abort(t);

    /* Dropped and defined again: a new table, counted from zero. */
    t = begin(st, true);
    CHECK(store_table_drop(t, "counted") == STORE_OK, "drop");
    CHECK(store_table_create(t, "counted", bytes_of(""), &q) == STORE_OK, "create again");
    check_counts(t, q, now, (uint64_t[6]){0, 0, 0, 0, 0, 0}, "", "defined again");
    CHECK(store_table_drop(t, "counted") == STORE_OK, "drop again");
    commit(t);
}

/* Writes "n" bytes of "p" as mdb_load -T text (\xx for every byte). */
static void
hex_text(char *out, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        sprintf(out + 3 * i, "\\%02x", b[i]);
    out[3 * n] = '\0';
}

/* A store of format 1 (no counts, waiting entries of no kind) is counted
 * when first opened: exact records, ready and idle, its waiting entries
 * unsorted until a claim moves them or a write files them anew. */
static void
test_counts_upgrade(void)
{
    Store *st = open_store("format1", true, 0);
    if (!st)
        return;
    StoreTxn *t = begin(st, true);
    uint32_t q;
    int64_t now = store_now(st), wake = now + 3600 * SEC;
    CHECK(store_table_create(t, "old", bytes_of(""), &q) == STORE_OK, "create");
    CHECK(put(t, q, "a", "", "1", 0) == STORE_OK, "a ready");
    CHECK(put(t, q, "b", "", "2", 0) == STORE_OK, "b ready");
    CHECK(put_held(t, q, "h", "3", wake, 0) == STORE_OK, "h held");
    CHECK(put(t, q, "x", "", NULL, 0) == STORE_OK, "x in no index");
    commit(t);
    store_close(st);

    /* Make it what format 1 wrote: version 1, no counts (zeroed here),
     * and h's deadline entry without a kind. */
    unsigned char counts_key[7 + 4] = "records", deadline_key[4 + 8 + 1];
    counts_key[7] = counts_key[8] = counts_key[9] = 0;
    counts_key[10] = (unsigned char)q;
    deadline_key[0] = deadline_key[1] = deadline_key[2] = 0;
    deadline_key[3] = (unsigned char)q;
    for (int i = 0; i < 8; i++)
        deadline_key[4 + i] = (unsigned char)((uint64_t)wake >> (56 - 8 * i));
    deadline_key[12] = 'h';
    char ck[64], dk[64], zeros[5 * 8 * 3 + 1], cmd[1024];
    unsigned char zero[40] = {0};
    hex_text(ck, counts_key, sizeof counts_key);
    hex_text(dk, deadline_key, sizeof deadline_key);
    hex_text(zeros, zero, sizeof zero);
    snprintf(cmd, sizeof cmd,
             "printf 'version\\nqueuefs-store\\\\00\\\\00\\\\00\\\\01\\n' | mdb_load -T -s sys '%s' && "
             "printf '%%s\\n%%s\\n' '%s' '%s' | mdb_load -T '%s' && "
             "printf '%%s\\n\\n' '%s' | mdb_load -T -s deadline '%s'",
             path_of("format1"), ck, zeros, path_of("format1"), dk, path_of("format1"));
    CHECK(system(cmd) == 0, "make a format 1 store");

    st = open_store("format1", true, 0);
    if (!st)
        return;
    t = begin(st, false);
    check_counts(t, q, now, (uint64_t[6]){4, 2, 0, 0, 1, 1}, "a", "format 1, counted");
    store_txn_abort(t);
    /* Filed anew, h is sorted: held. */
    t = begin(st, true);
    CHECK(put_held(t, q, "h", "3", wake, 0) == STORE_OK, "h held again");
    check_counts(t, q, now, (uint64_t[6]){4, 2, 1, 0, 1, 0}, "a", "format 1, filed anew");
    commit(t);
    store_close(st);
    /* Opened again, it is of this format: nothing is counted again. */
    st = open_store("format1", true, 0);
    if (!st)
        return;
    t = begin(st, false);
    check_counts(t, q, now, (uint64_t[6]){4, 2, 1, 0, 1, 0}, "a", "reopened");
    store_txn_abort(t);
    store_close(st);
}

static void
test_meta(Store *st)
{
    StoreTxn *t = begin(st, true);
    uint32_t id, other;
    StoreBytes v;
    CHECK(store_table_create(t, "metat", bytes_of(""), &id) == STORE_OK, "create");
    CHECK(store_table_create(t, "metat2", bytes_of(""), &other) == STORE_OK, "create 2");
    CHECK(store_meta_get(t, id, bytes_of("n"), &v) == STORE_NOTFOUND, "absent");
    CHECK(store_meta_put(t, id, bytes_of("n"), bytes_of("1")) == STORE_OK, "put");
    CHECK(store_meta_put(t, other, bytes_of("n"), bytes_of("other")) == STORE_OK, "put other");
    CHECK(store_meta_get(t, id, bytes_of("n"), &v) == STORE_OK && bytes_eq(v, "1"), "get");
    CHECK(store_meta_put(t, id, bytes_of("n"), bytes_of("22")) == STORE_OK, "replace");
    CHECK(store_meta_get(t, id, bytes_of("n"), &v) == STORE_OK && bytes_eq(v, "22"), "replaced");
    CHECK(store_meta_put(t, id, bytes_of("n"), v) == STORE_OK, "put own bytes");
    CHECK(store_meta_get(t, id, bytes_of("n"), &v) == STORE_OK && bytes_eq(v, "22"), "own bytes");
    /* Caller names cannot reach the internal sequence counter. */
    CHECK(store_meta_put(t, id, bytes_of("seq"), bytes_of("x")) == STORE_OK, "name seq");
    const char internal[] = {'\0', 's', 'e', 'q'};
    CHECK(store_meta_put(t, id, (StoreBytes){internal, 4}, bytes_of("y")) == STORE_OK, "\\0seq");
    CHECK(store_meta_put(t, id, (StoreBytes){NULL, 0}, bytes_of("empty")) == STORE_OK, "empty");
    CHECK(put(t, id, "r1", "", NULL, 0) == STORE_OK && put(t, id, "r2", "", NULL, 0) == STORE_OK,
          "records after meta");
    uint64_t seq = 0;
    CHECK(store_record_get(t, id, bytes_of("r2"), NULL, &seq) == STORE_OK && seq == 2,
          "sequence unaffected, got %" PRIu64, seq);
    CHECK(store_meta_get(t, id, (StoreBytes){NULL, 0}, &v) == STORE_OK && bytes_eq(v, "empty"),
          "empty name");
    CHECK(store_meta_get(t, id, bytes_of("n"), &v) == STORE_OK && bytes_eq(v, "22"),
          "kept beside the other names");
    CHECK(store_meta_get(t, other, bytes_of("n"), &v) == STORE_OK && bytes_eq(v, "other"),
          "other table's meta");
    commit(t);
}

/* ---- several processes and threads ---- */

/* In a child: opens its own store on "name", adds record "from-child" to
 * table "shared", checks it sees "from-parent"; exits 0 when all went well. */
static void
child_write(const char *name)
{
    StoreOptions opts = {.sync = true};
    Store *st = NULL;
    StoreTxn *t = NULL;
    uint32_t id;
    StoreBytes v;
    if (store_open(path_of(name), &opts, &st, NULL, 0) != STORE_OK)
        _exit(1);
    if (store_txn_begin(st, true, &t) != STORE_OK ||
        store_table_get(t, "shared", &id, NULL) != STORE_OK ||
        store_record_get(t, id, bytes_of("from-parent"), &v, NULL) != STORE_OK ||
        store_record_put(t, id, bytes_of("from-child"), bytes_of("hi"), NULL) != STORE_OK ||
        store_txn_commit(t) != STORE_OK)
        _exit(2);
    store_close(st);
    _exit(0);
}

static void
test_two_processes(void)
{
    Store *st = open_store("shared", true, 0);
    StoreTxn *t = begin(st, true);
    uint32_t id;
    StoreBytes v;
    CHECK(store_table_create(t, "shared", bytes_of(""), &id) == STORE_OK, "create");
    CHECK(put(t, id, "from-parent", "p", NULL, 0) == STORE_OK, "put");
    commit(t);

    /* A read transaction open across the child's commit keeps its snapshot. */
    StoreTxn *old = begin(st, false);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child_write("shared");
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    CHECK(store_record_get(old, id, bytes_of("from-child"), &v, NULL) == STORE_NOTFOUND,
          "old snapshot");
    store_txn_abort(old);
    t = begin(st, false);
    CHECK(store_record_get(t, id, bytes_of("from-child"), &v, NULL) == STORE_OK &&
          bytes_eq(v, "hi"), "parent sees the child's commit");
    store_txn_abort(t);
    store_close(st);
}

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
        if (store_record_put(t, id, bytes_of(key), (StoreBytes){val, sizeof val}, NULL))
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
    StoreTxn *t = begin(st, true);
    uint32_t id;
    StoreBytes v;
    CHECK(store_table_create(t, "grow", bytes_of(""), &id) == STORE_OK, "create");
    commit(t);

    /* Full: a 1 MiB map cannot take 2 MiB. */
    static char val[64 << 10];
    memset(val, 'f', sizeof val);
    t = begin(st, true);
    int rc = STORE_OK;
    char key[16];
    for (int i = 0; i < 32 && rc == STORE_OK; i++) {
        snprintf(key, sizeof key, "f%03d", i);
        rc = store_record_put(t, id, bytes_of(key), (StoreBytes){val, sizeof val}, NULL);
    }
    if (rc == STORE_OK)
        rc = store_txn_commit(t);
    else
        store_txn_abort(t);
    CHECK(rc == STORE_FULL, "map full: got %s", store_strerror(rc));

    /* Another process grows the map; this one adopts the new size. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child_grow("grow");
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    t = NULL;
    rc = store_txn_begin(st, false, &t);
    CHECK(rc == STORE_OK, "begin after resize: %s", store_strerror(rc));
    if (t) {
        CHECK(store_record_get(t, id, bytes_of("g127"), &v, NULL) == STORE_OK &&
              v.len == sizeof val, "reads the grown data");
        store_txn_abort(t);
    }
    t = NULL;
    rc = store_txn_begin(st, true, &t);
    CHECK(rc == STORE_OK, "write after resize: %s", store_strerror(rc));
    if (t) {
        CHECK(put(t, id, "after", "x", NULL, 0) == STORE_OK, "put after resize");
        commit(t);
    }
    store_close(st);
}

/* When set, the next open() of a "queuefs.sync" runs it first (once).
 * store_open makes that call after it has opened the environment and
 * before its first transaction: the window in which another process
 * growing the map used to make the open fail with MDB_MAP_RESIZED. */
static void (*before_sync_open)(void);

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
    size_t n = strlen(path), k = strlen("/queuefs.sync");
    if (before_sync_open && n >= k && strcmp(path + n - k, "/queuefs.sync") == 0) {
        void (*hook)(void) = before_sync_open;
        before_sync_open = NULL;
        hook();
    }
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

/* Grows the map of store "resize-open" from a child process, and waits. */
static void
grow_in_child(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child_grow("resize-open");
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* A map another process grows while this one opens the store is adopted:
 * the open succeeds and reads what the other process wrote. */
static void
test_map_resized_while_opening(void)
{
    Store *st = open_store("resize-open", false, 1 << 20);
    StoreTxn *t = begin(st, true);
    uint32_t id;
    StoreBytes v;
    CHECK(store_table_create(t, "grow", bytes_of(""), &id) == STORE_OK, "create");
    commit(t);
    store_close(st);

    before_sync_open = grow_in_child;
    st = open_store("resize-open", false, 1 << 20);
    CHECK(before_sync_open == NULL, "the child grew the map during the open");
    if (!st)
        return;
    t = begin(st, false);
    CHECK(store_record_get(t, id, bytes_of("g127"), &v, NULL) == STORE_OK &&
          v.len == 64 << 10, "reads what the child wrote");
    store_txn_abort(t);
    store_close(st);
}

struct thread_arg {
    Store *st;
    uint32_t table;
    int failures;
};

/* Adds 1 to meta "counter" 100 times, one write transaction each, with a
 * read transaction alongside. */
static void *
thread_count(void *p)
{
    struct thread_arg *a = p;
    for (int i = 0; i < 100; i++) {
        StoreTxn *r = NULL, *w = NULL;
        StoreBytes v;
        uint64_t n = 0;
        if (store_txn_begin(a->st, false, &r) != STORE_OK) {
            a->failures++;
            continue;
        }
        store_meta_get(r, a->table, bytes_of("counter"), &v);
        if (store_txn_begin(a->st, true, &w) != STORE_OK) {
            a->failures++;
            store_txn_abort(r);
            continue;
        }
        if (store_meta_get(w, a->table, bytes_of("counter"), &v) == STORE_OK && v.len == 8)
            memcpy(&n, v.data, 8);
        n++;
        if (store_meta_put(w, a->table, bytes_of("counter"), (StoreBytes){&n, 8}) != STORE_OK ||
            store_txn_commit(w) != STORE_OK)
            a->failures++;
        store_txn_abort(r);
    }
    return NULL;
}

static void
test_threads(Store *st)
{
    enum { T = 4 };
    StoreTxn *t = begin(st, true);
    uint32_t id;
    CHECK(store_table_create(t, "threads", bytes_of(""), &id) == STORE_OK, "create");
    commit(t);
    pthread_t th[T];
    struct thread_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (struct thread_arg){st, id, 0};
        CHECK(pthread_create(&th[i], NULL, thread_count, &args[i]) == 0, "thread");
    }
    int failures = 0;
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    CHECK(failures == 0, "%d failures", failures);
    t = begin(st, false);
    StoreBytes v;
    uint64_t n = 0;
    CHECK(store_meta_get(t, id, bytes_of("counter"), &v) == STORE_OK && v.len == 8, "counter");
    if (v.len == 8)
        memcpy(&n, v.data, 8);
    CHECK(n == 100 * T, "counter %" PRIu64, n);
    store_txn_abort(t);
}

static void
test_nosync(void)
{
    Store *st = open_store("nosync", false, 0);
    StoreTxn *t = begin(st, true);
    uint32_t id;
    StoreBytes v;
    CHECK(store_table_create(t, "n", bytes_of(""), &id) == STORE_OK, "create");
    CHECK(put(t, id, "k", "v", "o", 0) == STORE_OK, "put");
    commit(t);
    store_close(st);
    st = open_store("nosync", false, 0);
    t = begin(st, false);
    CHECK(store_record_get(t, id, bytes_of("k"), &v, NULL) == STORE_OK && bytes_eq(v, "v"),
          "nosync persisted across close");
    store_txn_abort(t);
    store_close(st);
}

/* ---- store_write ---- */

/* Reads the 8-byte counter meta "name" of "table" (0 when absent). */
static uint64_t
counter_read(StoreTxn *t, uint32_t table, const char *name)
{
    StoreBytes v;
    uint64_t n = 0;
    if (store_meta_get(t, table, bytes_of(name), &v) == STORE_OK && v.len == 8)
        memcpy(&n, v.data, 8);
    return n;
}

/* Creates table "name" through the plain API; returns its id. */
static uint32_t
table_make(Store *st, const char *name)
{
    StoreTxn *t = begin(st, true);
    uint32_t id = 0;
    CHECK(store_table_create(t, name, bytes_of(""), &id) == STORE_OK, "create %s", name);
    commit(t);
    return id;
}

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

/* Puts record w<thread>-<i> and adds 1 to meta "counter". */
static int
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
static void *
thread_write(void *p)
{
    WriteArg *a = p;
    for (a->i = 0; a->i < a->writes; a->i++)
        if (store_write(a->st, write_put_count, a) != 0)
            a->failures++;
    return NULL;
}

/* Counts the records of "table". */
static int
count_one(void *ctx, StoreBytes key, StoreBytes value)
{
    (void)key;
    (void)value;
    (*(int *)ctx)++;
    return 0;
}

static int
records_count(Store *st, uint32_t table)
{
    int n = 0;
    StoreTxn *t = begin(st, false);
    store_record_each(t, table, bytes_of(""), count_one, &n);
    store_txn_abort(t);
    return n;
}

/* N threads x M durable writes: every record there, the counter exact,
 * and commits shared. */
static void
test_write_threads(void)
{
    enum { N = 8, M = 40 };
    Store *st = open_store("write-threads", true, 0);
    uint32_t id = table_make(st, "w");
    StoreStats before, after;
    store_stats(st, &before);
    pthread_t th[N];
    WriteArg args[N];
    for (int i = 0; i < N; i++) {
        args[i] = (WriteArg){.st = st, .table = id, .thread = i, .writes = M,
                             .value = "v", .value_len = 1};
        CHECK(pthread_create(&th[i], NULL, thread_write, &args[i]) == 0, "thread");
    }
    int failures = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    store_stats(st, &after);
    CHECK(failures == 0, "%d failed writes", failures);
    CHECK(records_count(st, id) == N * M, "%d records, want %d", records_count(st, id), N * M);
    StoreTxn *t = begin(st, false);
    uint64_t n = counter_read(t, id, "counter");
    CHECK(n == N * M, "counter %" PRIu64 ", want %d", n, N * M);
    store_txn_abort(t);
    CHECK(after.writes - before.writes == N * M, "writes %" PRIu64, after.writes - before.writes);
    CHECK(after.groups - before.groups <= N * M && after.groups > before.groups,
          "groups %" PRIu64, after.groups - before.groups);
    CHECK(after.waiting == 0, "nobody left waiting");
    store_close(st);
}

typedef struct Blocker {
    Store *st;
    int want_waiting;           /* hold the lead until this many callers wait */
    int started;
    int rc;                     /* what its store_write returned */
} Blocker;

/* Holds the lead (and the store's writer) until the wanted number of
 * callers are queued behind it, so that they form one group. */
static int
write_block(StoreTxn *txn, void *ctx)
{
    (void)txn;
    Blocker *b = ctx;
    __atomic_store_n(&b->started, 1, __ATOMIC_RELEASE);
    for (;;) {
        StoreStats s;
        store_stats(b->st, &s);
        if (s.waiting >= (uint64_t)b->want_waiting)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void *
thread_block(void *p)
{
    Blocker *b = p;
    b->rc = store_write(b->st, write_block, b);
    return NULL;
}

typedef struct OneWrite {
    WriteArg a;
    int rc;
} OneWrite;

static void *
thread_one_write(void *p)
{
    OneWrite *w = p;
    w->rc = store_write(w->a.st, write_put_count, &w->a);
    return NULL;
}

/* In one group, the callers whose function fails are rolled back alone:
 * each gets its own value back, the others commit. */
static void
test_write_rollback_alone(void)
{
    enum { K = 6 };
    Store *st = open_store("write-group", true, 0);
    uint32_t id = table_make(st, "g");
    StoreStats before, after;
    Blocker b = {st, K, 0, -1};
    pthread_t lead, th[K];
    OneWrite w[K];
    store_stats(st, &before);
    CHECK(pthread_create(&lead, NULL, thread_block, &b) == 0, "thread");
    while (!__atomic_load_n(&b.started, __ATOMIC_ACQUIRE)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < K; i++) {
        /* Odd callers fail after writing: their put and count must vanish. */
        w[i] = (OneWrite){.a = {.st = st, .table = id, .thread = i, .value = "x",
                                .value_len = 1, .result = i % 2 ? -7 - i : 0}};
        CHECK(pthread_create(&th[i], NULL, thread_one_write, &w[i]) == 0, "thread");
    }
    pthread_join(lead, NULL);
    for (int i = 0; i < K; i++)
        pthread_join(th[i], NULL);
    CHECK(b.rc == 0, "the blocking write: %d", b.rc);
    store_stats(st, &after);
    CHECK(after.groups - before.groups == 2, "one group for the blocker, one for the %d: %" PRIu64,
          K, after.groups - before.groups);
    StoreTxn *t = begin(st, false);
    for (int i = 0; i < K; i++) {
        char key[32];
        StoreBytes v;
        snprintf(key, sizeof key, "w%02d-%04d", i, 0);
        int got = store_record_get(t, id, bytes_of(key), &v, NULL);
        if (i % 2) {
            CHECK(w[i].rc == -7 - i, "caller %d gets its own failure: %d", i, w[i].rc);
            CHECK(got == STORE_NOTFOUND, "caller %d's put is rolled back", i);
        } else {
            CHECK(w[i].rc == 0, "caller %d commits: %d", i, w[i].rc);
            CHECK(got == STORE_OK, "caller %d's put is there", i);
        }
    }
    CHECK(counter_read(t, id, "counter") == (K + 1) / 2, "the counter counts the commits only");
    store_txn_abort(t);
    store_close(st);
}

/* A value store_write's function returns that happens to be a StoreStatus
 * comes back as is; nothing of it is kept. */
static int
write_then_notfound(StoreTxn *txn, void *ctx)
{
    WriteArg *a = ctx;
    store_record_put(txn, a->table, bytes_of("gone"), bytes_of("v"), NULL);
    return STORE_NOTFOUND;
}

static void
test_write_status(void)
{
    Store *st = open_store("write-status", false, 0);
    uint32_t id = table_make(st, "s");
    WriteArg a = {.st = st, .table = id};
    CHECK(store_write(st, write_then_notfound, &a) == STORE_NOTFOUND, "fn's value");
    CHECK(records_count(st, id) == 0, "nothing kept");
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
    pthread_t th[N];
    WriteArg args[N];
    for (int i = 0; i < N; i++) {
        args[i] = (WriteArg){.st = st, .table = id, .thread = i, .writes = M, .value = big,
                             .value_len = sizeof big};
        CHECK(pthread_create(&th[i], NULL, thread_write, &args[i]) == 0, "thread");
    }
    int failures = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    CHECK(failures == 0, "%d writes failed", failures);
    store_stats(st, &s1);
    CHECK(s1.grows > s0.grows, "the map grew (%" PRIu64 " times)", s1.grows - s0.grows);
    CHECK(s1.map_size >= (size_t)(32 + N * M) * sizeof big, "the map is %zu bytes", s1.map_size);
    CHECK(records_count(st, id) == 32 + N * M, "every record is there");
    StoreTxn *t = begin(st, false);
    CHECK(counter_read(t, id, "counter") == 32 + N * M, "the counter is exact");
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

/* In a child: "threads" threads of "writes" durable counted writes each on
 * its own store handle; exits 0 when all succeeded. */
static void
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
    pthread_t th[16];
    WriteArg args[16];
    for (int i = 0; i < threads; i++) {
        args[i] = (WriteArg){.st = st, .table = id, .thread = proc * 16 + i, .writes = writes,
                             .value = "c", .value_len = 1};
        if (pthread_create(&th[i], NULL, thread_write, &args[i]))
            _exit(3);
    }
    int failures = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        failures += args[i].failures;
    }
    store_close(st);
    _exit(failures ? 4 : 0);
}

/* Two processes of four writer threads on one store: all counted. */
static void
test_write_processes(void)
{
    enum { P = 2, T = 4, W = 25 };
    Store *st = open_store("write-procs", true, 0);
    uint32_t id = table_make(st, "x");
    store_close(st);
    fflush(NULL);
    pid_t pids[P];
    for (int p = 0; p < P; p++)
        if ((pids[p] = fork()) == 0)
            child_writers("write-procs", p, T, W);
    for (int p = 0; p < P; p++) {
        int status = -1;
        CHECK(pids[p] > 0 && waitpid(pids[p], &status, 0) == pids[p], "fork/wait");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    }
    st = open_store("write-procs", true, 0);
    CHECK(records_count(st, id) == P * T * W, "every record of both processes");
    StoreTxn *t = begin(st, false);
    CHECK(counter_read(t, id, "counter") == P * T * W, "the counter is exact across processes");
    store_txn_abort(t);
    store_close(st);
    struct stat sb;
    CHECK(stat(path_of("write-procs/queuefs.sync"), &sb) == 0, "the shared sync file exists");
}

/* ---- a machine crash with sync off ---- */

/* Copies file "from" to "to", replacing it; true on success. */
static bool
file_copy(const char *from, const char *to)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ssize_t n = 0;
    bool ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(out, buf, (size_t)n) == n;
    ok = ok && n == 0;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return ok;
}

/* Copies the first "len" bytes of "from" over those of "to". */
static bool
file_copy_head(const char *from, const char *to, size_t len)
{
    char *buf = malloc(len);
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY);
    bool ok = buf && in >= 0 && out >= 0 && pread(in, buf, len, 0) == (ssize_t)len &&
              pwrite(out, buf, len, 0) == (ssize_t)len;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    free(buf);
    return ok;
}

/* Makes the checkpoint record of "ckpt" about the data file "data" (a copy
 * stands for the same file on the disk of a crashed machine). */
static bool
checkpoint_about(const char *ckpt, const char *data)
{
    struct stat sb;
    Checkpoint c;
    int fd = open(ckpt, O_RDWR);
    bool ok = fd >= 0 && stat(data, &sb) == 0 && lmdb_checkpoint_read(fd, &c) == 0;
    if (ok) {
        c.dev = (uint64_t)sb.st_dev;
        c.ino = (uint64_t)sb.st_ino;
        ok = lmdb_checkpoint_write(fd, &c) == 0;
    }
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Makes directory "name", as the disk of a crashed machine, from the data
 * file "data" and the checkpoint file "ckpt"; fills "data_out" with its
 * data file's path.  True on success. */
static bool
disk_make(const char *name, const char *data, const char *ckpt, char data_out[300])
{
    char ckpt_out[300];
    snprintf(data_out, 300, "%s/data.mdb", path_of(name));
    snprintf(ckpt_out, sizeof ckpt_out, "%s/" CHECKPOINT_FILE, path_of(name));
    return mkdir(path_of(name), 0700) == 0 && file_copy(data, data_out) &&
           file_copy(ckpt, ckpt_out) && checkpoint_about(ckpt_out, data_out);
}

/* The newest transaction id of store "name"'s data file (0: unknown). */
static uint64_t
last_txnid(const char *name)
{
    char path[300];
    unsigned char meta[2][CHECKPOINT_META_LEN];
    uint64_t newest = 0;
    snprintf(path, sizeof path, "%s/data.mdb", path_of(name));
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    if (lmdb_checkpoint_meta_read(fd, (unsigned)sysconf(_SC_PAGESIZE), meta, &newest) != 0)
        newest = 0;
    close(fd);
    return newest;
}

/* Waits (2 s at most) for the checkpoint record of store "name" to cover
 * its last commit; returns the record's transaction id (0: it did not). */
static uint64_t
checkpoint_wait(const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", path_of(name), CHECKPOINT_FILE);
    uint64_t want = last_txnid(name);
    for (int i = 0; i < 200; i++) {
        int fd = open(path, O_RDONLY);
        Checkpoint c;
        bool done = fd >= 0 && lmdb_checkpoint_read(fd, &c) == 0 && !c.trust_disk && c.txnid >= want;
        if (fd >= 0)
            close(fd);
        if (done)
            return c.txnid;
        usleep(10000);
    }
    return 0;
}

/* Puts records "<prefix>0" .. "<prefix><n-1>" into "table", a commit each. */
static void
puts_each(Store *st, uint32_t table, const char *prefix, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        char key[32];
        StoreTxn *t = NULL;
        snprintf(key, sizeof key, "%s%d", prefix, i);
        if (store_txn_begin(st, true, &t) != STORE_OK) {
            failed++;
            continue;
        }
        if (put(t, table, key, "value", "o", 0) != STORE_OK) {
            store_txn_abort(t);
            failed++;
        } else if (store_txn_commit(t) != STORE_OK) {
            failed++;
        }
    }
    CHECK(failed == 0, "%d of %d puts of %s* failed", failed, n, prefix);
}

/* Opens store "name" as in boot "boot" and counts the records of "table"
 * whose keys start with "prefix" (-1 when it cannot open). */
static int
count_prefix_in_boot(const char *name, const char *boot, uint32_t table, const char *prefix)
{
    StoreOptions opts = {.sync = false, .boot_id = boot};
    Store *st = NULL;
    if (store_open(path_of(name), &opts, &st, NULL, 0) != STORE_OK)
        return -1;
    int n = 0;
    StoreTxn *t = begin(st, false);
    store_record_each(t, table, bytes_of(prefix), count_one, &n);
    store_txn_abort(t);
    store_close(st);
    return n;
}

/* With sync off commits are not synced, yet a machine crash never leaves a
 * corrupt store: the disk after one is simulated as the data file as it
 * was at the last checkpoint, with the meta pages of later commits (which
 * may reach the disk before their pages), and the checkpoint record then.
 * Opened in a later boot, the store is exactly as at the checkpoint;
 * opened in the same boot (processes crashed, the page cache is whole),
 * nothing is put back. */
static void
test_machine_crash(void)
{
    StoreOptions opts = {.sync = false, .boot_id = "boot-one"};
    Store *st = NULL;
    CHECK(store_open(path_of("crash"), &opts, &st, NULL, 0) == STORE_OK, "open");
    if (!st)
        return;
    uint32_t id = table_make(st, "q");
    puts_each(st, id, "a", 300);
    CHECK(checkpoint_wait("crash") > 0, "a checkpoint covers the first records");
    char data[300], ckpt[300];
    snprintf(data, sizeof data, "%s/data.mdb", path_of("crash"));
    snprintf(ckpt, sizeof ckpt, "%s/" CHECKPOINT_FILE, path_of("crash"));
    char disk_data[300], same_data[300], ckpt_then[300];
    snprintf(ckpt_then, sizeof ckpt_then, "%s/" CHECKPOINT_FILE, path_of("crash-disk"));
    CHECK(disk_make("crash-disk", data, ckpt, disk_data), "the disk at the checkpoint");

    puts_each(st, id, "b", 300);   /* unsynced; a checkpoint may follow */
    CHECK(disk_make("crash-same", data, ckpt_then, same_data),
          "the page cache after the processes died");
    /* The newest meta pages reached the disk; the pages they point at did not. */
    CHECK(file_copy_head(data, disk_data, 2 * 4096), "later meta pages on the disk");
    store_close(st);

    /* Without the checkpoint the crashed disk is not the store it was. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        StoreOptions same = {.sync = false, .boot_id = "boot-one"};
        Store *s2 = NULL;
        char copy[300];
        snprintf(copy, sizeof copy, "%s/data.mdb", path_of("crash-raw"));
        if (mkdir(path_of("crash-raw"), 0700) || !file_copy(disk_data, copy))
            _exit(3);
        if (store_open(path_of("crash-raw"), &same, &s2, NULL, 0) != STORE_OK)
            _exit(2);
        int n = 0;
        StoreTxn *t = NULL;
        if (store_txn_begin(s2, false, &t) != STORE_OK)
            _exit(2);
        int rc = store_record_each(t, id, bytes_of(""), count_one, &n);
        _exit(rc == STORE_OK && n == 300 ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "the crashed disk read as is is not the store at the checkpoint (status %d)", status);

    CHECK(count_prefix_in_boot("crash-disk", "boot-two", id, "a") == 300,
          "after the machine crash: every record of the checkpoint");
    CHECK(count_prefix_in_boot("crash-disk", "boot-two", id, "b") == 0,
          "and none of the commits after it");
    st = NULL;
    opts.boot_id = "boot-two";
    CHECK(store_open(path_of("crash-disk"), &opts, &st, NULL, 0) == STORE_OK, "reopen");
    if (st) {
        puts_each(st, id, "c", 50);
        store_close(st);
    }
    CHECK(count_prefix_in_boot("crash-disk", "boot-three", id, "") == 350,
          "the store goes on: %d records",
          count_prefix_in_boot("crash-disk", "boot-three", id, ""));

    CHECK(count_prefix_in_boot("crash-same", "boot-one", id, "") == 600,
          "processes crashed, not the machine: nothing lost");
}

/* A thread sleeping in store_wait_change, and what it saw. */
struct change_wait {
    Store   *st;
    uint64_t seen;
    bool     changed;
    int64_t  woke_at;
};

static void *
thread_wait_change(void *p)
{
    struct change_wait *w = p;
    w->changed = store_wait_change(w->st, w->seen, store_now(w->st) + 30 * SEC);
    w->woke_at = store_now(w->st);
    return NULL;
}

/* store_wait_change wakes on a commit that changed something, on
 * store_wake, and at its instant; a commit that changed nothing or a
 * stale ticket do not make it sleep past a change. */
static void
test_wait_change(Store *st)
{
    uint64_t seen = store_changes(st);
    int64_t t0 = store_now(st);
    CHECK(!store_wait_change(st, seen, t0 + 50 * 1000 * 1000), "no change: the instant ends it");
    CHECK(store_now(st) >= t0 + 50 * 1000 * 1000, "not before its instant");

    StoreTxn *t = begin(st, true);
    uint32_t id;
    CHECK(store_table_create(t, "changes", bytes_of(""), &id) == STORE_OK, "create");
    commit(t);
    CHECK(store_changes(st) != seen, "a commit moves the ticket on");
    CHECK(store_wait_change(st, seen, INT64_MAX), "a stale ticket returns at once");

    seen = store_changes(st);
    t = begin(st, true);
    commit(t);
    CHECK(store_changes(st) == seen, "a commit that changed nothing does not");

    struct change_wait w = {st, store_changes(st), false, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, thread_wait_change, &w) == 0, "thread");
    usleep(100 * 1000);
    int64_t put_at = store_now(st);
    t = begin(st, true);
    CHECK(store_meta_put(t, id, bytes_of("k"), bytes_of("v")) == STORE_OK, "put");
    commit(t);
    pthread_join(th, NULL);
    CHECK(w.changed && w.woke_at >= put_at && w.woke_at < put_at + 10 * SEC,
          "a commit wakes a sleeper (changed %d)", w.changed);

    w = (struct change_wait){st, store_changes(st), false, 0};
    CHECK(pthread_create(&th, NULL, thread_wait_change, &w) == 0, "thread");
    usleep(100 * 1000);
    store_wake(st);
    pthread_join(th, NULL);
    CHECK(w.changed && w.woke_at < put_at + 20 * SEC, "store_wake wakes a sleeper");
}

static void
test_now(Store *st)
{
    int64_t a = store_now(st), b = store_now(st);
    CHECK(a > 1600000000LL * SEC && b >= a, "clock in ns since the epoch");
}

int
main(void)
{
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_strerror();
    test_open_reopen();
    test_not_a_store();
    test_counts_upgrade();

    Store *st = open_store("main", true, 0);
    if (st) {
        test_now(st);
        test_catalog(st);
        test_records(st);
        test_toobig(st);
        test_queue(st);
        test_queue_scale(st);
        test_counts(st);
        test_meta(st);
        test_threads(st);
        test_wait_change(st);
        store_close(st);
    }
    test_two_processes();
    test_map_resized_and_full();
    test_map_resized_while_opening();
    test_nosync();
    test_machine_crash();
    test_write_threads();
    test_write_rollback_alone();
    test_write_status();
    test_write_grows();
    test_map_size_env();
    test_write_processes();

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return unit_test_summary();
}
