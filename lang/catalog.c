/* catalog.c — table definitions: their stored form, the statement that
 * recreates them, and what INFO FOR TABLE answers. */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Adds string "s" under "key" when it is not NULL. */
static void
set_str(Value *o, const char *key, const char *s)
{
    if (s)
        lang_value_object_set(o, key, lang_value_cstring(s));
}

/* A heap copy of the string at "key" of "o", or NULL when absent. */
static char *
get_str(const Value *o, const char *key)
{
    const Value *v = lang_value_object_get(o, key);
    return v && v->kind == VAL_STRING ? lang_xstrdup(v->u.str.s) : NULL;
}

static int64_t
get_int(const Value *o, const char *key)
{
    const Value *v = lang_value_object_get(o, key);
    return v && (v->kind == VAL_INT || v->kind == VAL_DURATION) ? v->u.i : 0;
}

/* AT MOST … PER clauses from the "from"th on, as [{"limit","field"}, …]. */
static Value
per_keys_value(const TableDecl *d, size_t from)
{
    Value a = lang_value_array();
    for (size_t i = from; i < d->nper; i++) {
        Value per = lang_value_object();
        lang_value_object_set(&per, "limit", lang_value_int(d->per[i].limit));
        lang_value_object_set(&per, "field", lang_value_cstring(d->per[i].field));
        lang_value_array_push(&a, per);
    }
    return a;
}

/* Appends to "d" the AT MOST … PER clauses of array "a" (per_keys_value's
 * form), skipping what is malformed. */
static void
per_keys_from_value(const Value *a, TableDecl *d)
{
    for (size_t i = 0; a && a->kind == VAL_ARRAY && i < a->u.arr.len && d->nper < LANG_PER_MAX;
         i++) {
        char *field = get_str(&a->u.arr.items[i], "field");
        int64_t limit = get_int(&a->u.arr.items[i], "limit");
        if (field && limit > 0)
            d->per[d->nper++] = (PerKey){limit, field};
        else
            free(field);
    }
}

void
lang_table_def_encode(const TableDef *def, Buf *out)
{
    const TableDecl *d = &def->decl;
    Value o = lang_value_object();
    lang_value_object_set(&o, "kind", lang_value_cstring(def->is_queue ? "queue" : "collection"));
    set_str(&o, "name", d->name);
    if (def->is_queue)
        lang_value_object_set(&o, "timeout", lang_value_duration(d->timeout_ns));
    if (d->attempts)
        lang_value_object_set(&o, "attempts", lang_value_int(d->attempts));
    set_str(&o, "priority_by", d->priority_by);
    set_str(&o, "not_before", d->not_before);
    if (d->deduplicate_ns)
        lang_value_object_set(&o, "deduplicate", lang_value_duration(d->deduplicate_ns));
    /* the first key as a definition stored before several existed has it */
    if (d->nper) {
        lang_value_object_set(&o, "per_group", lang_value_int(d->per[0].limit));
        set_str(&o, "per_field", d->per[0].field);
    }
    if (d->nper > 1)
        lang_value_object_set(&o, "per_more", per_keys_value(d, 1));
    if (d->rate) {
        lang_value_object_set(&o, "rate", lang_value_int(d->rate));
        lang_value_object_set(&o, "rate_window", lang_value_duration(d->rate_window_ns));
    }
    if (d->keep_ns)
        lang_value_object_set(&o, "keep", lang_value_duration(d->keep_ns));
    if (d->coalesce)
        lang_value_object_set(&o, "coalesce", lang_value_bool(true));
    if (d->schema != SCHEMA_UNSPECIFIED)
        lang_value_object_set(&o, "schema", lang_value_int(d->schema));
    set_str(&o, "graph", d->graph);
    if (def->uid >= 0)
        lang_value_object_set(&o, "uid", lang_value_int(def->uid));
    if (def->gid >= 0)
        lang_value_object_set(&o, "gid", lang_value_int(def->gid));
    if (def->mode >= 0)
        lang_value_object_set(&o, "mode", lang_value_int(def->mode));
    if (def->paused)
        lang_value_object_set(&o, "paused", lang_value_bool(true));
    if (def->after_used)
        lang_value_object_set(&o, "after_used", lang_value_bool(true));

    Value fields = lang_value_array();
    for (size_t i = 0; i < def->nfields; i++) {
        Value f = lang_value_object();
        set_str(&f, "name", def->fields[i].name);
        set_str(&f, "type", def->fields[i].type);
        lang_value_object_set(&f, "required", lang_value_bool(def->fields[i].required));
        lang_value_array_push(&fields, f);
    }
    lang_value_object_set(&o, "fields", fields);

    Value indexes = lang_value_array();
    for (size_t i = 0; i < def->nindexes; i++) {
        Value ix = lang_value_object();
        set_str(&ix, "name", def->indexes[i].name);
        Value cols = lang_value_array();
        for (size_t j = 0; j < def->indexes[i].nfields; j++)
            lang_value_array_push(&cols, lang_value_cstring(def->indexes[i].fields[j]));
        lang_value_object_set(&ix, "fields", cols);
        lang_value_array_push(&indexes, ix);
    }
    lang_value_object_set(&o, "indexes", indexes);

    lang_value_encode(&o, out);
    lang_value_free(&o);
}

