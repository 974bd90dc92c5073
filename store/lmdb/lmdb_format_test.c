/* lmdb_format_test.c — the LMDB backend's own tests, part one: what it
 * makes of a directory and what it finds in it.  Stores it refuses (not
 * LMDB, an LMDB environment of something else, a future format), the
 * directory's mode, and the stores of earlier formats it brings to this
 * one: format 1 (counted when first opened), format 2 (each record's
 * engine columns parsed out of the caller's value by StoreOptions.upgrade,
 * the counters kept in meta values moved into the counts; an upgrade that
 * refuses leaves the store as it was), format 3 (records without errors),
 * format 4 (records neither done nor marked, no "done" database) and
 * format 5 (AT MOST … EVERY's instants in one array).  The stores of earlier formats are
 * written by hand through <lmdb.h>, as those builds laid them out.  Part
 * two is lmdb_test.c. */
#include "store_test.h"
#include "bigendian.h"
#include "queue.h"

#include <lmdb.h>

/* ---- what the backend refuses, and what it upgrades ---- */

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
    snprintf(
        cmd, sizeof cmd,
        "printf 'version\\nqueuefs-store\\\\00\\\\00\\\\00\\\\63\\n' | mdb_load -T -s sys '%s'",
        path_of("future"));
    CHECK(system(cmd) == 0, "mdb_load future version");
    rc = store_open(path_of("future"), &opts, &st, err, sizeof err);
    CHECK(rc == STORE_CORRUPT, "future version: got %s", store_strerror(rc));
}

