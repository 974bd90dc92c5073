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
    QUEUE_READY,     /* claimable, in claim order (AT MOST … PER may keep it
                      * waiting behind its group: a backend's filing) */
    QUEUE_HELD,      /* a hold runs until its claimed_until */
    QUEUE_DELAYED,   /* not handed out before its not_before */
    QUEUE_RETIRED,   /* at the ATTEMPTS ceiling and not held: handed out no
                      * more until RETRY */
} QueueState;

/* Where a record stands at an instant, and where it goes when its wait
 * ends. */
typedef struct QueuePlace {
    QueueState state;
    int64_t    wake;        /* HELD, DELAYED: the instant the wait ends; else 0 */
    QueueState next;        /* what it is at "wake": for HELD, READY, DELAYED or
                             * RETIRED; for DELAYED, READY; else "state" */
    int64_t    next_wake;   /* next DELAYED: until when; else 0 */
} QueuePlace;

/* True while a hold whose deadline is "claimed_until" runs at "now": the
 * deadline is later (0, no hold since the last release, never runs). */
bool queue_hold_runs(int64_t claimed_until, int64_t now);

/* True when "attempts" holds have reached the ATTEMPTS ceiling
 * "max_attempts" (0: no ceiling). */
bool queue_ceiling_reached(int64_t max_attempts, int64_t attempts);

/* Where record "r" of queue "q" stands at "now": held while its hold runs,
 * else retired at the ceiling, else delayed while its not_before is
 * later, else ready. */
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

#endif
