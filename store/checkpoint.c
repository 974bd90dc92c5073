/* checkpoint.c — the checkpoint record file and LMDB's meta pages (see
 * checkpoint.h). */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define SLOT_LEN 4096                 /* one slot a block: written whole */
#define RECORD_MAGIC "qfs-ckpt"
#define RECORD_VERSION 1u
#define RECORD_LEN (96 + 2 * CHECKPOINT_META_LEN)   /* before the crc */

/* LMDB 0.9's meta page (data format version 1). */
#define META_FLAGS_AT 10
#define META_FLAG 0x08
#define META_MAGIC_AT 16
#define META_MAGIC 0xBEEFC0DEu
#define META_VERSION_AT 20
#define META_VERSION 1u
#define META_PAGE_SIZE_AT 40
#define META_TXNID_AT 144

static void
put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void
put_u64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint32_t
get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t
get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Reads exactly "len" bytes at "off": 0, EIO on a short read, or errno. */
static int
read_at(int fd, void *buf, size_t len, off_t off)
{
    ssize_t n;
    while ((n = pread(fd, buf, len, off)) < 0 && errno == EINTR)
        ;
    return n < 0 ? errno : (size_t)n == len ? 0 : EIO;
}

/* Writes exactly "len" bytes at "off": 0 or errno (EIO on a short write). */
static int
write_at(int fd, const void *buf, size_t len, off_t off)
{
    ssize_t n;
    while ((n = pwrite(fd, buf, len, off)) < 0 && errno == EINTR)
        ;
    return n < 0 ? errno : (size_t)n == len ? 0 : EIO;
}

/* Syncs "fd"'s data: 0 or errno. */
static int
sync_data(int fd)
{
    return fdatasync(fd) == 0 ? 0 : errno;
}

