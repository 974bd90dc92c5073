/* run.c — a timed run of worker processes (see run.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

enum { MAX_WORKERS = 256, SAMPLES_PER_WORKER = 1 << 20 };

/* What the workers and the parent share (an anonymous shared mapping). */
typedef struct Shared {
    double start;           /* when the start line opened */
    atomic_long units_left; /* units not yet started, over all workers */
    struct {
        long units;
        long ops;
        long samples;
        double end;
        int failed;
    } w[MAX_WORKERS];
} Shared;

/* The monotonic clock in seconds (comparable across processes). */
double
bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* qsort order of two floats, ascending. */
static int
cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* "tv" in seconds. */
static double
cpu_seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* The body of worker "i": never returns. */
static void
worker(const BenchSpec *spec, int i, Shared *sh, float *lat, int ready_fd, int go_fd)
{
    void *state = spec->setup ? spec->setup(i, spec->arg) : spec->arg;
    char c = state ? 'r' : 'x';
    if (write(ready_fd, &c, 1) != 1 || !state)
        _exit(1);
    close(ready_fd);
    /* The start line: the parent closes the other end. */
    while (read(go_fd, &c, 1) < 0 && errno == EINTR)
        ;
    close(go_fd);
    long units = 0, ops = 0, samples = 0;
    int failed = 0;
    for (;;) {
        if (bench_now() - sh->start >= spec->seconds)
            break;
        if (atomic_fetch_sub(&sh->units_left, 1) <= 0)
            break;
        double t0 = bench_now();
        long n = spec->unit(state);
        double t1 = bench_now();
        if (n < 0) {
            failed = 1;
            break;
        }
        if (n == 0)
            break;
        if (samples < SAMPLES_PER_WORKER)
            lat[samples++] = (float)((t1 - t0) * 1e6);
        units++;
        ops += n;
    }
    sh->w[i].end = bench_now();
    sh->w[i].units = units;
    sh->w[i].ops = ops;
    sh->w[i].samples = samples;
    if (spec->teardown && spec->teardown(state) < 0)
        failed = 1;
    sh->w[i].failed = failed;
    _exit(failed);
}

/* Forks the workers, opens the start line once all are set up, and gathers
 * what they measured (see run.h). */
