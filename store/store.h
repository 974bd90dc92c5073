/* store.h — the storage backend interface of queuefs.
 *
 * A Store is a set of tables, each holding records, in one durable
 * environment that several processes (and, for a server backend, several
 * hosts) may open at once.  The store knows nothing of the query language:
 * a record's value is an opaque byte string under an opaque byte-string
 * key, and a table's definition is an opaque blob.  What the store does
 * know is the queue: the engine's columns of a queue record (StoreRecord:
 * its attempts, its hold and who took it, its times, its claim order and
 * NOT BEFORE instant) live beside the value, and only the queue primitives
 * change them — a claim hands out the head in one call, a release, touch,
 * retry or delete checks the hold it ends, and the counters, hold numbers,
 * assigned identities and DEDUPLICATE windows are their side effects.  So
 * a backend can claim in one statement, with no read-modify-write of the
 * caller's between hosts.
 *
 *   - A queue record is *ready* (claimable, in claim order: its order key,
 *     then arrival), *waiting* until an instant (held until its
 *     claimed_until, or delayed until its not_before), or *retired* (at
 *     the ATTEMPTS ceiling and not held).  A waiting record whose instant
 *     has come moves on as a claim finds it — nothing sweeps in the
 *     background — and finding the head is O(log n) whatever is held or
 *     delayed ahead of it.
 *   - A collection's records (StoreQueue NULL) are in no queue.
 *
 * Memory: byte strings the store returns (StoreBytes) point into the
 * backend's own memory and stay valid only until the next update in the
 * same transaction or its end, like LMDB's values.  Copy what you keep.
 *
 * Errors: every function returning int returns STORE_OK (0) or one of the
 * StoreStatus codes; store_strerror() gives a message.  A function that
 * fails inside a write transaction leaves the transaction usable but the
 * caller is expected to abort it: nothing is half-written because nothing
 * of an aborted transaction is ever visible.
 *
 * Threads: a Store may be shared by threads; a StoreTxn belongs to the
 * thread that began it.  At most one write transaction is open at a time
 * across all processes; store_txn_begin() of a writer blocks until the
 * previous one ends.  Writers should use store_write(), which lets
 * concurrent writers share one transaction and one sync of the disk.
 *
 * Durability (sync on): a write is on disk when store_write() or
 * store_txn_commit() returns STORE_OK.  Concurrent writers share syncs, in
 * one process and across processes on one store.  A failed write or sync of
 * the disk is STORE_IO for every caller whose changes it may have lost —
 * never only logged.  After a failed sync the changes may still be visible
 * (they reached the page cache, not necessarily the disk): the caller knows
 * only that their durability is unknown.  A failure before the changes were
 * committed leaves the store as it was.
 *
 * Space: the store's map starts at StoreOptions.map_size (or the data
 * already stored, if larger) and grows by itself (store_write only) while
 * the filesystem has room.  A write that cannot fit is STORE_FULL; nothing
 * is half-written, and reads keep working.  The store keeps a reserve of
 * room, allocated on disk, for the write transactions that call
 * store_txn_use_reserve() — those that only claim, release, touch, delete
 * or drop, which must keep working on a full store or a full disk: every
 * other write transaction is STORE_FULL when it would leave less than the
 * reserve free.  The reserve is 1/8 of the room the store has (the disk's
 * free space and its own file), at least 256 KiB and at most 8 MiB; a
 * transaction that needs more than what is free still gets STORE_FULL.
 *
 * The store never prints and never sees a path beyond the one it opens.
 */
#ifndef QUEUEFS_STORE_H
#define QUEUEFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Store Store;
typedef struct StoreTxn StoreTxn;

/* The statuses, in the order of their codes (STORE_OK is 0): each its name
 * and the message store_strerror() gives for it. */
#define STORE_STATUSES(X) \
    X(STORE_OK, "success") \
    /* no such table or record */ \
    X(STORE_NOTFOUND, "not found") \
    /* a table of that name is already defined */ \
    X(STORE_EXISTS, "already exists") \
    /* the environment cannot grow to hold the write */ \
    X(STORE_FULL, "store is full") \
    /* a key longer than STORE_MAX_KEY */ \
    X(STORE_TOOBIG, "key too long") \
    /* the disk failed (write, fsync, read) */ \
    X(STORE_IO, "store I/O error") \
    /* too many readers, or the environment is locked out */ \
    X(STORE_BUSY, "store busy") \
    /* the environment is not a queuefs store, or damaged */ \
    X(STORE_CORRUPT, "not a queuefs store, or damaged") \
    /* an option of the store is malformed (QUEUEFS_MAP_SIZE) */ \
    X(STORE_INVALID, "invalid store option") \
    /* a write to a store opened for reading only */ \
    X(STORE_READONLY, "the store is open for reading only") \
    /* the record's live hold is not the one named */ \
    X(STORE_CONFLICT, "the record's hold is not the one named") \
    /* no identity is left to assign */ \
    X(STORE_EXHAUSTED, "no identity is left to assign")

