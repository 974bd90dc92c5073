/* lmdb_env.c — the LMDB environment of a store: opening and closing it,
 * the store's format (recognised, created or upgraded) and its named
 * databases, the options (QUEUEFS_MAP_SIZE, reading only), and the one
 * mapping of LMDB's errors to StoreStatus.  See lmdb_internal.h.
 *
 * Format 2 added the deadline entries' kinds and the counts.  A store of
 * format 1 is upgraded by the first process that opens it: every table is
 * counted once, its waiting entries as unsorted (their records were filed
 * before holds and delays were told apart), and the format becomes 2.
 * Format 3 keeps a queue record's engine columns beside the caller's value
 * (lmdb_upgrade.c brings earlier stores to it); format 4 adds a record's
 * errors to them, format 5 its completed_at and rerun and the "done"
 * database (KEEP) — a record of an earlier version reads as having none,
 * so those upgrades only create the database and mark the format.
 * Format 6 keeps AT MOST … EVERY's instants in chunks (lmdb_groups.c):
 * its upgrade moves each queue's array of them there.  A store of format 5
 * opened only to read answers as if its rate-limited queues had handed
 * nothing out lately (it claims nothing, and a wait wakes early at worst).
 */
#include "lmdb_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define STORE_FORMAT_MAGIC "queuefs-store"
#define STORE_FORMAT_VERSION 6u     /* AT MOST … EVERY's instants in chunks */
#define STORE_FORMAT_RATE_CHUNKS 6u /* the first with them */
#define STORE_FORMAT_COUNTED 2u     /* the first format with counts */
#define STORE_FORMAT_COLUMNS 3u     /* the first with the engine's columns */
#define STORE_MAX_DBS 8
#define STORE_MAX_READERS 1024

_Thread_local int lmdb_full_seen;

/* lmdb_status_of, without explaining a failure. */
static int
status_of(int rc)
{
    switch (rc) {
    case MDB_SUCCESS: return STORE_OK;
    case MDB_NOTFOUND: return STORE_NOTFOUND;
    case MDB_KEYEXIST: return STORE_EXISTS;
    case MDB_MAP_FULL: lmdb_full_seen = FULL_MAP; return STORE_FULL;
    case MDB_TXN_FULL: lmdb_full_seen = FULL_TXN; return STORE_FULL;
    case MDB_PAGE_FULL:
    case MDB_CURSOR_FULL:
    case ENOSPC: return STORE_FULL;
    case MDB_BAD_VALSIZE: return STORE_TOOBIG;
    case MDB_READERS_FULL:
    case MDB_MAP_RESIZED:
    case MDB_TLS_FULL:
    case MDB_DBS_FULL:
    case EAGAIN:
    case EBUSY: return STORE_BUSY;
    case MDB_INVALID:
    case MDB_CORRUPTED:
    case MDB_VERSION_MISMATCH:
    case MDB_PAGE_NOTFOUND:
    case MDB_INCOMPATIBLE:
    case MDB_BAD_RSLOT:
    case MDB_BAD_DBI: return STORE_CORRUPT;
    default: /* EIO, MDB_PANIC, MDB_BAD_TXN, other errnos */ return STORE_IO;
    }
}

int
lmdb_status_of(int rc)
{
    int status = status_of(rc);
    if ((status == STORE_IO || status == STORE_CORRUPT) && !*store_error_detail())
        lmdb_failure("LMDB", rc);
    return status;
}

char *
lmdb_path(const char *location, const char *name)
{
    size_t len = strlen(location) + 1 + strlen(name) + 1;
    char *path = lmdb_alloc(len);
    snprintf(path, len, "%s/%s", location, name);
    return path;
}

int
lmdb_open_in(const char *location, const char *name, int flags)
{
    char *path = lmdb_path(location, name);
    int fd = open(path, flags | O_CLOEXEC, 0600);
    int err = errno;
    free(path);
    errno = err;
    return fd;
}

int
lmdb_failure(const char *call, int rc)
{
    if (rc > 0)
        store_error_detail_set("%s: %s (errno %d)", call, strerror(rc), rc);
    else if (rc < 0)
        store_error_detail_set("%s: %s", call, mdb_strerror(rc));
    return rc;
}

