/* mount.h — what the FUSE operations share: the mounted store and the
 * identity its files act as. */
#ifndef QUEUEFS_MOUNT_H
#define QUEUEFS_MOUNT_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "../lang/lang.h"
#include "../lang/view.h"
#include "../store/store.h"

typedef struct Mount {
    Store *store;
    char *store_path;                     /* the STORE argument: a directory made
                                               * absolute, or a server's URI */
    char *store_shown;                    /* ... as it is shown (no password) */
    char *consumer;                       /* -o consumer=NAME, or NULL */
    char instance[LANG_INSTANCE_LEN + 1]; /* minted for this mount */
    uid_t uid;                            /* the mounting user: owns every file */
    gid_t gid;
    time_t mounted_at;   /* every file's times */
    int ready_fd;        /* written once the mount answers; -1 after */
    bool enforce;        /* -o default_permissions: the engine checks
                                                 ctl statements as the kernel checks files */
    struct Nodes *nodes; /* the inodes the kernel knows */
    struct fuse_session *session;
    struct Waiters *waiters; /* opens of wait files that wait */
    struct Claimed *claimed; /* what it just claimed (claimed.h) */
} Mount;

/* Who makes a request, as the engine checks it (lang_session_set_caller):
 * its uid and gid, and up to 64 supplementary groups. */
typedef struct Caller {
    uint32_t uid, gid;
    uint32_t groups[64];
    int ngroups;
} Caller;

/* The most threads serving requests at once.  An open of a wait file that
 * waits holds none of them (waiters.h). */
#define FS_MAX_THREADS 256

/* The operations table of a queuefs mount, whose user data is the Mount
 * (ops.c). */
const struct fuse_lowlevel_ops *fs_operations(void);

#endif
