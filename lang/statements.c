/* statements.c — the statements that define tables and read or write
 * records: DEFINE, CREATE, UPDATE, UPSERT (the file view's write),
 * DELETE, SELECT, INFO, DROP and USE.  The hold statements are in
 * holds.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "parse.h"

/* ---- record content ---- */

/* Evaluates record content: it must be an object. */
static LangErrorCode
eval_content(Exec *x, const Expr *e, const Value *record, Value *out)
{
    EvalContext cx = {record, lang_exec_now(x)};
    if (!e) {
        *out = lang_value_object();
        return LANG_OK;
    }
    if (lang_expr_eval(e, &cx, out, x->err))
        return x->err->code;
    if (out->kind != VAL_OBJECT) {
        lang_error_set(x->err, LANG_TYPE_ERROR, "record content must be an object, not %s",
                       lang_value_kind_name(out->kind));
        lang_value_free(out);
        return LANG_TYPE_ERROR;
    }
    return LANG_OK;
}

/* True when an `id` given in content names record "key" of "table". */
static bool
id_matches(const Value *id, const char *table, const Value *key)
{
    if (id->kind == VAL_RECORD)
        return strcmp(id->u.rec.table, table) == 0 && lang_value_equal(id->u.rec.key, key);
    if (id->kind == VAL_STRING) {
        RecordId rid = {(char *)table, (Value *)key};
        Buf b = {0};
        lang_record_id_format(&rid, &b);
        bool same = b.len == id->u.str.len && memcmp(b.data, id->u.str.s, b.len) == 0;
        lang_buf_free(&b);
        return same;
    }
    return lang_value_equal(id, key);
}

/* Takes `id` out of "content"; refuses one that names another record
 * ("key" NULL: the store names the record, so no id may be given). */
static LangErrorCode
strip_id(Exec *x, Value *content, const char *table, const Value *key)
{
    const Value *id = lang_value_object_get(content, "id");
    if (!id)
        return LANG_OK;
    if (!key || !id_matches(id, table, key))
        return lang_error_set(x->err, LANG_SCHEMA_VIOLATION,
                              "the content's id does not name the record written");
    lang_value_object_remove(content, "id");
    return LANG_OK;
}

/* True when "incoming" repeats the engine's value "stored": equal, or the
 * same instant written as an RFC 3339 string, or the same errors written
 * as their JSON (a record read back as JSON). */
static bool
engine_value_same(const Value *stored, const Value *incoming)
{
    int64_t ns;
    if (stored->kind == VAL_ARRAY) {
        Buf a = {0}, b = {0};
        lang_value_to_json(stored, &a);
        lang_value_to_json(incoming, &b);
        bool same = a.len == b.len && memcmp(a.data, b.data, a.len) == 0;
        lang_buf_free(&a);
        lang_buf_free(&b);
        return same;
    }
    if (stored->kind == VAL_DATETIME && incoming->kind == VAL_STRING)
        return lang_datetime_parse(incoming->u.str.s, incoming->u.str.len, &ns) == 0 &&
               ns == stored->u.ns;
    return lang_value_equal(stored, incoming);
}

/* On a queue, "incoming" may not introduce, change or remove the engine's
 * fields of "old" (NULL for a new record): a field it repeats — equal, or
 * read back as JSON — is dropped from it, since the engine keeps its own;
 * any other is EngineField. */
static LangErrorCode
guard_engine_fields(Exec *x, const TableDef *def, const Record *old, Value *incoming)
{
    if (!def->is_queue || incoming->kind != VAL_OBJECT)
        return LANG_OK;
    for (size_t i = 0; i < incoming->u.obj.len;) {
        const char *f = incoming->u.obj.keys[i];
        if (!lang_record_is_engine_field(f)) {
            i++;
            continue;
        }
        Value was = lang_value_none();
        bool has = old && lang_record_engine_field(old, f, lang_exec_now(x), &was);
        bool same = has && engine_value_same(&was, &incoming->u.obj.vals[i]);
        lang_value_free(&was);
        if (!same)
            return lang_error_set(x->err, LANG_ENGINE_FIELD,
                                  "'%s' on queue '%s' belongs to the engine: a write may not "
                                  "set or change it",
                                  f, def->decl.name);
        char *name = lang_xstrdup(f);
        lang_value_object_remove(incoming, name);
        free(name);
    }
    return LANG_OK;
}

/* ---- what the statements share ---- */

/* What a statement does once the table it names is loaded: its answer in
 * x->out, or the error it left in x->err. */
typedef LangErrorCode TableStatement(Exec *x, const Stmt *st, TableDef *def);

/* Loads table "name" for a statement that needs "want" on it (see
 * lang_table_load), runs "run" on the definition and frees it: the error
 * loading it, or what "run" returned. */
