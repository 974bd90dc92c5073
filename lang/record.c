/* record.c — a record as lang holds it: its identity and fields (the
 * value lang gives the store) with the engine's columns the store keeps
 * beside them; what users see of it; and the queue rules it obeys — held
 * until its claimed_until, delayed until its NOT BEFORE instant, dead at
 * the ATTEMPTS ceiling, or ready.  Also the schema checks of its fields. */
#include <stdlib.h>
#include <string.h>

#include "../store/bigendian.h"
#include "engine.h"
#include "lang.h"

/* The value lang stores: a version byte, the identity (8-byte length, then
 * lang_value_encode form), then the fields (lang_value_encode form).  The identity
 * travels with the record so a walk or a claim can name it without
 * decoding the store key.  (Versions 1 and 2 also held the engine's
 * fields, a holder and times: record_upgrade turns them into columns.) */
#define RECORD_VALUE_FORMAT 3

void
lang_record_free(Record *r)
{
    lang_value_free(&r->key);
    lang_value_free(&r->fields);
    free(r->consumer);
    free(r->instance);
    free(r->errors);
    r->consumer = r->instance = NULL;
    r->errors = NULL;
    r->errors_len = 0;
}

void
lang_record_key_encode(const Value *key, Buf *out)
{
    lang_value_key_encode(key, false, out);
}

/* A NUL-terminated copy of "b", or NULL when it is empty. */
static char *
bytes_dup(StoreBytes b)
{
    return b.len ? lang_xstrndup(b.data, b.len) : NULL;
}

/* Decodes identity and fields from value bytes of RECORD_VALUE_FORMAT. */
static int
value_decode_record(StoreBytes v, Value *key, Value *fields)
{
    const unsigned char *p = v.data;
    if (v.len < 9 || p[0] != RECORD_VALUE_FORMAT)
        return -1;
    uint64_t klen = be_get64(p + 1);
    if (klen > v.len - 9 || lang_value_decode(p + 9, (size_t)klen, key) < 0 ||
        lang_value_decode(p + 9 + klen, v.len - 9 - (size_t)klen, fields) < 0 ||
        fields->kind != VAL_OBJECT)
        return -1;
    return 0;
}

int
lang_record_key_from_store(const StoreRecord *sr, Value *key)
{
    const unsigned char *p = sr->value.data;
    if (sr->value.len < 9 || p[0] != RECORD_VALUE_FORMAT)
        return -1;
    uint64_t klen = be_get64(p + 1);
    return klen > sr->value.len - 9 ? -1 : lang_value_decode(p + 9, (size_t)klen, key);
}

/* The NOT BEFORE field of "def" set in "fields" to "at". */
static void
set_not_before(const TableDef *def, Value *fields, int64_t at)
{
    LangPath path;
    lang_path_split(def->decl.not_before, &path);
    lang_path_set(fields, path.parts, path.len, lang_value_datetime(at));
    lang_path_free(&path);
}

LangErrorCode
lang_record_from_store(const StoreRecord *sr, const TableDef *def, Record *r, LangError *err)
{
    lang_record_free(r);
    if (value_decode_record(sr->value, &r->key, &r->fields) < 0) {
        lang_value_free(&r->key);
        lang_value_free(&r->fields);
        return lang_error_set(err, LANG_STORE_ERROR, "a stored record is unreadable");
    }
    r->attempts = sr->attempts;
    r->hold = sr->hold;
    r->claimed_until = sr->claimed_until;
    r->not_before = sr->not_before;
    r->consumer = bytes_dup(sr->consumer);
    r->instance = bytes_dup(sr->instance);
    r->since = sr->since;
    r->written = sr->written;
    r->changed = sr->changed;
    r->claimed = sr->claimed;
    r->completed_at = sr->completed_at;
    if (sr->errors.len) {
        r->errors = lang_xmalloc(sr->errors.len);
        memcpy(r->errors, sr->errors.data, sr->errors.len);
        r->errors_len = sr->errors.len;
    }
    if (r->not_before && r->not_before < PER_PARKED && def->is_queue && def->decl.not_before)
        set_not_before(def, &r->fields, r->not_before);
    return LANG_OK;
}

