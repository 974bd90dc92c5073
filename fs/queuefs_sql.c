/* queuefs_sql.c — queuefs-sql: run statements against a store without mounting.
 *
 *     queuefs-sql [-o sync=full|none] STORE [STATEMENT…]
 *
 * Each STATEMENT argument (or, when there are none, all of standard input)
 * is run in order; every statement that ran prints its result line on
 * standard output.  The first error prints {"error":…,"message":…} on
 * standard error and the exit status is 1.  Works while the store is
 * mounted: a claim is atomic across processes. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lang/lang.h"
#include "names.h"

static void
usage(FILE *to)
{
    fputs("usage: queuefs-sql [-o sync=full|none] STORE [STATEMENT...]\n"
          "Runs queuefs statements against the store in directory STORE, one result\n"
          "line (JSON) per statement on standard output.  With no STATEMENT, reads\n"
          "statements from standard input.  On an error, prints the error line on\n"
          "standard error and exits with status 1.\n"
          "\n"
          "  -o sync=full   a statement's effects are on disk when it returns (default)\n"
          "  -o sync=none   faster; a machine crash may lose the last statements\n"
          "  -h, --help     this text\n"
          "  -V, --version  the version\n",
          to);
}

/* Result lines are printed as they are produced, this much at a time. */
#define SQL_CHUNK ((size_t)256 << 10)

/* Runs the statements in "text" as "session", printing each result line
 * as it is produced: a large SELECT is streamed, never held whole. */
static void
run_text(LangSession *session, const char *text, size_t len, LangError *err)
{
    Buf out = {0};
    lang_session_start(session, text, len, &out, SQL_CHUNK, err);
    for (;;) {
        fwrite(out.data ? out.data : "", 1, out.len, stdout);
        lang_buf_reset(&out);
        if (err->code || !lang_session_pending(session))
            break;
        lang_session_continue(session, &out, SQL_CHUNK, true, err);
    }
    lang_buf_free(&out);
}

/* Reads all of standard input into "b". */
static int
read_stdin(Buf *b)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
        lang_buf_append(b, chunk, n);
    return ferror(stdin) ? -1 : 0;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    StoreOptions opts = {.sync = true, .upgrade = lang_record_upgrade};
    int c;
    while ((c = getopt_long(argc, argv, "+ho:V", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(stdout); return 0;
        case 'V': puts("queuefs-sql " PACKAGE_VERSION); return 0;
        case 'o':
            if (strcmp(optarg, "sync=full") == 0)
                opts.sync = true;
            else if (strcmp(optarg, "sync=none") == 0)
                opts.sync = false;
            else {
                fprintf(stderr, "queuefs-sql: unknown option -o %s (sync=full or sync=none)\n",
                        optarg);
                return 2;
            }
            break;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *location = argv[optind++];
    /* A store this user or its filesystem cannot write is opened for
     * reading: its statements that only read work, the others are
     * StoreError. */
    struct stat where;
    opts.read_only = stat(location, &where) == 0 && S_ISDIR(where.st_mode) &&
                     access(location, W_OK) != 0 && (errno == EACCES || errno == EROFS);
    char msg[256] = "";
    Store *store;
    int rc = store_open(location, &opts, &store, msg, sizeof msg);
    if (rc) {
        /* The store's message names the store already. */
        if (msg[0])
            fprintf(stderr, "queuefs-sql: cannot open store %s\n", msg);
        else
            fprintf(stderr, "queuefs-sql: cannot open store %s: %s\n", location,
                    store_strerror(rc));
        return 1;
    }
    LangSession *session = lang_session_new(store, NULL, NULL);
    lang_session_set_name_rule(session, fs_table_name_rule, NULL);
    /* Tables defined outside any mount belong to the store's owner. */
    struct stat dir;
    if (stat(location, &dir) == 0)
        lang_session_set_caller(session, dir.st_uid, dir.st_gid, NULL, 0, false);
    LangError err = {0};
    int status = 0;
    if (optind == argc) {
        Buf in = {0};
        if (read_stdin(&in) < 0) {
            fprintf(stderr, "queuefs-sql: reading standard input: %s\n", strerror(errno));
            status = 1;
        } else {
            run_text(session, in.data ? in.data : "", in.len, &err);
        }
        lang_buf_free(&in);
    }
    for (; optind < argc && !err.code; optind++)
        run_text(session, argv[optind], strlen(argv[optind]), &err);
    if (!err.code && lang_session_in_transaction(session))
        lang_error_set(&err, LANG_PARSE_ERROR,
                       "the input ended inside BEGIN: its statements were cancelled");
    if (err.code) {
        Buf line = {0};
        lang_error_to_json(&err, &line);
        fflush(stdout);
        fprintf(stderr, "%s\n", line.data);
        lang_buf_free(&line);
        status = 1;
    }
    lang_session_free(session);
    store_close(store);
    if (fflush(stdout) != 0 || ferror(stdout))
        status = 1;
    return status;
}
