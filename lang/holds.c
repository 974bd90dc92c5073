/* holds.c — holds, as statements over the store's queue primitives: CLAIM
 * (and the plan EXPLAIN reports), RELEASE, RELEASE ALL and TOUCH (ending or
 * extending one), who signed a hold, and giving back a claim nobody saw
 * (lang_view_unclaim).  All of the hold logic of lang is here; the store
 * numbers the holds, counts them and moves lapsed ones on. */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "parse.h"

LangErrorCode
lang_claim_ceiling_check(const Stmt *st, LangError *err)
{
    if (st->u.claim.count > CLAIM_CEILING)
        return lang_error_set(err, LANG_CLAIM_CEILING,
                              "CLAIM %lld is above the ceiling of %d records per claim",
                              (long long)st->u.claim.count, CLAIM_CEILING);
    return LANG_OK;
}

/* Adds to "list" how to give back the claim that took hold "hold" of a
 * record that was "before" (see LangUnclaim). */
static void
undo_keep(LangUnclaims *list, const char *table, const StoreRecord *before, int64_t hold)
{
    if (list->n == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 4;
        list->v = lang_xrealloc(list->v, list->cap * sizeof *list->v);
    }
    LangUnclaim *undo = &list->v[list->n++];
    *undo = (LangUnclaim){0};
    undo->table = lang_xstrdup(table);
    undo->before = *before;
    undo->hold = hold;
    StoreBytes *parts[] = {&undo->before.key, &undo->before.consumer, &undo->before.instance,
                           &undo->before.errors};
    enum { PARTS = sizeof parts / sizeof *parts };
    size_t at[PARTS];
    for (int i = 0; i < PARTS; i++) {
        at[i] = undo->bytes.len;
        lang_buf_append(&undo->bytes, parts[i]->data, parts[i]->len);
    }
    for (int i = 0; i < PARTS; i++)
        parts[i]->data = undo->bytes.data + at[i];
    undo->before.value = undo->before.order = undo->before.group = (StoreBytes){NULL, 0};
}

/* What a claim answers with: each claimed record as users see it. */
typedef struct ClaimRun {
    Exec *x;
    const TableDef *def;
    Value *results;
} ClaimRun;

static int
claimed_one(void *ctx, const StoreRecord *now, const StoreRecord *before)
{
    ClaimRun *c = ctx;
    Record r = {0};
    if (lang_record_from_store(now, c->def, &r, c->x->err))
        return -1;
    if (c->x->s->undo)
        undo_keep(c->x->s->undo, c->def->decl.name, before, now->hold);
    LangClaimed *told = c->x->s->claimed;
    if (told) {
        /* Its size is its answer's: the file view measures that. */
        lang_claimed_clear(told);
        told->key = lang_value_clone(&r.key);
        lang_record_stat(&r, 0, &told->stat);
        lang_table_info(c->def, &told->info);
    }
    lang_value_array_push(c->results, lang_record_view(&r, c->def, lang_exec_now(c->x)));
    lang_record_free(&r);
    return 0;
}

/* The plan a claim reports: the declared index that matches the claim
 * order, or a scan. */
static Value
claim_plan(const TableDef *def)
{
    Value plan = lang_value_object();
    const char *index = NULL;
    if (!def->decl.priority_by) {
        index = "id";
    } else {
        for (size_t i = 0; i < def->nindexes && !index; i++)
            if (def->indexes[i].nfields &&
                strcmp(def->indexes[i].fields[0], def->decl.priority_by) == 0)
                index = def->indexes[i].name;
    }
    lang_value_object_set(&plan, "plan", lang_value_cstring(index ? "ordered" : "scan"));
    if (index)
        lang_value_object_set(&plan, "index", lang_value_cstring(index));
    Value rows = lang_value_array();
    lang_value_array_push(&rows, plan);
    return rows;
}

