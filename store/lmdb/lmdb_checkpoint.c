/* lmdb_checkpoint.c — checkpoints, which let a store commit without
 * syncing and still never be corrupt after a machine crash: the record
 * file "queuefs.checkpoint" and LMDB's meta pages (see lmdb_checkpoint.h),
 * and taking a checkpoint, the thread that takes them, the pins that hold
 * them (see "Durability" in lmdb_internal.h).
 */
#include "lmdb_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#define CHECKPOINT_INTERVAL_MS 20 /* how often sync off takes a checkpoint */
#define SLOT_LEN 4096             /* one slot a block: written whole */
#define RECORD_MAGIC "qfs-ckpt"
/* Version 2: recovery by the store's files.  Bytes 32..95 held the data
 * file's device and inode and the boot of version 1, by which its builds
 * guessed whether to recover; they are zero now, and those builds find no
 * record of theirs (so none of them trusts the disk on one of these). */
#define RECORD_VERSION 2u
#define RECORD_VERSION_BOOTS 1u
#define RECORD_LEN (96 + 2 * CHECKPOINT_META_LEN) /* before the crc */
/* After the record's crc, where builds before the redo log wrote zeros:
 * the chain's epoch and position, with a crc of their own. */
#define LOG_AT (RECORD_LEN + 4)
#define LOG_MAGIC "qfs-log1"
#define LOG_PART_LEN 24

/* LMDB 0.9's meta page (data format version 1). */
#define META_FLAGS_AT 10
#define META_FLAG 0x08
#define META_MAGIC_AT 16
#define META_MAGIC 0xBEEFC0DEu
#define META_VERSION_AT 20
#define META_VERSION 1u
#define META_PAGE_SIZE_AT 40
#define META_LAST_PAGE_AT 136
#define META_TXNID_AT 144

/* ---- the record file and LMDB's meta pages ---- */

/* Integers in the machine's byte order, as LMDB writes its meta pages
 * (and as the record file has always been written): not bigendian.h's. */
static void
put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void
put_u64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint32_t
get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t
get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Reads exactly "len" bytes at "off": 0, EIO on a short read, or errno. */
static int
read_at(int fd, void *buf, size_t len, off_t off)
{
    ssize_t n;
    while ((n = pread(fd, buf, len, off)) < 0 && errno == EINTR)
        ;
    return n < 0 ? errno : (size_t)n == len ? 0 : EIO;
}

/* Writes exactly "len" bytes at "off": 0 or errno (EIO on a short write). */
static int
write_at(int fd, const void *buf, size_t len, off_t off)
{
    ssize_t n;
    while ((n = pwrite(fd, buf, len, off)) < 0 && errno == EINTR)
        ;
    return n < 0 ? errno : (size_t)n == len ? 0 : EIO;
}

/* Syncs "fd"'s data: 0 or errno. */
static int
sync_data(int fd)
{
    return fdatasync(fd) == 0 ? 0 : errno;
}

int
lmdb_checkpoint_open(const char *location)
{
    int fd = lmdb_open_in(location, CHECKPOINT_FILE, O_RDWR | O_CREAT);
    if (fd < 0)
        return -errno;
    struct stat sb;
    int rc = fstat(fd, &sb) ? errno : 0;
    if (!rc && sb.st_size < 2 * SLOT_LEN)
        rc = posix_fallocate(fd, 0, 2 * SLOT_LEN);
    if (rc) {
        close(fd);
        return -rc;
    }
    return fd;
}

/* Decodes the slot "b": true when it holds a valid record. */
static bool
record_decode(const unsigned char *b, Checkpoint *c)
{
    uint32_t version = get_u32(b + 8);
    if (memcmp(b, RECORD_MAGIC, 8) != 0 ||
        (version != RECORD_VERSION && version != RECORD_VERSION_BOOTS) ||
        get_u32(b + RECORD_LEN) != (uint32_t)crc32(0L, b, RECORD_LEN))
        return false;
    c->trust_disk = get_u32(b + 12) & 1;
    c->seq = get_u64(b + 16);
    c->txnid = get_u64(b + 24);
    memcpy(c->meta, b + 96, 2 * CHECKPOINT_META_LEN);
    const unsigned char *l = b + LOG_AT;
    c->log = memcmp(l, LOG_MAGIC, 8) == 0 &&
             get_u32(l + LOG_PART_LEN) == (uint32_t)crc32(0L, l, LOG_PART_LEN);
    c->log_epoch = c->log ? get_u64(l + 8) : 0;
    c->log_pos = c->log ? get_u64(l + 16) : 0;
    return true;
}

