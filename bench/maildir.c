/* maildir.c — bench/maildir: the plain file system floor.  A Maildir-style
 * queue on the disk under test, each worker cycling one message through it.
 *
 *     bench/maildir [-w WORKERS] [-t SECONDS] [-n UNITS] [-f] DIR
 *
 * DIR holds tmp/, new/ and cur/ (made when absent).  One cycle is what a
 * Maildir delivery and its consumer do with one message:
 *
 *   open tmp/NAME (O_CREAT|O_EXCL), write a JSON line, close   deliver
 *   rename tmp/NAME to new/NAME                                 publish
 *   rename new/NAME to cur/NAME:2,                              take
 *   unlink cur/NAME:2,                                          finish
 *
 * With -f every step is made durable where Maildir would: fsync the file
 * before it is published, then fsync new/ after the publish, cur/ after the
 * take and cur/ after the unlink (four fsyncs a cycle).  The consumer knows
 * the name it takes (no directory scan).  Prints the line run.h describes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

typedef struct Config {
    const char *dir;
    int durable;
} Config;

typedef struct Worker {
    const Config *cfg;
    int worker;
    long seq;
    int new_fd, cur_fd; /* the directories, for fsync */
} Worker;

static const char usage[] = "usage: bench/maildir [-w WORKERS] [-t SECONDS] [-n UNITS] [-f] DIR\n";

static int durable_option;

/* Takes -f. */
static int
take_option(int opt, const char *arg)
{
    (void)arg;
    if (opt != 'f')
        return -1;
    durable_option = 1;
    return 0;
}

/* Opens directory "name" of the Maildir for fsync: its fd, or -1. */
static int
open_dir(const Config *cfg, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", cfg->dir, name);
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        perror(path);
    return fd;
}

/* A worker with the directories open. */
static void *
setup(int i, void *arg)
{
    const Config *cfg = arg;
    Worker *w = calloc(1, sizeof *w);
    w->cfg = cfg;
    w->worker = i;
    w->new_fd = open_dir(cfg, "new");
    w->cur_fd = open_dir(cfg, "cur");
    if (w->new_fd >= 0 && w->cur_fd >= 0)
        return w;
    if (w->new_fd >= 0)
        close(w->new_fd);
    if (w->cur_fd >= 0)
        close(w->cur_fd);
    free(w);
    return NULL;
}

/* fsync of "fd" when durable: 0, or -1. */
static int
sync_fd(const Worker *w, int fd, const char *what)
{
    if (w->cfg->durable && fsync(fd) < 0) {
        perror(what);
        return -1;
    }
    return 0;
}

/* One message through tmp/, new/, cur/ and gone: 1, or -1. */
static long
unit(void *state)
{
    Worker *w = state;
    const char *dir = w->cfg->dir;
    char name[64], tmp[PATH_MAX], pub[PATH_MAX], cur[PATH_MAX], line[128];
    snprintf(name, sizeof name, "%ld.P%dW%d.queuefs", ++w->seq, (int)getpid(), w->worker);
    snprintf(tmp, sizeof tmp, "%s/tmp/%s", dir, name);
    snprintf(pub, sizeof pub, "%s/new/%s", dir, name);
    snprintf(cur, sizeof cur, "%s/cur/%s:2,", dir, name);
    int len = snprintf(line, sizeof line, "{\"url\":\"https://example.test/w%d/%ld\",\"n\":%ld}\n",
                       w->worker, w->seq, w->seq);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        perror(tmp);
        return -1;
    }
    if (write(fd, line, (size_t)len) != len || sync_fd(w, fd, "fsync message") < 0) {
        perror("write message");
        close(fd);
        return -1;
    }
    if (close(fd) < 0 || rename(tmp, pub) < 0 || sync_fd(w, w->new_fd, "fsync new/") < 0 ||
        rename(pub, cur) < 0 || sync_fd(w, w->cur_fd, "fsync cur/") < 0 || unlink(cur) < 0 ||
        sync_fd(w, w->cur_fd, "fsync cur/") < 0) {
        perror(name);
        return -1;
    }
    return 1;
}

/* Closes the directories. */
static int
teardown(void *state)
{
    Worker *w = state;
    close(w->new_fd);
    close(w->cur_fd);
    free(w);
    return 0;
}

/* Makes "dir"/"name" when absent: 0, or -1. */
static int
make_dir(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", dir, *name ? "/" : "", name);
    if (mkdir(path, 0700) < 0 && errno != EEXIST) {
        perror(path);
        return -1;
    }
    return 0;
}

/* Makes the Maildir, runs the workers and prints their line (run.h). */
int
main(int argc, char **argv)
{
    Config cfg = {0};
    BenchSpec spec = BENCH_SPEC_DEFAULT(&cfg);
    int first = bench_parse_options(argc, argv, &spec, "f", take_option, usage, 1);
    if (first < 0)
        return 2;
    cfg.dir = argv[first];
    cfg.durable = durable_option;
    if (make_dir(cfg.dir, "") || make_dir(cfg.dir, "tmp") || make_dir(cfg.dir, "new") ||
        make_dir(cfg.dir, "cur"))
        return 1;
    return bench_run_and_print(&spec);
}