typedef enum StoreStatus {
#define STORE_STATUS_NAME(name, message) name,
    STORE_STATUSES(STORE_STATUS_NAME)
#undef STORE_STATUS_NAME
} StoreStatus;

/* The longest record key, order key or group, in bytes. */
#define STORE_MAX_KEY 400

/* Bytes owned by the store; see "Memory" above. */
typedef struct StoreBytes {
    const void *data;
    size_t len;
} StoreBytes;

typedef struct StoreRecord StoreRecord;

/* Turns the value of a record written by a store of format 2 — whose
 * caller kept a queue record's engine columns and times inside its own
 * value — into "out": its new value, times, columns, not_before and group
 * (its key, order and place in the queue stay as they were filed).
 * "table_def" is its table's definition.  0, or non-zero to refuse: the
 * open fails with STORE_CORRUPT.  What "out" points to must stay valid
 * until the next call. */
typedef int (*StoreUpgradeFn)(void *ctx, StoreBytes table_def, StoreBytes old_value,
                              StoreRecord *out);

typedef struct StoreOptions {
    bool sync;              /* true: a committed write is on disk when commit returns;
                           false: a machine crash may undo the last commits, but
                           the store is never corrupted */
    size_t map_size;        /* initial map size in bytes; 0 = $QUEUEFS_MAP_SIZE, else
                         * STORE_DEFAULT_MAP_SIZE */
    bool read_only;         /* open an existing store for reading only, as a user
                         * or a filesystem that cannot write it may: nothing
                         * is created, synced or checkpointed, and every write
                         * transaction is STORE_READONLY.  LMDB still needs to
                         * write its lock file, except on a read-only
                         * filesystem (where it reads without locks: no
                         * process can be writing there) */
    StoreUpgradeFn upgrade; /* how to bring a store of format 2 up to date
                              * (the first process that opens it for writing
                              * does, in one transaction); NULL: its records'
                              * values stay as they are, with zero columns */
    void *upgrade_ctx;
} StoreOptions;

/* The initial map size when neither StoreOptions.map_size nor the
 * environment variable QUEUEFS_MAP_SIZE (bytes, or a number with a K, M or
 * G suffix: "1M") sets one.  The map grows by itself as the store fills. */
#define STORE_DEFAULT_MAP_SIZE ((size_t)64 << 20)

/* Figures of a Store's activity in this process, since it was opened. */
typedef struct StoreStats {
    uint64_t writes;  /* store_write() callers served */
    uint64_t groups;  /* write transactions committed for them */
    uint64_t syncs;   /* group syncs this process made (besides the sync of
                          * the data pages inside each commit) */
    uint64_t grows;   /* times this process grew the map */
    uint64_t waiting; /* store_write() callers waiting right now */
    size_t map_size;  /* the map's current size in bytes */
} StoreStats;

/* ---- the environment ---- */

/* Opens the store at "location" — a directory (created when absent, mode
 * 0700: the embedded store) or a server's URI (store_location_is_server) —
 * ready for transactions.  Safe to call in several processes (and hosts,
 * for a server) at once on the same location.  After an unclean stop of
 * whatever had it open (processes killed, the machine or its disk losing
 * power), the open that finds the store so brings it back first: every
 * write acknowledged as durable is there, and nothing torn, whatever the
 * boot, device or host that opens it.  The space the store starts with
 * and grows by: see "Space" above.  On failure "*out" is NULL and "errbuf"
 * (when non-NULL) holds a message naming the location; STORE_INVALID when
 * an option of the store is malformed (QUEUEFS_MAP_SIZE).  How each
 * backend keeps these promises: store/lmdb/lmdb_internal.h
 * ("Durability") and store/pg/pg_internal.h. */
int store_open(const char *location, const StoreOptions *opts, Store **out, char *errbuf,
               size_t errlen);
/* True when "location" names a PostgreSQL database (a postgresql:// or
 * postgres:// URI, libpq's form) rather than an LMDB directory. */
bool store_location_is_server(const char *location);
/* "location" as it may be shown — in logs, messages and the mount table:
 * a URI without its password (user:PASSWORD@ and password=… dropped), a
 * path as it is.  Into "out" (truncated to "len"). */
void store_location_shown(const char *location, char *out, size_t len);
/* Closes the store (syncing it); every transaction must have ended. */
void store_close(Store *st);
/* A message for "status" (static storage). */
const char *store_strerror(int status);
/* What the backend said of the last failure of this thread's calls since
 * its last store_txn_begin or store_write began ("" when nothing): for
 * PostgreSQL, the server and its message — never a password. */
