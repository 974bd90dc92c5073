/* files.c — open files (handlers.h): what opening each kind of file does and
 * what its reads and writes then serve.
 *
 *   ctl                   a session (ctl.c): statements in, results out;
 *                         claims whose answers nobody read go back
 *   metrics, T/stats      a snapshot of the figures, taken at open
 *   T/claim               open() claims the head; reads serve that claim
 *   T/wait                the same, waiting (filed with the mount's
 *                         waiters, holding no thread) until something is
 *                         claimable; a claim nobody read goes back
 *   T/new                 each complete line written is one new record
 *   T/ID                  read: a snapshot, never a claim; written: the
 *                         content is stored at the write that completes
 *                         its object, or at close
 *   T/held/ID~N, T/dead/ID  a snapshot of the record, when the name's
 *                         fence holds
 *   T/released/ID[~N][@WHEN]  written: the reason the record is released
 *                         with at close (RELEASE … BECAUSE), as mv to that
 *                         name releases it
 *
 * Every file is direct_io (sizes are not known in advance). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "content.h"
#include "ctl.h"
#include "handlers.h"
#include "waiters.h"
#include "claimed.h"
#include "names.h"

/* ---- records being created ----
 * Named "TABLE/NAME": a table's name holds no '/'. */

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static char **pending;
static size_t npending;

/* Room for the name a record is pending under. */
#define PENDING_NAME_MAX (INODE_TABLE_MAX + INODE_NAME_MAX)

#define RELEASED_DIR "released/"

/* The name record "in" is pending under, into "out": "TABLE/NAME", or
 * for a released/ name being written "TABLE/released/NAME" (an identity's
 * name holds no '/'). */
static const char *
pending_name(const Inode *in, char out[PENDING_NAME_MAX + sizeof RELEASED_DIR])
{
    size_t table = strnlen(in->table, INODE_TABLE_MAX - 1);
    size_t name = strnlen(in->name, INODE_NAME_MAX - 1);
    const char *dir = in->kind == KIND_RELEASED_ENTRY ? RELEASED_DIR : "";
    snprintf(out, PENDING_NAME_MAX + sizeof RELEASED_DIR, "%.*s/%s%.*s", (int)table, in->table, dir,
             (int)name, in->name);
    return out;
}

/* The index of "name" in the pending list, or npending.  Called with the
 * lock held. */
static size_t
pending_find(const char *name)
{
    size_t i = 0;
    while (i < npending && strcmp(pending[i], name) != 0)
        i++;
    return i;
}

static void
pending_add(const char *name)
{
    pthread_mutex_lock(&pending_lock);
    pending = lang_xrealloc(pending, (npending + 1) * sizeof *pending);
    pending[npending++] = lang_xstrdup(name);
    pthread_mutex_unlock(&pending_lock);
}

static void
pending_remove(const char *name)
{
    pthread_mutex_lock(&pending_lock);
    size_t i = pending_find(name);
    if (i < npending) {
        free(pending[i]);
        pending[i] = pending[--npending];
    }
    pthread_mutex_unlock(&pending_lock);
}

bool
fs_pending_has(const Inode *in)
{
    char name[PENDING_NAME_MAX + sizeof RELEASED_DIR];
    pending_name(in, name);
    pthread_mutex_lock(&pending_lock);
    bool found = pending_find(name) < npending;
    pthread_mutex_unlock(&pending_lock);
    return found;
}

/* ---- handles ---- */

typedef enum HandleKind { H_CTL, H_SNAPSHOT, H_WRITE, H_NEW, H_REASON } HandleKind;

/* How much of a reason written to a released/ name is kept: its first
 * STORE_MAX_REASON bytes, and what it takes to see a final newline. */
#define REASON_KEPT (STORE_MAX_REASON + 2)

