/* lmdb.c — the LMDB backend of the store (see store.h).
 *
 * The only file of queuefs that includes <lmdb.h>.
 *
 * Layout: one LMDB environment (a directory) with six named databases.
 * Integers in keys are big-endian so that byte order is numeric order;
 * "T" below is a table id as 4 big-endian bytes.
 *
 *   sys       "version"        → "queuefs-store" u32 format version
 *             "next_table_id"  → u32: the id the next created table gets
 *   catalog   table name       → [u32 id][definition bytes]
 *   records   [T][record key]  → [u64 seq][i64 wake][u16 order_len]
 *                                [order key][caller's value bytes]
 *             wake is -1 when the record has no slot, 0 when it is in the
 *             ready index, > 0 when it is in the deadline index; with the
 *             order key it lets put and delete find the old index entry.
 *   ready     [T][order key]   → [u64 seq][record key]   (MDB_DUPSORT)
 *             LMDB compares keys by memcmp, shorter first on a tie, which
 *             is exactly (table, order key) order; the duplicates of one
 *             key sort by arrival sequence.  (A flat [T][order][seq] key
 *             would misorder order keys that are prefixes of each other.)
 *   deadline  [T][u64 wake][record key] → [u8 kind][i64 then]
 *             kind 1: a delay, ready at wake (no "then"); kind 2: a hold,
 *             whose "then" says what the record does at wake (StoreSlot's
 *             then_ns).  Empty: filed by format 1, which did not tell them
 *             apart (ready at wake).
 *   meta      [T][0x01][name]  → caller's value
 *             [T][0x00]"seq"   → u64: the table's last arrival sequence
 *   (main)    "records"[T]     → 5 × u64: the table's records, and of them
 *             its ready, held and delayed and unsorted (format 1) index
 *             entries; kept in every transaction that changes them, so a
 *             count costs a lookup (store_queue_counts).  They live in
 *             LMDB's main database, next to the named databases' records,
 *             whose page every writing transaction rewrites anyway: a
 *             delete on a full disk needs no page more for them.
 *
 * Dropping a table deletes every key with its [T] prefix in records,
 * ready, deadline and meta, and its counts.  Table ids are never reused.
 *
 * Format 2 added the deadline entries' kinds and the counts.  A store of
 * format 1 is upgraded by the first process that opens it: every table is
 * counted once, its waiting entries as unsorted (their records were filed
 * before holds and delays were told apart), and the format becomes 2.
 *
 * Concurrency: LMDB's lock file serialises writers across processes and
 * threads.  The environment is opened with MDB_NOTLS so read transactions
 * are not tied to threads.  A process-local rwlock is held shared by every
 * open transaction and exclusively only to change the map's size — to adopt
 * a map another process grew (MDB_MAP_RESIZED) or to grow it — because
 * mdb_env_set_mapsize() must not run while any transaction of this process
 * is open — except the read transactions that pin checkpoints (see
 * "Durability"): nothing is ever read through them, and LMDB's remap only
 * minds a write transaction.
 *
 * Group commit: store_write() callers queue; the first finds no leader and
 * leads: it takes the whole queue as one group, begins one transaction and
 * runs each caller's function in a nested transaction (so a failing one is
 * rolled back alone), commits, hands the lead on and then syncs.  A
 * function that meets a full map is retried after the map has grown: the
 * callers before it commit first, and it runs first in the next
 * transaction; when it fails alone too, the map is grown (doubled, within
 * the room the disk has) and it runs again.
 *
 * Durability.  A store is in one of two modes, kept in "queuefs.sync" (a
 * page of counters shared by every process on the store, mapped shared,
 * with flock on it for the syncs) and checked by each committer while it
 * holds LMDB's writer lock:
 *
 *  - safe: commits have MDB_NOMETASYNC — a commit writes its data pages,
 *    syncs them, then writes its meta page unsynced — so the newest meta
 *    page on disk is always whole; a write is made durable by syncing the
 *    file once more (which also lands the meta page).
 *  - fast: commits have MDB_NOSYNC and sync nothing.  What makes this safe
 *    is a checkpoint (checkpoint.h): a transaction pinned by a read
 *    transaction of a live process (so LMDB reuses none of its pages), the
 *    file synced after it, and a copy of its meta pages recorded in
 *    "queuefs.checkpoint".  After a machine crash the next boot's first
 *    open puts the checkpoint's meta pages back: the commits after it are
 *    lost, and the store is exactly as it was then.  A crash of processes
 *    alone loses nothing (the page cache has every commit), so that is
 *    done only in another boot.
 *
 * Every process takes a checkpoint before its first commit (so an open
 * that only reads syncs nothing), and the store is fast from then on.  A
 * process takes one every CHECKPOINT_INTERVAL_MS while it has commits
 * since the last (see checkpoint_tick); with sync on a write returns once
 * a checkpoint covers it, and concurrent writers in every process share
 * that checkpoint.  Only the newest record matters, so
 * a process drops its pins once a newer record exists, and clears the
 * reader slots of dead processes (mdb_reader_check) only right after
 * recording a checkpoint of its own.  A closing process — whose pin would
 * vanish with it — makes the store safe: under the writer lock it syncs
 * the file, records "trust the disk" and clears "fast"; the others' next
 * checkpoint makes it fast again.  The counters: "committed" — the last
 * transaction id a committer saw once its commit was done — "synced" —
 * every id up to it outlives a machine crash — and "failed" — a sync
 * failed when ids up to it had committed, so they may be lost (and a later
 * successful sync proves nothing about them: Linux may drop pages whose
 * writeback failed).  A durable write is done when synced >= its id;
 * otherwise its writer waits for a sync under way — in its process (a
 * condition) or in another (a futex in the shared page) — and when none
 * covers it leads one (flock on the shared file): a sync (safe) or a
 * checkpoint (fast).
 *
 * Open an environment at most once per process at a time: LMDB's fcntl
 * locks on the lock file are per process, so closing a second handle to the
 * same directory would release the first one's locks.  An environment must
 * not cross fork(); the child opens its own.
 */
#include "store.h"
#include "be.h"
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define STORE_FORMAT_MAGIC "queuefs-store"
#define STORE_FORMAT_VERSION 2u
#define STORE_FORMAT_COUNTED 2u      /* the first format with counts */
#define STORE_MAX_DBS 8
#define STORE_MAX_READERS 1024
#define STORE_RESIZE_WAIT_S 5
#define STORE_BEGIN_TRIES 8

#define RECORD_HEAD_LEN 18           /* u64 seq, i64 wake, u16 order_len */
#define WAKE_NO_SLOT (-1)
#define META_INTERNAL 0x00
#define META_CALLER 0x01
#define WAIT_DELAY 1                 /* a deadline entry's kinds */
#define WAIT_HOLD 2
#define WAIT_VALUE_LEN 9             /* [u8 kind][i64 then] */

/* The per-table counts (main "records"[T]), in their stored order. */
enum { CNT_RECORDS, CNT_READY, CNT_HELD, CNT_DELAYED, CNT_UNSORTED, CNT_N };

/* Room for the longest composite key: [T][u64][key] or [T][sub][name]. */
#define KEY_BUF_LEN (4 + 8 + STORE_MAX_KEY)

#define STORE_GROW_TRIES 32          /* map growths one group may ask for */
#define STORE_UNPIN_TRIES 3          /* checkpoints a full write of the reserve's
                                      * may wait for (see store_unpin_freed) */
#define STORE_DISK_MARGIN ((uint64_t)256 << 10)  /* disk left to the filesystem */
#define RESERVE_SHARE 8              /* the reserve: 1/8 of the room the store has, */
#define RESERVE_MIN_PAGES 64         /* at least 256 KiB (with 4 KiB pages) */
#define RESERVE_MAX_PAGES 2048       /* and at most 8 MiB */
#define LMDB_META_PAGES 2            /* LMDB's two meta pages */
#define LMDB_FREE_DBI 0              /* LMDB's own databases: its free list */
#define LMDB_MAIN_DBI 1              /* and the one naming the others */
#define SYNC_FILE "queuefs.sync"
#define SYNC_FILE_LEN 4096
#define SYNC_MAGIC 0x7166732d73796e32ull   /* "qfs-syn2" */
#define CHECKPOINT_INTERVAL_MS 20    /* how often sync off takes a checkpoint */
#define SYNC_WAIT_MS 10              /* a wait for another process's sync, at most */

/* The page of "queuefs.sync", shared by every process on the store; the
 * counters are LMDB transaction ids, read and written atomically. */
typedef struct SyncShared {
    uint64_t magic;
    uint64_t dev, ino;    /* the data file the counters are about */
    uint64_t committed;   /* a transaction id known committed (meta written) */
    uint64_t synced;      /* every transaction id <= synced is on disk and
                           * outlives a machine crash */
    uint64_t failed;      /* a sync failed: ids <= failed may be lost */
    uint64_t fast;        /* 1: commits need not sync (see "Durability") */
    uint64_t record;      /* the transaction of the newest checkpoint record */
    uint32_t sync_ends;   /* bumped (a futex, woken) whenever a sync ends */
    uint32_t changes;     /* bumped after every commit that changed something,
                           * and by store_wake: the futex store_wait_change
                           * sleeps on (0 in files of builds before it) */
    uint64_t record_seq;  /* the sequence number of the newest record */
    char boot[CHECKPOINT_BOOT_LEN];   /* the boot the counters are of */
    uint32_t change_waiters;  /* threads in store_wait_change, in every process:
                               * a committer wakes "changes" only when some */
} SyncShared;

/* One store_write() caller, queued on its own stack. */
typedef struct WriteReq {
    int (*fn)(StoreTxn *txn, void *ctx);
    void *ctx;
    int rc;               /* what store_write returns to this caller */
    bool in_group;        /* taken into a group by a leader */
    bool reserve;         /* its last run may use the reserve */
    bool committed;       /* its changes are committed (sync pending) */
    bool done;            /* rc is final: the caller may return */
    struct WriteReq *next;
} WriteReq;

struct Store {
    MDB_env *env;
    MDB_dbi sys, catalog, records, ready, deadline, meta;
    MDB_dbi main;                /* LMDB's main database: the counts */
    pthread_rwlock_t map_lock;   /* shared by open txns; exclusive to resize */
    bool sync;                   /* sync on: commits are made durable */
    int data_fd;                 /* LMDB's descriptor of the data file */
    size_t map_size;             /* the map's size (atomic) */

    pthread_mutex_t group_mu;    /* guards the queue, "leading", "waiting" */
    pthread_cond_t group_cv;
    WriteReq *queue, **queue_tail;
    bool leading;                /* a leader is running a group */
    uint64_t waiting;

    pthread_mutex_t sync_mu;     /* guards "syncing" */
    pthread_cond_t sync_cv;      /* signalled when a sync ends */
    bool syncing;                /* a thread of this process leads a sync
                                  * (then holds flock on sync_fd) */
    int sync_fd;                 /* "queuefs.sync" */
    SyncShared *shared;          /* mapped from sync_fd */
    bool nosync;                 /* MDB_NOSYNC is set (changed by the writer) */

    int ckpt_fd;                 /* "queuefs.checkpoint" */
    char boot[CHECKPOINT_BOOT_LEN];
    unsigned page_size;
    bool checkpoints;            /* the data file's meta pages are understood */
    bool checkpointed;           /* this process took a checkpoint (atomic) */
    uint64_t last_commit;        /* the id of this process's last commit (atomic) */
    time_t dead_cleared_at;      /* when it last cleared dead readers (the sync
                                  * leader's), in monotonic seconds */
    MDB_txn *pin;                /* the read transaction holding this process's
                                  * checkpoint, or NULL (the sync leader's) */
    uint64_t pin_id;             /* its transaction, UINT64_MAX: none (atomic) */

    pthread_t ticker;            /* takes checkpoints with sync off */
    bool ticking, stopping;      /* (guarded by tick_mu) */
    pthread_mutex_t tick_mu;
    pthread_cond_t tick_cv;

    uint64_t writes, groups, syncs, grows;  /* StoreStats (atomic) */

    bool read_only;              /* StoreOptions.read_only */
    bool owner_known;            /* the directory's owner, when opened */
    uid_t owner_uid;
    gid_t owner_gid;

