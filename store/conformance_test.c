/* conformance_test.c — the backend conformance suite, part two: what
 * every backend of store.h must do with a queue's primitives, as cases
 * that use store.h alone: records and their times, claim order and
 * filing (order keys, not_before, refiling, prefixes), claims named and
 * signed, lapses, the ATTEMPTS ceiling, hold fences, releases, touches,
 * retries, give-backs, identities, deduplicate windows, the counts and
 * counters (at scale, across lapses, retirement, rollback and drop),
 * waiting walks, notifications, and claims racing from threads and
 * processes.  Part one (catalog, records, writes) is store_test.c.
 *
 * The backend is a parameter: $QUEUEFS_TEST_STORE names the store to open
 * (an LMDB directory, or another backend's location, as its store_open
 * takes it); unset, a fresh LMDB directory under /tmp, removed afterwards.
 * Every case makes tables of its own with names no other run uses, so a
 * store shared with other runs does not disturb it.  What only LMDB does
 * (map growth, checkpoints, crash recovery, formats) is tested in lmdb_test.c and
 * lmdb_format_test.c.
 *
 *     QUEUEFS_TEST_STORE=/path/to/store store/conformance_test
 */
#include "store_test.h"
#include "queue.h"

#include <pthread.h>
#include <sys/wait.h>

static Store *st;

/* ---- the cases ---- */

static void
test_records(void)
{
    StoreQueue q = queue_new(st, "records", 30000 * MS, 0);
    StoreTxn *t = begin(st, true);
    int64_t now = store_txn_now(t);
    CHECK(store_txn_now(t) == now, "one instant a transaction");
    StoreRecord r = {.key = bytes_of("a"), .value = bytes_of("one")};
    CHECK(store_record_create(t, q.table, &q, &r) == STORE_OK, "create");
    CHECK(store_record_create(t, q.table, &q, &r) == STORE_EXISTS, "create twice: EXISTS");
    StoreRecord got;
    CHECK(store_record_get(t, q.table, bytes_of("a"), &got) == STORE_OK &&
              bytes_eq(got.value, "one"),
          "read back in the transaction");
    CHECK(got.since == now && got.written == now && got.changed == now && got.claimed == 0,
          "times of a new record are the transaction's instant");
    CHECK(got.attempts == 0 && got.hold == 0 && got.claimed_until == 0, "columns start at 0");
    commit(t);
    sleep_ms(5);
    t = begin(st, true);
    StoreRecord u = {.key = bytes_of("a"), .value = bytes_of("two")};
    CHECK(store_record_update(t, q.table, &q, &u) == STORE_OK, "update");
    StoreRecord v = {.key = bytes_of("nope"), .value = bytes_of("x")};
    CHECK(store_record_update(t, q.table, &q, &v) == STORE_NOTFOUND, "update absent: NOTFOUND");
    int64_t later = store_txn_now(t);
    CHECK(store_record_get(t, q.table, bytes_of("a"), &got) == STORE_OK &&
              bytes_eq(got.value, "two") && got.written == later && got.since == now &&
              got.changed == now,
          "update changes the value and written only");
    commit(t);
    t = begin(st, true);
    CHECK(store_record_delete(t, q.table, &q, bytes_of("a"), 0) == STORE_OK, "delete");
    CHECK(store_record_delete(t, q.table, &q, bytes_of("a"), 0) == STORE_NOTFOUND,
          "delete absent: NOTFOUND");
    CHECK(store_record_get(t, q.table, bytes_of("a"), &got) == STORE_NOTFOUND, "gone");
    commit(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.records == 0 && n.deletes == 1, "a queue's delete is counted");
}

static void
test_claim_order(void)
{
    StoreQueue q = queue_new(st, "order", 30000 * MS, 0);
    add(st, &q, "k1", "v", "c", 0);
    add(st, &q, "k2", "v", "a", 0);
    add(st, &q, "k3", "v", "b", 0);
    add(st, &q, "k4", "v", "a", 0);
    add(st, &q, "k5", "v", "d", 0);
    Claimed c;
    c = claim_expect(st, &q, 3, NULL, "k2,k4,k3", "claim 3");
    CHECK(c.attempts == 1 && c.before_attempts == 0 && c.before_until == 0, "attempt counted");
    CHECK(c.claimed_until == c.claimed + 30000 * MS, "held for TIMEOUT");
    CHECK_STR(c.instance, "inst-a");
    CHECK_STR(c.consumer, "");
    int64_t hold = c.hold;
    CHECK(claim(st, &q, 1, NULL, "crawler", &c) == STORE_OK, "claim signed");
    CHECK_STR(c.keys, "k1");
    CHECK_STR(c.consumer, "crawler");
    CHECK(c.hold > hold, "hold numbers rise");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.records == 5 && n.ready == 1 && n.held == 4 && n.claims == 4, "counts after claims");
    CHECK(n.has_head && bytes_eq(n.head_key, "k5"), "head is the next to claim");
    CHECK(n.next_wake > 0 && n.next_wake <= c.claimed_until, "next wake is the first deadline");
}

static void
test_claim_named(void)
{
    StoreQueue q = queue_new(st, "named", 30000 * MS, 0);
    add(st, &q, "r", "v", NULL, 0);
    add(st, &q, "later", "v", NULL, INT64_MAX / 2);
    Claimed c;
    CHECK(claim(st, &q, 1, "nope", NULL, &c) == STORE_NOTFOUND, "named absent: NOTFOUND");
    claim_expect(st, &q, 1, "later", "", "delayed: none");
    claim_expect(st, &q, 1, "r", "r", "named ready");
    claim_expect(st, &q, 1, "r", "", "held: none");
    claim_expect(st, &q, 5, NULL, "", "nothing ready");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.delayed == 1 && n.held == 1 && n.ready == 0 && !n.has_head, "delayed and held");
}

/* A paused queue hands out nothing, from the head or by name; resumed,
 * its records are where they were. */
static void
test_paused(void)
{
    StoreQueue q = queue_new(st, "paused", 30000 * MS, 0);
    add(st, &q, "a", "v", NULL, 0);
    add(st, &q, "b", "v", NULL, 0);
    q.paused = true;
    claim_expect(st, &q, 2, NULL, "", "paused: none");
    claim_expect(st, &q, 1, "a", "", "paused, named: none");
    CHECK(counts_of(st, &q).ready == 2, "still ready");
    q.paused = false;
    claim_expect(st, &q, 2, NULL, "a,b", "resumed");
}

/* A changed ceiling, refiled, brings a retired record back and retires
 * one at the new ceiling; values, columns and times stay. */
static void
test_refile(void)
{
    StoreQueue q = queue_new(st, "refile", 100 * MS, 1);
    add(st, &q, "x", "v", NULL, 0);
    claim_expect(st, &q, 1, NULL, "x", "first claim");
    sleep_ms(250);
    claim_expect(st, &q, 1, NULL, "", "retired at 1");
    StoreRecord before, after;
    CHECK(get(st, q.table, "x", &before) == STORE_OK, "read");
    q.max_attempts = 2;
    refile(st, &q, NULL, NULL, "refile");
    CHECK(get(st, q.table, "x", &after) == STORE_OK && after.attempts == before.attempts &&
              after.written == before.written && after.changed == before.changed,
          "columns and times stay");
    CHECK(counts_of(st, &q).ready == 1, "ready under ATTEMPTS 2");
    q.max_attempts = 0;
    refile(st, &q, NULL, NULL, "refile without a ceiling");
    claim_expect(st, &q, 1, NULL, "x", "claimable");
}

static void
test_lapse_and_ceiling(void)
{
    StoreQueue q = queue_new(st, "lapse", 150 * MS, 2);
    add(st, &q, "x", "v", NULL, 0);
    Claimed c = claim_expect(st, &q, 1, NULL, "x", "first claim");
    int64_t first = c.hold;
    claim_expect(st, &q, 1, NULL, "", "held: none");
    sleep_ms(300);
    c = claim_expect(st, &q, 1, NULL, "x", "after the hold lapsed");
    CHECK(c.attempts == 2 && c.hold != first && c.before_until != 0, "second attempt");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.lapses == 1 && n.claims == 2, "a lapse is counted at the next claim");
    sleep_ms(300);
    claim_expect(st, &q, 1, NULL, "", "at the ceiling: handed out no more");
    n = counts_of(st, &q);
    CHECK(n.idle == 1 && n.ready == 0 && n.held == 0 && n.records == 1, "retired");
    StoreTxn *t = begin(st, true);
    StoreRecord r;
    CHECK(store_retry(t, &q, bytes_of("x"), 0, &r) == STORE_OK && r.attempts == 0, "retry");
    commit(t);
    c = claim_expect(st, &q, 1, NULL, "x", "claimable after retry");
    CHECK(c.attempts == 1, "attempts start again");
}

/* ---- the queue's rules (store/queue.h), as each backend files them ----
 *
 * Each case brings one record to a situation through the primitives, then
 * reads it and asks the backend, at one instant, where it stands: the
 * counts of its one-record queue and whether a claim of it succeeds must
 * say what queue_place says of the record as read — the check of the
 * PostgreSQL backend's SQL against the rules it restates. */

enum RuleStep { R_END, R_CLAIM, R_RELEASE, R_RELEASE_LATER, R_LATER, R_LAPSE, R_RETRY };
#define RULE_TIMEOUT (150 * MS)
#define RULE_LATER (3600 * SEC)

static const struct RuleCase {
    const char *what;
    int64_t ceiling;    /* ATTEMPTS; 0: none */
    bool created_later; /* created with not_before an hour ahead */
    enum RuleStep steps[5];
    QueueState state, next; /* what queue_place must say, to be sure the
                                  * case is the situation it names */
} rule_cases[] = {
    {"new: ready", 0, false, {R_END}, QUEUE_READY, QUEUE_READY},
    {"new, NOT BEFORE ahead: delayed", 0, true, {R_END}, QUEUE_DELAYED, QUEUE_READY},
    {"claimed: held, then ready", 0, false, {R_CLAIM}, QUEUE_HELD, QUEUE_READY},
    {"claimed at the ceiling: held, then retired", 1, false, {R_CLAIM}, QUEUE_HELD, QUEUE_RETIRED},
    {"its hold lapsed: ready", 0, false, {R_CLAIM, R_LAPSE}, QUEUE_READY, QUEUE_READY},
    {"its hold lapsed at the ceiling: retired",
     1,
     false,
     {R_CLAIM, R_LAPSE},
     QUEUE_RETIRED,
     QUEUE_RETIRED},
    {"released: ready", 0, false, {R_CLAIM, R_RELEASE}, QUEUE_READY, QUEUE_READY},
    {"released at the ceiling: retired",
     1,
     false,
     {R_CLAIM, R_RELEASE},
     QUEUE_RETIRED,
     QUEUE_RETIRED},
    {"released NOT BEFORE ahead: delayed",
     0,
     false,
     {R_CLAIM, R_RELEASE_LATER},
     QUEUE_DELAYED,
     QUEUE_READY},
    {"held, its NOT BEFORE moved past the hold: held, then delayed",
     0,
     false,
     {R_CLAIM, R_LATER},
     QUEUE_HELD,
     QUEUE_DELAYED},
    {"that hold lapsed: delayed",
     0,
     false,
     {R_CLAIM, R_LATER, R_LAPSE},
     QUEUE_DELAYED,
     QUEUE_READY},
    {"retired, then RETRY: ready", 1, false, {R_CLAIM, R_LAPSE, R_RETRY}, QUEUE_READY, QUEUE_READY},
    {"claimed at the ceiling, NOT BEFORE past the hold: held, then retired",
     1,
     false,
     {R_CLAIM, R_LATER},
     QUEUE_HELD,
     QUEUE_RETIRED},
};

