/* main.c — queuefs: mount a store's queues as directories.
 *
 *     queuefs [-f] [-d] [-s] [-o OPTS] STORE MOUNTPOINT
 *
 * Runs in the background unless -f or -d, and returns only once the mount
 * answers requests (or with the reason it could not mount).  The store is
 * opened in the process that serves the mount: an LMDB environment must not
 * cross a fork(). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "mount.h"
#include "nodes.h"
#include "waiters.h"
#include "claimed.h"

typedef struct Options {
    char *consumer;
    char *sync;
    int help;
    int version;
    int bats_helper;
    int foreground;
    int debug;
    int single_thread;
    int permissions;
    char *store;
    char *mountpoint;
} Options;

enum {
    KEY_HELP,
    KEY_VERSION,
    KEY_FOREGROUND,
    KEY_DEBUG,
    KEY_SINGLE,
    KEY_PERMISSIONS,
    KEY_BATS_HELPER
};

static const struct fuse_opt option_spec[] = {
    {"consumer=%s", offsetof(Options, consumer), 0},
    {"sync=%s", offsetof(Options, sync), 0},
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    FUSE_OPT_KEY("-f", KEY_FOREGROUND),
    FUSE_OPT_KEY("-d", KEY_DEBUG),
    FUSE_OPT_KEY("debug", KEY_DEBUG),
    FUSE_OPT_KEY("-s", KEY_SINGLE),
    FUSE_OPT_KEY("--bats-helper", KEY_BATS_HELPER),
    FUSE_OPT_KEY("default_permissions", KEY_PERMISSIONS),
    FUSE_OPT_END,
};

static int
take_option(void *data, const char *arg, int key, struct fuse_args *args)
{
    (void)args;
    Options *o = data;
    switch (key) {
    case KEY_HELP: o->help = 1; return 0;
    case KEY_VERSION: o->version = 1; return 0;
    case KEY_BATS_HELPER: o->bats_helper = 1; return 0;
    case KEY_FOREGROUND: o->foreground = 1; return 0;
    case KEY_DEBUG: o->debug = o->foreground = 1; return 1; /* libfuse logs requests too */
    case KEY_SINGLE: o->single_thread = 1; return 0;
    case KEY_PERMISSIONS: o->permissions = 1; return 1; /* libfuse passes it on */
    case FUSE_OPT_KEY_NONOPT:
        if (!o->store) {
            o->store = lang_xstrdup(arg);
            return 0;
        }
        if (!o->mountpoint) {
            o->mountpoint = lang_xstrdup(arg);
            return 0;
        }
        fprintf(stderr, "queuefs: unexpected argument '%s'\n", arg);
        return -1;
    default: return 1;
    }
}

static void
usage(FILE *to)
{
    fputs("usage: queuefs [options] STORE MOUNTPOINT\n"
          "Mounts the queues of STORE (a directory holding the LMDB store, created\n"
          "when absent) at MOUNTPOINT: one directory per table, ctl for statements.\n"
          "\n"
          "  -o consumer=NAME   sign every hold taken through this mount's files\n"
          "  -o sync=full       a write is on disk when its system call returns (default)\n"
          "  -o sync=none       faster; a machine crash may lose the last writes\n"
          "  -o allow_other,default_permissions\n"
          "                     share the mount: each table's owner and mode decide\n"
          "                     who may read and change it, for files and ctl alike\n"
          "  -f                 stay in the foreground\n"
          "  -d                 foreground, logging every request\n"
          "  -s                 serve requests on one thread\n"
          "  -h, --help         this text, then libfuse's options\n"
          "  -V, --version      the version\n"
          "  --bats-helper      the path of the helper for users' bats suites\n"
          "\n"
          "Unmount with: fusermount3 -u MOUNTPOINT\n",
          to);
}

/* "path" made absolute against the working directory (the daemon leaves it). */
static char *
absolute(const char *path)
{
    char resolved[PATH_MAX];
    if (realpath(path, resolved))
        return lang_xstrdup(resolved);
    if (path[0] == '/')
        return lang_xstrdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return lang_xstrdup(path);
    Buf b = {0};
    lang_buf_printf(&b, "%s/%s", cwd, path);
    return lang_buf_steal(&b);
}

/* Tells the waiting parent why the mount failed ("what" and "detail"), and
 * exits. */
static void
fail_to_parent(int fd, const char *what, const char *detail)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "queuefs: %s%s", what, detail);
    if (fd >= 0) {
        ssize_t ignored = write(fd, msg, strlen(msg));
        (void)ignored;
    } else {
        fprintf(stderr, "%s\n", msg);
    }
    _exit(1);
}

