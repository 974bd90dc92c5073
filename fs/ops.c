/* ops.c — the file view (SPEC section 2): the FUSE low-level operations.
 *
 *   /ctl                  statements in, results out (ctl.c)
 *   /metrics              every queue's figures, Prometheus text
 *   /T/                   one directory per table
 *   /T/ID                 a record: read never claims; write at close;
 *                         touch extends its hold
 *   /T/claim              open() claims the head; reads serve that claim
 *   /T/wait               the same, blocking until something is claimable
 *   /T/new                each complete line written is one new record
 *   /T/released/          rename target: moving ID here releases it
 *   /T/held/ID~N          the records held now, fenced by their hold's number
 *   /T/dead/ID            the records at the ATTEMPTS ceiling
 *   /T/stats              the queue's figures, one JSON line
 *
 * Handlers are thin: each finds the path of the inode it is given
 * (nodes.c), maps the path to a lang_view_* call and its error to an
 * errno.  Every file is direct_io (sizes are not known in advance); the
 * kernel caches no attribute and no absent name, and of the names it
 * finds keeps only those that cannot change while their directory stays
 * the same table (entry_timeout), so nothing is ever shown stale. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "content.h"
#include "ctl.h"
#include "log.h"
#include "mount.h"
#include "names.h"
#include "nodes.h"
#include "waiters.h"

/* The request this thread serves: who asks, and whether they gave up. */
static __thread fuse_req_t current_request;

static Mount *
mount_of(void)
{
    return fuse_req_userdata(current_request);
}

/* The caller's supplementary groups (with default_permissions only: the
 * engine checks nothing otherwise) into "groups"; how many. */
static int
caller_groups(gid_t groups[64])
{
    int n = mount_of()->enforce ? fuse_req_getgroups(current_request, 64, groups) : 0;
    return n < 0 || n > 64 ? 0 : n;
}

/* Tells "s" who makes the current request: the owner of what it defines,
 * and, with default_permissions, whose access is checked. */
static void
set_caller(LangSession *s)
{
    const struct fuse_ctx *cx = fuse_req_ctx(current_request);
    gid_t groups[64];
    uint32_t ids[64];
    int n = caller_groups(groups);
    for (int i = 0; i < n; i++)
        ids[i] = groups[i];
    lang_session_set_caller(s, cx->uid, cx->gid, ids, n, mount_of()->enforce);
}

/* A session acting as the mount, for one operation of the caller. */
static LangSession *
session(void)
{
    Mount *m = mount_of();
    LangSession *s = lang_session_new(m->store, m->consumer, m->instance);
    set_caller(s);
    lang_session_set_name_rule(s, fs_table_name_rule, NULL);
    return s;
}

/* -errno of a failed lang call, freeing the session. */
static int
finish(LangSession *s, LangErrorCode rc)
{
    lang_session_free(s);
    if (rc == LANG_STORE_ERROR || rc == LANG_STORE_FULL)
        FS_LOG(LOG_ERR, "a file operation of uid %u met %s (%s)",
               (unsigned)fuse_req_ctx(current_request)->uid, lang_error_name(rc),
               rc == LANG_STORE_FULL ? "the store cannot grow: the disk is full"
                                     : "the disk failed");
    return rc ? -lang_error_errno(rc) : 0;
}

/* ---- paths ---- */

typedef enum PathKind {
    P_ROOT,
    P_CTL,
    P_METRICS,
    P_TABLE,
    P_CLAIM,
    P_WAIT,
    P_NEW,
    P_STATS,
    P_RELEASED,
    P_HELD,
    P_DEAD,
    P_RELEASED_ENTRY,
    P_HELD_ENTRY,
    P_DEAD_ENTRY,
    P_RECORD,
    P_NONE,           /* names nothing that can exist */
    P_TOOLONG,        /* a component longer than any table or identity name */
} PathKind;

typedef struct Path {
    PathKind kind;
    char     table[256];  /* NAME_MAX: the language refuses longer table names */
    char     name[1280];  /* the last component for records and view entries: an
                           * identity's name is at most 3 * STORE_MAX_KEY bytes,
                           * plus "@" and a datetime in released/ */
} Path;

/* The reserved names of a table directory and what they are; the first
 * "new" serves every table, the rest only queues. */
static const struct {
    const char *name;
    PathKind    kind;
    bool        is_dir;
} reserved_entries[] = {
    {"new", P_NEW, false},       {"claim", P_CLAIM, false}, {"wait", P_WAIT, false},
    {"stats", P_STATS, false},   {"released", P_RELEASED, true},
    {"held", P_HELD, true},      {"dead", P_DEAD, true},
};
#define NRESERVED (sizeof reserved_entries / sizeof reserved_entries[0])

/* Splits "path" into what it names; the table is not looked up. */
static Path
path_parse(const char *path)
{
    Path p = {P_NONE, "", ""};
    const char *parts[4];
    size_t lens[4], n = 0;
    for (const char *c = path; *c;) {
        while (*c == '/')
            c++;
        if (!*c)
            break;
        const char *end = strchrnul(c, '/');
        if (n == 4)
            return p;
        if ((size_t)(end - c) >= (n == 0 ? sizeof p.table : sizeof p.name)) {
            p.kind = P_TOOLONG;
            return p;
        }
        parts[n] = c;
        lens[n++] = (size_t)(end - c);
        c = end;
    }
    if (n == 0) {
        p.kind = P_ROOT;
        return p;
    }
    memcpy(p.table, parts[0], lens[0]);
    p.table[lens[0]] = '\0';
    if (n == 1) {
        p.kind = strcmp(p.table, "ctl") == 0       ? P_CTL
                 : strcmp(p.table, "metrics") == 0 ? P_METRICS
                                                   : P_TABLE;
        return p;
    }
    memcpy(p.name, parts[1], lens[1]);
    p.name[lens[1]] = '\0';
    PathKind dir = P_NONE;
    for (size_t i = 0; i < NRESERVED; i++)
        if (strcmp(p.name, reserved_entries[i].name) == 0)
            dir = reserved_entries[i].kind;
    if (n == 2) {
        p.kind = dir != P_NONE ? dir : name_is_reserved(p.name) ? P_NONE : P_RECORD;
        return p;
    }
    if (n == 3 && (dir == P_RELEASED || dir == P_HELD || dir == P_DEAD)) {
        memcpy(p.name, parts[2], lens[2]);
        p.name[lens[2]] = '\0';
        p.kind = dir == P_RELEASED ? P_RELEASED_ENTRY
                 : dir == P_HELD   ? P_HELD_ENTRY
                                   : P_DEAD_ENTRY;
    }
    return p;
}

/* How long the kernel may keep a name it found, in seconds.  Absent names
 * and records are asked for on every use: another mount or process may
 * add or delete one at any time.  The names fixed by their directory (ctl
 * and metrics; claim, new, … of a table) are kept for a day: they exist
 * exactly while their directory is the same kind of table, and a table
 * that changes kind gets a new inode (the generation lookup gives
 * nodes_lookup), which drops what was kept under the old one.  A table is
 * kept for a second: once it is dropped, a kept name still leads nowhere
 * stale — its attributes, its listing and every file in it are asked for
 * and found gone, and mkdir of it is checked anew (the kernel looks a name
 * up again before creating it) — but the kernel forgets it soon. */
static double
entry_timeout(PathKind kind)
{
    switch (kind) {
    case P_TABLE: return 1;
    case P_CTL:
    case P_METRICS:
    case P_CLAIM:
    case P_WAIT:
    case P_NEW:
    case P_STATS:
    case P_RELEASED:
    case P_HELD:
    case P_DEAD: return 86400;
    default: return 0;
    }
}

/* 0 when "p"'s table exists (and, for what only queues have, is a queue),
 * with "info" (may be NULL) filled; else -ENOENT. */
