/* loadgen.c — bench/loadgen: a queue's workers, from C, through a mount
 * (no shell in the loop).
 *
 *     bench/loadgen [-w WORKERS] [-t SECONDS] [-n UNITS] [-b LINES] MODE QUEUE_DIR
 *
 * MODE is what each worker process repeats:
 *
 *   enqueue        one write() of LINES JSON lines (default 1,000) to
 *                  QUEUE_DIR/new, kept open; ops are records
 *   claim-rm       open QUEUE_DIR/claim, read the record (up to its
 *                  newline), close, unlink QUEUE_DIR/ID
 *   claim-release  the same, then rename QUEUE_DIR/ID to QUEUE_DIR/released/ID
 *   ctl-batch      through the mount's ctl (one session a worker, no BEGIN):
 *                  CLAIM LINES (default 100) FROM the queue, then one DELETE of the records
 *                  it took; ops are records
 *
 * A claim that reads nothing (nothing claimable) ends that worker.  Prints
 * the line run.h describes; the unit times are per write or per cycle. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

typedef enum Mode { ENQUEUE, CLAIM_RM, CLAIM_RELEASE, CTL_BATCH } Mode;

typedef struct Config {
    Mode mode;
    const char *dir;
    long lines;
} Config;

typedef struct Worker {
    const Config *cfg;
    int fd;          /* enqueue: QUEUE_DIR/new; ctl-batch: the mount's ctl */
    char table[256]; /* ctl-batch: the queue's name */
    char *batch;     /* enqueue: the lines of one write */
    size_t batch_len;
    char claim[PATH_MAX];
} Worker;

static const char usage[] = "usage: bench/loadgen [-w WORKERS] [-t SECONDS] [-n UNITS] [-b LINES] "
                            "enqueue|claim-rm|claim-release|ctl-batch QUEUE_DIR\n";

static long lines_option = 1000;
static int lines_given; /* -b was given */

/* Takes -b LINES. */
static int
take_option(int opt, const char *arg)
{
    if (opt != 'b')
        return -1;
    lines_option = atol(arg);
    lines_given = 1;
    return lines_option > 0 ? 0 : -1;
}

/* A worker's state: "new" opened for enqueue, the claim path otherwise. */
static void *
setup(int i, void *arg)
{
    const Config *cfg = arg;
    Worker *w = calloc(1, sizeof *w);
    w->cfg = cfg;
    w->fd = -1;
    snprintf(w->claim, sizeof w->claim, "%s/claim", cfg->dir);
    char path[PATH_MAX];
    if (cfg->mode == CTL_BATCH) {
        const char *slash = strrchr(cfg->dir, '/');
        snprintf(w->table, sizeof w->table, "%s", slash ? slash + 1 : cfg->dir);
        snprintf(path, sizeof path, "%.*s/ctl", slash ? (int)(slash - cfg->dir) : 1,
                 slash ? cfg->dir : ".");
        if ((w->fd = open(path, O_RDWR)) < 0) {
            perror(path);
            free(w);
            return NULL;
        }
        return w;
    }
    if (cfg->mode != ENQUEUE)
        return w;
    snprintf(path, sizeof path, "%s/new", cfg->dir);
    w->fd = open(path, O_WRONLY | O_APPEND);
    if (w->fd < 0) {
        perror(path);
        free(w);
        return NULL;
    }
    /* The same lines every write: what varies is the store's work. */
    size_t cap = (size_t)cfg->lines * 96;
    w->batch = malloc(cap);
    for (long n = 0; n < cfg->lines; n++)
        w->batch_len +=
            (size_t)snprintf(w->batch + w->batch_len, cap - w->batch_len,
                             "{\"url\":\"https://example.test/w%d/%ld\",\"n\":%ld}\n", i, n, n);
    return w;
}

/* One write of the batch: its records, or -1. */
static long
enqueue(Worker *w)
{
    ssize_t n = write(w->fd, w->batch, w->batch_len);
    if (n != (ssize_t)w->batch_len) {
        perror(n < 0 ? "write new" : "write new: short write");
        return -1;
    }
    return w->cfg->lines;
}

/* One claim and its end (unlink or rename): 1, 0 when nothing was
 * claimable, or -1. */
