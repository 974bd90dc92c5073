/* holds.c — holds: CLAIM (taking a hold, numbered by the store, and the
 * plan EXPLAIN reports), RELEASE, RELEASE ALL and TOUCH (ending or
 * extending one), who signed a hold, and giving back a claim nobody saw
 * (lang_view_unclaim).  All of the hold logic is here. */
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

#define META_HOLDS "holds"

/* The number of a new hold, into "*out": 1 + the last one handed out on
 * the store.  Kept in the meta of table id 0, which no table ever has, so
 * no two holds on a store share a number: not in one table, not in two,
 * not across a drop and re-definition or a rename. */
static LangErrorCode
hold_number_next(StoreTxn *txn, int64_t *out, LangError *err)
{
    int64_t last;
    if (meta_get_i64(txn, 0, META_HOLDS, strlen(META_HOLDS), &last, err))
        return err->code;
    *out = last + 1;
    return meta_put_i64(txn, 0, META_HOLDS, strlen(META_HOLDS), *out, err);
}

/* The deadline of a hold on queue "def" taken or extended now: now + its
 * TIMEOUT, or the end of time. */
static int64_t
hold_deadline(const Exec *x, const TableDef *def)
{
    int64_t until;
    if (__builtin_add_overflow(x->now, def->decl.timeout_ns, &until))
        until = INT64_MAX;
    return until;
}

/* Takes the hold on "r" for the session: counts the attempt, numbers the
 * hold (the store's next hold number), sets the deadline and signs it
 * when the session has a consumer. */
static LangErrorCode
take_hold(Exec *x, const TableDef *def, Record *r, Value *results)
{
    const Value *a = value_object_get(&r->fields, FIELD_ATTEMPTS);
    int64_t attempts = a && a->kind == VAL_INT ? a->u.i : 0, hold = 0;
    LangUnclaim *undo = x->s->undo;
    if (undo) {
        lang_unclaim_free(undo);
        undo->table = xstrdup(def->decl.name);
        record_encode(r, &undo->before);
    }
    /* A hold that was never released nor finished has lapsed. */
    bool lapsed = value_object_get(&r->fields, FIELD_CLAIMED_UNTIL) != NULL;
    if (undo)
        undo->lapsed = lapsed;
    if (lapsed && counter_add(x->txn, def, COUNTER_LAPSES, 1, x->err))
        return x->err->code;
    if (counter_add(x->txn, def, COUNTER_CLAIMS, 1, x->err) ||
        hold_number_next(x->txn, &hold, x->err))
        return x->err->code;
    value_object_set(&r->fields, FIELD_ATTEMPTS, value_int(attempts + 1));
    value_object_set(&r->fields, FIELD_HOLD, value_int(hold));
    r->changed = r->claimed = x->now;
    value_object_set(&r->fields, FIELD_CLAIMED_UNTIL, value_datetime(hold_deadline(x, def)));
    if (x->s->consumer) {
        Value by = value_object();
        value_object_set(&by, "consumer", value_cstring(x->s->consumer));
        value_object_set(&by, "instance", value_cstring(x->s->instance));
        value_object_set(&r->fields, FIELD_CLAIMED_BY, by);
    } else {
        value_object_remove(&r->fields, FIELD_CLAIMED_BY);
    }
    free(r->holder);
    r->holder = xstrdup(x->s->instance);
    if (record_store(x->txn, def, r, x->now, x->err))
        return x->err->code;
    if (undo)
        record_encode(r, &undo->after);   /* what record_store stored */
    value_array_push(results, record_view(r, def));
    return LANG_OK;
}

/* The plan a claim reports: the declared index that matches the claim
 * order, or a scan. */
static Value
claim_plan(const TableDef *def)
{
    Value plan = value_object();
    const char *index = NULL;
    if (!def->decl.priority_by) {
        index = "id";
    } else {
        for (size_t i = 0; i < def->nindexes && !index; i++)
            if (def->indexes[i].nfields &&
                strcmp(def->indexes[i].fields[0], def->decl.priority_by) == 0)
                index = def->indexes[i].name;
    }
    value_object_set(&plan, "plan", value_cstring(index ? "ordered" : "scan"));
    if (index)
        value_object_set(&plan, "index", value_cstring(index));
    Value rows = value_array();
    value_array_push(&rows, plan);
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
    Value results = value_array();
    if (st->u.claim.explain) {
        value_free(&results);
        results = claim_plan(&def);
    } else if (t->id.kind == VAL_RECORD) {
        Record r = {0};
        if (!record_load(x->txn, &def, t->id.u.rec.key, &r, x->err) &&
            !record_is_held(&r, x->now) && !record_is_dead(&r, &def) &&
            record_not_before(&r, &def) <= x->now)
            take_hold(x, &def, &r, &results);
        record_free(&r);
    } else {
        for (int64_t n = 0; n < st->u.claim.count && !x->err->code;) {
            StoreBytes key, val;
            int rc = store_queue_head(x->txn, def.id, x->now, &key, &val);
            if (rc == STORE_NOTFOUND)
                break;
            if (rc) {
                lang_store_error(rc, "finding the head of the queue", x->err);
                break;
            }
            Record r = {0};
            if (!record_decode(val, &r, x->err)) {
                if (record_is_dead(&r, &def) || record_not_before(&r, &def) > x->now)
                    record_store(x->txn, &def, &r, x->now, x->err);  /* refile it */
                else if (!take_hold(x, &def, &r, &results))
                    n++;
            }
            record_free(&r);
        }
    }
    table_def_free(&def);
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
    EvalContext cx = {NULL, x->now};
    Value v;
    if (expr_eval(st->u.release.not_before, &cx, &v, x->err))
        return x->err->code;
    LangErrorCode rc = LANG_OK;
    if (v.kind == VAL_DATETIME)
        *at = v.u.ns;
    else if (v.kind == VAL_DURATION && !__builtin_add_overflow(x->now, v.u.ns, at))
        ;
    else
        rc = lang_error_set(x->err, LANG_TYPE_ERROR,
                            "NOT BEFORE takes a datetime or a duration, not %s",
                            value_kind_name(v.kind));
    value_free(&v);
    return rc;
}

