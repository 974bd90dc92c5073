/* failio.c — an LD_PRELOAD library that makes the disk fail under a
 * queuefs store, for tests: chosen calls on the store's data file
 * (data.mdb) and its redo log (queuefs.log) fail with EIO.
 *
 *     QUEUEFS_FAIL=fsync        fsync, fdatasync, sync_file_range, msync and
 *                               a pwritev2 with RWF_DSYNC fail
 *     QUEUEFS_FAIL=write        write, pwrite, writev, pwritev and pwritev2 fail
 *     QUEUEFS_FAIL=fsync,write  both
 *     QUEUEFS_FAIL_AFTER=N      the first N such calls succeed (default 0)
 *     QUEUEFS_FAIL_WHEN=PATH    only while PATH exists (calls made while it
 *                               does not are neither failed nor counted)
 *
 *     LD_PRELOAD=store/failio.so QUEUEFS_FAIL=fsync QUEUEFS_FAIL_AFTER=1 \
 *         queuefs-sql STORE "CREATE jobs = {}"
 *
 * Calls on other files (a FUSE device, standard output) are never failed.
 * msync names no descriptor and fails whenever armed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sync_file_range, pwritev2 */
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum { FAIL_SYNC = 1, FAIL_WRITE = 2 };

static unsigned long fail_calls; /* matching calls seen while armed */

/* The kinds of call QUEUEFS_FAIL names (FAIL_SYNC, FAIL_WRITE). */
static int
fail_kinds(void)
{
    const char *s = getenv("QUEUEFS_FAIL");
    int kinds = 0;
    if (!s)
        return 0;
    if (strstr(s, "fsync"))
        kinds |= FAIL_SYNC;
    if (strstr(s, "write"))
        kinds |= FAIL_WRITE;
    return kinds;
}

/* True when "fd" is a store's data file or redo log. */
static bool
fd_is_store(int fd)
{
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return false;
    path[n] = '\0';
    size_t len = (size_t)n;
    return (len >= 9 && strcmp(path + len - 9, "/data.mdb") == 0) ||
           (len >= 12 && strcmp(path + len - 12, "/queuefs.log") == 0);
}

/* True when this call (of "kind", on "fd", or on no descriptor when
 * fd < 0) is to fail: it counts it, then compares with QUEUEFS_FAIL_AFTER. */
static bool
fail_now(int kind, int fd)
{
    if (!(fail_kinds() & kind))
        return false;
    if (fd >= 0 && !fd_is_store(fd))
        return false;
    const char *when = getenv("QUEUEFS_FAIL_WHEN");
    struct stat sb;
    if (when && *when && stat(when, &sb) != 0)
        return false;
    const char *after = getenv("QUEUEFS_FAIL_AFTER");
    unsigned long n = __atomic_fetch_add(&fail_calls, 1, __ATOMIC_RELAXED);
    return n >= (after ? strtoul(after, NULL, 10) : 0);
}

/* The next definition of "name" (libc's). */
static void *
next_fn(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (!fn)
        abort();
    return fn;
}

/* Defines "name", in place of libc's: -1 with errno EIO when fail_now
 * says a call of "kind" on descriptor "fd" is to fail, else what libc's
 * "name" returns.  "params" is its parameter list, "args" the call of
 * libc's with them. */
#define FAILING(ret, name, kind, fd, params, args) \
    ret name params \
    { \
        static ret(*real) params; \
        if (!real) \
            real = next_fn(#name); \
        if (fail_now(kind, fd)) { \
            errno = EIO; \
            return -1; \
        } \
        return real args; \
    }

FAILING(int, fsync, FAIL_SYNC, fd, (int fd), (fd))
FAILING(int, fdatasync, FAIL_SYNC, fd, (int fd), (fd))
FAILING(int, msync, FAIL_SYNC, -1, (void *addr, size_t len, int flags), (addr, len, flags))
FAILING(int, sync_file_range, FAIL_SYNC, fd, (int fd, off_t off, off_t n, unsigned int flags),
        (fd, off, n, flags))
FAILING(ssize_t, write, FAIL_WRITE, fd, (int fd, const void *buf, size_t n), (fd, buf, n))
FAILING(ssize_t, pwrite, FAIL_WRITE, fd, (int fd, const void *buf, size_t n, off_t off),
        (fd, buf, n, off))
FAILING(ssize_t, pwrite64, FAIL_WRITE, fd, (int fd, const void *buf, size_t n, off64_t off),
        (fd, buf, n, off))
FAILING(ssize_t, writev, FAIL_WRITE, fd, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt))
FAILING(ssize_t, pwritev, FAIL_WRITE, fd, (int fd, const struct iovec *iov, int cnt, off_t off),
        (fd, iov, cnt, off))
/* pwritev2 with RWF_DSYNC is a write and a sync at once. */
FAILING(ssize_t, pwritev2, FAIL_WRITE | (flags & RWF_DSYNC ? FAIL_SYNC : 0), fd,
        (int fd, const struct iovec *iov, int cnt, off_t off, int flags),
        (fd, iov, cnt, off, flags))