/* The store's directory is made 0700. */
static void
test_dir_mode(void)
{
    Store *st = open_store("mode", true, 0);
    struct stat sb;
    CHECK(stat(path_of("mode"), &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700,
          "directory created 0700");
    if (st)
        store_close(st);
}

/* ---- stores of earlier formats, written through LMDB itself ---- */

/* An LMDB environment open for writing a store's databases by hand, as an
 * earlier build laid them out (see "Layout" in lmdb_internal.h). */
typedef struct Raw {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi main, sys, catalog, records, ready, deadline, meta;
    bool ok;
} Raw;

static void
raw_begin(Raw *r, const char *dir, bool write)
{
    memset(r, 0, sizeof *r);
    unsigned c = write ? MDB_CREATE : 0;
    if (write)
        mkdir(dir, 0700);
    r->ok = mdb_env_create(&r->env) == 0 && mdb_env_set_maxdbs(r->env, 8) == 0 &&
            mdb_env_set_mapsize(r->env, 16 << 20) == 0 &&
            mdb_env_open(r->env, dir, write ? 0 : MDB_RDONLY, 0600) == 0 &&
            mdb_txn_begin(r->env, NULL, write ? 0 : MDB_RDONLY, &r->txn) == 0 &&
            mdb_dbi_open(r->txn, NULL, 0, &r->main) == 0 &&
            mdb_dbi_open(r->txn, "sys", c, &r->sys) == 0 &&
            mdb_dbi_open(r->txn, "catalog", c, &r->catalog) == 0 &&
            mdb_dbi_open(r->txn, "records", c, &r->records) == 0 &&
            mdb_dbi_open(r->txn, "ready", c | MDB_DUPSORT, &r->ready) == 0 &&
            mdb_dbi_open(r->txn, "deadline", c, &r->deadline) == 0 &&
            mdb_dbi_open(r->txn, "meta", c, &r->meta) == 0;
}

static void
raw_put(Raw *r, MDB_dbi dbi, const void *k, size_t klen, const void *v, size_t vlen)
{
    MDB_val kv = {klen, (void *)k}, vv = {vlen, (void *)v};
    r->ok = r->ok && mdb_put(r->txn, dbi, &kv, &vv, 0) == 0;
}

/* The value under "k" in "dbi" into "out" (at most "cap" bytes): its
 * length, or -1 when absent. */
static long
raw_get(Raw *r, MDB_dbi dbi, const void *k, size_t klen, void *out, size_t cap)
{
    MDB_val kv = {klen, (void *)k}, vv;
    if (!r->ok || mdb_get(r->txn, dbi, &kv, &vv) != 0)
        return -1;
    memcpy(out, vv.mv_data, vv.mv_size < cap ? vv.mv_size : cap);
    return (long)vv.mv_size;
}

/* Commits (or, reading, ends) and closes; true when all went well. */
static bool
raw_end(Raw *r, bool write)
{
    if (write)
        r->ok = r->ok && mdb_txn_commit(r->txn) == 0;
    else if (r->txn)
        mdb_txn_abort(r->txn);
    if (r->env)
        mdb_env_close(r->env);
    return r->ok;
}

/* Writes the format marker "version" and the next table id. */
static void
raw_format(Raw *r, uint32_t version, uint32_t next_table)
{
    unsigned char v[13 + 4], n[4];
    memcpy(v, "queuefs-store", 13);
    be_put32(v + 13, version);
    be_put32(n, next_table);
    raw_put(r, r->sys, "version", 7, v, sizeof v);
    raw_put(r, r->sys, "next_table_id", 13, n, 4);
}

/* Defines table "name" as "id" with "def", its last arrival "seq". */
static void
raw_table(Raw *r, const char *name, uint32_t id, const char *def, uint64_t seq)
{
    unsigned char v[256], k[8];
    be_put32(v, id);
    memcpy(v + 4, def, strlen(def));
    raw_put(r, r->catalog, name, strlen(name), v, 4 + strlen(def));
    be_put32(k, id);
    k[4] = 0x00;
    memcpy(k + 5, "seq", 3);
    be_put64(v, seq);
    raw_put(r, r->meta, k, 8, v, 8);
}

/* A record of table "id" as formats 1 and 2 wrote it: its header (seq,
 * wake: -1 no slot, 0 ready, else waiting), order key and the caller's
 * value, with its ready or deadline entry ("kind" 0: format 1's, none). */
static void
raw_record(Raw *r, uint32_t id, const char *key, uint64_t seq, int64_t wake, const char *order,
           const char *value, int kind)
{
    unsigned char k[512], v[1024];
    size_t klen = strlen(key), olen = strlen(order), vlen = strlen(value);
    be_put32(k, id);
    memcpy(k + 4, key, klen);
    be_put64(v, seq);
    be_put64(v + 8, (uint64_t)wake);
    be_put16(v + 16, (uint16_t)olen);
    memcpy(v + 18, order, olen);
    memcpy(v + 18 + olen, value, vlen);
    raw_put(r, r->records, k, 4 + klen, v, 18 + olen + vlen);
    if (wake == 0) {
        memcpy(k + 4, order, olen);
        be_put64(v, seq);
        memcpy(v + 8, key, klen);
        raw_put(r, r->ready, k, 4 + olen, v, 8 + klen);
    } else if (wake > 0) {
        be_put64(k + 4, (uint64_t)wake);
        memcpy(k + 12, key, klen);
        v[0] = (unsigned char)kind;
        be_put64(v + 1, 0);
        raw_put(r, r->deadline, k, 12 + klen, v, kind ? 9 : 0);
    }
}

/* The "len" counts "n" of table "id" as an earlier format kept them:
 * records, ready, held, delayed, unsorted (format 2's five), then
 * claims, releases, lapses and deletes (format 3's nine). */
static void
raw_counts(Raw *r, uint32_t id, const uint64_t *n, int len)
{
    unsigned char k[11], v[8 * 9];
    memcpy(k, "records", 7);
    be_put32(k + 7, id);
    for (int i = 0; i < len; i++)
        be_put64(v + 8 * i, n[i]);
    raw_put(r, r->main, k, 11, v, 8 * (size_t)len);
}

/* Ready record "key" of table "id" (arrival "seq", order key "order",
 * with its ready entry) as a build of columns "version" (3 or 4) wrote
 * it: its header and order key, then its columns — the version, eight
 * times all 0 but attempts, no consumer, instance or group, and (version
 * 4) "errors" — then "value". */
static void
raw_record_columns(Raw *r, uint32_t id, const char *key, uint64_t seq, const char *order,
                   int version, int64_t attempts, StoreBytes errors, const char *value)
{
    unsigned char k[64], v[512] = {0};
    size_t klen = strlen(key), olen = strlen(order), n = 18 + olen;
    raw_record(r, id, key, seq, 0, order, "", 0);
    be_put32(k, id);
    memcpy(k + 4, key, klen);
    be_put64(v, seq);
    be_put16(v + 16, (uint16_t)olen);
    memcpy(v + 18, order, olen);
    v[n++] = (unsigned char)version;
    be_put64(v + n + 4 * 8, (uint64_t)attempts);
    n += 8 * 8 + 1 + 1 + 2;
    if (version >= 4) {
        be_put32(v + n, (uint32_t)errors.len);
        if (errors.len)
            memcpy(v + n + 4, errors.data, errors.len);
        n += 4 + errors.len;
    }
    memcpy(v + n, value, strlen(value));
    raw_put(r, r->records, k, 4 + klen, v, n + strlen(value));
}

/* A caller's meta value of table "id" ([T][0x01]name), 8 bytes big-endian. */
static void
raw_meta_i64(Raw *r, uint32_t id, const char *name, const void *suffix, size_t slen, int64_t n)
{
    unsigned char k[128], v[8];
    size_t len = strlen(name);
    be_put32(k, id);
    k[4] = 0x01;
    memcpy(k + 5, name, len);
    memcpy(k + 5 + len, suffix, slen);
    be_put64(v, (uint64_t)n);
    raw_put(r, r->meta, k, 5 + len + slen, v, 8);
}

/* The format version of the store in "dir" (0: unreadable), and in
 * "value" (when non-NULL) the raw stored value of record "key" of table
 * "id" past its header and order key. */
static uint32_t
raw_version(const char *dir, uint32_t id, const char *key, char value[64])
{
    Raw r;
    raw_begin(&r, dir, false);
    unsigned char v[64];
    uint32_t version = raw_get(&r, r.sys, "version", 7, v, sizeof v) == 17 ? be_get32(v + 13) : 0;
    if (value) {
        unsigned char k[64], rec[128];
        be_put32(k, id);
        memcpy(k + 4, key, strlen(key));
        long n = raw_get(&r, r.records, k, 4 + strlen(key), rec, sizeof rec);
        size_t off = n >= 18 ? 18 + be_get16(rec + 16) : 0;
        snprintf(value, 64, "%.*s", n >= 18 ? (int)(n - (long)off) : 0, (const char *)rec + off);
    }
    raw_end(&r, false);
    return version;
}

/* A store of format 1 (no counts, waiting entries of no kind): counted
 * when first opened — exact records, ready and idle, its waiting entries
 * unsorted until a write files them anew — and brought to format 3, its
 * values kept with zero columns. */
static void
test_format1_upgrade(void)
{
    int64_t wake = (int64_t)time(NULL) * SEC + 3600 * SEC;
    Raw r;
    raw_begin(&r, path_of("format1"), true);
    raw_format(&r, 1, 2);
    raw_table(&r, "old", 1, "", 4);
    raw_record(&r, 1, "a", 1, 0, "1", "a", 0);
    raw_record(&r, 1, "b", 2, 0, "2", "b", 0);
    raw_record(&r, 1, "h", 3, wake, "3", "h", 0);
    raw_record(&r, 1, "x", 4, -1, "", "x", 0);
    CHECK(raw_end(&r, true), "make a format 1 store");

    Store *st = open_store("format1", true, 0);
    if (!st)
        return;
    StoreTxn *t = begin(st, false);
    check_counts(t, 1, (uint64_t[6]){4, 2, 0, 0, 1, 1}, "a", "counted");
    StoreRecord rec;
    CHECK(store_record_get(t, 1, bytes_of("b"), &rec) == STORE_OK && bytes_eq(rec.value, "b") &&
              rec.attempts == 0 && rec.seq == 2,
          "values kept, with zero columns");
    store_txn_abort(t);
    /* Filed anew, h is sorted: delayed until its instant. */
    StoreQueue q = {.table = 1, .timeout_ns = SEC};
    t = begin(st, true);
    StoreRecord h = {
        .key = bytes_of("h"), .value = bytes_of("h"), .order = bytes_of("3"), .not_before = wake};
    CHECK(store_record_update(t, 1, &q, &h) == STORE_OK, "file h anew");
    check_counts(t, 1, (uint64_t[6]){4, 2, 0, 1, 1, 0}, "a", "filed anew");
    commit(t);
    store_close(st);
    CHECK(raw_version(path_of("format1"), 0, NULL, NULL) == 6, "of format 6");
    /* Opened again, it is of this format: nothing is counted again. */
    st = open_store("format1", true, 0);
    if (!st)
        return;
    t = begin(st, false);
    check_counts(t, 1, (uint64_t[6]){4, 2, 0, 1, 1, 0}, "a", "reopened");
    store_txn_abort(t);
    store_close(st);
}

/* What an upgrade function saw, and the buffers "out" points into. */
typedef struct Upgrader {
    int calls;
    int wrong_def; /* calls whose table definition was not "def-jobs" */
    char consumer[64];
} Upgrader;

/* A StoreUpgradeFn for values "name=v;…;value=rest": attempts, consumer
 * and not_before become columns, the rest the value; "bad…" is refused. */
static int
upgrade_blob(void *ctx, StoreBytes table_def, StoreBytes old, StoreRecord *out)
{
    Upgrader *u = ctx;
    const char *p = old.data, *end = p + old.len;
    u->calls++;
    u->wrong_def += !bytes_eq(table_def, "def-jobs");
    if (old.len >= 3 && memcmp(p, "bad", 3) == 0)
        return -1;
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        if (end - p >= 6 && memcmp(p, "value=", 6) == 0) {
            out->value = (StoreBytes){p + 6, (size_t)(end - p - 6)};
            break;
        }
        if (!semi)
            return -1;
        if (strncmp(p, "attempts=", 9) == 0)
            out->attempts = strtoll(p + 9, NULL, 10);
        else if (strncmp(p, "not_before=", 11) == 0)
            out->not_before = strtoll(p + 11, NULL, 10);
        else if (strncmp(p, "consumer=", 9) == 0) {
            snprintf(u->consumer, sizeof u->consumer, "%.*s", (int)(semi - p - 9), p + 9);
            out->consumer = bytes_of(u->consumer);
        }
        p = semi + 1;
    }
    return 0;
}