int
checkpoint_open(const char *location)
{
    size_t plen = strlen(location) + sizeof "/" CHECKPOINT_FILE;
    char *path = malloc(plen);
    if (!path)
        return -ENOMEM;
    snprintf(path, plen, "%s/%s", location, CHECKPOINT_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    free(path);
    if (fd < 0)
        return -errno;
    struct stat sb;
    int rc = fstat(fd, &sb) ? errno : 0;
    if (!rc && sb.st_size < 2 * SLOT_LEN)
        rc = posix_fallocate(fd, 0, 2 * SLOT_LEN);
    if (rc) {
        close(fd);
        return -rc;
    }
    return fd;
}

/* Decodes the slot "b": true when it holds a valid record. */
static bool
record_decode(const unsigned char *b, Checkpoint *c)
{
    if (memcmp(b, RECORD_MAGIC, 8) != 0 || get_u32(b + 8) != RECORD_VERSION ||
        get_u32(b + RECORD_LEN) != (uint32_t)crc32(0L, b, RECORD_LEN))
        return false;
    c->trust_disk = get_u32(b + 12) & 1;
    c->seq = get_u64(b + 16);
    c->txnid = get_u64(b + 24);
    c->dev = get_u64(b + 32);
    c->ino = get_u64(b + 40);
    memcpy(c->boot, b + 48, CHECKPOINT_BOOT_LEN);
    c->boot[CHECKPOINT_BOOT_LEN - 1] = '\0';
    memcpy(c->meta, b + 96, 2 * CHECKPOINT_META_LEN);
    return true;
}

int
checkpoint_read(int fd, Checkpoint *out)
{
    unsigned char *b = malloc(2 * SLOT_LEN);
    if (!b)
        return ENOMEM;
    int rc = read_at(fd, b, 2 * SLOT_LEN, 0);
    bool found = false;
    for (int i = 0; !rc && i < 2; i++) {
        Checkpoint c;
        if (record_decode(b + i * SLOT_LEN, &c) && (!found || c.seq > out->seq)) {
            *out = c;
            found = true;
        }
    }
    free(b);
    return rc ? rc : found ? 0 : ENOENT;
}

int
checkpoint_write(int fd, const Checkpoint *c)
{
    unsigned char b[SLOT_LEN];
    memset(b, 0, sizeof b);
    memcpy(b, RECORD_MAGIC, 8);
    put_u32(b + 8, RECORD_VERSION);
    put_u32(b + 12, c->trust_disk ? 1 : 0);
    put_u64(b + 16, c->seq);
    put_u64(b + 24, c->txnid);
    put_u64(b + 32, c->dev);
    put_u64(b + 40, c->ino);
    memcpy(b + 48, c->boot, strnlen(c->boot, CHECKPOINT_BOOT_LEN - 1));
    memcpy(b + 96, c->meta, 2 * CHECKPOINT_META_LEN);
    put_u32(b + RECORD_LEN, (uint32_t)crc32(0L, b, RECORD_LEN));
    int rc = write_at(fd, b, sizeof b, (off_t)(c->seq & 1) * SLOT_LEN);
    return rc ? rc : sync_data(fd);
}

int
checkpoint_meta_read(int data_fd, unsigned page_size,
                     unsigned char meta[2][CHECKPOINT_META_LEN], uint64_t *newest)
{
    *newest = 0;
    for (int i = 0; i < 2; i++) {
        int rc = read_at(data_fd, meta[i], CHECKPOINT_META_LEN, (off_t)i * page_size);
        if (rc)
            return rc;
        const unsigned char *m = meta[i];
        uint16_t flags;
        memcpy(&flags, m + META_FLAGS_AT, 2);
        if (!(flags & META_FLAG) || get_u32(m + META_MAGIC_AT) != META_MAGIC ||
            get_u32(m + META_VERSION_AT) != META_VERSION)
            return EINVAL;
        uint64_t id = get_u64(m + META_TXNID_AT);
        if (id > *newest)
            *newest = id;
    }
    return 0;
}

int
checkpoint_restore(int data_fd, unsigned page_size, const Checkpoint *c)
{
    for (int i = 0; i < 2; i++) {
        int rc = write_at(data_fd, c->meta[i], CHECKPOINT_META_LEN, (off_t)i * page_size);
        if (rc)
            return rc;
    }
    return sync_data(data_fd);
}

int
checkpoint_recover(int ckpt_fd, const char *data_path, const char *boot)
{
    int data_fd = open(data_path, O_RDWR | O_CLOEXEC);
    if (data_fd < 0)
        return errno == ENOENT ? 0 : errno;
    while (flock(ckpt_fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            int err = errno;
            close(data_fd);
            return err;
        }
    Checkpoint c;
    struct stat sb;
    int rc = checkpoint_read(ckpt_fd, &c);
    if (rc == ENOENT) {
        rc = 0;
    } else if (!rc && !c.trust_disk && strcmp(c.boot, boot) != 0) {
        unsigned char meta[2][CHECKPOINT_META_LEN];
        uint64_t newest = 0;
        unsigned page_size = get_u32(c.meta[0] + META_PAGE_SIZE_AT);
        rc = fstat(data_fd, &sb) ? errno : 0;
        if (!rc && (uint64_t)sb.st_dev == c.dev && (uint64_t)sb.st_ino == c.ino &&
            page_size >= CHECKPOINT_META_LEN &&
            checkpoint_meta_read(data_fd, page_size, meta, &newest) == 0 && newest > c.txnid) {
            rc = checkpoint_restore(data_fd, page_size, &c);
        }
        if (!rc) {
            c.seq++;
            c.trust_disk = true;
            snprintf(c.boot, sizeof c.boot, "%s", boot);
            rc = checkpoint_write(ckpt_fd, &c);
        }
    }
    flock(ckpt_fd, LOCK_UN);
    close(data_fd);
    return rc;
}

void
checkpoint_boot_id(char out[CHECKPOINT_BOOT_LEN])
{
    memset(out, 0, CHECKPOINT_BOOT_LEN);
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        bool ok = fgets(out, CHECKPOINT_BOOT_LEN, f) != NULL;
        fclose(f);
        out[strcspn(out, "\n")] = '\0';
        if (ok && out[0])
            return;
    }
    /* No /proc: the boot's start, to the second (the wall clock less the
     * time since boot), stable within a boot unless the clock is set. */
    struct timespec now, up;
    clock_gettime(CLOCK_REALTIME, &now);
    clock_gettime(CLOCK_BOOTTIME, &up);
    snprintf(out, CHECKPOINT_BOOT_LEN, "booted-%lld",
             (long long)(now.tv_sec - up.tv_sec - (now.tv_nsec < up.tv_nsec)));
}
