/* lmdb_txn.c — transactions (store_txn_*) and group commit
 * (store_write): a commit in the store's durability mode, and the sync
 * that makes it durable.
 *
 * Group commit: lmdb_write() callers queue; the first finds no leader and
 * leads: it takes the whole queue as one group, begins one transaction and
 * runs each caller's function in a nested transaction (so a failing one is
 * rolled back alone), commits, hands the lead on and then syncs.  A
 * function that meets a full map is retried after the map has grown: the
 * callers before it commit first, and it runs first in the next
 * transaction; when it fails alone too, the map is grown (doubled, within
 * the room the disk has) and it runs again.
 */
#include "lmdb_internal.h"

#include <errno.h>
#include <stdio.h>

#define STORE_BEGIN_TRIES 8
#define STORE_GROW_TRIES 32 /* map growths one group may ask for */
#define STORE_UNPIN_TRIES \
    3 /* checkpoints a full write of the reserve's
                                      * may wait for (see lmdb_unpin_freed) */

int
lmdb_commit(Store *st, MDB_txn *txn, uint64_t *id)
{
    bool fast = __atomic_load_n(&st->shared->fast, __ATOMIC_ACQUIRE) != 0;
    if (fast != st->nosync) {
        int rc = mdb_env_set_flags(st->env, MDB_NOSYNC, fast ? 1 : 0);
        if (rc) {
            lmdb_abort(st, txn);
            return rc;
        }
        st->nosync = fast;
    }
    uint64_t mine = mdb_txn_id(txn);
    int rc = mdb_txn_commit(txn);
    if (rc)
        lmdb_failure(st->nosync ? "mdb_txn_commit (pwrite of data.mdb)"
                                : "mdb_txn_commit (pwrite, fdatasync of data.mdb)",
                     rc);
    if (!rc) {
        *id = lmdb_commit_note(st, mine);
        lmdb_log_append(st, *id == mine ? mine : 0); /* 0: it changed nothing */
    }
    lmdb_log_unlock(st);
    return rc;
}

void
lmdb_abort(Store *st, MDB_txn *txn)
{
    mdb_txn_abort(txn);
    lmdb_log_unlock(st);
}

/* ---- transactions ---- */

int
lmdb_env_begin(Store *st, unsigned flags, MDB_txn **out)
{
    int rc = MDB_MAP_RESIZED;
    for (int tries = 0; rc == MDB_MAP_RESIZED && tries < STORE_BEGIN_TRIES; tries++) {
        pthread_rwlock_rdlock(&st->map_lock);
        rc = mdb_txn_begin(st->env, NULL, flags, out);
        if (rc == 0) {
            if (!(flags & MDB_RDONLY))
                lmdb_log_lock(st);
            return 0;
        }
        pthread_rwlock_unlock(&st->map_lock);
        if (rc == MDB_MAP_RESIZED && (rc = lmdb_map_adopt(st)) == 0)
            rc = MDB_MAP_RESIZED; /* adopted: try again */
    }
    return rc;
}

int
lmdb_txn_begin(Store *st, bool write, StoreTxn **out)
{
    MDB_txn *txn = NULL;
    *out = NULL;
    if (write && st->read_only)
        return STORE_READONLY;
    int rc = write ? lmdb_checkpoint_first(st) : 0;
    if (!rc)
        rc = lmdb_env_begin(st, write ? 0 : MDB_RDONLY, &txn);
    if (rc)
        return lmdb_status_of(rc);
    if (write)
        lmdb_reserve_allocate(st);
    StoreTxn *t = lmdb_alloc(sizeof *t);
    *t = (StoreTxn){.ops = &store_lmdb_ops, .st = st, .txn = txn, .write = write};
    *out = t;
    return STORE_OK;
}

int
lmdb_txn_commit(StoreTxn *txn)
{
    Store *st = txn->st;
    bool write = txn->write;
    int flushed = write ? lmdb_counts_flush(txn) : STORE_OK;
    if (flushed) {
        lmdb_txn_abort(txn);
        return flushed;
    }
    if (write && !txn->reserve && lmdb_reserve_check(st, txn->txn)) {
        lmdb_txn_abort(txn);
        return STORE_FULL;
    }
    uint64_t id = 0;
    int rc = write ? lmdb_commit(st, txn->txn, &id) : mdb_txn_commit(txn->txn);
    pthread_rwlock_unlock(&st->map_lock);
    bool lazy = txn->lazy;
    free(txn);
    if (write && rc)
        lmdb_commit_failed(st, rc);
    else if (write && id)
        rc = lmdb_sync_upto(st, id, !lazy);
    return lmdb_status_of(rc);
}