    uint64_t reserve_pages;      /* the reserve (see "The reserve"; atomic) */
    uint64_t file_bytes;         /* the data file's size as last seen: it never
                                  * shrinks, so a lower bound (atomic) */
};

struct StoreTxn {
    Store *st;
    MDB_txn *txn;
    bool write;
    bool reserve;                /* it may use the reserve (store_txn_use_reserve) */
};

/* A record's stored header, decoded; pointers are into the stored value. */
typedef struct RecordHead {
    uint64_t seq;
    int64_t wake;                 /* WAKE_NO_SLOT, 0 (ready) or > 0 (waiting) */
    const unsigned char *order;
    size_t order_len;
    const unsigned char *value;
    size_t value_len;
} RecordHead;

/* A composite key built in local memory (never aliases LMDB's). */
typedef struct KeyBuf {
    unsigned char data[KEY_BUF_LEN];
    size_t len;
} KeyBuf;

static const char *const store_messages[] = {
    [STORE_OK] = "success",
    [STORE_NOTFOUND] = "not found",
    [STORE_EXISTS] = "already exists",
    [STORE_FULL] = "store is full",
    [STORE_TOOBIG] = "key too long",
    [STORE_IO] = "store I/O error",
    [STORE_BUSY] = "store busy",
    [STORE_CORRUPT] = "not a queuefs store, or damaged",
    [STORE_INVALID] = "invalid store option",
    [STORE_READONLY] = "the store is open for reading only",
};

/* ---- small helpers ---- */

/* Returns n bytes of fresh memory; aborts the process when there is none
 * (queuefs treats out-of-memory as fatal). */
static void *
store_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* Copies n bytes; n == 0 is allowed with NULL pointers. */
static void
bytes_copy(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}

/* Why the last LMDB call that failed on this thread for want of room
 * failed: how store_write tells a map it can grow from a transaction that is
 * too large.  Set by store_status_of, cleared by the group's leader. */
enum { FULL_NONE, FULL_MAP, FULL_TXN };
static _Thread_local int store_full_seen;

/* Maps an LMDB return code (or errno) to a StoreStatus, noting in
 * store_full_seen a full map or transaction. */
static int
store_status_of(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:
        return STORE_OK;
    case MDB_NOTFOUND:
        return STORE_NOTFOUND;
    case MDB_KEYEXIST:
        return STORE_EXISTS;
    case MDB_MAP_FULL:
        store_full_seen = FULL_MAP;
        return STORE_FULL;
    case MDB_TXN_FULL:
        store_full_seen = FULL_TXN;
        return STORE_FULL;
    case MDB_PAGE_FULL:
    case MDB_CURSOR_FULL:
    case ENOSPC:
        return STORE_FULL;
    case MDB_BAD_VALSIZE:
        return STORE_TOOBIG;
    case MDB_READERS_FULL:
    case MDB_MAP_RESIZED:
    case MDB_TLS_FULL:
    case MDB_DBS_FULL:
    case EAGAIN:
    case EBUSY:
        return STORE_BUSY;
    case MDB_INVALID:
    case MDB_CORRUPTED:
    case MDB_VERSION_MISMATCH:
    case MDB_PAGE_NOTFOUND:
    case MDB_INCOMPATIBLE:
    case MDB_BAD_RSLOT:
    case MDB_BAD_DBI:
        return STORE_CORRUPT;
    default:                     /* EIO, MDB_PANIC, MDB_BAD_TXN, other errnos */
        return STORE_IO;
    }
}

/* Writes "location: what[: LMDB's message for rc]" into errbuf (when there
 * is one); rc == 0 adds no LMDB message. */
static void
store_open_message(char *errbuf, size_t errlen, const char *location,
                   const char *what, int rc)
{
    if (!errbuf || !errlen)
        return;
    if (rc)
        snprintf(errbuf, errlen, "%s: %s: %s", location, what, mdb_strerror(rc));
    else
        snprintf(errbuf, errlen, "%s: %s", location, what);
}

/* Sets k to [T]. */
static void
key_set_table(KeyBuf *k, uint32_t table)
{
    be_put32(k->data, table);
    k->len = 4;
}

/* Appends n bytes to k; the caller has checked they fit. */
static void
key_append(KeyBuf *k, const void *p, size_t n)
{
    bytes_copy(k->data + k->len, p, n);
    k->len += n;
}

/* Appends v as 8 big-endian bytes to k. */
static void
key_append_u64(KeyBuf *k, uint64_t v)
{
    be_put64(k->data + k->len, v);
    k->len += 8;
}

/* An MDB_val viewing k (valid while k lives). */
static MDB_val
key_val(KeyBuf *k)
{
    return (MDB_val){.mv_size = k->len, .mv_data = k->data};
}

/* True when the LMDB key "k" starts with table id "table". */
static bool
key_has_table(MDB_val k, uint32_t table)
{
    return k.mv_size >= 4 && be_get32(k.mv_data) == table;
}

/* Decodes a stored record value; STORE_CORRUPT when it is malformed. */
static int
record_head_parse(MDB_val v, RecordHead *h)
{
    const unsigned char *p = v.mv_data;
    if (v.mv_size < RECORD_HEAD_LEN)
        return STORE_CORRUPT;
    h->seq = be_get64(p);
    h->wake = (int64_t)be_get64(p + 8);
    h->order_len = be_get16(p + 16);
    if (h->order_len > STORE_MAX_KEY || v.mv_size < RECORD_HEAD_LEN + h->order_len)
        return STORE_CORRUPT;
    h->order = p + RECORD_HEAD_LEN;
    h->value = h->order + h->order_len;
    h->value_len = v.mv_size - RECORD_HEAD_LEN - h->order_len;
    return STORE_OK;
}

/* Writes a record header at p (RECORD_HEAD_LEN bytes; the order key is
 * copied by the caller). */
static void
record_head_write(unsigned char *p, uint64_t seq, int64_t wake, size_t order_len)
{
    be_put64(p, seq);
    be_put64(p + 8, (uint64_t)wake);
    be_put16(p + 16, (uint16_t)order_len);
}

/* Puts a private copy of "data" under "key", so that "data" may point into
 * LMDB memory that the write itself moves. */
static int
db_put_copy(MDB_txn *txn, MDB_dbi dbi, MDB_val key, const void *data, size_t len)
{
    void *copy = store_alloc(len);
    bytes_copy(copy, data, len);
    MDB_val v = {.mv_size = len, .mv_data = copy};
    int rc = mdb_put(txn, dbi, &key, &v, 0);
    free(copy);
    return store_status_of(rc);
}

/* Deletes every entry of "dbi" whose key starts with [T] (all duplicates
 * too), at O(log n) per entry. */
static int
db_delete_table(MDB_txn *txn, MDB_dbi dbi, uint32_t table, unsigned del_flags)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc)
        return store_status_of(rc);
    KeyBuf prefix;
    key_set_table(&prefix, table);
    for (;;) {
        MDB_val k = key_val(&prefix), v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND || (rc == 0 && !key_has_table(k, table))) {
            rc = 0;
            break;
        }
        if (rc)
            break;
        rc = mdb_cursor_del(cur, del_flags);
        if (rc)
            break;
    }
    mdb_cursor_close(cur);
    return store_status_of(rc);
}

/* Builds the meta key [T][sub][name]; the caller has checked the length. */
static void
meta_key_build(KeyBuf *k, uint32_t table, unsigned char sub, const void *name, size_t len)
{
    key_set_table(k, table);
    k->data[k->len++] = sub;
    key_append(k, name, len);
}

/* Takes the next arrival sequence of "table" (1, 2, ...) into *seq. */
static int
table_seq_next(StoreTxn *t, uint32_t table, uint64_t *seq)
{
    KeyBuf k;
    meta_key_build(&k, table, META_INTERNAL, "seq", 3);
    MDB_val kv = key_val(&k), v;
    uint64_t last = 0;
    int rc = mdb_get(t->txn, t->st->meta, &kv, &v);
    if (rc == 0 && v.mv_size == 8)
        last = be_get64(v.mv_data);
    else if (rc == 0)
        return STORE_CORRUPT;
    else if (rc != MDB_NOTFOUND)
        return store_status_of(rc);
    unsigned char buf[8];
    be_put64(buf, last + 1);
    v = (MDB_val){.mv_size = 8, .mv_data = buf};
    rc = mdb_put(t->txn, t->st->meta, &kv, &v, 0);
    if (rc)
        return store_status_of(rc);
    *seq = last + 1;
    return STORE_OK;
}

/* ---- the counts ---- */

/* Builds the key of the counts of "table": "records"[T]. */
static void
counts_key_build(KeyBuf *k, uint32_t table)
{
    k->len = 0;
    key_append(k, "records", 7);
    be_put32(k->data + k->len, table);
    k->len += 4;
}

/* Reads the counts of "table" into "n" (all 0 when it has none yet). */
static int
counts_get(StoreTxn *t, uint32_t table, uint64_t n[CNT_N])
{
    KeyBuf k;
    counts_key_build(&k, table);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(t->txn, t->st->main, &kv, &v);
    memset(n, 0, sizeof(uint64_t) * CNT_N);
    if (rc == MDB_NOTFOUND)
        return STORE_OK;
    if (rc)
        return store_status_of(rc);
    if (v.mv_size != 8 * CNT_N)
        return STORE_CORRUPT;
    for (int i = 0; i < CNT_N; i++)
        n[i] = be_get64((const unsigned char *)v.mv_data + 8 * i);
    return STORE_OK;
}

/* Stores "n" as the counts of "table". */
static int
counts_put(StoreTxn *t, uint32_t table, const uint64_t n[CNT_N])
{
    unsigned char buf[8 * CNT_N];
    for (int i = 0; i < CNT_N; i++)
        be_put64(buf + 8 * i, n[i]);
    KeyBuf k;
    counts_key_build(&k, table);
    MDB_val kv = key_val(&k), v = {.mv_size = sizeof buf, .mv_data = buf};
    return store_status_of(mdb_put(t->txn, t->st->main, &kv, &v, 0));
}

/* Adds "delta" to the counts of "table": one write, none when all are 0. */
static int
counts_add(StoreTxn *t, uint32_t table, const int64_t delta[CNT_N])
{
    bool any = false;
    for (int i = 0; i < CNT_N; i++)
        any = any || delta[i] != 0;
    if (!any)
        return STORE_OK;
    uint64_t n[CNT_N];
    int rc = counts_get(t, table, n);
    if (rc)
        return rc;
    for (int i = 0; i < CNT_N; i++)
        n[i] += (uint64_t)delta[i];
    return counts_put(t, table, n);
}

/* Notes in "delta" that one entry of count "cls" came (by +1) or went
 * (by -1); cls < 0 (no index entry) counts nothing. */
static void
counts_note(int64_t delta[CNT_N], int cls, int by)
{
    if (cls >= 0)
        delta[cls] += by;
}

/* The count an index state files a record under: none (-1) without a
 * slot, ready, or by the kind of its wait. */
static int
slot_class(int64_t wake, int kind)
{
    if (wake == WAKE_NO_SLOT)
        return -1;
    if (wake == 0)
        return CNT_READY;
    return kind == WAIT_HOLD ? CNT_HELD : kind == WAIT_DELAY ? CNT_DELAYED : CNT_UNSORTED;
}

/* The kind of a deadline entry from its value (0: unsorted, format 1). */
static int
wait_kind(MDB_val v)
{
    const unsigned char *p = v.mv_data;
    if (v.mv_size >= 1 && p[0] == WAIT_DELAY)
        return WAIT_DELAY;
    if (v.mv_size >= WAIT_VALUE_LEN && p[0] == WAIT_HOLD)
        return WAIT_HOLD;
    return 0;
}

/* What a deadline entry of value "v" becomes once its instant has come at
 * "now": its new wake — 0 ready, > 0 delayed until then, WAKE_NO_SLOT
 * retired. */
static int64_t
wait_next(MDB_val v, int64_t now)
{
    if (wait_kind(v) != WAIT_HOLD)
        return 0;
    int64_t then = (int64_t)be_get64((const unsigned char *)v.mv_data + 1);
    if (then == STORE_SLOT_RETIRE)
        return WAKE_NO_SLOT;
    return then > now ? then : 0;
}

/* ---- the queue indexes ---- */