static LangErrorCode
on_table(Exec *x, const Stmt *st, const char *name, int want, TableStatement *run)
{
    TableDef def;
    if (lang_table_load(x, name, want, &def))
        return x->err->code;
    LangErrorCode rc = run(x, st, &def);
    lang_table_def_free(&def);
    return rc;
}

/* Ends a statement that answers null: that answer when the store's "rc"
 * is 0, else the store's error while "doing". */
static LangErrorCode
answer_null(Exec *x, int rc, const char *doing)
{
    if (rc)
        return lang_store_error(rc, doing, x->err);
    lang_buf_puts(x->out, "null");
    return LANG_OK;
}

/* ---- DEFINE ---- */

static TableDecl
decl_copy(const TableDecl *d)
{
    TableDecl c = *d;
    c.name = lang_xstrdup(d->name);
    c.priority_by = d->priority_by ? lang_xstrdup(d->priority_by) : NULL;
    c.not_before = d->not_before ? lang_xstrdup(d->not_before) : NULL;
    for (size_t i = 0; i < d->nper; i++)
        c.per[i].field = lang_xstrdup(d->per[i].field);
    c.graph = d->graph ? lang_xstrdup(d->graph) : NULL;
    return c;
}

/* True, with WrongKind (or the error loading it) in x->err, unless the
 * existing table "name" is of the kind a DEFINE … IF NOT EXISTS asks for:
 * a queue when "queue", else a collection. */
static bool
existing_kind_differs(Exec *x, const char *name, bool queue)
{
    TableDef def;
    if (lang_table_def_load(x->txn, name, &def, x->err))
        return true;
    bool differs = def.is_queue != queue;
    lang_table_def_free(&def);
    if (differs)
        lang_error_set(x->err, LANG_WRONG_KIND,
                       "'%s' exists and is a %s, not a %s: DEFINE %s IF NOT EXISTS refuses it",
                       name, queue ? "collection" : "queue", queue ? "queue" : "collection",
                       queue ? "QUEUE" : "COLLECTION");
    return differs;
}

/* define_table -> DEFINE (QUEUE | COLLECTION) … */
LangErrorCode
lang_exec_define_table(Exec *x, const Stmt *st)
{
    const TableDecl *d = &st->u.define_table;
    if (lang_session_name_check(x->s, d->name, x->err))
        return x->err->code;
    TableDef def = {0};
    def.is_queue = st->kind == ST_DEFINE_QUEUE;
    def.decl = decl_copy(d);
    def.uid = x->s->caller.known ? (int64_t)x->s->caller.uid : -1;
    def.gid = x->s->caller.known ? (int64_t)x->s->caller.gid : -1;
    def.mode = d->mode > 0 ? d->mode & 07777 : -1;
    Buf b = {0};
    lang_table_def_encode(&def, &b);
    int rc = store_table_create(x->txn, d->name, (StoreBytes){b.data, b.len}, &def.id);
    lang_buf_free(&b);
    lang_table_def_free(&def);
    if (rc == STORE_EXISTS && !d->if_not_exists)
        return lang_error_set(x->err, LANG_TABLE_EXISTS, "a table named '%s' already exists",
                              d->name);
    if (rc == STORE_EXISTS && existing_kind_differs(x, d->name, st->kind == ST_DEFINE_QUEUE))
        return x->err->code;
    /* what is left of STORE_EXISTS is IF NOT EXISTS finding the kind asked for */
    return answer_null(x, rc == STORE_EXISTS ? STORE_OK : rc, "defining a table");
}

/* Stores "def" as its table's definition, answering null. */
static LangErrorCode
save_def(Exec *x, const TableDef *def)
{
    return answer_null(x, lang_table_redefine(x->txn, def->decl.name, def),
                       "updating a definition");
}

/* pause -> (PAUSE | RESUME) QUEUE name: the queue's owner stops claims
 * handing out its records, durably, or lets them go on. */
static LangErrorCode
pause_queue(Exec *x, const Stmt *st, TableDef *def)
{
    if (lang_queue_check(def, st->u.table_op.table, x->err))
        return x->err->code;
    def->paused = st->kind == ST_PAUSE;
    return save_def(x, def);
}

/* Replaces the string "*slot" with a copy of "s" (NULL allowed). */
static void
str_replace(char **slot, const char *s)
{
    free(*slot);
    *slot = s ? lang_xstrdup(s) : NULL;
}

static bool
str_same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* True when "a" and "b" declare the same AT MOST … PER keys from the
 * "from"th on ("from" 0 and 1 both compare the first's field and limit
 * only with 0; 1 compares the rest). */