/* Writes "location: what[: LMDB's message for rc]" into errbuf (when there
 * is one); rc == 0 adds no LMDB message. */
static void
store_open_message(char *errbuf, size_t errlen, const char *location, const char *what, int rc)
{
    if (!errbuf || !errlen)
        return;
    if (rc)
        snprintf(errbuf, errlen, "%s: %s: %s", location, what, mdb_strerror(rc));
    else
        snprintf(errbuf, errlen, "%s: %s", location, what);
}

/* Opens one named database of the store (creating it when "create"). */
static int
store_dbi_open(MDB_txn *txn, const char *name, unsigned flags, bool create, MDB_dbi *dbi)
{
    return mdb_dbi_open(txn, name, flags | (create ? MDB_CREATE : 0), dbi);
}

/* Opens a database that stores of earlier formats lack — "groups" (AT
 * MOST … PER) or "done" (KEEP): a write creates it; read only, a store
 * without it has no entry of it, and the handle is never used (only
 * writes file groups and done records). */
static int
store_later_dbi_open(MDB_txn *txn, const char *name, unsigned flags, bool write, MDB_dbi *dbi)
{
    int rc = store_dbi_open(txn, name, flags, write, dbi);
    return rc == MDB_NOTFOUND && !write ? 0 : rc;
}

/* Writes the format marker of this format. */
static int
store_format_mark(Store *st, MDB_txn *txn)
{
    unsigned char ver[sizeof STORE_FORMAT_MAGIC - 1 + 4];
    memcpy(ver, STORE_FORMAT_MAGIC, sizeof STORE_FORMAT_MAGIC - 1);
    be_put32(ver + sizeof STORE_FORMAT_MAGIC - 1, STORE_FORMAT_VERSION);
    MDB_val k = {7, "version"}, v = {sizeof ver, ver};
    return lmdb_put(st, txn, st->sys, &k, &v);
}

/* Writes the format marker and the first table id of a new store. */
static int
store_format_init(Store *st, MDB_txn *txn)
{
    unsigned char next[4];
    be_put32(next, 1);
    int rc = store_format_mark(st, txn);
    if (rc)
        return rc;
    MDB_val k = {13, "next_table_id"}, v = {4, next};
    return lmdb_put(st, txn, st->sys, &k, &v);
}

/* Checks the format marker: MDB_SUCCESS for this format or an earlier one
 * (its number in "*version"), MDB_INVALID for anything else (a foreign
 * store or a future version). */
static int
store_format_check(MDB_txn *txn, MDB_dbi sys, uint32_t *version)
{
    MDB_val k = {7, "version"}, v;
    size_t mlen = sizeof STORE_FORMAT_MAGIC - 1;
    int rc = mdb_get(txn, sys, &k, &v);
    if (rc == MDB_NOTFOUND)
        return MDB_INVALID;
    if (rc)
        return rc;
    if (v.mv_size != mlen + 4 || memcmp(v.mv_data, STORE_FORMAT_MAGIC, mlen) != 0)
        return MDB_INVALID;
    *version = be_get32((const unsigned char *)v.mv_data + mlen);
    if (*version < 1 || *version > STORE_FORMAT_VERSION)
        return MDB_INVALID;
    return MDB_SUCCESS;
}

/* store_format_upgrade's step for each table: counts it. */
static int
upgrade_table(void *ctx, const char *name, uint32_t id, StoreBytes def)
{
    (void)name;
    (void)def;
    return lmdb_table_recount(ctx, id);
}

/* Brings a store of format "version" to this one, in its open write
 * transaction "txn": counts every table (format 1 had no counts), then
 * gives every record its columns (format 3), moves the instants of AT
 * MOST … EVERY to chunks (format 6), then marks it of this format
 * (formats 4 and 5 read a record of an earlier version as it is: one
 * without errors, not done, not marked — the "done" database was created
 * on the way in; the mark keeps a queuefs that knows none of them from
 * opening it). */
