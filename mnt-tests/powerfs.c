/* powerfs.c — a disk with a volatile write cache and a power switch, for
 * queuefs's power-loss test (scripts/powerloss).
 *
 *     powerfs [-f] [-d] IMAGE MOUNTPOINT [-o FUSE_OPTIONS]
 *
 * Mounts a FUSE file system holding two files:
 *
 *   MOUNTPOINT/disk   a regular file as long as IMAGE, meant to be a loop
 *                     device's backing file (losetup).  IMAGE is the disk's
 *                     durable state.
 *   MOUNTPOINT/ctl    the power switch: commands written to it, its status
 *                     read from it.
 *
 * What it promises, as a disk with a write cache does:
 *
 *  - A read sees every write before it: the writes not yet flushed laid,
 *    in order, over IMAGE.
 *  - A write is held in memory, in order, as a pending write of the current
 *    flush interval; IMAGE is not touched.
 *  - fsync or fdatasync of disk (what the loop driver does for a
 *    REQ_PREFLUSH or REQ_FUA request) is a flush: every pending write is
 *    applied to IMAGE, in order, and the flush is counted.  A close (FUSE's
 *    flush) is no barrier: a disk knows nothing of closes.
 *  - More than PENDING_MAX bytes pending: the oldest writes are applied to
 *    IMAGE, as a disk whose cache is full writes back on its own (an
 *    unflushed write may always have reached the medium; not counted).
 *  - A power cut drops the pending writes, or with "torn" keeps a
 *    pseudo-random half of their 512-byte sectors (each sector of each
 *    write kept or not; what is kept is applied in order).  From then on
 *    every read, write and fsync of disk fails with EIO: the disk is gone.
 *    Flushes that returned before the cut are in IMAGE whole.
 *
 * IMAGE is written with pwrite and never synced: it is durable as long as
 * the machine running powerfs does not crash itself.  Requests are served
 * one at a time (one thread), so a flush covers exactly the writes answered
 * before it.  Files are opened with direct_io: the kernel keeps no copy of
 * disk in its page cache.
 *
 * The ctl file.  Each write holds one or more commands, one a line (or
 * separated by ";"):
 *
 *   cut N        arm a power cut at flush N (counted from 1 since powerfs
 *                started): flush N does not happen, its writes are lost
 *                (or torn) and it fails with EIO
 *   cut now      cut the power at once
 *   cut off      disarm
 *   drop         what a cut keeps of the pending writes: nothing (default)
 *   torn SEED    a pseudo-random half of their sectors, chosen by SEED
 *
 * An unknown command fails the write with EINVAL (and a line on stderr).
 * A read gives the status, one "name value…" line each:
 *
 *   flushes F              flushes applied so far
 *   writes W               writes received so far
 *   pending N BYTES        writes (and bytes) of the current interval
 *   armed N|off            the flush a cut is armed at
 *   mode drop|torn SEED
 *   cut no                 or, once cut:
 *   cut yes FLUSH KEPT TOTAL REALTIME_NS
 *                          the flush it replaced (one past the last
 *                          applied), the sectors kept of those pending, and
 *                          the wall clock of the cut in nanoseconds
 *
 * Unmount with fusermount3 -u MOUNTPOINT (after losetup -d).
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SECTOR 512
#define PENDING_MAX ((size_t)256 << 20)

enum { INO_ROOT = FUSE_ROOT_ID, INO_DISK, INO_CTL };

/* One write not yet flushed. */
typedef struct Pending {
    off_t off;
    size_t len;
    unsigned char data[];
} Pending;

static int image_fd = -1;
static off_t image_size;
static Pending **pending; /* the current interval's writes, oldest first */
static size_t n_pending, cap_pending, pending_bytes;
static uint64_t flushes, writes;
static uint64_t armed; /* 0: no cut armed */
static bool torn;      /* what a cut keeps: torn, else nothing */
static uint64_t seed, rng;
static bool is_cut;
static uint64_t cut_flush, cut_kept, cut_total;
static int64_t cut_ns;

/* xorshift64*: the same SEED keeps the same sectors of the same writes. */
static uint64_t
rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}

/* Writes all of "len" bytes at "off" of IMAGE: 0 or an errno. */
static int
image_write(const void *buf, size_t len, off_t off)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t n = pwrite(image_fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            fprintf(stderr, "powerfs: writing the image: %s\n", strerror(err));
            return err;
        }
        p += n, len -= (size_t)n, off += n;
    }
    return 0;
}

