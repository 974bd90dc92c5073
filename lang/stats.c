/* stats.c — what a queue holds now, as workers and monitors see it: the
 * held and dead views, the per-queue figures (jobs/stats) and the
 * Prometheus exposition of every queue (MOUNT/metrics). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* Runs "fn" in a read transaction on the session's store, with queue
 * "table" loaded for reading. */
static LangErrorCode
with_queue(LangSession *s, const char *table,
           LangErrorCode (*fn)(StoreTxn *txn, const TableDef *def, void *ctx), void *ctx,
           LangError *err)
{
    StoreTxn *txn;
    if (lang_session_read(s, &txn, err))
        return err->code;
    TableDef def;
    if (!lang_table_def_load(txn, table, &def, err) &&
        !lang_access_check(s, &def, ACCESS_READ, err)) {
        if (!lang_queue_check(&def, table, err))
            fn(txn, &def, ctx);
        lang_table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

/* ---- figures ---- */

typedef struct Figures {
    const TableDef *def;
    int64_t now;
    int64_t records, ready, held, delayed, dead; /* records: the outstanding ones */
    int64_t done;                                /* done (KEEP), until reaped */
    int64_t blocked;                    /* waiting for other records (AFTER): not in "delayed" */
    int64_t grouped, groups_full;       /* AT MOST … PER: see StoreQueueCounts, with
                                   * the keys past the first (perkeys.c) */
    int64_t full_per_key[LANG_PER_MAX]; /* groups_full of each key */
    int64_t oldest_ready;               /* the head's available_at; 0: nothing ready */
    int64_t counters[4];                /* claims, releases, lapses, deletes */
    LangError *err;
} Figures;

static int
count_record(void *ctx, const StoreRecord *sr)
{
    Figures *f = ctx;
    Record r = {0};
    if (lang_record_from_store(sr, f->def, &r, f->err))
        return 1;
    StoreQueue q;
    QueueState state = queue_place(lang_record_queue(f->def, &q), sr, f->now).state;
    f->records += state != QUEUE_DONE;
    switch (state) {
    case QUEUE_DONE: f->done++; break;
    case QUEUE_HELD: f->held++; break;
    case QUEUE_RETIRED: f->dead++; break;
    case QUEUE_DELAYED: f->delayed++; break;
    case QUEUE_READY: f->ready++; break;
    }
    lang_record_free(&r);
    return 0;
}

typedef struct StatsOut {
    int64_t now;
    Value *out;
    LangError *err;
} StatsOut;

/* Counts every record of the queue: what a store of the earlier format
 * needs until the records it filed waiting have all moved. */
static LangErrorCode
scan_figures(StoreTxn *txn, Figures *f)
{
    int rc = store_record_each(txn, f->def->id, (StoreBytes){NULL, 0}, count_record, f);
    if (f->err->code)
        return f->err->code;
    return rc ? lang_store_error(rc, "counting records", f->err) : LANG_OK;
}

/* The figures from the store's counts, in O(log n) (by counting every
 * record while the store has some it filed in the earlier format); the
 * oldest ready instant is the head's, the record the next claim takes. */
static LangErrorCode
count_figures(StoreTxn *txn, Figures *f)
{
    StoreQueueCounts c;
    int rc = store_queue_counts(txn, f->def->id, &c);
    if (rc)
        return lang_store_error(rc, "counting records", f->err);
    f->counters[0] = (int64_t)c.claims;
    f->counters[1] = (int64_t)c.releases;
    f->counters[2] = (int64_t)c.lapses;
    f->counters[3] = (int64_t)c.deletes;
    if (c.unsorted) {
        if (scan_figures(txn, f))
            return f->err->code;
    } else {
        f->records = (int64_t)(c.records - c.done);
        f->done = (int64_t)c.done;
        f->ready = (int64_t)c.ready;
        f->held = (int64_t)c.held;
        f->delayed = (int64_t)c.delayed;
        f->dead = (int64_t)c.idle;
    }
    /* records passed over for a full group of a key past the first are
     * filed delayed until PER_PARKED (perkeys.c) */
    int64_t parked;
    lang_perkeys_counts(txn, f->def, &parked, f->full_per_key);
    f->full_per_key[0] = (int64_t)c.groups_full;
    f->grouped = (int64_t)c.grouped + parked;
    for (int i = 0; i < LANG_PER_MAX; i++)
        f->groups_full += f->full_per_key[i];
    /* blocked records are filed delayed until never (after.c) */
    f->blocked = lang_after_blocked(txn, f->def);
    f->delayed = f->delayed > f->blocked + parked ? f->delayed - f->blocked - parked : 0;
    if (!c.has_head || !f->ready)
        return LANG_OK;
    StoreRecord sr;
    Record r = {0};
    if ((rc = store_record_get(txn, f->def->id, c.head_key, &sr)))
        return lang_store_error(rc, "reading the head of the queue", f->err);
    if (!lang_record_from_store(&sr, f->def, &r, f->err))
        f->oldest_ready = lang_record_available_at(&r, f->def);
    lang_record_free(&r);
    return f->err->code;
}

/* The figures of one queue as an object (see lang_view_stats). */
static LangErrorCode
queue_figures(StoreTxn *txn, const TableDef *def, void *ctx)
{
    StatsOut *so = ctx;
    so->now = store_txn_now(txn);
    Figures f = {.def = def, .now = so->now, .err = so->err};
    if (count_figures(txn, &f))
        return so->err->code;
    Value o = lang_value_object();
    lang_value_object_set(&o, "queue", lang_value_cstring(def->decl.name));
    lang_value_object_set(&o, "records", lang_value_int(f.records));
    lang_value_object_set(&o, "ready", lang_value_int(f.ready));
    lang_value_object_set(&o, "held", lang_value_int(f.held));
    lang_value_object_set(&o, "delayed", lang_value_int(f.delayed));
    lang_value_object_set(&o, "dead", lang_value_int(f.dead));
    lang_value_object_set(&o, "done", lang_value_int(f.done));
    lang_value_object_set(&o, "blocked", lang_value_int(f.blocked));
    lang_value_object_set(&o, "grouped", lang_value_int(f.grouped));
    lang_value_object_set(&o, "groups_at_limit", lang_value_int(f.groups_full));
    if (def->decl.nper > 1) {
        Value per = lang_value_object();
        for (size_t i = 0; i < def->decl.nper; i++)
            lang_value_object_set(&per, def->decl.per[i].field, lang_value_int(f.full_per_key[i]));
        lang_value_object_set(&o, "groups_at_limit_per_key", per);
    }
    double age =
        f.oldest_ready && so->now > f.oldest_ready ? (double)(so->now - f.oldest_ready) / 1e9 : 0.0;
    lang_value_object_set(&o, "oldest_ready_age_seconds", lang_value_float(age));
    lang_value_object_set(&o, "paused", lang_value_bool(def->paused));
    static const char *const counters[] = {"claims", "releases", "lapses", "deletes"};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        lang_value_object_set(&o, counters[i], lang_value_int(f.counters[i]));
    *so->out = o;
    return LANG_OK;
}

LangErrorCode
lang_view_stats(LangSession *s, const char *table, Buf *out, LangError *err)
{
    Value o = lang_value_none();
    StatsOut so = {store_now(lang_session_store(s)), &o, err};
    if (with_queue(s, table, queue_figures, &so, err))
        return err->code;
    lang_value_to_json(&o, out);
    lang_buf_putc(out, '\n');
    lang_value_free(&o);
    return LANG_OK;
}

/* ---- metrics ---- */

typedef struct Metrics {
    LangSession *s;
    Value queues; /* array of figure objects */
    LangError *err;
} Metrics;

static int
gather_queue(void *ctx, const char *name)
{
    Metrics *m = ctx;
    Value o = lang_value_none();
    LangError err = {0};
    StatsOut so = {store_now(lang_session_store(m->s)), &o, &err};
    with_queue(m->s, name, queue_figures, &so, &err);
    if (err.code == LANG_OK)
        lang_value_array_push(&m->queues, o);
    else if (err.code != LANG_WRONG_KIND && err.code != LANG_NO_SUCH_TABLE &&
             err.code != LANG_PERMISSION) /* metrics show what the caller may read */
        *m->err = err;
    return m->err->code != LANG_OK;
}

/* Appends a label value with Prometheus escaping (\\, \" and \n). */
static void
label_escape(const char *s, Buf *out)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            lang_buf_putc(out, '\\');
        if (*s == '\n')
            lang_buf_puts(out, "\\n");
        else
            lang_buf_putc(out, *s);
    }
}

