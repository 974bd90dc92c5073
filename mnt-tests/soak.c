/* soak.c — the processes of queuefs's soak (scripts/soak): workers that
 * claim, finish, release and abandon records through a mount, and a
 * producer that creates them.  Every event goes, one line per event, to a
 * log that mnt-tests/soakcheck.c checks afterwards.
 *
 *     soak worker   NAME MOUNT LOG SEED STOPFILE
 *     soak producer NAME MOUNT[,MOUNT…] LOG SEED STOPFILE
 *
 * Both run until the file STOPFILE exists (no signal, so no system call on
 * the mount is ever interrupted).  A worker then drains: it goes on until its claims
 * have read empty for QUIET_MS in a row (or DRAIN_MAX_MS have passed).  Each
 * turn it opens MOUNT/jobs/claim and reads it (empty: a short sleep), then
 * picks at random what to do with the record:
 *
 *   finish    unlink MOUNT/jobs/ID
 *   release   rename to MOUNT/jobs/released/ID, or …/ID@300ms (NOT BEFORE)
 *   abandon   nothing: the hold lapses after the queue's TIMEOUT ("quick");
 *             or sleep past the TIMEOUT first ("lapse"); or sleep about the
 *             TIMEOUT and then finish or release anyway ("late": a late
 *             finish may delete a record another worker holds now, which
 *             `rm jobs/ID` allows)
 *
 * The producer writes batches of JSON lines, each
 * {"serial":N,…} with N unique and increasing, to MOUNT/jobs/new in one
 * write(), taking the mounts in turn, while a listing of MOUNT/jobs shows
 * fewer than BACKLOG_MAX records.
 *
 * Errors (ENOTCONN while a daemon is dead, ENOENT while its mount point is
 * unmounted) are logged and never fatal.  Every line of the log reads
 *
 *     EVENT WHO START_RT START_MONO END_RT END_MONO FIELDS…
 *
 * with the times of the system call (CLOCK_REALTIME and CLOCK_MONOTONIC, in
 * nanoseconds) taken just before it started and just after it returned:
 *
 *     CREATED       P … SERIAL MOUNT              write() returned success
 *     CREATE_FAILED P … SERIAL MOUNT ERRNO        it failed: maybe stored
 *     CLAIM         W … ID ATTEMPTS CLAIMED_UNTIL_NS SERIAL MOUNT
 *     CLAIM_FAILED  W … MOUNT ERRNO open|read|parse
 *     FINISH        W … ID RESULT LATE MOUNT      RESULT is 0 or an errno name
 *     RELEASE       W … ID DELAY_MS RESULT LATE MOUNT
 *     ABANDON       W … ID quick|lapse|late MOUNT
 *     SUMMARY       W … EMPTY_CLAIMS              at exit
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    TIMEOUT_MS = 2000,    /* the queue's TIMEOUT, as scripts/soak defines it */
    QUIET_MS = 2500,      /* draining: empty this long (> TIMEOUT + 300ms) ends a worker */
    DRAIN_MAX_MS = 30000, /* draining never lasts longer */
    EMPTY_SLEEP_MS = 20,
    ERROR_SLEEP_MS = 50,
    BACKLOG_MAX = 300, /* the producer waits while the queue holds this many */
};

static int log_fd = -1;
static const char *who = "?";
static const char *stop_file;

/* True once the driver asks to stop. */
static bool
stopping(void)
{
    return access(stop_file, F_OK) == 0;
}

/* ---- time and chance ---- */

typedef struct Stamp {
    int64_t rt, mono;
} Stamp;

/* Both clocks, now. */
static Stamp
stamp(void)
{
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    return (Stamp){(int64_t)r.tv_sec * 1000000000 + r.tv_nsec,
                   (int64_t)m.tv_sec * 1000000000 + m.tv_nsec};
}

/* Sleeps "ms" milliseconds. */
static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static uint64_t rng_state;

/* A pseudo-random number below "n" (xorshift64*: a seed repeats a run's
 * choices, not its timing). */
static uint64_t
rnd(uint64_t n)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (rng_state * 2685821657736338717ULL) % n;
}

/* Starts the sequence rnd() draws from at "seed". */
static void
rnd_seed(uint64_t seed)
{
    rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (int i = 0; i < 8; i++)
        rnd(2);
}

/* ---- the log ---- */

/* The name of errno "e" (ENOENT), or "0" for success. */
static const char *
err_name(int e)
{
    if (!e)
        return "0";
    const char *n = strerrorname_np(e);
    return n ? n : "EUNKNOWN";
}

/* Appends one event line: "event", who, the two stamps, then the fields
 * formatted by "fmt".  One write() a line, so lines never interleave. */
__attribute__((format(printf, 4, 5))) static void
log_event(const char *event, Stamp start, Stamp end, const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "%s %s %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " ",
                     event, who, start.rt, start.mono, end.rt, end.mono);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (write(log_fd, line, (size_t)n) != n) {
        perror("soak: writing the log");
        exit(2);
    }
}

