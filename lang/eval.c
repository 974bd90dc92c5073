/* eval.c — sessions and statements: each statement of seed 000 as
 * store calls, inside one store transaction per statement (or per BEGIN …
 * COMMIT). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "lang.h"
#include "parse.h"

struct LangSession {
    Store *store;
    char  *consumer;       /* USE CONSUMER name, or NULL */
    char   instance[LANG_INSTANCE_LEN + 1]; /* minted per session and per USE CONSUMER */
    bool   in_txn;         /* between BEGIN and COMMIT / CANCEL */
    Stmt **pending;        /* statements queued since BEGIN */
    size_t npending, cap;
    bool (*interrupted)(void *ctx);   /* polled while a CLAIM … WAIT blocks */
    void  *interrupt_ctx;
    LangUnclaim *undo;                /* when set, a claim keeps here how to undo it */
    struct {                          /* who is asking (lang_session_set_caller) */
        bool     known, enforce;
        uint32_t uid, gid;
        uint32_t groups[64];
        int      ngroups;
    } caller;
    struct LangRest *rest;            /* work kept for lang_session_continue, or NULL */
    LangNameRule name_rule;           /* the caller's rule for table names, or NULL */
    void        *name_rule_ctx;
};

/* What one statement runs with. */
typedef struct Exec {
    LangSession *s;
    StoreTxn    *txn;
    int64_t      now;
    Buf         *out;      /* the result line */
    LangError   *err;
    bool         spare_counters;  /* a delete on a full disk leaves the count alone */
    Buf         *changed;  /* UPDATE: collects the changed records' store keys
                              instead of answering them (a streamed answer) */
} Exec;