const char *store_error_detail(void);
/* The store's clock: nanoseconds since the Unix epoch — the one every
 * process and host on the store agrees on (the local realtime clock for a
 * directory, the server's for a server). */
int64_t store_now(Store *st);

/* Waiting for a change, without polling:
 *
 *     uint64_t seen = store_changes(st);
 *     while (!what_i_wait_for())              // looked at after "seen"
 *         store_wait_change(st, seen, until), seen = store_changes(st);
 *
 * store_changes() is a number that moves on after every commit that
 * changed the store, by any process of this build on it (and at every
 * store_wake) — on PostgreSQL, after every commit that may have made a
 * record claimable or changed a definition: a commit that only claimed,
 * touched or deleted records (no group let go) tells no waiter, since
 * nothing it did can end a wait.  store_wait_change() sleeps while it still equals "seen",
 * until the store's clock reaches "until_ns" (INT64_MAX: no limit); it
 * costs no CPU meanwhile, and a commit that finds nobody waiting pays
 * nothing for it.  It may return early (a signal,
 * a spurious wake-up): callers look again.  True when the number moved
 * on. */
uint64_t store_changes(Store *st);
bool store_wait_change(Store *st, uint64_t seen, int64_t until_ns);
/* Moves store_changes() on and wakes every store_wait_change on the store,
 * in every process, as a commit would: for a waiter whose own reasons to
 * look again changed (a new thing to wait for, an interrupt). */
void store_wake(Store *st);

/* Fills "out" with the store's figures (see StoreStats). */
void store_stats(Store *st, StoreStats *out);

/* The owner of the store "txn" is on: a table with no owner of its own (one
 * queuefs-sql defined) belongs to it, for the file view and ctl alike.  For
 * LMDB the owner of its directory, as it was when the store was opened; for
 * PostgreSQL, whose database has no owner among the mount's users, the user
 * who opened it (the mount's).  False (nothing filled) when it is not
 * known. */
bool store_owner(StoreTxn *txn, uint32_t *uid, uint32_t *gid);

/* ---- transactions ---- */

/* The transaction's instant, in nanoseconds since the Unix epoch: the
 * store's clock (store_now) when it was first asked in "txn", and the same
 * for the rest of it, so every statement of a transaction acts at one
 * instant.  (PostgreSQL's is the server's now().) */
int64_t store_txn_now(StoreTxn *txn);

/* Runs "fn" inside a write transaction and commits it: with sync on, the
 * changes are on disk when store_write returns STORE_OK.
 *
 * Concurrent callers in one process share one transaction and one sync: a
 * leader thread begins the transaction and runs each waiting caller's "fn"
 * in a nested transaction of its own, so an "fn" that fails (returns
 * non-zero) is rolled back alone while the others commit; then one commit
 * and one sync serve them all.  Callers in other processes on the store
 * share syncs too.
 *
 * "fn" runs on the leader's thread while its caller waits, so it may use
 * the caller's data freely; it must not begin transactions or call
 * store_write itself, and "txn" is valid only during the call.  "fn" may be
 * run more than once — when the map is full the transaction is rolled back,
 * the map grown and "fn" run again — so each run must start from scratch
 * (clear what an earlier run produced) and have no effect outside "txn"
 * that a rerun would repeat.
 *
 * Returns:
 *   - STORE_OK: "fn" returned 0 and its changes are committed (and durable
 *     with sync on);
 *   - the non-zero value "fn" returned, as is: nothing of this run is kept
 *     (use values that differ from the StoreStatus codes, e.g. negative
 *     ones, to tell them apart).  When "fn" failed because the store was
 *     full and the map could not grow, it is also its value that is
 *     returned;
 *   - STORE_FULL when the commit itself needed space the disk does not
 *     have, STORE_IO when the disk failed (writing, or syncing: see
 *     "Durability"), another StoreStatus when the transaction could not be
 *     begun.  Every caller of the group gets such an error.
 *
 * Example:
 *
 *     static int
 *     add_one(StoreTxn *txn, void *ctx)
 *     {
 *         Job *j = ctx;
 *         return store_record_create(txn, j->table, NULL, &j->record) ? -1 : 0;
 *     }
 *     ...
 *     int rc = store_write(st, add_one, &job);   // 0: on disk
 */
int store_write(Store *st, int (*fn)(StoreTxn *txn, void *ctx), void *ctx);

/* Begins a transaction; "write" for one that may change the store (such a
 * transaction has the store's writer lock until it ends and shares nothing:
 * prefer store_write). */
