/* store_test.c — the store interface (store.h) as any backend must keep
 * it, in one process: opening and reopening, the catalog, records and
 * their key lengths, the queue's head and counts, meta values,
 * transactions in threads, group commit (store_write) and waiting for
 * changes.  What is the LMDB backend's own — several processes on one
 * environment, the map, checkpoints, formats — is lmdb_test.c's. */
#include "store_test.h"

#include <pthread.h>
#include <time.h>

/* ---- the environment ---- */

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
test_strerror(void)
{
    for (int s = STORE_OK; s <= STORE_CORRUPT; s++)
        CHECK(store_strerror(s) && store_strerror(s)[0], "message for %d", s);
    CHECK(strcmp(store_strerror(999), store_strerror(STORE_OK)) != 0, "unknown status");
    CHECK(strcmp(store_strerror(STORE_FULL), store_strerror(STORE_IO)) != 0, "distinct");
}

/* ---- the catalog ---- */

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
    static const struct { const char *from, *to; int want; } renames[] = {
        {"gamma", "alpha", STORE_EXISTS},    /* onto a table */
        {"gamma", "gamma", STORE_EXISTS},    /* onto itself */
        {"delta", "omega", STORE_NOTFOUND},  /* no such table */
        {"gamma", "", STORE_TOOBIG},         /* to the empty name */
        {"gamma", "omega", STORE_OK},
    };
    for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++)
        CHECK(store_table_rename(t, renames[i].from, renames[i].to) == renames[i].want,
              "rename %s to '%s'", renames[i].from, renames[i].to);
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

    /* Walks: from where, stopped after how many, what they return, how
     * many records they meet, the first and the last. */
    static const struct { const char *from; int stop_after, rc, n; const char *first, *last; }
    walks[] = {
        {"", 0, 0, 6, "", "e"},     /* every record, the empty key first */
        {"bb", 0, 0, 3, "c", "e"},  /* from a key between two */
        {"b", 2, 7, 2, "b", "c"},   /* from a key (inclusive), stopped by the function */
    };
    for (size_t i = 0; i < sizeof walks / sizeof walks[0]; i++) {
        struct each_records e = {.stop_after = walks[i].stop_after};
        int rc = store_record_each(t, id, bytes_of(walks[i].from), collect_record, &e);
        CHECK(rc == walks[i].rc && e.n == walks[i].n && strcmp(e.keys[0], walks[i].first) == 0 &&
              strcmp(e.keys[e.n - 1], walks[i].last) == 0,
              "walk from '%s': rc %d, %d records", walks[i].from, rc, e.n);
    }
    struct each_records e = {0};
    store_record_each(t, id, (StoreBytes){NULL, 0}, collect_record, &e);
    CHECK_STR(e.keys[1], "a");
    CHECK_STR(e.vals[1], "A!");

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
    StoreBytes v;
    StoreTxn *t = begin(st, true);
    uint32_t id;
    CHECK(store_table_create(t, "big", bytes_of(""), &id) == STORE_OK, "create");
    /* Keys, order keys (ready and waiting) and meta names of each length. */
    for (size_t len = STORE_MAX_KEY; len <= STORE_MAX_KEY + 1; len++) {
        int want = len > STORE_MAX_KEY ? STORE_TOOBIG : STORE_OK;
        StoreBytes k = {big, len};
        StoreSlot ready = {.order_key = big, .order_len = len},
                  waiting = {.order_key = big, .order_len = len, .wake_ns = store_now(st) + SEC};
        CHECK(store_record_put(t, id, k, bytes_of("v"), NULL) == want, "%zu-byte key", len);
        CHECK(store_record_get(t, id, k, &v, NULL) == want && (want || bytes_eq(v, "v")),
              "get of a %zu-byte key", len);
        CHECK(store_record_put(t, id, bytes_of("r"), bytes_of("v"), &ready) == want,
              "%zu-byte order key", len);
        CHECK(store_record_put(t, id, bytes_of("r"), bytes_of("v"), &waiting) == want,
              "%zu-byte order key, waiting", len);
        CHECK(store_meta_put(t, id, k, bytes_of("v")) == want, "%zu-byte meta name", len);
    }
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