void
lang_instance_mint(char out[LANG_INSTANCE_LEN + 1])
{
    static _Atomic uint64_t counter;
    unsigned char raw[LANG_INSTANCE_LEN / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        /* No entropy: the clock, the process and a counter still make it unique. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t parts[2] = {(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                             (uint64_t)getpid() << 32 | (counter++ & 0xffffffffu)};
        memcpy(raw, parts, sizeof raw);
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

LangSession *
lang_session_new(Store *store, const char *consumer, const char *instance)
{
    LangSession *s = xcalloc(1, sizeof *s);
    s->store = store;
    s->consumer = consumer ? xstrdup(consumer) : NULL;
    if (instance)
        memcpy(s->instance, instance, strnlen(instance, LANG_INSTANCE_LEN));
    else
        lang_instance_mint(s->instance);
    return s;
}

static void
drop_pending(LangSession *s)
{
    for (size_t i = 0; i < s->npending; i++)
        stmt_free(s->pending[i]);
    s->npending = 0;
    s->in_txn = false;
}

static void rest_free(LangSession *s);

void
lang_session_free(LangSession *s)
{
    if (!s)
        return;
    rest_free(s);
    drop_pending(s);
    free(s->pending);
    free(s->consumer);
    free(s);
}

bool
lang_session_in_transaction(const LangSession *s)
{
    return s->in_txn;
}

void
lang_session_set_caller(LangSession *s, uint32_t uid, uint32_t gid, const uint32_t *groups,
                        int ngroups, bool enforce)
{
    s->caller.known = true;
    s->caller.enforce = enforce;
    s->caller.uid = uid;
    s->caller.gid = gid;
    s->caller.ngroups = 0;
    for (int i = 0; i < ngroups && i < 64; i++)
        s->caller.groups[s->caller.ngroups++] = groups[i];
}

void
lang_session_set_interrupt(LangSession *s, bool (*interrupted)(void *ctx), void *ctx)
{
    s->interrupted = interrupted;
    s->interrupt_ctx = ctx;
}

/* ---- helpers shared by the statements ---- */

/* Appends "records" (an array) as the result line and frees it. */
static void
answer(Exec *x, Value *v)
{
    value_to_json(v, x->out);
    value_free(v);
}

/* Ends a data statement: its answer "records" becomes the result line, or,
 * when the statement failed, is dropped and the error returned. */
static LangErrorCode
answer_records(Exec *x, Value *records)
{
    if (x->err->code) {
        value_free(records);
        return x->err->code;
    }
    answer(x, records);
    return LANG_OK;
}

LangErrorCode
check_access(const LangSession *s, const TableDef *def, int want, LangError *err)
{
    if (!s->caller.enforce || s->caller.uid == 0)
        return LANG_OK;
    if (def->uid < 0)
        return LANG_OK;   /* no owner known, not even the store's: as open as the mount */
    bool owner = (int64_t)s->caller.uid == def->uid;
    if (want == ACCESS_OWNER) {
        if (owner)
            return LANG_OK;
        return lang_error_set(err, LANG_PERMISSION, "only the owner of '%s' may do that",
                              def->decl.name);
    }
    bool group = (int64_t)s->caller.gid == def->gid;
    for (int i = 0; i < s->caller.ngroups && !group; i++)
        group = (int64_t)s->caller.groups[i] == def->gid;
    int64_t mode = def->mode >= 0 ? def->mode : 0755;
    int bits = (int)(owner ? mode >> 6 : group ? mode >> 3 : mode) & 7;
    if ((bits & want) == want)
        return LANG_OK;
    return lang_error_set(err, LANG_PERMISSION, "permission denied: %s of '%s' (mode %04llo)",
                          want == ACCESS_READ ? "reading" : "changing", def->decl.name,
                          (long long)mode);
}

/* Loads table "name" for a statement that needs "want" on it. */
static LangErrorCode
load_table(Exec *x, const char *name, int want, TableDef *def)
{
    if (table_def_load(x->txn, name, def, x->err))
        return x->err->code;
    if (check_access(x->s, def, want, x->err)) {
        table_def_free(def);
        return x->err->code;
    }
    return LANG_OK;
}

/* Loads queue "table" for a statement that needs "want" on it. */
static LangErrorCode
load_queue(Exec *x, const char *table, int want, TableDef *def)
{
    if (load_table(x, table, want, def))
        return x->err->code;
    if (!def->is_queue) {
        table_def_free(def);
        return lang_error_set(x->err, LANG_WRONG_KIND, "'%s' is a collection, not a queue",
                              table);
    }
    return LANG_OK;
}

LangErrorCode
lang_table_name_check(const char *name, size_t len, LangError *err)
{
    if (len == 0 || len > LANG_TABLE_NAME_MAX)
        return lang_error_set(err, LANG_PARSE_ERROR,
                              "a table name is 1 to %d bytes, not %zu", LANG_TABLE_NAME_MAX, len);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return lang_error_set(err, LANG_PARSE_ERROR,
                                  "a table name cannot hold control characters");
    if (!utf8_valid(name, len))
        return lang_error_set(err, LANG_PARSE_ERROR,
                              "a table name must be valid UTF-8, as a statement spells it");
    return LANG_OK;
}

void
lang_session_set_name_rule(LangSession *s, LangNameRule rule, void *ctx)
{
    s->name_rule = rule;
    s->name_rule_ctx = ctx;
}

LangErrorCode
check_table_name(const LangSession *s, const char *name, LangError *err)
{
    if (lang_table_name_check(name, strlen(name), err))
        return err->code;
    return s->name_rule ? s->name_rule(s->name_rule_ctx, name, err) : LANG_OK;
}

/* Evaluates record content: it must be an object. */
static LangErrorCode
eval_content(Exec *x, const Expr *e, const Value *record, Value *out)
{
    EvalContext cx = {record, x->now};
    if (!e) {
        *out = value_object();
        return LANG_OK;
    }
    if (expr_eval(e, &cx, out, x->err))
        return x->err->code;
    if (out->kind != VAL_OBJECT) {
        lang_error_set(x->err, LANG_TYPE_ERROR, "record content must be an object, not %s",
                       value_kind_name(out->kind));
        value_free(out);
        return LANG_TYPE_ERROR;
    }
    return LANG_OK;
}

/* True when an `id` given in content names record "key" of "table". */
static bool
id_matches(const Value *id, const char *table, const Value *key)
{
    if (id->kind == VAL_RECORD)
        return strcmp(id->u.rec.table, table) == 0 && value_equal(id->u.rec.key, key);
    if (id->kind == VAL_STRING) {
        RecordId rid = {(char *)table, (Value *)key};
        Buf b = {0};
        record_id_format(&rid, &b);
        bool same = b.len == id->u.str.len && memcmp(b.data, id->u.str.s, b.len) == 0;
        buf_free(&b);
        return same;
    }
    return value_equal(id, key);
}

/* Takes `id` out of "content"; refuses one that names another record
 * ("key" NULL: the store names the record, so no id may be given). */
static LangErrorCode
strip_id(Exec *x, Value *content, const char *table, const Value *key)
{
    const Value *id = value_object_get(content, "id");
    if (!id)
        return LANG_OK;
    if (!key || !id_matches(id, table, key))
        return lang_error_set(x->err, LANG_SCHEMA_VIOLATION,
                              "the content's id does not name the record written");
    value_object_remove(content, "id");
    return LANG_OK;
}

/* True when "incoming" repeats the engine's value "stored": equal, or the
 * same instant written as an RFC 3339 string (a record read back as JSON). */
static bool
engine_value_same(const Value *stored, const Value *incoming)
{
    int64_t ns;
    if (stored->kind == VAL_DATETIME && incoming->kind == VAL_STRING)
        return datetime_parse(incoming->u.str.s, incoming->u.str.len, &ns) == 0 &&
               ns == stored->u.ns;
    return value_equal(stored, incoming);
}

static const char *const engine_fields[] = {FIELD_ATTEMPTS, FIELD_CLAIMED_UNTIL,
                                            FIELD_CLAIMED_BY, FIELD_HOLD};

/* On a queue, "incoming" may not introduce, change or remove the engine's
 * fields of "old" (NULL for a new record).  A field "incoming" repeats
 * takes the engine's own value (a claimed_until read back as a string
 * stays a datetime, so the hold stays live); with "carry", fields that
 * "incoming" leaves out are copied from "old" (a whole-record write). */
static LangErrorCode
guard_engine_fields(Exec *x, const TableDef *def, const Value *old, Value *incoming,
                    bool carry)
{
    if (!def->is_queue)
        return LANG_OK;
    for (size_t i = 0; i < sizeof engine_fields / sizeof *engine_fields; i++) {
        const char *f = engine_fields[i];
        const Value *was = old ? value_object_get(old, f) : NULL;
        const Value *now = value_object_get(incoming, f);
        if (now && !(was && engine_value_same(was, now)))
            return lang_error_set(x->err, LANG_ENGINE_FIELD,
                                  "'%s' on queue '%s' belongs to the engine: a write may not "
                                  "set or change it",
                                  f, def->decl.name);
        if (was && (now || carry))
            value_object_set(incoming, f, value_clone(was));
    }
    return LANG_OK;
}

#define META_NEXT_ID "next_id"
/* What META_NEXT_ID holds once the largest integer has been held: no
 * identity is left for the store to assign. */
#define NEXT_ID_EXHAUSTED INT64_MIN

static bool record_exists(Exec *x, const TableDef *def, const Value *key);

/* The identity the store assigns: 1 + the greatest integer ever held.
 * IdentitiesExhausted when that would pass the largest integer (or when
 * the identity is taken, as a store from before the exhausted mark may
 * have it): a store-assigned CREATE never replaces a record. */
static LangErrorCode
next_identity(Exec *x, const TableDef *def, Value *key)
{
    int64_t next;
    if (meta_get_i64(x->txn, def->id, META_NEXT_ID, strlen(META_NEXT_ID), &next, x->err))
        return x->err->code;
    if (next < 1 && next != NEXT_ID_EXHAUSTED)
        next = 1;
    *key = value_int(next == NEXT_ID_EXHAUSTED ? INT64_MAX : next);
    if (next == NEXT_ID_EXHAUSTED || (next == INT64_MAX && record_exists(x, def, key)))
        return lang_error_set(x->err, LANG_IDS_EXHAUSTED,
                              "table '%s' has held identity %lld, the largest integer: the "
                              "store has no identity left to assign (name the record)",
                              def->decl.name, (long long)INT64_MAX);
    return LANG_OK;
}

/* Remembers that integer identity "key" has been held. */
static LangErrorCode
note_identity(Exec *x, const TableDef *def, const Value *key)
{
    if (key->kind != VAL_INT)
        return LANG_OK;
    int64_t next;
    if (meta_get_i64(x->txn, def->id, META_NEXT_ID, strlen(META_NEXT_ID), &next, x->err))
        return x->err->code;
    if (next == NEXT_ID_EXHAUSTED || key->u.i < next)
        return LANG_OK;
    return meta_put_i64(x->txn, def->id, META_NEXT_ID, strlen(META_NEXT_ID),
                        key->u.i == INT64_MAX ? NEXT_ID_EXHAUSTED : key->u.i + 1, x->err);
}

/* DEDUPLICATE: true in "*repeat" when "key" was first written less than
 * the window ago; otherwise starts a new window at now. */
static LangErrorCode
deduplicate(Exec *x, const TableDef *def, const Value *key, bool *repeat)
{
    Buf name = {0};
    buf_puts(&name, "dedup:");
    record_key_encode(key, &name);
    int64_t first;
    *repeat = false;
    LangErrorCode rc = meta_get_i64(x->txn, def->id, name.data, name.len, &first, x->err);
    if (!rc && first && x->now - first < def->decl.deduplicate_ns)
        *repeat = true;
    else if (!rc)
        rc = meta_put_i64(x->txn, def->id, name.data, name.len, x->now, x->err);
    buf_free(&name);
    return rc;
}

static bool
record_exists(Exec *x, const TableDef *def, const Value *key)
{
    Buf kb = {0};
    record_key_encode(key, &kb);
    StoreBytes v;
    int rc = store_record_get(x->txn, def->id, (StoreBytes){kb.data, kb.len}, &v, NULL);
    buf_free(&kb);
    return rc == STORE_OK;
}

/* Collects the identities of every record of a table (so statements can
 * change records while walking them). */
static int
collect_key(void *ctx, StoreBytes key, StoreBytes value)
{
    (void)key;
    Record r = {0};
    LangError ignored = {0};
    if (record_decode(value, &r, &ignored) == LANG_OK)
        value_array_push(ctx, value_clone(&r.key));
    record_free(&r);
    return 0;
}

/* The identities a target names: one record, or all of a table's. */
static LangErrorCode
target_keys(Exec *x, const TableDef *def, const Target *t, Value *keys)
{
    *keys = value_array();
    if (t->id.kind == VAL_RECORD) {
        value_array_push(keys, value_clone(t->id.u.rec.key));
        return LANG_OK;
    }
    int rc = store_record_each(x->txn, def->id, (StoreBytes){NULL, 0}, collect_key, keys);
    return rc ? store_error(rc, "reading records", x->err) : LANG_OK;
}

/* True when "where" (NULL: always) holds for record view "view". */
static LangErrorCode
matches(Exec *x, const Expr *where, const Value *view, bool *yes)
{
    *yes = true;
    if (!where)
        return LANG_OK;
    EvalContext cx = {view, x->now};
    Value v;
    if (expr_eval(where, &cx, &v, x->err))
        return x->err->code;
    *yes = value_truthy(&v);
    value_free(&v);
    return LANG_OK;
}

/* ---- DEFINE ---- */

static TableDecl
decl_copy(const TableDecl *d)
{
    TableDecl c = *d;
    c.name = xstrdup(d->name);
    c.priority_by = d->priority_by ? xstrdup(d->priority_by) : NULL;
    c.not_before = d->not_before ? xstrdup(d->not_before) : NULL;
    c.graph = d->graph ? xstrdup(d->graph) : NULL;
    return c;
}

/* True, with WrongKind (or the error loading it) in x->err, unless the
 * existing table "name" is of the kind a DEFINE … IF NOT EXISTS asks for:
 * a queue when "queue", else a collection. */
static bool
existing_kind_differs(Exec *x, const char *name, bool queue)
{
    TableDef def;
    if (table_def_load(x->txn, name, &def, x->err))
        return true;
    bool differs = def.is_queue != queue;
    table_def_free(&def);
    if (differs)
        lang_error_set(x->err, LANG_WRONG_KIND,
                       "'%s' exists and is a %s, not a %s: DEFINE %s IF NOT EXISTS refuses it",
                       name, queue ? "collection" : "queue", queue ? "queue" : "collection",
                       queue ? "QUEUE" : "COLLECTION");
    return differs;
}

/* define_table -> DEFINE (QUEUE | COLLECTION) … */
static LangErrorCode
exec_define_table(Exec *x, const Stmt *st)
{
    const TableDecl *d = &st->u.define_table;
    if (check_table_name(x->s, d->name, x->err))
        return x->err->code;
    TableDef def = {0};
    def.is_queue = st->kind == ST_DEFINE_QUEUE;
    def.decl = decl_copy(d);
    def.uid = x->s->caller.known ? (int64_t)x->s->caller.uid : -1;
    def.gid = x->s->caller.known ? (int64_t)x->s->caller.gid : -1;
    def.mode = d->mode > 0 ? d->mode & 07777 : -1;
    Buf b = {0};
    table_def_encode(&def, &b);
    int rc = store_table_create(x->txn, d->name, (StoreBytes){b.data, b.len}, &def.id);
    buf_free(&b);
    table_def_free(&def);
    if (rc == STORE_EXISTS && !d->if_not_exists)
        return lang_error_set(x->err, LANG_TABLE_EXISTS, "a table named '%s' already exists",
                              d->name);
    if (rc == STORE_EXISTS && existing_kind_differs(x, d->name, st->kind == ST_DEFINE_QUEUE))
        return x->err->code;
    if (rc && rc != STORE_EXISTS)
        return store_error(rc, "defining a table", x->err);
    buf_puts(x->out, "null");
    return LANG_OK;
}

static LangErrorCode
save_def(Exec *x, const TableDef *def)
{
    Buf b = {0};
    table_def_encode(def, &b);
    int rc = store_table_redefine(x->txn, def->decl.name, (StoreBytes){b.data, b.len});
    buf_free(&b);
    if (rc)
        return store_error(rc, "updating a definition", x->err);
    buf_puts(x->out, "null");
    return LANG_OK;
}

/* define_field -> DEFINE FIELD name ON table [TYPE t] [REQUIRED] */
static LangErrorCode
exec_define_field(Exec *x, const Stmt *st)
{
    TableDef def;
    if (load_table(x, st->u.define_field.table, ACCESS_OWNER, &def))
        return x->err->code;
    size_t i;
    for (i = 0; i < def.nfields; i++)
        if (strcmp(def.fields[i].name, st->u.define_field.name) == 0)
            break;
    if (i == def.nfields) {
        def.fields = xrealloc(def.fields, (def.nfields + 1) * sizeof *def.fields);
        def.fields[def.nfields++] = (FieldDef){xstrdup(st->u.define_field.name), NULL, false};
    }
    free(def.fields[i].type);
    def.fields[i].type = st->u.define_field.type ? xstrdup(st->u.define_field.type) : NULL;
    def.fields[i].required = st->u.define_field.required;
    LangErrorCode rc = save_def(x, &def);
    table_def_free(&def);
    return rc;
}

/* define_index -> DEFINE INDEX name ON table FIELDS f {, f} */
static LangErrorCode
exec_define_index(Exec *x, const Stmt *st)
{
    TableDef def;
    if (load_table(x, st->u.define_index.table, ACCESS_OWNER, &def))
        return x->err->code;
    size_t i;
    for (i = 0; i < def.nindexes; i++)
        if (strcmp(def.indexes[i].name, st->u.define_index.name) == 0)
            break;
    if (i == def.nindexes) {
        def.indexes = xrealloc(def.indexes, (def.nindexes + 1) * sizeof *def.indexes);
        def.indexes[def.nindexes++] = (IndexDef){xstrdup(st->u.define_index.name), NULL, 0};
    }
    IndexDef *ix = &def.indexes[i];
    for (size_t j = 0; j < ix->nfields; j++)
        free(ix->fields[j]);
    free(ix->fields);
    ix->nfields = st->u.define_index.nfields;
    ix->fields = xcalloc(ix->nfields, sizeof *ix->fields);
    for (size_t j = 0; j < ix->nfields; j++)
        ix->fields[j] = xstrdup(st->u.define_index.fields[j]);
    LangErrorCode rc = save_def(x, &def);
    table_def_free(&def);
    return rc;
}

/* ---- CREATE, UPDATE, DELETE, SELECT ---- */

/* create -> CREATE target [(= | CONTENT) expr] */
static LangErrorCode
exec_create(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.write.target;
    TableDef def;
    if (load_table(x, t->table, ACCESS_WRITE, &def))
        return x->err->code;
    Record r = {0};
    Value results = value_array();
    const Value *named = t->id.kind == VAL_RECORD ? t->id.u.rec.key : NULL;
    bool repeat = false;
    if (eval_content(x, st->u.write.content, NULL, &r.fields) ||
        strip_id(x, &r.fields, t->table, named) ||
        guard_engine_fields(x, &def, NULL, &r.fields, false) ||
        record_validate(&def, &r.fields, x->err))
        goto done;
    if (named) {
        r.key = value_clone(named);
        if (def.is_queue && def.decl.deduplicate_ns && deduplicate(x, &def, named, &repeat))
            goto done;
        if (repeat)
            goto done;
        if (record_exists(x, &def, named)) {
            Buf name = {0};
            record_id_format(&t->id.u.rec, &name);
            lang_error_set(x->err, LANG_RECORD_EXISTS, "record %s already exists", name.data);
            buf_free(&name);
            goto done;
        }
    } else if (next_identity(x, &def, &r.key)) {
        goto done;
    }
    r.since = r.written = r.changed = x->now;
    if (note_identity(x, &def, &r.key) || record_store(x->txn, &def, &r, x->now, x->err))
        goto done;
    value_array_push(&results, record_view(&r, &def));
done:
    record_free(&r);
    table_def_free(&def);
    return answer_records(x, &results);
}

/* Appends the store key of "key" to "keys", after its length (4 bytes). */
static void
changed_key(Buf *keys, const Value *key)
{
    Buf kb = {0};
    record_key_encode(key, &kb);
    uint32_t len = (uint32_t)kb.len;
    buf_append(keys, &len, sizeof len);
    buf_append(keys, kb.data, kb.len);
    buf_free(&kb);
}

/* update -> UPDATE target (= | CONTENT | MERGE) expr [WHERE expr] */
static LangErrorCode
exec_update(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.write.target;
    TableDef def;
    if (load_table(x, t->table, ACCESS_WRITE, &def))
        return x->err->code;
    Value keys, results = value_array();
    if (target_keys(x, &def, t, &keys)) {
        table_def_free(&def);
        return x->err->code;
    }
    for (size_t i = 0; i < keys.u.arr.len && !x->err->code; i++) {
        Record r = {0};
        Value view = {0}, content = {0};
        bool yes;
        if (record_load(x->txn, &def, &keys.u.arr.items[i], &r, x->err))
            break;
        view = record_view(&r, &def);
        if (matches(x, st->u.write.where, &view, &yes) || !yes ||
            eval_content(x, st->u.write.content, &view, &content) ||
            strip_id(x, &content, t->table, &r.key))
            goto next;
        if (st->u.write.mode == WRITE_MERGE) {
            if (guard_engine_fields(x, &def, &r.fields, &content, false))
                goto next;
            for (size_t j = 0; j < content.u.obj.len; j++)
                value_object_set(&r.fields, content.u.obj.keys[j],
                                 value_clone(&content.u.obj.vals[j]));
        } else {
            if (guard_engine_fields(x, &def, &r.fields, &content, true))
                goto next;
            value_free(&r.fields);
            r.fields = content;
            content = value_none();
        }
        r.written = x->now;
        if (record_validate(&def, &r.fields, x->err) ||
            record_store(x->txn, &def, &r, x->now, x->err))
            goto next;
        if (x->changed)
            changed_key(x->changed, &r.key);
        else
            value_array_push(&results, record_view(&r, &def));
    next:
        value_free(&view);
        value_free(&content);
        record_free(&r);
    }
    value_free(&keys);
    table_def_free(&def);
    return answer_records(x, &results);
}

/* The file view's write of a named record: a whole-record UPDATE of the
 * record when it exists, else its CREATE. */
static LangErrorCode
exec_upsert(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.write.target;
    TableDef def;
    if (load_table(x, t->table, ACCESS_WRITE, &def))
        return x->err->code;
    bool exists = record_exists(x, &def, t->id.u.rec.key);
    table_def_free(&def);
    return exists ? exec_update(x, st) : exec_create(x, st);
}

static LangErrorCode
check_fence(Exec *x, const TableDef *def, const Record *r, int64_t fence)
{
    return record_fence(def, r, fence, x->now, x->err);
}

/* delete -> DELETE [FROM] target [WHERE expr] */
static LangErrorCode
exec_delete(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.del.target;
    TableDef def;
    if (load_table(x, t->table, ACCESS_WRITE, &def))
        return x->err->code;
    Value keys;
    if (target_keys(x, &def, t, &keys)) {
        table_def_free(&def);
        return x->err->code;
    }
    for (size_t i = 0; i < keys.u.arr.len && !x->err->code; i++) {
        Record r = {0};
        bool yes = true;
        if (record_load(x->txn, &def, &keys.u.arr.items[i], &r, x->err))
            break;
        if (st->u.del.where) {
            Value view = record_view(&r, &def);
            matches(x, st->u.del.where, &view, &yes);
            value_free(&view);
        }
        if (!x->err->code && st->u.del.fence)
            check_fence(x, &def, &r, st->u.del.fence);
        if (!x->err->code && yes) {
            Buf kb = {0};
            record_key_encode(&r.key, &kb);
            int rc = store_record_delete(x->txn, def.id, (StoreBytes){kb.data, kb.len});
            buf_free(&kb);
            if (rc)
                store_error(rc, "deleting a record", x->err);
            else if (def.is_queue && !x->spare_counters)
                counter_add(x->txn, &def, COUNTER_DELETES, 1, x->err);
        }
        record_free(&r);
    }
    value_free(&keys);
    table_def_free(&def);
    if (x->err->code)
        return x->err->code;
    buf_puts(x->out, "[]");
    return LANG_OK;
}

/* Sets "v" at path "parts" inside object "o", making objects on the way. */
static void
object_set_path(Value *o, char *const *parts, size_t len, Value v)
{
    for (size_t i = 0; i + 1 < len; i++) {
        Value *next = (Value *)value_object_get(o, parts[i]);
        if (!next || next->kind != VAL_OBJECT) {
            value_object_set(o, parts[i], value_object());
            next = (Value *)value_object_get(o, parts[i]);
        }
        o = next;
    }
    value_object_set(o, parts[len - 1], v);
}

/* One SELECT row: the whole record, or the fields asked for. */
static LangErrorCode
project(Exec *x, const Stmt *st, const Value *view, Value *row)
{
    if (st->u.select.star) {
        *row = value_clone(view);
        return LANG_OK;
    }
    *row = value_object();
    EvalContext cx = {view, x->now};
    for (size_t i = 0; i < st->u.select.nfields; i++) {
        const SelectField *f = &st->u.select.fields[i];
        Value v;
        if (expr_eval(f->expr, &cx, &v, x->err)) {
            value_free(row);
            return x->err->code;
        }
        if (f->alias) {
            value_object_set(row, f->alias, v);
        } else if (f->expr->kind == EX_FIELD) {
            object_set_path(row, f->expr->u.path.parts, f->expr->u.path.len, v);
        } else {
            char name[32];
            snprintf(name, sizeof name, "expr%zu", i + 1);
            value_object_set(row, name, v);
        }
    }
    return LANG_OK;
}

/* The ORDER BY terms qsort compares by (qsort has no context argument). */
static __thread const Stmt *sort_stmt;

static int
compare_rows(const void *pa, const void *pb)
{
    const Value *a = pa, *b = pb;
    for (size_t i = 0; i < sort_stmt->u.select.norder; i++) {
        const OrderTerm *o = &sort_stmt->u.select.order[i];
        const Value *va = value_path_get(a, o->parts, o->len);
        const Value *vb = value_path_get(b, o->parts, o->len);
        Value none = value_none();
        int c = value_compare(va ? va : &none, vb ? vb : &none);
        if (c)
            return o->descending ? -c : c;
    }
    return 0;
}

/* select -> SELECT fields FROM target [WHERE] [ORDER BY] [LIMIT] */
static LangErrorCode
exec_select(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.select.from;
    TableDef def;
    if (load_table(x, t->table, ACCESS_READ, &def))
        return x->err->code;
    Value keys, views = value_array(), rows = value_array();
    if (target_keys(x, &def, t, &keys)) {
        table_def_free(&def);
        return x->err->code;
    }
    for (size_t i = 0; i < keys.u.arr.len && !x->err->code; i++) {
        Record r = {0};
        LangError missing = {0};
        if (record_load(x->txn, &def, &keys.u.arr.items[i], &r, &missing)) {
            if (missing.code != LANG_NO_SUCH_RECORD)
                *x->err = missing;
            record_free(&r);
            continue;   /* SELECT of a record that does not exist answers [] */
        }
        Value view = record_view(&r, &def);
        bool yes;
        if (!matches(x, st->u.select.where, &view, &yes) && yes)
            value_array_push(&views, view);
        else
            value_free(&view);
        record_free(&r);
    }
    if (!x->err->code && st->u.select.norder && views.u.arr.len) {
        sort_stmt = st;
        qsort(views.u.arr.items, views.u.arr.len, sizeof(Value), compare_rows);
    }
    size_t n = views.u.arr.len;
    if (st->u.select.limit >= 0 && (uint64_t)st->u.select.limit < n)
        n = (size_t)st->u.select.limit;
    for (size_t i = 0; i < n && !x->err->code; i++) {
        Value row;
        if (!project(x, st, &views.u.arr.items[i], &row))
            value_array_push(&rows, row);
    }
    value_free(&keys);
    value_free(&views);
    table_def_free(&def);
    return answer_records(x, &rows);
}

/* ---- CLAIM and RELEASE ---- */

/* Takes the hold on "r" for the session: counts the attempt, numbers the
 * hold (the store's next hold number), sets the deadline and signs it
 * when the session has a consumer. */
static LangErrorCode
take_hold(Exec *x, const TableDef *def, Record *r, Value *results)
{
    const Value *a = value_object_get(&r->fields, FIELD_ATTEMPTS);
    int64_t attempts = a && a->kind == VAL_INT ? a->u.i : 0, hold;
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
    int64_t until = x->now + def->decl.timeout_ns;
    if (until < x->now)
        until = INT64_MAX;
    value_object_set(&r->fields, FIELD_CLAIMED_UNTIL, value_datetime(until));
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
static LangErrorCode
exec_claim(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.claim.target;
    if (st->u.claim.count > CLAIM_CEILING)
        return lang_error_set(x->err, LANG_CLAIM_CEILING,
                              "CLAIM %lld is above the ceiling of %d records per claim",
                              (long long)st->u.claim.count, CLAIM_CEILING);
    TableDef def;
    if (load_queue(x, t->table, st->u.claim.explain ? ACCESS_READ : ACCESS_WRITE, &def))
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
                store_error(rc, "finding the head of the queue", x->err);
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
    return answer_records(x, &results);
}

/* The instant a NOT BEFORE clause names: a datetime, or now + a duration. */
static LangErrorCode
eval_not_before(Exec *x, const Expr *e, int64_t *at)
{
    EvalContext cx = {NULL, x->now};
    Value v;
    if (expr_eval(e, &cx, &v, x->err))
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
        char *path = xstrdup(def->decl.not_before), *parts[64], *save = NULL;
        size_t n = 0;
        for (char *tok = strtok_r(path, ".", &save); tok && n < 64;
             tok = strtok_r(NULL, ".", &save))
            parts[n++] = tok;
        object_set_path(&r->fields, parts, n, value_datetime(delay_to));
        free(path);
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

/* release -> RELEASE record [NOT BEFORE expr] [FOR CONSUMER name] */
static LangErrorCode
exec_release(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.release.target;
    TableDef def;
    if (load_queue(x, t->table, ACCESS_WRITE, &def))
        return x->err->code;
    Value results = value_array();
    Record r = {0};
    int64_t delay_to = 0;
    if (st->u.release.not_before && !def.decl.not_before) {
        lang_error_set(x->err, LANG_NO_DELAY_FIELD,
                       "queue '%s' declares no NOT BEFORE field", def.decl.name);
        goto done;
    }
    if ((st->u.release.not_before && eval_not_before(x, st->u.release.not_before, &delay_to)) ||
        record_load(x->txn, &def, t->id.u.rec.key, &r, x->err) ||
        (st->u.release.fence && check_fence(x, &def, &r, st->u.release.fence)) ||
        !record_is_held(&r, x->now))
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
    return answer_records(x, &results);
}

static int
collect_waiting(void *ctx, StoreBytes key, int64_t wake_ns)
{
    (void)wake_ns;
    Buf *keys = ctx;
    uint32_t len = (uint32_t)key.len;
    buf_append(keys, &len, sizeof len);
    buf_append(keys, key.data, key.len);
    return 0;
}

/* release_all -> RELEASE ALL FROM table [FOR CONSUMER name] [NOT BEFORE expr] */
static LangErrorCode
exec_release_all(Exec *x, const Stmt *st)
{
    TableDef def;
    if (load_queue(x, st->u.release.target.table, ACCESS_WRITE, &def))
        return x->err->code;
    Value results = value_array();
    int64_t delay_to = 0;
    Buf keys = {0};
    if (st->u.release.not_before && !def.decl.not_before) {
        lang_error_set(x->err, LANG_NO_DELAY_FIELD,
                       "queue '%s' declares no NOT BEFORE field", def.decl.name);
        goto done;
    }
    if (st->u.release.not_before && eval_not_before(x, st->u.release.not_before, &delay_to))
        goto done;
    int rc = store_queue_each_waiting(x->txn, def.id, collect_waiting, &keys);
    if (rc) {
        store_error(rc, "walking the holds", x->err);
        goto done;
    }
    const char *group = st->u.release.for_consumer;
    for (size_t off = 0; off < keys.len && !x->err->code;) {
        uint32_t len;
        memcpy(&len, keys.data + off, sizeof len);
        StoreBytes kb = {keys.data + off + sizeof len, len}, val;
        off += sizeof len + len;
        Record r = {0};
        if ((rc = store_record_get(x->txn, def.id, kb, &val, NULL))) {
            store_error(rc, "reading a hold", x->err);
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
    return answer_records(x, &results);
}

/* touch -> TOUCH record: the hold's deadline becomes now + TIMEOUT. */
static LangErrorCode
exec_touch(Exec *x, const Stmt *st)
{
    const Target *t = &st->u.release.target;
    TableDef def;
    if (load_queue(x, t->table, ACCESS_WRITE, &def))
        return x->err->code;
    Value results = value_array();
    Record r = {0};
    Buf name = {0};
    record_id_format(&t->id.u.rec, &name);
    if (record_load(x->txn, &def, t->id.u.rec.key, &r, x->err) ||
        (st->u.release.fence && check_fence(x, &def, &r, st->u.release.fence)))
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
    int64_t until;
    if (__builtin_add_overflow(x->now, def.decl.timeout_ns, &until))
        until = INT64_MAX;
    value_object_set(&r.fields, FIELD_CLAIMED_UNTIL, value_datetime(until));
    r.changed = x->now;
    if (!record_store(x->txn, &def, &r, x->now, x->err))
        value_array_push(&results, record_view(&r, &def));
done:
    buf_free(&name);
    record_free(&r);
    table_def_free(&def);
    return answer_records(x, &results);
}

/* ---- the rest ---- */

/* info -> INFO FOR TABLE name */
static LangErrorCode
exec_info(Exec *x, const Stmt *st)
{
    TableDef def;
    if (load_table(x, st->u.table_op.table, ACCESS_READ, &def))
        return x->err->code;
    Value info = table_def_info(&def);
    table_def_free(&def);
    answer(x, &info);
    return LANG_OK;
}

/* drop -> DROP (QUEUE | COLLECTION | TABLE) name */
static LangErrorCode
exec_drop(Exec *x, const Stmt *st)
{
    TableDef def;
    const char *name = st->u.table_op.table;
    if (load_table(x, name, ACCESS_OWNER, &def))
        return x->err->code;
    bool is_queue = def.is_queue;
    table_def_free(&def);
    int want = st->u.table_op.kind;
    if ((want == 1 && !is_queue) || (want == 2 && is_queue))
        return lang_error_set(x->err, LANG_WRONG_KIND, "'%s' is a %s: DROP %s refuses it", name,
                              is_queue ? "queue" : "collection",
                              want == 1 ? "QUEUE" : "COLLECTION");
    int rc = store_table_drop(x->txn, name);
    if (rc)
        return store_error(rc, "dropping a table", x->err);
    buf_puts(x->out, "null");
    return LANG_OK;
}

/* use -> USE CONSUMER name */
static LangErrorCode
exec_use_consumer(Exec *x, const Stmt *st)
{
    free(x->s->consumer);
    x->s->consumer = xstrdup(st->u.use_consumer.name);
    lang_instance_mint(x->s->instance);
    buf_puts(x->out, "null");
    return LANG_OK;
}

static LangErrorCode
exec_stmt(Exec *x, const Stmt *st)
{
    switch (st->kind) {
    case ST_DEFINE_QUEUE:
    case ST_DEFINE_COLLECTION: return exec_define_table(x, st);
    case ST_DEFINE_FIELD: return exec_define_field(x, st);
    case ST_DEFINE_INDEX: return exec_define_index(x, st);
    case ST_CREATE: return exec_create(x, st);
    case ST_UPDATE: return exec_update(x, st);
    case ST_UPSERT: return exec_upsert(x, st);
    case ST_DELETE: return exec_delete(x, st);
    case ST_SELECT: return exec_select(x, st);
    case ST_CLAIM: return exec_claim(x, st);
    case ST_RELEASE: return exec_release(x, st);
    case ST_RELEASE_ALL: return exec_release_all(x, st);
    case ST_TOUCH: return exec_touch(x, st);
    case ST_USE_CONSUMER: return exec_use_consumer(x, st);
    case ST_INFO_TABLE: return exec_info(x, st);
    case ST_DROP: return exec_drop(x, st);
    case ST_BEGIN:
    case ST_COMMIT:
    case ST_CANCEL: break;
    }
    return lang_error_set(x->err, LANG_PARSE_ERROR, "unexpected statement");
}

/* True for statements that never change the store. */
static bool
read_only(const Stmt *st)
{
    return st->kind == ST_SELECT || st->kind == ST_INFO_TABLE ||
           (st->kind == ST_CLAIM && st->u.claim.explain);
}

/* True for statements that add or enlarge nothing but what a claim,
 * release, touch, delete or drop does: the store lets them use its
 * reserve, so they keep working on a full store. */
static bool
uses_reserve(const Stmt *st)
{
    switch (st->kind) {
    case ST_CLAIM:
    case ST_RELEASE:
    case ST_RELEASE_ALL:
    case ST_TOUCH:
    case ST_DELETE:
    case ST_DROP:
    case ST_USE_CONSUMER:
    case ST_SELECT:
    case ST_INFO_TABLE: return true;
    default: return false;
    }
}

Store *
session_store(const LangSession *s)
{
    return s->store;
}

/* What one run of a statement list needs, and what it leaves: the result
 * lines, and where each statement's line ends. */
typedef struct SessionRun {
    LangSession *s;
    Stmt **stmts;
    size_t n;
    const char *saved_consumer;     /* the session's identity before the run */
    const char *saved_instance;
    Buf lines;
    size_t *ends;
    LangError *err;
    bool spare_counters;
    bool reserve;                   /* every statement may use the store's reserve */
} SessionRun;

/* Puts back the consumer and instance the session had before the run. */
static void
session_restore(SessionRun *r)
{
    free(r->s->consumer);
    r->s->consumer = r->saved_consumer ? xstrdup(r->saved_consumer) : NULL;
    memcpy(r->s->instance, r->saved_instance, sizeof r->s->instance);
}

/* Runs the statements in "txn", from scratch each time it is called (the
 * store may run it again): 0, or -1 with r->err filled. */
static int
session_run_stmts(StoreTxn *txn, void *ctx)
{
    SessionRun *r = ctx;
    if (r->reserve)
        store_txn_use_reserve(txn);
    session_restore(r);
    if (r->s->undo)
        lang_unclaim_free(r->s->undo);   /* a run again claims afresh */
    buf_reset(&r->lines);
    *r->err = (LangError){0};
    Exec x = {r->s, txn, 0, &r->lines, r->err, r->spare_counters, NULL};
    for (size_t i = 0; i < r->n; i++) {
        x.now = store_now(r->s->store);
        if (exec_stmt(&x, r->stmts[i]))
            return -1;
        r->ends[i] = r->lines.len;
    }
    return 0;
}

/* Runs "stmts" in one store transaction — a write transaction shared with
 * concurrent writers (store_write) when any of them writes — emitting each
 * result only once the transaction has committed.  On failure nothing is
 * kept, not even a USE CONSUMER among them. */
LangErrorCode
session_run(LangSession *s, Stmt **stmts, size_t n, LangEmit emit, void *ctx,
                LangError *err)
{
    bool writes = false;
    for (size_t i = 0; i < n; i++)
        writes |= !read_only(stmts[i]);
    char *saved_consumer = s->consumer ? xstrdup(s->consumer) : NULL;
    char saved_instance[sizeof s->instance];
    memcpy(saved_instance, s->instance, sizeof saved_instance);

    SessionRun r = {s, stmts, n, saved_consumer, saved_instance, {0}, NULL, err, false, false};
    r.ends = xcalloc(n, sizeof *r.ends);
    bool deletes = false;
    r.reserve = true;
    for (size_t i = 0; i < n; i++) {
        deletes |= stmts[i]->kind == ST_DELETE;
        r.reserve &= uses_reserve(stmts[i]);
    }
    int rc;
    if (writes) {
        rc = store_write(s->store, session_run_stmts, &r);
        if (rc > 0)
            store_error(rc, "committing", err);
        /* On a full disk, deleting must still work: a delete needs a few
         * pages of its own, and the deletes counter may not find one more. */
        if (rc && err->code == LANG_STORE_FULL && deletes) {
            r.spare_counters = true;
            rc = store_write(s->store, session_run_stmts, &r);
            if (rc > 0)
                store_error(rc, "committing", err);
        }
    } else {
        StoreTxn *txn;
        rc = store_txn_begin(s->store, false, &txn);
        if (rc) {
            store_error(rc, "beginning a transaction", err);
        } else {
            rc = session_run_stmts(txn, &r);
            store_txn_abort(txn);
        }
    }
    if (rc) {
        session_restore(&r);
        free(saved_consumer);
        free(r.ends);
        buf_free(&r.lines);
        return err->code;
    }
    for (size_t i = 0, start = 0; i < n; start = r.ends[i], i++)
        if (emit)
            emit(ctx, r.lines.data + start, r.ends[i] - start);
    free(saved_consumer);
    free(r.ends);
    buf_free(&r.lines);
    return LANG_OK;
}

/* The earliest wake instant among a queue's waiting records. */
static int
first_wake(void *ctx, StoreBytes key, int64_t wake_ns)
{
    (void)key;
    *(int64_t *)ctx = wake_ns;
    return 1;
}

/* Whether CLAIM FROM "table" may hand out something at "now" (see
 * lang.h), looked at in a read transaction: a waiting claim does not take
 * the writer lock until there is something to take.  On any doubt about
 * the queue's indexes it answers true and lets the claim decide. */
LangErrorCode
lang_view_claimable(LangSession *s, const char *table, bool *yes, int64_t *next_wake,
                    LangError *err)
{
    StoreTxn *txn;
    *yes = true;
    *next_wake = INT64_MAX;
    int rc = store_txn_begin(s->store, false, &txn);
    if (rc)
        return store_error(rc, "beginning a transaction", err);
    TableDef def;
    int64_t now = store_now(s->store);
    if (!table_def_load(txn, table, &def, err)) {
        if (!def.is_queue) {
            lang_error_set(err, LANG_WRONG_KIND, "'%s' is a collection, not a queue", table);
        } else if (!check_access(s, &def, ACCESS_WRITE, err)) {
            StoreBytes key, val;
            rc = store_queue_head(txn, def.id, now, &key, &val);
            if (rc == STORE_NOTFOUND) {
                rc = store_queue_each_waiting(txn, def.id, first_wake, next_wake);
                *yes = (rc != 0 && rc != 1) || *next_wake <= now;
            }
        }
        table_def_free(&def);
    }
    store_txn_abort(txn);
    return err->code;
}

static void
keep_line(void *ctx, const char *line, size_t len)
{
    buf_append(ctx, line, len);
}

/* How long a waiting claim with an interrupt hook sleeps between looks at
 * the hook. */
#define INTERRUPT_LOOK_NS (100 * 1000 * 1000)

/* CLAIM … WAIT d: claims as soon as something is claimable — created,
 * released, or a hold lapsing, through any process on the store — or
 * answers [] after "d".  Refuses at once what the claim would refuse (no
 * such queue, no permission to claim from it).  Sleeps on the store's
 * notification of a commit (store_wait_change) or until the first waiting
 * record's instant, costing no CPU meanwhile; with an interrupt hook it
 * looks at the hook every INTERRUPT_LOOK_NS too, and ends with Interrupted
 * when it says so. */
static LangErrorCode
claim_wait(LangSession *s, Stmt *st, LangEmit emit, void *ctx, LangError *err)
{
    int64_t now = store_now(s->store), deadline, next_wake;
    if (__builtin_add_overflow(now, st->u.claim.wait_ns, &deadline))
        deadline = INT64_MAX;
    Buf line = {0};
    for (;;) {
        uint64_t seen = store_changes(s->store);
        bool yes;
        if (lang_view_claimable(s, st->u.claim.target.table, &yes, &next_wake, err))
            break;
        if (yes) {
            buf_reset(&line);
            if (session_run(s, &st, 1, keep_line, &line, err))
                break;
            if (strcmp(line.data, "[]") != 0)
                break;
            continue;   /* another worker got there first: look again */
        }
        int64_t until = deadline < next_wake ? deadline : next_wake;
        if (s->interrupted && until - now > INTERRUPT_LOOK_NS)
            until = now + INTERRUPT_LOOK_NS;
        store_wait_change(s->store, seen, until);
        now = store_now(s->store);
        if (s->interrupted && s->interrupted(s->interrupt_ctx)) {
            lang_error_set(err, LANG_INTERRUPTED, "the wait was interrupted");
            break;
        }
        if (now >= deadline) {
            buf_reset(&line);
            buf_puts(&line, "[]");
            break;
        }
    }
    if (!err->code && emit)
        emit(ctx, line.data, line.len);
    buf_free(&line);
    return err->code;
}

void
session_capture_claim(LangSession *s, LangUnclaim *undo)
{
    s->undo = undo;
}

/* Runs or queues one parsed statement; takes ownership of "st". */
LangErrorCode
session_statement(LangSession *s, Stmt *st, LangEmit emit, void *ctx, LangError *err)
{
    LangErrorCode rc = LANG_OK;
    switch (st->kind) {
    case ST_BEGIN:
        if (s->in_txn)
            rc = lang_error_set(err, LANG_PARSE_ERROR,
                                "BEGIN inside a transaction (COMMIT or CANCEL it first)");
        else
            s->in_txn = true;
        break;
    case ST_COMMIT:
    case ST_CANCEL:
        if (!s->in_txn) {
            rc = lang_error_set(err, LANG_PARSE_ERROR, "%s without BEGIN",
                                st->kind == ST_COMMIT ? "COMMIT" : "CANCEL");
            break;
        }
        if (st->kind == ST_COMMIT)
            rc = session_run(s, s->pending, s->npending, emit, ctx, err);
        drop_pending(s);
        break;
    default:
        if (st->kind == ST_CLAIM && st->u.claim.wait_ns && s->in_txn) {
            rc = lang_error_set(err, LANG_PARSE_ERROR,
                                "CLAIM … WAIT cannot wait inside BEGIN: COMMIT first");
            break;
        }
        if (s->in_txn) {
            if (s->npending == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 8;
                s->pending = xrealloc(s->pending, s->cap * sizeof *s->pending);
            }
            s->pending[s->npending++] = st;
            return LANG_OK;
        }
        if (st->kind == ST_CLAIM && st->u.claim.wait_ns && !st->u.claim.explain)
            rc = claim_wait(s, st, emit, ctx, err);
        else
            rc = session_run(s, &st, 1, emit, ctx, err);
    }
    if (!rc && emit && (st->kind == ST_BEGIN || st->kind == ST_COMMIT || st->kind == ST_CANCEL))
        emit(ctx, "null", 4);
    stmt_free(st);
    return rc;
}

LangErrorCode
lang_session_exec(LangSession *s, const char *text, size_t len, LangEmit emit, void *ctx,
                  LangError *err)
{
    Parser *p = parser_new(text, len);
    Stmt *st;
    int got;
    LangErrorCode rc = LANG_OK;
    while (!rc && (got = parser_next(p, &st, err)) == 1)
        rc = session_statement(s, st, emit, ctx, err);
    parser_free(p);
    return rc ? rc : err->code;
}

/* ---- statements run piece by piece (lang_session_start) ---- */

/* How many records one chunk of a streamed SELECT looks at, at most: a
 * WHERE that few records match still ends each chunk's transaction soon. */
#define CHUNK_RECORDS 4096

/* Where a streamed SELECT is: the next chunk starts after "after". */
typedef struct SelectCursor {
    bool     begun;   /* its checks passed and "[" was written */
    uint32_t table;   /* the table's id when it began */
    Buf      after;   /* the store key of the last record looked at */
    int64_t  rows;    /* rows written (LIMIT) */
    int64_t  now;     /* the statement's instant, the same for every chunk */
} SelectCursor;

/* The work a session keeps between lang_session_start and
 * lang_session_continue. */
typedef struct LangRest {
    Stmt    **stmts;      /* parsed statements still to run, from "next" */
    size_t    n, next;
    LangError parse_err;  /* the text after them that did not parse */
    Stmt     *current;    /* in progress: a CLAIM … WAIT or a streamed SELECT */
    int64_t   deadline;   /* CLAIM … WAIT: the instant it answers [] */
    SelectCursor cur;     /* streamed SELECT; UPDATE: "begun" and "table" */
    Buf       keys;       /* UPDATE: the changed records' keys (changed_key) */
    size_t    key_off;    /* UPDATE: where the next chunk of its answer starts */
} LangRest;

static void
rest_free(LangSession *s)
{
    LangRest *r = s->rest;
    if (!r)
        return;
    for (size_t i = r->next; i < r->n; i++)
        stmt_free(r->stmts[i]);
    free(r->stmts);
    stmt_free(r->current);
    buf_free(&r->cur.after);
    buf_free(&r->keys);
    free(r);
    s->rest = NULL;
}

bool
lang_session_pending(const LangSession *s)
{
    return s->rest != NULL;
}

bool
lang_session_waiting(const LangSession *s)
{
    return s->rest && s->rest->current && s->rest->current->kind == ST_CLAIM;
}

void
lang_session_cancel(LangSession *s)
{
    rest_free(s);
}

static void
add_line(void *ctx, const char *line, size_t len)
{
    buf_append(ctx, line, len);
    buf_putc(ctx, '\n');
}

/* True for a statement that is kept on the session when it cannot end at
 * once: a CLAIM … WAIT, a SELECT of a whole table in identity order, an
 * UPDATE of a whole table (its answer). */
static bool
resumable(const LangSession *s, const Stmt *st)
{
    if (s->in_txn)
        return false;
    if (st->kind == ST_CLAIM)
        return st->u.claim.wait_ns && !st->u.claim.explain;
    if (st->kind == ST_UPDATE)
        return st->u.write.target.id.kind != VAL_RECORD;
    return st->kind == ST_SELECT && st->u.select.from.id.kind != VAL_RECORD &&
           !st->u.select.norder;
}

/* What one chunk of a streamed SELECT walks with. */
typedef struct ChunkWalk {
    Exec         *x;
    const Stmt   *st;
    const TableDef *def;
    SelectCursor *cur;
    size_t        room;
    size_t        looked;
    bool          full;   /* stopped for room: more may follow */
} ChunkWalk;

/* Writes record "value" as the next row when WHERE holds; stops (-1)
 * when the chunk is full, LIMIT is reached or an error is met. */
static int
chunk_row(void *ctx, StoreBytes key, StoreBytes value)
{
    ChunkWalk *w = ctx;
    SelectCursor *c = w->cur;
    const Buf *after = &c->after;
    if (after->len && key.len == after->len && memcmp(key.data, after->data, key.len) == 0)
        return 0;   /* the last record of the chunk before */
    if (w->st->u.select.limit >= 0 && c->rows >= w->st->u.select.limit)
        return -1;
    if (w->x->out->len >= w->room || w->looked >= CHUNK_RECORDS) {
        w->full = true;
        return -1;
    }
    w->looked++;
    buf_reset(&c->after);
    buf_append(&c->after, key.data, key.len);
    Record r = {0};
    if (record_decode(value, &r, w->x->err)) {
        record_free(&r);
        return -1;
    }
    Value view = record_view(&r, w->def), row;
    bool yes;
    if (!matches(w->x, w->st->u.select.where, &view, &yes) && yes &&
        !project(w->x, w->st, &view, &row)) {
        if (c->rows++)
            buf_putc(w->x->out, ',');
        value_to_json(&row, w->x->out);
        value_free(&row);
    }
    value_free(&view);
    record_free(&r);
    return w->x->err->code ? -1 : 0;
}

/* Writes the next rows of streamed SELECT "st" to "out", in a read
 * transaction of its own, until "out" reaches "room" (or CHUNK_RECORDS were
 * looked at); "*done" once the line has ended.  The first chunk checks the
 * statement (NoSuchTable, PermissionDenied…) and an error in it leaves
 * "out" as it was; a later error ends the line where it stopped.  A table
 * dropped meanwhile ends the line. */
static LangErrorCode
select_chunk(LangSession *s, const Stmt *st, SelectCursor *c, Buf *out, size_t room, bool *done,
             LangError *err)
{
    StoreTxn *txn;
    size_t start = out->len;
    *done = true;
    int rc = store_txn_begin(s->store, false, &txn);
    if (rc)
        return store_error(rc, "beginning a transaction", err);
    Exec x = {s, txn, c->now, out, err, false, NULL};
    TableDef def;
    LangError gone = {0};
    bool first = !c->begun;
    if (first ? load_table(&x, st->u.select.from.table, ACCESS_READ, &def)
              : table_def_load(txn, st->u.select.from.table, &def, &gone)) {
        store_txn_abort(txn);
        if (first)
            return err->code;
        buf_puts(out, "]\n");   /* dropped meanwhile: no more records */
        return LANG_OK;
    }
    if (first) {
        c->begun = true;
        c->table = def.id;
        buf_putc(out, '[');
    }
    ChunkWalk w = {&x, st, &def, c, room, 0, false};
    if (def.id == c->table) {
        const Buf *a = &c->after;
        rc = store_record_each(txn, def.id, (StoreBytes){a->data, a->len}, chunk_row, &w);
        if (rc > 0)
            store_error(rc, "reading records", err);
    }
    table_def_free(&def);
    store_txn_abort(txn);
    if (err->code && first) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
        return err->code;
    }
    if (w.full && !err->code) {
        *done = false;
        return LANG_OK;
    }
    buf_puts(out, "]\n");
    return err->code;
}

/* What a whole-table UPDATE runs with: its statement and where the keys
 * of the records it changed go. */
typedef struct UpdateRun {
    LangSession *s;
    const Stmt  *st;
    Buf         *keys;
    LangError   *err;
} UpdateRun;

static int
update_txn(StoreTxn *txn, void *ctx)
{
    UpdateRun *u = ctx;
    Buf unused = {0};
    buf_reset(u->keys);
    *u->err = (LangError){0};
    Exec x = {u->s, txn, store_now(u->s->store), &unused, u->err, false, u->keys};
    int rc = exec_update(&x, u->st) ? -1 : 0;
    buf_free(&unused);
    return rc;
}

/* Runs UPDATE "st" as one write transaction, keeping only the keys of the
 * records it changed in "keys": its answer is then streamed from them. */
static LangErrorCode
update_keep_keys(LangSession *s, const Stmt *st, Buf *keys, LangError *err)
{
    UpdateRun u = {s, st, keys, err};
    int rc = store_write(s->store, update_txn, &u);
    if (rc > 0)
        store_error(rc, "committing", err);
    return err->code;
}

/* Writes the next records of a streamed UPDATE answer to "out", read by
 * key in a read transaction of its own, until "out" reaches "room";
 * "*done" once the line has ended.  A record deleted since is left out; a
 * table dropped since ends the line. */
static LangErrorCode
update_chunk(LangSession *s, LangRest *r, Buf *out, size_t room, bool *done, LangError *err)
{
    StoreTxn *txn;
    *done = true;
    int rc = store_txn_begin(s->store, false, &txn);
    if (rc)
        return store_error(rc, "beginning a transaction", err);
    TableDef def;
    LangError gone = {0};
    bool have = !table_def_load(txn, r->current->u.write.target.table, &def, &gone);
    if (!r->cur.begun) {
        r->cur.begun = true;
        r->cur.table = have ? def.id : 0;
        buf_putc(out, '[');
    }
    while (have && def.id == r->cur.table && r->key_off < r->keys.len && !err->code) {
        if (out->len >= room) {
            *done = false;
            break;
        }
        uint32_t len;
        memcpy(&len, r->keys.data + r->key_off, sizeof len);
        StoreBytes kb = {r->keys.data + r->key_off + sizeof len, len}, val;
        r->key_off += sizeof len + len;
        Record rec = {0};
        if ((rc = store_record_get(txn, def.id, kb, &val, NULL)) && rc != STORE_NOTFOUND) {
            store_error(rc, "reading a record", err);
        } else if (!rc && !record_decode(val, &rec, err)) {
            Value view = record_view(&rec, &def);
            if (r->cur.rows++)
                buf_putc(out, ',');
            value_to_json(&view, out);
            value_free(&view);
        }
        record_free(&rec);
    }
    if (have)
        table_def_free(&def);
    store_txn_abort(txn);
    if (*done || err->code)
        buf_puts(out, "]\n");
    return err->code;
}

/* CLAIM … WAIT's checks that need no waiting, made when it is written:
 * the ceiling, and that its table is a queue the session may claim from. */
static LangErrorCode
claim_check(LangSession *s, const Stmt *st, LangError *err)
{
    if (st->u.claim.count > CLAIM_CEILING)
        return lang_error_set(err, LANG_CLAIM_CEILING,
                              "CLAIM %lld is above the ceiling of %d records per claim",
                              (long long)st->u.claim.count, CLAIM_CEILING);
    StoreTxn *txn;
    int rc = store_txn_begin(s->store, false, &txn);
    if (rc)
        return store_error(rc, "beginning a transaction", err);
    Exec x = {s, txn, store_now(s->store), NULL, err, false, NULL};
    TableDef def;
    if (!load_queue(&x, st->u.claim.target.table, ACCESS_WRITE, &def))
        table_def_free(&def);
    store_txn_abort(txn);
    return err->code;
}

/* Runs CLAIM … WAIT "st" as claim_wait does, waiting at most "wait_ns"
 * (0: one attempt); its result line goes to "line". */
static LangErrorCode
claim_wait_for(LangSession *s, Stmt *st, int64_t wait_ns, Buf *line, LangError *err)
{
    int64_t whole = st->u.claim.wait_ns;
    st->u.claim.wait_ns = wait_ns > 0 ? wait_ns : 0;
    LangErrorCode rc = claim_wait(s, st, keep_line, line, err);
    st->u.claim.wait_ns = whole;
    return rc;
}

/* Goes on with the statement in progress; "*done" once its line ended. */
static LangErrorCode
current_step(LangSession *s, Buf *out, size_t room, bool block, bool *done, LangError *err)
{
    LangRest *r = s->rest;
    if (r->current->kind == ST_SELECT)
        return select_chunk(s, r->current, &r->cur, out, room, done, err);
    if (r->current->kind == ST_UPDATE)
        return update_chunk(s, r, out, room, done, err);
    int64_t left = r->deadline - store_now(s->store);
    Buf line = {0};
    *done = true;
    if (!claim_wait_for(s, r->current, block ? left : 0, &line, err)) {
        *done = block || left <= 0 || strcmp(line.data, "[]") != 0;
        if (*done)
            add_line(out, line.data, line.len);
    }
    buf_free(&line);
    return err->code;
}

/* Starts statement "st" (taking it): runs it, or makes it the statement in
 * progress when it is resumable. */
static LangErrorCode
rest_start(LangSession *s, Stmt *st, Buf *out, LangError *err)
{
    LangRest *r = s->rest;
    if (!resumable(s, st))
        return session_statement(s, st, add_line, out, err);
    if (st->kind == ST_CLAIM) {
        int64_t now = store_now(s->store);
        if (claim_check(s, st, err)) {
            stmt_free(st);
            return err->code;
        }
        if (__builtin_add_overflow(now, st->u.claim.wait_ns, &r->deadline))
            r->deadline = INT64_MAX;
    } else if (st->kind == ST_UPDATE) {
        r->cur.begun = false;
        r->cur.rows = 0;
        r->key_off = 0;
        if (update_keep_keys(s, st, &r->keys, err)) {
            stmt_free(st);
            return err->code;
        }
    } else {
        buf_reset(&r->cur.after);
        r->cur.begun = false;
        r->cur.rows = 0;
        r->cur.now = store_now(s->store);
    }
    r->current = st;
    return LANG_OK;
}

/* Runs what the session keeps until it is all done (the rest is freed),
 * an error ends it (freed too), or the statement in progress stops for
 * room or for a claim that would wait — unless "block" and nothing was
 * appended yet, when the claim waits. */
static LangErrorCode
rest_run(LangSession *s, Buf *out, size_t room, bool block, LangError *err)
{
    LangRest *r = s->rest;
    size_t start = out->len;
    while (!err->code) {
        if (r->current) {
            bool done;
            /* Lines already produced are read before a claim waits. */
            if (current_step(s, out, room, block && out->len == start, &done, err))
                break;
            if (!done)
                return LANG_OK;
            stmt_free(r->current);
            r->current = NULL;
        } else if (r->next < r->n) {
            rest_start(s, r->stmts[r->next++], out, err);
        } else {
            if (r->parse_err.code)
                *err = r->parse_err;
            break;
        }
    }
    rest_free(s);
    return err->code;
}

LangErrorCode
lang_session_start(LangSession *s, const char *text, size_t len, Buf *out, size_t room,
                   LangError *err)
{
    if (s->rest)
        return lang_error_set(err, LANG_SESSION_BUSY,
                              "the session's last result has not been read to its end");
    LangRest *r = xcalloc(1, sizeof *r);
    Parser *p = parser_new(text, len);
    Stmt *st;
    size_t cap = 0;
    while (parser_next(p, &st, &r->parse_err) == 1) {
        if (r->n == cap) {
            cap = cap ? 2 * cap : 8;
            r->stmts = xrealloc(r->stmts, cap * sizeof *r->stmts);
        }
        r->stmts[r->n++] = st;
    }
    parser_free(p);
    s->rest = r;
    return rest_run(s, out, room, false, err);
}

LangErrorCode
lang_session_continue(LangSession *s, Buf *out, size_t room, bool block, LangError *err)
{
    if (!s->rest)
        return LANG_OK;
    return rest_run(s, out, room, block, err);
}