/* Makes store "name" of format 2: table "jobs" (id 1) whose records keep
 * their columns in the caller's value, its counters as meta values, a
 * DEDUPLICATE entry; with "bad", a record the upgrade refuses. */
static bool
format2_make(const char *name, int64_t wake, bool bad)
{
    char later[64];
    snprintf(later, sizeof later, "not_before=%" PRId64 ";value=later", wake);
    Raw r;
    raw_begin(&r, path_of(name), true);
    raw_format(&r, 2, 2);
    raw_table(&r, "jobs", 1, "def-jobs", bad ? 4 : 3);
    raw_record(&r, 1, "r1", 1, 0, "a", "attempts=2;value=abc", 0);
    raw_record(&r, 1, "r2", 2, 0, "b", "attempts=1;consumer=bob;value=xyz", 0);
    raw_record(&r, 1, "r3", 3, wake, "c", later, 1 /* a delay */);
    if (bad)
        raw_record(&r, 1, "r4", 4, 0, "d", "bad blob", 0);
    raw_counts(&r, 1, (uint64_t[5]){bad ? 4 : 3, bad ? 3 : 2, 0, 1, 0}, 5);
    static const char *const counters[] = {"count:claims", "count:releases", "count:lapses",
                                           "count:deletes"};
    static const int64_t values[] = {7, 3, 1, 2};
    for (int i = 0; i < 4; i++)
        raw_meta_i64(&r, 1, counters[i], "", 0, values[i]);
    raw_meta_i64(&r, 1, "dedup:", "k1", 2, (int64_t)time(NULL) * SEC);
    return raw_end(&r, true);
}

