/* limits_test.c — the backend conformance suite, part three: what every
 * backend of store.h must do with a queue's limits (SPEC section 6):
 * AT MOST n PER group (a group's records one at a time, or n at a time,
 * in claim order, passed over while the group is at its limit, freed by a
 * release, a finish, a lapse or a retry, named claims included, the
 * counts of grouped records and full groups, a head found past a large
 * full group), AT MOST n EVERY window (hand-outs bounded in every window,
 * named claims counted, a transaction overtaken by a later one,
 * store_queue_rate_next, a window of 100,000, one that goes round several
 * times, a rate made larger or smaller), and store_queue_refile
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
    StoreRecord r = {.key = bytes_of(key),
                     .value = bytes_of("v"),
                     .order = order ? bytes_of(order) : (StoreBytes){NULL, 0},
                     .group = bytes_of(group)};
    int rc = store_record_create(t, q->table, q, &r);
    CHECK(rc == STORE_OK, "create %s: %s", key, store_strerror(rc));
    commit(t);
}

/* Creates the queue records "spec" lists, in its order, each as
 * add_grouped does: words separated by spaces, each "key", "key:group" or
 * "key:group:order". */
static void
add_records(const StoreQueue *q, const char *spec)
{
    char words[256], *save = NULL;
    snprintf(words, sizeof words, "%s", spec);
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *group = strchr(w, ':'), *order = NULL;
        if (group) {
            *group++ = '\0';
            if ((order = strchr(group, ':')))
                *order++ = '\0';
        }
        add_grouped(q, w, group ? group : "", order);
    }
}

/* Ends hold "hold" of "key": released (rm false) or finished (rm true). */
static void
end_hold(const StoreQueue *q, const char *key, int64_t hold, bool rm)
{
    StoreTxn *t = begin(st, true);
    int rc = rm ? store_record_delete(t, q->table, q, bytes_of(key), hold)
                : store_release(t, q, bytes_of(key), hold, 0, bytes_of(""), NULL);
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
    add_records(&q, "a1:A a2:A a3:A b1:B b2:B n1 n2");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 4 && n.grouped == 3 && n.groups_full == 0,
          "each group's first is ready, the rest grouped (ready %d grouped %d)", (int)n.ready,
          (int)n.grouped);
    CHECK(n.has_head && bytes_eq(n.head_key, "a1"), "the head is a1");
    claim_expect(st, &q, 10, NULL, "a1,b1,n1,n2", "claim 10");
    n = counts_of(st, &q);
    CHECK(n.ready == 0 && n.held == 4 && n.grouped == 3 && n.groups_full == 2,
          "two groups at their limit (ready %d held %d grouped %d full %d)", (int)n.ready,
          (int)n.held, (int)n.grouped, (int)n.groups_full);
    CHECK(!n.has_head, "no head while both groups are full");
    claim_expect(st, &q, 1, NULL, "", "nothing claimable");
    claim_expect(st, &q, 1, "a2", "", "a named record of a full group: none");
    end_hold(&q, "a1", hold_of(&q, "a1"), false);
    n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.groups_full == 1 && n.has_head && bytes_eq(n.head_key, "a1"),
          "released, a1 is its group's next again");
    claim_expect(st, &q, 10, NULL, "a1", "claim after the release");
    end_hold(&q, "a1", hold_of(&q, "a1"), true);
    end_hold(&q, "b1", hold_of(&q, "b1"), true);
    claim_expect(st, &q, 10, NULL, "a2,b2", "claim after two finishes");
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
    add_records(&q, "k1:G:d k2:G:b k3:G:c k4:G:a o1:H:e");
    claim_expect(st, &q, 1, "k1", "k1", "a named claim");
    claim_expect(st, &q, 10, NULL, "k4,o1", "claim 10");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.held == 3 && n.grouped == 2 && n.groups_full == 1 && n.ready == 0,
          "G holds two (held %d grouped %d full %d)", (int)n.held, (int)n.grouped,
          (int)n.groups_full);
    claim_expect(st, &q, 1, "k2", "", "named, G at its limit: none");
    end_hold(&q, "k1", hold_of(&q, "k1"), true);
    claim_expect(st, &q, 10, NULL, "k2", "claim after a finish");
    StoreTxn *t = begin(st, true);
    StoreRecord r;
    CHECK(store_retry(t, &q, bytes_of("k4"), 0, &r) == STORE_OK, "retry ends k4's hold");
    commit(t);
    claim_expect(st, &q, 10, NULL, "k4", "claim after a retry");
}

