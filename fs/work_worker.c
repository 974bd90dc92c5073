/* work_worker.c — a worker of queuefs-work: one process, one event loop.
 *
 * Over and over, a worker claims (`open MOUNT/QUEUE/wait`, or with --batch
 * `CLAIM n FROM q WAIT 1s` through a ctl session of the worker's), runs the
 * command once for what it claimed and ends the records (work_end.c).
 * While the command runs, one ppoll() waits for everything at once: the
 * command's exit (SIGCHLD), its stderr (passed on line by line; the last
 * line that is not blank is kept for a failure's reason), the stop
 * (SIGTERM, SIGINT), and the timers — a look at the holds every second
 * (or every touch when that is more often: a record deleted is cancelled,
 * a hold that lapsed is no longer touched), a touch of the holds every
 * --touch-every, the grace after a stop, and the kills after it.
 *
 * A failed record on a queue without NOT BEFORE is kept held, touched, for
 * its backoff by a keeper — a timer of the same loop, not a process — so
 * the worker goes on claiming; a stop releases it at once.
 *
 * The signals the loop waits for are blocked but in ppoll(), so none is
 * missed between a check and the wait.  The one blocking call besides,
 * the open of wait (which claims), runs with them unblocked: the stop
 * interrupts it (the mount answers EINTR and claims nothing), and so does
 * SIGALRM, set for a keeper's next moment; a stop that comes just before
 * the open starts is caught by SIGALRM every 50 ms until it returns.  A
 * batch's claim is never interrupted (a reader killed as its claim
 * committed would leave records held, unread): it ends within its second,
 * and a stop then hands back what it took, unrun (outcome returned).
 *
 * Decisions beyond the script it replaces: a held/ name is touched with
 * utimensat(), which never creates it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "work.h"

extern char **environ;

#define MS ((int64_t)1000000)
/* How long a command's stderr is still read after it exits (a process it
 * left behind may hold it open). */
#define RELAY_AFTER_EXIT_MS 500

static volatile sig_atomic_t got_stop, got_child, in_wait_open;

/* Sets SIGALRM to come every "interval_ms" from "first_ns" on (0: never). */
static void
alarm_set(int64_t first_ns, int64_t interval_ms)
{
    struct itimerval it = {{interval_ms / 1000, interval_ms % 1000 * 1000},
                           {first_ns / 1000000000, first_ns / 1000 % 1000000}};
    if (first_ns > 0 && it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
        it.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &it, NULL);
}

/* SIGTERM's and SIGINT's handler: the worker stops claiming.  In the
 * open of wait, SIGALRM comes every 50 ms until the open returns, in case
 * this came just before it began. */
static void
on_stop(int sig)
{
    (void)sig;
    got_stop = 1;
    if (in_wait_open)
        alarm_set(50 * MS, 50);
}

/* SIGCHLD's handler (the command exited) and SIGALRM's (its only work is
 * to interrupt the open of wait). */
static void
on_signal(int sig)
{
    if (sig == SIGCHLD)
        got_child = 1;
}

/* Lets the signals that came since the last wait be handled now. */
static void
signals_take(const sigset_t *unblocked)
{
    struct timespec zero = {0, 0};
    ppoll(NULL, 0, &zero, unblocked);
}

/* Records held for their backoff, ended together. */
typedef struct Keeper {
    WorkGroup g;
    int64_t until_ns;     /* they are released then */
    int64_t next_tick_ns; /* their holds are looked at then */
    int64_t since_ms;     /* since they were last touched */
    struct Keeper *next;
} Keeper;

/* A worker's state. */
typedef struct Worker {
    const WorkConfig *cfg;
    int id;
    sigset_t handled;   /* the signals it waits for, blocked but while it waits */
    sigset_t unblocked; /* the mask it waits with */
    int64_t tick_ms;    /* how often holds are looked at */
    Keeper *keepers;
    char **envp;     /* the environment without QUEUEFS_*, then a command's own */
    size_t env_base; /* where a command's own begin */
    Buf claim;       /* what the last claim read */
    Buf why;         /* why the last claim failed */
    int ctl;         /* with --batch, its ctl session for claims and ends, or -1 */
} Worker;

/* True when "path" exists (as `test -e`). */
static bool
exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Extends the hold of "r" (as `touch`); a failure is for the next look to
 * find. */
static void
touch_hold(const WorkRecord *r)
{
    utimensat(AT_FDCWD, r->held, NULL, 0);
}