static int
store_format_upgrade(Store *st, MDB_txn *txn, uint32_t version)
{
    StoreTxn t = {.ops = &store_lmdb_ops, .st = st, .txn = txn, .write = true};
    int rc = version < STORE_FORMAT_COUNTED ? lmdb_table_each(&t, upgrade_table, &t) : 0;
    if (rc == STORE_OK && version < STORE_FORMAT_COLUMNS)
        rc = lmdb_upgrade_columns(&t);
    if (rc == STORE_OK && version < STORE_FORMAT_RATE_CHUNKS)
        rc = lmdb_rate_upgrade(&t);
    if (rc == STORE_OK)
        rc = lmdb_counts_flush(&t);
    return rc ? rc : store_format_mark(st, txn);
}

/* For a store opened for reading only: recognises its databases and
 * format in a read transaction.  MDB_INVALID when it is not a queuefs
 * store (or an empty one), MDB_VERSION_MISMATCH when it is of an earlier
 * format that only a write can bring up to date. */
static int
store_schema_read(Store *st)
{
    MDB_txn *txn;
    int rc = lmdb_env_begin(st, MDB_RDONLY, &txn);
    if (rc)
        return rc;
    uint32_t version = STORE_FORMAT_VERSION;
    if ((rc = mdb_dbi_open(txn, NULL, 0, &st->main)) ||
        (rc = store_dbi_open(txn, "sys", 0, false, &st->sys)) ||
        (rc = store_format_check(txn, st->sys, &version)) ||
        (rc = store_dbi_open(txn, "catalog", 0, false, &st->catalog)) ||
        (rc = store_dbi_open(txn, "records", 0, false, &st->records)) ||
        (rc = store_dbi_open(txn, "ready", MDB_DUPSORT, false, &st->ready)) ||
        (rc = store_dbi_open(txn, "deadline", 0, false, &st->deadline)) ||
        (rc = store_dbi_open(txn, "meta", 0, false, &st->meta)) ||
        (rc = store_later_dbi_open(txn, "groups", MDB_DUPSORT, false, &st->group_index)) ||
        (rc = store_later_dbi_open(txn, "done", 0, false, &st->done_index))) {
        mdb_txn_abort(txn);
        pthread_rwlock_unlock(&st->map_lock);
        return rc == MDB_NOTFOUND ? MDB_INVALID : rc;
    }
    if (version < STORE_FORMAT_COLUMNS) {
        mdb_txn_abort(txn);
        pthread_rwlock_unlock(&st->map_lock);
        return MDB_VERSION_MISMATCH;
    }
    /* Committed, a read transaction keeps the handles it opened. */
    rc = mdb_txn_commit(txn);
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
}

/* In one write transaction: recognises (or, in an empty environment,
 * creates) the store's databases and format marker.  An environment with
 * other contents yields MDB_INVALID or MDB_INCOMPATIBLE.  A map another
 * process grew since this one opened the environment is adopted first. */
static int
store_schema_open(Store *st)
{
    MDB_txn *txn;
    MDB_dbi main_dbi;
    MDB_stat ms;
    bool fresh = false;
    if (st->read_only)
        return store_schema_read(st);
    int rc = lmdb_env_begin(st, 0, &txn);
    if (rc)
        return rc;
    if ((rc = mdb_dbi_open(txn, NULL, 0, &main_dbi)))
        goto fail;
    st->main = main_dbi;
    rc = store_dbi_open(txn, "sys", 0, false, &st->sys);
    if (rc == MDB_NOTFOUND) {
        if ((rc = mdb_stat(txn, main_dbi, &ms)))
            goto fail;
        if (ms.ms_entries != 0) {
            rc = MDB_INVALID;
            goto fail;
        }
        fresh = true;
        rc = store_dbi_open(txn, "sys", 0, true, &st->sys);
    }
    if (rc)
        goto fail;
    uint32_t version = STORE_FORMAT_VERSION;
    if ((rc = fresh ? store_format_init(st, txn) : store_format_check(txn, st->sys, &version)))
        goto fail;
    if ((rc = store_dbi_open(txn, "catalog", 0, fresh, &st->catalog)) ||
        (rc = store_dbi_open(txn, "records", 0, fresh, &st->records)) ||
        (rc = store_dbi_open(txn, "ready", MDB_DUPSORT, fresh, &st->ready)) ||
        (rc = store_dbi_open(txn, "deadline", 0, fresh, &st->deadline)) ||
        (rc = store_dbi_open(txn, "meta", 0, fresh, &st->meta)) ||
        (rc = store_later_dbi_open(txn, "groups", MDB_DUPSORT, true, &st->group_index)) ||
        (rc = store_later_dbi_open(txn, "done", 0, true, &st->done_index)))
        goto fail;
    if (version < STORE_FORMAT_VERSION && (rc = store_format_upgrade(st, txn, version)))
        goto fail_status;
    uint64_t id;
    rc = lmdb_commit(st, txn, &id);
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
fail_status:
    lmdb_abort(st, txn);
    pthread_rwlock_unlock(&st->map_lock);
    return rc == STORE_FULL ? MDB_MAP_FULL : rc == STORE_CORRUPT ? MDB_CORRUPTED : EIO;
fail:
    lmdb_abort(st, txn);
    pthread_rwlock_unlock(&st->map_lock);
    return rc == MDB_NOTFOUND ? MDB_INVALID : rc;
}

