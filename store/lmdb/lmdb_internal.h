/* lmdb_internal.h — what the files of the LMDB backend share: the Store
 * and StoreTxn behind store.h's opaque types, the layout of the
 * environment, and the functions one file of the backend offers the others
 * (each named lmdb_*, documented here).  Not installed: only the lmdb_*.c
 * files include it, and with it <lmdb.h>.
 *
 * The files: lmdb_groups.c (AT MOST … PER groups and AT MOST … EVERY
 * rates); lmdb_env.c (open and close, the store's format and its
 * upgrade, the named databases, options, errors); lmdb_map.c (the map's
 * size, its growth, adopting a map another process grew, the reserve);
 * lmdb_sync.c (the page "queuefs.sync" every process on the store shares:
 * group syncs across processes, store_changes and its futex);
 * lmdb_checkpoint.c (the checkpoint record file and taking checkpoints);
 * lmdb_txn.c (transactions and group commit); lmdb_catalog.c (the catalog
 * and per-table meta values); lmdb_records.c (records: their keys and
 * values); lmdb_queue.c (the queue indexes, the counts, reaping KEEP's done
 * records, store_queue_*).
 *
 * Layout: one LMDB environment (a directory) with eight named databases.
 * Integers in keys are big-endian so that byte order is numeric order;
 * "T" below is a table id as 4 big-endian bytes.
 *
 *   sys       "version"        → "queuefs-store" u32 format version
 *             "next_table_id"  → u32: the id the next created table gets
 *   catalog   table name       → [u32 id][definition bytes]
 *   records   [T][record key]  → [u64 seq][i64 wake][u16 order_len]
 *                                [order key][the columns][caller's value]
 *             the columns (format 5): [u8 5][i64 since, written, changed,
 *             claimed, attempts, hold, claimed_until, not_before]
 *             [u8 len][consumer][u8 len][instance][u16 len][group]
 *             [u32 len][errors][i64 completed_at][u8 rerun] — the
 *             StoreRecord's; the record's state follows from them (see
 *             lmdb_placement).  Version 3 ends at the group, version 4 at
 *             the errors (both read as not done, not marked).
 *             wake is -1 when the record has no slot (a collection's, a
 *             retired or a done one), 0 when it is in the ready index,
 *             > 0 when it is in the deadline index; with the order key it
 *             lets put and delete find the old index entry.
 *   ready     [T][order key]   → [u64 seq][record key]   (MDB_DUPSORT)
 *             LMDB compares keys by memcmp, shorter first on a tie, which
 *             is exactly (table, order key) order; the duplicates of one
 *             key sort by arrival sequence.  (A flat [T][order][seq] key
 *             would misorder order keys that are prefixes of each other.)
 *   deadline  [T][u64 wake][record key] → [u8 kind][i64 then]
 *             kind 1: a delay, ready at wake (no "then"); kind 2: a hold,
 *             whose "then" says what the record does at wake (lmdb_placement's
 *             then_ns).  Empty: filed by format 1, which did not tell them
 *             apart (ready at wake).
 *   groups    [T][u64 hash of a group][order key] → [u64 seq][record key]
 *             (MDB_DUPSORT): under AT MOST … PER, the ready records of a
 *             group that wait behind its next one (lmdb_groups.c)
 *   done      [T][i64 completed_at][record key] → empty: KEEP's done
 *             records (completed_at != 0, in no other index), oldest
 *             finish first, so that reaping the expired ones is a seek
 *             (lmdb_done_reap).  Stores before format 5 lack it: the first
 *             open for writing creates it.
 *   meta      [T][0x00]"seq"   → u64: the table's last arrival sequence
 *             [T][0x01]"next_id" → i64: the next store-assigned identity
 *             (INT64_MIN: none is left)
 *             [T][0x01]"dedup:"[key] → i64: when "key" was first seen
 *             [T][0x01]"dedupt:"[i64 first][key] → empty: the same, in
 *             time order, for pruning
 *             [T][0x01]"grp:"[group] → [i64 held][u8 full][record key]:
 *             a group's holds, whether they are at the limit, and its
 *             record in the ready index (lmdb_groups.c)
 *             [T][0x01]"rate@"[u64 max] → [u64 handed][u64 low][i64
 *             newest] and
 *             [T][0x01]"rate@"[u64 chunk] → i64 × up to 64: AT MOST …
 *             EVERY's hand-outs, numbered as noted, the instants of the
 *             queue's last "rate" of them in chunks of 64, ascending (see
 *             lmdb_groups.c; format 5 kept them as one array, "rate" →
 *             i64 × n, moved to chunks by the upgrade to format 6)
 *             [0][0x01]"holds" → i64: the last hold number of the store
 *             (table id 0 is no table's: no drop removes it)
 *   (main)    "records"[T]     → 12 × u64: the table's records, and of them
 *             its ready, held and delayed and unsorted (format 1) index
 *             entries, then its claims, releases, lapses and deletes, then its
 *             grouped records and full groups, then its done records (12 ×
 *             u64; 11 while done is 0, as before KEEP; 9 while the three
 *             last are 0, as before AT MOST … PER; 5 before format 3); kept
 *             in every transaction that changes them, so a count costs a
 *             lookup (store_queue_counts).  They live in
 *             LMDB's main database, next to the named databases' records,
 *             whose page every writing transaction rewrites anyway: a
 *             delete on a full disk needs no page more for them.
 *
 * Dropping a table deletes every key with its [T] prefix in records, groups,
 * ready, deadline, done and meta, and its counts (a rename moves only the
 * catalog entry: everything else is under the id).  Table ids are never
 * reused.
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
 *    is a checkpoint (lmdb_checkpoint.h): a transaction pinned by a read
 *    transaction of a live process (so LMDB reuses none of its pages), its
 *    pages synced after it (those the checkpoint before used are on the
 *    disk already: see lmdb_checkpoint.c), and a copy of its meta pages
 *    recorded in "queuefs.checkpoint"; every commit after it appended to
 *    the redo log (lmdb_log.h), flushed only for a durable write.  After
 *    any unclean stop — the processes killed, the machine or the disk
 *    losing power, the disk back under another device number — the first
 *    opener that finds no other process on the store puts the newest
 *    checkpoint back and replays the log after it (lmdb_checkpoint.h):
 *    every commit whose entry is there comes back, which after a crash of
 *    processes alone (the page cache whole) is every commit, and after a
 *    power loss every durable one.
 *
 * Every process takes a checkpoint before its first commit (so an open
 * that only reads syncs nothing), and the store is fast from then on.  The
 * process of the newest record takes the next one CHECKPOINT_INTERVAL_MS
 * later when the store has commits since, another only when none came
 * within two intervals (see checkpoint_due); with sync on a durable write
 * returns once a flush of the redo log (lmdb_log.h) or a checkpoint covers
 * it, and concurrent writers in every process share that flush.  Only the
 * newest record matters, so a process drops its pins once a newer record
 * exists, and clears the reader slots of dead processes (mdb_reader_check)
 * only right after recording a checkpoint of its own.  A closing process — whose pin would
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
 * checkpoint (fast).  A commit that is not durable returns at once unless
 * the log could not hold it (lmdb_log_covers): then it too waits for a
 * checkpoint, so that recovery never undoes an acknowledged write.
 *
 * Open an environment at most once per process at a time: LMDB's fcntl
 * locks on the lock file are per process, so closing a second handle to the
 * same directory would release the first one's locks.  An environment must
 * not cross fork(); the child opens its own.
 */
