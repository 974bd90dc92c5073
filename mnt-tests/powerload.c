/* powerload.c — the workload of queuefs's power-loss test
 * (scripts/powerloss): writers, workers and queuefs-sql runs sharing one
 * store, each logging what queuefs acknowledged.
 *
 *     powerload writer N MOUNT LOG STOPFILE
 *     powerload worker N MOUNT LOG STOPFILE
 *     powerload sql    N QUEUEFS_SQL STORE LOG STOPFILE [-o sync=…]
 *
 * Each runs until STOPFILE exists or it is killed.  The queue is q, defined
 * by the driver.  Every record is one JSON object
 *
 *     {"s":SERIAL,"b":BATCH,"w":N,"pad":PAD}
 *
 * SERIAL unique over the run (N × 10^8 + 1, 2, … for process N), BATCH the
 * first serial of the batch it was written in, PAD PAD_LEN characters: the
 * serial and "-" repeated (so a record's content can be checked whole).
 *
 *   writer   writes batches of BATCH_LINES records to MOUNT/q/new, one
 *            write() a batch: one transaction, all of it or none; it
 *            waits while MOUNT/q/stats counts more than BACKLOG_MAX
 *            records, so the store stays far smaller than the disk
 *   worker   reads MOUNT/q/claim (a claim) and unlinks MOUNT/q/ID, except
 *            one claim in KEEP_ONE_IN, left held
 *   sql      runs QUEUEFS_SQL STORE 'BEGIN; CREATE q = {…}; … COMMIT;'
 *            with SQL_BATCH records, one transaction
 *
 * The log (one write() a line, O_APPEND, outside the disk under test) has
 * a line before each call and one after it returned:
 *
 *     TRY BATCH COUNT      a batch of COUNT serials from BATCH is written
 *     ACK BATCH            the write (or queuefs-sql) returned success
 *     FAIL BATCH ERRNO     it failed (queuefs-sql: EXIT<status>)
 *     CLAIM ID SERIAL      a claim read q:ID
 *     DTRY ID SERIAL       unlink(MOUNT/q/ID) is called
 *     DEL ID SERIAL        it returned success
 *     DFAIL ID SERIAL ERRNO
 *
 * An acknowledgement is logged only after its call returned, so a kill
 * between the two loses the line, never invents one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    BATCH_LINES = 40,
    SQL_BATCH = 5,
    PAD_LEN = 1000,
    KEEP_ONE_IN = 10,
    SERIALS_PER_PROCESS = 100000000,
    ERROR_SLEEP_MS = 20,
    BACKLOG_MAX = 5000, /* a writer waits while q holds more records */
};

static int log_fd = -1;
static const char *stop_file;

static bool
stopping(void)
{
    return access(stop_file, F_OK) == 0;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static const char *
err_name(int e)
{
    const char *n = strerrorname_np(e);
    return n ? n : "EUNKNOWN";
}

/* Appends one line to the log in one write(). */
__attribute__((format(printf, 1, 2))) static void
log_line(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    if (write(log_fd, buf, (size_t)n) != n) {
        perror("powerload: the log");
        exit(1);
    }
}

/* The pad of "serial": its decimal digits and "-", repeated to PAD_LEN. */
static void
pad_of(uint64_t serial, char out[PAD_LEN + 1])
{
    char unit[24];
    int n = snprintf(unit, sizeof unit, "%" PRIu64 "-", serial);
    for (int i = 0; i < PAD_LEN; i++)
        out[i] = unit[i % n];
    out[PAD_LEN] = '\0';
}

/* The decimal number after "key" in "json", or -1. */
static int64_t
field(const char *json, const char *key)
{
    const char *p = strstr(json, key);
    if (!p)
        return -1;
    p += strlen(key);
    if (*p < '0' || *p > '9')
        return -1;
    return strtoll(p, NULL, 10);
}

/* The records MOUNT/q/stats counts, or -1. */
static int64_t
backlog(const char *mount)
{
    char path[4096], json[4096];
    snprintf(path, sizeof path, "%s/q/stats", mount);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t got = read(fd, json, sizeof json - 1);
    close(fd);
    json[got > 0 ? got : 0] = '\0';
    return field(json, "\"records\":");
}

/* Writes batches to MOUNT/q/new until stopped. */
static int
writer(int n, const char *mount)
{
    char path[4096], pad[PAD_LEN + 1];
    snprintf(path, sizeof path, "%s/q/new", mount);
    size_t cap = BATCH_LINES * (PAD_LEN + 128);
    char *buf = malloc(cap);
    if (!buf)
        return 1;
    uint64_t next = (uint64_t)n * SERIALS_PER_PROCESS + 1;
    int fd = -1;
    while (!stopping()) {
        if (backlog(mount) > BACKLOG_MAX) {
            sleep_ms(5);
            continue;
        }
        uint64_t batch = next;
        size_t len = 0;
        for (int i = 0; i < BATCH_LINES; i++) {
            pad_of(next, pad);
            len +=
                (size_t)snprintf(buf + len, cap - len,
                                 "{\"s\":%" PRIu64 ",\"b\":%" PRIu64 ",\"w\":%d,\"pad\":\"%s\"}\n",
                                 next, batch, n, pad);
            next++;
        }
        if (fd < 0 && (fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0) {
            log_line("TRY %" PRIu64 " %d", batch, BATCH_LINES);
            log_line("FAIL %" PRIu64 " %s", batch, err_name(errno));
            sleep_ms(ERROR_SLEEP_MS);
            continue;
        }
        log_line("TRY %" PRIu64 " %d", batch, BATCH_LINES);
        ssize_t w = write(fd, buf, len);
        if (w == (ssize_t)len) {
            log_line("ACK %" PRIu64, batch);
        } else {
            log_line("FAIL %" PRIu64 " %s", batch, w < 0 ? err_name(errno) : "SHORT");
            close(fd);
            fd = -1;
            sleep_ms(ERROR_SLEEP_MS);
        }
    }
    free(buf);
    return 0;
}

/* Claims and finishes records until stopped. */
static int
worker(int n, const char *mount)
{
    char path[4096], record[4096], json[8192];
    snprintf(path, sizeof path, "%s/q/claim", mount);
    unsigned turn = (unsigned)n;
    while (!stopping()) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            sleep_ms(ERROR_SLEEP_MS);
            continue;
        }
        size_t len = 0;
        ssize_t got;
        while (len < sizeof json - 1 && (got = read(fd, json + len, sizeof json - 1 - len)) > 0)
            len += (size_t)got;
        close(fd);
        json[len] = '\0';
        int64_t id = field(json, "\"id\":\"q:"), serial = field(json, "\"s\":");
        if (len == 0 || id < 0 || serial < 0) {
            sleep_ms(len ? ERROR_SLEEP_MS : 2);
            continue;
        }
        log_line("CLAIM %" PRId64 " %" PRId64, id, serial);
        if (++turn % KEEP_ONE_IN == 0)
            continue; /* left held: its hold outlives the run */
        snprintf(record, sizeof record, "%s/q/%" PRId64, mount, id);
        log_line("DTRY %" PRId64 " %" PRId64, id, serial);
        if (unlink(record) == 0)
            log_line("DEL %" PRId64 " %" PRId64, id, serial);
        else
            log_line("DFAIL %" PRId64 " %" PRId64 " %s", id, serial, err_name(errno));
    }
    return 0;
}

