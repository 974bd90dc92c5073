/* upgrade.c — reading the records lang wrote before the store kept the
 * engine's columns (value formats 1 and 2: a holder, times, the identity
 * and the fields with the engine's among them), for the store's upgrade
 * to format 3 (lang_record_upgrade). */
#include <stdlib.h>
#include <string.h>

#include "../store/bigendian.h"
#include "engine.h"
#include "lang.h"

/* What the StoreRecord given back points into, until the next call: an
 * upgrade runs in one transaction of one thread. */
static _Thread_local struct {
    Buf value;
    char *consumer, *instance;
} kept;

/* The integer at "name" of "fields" (0 when absent or not one). */
static int64_t
int_field(const Value *fields, const char *name, int kind)
{
    const Value *v = lang_value_object_get(fields, name);
    if (!v || (int)v->kind != kind)
        return 0;
    return kind == VAL_DATETIME ? v->u.ns : v->u.i;
}

/* The string at "key" of the claimed_by object of "fields", copied, or
 * NULL. */
static char *
by_field(const Value *fields, const char *key)
{
    const Value *by = lang_value_object_get(fields, FIELD_CLAIMED_BY);
    const Value *v = by && by->kind == VAL_OBJECT ? lang_value_object_get(by, key) : NULL;
    return v && v->kind == VAL_STRING ? lang_xstrdup(v->u.str.s) : NULL;
}

int
lang_record_upgrade(void *ctx, StoreBytes table_def, StoreBytes old_value, StoreRecord *out)
{
    (void)ctx;
    const unsigned char *p = old_value.data;
    size_t n = old_value.len;
    if (n < 2 || (p[0] != 1 && p[0] != 2))
        return -1;
    size_t tl = p[0] == 2 ? 32 : 8, hlen = p[1];
    if (n < 2 + hlen + tl + 8)
        return -1;
    TableDef def;
    if (lang_table_def_decode(table_def, &def) < 0)
        return -1;
    free(kept.consumer);
    free(kept.instance);
    kept.instance = hlen ? lang_xstrndup((const char *)p + 2, hlen) : NULL;
    const unsigned char *t = p + 2 + hlen;
    *out = (StoreRecord){0};
    out->since = (int64_t)be_get64(t);
    out->written = out->changed = out->since;
    if (tl == 32) {
        out->written = (int64_t)be_get64(t + 8);
        out->changed = (int64_t)be_get64(t + 16);
        out->claimed = (int64_t)be_get64(t + 24);
    }
    t += tl;
    uint64_t klen = be_get64(t);
    t += 8;
    size_t rest = n - (size_t)(t - p);
    Value key = lang_value_none(), fields = lang_value_none();
    int rc = -1;
    if (klen <= rest && lang_value_decode(t, (size_t)klen, &key) == 0 &&
        lang_value_decode(t + klen, rest - (size_t)klen, &fields) == 0 &&
        fields.kind == VAL_OBJECT) {
        out->attempts = int_field(&fields, FIELD_ATTEMPTS, VAL_INT);
        out->hold = int_field(&fields, FIELD_HOLD, VAL_INT);
        out->claimed_until = int_field(&fields, FIELD_CLAIMED_UNTIL, VAL_DATETIME);
        kept.consumer = by_field(&fields, "consumer");
        if (!out->claimed_until) /* no hold since the last release */
            free(kept.instance), kept.instance = NULL;
        if (out->attempts && !out->claimed)
            out->claimed = out->changed; /* claimed once: format 1 kept no instant */
        for (const char *const *f =
                 (const char *const[]){FIELD_ATTEMPTS, FIELD_HOLD, FIELD_CLAIMED_UNTIL,
                                       FIELD_CLAIMED_BY, NULL};
             *f; f++)
            lang_value_object_remove(&fields, *f);
        Record r = {.key = key, .fields = fields};
        lang_buf_reset(&kept.value);
        lang_record_value_encode(&r, &def, &kept.value, &out->not_before);
        out->value = (StoreBytes){kept.value.data, kept.value.len};
        out->consumer = (StoreBytes){kept.consumer, kept.consumer ? strlen(kept.consumer) : 0};
        out->instance = (StoreBytes){kept.instance, kept.instance ? strlen(kept.instance) : 0};
        rc = 0;
    }
    lang_value_free(&key);
    lang_value_free(&fields);
    lang_table_def_free(&def);
    return rc;
}
