/* store_test.c — the backend conformance suite, part one: what store.h
 * promises of any backend beside the queue primitives — reopening, the
 * catalog, records of collections (their sequence, walks, binary keys,
 * bytes of the store's own), key lengths, statuses, transactions in
 * threads, group commit (store_write: shared groups, failures rolled back
 * alone, a function's own value), a definition changed by another
 * process, waiting for changes and the clock.  The
 * queue primitives are part two, conformance_test.c.
 *
 * The backend is a parameter: $QUEUEFS_TEST_STORE names the store to open
 * (an LMDB directory, or another backend's location, as its store_open
 * takes it); unset, a fresh LMDB directory under /tmp, removed afterwards.
 * Every case makes tables of its own with names no other run uses, and
 * looks at nothing else, so a store shared with other runs (or with
 * conformance_test running at once) does not disturb it; nothing here
 * touches what only LMDB has.  LMDB's own cases (directories, formats, the
 * map, several processes, checkpoints) are lmdb_format_test.c's and
 * lmdb_test.c's.
 *
 *     QUEUEFS_TEST_STORE=/path/to/store store/store_test
 */
#include "store_test.h"

#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

/* ---- the environment ---- */

static void
test_strerror(void)
{
    for (int s = STORE_OK; s <= STORE_EXHAUSTED; s++)
        CHECK(store_strerror(s) && store_strerror(s)[0] &&
                  strcmp(store_strerror(s), store_strerror(999)) != 0,
              "a message of its own for %d", s);
    for (int s = STORE_OK + 1; s <= STORE_EXHAUSTED; s++)
        CHECK(strcmp(store_strerror(s), store_strerror(s - 1)) != 0, "distinct: %d", s);
    CHECK(store_strerror(999) && strcmp(store_strerror(999), store_strerror(STORE_OK)) != 0,
          "unknown status");
}