static bool
per_same(const TableDecl *a, const TableDecl *b, size_t from)
{
    size_t to = from ? LANG_PER_MAX : 1;
    for (size_t i = from; i < to; i++) {
        bool ha = i < a->nper, hb = i < b->nper;
        if (ha != hb || (ha && (a->per[i].limit != b->per[i].limit ||
                                !str_same(a->per[i].field, b->per[i].field))))
            return false;
    }
    return true;
}

/* ALTER's AT MOST … PER clauses "set" applied to "d": each adds a key, or
 * changes the limit of the key of its field; a limit of 0 drops the key
 * of its field (NULL: every key); dropping one not declared is no error.
 * ParseError when that would make more than LANG_PER_MAX keys. */
static LangErrorCode
per_alter(Exec *x, TableDecl *d, const TableDecl *set)
{
    for (size_t j = 0; j < set->nper; j++) {
        const PerKey *e = &set->per[j];
        size_t i = 0;
        while (i < d->nper && !(e->field && strcmp(d->per[i].field, e->field) == 0))
            i++;
        if (e->limit && i < d->nper) {
            d->per[i].limit = e->limit;
        } else if (e->limit && d->nper == LANG_PER_MAX) {
            return lang_error_set(x->err, LANG_PARSE_ERROR,
                                  "a queue takes at most %d AT MOST … PER clauses: drop one first",
                                  LANG_PER_MAX);
        } else if (e->limit) {
            d->per[d->nper++] = (PerKey){e->limit, lang_xstrdup(e->field)};
        } else {
            /* dropped: the one of its field, or all of them */
            for (size_t k = e->field ? i : 0; k < d->nper && (!e->field || k == i); k++) {
                free(d->per[k].field);
                d->per[k].field = NULL;
            }
            size_t n = 0;
            for (size_t k = 0; k < d->nper; k++)
                if (d->per[k].field)
                    d->per[n++] = d->per[k];
            d->nper = n;
        }
    }
    return LANG_OK;
}

/* alter -> ALTER QUEUE name clause {clause}: the owner changes any clause
 * of the queue's definition, or drops an optional one, without touching a
 * record's value or hold: holds already taken keep their deadline.  A
 * changed ATTEMPTS ceiling or AT MOST … PER limit files the queue's records
 * anew as they are filed; a changed PRIORITY BY, NOT BEFORE or PER field
 * files each by its fields under the new definition (lang_record_refile:
 * O(n), in the statement's transaction, so a failure changes nothing). */
static LangErrorCode
alter_queue(Exec *x, const Stmt *st, TableDef *def)
{
    if (lang_queue_check(def, st->u.alter.table, x->err))
        return x->err->code;
    TableDef old;
    lang_table_def_copy(def, &old);
    const TableDecl *set = &st->u.alter.set;
    unsigned given = st->u.alter.given;
    TableDecl *d = &def->decl;
    if (given & CLAUSE_TIMEOUT)
        d->timeout_ns = set->timeout_ns;
    if (given & CLAUSE_ATTEMPTS)
        d->attempts = set->attempts;
    if (given & CLAUSE_DEDUPLICATE)
        d->deduplicate_ns = set->deduplicate_ns;
    if (given & CLAUSE_PRIORITY_BY)
        str_replace(&d->priority_by, set->priority_by);
    if (given & CLAUSE_NOT_BEFORE)
        str_replace(&d->not_before, set->not_before);
    if ((given & CLAUSE_PER) && per_alter(x, d, set)) {
        lang_table_def_free(&old);
        return x->err->code;
    }
    if (given & CLAUSE_EVERY) {
        d->rate = set->rate;
        d->rate_window_ns = set->rate_window_ns;
    }
    if (given & CLAUSE_SCHEMA)
        d->schema = set->schema;
    if (given & CLAUSE_IN)
        str_replace(&d->graph, set->graph);
    if (given & CLAUSE_KEEP)
        d->keep_ns = set->keep_ns;
    if (given & CLAUSE_COALESCE)
        d->coalesce = set->coalesce;
    if (d->coalesce && d->deduplicate_ns) {
        lang_table_def_free(&old);
        return lang_error_set(x->err, LANG_PARSE_ERROR,
                              "COALESCE and DEDUPLICATE refuse each other: drop one to declare "
                              "the other");
    }
    const TableDecl *o = &old.decl;
    /* other keys past the first: what waits for their groups is refiled
     * by its fields and their holds counted anew (lang_perkeys_reset) —
     * as after any refile by fields, which files those records too */
    bool keys = !per_same(o, d, 1);
    bool by_fields = !str_same(o->priority_by, d->priority_by) ||
                     !str_same(o->not_before, d->not_before) || !per_same(o, d, 0) ||
                     (keys && o->nper > 1);
    keys = keys || (by_fields && d->nper > 1);
    /* dropping KEEP removes the done records the refile finds */
    bool refile = by_fields || o->attempts != d->attempts || (o->keep_ns && !d->keep_ns);
    LangErrorCode rc = refile ? lang_record_refile(x->txn, &old, def, by_fields, x->err) : LANG_OK;
    if (!rc && keys && lang_perkeys_reset(x->txn, def))
        rc = lang_store_error(STORE_IO, "counting the holds of AT MOST … PER", x->err);
    lang_table_def_free(&old);
    return rc ? rc : save_def(x, def);
}