int store_txn_begin(Store *st, bool write, StoreTxn **out);
/* Commits and frees "txn".  With sync on, the changes are on disk when it
 * returns STORE_OK.  On failure nothing of the transaction is kept (STORE_IO
 * when the disk failed, STORE_FULL when the store is full: a transaction
 * begun here never grows the map), except after a failed sync (see
 * "Durability"). */
int store_txn_commit(StoreTxn *txn);
/* Discards and frees "txn"; NULL is allowed. */
void store_txn_abort(StoreTxn *txn);
/* Lets write transaction "txn" use the reserve (see "Space"): call it,
 * from a store_write "fn" or on a transaction of store_txn_begin, for a
 * transaction that adds or enlarges nothing but what a claim, release,
 * touch, delete or drop does.  Without it the transaction is refused with
 * STORE_FULL (fn's changes rolled back) when it would leave less than the
 * reserve free. */
void store_txn_use_reserve(StoreTxn *txn);

/* Marks write transaction "txn" as one whose changes need not be durable
 * when it returns (store_write, store_txn_commit): only claims, touches
 * and give-backs of claims — holds, which a crash of the one machine that
 * holds them all ends anyway.  With sync on, such a write returns once
 * committed, and becomes durable with the store's next checkpoint or the
 * next durable write, whichever comes first; a machine crash before then
 * undoes it (the record is as it was before the claim: at worst unclaimed,
 * never half-written).  A backend whose holders may be on other machines
 * (a server's) keeps every write durable and ignores the mark. */
void store_txn_lazy(StoreTxn *txn);

/* Tells write transaction "txn" that the next primitive called on it is
 * the last thing it changes: its caller then commits (store_write: "fn"
 * returns), doing nothing more in it but reads should that primitive find
 * nothing to change.  A backend whose commit costs a round trip (a
 * server's) may send the commit with the primitive's statement: then once
 * the primitive has returned STORE_OK its changes are committed, and a
 * failure of "fn" after it no longer undoes them; reads after a primitive
 * that changed nothing run in a transaction begun afresh.  A backend
 * without such a commit ignores the mark. */
void store_txn_last(StoreTxn *txn);

/* ---- the catalog ----
 * Each table has a name (<= STORE_MAX_KEY bytes), a definition blob the
 * caller encodes, and a numeric id the store assigns (never reused, so a
 * dropped and redefined table starts empty). */

/* Defines table "name" with "def".  STORE_EXISTS when the name is taken. */
int store_table_create(StoreTxn *txn, const char *name, StoreBytes def, uint32_t *id_out);
/* Replaces the definition of an existing table (fields, indexes added).
 * STORE_NOTFOUND when there is no such table. */
int store_table_redefine(StoreTxn *txn, const char *name, StoreBytes def);
/* Looks up "name": its id and definition.  STORE_NOTFOUND when absent. */
int store_table_get(StoreTxn *txn, const char *name, uint32_t *id_out, StoreBytes *def_out);
/* Calls "fn" for each table in name order until it returns non-zero (that
 * value is returned). */
int store_table_each(StoreTxn *txn,
                     int (*fn)(void *ctx, const char *name, uint32_t id, StoreBytes def),
                     void *ctx);
/* Removes the table, its records, its indexes, counters, identities and
 * DEDUPLICATE entries. */
int store_table_drop(StoreTxn *txn, const char *name);
/* Renames table "from" to "to": its id goes with the name, and so do its
 * records, indexes, counters, identities and definition (kept as it is: a caller
 * whose definition holds the name redefines it).  STORE_NOTFOUND when
 * there is no table "from", STORE_EXISTS when "to" is taken (even by
 * "from"), STORE_TOOBIG when "to" is empty or too long. */
int store_table_rename(StoreTxn *txn, const char *from, const char *to);

/* ---- records ----
 * A record lives under (table id, key).  Keys order by memcmp; the caller
 * chooses an encoding that orders identities as it wants.  Its "value" is
 * the caller's, opaque to the store; a queue's record also has the
 * engine's columns (StoreRecord), which only the queue primitives below
 * change, and the times every record's file shows, which the store stamps
 * with the transaction's instant (store_txn_now). */