static int
table_check(const Path *p, LangTableInfo *info)
{
    if (strcmp(p->table, "ctl") == 0 || strcmp(p->table, "metrics") == 0)
        return -ENOENT;
    LangSession *s = session();
    LangError err = {0};
    LangTableInfo local;
    if (!info)
        info = &local;
    int rc = finish(s, lang_view_table(s, p->table, info, &err));
    if (rc)
        return rc;
    bool any_table = p->kind == P_TABLE || p->kind == P_NEW || p->kind == P_RECORD;
    return !any_table && !info->is_queue ? -ENOENT : 0;
}

/* The identity a record path names and the fence its view promises:
 * jobs/7 (none), jobs/held/7~3 (held by hold 3), jobs/dead/7 (dead).
 * -ENOENT when the name is no record's. */
static int
entry_key(const Path *p, Value *key, int64_t *fence)
{
    char id[sizeof p->name];
    snprintf(id, sizeof id, "%s", p->name);
    *fence = 0;
    if (p->kind == P_HELD_ENTRY) {
        char *tilde = strrchr(id, '~');
        if (!tilde || tilde[1] < '1' || tilde[1] > '9')
            return -ENOENT;
        char *end;
        errno = 0;
        long long n = strtoll(tilde + 1, &end, 10);
        if (errno || *end || n <= 0)
            return -ENOENT;
        *fence = n;
        *tilde = '\0';
    } else if (p->kind == P_DEAD_ENTRY) {
        *fence = LANG_FENCE_DEAD;
    } else if (p->kind != P_RECORD) {
        return -ENOENT;
    }
    return name_to_key(id, key) < 0 ? -ENOENT : 0;
}

/* The file name part of "p" that names the identity (without ~N). */
static size_t
entry_id_len(const Path *p)
{
    const char *tilde = p->kind == P_HELD_ENTRY ? strrchr(p->name, '~') : NULL;
    return tilde ? (size_t)(tilde - p->name) : strlen(p->name);
}

/* ---- records being created ----
 * Between create() and the flush that stores it, a new record's name must
 * exist for the kernel; these are those names. */

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static char **pending;
static size_t npending;

static void
pending_add(const char *path)
{
    pthread_mutex_lock(&pending_lock);
    pending = xrealloc(pending, (npending + 1) * sizeof *pending);
    pending[npending++] = xstrdup(path);
    pthread_mutex_unlock(&pending_lock);
}

static void
pending_remove(const char *path)
{
    pthread_mutex_lock(&pending_lock);
    for (size_t i = 0; i < npending; i++)
        if (strcmp(pending[i], path) == 0) {
            free(pending[i]);
            pending[i] = pending[--npending];
            break;
        }
    pthread_mutex_unlock(&pending_lock);
}

static bool
pending_has(const char *path)
{
    pthread_mutex_lock(&pending_lock);
    bool found = false;
    for (size_t i = 0; i < npending && !found; i++)
        found = strcmp(pending[i], path) == 0;
    pthread_mutex_unlock(&pending_lock);
    return found;
}

/* ---- open files ---- */

typedef enum HandleKind { H_CTL, H_SNAPSHOT, H_WRITE, H_NEW } HandleKind;

typedef struct Handle {
    HandleKind      kind;
    pthread_mutex_t lock;
    char           *path;       /* H_WRITE: for the pending list */
    char            table[256];
    Value           key;        /* H_WRITE */
    Buf             data;       /* H_SNAPSHOT: what reads serve; H_WRITE: the content;
                                   H_NEW: a line not yet complete */
    bool            dirty;      /* H_WRITE: content to store at flush */
    bool            created;    /* H_WRITE: made by create() */
    bool            exclusive;  /* H_WRITE: O_EXCL: an existing record is EEXIST */
    bool            scanning;   /* H_WRITE: written in order so far, so "scan" knows
                                   what the content is: the write that completes
                                   the object stores it */
    ContentScan     scan;       /* H_WRITE: the shape of the content so far */
    CtlFile        *ctl;
    Mount          *mount;      /* with "undo": the mount that claimed */
    LangUnclaim     undo;       /* an open of wait: how to give its claim back */
    bool            was_read;   /* with "undo": a read served the claimed record */
} Handle;

static Handle *
handle_new(HandleKind kind, const Path *p)
{
    Handle *h = xcalloc(1, sizeof *h);
    h->kind = kind;
    pthread_mutex_init(&h->lock, NULL);
    snprintf(h->table, sizeof h->table, "%s", p->table);
    return h;
}

/* Gives back the claim of an open of wait whose record nobody read: the
 * caller was killed or gave up between the open and the read (see
 * lang_view_unclaim). */
static void
give_back(Handle *h)
{
    if (!h->undo.table || h->was_read)
        return;
    LangSession *s = lang_session_new(h->mount->store, NULL, NULL);
    LangError err = {0};
    lang_view_unclaim(s, &h->undo, &err);
    lang_session_free(s);
}

