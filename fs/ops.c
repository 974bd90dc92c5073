/* ops.c — the file view (SPEC section 2): the FUSE low-level operations
 * table, and the handlers of names and attributes (lookup, forget,
 * getattr, setattr, unlink, rename, statfs); open files are files.c's,
 * directories dirs.c's.
 *
 *   /ctl                  statements in, results out (ctl.c)
 *   /metrics              every queue's figures, Prometheus text
 *   /T/                   one directory per table
 *   /T/ID                 a record: read never claims; write at close;
 *                         touch extends its hold
 *   /T/claim              open() claims the head; reads serve that claim
 *   /T/wait               the same, blocking until something is claimable
 *   /T/new                each complete line written is one new record
 *   /T/released/          rename target: moving ID here releases it;
 *                         writing ID there releases it with a reason
 *   /T/held/ID~N          the records held now, fenced by their hold's number
 *   /T/dead/ID            the records at the ATTEMPTS ceiling
 *   /T/stats              the queue's figures, one JSON line
 *
 * Each handler is given the request and the inode(s) it is about, learns
 * what they are from the inode table (nodes.h), maps that to a
 * lang_view_* call as the caller, and replies with its error as an
 * errno. */
#include <errno.h>
#include <linux/fs.h>
#include <malloc.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ctl.h"
#include "claimed.h"
#include "handlers.h"
#include "names.h"

/* Called once the kernel has answered FUSE_INIT: the mount now answers
 * requests, which is when the command that mounted it may return. */
static void
op_init(void *userdata, struct fuse_conn_info *conn)
{
    Mount *m = userdata;
    conn->max_write = FS_CTL_MAX_WRITE;
    /* READDIRPLUS where the kernel sees names being looked up after a
     * listing (ls -l), READDIR for a plain ls. */
    if (conn->capable & FUSE_CAP_READDIRPLUS)
        conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
    if (m->ready_fd >= 0) {
        ssize_t ignored = write(m->ready_fd, "", 1);
        (void)ignored;
        close(m->ready_fd);
        m->ready_fd = -1;
    }
}

static void
op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    Inode in;
    struct fuse_entry_param e;
    int rc = fs_inode_child(req, parent, name, &in);
    if (!rc) {
        rc = fs_entry_find(req, parent, &in, &e);
        fs_inode_clear(&in);
    }
    fs_entry_reply(req, rc, &e);
}

/* The kernel forgets "count" lookups of each of "forgets"; after it forgot
 * many inodes (a large listing it let go of), the memory of their nodes
 * goes back to the system, so the daemon does not stay at its peak. */
static void
forget_many(fuse_req_t req, size_t count, const struct fuse_forget_data *forgets)
{
    Mount *m = fs_mount(req);
    for (size_t i = 0; i < count; i++)
        fs_nodes_forget(m->nodes, forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
    if (fs_nodes_shrunk(m->nodes))
        malloc_trim(0);
}

static void
op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    struct fuse_forget_data one = {.ino = ino, .nlookup = nlookup};
    forget_many(req, 1, &one);
}

static void
op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    forget_many(req, count, forgets);
}

/* Replies with the attributes of inode "ino" ("in"), or error "rc". */
static void
reply_attr(fuse_req_t req, int rc, fuse_ino_t ino, const Inode *in)
{
    struct stat st;
    if (!rc)
        rc = fs_inode_stat(req, in, &st, NULL);
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    st.st_ino = ino;
    fuse_reply_attr(req, &st, 0);
}

static void
op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    Inode in;
    int rc = fs_inode_get(req, ino, &in);
    reply_attr(req, rc, ino, &in);
    if (!rc)
        fs_inode_clear(&in);
}

/* chmod and chown of a table directory change the table's owner and mode
 * in the store ("mode", "uid" or "gid" of -1 stays); on a file (as cp -p
 * and mv make) they are accepted and change nothing: a file's mode
 * follows its directory's. */
static int
chattr(fuse_req_t req, const Inode *in, int64_t mode, int64_t uid, int64_t gid)
{
    if (in->kind != KIND_TABLE) {
        struct stat st;
        return fs_inode_stat(req, in, &st, NULL);
    }
    LangSession *s = fs_session(req);
    LangError err = {0};
    return fs_finish(req, s, lang_view_chattr(s, in->table, mode, uid, gid, &err), &err);
}

