/* pg_reap.c — whether a write of a queue that keeps need reap.
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
 * forgotten when a connection is made anew. */
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