static Store *
open_upgrading(const char *name, Upgrader *u, int *rc)
{
    StoreOptions opts = {.sync = true, .upgrade = u ? upgrade_blob : NULL, .upgrade_ctx = u};
    Store *st = (Store *)1;
    char err[256] = "";
    *rc = store_open(path_of(name), &opts, &st, err, sizeof err);
    return st;
}

/* A store of format 2 is brought to format 3 by StoreOptions.upgrade:
 * each record's columns parsed out of the caller's value, the counters
 * kept as meta values now in the counts, the DEDUPLICATE entries kept;
 * an upgrade function that refuses a record fails the open with
 * STORE_CORRUPT and leaves the store as it was. */
static void
test_format2_upgrade(void)
{
    int64_t wake = (int64_t)time(NULL) * SEC + 3600 * SEC;
    CHECK(format2_make("format2", wake, false), "make a format 2 store");
    Upgrader u = {0};
    int rc;
    Store *st = open_upgrading("format2", &u, &rc);
    CHECK(rc == STORE_OK && st, "open with the upgrade: %s", store_strerror(rc));
    if (rc != STORE_OK)
        return;
    CHECK(u.calls == 3 && u.wrong_def == 0,
          "called once a record (%d), with its table's "
          "definition",
          u.calls);
    StoreRecord r;
    CHECK(get(st, 1, "r1", &r) == STORE_OK && r.attempts == 2 && r.seq == 1, "r1's columns");
    StoreTxn *t = begin(st, false);
    CHECK(store_record_get(t, 1, bytes_of("r1"), &r) == STORE_OK && bytes_eq(r.value, "abc"),
          "r1's value");
    CHECK(store_record_get(t, 1, bytes_of("r2"), &r) == STORE_OK && bytes_eq(r.value, "xyz") &&
              r.attempts == 1 && bytes_eq(r.consumer, "bob") && bytes_eq(r.order, "b"),
          "r2's columns and value");
    CHECK(store_record_get(t, 1, bytes_of("r3"), &r) == STORE_OK && bytes_eq(r.value, "later") &&
              r.not_before == wake,
          "r3's not_before and value");
    StoreQueueCounts n = counts_in(t, 1);
    CHECK(n.records == 3 && n.ready == 2 && n.delayed == 1 && n.held == 0 && n.unsorted == 0 &&
              n.has_head && bytes_eq(n.head_key, "r1") && n.next_wake == wake,
          "the queue as it was filed");
    CHECK(n.claims == 7 && n.releases == 3 && n.lapses == 1 && n.deletes == 2,
          "the counters: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64, n.claims, n.releases,
          n.lapses, n.deletes);
    store_txn_abort(t);
    StoreQueue q = {.table = 1, .timeout_ns = 30 * SEC};
    t = begin(st, true);
    bool repeat = false;
    CHECK(store_dedup_check(t, 1, bytes_of("k1"), 3600 * SEC, &repeat) == STORE_OK && repeat,
          "a DEDUPLICATE entry kept");
    Claimed c;
    CHECK(claim_in(t, &q, 1, NULL, NULL, &c) == STORE_OK && c.attempts == 3 &&
              c.before_attempts == 2,
          "claimed on from its attempts: %s", c.keys);
    CHECK(counts_in(t, 1).claims == 8, "counted on");
    commit(t);
    store_close(st);
    char v[64];
    CHECK(raw_version(path_of("format2"), 1, "r2", v) == 6, "of format 6");
    st = open_upgrading("format2", &u, &rc);
    CHECK(rc == STORE_OK && u.calls == 3, "upgraded once: %d calls", u.calls);
    if (st)
        store_close(st);

    /* Refused: nothing changes, and the store opens without the function. */
    CHECK(format2_make("format2-bad", wake, true), "make a format 2 store");
    u = (Upgrader){0};
    st = open_upgrading("format2-bad", &u, &rc);
    CHECK(rc == STORE_CORRUPT && st == NULL, "a refusal fails the open: %s", store_strerror(rc));
    CHECK(raw_version(path_of("format2-bad"), 1, "r1", v) == 2 &&
              strcmp(v, "attempts=2;value=abc") == 0,
          "left as it was: '%s'", v);
    st = open_upgrading("format2-bad", NULL, &rc);
    CHECK(rc == STORE_OK && st, "opens without the function: %s", store_strerror(rc));
    if (!st)
        return;
    t = begin(st, false);
    CHECK(store_record_get(t, 1, bytes_of("r1"), &r) == STORE_OK &&
              bytes_eq(r.value, "attempts=2;value=abc") && r.attempts == 0,
          "values kept as they are, with zero columns");
    n = counts_in(t, 1);
    CHECK(n.records == 4 && n.ready == 3 && n.claims == 7 && n.deletes == 2, "counts");
    store_txn_abort(t);
    store_close(st);
    CHECK(raw_version(path_of("format2-bad"), 0, NULL, NULL) == 6, "of format 6");
}