/* touch of a queue's record extends its hold (TOUCH); on every other file
 * it is accepted and no time is kept. */
static int
touch(fuse_req_t req, const Inode *in)
{
    struct stat st;
    int rc = fs_inode_stat(req, in, &st, NULL);
    if (rc || (in->kind != KIND_RECORD && in->kind != KIND_HELD_ENTRY) || fs_pending_has(in))
        return rc;
    LangTableInfo info;
    LangSession *s = fs_session(req);
    LangError err = {0};
    if ((rc = fs_finish(req, s, lang_view_table(s, in->table, &info, &err), &err)) ||
        !info.is_queue)
        return rc;
    if (in->key.kind == VAL_NONE)
        return -ENOENT;
    s = fs_session(req);
    return fs_finish(req, s, lang_view_touch(s, in->table, &in->key, in->fence, &err), &err);
}

/* The mount forgets what a claim told it of the record "in" names (of
 * any of its names): the request is about to change it, or just did (a
 * claim noted meanwhile, by another thread, may be of what it changed). */
static void
claimed_forget(fuse_req_t req, const Inode *in)
{
    if (in->key.kind != VAL_NONE)
        fs_claimed_forget_record(fs_mount(req)->claimed, in->table, &in->key);
}

/* chmod and chown (chattr), truncate, touch; then the attributes. */
static void
op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
    Inode in;
    int rc = fs_inode_get(req, ino, &in);
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    claimed_forget(req, &in);
    if (to_set & FUSE_SET_ATTR_MODE)
        rc = chattr(req, &in, attr->st_mode & 07777, -1, -1);
    if (!rc && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
        rc = chattr(req, &in, -1, to_set & FUSE_SET_ATTR_UID ? (int64_t)attr->st_uid : -1,
                    to_set & FUSE_SET_ATTR_GID ? (int64_t)attr->st_gid : -1);
    if (!rc && (to_set & FUSE_SET_ATTR_SIZE))
        rc = fs_file_truncate(req, &in, fi, attr->st_size);
    if (!rc && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
        rc = touch(req, &in);
    claimed_forget(req, &in);
    reply_attr(req, rc, ino, &in);
    fs_inode_clear(&in);
}

/* rm of a record deletes it (finishes it); of a held/, dead/, done/ or
 * blocked/ name, when its fence holds (a done record is removed). */
static int
unlink_inode(fuse_req_t req, const Inode *in)
{
    InodeKind k = in->kind;
    if (k != KIND_RECORD && k != KIND_HELD_ENTRY && k != KIND_DEAD_ENTRY && k != KIND_DONE_ENTRY &&
        k != KIND_BLOCKED_ENTRY)
        return k == KIND_NONE || k == KIND_RELEASED_ENTRY ? -ENOENT : -EPERM;
    if (in->key.kind == VAL_NONE)
        return -ENOENT;
    LangSession *s = fs_session(req);
    LangError err = {0};
    return fs_finish(req, s, lang_view_delete(s, in->table, &in->key, in->fence, &err), &err);
}

static void
op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    Inode in;
    int rc = fs_inode_child(req, parent, name, &in);
    if (!rc) {
        claimed_forget(req, &in);
        rc = unlink_inode(req, &in);
        claimed_forget(req, &in);
        fs_inode_clear(&in);
    }
    fs_removed_reply(req, rc, parent, name);
}

/* The length of the part of a record's name "in" that names the identity
 * (without a held/ entry's ~N). */
static size_t
id_len(const Inode *in)
{
    size_t len = strlen(in->name);
    if (in->kind == KIND_HELD_ENTRY)
        fs_name_fence(in->name, &len);
    return len;
}

/* "mv T/ID T/released/ID[@WHEN]" (or from T/held/ID~N) releases the
 * record, not before WHEN when given; from T/dead/ID it retries it (its
 * attempts back to 0, while it is still dead).  The target names the
 * record as the source does (mv keeps the name: held/7~3 → released/7~3),
 * or by its identity alone (released/7); anything else is EINVAL. */
