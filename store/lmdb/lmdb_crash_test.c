/* lmdb_crash_test.c — the LMDB backend's own tests, part three: what a
 * machine crash leaves.  A disk is made as the crash would leave it — the
 * data file as a checkpoint's syncs wrote it, the meta pages after it or
 * not, the redo log as its flushes wrote it — in a directory of its own,
 * and opened there (alone, so it is recovered; no boot is asked):
 * with sync off the store is back at its last checkpoint, a claim made
 * just before is at worst unclaimed, every durable write (sync=full) is
 * there, from one process or several, and a checkpoint that synced only
 * the pages put to use since the last brings every record back.  Parts
 * one and two are lmdb_format_test.c and lmdb_test.c. */
#include "store_test.h"
#include "lmdb_checkpoint.h"
#include "lmdb_log.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>

/* ---- a machine crash with sync off ---- */

/* Copies file "from" to "to", replacing it; true on success. */
static bool
file_copy(const char *from, const char *to)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ssize_t n = 0;
    bool ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(out, buf, (size_t)n) == n;
    ok = ok && n == 0;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return ok;
}

/* Copies the first "len" bytes of "from" over those of "to". */
static bool
file_copy_head(const char *from, const char *to, size_t len)
{
    char *buf = malloc(len);
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY);
    bool ok = buf && in >= 0 && out >= 0 && pread(in, buf, len, 0) == (ssize_t)len &&
              pwrite(out, buf, len, 0) == (ssize_t)len;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    free(buf);
    return ok;
}

/* The paths of the files of store "name": its data file, checkpoint
 * record and redo log. */
typedef struct StoreFiles {
    char data[300], ckpt[300], log[300];
} StoreFiles;

static StoreFiles
files_of(const char *name)
{
    StoreFiles f;
    snprintf(f.data, sizeof f.data, "%s/data.mdb", path_of(name));
    snprintf(f.ckpt, sizeof f.ckpt, "%s/" CHECKPOINT_FILE, path_of(name));
    snprintf(f.log, sizeof f.log, "%s/" LOG_FILE, path_of(name));
    return f;
}

/* Copies the redo log of store "from" into directory "to" (when there is
 * one): the log as a crash leaves it, every flushed entry in it. */
static bool
log_copy(const char *from, const char *to)
{
    StoreFiles f = files_of(from);
    return access(f.log, F_OK) != 0 || file_copy(f.log, files_of(to).log);
}

/* Copies the meta pages of store "from"'s data file over those of store
 * "to"'s: the meta pages of later commits, which may reach the disk before
 * the pages they point at. */
static bool
meta_copy(const char *from, const char *to)
{
    return file_copy_head(files_of(from).data, files_of(to).data, 2 * 4096);
}

/* Makes directory "name", as the disk of a crashed machine, from the files
 * of store "from" as they are now: its data file, checkpoint record and
 * redo log.  True on success. */
static bool
disk_make(const char *name, const char *from)
{
    StoreFiles f = files_of(from), out = files_of(name);
    return mkdir(path_of(name), 0700) == 0 && file_copy(f.data, out.data) &&
           file_copy(f.ckpt, out.ckpt) && log_copy(from, name);
}

/* The newest transaction id of store "name"'s data file (0: unknown). */
static uint64_t
last_txnid(const char *name)
{
    unsigned char meta[2][CHECKPOINT_META_LEN];
    uint64_t newest = 0;
    int fd = open(files_of(name).data, O_RDONLY);
    if (fd < 0)
        return 0;
    if (lmdb_checkpoint_meta_read(fd, (unsigned)sysconf(_SC_PAGESIZE), meta, &newest) != 0)
        newest = 0;
    close(fd);
    return newest;
}

/* Waits (2 s at most) for the checkpoint record of store "name" to cover
 * its last commit; returns the record's transaction id (0: it did not). */