/* A store of format 3, whose records keep no errors, opens as it is: its
 * records read with none, and a release's reason is kept from then on;
 * the store is marked of this format, so a build that knows no errors
 * refuses it. */
static void
test_format3_errors(void)
{
    Raw r;
    raw_begin(&r, path_of("format3"), true);
    raw_format(&r, 3, 2);
    raw_table(&r, "jobs", 1, "", 1);
    raw_record_columns(&r, 1, "a", 1, "1", 3, 2, (StoreBytes){NULL, 0}, "a");
    CHECK(raw_end(&r, true), "make a format 3 store");

    Store *st = open_store("format3", true, 0);
    if (!st)
        return;
    StoreQueue q = {.table = 1, .timeout_ns = 60 * SEC};
    StoreTxn *t = begin(st, true);
    StoreRecord rec;
    int64_t claimed = 0;
    CHECK(store_record_get(t, 1, bytes_of("a"), &rec) == STORE_OK && bytes_eq(rec.value, "a") &&
              rec.attempts == 2 && rec.errors.len == 0,
          "a record of format 3 reads with its columns and no errors");
    CHECK(store_claim(t, &q, &(StoreClaim){.n = 1}, NULL, NULL, &claimed) == STORE_OK &&
              claimed == 1,
          "claimed");
    CHECK(store_record_get(t, 1, bytes_of("a"), &rec) == STORE_OK &&
              store_release(t, &q, bytes_of("a"), rec.hold, 0, bytes_of("disk full"), &rec) ==
                  STORE_OK,
          "released with a reason");
    StoreBytes rest = rec.errors;
    QueueError e;
    CHECK(queue_errors_next(&rest, &e) && e.attempt == 3 && bytes_eq(e.text, "disk full") &&
              rest.len == 0 && bytes_eq(rec.value, "a"),
          "its reason kept beside its value");
    commit(t);
    store_close(st);
    CHECK(raw_version(path_of("format3"), 0, NULL, NULL) == 6, "of format 6");
}

