/* soakcheck.c — checks the log of a queuefs soak (scripts/soak) against
 * what queuefs promises a worker, and prints the run's figures.
 *
 *     soakcheck [--timeout-ms N] [--slack-ms N] [--crash] LOG…
 *
 * The LOGs hold the lines mnt-tests/soak.c writes (CREATED, CREATE_FAILED,
 * CLAIM, CLAIM_FAILED, FINISH, RELEASE, ABANDON, SUMMARY), and the driver's:
 *
 *     PRESENT - 0 0 0 0 ID SERIAL ATTEMPTS   a record in the store at the end
 *     STATE   - 0 0 0 0 COUNT                the end state was read: COUNT records
 *     KILL    - S_RT 0 E_RT 0 MOUNT PID       a daemon was SIGKILLed
 *     FINDING - S_RT 0 E_RT 0 TEXT…           the driver saw something wrong
 *
 * (A time of 0 is unknown: the driver has no monotonic clock at hand.)
 *
 * What it checks, counting only system calls that returned success:
 *
 *   lost         every record whose write() to new returned success is, at
 *                the end, finished (one successful unlink) or in the store;
 *   finished     no record is unlinked successfully twice, claimed or
 *                released after it was unlinked, or in the store after it;
 *   overlap      no two holds of one record overlap: the store's time of a
 *                claim (its claimed_until less the TIMEOUT) is not before
 *                the end of the previous hold of that record, which is the
 *                earliest of its claimed_until and the start of a successful
 *                finish or release of the record that may have come after
 *                that claim;
 *   attempts     strictly increase from claim to claim of a record, and
 *                never go back in the end state; without --crash every
 *                hand-out reached a worker, so they go 1, 2, 3 …;
 *   identity     a record keeps its serial, a serial has one record, and
 *                nothing exists that the producer did not write;
 *   claimed_until  a claim's store time lies within its system call;
 *   errors       without --crash, no system call fails other than a finish
 *                or release of a record already gone or held elsewhere.
 *
 * With --crash an operation that failed with anything but ENOENT or EBUSY
 * (ENOTCONN: the daemon died under it) may or may not have taken effect:
 * a failed write() to new may have stored its records, a failed unlink
 * may have deleted one, a failed claim may have handed a record to nobody.
 *
 * Why the checks are safe from false alarms: queuefs reads the clock for a
 * statement inside the store's write transaction, so a claim's store time
 * comes after the commit of every transaction before it, and that commit
 * came after the worker stamped the start of its system call.  Times from
 * the daemon and from the workers come from one CLOCK_REALTIME, so no
 * slack is needed in principle; --slack-ms (default 2) absorbs an NTP slew
 * (at most 0.05%, 1 ms over a 2 s hold).  A step of the wall clock during
 * the run shows as a change of REALTIME - MONOTONIC between the first and
 * last events; the slack then grows by that change, and it is reported.
 *
 * Exits 0 when nothing was found, 1 with findings (each printed with the
 * log lines behind it), 2 when the log cannot be read. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INDEX = 50000000, MAX_SHOWN = 12 };

/* ---- the log in memory ---- */

typedef struct Line {
    char *text;
    const char *file;
    long no;
} Line;

static Line *lines;
static size_t nlines, cap_lines;

typedef enum Kind { K_FINISH, K_RELEASE } Kind;

/* What a finish or release did: OK, nothing (a definite failure), or maybe
 * something (it failed while the daemon died). */
typedef enum Outcome { O_OK, O_NONE, O_MAYBE } Outcome;

typedef struct Claim {
    int64_t lin, cs, ce, cu, attempts, serial;
    int who;
    size_t line;
} Claim;

typedef struct Op {
    Kind kind;
    Outcome outcome;
    int64_t rs, re;
    int who;
    bool late;
    size_t line;
} Op;

typedef struct Rec {
    Claim *claims;
    size_t nclaims, cap_claims;
    Op *ops;
    size_t nops, cap_ops;
    int64_t serial; /* 0 until known */
    size_t serial_line;
    bool present;
    int64_t present_attempts;
    size_t present_line;
} Rec;

typedef enum Created { C_NEVER, C_MAYBE, C_OK } Created;