static void
handle_free(Handle *h)
{
    give_back(h);
    lang_unclaim_free(&h->undo);
    if (h->path && h->created)
        pending_remove(h->path);
    free(h->path);
    value_free(&h->key);
    buf_free(&h->data);
    ctl_close(h->ctl);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static Handle *
handle_of(struct fuse_file_info *fi)
{
    return (Handle *)(uintptr_t)fi->fh;
}

static void
handle_attach(struct fuse_file_info *fi, Handle *h, bool seekable)
{
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->direct_io = 1;
    fi->nonseekable = !seekable;
    /* A handle that cannot write has nothing for close() to store: the
     * kernel need not send FLUSH, a round trip a claim would wait for. */
    fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
}

/* ---- attributes ---- */

/* Fills "st" for a file of "mode" owned as table "info" says (NULL: the
 * mount's user). */
static void
fill_stat(struct stat *st, mode_t mode, off_t size, const LangTableInfo *info)
{
    Mount *m = mount_of();
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

/* What a record file shows (its size and times) into "stat" (may be
 * NULL), and its table's owner and mode in "info" (may be NULL).  -errno
 * when it is absent (or its view's fence fails). */
static int
record_stat(const Path *p, LangRecordStat *stat, LangTableInfo *info)
{
    Value key;
    int64_t fence;
    if (entry_key(p, &key, &fence))
        return -ENOENT;
    LangSession *s = session();
    LangError err = {0};
    Buf json = {0};
    int rc = finish(s, lang_view_read(s, p->table, &key, fence, &json, info, stat, &err));
    buf_free(&json);
    value_free(&key);
    return rc;
}

/* A struct timespec of "ns" since the epoch. */
static struct timespec
timespec_of(int64_t ns)
{
    return (struct timespec){.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

/* The times of a record's file from the store: mtime its content last
 * written (for a held/ID~N name, the instant of that claim), ctime its
 * hold last changed, atime its mtime. */
static void
stat_record_times(struct stat *st, const LangRecordStat *rs, bool held_entry)
{
    st->st_mtim = timespec_of(held_entry && rs->claimed ? rs->claimed : rs->written);
    st->st_ctim = timespec_of(rs->changed);
    st->st_atim = st->st_mtim;
}

/* A table's files take their permission bits from its directory's: read
 * (r) to read records and figures, write (w) to claim, create, release and
 * delete.  Opening claim or wait for reading claims, so they are readable
 * by whoever may write the queue. */
static mode_t
file_mode(PathKind kind, mode_t dir)
{
    switch (kind) {
    case P_TABLE:
    case P_RELEASED:
    case P_HELD:
    case P_DEAD: return S_IFDIR | dir;
    case P_CLAIM:
    case P_WAIT: return S_IFREG | ((dir & 0222) << 1);
    case P_STATS: return S_IFREG | (dir & 0444);
    case P_NEW: return S_IFREG | (dir & 0222);
    case P_RECORD: return S_IFREG | (dir & 0666);
    default: return S_IFREG | (dir & 0444);   /* held/ and dead/ entries */
    }
}

/* What a name in released/ is before anything is moved there: never a
 * file (ENOENT), but a name whose @WHEN is neither a duration nor a
 * datetime is refused (EINVAL) when it is looked up, so mv reports the
 * bad name itself rather than failing the rename. */
static int
release_name_check(const char *name)
{
    const char *at = strchr(name, '@');
    if (!at)
        return -ENOENT;
    const char *spec = at + 1;
    int64_t ns;
    size_t len = strlen(spec);
    return duration_parse(spec, len, &ns) == 0 || datetime_parse(spec, len, &ns) == 0 ? -ENOENT
                                                                                     : -EINVAL;
}

/* The attributes of "path" (parsed: "p") into "st", and into
 * "*generation" (may be NULL) what tells its versions apart: for a table,
 * whether it is a queue. */
static int
stat_path(const char *path, const Path *p, struct stat *st, uint32_t *generation)
{
    if (generation)
        *generation = 0;
    LangTableInfo info;
    LangRecordStat rs;
    off_t size = 0;
    int rc;
    switch (p->kind) {
    case P_ROOT:
        /* With permissions enforced, anyone may define a table, as in /tmp:
         * it is theirs, and only they may remove it. */
        fill_stat(st, S_IFDIR | (mount_of()->enforce ? 01777 : 0755), 0, NULL);
        return 0;
    case P_CTL:
        fill_stat(st, S_IFREG | 0666, 0, NULL);
        return 0;
    case P_METRICS:
        fill_stat(st, S_IFREG | 0444, 0, NULL);
        return 0;
    case P_RECORD:
    case P_HELD_ENTRY:
    case P_DEAD_ENTRY:
        if (p->kind == P_RECORD && pending_has(path)) {
            if ((rc = table_check(p, &info)))
                return rc;
        } else if ((rc = record_stat(p, &rs, &info))) {
            return rc;
        } else {
            fill_stat(st, file_mode(p->kind, info.mode), (off_t)rs.size, &info);
            stat_record_times(st, &rs, p->kind == P_HELD_ENTRY);
            return 0;
        }
        break;
    case P_RELEASED_ENTRY:
        return release_name_check(p->name);
    case P_NONE:
        return -ENOENT;
    case P_TOOLONG:
        return -ENAMETOOLONG;
    default:
        if ((rc = table_check(p, &info)))
            return rc;
        if (generation && p->kind == P_TABLE)
            *generation = info.is_queue ? 2 : 1;
    }
    fill_stat(st, file_mode(p->kind, info.mode), size, &info);
    return 0;
}

/* ---- directories ---- */

/* A reply to READDIR or READDIRPLUS being filled: at most "size" bytes of
 * entries. */
typedef struct DirReply {
    fuse_req_t    req;
    char         *data;
    size_t        size;
    size_t        used;
    bool          plus;    /* READDIRPLUS: each entry with its attributes */
    fuse_ino_t    ino;     /* the directory (plus) */
    LangTableInfo info;    /* its table's, for its records' attributes (plus) */
    uint64_t     *inos;    /* the lookups the entries count (plus), to undo */
    size_t        ninos, cap;
} DirReply;

static int dir_add_plus(DirReply *r, const char *name, mode_t mode, off_t next,
                        const LangRecordStat *rs);

/* Adds entry "name" (its type from "mode"), after which a READDIR goes on
 * at offset "next"; to a READDIRPLUS reply with its attributes — those of
 * a record that shows "*rs" when "rs" is given.  1 when the reply is
 * full (the entry is not in it). */
static int
dir_add(DirReply *r, const char *name, mode_t mode, off_t next, const LangRecordStat *rs)
{
    if (r->plus)
        return dir_add_plus(r, name, mode, next, rs);
    /* As for every name it lists, the kernel asks for the inode by a
     * lookup; a directory entry carries no number (FUSE_UNKNOWN_INO). */
    struct stat st = {.st_ino = 0xffffffff, .st_mode = mode};
    size_t need = fuse_add_direntry(r->req, r->data + r->used, r->size - r->used, name, &st, next);
    if (need > r->size - r->used)
        return 1;
    r->used += need;
    return 0;
}

typedef struct DirFill {
    DirReply *out;
    off_t     next_off;   /* the offset of the entry after the last one given */
    off_t     skip;       /* records still to pass over (a seek) */
    Value     last;       /* the last record given */
} DirFill;

/* What readdir keeps between calls on one open directory: where the last
 * call stopped, so the next continues from that record in O(log n). */
typedef struct DirHandle {
    off_t next_off;
    Value last;
} DirHandle;

/* A record's entry; "rs" (may be NULL) is what its file shows, when known. */
static int
fill_entry(DirFill *d, const Value *key, const LangRecordStat *rs)
{
    if (d->skip > 0) {
        d->skip--;
        return 0;
    }
    Buf name = {0};
    name_from_key(key, &name);
    int full = dir_add(d->out, name.data, S_IFREG, d->next_off + 1, rs);
    buf_free(&name);
    if (full)
        return 1;
    d->next_off++;
    value_free(&d->last);
    d->last = value_clone(key);
    return 0;
}

static int
fill_record(void *ctx, const Value *key)
{
    return fill_entry(ctx, key, NULL);
}

/* A record's entry with its size and times, from a listing that read it. */
static int
fill_listed(void *ctx, const Value *key, const LangRecordStat *rs)
{
    return fill_entry(ctx, key, rs);
}

/* A held/ entry: ID~N, N the hold's number. */
static int
fill_held(void *ctx, const Value *key, int64_t hold)
{
    DirFill *d = ctx;
    if (d->skip > 0) {
        d->skip--;
        return 0;
    }
    Buf name = {0};
    name_from_key(key, &name);
    buf_printf(&name, "~%lld", (long long)hold);
    int full = dir_add(d->out, name.data, S_IFREG, d->next_off + 1, NULL);
    buf_free(&name);
    if (full)
        return 1;
    d->next_off++;
    return 0;
}

static int
fill_table(void *ctx, const char *name)
{
    DirFill *d = ctx;
    if (d->next_off++ < d->skip)
        return 0;
    return dir_add(d->out, name, S_IFDIR, d->next_off, NULL);
}

static int
qfs_opendir(const char *path, struct fuse_file_info *fi)
{
    Path p = path_parse(path);
    if (p.kind != P_ROOT && p.kind != P_TABLE && p.kind != P_RELEASED && p.kind != P_HELD &&
        p.kind != P_DEAD)
        return -ENOTDIR;
    int rc = p.kind == P_ROOT ? 0 : table_check(&p, NULL);
    if (rc)
        return rc;
    fi->fh = (uint64_t)(uintptr_t)xcalloc(1, sizeof(DirHandle));
    return 0;
}

static void
dir_handle_free(struct fuse_file_info *fi)
{
    DirHandle *dh = (DirHandle *)(uintptr_t)fi->fh;
    if (dh) {
        value_free(&dh->last);
        free(dh);
    }
}

static int
qfs_readdir(const char *path, DirReply *out, off_t offset, struct fuse_file_info *fi)
{
    Path p = path_parse(path);
    DirHandle *dh = (DirHandle *)(uintptr_t)fi->fh;
    DirFill d = {out, offset, 0, {0}};
    LangError err = {0};
    LangSession *s = session();
    int rc = 0;

    /* The fixed entries take offsets 1 to nfixed.  A table lists its
     * records and nothing else: its reserved names (claim, wait, new, …)
     * resolve when named but are never listed, so tools that walk or glob
     * the tree never open one (SPEC section 2). */
    const char *fixed[4] = {".", ".."};
    bool fixed_dir[4] = {true, true};
    size_t nfixed = 2;
    if (p.kind == P_ROOT) {
        fixed[nfixed++] = "ctl";
        fixed[nfixed++] = "metrics";
    } else if (p.kind == P_TABLE) {
        LangTableInfo info;
        if ((rc = finish(s, lang_view_table(s, p.table, &info, &err))))
            return rc;
        out->info = info;
        s = session();
    }
    for (size_t i = (size_t)offset; i < nfixed; i++) {
        if (dir_add(out, fixed[i], fixed_dir[i] ? S_IFDIR : S_IFREG, (off_t)i + 1, NULL)) {
            lang_session_free(s);
            return 0;
        }
        d.next_off = (off_t)i + 1;
    }
    if (offset > (off_t)nfixed && p.kind != P_TABLE) {
        d.skip = offset - (off_t)nfixed;   /* views are small: count from the start */
        d.next_off = (off_t)nfixed;
    }

    if (p.kind == P_ROOT) {
        d.skip = offset > (off_t)nfixed ? offset : (off_t)nfixed;
        d.next_off = (off_t)nfixed;
        rc = finish(s, lang_view_tables(s, fill_table, &d, &err));
    } else if (p.kind == P_HELD) {
        rc = finish(s, lang_view_held(s, p.table, fill_held, &d, &err));
    } else if (p.kind == P_DEAD) {
        rc = finish(s, lang_view_dead(s, p.table, fill_record, &d, &err));
        value_free(&d.last);
    } else if (p.kind == P_TABLE) {
        const Value *after = NULL;
        if (offset > (off_t)nfixed) {
            if (dh && dh->next_off == offset && dh->last.kind != VAL_NONE) {
                after = &dh->last;     /* continue where the last call stopped */
            } else {
                d.skip = offset - (off_t)nfixed;  /* a seek: count from the start */
                d.next_off = (off_t)nfixed;
            }
        }
        /* READDIRPLUS reads the records' sizes in the same walk. */
        rc = out->plus
                 ? finish(s, lang_view_listing(s, p.table, after, fill_listed, &d, NULL, &err))
                 : finish(s, lang_view_keys(s, p.table, after, fill_record, &d, &err));
        if (dh && d.last.kind != VAL_NONE) {
            value_free(&dh->last);
            dh->last = d.last;
            dh->next_off = d.next_off;
            d.last = value_none();
        }
        value_free(&d.last);
    } else {
        lang_session_free(s);   /* released/ is always empty */
    }
    return rc;
}

static int
qfs_mkdir(const char *path, mode_t mode)
{
    Path p = path_parse(path);
    if (p.kind != P_TABLE)
        return p.kind == P_CTL ? -EEXIST : -EPERM;
    LangSession *s = session();
    LangError err = {0};
    return finish(s, lang_view_mkdir(s, p.table, mode, &err));
}

static int
qfs_rmdir(const char *path)
{
    Path p = path_parse(path);
    if (p.kind != P_TABLE)
        return p.kind == P_CTL ? -ENOTDIR : -EPERM;
    LangSession *s = session();
    LangError err = {0};
    return finish(s, lang_view_rmdir(s, p.table, &err));
}

/* ---- files ---- */

/* Reads record "p" into a new snapshot handle. */
static int
open_snapshot(const Path *p, Handle **out)
{
    Value key;
    int64_t fence;
    if (entry_key(p, &key, &fence))
        return -ENOENT;
    Handle *h = handle_new(H_SNAPSHOT, p);
    LangSession *s = session();
    LangError err = {0};
    int rc = finish(s, lang_view_read(s, p->table, &key, fence, &h->data, NULL, NULL, &err));
    value_free(&key);
    if (rc) {
        handle_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

/* A handle that collects a record's new content, stored at flush. */
static int
open_write(const char *path, const Path *p, int flags, bool created, Handle **out)
{
    Value key;
    if (name_to_key(p->name, &key) < 0)
        return -EINVAL;
    Handle *h = handle_new(H_WRITE, p);
    h->key = key;
    h->path = xstrdup(path);
    h->created = created;
    h->exclusive = created && (flags & O_EXCL);
    if (!created) {
        /* The record must exist; O_RDWR and O_APPEND start from its content
         * (with O_TRUNC, from nothing). */
        Buf json = {0};
        LangSession *s = session();
        LangError err = {0};
        int rc = finish(s, lang_view_read(s, p->table, &key, 0, &json, NULL, NULL, &err));
        if (rc) {
            buf_free(&json);
            handle_free(h);
            return rc;
        }
        if (((flags & O_ACCMODE) == O_RDWR || (flags & O_APPEND)) && !(flags & O_TRUNC))
            h->data = json;
        else
            buf_free(&json);
    }
    h->scanning = true;
    content_feed(&h->scan, h->data.data, h->data.len);
    *out = h;
    return 0;
}

static bool
request_interrupted(void *ctx)
{
    (void)ctx;
    /* The caller gave up (a signal), or the mount is ending (SIGTERM, an
     * unmount): either way nobody would read the claim. */
    return fuse_req_interrupted(current_request) != 0 ||
           fuse_session_exited(mount_of()->session) != 0;
}

/* What qfs_open returns for an open it has filed to answer later. */
#define OPEN_FILED 1

/* Claims for an open of T/wait as "s" (freed), into a handle that gives
 * the claim back when nobody reads it: 0 with "*out" (NULL when nothing
 * was claimable), or -errno. */
static int
wait_claim(LangSession *s, Mount *m, const char *table, Handle **out)
{
    Path p = {P_WAIT, "", ""};
    snprintf(p.table, sizeof p.table, "%s", table);
    Handle *h = handle_new(H_SNAPSHOT, &p);
    h->mount = m;
    LangError err = {0};
    int rc = finish(s, lang_view_claim_undoable(s, table, &h->data, &h->undo, &err));
    if (rc || !h->data.len) {
        handle_free(h);
        h = NULL;
    }
    *out = h;
    return rc;
}

/* Serves a filed open of wait (WaitServe, on the mount's wait thread). */
static bool
wait_serve(Mount *m, const WaitCall *c, atomic_bool *interrupted)
{
    LangSession *s = lang_session_new(m->store, m->consumer, m->instance);
    lang_session_set_caller(s, c->uid, c->gid, c->groups, c->ngroups, m->enforce);
    Handle *h;
    int rc = wait_claim(s, m, c->table, &h);
    if (!rc && !h)
        return false;
    if (!rc && (atomic_load(interrupted) || fuse_req_interrupted(c->req))) {
        handle_free(h);   /* gives the claim back */
        rc = -EINTR;
    }
    if (rc) {
        fuse_reply_err(c->req, -rc);
        return true;
    }
    struct fuse_file_info fi = c->fi;
    handle_attach(&fi, h, true);
    if (fuse_reply_open(c->req, &fi) != 0)
        handle_free(h);   /* the caller gave up: the claim goes back */
    return true;
}

/* Claims for an open of T/wait: at once with O_NONBLOCK (EAGAIN when
 * nothing is claimable); else at once when something is claimable, or
 * files the request with the mount's waiters (OPEN_FILED: answered later,
 * holding no thread).  What the claim would refuse (no such queue, no
 * permission) is refused at once. */
static int
open_wait(const Path *p, const struct fuse_file_info *fi, Handle **out)
{
    Mount *m = mount_of();
    for (int tries = 0;; tries++) {
        uint64_t seen = store_changes(m->store);
        LangSession *s = session();
        LangError err = {0};
        bool yes = true;
        int64_t next_wake = INT64_MAX;
        if (!(fi->flags & O_NONBLOCK) &&
            lang_view_claimable(s, p->table, &yes, &next_wake, &err))
            return finish(s, err.code);
        if (yes && ((fi->flags & O_NONBLOCK) || tries < 3)) {
            int rc = wait_claim(s, m, p->table, out);
            if (rc || *out)
                return rc;
            if (fi->flags & O_NONBLOCK)
                return -EAGAIN;
            continue;   /* another claim got there first: look again */
        }
        lang_session_free(s);
        const struct fuse_ctx *cx = fuse_req_ctx(current_request);
        WaitCall c = {current_request, *fi, p->table, cx->uid, cx->gid, {0}, 0};
        gid_t groups[64];
        c.ngroups = caller_groups(groups);
        for (int i = 0; i < c.ngroups; i++)
            c.groups[i] = groups[i];
        int rc = waiters_file(m->waiters, &c, seen, next_wake);
        return rc ? rc : OPEN_FILED;
    }
}

/* A snapshot of the queue's figures (stats), or every queue's and the
 * mount's own (metrics). */
static int
open_figures(const Path *p, Handle **out)
{
    Handle *h = handle_new(H_SNAPSHOT, p);
    LangSession *s = session();
    LangError err = {0};
    int rc = finish(s, p->kind == P_METRICS ? lang_view_metrics(s, &h->data, &err)
                                            : lang_view_stats(s, p->table, &h->data, &err));
    if (rc) {
        handle_free(h);
        return rc;
    }
    if (p->kind == P_METRICS)
        buf_printf(&h->data,
                   "# HELP queuefs_mount_inodes Files and directories of this mount the kernel holds.\n"
                   "# TYPE queuefs_mount_inodes gauge\n"
                   "queuefs_mount_inodes %zu\n",
                   nodes_count(mount_of()->nodes));
    *out = h;
    return 0;
}

static int
qfs_open(const char *path, struct fuse_file_info *fi)
{
    Path p = path_parse(path);
    int accmode = fi->flags & O_ACCMODE;
    Handle *h = NULL;
    int rc = 0;
    LangError err = {0};
    /* What only reads (or claims by reading) opens for reading only. */
    bool read_only = p.kind == P_CLAIM || p.kind == P_WAIT || p.kind == P_STATS ||
                     p.kind == P_METRICS || p.kind == P_HELD_ENTRY || p.kind == P_DEAD_ENTRY;
    if (read_only && accmode != O_RDONLY)
        return -EACCES;
    switch (p.kind) {
    case P_CTL: {
        Mount *m = mount_of();
        h = handle_new(H_CTL, &p);
        h->ctl = ctl_open(m->store, m->consumer, m->instance, request_interrupted);
        break;
    }
    case P_CLAIM: {
        h = handle_new(H_SNAPSHOT, &p);
        LangSession *s = session();
        if ((rc = finish(s, lang_view_claim(s, p.table, &h->data, &err))))
            goto fail;
        break;
    }
    case P_WAIT:
        if ((rc = open_wait(&p, fi, &h)))
            return rc;
        break;
    case P_STATS:
    case P_METRICS:
        if ((rc = open_figures(&p, &h)))
            return rc;
        break;
    case P_NEW:
        if ((rc = table_check(&p, NULL)))
            return rc;
        h = handle_new(H_NEW, &p);
        break;
    case P_RECORD:
        if (accmode == O_RDONLY) {
            rc = open_snapshot(&p, &h);
        } else {
            rc = open_write(path, &p, fi->flags, false, &h);
            /* Deleted elsewhere since the kernel looked it up: O_CREAT makes
             * it anew, as create() would have. */
            if (rc == -ENOENT && (fi->flags & O_CREAT) && !(rc = table_check(&p, NULL)) &&
                !(rc = open_write(path, &p, fi->flags, true, &h)))
                pending_add(path);
        }
        if (rc)
            return rc;
        break;
    case P_HELD_ENTRY:
    case P_DEAD_ENTRY:
        if ((rc = open_snapshot(&p, &h)))
            return rc;
        break;
    case P_ROOT:
    case P_TABLE:
    case P_RELEASED:
    case P_HELD:
    case P_DEAD:
        return -EISDIR;
    default:
        return -ENOENT;
    }
    handle_attach(fi, h, h->kind == H_SNAPSHOT || h->kind == H_WRITE);
    return 0;
fail:
    handle_free(h);
    return rc;
}

static int
qfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    (void)mode;
    Path p = path_parse(path);
    if (p.kind == P_TOOLONG)
        return -ENAMETOOLONG;
    if (p.kind == P_HELD_ENTRY || p.kind == P_DEAD_ENTRY)
        return -ENOENT;   /* a view's name that is gone (touch says so) */
    /* A collection has no claim, wait, stats or view directories, and none of
     * those names is an identity's (those are %63laim, …). */
    if (p.kind != P_RECORD && p.kind != P_NONE && p.kind != P_RELEASED_ENTRY &&
        p.kind != P_TABLE && p.kind != P_NEW && table_check(&p, NULL) == -ENOENT)
        return -EINVAL;
    if (p.kind != P_RECORD)
        return p.kind == P_NONE || p.kind == P_RELEASED_ENTRY ? -EPERM : -EEXIST;
    int rc = table_check(&p, NULL);
    if (rc)
        return rc;
    bool exists = record_stat(&p, NULL, NULL) == 0;
    if (exists && (fi->flags & O_EXCL))
        return -EEXIST;
    Handle *h;
    if ((rc = open_write(path, &p, fi->flags, !exists, &h)))
        return rc;
    if (!exists)
        pending_add(path);
    handle_attach(fi, h, true);
    return 0;
}

/* The signals whose default action ends a process (stopping ones and
 * those ignored by default excluded), as /proc's masks number them. */
#define SIG_BIT(n) (1ull << ((n) - 1))
#define DEADLY_SIGNALS                                                                          \
    (~0ull & ~(SIG_BIT(SIGCHLD) | SIG_BIT(SIGCONT) | SIG_BIT(SIGURG) | SIG_BIT(SIGWINCH) |      \
               SIG_BIT(SIGSTOP) | SIG_BIT(SIGTSTP) | SIG_BIT(SIGTTIN) | SIG_BIT(SIGTTOU)))

/* True when the thread that made "req" has a signal pending that will end
 * it — one it neither blocks, ignores nor catches — so that what a reply
 * gives it would die with it.  A signal's INTERRUPT may reach the daemon
 * only after the reply; its pending mask is there at once.  False when
 * that cannot be told (another pid namespace). */
static bool
caller_dying(fuse_req_t req)
{
    pid_t tid = fuse_req_ctx(req)->pid;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    FILE *f = tid > 0 ? fopen(path, "re") : NULL;
    if (!f)
        return false;
    unsigned long long pend = 0, blocked = 0, ignored = 0, caught = 0, v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "SigPnd: %llx", &v) == 1 || sscanf(line, "ShdPnd: %llx", &v) == 1)
            pend |= v;
        else if (sscanf(line, "SigBlk: %llx", &v) == 1)
            blocked = v;
        else if (sscanf(line, "SigIgn: %llx", &v) == 1)
            ignored = v;
        else if (sscanf(line, "SigCgt: %llx", &v) == 1)
            caught = v;
    }
    fclose(f);
    return (pend & SIG_BIT(SIGKILL)) ||
           (pend & ~blocked & ~ignored & ~caught & DEADLY_SIGNALS) != 0;
}

/* Replies to a read of "size" bytes at "off".  What is sent is a copy
 * taken under the handle's lock: once the reply is out, the caller may
 * close the file and another thread free the handle while this one is
 * still in the reply's system call. */
static void
reply_read(fuse_req_t req, Handle *h, size_t size, off_t off, int flags)
{
    char *copy = NULL;
    size_t n = 0;
    if (h->kind == H_CTL) {
        copy = xmalloc(size);
        ssize_t got = ctl_read(h->ctl, copy, size, (flags & O_NONBLOCK) != 0);
        if (got < 0) {
            free(copy);
            fuse_reply_err(req, (int)-got);
            return;
        }
        n = (size_t)got;
    } else if (h->undo.table && !h->was_read && (fuse_req_interrupted(req) || caller_dying(req))) {
        /* The first read of a claim, and its reader is being killed: it
         * would never see the record, which goes back at its close. */
        fuse_reply_err(req, EINTR);
        return;
    } else {
        pthread_mutex_lock(&h->lock);
        if (h->kind != H_NEW && (size_t)off < h->data.len) {
            n = h->data.len - (size_t)off < size ? h->data.len - (size_t)off : size;
            copy = xmalloc(n);
            memcpy(copy, h->data.data + off, n);
            h->was_read = true;   /* a claim read is the reader's: never given back */
        }
        pthread_mutex_unlock(&h->lock);
    }
    fuse_reply_buf(req, copy, n);
    free(copy);
}

/* Creates the records of the complete lines "new" holds, in one
 * transaction; on failure the write that brought them is undone. */
static int
new_write(Handle *h, const char *buf, size_t size)
{
    size_t before = h->data.len;
    if (before + size > RECORD_MAX_BYTES && !memchr(buf, '\n', size))
        return -EFBIG;   /* a line this long could never be stored */
    buf_append(&h->data, buf, size);
    const char *last = memrchr(h->data.data, '\n', h->data.len);
    if (!last)
        return (int)size;
    size_t complete = (size_t)(last - h->data.data) + 1;
    LangSession *s = session();
    LangError err = {0};
    int rc = finish(s, lang_view_append(s, h->table, h->data.data, complete, &err));
    if (rc) {
        h->data.len = before;   /* all of this write's lines, or none */
        h->data.data[before] = '\0';
        return rc;
    }
    memmove(h->data.data, h->data.data + complete, h->data.len - complete);
    h->data.len -= complete;
    h->data.data[h->data.len] = '\0';
    return (int)size;
}

/* Stores the content of record handle "h" (its lock held): CREATE or a
 * whole-record UPDATE.  Stored or refused, the content is no longer due,
 * and a new record's name is no longer pending. */
static int
record_store_content(Handle *h)
{
    LangSession *s = session();
    LangError err = {0};
    h->dirty = false;
    int rc = finish(s, lang_view_write(s, h->table, &h->key, h->data.data ? h->data.data : "",
                                       h->data.len, h->exclusive, &err));
    if (h->created) {
        pending_remove(h->path);
        h->created = false;
    }
    return rc;
}

/* A write at the end of what record handle "h" holds (its lock held): the
 * bytes that complete one object store it now, so this write() reports
 * what storing met; bytes that cannot begin an object, or that follow a
 * whole one, are refused (EINVAL) and change nothing.  Blanks after a
 * stored object are accepted and store nothing more. */
static int
record_write_in_order(Handle *h, const char *buf, size_t size)
{
    ContentScan before = h->scan;
    switch (content_feed(&h->scan, buf, size)) {
    case CONTENT_INVALID:
        h->scan = before;
        return -EINVAL;
    case CONTENT_COMPLETE:
        buf_append(&h->data, buf, size);
        if (before.state == CONTENT_COMPLETE)
            return (int)size;   /* blanks after the object */
        h->dirty = true;
        int rc = record_store_content(h);
        return rc ? rc : (int)size;
    default:
        buf_append(&h->data, buf, size);
        h->dirty = true;
        return (int)size;
    }
}

static int
qfs_write(Handle *h, const char *buf, size_t size, off_t off)
{
    if (h->kind == H_CTL) {
        const struct fuse_ctx *cx = fuse_req_ctx(current_request);
        gid_t groups[64];
        int n = caller_groups(groups);
        return (int)ctl_write(h->ctl, buf, size, cx->uid, cx->gid, groups, n, mount_of()->enforce);
    }
    if (h->kind == H_SNAPSHOT)
        return -EBADF;
    pthread_mutex_lock(&h->lock);
    int rc = (int)size;
    if (h->kind == H_NEW) {
        rc = new_write(h, buf, size);
    } else if ((size_t)off + size > RECORD_MAX_BYTES) {
        rc = -EFBIG;   /* content this large could never be stored */
    } else if (h->scanning && (size_t)off == h->data.len) {
        rc = record_write_in_order(h, buf, size);
    } else {
        h->scanning = false;   /* rewritten in place: stored at close */
        if ((size_t)off + size > h->data.len) {
            size_t grow = (size_t)off + size - h->data.len;
            char *zeros = xcalloc(1, grow);
            buf_append(&h->data, zeros, grow);
            free(zeros);
        }
        memcpy(h->data.data + off, buf, size);
        h->dirty = true;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* close() reports what storing the file's writes met: flush is the durable
 * step (release is asynchronous). */
static int
qfs_flush(Handle *h)
{
    int rc = 0;
    pthread_mutex_lock(&h->lock);
    LangError err = {0};
    if (h->kind == H_WRITE && h->dirty) {
        rc = record_store_content(h);
    } else if (h->kind == H_NEW && h->data.len) {
        /* A last line without its newline is a line too. */
        LangSession *s = session();
        rc = finish(s, lang_view_append(s, h->table, h->data.data, h->data.len, &err));
        buf_reset(&h->data);
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* ftruncate of an open file: a record being written is cut; every other
 * file ignores it. */
static void
handle_truncate(Handle *h, off_t size)
{
    pthread_mutex_lock(&h->lock);
    if (h->kind == H_WRITE && (size_t)size < h->data.len) {
        h->data.len = (size_t)size;
        h->data.data[size] = '\0';
        h->dirty = true;
        /* Cut to nothing, the content starts again; cut elsewhere, it is
         * stored at close. */
        h->scanning = size == 0;
        memset(&h->scan, 0, sizeof h->scan);
    }
    pthread_mutex_unlock(&h->lock);
}

/* truncate of a path: allowed (and a no-op) where an open with O_TRUNC
 * would be; the content written through an open replaces the record at
 * close. */
static int
qfs_truncate(const char *path, off_t size)
{
    Path p = path_parse(path);
    switch (p.kind) {
    case P_CTL:
    case P_NEW:
        return size == 0 ? 0 : -EINVAL;
    case P_RECORD: {
        if (pending_has(path))
            return 0;
        int rc = record_stat(&p, NULL, NULL);
        return rc ? rc : 0;
    }
    case P_ROOT:
    case P_TABLE:
    case P_RELEASED:
        return -EISDIR;
    default:
        return -EPERM;
    }
}

static int
qfs_unlink(const char *path)
{
    Path p = path_parse(path);
    if (p.kind != P_RECORD && p.kind != P_HELD_ENTRY && p.kind != P_DEAD_ENTRY)
        return p.kind == P_NONE || p.kind == P_RELEASED_ENTRY ? -ENOENT : -EPERM;
    Value key;
    int64_t fence;
    if (entry_key(&p, &key, &fence))
        return -ENOENT;
    LangSession *s = session();
    LangError err = {0};
    int rc = finish(s, lang_view_delete(s, p.table, &key, fence, &err));
    value_free(&key);
    return rc;
}

/* The release "mv T/ID T/released/ID[@WHEN]" (or from T/held/ID~N) asks
 * for: 0 with "*when" set (NONE when no @), or -EINVAL. */
static int
parse_release_target(const Path *from, const Path *to, Value *when)
{
    *when = value_none();
    char *at = strchr(to->name, '@');
    size_t id_len = at ? (size_t)(at - to->name) : strlen(to->name);
    /* The target names the record as the source does (mv keeps the name:
     * held/7~3 → released/7~3), or by its identity alone (released/7). */
    bool same = (id_len == entry_id_len(from) || id_len == strlen(from->name)) &&
                strncmp(to->name, from->name, id_len) == 0;
    if (!same)
        return -EINVAL;
    if (!at)
        return 0;
    const char *spec = at + 1;
    int64_t ns;
    if (duration_parse(spec, strlen(spec), &ns) == 0)
        *when = value_duration(ns);
    else if (datetime_parse(spec, strlen(spec), &ns) == 0)
        *when = value_datetime(ns);
    else
        return -EINVAL;
    return 0;
}

/* "mv jobs work" renames the table (SPEC section 2).  A name that is taken
 * (a table, ctl, metrics) is EEXIST, and a name inside a table, where "mv
 * jobs work" puts jobs when work exists, EPERM: a table holds no tables.
 * Nothing changes then. */
static int
rename_table(const Path *from, const Path *to)
{
    if (to->kind == P_TOOLONG)
        return -ENAMETOOLONG;
    if (to->kind == P_CTL || to->kind == P_METRICS)
        return -EEXIST;
    if (to->kind != P_TABLE)
        return -EPERM;
    if (strcmp(from->table, to->table) == 0)
        return 0;
    LangSession *s = session();
    LangError err = {0};
    return finish(s, lang_view_rename(s, from->table, to->table, &err));
}

static int
qfs_rename(const char *from_path, const char *to_path, unsigned int flags)
{
    if (flags & ~(unsigned)RENAME_NOREPLACE)
        return -EINVAL;
    Path from = path_parse(from_path), to = path_parse(to_path);
    if (to.kind == P_RELEASED_ENTRY || to.kind == P_RELEASED) {
        /* A move into released/ is a release or an error, never EXDEV. */
        if ((from.kind != P_RECORD && from.kind != P_HELD_ENTRY) ||
            strcmp(from.table, to.table) != 0)
            return -EINVAL;
        if (to.kind == P_RELEASED)
            return -EISDIR;
        Value key, when;
        int64_t fence;
        if (entry_key(&from, &key, &fence))
            return -ENOENT;
        int rc = parse_release_target(&from, &to, &when);
        if (!rc) {
            LangSession *s = session();
            LangError err = {0};
            rc = finish(s, lang_view_release(s, from.table, &key, &when, fence, &err));
        }
        value_free(&key);
        value_free(&when);
        return rc;
    }
    if (from.kind == P_TABLE)
        return rename_table(&from, &to);
    return -EXDEV;
}

/* chmod and chown of a table directory change the table's owner and mode
 * in the store; on a file (as cp -p and mv make) they are accepted and
 * change nothing: a file's mode follows its directory's. */
static int
chattr(const char *path, int64_t mode, int64_t uid, int64_t gid)
{
    Path p = path_parse(path);
    if (p.kind != P_TABLE) {
        struct stat st;
        return stat_path(path, &p, &st, NULL);
    }
    LangSession *s = session();
    LangError err = {0};
    return finish(s, lang_view_chattr(s, p.table, mode, uid, gid, &err));
}

/* touch of a queue's record extends its hold (TOUCH); on every other file
 * it is accepted and no time is kept. */
static int
qfs_utimens(const char *path)
{
    Path p = path_parse(path);
    struct stat st;
    int rc = stat_path(path, &p, &st, NULL);
    if (rc || (p.kind != P_RECORD && p.kind != P_HELD_ENTRY) || pending_has(path))
        return rc;
    LangTableInfo info;
    LangSession *s = session();
    LangError err = {0};
    if ((rc = finish(s, lang_view_table(s, p.table, &info, &err))) || !info.is_queue)
        return rc;
    Value key;
    int64_t fence;
    if (entry_key(&p, &key, &fence))
        return -ENOENT;
    s = session();
    rc = finish(s, lang_view_touch(s, p.table, &key, fence, &err));
    value_free(&key);
    return rc;
}

/* ---- the requests ----
 * Each finds the path of the inode(s) it is given, runs the path's
 * operation above, and replies. */

/* Room for the longest path a request names: a table, a view directory
 * and an entry name of up to FUSE's 1024 bytes. */
#define PATH_BUF 4096

/* Starts serving "req" on this thread; its mount. */
static Mount *
begin(fuse_req_t req)
{
    current_request = req;
    return fuse_req_userdata(req);
}

/* The path of inode "ino" into "out" (PATH_BUF bytes). */
static int
ino_path(const Mount *m, fuse_ino_t ino, char *out)
{
    return nodes_path(m->nodes, ino, out, PATH_BUF);
}

/* The path of "name" in directory "parent" into "out" (PATH_BUF bytes). */
static int
child_path(const Mount *m, fuse_ino_t parent, const char *name, char *out)
{
    int rc = ino_path(m, parent, out);
    if (rc)
        return rc;
    size_t len = strlen(out), name_len = strlen(name);
    if (len + 1 + name_len + 1 > PATH_BUF)
        return -ENAMETOOLONG;
    if (len > 1)
        out[len++] = '/';
    memcpy(out + len, name, name_len + 1);
    return 0;
}

/* Finds "name" in "parent" (at "path") for the kernel: its inode, counted
 * as one more lookup, its attributes, and how long the name may be kept. */
static int
find_entry(const Mount *m, fuse_ino_t parent, const char *name, const char *path,
           struct fuse_entry_param *e)
{
    Path p = path_parse(path);
    uint32_t generation;
    memset(e, 0, sizeof *e);
    int rc = stat_path(path, &p, &e->attr, &generation);
    if (rc)
        return rc;
    e->ino = nodes_lookup(m->nodes, parent, name, generation);
    if (!e->ino)
        return -ENOENT;   /* its directory went while we looked */
    e->attr.st_ino = e->ino;
    e->entry_timeout = entry_timeout(p.kind);
    return 0;
}

/* Replies with "e", or with error "rc". */
static void
reply_entry(const Mount *m, fuse_req_t req, int rc, const struct fuse_entry_param *e)
{
    if (rc)
        fuse_reply_err(req, -rc);
    else if (fuse_reply_entry(req, e) != 0)
        nodes_forget(m->nodes, e->ino, 1);   /* the caller gave up: no lookup counted */
}

/* How long the kernel may keep a record's name and attributes that came
 * with a listing, in seconds: long enough for the stat of each name that
 * follows the listing (ls -l, find -newer, rsync) to need no request, and
 * short enough that nothing listed stays stale past it.  A LOOKUP of a
 * record keeps nothing (entry_timeout). */
#define LISTED_RECORD_TIMEOUT 1.0

/* See dir_add: the entry with its attributes and inode, which counts one
 * lookup (as LOOKUP of it would: a record's from the listing, with the
 * same timeouts, anything else's by find_entry); "." and "..", and a name
 * that is gone, carry none. */
static int
dir_add_plus(DirReply *r, const char *name, mode_t mode, off_t next, const LangRecordStat *rs)
{
    size_t room = r->size - r->used;
    if (fuse_add_direntry_plus(r->req, NULL, 0, name, NULL, 0) > room)
        return 1;
    Mount *m = mount_of();
    struct fuse_entry_param e = {0};
    char path[PATH_BUF];
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        /* the kernel links neither */
    } else if (rs) {
        fill_stat(&e.attr, file_mode(P_RECORD, r->info.mode), (off_t)rs->size, &r->info);
        stat_record_times(&e.attr, rs, false);
        e.ino = nodes_lookup(m->nodes, r->ino, name, 0);
        e.attr.st_ino = e.ino;
        e.entry_timeout = e.attr_timeout = LISTED_RECORD_TIMEOUT;
    } else if (child_path(m, r->ino, name, path) || find_entry(m, r->ino, name, path, &e)) {
        memset(&e, 0, sizeof e);
    }
    if (!e.ino) {
        memset(&e, 0, sizeof e);
        e.attr.st_ino = 0xffffffff;
        e.attr.st_mode = mode;
    }
    r->used += fuse_add_direntry_plus(r->req, r->data + r->used, room, name, &e, next);
    if (e.ino) {
        if (r->ninos == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 64;
            r->inos = xrealloc(r->inos, r->cap * sizeof *r->inos);
        }
        r->inos[r->ninos++] = e.ino;
    }
    return 0;
}

/* Replies with the attributes of inode "ino" at "path", or error "rc". */
static void
reply_attr(fuse_req_t req, int rc, fuse_ino_t ino, const char *path)
{
    struct stat st;
    if (!rc) {
        Path p = path_parse(path);
        rc = stat_path(path, &p, &st, NULL);
    }
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    st.st_ino = ino;
    fuse_reply_attr(req, &st, 0);
}

static void
file_handle_free(struct fuse_file_info *fi)
{
    handle_free(handle_of(fi));
}

/* Called once the kernel has answered FUSE_INIT: the mount now answers
 * requests, which is when the command that mounted it may return. */
static void
ll_init(void *userdata, struct fuse_conn_info *conn)
{
    Mount *m = userdata;
    conn->max_write = CTL_MAX_WRITE;
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
ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    Mount *m = begin(req);
    char path[PATH_BUF];
    struct fuse_entry_param e;
    int rc = child_path(m, parent, name, path);
    if (!rc)
        rc = find_entry(m, parent, name, path, &e);
    reply_entry(m, req, rc, &e);
}

/* After the kernel forgot many inodes (a large listing it let go of),
 * gives the memory of their nodes back to the system, so the daemon does
 * not stay at its peak. */
static void
forgotten(const Mount *m)
{
    if (nodes_shrunk(m->nodes))
        malloc_trim(0);
}

static void
ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    Mount *m = begin(req);
    nodes_forget(m->nodes, ino, nlookup);
    fuse_reply_none(req);
    forgotten(m);
}

static void
ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    Mount *m = begin(req);
    for (size_t i = 0; i < count; i++)
        nodes_forget(m->nodes, forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
    forgotten(m);
}

static void
ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    Mount *m = begin(req);
    char path[PATH_BUF];
    reply_attr(req, ino_path(m, ino, path), ino, path);
}

/* chmod and chown (chattr), truncate, touch; then the attributes. */
static void
ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
           struct fuse_file_info *fi)
{
    Mount *m = begin(req);
    char path[PATH_BUF];
    int rc = ino_path(m, ino, path);
    if (!rc && (to_set & FUSE_SET_ATTR_MODE))
        rc = chattr(path, attr->st_mode & 07777, -1, -1);
    if (!rc && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
        rc = chattr(path, -1, to_set & FUSE_SET_ATTR_UID ? (int64_t)attr->st_uid : -1,
                    to_set & FUSE_SET_ATTR_GID ? (int64_t)attr->st_gid : -1);
    if (!rc && (to_set & FUSE_SET_ATTR_SIZE)) {
        if (fi)
            handle_truncate(handle_of(fi), attr->st_size);
        else
            rc = qfs_truncate(path, attr->st_size);
    }
    if (!rc && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)))
        rc = qfs_utimens(path);
    reply_attr(req, rc, ino, path);
}

/* Opens inode "ino" with "open_path" (qfs_open, qfs_opendir) and replies
 * with the handle in "fi"; "undo" closes it again when the caller gave up. */
static void
open_ino(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
         int (*open_path)(const char *path, struct fuse_file_info *fi),
         void (*undo)(struct fuse_file_info *))
{
    Mount *m = begin(req);
    char path[PATH_BUF];
    int rc = ino_path(m, ino, path);
    if (!rc)
        rc = open_path(path, fi);
    if (rc == OPEN_FILED)
        return;   /* the mount's waiters answer it */
    if (rc)
        fuse_reply_err(req, -rc);
    else if (fuse_reply_open(req, fi) != 0)
        undo(fi);
}

static void
ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    open_ino(req, ino, fi, qfs_opendir, dir_handle_free);
}