/* Runs queuefs-sql with one transaction of SQL_BATCH creates until stopped. */
static int
sql(int n, const char *queuefs_sql, const char *store, const char *opt)
{
    char pad[PAD_LEN + 1];
    size_t cap = SQL_BATCH * (PAD_LEN + 128) + 64;
    char *stmt = malloc(cap);
    if (!stmt)
        return 1;
    uint64_t next = (uint64_t)n * SERIALS_PER_PROCESS + 1;
    while (!stopping()) {
        uint64_t batch = next;
        size_t len = (size_t)snprintf(stmt, cap, "BEGIN;");
        for (int i = 0; i < SQL_BATCH; i++) {
            pad_of(next, pad);
            len +=
                (size_t)snprintf(stmt + len, cap - len,
                                 " CREATE q = {s: %" PRIu64 ", b: %" PRIu64 ", w: %d, pad: '%s'};",
                                 next, batch, n, pad);
            next++;
        }
        snprintf(stmt + len, cap - len, " COMMIT;");
        log_line("TRY %" PRIu64 " %d", batch, SQL_BATCH);
        pid_t pid = fork();
        if (pid == 0) {
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            if (opt)
                execl(queuefs_sql, queuefs_sql, "-o", opt, store, stmt, (char *)NULL);
            else
                execl(queuefs_sql, queuefs_sql, store, stmt, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) {
            log_line("FAIL %" PRIu64 " %s", batch, err_name(errno));
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            log_line("ACK %" PRIu64, batch);
        } else {
            log_line("FAIL %" PRIu64 " %s%d", batch, WIFEXITED(status) ? "EXIT" : "SIGNAL",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            sleep_ms(ERROR_SLEEP_MS);
        }
    }
    free(stmt);
    return 0;
}

int
main(int argc, char **argv)
{
    bool is_sql = argc >= 7 && !strcmp(argv[1], "sql");
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: powerload writer|worker N MOUNT LOG STOPFILE\n"
               "       powerload sql N QUEUEFS_SQL STORE LOG STOPFILE [-o sync=…]\n");
        return 0;
    }
    if (!(is_sql ? argc == 7 || (argc == 9 && !strcmp(argv[7], "-o"))
                 : argc == 6 && (!strcmp(argv[1], "writer") || !strcmp(argv[1], "worker")))) {
        fprintf(stderr, "usage: powerload writer|worker N MOUNT LOG STOPFILE\n"
                        "       powerload sql N QUEUEFS_SQL STORE LOG STOPFILE [-o sync=…]\n");
        return 2;
    }
    int n = atoi(argv[2]);
    if (n < 1 || n > 90) {
        fprintf(stderr, "powerload: N is 1 to 90\n");
        return 2;
    }
    const char *log = argv[is_sql ? 5 : 4];
    stop_file = argv[is_sql ? 6 : 5];
    log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        fprintf(stderr, "powerload: %s: %s\n", log, strerror(errno));
        return 1;
    }
    if (is_sql)
        return sql(n, argv[3], argv[4], argc == 9 ? argv[8] : NULL);
    return !strcmp(argv[1], "writer") ? writer(n, argv[3]) : worker(n, argv[3]);
}