/* Applies the oldest "count" pending writes to IMAGE and forgets them. */
static int
apply_pending(size_t count)
{
    int err = 0;
    for (size_t i = 0; i < count; i++) {
        if (!err)
            err = image_write(pending[i]->data, pending[i]->len, pending[i]->off);
        pending_bytes -= pending[i]->len;
        free(pending[i]);
    }
    if (count < n_pending) /* (none pending: "pending" may be NULL) */
        memmove(pending, pending + count, (n_pending - count) * sizeof *pending);
    n_pending -= count;
    return err;
}

/* The power goes: keeps nothing of the pending writes, or with torn each
 * 512-byte sector (aligned on the disk) of each of them with chance 1/2. */
static void
cut_power(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cut_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    cut_flush = flushes + 1;
    cut_kept = cut_total = 0;
    for (size_t i = 0; i < n_pending; i++) {
        const Pending *w = pending[i];
        for (size_t at = 0; at < w->len;) {
            size_t piece = SECTOR - (size_t)((w->off + (off_t)at) % SECTOR);
            if (piece > w->len - at)
                piece = w->len - at;
            cut_total++;
            if (torn && (rnd() >> 32) & 1) {
                image_write(w->data + at, piece, w->off + (off_t)at);
                cut_kept++;
            }
            at += piece;
        }
        free(pending[i]);
    }
    n_pending = pending_bytes = 0;
    is_cut = true;
    fprintf(stderr,
            "powerfs: power cut before flush %" PRIu64 ": kept %" PRIu64 " of %" PRIu64
            " pending sectors\n",
            cut_flush, cut_kept, cut_total);
}

/* The status the ctl file reads as. */
static size_t
status(char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "flushes %" PRIu64 "\nwrites %" PRIu64 "\npending %zu %zu\n",
                     flushes, writes, n_pending, pending_bytes);
    n += armed ? snprintf(buf + n, cap - (size_t)n, "armed %" PRIu64 "\n", armed)
               : snprintf(buf + n, cap - (size_t)n, "armed off\n");
    n += torn ? snprintf(buf + n, cap - (size_t)n, "mode torn %" PRIu64 "\n", seed)
              : snprintf(buf + n, cap - (size_t)n, "mode drop\n");
    n += is_cut ? snprintf(buf + n, cap - (size_t)n,
                           "cut yes %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 "\n", cut_flush,
                           cut_kept, cut_total, cut_ns)
                : snprintf(buf + n, cap - (size_t)n, "cut no\n");
    return (size_t)n;
}

/* Runs one ctl command (a line without its newline): 0 or EINVAL. */
static int
command(const char *line)
{
    char word[16], arg[32], extra[2];
    int n = sscanf(line, "%15s %31s %1s", word, arg, extra);
    if (n <= 0)
        return 0; /* a blank line */
    char *end;
    if (n == 2 && !strcmp(word, "cut") && !strcmp(arg, "now")) {
        if (!is_cut)
            cut_power();
        return 0;
    }
    if (n == 2 && !strcmp(word, "cut") && !strcmp(arg, "off")) {
        armed = 0;
        return 0;
    }
    if (n == 2 && !strcmp(word, "cut")) {
        uint64_t at = strtoull(arg, &end, 10);
        if (*end || at <= flushes) {
            fprintf(stderr, "powerfs: cut %s: not a flush to come (%" PRIu64 " done)\n", arg,
                    flushes);
            return EINVAL;
        }
        armed = at;
        return 0;
    }
    if (n == 1 && !strcmp(word, "drop")) {
        torn = false;
        return 0;
    }
    if (n == 2 && !strcmp(word, "torn")) {
        seed = strtoull(arg, &end, 10);
        if (*end) {
            fprintf(stderr, "powerfs: torn %s: the seed is a whole number\n", arg);
            return EINVAL;
        }
        torn = true;
        rng = seed * 0x9E3779B97F4A7C15ULL + 1;
        return 0;
    }
    fprintf(stderr, "powerfs: unknown command: %s\n", line);
    return EINVAL;
}

/* ---- the file system ---- */