/* Builds the ready entry of a record: key [T][order], data [seq][rkey]. */
static void
ready_entry_build(KeyBuf *k, KeyBuf *d, uint32_t table, const void *order,
                  size_t order_len, uint64_t seq, const void *rkey, size_t rkey_len)
{
    key_set_table(k, table);
    key_append(k, order, order_len);
    d->len = 0;
    key_append_u64(d, seq);
    key_append(d, rkey, rkey_len);
}

/* Builds the deadline key of a record: [T][wake][rkey]. */
static void
deadline_key_build(KeyBuf *k, uint32_t table, int64_t wake, const void *rkey, size_t rkey_len)
{
    key_set_table(k, table);
    key_append_u64(k, (uint64_t)wake);
    key_append(k, rkey, rkey_len);
}

/* Adds the index entry a record with this slot state belongs in (none for
 * WAKE_NO_SLOT); a waiting one of "kind" (WAIT_HOLD carries "then").  All
 * pointers are to local copies. */
static int
queue_index_add(StoreTxn *t, uint32_t table, const void *rkey, size_t rkey_len,
                const void *order, size_t order_len, uint64_t seq, int64_t wake, int kind,
                int64_t then)
{
    KeyBuf k, d;
    MDB_val kv, dv = {0, NULL};
    MDB_dbi dbi;
    unsigned char wait[WAIT_VALUE_LEN];
    if (wake == WAKE_NO_SLOT)
        return STORE_OK;
    if (wake == 0) {
        ready_entry_build(&k, &d, table, order, order_len, seq, rkey, rkey_len);
        dv = key_val(&d);
        dbi = t->st->ready;
    } else {
        deadline_key_build(&k, table, wake, rkey, rkey_len);
        dbi = t->st->deadline;
        wait[0] = (unsigned char)kind;
        be_put64(wait + 1, (uint64_t)then);
        dv = (MDB_val){.mv_size = kind == WAIT_HOLD ? WAIT_VALUE_LEN : 1, .mv_data = wait};
    }
    kv = key_val(&k);
    return store_status_of(mdb_put(t->txn, dbi, &kv, &dv, 0));
}

/* Removes the index entry described by a record's header (none for
 * WAKE_NO_SLOT), and says in "*cls" which count it was in (-1: none, or
 * missing).  Copies what it needs from "h" before writing, so "h" may
 * point into LMDB memory.  A missing entry is not an error. */
static int
queue_index_remove(StoreTxn *t, uint32_t table, const void *rkey, size_t rkey_len,
                   const RecordHead *h, int *cls)
{
    KeyBuf k, d;
    MDB_val kv, dv;
    int rc;
    *cls = -1;
    if (h->wake == WAKE_NO_SLOT)
        return STORE_OK;
    if (h->wake == 0) {
        ready_entry_build(&k, &d, table, h->order, h->order_len, h->seq, rkey, rkey_len);
        kv = key_val(&k);
        dv = key_val(&d);
        rc = mdb_del(t->txn, t->st->ready, &kv, &dv);
        if (rc == 0)
            *cls = CNT_READY;
    } else {
        deadline_key_build(&k, table, h->wake, rkey, rkey_len);
        kv = key_val(&k);
        rc = mdb_get(t->txn, t->st->deadline, &kv, &dv);
        if (rc == 0) {
            int kind = wait_kind(dv);
            rc = mdb_del(t->txn, t->st->deadline, &kv, NULL);
            if (rc == 0)
                *cls = slot_class(h->wake, kind);
        }
    }
    return rc == MDB_NOTFOUND ? STORE_OK : store_status_of(rc);
}

/* Files the waiting record under [T][rkey] anew: its header's wake
 * becomes "wake" (0: ready, > 0: delayed until then, WAKE_NO_SLOT: in no
 * index) and it gets that index entry, noted in "delta".  The deadline
 * entry is the caller's to delete.  A deadline entry without a record is
 * ignored. */
static int
queue_record_refile(StoreTxn *t, uint32_t table, const KeyBuf *rk, int64_t wake,
                    int64_t delta[CNT_N])
{
    KeyBuf key = *rk;
    MDB_val kv = key_val(&key), v;
    RecordHead h;
    int rc = mdb_get(t->txn, t->st->records, &kv, &v);
    if (rc == MDB_NOTFOUND)
        return STORE_OK;
    if (rc)
        return store_status_of(rc);
    if ((rc = record_head_parse(v, &h)))
        return rc;
    size_t len = v.mv_size;
    unsigned char *copy = store_alloc(len);
    memcpy(copy, v.mv_data, len);
    record_head_write(copy, h.seq, wake, h.order_len);
    MDB_val nv = {.mv_size = len, .mv_data = copy};
    rc = store_status_of(mdb_put(t->txn, t->st->records, &kv, &nv, 0));
    if (rc == STORE_OK)
        rc = queue_index_add(t, table, key.data + 4, key.len - 4, copy + RECORD_HEAD_LEN,
                             h.order_len, h.seq, wake, WAIT_DELAY, 0);
    if (rc == STORE_OK)
        counts_note(delta, slot_class(wake, WAIT_DELAY), 1);
    free(copy);
    return rc;
}

/* Moves every waiting record of "table" whose wake is <= now where its
 * entry says (see wait_next), at O(log n) per record moved, and keeps the
 * counts; stops at the first entry still in the future. */
static int
queue_drain(StoreTxn *t, uint32_t table, int64_t now)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(t->txn, t->st->deadline, &cur);
    if (rc)
        return store_status_of(rc);
    KeyBuf prefix, rk;
    int64_t delta[CNT_N] = {0};
    key_set_table(&prefix, table);
    for (;;) {
        MDB_val k = key_val(&prefix), v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        if (rc == MDB_NOTFOUND || (rc == 0 && !key_has_table(k, table))) {
            rc = STORE_OK;
            break;
        }
        if (rc) {
            rc = store_status_of(rc);
            break;
        }
        if (k.mv_size < 12 || k.mv_size > 12 + STORE_MAX_KEY) {
            rc = STORE_CORRUPT;
            break;
        }
        const unsigned char *p = k.mv_data;
        if ((int64_t)be_get64(p + 4) > now) {
            rc = STORE_OK;
            break;
        }
        key_set_table(&rk, table);
        key_append(&rk, p + 12, k.mv_size - 12);
        int was = slot_class((int64_t)be_get64(p + 4), wait_kind(v));
        int64_t wake = wait_next(v, now);
        if ((rc = mdb_cursor_del(cur, 0))) {
            rc = store_status_of(rc);
            break;
        }
        counts_note(delta, was, -1);
        if ((rc = queue_record_refile(t, table, &rk, wake, delta)))
            break;
    }
    mdb_cursor_close(cur);
    return rc ? rc : counts_add(t, table, delta);
}

/* ---- the environment ---- */

/* Opens one named database of the store (creating it when "create"). */
static int
store_dbi_open(MDB_txn *txn, const char *name, unsigned flags, bool create, MDB_dbi *dbi)
{
    return mdb_dbi_open(txn, name, flags | (create ? MDB_CREATE : 0), dbi);
}

/* Writes the format marker of this format. */
static int
store_format_mark(MDB_txn *txn, MDB_dbi sys)
{
    unsigned char ver[sizeof STORE_FORMAT_MAGIC - 1 + 4];
    memcpy(ver, STORE_FORMAT_MAGIC, sizeof STORE_FORMAT_MAGIC - 1);
    be_put32(ver + sizeof STORE_FORMAT_MAGIC - 1, STORE_FORMAT_VERSION);
    MDB_val k = {7, "version"}, v = {sizeof ver, ver};
    return mdb_put(txn, sys, &k, &v, 0);
}

/* Writes the format marker and the first table id of a new store. */
static int
store_format_init(MDB_txn *txn, MDB_dbi sys)
{
    unsigned char next[4];
    be_put32(next, 1);
    int rc = store_format_mark(txn, sys);
    if (rc)
        return rc;
    MDB_val k = {13, "next_table_id"}, v = {4, next};
    return mdb_put(txn, sys, &k, &v, 0);
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

/* Calls "fn" with each entry of database "dbi" under table "table"'s key
 * prefix, in key order from the first key >= "start", until "fn" returns
 * non-zero, which is returned; STORE_OK at the table's end. */
static int
table_walk(StoreTxn *txn, MDB_dbi dbi, uint32_t table, MDB_val start,
           int (*fn)(void *ctx, MDB_val k, MDB_val v), void *ctx)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn->txn, dbi, &cur);
    if (rc)
        return store_status_of(rc);
    MDB_val k = start, v;
    for (MDB_cursor_op op = MDB_SET_RANGE;; op = MDB_NEXT) {
        rc = mdb_cursor_get(cur, &k, &v, op);
        if (rc == MDB_NOTFOUND || (rc == 0 && !key_has_table(k, table))) {
            rc = STORE_OK;
            break;
        }
        if (rc) {
            rc = store_status_of(rc);
            break;
        }
        if ((rc = fn(ctx, k, v)))
            break;
    }
    mdb_cursor_close(cur);
    return rc;
}

/* What table_recount adds up. */
typedef struct Recount {
    StoreTxn *t;
    uint32_t  table;
    uint64_t  n[CNT_N];
} Recount;

static int
recount_one(void *ctx, MDB_val k, MDB_val v)
{
    Recount *r = ctx;
    RecordHead h;
    KeyBuf dk;
    MDB_val dv;
    int rc = record_head_parse(v, &h);
    if (rc)
        return rc;
    r->n[CNT_RECORDS]++;
    int kind = 0;
    if (h.wake > 0) {
        deadline_key_build(&dk, r->table, h.wake, (const unsigned char *)k.mv_data + 4,
                           k.mv_size - 4);
        MDB_val dkv = key_val(&dk);
        if (mdb_get(r->t->txn, r->t->st->deadline, &dkv, &dv) != 0)
            return 0;
        kind = wait_kind(dv);
    }
    int cls = slot_class(h.wake, kind);
    if (cls >= 0)
        r->n[cls]++;
    return 0;
}

/* Counts the records of table "table" and their index entries from
 * scratch (see "counts" above), at O(1) per record. */
static int
table_recount(StoreTxn *t, uint32_t table)
{
    Recount r = {t, table, {0}};
    KeyBuf prefix;
    key_set_table(&prefix, table);
    int rc = table_walk(t, t->st->records, table, key_val(&prefix), recount_one, &r);
    return rc ? rc : counts_put(t, table, r.n);
}

static int catalog_entry_parse(MDB_val v, uint32_t *id_out, StoreBytes *def_out);

/* Brings a store of an earlier format to this one, in its open write
 * transaction "txn": counts every table (format 1 had no counts). */
static int
store_format_upgrade(Store *st, MDB_txn *txn)
{
    StoreTxn t = {.st = st, .txn = txn, .write = true};
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, st->catalog, &cur);
    if (rc)
        return store_status_of(rc);
    for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
        rc = mdb_cursor_get(cur, &k, &v, op);
        if (rc) {
            rc = rc == MDB_NOTFOUND ? STORE_OK : store_status_of(rc);
            break;
        }
        uint32_t id;
        if ((rc = catalog_entry_parse(v, &id, NULL)) || (rc = table_recount(&t, id)))
            break;
    }
    mdb_cursor_close(cur);
    return rc ? rc : store_format_mark(txn, st->sys);
}

/* Commits the top-level write transaction "txn" in the store's mode (see
 * "Durability"): without syncing while it is fast, else syncing its data
 * pages before its meta page.  The caller holds LMDB's writer lock, so the
 * mode cannot change meanwhile and only one thread sets the flag. */
static int
store_commit(Store *st, MDB_txn *txn)
{
    bool fast = __atomic_load_n(&st->shared->fast, __ATOMIC_ACQUIRE) != 0;
    if (fast != st->nosync) {
        int rc = mdb_env_set_flags(st->env, MDB_NOSYNC, fast ? 1 : 0);
        if (rc) {
            mdb_txn_abort(txn);
            return rc;
        }
        st->nosync = fast;
    }
    return mdb_txn_commit(txn);
}

static int store_env_begin(Store *st, unsigned flags, MDB_txn **out);

/* For a store opened for reading only: recognises its databases and
 * format in a read transaction.  MDB_INVALID when it is not a queuefs
 * store (or an empty one), MDB_VERSION_MISMATCH when it is of an earlier
 * format that only a write can bring up to date. */