struct StoreRecord {
    StoreBytes key;
    StoreBytes value; /* the caller's bytes */
    uint64_t seq;     /* arrival sequence in its table (claim order's
                                * tie-break); kept across updates */
    /* The times: since = created, or last released; written = its value
     * created or last replaced; changed = its hold last changed (claim,
     * release, touch, retry) or created; claimed = its last hold taken
     * (0: never). */
    int64_t since, written, changed, claimed;
    /* The engine's columns (a queue's records; zero on a collection's).
     * attempts counts the holds taken (RETRY sets it back to 0); the last
     * hold is described by hold (its store-wide number, never reused),
     * claimed_until (its deadline; a past one means it lapsed), consumer
     * (who signed it; empty: unsigned) and instance (the session that took
     * it).  A release clears hold, claimed_until, consumer and instance:
     * claimed_until == 0 means no hold since the last release. */
    int64_t attempts;
    int64_t hold;
    int64_t claimed_until;
    StoreBytes consumer, instance;
    /* How the caller files a queue record: "order" is its claim-order key
     * (ascending memcmp, then seq; empty: the record key), "not_before"
     * the instant before which it is not handed out (0: none), "group" its
     * AT MOST … PER group (empty: none; reserved — see StoreQueue). */
    StoreBytes order;
    int64_t not_before;
    StoreBytes group;
    /* The record's failed attempts, oldest first, the last
     * STORE_ERRORS_KEPT of them: each entry [i64 attempt][i64 at][u16
     * len][len bytes of text], big-endian (store/queue.h reads and writes
     * them).  A release with a reason adds one; a hold that lapsed adds
     * "lapsed" at its deadline when a claim or retry finds it so; a
     * collection's records have none.  Like the engine's columns, only the
     * queue primitives change it: create starts it empty, update keeps it. */
    StoreBytes errors;
    /* KEEP (StoreQueue.keep_ns): the instant its finish made the record
     * done (store_record_delete), 0 while it is not.  A done record is
     * never claimed and is in no claim index; it is kept until the reaping
     * of its queue's writes removes it (StoreQueue.keep_ns).  Only the
     * queue primitives change it: create starts it at 0, update keeps it. */
    int64_t completed_at;
    /* COALESCE: true when a CREATE came while the record was held
     * (store_record_rerun): its finish hands it out again as new work
     * instead of finishing it.  Create starts it false, update keeps it. */
    bool rerun;
};

/* How many failed attempts a record keeps (StoreRecord.errors), and the
 * longest reason a release may give. */
#define STORE_ERRORS_KEPT 20
#define STORE_MAX_REASON 4096

/* What a queue's definition tells the primitives.  A record of a queue is
 * in one of three states: *ready* (in claim order), *waiting* until an
 * instant (held until its claimed_until, or delayed until not_before), or
 * *retired* (at the ATTEMPTS ceiling and not held: handed out no more).
 * At its claimed_until a held record becomes retired at the ceiling,
 * delayed when its not_before is later, or ready. */
typedef struct StoreQueue {
    uint32_t table;
    int64_t timeout_ns;   /* a hold's length (TIMEOUT) */
    int64_t max_attempts; /* the ATTEMPTS ceiling; 0: none */
    /* AT MOST per_group PER f (0: none): at most this many records of one
     * group (StoreRecord.group, non-empty) are held at once.  A claim
     * passes over a group with that many holds and takes the next
     * claimable record of another; a group's records go in claim order
     * among themselves.  A record with an empty group is in no group; with
     * per_group 0 the groups are ignored.  Finding the head costs O(log n)
     * however many records wait behind groups at their limit: a backend
     * files only each group's next record where claims look.  A hold that
     * lapses frees its group's place at the claim that finds it lapsed.
     * A queue whose per_group changes is refiled (store_queue_refile). */
    int64_t per_group;
    /* AT MOST rate EVERY rate_window_ns (rate 0: none): at most "rate"
     * records handed out by store_claim in any window of rate_window_ns,
     * counted across every process and host on the store; a claim beyond
     * it takes fewer, or none (not an error).  See store_queue_rate_next. */
    int64_t rate, rate_window_ns;
    bool paused; /* claims hand out nothing */
    /* KEEP keep_ns (0: none): a finish (store_record_delete) marks a
     * record done for this long instead of removing it.  A done record
     * whose completed_at + keep_ns has passed is expired (queue.h's
     * queue_done_expired: readers treat it as gone), and the queue's
     * writes remove expired ones as they go — store_record_create,
     * store_record_delete and store_claim of the queue each remove up to
     * STORE_REAP_MAX of them, oldest finish first (those of one instant
     * in an order of the backend's), so nothing sweeps in the background
     * and the store keeps about the finish rate × KEEP of them.  With
     * keep_ns 0 a queue keeps no done record (a refile removes
     * those an earlier KEEP left: store_queue_refile). */
    int64_t keep_ns;
} StoreQueue;

/* The most expired done records one write of a queue removes. */
#define STORE_REAP_MAX 256

/* Reads the record under "key" into "out" (pointers into the store's
 * memory; see "Memory").  In a write transaction the record is locked for
 * the rest of it (a backend with row locks takes it FOR UPDATE).
 * STORE_NOTFOUND when absent, STORE_TOOBIG for a key longer than
 * STORE_MAX_KEY. */