/* Takes step "step" of a rule case on record "x" of "q"; "*hold" is its
 * live hold. */
static void
rule_step(const StoreQueue *q, enum RuleStep step, int64_t *hold)
{
    Claimed c;
    StoreRecord r;
    if (step == R_CLAIM) {
        CHECK(claim(st, q, 1, "x", NULL, &c) == STORE_OK && c.keys[0], "claim");
        *hold = c.hold;
        return;
    }
    if (step == R_LAPSE) {
        sleep_ms(RULE_TIMEOUT / MS + 50);
        return;
    }
    StoreTxn *t = begin(st, true);
    int64_t now = store_txn_now(t);
    int rc = STORE_OK;
    if (step == R_RELEASE || step == R_RELEASE_LATER) {
        rc = store_release(t, q, bytes_of("x"), *hold,
                           step == R_RELEASE_LATER ? now + RULE_LATER : 0, bytes_of(""), &r);
    } else if (step == R_RETRY) {
        rc = store_retry(t, q, bytes_of("x"), 0, &r);
    } else if ((rc = store_record_get(t, q->table, bytes_of("x"), &r)) == STORE_OK) {
        r.not_before = now + RULE_LATER; /* R_LATER: refiled, its hold kept */
        rc = store_record_update(t, q->table, q, &r);
    }
    CHECK(rc == STORE_OK, "step %d: %s", step, store_strerror(rc));
    commit(t);
}

static void
test_queue_rules(void)
{
    for (size_t i = 0; i < sizeof rule_cases / sizeof *rule_cases; i++) {
        const struct RuleCase *k = &rule_cases[i];
        StoreQueue q = queue_new(st, "rules", RULE_TIMEOUT, k->ceiling);
        int64_t hold = 0;
        StoreTxn *t = begin(st, true);
        CHECK(add_in(t, &q, "x", "v", NULL, k->created_later ? store_txn_now(t) + RULE_LATER : 0) ==
                  STORE_OK,
              "%s: create", k->what);
        commit(t);
        for (const enum RuleStep *s = k->steps; *s != R_END; s++)
            rule_step(&q, *s, &hold);
        /* Where it stands, by the rules and by the backend, at one instant. */
        t = begin(st, false);
        StoreRecord r;
        CHECK(store_record_get(t, q.table, bytes_of("x"), &r) == STORE_OK, "%s: read", k->what);
        QueuePlace p = queue_place(&q, &r, store_txn_now(t));
        StoreQueueCounts n = counts_in(t, q.table);
        store_txn_abort(t);
        CHECK(p.state == k->state && p.next == k->next, "%s: the rules say %d, then %d", k->what,
              p.state, p.next);
        uint64_t want[] = {
            [QUEUE_READY] = 0, [QUEUE_HELD] = 0, [QUEUE_DELAYED] = 0, [QUEUE_RETIRED] = 0};
        want[p.state] = 1;
        CHECK(n.records == 1 && n.ready == want[QUEUE_READY] && n.held == want[QUEUE_HELD] &&
                  n.delayed == want[QUEUE_DELAYED] && n.idle == want[QUEUE_RETIRED],
              "%s: the backend counts %" PRIu64 " ready, %" PRIu64 " held, %" PRIu64
              " delayed, %" PRIu64 " retired",
              k->what, n.ready, n.held, n.delayed, n.idle);
        CHECK(n.has_head == (p.state == QUEUE_READY), "%s: a head %s", k->what,
              n.has_head ? "where none is claimable" : "missing");
        /* A claim takes it exactly when the rules say it is ready (not
         * kept: the claim is rolled back). */
        Claimed c;
        t = begin(st, true);
        int rc = claim_in(t, &q, 1, "x", NULL, &c);
        store_txn_abort(t);
        CHECK(rc == STORE_OK &&
                  (c.keys[0] != 0) == (queue_place(&q, &r, store_now(st)).state == QUEUE_READY),
              "%s: a claim %s it", k->what, c.keys[0] ? "took" : "did not take");
    }
}

static void
test_release_touch_fence(void)
{
    StoreQueue q = queue_new(st, "release", 30000 * MS, 0);
    add(st, &q, "x", "v", NULL, 0);
    Claimed c;
    claim(st, &q, 1, NULL, NULL, &c);
    StoreTxn *t = begin(st, true);
    StoreRecord r;
    CHECK(store_release(t, &q, bytes_of("x"), c.hold + 1000, 0, bytes_of(""), &r) == STORE_CONFLICT,
          "another hold's number: CONFLICT");
    CHECK(store_touch(t, &q, bytes_of("x"), c.hold + 1000, &r) == STORE_CONFLICT,
          "touch: CONFLICT");
    CHECK(store_record_delete(t, q.table, &q, bytes_of("x"), c.hold + 1000) == STORE_CONFLICT,
          "delete fenced: CONFLICT");
    CHECK(store_release(t, &q, bytes_of("nope"), 1, 0, bytes_of(""), &r) == STORE_NOTFOUND,
          "absent: NOTFOUND");
    commit(t);
    sleep_ms(5);
    t = begin(st, true);
    int64_t now = store_txn_now(t);
    CHECK(store_touch(t, &q, bytes_of("x"), c.hold, &r) == STORE_OK &&
              r.claimed_until == now + 30000 * MS && r.changed == now,
          "touch extends the hold from now");
    CHECK(store_release(t, &q, bytes_of("x"), c.hold, now + 200 * MS, bytes_of(""), &r) == STORE_OK,
          "release");
    CHECK(r.hold == 0 && r.claimed_until == 0 && r.consumer.len == 0 && r.instance.len == 0 &&
              r.attempts == 1 && r.since == now && r.not_before == now + 200 * MS,
          "release clears the hold, keeps attempts, delays");
    CHECK(store_release(t, &q, bytes_of("x"), c.hold, 0, bytes_of(""), &r) == STORE_CONFLICT,
          "a hold ends once");
    commit(t);
    c = claim_expect(st, &q, 1, NULL, "", "delayed after release");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.delayed == 1 && n.releases == 1 && n.lapses == 0, "counts after release");
    sleep_ms(300);
    CHECK(claim(st, &q, 1, NULL, NULL, &c) == STORE_OK && c.before_until == 0, "ready again");
    CHECK_STR(c.keys, "x");
    t = begin(st, true);
    CHECK(store_record_delete(t, q.table, &q, bytes_of("x"), c.hold) == STORE_OK,
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
    StoreQueue q = queue_new(st, "all", 30000 * MS, 0);
    add(st, &q, "a", "v", NULL, 0);
    add(st, &q, "b", "v", NULL, 0);
    add(st, &q, "c", "v", NULL, 0);
    Claimed c;
    claim(st, &q, 2, NULL, NULL, &c);
    claim(st, &q, 1, NULL, "grp", &c);
    StoreTxn *t = begin(st, true);
    int n = 0;
    CHECK(store_release_all(t, &q, bytes_of("grp"), bytes_of("other"), 0, bytes_of(""),
                            count_released, &n) == STORE_OK &&
              n == 1,
          "by consumer: its one hold");
    n = 0;
    CHECK(store_release_all(t, &q, bytes_of(""), bytes_of("other"), 0, bytes_of(""), count_released,
                            &n) == STORE_OK &&
              n == 0,
          "another instance's: none");
    CHECK(store_release_all(t, &q, bytes_of(""), bytes_of("inst-a"), 0, bytes_of(""),
                            count_released, &n) == STORE_OK &&
              n == 2,
          "by instance: both");
    commit(t);
    CHECK(counts_of(st, &q).ready == 3, "all ready again");
}

static void
test_unclaim(void)
{
    StoreQueue q = queue_new(st, "unclaim", 30000 * MS, 0);
    add(st, &q, "x", "v", NULL, 0);
    add(st, &q, "y", "v", NULL, 0);
    StoreRecord before;
    int64_t hold = 0;
    StoreTxn *t = begin(st, true);
    StoreClaim c = {.n = 1, .instance = bytes_of("i")};
    int64_t got;
    Claimed seen = {0};
    CHECK(store_claim(t, &q, &c, note_claimed, &seen, &got) == STORE_OK && got == 1, "claim");
    hold = seen.hold;
    commit(t);
    CHECK(get(st, q.table, "x", &before) == STORE_OK, "read");
    before.key = bytes_of("x");
    before.attempts = 0;
    before.hold = 0;
    before.claimed_until = 0;
    before.claimed = 0;
    before.changed = before.since;
    bool back = false;
    t = begin(st, true);
    CHECK(store_unclaim(t, &q, &before, hold + 1, &back) == STORE_OK && !back,
          "another hold: not given back");
    CHECK(store_unclaim(t, &q, &before, hold, &back) == STORE_OK && back, "given back");
    commit(t);
    StoreRecord r;
    CHECK(get(st, q.table, "x", &r) == STORE_OK && r.attempts == 0 && r.hold == 0 &&
              r.claimed_until == 0,
          "as before the claim");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.claims == 0 && n.ready == 2 && bytes_eq(n.head_key, "x"),
          "back at the head, uncounted");
}

static void
test_identity(void)
{
    StoreQueue q = queue_new(st, "ids", 30000 * MS, 0);
    StoreTxn *t = begin(st, true);
    int64_t id;
    CHECK(store_identity_next(t, q.table, 1, &id) == STORE_OK && id == 1, "first is 1");
    CHECK(store_identity_next(t, q.table, 1, &id) == STORE_OK && id == 2, "then 2");
    CHECK(store_identity_note(t, q.table, 10) == STORE_OK, "note 10");
    CHECK(store_identity_note(t, q.table, 5) == STORE_OK, "note 5");
    CHECK(store_identity_next(t, q.table, 1, &id) == STORE_OK && id == 11, "after 10: 11");
    CHECK(store_identity_note(t, q.table, INT64_MAX) == STORE_OK, "note the largest");
    CHECK(store_identity_next(t, q.table, 1, &id) == STORE_EXHAUSTED, "none left");
    commit(t);
}

static int finish(const StoreQueue *q, const char *key, int64_t hold);

/* Identities drawn many at once, and records created many at once: as
 * one at a time would, in their order. */
