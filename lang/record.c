/* record.c — a record's stored form and the queue rules that decide where
 * it waits: held until its claimed_until, delayed until its NOT BEFORE
 * instant, dead at the ATTEMPTS ceiling, or ready. */
#include <stdlib.h>
#include <string.h>

#include "../store/be.h"
#include "engine.h"
#include "lang.h"

/* The stored form: a version byte, the holder instance (length byte and
 * bytes), the instant the record was created or last released (8 bytes),
 * the instants its content was written, its hold last changed and its
 * last hold was taken (8 bytes each; format 2, which the times of its
 * file come from), the identity (8-byte length, then value_encode form)
 * and the fields (value_encode form).  The identity travels with the
 * record so a walk or a claim can name it without decoding the store key.
 * Format 1 (no times) is still read: its times are its "since". */
#define RECORD_FORMAT 2
#define RECORD_FORMAT_UNTIMED 1

/* The bytes between the holder and the identity's length: 8 in format 1,
 * 32 in format 2; 0 for a version this build does not read. */
static size_t
times_len(unsigned char version)
{
    return version == RECORD_FORMAT ? 32 : version == RECORD_FORMAT_UNTIMED ? 8 : 0;
}

void
record_free(Record *r)
{
    value_free(&r->key);
    value_free(&r->fields);
    free(r->holder);
    r->holder = NULL;
}

void
record_key_encode(const Value *key, Buf *out)
{
    value_key_encode(key, false, out);
}

void
record_encode(const Record *r, Buf *out)
{
    size_t hlen = r->holder ? strlen(r->holder) : 0;
    if (hlen > 255)
        hlen = 255;
    buf_putc(out, RECORD_FORMAT);
    buf_putc(out, (char)hlen);
    buf_append(out, r->holder ? r->holder : "", hlen);
    buf_put_u64be(out, (uint64_t)r->since);
    buf_put_u64be(out, (uint64_t)r->written);
    buf_put_u64be(out, (uint64_t)r->changed);
    buf_put_u64be(out, (uint64_t)r->claimed);
    Buf key = {0};
    value_encode(&r->key, &key);
    buf_put_u64be(out, key.len);
    buf_append(out, key.data, key.len);
    buf_free(&key);
    value_encode(&r->fields, out);
}

LangErrorCode
record_decode(StoreBytes bytes, Record *r, LangError *err)
{
    const unsigned char *p = bytes.data;
    size_t n = bytes.len, tl;
    if (n < 2 || !(tl = times_len(p[0])) || n < 2u + p[1] + tl + 8u)
        goto bad;
    size_t hlen = p[1];
    free(r->holder);
    r->holder = hlen ? xstrndup((const char *)p + 2, hlen) : NULL;
    p += 2 + hlen;
    n -= 2 + hlen;
    r->since = (int64_t)be_get64(p);
    if (tl == 32) {
        r->written = (int64_t)be_get64(p + 8);
        r->changed = (int64_t)be_get64(p + 16);
        r->claimed = (int64_t)be_get64(p + 24);
    } else {
        r->written = r->changed = r->since;
        r->claimed = 0;
    }
    p += tl;
    n -= tl;
    uint64_t klen = be_get64(p);
    p += 8;
    n -= 8;
    if (klen > n)
        goto bad;
    value_free(&r->key);
    value_free(&r->fields);
    if (value_decode(p, (size_t)klen, &r->key) < 0 ||
        value_decode(p + klen, n - (size_t)klen, &r->fields) < 0 ||
        r->fields.kind != VAL_OBJECT)
        goto bad;
    return LANG_OK;
bad:
    return lang_error_set(err, LANG_STORE_ERROR, "a stored record is unreadable");
}

int
record_decode_key(StoreBytes bytes, Value *key)
{
    const unsigned char *p = bytes.data;
    size_t n = bytes.len, tl;
    if (n < 2 || !(tl = times_len(p[0])) || n < 2u + p[1] + tl + 8u)
        return -1;
    size_t skip = 2 + (size_t)p[1] + tl;
    p += skip;
    n -= skip;
    uint64_t klen = be_get64(p);
    if (klen > n - 8)
        return -1;
    return value_decode(p + 8, (size_t)klen, key);
}

Value
record_view(const Record *r, const TableDef *def)
{
    Value v = value_clone(&r->fields);
    value_object_set(&v, "id", value_record(def->decl.name, value_clone(&r->key)));
    return v;
}

bool
record_is_held(const Record *r, int64_t now)
{
    const Value *until = value_object_get(&r->fields, FIELD_CLAIMED_UNTIL);
    return until && until->kind == VAL_DATETIME && until->u.ns > now;
}

/* The value at dotted "path" in object "o", or NULL. */
static const Value *
field_at(const Value *o, const char *path)
{
    if (!strchr(path, '.'))
        return value_object_get(o, path);
    LangPath p;
    lang_path_split(path, &p);
    const Value *v = lang_path_get(o, p.parts, p.len);
    lang_path_free(&p);
    return v;
}

