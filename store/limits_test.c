/* limits_test.c — the backend conformance suite, part three: what every
 * backend of store.h must do with a queue's limits (SPEC section 6):
 * AT MOST n PER group (a group's records one at a time, or n at a time,
 * in claim order, passed over while the group is at its limit, freed by a
 * release, a finish, a lapse or a retry, named claims included, the
 * counts of grouped records and full groups, a head found past a large
 * full group), AT MOST n EVERY window (hand-outs bounded in every window,
 * named claims counted, a transaction overtaken by a later one,
 * store_queue_rate_next), and store_queue_refile
 * filing records anew (order, not_before, group, a limit set or changed).
 *
 * The backend is a parameter, as for conformance_test.c:
 *
 *     QUEUEFS_TEST_STORE=/path/to/store store/limits_test
 */
#include "store_test.h"

static Store *st;

/* Creates queue record "key" of group "group" ("" none), in claim order
 * by "order" (NULL: its key). */
static void
add_grouped(const StoreQueue *q, const char *key, const char *group, const char *order)
{
    StoreTxn *t = begin(st, true);
    StoreRecord r = {.key = bytes_of(key), .value = bytes_of("v"),
                     .order = order ? bytes_of(order) : (StoreBytes){NULL, 0},
                     .group = bytes_of(group)};
    int rc = store_record_create(t, q->table, q, &r);
    CHECK(rc == STORE_OK, "create %s: %s", key, store_strerror(rc));
    commit(t);
}

/* Ends hold "hold" of "key": released (rm false) or finished (rm true). */
static void
end_hold(const StoreQueue *q, const char *key, int64_t hold, bool rm)
{
    StoreTxn *t = begin(st, true);
    int rc = rm ? store_record_delete(t, q->table, q, bytes_of(key), hold)
                : store_release(t, q, bytes_of(key), hold, 0, NULL);
    CHECK(rc == STORE_OK, "%s %s: %s", rm ? "finish" : "release", key, store_strerror(rc));
    commit(t);
}

/* The hold number of record "key" (0: none). */
static int64_t
hold_of(const StoreQueue *q, const char *key)
{
    StoreRecord r;
    return get(st, q->table, key, &r) == STORE_OK ? r.hold : 0;
}

/* One at a time per group: the head passes over a held group, the next
 * of a group is its first in claim order, ungrouped records are in no
 * group, and a release or finish frees the group. */
static void
test_group_serial(void)
{
    StoreQueue q = queue_new(st, "serial", 30000 * MS, 0);
    q.per_group = 1;
    add_grouped(&q, "a1", "A", NULL);
    add_grouped(&q, "a2", "A", NULL);
    add_grouped(&q, "a3", "A", NULL);
    add_grouped(&q, "b1", "B", NULL);
    add_grouped(&q, "b2", "B", NULL);
    add_grouped(&q, "n1", "", NULL);
    add_grouped(&q, "n2", "", NULL);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 4 && n.grouped == 3 && n.groups_full == 0,
          "each group's first is ready, the rest grouped (ready %d grouped %d)", (int)n.ready,
          (int)n.grouped);
    CHECK(n.has_head && bytes_eq(n.head_key, "a1"), "the head is a1");
    Claimed c;
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim 10");
    CHECK_STR(c.keys, "a1,b1,n1,n2");
    n = counts_of(st, &q);
    CHECK(n.ready == 0 && n.held == 4 && n.grouped == 3 && n.groups_full == 2,
          "two groups at their limit (ready %d held %d grouped %d full %d)", (int)n.ready,
          (int)n.held, (int)n.grouped, (int)n.groups_full);
    CHECK(!n.has_head, "no head while both groups are full");
    CHECK(claim(st, &q, 1, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "nothing claimable");
    CHECK(claim(st, &q, 1, "a2", NULL, &c) == STORE_OK && c.keys[0] == 0,
          "a named record of a full group: none");
    end_hold(&q, "a1", hold_of(&q, "a1"), false);
    n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.groups_full == 1 && n.has_head && bytes_eq(n.head_key, "a1"),
          "released, a1 is its group's next again");
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim after the release");
    CHECK_STR(c.keys, "a1");
    end_hold(&q, "a1", hold_of(&q, "a1"), true);
    end_hold(&q, "b1", hold_of(&q, "b1"), true);
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim after two finishes");
    CHECK_STR(c.keys, "a2,b2");
    n = counts_of(st, &q);
    CHECK(n.grouped == 1 && n.groups_full == 2, "a3 waits behind a2");
}