void
lmdb_txn_abort(StoreTxn *txn)
{
    if (!txn)
        return;
    if (txn->write)
        lmdb_abort(txn->st, txn->txn);
    else
        mdb_txn_abort(txn->txn);
    pthread_rwlock_unlock(&txn->st->map_lock);
    free(txn);
}

/* ---- group commit ---- */

/* Gives request "q" its outcome "status" and, when it failed, what this
 * thread knows of the failure, for its caller's thread (store_error_detail). */
static void
req_set(WriteReq *q, int status)
{
    q->rc = status;
    if (status)
        snprintf(q->detail, sizeof q->detail, "%s", store_error_detail());
}

/* Runs request "r" in "parent": in a nested transaction of its own when
 * "nested", else directly in "parent" (which the caller then aborts if it
 * failed).  Returns what the caller gets: 0, fn's value or a StoreStatus;
 * "*full" says whether it failed for want of room (FULL_MAP, FULL_TXN). */
static int
group_run_one(Store *st, MDB_txn *parent, WriteReq *r, bool nested, int *full)
{
    MDB_txn *txn = parent;
    int res, rc;
    size_t mark = lmdb_log_mark(st);
    lmdb_full_seen = FULL_NONE;
    if (nested && (rc = mdb_txn_begin(st->env, parent, 0, &txn))) {
        res = lmdb_status_of(rc);
        *full = lmdb_full_seen;
        return res;
    }
    StoreTxn t = {.ops = &store_lmdb_ops, .st = st, .txn = txn, .write = true};
    res = r->fn(&t, r->ctx);
    if (res == 0)
        res = lmdb_counts_flush(&t);
    if (res == 0 && !t.reserve)
        res = lmdb_reserve_check(st, txn);
    r->reserve = t.reserve;
    r->lazy = t.lazy;
    if (nested) {
        if (res != 0)
            mdb_txn_abort(txn);
        else if ((rc = mdb_txn_commit(txn)))
            res = lmdb_status_of(rc);
        if (res != 0)
            lmdb_log_rewind(st, mark);
    }
    *full = res ? lmdb_full_seen : FULL_NONE;
    return res;
}

/* True when a request from "from" up to "to" (excluded) that succeeded
 * may use the reserve. */
static bool
group_uses_reserve(const WriteReq *from, const WriteReq *to)
{
    for (const WriteReq *q = from; q != to; q = q->next)
        if (q->rc == 0 && q->reserve)
            return true;
    return false;
}

/* Runs the group "head" to the end (see "Group commit" above): every
 * request gets its rc, and those whose changes committed are marked.
 * Returns the id of the last transaction committed (0: none); "*uncovered"
 * the last of them that a crash of the processes would undo for now (the
 * log's chain broke: see lmdb_log_covers), 0: none. */
static uint64_t
group_run(Store *st, WriteReq *head, uint64_t *uncovered)
{
    *uncovered = 0;
    uint64_t last = 0;
    int grows = 0, unpins = 0;
    WriteReq *from = head;
    while (from) {
        MDB_txn *parent;
        int rc = lmdb_checkpoint_first(st);
        if (!rc)
            rc = lmdb_env_begin(st, 0, &parent);
        if (!rc)
            lmdb_reserve_allocate(st);
        if (rc) {
            for (WriteReq *q = from; q; q = q->next)
                req_set(q, lmdb_status_of(rc));
            break;
        }
        bool nested = from->next != NULL;
        int full = FULL_NONE;
        WriteReq *r;
        for (r = from; r; r = r->next) {
            req_set(r, group_run_one(st, parent, r, nested, &full));
            if (r->rc && full != FULL_NONE)
                break;
        }
        if (r == from || (!nested && from->rc != 0)) {
            /* It failed alone: the transaction holds nothing else. */
            lmdb_abort(st, parent);
            pthread_rwlock_unlock(&st->map_lock);
            if (full == FULL_MAP && grows < STORE_GROW_TRIES && lmdb_map_grow(st) == 0) {
                grows++;
                continue; /* run it again in the larger map */
            }
            if (full == FULL_MAP && from->reserve && unpins < STORE_UNPIN_TRIES &&
                lmdb_unpin_freed(st, unpins++) == 0)
                continue;      /* run it again: the pinned pages are free */
            from = from->next; /* it keeps its failure */
            continue;
        }
        uint64_t id = 0;
        rc = lmdb_commit(st, parent, &id);
        pthread_rwlock_unlock(&st->map_lock);
        if (rc == 0) {
            lmdb_stat_add(&st->groups, 1);
            last = id;
            if (!lmdb_log_covers(st, id))
                *uncovered = id;
            for (WriteReq *q = from; q != r; q = q->next)
                q->committed = q->rc == 0;
            from = r; /* one did not fit: it goes first next */
            continue;
        }
        lmdb_commit_failed(st, rc);
        if (rc == MDB_MAP_FULL && grows < STORE_GROW_TRIES && lmdb_map_grow(st) == 0) {
            grows++;
            continue; /* the commit needed room: all again */
        }
        if (rc == MDB_MAP_FULL && group_uses_reserve(from, r) && unpins < STORE_UNPIN_TRIES &&
            lmdb_unpin_freed(st, unpins++) == 0)
            continue; /* all again: the pinned pages are free */
        for (WriteReq *q = from; q != r; q = q->next)
            if (q->rc == 0)
                req_set(q, lmdb_status_of(rc));
        from = r;
    }
    return last;
}