int64_t
record_not_before(const Record *r, const TableDef *def)
{
    if (!def->decl.not_before)
        return 0;
    const Value *v = field_at(&r->fields, def->decl.not_before);
    return v && v->kind == VAL_DATETIME ? v->u.ns : 0;
}

bool
record_is_dead(const Record *r, const TableDef *def)
{
    if (!def->decl.attempts)
        return false;
    const Value *a = value_object_get(&r->fields, FIELD_ATTEMPTS);
    return a && a->kind == VAL_INT && a->u.i >= def->decl.attempts;
}

LangErrorCode
record_fence(const TableDef *def, const Record *r, int64_t fence, int64_t now, LangError *err)
{
    const Value *h = value_object_get(&r->fields, FIELD_HOLD);
    bool held = record_is_held(r, now);
    if (fence == 0 || (fence == LANG_FENCE_DEAD && !held && record_is_dead(r, def)) ||
        (fence > 0 && held && h && h->kind == VAL_INT && h->u.i == fence))
        return LANG_OK;
    RecordId id = {def->decl.name, (Value *)&r->key};
    Buf name = {0};
    record_id_format(&id, &name);
    if (fence > 0)
        lang_error_set(err, LANG_NO_SUCH_RECORD, "%s is no longer held by hold %lld",
                       name.data, (long long)fence);
    else
        lang_error_set(err, LANG_NO_SUCH_RECORD, "%s is no longer dead", name.data);
    buf_free(&name);
    return LANG_NO_SUCH_RECORD;
}

int64_t
record_available_at(const Record *r, const TableDef *def)
{
    int64_t at = r->since;
    const Value *until = value_object_get(&r->fields, FIELD_CLAIMED_UNTIL);
    if (until && until->kind == VAL_DATETIME && until->u.ns > at)
        at = until->u.ns;
    int64_t nb = record_not_before(r, def);
    return nb > at ? nb : at;
}

LangErrorCode
meta_get_i64(StoreTxn *txn, uint32_t table, const void *name, size_t len, int64_t *out,
             LangError *err)
{
    StoreBytes v;
    *out = 0;
    int rc = store_meta_get(txn, table, (StoreBytes){name, len}, &v);
    if (rc == STORE_NOTFOUND)
        return LANG_OK;
    if (rc)
        return lang_store_error(rc, "reading table meta", err);
    /* A shorter value is the big-endian integer of the bytes it has. */
    unsigned char be[8] = {0};
    size_t n = v.len < sizeof be ? v.len : sizeof be;
    memcpy(be + sizeof be - n, v.data, n);
    *out = (int64_t)be_get64(be);
    return LANG_OK;
}

LangErrorCode
meta_put_i64(StoreTxn *txn, uint32_t table, const void *name, size_t len, int64_t value,
             LangError *err)
{
    unsigned char be[8];
    be_put64(be, (uint64_t)value);
    int rc = store_meta_put(txn, table, (StoreBytes){name, len}, (StoreBytes){be, sizeof be});
    return rc ? lang_store_error(rc, "writing table meta", err) : LANG_OK;
}

LangErrorCode
counter_get(StoreTxn *txn, const TableDef *def, const char *what, int64_t *out, LangError *err)
{
    return meta_get_i64(txn, def->id, what, strlen(what), out, err);
}

LangErrorCode
counter_add(StoreTxn *txn, const TableDef *def, const char *what, int64_t by, LangError *err)
{
    int64_t n;
    if (counter_get(txn, def, what, &n, err))
        return err->code;
    return meta_put_i64(txn, def->id, what, strlen(what), n + by, err);
}

LangErrorCode
lang_store_error(int status, const char *what, LangError *err)
{
    switch (status) {
    case STORE_FULL:
        return lang_error_set(err, LANG_STORE_FULL, "the store is full while %s", what);
    case STORE_TOOBIG:
        return lang_error_set(err, LANG_TOO_LARGE,
                              "an identity or key is longer than %d bytes while %s",
                              STORE_MAX_KEY, what);
    default:
        return lang_error_set(err, LANG_STORE_ERROR, "%s while %s", store_strerror(status),
                              what);
    }
}

