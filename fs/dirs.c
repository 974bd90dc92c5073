/* dirs.c — directories (handlers.h): opening and listing them (READDIR, and
 * READDIRPLUS with each entry's attributes), and mkdir and rmdir of a
 * table.
 *
 *   /                     ctl, metrics and one directory per table
 *   /T/                   the table's records, and nothing else: its
 *                         reserved names (claim, wait, new, …) resolve when
 *                         named but are never listed, so tools that walk or
 *                         glob the tree never open one (SPEC section 2)
 *   /T/held/              ID~N for each record held now, N its hold's number
 *   /T/dead/              the records at the ATTEMPTS ceiling
 *   /T/released/          always empty: a rename target */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "handlers.h"

/* A reply to READDIR or READDIRPLUS being filled: at most "size" bytes of
 * entries. */
typedef struct DirReply {
    fuse_req_t req;
    char *data;
    size_t size;
    size_t used;
    bool plus;          /* READDIRPLUS: each entry with its attributes */
    fuse_ino_t ino;     /* the directory (plus) */
    LangTableInfo info; /* its table's, for its records' attributes (plus) */
    uint64_t *inos;     /* the lookups the entries count (plus), to undo */
    size_t ninos, cap;
} DirReply;

/* The entry of "name" for READDIRPLUS into "e", counting one lookup (as
 * LOOKUP of it would): a record's from the listing ("key" and "rs"), with
 * the same timeouts, anything else's by fs_entry_find; "." and "..", and a
 * name that is gone, get none. */
static void
dir_entry_plus(DirReply *r, const char *name, const Value *key, const LangRecordStat *rs,
               struct fuse_entry_param *e)
{
    memset(e, 0, sizeof *e);
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return; /* the kernel links neither */
    Inode in;
    if (rs) {
        in.kind = KIND_RECORD;
        fs_inode_set_name(&in, name);
        in.key = *key; /* borrowed: the table copies what it keeps */
        in.fence = 0;
        fs_entry_listed(r->req, r->ino, &in, &r->info, rs, e);
    } else if (fs_inode_child(r->req, r->ino, name, &in) == 0) {
        if (fs_entry_find(r->req, r->ino, &in, e))
            memset(e, 0, sizeof *e);
        fs_inode_clear(&in);
    }
}

/* Adds entry "name" (its type from "mode"), after which a READDIR goes on
 * at offset "next"; to a READDIRPLUS reply with its attributes — those of
 * record "key" that shows "*rs" when "rs" is given.  1 when the reply is
 * full (the entry is not in it). */
static int
dir_add(DirReply *r, const char *name, mode_t mode, off_t next, const Value *key,
        const LangRecordStat *rs)
{
    size_t room = r->size - r->used;
    if (!r->plus) {
        /* As for every name it lists, the kernel asks for the inode by a
         * lookup; a directory entry carries no number (FUSE_UNKNOWN_INO). */
        struct stat st = {.st_ino = 0xffffffff, .st_mode = mode};
        size_t need = fuse_add_direntry(r->req, r->data + r->used, room, name, &st, next);
        if (need > room)
            return 1;
        r->used += need;
        return 0;
    }
    if (fuse_add_direntry_plus(r->req, NULL, 0, name, NULL, 0) > room)
        return 1;
    struct fuse_entry_param e;
    dir_entry_plus(r, name, key, rs, &e);
    if (!e.ino) {
        memset(&e, 0, sizeof e);
        e.attr.st_ino = 0xffffffff;
        e.attr.st_mode = mode;
    }
    r->used += fuse_add_direntry_plus(r->req, r->data + r->used, room, name, &e, next);
    if (e.ino) {
        if (r->ninos == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 64;
            r->inos = lang_xrealloc(r->inos, r->cap * sizeof *r->inos);
        }
        r->inos[r->ninos++] = e.ino;
    }
    return 0;
}

typedef struct DirFill {
    DirReply *out;
    off_t next_off; /* the offset of the entry after the last one given */
    off_t skip;     /* records still to pass over (a seek) */
    Value last;     /* the last record given */
} DirFill;

/* What readdir keeps between calls on one open directory: where the last
 * call stopped, so the next continues from that record in O(log n). */
typedef struct DirHandle {
    off_t next_off;
    Value last;
} DirHandle;