/* base·2^(attempts-1), at most the cap. */
static int64_t
backoff_for(const WorkConfig *cfg, int64_t attempts)
{
    int64_t d = cfg->backoff_ms;
    for (int64_t i = 1; i < attempts && d > 0 && d < cfg->cap_ms; i++)
        d *= 2;
    return d <= cfg->cap_ms ? d : cfg->cap_ms;
}

/* ---- keepers ---- */

/* Ends every record of "g" as its "end" says (work_end). */
static void
group_end(Worker *w, const WorkGroup *g)
{
    size_t *all = lang_xcalloc(g->n, sizeof *all);
    for (size_t i = 0; i < g->n; i++)
        all[i] = i;
    work_end(w->cfg, &w->ctl, w->id, g, all, g->n);
    free(all);
}

/* Ends keeper "k": its records are released, logged with their delay. */
static void
keeper_end(Worker *w, Keeper *k)
{
    group_end(w, &k->g);
    work_group_free(&k->g);
    free(k);
}

/* Serves the keepers at "now": touches their holds when due, and ends
 * those whose backoff passed — every one with "all" or after a stop.
 * Without --batch a keeper ends early when its hold is gone. */
static void
keepers_serve(Worker *w, int64_t now, bool all)
{
    for (Keeper **p = &w->keepers; *p;) {
        Keeper *k = *p;
        bool end = all || got_stop || now >= k->until_ns;
        if (!end && now >= k->next_tick_ns) {
            if (w->cfg->batch == 0 && !exists(k->g.recs[0].held)) {
                end = true;
            } else {
                k->next_tick_ns += w->tick_ms * MS;
                k->since_ms += w->tick_ms;
                if (w->cfg->touch_ms > 0 && k->since_ms >= w->cfg->touch_ms) {
                    for (size_t i = 0; i < k->g.n; i++)
                        touch_hold(&k->g.recs[i]);
                    k->since_ms = 0;
                }
            }
        }
        if (end) {
            *p = k->next;
            keeper_end(w, k);
        } else {
            p = &k->next;
        }
    }
}

/* The keepers' next moment (CLOCK_MONOTONIC), or INT64_MAX. */
static int64_t
keepers_next(const Worker *w)
{
    int64_t next = INT64_MAX;
    for (const Keeper *k = w->keepers; k; k = k->next) {
        int64_t t = k->until_ns < k->next_tick_ns ? k->until_ns : k->next_tick_ns;
        next = t < next ? t : next;
    }
    return next;
}

/* Keeps the records "idx" of "g" (each with its delay "delay_ms") held
 * for that long: they move to a keeper of their own. */
static void
keep(Worker *w, WorkGroup *g, const size_t *idx, size_t count, int64_t delay_ms)
{
    Keeper *k = lang_xcalloc(1, sizeof *k);
    k->g.recs = lang_xcalloc(count, sizeof *k->g.recs);
    for (size_t i = 0; i < count; i++) {
        WorkRecord *r = &g->recs[idx[i]];
        k->g.recs[k->g.n] = *r;
        k->g.recs[k->g.n].json = NULL;
        k->g.recs[k->g.n++].end = WORK_RELEASED;
        memset(r, 0, sizeof *r);
    }
    k->g.status = g->status;
    k->g.start_ns = g->start_ns;
    k->g.reason = g->reason ? lang_xstrdup(g->reason) : NULL;
    int64_t now = work_clock_ns(CLOCK_MONOTONIC);
    k->until_ns = now + delay_ms * MS;
    k->next_tick_ns = now + w->tick_ms * MS;
    k->next = w->keepers;
    w->keepers = k;
}

/* Waits until "deadline" (CLOCK_MONOTONIC) or a stop, serving the
 * keepers meanwhile. */
static void
idle_until(Worker *w, int64_t deadline)
{
    for (;;) {
        int64_t now = work_clock_ns(CLOCK_MONOTONIC);
        keepers_serve(w, now, false);
        if (got_stop || now >= deadline)
            return;
        int64_t next = keepers_next(w);
        next = next < deadline ? next : deadline;
        struct timespec ts = {(next - now) / 1000000000, (next - now) % 1000000000};
        ppoll(NULL, 0, &ts, &w->unblocked);
    }
}

/* ---- claims ---- */

/* Claims a record with `open wait` into w->claim: 1 claimed, 0 nothing
 * (a stop), -1 failed (why in w->why).  Keepers are served meanwhile. */