/* n at a time: a group takes up to n holds, named claims count, and a
 * record's claim order within its group is its order key's. */
static void
test_group_limit(void)
{
    StoreQueue q = queue_new(st, "limit", 30000 * MS, 0);
    q.per_group = 2;
    add_grouped(&q, "k1", "G", "d");
    add_grouped(&q, "k2", "G", "b");
    add_grouped(&q, "k3", "G", "c");
    add_grouped(&q, "k4", "G", "a");
    add_grouped(&q, "o1", "H", "e");
    Claimed c;
    CHECK(claim(st, &q, 1, "k1", NULL, &c) == STORE_OK, "a named claim");
    CHECK_STR(c.keys, "k1");
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim 10");
    CHECK_STR(c.keys, "k4,o1");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.held == 3 && n.grouped == 2 && n.groups_full == 1 && n.ready == 0,
          "G holds two (held %d grouped %d full %d)", (int)n.held, (int)n.grouped,
          (int)n.groups_full);
    CHECK(claim(st, &q, 1, "k2", NULL, &c) == STORE_OK && c.keys[0] == 0,
          "named, G at its limit: none");
    end_hold(&q, "k1", hold_of(&q, "k1"), true);
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim after a finish");
    CHECK_STR(c.keys, "k2");
    StoreTxn *t = begin(st, true);
    StoreRecord r;
    CHECK(store_retry(t, &q, bytes_of("k4"), 0, &r) == STORE_OK, "retry ends k4's hold");
    commit(t);
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim after a retry");
    CHECK_STR(c.keys, "k4");
}

/* A lapsed hold frees its group's place: the lapsed record is its group's
 * first again, and a finish of it lets the next go. */
static void
test_group_lapse(void)
{
    StoreQueue q = queue_new(st, "glapse", 150 * MS, 0);
    q.per_group = 1;
    add_grouped(&q, "x1", "X", NULL);
    add_grouped(&q, "x2", "X", NULL);
    Claimed c;
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK, "first claim");
    CHECK_STR(c.keys, "x1");
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "X is full");
    sleep_ms(300);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.has_head && bytes_eq(n.head_key, "x1"),
          "a lapse counts as ready again (ready %d)", (int)n.ready);
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK, "after the lapse");
    CHECK_STR(c.keys, "x1");
    CHECK(c.attempts == 2 && counts_of(st, &q).lapses == 1, "a second attempt, a lapse counted");
    end_hold(&q, "x1", c.hold, true);
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK, "after the finish");
    CHECK_STR(c.keys, "x2");
}

/* The head past one group of many records at its limit: found without
 * walking them (here only checked for being right; the benchmark
 * measures its cost). */
static void
test_group_large(void)
{
    StoreQueue q = queue_new(st, "glarge", 30000 * MS, 0);
    q.per_group = 1;
    StoreTxn *t = begin(st, true);
    char key[32];
    int failed = 0;
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "a%05d", i);
        StoreRecord r = {.key = bytes_of(key), .value = bytes_of("v"), .group = bytes_of("big")};
        failed += store_record_create(t, q.table, &q, &r) != STORE_OK;
    }
    CHECK(failed == 0, "3000 created");
    StoreRecord z = {.key = bytes_of("z"), .value = bytes_of("v"), .group = bytes_of("small")};
    CHECK(store_record_create(t, q.table, &q, &z) == STORE_OK, "create z");
    commit(t);
    Claimed c;
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK, "claim 5");
    CHECK_STR(c.keys, "a00000,z");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.grouped == 2999 && n.groups_full == 2 && n.records == 3001, "2999 grouped");
}

/* Refiling: a limit set on a queue with records takes effect, a changed
 * group and order take effect, and dropping the limit frees every record;
 * held records keep their deadline. */
static int
file_all_one_group(void *ctx, const StoreRecord *r, StoreFiling *out)
{
    (void)ctx;
    /* reversed claim order: "c" first */
    static char order[8];
    snprintf(order, sizeof order, "%c", 'z' - (r->key.len ? ((const char *)r->key.data)[0] : 0) + 'a');
    *out = (StoreFiling){.order = bytes_of(order), .not_before = 0, .group = bytes_of("one")};
    return 0;
}