/* The engine's fields, in the order a record's JSON shows them. */
static const char *const engine_fields[] = {FIELD_ATTEMPTS,    FIELD_HOLD,   FIELD_CLAIMED_UNTIL,
                                            FIELD_CLAIMED_BY,  FIELD_ERRORS, FIELD_LAST_ERROR,
                                            FIELD_COMPLETED_AT};
enum { ENGINE_FIELDS = sizeof engine_fields / sizeof *engine_fields };

bool
lang_record_is_engine_field(const char *name)
{
    for (size_t i = 0; i < ENGINE_FIELDS; i++)
        if (strcmp(name, engine_fields[i]) == 0)
            return true;
    return strcmp(name, FIELD_AFTER) == 0;
}

/* One failed attempt as users see it. */
static Value
error_view(const QueueError *e)
{
    Value o = lang_value_object();
    lang_value_object_set(&o, "attempt", lang_value_int(e->attempt));
    lang_value_object_set(&o, "at", lang_value_datetime(e->at));
    lang_value_object_set(&o, "error", lang_value_string((const char *)e->text.data, e->text.len));
    return o;
}

/* The failed attempts of "r" at "now" (an array; empty when none): those
 * stored, then the lapse of a hold that ran out and that no claim has
 * recorded yet, the last STORE_ERRORS_KEPT of them. */
static Value
errors_view(const Record *r, int64_t now)
{
    StoreBytes rest = {r->errors, r->errors_len};
    StoreRecord held = {.claimed_until = r->claimed_until};
    bool lapsed = queue_hold_lapsed(&held, now);
    size_t n = queue_errors_count(rest) + lapsed;
    QueueError e;
    Value a = lang_value_array();
    for (size_t i = 0; queue_errors_next(&rest, &e); i++)
        if (i + STORE_ERRORS_KEPT >= n)
            lang_value_array_push(&a, error_view(&e));
    if (lapsed) {
        e = (QueueError){r->attempts,
                         r->claimed_until,
                         {(const unsigned char *)QUEUE_LAPSED, strlen(QUEUE_LAPSED)}};
        lang_value_array_push(&a, error_view(&e));
    }
    return a;
}

bool
lang_record_engine_field(const Record *r, const char *name, int64_t now, Value *out)
{
    if (strcmp(name, FIELD_ERRORS) == 0 || strcmp(name, FIELD_LAST_ERROR) == 0) {
        StoreRecord hold = {.claimed_until = r->claimed_until};
        if (!r->errors_len && !queue_hold_lapsed(&hold, now))
            return false; /* no errors: nothing to build */
        Value errors = errors_view(r, now);
        size_t n = errors.u.arr.len;
        if (n && strcmp(name, FIELD_LAST_ERROR) == 0)
            *out = lang_value_clone(lang_value_object_get(&errors.u.arr.items[n - 1], "error"));
        else if (n)
            *out = lang_value_clone(&errors);
        lang_value_free(&errors);
        return n > 0;
    }
    if (strcmp(name, FIELD_AFTER) == 0) {
        const Value *waits = lang_value_object_get(&r->fields, FIELD_AFTER);
        if (!waits)
            return false;
        *out = lang_value_clone(waits);
    } else if (strcmp(name, FIELD_ATTEMPTS) == 0 && r->claimed) {
        *out = lang_value_int(r->attempts);
    } else if (strcmp(name, FIELD_COMPLETED_AT) == 0 && r->completed_at) {
        *out = lang_value_datetime(r->completed_at);
    } else if (!r->claimed_until) {
        return false;
    } else if (strcmp(name, FIELD_HOLD) == 0) {
        *out = lang_value_int(r->hold);
    } else if (strcmp(name, FIELD_CLAIMED_UNTIL) == 0) {
        *out = lang_value_datetime(r->claimed_until);
    } else if (strcmp(name, FIELD_CLAIMED_BY) == 0 && r->consumer) {
        *out = lang_value_object();
        lang_value_object_set(out, "consumer", lang_value_cstring(r->consumer));
        lang_value_object_set(out, "instance", lang_value_cstring(r->instance ? r->instance : ""));
    } else {
        return false;
    }
    return true;
}