typedef struct Handle {
    HandleKind kind;
    pthread_mutex_t lock;
    char table[INODE_TABLE_MAX];
    Value key;        /* H_WRITE, H_REASON: the record */
    Value when;       /* H_REASON: NOT BEFORE (NONE: none) */
    int64_t fence;    /* H_REASON: the hold it releases (0: any) */
    char *pending;    /* H_WRITE made by create(): its pending name,
                                   until the content is stored; H_REASON: the
                                   released/ name, until the release */
    Buf data;         /* H_SNAPSHOT: what reads serve; H_WRITE: the content;
                                   H_NEW: a line not yet complete; H_REASON: the
                                   reason (REASON_KEPT bytes at most) */
    bool dirty;       /* H_WRITE: content to store at flush; H_REASON:
                                   the release is still to come: at the first
                                   flush after a write (a shell's redirection
                                   closes a copy of the file before writing),
                                   or at the last close when nothing was
                                   written */
    bool written;     /* H_REASON: a write came */
    bool exclusive;   /* H_WRITE: O_EXCL: an existing record is EEXIST */
    bool scanning;    /* H_WRITE: written in order so far, so "scan" knows
                                   what the content is: the write that completes
                                   the object stores it */
    ContentScan scan; /* H_WRITE: the shape of the content so far */
    CtlFile *ctl;
    Mount *mount;      /* with "undo" or "ctl": the mount that claimed */
    LangUnclaims undo; /* an open of wait: how to give its claim back */
    bool was_read;     /* with "undo": a read served the claimed record */
} Handle;

static Handle *
handle_new(HandleKind kind, const char *table)
{
    Handle *h = lang_xcalloc(1, sizeof *h);
    h->kind = kind;
    pthread_mutex_init(&h->lock, NULL);
    snprintf(h->table, sizeof h->table, "%s", table);
    return h;
}

/* Gives back the claim of an open of wait whose record nobody read: the
 * caller was killed or gave up between the open and the read (see
 * lang_view_unclaim). */
static void
give_back(Handle *h)
{
    if (fs_ctl_claims_unread(h->ctl))
        fs_claimed_forget(h->mount->claimed); /* its close gives them back */
    if (!h->undo.n || h->was_read)
        return;
    fs_claimed_forget(h->mount->claimed); /* it may be given back */
    LangSession *s = lang_session_new(h->mount->store, NULL, NULL);
    LangError err = {0};
    lang_view_unclaim(s, &h->undo, 0, &err);
    lang_session_free(s);
}

/* The record of "h" is stored or refused: its name is no longer pending. */
static void
pending_done(Handle *h)
{
    if (h->pending)
        pending_remove(h->pending);
    free(h->pending);
    h->pending = NULL;
}