#ifndef QUEUEFS_LMDB_INTERNAL_H
#define QUEUEFS_LMDB_INTERNAL_H

#ifndef QUEUEFS_LMDB_BACKEND
#error \
    "the LMDB backend's own header: only store/lmdb/ includes it (built with -DQUEUEFS_LMDB_BACKEND)"
#endif

#include "backend.h"
#include "queue.h"
#include "bigendian.h"
#include "lmdb_checkpoint.h"
#include "lmdb_log.h"
#include "lmdb_sync.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#define RECORD_HEAD_LEN 18 /* u64 seq, i64 wake, u16 order_len */
#define WAKE_NO_SLOT (-1)
#define WAIT_DELAY 1 /* a deadline entry's kinds */
#define WAIT_HOLD 2
#define WAIT_VALUE_LEN 9 /* [u8 kind][i64 then] */

/* Room for the longest composite key: [T][u64][key] or [T][sub][name]. */
/* The longest meta name: a record key with a prefix of the store's own
 * ("dedupt:" and an instant). */
#define META_NAME_MAX (STORE_MAX_KEY + 24)
#define KEY_BUF_LEN (4 + 1 + META_NAME_MAX)

/* The per-table counts (main "records"[T]), in their stored order. */
enum {
    CNT_RECORDS,
    CNT_READY,
    CNT_HELD,
    CNT_DELAYED,
    CNT_UNSORTED,
    CNT_CLAIMS,
    CNT_RELEASES,
    CNT_LAPSES,
    CNT_DELETES,
    CNT_GROUPED,
    CNT_GROUPS_FULL,
    CNT_DONE, /* done records (KEEP): in CNT_RECORDS, in no index count */
    CNT_N
};
#define CNT_N_FORMAT2 5   /* the counts a store of format 2 kept */
#define CNT_N_UNGROUPED 9 /* the counts before AT MOST … PER */
#define CNT_N_UNKEPT 11   /* the counts before KEEP */