int
bench_run(const BenchSpec *spec, BenchResult *out)
{
    memset(out, 0, sizeof *out);
    out->failed = 1;
    int n = spec->workers;
    if (n < 1 || n > MAX_WORKERS) {
        fprintf(stderr, "bench: workers must be 1 to %d\n", MAX_WORKERS);
        return -1;
    }
    Shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    size_t lat_size = (size_t)n * SAMPLES_PER_WORKER * sizeof(float);
    float *lat = mmap(NULL, lat_size, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sh == MAP_FAILED || lat == MAP_FAILED) {
        perror("bench: mmap");
        return -1;
    }
    atomic_store(&sh->units_left, spec->max_units > 0 ? spec->max_units : LONG_MAX);
    int ready[2], go[2];
    if (pipe(ready) < 0 || pipe(go) < 0) {
        perror("bench: pipe");
        return -1;
    }
    struct rusage before, after;
    getrusage(RUSAGE_CHILDREN, &before);
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    int started = 0, setup_failed = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("bench: fork");
            setup_failed = 1;
            break;
        }
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            worker(spec, i, sh, lat + (size_t)i * SAMPLES_PER_WORKER, ready[1], go[0]);
        }
        pids[started++] = pid;
    }
    close(ready[1]);
    close(go[0]);
    for (int i = 0; i < started; i++) {
        char c;
        ssize_t got = read(ready[0], &c, 1);
        if (got < 0 && errno == EINTR) {
            i--;
            continue;
        }
        if (got != 1 || c != 'r')
            setup_failed = 1;
        if (got != 1)
            break;
    }
    close(ready[0]);
    if (setup_failed)
        for (int i = 0; i < started; i++)
            kill(pids[i], SIGKILL);
    sh->start = bench_now();
    close(go[1]); /* the start line opens */
    int failed = setup_failed;
    for (int i = 0; i < started; i++) {
        int status;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    free(pids);
    getrusage(RUSAGE_CHILDREN, &after);

    double end = sh->start;
    long samples = 0;
    for (int i = 0; i < n; i++) {
        out->units += sh->w[i].units;
        out->ops += sh->w[i].ops;
        samples += sh->w[i].samples;
        if (sh->w[i].end > end)
            end = sh->w[i].end;
    }
    out->seconds = end - sh->start;
    out->ops_per_s = out->seconds > 0 ? (double)out->ops / out->seconds : 0;
    double cpu = cpu_seconds(&after.ru_utime) + cpu_seconds(&after.ru_stime) -
                 cpu_seconds(&before.ru_utime) - cpu_seconds(&before.ru_stime);
    out->client_cpu_us = out->ops > 0 ? cpu * 1e6 / (double)out->ops : 0;
    if (samples > 0) {
        float *all = malloc((size_t)samples * sizeof *all);
        long k = 0;
        for (int i = 0; i < n; i++) {
            memcpy(all + k, lat + (size_t)i * SAMPLES_PER_WORKER,
                   (size_t)sh->w[i].samples * sizeof *all);
            k += sh->w[i].samples;
        }
        qsort(all, (size_t)samples, sizeof *all, cmp_float);
        out->median_us = all[samples / 2];
        long rank = (long)((double)samples * 0.99 + 0.999999); /* nearest rank */
        out->p99_us = all[rank > 0 ? rank - 1 : 0];
        free(all);
    }
    out->failed = failed;
    munmap(lat, lat_size);
    munmap(sh, sizeof *sh);
    return failed ? -1 : 0;
}

/* The one-line result (see run.h). */
void
bench_result_print(const BenchResult *r, FILE *to)
{
    fprintf(to,
            "units=%ld ops=%ld seconds=%.3f ops_per_s=%.1f median_us=%.1f p99_us=%.1f "
            "client_cpu_us=%.1f%s\n",
            r->units, r->ops, r->seconds, r->ops_per_s, r->median_us, r->p99_us, r->client_cpu_us,
            r->failed ? " failed=1" : "");
}

/* -w -t -n and the program's own options (see run.h). */
int
bench_parse_options(int argc, char **argv, BenchSpec *spec, const char *extra,
                    int (*take)(int opt, const char *arg), const char *usage, int operands)
{
    char optstring[64];
    snprintf(optstring, sizeof optstring, "+w:t:n:%s", extra ? extra : "");
    int opt;
    while ((opt = getopt(argc, argv, optstring)) != -1) {
        switch (opt) {
        case 'w': spec->workers = atoi(optarg); break;
        case 't': spec->seconds = atof(optarg); break;
        case 'n': spec->max_units = atol(optarg); break;
        case '?': fputs(usage, stderr); return -1;
        default:
            if (!take || take(opt, optarg) < 0) {
                fputs(usage, stderr);
                return -1;
            }
        }
    }
    if (spec->workers < 1 || spec->seconds <= 0 || argc - optind != operands) {
        fputs(usage, stderr);
        return -1;
    }
    return optind;
}

/* Runs and prints (see run.h). */
int
bench_run_and_print(const BenchSpec *spec)
{
    BenchResult r;
    int rc = bench_run(spec, &r);
    bench_result_print(&r, stdout);
    return rc < 0 ? 1 : 0;
}

/* The record's file name from a claimed line (see run.h). */
int
bench_record_name(const char *json, char *name, size_t size)
{
    const char *id = strstr(json, "\"id\":\"");
    const char *colon = id ? strchr(id + 6, ':') : NULL;
    const char *end = colon ? strchr(colon, '"') : NULL;
    if (!end || (size_t)(end - colon) > size)
        return -1;
    snprintf(name, size, "%.*s", (int)(end - colon - 1), colon + 1);
    return 0;
}