int
lmdb_checkpoint_read(int fd, Checkpoint *out)
{
    unsigned char *b = malloc(2 * SLOT_LEN);
    if (!b)
        return ENOMEM;
    int rc = read_at(fd, b, 2 * SLOT_LEN, 0);
    bool found = false;
    for (int i = 0; !rc && i < 2; i++) {
        Checkpoint c;
        if (record_decode(b + i * SLOT_LEN, &c) && (!found || c.seq > out->seq)) {
            *out = c;
            found = true;
        }
    }
    free(b);
    return rc ? rc : found ? 0 : ENOENT;
}

int
lmdb_checkpoint_write(int fd, const Checkpoint *c)
{
    unsigned char b[SLOT_LEN];
    memset(b, 0, sizeof b);
    memcpy(b, RECORD_MAGIC, 8);
    put_u32(b + 8, RECORD_VERSION);
    put_u32(b + 12, c->trust_disk ? 1 : 0);
    put_u64(b + 16, c->seq);
    put_u64(b + 24, c->txnid);
    memcpy(b + 96, c->meta, 2 * CHECKPOINT_META_LEN);
    put_u32(b + RECORD_LEN, (uint32_t)crc32(0L, b, RECORD_LEN));
    if (c->log && !c->trust_disk) {
        unsigned char *l = b + LOG_AT;
        memcpy(l, LOG_MAGIC, 8);
        put_u64(l + 8, c->log_epoch);
        put_u64(l + 16, c->log_pos);
        put_u32(l + LOG_PART_LEN, (uint32_t)crc32(0L, l, LOG_PART_LEN));
    }
    int rc = write_at(fd, b, sizeof b, (off_t)(c->seq & 1) * SLOT_LEN);
    return rc ? rc : sync_data(fd);
}

int
lmdb_checkpoint_meta_read(int data_fd, unsigned page_size,
                          unsigned char meta[2][CHECKPOINT_META_LEN], uint64_t *newest)
{
    *newest = 0;
    for (int i = 0; i < 2; i++) {
        int rc = read_at(data_fd, meta[i], CHECKPOINT_META_LEN, (off_t)i * page_size);
        if (rc)
            return rc;
        const unsigned char *m = meta[i];
        uint16_t flags;
        memcpy(&flags, m + META_FLAGS_AT, 2);
        if (!(flags & META_FLAG) || get_u32(m + META_MAGIC_AT) != META_MAGIC ||
            get_u32(m + META_VERSION_AT) != META_VERSION)
            return EINVAL;
        uint64_t id = get_u64(m + META_TXNID_AT);
        if (id > *newest)
            *newest = id;
    }
    return 0;
}

/* Writes the meta pages of "c" back over the data file's and syncs it: 0 or
 * an errno.  No process may have the environment open. */
static int
checkpoint_restore(int data_fd, unsigned page_size, const Checkpoint *c)
{
    for (int i = 0; i < 2; i++) {
        int rc = write_at(data_fd, c->meta[i], CHECKPOINT_META_LEN, (off_t)i * page_size);
        if (rc)
            return rc;
    }
    return sync_data(data_fd);
}

/* Where the open lock lies in the record file: past both slots. */
#define OPEN_LOCK_AT (2 * SLOT_LEN)

int
lmdb_open_lock(int ckpt_fd, short type)
{
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = OPEN_LOCK_AT, .l_len = 1};
    while (fcntl(ckpt_fd, F_OFD_SETLKW, &l) != 0)
        if (errno != EINTR)
            return errno;
    return 0;
}

int
lmdb_store_alone(const char *location, bool *alone)
{
    /* Every process with the environment open holds a read lock on the
     * first byte of lock.mdb (LMDB's, a POSIX lock), which a write lock
     * would meet: asked of an OFD lock, which takes nothing (a lock held
     * would keep this process's own LMDB from its lock). */
    int fd = lmdb_open_in(location, "lock.mdb", O_RDONLY);
    *alone = fd < 0 && errno == ENOENT; /* no lock file: never opened */
    if (fd < 0)
        return *alone ? 0 : errno;
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    int rc = fcntl(fd, F_OFD_GETLK, &l) == 0 ? 0 : errno;
    *alone = !rc && l.l_type == F_UNLCK;
    close(fd);
    return rc;
}

