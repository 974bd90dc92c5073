/* queuefs_work.c — queuefs-work: run a command for every record of a
 * queuefs queue.
 *
 *     queuefs-work [-n WORKERS] [options] MOUNT/QUEUE -- COMMAND [ARG...]
 *
 * This file reads the options, makes sure MOUNT/QUEUE is a queue of a
 * queuefs mount (its TIMEOUT and NOT BEFORE through `INFO FOR TABLE` on
 * MOUNT/ctl; --rearm's clause checked by a RELEASE ALL that releases
 * nothing), starts WORKERS worker processes (work_worker.c) and waits for
 * them: SIGTERM or SIGINT is passed on to each as SIGTERM, and the exit
 * status is 0 after a stop, 1 when every worker stopped on its own (the
 * queue went away), 2 for a bad argument.  What it promises its users is
 * queuefs-work(1). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lang/parse.h"
#include "../lang/value.h"
#include "work.h"

static const char *const prog = "queuefs-work";

static void
usage(void)
{
    fputs("usage: queuefs-work [-n WORKERS] [options] MOUNT/QUEUE -- COMMAND [ARG...]\n"
          "\n"
          "Runs COMMAND once for every record claimed from the queue directory\n"
          "MOUNT/QUEUE of a queuefs mount, with the record's JSON line on stdin and\n"
          "QUEUEFS_ID, QUEUEFS_ATTEMPTS, QUEUEFS_HOLD, QUEUEFS_RECORD, QUEUEFS_QUEUE\n"
          "and QUEUEFS_WORKER in its environment.  Exit status 0 finishes (deletes) the\n"
          "record; any other status releases it, NOT BEFORE a backoff delay when the\n"
          "queue declares NOT BEFORE.  SIGTERM or SIGINT stops claiming, lets running\n"
          "commands finish, and exits 0.\n"
          "\n"
          "With --batch N, COMMAND runs once for up to N records claimed at once, one\n"
          "JSON line each on stdin (QUEUEFS_BATCH: how many; QUEUEFS_QUEUE and\n"
          "QUEUEFS_WORKER as above).  Exit status 0 finishes them all but those whose\n"
          "id (as the JSON's \"id\", one a line) COMMAND prints on stdout, which are\n"
          "released; any other status releases them all.\n"
          "\n"
          "With --rearm EXPR, exit status 0 does not finish the record: it is released\n"
          "NOT BEFORE the next instant of the five-field cron expression EXPR\n"
          "(\"0 3 * * *\"; in UTC, or in the IANA zone of --rearm-zone), so that it comes\n"
          "back on that calendar.  A failure still releases it with its backoff.\n"
          "\n"
          "options:\n"
          "  -n, --workers N          run N workers at once (default 1)\n"
          "  -b, --backoff DURATION   delay after a first failed attempt (default 1s);\n"
          "                           it doubles with every attempt\n"
          "  -c, --backoff-cap DURATION\n"
          "                           the longest delay (default 1h)\n"
          "  -g, --grace DURATION     how long running commands may take after SIGTERM\n"
          "                           before they are killed and their records\n"
          "                           released (default 30s)\n"
          "  -t, --touch-every DURATION\n"
          "                           extend a hold this often while COMMAND runs\n"
          "                           (default a third of the queue's TIMEOUT; 0 never)\n"
          "      --batch N            claim up to N records at once (1 to 1000) and\n"
          "                           run COMMAND once for them\n"
          "      --rearm EXPR         on exit status 0, release the record NOT BEFORE\n"
          "                           the next instant of cron expression EXPR instead\n"
          "                           of finishing it (not with --batch)\n"
          "      --rearm-zone ZONE    read --rearm's EXPR in IANA time zone ZONE\n"
          "                           (default UTC)\n"
          "  -h, --help               print this and exit\n"
          "  -V, --version            print the version and exit\n"
          "\n"
          "DURATION is a whole number and a unit, or several: 500ms, 30s, 1m30s, 2h\n"
          "(units ns us ms s m h d w y).  One line per record goes to stderr:\n"
          "  TIME worker=W id=ID attempt=N\n"
          "  outcome=finished|rearmed|released|lost|killed|returned|cancelled|error\n"
          "  status=S duration=D [delay=DELAY | error=\"...\"]\n",
          stdout);
}

/* Prints "queuefs-work: MESSAGE" and, with "usage_hint", the pointer to
 * --help; exits 2. */
