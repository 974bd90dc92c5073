/* lmdb_log.c — the redo log "queuefs.log" (see lmdb_log.h): noting a
 * write transaction's changes, appending them at its commit, flushing the
 * log for a durable write, the chain a checkpoint starts, and replaying it
 * after a machine crash.
 *
 * An entry: a header of HEADER_LEN bytes — magic, kind, the chain's epoch,
 * the transaction id, the entry's length (a multiple of 8) and a CRC32 of
 * the rest of the header and the changes — then the changes, each [u8 op]
 * [u8 database] [u16 key length] [u32 value length] key value.  A "wrap"
 * entry says the chain goes on at the start of the ring; so does a tail
 * of the ring shorter than a header.  Positions are bytes since the ring
 * was first written, ever growing: the offset in the file is a position
 * modulo LOG_LEN.
 */
#include "lmdb_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#define HEADER_LEN 32
#define ENTRY_MAGIC 0x474f4c51u /* "QLOG" */
#define KIND_COMMIT 1u
#define KIND_WRAP 2u
#define OP_PUT 1
#define OP_DEL 2     /* one value (or the key, unsorted) */
#define OP_DEL_ALL 3 /* the key and every value */
#define OP_LEN 8
#define REPLAY_TRIES 8 /* map doublings a replay may ask for */

/* The databases a change names, by number: LMDB's main database, then the
 * store's named ones (as lmdb_env.c opens them). */
static const struct {
    const char *name;
    unsigned flags;
} log_dbs[] = {
    {NULL, 0},       {"sys", 0},  {"catalog", 0},          {"records", 0}, {"ready", MDB_DUPSORT},
    {"deadline", 0}, {"meta", 0}, {"groups", MDB_DUPSORT}, {"done", 0},
};
#define LOG_DBS (sizeof log_dbs / sizeof log_dbs[0])

/* The number of database "dbi" of the store, or -1. */
static int
db_number(const Store *st, MDB_dbi dbi)
{
    const MDB_dbi all[LOG_DBS] = {st->main,     st->sys,  st->catalog,     st->records,   st->ready,
                                  st->deadline, st->meta, st->group_index, st->done_index};
    for (size_t i = 0; i < LOG_DBS; i++)
        if (all[i] == dbi)
            return (int)i;
    return -1;
}

static uint64_t
align8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

/* ---- the file ---- */

int
lmdb_log_open(Store *st, const char *location)
{
    char *path = lmdb_path(location, LOG_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat sb;
    int rc = fd < 0 ? errno : fstat(fd, &sb) ? errno : 0;
    if (!rc && sb.st_size < (off_t)LOG_LEN) {
        /* Written, not only allocated, and synced once: a later flush of
         * an entry then writes data alone, with no extent to convert.  A
         * disk without room for it keeps the store without a log. */
        static const unsigned char zeros[1 << 16];
        bool room = true;
        for (off_t off = sb.st_size; room && off < (off_t)LOG_LEN; off += sizeof zeros)
            room = pwrite(fd, zeros, sizeof zeros, off) == (ssize_t)sizeof zeros;
        if (!room || fsync(fd)) {
            close(fd);
            fd = -1;
            unlink(path);
        }
    }
    free(path);
    if (rc) {
        if (fd >= 0)
            close(fd);
        return rc;
    }
    st->log_fd = fd;
    return 0;
}

/* ---- noting changes ---- */

/* Notes change "op" of database "dbi": key "k", value "v" (may be NULL). */
static void
note(Store *st, int op, MDB_dbi dbi, const MDB_val *k, const MDB_val *v)
{
    LogOps *w = &st->wlog;
    if (st->log_fd < 0 || w->unloggable)
        return;
    int db = db_number(st, dbi);
    size_t vlen = v ? v->mv_size : 0, need = OP_LEN + k->mv_size + vlen;
    if (db < 0 || k->mv_size > UINT16_MAX || w->len + need > LOG_LEN / 2) {
        w->unloggable = true;
        return;
    }
    if (w->len + need > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + need)
            cap *= 2;
        unsigned char *grown = realloc(w->data, cap);
        if (!grown)
            abort();
        w->data = grown;
        w->cap = cap;
    }
    unsigned char *p = w->data + w->len;
    p[0] = (unsigned char)op;
    p[1] = (unsigned char)db;
    be_put16(p + 2, (uint16_t)k->mv_size);
    be_put32(p + 4, (uint32_t)vlen);
    lmdb_copy(p + OP_LEN, k->mv_data, k->mv_size);
    lmdb_copy(p + OP_LEN + k->mv_size, v ? v->mv_data : NULL, vlen);
    w->len += need;
}