/* The store's own figures, when its backend keeps them (PostgreSQL's row
 * versions: what VACUUM has still to reclaim). */
static void
store_metrics(LangSession *s, Buf *out)
{
    StoreTxn *txn;
    StoreHealth h;
    if (store_txn_begin(lang_session_store(s), false, &txn))
        return;
    if (store_health(txn, &h) == STORE_OK && h.known)
        lang_buf_printf(out,
                        "# HELP queuefs_store_live_rows Rows of the store's tables (estimate).\n"
                        "# TYPE queuefs_store_live_rows gauge\nqueuefs_store_live_rows %llu\n"
                        "# HELP queuefs_store_dead_rows Row versions VACUUM has yet to reclaim"
                        " (estimate).\n"
                        "# TYPE queuefs_store_dead_rows gauge\nqueuefs_store_dead_rows %llu\n",
                        (unsigned long long)h.live_rows, (unsigned long long)h.dead_rows);
    store_txn_abort(txn);
}

LangErrorCode
lang_view_metrics(LangSession *s, Buf *out, LangError *err)
{
    Metrics m = {s, lang_value_array(), err};
    lang_view_tables(s, gather_queue, &m, err);
    static const struct {
        const char *field, *metric, *type, *help;
    } metrics[] = {
        {"records", "queuefs_records", "gauge", "Records in the queue."},
        {"ready", "queuefs_ready", "gauge", "Records claimable now."},
        {"held", "queuefs_held", "gauge", "Records held by a worker now."},
        {"delayed", "queuefs_delayed", "gauge", "Records held back by NOT BEFORE."},
        {"dead", "queuefs_dead", "gauge", "Records at the ATTEMPTS ceiling."},
        {"done", "queuefs_done", "gauge",
         "Finished records kept by KEEP (expired ones until the queue's writes remove them)."},
        {"blocked", "queuefs_blocked", "gauge",
         "Records waiting for others to finish (CREATE ... AFTER)."},
        {"grouped", "queuefs_grouped_records", "gauge",
         "Records claimable but for AT MOST n PER f: waiting behind their group."},
        {"groups_at_limit", "queuefs_groups_at_limit", "gauge",
         "Groups with AT MOST n records held (their others wait)."},
        {"oldest_ready_age_seconds", "queuefs_oldest_ready_age_seconds", "gauge",
         "Seconds the oldest claimable record has waited."},
        {"paused", "queuefs_paused", "gauge", "1 while the queue is paused (PAUSE QUEUE)."},
        {"claims", "queuefs_claims_total", "counter", "Holds handed out."},
        {"releases", "queuefs_releases_total", "counter", "Holds handed back."},
        {"lapses", "queuefs_lapses_total", "counter", "Holds that lapsed and were claimed again."},
        {"deletes", "queuefs_deletes_total", "counter", "Records finished (deleted)."},
    };
    for (size_t i = 0; !err->code && i < sizeof metrics / sizeof metrics[0]; i++) {
        lang_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", metrics[i].metric, metrics[i].help,
                        metrics[i].metric, metrics[i].type);
        for (size_t q = 0; q < m.queues.u.arr.len; q++) {
            const Value *fig = &m.queues.u.arr.items[q];
            const Value *name = lang_value_object_get(fig, "queue");
            const Value *v = lang_value_object_get(fig, metrics[i].field);
            lang_buf_printf(out, "%s{queue=\"", metrics[i].metric);
            label_escape(name->u.str.s, out);
            if (v->kind == VAL_FLOAT)
                lang_buf_printf(out, "\"} %.3f\n", v->u.f);
            else if (v->kind == VAL_BOOL)
                lang_buf_printf(out, "\"} %d\n", v->u.b ? 1 : 0);
            else
                lang_buf_printf(out, "\"} %lld\n", (long long)v->u.i);
        }
    }
    lang_value_free(&m.queues);
    if (!err->code)
        store_metrics(s, out);
    return err->code;
}

