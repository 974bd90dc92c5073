/* run.h — a timed run of worker processes, shared by the load generators
 * (loadgen.c, beanload.c, maildir.c; paired.c takes the clock and
 * bench_record_name).
 *
 * A run forks "workers" processes.  Each sets itself up (connects, opens
 * what it needs), waits at a common start line, then repeats one unit of
 * work until the run's time is up or its units are spent, timing every
 * unit.  The parent gathers the counts and the unit times and prints one
 * line the benchmark script parses:
 *
 *     units=N ops=N seconds=S ops_per_s=X median_us=M p99_us=P client_cpu_us=C
 *
 * "ops" counts what a unit did (a record enqueued, a cycle finished);
 * the times are per unit (for a batch of 1,000 records, the batch);
 * client_cpu_us is the CPU time (user and system) the workers spent per
 * op, setting up included. */
#ifndef BENCH_RUN_H
#define BENCH_RUN_H

#include <stdio.h>

typedef struct BenchSpec {
    int workers;    /* processes, each its own connection or file set */
    double seconds; /* the run stops starting units after this long */
    long max_units; /* and after this many units in all (0: no limit) */
    /* In the worker, before the start line: its state, or NULL to fail. */
    void *(*setup)(int worker, void *arg);
    /* One unit of work: the ops it did (> 0), 0 when there is nothing left
     * to do (the worker stops), -1 on an error (reported on stderr). */
    long (*unit)(void *state);
    /* In the worker, after its last unit: 0, or -1 on an error. */
    int (*teardown)(void *state);
    void *arg;
} BenchSpec;

typedef struct BenchResult {
    long units;
    long ops;
    double seconds; /* from the start line to the last worker's end */
    double ops_per_s;
    double median_us; /* of one unit, over every worker's units */
    double p99_us;
    double client_cpu_us; /* the workers' CPU time per op */
    int failed;           /* a worker failed: the figures are not to be used */
} BenchResult;

/* The spec every client starts from: one worker for 5 s, running the
 * including file's own setup, unit and teardown with "arg". */
#define BENCH_SPEC_DEFAULT(arg_) \
    { \
        .workers = 1, .seconds = 5, .setup = setup, .unit = unit, .teardown = teardown, \
        .arg = (arg_) \
    }

/* Runs "spec" and fills "out".  Returns 0, or -1 when the run could not be
 * made or a worker failed (out->failed is then set; what was measured is
 * still filled in). */
int bench_run(const BenchSpec *spec, BenchResult *out);

/* Prints "r" as the one line described above on "to". */
void bench_result_print(const BenchResult *r, FILE *to);

/* The common options: -w WORKERS -t SECONDS -n UNITS.  Parses them out of
 * argv into "spec", and the program's own options ("extra", in getopt's
 * syntax: "b:" or "f") through "take".  Returns the index of the first of
 * exactly "operands" operands, or -1 after printing "usage" on a bad option
 * or another number of operands. */
int bench_parse_options(int argc, char **argv, BenchSpec *spec, const char *extra,
                        int (*take)(int opt, const char *arg), const char *usage, int operands);

/* Runs "spec" and prints its line on standard output: a program's exit
 * status, 0, or 1 when the run failed. */
int bench_run_and_print(const BenchSpec *spec);

/* The file name, in the JSON line "json" a claim reads, of the record it
 * is: the key after "table:" in its "id" (an integer identity, as a
 * store-assigned queue has).  0, or -1 when there is none or it is longer
 * than "size" allows. */
int bench_record_name(const char *json, char *name, size_t size);

/* The monotonic clock in seconds. */
double bench_now(void);

#endif