/* The position of the entry named "name" in the array "*array" points to
 * ("*n" entries of "size" bytes, each opening with its char *name, as
 * FieldDef and IndexDef do); when there is none, a zeroed entry of that
 * name is appended, growing the array. */
static size_t
entry_named(void *array, size_t *n, size_t size, const char *name)
{
    char *items, *have;
    memcpy(&items, array, sizeof items);
    for (size_t i = 0; i < *n; i++) {
        memcpy(&have, items + i * size, sizeof have);
        if (strcmp(have, name) == 0)
            return i;
    }
    items = lang_xrealloc(items, (*n + 1) * size);
    memset(items + *n * size, 0, size);
    have = lang_xstrdup(name);
    memcpy(items + *n * size, &have, sizeof have);
    memcpy(array, &items, sizeof items);
    return (*n)++;
}

/* define_field -> DEFINE FIELD name ON table [TYPE t] [REQUIRED] */
static LangErrorCode
define_field(Exec *x, const Stmt *st, TableDef *def)
{
    size_t i =
        entry_named(&def->fields, &def->nfields, sizeof *def->fields, st->u.define_field.name);
    FieldDef *f = &def->fields[i];
    str_replace(&f->type, st->u.define_field.type);
    f->required = st->u.define_field.required;
    return save_def(x, def);
}

/* define_index -> DEFINE INDEX name ON table FIELDS f {, f} */
static LangErrorCode
define_index(Exec *x, const Stmt *st, TableDef *def)
{
    size_t i =
        entry_named(&def->indexes, &def->nindexes, sizeof *def->indexes, st->u.define_index.name);
    IndexDef *ix = &def->indexes[i];
    for (size_t j = 0; j < ix->nfields; j++)
        free(ix->fields[j]);
    free(ix->fields);
    ix->nfields = st->u.define_index.nfields;
    ix->fields = lang_xcalloc(ix->nfields, sizeof *ix->fields);
    for (size_t j = 0; j < ix->nfields; j++)
        ix->fields[j] = lang_xstrdup(st->u.define_index.fields[j]);
    return save_def(x, def);
}

/* ---- CREATE, UPDATE, DELETE, SELECT ---- */

/* True when CREATE of identity "named" with "fields" on table "def" is
 * answered by a record it holds already: RecordExists (in x->err), or
 * under COALESCE the demand taken (lang_coalesce: the record appended to
 * "results").  A done record (KEEP) is not held: its CREATE is new work,
 * as it is when the identity is absent. */
static bool
held_already(Exec *x, const TableDef *def, const Value *named, const Value *fields, Value *results)
{
    Record old = {0};
    LangError absent = {0};
    if (lang_record_load(x->txn, def, named, &old, &absent)) {
        if (absent.code != LANG_NO_SUCH_RECORD)
            *x->err = absent;
        return absent.code != LANG_NO_SUCH_RECORD;
    }
    bool outstanding = !old.completed_at;
    if (outstanding) {
        if (def->is_queue && def->decl.coalesce) {
            lang_coalesce(x, def, &old, fields, results);
        } else {
            lang_record_taken(def, named, x->err);
        }
    }
    lang_record_free(&old);
    return outstanding;
}

/* create -> CREATE target [(= | CONTENT) expr] */
static LangErrorCode
create_record(Exec *x, const Stmt *st, TableDef *def)
{
    const Target *t = &st->u.write.target;
    Record r = {0};
    Value results = lang_value_array();
    const Value *named = t->id.kind == VAL_RECORD ? t->id.u.rec.key : NULL;
    bool repeat = false;
    if (eval_content(x, st->u.write.content, NULL, &r.fields) ||
        strip_id(x, &r.fields, t->table, named) || guard_engine_fields(x, def, NULL, &r.fields) ||
        lang_record_validate(def, &r.fields, x->err))
        goto done;
    if (named) {
        r.key = lang_value_clone(named);
        if (def->is_queue && def->decl.deduplicate_ns && lang_dedup_check(x, def, named, &repeat))
            goto done;
        if (repeat)
            goto done;
        if (held_already(x, def, named, &r.fields, &results))
            goto done;
    } else if (lang_identity_next(x, def, 1, &r.key)) {
        goto done;
    }
    if (lang_identity_note(x, def, &r.key) ||
        lang_after_create(x, def, &r, st->u.write.after, st->u.write.nafter) ||
        lang_record_store(x->txn, def, &r, true, x->err))
        goto done;
    lang_value_array_push(&results, lang_record_view(&r, def, lang_exec_now(x)));
done:
    lang_record_free(&r);
    return lang_exec_answer_records(x, &results);
}