/* ---- the held, dead and done views ---- */

/* A walk of a queue's held records, or of those in state "state" (its
 * dead or done ones), each handed on by its identity: to "held" with its
 * hold's number, or to "each". */
typedef struct QueueKeyWalk {
    const TableDef *def;
    int64_t now;
    int (*held)(void *ctx, const Value *key, int64_t hold); /* or NULL */
    int (*each)(void *ctx, const Value *key);               /* or NULL */
    QueueState state; /* with "each": QUEUE_RETIRED or QUEUE_DONE */
    bool blocked;     /* with "each", instead: the blocked records (AFTER) */
    void *ctx;
    LangError *err;
} QueueKeyWalk;

/* Hands record "sr" on by its identity: what the walk's function returns
 * (non-zero: stop), or 0 for a record whose identity cannot be read. */
static int
hand_key(QueueKeyWalk *w, const StoreRecord *sr)
{
    Value key;
    if (lang_record_key_from_store(sr, &key) < 0)
        return 0;
    int stop = w->held ? w->held(w->ctx, &key, sr->hold) : w->each(w->ctx, &key);
    lang_value_free(&key);
    return stop;
}

static int
held_entry(void *ctx, const StoreRecord *sr, int64_t wake_ns)
{
    QueueKeyWalk *w = ctx;
    /* Only the columns and the identity: a hold taken before holds were
     * numbered has no name here. */
    if (wake_ns <= w->now || !queue_hold_runs(sr->claimed_until, w->now) || sr->hold <= 0)
        return 0;
    return hand_key(w, sr);
}