static uint64_t
checkpoint_wait(const char *name)
{
    StoreFiles f = files_of(name);
    uint64_t want = last_txnid(name);
    for (int i = 0; i < 200; i++) {
        int fd = open(f.ckpt, O_RDONLY);
        Checkpoint c;
        bool done =
            fd >= 0 && lmdb_checkpoint_read(fd, &c) == 0 && !c.trust_disk && c.txnid >= want;
        if (fd >= 0)
            close(fd);
        if (done)
            return c.txnid;
        usleep(10000);
    }
    return 0;
}

/* Puts records "<prefix>0" .. "<prefix><n-1>" into "table", a commit each. */
static void
puts_each(Store *st, uint32_t table, const char *prefix, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        char key[32];
        StoreTxn *t = NULL;
        snprintf(key, sizeof key, "%s%d", prefix, i);
        if (store_txn_begin(st, true, &t) != STORE_OK) {
            failed++;
            continue;
        }
        if (put(t, table, key, "value") != STORE_OK) {
            store_txn_abort(t);
            failed++;
        } else if (store_txn_commit(t) != STORE_OK) {
            failed++;
        }
    }
    CHECK(failed == 0, "%d of %d puts of %s* failed", failed, n, prefix);
}

/* A count of the records whose keys start with "prefix". */
typedef struct PrefixCount {
    const char *prefix;
    int n;
} PrefixCount;

static int
count_prefixed(void *ctx, const StoreRecord *r)
{
    PrefixCount *c = ctx;
    size_t len = strlen(c->prefix);
    if (r->key.len < len || memcmp(r->key.data, c->prefix, len) != 0)
        return 1; /* past them: the walk is in key order */
    c->n++;
    return 0;
}

/* Opens store "name" with sync "sync", puts "n" records "a0" … into its new
 * table "q" (its id into "*table"), a commit each, and checks that a
 * checkpoint comes to cover them: the open store, or NULL (a failed check)
 * when it did not open. */
static Store *
store_checkpointed(const char *name, bool sync, int n, uint32_t *table)
{
    Store *st = open_store(name, sync, 0);
    if (!st)
        return NULL;
    *table = table_make(st, "q");
    puts_each(st, *table, "a", n);
    CHECK(checkpoint_wait(name) > 0, "%s: a checkpoint covers the first records", name);
    return st;
}

/* Opens store "name" (the first open after a crash recovers it) and counts
 * the records of "table" whose keys start with "prefix" (-1 when it cannot
 * open). */
static int
count_prefix(const char *name, uint32_t table, const char *prefix)
{
    StoreOptions opts = {.sync = false};
    Store *st = NULL;
    if (store_open(path_of(name), &opts, &st, NULL, 0) != STORE_OK)
        return -1;
    PrefixCount c = {prefix, 0};
    StoreTxn *t = begin(st, false);
    store_record_each(t, table, bytes_of(prefix), count_prefixed, &c);
    int n = c.n;
    store_txn_abort(t);
    store_close(st);
    return n;
}

/* With sync off commits are not synced, yet a machine crash never leaves a
 * corrupt store: the disk after one is simulated as the data file as it
 * was at the last checkpoint, with the meta pages of later commits (which
 * may reach the disk before their pages), and the checkpoint record and
 * the log then (none of the later entries was flushed).  Opened, the store is exactly as
 * at the checkpoint.  After a crash of the processes alone (the data file,
 * the record and the log as the page cache has them) the same recovery
 * loses nothing: the log holds every commit after the record, unflushed. */