typedef struct Serial {
    Created created;
    size_t line; /* the CREATED or CREATE_FAILED line */
    int64_t id;  /* 0 until a claim or the end state names it */
} Serial;

static Rec *recs;
static size_t nrecs;
static Serial *serials;
static size_t nserials;

static char **names; /* workers and producers */
static size_t nnames;

/* ---- options and findings ---- */

static int64_t timeout_ns = 2000000000;
static int64_t slack_ns = 2000000;
static bool crash;
static int64_t t0 = INT64_MAX; /* the earliest time in the log: times print relative to it */

typedef struct Tally {
    const char *kind;
    long n;
} Tally;

static Tally tallies[32];
static size_t ntallies;
static long nfindings;

/* realloc that exits on failure. */
static void *
lang_xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fputs("soakcheck: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

/* A copy of "s" that the caller frees. */
static char *
lang_xstrdup(const char *s)
{
    return strcpy(lang_xrealloc(NULL, strlen(s) + 1), s);
}

/* Grows "*arr" (of "*cap" elements of "size" bytes) to hold index "i",
 * zeroing what is new. */
static void
grow(void **arr, size_t *cap, size_t size, size_t i)
{
    if (i < *cap)
        return;
    size_t n = *cap ? *cap : 64;
    while (n <= i)
        n *= 2;
    *arr = lang_xrealloc(*arr, n * size);
    memset((char *)*arr + *cap * size, 0, (n - *cap) * size);
    *cap = n;
}

/* Seconds of "t" after the log's first event, for messages. */
static double
rel(int64_t t)
{
    return (double)(t - t0) / 1e9;
}

/* Counts a finding of kind "kind" and prints it (the first MAX_SHOWN of a
 * kind; the rest are only counted).  show() adds the log lines behind it. */
__attribute__((format(printf, 2, 3))) static void
finding(const char *kind, const char *fmt, ...)
{
    nfindings++;
    Tally *t = NULL;
    for (size_t i = 0; i < ntallies && !t; i++)
        if (strcmp(tallies[i].kind, kind) == 0)
            t = &tallies[i];
    if (!t && ntallies < sizeof tallies / sizeof tallies[0]) {
        t = &tallies[ntallies++];
        t->kind = kind;
    }
    if (t && t->n++ >= MAX_SHOWN)
        return;
    printf("%s: ", kind);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* Shows log line "i" under a finding (only while that kind is shown). */
static void
show(const char *kind, size_t i)
{
    for (size_t k = 0; k < ntallies; k++)
        if (strcmp(tallies[k].kind, kind) == 0 && tallies[k].n > MAX_SHOWN)
            return;
    printf("    %s:%ld: %s\n", lines[i].file, lines[i].no, lines[i].text);
}

/* The index of worker or producer "name", added when new. */
static int
name_index(const char *name)
{
    for (size_t i = 0; i < nnames; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    names = lang_xrealloc(names, (nnames + 1) * sizeof *names);
    names[nnames] = lang_xstrdup(name);
    return (int)nnames++;
}

/* What is known of record jobs:"id" (zeroed when nothing is yet). */
static Rec *
rec_of(int64_t id)
{
    grow((void **)&recs, &nrecs, sizeof *recs, (size_t)id);
    return &recs[id];
}

/* What is known of serial "s" (zeroed when nothing is yet). */
static Serial *
serial_of(int64_t s)
{
    grow((void **)&serials, &nserials, sizeof *serials, (size_t)s);
    return &serials[s];
}

/* ---- figures ---- */

static struct {
    long ops, claims, claim_failed, empty, creates_ok, creates_failed, writes, writes_failed;
    long finishes, finish_ok, finish_gone, finish_late, finish_late_ok, finish_maybe, finish_stole;
    long releases, release_ok, release_delayed, release_late, release_busy, release_gone,
        release_maybe;
    long abandon_quick, abandon_lapse, abandon_late;
    long lapses, kills, present, maybe_stored, unseen;
    int64_t first, last;
} fig;

static bool have_state;     /* a STATE line came */
static int64_t state_count; /* the records it counts */
static int last_write_who = -1;
static int64_t last_write_rt;

/* Remembers that serial "s" is record "id" (seen on log line "line"). */
static void
bind_serial(int64_t s, int64_t id, size_t line)
{
    Rec *r = rec_of(id);
    Serial *sr = serial_of(s);
    if (r->serial && r->serial != s) {
        finding("IDENTITY", "jobs:%" PRId64 " carried serial %" PRId64 " and serial %" PRId64, id,
                r->serial, s);
        show("IDENTITY", r->serial_line);
        show("IDENTITY", line);
    } else if (sr->id && sr->id != id) {
        finding("IDENTITY",
                "serial %" PRId64 " is both jobs:%" PRId64 " and jobs:%" PRId64 " (created twice)",
                s, sr->id, id);
        show("IDENTITY", line);
    }
    if (!r->serial) {
        r->serial = s;
        r->serial_line = line;
    }
    if (!sr->id)
        sr->id = id;
}

/* An operation's result: "0" succeeded; ENOENT or EBUSY changed nothing;
 * anything else did not happen — or, with --crash, maybe did. */
static Outcome
outcome_of(const char *rc)
{
    if (strcmp(rc, "0") == 0)
        return O_OK;
    if (strcmp(rc, "ENOENT") == 0 || strcmp(rc, "EBUSY") == 0)
        return O_NONE;
    return O_MAYBE;
}

/* Without --crash, the failure on log line "line" of "what" is a finding. */
static void
unexpected(size_t line, const char *what)
{
    if (crash)
        return;
    finding("ERROR", "%s failed with no daemon killed", what);
    show("ERROR", line);
}

/* ---- reading ---- */

/* Exits 2 over log line "i", which is not what soak writes. */
static void
malformed(size_t i)
{
    fprintf(stderr, "soakcheck: %s:%ld: malformed line: %s\n", lines[i].file, lines[i].no,
            lines[i].text);
    exit(2);
}

/* Reads an integer field; the line is malformed when it is not one. */
static int64_t
num(const char *s, size_t line, int64_t max)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < 0 || v > max)
        malformed(line);
    return v;
}

/* Takes in line "i" of the log. */
static void
take_line(size_t i)
{
    char *copy = lang_xstrdup(lines[i].text), *save = NULL, *f[16];
    size_t n = 0;
    for (char *tok = strtok_r(copy, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save))
        if (n < 16)
            f[n++] = tok;
    if (n == 0 || f[0][0] == '#') {
        free(copy);
        return;
    }
    if (n < 6)
        malformed(i);
    const char *ev = f[0];
    int who = name_index(f[1]);
    int64_t srt = num(f[2], i, INT64_MAX), smono = num(f[3], i, INT64_MAX);
    int64_t ert = num(f[4], i, INT64_MAX), emono = num(f[5], i, INT64_MAX);
    if (srt && srt < t0)
        t0 = srt;
    if (smono && (!fig.first || smono < fig.first))
        fig.first = smono;
    if (emono > fig.last)
        fig.last = emono;
    char **a = f + 6;
    size_t na = n - 6;
    if (strcmp(ev, "CREATED") == 0 || strcmp(ev, "CREATE_FAILED") == 0) {
        bool ok = ev[6] == 'D';
        if (na != (ok ? 2u : 3u))
            malformed(i);
        Serial *s = serial_of(num(a[0], i, MAX_INDEX));
        if (s->created != C_NEVER) {
            finding("IDENTITY", "serial %s written twice", a[0]);
            show("IDENTITY", s->line);
            show("IDENTITY", i);
        }
        s->created = ok ? C_OK : C_MAYBE;
        s->line = i;
        ok ? fig.creates_ok++ : fig.creates_failed++;
        /* One write() logs a line per record, all with its stamps. */
        if (who != last_write_who || srt != last_write_rt) {
            last_write_who = who;
            last_write_rt = srt;
            fig.writes++;
            fig.ops++;
            if (!ok) {
                fig.writes_failed++;
                unexpected(i, "a write() to new");
            }
        }
    } else if (strcmp(ev, "CLAIM") == 0) {
        if (na != 5)
            malformed(i);
        int64_t id = num(a[0], i, MAX_INDEX);
        Rec *r = rec_of(id);
        grow((void **)&r->claims, &r->cap_claims, sizeof *r->claims, r->nclaims);
        Claim *c = &r->claims[r->nclaims++];
        c->cs = srt;
        c->ce = ert;
        c->attempts = num(a[1], i, INT64_MAX);
        c->cu = num(a[2], i, INT64_MAX);
        c->lin = c->cu - timeout_ns;
        c->serial = num(a[3], i, MAX_INDEX);
        c->who = who;
        c->line = i;
        bind_serial(c->serial, id, i);
        fig.claims++;
        fig.ops++;
    } else if (strcmp(ev, "CLAIM_FAILED") == 0) {
        if (na != 3)
            malformed(i);
        fig.claim_failed++;
        fig.ops++;
        unexpected(i, "a claim");
    } else if (strcmp(ev, "FINISH") == 0 || strcmp(ev, "RELEASE") == 0) {
        bool fin = ev[0] == 'F';
        if (na != (fin ? 4u : 5u))
            malformed(i);
        int64_t id = num(a[0], i, MAX_INDEX);
        const char *rc = fin ? a[1] : a[2];
        Rec *r = rec_of(id);
        grow((void **)&r->ops, &r->cap_ops, sizeof *r->ops, r->nops);
        Op *o = &r->ops[r->nops++];
        o->kind = fin ? K_FINISH : K_RELEASE;
        o->outcome = outcome_of(rc);
        o->rs = srt;
        o->re = ert;
        o->who = who;
        o->late = strcmp(fin ? a[2] : a[3], "1") == 0;
        o->line = i;
        fig.ops++;
        if (fin) {
            fig.finishes++;
            fig.finish_late += o->late;
            if (o->outcome == O_OK) {
                fig.finish_ok++;
                fig.finish_late_ok += o->late;
            } else if (strcmp(rc, "ENOENT") == 0) {
                fig.finish_gone++;
            } else {
                fig.finish_maybe++;
            }
        } else {
            fig.releases++;
            fig.release_late += o->late;
            fig.release_delayed += strcmp(a[1], "0") != 0;
            if (o->outcome == O_OK)
                fig.release_ok++;
            else if (strcmp(rc, "EBUSY") == 0)
                fig.release_busy++;
            else if (strcmp(rc, "ENOENT") == 0)
                fig.release_gone++;
            else
                fig.release_maybe++;
        }
        if (o->outcome == O_MAYBE)
            unexpected(i, fin ? "a finish" : "a release");
    } else if (strcmp(ev, "ABANDON") == 0) {
        if (na != 3)
            malformed(i);
        if (strcmp(a[1], "quick") == 0)
            fig.abandon_quick++;
        else if (strcmp(a[1], "lapse") == 0)
            fig.abandon_lapse++;
        else if (strcmp(a[1], "late") == 0)
            fig.abandon_late++;
        else
            malformed(i);
    } else if (strcmp(ev, "SUMMARY") == 0) {
        if (na != 1)
            malformed(i);
        fig.empty += num(a[0], i, INT64_MAX);
        fig.ops += num(a[0], i, INT64_MAX);
    } else if (strcmp(ev, "PRESENT") == 0) {
        if (na != 3)
            malformed(i);
        int64_t id = num(a[0], i, MAX_INDEX);
        Rec *r = rec_of(id);
        if (r->present)
            malformed(i);
        r->present = true;
        r->present_attempts = num(a[2], i, INT64_MAX);
        r->present_line = i;
        bind_serial(num(a[1], i, MAX_INDEX), id, i);
        fig.present++;
    } else if (strcmp(ev, "STATE") == 0) {
        if (na != 1)
            malformed(i);
        if (have_state)
            malformed(i);
        have_state = true;
        state_count = num(a[0], i, MAX_INDEX);
    } else if (strcmp(ev, "KILL") == 0) {
        fig.kills++;
    } else if (strcmp(ev, "FINDING") == 0) {
        const char *text = lines[i].text;
        for (int k = 0; k < 6; k++) { /* the text follows the sixth field */
            text += strspn(text, " \t");
            text += strcspn(text, " \t");
        }
        finding("DRIVER", "%s", text + strspn(text, " \t"));
    } else {
        malformed(i);
    }
    free(copy);
}

/* Appends the lines of the file at "path" to the log; exits 2 when it
 * cannot be read. */
static void
read_log(const char *path)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        fprintf(stderr, "soakcheck: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    long no = 0;
    while ((len = getline(&buf, &cap, in)) >= 0) {
        no++;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        grow((void **)&lines, &cap_lines, sizeof *lines, nlines);
        lines[nlines++] = (Line){lang_xstrdup(buf), path, no};
    }
    free(buf);
    fclose(in);
}

/* ---- checks ---- */

/* qsort order of claims: by store time, then by place in the log. */
static int
claim_cmp(const void *pa, const void *pb)
{
    const Claim *a = pa, *b = pb;
    return a->lin < b->lin ? -1 : a->lin > b->lin ? 1 : (a->line > b->line) - (a->line < b->line);
}

/* The end of hold "c" of record "r" as far as what happened up to
 * "until" shows: its claimed_until, or earlier the start of a finish or
 * release of the record that succeeded (or, with --crash, maybe did) and
 * may have come after the claim (it returned after the claim's store
 * time).  "*by" is the op that ended it, or NULL when the hold lapsed. */
static int64_t
hold_end(const Rec *r, const Claim *c, int64_t until, const Op **by)
{
    int64_t end = c->cu;
    *by = NULL;
    for (size_t i = 0; i < r->nops; i++) {
        const Op *o = &r->ops[i];
        if (o->outcome == O_NONE || o->re <= c->lin || o->rs > until)
            continue;
        int64_t at = o->rs > c->lin ? o->rs : c->lin;
        if (at < end) {
            end = at;
            *by = o;
        }
    }
    return end;
}

/* The claims of one record, in store order: attempts and overlaps. */
static void
check_claims(int64_t id, Rec *r)
{
    if (r->nclaims)
        qsort(r->claims, r->nclaims, sizeof *r->claims, claim_cmp);
    for (size_t k = 0; k < r->nclaims; k++) {
        const Claim *c = &r->claims[k];
        if (c->lin < c->cs - slack_ns || c->lin > c->ce + slack_ns) {
            finding("CLAIMED-UNTIL",
                    "jobs:%" PRId64 ": claimed_until less the TIMEOUT (%.6f) is outside the claim "
                    "(%.6f to %.6f)",
                    id, rel(c->lin), rel(c->cs), rel(c->ce));
            show("CLAIMED-UNTIL", c->line);
        }
        int64_t want = k ? r->claims[k - 1].attempts + 1 : 1;
        if (c->attempts < want || (!crash && c->attempts != want)) {
            finding("ATTEMPTS",
                    "jobs:%" PRId64 ": attempts %" PRId64 " after %s (expected %s%" PRId64 ")", id,
                    c->attempts, k ? "the claim before it" : "no claim", crash ? "at least " : "",
                    want);
            if (k)
                show("ATTEMPTS", r->claims[k - 1].line);
            show("ATTEMPTS", c->line);
        }
        if (c->attempts > want)
            fig.unseen += c->attempts - want;
        if (!k)
            continue;
        const Claim *p = &r->claims[k - 1];
        const Op *by;
        int64_t end = hold_end(r, p, c->lin + slack_ns, &by);
        if (!by)
            fig.lapses++;
        if (c->lin + slack_ns < end) {
            finding("OVERLAP",
                    "jobs:%" PRId64 " handed to %s (attempts %" PRId64 ") at %.6f while %s's hold "
                    "(attempts %" PRId64 ", from %.6f) lasted until %.6f: %.3f ms too early",
                    id, names[c->who], c->attempts, rel(c->lin), names[p->who], p->attempts,
                    rel(p->lin), rel(end), (double)(end - c->lin) / 1e6);
            show("OVERLAP", p->line);
            if (by)
                show("OVERLAP", by->line);
            show("OVERLAP", c->line);
        }
    }
    if (r->present) {
        int64_t last = r->nclaims ? r->claims[r->nclaims - 1].attempts : 0;
        if (r->present_attempts > last)
            fig.unseen += r->present_attempts - last;
        if (r->present_attempts < last || (!crash && r->present_attempts != last)) {
            finding("ATTEMPTS",
                    "jobs:%" PRId64 " ends with attempts %" PRId64
                    " after a last claim with attempts %" PRId64,
                    id, r->present_attempts, last);
            if (r->nclaims)
                show("ATTEMPTS", r->claims[r->nclaims - 1].line);
            show("ATTEMPTS", r->present_line);
        }
    }
}

/* Finishes of one record: at most one succeeds, and nothing of the record
 * follows it.  Counts late finishes that deleted another worker's hold. */
static void
check_finishes(int64_t id, const Rec *r)
{
    const Op *done = NULL;
    for (size_t i = 0; i < r->nops; i++) {
        const Op *o = &r->ops[i];
        if (o->kind != K_FINISH || o->outcome != O_OK)
            continue;
        if (done) {
            finding("FINISHED", "jobs:%" PRId64 " was unlinked successfully twice", id);
            show("FINISHED", done->line);
            show("FINISHED", o->line);
        } else {
            done = o;
        }
    }
    if (!done)
        return;
    for (size_t k = 0; k < r->nclaims; k++) {
        const Claim *c = &r->claims[k];
        if (c->lin > done->re + slack_ns) {
            finding("FINISHED", "jobs:%" PRId64 " was handed out after it was unlinked", id);
            show("FINISHED", done->line);
            show("FINISHED", c->line);
        }
        /* The latest hold before the finish was another worker's, still live. */
        if (done->late && c->who != done->who && c->lin < done->rs && c->cu > done->rs &&
            (k + 1 == r->nclaims || r->claims[k + 1].lin >= done->rs))
            fig.finish_stole++;
    }
    for (size_t i = 0; i < r->nops; i++) {
        const Op *o = &r->ops[i];
        if (o->kind == K_RELEASE && o->outcome == O_OK && o->rs > done->re + slack_ns) {
            finding("FINISHED", "jobs:%" PRId64 " was released after it was unlinked", id);
            show("FINISHED", done->line);
            show("FINISHED", o->line);
        }
    }
    if (r->present) {
        finding("FINISHED", "jobs:%" PRId64 " is in the store after it was unlinked", id);
        show("FINISHED", done->line);
        show("FINISHED", r->present_line);
    }
}

/* Every record the producer wrote is finished or present; everything
 * finished or present was written. */
static void
check_records(void)
{
    for (size_t s = 1; s < nserials; s++) {
        Serial *sr = &serials[s];
        if (sr->created == C_NEVER) {
            if (sr->id) {
                finding("IDENTITY", "jobs:%" PRId64 " carries serial %zu, which was never written",
                        sr->id, s);
                show("IDENTITY", recs[sr->id].serial_line);
            }
            continue;
        }
        const Rec *r = sr->id ? &recs[sr->id] : NULL;
        bool finished = false, maybe = false;
        for (size_t i = 0; r && i < r->nops; i++)
            if (r->ops[i].kind == K_FINISH) {
                finished |= r->ops[i].outcome == O_OK;
                maybe |= r->ops[i].outcome == O_MAYBE;
            }
        if (sr->created == C_MAYBE) {
            if (sr->id)
                fig.maybe_stored++;
            continue;
        }
        if (r && (r->present || finished || maybe))
            continue;
        if (sr->id) {
            finding("LOST",
                    "serial %zu (jobs:%" PRId64 ") was written and claimed, but never "
                    "finished and is not in the store",
                    s, sr->id);
            show("LOST", sr->line);
            for (size_t k = 0; k < r->nclaims; k++)
                show("LOST", r->claims[k].line);
            for (size_t i = 0; i < r->nops; i++)
                show("LOST", r->ops[i].line);
        } else {
            finding("LOST",
                    "serial %zu was written (write() returned success) but never "
                    "claimed and is not in the store",
                    s);
            show("LOST", sr->line);
        }
    }
}

/* How far the wall clock moved against the monotonic one between the
 * first and the last events (a step, or a slew). */
static int64_t
clock_drift(void)
{
    int64_t first_mono = INT64_MAX, last_mono = INT64_MIN, first_off = 0, last_off = 0;
    for (size_t i = 0; i < nlines; i++) {
        int64_t rt, mono;
        char ev[32], who[64];
        if (sscanf(lines[i].text, "%31s %63s %" SCNd64 " %" SCNd64, ev, who, &rt, &mono) != 4 ||
            !rt || !mono)
            continue;
        if (mono < first_mono) {
            first_mono = mono;
            first_off = rt - mono;
        }
        if (mono > last_mono) {
            last_mono = mono;
            last_off = rt - mono;
        }
    }
    int64_t d = last_off - first_off;
    return d < 0 ? -d : d;
}

/* soakcheck [--timeout-ms N] [--slack-ms N] [--crash] LOG…: 0 when the
 * log shows nothing wrong, 1 with findings, 2 on a usage or log error. */
int
main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (strcmp(argv[i], "--crash") == 0)
            crash = true;
        else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc)
            timeout_ns = strtoll(argv[++i], NULL, 10) * 1000000;
        else if (strcmp(argv[i], "--slack-ms") == 0 && i + 1 < argc)
            slack_ns = strtoll(argv[++i], NULL, 10) * 1000000;
        else
            break;
    }
    if (i >= argc || argv[i][0] == '-' || timeout_ns <= 0 || slack_ns < 0) {
        fprintf(stderr, "usage: soakcheck [--timeout-ms N] [--slack-ms N] [--crash] LOG…\n");
        return 2;
    }
    for (; i < argc; i++)
        read_log(argv[i]);
    for (size_t k = 0; k < nlines; k++)
        take_line(k);
    if (t0 == INT64_MAX)
        t0 = 0;

    int64_t drift = clock_drift();
    if (drift > slack_ns / 2) {
        printf("note: the wall clock moved %.3f ms against the monotonic clock during the run; "
               "the slack grows by that\n",
               (double)drift / 1e6);
        slack_ns += drift;
    }
    if (!have_state)
        finding("STATE", "no STATE line: the store's end state was not read, so nothing can be "
                         "said about lost records");
    else if (state_count != fig.present)
        finding("STATE", "the STATE line counts %" PRId64 " records, the PRESENT lines %ld",
                state_count, fig.present);
    for (size_t id = 1; id < nrecs; id++) {
        if (recs[id].nclaims || recs[id].present)
            check_claims((int64_t)id, &recs[id]);
        check_finishes((int64_t)id, &recs[id]);
    }
    if (have_state)
        check_records();

    double secs = (double)(fig.last - fig.first) / 1e9;
    printf("operations: %ld in %.1f s (%.0f/s)\n", fig.ops, secs, secs > 0 ? fig.ops / secs : 0);
    printf("records: %ld written (%ld writes), %ld finished, %ld still in the store\n",
           fig.creates_ok, fig.writes, fig.finish_ok, fig.present);
    printf("claims: %ld (and %ld empty reads), %ld lapses observed, %" PRId64
           " attempts handed to no worker\n",
           fig.claims, fig.empty, fig.lapses, (int64_t)fig.unseen);
    printf("finishes: %ld, %ld succeeded; %ld late (%ld succeeded, %ld of them deleting another "
           "worker's hold); %ld found the record gone\n",
           fig.finishes, fig.finish_ok, fig.finish_late, fig.finish_late_ok, fig.finish_stole,
           fig.finish_gone);
    printf("releases: %ld, %ld succeeded, %ld with NOT BEFORE, %ld late, %ld refused (EBUSY), "
           "%ld found the record gone\n",
           fig.releases, fig.release_ok, fig.release_delayed, fig.release_late, fig.release_busy,
           fig.release_gone);
    printf("abandons: %ld (%ld at once, %ld sleeping past the TIMEOUT, %ld finishing or releasing "
           "late)\n",
           fig.abandon_quick + fig.abandon_lapse + fig.abandon_late, fig.abandon_quick,
           fig.abandon_lapse, fig.abandon_late);
    if (crash)
        printf("crash: %ld kills survived; failed during outages: %ld claims, %ld finishes, %ld "
               "releases, %ld writes (%ld records of failed writes were stored anyway)\n",
               fig.kills, fig.claim_failed, fig.finish_maybe, fig.release_maybe, fig.writes_failed,
               fig.maybe_stored);
    if (nfindings) {
        printf("FAILED:");
        for (size_t k = 0; k < ntallies; k++)
            printf(" %ld %s", tallies[k].n, tallies[k].kind);
        printf("\n");
        return 1;
    }
    printf("no findings\n");
    return 0;
}