static void
test_queue(Store *st)
{
    StoreTxn *t = begin(st, true);
    uint32_t q, q2;
    int64_t now = store_now(st);
    StoreBytes k, v;
    CHECK(store_table_create(t, "q", bytes_of(""), &q) == STORE_OK, "create q");
    CHECK(store_table_create(t, "q2", bytes_of(""), &q2) == STORE_OK, "create q2");
    CHECK(put(t, q2, "x", "vx", "00", 0) == STORE_OK, "other queue");
    /* Five ready records; order keys not in key or arrival order (r4 has
     * r2's, and came later). */
    static const QueueStep filed[] = {
        Q_HEAD("", 0),        Q_PUT("r1", "30", 0), Q_PUT("r2", "10", 0),
        Q_PUT("r3", "20", 0), Q_PUT("r4", "10", 0), Q_PUT("r5", "40", 0),
    };
    QUEUE_SCRIPT(t, q, now, filed);
    CHECK(store_queue_head(t, q, now, &k, &v) == STORE_OK && bytes_eq(k, "r2") &&
          bytes_eq(v, "r2"), "head is smallest order, earliest arrival");

    /* Claim the head using the bytes the store returned. */
    StoreSlot held = {.order_key = "10", .order_len = 2, .wake_ns = now + SEC};
    CHECK(store_record_put(t, q, k, v, &held) == STORE_OK, "claim r2 with own bytes");
    CHECK(store_record_get(t, q, bytes_of("r2"), &v, NULL) == STORE_OK && bytes_eq(v, "r2"),
          "claimed value intact");
    static const QueueStep claimed[] = {
        Q_HEAD("r4", 0), Q_PUT("r4", "10", 2 * SEC), Q_HEAD("r3", 0), Q_WAITING("r2,r4"),
    };
    QUEUE_SCRIPT(t, q, now, claimed);
    struct each_waiting e;
    waiting_of(t, q, &e);
    CHECK(e.wakes[0] == now + SEC && e.wakes[1] == now + 2 * SEC, "wake instants");

    /* Read-only transactions look without draining. */
    commit(t);
    t = begin(st, false);
    static const QueueStep looked[] = {Q_HEAD("r3", 10 * SEC)};
    QUEUE_SCRIPT(t, q, now, looked);
    store_txn_abort(t);

    /* At now + 1.5 s r2 is due again: back in its original place, ahead of
     * r3 (order 20); r4 (same order, later arrival) is still held.  Both
     * due, r2 comes before r4 by arrival.  A delete, or a put without a
     * slot, takes a record out of both indexes. */
    t = begin(st, true);
    static const QueueStep moved[] = {
        Q_HEAD("r2", SEC + SEC / 2), Q_WAITING("r4"),
        Q_PUT("r2", "10", 3 * SEC),  Q_HEAD("r2", 5 * SEC),
        Q_PUT("r2", NULL, 0),        Q_HEAD("r4", 5 * SEC),
        Q_DELETE("r4"),              Q_HEAD("r3", 5 * SEC),
        Q_PUT("r1", "30", SEC),      Q_DELETE("r1"),
        Q_WAITING(""),               Q_PUT("r3", "20", SEC),
        Q_PUT("r3", NULL, 0),        Q_WAITING(""),
        Q_HEAD("r5", 5 * SEC),       Q_DELETE("r5"),
        Q_HEAD("", 5 * SEC),
    };
    QUEUE_SCRIPT(t, q, now, moved);
    CHECK(store_record_get(t, q, bytes_of("r2"), &v, NULL) == STORE_OK, "slotless still there");
    CHECK_STR(head_key(t, q2, now, NULL), "x");

    /* Order keys that are prefixes of each other, and the empty order key. */
    const char a0[] = {'a', '\0'};
    StoreSlot s0 = {.order_key = a0, .order_len = 2};
    CHECK(store_record_put(t, q, bytes_of("p2"), bytes_of(""), &s0) == STORE_OK, "p2");
    static const QueueStep prefixes[] = {
        Q_PUT("p1", "a\x01", 0), Q_PUT("p3", "a", 0), Q_HEAD("p3", 0), Q_PUT("p3", NULL, 0),
        Q_HEAD("p2", 0),        Q_PUT("p4", "", 0), Q_HEAD("p4", 0),
    };
    QUEUE_SCRIPT(t, q, now, prefixes);
    commit(t);

    /* Dropping a queue removes its waiting records too. */
    t = begin(st, true);
    CHECK(put(t, q, "w", "", "z", now + SEC) == STORE_OK, "w waits");
    CHECK(store_table_drop(t, "q") == STORE_OK, "drop q");
    static const QueueStep dropped[] = {Q_WAITING(""), Q_HEAD("", 10 * SEC)};
    QUEUE_SCRIPT(t, q, now, dropped);
    CHECK_STR(head_key(t, q2, now, NULL), "x");
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
    struct each_waiting e;
    CHECK(waiting_of(t, q, &e) == 0, "all drained, %d left", e.n);
    CHECK(store_table_drop(t, "scale") == STORE_OK, "drop");
    commit(t);
}