/* Fills "def" from its decoded stored form "o". */
static void
table_def_from_value(const Value *o, TableDef *def)
{
    const Value *kind = lang_value_object_get(o, "kind");
    def->is_queue = kind && kind->kind == VAL_STRING && strcmp(kind->u.str.s, "queue") == 0;
    TableDecl *d = &def->decl;
    d->name = get_str(o, "name");
    d->timeout_ns = get_int(o, "timeout");
    d->attempts = get_int(o, "attempts");
    d->priority_by = get_str(o, "priority_by");
    d->not_before = get_str(o, "not_before");
    d->deduplicate_ns = get_int(o, "deduplicate");
    /* absent from a definition stored before AT MOST existed: none */
    char *field = get_str(o, "per_field");
    if (field && get_int(o, "per_group") > 0)
        d->per[d->nper++] = (PerKey){get_int(o, "per_group"), field};
    else
        free(field);
    if (d->nper)
        per_keys_from_value(lang_value_object_get(o, "per_more"), d);
    d->rate = get_int(o, "rate");
    d->rate_window_ns = d->rate ? get_int(o, "rate_window") : 0;
    if (d->rate_window_ns <= 0)
        d->rate = d->rate_window_ns = 0;
    d->keep_ns = get_int(o, "keep");
    const Value *coalesce = lang_value_object_get(o, "coalesce");
    d->coalesce = coalesce && coalesce->kind == VAL_BOOL && coalesce->u.b;
    d->schema = (SchemaMode)get_int(o, "schema");
    d->graph = get_str(o, "graph");
    def->uid = lang_value_object_get(o, "uid") ? get_int(o, "uid") : -1;
    def->gid = lang_value_object_get(o, "gid") ? get_int(o, "gid") : -1;
    def->mode = lang_value_object_get(o, "mode") ? get_int(o, "mode") : -1;
    const Value *paused = lang_value_object_get(o, "paused");
    def->paused = paused && paused->kind == VAL_BOOL && paused->u.b;
    const Value *after_used = lang_value_object_get(o, "after_used");
    def->after_used = after_used && after_used->kind == VAL_BOOL && after_used->u.b;

    const Value *fields = lang_value_object_get(o, "fields");
    if (fields && fields->kind == VAL_ARRAY && fields->u.arr.len) {
        def->fields = lang_xcalloc(fields->u.arr.len, sizeof *def->fields);
        for (size_t i = 0; i < fields->u.arr.len; i++) {
            const Value *f = &fields->u.arr.items[i];
            def->fields[i].name = get_str(f, "name");
            def->fields[i].type = get_str(f, "type");
            const Value *req = lang_value_object_get(f, "required");
            def->fields[i].required = req && req->kind == VAL_BOOL && req->u.b;
        }
        def->nfields = fields->u.arr.len;
    }
    const Value *indexes = lang_value_object_get(o, "indexes");
    if (indexes && indexes->kind == VAL_ARRAY && indexes->u.arr.len) {
        def->indexes = lang_xcalloc(indexes->u.arr.len, sizeof *def->indexes);
        for (size_t i = 0; i < indexes->u.arr.len; i++) {
            const Value *ix = &indexes->u.arr.items[i];
            IndexDef *id = &def->indexes[i];
            id->name = get_str(ix, "name");
            const Value *cols = lang_value_object_get(ix, "fields");
            if (cols && cols->kind == VAL_ARRAY && cols->u.arr.len) {
                id->fields = lang_xcalloc(cols->u.arr.len, sizeof *id->fields);
                for (size_t j = 0; j < cols->u.arr.len; j++)
                    id->fields[j] = lang_xstrdup(cols->u.arr.items[j].kind == VAL_STRING
                                                     ? cols->u.arr.items[j].u.str.s
                                                     : "");
                id->nfields = cols->u.arr.len;
            }
        }
        def->nindexes = indexes->u.arr.len;
    }
}