static void
fill_stat(fuse_ino_t ino, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_nlink = ino == INO_ROOT ? 2 : 1;
    st->st_mode = ino == INO_ROOT ? S_IFDIR | 0755 : S_IFREG | 0600;
    if (ino == INO_DISK) {
        st->st_size = image_size;
        st->st_blocks = (image_size + 511) / 512;
    }
    st->st_blksize = 4096;
}

static void
pfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param e = {0};
    if (parent == INO_ROOT && !strcmp(name, "disk"))
        e.ino = INO_DISK;
    else if (parent == INO_ROOT && !strcmp(name, "ctl"))
        e.ino = INO_CTL;
    else {
        fuse_reply_err(req, ENOENT);
        return;
    }
    fill_stat(e.ino, &e.attr);
    fuse_reply_entry(req, &e);
}

static void
pfs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    fill_stat(ino, &st);
    fuse_reply_attr(req, &st, 0);
}

/* Only ctl's size may be "set" (the O_TRUNC of `echo … > ctl`), to 0. */
static void
pfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
            struct fuse_file_info *fi)
{
    (void)fi;
    int other = to_set & ~(FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
                           FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME);
    if (other || ((to_set & FUSE_SET_ATTR_SIZE) && (ino != INO_CTL || attr->st_size != 0))) {
        fuse_reply_err(req, EPERM);
        return;
    }
    struct stat st;
    fill_stat(ino, &st);
    fuse_reply_attr(req, &st, 0);
}

static void
pfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    if (ino == INO_ROOT) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fuse_reply_open(req, fi);
}

static void
pfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == INO_CTL) {
        char buf[512];
        size_t len = status(buf, sizeof buf);
        size_t n = (size_t)off < len ? len - (size_t)off : 0;
        fuse_reply_buf(req, n ? buf + off : NULL, n < size ? n : size);
        return;
    }
    if (is_cut) {
        fuse_reply_err(req, EIO);
        return;
    }
    if (off >= image_size) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    if ((off_t)size > image_size - off)
        size = (size_t)(image_size - off);
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    for (size_t got = 0; got < size;) {
        ssize_t n = pread(image_fd, buf + got, size - got, off + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "powerfs: reading the image: %s\n", strerror(errno));
            free(buf);
            fuse_reply_err(req, EIO);
            return;
        }
        if (n == 0) { /* a sparse tail: zeros */
            memset(buf + got, 0, size - got);
            break;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < n_pending; i++) { /* the pending writes over it, in order */
        const Pending *w = pending[i];
        off_t lo = w->off > off ? w->off : off;
        off_t hi =
            w->off + (off_t)w->len < off + (off_t)size ? w->off + (off_t)w->len : off + (off_t)size;
        if (lo < hi)
            memcpy(buf + (lo - off), w->data + (lo - w->off), (size_t)(hi - lo));
    }
    fuse_reply_buf(req, (const char *)buf, size);
    free(buf);
}

static void
pfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
          struct fuse_file_info *fi)
{
    (void)fi;
    if (ino == INO_CTL) {
        char *text = strndup(buf, size);
        int err = text ? 0 : ENOMEM;
        for (char *save = NULL, *line = text ? strtok_r(text, "\n;", &save) : NULL; line && !err;
             line = strtok_r(NULL, "\n;", &save))
            err = command(line);
        free(text);
        if (err)
            fuse_reply_err(req, err);
        else
            fuse_reply_write(req, size);
        return;
    }
    if (is_cut) {
        fuse_reply_err(req, EIO);
        return;
    }
    if (off < 0 || off > image_size || (off_t)size > image_size - off) {
        fuse_reply_err(req, ENOSPC);
        return;
    }
    if (n_pending == cap_pending) {
        size_t cap = cap_pending ? cap_pending * 2 : 1024;
        Pending **grown = realloc(pending, cap * sizeof *grown);
        if (!grown) {
            fuse_reply_err(req, ENOMEM);
            return;
        }
        pending = grown, cap_pending = cap;
    }
    Pending *w = malloc(sizeof *w + size);
    if (!w) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    w->off = off;
    w->len = size;
    memcpy(w->data, buf, size);
    pending[n_pending++] = w;
    pending_bytes += size;
    writes++;
    int err = 0;
    if (pending_bytes > PENDING_MAX) { /* the cache is full: the oldest half goes to the medium */
        size_t count = 0, bytes = 0;
        while (count < n_pending && bytes < PENDING_MAX / 2)
            bytes += pending[count++]->len;
        err = apply_pending(count);
    }
    if (err)
        fuse_reply_err(req, EIO);
    else
        fuse_reply_write(req, size);
}

