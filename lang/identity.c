/* identity.c — the identities of a table's records as the store keeps
 * them: the one it assigns when a CREATE names no record (1 + the greatest
 * integer ever held), and the DEDUPLICATE window of each of a queue's
 * named records. */
#include <string.h>

#include "exec.h"

/* IdentitiesExhausted for table "def". */
static LangErrorCode
exhausted(Exec *x, const TableDef *def)
{
    return lang_error_set(x->err, LANG_IDS_EXHAUSTED,
                          "table '%s' has held identity %lld, the largest integer: the "
                          "store has no identity left to assign (name the record)",
                          def->decl.name, (long long)INT64_MAX);
}

/* The identity the store assigns: 1 + the greatest integer ever held.
 * IdentitiesExhausted when that would pass the largest integer (or when
 * the identity is taken, as a store from before the exhausted mark may
 * have it): a store-assigned CREATE never replaces a record. */
LangErrorCode
lang_identity_next(Exec *x, const TableDef *def, Value *key)
{
    int64_t next;
    int rc = store_identity_next(x->txn, def->id, &next);
    if (rc == STORE_EXHAUSTED)
        return exhausted(x, def);
    if (rc)
        return lang_store_error(rc, "assigning an identity", x->err);
    *key = lang_value_int(next);
    if (next == INT64_MAX && lang_record_exists(x->txn, def, key))
        return exhausted(x, def);
    return LANG_OK;
}

/* Remembers that integer identity "key" has been held. */
LangErrorCode
lang_identity_note(Exec *x, const TableDef *def, const Value *key)
{
    if (key->kind != VAL_INT)
        return LANG_OK;
    int rc = store_identity_note(x->txn, def->id, key->u.i);
    return rc ? lang_store_error(rc, "noting an identity", x->err) : LANG_OK;
}

/* DEDUPLICATE: true in "*repeat" when "key" was first written less than
 * the window ago; otherwise starts a new window at now. */
LangErrorCode
lang_dedup_check(Exec *x, const TableDef *def, const Value *key, bool *repeat)
{
    Buf kb = {0};
    lang_record_key_encode(key, &kb);
    int rc = store_dedup_check(x->txn, def->id, (StoreBytes){kb.data, kb.len},
                               def->decl.deduplicate_ns, repeat);
    lang_buf_free(&kb);
    return rc ? lang_store_error(rc, "deduplicating", x->err) : LANG_OK;
}