void
lang_table_def_copy(const TableDef *src, TableDef *dst)
{
    *dst = *src;
    TableDecl *d = &dst->decl;
    d->name = d->name ? lang_xstrdup(d->name) : NULL;
    d->priority_by = d->priority_by ? lang_xstrdup(d->priority_by) : NULL;
    d->not_before = d->not_before ? lang_xstrdup(d->not_before) : NULL;
    for (size_t i = 0; i < d->nper; i++)
        d->per[i].field = lang_xstrdup(d->per[i].field);
    d->graph = d->graph ? lang_xstrdup(d->graph) : NULL;
    if (src->nfields) {
        dst->fields = lang_xcalloc(src->nfields, sizeof *dst->fields);
        for (size_t i = 0; i < src->nfields; i++) {
            dst->fields[i].name = lang_xstrdup(src->fields[i].name);
            dst->fields[i].type = src->fields[i].type ? lang_xstrdup(src->fields[i].type) : NULL;
            dst->fields[i].required = src->fields[i].required;
        }
    }
    if (src->nindexes) {
        dst->indexes = lang_xcalloc(src->nindexes, sizeof *dst->indexes);
        for (size_t i = 0; i < src->nindexes; i++) {
            const IndexDef *from = &src->indexes[i];
            IndexDef *to = &dst->indexes[i];
            to->name = lang_xstrdup(from->name);
            to->nfields = from->nfields;
            to->fields = from->nfields ? lang_xcalloc(from->nfields, sizeof *to->fields) : NULL;
            for (size_t j = 0; j < from->nfields; j++)
                to->fields[j] = lang_xstrdup(from->fields[j]);
        }
    }
}

/* Definitions decoded lately, by the bytes they were decoded from: a
 * statement reads its table's catalog entry every time (so a definition
 * changed by another process is always seen), but decodes it only when the
 * bytes differ from those it last decoded. */
enum { DEF_CACHE_SLOTS = 16 };
static struct {
    uint32_t id;
    void *bytes;
    size_t len;
    TableDef def;
} def_cache[DEF_CACHE_SLOTS];
static unsigned def_cache_next;
static pthread_mutex_t def_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* Copies the cached definition of table "id" decoded from "bytes" into
 * "def"; false when there is none. */
static bool
def_cache_get(uint32_t id, StoreBytes bytes, TableDef *def)
{
    bool hit = false;
    pthread_mutex_lock(&def_cache_lock);
    for (unsigned i = 0; i < DEF_CACHE_SLOTS && !hit; i++)
        if (def_cache[i].bytes && def_cache[i].id == id && def_cache[i].len == bytes.len &&
            memcmp(def_cache[i].bytes, bytes.data, bytes.len) == 0) {
            lang_table_def_copy(&def_cache[i].def, def);
            hit = true;
        }
    pthread_mutex_unlock(&def_cache_lock);
    return hit;
}