/* ---- a claimed record ---- */

/* An RFC 3339 UTC datetime ("2026-11-30T10:30:09.06383514Z") as
 * nanoseconds since the epoch; -1 when it is not one. */
static int64_t
datetime_ns(const char *s)
{
    struct tm tm = {0};
    int used = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &used) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t ns = (int64_t)timegm(&tm) * 1000000000;
    const char *p = s + used;
    if (*p == '.') {
        int64_t scale = 100000000;
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            ns += (*p - '0') * scale;
    }
    return *p == 'Z' ? ns : -1;
}

/* The integer after "\"key\":" in "json", or "absent" when there is none. */
static int64_t
json_int(const char *json, const char *key, int64_t absent)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : absent;
}

typedef struct Claimed {
    int64_t id, attempts, until, serial;
} Claimed;

/* Reads what "json" (a claim's line) says; false when it lacks a field. */
static bool
claimed_parse(const char *json, Claimed *c)
{
    const char *id = strstr(json, "\"id\":\"jobs:");
    const char *until = strstr(json, "\"claimed_until\":\"");
    if (!id || !until)
        return false;
    c->id = strtoll(id + strlen("\"id\":\"jobs:"), NULL, 10);
    c->until = datetime_ns(until + strlen("\"claimed_until\":\""));
    c->attempts = json_int(json, "attempts", 0);
    c->serial = json_int(json, "serial", -1);
    return c->id > 0 && c->until > 0 && c->attempts > 0 && c->serial > 0;
}

/* ---- the worker ---- */

typedef struct Worker {
    const char *mount;
    char claim_path[4096];
    long empty;
    bool draining;
    Stamp drain_start, last_busy;
} Worker;

/* Claims through the mount: 1 with "c" filled, 0 when nothing was
 * claimable, -1 on an error (logged). */
static int
worker_claim(Worker *w, Claimed *c)
{
    char json[65536];
    Stamp s = stamp();
    int fd = open(w->claim_path, O_RDONLY);
    if (fd < 0) {
        int e = errno;
        log_event("CLAIM_FAILED", s, stamp(), "%s %s open", w->mount, err_name(e));
        return -1;
    }
    size_t len = 0;
    ssize_t n;
    while (len < sizeof json - 1 && (n = read(fd, json + len, sizeof json - 1 - len)) != 0) {
        if (n < 0) {
            int e = errno;
            close(fd);
            log_event("CLAIM_FAILED", s, stamp(), "%s %s read", w->mount, err_name(e));
            return -1;
        }
        len += (size_t)n;
    }
    close(fd);
    Stamp e = stamp();
    json[len] = '\0';
    if (len == 0)
        return 0;
    if (!claimed_parse(json, c)) {
        log_event("CLAIM_FAILED", s, e, "%s EBADMSG parse", w->mount);
        fprintf(stderr, "soak %s: a claim read %s\n", who, json);
        return -1;
    }
    log_event("CLAIM", s, e, "%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %s", c->id,
              c->attempts, c->until, c->serial, w->mount);
    return 1;
}

/* Finishes record "id" (unlink) and logs what the unlink returned. */
static void
worker_finish(Worker *w, int64_t id, bool late)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/jobs/%" PRId64, w->mount, id);
    Stamp s = stamp();
    int e = unlink(path) < 0 ? errno : 0;
    log_event("FINISH", s, stamp(), "%" PRId64 " %s %d %s", id, err_name(e), late, w->mount);
}

/* Releases record "id" (rename into released/, NOT BEFORE "delay_ms" from
 * now when not 0) and logs what the rename returned. */
static void
worker_release(Worker *w, int64_t id, int delay_ms, bool late)
{
    char from[4200], to[4200];
    snprintf(from, sizeof from, "%s/jobs/%" PRId64, w->mount, id);
    if (delay_ms)
        snprintf(to, sizeof to, "%s/jobs/released/%" PRId64 "@%dms", w->mount, id, delay_ms);
    else
        snprintf(to, sizeof to, "%s/jobs/released/%" PRId64, w->mount, id);
    Stamp s = stamp();
    int e = rename(from, to) < 0 ? errno : 0;
    log_event("RELEASE", s, stamp(), "%" PRId64 " %d %s %d %s", id, delay_ms, err_name(e), late,
              w->mount);
}

/* Logs that the worker lets its hold on "id" go unfinished ("how"). */
static void
worker_abandon(Worker *w, int64_t id, const char *how)
{
    Stamp t = stamp();
    log_event("ABANDON", t, t, "%" PRId64 " %s %s", id, how, w->mount);
}