/* A lapsed hold frees its group's place: the lapsed record is its group's
 * first again, and a finish of it lets the next go. */
static void
test_group_lapse(void)
{
    StoreQueue q = queue_new(st, "glapse", 150 * MS, 0);
    q.per_group = 1;
    add_records(&q, "x1:X x2:X");
    Claimed c;
    claim_expect(st, &q, 5, NULL, "x1", "first claim");
    claim_expect(st, &q, 5, NULL, "", "X is full");
    sleep_ms(300);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.has_head && bytes_eq(n.head_key, "x1"),
          "a lapse counts as ready again (ready %d)", (int)n.ready);
    c = claim_expect(st, &q, 5, NULL, "x1", "after the lapse");
    CHECK(c.attempts == 2 && counts_of(st, &q).lapses == 1, "a second attempt, a lapse counted");
    end_hold(&q, "x1", c.hold, true);
    claim_expect(st, &q, 5, NULL, "x2", "after the finish");
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
    claim_expect(st, &q, 5, NULL, "a00000,z", "claim 5");
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
    snprintf(order, sizeof order, "%c",
             'z' - (r->key.len ? ((const char *)r->key.data)[0] : 0) + 'a');
    *out = (StoreFiling){.order = bytes_of(order), .not_before = 0, .group = bytes_of("one")};
    return 0;
}

static void
test_group_refile(void)
{
    StoreQueue q = queue_new(st, "grefile", 30000 * MS, 0);
    add_records(&q, "a:A b:A c:B d:B");
    Claimed c;
    c = claim_expect(st, &q, 1, NULL, "a", "no limit yet");
    int64_t until = c.claimed_until;
    q.per_group = 1;
    refile(st, &q, NULL, NULL, "refile under AT MOST 1");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.grouped == 2 && n.groups_full == 1 && n.held == 1,
          "A full, B's first ready (ready %d grouped %d full %d)", (int)n.ready, (int)n.grouped,
          (int)n.groups_full);
    StoreRecord r;
    CHECK(get(st, q.table, "a", &r) == STORE_OK && r.claimed_until == until,
          "a keeps its deadline");
    refile(st, &q, file_all_one_group, NULL, "refile into one group, reversed");
    n = counts_of(st, &q);
    CHECK(n.ready == 0 && n.grouped == 3 && n.groups_full == 1, "one group, full");
    end_hold(&q, "a", hold_of(&q, "a"), true);
    claim_expect(st, &q, 5, NULL, "d", "claim in the new order");
    q.per_group = 0;
    refile(st, &q, NULL, NULL, "refile without a limit");
    n = counts_of(st, &q);
    CHECK(n.ready == 2 && n.grouped == 0 && n.groups_full == 0, "no groups");
    claim_expect(st, &q, 5, NULL, "c,b", "claim the rest");
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
    add_records(&q, "p q");
    int64_t until = store_now(st) + 3600 * SEC;
    refile(st, &q, file_later, &until, "refile p into the future");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 1 && n.delayed == 1, "p delayed (ready %d delayed %d)", (int)n.ready,
          (int)n.delayed);
    StoreRecord r;
    CHECK(get(st, q.table, "p", &r) == STORE_OK && r.not_before == until, "p's not_before");
    claim_expect(st, &q, 5, NULL, "q", "claim");
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
    c = claim_expect(st, &q, 1, "r7", "r7", "a named claim");
    int64_t first = c.claimed;
    sleep_ms(250); /* so r7 leaves the window well before r0 and r1 */
    claim_expect(st, &q, 10, NULL, "r0,r1", "claim 10");
    claim_expect(st, &q, 10, NULL, "", "no room: none");
    t = begin(st, false);
    now = store_txn_now(t);
    CHECK(store_queue_rate_next(t, &q, &at) == STORE_OK && at > now &&
              at == first + q.rate_window_ns,
          "room again when the first hand-out leaves the window");
    store_txn_abort(t);
    int64_t wait_ms = (at - now) / MS + 20;
    sleep_ms(wait_ms > 0 ? wait_ms : 1);
    claim_expect(st, &q, 10, NULL, "r2", "claim once the window moved");
    CHECK(counts_of(st, &q).ready == 4, "the rest still ready");
    /* A larger rate has room at once; an unlimited queue always has. */
    q.rate = 5;
    claim_expect(st, &q, 10, NULL, "r3,r4", "claim under a larger rate");
    q.rate = 0;
    t = begin(st, false);
    CHECK(store_queue_rate_next(t, &q, &at) == STORE_OK && at <= store_txn_now(t), "no rate: room");
    store_txn_abort(t);
    claim_expect(st, &q, 10, NULL, "r5,r6", "claim without a rate");
}