/* A held record's "then" (a deadline entry's): it retires at its wake. */
#define THEN_RETIRE (-1)
/* The columns' version byte, and their length without their strings:
 * [version][8 × i64][u8 consumer][u8 instance][u16 group][u32 errors]
 * [i64 completed_at][u8 rerun] (version 3, written before errors were
 * kept, ends at the group; version 4, before KEEP and COALESCE, at the
 * errors). */
#define COLUMNS_VERSION 5
#define COLUMNS_FIXED_3 (1 + 8 * 8 + 1 + 1 + 2)
#define COLUMNS_FIXED_4 (COLUMNS_FIXED_3 + 4)
#define COLUMNS_TAIL (8 + 1) /* what version 5 added: completed_at, rerun */
#define COLUMNS_FIXED (COLUMNS_FIXED_4 + COLUMNS_TAIL)

/* Why the last LMDB call that failed on this thread for want of room
 * failed: how store_write tells a map it can grow from a transaction that is
 * too large.  Set by lmdb_status_of, cleared by the group's leader. */
enum { FULL_NONE, FULL_MAP, FULL_TXN };

/* One lmdb_write() caller, queued on its own stack. */
typedef struct WriteReq {
    int (*fn)(StoreTxn *txn, void *ctx);
    void *ctx;
    int rc;           /* what store_write returns to this caller */
    bool in_group;    /* taken into a group by a leader */
    bool reserve;     /* its last run may use the reserve */
    bool lazy;        /* its last run need not be durable (store_txn_lazy) */
    bool committed;   /* its changes are committed (sync pending) */
    bool done;        /* rc is final: the caller may return */
    char detail[256]; /* what the thread that failed it knew (store_error_detail) */
    struct WriteReq *next;
} WriteReq;

struct Store {
    const StoreOps *ops; /* &store_lmdb_ops: first (backend.h) */
    MDB_env *env;
    MDB_dbi sys, catalog, records, ready, deadline, meta;
    MDB_dbi group_index;       /* the "groups" database */
    MDB_dbi done_index;        /* the "done" database (KEEP) */
    MDB_dbi main;              /* LMDB's main database: the counts */
    pthread_rwlock_t map_lock; /* shared by open txns; exclusive to resize */
    bool sync;                 /* sync on: commits are made durable */
    int data_fd;               /* LMDB's descriptor of the data file */
    size_t map_size;           /* the map's size (atomic) */

    pthread_mutex_t group_mu; /* guards the queue, "leading", "waiting" */
    pthread_cond_t group_cv;
    WriteReq *queue, **queue_tail;
    bool leading; /* a leader is running a group */
    uint64_t waiting;

    pthread_mutex_t sync_mu; /* guards "syncing" */
    pthread_cond_t sync_cv;  /* signalled when a sync ends */
    bool syncing;            /* a thread of this process leads a sync
                                  * (then holds flock on sync_fd) */
    int sync_fd;             /* "queuefs.sync" */
    SyncShared *shared;      /* mapped from sync_fd */
    bool nosync;             /* MDB_NOSYNC is set (changed by the writer) */

    int ckpt_fd;                 /* "queuefs.checkpoint" */
    int log_fd;                  /* "queuefs.log", -1: none (read only) */
    pthread_mutex_t log_mu;      /* the log's lock, in this process */
    pthread_mutex_t log_sync_mu; /* one flush of the log at a time */
    LogOps wlog;                 /* the open write transaction's changes */
    unsigned page_size;
    bool checkpoints;       /* the data file's meta pages are understood */
    bool checkpointed;      /* this process took a checkpoint (atomic) */
    uint64_t last_commit;   /* the id of this process's last commit (atomic) */
    time_t dead_cleared_at; /* when it last cleared dead readers (the sync
                                  * leader's), in monotonic seconds */
    MDB_txn *pin;           /* the read transaction holding this process's
                                  * checkpoint, or NULL (the sync leader's) */
    uint64_t pin_id;        /* its transaction, UINT64_MAX: none (atomic) */
    CheckpointPages pages;  /* the pages of its newest record (the sync leader's) */

    pthread_t ticker;       /* takes checkpoints with sync off */
    bool ticking, stopping; /* (guarded by tick_mu) */
    pthread_mutex_t tick_mu;
    pthread_cond_t tick_cv;

    uint64_t writes, groups, syncs, grows; /* StoreStats (atomic) */

    bool read_only;   /* StoreOptions.read_only */
    bool owner_known; /* the directory's owner, when opened */
    uid_t owner_uid;
    gid_t owner_gid;