static void
test_group_refile(void)
{
    StoreQueue q = queue_new(st, "grefile", 30000 * MS, 0);
    add_grouped(&q, "a", "A", NULL);
    add_grouped(&q, "b", "A", NULL);
    add_grouped(&q, "c", "B", NULL);
    add_grouped(&q, "d", "B", NULL);
    Claimed c;
    CHECK(claim(st, &q, 1, NULL, NULL, &c) == STORE_OK, "no limit yet");
    CHECK_STR(c.keys, "a");
    int64_t until = c.claimed_until;
    q.per_group = 1;
    StoreTxn *t = begin(st, true);
    CHECK(store_queue_refile(t, &q, NULL, NULL) == STORE_OK, "refile under AT MOST 1");
    commit(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.grouped == 2 && n.groups_full == 1 && n.held == 1,
          "A full, B's first ready (ready %d grouped %d full %d)", (int)n.ready, (int)n.grouped,
          (int)n.groups_full);
    StoreRecord r;
    CHECK(get(st, q.table, "a", &r) == STORE_OK && r.claimed_until == until, "a keeps its deadline");
    t = begin(st, true);
    CHECK(store_queue_refile(t, &q, file_all_one_group, NULL) == STORE_OK,
          "refile into one group, reversed");
    commit(t);
    n = counts_of(st, &q);
    CHECK(n.ready == 0 && n.grouped == 3 && n.groups_full == 1, "one group, full");
    end_hold(&q, "a", hold_of(&q, "a"), true);
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK, "claim in the new order");
    CHECK_STR(c.keys, "d");
    q.per_group = 0;
    t = begin(st, true);
    CHECK(store_queue_refile(t, &q, NULL, NULL) == STORE_OK, "refile without a limit");
    commit(t);
    n = counts_of(st, &q);
    CHECK(n.ready == 2 && n.grouped == 0 && n.groups_full == 0, "no groups");
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK, "claim the rest");
    CHECK_STR(c.keys, "c,b");
}

/* A refile that moves records into the future and back by not_before. */
static int
file_later(void *ctx, const StoreRecord *r, StoreFiling *out)
{
    int64_t *until = ctx;
    *out = (StoreFiling){.order = r->key, .not_before = bytes_eq(r->key, "p") ? *until : 0};
    return 0;
}

static void
test_refile_filing(void)
{
    StoreQueue q = queue_new(st, "filing", 30000 * MS, 0);
    add_grouped(&q, "p", "", NULL);
    add_grouped(&q, "q", "", NULL);
    int64_t until = store_now(st) + 3600 * SEC;
    StoreTxn *t = begin(st, true);
    CHECK(store_queue_refile(t, &q, file_later, &until) == STORE_OK, "refile p into the future");
    commit(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.delayed == 1, "p delayed (ready %d delayed %d)", (int)n.ready,
          (int)n.delayed);
    StoreRecord r;
    CHECK(get(st, q.table, "p", &r) == STORE_OK && r.not_before == until, "p's not_before");
    Claimed c;
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK, "claim");
    CHECK_STR(c.keys, "q");
}

/* A new queue of at most "rate" hand-outs a window of "window_ns",
 * holding ungrouped records <prefix>0 … <prefix>7. */
static StoreQueue
rate_queue(const char *name, int64_t rate, int64_t window_ns, const char *prefix)
{
    StoreQueue q = queue_new(st, name, 30000 * MS, 0);
    q.rate = rate;
    q.rate_window_ns = window_ns;
    char key[16];
    for (int i = 0; i < 8; i++) {
        snprintf(key, sizeof key, "%s%d", prefix, i);
        add_grouped(&q, key, "", NULL);
    }
    return q;
}

/* At most 3 hand-outs a window: a claim takes what the window has room
 * for, a named claim counts, and rate_next says when it has room again. */