/* Remembers "def" as decoded from "bytes". */
static void
def_cache_put(StoreBytes bytes, const TableDef *def)
{
    pthread_mutex_lock(&def_cache_lock);
    unsigned i = def_cache_next++ % DEF_CACHE_SLOTS;
    free(def_cache[i].bytes);
    lang_table_def_free(&def_cache[i].def);
    def_cache[i].id = def->id;
    def_cache[i].bytes = lang_xmalloc(bytes.len);
    memcpy(def_cache[i].bytes, bytes.data, bytes.len);
    def_cache[i].len = bytes.len;
    lang_table_def_copy(def, &def_cache[i].def);
    pthread_mutex_unlock(&def_cache_lock);
}

/* A table with no recorded owner (defined before tables had owners)
 * belongs to the owner of the store, for the file view and ctl alike. */
static void
owner_default(StoreTxn *txn, TableDef *def)
{
    uint32_t uid, gid;
    if (def->uid >= 0 || !store_owner(txn, &uid, &gid))
        return;
    def->uid = uid;
    if (def->gid < 0)
        def->gid = gid;
}

int
lang_table_def_decode(StoreBytes bytes, TableDef *def)
{
    Value o;
    memset(def, 0, sizeof *def);
    if (lang_value_decode(bytes.data, bytes.len, &o) < 0 || o.kind != VAL_OBJECT) {
        lang_value_free(&o);
        return -1;
    }
    table_def_from_value(&o, def);
    lang_value_free(&o);
    return 0;
}

bool
lang_hidden_table_name(const char *name)
{
    return (unsigned char)name[0] < 0x20;
}

int
lang_hidden_table(StoreTxn *txn, const char *name, bool make, uint32_t *id)
{
    int rc = store_table_get(txn, name, id, NULL);
    if (rc != STORE_NOTFOUND || !make)
        return rc;
    TableDef def = {.uid = -1, .gid = -1, .mode = -1, .decl = {.name = (char *)name}};
    Buf b = {0};
    lang_table_def_encode(&def, &b);
    rc = store_table_create(txn, name, (StoreBytes){b.data, b.len}, id);
    lang_buf_free(&b);
    /* another transaction (a server's) made it meanwhile */
    return rc == STORE_EXISTS ? store_table_get(txn, name, id, NULL) : rc;
}

LangErrorCode
lang_table_def_load(StoreTxn *txn, const char *name, TableDef *def, LangError *err)
{
    memset(def, 0, sizeof *def);
    StoreBytes bytes;
    uint32_t id;
    int rc =
        lang_hidden_table_name(name) ? STORE_NOTFOUND : store_table_get(txn, name, &id, &bytes);
    if (rc == STORE_NOTFOUND)
        return lang_error_set(err, LANG_NO_SUCH_TABLE, "no table named '%s'", name);
    if (rc)
        return lang_store_error(rc, "reading the catalog", err);
    if (def_cache_get(id, bytes, def)) {
        owner_default(txn, def);
        return LANG_OK;
    }
    if (lang_table_def_decode(bytes, def) < 0)
        return lang_error_set(err, LANG_STORE_ERROR, "the definition of '%s' is unreadable", name);
    def->id = id;
    if (!def->decl.name)
        def->decl.name = lang_xstrdup(name);
    def_cache_put(bytes, def);
    owner_default(txn, def);
    return LANG_OK;
}

int
lang_table_redefine(StoreTxn *txn, const char *name, const TableDef *def)
{
    Buf b = {0};
    lang_table_def_encode(def, &b);
    int rc = store_table_redefine(txn, name, (StoreBytes){b.data, b.len});
    lang_buf_free(&b);
    return rc;
}