/* The claim of thread "late_claim": one record of queue "q" in a
 * transaction of its own. */
typedef struct LateClaim {
    const StoreQueue *q;
    Claimed c;
    int rc;
    bool done;
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
    claim_expect(st, &q, 3, NULL, "o2,o3,o4", "claim 3 more");
    sleep_ms(200);
    StoreTxn *early = begin(st, true); /* its window holds all five */
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
    CHECK(later.rc == STORE_OK && !strcmp(later.c.keys, "o5"), "the later one has room for one: %s",
          later.c.keys);
}

/* Rate and groups together: the rate counts only what is handed out. */
static void
test_rate_and_groups(void)
{
    StoreQueue q = queue_new(st, "both", 30000 * MS, 0);
    q.per_group = 1;
    q.rate = 2;
    q.rate_window_ns = 3600 * SEC;
    add_records(&q, "a1:A a2:A b1:B c1:C");
    claim_expect(st, &q, 10, NULL, "a1,b1", "claim 10");
    claim_expect(st, &q, 10, NULL, "", "the rate is spent");
}

/* ---- AT MOST … EVERY: large windows, wrap-around, changes of the rate ---- */

/* Adds "n" ungrouped records <prefix><number> to "q", a thousand a
 * transaction. */
static void
rate_fill(const StoreQueue *q, int n, const char *prefix)
{
    int rc = STORE_OK;
    for (int i = 0; i < n && rc == STORE_OK;) {
        StoreTxn *t = begin(st, true);
        for (int end = i + 1000 < n ? i + 1000 : n; i < end && rc == STORE_OK; i++) {
            char key[32];
            snprintf(key, sizeof key, "%s%07d", prefix, i);
            rc = add_in(t, q, key, "v", NULL, 0);
        }
        if (rc == STORE_OK)
            commit(t);
        else
            store_txn_abort(t);
    }
    CHECK(rc == STORE_OK, "create %d records: %s", n, store_strerror(rc));
}

static int
note_instant(void *ctx, const StoreRecord *now, const StoreRecord *before)
{
    (void)before;
    *(int64_t *)ctx = now->claimed;
    return 0;
}

/* Claims up to "n" records of "q" in a transaction of its own: how many
 * it took, the instant of the claim in "*at" (when it took any). */
static int64_t
rate_take(const StoreQueue *q, int64_t n, int64_t *at)
{
    StoreTxn *t = begin(st, true);
    StoreClaim c = {.n = n, .consumer = bytes_of(""), .instance = bytes_of("inst-a")};
    int64_t got = 0;
    int rc = store_claim(t, q, &c, note_instant, at, &got);
    CHECK(rc == STORE_OK, "claim %" PRId64 ": %s", n, store_strerror(rc));
    commit(t);
    return got;
}

/* store_queue_rate_next of "q" now. */
static int64_t
rate_next_of(const StoreQueue *q)
{
    int64_t at = 0;
    StoreTxn *t = begin(st, false);
    CHECK(store_queue_rate_next(t, q, &at) == STORE_OK, "rate_next");
    store_txn_abort(t);
    return at;
}

/* Sleeps until "at" and "ms" milliseconds more. */
static void
sleep_until(int64_t at, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t left = (at - ((int64_t)ts.tv_sec * SEC + ts.tv_nsec)) / MS;
    sleep_ms(left > 0 ? left + ms : ms);
}

