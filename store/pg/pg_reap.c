/* pg_reap.c — what a claim or finish of a queue may leave out: the
 * reaping of done records that cannot have expired, and the look for
 * waiting records that cannot be due.
 *
 * A queue with KEEP marks finished records done (state 4), and its writes
 * remove those whose KEEP is over (pg_stmts.def's REAPED).  Carrying that
 * removal costs every claim and finish of such a queue a larger statement
 * (the claim's plan grows by the reap's nodes; the finish is RECORD_FINISH
 * instead of the plain RECORD_DONE), even while no done record can have
 * expired — the whole of a KEEP 1h queue's first hour.  So the store
 * keeps, a table each, an instant before which no done record of the
 * table expires: the oldest done record's completed_at + KEEP, as a probe
 * of records_done found it (REAP_NEXT), or the probe's instant + KEEP when
 * it found none.  Before that instant a write leaves reaping out; from it
 * on, writes reap for PG_REAP_SPELL and probe again.
 *
 * Instants are the server's (pg_now), as completed_at is, so every
 * process and host agrees on them.  A record done by a transaction that
 * the probe's snapshot did not see was done at an instant no earlier than
 * that transaction's start, so it may be reaped that much late — a
 * moment, and nothing reads it meanwhile: an expired done record is gone
 * to every reader (queue.h's queue_done_expired).  An entry is of the
 * KEEP it was found under (ALTER QUEUE may change it), and every entry is
 * forgotten when a connection is made anew.
 *
 * Likewise a claim of the head looks for the waiting records whose
 * instant has come (lapsed holds, NOT BEFORE passed) and refiles them;
 * setting that up is a third of the server's work a claim, though a
 * waiting record is due seldom.  So each claim from the start of the
 * indexes (CLAIM_HEAD, CLAIM_HEAD_REAP) answers the first instant a
 * record its snapshot showed waiting becomes due (h_quiet), and until
 * then the claims of the table are CLAIM_READY, which takes ready
 * records alone — unless something may have filed a record to wait for
 * less: a commit that tells waiters, this process's or any host's (a
 * release, a create, a retry, ALTER QUEUE: store_changes() moves on).
 * A claim or a touch files its record to wait the queue's TIMEOUT from
 * its instant, so the instant is taken no further than the claim's own
 * instant + TIMEOUT; and no further than PG_DUE_SPELL_NS, which bounds how
 * late a due record is found here when a notification was lost, or a
 * claim committed long after its instant.  A look at the queue's counts
 * (a waiter's, a stats read) lowers the instant to the first wake it
 * found, and forgets it when it found a record to claim — so that a
 * waiter woken for a due record claims it. */
#include "pg_internal.h"

#include <stdint.h>
#include <stdlib.h>

/* How long writes reap, once some done record has expired, before a
 * probe looks again whether any still has. */
#define PG_REAP_SPELL (1000 * 1000000LL)

/* A table's instants (Store.reaps). */
typedef struct PgReapEntry {
    struct PgReapEntry *next;
    uint32_t table;
    int64_t keep;  /* the KEEP they were found under */
    int64_t quiet; /* no done record expires before it */
    int64_t until; /* writes reap, without a probe, before it */
    /* No waiting record is due before "due_quiet", as a claim under
     * TIMEOUT "due_timeout" found while store_changes() was "due_changes";
     * 0: not known. */
    int64_t due_quiet, due_timeout;
    uint64_t due_changes;
} PgReapEntry;

/* The entry of "table" in "st", made when there is none; under reap_mu. */
static PgReapEntry *
entry_of(Store *st, uint32_t table)
{
    PgReapEntry *e = st->reaps;
    while (e && e->table != table)
        e = e->next;
    if (!e) {
        if (!(e = calloc(1, sizeof *e)))
            abort();
        e->table = table;
        e->next = st->reaps;
        st->reaps = e;
    }
    return e;
}

bool
pg_reap_wanted(StoreTxn *txn, const StoreQueue *q)
{
    if (q->keep_ns <= 0)
        return false;
    Store *st = txn->st;
    int64_t now = pg_now(st);
    pthread_mutex_lock(&st->reap_mu);
    PgReapEntry *e = entry_of(st, q->table);
    bool known = e->keep == q->keep_ns;
    bool quiet = known && now < e->quiet, reaping = known && now < e->until;
    pthread_mutex_unlock(&st->reap_mu);
    if (quiet || reaping)
        return reaping;

    int rc;
    PGresult *res = PG_RUN(txn, REAP_NEXT, &rc, .table = q->table);
    if (!res)
        return true; /* the transaction failed: what it runs next fails too */
    int64_t at = pg_i64(res, 0, 0);
    int64_t oldest = PQgetisnull(res, 0, 1) ? at : pg_i64(res, 0, 1);
    int64_t expires = oldest > INT64_MAX - q->keep_ns ? INT64_MAX : oldest + q->keep_ns;
    pthread_mutex_lock(&st->reap_mu);
    e = entry_of(st, q->table);
    e->keep = q->keep_ns;
    e->quiet = expires > at ? expires : 0;
    e->until = expires > at ? 0 : at + PG_REAP_SPELL;
    pthread_mutex_unlock(&st->reap_mu);
    return expires <= at;
}

bool
pg_due_quiet(Store *st, const StoreQueue *q, uint64_t changes)
{
    int64_t now = pg_now(st);
    pthread_mutex_lock(&st->reap_mu);
    PgReapEntry *e = entry_of(st, q->table);
    bool quiet = now < e->due_quiet && e->due_timeout == q->timeout_ns && e->due_changes == changes;
    pthread_mutex_unlock(&st->reap_mu);
    return quiet;
}

void
pg_due_learn(Store *st, const StoreQueue *q, uint64_t changes, int64_t now, int64_t quiet)
{
    int64_t cap = q->timeout_ns < PG_DUE_SPELL_NS ? q->timeout_ns : PG_DUE_SPELL_NS;
    cap = now > INT64_MAX - cap ? INT64_MAX : now + cap;
    pthread_mutex_lock(&st->reap_mu);
    PgReapEntry *e = entry_of(st, q->table);
    e->due_quiet = quiet < cap ? quiet : cap;
    e->due_timeout = q->timeout_ns;
    e->due_changes = changes;
    pthread_mutex_unlock(&st->reap_mu);
}

void
pg_due_lower(Store *st, uint32_t table, int64_t at)
{
    pthread_mutex_lock(&st->reap_mu);
    PgReapEntry *e = entry_of(st, table);
    if (at < e->due_quiet)
        e->due_quiet = at;
    pthread_mutex_unlock(&st->reap_mu);
}

void
pg_reap_forget(Store *st)
{
    pthread_mutex_lock(&st->reap_mu);
    while (st->reaps) {
        PgReapEntry *e = st->reaps;
        st->reaps = e->next;
        free(e);
    }
    pthread_mutex_unlock(&st->reap_mu);
}