/* Creates directory "location" (mode 0700) unless it exists. */
static int
store_dir_make(const char *location)
{
    if (mkdir(location, 0700) == 0 || errno == EEXIST)
        return 0;
    return errno;
}

/* Reads QUEUEFS_MAP_SIZE into *out (0 when unset): bytes, or a number with
 * a K, M or G suffix.  -1 when it is malformed or zero. */
static int
map_size_from_env(size_t *out)
{
    const char *s = getenv("QUEUEFS_MAP_SIZE");
    unsigned shift = 0;
    char *end;
    *out = 0;
    if (!s || !*s)
        return 0;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: break;
    }
    if (*end || n == 0 || n > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)n << shift;
    return 0;
}

/* Gives LMDB's lock file, when it exists, its disk blocks now, so that
 * touching a reader slot never finds a full disk (a mapped page that cannot
 * be backed is a crash, not an error).  Runs before this process opens the
 * environment: closing a descriptor of the lock file would drop LMDB's
 * fcntl locks on it. */
static void
store_lockfile_allocate(const char *location)
{
    struct stat sb;
    int fd = lmdb_open_in(location, "lock.mdb", O_RDWR);
    if (fd < 0)
        return;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0)
        (void)fallocate(fd, 0, 0, sb.st_size); /* no emulation: never writes */
    close(fd);
}

/* Creates the LMDB environment of "st" (not yet open) with the store's
 * limits and a map of "map_size" bytes: 0 or an LMDB code. */
static int
store_env_create(Store *st, size_t map_size)
{
    int rc = mdb_env_create(&st->env);
    if (!rc && !(rc = mdb_env_set_maxdbs(st->env, STORE_MAX_DBS)) &&
        !(rc = mdb_env_set_maxreaders(st->env, STORE_MAX_READERS)))
        rc = mdb_env_set_mapsize(st->env, map_size);
    return rc;
}

/* store_env_open for a store opened for reading only: LMDB read-only, no
 * checkpoint file, and the shared counters in memory of this process's own
 * (it neither syncs nor commits, and none of its waits is on another's
 * write). */