/* A server's location is shown without its password; a path as it is. */
static void
test_location_shown(void)
{
    static const char *const cases[][2] = {
        {"postgresql://u:secret@h:5432/db?sslmode=require",
         "postgresql://u@h:5432/db?sslmode=require"},
        {"postgresql://u@h/db?password=secret&sslmode=require",
         "postgresql://u@h/db?sslmode=require"},
        {"postgres://h/db?a=1&password=secret&b=2", "postgres://h/db?a=1&b=2"},
        {"postgresql:///db?host=/run/pg&password=secret", "postgresql:///db?host=/run/pg"},
        {"postgresql://u:p@h", "postgresql://u@h"},
        {"/var/lib/queuefs", "/var/lib/queuefs"},
        {"rel/dir:with@signs", "rel/dir:with@signs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[256];
        store_location_shown(cases[i][0], out, sizeof out);
        CHECK_STR(out, cases[i][1]);
    }
    CHECK(store_location_is_server("postgresql://h/db") &&
              store_location_is_server("postgres://h") &&
              !store_location_is_server("/srv/postgresql://x") && !store_location_is_server("pg"),
          "which locations are servers'");
}

static void
test_now(Store *st)
{
    int64_t a = store_now(st), b = store_now(st);
    CHECK(a > 1600000000LL * SEC && b >= a, "clock in ns since the epoch");
    StoreTxn *t = begin(st, false);
    int64_t n = store_txn_now(t);
    sleep_ms(2);
    CHECK(n >= a && store_txn_now(t) == n, "a read transaction has one instant too");
    store_txn_abort(t);
}

/* What a store keeps across closing and opening it again, with sync on or
 * off, and what an aborted write leaves (nothing).  Closes "*st" and
 * leaves it open again with sync on. */
static void
test_reopen(Store **st)
{
    const char *name = unique_name("persist");
    char kept[128];
    snprintf(kept, sizeof kept, "%s", name);
    StoreTxn *t = begin(*st, true);
    uint32_t id = 0, id2 = 0;
    CHECK(store_table_create(t, kept, bytes_of("def1"), &id) == STORE_OK, "create");
    CHECK(put(t, id, "k", "v") == STORE_OK, "put");
    commit(t);
    store_close(*st);

    for (int sync = 1; sync >= 0 && (*st = test_store_open(sync)); sync--) {
        StoreBytes def;
        StoreRecord r;
        t = begin(*st, false);
        CHECK(store_table_get(t, kept, &id2, &def) == STORE_OK && id2 == id, "table persisted");
        CHECK(bytes_eq(def, "def1"), "definition persisted");
        CHECK(store_record_get(t, id, bytes_of("k"), &r) == STORE_OK && bytes_eq(r.value, "v"),
              "record persisted (sync %d)", sync);
        CHECK(store_record_get(t, id, bytes_of("gone"), &r) == STORE_NOTFOUND,
              "an aborted put is not there");
        store_txn_abort(t);
        t = begin(*st, true);
        CHECK(put(t, id, "gone", "x") == STORE_OK, "put in an aborted transaction");
        store_txn_abort(t);
        store_txn_abort(NULL);
        t = begin(*st, false);
        CHECK(store_record_get(t, id, bytes_of("gone"), &r) == STORE_NOTFOUND,
              "aborted put not visible");
        store_txn_abort(t);
        t = begin(*st, true);
        CHECK(replace(t, id, "k", bytes_of(sync ? "v" : "nosync")) == STORE_OK, "replace");
        commit(t);
        store_close(*st);
    }
    *st = test_store_open(false);
    if (!*st)
        return;
    StoreRecord r;
    t = begin(*st, false);
    CHECK(store_record_get(t, id, bytes_of("k"), &r) == STORE_OK && bytes_eq(r.value, "nosync"),
          "a write with sync off persisted across close");
    store_txn_abort(t);
    store_close(*st);
    *st = test_store_open(true);
}

/* ---- the catalog ---- */

/* What the catalog walk met of the tables under one prefix: the first 8
 * names (without it) and ids, and how many. */
struct each_tables {
    const char *prefix;
    char names[8][32];
    uint32_t ids[8];
    int n;
};

static int
collect_table(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    struct each_tables *e = ctx;
    size_t n = strlen(e->prefix);
    (void)def;
    if (strncmp(name, e->prefix, n) != 0)
        return 0;
    if (e->n < 8) {
        snprintf(e->names[e->n], sizeof e->names[0], "%s", name + n);
        e->ids[e->n] = id;
    }
    e->n++;
    return 0;
}

/* Stops the walk at the second table with 42; counts in *(int *)ctx. */
static int
stop_at_second(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)name, (void)id, (void)def;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

/* True when "table" holds no record and no queue entry: counts of zero,
 * or (a backend that knows no dropped table) STORE_NOTFOUND. */
static bool
table_empty(StoreTxn *t, uint32_t table)
{
    StoreQueueCounts c;
    int rc = store_queue_counts(t, table, &c);
    return rc == STORE_NOTFOUND || (rc == STORE_OK && c.records == 0 && c.ready == 0 &&
                                    c.held == 0 && c.delayed == 0 && !c.has_head);
}

static void
test_catalog(Store *st)
{
    char p[128], alpha[160], beta[160], gamma[160], delta[160], omega[160];
    snprintf(p, sizeof p, "%s/", unique_name("cat"));
    snprintf(alpha, sizeof alpha, "%salpha", p);
    snprintf(beta, sizeof beta, "%sbeta", p);
    snprintf(gamma, sizeof gamma, "%sgamma", p);
    snprintf(delta, sizeof delta, "%sdelta", p);
    snprintf(omega, sizeof omega, "%somega", p);
    StoreTxn *t = begin(st, true);
    uint32_t a = 0, b = 0, c = 0, id = 0;
    StoreBytes def;
    StoreRecord r;
    CHECK(store_table_create(t, beta, bytes_of("B"), &b) == STORE_OK, "create beta");
    CHECK(store_table_create(t, alpha, bytes_of("A"), &a) == STORE_OK, "create alpha");
    CHECK(store_table_create(t, gamma, (StoreBytes){NULL, 0}, &c) == STORE_OK, "create gamma");
    CHECK(a != b && b != c && a != c, "distinct ids");
    CHECK(store_table_create(t, alpha, bytes_of("X"), &id) == STORE_EXISTS, "exists");
    CHECK(store_table_get(t, alpha, &id, &def) == STORE_OK && id == a && bytes_eq(def, "A"),
          "get alpha");
    CHECK(store_table_get(t, gamma, NULL, &def) == STORE_OK && def.len == 0, "empty def");
    CHECK(store_table_get(t, delta, &id, &def) == STORE_NOTFOUND, "absent table");
    CHECK(store_table_redefine(t, alpha, bytes_of("A2")) == STORE_OK, "redefine");
    CHECK(store_table_get(t, alpha, &id, &def) == STORE_OK && id == a && bytes_eq(def, "A2"),
          "redefined keeps id");
    CHECK(store_table_redefine(t, delta, bytes_of("D")) == STORE_NOTFOUND, "redefine absent");

    struct each_tables e = {.prefix = p};
    CHECK(store_table_each(t, collect_table, &e) == 0, "each");
    CHECK(e.n == 3, "3 tables, got %d", e.n);
    CHECK_STR(e.names[0], "alpha");
    CHECK_STR(e.names[1], "beta");
    CHECK_STR(e.names[2], "gamma");
    CHECK(e.ids[0] == a && e.ids[1] == b && e.ids[2] == c, "ids in each");
    int n = 0;
    CHECK(store_table_each(t, stop_at_second, &n) == 42 && n == 2, "each stops");

    /* Rename moves the name; id, definition, records and queue go with it. */
    StoreQueue qc = {.table = c, .timeout_ns = 30 * SEC};
    CHECK(add_in(t, &qc, "g1", "gv", "o", 0) == STORE_OK, "put gamma g1");
    const struct {
        const char *from, *to;
        int want;
    } renames[] = {
        {gamma, alpha, STORE_EXISTS},   /* onto a table */
        {gamma, gamma, STORE_EXISTS},   /* onto itself */
        {delta, omega, STORE_NOTFOUND}, /* no such table */
        {gamma, "", STORE_TOOBIG},      /* to the empty name */
        {gamma, omega, STORE_OK},
    };
    for (size_t i = 0; i < sizeof renames / sizeof renames[0]; i++)
        CHECK(store_table_rename(t, renames[i].from, renames[i].to) == renames[i].want,
              "rename %s to '%s'", renames[i].from, renames[i].to);
    CHECK(store_table_get(t, gamma, &id, &def) == STORE_NOTFOUND, "old name gone");
    CHECK(store_table_get(t, omega, &id, &def) == STORE_OK && id == c && def.len == 0,
          "new name keeps id and definition");
    StoreQueueCounts cn = counts_in(t, c);
    CHECK(cn.records == 1 && cn.ready == 1 && cn.has_head && bytes_eq(cn.head_key, "g1"),
          "records and queue kept");
    CHECK(store_table_rename(t, omega, gamma) == STORE_OK, "rename back");

    /* Drop removes records and queue entries; the name comes back empty. */
    StoreQueue qa = {.table = a, .timeout_ns = 30 * SEC}, qb = {.table = b, .timeout_ns = SEC};
    CHECK(add_in(t, &qa, "r1", "v1", "o", 0) == STORE_OK, "put r1");
    CHECK(add_in(t, &qa, "r2", "v2", "o", store_now(st) + 100 * SEC) == STORE_OK, "put r2");
    CHECK(put(t, a, "r3", "v3") == STORE_OK, "put r3");
    CHECK(add_in(t, &qb, "r1", "b1", "o", 0) == STORE_OK, "put beta r1");
    CHECK(store_identity_note(t, a, 50) == STORE_OK, "an identity held");
    CHECK(store_table_drop(t, alpha) == STORE_OK, "drop");
    CHECK(store_table_drop(t, alpha) == STORE_NOTFOUND, "drop again");
    CHECK(store_table_get(t, alpha, &id, &def) == STORE_NOTFOUND, "dropped");
    CHECK(store_record_get(t, a, bytes_of("r1"), &r) == STORE_NOTFOUND, "records gone");
    CHECK(store_record_get(t, a, bytes_of("r3"), &r) == STORE_NOTFOUND, "records gone");
    CHECK(table_empty(t, a), "ready and waiting entries gone");
    cn = counts_in(t, b);
    CHECK(cn.records == 1 && cn.has_head && bytes_eq(cn.head_key, "r1"), "other table untouched");
    CHECK(store_record_get(t, b, bytes_of("r1"), &r) == STORE_OK && bytes_eq(r.value, "b1"),
          "other table record");

    CHECK(store_table_create(t, alpha, bytes_of("new"), &id) == STORE_OK, "recreate");
    CHECK(id != a && id != b && id != c, "a new id %u", (unsigned)id);
    CHECK(store_record_get(t, id, bytes_of("r1"), &r) == STORE_NOTFOUND, "new is empty");
    CHECK(put(t, id, "r1", "v") == STORE_OK, "put in new");
    CHECK(store_record_get(t, id, bytes_of("r1"), &r) == STORE_OK && r.seq == 1,
          "arrival sequence restarts: %" PRIu64, r.seq);
    int64_t next = 0;
    CHECK(store_identity_next(t, id, 1, &next) == STORE_OK && next == 1, "identities restart");
    CHECK(store_table_create(t, "", bytes_of("x"), &id) == STORE_TOOBIG, "empty name");
    const char *names[] = {alpha, beta, gamma};
    for (int i = 0; i < 3; i++)
        CHECK(store_table_drop(t, names[i]) == STORE_OK, "drop %s", names[i]);
    commit(t);
}

/* ---- records ---- */

/* What a records walk met: the first 16 keys and values, how many, and
 * after how many the walk is to stop with 7 (0: never). */
struct each_records {
    char keys[16][16];
    char vals[16][16];
    int n;
    int stop_after;
};

static int
collect_record(void *ctx, const StoreRecord *r)
{
    struct each_records *e = ctx;
    if (e->n < 16) {
        snprintf(e->keys[e->n], 16, "%.*s", (int)r->key.len, (const char *)r->key.data);
        snprintf(e->vals[e->n], 16, "%.*s", (int)r->value.len, (const char *)r->value.data);
    }
    e->n++;
    return e->stop_after && e->n == e->stop_after ? 7 : 0;
}

static void
test_records(Store *st)
{
    StoreTxn *t = begin(st, true);
    uint32_t id, other;
    CHECK(store_table_create(t, unique_name("recs"), bytes_of(""), &id) == STORE_OK, "create");
    CHECK(store_table_create(t, unique_name("recs"), bytes_of(""), &other) == STORE_OK, "2");
    const char *keys[] = {"d", "b", "a", "c", "e"};
    for (int i = 0; i < 5; i++)
        CHECK(put(t, id, keys[i], keys[i]) == STORE_OK, "put %s", keys[i]);
    CHECK(put(t, other, "0", "other") == STORE_OK, "other table");
    CHECK(put(t, id, "", "empty key") == STORE_OK, "empty key");
    CHECK(put(t, id, "d", "again") == STORE_EXISTS, "create twice: EXISTS");

    StoreRecord r, r2;
    CHECK(store_record_get(t, id, bytes_of("d"), &r) == STORE_OK && bytes_eq(r.value, "d"), "get");
    CHECK(r.seq == 1, "first arrival is 1, got %" PRIu64, r.seq);
    CHECK(r.attempts == 0 && r.hold == 0 && r.claimed_until == 0 && r.not_before == 0 &&
              r.consumer.len == 0 && r.instance.len == 0 && r.claimed == 0,
          "a collection's record has zero columns");
    CHECK(r.since > 0 && r.since == r.written && r.written == r.changed, "stamped at creation");
    CHECK(store_record_get(t, id, bytes_of("a"), &r) == STORE_OK && r.seq == 3, "seq 3");
    CHECK(replace(t, id, "a", bytes_of("A!")) == STORE_OK, "replace");
    CHECK(store_record_get(t, id, bytes_of("a"), &r2) == STORE_OK && bytes_eq(r2.value, "A!"),
          "replaced value");
    CHECK(r2.seq == 3, "replace keeps seq");
    CHECK(replace(t, id, "zz", bytes_of("x")) == STORE_NOTFOUND, "replace absent: NOTFOUND");
    CHECK(store_record_get(t, id, bytes_of("zz"), &r) == STORE_NOTFOUND, "absent");
    CHECK(store_record_get(t, other, bytes_of("a"), &r) == STORE_NOTFOUND, "tables apart");

    /* Walks: from where, stopped after how many, what they return, how
     * many records they meet, the first and the last. */
    static const struct {
        const char *from;
        int stop_after, rc, n;
        const char *first, *last;
    } walks[] = {
        {"", 0, 0, 6, "", "e"},    /* every record, the empty key first */
        {"bb", 0, 0, 3, "c", "e"}, /* from a key between two */
        {"b", 2, 7, 2, "b", "c"},  /* from a key (inclusive), stopped by the function */
        {"f", 0, 0, 0, "", ""},    /* past the last */
    };
    for (size_t i = 0; i < sizeof walks / sizeof walks[0]; i++) {
        struct each_records e = {.stop_after = walks[i].stop_after};
        int rc = store_record_each(t, id, bytes_of(walks[i].from), collect_record, &e);
        int last = e.n ? e.n - 1 : 0;
        CHECK(rc == walks[i].rc && e.n == walks[i].n && strcmp(e.keys[0], walks[i].first) == 0 &&
                  strcmp(e.keys[last], walks[i].last) == 0,
              "walk from '%s': rc %d, %d records", walks[i].from, rc, e.n);
    }
    struct each_records e = {0};
    store_record_each(t, id, (StoreBytes){NULL, 0}, collect_record, &e);
    CHECK_STR(e.keys[1], "a");
    CHECK_STR(e.vals[1], "A!");

    CHECK(store_record_delete(t, id, NULL, bytes_of("c"), 0) == STORE_OK, "delete");
    CHECK(store_record_delete(t, id, NULL, bytes_of("c"), 0) == STORE_NOTFOUND, "delete again");
    CHECK(store_record_get(t, id, bytes_of("c"), &r) == STORE_NOTFOUND, "deleted");
    CHECK(put(t, id, "c", "c2") == STORE_OK, "re-create");
    CHECK(store_record_get(t, id, bytes_of("c"), &r) == STORE_OK && r.seq == 7,
          "re-created gets a new seq, got %" PRIu64, r.seq);

    /* Binary keys and values with NUL bytes. */
    const char bk[] = {'\0', 'x', '\0'}, bv[] = {'\0', '\1', '\0', '\2'};
    StoreRecord b = {.key = {bk, 3}, .value = {bv, 4}};
    CHECK(store_record_create(t, id, NULL, &b) == STORE_OK, "binary put");
    CHECK(store_record_get(t, id, (StoreBytes){bk, 3}, &r) == STORE_OK && r.value.len == 4 &&
              memcmp(r.value.data, bv, 4) == 0,
          "binary get");

    /* Writing bytes that point into the store's own memory. */
    CHECK(store_record_get(t, id, bytes_of("d"), &r) == STORE_OK, "get d");
    StoreRecord own = {.key = r.key, .value = r.value};
    CHECK(store_record_update(t, id, NULL, &own) == STORE_OK, "update with own bytes");
    CHECK(store_record_get(t, id, bytes_of("d"), &r) == STORE_OK && bytes_eq(r.value, "d"),
          "own bytes kept");
    CHECK(store_record_get(t, id, bytes_of("e"), &r) == STORE_OK, "get e");
    own = (StoreRecord){.key = bytes_of("e2"), .value = r.value};
    CHECK(store_record_create(t, id, NULL, &own) == STORE_OK, "create from own bytes");
    CHECK(store_record_get(t, id, bytes_of("e2"), &r) == STORE_OK && bytes_eq(r.value, "e"),
          "copied");
    commit(t);
}

static void
test_toobig(Store *st)
{
    char big[STORE_MAX_KEY + 2];
    memset(big, 'k', sizeof big - 1);
    big[sizeof big - 1] = '\0'; /* 401 bytes */
    StoreRecord r;
    StoreTxn *t = begin(st, true);
    uint32_t id;
    CHECK(store_table_create(t, unique_name("big"), bytes_of(""), &id) == STORE_OK, "create");
    StoreQueue q = {.table = id, .timeout_ns = SEC};
    /* Keys, order keys (ready and waiting) and DEDUPLICATE keys of each length. */
    for (size_t len = STORE_MAX_KEY; len <= STORE_MAX_KEY + 1; len++) {
        int want = len > STORE_MAX_KEY ? STORE_TOOBIG : STORE_OK;
        StoreBytes k = {big, len};
        StoreRecord kr = {.key = k, .value = bytes_of("v")};
        CHECK(store_record_create(t, id, NULL, &kr) == want, "%zu-byte key", len);
        CHECK(store_record_get(t, id, k, &r) == (want ? STORE_TOOBIG : STORE_OK) &&
                  (want || bytes_eq(r.value, "v")),
              "get of a %zu-byte key", len);
        char rk[8];
        snprintf(rk, sizeof rk, "r%zu", len);
        StoreRecord ready = {.key = bytes_of(rk), .value = bytes_of("v"), .order = k};
        CHECK(store_record_create(t, id, &q, &ready) == want, "%zu-byte order key", len);
        StoreRecord waiting = {.key = bytes_of("w"),
                               .value = bytes_of("v"),
                               .order = k,
                               .not_before = store_now(st) + SEC};
        int wrc = len == STORE_MAX_KEY ? store_record_create(t, id, &q, &waiting)
                                       : store_record_update(t, id, &q, &waiting);
        CHECK(wrc == want, "%zu-byte order key, waiting: %s", len, store_strerror(wrc));
        bool repeat;
        CHECK(store_dedup_check(t, id, k, SEC, &repeat) == want, "%zu-byte dedup key", len);
    }
    CHECK(store_table_create(t, big, bytes_of(""), &id) == STORE_TOOBIG, "401-byte table name");
    char *b400 = big + 1; /* 400 bytes, unique to this run */
    const char *u = unique_name("big");
    memcpy(b400, u, strlen(u));
    CHECK(store_table_create(t, b400, bytes_of(""), &id) == STORE_OK, "400-byte table name");
    /* A big value is fine. */
    size_t vlen = 1 << 20;
    char *bigv = malloc(vlen);
    memset(bigv, 'v', vlen);
    StoreRecord bigr = {.key = bytes_of("x"), .value = {bigv, vlen}};
    CHECK(store_record_create(t, id, NULL, &bigr) == STORE_OK, "1 MiB value");
    CHECK(store_record_get(t, id, bytes_of("x"), &r) == STORE_OK && r.value.len == vlen &&
              memcmp(r.value.data, bigv, vlen) == 0,
          "1 MiB value back");
    CHECK(store_table_drop(t, b400) == STORE_OK, "drop");
    free(bigv);
    commit(t);
}

/* ---- threads ---- */

struct thread_arg {
    Store *st;
    uint32_t table;
    int failures;
};

/* Adds 1 to the counter record 100 times, one write transaction each, with
 * a read transaction alongside. */
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
        (void)counter_read(r, a->table);
        if (store_txn_begin(a->st, true, &w) != STORE_OK) {
            a->failures++;
            store_txn_abort(r);
            continue;
        }
        if (counter_add(w, a->table) != STORE_OK) {
            a->failures++;
            store_txn_abort(w);
        } else if (store_txn_commit(w) != STORE_OK) {
            a->failures++;
        }
        store_txn_abort(r);
    }
    return NULL;
}

