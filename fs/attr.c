/* attr.c — what the kernel is told of an inode (handlers.h): its attributes
 * (mode, owner, size and times, from its table and its record), the entry
 * a lookup or a listing gives for a name, and how long the kernel may keep
 * it.
 *
 * The kernel caches no attribute and no absent name, and of the names it
 * finds keeps only those that cannot change while their directory stays
 * the same table (entry_timeout), so nothing is ever shown stale; a record
 * that came with a listing is kept a little longer
 * (LISTED_RECORD_TIMEOUT). */
#include <errno.h>
#include <string.h>

#include "claimed.h"
#include "handlers.h"
#include "names.h"

int
fs_table_check(fuse_req_t req, const Inode *in, LangTableInfo *info)
{
    if (strcmp(in->table, "ctl") == 0 || strcmp(in->table, "metrics") == 0)
        return -ENOENT;
    LangSession *s = fs_session(req);
    LangError err = {0};
    LangTableInfo local;
    if (!info)
        info = &local;
    int rc = fs_finish(req, s, lang_view_table(s, in->table, info, &err), &err);
    if (rc)
        return rc;
    bool any_table = in->kind == KIND_TABLE || in->kind == KIND_NEW || in->kind == KIND_RECORD;
    return !any_table && !info->is_queue ? -ENOENT : 0;
}

int
fs_record_stat(fuse_req_t req, const Inode *in, LangRecordStat *stat, LangTableInfo *info)
{
    if (in->key.kind == VAL_NONE)
        return -ENOENT;
    LangSession *s = fs_session(req);
    LangError err = {0};
    Buf json = {0};
    int rc = fs_finish(
        req, s, lang_view_read(s, in->table, &in->key, in->fence, &json, info, stat, &err), &err);
    lang_buf_free(&json);
    return rc;
}

/* Fills "st" for a file of "mode" owned as table "info" says (NULL: the
 * mount's user). */
static void
stat_fill(const Mount *m, struct stat *st, mode_t mode, off_t size, const LangTableInfo *info)
{
    memset(st, 0, sizeof *st);
    st->st_mode = mode;
    st->st_nlink = S_ISDIR(mode) ? 2 : 1;
    st->st_uid = info && info->has_owner ? info->uid : m->uid;
    st->st_gid = info && info->has_owner ? info->gid : m->gid;
    st->st_size = size;
    st->st_blksize = 4096;
    st->st_blocks = (size + 511) / 512;
    st->st_atime = st->st_mtime = st->st_ctime = m->mounted_at;
}