static int
store_env_open_read_only(Store *st, const char *location, size_t map_size, const char **what)
{
    MDB_stat ms;
    int rc, ckpt_fd;
    *what = "cannot read the store, which stopped uncleanly and is not recovered yet: a "
            "process that may write it recovers it (mount it, or run queuefs-sql as its owner)";
    rc = lmdb_checkpoint_unrecovered(location, &ckpt_fd);
    if (!rc) {
        *what = "cannot create the environment";
        rc = store_env_create(st, map_size);
    }
    if (!rc) {
        *what = "cannot open the environment for reading";
        rc = mdb_env_open(st->env, location, MDB_NOTLS | MDB_RDONLY, 0600);
    }
    if (ckpt_fd >= 0)
        close(ckpt_fd); /* with its lock: the environment is open */
    struct statvfs fs;
    if (rc == EACCES && statvfs(location, &fs) == 0 && (fs.f_flag & ST_RDONLY)) {
        /* The lock file is another user's on a read-only filesystem: read
         * without locks, as LMDB itself does there when it may open it. */
        mdb_env_close(st->env);
        st->env = NULL;
        if ((rc = store_env_create(st, map_size)))
            return rc;
        rc = mdb_env_open(st->env, location, MDB_NOTLS | MDB_RDONLY | MDB_NOLOCK, 0600);
    }
    if (rc == EACCES)
        *what = "cannot open lock.mdb, which LMDB writes even to read (only on a read-only "
                "filesystem does it read without)";
    if (rc || (rc = mdb_env_get_fd(st->env, &st->data_fd)) || (rc = mdb_env_stat(st->env, &ms)))
        return rc;
    st->page_size = ms.ms_psize;
    *what = "cannot size the map";
    if ((rc = lmdb_map_init(st, map_size)))
        return rc;
    SyncShared *sh =
        mmap(NULL, SYNC_FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return errno;
    sh->magic = SYNC_MAGIC;
    st->shared = sh;
    st->sync_fd = -1;
    st->checkpoints = false;
    return 0;
}

/* Opens the environment of "st" at "location" with its first checkpoint:
 * recovers the store after an unclean stop when no other process has it
 * open (see lmdb_checkpoint.h), maps the shared counters, opens LMDB and
 * takes a checkpoint before any commit (which also clears the reader slots
 * of dead processes).  "*what" says what failed.  0 or an errno or LMDB
 * code. */
static int
store_env_open(Store *st, const char *location, size_t map_size, const char **what)
{
    unsigned flags = MDB_NOTLS | MDB_NOMETASYNC; /* safe until a checkpoint */
    MDB_stat ms;
    unsigned char meta[2][CHECKPOINT_META_LEN];
    uint64_t newest;
    bool alone;
    int rc;

    if (st->read_only)
        return store_env_open_read_only(st, location, map_size, what);
    *what = "cannot open " CHECKPOINT_FILE;
    if ((st->ckpt_fd = lmdb_checkpoint_open(location)) < 0)
        return -st->ckpt_fd;
    /* Openers one at a time, from here until this one holds LMDB's lock:
     * "alone" stays true until then, and the counters it resets are used
     * by no other process yet. */
    *what = "cannot lock " CHECKPOINT_FILE " for opening";
    if ((rc = lmdb_open_lock(st->ckpt_fd, F_WRLCK)))
        return rc;
    *what = "cannot tell whether another process has the store open";
    if ((rc = lmdb_store_alone(location, &alone)))
        return rc;
    *what = "cannot recover the store after an unclean stop";
    if (alone && (rc = lmdb_checkpoint_recover(st->ckpt_fd, location))) {
        if (rc == EUCLEAN)
            *what =
                "cannot recover the store after an unclean stop: data.mdb is older than " CHECKPOINT_FILE
                " (a copy of it alone was put back?)";
        return rc;
    }
    *what = "cannot open " SYNC_FILE;
    if ((rc = lmdb_sync_open(st, location, alone)))
        return rc;
    *what = "cannot create the environment";
    if ((rc = store_env_create(st, map_size)))
        return rc;
    *what = "cannot open the environment";
    store_lockfile_allocate(location);
    if ((rc = mdb_env_open(st->env, location, flags, 0600)) ||
        (rc = mdb_env_get_fd(st->env, &st->data_fd)) || (rc = mdb_env_stat(st->env, &ms)))
        return rc;
    *what = "cannot unlock " CHECKPOINT_FILE;
    if ((rc = lmdb_open_lock(st->ckpt_fd, F_UNLCK)))
        return rc;
    st->page_size = ms.ms_psize;
    *what = "cannot open " LOG_FILE;
    if ((rc = lmdb_log_open(st, location)))
        return rc;
    *what = "cannot size the map";
    if ((rc = lmdb_map_init(st, map_size)))
        return rc;
    (void)lmdb_room_pages(st);
    *what = "cannot take a checkpoint of the store";
    st->checkpoints = st->page_size >= CHECKPOINT_META_LEN &&
                      lmdb_checkpoint_meta_read(st->data_fd, st->page_size, meta, &newest) == 0;
    if (!st->checkpoints) {
        /* Meta pages of another layout: always safe. */
        if ((rc = mdb_reader_check(st->env, NULL)))
            return rc;
        return lmdb_sync_all(st);
    }
    /* A process takes its first checkpoint before its first commit, so an
     * open that only reads waits for no writer and syncs nothing; a new
     * store's first commit is the schema's, just after this. */
    return lmdb_last_txnid(st) == 0 ? lmdb_checkpoint_first(st) : 0;
}

/* How many locks store_lock makes or destroys. */
enum { STORE_LOCKS = 7 };

/* Makes (when "make") or destroys lock "i" of "st", 0 .. STORE_LOCKS - 1
 * in the order they are made (the last, tick_cv, waits by the clock of
 * "monotonic"): 0 or pthread's errno.  Each lock is made and destroyed
 * here alone, so that the two stay in step. */
static int
store_lock(Store *st, int i, bool make, const pthread_condattr_t *monotonic)
{
    switch (i) {
    case 0:
        return make ? pthread_rwlock_init(&st->map_lock, NULL)
                    : pthread_rwlock_destroy(&st->map_lock);
    case 1:
        return make ? pthread_mutex_init(&st->group_mu, NULL)
                    : pthread_mutex_destroy(&st->group_mu);
    case 2:
        return make ? pthread_mutex_init(&st->sync_mu, NULL) : pthread_mutex_destroy(&st->sync_mu);
    case 3:
        return make ? pthread_cond_init(&st->sync_cv, NULL) : pthread_cond_destroy(&st->sync_cv);
    case 4:
        return make ? pthread_cond_init(&st->group_cv, NULL) : pthread_cond_destroy(&st->group_cv);
    case 5:
        return make ? pthread_mutex_init(&st->tick_mu, NULL) : pthread_mutex_destroy(&st->tick_mu);
    case 6:
        return make ? pthread_cond_init(&st->tick_cv, monotonic)
                    : pthread_cond_destroy(&st->tick_cv);
    default: return EINVAL;
    }
}

/* Destroys the first "made" locks of "st", the last made first. */
static void
store_locks_destroy(Store *st, int made)
{
    while (made-- > 0)
        store_lock(st, made, false, NULL);
}

/* Releases what lmdb_open() set up; "locks" says whether its locks were
 * initialised. */
static void
store_free(Store *st, bool locks)
{
    if (st->env)
        mdb_env_close(st->env);
    if (st->shared) {
        munmap(st->shared, SYNC_FILE_LEN);
        close(st->sync_fd);
    }
    if (st->ckpt_fd >= 0)
        close(st->ckpt_fd);
    if (st->log_fd >= 0)
        close(st->log_fd);
    free(st->wlog.data);
    lmdb_pages_forget(&st->pages);
    pthread_mutex_destroy(&st->log_sync_mu);
    pthread_mutex_destroy(&st->log_mu);
    if (locks)
        store_locks_destroy(st, STORE_LOCKS);
    free(st);
}

/* Initialises the locks of "st": 0 or an errno (then none is left). */
static int
store_locks_init(Store *st)
{
    pthread_condattr_t monotonic;
    int rc = pthread_condattr_init(&monotonic);
    if (rc)
        return rc;
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    int made = 0;
    while (made < STORE_LOCKS && !(rc = store_lock(st, made, true, &monotonic)))
        made++;
    pthread_condattr_destroy(&monotonic);
    if (rc)
        store_locks_destroy(st, made);
    return rc;
}

int
lmdb_open(const char *location, const StoreOptions *opts, Store **out, char *errbuf, size_t errlen)
{
    Store *st = NULL;
    const char *what = "cannot create the directory";
    size_t map_size = opts ? opts->map_size : 0;
    bool locks = false;
    int rc;

    *out = NULL;
    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!map_size && map_size_from_env(&map_size) != 0) {
        store_open_message(errbuf, errlen, location,
                           "QUEUEFS_MAP_SIZE: expected a size in bytes such as 67108864 or 64M", 0);
        return STORE_INVALID;
    }
    if (!map_size)
        map_size = STORE_DEFAULT_MAP_SIZE;
    bool read_only = opts && opts->read_only;
    if (read_only) {
        struct stat where;
        what = "cannot open the store's directory";
        rc = stat(location, &where) ? errno : S_ISDIR(where.st_mode) ? 0 : ENOTDIR;
    } else {
        rc = store_dir_make(location);
    }
    if (rc)
        goto fail;
    st = lmdb_alloc(sizeof *st);
    memset(st, 0, sizeof *st);
    st->ops = &store_lmdb_ops;
    st->read_only = read_only;
    st->upgrade = opts ? opts->upgrade : NULL;
    st->upgrade_ctx = opts ? opts->upgrade_ctx : NULL;
    struct stat dir;
    if (stat(location, &dir) == 0) {
        st->owner_known = true;
        st->owner_uid = dir.st_uid;
        st->owner_gid = dir.st_gid;
    }
    st->sync = !opts || opts->sync;
    st->sync_fd = -1;
    st->ckpt_fd = -1;
    st->log_fd = -1;
    /* Default mutexes: their initialisation does not fail. */
    pthread_mutex_init(&st->log_mu, NULL);
    pthread_mutex_init(&st->log_sync_mu, NULL);
    st->pin_id = UINT64_MAX;
    st->queue_tail = &st->queue;
    what = "cannot create a lock";
    if ((rc = store_locks_init(st)))
        goto fail;
    locks = true;
    if ((rc = store_env_open(st, location, map_size, &what)))
        goto fail;
    what = "cannot read the store's format";
    /* An upgrade rewrites every record in one transaction: the map grows
     * for it as a write's would. */
    while ((rc = store_schema_open(st)) == MDB_MAP_FULL && lmdb_map_grow(st) == 0)
        ;
    if (rc) {
        if (rc == MDB_INVALID || rc == MDB_INCOMPATIBLE) {
            store_open_message(errbuf, errlen, location,
                               "not a queuefs store, or of a newer format", 0);
            errbuf = NULL;
        } else if (rc == MDB_VERSION_MISMATCH && read_only) {
            store_open_message(errbuf, errlen, location,
                               "of an earlier format, which only a process that may write "
                               "the store brings up to date",
                               0);
            errbuf = NULL;
        }
        goto fail;
    }
    what = "cannot start the checkpoint thread";
    if (st->checkpoints && (rc = lmdb_checkpoint_ticker_start(st)))
        goto fail;
    *out = st;
    return STORE_OK;
fail:
    store_open_message(errbuf, errlen, location, what, rc);
    if (st && st->pin && st->shared)
        lmdb_unpin(st);
    if (st)
        store_free(st, locks);
    return lmdb_status_of(rc);
}

