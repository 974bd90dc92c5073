/* lmdb_log.h — the redo log of an LMDB store, "queuefs.log": what makes a
 * durable write one flush of a few hundred bytes instead of a checkpoint
 * (a flush of every page the commits since the last one dirtied, then of
 * the record), and what recovery after an unclean stop replays
 * (lmdb_checkpoint.h).  Used by the lmdb_*.c files only; lmdb_log.c holds
 * it.
 *
 * Every commit, in commit order, appends one entry to the log: its
 * transaction id and the puts and deletes it made, as the keys and values
 * of each database.  The entries after a checkpoint form a chain (ids one
 * after the other, an epoch of the chain in each, a CRC over each).  A
 * durable write is done once the log is flushed past its entry; the
 * others (sync=none, and the claims sync=full makes lazy) are appended the
 * same, unflushed, so that a crash of the processes, which leaves the page
 * cache whole, loses none of them.  Recovery puts the newest checkpoint
 * back and then replays the chain from the position its record names, up
 * to the first entry missing, torn or of another chain.
 *
 * The file is a ring of LOG_LEN bytes, allocated when made.  What lies
 * before the position of the newest checkpoint record is free; an entry
 * that does not fit (or a commit too large for the ring, or one made by a
 * process without the log) breaks the chain until the next checkpoint
 * starts a new one.  A commit the chain does not hold is covered by a
 * checkpoint before its writer is answered, durable or not
 * (lmdb_log_covers, lmdb_sync_upto), so that recovery never undoes a write
 * that was acknowledged.
 *
 * The log's lock — a mutex in the process and flock on the file — is taken
 * once a write transaction holds LMDB's writer lock and let go once its
 * commit is appended (or it aborted), so entries are in commit order while
 * the append itself happens after LMDB let its writer lock go. */
#ifndef QUEUEFS_LMDB_LOG_H
#define QUEUEFS_LMDB_LOG_H

#ifndef QUEUEFS_LMDB_BACKEND
#error \
    "the LMDB backend's own header: only store/lmdb/ includes it (built with -DQUEUEFS_LMDB_BACKEND)"
#endif

#include "lmdb_checkpoint.h"

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_FILE "queuefs.log"
#define LOG_LEN (4u << 20) /* the ring's size */

typedef struct Store Store;

/* The changes of the write transaction a process has open, as the entry
 * they will be appended as (the header's room first). */
typedef struct LogOps {
    unsigned char *data;
    size_t len, cap;
    bool unloggable; /* too large, or of a database not logged */
} LogOps;

/* Opens (making and allocating when absent) the log of the store
 * directory "location" into st->log_fd: 0 or an errno. */
int lmdb_log_open(Store *st, const char *location);

/* mdb_put (flags 0) and mdb_del ("v" NULL: every value of the key), noted
 * in the log when they succeed: LMDB's code. */
int lmdb_put(Store *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v);
int lmdb_del(Store *st, MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v);

/* mdb_cursor_del of cursor "cur" on database "dbi", noted in the log. */
int lmdb_cursor_del(Store *st, MDB_cursor *cur, MDB_dbi dbi, unsigned flags);

/* How much the open write transaction has noted, and forgetting what was
 * noted since (a nested transaction that aborted). */
size_t lmdb_log_mark(Store *st);
void lmdb_log_rewind(Store *st, size_t mark);

/* Takes the log's lock for the write transaction that just began (and
 * empties its notes), and lets it go. */
void lmdb_log_lock(Store *st);
void lmdb_log_unlock(Store *st);

/* Appends the entry of the transaction "id" just committed (0: its commit
 * changed nothing), or breaks the chain when it cannot. */
void lmdb_log_append(Store *st, uint64_t id);

/* For the checkpoint of transaction "id", under LMDB's writer lock and
 * the log's: starts a new chain when the last is broken, and fills in
 * where the chain after the checkpoint begins (c->log…). */
void lmdb_log_chain(Store *st, uint64_t id, Checkpoint *c);

/* The record "c" was written: the log before its position is free. */
void lmdb_log_recorded(Store *st, const Checkpoint *c);

/* Whether recovery after a crash of the processes now would keep commit
 * "id": a sync or a checkpoint covers it, the store is safe (nothing is
 * recovered), or the log's chain holds it. */
bool lmdb_log_covers(Store *st, uint64_t id);

/* Makes transaction "id" durable by flushing the log, when the chain holds
 * it and the newest record starts the chain or comes after its start: true
 * with "*rc" 0 or the flush's errno; false when the log cannot, or the disk
 * is nearly full (lmdb_file_tight): the caller takes a checkpoint. */
bool lmdb_log_sync(Store *st, uint64_t id, int *rc);

/* After the meta pages of checkpoint "c" were put back: applies the chain
 * that follows it in the log of "location" (no process has the
 * environment open; its data file is "data_bytes" long) and syncs the
 * data file.  0 or an errno or LMDB code. */
int lmdb_log_replay(const char *location, uint64_t data_bytes, const Checkpoint *c);

#endif