static void
handle_free(Handle *h)
{
    give_back(h);
    lang_unclaims_truncate(&h->undo, 0);
    pending_done(h);
    lang_value_free(&h->key);
    lang_value_free(&h->when);
    lang_buf_free(&h->data);
    fs_ctl_close(h->ctl);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static Handle *
handle_of(const struct fuse_file_info *fi)
{
    return (Handle *)(uintptr_t)fi->fh;
}

/* Makes "h" the file of "fi": what reads and writes of it serve. */
static void
handle_attach(struct fuse_file_info *fi, Handle *h)
{
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->direct_io = 1;
    fi->nonseekable = h->kind != H_SNAPSHOT && h->kind != H_WRITE;
    /* A handle that cannot write has nothing for close() to store: the
     * kernel need not send FLUSH, a round trip a claim would wait for. */
    fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
}

/* ---- opening ---- */

/* Reads record "in" into a new snapshot handle. */
static int
open_snapshot(fuse_req_t req, const Inode *in, Handle **out)
{
    if (in->key.kind == VAL_NONE)
        return -ENOENT;
    Handle *h = handle_new(H_SNAPSHOT, in->table);
    LangSession *s = fs_session(req);
    LangError err = {0};
    int rc = fs_finish(
        req, s, lang_view_read(s, in->table, &in->key, in->fence, &h->data, NULL, NULL, &err),
        &err);
    if (rc) {
        handle_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

/* A handle that collects record "in"'s new content, stored at flush; a
 * record "created" is pending until then. */
static int
open_write(fuse_req_t req, const Inode *in, int flags, bool created, Handle **out)
{
    if (in->key.kind == VAL_NONE)
        return -EINVAL;
    Handle *h = handle_new(H_WRITE, in->table);
    h->key = lang_value_clone(&in->key);
    h->exclusive = created && (flags & O_EXCL);
    if (!created) {
        /* The record must exist; O_RDWR and O_APPEND start from its content
         * (with O_TRUNC, from nothing). */
        Buf json = {0};
        LangSession *s = fs_session(req);
        LangError err = {0};
        int rc = fs_finish(
            req, s, lang_view_read(s, in->table, &in->key, 0, &json, NULL, NULL, &err), &err);
        if (rc) {
            lang_buf_free(&json);
            handle_free(h);
            return rc;
        }
        if (((flags & O_ACCMODE) == O_RDWR || (flags & O_APPEND)) && !(flags & O_TRUNC))
            h->data = json;
        else
            lang_buf_free(&json);
    } else {
        char name[PENDING_NAME_MAX + sizeof RELEASED_DIR];
        h->pending = lang_xstrdup(pending_name(in, name));
        pending_add(h->pending);
    }
    h->scanning = true;
    fs_content_feed(&h->scan, h->data.data, h->data.len);
    *out = h;
    return 0;
}

/* A handle that collects the reason written to released/ name "in", the
 * record released with it at close (SPEC section 8).  The record must be
 * there, and held by hold N when the name says ~N: ENOENT otherwise, and
 * nothing changes.  The name is pending until the release, so that it is
 * a file meanwhile. */
static int
open_reason(fuse_req_t req, const Inode *in, Handle **out)
{
    char id[INODE_NAME_MAX];
    size_t len, id_len;
    Value when, key;
    int rc = fs_name_when(in->name, &len, &when);
    if (rc)
        return rc;
    snprintf(id, sizeof id, "%.*s", (int)len, in->name);
    int64_t fence = fs_name_fence(id, &id_len);
    id[id_len] = '\0';
    if (fs_name_to_key(id, &key) < 0) {
        lang_value_free(&when);
        return -ENOENT;
    }
    Buf json = {0};
    LangTableInfo info;
    LangSession *s = fs_session(req);
    LangError err = {0};
    rc = fs_finish(req, s, lang_view_read(s, in->table, &key, fence, &json, &info, NULL, &err),
                   &err);
    lang_buf_free(&json);
    if (!rc && when.kind != VAL_NONE && !info.has_delay)
        rc = -EOPNOTSUPP; /* NoDelayField: the queue declares no NOT BEFORE */
    if (rc) {
        lang_value_free(&when);
        lang_value_free(&key);
        return rc;
    }
    Handle *h = handle_new(H_REASON, in->table);
    h->key = key;
    h->when = when;
    h->fence = fence;
    h->dirty = true;
    char name[PENDING_NAME_MAX + sizeof RELEASED_DIR];
    h->pending = lang_xstrdup(pending_name(in, name));
    pending_add(h->pending);
    *out = h;
    return 0;
}

/* True when "text" of "len" bytes is UTF-8 text (no NUL) as far as it
 * goes: whole, or whole but for a character its last bytes begin. */
static bool
reason_text_so_far(const char *text, size_t len)
{
    if (memchr(text, '\0', len))
        return false;
    if (lang_utf8_valid(text, len))
        return true;
    /* The start of a character whose other bytes are still to come: its
     * lead byte says how many it has, and fewer follow. */
    const unsigned char *p = (const unsigned char *)text;
    size_t lead = len;
    while (lead > 0 && len - lead < 3 && (p[lead - 1] & 0xc0) == 0x80)
        lead--;
    if (lead == 0 || p[lead - 1] < 0xc2 || p[lead - 1] > 0xf4)
        return false;
    size_t need = p[lead - 1] >= 0xf0 ? 4 : p[lead - 1] >= 0xe0 ? 3 : 2;
    return len - lead + 1 < need && lang_utf8_valid(text, lead - 1);
}

/* Releases the record of reason handle "h" (its lock held) with the
 * reason written: a final newline dropped, its first STORE_MAX_REASON
 * bytes kept (cut where a character begins); EINVAL when it is not UTF-8
 * text.  Released or refused, it is not released again. */
static int
reason_release(fuse_req_t req, Handle *h)
{
    h->dirty = false;
    pending_done(h);
    Buf *why = &h->data;
    if (why->len && why->data[why->len - 1] == '\n')
        why->data[--why->len] = '\0';
    if (why->len > STORE_MAX_REASON) {
        why->data[STORE_MAX_REASON] = '\0';
        lang_utf8_cut(why->data, STORE_MAX_REASON);
        why->len = strlen(why->data);
    }
    if (why->len && !lang_utf8_valid(why->data, why->len))
        return -EINVAL;
    LangSession *s = fs_session(req);
    LangError err = {0};
    return fs_finish(req, s,
                     lang_view_release(s, h->table, &h->key, &h->when, h->fence,
                                       why->len ? why->data : NULL, &err),
                     &err);
}

/* What open_inode returns for an open it has filed to answer later. */
#define OPEN_FILED 1

/* Claims for an open of T/wait by "req" as "s" (freed), into a handle
 * that gives the claim back when nobody reads it: 0 with "*out" (NULL
 * when nothing was claimable), or -errno. */
static int
wait_claim(fuse_req_t req, LangSession *s, const char *table, Handle **out)
{
    Handle *h = handle_new(H_SNAPSHOT, table);
    h->mount = fs_mount(req);
    LangError err = {0};
    LangClaimed told = {0};
    int rc = fs_finish(req, s, lang_view_claim_undoable(s, table, &h->data, &h->undo, &told, &err),
                       &err);
    if (rc || !h->data.len) {
        handle_free(h);
        h = NULL;
    } else {
        fs_claimed_note(h->mount->claimed, table, fs_caller(req).uid, &told);
    }
    lang_claimed_clear(&told);
    *out = h;
    return rc;
}

/* Serves a filed open of wait (WaitServe, on the mount's wait thread). */
static bool
wait_serve(Mount *m, const WaitCall *c, atomic_bool *interrupted)
{
    Handle *h;
    int rc = wait_claim(c->req, fs_session_as(m, &c->who), c->table, &h);
    if (!rc && !h)
        return false;
    if (!rc && (atomic_load(interrupted) || fuse_req_interrupted(c->req))) {
        handle_free(h); /* gives the claim back */
        rc = -EINTR;
    }
    if (rc) {
        fuse_reply_err(c->req, -rc);
        return true;
    }
    struct fuse_file_info fi = c->fi;
    handle_attach(&fi, h);
    if (fuse_reply_open(c->req, &fi) != 0)
        handle_free(h); /* the caller gave up: the claim goes back */
    return true;
}

WaitServe
fs_wait_serve(void)
{
    return wait_serve;
}

/* Claims for an open of T/wait: at once with O_NONBLOCK (EAGAIN when
 * nothing is claimable); else at once when something is claimable, or
 * files the request with the mount's waiters (OPEN_FILED: answered later,
 * holding no thread).  What the claim would refuse (no such queue, no
 * permission) is refused at once. */
static int
open_wait(fuse_req_t req, const Inode *in, const struct fuse_file_info *fi, Handle **out)
{
    Mount *m = fs_mount(req);
    for (int tries = 0;; tries++) {
        uint64_t seen = store_changes(m->store);
        LangSession *s = fs_session(req);
        LangError err = {0};
        bool yes = true;
        int64_t next_wake = INT64_MAX;
        if (!(fi->flags & O_NONBLOCK) && lang_view_claimable(s, in->table, &yes, &next_wake, &err))
            return fs_finish(req, s, err.code, &err);
        if (yes && ((fi->flags & O_NONBLOCK) || tries < 3)) {
            int rc = wait_claim(req, s, in->table, out);
            if (rc || *out)
                return rc;
            if (fi->flags & O_NONBLOCK)
                return -EAGAIN;
            continue; /* another claim got there first: look again */
        }
        lang_session_free(s);
        WaitCall c = {req, *fi, in->table, fs_caller(req)};
        int rc = fs_waiters_file(m->waiters, &c, seen, next_wake);
        return rc ? rc : OPEN_FILED;
    }
}

/* A snapshot of the queue's figures (stats), or every queue's and the
 * mount's own (metrics). */
static int
open_figures(fuse_req_t req, const Inode *in, Handle **out)
{
    Handle *h = handle_new(H_SNAPSHOT, in->table);
    LangSession *s = fs_session(req);
    LangError err = {0};
    bool metrics = in->kind == KIND_METRICS;
    int rc = fs_finish(req, s,
                       metrics ? lang_view_metrics(s, &h->data, &err)
                               : lang_view_stats(s, in->table, &h->data, &err),
                       &err);
    if (rc) {
        handle_free(h);
        return rc;
    }
    if (metrics)
        lang_buf_printf(
            &h->data,
            "# HELP queuefs_mount_inodes Files and directories of this mount the kernel holds.\n"
            "# TYPE queuefs_mount_inodes gauge\n"
            "queuefs_mount_inodes %zu\n",
            fs_nodes_count(fs_mount(req)->nodes));
    *out = h;
    return 0;
}

/* Opens "in" as "fi" asks into "*out": 0, OPEN_FILED, or -errno. */
static int
open_inode(fuse_req_t req, const Inode *in, const struct fuse_file_info *fi, Handle **out)
{
    Mount *m = fs_mount(req);
    int accmode = fi->flags & O_ACCMODE;
    int rc = 0;
    LangError err = {0};
    switch (in->kind) {
    case KIND_CLAIM:
    case KIND_WAIT:
    case KIND_STATS:
    case KIND_METRICS:
    case KIND_HELD_ENTRY:
    case KIND_DEAD_ENTRY:
    case KIND_DONE_ENTRY:
    case KIND_BLOCKED_ENTRY:
        /* What only reads (or claims by reading) opens for reading only. */
        if (accmode != O_RDONLY)
            return -EACCES;
        break;
    default: break;
    }
    switch (in->kind) {
    case KIND_CTL:
        *out = handle_new(H_CTL, in->table);
        (*out)->mount = m;
        (*out)->ctl = fs_ctl_open(m->store, m->consumer, m->instance, fs_request_interrupted,
                                  fs_request_abandoned);
        return 0;
    case KIND_CLAIM: {
        Handle *h = handle_new(H_SNAPSHOT, in->table);
        LangSession *s = fs_session(req);
        LangClaimed told = {0};
        if ((rc = fs_finish(req, s, lang_view_claim(s, in->table, &h->data, &told, &err), &err))) {
            handle_free(h);
            return rc;
        }
        fs_claimed_note(m->claimed, in->table, fs_caller(req).uid, &told);
        lang_claimed_clear(&told);
        *out = h;
        return 0;
    }
    case KIND_WAIT: return open_wait(req, in, fi, out);
    case KIND_STATS:
    case KIND_METRICS: return open_figures(req, in, out);
    case KIND_NEW:
        if ((rc = fs_table_check(req, in, NULL)))
            return rc;
        *out = handle_new(H_NEW, in->table);
        return 0;
    case KIND_RECORD:
        if (accmode == O_RDONLY)
            return open_snapshot(req, in, out);
        rc = open_write(req, in, fi->flags, false, out);
        /* Deleted elsewhere since the kernel looked it up: O_CREAT makes it
         * anew, as create() would have. */
        if (rc == -ENOENT && (fi->flags & O_CREAT) && !(rc = fs_table_check(req, in, NULL)))
            rc = open_write(req, in, fi->flags, true, out);
        return rc;
    case KIND_HELD_ENTRY:
    case KIND_DEAD_ENTRY:
    case KIND_DONE_ENTRY:
    case KIND_BLOCKED_ENTRY: return open_snapshot(req, in, out);
    case KIND_ROOT:
    case KIND_TABLE:
    case KIND_RELEASED:
    case KIND_HELD:
    case KIND_DEAD:
    case KIND_DONE:
    case KIND_BLOCKED: return -EISDIR;
    default: return -ENOENT;
    }
}

void
fs_file_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    Inode in;
    Handle *h = NULL;
    int rc = fs_inode_get(req, ino, &in);
    if (!rc) {
        rc = open_inode(req, &in, fi, &h);
        fs_inode_clear(&in);
    }
    if (rc == OPEN_FILED)
        return; /* the mount's waiters answer it */
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    handle_attach(fi, h);
    if (fuse_reply_open(req, fi) != 0)
        handle_free(h);
}

/* create() of "in": a new record's file, or the file of one that exists
 * (O_EXCL: EEXIST), into "*out". */
static int
create_inode(fuse_req_t req, const Inode *in, const struct fuse_file_info *fi, Handle **out)
{
    InodeKind k = in->kind;
    if (k == KIND_TOOLONG)
        return -ENAMETOOLONG;
    if (k == KIND_HELD_ENTRY || k == KIND_DEAD_ENTRY || k == KIND_DONE_ENTRY ||
        k == KIND_BLOCKED_ENTRY)
        return -ENOENT; /* a view's name that is gone (touch says so) */
    /* A collection has no claim, wait, stats or view directories, and none of
     * those names is an identity's (those are %63laim, …). */
    if (k != KIND_RECORD && k != KIND_NONE && k != KIND_RELEASED_ENTRY && k != KIND_TABLE &&
        k != KIND_NEW && fs_table_check(req, in, NULL) == -ENOENT)
        return -EINVAL;
    if (k == KIND_RELEASED_ENTRY)
        return open_reason(req, in, out);
    if (k != KIND_RECORD)
        return k == KIND_NONE ? -EPERM : -EEXIST;
    int rc = fs_table_check(req, in, NULL);
    if (rc)
        return rc;
    bool exists = fs_record_stat(req, in, NULL, NULL) == 0;
    if (exists && (fi->flags & O_EXCL))
        return -EEXIST;
    return open_write(req, in, fi->flags, !exists, out);
}

void
fs_file_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
               struct fuse_file_info *fi)
{
    (void)mode;
    Inode in;
    Handle *h = NULL;
    struct fuse_entry_param e;
    int rc = fs_inode_child(req, parent, name, &in);
    if (!rc) {
        if (!(rc = create_inode(req, &in, fi, &h)) && (rc = fs_entry_find(req, parent, &in, &e)))
            handle_free(h);
        fs_inode_clear(&in);
    }
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    handle_attach(fi, h);
    if (fuse_reply_create(req, &e, fi) != 0) {
        fs_nodes_forget(fs_mount(req)->nodes, e.ino, 1);
        handle_free(h);
    }
}

/* ---- reading ---- */

/* What a write to "h" (or a read of ctl, which goes on with its session's
 * statements) may change of what the mount remembers of claims: forgotten
 * before the request and again after it (a claim noted meanwhile, by
 * another thread, may be of what the request changes). */
static void
request_forgets(fuse_req_t req, const Handle *h)
{
    if (h->kind == H_WRITE)
        fs_claimed_forget_record(fs_mount(req)->claimed, h->table, &h->key);
    else
        fs_claimed_forget(fs_mount(req)->claimed);
}

/* Replies to a read of "size" bytes at "off".  What is sent is a copy
 * taken under the handle's lock: once the reply is out, the caller may
 * close the file and another thread free the handle while this one is
 * still in the reply's system call. */
void
fs_file_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)ino;
    Handle *h = handle_of(fi);
    char *copy = NULL;
    size_t n = 0;
    if (h->kind == H_CTL) {
        copy = lang_xmalloc(size);
        request_forgets(req, h);
        ssize_t got = fs_ctl_read(h->ctl, copy, size, (fi->flags & O_NONBLOCK) != 0, req);
        request_forgets(req, h);
        if (got < 0) {
            free(copy);
            fuse_reply_err(req, (int)-got);
            return;
        }
        n = (size_t)got;
    } else if (h->undo.n && !h->was_read && fs_request_abandoned(req)) {
        /* The first read of a claim, and its reader is being killed: it
         * would never see the record, which goes back at its close. */
        fuse_reply_err(req, EINTR);
        return;
    } else {
        pthread_mutex_lock(&h->lock);
        if (h->kind != H_NEW && (size_t)off < h->data.len) {
            n = h->data.len - (size_t)off < size ? h->data.len - (size_t)off : size;
            copy = lang_xmalloc(n);
            memcpy(copy, h->data.data + off, n);
            h->was_read = true; /* a claim read is the reader's: never given back */
        }
        pthread_mutex_unlock(&h->lock);
    }
    fuse_reply_buf(req, copy, n);
    free(copy);
}