/* The entries of the "done" database of the store in "dir" (-1: it has
 * none), and in "*counts_len" the length of the counts of table "id". */
static long
raw_done_entries(const char *dir, uint32_t id, long *counts_len)
{
    Raw r;
    MDB_dbi done;
    MDB_stat ms;
    unsigned char k[11], v[256];
    raw_begin(&r, dir, false);
    memcpy(k, "records", 7);
    be_put32(k + 7, id);
    *counts_len = raw_get(&r, r.main, k, sizeof k, v, sizeof v);
    long n = r.ok && mdb_dbi_open(r.txn, "done", 0, &done) == 0 && mdb_stat(r.txn, done, &ms) == 0
                 ? (long)ms.ms_entries
                 : -1;
    raw_end(&r, false);
    return n;
}

/* A store of format 4, whose records are neither done nor marked (columns
 * version 4) and which has no "done" database: a read-only open reads it
 * as it is and leaves it so; the first open for writing creates the
 * database and marks it of format 5, its records read not done and not
 * marked with their errors, and a finish on a queue that keeps makes one
 * done from then on (its counts then 12 long). */
static void
test_format4_keep(void)
{
    unsigned char buf[64];
    QueueError e = {1, 1000, bytes_of("boom")};
    StoreBytes errors = {buf, queue_errors_add((StoreBytes){NULL, 0}, &e, buf)};
    Raw r;
    raw_begin(&r, path_of("format4"), true);
    raw_format(&r, 4, 2);
    raw_table(&r, "jobs", 1, "", 2);
    raw_record_columns(&r, 1, "a", 1, "1", 4, 1, errors, "va");
    raw_record_columns(&r, 1, "b", 2, "2", 4, 0, (StoreBytes){NULL, 0}, "vb");
    raw_counts(&r, 1, (uint64_t[9]){2, 2}, 9);
    CHECK(raw_end(&r, true), "make a format 4 store");

    StoreOptions ro = {.read_only = true};
    Store *st = NULL;
    char err[256] = "";
    int rc = store_open(path_of("format4"), &ro, &st, err, sizeof err);
    CHECK(rc == STORE_OK && st, "opened for reading only: %s", err);
    StoreRecord rec;
    if (st) {
        StoreTxn *t = begin(st, false);
        StoreBytes rest;
        CHECK(store_record_get(t, 1, bytes_of("a"), &rec) == STORE_OK &&
                  bytes_eq(rec.value, "va") && rec.attempts == 1 && rec.completed_at == 0 &&
                  !rec.rerun && (rest = rec.errors, queue_errors_next(&rest, &e)) &&
                  bytes_eq(e.text, "boom"),
              "a record of format 4 reads not done, not marked, with its errors");
        StoreQueueCounts n = counts_in(t, 1);
        CHECK(n.records == 2 && n.ready == 2 && n.done == 0, "counted as it was");
        store_txn_abort(t);
        store_close(st);
    }
    long counts_len;
    CHECK(raw_version(path_of("format4"), 0, NULL, NULL) == 4 &&
              raw_done_entries(path_of("format4"), 1, &counts_len) == -1,
          "a read-only open leaves it of format 4, without the done database");

    if (!(st = open_store("format4", true, 0)))
        return;
    StoreQueue q = {.table = 1, .timeout_ns = 60 * SEC, .keep_ns = 3600 * SEC};
    StoreTxn *t = begin(st, true);
    Claimed c;
    CHECK(claim_in(t, &q, 1, NULL, NULL, &c) == STORE_OK && strcmp(c.keys, "a") == 0 &&
              c.attempts == 2,
          "claimed on from its attempts: %s", c.keys);
    CHECK(store_record_delete(t, 1, &q, bytes_of("a"), c.hold) == STORE_OK &&
              store_record_get(t, 1, bytes_of("a"), &rec) == STORE_OK && rec.completed_at != 0,
          "a finish makes it done");
    StoreQueueCounts n = counts_in(t, 1);
    CHECK(n.records == 2 && n.ready == 1 && n.done == 1 && n.deletes == 1, "counted done");
    commit(t);
    store_close(st);
    CHECK(raw_version(path_of("format4"), 0, NULL, NULL) == 6, "of format 6");
    CHECK(raw_done_entries(path_of("format4"), 1, &counts_len) == 1 && counts_len == 8 * 12,
          "the done database holds it, the counts count it");
}

