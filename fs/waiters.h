/* waiters.h — opens of T/wait that wait, holding no thread.
 *
 * An open of a wait file that finds nothing claimable is filed here
 * instead of being answered: the request thread returns at once.  One
 * thread per mount sleeps until the store notifies a commit (by any mount
 * or process on the store: store_wait_change) or until the first instant a
 * held or delayed record of a waited queue becomes claimable, then serves
 * each queue's waiters in turn, taking their uids round-robin so that one
 * uid's many waiters cannot starve another's.  Idle, it costs no CPU; the
 * number of waiters is bounded by memory (and FS_WAITERS_PER_UID).
 *
 * A waiter ends in exactly one of these ways: "serve" answers it (the
 * claimed record, or the claim's error); the caller interrupts it (EINTR,
 * nothing claimed); fs_waiters_stop, or the mount's detaching
 * (fs_waiters_watch), answers it (EINTR, ENODEV).
 */
#ifndef QUEUEFS_WAITERS_H
#define QUEUEFS_WAITERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mount.h"

/* The most opens of one queue's wait file one uid may have waiting at
 * once, far above any real use; the next is EAGAIN. */
#define FS_WAITERS_PER_UID 100000

/* One filed open: the request, a copy of its file info, the queue and who
 * asks. */
typedef struct WaitCall {
    fuse_req_t req;
    struct fuse_file_info fi;
    const char *table;
    Caller who;
} WaitCall;

/* Serves one waiter on the wait thread: claims for "c" and replies to its
 * request (the open, or the claim's error; EINTR, giving the claim back,
 * when "*interrupted" is set once it claimed).  False when nothing was
 * claimable: nothing was replied and the waiter waits on. */
typedef bool (*WaitServe)(Mount *m, const WaitCall *c, atomic_bool *interrupted);

/* The WaitServe of a queuefs mount (files.c). */
WaitServe fs_wait_serve(void);

typedef struct Waiters Waiters;

/* A registry for mount "m", whose waiters "serve" answers. */
Waiters *fs_waiters_new(Mount *m, WaitServe serve);
/* Starts the wait thread: 0 or an errno. */
int fs_waiters_start(Waiters *ws);
/* Files "c" (copied): it is answered later, from another thread.
 * "seen" is store_changes() as read before the look that found nothing
 * claimable, "next_wake" the instant that look gave (see
 * lang_view_claimable).  Registers the request's interrupt callback.
 * 0 when filed, or answered already (EINTR: interrupted, or the mount is
 * ending); -EAGAIN (FS_WAITERS_PER_UID) or -ENODEV (the mount was detached):
 * nothing is filed and the caller replies. */
int fs_waiters_file(Waiters *ws, const WaitCall *c, uint64_t seen, int64_t next_wake);
/* Watches the mount table, from a thread of its own, for the mount at
 * "mountpoint" (absolute) being detached (fusermount3 -u -z): then
 * every waiter is answered ENODEV, now and from now on (nobody can open
 * the mount again), which lets the kernel end the connection.
 * 0 or an errno. */
int fs_waiters_watch(Waiters *ws, const char *mountpoint);
/* Ends the wait thread and answers every waiter EINTR: before the
 * session ends, so no open is left waiting. */
void fs_waiters_stop(Waiters *ws);
void fs_waiters_free(Waiters *ws);

#endif