static void
test_machine_crash(void)
{
    uint32_t id;
    Store *st = store_checkpointed("crash", false, 300, &id);
    if (!st)
        return;
    CHECK(disk_make("crash-disk", "crash"), "the disk at the checkpoint");

    puts_each(st, id, "b", 300); /* unsynced; a checkpoint may follow */
    CHECK(disk_make("crash-same", "crash"), "the page cache after the processes died");
    /* The newest meta pages reached the disk; the pages they point at did not. */
    CHECK(meta_copy("crash", "crash-disk"), "later meta pages on the disk");
    store_close(st);

    /* Without the checkpoint the crashed disk is not the store it was. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        StoreOptions same = {.sync = false};
        Store *s2 = NULL;
        if (mkdir(path_of("crash-raw"), 0700) ||
            !file_copy(files_of("crash-disk").data, files_of("crash-raw").data))
            _exit(3);
        if (store_open(path_of("crash-raw"), &same, &s2, NULL, 0) != STORE_OK)
            _exit(2);
        int n = 0;
        StoreTxn *t = NULL;
        if (store_txn_begin(s2, false, &t) != STORE_OK)
            _exit(2);
        int rc = store_record_each(t, id, bytes_of(""), count_one, &n);
        _exit(rc == STORE_OK && n == 300 ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "the crashed disk read as is is not the store at the checkpoint (status %d)", status);

    CHECK(count_prefix("crash-disk", id, "a") == 300,
          "after the machine crash: every record of the checkpoint");
    CHECK(count_prefix("crash-disk", id, "b") == 0, "and none of the commits after it");
    st = open_store("crash-disk", false, 0);
    if (st) {
        puts_each(st, id, "c", 50);
        store_close(st);
    }
    CHECK(count_prefix("crash-disk", id, "") == 350, "the store goes on: %d records",
          count_prefix("crash-disk", id, ""));

    CHECK(count_prefix("crash-same", id, "") == 600,
          "processes crashed, not the machine: nothing lost");
}

/* What a lazy claim (store_txn_lazy) runs: claims "key" of queue "q". */
typedef struct LazyClaim {
    const StoreQueue *q;
    const char *key;
    int64_t claimed;
} LazyClaim;

static int
lazy_claim(StoreTxn *txn, void *ctx)
{
    LazyClaim *c = ctx;
    store_txn_lazy(txn);
    StoreClaim sc = {.n = 1, .key = bytes_of(c->key), .instance = bytes_of("inst")};
    return store_claim(txn, c->q, &sc, NULL, NULL, &c->claimed);
}

/* With sync on, a claim need not wait for the disk (store_txn_lazy): it
 * becomes durable with the next checkpoint by itself, and a machine crash
 * before that finds the record as it was before the claim — unclaimed,
 * whole — while what was finished durably stays finished. */
static void
test_machine_crash_lazy_claim(void)
{
    Store *st = open_store("lazy", true, 0);
    if (!st)
        return;
    StoreQueue q = {.table = table_make(st, "q"), .timeout_ns = 3600 * SEC};
    add(st, &q, "x1", "v", NULL, 0);
    add(st, &q, "x2", "v", NULL, 0);
    Claimed c;
    CHECK(claim(st, &q, 1, "x1", NULL, &c) == STORE_OK, "claim x1");
    StoreTxn *t = begin(st, true);
    CHECK(store_record_delete(t, q.table, &q, bytes_of("x1"), c.hold) == STORE_OK, "finish x1");
    CHECK(store_txn_commit(t) == STORE_OK, "a durable finish");
    /* The disk now: the finish is durable, so a checkpoint covers it. */
    CHECK(disk_make("lazy-disk", "lazy"), "the disk after the finish");
    LazyClaim lc = {&q, "x2", 0};
    CHECK(store_write(st, lazy_claim, &lc) == STORE_OK && lc.claimed == 1, "a lazy claim of x2");
    CHECK(meta_copy("lazy", "lazy-disk"), "its meta pages reached the disk");
    CHECK(checkpoint_wait("lazy") > 0, "a checkpoint covers the claim by itself");
    /* Lazy claims do not sync each; durable writes do (a checkpoint every
     * 20 ms may add a few to either). */
    StoreStats s0, s1, s2;
    char key[16];
    t = begin(st, true);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "y%03d", i);
        add_in(t, &q, key, "v", NULL, 0);
    }
    CHECK(store_txn_commit(t) == STORE_OK, "100 more records");
    store_stats(st, &s0);
    int claimed = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "y%03d", i);
        LazyClaim more = {&q, key, 0};
        claimed += store_write(st, lazy_claim, &more) == STORE_OK && more.claimed == 1;
    }
    store_stats(st, &s1);
    CHECK(claimed == 100, "100 lazy claims");
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "z%d", i);
        add(st, &q, key, "v", NULL, 0);
    }
    store_stats(st, &s2);
    printf("# 100 lazy claims: %" PRIu64 " syncs; 100 durable creates: %" PRIu64 "\n",
           s1.syncs - s0.syncs, s2.syncs - s1.syncs);
    CHECK(s1.syncs - s0.syncs < 50 && s2.syncs - s1.syncs >= 100,
          "100 lazy commits made %" PRIu64 " syncs, 100 durable ones %" PRIu64, s1.syncs - s0.syncs,
          s2.syncs - s1.syncs);
    store_close(st);

    st = open_store("lazy-disk", true, 0); /* after the machine crash */
    if (!st)
        return;
    StoreRecord r;
    CHECK(get(st, q.table, "x1", &r) == STORE_NOTFOUND, "the finished record stays finished");
    CHECK(get(st, q.table, "x2", &r) == STORE_OK && r.attempts == 0 && r.hold == 0 &&
              r.claimed_until == 0,
          "the claim lost in the crash: x2 is unclaimed, whole");
    CHECK(claim(st, &q, 5, NULL, NULL, &c) == STORE_OK && strcmp(c.keys, "x2") == 0,
          "and claimable");
    store_close(st);
}

