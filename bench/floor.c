/* floor.c — bench/floor: the FUSE floor.  A file system with queuefs's
 * shape and settings that does no store work, so a worker's cycle through
 * it costs only the kernel, libfuse and the round trips.
 *
 *     bench/floor [--cache] [--unlink-us N] [--flush FILE] [-f] [-d] [-s] MOUNTPOINT
 *
 *   /jobs/            a directory, as a queue is
 *   /jobs/claim       every open hands out the next of 1, 2, 3 …: reads give
 *                     {"attempts":1,"claimed_until":"…","hold":N,"id":"jobs:N","n":N}
 *   /jobs/N           any decimal name exists (size 0); unlink succeeds
 *   /jobs/released/   rename of /jobs/N to /jobs/released/N succeeds
 *   /jobs/new         writes are accepted and dropped
 *
 * Settings as queuefs's: the low-level API, direct_io, the kernel keeping
 * the queue's directory for a second and its fixed names (claim, new,
 * released) for a day, records and attributes not at all, no absent
 * names; the multithreaded loop.  --cache lets the kernel keep records'
 * names and every attribute for a second too, to show what the lookups
 * left cost.  --unlink-us N makes every unlink take N µs, as an unlink that
 * waits for its commit to reach the disk does: it shows how the kernel
 * serialises unlinks in one directory.  --flush FILE makes every unlink
 * overwrite one 4 KiB block of FILE (created, removed at unmount) and
 * fdatasync it before it answers: a store that does nothing but the one
 * flush a durable finish needs, the most any store behind FUSE can
 * finish in one directory on this disk.  Returns once mounted (it
 * daemonizes after the mount); unmount with fusermount3 -u MOUNTPOINT. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_ulong next_id;
static double cache_seconds;         /* --cache: records' names and attributes kept */
static useconds_t unlink_us;         /* --unlink-us: how long an unlink takes */
static int flush_fd = -1;            /* --flush: the file every unlink makes durable */
static const char flush_block[4096]; /* what each flush writes over its first block */

/* The content of one open claim. */
typedef struct Claim {
    size_t len;
    char json[160];
} Claim;

/* True when "s" is a non-empty run of decimal digits. */
static int
is_number(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* The inodes: the fixed ones, and a record N's (N + INO_RECORD). */
enum { INO_ROOT = FUSE_ROOT_ID, INO_JOBS, INO_CLAIM, INO_NEW, INO_RELEASED, INO_RECORD = 16 };

/* The attributes of inode "ino"; 0 when it is none of the floor's. */
static int
stat_ino(fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_nlink = 1;
    if (ino == INO_ROOT || ino == INO_JOBS || ino == INO_RELEASED) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
    } else if (ino == INO_CLAIM) {
        st->st_mode = S_IFREG | 0444;
    } else if (ino == INO_NEW || ino >= INO_RECORD) {
        st->st_mode = S_IFREG | 0644;
    } else {
        return -1;
    }
    return 0;
}

/* jobs in the root; claim, new, released and any N in jobs. */
static void
floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param e = {0};
    if (parent == INO_ROOT && !strcmp(name, "jobs")) {
        e.ino = INO_JOBS;
        e.entry_timeout = 1;
    } else if (parent == INO_JOBS && !strcmp(name, "claim")) {
        e.ino = INO_CLAIM;
    } else if (parent == INO_JOBS && !strcmp(name, "new")) {
        e.ino = INO_NEW;
    } else if (parent == INO_JOBS && !strcmp(name, "released")) {
        e.ino = INO_RELEASED;
    } else if (parent == INO_JOBS && is_number(name) && strlen(name) < 18) {
        e.ino = INO_RECORD + strtoull(name, NULL, 10);
        e.entry_timeout = cache_seconds;
    } else {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (e.ino < INO_RECORD && e.ino != INO_JOBS)
        e.entry_timeout = 86400;
    e.attr_timeout = cache_seconds;
    stat_ino(e.ino, &e.attr);
    fuse_reply_entry(req, &e);
}

/* Nothing is kept per inode: nothing to forget. */
static void
floor_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    (void)ino, (void)nlookup;
    fuse_reply_none(req);
}

static void
floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    if (stat_ino(ino, &st) != 0)
        fuse_reply_err(req, ENOENT);
    else
        fuse_reply_attr(req, &st, cache_seconds);
}

/* claim opens a new claim; records and new open as empty files. */
static void
floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    fi->direct_io = 1;
    fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
    fi->fh = 0;
    if (ino == INO_CLAIM) {
        Claim *c = malloc(sizeof *c);
        unsigned long id = atomic_fetch_add(&next_id, 1) + 1;
        c->len =
            (size_t)snprintf(c->json, sizeof c->json,
                             "{\"attempts\":1,\"claimed_until\":\"2030-01-01T00:00:00.000000000Z\","
                             "\"hold\":%lu,\"id\":\"jobs:%lu\",\"n\":%lu}\n",
                             id, id, id);
        fi->fh = (uint64_t)(uintptr_t)c;
        fi->nonseekable = 1;
    } else if (ino != INO_NEW && ino < INO_RECORD) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if (fuse_reply_open(req, fi) != 0)
        free((Claim *)(uintptr_t)fi->fh);
}