int
lmdb_checkpoint_unrecovered(const char *location, int *ckpt_fd)
{
    *ckpt_fd = lmdb_open_in(location, CHECKPOINT_FILE, O_RDONLY);
    if (*ckpt_fd < 0)
        return 0; /* none yet, or another user's: unknown */
    Checkpoint c;
    bool alone = false;
    int rc = lmdb_open_lock(*ckpt_fd, F_RDLCK);
    if (!rc && !(rc = lmdb_store_alone(location, &alone)) && alone &&
        lmdb_checkpoint_read(*ckpt_fd, &c) == 0 && !c.trust_disk)
        rc = EUCLEAN;
    return rc;
}

/* Whether data file "data_fd" may be the one checkpoint "c" is about: its
 * meta pages, when readable, are not older than the record (a data file
 * older than it was put in its place: putting the record's meta pages on
 * it would join two stores).  Meta pages that are not readable (torn) are
 * what putting the record's back mends. */
static bool
data_file_matches(int data_fd, unsigned page_size, const Checkpoint *c)
{
    unsigned char meta[2][CHECKPOINT_META_LEN];
    uint64_t newest = 0;
    return lmdb_checkpoint_meta_read(data_fd, page_size, meta, &newest) != 0 || newest >= c->txnid;
}

int
lmdb_checkpoint_recover(int ckpt_fd, const char *location)
{
    int data_fd = lmdb_open_in(location, "data.mdb", O_RDWR);
    if (data_fd < 0)
        return errno == ENOENT ? 0 : errno;
    Checkpoint c;
    struct stat sb;
    int rc = lmdb_checkpoint_read(ckpt_fd, &c);
    if (rc == ENOENT || (!rc && c.trust_disk)) {
        close(data_fd);
        return 0; /* a new store, or closed cleanly */
    }
    unsigned page_size = rc ? 0 : get_u32(c.meta[0] + META_PAGE_SIZE_AT);
    if (!rc && (page_size < CHECKPOINT_META_LEN || (page_size & (page_size - 1)) ||
                !data_file_matches(data_fd, page_size, &c)))
        rc = EUCLEAN;
    if (!rc)
        rc = checkpoint_restore(data_fd, page_size, &c);
    if (!rc)
        rc = fstat(data_fd, &sb) ? errno : lmdb_log_replay(location, (uint64_t)sb.st_size, &c);
    if (!rc) {
        c.seq++;
        c.trust_disk = true;
        c.log = false;
        rc = lmdb_checkpoint_write(ckpt_fd, &c);
    }
    close(data_fd);
    return rc;
}

/* ---- taking checkpoints ---- */

/* As the sync leader: replaces this process's pin (aborting the old one)
 * with "pin" of transaction "id" (NULL and UINT64_MAX: none). */
static void
store_pin_set(Store *st, MDB_txn *pin, uint64_t id)
{
    if (st->pin)
        mdb_txn_abort(st->pin);
    st->pin = pin;
    __atomic_store_n(&st->pin_id, id, __ATOMIC_RELEASE);
}

