/* lmdb_sync.h — what an LMDB store's processes share to make commits
 * durable (see "Durability" in lmdb_internal.h): the page of counters
 * "queuefs.sync" every process maps, the syncs they share (lmdb_sync.c)
 * and the checkpoints (lmdb_checkpoint.c).  Used by the lmdb_*.c files
 * only, through lmdb_internal.h.
 */
#ifndef QUEUEFS_LMDB_SYNC_H
#define QUEUEFS_LMDB_SYNC_H

#ifndef QUEUEFS_LMDB_BACKEND
#error \
    "the LMDB backend's own header: only store/lmdb/ includes it (built with -DQUEUEFS_LMDB_BACKEND)"
#endif

#include "lmdb_checkpoint.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct Store Store;

#define SYNC_FILE "queuefs.sync"
#define SYNC_FILE_LEN 4096
#define SYNC_WAIT_MS 10                  /* a wait for another process's sync, at most */
#define SYNC_MAGIC 0x7166732d73796e33ull /* "qfs-syn3": the page without a boot */

/* The page of "queuefs.sync", shared by every process on the store; the
 * counters are LMDB transaction ids, read and written atomically. */
typedef struct SyncShared {
    uint64_t magic;
    uint64_t committed;      /* a transaction id known committed (meta written) */
    uint64_t synced;         /* every transaction id <= synced is on disk and
                           * outlives a machine crash */
    uint64_t failed;         /* a sync failed: ids <= failed may be lost */
    uint64_t fast;           /* 1: commits need not sync (see "Durability") */
    uint64_t record;         /* the transaction of the newest checkpoint record */
    uint32_t sync_ends;      /* bumped (a futex, woken) whenever a sync ends */
    uint32_t changes;        /* bumped after every commit that changed something,
                           * and by store_wake: the futex store_wait_change
                           * sleeps on (0 in files of builds before it) */
    uint64_t record_seq;     /* the sequence number of the newest record */
    uint32_t change_waiters; /* threads in store_wait_change, in every process:
                               * a committer wakes "changes" only when some */
    /* The redo log's chain (lmdb_log.h), changed under the log's lock. */
    uint64_t log_epoch;   /* the chain's: every entry of it carries it */
    uint64_t log_base;    /* the chain holds every commit after this id */
    uint64_t log_next;    /* the id it takes next; 0: broken */
    uint64_t log_head;    /* the position of the next entry */
    uint64_t log_tail;    /* the newest record's position: the ring before is free */
    uint64_t record_at;   /* when the newest record was written (CLOCK_MONOTONIC ns) */
    uint32_t log_flushes; /* bumped (a futex, woken) whenever a flush of the log ends */
} SyncShared;

/* Raises the shared counter at "p" to at least "v". */
static inline void
lmdb_counter_raise(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (cur < v &&
           !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
}

/* Reads the shared counter at "p". */
static inline uint64_t
lmdb_counter_get(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* What a checkpoint's pages were when it was taken, so that the next
 * checkpoint need sync only the pages put to use since (see
 * lmdb_checkpoint.c): every page up to "last" is in use but those in
 * "free". */
typedef struct CheckpointPages {
    uint64_t seq;   /* the record they are of; 0: none */
    uint64_t id;    /* its transaction */
    uint64_t last;  /* the last page of the data file it uses */
    uint64_t *free; /* the pages of LMDB's free list, ascending */
    size_t n;
} CheckpointPages;

/* Forgets "p" (and frees its list). */
void lmdb_pages_forget(CheckpointPages *p);

/* ---- lmdb_sync.c ---- */

/* Becomes the sync leader (see sync_lead_locked). */
void lmdb_sync_lock(Store *st);

/* Ends the lead lmdb_sync_lock took. */
void lmdb_sync_unlock(Store *st);

/* Opens (creating) "queuefs.sync" in "location" and maps its counters: 0
 * or an errno.  An opener "alone" on the store (lmdb_store_alone: the
 * counters are of processes that ended, and the store was recovered)
 * resets them, to the safe mode; so does one that finds a page of another
 * layout. */
int lmdb_sync_open(Store *st, const char *location, bool alone);

/* Makes every commit so far durable: STORE_OK, or the sync's failure.
 * Used once at open, whatever earlier failures were recorded. */
int lmdb_sync_all(Store *st);

/* Makes transaction "id" (committed) durable when "durable" and the
 * store's sync is on; otherwise only sure to outlive a crash of the
 * processes, which needs nothing unless the log's chain broke before it
 * (lmdb_log_covers).  Shares the sync with every thread and process on the
 * store: a thread that finds a sync under way — in its process or another
 * — waits for it, and returns at once if it covered "id"; otherwise one of
 * the waiters leads the next.  0, or the errno of the failed sync (EIO also
 * when an earlier sync failed after "id" committed). */
int lmdb_sync_upto(Store *st, uint64_t id, bool durable);

/* Notes that write transaction "id" of this process committed: raises
 * "committed" to the last id LMDB shows.  Returns the id to sync up to:
 * "id", or the last id when the commit changed nothing and so took none.
 * The caller still holds the map lock. */
uint64_t lmdb_commit_note(Store *st, uint64_t id);

/* Notes a failed commit: when the disk failed (with sync on, the commit's
 * own sync may have reported an earlier commit's lost pages), every commit
 * so far may be lost. */
void lmdb_commit_failed(Store *st, int rc);

/* ---- lmdb_checkpoint.c ---- */

/* Drops this process's pin, which the environment's closing would drop
 * anyway, leaving the store safe first (see "Durability") when the newest
 * checkpoint record is this pin's. */
void lmdb_unpin(Store *st);

/* For a write of the reserve's that found the map full and cannot grow
 * it: the pages the commits since the last checkpoint freed are pinned
 * (see "Durability"), so it takes a checkpoint of the newest commit, which
 * drops this process's older pin; from the second try on it first waits
 * two checkpoint intervals, in which the other processes drop theirs.  0
 * when the write may run again. */
int lmdb_unpin_freed(Store *st, int attempt);

/* Takes a checkpoint of the last committed transaction (see "Durability"):
 * pins it and reads its meta pages under the writer lock, syncs the file,
 * records it, and makes the store fast.  The caller holds the sync lock.
 * 0, or an errno or LMDB code (a failed sync is noted in "failed"). */
int lmdb_checkpoint_take(Store *st);

/* Starts the store's checkpoint thread, which takes a checkpoint every
 * CHECKPOINT_INTERVAL_MS until lmdb_close stops it, and returns once the
 * thread is running (st->ticking): a fork() of the process after that
 * never copies an allocator the thread holds.  0, or pthread_create's
 * error (and then no thread runs). */
int lmdb_checkpoint_ticker_start(Store *st);

/* Before this process's first commit: a checkpoint of its own (see
 * "Durability"), which its open takes unless the disk failed then.  0, or
 * why there is none: then nothing may be committed. */
int lmdb_checkpoint_first(Store *st);

#endif
