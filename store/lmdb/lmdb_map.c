/* lmdb_map.c — the size of a store's map: its first size, growing it
 * within the room the disk has, adopting a map another process grew, and
 * the reserve that keeps claims and deletes working on a full disk.  See
 * "Concurrency" in lmdb_internal.h for the lock that guards a resize.
 */
#include "lmdb_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define STORE_RESIZE_WAIT_S 5
#define STORE_DISK_MARGIN ((uint64_t)256 << 10) /* disk left to the filesystem */
#define RESERVE_SHARE 8                         /* the reserve: 1/8 of the room the store has, */
#define RESERVE_MIN_PAGES 64                    /* at least 256 KiB (with 4 KiB pages) */
#define RESERVE_MAX_PAGES 2048                  /* and at most 8 MiB */
#define LMDB_META_PAGES 2                       /* LMDB's two meta pages */
#define LMDB_FREE_DBI 0                         /* LMDB's own databases: its free list */
#define LMDB_MAIN_DBI 1                         /* and the one naming the others */

/* Rounds n down to a whole number of the system's pages. */
static uint64_t
page_floor(uint64_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t p = page > 0 ? (uint64_t)page : 4096;
    return n - n % p;
}

/* The size of the data file, in bytes (0 when it cannot be read). */
static uint64_t
store_file_size(Store *st)
{
    struct stat sb;
    return fstat(st->data_fd, &sb) == 0 && sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
}

/* The largest map the disk has room for: the data file as it is plus the
 * filesystem's free space, less a margin, in whole pages.  Never less than
 * the data file. */
static size_t
store_map_room(Store *st)
{
    struct statvfs vs;
    uint64_t file = store_file_size(st), room = file;
    if (fstatvfs(st->data_fd, &vs) == 0) {
        uint64_t avail = (uint64_t)vs.f_bavail * vs.f_frsize;
        if (avail > STORE_DISK_MARGIN)
            room += avail - STORE_DISK_MARGIN;
    }
    room = page_floor(room);
    if (room < file)
        room = file;
    return room > SIZE_MAX ? (size_t)page_floor(SIZE_MAX) : (size_t)room;
}

void
lmdb_env_info(Store *st, size_t *map_size, uint64_t *last_txnid)
{
    MDB_envinfo info;
    if (mdb_env_info(st->env, &info) != 0)
        memset(&info, 0, sizeof info);
    if (map_size)
        *map_size = info.me_mapsize;
    if (last_txnid)
        *last_txnid = info.me_last_txnid;
}

uint64_t
lmdb_last_txnid(Store *st)
{
    uint64_t id;
    pthread_rwlock_rdlock(&st->map_lock);
    lmdb_env_info(st, NULL, &id);
    pthread_rwlock_unlock(&st->map_lock);
    return id;
}

int
lmdb_map_init(Store *st, size_t requested)
{
    size_t cur;
    uint64_t file = store_file_size(st);
    uint64_t want = requested > file ? requested : file;
    uint64_t room = store_map_room(st);
    if (want > room)
        want = room;
    want = page_floor(want);
    lmdb_env_info(st, &cur, NULL);
    int rc = 0;
    if (want && want != cur)
        rc = mdb_env_set_mapsize(st->env, (size_t)want);
    lmdb_env_info(st, &cur, NULL);
    __atomic_store_n(&st->map_size, cur, __ATOMIC_RELAXED);
    return rc;
}

/* ---- the map's size ---- */

/* Takes the map lock exclusively, waiting a few seconds at most for the
 * transactions of this process to end: 0, or EBUSY. */
static int
map_lock_exclusive(Store *st)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += STORE_RESIZE_WAIT_S;
    return pthread_rwlock_timedwrlock(&st->map_lock, &until) ? EBUSY : 0;
}