/* ---- the counts ---- */

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
    /* d is delayed, x in no index; h, l and n are held: h to be ready, l
     * to retire, n to be delayed.  A rewrite counts nothing. */
    static const QueueStep filed[] = {
        Q_COUNTS("", 0, 0, 0, 0, 0, 0, 0),
        Q_PUT("b", "20", 0), Q_PUT("c", "30", 0), Q_PUT("d", "40", 2 * SEC),
        Q_PUT("x", NULL, 0),
        Q_HOLD("h", "10", SEC, 0), Q_HOLD("l", "05", SEC, STORE_SLOT_RETIRE),
        Q_HOLD("n", "01", SEC, 3 * SEC),
        Q_COUNTS("b", 0, 7, 2, 3, 1, 1, 0),
        Q_PUT("b", "20", 0),
        Q_COUNTS("b", 0, 7, 2, 3, 1, 1, 0),
    };
    QUEUE_SCRIPT(t, q, now, filed);
    commit(t);

    /* Read-only, nothing moved: the holds that ended count where they go;
     * h goes back ahead of b in claim order. */
    t = begin(st, false);
    static const QueueStep looked[] = {
        Q_COUNTS("h", SEC + SEC / 2, 7, 3, 0, 2, 2, 0),
    };
    QUEUE_SCRIPT(t, q, now, looked);
    store_txn_abort(t);
    /* A claim moves them: the same counts; l retired, n delayed until its
     * then.  Past every instant, all are ready but the retired and the
     * slotless, moved or not.  Deletes: a held one, a ready one, one in no
     * index. */
    t = begin(st, true);
    static const QueueStep claimed[] = {
        Q_HEAD("h", SEC + SEC / 2),
        Q_COUNTS("h", SEC + SEC / 2, 7, 3, 0, 2, 2, 0),
        Q_WAITING("d,n"),
    };
    QUEUE_SCRIPT(t, q, now, claimed);
    struct each_waiting e;
    CHECK(waiting_of(t, q, &e) == 2 && e.wakes[1] == now + 3 * SEC, "n delayed until its then");
    static const QueueStep moved[] = {
        Q_COUNTS("n", 4 * SEC, 7, 5, 0, 0, 2, 0),
        Q_HEAD("n", 4 * SEC),
        Q_COUNTS("n", 4 * SEC, 7, 5, 0, 0, 2, 0),
        Q_HOLD("h", "10", 60 * SEC, 0), Q_DELETE("h"), Q_DELETE("n"), Q_DELETE("x"),
        Q_COUNTS("b", 4 * SEC, 4, 3, 0, 0, 1, 0),
    };
    QUEUE_SCRIPT(t, q, now, moved);
    commit(t);

    /* A write that fails is rolled back with its counts. */
    CHECK(store_write(st, fail_after_put, &q) == -1, "failing write");
    t = begin(st, false);
    static const QueueStep rolled_back[] = {
        Q_COUNTS("b", 4 * SEC, 4, 3, 0, 0, 1, 0),
    };
    QUEUE_SCRIPT(t, q, now, rolled_back);
    store_txn_abort(t);

    /* Dropped and defined again: a new table, counted from zero. */
    t = begin(st, true);
    CHECK(store_table_drop(t, "counted") == STORE_OK, "drop");
    CHECK(store_table_create(t, "counted", bytes_of(""), &q) == STORE_OK, "create again");
    check_counts(t, q, now, (uint64_t[6]){0, 0, 0, 0, 0, 0}, "", "defined again");
    CHECK(store_table_drop(t, "counted") == STORE_OK, "drop again");
    commit(t);
}

/* ---- per-table meta values ---- */

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

/* ---- threads ---- */

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
        if (store_txn_begin(a->st, false, &r) != STORE_OK) {
            a->failures++;
            continue;
        }
        (void)counter_read(r, a->table, "counter");
        if (store_txn_begin(a->st, true, &w) != STORE_OK) {
            a->failures++;
            store_txn_abort(r);
            continue;
        }
        uint64_t n = counter_read(w, a->table, "counter") + 1;
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
    uint64_t n = counter_read(t, id, "counter");
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
    int failures = writers_run(st, id, N, 0, M, "v", 1);
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

/* ---- waiting for changes ---- */

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
    if (!test_root_make("store_test"))
        return 1;
    test_strerror();
    test_open_reopen();

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
    test_nosync();
    test_write_threads();
    test_write_rollback_alone();
    test_write_status();

    test_root_remove();
    return unit_test_summary();
}