/* A record's entry; "hold" (> 0) names it ID~N in held/; "rs" (may be
 * NULL) is what its file shows, when known. */
static int
fill_entry(DirFill *d, const Value *key, int64_t hold, const LangRecordStat *rs)
{
    if (d->skip > 0) {
        d->skip--;
        return 0;
    }
    Buf name = {0};
    fs_name_from_key(key, &name);
    if (hold > 0)
        lang_buf_printf(&name, "~%lld", (long long)hold);
    int full = dir_add(d->out, name.data, S_IFREG, d->next_off + 1, key, rs);
    lang_buf_free(&name);
    if (full)
        return 1;
    d->next_off++;
    lang_value_free(&d->last);
    d->last = lang_value_clone(key);
    return 0;
}

static int
fill_record(void *ctx, const Value *key)
{
    return fill_entry(ctx, key, 0, NULL);
}

/* A record's entry with its size and times, from a listing that read it. */
static int
fill_listed(void *ctx, const Value *key, const LangRecordStat *rs)
{
    return fill_entry(ctx, key, 0, rs);
}

/* A held/ entry: ID~N, N the hold's number. */
static int
fill_held(void *ctx, const Value *key, int64_t hold)
{
    return fill_entry(ctx, key, hold, NULL);
}

static int
fill_table(void *ctx, const char *name)
{
    DirFill *d = ctx;
    if (d->next_off++ < d->skip)
        return 0;
    return dir_add(d->out, name, S_IFDIR, d->next_off, NULL, NULL);
}

void
fs_dir_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    Inode in;
    int rc = fs_inode_get(req, ino, &in);
    if (!rc) {
        InodeKind k = in.kind;
        if (k != KIND_ROOT && k != KIND_TABLE && k != KIND_RELEASED && k != KIND_HELD &&
            k != KIND_DEAD && k != KIND_DONE && k != KIND_BLOCKED)
            rc = -ENOTDIR;
        else if (k != KIND_ROOT)
            rc = fs_table_check(req, &in, NULL);
        fs_inode_clear(&in);
    }
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    DirHandle *dh = lang_xcalloc(1, sizeof *dh);
    fi->fh = (uint64_t)(uintptr_t)dh;
    if (fuse_reply_open(req, fi) != 0)
        free(dh); /* the caller gave up */
}

void
fs_dir_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    DirHandle *dh = (DirHandle *)(uintptr_t)fi->fh;
    if (dh) {
        lang_value_free(&dh->last);
        free(dh);
    }
    fuse_reply_err(req, 0);
}

/* Fills "out" with the entries of directory "in" from offset "offset",
 * continuing where the last call on "dh" stopped when it can. */
