/* queue.h — the queue's rules, written once: what a queue record is at an
 * instant, where it goes and when it wakes, whether a claim may take it,
 * the ATTEMPTS ceiling, what a claim counts as a lapse, and when a hold
 * ends.  Pure functions over StoreQueue and StoreRecord (store.h): no I/O,
 * no backend, no language.
 *
 * The LMDB backend files records by them (store/lmdb/) and the language
 * shows records by them (lang/).  The PostgreSQL backend states the same
 * rules in SQL (store/pg/pg_schema.c, pg_stmts.def), where a C function cannot
 * run; the conformance suite (store/conformance_test.c, "the queue's
 * rules") checks both backends against these, case by case.
 *
 *     QueuePlace p = queue_place(&q, &r, now);
 *     if (p.state == QUEUE_HELD && p.next == QUEUE_RETIRED)
 *         ...   // its hold runs until p.wake; then it is handed out no more
 */
#ifndef QUEUEFS_STORE_QUEUE_H
#define QUEUEFS_STORE_QUEUE_H

#include "store.h"

/* A queue record's state at an instant (store.h: "the queue primitives"). */
typedef enum QueueState {
    QUEUE_READY,   /* claimable, in claim order (AT MOST … PER may keep it
                      * waiting behind its group: a backend's filing) */
    QUEUE_HELD,    /* a hold runs until its claimed_until */
    QUEUE_DELAYED, /* not handed out before its not_before */
    QUEUE_RETIRED, /* at the ATTEMPTS ceiling and not held: handed out no
                      * more until RETRY */
    QUEUE_DONE,    /* finished on a queue that KEEPs (completed_at set):
                      * handed out no more; CREATE queues it again */
} QueueState;

/* Where a record stands at an instant, and where it goes when its wait
 * ends. */
typedef struct QueuePlace {
    QueueState state;
    int64_t wake;      /* HELD, DELAYED: the instant the wait ends; else 0 */
    QueueState next;   /* what it is at "wake": for HELD, READY, DELAYED or
                             * RETIRED; for DELAYED, READY; else "state" */
    int64_t next_wake; /* next DELAYED: until when; else 0 */
} QueuePlace;

/* True while a hold whose deadline is "claimed_until" runs at "now": the
 * deadline is later (0, no hold since the last release, never runs). */
bool queue_hold_runs(int64_t claimed_until, int64_t now);

/* True when "attempts" holds have reached the ATTEMPTS ceiling
 * "max_attempts" (0: no ceiling). */
bool queue_ceiling_reached(int64_t max_attempts, int64_t attempts);

/* Where record "r" of queue "q" stands at "now": done once finished
 * (completed_at set), else held while its hold runs, else retired at the
 * ceiling, else delayed while its not_before is later, else ready. */
QueuePlace queue_place(const StoreQueue *q, const StoreRecord *r, int64_t now);

/* Where a record placed "p" stands at "now", once its wait may be over:
 * "p" itself while now < p->wake; else a held record is what p->next says
 * (delayed only while p->next_wake is later, ready after), and a delayed
 * one is ready.  How a backend that filed "p" moves a record on without
 * reading it again. */
QueuePlace queue_woken(const QueuePlace *p, int64_t now);

/* The deadline of a hold taken or touched at "now": now + the queue's
 * TIMEOUT, saturating at INT64_MAX. */
int64_t queue_hold_deadline(const StoreQueue *q, int64_t now);

/* True when a claim of "r" counts a lapse: its last hold was never
 * released (it ran out, or is being taken over). */
bool queue_claim_lapses(const StoreRecord *r);

/* True when the hold of "r" lapsed at "now": it was never released and
 * its deadline has passed.  Such a record's errors gain "lapsed" when a
 * claim or retry next finds it; until then a reader shows it so too
 * (lang's JSON of the record). */
bool queue_hold_lapsed(const StoreRecord *r, int64_t now);

/* True when "r" is a done record whose KEEP is over at "now": its
 * completed_at + q->keep_ns has passed (with keep_ns 0, at once).  Such a
 * record is gone to readers, and the queue's next writes remove it
 * (StoreQueue.keep_ns). */
bool queue_done_expired(const StoreQueue *q, const StoreRecord *r, int64_t now);

/* ---- a record's errors (StoreRecord.errors) ---- */

/* The text a lapse is recorded with. */
#define QUEUE_LAPSED "lapsed"
/* An entry's length before its text: [i64 attempt][i64 at][u16 len]. */
#define QUEUE_ERROR_HEAD 18

/* One failed attempt: its number, when it failed, and why. */
typedef struct QueueError {
    int64_t attempt;
    int64_t at;
    StoreBytes text;
} QueueError;

/* Reads the first entry of "*rest" into "*e" (its text points into
 * "*rest") and moves "*rest" past it.  False at the end, or when what is
 * left is not a whole entry. */
bool queue_errors_next(StoreBytes *rest, QueueError *e);

/* How many entries "errors" holds. */
size_t queue_errors_count(StoreBytes errors);

/* The bytes "errors" with "e" appended, its text cut to STORE_MAX_REASON
 * and the oldest entries dropped so that STORE_ERRORS_KEPT remain: written
 * to "out", which has room for errors.len + QUEUE_ERROR_HEAD +
 * STORE_MAX_REASON bytes; returns their length. */
size_t queue_errors_add(StoreBytes errors, const QueueError *e, unsigned char *out);

#endif