static int
claim_one(Worker *w)
{
    lang_buf_reset(&w->claim);
    lang_buf_reset(&w->why);
    for (;;) {
        int64_t now = work_clock_ns(CLOCK_MONOTONIC);
        keepers_serve(w, now, false);
        if (got_stop)
            return 0;
        int64_t next = keepers_next(w);
        if (next != INT64_MAX)
            alarm_set(next > now ? next - now : 1, 0);
        in_wait_open = 1;
        sigprocmask(SIG_SETMASK, &w->unblocked, NULL);
        int fd = open(w->cfg->wait_path, O_RDONLY | O_CLOEXEC);
        int e = errno;
        sigprocmask(SIG_BLOCK, &w->handled, NULL);
        in_wait_open = 0;
        alarm_set(0, 0);
        if (fd < 0 && e == EINTR)
            continue;
        if (fd < 0) {
            lang_buf_printf(&w->why, "%s: %s", w->cfg->wait_path, strerror(e));
            return -1;
        }
        bool ok = work_read_all(fd, &w->claim);
        e = errno;
        close(fd);
        if (!ok) {
            lang_buf_printf(&w->why, "%s: %s", w->cfg->wait_path, strerror(e));
            return -1;
        }
        return w->claim.len > 0;
    }
}

/* Claims up to --batch records with CLAIM n FROM q WAIT 1s into w->claim:
 * 1 an answer, 0 none, -1 failed (why in w->why). */
static int
claim_batch(Worker *w)
{
    lang_buf_reset(&w->why);
    signals_take(&w->unblocked);
    keepers_serve(w, work_clock_ns(CLOCK_MONOTONIC), false);
    if (got_stop)
        return 0;
    Buf text = {0};
    lang_buf_printf(&text, "CLAIM %d FROM %s WAIT 1s;\n", w->cfg->batch, w->cfg->table);
    bool wrote = false;
    int rc = work_ctl_exchange(w->cfg, &w->ctl, text.data, text.len, &w->claim, &wrote);
    lang_buf_free(&text);
    signals_take(&w->unblocked);
    if (rc < 0 || !wrote) {
        lang_buf_append(&w->why, w->claim.data, w->claim.len);
        lang_buf_reset(&w->claim);
        return -1;
    }
    return w->claim.len > 0;
}

/* Appends to "out" the first "max" bytes of "s", without the newlines
 * it ends with (as $(head -c max FILE)). */
static void
put_head(Buf *out, const char *s, size_t len, size_t max)
{
    len = len < max ? len : max;
    while (len > 0 && s[len - 1] == '\n')
        len--;
    lang_buf_append(out, s, len);
}

/* ---- the command ---- */

/* Sets the command's own variables in w->envp for group "g". */
static void
env_set(Worker *w, const WorkGroup *g, Buf *strings)
{
    const WorkConfig *cfg = w->cfg;
    size_t offs[8], n = 0;
    if (cfg->batch == 0) {
        const WorkRecord *r = &g->recs[0];
        offs[n++] = strings->len;
        lang_buf_printf(strings, "QUEUEFS_ID=%s%c", r->name, 0);
        offs[n++] = strings->len;
        lang_buf_printf(strings, "QUEUEFS_ATTEMPTS=%lld%c", (long long)r->attempts, 0);
        offs[n++] = strings->len;
        lang_buf_printf(strings, "QUEUEFS_HOLD=%lld%c", (long long)r->hold, 0);
        offs[n++] = strings->len;
        lang_buf_printf(strings, "QUEUEFS_RECORD=%s%c", r->id, 0);
    } else {
        offs[n++] = strings->len;
        lang_buf_printf(strings, "QUEUEFS_BATCH=%zu%c", g->n, 0);
    }
    offs[n++] = strings->len;
    lang_buf_printf(strings, "QUEUEFS_QUEUE=%s%c", cfg->queue, 0);
    offs[n++] = strings->len;
    lang_buf_printf(strings, "QUEUEFS_WORKER=%d%c", w->id, 0);
    for (size_t i = 0; i < n; i++)
        w->envp[w->env_base + i] = strings->data + offs[i];
    w->envp[w->env_base + n] = NULL;
}

/* The look at the holds of "g" while its command runs: a record whose
 * hold is gone is cancelled when it is gone too (deleted), otherwise no
 * longer looked at (the hold lapsed); once every record is cancelled the
 * command gets SIGTERM, and SIGKILL after the grace.  The holds left are
 * touched every --touch-every. */
