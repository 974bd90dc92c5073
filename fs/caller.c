/* caller.c — who makes a request: the caller's ids, the session that acts
 * for them, what their operation met as an errno, and whether they gave
 * up (handlers.h).  Everything here is asked of the request a handler holds,
 * passed to it explicitly. */
#include <signal.h>
#include <stdio.h>

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

/* The signals whose default action ends a process (stopping ones and
 * those ignored by default excluded), as /proc's masks number them. */
#define SIG_BIT(n) (1ull << ((n)-1))
#define DEADLY_SIGNALS \
    (~0ull & ~(SIG_BIT(SIGCHLD) | SIG_BIT(SIGCONT) | SIG_BIT(SIGURG) | SIG_BIT(SIGWINCH) | \
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

bool
fs_request_abandoned(void *req)
{
    return fuse_req_interrupted(req) != 0 || caller_dying(req);
}
