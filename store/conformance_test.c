/* conformance_test.c — what every backend of store.h must do, as cases
 * that use store.h alone: records and their times, claim order, lapses,
 * the ATTEMPTS ceiling, hold fences, releases, touches, retries, give-backs,
 * identities, deduplicate windows, counters, notifications, and claims
 * racing from threads and processes.
 *
 * The backend is a parameter: $QUEUEFS_TEST_STORE names the store to open
 * (an LMDB directory, or a backend's URI); unset, a fresh LMDB directory
 * under /tmp.  Every case makes tables of its own, so a store shared with
 * other runs does not disturb it.  What only LMDB does (map growth,
 * checkpoints, boot ids) is tested in lmdb_test.c. */
#include "store.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tests/unit_test.h"

#define MS 1000000LL

static char location[256];
static Store *st;

static StoreBytes
str(const char *s)
{
    return (StoreBytes){s, strlen(s)};
}

static bool
same(StoreBytes b, const char *s)
{
    return b.len == strlen(s) && (b.len == 0 || memcmp(b.data, s, b.len) == 0);
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static StoreTxn *
begin(bool write)
{
    StoreTxn *t = NULL;
    int rc = store_txn_begin(st, write, &t);
    CHECK(rc == STORE_OK, "begin: %s", store_strerror(rc));
    return t;
}

static void
commit(StoreTxn *t)
{
    int rc = store_txn_commit(t);
    CHECK(rc == STORE_OK, "commit: %s", store_strerror(rc));
}

/* A queue of its own for a case: a table named "prefix" and a number no
 * other run has used, with the given TIMEOUT and ATTEMPTS. */
static StoreQueue
queue_new(const char *prefix, int64_t timeout_ns, int64_t max_attempts)
{
    char name[128];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(name, sizeof name, "%s-%d-%" PRId64, prefix, (int)getpid(),
             (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
    StoreQueue q = {.timeout_ns = timeout_ns, .max_attempts = max_attempts};
    StoreTxn *t = begin(true);
    CHECK(store_table_create(t, name, str("def"), &q.table) == STORE_OK, "create %s", name);
    commit(t);
    return q;
}

/* Creates record "key" with "value", ordered by "order" (NULL: its key)
 * and delayed until "not_before" (0: not). */
static void
add(const StoreQueue *q, const char *key, const char *value, const char *order,
    int64_t not_before)
{
    StoreRecord r = {.key = str(key), .value = str(value),
                     .order = order ? str(order) : (StoreBytes){NULL, 0},
                     .not_before = not_before};
    StoreTxn *t = begin(true);
    int rc = store_record_create(t, q->table, q, &r);
    CHECK(rc == STORE_OK, "create %s: %s", key, store_strerror(rc));
    commit(t);
}

/* What one claim found: the keys claimed, in order, joined by ',', and the
 * last claimed record's columns. */
typedef struct Claimed {
    char    keys[512];
    int64_t attempts, hold, claimed_until, claimed, before_attempts, before_until;
    char    consumer[64], instance[64];
} Claimed;

static int
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

/* Claims up to "n" records (or the one "key") for "instance" signed by
 * "consumer"; returns the status and fills "out". */
static int
claim(const StoreQueue *q, int64_t n, const char *key, const char *consumer, Claimed *out)
{
    memset(out, 0, sizeof *out);
    StoreClaim c = {.n = n, .key = key ? str(key) : (StoreBytes){NULL, 0},
                    .consumer = str(consumer ? consumer : ""), .instance = str("inst-a")};
    int64_t got = 0;
    StoreTxn *t = begin(true);
    int rc = store_claim(t, q, &c, note_claimed, out, &got);
    if (rc == STORE_OK)
        commit(t);
    else
        store_txn_abort(t);
    int64_t listed = 0;
    for (const char *k = out->keys; *k; k++)
        listed += *k == ',';
    listed += out->keys[0] != 0;
    CHECK(rc != STORE_OK || got == listed, "claimed %lld, passed %lld", (long long)got,
          (long long)listed);
    return rc;
}

static StoreQueueCounts
counts_of(const StoreQueue *q)
{
    StoreQueueCounts n;
    StoreTxn *t = begin(false);
    int rc = store_queue_counts(t, q->table, &n);
    CHECK(rc == STORE_OK, "counts: %s", store_strerror(rc));
    store_txn_abort(t);
    return n;
}

/* Reads record "key" into "out" (columns only; bytes are not kept). */
static int
get(const StoreQueue *q, const char *key, StoreRecord *out)
{
    StoreTxn *t = begin(false);
    int rc = store_record_get(t, q->table, str(key), out);
    out->key = out->value = out->consumer = out->instance = out->order = out->group =
        (StoreBytes){NULL, 0};
    store_txn_abort(t);
    return rc;
}

/* ---- the cases ---- */

static void
test_records(void)
{
    StoreQueue q = queue_new("records", 30000 * MS, 0);
    StoreTxn *t = begin(true);
    int64_t now = store_txn_now(t);
    CHECK(store_txn_now(t) == now, "one instant a transaction");
    StoreRecord r = {.key = str("a"), .value = str("one")};
    CHECK(store_record_create(t, q.table, &q, &r) == STORE_OK, "create");
    CHECK(store_record_create(t, q.table, &q, &r) == STORE_EXISTS, "create twice: EXISTS");
    StoreRecord got;
    CHECK(store_record_get(t, q.table, str("a"), &got) == STORE_OK && same(got.value, "one"),
          "read back in the transaction");
    CHECK(got.since == now && got.written == now && got.changed == now && got.claimed == 0,
          "times of a new record are the transaction's instant");
    CHECK(got.attempts == 0 && got.hold == 0 && got.claimed_until == 0, "columns start at 0");
    commit(t);
    sleep_ms(5);
    t = begin(true);
    StoreRecord u = {.key = str("a"), .value = str("two")};
    CHECK(store_record_update(t, q.table, &q, &u) == STORE_OK, "update");
    StoreRecord v = {.key = str("nope"), .value = str("x")};
    CHECK(store_record_update(t, q.table, &q, &v) == STORE_NOTFOUND, "update absent: NOTFOUND");
    int64_t later = store_txn_now(t);
    CHECK(store_record_get(t, q.table, str("a"), &got) == STORE_OK && same(got.value, "two") &&
              got.written == later && got.since == now && got.changed == now,
          "update changes the value and written only");
    commit(t);
    t = begin(true);
    CHECK(store_record_delete(t, q.table, &q, str("a"), 0) == STORE_OK, "delete");
    CHECK(store_record_delete(t, q.table, &q, str("a"), 0) == STORE_NOTFOUND,
          "delete absent: NOTFOUND");
    CHECK(store_record_get(t, q.table, str("a"), &got) == STORE_NOTFOUND, "gone");
    commit(t);
    StoreQueueCounts n = counts_of(&q);
    CHECK(n.records == 0 && n.deletes == 1, "a queue's delete is counted");
}

static void
test_claim_order(void)
{
    StoreQueue q = queue_new("order", 30000 * MS, 0);
    add(&q, "k1", "v", "c", 0);
    add(&q, "k2", "v", "a", 0);
    add(&q, "k3", "v", "b", 0);
    add(&q, "k4", "v", "a", 0);
    add(&q, "k5", "v", "d", 0);
    Claimed c;
    CHECK(claim(&q, 3, NULL, NULL, &c) == STORE_OK, "claim 3");
    CHECK_STR(c.keys, "k2,k4,k3");
    CHECK(c.attempts == 1 && c.before_attempts == 0 && c.before_until == 0, "attempt counted");
    CHECK(c.claimed_until == c.claimed + 30000 * MS, "held for TIMEOUT");
    CHECK_STR(c.instance, "inst-a");
    CHECK_STR(c.consumer, "");
    int64_t hold = c.hold;
    CHECK(claim(&q, 1, NULL, "crawler", &c) == STORE_OK, "claim signed");
    CHECK_STR(c.keys, "k1");
    CHECK_STR(c.consumer, "crawler");
    CHECK(c.hold > hold, "hold numbers rise");
    StoreQueueCounts n = counts_of(&q);
    CHECK(n.records == 5 && n.ready == 1 && n.held == 4 && n.claims == 4, "counts after claims");
    CHECK(n.has_head && same(n.head_key, "k5"), "head is the next to claim");
    CHECK(n.next_wake > 0 && n.next_wake <= c.claimed_until, "next wake is the first deadline");
}

static void
test_claim_named(void)
{
    StoreQueue q = queue_new("named", 30000 * MS, 0);
    add(&q, "r", "v", NULL, 0);
    add(&q, "later", "v", NULL, INT64_MAX / 2);
    Claimed c;
    CHECK(claim(&q, 1, "nope", NULL, &c) == STORE_NOTFOUND, "named absent: NOTFOUND");
    CHECK(claim(&q, 1, "later", NULL, &c) == STORE_OK && c.keys[0] == 0, "delayed: none");
    CHECK(claim(&q, 1, "r", NULL, &c) == STORE_OK, "named ready");
    CHECK_STR(c.keys, "r");
    CHECK(claim(&q, 1, "r", NULL, &c) == STORE_OK && c.keys[0] == 0, "held: none");
    CHECK(claim(&q, 5, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "nothing ready");
    StoreQueueCounts n = counts_of(&q);
    CHECK(n.delayed == 1 && n.held == 1 && n.ready == 0 && !n.has_head, "delayed and held");
}

static void
test_lapse_and_ceiling(void)
{
    StoreQueue q = queue_new("lapse", 150 * MS, 2);
    add(&q, "x", "v", NULL, 0);
    Claimed c;
    CHECK(claim(&q, 1, NULL, NULL, &c) == STORE_OK, "first claim");
    int64_t first = c.hold;
    CHECK(claim(&q, 1, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "held: none");
    sleep_ms(300);
    CHECK(claim(&q, 1, NULL, NULL, &c) == STORE_OK, "after the hold lapsed");
    CHECK_STR(c.keys, "x");
    CHECK(c.attempts == 2 && c.hold != first && c.before_until != 0, "second attempt");
    StoreQueueCounts n = counts_of(&q);
    CHECK(n.lapses == 1 && n.claims == 2, "a lapse is counted at the next claim");
    sleep_ms(300);
    CHECK(claim(&q, 1, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0,
          "at the ceiling: handed out no more");
    n = counts_of(&q);
    CHECK(n.idle == 1 && n.ready == 0 && n.held == 0 && n.records == 1, "retired");
    StoreTxn *t = begin(true);
    StoreRecord r;
    CHECK(store_retry(t, &q, str("x"), 0, &r) == STORE_OK && r.attempts == 0, "retry");
    commit(t);
    CHECK(claim(&q, 1, NULL, NULL, &c) == STORE_OK, "claimable after retry");
    CHECK_STR(c.keys, "x");
    CHECK(c.attempts == 1, "attempts start again");
}

static void
test_release_touch_fence(void)
{
    StoreQueue q = queue_new("release", 30000 * MS, 0);
    add(&q, "x", "v", NULL, 0);
    Claimed c;
    claim(&q, 1, NULL, NULL, &c);
    StoreTxn *t = begin(true);
    StoreRecord r;
    CHECK(store_release(t, &q, str("x"), c.hold + 1000, 0, &r) == STORE_CONFLICT,
          "another hold's number: CONFLICT");
    CHECK(store_touch(t, &q, str("x"), c.hold + 1000, &r) == STORE_CONFLICT, "touch: CONFLICT");
    CHECK(store_record_delete(t, q.table, &q, str("x"), c.hold + 1000) == STORE_CONFLICT,
          "delete fenced: CONFLICT");
    CHECK(store_release(t, &q, str("nope"), 1, 0, &r) == STORE_NOTFOUND, "absent: NOTFOUND");
    commit(t);
    sleep_ms(5);
    t = begin(true);
    int64_t now = store_txn_now(t);
    CHECK(store_touch(t, &q, str("x"), c.hold, &r) == STORE_OK &&
              r.claimed_until == now + 30000 * MS && r.changed == now,
          "touch extends the hold from now");
    CHECK(store_release(t, &q, str("x"), c.hold, now + 200 * MS, &r) == STORE_OK, "release");
    CHECK(r.hold == 0 && r.claimed_until == 0 && r.consumer.len == 0 && r.instance.len == 0 &&
              r.attempts == 1 && r.since == now && r.not_before == now + 200 * MS,
          "release clears the hold, keeps attempts, delays");
    CHECK(store_release(t, &q, str("x"), c.hold, 0, &r) == STORE_CONFLICT,
          "a hold ends once");
    commit(t);
    CHECK(claim(&q, 1, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "delayed after release");
    StoreQueueCounts n = counts_of(&q);
    CHECK(n.delayed == 1 && n.releases == 1 && n.lapses == 0, "counts after release");
    sleep_ms(300);
    CHECK(claim(&q, 1, NULL, NULL, &c) == STORE_OK && c.before_until == 0, "ready again");
    CHECK_STR(c.keys, "x");
    t = begin(true);
    CHECK(store_record_delete(t, q.table, &q, str("x"), c.hold) == STORE_OK,
          "delete by the live hold");
    commit(t);
}

static int
count_released(void *ctx, const StoreRecord *r)
{
    (void)r;
    ++*(int *)ctx;
    return 0;
}

static void
test_release_all(void)
{
    StoreQueue q = queue_new("all", 30000 * MS, 0);
    add(&q, "a", "v", NULL, 0);
    add(&q, "b", "v", NULL, 0);
    add(&q, "c", "v", NULL, 0);
    Claimed c;
    claim(&q, 2, NULL, NULL, &c);
    claim(&q, 1, NULL, "grp", &c);
    StoreTxn *t = begin(true);
    int n = 0;
    CHECK(store_release_all(t, &q, str("grp"), str("other"), 0, count_released, &n) ==
                  STORE_OK && n == 1,
          "by consumer: its one hold");
    n = 0;
    CHECK(store_release_all(t, &q, str(""), str("other"), 0, count_released, &n) == STORE_OK &&
              n == 0,
          "another instance's: none");
    CHECK(store_release_all(t, &q, str(""), str("inst-a"), 0, count_released, &n) ==
                  STORE_OK && n == 2,
          "by instance: both");
    commit(t);
    CHECK(counts_of(&q).ready == 3, "all ready again");
}

static void
test_unclaim(void)
{
    StoreQueue q = queue_new("unclaim", 30000 * MS, 0);
    add(&q, "x", "v", NULL, 0);
    add(&q, "y", "v", NULL, 0);
    StoreRecord before;
    int64_t hold = 0;
    StoreTxn *t = begin(true);
    StoreClaim c = {.n = 1, .instance = str("i")};
    int64_t got;
    Claimed seen = {0};
    CHECK(store_claim(t, &q, &c, note_claimed, &seen, &got) == STORE_OK && got == 1, "claim");
    hold = seen.hold;
    commit(t);
    CHECK(get(&q, "x", &before) == STORE_OK, "read");
    before.key = str("x");
    before.attempts = 0;
    before.hold = 0;
    before.claimed_until = 0;
    before.claimed = 0;
    before.changed = before.since;
    bool back = false;
    t = begin(true);
    CHECK(store_unclaim(t, &q, &before, hold + 1, &back) == STORE_OK && !back,
          "another hold: not given back");
    CHECK(store_unclaim(t, &q, &before, hold, &back) == STORE_OK && back, "given back");
    commit(t);
    StoreRecord r;
    CHECK(get(&q, "x", &r) == STORE_OK && r.attempts == 0 && r.hold == 0 && r.claimed_until == 0,
          "as before the claim");
    StoreQueueCounts n = counts_of(&q);
    CHECK(n.claims == 0 && n.ready == 2 && same(n.head_key, "x"), "back at the head, uncounted");
}

static void
test_identity(void)
{
    StoreQueue q = queue_new("ids", 30000 * MS, 0);
    StoreTxn *t = begin(true);
    int64_t id;
    CHECK(store_identity_next(t, q.table, &id) == STORE_OK && id == 1, "first is 1");
    CHECK(store_identity_next(t, q.table, &id) == STORE_OK && id == 2, "then 2");
    CHECK(store_identity_note(t, q.table, 10) == STORE_OK, "note 10");
    CHECK(store_identity_note(t, q.table, 5) == STORE_OK, "note 5");
    CHECK(store_identity_next(t, q.table, &id) == STORE_OK && id == 11, "after 10: 11");
    CHECK(store_identity_note(t, q.table, INT64_MAX) == STORE_OK, "note the largest");
    CHECK(store_identity_next(t, q.table, &id) == STORE_EXHAUSTED, "none left");
    commit(t);
}

static void
test_dedup(void)
{
    StoreQueue q = queue_new("dedup", 30000 * MS, 0);
    bool repeat;
    StoreTxn *t = begin(true);
    CHECK(store_dedup_check(t, q.table, str("k"), 200 * MS, &repeat) == STORE_OK && !repeat,
          "first seen");
    CHECK(store_dedup_check(t, q.table, str("j"), 200 * MS, &repeat) == STORE_OK && !repeat,
          "another key");
    commit(t);
    t = begin(true);
    CHECK(store_dedup_check(t, q.table, str("k"), 200 * MS, &repeat) == STORE_OK && repeat,
          "within the window: a repeat");
    commit(t);
    sleep_ms(300);
    t = begin(true);
    CHECK(store_dedup_check(t, q.table, str("k"), 200 * MS, &repeat) == STORE_OK && !repeat,
          "after the window: new");
    commit(t);
}

static int
note_wake(void *ctx, const StoreRecord *r, int64_t wake)
{
    char *keys = ctx;
    size_t n = strlen(keys);
    snprintf(keys + n, 64 - n, "%.*s@%s ", (int)r->key.len, (const char *)r->key.data,
             wake > 0 ? "t" : "0");
    return 0;
}

static void
test_waiting_walk(void)
{
    StoreQueue q = queue_new("walk", 30000 * MS, 0);
    int64_t far = INT64_MAX / 2;
    add(&q, "late", "v", NULL, far + 1);
    add(&q, "early", "v", NULL, far);
    add(&q, "now", "v", NULL, 0);
    char keys[64] = "";
    StoreTxn *t = begin(false);
    CHECK(store_queue_each_waiting(t, q.table, note_wake, keys) == STORE_OK, "walk");
    store_txn_abort(t);
    CHECK_STR(keys, "early@t late@t ");
    StoreQueueCounts n = counts_of(&q);
    CHECK(n.next_wake == far && n.delayed == 2 && n.ready == 1, "next wake is the earliest");
}

/* ---- notifications and races ---- */

static void *
commit_later(void *arg)
{
    StoreQueue *q = arg;
    sleep_ms(100);
    add(q, "woke", "v", NULL, 0);
    return NULL;
}

static void
test_notification(void)
{
    StoreQueue q = queue_new("notify", 30000 * MS, 0);
    uint64_t seen = store_changes(st);
    pthread_t th;
    pthread_create(&th, NULL, commit_later, &q);
    int64_t until = store_now(st) + 5000 * MS;
    bool moved = false;
    while (!moved && store_now(st) < until)
        moved = store_wait_change(st, seen, until);
    pthread_join(th, NULL);
    CHECK(moved && store_changes(st) != seen, "a commit wakes a waiter");
}

enum { RACE_RECORDS = 300, RACE_THREADS = 3, RACE_PROCS = 2 };

typedef struct Race {
    StoreQueue q;
    int        fd;       /* where each claimed key is written, one a line */
} Race;

static int
race_note(void *ctx, const StoreRecord *now, const StoreRecord *before)
{
    (void)before;
    Race *r = ctx;
    char line[64];
    int n = snprintf(line, sizeof line, "%.*s\n", (int)now->key.len, (const char *)now->key.data);
    return write(r->fd, line, (size_t)n) == n ? 0 : -1;
}

typedef struct RaceClaim {
    Race   *race;
    int64_t got;
} RaceClaim;

static int
race_claim_fn(StoreTxn *txn, void *ctx)
{
    RaceClaim *rc = ctx;
    StoreClaim c = {.n = 2, .instance = str("racer")};
    return store_claim(txn, &rc->race->q, &c, race_note, rc->race, &rc->got);
}

/* Claims until the queue is empty. */
static void *
race_worker(void *arg)
{
    Race *r = arg;
    for (;;) {
        RaceClaim rc = {r, 0};
        if (store_write(st, race_claim_fn, &rc) != STORE_OK || rc.got == 0)
            break;
    }
    return NULL;
}

static void
test_races(void)
{
    Race race = {.q = queue_new("race", 60000 * MS, 0)};
    char keys_path[] = "/tmp/conformance_keys.XXXXXX";
    race.fd = mkstemp(keys_path);
    CHECK(race.fd >= 0, "keys file");
    for (int i = 0; i < RACE_RECORDS; i++) {
        char k[16];
        snprintf(k, sizeof k, "r%04d", i);
        add(&race.q, k, "v", NULL, 0);
    }
    pid_t kids[RACE_PROCS];
    for (int p = 0; p < RACE_PROCS; p++) {
        if ((kids[p] = fork()) == 0) {
            /* A process opens its own store: an environment does not cross fork(). */
            StoreOptions opts = {.sync = false};
            char err[256];
            if (store_open(location, &opts, &st, err, sizeof err) != STORE_OK)
                _exit(2);
            race_worker(&race);
            store_close(st);
            _exit(0);
        }
    }
    pthread_t th[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_create(&th[i], NULL, race_worker, &race);
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int p = 0; p < RACE_PROCS; p++) {
        int status;
        waitpid(kids[p], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "claiming process %d", p);
    }
    close(race.fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test \"$(sort -u %s | wc -l)\" = %d && test \"$(wc -l < %s)\" = %d",
             keys_path, RACE_RECORDS, keys_path, RACE_RECORDS);
    CHECK(system(cmd) == 0, "each of %d records claimed exactly once by %d threads and %d "
                            "processes", RACE_RECORDS, RACE_THREADS, RACE_PROCS);
    unlink(keys_path);
    StoreQueueCounts n = counts_of(&race.q);
    CHECK(n.claims == RACE_RECORDS && n.held == RACE_RECORDS && n.ready == 0, "all held");
}

int
main(void)
{
    const char *given = getenv("QUEUEFS_TEST_STORE");
    char dir[] = "/tmp/conformance_test.XXXXXX";
    if (given && *given) {
        snprintf(location, sizeof location, "%s", given);
    } else {
        if (!mkdtemp(dir))
            return 1;
        snprintf(location, sizeof location, "%s/store", dir);
    }
    StoreOptions opts = {.sync = false};
    char err[256];
    int rc = store_open(location, &opts, &st, err, sizeof err);
    CHECK(rc == STORE_OK, "open %s: %s", location, err);
    if (rc != STORE_OK)
        return unit_test_summary();
    test_records();
    test_claim_order();
    test_claim_named();
    test_lapse_and_ceiling();
    test_release_touch_fence();
    test_release_all();
    test_unclaim();
    test_identity();
    test_dedup();
    test_waiting_walk();
    test_notification();
    test_races();
    store_close(st);
    if (!(given && *given)) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    return unit_test_summary();
}