/* Ends the hold on "r", setting the delay field when "delay_to" is non-zero. */
static LangErrorCode
end_hold(Exec *x, const TableDef *def, Record *r, int64_t delay_to, Value *results)
{
    value_object_remove(&r->fields, FIELD_CLAIMED_UNTIL);
    value_object_remove(&r->fields, FIELD_CLAIMED_BY);
    value_object_remove(&r->fields, FIELD_HOLD);
    free(r->holder);
    r->holder = NULL;
    r->since = r->changed = x->now;
    if (counter_add(x->txn, def, COUNTER_RELEASES, 1, x->err))
        return x->err->code;
    if (delay_to) {
        LangPath path;
        lang_path_split(def->decl.not_before, &path);
        lang_path_set(&r->fields, path.parts, path.len, value_datetime(delay_to));
        lang_path_free(&path);
    }
    if (record_store(x->txn, def, r, x->now, x->err))
        return x->err->code;
    value_array_push(results, record_view(r, def));
    return LANG_OK;
}

/* The consumer that signed the hold on "r", or NULL when unsigned. */
static const char *
hold_consumer(const Record *r, const char **instance)
{
    const Value *by = value_object_get(&r->fields, FIELD_CLAIMED_BY);
    const Value *c = by && by->kind == VAL_OBJECT ? value_object_get(by, "consumer") : NULL;
    const Value *i = by && by->kind == VAL_OBJECT ? value_object_get(by, "instance") : NULL;
    *instance = i && i->kind == VAL_STRING ? i->u.str.s : NULL;
    return c && c->kind == VAL_STRING ? c->u.str.s : NULL;
}

/* Opens RELEASE or TOUCH "st" on the one record it names: its queue
 * into "def" (loaded for writing), the delay a RELEASE names into
 * "*delay_to" (see release_delay), and the record into "r" when its fence
 * holds.  The caller frees "def" and "r", also on error. */
static LangErrorCode
hold_open(Exec *x, const Stmt *st, TableDef *def, Record *r, int64_t *delay_to)
{
    const Target *t = &st->u.release.target;
    *r = (Record){0};
    if (lang_queue_load(x, t->table, ACCESS_WRITE, def) ||
        release_delay(x, def, st, delay_to) ||
        record_load(x->txn, def, t->id.u.rec.key, r, x->err))
        return x->err->code;
    if (st->u.release.fence)
        record_fence(def, r, st->u.release.fence, x->now, x->err);
    return x->err->code;
}

/* release -> RELEASE record [NOT BEFORE expr] [FOR CONSUMER name] */
LangErrorCode
lang_exec_release(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.release.target;
    TableDef def;
    Record r;
    int64_t delay_to;
    Value results = value_array();
    if (hold_open(x, st, &def, &r, &delay_to) || !record_is_held(&r, x->now))
        goto done;
    const char *instance, *consumer = hold_consumer(&r, &instance);
    const char *group = st->u.release.for_consumer;
    if (group ? consumer && strcmp(consumer, group) == 0
              : !consumer || (instance && strcmp(instance, x->s->instance) == 0)) {
        end_hold(x, &def, &r, delay_to, &results);
    } else if (consumer) {
        Buf name = {0};
        record_id_format(&t->id.u.rec, &name);
        lang_error_set(x->err, LANG_HELD_BY_OTHER, "%s is held by consumer '%s'%s", name.data,
                       consumer,
                       x->s->consumer && strcmp(consumer, x->s->consumer) == 0
                           ? " (another instance: name the group with FOR CONSUMER)"
                           : "");
        buf_free(&name);
    }
done:
    record_free(&r);
    table_def_free(&def);
    return lang_exec_answer_records(x, &results);
}