/* The meta value "name" of table "id" in the store in "dir": its length
 * (-1: absent), its first "cap" bytes into "out". */
static long
raw_meta_of(const char *dir, uint32_t id, const char *name, void *out, size_t cap)
{
    Raw r;
    unsigned char k[64];
    be_put32(k, id);
    k[4] = 0x01;
    memcpy(k + 5, name, strlen(name));
    raw_begin(&r, dir, false);
    long n = raw_get(&r, r.meta, k, 5 + strlen(name), out, cap);
    raw_end(&r, false);
    return n;
}

/* A store of format 5, whose rate-limited queue kept its last hand-outs as
 * one array ([T][0x01]"rate" → i64 × n, oldest first): the first open for
 * writing moves them to chunks and marks it of format 6, and the window
 * goes on from them — full under the rate it was kept for, its oldest
 * hand-out the one whose leaving makes room, its second oldest once the
 * rate is one less, room for more under a larger rate. */
static void
test_format5_rate(void)
{
    enum { KEPT = 70 }; /* more than a chunk */
    int64_t now = (int64_t)time(NULL) * SEC, at[KEPT];
    unsigned char k[16], v[8 * KEPT];
    Raw r;
    raw_begin(&r, path_of("format5"), true);
    raw_format(&r, 5, 2);
    raw_table(&r, "r", 1, "", 4);
    for (int i = 0; i < 4; i++) {
        char key[8], ord[8];
        snprintf(key, sizeof key, "k%d", i);
        snprintf(ord, sizeof ord, "%d", i);
        raw_record_columns(&r, 1, key, (uint64_t)i + 1, ord, 4, 0, (StoreBytes){NULL, 0}, "v");
    }
    raw_counts(&r, 1, (uint64_t[9]){4, 4}, 9);
    for (int i = 0; i < KEPT; i++) {
        at[i] = now - (KEPT - i) * SEC;
        be_put64(v + 8 * i, (uint64_t)at[i]);
    }
    be_put32(k, 1);
    k[4] = 0x01;
    memcpy(k + 5, "rate", 4);
    raw_put(&r, r.meta, k, 9, v, sizeof v);
    CHECK(raw_end(&r, true), "make a format 5 store");

    Store *st = open_store("format5", true, 0);
    if (!st)
        return;
    store_close(st);
    unsigned char head[24];
    CHECK(raw_version(path_of("format5"), 0, NULL, NULL) == 6, "of format 6");
    CHECK(raw_meta_of(path_of("format5"), 1, "rate", head, sizeof head) == -1, "the array is gone");
    CHECK(raw_meta_of(path_of("format5"), 1, "rate@\xff\xff\xff\xff\xff\xff\xff\xff", head,
                      sizeof head) == 24 &&
              be_get64(head) == KEPT && be_get64(head + 8) == 0 &&
              (int64_t)be_get64(head + 16) == at[KEPT - 1],
          "the head counts the hand-outs kept, the newest last");
    if (!(st = open_store("format5", true, 0)))
        return;
    StoreQueue q = {.table = 1, .timeout_ns = 60 * SEC, .rate = KEPT, .rate_window_ns = 3600 * SEC};
    Claimed c;
    int64_t next;
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "the window is full: %s",
          c.keys);
    StoreTxn *t = begin(st, false);
    CHECK(store_queue_rate_next(t, &q, &next) == STORE_OK && next == at[0] + q.rate_window_ns,
          "room again when the oldest kept leaves the window");
    q.rate = KEPT - 1;
    CHECK(store_queue_rate_next(t, &q, &next) == STORE_OK && next == at[1] + q.rate_window_ns,
          "a rate one less: when the second oldest leaves");
    store_txn_abort(t);
    q.rate = KEPT + 2;
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK && !strcmp(c.keys, "k0,k1"),
          "a rate two more: two more: %s", c.keys);
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "then none: %s", c.keys);
    store_close(st);
}

