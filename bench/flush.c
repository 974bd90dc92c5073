/* flush.c — bench/flush: what one durable write costs on the disk under
 * test, the unit every durable commit is made of.
 *
 *     bench/flush [-w WORKERS] [-t SECONDS] [-n UNITS] DIR
 *
 * Each worker overwrites one 4 KiB block of its own file in DIR
 * (DIR/flush.N, removed afterwards) and fdatasyncs it.  Prints the line
 * run.h describes. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define BLOCK 4096

typedef struct Worker {
    char path[PATH_MAX];
    int fd;
    char block[BLOCK];
} Worker;

static const char usage[] = "usage: bench/flush [-w WORKERS] [-t SECONDS] [-n UNITS] DIR\n";

/* Creates the worker's file, its block already allocated. */
static void *
setup(int i, void *arg)
{
    Worker *w = calloc(1, sizeof *w);
    snprintf(w->path, sizeof w->path, "%s/flush.%d", (const char *)arg, i);
    w->fd = open(w->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    memset(w->block, 'q', sizeof w->block);
    if (w->fd < 0 || pwrite(w->fd, w->block, BLOCK, 0) != BLOCK || fsync(w->fd) != 0) {
        perror(w->path);
        if (w->fd >= 0)
            close(w->fd);
        free(w);
        return NULL;
    }
    return w;
}

/* One durable overwrite of the block. */
static long
unit(void *state)
{
    Worker *w = state;
    w->block[0]++;
    if (pwrite(w->fd, w->block, BLOCK, 0) != BLOCK || fdatasync(w->fd) != 0) {
        perror(w->path);
        return -1;
    }
    return 1;
}

/* Removes the worker's file. */
static int
teardown(void *state)
{
    Worker *w = state;
    close(w->fd);
    unlink(w->path);
    free(w);
    return 0;
}

int
main(int argc, char **argv)
{
    BenchSpec spec = {
        .workers = 1, .seconds = 1, .setup = setup, .unit = unit, .teardown = teardown};
    int first = bench_parse_options(argc, argv, &spec, "", NULL, usage, 1);
    if (first < 0)
        return 2;
    spec.arg = argv[first];
    return bench_run_and_print(&spec);
}
