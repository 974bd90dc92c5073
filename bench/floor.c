/* floor.c — bench/floor: the FUSE floor.  A file system with queuefs's
 * shape and settings that does no store work, so a worker's cycle through
 * it costs only the kernel, libfuse and the round trips.
 *
 *     bench/floor [--cache] [--unlink-us N] [-f] [-d] [-s] MOUNTPOINT
 *
 *   /jobs/            a directory, as a queue is
 *   /jobs/claim       every open hands out the next of 1, 2, 3 …: reads give
 *                     {"attempts":1,"claimed_until":"…","id":"jobs:N","n":N}
 *   /jobs/N           any decimal name exists (size 0); unlink succeeds
 *   /jobs/released/   rename of /jobs/N to /jobs/released/N succeeds
 *   /jobs/new         writes are accepted and dropped
 *
 * Settings as queuefs's: direct_io, entry/attribute/negative timeouts 0,
 * hard_remove, the multithreaded loop.  --cache lets the kernel keep
 * entries and attributes for a second instead, to show what the lookups
 * of every path cost.  --unlink-us N makes every unlink take N µs, as an
 * unlink that waits for its commit to reach the disk does: it shows how
 * the kernel serialises unlinks in one directory.  Returns
 * once mounted (libfuse daemonizes after the mount); unmount with
 * fusermount3 -u MOUNTPOINT. */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_ulong next_id;
static double cache_seconds;   /* --cache: entry and attribute timeouts */
static useconds_t unlink_us;   /* --unlink-us: how long an unlink takes */

/* The content of one open claim. */
typedef struct Claim {
    size_t len;
    char   json[160];
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

/* Directories: / /jobs /jobs/released; files: claim, new, N. */
static int
floor_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    (void)fi;
    memset(st, 0, sizeof *st);
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (!strcmp(path, "/") || !strcmp(path, "/jobs") || !strcmp(path, "/jobs/released")) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (!strncmp(path, "/jobs/", 6) &&
        (!strcmp(path + 6, "claim") || !strcmp(path + 6, "new") || is_number(path + 6))) {
        st->st_mode = S_IFREG | (!strcmp(path + 6, "claim") ? 0444 : 0644);
        st->st_nlink = 1;
        return 0;
    }
    return -ENOENT;
}

/* claim opens a new claim; numeric names and new open as empty files. */
static int
floor_open(const char *path, struct fuse_file_info *fi)
{
    fi->direct_io = 1;
    fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
    if (!strcmp(path, "/jobs/claim")) {
        Claim *c = malloc(sizeof *c);
        unsigned long id = atomic_fetch_add(&next_id, 1) + 1;
        c->len = (size_t)snprintf(c->json, sizeof c->json,
                                  "{\"attempts\":1,\"claimed_until\":\"2030-01-01T00:00:00.000000000Z\","
                                  "\"id\":\"jobs:%lu\",\"n\":%lu}\n",
                                  id, id);
        fi->fh = (uint64_t)(uintptr_t)c;
        fi->nonseekable = 1;
        return 0;
    }
    if (!strcmp(path, "/jobs/new") || (!strncmp(path, "/jobs/", 6) && is_number(path + 6))) {
        fi->fh = 0;
        return 0;
    }
    return -ENOENT;
}

/* Reads serve the claim's line; other files read empty. */
static int
floor_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    Claim *c = (Claim *)(uintptr_t)fi->fh;
    if (!c || (size_t)off >= c->len)
        return 0;
    size_t n = c->len - (size_t)off;
    if (n > size)
        n = size;
    memcpy(buf, c->json + off, n);
    return (int)n;
}

/* Every write is accepted whole. */
static int
floor_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path, (void)buf, (void)off, (void)fi;
    return (int)size;
}

/* Nothing to store at close. */
static int
floor_flush(const char *path, struct fuse_file_info *fi)
{
    (void)path, (void)fi;
    return 0;
}

/* Frees an open claim. */
static int
floor_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    free((Claim *)(uintptr_t)fi->fh);
    return 0;
}

/* Any record "finishes". */
static int
floor_unlink(const char *path)
{
    if (unlink_us)
        usleep(unlink_us);
    return !strncmp(path, "/jobs/", 6) && is_number(path + 6) ? 0 : -EPERM;
}

/* /jobs/N to /jobs/released/… "releases"; everything else is EXDEV. */
static int
floor_rename(const char *from, const char *to, unsigned int flags)
{
    (void)flags;
    if (!strncmp(from, "/jobs/", 6) && is_number(from + 6) && !strncmp(to, "/jobs/released/", 15))
        return 0;
    return -EXDEV;
}

/* Lists the fixed entries only. */
static int
floor_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
              struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)off, (void)fi, (void)flags;
    filler(buf, ".", NULL, 0, 0);
    filler(buf, "..", NULL, 0, 0);
    if (!strcmp(path, "/")) {
        filler(buf, "jobs", NULL, 0, 0);
    } else if (!strcmp(path, "/jobs")) {
        filler(buf, "claim", NULL, 0, 0);
        filler(buf, "new", NULL, 0, 0);
        filler(buf, "released", NULL, 0, 0);
    }
    return 0;
}

/* queuefs's settings: nothing cached by the kernel (unless --cache). */
static void *
floor_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    cfg->entry_timeout = cache_seconds;
    cfg->attr_timeout = cache_seconds;
    cfg->negative_timeout = 0;
    cfg->hard_remove = 1;
    cfg->use_ino = 0;
    conn->max_write = 1 << 20;
    return NULL;
}

static const struct fuse_operations operations = {
    .init = floor_init,
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
    for (int used = 1; used;) {   /* our options, before libfuse's */
        used = argc > 1 && !strcmp(argv[1], "--cache") ? 1
             : argc > 2 && !strcmp(argv[1], "--unlink-us") ? 2 : 0;
        if (used == 1)
            cache_seconds = 1;
        else if (used == 2)
            unlink_us = (useconds_t)strtoul(argv[2], NULL, 10);
        argv[used] = argv[0];
        argv += used;
        argc -= used;
    }
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts opts;
    if (fuse_parse_cmdline(&args, &opts) != 0)
        return 2;
    if (!opts.mountpoint || opts.show_help || opts.show_version) {
        fprintf(stderr, "usage: bench/floor [--cache] [--unlink-us N] [-f] [-d] [-s] MOUNTPOINT\n");
        return opts.show_help ? 0 : 2;
    }
    fuse_opt_add_arg(&args, "-o");
    fuse_opt_add_arg(&args, "subtype=queuefs-floor,fsname=queuefs-floor");
    struct fuse *fuse = fuse_new(&args, &operations, sizeof operations, NULL);
    if (!fuse)
        return 1;
    int rc = 1;
    if (fuse_mount(fuse, opts.mountpoint) != 0)
        goto out;
    if (fuse_daemonize(opts.foreground) != 0 || fuse_set_signal_handlers(fuse_get_session(fuse)) != 0)
        goto unmount;
    if (opts.singlethread) {
        rc = fuse_loop(fuse);
    } else {
        struct fuse_loop_config *cfg = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(cfg, 64);
        rc = fuse_loop_mt(fuse, cfg);
        fuse_loop_cfg_destroy(cfg);
    }
    fuse_remove_signal_handlers(fuse_get_session(fuse));
unmount:
    fuse_unmount(fuse);
out:
    fuse_destroy(fuse);
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    return rc ? 1 : 0;
}