/* A struct timespec of "ns" since the epoch. */
static struct timespec
timespec_of(int64_t ns)
{
    return (struct timespec){.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

/* A table's files take their permission bits from its directory's: read
 * (r) to read records and figures, write (w) to claim, create, release and
 * delete.  Opening claim or wait for reading claims, so they are readable
 * by whoever may write the queue. */
static mode_t
file_mode(InodeKind kind, mode_t dir)
{
    switch (kind) {
    case KIND_TABLE:
    case KIND_RELEASED:
    case KIND_HELD:
    case KIND_DEAD:
    case KIND_DONE:
    case KIND_BLOCKED: return S_IFDIR | dir;
    case KIND_CLAIM:
    case KIND_WAIT: return S_IFREG | ((dir & 0222) << 1);
    case KIND_STATS: return S_IFREG | (dir & 0444);
    case KIND_NEW: return S_IFREG | (dir & 0222);
    case KIND_RECORD: return S_IFREG | (dir & 0666);
    default: return S_IFREG | (dir & 0444); /* held/, dead/, done/ and blocked/ entries */
    }
}

/* The attributes of a record's file of kind "kind" that shows "rs", in a
 * table whose directory shows "info": mtime its content last written (for
 * a held/ID~N name, the instant of that claim), ctime its hold last
 * changed, atime its mtime. */
static void
stat_record(const Mount *m, struct stat *st, InodeKind kind, const LangTableInfo *info,
            const LangRecordStat *rs)
{
    stat_fill(m, st, file_mode(kind, info->mode), (off_t)rs->size, info);
    bool held_entry = kind == KIND_HELD_ENTRY;
    st->st_mtim = timespec_of(held_entry && rs->claimed ? rs->claimed : rs->written);
    st->st_ctim = timespec_of(rs->changed);
    st->st_atim = st->st_mtim;
}

int
fs_inode_stat(fuse_req_t req, const Inode *in, struct stat *st, uint32_t *generation)
{
    if (generation)
        *generation = 0;
    Mount *m = fs_mount(req);
    LangTableInfo info;
    LangRecordStat rs;
    Value when;
    int rc;
    switch (in->kind) {
    case KIND_ROOT:
        /* With permissions enforced, anyone may define a table, as in /tmp:
         * it is theirs, and only they may remove it. */
        stat_fill(m, st, S_IFDIR | (m->enforce ? 01777 : 0755), 0, NULL);
        return 0;
    case KIND_CTL: stat_fill(m, st, S_IFREG | 0666, 0, NULL); return 0;
    case KIND_METRICS: stat_fill(m, st, S_IFREG | 0444, 0, NULL); return 0;
    case KIND_RECORD:
    case KIND_HELD_ENTRY:
    case KIND_DEAD_ENTRY:
    case KIND_DONE_ENTRY:
    case KIND_BLOCKED_ENTRY:
        if (in->kind == KIND_RECORD && fs_pending_has(in)) {
            if ((rc = fs_table_check(req, in, &info)))
                return rc;
            break;
        }
        if (in->kind == KIND_RECORD &&
            fs_claimed_take(m->claimed, in->table, &in->key, fs_caller(req).uid, &rs, &info)) {
            stat_record(m, st, in->kind, &info, &rs);
            return 0;
        }
        if ((rc = fs_record_stat(req, in, &rs, &info)))
            return rc;
        stat_record(m, st, in->kind, &info, &rs);
        return 0;
    case KIND_RELEASED_ENTRY:
        /* A file while a reason is written to it (until its close); else
         * never a file, but a name whose @WHEN is neither a duration nor a
         * datetime is refused (EINVAL) when it is looked up, so mv reports
         * the bad name itself rather than failing the rename. */
        if (fs_pending_has(in)) {
            if ((rc = fs_table_check(req, in, &info)))
                return rc;
            break;
        }
        size_t id_len;
        rc = fs_name_when(in->name, &id_len, &when);
        lang_value_free(&when);
        return rc ? rc : -ENOENT;
    case KIND_NONE: return -ENOENT;
    case KIND_TOOLONG: return -ENAMETOOLONG;
    default:
        if ((rc = fs_table_check(req, in, &info)))
            return rc;
        if (generation && in->kind == KIND_TABLE)
            *generation = info.is_queue ? 2 : 1;
    }
    stat_fill(m, st, file_mode(in->kind, info.mode), 0, &info);
    return 0;
}

/* How long the kernel may keep a name it found, in seconds.  Absent names
 * and records are asked for on every use: another mount or process may
 * add or delete one at any time.  The names fixed by their directory (ctl
 * and metrics; claim, new, … of a table) are kept for a day: they exist
 * exactly while their directory is the same kind of table, and a table
 * that changes kind gets a new inode (the generation fs_inode_stat gives
 * fs_nodes_lookup), which drops what was kept under the old one.  A table
 * is kept for a second: once it is dropped, a kept name still leads
 * nowhere stale — its attributes, its listing and every file in it are
 * asked for and found gone, and mkdir of it is checked anew (the kernel
 * looks a name up again before creating it) — but the kernel forgets it
 * soon. */
static double
entry_timeout(InodeKind kind)
{
    switch (kind) {
    case KIND_TABLE: return 1;
    case KIND_CTL:
    case KIND_METRICS:
    case KIND_CLAIM:
    case KIND_WAIT:
    case KIND_NEW:
    case KIND_STATS:
    case KIND_RELEASED:
    case KIND_HELD:
    case KIND_DEAD:
    case KIND_DONE:
    case KIND_BLOCKED: return 86400;
    default: return 0;
    }
}

/* How long the kernel may keep a record's name and attributes that came
 * with a listing, in seconds: long enough for the stat of each name that
 * follows the listing (ls -l, find -newer, rsync) to need no request, and
 * short enough that nothing listed stays stale past it.  A LOOKUP of a
 * record keeps nothing (entry_timeout). */
#define LISTED_RECORD_TIMEOUT 1.0

int
fs_entry_find(fuse_req_t req, fuse_ino_t parent, const Inode *in, struct fuse_entry_param *e)
{
    uint32_t generation;
    memset(e, 0, sizeof *e);
    int rc = fs_inode_stat(req, in, &e->attr, &generation);
    if (rc)
        return rc;
    e->ino = fs_nodes_lookup(fs_mount(req)->nodes, parent, in, generation);
    if (!e->ino)
        return -ENOENT; /* its directory went while we looked */
    e->attr.st_ino = e->ino;
    e->entry_timeout = entry_timeout(in->kind);
    return 0;
}

void
fs_entry_listed(fuse_req_t req, fuse_ino_t parent, const Inode *in, const LangTableInfo *info,
                const LangRecordStat *rs, struct fuse_entry_param *e)
{
    Mount *m = fs_mount(req);
    memset(e, 0, sizeof *e);
    stat_record(m, &e->attr, KIND_RECORD, info, rs);
    e->ino = fs_nodes_lookup(m->nodes, parent, in, 0);
    e->attr.st_ino = e->ino;
    e->entry_timeout = e->attr_timeout = LISTED_RECORD_TIMEOUT;
}

void
fs_entry_reply(fuse_req_t req, int rc, const struct fuse_entry_param *e)
{
    if (rc)
        fuse_reply_err(req, -rc);
    else if (fuse_reply_entry(req, e) != 0) /* the caller gave up: no lookup counted */
        fs_nodes_forget(fs_mount(req)->nodes, e->ino, 1);
}

void
fs_removed_reply(fuse_req_t req, int rc, fuse_ino_t parent, const char *name)
{
    if (!rc)
        fs_nodes_detach(fs_mount(req)->nodes, parent, name);
    fuse_reply_err(req, -rc);
}