    uint64_t reserve_pages; /* the reserve (see "The reserve"; atomic) */
    uint64_t file_bytes;    /* the data file's size as last seen: it never
                                  * shrinks, so a lower bound (atomic) */
    StoreUpgradeFn upgrade; /* StoreOptions.upgrade */
    void *upgrade_ctx;
};

/* How many tables' counts a transaction keeps unwritten at once. */
#define COUNTS_PENDING 4

struct StoreTxn {
    const StoreOps *ops; /* &store_lmdb_ops: first (backend.h) */
    Store *st;
    MDB_txn *txn;
    bool write;
    bool reserve; /* it may use the reserve (store_txn_use_reserve) */
    bool lazy;    /* need not be durable on return (store_txn_lazy) */
    int64_t now;  /* store_txn_now's instant; 0: not asked yet */
    /* What lmdb_counts_add added to the counts of up to COUNTS_PENDING
     * tables and has not written yet (table 0: a free place): written by
     * lmdb_counts_flush, once, before the transaction commits, rather than
     * at each record it touches. */
    struct {
        uint32_t table;
        int64_t delta[CNT_N];
    } pending[COUNTS_PENDING];
};

/* A record's stored header, decoded; pointers are into the stored value. */
typedef struct RecordHead {
    uint64_t seq;
    int64_t wake; /* WAKE_NO_SLOT, 0 (ready) or > 0 (waiting) */
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

/* The thread's last want of room (FULL_*), set by lmdb_status_of. */
extern _Thread_local int lmdb_full_seen;

/* ---- small helpers ---- */

/* Returns n bytes of fresh memory; aborts the process when there is none
 * (queuefs treats out-of-memory as fatal). */
static inline void *
lmdb_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        abort();
    return p;
}

/* Copies n bytes; n == 0 is allowed with NULL pointers. */
static inline void
lmdb_copy(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}

/* Sets k to [T]. */
static inline void
lmdb_key_set_table(KeyBuf *k, uint32_t table)
{
    be_put32(k->data, table);
    k->len = 4;
}

/* Appends n bytes to k; the caller has checked they fit. */
static inline void
lmdb_key_append(KeyBuf *k, const void *p, size_t n)
{
    lmdb_copy(k->data + k->len, p, n);
    k->len += n;
}

/* Appends v as 8 big-endian bytes to k. */
static inline void
lmdb_key_append_u64(KeyBuf *k, uint64_t v)
{
    be_put64(k->data + k->len, v);
    k->len += 8;
}

/* An MDB_val viewing k (valid while k lives). */
static inline MDB_val
lmdb_key_val(KeyBuf *k)
{
    return (MDB_val){.mv_size = k->len, .mv_data = k->data};
}

/* True when the LMDB key "k" starts with table id "table". */
static inline bool
lmdb_key_has_table(MDB_val k, uint32_t table)
{
    return k.mv_size >= 4 && be_get32(k.mv_data) == table;
}

/* Moves "cur" by "op" (MDB_SET_RANGE from "*k", or MDB_NEXT) to an entry
 * whose key starts with table id "table": MDB_SUCCESS (the entry in "*k"
 * and "*v", valid as mdb_cursor_get's are), MDB_NOTFOUND past the
 * table's last entry, or LMDB's error. */
static inline int
lmdb_cursor_in_table(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op, uint32_t table)
{
    int rc = mdb_cursor_get(cur, k, v, op);
    return rc == 0 && !lmdb_key_has_table(*k, table) ? MDB_NOTFOUND : rc;
}

/* A list of byte strings (record keys, meta names) collected during a
 * walk, so the database can be changed after it: [u32 len][bytes] … */
typedef struct ByteList {
    unsigned char *data;
    size_t len, cap;
} ByteList;

/* Appends a copy of "n" bytes at "p" to "l". */
static inline void
lmdb_list_add(ByteList *l, const void *p, size_t n)
{
    if (l->len + 4 + n > l->cap) {
        l->cap = (l->cap + n + 4) * 2;
        unsigned char *grown = realloc(l->data, l->cap);
        if (!grown)
            abort();
        l->data = grown;
    }
    be_put32(l->data + l->len, (uint32_t)n);
    lmdb_copy(l->data + l->len + 4, p, n);
    l->len += 4 + n;
}

/* The item at "*off" of "l" (pointing into it), moving "*off" past it;
 * false at the end. */
static inline bool
lmdb_list_next(const ByteList *l, size_t *off, StoreBytes *item)
{
    if (*off >= l->len)
        return false;
    *item = (StoreBytes){l->data + *off + 4, be_get32(l->data + *off)};
    *off += 4 + item->len;
    return true;
}