/* True when CREATE "st" is of table "table" and names no record. */
static bool
create_unnamed(const Stmt *st, const char *table)
{
    return st->kind == ST_CREATE && st->u.write.target.id.kind != VAL_RECORD &&
           !st->u.write.nafter && strcmp(st->u.write.target.table, table) == 0;
}

size_t
lang_creates_run(Stmt *const *stmts, size_t n)
{
    size_t k = 0;
    if (n && stmts[0]->kind == ST_CREATE)
        while (k < n && create_unnamed(stmts[k], stmts[0]->u.write.target.table))
            k++;
    return k;
}

/* Stores the records rs[0 .. n) of a run of CREATEs, whose contents are
 * checked: their identities drawn, then the records created, each in one
 * call of the store — the last change of the transaction when "last"
 * (store_txn_last: its commit may go with it). */
static LangErrorCode
creates_store(Exec *x, const TableDef *def, Record *rs, size_t n, bool last)
{
    Value *keys = lang_xcalloc(n ? n : 1, sizeof *keys);
    LangErrorCode rc = n ? lang_identity_next(x, def, n, keys) : LANG_OK;
    for (size_t i = 0; i < n && !rc; i++)
        rs[i].key = keys[i];
    free(keys);
    if (!rc && n)
        rc = lang_identity_note(x, def, &rs[n - 1].key);
    if (!rc && last)
        store_txn_last(x->txn); /* nothing follows but the answers */
    return rc ? rc : lang_records_create(x->txn, def, rs, n, x->err);
}

LangErrorCode
lang_exec_creates(Exec *x, Stmt *const *stmts, size_t n, size_t *ends)
{
    TableDef def;
    if (lang_table_load(x, stmts[0]->u.write.target.table, ACCESS_WRITE, &def))
        return x->err->code;
    Record *rs = lang_xcalloc(n, sizeof *rs);
    /* Each content checked as its CREATE would, in order; the records
     * before the first that fails are stored before its error is given,
     * so that an earlier record's error (its identity, its size, the
     * store's) comes first, as it would one statement at a time. */
    size_t m = 0;
    for (; m < n; m++) {
        Record *r = &rs[m];
        if (eval_content(x, stmts[m]->u.write.content, NULL, &r->fields) ||
            strip_id(x, &r->fields, def.decl.name, NULL) ||
            guard_engine_fields(x, &def, NULL, &r->fields) ||
            lang_record_validate(&def, &r->fields, x->err))
            break;
    }
    LangError bad = *x->err;
    *x->err = (LangError){0};
    LangErrorCode rc = creates_store(x, &def, rs, m, x->alone && m == n);
    if (!rc && m < n)
        *x->err = bad, rc = bad.code;
    for (size_t i = 0; i < n && !rc; i++) {
        if (x->unread) {
            ends[i] = x->out->len;
            continue;
        }
        Value results = lang_value_array();
        lang_value_array_push(&results, lang_record_view(&rs[i], &def, lang_exec_now(x)));
        lang_exec_answer(x, &results);
        ends[i] = x->out->len;
    }
    for (size_t i = 0; i < n; i++)
        lang_record_free(&rs[i]);
    free(rs);
    lang_table_def_free(&def);
    return rc;
}

/* Appends the store key of "key" to key list "keys" (lang_keys_push). */
static void
changed_key(Buf *keys, const Value *key)
{
    Buf kb = {0};
    lang_record_key_encode(key, &kb);
    lang_keys_push(keys, (StoreBytes){kb.data, kb.len});
    lang_buf_free(&kb);
}

/* What an UPDATE runs with: the statement, and its answer so far. */
typedef struct UpdateRun {
    const Stmt *st;
    Value *results;
} UpdateRun;

/* Updates record "r", whose view "view" the UPDATE's WHERE holds for:
 * its content replaces the record's fields, or is merged into them. */