/* claim -> CLAIM [n] FROM table [EXPLAIN] | CLAIM record [EXPLAIN] */
LangErrorCode
lang_exec_claim(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.claim.target;
    if (lang_claim_ceiling_check(st, x->err))
        return x->err->code;
    TableDef def;
    if (lang_queue_load(x, t->table, st->u.claim.explain ? ACCESS_READ : ACCESS_WRITE, &def))
        return x->err->code;
    Value results = lang_value_array();
    if (st->u.claim.explain) {
        lang_value_free(&results);
        results = claim_plan(&def);
    } else {
        Buf key = {0};
        StoreQueue q;
        ClaimRun run = {x, &def, &results};
        StoreClaim c = {.n = st->u.claim.count,
                        .instance = {x->s->instance, strlen(x->s->instance)}};
        if (x->s->consumer)
            c.consumer = (StoreBytes){x->s->consumer, strlen(x->s->consumer)};
        if (t->id.kind == VAL_RECORD) {
            lang_record_key_encode(t->id.u.rec.key, &key);
            c.key = (StoreBytes){key.data, key.len};
        }
        int64_t claimed;
        bool keys = lang_perkeys_used(&def);
        if (x->alone && !keys)
            store_txn_last(x->txn); /* nothing follows the claim but its answer */
        int rc = keys ? lang_perkeys_claim(x->txn, &def, &c, claimed_one, &run, &claimed)
                      : store_claim(x->txn, lang_record_queue(&def, &q), &c, claimed_one, &run,
                                    &claimed);
        if (rc && !x->err->code && t->id.kind == VAL_RECORD)
            lang_record_missing(rc, &def, t->id.u.rec.key, "claiming", x->err);
        else if (rc && !x->err->code)
            lang_store_error(rc, "claiming", x->err);
        lang_buf_free(&key);
    }
    lang_table_def_free(&def);
    return lang_exec_answer_records(x, &results);
}

/* The instant RELEASE "st" delays its records to, into "*at" (0: none):
 * what its NOT BEFORE clause names, a datetime or now + a duration.
 * NoDelayField when the queue "def" declares no NOT BEFORE field. */
static LangErrorCode
release_delay(Exec *x, const TableDef *def, const Stmt *st, int64_t *at)
{
    *at = 0;
    if (!st->u.release.not_before)
        return LANG_OK;
    if (!def->decl.not_before)
        return lang_error_set(x->err, LANG_NO_DELAY_FIELD,
                              "queue '%s' declares no NOT BEFORE field", def->decl.name);
    EvalContext cx = {NULL, lang_exec_now(x)};
    Value v;
    if (lang_expr_eval(st->u.release.not_before, &cx, &v, x->err))
        return x->err->code;
    LangErrorCode rc = LANG_OK;
    if (v.kind == VAL_DATETIME)
        *at = v.u.ns;
    else if (v.kind == VAL_DURATION && !__builtin_add_overflow(lang_exec_now(x), v.u.ns, at))
        ;
    else
        rc = lang_error_set(x->err, LANG_TYPE_ERROR,
                            "NOT BEFORE takes a datetime or a duration, not %s",
                            lang_value_kind_name(v.kind));
    lang_value_free(&v);
    return rc;
}

/* Answers record "sr" of "def" as users see it, into "results". */
static LangErrorCode
answer_stored(Exec *x, const TableDef *def, const StoreRecord *sr, Value *results)
{
    Record r = {0};
    if (!lang_record_from_store(sr, def, &r, x->err))
        lang_value_array_push(results, lang_record_view(&r, def, lang_exec_now(x)));
    lang_record_free(&r);
    return x->err->code;
}

/* The reason RELEASE "st" gives (BECAUSE), empty when none. */
static StoreBytes
release_reason(const Stmt *st)
{
    const char *why = st->u.release.because;
    return (StoreBytes){why, why ? strlen(why) : 0};
}

/* Tells the keys of "def" past the first that a hold of "sr" ended (see
 * lang_perkeys_hold_ended). */
static LangErrorCode
hold_ended(Exec *x, const TableDef *def, const StoreRecord *sr)
{
    int rc = lang_perkeys_hold_ended(x->txn, def, sr->key, sr->value);
    return rc ? lang_store_error(rc, "letting a group's room go", x->err) : LANG_OK;
}

/* Ends the hold on "r" (loaded), delaying it until "delay_to" when that is
 * non-zero and recording "reason" when it is not empty, and answers it. */
