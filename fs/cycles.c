/* cycles.c — queuefs-cycles: what a worker's claim+rm cycle costs through
 * the mount, from C (no shell in the loop).
 *
 *     queuefs-cycles QUEUE_DIR CYCLES
 *
 * Each cycle is what a worker does: open QUEUE_DIR/claim, read the record,
 * close, then unlink QUEUE_DIR/ID.  Prints cycles per second and the median
 * and 99th percentile of one cycle in microseconds.  Stops early when the
 * queue runs dry. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The file name of the record in "json": the key after "table:" in its
 * "id" (integer identities, as a store-assigned queue has). */
static int
record_name(const char *json, char *name, size_t size)
{
    const char *id = strstr(json, "\"id\":\"");
    const char *colon = id ? strchr(id + 6, ':') : NULL;
    const char *end = colon ? strchr(colon, '"') : NULL;
    if (!end || (size_t)(end - colon) > size)
        return -1;
    snprintf(name, size, "%.*s", (int)(end - colon - 1), colon + 1);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: queuefs-cycles QUEUE_DIR CYCLES\n");
        return 2;
    }
    const char *dir = argv[1];
    long cycles = atol(argv[2]);
    double *lat = calloc((size_t)cycles, sizeof *lat);
    char claim[4096], path[4096], json[65536], name[512];
    snprintf(claim, sizeof claim, "%s/claim", dir);
    long done = 0;
    double start = now_us();
    for (; done < cycles; done++) {
        double t0 = now_us();
        int fd = open(claim, O_RDONLY);
        if (fd < 0) {
            perror(claim);
            return 1;
        }
        ssize_t n = read(fd, json, sizeof json - 1);
        close(fd);
        if (n <= 0)
            break;   /* the queue is empty */
        json[n] = '\0';
        if (record_name(json, name, sizeof name) < 0) {
            fprintf(stderr, "queuefs-cycles: no id in %s\n", json);
            return 1;
        }
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (unlink(path) < 0) {
            perror(path);
            return 1;
        }
        lat[done] = now_us() - t0;
    }
    double elapsed = now_us() - start;
    if (!done) {
        fprintf(stderr, "queuefs-cycles: the queue was empty\n");
        return 1;
    }
    qsort(lat, (size_t)done, sizeof *lat, cmp_double);
    printf("%ld cycles  %.0f cycles/s  median %.1f us  p99 %.1f us\n", done,
           (double)done / (elapsed / 1e6), lat[done / 2], lat[(size_t)((double)done * 0.99)]);
    free(lat);
    return 0;
}