/* Puts the "n" records "<prefix>0" … of "len" bytes each in one commit. */
static void
puts_large(Store *st, uint32_t table, const char *prefix, int n, size_t len)
{
    char *value = malloc(len + 1), key[32];
    memset(value, 'v', len);
    value[len] = '\0';
    StoreTxn *t = begin(st, true);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s%d", prefix, i);
        CHECK(put(t, table, key, value) == STORE_OK, "put %s", key);
    }
    CHECK(store_txn_commit(t) == STORE_OK, "%d records of %zu bytes in one commit", n, len);
    free(value);
}

/* With sync on, a durable write is one flush of the redo log, not a
 * checkpoint: a machine crash that leaves the data file as at the last
 * checkpoint (with later meta pages) and the log as flushed brings back
 * every write acknowledged since — replayed from the log, which alone
 * holds them.  A commit too large for the log is made durable by a
 * checkpoint instead, and the writes after it are logged again. */
static void
test_machine_crash_log(void)
{
    uint32_t id;
    Store *st = store_checkpointed("log", true, 20, &id);
    if (!st)
        return;
    CHECK(disk_make("log-disk1", "log"), "the disk at the checkpoint");
    CHECK(disk_make("log-bare", "log"), "the same disk, to lose its log");
    StoreStats s0, s1;
    store_stats(st, &s0);
    puts_each(st, id, "d", 10); /* durable, each one flush of the log */
    store_stats(st, &s1);
    CHECK(s1.syncs - s0.syncs >= 10, "10 durable writes, %" PRIu64 " flushes", s1.syncs - s0.syncs);

    puts_large(st, id, "big", 24, 128 * 1024); /* 3 MiB: more than the log takes */
    CHECK(disk_make("log-disk2", "log"), "the disk at the large commit's checkpoint");
    puts_each(st, id, "e", 10);
    CHECK(log_copy("log", "log-disk1") && log_copy("log", "log-disk2") &&
              unlink(files_of("log-bare").log) == 0,
          "the log as flushed");
    CHECK(meta_copy("log", "log-disk1") && meta_copy("log", "log-disk2") &&
              meta_copy("log", "log-bare"),
          "later meta pages on the disks");
    store_close(st);

    CHECK(count_prefix("log-disk1", id, "a") == 20 && count_prefix("log-disk1", id, "d") == 10,
          "after the crash: the checkpoint's records, and the 10 durable writes after it (d: %d)",
          count_prefix("log-disk1", id, "d"));
    CHECK(count_prefix("log-disk1", id, "big") == 0, "but not what came after its chain broke");
    CHECK(count_prefix("log-bare", id, "a") == 20 && count_prefix("log-bare", id, "d") == 0,
          "without the log, only the checkpoint's records");
    CHECK(count_prefix("log-disk2", id, "big") == 24 && count_prefix("log-disk2", id, "e") == 10 &&
              count_prefix("log-disk2", id, "") == 64,
          "the large commit, through its checkpoint, and the writes logged after it: %d records",
          count_prefix("log-disk2", id, ""));
}