/* Does with claimed record "c" what chance says. */
static void
worker_act(Worker *w, const Claimed *c)
{
    uint64_t r = rnd(1000);
    if (r < 600) {
        worker_finish(w, c->id, false);
    } else if (r < 720) {
        worker_release(w, c->id, 0, false);
    } else if (r < 840) {
        worker_release(w, c->id, 300, false);
    } else if (r < 970) {
        worker_abandon(w, c->id, "quick");
    } else if (r < 980) {
        worker_abandon(w, c->id, "lapse");
        sleep_ms(TIMEOUT_MS + (long)rnd(500));
    } else {
        /* About the TIMEOUT, either side of it: some of these are in time. */
        worker_abandon(w, c->id, "late");
        sleep_ms(TIMEOUT_MS - 150 + (long)rnd(300));
        if (r < 992)
            worker_finish(w, c->id, true);
        else
            worker_release(w, c->id, rnd(2) ? 300 : 0, true);
    }
}

/* True once a draining worker may stop. */
static bool
worker_done(Worker *w)
{
    if (!w->draining && !stopping())
        return false;
    Stamp now = stamp();
    if (!w->draining) {
        w->draining = true;
        w->drain_start = now;
        w->last_busy = now;
    }
    return now.mono - w->last_busy.mono >= (int64_t)QUIET_MS * 1000000 ||
           now.mono - w->drain_start.mono >= (int64_t)DRAIN_MAX_MS * 1000000;
}

/* A worker on "mount" until the stop file exists and the queue has drained;
 * 0 at the end (errors are logged, never fatal). */
static int
run_worker(const char *mount)
{
    Worker w = {.mount = mount};
    snprintf(w.claim_path, sizeof w.claim_path, "%s/jobs/claim", mount);
    while (!worker_done(&w)) {
        Claimed c;
        int got = worker_claim(&w, &c);
        if (got > 0) {
            w.last_busy = stamp();
            worker_act(&w, &c);
        } else if (got == 0) {
            w.empty++;
            sleep_ms(EMPTY_SLEEP_MS);
        } else {
            w.last_busy = stamp();
            sleep_ms(ERROR_SLEEP_MS);
        }
    }
    Stamp t = stamp();
    log_event("SUMMARY", t, t, "%ld", w.empty);
    return 0;
}

/* ---- the producer ---- */

/* Writes one batch of "n" records from serial "first" to "mount"/jobs/new
 * in one write(), and logs each record's outcome. */
static void
produce_batch(const char *mount, int64_t first, int n)
{
    static char buf[1 << 16];
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "{\"serial\":%" PRId64 ",\"pad\":\"%0*d\"}\n", first + i,
                                (int)rnd(64) + 1, 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/jobs/new", mount);
    Stamp s = stamp();
    int e = 0;
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) {
        e = errno;
    } else {
        ssize_t w = write(fd, buf, len);
        if (w < 0)
            e = errno;
        else if ((size_t)w != len)
            e = EIO; /* a short write to new: not what queuefs promises */
    }
    Stamp end = stamp();
    for (int i = 0; i < n; i++) {
        if (e)
            log_event("CREATE_FAILED", s, end, "%" PRId64 " %s %s", first + i, mount, err_name(e));
        else
            log_event("CREATED", s, end, "%" PRId64 " %s", first + i, mount);
    }
    if (fd >= 0)
        close(fd); /* complete lines only: nothing is left for close to store */
}

/* How many records "mount"/jobs lists (a listing never claims), or -1
 * when it cannot be read. */
static long
backlog(const char *mount)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/jobs", mount);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] >= '0' && e->d_name[0] <= '9';
    closedir(d);
    return n;
}

/* The producer on the comma-separated "mounts" until the stop file exists;
 * 0 at the end (errors are logged, never fatal). */
static int
run_producer(char *mounts)
{
    const char *list[8];
    int nmounts = 0;
    for (char *save = NULL, *m = strtok_r(mounts, ",", &save); m && nmounts < 8;
         m = strtok_r(NULL, ",", &save))
        list[nmounts++] = m;
    if (nmounts == 0)
        return 0; /* no mount to produce to */
    int64_t serial = 1;
    for (int turn = 0; !stopping(); turn++) {
        const char *mount = list[turn % nmounts];
        if (backlog(mount) < BACKLOG_MAX) {
            int n = 1 + (int)rnd(32);
            produce_batch(mount, serial, n);
            serial += n;
        }
        sleep_ms((long)rnd(120));
    }
    return 0;
}

/* soak worker|producer NAME MOUNT LOG SEED STOPFILE: 2 on a usage error or
 * when the log cannot be written, else 0. */
int
main(int argc, char **argv)
{
    if (argc != 7 || (strcmp(argv[1], "worker") != 0 && strcmp(argv[1], "producer") != 0)) {
        fprintf(stderr, "usage: soak worker NAME MOUNT LOG SEED STOPFILE\n"
                        "       soak producer NAME MOUNT[,MOUNT…] LOG SEED STOPFILE\n");
        return 2;
    }
    who = argv[2];
    log_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        perror(argv[4]);
        return 2;
    }
    rnd_seed(strtoull(argv[5], NULL, 10));
    stop_file = argv[6];
    return strcmp(argv[1], "worker") == 0 ? run_worker(argv[3]) : run_producer(argv[3]);
}