static void
test_many(void)
{
    StoreQueue q = queue_new(st, "many", 30000 * MS, 0);
    q.keep_ns = 3600000 * MS;
    StoreTxn *t = begin(st, true);
    int64_t ids[4];
    CHECK(store_identity_next(t, q.table, 3, ids) == STORE_OK && ids[0] == 1 && ids[1] == 2 &&
              ids[2] == 3,
          "three at once: 1, 2, 3");
    CHECK(store_identity_note(t, q.table, 7) == STORE_OK, "note 7");
    CHECK(store_identity_next(t, q.table, 2, ids) == STORE_OK && ids[0] == 8 && ids[1] == 9,
          "then 8, 9");
    int64_t later = store_txn_now(t) + 3600000 * MS;
    StoreRecord rs[3] = {{.key = bytes_of("c"), .value = bytes_of("1")},
                         {.key = bytes_of("a"), .value = bytes_of("2"), .not_before = later},
                         {.key = bytes_of("b"), .value = bytes_of("3")}};
    size_t failed = 99;
    CHECK(store_records_create(t, q.table, &q, rs, 3, &failed) == STORE_OK && failed == 99,
          "three records at once");
    StoreRecord got[3];
    for (int i = 0; i < 3; i++)
        CHECK(store_record_get(t, q.table, rs[i].key, &got[i]) == STORE_OK &&
                  got[i].value.len == 1 && ((const char *)got[i].value.data)[0] == '1' + i &&
                  got[i].since == store_txn_now(t) && got[i].attempts == 0,
              "record %d stored as given", i);
    CHECK(got[0].seq < got[1].seq && got[1].seq < got[2].seq, "arrivals in the records' order");
    commit(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.records == 3 && n.ready == 2 && n.delayed == 1 && bytes_eq(n.head_key, "b"),
          "filed by order key and not_before: 2 ready, 1 delayed, head b");
    /* a key taken fails the call, naming it; a done one is replaced */
    Claimed c = claim_expect(st, &q, 1, NULL, "b", "claim b");
    CHECK(finish(&q, "b", c.hold) == STORE_OK, "b done (KEEP)");
    t = begin(st, true);
    StoreRecord more[3] = {{.key = bytes_of("d"), .value = bytes_of("4")},
                           {.key = bytes_of("b"), .value = bytes_of("5")},
                           {.key = bytes_of("c"), .value = bytes_of("6")}};
    CHECK(store_records_create(t, q.table, &q, more, 3, &failed) == STORE_EXISTS && failed == 2,
          "c is taken: EXISTS at index 2 (%zu)", failed);
    store_txn_abort(t);
    t = begin(st, true);
    CHECK(store_records_create(t, q.table, &q, more, 2, &failed) == STORE_OK,
          "d new and b over a done record");
    StoreRecord r;
    CHECK(store_record_get(t, q.table, bytes_of("b"), &r) == STORE_OK && bytes_eq(r.value, "5") &&
              r.completed_at == 0 && r.attempts == 0,
          "b created anew: new work");
    commit(t);
    n = counts_of(st, &q);
    CHECK(n.records == 4 && n.ready == 3 && n.done == 0, "4 records, 3 ready, none done");
}

/* A thousand records created at once, as a write of a thousand lines to
 * a queue's "new" does: whole or not at all — a key taken, by a record
 * stored before or another of the call's, fails the call naming the
 * first, and the transaction aborted leaves none of them. */
static void
test_many_whole(void)
{
    enum { N = 1000 };
    StoreQueue q = queue_new(st, "manywhole", 30000 * MS, 0);
    static char keys[N][16];
    static StoreRecord rs[N + 1]; /* k0999, then k0000 .. k0999 */
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "k%04d", i);
        rs[i + 1] = (StoreRecord){.key = bytes_of(keys[i]), .value = bytes_of("v")};
    }
    rs[0] = rs[N];
    StoreTxn *t = begin(st, true);
    CHECK(store_record_create(t, q.table, &q, &rs[0]) == STORE_OK, "k0999 stored first");
    commit(t);
    /* the thousand with the stored key last, then first */
    for (size_t at = N - 1, c = 0; c < 2; c++, at = 0) {
        size_t failed = 99;
        t = begin(st, true);
        CHECK(store_records_create(t, q.table, &q, &rs[1 - c], N, &failed) == STORE_EXISTS &&
                  failed == at,
              "a thousand, the key at %zu taken: EXISTS there (%zu)", at, failed);
        store_txn_abort(t);
        CHECK(counts_of(st, &q).records == 1, "none of the thousand stored (%zu)", at);
    }
    size_t failed = 99;
    t = begin(st, true);
    CHECK(store_records_create(t, q.table, &q, &rs[1], N - 1, &failed) == STORE_OK && failed == 99,
          "the other 999 at once");
    StoreRecord a, b;
    CHECK(store_record_get(t, q.table, rs[1].key, &a) == STORE_OK &&
              store_record_get(t, q.table, rs[N - 1].key, &b) == STORE_OK && a.seq < b.seq,
          "arrivals in the records' order");
    commit(t);
    CHECK(counts_of(st, &q).records == N, "a thousand stored");
    /* the transaction's last change (store_txn_last): stored with its
     * commit, or refused and then stored not at all */
    StoreQueue l = queue_new(st, "manylast", 30000 * MS, 0);
    t = begin(st, true);
    store_txn_last(t);
    CHECK(store_records_create(t, l.table, &l, &rs[1], 20, &failed) == STORE_OK,
          "twenty, the transaction's last change");
    commit(t);
    CHECK(counts_of(st, &l).records == 20, "twenty stored");
    t = begin(st, true);
    store_txn_last(t);
    CHECK(store_records_create(t, l.table, &l, &rs[11], 20, &failed) == STORE_EXISTS && failed == 0,
          "twenty more, the first taken: EXISTS at 0 (%zu)", failed);
    store_txn_abort(t);
    CHECK(counts_of(st, &l).records == 20, "none of those stored");
    /* on a queue that keeps, a done record among twenty is replaced */
    StoreQueue k = queue_new(st, "manydone", 30000 * MS, 0);
    k.keep_ns = 3600000 * MS;
    t = begin(st, true);
    CHECK(store_record_create(t, k.table, &k, &rs[11]) == STORE_OK, "k0010 stored");
    commit(t);
    Claimed c = claim_expect(st, &k, 1, NULL, "k0010", "claim k0010");
    CHECK(finish(&k, "k0010", c.hold) == STORE_OK, "k0010 done (KEEP)");
    StoreRecord twenty[20];
    for (int i = 0; i < 20; i++)
        twenty[i] = (StoreRecord){.key = rs[i + 1].key, .value = bytes_of("new")};
    t = begin(st, true);
    CHECK(store_records_create(t, k.table, &k, twenty, 20, &failed) == STORE_OK,
          "twenty at once, k0010 over its done record");
    StoreRecord r;
    CHECK(store_record_get(t, k.table, twenty[10].key, &r) == STORE_OK &&
              bytes_eq(r.value, "new") && r.completed_at == 0 && r.attempts == 0,
          "k0010 created anew: new work");
    commit(t);
    StoreQueueCounts n = counts_of(st, &k);
    CHECK(n.records == 20 && n.ready == 20 && n.done == 0, "20 records, all ready, none done");
}

/* Records deleted many at once: as one at a time would, in their order —
 * fenced by their holds, the first that fails named, a record marked to
 * run again handed out anew, a KEEP queue's made done. */
static void
test_delete_many(void)
{
    StoreQueue q = queue_new(st, "dmany", 30000 * MS, 0);
    StoreTxn *t = begin(st, true);
    const char *names[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        StoreRecord r = {.key = bytes_of(names[i]), .value = bytes_of("v")};
        CHECK(store_record_create(t, q.table, &q, &r) == STORE_OK, "create %s", names[i]);
    }
    commit(t);
    Claimed c = claim_expect(st, &q, 2, NULL, "a,b", "claim a and b");
    int64_t hold_b = c.hold, hold_a = hold_b - 1;
    StoreBytes keys[4] = {bytes_of("a"), bytes_of("b"), bytes_of("c"), bytes_of("c")};
    int64_t holds[4] = {hold_a, hold_b + 100, 0, 0};
    size_t failed = 99;
    t = begin(st, true);
    CHECK(store_records_delete(t, q.table, &q, keys, holds, 3, &failed) == STORE_CONFLICT &&
              failed == 1,
          "b's fence does not hold: CONFLICT at index 1 (%zu)", failed);
    store_txn_abort(t);
    t = begin(st, true);
    holds[1] = hold_b;
    CHECK(store_records_delete(t, q.table, &q, keys, holds, 4, &failed) == STORE_NOTFOUND &&
              failed == 3,
          "c given twice: NOTFOUND at index 3 (%zu)", failed);
    store_txn_abort(t);
    StoreBytes more[2] = {bytes_of("x"), bytes_of("a")};
    t = begin(st, true);
    CHECK(store_records_delete(t, q.table, &q, more, holds, 2, &failed) == STORE_NOTFOUND &&
              failed == 0,
          "x missing: NOTFOUND at index 0 (%zu)", failed);
    store_txn_abort(t);
    t = begin(st, true);
    CHECK(store_record_rerun(t, &q, bytes_of("b")) == STORE_OK, "b marked to run again");
    commit(t);
    t = begin(st, true);
    failed = 99;
    CHECK(store_records_delete(t, q.table, &q, keys, holds, 3, &failed) == STORE_OK && failed == 99,
          "a, b and c at once");
    StoreRecord r;
    CHECK(store_record_get(t, q.table, bytes_of("a"), &r) == STORE_NOTFOUND &&
              store_record_get(t, q.table, bytes_of("c"), &r) == STORE_NOTFOUND,
          "a and c removed");
    CHECK(store_record_get(t, q.table, bytes_of("b"), &r) == STORE_OK && r.hold == 0 &&
              r.attempts == 0 && !r.rerun,
          "b handed out anew");
    commit(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.records == 3 && n.ready == 3 && n.deletes == 3, "3 left, all ready; 3 deletes (%llu)",
          (unsigned long long)n.deletes);
    /* on a queue that keeps, each is made done */
    q.keep_ns = 3600000 * MS;
    StoreBytes de[2] = {bytes_of("d"), bytes_of("e")};
    int64_t none[2] = {0, 0};
    t = begin(st, true);
    CHECK(store_records_delete(t, q.table, &q, de, none, 2, NULL) == STORE_OK, "d and e at once");
    CHECK(store_record_get(t, q.table, bytes_of("d"), &r) == STORE_OK && r.completed_at != 0,
          "d done");
    commit(t);
    n = counts_of(st, &q);
    CHECK(n.done == 2 && n.ready == 1, "2 done, b ready");
}