/* Adds "n" to the statistic at "p". */
static inline void
lmdb_stat_add(uint64_t *p, uint64_t n)
{
    __atomic_add_fetch(p, n, __ATOMIC_RELAXED);
}

/* ---- lmdb_env.c ---- */

/* Maps an LMDB return code (or errno) to a StoreStatus, noting in
 * lmdb_full_seen a full map or transaction; a failure of the disk or of
 * LMDB that nothing explained yet (lmdb_failure) is explained by its code. */
int lmdb_status_of(int rc);

/* "location/name", allocated (the caller frees it). */
char *lmdb_path(const char *location, const char *name);

/* open(2) of "name" in the store directory "location" (mode 0600 when it
 * creates): a descriptor, or -1 with errno set. */
int lmdb_open_in(const char *location, const char *name, int flags);

/* Says in store_error_detail what failed: "call" (a system call and the
 * file it was on, or LMDB's call) and "rc", an errno or LMDB code.  Returns
 * "rc". */
int lmdb_failure(const char *call, int rc);

/* ---- lmdb_map.c ---- */

/* Reads LMDB's idea of the map size and the last committed transaction id.
 * The caller holds the map lock (either way): the meta pages live in the
 * map. */
void lmdb_env_info(Store *st, size_t *map_size, uint64_t *last_txnid);

/* The id of the last committed transaction, taking the map lock shared. */
uint64_t lmdb_last_txnid(Store *st);

/* Sets the initial map: the requested size, or the data file's if larger,
 * but no more than the disk has room for. */
int lmdb_map_init(Store *st, size_t requested);

/* Adopts the map size another process grew the environment to — no more
 * than the disk has room for — once no transaction of this process is open
 * (waits a few seconds at most). */
int lmdb_map_adopt(Store *st);

/* Grows the map — doubles it, within the room the disk has — once no
 * transaction of this process is open.  MDB_MAP_FULL when it cannot grow. */
int lmdb_map_grow(Store *st);

/* The largest map the disk allows, in pages, with the data file's size
 * and the reserve brought up to date. */
uint64_t lmdb_room_pages(Store *st);

/* STORE_OK when write transaction "txn", as it stands, leaves the reserve
 * free; else STORE_FULL.  Looks at the disk only when the data file as
 * last seen is too small to tell. */
int lmdb_reserve_check(Store *st, MDB_txn *txn);

/* As the holder of LMDB's writer lock: allocates the data file up to the
 * pages in use plus one and a half reserves when it holds less than the
 * pages in use plus the reserve, as far as the disk has room.  Failures
 * are left for the writes to meet. */
void lmdb_reserve_allocate(Store *st);

/* True when the disk leaves the store less room past the data file's last
 * page than the reserve: it is nearly full, and the pages freed since the
 * last checkpoint are wanted back (durable writes then take a checkpoint
 * each rather than only flushing the log).  Takes the map lock shared. */
bool lmdb_file_tight(Store *st);

/* ---- lmdb_txn.c ---- */

/* Commits the top-level write transaction "txn" in the store's mode (see
 * "Durability"): without syncing while it is fast, else syncing its data
 * pages before its meta page; notes it (lmdb_commit_note, which gives
 * "*id", the id to sync up to), appends it to the redo log and lets the
 * log's lock go.  The caller holds LMDB's writer lock, so the mode cannot
 * change meanwhile and only one thread sets the flag. */
int lmdb_commit(Store *st, MDB_txn *txn, uint64_t *id);

/* Aborts the top-level write transaction "txn" and lets the log's lock go. */
void lmdb_abort(Store *st, MDB_txn *txn);

/* Begins an LMDB transaction (no parent) with the map lock held shared,
 * adopting a map another process grew, and for a write the log's lock; on
 * success the caller releases the map lock when the transaction ends
 * (lmdb_commit or lmdb_abort for a write). */
int lmdb_env_begin(Store *st, unsigned flags, MDB_txn **out);

/* ---- lmdb_upgrade.c ---- */

/* Brings a store of format 2 (or 1, once counted) to format 3, in write
 * transaction "t": every record gets its columns (through st->upgrade when
 * set), the counters kept in meta values join the counts, and the
 * DEDUPLICATE entries get their time index. */
int lmdb_upgrade_columns(StoreTxn *t);

/* ---- lmdb_catalog.c ---- */

/* Takes the next arrival sequence of "table" (1, 2, ...) into *seq. */
int lmdb_table_seq_next(StoreTxn *t, uint32_t table, uint64_t *seq);

/* Decodes a catalog value into id and definition. */
int lmdb_catalog_entry_parse(MDB_val v, uint32_t *id_out, StoreBytes *def_out);