static void __attribute__((noreturn, format(printf, 2, 3)))
die(bool usage_hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (usage_hint)
        fprintf(stderr, "Try '%s --help'.\n", prog);
    exit(2);
}

/* "s" as milliseconds (rounded down) into "*ms": false when it is not a
 * duration ("0" alone is zero; each number at most 12 digits). */
static bool
duration_ms(const char *s, int64_t *ms)
{
    if (strcmp(s, "0") == 0) {
        *ms = 0;
        return true;
    }
    for (const char *p = s; *p; p++) {
        size_t run = strspn(p, "0123456789");
        if (run > 12)
            return false;
        p += run;
        if (!*p)
            break;
    }
    int64_t ns;
    if (lang_duration_parse(s, strlen(s), &ns) != 0)
        return false;
    *ms = ns / 1000000;
    return true;
}

/* True when "s" is 1 to "digits" decimal digits worth "min" to "max". */
static bool
number_in(const char *s, size_t digits, long min, long max, int *out)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > digits || s[n])
        return false;
    long v = strtol(s, NULL, 10);
    *out = (int)v;
    return v >= min && v <= max;
}

/* True when "s" is what a cron expression is made of (digits, letters,
 * '*', ',', '/', ' ', '-') and not only blanks: the mount checks the rest. */
static bool
cron_like(const char *s)
{
    return *s &&
           !s[strspn(s, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz*,/ -")] &&
           s[strspn(s, " ")];
}

/* True when "s" is an IANA zone name's shape: parts of [A-Za-z0-9_+-]
 * apart by single '/'. */
static bool
zone_like(const char *s)
{
    static const char part[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-";
    for (;;) {
        size_t n = strspn(s, part);
        if (n == 0)
            return false;
        s += n;
        if (!*s)
            return true;
        if (*s++ != '/')
            return false;
    }
}

/* Options beyond the settings: --rearm's expression and zone. */
typedef struct Rearm {
    const char *expr;
    const char *zone;
} Rearm;

/* Reads the options of "argv" into "cfg" and "rearm"; returns the index of
 * the queue argument. */
static int
parse_options(int argc, char **argv, WorkConfig *cfg, Rearm *rearm)
{
    int i = 1;
    bool touch_given = false;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        char opt[64];
        const char *val = NULL;
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage();
            exit(0);
        }
        if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
            printf("%s %s\n", prog, PACKAGE_VERSION);
            exit(0);
        }
        if (arg[0] != '-')
            break;
        const char *eq = strchr(arg, '=');
        if (strncmp(arg, "--", 2) == 0 && eq) {
            snprintf(opt, sizeof opt, "%.*s", (int)(eq - arg), arg);
            val = eq + 1;
        } else if (strchr("nbcgt", arg[1]) && arg[1] && arg[2]) {
            snprintf(opt, sizeof opt, "%.2s", arg);
            val = arg + 2;
        } else {
            snprintf(opt, sizeof opt, "%s", arg);
            static const char *const with_value[] = {"-n",
                                                     "-b",
                                                     "-c",
                                                     "-g",
                                                     "--workers",
                                                     "--backoff",
                                                     "--backoff-cap",
                                                     "--grace",
                                                     "--touch-every",
                                                     "--batch",
                                                     "-t",
                                                     "--rearm",
                                                     "--rearm-zone"};
            bool known = false;
            for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
                known |= strcmp(arg, with_value[k]) == 0;
            if (!known)
                die(true, "unknown option %s", arg);
            if (i + 1 >= argc)
                die(true, "option %s needs a value", arg);
            val = argv[++i];
        }
        if (!strcmp(opt, "-n") || !strcmp(opt, "--workers")) {
            if (!number_in(val, 4, 1, 9999, &cfg->workers))
                die(true, "%s wants a number of workers (1 or more), not '%s'", opt, val);
        } else if (!strcmp(opt, "-b") || !strcmp(opt, "--backoff")) {
            if (!duration_ms(val, &cfg->backoff_ms))
                die(true, "%s wants a duration (e.g. 1s), not '%s'", opt, val);
        } else if (!strcmp(opt, "-c") || !strcmp(opt, "--backoff-cap")) {
            if (!duration_ms(val, &cfg->cap_ms))
                die(true, "%s wants a duration (e.g. 1h), not '%s'", opt, val);
        } else if (!strcmp(opt, "-g") || !strcmp(opt, "--grace")) {
            if (!duration_ms(val, &cfg->grace_ms))
                die(true, "%s wants a duration (e.g. 30s), not '%s'", opt, val);
        } else if (!strcmp(opt, "-t") || !strcmp(opt, "--touch-every")) {
            if (!duration_ms(val, &cfg->touch_ms))
                die(true, "%s wants a duration (e.g. 10s) or 0, not '%s'", opt, val);
            touch_given = true;
        } else if (!strcmp(opt, "--batch")) {
            if (!number_in(val, 4, 1, 1000, &cfg->batch))
                die(true, "%s wants a number of records (1 to 1000), not '%s'", opt, val);
        } else if (!strcmp(opt, "--rearm")) {
            if (!cron_like(val))
                die(true, "%s wants a cron expression (e.g. '0 3 * * *'), not '%s'", opt, val);
            rearm->expr = val;
        } else if (!strcmp(opt, "--rearm-zone")) {
            if (!zone_like(val))
                die(true, "%s wants an IANA time zone (e.g. Europe/Berlin), not '%s'", opt, val);
            rearm->zone = val;
        } else {
            die(true, "unknown option %s", opt);
        }
    }
    if (!touch_given)
        cfg->touch_ms = -1;
    if (rearm->zone && !rearm->expr)
        die(true, "--rearm-zone needs --rearm");
    if (rearm->expr && cfg->batch)
        die(true, "--rearm re-arms one record at a time: it cannot be given with --batch");
    if (i >= argc)
        die(true, "no queue given");
    if (i + 1 >= argc || strcmp(argv[i + 1], "--") != 0)
        die(true, "expected -- and a command after %s", argv[i]);
    if (i + 2 >= argc)
        die(true, "no command given after --");
    cfg->command = argv + i + 2;
    return i;
}

