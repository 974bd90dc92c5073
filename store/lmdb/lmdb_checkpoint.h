/* lmdb_checkpoint.h — the durable mark that lets an LMDB store commit
 * without syncing and still never be corrupt after a machine crash: the
 * record file and LMDB's meta pages, and recovery after an unclean stop.
 * Used by the lmdb_*.c files (and the store's tests) only;
 * lmdb_checkpoint.c holds it.
 *
 * LMDB with MDB_NOSYNC writes a commit's pages and then its meta page
 * without syncing either, so after a machine crash the newest meta page may
 * point at pages that never reached the disk.  A checkpoint is a
 * transaction whose pages are all on disk (synced after it committed: the
 * pages the checkpoint before did not use, or the whole data file) and
 * which a reader pins, so that LMDB never reuses its pages, until a later
 * checkpoint is recorded.  "queuefs.checkpoint" keeps a copy of its two
 * meta pages in two slots written in turn (the newer valid one counts, so
 * a torn write leaves the older).  A record also says where in the redo
 * log (lmdb_log.h) the chain of the commits after it begins: every commit
 * after it is in that chain, or covered by a later checkpoint before it
 * was acknowledged (see lmdb_log.h).
 *
 * A record may instead say "trust the disk": the last process to close
 * synced the data file and wrote it, and every commit since syncs its data
 * before writing its meta page, so the newest meta page is always whole.
 *
 * Recovery is decided by the store's own files, not by a guess about the
 * machine: an opener that finds no other process with the environment
 * open, and a newest record that is a checkpoint (the last process did not
 * close cleanly: it crashed, or the machine or the disk lost power), puts
 * the checkpoint's meta pages back and replays the log's chain after it.
 * After a crash of processes alone (the page cache whole) that gives back
 * exactly the store as it was; after a power loss, every commit whose log
 * entry reached the disk.  Whatever the boot, the device number the disk
 * came back under, or the host that opens it.
 *
 * The meta page layout is LMDB's data format version 1 (LMDB 0.9): a
 * 16-byte page header (page number, flags 0x08 at byte 10), then magic
 * 0xBEEFC0DE, version 1, ..., last page at byte 136 and transaction id at
 * byte 144.  lmdb_checkpoint_meta_read() refuses any other layout. */
#ifndef QUEUEFS_LMDB_CHECKPOINT_H
#define QUEUEFS_LMDB_CHECKPOINT_H

#ifndef QUEUEFS_LMDB_BACKEND
#error \
    "the LMDB backend's own header: only store/lmdb/ includes it (built with -DQUEUEFS_LMDB_BACKEND)"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHECKPOINT_FILE "queuefs.checkpoint"
#define CHECKPOINT_META_LEN 256 /* bytes kept of each meta page (LMDB uses 152) */

/* One checkpoint record. */
typedef struct Checkpoint {
    uint64_t seq;                               /* orders the records: the newer is larger */
    uint64_t txnid;                             /* the transaction wholly on disk */
    bool trust_disk;                            /* true: nothing to put back (see above) */
    unsigned char meta[2][CHECKPOINT_META_LEN]; /* meta pages 0 and 1 */
    bool log;                                   /* the redo log's chain follows it (lmdb_log.h): */
    uint64_t log_epoch;                         /* the chain's epoch */
    uint64_t log_pos;                           /* the position of its first entry */
} Checkpoint;

/* Opens (creating, with room for both slots) "queuefs.checkpoint" in the
 * store directory "location": a descriptor, or -errno. */
int lmdb_checkpoint_open(const char *location);

/* Reads the newer valid record of "fd" into "out": 0, ENOENT when neither
 * slot holds a valid record, or an errno of the read. */
int lmdb_checkpoint_read(int fd, Checkpoint *out);

/* Writes "c" (c->seq set by the caller, one more than the last record's)
 * to the slot the last record is not in and syncs it: 0 or an errno. */
int lmdb_checkpoint_write(int fd, const Checkpoint *c);

/* Reads the first CHECKPOINT_META_LEN bytes of both meta pages of the data
 * file "data_fd" (pages of "page_size" bytes) into "meta", and the newest
 * meta page's transaction id into "*newest": 0, EINVAL when they are not
 * LMDB meta pages of the format above, or an errno of the read. */
int lmdb_checkpoint_meta_read(int data_fd, unsigned page_size,
                              unsigned char meta[2][CHECKPOINT_META_LEN], uint64_t *newest);

/* Takes the store's open lock ("type" F_WRLCK, or F_RDLCK for an opener
 * that only reads) or lets it go (F_UNLCK): an OFD lock on a byte of
 * "ckpt_fd" past its slots, held by each opener of the store while it
 * decides whether to recover and opens the environment, so that openers
 * that may recover go one at a time.  Waits for another opener.  0 or an
 * errno. */
int lmdb_open_lock(int ckpt_fd, short type);

/* Sets "*alone" when no process has the environment in the store directory
 * "location" open: none holds LMDB's lock on its lock file (a process of
 * any build of queuefs, or LMDB's own tools).  Call it with the open lock
 * held, before this process opens the environment.  0 or an errno. */
int lmdb_store_alone(const char *location, bool *alone);

/* For an opener that only reads, before it opens the environment of the
 * store directory "location": EUCLEAN when the store stopped uncleanly and
 * no process has it open, so that it needs a recovery which only a
 * process that may write it makes (reading it as it is could meet pages
 * the crash tore); 0 when it need not, or when the record file cannot be
 * read (another user's: the answer is unknown).  "*ckpt_fd" is the record
 * file (-1: none), open with the open lock held shared, so that no writer
 * recovers the store meanwhile: the caller closes it once the environment
 * is open. */
int lmdb_checkpoint_unrecovered(const char *location, int *ckpt_fd);

/* Recovers the store after an unclean stop (see above), for an opener
 * that is alone (lmdb_store_alone) and holds the open lock: when the newer
 * record of "ckpt_fd" is a checkpoint, puts its meta pages back over the
 * data file of the store directory "location", replays the redo log's
 * chain after it, syncs, and only then writes a "trust the disk" record.
 * A failure leaves the record and the log as they were, to be acted on
 * again.  0 (also when there is no data file or no record), EUCLEAN when
 * the data file is older than the record (another data file put in its
 * place), or an errno or LMDB code. */
int lmdb_checkpoint_recover(int ckpt_fd, const char *location);

#endif