Value
lang_record_view(const Record *r, const TableDef *def, int64_t now)
{
    Value v = lang_value_clone(&r->fields), f;
    /* The newest error's text once errors are shown (in "v"'s memory). */
    const Value *newest = NULL;
    for (size_t i = 0; def->is_queue && i < ENGINE_FIELDS; i++) {
        const char *name = engine_fields[i];
        if (newest && strcmp(name, FIELD_LAST_ERROR) == 0) {
            /* the newest of the errors just shown, not built again */
            lang_value_object_set(&v, name, lang_value_clone(newest));
        } else if (lang_record_engine_field(r, name, now, &f)) {
            if (strcmp(name, FIELD_ERRORS) == 0)
                newest = lang_value_object_get(&f.u.arr.items[f.u.arr.len - 1], "error");
            lang_value_object_set(&v, name, f);
        }
    }
    lang_value_object_set(&v, "id", lang_value_record(def->decl.name, lang_value_clone(&r->key)));
    return v;
}

const StoreQueue *
lang_record_queue(const TableDef *def, StoreQueue *q)
{
    if (!def->is_queue)
        return NULL;
    const TableDecl *d = &def->decl;
    *q = (StoreQueue){.table = def->id,
                      .timeout_ns = d->timeout_ns,
                      .max_attempts = d->attempts,
                      .per_group = d->nper ? d->per[0].limit : 0,
                      .rate = d->rate_window_ns > 0 ? d->rate : 0,
                      .rate_window_ns = d->rate ? d->rate_window_ns : 0,
                      .paused = def->paused,
                      .keep_ns = d->keep_ns};
    return q;
}

bool
lang_record_is_held(const Record *r, int64_t now)
{
    return queue_hold_runs(r->claimed_until, now);
}

int64_t
lang_record_not_before(const Record *r, const TableDef *def)
{
    return def->decl.not_before && r->not_before != PER_PARKED ? r->not_before : 0;
}

/* The instant the NOT BEFORE field of "fields" names, or 0; AFTER_NEVER
 * while its "after" names a record it waits for. */
static int64_t
fields_not_before(const TableDef *def, const Value *fields)
{
    if (!def->is_queue)
        return 0;
    const Value *waits = lang_value_object_get(fields, FIELD_AFTER);
    if (waits && waits->kind == VAL_ARRAY && waits->u.arr.len)
        return AFTER_NEVER;
    if (!def->decl.not_before)
        return 0;
    LangPath path;
    lang_path_split(def->decl.not_before, &path);
    const Value *v = lang_path_get(fields, path.parts, path.len);
    lang_path_free(&path);
    return v && v->kind == VAL_DATETIME ? v->u.ns : 0;
}

bool
lang_record_is_dead(const Record *r, const TableDef *def)
{
    return !r->completed_at && queue_ceiling_reached(def->decl.attempts, r->attempts);
}

bool
lang_record_expired(const TableDef *def, const StoreRecord *sr, int64_t now)
{
    StoreQueue q;
    return sr->completed_at && def->is_queue &&
           queue_done_expired(lang_record_queue(def, &q), sr, now);
}

int
lang_record_get_stored(StoreTxn *txn, const TableDef *def, StoreBytes key, StoreRecord *sr)
{
    int rc = store_record_get(txn, def->id, key, sr);
    if (rc == STORE_OK && sr->completed_at && lang_record_expired(def, sr, store_txn_now(txn)))
        return STORE_NOTFOUND;
    return rc;
}

LangErrorCode
lang_record_fence(const TableDef *def, const Record *r, int64_t fence, int64_t now, LangError *err)
{
    bool held = lang_record_is_held(r, now);
    if (fence == 0 || (fence == LANG_FENCE_DEAD && !held && lang_record_is_dead(r, def)) ||
        (fence == LANG_FENCE_DONE && r->completed_at) ||
        (fence == LANG_FENCE_BLOCKED && !r->completed_at && r->not_before == AFTER_NEVER) ||
        (fence > 0 && held && r->hold == fence))
        return LANG_OK;
    RecordId id = {def->decl.name, (Value *)&r->key};
    Buf name = {0};
    lang_record_id_format(&id, &name);
    if (fence > 0)
        lang_error_set(err, LANG_NO_SUCH_RECORD, "%s is no longer held by hold %lld", name.data,
                       (long long)fence);
    else
        lang_error_set(err, LANG_NO_SUCH_RECORD, "%s is %s", name.data,
                       fence == LANG_FENCE_DONE      ? "not done"
                       : fence == LANG_FENCE_BLOCKED ? "not blocked"
                                                     : "no longer dead");
    lang_buf_free(&name);
    return LANG_NO_SUCH_RECORD;
}

