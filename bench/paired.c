/* paired.c — bench/paired: claim+rm cycles on several queues in turn, from
 * one process, so that whatever else the machine does falls on all of them
 * alike; what differs between their times is the queues' own cost.
 *
 *     bench/paired [-n CYCLES] [-k] QUEUE_DIR…
 *
 * Takes CYCLES turns (default 2,000); each turn does one cycle on every
 * QUEUE_DIR, starting one further along the list each turn: open QUEUE_DIR/claim, read the record, close, unlink
 * QUEUE_DIR/ID, timed.  With -k a record like it is then written to
 * QUEUE_DIR/new, untimed, so the queue keeps its size.  Prints a line per
 * QUEUE_DIR:
 *
 *     dir=QUEUE_DIR cycles=N median_us=M p99_us=P mean_us=A
 *
 * A queue that runs dry ends the turns (for all of them). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

/* qsort order of two doubles, ascending. */
static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One timed claim+rm cycle on "dir": its µs, 0 when nothing was
 * claimable, -1 on an error ("json" is room for the line read). */
static double
cycle(const char *dir, char *json, size_t size)
{
    char path[PATH_MAX], name[512];
    snprintf(path, sizeof path, "%s/claim", dir);
    double t0 = bench_now();
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return -1;
    }
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, json + len, size - 1 - len);
        if (n < 0) {
            perror(path);
            close(fd);
            return -1;
        }
        len += (size_t)n;
        if (n == 0 || json[len - 1] == '\n' || len == size - 1)
            break;
    }
    close(fd);
    json[len] = '\0';
    if (len == 0)
        return 0;
    if (bench_record_name(json, name, sizeof name) < 0) {
        fprintf(stderr, "bench/paired: no id in %s\n", json);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (unlink(path) < 0) {
        perror(path);
        return -1;
    }
    return (bench_now() - t0) * 1e6;
}

/* Adds one record to "dir"/new, of the shape bench/loadgen enqueues.  0, or
 * -1. */
static int
put_back(const char *dir)
{
    static const char line[] = "{\"url\":\"https://example.test/w0/1\",\"n\":1}\n";
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/new", dir);
    int fd = open(path, O_WRONLY | O_APPEND);
    if (fd < 0) {
        perror(path);
        return -1;
    }
    int rc = write(fd, line, sizeof line - 1) == (ssize_t)(sizeof line - 1) ? 0 : -1;
    if (rc < 0)
        perror(path);
    return close(fd) < 0 || rc < 0 ? -1 : 0;
}

/* Takes the turns and prints a line per queue. */
int
main(int argc, char **argv)
{
    long turns = 2000;
    int keep = 0, opt;
    while ((opt = getopt(argc, argv, "n:k")) != -1) {
        if (opt == 'n') {
            turns = atol(optarg);
        } else if (opt == 'k') {
            keep = 1;
        } else {
            fprintf(stderr, "usage: bench/paired [-n CYCLES] [-k] QUEUE_DIR…\n");
            return 2;
        }
    }
    int ndirs = argc - optind;
    if (ndirs < 1 || turns < 1) {
        fprintf(stderr, "usage: bench/paired [-n CYCLES] [-k] QUEUE_DIR…\n");
        return 2;
    }
    char **dirs = argv + optind;
    double *times = calloc((size_t)ndirs * (size_t)turns, sizeof *times);
    char json[65536];
    long done = 0;
    for (; done < turns; done++) {
        int dry = 0;
        for (int i = 0; i < ndirs; i++) {
            int d = (int)((done + i) % ndirs); /* each queue takes each place in turn */
            double us = cycle(dirs[d], json, sizeof json);
            if (us < 0)
                return 1;
            if (us == 0) {
                dry = 1;
                break;
            }
            times[(size_t)d * (size_t)turns + (size_t)done] = us;
            if (keep && put_back(dirs[d]) < 0)
                return 1;
        }
        if (dry)
            break;
    }
    if (done == 0) {
        fprintf(stderr, "bench/paired: a queue was empty\n");
        return 1;
    }
    for (int d = 0; d < ndirs; d++) {
        double *t = times + (size_t)d * (size_t)turns, sum = 0;
        for (long i = 0; i < done; i++)
            sum += t[i];
        qsort(t, (size_t)done, sizeof *t, cmp_double);
        long rank = (long)((double)done * 0.99 + 0.999999);
        printf("dir=%s cycles=%ld median_us=%.1f p99_us=%.1f mean_us=%.1f\n", dirs[d], done,
               t[done / 2], t[rank > 0 ? rank - 1 : 0], sum / (double)done);
    }
    free(times);
    return 0;
}