static LangErrorCode
end_hold(Exec *x, const TableDef *def, const Record *r, int64_t delay_to, StoreBytes reason,
         Value *results)
{
    Buf key = {0};
    StoreQueue q;
    StoreRecord sr;
    lang_record_key_encode(&r->key, &key);
    int rc = store_release(x->txn, lang_record_queue(def, &q), (StoreBytes){key.data, key.len},
                           r->hold, delay_to, reason, &sr);
    if (rc)
        lang_record_missing(rc, def, &r->key, "releasing a hold", x->err);
    else if (!answer_stored(x, def, &sr, results))
        hold_ended(x, def, &sr);
    lang_buf_free(&key);
    return x->err->code;
}

/* The consumer that signed the hold on "r", or NULL when unsigned, and
 * the instance that took it. */
static const char *
hold_consumer(const Record *r, const char **instance)
{
    *instance = r->instance;
    return r->consumer;
}

/* Loads the record "t" names of queue "def" into "r" when fence "fence"
 * (0: none) holds for it: NoSuchRecord otherwise.  The caller frees "r",
 * also on error. */
static LangErrorCode
hold_record(Exec *x, const TableDef *def, const Target *t, int64_t fence, Record *r)
{
    *r = (Record){0};
    if (lang_record_load(x->txn, def, t->id.u.rec.key, r, x->err))
        return x->err->code;
    if (fence)
        lang_record_fence(def, r, fence, lang_exec_now(x), x->err);
    return x->err->code;
}

/* Opens RELEASE, TOUCH or RETRY "st" on the one record it names: its
 * queue into "def" (loaded for writing), the delay it names into
 * "*delay_to" (see release_delay), and the record into "r" when its fence
 * holds.  The caller frees "def" and "r", also on error. */
static LangErrorCode
hold_open(Exec *x, const Stmt *st, TableDef *def, Record *r, int64_t *delay_to)
{
    *r = (Record){0};
    if (lang_queue_load(x, st->u.release.target.table, ACCESS_WRITE, def) ||
        release_delay(x, def, st, delay_to))
        return x->err->code;
    return hold_record(x, def, &st->u.release.target, st->u.release.fence, r);
}

/* Ends the hold on the record "t" names, under "fence", as RELEASE "st"
 * says: "def" is its queue and "delay_to" the instant of its NOT BEFORE (0:
 * none).  A record nobody holds is left as it is; one released goes into
 * "results".  HeldByAnotherConsumer for a hold the session may not end. */
static LangErrorCode
release_one(Exec *x, const Stmt *st, const TableDef *def, const Target *t, int64_t fence,
            int64_t delay_to, Value *results)
{
    Record r;
    if (hold_record(x, def, t, fence, &r) || !lang_record_is_held(&r, lang_exec_now(x)))
        goto done;
    const char *instance, *consumer = hold_consumer(&r, &instance);
    const char *group = st->u.release.for_consumer;
    if (group ? consumer && strcmp(consumer, group) == 0
              : !consumer || (instance && strcmp(instance, x->s->instance) == 0)) {
        end_hold(x, def, &r, delay_to, release_reason(st), results);
    } else if (consumer) {
        Buf name = {0};
        lang_record_id_format(&t->id.u.rec, &name);
        lang_error_set(x->err, LANG_HELD_BY_OTHER, "%s is held by consumer '%s'%s", name.data,
                       consumer,
                       x->s->consumer && strcmp(consumer, x->s->consumer) == 0
                           ? " (another instance: name the group with FOR CONSUMER)"
                           : "");
        lang_buf_free(&name);
    }
done:
    lang_record_free(&r);
    return x->err->code;
}

/* release -> RELEASE records [NOT BEFORE expr] [FOR CONSUMER name] [BECAUSE text]
 * Each record in turn, in the statement's one transaction, so that the
 * first that fails (a missing record, a fence that does not hold, another
 * consumer's hold) leaves all of them as they were. */