static void
test_dedup(void)
{
    StoreQueue q = queue_new(st, "dedup", 30000 * MS, 0);
    bool repeat;
    StoreTxn *t = begin(st, true);
    CHECK(store_dedup_check(t, q.table, bytes_of("k"), 200 * MS, &repeat) == STORE_OK && !repeat,
          "first seen");
    CHECK(store_dedup_check(t, q.table, bytes_of("j"), 200 * MS, &repeat) == STORE_OK && !repeat,
          "another key");
    commit(t);
    t = begin(st, true);
    CHECK(store_dedup_check(t, q.table, bytes_of("k"), 200 * MS, &repeat) == STORE_OK && repeat,
          "within the window: a repeat");
    commit(t);
    sleep_ms(300);
    t = begin(st, true);
    CHECK(store_dedup_check(t, q.table, bytes_of("k"), 200 * MS, &repeat) == STORE_OK && !repeat,
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

static int
count_waiting(void *ctx, const StoreRecord *r, int64_t wake)
{
    (void)r, (void)wake;
    ++*(int *)ctx;
    return 0;
}

static void
test_waiting_walk(void)
{
    StoreQueue q = queue_new(st, "walk", 30000 * MS, 0);
    int64_t far = INT64_MAX / 2;
    add(st, &q, "late", "v", NULL, far + 1);
    add(st, &q, "early", "v", NULL, far);
    add(st, &q, "now", "v", NULL, 0);
    char keys[64] = "";
    StoreTxn *t = begin(st, false);
    CHECK(store_queue_each_waiting(t, q.table, note_wake, keys) == STORE_OK, "walk");
    store_txn_abort(t);
    CHECK_STR(keys, "early@t late@t ");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.next_wake == far && n.delayed == 2 && n.ready == 1, "next wake is the earliest");
}

/* ---- filing, scale and counts ---- */

/* Claim order is (order key, arrival); a lapsed hold puts its record back
 * in its place while a later one is still held; refiling (update) moves a
 * record by its new order key and not_before; a delete takes a record out;
 * order keys that are prefixes of each other order shorter first; an
 * empty order key is the record key; a drop takes the waiting records
 * too; another queue is never disturbed. */
static void
test_queue_filing(void)
{
    char name[128];
    snprintf(name, sizeof name, "%s", unique_name("filing"));
    StoreQueue q = {.table = table_make(st, name), .timeout_ns = 400 * MS};
    StoreQueue q2 = queue_new(st, "filing-other", 400 * MS, 0);
    add(st, &q2, "x", "vx", "00", 0);
    StoreTxn *t = begin(st, true);
    check_counts(t, q.table, (uint64_t[6]){0}, "", "empty");
    /* Order keys in neither key nor arrival order: r4 has r2's, later. */
    static const char *const filed[][2] = {
        {"r1", "30"}, {"r2", "10"}, {"r3", "20"}, {"r4", "10"}, {"r5", "40"}};
    for (int i = 0; i < 5; i++)
        CHECK(add_in(t, &q, filed[i][0], filed[i][0], filed[i][1], 0) == STORE_OK, "create");
    check_counts(t, q.table, (uint64_t[6]){5, 5, 0, 0, 0, 0}, "r2", "smallest order, first");
    Claimed c;
    CHECK(claim_in(t, &q, 1, NULL, NULL, &c) == STORE_OK, "claim");
    CHECK_STR(c.keys, "r2");
    commit(t);
    sleep_ms(250);
    claim_expect(st, &q, 1, NULL, "r4", "claim");
    t = begin(st, false);
    check_counts(t, q.table, (uint64_t[6]){5, 3, 2, 0, 0, 0}, "r3", "two held");
    store_txn_abort(t);
    /* r2's hold lapsed, r4's not: r2 is back ahead of r3, looked at
     * from a read transaction as from a write one. */
    sleep_ms(250);
    for (int write = 0; write <= 1; write++) {
        t = begin(st, write);
        check_counts(t, q.table, (uint64_t[6]){5, 4, 1, 0, 0, 0}, "r2", "r2 lapsed");
        if (write) {
            int64_t now = store_txn_now(t);
            StoreRecord r = {.key = bytes_of("r2"),
                             .value = bytes_of("r2"),
                             .order = bytes_of("10"),
                             .not_before = now + 60 * SEC};
            CHECK(store_record_update(t, q.table, &q, &r) == STORE_OK, "delay r2");
            check_counts(t, q.table, (uint64_t[6]){5, 3, 1, 1, 0, 0}, "r3", "r2 delayed");
            r.order = bytes_of("50");
            r.not_before = 0;
            CHECK(store_record_update(t, q.table, &q, &r) == STORE_OK, "refile r2");
            CHECK(store_record_delete(t, q.table, &q, bytes_of("r4"), 0) == STORE_OK, "delete");
            r = (StoreRecord){.key = bytes_of("r3"), .value = bytes_of("r3")};
            CHECK(store_record_update(t, q.table, &q, &r) == STORE_OK, "r3 by its key");
            check_counts(t, q.table, (uint64_t[6]){4, 4, 0, 0, 0, 0}, "r1", "refiled");
            CHECK(claim_in(t, &q, 9, NULL, NULL, &c) == STORE_OK, "claim all");
            CHECK_STR(c.keys, "r1,r5,r2,r3");
            commit(t);
        } else {
            store_txn_abort(t);
        }
    }

    /* Order keys that are prefixes of each other, and the empty one. */
    StoreQueue q3 = queue_new(st, "prefixes", 400 * MS, 0);
    t = begin(st, true);
    const char a0[] = {'a', '\0'};
    StoreRecord p2 = {.key = bytes_of("p2"), .value = bytes_of(""), .order = {a0, 2}};
    CHECK(store_record_create(t, q3.table, &q3, &p2) == STORE_OK, "p2");
    CHECK(add_in(t, &q3, "p1", "", "a\x01", 0) == STORE_OK, "p1");
    CHECK(add_in(t, &q3, "p3", "", "a", 0) == STORE_OK, "p3");
    check_counts(t, q3.table, (uint64_t[6]){3, 3, 0, 0, 0, 0}, "p3", "the prefix first");
    CHECK(store_record_delete(t, q3.table, &q3, bytes_of("p3"), 0) == STORE_OK, "delete p3");
    check_counts(t, q3.table, (uint64_t[6]){2, 2, 0, 0, 0, 0}, "p2", "then its NUL");
    CHECK(add_in(t, &q3, "p4", "", NULL, 0) == STORE_OK, "p4 by its key");
    check_counts(t, q3.table, (uint64_t[6]){3, 3, 0, 0, 0, 0}, "p2", "p4 after a");
    CHECK(add_in(t, &q3, "A", "", NULL, 0) == STORE_OK, "A by its key");
    check_counts(t, q3.table, (uint64_t[6]){4, 4, 0, 0, 0, 0}, "A", "A before a");
    commit(t);

    /* Dropping a queue removes its waiting records too. */
    t = begin(st, true);
    CHECK(add_in(t, &q, "w", "", "z", store_txn_now(t) + SEC) == STORE_OK, "w waits");
    CHECK(store_table_drop(t, name) == STORE_OK, "drop");
    StoreQueueCounts n;
    int rc = store_queue_counts(t, q.table, &n);
    CHECK(rc == STORE_NOTFOUND || (rc == STORE_OK && n.records == 0 && n.delayed == 0 &&
                                   n.held == 0 && !n.has_head && n.next_wake == INT64_MAX),
          "nothing left of a dropped queue");
    check_counts(t, q2.table, (uint64_t[6]){1, 1, 0, 0, 0, 0}, "x", "the other queue");
    commit(t);
}

enum { SCALE_N = 20000, SCALE_DELAYED = 10000 };
/* How far ahead the delayed ones are: time enough to file 20,000 records in
 * one transaction on a server backend, a round trip each, on a loaded
 * machine too (a sanitizer build beside other suites took over 4 s). */
#define SCALE_WAIT (10 * SEC)

typedef struct Scale {
    StoreQueue q;
    int64_t base; /* the instant of the creates */
    int bad;
} Scale;

/* Creates rec00001 … in claim order; the first SCALE_DELAYED delayed. */
static int
scale_fill(StoreTxn *t, void *ctx)
{
    Scale *s = ctx;
    char key[32], order[32];
    s->bad = 0;
    s->base = store_txn_now(t);
    for (int i = 1; i <= SCALE_N; i++) {
        snprintf(key, sizeof key, "rec%05d", i);
        snprintf(order, sizeof order, "%08d", i);
        int64_t nb = i <= SCALE_DELAYED ? s->base + SCALE_WAIT + i : 0;
        s->bad += add_in(t, &s->q, key, key, order, nb) != STORE_OK;
    }
    return s->bad ? -1 : 0;
}

/* A claim finds the head past many delayed records ahead of it in claim
 * order, and the delayed ones, all due at once, go back into order (a
 * functional check: nothing is timed). */
static void
test_queue_scale(void)
{
    Scale s = {.q = queue_new(st, "scale", 60 * SEC, 0)};
    int rc = store_write(st, scale_fill, &s);
    CHECK(rc == STORE_OK && s.bad == 0, "%d creates failed: %d", s.bad, rc);
    StoreQueueCounts n = counts_of(st, &s.q);
    CHECK(n.records == SCALE_N && n.ready == SCALE_N - SCALE_DELAYED &&
              n.delayed == SCALE_DELAYED && n.has_head && n.next_wake == s.base + SCALE_WAIT + 1,
          "filed: %" PRIu64 " ready, %" PRIu64 " delayed", n.ready, n.delayed);
    claim_expect(st, &s.q, 1, NULL, "rec10001", "claim");
    while (store_now(st) <= s.base + SCALE_WAIT + SCALE_DELAYED)
        sleep_ms(50);
    n = counts_of(st, &s.q);
    CHECK(n.ready == SCALE_N - 1 && n.delayed == 0 && n.held == 1, "all due");
    claim_expect(st, &s.q, 3, NULL, "rec00001,rec00002,rec00003", "claim");
    StoreTxn *t = begin(st, false);
    int waiting = 0;
    CHECK(store_queue_each_waiting(t, s.q.table, count_waiting, &waiting) == STORE_OK &&
              waiting == 4,
          "only the 4 held wait: %d", waiting);
    store_txn_abort(t);
}

/* A store_write function that creates and claims, then fails. */
static int
fail_after_claim(StoreTxn *t, void *ctx)
{
    const StoreQueue *q = ctx;
    Claimed c;
    add_in(t, q, "doomed", "", "00", 0);
    claim_in(t, q, 1, NULL, NULL, &c);
    return -1;
}

/* The counts as records are filed, claimed, lapse, retire at the ATTEMPTS
 * ceiling, wait out a not_before past their hold, are released (at the
 * ceiling: retired), retried and deleted; a failed write's counts are rolled back with it; a table
 * defined again counts from zero. */
static void
test_counts(void)
{
    char name[128];
    snprintf(name, sizeof name, "%s", unique_name("counted"));
    StoreQueue q = {.table = table_make(st, name), .timeout_ns = 500 * MS, .max_attempts = 2};
    Claimed c;
    StoreTxn *t = begin(st, true);
    check_counts(t, q.table, (uint64_t[6]){0}, "", "empty");
    CHECK(add_in(t, &q, "l", "l", "05", 0) == STORE_OK && claim_in(t, &q, 1, "l", NULL, &c) == 0,
          "l claimed");
    commit(t);
    sleep_ms(600);
    /* l's second hold is its last; h's ends in ready, n's in a delay. */
    t = begin(st, true);
    int64_t now = store_txn_now(t);
    CHECK(claim_in(t, &q, 1, "l", NULL, &c) == STORE_OK && c.attempts == 2, "l again");
    static const char *const filed[][2] = {{"b", "20"}, {"c", "30"}, {"h", "10"}, {"n", "01"}};
    for (int i = 0; i < 4; i++)
        CHECK(add_in(t, &q, filed[i][0], filed[i][0], filed[i][1], 0) == STORE_OK, "create");
    CHECK(add_in(t, &q, "d", "d", "40", now + 2 * SEC) == STORE_OK, "d delayed");
    CHECK(claim_in(t, &q, 1, "h", NULL, &c) == STORE_OK && claim_in(t, &q, 1, "n", NULL, &c) == 0,
          "h and n claimed");
    StoreRecord r = {.key = bytes_of("n"),
                     .value = bytes_of("n"),
                     .order = bytes_of("01"),
                     .not_before = now + 2 * SEC};
    CHECK(store_record_update(t, q.table, &q, &r) == STORE_OK, "n delayed after its hold");
    check_counts(t, q.table, (uint64_t[6]){6, 2, 3, 1, 0, 0}, "b", "filed");
    commit(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.claims == 4 && n.lapses == 1 && n.releases == 0 && n.deletes == 0, "counters");
    CHECK(n.next_wake == now + 500 * MS, "the first hold ends first");

    /* The holds ended: h is ready (ahead of b), n delayed, l retired. */
    sleep_ms(700);
    t = begin(st, false);
    check_counts(t, q.table, (uint64_t[6]){6, 3, 0, 2, 1, 0}, "h", "holds ended");
    CHECK(counts_in(t, q.table).next_wake == now + 2 * SEC, "next: the delays");
    store_txn_abort(t);
    t = begin(st, true);
    check_counts(t, q.table, (uint64_t[6]){6, 3, 0, 2, 1, 0}, "h", "as a claim finds them");
    CHECK(claim_in(t, &q, 1, NULL, NULL, &c) == STORE_OK, "claim");
    CHECK_STR(c.keys, "h");
    CHECK(c.attempts == 2 && c.before_until != 0, "h's second attempt, after a lapse");
    CHECK(store_release(t, &q, bytes_of("h"), c.hold, 0, bytes_of(""), NULL) == STORE_OK,
          "release h");
    check_counts(t, q.table, (uint64_t[6]){6, 2, 0, 2, 2, 0}, "b", "released at the ceiling");
    CHECK(counts_in(t, q.table).releases == 1, "a release counted");
    CHECK(store_retry(t, &q, bytes_of("h"), 0, NULL) == STORE_OK, "retry h");
    check_counts(t, q.table, (uint64_t[6]){6, 3, 0, 2, 1, 0}, "h", "retried");
    commit(t);

    /* Past every instant all are ready but the retired one.  Deletes: a
     * held one, a ready one. */
    while (store_now(st) <= now + 2 * SEC)
        sleep_ms(50);
    t = begin(st, true);
    check_counts(t, q.table, (uint64_t[6]){6, 5, 0, 0, 1, 0}, "n", "the delays ended");
    CHECK(claim_in(t, &q, 1, NULL, NULL, &c) == STORE_OK, "claim");
    CHECK_STR(c.keys, "n");
    CHECK(store_record_delete(t, q.table, &q, bytes_of("n"), c.hold) == STORE_OK, "delete n");
    CHECK(store_record_delete(t, q.table, &q, bytes_of("h"), 0) == STORE_OK, "delete h");
    check_counts(t, q.table, (uint64_t[6]){4, 3, 0, 0, 1, 0}, "b", "deleted");
    commit(t);
    n = counts_of(st, &q);
    /* h's and n's second claims each found a hold never released. */
    CHECK(n.claims == 6 && n.lapses == 3 && n.releases >= 1 && n.deletes == 2, "counters");

    /* A write that fails is rolled back with its counts. */
    CHECK(store_write(st, fail_after_claim, &q) == -1, "failing write");
    StoreQueueCounts after = counts_of(st, &q);
    CHECK(after.records == 4 && after.ready == 3 && after.held == 0 && after.claims == 6 &&
              after.lapses == 3 && after.releases == n.releases && after.deletes == 2,
          "rolled back with its counts");

    /* Dropped and defined again: a new table, counted from zero. */
    t = begin(st, true);
    uint32_t again;
    CHECK(store_table_drop(t, name) == STORE_OK, "drop");
    CHECK(store_table_create(t, name, bytes_of(""), &again) == STORE_OK, "create again");
    n = counts_in(t, again);
    check_counts(t, again, (uint64_t[6]){0}, "", "defined again");
    CHECK(n.claims == 0 && n.releases == 0 && n.lapses == 0 && n.deletes == 0 &&
              n.next_wake == INT64_MAX,
          "no counters");
    CHECK(store_table_drop(t, name) == STORE_OK, "drop again");
    commit(t);
}

/* ---- notifications and races ---- */

static void *
commit_later(void *arg)
{
    StoreQueue *q = arg;
    sleep_ms(100);
    add(st, q, "woke", "v", NULL, 0);
    return NULL;
}

/* What claims_in_two claims from. */
typedef struct TwoQueues {
    StoreQueue a, b;
    int64_t got;
} TwoQueues;

static int
claims_in_two(StoreTxn *txn, void *ctx)
{
    TwoQueues *two = ctx;
    StoreClaim c = {.n = 1, .instance = bytes_of("two")};
    int64_t n = 0;
    two->got = 0;
    int rc = store_claim(txn, &two->a, &c, NULL, NULL, &n);
    two->got += n;
    if (!rc)
        rc = store_claim(txn, &two->b, &c, NULL, NULL, &n);
    two->got += n;
    return rc;
}

/* A write of test_last: reads its queue's definition (a backend may answer
 * from a cache), says its next primitive is its last (store_txn_last),
 * and claims one from the head — or deletes "del", and after a delete
 * that found nothing reads "then". */
typedef struct LastWrite {
    StoreQueue q;
    const char *name;
    const char *del;
    const char *then;
    char def[16]; /* the definition it read */
    int64_t got;  /* claimed */
    int rc;       /* what the primitive answered */
} LastWrite;

static int
last_write(StoreTxn *txn, void *ctx)
{
    LastWrite *w = ctx;
    uint32_t id;
    w->got = 0;
    int rc = def_copy(txn, w->name, &id, w->def, sizeof w->def);
    if (rc)
        return rc;
    store_txn_last(txn);
    if (!w->del) {
        StoreClaim c = {.n = 1, .instance = bytes_of("last")};
        return w->rc = store_claim(txn, &w->q, &c, NULL, NULL, &w->got);
    }
    w->rc = store_record_delete(txn, w->q.table, &w->q, bytes_of(w->del), 0);
    if (w->rc != STORE_NOTFOUND || !w->then)
        return w->rc;
    StoreRecord r;
    return store_record_get(txn, w->q.table, bytes_of(w->then), &r);
}

/* A claim or a delete its transaction says is its last change does what
 * it would otherwise: once, counted, under the definition current when it
 * runs — also when another process has just redefined the queue — and a
 * delete that found nothing may be followed by reads. */
static void
test_last(void)
{
    const char *name = unique_name("last");
    LastWrite w = {.q = {.timeout_ns = 30000 * MS, .table = table_make(st, name)}, .name = name};
    for (const char *k = "abcd"; *k; k++)
        add(st, &w.q, (char[]){*k, 0}, "v", NULL, 0);
    CHECK(store_write(st, last_write, &w) == STORE_OK && w.got == 1, "the claim: %d", w.rc);
    StoreQueueCounts n = counts_of(st, &w.q);
    CHECK(n.claims == 1 && n.held == 1 && n.ready == 3, "claimed once, counted");
    CHECK(redefine_elsewhere(name, "v2"), "the other process redefined it");
    CHECK(store_write(st, last_write, &w) == STORE_OK && w.got == 1 && !strcmp(w.def, "v2"),
          "the claim after a redefinition elsewhere reads it: %s", w.def);
    n = counts_of(st, &w.q);
    CHECK(n.claims == 2 && n.held == 2 && n.ready == 2, "claimed once more: %" PRIu64 " claims",
          n.claims);
    w.del = "a";
    CHECK(store_write(st, last_write, &w) == STORE_OK, "the delete: %s", store_strerror(w.rc));
    CHECK(redefine_elsewhere(name, "v3"), "the other process redefined it again");
    w.del = "c";
    CHECK(store_write(st, last_write, &w) == STORE_OK && !strcmp(w.def, "v3"),
          "the delete after a redefinition elsewhere reads it: %s", w.def);
    n = counts_of(st, &w.q);
    CHECK(n.records == 2 && n.deletes == 2, "deleted twice, counted: %" PRIu64 " records",
          n.records);
    w.del = "zz";
    w.then = "b";
    CHECK(store_write(st, last_write, &w) == STORE_OK && w.rc == STORE_NOTFOUND,
          "a delete of nothing, then a read: %s", store_strerror(w.rc));
    CHECK(counts_of(st, &w.q).deletes == 2, "nothing more deleted");
}

/* Runs "fn" with "ctx" in a process of its own, on a store it opens (an
 * environment does not cross fork(), and a process on a store of its own
 * is as another host is); answers that process's exit status: 0 when "fn"
 * answered STORE_OK, 2 when the store did not open, 3 else. */
static int
in_another_process(int (*fn)(void *ctx), void *ctx)
{
    pid_t kid = fork();
    if (kid == 0) {
        StoreOptions opts = {.sync = true};
        char err[256];
        if (store_open(test_location, &opts, &st, err, sizeof err) != STORE_OK)
            _exit(2);
        int rc = fn(ctx);
        store_close(st);
        _exit(rc == STORE_OK ? 0 : 3);
    }
    int status;
    return waitpid(kid, &status, 0) == kid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int
claim_in_two(void *ctx)
{
    TwoQueues *two = ctx;
    int rc = store_write(st, claims_in_two, two);
    return rc ? rc : two->got == 2 ? STORE_OK : STORE_IO;
}

/* One transaction that counts claims of two queues, the first of a
 * process that just opened the store (nothing of it prepared or cached
 * yet): it commits, and both counters have it. */
static void
test_counts_two_queues(void)
{
    TwoQueues two = {.a = queue_new(st, "two-a", 30000 * MS, 0),
                     .b = queue_new(st, "two-b", 30000 * MS, 0)};
    add(st, &two.a, "a1", "v", NULL, 0);
    add(st, &two.b, "b1", "v", NULL, 0);
    int status = in_another_process(claim_in_two, &two);
    CHECK(status == 0, "both claimed in one commit (the process's status %d)", status);
    CHECK(counts_of(st, &two.a).claims == 1 && counts_of(st, &two.b).claims == 1,
          "each queue counts its claim");
}

static void
test_notification(void)
{
    StoreQueue q = queue_new(st, "notify", 30000 * MS, 0);
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
    int fd;      /* where each claimed key is written, one a line */
    int64_t got; /* what a racer's last claim took (each has a copy) */
} Race;

static int
race_note(void *ctx, const StoreRecord *now, const StoreRecord *before)
{
    (void)before;
    const Race *r = ctx;
    char line[64];
    int n = snprintf(line, sizeof line, "%.*s\n", (int)now->key.len, (const char *)now->key.data);
    return write(r->fd, line, (size_t)n) == n ? 0 : -1;
}

static int
race_claim_fn(StoreTxn *txn, void *ctx)
{
    Race *r = ctx;
    StoreClaim c = {.n = 2, .instance = bytes_of("racer")};
    return store_claim(txn, &r->q, &c, race_note, r, &r->got);
}

/* Claims until the queue is empty, on a copy of the race of its own. */
static void *
race_worker(void *arg)
{
    Race mine = *(const Race *)arg;
    do {
        mine.got = 0;
    } while (store_write(st, race_claim_fn, &mine) == STORE_OK && mine.got > 0);
    return NULL;
}

static void
test_races(void)
{
    Race race = {.q = queue_new(st, "race", 60000 * MS, 0)};
    char keys_path[] = "/tmp/conformance_keys.XXXXXX";
    race.fd = mkstemp(keys_path);
    CHECK(race.fd >= 0, "keys file");
    for (int i = 0; i < RACE_RECORDS; i++) {
        char k[16];
        snprintf(k, sizeof k, "r%04d", i);
        add(st, &race.q, k, "v", NULL, 0);
    }
    pid_t kids[RACE_PROCS];
    for (int p = 0; p < RACE_PROCS; p++) {
        if ((kids[p] = fork()) == 0) {
            /* A process opens its own store: an environment does not cross fork(). */
            StoreOptions opts = {.sync = false};
            char err[256];
            if (store_open(test_location, &opts, &st, err, sizeof err) != STORE_OK)
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
    CHECK(system(cmd) == 0,
          "each of %d records claimed exactly once by %d threads and %d "
          "processes",
          RACE_RECORDS, RACE_THREADS, RACE_PROCS);
    unlink(keys_path);
    StoreQueueCounts n = counts_of(st, &race.q);
    CHECK(n.claims == RACE_RECORDS && n.held == RACE_RECORDS && n.ready == 0, "all held");
}

/* A record's errors as a test sees them, copied out of the store: how
 * many, the newest's instant, "attempt:text" joined by commas, and the
 * record's since and attempts. */
typedef struct ErrorsSeen {
    int rc;
    size_t n, len;
    int64_t last_at, since, attempts;
    char text[16384];
} ErrorsSeen;

static void
errors_note(const StoreRecord *r, ErrorsSeen *e)
{
    StoreBytes rest = r->errors;
    QueueError one;
    size_t off = 0;
    e->n = 0;
    e->len = r->errors.len;
    e->text[0] = '\0';
    while (queue_errors_next(&rest, &one)) {
        e->n++;
        e->last_at = one.at;
        if (off < sizeof e->text)
            off += (size_t)snprintf(e->text + off, sizeof e->text - off, "%s%lld:%.*s",
                                    off ? "," : "", (long long)one.attempt, (int)one.text.len,
                                    (const char *)one.text.data);
    }
    e->since = r->since;
    e->attempts = r->attempts;
}

/* Releases record "key" of "q", held by "hold", with "reason"; what the
 * record's errors are then into "*e" (also returned). */
static ErrorsSeen *
release_because(const StoreQueue *q, const char *key, int64_t hold, const char *reason,
                ErrorsSeen *e)
{
    StoreRecord r;
    StoreTxn *t = begin(st, true);
    if ((e->rc = store_release(t, q, bytes_of(key), hold, 0, bytes_of(reason), &r)) == STORE_OK)
        errors_note(&r, e);
    commit(t);
    return e;
}

/* What the errors of record "key" of "q" are now, into "*e" (returned). */
static ErrorsSeen *
errors_of(const StoreQueue *q, const char *key, ErrorsSeen *e)
{
    StoreRecord r;
    StoreTxn *t = begin(st, false);
    if ((e->rc = store_record_get(t, q->table, bytes_of(key), &r)) == STORE_OK)
        errors_note(&r, e);
    store_txn_abort(t);
    return e;
}

/* A record's errors: a release's reason (none for a release without
 * one), a lapse recorded at its deadline by the claim or retry that finds
 * it, the last STORE_ERRORS_KEPT kept, a reason longer than
 * STORE_MAX_REASON refused, and a give-back restoring them. */
static void
test_errors(void)
{
    static ErrorsSeen e;
    StoreQueue q = queue_new(st, "errors", 30000 * MS, 0);
    add(st, &q, "x", "v", NULL, 0);
    Claimed c;
    StoreRecord r;
    claim(st, &q, 1, NULL, NULL, &c);
    static char big[STORE_MAX_REASON + 2];
    memset(big, 'r', STORE_MAX_REASON + 1);
    StoreTxn *t = begin(st, true);
    CHECK(store_release(t, &q, bytes_of("x"), c.hold, 0, bytes_of(big), &r) == STORE_TOOBIG,
          "a reason over STORE_MAX_REASON: TOOBIG");
    store_txn_abort(t);
    big[STORE_MAX_REASON] = '\0';
    release_because(&q, "x", c.hold, big, &e);
    CHECK(e.rc == STORE_OK && e.n == 1 && e.len == QUEUE_ERROR_HEAD + STORE_MAX_REASON &&
              e.attempts == 1,
          "a reason of STORE_MAX_REASON bytes is kept whole");
    claim(st, &q, 1, NULL, NULL, &c);
    release_because(&q, "x", c.hold, "HTTP 503", &e);
    CHECK(e.rc == STORE_OK && strstr(e.text, ",2:HTTP 503") && e.last_at == e.since,
          "a release's reason is the failure of its attempt, at the release: %.40s…", e.text);
    claim(st, &q, 1, NULL, NULL, &c);
    CHECK(release_because(&q, "x", c.hold, "", &e)->rc == STORE_OK && e.n == 2,
          "a release without a reason adds none");
    for (int i = 4; i <= 25; i++) {
        char why[16];
        snprintf(why, sizeof why, "fail %d", i);
        claim(st, &q, 1, NULL, NULL, &c);
        release_because(&q, "x", c.hold, why, &e);
    }
    CHECK(e.n == STORE_ERRORS_KEPT && strncmp(e.text, "6:fail 6,", 9) == 0 &&
              strstr(e.text, ",25:fail 25") && !strstr(e.text, "HTTP"),
          "the last %d kept, oldest first: %s", STORE_ERRORS_KEPT, e.text);

    /* Lapses, found by a claim and by a retry, each at its deadline. */
    StoreQueue fast = queue_new(st, "errors-lapse", 50 * MS, 0);
    add(st, &fast, "y", "v", NULL, 0);
    claim(st, &fast, 1, NULL, NULL, &c);
    int64_t first_deadline = c.claimed_until;
    sleep_ms(80);
    CHECK(claim(st, &fast, 1, NULL, NULL, &c) == STORE_OK && c.hold > 0, "claimed after its lapse");
    errors_of(&fast, "y", &e);
    CHECK(e.rc == STORE_OK && strcmp(e.text, "1:lapsed") == 0 && e.last_at == first_deadline,
          "a claim records the lapse it finds, at its deadline: %s", e.text);
    int64_t second_deadline = c.claimed_until;
    sleep_ms(80);
    t = begin(st, true);
    CHECK(store_retry(t, &fast, bytes_of("y"), 0, &r) == STORE_OK, "retry");
    errors_note(&r, &e);
    commit(t);
    CHECK(strcmp(e.text, "1:lapsed,2:lapsed") == 0 && e.last_at == second_deadline &&
              e.attempts == 0,
          "a retry records the lapse it finds and keeps the errors: %s", e.text);

    /* A give-back restores the errors as they were before its claim. */
    claim(st, &fast, 1, NULL, NULL, &c);
    sleep_ms(80);
    static unsigned char kept[1024];
    StoreRecord before;
    t = begin(st, false);
    CHECK(store_record_get(t, fast.table, bytes_of("y"), &before) == STORE_OK &&
              before.errors.len <= sizeof kept,
          "read y");
    memcpy(kept, before.errors.data, before.errors.len);
    store_txn_abort(t);
    before.errors.data = kept;
    before.key = bytes_of("y");
    before.consumer = before.instance = bytes_of("");
    CHECK(claim(st, &fast, 1, NULL, NULL, &c) == STORE_OK && c.hold > 0 &&
              errors_of(&fast, "y", &e)->n == 3,
          "the claim records the third lapse");
    bool back = false;
    t = begin(st, true);
    CHECK(store_unclaim(t, &fast, &before, c.hold, &back) == STORE_OK && back, "given back");
    commit(t);
    CHECK(strcmp(errors_of(&fast, "y", &e)->text, "1:lapsed,2:lapsed") == 0,
          "the errors as before the claim: %s", e.text);
}

/* Finishes record "key" of "q" (store_record_delete, hold "hold") in a
 * transaction of its own; its status. */
static int
finish(const StoreQueue *q, const char *key, int64_t hold)
{
    StoreTxn *t = begin(st, true);
    int rc = store_record_delete(t, q->table, q, bytes_of(key), hold);
    if (rc == STORE_OK)
        commit(t);
    else
        store_txn_abort(t);
    return rc;
}

/* KEEP: a finish marks the record done (completed_at, its hold ended, out
 * of the claims, counted as done), a delete of a done record removes it,
 * a create of a done identity is new work, the queue's writes reap the
 * expired ones (no more than STORE_REAP_MAX a write), a retry leaves a
 * done one alone, and a refile without KEEP removes them. */
static void
test_keep(void)
{
    StoreQueue q = queue_new(st, "keep", 30000 * MS, 0);
    q.keep_ns = 3600000 * MS;
    add(st, &q, "a", "one", NULL, 0);
    add(st, &q, "b", "two", NULL, 0);
    Claimed c = claim_expect(st, &q, 1, NULL, "a", "claim a");
    CHECK(finish(&q, "a", c.hold + 1) == STORE_CONFLICT, "a finish with a stale hold: CONFLICT");
    CHECK(finish(&q, "a", c.hold) == STORE_OK, "finish a");
    StoreRecord r;
    StoreTxn *t = begin(st, false);
    int64_t seen = store_txn_now(t);
    CHECK(store_record_get(t, q.table, bytes_of("a"), &r) == STORE_OK && bytes_eq(r.value, "one"),
          "a done record is still read, with its value");
    CHECK(r.completed_at > 0 && r.completed_at <= seen && r.changed == r.completed_at &&
              r.claimed_until == 0 && r.hold == 0 && r.consumer.len == 0 && r.attempts == 1,
          "done: completed_at the finish, its hold ended, attempts kept");
    CHECK(queue_place(&q, &r, seen).state == QUEUE_DONE && !queue_done_expired(&q, &r, seen),
          "placed done, not expired within its KEEP");
    store_txn_abort(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.records == 2 && n.done == 1 && n.ready == 1 && n.held == 0 && n.deletes == 1 &&
              bytes_eq(n.head_key, "b"),
          "counted done (%" PRIu64 "), in records, out of ready and held; a finish counts a delete",
          n.done);
    claim_expect(st, &q, 5, NULL, "b", "a done record is never claimed");
    CHECK(claim(st, &q, 1, "a", NULL, &c) == STORE_OK && c.keys[0] == '\0', "nor claimed by name");
    t = begin(st, true);
    CHECK(store_retry(t, &q, bytes_of("a"), 0, &r) == STORE_NOTFOUND,
          "a retry of a done record: NOTFOUND");
    store_txn_abort(t);

    /* CREATE of a done identity: new work. */
    t = begin(st, true);
    StoreRecord again = {.key = bytes_of("a"), .value = bytes_of("again")};
    CHECK(store_record_create(t, q.table, &q, &again) == STORE_OK, "create over a done record");
    CHECK(store_record_get(t, q.table, bytes_of("a"), &r) == STORE_OK &&
              bytes_eq(r.value, "again") && r.completed_at == 0 && r.attempts == 0 &&
              r.errors.len == 0,
          "created anew: new work, its columns at 0");
    commit(t);
    n = counts_of(st, &q);
    CHECK(n.records == 2 && n.done == 0 && n.ready == 1, "no longer done: ready again");
    c = claim_expect(st, &q, 1, NULL, "a", "the re-created record is claimed");
    CHECK(c.attempts == 1, "its first attempt");
    CHECK(finish(&q, "a", c.hold) == STORE_OK, "finish a again");
    CHECK(finish(&q, "a", 0) == STORE_OK && get(st, q.table, "a", &r) == STORE_NOTFOUND,
          "a delete of a done record removes it");
    n = counts_of(st, &q);
    CHECK(n.records == 1 && n.done == 0, "removed: no longer counted");

    /* Reaping: a short KEEP, then writes of the queue. */
    StoreQueue k = queue_new(st, "keep-reap", 30000 * MS, 0);
    k.keep_ns = 100 * MS;
    char key[32];
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "r%03d", i);
        add(st, &k, key, "v", NULL, 0);
    }
    t = begin(st, true);
    for (int i = 0; i < 300; i++) {
        snprintf(key, sizeof key, "r%03d", i);
        CHECK(store_record_delete(t, k.table, &k, bytes_of(key), 0) == STORE_OK, "finish %s", key);
    }
    commit(t);
    n = counts_of(st, &k);
    CHECK(n.records == 300 && n.done == 300, "300 done within their KEEP (%" PRIu64 ")", n.done);
    sleep_ms(150);
    CHECK(get(st, k.table, "r000", &r) == STORE_OK && queue_done_expired(&k, &r, store_now(st)),
          "expired once KEEP has passed (still stored until a write reaps it)");
    add(st, &k, "new1", "v", NULL, 0);
    n = counts_of(st, &k);
    CHECK(n.done == 300 - STORE_REAP_MAX && n.records == 301 - STORE_REAP_MAX,
          "one write reaps %d, oldest first: %" PRIu64 " left", STORE_REAP_MAX, n.done);
    CHECK(get(st, k.table, "r000", &r) == STORE_NOTFOUND &&
              get(st, k.table, "r299", &r) == STORE_OK,
          "the oldest finishes went first");
    claim_expect(st, &k, 1, NULL, "new1", "a claim reaps too");
    n = counts_of(st, &k);
    CHECK(n.done == 0 && n.records == 1, "none left after the claim: %" PRIu64, n.done);

    /* A KEEP made shorter (ALTER QUEUE): the writes after it reap by the
     * shorter one — a claim, and a finish. */
    StoreQueue s = queue_new(st, "keep-shorter", 30000 * MS, 0);
    s.keep_ns = 3600000 * MS;
    add(st, &s, "a", "v", NULL, 0);
    add(st, &s, "b", "v", NULL, 0);
    add(st, &s, "c", "v", NULL, 0);
    c = claim_expect(st, &s, 1, NULL, "a", "claim a, KEEP 1h");
    CHECK(finish(&s, "a", c.hold) == STORE_OK, "finish a: done for an hour");
    c = claim_expect(st, &s, 1, NULL, "b", "claim b, KEEP 1h");
    s.keep_ns = 100 * MS;
    sleep_ms(150);
    CHECK(finish(&s, "b", c.hold) == STORE_OK && get(st, s.table, "a", &r) == STORE_NOTFOUND &&
              get(st, s.table, "b", &r) == STORE_OK && r.completed_at != 0,
          "KEEP 100ms: a finish reaps what the hour kept, and keeps its own");
    sleep_ms(150);
    claim_expect(st, &s, 1, NULL, "c", "claim c once b's KEEP is over");
    n = counts_of(st, &s);
    CHECK(get(st, s.table, "b", &r) == STORE_NOTFOUND && n.done == 0 && n.records == 1,
          "the claim reaped b: %" PRIu64 " done left", n.done);

    /* A refile without KEEP removes the done records. */
    StoreQueue d = queue_new(st, "keep-drop", 30000 * MS, 0);
    d.keep_ns = 3600000 * MS;
    add(st, &d, "x", "v", NULL, 0);
    add(st, &d, "y", "v", NULL, 0);
    CHECK(finish(&d, "x", 0) == STORE_OK, "finish x");
    d.keep_ns = 0;
    refile(st, &d, NULL, NULL, "refile without KEEP");
    n = counts_of(st, &d);
    CHECK(get(st, d.table, "x", &r) == STORE_NOTFOUND && n.records == 1 && n.done == 0 &&
              n.ready == 1,
          "KEEP dropped: the done record is gone, the rest as it was");
    CHECK(finish(&d, "y", 0) == STORE_OK && get(st, d.table, "y", &r) == STORE_NOTFOUND,
          "without KEEP a finish removes");
}

/* COALESCE's mark: only while held; a release keeps it; the finish hands
 * the record out again as new work (attempts 0, errors emptied, behind
 * what came before it), and the finish after that is a plain one. */
static void
test_rerun(void)
{
    StoreQueue q = queue_new(st, "rerun", 30000 * MS, 0);
    /* one order key: arrival decides between them */
    add(st, &q, "a", "v", "same", 0);
    add(st, &q, "b", "v", "same", 0);
    StoreTxn *t = begin(st, true);
    CHECK(store_record_rerun(t, &q, bytes_of("a")) == STORE_CONFLICT,
          "marking a record no hold runs on: CONFLICT");
    CHECK(store_record_rerun(t, &q, bytes_of("zz")) == STORE_NOTFOUND, "an absent one: NOTFOUND");
    store_txn_abort(t);
    Claimed c = claim_expect(st, &q, 1, NULL, "a", "claim a");
    t = begin(st, true);
    CHECK(store_record_rerun(t, &q, bytes_of("a")) == STORE_OK, "mark a while held");
    commit(t);
    StoreRecord r;
    CHECK(get(st, q.table, "a", &r) == STORE_OK && r.rerun && r.hold == c.hold,
          "marked, its hold untouched");
    t = begin(st, true);
    CHECK(store_release(t, &q, bytes_of("a"), c.hold, 0, bytes_of("boom"), &r) == STORE_OK &&
              r.rerun,
          "a release keeps the mark");
    commit(t);
    c = claim_expect(st, &q, 1, NULL, "a", "a, released, keeps its place before b");
    CHECK(finish(&q, "a", c.hold) == STORE_OK, "finish the marked a");
    CHECK(get(st, q.table, "a", &r) == STORE_OK && !r.rerun && r.attempts == 0 &&
              r.errors.len == 0 && r.claimed_until == 0 && r.hold == 0 && r.completed_at == 0,
          "its finish handed it out again as new work, the mark spent");
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.records == 2 && n.ready == 2 && n.held == 0 && n.deletes == 1,
          "ready again, the finish counted");
    c = claim_expect(st, &q, 2, NULL, "b,a", "new work goes behind what came before it");
    CHECK(finish(&q, "a", c.hold) == STORE_OK && get(st, q.table, "a", &r) == STORE_NOTFOUND,
          "the finish after that removes it");

    /* On a queue that keeps, the mark wins over done. */
    StoreQueue k = queue_new(st, "rerun-keep", 30000 * MS, 0);
    k.keep_ns = 3600000 * MS;
    add(st, &k, "x", "v", NULL, 0);
    c = claim_expect(st, &k, 1, NULL, "x", "claim x");
    t = begin(st, true);
    CHECK(store_record_rerun(t, &k, bytes_of("x")) == STORE_OK, "mark x");
    commit(t);
    CHECK(finish(&k, "x", c.hold) == STORE_OK && get(st, k.table, "x", &r) == STORE_OK &&
              r.completed_at == 0 && !r.rerun,
          "a marked record runs again rather than being done");
    c = claim_expect(st, &k, 1, NULL, "x", "claim x again");
    CHECK(finish(&k, "x", c.hold) == STORE_OK && get(st, k.table, "x", &r) == STORE_OK &&
              r.completed_at != 0,
          "then it is done");
}

/* A claim as the whole of its transaction (store_txn_last), as a
 * worker's read of claim makes it: claims up to "n" and checks it took
 * "want" ("what" names the step); answers what it took. */
static Claimed
claim_alone(const StoreQueue *q, int64_t n, const char *want, const char *what)
{
    StoreTxn *t = begin(st, true);
    store_txn_last(t);
    Claimed c;
    int rc = claim_in(t, q, n, NULL, NULL, &c);
    CHECK(rc == STORE_OK, "%s: %s", what, store_strerror(rc));
    if (rc == STORE_OK)
        commit(t);
    else
        store_txn_abort(t);
    CHECK(strcmp(c.keys, want) == 0, "%s: took \"%s\", want \"%s\"", what, c.keys, want);
    return c;
}

/* Gives hold "hold" of "key" back, delayed until "not_before" (0: not). */
static void
give_back(const StoreQueue *q, const char *key, int64_t hold, int64_t not_before)
{
    StoreTxn *t = begin(st, true);
    StoreRecord r;
    int rc = store_release(t, q, bytes_of(key), hold, not_before, bytes_of(""), &r);
    CHECK(rc == STORE_OK, "release %s: %s", key, store_strerror(rc));
    commit(t);
}

/* Claims of the head that each are their whole transaction — which a
 * backend may start where the one before found the head, past what was
 * claimed and finished (PostgreSQL's do while a long transaction holds
 * back the xmin: pg_hint.c; so, on a backend that runs write transactions
 * side by side, one is held open here, and a thousand and more begun and
 * ended after it) — still take the head in claim order, whatever became
 * claimable before that place since: a record given back, a create
 * earlier in claim order, a delay come to its end, many created at once, a
 * lapse, and a create whose transaction began before such a claim and
 * ended after it. */
static void
test_claim_position(void)
{
    StoreTxn *pin = NULL;
    if (!test_store_is_lmdb()) {
        StoreQueue p = queue_new(st, "position-pin", 30000 * MS, 0);
        pin = begin(st, true);
        CHECK(add_in(pin, &p, "pin", "v", NULL, 0) == STORE_OK, "the long transaction writes");
        int made = 0;
        char key[16];
        for (int i = 0; i < 1100; i++) {
            StoreTxn *t = begin(st, true);
            snprintf(key, sizeof key, "t%04d", i);
            made += add_in(t, &p, key, "v", NULL, 0) == STORE_OK;
            commit(t);
        }
        CHECK(made == 1100, "1,100 transactions after it");
    }
    StoreQueue q = queue_new(st, "position", 30000 * MS, 0);
    for (const char *k = "bcdefg"; *k; k++)
        add(st, &q, (char[]){*k, 0}, "v", NULL, 0);
    Claimed b = claim_alone(&q, 1, "b", "the head");
    claim_alone(&q, 1, "c", "the next");
    give_back(&q, "b", b.hold, 0);
    b = claim_alone(&q, 1, "b", "a record given back, before where the claims got to");
    add(st, &q, "a", "v", NULL, 0);
    claim_alone(&q, 1, "a", "a create earlier in claim order");
    give_back(&q, "b", b.hold, store_now(st) + 300 * MS);
    claim_alone(&q, 1, "d", "the head while b waits");
    sleep_ms(350);
    claim_alone(&q, 2, "b,e", "b, its delay over, before the head");
    /* Many filed since: the claim reads them, and finds what is before
     * where the last one got to. */
    StoreTxn *many = begin(st, true);
    char key[16];
    int made = 0;
    for (int i = 0; i < 2100; i++) {
        snprintf(key, sizeof key, "z%04d", i);
        made += add_in(many, &q, key, "v", NULL, 0) == STORE_OK;
    }
    CHECK(made == 2100 && add_in(many, &q, "a1", "v", NULL, 0) == STORE_OK, "2,101 created");
    commit(many);
    claim_alone(&q, 2, "a1,f", "a1, among 2,101 filed since, before the head");
    claim_alone(&q, 1, "g", "the head after it");

    StoreQueue l = queue_new(st, "position-lapse", 200 * MS, 0);
    for (const char *k = "xyz"; *k; k++)
        add(st, &l, (char[]){*k, 0}, "v", NULL, 0);
    claim_alone(&l, 1, "x", "the head");
    sleep_ms(120);
    claim_alone(&l, 1, "y", "the next");
    sleep_ms(150);
    claim_alone(&l, 1, "x", "x, its hold lapsed");
    claim_alone(&l, 1, "z", "z");
    sleep_ms(250);
    claim_alone(&l, 3, "x,y,z", "the three, their holds lapsed");

    if (!pin)
        return; /* one write transaction at a time */
    StoreQueue o = queue_new(st, "position-overlap", 30000 * MS, 0);
    StoreTxn *slow = begin(st, true);
    CHECK(add_in(slow, &o, "m", "v", NULL, 0) == STORE_OK, "create m, not yet committed");
    add(st, &o, "n", "v", NULL, 0);
    add(st, &o, "p", "v", NULL, 0);
    claim_alone(&o, 1, "n", "n: m is not yet committed");
    claim_alone(&o, 1, "p", "p");
    commit(slow);
    claim_alone(&o, 1, "m", "m, committed after the claims before it began");
    StoreTxn *later = begin(st, true);
    CHECK(add_in(later, &o, "k", "v", NULL, 0) == STORE_OK, "create k, not yet committed");
    add(st, &o, "q", "v", NULL, 0);
    claim_alone(&o, 1, "q", "q: k is not yet committed");
    commit(later);
    claim_alone(&o, 1, "k", "k, committed after a claim saw it in progress");
    store_txn_abort(pin);
}

/* Hold "hold" of record "key" of "q", to be given back for "ms". */
typedef struct Delay {
    const StoreQueue *q;
    const char *key;
    int64_t hold, ms;
} Delay;

static int
delay_elsewhere(void *ctx)
{
    const Delay *d = ctx;
    StoreTxn *t = NULL;
    StoreRecord r;
    int rc = store_txn_begin(st, true, &t);
    if (rc == STORE_OK)
        rc = store_release(t, d->q, bytes_of(d->key), d->hold, store_now(st) + d->ms * MS,
                           bytes_of(""), &r);
    if (rc && t)
        store_txn_abort(t);
    return rc ? rc : store_txn_commit(t);
}

/* A claim of the head finds a record whose delay is over, whoever
 * delayed it, though the claims before it found nothing waiting that was
 * due (a backend may leave the look for due records out of a claim while
 * it knows none can be: PostgreSQL's pg_reap.c) — a release with a delay
 * in this process, and one in another process with a store of its own,
 * both well within a second of the claim that last looked. */
static void
test_claim_due(void)
{
    StoreQueue q = queue_new(st, "due", 3600000 * MS, 0);
    for (const char *k = "abcdef"; *k; k++)
        add(st, &q, (char[]){*k, 0}, "v", NULL, 0);
    Claimed a = claim_alone(&q, 1, "a", "the head: nothing waits but for an hour");
    give_back(&q, "a", a.hold, store_now(st) + 200 * MS);
    claim_alone(&q, 1, "b", "b while a waits");
    sleep_ms(250);
    a = claim_alone(&q, 1, "a", "a, given back here, its delay over");

    Delay delay = {.q = &q, .key = "a", .hold = a.hold, .ms = 200};
    int status = in_another_process(delay_elsewhere, &delay);
    CHECK(status == 0, "another process gives a back for 200ms (its status %d)", status);
    claim_alone(&q, 1, "c", "c while a waits");
    sleep_ms(250);
    claim_alone(&q, 2, "a,d", "a, given back elsewhere, its delay over");
}

/* What a test of store_records_retry sees of the records it retried. */
typedef struct Retried {
    char keys[16];
    size_t n, stop_after;
    int64_t attempts, not_before[8];
} Retried;

static int
note_retried(void *ctx, const StoreRecord *r)
{
    Retried *seen = ctx;
    if (seen->n < 8 && r->key.len == 1) {
        seen->keys[seen->n] = *(const char *)r->key.data;
        seen->not_before[seen->n] = r->not_before;
    }
    seen->attempts += r->attempts + (r->hold != 0);
    return ++seen->n == seen->stop_after ? 7 : 0;
}

/* Records retried many at once: as one at a time would, in their order —
 * a live hold ended and counted as a release, a dead record claimable
 * again, each with its own delay, a key given twice retried twice, the
 * first that fails named, and the caller's non-zero answer returned. */
static void
test_retry_many(void)
{
    StoreQueue q = queue_new(st, "rmany", 30000 * MS, 1);
    for (const char *k = "abcde"; *k; k++)
        add(st, &q, (char[]){*k, 0}, "v", NULL, 0);
    claim_expect(st, &q, 2, NULL, "a,b", "claim a and b");
    StoreTxn *t = begin(st, true);
    StoreRecord r;
    CHECK(store_record_get(t, q.table, bytes_of("b"), &r) == STORE_OK, "read b");
    CHECK(store_release(t, &q, bytes_of("b"), r.hold, 0, bytes_of("no"), NULL) == STORE_OK,
          "b released: dead at ATTEMPTS 1");
    commit(t);
    StoreQueueCounts before = counts_of(st, &q);
    CHECK(before.held == 1 && before.idle == 1 && before.ready == 3, "a held, b dead, 3 ready");

    int64_t later = store_now(st) + 3600000 * MS;
    StoreBytes keys[4] = {bytes_of("a"), bytes_of("b"), bytes_of("c"), bytes_of("c")};
    int64_t nbs[4] = {0, later, 0, 0};
    Retried seen = {0};
    size_t failed = 99;
    t = begin(st, true);
    CHECK(store_records_retry(t, &q, keys, nbs, 4, note_retried, &seen, &failed) == STORE_OK &&
              failed == 99,
          "a, b, c and c at once");
    CHECK(seen.n == 4 && memcmp(seen.keys, "abcc", 4) == 0 && seen.attempts == 0,
          "each answered in order, back to attempt 0 with no hold (%.4s)", seen.keys);
    CHECK(seen.not_before[0] == 0 && seen.not_before[1] == later && seen.not_before[2] == 0,
          "b alone delayed");
    commit(t);
    StoreQueueCounts n = counts_of(st, &q);
    CHECK(n.ready == 4 && n.delayed == 1 && n.held == 0 && n.idle == 0,
          "4 ready, b delayed (%llu ready)", (unsigned long long)n.ready);
    CHECK(n.releases == before.releases + 1, "a's live hold counted as a release (%llu)",
          (unsigned long long)(n.releases - before.releases));
    claim_expect(st, &q, 5, NULL, "a,c,d,e", "a claimable again, b waits");

    StoreBytes bad[3] = {bytes_of("c"), bytes_of("x"), bytes_of("a")};
    t = begin(st, true);
    seen = (Retried){0};
    CHECK(store_records_retry(t, &q, bad, nbs, 3, note_retried, &seen, &failed) == STORE_NOTFOUND &&
              failed == 1,
          "x missing: NOTFOUND at index 1 (%zu)", failed);
    store_txn_abort(t);
    t = begin(st, true);
    seen = (Retried){.stop_after = 2};
    CHECK(store_records_retry(t, &q, keys, nbs, 4, note_retried, &seen, NULL) == 7 && seen.n == 2,
          "the caller's answer stops it and is returned");
    store_txn_abort(t);
}

int
main(void)
{
    static const TestCase cases[] = {test_records,        test_claim_order,
                                     test_claim_named,    test_paused,
                                     test_refile,         test_lapse_and_ceiling,
                                     test_queue_rules,    test_release_touch_fence,
                                     test_release_all,    test_unclaim,
                                     test_identity,       test_many,
                                     test_many_whole,     test_delete_many,
                                     test_dedup,          test_waiting_walk,
                                     test_queue_filing,   test_queue_scale,
                                     test_counts,         test_counts_two_queues,
                                     test_last,           test_notification,
                                     test_races,          test_errors,
                                     test_keep,           test_rerun,
                                     test_claim_position, test_claim_due,
                                     test_retry_many,     NULL};
    return test_store_main("conformance_test", &st, cases);
}