static void
look_at_holds(Worker *w, WorkGroup *g, WorkRun *run, int64_t now)
{
    const WorkConfig *cfg = w->cfg;
    size_t cancelled = 0, live = 0;
    Buf path = {0};
    for (size_t i = 0; i < g->n; i++) {
        WorkRecord *r = &g->recs[i];
        if (r->watched && !exists(r->held)) {
            r->watched = false;
            lang_buf_reset(&path);
            lang_buf_printf(&path, "%s/%s", cfg->queue, r->name);
            r->cancelled = !exists(path.data);
        }
        cancelled += r->cancelled;
        live += r->watched;
    }
    lang_buf_free(&path);
    if (cancelled == g->n) {
        kill(-run->pid, SIGTERM);
        run->kill_ns = now + cfg->grace_ms * MS;
        run->grace_ns = -1;
        run->watching = false;
        return;
    }
    run->watching = live > 0;
    run->since_ms += w->tick_ms;
    if (cfg->touch_ms > 0 && run->since_ms >= cfg->touch_ms && live > 0) {
        for (size_t i = 0; i < g->n; i++) {
            if (g->recs[i].watched)
                touch_hold(&g->recs[i]);
        }
        run->since_ms = 0;
    }
}

/* The running command's timers at "now": the holds looked at, the grace,
 * the kill; the keepers served.  Returns the next moment one is due. */
static int64_t
timers(Worker *w, WorkGroup *g, const char *running, WorkRun *run, int64_t now)
{
    if (run->pid && got_stop && !run->stop_seen) {
        run->stop_seen = true;
        Buf grace = {0};
        work_ms_format(w->cfg->grace_ms, &grace);
        work_note("worker=%d stops claiming; %s has %s to finish", w->id, running, grace.data);
        lang_buf_free(&grace);
        if (run->grace_ns < 0 && run->kill_ns < 0)
            run->grace_ns = now + w->cfg->grace_ms * MS;
    }
    if (run->pid && run->grace_ns >= 0 && now >= run->grace_ns) {
        run->killed = true;
        kill(-run->pid, SIGTERM);
        run->grace_ns = -1;
        run->kill_ns = now + 5000 * MS;
    }
    if (run->pid && run->kill_ns >= 0 && now >= run->kill_ns) {
        kill(-run->pid, SIGKILL);
        run->kill_ns = -1;
    }
    if (run->pid && run->watching && now >= run->tick_ns) {
        look_at_holds(w, g, run, now);
        run->tick_ns += w->tick_ms * MS;
    }
    keepers_serve(w, now, false);
    int64_t next = keepers_next(w);
    if (!run->pid)
        next = run->exited_ns + RELAY_AFTER_EXIT_MS * MS;
    else if (run->watching && run->tick_ns < next)
        next = run->tick_ns;
    if (run->pid && run->grace_ns >= 0 && run->grace_ns < next)
        next = run->grace_ns;
    if (run->pid && run->kill_ns >= 0 && run->kill_ns < next)
        next = run->kill_ns;
    return next;
}

/* Runs the command for "g" ("running" names it for the stop's note) with
 * "in" on stdin, and, with --batch, "out" filled with its stdout; returns
 * once it exited and its stderr ended (or RELAY_AFTER_EXIT_MS later). */
static void
run_command(Worker *w, WorkGroup *g, const char *running, const Buf *in, Buf *out, WorkRun *run)
{
    memset(run, 0, sizeof *run);
    run->grace_ns = run->kill_ns = -1;
    run->watching = true;
    int out_fd = out ? memfd_create("queuefs-work-out", MFD_CLOEXEC) : -1;
    got_child = 0;
    g->start_ns = work_clock_ns(CLOCK_MONOTONIC);
    run->tick_ns = g->start_ns + w->tick_ms * MS;
    Buf strings = {0};
    env_set(w, g, &strings);
    work_run_start(w->cfg, w->envp, in, out_fd, run);
    lang_buf_free(&strings);
    for (;;) {
        if (run->pid && got_child) {
            got_child = 0;
            int st;
            if (waitpid(run->pid, &st, WNOHANG) == run->pid) {
                run->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                run->pid = 0;
                run->exited_ns = work_clock_ns(CLOCK_MONOTONIC);
            }
        }
        int64_t now = work_clock_ns(CLOCK_MONOTONIC);
        int64_t next = timers(w, g, running, run, now);
        if (!run->pid && (run->err_fd < 0 || now >= next))
            break;
        struct pollfd p = {run->err_fd, POLLIN, 0};
        int64_t wait_ns = next > now ? next - now : 0;
        struct timespec ts = {wait_ns / 1000000000, wait_ns % 1000000000};
        if (ppoll(&p, run->err_fd >= 0, next == INT64_MAX ? NULL : &ts, &w->unblocked) > 0)
            work_run_relay_read(run);
    }
    work_run_relay_end(run);
    if (out_fd >= 0) {
        lseek(out_fd, 0, SEEK_SET);
        work_read_all(out_fd, out);
        close(out_fd);
    }
    lang_buf_free(&run->pending);
    lang_buf_free(&run->head);
}