LangErrorCode
lang_exec_release(Exec *x, const Stmt *st)
{
    TargetWalk w = {.first = &st->u.release.target,
                    .fence = st->u.release.fence,
                    .more = st->u.release.more,
                    .nmore = st->u.release.nmore,
                    .queues = true};
    const Target *t;
    int64_t fence, delay_to = 0;
    bool fresh;
    Value results = lang_value_array();
    while (lang_target_next(x, &w, &t, &fence, &fresh)) {
        if (fresh && release_delay(x, &w.def, st, &delay_to))
            break;
        release_one(x, st, &w.def, t, fence, delay_to, &results);
    }
    lang_target_walk_end(&w);
    return lang_exec_answer_records(x, &results);
}

/* What RELEASE ALL answers: each released record. */
typedef struct ReleaseRun {
    Exec *x;
    const TableDef *def;
    Value *results;
} ReleaseRun;

static int
released_one(void *ctx, const StoreRecord *sr)
{
    ReleaseRun *r = ctx;
    return answer_stored(r->x, r->def, sr, r->results) ? -1 : 0;
}

/* Tells the keys of "def" past the first that the hold of each record in
 * "released" (RELEASE ALL's answer) ended. */
static void
holds_ended(Exec *x, const TableDef *def, const Value *released)
{
    for (size_t i = 0; lang_perkeys_used(def) && i < released->u.arr.len && !x->err->code; i++) {
        const Value *id = lang_value_object_get(&released->u.arr.items[i], "id");
        Buf kb = {0};
        StoreRecord sr;
        lang_record_key_encode(id->u.rec.key, &kb);
        if (!store_record_get(x->txn, def->id, (StoreBytes){kb.data, kb.len}, &sr))
            hold_ended(x, def, &sr);
        lang_buf_free(&kb);
    }
}

/* release_all -> RELEASE ALL FROM table [FOR CONSUMER name] [NOT BEFORE expr]
 *                [BECAUSE text] */
LangErrorCode
lang_exec_release_all(Exec *x, const Stmt *st)
{
    TableDef def;
    if (lang_queue_load(x, st->u.release.target.table, ACCESS_WRITE, &def))
        return x->err->code;
    Value results = lang_value_array();
    int64_t delay_to;
    if (!release_delay(x, &def, st, &delay_to)) {
        const char *group = st->u.release.for_consumer;
        StoreQueue q;
        ReleaseRun run = {x, &def, &results};
        int rc = store_release_all(x->txn, lang_record_queue(&def, &q),
                                   (StoreBytes){group, group ? strlen(group) : 0},
                                   (StoreBytes){x->s->instance, strlen(x->s->instance)}, delay_to,
                                   release_reason(st), released_one, &run);
        if (rc && !x->err->code)
            lang_store_error(rc, "releasing holds", x->err);
        holds_ended(x, &def, &results);
    }
    lang_table_def_free(&def);
    return lang_exec_answer_records(x, &results);
}

/* touch -> TOUCH record: the hold's deadline becomes now + TIMEOUT. */
LangErrorCode
lang_exec_touch(Exec *x, const Stmt *st)
{
    TableDef def;
    Record r;
    int64_t no_delay; /* TOUCH names none */
    Value results = lang_value_array();
    Buf name = {0};
    lang_record_id_format(&st->u.release.target.id.u.rec, &name);
    if (hold_open(x, st, &def, &r, &no_delay))
        goto done;
    if (!lang_record_is_held(&r, lang_exec_now(x))) {
        lang_error_set(x->err, LANG_NOT_HELD, "%s is not held: there is no hold to extend",
                       name.data);
        goto done;
    }
    const char *instance, *consumer = hold_consumer(&r, &instance);
    if (consumer && !(x->s->consumer && strcmp(consumer, x->s->consumer) == 0)) {
        lang_error_set(x->err, LANG_HELD_BY_OTHER, "%s is held by consumer '%s'", name.data,
                       consumer);
        goto done;
    }
    Buf key = {0};
    StoreQueue q;
    StoreRecord sr;
    lang_record_key_encode(&r.key, &key);
    int rc = store_touch(x->txn, lang_record_queue(&def, &q), (StoreBytes){key.data, key.len},
                         r.hold, &sr);
    lang_buf_free(&key);
    if (rc)
        lang_record_missing(rc, &def, &r.key, "extending a hold", x->err);
    else
        answer_stored(x, &def, &sr, &results);
done:
    lang_buf_free(&name);
    lang_record_free(&r);
    lang_table_def_free(&def);
    return lang_exec_answer_records(x, &results);
}