/* Waits for the child to say the mount answers ("" ) or why it failed. */
static int
wait_for_child(int fd)
{
    char msg[1024];
    ssize_t n, total = 0;
    while (total < (ssize_t)sizeof msg - 1 &&
           (n = read(fd, msg + total, sizeof msg - 1 - (size_t)total)) > 0) {
        total += n;
        if (msg[0] == '\0')
            return 0;
    }
    msg[total] = '\0';
    fprintf(stderr, "%s\n", total ? msg : "queuefs: the mount process ended before mounting");
    return 1;
}

static void
detach_stdio(void)
{
    int null = open("/dev/null", O_RDWR);
    if (null < 0)
        return;
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2)
        close(null);
}

/* Decodes the \\ooo escapes /proc/self/mountinfo writes for blanks and
 * backslashes in place; always true. */
static bool
unescape_octal(char *s)
{
    char *out = s;
    for (const char *in = s; *in; out++) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' &&
            in[3] >= '0' && in[3] <= '7') {
            *out = (char)((in[1] - '0') << 6 | (in[2] - '0') << 3 | (in[3] - '0'));
            in += 4;
        } else {
            *out = *in++;
        }
    }
    *out = '\0';
    return true;
}

/* The store of the queuefs mount at "path" (absolute) when there is one,
 * from /proc/self/mountinfo (malloc'd), else NULL. */
static char *
queuefs_mounted_at(const char *path)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    while (!found && getline(&line, &cap, f) > 0) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS…] - TYPE SOURCE … */
        char point[PATH_MAX], type[64], source[PATH_MAX];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
            sscanf(dash + 3, "%63s %4095s", type, source) != 2)
            continue;
        if (strcmp(type, "fuse.queuefs") == 0 && unescape_octal(point) &&
            strcmp(point, path) == 0 && unescape_octal(source))
            found = lang_xstrdup(source);
    }
    free(line);
    fclose(f);
    return found;
}

/* True when "mountpoint" (absolute) is a directory queuefs may mount on;
 * else says why on stderr: not a directory, a dead mount (and the command
 * that clears it), or a queuefs mount already. */
static bool
mountpoint_usable(const char *mountpoint)
{
    struct stat st;
    if (stat(mountpoint, &st) < 0) {
        if (errno == ENOTCONN)
            fprintf(stderr,
                    "queuefs: %s is a dead mount (its daemon is gone: %s); clear it with\n"
                    "  fusermount3 -u %s\n",
                    mountpoint, strerror(errno), mountpoint);
        else
            fprintf(stderr, "queuefs: mount point %s: %s\n", mountpoint, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "queuefs: mount point %s is not a directory\n", mountpoint);
        return false;
    }
    char *store = queuefs_mounted_at(mountpoint);
    if (store) {
        fprintf(stderr,
                "queuefs: %s is a queuefs mount already (of %s); unmount it first:\n"
                "  fusermount3 -u %s\n",
                mountpoint, store, mountpoint);
        free(store);
        return false;
    }
    return true;
}

/* Mounts and serves until unmounted; returns the exit status.  In the
 * background, the parent returns once the child's mount answers. */