/* The done database holds one entry a done record, of every queue that
 * keeps; a table's rename leaves its entries as they are (they are under
 * its id), its drop takes them along. */
static void
test_done_drop(void)
{
    Store *st = open_store("done-drop", true, 0);
    if (!st)
        return;
    StoreQueue a = {.table = table_make(st, "ka"), .timeout_ns = 30 * SEC, .keep_ns = 3600 * SEC};
    StoreQueue b = {.table = table_make(st, "kb"), .timeout_ns = 30 * SEC, .keep_ns = 3600 * SEC};
    add(st, &a, "x", "v", NULL, 0);
    add(st, &b, "y", "v", NULL, 0);
    StoreTxn *t = begin(st, true);
    CHECK(store_record_delete(t, a.table, &a, bytes_of("x"), 0) == STORE_OK &&
              store_record_delete(t, b.table, &b, bytes_of("y"), 0) == STORE_OK,
          "finish x and y: done");
    commit(t);
    store_close(st);
    long counts_len;
    CHECK(raw_done_entries(path_of("done-drop"), a.table, &counts_len) == 2, "two done entries");
    st = open_store("done-drop", true, 0);
    if (!st)
        return;
    t = begin(st, true);
    CHECK(store_table_rename(t, "ka", "ka2") == STORE_OK && store_table_drop(t, "kb") == STORE_OK,
          "rename ka, drop kb");
    commit(t);
    StoreRecord r;
    CHECK(get(st, a.table, "x", &r) == STORE_OK && r.completed_at != 0 &&
              counts_of(st, &a).done == 1,
          "the renamed table's record still done, still counted");
    store_close(st);
    CHECK(raw_done_entries(path_of("done-drop"), a.table, &counts_len) == 1,
          "the dropped table's entry went with it");
}

int
main(void)
{
    static const TestCase cases[] = {
        test_not_a_store,     test_dir_mode,       test_format1_upgrade,
        test_format2_upgrade, test_format3_errors, test_format4_keep,
        test_format5_rate,    test_done_drop,      NULL};
    return test_root_main("lmdb_format_test", cases);
}