/* The instant RETRY's "delay_to" (0: none) delays record "r" to: none for
 * a blocked record, which stays so — its wait ends with what it waits
 * for — or one passed over for a full group, which waits for its room. */
static int64_t
retry_delay(const Record *r, int64_t delay_to)
{
    return r->not_before >= PER_PARKED ? 0 : delay_to;
}

/* Retries record "r" of "def": ends any hold and sets its attempts back
 * to 0, delayed until "delay_to" when non-zero (retry_delay); answers
 * it. */
static LangErrorCode
retry_one(Exec *x, const TableDef *def, const Record *r, int64_t delay_to, Value *results)
{
    Buf kb = {0};
    StoreQueue q;
    StoreRecord sr;
    lang_record_key_encode(&r->key, &kb);
    int rc = store_retry(x->txn, lang_record_queue(def, &q), (StoreBytes){kb.data, kb.len},
                         retry_delay(r, delay_to), &sr);
    lang_buf_free(&kb);
    if (rc)
        return lang_record_missing(rc, def, &r->key, "retrying a record", x->err);
    if (!answer_stored(x, def, &sr, results))
        hold_ended(x, def, &sr);
    return x->err->code;
}

/* How many records a RETRY ALL gives the store at once. */
#define RETRY_BATCH 1000

/* What a RETRY ALL runs with: the instant its records are delayed to (0:
 * none), its answer so far, and the records it found and has not yet
 * retried: their keys (encoded one after another in "keys", each ending
 * at ends[i]; and as values) and the instant each is delayed to. */
typedef struct RetryRun {
    Exec *x;
    const TableDef *def;
    int64_t delay_to;
    Value *results;
    bool batched; /* retrying one record changes no other (retry_batched) */
    Buf keys;
    size_t ends[RETRY_BATCH];
    Value ids[RETRY_BATCH];
    int64_t not_befores[RETRY_BATCH];
    size_t n;
} RetryRun;

/* True when retrying a record of "def" changes no other record's view or
 * place: no AT MOST … PER group to make room in, no dependency, no key
 * past the first — so the records a RETRY ALL found can be retried
 * together after the walk found them. */
static bool
retry_batched(const TableDef *def)
{
    return !def->decl.nper && !def->after_used && !lang_perkeys_used(def);
}

/* Answers a record store_records_retry retried. */
static int
retried_stored(void *ctx, const StoreRecord *sr)
{
    RetryRun *run = ctx;
    return answer_stored(run->x, run->def, sr, run->results) ? -1 : 0;
}

/* Retries the records "run" found and has not yet retried, all in one
 * store call. */
static void
retry_flush(RetryRun *run)
{
    Exec *x = run->x;
    StoreBytes keys[RETRY_BATCH];
    for (size_t i = 0, at = 0; i < run->n; at = run->ends[i++])
        keys[i] = (StoreBytes){run->keys.data + at, run->ends[i] - at};
    StoreQueue q;
    size_t failed = 0;
    int rc = run->n ? store_records_retry(x->txn, lang_record_queue(run->def, &q), keys,
                                          run->not_befores, run->n, retried_stored, run, &failed)
                    : STORE_OK;
    if (rc && !x->err->code)
        lang_record_missing(rc, run->def, &run->ids[failed], "retrying a record", x->err);
    for (size_t i = 0; i < run->n; i++)
        lang_value_free(&run->ids[i]);
    run->keys.len = run->n = 0;
}

/* Retries record "r", which the RETRY ALL's WHERE holds for: at once, or
 * with the next RETRY_BATCH found (RetryRun.batched). */