/* READDIR, and READDIRPLUS when "plus": the entries of "ino" from offset
 * "off".  Lookups counted for entries the kernel does not get (an error,
 * or the caller gave up) are forgotten again. */
static void
read_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
         bool plus)
{
    Mount *m = begin(req);
    char path[PATH_BUF];
    DirReply out = {req, xmalloc(size), size, 0, plus, ino, {0}, NULL, 0, 0};
    int rc = ino_path(m, ino, path);
    if (!rc)
        rc = qfs_readdir(path, &out, off, fi);
    if (rc)
        fuse_reply_err(req, -rc);
    if (rc || fuse_reply_buf(req, out.data, out.used) != 0)
        for (size_t i = 0; i < out.ninos; i++)
            nodes_forget(m->nodes, out.inos[i], 1);
    free(out.inos);
    free(out.data);
}

static void
ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    read_dir(req, ino, size, off, fi, false);
}

/* The entries with their attributes, so that ls -l and the like need no
 * request per name beyond the kernel's own LOOKUP of what it has dropped. */
static void
ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
               struct fuse_file_info *fi)
{
    read_dir(req, ino, size, off, fi, true);
}

static void
ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    begin(req);
    dir_handle_free(fi);
    fuse_reply_err(req, 0);
}

static void
ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    Mount *m = begin(req);
    char path[PATH_BUF];
    struct fuse_entry_param e;
    int rc = child_path(m, parent, name, path);
    if (!rc)
        rc = qfs_mkdir(path, mode);
    if (!rc)
        rc = find_entry(m, parent, name, path, &e);
    reply_entry(m, req, rc, &e);
}

