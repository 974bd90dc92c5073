/* lmdb_sync.c — "queuefs.sync", the page of counters every process on a
 * store maps shared: syncs shared by the writers of every process (see
 * "Durability" in lmdb_internal.h), what a commit notes there, and
 * store_changes / store_wait_change / store_wake, a futex in that page.
 */
#include "lmdb_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Makes the calling thread the sync leader: the one thread of the process
 * that syncs, holding flock on the shared file (which excludes the other
 * processes' leaders).  The caller holds sync_mu, which this releases. */
static void
sync_lead_locked(Store *st)
{
    while (st->syncing)
        pthread_cond_wait(&st->sync_cv, &st->sync_mu);
    st->syncing = true;
    pthread_mutex_unlock(&st->sync_mu);
    while (flock(st->sync_fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

/* Wakes the threads of every process waiting for the sync that ended, and
 * releases the flock that led it. */
static void
sync_ended(Store *st)
{
    __atomic_add_fetch(&st->shared->sync_ends, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &st->shared->sync_ends, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    flock(st->sync_fd, LOCK_UN);
}

/* Ends the lead and wakes the threads waiting for a sync, in this process
 * and in the others; returns with sync_mu held. */
static void
sync_unlead_locked(Store *st)
{
    sync_ended(st);
    pthread_mutex_lock(&st->sync_mu);
    st->syncing = false;
    pthread_cond_broadcast(&st->sync_cv);
}

void
lmdb_sync_lock(Store *st)
{
    pthread_mutex_lock(&st->sync_mu);
    sync_lead_locked(st);
}

void
lmdb_sync_unlock(Store *st)
{
    sync_unlead_locked(st);
    pthread_mutex_unlock(&st->sync_mu);
}

int
lmdb_sync_open(Store *st, const char *location, bool alone)
{
    SyncShared *sh = MAP_FAILED;
    struct stat sb;
    int fd = lmdb_open_in(location, SYNC_FILE, O_RDWR | O_CREAT);
    if (fd < 0)
        return errno;
    int rc = 0;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            rc = errno;
            close(fd);
            return rc;
        }
    if (fstat(fd, &sb))
        rc = errno;
    else if (sb.st_size < SYNC_FILE_LEN)
        rc = posix_fallocate(fd, 0, SYNC_FILE_LEN);
    if (!rc &&
        (sh = mmap(NULL, SYNC_FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
        rc = errno;
    if (!rc && (alone || sh->magic != SYNC_MAGIC)) {
        Checkpoint newest;
        *sh = (SyncShared){.magic = SYNC_MAGIC};
        if (lmdb_checkpoint_read(st->ckpt_fd, &newest) == 0)
            sh->record_seq = newest.seq;
        msync(sh, SYNC_FILE_LEN, MS_ASYNC);
    }
    flock(fd, LOCK_UN);
    if (rc) {
        close(fd);
        return rc;
    }
    st->sync_fd = fd;
    st->shared = sh;
    return 0;
}

/* As the sync leader: makes every commit so far outlive a machine crash,
 * unless "id" already does.  0 or an errno or LMDB code. */
static int
sync_once(Store *st, uint64_t id)
{
    SyncShared *sh = st->shared;
    if (lmdb_counter_get(&sh->synced) >= id)
        return 0;
    if (st->checkpoints && __atomic_load_n(&sh->fast, __ATOMIC_ACQUIRE))
        return lmdb_checkpoint_take(st);
    uint64_t target = lmdb_counter_get(&sh->committed);
    lmdb_stat_add(&st->syncs, 1);
    int rc = mdb_env_sync(st->env, 1);
    if (rc)
        lmdb_failure("fdatasync of data.mdb", rc);
    lmdb_counter_raise(rc ? &sh->failed : &sh->synced, target);
    return rc;
}

int
lmdb_sync_all(Store *st)
{
    uint64_t last = lmdb_last_txnid(st);
    lmdb_counter_raise(&st->shared->committed, last);
    if (!st->sync)
        return 0;
    lmdb_sync_lock(st);
    int rc = sync_once(st, last);
    lmdb_sync_unlock(st);
    return rc;
}

/* As this process's would-be sync leader (st->syncing set, sync_mu not
 * held): leads a sync when no other process does, else waits for the one
 * under way to end (SYNC_WAIT_MS at most, in case its process died).  0
 * or what the sync it led returned. */
static int
sync_lead_or_wait(Store *st, uint64_t id)
{
    uint32_t ends = __atomic_load_n(&st->shared->sync_ends, __ATOMIC_ACQUIRE);
    if (flock(st->sync_fd, LOCK_EX | LOCK_NB) == 0) {
        int rc = sync_once(st, id);
        sync_ended(st);
        return rc;
    }
    struct timespec wait = {0, SYNC_WAIT_MS * 1000000L};
    if (lmdb_counter_get(&st->shared->synced) < id)
        syscall(SYS_futex, &st->shared->sync_ends, FUTEX_WAIT, ends, &wait, NULL, 0);
    return 0;
}

int
lmdb_sync_upto(Store *st, uint64_t id, bool durable)
{
    SyncShared *sh = st->shared;
    int rc = 0;
    if (!durable || !st->sync) {
        if (lmdb_log_covers(st, id))
            return 0; /* a crash of the processes would keep it */
    } else if (lmdb_log_sync(st, id, &rc)) {
        return rc; /* one flush of the log */
    }
    pthread_mutex_lock(&st->sync_mu);
    for (;;) {
        if (lmdb_counter_get(&sh->failed) >= id) {
            rc = lmdb_failure("an earlier sync of the store, after this write", EIO);
            break;
        }
        if (lmdb_counter_get(&sh->synced) >= id)
            break;
        if (st->syncing) {
            pthread_cond_wait(&st->sync_cv, &st->sync_mu);
            continue;
        }
        st->syncing = true;
        pthread_mutex_unlock(&st->sync_mu);
        rc = sync_lead_or_wait(st, id);
        pthread_mutex_lock(&st->sync_mu);
        st->syncing = false;
        pthread_cond_broadcast(&st->sync_cv);
        if (rc)
            break;
    }
    pthread_mutex_unlock(&st->sync_mu);
    return rc;
}

/* Tells every store_wait_change, in every process, that the store's
 * changes moved on: bumps the shared counter, and wakes its futex when
 * someone sleeps on it (the common case of no waiter costs no system
 * call). */
static void
store_changed(Store *st)
{
    __atomic_add_fetch(&st->shared->changes, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&st->shared->change_waiters, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &st->shared->changes, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

uint64_t
lmdb_commit_note(Store *st, uint64_t id)
{
    uint64_t last;
    lmdb_env_info(st, NULL, &last);
    lmdb_counter_raise(&st->shared->committed, last);
    if (last >= id) {
        /* It changed something: readers see it now, and this process has
         * the newest commit (a commit of nothing leaves no id of its own:
         * a process that only reads takes no checkpoint). */
        lmdb_counter_raise(&st->last_commit, last);
        store_changed(st);
    }
    return id < last ? id : last;
}

void
lmdb_commit_failed(Store *st, int rc)
{
    if (st->sync && lmdb_status_of(rc) == STORE_IO)
        lmdb_counter_raise(&st->shared->failed, lmdb_last_txnid(st));
}

uint64_t
lmdb_changes(Store *st)
{
    return __atomic_load_n(&st->shared->changes, __ATOMIC_SEQ_CST);
}

bool
lmdb_wait_change(Store *st, uint64_t seen, int64_t until_ns)
{
    SyncShared *sh = st->shared;
    /* Counted before the counter is read again: a committer that bumps it
     * after that read sees the count and wakes the futex. */
    __atomic_add_fetch(&sh->change_waiters, 1, __ATOMIC_SEQ_CST);
    uint32_t now_seen = __atomic_load_n(&sh->changes, __ATOMIC_SEQ_CST);
    if (now_seen == (uint32_t)seen && lmdb_now(st) < until_ns) {
        struct timespec at = {until_ns / 1000000000, until_ns % 1000000000};
        /* An absolute instant of the realtime clock: the store's clock. */
        syscall(SYS_futex, &sh->changes, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, now_seen,
                until_ns == INT64_MAX ? NULL : &at, NULL, FUTEX_BITSET_MATCH_ANY);
        now_seen = __atomic_load_n(&sh->changes, __ATOMIC_SEQ_CST);
    }
    __atomic_sub_fetch(&sh->change_waiters, 1, __ATOMIC_SEQ_CST);
    return now_seen != (uint32_t)seen;
}

void
lmdb_wake(Store *st)
{
    store_changed(st);
}