/* Two processes of four threads, every write durable (counted writes, a
 * counter each): their entries meet in one log, in commit order, so a
 * machine crash with the disk as at the checkpoint before them brings every
 * one of them back, and the counter exact. */
static void
test_machine_crash_log_processes(void)
{
    enum { P = 2, T = 4, W = 25 };
    Store *st = open_store("logp", true, 0);
    uint32_t id = table_make(st, "x");
    CHECK(checkpoint_wait("logp") > 0, "a checkpoint covers the table");
    CHECK(disk_make("logp-disk", "logp"), "the disk at the checkpoint");
    child_writers_run("logp", P, T, W);
    CHECK(log_copy("logp", "logp-disk") && meta_copy("logp", "logp-disk"),
          "the log as flushed, later meta pages");
    store_close(st);
    st = open_store("logp-disk", true, 0); /* after the crash */
    if (!st)
        return;
    CHECK(records_count(st, id) == P * T * W, "every durable write of both processes: %d",
          records_count(st, id));
    StoreTxn *t = begin(st, false);
    CHECK(counter_read(t, id) == P * T * W, "the counter exact");
    store_txn_abort(t);
    store_close(st);
}

/* ---- the disk as checkpoints sync it ---- */

/* While "ino" is set, every sync of the data file of that inode writes
 * what it makes durable into "disk" as well: the pages of a
 * sync_file_range, the whole file for fdatasync — so "disk" is what a
 * machine that crashed would have kept of that file, and nothing else. */
static struct {
    ino_t ino;
    char disk[300];
    int ranges; /* the sync_file_range calls copied */
    int failed; /* the copies that failed */
} synced;

/* Copies "len" bytes at "at" of "fd" (0: to its end) into synced.disk. */
static void
synced_copy(int fd, off_t at, off_t len)
{
    struct stat sb;
    if (!synced.ino || fstat(fd, &sb) != 0 || sb.st_ino != synced.ino)
        return;
    if (!len)
        len = sb.st_size - at;
    char *buf = malloc((size_t)len);
    int out = open(synced.disk, O_WRONLY);
    if (!(buf && out >= 0 && pread(fd, buf, (size_t)len, at) == len &&
          pwrite(out, buf, (size_t)len, at) == len))
        synced.failed++;
    if (out >= 0)
        close(out);
    free(buf);
}

int
sync_file_range(int fd, off_t at, off_t len, unsigned int flags)
{
    static int (*real)(int, off_t, off_t, unsigned int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "sync_file_range");
    synced.ranges += synced.ino != 0;
    synced_copy(fd, at, len);
    return real(fd, at, len, flags);
}

int
fdatasync(int fd)
{
    static int (*real)(int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "fdatasync");
    synced_copy(fd, 0, 0);
    return real(fd);
}

/* A checkpoint syncs only the pages put to use since the one before, not
 * the copies the commits in between made and freed again: a machine crash
 * that leaves the data file as the first checkpoint's syncs left it and
 * then exactly what each later sync wrote (with later meta pages) brings
 * back, through the last checkpoint, every record, after rounds of claims
 * and finishes that copy, free and reuse the same pages. */