/* "t", of CLOCK_MONOTONIC, in nanoseconds (the same in every process). */
static uint64_t
monotonic_ns(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/* Writes checkpoint record "c" after the newest one, under flock on the
 * record file: 0 or an errno.  With "clear_dead" it then clears the reader
 * slots of dead processes (once a second at most: they only hold pages
 * back): the newest record is this process's own and pinned, so no pin a
 * dead process left is needed any more. */
static int
checkpoint_record(Store *st, Checkpoint *c, bool clear_dead)
{
    SyncShared *sh = st->shared;
    while (flock(st->ckpt_fd, LOCK_EX) != 0)
        if (errno != EINTR)
            return errno;
    c->seq = sh->record_seq + 1;
    int rc = lmdb_checkpoint_write(st->ckpt_fd, c);
    if (!rc) {
        lmdb_log_recorded(st, c);
        sh->record_seq = c->seq;
        __atomic_store_n(&sh->record, c->txnid, __ATOMIC_RELEASE);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        __atomic_store_n(&sh->record_at, monotonic_ns(&now), __ATOMIC_RELEASE);
        if (clear_dead && now.tv_sec != st->dead_cleared_at) {
            mdb_reader_check(st->env, NULL);
            st->dead_cleared_at = now.tv_sec;
        }
    }
    flock(st->ckpt_fd, LOCK_UN);
    return rc;
}

/* ---- the pages a checkpoint syncs ----
 *
 * A checkpoint must find on the disk every page its transaction uses.
 * Those that the previous checkpoint used too are there already, and
 * unchanged, when that checkpoint is the newest record and this
 * process's pin still holds it: LMDB reuses no page freed after a pinned
 * transaction, and never writes a page in use.  So the pages to sync are
 * those free at the previous checkpoint (or past its last page) and in use
 * now: the few pages the commits in between left behind, not the copies
 * they made and freed again.  Those copies stay in the page cache, unsynced,
 * until LMDB reuses them once a later checkpoint lets it. */

void
lmdb_pages_forget(CheckpointPages *p)
{
    free(p->free);
    *p = (CheckpointPages){0};
}

/* Sorts the "n" page numbers "a" in ascending order: a radix sort, 16
 * bits a pass and as many passes as the greatest needs (a data file's
 * page numbers take one or two), since a checkpoint sorts the whole free
 * list each time and a comparison sort of it was about 6% of a busy
 * daemon's time. */
static void
pages_sort(uint64_t *a, size_t n)
{
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++)
        max = a[i] > max ? a[i] : max;
    uint64_t *tmp = malloc(n * sizeof *tmp);
    size_t *count = malloc(65537 * sizeof *count);
    if (!tmp || !count)
        abort();
    uint64_t *from = a, *to = tmp;
    for (int shift = 0; shift < 64 && (max >> shift); shift += 16) {
        memset(count, 0, 65537 * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[((from[i] >> shift) & 0xffff) + 1]++;
        for (size_t d = 0; d < 65536; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            to[count[(from[i] >> shift) & 0xffff]++] = from[i];
        uint64_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != a)
        memcpy(a, from, n * sizeof *a);
    free(tmp);
    free(count);
}

/* Reads into "out" the pages of transaction "id", read by "txn" (of that
 * transaction), whose meta pages are "meta": LMDB's code. */
static int
pages_read(MDB_txn *txn, uint64_t id, unsigned char meta[2][CHECKPOINT_META_LEN],
           CheckpointPages *out)
{
    MDB_cursor *cur;
    MDB_val k, v;
    size_t cap = 0;
    *out = (CheckpointPages){.id = id};
    for (int i = 0; i < 2; i++)
        if (get_u64(meta[i] + META_TXNID_AT) == id)
            out->last = get_u64(meta[i] + META_LAST_PAGE_AT);
    int rc = mdb_cursor_open(txn, 0, &cur); /* 0: LMDB's free list */
    if (rc)
        return rc;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
        /* A value: a count of page numbers (size_t each), then those. */
        size_t n, w = sizeof(size_t);
        memcpy(&n, v.mv_data, w);
        if (v.mv_size < (n + 1) * w) {
            rc = MDB_CORRUPTED;
            break;
        }
        if (out->n + n > cap) {
            cap = (out->n + n) * 2;
            uint64_t *grown = realloc(out->free, cap * sizeof *grown);
            if (!grown)
                abort();
            out->free = grown;
        }
        for (size_t i = 0; i < n; i++) {
            size_t pg;
            memcpy(&pg, (const unsigned char *)v.mv_data + (i + 1) * w, w);
            out->free[out->n++] = pg;
        }
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) {
        lmdb_pages_forget(out);
        return rc;
    }
    if (out->n)
        pages_sort(out->free, out->n);
    return 0;
}

/* True when page "pg" is in use by "p", for pages asked in ascending
 * order: "*at" is where the last answer left off in p's free list (start
 * at 0), so a walk of n pages costs n + p->n steps, not n searches. */
static bool
page_in_use(const CheckpointPages *p, uint64_t pg, size_t *at)
{
    while (*at < p->n && p->free[*at] < pg)
        ++*at;
    return pg <= p->last && !(*at < p->n && p->free[*at] == pg);
}

/* Writes the run of "n" pages at page "pg" and waits for it: 0 or errno. */
static int
run_sync(Store *st, uint64_t pg, uint64_t n, unsigned flags)
{
    off_t at = (off_t)(pg * st->page_size), len = (off_t)(n * st->page_size);
    return sync_file_range(st->data_fd, at, len, flags) == 0 ? 0 : errno;
}

/* Calls run_sync with "flags" for the meta pages — so that the disk's
 * newest is the checkpoint's or later, as after fdatasync (recovery puts
 * the checkpoint's back only over a later one) — and for each run of the
 * pages "now" uses that "was" did not (see above); "*first" the first page
 * of those, 0: none. */
static int
runs_sync(Store *st, const CheckpointPages *was, const CheckpointPages *now, unsigned flags,
          uint64_t *first)
{
    /* The candidates, ascending: the pages free then, those past its end. */
    uint64_t grown = now->last > was->last ? now->last - was->last : 0, run = 0, len = 0;
    size_t at = 0;
    *first = 0;
    int rc = run_sync(st, 0, 2, flags);
    if (rc)
        return rc;
    for (uint64_t i = 0; i <= was->n + grown; i++) {
        bool end = i == was->n + grown;
        uint64_t pg = end ? 0 : i < was->n ? was->free[i] : was->last + 1 + (i - was->n);
        bool used = !end && page_in_use(now, pg, &at);
        if (used && len && pg == run + len) {
            len++;
            continue;
        }
        if (len && (rc = run_sync(st, run, len, flags)))
            return rc;
        if (used && !*first)
            *first = pg;
        run = pg;
        len = used;
    }
    return 0;
}

/* True when a synchronous write to the data file syncs the file's metadata
 * whole — its size and the extents written since — as ext4's and XFS's
 * do (a sync of the inode's last journal transaction), so that pages
 * written by sync_file_range and one such write are as durable as after
 * fdatasync. */
static bool
metadata_synced_whole(Store *st)
{
    struct statfs fs;
    return fstatfs(st->data_fd, &fs) == 0 &&
           (fs.f_type == EXT4_SUPER_MAGIC || fs.f_type == XFS_SUPER_MAGIC);
}

/* Makes every page of checkpoint "now" durable (see above): the pages put
 * to use since this process's newest record "st->pages" when it may, the
 * whole data file otherwise.  The caller holds the sync lock, so no other
 * record is written meanwhile.  0, or an errno or LMDB code. */
static int
pages_sync(Store *st, const CheckpointPages *now)
{
    const CheckpointPages *was = &st->pages;
    if (!was->seq || was->seq != st->shared->record_seq || !st->pin || st->pin_id != was->id ||
        !metadata_synced_whole(st))
        return mdb_env_sync(st->env, 1);
    uint64_t first;
    int rc = runs_sync(st, was, now, SYNC_FILE_RANGE_WRITE, &first);
    if (!rc)
        rc = runs_sync(st, was, now,
                       SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                           SYNC_FILE_RANGE_WAIT_AFTER,
                       &first);
    if (rc == ENOSYS || rc == EOPNOTSUPP || rc == EINVAL)
        return mdb_env_sync(st->env, 1); /* a kernel without sync_file_range */
    if (rc)
        return rc;
    if (!first)
        return mdb_env_sync(st->env, 1); /* (no page to write again: below) */
    /* The pages are written; a synchronous write of one of them again, as
     * it is (nothing writes a page in use), syncs the file's metadata and
     * the disk's cache, without the pages nothing uses. */
    unsigned char *page = lmdb_alloc(st->page_size);
    struct iovec iov = {page, st->page_size};
    off_t at = (off_t)(first * st->page_size);
    rc = read_at(st->data_fd, page, st->page_size, at);
    ssize_t put = rc ? 0 : pwritev2(st->data_fd, &iov, 1, at, RWF_DSYNC);
    if (!rc && put < 0 && (errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL))
        rc = mdb_env_sync(st->env, 1); /* a kernel without RWF_DSYNC */
    else if (!rc && put != (ssize_t)st->page_size)
        rc = put < 0 ? errno : EIO;
    free(page);
    return rc;
}

/* Takes LMDB's writer lock — a write transaction "*writer", with the map
 * lock shared, that the caller aborts and unlocks — so that nothing
 * commits meanwhile; "*last" is the last committed transaction. */
static int
writer_lock(Store *st, MDB_txn **writer, uint64_t *last)
{
    int rc = lmdb_env_begin(st, 0, writer);
    if (!rc)
        *last = mdb_txn_id(*writer) - 1;
    return rc;
}

int
lmdb_checkpoint_take(Store *st)
{
    SyncShared *sh = st->shared;
    MDB_txn *writer, *pin = NULL;
    Checkpoint c;
    CheckpointPages pages = {0};
    uint64_t newest, id;
    memset(&c, 0, sizeof c);
    int rc = writer_lock(st, &writer, &id);
    if (rc)
        return rc;
    rc = lmdb_checkpoint_meta_read(st->data_fd, st->page_size, c.meta, &newest);
    if (!rc && newest != id)
        rc = MDB_CORRUPTED;
    if (!rc)
        rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &pin);
    if (!rc && mdb_txn_id(pin) != id)
        rc = MDB_CORRUPTED;
    if (!rc)
        lmdb_log_chain(st, id, &c);
    lmdb_abort(st, writer);
    /* The free list is read from the pin's snapshot, after the writer lock:
     * after a mass delete it holds a great many pages, and writers need
     * not wait while they are read and sorted. */
    if (!rc)
        rc = pages_read(pin, id, c.meta, &pages);
    pthread_rwlock_unlock(&st->map_lock);
    if (!rc) {
        uint64_t target = lmdb_counter_get(&sh->committed);
        lmdb_stat_add(&st->syncs, 1);
        rc = pages_sync(st, &pages);
        if (rc) {
            lmdb_failure("a checkpoint's sync of data.mdb (sync_file_range, fdatasync)", rc);
        } else {
            c.txnid = id;
            if ((rc = checkpoint_record(st, &c, true)))
                lmdb_failure("pwrite, fdatasync of " CHECKPOINT_FILE, rc);
        }
        if (lmdb_status_of(rc) == STORE_IO)
            lmdb_counter_raise(&sh->failed, target > id ? target : id);
    }
    lmdb_pages_forget(&st->pages);
    if (rc) {
        lmdb_pages_forget(&pages);
        if (pin)
            mdb_txn_abort(pin);
        return rc;
    }
    pages.seq = c.seq;
    st->pages = pages;
    store_pin_set(st, pin, id);
    __atomic_store_n(&st->checkpointed, true, __ATOMIC_RELEASE);
    __atomic_store_n(&sh->fast, 1, __ATOMIC_RELEASE);
    lmdb_counter_raise(&sh->synced, id);
    return 0;
}