static int
store_schema_read(Store *st)
{
    MDB_txn *txn;
    int rc = store_env_begin(st, MDB_RDONLY, &txn);
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
        (rc = store_dbi_open(txn, "meta", 0, false, &st->meta))) {
        mdb_txn_abort(txn);
        pthread_rwlock_unlock(&st->map_lock);
        return rc == MDB_NOTFOUND ? MDB_INVALID : rc;
    }
    if (version < STORE_FORMAT_COUNTED) {
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
    int rc = store_env_begin(st, 0, &txn);
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
    if ((rc = fresh ? store_format_init(txn, st->sys)
                    : store_format_check(txn, st->sys, &version)))
        goto fail;
    if ((rc = store_dbi_open(txn, "catalog", 0, fresh, &st->catalog)) ||
        (rc = store_dbi_open(txn, "records", 0, fresh, &st->records)) ||
        (rc = store_dbi_open(txn, "ready", MDB_DUPSORT, fresh, &st->ready)) ||
        (rc = store_dbi_open(txn, "deadline", 0, fresh, &st->deadline)) ||
        (rc = store_dbi_open(txn, "meta", 0, fresh, &st->meta)))
        goto fail;
    if (version < STORE_FORMAT_COUNTED && (rc = store_format_upgrade(st, txn)))
        goto fail_status;
    rc = store_commit(st, txn);
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
fail_status:
    mdb_txn_abort(txn);
    pthread_rwlock_unlock(&st->map_lock);
    return rc == STORE_FULL ? MDB_MAP_FULL : rc == STORE_CORRUPT ? MDB_CORRUPTED : EIO;
fail:
    mdb_txn_abort(txn);
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
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || n == 0 || n > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)n << shift;
    return 0;
}

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

/* Reads LMDB's idea of the map size and the last committed transaction id.
 * The caller holds the map lock (either way): the meta pages live in the
 * map. */
static void
store_env_info(Store *st, size_t *map_size, uint64_t *last_txnid)
{
    MDB_envinfo info;
    if (mdb_env_info(st->env, &info) != 0)
        memset(&info, 0, sizeof info);
    if (map_size)
        *map_size = info.me_mapsize;
    if (last_txnid)
        *last_txnid = info.me_last_txnid;
}

/* The id of the last committed transaction, taking the map lock shared. */
static uint64_t
store_last_txnid(Store *st)
{
    uint64_t id;
    pthread_rwlock_rdlock(&st->map_lock);
    store_env_info(st, NULL, &id);
    pthread_rwlock_unlock(&st->map_lock);
    return id;
}