void
lmdb_close(Store *st)
{
    if (!st)
        return;
    if (st->ticking) {
        pthread_mutex_lock(&st->tick_mu);
        st->stopping = true;
        pthread_cond_broadcast(&st->tick_cv);
        pthread_mutex_unlock(&st->tick_mu);
        pthread_join(st->ticker, NULL);
    }
    if (st->checkpoints)
        lmdb_unpin(st);
    store_free(st, true);
}

int64_t
lmdb_now(Store *st)
{
    struct timespec ts;
    (void)st;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
lmdb_stats(Store *st, StoreStats *out)
{
    pthread_mutex_lock(&st->group_mu);
    out->waiting = st->waiting;
    pthread_mutex_unlock(&st->group_mu);
    out->writes = __atomic_load_n(&st->writes, __ATOMIC_RELAXED);
    out->groups = __atomic_load_n(&st->groups, __ATOMIC_RELAXED);
    out->syncs = __atomic_load_n(&st->syncs, __ATOMIC_RELAXED);
    out->grows = __atomic_load_n(&st->grows, __ATOMIC_RELAXED);
    out->map_size = __atomic_load_n(&st->map_size, __ATOMIC_RELAXED);
}

bool
lmdb_owner(StoreTxn *txn, uint32_t *uid, uint32_t *gid)
{
    const Store *st = txn->st;
    if (!st->owner_known)
        return false;
    *uid = (uint32_t)st->owner_uid;
    *gid = (uint32_t)st->owner_gid;
    return true;
}

int
lmdb_health(StoreTxn *txn, StoreHealth *out)
{
    (void)txn;
    *out = (StoreHealth){.known = false}; /* LMDB reuses its pages itself */
    return STORE_OK;
}

const StoreOps store_lmdb_ops = {
    .name = "lmdb",
#define STORE_OP(ret, op, params, args, self) .op = lmdb_##op,
#define STORE_VOID_OP(op, params, args, self) .op = lmdb_##op,
#include "ops.def"
};