static void
test_threads(Store *st)
{
    enum { T = 4 };
    uint32_t id = table_make(st, unique_name("threads"));
    /* The counter is there before the threads start: a server backend's
     * writers run at once, and two that both found it absent would both
     * create it (store_write runs such a loser again; these do not use it). */
    StoreTxn *t0 = begin(st, true);
    uint64_t zero = 0;
    StoreRecord c0 = {.key = bytes_of("#counter"), .value = {&zero, 8}};
    CHECK(store_record_create(t0, id, NULL, &c0) == STORE_OK, "the counter");
    commit(t0);
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
    StoreTxn *t = begin(st, false);
    uint64_t n = counter_read(t, id);
    CHECK(n == 100 * T, "counter %" PRIu64, n);
    store_txn_abort(t);
}

/* ---- store_write ---- */

/* N threads x M durable writes: every record there, the counter exact,
 * and commits shared. */
static void
test_write_threads(Store *st)
{
    enum { N = 8, M = 40 };
    uint32_t id = table_make(st, unique_name("write-threads"));
    StoreStats before, after;
    store_stats(st, &before);
    int failures = writers_run(st, id, N, 0, M, "v", 1);
    store_stats(st, &after);
    CHECK(failures == 0, "%d failed writes", failures);
    CHECK(records_count(st, id) == N * M, "%d records, want %d", records_count(st, id), N * M);
    StoreTxn *t = begin(st, false);
    uint64_t n = counter_read(t, id);
    CHECK(n == N * M, "counter %" PRIu64 ", want %d", n, N * M);
    store_txn_abort(t);
    CHECK(after.writes - before.writes == N * M, "writes %" PRIu64, after.writes - before.writes);
    CHECK(after.groups - before.groups <= N * M && after.groups > before.groups, "groups %" PRIu64,
          after.groups - before.groups);
    CHECK(after.waiting == 0, "nobody left waiting");
}