int store_record_get(StoreTxn *txn, uint32_t table, StoreBytes key, StoreRecord *out);
/* Creates the record "r->key" with "r->value" (and for a queue, q != NULL,
 * filed by r->order, r->not_before and r->group; its engine columns start
 * at zero; every other field of "r" is ignored).  Its times are now; it
 * gets its table's next arrival sequence.  STORE_EXISTS when the key is
 * taken (nothing changes) — except, on a queue, by a done record
 * (completed_at != 0): that one is replaced as if it were absent, and the
 * new record is new work (counted as a record, no longer as done). */
int store_record_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r);
/* Creates the "n" records rs[0 .. n), whose keys differ, as n calls of
 * store_record_create would in that order (their arrival sequences in
 * that order), in one call: a server backend sends one statement for them
 * all.  STORE_EXISTS when a key is taken (not by a done record), with
 * "*failed" (may be NULL) the index of the first such record; another
 * failure as store_record_create's.  On a failure the transaction is to
 * be aborted: some of the records may have been created. */
int store_records_create(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *rs,
                         size_t n, size_t *failed);
/* Replaces the value of the existing record "r->key" with "r->value" and
 * refiles it by r->order, r->not_before and r->group (queues); its engine
 * columns, sequence and other times stay, "written" becomes now.
 * STORE_NOTFOUND when absent. */
int store_record_update(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreRecord *r);
/* Deletes the record.  "hold" > 0: only when that is the number of its
 * live hold (STORE_CONFLICT otherwise, nothing changes).  STORE_NOTFOUND
 * when absent.  A queue's delete (q != NULL) is its finish, counted in
 * its deletes, and does one of three things:
 *   - a record marked to run again (rerun: store_record_rerun) is handed
 *     out again as new work: its hold ended (hold, claimed_until,
 *     consumer and instance cleared), attempts 0, errors emptied, rerun
 *     false, since = changed = now, the table's next arrival sequence,
 *     filed by its order, not_before and group as they are;
 *   - else, on a queue that keeps (q->keep_ns > 0), a record not yet done
 *     becomes done: completed_at = changed = now, its hold ended as
 *     above, out of every claim index (its attempts and errors stay);
 *   - else (a done record, or a queue that keeps none) it is removed. */
int store_record_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, StoreBytes key,
                        int64_t hold);
/* Deletes the "n" records keys[0 .. n), each fenced by holds[i] as
 * store_record_delete's "hold", as n calls of store_record_delete would in
 * that order, in one call: a server backend sends one statement for the
 * plain removals of them all.  On a failure (STORE_NOTFOUND, STORE_CONFLICT,
 * …) "*failed" (may be NULL) is the index of the first record that failed,
 * and the transaction is to be aborted: some of them may have been
 * deleted. */
int store_records_delete(StoreTxn *txn, uint32_t table, const StoreQueue *q, const StoreBytes *keys,
                         const int64_t *holds, size_t n, size_t *failed);
/* Calls "fn" for each record of the table in key order, starting at the
 * first key >= "from" (from.len == 0: the first record), until "fn" returns
 * non-zero (that value is returned).  The record passed is valid during the
 * call.  The table must not be changed during the walk. */
int store_record_each(StoreTxn *txn, uint32_t table, StoreBytes from,
                      int (*fn)(void *ctx, const StoreRecord *r), void *ctx);

/* ---- the queue primitives ----
 * Each runs in a write transaction, at the transaction's instant (now),
 * and keeps the queue's counters (StoreQueueCounts) as it goes.  Besides
 * the errors each names, any may return STORE_FULL, STORE_IO or
 * STORE_CORRUPT as a write does, and STORE_TOOBIG for a key longer than
 * STORE_MAX_KEY (a consumer or instance over 255 bytes); records passed
 * to "fn" and "out" point into the store's memory (see "Memory"); a
 * non-zero return of "fn" stops the primitive and is returned. */

/* What a claim asks for. */
typedef struct StoreClaim {
    int64_t n;           /* at most this many records, from the head */
    StoreBytes key;      /* non-empty: the one record "key" instead,
                              * when it is claimable now */
    StoreBytes consumer; /* signs the holds (empty: unsigned) */
    StoreBytes instance; /* the claiming session's instance */
} StoreClaim;

/* Claims: takes the first "c->n" ready records of the queue in claim
 * order (a waiting record whose instant has come counts as where it goes
 * then), or the one record "c->key" when it is ready.  Each claimed record
 * gets attempts + 1, the store's next hold number, claimed_until = now +
 * TIMEOUT (saturating), the consumer and instance, changed = claimed = now;
 * it is held until claimed_until.  A claim of a record whose last hold was
 * never released (claimed_until != 0) counts a lapse and adds "lapsed" to
 * its errors (the attempt that lapsed, at its deadline); every claim
 * counts a claim.  Calls "fn" for each claimed record in claim order with the
 * record as now stored and as it was before ("before": its columns; the
 * same key and value) — valid during the call — and returns the number
 * claimed in "*claimed".  STORE_NOTFOUND when "c->key" names no record
 * (nothing claimable is not an error: *claimed is 0).  A paused queue
 * (q->paused) hands out nothing; AT MOST … PER and AT MOST … EVERY
 * (StoreQueue) bound what it takes, a named record's claim too (a record
 * whose group is at its limit is not claimable). */