static int
run(struct fuse_args *args, const Options *o)
{
    StoreOptions store_opts = {.sync = true, .upgrade = lang_record_upgrade};
    if (o->sync && strcmp(o->sync, "none") == 0) {
        store_opts.sync = false;
    } else if (o->sync && strcmp(o->sync, "full") != 0) {
        fprintf(stderr, "queuefs: -o sync=%s: expected sync=full or sync=none\n", o->sync);
        return 2;
    }
    if (o->consumer && !*o->consumer) {
        fprintf(stderr, "queuefs: -o consumer= needs a name\n");
        return 2;
    }
    char *mountpoint = absolute(o->mountpoint);
    if (!mountpoint_usable(mountpoint)) {
        free(mountpoint);
        return 1;
    }
    Mount m = {0};
    bool server = store_location_is_server(o->store);
    m.store_path = server ? lang_xstrdup(o->store) : absolute(o->store);
    char shown[PATH_MAX];
    store_location_shown(m.store_path, shown, sizeof shown);
    m.store_shown = lang_xstrdup(shown);
    m.consumer = o->consumer;
    lang_instance_mint(m.instance);
    m.uid = getuid();
    m.gid = getgid();
    m.mounted_at = time(NULL);
    m.ready_fd = -1;
    m.enforce = o->permissions;
    /* /proc/mounts shows "STORE MOUNTPOINT fuse.queuefs" (a URI without its
     * password). */
    Buf name = {0};
    lang_buf_printf(&name, "subtype=queuefs,fsname=");
    char *escaped = NULL;
    fuse_opt_add_opt_escaped(&escaped, m.store_shown);
    lang_buf_puts(&name, escaped);
    free(escaped);
    fuse_opt_add_arg(args, "-o");
    fuse_opt_add_arg(args, name.data);
    lang_buf_free(&name);

    int status = 1;
    if (!o->foreground) {
        int pipefd[2];
        pid_t pid = -1;
        if (pipe(pipefd) < 0 || (pid = fork()) < 0) {
            perror("queuefs: starting the mount process");
            goto out;
        }
        if (pid > 0) {
            close(pipefd[1]);
            status = wait_for_child(pipefd[0]);
            goto out;
        }
        close(pipefd[0]);
        m.ready_fd = pipefd[1];
        setsid();
    }

    char msg[256] = "";
    int rc = store_open(m.store_path, &store_opts, &m.store, msg, sizeof msg);
    if (rc) {
        /* The store's message names the store already. */
        char detail[600];
        if (msg[0])
            snprintf(detail, sizeof detail, "%s", msg);
        else
            snprintf(detail, sizeof detail, "%s: %s", m.store_shown, store_strerror(rc));
        fail_to_parent(m.ready_fd, "cannot open store ", detail);
    }
    m.nodes = fs_nodes_new();
    m.claimed = fs_claimed_new();
    struct fuse_session *se =
        fuse_session_new(args, fs_operations(), sizeof(struct fuse_lowlevel_ops), &m);
    if (!se)
        fail_to_parent(m.ready_fd, "bad options (see queuefs --help)", "");
    m.session = se;
    if (fuse_session_mount(se, mountpoint) != 0)
        fail_to_parent(m.ready_fd, "cannot mount on ", mountpoint);
    if (fuse_set_signal_handlers(se) != 0)
        fail_to_parent(m.ready_fd, "cannot set signal handlers", "");
    if (!o->foreground) {
        if (chdir("/") < 0)
            fail_to_parent(m.ready_fd, "cannot leave the working directory", "");
        detach_stdio();
    }
    fs_log_open(o->foreground);
    FS_LOG(LOG_INFO, "serving the store %s at %s", m.store_shown, mountpoint);

    m.waiters = fs_waiters_new(&m, fs_wait_serve());
    if (fs_waiters_start(m.waiters) != 0)
        fail_to_parent(m.ready_fd, "cannot start the wait thread", "");
    fs_waiters_watch(m.waiters, mountpoint); /* without it a lazy unmount waits for the waiters */

    if (o->single_thread) {
        rc = fuse_session_loop(se);
    } else {
        struct fuse_loop_config *cfg = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(cfg, FS_MAX_THREADS);
        rc = fuse_session_loop_mt(se, cfg);
        fuse_loop_cfg_destroy(cfg);
    }
    bool signalled = fuse_session_exited(se); /* SIGTERM, SIGINT or an unmount */
    fs_waiters_stop(m.waiters);               /* no open of wait is left waiting */
    fuse_remove_signal_handlers(se);
    fuse_session_unmount(se);
    fuse_session_destroy(se);
    fs_waiters_free(m.waiters);
    fs_nodes_free(m.nodes);
    fs_claimed_free(m.claimed);
    store_close(m.store);
    status = rc && !signalled ? 1 : 0;
out:
    free(m.store_path);
    free(m.store_shown);
    free(mountpoint);
    return status;
}

int
main(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    Options o = {0};
    int status;
    if (fuse_opt_parse(&args, &o, option_spec, take_option) < 0) {
        status = 2;
    } else if (o.help) {
        usage(stdout);
        fuse_lowlevel_help();
        status = 0;
    } else if (o.version) {
        printf("queuefs %s (libfuse %s)\n", PACKAGE_VERSION, fuse_pkgversion());
        status = 0;
    } else if (o.bats_helper) {
        printf("%s/queuefs.bash\n", QUEUEFS_PKGDATADIR);
        status = 0;
    } else if (!o.store || !o.mountpoint) {
        fprintf(stderr,
                "queuefs: %s\n"
                "usage: queuefs [options] STORE MOUNTPOINT (queuefs --help for the options)\n",
                !o.store ? "no STORE and no MOUNTPOINT given" : "no MOUNTPOINT given");
        status = 2;
    } else {
        status = run(&args, &o);
    }
    fuse_opt_free_args(&args);
    free(o.store);
    free(o.mountpoint);
    free(o.consumer);
    free(o.sync);
    return status;
}