static long
claim_cycle(Worker *w)
{
    char json[65536], name[512], path[PATH_MAX], to[PATH_MAX];
    int fd = open(w->claim, O_RDONLY);
    if (fd < 0) {
        perror(w->claim);
        return -1;
    }
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, json + len, sizeof json - 1 - len);
        if (n < 0) {
            perror("read claim");
            close(fd);
            return -1;
        }
        len += (size_t)n;
        if (n == 0 || json[len - 1] == '\n' || len == sizeof json - 1)
            break;
    }
    if (close(fd) < 0) {
        perror("close claim");
        return -1;
    }
    if (len == 0)
        return 0;
    json[len] = '\0';
    if (bench_record_name(json, name, sizeof name) < 0) {
        fprintf(stderr, "bench/loadgen: no id in %s\n", json);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", w->cfg->dir, name);
    if (w->cfg->mode == CLAIM_RM) {
        if (unlink(path) < 0) {
            perror(path);
            return -1;
        }
        return 1;
    }
    snprintf(to, sizeof to, "%s/released/%s", w->cfg->dir, name);
    if (rename(path, to) < 0) {
        perror(to);
        return -1;
    }
    return 1;
}

/* Writes statement "stmt" to session "fd" and reads its result line into
 * "out" (of "cap" bytes, NUL-terminated): its length, or -1. */
static long
ctl_run(int fd, const char *stmt, char *out, size_t cap)
{
    size_t n = strlen(stmt), len = 0;
    if (write(fd, stmt, n) != (ssize_t)n) {
        perror("write ctl");
        return -1;
    }
    while (len == 0 || out[len - 1] != '\n') {
        ssize_t got = read(fd, out + len, cap - 1 - len);
        if (got <= 0 || len + (size_t)got >= cap - 1) {
            perror(got < 0 ? "read ctl" : "read ctl: no whole line");
            return -1;
        }
        len += (size_t)got;
    }
    out[len] = '\0';
    if (strncmp(out, "{\"error\"", 9) == 0) {
        fprintf(stderr, "bench/loadgen: %s", out);
        return -1;
    }
    return (long)len;
}

/* One CLAIM of LINES records through ctl and one DELETE of those it took:
 * the records, 0 when nothing was claimable, or -1. */
static long
ctl_batch(Worker *w)
{
    static char result[1 << 20], stmt[1 << 16];
    snprintf(stmt, sizeof stmt, "CLAIM %ld FROM %s;\n", w->cfg->lines, w->table);
    if (ctl_run(w->fd, stmt, result, sizeof result) < 0)
        return -1;
    size_t len = (size_t)snprintf(stmt, sizeof stmt, "DELETE ");
    long taken = 0;
    for (const char *p = result; (p = strstr(p, "\"id\":\"")) != NULL;) {
        p += 6;
        const char *end = strchr(p, '"');
        if (!end || len + (size_t)(end - p) + 4 >= sizeof stmt)
            return -1;
        len += (size_t)snprintf(stmt + len, sizeof stmt - len, "%s%.*s", taken ? ", " : "",
                                (int)(end - p), p);
        taken++;
        p = end;
    }
    if (!taken)
        return 0;
    snprintf(stmt + len, sizeof stmt - len, ";\n");
    return ctl_run(w->fd, stmt, result, sizeof result) < 0 ? -1 : taken;
}

/* One unit of the configured mode. */
static long
unit(void *state)
{
    Worker *w = state;
    return w->cfg->mode == ENQUEUE     ? enqueue(w)
           : w->cfg->mode == CTL_BATCH ? ctl_batch(w)
                                       : claim_cycle(w);
}

/* Closes "new" (its close reports a failed last store). */
static int
teardown(void *state)
{
    Worker *w = state;
    if (w->fd >= 0 && close(w->fd) < 0) {
        perror("close");
        return -1;
    }
    free(w->batch);
    free(w);
    return 0;
}

/* Runs the workers on the queue and prints their line (run.h). */
int
main(int argc, char **argv)
{
    Config cfg = {0};
    BenchSpec spec = BENCH_SPEC_DEFAULT(&cfg);
    int first = bench_parse_options(argc, argv, &spec, "b:", take_option, usage, 2);
    if (first < 0)
        return 2;
    const char *mode = argv[first];
    cfg.mode = strcmp(mode, "enqueue") == 0         ? ENQUEUE
               : strcmp(mode, "claim-rm") == 0      ? CLAIM_RM
               : strcmp(mode, "claim-release") == 0 ? CLAIM_RELEASE
               : strcmp(mode, "ctl-batch") == 0     ? CTL_BATCH
                                                    : (Mode)-1;
    if ((int)cfg.mode < 0) {
        fputs(usage, stderr);
        return 2;
    }
    cfg.dir = argv[first + 1];
    cfg.lines = lines_option;
    if (cfg.mode == CTL_BATCH && lines_option == 1000 && !lines_given)
        cfg.lines = 100;
    return bench_run_and_print(&spec);
}