/* AT MOST 100000 EVERY 1h: a window of a hundred thousand hand-outs, in
 * four claims, is full at exactly the rate — a claim beyond takes none,
 * a claim one short of it takes the one — and has room again when the
 * first claim's leave it; a smaller rate (ALTER QUEUE) counts only the
 * newest hand-outs, so has room when the oldest of those leave, and a
 * larger one has room for the difference at once. */
static void
test_rate_large(void)
{
    enum { RATE = 100000, BATCH = 25000 };
    StoreQueue q = queue_new(st, "rate-large", 3600 * SEC, 0);
    q.rate = RATE;
    q.rate_window_ns = 3600 * SEC;
    rate_fill(&q, RATE + 20, "L");
    int64_t at[4] = {0}, got = 0, one;
    got += rate_take(&q, BATCH - 1, &at[0]);
    CHECK(rate_next_of(&q) <= at[0] + q.rate_window_ns - q.rate_window_ns / 2,
          "room while the window is not full");
    for (int i = 1; i < 4; i++)
        got += rate_take(&q, i == 3 ? BATCH + 10 : BATCH, &at[i]);
    CHECK(got == RATE, "took %" PRId64 " in four claims, the rate", got);
    CHECK(rate_take(&q, 10, &one) == 0, "the window is full: none more");
    CHECK(rate_next_of(&q) == at[0] + q.rate_window_ns, "room once the first claim's leave");
    q.rate = RATE - BATCH; /* the window starts in the second claim's */
    CHECK(rate_next_of(&q) == at[1] + q.rate_window_ns, "a smaller rate: the second claim's");
    CHECK(rate_take(&q, 10, &one) == 0, "a smaller rate: none");
    q.rate = RATE + 1;
    CHECK(rate_take(&q, 10, &one) == 1, "one more in the rate: one more");
    CHECK(rate_next_of(&q) == at[0] + q.rate_window_ns, "then full again");
    q.rate = RATE + 5;
    CHECK(rate_take(&q, 10, &one) == 4, "five more in the rate: four more");
    CHECK(counts_of(st, &q).ready == 15, "the rest still ready");
}

/* AT MOST 100 EVERY 800ms, round and round (100 is no whole number of
 * 64): claims of 60 take what the window has room for — all, or the 40
 * left — and each time the oldest claim's hand-outs leave the window,
 * exactly those come back, for three times the rate. */
static void
test_rate_wrap(void)
{
    StoreQueue q = queue_new(st, "rate-wrap", 3600 * SEC, 0);
    q.rate = 100;
    q.rate_window_ns = 800 * MS;
    rate_fill(&q, 400, "W");
    int64_t at[8] = {0}, one;
    CHECK(rate_take(&q, 60, &at[0]) == 60, "60 of 100");
    sleep_ms(250);
    CHECK(rate_take(&q, 60, &at[1]) == 40, "then the 40 left");
    int64_t taken = 100, want[] = {60, 40, 60, 40, 60};
    for (int i = 2; i < 7; i++) {
        CHECK(rate_take(&q, 1, &one) == 0, "round %d: full", i);
        CHECK(rate_next_of(&q) == at[i - 2] + q.rate_window_ns,
              "round %d: room when claim %d's leave", i, i - 2);
        sleep_until(at[i - 2] + q.rate_window_ns, 20);
        int64_t got = rate_take(&q, 100, &at[i]);
        CHECK(got == want[i - 2], "round %d: took %" PRId64 ", the %" PRId64 " that left", i, got,
              want[i - 2]);
        taken += got;
    }
    CHECK(taken == 360 && counts_of(st, &q).ready == 40, "took %" PRId64 ", 40 ready", taken);
}

int
main(void)
{
    static const TestCase cases[] = {test_group_serial, test_group_limit,    test_group_lapse,
                                     test_group_large,  test_group_refile,   test_refile_filing,
                                     test_rate,         test_rate_overtaken, test_rate_and_groups,
                                     test_rate_large,   test_rate_wrap,      NULL};
    return test_store_main("limits_test", &st, cases);
}