/* Ends the records of "g" after its command ran: cancelled ones logged;
 * after the grace a failed command's released (killed); exit 0 finishes
 * (or re-arms) those not "named", the others released with their backoff
 * — kept held for it by a keeper on a queue without NOT BEFORE. */
static void
records_end(Worker *w, WorkGroup *g, const WorkRun *run, const bool *named)
{
    const WorkConfig *cfg = w->cfg;
    size_t *now = lang_xcalloc(g->n, sizeof *now), *kept = lang_xcalloc(g->n, sizeof *kept);
    size_t n_now = 0, n_kept = 0;
    g->status = run->status;
    for (size_t i = 0; i < g->n; i++) {
        if (g->recs[i].cancelled)
            work_log_record(w->id, g, &g->recs[i], WORK_CANCELLED, NULL);
        else
            now[n_now++] = i;
    }
    bool killed = run->killed && run->status != 0;
    if (killed) {
        for (size_t i = 0; i < n_now; i++)
            g->recs[now[i]].end = WORK_KILLED;
    } else if (run->status == 0 && cfg->batch > 0) {
        Buf why = {0};
        lang_buf_puts(&why, "exit 0, named on stdout");
        if (run->last.len)
            lang_buf_printf(&why, ": %s", run->last.data);
        g->reason = lang_buf_steal(&why);
    } else if (run->status != 0) {
        g->reason = work_failure_reason(run->status, &run->last);
    }
    size_t live = n_now;
    n_now = 0;
    for (size_t j = 0; j < live; j++) {
        size_t i = now[j];
        WorkRecord *r = &g->recs[i];
        if (killed || (run->status == 0 && !named[i])) {
            r->end = killed ? WORK_KILLED : cfg->rearm_when ? WORK_REARMED : WORK_FINISHED;
            now[n_now++] = i;
            continue;
        }
        r->end = WORK_RELEASED;
        r->delay_ms = backoff_for(cfg, r->attempts);
        if (r->delay_ms > 0 && !cfg->not_before && !got_stop) {
            kept[n_kept++] = i;
            continue;
        }
        if (got_stop && !cfg->not_before)
            r->delay_ms = 0;
        now[n_now++] = i;
    }
    work_end(cfg, &w->ctl, w->id, g, now, n_now);
    /* One keeper a delay. */
    for (size_t j = 0; j < n_kept; j++) {
        if (!g->recs[kept[j]].id)
            continue;
        int64_t d = g->recs[kept[j]].delay_ms;
        size_t same = 0;
        for (size_t k = j; k < n_kept; k++) {
            if (g->recs[kept[k]].id && g->recs[kept[k]].delay_ms == d)
                now[same++] = kept[k];
        }
        keep(w, g, now, same, d);
    }
    work_log_flush();
    free(now);
    free(kept);
}