int store_claim(StoreTxn *txn, const StoreQueue *q, const StoreClaim *c,
                int (*fn)(void *ctx, const StoreRecord *now, const StoreRecord *before), void *ctx,
                int64_t *claimed);
/* Ends hold number "hold" of record "key": clears the hold's columns,
 * since = changed = now, and not_before = "not_before" when it is non-zero
 * (the record waits until then); counts a release.  A non-empty "reason"
 * is added to its errors as the failure of the attempt the hold was.
 * "out" (may be NULL) receives the record as now stored.  STORE_NOTFOUND
 * when absent, STORE_CONFLICT when its live hold is not "hold", STORE_TOOBIG
 * when "reason" is longer than STORE_MAX_REASON (nothing changes). */
int store_release(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold,
                  int64_t not_before, StoreBytes reason, StoreRecord *out);
/* Releases every live hold of the queue that consumer "who" signed (who
 * non-empty), or else that instance "instance" took, as store_release
 * does (each with "reason"), calling "fn" (may be NULL) with each released
 * record in deadline order.  None to release is not an error. */
int store_release_all(StoreTxn *txn, const StoreQueue *q, StoreBytes who, StoreBytes instance,
                      int64_t not_before, StoreBytes reason,
                      int (*fn)(void *ctx, const StoreRecord *r), void *ctx);
/* Extends live hold "hold" of record "key" to now + TIMEOUT; changed = now.
 * Errors as store_release. */
int store_touch(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t hold, StoreRecord *out);
/* Ends any hold of record "key" (a live one counted as a release, one
 * that lapsed added to its errors as a claim would) and sets attempts
 * back to 0, so a retired record is claimable again; not_before as for
 * store_release; its errors stay.  STORE_NOTFOUND when absent or done
 * (a done record is finished: CREATE queues it again). */
int store_retry(StoreTxn *txn, const StoreQueue *q, StoreBytes key, int64_t not_before,
                StoreRecord *out);
/* Retries the "n" records keys[0 .. n), record i delayed until
 * not_befores[i] as store_retry's "not_before", as n calls of store_retry
 * would in that order, in one call: a server backend sends one statement
 * for them all on a queue without AT MOST … PER.  Calls "fn" with each
 * record as now stored, in that order.  On a failure (STORE_NOTFOUND, …)
 * "*failed" (may be NULL) is the index of the first record that failed,
 * and the transaction is to be aborted: some of them may have been
 * retried. */
int store_records_retry(StoreTxn *txn, const StoreQueue *q, const StoreBytes *keys,
                        const int64_t *not_befores, size_t n,
                        int (*fn)(void *ctx, const StoreRecord *r), void *ctx, size_t *failed);
/* COALESCE: marks record "key", while a hold of it runs, to run once
 * more (StoreRecord.rerun): its finish (store_record_delete) hands it out
 * again as new work.  The mark stays until then, across releases and
 * lapses.  Changes nothing else.  STORE_NOTFOUND when absent,
 * STORE_CONFLICT when no hold of it runs now (nothing changes). */
int store_record_rerun(StoreTxn *txn, const StoreQueue *q, StoreBytes key);
/* Gives back a claim whose taker will never see it: when the record is
 * still held by hold number "hold" and unchanged since that claim (not
 * touched, not rewritten), puts back the columns and place of "before"
 * (as store_claim passed it: its key and columns are read, its value not)
 * and takes the claim, and the lapse it counted, off the counters;
 * otherwise — finished, released, claimed again — changes nothing.  True
 * in "*given_back" when it did.  A record gone since is not an error. */
int store_unclaim(StoreTxn *txn, const StoreQueue *q, const StoreRecord *before, int64_t hold,
                  bool *given_back);

/* How store_queue_refile files one record: its claim-order key (empty:
 * the record key), NOT BEFORE instant (0: none) and AT MOST … PER group
 * (empty: none), as StoreRecord's order, not_before and group. */
typedef struct StoreFiling {
    StoreBytes order;
    int64_t not_before;
    StoreBytes group;
} StoreFiling;