/* Makes the store safe (see "Durability"): under the writer lock syncs the
 * file, records "trust the disk" and clears "fast".  The caller holds
 * the sync lock.  0 or an errno or LMDB code. */
static int
checkpoint_trust_disk(Store *st)
{
    SyncShared *sh = st->shared;
    MDB_txn *writer;
    Checkpoint c;
    uint64_t id;
    memset(&c, 0, sizeof c);
    int rc = writer_lock(st, &writer, &id);
    if (rc)
        return rc;
    lmdb_stat_add(&st->syncs, 1);
    rc = mdb_env_sync(st->env, 1);
    if (!rc) {
        c.txnid = id;
        c.trust_disk = true;
        rc = checkpoint_record(st, &c, false);
    }
    if (!rc) {
        /* Nothing commits meanwhile: this process holds the writer lock. */
        __atomic_store_n(&sh->fast, 0, __ATOMIC_RELEASE);
        lmdb_counter_raise(&sh->synced, id);
    }
    lmdb_abort(st, writer);
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
}

/* True when process "st", whose last commit is "mine", is to take a
 * checkpoint: having committed, it finds the store safe; or the store has
 * commits after the newest record, which is this process's, and no record
 * was written within the interval (so one process takes them in turn, and
 * each syncs only the pages put to use since the last: see pages_sync);
 * or it committed after the newest record, another's, and none was
 * written within two intervals (that process may have closed or died).
 * "locked": the caller holds the sync lock; without it, whose the newest
 * record is stays unknown and the answer may be true where it is not. */