/* Runs the command for what w->claim holds, and ends its records. */
static void
run_claim(Worker *w)
{
    WorkGroup g;
    if (!work_claim_read(w->cfg, &w->claim, &g)) {
        if (!got_stop) {
            Buf head = {0};
            put_head(&head, w->claim.data, w->claim.len, 300);
            if (w->cfg->batch == 0) {
                work_note("worker=%d cannot read the claimed record (it stays held until its "
                          "hold lapses): %s",
                          w->id, head.data ? head.data : "");
            } else {
                work_note("worker=%d cannot claim: %s", w->id, head.data ? head.data : "");
                idle_until(w, work_clock_ns(CLOCK_MONOTONIC) + 1000 * MS);
            }
            lang_buf_free(&head);
        }
        work_group_free(&g);
        return;
    }
    if (g.n == 0) {
        work_group_free(&g);
        return;
    }
    g.start_ns = work_clock_ns(CLOCK_MONOTONIC);
    if (got_stop) {
        /* Claimed as the stop came: handed back unrun. */
        for (size_t i = 0; i < g.n; i++)
            g.recs[i].end = WORK_RETURNED;
        group_end(w, &g);
    } else {
        Buf in = {0}, out = {0}, running = {0};
        if (w->cfg->batch == 0) {
            lang_buf_append(&in, w->claim.data, w->claim.len);
            lang_buf_puts(&running, "id=");
            work_log_id(g.recs[0].name, &running);
        } else {
            for (size_t i = 0; i < g.n; i++) {
                lang_buf_append(&in, g.recs[i].json, g.recs[i].json_len);
                lang_buf_putc(&in, '\n');
            }
            lang_buf_printf(&running, "a batch of %zu", g.n);
        }
        WorkRun run;
        run_command(w, &g, running.data, &in, w->cfg->batch ? &out : NULL, &run);
        bool *named = lang_xcalloc(g.n, sizeof *named);
        if (run.status == 0 && w->cfg->batch)
            work_named_on_stdout(w->id, &g, &out, named);
        records_end(w, &g, &run, named);
        free(named);
        lang_buf_free(&run.last);
        lang_buf_free(&in);
        lang_buf_free(&out);
        lang_buf_free(&running);
    }
    work_group_free(&g);
}

/* True when the environment's entry "e" sets one of the variables
 * queuefs-work gives a command. */
static bool
own_variable(const char *e)
{
    static const char *const names[] = {"ID",    "ATTEMPTS", "HOLD", "RECORD",
                                        "QUEUE", "WORKER",   "BATCH"};
    if (strncmp(e, "QUEUEFS_", 8) != 0)
        return false;
    size_t len = strcspn(e + 8, "=");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i]) == len && strncmp(e + 8, names[i], len) == 0)
            return true;
    }
    return false;
}

/* Sets up worker "w": its signals, its environment without QUEUEFS_*. */
static void
worker_init(Worker *w, const WorkConfig *cfg, int id)
{
    memset(w, 0, sizeof *w);
    w->cfg = cfg;
    w->id = id;
    w->ctl = -1;
    w->tick_ms = cfg->touch_ms > 0 && cfg->touch_ms < 1000 ? cfg->touch_ms : 1000;
    static const int handled[] = {SIGTERM, SIGINT, SIGCHLD, SIGALRM};
    sigemptyset(&w->handled);
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
        struct sigaction sa = {0};
        sa.sa_handler = handled[i] == SIGTERM || handled[i] == SIGINT ? on_stop : on_signal;
        sigaction(handled[i], &sa, NULL);
        sigaddset(&w->handled, handled[i]);
    }
    sigprocmask(SIG_BLOCK, &w->handled, &w->unblocked);
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
        sigdelset(&w->unblocked, handled[i]);
    signal(SIGPIPE, SIG_IGN);
    size_t n = 0;
    while (environ[n])
        n++;
    w->envp = lang_xcalloc(n + 8, sizeof *w->envp);
    for (size_t i = 0; i < n; i++) {
        if (!own_variable(environ[i]))
            w->envp[w->env_base++] = environ[i];
    }
}

int
work_worker_run(const WorkConfig *cfg, int id)
{
    Worker w;
    worker_init(&w, cfg, id);
    int rc = 0;
    while (!got_stop) {
        int st = cfg->batch ? claim_batch(&w) : claim_one(&w);
        if (st > 0) {
            run_claim(&w);
        } else if (st < 0 && !got_stop) {
            Buf why = {0};
            put_head(&why, w.why.data ? w.why.data : "", w.why.len, 300);
            struct stat sb;
            if (stat(cfg->held_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
                work_note("worker=%d stops: %s is gone (%s)", id, cfg->queue,
                          why.data ? why.data : "");
                lang_buf_free(&why);
                rc = 1;
                break;
            }
            work_note("worker=%d cannot wait for a record: %s", id, why.data ? why.data : "");
            lang_buf_free(&why);
            idle_until(&w, work_clock_ns(CLOCK_MONOTONIC) + 1000 * MS);
        }
    }
    /* Records held for their backoff go back now. */
    keepers_serve(&w, work_clock_ns(CLOCK_MONOTONIC), true);
    work_log_flush();
    lang_buf_free(&w.claim);
    lang_buf_free(&w.why);
    free(w.envp);
    if (w.ctl >= 0)
        close(w.ctl);
    return rc;
}