/* Reads serve the claim's line; other files read empty. */
static void
floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)ino;
    const Claim *c = (const Claim *)(uintptr_t)fi->fh;
    size_t n = c && (size_t)off < c->len ? c->len - (size_t)off : 0;
    fuse_reply_buf(req, n ? c->json + off : NULL, n < size ? n : size);
}

/* Every write is accepted whole. */
static void
floor_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
            struct fuse_file_info *fi)
{
    (void)ino, (void)buf, (void)off, (void)fi;
    fuse_reply_write(req, size);
}

/* Nothing to store at close. */
static void
floor_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino, (void)fi;
    fuse_reply_err(req, 0);
}

/* Frees an open claim. */
static void
floor_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    free((Claim *)(uintptr_t)fi->fh);
    fuse_reply_err(req, 0);
}

/* Any record "finishes". */
static void
floor_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    if (unlink_us)
        usleep(unlink_us);
    int err = parent == INO_JOBS && is_number(name) ? 0 : EPERM;
    if (!err && flush_fd >= 0) {
        if (pwrite(flush_fd, flush_block, sizeof flush_block, 0) != (ssize_t)sizeof flush_block ||
            fdatasync(flush_fd) != 0)
            err = EIO;
    }
    fuse_reply_err(req, err);
}

/* jobs/N to jobs/released/… "releases"; everything else is EXDEV. */
static void
floor_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
             const char *new_name, unsigned int flags)
{
    (void)new_name, (void)flags;
    fuse_reply_err(req,
                   parent == INO_JOBS && is_number(name) && new_parent == INO_RELEASED ? 0 : EXDEV);
}

/* Lists the fixed entries only. */
static void
floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    static const char *const root[] = {".", "..", "jobs"};
    static const char *const jobs[] = {".", "..", "claim", "new", "released"};
    const char *const *names = ino == INO_ROOT ? root : jobs;
    size_t count = ino == INO_ROOT ? 3 : ino == INO_JOBS ? 5 : 2;
    char buf[512];
    size_t cap = size < sizeof buf ? size : sizeof buf, used = 0;
    for (size_t i = (size_t)off; i < count; i++) {
        struct stat st = {.st_ino = 0xffffffff, .st_mode = i < 2 ? S_IFDIR : S_IFREG};
        size_t need = fuse_add_direntry(req, buf + used, cap - used, names[i], &st, (off_t)i + 1);
        if (need > cap - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
}

/* queuefs's limit on a write. */
static void
floor_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->max_write = 1 << 20;
}

static const struct fuse_lowlevel_ops operations = {
    .init = floor_init,
    .lookup = floor_lookup,
    .forget = floor_forget,
    .getattr = floor_getattr,
    .open = floor_open,
    .read = floor_read,
    .write = floor_write,
    .flush = floor_flush,
    .release = floor_release,
    .unlink = floor_unlink,
    .rename = floor_rename,
    .readdir = floor_readdir,
};

/* Mounts the floor and serves it until unmounted or signalled. */
int
main(int argc, char **argv)
{
    const char *flush_path = NULL;
    for (int used = 1; used;) { /* our options, before libfuse's */
        used = argc > 1 && !strcmp(argv[1], "--cache")                                        ? 1
               : argc > 2 && (!strcmp(argv[1], "--unlink-us") || !strcmp(argv[1], "--flush")) ? 2
                                                                                              : 0;
        if (used == 1)
            cache_seconds = 1;
        else if (used == 2 && !strcmp(argv[1], "--unlink-us"))
            unlink_us = (useconds_t)strtoul(argv[2], NULL, 10);
        else if (used == 2)
            flush_path = argv[2];
        argv[used] = argv[0];
        argv += used;
        argc -= used;
    }
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts opts;
    if (fuse_parse_cmdline(&args, &opts) != 0)
        return 2;
    if (!opts.mountpoint || opts.show_help || opts.show_version) {
        fprintf(
            stderr,
            "usage: bench/floor [--cache] [--unlink-us N] [--flush FILE] [-f] [-d] [-s] MOUNTPOINT\n");
        return opts.show_help ? 0 : 2;
    }
    if (flush_path) { /* its block written and synced once, so a flush is data only */
        flush_fd = open(flush_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (flush_fd < 0 ||
            pwrite(flush_fd, flush_block, sizeof flush_block, 0) != (ssize_t)sizeof flush_block ||
            fsync(flush_fd) != 0) {
            perror(flush_path);
            return 1;
        }
    }
    fuse_opt_add_arg(&args, "-o");
    fuse_opt_add_arg(&args, "subtype=queuefs-floor,fsname=queuefs-floor");
    struct fuse_session *se = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (!se)
        return 1;
    int rc = 1;
    if (fuse_session_mount(se, opts.mountpoint) != 0)
        goto out;
    if (fuse_daemonize(opts.foreground) != 0 || fuse_set_signal_handlers(se) != 0)
        goto unmount;
    if (opts.singlethread) {
        rc = fuse_session_loop(se);
    } else {
        struct fuse_loop_config *cfg = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(cfg, 64);
        rc = fuse_session_loop_mt(se, cfg);
        fuse_loop_cfg_destroy(cfg);
    }
    fuse_remove_signal_handlers(se);
unmount:
    fuse_session_unmount(se);
out:
    fuse_session_destroy(se);
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    if (flush_fd >= 0) {
        close(flush_fd);
        unlink(flush_path);
    }
    return rc ? 1 : 0;
}