int64_t
lang_record_available_at(const Record *r, const TableDef *def)
{
    int64_t at = r->since;
    if (r->claimed_until > at)
        at = r->claimed_until;
    int64_t nb = lang_record_not_before(r, def);
    return nb > at ? nb : at;
}

LangErrorCode
lang_store_error(int status, const char *what, LangError *err)
{
    switch (status) {
    case STORE_FULL:
        return lang_error_set(err, LANG_STORE_FULL, "the store is full while %s", what);
    case STORE_TOOBIG:
        return lang_error_set(err, LANG_TOO_LARGE,
                              "an identity or key is longer than %d bytes while %s", STORE_MAX_KEY,
                              what);
    default:
        if (*store_error_detail())
            return lang_error_set(err, LANG_STORE_ERROR, "%s while %s (%s)", store_strerror(status),
                                  what, store_error_detail());
        return lang_error_set(err, LANG_STORE_ERROR, "%s while %s", store_strerror(status), what);
    }
}

LangErrorCode
lang_record_missing(int status, const TableDef *def, const Value *key, const char *what,
                    LangError *err)
{
    if (status != STORE_NOTFOUND && status != STORE_TOOBIG && status != STORE_CONFLICT)
        return lang_store_error(status, what, err);
    RecordId id = {def->decl.name, (Value *)key};
    Buf name = {0};
    lang_record_id_format(&id, &name);
    if (status == STORE_CONFLICT)
        lang_error_set(err, LANG_NO_SUCH_RECORD, "%s is no longer held by that hold", name.data);
    else
        lang_error_set(err, LANG_NO_SUCH_RECORD, "no record %s", name.data);
    lang_buf_free(&name);
    return LANG_NO_SUCH_RECORD;
}

/* The claim-order key of "fields" on queue "def": the PRIORITY BY field's
 * order encoding (cut to fit a key), or empty (the identity's order). */
static void
order_key(const TableDef *def, const Value *fields, Buf *out)
{
    if (!def->is_queue || !def->decl.priority_by)
        return;
    LangPath path;
    lang_path_split(def->decl.priority_by, &path);
    const Value *p = lang_path_get(fields, path.parts, path.len);
    lang_path_free(&path);
    Value none = lang_value_none();
    lang_value_key_encode(p ? p : &none, true, out);
    if (out->len > STORE_MAX_KEY - 16)
        out->len = STORE_MAX_KEY - 16;
}

LangErrorCode
lang_record_group(const TableDef *def, size_t i, const Value *key, const Value *fields, Buf *out,
                  LangError *err)
{
    if (!def->is_queue || i >= def->decl.nper)
        return LANG_OK;
    const char *field = def->decl.per[i].field;
    LangPath path;
    lang_path_split(field, &path);
    const Value *v = lang_path_get(fields, path.parts, path.len);
    lang_path_free(&path);
    if (!v || v->kind == VAL_NONE || v->kind == VAL_NULL)
        return LANG_OK;
    lang_value_key_encode(v, false, out);
    if (out->len <= STORE_MAX_KEY)
        return LANG_OK;
    RecordId id = {def->decl.name, (Value *)key};
    Buf name = {0};
    lang_record_id_format(&id, &name);
    lang_error_set(err, LANG_TOO_LARGE,
                   "the AT MOST … PER field '%s' of %s takes %zu bytes, more than %d", field,
                   name.data, out->len, STORE_MAX_KEY);
    lang_buf_free(&name);
    return LANG_TOO_LARGE;
}

LangErrorCode
lang_record_filing(const TableDef *def, const Value *key, const Value *fields, Buf *order,
                   int64_t *not_before, Buf *group, LangError *err)
{
    order_key(def, fields, order);
    *not_before = fields_not_before(def, fields);
    LangErrorCode rc = lang_record_group(def, 0, key, fields, group, err);
    /* the other keys' groups are perkeys.c's: only their size is checked */
    for (size_t i = 1; !rc && def->is_queue && i < def->decl.nper; i++) {
        Buf other = {0};
        rc = lang_record_group(def, i, key, fields, &other, err);
        lang_buf_free(&other);
    }
    return rc;
}

