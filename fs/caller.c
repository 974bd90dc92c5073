/* caller.c — who makes a request: the caller's ids, the session that acts
 * for them, what their operation met as an errno, and whether they gave
 * up (handlers.h).  Everything here is asked of the request a handler holds,
 * passed to it explicitly. */
#include "log.h"
#include "names.h"
#include "handlers.h"

Mount *
fs_mount(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

Caller
fs_caller(fuse_req_t req)
{
    const struct fuse_ctx *cx = fuse_req_ctx(req);
    Caller who = {.uid = cx->uid, .gid = cx->gid};
    gid_t groups[64];
    int n = fs_mount(req)->enforce ? fuse_req_getgroups(req, 64, groups) : 0;
    who.ngroups = n < 0 || n > 64 ? 0 : n;
    for (int i = 0; i < who.ngroups; i++)
        who.groups[i] = groups[i];
    return who;
}

LangSession *
fs_session_as(Mount *m, const Caller *who)
{
    LangSession *s = lang_session_new(m->store, m->consumer, m->instance);
    lang_session_set_caller(s, who->uid, who->gid, who->groups, who->ngroups, m->enforce);
    lang_session_set_name_rule(s, fs_table_name_rule, NULL);
    return s;
}

LangSession *
fs_session(fuse_req_t req)
{
    Caller who = fs_caller(req);
    return fs_session_as(fs_mount(req), &who);
}

int
fs_finish(fuse_req_t req, LangSession *s, LangErrorCode rc, const LangError *err)
{
    lang_session_free(s);
    if (rc == LANG_STORE_ERROR || rc == LANG_STORE_FULL)
        FS_LOG(LOG_ERR, "a file operation of uid %u met %s: %s", (unsigned)fuse_req_ctx(req)->uid,
               lang_error_name(rc),
               err->code == rc && err->message[0] ? err->message : "(no detail)");
    return rc ? -lang_error_errno(rc) : 0;
}

bool
fs_request_interrupted(void *req)
{
    /* The caller gave up (a signal), or the mount is ending (SIGTERM, an
     * unmount): either way nobody would read what it waits for. */
    return fuse_req_interrupted(req) != 0 || fuse_session_exited(fs_mount(req)->session) != 0;
}

int
fs_inode_get(fuse_req_t req, fuse_ino_t ino, Inode *out)
{
    return fs_nodes_get(fs_mount(req)->nodes, ino, out);
}

int
fs_inode_child(fuse_req_t req, fuse_ino_t parent, const char *name, Inode *out)
{
    return fs_nodes_child(fs_mount(req)->nodes, parent, name, out);
}
