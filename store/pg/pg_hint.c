/* pg_hint.c — where a claim of the head starts.
 *
 * A claim of an ungrouped queue's head walks the claim's indexes from
 * their start (pg_stmts.def's CLAIM_HEAD), where every record claimed and
 * finished since VACUUM last ran leaves an entry.  While a transaction
 * elsewhere on the database holds back the xmin, VACUUM removes none of
 * them, and such a walk grows with every cycle since; then a claim starts
 * from a position an earlier one found instead (CLAIM_FROM).  Whether the
 * xmin is held back each claim's snapshot tells: its xmin more than
 * PG_HINT_LAG transactions behind its xmax.
 *
 * The position is what an earlier claim found, as of its snapshot: the
 * first record it claimed (every record then ready came at or after it in
 * claim order) and its instant (every record then waiting it took or
 * refiled when due, unless more were due than it takes at once: then the
 * instant it started from).  What a transaction that snapshot did not see
 * filed since is found by its transaction id — but for a hold, found by
 * its deadline, later than that instant unless its claim committed after
 * it (pg_schema.c's version 7).  A record another
 * transaction had locked then — a claim that went on to fail, a write
 * that changed nothing — may be passed over until the position is renewed.
 *
 * Only a claim that was its whole transaction answers a position kept
 * here: what a transaction does after its claim is of the claim's own
 * transaction id, which its snapshot counts as seen.  A position is of
 * the catalog version its claim ran under (a queue redefined starts at the
 * head again); PG_HINT_LIFE after a claim last started at the head (or
 * PG_HINT_WALKS times as long as it took, when longer), one claim at a
 * time does again, until one of them has answered a new position — so a
 * position wrong by any mistake costs at most that long; and every
 * position is forgotten when a connection reaches a server that started
 * at another instant than the one they were found on (a standby promoted,
 * a restart, a restore: one whose transaction ids may not be the ones a
 * snapshot named) — not when the pool only grows, whose new connections'
 * first claims would each walk from the head. */
#include "pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How long positions found one from another are used after the claim
 * that started at the head which the first was found by: this long, or
 * PG_HINT_WALKS times as long as that claim took, whichever is longer —
 * so that while the xmin is held back, when a walk from the head grows
 * with every cycle since, such walks take a hundredth of a connection's
 * time at most however long it is held. */
#define PG_HINT_LIFE (10 * 1000000000LL)
#define PG_HINT_WALKS 100

/* How far behind its xmax a snapshot's xmin is when the xmin is held
 * back: a few hundred transactions run at once at most otherwise. */
#define PG_HINT_LAG 1000

/* A table's position, owned by the store. */
typedef struct PgHintEntry {
    struct PgHintEntry *next;
    uint32_t table;
    bool held_back;   /* the xmin, as its snapshot showed */
    int64_t catalog;  /* its catalog version */
    int64_t born;     /* when the last claim that started at the head answered (local ns) */
    int64_t renewing; /* when a claim went to the head to renew it (0: none) */
    int64_t walked;   /* how long the last claim that started at the head took (ns) */
    PgHint hint;
} PgHintEntry;

void
pg_hint_free(PgHint *h)
{
    free((void *)h->snap.data);
    free((void *)h->from_ord.data);
    *h = (PgHint){0};
}

static StoreBytes
bytes_copy(const char *p, size_t len)
{
    uint8_t *d = malloc(len ? len : 1);
    if (!d)
        abort();
    memcpy(d, p, len);
    return (StoreBytes){.data = d, .len = len};
}

/* Whether "c" is connected to the server positions are kept for (under
 * hint_mu). */
static bool
server_kept(const Store *st, const PgConn *c)
{
    return *c->started && !strcmp(c->started, st->hint_server);
}

void
pg_hint_get(Store *st, const PgConn *c, uint32_t table, int64_t catalog, PgHint *out)
{
    *out = (PgHint){0};
    int64_t now = pg_local_now();
    pthread_mutex_lock(&st->hint_mu);
    for (PgHintEntry *e = server_kept(st, c) ? st->hints : NULL; e; e = e->next)
        if (e->table == table) {
            /* Past its life, one claim at a time starts at the head to
             * renew it (while the xmin is held back, such a claim walks
             * every entry since the pin); the others go on from it.  One
             * that answered no position is tried again after a tenth of
             * PG_HINT_LIFE, or a walk's time PG_HINT_WALKS times over. */
            int64_t spell = e->walked * PG_HINT_WALKS;
            int64_t life = spell > PG_HINT_LIFE ? spell : PG_HINT_LIFE;
            int64_t again = spell > PG_HINT_LIFE / 10 ? spell : PG_HINT_LIFE / 10;
            bool renew = e->held_back && now - e->born >= life &&
                         (!e->renewing || now - e->renewing >= again);
            if (renew)
                e->renewing = now;
            if (e->held_back && e->catalog == catalog && !renew) {
                *out = e->hint;
                out->snap = bytes_copy((const char *)e->hint.snap.data, e->hint.snap.len);
                out->from_ord =
                    bytes_copy((const char *)e->hint.from_ord.data, e->hint.from_ord.len);
            }
            break;
        }
    pthread_mutex_unlock(&st->hint_mu);
}