/* The value bytes of identity "key" and "fields" (RECORD_VALUE_FORMAT). */
static void
value_encode_record(const Value *key, const Value *fields, Buf *out)
{
    Buf kb = {0};
    lang_value_encode(key, &kb);
    lang_buf_putc(out, RECORD_VALUE_FORMAT);
    lang_buf_put_u64be(out, kb.len);
    lang_buf_append(out, kb.data, kb.len);
    lang_buf_free(&kb);
    lang_value_encode(fields, out);
}

void
lang_record_value_encode(const Record *r, const TableDef *def, Buf *out, int64_t *not_before)
{
    value_encode_record(&r->key, &r->fields, out);
    *not_before = fields_not_before(def, &r->fields);
}

/* Record "r" as the store keeps it: its key, value and filing. */
typedef struct Stored {
    Buf key, val, order, group;
    int64_t not_before;
} Stored;

/* Encodes "r" of "def" into "*e" (freed by stored_free whatever it
 * answers): TooLarge for content over RECORD_MAX_BYTES, or the filing's
 * error. */
static LangErrorCode
stored_encode(const TableDef *def, const Record *r, Stored *e, LangError *err)
{
    lang_record_key_encode(&r->key, &e->key);
    value_encode_record(&r->key, &r->fields, &e->val);
    if (e->val.len > RECORD_MAX_BYTES)
        return lang_error_set(err, LANG_TOO_LARGE, "a record is larger than %zu MiB",
                              RECORD_MAX_BYTES >> 20);
    return lang_record_filing(def, &r->key, &r->fields, &e->order, &e->not_before, &e->group, err);
}

/* "e" as the store's record (pointing into it). */
static StoreRecord
stored_record(const Stored *e)
{
    return (StoreRecord){.key = {e->key.data, e->key.len},
                         .value = {e->val.data, e->val.len},
                         .order = {e->order.data, e->order.len},
                         .not_before = e->not_before,
                         .group = {e->group.data, e->group.len}};
}

static void
stored_free(Stored *e)
{
    lang_buf_free(&e->key);
    lang_buf_free(&e->val);
    lang_buf_free(&e->order);
    lang_buf_free(&e->group);
}

LangErrorCode
lang_record_taken(const TableDef *def, const Value *key, LangError *err)
{
    RecordId id = {def->decl.name, (Value *)key};
    Buf name = {0};
    lang_record_id_format(&id, &name);
    lang_error_set(err, LANG_RECORD_EXISTS, "record %s already exists", name.data);
    lang_buf_free(&name);
    return LANG_RECORD_EXISTS;
}

/* The error of the store's "status" writing record "r" of "def". */
static LangErrorCode
store_failed(int status, const TableDef *def, const Record *r, LangError *err)
{
    if (status == STORE_EXISTS)
        return lang_record_taken(def, &r->key, err);
    if (status == STORE_NOTFOUND)
        return lang_record_missing(status, def, &r->key, "writing a record", err);
    return status ? lang_store_error(status, "writing a record", err) : LANG_OK;
}

LangErrorCode
lang_record_store(StoreTxn *txn, const TableDef *def, const Record *r, bool create, LangError *err)
{
    Stored e = {0};
    LangErrorCode rc = stored_encode(def, r, &e, err);
    if (!rc) {
        StoreQueue q;
        StoreRecord sr = stored_record(&e);
        int status = create ? store_record_create(txn, def->id, lang_record_queue(def, &q), &sr)
                            : store_record_update(txn, def->id, lang_record_queue(def, &q), &sr);
        rc = store_failed(status, def, r, err);
    }
    stored_free(&e);
    return rc;
}