/* ---- lmdb_records.c ---- */

/* Decodes a stored record value; STORE_CORRUPT when it is malformed. */
int lmdb_record_head_parse(MDB_val v, RecordHead *h);

/* Writes a record header at p (RECORD_HEAD_LEN bytes; the order key is
 * copied by the caller). */
void lmdb_record_head_write(unsigned char *p, uint64_t seq, int64_t wake, size_t order_len);

/* Finds record "key" of "table": its records key [T][key] into "rk" and
 * its decoded header into "h" (pointing into LMDB memory: valid until
 * the transaction's next update or its end).  STORE_NOTFOUND when there
 * is no such record, STORE_TOOBIG when "key" is too long, STORE_CORRUPT
 * when its value is malformed. */
int lmdb_record_find(StoreTxn *txn, uint32_t table, StoreBytes key, KeyBuf *rk, RecordHead *h);

/* Puts a private copy of "data" under "key", so that "data" may point into
 * LMDB memory that the write itself moves. */
int lmdb_put_copy(Store *st, MDB_txn *txn, MDB_dbi dbi, MDB_val key, const void *data, size_t len);

/* Opens a cursor of "txn" on database "dbi" into "*cur" and sets "prefix"
 * to table id "table" (where a walk of the table's entries starts): a
 * store status.  The caller closes the cursor. */
int lmdb_table_cursor(StoreTxn *txn, MDB_dbi dbi, uint32_t table, MDB_cursor **cur, KeyBuf *prefix);

/* Moves "cur" as lmdb_cursor_in_table does: true when it is at an entry of
 * "table" (in "*k" and "*v"); false past the table's last entry ("*rc"
 * STORE_OK) or when LMDB failed ("*rc" its status). */
bool lmdb_table_next(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op, uint32_t table,
                     int *rc);

/* Calls "fn" with each entry of database "dbi" under table "table"'s key
 * prefix, in key order from the first key >= "start", until "fn" returns
 * non-zero, which is returned; STORE_OK at the table's end. */
int lmdb_table_walk(StoreTxn *txn, MDB_dbi dbi, uint32_t table, MDB_val start,
                    int (*fn)(void *ctx, MDB_val k, MDB_val v), void *ctx);

/* Parses the record under records key "k" (its [T] prefix included) with
 * header "h" into "r": every field, pointing into LMDB memory.
 * STORE_CORRUPT when its columns are malformed. */
int lmdb_record_parse(MDB_val k, const RecordHead *h, StoreRecord *r);

/* Reads record "key" of "table" into "r" (see lmdb_record_parse), and its
 * header into "h" (may be NULL).  Errors as lmdb_record_find. */
int lmdb_record_load(StoreTxn *txn, uint32_t table, StoreBytes key, StoreRecord *r, RecordHead *h);

/* How lmdb_record_store writes a record. */
typedef enum RecordPut {
    PUT_CREATE, /* a new one, with the table's next arrival sequence:
                 * STORE_EXISTS when the key is taken — but by a done
                 * record of queue "q", which it replaces */
    PUT_UPDATE, /* an existing one, keeping its arrival sequence:
                 * STORE_NOTFOUND when absent */
    PUT_RENEW,  /* an existing one, as new work: the table's next arrival
                 * sequence; STORE_NOTFOUND when absent */
} RecordPut;

/* Writes record "r" — every field of it: key, value, times, columns,
 * order, not_before, group — under (table, r->key) as "put" says, filing
 * it as lmdb_placement says for queue "q" (NULL: a collection's, in no
 * index) and in the done index while r->completed_at is set, and adds
 * "extra" (may be NULL) to the table's counts with the index changes.
 * Every byte of "r" is copied before anything is written, so it may point
 * into LMDB memory. */
int lmdb_record_store(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r,
                      RecordPut put, const int64_t *extra);

/* Rewrites record "r->key" with the header "h" it has (its sequence, its
 * place in the indexes and its order key stay) and the columns and value
 * of "r", changing no index and no count: for the format upgrade.  Copies
 * "h" and "r" first, so they may point into LMDB memory. */
int lmdb_record_rewrite(StoreTxn *txn, uint32_t table, const RecordHead *h, const StoreRecord *r);

/* Where record "r" of queue "q" (NULL: a collection) is filed at "now":
 * "*wake" WAKE_NO_SLOT (in no claim index: a collection's, retired or
 * done), 0
 * (ready) or the instant it waits until, with the kind of wait in "*kind"
 * and, for a hold, what it does then in "*then" (0: ready, later: delayed
 * until then, THEN_RETIRE). */
