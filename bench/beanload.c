/* beanload.c — bench/beanload: the same workers against beanstalkd, in C,
 * speaking its text protocol (put, reserve, delete, release).
 *
 *     bench/beanload [-w CONNECTIONS] [-t SECONDS] [-n UNITS] [-b JOBS] MODE HOST:PORT
 *
 * Each connection is its own process, on the default tube.  MODE is what it
 * repeats:
 *
 *   cycle     put a job, reserve one, delete it (three round trips)
 *   release   reserve a job, release it (after putting one, untimed)
 *   put       JOBS puts sent in one write (default 1,000), then their
 *             JOBS replies read: the peer of one write to queuefs's new
 *
 * Jobs are the same JSON line bench/loadgen enqueues.  Prints the line
 * run.h describes. */
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "run.h"

typedef enum Mode { CYCLE, RELEASE, PUT } Mode;

typedef struct Config {
    Mode mode;
    char *host;
    char *port;
    long batch;
} Config;

typedef struct Conn {
    const Config *cfg;
    int fd;
    char in[65536];
    size_t start, end; /* unread bytes of "in" */
    char *batch;       /* PUT: the commands of one write */
    size_t batch_len;
    char job[128]; /* the body of a put */
    size_t job_len;
} Conn;

static const char usage[] =
    "usage: bench/beanload [-w CONNECTIONS] [-t SECONDS] [-n UNITS] [-b JOBS] "
    "cycle|release|put HOST:PORT\n";

static long batch_option = 1000;

/* Takes -b JOBS. */
static int
take_option(int opt, const char *arg)
{
    if (opt != 'b')
        return -1;
    batch_option = atol(arg);
    return batch_option > 0 ? 0 : -1;
}

/* Sends all of "data": 0, or -1. */
static int
send_all(Conn *c, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(c->fd, data, len);
        if (n <= 0) {
            perror("beanstalkd: write");
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The next reply line, without its CRLF, valid until the next read from
 * "c"; NULL when the connection ends. */
static char *
read_line(Conn *c)
{
    for (;;) {
        char *crlf = memmem(c->in + c->start, c->end - c->start, "\r\n", 2);
        if (crlf) {
            char *line = c->in + c->start;
            *crlf = '\0';
            c->start = (size_t)(crlf + 2 - c->in);
            return line;
        }
        if (c->start > 0) {
            memmove(c->in, c->in + c->start, c->end - c->start);
            c->end -= c->start;
            c->start = 0;
        }
        if (c->end == sizeof c->in)
            return NULL;
        ssize_t n = read(c->fd, c->in + c->end, sizeof c->in - c->end);
        if (n <= 0)
            return NULL;
        c->end += (size_t)n;
    }
}

/* Reads a reply line that must start with "want": 0, or -1 (reported). */
static int
expect(Conn *c, const char *want, char **line)
{
    char *got = read_line(c);
    if (!got || strncmp(got, want, strlen(want)) != 0) {
        fprintf(stderr, "bench/beanload: expected %s, got %s\n", want,
                got ? got : "end of connection");
        return -1;
    }
    if (line)
        *line = got;
    return 0;
}

/* Puts one job: 0, or -1. */
static int
put(Conn *c)
{
    char cmd[256];
    int n = snprintf(cmd, sizeof cmd, "put 0 0 60 %zu\r\n%s\r\n", c->job_len, c->job);
    return send_all(c, cmd, (size_t)n) || expect(c, "INSERTED ", NULL) ? -1 : 0;
}

/* Reserves a job, skipping its body: its id, or 0 on an error. */
static unsigned long
reserve(Conn *c)
{
    char *line;
    if (send_all(c, "reserve\r\n", 9) || expect(c, "RESERVED ", &line))
        return 0;
    unsigned long id = strtoul(line + 9, NULL, 10);
    if (!read_line(c)) { /* the body */
        fprintf(stderr, "bench/beanload: no job body\n");
        return 0;
    }
    return id;
}

/* A connection to the server, its job body, and (PUT) its batch. */
static void *
setup(int i, void *arg)
{
    const Config *cfg = arg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(cfg->host, cfg->port, &hints, &ai);
    if (rc) {
        fprintf(stderr, "bench/beanload: %s: %s\n", cfg->host, gai_strerror(rc));
        return NULL;
    }
    Conn *c = calloc(1, sizeof *c);
    c->cfg = cfg;
    c->fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        perror("bench/beanload: connect");
        freeaddrinfo(ai);
        if (c->fd >= 0)
            close(c->fd);
        free(c);
        return NULL;
    }
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->job_len = (size_t)snprintf(c->job, sizeof c->job,
                                  "{\"url\":\"https://example.test/w%d/1\",\"n\":1}", i);
    if (cfg->mode == RELEASE && put(c) < 0)
        return NULL;
    if (cfg->mode == PUT) {
        size_t one_len = c->job_len + 32, cap = one_len * (size_t)cfg->batch;
        c->batch = malloc(cap);
        for (long k = 0; k < cfg->batch; k++)
            c->batch_len += (size_t)snprintf(c->batch + c->batch_len, cap - c->batch_len,
                                             "put 0 0 60 %zu\r\n%s\r\n", c->job_len, c->job);
    }
    return c;
}

/* One unit of the configured mode: its jobs, or -1. */
static long
unit(void *state)
{
    Conn *c = state;
    char cmd[64];
    unsigned long id;
    switch (c->cfg->mode) {
    case CYCLE:
        if (put(c) < 0 || !(id = reserve(c)))
            return -1;
        snprintf(cmd, sizeof cmd, "delete %lu\r\n", id);
        return send_all(c, cmd, strlen(cmd)) || expect(c, "DELETED", NULL) ? -1 : 1;
    case RELEASE:
        if (!(id = reserve(c)))
            return -1;
        snprintf(cmd, sizeof cmd, "release %lu 0 0\r\n", id);
        return send_all(c, cmd, strlen(cmd)) || expect(c, "RELEASED", NULL) ? -1 : 1;
    case PUT:
        if (send_all(c, c->batch, c->batch_len))
            return -1;
        for (long k = 0; k < c->cfg->batch; k++)
            if (expect(c, "INSERTED ", NULL))
                return -1;
        return c->cfg->batch;
    }
    return -1;
}

/* Closes the connection. */
static int
teardown(void *state)
{
    Conn *c = state;
    send_all(c, "quit\r\n", 6);
    close(c->fd);
    free(c->batch);
    free(c);
    return 0;
}

/* Runs the workers against beanstalkd and prints their line (run.h). */
int
main(int argc, char **argv)
{
    Config cfg = {0};
    BenchSpec spec = BENCH_SPEC_DEFAULT(&cfg);
    int first = bench_parse_options(argc, argv, &spec, "b:", take_option, usage, 2);
    if (first < 0)
        return 2;
    const char *mode = argv[first];
    cfg.mode = strcmp(mode, "cycle") == 0     ? CYCLE
               : strcmp(mode, "release") == 0 ? RELEASE
               : strcmp(mode, "put") == 0     ? PUT
                                              : (Mode)-1;
    char *colon = strrchr(argv[first + 1], ':');
    if ((int)cfg.mode < 0 || !colon) {
        fputs(usage, stderr);
        return 2;
    }
    *colon = '\0';
    cfg.host = argv[first + 1];
    cfg.port = colon + 1;
    cfg.batch = batch_option;
    return bench_run_and_print(&spec);
}