LangErrorCode
lang_records_create(StoreTxn *txn, const TableDef *def, const Record *rs, size_t n, LangError *err)
{
    Stored *e = lang_xcalloc(n ? n : 1, sizeof *e);
    StoreRecord *srs = lang_xcalloc(n ? n : 1, sizeof *srs);
    LangErrorCode rc = LANG_OK;
    for (size_t i = 0; i < n && !rc; i++)
        if (!(rc = stored_encode(def, &rs[i], &e[i], err)))
            srs[i] = stored_record(&e[i]);
    if (!rc && n) {
        StoreQueue q;
        size_t failed = 0;
        int status =
            store_records_create(txn, def->id, lang_record_queue(def, &q), srs, n, &failed);
        rc = store_failed(status, def, &rs[failed], err);
    }
    for (size_t i = 0; i < n; i++)
        stored_free(&e[i]);
    free(e);
    free(srs);
    return rc;
}

/* What a refile's "file" callback needs (see lang_record_refile). */
typedef struct Refile {
    const TableDef *old, *def;
    bool same_not_before; /* the NOT BEFORE field did not change */
    Buf order, group;
    Record r;
    LangError *err;
} Refile;

static bool
same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int
refile_one(void *ctx, const StoreRecord *sr, StoreFiling *out)
{
    Refile *rf = ctx;
    lang_buf_reset(&rf->order);
    lang_buf_reset(&rf->group);
    /* Its fields as users saw them under the old definition (a RELEASE …
     * NOT BEFORE's instant in the NOT BEFORE field). */
    if (lang_record_from_store(sr, rf->old, &rf->r, rf->err) ||
        lang_record_filing(rf->def, &rf->r.key, &rf->r.fields, &rf->order, &out->not_before,
                           &rf->group, rf->err))
        return -1;
    /* a record passed over for a full group is filed by its fields: the
     * keys are refiled too (lang_perkeys_reset) */
    if (rf->same_not_before && sr->not_before != PER_PARKED)
        out->not_before = sr->not_before;
    out->order = (StoreBytes){rf->order.data, rf->order.len};
    out->group = (StoreBytes){rf->group.data, rf->group.len};
    return 0;
}

LangErrorCode
lang_record_refile(StoreTxn *txn, const TableDef *old, const TableDef *def, bool by_fields,
                   LangError *err)
{
    StoreQueue q;
    Refile rf = {.old = old,
                 .def = def,
                 .same_not_before = same_text(old->decl.not_before, def->decl.not_before),
                 .err = err};
    int rc =
        store_queue_refile(txn, lang_record_queue(def, &q), by_fields ? refile_one : NULL, &rf);
    lang_buf_free(&rf.order);
    lang_buf_free(&rf.group);
    lang_record_free(&rf.r);
    if (rc && err->code)
        return err->code;
    return rc ? lang_store_error(rc, "filing the queue's records anew", err) : LANG_OK;
}

LangErrorCode
lang_record_load(StoreTxn *txn, const TableDef *def, const Value *key, Record *r, LangError *err)
{
    Buf kb = {0};
    lang_record_key_encode(key, &kb);
    StoreRecord sr;
    int rc = lang_record_get_stored(txn, def, (StoreBytes){kb.data, kb.len}, &sr);
    lang_buf_free(&kb);
    if (rc)
        return lang_record_missing(rc, def, key, "reading a record", err);
    if (lang_record_from_store(&sr, def, r, err))
        return err->code;
    lang_value_free(&r->key);
    r->key = lang_value_clone(key);
    return LANG_OK;
}

/* True when "v" is of declared type "type", coercing an RFC 3339 string in
 * place for datetime. */