static int
release(fuse_req_t req, const Inode *from, const Inode *to)
{
    if (from->key.kind == VAL_NONE)
        return -ENOENT;
    Value when;
    size_t len;
    int rc = fs_name_when(to->name, &len, &when);
    if (!rc && ((len != id_len(from) && len != strlen(from->name)) ||
                strncmp(to->name, from->name, len) != 0))
        rc = -EINVAL;
    if (!rc) {
        LangSession *s = fs_session(req);
        LangError err = {0};
        rc = fs_finish(
            req, s,
            from->kind == KIND_DEAD_ENTRY
                ? lang_view_retry(s, from->table, &from->key, &when, from->fence, &err)
                : lang_view_release(s, from->table, &from->key, &when, from->fence, NULL, &err),
            &err);
    }
    lang_value_free(&when);
    return rc;
}

/* "mv jobs work" renames the table (SPEC section 2).  A name that is taken
 * (a table, ctl, metrics) is EEXIST, and a name inside a table, where "mv
 * jobs work" puts jobs when work exists, EPERM: a table holds no tables.
 * Nothing changes then. */
static int
rename_table(fuse_req_t req, const Inode *from, const Inode *to)
{
    if (to->kind == KIND_TOOLONG)
        return -ENAMETOOLONG;
    if (to->kind == KIND_CTL || to->kind == KIND_METRICS)
        return -EEXIST;
    if (to->kind != KIND_TABLE)
        return -EPERM;
    if (strcmp(from->table, to->table) == 0)
        return 0;
    LangSession *s = fs_session(req);
    LangError err = {0};
    return fs_finish(req, s, lang_view_rename(s, from->table, to->table, &err), &err);
}

/* What "mv from to" does: a release, a table's rename, or EXDEV. */
static int
rename_inodes(fuse_req_t req, const Inode *from, const Inode *to, unsigned int flags)
{
    if (flags & ~(unsigned)RENAME_NOREPLACE)
        return -EINVAL;
    if (to->kind == KIND_RELEASED_ENTRY || to->kind == KIND_RELEASED) {
        /* A move into released/ is a release or an error, never EXDEV. */
        if ((from->kind != KIND_RECORD && from->kind != KIND_HELD_ENTRY &&
             from->kind != KIND_DEAD_ENTRY) ||
            strcmp(from->table, to->table) != 0)
            return -EINVAL;
        return to->kind == KIND_RELEASED ? -EISDIR : release(req, from, to);
    }
    return from->kind == KIND_TABLE ? rename_table(req, from, to) : -EXDEV;
}

/* A release moves a record's name into released/ for the kernel; the
 * record keeps its name, which gets a new inode at its next lookup.  A
 * table's directory moves with its table: its inode (and what the kernel
 * keeps under it) names the new name from now on. */
static void
op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
          const char *new_name, unsigned int flags)
{
    Inode from, to;
    int rc = fs_inode_child(req, parent, name, &from);
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    if (!(rc = fs_inode_child(req, new_parent, new_name, &to))) {
        claimed_forget(req, &from);
        claimed_forget(req, &to);
        rc = rename_inodes(req, &from, &to, flags);
        claimed_forget(req, &from);
        claimed_forget(req, &to);
        fs_inode_clear(&to);
    }
    if (from.kind == KIND_TABLE) {
        if (!rc)
            fs_nodes_rename(fs_mount(req)->nodes, parent, name, new_parent, new_name);
        fuse_reply_err(req, -rc);
    } else {
        fs_removed_reply(req, rc, parent, name);
    }
    fs_inode_clear(&from);
}

static void
op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    struct statvfs sv;
    const Mount *m = fs_mount(req);
    /* A server's store: the room is the server's to know; df shows none. */
    if (store_location_is_server(m->store_path)) {
        memset(&sv, 0, sizeof sv);
        sv.f_bsize = sv.f_frsize = 4096;
    } else if (statvfs(m->store_path, &sv) < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    sv.f_namemax = 255;
    fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops operations = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .mkdir = fs_dir_make,
    .unlink = op_unlink,
    .rmdir = fs_dir_remove,
    .rename = op_rename,
    .open = fs_file_open,
    .read = fs_file_read,
    .write = fs_file_write,
    .flush = fs_file_flush,
    .release = fs_file_release,
    .opendir = fs_dir_open,
    .readdir = fs_dir_read,
    .readdirplus = fs_dir_readplus,
    .releasedir = fs_dir_release,
    .statfs = op_statfs,
    .create = fs_file_create,
};

const struct fuse_lowlevel_ops *
fs_operations(void)
{
    return &operations;
}