/* Files every record of queue "q" anew under "q" as it is now — after a
 * change of its definition (ALTER QUEUE): its ATTEMPTS ceiling (a record
 * retired under the old ceiling may be ready now, a ready or held one
 * retired), its AT MOST … PER limit, or, when "file" is not NULL, how each
 * record is filed: "file" is called with each record (valid during the
 * call) and fills "*out" (its bytes valid until the next call), and the
 * record is filed so; a non-zero return stops the refile and is returned.
 * Changes no record's value, columns or times (held records keep their
 * deadline); a done record stays done, in no claim index — or, when
 * q->keep_ns is 0 (KEEP dropped), is removed.  O(n) in the records, in one
 * transaction. */
int store_queue_refile(StoreTxn *txn, const StoreQueue *q,
                       int (*file)(void *ctx, const StoreRecord *r, StoreFiling *out), void *ctx);

/* The first instant queue "q"'s AT MOST rate EVERY window admits another
 * hand-out into "*at": at most the transaction's instant when a claim now
 * may take one (always so when q->rate is 0), else when the oldest
 * hand-out of the window leaves it.  Works in a read transaction. */
int store_queue_rate_next(StoreTxn *txn, const StoreQueue *q, int64_t *at);

/* What a queue table holds at an instant, and what was done to it. */
typedef struct StoreQueueCounts {
    uint64_t records;                           /* every record of the table */
    uint64_t ready;                             /* claimable */
    uint64_t held;                              /* waiting for a hold to end */
    uint64_t delayed;                           /* waiting for a delay to end */
    uint64_t idle;                              /* retired: handed out no more */
    uint64_t grouped;                           /* claimable but for AT MOST … PER: waiting
                            * behind a record of their group (counted in
                            * none of ready, held, delayed and idle) */
    uint64_t groups_full;                       /* the groups with per_group records held */
    uint64_t done;                              /* done (KEEP), expired or not, until reaped:
                            * counted in records, in none of the others */
    uint64_t unsorted;                          /* waiting, filed by a store of an earlier format
                            * that did not tell held from delayed: counted in
                            * none of ready, held, delayed and idle */
    uint64_t claims, releases, lapses, deletes; /* since the table was made */
    bool has_head;
    StoreBytes head_key; /* when has_head: the ready record the next claim
                            * takes (the first in claim order) */
    int64_t next_wake;   /* the first instant a waiting record becomes
                            * claimable or retires (INT64_MAX: none) */
} StoreQueueCounts;

/* What table "table" holds at the transaction's instant (see
 * StoreQueueCounts), as a claim then would find it: a waiting record
 * whose instant has come counts where it is going.  Costs O(log n) plus one
 * step per waiting record whose instant has come since the last claim: it
 * does not grow with the number of records.  Works in a read transaction. */
int store_queue_counts(StoreTxn *txn, uint32_t table, StoreQueueCounts *out);
/* Calls "fn" for every waiting record of the queue (held or delayed), in
 * wake order, with the instant it wakes; stops when "fn" returns non-zero
 * (that value is returned).  The record is valid during the call. */
int store_queue_each_waiting(StoreTxn *txn, uint32_t table,
                             int (*fn)(void *ctx, const StoreRecord *r, int64_t wake_ns),
                             void *ctx);

/* What a server backend knows of the store's health as a whole. */
typedef struct StoreHealth {
    bool known;         /* false: the backend keeps no such figures (LMDB) */
    uint64_t live_rows; /* the rows of the store's tables (an estimate) */
    uint64_t dead_rows; /* versions of rows left for VACUUM to reclaim (an
                            * estimate): what long transactions hold back */
} StoreHealth;

/* Fills "out" (see StoreHealth).  Works in a read transaction. */
int store_health(StoreTxn *txn, StoreHealth *out);

/* ---- identities and deduplication ---- */

/* The "n" identities the store assigns next in "table", into out[0 .. n)
 * in ascending order: each 1 + the greatest integer identity the table
 * has held (store_identity_note) when it is drawn, which it then holds —
 * a server backend draws them all in one statement.  STORE_EXHAUSTED
 * when that would pass INT64_MAX before n are drawn (a backend drawing
 * from a sequence keeps those it drew).  A backend drawing them from a
 * sequence may leave gaps after a rolled-back transaction, and between
 * the identities of one call when other transactions draw meanwhile. */
int store_identity_next(StoreTxn *txn, uint32_t table, size_t n, int64_t *out);
/* Notes that integer identity "id" is held in "table", so that
 * store_identity_next never hands it out. */
int store_identity_note(StoreTxn *txn, uint32_t table, int64_t id);
/* DEDUPLICATE: true in "*repeat" when "key" was first seen in "table" less
 * than "window_ns" before now; otherwise records it as first seen now.
 * Each check also prunes a few entries older than the window, so the
 * store keeps little more of them than the window holds (not every key
 * ever seen).  STORE_TOOBIG for a key over STORE_MAX_KEY. */
int store_dedup_check(StoreTxn *txn, uint32_t table, StoreBytes key, int64_t window_ns,
                      bool *repeat);

#endif