/* Returns "s" with every '/' written %2F (a released/ name holds none). */
static char *
slash_escaped(const char *s)
{
    Buf b = {0};
    lang_buf_append(&b, "", 0);
    for (; *s; s++) {
        if (*s == '/')
            lang_buf_puts(&b, "%2F");
        else
            lang_buf_putc(&b, *s);
    }
    return lang_buf_steal(&b);
}

/* Finds the queue of "arg": its table, mount and paths into "cfg". */
static void
locate_queue(const char *arg, WorkConfig *cfg)
{
    char *q = lang_xstrdup(arg);
    size_t len = strlen(q);
    while (len > 1 && q[len - 1] == '/')
        q[--len] = 0;
    cfg->queue = q;
    char *slash = strrchr(q, '/');
    cfg->table = lang_xstrdup(slash ? slash + 1 : q);
    cfg->mount_dir = slash ? lang_xstrndup(q, (size_t)(slash - q)) : lang_xstrdup(".");
    if (!*cfg->mount_dir) {
        free(cfg->mount_dir);
        cfg->mount_dir = lang_xstrdup("/");
    }
    if (!*cfg->table || !strcmp(cfg->table, ".") || !strcmp(cfg->table, ".."))
        die(false, "%s: not a queue of a queuefs mount", arg);
    Buf b = {0};
    lang_buf_printf(&b, "%s/ctl", cfg->mount_dir);
    cfg->ctl_path = lang_buf_steal(&b);
    lang_buf_printf(&b, "%s/wait", q);
    cfg->wait_path = lang_buf_steal(&b);
    lang_buf_printf(&b, "%s/held", q);
    cfg->held_dir = lang_buf_steal(&b);
    struct stat st;
    if (stat(cfg->ctl_path, &st) != 0 || !S_ISREG(st.st_mode))
        die(false, "%s: not a queue of a queuefs mount (want MOUNT/QUEUE, with MOUNT/ctl)", arg);
    if (stat(q, &st) != 0 || !S_ISDIR(st.st_mode))
        die(false, "%s: no queue %s on the queuefs mount %s", arg, cfg->table, cfg->mount_dir);
}