void lmdb_placement(const StoreQueue *q, const StoreRecord *r, int64_t now, int64_t *wake,
                    int *kind, int64_t *then);

/* Deletes every entry of database "dbi" (every duplicate too) whose key
 * starts with [T] and then the "n" bytes "sub", at O(log n) an entry. */
int lmdb_delete_prefixed(StoreTxn *t, MDB_dbi dbi, uint32_t table, const void *sub, size_t n);

/* ---- lmdb_catalog.c: meta values ---- */

/* The meta value "name" of "table" (the caller's namespace of meta keys,
 * which the queue primitives keep theirs in).  STORE_NOTFOUND when absent. */
int lmdb_meta_get(StoreTxn *txn, uint32_t table, StoreBytes name, StoreBytes *value_out);
int lmdb_meta_put(StoreTxn *txn, uint32_t table, StoreBytes name, StoreBytes value);
int lmdb_meta_del(StoreTxn *txn, uint32_t table, StoreBytes name);
/* An 8-byte big-endian meta value (0 when absent) and its update. */
int lmdb_meta_get_i64(StoreTxn *txn, uint32_t table, const char *name, int64_t *out);
int lmdb_meta_put_i64(StoreTxn *txn, uint32_t table, const char *name, int64_t v);

/* ---- lmdb_queue.c ---- */

/* The key of the head of queue "q" at "now" into "key_out" (pointing
 * into LMDB memory), after moving every waiting record whose instant has
 * come on (a write transaction is required).  STORE_NOTFOUND when nothing
 * is ready. */
int lmdb_queue_head(StoreTxn *txn, const StoreQueue *q, int64_t now, StoreBytes *key_out);

/* Puts (put) or deletes a record's ready entry: an LMDB code
 * (MDB_NOTFOUND for a missing one). */
int lmdb_ready_entry(StoreTxn *t, uint32_t table, const void *order, size_t order_len, uint64_t seq,
                     const void *rkey, size_t rkey_len, bool put);

/* True when (order a, seq a) comes before (order b, seq b) in claim order:
 * memcmp of the order keys, the shorter first on a tie, then arrival. */
bool lmdb_claim_place_before(const unsigned char *a, size_t a_len, uint64_t a_seq,
                             const unsigned char *b, size_t b_len, uint64_t b_seq);

/* Empties every claim index of "table" — ready, deadline, groups, the
 * groups' states — and their counts, so that every record can be filed
 * anew (store_queue_refile); the records, the done index and the counters
 * stay. */
int lmdb_queue_unfile_all(StoreTxn *t, uint32_t table);

/* ---- lmdb_groups.c ---- */

/* True when queue "q" (NULL: a collection) puts a record of "group" in a
 * group. */
static inline bool
lmdb_grouped(const StoreQueue *q, StoreBytes group)
{
    return q && q->per_group > 0 && group.len > 0;
}

/* Files a ready record of "group" in the groups index (its settling puts
 * it where it belongs).  Counted as CNT_GROUPED by the caller. */
int lmdb_group_file(StoreTxn *t, uint32_t table, StoreBytes group, const void *order,
                    size_t order_len, uint64_t seq, const void *rkey, size_t rkey_len);

/* Removes the index entry of a ready record of "group" (header "h"):
 * from the ready index when it is its group's next, else from the groups
 * index; "*cls" says which count it was in (-1: none, missing). */
int lmdb_group_unfile(StoreTxn *t, uint32_t table, StoreBytes group, const RecordHead *h,
                      const void *rkey, size_t rkey_len, int *cls);

/* Adds "by" (±1) to the holds of "group". */
int lmdb_group_held_add(StoreTxn *t, uint32_t table, StoreBytes group, int by);

/* Puts the right record of "group" — its first in claim order, while it
 * has fewer than q->per_group holds — in the ready index, and the rest in
 * the groups index, noting the moves and whether it is full in "delta". */
int lmdb_group_settle(StoreTxn *t, uint32_t table, const StoreQueue *q, StoreBytes group,
                      int64_t delta[CNT_N]);

/* True in "*full" when "group" has q->per_group holds (false when q puts
 * no record of it in a group). */
int lmdb_group_at_limit(StoreTxn *t, uint32_t table, const StoreQueue *q, StoreBytes group,
                        bool *full);

/* Deletes the groups index entries and group states of "table". */
int lmdb_groups_clear(StoreTxn *t, uint32_t table);

/* ---- lmdb_groups.c: rates (AT MOST … EVERY) ---- */

/* The hand-outs queue "q"'s rate has room for now, but "want" at most,
 * into "*room" (INT64_MAX without a rate): O(1) store reads, O(want) at
 * most, whatever q->rate is. */