int
lmdb_map_adopt(Store *st)
{
    if (map_lock_exclusive(st))
        return EBUSY;
    size_t cur, room = store_map_room(st);
    int rc = mdb_env_set_mapsize(st->env, 0);
    lmdb_env_info(st, &cur, NULL);
    if (rc == 0 && cur > room) {
        rc = mdb_env_set_mapsize(st->env, room); /* LMDB keeps what is used */
        lmdb_env_info(st, &cur, NULL);
    }
    __atomic_store_n(&st->map_size, cur, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
}

int
lmdb_map_grow(Store *st)
{
    if (map_lock_exclusive(st))
        return EBUSY;
    size_t cur, room = store_map_room(st);
    lmdb_env_info(st, &cur, NULL);
    size_t want = cur > SIZE_MAX / 2 ? (size_t)page_floor(SIZE_MAX) : cur * 2;
    if (want > room)
        want = room;
    int rc = MDB_MAP_FULL;
    if (want > cur && (rc = mdb_env_set_mapsize(st->env, want)) == 0) {
        lmdb_stat_add(&st->grows, 1);
        lmdb_env_info(st, &cur, NULL);
        __atomic_store_n(&st->map_size, cur, __ATOMIC_RELAXED);
    }
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
}

/* ---- the reserve ----
 *
 * LMDB copies every page a transaction changes, so even a delete needs
 * free pages, and on a full map and a full disk everything would fail.
 * The store keeps a reserve that only the transactions which said so
 * (store_txn_use_reserve: claims, releases, touches, deletes, drops) may
 * use: any other write transaction is refused (STORE_FULL) when, after it,
 * the room left would be less than the reserve.  The room is the largest
 * map the disk allows (store_map_room) less the pages that hold data, in
 * the transaction's own view: the pages of every tree, LMDB's free list
 * included, and the meta pages; the free list's pages count as room.  The
 * reserve is really on disk: before each write transaction the leader
 * allocates the data file up to the used pages plus the reserve and half
 * as much again (fallocate, which never changes data), while the disk has
 * room; the map grows into the allocated file when a write needs it.  The
 * pages freed since the last checkpoint are pinned (see "Durability"), and
 * a fast stream of claims and releases frees them faster than the ticker
 * unpins them: a write of the reserve's that finds the map full takes a
 * checkpoint and runs again (lmdb_unpin_freed). */

/* The reserve for a store that has "room" pages: RESERVE_SHARE of it,
 * within RESERVE_MIN_PAGES and RESERVE_MAX_PAGES. */
static uint64_t
reserve_of(uint64_t room)
{
    uint64_t r = room / RESERVE_SHARE;
    return r < RESERVE_MIN_PAGES   ? RESERVE_MIN_PAGES
           : r > RESERVE_MAX_PAGES ? RESERVE_MAX_PAGES
                                   : r;
}

uint64_t
lmdb_room_pages(Store *st)
{
    uint64_t room = store_map_room(st) / st->page_size;
    lmdb_counter_raise(&st->file_bytes, store_file_size(st));
    __atomic_store_n(&st->reserve_pages, reserve_of(room), __ATOMIC_RELAXED);
    return room;
}

/* The pages that hold data in "txn"'s view: every tree's (LMDB's free list
 * and main database included) and the meta pages.  0 when a figure cannot
 * be read. */
static uint64_t
txn_used_pages(Store *st, MDB_txn *txn)
{
    const MDB_dbi dbis[] = {LMDB_FREE_DBI, LMDB_MAIN_DBI, st->sys,      st->catalog,
                            st->records,   st->ready,     st->deadline, st->meta};
    uint64_t used = LMDB_META_PAGES;
    for (size_t i = 0; i < sizeof dbis / sizeof dbis[0]; i++) {
        MDB_stat ms;
        if (mdb_stat(txn, dbis[i], &ms) != 0)
            return 0;
        used += ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
    }
    return used;
}

/* True when "used" pages and the reserve fit: in the data file as last
 * seen, or else (looking again) in the room the disk gives. */
static bool
leaves_reserve(Store *st, uint64_t used)
{
    uint64_t reserve = __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED);
    if ((used + reserve) * st->page_size <= __atomic_load_n(&st->file_bytes, __ATOMIC_RELAXED))
        return true;
    uint64_t room = lmdb_room_pages(st);
    return used + __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED) <= room;
}

int
lmdb_reserve_check(Store *st, MDB_txn *txn)
{
    uint64_t used = txn_used_pages(st, txn);
    if (!used)
        return STORE_OK; /* no figure: LMDB itself will tell */
    return leaves_reserve(st, used) ? STORE_OK : STORE_FULL;
}

void
lmdb_reserve_allocate(Store *st)
{
    MDB_envinfo info;
    if (mdb_env_info(st->env, &info) != 0)
        return;
    uint64_t used = (uint64_t)info.me_last_pgno + 1;
    uint64_t reserve = __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED);
    if ((used + reserve) * st->page_size <= __atomic_load_n(&st->file_bytes, __ATOMIC_RELAXED))
        return;
    uint64_t room = lmdb_room_pages(st), file = store_file_size(st);
    reserve = __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED);
    uint64_t want = (used + reserve + reserve / 2) * st->page_size;
    if (want > room * st->page_size)
        want = room * st->page_size;
    if (want > file && want <= (uint64_t)INT64_MAX &&
        fallocate(st->data_fd, 0, (off_t)file, (off_t)(want - file)) == 0)
        lmdb_counter_raise(&st->file_bytes, want);
}

bool
lmdb_file_tight(Store *st)
{
    MDB_envinfo info;
    pthread_rwlock_rdlock(&st->map_lock);
    int rc = mdb_env_info(st->env, &info);
    pthread_rwlock_unlock(&st->map_lock);
    return rc == 0 && !leaves_reserve(st, (uint64_t)info.me_last_pgno + 1);
}

void
lmdb_txn_use_reserve(StoreTxn *txn)
{
    txn->reserve = true;
}