static int
dir_fill(const Inode *in, DirReply *out, off_t offset, DirHandle *dh)
{
    fuse_req_t req = out->req;
    DirFill d = {out, offset, 0, {0}};
    LangError err = {0};
    int rc = 0;

    /* The fixed entries take offsets 1 to nfixed. */
    const char *fixed[4] = {".", ".."};
    bool fixed_dir[4] = {true, true};
    size_t nfixed = 2;
    if (in->kind == KIND_ROOT) {
        fixed[nfixed++] = "ctl";
        fixed[nfixed++] = "metrics";
    } else if (in->kind == KIND_TABLE && (rc = fs_table_check(req, in, &out->info))) {
        return rc;
    }
    for (size_t i = (size_t)offset; i < nfixed; i++) {
        if (dir_add(out, fixed[i], fixed_dir[i] ? S_IFDIR : S_IFREG, (off_t)i + 1, NULL, NULL))
            return 0;
        d.next_off = (off_t)i + 1;
    }
    if (offset > (off_t)nfixed && in->kind != KIND_TABLE) {
        d.skip = offset - (off_t)nfixed; /* views are small: count from the start */
        d.next_off = (off_t)nfixed;
    }

    if (in->kind != KIND_ROOT && in->kind != KIND_HELD && in->kind != KIND_DEAD &&
        in->kind != KIND_DONE && in->kind != KIND_BLOCKED && in->kind != KIND_TABLE)
        return 0; /* released/ is always empty */
    LangSession *s = fs_session(req);
    if (in->kind == KIND_ROOT) {
        d.skip = offset > (off_t)nfixed ? offset : (off_t)nfixed;
        d.next_off = (off_t)nfixed;
        rc = fs_finish(req, s, lang_view_tables(s, fill_table, &d, &err), &err);
    } else if (in->kind == KIND_HELD) {
        rc = fs_finish(req, s, lang_view_held(s, in->table, fill_held, &d, &err), &err);
    } else if (in->kind == KIND_DEAD) {
        rc = fs_finish(req, s, lang_view_dead(s, in->table, fill_record, &d, &err), &err);
    } else if (in->kind == KIND_DONE) {
        rc = fs_finish(req, s, lang_view_done(s, in->table, fill_record, &d, &err), &err);
    } else if (in->kind == KIND_BLOCKED) {
        rc = fs_finish(req, s, lang_view_blocked(s, in->table, fill_record, &d, &err), &err);
    } else {
        const Value *after = NULL;
        if (offset > (off_t)nfixed) {
            if (dh && dh->next_off == offset && dh->last.kind != VAL_NONE) {
                after = &dh->last; /* continue where the last call stopped */
            } else {
                d.skip = offset - (off_t)nfixed; /* a seek: count from the start */
                d.next_off = (off_t)nfixed;
            }
        }
        /* READDIRPLUS reads the records' sizes in the same walk. */
        rc = out->plus
                 ? fs_finish(req, s,
                             lang_view_listing(s, in->table, after, fill_listed, &d, NULL, &err),
                             &err)
                 : fs_finish(req, s, lang_view_keys(s, in->table, after, fill_record, &d, &err),
                             &err);
        if (dh && d.last.kind != VAL_NONE) {
            lang_value_free(&dh->last);
            dh->last = d.last;
            dh->next_off = d.next_off;
            d.last = lang_value_none();
        }
    }
    lang_value_free(&d.last);
    return rc;
}

/* READDIR, and READDIRPLUS when "plus": the entries of "ino" from offset
 * "off".  Lookups counted for entries the kernel does not get (an error,
 * or the caller gave up) are forgotten again. */
static void
dir_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi,
         bool plus)
{
    DirReply out = {req, lang_xmalloc(size), size, 0, plus, ino, {0}, NULL, 0, 0};
    Inode in;
    int rc = fs_inode_get(req, ino, &in);
    if (!rc) {
        rc = dir_fill(&in, &out, off, (DirHandle *)(uintptr_t)fi->fh);
        fs_inode_clear(&in);
    }
    if (rc)
        fuse_reply_err(req, -rc);
    if (rc || fuse_reply_buf(req, out.data, out.used) != 0)
        for (size_t i = 0; i < out.ninos; i++)
            fs_nodes_forget(fs_mount(req)->nodes, out.inos[i], 1);
    free(out.inos);
    free(out.data);
}

void
fs_dir_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    dir_read(req, ino, size, off, fi, false);
}

/* The entries with their attributes, so that ls -l and the like need no
 * request per name beyond the kernel's own LOOKUP of what it has dropped. */
void
fs_dir_readplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    dir_read(req, ino, size, off, fi, true);
}

/* mkdir of a table defines a collection; nothing else can be made. */
void
fs_dir_make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    Inode in;
    struct fuse_entry_param e;
    int rc = fs_inode_child(req, parent, name, &in);
    if (rc) {
        fuse_reply_err(req, -rc);
        return;
    }
    if (in.kind != KIND_TABLE) {
        rc = in.kind == KIND_CTL ? -EEXIST : -EPERM;
    } else {
        LangSession *s = fs_session(req);
        LangError err = {0};
        rc = fs_finish(req, s, lang_view_mkdir(s, in.table, mode, &err), &err);
    }
    if (!rc)
        rc = fs_entry_find(req, parent, &in, &e);
    fs_inode_clear(&in);
    fs_entry_reply(req, rc, &e);
}

/* rmdir of a table drops it, when it holds no record. */
void
fs_dir_remove(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    Inode in;
    int rc = fs_inode_child(req, parent, name, &in);
    if (!rc) {
        if (in.kind != KIND_TABLE) {
            rc = in.kind == KIND_CTL ? -ENOTDIR : -EPERM;
        } else {
            LangSession *s = fs_session(req);
            LangError err = {0};
            rc = fs_finish(req, s, lang_view_rmdir(s, in.table, &err), &err);
        }
        fs_inode_clear(&in);
    }
    fs_removed_reply(req, rc, parent, name);
}