/* The string "key" of "info", or NULL when it is absent, null or false. */
static const char *
info_string(const Value *info, const char *key, char *spare, size_t spare_len)
{
    const Value *v = info->kind == VAL_OBJECT ? lang_value_object_get(info, key) : NULL;
    if (!v || v->kind == VAL_NULL || v->kind == VAL_NONE || (v->kind == VAL_BOOL && !v->u.b))
        return NULL;
    if (v->kind == VAL_STRING)
        return v->u.str.s;
    Buf b = {0};
    lang_value_to_json(v, &b);
    snprintf(spare, spare_len, "%s", b.data);
    lang_buf_free(&b);
    return spare;
}

/* Reads the queue's TIMEOUT and NOT BEFORE into "cfg" (INFO FOR TABLE);
 * "timeout" gets TIMEOUT as the mount writes it. */
static void
read_queue(const char *arg, WorkConfig *cfg, char *timeout, size_t timeout_len)
{
    Buf text = {0}, answer = {0};
    lang_buf_printf(&text, "INFO FOR TABLE %s;\n", cfg->table);
    bool wrote = false;
    int rc = work_ctl_exchange(cfg, NULL, text.data, text.len, &answer, &wrote);
    lang_buf_free(&text);
    if (rc < 0 || !wrote) {
        while (answer.len && answer.data[answer.len - 1] == '\n')
            answer.data[--answer.len] = 0;
        die(false, "%s: not a queue of a queuefs mount (INFO FOR TABLE %s: %s)", arg, cfg->table,
            answer.len ? answer.data : "no answer");
    }
    Value info = {0};
    LangError err = {0};
    if (lang_literal_parse(answer.data, answer.len, &info, &err) != 0)
        info = lang_value_null();
    lang_buf_free(&answer);
    char spare[256];
    const char *kind = info_string(&info, "kind", spare, sizeof spare);
    if (!kind || strcmp(kind, "queue") != 0)
        die(false, "%s: a %s, not a queue", arg, kind ? kind : "table that is not a queue");
    const char *t = info_string(&info, "timeout", spare, sizeof spare);
    snprintf(timeout, timeout_len, "%s", t ? t : "");
    int64_t ms = 0;
    if (!duration_ms(timeout, &ms) || ms <= 0)
        die(false, "%s: cannot read the queue's TIMEOUT ('%s')", arg, timeout);
    cfg->not_before = info_string(&info, "not_before", spare, sizeof spare) != NULL;
    if (cfg->touch_ms < 0)
        cfg->touch_ms = ms / 3 > 0 ? ms / 3 : 1;
    lang_value_free(&info);
}

/* Checks --rearm's clause against the mount with a RELEASE ALL for a
 * consumer nobody is (it releases nothing), and sets cfg->rearm_when;
 * "clause" gets the clause, CRON 'EXPR'[ IN 'ZONE']. */
static void
check_rearm(const char *arg, WorkConfig *cfg, const Rearm *rearm, Buf *clause)
{
    if (!cfg->not_before)
        die(false,
            "%s: --rearm needs a queue that declares NOT BEFORE (ALTER QUEUE %s NOT BEFORE FIELD)",
            arg, cfg->table);
    lang_buf_printf(clause, "CRON '%s'", rearm->expr);
    if (rearm->zone)
        lang_buf_printf(clause, " IN '%s'", rearm->zone);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    unsigned nonce = 0;
    if (getrandom(&nonce, sizeof nonce, 0) != sizeof nonce)
        nonce = (unsigned)getpid();
    Buf text = {0}, answer = {0}, error = {0};
    lang_buf_printf(
        &text, "RELEASE ALL FROM %s FOR CONSUMER 'queuefs-work.check.%s.%d%u' NOT BEFORE %s;\n",
        cfg->table, host, (int)getpid(), nonce, clause->data);
    bool wrote = false;
    work_ctl_exchange(cfg, NULL, text.data, text.len, &answer, &wrote);
    if (work_ctl_error(answer.data, &error)) {
        /* "NAME: message at line L, column C": the message alone. */
        const char *msg = strstr(error.data, ": ");
        msg = msg ? msg + 2 : error.data;
        char *at = NULL;
        for (char *p = strstr(msg, " at line "); p; p = strstr(p + 1, " at line "))
            at = p;
        if (at && strstr(at, ", column "))
            *at = 0;
        die(false, "--rearm: %s", msg);
    }
    lang_buf_free(&text);
    lang_buf_free(&answer);
    lang_buf_free(&error);
    Buf when = {0};
    char *expr = slash_escaped(rearm->expr);
    lang_buf_printf(&when, "@cron %s", expr);
    free(expr);
    if (rearm->zone) {
        char *zone = slash_escaped(rearm->zone);
        lang_buf_printf(&when, " in %s", zone);
        free(zone);
    }
    cfg->rearm_when = lang_buf_steal(&when);
}

