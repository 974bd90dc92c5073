/* identity.c — what a table's meta remembers of the identities written
 * to it: the identity the store assigns when a CREATE names no record (1
 * + the greatest integer ever held), and the DEDUPLICATE window of each of
 * a queue's named records. */
#include <string.h>

#include "exec.h"

#define META_NEXT_ID "next_id"
/* What META_NEXT_ID holds once the largest integer has been held: no
 * identity is left for the store to assign. */
#define NEXT_ID_EXHAUSTED INT64_MIN

/* The identity the store assigns: 1 + the greatest integer ever held.
 * IdentitiesExhausted when that would pass the largest integer (or when
 * the identity is taken, as a store from before the exhausted mark may
 * have it): a store-assigned CREATE never replaces a record. */
LangErrorCode
lang_identity_next(Exec *x, const TableDef *def, Value *key)
{
    int64_t next;
    if (meta_get_i64(x->txn, def->id, META_NEXT_ID, strlen(META_NEXT_ID), &next, x->err))
        return x->err->code;
    if (next < 1 && next != NEXT_ID_EXHAUSTED)
        next = 1;
    *key = value_int(next == NEXT_ID_EXHAUSTED ? INT64_MAX : next);
    if (next == NEXT_ID_EXHAUSTED || (next == INT64_MAX && record_exists(x->txn, def, key)))
        return lang_error_set(x->err, LANG_IDS_EXHAUSTED,
                              "table '%s' has held identity %lld, the largest integer: the "
                              "store has no identity left to assign (name the record)",
                              def->decl.name, (long long)INT64_MAX);
    return LANG_OK;
}

/* Remembers that integer identity "key" has been held. */
LangErrorCode
lang_identity_note(Exec *x, const TableDef *def, const Value *key)
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
LangErrorCode
lang_dedup_check(Exec *x, const TableDef *def, const Value *key, bool *repeat)
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

