/* bench.c — queuefs-bench: what a claim costs in the engine alone (no
 * FUSE), as the queue grows and as holds pile up ahead of the head.
 *
 *     queuefs-bench [-o sync=none|full] [-n CLAIMS] [SIZES…]
 *
 * For each size N (default 1000 100000 1000000) it fills a fresh store
 * with N records, then times CLAIMS single-record claims, each its own
 * statement ("CLAIM FROM jobs;"), 1,000 to a transaction so that the
 * disk's sync does not drown the claim's own cost.  A last run fills 100,000
 * records, holds all of them, adds CLAIMS more and times claiming those: the
 * head sits behind 100,000 holds.  It prints claims per second and the
 * ratio of each run to the first. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lang.h"

static double
seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
run(LangSession *s, const char *text)
{
    LangError err = {0};
    if (lang_session_exec(s, text, strlen(text), NULL, NULL, &err)) {
        fprintf(stderr, "queuefs-bench: %s: %s\n", lang_error_name(err.code), err.message);
        exit(1);
    }
}

/* Adds "n" records to "queue", 10,000 to a transaction. */
static void
fill(LangSession *s, const char *queue, long n)
{
    Buf text = {0};
    for (long done = 0; done < n;) {
        lang_buf_reset(&text);
        lang_buf_puts(&text, "BEGIN;");
        for (long i = 0; i < 10000 && done < n; i++, done++)
            lang_buf_printf(&text, "CREATE %s = { url: 'https://example.test/%ld', n: %ld };",
                            queue, done, done);
        lang_buf_puts(&text, "COMMIT;");
        run(s, text.data);
    }
    lang_buf_free(&text);
}

/* Times "claims" single-record claims, each its own statement, 1,000 to a
 * transaction (so the disk's sync is not what is measured); returns claims
 * per second. */
static double
time_claims(LangSession *s, const char *queue, long claims)
{
    Buf text = {0};
    double t0 = seconds();
    for (long done = 0; done < claims;) {
        lang_buf_reset(&text);
        lang_buf_puts(&text, "BEGIN;");
        for (long i = 0; i < 1000 && done < claims; i++, done++)
            lang_buf_printf(&text, "CLAIM FROM %s;", queue);
        lang_buf_puts(&text, "COMMIT;");
        run(s, text.data);
    }
    lang_buf_free(&text);
    return (double)claims / (seconds() - t0);
}

/* A fresh store in a temporary directory. */
static Store *
fresh_store(const StoreOptions *opts, char *dir)
{
    strcpy(dir, "/tmp/queuefs-bench-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("queuefs-bench: mkdtemp");
        exit(1);
    }
    Store *st;
    char msg[256] = "";
    if (store_open(dir, opts, &st, msg, sizeof msg)) {
        fprintf(stderr, "queuefs-bench: %s\n", msg);
        exit(1);
    }
    return st;
}

static void
remove_store(Store *st, const char *dir)
{
    store_close(st);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "queuefs-bench: could not remove %s\n", dir);
}

int
main(int argc, char **argv)
{
    StoreOptions opts = {.sync = false};
    long claims = 10000;
    int c;
    while ((c = getopt(argc, argv, "o:n:h")) != -1) {
        if (c == 'o' && strcmp(optarg, "sync=full") == 0)
            opts.sync = true;
        else if (c == 'o' && strcmp(optarg, "sync=none") == 0)
            opts.sync = false;
        else if (c == 'n')
            claims = atol(optarg);
        else {
            fprintf(stderr, "usage: queuefs-bench [-o sync=none|full] [-n CLAIMS] [SIZES...]\n");
            return c == 'h' ? 0 : 2;
        }
    }
    long defaults[] = {1000, 100000, 1000000};
    long sizes[16];
    int nsizes = 0;
    for (; optind < argc && nsizes < 16; optind++)
        sizes[nsizes++] = atol(argv[optind]);
    if (!nsizes)
        for (; nsizes < 3; nsizes++)
            sizes[nsizes] = defaults[nsizes];

    printf("engine claim benchmark (no FUSE), sync=%s, %ld claims per run\n",
           opts.sync ? "full" : "none", claims);
    printf("%-34s %14s %10s\n", "queue", "claims/s", "vs first");
    double first = 0;
    char dir[64];
    for (int i = 0; i < nsizes; i++) {
        Store *st = fresh_store(&opts, dir);
        LangSession *s = lang_session_new(st, NULL, NULL);
        run(s, "DEFINE QUEUE jobs TIMEOUT 1h;");
        fill(s, "jobs", sizes[i] + claims);
        double rate = time_claims(s, "jobs", claims);
        if (!first)
            first = rate;
        char label[64];
        snprintf(label, sizeof label, "%ld records", sizes[i]);
        printf("%-34s %14.0f %9.2fx\n", label, rate, rate / first);
        fflush(stdout);
        lang_session_free(s);
        remove_store(st, dir);
    }

    Store *st = fresh_store(&opts, dir);
    LangSession *s = lang_session_new(st, NULL, NULL);
    run(s, "DEFINE QUEUE jobs TIMEOUT 1h;");
    long held = 100000;
    fill(s, "jobs", held);
    for (long done = 0; done < held; done += 1000)
        run(s, "CLAIM 1000 FROM jobs;");
    fill(s, "jobs", claims);
    double rate = time_claims(s, "jobs", claims);
    printf("%-34s %14.0f %9.2fx\n", "100000 held ahead of the head", rate,
           first ? rate / first : 1.0);
    lang_session_free(s);
    remove_store(st, dir);
    return 0;
}