int lmdb_rate_room(StoreTxn *t, const StoreQueue *q, int64_t want, int64_t *room);

/* Notes "handed" hand-outs of queue "q" now (after lmdb_rate_room said
 * there was room for them): O(1 + handed / 64) store writes. */
int lmdb_rate_note(StoreTxn *t, const StoreQueue *q, int64_t handed);

/* Moves every table's hand-outs kept as format 5 did (one array) to
 * format 6's chunks, in write transaction "t". */
int lmdb_rate_upgrade(StoreTxn *t);

/* ---- lmdb_groups.c ---- */

/* Reads the counts of "table" into "n" (all 0 when it has none yet; the
 * counters 0 in an entry of format 2). */
int lmdb_counts_get(StoreTxn *t, uint32_t table, uint64_t n[CNT_N]);

/* Builds the key of the counts of "table": "records"[T]. */
void lmdb_counts_key_build(KeyBuf *k, uint32_t table);

/* Adds "delta" to the counts of "table", kept in "t" until
 * lmdb_counts_flush (lmdb_counts_get sees them meanwhile). */
int lmdb_counts_add(StoreTxn *t, uint32_t table, const int64_t delta[CNT_N]);
/* Writes the counts "t" keeps unwritten: before it commits (or the
 * nested transaction of a group's request does). */
int lmdb_counts_flush(StoreTxn *t);
/* Forgets what "t" keeps unwritten of the counts of "table" (its counts
 * are being set whole, or removed). */
void lmdb_counts_forget(StoreTxn *t, uint32_t table);

/* Notes in "delta" that one entry of count "cls" came (by +1) or went
 * (by -1); cls < 0 (no index entry) counts nothing. */
void lmdb_counts_note(int64_t delta[CNT_N], int cls, int by);

/* The count an index state files a record under: none (-1) without a
 * slot, ready, or by the kind of its wait. */
int lmdb_slot_class(int64_t wake, int kind);

/* Adds the index entry a record with this slot state belongs in (none for
 * WAKE_NO_SLOT); a waiting one of "kind" (WAIT_HOLD carries "then").  A
 * record of "group" (non-empty only when its queue groups it: see
 * lmdb_grouped) is filed in the groups index when ready, and its hold
 * counted in its group; the caller then settles the group
 * (lmdb_group_settle).  "*cls" says which count the entry is in (-1:
 * none).  All pointers are to local copies. */
int lmdb_queue_index_add(StoreTxn *t, uint32_t table, const void *rkey, size_t rkey_len,
                         const void *order, size_t order_len, uint64_t seq, int64_t wake, int kind,
                         int64_t then, StoreBytes group, int *cls);

/* Removes the index entry described by a record's header (none for
 * WAKE_NO_SLOT) — of a record of "group" as for lmdb_queue_index_add —
 * and says in "*cls" which count it was in (-1: none, or missing).
 * Copies what it needs from "h" before writing, so "h" may point into
 * LMDB memory.  A missing entry is not an error. */
int lmdb_queue_index_remove(StoreTxn *t, uint32_t table, const void *rkey, size_t rkey_len,
                            const RecordHead *h, StoreBytes group, int *cls);

/* Counts the records of table "table" and their index entries (the done
 * ones by the done index's) from scratch (see "Layout"), at O(1) per
 * record. */
int lmdb_table_recount(StoreTxn *t, uint32_t table);

/* Puts (put) or deletes the done entry of record [T][rkey], done at
 * "completed_at": a store status (deleting a missing one is not an
 * error). */
int lmdb_done_entry(StoreTxn *t, uint32_t table, int64_t completed_at, const void *rkey,
                    size_t rkey_len, bool put);

/* Removes the done record [T][rkey] of done entry "completed_at" and the
 * entry, noting in "delta" a record and a done one fewer; a record that is
 * not done at that instant (a stray entry) stays, and only the entry goes. */
int lmdb_done_remove(StoreTxn *t, uint32_t table, int64_t completed_at, const void *rkey,
                     size_t rkey_len, int64_t delta[CNT_N]);

/* Removes up to STORE_REAP_MAX expired done records of queue "q"
 * (queue_done_expired), the oldest finish first, and counts them: one
 * cursor seek when none is expired, none when the store has no done
 * record. */
int lmdb_done_reap(StoreTxn *t, const StoreQueue *q);

/* ---- the backend's operations (backend.h: store.h's meaning) ---- */

/* lmdb_NAME for each operation NAME of ops.def. */
#define STORE_OP(ret, op, params, args, self) ret lmdb_##op params;
#define STORE_VOID_OP(op, params, args, self) void lmdb_##op params;
#include "ops.def"

#endif