static bool
checkpoint_due(Store *st, uint64_t mine, bool locked)
{
    SyncShared *sh = st->shared;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t since = monotonic_ns(&now) - __atomic_load_n(&sh->record_at, __ATOMIC_ACQUIRE);
    uint64_t interval = (uint64_t)CHECKPOINT_INTERVAL_MS * 1000000u;
    uint64_t record = lmdb_counter_get(&sh->record);
    if (mine && !__atomic_load_n(&sh->fast, __ATOMIC_ACQUIRE))
        return true;
    if (!locked || (st->pages.seq && st->pages.seq == sh->record_seq))
        return record < lmdb_counter_get(&sh->committed) && since >= interval;
    return record < mine && since >= 2 * interval;
}

/* Every CHECKPOINT_INTERVAL_MS: takes a checkpoint when checkpoint_due
 * says so (so the processes of a store take one an interval between
 * them), and drops this process's pin once a newer record exists.  A pin
 * keeps LMDB from reusing every page freed after it, so the data file
 * grows by what is written between two checkpoints: the interval bounds
 * that as well as what a machine crash may undo with sync off. */
static void
checkpoint_tick(Store *st)
{
    SyncShared *sh = st->shared;
    uint64_t mine = __atomic_load_n(&st->last_commit, __ATOMIC_ACQUIRE);
    bool stale_pin = __atomic_load_n(&st->pin_id, __ATOMIC_ACQUIRE) < lmdb_counter_get(&sh->record);
    if (!stale_pin && !checkpoint_due(st, mine, false))
        return;
    lmdb_sync_lock(st);
    if (checkpoint_due(st, mine, true))
        (void)lmdb_checkpoint_take(st);
    if (st->pin && st->pin_id < lmdb_counter_get(&sh->record))
        store_pin_set(st, NULL, UINT64_MAX);
    lmdb_sync_unlock(st);
}