/* A flush of the disk's cache, or the armed power cut in its place. */
static void
pfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    (void)datasync, (void)fi;
    if (ino != INO_DISK) {
        fuse_reply_err(req, 0);
        return;
    }
    if (!is_cut && armed && flushes + 1 == armed)
        cut_power();
    if (is_cut) {
        fuse_reply_err(req, EIO);
        return;
    }
    int err = apply_pending(n_pending);
    if (!err)
        flushes++;
    fuse_reply_err(req, err ? EIO : 0);
}

/* A close is no barrier. */
static void
pfs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino, (void)fi;
    fuse_reply_err(req, 0);
}

static void
pfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    if (ino != INO_ROOT) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    static const char *const names[] = {".", "..", "disk", "ctl"};
    char buf[512];
    size_t cap = size < sizeof buf ? size : sizeof buf, used = 0;
    for (size_t i = (size_t)off; i < 4; i++) {
        struct stat st = {.st_ino = i < 2    ? INO_ROOT
                                    : i == 2 ? INO_DISK
                                             : INO_CTL,
                          .st_mode = i < 2 ? S_IFDIR : S_IFREG};
        size_t need = fuse_add_direntry(req, buf + used, cap - used, names[i], &st, (off_t)i + 1);
        if (need > cap - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
}

static const struct fuse_lowlevel_ops operations = {
    .lookup = pfs_lookup,
    .getattr = pfs_getattr,
    .setattr = pfs_setattr,
    .open = pfs_open,
    .read = pfs_read,
    .write = pfs_write,
    .fsync = pfs_fsync,
    .flush = pfs_flush,
    .readdir = pfs_readdir,
};

static void
usage(FILE *to)
{
    fprintf(to, "usage: powerfs [-f] [-d] IMAGE MOUNTPOINT [-o FUSE_OPTIONS]\n"
                "Serves IMAGE as MOUNTPOINT/disk, a disk whose writes wait in a volatile\n"
                "cache until an fsync flushes them, and MOUNTPOINT/ctl, its power switch:\n"
                "write 'cut N' (cut the power at flush N), 'cut now', 'cut off', 'drop' or\n"
                "'torn SEED' (what a cut keeps of the unflushed writes) to it; read it\n"
                "for the flushes so far and whether the power was cut.\n"
                "  -f   stay in the foreground      -d   log every request\n");
}

int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    /* IMAGE is the first argument that is not an option (nor an option's value). */
    int at = 1;
    while (at < argc && argv[at][0] == '-')
        at += !strcmp(argv[at], "-o") ? 2 : 1;
    if (at >= argc) {
        usage(stderr);
        return 2;
    }
    const char *image = argv[at];
    memmove(argv + at, argv + at + 1, (size_t)(argc - at) * sizeof *argv);
    argc--;

    image_fd = open(image, O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (image_fd < 0 || fstat(image_fd, &sb) != 0) {
        fprintf(stderr, "powerfs: %s: %s\n", image, strerror(errno));
        return 1;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
        fprintf(stderr, "powerfs: %s: not a regular file of some size (truncate -s 96M %s)\n",
                image, image);
        return 1;
    }
    image_size = sb.st_size;

    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts opts;
    if (fuse_parse_cmdline(&args, &opts) != 0)
        return 2;
    if (!opts.mountpoint || opts.show_version) {
        usage(stderr);
        return 2;
    }
    fuse_opt_add_arg(&args, "-o");
    fuse_opt_add_arg(&args, "subtype=powerfs,fsname=powerfs");
    struct fuse_session *se = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (!se)
        return 1;
    int rc = 1;
    if (fuse_session_mount(se, opts.mountpoint) != 0)
        goto out;
    if (fuse_daemonize(opts.foreground) != 0 || fuse_set_signal_handlers(se) != 0)
        goto unmount;
    rc = fuse_session_loop(se); /* one request at a time: see the header */
    fuse_remove_signal_handlers(se);
unmount:
    fuse_session_unmount(se);
out:
    fuse_session_destroy(se);
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    for (size_t i = 0; i < n_pending; i++)
        free(pending[i]);
    free(pending);
    close(image_fd);
    return rc ? 1 : 0;
}