static void
retried_one(Exec *x, const TableDef *def, Record *r, Value *view, void *ctx)
{
    (void)view;
    RetryRun *run = ctx;
    if (!run->batched) {
        retry_one(x, def, r, run->delay_to, run->results);
        return;
    }
    lang_record_key_encode(&r->key, &run->keys);
    run->ends[run->n] = run->keys.len;
    run->ids[run->n] = lang_value_clone(&r->key);
    run->not_befores[run->n++] = retry_delay(r, run->delay_to);
    if (run->n == RETRY_BATCH)
        retry_flush(run);
}

/* retry -> RETRY record [NOT BEFORE expr]
 *        | RETRY ALL FROM table [WHERE expr] [NOT BEFORE expr]
 * Ends any hold and sets attempts back to 0, so a dead record is
 * claimable again; the claims counter keeps counting. */
LangErrorCode
lang_exec_retry(Exec *x, const Stmt *st)
{
    TableDef def;
    Value results = lang_value_array();
    int64_t delay_to;
    if (st->kind == ST_RETRY) {
        Record r = {0};
        if (!hold_open(x, st, &def, &r, &delay_to))
            retry_one(x, &def, &r, delay_to, &results);
        lang_record_free(&r);
    } else if (!lang_queue_load(x, st->u.release.target.table, ACCESS_WRITE, &def) &&
               !release_delay(x, &def, st, &delay_to)) {
        RetryRun *run = lang_xcalloc(1, sizeof *run);
        *run = (RetryRun){.x = x,
                          .def = &def,
                          .delay_to = delay_to,
                          .results = &results,
                          .batched = retry_batched(&def)};
        lang_exec_each_record(x, &def, &st->u.release.target, st->u.release.where,
                              run->batched ? WALK_OWN_ONLY : 0, retried_one, run);
        if (!x->err->code)
            retry_flush(run);
        for (size_t i = 0; i < run->n; i++)
            lang_value_free(&run->ids[i]);
        lang_buf_free(&run->keys);
        free(run);
    }
    lang_table_def_free(&def);
    return lang_exec_answer_records(x, &results);
}

/* ---- giving back a claim nobody saw (lang_view_unclaim) ---- */

void
lang_unclaims_truncate(LangUnclaims *u, size_t n)
{
    for (size_t i = n; i < u->n; i++) {
        free(u->v[i].table);
        lang_buf_free(&u->v[i].bytes);
    }
    if (n < u->n)
        u->n = n;
    if (!n) {
        free(u->v);
        *u = (LangUnclaims){0};
    }
}

/* What the unclaim transaction works from. */
typedef struct Unclaim {
    LangSession *s;
    const LangUnclaims *undo;
    size_t from;
    LangError *err;
} Unclaim;

/* Puts each record back as it was before its claim, when the claim's hold
 * is still on it unchanged (see lang_view_unclaim): 0, or -1 with the
 * error. */
static int
unclaim_run(StoreTxn *txn, void *ctx)
{
    Unclaim *u = ctx;
    *u->err = (LangError){0};
    store_txn_lazy(txn); /* it only gives holds back (see holds_only) */
    for (size_t i = u->from; i < u->undo->n && !u->err->code; i++) {
        const LangUnclaim *undo = &u->undo->v[i];
        TableDef def;
        LangError gone = {0};
        if (lang_table_def_load(txn, undo->table, &def, &gone))
            continue; /* dropped since: nothing to give back */
        StoreQueue q;
        bool back;
        int rc = def.is_queue ? store_unclaim(txn, lang_record_queue(&def, &q), &undo->before,
                                              undo->hold, &back)
                              : STORE_OK;
        StoreRecord sr;
        if (!rc && def.is_queue && back && lang_perkeys_used(&def) &&
            !(rc = store_record_get(txn, def.id, undo->before.key, &sr)))
            rc = lang_perkeys_hold_ended(txn, &def, sr.key, sr.value);
        if (rc)
            lang_store_error(rc, "giving a claim back", u->err);
        lang_table_def_free(&def);
    }
    return u->err->code ? -1 : 0;
}

LangErrorCode
lang_view_unclaim(LangSession *s, const LangUnclaims *undo, size_t from, LangError *err)
{
    if (from >= undo->n)
        return LANG_OK;
    Unclaim u = {s, undo, from, err};
    return lang_session_write(s, unclaim_run, &u, "committing", err);
}