/* How far snapshot "snap" ("xmin:xmax:xip,…", pg_snapshot's text) has
 * its xmin behind its xmax, in transactions. */
static uint64_t
snapshot_lag(StoreBytes snap)
{
    char text[64];
    size_t n = snap.len < sizeof text - 1 ? snap.len : sizeof text - 1;
    memcpy(text, snap.data, n);
    text[n] = 0;
    unsigned long long xmin, xmax;
    if (sscanf(text, "%llu:%llu", &xmin, &xmax) != 2 || xmax < xmin)
        return 0;
    return xmax - xmin;
}

/* The columns of PG_RECORD_COLS pg_hint_put reads: order key, arrival
 * number, and the claim's instant. */
enum { COL_SEQ = 2, COL_CLAIMED = PG_RECORD_CLAIMED, COL_ORD = 12 };

void
pg_hint_put(Store *st, const PgConn *c, uint32_t table, int64_t catalog, const PgHint *used,
            const PGresult *res, int64_t took)
{
    /* Row 0 is the first claimed in claim order; every record its snapshot
     * showed ready was at or after it unless another transaction had it
     * locked, and every one waiting that was due then it took or refiled
     * unless locked, or unless they were more than it takes at once. */
    PgHint h = {.hinted = true};
    h.from_ord = bytes_copy(PQgetvalue(res, 0, COL_ORD), (size_t)PQgetlength(res, 0, COL_ORD));
    h.from_seq = pg_i64(res, 0, COL_SEQ);
    bool due_full = *PQgetvalue(res, 0, PG_HINT_COL + 1);
    h.from_wake = !due_full      ? pg_i64(res, 0, COL_CLAIMED)
                  : used->hinted ? used->from_wake
                                 : INT64_MIN;
    h.snap = bytes_copy(PQgetvalue(res, 0, PG_HINT_COL), (size_t)PQgetlength(res, 0, PG_HINT_COL));
    bool held_back = snapshot_lag(h.snap) > PG_HINT_LAG;
    pthread_mutex_lock(&st->hint_mu);
    if (!server_kept(st, c)) {
        pthread_mutex_unlock(&st->hint_mu);
        pg_hint_free(&h);
        return;
    }
    PgHintEntry *e = st->hints;
    while (e && e->table != table)
        e = e->next;
    if (!e) {
        if (!(e = calloc(1, sizeof *e)))
            abort();
        e->table = table;
        e->next = st->hints;
        st->hints = e;
    }
    pg_hint_free(&e->hint);
    e->hint = h;
    e->held_back = held_back;
    if (!used->hinted)
        e->walked = took;
    if (!used->hinted || e->catalog != catalog) {
        e->born = pg_local_now();
        e->renewing = 0;
    }
    e->catalog = catalog;
    pthread_mutex_unlock(&st->hint_mu);
}

/* pg_hint_forget, under hint_mu. */
static void
hints_drop(Store *st, uint32_t table)
{
    for (PgHintEntry **p = &st->hints; *p;) {
        PgHintEntry *e = *p;
        if (table && e->table != table) {
            p = &e->next;
            continue;
        }
        *p = e->next;
        pg_hint_free(&e->hint);
        free(e);
    }
}

void
pg_hint_forget(Store *st, uint32_t table)
{
    pthread_mutex_lock(&st->hint_mu);
    hints_drop(st, table);
    pthread_mutex_unlock(&st->hint_mu);
}

void
pg_hint_server(Store *st, const PgConn *c)
{
    pthread_mutex_lock(&st->hint_mu);
    if (!server_kept(st, c)) {
        hints_drop(st, 0);
        snprintf(st->hint_server, sizeof st->hint_server, "%s", c->started);
    }
    pthread_mutex_unlock(&st->hint_mu);
}