static void
update_one(Exec *x, const TableDef *def, Record *r, Value *view, void *ctx)
{
    const UpdateRun *u = ctx;
    const Stmt *st = u->st;
    Value content = {0};
    if (eval_content(x, st->u.write.content, view, &content) ||
        strip_id(x, &content, st->u.write.target.table, &r->key) ||
        guard_engine_fields(x, def, r, &content))
        goto done;
    if (st->u.write.mode == WRITE_MERGE) {
        for (size_t j = 0; j < content.u.obj.len; j++)
            lang_value_object_set(&r->fields, content.u.obj.keys[j],
                                  lang_value_clone(&content.u.obj.vals[j]));
    } else {
        /* what the record waits for (AFTER) is the engine's to keep */
        Value *waits = (Value *)lang_value_object_get(&r->fields, FIELD_AFTER);
        if (waits)
            lang_value_object_set(&content, FIELD_AFTER, lang_value_clone(waits));
        lang_value_free(&r->fields);
        r->fields = content;
        content = lang_value_none();
    }
    if (lang_record_validate(def, &r->fields, x->err) ||
        lang_record_store(x->txn, def, r, false, x->err))
        goto done;
    if (x->changed)
        changed_key(x->changed, &r->key);
    else
        lang_value_array_push(u->results, lang_record_view(r, def, lang_exec_now(x)));
done:
    lang_value_free(&content);
}

/* update -> UPDATE target (= | CONTENT | MERGE) expr [WHERE expr] */
static LangErrorCode
update_records(Exec *x, const Stmt *st, TableDef *def)
{
    Value results = lang_value_array();
    UpdateRun run = {st, &results};
    lang_exec_each_record(x, def, &st->u.write.target, st->u.write.where, 0, update_one, &run);
    return lang_exec_answer_records(x, &results);
}

/* The file view's write of a named record: a whole-record UPDATE of the
 * record when it exists, else its CREATE. */
static LangErrorCode
upsert_record(Exec *x, const Stmt *st, TableDef *def)
{
    bool exists = lang_record_exists(x->txn, def, st->u.write.target.id.u.rec.key);
    return exists ? update_records(x, st, def) : create_record(x, st, def);
}

/* The store's delete of record "key" of "def" when its live hold is
 * number "hold" (<= 0: whatever its holds): the StoreStatus. */
static int
delete_stored(Exec *x, const TableDef *def, const Value *key, int64_t hold)
{
    Buf kb = {0}, value = {0};
    lang_record_key_encode(key, &kb);
    StoreBytes k = {kb.data, kb.len};
    StoreRecord sr;
    /* with several AT MOST … PER keys, its groups' room goes on */
    bool keys = lang_perkeys_used(def);
    int rc = keys ? store_record_get(x->txn, def->id, k, &sr) : STORE_OK;
    if (!rc && keys)
        lang_buf_append(&value, sr.value.data, sr.value.len);
    if (!rc)
        rc = lang_after_delete(x, def, k, hold);
    if (!rc && keys)
        rc = lang_perkeys_hold_ended(x->txn, def, k, (StoreBytes){value.data, value.len});
    lang_buf_free(&kb);
    lang_buf_free(&value);
    return rc;
}

/* The delete of the one record "t" names, with no WHERE and no fence but
 * a hold number's (rm of a record's name, or of held/ID~N): the store's
 * delete, which checks the hold itself, without reading the record first.
 * "last": nothing but reads follows it in the transaction.  True when that
 * settled it — done, or failed for another reason than the record's
 * absence or a fence that does not hold (which the caller explains by
 * reading the record as any delete does: nothing changed). */
static bool
delete_settled(Exec *x, const TableDef *def, const Target *t, int64_t fence, bool last)
{
    if (last && !def->after_used && !lang_perkeys_used(def))
        store_txn_last(x->txn); /* what follows a delete that fails only reads */
    int rc = delete_stored(x, def, t->id.u.rec.key, fence);
    if (rc == STORE_NOTFOUND || rc == STORE_CONFLICT)
        return false;
    if (rc)
        lang_record_missing(rc, def, t->id.u.rec.key, "deleting a record", x->err);
    return true;
}

/* Deletes record "r", which the DELETE's WHERE holds for, when the fence
 * "*fence" points to (0: none) holds for it. */
static void
delete_one(Exec *x, const TableDef *def, Record *r, Value *view, void *fence)
{
    (void)view;
    int64_t hold = *(const int64_t *)fence;
    if (hold && lang_record_fence(def, r, hold, lang_exec_now(x), x->err))
        return;
    int rc = delete_stored(x, def, &r->key, hold > 0 ? hold : 0);
    if (rc)
        lang_record_missing(rc, def, &r->key, "deleting a record", x->err);
}

/* Deletes what target "t" of DELETE "st" names, under "fence": a record,
 * or every record of a table, that the DELETE's WHERE holds for.  "last":
 * nothing but reads follows it in the transaction. */
static LangErrorCode
delete_target(Exec *x, const Stmt *st, const TableDef *def, const Target *t, int64_t fence,
              bool last)
{
    bool settled = t->id.kind == VAL_RECORD && !st->u.del.where && fence >= 0 &&
                   delete_settled(x, def, t, fence, last);
    if (!settled)
        lang_exec_each_record(x, def, t, st->u.del.where, 0, delete_one, &fence);
    return x->err->code;
}