static void
test_rate(void)
{
    StoreQueue q = rate_queue("rate", 3, 600 * MS, "r");
    StoreTxn *t = begin(st, false);
    int64_t at = -1, now = store_txn_now(t);
    CHECK(store_queue_rate_next(t, &q, &at) == STORE_OK && at <= now, "room at first");
    store_txn_abort(t);
    Claimed c;
    CHECK(claim(st, &q, 1, "r7", NULL, &c) == STORE_OK, "a named claim");
    CHECK_STR(c.keys, "r7");
    int64_t first = c.claimed;
    sleep_ms(250);   /* so r7 leaves the window well before r0 and r1 */
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim 10");
    CHECK_STR(c.keys, "r0,r1");
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "no room: none");
    t = begin(st, false);
    now = store_txn_now(t);
    CHECK(store_queue_rate_next(t, &q, &at) == STORE_OK && at > now &&
              at == first + q.rate_window_ns,
          "room again when the first hand-out leaves the window");
    store_txn_abort(t);
    int64_t wait_ms = (at - now) / MS + 20;
    sleep_ms(wait_ms > 0 ? wait_ms : 1);
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim once the window moved");
    CHECK_STR(c.keys, "r2");
    CHECK(counts_of(st, &q).ready == 4, "the rest still ready");
    /* A larger rate has room at once; an unlimited queue always has. */
    q.rate = 5;
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim under a larger rate");
    CHECK_STR(c.keys, "r3,r4");
    q.rate = 0;
    t = begin(st, false);
    CHECK(store_queue_rate_next(t, &q, &at) == STORE_OK && at <= store_txn_now(t), "no rate: room");
    store_txn_abort(t);
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim without a rate");
    CHECK_STR(c.keys, "r5,r6");
}

/* The claim of thread "late_claim": one record of queue "q" in a
 * transaction of its own. */
typedef struct LateClaim {
    const StoreQueue *q;
    Claimed           c;
    int               rc;
    bool              done;
} LateClaim;

static void *
late_claim(void *p)
{
    LateClaim *l = p;
    l->rc = claim(st, l->q, 1, NULL, NULL, &l->c);
    __atomic_store_n(&l->done, true, __ATOMIC_RELEASE);
    return NULL;
}

/* A transaction that began while the window was full is still bounded
 * by it when a later-begun one claims and commits first, forgetting the
 * hand-outs its own window has left (two writers at once where the
 * backend allows it; in turn where it does not). */
static void
test_rate_overtaken(void)
{
    StoreQueue q = rate_queue("overtaken", 5, 1000 * MS, "o");
    Claimed c;
    CHECK(claim(st, &q, 2, NULL, NULL, &c) == STORE_OK, "claim 2");
    int64_t first = c.claimed;
    sleep_ms(300);
    CHECK(claim(st, &q, 3, NULL, NULL, &c) == STORE_OK, "claim 3 more");
    CHECK_STR(c.keys, "o2,o3,o4");
    sleep_ms(200);
    StoreTxn *early = begin(st, true);   /* its window holds all five */
    CHECK(store_txn_now(early) < first + q.rate_window_ns, "began within the first window");
    int64_t wait_ms = (first + q.rate_window_ns - store_txn_now(early)) / MS + 50;
    sleep_ms(wait_ms);
    LateClaim later = {.q = &q};
    pthread_t th;
    pthread_create(&th, NULL, late_claim, &later);
    for (int i = 0; i < 100 && !__atomic_load_n(&later.done, __ATOMIC_ACQUIRE); i++)
        sleep_ms(5);
    CHECK(claim_in(early, &q, 10, NULL, NULL, &c) == STORE_OK, "the early transaction claims");
    CHECK(c.keys[0] == 0, "its window is full, but it took %s", c.keys);
    commit(early);
    pthread_join(th, NULL);
    CHECK(later.rc == STORE_OK && !strcmp(later.c.keys, "o5"),
          "the later one has room for one: %s", later.c.keys);
}

/* Rate and groups together: the rate counts only what is handed out. */
static void
test_rate_and_groups(void)
{
    StoreQueue q = queue_new(st, "both", 30000 * MS, 0);
    q.per_group = 1;
    q.rate = 2;
    q.rate_window_ns = 3600 * SEC;
    add_grouped(&q, "a1", "A", NULL);
    add_grouped(&q, "a2", "A", NULL);
    add_grouped(&q, "b1", "B", NULL);
    add_grouped(&q, "c1", "C", NULL);
    Claimed c;
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK, "claim 10");
    CHECK_STR(c.keys, "a1,b1");
    CHECK(claim(st, &q, 10, NULL, NULL, &c) == STORE_OK && c.keys[0] == 0, "the rate is spent");
}

int
main(void)
{
    static const TestCase cases[] = {test_group_serial,
                                     test_group_limit,
                                     test_group_lapse,
                                     test_group_large,
                                     test_group_refile,
                                     test_refile_filing,
                                     test_rate,
                                     test_rate_overtaken,
                                     test_rate_and_groups,
                                     NULL};
    return test_store_main("limits_test", &st, cases);
}