int
lmdb_write(Store *st, int (*fn)(StoreTxn *txn, void *ctx), void *ctx)
{
    if (st->read_only)
        return STORE_READONLY;
    WriteReq me = {.fn = fn, .ctx = ctx};
    pthread_mutex_lock(&st->group_mu);
    /* The queue links callers' own stack entries: each stays linked only
     * until a leader takes the whole queue, and its caller waits until a
     * leader has run it (me.done), so none is left linked on return. */
    *st->queue_tail = &me;
    // cppcheck-suppress autoVariables
    st->queue_tail = &me.next;
    st->waiting++;
    while (!me.done && (me.in_group || st->leading))
        pthread_cond_wait(&st->group_cv, &st->group_mu);
    if (me.done) {
        pthread_mutex_unlock(&st->group_mu);
        if (me.rc && me.detail[0])
            store_error_detail_set("%s", me.detail);
        return me.rc;
    }
    /* Lead: every caller waiting now is in the group. */
    st->leading = true;
    WriteReq *head = st->queue;
    st->queue = NULL;
    st->queue_tail = &st->queue;
    uint64_t n = 0;
    for (WriteReq *q = head; q; q = q->next, n++)
        q->in_group = true;
    st->waiting -= n;
    pthread_mutex_unlock(&st->group_mu);
    lmdb_stat_add(&st->writes, n);

    uint64_t uncovered, last = group_run(st, head, &uncovered);

    /* The next group may begin while this one's commit is synced.  The
     * requests that need no sync (store_txn_lazy, unless a commit is not
     * yet covered), or failed, are done now; the rest, and this caller's,
     * wait for it.  A request marked done may return (its entry gone) once
     * the lock is let go: only "rest" is walked after. */
    pthread_mutex_lock(&st->group_mu);
    st->leading = false;
    bool durable = false;
    WriteReq *rest = NULL, **rest_tail = &rest, *next;
    for (WriteReq *q = head; q; q = next) {
        next = q->next;
        if (q == &me || (q->committed && (!q->lazy || uncovered))) {
            durable |= q->committed && !q->lazy;
            *rest_tail = q;
            rest_tail = &q->next;
        } else {
            q->done = true;
        }
    }
    *rest_tail = NULL;
    pthread_cond_broadcast(&st->group_cv);
    pthread_mutex_unlock(&st->group_mu);
    int src = last && durable ? lmdb_sync_upto(st, last, true) : 0;
    if (!src && uncovered)
        src = lmdb_sync_upto(st, uncovered, false);

    pthread_mutex_lock(&st->group_mu);
    for (WriteReq *q = rest; q; q = q->next) {
        if (src && q->committed)
            req_set(q, lmdb_status_of(src));
        q->done = true;
    }
    int rc = me.rc;
    pthread_cond_broadcast(&st->group_cv);
    pthread_mutex_unlock(&st->group_mu);
    if (rc && me.detail[0])
        store_error_detail_set("%s", me.detail);
    return rc;
}

void
lmdb_txn_lazy(StoreTxn *txn)
{
    txn->lazy = true;
}

void
lmdb_txn_last(StoreTxn *txn)
{
    (void)txn; /* a commit here costs no round trip: nothing to send with it */
}

int64_t
lmdb_txn_now(StoreTxn *txn)
{
    if (!txn->now)
        txn->now = lmdb_now(txn->st);
    return txn->now;
}