/* Replies to a removal of "name" from "parent" that ended "rc": a name
 * removed no longer has its inode. */
static void
reply_removed(const Mount *m, fuse_req_t req, int rc, fuse_ino_t parent, const char *name)
{
    if (!rc)
        nodes_detach(m->nodes, parent, name);
    fuse_reply_err(req, -rc);
}

/* Removes "name" from "parent" with "remove" (qfs_unlink, qfs_rmdir). */
static void
remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, int (*remove)(const char *path))
{
    Mount *m = begin(req);
    char path[PATH_BUF];
    int rc = child_path(m, parent, name, path);
    reply_removed(m, req, rc ? rc : remove(path), parent, name);
}

static void
ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, qfs_rmdir);
}

static void
ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    remove_name(req, parent, name, qfs_unlink);
}

/* A release moves a record's name into released/ for the kernel; the
 * record keeps its name, which gets a new inode at its next lookup.  A
 * table's directory moves with its table: its inode (and what the kernel
 * keeps under it) names the new name from now on. */
static void
ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
          const char *new_name, unsigned int flags)
{
    Mount *m = begin(req);
    char from[PATH_BUF], to[PATH_BUF];
    int rc = child_path(m, parent, name, from);
    if (!rc)
        rc = child_path(m, new_parent, new_name, to);
    if (!rc && path_parse(from).kind == P_TABLE) {
        rc = qfs_rename(from, to, flags);
        if (!rc)
            nodes_rename(m->nodes, parent, name, new_parent, new_name);
        fuse_reply_err(req, -rc);
        return;
    }
    reply_removed(m, req, rc ? rc : qfs_rename(from, to, flags), parent, name);
}