LangErrorCode
record_store(StoreTxn *txn, const TableDef *def, const Record *r, int64_t now, LangError *err)
{
    Buf key = {0}, val = {0}, order = {0};
    record_key_encode(&r->key, &key);
    record_encode(r, &val);
    if (val.len > RECORD_MAX_BYTES) {
        buf_free(&key);
        buf_free(&val);
        return lang_error_set(err, LANG_TOO_LARGE, "a record is larger than %zu MiB",
                              RECORD_MAX_BYTES >> 20);
    }
    StoreSlot slot, *slotp = NULL;
    if (def->is_queue) {
        bool held = record_is_held(r, now);
        if (held || !record_is_dead(r, def)) {
            if (def->decl.priority_by) {
                const Value *p = field_at(&r->fields, def->decl.priority_by);
                Value none = value_none();
                value_key_encode(p ? p : &none, true, &order);
                if (order.len > STORE_MAX_KEY - 16)
                    order.len = STORE_MAX_KEY - 16;
            } else {
                buf_append(&order, key.data, key.len);
            }
            /* A hold waits for its end; then the record is dead (at the
             * ceiling), delayed (NOT BEFORE later still) or ready. */
            int64_t wake = 0, then = 0;
            int64_t nb = record_not_before(r, def);
            if (held) {
                wake = value_object_get(&r->fields, FIELD_CLAIMED_UNTIL)->u.ns;
                then = record_is_dead(r, def) ? STORE_SLOT_RETIRE : nb > wake ? nb : 0;
            } else if (nb > now) {
                wake = nb;
            }
            slot = (StoreSlot){order.data, order.len, wake, held, then};
            slotp = &slot;
        }
    }
    int rc = store_record_put(txn, def->id, (StoreBytes){key.data, key.len},
                              (StoreBytes){val.data, val.len}, slotp);
    buf_free(&key);
    buf_free(&val);
    buf_free(&order);
    return rc ? lang_store_error(rc, "writing a record", err) : LANG_OK;
}

LangErrorCode
record_load(StoreTxn *txn, const TableDef *def, const Value *key, Record *r, LangError *err)
{
    Buf kb = {0};
    record_key_encode(key, &kb);
    StoreBytes val;
    int rc = store_record_get(txn, def->id, (StoreBytes){kb.data, kb.len}, &val, NULL);
    buf_free(&kb);
    if (rc == STORE_NOTFOUND || rc == STORE_TOOBIG) {
        RecordId id = {def->decl.name, (Value *)key};
        Buf name = {0};
        record_id_format(&id, &name);
        lang_error_set(err, LANG_NO_SUCH_RECORD, "no record %s", name.data);
        buf_free(&name);
        return LANG_NO_SUCH_RECORD;
    }
    if (rc)
        return lang_store_error(rc, "reading a record", err);
    if (record_decode(val, r, err))
        return err->code;
    value_free(&r->key);
    r->key = value_clone(key);
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
            *v = value_float(f);
        }
        return v->kind == VAL_FLOAT;
    }
    if (strcmp(type, "number") == 0)
        return v->kind == VAL_INT || v->kind == VAL_FLOAT;
    if (strcmp(type, "bool") == 0)
        return v->kind == VAL_BOOL;
    if (strcmp(type, "duration") == 0) {
        int64_t ns;
        if (v->kind == VAL_STRING && duration_parse(v->u.str.s, v->u.str.len, &ns) == 0) {
            value_free(v);
            *v = value_duration(ns);
        }
        return v->kind == VAL_DURATION;
    }
    if (strcmp(type, "datetime") == 0) {
        int64_t ns;
        if (v->kind == VAL_STRING && datetime_parse(v->u.str.s, v->u.str.len, &ns) == 0) {
            value_free(v);
            *v = value_datetime(ns);
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

static bool
is_engine_field(const char *name)
{
    return strcmp(name, FIELD_ATTEMPTS) == 0 || strcmp(name, FIELD_CLAIMED_UNTIL) == 0 ||
           strcmp(name, FIELD_CLAIMED_BY) == 0 || strcmp(name, FIELD_HOLD) == 0;
}

LangErrorCode
record_validate(const TableDef *def, Value *fields, LangError *err)
{
    const char *table = def->decl.name;
    if (def->decl.schema == SCHEMA_FULL) {
        for (size_t i = 0; i < fields->u.obj.len; i++) {
            const char *k = fields->u.obj.keys[i];
            if (def->is_queue && is_engine_field(k))
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
            return lang_error_set(err, LANG_SCHEMA_VIOLATION,
                                  "field '%s' of '%s' is REQUIRED", f->name, table);
        if (v && f->type && !(absent && !f->required) && !type_accepts(f->type, v))
            return lang_error_set(err, LANG_SCHEMA_VIOLATION,
                                  "field '%s' of '%s' must be of TYPE %s, not %s", f->name,
                                  table, f->type, value_kind_name(v->kind));
    }
    return LANG_OK;
}

bool
record_exists(StoreTxn *txn, const TableDef *def, const Value *key)
{
    Buf kb = {0};
    record_key_encode(key, &kb);
    StoreBytes v;
    int rc = store_record_get(txn, def->id, (StoreBytes){kb.data, kb.len}, &v, NULL);
    buf_free(&kb);
    return rc == STORE_OK;
}

void
lang_keys_push(Buf *keys, StoreBytes key)
{
    uint32_t len = (uint32_t)key.len;
    buf_append(keys, &len, sizeof len);
    buf_append(keys, key.data, key.len);
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