static int
collect_waiting(void *ctx, StoreBytes key, int64_t wake_ns)
{
    (void)wake_ns;
    lang_keys_push(ctx, key);
    return 0;
}

/* release_all -> RELEASE ALL FROM table [FOR CONSUMER name] [NOT BEFORE expr] */
LangErrorCode
lang_exec_release_all(Exec *x, const Stmt *st)
{
    TableDef def;
    if (lang_queue_load(x, st->u.release.target.table, ACCESS_WRITE, &def))
        return x->err->code;
    Value results = value_array();
    int64_t delay_to;
    Buf keys = {0};
    if (release_delay(x, &def, st, &delay_to))
        goto done;
    int rc = store_queue_each_waiting(x->txn, def.id, collect_waiting, &keys);
    if (rc) {
        lang_store_error(rc, "walking the holds", x->err);
        goto done;
    }
    const char *group = st->u.release.for_consumer;
    StoreBytes kb, val;
    for (size_t off = 0; !x->err->code && lang_keys_next(&keys, &off, &kb);) {
        Record r = {0};
        if ((rc = store_record_get(x->txn, def.id, kb, &val, NULL))) {
            lang_store_error(rc, "reading a hold", x->err);
        } else if (!record_decode(val, &r, x->err) && record_is_held(&r, x->now)) {
            const char *instance, *consumer = hold_consumer(&r, &instance);
            bool mine = group ? consumer && strcmp(consumer, group) == 0
                              : r.holder && strcmp(r.holder, x->s->instance) == 0;
            if (mine)
                end_hold(x, &def, &r, delay_to, &results);
        }
        record_free(&r);
    }
done:
    buf_free(&keys);
    table_def_free(&def);
    return lang_exec_answer_records(x, &results);
}

/* touch -> TOUCH record: the hold's deadline becomes now + TIMEOUT. */
LangErrorCode
lang_exec_touch(Exec *x, const Stmt *st)
{
    TableDef def;
    Record r;
    int64_t no_delay;   /* TOUCH names none */
    Value results = value_array();
    Buf name = {0};
    record_id_format(&st->u.release.target.id.u.rec, &name);
    if (hold_open(x, st, &def, &r, &no_delay))
        goto done;
    if (!record_is_held(&r, x->now)) {
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
    value_object_set(&r.fields, FIELD_CLAIMED_UNTIL, value_datetime(hold_deadline(x, &def)));
    r.changed = x->now;
    if (!record_store(x->txn, &def, &r, x->now, x->err))
        value_array_push(&results, record_view(&r, &def));
done:
    buf_free(&name);
    record_free(&r);
    table_def_free(&def);
    return lang_exec_answer_records(x, &results);
}

/* ---- giving back a claim nobody saw (lang_view_unclaim) ---- */

void
lang_unclaim_free(LangUnclaim *undo)
{
    free(undo->table);
    buf_free(&undo->before);
    buf_free(&undo->after);
    *undo = (LangUnclaim){0};
}

/* What the unclaim transaction works from. */
typedef struct Unclaim {
    LangSession       *s;
    const LangUnclaim *undo;
    LangError         *err;
} Unclaim;

/* Puts the record back as it was before the claim, when the claim's form
 * is still the stored one (see lang_view_unclaim): 0, or -1 with the
 * error. */
static int
unclaim_run(StoreTxn *txn, void *ctx)
{
    Unclaim *u = ctx;
    *u->err = (LangError){0};
    TableDef def;
    Record before = {0};
    Buf key = {0};
    StoreBytes stored;
    LangError gone = {0};
    if (table_def_load(txn, u->undo->table, &def, &gone))
        return 0;   /* dropped since: nothing to give back */
    StoreBytes bytes = {u->undo->before.data, u->undo->before.len};
    if (!record_decode(bytes, &before, u->err)) {
        record_key_encode(&before.key, &key);
        int rc = store_record_get(txn, def.id, (StoreBytes){key.data, key.len}, &stored, NULL);
        bool same = rc == STORE_OK && stored.len == u->undo->after.len &&
                    memcmp(stored.data, u->undo->after.data, stored.len) == 0;
        if (rc && rc != STORE_NOTFOUND)
            lang_store_error(rc, "reading a claimed record", u->err);
        else if (same && !record_store(txn, &def, &before, store_now(u->s->store),
                                 u->err) &&
                 !counter_add(txn, &def, COUNTER_CLAIMS, -1, u->err) && u->undo->lapsed)
            counter_add(txn, &def, COUNTER_LAPSES, -1, u->err);
    }
    buf_free(&key);
    record_free(&before);
    table_def_free(&def);
    return u->err->code ? -1 : 0;
}

LangErrorCode
lang_view_unclaim(LangSession *s, const LangUnclaim *undo, LangError *err)
{
    if (!undo->table)
        return LANG_OK;
    Unclaim u = {s, undo, err};
    return lang_session_write(s, unclaim_run, &u, "committing", err);
}