void
lang_table_def_free(TableDef *def)
{
    lang_table_decl_free(&def->decl);
    for (size_t i = 0; i < def->nfields; i++) {
        free(def->fields[i].name);
        free(def->fields[i].type);
    }
    free(def->fields);
    for (size_t i = 0; i < def->nindexes; i++) {
        free(def->indexes[i].name);
        for (size_t j = 0; j < def->indexes[i].nfields; j++)
            free(def->indexes[i].fields[j]);
        free(def->indexes[i].fields);
    }
    free(def->indexes);
    memset(def, 0, sizeof *def);
}

/* True when "s" can be written bare: [A-Za-z_][A-Za-z0-9_]*. */
static bool
is_plain_ident(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

/* Appends "name" as a statement would spell it: bare, or `backticked`. */
static void
ident_format(const char *name, Buf *out)
{
    if (is_plain_ident(name)) {
        lang_buf_puts(out, name);
        return;
    }
    lang_buf_putc(out, '`');
    for (const char *p = name; *p; p++) {
        if (*p == '`' || *p == '\\')
            lang_buf_putc(out, '\\');
        lang_buf_putc(out, *p);
    }
    lang_buf_putc(out, '`');
}

/* Appends a field path "a.b", each part spelled as an identifier. */
static void
path_format(const char *path, Buf *out)
{
    LangPath p;
    lang_path_split(path, &p);
    for (size_t i = 0; i < p.len; i++) {
        if (i)
            lang_buf_putc(out, '.');
        ident_format(p.parts[i], out);
    }
    lang_path_free(&p);
}

/* The statement that recreates the table: "DEFINE QUEUE jobs TIMEOUT 30s …". */
static void
table_def_statement(const TableDef *def, Buf *out)
{
    const TableDecl *d = &def->decl;
    lang_buf_puts(out, def->is_queue ? "DEFINE QUEUE " : "DEFINE COLLECTION ");
    ident_format(d->name, out);
    if (def->is_queue) {
        lang_buf_puts(out, " TIMEOUT ");
        lang_duration_format(d->timeout_ns, out);
        if (d->attempts)
            lang_buf_printf(out, " ATTEMPTS %lld", (long long)d->attempts);
        if (d->priority_by) {
            lang_buf_puts(out, " PRIORITY BY ");
            path_format(d->priority_by, out);
        }
        if (d->not_before) {
            lang_buf_puts(out, " NOT BEFORE ");
            path_format(d->not_before, out);
        }
        if (d->deduplicate_ns) {
            lang_buf_puts(out, " DEDUPLICATE ");
            lang_duration_format(d->deduplicate_ns, out);
        }
        for (size_t i = 0; i < d->nper; i++) {
            lang_buf_printf(out, " AT MOST %lld PER ", (long long)d->per[i].limit);
            path_format(d->per[i].field, out);
        }
        if (d->rate) {
            lang_buf_printf(out, " AT MOST %lld EVERY ", (long long)d->rate);
            lang_duration_format(d->rate_window_ns, out);
        }
        if (d->keep_ns) {
            lang_buf_puts(out, " KEEP ");
            lang_duration_format(d->keep_ns, out);
        }
        if (d->coalesce)
            lang_buf_puts(out, " COALESCE");
    }
    if (d->schema == SCHEMA_FULL)
        lang_buf_puts(out, " SCHEMAFULL");
    else if (d->schema == SCHEMA_LESS)
        lang_buf_puts(out, " SCHEMALESS");
    if (d->graph) {
        lang_buf_puts(out, " IN ");
        ident_format(d->graph, out);
    }
}

/* The opening of a DEFINE FIELD or DEFINE INDEX ("kind") statement on
 * table "def": "DEFINE <kind> <name> ON <table>", its name as "format"
 * writes it. */
static void
define_on_statement(const char *kind, const char *name, void (*format)(const char *, Buf *),
                    const TableDef *def, Buf *out)
{
    lang_buf_printf(out, "DEFINE %s ", kind);
    format(name, out);
    lang_buf_puts(out, " ON ");
    ident_format(def->decl.name, out);
}

/* "DEFINE FIELD url ON jobs TYPE string REQUIRED", as a string value. */
static Value
field_statement(const TableDef *def, const FieldDef *f)
{
    Buf b = {0};
    define_on_statement("FIELD", f->name, path_format, def, &b);
    if (f->type)
        lang_buf_printf(&b, " TYPE %s", f->type);
    if (f->required)
        lang_buf_puts(&b, " REQUIRED");
    Value text = lang_value_string(b.data, b.len);
    lang_buf_free(&b);
    return text;
}

/* "DEFINE INDEX by_severity ON alerts FIELDS severity", as a string value. */
static Value
index_statement(const TableDef *def, const IndexDef *ix)
{
    Buf b = {0};
    define_on_statement("INDEX", ix->name, ident_format, def, &b);
    lang_buf_puts(&b, " FIELDS ");
    for (size_t i = 0; i < ix->nfields; i++) {
        if (i)
            lang_buf_puts(&b, ", ");
        path_format(ix->fields[i], &b);
    }
    Value text = lang_value_string(b.data, b.len);
    lang_buf_free(&b);
    return text;
}

Value
lang_table_def_info(const TableDef *def)
{
    const TableDecl *d = &def->decl;
    Buf b = {0};
    Value o = lang_value_object();
    table_def_statement(def, &b);
    lang_value_object_set(&o, "definition", lang_value_string(b.data, b.len));
    lang_value_object_set(&o, "kind", lang_value_cstring(def->is_queue ? "queue" : "collection"));
    lang_value_object_set(&o, "name", lang_value_cstring(d->name));
    if (def->is_queue)
        lang_value_object_set(&o, "paused", lang_value_bool(def->paused));
    if (def->is_queue) {
        lang_value_object_set(&o, "timeout", lang_value_duration(d->timeout_ns));
        lang_value_object_set(&o, "attempts",
                              d->attempts ? lang_value_int(d->attempts) : lang_value_null());
        lang_value_object_set(&o, "priority_by",
                              d->priority_by ? lang_value_cstring(d->priority_by)
                                             : lang_value_null());
        lang_value_object_set(&o, "not_before",
                              d->not_before ? lang_value_cstring(d->not_before)
                                            : lang_value_null());
        lang_value_object_set(&o, "deduplicate",
                              d->deduplicate_ns ? lang_value_duration(d->deduplicate_ns)
                                                : lang_value_null());
        /* AT MOST … PER and EVERY: shown only when declared */
        if (d->nper) {
            Value keys = per_keys_value(d, 0);
            /* the first as an object, as before several were possible */
            lang_value_object_set(&o, "at_most_per", lang_value_clone(&keys.u.arr.items[0]));
            lang_value_object_set(&o, "at_most_per_keys", keys);
        }
        if (d->rate) {
            Value every = lang_value_object();
            lang_value_object_set(&every, "limit", lang_value_int(d->rate));
            lang_value_object_set(&every, "window", lang_value_duration(d->rate_window_ns));
            lang_value_object_set(&o, "at_most_every", every);
        }
        /* KEEP and COALESCE: shown only when declared */
        if (d->keep_ns)
            lang_value_object_set(&o, "keep", lang_value_duration(d->keep_ns));
        if (d->coalesce)
            lang_value_object_set(&o, "coalesce", lang_value_bool(true));
    }
    lang_value_object_set(&o, "schemafull", lang_value_bool(d->schema == SCHEMA_FULL));
    lang_value_object_set(&o, "graph", d->graph ? lang_value_cstring(d->graph) : lang_value_null());

    lang_buf_free(&b);
    Value fields = lang_value_object();
    for (size_t i = 0; i < def->nfields; i++)
        lang_value_object_set(&fields, def->fields[i].name, field_statement(def, &def->fields[i]));
    lang_value_object_set(&o, "fields", fields);
    Value indexes = lang_value_object();
    for (size_t i = 0; i < def->nindexes; i++)
        lang_value_object_set(&indexes, def->indexes[i].name,
                              index_statement(def, &def->indexes[i]));
    lang_value_object_set(&o, "indexes", indexes);
    return o;
}