/* Frees what locate_queue and check_rearm allocated for "cfg". */
static void
config_free(WorkConfig *cfg)
{
    free((char *)cfg->queue);
    free(cfg->table);
    free(cfg->mount_dir);
    free(cfg->ctl_path);
    free(cfg->wait_path);
    free(cfg->held_dir);
    free(cfg->rearm_when);
}

/* Starts the workers and waits for them; SIGTERM and SIGINT are passed
 * on as SIGTERM.  Returns the exit status. */
static int
run_workers(const WorkConfig *cfg)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    pid_t *pids = lang_xcalloc((size_t)cfg->workers, sizeof *pids);
    int live = 0, failed = 0;
    bool stopping = false;
    for (int i = 0; i < cfg->workers; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0)
            _exit(work_worker_run(cfg, i + 1));
        if (pid > 0) {
            pids[i] = pid;
            live++;
        } else {
            work_note("%s[%d] cannot start worker %d: %s", prog, (int)getpid(), i + 1,
                      strerror(errno));
            failed = 1;
        }
    }
    while (live > 0) {
        int sig = sigwaitinfo(&set, NULL);
        if (sig == SIGTERM || sig == SIGINT) {
            stopping = true;
            for (int i = 0; i < cfg->workers; i++) {
                if (pids[i] > 0)
                    kill(pids[i], SIGTERM);
            }
            continue;
        }
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            for (int i = 0; i < cfg->workers; i++) {
                if (pids[i] != pid)
                    continue;
                pids[i] = 0;
                live--;
                failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
            }
        }
    }
    free(pids);
    if (stopping) {
        work_note("%s[%d] stopped", prog, (int)getpid());
        return 0;
    }
    work_note("%s[%d] stops: no worker is left", prog, (int)getpid());
    return failed;
}

int
main(int argc, char **argv)
{
    WorkConfig cfg = {.workers = 1, .backoff_ms = 1000, .cap_ms = 3600000, .grace_ms = 30000};
    Rearm rearm = {0};
    int qi = parse_options(argc, argv, &cfg, &rearm);
    /* The signals are taken before anything can send one. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    locate_queue(argv[qi], &cfg);
    char timeout[256];
    read_queue(argv[qi], &cfg, timeout, sizeof timeout);
    Buf clause = {0}, note = {0};
    if (rearm.expr)
        check_rearm(argv[qi], &cfg, &rearm, &clause);
    lang_buf_printf(&note, "%s[%d] starts %d worker(s)", prog, (int)getpid(), cfg.workers);
    if (cfg.batch)
        lang_buf_printf(&note, " claiming up to %d records at once", cfg.batch);
    if (rearm.expr)
        lang_buf_printf(&note, ", re-arming done records NOT BEFORE %s", clause.data);
    lang_buf_printf(&note, " on %s (TIMEOUT %s, ", cfg.queue, timeout);
    if (cfg.touch_ms > 0) {
        lang_buf_puts(&note, "touching holds every ");
        work_ms_format(cfg.touch_ms, &note);
    } else {
        lang_buf_puts(&note, "never touching holds");
    }
    lang_buf_puts(&note, cfg.not_before
                             ? "; a failed record is released NOT BEFORE its backoff)"
                             : "; no NOT BEFORE: a failed record is held, touched, for its "
                               "backoff, then released)");
    work_note("%s", note.data);
    lang_buf_free(&note);
    lang_buf_free(&clause);
    int status = run_workers(&cfg);
    config_free(&cfg);
    return status;
}