/* Hands on a record in the walk's state (a done one while its KEEP
 * lasts). */
static int
state_entry(void *ctx, const StoreRecord *sr)
{
    QueueKeyWalk *w = ctx;
    StoreQueue q;
    if (w->blocked)
        return !sr->completed_at && sr->not_before == AFTER_NEVER ? hand_key(w, sr) : 0;
    if (queue_place(lang_record_queue(w->def, &q), sr, w->now).state != w->state ||
        lang_record_expired(w->def, sr, w->now))
        return 0;
    return hand_key(w, sr);
}

/* Walks queue "def" for the held view, through its waiting records, or
 * for the dead, done or blocked one, through all of them (none without
 * ATTEMPTS: nothing dies there; none blocked unless it used AFTER). */
static LangErrorCode
walk_keys(StoreTxn *txn, const TableDef *def, void *ctx)
{
    QueueKeyWalk *w = ctx;
    w->def = def;
    if (w->held)
        store_queue_each_waiting(txn, def->id, held_entry, w);
    else if (w->blocked ? def->after_used : w->state == QUEUE_DONE || def->decl.attempts)
        store_record_each(txn, def->id, (StoreBytes){NULL, 0}, state_entry, w);
    return w->err->code;
}

LangErrorCode
lang_view_held(LangSession *s, const char *table,
               int (*fn)(void *ctx, const Value *key, int64_t hold), void *ctx, LangError *err)
{
    QueueKeyWalk w = {NULL, store_now(lang_session_store(s)), fn, NULL, QUEUE_HELD, false, ctx,
                      err};
    return with_queue(s, table, walk_keys, &w, err);
}

LangErrorCode
lang_view_dead(LangSession *s, const char *table, int (*fn)(void *ctx, const Value *key), void *ctx,
               LangError *err)
{
    QueueKeyWalk w = {NULL, store_now(lang_session_store(s)), NULL, fn, QUEUE_RETIRED, false, ctx,
                      err};
    return with_queue(s, table, walk_keys, &w, err);
}

LangErrorCode
lang_view_done(LangSession *s, const char *table, int (*fn)(void *ctx, const Value *key), void *ctx,
               LangError *err)
{
    QueueKeyWalk w = {NULL, store_now(lang_session_store(s)), NULL, fn, QUEUE_DONE, false, ctx,
                      err};
    return with_queue(s, table, walk_keys, &w, err);
}

LangErrorCode
lang_view_blocked(LangSession *s, const char *table, int (*fn)(void *ctx, const Value *key),
                  void *ctx, LangError *err)
{
    QueueKeyWalk w = {NULL, store_now(lang_session_store(s)), NULL, fn, QUEUE_READY, true, ctx,
                      err};
    return with_queue(s, table, walk_keys, &w, err);
}