typedef struct Blocker {
    Store *st;
    int want_waiting; /* hold the lead until this many callers wait */
    int started;
    int rc; /* what its store_write returned */
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
        sleep_ms(1);
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
test_write_rollback_alone(Store *st)
{
    enum { K = 6 };
    if (!test_store_is_lmdb()) {
        printf(
            "# skipped on a server backend: write groups are LMDB's (each writer commits alone)\n");
        return;
    }
    uint32_t id = table_make(st, unique_name("write-group"));
    StoreStats before, after;
    Blocker b = {st, K, 0, -1};
    pthread_t lead, th[K];
    OneWrite w[K];
    store_stats(st, &before);
    CHECK(pthread_create(&lead, NULL, thread_block, &b) == 0, "thread");
    while (!__atomic_load_n(&b.started, __ATOMIC_ACQUIRE))
        sleep_ms(1);
    for (int i = 0; i < K; i++) {
        /* Odd callers fail after writing: their put and count must vanish. */
        w[i] = (OneWrite){.a = {.st = st,
                                .table = id,
                                .thread = i,
                                .value = "x",
                                .value_len = 1,
                                .result = i % 2 ? -7 - i : 0}};
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
        StoreRecord r;
        snprintf(key, sizeof key, "w%02d-%04d", i, 0);
        int got = store_record_get(t, id, bytes_of(key), &r);
        if (i % 2) {
            CHECK(w[i].rc == -7 - i, "caller %d gets its own failure: %d", i, w[i].rc);
            CHECK(got == STORE_NOTFOUND, "caller %d's put is rolled back", i);
        } else {
            CHECK(w[i].rc == 0, "caller %d commits: %d", i, w[i].rc);
            CHECK(got == STORE_OK, "caller %d's put is there", i);
        }
    }
    CHECK(counter_read(t, id) == (K + 1) / 2, "the counter counts the commits only");
    store_txn_abort(t);
}

/* A value store_write's function returns that happens to be a StoreStatus
 * comes back as is; nothing of it is kept. */
static int
write_then_notfound(StoreTxn *txn, void *ctx)
{
    WriteArg *a = ctx;
    put(txn, a->table, "gone", "v");
    return STORE_NOTFOUND;
}

/* What a write of test_definition_elsewhere saw: the definition, and the
 * record it added after reading it (when "add"); the definition it does
 * not refuse (def_refused_unless). */
typedef struct DefSeen {
    const char *name;
    bool add;
    char def[16];
    int runs;
    const char *want;
} DefSeen;

static int
def_read(StoreTxn *txn, void *ctx)
{
    DefSeen *d = ctx;
    uint32_t id;
    d->runs++;
    int rc = def_copy(txn, d->name, &id, d->def, sizeof d->def);
    return rc ? rc : d->add ? put(txn, id, d->def, "seen") : STORE_OK;
}

/* A write that refuses a definition it reads (as the language refuses a
 * table a definition does not let the caller write). */
static int
def_refused_unless(StoreTxn *txn, void *ctx)
{
    DefSeen *d = ctx;
    int rc = def_read(txn, d);
    return rc ? rc : strcmp(d->def, d->want) ? STORE_CONFLICT : STORE_OK;
}

/* A definition another process changed is what this one's next write
 * reads — a backend that keeps definitions between transactions must
 * notice, whether the write asks the store for nothing else, goes on to
 * write a record, or fails because of what the definition said. */
static void
test_definition_elsewhere(Store *st)
{
    const char *name = unique_name("elsewhere");
    StoreTxn *t = begin(st, true);
    uint32_t id;
    CHECK(store_table_create(t, name, bytes_of("v1"), &id) == STORE_OK, "create");
    commit(t);
    for (int add = 0; add < 2; add++) {
        DefSeen d = {name, add, "", 0, NULL};
        char next[8];
        snprintf(next, sizeof next, "v%d", add + 2);
        CHECK(store_write(st, def_read, &d) == STORE_OK && !strcmp(d.def, add ? "v2" : "v1"),
              "the definition before: %s", d.def);
        CHECK(redefine_elsewhere(name, next), "the other process redefined it");
        d.runs = 0;
        CHECK(store_write(st, def_read, &d) == STORE_OK && !strcmp(d.def, next),
              "%s, the next write reads the other process's definition: %s (%d runs)",
              add ? "writing a record" : "reading alone", d.def, d.runs);
    }
    t = begin(st, false);
    StoreRecord r;
    CHECK(store_record_get(t, id, bytes_of("v3"), &r) == STORE_OK &&
              store_record_get(t, id, bytes_of("v2"), &r) == STORE_OK,
          "the records were written under the definitions they read");
    store_txn_abort(t);
    /* Refused under v3, which this process keeps; v4, made elsewhere, lets
     * it through. */
    DefSeen d = {name, false, "", 0, "v4"};
    CHECK(store_write(st, def_refused_unless, &d) == STORE_CONFLICT, "refused under v3");
    CHECK(redefine_elsewhere(name, "v4"), "the other process redefined it");
    int rc = store_write(st, def_refused_unless, &d);
    CHECK(rc == STORE_OK && !strcmp(d.def, "v4"),
          "a write that failed on the kept definition runs again with the other process's: "
          "%s under %s",
          store_strerror(rc), d.def);
}

static void
test_write_status(Store *st)
{
    uint32_t id = table_make(st, unique_name("write-status"));
    WriteArg a = {.st = st, .table = id};
    CHECK(store_write(st, write_then_notfound, &a) == STORE_NOTFOUND, "fn's value");
    CHECK(records_count(st, id) == 0, "nothing kept");
}

/* ---- waiting for changes ---- */

/* A thread sleeping in store_wait_change, and what it saw. */
struct change_wait {
    Store *st;
    uint64_t seen;
    bool changed;
    int64_t woke_at;
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
 * store_wake, and at its instant; a stale ticket does not make it sleep
 * past a change.  (With a shared store another run's commits may move the
 * ticket too: only what this run's own actions must do is checked.) */
static void
test_wait_change(Store *st)
{
    uint64_t seen = store_changes(st);
    int64_t t0 = store_now(st);
    bool moved = store_wait_change(st, seen, t0 + 50 * MS);
    bool own = test_made[0] != '\0'; /* a store of its own: nobody else commits */
    CHECK(own ? !moved && store_now(st) >= t0 + 50 * MS : moved || store_now(st) >= t0 + 50 * MS,
          "no change: the instant ends it");

    seen = store_changes(st);
    uint32_t id = table_make(st, unique_name("changes"));
    CHECK(store_changes(st) != seen, "a commit moves the ticket on");
    CHECK(store_wait_change(st, seen, INT64_MAX), "a stale ticket returns at once");

    if (own) {
        seen = store_changes(st);
        StoreTxn *t = begin(st, true);
        commit(t);
        CHECK(store_changes(st) == seen, "a commit that changed nothing does not");
    }

    struct change_wait w = {st, store_changes(st), false, 0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, thread_wait_change, &w) == 0, "thread");
    sleep_ms(100);
    int64_t put_at = store_now(st);
    StoreTxn *t = begin(st, true);
    CHECK(put(t, id, "k", "v") == STORE_OK, "put");
    commit(t);
    pthread_join(th, NULL);
    CHECK(w.changed && w.woke_at < put_at + 10 * SEC, "a commit wakes a sleeper (changed %d)",
          w.changed);

    w = (struct change_wait){st, store_changes(st), false, 0};
    CHECK(pthread_create(&th, NULL, thread_wait_change, &w) == 0, "thread");
    sleep_ms(100);
    int64_t woken_at = store_now(st);
    store_wake(st);
    pthread_join(th, NULL);
    CHECK(w.changed && w.woke_at < woken_at + 10 * SEC, "store_wake wakes a sleeper");
}

int
main(void)
{
    if (!test_store_pick("store_test"))
        return 1;
    test_strerror();
    test_location_shown();
    Store *st = test_store_open(true);
    if (st)
        test_reopen(&st);
    if (st) {
        test_now(st);
        test_catalog(st);
        test_records(st);
        test_toobig(st);
        test_threads(st);
        test_write_threads(st);
        test_write_rollback_alone(st);
        test_write_status(st);
        test_definition_elsewhere(st);
        test_wait_change(st);
        store_close(st);
    }
    test_store_cleanup();
    return unit_test_summary();
}