static bool
type_accepts(const char *type, Value *v)
{
    if (strncmp(type, "option<", 7) == 0) {
        if (v->kind == VAL_NONE || v->kind == VAL_NULL)
            return true;
        char inner[32];
        size_t n = strlen(type + 7);
        if (n == 0 || n > sizeof inner)
            return false;
        memcpy(inner, type + 7, n - 1);
        inner[n - 1] = '\0';
        return type_accepts(inner, v);
    }
    if (strcmp(type, "any") == 0)
        return true;
    if (strcmp(type, "string") == 0)
        return v->kind == VAL_STRING;
    if (strcmp(type, "int") == 0)
        return v->kind == VAL_INT;
    if (strcmp(type, "float") == 0) {
        if (v->kind == VAL_INT) {
            double f = (double)v->u.i;
            *v = lang_value_float(f);
        }
        return v->kind == VAL_FLOAT;
    }
    if (strcmp(type, "number") == 0)
        return v->kind == VAL_INT || v->kind == VAL_FLOAT;
    if (strcmp(type, "bool") == 0)
        return v->kind == VAL_BOOL;
    if (strcmp(type, "duration") == 0) {
        int64_t ns;
        if (v->kind == VAL_STRING && lang_duration_parse(v->u.str.s, v->u.str.len, &ns) == 0) {
            lang_value_free(v);
            *v = lang_value_duration(ns);
        }
        return v->kind == VAL_DURATION;
    }
    if (strcmp(type, "datetime") == 0) {
        int64_t ns;
        if (v->kind == VAL_STRING && lang_datetime_parse(v->u.str.s, v->u.str.len, &ns) == 0) {
            lang_value_free(v);
            *v = lang_value_datetime(ns);
        }
        return v->kind == VAL_DATETIME;
    }
    if (strcmp(type, "object") == 0)
        return v->kind == VAL_OBJECT;
    if (strcmp(type, "array") == 0)
        return v->kind == VAL_ARRAY;
    if (strcmp(type, "record") == 0)
        return v->kind == VAL_RECORD;
    return false;
}

/* The slot holding the value at dotted "path" in object "o", or NULL when
 * the path does not lead to an existing field. */
static Value *
field_slot(Value *o, const char *path)
{
    LangPath p;
    lang_path_split(path, &p);
    Value *v = (Value *)lang_path_get(o, p.parts, p.len);
    lang_path_free(&p);
    return v;
}

/* True when top-level field "name" is declared, as itself or as the first
 * part of a declared path. */
static bool
field_declared(const TableDef *def, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < def->nfields; i++) {
        const char *f = def->fields[i].name;
        if (strncmp(f, name, n) == 0 && (f[n] == '\0' || f[n] == '.'))
            return true;
    }
    return false;
}

LangErrorCode
lang_record_validate(const TableDef *def, Value *fields, LangError *err)
{
    const char *table = def->decl.name;
    if (def->decl.schema == SCHEMA_FULL) {
        for (size_t i = 0; i < fields->u.obj.len; i++) {
            const char *k = fields->u.obj.keys[i];
            if (def->is_queue && lang_record_is_engine_field(k))
                continue;
            if (!field_declared(def, k))
                return lang_error_set(err, LANG_SCHEMA_VIOLATION,
                                      "'%s' is SCHEMAFULL and declares no field '%s'", table, k);
        }
    }
    for (size_t i = 0; i < def->nfields; i++) {
        const FieldDef *f = &def->fields[i];
        Value *v = field_slot(fields, f->name);
        bool absent = !v || v->kind == VAL_NONE || v->kind == VAL_NULL;
        if (f->required && absent)
            return lang_error_set(err, LANG_SCHEMA_VIOLATION, "field '%s' of '%s' is REQUIRED",
                                  f->name, table);
        if (v && f->type && !(absent && !f->required) && !type_accepts(f->type, v))
            return lang_error_set(err, LANG_SCHEMA_VIOLATION,
                                  "field '%s' of '%s' must be of TYPE %s, not %s", f->name, table,
                                  f->type, lang_value_kind_name(v->kind));
    }
    return LANG_OK;
}

bool
lang_record_exists(StoreTxn *txn, const TableDef *def, const Value *key)
{
    Buf kb = {0};
    lang_record_key_encode(key, &kb);
    StoreRecord r;
    int rc = store_record_get(txn, def->id, (StoreBytes){kb.data, kb.len}, &r);
    lang_buf_free(&kb);
    return rc == STORE_OK && !r.completed_at;
}

void
lang_keys_push(Buf *keys, StoreBytes key)
{
    uint32_t len = (uint32_t)key.len;
    lang_buf_append(keys, &len, sizeof len);
    lang_buf_append(keys, key.data, key.len);
}

bool
lang_keys_next(const Buf *keys, size_t *off, StoreBytes *key)
{
    uint32_t len;
    if (*off >= keys->len)
        return false;
    memcpy(&len, keys->data + *off, sizeof len);
    *key = (StoreBytes){keys->data + *off + sizeof len, len};
    *off += sizeof len + len;
    return true;
}