static void
test_machine_crash_pages(void)
{
    Store *st = open_store("pages", true, 0);
    StoreQueue q = {.table = table_make(st, "q"), .timeout_ns = 3600 * SEC};
    char key[32];
    struct stat sb;
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "a%03d", i);
        add(st, &q, key, "value", NULL, 0);
    }
    CHECK(checkpoint_wait("pages") > 0, "a checkpoint covers the first records");
    snprintf(synced.disk, sizeof synced.disk, "%s", files_of("pages-disk").data);
    CHECK(disk_make("pages-disk", "pages") && stat(files_of("pages").data, &sb) == 0,
          "the disk at the checkpoint");
    synced.ino = sb.st_ino;
    int finished = 0;
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 40; i++) {
            Claimed c;
            snprintf(key, sizeof key, "b%d-%02d", round, i);
            add(st, &q, key, "value", NULL, 0);
            CHECK(claim(st, &q, 1, NULL, NULL, &c) == STORE_OK && c.hold, "claim %s", key);
            StoreTxn *t = begin(st, true);
            finished += store_record_delete(t, q.table, &q, bytes_of(c.keys), c.hold) == STORE_OK &&
                        store_txn_commit(t) == STORE_OK;
        }
        CHECK(checkpoint_wait("pages") > 0, "a checkpoint after round %d", round);
    }
    synced.ino = 0;
    CHECK(file_copy(files_of("pages").ckpt, files_of("pages-disk").ckpt) &&
              log_copy("pages", "pages-disk"),
          "the record and the log");
    /* The same disk, but with the meta pages of later commits. */
    CHECK(disk_make("pages-later", "pages-disk") && meta_copy("pages", "pages-later"),
          "the disk with later meta pages");
    store_close(st);
    struct statfs fs;
    bool pagewise = statfs(path_of("pages"), &fs) == 0 &&
                    (fs.f_type == EXT4_SUPER_MAGIC || fs.f_type == XFS_SUPER_MAGIC);
    if (pagewise)
        CHECK(synced.ranges > 0, "checkpoints synced page ranges: %d", synced.ranges);
    else
        printf("# not ext4 or XFS: every checkpoint synced the whole file (%d ranges)\n",
               synced.ranges);
    CHECK(synced.failed == 0, "%d copies of synced bytes failed", synced.failed);
    CHECK(finished == 320, "320 records claimed and finished");
    static const char *const disks[] = {"pages-disk", "pages-later"};
    for (int i = 0; i < 2; i++) {
        int a = count_prefix(disks[i], q.table, "a"), b = count_prefix(disks[i], q.table, "b");
        /* Claims take the head: the 200 "a" records went first, then 120
         * of the "b" ones; the 200 "b" records left are the unfinished. */
        CHECK(a == 0 && b == 200,
              "%s after the crash: the 200 records not finished, and none of those finished: "
              "%d and %d",
              disks[i], a, b);
    }
}

/* With sync on, a finish on a queue that keeps is replayed from the redo
 * log like any durable write: after a machine crash the record is back
 * done, and so is its entry in the done database, so that the queue's
 * next write reaps it once its KEEP is over. */
static void
test_machine_crash_keep(void)
{
    uint32_t id;
    Store *st = store_checkpointed("keep", true, 5, &id);
    if (!st)
        return;
    CHECK(disk_make("keep-disk", "keep"), "the disk at the checkpoint");
    StoreQueue q = {.table = id, .timeout_ns = 30 * SEC, .keep_ns = 3600 * SEC};
    StoreTxn *t = begin(st, true);
    CHECK(store_record_delete(t, id, &q, bytes_of("a0"), 0) == STORE_OK, "finish a0: done");
    commit(t);
    CHECK(log_copy("keep", "keep-disk") && meta_copy("keep", "keep-disk"),
          "the log as flushed, later meta pages on the disk");
    store_close(st);
    if (!(st = open_store("keep-disk", false, 0)))
        return;
    StoreRecord r;
    CHECK(get(st, id, "a0", &r) == STORE_OK && r.completed_at != 0 && counts_of(st, &q).done == 1,
          "after the crash: a0 done, counted");
    q.keep_ns = 1;
    add(st, &q, "new", "v", NULL, 0);
    CHECK(get(st, id, "a0", &r) == STORE_NOTFOUND && counts_of(st, &q).done == 0,
          "reaped by the next write once its KEEP is over: its done entry came back too");
    store_close(st);
}

int
main(void)
{
    static const TestCase cases[] = {test_machine_crash,
                                     test_machine_crash_lazy_claim,
                                     test_machine_crash_log,
                                     test_machine_crash_log_processes,
                                     test_machine_crash_pages,
                                     test_machine_crash_keep,
                                     NULL};
    return test_root_main("lmdb_crash_test", cases);
}