/* Raises the shared counter at "p" to at least "v". */
static void
counter_raise(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    while (cur < v &&
           !__atomic_compare_exchange_n(p, &cur, v, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
}

/* Reads the shared counter at "p". */
static uint64_t
counter_get(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Adds "n" to the statistic at "p". */
static void
stat_add(uint64_t *p, uint64_t n)
{
    __atomic_add_fetch(p, n, __ATOMIC_RELAXED);
}

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

/* Becomes the sync leader (see sync_lead_locked). */
static void
sync_lock(Store *st)
{
    pthread_mutex_lock(&st->sync_mu);
    sync_lead_locked(st);
}

/* Ends the lead sync_lock took. */
static void
sync_unlock(Store *st)
{
    sync_unlead_locked(st);
    pthread_mutex_unlock(&st->sync_mu);
}

/* Opens (creating) "queuefs.sync" in "location" and maps its counters: 0
 * or an errno.  Counters of another boot, about another data file, or ahead
 * of the store's last transaction, are reset (to the safe mode). */
static int
store_sync_open(Store *st, const char *location)
{
    size_t plen = strlen(location) + sizeof "/" SYNC_FILE;
    char *path = store_alloc(plen);
    SyncShared *sh = MAP_FAILED;
    struct stat sb, db;
    snprintf(path, plen, "%s/%s", location, SYNC_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    free(path);
    if (fd < 0)
        return errno;
    int rc = 0;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            rc = errno;
            close(fd);
            return rc;
        }
    if (fstat(fd, &sb) || fstat(st->data_fd, &db))
        rc = errno;
    else if (sb.st_size < SYNC_FILE_LEN)
        rc = posix_fallocate(fd, 0, SYNC_FILE_LEN);
    if (!rc && (sh = mmap(NULL, SYNC_FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
                   MAP_FAILED)
        rc = errno;
    if (!rc) {
        uint64_t last = store_last_txnid(st);
        if (sh->magic != SYNC_MAGIC || sh->dev != (uint64_t)db.st_dev ||
            sh->ino != (uint64_t)db.st_ino || strncmp(sh->boot, st->boot, sizeof sh->boot) ||
            counter_get(&sh->committed) > last || counter_get(&sh->synced) > last ||
            counter_get(&sh->failed) > last || counter_get(&sh->record) > last) {
            Checkpoint newest;
            *sh = (SyncShared){.magic = SYNC_MAGIC, .dev = (uint64_t)db.st_dev,
                               .ino = (uint64_t)db.st_ino};
            snprintf(sh->boot, sizeof sh->boot, "%s", st->boot);
            if (checkpoint_read(st->ckpt_fd, &newest) == 0)
                sh->record_seq = newest.seq;
            msync(sh, SYNC_FILE_LEN, MS_ASYNC);
        }
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

/* Gives LMDB's lock file, when it exists, its disk blocks now, so that
 * touching a reader slot never finds a full disk (a mapped page that cannot
 * be backed is a crash, not an error).  Runs before this process opens the
 * environment: closing a descriptor of the lock file would drop LMDB's
 * fcntl locks on it. */
static void
store_lockfile_allocate(const char *location)
{
    size_t plen = strlen(location) + sizeof "/lock.mdb";
    char *path = store_alloc(plen);
    struct stat sb;
    snprintf(path, plen, "%s/lock.mdb", location);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return;
    if (fstat(fd, &sb) == 0 && sb.st_size > 0)
        (void)fallocate(fd, 0, 0, sb.st_size);   /* no emulation: never writes */
    close(fd);
}

static int sync_once(Store *st, uint64_t id);

/* Makes every commit so far durable: STORE_OK, or the sync's failure.
 * Used once at open, whatever earlier failures were recorded. */
static int
store_sync_all(Store *st)
{
    uint64_t last = store_last_txnid(st);
    counter_raise(&st->shared->committed, last);
    if (!st->sync)
        return 0;
    sync_lock(st);
    int rc = sync_once(st, last);
    sync_unlock(st);
    return rc;
}

/* Sets the initial map: the requested size, or the data file's if larger,
 * but no more than the disk has room for. */
static int
store_map_init(Store *st, size_t requested)
{
    size_t cur;
    uint64_t file = store_file_size(st);
    uint64_t want = requested > file ? requested : file;
    uint64_t room = store_map_room(st);
    if (want > room)
        want = room;
    want = page_floor(want);
    store_env_info(st, &cur, NULL);
    int rc = 0;
    if (want && want != cur)
        rc = mdb_env_set_mapsize(st->env, (size_t)want);
    store_env_info(st, &cur, NULL);
    __atomic_store_n(&st->map_size, cur, __ATOMIC_RELAXED);
    return rc;
}

static int checkpoint_take(Store *st);
static void store_pin_set(Store *st, MDB_txn *pin, uint64_t id);
static int checkpoint_trust_disk(Store *st);
static int store_first_checkpoint(Store *st);
static void *checkpoint_ticker(void *arg);
static uint64_t store_room_pages(Store *st);

/* Opens the environment of "st" at "location" with its first checkpoint:
 * puts the store back to its checkpoint after a machine crash, opens LMDB,
 * maps the shared counters and takes a checkpoint before any commit (which
 * also clears the reader slots of dead processes).  "*what" says what
 * failed.  0 or an errno or LMDB code. */
/* store_env_open for a store opened for reading only: LMDB read-only, no
 * checkpoint file, and the shared counters in memory of this process's own
 * (it neither syncs nor commits, and none of its waits is on another's
 * write). */
static int
store_env_open_read_only(Store *st, const char *location, size_t map_size, const char **what)
{
    MDB_stat ms;
    int rc;
    *what = "cannot create the environment";
    if ((rc = mdb_env_create(&st->env)))
        return rc;
    if ((rc = mdb_env_set_maxdbs(st->env, STORE_MAX_DBS)) ||
        (rc = mdb_env_set_maxreaders(st->env, STORE_MAX_READERS)) ||
        (rc = mdb_env_set_mapsize(st->env, map_size)))
        return rc;
    *what = "cannot open the environment for reading";
    rc = mdb_env_open(st->env, location, MDB_NOTLS | MDB_RDONLY, 0600);
    struct statvfs fs;
    if (rc == EACCES && statvfs(location, &fs) == 0 && (fs.f_flag & ST_RDONLY)) {
        /* The lock file is another user's on a read-only filesystem: read
         * without locks, as LMDB itself does there when it may open it. */
        mdb_env_close(st->env);
        st->env = NULL;
        if ((rc = mdb_env_create(&st->env)) ||
            (rc = mdb_env_set_maxdbs(st->env, STORE_MAX_DBS)) ||
            (rc = mdb_env_set_mapsize(st->env, map_size)))
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
    if ((rc = store_map_init(st, map_size)))
        return rc;
    SyncShared *sh = mmap(NULL, SYNC_FILE_LEN, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return errno;
    sh->magic = SYNC_MAGIC;
    st->shared = sh;
    st->sync_fd = -1;
    st->checkpoints = false;
    return 0;
}

static int
store_env_open(Store *st, const char *location, size_t map_size, const char **what)
{
    unsigned flags = MDB_NOTLS | MDB_NOMETASYNC;   /* safe until a checkpoint */
    MDB_stat ms;
    unsigned char meta[2][CHECKPOINT_META_LEN];
    uint64_t newest;
    int rc;

    if (st->read_only)
        return store_env_open_read_only(st, location, map_size, what);
    *what = "cannot open " CHECKPOINT_FILE;
    if ((st->ckpt_fd = checkpoint_open(location)) < 0)
        return -st->ckpt_fd;
    *what = "cannot put the store back to its last checkpoint";
    size_t plen = strlen(location) + sizeof "/data.mdb";
    char *data_path = store_alloc(plen);
    snprintf(data_path, plen, "%s/data.mdb", location);
    rc = checkpoint_recover(st->ckpt_fd, data_path, st->boot);
    free(data_path);
    if (rc)
        return rc;
    *what = "cannot create the environment";
    if ((rc = mdb_env_create(&st->env)))
        return rc;
    if ((rc = mdb_env_set_maxdbs(st->env, STORE_MAX_DBS)) ||
        (rc = mdb_env_set_maxreaders(st->env, STORE_MAX_READERS)) ||
        (rc = mdb_env_set_mapsize(st->env, map_size)))
        return rc;
    *what = "cannot open the environment";
    store_lockfile_allocate(location);
    if ((rc = mdb_env_open(st->env, location, flags, 0600)) ||
        (rc = mdb_env_get_fd(st->env, &st->data_fd)) || (rc = mdb_env_stat(st->env, &ms)))
        return rc;
    st->page_size = ms.ms_psize;
    *what = "cannot size the map";
    if ((rc = store_map_init(st, map_size)))
        return rc;
    (void)store_room_pages(st);
    *what = "cannot open " SYNC_FILE;
    if ((rc = store_sync_open(st, location)))
        return rc;
    *what = "cannot take a checkpoint of the store";
    st->checkpoints = st->page_size >= CHECKPOINT_META_LEN &&
                      checkpoint_meta_read(st->data_fd, st->page_size, meta, &newest) == 0;
    if (!st->checkpoints) {
        /* Meta pages of another layout: always safe. */
        if ((rc = mdb_reader_check(st->env, NULL)))
            return rc;
        return store_sync_all(st);
    }
    /* A process takes its first checkpoint before its first commit, so an
     * open that only reads waits for no writer and syncs nothing; a new
     * store's first commit is the schema's, just after this. */
    return store_last_txnid(st) == 0 ? store_first_checkpoint(st) : 0;
}

/* Drops this process's pin, which the environment's closing would drop
 * anyway, leaving the store safe first (see "Durability") when the newest
 * checkpoint record is this pin's. */
static void
store_unpin(Store *st)
{
    sync_lock(st);
    if (st->pin && st->pin_id >= counter_get(&st->shared->record))
        (void)checkpoint_trust_disk(st);
    store_pin_set(st, NULL, UINT64_MAX);
    sync_unlock(st);
}

/* Releases what store_open() set up; "locks" says whether its locks were
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
    if (locks) {
        pthread_cond_destroy(&st->tick_cv);
        pthread_mutex_destroy(&st->tick_mu);
        pthread_cond_destroy(&st->group_cv);
        pthread_cond_destroy(&st->sync_cv);
        pthread_mutex_destroy(&st->sync_mu);
        pthread_mutex_destroy(&st->group_mu);
        pthread_rwlock_destroy(&st->map_lock);
    }
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
    bool rw = false, group = false, sync = false, scv = false, gcv = false, tick = false;
    if (!(rc = pthread_rwlock_init(&st->map_lock, NULL)))
        rw = true;
    if (!rc && !(rc = pthread_mutex_init(&st->group_mu, NULL)))
        group = true;
    if (!rc && !(rc = pthread_mutex_init(&st->sync_mu, NULL)))
        sync = true;
    if (!rc && !(rc = pthread_cond_init(&st->sync_cv, NULL)))
        scv = true;
    if (!rc && !(rc = pthread_cond_init(&st->group_cv, NULL)))
        gcv = true;
    if (!rc && !(rc = pthread_mutex_init(&st->tick_mu, NULL)))
        tick = true;
    if (!rc && (rc = pthread_cond_init(&st->tick_cv, &monotonic)) == 0) {
        pthread_condattr_destroy(&monotonic);
        return 0;
    }
    pthread_condattr_destroy(&monotonic);
    if (tick)
        pthread_mutex_destroy(&st->tick_mu);
    if (gcv)
        pthread_cond_destroy(&st->group_cv);
    if (scv)
        pthread_cond_destroy(&st->sync_cv);
    if (sync)
        pthread_mutex_destroy(&st->sync_mu);
    if (group)
        pthread_mutex_destroy(&st->group_mu);
    if (rw)
        pthread_rwlock_destroy(&st->map_lock);
    return rc;
}

int
store_open(const char *location, const StoreOptions *opts, Store **out,
           char *errbuf, size_t errlen)
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
                           "QUEUEFS_MAP_SIZE: expected a size in bytes such as 67108864 or 64M",
                           0);
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
    st = store_alloc(sizeof *st);
    memset(st, 0, sizeof *st);
    st->read_only = read_only;
    struct stat dir;
    if (stat(location, &dir) == 0) {
        st->owner_known = true;
        st->owner_uid = dir.st_uid;
        st->owner_gid = dir.st_gid;
    }
    st->sync = !opts || opts->sync;
    st->sync_fd = -1;
    st->ckpt_fd = -1;
    st->pin_id = UINT64_MAX;
    st->queue_tail = &st->queue;
    if (opts && opts->boot_id)
        snprintf(st->boot, sizeof st->boot, "%s", opts->boot_id);
    else
        checkpoint_boot_id(st->boot);
    what = "cannot create a lock";
    if ((rc = store_locks_init(st)))
        goto fail;
    locks = true;
    if ((rc = store_env_open(st, location, map_size, &what)))
        goto fail;
    what = "cannot read the store's format";
    if ((rc = store_schema_open(st))) {
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
    if (st->checkpoints) {
        /* The thread takes no signals: they stay with the caller's threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        rc = pthread_create(&st->ticker, NULL, checkpoint_ticker, st);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc)
            goto fail;
        st->ticking = true;
    }
    *out = st;
    return STORE_OK;
fail:
    store_open_message(errbuf, errlen, location, what, rc);
    if (st && st->pin && st->shared)
        store_unpin(st);
    if (st)
        store_free(st, locks);
    return store_status_of(rc);
}

void
store_close(Store *st)
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
        store_unpin(st);
    store_free(st, true);
}

const char *
store_strerror(int status)
{
    if (status < 0 || (size_t)status >= sizeof store_messages / sizeof store_messages[0])
        return "unknown store error";
    return store_messages[status];
}

int64_t
store_now(Store *st)
{
    struct timespec ts;
    (void)st;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t
store_version(Store *st)
{
    /* The id a reader sees, not the newest meta page: LMDB writes that page
     * before a commit is visible to readers (for a whole sync, with sync
     * on), and a waiter that took that number would wait for a change it
     * has already missed. */
    StoreTxn *txn;
    if (store_txn_begin(st, false, &txn) != STORE_OK)
        return 0;
    uint64_t id = (uint64_t)mdb_txn_id(txn->txn);
    store_txn_abort(txn);
    return id;
}

static void store_changed(Store *st);

uint64_t
store_changes(Store *st)
{
    return __atomic_load_n(&st->shared->changes, __ATOMIC_SEQ_CST);
}

bool
store_wait_change(Store *st, uint64_t seen, int64_t until_ns)
{
    SyncShared *sh = st->shared;
    /* Counted before the counter is read again: a committer that bumps it
     * after that read sees the count and wakes the futex. */
    __atomic_add_fetch(&sh->change_waiters, 1, __ATOMIC_SEQ_CST);
    uint32_t now_seen = __atomic_load_n(&sh->changes, __ATOMIC_SEQ_CST);
    if (now_seen == (uint32_t)seen && store_now(st) < until_ns) {
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
store_wake(Store *st)
{
    store_changed(st);
}

void
store_stats(Store *st, StoreStats *out)
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
store_owner(StoreTxn *txn, uint32_t *uid, uint32_t *gid)
{
    const Store *st = txn->st;
    if (!st->owner_known)
        return false;
    *uid = (uint32_t)st->owner_uid;
    *gid = (uint32_t)st->owner_gid;
    return true;
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

/* Adopts the map size another process grew the environment to — no more
 * than the disk has room for — once no transaction of this process is open
 * (waits a few seconds at most). */
static int
store_map_adopt(Store *st)
{
    if (map_lock_exclusive(st))
        return EBUSY;
    size_t cur, room = store_map_room(st);
    int rc = mdb_env_set_mapsize(st->env, 0);
    store_env_info(st, &cur, NULL);
    if (rc == 0 && cur > room) {
        rc = mdb_env_set_mapsize(st->env, room);    /* LMDB keeps what is used */
        store_env_info(st, &cur, NULL);
    }
    __atomic_store_n(&st->map_size, cur, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
}

/* Grows the map — doubles it, within the room the disk has — once no
 * transaction of this process is open.  MDB_MAP_FULL when it cannot grow. */
static int
store_map_grow(Store *st)
{
    if (map_lock_exclusive(st))
        return EBUSY;
    size_t cur, room = store_map_room(st);
    store_env_info(st, &cur, NULL);
    size_t want = cur > SIZE_MAX / 2 ? (size_t)page_floor(SIZE_MAX) : cur * 2;
    if (want > room)
        want = room;
    int rc = MDB_MAP_FULL;
    if (want > cur && (rc = mdb_env_set_mapsize(st->env, want)) == 0) {
        stat_add(&st->grows, 1);
        store_env_info(st, &cur, NULL);
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
 * checkpoint and runs again (store_unpin_freed). */

/* The reserve for a store that has "room" pages: RESERVE_SHARE of it,
 * within RESERVE_MIN_PAGES and RESERVE_MAX_PAGES. */
static uint64_t
reserve_of(uint64_t room)
{
    uint64_t r = room / RESERVE_SHARE;
    return r < RESERVE_MIN_PAGES ? RESERVE_MIN_PAGES : r > RESERVE_MAX_PAGES ? RESERVE_MAX_PAGES : r;
}

/* The largest map the disk allows, in pages, with the data file's size
 * and the reserve brought up to date. */
static uint64_t
store_room_pages(Store *st)
{
    uint64_t room = store_map_room(st) / st->page_size;
    counter_raise(&st->file_bytes, store_file_size(st));
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

/* STORE_OK when write transaction "txn", as it stands, leaves the reserve
 * free; else STORE_FULL.  Looks at the disk only when the data file as
 * last seen is too small to tell. */
static int
reserve_check(Store *st, MDB_txn *txn)
{
    uint64_t used = txn_used_pages(st, txn);
    if (!used)
        return STORE_OK;             /* no figure: LMDB itself will tell */
    uint64_t reserve = __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED);
    if ((used + reserve) * st->page_size <= __atomic_load_n(&st->file_bytes, __ATOMIC_RELAXED))
        return STORE_OK;
    uint64_t room = store_room_pages(st);
    reserve = __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED);
    return used + reserve <= room ? STORE_OK : STORE_FULL;
}

/* As the holder of LMDB's writer lock: allocates the data file up to the
 * pages in use plus one and a half reserves when it holds less than the
 * pages in use plus the reserve, as far as the disk has room.  Failures
 * are left for the writes to meet. */
static void
store_reserve_allocate(Store *st)
{
    MDB_envinfo info;
    if (mdb_env_info(st->env, &info) != 0)
        return;
    uint64_t used = (uint64_t)info.me_last_pgno + 1;
    uint64_t reserve = __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED);
    if ((used + reserve) * st->page_size <= __atomic_load_n(&st->file_bytes, __ATOMIC_RELAXED))
        return;
    uint64_t room = store_room_pages(st), file = store_file_size(st);
    reserve = __atomic_load_n(&st->reserve_pages, __ATOMIC_RELAXED);
    uint64_t want = (used + reserve + reserve / 2) * st->page_size;
    if (want > room * st->page_size)
        want = room * st->page_size;
    if (want > file && want <= (uint64_t)INT64_MAX &&
        fallocate(st->data_fd, 0, (off_t)file, (off_t)(want - file)) == 0)
        counter_raise(&st->file_bytes, want);
}

void
store_txn_use_reserve(StoreTxn *txn)
{
    txn->reserve = true;
}

static int checkpoint_take(Store *st);

/* For a write of the reserve's that found the map full and cannot grow
 * it: the pages the commits since the last checkpoint freed are pinned
 * (see "Durability"), so it takes a checkpoint of the newest commit, which
 * drops this process's older pin; from the second try on it first waits
 * two checkpoint intervals, in which the other processes drop theirs.  0
 * when the write may run again. */
static int
store_unpin_freed(Store *st, int attempt)
{
    if (!st->checkpoints)
        return -1;
    if (attempt > 0) {
        struct timespec pause = {0, 2L * CHECKPOINT_INTERVAL_MS * 1000000L};
        nanosleep(&pause, NULL);
    }
    sync_lock(st);
    int rc = checkpoint_take(st);
    sync_unlock(st);
    return rc;
}

/* ---- durability ---- */

static int store_env_begin(Store *st, unsigned flags, MDB_txn **out);

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

/* Fills in what every checkpoint record of this store says. */
static void
checkpoint_fill(Store *st, Checkpoint *c, uint64_t txnid, bool trust_disk)
{
    c->txnid = txnid;
    c->dev = st->shared->dev;
    c->ino = st->shared->ino;
    c->trust_disk = trust_disk;
    snprintf(c->boot, sizeof c->boot, "%s", st->boot);
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
    int rc = checkpoint_write(st->ckpt_fd, c);
    if (!rc) {
        sh->record_seq = c->seq;
        __atomic_store_n(&sh->record, c->txnid, __ATOMIC_RELEASE);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (clear_dead && now.tv_sec != st->dead_cleared_at) {
            mdb_reader_check(st->env, NULL);
            st->dead_cleared_at = now.tv_sec;
        }
    }
    flock(st->ckpt_fd, LOCK_UN);
    return rc;
}

/* Takes LMDB's writer lock — a write transaction "*writer", with the map
 * lock shared, that the caller aborts and unlocks — so that nothing
 * commits meanwhile; "*last" is the last committed transaction. */
static int
writer_lock(Store *st, MDB_txn **writer, uint64_t *last)
{
    int rc = store_env_begin(st, 0, writer);
    if (!rc)
        *last = mdb_txn_id(*writer) - 1;
    return rc;
}

/* Takes a checkpoint of the last committed transaction (see "Durability"):
 * pins it and reads its meta pages under the writer lock, syncs the file,
 * records it, and makes the store fast.  The caller holds the sync lock.
 * 0, or an errno or LMDB code (a failed sync is noted in "failed"). */
static int
checkpoint_take(Store *st)
{
    SyncShared *sh = st->shared;
    MDB_txn *writer, *pin = NULL;
    Checkpoint c;
    uint64_t newest, id;
    memset(&c, 0, sizeof c);
    int rc = writer_lock(st, &writer, &id);
    if (rc)
        return rc;
    rc = checkpoint_meta_read(st->data_fd, st->page_size, c.meta, &newest);
    if (!rc && newest != id)
        rc = MDB_CORRUPTED;
    if (!rc)
        rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &pin);
    if (!rc && mdb_txn_id(pin) != id)
        rc = MDB_CORRUPTED;
    mdb_txn_abort(writer);
    pthread_rwlock_unlock(&st->map_lock);
    if (!rc) {
        uint64_t target = counter_get(&sh->committed);
        stat_add(&st->syncs, 1);
        rc = mdb_env_sync(st->env, 1);
        if (!rc) {
            checkpoint_fill(st, &c, id, false);
            rc = checkpoint_record(st, &c, true);
        }
        if (store_status_of(rc) == STORE_IO)
            counter_raise(&sh->failed, target > id ? target : id);
    }
    if (rc) {
        if (pin)
            mdb_txn_abort(pin);
        return rc;
    }
    store_pin_set(st, pin, id);
    __atomic_store_n(&st->checkpointed, true, __ATOMIC_RELEASE);
    __atomic_store_n(&sh->fast, 1, __ATOMIC_RELEASE);
    counter_raise(&sh->synced, id);
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
    stat_add(&st->syncs, 1);
    rc = mdb_env_sync(st->env, 1);
    if (!rc) {
        checkpoint_fill(st, &c, id, true);
        rc = checkpoint_record(st, &c, false);
    }
    if (!rc) {
        /* Nothing commits meanwhile: this process holds the writer lock. */
        __atomic_store_n(&sh->fast, 0, __ATOMIC_RELEASE);
        counter_raise(&sh->synced, id);
    }
    mdb_txn_abort(writer);
    pthread_rwlock_unlock(&st->map_lock);
    return rc;
}

/* Every CHECKPOINT_INTERVAL_MS: takes a checkpoint when this process has
 * committed since the last checkpoint (another process's commits are its
 * own to cover) or, having committed, finds the store safe; and drops this
 * process's pin once a newer record exists.  A pin keeps LMDB from reusing every page freed
 * after it, so the data file grows by what is written between two
 * checkpoints: the interval bounds that as well as what a machine crash
 * may undo with sync off. */
static void
checkpoint_tick(Store *st)
{
    SyncShared *sh = st->shared;
    uint64_t mine = __atomic_load_n(&st->last_commit, __ATOMIC_ACQUIRE);
    bool stale_pin = __atomic_load_n(&st->pin_id, __ATOMIC_ACQUIRE) < counter_get(&sh->record);
    bool fast = __atomic_load_n(&sh->fast, __ATOMIC_ACQUIRE);
    if (!stale_pin && counter_get(&sh->synced) >= mine && (fast || !mine))
        return;
    sync_lock(st);
    if (counter_get(&sh->synced) < mine || (mine && !__atomic_load_n(&sh->fast, __ATOMIC_ACQUIRE)))
        (void)checkpoint_take(st);
    if (st->pin && st->pin_id < counter_get(&sh->record))
        store_pin_set(st, NULL, UINT64_MAX);
    sync_unlock(st);
}

/* The checkpoint thread: checkpoint_tick() every CHECKPOINT_INTERVAL_MS
 * until the store closes. */
static void *
checkpoint_ticker(void *arg)
{
    Store *st = arg;
    pthread_mutex_lock(&st->tick_mu);
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
        checkpoint_tick(st);
        pthread_mutex_lock(&st->tick_mu);
    }
    pthread_mutex_unlock(&st->tick_mu);
    return NULL;
}

/* Before this process's first commit: a checkpoint of its own (see
 * "Durability"), which its open takes unless the disk failed then.  0, or
 * why there is none: then nothing may be committed. */
static int
store_first_checkpoint(Store *st)
{
    if (!st->checkpoints || __atomic_load_n(&st->checkpointed, __ATOMIC_ACQUIRE))
        return 0;
    sync_lock(st);
    int rc = st->checkpointed ? 0 : checkpoint_take(st);
    sync_unlock(st);
    return rc;
}

/* As the sync leader: makes every commit so far outlive a machine crash,
 * unless "id" already does.  0 or an errno or LMDB code. */
static int
sync_once(Store *st, uint64_t id)
{
    SyncShared *sh = st->shared;
    if (counter_get(&sh->synced) >= id)
        return 0;
    if (st->checkpoints && __atomic_load_n(&sh->fast, __ATOMIC_ACQUIRE))
        return checkpoint_take(st);
    uint64_t target = counter_get(&sh->committed);
    stat_add(&st->syncs, 1);
    int rc = mdb_env_sync(st->env, 1);
    counter_raise(rc ? &sh->failed : &sh->synced, target);
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
    if (counter_get(&st->shared->synced) < id)
        syscall(SYS_futex, &st->shared->sync_ends, FUTEX_WAIT, ends, &wait, NULL, 0);
    return 0;
}

/* Makes transaction "id" (committed) durable, sharing the sync with every
 * thread and process on the store: a thread that finds a sync under way —
 * in its process or another — waits for it, and returns at once if it
 * covered "id"; otherwise one of the waiters leads the next.  0, or the
 * errno of the failed sync (EIO also when an earlier sync failed after
 * "id" committed). */
static int
store_sync_upto(Store *st, uint64_t id)
{
    SyncShared *sh = st->shared;
    if (!st->sync)
        return 0;
    int rc = 0;
    pthread_mutex_lock(&st->sync_mu);
    for (;;) {
        if (counter_get(&sh->failed) >= id) {
            rc = EIO;
            break;
        }
        if (counter_get(&sh->synced) >= id)
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

/* Notes that write transaction "id" of this process committed: raises
 * "committed" to the last id LMDB shows.  Returns the id to sync up to:
 * "id", or the last id when the commit changed nothing and so took none.
 * The caller still holds the map lock. */
static uint64_t
store_commit_note(Store *st, uint64_t id)
{
    uint64_t last;
    store_env_info(st, NULL, &last);
    counter_raise(&st->shared->committed, last);
    counter_raise(&st->last_commit, last);
    if (last >= id)
        store_changed(st);   /* it changed something: readers see it now */
    return id < last ? id : last;
}

/* Notes a failed commit: when the disk failed (with sync on, the commit's
 * own sync may have reported an earlier commit's lost pages), every commit
 * so far may be lost. */
static void
store_commit_failed(Store *st, int rc)
{
    if (st->sync && store_status_of(rc) == STORE_IO)
        counter_raise(&st->shared->failed, store_last_txnid(st));
}

/* ---- transactions ---- */

/* Begins an LMDB transaction (no parent) with the map lock held shared,
 * adopting a map another process grew; on success the caller releases the
 * lock when the transaction ends. */
static int
store_env_begin(Store *st, unsigned flags, MDB_txn **out)
{
    int rc = MDB_MAP_RESIZED;
    for (int tries = 0; rc == MDB_MAP_RESIZED && tries < STORE_BEGIN_TRIES; tries++) {
        pthread_rwlock_rdlock(&st->map_lock);
        rc = mdb_txn_begin(st->env, NULL, flags, out);
        if (rc == 0)
            return 0;
        pthread_rwlock_unlock(&st->map_lock);
        if (rc == MDB_MAP_RESIZED && (rc = store_map_adopt(st)) == 0)
            rc = MDB_MAP_RESIZED;    /* adopted: try again */
    }
    return rc;
}

int
store_txn_begin(Store *st, bool write, StoreTxn **out)
{
    MDB_txn *txn = NULL;
    *out = NULL;
    if (write && st->read_only)
        return STORE_READONLY;
    int rc = write ? store_first_checkpoint(st) : 0;
    if (!rc)
        rc = store_env_begin(st, write ? 0 : MDB_RDONLY, &txn);
    if (rc)
        return store_status_of(rc);
    if (write)
        store_reserve_allocate(st);
    StoreTxn *t = store_alloc(sizeof *t);
    *t = (StoreTxn){.st = st, .txn = txn, .write = write};
    *out = t;
    return STORE_OK;
}

int
store_txn_commit(StoreTxn *txn)
{
    Store *st = txn->st;
    bool write = txn->write;
    if (write && !txn->reserve && reserve_check(st, txn->txn)) {
        store_txn_abort(txn);
        return STORE_FULL;
    }
    uint64_t id = write ? mdb_txn_id(txn->txn) : 0;
    int rc = write ? store_commit(st, txn->txn) : mdb_txn_commit(txn->txn);
    if (write && rc == 0)
        id = store_commit_note(st, id);
    pthread_rwlock_unlock(&st->map_lock);
    free(txn);
    if (write && rc)
        store_commit_failed(st, rc);
    else if (write)
        rc = store_sync_upto(st, id);
    return store_status_of(rc);
}

void
store_txn_abort(StoreTxn *txn)
{
    if (!txn)
        return;
    mdb_txn_abort(txn->txn);
    pthread_rwlock_unlock(&txn->st->map_lock);
    free(txn);
}

/* ---- group commit ---- */

/* Runs request "r" in "parent": in a nested transaction of its own when
 * "nested", else directly in "parent" (which the caller then aborts if it
 * failed).  Returns what the caller gets: 0, fn's value or a StoreStatus;
 * "*full" says whether it failed for want of room (FULL_MAP, FULL_TXN). */
static int
group_run_one(Store *st, MDB_txn *parent, WriteReq *r, bool nested, int *full)
{
    MDB_txn *txn = parent;
    int res, rc;
    store_full_seen = FULL_NONE;
    if (nested && (rc = mdb_txn_begin(st->env, parent, 0, &txn))) {
        res = store_status_of(rc);
        *full = store_full_seen;
        return res;
    }
    StoreTxn t = {.st = st, .txn = txn, .write = true};
    res = r->fn(&t, r->ctx);
    if (res == 0 && !t.reserve)
        res = reserve_check(st, txn);
    r->reserve = t.reserve;
    if (nested) {
        if (res != 0)
            mdb_txn_abort(txn);
        else if ((rc = mdb_txn_commit(txn)))
            res = store_status_of(rc);
    }
    *full = res ? store_full_seen : FULL_NONE;
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
 * Returns the id of the last transaction committed (0: none). */
static uint64_t
group_run(Store *st, WriteReq *head)
{
    uint64_t last = 0;
    int grows = 0, unpins = 0;
    WriteReq *from = head;
    while (from) {
        MDB_txn *parent;
        int rc = store_first_checkpoint(st);
        if (!rc)
            rc = store_env_begin(st, 0, &parent);
        if (!rc)
            store_reserve_allocate(st);
        if (rc) {
            for (WriteReq *q = from; q; q = q->next)
                q->rc = store_status_of(rc);
            break;
        }
        bool nested = from->next != NULL;
        int full = FULL_NONE;
        WriteReq *r;
        for (r = from; r; r = r->next)
            if ((r->rc = group_run_one(st, parent, r, nested, &full)) && full != FULL_NONE)
                break;
        if (r == from || (!nested && from->rc != 0)) {
            /* It failed alone: the transaction holds nothing else. */
            mdb_txn_abort(parent);
            pthread_rwlock_unlock(&st->map_lock);
            if (full == FULL_MAP && grows < STORE_GROW_TRIES && store_map_grow(st) == 0) {
                grows++;
                continue;                /* run it again in the larger map */
            }
            if (full == FULL_MAP && from->reserve && unpins < STORE_UNPIN_TRIES &&
                store_unpin_freed(st, unpins++) == 0)
                continue;                /* run it again: the pinned pages are free */
            from = from->next;           /* it keeps its failure */
            continue;
        }
        uint64_t id = mdb_txn_id(parent);
        rc = store_commit(st, parent);
        if (rc == 0)
            id = store_commit_note(st, id);
        pthread_rwlock_unlock(&st->map_lock);
        if (rc == 0) {
            stat_add(&st->groups, 1);
            last = id;
            for (WriteReq *q = from; q != r; q = q->next)
                q->committed = q->rc == 0;
            from = r;                    /* one did not fit: it goes first next */
            continue;
        }
        store_commit_failed(st, rc);
        if (rc == MDB_MAP_FULL && grows < STORE_GROW_TRIES && store_map_grow(st) == 0) {
            grows++;
            continue;                    /* the commit needed room: all again */
        }
        if (rc == MDB_MAP_FULL && group_uses_reserve(from, r) && unpins < STORE_UNPIN_TRIES &&
            store_unpin_freed(st, unpins++) == 0)
            continue;                    /* all again: the pinned pages are free */
        for (WriteReq *q = from; q != r; q = q->next)
            if (q->rc == 0)
                q->rc = store_status_of(rc);
        from = r;
    }
    return last;
}

int
store_write(Store *st, int (*fn)(StoreTxn *txn, void *ctx), void *ctx)
{
    if (st->read_only)
        return STORE_READONLY;
    WriteReq me = {.fn = fn, .ctx = ctx};
    pthread_mutex_lock(&st->group_mu);
    *st->queue_tail = &me;
    st->queue_tail = &me.next;
    st->waiting++;
    while (!me.done && (me.in_group || st->leading))
        pthread_cond_wait(&st->group_cv, &st->group_mu);
    if (me.done) {
        pthread_mutex_unlock(&st->group_mu);
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
    stat_add(&st->writes, n);

    uint64_t last = group_run(st, head);

    /* The next group may begin while this one's commit is synced. */
    pthread_mutex_lock(&st->group_mu);
    st->leading = false;
    pthread_cond_broadcast(&st->group_cv);
    pthread_mutex_unlock(&st->group_mu);
    int src = last ? store_sync_upto(st, last) : 0;

    pthread_mutex_lock(&st->group_mu);
    for (WriteReq *q = head; q; q = q->next) {
        if (src && q->committed)
            q->rc = store_status_of(src);
        q->done = true;
    }
    int rc = me.rc;
    pthread_cond_broadcast(&st->group_cv);
    pthread_mutex_unlock(&st->group_mu);
    return rc;
}

/* ---- the catalog ---- */

/* Builds the catalog key of "name": STORE_TOOBIG when it is longer than
 * STORE_MAX_KEY, STORE_NOTFOUND when empty (LMDB keys are never empty, so
 * no table has the empty name). */
static int
catalog_key_build(KeyBuf *k, const char *name)
{
    size_t len = strlen(name);
    if (len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    if (len == 0)
        return STORE_NOTFOUND;
    k->len = 0;
    key_append(k, name, len);
    return STORE_OK;
}

/* Writes the catalog entry name → [id][def]. */
static int
catalog_entry_put(StoreTxn *t, KeyBuf *k, uint32_t id, StoreBytes def)
{
    unsigned char *buf = store_alloc(4 + def.len);
    be_put32(buf, id);
    bytes_copy(buf + 4, def.data, def.len);
    MDB_val kv = key_val(k), v = {.mv_size = 4 + def.len, .mv_data = buf};
    int rc = mdb_put(t->txn, t->st->catalog, &kv, &v, 0);
    free(buf);
    return store_status_of(rc);
}

/* Decodes a catalog value into id and definition. */
static int
catalog_entry_parse(MDB_val v, uint32_t *id_out, StoreBytes *def_out)
{
    if (v.mv_size < 4)
        return STORE_CORRUPT;
    if (id_out)
        *id_out = be_get32(v.mv_data);
    if (def_out)
        *def_out = (StoreBytes){(const unsigned char *)v.mv_data + 4, v.mv_size - 4};
    return STORE_OK;
}

/* Takes the next table id from sys "next_table_id". */
static int
catalog_id_next(StoreTxn *t, uint32_t *id)
{
    MDB_val k = {13, "next_table_id"}, v;
    int rc = mdb_get(t->txn, t->st->sys, &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? STORE_CORRUPT : store_status_of(rc);
    if (v.mv_size != 4)
        return STORE_CORRUPT;
    uint32_t next = be_get32(v.mv_data);
    if (next == UINT32_MAX)
        return STORE_FULL;
    unsigned char buf[4];
    be_put32(buf, next + 1);
    v = (MDB_val){4, buf};
    if ((rc = mdb_put(t->txn, t->st->sys, &k, &v, 0)))
        return store_status_of(rc);
    *id = next;
    return STORE_OK;
}

int
store_table_create(StoreTxn *txn, const char *name, StoreBytes def, uint32_t *id_out)
{
    KeyBuf k;
    uint32_t id = 0;
    int rc = catalog_key_build(&k, name);
    if (rc)
        return STORE_TOOBIG;         /* too long, or empty */
    MDB_val kv = key_val(&k), v;
    rc = mdb_get(txn->txn, txn->st->catalog, &kv, &v);
    if (rc == 0)
        return STORE_EXISTS;
    if (rc != MDB_NOTFOUND)
        return store_status_of(rc);
    /* def may point into LMDB memory: copy it before the first write. */
    unsigned char *copy = store_alloc(def.len);
    bytes_copy(copy, def.data, def.len);
    rc = catalog_id_next(txn, &id);
    if (rc == STORE_OK)
        rc = catalog_entry_put(txn, &k, id, (StoreBytes){copy, def.len});
    free(copy);
    if (rc == STORE_OK && id_out)
        *id_out = id;
    return rc;
}

int
store_table_redefine(StoreTxn *txn, const char *name, StoreBytes def)
{
    KeyBuf k;
    uint32_t id;
    int rc = catalog_key_build(&k, name);
    if (rc)
        return rc;
    MDB_val kv = key_val(&k), v;
    if ((rc = mdb_get(txn->txn, txn->st->catalog, &kv, &v)))
        return store_status_of(rc);
    if ((rc = catalog_entry_parse(v, &id, NULL)))
        return rc;
    return catalog_entry_put(txn, &k, id, def);
}

int
store_table_get(StoreTxn *txn, const char *name, uint32_t *id_out, StoreBytes *def_out)
{
    KeyBuf k;
    int rc = catalog_key_build(&k, name);
    if (rc)
        return rc;
    MDB_val kv = key_val(&k), v;
    if ((rc = mdb_get(txn->txn, txn->st->catalog, &kv, &v)))
        return store_status_of(rc);
    return catalog_entry_parse(v, id_out, def_out);
}

int
store_table_each(StoreTxn *txn,
                 int (*fn)(void *ctx, const char *name, uint32_t id, StoreBytes def),
                 void *ctx)
{
    MDB_cursor *cur;
    MDB_val k, v;
    char name[STORE_MAX_KEY + 1];
    uint32_t id;
    StoreBytes def;
    int rc = mdb_cursor_open(txn->txn, txn->st->catalog, &cur);
    if (rc)
        return store_status_of(rc);
    for (MDB_cursor_op op = MDB_FIRST;; op = MDB_NEXT) {
        rc = mdb_cursor_get(cur, &k, &v, op);
        if (rc) {
            rc = rc == MDB_NOTFOUND ? STORE_OK : store_status_of(rc);
            break;
        }
        if (k.mv_size > STORE_MAX_KEY) {
            rc = STORE_CORRUPT;
            break;
        }
        if ((rc = catalog_entry_parse(v, &id, &def)))
            break;
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = '\0';
        if ((rc = fn(ctx, name, id, def)))
            break;
    }
    mdb_cursor_close(cur);
    return rc;
}

int
store_table_drop(StoreTxn *txn, const char *name)
{
    KeyBuf k;
    uint32_t id;
    int rc = catalog_key_build(&k, name);
    if (rc)
        return rc;
    MDB_val kv = key_val(&k), v;
    if ((rc = mdb_get(txn->txn, txn->st->catalog, &kv, &v)))
        return store_status_of(rc);
    if ((rc = catalog_entry_parse(v, &id, NULL)))
        return rc;
    if ((rc = mdb_del(txn->txn, txn->st->catalog, &kv, NULL)))
        return store_status_of(rc);
    if ((rc = db_delete_table(txn->txn, txn->st->records, id, 0)) ||
        (rc = db_delete_table(txn->txn, txn->st->ready, id, MDB_NODUPDATA)) ||
        (rc = db_delete_table(txn->txn, txn->st->deadline, id, 0)) ||
        (rc = db_delete_table(txn->txn, txn->st->meta, id, 0)))
        return rc;
    KeyBuf ck;
    counts_key_build(&ck, id);
    kv = key_val(&ck);
    rc = mdb_del(txn->txn, txn->st->main, &kv, NULL);
    return rc == MDB_NOTFOUND ? STORE_OK : store_status_of(rc);
}

int
store_table_rename(StoreTxn *txn, const char *from, const char *to)
{
    KeyBuf fk, tk;
    int rc = catalog_key_build(&fk, from);
    if (rc)
        return rc;
    if (catalog_key_build(&tk, to))
        return STORE_TOOBIG;         /* too long, or empty */
    MDB_val fkv = key_val(&fk), tkv = key_val(&tk), v, taken;
    if ((rc = mdb_get(txn->txn, txn->st->catalog, &fkv, &v)))
        return store_status_of(rc);
    rc = mdb_get(txn->txn, txn->st->catalog, &tkv, &taken);
    if (rc == 0)
        return STORE_EXISTS;
    if (rc != MDB_NOTFOUND)
        return store_status_of(rc);
    /* The records are under the id: only the catalog entry moves. */
    if ((rc = db_put_copy(txn->txn, txn->st->catalog, tkv, v.mv_data, v.mv_size)))
        return rc;
    return store_status_of(mdb_del(txn->txn, txn->st->catalog, &fkv, NULL));
}

/* ---- records ---- */

/* Builds the records key [T][key]; STORE_TOOBIG when key is too long. */
static int
record_key_build(KeyBuf *k, uint32_t table, StoreBytes key)
{
    if (key.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    key_set_table(k, table);
    key_append(k, key.data, key.len);
    return STORE_OK;
}

int
store_record_put(StoreTxn *txn, uint32_t table, StoreBytes key, StoreBytes value,
                 const StoreSlot *slot)
{
    KeyBuf rk;
    RecordHead old;
    uint64_t seq = 0;
    size_t order_len = slot ? slot->order_len : 0;
    int64_t wake = !slot ? WAKE_NO_SLOT : slot->wake_ns > 0 ? slot->wake_ns : 0;
    int kind = slot && slot->held ? WAIT_HOLD : WAIT_DELAY;
    int64_t then = slot && slot->held ? slot->then_ns : 0;
    int64_t delta[CNT_N] = {0};
    int was;
    int rc = record_key_build(&rk, table, key);
    if (rc)
        return rc;
    if (order_len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    /* Copy every caller byte first: they may point into LMDB memory. */
    size_t len = RECORD_HEAD_LEN + order_len + value.len;
    unsigned char *buf = store_alloc(len);
    if (slot)
        bytes_copy(buf + RECORD_HEAD_LEN, slot->order_key, order_len);
    bytes_copy(buf + RECORD_HEAD_LEN + order_len, value.data, value.len);

    MDB_val kv = key_val(&rk), v;
    rc = mdb_get(txn->txn, txn->st->records, &kv, &v);
    if (rc == 0) {
        if ((rc = record_head_parse(v, &old)))
            goto done;
        seq = old.seq;
        rc = queue_index_remove(txn, table, rk.data + 4, rk.len - 4, &old, &was);
        counts_note(delta, was, -1);
    } else if (rc == MDB_NOTFOUND) {
        rc = table_seq_next(txn, table, &seq);
        delta[CNT_RECORDS] = 1;
    } else {
        rc = store_status_of(rc);
    }
    if (rc)
        goto done;
    record_head_write(buf, seq, wake, order_len);
    v = (MDB_val){.mv_size = len, .mv_data = buf};
    if ((rc = store_status_of(mdb_put(txn->txn, txn->st->records, &kv, &v, 0))))
        goto done;
    rc = queue_index_add(txn, table, rk.data + 4, rk.len - 4, buf + RECORD_HEAD_LEN,
                         order_len, seq, wake, kind, then);
    counts_note(delta, slot_class(wake, kind), 1);
    if (rc == STORE_OK)
        rc = counts_add(txn, table, delta);
done:
    free(buf);
    return rc;
}

int
store_record_get(StoreTxn *txn, uint32_t table, StoreBytes key, StoreBytes *value_out,
                 uint64_t *seq_out)
{
    KeyBuf rk;
    RecordHead h;
    int rc = record_key_build(&rk, table, key);
    if (rc)
        return rc;
    MDB_val kv = key_val(&rk), v;
    if ((rc = mdb_get(txn->txn, txn->st->records, &kv, &v)))
        return store_status_of(rc);
    if ((rc = record_head_parse(v, &h)))
        return rc;
    if (value_out)
        *value_out = (StoreBytes){h.value, h.value_len};
    if (seq_out)
        *seq_out = h.seq;
    return STORE_OK;
}

int
store_record_delete(StoreTxn *txn, uint32_t table, StoreBytes key)
{
    KeyBuf rk;
    RecordHead h;
    int rc = record_key_build(&rk, table, key);
    if (rc)
        return rc;
    MDB_val kv = key_val(&rk), v;
    if ((rc = mdb_get(txn->txn, txn->st->records, &kv, &v)))
        return store_status_of(rc);
    if ((rc = record_head_parse(v, &h)))
        return rc;
    int64_t delta[CNT_N] = {[CNT_RECORDS] = -1};
    int was;
    if ((rc = queue_index_remove(txn, table, rk.data + 4, rk.len - 4, &h, &was)))
        return rc;
    counts_note(delta, was, -1);
    if ((rc = store_status_of(mdb_del(txn->txn, txn->st->records, &kv, NULL))))
        return rc;
    return counts_add(txn, table, delta);
}

/* store_record_each's caller's function, for table_walk. */
typedef struct RecordWalk {
    int (*fn)(void *ctx, StoreBytes key, StoreBytes value);
    void *ctx;
} RecordWalk;

static int
each_record(void *ctx, MDB_val k, MDB_val v)
{
    RecordWalk *w = ctx;
    RecordHead h;
    int rc = record_head_parse(v, &h);
    if (rc)
        return rc;
    StoreBytes kb = {(const unsigned char *)k.mv_data + 4, k.mv_size - 4};
    return w->fn(w->ctx, kb, (StoreBytes){h.value, h.value_len});
}

int
store_record_each(StoreTxn *txn, uint32_t table, StoreBytes from,
                  int (*fn)(void *ctx, StoreBytes key, StoreBytes value), void *ctx)
{
    KeyBuf start;
    int rc = record_key_build(&start, table, from);
    if (rc)
        return rc;
    RecordWalk w = {fn, ctx};
    return table_walk(txn, txn->st->records, table, key_val(&start), each_record, &w);
}

/* ---- the queue primitives ---- */

/* In a read-only transaction nothing is drained: the head is the first
 * ready record as stored, which may miss a waiting record whose instant
 * has come.  Claims always run in a write transaction. */
int
store_queue_head(StoreTxn *txn, uint32_t table, int64_t now,
                 StoreBytes *key_out, StoreBytes *value_out)
{
    KeyBuf prefix, rk;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;
    if (txn->write && (rc = queue_drain(txn, table, now)))
        return rc;
    if ((rc = mdb_cursor_open(txn->txn, txn->st->ready, &cur)))
        return store_status_of(rc);
    key_set_table(&prefix, table);
    k = key_val(&prefix);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    mdb_cursor_close(cur);
    if (rc == 0 && !key_has_table(k, table))
        rc = MDB_NOTFOUND;
    if (rc)
        return store_status_of(rc);
    if (v.mv_size < 8 || v.mv_size > 8 + STORE_MAX_KEY)
        return STORE_CORRUPT;
    StoreBytes key = {(const unsigned char *)v.mv_data + 8, v.mv_size - 8};
    StoreBytes value;
    if ((rc = record_key_build(&rk, table, key)))
        return rc;
    MDB_val rv = key_val(&rk), dv;
    if ((rc = mdb_get(txn->txn, txn->st->records, &rv, &dv)))
        return rc == MDB_NOTFOUND ? STORE_CORRUPT : store_status_of(rc);
    RecordHead h;
    if ((rc = record_head_parse(dv, &h)))
        return rc;
    value = (StoreBytes){h.value, h.value_len};
    if (key_out)
        *key_out = key;
    if (value_out)
        *value_out = value;
    return STORE_OK;
}

/* Where a ready entry stands in claim order: its order key and arrival
 * sequence, as the ready index sorts them. */
typedef struct ClaimPlace {
    const unsigned char *order;
    size_t order_len;
    uint64_t seq;
} ClaimPlace;

/* True when "a" comes before "b" in claim order: memcmp of the order keys,
 * the shorter first on a tie, then arrival. */
static bool
claim_place_before(const ClaimPlace *a, const ClaimPlace *b)
{
    size_t n = a->order_len < b->order_len ? a->order_len : b->order_len;
    int c = n ? memcmp(a->order, b->order, n) : 0;
    if (c)
        return c < 0;
    if (a->order_len != b->order_len)
        return a->order_len < b->order_len;
    return a->seq < b->seq;
}

/* The first ready entry of "table" into "out" (its place and record key);
 * STORE_NOTFOUND when the ready index has none. */
static int
ready_first(StoreTxn *t, uint32_t table, ClaimPlace *place, StoreBytes *key)
{
    MDB_cursor *cur;
    KeyBuf prefix;
    int rc = mdb_cursor_open(t->txn, t->st->ready, &cur);
    if (rc)
        return store_status_of(rc);
    key_set_table(&prefix, table);
    MDB_val k = key_val(&prefix), v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    mdb_cursor_close(cur);
    if (rc == 0 && !key_has_table(k, table))
        rc = MDB_NOTFOUND;
    if (rc)
        return store_status_of(rc);
    if (v.mv_size < 8 || v.mv_size > 8 + STORE_MAX_KEY)
        return STORE_CORRUPT;
    *place = (ClaimPlace){(const unsigned char *)k.mv_data + 4, k.mv_size - 4,
                          be_get64(v.mv_data)};
    *key = (StoreBytes){(const unsigned char *)v.mv_data + 8, v.mv_size - 8};
    return STORE_OK;
}

/* Makes record "key" of "table", which a claim at this instant would move
 * into the ready index, the head in "out" when it comes before the head
 * found so far ("*best"). */
static int
head_consider(StoreTxn *t, uint32_t table, StoreBytes key, ClaimPlace *best,
              StoreQueueCounts *out)
{
    KeyBuf rk;
    RecordHead h;
    int rc = record_key_build(&rk, table, key);
    if (rc)
        return rc == STORE_TOOBIG ? STORE_CORRUPT : rc;
    MDB_val kv = key_val(&rk), v;
    if ((rc = mdb_get(t->txn, t->st->records, &kv, &v)))
        return rc == MDB_NOTFOUND ? STORE_OK : store_status_of(rc);
    if ((rc = record_head_parse(v, &h)))
        return rc;
    ClaimPlace place = {h.order, h.order_len, h.seq};
    if (!out->has_head || claim_place_before(&place, best)) {
        *best = place;
        out->has_head = true;
        out->head_key = key;
    }
    return STORE_OK;
}

/* deadline_each's caller's function, for table_walk. */
typedef struct DeadlineWalk {
    int (*fn)(void *ctx, StoreBytes key, int64_t wake, MDB_val v);
    void *ctx;
} DeadlineWalk;

static int
each_deadline(void *ctx, MDB_val k, MDB_val v)
{
    DeadlineWalk *w = ctx;
    if (k.mv_size < 12)
        return STORE_CORRUPT;
    const unsigned char *p = k.mv_data;
    StoreBytes key = {p + 12, k.mv_size - 12};
    return w->fn(w->ctx, key, (int64_t)be_get64(p + 4), v);
}

/* Calls "fn" with each waiting entry of "table" in the deadline index, in
 * wake order — its record key, its wake instant and its value — until "fn"
 * returns non-zero, which is returned.  STORE_CORRUPT for a malformed
 * entry. */
static int
deadline_each(StoreTxn *txn, uint32_t table,
              int (*fn)(void *ctx, StoreBytes key, int64_t wake, MDB_val v), void *ctx)
{
    KeyBuf prefix;
    key_set_table(&prefix, table);
    DeadlineWalk w = {fn, ctx};
    return table_walk(txn, txn->st->deadline, table, key_val(&prefix), each_deadline, &w);
}

/* What store_queue_counts adds up over the waiting entries whose instant
 * has come: where each goes now, and the best of those that are ready. */
typedef struct DueWalk {
    StoreTxn         *txn;
    uint32_t          table;
    int64_t           now;
    int64_t           d[CNT_N];
    ClaimPlace        best;
    StoreQueueCounts *out;
} DueWalk;

/* count_due's "the rest wake later": not a StoreStatus. */
#define DUE_DONE 1000

static int
count_due(void *ctx, StoreBytes key, int64_t wake, MDB_val v)
{
    DueWalk *w = ctx;
    if (wake > w->now)
        return DUE_DONE;
    int was = slot_class(wake, wait_kind(v));
    if (was == CNT_UNSORTED)
        return 0;
    int64_t next = wait_next(v, w->now);   /* retired: idle, the rest */
    w->d[was]--;
    if (next != WAKE_NO_SLOT)
        w->d[next > 0 ? CNT_DELAYED : CNT_READY]++;
    return next == 0 ? head_consider(w->txn, w->table, key, &w->best, w->out) : 0;
}

int
store_queue_counts(StoreTxn *txn, uint32_t table, int64_t now, StoreQueueCounts *out)
{
    uint64_t n[CNT_N];
    DueWalk w = {txn, table, now, {0}, {NULL, 0, 0}, out};
    memset(out, 0, sizeof *out);
    int rc = counts_get(txn, table, n);
    if (rc)
        return rc;
    rc = ready_first(txn, table, &w.best, &out->head_key);
    if (rc && rc != STORE_NOTFOUND)
        return rc;
    out->has_head = rc == STORE_OK;
    /* The waiting entries whose instant has come count where they go. */
    if ((rc = deadline_each(txn, table, count_due, &w)) && rc != DUE_DONE)
        return rc;
    int64_t *d = w.d;
    out->records = n[CNT_RECORDS];
    out->ready = n[CNT_READY] + (uint64_t)d[CNT_READY];
    out->held = n[CNT_HELD] + (uint64_t)d[CNT_HELD];
    out->delayed = n[CNT_DELAYED] + (uint64_t)d[CNT_DELAYED];
    out->unsorted = n[CNT_UNSORTED];
    uint64_t filed = out->ready + out->held + out->delayed + out->unsorted;
    if (filed > out->records)
        return STORE_CORRUPT;
    out->idle = out->records - filed;
    return STORE_OK;
}

/* store_queue_each_waiting's caller's function, for deadline_each. */
typedef struct WaitingWalk {
    int (*fn)(void *ctx, StoreBytes key, int64_t wake_ns);
    void *ctx;
} WaitingWalk;

static int
each_waiting(void *ctx, StoreBytes key, int64_t wake, MDB_val v)
{
    (void)v;
    WaitingWalk *w = ctx;
    return w->fn(w->ctx, key, wake);
}

int
store_queue_each_waiting(StoreTxn *txn, uint32_t table,
                         int (*fn)(void *ctx, StoreBytes key, int64_t wake_ns),
                         void *ctx)
{
    WaitingWalk w = {fn, ctx};
    return deadline_each(txn, table, each_waiting, &w);
}

/* ---- per-table meta values ---- */

int
store_meta_get(StoreTxn *txn, uint32_t table, StoreBytes name, StoreBytes *value_out)
{
    KeyBuf k;
    if (name.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    meta_key_build(&k, table, META_CALLER, name.data, name.len);
    MDB_val kv = key_val(&k), v;
    int rc = mdb_get(txn->txn, txn->st->meta, &kv, &v);
    if (rc)
        return store_status_of(rc);
    if (value_out)
        *value_out = (StoreBytes){v.mv_data, v.mv_size};
    return STORE_OK;
}

int
store_meta_put(StoreTxn *txn, uint32_t table, StoreBytes name, StoreBytes value)
{
    KeyBuf k;
    if (name.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    meta_key_build(&k, table, META_CALLER, name.data, name.len);
    return db_put_copy(txn->txn, txn->st->meta, key_val(&k), value.data, value.len);
}

int
store_meta_delete(StoreTxn *txn, uint32_t table, StoreBytes name)
{
    KeyBuf k;
    if (name.len > STORE_MAX_KEY)
        return STORE_TOOBIG;
    meta_key_build(&k, table, META_CALLER, name.data, name.len);
    MDB_val kv = key_val(&k);
    return store_status_of(mdb_del(txn->txn, txn->st->meta, &kv, NULL));
}
