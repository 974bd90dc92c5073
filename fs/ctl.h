/* ctl.h — sessions on the ctl file (SPEC section 3).
 *
 * One open file description of MOUNT/ctl is one session: it starts as the
 * mount's identity (consumer and instance), keeps USE CONSUMER and BEGIN …
 * COMMIT between writes, and is cancelled when closed.  A write runs the
 * complete statements it carries; reading then returns one line per
 * statement that ran, and end of file until the next write.  A result is
 * produced as it is read (lang_session_start): a streamed SELECT a chunk
 * at a time, a CLAIM … WAIT that cannot claim at once in the read, which
 * blocks until it ends; statements after either run as the reader reaches
 * them.  A write while that is under way is SessionBusy (EBUSY). */
#ifndef QUEUEFS_CTL_H
#define QUEUEFS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../store/store.h"

/* The mount's max_write.  The kernel cuts a longer write() into pieces of
 * about this size (less the misalignment of the writer's buffer); a write
 * of more than FS_CTL_MAX_WRITE - 4096 bytes is TooLarge unless each piece
 * ends a statement. */
#define FS_CTL_MAX_WRITE ((size_t)1 << 20)

typedef struct CtlFile CtlFile;

/* A session acting as "consumer" (may be NULL) and "instance".  A
 * CLAIM … WAIT it runs polls "interrupted" (may be NULL) with the "ctx"
 * of the write or read it runs in, and ends with Interrupted (EINTR),
 * claiming nothing, when it answers true.  A read that would be the first
 * to give out the answer of a claim fails with EINTR instead when
 * "abandoned" (may be NULL) says its caller will never see it (it is
 * being killed).  Claims whose answers nobody began to read are given
 * back when the session closes (see lang_view_unclaim). */
CtlFile *fs_ctl_open(Store *store, const char *consumer, const char *instance,
                     bool (*interrupted)(void *ctx), bool (*abandoned)(void *ctx));
/* Runs the statements in "data" as the caller "uid"/"gid"/"groups" (with
 * "enforce", checked against each table's owner and mode): returns "size"
 * when all ran, or -errno of the first error (its line is then readable).
 * A piece of a longer write() that fills max_write without ending a
 * statement is TooLarge (EFBIG).  "ctx" is what "interrupted" is asked
 * with meanwhile (the caller's request). */
ssize_t fs_ctl_write(CtlFile *c, const char *data, size_t size, uint32_t uid, uint32_t gid,
                     const uint32_t *groups, int ngroups, bool enforce, void *ctx);
/* Copies up to "size" bytes of unread result lines to "buf"; 0 at the
 * end.  When everything produced has been read and the session keeps work
 * (a streamed result, a waiting claim and the statements after it), goes
 * on with it first — blocking while the claim waits, unless "nonblock"
 * (then -EAGAIN).  -EINTR when the caller's interruption ended the claim
 * (its Interrupted line is read next); -EAGAIN too when too many reads
 * block already.  "ctx" is what "interrupted" is asked with meanwhile
 * (the caller's request). */
ssize_t fs_ctl_read(CtlFile *c, char *buf, size_t size, bool nonblock, void *ctx);
/* True when the session holds claims whose answers nobody began to read:
 * its close gives them back. */
bool fs_ctl_claims_unread(const CtlFile *c);
/* Ends the session, cancelling a transaction it left open and the work it
 * kept (a waiting claim claims nothing, statements kept do not run), and
 * giving back the claims whose answers nobody began to read. */
void fs_ctl_close(CtlFile *c);

#endif
