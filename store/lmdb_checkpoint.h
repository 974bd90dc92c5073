/* lmdb_checkpoint.h — the durable mark that lets an LMDB store commit
 * without syncing and still never be corrupt after a machine crash: the
 * record file and LMDB's meta pages.  Used by the lmdb_*.c files (and the
 * store's tests) only; lmdb_checkpoint.c holds it.
 *
 * LMDB with MDB_NOSYNC writes a commit's pages and then its meta page
 * without syncing either, so after a machine crash the newest meta page may
 * point at pages that never reached the disk.  A checkpoint is a
 * transaction whose pages are all on disk (synced after it committed: the
 * pages the checkpoint before did not use, or the whole data file) and
 * which a reader pins, so that LMDB never reuses its
 * pages, until a later checkpoint is recorded.  "queuefs.checkpoint" keeps
 * a copy of its two meta pages, the boot it was made in and the data file
 * it is about, in two slots written in turn (the newer valid one counts, so
 * a torn write leaves the older).  Opening a store in a later boot whose
 * newest transaction is past a checkpoint puts the checkpoint's meta pages
 * back: the commits after it are lost, as a machine crash may lose them,
 * and the store is exactly as it was at the checkpoint.
 *
 * A record also says where in the redo log (lmdb_log.h) the chain of the
 * commits after it begins; putting a checkpoint back replays that chain.
 * Builds that know no log read the same record and ignore it.
 *
 * A checkpoint record may instead say "trust the disk": every commit since
 * it syncs its data before writing its meta page, so the newest meta page
 * is always whole and nothing is put back.
 *
 * The meta page layout is LMDB's data format version 1 (LMDB 0.9): a
 * 16-byte page header (page number, flags 0x08 at byte 10), then magic
 * 0xBEEFC0DE, version 1, ..., last page at byte 136 and transaction id at
 * byte 144.  lmdb_checkpoint_meta_read() refuses any other layout. */
#ifndef QUEUEFS_LMDB_CHECKPOINT_H
#define QUEUEFS_LMDB_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHECKPOINT_FILE "queuefs.checkpoint"
#define CHECKPOINT_META_LEN 256   /* bytes kept of each meta page (LMDB uses 152) */
#define CHECKPOINT_BOOT_LEN 48

/* One checkpoint record. */
typedef struct Checkpoint {
    uint64_t seq;                    /* orders the records: the newer is larger */
    uint64_t txnid;                  /* the transaction wholly on disk */
    uint64_t dev, ino;               /* the data file it is about */
    bool trust_disk;                 /* true: nothing to put back (see above) */
    char boot[CHECKPOINT_BOOT_LEN];  /* the boot it was written in */
    unsigned char meta[2][CHECKPOINT_META_LEN];  /* meta pages 0 and 1 */
    bool log;                        /* the redo log's chain follows it (lmdb_log.h): */
    uint64_t log_epoch;              /* the chain's epoch */
    uint64_t log_pos;                /* the position of its first entry */
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

/* Puts the store back to its checkpoint when that is needed: when the
 * newer record of "ckpt_fd" is a checkpoint made in another boot than
 * "boot", about the data file of the store directory "location": its meta
 * pages when the data file's newest transaction is past it, then the redo
 * log's chain after it replayed.  A checkpoint from another boot is then replaced
 * by a "trust the disk" record of this boot, so it is acted on once.  Takes
 * flock on "ckpt_fd" meanwhile; no process may have the environment open
 * unless the record is of this boot.  0 (also when there is no data file
 * or no record yet) or an errno. */
int lmdb_checkpoint_recover(int ckpt_fd, const char *location, const char *boot);

/* Fills "out" with this boot's identity: the kernel's boot id, else the
 * boot time in seconds. */
void lmdb_checkpoint_boot_id(char out[CHECKPOINT_BOOT_LEN]);

#endif