/* A DELETE of several records of one table — each named, with no fence
 * but a hold number's, and no WHERE — on a table whose deletes need no
 * more than the store's (no AFTER, no AT MOST … PER key past the first):
 * the store's deletes of them all in one call (store_records_delete), one
 * statement on a server.  "w" has loaded the first target's table.  True
 * when that settled the statement: done, or failed — for a record missing
 * or fenced off, the delete of that record alone says why, as the DELETE
 * of each in turn would have. */
static bool
delete_many(Exec *x, const Stmt *st, TargetWalk *w)
{
    const TableDef *def = &w->def;
    size_t n = 1 + st->u.del.nmore;
    if (st->u.del.where || n < 2 || def->after_used || lang_perkeys_used(def))
        return false;
    for (size_t i = 0; i < n; i++) {
        const Target *t = i ? &st->u.del.more[i - 1].target : &st->u.del.target;
        int64_t fence = i ? st->u.del.more[i - 1].fence : st->u.del.fence;
        if (t->id.kind != VAL_RECORD || fence < 0 || strcmp(t->table, def->decl.name) != 0)
            return false;
    }
    Buf kb = {0};
    size_t *at = lang_xcalloc(n, sizeof *at);
    StoreBytes *keys = lang_xcalloc(n, sizeof *keys);
    int64_t *holds = lang_xcalloc(n, sizeof *holds);
    for (size_t i = 0; i < n; i++) {
        at[i] = kb.len;
        lang_record_key_encode(
            i ? st->u.del.more[i - 1].target.id.u.rec.key : st->u.del.target.id.u.rec.key, &kb);
        holds[i] = i ? st->u.del.more[i - 1].fence : st->u.del.fence;
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (StoreBytes){kb.data + at[i], (i + 1 < n ? at[i + 1] : kb.len) - at[i]};
    StoreQueue q;
    size_t failed = 0;
    int rc =
        store_records_delete(x->txn, def->id, lang_record_queue(def, &q), keys, holds, n, &failed);
    const Target *t = failed ? &st->u.del.more[failed - 1].target : &st->u.del.target;
    if (rc == STORE_NOTFOUND || rc == STORE_CONFLICT) {
        int64_t fence = holds[failed];
        lang_exec_each_record(x, def, t, NULL, 0, delete_one, &fence);
    }
    if (rc && !x->err->code)
        lang_record_missing(rc, def, t->id.u.rec.key, "deleting a record", x->err);
    lang_buf_free(&kb);
    free(at);
    free(keys);
    free(holds);
    return true;
}

/* delete -> DELETE [FROM] target [WHERE expr] | DELETE records [WHERE expr]:
 * each target in turn (or all at once: delete_many), in the statement's
 * one transaction, so that the first that fails (a missing record, a
 * fence that does not hold) leaves all of them as they were. */
static LangErrorCode
delete_records(Exec *x, const Stmt *st)
{
    TargetWalk w = {.first = &st->u.del.target,
                    .fence = st->u.del.fence,
                    .more = st->u.del.more,
                    .nmore = st->u.del.nmore};
    const Target *t;
    int64_t fence;
    bool fresh;
    while (lang_target_next(x, &w, &t, &fence, &fresh) && !(w.next == 1 && delete_many(x, st, &w)))
        delete_target(x, st, &w.def, t, fence, x->alone && st->u.del.nmore == 0);
    lang_target_walk_end(&w);
    if (x->err->code)
        return x->err->code;
    lang_buf_puts(x->out, "[]");
    return LANG_OK;
}

/* One SELECT row: the whole record, or the fields asked for. */
LangErrorCode
lang_select_project(Exec *x, const Stmt *st, const Value *view, Value *row)
{
    if (st->u.select.star) {
        *row = lang_value_clone(view);
        return LANG_OK;
    }
    *row = lang_value_object();
    EvalContext cx = {view, lang_exec_now(x)};
    for (size_t i = 0; i < st->u.select.nfields; i++) {
        const SelectField *f = &st->u.select.fields[i];
        Value v;
        if (lang_expr_eval(f->expr, &cx, &v, x->err)) {
            lang_value_free(row);
            return x->err->code;
        }
        if (f->alias) {
            lang_value_object_set(row, f->alias, v);
        } else if (f->expr->kind == EX_FIELD) {
            lang_path_set(row, f->expr->u.path.parts, f->expr->u.path.len, v);
        } else {
            char name[32];
            snprintf(name, sizeof name, "expr%zu", i + 1);
            lang_value_object_set(row, name, v);
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
        const Value *va = lang_path_get(a, o->parts, o->len);
        const Value *vb = lang_path_get(b, o->parts, o->len);
        Value none = lang_value_none();
        int c = lang_value_compare(va ? va : &none, vb ? vb : &none);
        if (c)
            return o->descending ? -c : c;
    }
    return 0;
}

/* Keeps the view of a record the SELECT's WHERE holds for in the array
 * "views". */
static void
keep_view(Exec *x, const TableDef *def, Record *r, Value *view, void *views)
{
    (void)x, (void)def, (void)r;
    lang_value_array_push(views, *view);
    *view = lang_value_none();
}

/* select -> SELECT fields FROM target [WHERE] [ORDER BY] [LIMIT] */
static LangErrorCode
select_records(Exec *x, const Stmt *st, TableDef *def)
{
    Value views = lang_value_array(), rows = lang_value_array();
    /* SELECT of a record that does not exist answers [] */
    lang_exec_each_record(x, def, &st->u.select.from, st->u.select.where,
                          WALK_SKIP_ABSENT | WALK_OWN_ONLY, keep_view, &views);
    if (!x->err->code && st->u.select.norder && views.u.arr.len) {
        sort_stmt = st;
        qsort(views.u.arr.items, views.u.arr.len, sizeof(Value), compare_rows);
    }
    size_t n = views.u.arr.len;
    if (st->u.select.limit >= 0 && (uint64_t)st->u.select.limit < n)
        n = (size_t)st->u.select.limit;
    for (size_t i = 0; i < n && !x->err->code; i++) {
        Value row;
        if (!lang_select_project(x, st, &views.u.arr.items[i], &row))
            lang_value_array_push(&rows, row);
    }
    lang_value_free(&views);
    return lang_exec_answer_records(x, &rows);
}

/* ---- tables and the session ---- */

/* info -> INFO FOR TABLE name */
static LangErrorCode
table_info(Exec *x, const Stmt *st, TableDef *def)
{
    (void)st;
    Value info = lang_table_def_info(def);
    lang_exec_answer(x, &info);
    return LANG_OK;
}

/* drop -> DROP (QUEUE | COLLECTION | TABLE) name */
static LangErrorCode
drop_table(Exec *x, const Stmt *st, TableDef *def)
{
    const char *name = st->u.table_op.table;
    int want = st->u.table_op.kind;
    if ((want == 1 && !def->is_queue) || (want == 2 && def->is_queue))
        return lang_error_set(x->err, LANG_WRONG_KIND, "'%s' is a %s: DROP %s refuses it", name,
                              def->is_queue ? "queue" : "collection",
                              want == 1 ? "QUEUE" : "COLLECTION");
    int rc = lang_after_drop(x->txn, def);
    if (!rc)
        rc = lang_perkeys_drop(x->txn, def);
    return answer_null(x, rc ? rc : store_table_drop(x->txn, name), "dropping a table");
}

LangErrorCode
lang_exec_table_statement(Exec *x, const Stmt *st)
{
    switch (st->kind) {
    case ST_DEFINE_FIELD:
        return on_table(x, st, st->u.define_field.table, ACCESS_OWNER, define_field);
    case ST_DEFINE_INDEX:
        return on_table(x, st, st->u.define_index.table, ACCESS_OWNER, define_index);
    case ST_CREATE: return on_table(x, st, st->u.write.target.table, ACCESS_WRITE, create_record);
    case ST_UPDATE: return on_table(x, st, st->u.write.target.table, ACCESS_WRITE, update_records);
    case ST_UPSERT: return on_table(x, st, st->u.write.target.table, ACCESS_WRITE, upsert_record);
    case ST_DELETE: return delete_records(x, st);
    case ST_SELECT: return on_table(x, st, st->u.select.from.table, ACCESS_READ, select_records);
    case ST_PAUSE:
    case ST_RESUME: return on_table(x, st, st->u.table_op.table, ACCESS_OWNER, pause_queue);
    case ST_ALTER_QUEUE: return on_table(x, st, st->u.alter.table, ACCESS_OWNER, alter_queue);
    case ST_INFO_TABLE: return on_table(x, st, st->u.table_op.table, ACCESS_READ, table_info);
    case ST_DROP: return on_table(x, st, st->u.table_op.table, ACCESS_OWNER, drop_table);
    default: return lang_error_set(x->err, LANG_PARSE_ERROR, "unexpected statement");
    }
}

/* use -> USE CONSUMER name */
LangErrorCode
lang_exec_use_consumer(Exec *x, const Stmt *st)
{
    free(x->s->consumer);
    x->s->consumer = lang_xstrdup(st->u.use_consumer.name);
    lang_instance_mint(x->s->instance);
    lang_buf_puts(x->out, "null");
    return LANG_OK;
}