int
lmdb_put(Store *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    int rc = mdb_put(txn, dbi, k, v, 0);
    if (!rc)
        note(st, OP_PUT, dbi, k, v);
    return rc;
}

int
lmdb_del(Store *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    int rc = mdb_del(txn, dbi, k, v);
    if (!rc)
        note(st, v ? OP_DEL : OP_DEL_ALL, dbi, k, v);
    return rc;
}

int
lmdb_cursor_del(Store *st, MDB_cursor *cur, MDB_dbi dbi, unsigned flags)
{
    MDB_val k, v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    if (rc)
        return rc;
    /* Noted first: the key and value are LMDB's, which the delete moves. */
    size_t mark = lmdb_log_mark(st);
    bool all = flags & MDB_NODUPDATA;
    note(st, all ? OP_DEL_ALL : OP_DEL, dbi, &k, all ? NULL : &v);
    if ((rc = mdb_cursor_del(cur, flags)))
        lmdb_log_rewind(st, mark);
    return rc;
}

size_t
lmdb_log_mark(Store *st)
{
    return st->wlog.len;
}

void
lmdb_log_rewind(Store *st, size_t mark)
{
    if (mark <= st->wlog.len)
        st->wlog.len = mark;
}

/* ---- the lock, and appending ---- */

void
lmdb_log_lock(Store *st)
{
    if (st->log_fd < 0)
        return;
    pthread_mutex_lock(&st->log_mu);
    while (flock(st->log_fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    if (!st->wlog.data) {
        st->wlog.cap = 4096;
        st->wlog.data = lmdb_alloc(st->wlog.cap);
    }
    st->wlog.len = HEADER_LEN;
    st->wlog.unloggable = false;
}

void
lmdb_log_unlock(Store *st)
{
    if (st->log_fd < 0)
        return;
    flock(st->log_fd, LOCK_UN);
    pthread_mutex_unlock(&st->log_mu);
}

/* Fills in the header of an entry of "len" bytes at "h", "body" bytes of
 * changes after it: its CRC covers the rest of the header and those. */
static void
header_fill(unsigned char *h, uint32_t kind, uint64_t epoch, uint64_t id, uint64_t len,
            uint64_t body)
{
    uint32_t magic = ENTRY_MAGIC, len32 = (uint32_t)len, crc = 0;
    memcpy(h, &magic, 4);
    memcpy(h + 4, &kind, 4);
    memcpy(h + 8, &epoch, 8);
    memcpy(h + 16, &id, 8);
    memcpy(h + 24, &len32, 4);
    uLong c = crc32(0L, h, 28);
    if (body)
        c = crc32(c, h + HEADER_LEN, (uInt)body);
    crc = (uint32_t)c;
    memcpy(h + 28, &crc, 4);
}

/* Writes "len" bytes at position "pos" of the ring: true when all were. */
static bool
ring_write(int fd, const void *p, size_t len, uint64_t pos)
{
    ssize_t n;
    while ((n = pwrite(fd, p, len, (off_t)(pos % LOG_LEN))) < 0 && errno == EINTR)
        ;
    return n == (ssize_t)len;
}

/* Breaks the chain: durable writes wait for a checkpoint until the next
 * starts another. */
static void
chain_break(SyncShared *sh)
{
    __atomic_store_n(&sh->log_next, 0, __ATOMIC_RELEASE);
}

void
lmdb_log_append(Store *st, uint64_t id)
{
    SyncShared *sh = st->shared;
    LogOps *w = &st->wlog;
    if (st->log_fd < 0 || id == 0)
        return;
    uint64_t next = __atomic_load_n(&sh->log_next, __ATOMIC_ACQUIRE);
    uint64_t pos = sh->log_head, tail = lmdb_counter_get(&sh->log_tail), len = align8(w->len);
    uint64_t off = pos % LOG_LEN, skip = off + len > LOG_LEN ? LOG_LEN - off : 0;
    if (w->unloggable || next != id || pos + skip + len - tail > LOG_LEN) {
        chain_break(sh);
        return;
    }
    if (skip >= HEADER_LEN) {
        unsigned char wrap[HEADER_LEN];
        header_fill(wrap, KIND_WRAP, sh->log_epoch, id, skip, 0);
        if (!ring_write(st->log_fd, wrap, sizeof wrap, pos)) {
            chain_break(sh);
            return;
        }
    }
    pos += skip;
    memset(w->data + w->len, 0, len - w->len); /* the padding (cap is a power of two) */
    header_fill(w->data, KIND_COMMIT, sh->log_epoch, id, len, len - HEADER_LEN);
    if (!ring_write(st->log_fd, w->data, len, pos)) {
        chain_break(sh);
        return;
    }
    sh->log_head = pos + len;
    __atomic_store_n(&sh->log_next, id + 1, __ATOMIC_RELEASE);
}

/* ---- checkpoints and durable writes ---- */

void
lmdb_log_chain(Store *st, uint64_t id, Checkpoint *c)
{
    SyncShared *sh = st->shared;
    if (st->log_fd < 0)
        return;
    if (__atomic_load_n(&sh->log_next, __ATOMIC_ACQUIRE) != id + 1) {
        uint64_t epoch = 0;
        while (epoch == 0 && getrandom(&epoch, sizeof epoch, 0) != (ssize_t)sizeof epoch)
            epoch = (uint64_t)lmdb_now(st) ^ ((uint64_t)getpid() << 32);
        sh->log_epoch = epoch;
        __atomic_store_n(&sh->log_base, id, __ATOMIC_RELEASE);
        __atomic_store_n(&sh->log_next, id + 1, __ATOMIC_RELEASE);
    }
    c->log = true;
    c->log_epoch = sh->log_epoch;
    c->log_pos = sh->log_head;
}

void
lmdb_log_recorded(Store *st, const Checkpoint *c)
{
    if (c->log)
        lmdb_counter_raise(&st->shared->log_tail, c->log_pos);
}

bool
lmdb_log_covers(Store *st, uint64_t id)
{
    SyncShared *sh = st->shared;
    if (lmdb_counter_get(&sh->synced) >= id || !__atomic_load_n(&sh->fast, __ATOMIC_ACQUIRE) ||
        lmdb_counter_get(&sh->record) >= id)
        return true;
    /* The chain's next id first, as in log_holds. */
    uint64_t next = __atomic_load_n(&sh->log_next, __ATOMIC_ACQUIRE);
    return next > id && __atomic_load_n(&sh->log_base, __ATOMIC_ACQUIRE) < id;
}

/* Takes (true) or lets go the log's flush lock: an OFD lock on its first
 * byte, which flock (the append lock) does not touch, and which a process
 * that dies lets go.  False only when another holds it. */
static bool
flush_lock(int fd, bool take)
{
    struct flock l = {.l_type = take ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &l) == 0 || (errno != EAGAIN && errno != EACCES);
}

/* Whether the log can make "id" durable now (see lmdb_log_sync); "*upto"
 * the last id it holds. */
static bool
log_holds(Store *st, uint64_t id, uint64_t *upto)
{
    SyncShared *sh = st->shared;
    /* The chain's next id first: a new chain's start is stored before it. */
    uint64_t next = __atomic_load_n(&sh->log_next, __ATOMIC_ACQUIRE);
    uint64_t base = __atomic_load_n(&sh->log_base, __ATOMIC_ACQUIRE);
    *upto = next - 1;
    return next > id && base <= lmdb_counter_get(&sh->record) &&
           __atomic_load_n(&sh->fast, __ATOMIC_ACQUIRE) && !lmdb_file_tight(st);
}

bool
lmdb_log_sync(Store *st, uint64_t id, int *rc)
{
    SyncShared *sh = st->shared;
    uint64_t upto;
    if (st->log_fd < 0)
        return false;
    /* One flush at a time in the process, and across processes one leader:
     * the others wait for its flush, which may cover them. */
    pthread_mutex_lock(&st->log_sync_mu);
    bool done = true;
    *rc = 0;
    for (;;) {
        if (lmdb_counter_get(&sh->failed) >= id) {
            *rc = lmdb_failure("an earlier sync of the store, after this write", EIO);
            break;
        }
        if (lmdb_counter_get(&sh->synced) >= id)
            break;
        if (!(done = log_holds(st, id, &upto)))
            break;
        uint32_t ends = __atomic_load_n(&sh->log_flushes, __ATOMIC_ACQUIRE);
        if (!flush_lock(st->log_fd, true)) {
            struct timespec wait = {0, SYNC_WAIT_MS * 1000000L};
            syscall(SYS_futex, &sh->log_flushes, FUTEX_WAIT, ends, &wait, NULL, 0);
            continue;
        }
        if (lmdb_counter_get(&sh->synced) < id && log_holds(st, id, &upto)) {
            lmdb_stat_add(&st->syncs, 1);
            *rc = fdatasync(st->log_fd) ? lmdb_failure("fdatasync of " LOG_FILE, errno) : 0;
            lmdb_counter_raise(*rc ? &sh->failed : &sh->synced, upto);
        }
        flush_lock(st->log_fd, false);
        __atomic_add_fetch(&sh->log_flushes, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &sh->log_flushes, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
        if (*rc)
            break;
    }
    pthread_mutex_unlock(&st->log_sync_mu);
    return done;
}

/* ---- replaying ---- */

/* Applies the changes of entry "e" ("len" bytes) in "txn": LMDB's code. */
static int
entry_apply(MDB_txn *txn, const MDB_dbi *dbis, const unsigned char *e, uint64_t len)
{
    uint64_t off = HEADER_LEN;
    while (off + OP_LEN <= len) {
        const unsigned char *p = e + off;
        int op = p[0], db = p[1];
        size_t klen = be_get16(p + 2), vlen = be_get32(p + 4);
        if (op == 0)
            break; /* the padding */
        if ((size_t)db >= LOG_DBS || off + OP_LEN + klen + vlen > len)
            return MDB_CORRUPTED;
        MDB_val k = {klen, (void *)(p + OP_LEN)}, v = {vlen, (void *)(p + OP_LEN + klen)};
        int rc = op == OP_PUT ? mdb_put(txn, dbis[db], &k, &v, 0)
                              : mdb_del(txn, dbis[db], &k, op == OP_DEL ? &v : NULL);
        if (rc && !(rc == MDB_NOTFOUND && op != OP_PUT))
            return rc;
        off += OP_LEN + klen + vlen;
    }
    return 0;
}

/* The entry at position "pos" of ring "ring" when it is whole and of
 * chain "epoch": its length, kind and id; false otherwise. */
static bool
entry_at(const unsigned char *ring, uint64_t pos, uint64_t epoch, uint64_t *len, uint32_t *kind,
         uint64_t *id)
{
    const unsigned char *h = ring + pos % LOG_LEN;
    uint32_t magic, len32, crc;
    uint64_t ep;
    memcpy(&magic, h, 4);
    memcpy(kind, h + 4, 4);
    memcpy(&ep, h + 8, 8);
    memcpy(id, h + 16, 8);
    memcpy(&len32, h + 24, 4);
    memcpy(&crc, h + 28, 4);
    *len = len32;
    if (magic != ENTRY_MAGIC || ep != epoch || *len < HEADER_LEN || *len % 8 ||
        pos % LOG_LEN + *len > LOG_LEN)
        return false;
    uLong c = crc32(0L, h, 28);
    if (*kind == KIND_COMMIT)
        c = crc32(c, h + HEADER_LEN, (uInt)(*len - HEADER_LEN));
    return (uint32_t)c == crc && (*kind == KIND_COMMIT || *kind == KIND_WRAP);
}

/* Applies in "txn" the chain of "c" in ring "ring": the number of entries
 * applied, or -(LMDB's code). */
static long
chain_apply(MDB_txn *txn, const MDB_dbi *dbis, const unsigned char *ring, const Checkpoint *c)
{
    uint64_t pos = c->log_pos, expect = c->txnid + 1, len, id;
    uint32_t kind;
    long applied = 0;
    for (uint64_t seen = 0; seen < LOG_LEN; seen += len, pos += len) {
        if (LOG_LEN - pos % LOG_LEN < HEADER_LEN) {
            len = LOG_LEN - pos % LOG_LEN;
            continue;
        }
        if (!entry_at(ring, pos, c->log_epoch, &len, &kind, &id) || id != expect)
            break;
        if (kind == KIND_WRAP)
            continue;
        int rc = entry_apply(txn, dbis, ring + pos % LOG_LEN, len);
        if (rc)
            return -rc;
        expect++;
        applied++;
    }
    return applied;
}

/* Replays the chain of "c" from "ring" into the environment at
 * "location", its map "map_size" bytes: 0, MDB_MAP_FULL, or another code. */
static int
replay_into(const char *location, size_t map_size, const unsigned char *ring, const Checkpoint *c)
{
    MDB_env *env;
    MDB_txn *txn = NULL;
    MDB_dbi dbis[LOG_DBS];
    int rc = mdb_env_create(&env);
    if (rc)
        return rc;
    if (!(rc = mdb_env_set_maxdbs(env, 16)) && !(rc = mdb_env_set_mapsize(env, map_size)) &&
        !(rc = mdb_env_open(env, location, MDB_NOTLS, 0600)) &&
        !(rc = mdb_txn_begin(env, NULL, 0, &txn))) {
        for (size_t i = 0; !rc && i < LOG_DBS; i++)
            rc = mdb_dbi_open(txn, log_dbs[i].name, log_dbs[i].flags | (i ? MDB_CREATE : 0),
                              &dbis[i]);
        long applied = rc ? 0 : chain_apply(txn, dbis, ring, c);
        if (applied < 0)
            rc = (int)-applied;
        if (rc)
            mdb_txn_abort(txn);
        else if (!(rc = mdb_txn_commit(txn)))
            rc = mdb_env_sync(env, 1);
        if (!rc && applied)
            fprintf(stderr,
                    "queuefs: %s: %ld commits after the checkpoint replayed from " LOG_FILE "\n",
                    location, applied);
    }
    mdb_env_close(env);
    return rc;
}

int
lmdb_log_replay(const char *location, uint64_t data_bytes, const Checkpoint *c)
{
    if (!c->log)
        return 0;
    int fd = lmdb_open_in(location, LOG_FILE, O_RDONLY);
    if (fd < 0)
        return errno == ENOENT ? 0 : errno;
    unsigned char *ring = calloc(1, LOG_LEN);
    if (!ring)
        abort();
    ssize_t n = pread(fd, ring, LOG_LEN, 0);
    int rc = n < 0 ? errno : 0;
    close(fd);
    /* A ring read short (a file cut off) holds zeros past its end. */
    size_t map_size = (size_t)data_bytes * 2 + ((size_t)64 << 20);
    for (int tries = 0; !rc && tries < REPLAY_TRIES; tries++, map_size *= 2)
        if ((rc = replay_into(location, map_size, ring, c)) != MDB_MAP_FULL)
            break;
    free(ring);
    return rc;
}
