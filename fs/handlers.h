/* handlers.h — what the pieces of the file view (SPEC section 2) share: who
 * makes a request and the session acting for them (caller.c), what the
 * kernel is told of an inode (attr.c), records being created (files.c),
 * and the handlers of open files (files.c) and directories (dirs.c) that
 * the operations table (ops.c) names.  Not a public interface.
 *
 * A handler is given the request and the inode(s) it is about; it learns
 * what the inode is from the inode table (nodes.h), does one lang_view_*
 * call's worth of work as the caller, and replies — exactly once, unless
 * it filed the request with the mount's waiters.  Errors are -errno. */
#ifndef QUEUEFS_FS_HANDLERS_H
#define QUEUEFS_FS_HANDLERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mount.h"
#include "nodes.h"

/* ---- who asks (caller.c) ---- */

/* The mount serving "req". */
Mount *fs_mount(fuse_req_t req);
/* Who makes "req": its uid and gid, and (with default_permissions only:
 * the engine checks nothing otherwise) its supplementary groups. */
Caller fs_caller(fuse_req_t req);
/* A new session acting as the mount "m" for "who" (lang_session_free
 * it): the owner of what it defines and, with default_permissions, whose
 * access is checked; held to the mount's table name rule. */
LangSession *fs_session_as(Mount *m, const Caller *who);
/* fs_session_as for the caller of "req". */
LangSession *fs_session(fuse_req_t req);
/* Frees "s" and gives "rc", the outcome of a lang call made for "req", as
 * 0 or -errno; a failing or full store is logged with what "err" (that
 * call's) says of it: the server's message, the system call and errno. */
int fs_finish(fuse_req_t req, LangSession *s, LangErrorCode rc, const LangError *err);
/* True when the caller of request "req" gave up (a signal) or the mount
 * is ending: the interrupt hook of what blocks for a request. */
bool fs_request_interrupted(void *req);
/* True when what a reply to "req" gives its caller would never be seen:
 * the caller gave up (a signal), or a signal that will end it is pending
 * (its INTERRUPT may reach the daemon only after the reply). */
bool fs_request_abandoned(void *req);
/* What inode "ino" of the mount serving "req" is (fs_inode_clear it);
 * -ENOENT when it names nothing now. */
int fs_inode_get(fuse_req_t req, fuse_ino_t ino, Inode *out);
/* What "name" in directory "parent" is, as fs_nodes_child says. */
int fs_inode_child(fuse_req_t req, fuse_ino_t parent, const char *name, Inode *out);

/* ---- what the kernel is told of an inode (attr.c) ---- */

/* 0 when the table of "in" exists (and, for what only queues have, is a
 * queue), with "info" (may be NULL) filled; else -ENOENT. */
int fs_table_check(fuse_req_t req, const Inode *in, LangTableInfo *info);
/* What the record file "in" shows (its size and times) into "stat" (may
 * be NULL), and its table's owner and mode into "info" (may be NULL);
 * -errno when it is absent (or its view's fence fails). */
int fs_record_stat(fuse_req_t req, const Inode *in, LangRecordStat *stat, LangTableInfo *info);
/* The attributes of "in" into "st", and into "*generation" (may be NULL)
 * what tells its versions apart: for a table, whether it is a queue. */
int fs_inode_stat(fuse_req_t req, const Inode *in, struct stat *st, uint32_t *generation);
/* Finds "in", named in "parent", for the kernel: its attributes, its
 * number counting one more lookup, and how long the name may be kept,
 * into "e". */
int fs_entry_find(fuse_req_t req, fuse_ino_t parent, const Inode *in, struct fuse_entry_param *e);
/* The entry of record "in" in directory "parent" of a table whose
 * directory shows "info", as a listing read it ("rs"), into "e": its
 * number counts one more lookup, and its name and attributes may be kept
 * for as long as a listing's. */
void fs_entry_listed(fuse_req_t req, fuse_ino_t parent, const Inode *in, const LangTableInfo *info,
                     const LangRecordStat *rs, struct fuse_entry_param *e);
/* Replies with "e", or with error "rc" (-errno). */
void fs_entry_reply(fuse_req_t req, int rc, const struct fuse_entry_param *e);
/* Replies to a removal of "name" from "parent" that ended "rc": a name
 * removed no longer has its inode. */
void fs_removed_reply(fuse_req_t req, int rc, fuse_ino_t parent, const char *name);

/* ---- records being created (files.c) ----
 * Between create() and the flush that stores it, a new record's name must
 * exist for the kernel. */

/* True while record "in" is being created. */
bool fs_pending_has(const Inode *in);

/* ---- open files (files.c) ---- */

void fs_file_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_file_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                    struct fuse_file_info *fi);
void fs_file_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                  struct fuse_file_info *fi);
void fs_file_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi);
void fs_file_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_file_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* A truncate of "in" to "size": of the open file "fi" when given (a record
 * being written is cut), else of its name (0 where an open with O_TRUNC
 * would be allowed, and changes nothing).  0 or -errno; replies nothing. */
int fs_file_truncate(fuse_req_t req, const Inode *in, struct fuse_file_info *fi, off_t size);

/* ---- directories (dirs.c) ---- */

void fs_dir_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_dir_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_dir_readplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi);
void fs_dir_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_dir_make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_dir_remove(fuse_req_t req, fuse_ino_t parent, const char *name);

#endif