/* The checkpoint thread: checkpoint_tick() every CHECKPOINT_INTERVAL_MS
 * until the store closes.  It says it has started ("ticking") before its
 * first wait, which lmdb_checkpoint_ticker_start waits for. */
static void *
checkpoint_ticker(void *arg)
{
    Store *st = arg;
    pthread_mutex_lock(&st->tick_mu);
    st->ticking = true;
    pthread_cond_broadcast(&st->tick_cv);
    while (!st->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)CHECKPOINT_INTERVAL_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (!st->stopping &&
               pthread_cond_timedwait(&st->tick_cv, &st->tick_mu, &until) != ETIMEDOUT)
            ;
        if (st->stopping)
            break;
        pthread_mutex_unlock(&st->tick_mu);
        store_fork_hold(); /* it allocates */
        checkpoint_tick(st);
        store_fork_release();
        pthread_mutex_lock(&st->tick_mu);
    }
    pthread_mutex_unlock(&st->tick_mu);
    return NULL;
}

int
lmdb_checkpoint_ticker_start(Store *st)
{
    store_fork_guard();
    /* The thread takes no signals: they stay with the caller's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&st->ticker, NULL, checkpoint_ticker, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc)
        return rc;
    /* A thread starting up allocates (its runtime's own state) outside
     * the fork lock (backend.h): wait until it is in its loop, where it
     * allocates only under the lock. */
    pthread_mutex_lock(&st->tick_mu);
    while (!st->ticking)
        pthread_cond_wait(&st->tick_cv, &st->tick_mu);
    pthread_mutex_unlock(&st->tick_mu);
    return 0;
}

int
lmdb_checkpoint_first(Store *st)
{
    if (!st->checkpoints || __atomic_load_n(&st->checkpointed, __ATOMIC_ACQUIRE))
        return 0;
    lmdb_sync_lock(st);
    int rc = st->checkpointed ? 0 : lmdb_checkpoint_take(st);
    lmdb_sync_unlock(st);
    return rc;
}

void
lmdb_unpin(Store *st)
{
    lmdb_sync_lock(st);
    if (st->pin && st->pin_id >= lmdb_counter_get(&st->shared->record))
        (void)checkpoint_trust_disk(st);
    store_pin_set(st, NULL, UINT64_MAX);
    lmdb_sync_unlock(st);
}

int
lmdb_unpin_freed(Store *st, int attempt)
{
    if (!st->checkpoints)
        return -1;
    if (attempt > 0) {
        struct timespec pause = {0, 2L * CHECKPOINT_INTERVAL_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    lmdb_sync_lock(st);
    int rc = lmdb_checkpoint_take(st);
    lmdb_sync_unlock(st);
    return rc;
}