static void
ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    open_ino(req, ino, fi, qfs_open, file_handle_free);
}

static void
ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
          struct fuse_file_info *fi)
{
    Mount *m = begin(req);
    char path[PATH_BUF];
    struct fuse_entry_param e;
    int rc = child_path(m, parent, name, path);
    if (!rc && !(rc = qfs_create(path, mode, fi)) && (rc = find_entry(m, parent, name, path, &e)))
        file_handle_free(fi);
    if (rc) {
        fuse_reply_err(req, -rc);
    } else if (fuse_reply_create(req, &e, fi) != 0) {
        nodes_forget(m->nodes, e.ino, 1);
        file_handle_free(fi);
    }
}

static void
ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)ino;
    begin(req);
    reply_read(req, handle_of(fi), size, off, fi->flags);
}

static void
ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
         struct fuse_file_info *fi)
{
    (void)ino;
    begin(req);
    int rc = qfs_write(handle_of(fi), buf, size, off);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_write(req, (size_t)rc);
}

static void
ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    begin(req);
    fuse_reply_err(req, -qfs_flush(handle_of(fi)));
}

static void
ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    begin(req);
    file_handle_free(fi);
    fuse_reply_err(req, 0);
}

static void
ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    Mount *m = begin(req);
    struct statvfs sv;
    if (statvfs(m->store_path, &sv) < 0) {
        fuse_reply_err(req, errno);
        return;
    }
    sv.f_namemax = 255;
    fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops operations = {
    .init = ll_init,
    .lookup = ll_lookup,
    .forget = ll_forget,
    .forget_multi = ll_forget_multi,
    .getattr = ll_getattr,
    .setattr = ll_setattr,
    .mkdir = ll_mkdir,
    .unlink = ll_unlink,
    .rmdir = ll_rmdir,
    .rename = ll_rename,
    .open = ll_open,
    .read = ll_read,
    .write = ll_write,
    .flush = ll_flush,
    .release = ll_release,
    .opendir = ll_opendir,
    .readdir = ll_readdir,
    .readdirplus = ll_readdirplus,
    .releasedir = ll_releasedir,
    .statfs = ll_statfs,
    .create = ll_create,
};

const struct fuse_lowlevel_ops *
queuefs_operations(void)
{
    return &operations;
}

WaitServe
queuefs_wait_serve(void)
{
    return wait_serve;
}