/* ---- writing ---- */

/* Creates records of the "len" bytes of lines at the start of new
 * handle "h" (its lock held), in one transaction. */
static int
new_append(fuse_req_t req, Handle *h, size_t len)
{
    LangSession *s = fs_session(req);
    LangError err = {0};
    return fs_finish(req, s, lang_view_append(s, h->table, h->data.data, len, &err), &err);
}

/* Creates the records of the complete lines "new" holds, in one
 * transaction; on failure the write that brought them is undone. */
static int
new_write(fuse_req_t req, Handle *h, const char *buf, size_t size)
{
    size_t before = h->data.len;
    if (before + size > RECORD_MAX_BYTES && !memchr(buf, '\n', size))
        return -EFBIG; /* a line this long could never be stored */
    lang_buf_append(&h->data, buf, size);
    const char *last = memrchr(h->data.data, '\n', h->data.len);
    if (!last)
        return (int)size;
    size_t complete = (size_t)(last - h->data.data) + 1;
    int rc = new_append(req, h, complete);
    if (rc) {
        h->data.len = before; /* all of this write's lines, or none */
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
record_store_content(fuse_req_t req, Handle *h)
{
    LangSession *s = fs_session(req);
    LangError err = {0};
    h->dirty = false;
    int rc = fs_finish(req, s,
                       lang_view_write(s, h->table, &h->key, h->data.data ? h->data.data : "",
                                       h->data.len, h->exclusive, &err),
                       &err);
    pending_done(h);
    return rc;
}

/* A write at the end of what record handle "h" holds (its lock held): the
 * bytes that complete one object store it now, so this write() reports
 * what storing met; bytes that cannot begin an object, or that follow a
 * whole one, are refused (EINVAL) and change nothing.  Blanks after a
 * stored object are accepted and store nothing more. */
static int
record_write_in_order(fuse_req_t req, Handle *h, const char *buf, size_t size)
{
    ContentScan before = h->scan;
    switch (fs_content_feed(&h->scan, buf, size)) {
    case CONTENT_INVALID: h->scan = before; return -EINVAL;
    case CONTENT_COMPLETE:
        lang_buf_append(&h->data, buf, size);
        if (before.state == CONTENT_COMPLETE)
            return (int)size; /* blanks after the object */
        h->dirty = true;
        int rc = record_store_content(req, h);
        return rc ? rc : (int)size;
    default:
        lang_buf_append(&h->data, buf, size);
        h->dirty = true;
        return (int)size;
    }
}

/* A write of "size" bytes at "off" to handle "h": the count written, or
 * -errno. */
static int
handle_write_once(fuse_req_t req, Handle *h, const char *buf, size_t size, off_t off)
{
    if (h->kind == H_CTL) {
        Caller who = fs_caller(req);
        return (int)fs_ctl_write(h->ctl, buf, size, who.uid, who.gid, who.groups, who.ngroups,
                                 fs_mount(req)->enforce, req);
    }
    if (h->kind == H_SNAPSHOT)
        return -EBADF;
    pthread_mutex_lock(&h->lock);
    int rc = (int)size;
    if (h->kind == H_NEW) {
        rc = new_write(req, h, buf, size);
    } else if (h->kind == H_REASON) {
        size_t before = h->data.len;
        h->written = true;
        if (!h->dirty)
            rc = -EBADF; /* released already */
        else if (before < REASON_KEPT)
            lang_buf_append(&h->data, buf,
                            size < REASON_KEPT - before ? size : REASON_KEPT - before);
        if (rc > 0 && !reason_text_so_far(h->data.data, h->data.len)) {
            rc = -EINVAL; /* not text: refused, and the release with it */
            h->dirty = false;
            pending_done(h);
        }
    } else if ((size_t)off + size > RECORD_MAX_BYTES) {
        rc = -EFBIG; /* content this large could never be stored */
    } else if (h->scanning && (size_t)off == h->data.len) {
        rc = record_write_in_order(req, h, buf, size);
    } else {
        h->scanning = false; /* rewritten in place: stored at close */
        if ((size_t)off + size > h->data.len) {
            size_t grow = (size_t)off + size - h->data.len;
            char *zeros = lang_xcalloc(1, grow);
            lang_buf_append(&h->data, zeros, grow);
            free(zeros);
        }
        memcpy(h->data.data + off, buf, size);
        h->dirty = true;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

static int
handle_write(fuse_req_t req, Handle *h, const char *buf, size_t size, off_t off)
{
    request_forgets(req, h);
    int rc = handle_write_once(req, h, buf, size, off);
    request_forgets(req, h);
    return rc;
}

void
fs_file_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
              struct fuse_file_info *fi)
{
    (void)ino;
    int rc = handle_write(req, handle_of(fi), buf, size, off);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_write(req, (size_t)rc);
}

/* close() reports what storing the file's writes met: flush is the durable
 * step (release is asynchronous). */
void
fs_file_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    Handle *h = handle_of(fi);
    int rc = 0;
    pthread_mutex_lock(&h->lock);
    if (h->kind == H_WRITE && h->dirty) {
        rc = record_store_content(req, h);
    } else if (h->kind == H_NEW && h->data.len) {
        rc = new_append(req, h, h->data.len); /* a last line without its newline */
        lang_buf_reset(&h->data);
    } else if (h->kind == H_REASON && h->dirty && h->written) {
        rc = reason_release(req, h);
    }
    pthread_mutex_unlock(&h->lock);
    fuse_reply_err(req, -rc);
}

void
fs_file_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    Handle *h = handle_of(fi);
    if (h->kind == H_REASON && h->dirty)
        reason_release(req, h); /* nothing written: a release without a reason */
    handle_free(h);
    fuse_reply_err(req, 0);
}

int
fs_file_truncate(fuse_req_t req, const Inode *in, struct fuse_file_info *fi, off_t size)
{
    if (fi) {
        /* A record being written is cut; every other file ignores it. */
        Handle *h = handle_of(fi);
        pthread_mutex_lock(&h->lock);
        if ((h->kind == H_WRITE || h->kind == H_REASON) && (size_t)size < h->data.len) {
            h->data.len = (size_t)size;
            h->data.data[size] = '\0';
            h->dirty = true;
            /* Cut to nothing, the content starts again; cut elsewhere, it is
             * stored at close. */
            h->scanning = size == 0;
            memset(&h->scan, 0, sizeof h->scan);
        }
        pthread_mutex_unlock(&h->lock);
        return 0;
    }
    /* The content written through an open replaces the record at close. */
    switch (in->kind) {
    case KIND_CTL:
    case KIND_NEW: return size == 0 ? 0 : -EINVAL;
    case KIND_RECORD: return fs_pending_has(in) ? 0 : fs_record_stat(req, in, NULL, NULL);
    case KIND_ROOT:
    case KIND_TABLE:
    case KIND_RELEASED: return -EISDIR;
    default: return -EPERM;
    }
}
